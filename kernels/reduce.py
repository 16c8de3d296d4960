"""AVERAGE_POOL_2D, MAX_POOL_2D, MEAN, SUM, REDUCE_MAX, REDUCE_MIN, REDUCE_PROD (unquantized),
ARG_MAX and ARG_MIN as LiteRT's reference kernels compute them."""

from __future__ import annotations

import numpy as np

from qaccel.kernels import arithmetic as ar
from qaccel.kernels.base import (
    KernelError,
    OpCall,
    Refusal,
    UnsupportedOp,
    activation,
    input_dtype,
    input_shape,
    pad_spatial,
    register,
    require,
    scale_zp,
    static_input_shape,
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
        total = _sequential_float_sum(x.astype(np.float32), axes,
                                      from_first=len(axes) == x.ndim and x.size > 0)
        return [total.reshape(out_shape)]
    if dtype == np.int32:
        total = ar.wrap_int32(x.astype(np.int64).sum(axis=tuple(axes)))
        return [total.astype(np.int32).reshape(out_shape)]
    raise UnsupportedOp(f"SUM: no kernel for {dtype} tensors")


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


def _sequential_float_sum(x: np.ndarray, axes: list[int],
                          from_first: bool = False) -> np.ndarray:
    """Sum in the reference kernel's order: input elements in row-major order, each added to
    its output slot (ReduceSumImpl); float32 all along. `from_first`: the sum starts from the
    first element instead of 0.0 (ReduceAllDims, when every axis is reduced; only the sign of
    a zero sum can differ)."""
    if not axes:
        return x.copy()
    moved = np.moveaxis(x, axes, list(range(x.ndim - len(axes), x.ndim)))
    kept_shape = moved.shape[: x.ndim - len(axes)]
    # Row-major input order visits the reduced coordinates in increasing flat order of the
    # original layout; sort the reduced axes by their original position to match it.
    flat = np.moveaxis(x, sorted(axes), list(range(x.ndim - len(axes), x.ndim)))
    flat = flat.reshape(kept_shape + (-1,))
    total = np.zeros(kept_shape, dtype=np.float32)
    first = 0
    if from_first and flat.shape[-1]:
        total, first = flat[..., 0].copy(), 1
    for i in range(first, flat.shape[-1]):
        total = total + flat[..., i]
    return total


# --------------------------------------------------------------------------------------------
# REDUCE_MAX / REDUCE_MIN (reduce.cc, reference_ops::ReduceGeneric)


def _check_reduce_max_min(op: str, call: OpCall) -> None:
    _check_reduce(op, call)
    dtype = np.dtype(call.output_dtypes[0])
    x = input_dtype(call, 0)
    if x is not None:
        require(x == dtype, op, f"output type {dtype} differs from the input type {x}")
    if dtype in (np.int8, np.uint8, np.int16):
        require(call.input_q[0] is not None and call.output_q[0] is not None, op,
                "quantized input and output need quantization parameters")
        in_s, in_zp = scale_zp(call.input_q[0])
        out_s, out_zp = scale_zp(call.output_q[0])
        # Checked in Eval by LiteRT; the values are static, so refused here.
        require(np.float32(in_s) == np.float32(out_s) and in_zp == out_zp, op,
                f"input and output quantization differ ({in_s:g}/{in_zp} -> {out_s:g}/{out_zp})")
        if dtype == np.int16:
            require(in_zp == 0, op, "int16 zero points must be 0")


def _reduce_extreme(op: str):
    def kernel(call: OpCall) -> list[np.ndarray]:
        x, axes, out_shape = _reduce_setup(call)
        dtype = np.dtype(call.output_dtypes[0])
        if dtype == np.float32:
            # `in > current ? in : current` from numeric_limits::lowest() (max) or max() (min),
            # in row-major order: NaNs are never taken; of equal values (0.0 and -0.0) the
            # first stays.
            start = np.finfo(np.float32).min if op == "REDUCE_MAX" else np.finfo(np.float32).max
            flat = _reduced_last(x.astype(np.float32), axes)
            best = np.full(flat.shape[:-1], start, dtype=np.float32)
            first = 0
            if len(axes) == x.ndim and x.size:
                best, first = flat[..., 0].copy(), 1  # ReduceAllDims starts from x[0]
            for i in range(first, flat.shape[-1]):
                v = flat[..., i]
                with np.errstate(invalid="ignore"):
                    take = v > best if op == "REDUCE_MAX" else v < best
                best = np.where(take, v, best)
            return [best.reshape(out_shape)]
        if dtype in (np.int8, np.uint8, np.int16, np.int32, np.int64, np.bool_):
            if x.size == 0 or not axes:
                info = np.iinfo(dtype) if dtype != np.bool_ else None
                start = (info.min if op == "REDUCE_MAX" else info.max) if info else \
                    op == "REDUCE_MIN"
                flat = _reduced_last(x, axes)
                init = np.full(flat.shape[:-1] + (1,), start, dtype=dtype)
                flat = np.concatenate([init, flat], axis=-1)
                return [(flat.max(-1) if op == "REDUCE_MAX" else flat.min(-1)).reshape(out_shape)]
            r = x.max(axis=tuple(axes)) if op == "REDUCE_MAX" else x.min(axis=tuple(axes))
            return [r.astype(dtype).reshape(out_shape)]
        raise UnsupportedOp(f"{op}: no kernel for {dtype} tensors")

    kernel.__name__ = op.lower()
    return kernel


for _op in ("REDUCE_MAX", "REDUCE_MIN"):
    register(_op, check=_check_reduce_max_min)(_reduce_extreme(_op))


@register("REDUCE_PROD", check=_check_reduce)
def reduce_prod(call: OpCall) -> list[np.ndarray]:
    """The product of unquantized tensors (the shape arithmetic converters emit: int32 dims);
    int32 wraps, float32 multiplies in row-major order."""
    x, axes, out_shape = _reduce_setup(call)
    dtype = np.dtype(call.output_dtypes[0])
    if dtype in (np.int32, np.int64) and call.input_q[0] is None:
        flat = _reduced_last(x.astype(np.int64), axes)
        total = np.ones(flat.shape[:-1], dtype=np.int64)
        for i in range(flat.shape[-1]):
            total = total * flat[..., i]
            total = ar.wrap_int32(total) if dtype == np.int32 else total
        return [total.astype(dtype).reshape(out_shape)]
    if dtype == np.float32:
        flat = _reduced_last(x.astype(np.float32), axes)
        total = np.ones(flat.shape[:-1], dtype=np.float32)
        first = 0
        if len(axes) == x.ndim and x.size:
            total, first = flat[..., 0].copy(), 1
        for i in range(first, flat.shape[-1]):
            total = (total * flat[..., i]).astype(np.float32)
        return [total.reshape(out_shape)]
    raise UnsupportedOp(f"REDUCE_PROD: no kernel for {dtype} tensors")


def _reduced_last(x: np.ndarray, axes: list[int]) -> np.ndarray:
    """x with the kept axes first and the reduced ones flattened, in row-major order, into
    the last axis."""
    kept = [d for i, d in enumerate(x.shape) if i not in axes]
    moved = np.moveaxis(x, sorted(axes), list(range(x.ndim - len(axes), x.ndim)))
    return moved.reshape(tuple(kept) + (-1,))


# --------------------------------------------------------------------------------------------
# ARG_MAX / ARG_MIN (arg_min_max.cc: the first index of the extreme value; NaN is never taken
# unless every value is NaN, which gives index 0). Over a contiguous axis (inner size 1) float
# rows take LiteRT's 4-lane loop instead (`_arg_contiguous_float`), whose NaNs behave otherwise.

_ARG_INDEX_TYPES = {"INT32": np.int32, "INT64": np.int64}


def _check_arg_min_max(op: str, call: OpCall) -> None:
    require(len(call.inputs) >= 2, op, "missing the axis input")
    output_type = call.options.get("output_type", "FLOAT32")
    require(output_type in _ARG_INDEX_TYPES, op,
            f"output_type must be INT32 or INT64, got {output_type}")
    out = np.dtype(call.output_dtypes[0])
    require(out == _ARG_INDEX_TYPES[output_type], op,
            f"output declared {out} but output_type is {output_type}")
    x = input_dtype(call, 0)
    if x is not None:
        require(x in (np.float32, np.uint8, np.int8, np.int32, np.bool_), op,
                f"{x} input is not supported")
    xs = static_input_shape(call, 0)
    if xs is not None:
        require(len(xs) >= 1, op, "input must have at least one dimension")
    axis_type = input_dtype(call, 1)
    if axis_type is not None:
        require(axis_type in (np.int32, np.int64), op,
                f"axis must be int32 or int64, got {axis_type}")
    axis_shape = static_input_shape(call, 1)
    if axis_shape is not None:
        require(int(np.prod(axis_shape)) == 1, op,
                f"axis must hold one value, got {int(np.prod(axis_shape))}")
    axis = call.inputs[1]
    if axis is not None:
        if xs is not None:
            a = int(np.asarray(axis).reshape(-1)[0])
            require(-len(xs) <= a < len(xs), op, f"axis {a} out of range for rank {len(xs)}")
            require(xs[a] > 0, op, "cannot compute over an empty axis")


def _arg_min_max(op: str):
    def kernel(call: OpCall) -> list[np.ndarray]:
        x = call.inputs[0]
        axis = int(np.asarray(call.inputs[1]).reshape(-1)[0])
        axis = axis + x.ndim if axis < 0 else axis
        out_dtype = _ARG_INDEX_TYPES[call.options.get("output_type", "FLOAT32")]
        if x.shape[axis] == 0:
            raise KernelError(f"{op}: cannot compute over an empty axis")
        inner = int(np.prod(x.shape[axis + 1:]))
        if x.dtype == np.float32 and inner == 1:
            rows = x.reshape(-1, x.shape[axis])
            index = _arg_contiguous_float(rows, op == "ARG_MAX").reshape(
                x.shape[:axis] + x.shape[axis + 1:])
        elif x.dtype == np.float32:
            valid = ~np.isnan(x)
            with np.errstate(invalid="ignore"):
                masked = np.where(valid, x, -np.inf if op == "ARG_MAX" else np.inf)
                best = masked.max(axis=axis, keepdims=True) if op == "ARG_MAX" else \
                    masked.min(axis=axis, keepdims=True)
            hit = valid & (x == best)
            index = np.where(hit.any(axis=axis), hit.argmax(axis=axis), 0)
        else:
            index = x.argmax(axis=axis) if op == "ARG_MAX" else x.argmin(axis=axis)
        return [index.astype(out_dtype)]

    kernel.__name__ = op.lower()
    return kernel


for _op in ("ARG_MAX", "ARG_MIN"):
    register(_op, check=_check_arg_min_max)(_arg_min_max(_op))


def _arg_contiguous_float(rows: np.ndarray, is_max: bool) -> np.ndarray:
    """`ArgMaxVector` / `ArgMinVector` of float rows as LiteRT's x86-64 build runs them: its
    4-lane loop (NEON intrinsics emulated with SSE) keeps each lane's best (NaN-aware) over
    blocks 1.. of 4 values, reduces the lanes pairwise with a select that keeps the first
    operand when a NaN is compared (so a NaN lane can win), takes the first lane index holding
    that value, and finishes the last size % 4 values one by one. Without NaNs this is the
    first index of the extreme value."""
    n, size = rows.shape
    better = np.greater if is_max else np.less

    def pick(a, b):  # b if b is better than a, else a (also when either is NaN)
        return np.where(better(b, a), b, a)

    with np.errstate(invalid="ignore"):
        if size >= 4:
            best = rows[:, :4].copy()
            best_index = np.tile(np.arange(4), (n, 1))
            start = 4
            while start <= size - 4:
                v = rows[:, start:start + 4]
                take = ~np.isnan(v) & (np.isnan(best) | better(v, best))
                best = np.where(take, v, best)
                best_index = np.where(take, start + np.arange(4), best_index)
                start += 4
            value = pick(pick(best[:, 0], best[:, 1]), pick(best[:, 2], best[:, 3]))
            index = np.where(best == value[:, None], best_index, np.iinfo(np.int32).max).min(1)
        else:
            value, index, start = rows[:, 0].copy(), np.zeros(n, dtype=np.int64), 1
        for j in range(start, size):
            c = rows[:, j]
            take = ~np.isnan(c) & (np.isnan(value) | better(c, value))
            value = np.where(take, c, value)
            index = np.where(take, j, index)
    return np.where(np.isnan(value), 0, index)
