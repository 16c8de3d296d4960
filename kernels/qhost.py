"""Host arithmetic of the `q` element-wise and reduction ops, numpy only, parameters as plain
numbers.

`interpreter/q_semantics.py` (reading the parameters off the op: `add_sub_params` ...) and the
artifact's run plan (`backends/vta/run_plan.py`, reading them from `runtime.json`, without
xDSL) both call these, so they cannot drift apart. `lo`, `hi` and `dtype` are the result's
storage range and dtype (the final saturation).
"""

from __future__ import annotations

import numpy as np

from qaccel.kernels import arithmetic as ar


def saturate(x: np.ndarray, lo: int, hi: int, dtype) -> np.ndarray:
    return np.clip(x, lo, hi).astype(dtype)


def add_sub(a: np.ndarray, b: np.ndarray, *, subtract: bool, left_shift: int,
            lhs_zero_point: int, lhs_multiplier: int, lhs_shift: int, rhs_zero_point: int,
            rhs_multiplier: int, rhs_shift: int, output_multiplier: int, output_shift: int,
            output_zero_point: int, lo: int, hi: int, dtype) -> np.ndarray:  # fmt: skip
    """`q.add` / `q.sub`: both sides centred, shifted left and rescaled, summed (wrapping),
    rescaled to the output."""

    def scaled(v: np.ndarray, zero_point: int, multiplier: int, shift: int) -> np.ndarray:
        shifted = (v.astype(np.int64) - zero_point) << left_shift
        return ar.multiply_by_quantized_multiplier(shifted, multiplier, shift)

    va = scaled(a, lhs_zero_point, lhs_multiplier, lhs_shift)
    vb = scaled(b, rhs_zero_point, rhs_multiplier, rhs_shift)
    raw = ar.wrap_int32(va - vb if subtract else va + vb)
    out = ar.multiply_by_quantized_multiplier(raw, output_multiplier, output_shift)
    return saturate(out + output_zero_point, lo, hi, dtype)


def mul(a: np.ndarray, b: np.ndarray, *, lhs_zero_point: int, rhs_zero_point: int,
        multiplier: int, shift: int, output_zero_point: int, lo: int, hi: int,
        dtype) -> np.ndarray:  # fmt: skip
    """`q.mul`: the centred product (wrapping) rescaled to the output."""
    prod = (a.astype(np.int64) - lhs_zero_point) * (b.astype(np.int64) - rhs_zero_point)
    out = ar.multiply_by_quantized_multiplier(ar.wrap_int32(prod), multiplier, shift)
    return saturate(out + output_zero_point, lo, hi, dtype)


def squared_difference(a: np.ndarray, b: np.ndarray, *, left_shift: int, lhs_zero_point: int,
                       lhs_multiplier: int, lhs_shift: int, rhs_zero_point: int,
                       rhs_multiplier: int, rhs_shift: int, output_multiplier: int,
                       output_shift: int, output_zero_point: int, lo: int, hi: int,
                       dtype) -> np.ndarray:  # fmt: skip
    """`q.squared_difference`: both sides centred, shifted left and rescaled, the square of
    their difference (wrapping) rescaled to the output."""

    def scaled(v: np.ndarray, zero_point: int, multiplier: int, shift: int) -> np.ndarray:
        shifted = (v.astype(np.int64) - zero_point) << left_shift
        return ar.multiply_by_quantized_multiplier(shifted, multiplier, shift)

    diff = ar.wrap_int32(scaled(a, lhs_zero_point, lhs_multiplier, lhs_shift)
                         - scaled(b, rhs_zero_point, rhs_multiplier, rhs_shift))  # fmt: skip
    out = ar.multiply_by_quantized_multiplier(ar.wrap_int32(diff * diff), output_multiplier,
                                              output_shift)  # fmt: skip
    return saturate(out + output_zero_point, lo, hi, dtype)


def mean(x: np.ndarray, *, axes, num_elements: int, input_zero_point: int, multiplier: int,
         shift: int, output_zero_point: int, shape, lo: int, hi: int,
         dtype) -> np.ndarray:  # fmt: skip
    """`q.mean`: the sum over `axes` (wrapping), centred, rescaled, reshaped to `shape`."""
    total = ar.wrap_int32(x.astype(np.int64).sum(axis=tuple(axes)))
    centred = ar.wrap_int32(total - input_zero_point * num_elements)
    out = ar.multiply_by_quantized_multiplier(centred, multiplier, shift) + output_zero_point
    return saturate(out.reshape(shape), lo, hi, dtype)


def pool2d(x: np.ndarray, *, kind: str, filter: list[int], strides: list[int], top: int,
           left: int, shape: list[int], lo: int, hi: int, dtype) -> np.ndarray:  # fmt: skip
    """`q.max_pool2d` / `q.avg_pool2d` over NHWC `x`: windows over the input padded at `top`,
    `left`; taps outside the input are skipped (max) or not counted (average, rounded half away
    from zero as TFLite's reference kernel)."""
    from qaccel.kernels.base import pad_spatial

    (kh, kw), (sh, sw) = filter, strides
    out_h, out_w = shape[1:3]
    h, w = x.shape[1:3]
    is_max = kind == "max"
    empty = np.iinfo(np.int64).min if is_max else 0
    xp = pad_spatial(x.astype(np.int64), top, left, out_h, out_w, kh, kw, sh, sw, 1, 1, empty)
    ys, xs = np.arange(out_h) * sh - top, np.arange(out_w) * sw - left
    out = np.full(shape, empty, dtype=np.int64)
    count = np.zeros((1, out_h, out_w, 1), dtype=np.int64)
    for ky in range(kh):
        for kx in range(kw):
            view = xp[:, ky : ky + (out_h - 1) * sh + 1 : sh, kx : kx + (out_w - 1) * sw + 1 : sw]
            if is_max:
                np.maximum(out, view, out=out)
                continue
            out += view
            inside = ((ys + ky >= 0) & (ys + ky < h))[:, None] & ((xs + kx >= 0) & (xs + kx < w))
            count = count + inside[None, :, :, None]
    if not is_max:
        count = np.maximum(count, 1)  # a window entirely in the padding was refused earlier
        half = count // 2
        out = np.where(out > 0, ar.trunc_div(out + half, count), ar.trunc_div(out - half, count))
    return saturate(out, lo, hi, dtype)
