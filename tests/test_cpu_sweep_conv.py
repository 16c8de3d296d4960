"""CONV_2D, DEPTHWISE_CONV_2D and FULLY_CONNECTED against LiteRT's reference kernels: seeded
random grids over shapes, strides, paddings, dilations, groups, depth multipliers, per-tensor
and per-channel quantization, extreme scales and zero points, fused activations."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.kernels.base import window_geometry
from qaccel.kernels.qparams import QParams
from test_cpu_kernels import Case, assert_bit_exact, qt, spec

pytest.importorskip("ai_edge_litert")

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def _log_uniform(rng, lo: float, hi: float, size=None):
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size=size)).astype(np.float32)


def _zero_point(rng) -> int:
    return int(rng.choice([-128, -127, -1, 0, 1, 5, 100, 127, int(rng.integers(-128, 128))]))


def _out_scale(rng, in_s: float, w_s: float, k: int) -> float:
    """Mostly realistic output scales; sometimes extreme ones (multiplier above 1, or tiny)."""
    typical = in_s * w_s * np.sqrt(k) * 40
    kind = rng.integers(10)
    if kind == 0:
        return float(typical * 1e-4)  # effective multiplier > 1: positive shift
    if kind == 1:
        return float(typical * 1e4)  # most outputs collapse to the zero point
    return float(typical * _log_uniform(rng, 0.1, 10))


def _weights_q(rng, channels: int, axis: int, per_channel: bool) -> QParams:
    if per_channel:
        scales = _log_uniform(rng, 1e-4, 0.05, channels)
        return QParams.per_axis(scales, np.zeros(channels, np.int64), axis)
    return qt(float(_log_uniform(rng, 1e-4, 0.05)), 0)


def _int8(rng, shape, low=-128, high=127):
    return rng.integers(low, high, size=tuple(shape), endpoint=True, dtype=np.int8)


def _bias(rng, n: int) -> np.ndarray:
    magnitude = int(rng.choice([0, 100, 1 << 12, 1 << 20]))
    return rng.integers(-magnitude, magnitude, size=n, endpoint=True, dtype=np.int32)


def conv_cases(seed: int, count: int, depthwise: bool) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        n = int(rng.choice([1, 1, 2]))
        h, w = (int(v) for v in rng.integers(1, 14, size=2))
        kh, kw = (int(rng.choice([1, 2, 3, 3, 5])) for _ in range(2))
        sh, sw = (int(rng.choice([1, 1, 2, 3])) for _ in range(2))
        dh, dw = (int(rng.choice([1, 1, 1, 2, 3])) for _ in range(2))
        padding = str(rng.choice(["SAME", "VALID"]))
        out_h, _ = window_geometry(padding, h, kh, sh, dh)
        out_w, _ = window_geometry(padding, w, kw, sw, dw)
        if out_h <= 0 or out_w <= 0:
            continue
        per_channel = bool(rng.integers(4) > 0)
        if depthwise:
            cin = int(rng.choice([1, 2, 3, 8, 16]))
            mult = int(rng.choice([1, 1, 2, 3]))
            cout = cin * mult
            w_shape = (1, kh, kw, cout)
            w_q = _weights_q(rng, cout, 3, per_channel)
        else:
            groups = int(rng.choice([1, 1, 1, 2, 4]))
            cin_g = int(rng.choice([1, 3, 4, 8, 16]))
            cin = cin_g * groups
            cout = groups * int(rng.choice([1, 2, 4, 8]))
            w_shape = (cout, kh, kw, cin_g)
            w_q = _weights_q(rng, cout, 0, per_channel)
        in_q = qt(float(_log_uniform(rng, 1e-3, 0.5)), _zero_point(rng))
        k = kh * kw * (1 if depthwise else cin // (cin // w_shape[3] if not depthwise else 1))
        out_q = qt(_out_scale(rng, in_q.s, float(np.max(w_q.scale)), k), _zero_point(rng))
        bias_q = QParams(np.float32(in_q.s) * w_q.scale, np.zeros(w_q.scale.size, np.int64),
                         0 if per_channel else None)
        with_bias = depthwise is False or bool(rng.integers(4) > 0)
        inputs = [
            spec("x", (n, h, w, cin), q=in_q),
            spec("w", w_shape, q=w_q, data=_int8(rng, w_shape, -127, 127)),
        ]
        if with_bias:  # a depthwise conv without bias lists two inputs (-1 is refused)
            inputs.append(spec("b", (cout,), np.int32, bias_q, _bias(rng, cout)))
        options = {"padding": padding, "stride_h": sh, "stride_w": sw,
                   "dilation_h_factor": dh, "dilation_w_factor": dw,
                   "fused_activation_function": str(rng.choice(ACTIVATIONS))}
        if depthwise:
            options["depth_multiplier"] = cout // cin
        op = "DEPTHWISE_CONV_2D" if depthwise else "CONV_2D"
        x = _int8(rng, (n, h, w, cin))
        cases.append(Case(op, inputs, [spec("y", (n, out_h, out_w, cout), q=out_q)], options,
                          [x], f"{op} #{len(cases)} seed {seed} x{(n, h, w, cin)} w{w_shape} "
                               f"{options} in_q {in_q.s:g}/{in_q.zp} out_q {out_q.s:g}/{out_q.zp}"))
    return cases


@pytest.mark.parametrize("seed", [1, 2])
def test_conv2d_sweep(oracle, seed):
    assert_bit_exact(oracle, conv_cases(seed, 250, depthwise=False))


@pytest.mark.parametrize("seed", [3, 4])
def test_depthwise_conv2d_sweep(oracle, seed):
    assert_bit_exact(oracle, conv_cases(seed, 250, depthwise=True))


def fc_cases(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        units = int(rng.choice([1, 3, 10, 64]))
        depth = int(rng.choice([1, 5, 16, 100, 300]))
        keep = bool(rng.integers(2))
        lead = [(2,), (1, 3), (4,), (2, 2, 1)][int(rng.integers(4))]
        x_shape = lead + (depth,)
        per_channel = bool(rng.integers(2))
        w_q = _weights_q(rng, units, 0, per_channel)
        if not per_channel and rng.integers(3) == 0:
            # per-tensor weights may be asymmetric: the kernel subtracts their zero point
            w_q = qt(w_q.s, int(rng.integers(-10, 10)))
        in_q = qt(float(_log_uniform(rng, 1e-3, 0.5)), _zero_point(rng))
        out_q = qt(_out_scale(rng, in_q.s, float(np.max(w_q.scale)), depth), _zero_point(rng))
        bias_q = QParams(np.float32(in_q.s) * w_q.scale, np.zeros(w_q.scale.size, np.int64),
                         0 if per_channel else None)
        with_bias = bool(rng.integers(4) > 0)
        out_shape = lead + (units,) if keep else (int(np.prod(lead)), units)
        inputs = [
            spec("x", x_shape, q=in_q),
            spec("w", (units, depth), q=w_q, data=_int8(rng, (units, depth), -127, 127)),
            spec("b", (units,), np.int32, bias_q, _bias(rng, units)) if with_bias else None,
        ]
        options = {"fused_activation_function": str(rng.choice(ACTIVATIONS)),
                   "keep_num_dims": keep}
        cases.append(Case("FULLY_CONNECTED", inputs, [spec("y", out_shape, q=out_q)], options,
                          [_int8(rng, x_shape)],
                          f"FC #{i} seed {seed} x{x_shape} units {units} per_channel "
                          f"{per_channel} w_zp {w_q.zero_point[0]} {options}"))
    return cases


def test_fully_connected_sweep(oracle):
    assert_bit_exact(oracle, fc_cases(5, 300))
