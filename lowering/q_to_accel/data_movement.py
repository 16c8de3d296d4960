"""Data movement: `q.pad` of H and W -> `accel.pad` (the DMA pads); `q.slice` of the spatial
dimensions -> `accel.crop`; `q.reshape` keeping batch and channels -> `accel.reshape` (the
same packed bytes); `q.concat` -> `accel.concat` (by placement, along batch, spatial
dimensions or whole channel blocks), or `accel.concat_lanes` when an input but the last does
not fill whole channel blocks (lanes move: a host step of the program); `q.depth_to_space` ->
`accel.depth_to_space` (a gather step of the program).
"""

from __future__ import annotations

from xdsl.ir import SSAValue

from qaccel.dialects import accel, q
from qaccel.kernels.layout import reshape_is_view
from qaccel.lowering.q_to_accel.function import FunctionLowering, LoweringError, storage_of


def lower_pad(fl: FunctionLowering, op: q.PadOp) -> SSAValue:
    widths = op.array_prop("padding").reshape(-1, 2)
    rank = len(widths)
    if rank < 3 or widths[0].any() or widths[-1].any():
        raise LoweringError(
            f"pads {widths.tolist()}: only spatial dimensions are padded by the DMA (batch "
            "or channel padding would move lanes)"
        )
    lo, hi = storage_of(op.output.type)
    pad_value = op.int_prop("pad_value")
    if not lo <= pad_value <= hi:
        raise LoweringError(f"pad value {pad_value} does not fit [{lo}, {hi}]")
    x = fl.packed_of(op.input)
    spatial = [int(v) for v in widths[1:-1].reshape(-1)]
    return fl.emit(accel.PadOp(x, fl.packed_type(op.output.type), spatial, pad_value))


def lower_slice(fl: FunctionLowering, op: q.SliceOp) -> SSAValue:
    shape, out = op.input.type.get_shape(), op.output.type.get_shape()
    begin = [int(b) for b in op.array_prop("begin")]
    last = len(shape) - 1
    if len(shape) < 3 or any(begin[d] or out[d] != shape[d] for d in (0, last)):
        raise LoweringError(
            f"slices {list(out)} at {begin} out of {list(shape)}: only the dimensions "
            "between batch and channels can be cropped (anything else moves lanes)"
        )
    return fl.emit(accel.CropOp(fl.packed_of(op.input), fl.packed_type(op.output.type),
                                  begin[1:last]))  # fmt: skip


def lower_depth_to_space(fl: FunctionLowering, op: q.DepthToSpaceOp) -> SSAValue:
    out_type = fl.packed_type(op.output.type)
    return fl.emit(accel.DepthToSpaceOp(
        fl.packed_of(op.input), out_type, op.int_prop("block_size"),
        op.output.type.get_shape()[-1], accel.default_padding_value(op.output.type)))  # fmt: skip


def lower_reshape(fl: FunctionLowering, op: q.ReshapeOp) -> SSAValue:
    a, b = op.input.type.get_shape(), op.output.type.get_shape()
    if not reshape_is_view(a, b, fl.block):
        raise LoweringError(
            f"reshapes {list(a)} to {list(b)}: only the dimensions between batch and "
            "channels may change, or both be whole channel blocks in plain order "
            "(anything else moves lanes)"
        )
    return fl.emit(accel.ReshapeOp(fl.packed_of(op.input), fl.packed_type(op.output.type)))


def lower_concat(fl: FunctionLowering, op: q.ConcatOp) -> SSAValue:
    rank = len(op.output.type.get_shape())
    axis = op.int_prop("axis") % rank
    if axis == rank - 1:
        channels = [v.type.get_shape()[-1] for v in op.inputs]
        if any(c % fl.block for c in channels[:-1]):
            # Lanes move: an exact host step of the function's program (no DRAM placement).
            values = [fl.packed_of(v) for v in op.inputs]
            return fl.emit(
                accel.ConcatLanesOp(values, fl.packed_type(op.output.type), channels)
            )
    packed_axis = 0 if axis == 0 else 1 if axis == rank - 1 else axis + 1
    values = [fl.packed_of(v) for v in op.inputs]
    return fl.emit(accel.ConcatOp(values, fl.packed_type(op.output.type), packed_axis))
