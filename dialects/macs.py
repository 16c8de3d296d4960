"""Graph analyses shared by passes, reports and backends: multiply-accumulate counts.

    op_macs(op)              # MACs of one op (q, tfl or accel), 0 for ops that do not accumulate
    function_macs(function)  # sum over a function's top-level ops
    model_macs(module)       # the model's MACs, the same at every stage of the flow

MACs are the useful products a kernel computes, independent of any hardware padding:
convolution `N*OH*OW*OC*KH*KW*IC/groups` (the filter's `I` is `IC/groups`), depthwise
`N*OH*OW*C*KH*KW` (`C` the output channels, i.e. input channels times the multiplier),
dense `rows*O*I`. Element-wise ops, pools and data movement count 0: the accelerator's
reason to exist is its GEMM core, and these numbers rank partitions by how much GEMM work
they take off the CPU.
"""

from __future__ import annotations

from math import prod

from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation


def _shape(value) -> tuple[int, ...] | None:
    t = value.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else None


def _used_lanes(weights, axis: tuple[int, ...]) -> int:
    """1 + the last lane of the packed axis whose weights are not all zero (padded lanes,
    which lowering appends after the real channels, have zero weights)."""
    import numpy as np

    nonzero = np.flatnonzero(np.any(weights != 0, axis=axis))
    return int(nonzero[-1]) + 1 if nonzero.size else 0


def _diagonal(weights) -> bool:
    """Whether every `[B, B]` tile of a packed filter is diagonal (a depthwise convolution;
    with a single block of channels it has one group, like a plain convolution)."""
    import numpy as np

    blk = weights.shape[-1]
    return not np.any(weights[..., ~np.eye(blk, dtype=bool)])


def _packed_macs(op: Operation) -> int:
    """MACs of an `accel.conv2d_zp` / `accel.dense_zp` in the model's terms: the channels
    padded to whole blocks do not count. The real channel counts are read from the constant
    filter (its trailing all-zero lanes are padding); a filter computed at run time counts
    whole blocks."""
    from qaccel.dialects import accel, tfl

    out = _shape(op.results[0])
    flt = _shape(op.operands[1])
    if out is None or flt is None:
        return 0
    owner = op.operands[1].owner
    weights = owner.as_array() if isinstance(owner, tfl.ConstOp) else None
    if isinstance(op, accel.DenseZpOp):
        if len(flt) != 4:
            return 0
        ob, ib, blk, _ = flt
        rows = prod(out) // max(1, ob * blk)
        if weights is None:
            return rows * ob * blk * ib * blk
        w = weights.transpose(0, 2, 1, 3).reshape(ob * blk, ib * blk)  # [O, I]
        return rows * _used_lanes(w, (1,)) * _used_lanes(w, (0,))
    if len(flt) != 6 or len(out) != 6:
        return 0
    ob, ibg, kh, kw, blk, _ = flt
    n, _, oh, ow = out[:4]
    groups = op.group_count  # type: ignore[attr-defined]
    if weights is None:
        return n * oh * ow * ob * blk * kh * kw * ibg * blk
    if groups == ob and ibg == 1 and _diagonal(weights):
        # depthwise: one input lane per output lane (one block of channels: a single group)
        per_out = weights.transpose(0, 4, 1, 2, 3, 5).reshape(ob * blk, -1)
        return n * oh * ow * _used_lanes(per_out, (1,)) * kh * kw
    if groups == 1:
        w = weights.transpose(0, 4, 2, 3, 1, 5).reshape(ob * blk, kh, kw, ibg * blk)  # OHWI
        return n * oh * ow * _used_lanes(w, (1, 2, 3)) * kh * kw * _used_lanes(w, (0, 1, 2))
    per_out = weights.transpose(0, 4, 1, 2, 3, 5).reshape(ob * blk, -1)
    return n * oh * ow * _used_lanes(per_out, (1,)) * kh * kw * ibg * blk


def op_macs(op: Operation) -> int:
    """Multiply-accumulates of `op`: q.conv2d / q.depthwise_conv2d / q.dense and their
    tfl counterparts, and their lowered forms accel.conv2d_zp / accel.dense_zp (counted
    without the lanes that pad channels to blocks), so the model's MACs are the same at every
    stage of the flow; 0 for everything else (and for ops with unranked shapes)."""
    if op.name in ("accel.conv2d_zp", "accel.dense_zp") and len(op.operands) == 2:
        return _packed_macs(op)
    kind = _MAC_KINDS.get(op.name)
    if kind is None or len(op.operands) < 2 or not op.results:
        return 0
    out, flt = _shape(op.results[0]), _shape(op.operands[1])
    if out is None or flt is None or len(flt) < 2:
        return 0
    if kind == "dense":
        # out = [..., O], filter = [O, I]: one dot product of length I per output element.
        return prod(out) * flt[1]
    if len(out) != 4 or len(flt) != 4:
        return 0
    n, oh, ow, oc = out
    if kind == "conv":
        _, kh, kw, per_group_in = flt  # OHWI
        return n * oh * ow * oc * kh * kw * per_group_in
    _, kh, kw, _ = flt  # depthwise: [1, KH, KW, C * multiplier]
    return n * oh * ow * oc * kh * kw


_MAC_KINDS = {
    "q.conv2d": "conv",
    "tfl.conv_2d": "conv",
    "q.depthwise_conv2d": "depthwise",
    "tfl.depthwise_conv_2d": "depthwise",
    "q.dense": "dense",
    "tfl.fully_connected": "dense",
}


def function_macs(function: func.FuncOp) -> int:
    """MACs of the ops in the function's body (calls are not followed)."""
    return sum(op_macs(op) for op in function.body.walk())


def model_macs(module: Operation) -> int:
    """MACs of the whole model, from its ops at any stage of the flow (imported, partitioned,
    lowered to `accel`, formed into layers): the same number at every stage."""
    return sum(op_macs(op) for op in module.walk())


__all__ = ["function_macs", "model_macs", "op_macs"]
