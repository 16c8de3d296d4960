"""ALU lane semantics against a plain-Python transcription of gemmlowp / TFLite arithmetic."""

import numpy as np
import pytest

from qaccel.targets.vta.alu import (
    INT32_MAX,
    INT32_MIN,
    AluRangeError,
    alu_add,
    alu_max,
    alu_min,
    alu_mul,
    alu_rdmul,
    alu_rshr,
    alu_shr,
    multiply_by_quantized_multiplier,
)


def wrap32(v: int) -> int:
    return (v + 2**31) % 2**32 - 2**31


def ref_srdhm(a: int, b: int) -> int:
    """gemmlowp SaturatingRoundingDoublingHighMul with C's truncating division."""
    if a == b == INT32_MIN:
        return INT32_MAX
    ab = a * b
    nudge = 2**30 if ab >= 0 else 1 - 2**30
    s = ab + nudge
    q = abs(s) // 2**31
    return q if s >= 0 else -q


def ref_rdbpot(x: int, e: int) -> int:
    mask = (1 << e) - 1
    rem = x & mask
    threshold = (mask >> 1) + (1 if x < 0 else 0)
    return (x >> e) + (1 if rem > threshold else 0)


def ref_shr(x: int, a: int) -> int:
    return x >> a if a >= 0 else wrap32(x << -a)


def ref_mbqm(x: int, m: int, shift: int) -> int:
    left, right = max(shift, 0), max(-shift, 0)
    return ref_rdbpot(ref_srdhm(wrap32(x * (1 << left)), m), right)


EDGE = [INT32_MIN, INT32_MIN + 1, -(2**30), -65536, -257, -3, -2, -1, 0, 1, 2, 3, 255, 65535,
        2**30, INT32_MAX - 1, INT32_MAX]  # fmt: skip


def _grid(values_x, values_y):
    x, y = np.meshgrid(np.array(values_x, np.int64), np.array(values_y, np.int64))
    return x.ravel(), y.ravel()


def _random(n, rng):
    return rng.integers(INT32_MIN, INT32_MAX, n, endpoint=True)


@pytest.mark.parametrize(
    "fn, ref",
    [
        (alu_min, min),
        (alu_max, max),
        (alu_add, lambda a, b: wrap32(a + b)),
        (alu_mul, lambda a, b: wrap32(a * b)),
        (alu_rdmul, ref_srdhm),
    ],
)
def test_binary_ops_edge_and_random(fn, ref):
    rng = np.random.default_rng(3)
    x, y = _grid(EDGE, EDGE)
    x = np.concatenate([x, _random(2000, rng)])
    y = np.concatenate([y, _random(2000, rng)])
    got = fn(x.astype(np.int32), y.astype(np.int32))
    assert got.dtype == np.int32
    assert got.tolist() == [ref(int(a), int(b)) for a, b in zip(x, y)]


def test_rdmul_saturation_and_rounding_ties():
    m = np.int32(INT32_MIN)
    assert alu_rdmul(np.array([INT32_MIN], np.int32), m).tolist() == [INT32_MAX]
    # x * 2**30 / 2**31 = x / 2 exactly half way: gemmlowp's nudge rounds positive ties up
    # and negative ties toward zero ((-2**31 + 1) / 2**31 truncates to 0)
    x = np.array([1, 3, 5, -1, -3, -5], np.int32)
    assert alu_rdmul(x, np.int32(2**30)).tolist() == [1, 2, 3, 0, -1, -2]
    # just below half (negative side uses the 1 - 2**30 nudge, then truncation)
    assert alu_rdmul(np.array([-1], np.int32), np.int32(2**30 - 1)).tolist() == [0]


@pytest.mark.parametrize("e", [0, 1, 2, 5, 30, 31])
def test_rshr_all_edges(e):
    rng = np.random.default_rng(e)
    x = np.concatenate([np.array(EDGE, np.int64), _random(3000, rng),
                        np.arange(-70, 70)])  # fmt: skip
    got = alu_rshr(x.astype(np.int32), np.int32(e))
    assert got.tolist() == [ref_rdbpot(int(v), e) for v in x]


def test_rshr_ties_round_away_from_zero():
    x = np.array([1, 3, 5, -1, -3, -5, 2, -2, INT32_MIN, INT32_MAX], np.int32)
    assert alu_rshr(x, np.int32(1)).tolist() == [1, 2, 3, -1, -2, -3, 1, -1, -(2**30), 2**30]
    assert alu_rshr(x, np.int32(31)).tolist() == [0, 0, 0, 0, 0, 0, 0, 0, -1, 1]
    assert alu_rshr(x, np.int32(0)).tolist() == x.tolist()


def test_per_lane_exponents_and_range_errors():
    x = np.array([[7, 7, -7, -7]], np.int32)
    e = np.array([[0, 1, 1, 31]], np.int32)
    assert alu_rshr(x, e).tolist() == [[7, 4, -4, 0]]
    with pytest.raises(AluRangeError) as err:
        alu_rshr(x, np.array([[0, 1, 32, 0]], np.int32))
    assert err.value.lane == 2 and err.value.value == 32
    with pytest.raises(AluRangeError):
        alu_rshr(x, np.int32(-1))
    with pytest.raises(AluRangeError):
        alu_shr(x, np.int32(-32))


@pytest.mark.parametrize("a", [-31, -30, -8, -1, 0, 1, 8, 30, 31])
def test_shr_both_directions(a):
    rng = np.random.default_rng(a + 40)
    x = np.concatenate([np.array(EDGE, np.int64), _random(1000, rng)])
    got = alu_shr(x.astype(np.int32), np.int32(a))
    assert got.tolist() == [ref_shr(int(v), a) for v in x]


def _quantize_multiplier(d: float):
    """TFLite QuantizeMultiplier (frexp, round half away from zero, overflow fix-up)."""
    import math

    if d == 0:
        return 0, 0
    q, shift = math.frexp(d)
    q_fixed = int(math.floor(abs(q) * 2**31 + 0.5)) * (1 if q >= 0 else -1)
    if q_fixed == 2**31:
        q_fixed //= 2
        shift += 1
    if shift < -31:
        return 0, 0
    return q_fixed, shift


def test_multiply_by_quantized_multiplier_matches_tflite():
    rng = np.random.default_rng(9)
    scales = np.concatenate([rng.uniform(1e-5, 0.99, 40), rng.uniform(1.0, 100.0, 8), [0.5, 1.0]])
    for scale in scales:
        m, shift = _quantize_multiplier(float(scale))
        x = np.concatenate([_random(300, rng) >> int(rng.integers(0, 20)), np.array(EDGE)])
        if shift > 0:  # TFLite only left-shifts accumulators that cannot overflow
            x = x >> shift
        got = multiply_by_quantized_multiplier(x.astype(np.int32), m, shift)
        assert got.tolist() == [ref_mbqm(int(v), m, shift) for v in x], scale


def test_int32_min_times_int32_min_through_mbqm():
    got = multiply_by_quantized_multiplier(np.array([INT32_MIN], np.int32), INT32_MIN, 0)
    assert got.tolist() == [INT32_MAX]
