"""AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, SUM and REDUCE_PROD (integer) as LiteRT's reference
kernels compute them."""

from __future__ import annotations

import numpy as np

from qaccel.kernels import arithmetic as ar
from qaccel.kernels.base import (
    OpCall,
    Refusal,
    UnsupportedOp,
    activation,
    input_shape,
    pad_spatial,
    register,
    require,
    scale_zp,
    window_geometry,
)


# --------------------------------------------------------------------------------------------
# Pools


def _check_pool(op: str, call: OpCall) -> None:
    xs = input_shape(call, 0)
    if xs is not None:
        require(len(xs) == 4, op, f"input must be 4-D, got shape {xs}")
    o = call.options
    require(int(o.get("stride_h", 0)) > 0 and int(o.get("stride_w", 0)) > 0, op,
            f"strides must be positive (stride_h={o.get('stride_h', 0)}, "
            f"stride_w={o.get('stride_w', 0)})")
    require(int(o.get("filter_height", 0)) > 0 and int(o.get("filter_width", 0)) > 0, op,
            "filter sizes must be positive")
    require(o.get("padding", "SAME") in ("SAME", "VALID"), op,
            f"unknown padding {o.get('padding')!r}")
    if np.dtype(call.output_dtypes[0]) == np.int8:
        out_s, out_zp = scale_zp(call.output_q[0])
        try:
            ar.activation_range_quantized(activation(call), out_s, out_zp, np.int8)
        except OverflowError as exc:
            raise Refusal(f"{op}: fused activation bound overflows int32 ({exc})") from None


def _pool_taps(call: OpCall, x: np.ndarray, pad_value):
    """Yield (tap view, inside mask) for every filter tap over a padded input."""
    o = call.options
    n, h, w, c = x.shape
    kh, kw = int(o["filter_height"]), int(o["filter_width"])
    sh, sw = int(o["stride_h"]), int(o["stride_w"])
    out_h, pad_h = window_geometry(o.get("padding", "SAME"), h, kh, sh)
    out_w, pad_w = window_geometry(o.get("padding", "SAME"), w, kw, sw)
    xp = pad_spatial(x, pad_h, pad_w, out_h, out_w, kh, kw, sh, sw, 1, 1, pad_value)
    ys = np.arange(out_h) * sh - pad_h
    xs = np.arange(out_w) * sw - pad_w
    taps = []
    for ky in range(kh):
        for kx in range(kw):
            view = xp[:, ky: ky + (out_h - 1) * sh + 1: sh, kx: kx + (out_w - 1) * sw + 1: sw, :]
            inside = (((ys + ky >= 0) & (ys + ky < h))[:, None] &
                      ((xs + kx >= 0) & (xs + kx < w))[None, :])
            taps.append((view, inside[None, :, :, None]))
    return (n, out_h, out_w, c), taps


@register("AVERAGE_POOL_2D", check=_check_pool)
def average_pool_2d(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    dtype = np.dtype(call.output_dtypes[0])
    if dtype == np.int8:
        shape, taps = _pool_taps(call, x.astype(np.int32), 0)
        acc = np.zeros(shape, dtype=np.int64)
        count = np.zeros(shape[1:3], dtype=np.int64)[None, :, :, None]
        for view, inside in taps:
            acc += view  # padding holds 0
            count = count + inside
        if np.any(count == 0):
            raise Refusal("AVERAGE_POOL_2D: a pooling window lies entirely in the padding")
        half = count // 2
        rounded = np.where(acc > 0, ar.trunc_div(acc + half, count),
                           ar.trunc_div(acc - half, count))
        out_s, out_zp = scale_zp(call.output_q[0])
        lo, hi = ar.activation_range_quantized(activation(call), out_s, out_zp, np.int8)
        return [np.clip(rounded, lo, hi).astype(np.int8)]
    if dtype == np.float32:
        shape, taps = _pool_taps(call, x.astype(np.float32), 0.0)
        total = np.zeros(shape, dtype=np.float32)
        count = np.zeros(shape[1:3], dtype=np.float32)[None, :, :, None]
        for view, inside in taps:
            total = np.where(inside, total + view, total)
            count = count + inside
        lo, hi = ar.activation_range_float(activation(call))
        avg = (total / count).astype(np.float32)
        return [np.minimum(np.maximum(avg, np.float32(lo)), np.float32(hi))]
    raise UnsupportedOp(f"AVERAGE_POOL_2D: no kernel for {dtype} tensors")


@register("MAX_POOL_2D", check=_check_pool)
def max_pool_2d(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    dtype = np.dtype(call.output_dtypes[0])
    if dtype == np.int8:
        shape, taps = _pool_taps(call, x.astype(np.int16), np.int16(-32768))
        out_s, out_zp = scale_zp(call.output_q[0])
        lo, hi = ar.activation_range_quantized(activation(call), out_s, out_zp, np.int8)
        best = np.full(shape, -32768, dtype=np.int16)
        for view, _ in taps:
            np.maximum(best, view, out=best)  # padding never wins: every window has a pixel
        return [np.clip(best, lo, hi).astype(np.int8)]
    if dtype == np.float32:
        shape, taps = _pool_taps(call, x.astype(np.float32), -np.inf)
        best = np.full(shape, np.finfo(np.float32).min, dtype=np.float32)
        for view, inside in taps:
            best = np.where(inside, np.maximum(best, view), best)
        lo, hi = ar.activation_range_float(activation(call))
        return [np.minimum(np.maximum(best, np.float32(lo)), np.float32(hi))]
    raise UnsupportedOp(f"MAX_POOL_2D: no kernel for {dtype} tensors")


# --------------------------------------------------------------------------------------------
# MEAN / SUM


def resolve_axes(axes, rank: int) -> list[int]:
    """`ResolveAxis`: negative axes wrap, duplicates collapse, order of first appearance."""
    out: list[int] = []
    for a in np.asarray(axes, dtype=np.int64).reshape(-1).tolist():
        a = a + rank if a < 0 else a
        if not 0 <= a < max(rank, 1):
            raise Refusal(f"axis {a} out of range for rank {rank}")
        if a not in out:
            out.append(a)
    return out


def _reduced_shape(x_shape, axes: list[int], keep_dims: bool) -> tuple[int, ...]:
    if keep_dims:
        return tuple(1 if i in axes else d for i, d in enumerate(x_shape))
    return tuple(d for i, d in enumerate(x_shape) if i not in axes)


def _check_reduce(op: str, call: OpCall) -> None:
    require(len(call.inputs) >= 2, op, "missing the axis input")
    axis = call.inputs[1]
    if axis is not None:
        require(axis.dtype == np.int32, op, f"axis must be int32, got {axis.dtype}")
        xs = input_shape(call, 0)
        if xs is not None:
            try:
                resolve_axes(axis, len(xs))
            except Refusal as exc:
                raise Refusal(f"{op}: {exc}") from None
    if np.dtype(call.output_dtypes[0]) == np.int8:
        require(call.input_q[0] is not None and call.output_q[0] is not None, op,
                "int8 input and output need quantization parameters")


def _reduce_setup(call: OpCall):
    x = call.inputs[0]
    axes = resolve_axes(call.inputs[1], x.ndim)
    keep = bool(call.options.get("keep_dims", False))
    return x, axes, _reduced_shape(x.shape, axes, keep)


@register("MEAN", check=_check_reduce)
def mean(call: OpCall) -> list[np.ndarray]:
    x, axes, out_shape = _reduce_setup(call)
    dtype = np.dtype(call.output_dtypes[0])
    if dtype == np.int8:
        out = _quantized_mean_or_sum(x.astype(np.int64), axes, out_shape, call, False)
        return [out.astype(np.int8)]
    if dtype == np.float32:
        n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        total = _sequential_float_sum(x.astype(np.float32), axes)
        return [(total / np.float32(n)).astype(np.float32).reshape(out_shape)]
    if dtype == np.int32:
        n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
        total = x.astype(np.int64).sum(axis=tuple(axes))
        return [ar.trunc_div(total, n).astype(np.int32).reshape(out_shape)]
    raise UnsupportedOp(f"MEAN: no kernel for {dtype} tensors")


@register("SUM", check=_check_reduce)
def sum_(call: OpCall) -> list[np.ndarray]:
    x, axes, out_shape = _reduce_setup(call)
    dtype = np.dtype(call.output_dtypes[0])
    if dtype == np.int8:
        # The reference kernel instantiates its quantized sum for uint8 whatever the tensor
        # type (reduce.cc, QuantizedMeanOrSum<T, kReference>): int8 bytes are read as uint8
        # and the result is clamped to [0, 255] and stored back as a byte.
        raw = x.view(np.uint8).astype(np.int64)
        out = _quantized_mean_or_sum(raw, axes, out_shape, call, True, (0, 255))
        return [out.astype(np.uint8).view(np.int8)]
    if dtype == np.float32:
        return [_sequential_float_sum(x.astype(np.float32), axes).reshape(out_shape)]
    if dtype == np.int32:
        total = ar.wrap_int32(x.astype(np.int64).sum(axis=tuple(axes)))
        return [total.astype(np.int32).reshape(out_shape)]
    raise UnsupportedOp(f"SUM: no kernel for {dtype} tensors")


@register("REDUCE_PROD", check=_check_reduce)
def reduce_prod(call: OpCall) -> list[np.ndarray]:
    """Integer products: the converter computes a dynamic Reshape's row count as REDUCE_PROD of
    an int32 slice of SHAPE. Like the reference kernel's `in * current` on int32 (which wraps
    on the machines LiteRT runs on), products wrap modulo 2**32; an empty product is 1."""
    x, axes, out_shape = _reduce_setup(call)
    dtype = np.dtype(call.output_dtypes[0])
    if dtype in (np.dtype(np.int32), np.dtype(np.int64)) and x.dtype == dtype:
        with np.errstate(over="ignore"):
            total = np.multiply.reduce(x, axis=tuple(axes), dtype=dtype)
        return [np.asarray(total, dtype=dtype).reshape(out_shape)]
    raise UnsupportedOp(f"REDUCE_PROD: no kernel for {x.dtype} input, {dtype} output")


def _quantized_mean_or_sum(x: np.ndarray, axes: list[int], out_shape, call: OpCall,
                           compute_sum: bool, bounds=(-128, 127)) -> np.ndarray:
    """reference_ops::QuantizedMeanOrSum over int64 input values."""
    in_s, in_zp = scale_zp(call.input_q[0])
    out_s, out_zp = scale_zp(call.output_q[0])
    multiplier, shift = ar.quantize_multiplier_scalar(
        float(np.float32(in_s)) / float(np.float32(out_s)))
    n = int(np.prod([x.shape[a] for a in axes])) if axes else 1
    total = ar.wrap_int32(x.sum(axis=tuple(axes)))  # int32 temp_sum
    if n == 0 or x.size == 0:
        return np.zeros(out_shape, dtype=np.int64)
    if not compute_sum:
        k = min(n.bit_length() - 1, 32, 31 + shift)
        multiplier = int((multiplier << k) // n) if k >= 0 else multiplier
        shift = shift - k
    shifted = ar.wrap_int32(total - in_zp * n)
    out = ar.multiply_by_quantized_multiplier(shifted, multiplier, shift) + out_zp
    return np.clip(out, *bounds).reshape(out_shape)


def _sequential_float_sum(x: np.ndarray, axes: list[int]) -> np.ndarray:
    """Sum in the reference kernel's order: input elements in row-major order, each added to
    its output slot (ReduceSumImpl); float32 all along."""
    if not axes:
        return x.copy()
    moved = np.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim)))
    kept_shape = moved.shape[: x.ndim - len(axes)]
    # Row-major input order visits the reduced coordinates in increasing flat order of the
    # original layout; sort the reduced axes by their original position to match it.
    flat = np.moveaxis(x, sorted(axes), list(range(x.ndim - len(axes), x.ndim)))
    flat = flat.reshape(kept_shape + (-1,))
    total = np.zeros(kept_shape, dtype=np.float32)
    for i in range(flat.shape[-1]):
        total = total + flat[..., i]
    return total
