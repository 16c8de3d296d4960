"""The attention core: a lane-moving `q.reshape` and `q.transpose` -> `accel.relayout` (a
gather step of the program), `q.softmax` -> `accel.softmax` and `q.batch_matmul` ->
`accel.batch_matmul` (exact host steps of the program, `kernels/attention.py`).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from qaccel.dialects import accel, q
from qaccel.lowering.q_to_accel.function import FunctionLowering, LoweringError


def _packed_rank(op: q.QOp) -> None:
    for v in (*op.operands, *op.results):
        rank = len(v.type.get_shape())
        if not 2 <= rank <= 6:
            raise LoweringError(f"{op.name} on a rank-{rank} tensor (packed activations have "
                                "rank 2 to 6)")  # fmt: skip


def lower_relayout(fl: FunctionLowering, op: q.ReshapeOp | q.TransposeOp) -> SSAValue:
    """A reshape that moves lanes, or a transpose: `accel.relayout`."""
    _packed_rank(op)
    in_shape = list(op.input.type.get_shape())
    if isinstance(op, q.TransposeOp):
        shape, perm = in_shape, [int(p) for p in op.array_prop("perm")]
    else:
        shape = list(op.output.type.get_shape())
        perm = list(range(len(shape)))
    return fl.emit(accel.RelayoutOp(fl.packed_of(op.input), fl.packed_type(op.output.type),
                                    in_shape, shape, perm,
                                    accel.default_padding_value(op.output.type)))  # fmt: skip


def lower_softmax(fl: FunctionLowering, op: q.SoftmaxOp) -> SSAValue:
    _packed_rank(op)
    return fl.emit(accel.SoftmaxOp(
        fl.packed_of(op.input), fl.packed_type(op.output.type), op.input.type.get_shape()[-1],
        op.int_prop("multiplier"), op.int_prop("left_shift"), op.int_prop("diff_min")))


def lower_batch_matmul(fl: FunctionLowering, op: q.BatchMatmulOp) -> SSAValue:
    _packed_rank(op)
    names = ("adj_x", "adj_y", "lhs_zero_point", "rhs_zero_point", "multiplier", "shift",
             "output_zero_point")  # fmt: skip
    ints = {n: op.int_prop(n) for n in names}
    return fl.emit(accel.BatchMatmulOp(
        fl.packed_of(op.lhs), fl.packed_of(op.rhs), fl.packed_type(op.output.type),
        op.lhs.type.get_shape(), op.rhs.type.get_shape(),
        pad_value=accel.default_padding_value(op.output.type), **ints))  # fmt: skip
