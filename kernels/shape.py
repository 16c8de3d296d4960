"""Data-movement ops: RESHAPE, SQUEEZE, CONCATENATION, PAD, PADV2, STRIDED_SLICE, SLICE, SHAPE,
PACK, TRANSPOSE, GATHER, EMBEDDING_LOOKUP, RESIZE_NEAREST_NEIGHBOR, RESIZE_BILINEAR, TILE,
BROADCAST_TO, EXPAND_DIMS, SPLIT, SPLIT_V, UNPACK, DEPTH_TO_SPACE and SPACE_TO_DEPTH."""

from __future__ import annotations

import numpy as np

from qaccel.kernels import arithmetic as ar
from qaccel.kernels.base import (
    KernelError,
    OpCall,
    Refusal,
    UnsupportedOp,
    f32,
    input_shape,
    register,
    require,
    scale_zp,
)


def _same_quant(a, b) -> bool:
    """TFLite compares `params.scale` (float) and `params.zero_point` exactly."""
    sa, za = scale_zp(a)
    sb, zb = scale_zp(b)
    return np.float32(sa) == np.float32(sb) and za == zb


# --------------------------------------------------------------------------------------------
# RESHAPE / SQUEEZE


def reshape_target(call: OpCall, x_shape) -> tuple[int, ...]:
    """The output shape: the shape tensor if given, else `new_shape`, else the declared one;
    one -1 is inferred."""
    if len(call.inputs) > 1 and call.inputs[1] is not None and call.inputs[1].ndim == 1:
        new = [int(v) for v in call.inputs[1]]
    elif call.options.get("new_shape") is not None and len(call.options["new_shape"]) > 0:
        new = [int(v) for v in call.options["new_shape"]]
    else:
        return tuple(call.output_shapes[0])
    size = int(np.prod(x_shape))
    if -1 in new:
        known = int(np.prod([d for d in new if d != -1]))
        new[new.index(-1)] = size // known if known else 0
    return tuple(new)


def _check_reshape(op: str, call: OpCall) -> None:
    xs = input_shape(call, 0)
    if xs is None:
        return
    target = reshape_target(call, xs)
    require(target.count(-1) == 0, op, f"more than one -1 in the new shape {list(target)}")
    require(int(np.prod(target)) == int(np.prod(xs)), op,
            f"cannot reshape {list(xs)} ({int(np.prod(xs))} elements) to {list(target)}")


@register("RESHAPE", check=_check_reshape)
def reshape(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    return [x.reshape(reshape_target(call, x.shape)).copy()]


def _squeeze_shape(call: OpCall, xs) -> tuple[int, ...]:
    dims = call.options.get("squeeze_dims")
    dims = [] if dims is None else [int(d) for d in np.asarray(dims).reshape(-1)]
    if not dims:
        return tuple(d for d in xs if d != 1)
    drop = {d + len(xs) if d < 0 else d for d in dims}
    return tuple(d for i, d in enumerate(xs) if i not in drop)


def _check_squeeze(op: str, call: OpCall) -> None:
    xs = input_shape(call, 0)
    dims = call.options.get("squeeze_dims")
    if xs is None or dims is None:
        return
    for d in np.asarray(dims).reshape(-1).tolist():
        d2 = d + len(xs) if d < 0 else d
        require(0 <= d2 < len(xs) and xs[d2] == 1, op,
                f"cannot squeeze dimension {d} of shape {list(xs)}")


@register("SQUEEZE", check=_check_squeeze)
def squeeze(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    return [x.reshape(_squeeze_shape(call, x.shape)).copy()]


# --------------------------------------------------------------------------------------------
# CONCATENATION / PACK


def _check_concatenation(op: str, call: OpCall) -> None:
    require(call.options.get("fused_activation_function", "NONE") in ("NONE", None), op,
            "fused activations are not supported")
    shapes = [input_shape(call, i) for i in range(len(call.inputs))]
    known = [s for s in shapes if s is not None]
    if known:
        rank = len(known[0])
        axis = int(call.options.get("axis", 0))
        axis = axis + rank if axis < 0 else axis
        require(0 <= axis < max(rank, 1), op, f"axis {call.options.get('axis')} out of range "
                                              f"for rank {rank}")
        for s in known:
            require(len(s) == rank, op, f"inputs of ranks {rank} and {len(s)}")
            require(all(a == b for i, (a, b) in enumerate(zip(s, known[0])) if i != axis), op,
                    f"input shapes {list(known[0])} and {list(s)} differ off axis {axis}")
    if np.dtype(call.output_dtypes[0]) == np.int8:
        for i, q in enumerate(call.input_q):
            require(_same_quant(q, call.output_q[0]), op,
                    f"input {i} quantization (scale {scale_zp(q)[0]:g}, zero point "
                    f"{scale_zp(q)[1]}) differs from the output's (scale "
                    f"{scale_zp(call.output_q[0])[0]:g}, zero point "
                    f"{scale_zp(call.output_q[0])[1]})")


@register("CONCATENATION", check=_check_concatenation)
def concatenation(call: OpCall) -> list[np.ndarray]:
    axis = int(call.options.get("axis", 0))
    dtype = np.dtype(call.output_dtypes[0])
    return [np.concatenate([x.astype(dtype, copy=False) for x in call.inputs], axis=axis)]


def _check_pack(op: str, call: OpCall) -> None:
    shapes = [input_shape(call, i) for i in range(len(call.inputs))]
    known = [s for s in shapes if s is not None]
    count = int(call.options.get("values_count", len(call.inputs)))
    require(count == len(call.inputs), op, f"values_count {count} but {len(call.inputs)} inputs")
    if known:
        rank = len(known[0])
        axis = int(call.options.get("axis", 0))
        axis = axis + rank + 1 if axis < 0 else axis
        require(0 <= axis <= rank, op, f"axis {call.options.get('axis')} out of range")
        for s in known:
            require(s == known[0], op, f"input shapes {list(known[0])} and {list(s)} differ")
    for i, q in enumerate(call.input_q):
        require(_same_quant(q, call.output_q[0]), op,
                f"input {i} quantization differs from the output's")


@register("PACK", check=_check_pack)
def pack(call: OpCall) -> list[np.ndarray]:
    axis = int(call.options.get("axis", 0))
    rank = call.inputs[0].ndim
    axis = axis + rank + 1 if axis < 0 else axis
    return [np.stack(call.inputs, axis=axis)]


# --------------------------------------------------------------------------------------------
# PAD / PADV2


def _check_pad(op: str, call: OpCall) -> None:
    paddings = call.inputs[1] if len(call.inputs) > 1 else None
    xs = input_shape(call, 0)
    if paddings is not None:
        require(paddings.ndim == 2 and paddings.shape[1] == 2, op,
                f"paddings must have shape [rank, 2], got {list(paddings.shape)}")
        if xs is not None:
            require(paddings.shape[0] == len(xs), op,
                    f"paddings for {paddings.shape[0]} dimensions, input has {len(xs)}")
        require(bool(np.all(paddings >= 0)), op, "negative paddings are not supported")
        require(paddings.shape[0] <= 5, op, "at most 5 padded dimensions")
    dtype = np.dtype(call.output_dtypes[0])
    quantized = dtype in (np.int8, np.uint8, np.int16) and call.input_q[0] is not None
    if op == "PADV2" and len(call.inputs) > 2 and quantized:
        cq = call.input_q[2] if len(call.input_q) > 2 else None
        require(_same_quant(cq, call.output_q[0]), op,
                "constant_values quantization differs from the output's")
    elif quantized and call.output_q[0] is not None:
        lo, hi = ar.storage_range(dtype)
        zp = scale_zp(call.output_q[0])[1]
        require(lo <= zp <= hi, op, f"output zero point {zp} outside the {dtype} range")


def _pad(call: OpCall) -> np.ndarray:
    x = call.inputs[0]
    paddings = np.asarray(call.inputs[1], dtype=np.int64)
    dtype = np.dtype(call.output_dtypes[0])
    if len(call.inputs) > 2 and call.inputs[2] is not None:
        value = call.inputs[2].reshape(-1)[0]
    elif dtype in (np.int8, np.uint8, np.int16) and call.input_q[0] is not None:
        value = scale_zp(call.output_q[0])[1]  # quantized PAD fills with the output zero
    else:
        value = 0
    return np.pad(x, [tuple(p) for p in paddings.tolist()], constant_values=value)


register("PAD", check=_check_pad)(lambda call: [_pad(call)])
register("PADV2", check=_check_pad)(lambda call: [_pad(call)])


# --------------------------------------------------------------------------------------------
# SLICE / STRIDED_SLICE


def _check_slice(op: str, call: OpCall) -> None:
    xs = input_shape(call, 0)
    begin = call.inputs[1] if len(call.inputs) > 1 else None
    size = call.inputs[2] if len(call.inputs) > 2 else None
    if xs is None or begin is None or size is None:
        return
    require(begin.size == len(xs) and size.size == len(xs), op,
            f"begin/size of {begin.size}/{size.size} entries for rank {len(xs)}")
    for d, (b, s) in enumerate(zip(begin.tolist(), size.tolist())):
        require(b >= 0, op, f"negative begin {b} in dimension {d}")
        require(s >= -1, op, f"invalid size {s} in dimension {d}")
        require(s == -1 or b + s <= xs[d], op,
                f"begin {b} + size {s} exceeds dimension {d} of size {xs[d]}")


@register("SLICE", check=_check_slice)
def slice_(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    begin = [int(b) for b in call.inputs[1].reshape(-1)]
    size = [int(s) for s in call.inputs[2].reshape(-1)]
    index = tuple(slice(b, x.shape[d] if s == -1 else b + s)
                  for d, (b, s) in enumerate(zip(begin, size)))
    return [x[index].copy()]


def strided_slice_plan(call: OpCall, x_shape):
    """`BuildStridedSliceParams` + Start/EndForAxis: per effective axis the index range, the
    effective input shape (ellipsis expanded, new axes inserted) and the output shape."""
    o = call.options
    begin = [int(v) for v in call.inputs[1].reshape(-1)]
    end = [int(v) for v in call.inputs[2].reshape(-1)]
    strides = [int(v) for v in call.inputs[3].reshape(-1)]
    begin_mask, end_mask = int(o.get("begin_mask", 0)), int(o.get("end_mask", 0))
    ellipsis_mask, new_axis_mask = int(o.get("ellipsis_mask", 0)), int(o.get("new_axis_mask", 0))
    shrink_mask = int(o.get("shrink_axis_mask", 0))
    offset = bool(o.get("offset", False))
    rank = len(x_shape)
    count = len(begin)

    num_add_axis = sum(1 for i in range(count)
                       if not (ellipsis_mask >> i) & 1 and (new_axis_mask >> i) & 1)
    eff = rank + num_add_axis
    eff_ellipsis = eff_new_axis = 0
    ellipsis_start, expanded = eff, 0
    i = 0
    while i < eff:
        if (ellipsis_mask >> i) & 1:
            ellipsis_start = i
            ellipsis_end = max(i + 1, min(i + 1 + num_add_axis + rank - count, eff))
            expanded = ellipsis_end - ellipsis_start - 1
            while i < ellipsis_end:
                eff_ellipsis |= 1 << i
                i += 1
            continue
        if (new_axis_mask >> (i - expanded)) & 1:
            eff_new_axis |= 1 << i
        i += 1

    starts, stops, steps = [0] * eff, [0] * eff, [1] * eff
    bmask = emask = smask = 0
    shape: list[int] = []
    added_ellipsis = added_axes = 0
    for i in range(eff):
        if (eff_ellipsis >> i) & 1:
            added_ellipsis = max(0, i - ellipsis_start)
            bmask |= 1 << i
            emask |= 1 << i
            shape.append(x_shape[i - added_axes])
        elif (eff_new_axis >> i) & 1:
            starts[i], stops[i] = 0, 1
            shape.append(1)
            added_axes += 1
        elif i >= count + expanded:
            bmask |= 1 << i
            emask |= 1 << i
            shape.append(x_shape[i - added_axes])
        else:
            k = i - added_ellipsis
            starts[i], stops[i], steps[i] = begin[k], end[k], strides[k]
            bmask |= ((begin_mask >> k) & 1) << i
            emask |= ((end_mask >> k) & 1) << i
            smask |= ((shrink_mask >> k) & 1) << i
            shape.append(x_shape[i - added_axes])

    ranges, out_shape = [], []
    for i in range(eff):
        size, step = shape[i], steps[i]
        if step == 0:
            raise Refusal("STRIDED_SLICE: stride value has to be non-zero")
        start = starts[i] + size if starts[i] < 0 else starts[i]
        start = min(max(start, 0), size) if step > 0 else min(max(start, -1), size - 1)
        if (bmask >> i) & 1:
            start = 0 if step > 0 else size - 1
        if (smask >> i) & 1:
            if start >= size:
                # LiteRT then writes nothing into a non-empty output (garbage); TF refuses.
                raise KernelError(f"STRIDED_SLICE: shrunk index {starts[i]} out of range "
                                  f"for dimension {i} of size {size}")
            stop = start + 1
        else:
            stop = stops[i] + start if offset else stops[i]
            stop = stop + size if stop < 0 else stop
            stop = min(max(stop, 0), size) if step > 0 else min(max(stop, -1), size - 1)
            if (emask >> i) & 1:
                stop = size if step > 0 else -1
        idx = np.arange(start, stop, step, dtype=np.int64)
        ranges.append(idx)
        if not (smask >> i) & 1:
            out_shape.append(len(idx))
    return tuple(shape), ranges, tuple(out_shape)


def _check_strided_slice(op: str, call: OpCall) -> None:
    require(len(call.inputs) == 4, op, f"needs 4 inputs, got {len(call.inputs)}")
    b, e, s = (call.inputs[i] for i in (1, 2, 3))
    for name, t in (("begin", b), ("end", e), ("strides", s)):
        if t is not None:
            require(t.ndim == 1, op, f"{name} must be 1-D")
            require(t.dtype == np.int32, op, f"{name} must be int32, got {t.dtype}")
    if b is not None and e is not None:
        require(b.size == e.size, op, f"begin has {b.size} entries, end {e.size}")
        require(b.size <= 31, op, "at most 31 indices")
    if s is not None:
        require(bool(np.all(s != 0)), op, "stride value has to be non-zero")


@register("STRIDED_SLICE", check=_check_strided_slice)
def strided_slice(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    eff_shape, ranges, out_shape = strided_slice_plan(call, x.shape)
    picked = x.reshape(eff_shape)[np.ix_(*ranges)] if ranges else x
    return [picked.reshape(out_shape)]


# --------------------------------------------------------------------------------------------
# SHAPE / TRANSPOSE


@register("SHAPE")
def shape(call: OpCall) -> list[np.ndarray]:
    out_type = call.options.get("out_type", "INT32")
    dtype = np.int64 if out_type in ("INT64", np.int64) else np.int32
    return [np.asarray(call.inputs[0].shape, dtype=dtype)]


def _check_transpose(op: str, call: OpCall) -> None:
    perm = call.inputs[1] if len(call.inputs) > 1 else None
    xs = input_shape(call, 0)
    if perm is not None and xs is not None:
        p = [int(v) + len(xs) if int(v) < 0 else int(v) for v in perm.reshape(-1)]
        require(sorted(p) == list(range(len(xs))), op,
                f"perm {perm.tolist()} is not a permutation of the {len(xs)} dimensions")
        require(len(xs) <= 6, op, "at most 6 dimensions")


@register("TRANSPOSE", check=_check_transpose)
def transpose(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    perm = [int(v) + x.ndim if int(v) < 0 else int(v) for v in call.inputs[1].reshape(-1)]
    return [np.ascontiguousarray(np.transpose(x, perm))]


# --------------------------------------------------------------------------------------------
# GATHER / EMBEDDING_LOOKUP


def _gather_axes(call: OpCall, rank: int, positions_rank: int) -> tuple[int, int]:
    axis = int(call.options.get("axis", 0))
    axis = axis + rank if axis < 0 else axis
    batch_dims = int(call.options.get("batch_dims", 0))
    batch_dims = batch_dims + positions_rank if batch_dims < 0 else batch_dims
    return axis, batch_dims


def _check_gather(op: str, call: OpCall) -> None:
    xs, ps = input_shape(call, 0), input_shape(call, 1)
    if call.inputs[1] is not None:
        require(call.inputs[1].dtype in (np.int32, np.int64, np.int16), op,
                f"positions must be int16/int32/int64, got {call.inputs[1].dtype}")
    if xs is None or ps is None:
        return
    axis, batch_dims = _gather_axes(call, len(xs), len(ps))
    require(0 <= axis < len(xs), op, f"axis {call.options.get('axis', 0)} out of range")
    require(batch_dims <= axis, op, f"batch_dims {batch_dims} exceeds axis {axis}")
    require(0 <= batch_dims < len(xs) and batch_dims <= len(ps), op,
            f"batch_dims {batch_dims} out of range")
    for i in range(batch_dims):
        require(xs[i] == ps[i], op, f"batch dimension {i} differs ({xs[i]} vs {ps[i]})")


@register("GATHER", check=_check_gather)
def gather(call: OpCall) -> list[np.ndarray]:
    x, pos = call.inputs[0], np.asarray(call.inputs[1]).astype(np.int64)
    axis, batch_dims = _gather_axes(call, x.ndim, pos.ndim)
    if np.any((pos < 0) | (pos >= x.shape[axis])):
        bad = pos[(pos < 0) | (pos >= x.shape[axis])].reshape(-1)[0]
        raise KernelError(f"GATHER: index {int(bad)} out of range [0, {x.shape[axis]})")
    batch = int(np.prod(x.shape[:batch_dims]))
    outer = int(np.prod(x.shape[batch_dims:axis]))
    inner = int(np.prod(x.shape[axis + 1:]))
    xr = x.reshape(batch, outer, x.shape[axis], inner)
    pr = pos.reshape(batch, -1)
    picked = xr[np.arange(batch)[:, None, None], np.arange(outer)[None, :, None], pr[:, None, :]]
    out_shape = x.shape[:axis] + pos.shape[batch_dims:] + x.shape[axis + 1:]
    return [picked.reshape(out_shape)]


def _check_embedding_lookup(op: str, call: OpCall) -> None:
    ls, vs = input_shape(call, 0), input_shape(call, 1)
    if ls is not None:
        require(len(ls) == 1, op, f"lookup must be 1-D, got shape {ls}")
        require(call.inputs[0].dtype == np.int32, op, "lookup must be int32")
    if vs is not None:
        require(len(vs) >= 2, op, f"value must have rank >= 2, got shape {vs}")
    vq = call.input_q[1] if len(call.input_q) > 1 else None
    out_dtype = np.dtype(call.output_dtypes[0])
    if vq is not None and out_dtype == np.float32:
        require(int(vq.zero_point[0]) == 0, op, "hybrid lookup needs value zero point 0")
        if vq.scale.size > 1:
            require(vq.axis == 0, op, "per-channel value quantization must be on dimension 0")


@register("EMBEDDING_LOOKUP", check=_check_embedding_lookup)
def embedding_lookup(call: OpCall) -> list[np.ndarray]:
    ids, value = call.inputs[0].astype(np.int64).reshape(-1), call.inputs[1]
    rows = value.shape[0]
    if np.any((ids < 0) | (ids >= rows)):
        bad = ids[(ids < 0) | (ids >= rows)][0]
        raise KernelError(f"EMBEDDING_LOOKUP: index {int(bad)} out of bounds [0, {rows - 1}]")
    picked = value[ids]
    out_dtype = np.dtype(call.output_dtypes[0])
    if out_dtype == np.float32 and value.dtype != np.float32:
        q = call.input_q[1]
        scales = np.asarray(q.scale, dtype=np.float32)
        factor = scales[ids] if scales.size > 1 else np.full(len(ids), scales[0], np.float32)
        factor = factor.reshape((-1,) + (1,) * (value.ndim - 1))
        return [(picked.astype(np.int8).astype(np.float32) * factor).astype(np.float32)]
    return [picked.copy()]


# --------------------------------------------------------------------------------------------
# RESIZE_NEAREST_NEIGHBOR / RESIZE_BILINEAR


def _check_resize(op: str, call: OpCall) -> None:
    if op == "RESIZE_BILINEAR":
        require(not (call.options.get("half_pixel_centers", False) and
                     call.options.get("align_corners", False)), op,
                "half_pixel_centers and align_corners cannot both be true")
    xs = input_shape(call, 0)
    if xs is not None:
        require(len(xs) == 4, op, f"input must be 4-D, got shape {xs}")
    size = call.inputs[1] if len(call.inputs) > 1 else None
    if size is not None:
        require(size.dtype == np.int32, op, f"size must be int32, got {size.dtype}")
        require(size.ndim == 1 and size.size == 2, op,
                f"size must have 2 elements, got shape {list(size.shape)}")


def _resize_args(call: OpCall) -> tuple[np.ndarray, int, int, bool, bool]:
    """(input, output height, output width, align_corners, half_pixel_centers)."""
    size = call.inputs[1] if len(call.inputs) > 1 and call.inputs[1] is not None else None
    if size is not None:
        out_h, out_w = int(size.reshape(-1)[0]), int(size.reshape(-1)[1])
    else:
        out_h, out_w = call.output_shapes[0][1:3]
    return (call.inputs[0], out_h, out_w, bool(call.options.get("align_corners", False)),
            bool(call.options.get("half_pixel_centers", False)))


def _resize_scale(in_size: int, out_size: int, align_corners: bool) -> np.float32:
    """input / output size in float; (in - 1) / (out - 1) with align_corners."""
    if align_corners and out_size > 1:
        return f32(in_size - 1) / f32(out_size - 1)
    return f32(in_size) / f32(out_size)


def nearest_indices(in_size: int, out_size: int, align_corners: bool,
                    half_pixel_centers: bool) -> np.ndarray:
    """`GetNearestNeighbor` for every output coordinate, in float like the C++ code."""
    scale = _resize_scale(in_size, out_size, align_corners)
    offset = f32(0.5) if half_pixel_centers else f32(0.0)
    pos = ((np.arange(out_size, dtype=np.float32) + offset) * scale).astype(np.float32)
    idx = ar.float_to_int32(ar.round_half_away(pos) if align_corners else np.floor(pos))
    idx = np.minimum(idx, in_size - 1)
    if half_pixel_centers:
        idx = np.maximum(idx, 0)
    return idx


@register("RESIZE_NEAREST_NEIGHBOR", check=_check_resize)
def resize_nearest_neighbor(call: OpCall) -> list[np.ndarray]:
    x, out_h, out_w, ac, hp = _resize_args(call)
    ys = nearest_indices(x.shape[1], out_h, ac, hp)
    xs = nearest_indices(x.shape[2], out_w, ac, hp)
    return [x[:, ys][:, :, xs].copy()]


@register("RESIZE_BILINEAR", check=_check_resize)
def resize_bilinear(call: OpCall) -> list[np.ndarray]:
    x, out_h, out_w, ac, hp = _resize_args(call)
    dtype = np.dtype(call.output_dtypes[0])
    if dtype in (np.int8, np.int16):
        return [resize_bilinear_integer(x, out_h, out_w, ac, hp).astype(dtype)]
    if dtype == np.float32:
        return [_resize_bilinear_float(x.astype(np.float32), out_h, out_w, ac, hp)]
    raise UnsupportedOp(f"RESIZE_BILINEAR: no kernel for {dtype} tensors")


def bilinear_coords(in_size: int, out_size: int, align_corners: bool, half_pixel: bool):
    """`ComputeInterpolationValuesInteger` with 10 fractional bits."""
    if align_corners and out_size > 1:
        scale_10 = ((1 << 10) * (in_size - 1) + (out_size - 1) // 2) // (out_size - 1)
    else:
        scale_10 = ((1 << 10) * in_size + out_size // 2) // out_size
    v = np.arange(out_size, dtype=np.int64)
    scaled = v * scale_10 + scale_10 // 2 - (1 << 9) if half_pixel else v * scale_10
    lower = np.maximum(ar.trunc_div(scaled, 1 << 10), 0)
    upper = np.minimum(ar.trunc_div(scaled + (1 << 10) - 1, 1 << 10), in_size - 1)
    return scaled, lower, upper


def resize_bilinear_integer(x, out_h, out_w, ac, hp) -> np.ndarray:
    """`ResizeBilinearInteger` of an NHWC int8 or int16 `x`, as int64 (cast by the caller)."""
    _, in_h, in_w, _ = x.shape
    iy, y0, y1 = bilinear_coords(in_h, out_h, ac, hp)
    ix, x0, x1 = bilinear_coords(in_w, out_w, ac, hp)
    xi = x.astype(np.int64)
    wy1 = (iy - (1 << 10) * y0)[None, :, None, None]
    wy0 = (1 << 10) - wy1
    wx1 = (ix - (1 << 10) * x0)[None, None, :, None]
    wx0 = (1 << 10) - wx1
    rows0, rows1 = xi[:, y0], xi[:, y1]
    out20 = (rows0[:, :, x0] * wy0 * wx0 + rows1[:, :, x0] * wy1 * wx0 +
             rows0[:, :, x1] * wy0 * wx1 + rows1[:, :, x1] * wy1 * wx1)
    rounding = np.where(out20 > 0, 1 << 19, -(1 << 19))
    return ar.trunc_div(out20 + rounding, 1 << 20)


def _resize_bilinear_float(x, out_h, out_w, ac, hp) -> np.ndarray:
    """reference_ops::ResizeBilinear (float): the four products in source order, in float."""
    _, in_h, in_w, _ = x.shape

    def coords(in_size, out_size):
        scale = _resize_scale(in_size, out_size, ac)
        v = np.arange(out_size, dtype=np.float32)
        scaled = ((v + f32(0.5)) * scale - f32(0.5)) if hp else v * scale
        scaled = scaled.astype(np.float32)
        lower = np.maximum(ar.float_to_int32(np.floor(scaled)), 0)
        upper = np.minimum(ar.float_to_int32(np.ceil(scaled)), in_size - 1)
        return scaled, lower, upper

    iy, y0, y1 = coords(in_h, out_h)
    ix, x0, x1 = coords(in_w, out_w)
    dy = (iy - y0.astype(np.float32)).astype(np.float32)[None, :, None, None]
    dx = (ix - x0.astype(np.float32)).astype(np.float32)[None, None, :, None]
    one = f32(1.0)
    rows0, rows1 = x[:, y0], x[:, y1]
    out = rows0[:, :, x0] * (one - dy) * (one - dx)
    out = out + rows1[:, :, x0] * dy * (one - dx)
    out = out + rows0[:, :, x1] * (one - dy) * dx
    out = out + rows1[:, :, x1] * dy * dx
    return out.astype(np.float32)


# --------------------------------------------------------------------------------------------
# TILE / BROADCAST_TO / EXPAND_DIMS


def tile_output_shape(x_shape, multiples) -> tuple[int, ...]:
    return tuple(int(d) * int(m) for d, m in zip(x_shape, np.asarray(multiples).reshape(-1)))


def _check_tile(op: str, call: OpCall) -> None:
    require(len(call.inputs) == 2, op, f"needs 2 inputs, got {len(call.inputs)}")
    xs, m = input_shape(call, 0), call.inputs[1]
    if m is None:
        return
    require(m.dtype in (np.int32, np.int64), op, f"multipliers must be int32/int64, got {m.dtype}")
    if xs is not None:
        require(m.size == len(xs), op, f"{m.size} multipliers for rank {len(xs)}")
        for d, k in zip(xs, m.reshape(-1).tolist()):
            require(k >= 0, op, f"multipliers must be non-negative, got {m.reshape(-1).tolist()}")
            require(d * k <= 2**31 - 1, op, f"cannot multiply {d} and {k}: output dimensions "
                                            "must fit int32")


@register("TILE", check=_check_tile)
def tile(call: OpCall) -> list[np.ndarray]:
    x, m = call.inputs[0], call.inputs[1]
    return [np.tile(x, [int(v) for v in m.reshape(-1)]).reshape(tile_output_shape(x.shape, m))]


def _check_broadcast_to(op: str, call: OpCall) -> None:
    require(len(call.inputs) == 2, op, f"needs 2 inputs, got {len(call.inputs)}")
    xs, shape = input_shape(call, 0), call.inputs[1]
    if shape is None:
        return
    require(shape.dtype in (np.int32, np.int64), op, f"shape must be int32/int64, got {shape.dtype}")
    require(shape.ndim == 1, op, f"shape must be 1-D, got shape {list(shape.shape)}")
    require(shape.size <= 8, op, f"at most 8 dimensions, got {shape.size}")
    if xs is not None:
        target = [int(v) for v in shape]
        ok = len(xs) <= len(target) and all(
            d == 1 or d == t for d, t in zip(xs, target[len(target) - len(xs):]))
        require(ok, op, f"output shape {target} is not broadcastable from input shape {list(xs)}")


@register("BROADCAST_TO", check=_check_broadcast_to)
def broadcast_to(call: OpCall) -> list[np.ndarray]:
    x, shape = call.inputs[0], call.inputs[1]
    return [np.broadcast_to(x, tuple(int(v) for v in shape)).copy()]


def expand_dims_axis(rank: int, axis_tensor) -> int:
    axis = int(np.asarray(axis_tensor).reshape(-1)[0])
    return axis + rank + 1 if axis < 0 else axis


def _check_expand_dims(op: str, call: OpCall) -> None:
    require(len(call.inputs) == 2, op, f"needs 2 inputs, got {len(call.inputs)}")
    xs, axis = input_shape(call, 0), call.inputs[1]
    in_q, out_q = call.input_q[0], call.output_q[0]
    require(_same_quant(in_q, out_q), op, f"input quantization {scale_zp(in_q)} differs from "
                                          f"the output's {scale_zp(out_q)}")
    if np.dtype(call.output_dtypes[0]) == np.int16:
        require(scale_zp(in_q)[1] == 0, op, "int16 zero point must be 0")
    if axis is None:
        return
    require(axis.size == 1, op, f"axis must have one element, got {axis.size}")
    require(axis.dtype in (np.int32, np.int64), op, f"axis must be int32/int64, got {axis.dtype}")
    if xs is not None:
        a = expand_dims_axis(len(xs), axis)
        require(0 <= a <= len(xs), op, f"axis {int(axis.reshape(-1)[0])} out of range for rank "
                                       f"{len(xs)}")


@register("EXPAND_DIMS", check=_check_expand_dims)
def expand_dims(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    return [np.expand_dims(x, expand_dims_axis(x.ndim, call.inputs[1])).copy()]


# --------------------------------------------------------------------------------------------
# SPLIT / SPLIT_V / UNPACK: one output per piece

_SPLIT_TYPES = (np.float32, np.uint8, np.int8, np.int16, np.int32, np.int64)


def split_axis(rank: int, axis_tensor) -> int:
    """The axis: the first value of the axis tensor, negative counting from the end."""
    axis = int(np.asarray(axis_tensor).reshape(-1)[0])
    return axis + rank if axis < 0 else axis


def _check_split(op: str, call: OpCall) -> None:
    require(len(call.inputs) == 2, op, f"needs 2 inputs (axis, input), got {len(call.inputs)}")
    count = int(call.options.get("num_splits", 0))
    require(count == len(call.output_shapes), op,
            f"num_splits {count} but {len(call.output_shapes)} outputs")
    require(np.dtype(call.output_dtypes[0]) in _SPLIT_TYPES, op,
            f"type {np.dtype(call.output_dtypes[0])} is not supported")
    axis, xs = call.inputs[0], input_shape(call, 1)
    if axis is None or xs is None:
        return
    a = split_axis(len(xs), axis)
    require(0 <= a < len(xs), op, f"axis {int(axis.reshape(-1)[0])} out of range for rank {len(xs)}")
    require(count != 0, op, "num_splits must not be 0")
    require(xs[a] % count == 0, op, f"not an even split: dimension {a} of size {xs[a]} into "
                                    f"{count}")


@register("SPLIT", check=_check_split)
def split(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[1]
    a = split_axis(x.ndim, call.inputs[0])
    return [p.copy() for p in np.split(x, int(call.options.get("num_splits", 0)), axis=a)]


def split_v_sizes(size_splits, dim: int) -> list[int]:
    """The piece sizes, one -1 standing for the rest (no check)."""
    sizes = [int(v) for v in np.asarray(size_splits).reshape(-1)]
    if -1 in sizes:
        sizes[sizes.index(-1)] = dim - sum(s for s in sizes if s != -1)
    return sizes


def _check_split_v(op: str, call: OpCall) -> None:
    require(len(call.inputs) == 3, op,
            f"needs 3 inputs (input, size_splits, axis), got {len(call.inputs)}")
    count = int(call.options.get("num_splits", 0))
    require(count == len(call.output_shapes), op,
            f"num_splits {count} but {len(call.output_shapes)} outputs")
    require(np.dtype(call.output_dtypes[0]) in _SPLIT_TYPES, op,
            f"type {np.dtype(call.output_dtypes[0])} is not supported")
    xs, sizes, axis = input_shape(call, 0), call.inputs[1], call.inputs[2]
    if sizes is not None:
        require(sizes.ndim == 1, op, f"size_splits must be 1-D, got shape {list(sizes.shape)}")
        require(sizes.size == len(call.output_shapes), op,
                f"{sizes.size} size_splits for {len(call.output_shapes)} outputs")
        require(sizes.dtype in (np.int32, np.int64), op,
                f"size_splits must be int32/int64, got {sizes.dtype}")
    if xs is None or sizes is None or axis is None:
        return
    a = split_axis(len(xs), axis)
    values = [int(v) for v in sizes.reshape(-1)]
    require(values.count(-1) <= 1, op, f"size_splits {values} contains more than one -1")
    require(0 <= a < len(xs), op, f"axis {int(axis.reshape(-1)[0])} out of range for rank {len(xs)}")
    known = sum(v for v in values if v != -1)
    if -1 in values:
        require(known <= xs[a], op, f"size_splits {values} exceed dimension {a} of size {xs[a]}")
    else:
        require(known == xs[a], op,
                f"size_splits {values} do not sum to dimension {a} of size {xs[a]}")
    require(all(v >= -1 for v in values), op, f"negative size in size_splits {values}")


@register("SPLIT_V", check=_check_split_v)
def split_v(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    a = split_axis(x.ndim, call.inputs[2])
    sizes = split_v_sizes(call.inputs[1], x.shape[a])
    return [p.copy() for p in np.split(x, np.cumsum(sizes)[:-1], axis=a)]


def _check_unpack(op: str, call: OpCall) -> None:
    require(len(call.inputs) == 1, op, f"needs 1 input, got {len(call.inputs)}")
    num = int(call.options.get("num", 0))
    require(num == len(call.output_shapes), op, f"num {num} but {len(call.output_shapes)} outputs")
    dtype = np.dtype(call.output_dtypes[0])
    require(dtype in (np.int32, np.float32, np.float16, np.uint8, np.int8, np.int16, np.bool_),
            op, f"type {dtype} is not supported")
    for i, q in enumerate(call.output_q):
        require(_same_quant(call.input_q[0], q), op,
                f"output {i} quantization differs from the input's")
    xs = input_shape(call, 0)
    if xs is None:
        return
    require(int(np.prod(xs)) > 0, op, f"input of shape {list(xs)} is empty")
    axis = int(call.options.get("axis", 0))
    a = axis + len(xs) if axis < 0 else axis
    require(0 <= a < len(xs), op, f"axis {axis} out of range for rank {len(xs)}")
    require(xs[a] == num, op, f"num {num} differs from dimension {a} of size {xs[a]}")


@register("UNPACK", check=_check_unpack)
def unpack(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    axis = int(call.options.get("axis", 0))
    a = axis + x.ndim if axis < 0 else axis
    return [np.take(x, i, axis=a) for i in range(x.shape[a])]


# --------------------------------------------------------------------------------------------
# DEPTH_TO_SPACE / SPACE_TO_DEPTH


def _check_block_op(op: str, call: OpCall) -> None:
    require(len(call.inputs) == 1, op, f"needs 1 input, got {len(call.inputs)}")
    dtype = np.dtype(call.output_dtypes[0])
    require(dtype in (np.float32, np.uint8, np.int8, np.int32, np.int64), op,
            f"type {dtype} is not supported")
    bs = int(call.options.get("block_size", 0))
    require(bs > 0, op, f"block_size must be positive, got {bs}")
    xs = input_shape(call, 0)
    if xs is None:
        return
    require(len(xs) == 4, op, f"input must be 4-D, got shape {list(xs)}")
    if op == "DEPTH_TO_SPACE":
        require(xs[3] % (bs * bs) == 0, op,
                f"input depth {xs[3]} is not a multiple of block_size**2 = {bs * bs}")
    else:
        require(xs[1] % bs == 0 and xs[2] % bs == 0, op,
                f"input height {xs[1]} and width {xs[2]} must be multiples of block_size {bs}")


@register("DEPTH_TO_SPACE", check=_check_block_op)
def depth_to_space(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    bs = int(call.options["block_size"])
    n, h, w, c = x.shape
    y = x.reshape(n, h, w, bs, bs, c // (bs * bs)).transpose(0, 1, 3, 2, 4, 5)
    return [np.ascontiguousarray(y).reshape(n, h * bs, w * bs, c // (bs * bs))]


@register("SPACE_TO_DEPTH", check=_check_block_op)
def space_to_depth(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    bs = int(call.options["block_size"])
    n, h, w, c = x.shape
    y = x.reshape(n, h // bs, bs, w // bs, bs, c).transpose(0, 1, 3, 2, 4, 5)
    return [np.ascontiguousarray(y).reshape(n, h // bs, w // bs, c * bs * bs)]
