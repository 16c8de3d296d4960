"""TRANSPOSE_CONV and BATCH_MATMUL against LiteRT's reference kernels: seeded random grids over
shapes, strides, paddings, output shapes, per-tensor and per-channel weights, bias or none,
fused activations, adjoints, broadcast batch dimensions, ranks 2 to 5, constant operands,
extreme scales and zero points."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.kernels.base import window_geometry
from qaccel.kernels.gemm import batch_matmul_output_shape
from qaccel.kernels.qparams import QParams
from test_cpu_kernels import Case, assert_bit_exact, qt, spec

pytest.importorskip("ai_edge_litert")

ACTIVATIONS = ["NONE", "RELU", "RELU6", "RELU_N1_TO_1"]


def _log_uniform(rng, lo: float, hi: float, size=None):
    return np.exp(rng.uniform(np.log(lo), np.log(hi), size=size)).astype(np.float32)


def _zp(rng) -> int:
    return int(rng.choice([-128, -127, -1, 0, 1, 5, 100, 127, int(rng.integers(-128, 128))]))


def _int8(rng, shape):
    return rng.integers(-128, 127, size=tuple(shape), endpoint=True, dtype=np.int8)


def _out_scale(rng, typical: float) -> float:
    kind = rng.integers(10)
    if kind == 0:
        return float(typical * 1e-4)  # effective multiplier > 1
    if kind == 1:
        return float(typical * 1e4)  # outputs collapse to the zero point
    return float(typical * _log_uniform(rng, 0.1, 10))


def transpose_conv_cases(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    while len(cases) < count:
        n = int(rng.choice([1, 1, 2]))
        h, w = (int(v) for v in rng.integers(1, 9, size=2))
        cin, cout = int(rng.choice([1, 3, 8])), int(rng.choice([1, 2, 5, 16]))
        kh, kw = (int(rng.choice([1, 2, 3, 4, 5])) for _ in range(2))
        sh, sw = (int(rng.choice([1, 2, 3])) for _ in range(2))
        padding = str(rng.choice(["SAME", "VALID"]))
        # The converter's output size: the forward convolution of the output gives the input.
        out_h = h * sh if padding == "SAME" else (h - 1) * sh + kh
        out_w = w * sw if padding == "SAME" else (w - 1) * sw + kw
        if rng.integers(6) == 0:  # any other output size the forward geometry maps back
            out_h = max(1, out_h - int(rng.integers(0, sh)))
            if window_geometry(padding, out_h, kh, sh)[0] != h:
                continue
        in_q = qt(float(_log_uniform(rng, 1e-3, 0.5)), _zp(rng))
        per_channel = bool(rng.integers(3))
        if per_channel:
            w_q = QParams.per_axis(_log_uniform(rng, 1e-4, 0.05, cout), np.zeros(cout, np.int64), 0)
        elif rng.integers(8):
            w_q = qt(float(_log_uniform(rng, 1e-4, 0.05)), 0)
        else:  # a weight zero point, which the reference kernel ignores
            w_q = qt(float(_log_uniform(rng, 1e-4, 0.05)), int(rng.integers(-20, 20)))
        typical = in_q.s * float(np.max(w_q.scale)) * np.sqrt(kh * kw * cin) * 150
        out_q = qt(_out_scale(rng, typical), _zp(rng))
        weights = _int8(rng, (cout, kh, kw, cin))
        weights[weights == -128] = -127
        inputs = [spec("shape", (4,), np.int32, data=np.array([n, out_h, out_w, cout], np.int32)),
                  spec("w", weights.shape, q=w_q, data=weights), spec("x", (n, h, w, cin), q=in_q)]
        has_bias = bool(rng.integers(3))
        if has_bias:
            magnitude = int(rng.choice([0, 100, 1 << 12, 1 << 20]))
            bias = rng.integers(-magnitude, magnitude, size=cout, endpoint=True, dtype=np.int32)
            b_scale = np.float32(in_q.s) * np.asarray(w_q.scale, np.float32)
            b_q = (QParams.per_axis(b_scale, np.zeros(cout, np.int64), 0) if per_channel
                   else qt(float(b_scale[0]), 0))
            inputs.append(spec("b", (cout,), np.int32, q=b_q, data=bias))
        elif rng.integers(2):
            inputs.append(None)  # a bias listed as omitted (-1)
        act = str(rng.choice(ACTIVATIONS))
        options = {"padding": padding, "stride_h": sh, "stride_w": sw,
                   "fused_activation_function": act}
        cases.append(Case("TRANSPOSE_CONV", inputs, [spec("y", (n, out_h, out_w, cout), q=out_q)],
                          options, [_int8(rng, (n, h, w, cin))],
                          f"TRANSPOSE_CONV #{len(cases)} x{(n, h, w, cin)} w{weights.shape} "
                          f"out{(out_h, out_w)} {options} per_channel {per_channel} "
                          f"bias {has_bias} in {in_q.s:g}/{in_q.zp} out {out_q.s:g}/{out_q.zp}"))
    return cases


def test_transpose_conv_sweep(oracle):
    assert_bit_exact(oracle, transpose_conv_cases(61, 160))


def transpose_conv_int16_cases(seed: int, count: int) -> list[Case]:
    """16x8: int16 activations (zero points 0), int8 per-channel weights, int64 bias (or
    int32 with quantized_bias_type INT32)."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        n, h, w = int(rng.choice([1, 2])), int(rng.integers(1, 6)), int(rng.integers(1, 6))
        cin, cout = int(rng.choice([1, 3, 8])), int(rng.choice([1, 4]))
        kh, kw, sh, sw = (int(rng.choice([1, 2, 3])) for _ in range(4))
        padding = str(rng.choice(["SAME", "VALID"]))
        out_h = h * sh if padding == "SAME" else (h - 1) * sh + kh
        out_w = w * sw if padding == "SAME" else (w - 1) * sw + kw
        in_q = qt(float(_log_uniform(rng, 1e-4, 1e-2)), 0)
        w_q = QParams.per_axis(_log_uniform(rng, 1e-4, 0.05, cout), np.zeros(cout, np.int64), 0)
        typical = in_q.s * float(np.max(w_q.scale)) * np.sqrt(kh * kw * cin) * 1e4
        out_q = qt(_out_scale(rng, typical), 0)
        weights = _int8(rng, (cout, kh, kw, cin))
        weights[weights == -128] = -127
        narrow = i % 3 == 0
        bias_type = "INT32" if narrow else str(rng.choice(["FLOAT32", "INT64"]))
        inputs = [spec("shape", (4,), np.int32, data=np.array([n, out_h, out_w, cout], np.int32)),
                  spec("w", weights.shape, q=w_q, data=weights),
                  spec("x", (n, h, w, cin), np.int16, q=in_q)]
        if i % 4:
            bdtype = np.int32 if narrow else np.int64
            magnitude = int(rng.choice([0, 1000, 1 << 20, 1 << 30]))
            bias = rng.integers(-magnitude, magnitude, size=cout, endpoint=True).astype(bdtype)
            b_q = QParams.per_axis(np.float32(in_q.s) * w_q.scale.astype(np.float32),
                                   np.zeros(cout, np.int64), 0)
            inputs.append(spec("b", (cout,), bdtype, q=b_q, data=bias))
        options = {"padding": padding, "stride_h": sh, "stride_w": sw,
                   "fused_activation_function": str(rng.choice(ACTIVATIONS)),
                   "quantized_bias_type": bias_type}
        x = rng.integers(-32768, 32767, size=(n, h, w, cin), endpoint=True, dtype=np.int16)
        cases.append(Case("TRANSPOSE_CONV", inputs,
                          [spec("y", (n, out_h, out_w, cout), np.int16, q=out_q)], options, [x],
                          f"TRANSPOSE_CONV int16 #{i} x{x.shape} w{weights.shape} {options}",
                          version=3))
    return cases


def test_transpose_conv_int16_sweep(oracle):
    assert_bit_exact(oracle, transpose_conv_int16_cases(65, 40))


def transpose_conv_float_cases(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        n, h, w = 1, int(rng.integers(1, 6)), int(rng.integers(1, 6))
        cin, cout = int(rng.choice([1, 3])), int(rng.choice([1, 4]))
        kh, kw, sh, sw = (int(rng.choice([1, 2, 3])) for _ in range(4))
        padding = str(rng.choice(["SAME", "VALID"]))
        out_h = h * sh if padding == "SAME" else (h - 1) * sh + kh
        out_w = w * sw if padding == "SAME" else (w - 1) * sw + kw
        weights = rng.standard_normal((cout, kh, kw, cin)).astype(np.float32)
        inputs = [spec("shape", (4,), np.int32, data=np.array([n, out_h, out_w, cout], np.int32)),
                  spec("w", weights.shape, np.float32, data=weights),
                  spec("x", (n, h, w, cin), np.float32)]
        if i % 2:
            inputs.append(spec("b", (cout,), np.float32,
                               data=rng.standard_normal(cout).astype(np.float32)))
        options = {"padding": padding, "stride_h": sh, "stride_w": sw,
                   "fused_activation_function": str(rng.choice(ACTIVATIONS))}
        cases.append(Case("TRANSPOSE_CONV", inputs,
                          [spec("y", (n, out_h, out_w, cout), np.float32)], options,
                          [rng.standard_normal((n, h, w, cin)).astype(np.float32)],
                          f"TRANSPOSE_CONV float #{i} {options} w{weights.shape}"))
    return cases


def test_transpose_conv_float_sweep(oracle):
    assert_bit_exact(oracle, transpose_conv_float_cases(62, 30))


def _matmul_shapes(rng):
    """lhs and rhs shapes (before adjoints) with broadcastable batch dimensions."""
    rank_l, rank_r = int(rng.integers(2, 6)), int(rng.integers(2, 6))
    rank = max(rank_l, rank_r)
    batch = [int(rng.choice([1, 2, 3])) for _ in range(rank - 2)]
    a, k, c = (int(rng.choice([1, 2, 3, 5, 8, 17])) for _ in range(3))

    def batch_of(r):
        dims = batch[len(batch) - (r - 2):] if r > 2 else []
        return [1 if rng.integers(4) == 0 else d for d in dims]

    return batch_of(rank_l) + [a, k], batch_of(rank_r) + [k, c]


def batch_matmul_cases(seed: int, count: int) -> list[Case]:
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(count):
        ls, rs = _matmul_shapes(rng)
        adj_x, adj_y = bool(rng.integers(2)), bool(rng.integers(2))
        if adj_x:
            ls[-1], ls[-2] = ls[-2], ls[-1]
        if adj_y:
            rs[-1], rs[-2] = rs[-2], rs[-1]
        out_shape = batch_matmul_output_shape(ls, rs, adj_x, adj_y)
        lq = qt(float(_log_uniform(rng, 1e-3, 0.5)), _zp(rng))
        rq = qt(float(_log_uniform(rng, 1e-3, 0.5)), _zp(rng))
        depth = ls[-2] if adj_x else ls[-1]
        oq = qt(_out_scale(rng, lq.s * rq.s * np.sqrt(depth) * 200), _zp(rng))
        lhs, rhs = _int8(rng, ls), _int8(rng, rs)
        const_rhs = rng.integers(3) == 0
        if const_rhs and rng.integers(4) == 0:  # per-axis: LiteRT reads its legacy params (0, 0)
            cols = rs[-2] if adj_y else rs[-1]
            rq = QParams.per_axis(_log_uniform(rng, 1e-3, 0.1, cols), np.zeros(cols, np.int64),
                                  len(rs) - (2 if adj_y else 1))
        inputs = [spec("a", ls, q=lq), spec("b", rs, q=rq, data=rhs if const_rhs else None)]
        feeds = [lhs] if const_rhs else [lhs, rhs]
        options = {"adj_x": adj_x, "adj_y": adj_y}
        cases.append(Case("BATCH_MATMUL", inputs, [spec("y", out_shape, q=oq)], options, feeds,
                          f"BATCH_MATMUL #{i} {ls} x {rs} {options} const rhs {const_rhs} "
                          f"q {lq.s:g}/{lq.zp} {rq.scale[:2]}/{rq.zero_point[:2]} -> "
                          f"{oq.s:g}/{oq.zp}"))
    return cases


def test_batch_matmul_sweep(oracle):
    assert_bit_exact(oracle, batch_matmul_cases(63, 200))


def batch_matmul_other_type_cases(seed: int) -> list[Case]:
    """int8 x int8 -> int32 (raw products), int16 (zero points 0), float32."""
    rng = np.random.default_rng(seed)
    cases = []
    for i in range(45):
        ls, rs = _matmul_shapes(rng)
        adj_x, adj_y = bool(rng.integers(2)), bool(rng.integers(2))
        if adj_x:
            ls[-1], ls[-2] = ls[-2], ls[-1]
        if adj_y:
            rs[-1], rs[-2] = rs[-2], rs[-1]
        out_shape = batch_matmul_output_shape(ls, rs, adj_x, adj_y)
        options = {"adj_x": adj_x, "adj_y": adj_y}
        kind = ["int32", "int16", "float"][i % 3]
        if kind == "int32":
            lq, rq = qt(0.05, _zp(rng)), qt(0.02, _zp(rng))
            inputs = [spec("a", ls, q=lq), spec("b", rs, q=rq)]
            outputs = [spec("y", out_shape, np.int32)]
            feeds = [_int8(rng, ls), _int8(rng, rs)]
        elif kind == "int16":
            lq, rq = qt(float(_log_uniform(rng, 1e-4, 1e-2)), 0), qt(
                float(_log_uniform(rng, 1e-4, 1e-2)), 0)
            depth = ls[-2] if adj_x else ls[-1]
            oq = qt(_out_scale(rng, lq.s * rq.s * np.sqrt(depth) * 1e4), 0)
            inputs = [spec("a", ls, np.int16, q=lq), spec("b", rs, np.int16, q=rq)]
            outputs = [spec("y", out_shape, np.int16, q=oq)]
            feeds = [rng.integers(-32768, 32767, size=ls, endpoint=True, dtype=np.int16),
                     rng.integers(-32768, 32767, size=rs, endpoint=True, dtype=np.int16)]
        else:
            inputs = [spec("a", ls, np.float32), spec("b", rs, np.float32)]
            outputs = [spec("y", out_shape, np.float32)]
            feeds = [rng.standard_normal(ls).astype(np.float32),
                     rng.standard_normal(rs).astype(np.float32)]
        cases.append(Case("BATCH_MATMUL", inputs, outputs, options, feeds,
                          f"BATCH_MATMUL {kind} #{i} {ls} x {rs} {options}"))
    return cases


def test_batch_matmul_other_types_sweep(oracle):
    assert_bit_exact(oracle, batch_matmul_other_type_cases(64))
