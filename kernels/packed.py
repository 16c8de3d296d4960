"""Host arithmetic of the `accel` ops the host runs on packed tensors, numpy only.

`interpreter/accel_semantics.py` (from the IR) and the artifact's run plan
(`backends/vta/run_plan.py`, without xDSL) both call these, so they cannot drift apart.
"""

from __future__ import annotations

import numpy as np

from qaccel.kernels import arithmetic as ar
from qaccel.kernels.base import pad_spatial
from qaccel.kernels.conv import grouped_matmul
from qaccel.kernels.layout import gather


def host_requantize(x: np.ndarray, scale: np.ndarray, input_zero_point: int,
                    output_zero_point: int, lo: int, hi: int, dtype) -> np.ndarray:  # fmt: skip
    """LiteRT's double-precision requantization (`accel.host_requantize`), then the clamp."""
    centred = x.astype(np.int64) - input_zero_point
    scaled = ar.float_to_int32(ar.round_half_away(centred.astype(np.float64) * scale))
    out = ar.wrap_int32(scaled + output_zero_point)
    return np.clip(out, lo, hi).astype(dtype)


def window_pool(x: np.ndarray, window, strides, out_hw, kind: str) -> np.ndarray:
    """Max or sum over each window of a packed `[N, C/B, H, W, 1, B]` tensor (already padded),
    as int32 (sums wrap)."""
    (kh, kw), (sh, sw), (oh, ow) = window, strides, out_hw
    xi = x.astype(np.int64)
    taps = (
        xi[:, :, ky : ky + (oh - 1) * sh + 1 : sh, kx : kx + (ow - 1) * sw + 1 : sw]
        for ky in range(kh)
        for kx in range(kw)
    )
    if kind == "max":
        out = next(taps).copy()
        for tap in taps:
            np.maximum(out, tap, out=out)
    else:
        out = sum(taps)
    return ar.wrap_int32(out).astype(np.int32)


def host_pool2d(x: np.ndarray, kind: str, window, strides, padding, lo: int, hi: int,
                out_shape) -> np.ndarray:  # fmt: skip
    """`accel.host_pool2d`: TFLite's int8 pool (`qhost.pool2d`) on a packed
    `[N, C/B, H, W, 1, B]` tensor, every lane a channel of a batch of N*C/B images."""
    from qaccel.kernels import qhost

    n, cb, h, w, _, block = x.shape
    _, _, oh, ow, _, _ = out_shape
    images = x.reshape(n * cb, h, w, block)
    y = qhost.pool2d(images, kind=kind, filter=[int(v) for v in window],
                     strides=[int(v) for v in strides], top=int(padding[0]),
                     left=int(padding[2]), shape=[n * cb, oh, ow, block], lo=lo, hi=hi,
                     dtype=x.dtype)  # fmt: skip
    return y.reshape(tuple(out_shape))


def concat_lanes(xs, channels) -> np.ndarray:
    """Channel concatenation of packed `[N, C/B, ..., 1, B]` tensors holding `channels[i]`
    real channels each (`accel.concat_lanes`): lanes move; the result's padding lanes are 0."""
    first = xs[0]
    n, block, middle = first.shape[0], first.shape[-1], first.shape[2:-2]
    total = int(sum(int(c) for c in channels))
    flat = np.zeros((n, -(-total // block) * block, *middle), dtype=first.dtype)
    at = 0
    for x, c in zip(xs, channels, strict=True):
        c = int(c)
        # [N, Cb, ..., 1, B] -> [N, Cb*B, ...]: channel-major, then drop the padding lanes
        plain = np.moveaxis(x[..., 0, :], -1, 2).reshape(n, -1, *middle)
        flat[:, at : at + c] = plain[:, :c]
        at += c
    blocks = flat.reshape(n, -1, block, *middle)
    return np.ascontiguousarray(np.moveaxis(blocks, 2, -1)[..., None, :])


def depth_to_space_index(in_shape, out_shape, block_size: int, channels: int) -> np.ndarray:
    """For each element of the packed `out_shape` `[N, Co/B, H*k, W*k, 1, B]`, the flat index
    in the packed input `[N, Ci/B, H, W, 1, B]` it is a copy of (`accel.depth_to_space`,
    `channels` = Co real channels, Ci = k*k*Co), or -1 for a padding lane."""
    n, cbi, h, w, _, b = (int(d) for d in in_shape)
    k, co = int(block_size), int(channels)
    source = np.arange(n * cbi * h * w * b, dtype=np.int64).reshape(n, cbi, h, w, 1, b)
    plain = to_nhwc(source)[..., : k * k * co]  # [N, H, W, k*k*Co]
    moved = plain.reshape(n, h, w, k, k, co).transpose(0, 1, 3, 2, 4, 5).reshape(
        n, h * k, w * k, co)  # fmt: skip
    cbo = int(out_shape[1])
    full = np.full((n, h * k, w * k, cbo * b), -1, np.int64)
    full[..., :co] = moved
    return from_nhwc(full, b).reshape(-1)


def depth_to_space(x: np.ndarray, out_shape, block_size: int, channels: int,
                   fill: int) -> np.ndarray:  # fmt: skip
    """`accel.depth_to_space` of the packed `x`: a gather; padding lanes hold `fill`."""
    index = depth_to_space_index(x.shape, out_shape, block_size, channels)
    return gather(x, index, fill).reshape(tuple(out_shape))


def resize_nearest_index(in_shape, out_shape, align_corners: bool,
                         half_pixel_centers: bool) -> np.ndarray:  # fmt: skip
    """For each element of the packed `out_shape` `[N, C/B, OH, OW, 1, B]`, the flat index in
    the packed input `[N, C/B, H, W, 1, B]` it is a copy of (`accel.resize_nearest_neighbor`:
    lanes stay, pixels repeat; the source rows and columns are the reference kernel's
    `GetNearestNeighbor`, `kernels/shape.py`'s `nearest_indices`)."""
    from qaccel.kernels.shape import nearest_indices

    shape = tuple(int(d) for d in in_shape)
    oh, ow = int(out_shape[2]), int(out_shape[3])
    ys = nearest_indices(shape[2], oh, bool(align_corners), bool(half_pixel_centers))
    xs = nearest_indices(shape[3], ow, bool(align_corners), bool(half_pixel_centers))
    source = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    return np.ascontiguousarray(source[:, :, ys][:, :, :, xs]).reshape(-1)


def resize_nearest(x: np.ndarray, out_shape, align_corners: bool,
                   half_pixel_centers: bool) -> np.ndarray:  # fmt: skip
    """`accel.resize_nearest_neighbor` of the packed `x`: a gather."""
    index = resize_nearest_index(x.shape, out_shape, align_corners, half_pixel_centers)
    return x.reshape(-1)[index].reshape(tuple(out_shape))


def resize_bilinear_tables(in_hw, out_hw, align_corners: bool,
                           half_pixel_centers: bool) -> np.ndarray:  # fmt: skip
    """The reference kernel's integer interpolation geometry (`ResizeBilinearInteger`, 10
    fractional bits) as one int64 array: y0, y1, wy (OH values each), then x0, x1, wx (OW
    each), where output row y reads input rows y0[y] and y1[y] with weights 1024 - wy[y] and
    wy[y] (columns alike). The program stores it as the bilinear step's constants."""
    from qaccel.kernels.shape import bilinear_coords

    (h, w), (oh, ow) = (int(d) for d in in_hw), (int(d) for d in out_hw)
    parts = []
    for size, out in ((h, oh), (w, ow)):
        scaled, lower, upper = bilinear_coords(size, out, bool(align_corners),
                                               bool(half_pixel_centers))  # fmt: skip
        parts += [lower, upper, scaled - (1 << 10) * lower]
    return np.concatenate([np.asarray(p, np.int64) for p in parts])


def resize_bilinear_from_tables(x: np.ndarray, tables: np.ndarray, oh: int, ow: int) -> np.ndarray:
    """The bilinear step on the packed `x` `[N, C/B, H, W, 1, B]` with `tables`
    (`resize_bilinear_tables`): every lane interpolated alike, the four products summed in
    int64, rounded half away from zero by 2^20 (C division), cast to `x`'s type."""
    t = np.asarray(tables, np.int64)
    y0, y1, wy = t[:oh], t[oh : 2 * oh], t[2 * oh : 3 * oh]
    x0, x1, wx = t[3 * oh : 3 * oh + ow], t[3 * oh + ow : 3 * oh + 2 * ow], t[3 * oh + 2 * ow :]
    xi = x.astype(np.int64)
    wy1 = wy[None, None, :, None, None, None]
    wx1 = wx[None, None, None, :, None, None]
    wy0, wx0 = (1 << 10) - wy1, (1 << 10) - wx1
    rows0, rows1 = xi[:, :, y0], xi[:, :, y1]
    out20 = (rows0[:, :, :, x0] * wy0 * wx0 + rows1[:, :, :, x0] * wy1 * wx0 +
             rows0[:, :, :, x1] * wy0 * wx1 + rows1[:, :, :, x1] * wy1 * wx1)  # fmt: skip
    rounding = np.where(out20 > 0, 1 << 19, -(1 << 19))
    return ar.trunc_div(out20 + rounding, 1 << 20).astype(x.dtype)


def resize_bilinear(x: np.ndarray, out_shape, align_corners: bool,
                    half_pixel_centers: bool) -> np.ndarray:  # fmt: skip
    """`accel.resize_bilinear` of the packed `x` (LiteRT's int8 `ResizeBilinearInteger`)."""
    oh, ow = int(out_shape[2]), int(out_shape[3])
    tables = resize_bilinear_tables(x.shape[2:4], (oh, ow), align_corners, half_pixel_centers)
    return resize_bilinear_from_tables(x, tables, oh, ow)


def col2im_index(in_shape, out_shape, kernel, strides, padding, channels: int) -> np.ndarray:
    """For `accel.col2im` (a transposed convolution's overlapping taps summed): int64
    `[elements of out_shape, T]`, the flat indices in the packed input `[N, Ci/B, H, W, 1, B]`
    (Ci = KH*KW*O, channel `(ky*KW + kx)*O + o`) whose values element i of the packed
    `out_shape` `[N, Co/B, OH, OW, 1, B]` sums, -1 past its last (padding lanes: none); T is
    the most taps any output element takes."""
    n, cbi, h, w, _, b = (int(d) for d in in_shape)
    cbo, oh, ow = int(out_shape[1]), int(out_shape[2]), int(out_shape[3])
    (kh, kw), (sh, sw), (top, left), o = kernel, strides, padding, int(channels)
    source = np.arange(n * cbi * h * w * b, dtype=np.int64).reshape(n, cbi, h, w, 1, b)
    plain = to_nhwc(source)[..., : kh * kw * o].reshape(n, h, w, kh, kw, o)
    columns = []
    for ky in range(int(kh)):
        for kx in range(int(kw)):
            rows = np.arange(h) * int(sh) - int(top) + ky
            cols = np.arange(w) * int(sw) - int(left) + kx
            vy, vx = (rows >= 0) & (rows < oh), (cols >= 0) & (cols < ow)
            full = np.full((n, oh, ow, cbo * b), -1, np.int64)
            full[:, rows[vy][:, None], cols[vx][None, :], :o] = plain[:, vy][:, :, vx][
                :, :, :, ky, kx, :]  # fmt: skip
            columns.append(from_nhwc(full, b).reshape(-1))
    index = -np.sort(-np.stack(columns, axis=1), axis=1)  # each row's taps first
    taps = max(1, int((index >= 0).sum(axis=1).max()))
    return np.ascontiguousarray(index[:, :taps])


def gather_sum(x: np.ndarray, index: np.ndarray, out_shape) -> np.ndarray:
    """int32 element i = the sum of `x`'s elements `index[i]` (-1 skipped), wrapping."""
    flat = x.reshape(-1).astype(np.int64)
    picked = np.where(index >= 0, flat[np.maximum(index, 0)], 0)
    return ar.wrap_int32(picked.sum(axis=1)).astype(np.int32).reshape(tuple(out_shape))


def col2im(x: np.ndarray, out_shape, kernel, strides, padding, channels: int) -> np.ndarray:
    """`accel.col2im` of the packed int32 `x`: the taps summed (padding lanes 0)."""
    return gather_sum(x, col2im_index(x.shape, out_shape, kernel, strides, padding, channels),
                      out_shape)  # fmt: skip


def lane_sum(x: np.ndarray) -> np.ndarray:
    """`accel.lane_sum` of the packed `x` `[N, C/B, ..., 1, B]`: each pixel's lanes summed
    modulo 2^32 into lane 0 of an int32 `[N, 1, ..., 1, B]` whose other lanes hold 0."""
    total = x.astype(np.int64).sum(axis=(1, x.ndim - 1), keepdims=True)
    total = ((total + 2**31) % 2**32 - 2**31).astype(np.int32)
    out = np.zeros((*x.shape[:1], 1, *x.shape[2:]), np.int32)
    out[..., :1] = total
    return out


def lane_broadcast_index(in_shape, out_shape) -> np.ndarray:
    """For each element of the packed `out_shape` `[N, C/B, ..., 1, B]`, the flat index of
    lane 0 of its pixel in the packed one-block input `[N, 1, ..., 1, B]`
    (`accel.lane_broadcast`)."""
    source = np.arange(int(np.prod(in_shape)), dtype=np.int64).reshape(tuple(in_shape))
    return np.broadcast_to(source[..., :1], tuple(out_shape)).reshape(-1).copy()


def lane_broadcast(x: np.ndarray, out_shape) -> np.ndarray:
    """`accel.lane_broadcast` of the packed `x`: lane 0 of each pixel in every lane."""
    return np.ascontiguousarray(np.broadcast_to(x[..., :1], tuple(out_shape)))


def to_nhwc(x: np.ndarray) -> np.ndarray:
    """`[N, C/B, H, W, 1, B]` -> `[N, H, W, C/B * B]` (all lanes, padded ones included)."""
    n, cb, h, w, _, b = x.shape
    return x[:, :, :, :, 0, :].transpose(0, 2, 3, 1, 4).reshape(n, h, w, cb * b)


def from_nhwc(y: np.ndarray, block: int) -> np.ndarray:
    n, h, w, c = y.shape
    return np.ascontiguousarray(
        y.reshape(n, h, w, c // block, block).transpose(0, 3, 1, 2, 4)[:, :, :, :, None, :]
    )


def _add_bias(acc: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
    return ar.wrap_int32(acc if bias is None else acc + bias)


def conv2d_zp(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out_shape, padding,
              strides, dilations, pad_value: int, groups: int) -> np.ndarray:  # fmt: skip
    """`accel.conv2d_zp`: the GEMM over raw inputs padded with `pad_value`; centring by
    `pad_value` makes the padding zero (what `grouped_matmul` pads with) and `pad_value * Σw`
    puts it back; float64 sums of int8 products are exact. `bias`: int64 lane values
    (`accel.lane_values`) or None; `padding` `[top, bottom, left, right]`."""
    ob, ibg, kh, kw, block, _ = w.shape
    wf = w.astype(np.float64).transpose(0, 4, 2, 3, 1, 5).reshape(ob * block, kh, kw, ibg * block)
    xf = to_nhwc(x).astype(np.float64) - pad_value
    top, _, left, _ = padding
    (sh, sw), (dh, dw) = strides, dilations
    oh, ow = out_shape[2], out_shape[3]
    # Pad here (not in _im2col): every tap of every window then lies inside the array.
    xf = pad_spatial(xf, top, left, oh, ow, kh, kw, sh, sw, dh, dw, 0.0)
    acc = grouped_matmul(xf, wf, groups, kh, kw, (oh, ow, 0, 0, sh, sw, dh, dw))
    acc += (pad_value * wf.sum(axis=(1, 2, 3))).astype(np.int64)
    acc = acc.reshape(x.shape[0], oh, ow, ob * block)
    return _add_bias(from_nhwc(acc, block), bias).astype(np.int32)


def dense_zp(x: np.ndarray, w: np.ndarray, bias: np.ndarray | None, out_shape) -> np.ndarray:
    """`accel.dense_zp` (rows of raw int8 by the filter tiles, float64 exact sums); `bias` as
    for `conv2d_zp`. A filter `[N, O/B, I/B, B, B]`: row group n by its own tiles."""
    if w.ndim == 5:
        return np.concatenate([dense_zp(x[i : i + 1], w[i], bias, [1, *out_shape[1:]])
                               for i in range(w.shape[0])], axis=0)  # fmt: skip
    ob, ib, block, _ = w.shape
    moved = np.moveaxis(x[..., 0, :], 1, -2)  # [N, d1.., I/B, B]
    rows = moved.reshape(-1, ib * block).astype(np.float64)
    wf = w.astype(np.float64).transpose(0, 2, 1, 3).reshape(ob * block, ib * block)
    acc = (rows @ wf.T).astype(np.int64)  # [rows in (n, d1, ...) order, O]
    if len(out_shape) == 4:  # [N, O/B, 1, B], or the rows flattened: [N * d1 * ..., O/B, 1, B]
        acc = acc.reshape(-1, ob, 1, block)
    else:
        acc = np.moveaxis(acc.reshape(*moved.shape[:-2], ob, block), -2, 1)[..., None, :]
    return _add_bias(acc, bias).astype(np.int32)


def random_arrays(specs, seed: int) -> list[np.ndarray]:
    """Seeded random arrays for `(shape, dtype)` specs, covering each integer type's whole
    range (wider ones: [-1000, 1000])."""
    rng = np.random.default_rng(seed)
    arrays = []
    for shape, dtype in specs:
        dtype = np.dtype(dtype)
        if dtype.kind in "iu":
            info = np.iinfo(dtype)
            lo, hi = (info.min, info.max) if info.bits <= 16 else (-1000, 1000)
            arrays.append(rng.integers(lo, hi, size=shape, endpoint=True, dtype=dtype))
        elif dtype == np.bool_:
            arrays.append(rng.integers(0, 2, size=shape).astype(np.bool_))
        else:
            arrays.append(rng.standard_normal(size=shape).astype(dtype))
    return arrays
