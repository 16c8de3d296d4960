"""Run a compiled model: host ops on the interpreter, accelerator layers on the simulator.

    outputs = run_compiled(compiled, inputs)

`function_steps` says how an accelerator function runs (its program, `backends/vta/program/`,
holds the same steps):
write the arena slots the host produced, run each layer's instruction stream on the
function's DRAM image, read back what host ops or the return need, interpret the host ops.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from qaccel.backends.vta.compiled import (
    CompiledFunction,
    CompiledModel,
    CompileError,
    resolve,
    top_level,
)
from qaccel.dialects import tfl, vta
from xdsl.dialects import func
from xdsl.interpreter import Interpreter, impl, register_impls
from xdsl.ir import Operation, SSAValue

STEP_WRITE, STEP_LAYER, STEP_READ, STEP_HOST = 0, 1, 2, 3


@dataclass
class FunctionSteps:
    """How an accelerator function runs, for the simulated runtime and its program alike:
    `steps` are (kind, argument): STEP_WRITE slot (the host fills an arena slot with a tensor
    it produced), STEP_LAYER layer index, STEP_READ slot (the host reads back what a host op or
    the return needs), STEP_HOST segment (host ops, at body positions `segments[segment]`).
    `host_constants` are the constants host ops read (the layers' weights are in DRAM)."""

    steps: list[tuple[int, int]]
    segments: list[list[int]]
    host_constants: list[int]


def function_steps(fn: CompiledFunction, ops: list[Operation]) -> FunctionSteps:
    """The steps of `fn` whose body ops are `ops`."""
    by_anchor = {lay.anchor: lay for lay in fn.layers}
    in_layers = {ops[i] for lay in fn.layers for i in lay.ops}
    out = FunctionSteps([], [], [])
    written: set[int] = set()
    for i, op in enumerate(ops):
        lay = by_anchor.get(i)
        if lay is not None:
            for k in lay.inputs:
                if fn.slots[k].host_writes and k not in written:
                    out.steps.append((STEP_WRITE, k))
                    written.add(k)
            out.steps.append((STEP_LAYER, lay.index))
            if fn.slots[lay.output].host_reads:
                out.steps.append((STEP_READ, lay.output))
        elif isinstance(op, tfl.ConstOp):
            uses = [top_level(u.operation, op.parent_block()) for u in op.results[0].uses]
            if not all(u in in_layers for u in uses):
                out.host_constants.append(i)
        elif op not in in_layers and not isinstance(op, func.ReturnOp):
            if not out.steps or out.steps[-1][0] != STEP_HOST:
                out.steps.append((STEP_HOST, len(out.segments)))
                out.segments.append([])
            out.segments[-1].append(i)
    return out


def run_host_op(interpreter: Interpreter, o: Operation, env: dict) -> None:
    """Run `o` on the interpreter with its operands from `env`, recording its results there;
    a layer left on the host runs its body."""
    if isinstance(o, vta.LayerOp):
        for inner in o.body_ops():
            run_host_op(interpreter, inner, env)
        yielded = o.body.block.last_op.operands  # type: ignore[union-attr]
        env.update(zip(o.results, [env[v] for v in yielded]))
        return
    env.update(zip(o.results, interpreter.run_op(o, tuple(env[v] for v in o.operands))))


def function_body(interpreter: Interpreter, name: str) -> tuple[func.FuncOp, list[Operation]]:
    """The accelerator function `@name` and its ops, which must end in `func.return`."""
    f = interpreter.get_op_for_symbol(name)
    ops = list(f.body.block.ops)
    if not ops or not isinstance(ops[-1], func.ReturnOp):
        raise CompileError(f"@{name} has no func.return")
    return f, ops


def _make_call_impl():
    from qaccel.interpreter.accel_semantics import AccelFunctions

    @register_impls
    class VtaCalls(AccelFunctions):
        """`func.call` of a compiled accelerator function: its `function_steps`, layers on the
        simulator over the function's DRAM image, host segments on the interpreter (the
        fallbacks); other calls as usual."""

        def __init__(self, compiled: CompiledModel, simulator: str = "c"):
            super().__init__()
            self.compiled = compiled
            self.simulator = simulator
            self.plans: dict[str, tuple] = {}
            self.layer_runs = 0
            self.host_bytes = 0  # bytes the host wrote into or read from an arena

        def _plan(self, name: str, interpreter: Interpreter):
            plan = self.plans.get(name)
            if plan is None:
                f, ops = function_body(interpreter, name)
                plan = self.plans[name] = (
                    f,
                    ops,
                    function_steps(self.compiled.functions[name], ops),
                )
            return plan

        def _run_ops(self, interpreter: Interpreter, ops, positions, env) -> None:
            for i in positions:
                self._run_op(interpreter, ops[i], env)

        def _run_op(self, interpreter: Interpreter, o: Operation, env) -> None:
            run_host_op(interpreter, o, env)

        @impl(func.CallOp)
        def run_call(self, interpreter: Interpreter, op: func.CallOp, args: tuple[Any, ...]):
            name = op.callee.string_value()
            fn = self.compiled.functions.get(name)
            if fn is None:
                return super().run_call(interpreter, op, args)
            f, ops, plan = self._plan(name, interpreter)
            env: dict[SSAValue, Any] = dict(zip(f.body.block.args, args))
            self._run_ops(interpreter, ops, plan.host_constants, env)
            image, lay = fn.image, None
            for kind, arg in plan.steps:
                if kind == STEP_WRITE:
                    slot = fn.slots[arg]
                    image = image.copy() if image is fn.image else image
                    fn.write(image, arg, env[resolve(slot.value, ops, f)])
                    self.host_bytes += slot.nbytes
                elif kind == STEP_LAYER:
                    lay = fn.layers[arg]
                    image = fn.run_layer(lay, image, self.compiled.config, self.simulator)
                    self.layer_runs += 1
                elif kind == STEP_READ:  # right after the layer that wrote the slot
                    result = ops[lay.anchor].results[0]
                    env[result] = y = fn.read(image, lay, result.type)
                    if lay.widened is not None:
                        env[ops[lay.widened].results[1]] = y.astype(np.int32)
                    self.host_bytes += fn.slots[arg].nbytes
                else:
                    self._run_ops(interpreter, ops, plan.segments[arg], env)
            return tuple(env[v] for v in ops[-1].operands)

    return VtaCalls


def run_compiled(
    compiled: CompiledModel, inputs: Sequence[np.ndarray], listener=None, simulator: str = "c"
) -> list[np.ndarray]:
    """Run the host program with the interpreter and each compiled accelerator layer on the
    simulator (bit-exact with the interpreter's own semantics of the accel ops); `simulator`
    "c" (libqaccel_vta, the default) or "python" (the reference)."""
    from qaccel.interpreter.interpreter import (
        check_inputs,
        entry_function,
        make_interpreter,
        prepare_module,
    )

    function = entry_function(compiled.module)
    args = check_inputs(function, inputs)
    prepare_module(compiled.module)
    interpreter = make_interpreter(compiled.module, [listener] if listener else [])
    interpreter.register_implementations(_make_call_impl()(compiled, simulator), override=True)
    return [np.asarray(r) for r in interpreter.call_op(function, tuple(args))]


__all__ = [
    "STEP_HOST", "STEP_LAYER", "STEP_READ", "STEP_WRITE", "FunctionSteps", "function_steps",
    "run_compiled",
]  # fmt: skip
