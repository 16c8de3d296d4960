"""The integer primitives of TFLite's reference kernels, on hand-checked values: saturation,
ties, negative values, shifts 0 and 31, multipliers of 1 and more."""

from __future__ import annotations

import ctypes
import ctypes.util
import platform

import numpy as np
import pytest

from qaccel.kernels import arithmetic as ar

INT32_MIN, INT32_MAX = -(2**31), 2**31 - 1


def srdhm(a, b):
    return int(ar.saturating_rounding_doubling_high_mul(a, b))


def rdbpot(x, e):
    return int(ar.rounding_divide_by_pot(x, e))


def mbqm(x, m, s):
    return int(ar.multiply_by_quantized_multiplier(x, m, s))


def test_srdhm_saturates_only_min_times_min():
    assert srdhm(INT32_MIN, INT32_MIN) == INT32_MAX
    assert srdhm(INT32_MIN, INT32_MAX) == -INT32_MAX  # -(2**31 - 1) exactly
    assert srdhm(INT32_MAX, INT32_MAX) == INT32_MAX - 1
    assert srdhm(INT32_MIN, 1 << 30) == -(1 << 30)


def test_srdhm_rounds_halves_up_and_truncates_toward_zero():
    half = 1 << 30  # 0.5 in Q0.31
    assert srdhm(3, half) == 2  # 1.5 -> 2
    assert srdhm(-3, half) == -1  # -1.5 -> -1: the nudge, then C division toward zero
    assert srdhm(1, half) == 1  # 0.5 -> 1
    assert srdhm(-1, half) == 0  # -0.5 -> 0
    assert srdhm(5, 1 << 29) == 1  # 1.25 -> 1
    assert srdhm(-5, 1 << 29) == -1
    assert srdhm(0, INT32_MIN) == 0


def test_rounding_divide_by_pot_halves_away_from_zero():
    assert [rdbpot(x, 1) for x in (5, -5, 4, -4, 3, -3, 1, -1)] == [3, -3, 2, -2, 2, -2, 1, -1]
    assert rdbpot(7, 0) == 7 and rdbpot(-7, 0) == -7
    assert rdbpot(INT32_MIN, 31) == -1
    assert rdbpot(INT32_MAX, 31) == 1
    assert rdbpot(1 << 30, 31) == 1  # 0.5 -> 1
    assert rdbpot(-(1 << 30), 31) == -1  # -0.5 -> -1
    assert rdbpot((1 << 30) - 1, 31) == 0
    np.testing.assert_array_equal(ar.rounding_divide_by_pot(np.array([6, -6, 10]), [1, 2, 3]),
                                  [3, -2, 1])  # per-element exponents: 3, -1.5 -> -2, 1.25 -> 1


def test_quantize_multiplier():
    q = ar.quantize_multiplier_scalar
    assert q(0.0) == (0, 0)
    assert q(1.0) == (1 << 30, 1)
    assert q(0.5) == (1 << 30, 0)
    assert q(3.0) == (3 << 29, 2)  # multipliers above one: positive shifts
    assert q(1000.0) == (round(1000 / 1024 * 2**31), 10)
    assert q(-0.5) == (-(1 << 30), 0)
    assert q(2.0**-32) == (1 << 30, -31)  # the smallest kept
    assert q(2.0**-33) == (0, 0)  # shift < -31 flushes to zero
    assert q(1 - 2.0**-40) == (1 << 30, 1)  # rounds up to 2**31: halve and bump the shift
    # q * 2**31 = 1610612736.5 exactly: halves round away from zero
    assert q((1610612736.5) / 2**31) == (1610612737, 0)
    m, s = ar.quantize_multiplier(np.array([0.25, 0.75, 4.0]))
    np.testing.assert_array_equal(m, [1 << 30, 3 << 29, 1 << 30])
    np.testing.assert_array_equal(s, [-1, 0, 3])


def test_multiply_by_quantized_multiplier():
    assert mbqm(1, 1 << 30, 1) == 1  # multiplier 1.0
    assert mbqm(-77, 1 << 30, 1) == -77
    assert mbqm(100, 3 << 29, 2) == 300  # 3.0
    assert mbqm(3, 1 << 30, -1) == 1  # 0.75
    # double rounding: 5 * 0.25 = 1.25, but SRDHM makes 2.5 -> 3, then 3 / 2 = 1.5 -> 2
    assert mbqm(5, 1 << 30, -1) == 2
    assert mbqm(-5, 1 << 30, -1) == -1  # SRDHM: -2.5 -> -2, then -1
    assert mbqm(INT32_MAX, INT32_MAX, -31) == 1  # ~1.0 * 2**31 / 2**31 rounds to 1
    assert mbqm(INT32_MIN, 1 << 30, -30) == -1
    assert mbqm(INT32_MIN, 1 << 30, -31) == -1  # -0.5 -> -1, away from zero
    assert mbqm(1 << 30, INT32_MAX, -30) == 1  # ~0.99999 -> 1
    assert mbqm(1 << 20, 1 << 30, 12) == 0  # the int32 left shift wraps: 2**32 -> 0
    x = np.arange(-1000, 1000)
    np.testing.assert_array_equal(ar.multiply_by_quantized_multiplier(x, 1 << 30, 1), x)


def test_wrap_and_trunc_div():
    np.testing.assert_array_equal(ar.wrap_int32([2**31, -(2**31) - 1, 5]), [INT32_MIN, INT32_MAX, 5])
    np.testing.assert_array_equal(ar.trunc_div([7, -7, 7, -7], [2, 2, -2, -2]), [3, -3, -3, 3])


def test_round_half_away_and_float_to_int32():
    np.testing.assert_array_equal(ar.round_half_away(np.float32([0.5, -0.5, 2.5, -2.5, 1.4999999])),
                                  np.float32([1, -1, 3, -3, 1]))
    assert ar.round_half_away(np.float32(0.49999997)) == 0  # floor(x + 0.5) would give 1
    np.testing.assert_array_equal(
        ar.float_to_int32([-2.7, 2.7, np.nan, 3e9, -3e9, np.inf, 2147483647.0]),
        [-2, 2, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MIN, INT32_MAX])


def test_activation_ranges():
    assert ar.activation_range_quantized("NONE", 0.1, 3, np.int8) == (-128, 127)
    assert ar.activation_range_quantized("RELU", 0.1, -20, np.int8) == (-20, 127)
    assert ar.activation_range_quantized("RELU", 0.1, -200, np.int8) == (-128, 127)
    # 6 / 0.048 = 125 exactly; in float 6.0f / 0.048f rounds to 125.00000 too
    assert ar.activation_range_quantized("RELU6", 0.048, -128, np.int8) == (-128, -3)
    assert ar.activation_range_quantized("RELU6", 0.0235294, 0, np.int8) == (0, 127)
    # 6 / 4.8 = 1.25 -> 1; 6 / 2.4 = 2.5 -> 3 (half away from zero, in float)
    assert ar.activation_range_quantized("RELU6", 4.8, 0, np.int8) == (0, 1)
    assert ar.activation_range_quantized("RELU6", 2.4, 0, np.int8) == (0, 3)
    assert ar.activation_range_quantized("RELU_N1_TO_1", 0.5, 10, np.int8) == (8, 12)
    with pytest.raises(OverflowError):
        ar.activation_range_quantized("RELU6", 1e-30, 0, np.int8)


def test_saturating_left_shift():
    np.testing.assert_array_equal(ar.saturating_left_shift([1, -1, 1 << 29, -(1 << 29)], 2),
                                  [4, -4, INT32_MAX, INT32_MIN])
    np.testing.assert_array_equal(ar.saturating_left_shift([(1 << 29) - 1], 2),
                                  [((1 << 29) - 1) * 4])


def test_exp_on_negative_values_matches_exp():
    a = -np.arange(0, 16 << 26, 1 << 19, dtype=np.int64)  # 0 .. -16 in Q5.26
    got = ar.exp_on_negative_values(a, 5) / 2**31
    np.testing.assert_allclose(got, np.exp(a / 2**26), atol=5e-7)  # gemmlowp's accuracy
    assert int(ar.exp_on_negative_values(0, 5)) == INT32_MAX  # exp(0) saturates to "one"
    # -1/4 and -1 in Q5.26 (exp * 2**31 = 1672461947.2 and 790015084.0): the Taylor
    # polynomial alone, then the polynomial at -1/4 times the barrel-shifter constants
    assert abs(int(ar.exp_on_negative_values(-(1 << 24), 5)) - 1672461947) < 1000
    assert abs(int(ar.exp_on_negative_values(-(1 << 26), 5)) - 790015084) < 1000


def test_one_over_one_plus_x_and_reciprocal():
    x = np.arange(0, 2**31 - 1, 2**24, dtype=np.int64)
    got = ar.one_over_one_plus_x_for_x_in_0_1(x) / 2**31
    np.testing.assert_allclose(got, 1 / (1 + x / 2**31), atol=1e-8)
    # 1.5 in Q12.19: headroom 12 bits, num_bits_over_unit 0, 1/1.5 = 0.6666 in Q0.31
    raw, bits = ar.get_reciprocal(np.int64(3 << 18), 12)
    assert int(bits) == 0 and abs(int(raw) / 2**31 - 2 / 3) < 1e-8
    assert int(ar.count_leading_zeros_u32(1)) == 31 and int(ar.count_leading_zeros_u32(0)) == 32
    assert int(ar.count_leading_zeros_u32(-1)) == 0


def test_int16_fixed_point():
    assert int(ar.saturating_rounding_doubling_high_mul_int16(-32768, -32768)) == 32767
    assert int(ar.saturating_rounding_doubling_high_mul_int16(3, 1 << 14)) == 2  # 1.5 -> 2
    assert int(ar.saturating_rounding_doubling_high_mul_int16(-3, 1 << 14)) == -1
    assert int(ar.saturating_doubling_high_mul_int16(3, 1 << 14)) == 1  # truncates
    assert int(ar.rounding_divide_by_pot_int16(-5, 1)) == -3
    assert ar.downscale_int32_to_int16_multiplier(INT32_MAX) == 32767
    assert ar.downscale_int32_to_int16_multiplier(1 << 30) == 1 << 14
    np.testing.assert_array_equal(ar.saturating_left_shift_int16([20000, -20000, 3], 1),
                                  [32767, -32768, 6])


def test_calculate_input_radius():
    assert ar.calculate_input_radius(5, 0) == 31 << 26
    assert ar.calculate_input_radius(5, 20) == (31 << 26) >> 20
    assert ar.calculate_input_radius(5, 31) == 0  # floor(31 * 2**26 / 2**31) = floor(0.97)


def _glibc_libm():
    if platform.libc_ver()[0] != "glibc":
        pytest.skip("LiteRT's float TANH/LOGISTIC/SOFTMAX inherit glibc's expf/tanhf")
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    for name in ("expf", "tanhf", "erfcf", "logf"):
        getattr(libm, name).restype = ctypes.c_float
        getattr(libm, name).argtypes = [ctypes.c_float]
    libm.powf.restype = ctypes.c_float
    libm.powf.argtypes = [ctypes.c_float, ctypes.c_float]
    return libm


def test_libm_expf_and_tanhf_match_this_glibc():
    """The emulations reproduce the libm LiteRT calls (numpy's exp/tanh do not: they differ
    in the last bit for a few inputs in 10,000)."""
    libm = _glibc_libm()
    rng = np.random.default_rng(0)
    x = np.concatenate([rng.standard_normal(4000) * 6, rng.uniform(-110, 90, 2000),
                        [0.0, -0.0, 1e-30, 88.72, 88.73, -103.9, -104.0, 22.0, 9.01, -1e-9,
                         np.inf, -np.inf, np.nan]]).astype(np.float32)
    want_exp = np.array([libm.expf(float(v)) for v in x], np.float32)
    want_tanh = np.array([libm.tanhf(float(v)) for v in x], np.float32)
    np.testing.assert_array_equal(ar.libm_expf(x), want_exp)
    np.testing.assert_array_equal(ar.libm_tanhf(x), want_tanh)
    assert np.signbit(ar.libm_tanhf(np.float32(-0.0)))


def test_libm_erfcf_matches_this_glibc():
    """GELU's table calls erfcf: every branch of fdlibm's algorithm (|x| below 2**-56, 0.84375,
    1.25, 1/0.35, 6, 28) and the special values."""
    libm = _glibc_libm()
    rng = np.random.default_rng(1)
    x = np.concatenate([rng.standard_normal(4000) * 3, rng.uniform(-30, 30, 2000),
                        [0.0, -0.0, 1e-30, -1e-20, 0.25, 0.84375, -0.84375, 1.25, -1.25,
                         2.857143, -2.857143, 6.0, -6.0, 28.0, -28.0, 100.0, np.inf, -np.inf,
                         np.nan]]).astype(np.float32)
    want = np.array([libm.erfcf(float(v)) for v in x], np.float32)
    np.testing.assert_array_equal(ar.libm_erfcf(x), want)


def test_log_and_inverse_sqrt_fixed_point():
    """log(x) of Q12 values in Q5 and 1/sqrt(x) as multiplier and shift, near the real
    values (their bit-exactness is checked through LOG_SOFTMAX and RSQRT against LiteRT)."""
    x = np.array([1 << 19, 3 << 19, 100 << 19, (1 << 31) - 1])
    log = ar.log_x_for_x_greater_than_or_equal_to_1(x, 12, 5) / 2.0**26
    np.testing.assert_allclose(log, np.log(x / 2.0**19), atol=1e-6)
    v = np.arange(2, 3000)
    m, s = ar.inv_sqrt_quantized_multiplier_exp(v)
    np.testing.assert_allclose(m * 2.0 ** (s - 31) * np.sqrt(v), 1.0, atol=2e-6)
    m, s = ar.inv_sqrt_quantized_multiplier_exp(np.array([0, 1]))
    assert m.tolist() == [ar.INT32_MAX] * 2 and s.tolist() == [0, 0]


def test_libm_powf_matches_this_glibc():
    """POW's float kernel calls powf (float64 pow rounded to float differs from it for about 6
    pairs in 10,000): random bases and exponents, integer exponents of negative bases, and
    every pair of special values."""
    libm = _glibc_libm()
    rng = np.random.default_rng(2)
    special = np.float32([0, -0.0, np.inf, -np.inf, np.nan, 1, -1, 2, -2, 0.5, -0.5, 3, -3,
                          1e-40, 1e30, 200, -200])
    a, b = (v.ravel() for v in np.meshgrid(special, special))
    x = np.concatenate([np.abs(rng.standard_normal(5000)) * 5, rng.standard_normal(1000) * 3,
                        a]).astype(np.float32)
    y = np.concatenate([rng.standard_normal(5000) * 3, np.round(rng.standard_normal(1000) * 3),
                        b]).astype(np.float32)
    want = np.array([libm.powf(float(u), float(v)) for u, v in zip(x, y)], np.float32)
    got = ar.libm_powf(x, y)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert np.all(same), list(zip(x[~same][:5], y[~same][:5]))


def test_libm_logf_matches_this_glibc():
    """Float LOG_SOFTMAX calls logf: values over the whole float range, subnormals and the
    special values."""
    libm = _glibc_libm()
    rng = np.random.default_rng(3)
    x = np.concatenate([np.abs(rng.standard_normal(4000)) * np.exp(rng.uniform(-80, 80, 4000)),
                        rng.uniform(0, 10, 2000),
                        [0, -0.0, 1, np.inf, -np.inf, np.nan, -1, 1e-40, 1e-45, 3.4e38,
                         0.9999999, 1.0000001]]).astype(np.float32)
    want = np.array([libm.logf(float(v)) for v in x], np.float32)
    got = ar.libm_logf(x)
    same = (got.view(np.uint32) == want.view(np.uint32)) | (np.isnan(got) & np.isnan(want))
    assert np.all(same), x[~same][:5]
