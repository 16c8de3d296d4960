"""Element-wise ops as LiteRT's reference kernels compute them: ADD, SUB, MUL (broadcasting,
fused activations), the activation ops, QUANTIZE, DEQUANTIZE and SOFTMAX."""

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
    input_shape,
    register,
    require,
    scale_zp,
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


@register("LEAKY_RELU", check=_check_unary_quantized)
def leaky_relu(call: OpCall) -> list[np.ndarray]:
    dtype = _out_dtype(call)
    x = call.inputs[0]
    alpha = f32(call.options.get("alpha", 0.0))
    if dtype == np.int8:
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
        return [np.clip(out, -128, 127).astype(np.int8)]
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
register("TANH", check=_check_unary_quantized)(_lut_kernel("TANH", _tanh_f32))


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


def _softmax_int8(x: np.ndarray, call: OpCall, out_dtype) -> np.ndarray:
    m, left_shift, diff_min = softmax_params(call)
    xi = x.astype(np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    used = diff >= diff_min
    rescaled = ar.saturating_rounding_doubling_high_mul(np.where(used, diff, 0) << left_shift, m)
    exp_q0 = ar.exp_on_negative_values(rescaled, _SCALED_DIFF_INTEGER_BITS)
    exp_q12 = ar.rounding_divide_by_pot(exp_q0, _ACCUMULATION_INTEGER_BITS)
    sum_of_exps = ar.wrap_int32(np.where(used, exp_q12, 0).sum(axis=-1, keepdims=True))
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
