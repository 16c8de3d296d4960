"""Graph analyses shared by passes, reports and backends: multiply-accumulate counts.

    op_macs(op)              # MACs of one op (tfl, q or accel), 0 for ops that do not accumulate
    function_macs(function)  # sum over a function's ops
    model_macs(module)       # the model's MACs, the same at every stage of the flow

MACs are the useful products a kernel computes, independent of any hardware padding:
convolution `N*OH*OW*OC*KH*KW*IC/groups` (the filter's `I` is `IC/groups`), depthwise
`N*OH*OW*C*KH*KW` (`C` the output channels, i.e. input channels times the multiplier),
dense `rows*O*I`, transposed convolution `N*IH*IW*OC*KH*KW*IC` (the products its scatter
adds, clipped or not), batched matrix product `batch*M*N*K`. Element-wise ops, pools and
data movement count 0: the accelerator's reason to exist is its GEMM core, and these numbers
rank partitions by how much GEMM work they take off the CPU.

`tfl` ops are counted by their TFLite operator name, so a typed op and a `tfl.opaque` op of
the same builtin count alike. The packed `accel.conv2d_zp` / `accel.dense_zp` count their
channels without the packing's padding: up to the last lane of the constant filter that holds
a nonzero weight (the padded lanes are zero; a filter that is not a constant counts every
lane).
"""

from __future__ import annotations

from math import prod

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import TensorType
from xdsl.ir import Operation


def _shape(value) -> tuple[int, ...] | None:
    t = value.type
    return tuple(t.get_shape()) if isinstance(t, TensorType) else None


def _tflite_name(op: Operation) -> str | None:
    """The TFLite builtin a `tfl` op (typed or opaque) stands for."""
    from qaccel.dialects.tfl import OpaqueOp

    if isinstance(op, OpaqueOp):
        return op.op_name.data
    return getattr(type(op), "TFLITE_NAME", None) if op.name.startswith("tfl.") else None


def _options(op: Operation) -> dict:
    from qaccel.dialects.tfl import OpaqueOp, attr_to_py

    if isinstance(op, OpaqueOp):
        return attr_to_py(op.options) or {}
    options = getattr(op, "options", None)
    return options if isinstance(options, dict) else {}


def op_macs(op: Operation) -> int:
    """Multiply-accumulates of `op` (see the module docstring); 0 for everything else and for
    ops with unranked or inconsistent shapes."""
    kind = _MAC_KINDS.get(op.name)
    if kind is None:
        name = _tflite_name(op)
        kind = _TFLITE_KINDS.get(name) if name is not None else None
    if kind is None or len(op.operands) < 2 or not op.results:
        return 0
    try:
        return max(0, int(_KIND_MACS[kind](op)))
    except (TypeError, ValueError, IndexError, KeyError):
        return 0


def _gemm_shapes(op: Operation, filter_index: int = 1):
    out, flt = _shape(op.results[0]), _shape(op.operands[filter_index])
    if out is None or flt is None:
        raise ValueError("unranked")
    return out, flt


def _dense(op: Operation) -> int:
    # out = [..., O], filter = [O, I]: one dot product of length I per output element.
    out, flt = _gemm_shapes(op)
    if len(flt) != 2:
        raise ValueError("filter")
    return prod(out) * flt[1]


def _conv(op: Operation) -> int:
    out, flt = _gemm_shapes(op)
    if len(out) != 4 or len(flt) != 4:
        raise ValueError("rank")
    n, oh, ow, oc = out
    _, kh, kw, per_group_in = flt  # OHWI
    return n * oh * ow * oc * kh * kw * per_group_in


def _depthwise(op: Operation) -> int:
    out, flt = _gemm_shapes(op)
    if len(out) != 4 or len(flt) != 4:
        raise ValueError("rank")
    n, oh, ow, oc = out
    _, kh, kw, _ = flt  # [1, KH, KW, C * multiplier]
    return n * oh * ow * oc * kh * kw


def _transpose_conv(op: Operation) -> int:
    # inputs (output_shape, weights [OC, KH, KW, IC], input [N, IH, IW, IC], bias?)
    if len(op.operands) < 3:
        raise ValueError("operands")
    flt, x = _shape(op.operands[1]), _shape(op.operands[2])
    if flt is None or x is None or len(flt) != 4 or len(x) != 4:
        raise ValueError("rank")
    n, ih, iw, ic = x
    oc, kh, kw, _ = flt
    return n * ih * iw * oc * kh * kw * ic


def _batch_matmul(op: Operation) -> int:
    # out [..., M, N] = x [..., M, K] (or [..., K, M] with adj_x) times y
    out, x = _shape(op.results[0]), _shape(op.operands[0])
    if out is None or x is None or len(x) < 2 or len(out) < 2:
        raise ValueError("rank")
    k = x[-2] if _options(op).get("adj_x", False) else x[-1]
    return prod(out) * k


def _q_batch_matmul(op: Operation) -> int:
    # q.batch_matmul (adj_x a property) and accel.batch_matmul (plain shapes as properties)
    props = op.properties
    if "lhs_shape" in props:
        x = [int(v) for v in props["lhs_shape"].get_values()]  # type: ignore[attr-defined]
        out = op.plain_output_shape()  # type: ignore[attr-defined]
    else:
        out, x = _shape(op.results[0]), _shape(op.operands[0])
    if out is None or x is None or len(x) < 2 or len(out) < 2:
        raise ValueError("rank")
    adj_x = props["adj_x"].value.data  # type: ignore[attr-defined]
    return prod(out) * (x[-2] if adj_x else x[-1])


def _used_lanes(lanes: np.ndarray, axis: int) -> int:
    """1 + the last index along `axis` whose slice holds a nonzero value (0 if none)."""
    other = tuple(a for a in range(lanes.ndim) if a != axis)
    used = np.flatnonzero(np.any(lanes != 0, axis=other))
    return int(used[-1]) + 1 if used.size else 0


def _packed_filter(op: Operation) -> np.ndarray | None:
    from qaccel.dialects.tfl import ConstOp

    owner = op.operands[1].owner
    return np.asarray(owner.as_array()) if isinstance(owner, ConstOp) else None


def _conv2d_zp(op: Operation) -> int:
    # input [N, I/B, H, W, 1, B], filter [O/B, I/B/groups, KH, KW, B(o), B(i)],
    # result [N, O/B, OH, OW, 1, B]
    out, flt = _gemm_shapes(op)
    if len(out) != 6 or len(flt) != 6:
        raise ValueError("rank")
    n, ob, oh, ow, _, blk = out
    _, ibg, kh, kw, _, _ = flt
    groups = int(op.group_count)  # type: ignore[attr-defined]
    w = _packed_filter(op)
    eye = np.eye(blk, dtype=bool)
    if (w is not None and groups == ob and ibg == 1 and blk > 1
            and not np.any(w[:, 0][..., ~eye])):  # fmt: skip
        # depthwise: one group per block (one group in all for a single block), diagonal
        # tiles: one product per lane and tap
        diagonal = w[:, 0][..., eye]  # [O/B, KH, KW, B]
        channels = _used_lanes(diagonal.transpose(0, 3, 1, 2).reshape(ob * blk, -1), 0)
        return n * oh * ow * channels * kh * kw
    oc, ic = ob * blk, ibg * blk
    if w is not None:
        oc = _used_lanes(w.transpose(0, 4, 1, 2, 3, 5).reshape(ob * blk, -1), 0)
        if groups == 1:
            ic = _used_lanes(w.transpose(1, 5, 0, 2, 3, 4).reshape(ibg * blk, -1), 0)
    return n * oh * ow * oc * kh * kw * ic


def _dense_zp(op: Operation) -> int:
    # filter [O/B, I/B, B(o), B(i)]; result [N, O/B, d1, ..., 1, B] or [rows, O/B, 1, B]
    out, flt = _gemm_shapes(op)
    if len(flt) != 4:
        raise ValueError("rank")
    ob, ib, blk, _ = flt
    rows = prod(out) // (ob * blk)
    oc, ic = ob * blk, ib * blk
    w = _packed_filter(op)
    if w is not None:
        oc = _used_lanes(w.transpose(0, 2, 1, 3).reshape(ob * blk, -1), 0)
        ic = _used_lanes(w.transpose(1, 3, 0, 2).reshape(ib * blk, -1), 0)
    return rows * oc * ic


_KIND_MACS = {
    "conv": _conv, "depthwise": _depthwise, "dense": _dense,
    "transpose_conv": _transpose_conv, "batch_matmul": _batch_matmul,
    "q_batch_matmul": _q_batch_matmul,
    "conv2d_zp": _conv2d_zp, "dense_zp": _dense_zp,
}  # fmt: skip

_MAC_KINDS = {
    "q.conv2d": "conv",
    "q.depthwise_conv2d": "depthwise",
    "q.dense": "dense",
    "accel.conv2d_zp": "conv2d_zp",
    "accel.dense_zp": "dense_zp",
    "q.batch_matmul": "q_batch_matmul",
    "accel.batch_matmul": "q_batch_matmul",
}

_TFLITE_KINDS = {
    "CONV_2D": "conv",
    "DEPTHWISE_CONV_2D": "depthwise",
    "FULLY_CONNECTED": "dense",
    "TRANSPOSE_CONV": "transpose_conv",
    "BATCH_MATMUL": "batch_matmul",
}
"""The TFLite builtins that accumulate products, by operator name (typed or opaque)."""


def function_macs(function: func.FuncOp) -> int:
    """MACs of the ops in the function's body (calls are not followed)."""
    return sum(op_macs(op) for op in function.body.walk())


def model_macs(module: Operation) -> int:
    """MACs of the whole model, from its ops at any stage of the flow (imported, partitioned,
    lowered to `accel`, formed into layers): the same number at every stage."""
    return sum(op_macs(op) for op in module.walk())


__all__ = ["function_macs", "model_macs", "op_macs"]
