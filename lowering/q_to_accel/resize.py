"""Resizes and a transposed convolution's scatter: `q.resize_nearest_neighbor` -> `accel.resize_nearest_neighbor` (a gather step of
the program) and `q.resize_bilinear` -> `accel.resize_bilinear` (an exact interpolation step
of the program). Both keep batch, channel blocks and lanes; only H and W change.
`q.col2im` -> `accel.col2im` (the overlapping taps of a TRANSPOSE_CONV summed: a gather-sum
step of the program, on int32 accumulators).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from qaccel.dialects import accel, q
from qaccel.lowering.q_to_accel.function import FunctionLowering, LoweringError, storage_of


def lower_resize(fl: FunctionLowering, op: q.ResizeNearestNeighborOp | q.ResizeBilinearOp,
                 ) -> SSAValue:  # fmt: skip
    if storage_of(op.input.type) != (-128, 127):
        raise LoweringError("a resize step of the program takes and gives int8")
    kind = (accel.ResizeBilinearOp if isinstance(op, q.ResizeBilinearOp)
            else accel.ResizeNearestNeighborOp)  # fmt: skip
    return fl.emit(kind(fl.packed_of(op.input), fl.packed_type(op.output.type), *op.flags()))


def lower_col2im(fl: FunctionLowering, op: q.Col2ImOp) -> SSAValue:
    x = fl.int32(fl.packed_of(op.input))
    return fl.emit(accel.Col2ImOp(x, fl.packed_type(op.output.type), op.array_prop("kernel"),
                                  op.array_prop("strides"), op.array_prop("padding"),
                                  op.output.type.get_shape()[-1]))  # fmt: skip
