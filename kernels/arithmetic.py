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
    """gemmlowp `SaturatingRoundingDoublingHighMul` on int32 values (ARM VQRDMULH).

    gemmlowp adds a nudge of 2**30 (or 1 - 2**30 for a negative product) and divides by
    2**31 truncating toward zero; both cases equal `(a*b + 2**30) >> 31` with an arithmetic
    (flooring) shift, which needs three passes over the data instead of a dozen.
    """
    a = _i64(a)
    b = _i64(b)
    high = a * b
    high += 1 << 30
    high >>= 31
    if np.any(b == INT32_MIN) and np.any(a == INT32_MIN):
        high = np.where((a == INT32_MIN) & (b == INT32_MIN), INT32_MAX, high)
    return high


def rounding_divide_by_pot(x, exponent) -> np.ndarray:
    """gemmlowp `RoundingDivideByPOT`: arithmetic shift right, halves away from zero.

    gemmlowp compares the remainder with a threshold; equivalently, for exponent e > 0,
    `(x + 2**(e-1) - (x < 0)) >> e`.
    """
    x = _i64(x)
    exponent = _i64(exponent)
    if not np.any(exponent):
        return np.broadcast_to(x, np.broadcast_shapes(x.shape, exponent.shape)).copy()
    if x.shape != np.broadcast_shapes(x.shape, exponent.shape):
        x = np.broadcast_to(x, np.broadcast_shapes(x.shape, exponent.shape))
    half = (np.int64(1) << exponent) >> 1
    out = x >> 63  # -1 where x < 0
    if not np.all(exponent > 0):
        out *= exponent > 0
    out += x
    out += half
    out >>= exponent
    return out


def multiply_by_quantized_multiplier(x, multiplier, shift) -> np.ndarray:
    """TFLite `MultiplyByQuantizedMultiplier(int32 x, M, shift)` (double-rounding build).

    The left shift is done in int32 and wraps on overflow like the C++ code.
    """
    shift = _i64(shift)
    x = _i64(x)
    if np.any(shift > 0):
        x = wrap_int32(x << np.maximum(shift, 0))
    return rounding_divide_by_pot(saturating_rounding_doubling_high_mul(x, multiplier),
                                  np.maximum(-shift, 0))


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


def saturating_add(a, b) -> np.ndarray:
    """TFLite's `SaturatingAddNonGemmlowp` on int32 values."""
    return np.clip(_i64(a) + _i64(b), INT32_MIN, INT32_MAX)


def saturating_sub(a, b) -> np.ndarray:
    """TFLite's `SaturatingSub` on int32 values."""
    return np.clip(_i64(a) - _i64(b), INT32_MIN, INT32_MAX)


def saturating_left_shift_param(x, exponent) -> np.ndarray:
    """TFLite's `SaturatingRoundingMultiplyByPOTParam` for exponents >= 0 (element-wise)."""
    x = _i64(x)
    exponent = np.broadcast_to(_i64(exponent), x.shape)
    threshold = (np.int64(1) << (31 - exponent)) - 1
    shifted = x << exponent
    out = np.where(x > threshold, INT32_MAX, np.where(x < -threshold, INT32_MIN, shifted))
    return np.where(exponent == 0, x, out)


def count_leading_sign_bits(x) -> np.ndarray:
    """`CountLeadingSignBits` of int32 values (31 for zero)."""
    x = _i64(x)
    return count_leading_zeros_u32(np.where(x < 0, ~x, x)) - 1


def log_x_for_x_greater_than_or_equal_to_1(x, input_integer_bits: int,
                                           output_integer_bits: int) -> np.ndarray:
    """TFLite's `log_x_for_x_greater_than_or_equal_to_1_impl`: log of FixedPoint<int32,
    input_integer_bits> raw values as FixedPoint<int32, output_integer_bits> raw values."""
    srdhm = saturating_rounding_doubling_high_mul
    accum_bits = output_integer_bits + 1
    log_2, sqrt_sqrt_half, sqrt_half = 1488522236, 1805811301, 1518500250
    alpha_n, alpha_d, alpha_i, alpha_f = 117049297, 127690142, 1057819769, 638450708
    shifted_quarter = int(rounding_divide_by_pot(536870912, accum_bits))
    z_a = _i64(x)
    z_a_headroom_plus_1 = count_leading_zeros_u32(z_a)
    r_a_tmp = saturating_left_shift_param(z_a, z_a_headroom_plus_1 - 1)
    r_a_raw = saturating_left_shift_param(srdhm(r_a_tmp, sqrt_half), 1)
    z_a_pow_2_adj = saturating_add(saturating_left_shift_param(
        input_integer_bits - z_a_headroom_plus_1, 31 - accum_bits), shifted_quarter)
    z_b = srdhm(z_a, sqrt_half)
    z_b_headroom = count_leading_zeros_u32(z_b) - 1
    r_b_raw = saturating_left_shift_param(z_a, z_b_headroom)
    z_b_pow_2_adj = saturating_sub(saturating_left_shift_param(
        input_integer_bits - z_b_headroom, 31 - accum_bits), shifted_quarter)
    r = np.minimum(r_a_raw, r_b_raw)
    z_pow_2_adj = np.maximum(z_a_pow_2_adj, z_b_pow_2_adj)
    p = rounding_half_sum(r, sqrt_sqrt_half)
    q = wrap_int32(r - sqrt_sqrt_half)
    q = wrap_int32(q + q)
    common_sq = srdhm(q, q)
    num = wrap_int32(srdhm(q, r) + srdhm(srdhm(q, common_sq), alpha_n))
    denom_minus_one_0 = wrap_int32(
        srdhm(p, wrap_int32(wrap_int32(alpha_i + q) + srdhm(alpha_d, common_sq)))
        + srdhm(alpha_f, q))
    recip_denom = one_over_one_plus_x_for_x_in_0_1(denom_minus_one_0)
    num_scaled = rounding_divide_by_pot(num, accum_bits)
    result = wrap_int32(srdhm(z_pow_2_adj, log_2) + srdhm(num_scaled, recip_denom))
    return saturating_left_shift(result, accum_bits - output_integer_bits)


def inv_sqrt_quantized_multiplier_exp(x) -> tuple[np.ndarray, np.ndarray]:
    """TFLite's `GetInvSqrtQuantizedMultiplierExp(x, kReverseShift)` of int32 values x >= 0:
    (multiplier, left shift) with 1/sqrt(x) ~= multiplier * 2**(shift - 31)."""
    srdhm = saturating_rounding_doubling_high_mul
    x = _i64(x)
    small = x <= 1
    v = np.where(small, 2, x)
    shift = np.full(v.shape, 11, dtype=np.int64)
    while np.any(v >= (1 << 29)):
        big = v >= (1 << 29)
        v = np.where(big, v // 4, v)
        shift += big
    pairs = (count_leading_zeros_u32(v) - 1) // 2 - 1
    shift -= pairs
    v = v << (2 * pairs)
    half_input = rounding_divide_by_pot(v >> 1, 1)
    half_three = (1 << 28) + (1 << 27)
    y = np.full(v.shape, 1 << 28, dtype=np.int64)  # F3 one
    for _ in range(5):
        y3 = saturating_left_shift(srdhm(srdhm(y, y), y), 6)
        y = saturating_left_shift(wrap_int32(srdhm(half_three, y) - srdhm(half_input, y3)), 3)
    y = srdhm(y, 1518500250)  # times sqrt(2) / 2
    y = np.where(shift < 0, wrap_int32(y << np.maximum(-shift, 0)), y)
    shift = np.maximum(shift, 0)
    return np.where(small, INT32_MAX, y), np.where(small, 0, -shift)


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


# `CalculateActivationRange<T>`: the clamp bounds of a fused activation for float and int32
# tensors (None = the type's own limit).
_ACTIVATION_BOUNDS = {None: (None, None), "NONE": (None, None), "RELU": (0, None),
                      "RELU6": (0, 6), "RELU_N1_TO_1": (-1, 1)}


def _activation_bounds(activation: str, lowest, highest):
    if activation not in _ACTIVATION_BOUNDS:
        raise ValueError(f"unsupported fused activation {activation!r}")
    lo, hi = _ACTIVATION_BOUNDS[activation]
    return (lowest if lo is None else lo), (highest if hi is None else hi)


def activation_range_float(activation: str) -> tuple[float, float]:
    f32_max = float(np.finfo(np.float32).max)
    lo, hi = _activation_bounds(activation, -f32_max, f32_max)
    return float(lo), float(hi)


def activation_range_int32(activation: str) -> tuple[int, int]:
    return _activation_bounds(activation, INT32_MIN, INT32_MAX)


# --------------------------------------------------------------------------------------------
# libm float functions whose rounding the float kernels inherit
#
# LiteRT's float TANH calls the system libm's tanhf. glibc (2.36 here) implements it with the
# fdlibm algorithm below, which is not correctly rounded, so numpy's tanh differs from it in
# the last bit for a few percent of inputs. expf, by contrast, is correctly rounded in
# practice (glibc >= 2.28), so float64 exp rounded to float32 reproduces it.


def _f32_bits(x: np.ndarray) -> np.ndarray:
    return x.astype(np.float32).view(np.int32).astype(np.int64)


def _from_bits(bits: np.ndarray) -> np.ndarray:
    return (bits & 0xFFFFFFFF).astype(np.uint32).view(np.float32)


def libm_expm1f(x) -> np.ndarray:
    """fdlibm `expm1f` (glibc's s_expm1f.c), float32 operation by operation."""
    f = np.float32
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        hx_signed = _f32_bits(x)
        negative = hx_signed < 0
        hx = hx_signed & 0x7FFFFFFF
        ln2_hi, ln2_lo, invln2 = f(6.9313812256e-01), f(9.0580006145e-06), f(1.4426950216e+00)
        q1, q2, q3 = f(-3.3333335072e-02), f(1.5873016091e-03), f(-7.9365076090e-05)
        q4, q5 = f(4.0082177293e-06), f(-2.0109921195e-07)
        one, half = f(1.0), f(0.5)

        # argument reduction
        reduce_ = hx > 0x3EB17218
        near = reduce_ & (hx < 0x3F851592)
        k_far = float_to_int32(invln2 * x + np.where(negative, f(-0.5), f(0.5)))
        k = np.where(near, np.where(negative, -1, 1), np.where(reduce_, k_far, 0))
        t_far = k_far.astype(np.float32)
        hi = np.where(near, np.where(negative, x + ln2_hi, x - ln2_hi), x - t_far * ln2_hi)
        lo = np.where(near, np.where(negative, -ln2_lo, ln2_lo), t_far * ln2_lo)
        xr = np.where(reduce_, hi - lo, x).astype(np.float32)
        c = np.where(reduce_, (hi - xr) - lo, f(0.0)).astype(np.float32)

        hfx = (half * xr).astype(np.float32)
        hxs = (xr * hfx).astype(np.float32)
        r1 = one + hxs * (q1 + hxs * (q2 + hxs * (q3 + hxs * (q4 + hxs * q5))))
        t = f(3.0) - r1 * hfx
        e = hxs * ((r1 - t) / (f(6.0) - xr * t))
        result_k0 = xr - (xr * e - hxs)

        e2 = (xr * (e - c) - c) - hxs
        result_km1 = half * (xr - e2) - half
        result_k1 = np.where(xr < f(-0.25), -f(2.0) * (e2 - (xr + half)), one + f(2.0) * (xr - e2))
        big = (k <= -2) | (k > 56)
        y_big = one - (e2 - xr)
        y_big = _from_bits(_f32_bits(y_big) + (k << 23)) - one
        kk = np.clip(k, 0, 31)
        t_small = _from_bits(0x3F800000 - (0x1000000 >> kk))
        y_small = _from_bits(_f32_bits(t_small - (e2 - xr)) + (k << 23))
        t_mid = _from_bits((0x7F - np.clip(k, 0, 127)) << 23)
        y_mid = _from_bits(_f32_bits((xr - (e2 + t_mid)) + one) + (k << 23))
        result = np.where(k == 0, result_k0,
                          np.where(k == -1, result_km1,
                                   np.where(k == 1, result_k1,
                                            np.where(big, y_big,
                                                     np.where(k < 23, y_small, y_mid)))))
        # special ranges
        result = np.where(hx < 0x33000000, x, result)  # |x| < 2**-25
        result = np.where((hx >= 0x4195B844) & negative, f(-1.0), result)  # x < -27 ln 2
        result = np.where((hx >= 0x42B17218) & ~negative & (x > f(8.8721679688e+01)),
                          np.float32(np.inf), result)
        result = np.where(np.isnan(x), x, result)
        result = np.where(np.isinf(x), np.where(negative, f(-1.0), x), result)
    return result.astype(np.float32)


def libm_tanhf(x) -> np.ndarray:
    """fdlibm `tanhf` (glibc's s_tanhf.c) on top of `libm_expm1f`."""
    f = np.float32
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        ix = _f32_bits(x) & 0x7FFFFFFF
        ax = np.abs(x)
        one, two = f(1.0), f(2.0)
        t_big = libm_expm1f(two * ax)
        z_big = one - two / (t_big + two)
        t_small = libm_expm1f(-two * ax)
        z_small = -t_small / (t_small + two)
        z = np.where(ix >= 0x3F800000, z_big, z_small)
        z = np.where(ix >= 0x41B00000, one, z)  # |x| >= 22: 1 - tiny rounds to 1
        result = np.where(x < 0, -z, z)
        result = np.where(ix < 0x24000000, x * (one + x), result)  # |x| < 2**-55 (and 0)
        result = np.where(np.isnan(x), x, result)
    return result.astype(np.float32)


_EXP2F_TABLE = np.array([
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51,
    0x3fef72b83c7d517b, 0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1,
    0x3fef06fe0a31b715, 0x3feef1a7373aa9cb, 0x3feedea64c123422, 0x3feece086061892d,
    0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429, 0x3feea47eb03a5585,
    0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d,
    0x3feee89f995ad3ad, 0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069,
    0x3fef5818dcfba487, 0x3fef7c97337b9b5f, 0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
], dtype=np.uint64)  # bits of 2**(i/32), minus i << 47 (glibc e_exp2f_data.c)
_EXPF_INV_LN2_N = float.fromhex("0x1.71547652b82fep+0") * 32
_EXPF_SHIFT = float.fromhex("0x1.8p+52")
_EXPF_POLY = (float.fromhex("0x1.c6af84b912394p-5") / 32 / 32 / 32,
              float.fromhex("0x1.ebfce50fac4f3p-3") / 32 / 32,
              float.fromhex("0x1.62e42ff0c52d6p-1") / 32)


def libm_expf(x) -> np.ndarray:
    """glibc's `expf` (2.27 and later): a 32-entry table and a cubic in double precision,
    then one rounding to float. It is not correctly rounded, so float64 exp rounded to
    float32 differs from it for about 3 inputs in 10,000. (glibc's FMA variant changes the
    double result by an ulp at most, which float rounding practically never sees.)"""
    x = np.asarray(x, dtype=np.float32)
    xd = x.astype(np.float64)
    with np.errstate(all="ignore"):
        z = _EXPF_INV_LN2_N * xd
        kd = z + _EXPF_SHIFT
        ki = kd.view(np.uint64)
        kd = kd - _EXPF_SHIFT
        r = z - kd
        t = _EXP2F_TABLE[(ki % np.uint64(32)).astype(np.int64)] + (ki << np.uint64(47))
        s = t.view(np.float64)
        c0, c1, c2 = _EXPF_POLY
        y = (c0 * r + c1) * (r * r) + (c2 * r + 1.0)
        result = (y * s).astype(np.float32)
        result = np.where(x > np.float32(float.fromhex("0x1.62e42ep6")), np.float32(np.inf),
                          result)
        result = np.where(x < np.float32(float.fromhex("-0x1.9fe368p6")), np.float32(0.0),
                          result)
        result = np.where(np.isnan(x), x, result)
    return result.astype(np.float32)


_ERFC_PP = (1.2837916613e-01, -3.2504209876e-01, -2.8481749818e-02, -5.7702702470e-03,
            -2.3763017452e-05)
_ERFC_QQ = (3.9791721106e-01, 6.5022252500e-02, 5.0813062117e-03, 1.3249473704e-04,
            -3.9602282413e-06)
_ERFC_PA = (-2.3621185683e-03, 4.1485610604e-01, -3.7220788002e-01, 3.1834661961e-01,
            -1.1089469492e-01, 3.5478305072e-02, -2.1663755178e-03)
_ERFC_QA = (1.0642088205e-01, 5.4039794207e-01, 7.1828655899e-02, 1.2617121637e-01,
            1.3637083583e-02, 1.1984500103e-02)
_ERFC_RA = (-9.8649440333e-03, -6.9385856390e-01, -1.0558626175e+01, -6.2375331879e+01,
            -1.6239666748e+02, -1.8460508728e+02, -8.1287437439e+01, -9.8143291473e+00)
_ERFC_SA = (1.9651271820e+01, 1.3765776062e+02, 4.3456588745e+02, 6.4538726807e+02,
            4.2900814819e+02, 1.0863500214e+02, 6.5702495575e+00, -6.0424413532e-02)
_ERFC_RB = (-9.8649431020e-03, -7.9928326607e-01, -1.7757955551e+01, -1.6063638306e+02,
            -6.3756646729e+02, -1.0250950928e+03, -4.8351919556e+02)
_ERFC_SB = (3.0338060379e+01, 3.2579251099e+02, 1.5367296143e+03, 3.1998581543e+03,
            2.5530502930e+03, 4.7452853394e+02, -2.2440952301e+01)


def _horner_f32(s: np.ndarray, coefficients, leading_one: bool) -> np.ndarray:
    """c0 + s*(c1 + s*(...)) in float32, innermost first; with `leading_one`, 1 + s*(...)."""
    acc = np.full(s.shape, np.float32(coefficients[-1]), dtype=np.float32)
    for c in reversed(coefficients[:-1]):
        acc = (np.float32(c) + s * acc).astype(np.float32)
    if leading_one:
        acc = (np.float32(1.0) + s * acc).astype(np.float32)
    return acc


def libm_erfcf(x) -> np.ndarray:
    """glibc's `erfcf` (the fdlibm algorithm of sysdeps/ieee754/flt-32/s_erff.c), float32
    operation by operation, on top of `libm_expf`."""
    f = np.float32
    x = np.asarray(x, dtype=np.float32)
    with np.errstate(all="ignore"):
        hx = _f32_bits(x)
        ix = hx & 0x7FFFFFFF
        one, half, two, tiny = f(1.0), f(0.5), f(2.0), f(1e-30)
        erx = f(8.4506291151e-01)
        # |x| < 0.84375
        z = x * x
        y = _horner_f32(z, _ERFC_PP, False) / _horner_f32(z, _ERFC_QQ, True)
        r_small = (x * y + (x - half)).astype(np.float32)
        small = np.where(hx < 0x3E800000, one - (x + x * y), half - r_small)
        small = np.where(ix < 0x23800000, one - x, small)
        # 0.84375 <= |x| < 1.25
        s = (np.abs(x) - one).astype(np.float32)
        p_over_q = _horner_f32(s, _ERFC_PA, False) / _horner_f32(s, _ERFC_QA, True)
        mid = np.where(hx >= 0, (one - erx) - p_over_q, one + (erx + p_over_q))
        # 1.25 <= |x| < 28
        ax = np.abs(x)
        s = (one / (ax * ax)).astype(np.float32)
        near = ix < 0x4036DB6D
        big_r = np.where(near, _horner_f32(s, _ERFC_RA, False), _horner_f32(s, _ERFC_RB, False))
        big_s = np.where(near, _horner_f32(s, _ERFC_SA, True), _horner_f32(s, _ERFC_SB, True))
        z = _from_bits(_f32_bits(ax) & 0xFFFFE000)
        r = (libm_expf((-z * z - f(0.5625)).astype(np.float32))
             * libm_expf(((z - ax) * (z + ax) + big_r / big_s).astype(np.float32)))
        r = r.astype(np.float32)
        far = np.where(hx > 0, r / ax, two - r / ax)
        far = np.where((hx < 0) & (ix >= 0x40C00000) & ~near, two - tiny, far)
        huge = np.where(hx > 0, tiny * tiny, two - tiny)
        result = np.where(ix < 0x3F580000, small,
                          np.where(ix < 0x3FA00000, mid, np.where(ix < 0x41E00000, far, huge)))
        special = (((hx >> 31) & 1) << 1).astype(np.float32) + one / x
        result = np.where(ix >= 0x7F800000, special, result)
    return result.astype(np.float32)


_POWF_LOG2_TABLE = np.array([float.fromhex(h) for h in (
    "0x1.661ec79f8f3bep+0", "-0x1.efec65b963019p-2",
    "0x1.571ed4aaf883dp+0", "-0x1.b0b6832d4fca4p-2",
    "0x1.49539f0f010bp+0", "-0x1.7418b0a1fb77bp-2",
    "0x1.3c995b0b80385p+0", "-0x1.39de91a6dcf7bp-2",
    "0x1.30d190c8864a5p+0", "-0x1.01d9bf3f2b631p-2",
    "0x1.25e227b0b8eap+0", "-0x1.97c1d1b3b7afp-3",
    "0x1.1bb4a4a1a343fp+0", "-0x1.2f9e393af3c9fp-3",
    "0x1.12358f08ae5bap+0", "-0x1.960cbbf788d5cp-4",
    "0x1.0953f419900a7p+0", "-0x1.a6f9db6475fcep-5",
    "0x1p+0", "0x0p+0",
    "0x1.e608cfd9a47acp-1", "0x1.338ca9f24f53dp-4",
    "0x1.ca4b31f026aap-1", "0x1.476a9543891bap-3",
    "0x1.b2036576afce6p-1", "0x1.e840b4ac4e4d2p-3",
    "0x1.9c2d163a1aa2dp-1", "0x1.40645f0c6651cp-2",
    "0x1.886e6037841edp-1", "0x1.88e9c2c1b9ff8p-2",
    "0x1.767dcf5534862p-1", "0x1.ce0a44eb17bccp-2",
)]).reshape(16, 2)  # (1/c, log2(c)) of 16 subintervals (glibc e_powf_log2_data.c)
_POWF_LOG2_POLY = tuple(float.fromhex(h) for h in (
    "0x1.27616c9496e0bp-2", "-0x1.71969a075c67ap-2", "0x1.ec70a6ca7baddp-2",
    "-0x1.7154748bef6c8p-1", "0x1.71547652ab82bp0"))
_EXP2F_POLY = tuple(float.fromhex(h) for h in (
    "0x1.c6af84b912394p-5", "0x1.ebfce50fac4f3p-3", "0x1.62e42ff0c52d6p-1"))


def _powf_checkint(iy: np.ndarray) -> np.ndarray:
    """0: not an integer, 1: odd integer, 2: even integer (bits of finite non-zero floats)."""
    e = (iy >> 23) & 0xFF
    low = np.left_shift(np.int64(1), np.clip(0x7F + 23 - e, 0, 62))
    fraction = (iy & (low - 1)) != 0
    odd = (iy & low) != 0
    return np.where(e < 0x7F, 0, np.where(e > 0x7F + 23, 2,
                                          np.where(fraction, 0, np.where(odd, 1, 2))))


def libm_powf(x, y) -> np.ndarray:
    """glibc's `powf` (2.28 and later): log2 of x from a 16-entry table and a degree-5
    polynomial, times y, then exp2 from the 32-entry table, all in double, rounded once to
    float. Not correctly rounded, so float64 pow rounded to float32 differs from it for about
    6 pairs in 10,000."""
    x, y = np.broadcast_arrays(np.asarray(x, dtype=np.float32), np.asarray(y, dtype=np.float32))
    ix = x.view(np.uint32).astype(np.int64)
    iy = y.view(np.uint32).astype(np.int64)
    with np.errstate(all="ignore"):
        # finite x < 0: an odd integer y makes the result negative, any other y is NaN
        negative = ix >= 0x80000000
        yint = _powf_checkint(iy)
        sign = negative & (yint == 1)
        ax = ix & 0x7FFFFFFF
        subnormal = ax < 0x00800000
        scaled = (np.abs(x) * np.float32(2.0**23)).view(np.uint32).astype(np.int64) & 0x7FFFFFFF
        ax = np.where(subnormal, (scaled - (23 << 23)) & 0xFFFFFFFF, ax)
        # log2(x) = log2(c) + k + log1p(z/c - 1)/ln2
        tmp = (ax - 0x3F330000) & 0xFFFFFFFF
        i = (tmp >> 19) % 16
        top = tmp & 0xFF800000
        iz = (ax - top) & 0xFFFFFFFF
        k = top.astype(np.uint32).view(np.int32).astype(np.int64) >> 23
        invc, logc = _POWF_LOG2_TABLE[i, 0], _POWF_LOG2_TABLE[i, 1]
        z = iz.astype(np.uint32).view(np.float32).astype(np.float64)
        a0, a1, a2, a3, a4 = _POWF_LOG2_POLY
        r = z * invc - 1.0
        y0 = logc + k.astype(np.float64)
        r2 = r * r
        p1 = a0 * r + a1
        p2 = a2 * r + a3
        r4 = r2 * r2
        q = a4 * r + y0
        q = p2 * r2 + q
        logx = p1 * r4 + q
        ylogx = y.astype(np.float64) * logx
        # exp2(ylogx) = 2**(k/32) * 2**r
        shift = _EXPF_SHIFT / 32
        kd = ylogx + shift
        ki = kd.view(np.uint64)
        kd = kd - shift
        r = ylogx - kd
        t = _EXP2F_TABLE[(ki % np.uint64(32)).astype(np.int64)]
        ski = ki + np.where(sign, np.uint64(1 << 16), np.uint64(0))
        s = (t + (ski << np.uint64(47))).view(np.float64)
        c0, c1, c2 = _EXP2F_POLY
        zz = c0 * r + c1
        r2 = r * r
        e = c2 * r + 1.0
        e = zz * r2 + e
        result = (e * s).astype(np.float32)
        signed_inf = np.where(sign, np.float32(-np.inf), np.float32(np.inf))
        signed_zero = np.where(sign, np.float32(-0.0), np.float32(0.0))
        result = np.where(ylogx > float.fromhex("0x1.fffffffd1d571p+6"), signed_inf, result)
        result = np.where(ylogx <= -150.0, signed_zero, result)
        result = np.where(negative & (yint == 0), np.float32(np.nan), result)
        # x zero, inf or NaN (y finite, non-zero)
        x2 = (x * x).astype(np.float32)
        x2 = np.where(negative & (yint == 1), -x2, x2)
        zero_inf_nan_x = ((2 * ix - 1) & 0xFFFFFFFF) >= 2 * 0x7F800000 - 1
        result = np.where(zero_inf_nan_x, np.where(iy >= 0x80000000, np.float32(1) / x2, x2),
                          result)
        # y zero, inf or NaN
        two_ix, two_iy = (2 * ix) & 0xFFFFFFFF, (2 * iy) & 0xFFFFFFFF
        y_special = np.where(
            two_ix == 2 * 0x3F800000, np.float32(1.0),
            np.where((two_ix < 2 * 0x3F800000) == (iy < 0x80000000), np.float32(0.0), y * y))
        y_special = np.where((two_ix > 2 * 0x7F800000) | (two_iy > 2 * 0x7F800000), x + y,
                             y_special)
        y_special = np.where(ix == 0x3F800000, np.float32(1.0), y_special)
        y_special = np.where(two_iy == 0, np.float32(1.0), y_special)
        zero_inf_nan_y = ((2 * iy - 1) & 0xFFFFFFFF) >= 2 * 0x7F800000 - 1
        result = np.where(zero_inf_nan_y, y_special, result)
    return result.astype(np.float32)


_LOGF_LOGC = np.array([float.fromhex(h) for h in (
    "-0x1.57bf7808caadep-2", "-0x1.2bef0a7c06ddbp-2", "-0x1.01eae7f513a67p-2",
    "-0x1.b31d8a68224e9p-3", "-0x1.6574f0ac07758p-3", "-0x1.1aa2bc79c81p-3",
    "-0x1.a4e76ce8c0e5ep-4", "-0x1.1973c5a611cccp-4", "-0x1.252f438e10c1ep-5", "0x0p+0",
    "0x1.aa5aa5df25984p-5", "0x1.c5e53aa362eb4p-4", "0x1.526e57720db08p-3",
    "0x1.bc2860d22477p-3", "0x1.1058bc8a07ee1p-2", "0x1.4043057b6ee09p-2",
)])  # log(c) of the 16 subintervals whose 1/c powf's table holds (glibc e_logf_data.c)
_LOGF_POLY = tuple(float.fromhex(h) for h in (
    "-0x1.00ea348b88334p-2", "0x1.5575b0be00b6ap-2", "-0x1.ffffef20a4123p-2"))
_LN2 = float.fromhex("0x1.62e42fefa39efp-1")


def libm_logf(x) -> np.ndarray:
    """glibc's `logf` (2.28 and later): the subinterval's 1/c and log(c) from a 16-entry
    table, a cubic for log1p(z/c - 1) in double, one rounding to float."""
    x = np.asarray(x, dtype=np.float32)
    ix = x.view(np.uint32).astype(np.int64)
    with np.errstate(all="ignore"):
        scaled = (x * np.float32(2.0**23)).view(np.uint32).astype(np.int64)
        ix = np.where(ix < 0x00800000, (scaled - (23 << 23)) & 0xFFFFFFFF, ix)
        tmp = (ix - 0x3F330000) & 0xFFFFFFFF
        i = (tmp >> 19) % 16
        k = tmp.astype(np.uint32).view(np.int32).astype(np.int64) >> 23
        iz = (ix - (tmp & 0xFF800000)) & 0xFFFFFFFF
        z = iz.astype(np.uint32).view(np.float32).astype(np.float64)
        r = z * _POWF_LOG2_TABLE[i, 0] - 1.0
        y0 = _LOGF_LOGC[i] + k.astype(np.float64) * _LN2
        a0, a1, a2 = _LOGF_POLY
        r2 = r * r
        y = a1 * r + a2
        y = a0 * r2 + y
        result = (y * r2 + (y0 + r)).astype(np.float32)
        result = np.where(x == 1.0, np.float32(0.0), result)
        result = np.where(x == 0.0, np.float32(-np.inf), result)
        result = np.where((x < 0) | np.isnan(x), np.float32(np.nan), result)
        result = np.where(x == np.inf, x, result)
    return result.astype(np.float32)
