"""Resizes: `q.resize_nearest_neighbor` -> `accel.resize_nearest_neighbor` (a gather step of
the program) and `q.resize_bilinear` -> `accel.resize_bilinear` (an exact interpolation step
of the program). Both keep batch, channel blocks and lanes; only H and W change.
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
