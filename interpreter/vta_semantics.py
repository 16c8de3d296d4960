"""Executable semantics of the `vta` dialect: a `vta.layer` computes what its body's `accel`
ops compute; its schedule says how the accelerator runs them, not what they compute."""

from __future__ import annotations

from typing import Any

from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    ReturnedValues,
    impl,
    impl_terminator,
    register_impls,
)

from qaccel.dialects import vta


@register_impls
class VtaFunctions(InterpreterFunctions):
    """Implementations of `vta.layer` (its body, in order) and `vta.yield`."""

    @impl(vta.LayerOp)
    def run_layer(self, interpreter: Interpreter, op: vta.LayerOp, args: tuple[Any, ...]):
        return interpreter.run_ssacfg_region(op.body, (), "vta.layer")

    @impl_terminator(vta.YieldOp)
    def run_yield(self, interpreter: Interpreter, op: vta.YieldOp, args: tuple[Any, ...]):
        return ReturnedValues(args), ()
