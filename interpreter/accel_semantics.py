"""Interpreter implementations of the `accel` dialect, and checked calls into partitions.

`pack` / `unpack` are the numpy form of `accel.pack` / `accel.unpack` (see
`dialects/accel.py`): a pad, one reshape and one transpose each way, so they cost a copy of
the tensor and nothing more. `insert-pack-unpack` also uses `pack` to pack weights at compile
time.

The compute ops (`AccelComputeFunctions`) reuse `arithmetic.py`'s gemmlowp primitives, so
they are exactly the ISA's ALU operations (docs/isa.md §6.5) and TFLite's arithmetic; the GEMM
ops sum int8 products in float64, exact at these magnitudes, then wrap to int32.

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
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    impl,
    register_impls,
)
from xdsl.traits import SymbolTable

from qaccel.kernels import arithmetic as ar
from qaccel.kernels import packed
from qaccel.kernels.layout import pack, split_order, split_shape, unpack  # noqa: F401  (re-exported)
from qaccel.dialects import accel, q
from qaccel.dialects.types import tensor_dtype



def batch_matmul_packed(op: accel.BatchMatmulOp, lhs: np.ndarray, rhs: np.ndarray) -> np.ndarray:
    """`accel.batch_matmul`: unpack both operands, the int8 product, pack the result."""
    from qaccel.kernels import attention as at

    ls, rs = op.array_prop("lhs_shape").tolist(), op.array_prop("rhs_shape").tolist()
    block = int(lhs.shape[-1])
    a = unpack(lhs, accel.Packing.activations(len(ls), block), tuple(ls))
    b = unpack(rhs, accel.Packing.activations(len(rs), block), tuple(rs))
    y = at.batch_matmul_int8(a, b, bool(op.int_prop("adj_x")), bool(op.int_prop("adj_y")),
                             op.int_prop("lhs_zero_point"), op.int_prop("rhs_zero_point"),
                             op.int_prop("multiplier"), op.int_prop("shift"),
                             op.int_prop("output_zero_point"), op.plain_output_shape())
    return at.packed_of(y, block, op.int_prop("pad_value"))


# --------------------------------------------------------------------------------------------
# Compute ops (bit-exact with the gemmlowp/TFLite primitives of `arithmetic.py`)


def bias_lanes(op: accel.Conv2DZpOp | accel.DenseZpOp) -> np.ndarray | None:
    """The op's bias as int64 lane values for its result (None: no bias)."""
    if op.bias is None:
        return None
    return accel.lane_values(q.array_values(op.bias).astype(np.int64), op.output.type.get_shape())


def conv2d_zp_params(op: accel.Conv2DZpOp) -> dict:
    """The arguments of `packed.conv2d_zp` after the operands and the bias."""
    return {"out_shape": list(op.output.type.get_shape()),
            "padding": [int(v) for v in op.array_prop("padding")],
            "strides": [int(v) for v in op.array_prop("strides")],
            "dilations": [int(v) for v in op.array_prop("dilations")],
            "pad_value": op.pad_value.value.data, "groups": op.group_count}  # fmt: skip


def conv2d_zp(op: accel.Conv2DZpOp, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return packed.conv2d_zp(x, w, bias_lanes(op), **conv2d_zp_params(op))


def dense_zp(op: accel.DenseZpOp, x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return packed.dense_zp(x, w, bias_lanes(op), list(op.output.type.get_shape()))


def lane_op(op: accel._LaneOp, x: np.ndarray) -> np.ndarray:
    values = accel.lane_values(op.values.astype(np.int64), x.shape)
    xi = x.astype(np.int64)
    if isinstance(op, accel.BiasAddZpOp):
        out = ar.wrap_int32(xi + values)
    elif isinstance(op, accel.ShiftLeftOp):
        out = ar.wrap_int32(xi << values)
    elif isinstance(op, accel.RoundMultiplyOp):
        out = ar.saturating_rounding_doubling_high_mul(xi, values)
    else:
        out = ar.rounding_divide_by_pot(xi, np.broadcast_to(values, xi.shape))
    return out.astype(np.int32)


_BINARY = {
    accel.AddOp: lambda a, b: ar.wrap_int32(a + b),
    accel.MulOp: lambda a, b: ar.wrap_int32(a * b),
    accel.MinOp: np.minimum,
    accel.MaxOp: np.maximum,
}


def binary_op(op: accel._BinaryOp, lhs: np.ndarray, rhs: np.ndarray | None) -> np.ndarray:
    a = lhs.astype(np.int64)
    if rhs is None:
        b = accel.lane_values(op.values.astype(np.int64), lhs.shape)  # type: ignore[union-attr]
    else:
        b = rhs.astype(np.int64)
    return np.broadcast_to(_BINARY[type(op)](a, b), lhs.shape).astype(np.int32)


def host_requantize(op: accel.HostRequantizeOp, x: np.ndarray) -> np.ndarray:
    """As `q.requantize` with `scale` (q_semantics.requantize) followed by the clamp."""
    scale = accel.lane_values(q.array_values(op.scale), x.shape)
    return packed.host_requantize(x, scale, op.int_prop("input_zero_point"),
                                  op.int_prop("output_zero_point"), op.int_prop("min"),
                                  op.int_prop("max"), tensor_dtype(op.output.type))  # fmt: skip


def lut(op: accel.LutOp, x: np.ndarray) -> np.ndarray:
    table = op.array_prop("table").astype(tensor_dtype(op.output.type))
    return table[x.astype(np.int16) + 128]


def pool(op: accel._PoolOp, x: np.ndarray) -> np.ndarray:
    _, _, oh, ow, _, _ = op.output.type.get_shape()
    kind = "max" if isinstance(op, accel.MaxPool2DOp) else "sum"
    window = [int(v) for v in op.array_prop("window")]
    strides = [int(v) for v in op.array_prop("strides")]
    return packed.window_pool(x, window, strides, (oh, ow), kind)


def reduce_sum(op: accel.ReduceSumOp, x: np.ndarray) -> np.ndarray:
    axes = tuple(int(a) for a in op.array_prop("axes"))
    total = x.astype(np.int64).sum(axis=axes)
    return ar.wrap_int32(total).astype(np.int32).reshape(op.output.type.get_shape())


def pad_op(op: accel.PadOp, x: np.ndarray) -> np.ndarray:
    padding = [int(v) for v in op.array_prop("padding")]
    spatial = [(padding[2 * k], padding[2 * k + 1]) for k in range(len(padding) // 2)]
    widths = [(0, 0), (0, 0), *spatial, (0, 0), (0, 0)]
    return np.pad(x, widths, constant_values=np.asarray(op.pad_value.value.data, x.dtype))


class AccelComputeFunctions(InterpreterFunctions):
    """Implementations of the `accel` compute ops (`AccelFunctions` registers them)."""

    @impl(accel.Conv2DZpOp)
    def run_conv2d_zp(self, interpreter: Interpreter, op: accel.Conv2DZpOp, args):
        return (conv2d_zp(op, *args),)

    @impl(accel.DenseZpOp)
    def run_dense_zp(self, interpreter: Interpreter, op: accel.DenseZpOp, args):
        return (dense_zp(op, *args),)

    @impl(accel.BiasAddZpOp)
    def run_bias_add_zp(self, interpreter: Interpreter, op: accel.BiasAddZpOp, args):
        return (lane_op(op, *args),)

    @impl(accel.ShiftLeftOp)
    def run_shift_left(self, interpreter: Interpreter, op: accel.ShiftLeftOp, args):
        return (lane_op(op, *args),)

    @impl(accel.RoundMultiplyOp)
    def run_round_multiply(self, interpreter: Interpreter, op: accel.RoundMultiplyOp, args):
        return (lane_op(op, *args),)

    @impl(accel.RoundRShiftOp)
    def run_round_rshift(self, interpreter: Interpreter, op: accel.RoundRShiftOp, args):
        return (lane_op(op, *args),)

    @impl(accel.AddOp)
    def run_add(self, interpreter: Interpreter, op: accel.AddOp, args):
        return (binary_op(op, args[0], args[1] if len(args) > 1 else None),)

    @impl(accel.MulOp)
    def run_mul(self, interpreter: Interpreter, op: accel.MulOp, args):
        return (binary_op(op, args[0], args[1] if len(args) > 1 else None),)

    @impl(accel.MinOp)
    def run_min(self, interpreter: Interpreter, op: accel.MinOp, args):
        return (binary_op(op, args[0], args[1] if len(args) > 1 else None),)

    @impl(accel.MaxOp)
    def run_max(self, interpreter: Interpreter, op: accel.MaxOp, args):
        return (binary_op(op, args[0], args[1] if len(args) > 1 else None),)

    @impl(accel.WidenOp)
    def run_widen(self, interpreter: Interpreter, op: accel.WidenOp, args):
        return (args[0].astype(np.int32),)

    @impl(accel.NarrowOp)
    def run_narrow(self, interpreter: Interpreter, op: accel.NarrowOp, args):
        # numpy's integer cast keeps the low bits, as STORE OUT does.
        return (args[0].astype(tensor_dtype(op.output.type)),)

    @impl(accel.HostRequantizeOp)
    def run_host_requantize(self, interpreter: Interpreter, op: accel.HostRequantizeOp, args):
        return (host_requantize(op, *args),)

    @impl(accel.LutOp)
    def run_lut(self, interpreter: Interpreter, op: accel.LutOp, args):
        return (lut(op, *args),)

    @impl(accel.MaxPool2DOp)
    def run_max_pool(self, interpreter: Interpreter, op: accel.MaxPool2DOp, args):
        return (pool(op, *args),)

    @impl(accel.SumPool2DOp)
    def run_sum_pool(self, interpreter: Interpreter, op: accel.SumPool2DOp, args):
        return (pool(op, *args),)

    @impl(accel.ReduceSumOp)
    def run_reduce_sum(self, interpreter: Interpreter, op: accel.ReduceSumOp, args):
        return (reduce_sum(op, *args),)

    @impl(accel.PadOp)
    def run_pad(self, interpreter: Interpreter, op: accel.PadOp, args):
        return (pad_op(op, *args),)

    @impl(accel.ConcatOp)
    def run_concat(self, interpreter: Interpreter, op: accel.ConcatOp, args):
        return (np.concatenate(args, axis=op.int_prop("axis")),)

    @impl(accel.CropOp)
    def run_crop(self, interpreter: Interpreter, op: accel.CropOp, args):
        out = op.output.type.get_shape()
        box = [slice(None)] * 2 + [slice(o, o + out[2 + k])
                                   for k, o in enumerate(op.array_prop("offsets"))]
        return (np.ascontiguousarray(args[0][tuple(box)]),)

    @impl(accel.DepthToSpaceOp)
    def run_depth_to_space(self, interpreter: Interpreter, op: accel.DepthToSpaceOp, args):
        return (packed.depth_to_space(args[0], op.output.type.get_shape(),
                                      op.int_prop("block_size"), op.int_prop("channels"),
                                      op.int_prop("pad_value")),)  # fmt: skip

    @impl(accel.ResizeNearestNeighborOp)
    def run_resize_nearest_neighbor(self, interpreter: Interpreter,
                                    op: accel.ResizeNearestNeighborOp, args):  # fmt: skip
        return (packed.resize_nearest(args[0], op.output.type.get_shape(), *op.flags()),)

    @impl(accel.ResizeBilinearOp)
    def run_resize_bilinear(self, interpreter: Interpreter, op: accel.ResizeBilinearOp, args):
        return (packed.resize_bilinear(args[0], op.output.type.get_shape(), *op.flags()),)

    @impl(accel.Col2ImOp)
    def run_col2im(self, interpreter: Interpreter, op: accel.Col2ImOp, args):
        return (packed.col2im(args[0], op.output.type.get_shape(), op.array_prop("kernel"),
                              op.array_prop("strides"), op.array_prop("padding"),
                              op.int_prop("channels")),)  # fmt: skip

    @impl(accel.LaneSumOp)
    def run_lane_sum(self, interpreter: Interpreter, op: accel.LaneSumOp, args):
        return (packed.lane_sum(args[0]),)

    @impl(accel.LaneBroadcastOp)
    def run_lane_broadcast(self, interpreter: Interpreter, op: accel.LaneBroadcastOp, args):
        return (packed.lane_broadcast(args[0], op.output.type.get_shape()),)

    @impl(accel.RelayoutOp)
    def run_relayout(self, interpreter: Interpreter, op: accel.RelayoutOp, args):
        from qaccel.kernels.attention import relayout_packed

        return (relayout_packed(args[0], op.array_prop("in_shape").tolist(),
                                op.array_prop("shape").tolist(), op.array_prop("perm").tolist(),
                                op.int_prop("pad_value")),)  # fmt: skip

    @impl(accel.SoftmaxOp)
    def run_softmax(self, interpreter: Interpreter, op: accel.SoftmaxOp, args):
        from qaccel.kernels import attention as at

        x = at.plain_of(args[0], op.int_prop("channels"))
        y = at.softmax_int8(x, op.int_prop("multiplier"), op.int_prop("left_shift"),
                            op.int_prop("diff_min"))  # fmt: skip
        return (at.packed_of(y, int(args[0].shape[-1]), -128),)

    @impl(accel.BatchMatmulOp)
    def run_batch_matmul(self, interpreter: Interpreter, op: accel.BatchMatmulOp, args):
        return (batch_matmul_packed(op, *args),)

    @impl(accel.BmmOperandOp)
    def run_bmm_operand(self, interpreter: Interpreter, op: accel.BmmOperandOp, args):
        from qaccel.kernels.bmm_gemm import gather

        return (gather(args[0], op.index_array(), 0),)

    @impl(accel.BmmZpCorrectionOp)
    def run_bmm_zp_correction(self, interpreter: Interpreter, op: accel.BmmZpCorrectionOp,
                              args):  # fmt: skip
        from qaccel.kernels import bmm_gemm as bg

        block = int(args[0].shape[-1])
        ls, rs = op.array_prop("lhs_shape").tolist(), op.array_prop("rhs_shape").tolist()
        sources = bg.operand_sources(ls, rs, bool(op.int_prop("adj_x")),
                                     bool(op.int_prop("adj_y")), block, op.views())  # fmt: skip
        return (bg.correction(args[0], args[1], sources, op.int_prop("index"),
                              op.int_prop("lhs_zero_point"), op.int_prop("rhs_zero_point"),
                              block),)  # fmt: skip

    @impl(accel.ReshapeOp)
    def run_reshape(self, interpreter: Interpreter, op: accel.ReshapeOp, args):
        return (np.reshape(args[0], tuple(op.output.type.get_shape())),)

    @impl(accel.HostPool2DOp)
    def run_host_pool(self, interpreter: Interpreter, op: accel.HostPool2DOp, args):
        return (packed.host_pool2d(args[0], op.kind.data, op.array_prop("window"),
                                   op.array_prop("strides"), op.array_prop("padding"),
                                   op.int_prop("min"), op.int_prop("max"),
                                   op.output.type.get_shape()),)  # fmt: skip

    @impl(accel.ConcatLanesOp)
    def run_concat_lanes(self, interpreter: Interpreter, op: accel.ConcatLanesOp, args):
        return (packed.concat_lanes(args, op.array_prop("channels")),)


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
class AccelFunctions(AccelComputeFunctions):
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
        from qaccel.interpreter.prepare import ExecutionError

        callee = f"@{op.callee.string_value()}"
        signature = self._signature(op)
        try:
            _check_values(args, signature.inputs.data, f"call of {callee}: argument")
            results = interpreter.call_op(op.callee, args)
            _check_values(tuple(results), signature.outputs.data, f"call of {callee}: result")
        except CallTypeError as e:
            raise ExecutionError(str(e)) from None
        return results
