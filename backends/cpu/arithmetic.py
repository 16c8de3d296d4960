"""Vectorized numpy versions of the integer primitives of TFLite's reference kernels.

Every function here reproduces, bit for bit and element-wise over numpy arrays, one helper of
LiteRT's `kernels/internal/{common.h,quantization_util.cc}` or gemmlowp's `fixedpoint.h` as built
by default ("double rounding", no `TFLITE_SINGLE_ROUNDING`), including the way the C++ code
behaves on x86-64 where the standard leaves it undefined (int32 overflow wraps, an out-of-range
float-to-int conversion gives INT32_MIN).

Convention: integer values travel as int64 arrays holding int32 values, so that intermediate
products never overflow numpy's arithmetic; functions that model an int32 C++ result wrap it
back into int32 range where the C++ code could overflow.
"""

from __future__ import annotations

import numpy as np

INT32_MIN = -(2**31)
INT32_MAX = 2**31 - 1
INT16_MIN = -(2**15)
INT16_MAX = 2**15 - 1


def _i64(x) -> np.ndarray:
    return np.asarray(x, dtype=np.int64)


def wrap_int32(x) -> np.ndarray:
    """The int32 two's-complement wrap of int64 values (what a C++ int32 overflow gives)."""
    return _i64(x).astype(np.int32).astype(np.int64)


def wrap_int16(x) -> np.ndarray:
    return _i64(x).astype(np.int16).astype(np.int64)


def trunc_div(a, b) -> np.ndarray:
    """C integer division (truncates toward zero) of int64 arrays."""
    a = _i64(a)
    b = _i64(b)
    q = np.abs(a) // np.abs(b)
    return np.where((a < 0) != (b < 0), -q, q)


def round_half_away(x) -> np.ndarray:
    """`std::round` (TfLiteRound): halves away from zero, in x's own float precision."""
    x = np.asarray(x)
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):  # inf - inf: the NaN is dropped by np.where below
        frac = x - t  # exact in binary floating point
    return t + np.where(np.abs(frac) >= 0.5, np.sign(x), 0).astype(x.dtype)


def float_to_int32(x) -> np.ndarray:
    """`static_cast<int32_t>(float or double)` on x86-64: truncation; NaN or out of range
    gives INT32_MIN (the cvttss2si "integer indefinite" value)."""
    x = np.asarray(x, dtype=np.float64)
    ok = np.isfinite(x) & (x > -2147483649.0) & (x < 2147483648.0)
    return np.where(ok, np.trunc(np.where(ok, x, 0.0)), INT32_MIN).astype(np.int64)


# --------------------------------------------------------------------------------------------
# Quantized multipliers (quantization_util.cc)


def quantize_multiplier(d) -> tuple[np.ndarray, np.ndarray]:
    """`QuantizeMultiplier`: d ~= M * 2**(shift - 31) with M in [2**30, 2**31).

    Accepts a scalar or an array of doubles; returns int64 arrays (M, shift) of d's shape.
    Zero gives (0, 0); a shift below -31 flushes to (0, 0) like TFLite.
    """
    d = np.asarray(d, dtype=np.float64)
    q, shift = np.frexp(d)
    q_fixed = round_half_away(q * float(1 << 31)).astype(np.int64)
    shift = shift.astype(np.int64)
    full = q_fixed == (1 << 31)
    q_fixed = np.where(full, q_fixed // 2, q_fixed)
    shift = np.where(full, shift + 1, shift)
    tiny = shift < -31
    q_fixed = np.where(tiny | (d == 0), 0, q_fixed)
    shift = np.where(tiny | (d == 0), 0, shift)
    return q_fixed, shift


def quantize_multiplier_scalar(d: float) -> tuple[int, int]:
    m, s = quantize_multiplier(d)
    return int(m), int(s)


# --------------------------------------------------------------------------------------------
# gemmlowp fixed-point primitives (int32 raw values)


def saturating_rounding_doubling_high_mul(a, b) -> np.ndarray:
    """gemmlowp `SaturatingRoundingDoublingHighMul` on int32 values (ARM VQRDMULH)."""
    a = _i64(a)
    b = _i64(b)
    ab = a * b
    nudged = ab + np.where(ab >= 0, 1 << 30, 1 - (1 << 30))
    # C++ divides by 2**31 truncating toward zero; >> floors, so fix negative values up.
    high = np.where(nudged >= 0, nudged >> 31, -((-nudged) >> 31))
    overflow = (a == INT32_MIN) & (b == INT32_MIN)
    return np.where(overflow, INT32_MAX, high)


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp `RoundingDivideByPOT`: arithmetic shift right, halves away from zero."""
    x = _i64(x)
    exponent = _i64(exponent)
    mask = (np.int64(1) << exponent) - 1
    remainder = x & mask
    threshold = (mask >> 1) + (x < 0)
    return (x >> exponent) + (remainder > threshold)


def multiply_by_quantized_multiplier(x, multiplier, shift) -> np.ndarray:
    """TFLite `MultiplyByQuantizedMultiplier(int32 x, M, shift)` (double-rounding build).

    The left shift is done in int32 and wraps on overflow like the C++ code.
    """
    shift = _i64(shift)
    left = np.maximum(shift, 0)
    right = np.maximum(-shift, 0)
    shifted = wrap_int32(_i64(x) << left)
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(shifted, multiplier), right)


def saturating_left_shift(x, exponent: int) -> np.ndarray:
    """gemmlowp `SaturatingRoundingMultiplyByPOT<+exponent>` on int32 values."""
    x = _i64(x)
    if exponent == 0:
        return x
    threshold = (1 << (31 - exponent)) - 1
    return np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, x << exponent))


def rounding_half_sum(a, b) -> np.ndarray:
    s = _i64(a) + _i64(b)
    return trunc_div(s + np.where(s >= 0, 1, -1), 2)


# Q-format helpers: a gemmlowp FixedPoint<int32, k> is its raw int32 value; k is implicit.


def _exp_on_interval_between_negative_one_quarter_and_0_excl(a: np.ndarray) -> np.ndarray:
    """exp(a) for Q0.31 a in [-1/4, 0): Taylor expansion around -1/8 (gemmlowp)."""
    srdhm = saturating_rounding_doubling_high_mul
    constant_term = 1895147668  # exp(-1/8)
    constant_1_over_3 = 715827883
    x = wrap_int32(a + (1 << 28))
    x2 = srdhm(x, x)
    x3 = srdhm(x2, x)
    x4 = srdhm(x2, x2)
    x4_over_4 = rounding_divide_by_pot(x4, 2)
    poly = rounding_divide_by_pot(
        wrap_int32(srdhm(wrap_int32(x4_over_4 + x3), constant_1_over_3) + x2), 1
    )
    return wrap_int32(constant_term + srdhm(constant_term, wrap_int32(x + poly)))


_EXP_BARREL = ((-2, 1672461947), (-1, 1302514674), (0, 790015084), (1, 290630308),
               (2, 39332535), (3, 720401), (4, 242))


def exp_on_negative_values(a, integer_bits: int) -> np.ndarray:
    """gemmlowp `exp_on_negative_values` of FixedPoint<int32, integer_bits> raw values a <= 0;
    returns Q0.31 raw values."""
    a = _i64(a)
    fractional_bits = 31 - integer_bits
    one_quarter = 1 << (fractional_bits - 2)
    a_mod_quarter_minus_one_quarter = (a & (one_quarter - 1)) - one_quarter
    result = _exp_on_interval_between_negative_one_quarter_and_0_excl(
        saturating_left_shift(a_mod_quarter_minus_one_quarter, integer_bits)
    )
    remainder = wrap_int32(a_mod_quarter_minus_one_quarter - a)
    for exponent, multiplier in _EXP_BARREL:
        if integer_bits > exponent:
            bit = (remainder >> (fractional_bits + exponent)) & 1
            result = np.where(
                bit != 0, saturating_rounding_doubling_high_mul(result, multiplier), result
            )
    if integer_bits > 5:
        clamp = -(1 << (36 - integer_bits))
        result = np.where(a < clamp, 0, result)
    return np.where(a == 0, INT32_MAX, result)


def one_over_one_plus_x_for_x_in_0_1(a) -> np.ndarray:
    """gemmlowp: 1 / (1 + a) for Q0.31 a in [0, 1), Newton-Raphson; returns Q0.31."""
    srdhm = saturating_rounding_doubling_high_mul
    half_denominator = rounding_half_sum(a, INT32_MAX)
    x = wrap_int32(1515870810 + srdhm(half_denominator, -1010580540))  # Q2: 48/17 - 32/17 d
    one_q2 = 1 << 29
    for _ in range(3):
        one_minus_half_denominator_times_x = wrap_int32(one_q2 - srdhm(half_denominator, x))
        x = wrap_int32(x + saturating_left_shift(srdhm(x, one_minus_half_denominator_times_x), 2))
    return saturating_left_shift(x, 1)


def count_leading_zeros_u32(x) -> np.ndarray:
    """Leading zeros of uint32 values (32 for zero)."""
    x = _i64(x) & 0xFFFFFFFF
    _, exponent = np.frexp(x.astype(np.float64))  # exact: x < 2**53
    return np.where(x == 0, 32, 32 - exponent).astype(np.int64)


def get_reciprocal(x, x_integer_digits: int) -> tuple[np.ndarray, np.ndarray]:
    """TFLite `GetReciprocal`: (Q0.31 raw of 1/x rescaled, num_bits_over_unit)."""
    x = _i64(x)
    headroom_plus_one = count_leading_zeros_u32(x)
    num_bits_over_unit = x_integer_digits - headroom_plus_one
    shifted = ((x & 0xFFFFFFFF) << headroom_plus_one) & 0xFFFFFFFF
    shifted_sum_minus_one = wrap_int32(shifted - (1 << 31))
    return one_over_one_plus_x_for_x_in_0_1(shifted_sum_minus_one), num_bits_over_unit


def calculate_input_radius(input_integer_bits: int, input_left_shift: int,
                           total_signed_bits: int = 31) -> int:
    """`CalculateInputRadius` (float flavour, as built by default)."""
    max_input_rescaled = (
        1.0 * ((1 << input_integer_bits) - 1)
        * float(1 << (total_signed_bits - input_integer_bits))
        / float(1 << input_left_shift)
    )
    return int(np.floor(max_input_rescaled))


# --------------------------------------------------------------------------------------------
# int16 fixed point (HARD_SWISH)


def saturating_rounding_doubling_high_mul_int16(a, b) -> np.ndarray:
    a = _i64(a)
    b = _i64(b)
    ab = a * b
    nudged = ab + np.where(ab >= 0, 1 << 14, 1 - (1 << 14))
    high = trunc_div(nudged, 1 << 15)
    overflow = (a == INT16_MIN) & (b == INT16_MIN)
    return wrap_int16(np.where(overflow, INT16_MAX, high))


def saturating_doubling_high_mul_int16(a, b) -> np.ndarray:
    """TFLite's non-rounding int16 doubling high multiply (reference hard_swish.h)."""
    a = _i64(a)
    b = _i64(b)
    overflow = (a == INT16_MIN) & (b == INT16_MIN)
    return wrap_int16(np.where(overflow, INT16_MAX, trunc_div(a * b, 1 << 15)))


def rounding_divide_by_pot_int16(x, exponent: int) -> np.ndarray:
    """gemmlowp `RoundingDivideByPOT<int16_t>`, including its mask truncation for exponents
    of 16 and above."""
    x = _i64(x)
    mask = int(np.int64((1 << exponent) - 1).astype(np.int16))
    remainder = wrap_int16(x & mask)
    threshold = (mask >> 1) + (x < 0)
    return wrap_int16((x >> exponent) + (remainder > threshold))


def saturating_left_shift_int16(x, amount: int) -> np.ndarray:
    return np.clip(_i64(x) * (1 << amount), INT16_MIN, INT16_MAX)


def downscale_int32_to_int16_multiplier(m: int) -> int:
    if m >= INT32_MAX - (1 << 15):
        return INT16_MAX
    return (m + (1 << 15)) >> 16


# --------------------------------------------------------------------------------------------
# Activation ranges (kernel_util.cc)

_STORAGE_RANGE = {
    np.dtype(np.int8): (-128, 127),
    np.dtype(np.uint8): (0, 255),
    np.dtype(np.int16): (INT16_MIN, INT16_MAX),
    np.dtype(np.int32): (INT32_MIN, INT32_MAX),
}


def storage_range(dtype) -> tuple[int, int]:
    return _STORAGE_RANGE[np.dtype(dtype)]


def quantize_float_to_int32(value: float, scale: float, zero_point: int) -> int:
    """`Quantize` of kernel_util.cc: zp + (int)round(f / scale), division in float."""
    tmp = round_half_away(np.float32(value) / np.float32(scale))
    if not (float(INT32_MIN) <= float(tmp) <= float(INT32_MAX)):
        raise OverflowError(f"{value} / {scale} does not fit int32")
    return int(zero_point) + int(tmp)


def activation_range_quantized(activation: str, scale: float, zero_point: int,
                               dtype) -> tuple[int, int]:
    """`CalculateActivationRangeQuantized`: clamp bounds of a fused activation."""
    qmin, qmax = storage_range(dtype)
    if activation in (None, "NONE"):
        return qmin, qmax
    if activation == "RELU":
        return max(qmin, quantize_float_to_int32(0.0, scale, zero_point)), qmax
    if activation == "RELU6":
        return (max(qmin, quantize_float_to_int32(0.0, scale, zero_point)),
                min(qmax, quantize_float_to_int32(6.0, scale, zero_point)))
    if activation == "RELU_N1_TO_1":
        return (max(qmin, quantize_float_to_int32(-1.0, scale, zero_point)),
                min(qmax, quantize_float_to_int32(1.0, scale, zero_point)))
    raise ValueError(f"unsupported fused activation {activation!r}")


def activation_range_float(activation: str) -> tuple[float, float]:
    """`CalculateActivationRange<float>`: the clamp bounds of a float fused activation."""
    lo, hi = float(np.finfo(np.float32).min), float(np.finfo(np.float32).max)
    if activation in (None, "NONE"):
        return lo, hi
    if activation == "RELU":
        return 0.0, hi
    if activation == "RELU6":
        return 0.0, 6.0
    if activation == "RELU_N1_TO_1":
        return -1.0, 1.0
    raise ValueError(f"unsupported fused activation {activation!r}")


def activation_range_int32(activation: str) -> tuple[int, int]:
    """`CalculateActivationRange<int32_t>` (the bounds are the float ones cast to int)."""
    if activation in (None, "NONE"):
        return INT32_MIN, INT32_MAX
    if activation == "RELU":
        return 0, INT32_MAX
    if activation == "RELU6":
        return 0, 6
    if activation == "RELU_N1_TO_1":
        return -1, 1
    raise ValueError(f"unsupported fused activation {activation!r}")
