"""Interpreter implementations of the `accel` dialect, and checked calls into partitions.

`pack` / `unpack` are the numpy form of `accel.pack` / `accel.unpack` (see
`dialects/accel.py`): a pad, one reshape and one transpose each way, so they cost a copy of
the tensor and nothing more. `insert-pack-unpack` also uses `pack` to pack weights at compile
time.

`func.call` is re-implemented here to check, at every call, that the arguments and results
have the callee's declared shapes and dtypes: once accelerator functions take packed tensors,
an op implementation that returns the wrong layout (or IR run without verification) would
otherwise compute garbage silently instead of failing with a message naming the call.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.interpreter import Interpreter, InterpreterFunctions, impl, register_impls
from xdsl.traits import SymbolTable

from qaccel.dialects import accel
from qaccel.dialects.types import tensor_dtype


def _split_order(packing: accel.Packing) -> list[int]:
    """The transpose from a plain tensor split into (tiles, tile) axis pairs (axes 2d, 2d+1 for
    dimension d) to the packed order; untiled dimensions' unit tiles go last."""
    tiled = set(packing.inner_dims_pos)
    untiled = [d for d in range(packing.rank) if d not in tiled]
    return (
        [2 * d for d in packing.outer_dims_perm]
        + [2 * d + 1 for d in packing.inner_dims_pos]
        + [2 * d + 1 for d in untiled]
    )


def _split_shape(packing: accel.Packing, shape) -> list[int]:
    outer = packing.outer_shape(shape)
    return [n for d in range(len(shape)) for n in (outer[d], packing.tile_of(d))]


def pack(x: np.ndarray, packing: accel.Packing, padding_value: int = 0) -> np.ndarray:
    """`x` in the blocked layout `packing`, tiled dimensions padded with `padding_value`."""
    shape = x.shape
    if packing.needs_padding(shape):
        widths = [(0, -size % packing.tile_of(d)) for d, size in enumerate(shape)]
        x = np.pad(x, widths, constant_values=np.asarray(padding_value, dtype=x.dtype))
    view = x.reshape(_split_shape(packing, shape)).transpose(_split_order(packing))
    return np.ascontiguousarray(view).reshape(packing.packed_shape(shape))


def unpack(p: np.ndarray, packing: accel.Packing, shape: tuple[int, ...]) -> np.ndarray:
    """The plain tensor of `shape` that `pack` turned into `p` (padding dropped)."""
    split = _split_shape(packing, shape)
    order = _split_order(packing)
    plain = p.reshape([split[k] for k in order]).transpose(np.argsort(order))
    padded = plain.reshape([n * t for n, t in zip(split[::2], split[1::2])])
    return np.ascontiguousarray(padded[tuple(slice(0, n) for n in shape)])


def _check_values(values: tuple[Any, ...], types, what: str) -> None:
    for i, (x, t) in enumerate(zip(values, types)):
        if not isinstance(t, TensorType) or not isinstance(x, np.ndarray):
            continue
        want_shape, want_dtype = tuple(t.get_shape()), tensor_dtype(t)
        if x.shape != want_shape or x.dtype != want_dtype:
            raise CallTypeError(
                f"{what} {i}: expected {want_dtype}[{'x'.join(map(str, want_shape))}], "
                f"got {x.dtype}[{'x'.join(map(str, x.shape))}]"
            )


class CallTypeError(Exception):
    """A call's arguments or results do not have the callee's declared types."""


@register_impls
class AccelFunctions(InterpreterFunctions):
    """Implementations of the `accel` ops, and `func.call` with type checks at the border."""

    @impl(accel.PackOp)
    def run_pack(self, interpreter: Interpreter, op: accel.PackOp, args: tuple[Any, ...]):
        padding = 0 if op.padding_value is None else op.padding_value.value.data
        return (pack(args[0], op.packing, padding),)

    @impl(accel.UnpackOp)
    def run_unpack(self, interpreter: Interpreter, op: accel.UnpackOp, args: tuple[Any, ...]):
        return (unpack(args[0], op.packing, tuple(op.output.type.get_shape())),)

    def __init__(self) -> None:
        self._signatures: dict[func.CallOp, func.FunctionType] = {}

    def _signature(self, op: func.CallOp) -> func.FunctionType:
        signature = self._signatures.get(op)
        if signature is None:
            callee = SymbolTable.lookup_symbol(op, op.callee)
            assert isinstance(callee, func.FuncOp), f"no function {op.callee}"
            signature = self._signatures[op] = callee.function_type
        return signature

    @impl(func.CallOp)
    def run_call(self, interpreter: Interpreter, op: func.CallOp, args: tuple[Any, ...]):
        from qaccel.backends.cpu.interpreter import ExecutionError

        callee = f"@{op.callee.string_value()}"
        signature = self._signature(op)
        try:
            _check_values(args, signature.inputs.data, f"call of {callee}: argument")
            results = interpreter.call_op(op.callee, args)
            _check_values(tuple(results), signature.outputs.data, f"call of {callee}: result")
        except CallTypeError as e:
            raise ExecutionError(str(e)) from None
        return results
