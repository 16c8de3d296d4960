"""Random single-layer int8 models (CONV_2D, DEPTHWISE_CONV_2D, FULLY_CONNECTED: strides,
paddings, dilations, odd channel counts, per-tensor and per-channel weights, activations, both
bias modes, sizes around the tile boundaries) compiled for the VTA with the whole flow and run
with every layer on the simulator: bit-exact with LiteRT's reference kernels."""

from __future__ import annotations

import math

import numpy as np
import pytest
from qaccel.interpreter.interpreter import entry_function, random_inputs
from qaccel.backends.vta.codegen import compile_module
from qaccel.backends.vta.runtime import run_compiled
from qaccel.targets.vta.config import HardwareConfig
from qaccel.frontend.builder import (
    QParams,
    TensorSpec,
    bias_tensor,
    per_axis_qparams,
    single_op_model,
    weights_tensor,
)
from qaccel.frontend.tflite_import import import_tflite
from qaccel.pipeline.manager import build_pipeline, qaccel_context

ACTIVATIONS = ("NONE", "RELU", "RELU6")


def _out_size(n: int, k: int, s: int, d: int, padding: str) -> int:
    return -(-n // s) if padding == "SAME" else -(-(n - (k - 1) * d) // s)


KINDS = ("CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED")


def random_model(rng: np.random.Generator, kind: str) -> bytes:
    x_q = QParams.per_tensor(float(rng.uniform(0.01, 0.1)), int(rng.integers(-128, 100)))
    per_channel = bool(rng.integers(2))
    act = str(rng.choice(ACTIVATIONS))
    if kind == "FULLY_CONNECTED":
        rows, c, o = int(rng.integers(1, 4)), int(rng.integers(1, 70)), int(rng.integers(1, 40))
        # LiteRT's int8 FULLY_CONNECTED takes per-tensor weights only.
        w_q = per_axis_qparams(rng, 1, 0)
        w_q = QParams.per_tensor(float(w_q.scale[0]), 0)
        inputs = [TensorSpec("x", (rows, c), np.int8, x_q),
                  weights_tensor("w", rng, (o, c), w_q), bias_tensor("b", rng, x_q, w_q, o)]  # fmt: skip
        out_shape, reduction = (rows, o), c
        options = {"fused_activation_function": act}
    else:
        h, w = int(rng.integers(3, 24)), int(rng.integers(3, 24))
        k = int(rng.integers(1, 6))
        s, d = int(rng.integers(1, 4)), int(rng.integers(1, 3))
        if s > 1:
            d = 1  # TFLite's converter never combines them; LiteRT accepts either alone
        padding = str(rng.choice(["SAME", "VALID"]))
        if padding == "VALID" and (h - (k - 1) * d < 1 or w - (k - 1) * d < 1):
            padding = "SAME"
        c = int(rng.integers(1, 40))
        if kind == "CONV_2D":
            o = int(rng.integers(1, 40))
            shape, axis, reduction = (o, k, k, c), 0, c * k * k
        else:
            m = int(rng.choice([1, 1, 2]))
            o = c * m
            shape, axis, reduction = (1, k, k, o), 3, k * k
        w_q = per_axis_qparams(rng, o, axis) if per_channel else QParams.per_tensor(0.01, 0)
        inputs = [TensorSpec("x", (1, h, w, c), np.int8, x_q), weights_tensor("w", rng, shape, w_q),
                  bias_tensor("b", rng, x_q, w_q, o)]  # fmt: skip
        oh, ow = _out_size(h, k, s, d, padding), _out_size(w, k, s, d, padding)
        out_shape = (1, oh, ow, o)
        options = {"padding": padding, "stride_w": s, "stride_h": s,
                   "dilation_w_factor": d, "dilation_h_factor": d,
                   "fused_activation_function": act}  # fmt: skip
        if kind == "DEPTHWISE_CONV_2D":
            options["depth_multiplier"] = o // c
    # An output scale that keeps most results inside int8 (the accumulators' spread).
    w_s = float(np.max(w_q.scale))
    y_s = x_q.s * w_s * 80.0 * math.sqrt(reduction)
    y_q = QParams.per_tensor(y_s, int(rng.integers(-20, 20)))
    return single_op_model(kind, inputs, [TensorSpec("y", out_shape, np.int8, y_q)], options)


@pytest.mark.parametrize("bias_mode", ["alu", "preload", "store"])
@pytest.mark.parametrize("seed", range(12))
def test_random_single_layer_models_are_bit_exact_with_litert(oracle, seed, bias_mode):
    """`store`: the hardware config with the store module's output stage (bias mode "store"
    wherever the output is int8)."""
    rng = np.random.default_rng(seed)
    model = random_model(rng, KINDS[seed % 3])
    module = import_tflite(model, f"random{seed}.tflite")
    options = "config=vta-store-requant" if bias_mode == "store" else f"bias-placement={bias_mode}"
    build_pipeline(f"vta-pipeline{{{options}}}").apply(qaccel_context(), module)
    config = HardwareConfig.from_json("vta-store-requant") if bias_mode == "store" else None
    compiled = compile_module(module, config)
    assert sum(len(layers) for layers in compiled.layers.values()) == 1
    assert {fb.op for fb in compiled.fallbacks} <= {"accel.host_requantize"}
    inputs = random_inputs(entry_function(module), seed)
    ref = oracle(model, [inputs], keep_all_tensors=False)
    assert ref.refused is None, ref.refused
    for got, want in zip(run_compiled(compiled, inputs), ref.outputs[0], strict=True):
        np.testing.assert_array_equal(got, want)
