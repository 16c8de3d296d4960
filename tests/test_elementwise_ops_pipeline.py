"""The element-wise, reduction and float-island ops in a model: LayerNormalization's int8 ops
and its float NEG island, GELU, PRELU, a MAXIMUM clamp, MINIMUM, REDUCE_MAX/MIN, ARG_MAX and
LOG_SOFTMAX after a convolution the accelerator takes. Every stage (the tfl interpreter, the
interpreter after each pass of vta-pipeline, the compiled model and its artifact's run plan,
whose host part runs these ops) must be bit-exact with LiteRT's reference kernels."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.explore.conformance import check_models
from qaccel.frontend.builder import (
    ModelBuilder,
    QParams,
    TensorSpec,
    bias_tensor,
    per_axis_qparams,
    random_weights,
)

pytest.importorskip("ai_edge_litert")

Q = QParams.per_tensor


def layer_norm_gelu_model() -> bytes:
    rng = np.random.default_rng(0)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    shape, row = (1, 8, 8, 16), (1, 8, 8, 1)

    def t(name, shp, q=None, dtype=np.int8):
        return TensorSpec(name, shp, dtype, q)

    x = g.input("x", shape, q=Q(0.03, -1))
    w_q = per_axis_qparams(rng, channels=16, axis=0)
    w = g.const("w", random_weights(rng, (16, 1, 1, 16)), w_q)
    b = g.add_tensor(bias_tensor("b", rng, Q(0.03, -1), w_q))
    c = g.op("CONV_2D", [x, w, b], t("conv", shape, Q(0.05, 2)),
             {"padding": "SAME", "stride_w": 1, "stride_h": 1})
    last = g.const("last", np.array([-1], np.int32))
    mean = g.op("MEAN", [c, last], t("mean", row, Q(0.01, 2)), {"keep_dims": True})
    neg = g.op("NEG", [g.op("DEQUANTIZE", [mean], t("mean_f", row, dtype=np.float32))],
               t("neg_f", row, dtype=np.float32))
    neg_q = g.op("QUANTIZE", [neg], t("neg", row, Q(0.01, -2)))
    sd = g.op("SQUARED_DIFFERENCE", [c, mean], t("sd", shape, Q(0.08, -128)))
    var = g.op("MEAN", [sd, last], t("var", row, Q(0.01, -128)), {"keep_dims": True})
    r = g.op("RSQRT", [var], t("rsqrt", row, Q(0.05, -128)))
    norm = g.op("MUL", [c, r], t("norm", shape, Q(0.04, 0)))
    centered = g.op("ADD", [norm, neg_q], t("centered", shape, Q(0.04, 0)))
    ge = g.op("GELU", [centered], t("gelu", shape, Q(0.03, -100)), {"approximate": False})
    alpha = g.const("alpha", rng.integers(-50, 50, (1, 1, 16)).astype(np.int8), Q(0.01, 0))
    pr = g.op("PRELU", [ge, alpha], t("prelu", shape, Q(0.03, -90)))
    floor = g.const("floor", np.array([[-20]], np.int8), Q(0.5, 0))
    mx = g.op("MAXIMUM", [pr, floor], t("max", shape, Q(0.03, -90)))
    mn = g.op("MINIMUM", [mx, norm], t("min", shape, Q(0.03, -90)))
    hw = g.const("hw", np.array([1, 2], np.int32))
    rmax = g.op("REDUCE_MAX", [mn, hw], t("rmax", (1, 16), Q(0.03, -90)))
    arg = g.op("ARG_MAX", [rmax, g.const("one", np.array([1], np.int32))],
               t("argmax", (1,), dtype=np.int64), {"output_type": "INT64"})
    rmin = g.op("REDUCE_MIN", [mn, hw], t("rmin", (1, 16), Q(0.03, -90)))
    ls = g.op("LOG_SOFTMAX", [rmin], t("log_softmax", (1, 16), Q(16 / 256, 127)))
    root = g.op("SQRT", [g.op("RSQRT", [neg], t("rsqrt_f", row, dtype=np.float32))],
                t("sqrt_f", row, dtype=np.float32))
    g.output(arg, ls, mn, root)
    return mb.build()


def test_every_stage_is_bit_exact():
    (result,) = check_models([("layer_norm_gelu", layer_norm_gelu_model())], input_sets=2,
                             configs=("vta-default",), simulators=("c",))
    assert result.ok, result.line()
    assert result.layers["vta-default"] >= 1 and result.run_plans["vta-default"]
