"""Element-wise binary ops the vta target accepts: `q.add` / `q.sub` (each side centred,
shifted left by `left_shift`, rescaled; the sum via `accel.add`, a difference via `accel.mul`
by -1 then `accel.add`; then the output rescale and clamp) and `q.mul` (`accel.mul` of the
centred sides). Each side is a tensor, a per-channel or scalar constant (rescaled at compile
time) or a per-channel tensor broadcast over pixels.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
from xdsl.dialects.builtin import TensorType, i32
from xdsl.ir import SSAValue

from qaccel.kernels import arithmetic as ar
from qaccel.targets.vta.target import lane_broadcast
from qaccel.targets.base import is_constant
from qaccel.dialects import accel, q
from qaccel.lowering.q_to_accel.function import FunctionLowering, LoweringError, describe


def _per_channel_shape(shape: Sequence[int], out: Sequence[int]) -> bool:
    """`[1, ..., 1, C]` (or fewer dimensions) broadcasting over every pixel of `out`."""
    return (
        len(shape) <= len(out)
        and all(d == 1 for d in shape[:-1])
        and (not shape or shape[-1] in (1, out[-1]))
    )


def operand(
    fl: FunctionLowering,
    op: q.QOp,
    value: SSAValue,
    compute: Callable[[np.ndarray], np.ndarray],
    emit: Callable[[SSAValue], SSAValue],
) -> SSAValue | np.ndarray:
    """One operand of a binary op, transformed: a tensor (`emit` on the packed, widened
    value) or, for a constant, per-tensor/per-lane values or a packed int32 constant
    (`compute` at compile time)."""
    out = tuple(op.results[0].type.get_shape())
    shape = tuple(value.type.get_shape())
    if is_constant(value):
        data = compute(fl.constant_array(value, "a constant").astype(np.int64))
        data = ar.wrap_int32(data)
        if data.size == 1:
            return data.reshape(1)
        if _per_channel_shape(shape, out):
            packed = fl.packed_type(op.results[0].type).get_shape()
            return accel.per_lane(data.reshape(-1), accel.packed_lanes(packed), spread=False)
        if shape == out:
            from qaccel.kernels.layout import pack

            packing = accel.Packing.activations(len(out), fl.block)
            return fl.constant(pack(data.astype(np.int32), packing, 0), i32, None)
        raise LoweringError(
            f"constant operand of shape {list(shape)} broadcasts against {list(out)}: only "
            "scalars, per-channel and same-shape operands"
        )
    if lane_broadcast(shape, out):
        return emit(fl.int32(broadcast_lanes(fl, value, op.results[0].type)))
    per_channel = (
        len(shape) == len(out) and _per_channel_shape(shape, out) and (shape[-1] == out[-1])
    )
    if shape != out and not per_channel:
        raise LoweringError(
            f"operand {describe(value)} of shape {list(shape)} broadcasts against "
            f"{list(out)}: the ALU repeats whole rows only (per-channel operands)"
        )
    return emit(fl.int32(fl.packed_of(value)))


def broadcast_lanes(fl: FunctionLowering, value: SSAValue, like: TensorType) -> SSAValue:
    """`value` (`[..., 1]`) with its one channel in every lane of `like`'s packed shape: an
    `accel.lane_broadcast` of its packed form (a host step), once per value and shape."""
    x = fl.packed_of(value)
    shape = tuple(fl.packed_type(like).get_shape())
    cache = fl.__dict__.setdefault("lane_broadcasts", {})
    key = (x, shape)
    if key not in cache:
        cache[key] = fl.emit(accel.LaneBroadcastOp(x, TensorType(x.type.element_type, shape)))
    return cache[key]


def full_shape_first(
    fl: FunctionLowering, op: q.QOp, a: SSAValue | np.ndarray, b: SSAValue | np.ndarray
) -> tuple[SSAValue, SSAValue | np.ndarray]:
    """(lhs, rhs) for a commutative ALU op: lhs a tensor with the result's shape."""
    packed = fl.packed_type(op.results[0].type).get_shape()
    for lhs, rhs in ((a, b), (b, a)):
        if isinstance(lhs, SSAValue) and lhs.type.get_shape() == packed:
            return lhs, rhs
    raise LoweringError("no operand has the result's shape (both broadcast or constant)")


def binary(fl: FunctionLowering, cls, lhs: SSAValue, rhs: SSAValue | np.ndarray) -> SSAValue:
    if isinstance(rhs, SSAValue):
        return fl.emit(cls(lhs, rhs))
    return fl.emit(cls(lhs, value=rhs))


def _rescaled(fl: FunctionLowering, op, side: str, left: int) -> SSAValue | np.ndarray:
    """Operand `side` ("lhs"/"rhs") of a rescaling binary op (ADD/SUB, SQUARED_DIFFERENCE):
    centred by its zero point, shifted left by `left` and rescaled by its multiplier, as LiteRT
    computes it (folded when constant)."""
    zp = op.int_prop(f"{side}_zero_point")
    m, s = op.int_prop(f"{side}_multiplier"), op.int_prop(f"{side}_shift")

    def compute(x: np.ndarray) -> np.ndarray:
        return ar.multiply_by_quantized_multiplier((x - zp) << left, m, s)

    def emit(v: SSAValue) -> SSAValue:
        if zp:
            v = fl.emit(accel.AddOp(v, value=[-zp]))
        if left:
            v = fl.emit(accel.ShiftLeftOp(v, [left]))
        return fl.requantize(v, np.array([m]), np.array([s]), f"{side} rescale")

    return operand(fl, op, getattr(op, side), compute, emit)


def lower_add_sub(fl: FunctionLowering, op: q._AddSubOp) -> SSAValue:
    left = op.int_prop("left_shift")
    if not 0 <= left <= 23:
        raise LoweringError(
            f"left_shift {left}: centred int8 values shifted left must stay within int32 "
            "(at most 23)"
        )

    a, b = _rescaled(fl, op, "lhs", left), _rescaled(fl, op, "rhs", left)
    if isinstance(op, q.SubOp):  # a - b = a + (-1) * b modulo 2^32
        if isinstance(b, SSAValue):
            b = fl.emit(accel.MulOp(b, value=[-1]))
        else:
            b = ar.wrap_int32(-b.astype(np.int64))
    lhs, rhs = full_shape_first(fl, op, a, b)
    raw = binary(fl, accel.AddOp, lhs, rhs)
    v = fl.requantize(
        raw, np.array([op.int_prop("output_multiplier")]),
        np.array([op.int_prop("output_shift")]), "output rescale",
    )  # fmt: skip
    return fl.saturate(v, op.int_prop("output_zero_point"), op.output.type)


def lower_mul(fl: FunctionLowering, op: q.MulOp) -> SSAValue:
    def centred(side: str) -> SSAValue | np.ndarray:
        zp = op.int_prop(f"{side}_zero_point")

        def emit(v: SSAValue) -> SSAValue:
            return fl.emit(accel.AddOp(v, value=[-zp])) if zp else v

        return operand(fl, op, getattr(op, side), lambda x: x - zp, emit)

    lhs, rhs = full_shape_first(fl, op, centred("lhs"), centred("rhs"))
    prod = binary(fl, accel.MulOp, lhs, rhs)
    v = fl.requantize(
        prod, np.array([op.int_prop("multiplier")]), np.array([op.int_prop("shift")]), "mul"
    )
    return fl.saturate(v, op.int_prop("output_zero_point"), op.output.type)


def lower_squared_difference(fl: FunctionLowering, op: q.SquaredDifferenceOp) -> SSAValue:
    """TFLite's int8 SQUARED_DIFFERENCE: each side centred, shifted left and rescaled as
    `q.add`'s, the difference (`accel.mul` by -1 then `accel.add`) squared by `accel.mul`
    (|difference| <= 255 * 2^7 < 2^15, so the square fits int32), rescaled and clamped."""
    left = op.int_prop("left_shift")
    if not 0 <= left <= 7:  # |difference| <= 255 * 2^left (multipliers at most 1/2)
        raise LoweringError(f"left_shift {left}: the square of the difference would leave "
                            "int32 (at most 7)")

    a, b = _rescaled(fl, op, "lhs", left), _rescaled(fl, op, "rhs", left)
    if isinstance(b, SSAValue):
        b = fl.emit(accel.MulOp(b, value=[-1]))
    else:
        b = ar.wrap_int32(-b.astype(np.int64))
    lhs, rhs = full_shape_first(fl, op, a, b)
    diff = binary(fl, accel.AddOp, lhs, rhs)
    square = fl.emit(accel.MulOp(diff, diff))
    v = fl.requantize(
        square, np.array([op.int_prop("output_multiplier")]),
        np.array([op.int_prop("output_shift")]), "output rescale",
    )  # fmt: skip
    return fl.saturate(v, op.int_prop("output_zero_point"), op.output.type)
