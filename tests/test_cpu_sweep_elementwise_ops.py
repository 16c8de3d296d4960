"""NEG, SQRT, RSQRT, SQUARED_DIFFERENCE, MAXIMUM, MINIMUM, DIV, PRELU, LEAKY_RELU, GELU, TANH
and LOG_SOFTMAX against LiteRT's reference kernels: seeded random grids over shapes, scales,
zero points and options; table-driven and per-value ops see every int8 input value."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.kernels.registry import KernelError, Refusal, prepare
from test_cpu_kernels import Case, assert_bit_exact, qt, spec
from test_cpu_sweep_elementwise import _broadcast_pair, _int8, _log_uniform, _zp

pytest.importorskip("ai_edge_litert")

ALL_INT8 = np.arange(-128, 128, dtype=np.int8).reshape(1, 256)
ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def _accepted(cases: list[Case], case: Case) -> None:
    try:
        prepare(case.op, case.call())
    except Refusal:
        return
    cases.append(case)


def unary_table_cases(seed: int, rounds: int) -> list[Case]:
    """Every int8 value through the per-value ops, at random scales and zero points."""
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    x = ALL_INT8
    for i in range(rounds):
        in_q = qt(_log_uniform(rng, 1e-3, 0.5), _zp(rng))
        out_q = qt(in_q.s * _log_uniform(rng, 0.1, 10), _zp(rng))
        cases.append(Case("NEG", [spec("x", x.shape, q=in_q)], [spec("y", x.shape, q=out_q)],
                          {}, [x], f"NEG {in_q.s:g}/{in_q.zp}"))
        for approximate in (False, True):
            g_in = qt(_log_uniform(rng, 1e-3, 0.2), _zp(rng))
            g_out = qt(g_in.s * _log_uniform(rng, 0.3, 3), _zp(rng))
            cases.append(Case("GELU", [spec("x", x.shape, q=g_in)], [spec("y", x.shape, q=g_out)],
                              {"approximate": approximate}, [x],
                              f"GELU approximate={approximate} in {g_in.s:g}/{g_in.zp} "
                              f"out {g_out.s:g}/{g_out.zp}"))
        t_in = qt(_log_uniform(rng, 1e-3, 0.3), _zp(rng))
        t_out = qt(_log_uniform(rng, 1 / 300, 0.05), _zp(rng))
        cases.append(Case("TANH", [spec("x", x.shape, q=t_in)], [spec("y", x.shape, q=t_out)],
                          {}, [x], f"TANH in {t_in.s:g}/{t_in.zp} out {t_out.s:g}/{t_out.zp}"))
        alpha = float(rng.choice([0.01, 0.1, 0.2, 0.3, 0.5, 0.99, 1.0, 1.7, -0.2, 0.0]))
        cases.append(Case("LEAKY_RELU", [spec("x", x.shape, q=in_q)], [spec("y", x.shape, q=out_q)],
                          {"alpha": alpha}, [x], f"LEAKY_RELU alpha {alpha} {in_q.s:g}/{in_q.zp}"
                                                 f" -> {out_q.s:g}/{out_q.zp}"))
        # SQRT and RSQRT take only values at or above the zero point (LiteRT fails otherwise).
        zp = int(rng.integers(-128, 0))
        nonneg = np.arange(zp, 128, dtype=np.int8).reshape(1, -1)
        r_in = qt(_log_uniform(rng, 1e-3, 1.0), zp)
        for op in ("SQRT", "RSQRT"):
            r_out = qt(_log_uniform(rng, 1e-3, 1.0), _zp(rng))
            _accepted(cases, Case(op, [spec("x", nonneg.shape, q=r_in)],
                                  [spec("y", nonneg.shape, q=r_out)], {}, [nonneg],
                                  f"{op} in {r_in.s:g}/{r_in.zp} out {r_out.s:g}/{r_out.zp}"))
    return cases


def test_unary_table_sweep(oracle):
    assert_bit_exact(oracle, unary_table_cases(61, 10))


def test_int16_variants(oracle):
    """The int16 flavours: NEG, SQRT, LEAKY_RELU (zero points 0), MAXIMUM, MINIMUM, PRELU
    (int8 alpha), DIV, REDUCE_MAX, REDUCE_MIN, and GELU and RSQRT through LiteRT's interpolated
    int16 tables."""
    rng = np.random.default_rng(62)
    x = rng.integers(-32768, 32767, size=(4, 300), endpoint=True, dtype=np.int16)
    x[0, :4] = [-32768, 32767, 0, -1]
    cases = [Case("NEG", [spec("x", x.shape, np.int16, qt(0.01, 0))],
                  [spec("y", x.shape, np.int16, qt(0.01, 0))], {}, [x], "NEG int16")]
    for alpha in (0.1, -0.5, 1.3):
        out_q = qt(_log_uniform(rng, 1e-4, 1e-2), 0)
        cases.append(Case("LEAKY_RELU", [spec("x", x.shape, np.int16, qt(1e-3, 0))],
                          [spec("y", x.shape, np.int16, out_q)], {"alpha": alpha}, [x],
                          f"LEAKY_RELU int16 alpha {alpha} out {out_q.s:g}"))
    nonneg = np.abs(x.astype(np.int32)).clip(0, 32767).astype(np.int16)
    cases.append(Case("SQRT", [spec("x", x.shape, np.int16, qt(0.02, 0))],
                      [spec("y", x.shape, np.int16, qt(0.003, 0))], {}, [nonneg], "SQRT int16"))
    y = rng.integers(-32768, 32767, size=(300,), endpoint=True, dtype=np.int16)
    for op in ("MAXIMUM", "MINIMUM"):
        cases.append(Case(op, [spec("a", x.shape, np.int16, qt(0.1, 0)),
                               spec("b", y.shape, np.int16, qt(0.1, 0))],
                          [spec("y", x.shape, np.int16, qt(0.1, 0))], {}, [x, y], f"{op} int16"))
    alpha = rng.integers(-128, 127, size=(300,), endpoint=True, dtype=np.int8)
    cases.append(Case("PRELU", [spec("x", x.shape, np.int16, qt(1e-3, 0)),
                                spec("a", alpha.shape, np.int8, qt(0.01, 3), data=alpha)],
                      [spec("y", x.shape, np.int16, qt(2e-3, 0))], {}, [x], "PRELU int16"))
    hw = np.array([0, -1], np.int32)
    for op in ("REDUCE_MAX", "REDUCE_MIN"):
        cases.append(Case(op, [spec("x", x.shape, np.int16, qt(0.1, 0)),
                               spec("a", (2,), np.int32, data=hw)],
                          [spec("y", (), np.int16, qt(0.1, 0))], {"keep_dims": False}, [x],
                          f"{op} int16"))
    d = rng.integers(-32768, 32767, size=(300,), endpoint=True, dtype=np.int16)
    d[d == 5] = 6
    for act, out_q in (("NONE", qt(3e-3, 0)), ("RELU", qt(0.4, -7))):
        cases.append(Case("DIV", [spec("a", x.shape, np.int16, qt(1e-3, 0)),
                                  spec("b", d.shape, np.int16, qt(2e-3, 5))],
                          [spec("y", x.shape, np.int16, out_q)],
                          {"fused_activation_function": act}, [x, d], f"DIV int16 {act}"))
    # GELU and RSQRT interpolate in a 513-entry table: every int16 value
    every = np.arange(-32768, 32768, dtype=np.int16).reshape(1, -1)
    for approximate, in_q, out_q in ((False, qt(3e-4, 17), qt(2e-4, -40)),
                                     (True, qt(1e-4, -250), qt(8e-5, 3))):
        cases.append(Case("GELU", [spec("x", every.shape, np.int16, in_q)],
                          [spec("y", every.shape, np.int16, out_q)],
                          {"approximate": approximate}, [every],
                          f"GELU int16 approximate={approximate}"))
    positive = every[:, 32768:]
    cases.append(Case("RSQRT", [spec("x", positive.shape, np.int16, qt(2e-4, 0))],
                      [spec("y", positive.shape, np.int16, qt(3e-3, 0))], {}, [positive],
                      "RSQRT int16"))
    assert_bit_exact(oracle, cases)


def binary_cases(seed: int, count: int) -> list[Case]:
    """SQUARED_DIFFERENCE, MAXIMUM, MINIMUM and DIV over broadcast shapes and scales."""
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    ops = ["SQUARED_DIFFERENCE", "MAXIMUM", "MINIMUM", "DIV"]
    while len(cases) < count:
        op = ops[len(cases) % len(ops)]
        a_shape, b_shape, out_shape = _broadcast_pair(rng)
        s1 = _log_uniform(rng, 1e-3, 1.0)
        s2 = s1 * _log_uniform(rng, 1e-2, 1e2) if rng.integers(3) else s1
        if op == "SQUARED_DIFFERENCE":
            out_s = max(s1, s2) ** 2 * _log_uniform(rng, 0.5, 500)
        elif op == "DIV":
            out_s = s1 / s2 * _log_uniform(rng, 0.05, 20)
        else:
            out_s = s1
        q1, q2, qo = qt(s1, _zp(rng)), qt(s2, _zp(rng)), qt(out_s, _zp(rng))
        options = {}
        a, b = _int8(rng, a_shape), _int8(rng, b_shape)
        if op == "DIV":
            options["fused_activation_function"] = str(rng.choice(ACTIVATIONS))
            b = np.where(b == q2.zp, np.int8(q2.zp + (1 if q2.zp < 127 else -1)), b).astype(
                np.int8)
        _accepted(cases, Case(op, [spec("a", a_shape, q=q1), spec("b", b_shape, q=q2)],
                              [spec("y", out_shape, q=qo)], options, [a, b],
                              f"{op} #{len(cases)} {a_shape}x{b_shape} scales {s1:g},{s2:g}->"
                              f"{out_s:g} zps {q1.zp},{q2.zp}->{qo.zp} {options}"))
    return cases


def test_binary_sweep(oracle):
    assert_bit_exact(oracle, binary_cases(63, 240))


def prelu_cases(seed: int, count: int) -> list[Case]:
    """PRELU with a constant alpha broadcast along the trailing axes (as converters emit
    it) or of the input's full shape."""
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    while len(cases) < count:
        rank = int(rng.integers(1, 5))
        shape = tuple(int(rng.choice([1, 2, 3, 5, 8])) for _ in range(rank))
        alpha_shape = shape[int(rng.integers(0, rank)):]
        alpha_shape = tuple(d if rng.integers(3) else 1 for d in alpha_shape)
        in_q = qt(_log_uniform(rng, 1e-3, 0.5), _zp(rng))
        a_q = qt(_log_uniform(rng, 1e-3, 0.05), _zp(rng))
        out_q = qt(in_q.s * _log_uniform(rng, 0.2, 5), _zp(rng))
        alpha = _int8(rng, alpha_shape)
        _accepted(cases, Case("PRELU", [spec("x", shape, q=in_q),
                                        spec("a", alpha_shape, q=a_q, data=alpha)],
                              [spec("y", shape, q=out_q)], {}, [_int8(rng, shape)],
                              f"PRELU {shape} alpha {alpha_shape} in {in_q.s:g}/{in_q.zp} "
                              f"alpha {a_q.s:g}/{a_q.zp} out {out_q.s:g}/{out_q.zp}"))
    return cases


def test_prelu_sweep(oracle):
    assert_bit_exact(oracle, prelu_cases(64, 60))


def log_softmax_cases(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases: list[Case] = []
    while len(cases) < count:
        rank = int(rng.integers(1, 4))
        shape = tuple(int(rng.choice([1, 2, 3, 7])) for _ in range(rank - 1)) + (
            int(rng.choice([1, 2, 5, 10, 100, 1000])),)
        in_q = qt(_log_uniform(rng, 1e-4, 2.0), _zp(rng))
        x = _int8(rng, shape)
        if rng.integers(3) == 0:
            x = np.clip(x, -3, 5).astype(np.int8)
        _accepted(cases, Case("LOG_SOFTMAX", [spec("x", shape, q=in_q)],
                              [spec("y", shape, q=qt(16 / 256, 127))], {}, [x],
                              f"LOG_SOFTMAX {shape} in {in_q.s:g}/{in_q.zp}"))
    return cases


def test_log_softmax_sweep(oracle):
    assert_bit_exact(oracle, log_softmax_cases(65, 80))


def test_kernel_errors_where_litert_fails_in_eval():
    """Values LiteRT's Eval rejects: a negative SQRT/RSQRT input, a DIV by the zero point."""
    x = np.array([[3, -5]], np.int8)
    for op in ("SQRT", "RSQRT"):
        with pytest.raises(KernelError, match=op):
            Case(op, [spec("x", x.shape, q=qt(0.1, 0))], [spec("y", x.shape, q=qt(0.1, 0))],
                 {}, [x]).ours()
    with pytest.raises(KernelError, match="DIV: division by zero"):
        Case("DIV", [spec("a", x.shape, q=qt(0.1, 0)), spec("b", x.shape, q=qt(0.1, 3))],
             [spec("y", x.shape, q=qt(0.1, 0))], {}, [x, np.array([[3, 4]], np.int8)]).ours()
