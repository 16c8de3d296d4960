"""MAC counts (`dialects/macs.py`) and the report's accelerator share: every GEMM-like op counts
its MACs (TRANSPOSE_CONV and BATCH_MATMUL too, typed or opaque), the packed accelerator GEMMs
count their channels without the padding, and a GEMM an accelerator function leaves on the host
is host work, named with its MACs."""

from __future__ import annotations

import numpy as np

from qaccel.backends.vta.codegen import compile_module
from qaccel.backends.vta.report import format_report
from qaccel.dialects.macs import op_macs
from qaccel.frontend.builder import (
    ModelBuilder,
    QParams,
    TensorSpec,
    bias_tensor,
    per_axis_qparams,
    random_weights,
    single_op_model,
)
from qaccel.frontend.tflite_import import import_tflite
from qaccel.pipeline.manager import build_pipeline, qaccel_context

Q = QParams.per_tensor(0.05, -3)
OUT_Q = QParams.per_tensor(0.1, 5)
CONV = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "fused_activation_function": "NONE"}


def only_op(model: bytes, name: str):
    module = import_tflite(model)
    ops = [op for op in module.walk() if op.name.startswith("tfl.") and op.name != "tfl.const"
           and op.name != "tfl.no_value"]  # fmt: skip
    assert len(ops) == 1, [op.name for op in ops]
    op = ops[0]
    assert getattr(op, "TFLITE_NAME", None) == name or op.op_name.data == name
    return op


def test_transpose_conv_counts_the_products_of_its_scatter():
    rng = np.random.default_rng(0)
    w_q = per_axis_qparams(rng, channels=6, axis=0)
    model = single_op_model(
        "TRANSPOSE_CONV",
        inputs=[TensorSpec("shape", (4,), np.int32, data=np.array([1, 10, 10, 6], np.int32)),
                TensorSpec("w", (6, 3, 3, 4), np.int8, w_q, data=random_weights(rng, (6, 3, 3, 4))),
                TensorSpec("x", (1, 5, 5, 4), np.int8, Q)],
        outputs=[TensorSpec("y", (1, 10, 10, 6), np.int8, OUT_Q)],
        options={"padding": "SAME", "stride_w": 2, "stride_h": 2},
    )  # fmt: skip
    assert op_macs(only_op(model, "TRANSPOSE_CONV")) == 1 * 5 * 5 * 6 * 3 * 3 * 4


def test_batch_matmul_counts_batch_m_n_k():
    model = single_op_model(
        "BATCH_MATMUL",
        inputs=[TensorSpec("x", (3, 4, 7), np.int8, Q), TensorSpec("y", (3, 7, 5), np.int8, Q)],
        outputs=[TensorSpec("z", (3, 4, 5), np.int8, OUT_Q)],
        options={"adj_x": False, "adj_y": False},
    )
    assert op_macs(only_op(model, "BATCH_MATMUL")) == 3 * 4 * 5 * 7
    adjoint = single_op_model(
        "BATCH_MATMUL",
        inputs=[TensorSpec("x", (3, 7, 4), np.int8, Q), TensorSpec("y", (3, 7, 5), np.int8, Q)],
        outputs=[TensorSpec("z", (3, 4, 5), np.int8, OUT_Q)],
        options={"adj_x": True, "adj_y": False},
    )
    assert op_macs(only_op(adjoint, "BATCH_MATMUL")) == 3 * 4 * 5 * 7


def conv_dw_fc(batch: int) -> bytes:
    """conv 3 -> 5 channels, depthwise 3x3 over 5, FULLY_CONNECTED 5*6*6 -> 10: no channel
    count a multiple of the accelerator's block."""
    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", (batch, 6, 6, 3), q=Q)
    w_q = per_axis_qparams(rng, channels=5, axis=0)
    y = g.op("CONV_2D", [x, TensorSpec("w", (5, 3, 3, 3), np.int8, w_q,
                                       data=random_weights(rng, (5, 3, 3, 3))),
                         bias_tensor("b", rng, Q, w_q)],
             TensorSpec("y", (batch, 6, 6, 5), np.int8, OUT_Q), CONV)  # fmt: skip
    d_q = per_axis_qparams(rng, channels=5, axis=3)
    d = g.op("DEPTHWISE_CONV_2D", [y, TensorSpec("dw", (1, 3, 3, 5), np.int8, d_q,
                                                 data=random_weights(rng, (1, 3, 3, 5))),
                                   bias_tensor("db", rng, OUT_Q, d_q)],
             TensorSpec("d", (batch, 6, 6, 5), np.int8, OUT_Q),
             {**CONV, "depth_multiplier": 1})  # fmt: skip
    f_q = per_axis_qparams(rng, channels=10, axis=0)
    r = g.op("RESHAPE", [d, g.const("shape", np.array([batch, 180], np.int32))],
             TensorSpec("r", (batch, 180), np.int8, OUT_Q), {"new_shape": [batch, 180]})
    f = g.op("FULLY_CONNECTED", [r, TensorSpec("fw", (10, 180), np.int8, f_q,
                                               data=random_weights(rng, (10, 180))),
                                 bias_tensor("fb", rng, OUT_Q, f_q)],
             TensorSpec("f", (batch, 10), np.int8, QParams.per_tensor(0.2, 1)),
             {"fused_activation_function": "NONE", "keep_num_dims": False})  # fmt: skip
    g.output(f)
    return mb.build()


def macs_of(batch: int) -> tuple[int, int, int]:
    return batch * 36 * 5 * 9 * 3, batch * 36 * 5 * 9, batch * 10 * 180


def lowered(model: bytes):
    module = import_tflite(model)
    total = sum(op_macs(op) for op in module.walk())
    build_pipeline("vta-pipeline").apply(qaccel_context(), module)
    return module, total


def test_packed_gemms_count_the_channels_without_padding():
    for batch in (1, 2):
        module, total = lowered(conv_dw_fc(batch))
        assert total == sum(macs_of(batch))
        counted = {op: op_macs(op) for op in module.walk() if op_macs(op)}
        assert sorted(counted.values()) == sorted(macs_of(batch)), batch
        assert sum(op.name == "accel.conv2d_zp" for op in counted) == 2


def test_batch_1_runs_every_mac_on_the_accelerator():
    module, total = lowered(conv_dw_fc(1))
    report = compile_module(module, total_macs=total).report
    assert report["totals"]["accelerator_mac_share"] == 1.0
    assert report["totals"]["host_macs_in_accelerator_functions"] == 0
    assert report["host_gemm_fallbacks"] == []


def test_batch_2_runs_every_mac_on_the_accelerator():
    """A batch of two: the convolutions are an outer loop over the images, the dense layer's
    rows are the batch; every MAC on the accelerator, as for one image."""
    module, total = lowered(conv_dw_fc(2))
    report = compile_module(module, total_macs=total).report
    assert report["totals"]["model_macs"] == total == sum(macs_of(2))
    assert report["totals"]["accelerator_mac_share"] == 1.0
    assert report["totals"]["host_macs_in_accelerator_functions"] == 0
    assert report["host_gemm_fallbacks"] == []


def test_convolutions_on_the_host_are_host_work(monkeypatch):
    """Convolutions the accelerator refuses (here every one, by a stand-in refusal) stay on
    the host inside the accelerator function, the dense layer runs on it: their MACs are host
    work in the share and named in the report."""
    from qaccel.lowering.vta import layers

    def refuse(op):
        raise layers.NotALayer("refused for this test")

    monkeypatch.setattr(layers, "_conv_params", refuse)
    module, total = lowered(conv_dw_fc(2))
    report = compile_module(module, total_macs=total).report
    conv, dw, fc = macs_of(2)
    t = report["totals"]
    assert t["model_macs"] == total == conv + dw + fc
    assert t["host_macs_in_accelerator_functions"] == conv + dw
    assert t["accelerator_macs"] == fc
    assert t["accelerator_mac_share"] == fc / total  # about 15%, not 100%
    fallbacks = report["host_gemm_fallbacks"]
    assert sorted(f["macs"] for f in fallbacks) == sorted([conv, dw])
    assert all(f["op"] == "accel.conv2d_zp" and "refused for this test" in f["reason"]
               for f in fallbacks)  # fmt: skip
    text = format_report(report)
    assert f"MACs on the accelerator: {fc / total:.2%} of {total} ({conv + dw} MACs" in text
    assert f"({conv} MACs on the host)" in text and f"({dw} MACs on the host)" in text
