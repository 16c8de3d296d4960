"""FULLY_CONNECTED whose input has rank 2, 3 or 4 (TFLite flattens it into rows), with
`keep_num_dims` both ways, with and without a bias: through `vta-pipeline` and the VTA target
(every accelerator layer on the simulator), bit-exact with LiteRT's reference kernels.

The real-model case: MobileNet's classifier, a 7x7 AVERAGE_POOL_2D giving `[1, 1, 1, C]` and a
FULLY_CONNECTED without bias and `keep_num_dims=false` (`[1, O]`), in both bias placements and
both bundled configurations. `lower-q-to-accel` used to give its `accel.dense_zp` the packed
`[1, O]` result type for a rank-6 packed input, which the op's verifier refused."""

from __future__ import annotations

import numpy as np
import pytest
from qaccel.backends.vta.codegen import compile_module
from qaccel.backends.vta.runtime import run_compiled
from qaccel.dialects import accel
from qaccel.frontend.builder import ModelBuilder, QParams, TensorSpec, bias_tensor, weights_tensor
from qaccel.frontend.tflite_import import import_tflite
from qaccel.interpreter.interpreter import entry_function, random_inputs
from qaccel.pipeline.manager import build_pipeline, qaccel_context, verify_ir


def fc_model(
    shape: tuple[int, ...], keep_num_dims: bool, with_bias: bool, pool: bool, out_channels: int
) -> bytes:
    """FULLY_CONNECTED over an input of `shape` (after a 7x7 AVERAGE_POOL_2D when `pool`)."""
    rng = np.random.default_rng(sum(shape) + 7 * keep_num_dims + 3 * with_bias)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x_q = QParams.per_tensor(0.05, -3)
    c = shape[-1]
    if pool:
        x = g.input("x", (1, 7, 7, c), np.int8, x_q)
        fc_in = g.op(
            "AVERAGE_POOL_2D", [x], TensorSpec("pooled", shape, np.int8, x_q),
            {"padding": "VALID", "stride_w": 1, "stride_h": 1, "filter_width": 7,
             "filter_height": 7, "fused_activation_function": "NONE"},
        )  # fmt: skip
    else:
        fc_in = g.input("x", shape, np.int8, x_q)
    w_q = QParams.per_tensor(0.01, 0)  # LiteRT's int8 FULLY_CONNECTED: per-tensor weights
    bias = bias_tensor("b", rng, x_q, w_q, out_channels) if with_bias else None
    rows = int(np.prod(shape[:-1]))
    out_shape = (*shape[:-1], out_channels) if keep_num_dims else (rows, out_channels)
    y = g.op(
        "FULLY_CONNECTED", [fc_in, weights_tensor("w", rng, (out_channels, c), w_q), bias],
        TensorSpec("y", out_shape, np.int8, QParams.per_tensor(0.2, 1)),
        {"fused_activation_function": "NONE", "keep_num_dims": keep_num_dims},
    )  # fmt: skip
    g.output(y)
    return mb.build()


def compile_and_compare(model: bytes, options: str, oracle) -> tuple[int, int]:
    """Through `vta-pipeline{options}` (IR verified after the pipeline) and the VTA target;
    asserts bit-exactness with LiteRT; returns (accelerator layers, host ops)."""
    module = import_tflite(model, "fc.tflite")
    build_pipeline(f"vta-pipeline{{{options}}}" if options else "vta-pipeline").apply(
        qaccel_context(), module
    )
    verify_ir(module)
    assert any(isinstance(op, accel.DenseZpOp) for op in module.walk())
    compiled = compile_module(module)
    inputs = random_inputs(entry_function(module), 0)
    ref = oracle(model, [inputs], keep_all_tensors=False)
    assert ref.refused is None, ref.refused
    for got, want in zip(run_compiled(compiled, inputs), ref.outputs[0], strict=True):
        np.testing.assert_array_equal(got, want)
    layers = sum(len(v) for v in compiled.layers.values())
    return layers, len(compiled.fallbacks)


@pytest.mark.parametrize("config", ["vta-default", "vta-store-requant"])
@pytest.mark.parametrize("placement", ["alu", "preload"])
@pytest.mark.parametrize("keep_num_dims", [False, True])
def test_classifier_after_7x7_average_pool(oracle, config, placement, keep_num_dims):
    model = fc_model((1, 1, 1, 32), keep_num_dims, with_bias=False, pool=True, out_channels=16)
    layers, _ = compile_and_compare(model, f"config={config} bias-placement={placement}", oracle)
    assert layers == 1  # one row: the dense layer runs on the accelerator


@pytest.mark.parametrize("with_bias", [False, True])
@pytest.mark.parametrize("keep_num_dims", [False, True])
@pytest.mark.parametrize("shape", [(3, 32), (1, 3, 32), (2, 3, 40), (1, 2, 3, 20), (1, 1, 1, 48)],
                         ids=lambda s: "x".join(map(str, s)))  # fmt: skip
def test_fully_connected_of_every_input_rank(oracle, shape, keep_num_dims, with_bias):
    model = fc_model(shape, keep_num_dims, with_bias, pool=False, out_channels=40)
    layers, _ = compile_and_compare(model, "", oracle)
    if len(shape) == 2 or all(d == 1 for d in shape[1:-1]):
        assert layers == 1  # the rows are the batch: the GEMM layer runs on the accelerator
    if len(shape) == 3 and shape[0] == 1 and keep_num_dims:
        assert layers == 1  # tokens [1, T, C]: a 1x1 convolution over T pixels
