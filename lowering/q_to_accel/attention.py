"""The attention core: a lane-moving `q.reshape` and `q.transpose` -> `accel.relayout` (a
gather step of the program), `q.softmax` -> `accel.softmax` and `q.batch_matmul` ->
`accel.batch_matmul` (exact host steps of the program, `kernels/attention.py`).

An int8 `q.batch_matmul` whose product fits GEMM layers runs on the GEMM core instead
(`lower_batch_matmul_gemm`, `kernels/bmm_gemm.py`): `accel.bmm_operand` gathers the lhs rows
as a token image and the rhs as weight tiles (placed in the activation arena, loaded like
constant weights), `accel.dense_zp` multiplies the raw int8 values on the GEMM core,
`accel.bmm_zp_correction` adds the zero points' terms, and the requantization follows (relaid
out for a rank-4 product). Every flattened batch index at once (index -1: the operands and
the correction stacked, one GEMM layer whose images are the batch indices, each with its own
weight tiles), so the program stops once for the gathers, not once per batch index; a product
whose stacked operands exceed `bmm_gemm.STACKED_MAX_BYTES` has one layer per batch index, the
results concatenated. The gathers and the correction read an operand made by relayouts (a head
split's reshape and transpose) through them (`lhs_view` / `rhs_view`), so those relayouts are
no host steps of their own when nothing else reads them.
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
    gemm = lower_batch_matmul_gemm(fl, op)
    if gemm is not None:
        return gemm
    names = ("adj_x", "adj_y", "lhs_zero_point", "rhs_zero_point", "multiplier", "shift",
             "output_zero_point")  # fmt: skip
    ints = {n: op.int_prop(n) for n in names}
    return fl.emit(accel.BatchMatmulOp(
        fl.packed_of(op.lhs), fl.packed_of(op.rhs), fl.packed_type(op.output.type),
        op.lhs.type.get_shape(), op.rhs.type.get_shape(),
        pad_value=accel.default_padding_value(op.output.type), **ints))  # fmt: skip


def _through_relayouts(v: SSAValue):
    """(the packed value the `accel.relayout`s making `v` read, their `bmm_gemm.View`), or
    (`v`, None): a gather reads through them, so a head split's reshape and transpose need
    not be host steps of their own (they are erased when nothing else reads them)."""
    steps: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
    root: tuple[int, ...] = ()
    while isinstance(v.owner, accel.RelayoutOp):
        r = v.owner
        steps.insert(0, (tuple(r.array_prop("shape").tolist()),
                         tuple(r.array_prop("perm").tolist())))  # fmt: skip
        root = tuple(r.array_prop("in_shape").tolist())
        v = r.input
    return v, ((root, tuple(steps)) if steps else None)


def lower_batch_matmul_gemm(fl: FunctionLowering, op: q.BatchMatmulOp) -> SSAValue | None:
    """`q.batch_matmul` as one GEMM layer per flattened batch index (module docstring), or
    None: the product stays the exact host step (`accel.batch_matmul`)."""
    import numpy as np
    from xdsl.dialects.builtin import TensorType, i32

    from qaccel.kernels import bmm_gemm

    ls, rs = list(op.lhs.type.get_shape()), list(op.rhs.type.get_shape())
    out_type = op.output.type
    if any(accel.storage_width(v.type) != 8 for v in (op.lhs, op.rhs, op.output)):
        return None
    adj_x, adj_y = op.int_prop("adj_x"), op.int_prop("adj_y")
    batch, m, k, n = bmm_gemm.dims(ls, rs, bool(adj_x), bool(adj_y))
    if max(batch, m, k, n) > bmm_gemm.GEMM_MAX_DIM:
        return None
    lhs, lhs_view = _through_relayouts(fl.packed_of(op.lhs))
    rhs, rhs_view = _through_relayouts(fl.packed_of(op.rhs))
    block = fl.block
    shapes = dict(lhs_shape=ls, rhs_shape=rs, views=(lhs_view, rhs_view))
    zl, zr = op.int_prop("lhs_zero_point"), op.int_prop("rhs_zero_point")
    zp_out = op.int_prop("output_zero_point")
    lo, hi = -128, 127
    out_element = out_type.element_type
    stacked = batch > 1 and bmm_gemm.stacked_bytes(batch, m, k, n, block) <= \
        bmm_gemm.STACKED_MAX_BYTES  # fmt: skip
    group = batch if stacked else 1
    result = bmm_gemm.result_shape(m, n, block, group)
    pieces = []
    for i in [bmm_gemm.ALL] if stacked else range(batch):
        common = dict(adj_x=adj_x, adj_y=adj_y, index=i)
        a = fl.emit(accel.BmmOperandOp(
            lhs, TensorType(lhs.type.element_type, bmm_gemm.tokens_shape(m, k, block, group)),
            **shapes, operand=0, **common))  # fmt: skip
        w = fl.emit(accel.BmmOperandOp(
            rhs, TensorType(rhs.type.element_type,
                            bmm_gemm.tiles_shape(k, n, block, group if stacked else None)),
            **shapes, operand=1, **common))  # fmt: skip
        acc = fl.emit(accel.DenseZpOp(a, w, TensorType(i32, result)))
        corr = fl.emit(accel.BmmZpCorrectionOp(lhs, rhs, TensorType(i32, result), **shapes,
                                               lhs_zero_point=zl, rhs_zero_point=zr,
                                               **common))  # fmt: skip
        v = fl.emit(accel.AddOp(acc, corr))
        v = fl.requantize(v, np.asarray([op.int_prop("multiplier")]),
                          np.asarray([op.int_prop("shift")]), "batch_matmul")  # fmt: skip
        v = fl.emit(accel.MaxOp(v, value=[lo - zp_out]))
        v = fl.emit(accel.MinOp(v, value=[hi - zp_out]))
        if zp_out:
            v = fl.emit(accel.AddOp(v, value=[zp_out]))
        pieces.append(fl.emit(accel.NarrowOp(v, TensorType(out_element, result))))
    stacked_shape = (batch, *result[1:])
    y = pieces[0] if len(pieces) == 1 else fl.emit(
        accel.ConcatOp(pieces, TensorType(out_element, stacked_shape), 0))
    final = fl.packed_type(out_type)
    if tuple(final.get_shape()) == stacked_shape:
        return y
    plain_out = list(out_type.get_shape())
    return fl.emit(accel.RelayoutOp(y, final, [batch, m, n], plain_out,
                                    list(range(len(plain_out))),
                                    accel.default_padding_value(out_type)))  # fmt: skip
