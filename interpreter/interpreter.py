"""Executable semantics: run qaccel IR on numpy arrays with xDSL's interpreter.

Each dialect registers its implementations here (`TflFunctions` for `tfl`); values are numpy
arrays in the storage dtype of their tensor type (int8 for `!quant.uniform<i8:...>`), and
`none` values are None. The `tfl` implementations call the bit-exact kernels of
`qaccel.kernels.registry`, so running imported IR reproduces LiteRT's reference
interpreter bit for bit; and every later dialect's implementations are tested against them.

    outputs = run_function(module, [x])                 # entry function, numpy in and out
    trace = Trace(); run_function(module, [x], trace)   # every op's results, for debugging

Before the first op runs, every op's Prepare-time checks run (as TFLite's AllocateTensors
does), so a model the reference kernels refuse fails with a `Refusal` naming the op, not a
wrong number.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    ReturnedValues,
    TerminatorValue,
    impl,
    impl_callable,
    impl_terminator,
    register_impls,
)
from xdsl.ir import Operation

from qaccel.kernels import packed
from qaccel.kernels import registry as kernels
from qaccel.interpreter.accel_semantics import AccelFunctions
from qaccel.interpreter.prepare import ExecutionError, _kernel_name, describe, prepare_op
from qaccel.interpreter.q_semantics import QFunctions
from qaccel.interpreter.vta_semantics import VtaFunctions
from qaccel.dialects.names import is_public, location_name
from qaccel.dialects.tfl import (
    TFL_OPS,
    ConstOp,
    NoValueOp,
    OpaqueOp,
    StableHLOCompositeOp,
    TflOp,
)
from qaccel.kernels.memory import MemoryBudgetError, check_budget
from qaccel.dialects.types import tensor_dtype


@register_impls
class TflFunctions(InterpreterFunctions):
    """Implementations of the `tfl` ops by the bit-exact CPU kernels."""

    def __init__(self):
        self._calls: dict[Operation, kernels.OpCall] = {}

    def run_kernel(self, op: TflOp | OpaqueOp, args: tuple[Any, ...]) -> tuple[np.ndarray, ...]:
        call = self._calls.get(op)
        if call is None:
            call = self._calls[op] = prepare_op(op)
        name = _kernel_name(op)
        try:
            outs = kernels.KERNELS[name](
                kernels.OpCall(list(args), call.input_q, call.output_q, call.output_shapes,
                               call.output_dtypes, call.options)
            )
        except (kernels.Refusal, kernels.KernelError, kernels.UnsupportedOp) as e:
            raise ExecutionError(f"{describe(op)}: {e}") from None
        return tuple(outs)

    @impl(ConstOp)
    def run_const(self, interpreter: Interpreter, op: ConstOp, args: tuple[Any, ...]):
        return (op.as_array(),)

    @impl(NoValueOp)
    def run_no_value(self, interpreter: Interpreter, op: NoValueOp, args: tuple[Any, ...]):
        return (None,)

    @impl(StableHLOCompositeOp)
    def run_composite(self, interpreter: Interpreter, op: StableHLOCompositeOp, args):
        return interpreter.call_op(op.decomposition.root_reference.data, args)

    @impl(OpaqueOp)
    def run_opaque(self, interpreter: Interpreter, op: OpaqueOp, args: tuple[Any, ...]):
        return self.run_kernel(op, args)


def _tfl_impl(cls: type[TflOp]):
    def run(self: TflFunctions, interpreter: Interpreter, op: TflOp, args: tuple[Any, ...]):
        return self.run_kernel(op, args)

    return impl(cls)(run)


for _cls in TFL_OPS:
    setattr(TflFunctions, f"run_{_cls.name.replace('.', '_')}", _tfl_impl(_cls))
TflFunctions = register_impls(TflFunctions)


# --------------------------------------------------------------------------------------------
# Running a module


@dataclass
class Trace(Interpreter.Listener):
    """Records every op's results during a run, in execution order."""

    records: list[tuple[Operation, tuple[Any, ...]]] = field(default_factory=list)

    def did_interpret_op(self, op: Operation, results: tuple[Any, ...]) -> None:
        if results:
            self.records.append((op, results))

    def by_name(self) -> dict[str, np.ndarray]:
        """Results of the ops whose location names a tensor, by that name."""
        named: dict[str, np.ndarray] = {}
        for op, results in self.records:
            name = location_name(op)
            if name is not None and results and isinstance(results[0], np.ndarray):
                named.setdefault(name, results[0])
        return named


@register_impls
class FuncFunctions(InterpreterFunctions):
    """`func.func`, `func.call` and `func.return`. Importing any of xDSL's `xdsl.interpreters`
    modules imports all of them (RISC-V and Snitch included: about a third of
    `qaccel-compile`'s start-up), so these three are defined here."""

    @impl_callable(func.FuncOp)
    def call_func(self, interpreter: Interpreter, op: func.FuncOp, args: tuple[Any, ...]):
        body = op.body.blocks.first
        if body is None or not body.ops:  # a declaration: the interpreter's external call
            return interpreter.call_external(op.sym_name.data, op, args)
        return interpreter.run_ssacfg_region(op.body, args, op.sym_name.data)

    @impl(func.CallOp)
    def run_call(self, interpreter: Interpreter, op: func.CallOp, args: tuple[Any, ...]):
        return interpreter.call_op(op.callee, args)

    @impl_terminator(func.ReturnOp)
    def run_return(
        self, interpreter: Interpreter, op: func.ReturnOp, args: tuple[Any, ...]
    ) -> tuple[TerminatorValue, PythonValues]:
        return ReturnedValues(args), ()


def make_interpreter(module: ModuleOp, listeners: Sequence[Interpreter.Listener] = ()) -> Interpreter:
    interpreter = Interpreter(module, listeners=tuple(listeners))
    interpreter.register_implementations(FuncFunctions())
    interpreter.register_implementations(TflFunctions())
    interpreter.register_implementations(QFunctions())
    interpreter.register_implementations(VtaFunctions())
    # Overrides func.call with a call that checks types at partition borders.
    interpreter.register_implementations(AccelFunctions(), override=True)
    return interpreter


def entry_function(module: ModuleOp, name: str | None = None) -> func.FuncOp:
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)]
    if name is not None:
        for f in functions:
            if f.sym_name.data == name:
                return f
        raise ExecutionError(f"no function @{name} in the module")
    public = [f for f in functions if is_public(f)]
    if not public:
        raise ExecutionError("the module has no public function to run")
    return public[0]


def check_inputs(function: func.FuncOp, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    """The inputs as arrays of the function's argument types, or a one-line ExecutionError."""
    arg_types = function.function_type.inputs.data
    name = function.sym_name.data
    if len(inputs) != len(arg_types):
        raise ExecutionError(f"@{name} takes {len(arg_types)} inputs, got {len(inputs)}")
    checked = []
    for i, (x, t) in enumerate(zip(inputs, arg_types)):
        assert isinstance(t, TensorType)
        x = np.asarray(x)
        want_shape, want_dtype = tuple(t.get_shape()), tensor_dtype(t)
        if x.dtype != want_dtype:
            raise ExecutionError(
                f"@{name} input {i}: expected dtype {want_dtype}, got {x.dtype}"
            )
        if tuple(x.shape) != want_shape:
            raise ExecutionError(
                f"@{name} input {i}: expected shape {list(want_shape)}, got {list(x.shape)}"
            )
        checked.append(x)
    return checked


_EXECUTORS = (FuncFunctions, TflFunctions, QFunctions, VtaFunctions, AccelFunctions)


def _implemented() -> frozenset[type[Operation]]:
    """The op classes `make_interpreter`'s interpreter has an implementation for."""
    global _IMPLEMENTED
    if _IMPLEMENTED is None:
        _IMPLEMENTED = frozenset(
            op_type for functions in _EXECUTORS
            for op_type, _ in functions._impls()  # xDSL keeps the table private
        )  # fmt: skip
    return _IMPLEMENTED


_IMPLEMENTED: frozenset[type[Operation]] | None = None


def prepare_module(module: ModuleOp) -> None:
    """Refuse, before any data flows, everything that could not run: an op with no
    implementation here (a `tfl` op or `tfl.opaque` op with no CPU kernel in
    `kernels.registry.KERNELS`, an op of another dialect without semantics), a call of a
    function that has no body; then every op's Prepare-time checks (TFLite's
    AllocateTensors). The one check of "can this module run": the interpreter, the compiled
    runtime and the artifact writer (`backends/vta/artifact.py`'s `check_runnable`, before
    anything is written) all call it, so each tool refuses the same module with the same
    line.

    Raises ExecutionError (no implementation) or `kernels.Refusal` (LiteRT's Prepare would
    refuse the model)."""
    implemented = _implemented()
    bodies = {
        f.sym_name.data: bool(f.body.blocks) for f in module.ops if isinstance(f, func.FuncOp)
    }
    for op in module.walk():
        if isinstance(op, TflOp | OpaqueOp):
            prepare_op(op)
        elif isinstance(op, func.CallOp | StableHLOCompositeOp):
            callee = (op.callee.string_value() if isinstance(op, func.CallOp)
                      else op.decomposition.root_reference.data)  # fmt: skip
            if not bodies.get(callee, False):
                raise ExecutionError(
                    f"cannot execute op {describe(op)}: @{callee} has no body to run"
                )
        elif type(op) not in implemented and not isinstance(op, ModuleOp | func.FuncOp):
            raise ExecutionError(f"cannot execute op {describe(op)}: no implementation of "
                                 f"{op.name}")  # fmt: skip


def declared_bytes(op: Operation) -> int:
    """Bytes of every tensor that `op` and the ops inside it declare (results, arguments)."""
    total = 0
    for inner in op.walk():
        values = [*inner.results, *(a for r in inner.regions for b in r.blocks for a in b.args)]
        for v in values:
            t = v.type
            if isinstance(t, TensorType):
                try:
                    itemsize = tensor_dtype(t).itemsize
                except Exception:
                    itemsize = 8
                total += math.prod(max(d, 1) for d in t.get_shape()) * itemsize
    return total


def check_memory(op: Operation, what: str) -> None:
    """Refuse (ExecutionError, one line) to run IR whose tensors exceed the memory budget."""
    try:
        check_budget(declared_bytes(op), what)
    except MemoryBudgetError as e:
        raise ExecutionError(str(e)) from None


def run_function(
    module: ModuleOp,
    inputs: Sequence[np.ndarray],
    listener: Interpreter.Listener | None = None,
    entry: str | None = None,
) -> list[np.ndarray]:
    """Run the entry function (the first public one, or `entry`) on `inputs`."""
    function = entry_function(module, entry)
    check_memory(module, "the module")
    args = check_inputs(function, inputs)
    prepare_module(module)
    interpreter = make_interpreter(module, [listener] if listener else [])
    results = interpreter.call_op(function, tuple(args))
    return [np.asarray(r) for r in results]


def random_inputs(function: func.FuncOp, seed: int) -> list[np.ndarray]:
    """Seeded random inputs covering each argument's whole storage range."""
    check_memory(function, f"@{function.sym_name.data}")
    specs = [(t.get_shape(), tensor_dtype(t)) for t in function.function_type.inputs.data]
    return packed.random_arrays(specs, seed)


__all__ = [
    "ExecutionError",
    "TflFunctions",
    "Trace",
    "check_inputs",
    "check_memory",
    "declared_bytes",
    "describe",
    "entry_function",
    "make_interpreter",
    "prepare_module",
    "random_inputs",
    "run_function",
]  # fmt: skip
