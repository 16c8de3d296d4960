"""What every CPU kernel module shares: the call record, the registries and small helpers.

The public face of the kernels is `qaccel.kernels.registry`; this module exists so the
per-family kernel modules (`conv.py`, ...) can register themselves without importing
each other.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from qaccel.kernels.qparams import QParams


@dataclass
class OpCall:
    """One operator invocation: arrays in, the tensors' static facts, and the options."""

    inputs: list[np.ndarray | None]  # None = omitted optional input (e.g. no bias)
    input_q: list[QParams | None]
    output_q: list[QParams | None]
    output_shapes: list[tuple[int, ...]]
    output_dtypes: list[np.dtype]
    options: dict[str, Any] = field(default_factory=dict)
    input_dtypes: list[np.dtype | None] = field(default_factory=list)
    input_shapes: list[tuple[int, ...] | None] = field(default_factory=list)
    """The inputs' types and shapes when known without their data (Prepare);
    `input_dtype` and `static_input_shape` read them."""


class Refusal(Exception):
    """A model that LiteRT's reference kernels refuse at Prepare time (a `TF_LITE_ENSURE` or a
    `TFLITE_CHECK` that aborts). The message is one line naming the op and the values."""


class KernelError(Exception):
    """A failure LiteRT reports while running (Eval), e.g. a GATHER index out of range."""


class UnsupportedOp(NotImplementedError):
    """No CPU kernel exists for this op or for this combination of tensor types."""


Kernel = Callable[[OpCall], list[np.ndarray]]
Check = Callable[[str, OpCall], None]

KERNELS: dict[str, Kernel] = {}
CHECKS: dict[str, Check] = {}
OUTPUT_TYPES: dict[str, tuple[np.dtype, ...]] = {}
"""The output element types a kernel computes, where it declares them (`register`'s
`output_types`): `prepare` refuses the others, so a model the kernel cannot run is refused
before it runs, not in the middle of it. Kernels without a declaration are not checked."""


def register(*ops: str, check: Check | None = None, output_types: tuple = ()):
    """Decorator: the function is the kernel of `ops`; `check` is their Prepare-time check;
    `output_types` the element types of the first output it computes (e.g. `(np.int8,
    np.float32)`), when it dispatches on them."""

    def wrap(fn: Kernel) -> Kernel:
        for op in ops:
            KERNELS[op] = fn
            if check is not None:
                CHECKS[op] = check
            if output_types:
                OUTPUT_TYPES[op] = tuple(np.dtype(t) for t in output_types)
        return fn

    return wrap


def prepare(op: str, call: OpCall) -> None:
    """Raise `Refusal` where LiteRT's reference kernel for `op` would refuse `call` in Prepare.

    `call.inputs` may hold None for non-constant tensors; only the static facts (quantization,
    shapes, dtypes, options, constant inputs) are consulted.
    """
    if op not in KERNELS:
        raise UnsupportedOp(f"{op}: no CPU kernel")
    types = OUTPUT_TYPES.get(op)
    if types and call.output_dtypes and np.dtype(call.output_dtypes[0]) not in types:
        raise UnsupportedOp(f"no CPU kernel for {op} with {np.dtype(call.output_dtypes[0])} "
                            f"output (it computes {', '.join(str(t) for t in types)})")
    check = CHECKS.get(op)
    if check is not None:
        check(op, call)


def require(condition: bool, op: str, message: str) -> None:
    if not condition:
        raise Refusal(f"{op}: {message}")


# --------------------------------------------------------------------------------------------
# Static facts of a call


def input_shape(call: OpCall, i: int) -> tuple[int, ...] | None:
    """Shape of input i when its array is at hand, else None (see `static_input_shape`)."""
    x = call.inputs[i] if i < len(call.inputs) else None
    return None if x is None else tuple(x.shape)


def static_input_shape(call: OpCall, i: int) -> tuple[int, ...] | None:
    """Shape of input i when known: from the array, else from `call.input_shapes` (the
    declared type, at Prepare time); None for an absent input."""
    shape = input_shape(call, i)
    if shape is not None:
        return shape
    known = call.input_shapes[i] if i < len(call.input_shapes) else None
    return None if known is None else tuple(int(d) for d in known)


def input_dtype(call: OpCall, i: int) -> np.dtype | None:
    """Type of input i when known: from the array, else from `call.input_dtypes`."""
    x = call.inputs[i] if i < len(call.inputs) else None
    if x is not None:
        return np.dtype(x.dtype)
    known = call.input_dtypes[i] if i < len(call.input_dtypes) else None
    return None if known is None else np.dtype(known)


def qparams(q: QParams | None, op: str, what: str) -> QParams:
    if q is None:
        raise Refusal(f"{op}: {what} has no quantization parameters")
    return q


def scale_zp(q: QParams | None) -> tuple[float, int]:
    """TFLite's `params.scale` / `params.zero_point`: the first entry (0, 0 if unquantized)."""
    if q is None or len(q.scale) == 0:
        return 0.0, 0
    return float(q.scale[0]), int(q.zero_point[0]) if len(q.zero_point) else 0


def f32(x: float) -> np.float32:
    return np.float32(x)


def activation(call: OpCall) -> str:
    return call.options.get("fused_activation_function", "NONE") or "NONE"


# --------------------------------------------------------------------------------------------
# Windowed ops (padding.h)


def c_div(a: int, b: int) -> int:
    """C integer division of Python ints (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


def window_geometry(padding: str, in_size: int, filter_size: int, stride: int,
                    dilation: int = 1) -> tuple[int, int]:
    """(output size, padding before) of one spatial dimension, as TFLite computes them."""
    effective = (filter_size - 1) * dilation + 1
    if padding == "SAME":
        out = c_div(in_size + stride - 1, stride)
    elif padding == "VALID":
        out = c_div(in_size + stride - effective, stride)
    else:
        raise ValueError(f"unknown padding {padding!r}")
    total = max((out - 1) * stride + effective - in_size, 0)
    return out, total // 2


def windowed_view(x: np.ndarray, out_h: int, out_w: int, kh: int, kw: int, stride_h: int,
                  stride_w: int, dil_h: int, dil_w: int) -> np.ndarray:
    """A strided view (N, out_h, out_w, kh, kw, C) of an already padded NHWC array."""
    n, _, _, c = x.shape
    s = x.strides
    return np.lib.stride_tricks.as_strided(
        x,
        shape=(n, out_h, out_w, kh, kw, c),
        strides=(s[0], s[1] * stride_h, s[2] * stride_w, s[1] * dil_h, s[2] * dil_w, s[3]),
        writeable=False,
    )


def pad_spatial(x: np.ndarray, pad_h: int, pad_w: int, out_h: int, out_w: int, kh: int,
                kw: int, stride_h: int, stride_w: int, dil_h: int, dil_w: int,
                value) -> np.ndarray:
    """Pad NHWC x so every tap of every window lies inside the array (extra taps read
    `value`; TFLite skips them, so callers pick a neutral value)."""
    _, h, w, _ = x.shape
    need_h = (out_h - 1) * stride_h + (kh - 1) * dil_h + 1
    need_w = (out_w - 1) * stride_w + (kw - 1) * dil_w + 1
    bottom = max(need_h - h - pad_h, 0)
    right = max(need_w - w - pad_w, 0)
    if pad_h == 0 and pad_w == 0 and bottom == 0 and right == 0:
        return x
    return np.pad(x, ((0, 0), (pad_h, bottom), (pad_w, right), (0, 0)), constant_values=value)
