"""Float32 ops (float models) against LiteRT's reference kernels, bit for bit."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.kernels.base import window_geometry
from test_cpu_kernels import Case, assert_bit_exact, spec

pytest.importorskip("ai_edge_litert")

F32 = np.float32
ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def _f32(rng, shape, scale=1.0):
    return (rng.standard_normal(tuple(shape)) * scale).astype(F32)


def conv_like_cases(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        op = ["CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED"][len(cases) % 3]
        act = str(rng.choice(ACTIVATIONS))
        if op == "FULLY_CONNECTED":
            units, depth = int(rng.choice([1, 4, 16])), int(rng.choice([1, 7, 64]))
            x = _f32(rng, (3, depth))
            w = _f32(rng, (units, depth), 0.3)
            inputs = [spec("x", x.shape, F32), spec("w", w.shape, F32, data=w),
                      spec("b", (units,), F32, data=_f32(rng, (units,)))]
            cases.append(Case(op, inputs, [spec("y", (3, units), F32)],
                              {"fused_activation_function": act}, [x],
                              f"FC float {x.shape} units {units} {act}"))
            continue
        h, w_ = (int(v) for v in rng.integers(2, 10, size=2))
        kh, kw = (int(rng.choice([1, 3, 5])) for _ in range(2))
        sh, sw = (int(rng.choice([1, 2])) for _ in range(2))
        dh, dw = (int(rng.choice([1, 2])) for _ in range(2))
        padding = str(rng.choice(["SAME", "VALID"]))
        out_h, _ = window_geometry(padding, h, kh, sh, dh)
        out_w, _ = window_geometry(padding, w_, kw, sw, dw)
        if out_h <= 0 or out_w <= 0:
            continue
        cin = int(rng.choice([1, 3, 8]))
        if op == "CONV_2D":
            cout = int(rng.choice([1, 4, 8]))
            w_shape = (cout, kh, kw, cin)
        else:
            cout = cin * int(rng.choice([1, 2]))
            w_shape = (1, kh, kw, cout)
        x = _f32(rng, (1, h, w_, cin))
        inputs = [spec("x", x.shape, F32), spec("w", w_shape, F32, data=_f32(rng, w_shape, 0.3)),
                  spec("b", (cout,), F32, data=_f32(rng, (cout,)))]
        options = {"padding": padding, "stride_h": sh, "stride_w": sw, "dilation_h_factor": dh,
                   "dilation_w_factor": dw, "fused_activation_function": act}
        if op == "DEPTHWISE_CONV_2D":
            options["depth_multiplier"] = cout // cin
        cases.append(Case(op, inputs, [spec("y", (1, out_h, out_w, cout), F32)], options, [x],
                          f"{op} float x{x.shape} w{w_shape} {options}"))
    return cases


def test_float_conv_fc_sweep(oracle):
    assert_bit_exact(oracle, conv_like_cases(51, 60))


def test_float_conv_signed_zeros(oracle):
    """Zero inputs, negative weights, a -0.0 bias: the sign of a zero result depends on the
    reference kernel skipping out-of-image taps instead of adding padded zeros."""
    x = np.zeros((1, 3, 3, 2), F32)
    x[0, 1, 1, 0] = -0.0
    w = -np.ones((2, 3, 3, 2), F32)
    cases = []
    for op, w_shape in (("CONV_2D", (2, 3, 3, 2)), ("DEPTHWISE_CONV_2D", (1, 3, 3, 2))):
        for bias in (F32([-0.0, 0.0]), F32([-0.0, -0.0])):
            options = {"padding": "SAME", "stride_h": 1, "stride_w": 1,
                       "fused_activation_function": "NONE"}
            if op == "DEPTHWISE_CONV_2D":
                options["depth_multiplier"] = 1
            cases.append(Case(op, [spec("x", x.shape, F32),
                                   spec("w", w_shape, F32, data=-np.ones(w_shape, F32)),
                                   spec("b", (2,), F32, data=bias)],
                              [spec("y", (1, 3, 3, 2), F32)], options, [x],
                              f"{op} signed zeros bias {bias}"))
    assert_bit_exact(oracle, cases)
    assert w is not None


def elementwise_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for op in ("ADD", "SUB", "MUL"):
        for a_shape, b_shape in (((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 5))):
            act = str(rng.choice(ACTIVATIONS))
            out = np.broadcast_shapes(a_shape, b_shape)
            cases.append(Case(op, [spec("a", a_shape, F32), spec("b", b_shape, F32)],
                              [spec("y", out, F32)], {"fused_activation_function": act},
                              [_f32(rng, a_shape, 4), _f32(rng, b_shape, 4)],
                              f"{op} float {a_shape}x{b_shape} {act}"))
    # libm's expf and tanhf are not correctly rounded: thousands of samples catch a kernel
    # that rounds exp or tanh differently (about 3 in 10,000 values differ).
    specials = F32([0, -0.0, 20, -20, 16.7, -9.5, 3, -3, 6, 1e-30, -1e-30, 88.8, -104, 30,
                    np.inf, -np.inf, np.nan])
    x = np.concatenate([_f32(rng, (40000,), 6), rng.uniform(-30, 30, 10000).astype(F32),
                        specials])
    x = x.reshape(1, -1)
    for op, options in (("RELU", {}), ("RELU6", {}), ("RELU_N1_TO_1", {}),
                        ("LEAKY_RELU", {"alpha": 0.2}), ("LOGISTIC", {}), ("TANH", {}),
                        ("HARD_SWISH", {})):
        cases.append(Case(op, [spec("x", x.shape, F32)], [spec("y", x.shape, F32)], options,
                          [x], f"{op} float"))
    for beta in (1.0, 0.3):
        s = _f32(rng, (300, 33), 3)
        cases.append(Case("SOFTMAX", [spec("x", s.shape, F32)], [spec("y", s.shape, F32)],
                          {"beta": beta}, [s], f"SOFTMAX float beta {beta}"))
    return cases


def test_float_elementwise_sweep(oracle):
    assert_bit_exact(oracle, elementwise_cases(52))


def pool_reduce_resize_cases(seed: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(20):
        op = "AVERAGE_POOL_2D" if i % 2 else "MAX_POOL_2D"
        h, w = (int(v) for v in rng.integers(2, 12, size=2))
        fh, fw = (int(rng.choice([1, 2, 3, 7])) for _ in range(2))
        s = int(rng.choice([1, 2]))
        padding = str(rng.choice(["SAME", "VALID"]))
        out_h, _ = window_geometry(padding, h, fh, s)
        out_w, _ = window_geometry(padding, w, fw, s)
        if out_h <= 0 or out_w <= 0:
            continue
        x = _f32(rng, (1, h, w, 3))
        options = {"padding": padding, "stride_h": s, "stride_w": s, "filter_height": fh,
                   "filter_width": fw, "fused_activation_function": str(rng.choice(ACTIVATIONS))}
        cases.append(Case(op, [spec("x", x.shape, F32)], [spec("y", (1, out_h, out_w, 3), F32)],
                          options, [x], f"{op} float {x.shape} {options}"))
    x = _f32(rng, (2, 5, 6, 7), 10)
    for op in ("MEAN", "SUM"):
        for axes, keep in (([1, 2], True), ([0], False), ([-1, 1], False), ([0, 1, 2, 3], True)):
            out = tuple(1 if d in {a % 4 for a in axes} else n for d, n in enumerate(x.shape)) \
                if keep else tuple(n for d, n in enumerate(x.shape) if d not in
                                   {a % 4 for a in axes})
            cases.append(Case(op, [spec("x", x.shape, F32),
                                   spec("a", (len(axes),), np.int32,
                                        data=np.array(axes, np.int32))],
                              [spec("y", out, F32)], {"keep_dims": keep}, [x],
                              f"{op} float axes {axes} keep {keep}"))
    img = _f32(rng, (1, 5, 4, 2))
    for ac, hp in ((False, False), (True, False), (False, True)):
        for size in ((9, 7), (3, 2), (5, 4)):
            cases.append(Case("RESIZE_BILINEAR", [spec("x", img.shape, F32),
                                                  spec("s", (2,), np.int32,
                                                       data=np.array(size, np.int32))],
                              [spec("y", (1,) + size + (2,), F32)],
                              {"align_corners": ac, "half_pixel_centers": hp}, [img],
                              f"RESIZE_BILINEAR float {size} {ac} {hp}"))
    return cases


def test_float_pool_reduce_resize_sweep(oracle):
    assert_bit_exact(oracle, pool_reduce_resize_cases(53))


def float_island_cases(seed: int) -> list[Case]:
    """The float ops converters leave between DEQUANTIZE and QUANTIZE (LayerNormalization's
    NEG, RSQRT, SQUARED_DIFFERENCE, MEAN, ...), with infinities, NaN and signed zeros."""
    rng = np.random.default_rng(seed)
    specials = F32([0, -0.0, 1, -1, 0.5, 3, 1e-30, -1e-30, 1e30, -1e30, 1e-45, np.inf, -np.inf,
                    np.nan])
    x = np.concatenate([_f32(rng, (4000,), 5), np.abs(_f32(rng, (4000,), 1e3)), specials])
    x = x.reshape(1, -1)
    cases = [Case(op, [spec("x", x.shape, F32)], [spec("y", x.shape, F32)], {}, [x],
                  f"{op} float") for op in ("NEG", "SQRT", "RSQRT")]
    pairs = (((2, 3, 4), (2, 3, 4)), ((2, 3, 4), (4,)), ((1, 3, 1), (2, 1, 5)), ((5,), (1,)))
    for op in ("SQUARED_DIFFERENCE", "DIV", "MAXIMUM", "MINIMUM", "POW"):
        for a_shape, b_shape in pairs:
            a, b = _f32(rng, a_shape, 4), _f32(rng, b_shape, 4)
            options = {}
            if op == "DIV":
                options["fused_activation_function"] = str(rng.choice(ACTIVATIONS))
                b.reshape(-1)[:2] = F32([0.0, -0.0])[:b.size]
            if op == "POW":
                a = np.abs(a)
                b.reshape(-1)[::2] = np.round(b.reshape(-1)[::2] * 2) / 4
            if op in ("MAXIMUM", "MINIMUM"):
                a.reshape(-1)[:3] = [np.nan, 0.0, -0.0]
                b.reshape(-1)[:1] = [-0.0]
            out = np.broadcast_shapes(a_shape, b_shape)
            cases.append(Case(op, [spec("a", a_shape, F32), spec("b", b_shape, F32)],
                              [spec("y", out, F32)], options, [a, b],
                              f"{op} float {a_shape}x{b_shape} {options}"))
    # powf is not correctly rounded: thousands of pairs catch a kernel that rounds otherwise
    base = np.concatenate([np.abs(_f32(rng, (6000,), 5)), _f32(rng, (2000,), 3)]).reshape(1, -1)
    exponent = np.concatenate([_f32(rng, (6000,), 3), np.round(_f32(rng, (2000,), 3))])
    cases.append(Case("POW", [spec("a", base.shape, F32), spec("b", base.shape, F32)],
                      [spec("y", base.shape, F32)], {}, [base, exponent.reshape(1, -1)],
                      "POW float, 8000 pairs"))
    for alpha_shape in ((7,), (1, 7), (3, 1, 7)):
        v = _f32(rng, (2, 3, 5, 7), 3)
        v.reshape(-1)[:2] = [-0.0, np.nan]
        alpha = _f32(rng, alpha_shape, 0.3)
        cases.append(Case("PRELU", [spec("x", v.shape, F32),
                                    spec("a", alpha_shape, F32, data=alpha)],
                          [spec("y", v.shape, F32)], {}, [v], f"PRELU float alpha {alpha_shape}"))
    # logf and expf are not correctly rounded: thousands of rows
    rows = _f32(rng, (400, 33), 4)
    rows[0, :3] = [np.nan, np.inf, -np.inf]
    rows[1, :] = -0.0
    cases.append(Case("LOG_SOFTMAX", [spec("x", rows.shape, F32)], [spec("y", rows.shape, F32)],
                      {}, [rows], "LOG_SOFTMAX float"))
    # LayerNormalization's statistics: MEAN over the last axis, keep_dims, as converters emit it.
    v = _f32(rng, (2, 7, 96), 3)
    axes = np.array([-1], np.int32)
    for op in ("MEAN", "SUM"):
        cases.append(Case(op, [spec("x", v.shape, F32), spec("a", (1,), np.int32, data=axes)],
                          [spec("y", (2, 7, 1), F32)], {"keep_dims": True}, [v],
                          f"{op} float last axis"))
    s = F32([[-0.0, 0.0, -0.0], [-0.0, -0.0, -0.0]])
    every = np.array([0, 1], np.int32)
    for op in ("SUM", "REDUCE_MAX", "REDUCE_MIN"):
        cases.append(Case(op, [spec("x", s.shape, F32), spec("a", (2,), np.int32, data=every)],
                          [spec("y", (), F32)], {"keep_dims": False}, [s],
                          f"{op} float over every axis from -0.0"))
    return cases


def test_float_island_sweep(oracle):
    assert_bit_exact(oracle, float_island_cases(54))
