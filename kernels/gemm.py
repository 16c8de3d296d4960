"""TRANSPOSE_CONV and BATCH_MATMUL as LiteRT's reference kernels compute them.

The integer kernels form their sums exactly in float64 (every partial sum stays far below
2**53) and wrap them to the C++ accumulator's width (int32; int64 for 16-bit activations), then
requantize bit for bit: TRANSPOSE_CONV per output channel like CONV_2D
(`reference_integer_ops::TransposeConv`), BATCH_MATMUL with one multiplier
(`reference_ops::BatchMatMul` with `FullyConnectedParams`). The float kernels add their
products in float32 in the reference loops' order.

    out = transpose_conv(OpCall([output_shape, weights_ohwi, x, bias], ...))[0]
"""

from __future__ import annotations

import numpy as np

from qaccel.kernels import arithmetic as ar
from qaccel.kernels.base import (
    OpCall,
    Refusal,
    UnsupportedOp,
    activation,
    input_shape,
    register,
    require,
    scale_zp,
    window_geometry,
)
from qaccel.kernels.conv import per_channel_multipliers

# --------------------------------------------------------------------------------------------
# TRANSPOSE_CONV: inputs (output_shape, weights OHWI, input NHWC, optional bias)


def transpose_conv_output_shape(call: OpCall) -> tuple[int, ...]:
    """The output shape: the values of the constant `output_shape` input, else the declared
    shape (LiteRT resizes the output to the tensor's values at run time)."""
    shape = call.inputs[0] if call.inputs else None
    if shape is not None:
        return tuple(int(d) for d in np.asarray(shape).reshape(-1))
    return tuple(call.output_shapes[0])


def _check_transpose_conv(op: str, call: OpCall) -> None:
    require(len(call.inputs) in (3, 4), op, f"needs 3 or 4 inputs, got {len(call.inputs)}")
    o = call.options
    require(int(o.get("stride_h", 0)) > 0 and int(o.get("stride_w", 0)) > 0, op,
            f"strides must be positive (stride_h={o.get('stride_h', 0)}, "
            f"stride_w={o.get('stride_w', 0)})")
    require(o.get("padding", "SAME") in ("SAME", "VALID"), op,
            f"unknown padding {o.get('padding')!r}")
    shape, ws, xs = (input_shape(call, i) for i in range(3))
    if shape is not None:
        require(len(shape) == 1, op, f"output_shape must be 1-D, got shape {list(shape)}")
        require(call.inputs[0].dtype == np.int32, op,
                f"output_shape must be int32, got {call.inputs[0].dtype}")
        require(shape[0] == 4, op, f"output_shape must have 4 entries, got {shape[0]}")
    if ws is not None:
        require(len(ws) == 4, op, f"weights must be 4-D, got shape {list(ws)}")
    if xs is not None:
        require(len(xs) == 4, op, f"input must be 4-D, got shape {list(xs)}")
    if ws is not None and xs is not None:
        require(xs[3] == ws[3], op, f"input channels {xs[3]} differ from the weights' {ws[3]}")
    out_shape = transpose_conv_output_shape(call) if shape is not None else None
    if out_shape is not None and len(out_shape) == 4:
        if xs is not None:
            require(out_shape[0] == xs[0], op,
                    f"output batch {out_shape[0]} differs from the input's {xs[0]}")
        if ws is not None:
            require(out_shape[3] == ws[0], op,
                    f"output channels {out_shape[3]} differ from the weights' {ws[0]}")
    bias = call.inputs[3] if len(call.inputs) > 3 else None
    bias_q = call.input_q[3] if len(call.input_q) > 3 else None
    dtype = np.dtype(call.output_dtypes[0])
    if dtype == np.float32:
        require(activation(call) in ("NONE", "RELU", "RELU6", "RELU_N1_TO_1"), op,
                f"unsupported fused activation {activation(call)}")
        if bias is not None:
            require(bias.dtype == np.float32, op, f"float bias must be float32, got {bias.dtype}")
        return
    if dtype not in (np.int8, np.int16):
        return  # the kernel says which types it has
    w_q, in_q, out_q = call.input_q[1], call.input_q[2], call.output_q[0]
    if dtype == np.int16:
        require(in_q is not None and out_q is not None and scale_zp(in_q)[1] == 0 and
                scale_zp(out_q)[1] == 0, op, "int16 input and output zero points must be 0")
        bias_type = o.get("quantized_bias_type", "FLOAT32")
        require(bias_type in ("FLOAT32", "INT32", "INT64"), op,
                f"quantized_bias_type {bias_type} must be INT32 or INT64")
        if bias is not None:
            # The kernel reads the bias as the accumulator type: int64 unless INT32 is set.
            want = np.int32 if bias_type == "INT32" else np.int64
            require(bias.dtype == want, op, f"int16 bias must be {np.dtype(want).name} "
                                            f"(quantized_bias_type {bias_type}), got {bias.dtype}")
    require(w_q is not None and in_q is not None and out_q is not None, op,
            "int8 input, weights and output need quantization parameters")
    # The weights' zero points are not read (PopulateConvolutionQuantizationParams checks
    # none, the kernel multiplies the raw values); per-channel scales are per output channel
    # whatever their dimension, which only has to have that many entries.
    if ws is not None:
        require(w_q.scale.size in (1, ws[0]), op,
                f"{w_q.scale.size} weight scales for {ws[0]} output channels")
        if w_q.scale.size > 1:
            require(0 <= w_q.axis < 4 and ws[w_q.axis] == ws[0], op,
                    f"per-channel weights quantized on dimension {w_q.axis} of {list(ws)} for "
                    f"{ws[0]} output channels")
    if bias is not None:
        if dtype == np.int8:
            require(bias.dtype == np.int32, op, f"int8 bias must be int32, got {bias.dtype}")
        if ws is not None:
            require(bias.size == ws[0], op,
                    f"bias has {bias.size} elements for {ws[0]} output channels")
    if bias_q is not None and bias_q.scale.size == 1:  # per-axis: no legacy zero point
        require(scale_zp(bias_q)[1] == 0, op, f"bias zero point must be 0, got "
                                              f"{scale_zp(bias_q)[1]}")
    try:
        ar.activation_range_quantized(activation(call), *scale_zp(out_q), dtype)
    except OverflowError as exc:
        raise Refusal(f"{op}: fused activation bound overflows int32 ({exc})") from None
    except ValueError as exc:
        raise Refusal(f"{op}: {exc}") from None


def _scatter_canvas(x_shape, w_shape, out_shape, pads, strides, dtype) -> np.ndarray:
    """Zeros large enough for every tap the scatter writes, and for the output window."""
    n, h, wd, _ = x_shape
    cout, kh, kw, _ = w_shape
    rows = max((h - 1) * strides[0] + kh, pads[0] + out_shape[1])
    cols = max((wd - 1) * strides[1] + kw, pads[1] + out_shape[2])
    return np.zeros((n, rows, cols, cout), dtype=dtype)


def _scatter_accumulate(x: np.ndarray, w: np.ndarray, out_shape, pads, strides) -> np.ndarray:
    """sum over (iy, ix, ic, ky, kx) of x[b, iy, ix, ic] * w[oc, ky, kx, ic] into
    out[b, iy*sh - pad_h + ky, ix*sw - pad_w + kx, oc], taps outside the output dropped;
    float64 x and w, exact."""
    n, h, wd, _ = x.shape
    cout, kh, kw, _ = w.shape
    _, out_h, out_w, _ = out_shape
    pad_h, pad_w = pads
    sh, sw = strides
    full = _scatter_canvas(x.shape, w.shape, out_shape, pads, strides, np.float64)
    for ky in range(kh):
        for kx in range(kw):
            tap = x @ w[:, ky, kx, :].T  # (n, h, w, cout)
            full[:, ky: ky + (h - 1) * sh + 1: sh, kx: kx + (wd - 1) * sw + 1: sw, :] += tap
    return full[:, pad_h: pad_h + out_h, pad_w: pad_w + out_w, :]


@register("TRANSPOSE_CONV", check=_check_transpose_conv)
def transpose_conv(call: OpCall) -> list[np.ndarray]:
    w, x = call.inputs[1], call.inputs[2]
    bias = call.inputs[3] if len(call.inputs) > 3 else None
    out_shape = transpose_conv_output_shape(call)
    _, out_h, out_w, cout = out_shape
    _, kh, kw, _ = w.shape
    o = call.options
    sh, sw = int(o.get("stride_h", 1)), int(o.get("stride_w", 1))
    padding = o.get("padding", "SAME")
    # ComputePaddingHeightWidth with the output as the "input" of the forward convolution;
    # the reference kernel ignores the odd remainder (the offset).
    _, pad_h = window_geometry(padding, out_h, kh, sh)
    _, pad_w = window_geometry(padding, out_w, kw, sw)
    dtype = np.dtype(call.output_dtypes[0])
    if dtype == np.int8 and x.dtype == np.int8:
        _, in_zp = scale_zp(call.input_q[2])
        acc = _scatter_accumulate(x.astype(np.float64) - in_zp, w.astype(np.float64),
                                  out_shape, (pad_h, pad_w), (sh, sw)).astype(np.int64)
        acc = ar.wrap_int32(acc)
        if bias is not None:
            acc = ar.wrap_int32(acc + bias.astype(np.int64))
        m, s = per_channel_multipliers(call.input_q[2], call.input_q[1], call.output_q[0], cout)
        out_s, out_zp = scale_zp(call.output_q[0])
        lo, hi = ar.activation_range_quantized(activation(call), out_s, out_zp, np.int8)
        out = ar.multiply_by_quantized_multiplier(acc, m, s) + out_zp
        return [np.clip(out, lo, hi).astype(np.int8)]
    if dtype == np.int16 and x.dtype == np.int16 and w.dtype == np.int8:
        # int16 x int8 products (< 2**22) sum exactly in float64; the accumulator is int64,
        # or int32 (wrapping, with the int32 requantization) when quantized_bias_type is INT32.
        acc = _scatter_accumulate(x.astype(np.float64), w.astype(np.float64), out_shape,
                                  (pad_h, pad_w), (sh, sw)).astype(np.int64)
        narrow = o.get("quantized_bias_type", "FLOAT32") == "INT32"
        if narrow:
            acc = ar.wrap_int32(acc)
        if bias is not None:
            acc = acc + bias.astype(np.int64)
        m, s = per_channel_multipliers(call.input_q[2], call.input_q[1], call.output_q[0], cout)
        if narrow:
            out = ar.multiply_by_quantized_multiplier(ar.wrap_int32(acc), m, s)
        else:
            out = np.stack([multiply_by_quantized_multiplier_int64(acc[..., c], int(m[c]),
                                                                   int(s[c]))
                            for c in range(cout)], axis=-1)
        lo, hi = ar.activation_range_quantized(activation(call), *scale_zp(call.output_q[0]),
                                               np.int16)
        return [np.clip(out, lo, hi).astype(np.int16)]
    if dtype == np.float32 and x.dtype == np.float32 and w.dtype == np.float32:
        return [_transpose_conv_float(x, w, bias, out_shape, (pad_h, pad_w), (sh, sw), call)]
    raise UnsupportedOp(f"TRANSPOSE_CONV: no kernel for {x.dtype} input, {w.dtype} weights "
                        f"and {dtype} output")


def _transpose_conv_float(x, w, bias, out_shape, pads, strides, call) -> np.ndarray:
    """reference_ops::TransposeConv (float): scatter-add in (b, iy, ix, ic, ky, kx, oc) order
    in float32, then + bias and clamp."""
    n, h, wd, cin = x.shape
    cout, kh, kw, _ = w.shape
    _, out_h, out_w, _ = out_shape
    pad_h, pad_w = pads
    sh, sw = strides
    full = _scatter_canvas(x.shape, w.shape, out_shape, pads, strides, np.float32)
    # An output element receives its addends in (iy, ix, ic) order, and for one element iy
    # falls as ky rises (ix as kx): so taps go ky and kx descending, channels ascending.
    for ky in reversed(range(kh)):
        for kx in reversed(range(kw)):
            window = full[:, ky: ky + (h - 1) * sh + 1: sh, kx: kx + (wd - 1) * sw + 1: sw, :]
            for ic in range(cin):
                window += x[..., ic: ic + 1] * w[:, ky, kx, ic]
    out = full[:, pad_h: pad_h + out_h, pad_w: pad_w + out_w, :]
    if bias is not None:
        out = out + bias.astype(np.float32)
    lo, hi = ar.activation_range_float(activation(call))
    return np.minimum(np.maximum(out, np.float32(lo)), np.float32(hi)).astype(np.float32)


# --------------------------------------------------------------------------------------------
# BATCH_MATMUL: lhs [..., A, B] x rhs [..., B, C] -> [..., A, C] (adj_x / adj_y transpose the
# last two dimensions first), batch dimensions broadcast, ranks 2 to 5.


def batch_matmul_output_shape(lhs, rhs, adj_x: bool, adj_y: bool) -> tuple[int, ...]:
    """`ResizeOutputTensor`: broadcast batch dimensions, then rows of lhs, columns of rhs."""
    rank = max(len(lhs), len(rhs))
    el = (1,) * (rank - len(lhs)) + tuple(lhs)
    er = (1,) * (rank - len(rhs)) + tuple(rhs)
    batch = tuple(r if (a != r and a == 1) else a for a, r in zip(el[:-2], er[:-2]))
    rows = el[-1] if adj_x else el[-2]
    cols = er[-2] if adj_y else er[-1]
    return (*batch, rows, cols)


def _check_batch_matmul(op: str, call: OpCall) -> None:
    require(len(call.inputs) == 2, op, f"needs 2 inputs, got {len(call.inputs)}")
    ls, rs = input_shape(call, 0), input_shape(call, 1)
    adj_x, adj_y = bool(call.options.get("adj_x", False)), bool(call.options.get("adj_y", False))
    for name, s in (("lhs", ls), ("rhs", rs)):
        if s is not None:
            require(2 <= len(s) <= 5, op, f"{name} must have rank 2 to 5, got shape {list(s)}")
    if ls is not None and rs is not None:
        rank = max(len(ls), len(rs))
        el = (1,) * (rank - len(ls)) + tuple(ls)
        er = (1,) * (rank - len(rs)) + tuple(rs)
        for d, (a, b) in enumerate(zip(el[:-2], er[:-2])):
            require(a == b or a == 1 or b == 1, op,
                    f"batch dimensions {list(ls[:-2])} and {list(rs[:-2])} do not broadcast")
        depth_l = el[-2] if adj_x else el[-1]
        depth_r = er[-1] if adj_y else er[-2]
        require(depth_l == depth_r, op, f"lhs {list(ls)} (adj_x={adj_x}) and rhs {list(rs)} "
                                        f"(adj_y={adj_y}) have depths {depth_l} and {depth_r}")
    dtype = np.dtype(call.output_dtypes[0])
    if dtype not in (np.int8, np.int16):
        return
    lq, rq, oq = call.input_q[0], call.input_q[1], call.output_q[0]
    require(lq is not None and rq is not None and oq is not None, op,
            "quantized lhs, rhs and output need quantization parameters")
    require(oq.scale.size == 1, op, "the output must be quantized per tensor")
    if dtype == np.int16:
        for name, q in (("lhs", lq), ("rhs", rq), ("output", oq)):
            require(legacy_scale_zp(q)[1] == 0, op, f"int16 {name} zero point must be 0")
    product = float(np.float32(np.float32(legacy_scale_zp(lq)[0]) *
                               np.float32(legacy_scale_zp(rq)[0])))
    require(product >= 0, op, f"lhs_scale * rhs_scale = {product:g} is negative")


def legacy_scale_zp(q) -> tuple[float, int]:
    """A tensor's `params` (its legacy quantization), which BATCH_MATMUL reads: the scale and
    zero point of a per-tensor quantization, (0, 0) for a per-axis one."""
    if q is None or q.scale.size != 1:
        return 0.0, 0
    return scale_zp(q)


def _batched(x: np.ndarray, rank: int, adj: bool) -> np.ndarray:
    x = x.reshape((1,) * (rank - x.ndim) + x.shape)
    # Contiguous, so np.matmul hands every matrix to BLAS (a strided view takes its slow loop).
    return np.ascontiguousarray(np.swapaxes(x, -1, -2)) if adj else x


@register("BATCH_MATMUL", check=_check_batch_matmul)
def batch_matmul(call: OpCall) -> list[np.ndarray]:
    lhs, rhs = call.inputs[0], call.inputs[1]
    adj_x, adj_y = bool(call.options.get("adj_x", False)), bool(call.options.get("adj_y", False))
    rank = max(lhs.ndim, rhs.ndim)
    out_shape = batch_matmul_output_shape(lhs.shape, rhs.shape, adj_x, adj_y)
    dtype = np.dtype(call.output_dtypes[0])
    if lhs.dtype == np.int8 and rhs.dtype == np.int8 and dtype in (np.int8, np.int32):
        if dtype == np.int32:  # EvalInt8Int32: raw products, no offsets
            l_zp = r_zp = 0
        else:
            l_zp, r_zp = legacy_scale_zp(call.input_q[0])[1], legacy_scale_zp(call.input_q[1])[1]
        a = _batched(lhs.astype(np.float64) - l_zp, rank, adj_x)
        b = _batched(rhs.astype(np.float64) - r_zp, rank, adj_y)
        acc = ar.wrap_int32(np.matmul(a, b).astype(np.int64))
        if dtype == np.int32:
            return [acc.astype(np.int32).reshape(out_shape)]
        return [_requantize_matmul(acc, call, np.int8).reshape(out_shape)]
    if lhs.dtype == np.int16 and rhs.dtype == np.int16 and dtype == np.int16:
        # int64 accumulators; |a*b| < 2**30, so float64 sums stay exact below 2**23 terms.
        a = _batched(lhs.astype(np.float64), rank, adj_x)
        b = _batched(rhs.astype(np.float64), rank, adj_y)
        acc = np.matmul(a, b).astype(np.int64)
        return [_requantize_matmul(acc, call, np.int16).reshape(out_shape)]
    if lhs.dtype == np.float32 and rhs.dtype == np.float32 and dtype == np.float32:
        a = _batched(lhs, rank, adj_x)
        b = _batched(rhs, rank, adj_y)
        total = np.zeros(np.broadcast_shapes(a.shape[:-1] + (1,), b.shape[:-2] + (1, 1))[:-1]
                         + (b.shape[-1],), dtype=np.float32)
        for k in range(a.shape[-1]):  # total += lhs * rhs in k order, in float32
            total += a[..., :, k: k + 1] * b[..., k: k + 1, :]
        return [total.reshape(out_shape)]
    raise UnsupportedOp(f"BATCH_MATMUL: no kernel for {lhs.dtype} x {rhs.dtype} -> {dtype}")


def _requantize_matmul(acc: np.ndarray, call: OpCall, dtype) -> np.ndarray:
    """`GetQuantizedConvolutionMultipler` (the scale product in float, then double) +
    `QuantizeMultiplier`, MultiplyByQuantizedMultiplier, output zero point, type clamp."""
    l_s, r_s, o_s = (legacy_scale_zp(q)[0] for q in (call.input_q[0], call.input_q[1],
                                                     call.output_q[0]))
    real = float(np.float32(np.float32(l_s) * np.float32(r_s))) / float(np.float32(o_s))
    m, s = ar.quantize_multiplier_scalar(real)
    _, out_zp = scale_zp(call.output_q[0])
    if np.dtype(dtype) == np.int16:
        out = multiply_by_quantized_multiplier_int64(acc, m, s)
    else:
        out = ar.multiply_by_quantized_multiplier(acc, m, s)
    lo, hi = ar.storage_range(dtype)
    return np.clip(out + out_zp, lo, hi).astype(dtype)


def multiply_by_quantized_multiplier_int64(x: np.ndarray, multiplier: int,
                                           shift: int) -> np.ndarray:
    """TFLite `MultiplyByQuantizedMultiplier(int64 x, M, shift)`: M reduced to 16 bits,
    one rounding shift by 15 - shift. Computed in Python integers (x * M can exceed 64 bits)
    for large x, in int64 otherwise."""
    reduced = (multiplier + (1 << 15)) >> 16 if multiplier < 0x7FFF0000 else 0x7FFF
    total_shift = 15 - shift
    rounding = 1 << (total_shift - 1)
    x = np.asarray(x, dtype=np.int64)
    if np.all(np.abs(x) < (1 << 47)):
        return ar.wrap_int32((x * reduced + rounding) >> total_shift)
    flat = [((int(v) * reduced + rounding) >> total_shift) % (1 << 32) for v in x.reshape(-1)]
    return ar.wrap_int32(np.array(flat, dtype=np.int64)).reshape(x.shape)
