"""Pools and reductions: `q.max_pool2d` -> `accel.max_pool2d`; `q.avg_pool2d` with a
power-of-two window -> `accel.sum_pool2d` + `accel.round_rshift` (TFLite's rounded division by
`2^k` is RoundingDivideByPOT), both without padding; padded pools and averages over other tap
counts -> `accel.host_pool2d`, an exact host step of the program; `q.mean` over H and W ->
`accel.reduce_sum` + the requantization.
"""

from __future__ import annotations

import numpy as np
from xdsl.dialects.builtin import TensorType, i32
from xdsl.ir import SSAValue

from qaccel.kernels import arithmetic as ar
from qaccel.dialects import accel, q
from qaccel.lowering.q_to_accel.function import FunctionLowering, LoweringError, storage_of


def pool_window(fl: FunctionLowering, op: q._PoolOp) -> tuple[list[int], list[int]]:
    kh, kw = (int(v) for v in op.array_prop("filter"))
    sh, sw = (int(v) for v in op.array_prop("strides"))
    pads = [int(v) for v in op.array_prop("padding")]
    _, h, w, _ = op.input.type.get_shape()
    _, oh, ow, _ = op.output.type.get_shape()
    if any(pads):
        raise LoweringError(
            f"padding {pads}: padded taps must not count, but accumulator loads pad with zeros"
        )
    if (oh - 1) * sh + kh > h or (ow - 1) * sw + kw > w or oh < 1 or ow < 1:
        raise LoweringError(f"a {kh}x{kw} window leaves the {h}x{w} input")
    if (oh, ow) != (
        accel._window_extent(h, 0, kh, sh, 1),
        accel._window_extent(w, 0, kw, sw, 1),
    ):
        raise LoweringError(f"output {oh}x{ow} does not follow from the window and strides")
    return [kh, kw], [sh, sw]


def pool_result(fl: FunctionLowering, op: q.QOp) -> TensorType:
    return fl.packed_type(op.results[0].type, i32)


def on_the_host(fl: FunctionLowering, op: q._PoolOp) -> bool:
    """A pool the ALU trees cannot compute bit-exactly: padded taps (they must not count)
    or an average over a number of taps that is not a power of two."""
    kh, kw = (int(v) for v in op.array_prop("filter"))
    n = kh * kw
    return any(int(v) for v in op.array_prop("padding")) or (
        isinstance(op, q.AvgPool2DOp) and bool(n & (n - 1))
    )


def lower_host_pool(fl: FunctionLowering, op: q._PoolOp) -> SSAValue:
    """An exact host step of the accelerator program (`accel.host_pool2d`)."""
    lo, hi = storage_of(op.output.type)
    if storage_of(op.input.type) != (lo, hi) or (lo, hi) != (-128, 127):
        raise LoweringError("a host pool takes and gives int8")
    kind = "max" if isinstance(op, q.MaxPool2DOp) else "avg"
    return fl.emit(accel.HostPool2DOp(
        fl.packed_of(op.input), fl.packed_type(op.output.type), kind,
        [int(v) for v in op.array_prop("filter")], [int(v) for v in op.array_prop("strides")],
        [int(v) for v in op.array_prop("padding")], lo, hi))  # fmt: skip


def lower_max_pool(fl: FunctionLowering, op: q.MaxPool2DOp) -> SSAValue:
    if on_the_host(fl, op):
        return lower_host_pool(fl, op)
    window, strides = pool_window(fl, op)
    v = fl.int32(fl.packed_of(op.input))
    v = fl.emit(accel.MaxPool2DOp(v, pool_result(fl, op), window, strides))
    return fl.saturate(v, 0, op.output.type)


def lower_avg_pool(fl: FunctionLowering, op: q.AvgPool2DOp) -> SSAValue:
    if on_the_host(fl, op):
        return lower_host_pool(fl, op)
    window, strides = pool_window(fl, op)
    n = window[0] * window[1]
    if n & (n - 1):
        raise LoweringError(
            f"a {window[0]}x{window[1]} window averages {n} values: not a power of two "
            "(the ALU's rounding shift divides by powers of two only)"
        )
    v = fl.int32(fl.packed_of(op.input))
    v = fl.emit(accel.SumPool2DOp(v, pool_result(fl, op), window, strides))
    v = fl.emit(accel.RoundRShiftOp(v, [n.bit_length() - 1]))
    return fl.saturate(v, 0, op.output.type)


def lower_mean(fl: FunctionLowering, op: q.MeanOp) -> SSAValue:
    rank = len(op.input.type.get_shape())
    axes = sorted({int(a) % rank for a in op.array_prop("axes")})
    if not axes or (any(not 1 <= a <= rank - 2 for a in axes) and axes != [rank - 1]):
        raise LoweringError(
            f"mean over axes {axes} of a rank-{rank} tensor: only spatial axes reduce "
            "along accumulator rows (batch or channel axes would mix lanes)"
        )
    if axes == [rank - 1] and rank >= 2:
        return lower_channel_mean(fl, op)
    x = fl.int32(fl.packed_of(op.input))
    result = pool_result(fl, op)
    shape = x.type.get_shape()
    packed_axes = [a + 1 for a in axes]
    kept = tuple(1 if d in packed_axes else s for d, s in enumerate(shape))
    dropped = tuple(s for d, s in enumerate(shape) if d not in packed_axes)
    if tuple(result.get_shape()) not in (kept, dropped):
        raise LoweringError(
            f"result shape {list(op.output.type.get_shape())} is not the input's without "
            f"axes {axes}"
        )
    v = fl.emit(accel.ReduceSumOp(x, result, packed_axes))
    offset = op.int_prop("input_zero_point") * op.int_prop("num_elements")
    if offset:
        v = fl.emit(accel.AddOp(v, value=ar.wrap_int32([-offset])))
    v = fl.requantize(
        v, np.array([op.int_prop("multiplier")]), np.array([op.int_prop("shift")]), "mean"
    )
    return fl.saturate(v, op.int_prop("output_zero_point"), op.output.type)


def lower_channel_mean(fl: FunctionLowering, op: q.MeanOp) -> SSAValue:
    """`q.mean` over the channel axis (channels in whole blocks, the axis kept): the lanes
    summed by `accel.lane_sum` (a host step) into lane 0, then the requantization on the ALU
    (the other lanes, 0, are padding)."""
    shape = list(op.input.type.get_shape())
    if shape[-1] % fl.block or len(op.output.type.get_shape()) != len(shape):
        raise LoweringError(
            f"mean over the channels of {shape}: the lanes are summed in whole {fl.block}-lane "
            "blocks into a result keeping the axis"
        )
    v = fl.emit(accel.LaneSumOp(fl.packed_of(op.input), pool_result(fl, op)))
    offset = op.int_prop("input_zero_point") * op.int_prop("num_elements")
    if offset:
        v = fl.emit(accel.AddOp(v, value=ar.wrap_int32([-offset])))
    v = fl.requantize(
        v, np.array([op.int_prop("multiplier")]), np.array([op.int_prop("shift")]), "mean"
    )
    return fl.saturate(v, op.int_prop("output_zero_point"), op.output.type)
