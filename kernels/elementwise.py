"""Element-wise ops as LiteRT's reference kernels compute them: ADD, SUB, MUL, DIV, POW,
SQUARED_DIFFERENCE, MAXIMUM, MINIMUM (broadcasting, fused activations), NEG, SQRT, RSQRT, the
activation ops (PRELU and GELU among them), QUANTIZE, DEQUANTIZE, SOFTMAX and LOG_SOFTMAX."""

from __future__ import annotations

import numpy as np

from qaccel.kernels import arithmetic as ar
from qaccel.kernels.base import (
    KernelError,
    OpCall,
    Refusal,
    UnsupportedOp,
    activation,
    f32,
    input_dtype,
    input_shape,
    register,
    require,
    scale_zp,
    static_input_shape,
)


def _out_dtype(call: OpCall) -> np.dtype:
    return np.dtype(call.output_dtypes[0])


def _quantized_bounds(op: str, call: OpCall) -> tuple[int, int]:
    out_s, out_zp = scale_zp(call.output_q[0])
    try:
        return ar.activation_range_quantized(activation(call), out_s, out_zp, _out_dtype(call))
    except OverflowError as exc:
        raise Refusal(f"{op}: fused activation bound overflows int32 ({exc})") from None


def _float_clamp(x: np.ndarray, call: OpCall) -> np.ndarray:
    lo, hi = ar.activation_range_float(activation(call))
    return np.minimum(np.maximum(x, np.float32(lo)), np.float32(hi)).astype(np.float32)


def _int32_clamp(x: np.ndarray, call: OpCall) -> np.ndarray:
    lo, hi = ar.activation_range_int32(activation(call))
    return np.clip(ar.wrap_int32(x), lo, hi).astype(np.int32)


# --------------------------------------------------------------------------------------------
# ADD / SUB


def _check_binary(op: str, call: OpCall) -> None:
    a, b = input_shape(call, 0), input_shape(call, 1)
    if a is not None and b is not None:
        try:
            np.broadcast_shapes(a, b)
        except ValueError:
            raise Refusal(f"{op}: shapes {list(a)} and {list(b)} are not broadcastable") from None
        require(max(len(a), len(b)) <= 6, op, "broadcasting is limited to 6 dimensions")
    if call.inputs[0] is not None and call.inputs[1] is not None:
        require(call.inputs[0].dtype == call.inputs[1].dtype, op,
                f"input types differ ({call.inputs[0].dtype}, {call.inputs[1].dtype})")


def add_sub_params(op: str, call: OpCall):
    """Prepare of ADD/SUB for int8: (left shift, input multipliers, output multiplier)."""
    s1, _ = scale_zp(call.input_q[0])
    s2, _ = scale_zp(call.input_q[1])
    out_s, _ = scale_zp(call.output_q[0])
    left_shift = 20
    # 2 * max(float, float) is a float product; the divisions below are in double.
    twice_max = float(f32(2) * max(f32(s1), f32(s2)))
    real_1 = float(f32(s1)) / twice_max
    real_2 = float(f32(s2)) / twice_max
    real_out = twice_max / float(f32(float(1 << left_shift)) * f32(out_s))
    scales = f"scales {s1:g}, {s2:g} -> {out_s:g}"
    m1, sh1 = _smaller_than_one(op, real_1, "input 1 multiplier", scales)
    m2, sh2 = _smaller_than_one(op, real_2, "input 2 multiplier", scales)
    if op == "SUB" and real_out > 1:
        mo, sho = ar.quantize_multiplier_scalar(real_out)
    else:
        mo, sho = _smaller_than_one(op, real_out, "output multiplier", scales)
    return left_shift, (m1, sh1), (m2, sh2), (mo, sho)


def _smaller_than_one(op: str, real: float, what: str, scales: str) -> tuple[int, int]:
    """`QuantizeMultiplierSmallerThanOneExp`, whose CHECKs abort on values outside (0, 1)."""
    if not 0.0 < real < 1.0:
        raise Refusal(f"{op}: {what} {real:.9g} is outside (0, 1) ({scales})")
    m, s = ar.quantize_multiplier_scalar(real)
    if s > 0:
        raise Refusal(f"{op}: {what} {real:.9g} rounds up to 1.0 ({scales})")
    return m, s


def _check_add_sub(op: str, call: OpCall) -> None:
    _check_binary(op, call)
    if _out_dtype(call) != np.int8:
        return
    for i, q in enumerate((call.input_q[0], call.input_q[1], call.output_q[0])):
        require(q is not None, op, f"int8 {'output' if i == 2 else f'input {i + 1}'} "
                                   "needs quantization parameters")
        require(-128 <= int(q.zero_point[0]) <= 127, op,
                f"zero point {int(q.zero_point[0])} outside the int8 range")
    add_sub_params(op, call)
    _quantized_bounds(op, call)


def _scaled_input(x: np.ndarray, zp: int, left_shift: int, mult) -> np.ndarray:
    shifted = (x.astype(np.int64) - zp) << left_shift
    return ar.multiply_by_quantized_multiplier(shifted, mult[0], mult[1])


def _rounding_divide_by_signed_pot(x: np.ndarray, multiplier: int, shift: int,
                                   vector_lanes: int) -> np.ndarray:
    """`MultiplyByQuantizedMultiplierSmallerThanOneExp(x, M, shift)`.

    For shift > 0 (only SUB, with an output multiplier above 1, gets there) gemmlowp's
    RoundingDivideByPOT runs with a negative exponent: undefined behaviour, which LiteRT's
    x86-64 build resolves two ways. Its mask `(1ll << -shift) - 1` is -1 either way. Scalar
    code shifts by `-shift & 31`, i.e. `x >> (32 - shift)`; the 4-lane SSE loop of the
    non-broadcasting kernel shifts by a huge count, filling with the sign bit. So the first
    `vector_lanes` flat elements (a multiple of 4, 0 when broadcasting) get the sign fill and
    the rest the scalar shift; both add 1 when `x > threshold` with threshold -1 + (x < 0).
    """
    high = ar.saturating_rounding_doubling_high_mul(x, multiplier)
    if shift <= 0:
        return ar.rounding_divide_by_pot(high, -shift)
    round_up = high > -1 + (high < 0)
    scalar = (high >> (32 - shift)) + round_up
    vector = np.where(high < 0, -1, 0) + round_up
    lane = np.arange(high.size).reshape(high.shape) < vector_lanes
    return ar.wrap_int32(np.where(lane, vector, scalar))


def _add_sub_int8(op: str, call: OpCall) -> np.ndarray:
    a, b = call.inputs[0], call.inputs[1]
    _, zp1 = scale_zp(call.input_q[0])
    _, zp2 = scale_zp(call.input_q[1])
    _, out_zp = scale_zp(call.output_q[0])
    left_shift, m1, m2, mo = add_sub_params(op, call)
    v1 = _scaled_input(a, zp1, left_shift, m1)
    v2 = _scaled_input(b, zp2, left_shift, m2)
    raw = ar.wrap_int32(v1 + v2 if op == "ADD" else v1 - v2)
    rank = max(a.ndim, b.ndim)
    same_shape = (1,) * (rank - a.ndim) + a.shape == (1,) * (rank - b.ndim) + b.shape
    lanes = (raw.size // 4) * 4 if same_shape else 0
    out = _rounding_divide_by_signed_pot(raw, mo[0], mo[1], lanes) + out_zp
    lo, hi = _quantized_bounds(op, call)
    return np.clip(out, lo, hi).astype(np.int8)


def _add_sub(op: str, call: OpCall) -> np.ndarray:
    dtype = _out_dtype(call)
    a, b = call.inputs[0], call.inputs[1]
    if dtype == np.int8:
        return _add_sub_int8(op, call)
    if dtype == np.float32:
        r = a.astype(np.float32) + b.astype(np.float32) if op == "ADD" else \
            a.astype(np.float32) - b.astype(np.float32)
        return _float_clamp(r, call)
    if dtype in (np.int32, np.int64):
        r = a.astype(np.int64) + b.astype(np.int64) if op == "ADD" else \
            a.astype(np.int64) - b.astype(np.int64)
        if dtype == np.int32:
            return _int32_clamp(r, call)
        return r
    raise UnsupportedOp(f"{op}: no kernel for {dtype} tensors")


def add(call: OpCall) -> list[np.ndarray]:
    return [_add_sub("ADD", call)]


def sub(call: OpCall) -> list[np.ndarray]:
    return [_add_sub("SUB", call)]


# ADD and SUB share a check but need distinct kernels.
register("ADD", check=_check_add_sub)(add)
register("SUB", check=_check_add_sub)(sub)


# --------------------------------------------------------------------------------------------
# MUL


def _check_mul(op: str, call: OpCall) -> None:
    _check_binary(op, call)
    if _out_dtype(call) == np.int8:
        for q in (call.input_q[0], call.input_q[1], call.output_q[0]):
            require(q is not None, op, "int8 inputs and output need quantization parameters")
        _quantized_bounds(op, call)


@register("MUL", check=_check_mul)
def mul(call: OpCall) -> list[np.ndarray]:
    dtype = _out_dtype(call)
    a, b = call.inputs[0], call.inputs[1]
    if dtype == np.int8:
        s1, zp1 = scale_zp(call.input_q[0])
        s2, zp2 = scale_zp(call.input_q[1])
        out_s, out_zp = scale_zp(call.output_q[0])
        real = float(f32(s1) * f32(s2) / f32(out_s))  # computed in float, then widened
        m, s = ar.quantize_multiplier_scalar(real)
        prod = (a.astype(np.int64) - zp1) * (b.astype(np.int64) - zp2)
        out = ar.multiply_by_quantized_multiplier(prod, m, s) + out_zp
        lo, hi = _quantized_bounds("MUL", call)
        return [np.clip(out, lo, hi).astype(np.int8)]
    if dtype == np.float32:
        return [_float_clamp(a.astype(np.float32) * b.astype(np.float32), call)]
    if dtype == np.int32:
        return [_int32_clamp(a.astype(np.int64) * b.astype(np.int64), call)]
    if dtype == np.int64:
        return [a.astype(np.int64) * b.astype(np.int64)]
    raise UnsupportedOp(f"MUL: no kernel for {dtype} tensors")


# --------------------------------------------------------------------------------------------
# RELU family


_RELU_BOUNDS = {"RELU": (0.0, np.inf), "RELU6": (0.0, 6.0), "RELU_N1_TO_1": (-1.0, 1.0),
                "RELU_0_TO_1": (0.0, 1.0)}


def _relu_int8(op: str, call: OpCall) -> np.ndarray:
    """`QuantizedReluX`: requantize to the output scale, then clamp to the float bounds
    quantized with roundf in float."""
    x = call.inputs[0]
    in_s, in_zp = scale_zp(call.input_q[0])
    out_s, out_zp = scale_zp(call.output_q[0])
    m, s = ar.quantize_multiplier_scalar(float(f32(in_s) / f32(out_s)))
    act_min, act_max = _RELU_BOUNDS[op]
    lo = max(-128, out_zp + int(ar.round_half_away(f32(act_min) / f32(out_s))))
    hi = 127 if np.isinf(act_max) else \
        min(127, out_zp + int(ar.round_half_away(f32(act_max) / f32(out_s))))
    out = out_zp + ar.multiply_by_quantized_multiplier(x.astype(np.int64) - in_zp, m, s)
    return np.clip(out, lo, hi).astype(np.int8)


def _relu_kernel(op: str):
    def kernel(call: OpCall) -> list[np.ndarray]:
        dtype = _out_dtype(call)
        if dtype == np.int8:
            return [_relu_int8(op, call)]
        if dtype == np.float32:
            x = call.inputs[0].astype(np.float32)
            lo, hi = _RELU_BOUNDS[op]
            # Compare-and-select like the C++ code: -0.0 and NaN pass through unchanged.
            r = np.where(x < lo, np.float32(lo), x) if np.isinf(hi) else \
                np.where(x > hi, np.float32(hi), np.where(x < lo, np.float32(lo), x))
            return [r.astype(np.float32)]
        raise UnsupportedOp(f"{op}: no kernel for {dtype} tensors")

    kernel.__name__ = op.lower()
    return kernel


def _check_unary_quantized(op: str, call: OpCall) -> None:
    if _out_dtype(call) == np.int8:
        require(call.input_q[0] is not None and call.output_q[0] is not None, op,
                "int8 input and output need quantization parameters")


for _op in _RELU_BOUNDS:
    register(_op, check=_check_unary_quantized)(_relu_kernel(_op))


# --------------------------------------------------------------------------------------------
# LEAKY_RELU


def _check_leaky_relu(op: str, call: OpCall) -> None:
    _check_unary_quantized(op, call)
    if _out_dtype(call) == np.int16:
        require(call.input_q[0] is not None and call.output_q[0] is not None, op,
                "int16 input and output need quantization parameters")
        require(scale_zp(call.input_q[0])[1] == 0 and scale_zp(call.output_q[0])[1] == 0, op,
                "int16 zero points must be 0")


@register("LEAKY_RELU", check=_check_leaky_relu)
def leaky_relu(call: OpCall) -> list[np.ndarray]:
    dtype = _out_dtype(call)
    x = call.inputs[0]
    alpha = f32(call.options.get("alpha", 0.0))
    if dtype in (np.int8, np.int16):
        in_s, in_zp = scale_zp(call.input_q[0])
        out_s, out_zp = scale_zp(call.output_q[0])
        # Both multipliers are float expressions widened to double.
        m_alpha, s_alpha = ar.quantize_multiplier_scalar(float(f32(in_s) * alpha / f32(out_s)))
        m_id, s_id = ar.quantize_multiplier_scalar(float(f32(in_s) / f32(out_s)))
        v = x.astype(np.int64) - in_zp
        identity = ar.multiply_by_quantized_multiplier(v, m_id, s_id)
        scaled_alpha = ar.multiply_by_quantized_multiplier(v, abs(m_alpha), s_alpha)
        if m_alpha < 0:
            scaled_alpha = -scaled_alpha
        out = out_zp + np.where(v >= 0, identity, scaled_alpha)
        return [np.clip(out, *ar.storage_range(dtype)).astype(dtype)]
    if dtype == np.float32:
        xf = x.astype(np.float32)
        return [np.where(xf > 0, xf, xf * alpha).astype(np.float32)]
    raise UnsupportedOp(f"LEAKY_RELU: no kernel for {dtype} tensors")


# --------------------------------------------------------------------------------------------
# LOGISTIC / TANH: int8 goes through a 256-entry table built in Prepare, even in the reference
# kernels (activations.cc: LUTPopulate for kGenericOptimized and kReference alike).


def _logistic_f32(v: np.ndarray) -> np.ndarray:
    e = ar.libm_expf(-v)
    return (f32(1.0) / (f32(1.0) + e)).astype(np.float32)


def _tanh_f32(v: np.ndarray) -> np.ndarray:
    return ar.libm_tanhf(v)


def lut_int8(in_s: float, in_zp: int, out_s: float, out_zp: int, fn) -> np.ndarray:
    """`LUTPopulateInt8`: the table as int8 values indexed by (input value + 128)."""
    values = np.arange(-128, 128, dtype=np.int64)
    dequantized = (f32(in_s) * (values - in_zp).astype(np.float32)).astype(np.float32)
    transformed = fn(dequantized)
    inverse_scale = f32(1.0) / f32(out_s)
    rescaled = ar.round_half_away((transformed * inverse_scale).astype(np.float32))
    quantized = ar.float_to_int32((rescaled + f32(out_zp)).astype(np.float32))
    return np.clip(quantized, -128, 127).astype(np.int8)


def lut_int16(in_s: float, in_zp: int, out_s: float, out_zp: int, fn) -> np.ndarray:
    """`LUTPopulateInt16<float>`: 513 int16 samples over the input range, each biased by
    half the interpolation error at its step's midpoint; float32 all along."""
    i16_min, i16_max = f32(-32768), f32(32767)
    input_min = f32(in_s) * f32(-32768 - in_zp)
    input_max = f32(in_s) * f32(32767 - in_zp)
    output_min = f32(out_s) * f32(-32768 - out_zp)
    output_max = f32(out_s) * f32(32767 - out_zp)
    steps = 512
    step = (input_max - input_min) / f32(steps)
    half_step = step / f32(2)
    inv = f32(65536) / (output_max - output_min)
    i = np.arange(steps, dtype=np.float32)
    at = (input_min + i * step).astype(np.float32)
    val = fn(at)
    val_mid = fn((at + half_step).astype(np.float32))
    val_next = fn((input_min + (i + f32(1)) * step).astype(np.float32))
    rnd = ar.round_half_away
    sample = rnd((val * inv).astype(np.float32))
    interp = rnd((((val_next * inv).astype(np.float32) + sample) / f32(2)).astype(np.float32))
    mid = rnd((val_mid * inv).astype(np.float32))
    bias = rnd(((interp - mid).astype(np.float32) / f32(2)).astype(np.float32))
    body = np.clip((sample - bias).astype(np.float32), i16_min, i16_max)
    last = np.clip(rnd((fn(np.float32([input_max])) * inv).astype(np.float32)), i16_min, i16_max)
    return np.concatenate([body, last]).astype(np.int16)


def lut_lookup_int16(x: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """`LUTLookup` of int16 values: the sample below and the slope to the next, in Q0.7."""
    v = x.astype(np.int64)
    index = 256 + (v >> 7)
    offset = v & 0x7F
    base = lut.astype(np.int64)[index]
    slope = ar.wrap_int16(lut.astype(np.int64)[index + 1] - base)
    return ar.wrap_int16(base + ((slope * offset + 64) >> 7)).astype(np.int16)


def _check_logistic(op: str, call: OpCall) -> None:
    _check_unary_quantized(op, call)
    if _out_dtype(call) == np.int8:
        out_s, _ = scale_zp(call.output_q[0])
        require(float(f32(out_s)) == 1.0 / 256, op,
                f"int8 output scale must be exactly 1/256, got {out_s:.9g}")


def _lut_kernel(op: str, fn):
    def kernel(call: OpCall) -> list[np.ndarray]:
        dtype = _out_dtype(call)
        x = call.inputs[0]
        if dtype == np.int8:
            in_s, in_zp = scale_zp(call.input_q[0])
            out_s, out_zp = scale_zp(call.output_q[0])
            table = lut_int8(in_s, in_zp, out_s, out_zp, fn)
            return [table[x.astype(np.int64) + 128]]
        if dtype == np.float32:
            return [_float_activation(op, x.astype(np.float32))]
        raise UnsupportedOp(f"{op}: no kernel for {dtype} tensors")

    kernel.__name__ = op.lower()
    return kernel


def _float_activation(op: str, x: np.ndarray) -> np.ndarray:
    if op == "TANH":
        return _tanh_f32(x)
    # reference_ops::Logistic (float) cuts off both tails.
    upper, lower = f32(16.619047164916992188), f32(-9.0)
    mid = _logistic_f32(np.clip(x, lower, upper))
    low = ar.libm_expf(x)
    return np.where(x > upper, f32(1.0), np.where(x < lower, low, mid)).astype(np.float32)


register("LOGISTIC", check=_check_logistic)(_lut_kernel("LOGISTIC", _logistic_f32))
def _check_tanh(op: str, call: OpCall) -> None:
    _check_unary_quantized(op, call)
    _same_type(op, call)


register("TANH", check=_check_tanh)(_lut_kernel("TANH", _tanh_f32))


# --------------------------------------------------------------------------------------------
# HARD_SWISH (reference_ops::HardSwish, int16 fixed point)


def hard_swish_params(call: OpCall) -> tuple[int, int, int, int]:
    in_s, _ = scale_zp(call.input_q[0])
    out_s, _ = scale_zp(call.output_q[0])
    hires_input_scale = f32(1.0 / 128.0) * f32(in_s)
    reluish_scale = f32(3.0) / f32(32768.0)
    out_m32, out_exp = ar.quantize_multiplier_scalar(float(hires_input_scale / f32(out_s)))
    rel_m32, rel_exp = ar.quantize_multiplier_scalar(float(hires_input_scale / reluish_scale))
    return (ar.downscale_int32_to_int16_multiplier(out_m32), out_exp,
            ar.downscale_int32_to_int16_multiplier(rel_m32), rel_exp)


def _check_hard_swish(op: str, call: OpCall) -> None:
    _check_unary_quantized(op, call)
    if _out_dtype(call) == np.int8:
        _, out_exp, _, _ = hard_swish_params(call)
        in_s, _ = scale_zp(call.input_q[0])
        out_s, _ = scale_zp(call.output_q[0])
        require(out_exp <= 0, op, f"output multiplier exponent {out_exp} > 0 (input scale "
                                  f"{in_s:g} too large for output scale {out_s:g})")


@register("HARD_SWISH", check=_check_hard_swish)
def hard_swish(call: OpCall) -> list[np.ndarray]:
    dtype = _out_dtype(call)
    x = call.inputs[0]
    if dtype == np.int8:
        _, in_zp = scale_zp(call.input_q[0])
        _, out_zp = scale_zp(call.output_q[0])
        out_m16, out_exp, rel_m16, rel_exp = hard_swish_params(call)
        v = ar.wrap_int16(x.astype(np.int64) - in_zp)
        hires = ar.wrap_int16(v * (1 << 7))
        preshift = ar.saturating_rounding_doubling_high_mul_int16(hires, out_m16)
        reluish = hires
        if rel_exp > 0:
            reluish = ar.saturating_left_shift_int16(reluish, rel_exp - 1)
        reluish = ar.saturating_rounding_doubling_high_mul_int16(reluish, rel_m16)
        if rel_exp > 0:
            reluish = ar.saturating_left_shift_int16(reluish, 1)
        if rel_exp < 0:
            reluish = ar.rounding_divide_by_pot_int16(reluish, -rel_exp)
        reluish = ar.wrap_int16((reluish + (1 << 15)) >> 1)
        pre_out = ar.saturating_doubling_high_mul_int16(reluish, preshift)
        out = ar.rounding_divide_by_pot_int16(pre_out, -out_exp)
        out = ar.wrap_int16(out + out_zp)
        return [np.clip(out, -128, 127).astype(np.int8)]
    if dtype == np.float32:
        xf = x.astype(np.float32)
        relu6 = np.minimum(f32(6.0), np.maximum(f32(0.0), xf + f32(3.0)))
        with np.errstate(invalid="ignore"):  # -inf * 0 is NaN in C++ too
            return [((xf * relu6) / f32(6.0)).astype(np.float32)]
    raise UnsupportedOp(f"HARD_SWISH: no kernel for {dtype} tensors")


# --------------------------------------------------------------------------------------------
# QUANTIZE / DEQUANTIZE


def _check_quantize(op: str, call: OpCall) -> None:
    out_q = call.output_q[0]
    require(out_q is not None, op, "output needs quantization parameters")
    in_dtype = call.inputs[0].dtype if call.inputs[0] is not None else None
    out_dtype = _out_dtype(call)
    if in_dtype is not None and in_dtype != np.float32:
        require(call.input_q[0] is not None, op, "quantized input needs quantization parameters")
        allowed = {np.dtype(np.int8): (np.int8, np.uint8, np.int16),
                   np.dtype(np.uint8): (np.int8, np.uint8, np.int16),
                   np.dtype(np.int16): (np.int8, np.int16, np.int32),
                   np.dtype(np.int32): (np.int8, np.int16)}
        require(in_dtype in allowed and out_dtype in [np.dtype(t) for t in allowed[in_dtype]],
                op, f"{in_dtype} -> {out_dtype} is not supported")
        if in_dtype == np.int16 and out_dtype == np.int16:
            require(int(call.input_q[0].zero_point[0]) == 0 and int(out_q.zero_point[0]) == 0,
                    op, "int16 -> int16 requires zero points 0")


@register("QUANTIZE", check=_check_quantize)
def quantize(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    out_dtype = _out_dtype(call)
    out_q = call.output_q[0]
    lo, hi = ar.storage_range(out_dtype)
    if x.dtype == np.float32:
        if out_q.scale.size > 1:
            shape = [1] * x.ndim
            shape[out_q.axis] = -1
            scale = np.asarray(out_q.scale, dtype=np.float32).reshape(shape)
            zp = np.asarray(out_q.zero_point, dtype=np.int64).reshape(shape)
        else:
            scale, zp = f32(out_q.scale[0]), int(out_q.zero_point[0])
        r = ar.round_half_away((x / scale).astype(np.float32))
        q = ar.wrap_int32(ar.float_to_int32(r) + zp)
        return [np.clip(q, lo, hi).astype(out_dtype)]
    in_s, in_zp = scale_zp(call.input_q[0])
    out_s, out_zp = scale_zp(out_q)
    m, s = ar.quantize_multiplier_scalar(float(np.float32(in_s)) / float(np.float32(out_s)))
    out = ar.multiply_by_quantized_multiplier(x.astype(np.int64) - in_zp, m, s) + out_zp
    return [np.clip(out, lo, hi).astype(out_dtype)]


@register("DEQUANTIZE")
def dequantize(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    q = call.input_q[0]
    if x.dtype == np.float16:
        return [x.astype(np.float32)]
    if q is None:
        raise UnsupportedOp("DEQUANTIZE: input has no quantization parameters")
    if q.scale.size > 1:
        shape = [1] * x.ndim
        shape[q.axis] = -1
        scale = np.asarray(q.scale, dtype=np.float32).reshape(shape)
        zp = np.asarray(q.zero_point, dtype=np.int64).reshape(shape)
    else:
        scale, zp = np.float64(np.float32(q.scale[0])), int(q.zero_point[0])
    # float(double(scale) * (q - zp)): the product is exact in double, so one rounding.
    return [(np.asarray(scale, dtype=np.float64) * (x.astype(np.int64) - zp)).astype(np.float32)]


# --------------------------------------------------------------------------------------------
# SOFTMAX (reference_ops::Softmax for int8: gemmlowp fixed point, no lookup table)

_SCALED_DIFF_INTEGER_BITS = 5
_ACCUMULATION_INTEGER_BITS = 12


def softmax_params(call: OpCall) -> tuple[int, int, int]:
    """`PreprocessSoftmaxScaling` + diff_min: (input multiplier, left shift, diff_min)."""
    beta = float(f32(call.options.get("beta", 0.0)))
    in_s, _ = scale_zp(call.input_q[0])
    real = min(beta * float(f32(in_s)) * float(1 << (31 - _SCALED_DIFF_INTEGER_BITS)),
               float((1 << 31) - 1))
    if not real > 1.0:
        raise Refusal(
            f"SOFTMAX: beta * input_scale * 2**26 = {beta:g} * {in_s:g} * 2**26 = {real:.6g} "
            "must exceed 1 (the reference kernel's QuantizeMultiplierGreaterThanOne aborts)")
    m, left_shift = ar.quantize_multiplier_scalar(real)
    diff_min = -ar.calculate_input_radius(_SCALED_DIFF_INTEGER_BITS, left_shift)
    return m, left_shift, diff_min


def _check_softmax(op: str, call: OpCall) -> None:
    xs = input_shape(call, 0)
    if xs is not None:
        require(len(xs) >= 1, op, "input must have at least one dimension")
    dtype = _out_dtype(call)
    if dtype not in (np.int8, np.int16) or call.inputs[0] is not None and \
            call.inputs[0].dtype != np.int8:
        return
    require(call.input_q[0] is not None and call.output_q[0] is not None, op,
            "int8 input and output need quantization parameters")
    out_s, out_zp = scale_zp(call.output_q[0])
    if dtype == np.int8:
        require(out_zp == -128, op, f"int8 output zero point must be -128, got {out_zp}")
        require(abs(float(f32(out_s)) - float(f32(1.0 / 256))) <= float(f32(0.001 / 256)), op,
                f"int8 output scale must be 1/256, got {out_s:.9g}")
    softmax_params(call)


@register("SOFTMAX", check=_check_softmax)
def softmax(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    dtype = _out_dtype(call)
    if x.dtype == np.int8 and dtype in (np.int8, np.int16):
        return [_softmax_int8(x, call, dtype)]
    if x.dtype == np.float32:
        return [_softmax_float(x, float(call.options.get("beta", 1.0)))]
    raise UnsupportedOp(f"SOFTMAX: no kernel for {x.dtype} -> {dtype}")


_SOFTMAX_EXP_TABLES: dict[tuple[float, float], tuple[np.ndarray, np.ndarray, np.ndarray]] = {}


def _softmax_exp_table(call: OpCall):
    """For every int8 difference x - max(x) (-255..0, indexed from 0): whether the kernel
    uses it, its exponential (Q0.31) and that exponential in Q12.19 (0 where unused). The
    exponential is most of the kernel's work and depends on the difference alone, so it is
    computed once per (beta, input scale), which fix `softmax_params`, by the same
    arithmetic."""
    key = (float(f32(call.options.get("beta", 0.0))), scale_zp(call.input_q[0])[0])
    table = _SOFTMAX_EXP_TABLES.get(key)
    if table is None:
        m, left_shift, diff_min = softmax_params(call)
        diff = np.arange(-255, 1, dtype=np.int64)
        used = diff >= diff_min
        rescaled = ar.saturating_rounding_doubling_high_mul(np.where(used, diff, 0) << left_shift,
                                                            m)  # fmt: skip
        exp_q0 = ar.exp_on_negative_values(rescaled, _SCALED_DIFF_INTEGER_BITS)
        exp_q12 = ar.rounding_divide_by_pot(exp_q0, _ACCUMULATION_INTEGER_BITS)
        table = used, exp_q0, np.where(used, exp_q12, 0)
        _SOFTMAX_EXP_TABLES[key] = table
    return table


def _softmax_int8(x: np.ndarray, call: OpCall, out_dtype) -> np.ndarray:
    used_of, exp_q0_of, exp_q12_of = _softmax_exp_table(call)
    xi = x.astype(np.int64)
    at = xi - xi.max(axis=-1, keepdims=True) + 255  # int8 differences: -255..0
    used, exp_q0 = used_of[at], exp_q0_of[at]
    sum_of_exps = ar.wrap_int32(exp_q12_of[at].sum(axis=-1, keepdims=True))
    shifted_scale, num_bits_over_unit = ar.get_reciprocal(sum_of_exps, _ACCUMULATION_INTEGER_BITS)
    bits = np.dtype(out_dtype).itemsize * 8
    exponent = num_bits_over_unit + 31 - bits
    if np.any((exponent < 0) | (exponent > 31)):
        # The int8 kernel's TFLITE_CHECK(exponent <= 31) aborts when a row's exponentials
        # sum to 512 or more times the largest one: wide rows with many near-maximal values.
        raise KernelError(
            f"SOFTMAX: a row of {x.shape[-1]} values sums to too many exponentials for the "
            f"{np.dtype(out_dtype)} reference kernel (its TFLITE_CHECK aborts LiteRT)")
    unsat = ar.rounding_divide_by_pot(
        ar.saturating_rounding_doubling_high_mul(shifted_scale, exp_q0), exponent)
    lo, hi = ar.storage_range(out_dtype)
    out = np.clip(unsat + lo, lo, hi)
    return np.where(used, out, lo).astype(out_dtype)


def _softmax_float(x: np.ndarray, beta: float) -> np.ndarray:
    """reference_ops::Softmax (float): exp((x - max) * beta) in float, sum in order, divide."""
    xf = x.astype(np.float32)
    mx = xf.max(axis=-1, keepdims=True)
    e = ar.libm_expf(((xf - mx) * f32(beta)).astype(np.float32))
    total = np.zeros(e.shape[:-1] + (1,), dtype=np.float32)
    for c in range(e.shape[-1]):
        total = total + e[..., c:c + 1]
    return (e / total).astype(np.float32)


# --------------------------------------------------------------------------------------------
# Shared by the ops below


def _clamp_float(x: np.ndarray, lo: float, hi: float) -> np.ndarray:
    """`ActivationFunctionWithMinMax` on floats: std::min(std::max(x, lo), hi), whose
    compare-and-select keeps NaN and the sign of a zero equal to a bound."""
    x = np.where(x < np.float32(lo), np.float32(lo), x)
    return np.where(np.float32(hi) < x, np.float32(hi), x).astype(np.float32)


def _same_type(op: str, call: OpCall) -> None:
    """The output has the input's type (LiteRT's Prepare checks it, or sets it)."""
    x = input_dtype(call, 0)
    if x is not None:
        require(x == _out_dtype(call), op,
                f"output type {_out_dtype(call)} differs from the input type {x}")


def _check_broadcast_inputs(op: str, call: OpCall) -> None:
    """Two inputs of one type whose shapes broadcast, as `CalculateShapeForBroadcast` and
    `BroadcastBinaryOpSimple` (at most 8 dimensions) accept them."""
    a, b = static_input_shape(call, 0), static_input_shape(call, 1)
    if a is not None and b is not None:
        try:
            np.broadcast_shapes(a, b)
        except ValueError:
            raise Refusal(f"{op}: shapes {list(a)} and {list(b)} are not broadcastable") from None
        if a != b:
            require(max(len(a), len(b)) <= 8, op, "broadcasting is limited to 8 dimensions")
    x, y = input_dtype(call, 0), input_dtype(call, 1)
    if x is not None and y is not None:
        require(x == y, op, f"input types differ ({x}, {y})")
        require(_out_dtype(call) == x, op,
                f"output type {_out_dtype(call)} differs from the input type {x}")


def _quantized_pair(op: str, call: OpCall) -> None:
    require(all(q is not None for q in (*call.input_q[:2], call.output_q[0])), op,
            "quantized inputs and output need quantization parameters")


# --------------------------------------------------------------------------------------------
# NEG (reference_ops::Negate: the stored values negated, whatever the quantization)


def _check_neg(op: str, call: OpCall) -> None:
    _same_type(op, call)
    dtype = _out_dtype(call)
    require(dtype in (np.float32, np.float16, np.int8, np.int16, np.int32, np.int64), op,
            f"{dtype} is not supported")


@register("NEG", check=_check_neg)
def neg(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    dtype = _out_dtype(call)
    if dtype == np.float32:
        return [np.negative(x.astype(np.float32))]
    if dtype in (np.int8, np.int16, np.int32, np.int64):
        return [np.negative(x.astype(np.int64)).astype(dtype)]  # -(-128) wraps to -128
    raise UnsupportedOp(f"NEG: no kernel for {dtype} tensors")


# --------------------------------------------------------------------------------------------
# SQRT / RSQRT (elementwise.cc)


def _check_sqrt_like(op: str, call: OpCall) -> None:
    _same_type(op, call)
    dtype = _out_dtype(call)
    require(dtype in (np.float32, np.int8, np.int16), op, f"{dtype} is not supported")
    quantized = dtype == np.int8 or (dtype == np.int16 and call.input_q[0] is not None)
    if quantized:
        require(call.input_q[0] is not None and call.output_q[0] is not None, op,
                "quantized input and output need quantization parameters")
        if dtype == np.int16:
            require(scale_zp(call.input_q[0])[1] == 0 and scale_zp(call.output_q[0])[1] == 0,
                    op, "int16 zero points must be 0")


@register("SQRT", check=_check_sqrt_like)
def sqrt(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    dtype = _out_dtype(call)
    if dtype == np.float32:
        with np.errstate(invalid="ignore"):
            return [np.sqrt(x.astype(np.float32))]
    if call.input_q[0] is None:
        raise UnsupportedOp(f"SQRT: no kernel for unquantized {dtype} tensors")
    in_s, in_zp = scale_zp(call.input_q[0])
    out_s, out_zp = scale_zp(call.output_q[0])
    dequantized = (f32(in_s) * (x.astype(np.int64) - in_zp).astype(np.float32))
    if np.any(dequantized < 0):
        raise KernelError("SQRT: is only defined for non-negative values")
    root = np.sqrt(dequantized.astype(np.float32))
    quantized = ar.wrap_int32(ar.float_to_int32((root / f32(out_s)).astype(np.float32)) + out_zp)
    return [np.clip(quantized, *ar.storage_range(dtype)).astype(dtype)]


def rsqrt_params(call: OpCall) -> tuple[int, int]:
    """`SetRsqrtOutputMultiplier`: 1 / (sqrtf(input scale) * output scale), the division in
    double."""
    in_s, _ = scale_zp(call.input_q[0])
    out_s, _ = scale_zp(call.output_q[0])
    return ar.quantize_multiplier_scalar(1.0 / float(np.sqrt(f32(in_s)) * f32(out_s)))


@register("RSQRT", check=_check_sqrt_like)
def rsqrt(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    dtype = _out_dtype(call)
    if dtype == np.float32:
        with np.errstate(divide="ignore", invalid="ignore"):
            return [(f32(1.0) / np.sqrt(x.astype(np.float32))).astype(np.float32)]
    if dtype == np.int16 and call.input_q[0] is not None:
        if np.any(x < 0):
            raise KernelError("RSQRT: is only defined for positive values")
        in_s, _ = scale_zp(call.input_q[0])
        out_s, _ = scale_zp(call.output_q[0])

        def inverse_root(v: np.ndarray) -> np.ndarray:
            with np.errstate(divide="ignore", invalid="ignore"):
                r = (f32(1.0) / np.sqrt(v)).astype(np.float32)
            return np.where(v <= 0, f32(32767) * f32(out_s), r).astype(np.float32)

        return [lut_lookup_int16(x, lut_int16(in_s, 0, out_s, 0, inverse_root))]
    if dtype != np.int8:
        raise UnsupportedOp(f"RSQRT: no kernel for {dtype} tensors")
    _, in_zp = scale_zp(call.input_q[0])
    _, out_zp = scale_zp(call.output_q[0])
    if np.any(x.astype(np.int64) < in_zp):
        raise KernelError("RSQRT: is only defined for positive values")
    multiplier, shift = rsqrt_params(call)
    # One output per int8 value: a table over value - zero point (0 .. 255).
    value = np.arange(-128, 128, dtype=np.int64) - in_zp
    inv_m, inv_s = ar.inv_sqrt_quantized_multiplier_exp(np.maximum(value, 0))
    k_shift = 20
    data = ar.multiply_by_quantized_multiplier(np.ones_like(value), inv_m, inv_s + k_shift)
    out = ar.multiply_by_quantized_multiplier(data, multiplier, shift - k_shift) + out_zp
    table = np.where(value == 0, 127, np.clip(out, -128, 127)).astype(np.int8)
    return [table[x.astype(np.int64) + 128]]


# --------------------------------------------------------------------------------------------
# SQUARED_DIFFERENCE (squared_difference.cc)


def squared_difference_params(op: str, call: OpCall):
    """Prepare of the int8 kernel: input multipliers, output multiplier (left shift 7)."""
    s1, _ = scale_zp(call.input_q[0])
    s2, _ = scale_zp(call.input_q[1])
    out_s, _ = scale_zp(call.output_q[0])
    twice_max = float(f32(2) * max(f32(s1), f32(s2)))
    real_out = twice_max * twice_max / float(f32(1 << 14) * f32(out_s))
    scales = f"scales {s1:g}, {s2:g} -> {out_s:g}"
    m1 = _smaller_than_one(op, float(f32(s1)) / twice_max, "input 1 multiplier", scales)
    m2 = _smaller_than_one(op, float(f32(s2)) / twice_max, "input 2 multiplier", scales)
    mo = _smaller_than_one(op, real_out, "output multiplier", scales)
    return m1, m2, mo


def _check_squared_difference(op: str, call: OpCall) -> None:
    _check_broadcast_inputs(op, call)
    require(_out_dtype(call) in (np.float32, np.int32, np.int8), op,
            f"{_out_dtype(call)} is not supported")
    if _out_dtype(call) == np.int8:
        _quantized_pair(op, call)
        for q in (*call.input_q[:2], call.output_q[0]):
            zp = scale_zp(q)[1]
            require(-128 <= zp <= 127, op, f"zero point {zp} outside the int8 range")
        squared_difference_params(op, call)


@register("SQUARED_DIFFERENCE", check=_check_squared_difference)
def squared_difference(call: OpCall) -> list[np.ndarray]:
    a, b = call.inputs[0], call.inputs[1]
    dtype = _out_dtype(call)
    if dtype == np.float32:
        d = (a.astype(np.float32) - b.astype(np.float32)).astype(np.float32)
        return [(d * d).astype(np.float32)]
    if dtype == np.int32:
        d = ar.wrap_int32(a.astype(np.int64) - b.astype(np.int64))
        return [ar.wrap_int32(d * d).astype(np.int32)]
    if dtype == np.int8:
        _, zp1 = scale_zp(call.input_q[0])
        _, zp2 = scale_zp(call.input_q[1])
        _, out_zp = scale_zp(call.output_q[0])
        m1, m2, mo = squared_difference_params("SQUARED_DIFFERENCE", call)
        v1 = _scaled_input(a, zp1, 7, m1)
        v2 = _scaled_input(b, zp2, 7, m2)
        diff = v1 - v2
        out = ar.multiply_by_quantized_multiplier(diff * diff, *mo) + out_zp
        return [np.clip(out, -128, 127).astype(np.int8)]
    raise UnsupportedOp(f"SQUARED_DIFFERENCE: no kernel for {dtype} tensors")


# --------------------------------------------------------------------------------------------
# MAXIMUM / MINIMUM (maximum_minimum.cc: the stored values compared, whatever the
# quantization; `a > b ? a : b`, so a NaN in either input gives b)


def _maximum_minimum(op: str):
    def kernel(call: OpCall) -> list[np.ndarray]:
        a, b = call.inputs[0], call.inputs[1]
        dtype = _out_dtype(call)
        if dtype not in (np.float32, np.int8, np.uint8, np.int16, np.int32, np.int64):
            raise UnsupportedOp(f"{op}: no kernel for {dtype} tensors")
        with np.errstate(invalid="ignore"):
            pick_a = a > b if op == "MAXIMUM" else a < b
        return [np.where(pick_a, a, b).astype(dtype)]

    kernel.__name__ = op.lower()
    return kernel


def _check_maximum_minimum(op: str, call: OpCall) -> None:
    _check_broadcast_inputs(op, call)
    require(_out_dtype(call) in (np.float32, np.float16, np.uint8, np.int8, np.int16, np.int32,
                                 np.int64), op, f"{_out_dtype(call)} is not supported")


for _op in ("MAXIMUM", "MINIMUM"):
    register(_op, check=_check_maximum_minimum)(_maximum_minimum(_op))


# --------------------------------------------------------------------------------------------
# DIV (div.cc)


def div_params(call: OpCall) -> tuple[int, int]:
    s1, _ = scale_zp(call.input_q[0])
    s2, _ = scale_zp(call.input_q[1])
    out_s, _ = scale_zp(call.output_q[0])
    return ar.quantize_multiplier_scalar(float(f32(s1) / (f32(s2) * f32(out_s))))


def _check_div(op: str, call: OpCall) -> None:
    _check_broadcast_inputs(op, call)
    dtype = _out_dtype(call)
    require(dtype in (np.float32, np.int32, np.uint8, np.int8, np.int16), op,
            f"{dtype} is not supported")
    if dtype in (np.uint8, np.int8, np.int16):
        _quantized_pair(op, call)
        _quantized_bounds(op, call)


def _rounding_divide_by_any_pot(x: np.ndarray, exponent: np.ndarray) -> np.ndarray:
    """gemmlowp's scalar `RoundingDivideByPOT` for any exponent, as LiteRT's x86-64 build
    runs it: outside [0, 31] its mask `(1ll << exponent) - 1` truncates to -1 and the int32
    shift counts modulo 32, so a quotient far below one output step still rounds up to 1."""
    inside = (exponent >= 0) & (exponent <= 31)
    normal = ar.rounding_divide_by_pot(x, np.clip(exponent, 0, 31))
    wide = (x >> (exponent & 31)) + (x > -1 + (x < 0))
    return np.where(inside, normal, wide)


@register("DIV", check=_check_div)
def div(call: OpCall) -> list[np.ndarray]:
    a, b = call.inputs[0], call.inputs[1]
    dtype = _out_dtype(call)
    if dtype == np.float32:
        lo, hi = ar.activation_range_float(activation(call))
        with np.errstate(divide="ignore", invalid="ignore"):
            q = (a.astype(np.float32) / b.astype(np.float32)).astype(np.float32)
        return [_clamp_float(q, lo, hi)]
    if dtype == np.int32:
        if np.any(b == 0):
            raise KernelError("DIV: division by zero")
        lo, hi = ar.activation_range_int32(activation(call))
        return [np.clip(ar.trunc_div(a, b), lo, hi).astype(np.int32)]
    if dtype in (np.int8, np.uint8, np.int16):
        _, zp1 = scale_zp(call.input_q[0])
        _, zp2 = scale_zp(call.input_q[1])
        _, out_zp = scale_zp(call.output_q[0])
        if np.any(b.astype(np.int64) == zp2):
            raise KernelError("DIV: division by zero (a divisor equals its zero point)")
        multiplier, shift = div_params(call)
        v1, v2 = np.broadcast_arrays(a.astype(np.int64) - zp1, b.astype(np.int64) - zp2)
        v1 = np.where(v2 < 0, -v1, v1)
        v2 = np.abs(v2)
        inverse, recip_shift = ar.get_reciprocal(v2, 31)
        headroom = ar.count_leading_sign_bits(v1)
        quotient = ar.saturating_rounding_doubling_high_mul(ar.wrap_int32(v1 << headroom),
                                                            inverse)
        exponent = recip_shift + headroom - shift
        high = ar.saturating_rounding_doubling_high_mul(quotient, multiplier)
        out = _rounding_divide_by_any_pot(high, exponent) + out_zp
        lo, hi = _quantized_bounds("DIV", call)
        return [np.clip(out, lo, hi).astype(dtype)]
    raise UnsupportedOp(f"DIV: no kernel for {dtype} tensors")


# --------------------------------------------------------------------------------------------
# POW (pow.cc: std::pow of floats)


def _check_pow(op: str, call: OpCall) -> None:
    _check_broadcast_inputs(op, call)
    require(_out_dtype(call) in (np.float32, np.int32), op,
            f"{_out_dtype(call)} is not supported")


@register("POW", check=_check_pow)
def pow_(call: OpCall) -> list[np.ndarray]:
    a, b = call.inputs[0], call.inputs[1]
    dtype = _out_dtype(call)
    with np.errstate(all="ignore"):
        if dtype == np.float32:
            return [ar.libm_powf(a, b)]
        if dtype == np.int32:
            if np.any(b < 0):
                raise KernelError("POW: negative exponents are not supported for int32")
            r = np.power(a.astype(np.float64), b.astype(np.float64))
            return [ar.float_to_int32(r).astype(np.int32)]
    raise UnsupportedOp(f"POW: no kernel for {dtype} tensors")


# --------------------------------------------------------------------------------------------
# PRELU (activations.cc, reference_ops::Prelu / BroadcastPrelu4DSlow)


def prelu_params(call: OpCall) -> tuple[tuple[int, int], tuple[int, int]]:
    in_s, _ = scale_zp(call.input_q[0])
    alpha_s, _ = scale_zp(call.input_q[1])
    out_s, _ = scale_zp(call.output_q[0])
    return (ar.quantize_multiplier_scalar(float(f32(in_s) / f32(out_s))),
            ar.quantize_multiplier_scalar(float(f32(in_s) * f32(alpha_s) / f32(out_s))))


def _check_prelu(op: str, call: OpCall) -> None:
    x, alpha = static_input_shape(call, 0), static_input_shape(call, 1)
    if x is not None and alpha is not None:
        try:
            out = np.broadcast_shapes(x, alpha)
        except ValueError:
            raise Refusal(f"{op}: shapes {list(x)} and {list(alpha)} are not broadcastable") \
                from None
        require(tuple(out) == tuple(x), op,
                f"alpha of shape {list(alpha)} broadcasts the input {list(x)} to {list(out)}")
        if x != alpha:
            require(len(out) <= 8, op, "broadcasting is limited to 8 dimensions")
    _same_type(op, call)
    dtype = _out_dtype(call)
    require(dtype in (np.float32, np.uint8, np.int8, np.int16), op, f"{dtype} is not supported")
    if dtype in (np.int8, np.int16):
        require(call.input_q[0] is not None and call.output_q[0] is not None, op,
                "quantized input and output need quantization parameters")
        a = input_dtype(call, 1)
        want = np.int8 if dtype == np.int16 else dtype
        if a is not None:
            require(a == want, op, f"alpha must be {np.dtype(want)} for {dtype} input")


@register("PRELU", check=_check_prelu)
def prelu(call: OpCall) -> list[np.ndarray]:
    x, alpha = call.inputs[0], call.inputs[1]
    dtype = _out_dtype(call)
    if dtype == np.float32:
        xf, af = np.broadcast_arrays(x.astype(np.float32), alpha.astype(np.float32))
        return [np.where(xf >= 0, xf, xf * af).astype(np.float32)]
    if dtype in (np.int8, np.int16):
        _, in_zp = scale_zp(call.input_q[0])
        _, alpha_zp = scale_zp(call.input_q[1])
        _, out_zp = scale_zp(call.output_q[0])
        (m1, s1), (m2, s2) = prelu_params(call)
        v, a = np.broadcast_arrays(x.astype(np.int64) - in_zp, alpha.astype(np.int64) - alpha_zp)
        positive = ar.multiply_by_quantized_multiplier(v, m1, s1)
        negative = ar.multiply_by_quantized_multiplier(ar.wrap_int32(v * a), m2, s2)
        out = np.where(v >= 0, positive, negative) + out_zp
        return [np.clip(out, *ar.storage_range(dtype)).astype(dtype)]
    raise UnsupportedOp(f"PRELU: no kernel for {dtype} tensors")


# --------------------------------------------------------------------------------------------
# GELU: int8 through a 256-entry table built in Prepare (activations.cc, LUTPopulate with
# reference_ops::GeluTransform or GeluTransformApproximate)

_SQRT_2_OVER_PI = f32(1.12837916709551257390 * 0.70710678118654752440)  # double, then float


def gelu_f32(x: np.ndarray, approximate: bool) -> np.ndarray:
    """`GeluTransform` / `GeluTransformApproximate`, float32 operation by operation."""
    x = np.asarray(x, dtype=np.float32)
    half = f32(0.5)
    with np.errstate(all="ignore"):
        if approximate:
            cube = (((f32(0.044715) * x) * x) * x).astype(np.float32)
            inner = (_SQRT_2_OVER_PI * (x + cube).astype(np.float32)).astype(np.float32)
            return ((half * x) * (f32(1.0) + ar.libm_tanhf(inner))).astype(np.float32)
        arg = (x * f32(-0.70710678118654752440)).astype(np.float32)
        return ((half * x) * ar.libm_erfcf(arg)).astype(np.float32)


def _check_gelu(op: str, call: OpCall) -> None:
    _same_type(op, call)
    require(_out_dtype(call) in (np.float32, np.float16, np.uint8, np.int8, np.int16), op,
            f"{_out_dtype(call)} is not supported")
    if _out_dtype(call) in (np.int8, np.int16):
        require(call.input_q[0] is not None and call.output_q[0] is not None, op,
                "quantized input and output need quantization parameters")


@register("GELU", check=_check_gelu)
def gelu(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    dtype = _out_dtype(call)
    approximate = bool(call.options.get("approximate", False))
    if dtype == np.int8:
        in_s, in_zp = scale_zp(call.input_q[0])
        out_s, out_zp = scale_zp(call.output_q[0])
        table = lut_int8(in_s, in_zp, out_s, out_zp, lambda v: gelu_f32(v, approximate))
        return [table[x.astype(np.int64) + 128]]
    if dtype == np.int16:
        in_s, in_zp = scale_zp(call.input_q[0])
        out_s, out_zp = scale_zp(call.output_q[0])
        table = lut_int16(in_s, in_zp, out_s, out_zp, lambda v: gelu_f32(v, approximate))
        return [lut_lookup_int16(x, table)]
    raise UnsupportedOp(f"GELU: no kernel for {dtype} tensors")


# --------------------------------------------------------------------------------------------
# LOG_SOFTMAX (reference_integer_ops::LogSoftmax: gemmlowp fixed point)


def log_softmax_params(call: OpCall) -> tuple[int, int, int, int, int]:
    """`PreprocessLogSoftmaxScalingExp` with beta 1: (input multiplier, input left shift,
    reverse scaling multiplier, its shift, diff_min)."""
    in_s, _ = scale_zp(call.input_q[0])
    real = min(float(f32(in_s)) * float(1 << (31 - _SCALED_DIFF_INTEGER_BITS)),
               float((1 << 31) - 1))
    if not real > 1.0:
        raise Refusal(f"LOG_SOFTMAX: input scale {in_s:g} * 2**26 = {real:.6g} must exceed 1 "
                      "(the reference kernel's QuantizeMultiplierGreaterThanOne aborts)")
    m, left_shift = ar.quantize_multiplier_scalar(real)
    reverse = float(1 << (31 - left_shift)) / float(m)
    if not 0.0 < reverse < 1.0:
        raise Refusal(f"LOG_SOFTMAX: reverse scaling {reverse:.9g} is outside (0, 1) "
                      f"(input scale {in_s:g})")
    rm, rs = ar.quantize_multiplier_scalar(reverse)
    if rs > 0:
        raise Refusal(f"LOG_SOFTMAX: reverse scaling {reverse:.9g} rounds up to 1.0")
    diff_min = -ar.calculate_input_radius(_SCALED_DIFF_INTEGER_BITS, left_shift)
    return m, left_shift, rm, rs, diff_min


def _check_log_softmax(op: str, call: OpCall) -> None:
    _same_type(op, call)
    require(_out_dtype(call) in (np.float32, np.uint8, np.int8), op,
            f"{_out_dtype(call)} is not supported")
    xs = static_input_shape(call, 0)
    if xs is not None:
        require(len(xs) >= 1, op, "input must have at least one dimension")
    if _out_dtype(call) != np.int8:
        return
    require(call.input_q[0] is not None and call.output_q[0] is not None, op,
            "int8 input and output need quantization parameters")
    out_s, out_zp = scale_zp(call.output_q[0])
    require(float(f32(out_s)) == 16.0 / 256, op,
            f"int8 output scale must be 16/256, got {out_s:.9g}")
    require(out_zp == 127, op, f"int8 output zero point must be 127, got {out_zp}")
    log_softmax_params(call)


@register("LOG_SOFTMAX", check=_check_log_softmax)
def log_softmax(call: OpCall) -> list[np.ndarray]:
    x = call.inputs[0]
    dtype = _out_dtype(call)
    if dtype == np.float32:
        return [_log_softmax_float(x.astype(np.float32))]
    if dtype != np.int8:
        raise UnsupportedOp(f"LOG_SOFTMAX: no kernel for {dtype} tensors")
    m, left_shift, rm, rs, diff_min = log_softmax_params(call)
    xi = x.astype(np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    diff_q5 = ar.multiply_by_quantized_multiplier(diff, m, left_shift)
    exp_q0 = ar.exp_on_negative_values(diff_q5, _SCALED_DIFF_INTEGER_BITS)
    exp_q12 = ar.rounding_divide_by_pot(exp_q0, _ACCUMULATION_INTEGER_BITS)
    sum_q12 = ar.wrap_int32(np.where(diff >= diff_min, exp_q12, 0).sum(axis=-1, keepdims=True))
    log_sum_q5 = ar.log_x_for_x_greater_than_or_equal_to_1(
        sum_q12, _ACCUMULATION_INTEGER_BITS, _SCALED_DIFF_INTEGER_BITS)
    shifted_log_sum = ar.wrap_int32(log_sum_q5 + ar.INT32_MIN)
    adjusted_diff_min = np.maximum(diff_min - 1,
                                   ar.multiply_by_quantized_multiplier(shifted_log_sum, rm, rs))
    out = ar.rounding_divide_by_pot(ar.wrap_int32(diff_q5 - log_sum_q5), 31 - 5 - 4) + 127
    out = np.clip(out, -128, 127)
    return [np.where(diff > adjusted_diff_min, out, -128).astype(np.int8)]


def _log_softmax_float(x: np.ndarray) -> np.ndarray:
    """reference_ops::LogSoftmax (float): the row maximum by `std::max` from lowest() (a NaN
    never wins), expf of the differences summed in order, then x - max - logf(sum)."""
    mx = np.full(x.shape[:-1] + (1,), np.finfo(np.float32).min, dtype=np.float32)
    for c in range(x.shape[-1]):
        v = x[..., c:c + 1]
        mx = np.where(mx < v, v, mx)
    with np.errstate(all="ignore"):
        total = np.zeros(mx.shape, dtype=np.float32)
        for c in range(x.shape[-1]):
            total = (total + ar.libm_expf((x[..., c:c + 1] - mx).astype(np.float32)))
            total = total.astype(np.float32)
        return ((x - mx).astype(np.float32) - ar.libm_logf(total)).astype(np.float32)
