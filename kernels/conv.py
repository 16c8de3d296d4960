"""CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED as LiteRT's reference kernels compute them.

int8 x int8 products summed in float64 are exact (every partial sum stays far below 2**53),
so the integer accumulators come out of float64 BLAS (im2col + matmul) exactly; the
requantization then follows `reference_integer_ops` bit for bit. Float32 convolutions
accumulate tap by tap in float32, in the reference kernels' loop order.
"""

from __future__ import annotations

import numpy as np

from qaccel.kernels import arithmetic as ar
from qaccel.kernels.base import (
    OpCall,
    Refusal,
    UnsupportedOp,
    activation,
    c_div,
    input_shape,
    pad_spatial,
    register,
    require,
    scale_zp,
    window_geometry,
    windowed_view,
)
from qaccel.kernels.qparams import QParams


# --------------------------------------------------------------------------------------------
# Shared requantization


def per_channel_multipliers(in_q: QParams, w_q: QParams, out_q: QParams,
                            channels: int) -> tuple[np.ndarray, np.ndarray]:
    """`PopulateConvolutionQuantizationParams`: per output channel
    QuantizeMultiplier(double(in_s) * double(w_s[c]) / double(out_s))."""
    w_scales = np.asarray(w_q.scale, dtype=np.float32).astype(np.float64)
    if w_scales.size == 1:
        w_scales = np.repeat(w_scales, channels)
    effective = float(np.float32(in_q.scale[0])) * w_scales / float(np.float32(out_q.scale[0]))
    return ar.quantize_multiplier(effective)


def requantize_mbqm(acc: np.ndarray, multiplier, shift, out_zp: int, act_min: int,
                    act_max: int) -> np.ndarray:
    """int32 accumulators (int64 array, last axis = channel) -> int8 via MBQM + zp + clamp."""
    out = ar.multiply_by_quantized_multiplier(acc, multiplier, shift) + out_zp
    return np.clip(out, act_min, act_max).astype(np.int8)


def _activation_bounds(op: str, call: OpCall) -> tuple[int, int]:
    out_s, out_zp = scale_zp(call.output_q[0])
    try:
        return ar.activation_range_quantized(activation(call), out_s, out_zp,
                                             call.output_dtypes[0])
    except OverflowError as exc:
        raise Refusal(f"{op}: fused activation bound overflows int32 ({exc})") from None


# --------------------------------------------------------------------------------------------
# Geometry


def _conv_geometry(call: OpCall, kh: int, kw: int, h: int, w: int):
    o = call.options
    padding = o.get("padding", "SAME")
    sh, sw = int(o.get("stride_h", 0)), int(o.get("stride_w", 0))
    dh, dw = int(o.get("dilation_h_factor", 1)), int(o.get("dilation_w_factor", 1))
    out_h, pad_h = window_geometry(padding, h, kh, sh, dh)
    out_w, pad_w = window_geometry(padding, w, kw, sw, dw)
    return out_h, out_w, pad_h, pad_w, sh, sw, dh, dw


def _check_window_options(op: str, call: OpCall) -> None:
    o = call.options
    require(int(o.get("stride_h", 0)) > 0 and int(o.get("stride_w", 0)) > 0, op,
            f"strides must be positive (stride_h={o.get('stride_h', 0)}, "
            f"stride_w={o.get('stride_w', 0)})")
    require(int(o.get("dilation_h_factor", 1)) > 0 and int(o.get("dilation_w_factor", 1)) > 0,
            op, "dilation factors must be positive")
    require(o.get("padding", "SAME") in ("SAME", "VALID"), op,
            f"unknown padding {o.get('padding')!r}")


def _im2col(x: np.ndarray, kh: int, kw: int, geometry) -> np.ndarray:
    """(N*OH*OW, KH*KW*C) patches of a zero-centred float64 NHWC input (padding = 0)."""
    out_h, out_w, pad_h, pad_w, sh, sw, dh, dw = geometry
    n, h, w, c = x.shape
    # A 1x1 window without padding is a strided slice (padding after the image, which an
    # explicit q.conv2d padding may ask for, needs the general path).
    inside = (out_h - 1) * sh < h and (out_w - 1) * sw < w
    if kh == 1 and kw == 1 and pad_h == 0 and pad_w == 0 and inside:
        cols = x[:, : (out_h - 1) * sh + 1 : sh, : (out_w - 1) * sw + 1 : sw, :]
        return np.ascontiguousarray(cols).reshape(n * out_h * out_w, c)
    xp = pad_spatial(x, pad_h, pad_w, out_h, out_w, kh, kw, sh, sw, dh, dw, 0.0)
    view = windowed_view(xp, out_h, out_w, kh, kw, sh, sw, dh, dw)
    return view.reshape(n * out_h * out_w, kh * kw * c)


# --------------------------------------------------------------------------------------------
# CONV_2D


def _check_conv(op: str, call: OpCall) -> None:
    xs, ws = input_shape(call, 0), input_shape(call, 1)
    _check_window_options(op, call)
    if ws is not None:
        require(len(ws) == 4, op, f"filter must be 4-D, got shape {ws}")
        require(all(d > 0 for d in ws), op, f"filter dimensions must be positive, got {ws}")
    if xs is not None:
        require(len(xs) == 4, op, f"input must be 4-D, got shape {xs}")
    if xs is not None and ws is not None:
        require(xs[3] % ws[3] == 0, op,
                f"input channels {xs[3]} not a multiple of filter input channels {ws[3]}")
        groups = xs[3] // ws[3]
        require(ws[0] % groups == 0, op,
                f"output channels {ws[0]} not a multiple of the {groups} groups")
    require(len(call.inputs) >= 3 and (call.inputs[2] is not None or
                                       (len(call.input_q) > 2 and call.input_q[2] is not None)),
            op, "the reference kernel requires a bias tensor")
    _check_quantized_filter(op, call, quantized_dim=0, channels=ws[0] if ws else None)


def _check_quantized_filter(op: str, call: OpCall, quantized_dim: int,
                            channels: int | None) -> None:
    if not np.dtype(call.output_dtypes[0]) == np.int8:
        return
    w_q = call.input_q[1]
    require(w_q is not None and call.input_q[0] is not None and call.output_q[0] is not None, op,
            "int8 input, filter and output need quantization parameters")
    require(bool(np.all(w_q.zero_point == 0)), op,
            f"filter zero points must be 0, got {w_q.zero_point.tolist()}")
    if channels is not None:
        require(w_q.scale.size in (1, channels), op,
                f"{w_q.scale.size} filter scales for {channels} output channels")
    if w_q.scale.size > 1:
        require(w_q.axis == quantized_dim, op,
                f"per-channel filter quantization must be on dimension {quantized_dim}, "
                f"got {w_q.axis}")
    bias = call.inputs[2] if len(call.inputs) > 2 else None
    if bias is not None:
        require(bias.dtype == np.int32, op, f"int8 bias must be int32, got {bias.dtype}")
        if channels is not None:
            require(bias.size == channels, op,
                    f"bias has {bias.size} elements for {channels} output channels")
    _activation_bounds(op, call)


@register("CONV_2D", check=_check_conv, output_types=(np.int8, np.float32))
def conv_2d(call: OpCall) -> list[np.ndarray]:
    x, w = call.inputs[0], call.inputs[1]
    bias = call.inputs[2] if len(call.inputs) > 2 else None
    n, h, wd, cin = x.shape
    cout, kh, kw, cin_g = w.shape
    groups = cin // cin_g
    geometry = _conv_geometry(call, kh, kw, h, wd)
    out_h, out_w = geometry[0], geometry[1]
    if np.dtype(call.output_dtypes[0]) == np.int8:
        in_s, in_zp = scale_zp(call.input_q[0])
        xf = x.astype(np.float64) - in_zp
        wf = w.astype(np.float64)
        acc = grouped_matmul(xf, wf, groups, kh, kw, geometry)
        acc = acc.reshape(n, out_h, out_w, cout)
        if bias is not None:
            acc = acc + bias.astype(np.int64)
        acc = ar.wrap_int32(acc)
        m, s = per_channel_multipliers(call.input_q[0], call.input_q[1], call.output_q[0], cout)
        lo, hi = _activation_bounds("CONV_2D", call)
        _, out_zp = scale_zp(call.output_q[0])
        return [requantize_mbqm(acc, m, s, out_zp, lo, hi)]
    if np.dtype(call.output_dtypes[0]) == np.float32:
        return [_conv_float(x, w, bias, groups, geometry, call)]
    raise UnsupportedOp(f"CONV_2D: no kernel for {x.dtype} input")


def grouped_matmul(xf: np.ndarray, wf: np.ndarray, groups: int, kh: int, kw: int,
                   geometry) -> np.ndarray:
    """Exact int64 accumulators of a grouped convolution of float64 NHWC input (centred, so
    padding with 0 is padding with the zero point) by OHWI filters; `geometry` as
    `_conv_geometry` gives it. Shared by the tfl, q and accel semantics."""
    cout, _, _, cin_g = wf.shape
    per_group = cout // groups
    outs = []
    for g in range(groups):
        cols = _im2col(xf[..., g * cin_g:(g + 1) * cin_g], kh, kw, geometry)
        wg = wf[g * per_group:(g + 1) * per_group].reshape(per_group, kh * kw * cin_g)
        outs.append(cols @ wg.T)
    acc = outs[0] if groups == 1 else np.concatenate(outs, axis=1)
    return acc.astype(np.int64)


def _conv_float(x, w, bias, groups, geometry, call) -> np.ndarray:
    """reference_ops::Conv (float): per output, total += in * filter in (ky, kx, ci) order,
    out-of-image taps skipped, then clamp(total + bias)."""
    out_h, out_w, pad_h, pad_w, sh, sw, dh, dw = geometry
    n = x.shape[0]
    cout, kh, kw, cin_g = w.shape
    per_group = cout // groups
    xp = pad_spatial(x.astype(np.float32), pad_h, pad_w, out_h, out_w, kh, kw, sh, sw, dh, dw,
                     0.0)
    wf = w.astype(np.float32)
    masks = _skip_masks(geometry, kh, kw, x.shape[1], x.shape[2], bias)
    total = np.zeros((n, out_h, out_w, cout), dtype=np.float32)
    prod = np.empty((n, out_h, out_w, per_group), dtype=np.float32)
    for ky in range(kh):
        for kx in range(kw):
            rows = xp[:, ky * dh: ky * dh + (out_h - 1) * sh + 1: sh,
                      kx * dw: kx * dw + (out_w - 1) * sw + 1: sw, :]
            for g in range(groups):
                sl = slice(g * per_group, (g + 1) * per_group)
                for ci in range(cin_g):
                    c = g * cin_g + ci
                    np.multiply(rows[..., c: c + 1], wf[sl, ky, kx, ci], out=prod)
                    if masks is None:
                        total[..., sl] += prod
                    else:
                        total[..., sl] = np.where(masks[ky][kx], total[..., sl] + prod,
                                                  total[..., sl])
    return _bias_and_clamp(total, bias, call)


def _skip_masks(geometry, kh: int, kw: int, h: int, w: int, bias):
    """Where each tap lies inside the image, or None when adding the zero padding's products
    is exact: an outside tap then adds +-0.0, which only flips the sign of a total of -0.0,
    and adding the bias (0.0 when absent) erases that unless the bias is -0.0 itself."""
    if bias is None or not np.any((bias == 0) & np.signbit(bias)):
        return None
    out_h, out_w, pad_h, pad_w, sh, sw, dh, dw = geometry
    ys = [_tap_inside(out_h, sh, dh, ky, pad_h, h) for ky in range(kh)]
    xs = [_tap_inside(out_w, sw, dw, kx, pad_w, w) for kx in range(kw)]
    return [[(ys[ky][:, None] & xs[kx][None, :])[None, :, :, None] for kx in range(kw)]
            for ky in range(kh)]


def _bias_and_clamp(total: np.ndarray, bias, call) -> np.ndarray:
    if bias is not None:
        total = total + bias.astype(np.float32)
    else:
        total = total + np.float32(0.0)
    lo, hi = ar.activation_range_float(activation(call))
    return np.minimum(np.maximum(total, np.float32(lo)), np.float32(hi))


def _tap_inside(out_size: int, stride: int, dilation: int, k: int, pad: int,
                in_size: int) -> np.ndarray:
    pos = np.arange(out_size) * stride - pad + k * dilation
    return (pos >= 0) & (pos < in_size)


# --------------------------------------------------------------------------------------------
# DEPTHWISE_CONV_2D


def _check_depthwise(op: str, call: OpCall) -> None:
    xs, ws = input_shape(call, 0), input_shape(call, 1)
    _check_window_options(op, call)
    if ws is not None:
        require(len(ws) == 4, op, f"filter must be 4-D, got shape {ws}")
        require(ws[0] == 1, op, f"filter must have shape [1, H, W, C*M], got {ws}")
        require(all(d > 0 for d in ws), op, f"filter dimensions must be positive, got {ws}")
    if xs is not None:
        require(len(xs) == 4, op, f"input must be 4-D, got shape {xs}")
    if xs is not None and ws is not None:
        require(ws[3] % xs[3] == 0, op,
                f"filter channels {ws[3]} not a multiple of input channels {xs[3]}")
    require(len(call.inputs) < 3 or call.inputs[2] is not None or
            (len(call.input_q) > 2 and call.input_q[2] is not None), op,
            "the bias input is listed but omitted (-1); the reference kernel then expects it")
    _check_quantized_filter(op, call, quantized_dim=3, channels=ws[3] if ws else None)


@register("DEPTHWISE_CONV_2D", check=_check_depthwise, output_types=(np.int8, np.float32))
def depthwise_conv_2d(call: OpCall) -> list[np.ndarray]:
    x, w = call.inputs[0], call.inputs[1]
    bias = call.inputs[2] if len(call.inputs) > 2 else None
    n, h, wd, cin = x.shape
    _, kh, kw, cout = w.shape
    mult = cout // cin
    geometry = _conv_geometry(call, kh, kw, h, wd)
    out_h, out_w, pad_h, pad_w, sh, sw, dh, dw = geometry
    if np.dtype(call.output_dtypes[0]) == np.int8:
        _, in_zp = scale_zp(call.input_q[0])
        # |acc| <= taps * 255 * 128 < 2**31 for any real filter: int32 products are exact.
        xi = x.astype(np.int32) - in_zp
        if mult > 1:
            xi = np.repeat(xi, mult, axis=3)  # output channel m + ic*mult reads channel ic
        xp = pad_spatial(xi, pad_h, pad_w, out_h, out_w, kh, kw, sh, sw, dh, dw, 0)
        wi = w.astype(np.int32)
        acc = np.zeros((n, out_h, out_w, cout), dtype=np.int32)
        for ky in range(kh):
            for kx in range(kw):
                tap = xp[:, ky * dh: ky * dh + (out_h - 1) * sh + 1: sh,
                         kx * dw: kx * dw + (out_w - 1) * sw + 1: sw, :]
                acc += tap * wi[0, ky, kx]
        acc = acc.astype(np.int64)
        if bias is not None:
            acc = ar.wrap_int32(acc + bias.astype(np.int64))
        m, s = per_channel_multipliers(call.input_q[0], call.input_q[1], call.output_q[0], cout)
        lo, hi = _activation_bounds("DEPTHWISE_CONV_2D", call)
        _, out_zp = scale_zp(call.output_q[0])
        return [requantize_mbqm(acc, m, s, out_zp, lo, hi)]
    if np.dtype(call.output_dtypes[0]) == np.float32:
        return [_depthwise_float(x, w, bias, mult, geometry, call)]
    raise UnsupportedOp(f"DEPTHWISE_CONV_2D: no kernel for {x.dtype} input")


def _depthwise_float(x, w, bias, mult, geometry, call) -> np.ndarray:
    """reference_ops::DepthwiseConv (float): total += in * filter over (ky, kx) in order, then
    clamp(total + bias)."""
    out_h, out_w, pad_h, pad_w, sh, sw, dh, dw = geometry
    n = x.shape[0]
    _, kh, kw, cout = w.shape
    xf = x.astype(np.float32)
    if mult > 1:
        xf = np.repeat(xf, mult, axis=3)
    xp = pad_spatial(xf, pad_h, pad_w, out_h, out_w, kh, kw, sh, sw, dh, dw, 0.0)
    masks = _skip_masks(geometry, kh, kw, x.shape[1], x.shape[2], bias)
    wf = w.astype(np.float32)
    total = np.zeros((n, out_h, out_w, cout), dtype=np.float32)
    for ky in range(kh):
        for kx in range(kw):
            tap = xp[:, ky * dh: ky * dh + (out_h - 1) * sh + 1: sh,
                     kx * dw: kx * dw + (out_w - 1) * sw + 1: sw, :]
            if masks is None:
                total += tap * wf[0, ky, kx]
            else:
                total = np.where(masks[ky][kx], total + tap * wf[0, ky, kx], total)
    return _bias_and_clamp(total, bias, call)


# --------------------------------------------------------------------------------------------
# FULLY_CONNECTED


def _fc_output_shape(call: OpCall, x_shape, w_shape) -> tuple[int, ...]:
    units, cols = w_shape
    if call.options.get("keep_num_dims", False):
        return tuple(x_shape[:-1]) + (units,)
    size = int(np.prod(x_shape))
    return (c_div(size, cols) if cols else 0, units)


def _check_fc(op: str, call: OpCall) -> None:
    xs, ws = input_shape(call, 0), input_shape(call, 1)
    if ws is not None:
        require(len(ws) == 2, op, f"weights must be 2-D, got shape {ws}")
    if xs is not None and ws is not None and ws[1] > 0:
        if call.options.get("keep_num_dims", False):
            require(xs[-1] == ws[1], op,
                    f"keep_num_dims needs input depth {xs[-1]} == weights depth {ws[1]}")
        require(int(np.prod(xs)) % ws[1] == 0, op,
                f"input of {int(np.prod(xs))} elements is not a whole number of rows of {ws[1]}")
    require(call.options.get("weights_format", "DEFAULT") == "DEFAULT", op,
            f"weights_format {call.options.get('weights_format')} is not supported")
    bias = call.inputs[2] if len(call.inputs) > 2 else None
    if bias is not None and ws is not None:
        require(bias.size == ws[0], op, f"bias has {bias.size} elements for {ws[0]} units")
    if np.dtype(call.output_dtypes[0]) != np.int8:
        return
    in_q, w_q, out_q = call.input_q[0], call.input_q[1], call.output_q[0]
    require(in_q is not None and w_q is not None and out_q is not None, op,
            "int8 input, weights and output need quantization parameters")
    if w_q.scale.size > 1:
        require(w_q.axis == 0, op, f"per-channel weights must be quantized on dimension 0, "
                                   f"got {w_q.axis}")
        if ws is not None:
            require(w_q.scale.size == ws[0], op,
                    f"{w_q.scale.size} weight scales for {ws[0]} units")
    elif len(call.inputs) > 2 and (bias is not None or
                                   (len(call.input_q) > 2 and call.input_q[2] is not None)):
        # GetQuantizedConvolutionMultipler: the bias scale must match input * weight scale.
        bias_s, _ = scale_zp(call.input_q[2] if len(call.input_q) > 2 else None)
        product = float(np.float32(in_q.scale[0])) * float(np.float32(w_q.scale[0]))
        out_s = float(np.float32(out_q.scale[0]))
        require(abs(product - bias_s) / out_s <= 0.02, op,
                f"bias scale {bias_s:g} differs from input_scale * weight_scale {product:g} by "
                f"more than 2% of the output scale {out_s:g}")
    if bias is not None:
        require(bias.dtype in (np.int32, np.int64), op,
                f"int8 bias must be int32, got {bias.dtype}")
    _activation_bounds(op, call)


@register("FULLY_CONNECTED", check=_check_fc, output_types=(np.int8, np.float32))
def fully_connected(call: OpCall) -> list[np.ndarray]:
    x, w = call.inputs[0], call.inputs[1]
    bias = call.inputs[2] if len(call.inputs) > 2 else None
    units, cols = w.shape
    out_shape = _fc_output_shape(call, x.shape, w.shape)
    if np.dtype(call.output_dtypes[0]) == np.int8:
        in_s, in_zp = scale_zp(call.input_q[0])
        w_q = call.input_q[1]
        out_s, out_zp = scale_zp(call.output_q[0])
        per_channel = w_q.scale.size > 1
        w_zp = 0 if per_channel else int(w_q.zero_point[0])
        rows = x.reshape(-1, cols).astype(np.float64) - in_zp
        acc = (rows @ (w.astype(np.float64) - w_zp).T).astype(np.int64)
        if bias is not None:
            acc = acc + bias.astype(np.int64)
        acc = ar.wrap_int32(acc)
        # The current reference kernel requantizes in double: round(acc * effective scale).
        w_scales = np.asarray(w_q.scale, dtype=np.float32).astype(np.float64)
        effective = float(np.float32(in_s)) * w_scales / float(np.float32(out_s))
        scaled = ar.float_to_int32(ar.round_half_away(acc.astype(np.float64) * effective))
        out = ar.wrap_int32(scaled + out_zp)
        lo, hi = _activation_bounds("FULLY_CONNECTED", call)
        return [np.clip(out, lo, hi).astype(np.int8).reshape(out_shape)]
    if np.dtype(call.output_dtypes[0]) == np.float32:
        return [_fc_float(x.reshape(-1, cols), w, bias, call).reshape(out_shape)]
    raise UnsupportedOp(f"FULLY_CONNECTED: no kernel for {x.dtype} input")


def _fc_float(rows, w, bias, call) -> np.ndarray:
    """reference_ops::FullyConnected (float): total += in * w in order, then + bias, clamp."""
    rows = rows.astype(np.float32)
    wf = w.astype(np.float32)
    total = np.zeros((rows.shape[0], wf.shape[0]), dtype=np.float32)
    for d in range(wf.shape[1]):
        total += rows[:, d: d + 1] * wf[:, d]
    return _bias_and_clamp(total, bias, call)
