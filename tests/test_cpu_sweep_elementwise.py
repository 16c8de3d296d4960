"""ADD, SUB, MUL, the activation ops, QUANTIZE, DEQUANTIZE and SOFTMAX against LiteRT's
reference kernels: seeded random grids over broadcast shapes, scales, zero points and fused
activations; table-driven ops see every int8 input value."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.kernels.registry import KernelError, Refusal, prepare
from qaccel.kernels.qparams import QParams
from test_cpu_kernels import Case, assert_bit_exact, batch_model, qt, spec

pytest.importorskip("ai_edge_litert")

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]
ALL_INT8 = np.arange(-128, 128, dtype=np.int8)


def _log_uniform(rng, lo: float, hi: float) -> float:
    return float(np.exp(rng.uniform(np.log(lo), np.log(hi))))


def _zp(rng) -> int:
    return int(rng.choice([-128, -127, -1, 0, 3, 127, int(rng.integers(-128, 128))]))


def _int8(rng, shape):
    return rng.integers(-128, 127, size=tuple(shape), endpoint=True, dtype=np.int8)


def _broadcast_pair(rng):
    rank = int(rng.integers(1, 6))
    out = [int(rng.choice([1, 2, 3, 5])) for _ in range(rank)]
    a = [d if rng.integers(3) else 1 for d in out]
    b = [d if rng.integers(3) else 1 for d in out]
    b = b[int(rng.integers(0, rank)):]  # lower rank broadcasts from the right
    return tuple(a), tuple(b), tuple(np.broadcast_shapes(tuple(a), tuple(b)))


def binary_cases(op: str, seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        a_shape, b_shape, out_shape = _broadcast_pair(rng)
        s1 = _log_uniform(rng, 1e-3, 1.0)
        s2 = s1 * _log_uniform(rng, 1e-2, 1e2) if rng.integers(3) else s1
        if op == "MUL":
            out_s = s1 * s2 * _log_uniform(rng, 1e-2, 3e2)
        else:
            out_s = max(s1, s2) * _log_uniform(rng, 0.05, 20)
        q1, q2, qo = qt(s1, _zp(rng)), qt(s2, _zp(rng)), qt(out_s, _zp(rng))
        options = {"fused_activation_function": str(rng.choice(ACTIVATIONS))}
        case = Case(op, [spec("a", a_shape, q=q1), spec("b", b_shape, q=q2)],
                    [spec("y", out_shape, q=qo)], options,
                    [_int8(rng, a_shape), _int8(rng, b_shape)],
                    f"{op} #{len(cases)} seed {seed} {a_shape}x{b_shape} scales {s1:g},{s2:g}->"
                    f"{out_s:g} zps {q1.zp},{q2.zp}->{qo.zp} {options}")
        try:
            prepare(op, case.call())
        except Refusal:
            continue
        cases.append(case)
    return cases


@pytest.mark.parametrize("op,seed", [("ADD", 1), ("SUB", 2), ("MUL", 3)])
def test_binary_sweep(oracle, op, seed):
    assert_bit_exact(oracle, binary_cases(op, seed, 300))


def test_sub_with_output_multiplier_above_one(oracle):
    """SUB accepts an output multiplier > 1 (ADD refuses it) and then runs gemmlowp's
    RoundingDivideByPOT with a negative exponent."""
    rng = np.random.default_rng(7)
    cases = []
    shapes = [((4, 64), (4, 64)), ((7,), (7,)), ((23,), (1, 23)), ((3, 5), (1, 5)),
              ((2, 3, 5), (5,)), ((1,), (1,)), ((259,), (259,))]
    for i, out_s in enumerate([1e-7, 3e-8, 1e-6, 5e-7]):
        for sa, sb in shapes:
            out_shape = np.broadcast_shapes(sa, sb)
            cases.append(Case(
                "SUB", [spec("a", sa, q=qt(1.0, 0)), spec("b", sb, q=qt(0.5, 3))],
                [spec("y", out_shape, q=qt(out_s, int(rng.integers(-5, 5))))], {},
                [_int8(rng, sa), _int8(rng, sb)], f"SUB {sa}-{sb} tiny out_s {out_s:g}"))
    assert_bit_exact(oracle, cases)


def activation_cases(seed: int) -> list[Case]:
    """Every int8 input value through RELU-family, LEAKY_RELU, LOGISTIC, TANH, HARD_SWISH."""
    rng = np.random.default_rng(seed)
    cases = []
    x = ALL_INT8.reshape(1, 256)
    for i in range(12):
        in_q = qt(_log_uniform(rng, 1e-3, 0.3), _zp(rng))
        out_q = qt(in_q.s * _log_uniform(rng, 0.2, 5), _zp(rng))
        for op in ("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1"):
            cases.append(Case(op, [spec("x", x.shape, q=in_q)], [spec("y", x.shape, q=out_q)],
                              {}, [x], f"{op} in {in_q.s:g}/{in_q.zp} out {out_q.s:g}/{out_q.zp}"))
        alpha = float(rng.choice([0.01, 0.1, 0.2, 0.5, 0.9, 1.5, -0.3]))
        cases.append(Case("LEAKY_RELU", [spec("x", x.shape, q=in_q)],
                          [spec("y", x.shape, q=out_q)], {"alpha": alpha}, [x],
                          f"LEAKY_RELU alpha {alpha} in {in_q.s:g}/{in_q.zp} out {out_q.s:g}"))
        wide_q = qt(_log_uniform(rng, 1e-3, 0.2), _zp(rng))
        cases.append(Case("LOGISTIC", [spec("x", x.shape, q=wide_q)],
                          [spec("y", x.shape, q=qt(1 / 256, int(rng.choice([-128, 0, 5]))))],
                          {}, [x], f"LOGISTIC in {wide_q.s:g}/{wide_q.zp}"))
        tanh_out = qt(float(rng.choice([1 / 128, 1 / 100, 0.02])), int(rng.choice([0, 0, -3])))
        cases.append(Case("TANH", [spec("x", x.shape, q=wide_q)],
                          [spec("y", x.shape, q=tanh_out)], {}, [x],
                          f"TANH in {wide_q.s:g}/{wide_q.zp} out {tanh_out.s:g}/{tanh_out.zp}"))
        hs_in = qt(_log_uniform(rng, 1e-3, 0.1), _zp(rng))
        hs_out = qt(hs_in.s * _log_uniform(rng, 0.6, 4), _zp(rng))
        case = Case("HARD_SWISH", [spec("x", x.shape, q=hs_in)], [spec("y", x.shape, q=hs_out)],
                    {}, [x], f"HARD_SWISH in {hs_in.s:g}/{hs_in.zp} out {hs_out.s:g}/{hs_out.zp}")
        try:
            prepare("HARD_SWISH", case.call())
            cases.append(case)
        except Refusal:
            pass
    return cases


@pytest.mark.parametrize("seed", [11, 12])
def test_activation_sweep(oracle, seed):
    assert_bit_exact(oracle, activation_cases(seed))


def quantize_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    x = ALL_INT8.reshape(2, 128)
    for i in range(16):
        in_q = qt(_log_uniform(rng, 1e-4, 1.0), _zp(rng))
        out_q = qt(in_q.s * _log_uniform(rng, 1e-2, 1e2), _zp(rng))
        if i == 0:
            out_q = qt(in_q.s, _zp(rng))  # same scale: multiplier exactly 1
        cases.append(Case("QUANTIZE", [spec("x", x.shape, q=in_q)], [spec("y", x.shape, q=out_q)],
                          {}, [x], f"QUANTIZE int8 {in_q.s:g}/{in_q.zp} -> {out_q.s:g}/{out_q.zp}"))
        o16 = qt(in_q.s * _log_uniform(rng, 1e-3, 1.0), 0)
        cases.append(Case("QUANTIZE", [spec("x", x.shape, q=in_q)],
                          [spec("y", x.shape, np.int16, o16)], {}, [x],
                          f"QUANTIZE int8 -> int16 {in_q.s:g}/{in_q.zp} -> {o16.s:g}"))
        f = (rng.standard_normal((4, 64)) * _log_uniform(rng, 0.01, 100)).astype(np.float32)
        f[0, :8] = [np.inf, -np.inf, np.nan, 0.0, -0.0, 1e30, -1e30, 0.5]
        fq = qt(_log_uniform(rng, 1e-3, 1.0), _zp(rng))
        f[1, :4] = np.float32(fq.s) * np.float32([0.5, -0.5, 1.5, -2.5])  # ties
        cases.append(Case("QUANTIZE", [spec("x", f.shape, np.float32)],
                          [spec("y", f.shape, q=fq)], {}, [f],
                          f"QUANTIZE float -> {fq.s:g}/{fq.zp}"))
        cases.append(Case("DEQUANTIZE", [spec("x", x.shape, q=in_q)],
                          [spec("y", x.shape, np.float32)], {}, [x],
                          f"DEQUANTIZE {in_q.s:g}/{in_q.zp}"))
    w = ALL_INT8.reshape(4, 64)
    scales = np.float32([0.1, 0.003, 1.7, 1e-5])
    pq = QParams.per_axis(scales, np.zeros(4, np.int64), 0)
    f = (rng.standard_normal((3, 4, 5)) * 2).astype(np.float32)
    fq = QParams.per_axis(np.float32([0.01, 0.02, 0.05, 0.5]), np.array([0, 3, -7, 100]), 1)
    cases.append(Case("QUANTIZE", [spec("x", f.shape, np.float32)], [spec("y", f.shape, q=fq)],
                      {}, [f], "QUANTIZE float -> per-axis int8"))
    cases.append(Case("DEQUANTIZE", [spec("w", w.shape, q=pq, data=w)],
                      [spec("y", w.shape, np.float32)], {}, [], "DEQUANTIZE per-axis"))
    return cases


def test_quantize_dequantize_sweep(oracle):
    assert_bit_exact(oracle, quantize_cases(21))


def softmax_cases(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        rank = int(rng.integers(1, 5))
        out_dtype = np.int8 if rng.integers(4) else np.int16
        # int8 rows of 512+ values may abort LiteRT (see test_softmax_wide_row_abort)
        depths = [1, 2, 5, 10, 100, 511] if out_dtype == np.int8 else [1, 10, 1001, 5000]
        shape = tuple(int(rng.choice([1, 2, 3, 10, 37])) for _ in range(rank - 1)) + (
            int(rng.choice(depths)),)
        in_q = qt(_log_uniform(rng, 1e-6, 2.0), _zp(rng))
        beta = float(rng.choice([1.0, 1.0, 0.5, 2.0, 0.01]))
        out_q = qt(1 / 256, -128) if out_dtype == np.int8 else qt(1 / 32768, 0)
        x = _int8(rng, shape)
        if rng.integers(3) == 0:
            x = np.clip(x, -3, 5).astype(np.int8)  # many ties with the row maximum
        case = Case("SOFTMAX", [spec("x", shape, q=in_q)], [spec("y", shape, out_dtype, out_q)],
                    {"beta": beta}, [x], f"SOFTMAX {shape} in {in_q.s:g}/{in_q.zp} beta {beta}"
                                         f" -> {np.dtype(out_dtype)}")
        try:
            prepare("SOFTMAX", case.call())
        except Refusal:
            continue
        cases.append(case)
    return cases


def test_softmax_sweep(oracle):
    assert_bit_exact(oracle, softmax_cases(31, 200))


def test_softmax_wide_row_abort(oracle):
    """512 equal int8 values: the reciprocal's exponent is 32 and LiteRT's TFLITE_CHECK aborts;
    our kernel raises KernelError instead of returning numbers."""
    x = np.zeros((1, 512), np.int8)
    case = Case("SOFTMAX", [spec("x", x.shape, q=qt(0.1, 0))],
                [spec("y", x.shape, q=qt(1 / 256, -128))], {"beta": 1.0}, [x])
    ref = oracle(batch_model([case]), [[x]], keep_all_tensors=False)
    assert ref.refused and "abort" in ref.refused
    with pytest.raises(KernelError, match="SOFTMAX: a row of 512 values"):
        case.ours()
    narrower = Case("SOFTMAX", [spec("x", (1, 511), q=qt(0.1, 0))],
                    [spec("y", (1, 511), q=qt(1 / 256, -128))], {"beta": 1.0},
                    [np.zeros((1, 511), np.int8)])
    assert_bit_exact(oracle, [narrower])
