"""Graph analyses shared by passes, reports and backends: multiply-accumulate counts.

    op_macs(op)              # MACs of one op (q or tfl), 0 for ops that do not accumulate
    function_macs(function)  # sum over a function's top-level ops

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


def op_macs(op: Operation) -> int:
    """Multiply-accumulates of `op`: q.conv2d / q.depthwise_conv2d / q.dense and their
    tfl counterparts; 0 for everything else (and for ops with unranked shapes)."""
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


__all__ = ["function_macs", "op_macs"]
