"""The output shapes TFLite's Prepare computes for the common operators, so the importer and the
`tfl` op verifiers can refuse a declared output shape that disagrees (LiteRT would resize the
tensor; qaccel keeps declared types, so a disagreement would compile into wrong code).

    infer_shape("ADD", [(1, 4), (1, 4)], [None, None], {})  -> (1, 4)

`None` means "not inferred here" (an operator not covered, or an input shape that makes the
kernel refuse: the Prepare checks report those).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from qaccel.kernels.base import window_geometry

Shape = tuple[int, ...]

_SAME_SHAPE = {
    "RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH", "QUANTIZE",
    "DEQUANTIZE", "SOFTMAX", "LOG_SOFTMAX", "HARD_SWISH", "LEAKY_RELU", "ABS", "NEG", "ELU",
    "PRELU_NONE", "SQRT", "RSQRT", "GELU",
}  # fmt: skip
_BROADCAST = {"ADD", "SUB", "MUL", "MAXIMUM", "MINIMUM", "SQUARED_DIFFERENCE", "DIV", "POW"}
_REDUCTIONS = {"MEAN", "SUM", "REDUCE_MAX", "REDUCE_MIN", "REDUCE_PROD"}


class ShapeMismatch(ValueError):
    """Inputs whose shapes the operator cannot combine (e.g. broadcasting 3 against 4)."""


def _broadcast(a: Shape, b: Shape) -> Shape:
    try:
        return tuple(int(d) for d in np.broadcast_shapes(a, b))
    except ValueError:
        raise ShapeMismatch(f"shapes {list(a)} and {list(b)} do not broadcast") from None


def _windowed(op: str, x: Shape, kh: int, kw: int, channels: int, o: dict[str, Any]) -> Shape | None:
    if len(x) != 4:
        return None
    sh, sw = int(o.get("stride_h", 1)), int(o.get("stride_w", 1))
    dh, dw = int(o.get("dilation_h_factor", 1)), int(o.get("dilation_w_factor", 1))
    if min(sh, sw, dh, dw, kh, kw) < 1:
        return None  # Prepare refuses it
    padding = o.get("padding", "SAME")
    if padding not in ("SAME", "VALID"):
        return None
    oh, _ = window_geometry(padding, x[1], kh, sh, dh)
    ow, _ = window_geometry(padding, x[2], kw, sw, dw)
    return (x[0], oh, ow, channels)


def infer_shape(op: str, shapes: Sequence[Shape | None], consts: Sequence[np.ndarray | None],
                options: dict[str, Any]) -> Shape | None:
    """The output shape of single-output `op` from its input shapes (None: absent input),
    constant inputs and options; None when not inferred. Raises ShapeMismatch."""
    if any(s is None for s in shapes[:1]) or any(d < 0 for s in shapes if s for d in s):
        return None  # no input, or dynamic dimensions
    if op in _GEMM_AND_MOVEMENT:
        return _GEMM_AND_MOVEMENT[op](shapes, consts, options)
    if op in _SAME_SHAPE and shapes:
        return shapes[0]
    if op in _BROADCAST and len(shapes) == 2 and shapes[1] is not None:
        return _broadcast(shapes[0], shapes[1])
    x = shapes[0]
    if op in ("CONV_2D", "DEPTHWISE_CONV_2D") and len(shapes) >= 2 and shapes[1] is not None:
        w = shapes[1]
        if len(w) != 4:
            return None
        channels = w[0] if op == "CONV_2D" else w[3]
        return _windowed(op, x, w[1], w[2], channels, options)
    if op in ("AVERAGE_POOL_2D", "MAX_POOL_2D") and len(x) == 4:
        return _windowed(op, x, int(options.get("filter_height", 1)),
                         int(options.get("filter_width", 1)), x[3], options)  # fmt: skip
    if op == "FULLY_CONNECTED" and len(shapes) >= 2 and shapes[1] is not None:
        w = shapes[1]
        if len(w) != 2 or w[1] == 0:
            return None
        if options.get("keep_num_dims", False):
            return (*x[:-1], w[0])
        total = math.prod(x)
        if total % w[1]:
            raise ShapeMismatch(f"input of {total} elements is not a whole number of rows of "
                                f"{w[1]} (the weights' input size)")  # fmt: skip
        return (total // w[1], w[0])
    if op == "RESHAPE":
        # As TFLite's reshape.cc: a rank-1 shape operand decides, even when it is computed at
        # run time (the converter's SHAPE -> STRIDED_SLICE -> PACK idiom); only without one
        # does the `new_shape` option apply.
        target = None
        if len(shapes) >= 2 and shapes[1] is not None and len(shapes[1]) == 1:
            if consts[1] is not None:
                target = [int(d) for d in np.asarray(consts[1]).reshape(-1)]
        elif len(np.asarray(options.get("new_shape", ())).reshape(-1)):
            target = [int(d) for d in np.asarray(options["new_shape"]).reshape(-1)]
        if target is None:
            return None
        total = math.prod(x)
        if target.count(-1) > 1 or any(d < -1 for d in target):
            raise ShapeMismatch(f"invalid new shape {target}")
        if -1 in target:
            known = math.prod(d for d in target if d != -1)
            if known == 0 or total % known:
                raise ShapeMismatch(f"cannot reshape {list(x)} to {target}")
            target = [total // known if d == -1 else d for d in target]
        if math.prod(target) != total:
            raise ShapeMismatch(f"cannot reshape {list(x)} ({total} elements) to {target}")
        return tuple(target)
    if op == "CONCATENATION" and all(s is not None for s in shapes):
        axis = int(options.get("axis", 0))
        rank = len(x)
        if not -rank <= axis < rank:
            raise ShapeMismatch(f"axis {axis} out of range for rank {rank}")
        axis %= rank
        for s in shapes[1:]:
            if len(s) != rank or any(a != b for i, (a, b) in enumerate(zip(s, x)) if i != axis):
                raise ShapeMismatch(f"cannot concatenate {list(x)} and {list(s)} on axis {axis}")
        return (*x[:axis], sum(s[axis] for s in shapes), *x[axis + 1:])
    if op in ("PAD", "PADV2") and len(consts) >= 2 and consts[1] is not None:
        pads = np.asarray(consts[1]).astype(np.int64)
        if pads.shape != (len(x), 2) or np.any(pads < 0):
            raise ShapeMismatch(f"paddings of shape {list(pads.shape)} for rank {len(x)}")
        return tuple(int(d + a + b) for d, (a, b) in zip(x, pads))
    if op == "TRANSPOSE" and len(consts) >= 2 and consts[1] is not None:
        perm = [int(p) for p in np.asarray(consts[1]).reshape(-1)]
        if sorted(p % len(x) if len(x) else p for p in perm) != list(range(len(x))):
            raise ShapeMismatch(f"permutation {perm} for rank {len(x)}")
        return tuple(x[p] for p in perm)
    if op == "PRELU" and len(shapes) == 2 and shapes[1] is not None:
        out = _broadcast(x, shapes[1])
        if out != tuple(x):
            raise ShapeMismatch(f"alpha of shape {list(shapes[1])} broadcasts the input "
                                f"{list(x)} to {list(out)}")
        return out
    if op in ("ARG_MAX", "ARG_MIN") and len(consts) >= 2 and consts[1] is not None:
        axis = np.asarray(consts[1]).reshape(-1)
        if axis.size != 1 or not -len(x) <= int(axis[0]) < len(x):
            raise ShapeMismatch(f"axis {axis.tolist()} is not one axis of rank {len(x)}")
        return tuple(d for i, d in enumerate(x) if i != int(axis[0]) % len(x))
    if op in _REDUCTIONS and len(consts) >= 2 and consts[1] is not None:
        axes = {int(a) % len(x) if len(x) else 0
                for a in np.asarray(consts[1]).reshape(-1)}  # fmt: skip
        if options.get("keep_dims", False):
            return tuple(1 if i in axes else d for i, d in enumerate(x))
        return tuple(d for i, d in enumerate(x) if i not in axes)
    return None


# Operators whose shape depends on the value of input 1 (a constant tensor).
NEEDS_CONSTANT_INPUT_1 = frozenset({"RESHAPE", "PAD", "PADV2", *_REDUCTIONS, "ARG_MAX",
                                    "ARG_MIN"})


# --------------------------------------------------------------------------------------------
# TRANSPOSE_CONV, BATCH_MATMUL and the tiling, splitting and block ops


def _const_values(consts: Sequence[np.ndarray | None], i: int) -> list[int] | None:
    if i >= len(consts) or consts[i] is None:
        return None
    return [int(v) for v in np.asarray(consts[i]).reshape(-1)]


def _transpose_conv(shapes, consts, options) -> Shape | None:
    values = _const_values(consts, 0)
    return None if values is None else tuple(values)  # LiteRT resizes the output to them


def _batch_matmul(shapes, consts, options) -> Shape | None:
    if len(shapes) < 2 or shapes[0] is None or shapes[1] is None:
        return None
    lhs, rhs = shapes[0], shapes[1]
    if not (2 <= len(lhs) <= 5 and 2 <= len(rhs) <= 5):
        return None
    adj_x, adj_y = bool(options.get("adj_x", False)), bool(options.get("adj_y", False))
    rank = max(len(lhs), len(rhs))
    el, er = (1,) * (rank - len(lhs)) + tuple(lhs), (1,) * (rank - len(rhs)) + tuple(rhs)
    for a, b in zip(el[:-2], er[:-2]):
        if a != b and a != 1 and b != 1:
            raise ShapeMismatch(f"batch dimensions of {list(lhs)} and {list(rhs)} do not "
                                "broadcast")
    if (el[-2] if adj_x else el[-1]) != (er[-1] if adj_y else er[-2]):
        raise ShapeMismatch(f"cannot multiply {list(lhs)} (adj_x={adj_x}) by {list(rhs)} "
                            f"(adj_y={adj_y})")
    batch = tuple(b if a == 1 else a for a, b in zip(el[:-2], er[:-2]))
    return (*batch, el[-1] if adj_x else el[-2], er[-2] if adj_y else er[-1])


def _tile(shapes, consts, options) -> Shape | None:
    multiples = _const_values(consts, 1)
    if multiples is None or len(multiples) != len(shapes[0]) or min(multiples, default=0) < 0:
        return None
    return tuple(d * m for d, m in zip(shapes[0], multiples))


def _broadcast_to(shapes, consts, options) -> Shape | None:
    target = _const_values(consts, 1)
    if target is None:
        return None
    x = shapes[0]
    if len(x) > len(target) or any(d not in (1, t) for d, t in zip(x, target[len(target) - len(x):])):
        raise ShapeMismatch(f"{target} is not broadcastable from {list(x)}")
    return tuple(target)


def _expand_dims(shapes, consts, options) -> Shape | None:
    axis = _const_values(consts, 1)
    if axis is None or len(axis) != 1:
        return None
    x = shapes[0]
    a = axis[0] + len(x) + 1 if axis[0] < 0 else axis[0]
    if not 0 <= a <= len(x):
        return None
    return (*x[:a], 1, *x[a:])


def _block(shapes, consts, options, *, to_space: bool) -> Shape | None:
    x, bs = shapes[0], int(options.get("block_size", 0))
    if len(x) != 4 or bs <= 0:
        return None
    n, h, w, c = x
    if to_space:
        return None if c % (bs * bs) else (n, h * bs, w * bs, c // (bs * bs))
    return None if h % bs or w % bs else (n, h // bs, w // bs, c * bs * bs)


_GEMM_AND_MOVEMENT = {
    "TRANSPOSE_CONV": _transpose_conv,
    "BATCH_MATMUL": _batch_matmul,
    "TILE": _tile,
    "BROADCAST_TO": _broadcast_to,
    "EXPAND_DIMS": _expand_dims,
    "DEPTH_TO_SPACE": lambda s, c, o: _block(s, c, o, to_space=True),
    "SPACE_TO_DEPTH": lambda s, c, o: _block(s, c, o, to_space=False),
}


def infer_shapes(op: str, shapes: Sequence[Shape | None], consts: Sequence[np.ndarray | None],
                 options: dict[str, Any], num_results: int) -> list[Shape] | None:
    """Every output's shape (`infer_shape` for single-output ops; SPLIT, SPLIT_V and UNPACK
    here); None when not inferred. Raises ShapeMismatch."""
    if any(d < 0 for s in shapes if s for d in s):
        return None
    if op == "SPLIT" and len(shapes) == 2 and shapes[1] is not None:
        axis, x = _const_values(consts, 0), shapes[1]
        count = int(options.get("num_splits", 0))
        if axis is None or not x or count <= 0:
            return None
        a = axis[0] + len(x) if axis[0] < 0 else axis[0]
        if not 0 <= a < len(x) or x[a] % count:
            return None
        return [(*x[:a], x[a] // count, *x[a + 1:])] * count
    if op == "SPLIT_V" and len(shapes) == 3 and shapes[0] is not None:
        sizes, axis, x = _const_values(consts, 1), _const_values(consts, 2), shapes[0]
        if sizes is None or axis is None or not x or sizes.count(-1) > 1:
            return None
        a = axis[0] + len(x) if axis[0] < 0 else axis[0]
        if not 0 <= a < len(x):
            return None
        if -1 in sizes:
            sizes[sizes.index(-1)] = x[a] - sum(v for v in sizes if v != -1)
        if sum(sizes) != x[a] or min(sizes) < 0:
            return None
        return [(*x[:a], v, *x[a + 1:]) for v in sizes]
    if op == "UNPACK" and shapes and shapes[0]:
        x, axis = shapes[0], int(options.get("axis", 0))
        a = axis + len(x) if axis < 0 else axis
        if not 0 <= a < len(x):
            return None
        return [(*x[:a], *x[a + 1:])] * x[a]
    if num_results != 1:
        return None
    shape = infer_shape(op, shapes, consts, options)
    return None if shape is None else [shape]


# The positions of the constant inputs each operator's output shapes depend on (besides
# NEEDS_CONSTANT_INPUT_1's).
CONSTANT_INPUTS: dict[str, tuple[int, ...]] = {
    "TRANSPOSE_CONV": (0,),
    "TRANSPOSE": (1,),
    "TILE": (1,),
    "BROADCAST_TO": (1,),
    "EXPAND_DIMS": (1,),
    "SPLIT": (0,),
    "SPLIT_V": (1, 2),
}

__all__ = ["CONSTANT_INPUTS", "NEEDS_CONSTANT_INPUT_1", "ShapeMismatch", "infer_shape",
           "infer_shapes"]
