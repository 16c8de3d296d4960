"""Regenerate qaccel's fixture models: real int8 TFLite models from TensorFlow's converter.

Every model is fully integer-quantized (int8 inputs, outputs and activations, int8 weights,
int32 biases) from a representative dataset of random inputs, then checked: it must run in
LiteRT's reference interpreter (BUILTIN_REF, in a subprocess because failed kernel checks abort)
and its outputs must depend on its inputs. Everything is seeded, so re-running writes the same
bytes (``--check`` verifies that against the committed files).

Random weights make activations drift towards zero or saturation through depth, and a classifier
whose logits collapse gives int8 SOFTMAX an input scale the reference kernel refuses. So every
BatchNormalization layer gets random gamma/beta and moving statistics measured on random inputs
(then jittered), and the final classifier is rescaled so its logits vary with the input by a
few units: what a trained network looks like to a compiler, without shipping trained weights.

Needs ``tensorflow-cpu`` (the ``fixtures`` extra) and ``ai-edge-litert``; qaccel's tests never
import this file. Usage::

    python tools/make_fixtures.py                 # the committed models -> tests/fixtures/models
    python tools/make_fixtures.py --only resnet50 # on demand -> tests/fixtures/generated
    python tools/make_fixtures.py --all --out /tmp/fixtures
    python tools/make_fixtures.py --check         # rebuild and compare with the files on disk
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import os
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
COMMITTED_DIR = REPO / "tests" / "fixtures" / "models"
GENERATED_DIR = REPO / "tests" / "fixtures" / "generated"
MAX_COMMITTED_BYTES = 4 * 1024 * 1024

# Reproducibility across machines: oneDNN's fused float kernels may round differently from
# Eigen's, which would move calibrated ranges and therefore quantization parameters.
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")


def _tf():
    """TensorFlow is imported lazily: this module lives in the qaccel package, which must
    import without it."""
    import tensorflow as tf

    tf.config.experimental.enable_op_determinism()
    return tf


def _keras():
    _tf()
    import keras

    return keras


# --------------------------------------------------------------------------------------------
# Making random networks look trained


def _fresh_keras_session(seed: int):
    """Same layer names and same initial weights whatever was built before in this process."""
    keras = _keras()
    keras.backend.clear_session()
    keras.utils.set_random_seed(seed)
    return keras


def _calibration_inputs(rng: np.random.Generator, shape: tuple[int, ...], n: int) -> np.ndarray:
    # Image-like models see inputs in [-1, 1] (MobileNet/ResNet-style preprocessing).
    return rng.uniform(-1.0, 1.0, size=(n, *shape)).astype(np.float32)


def fit_batchnorm_statistics(model, data: np.ndarray, rng: np.random.Generator) -> None:
    """Random gamma/beta, then moving mean/variance measured on ``data`` and jittered.

    One training-mode forward pass with momentum 0 makes each layer's moving statistics equal
    to the batch statistics of its input, with every earlier layer already normalizing: the
    inference-mode network then keeps unit-scale activations at every depth.
    """
    keras = _keras()
    layers = [l for l in model.layers if isinstance(l, keras.layers.BatchNormalization)]
    momenta = []
    for layer in layers:
        channels = layer.gamma.shape[0]
        layer.gamma.assign(rng.uniform(0.5, 1.5, channels).astype(np.float32))
        layer.beta.assign(rng.normal(0.0, 0.25, channels).astype(np.float32))
        momenta.append(layer.momentum)
        layer.momentum = 0.0
    model(data, training=True)
    for layer, momentum in zip(layers, momenta):
        layer.momentum = momentum
        mean = layer.moving_mean.numpy()
        var = layer.moving_variance.numpy()
        std = np.sqrt(var + layer.epsilon)
        mean_jitter = rng.normal(0.0, 0.05, mean.shape) * std
        layer.moving_mean.assign((mean + mean_jitter).astype(np.float32))
        var_jitter = np.exp(rng.normal(0.0, 0.1, var.shape))
        layer.moving_variance.assign((var * var_jitter).astype(np.float32))


def standardize_logits(model, dense_name: str, data: np.ndarray, rng: np.random.Generator,
                       spread: float = 2.0) -> None:
    """Rescale the classifier ``dense_name`` so each logit varies with the input by ``spread``
    standard deviations around a random class offset.

    A random classifier on globally pooled random features gives logits that hardly depend on
    the input: int8 SOFTMAX outputs would then be the same for every image.
    """
    keras = _keras()
    dense = model.get_layer(dense_name)
    features = keras.Model(model.inputs, dense.input)(data, training=False)
    features = np.asarray(features, dtype=np.float64).reshape(len(data), -1)
    kernel, bias = (np.asarray(w, dtype=np.float64) for w in dense.get_weights())
    logits = features @ kernel + bias
    mean, std = logits.mean(axis=0), logits.std(axis=0) + 1e-6
    offset = rng.normal(0.0, 1.0, bias.shape)
    dense.set_weights([(kernel * (spread / std)).astype(np.float32),
                       ((bias - mean) * (spread / std) + offset).astype(np.float32)])


# --------------------------------------------------------------------------------------------
# Conversion


def _quantize(converter, calibration: np.ndarray, per_channel: bool) -> bytes:
    """Full-integer quantization: int8 everywhere, calibrated on ``calibration``."""
    tf = _tf()
    converter.optimizations = [tf.lite.Optimize.DEFAULT]

    def representative_dataset():
        for sample in calibration:
            yield [sample[None]]

    converter.representative_dataset = representative_dataset
    converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
    converter.inference_input_type = tf.int8
    converter.inference_output_type = tf.int8
    if not per_channel:
        converter._experimental_disable_per_channel = True
    # The Keras export path prints its saved signatures on stdout.
    with contextlib.redirect_stdout(io.StringIO()):
        return converter.convert()


def convert_function(call: Callable, input_shape: tuple[int, ...], calibration: np.ndarray,
                     *, per_channel: bool = True) -> bytes:
    """Converts a function of one float input whose weights are constants (no variables)."""
    tf = _tf()
    fn = tf.function(call, input_signature=[tf.TensorSpec((1, *input_shape), tf.float32, "input")])
    converter = tf.lite.TFLiteConverter.from_concrete_functions([fn.get_concrete_function()])
    return _quantize(converter, calibration, per_channel)


def convert_keras(model, input_shape: tuple[int, ...], calibration: np.ndarray,
                  *, per_channel: bool = True) -> bytes:
    """Converts a functional Keras model for batch 1, so every shape in the model is static."""
    tf, keras = _tf(), _keras()
    single = keras.Input(batch_shape=(1, *input_shape), name=model.inputs[0].name)
    fixed = keras.models.clone_model(model, input_tensors=single)
    fixed.set_weights(model.get_weights())
    converter = tf.lite.TFLiteConverter.from_keras_model(fixed)
    return _quantize(converter, calibration, per_channel)


# --------------------------------------------------------------------------------------------
# The models


def _calibrate_and_convert(model, rng: np.random.Generator, input_shape: tuple[int, ...],
                           classifier: str, samples: int, calibration_samples: int,
                           *, per_channel: bool = True) -> bytes:
    """Makes a randomly initialized image classifier look trained, then converts it."""
    data = _calibration_inputs(rng, input_shape, samples)
    fit_batchnorm_statistics(model, data, rng)
    standardize_logits(model, classifier, data, rng)
    return convert_keras(model, input_shape, data[:calibration_samples], per_channel=per_channel)


def _conv_bn(keras, x, filters, kernel, name, *, strides=1, activation=None):
    x = keras.layers.Conv2D(filters, kernel, strides=strides, padding="same", use_bias=False,
                            name=f"{name}_conv")(x)
    x = keras.layers.BatchNormalization(name=f"{name}_bn")(x)
    if activation == "relu":
        x = keras.layers.ReLU(name=f"{name}_relu")(x)
    elif activation == "relu6":
        x = keras.layers.ReLU(6.0, name=f"{name}_relu6")(x)
    return x


def _cnn(per_channel: bool) -> bytes:
    keras = _fresh_keras_session(1001)
    rng = np.random.default_rng(1001)
    L = keras.layers
    image = keras.Input((32, 32, 3), name="image")
    x = _conv_bn(keras, image, 16, 3, "stem", activation="relu")
    y = L.DepthwiseConv2D(3, padding="same", use_bias=False, name="dw_conv")(x)
    y = L.BatchNormalization(name="dw_bn")(y)
    y = L.ReLU(6.0, name="dw_relu6")(y)
    y = _conv_bn(keras, y, 16, 1, "project")
    x = L.Add(name="residual_add")([x, y])
    x = L.MaxPooling2D(2, name="max_pool")(x)
    x = _conv_bn(keras, x, 32, 3, "mid", activation="relu6")
    x = L.AveragePooling2D(2, name="avg_pool")(x)
    x = _conv_bn(keras, x, 32, 3, "down", strides=2, activation="relu")
    x = L.Flatten(name="flatten")(x)
    # Keras initializes biases to zero and the converter then omits them: this FULLY_CONNECTED
    # keeps that omitted optional input (-1) on purpose.
    x = L.Dense(32, activation="relu", name="hidden")(x)
    x = L.Dense(10, name="logits")(x)
    probs = L.Softmax(name="probs")(x)
    model = keras.Model(image, probs, name="cnn")
    return _calibrate_and_convert(model, rng, (32, 32, 3), "logits", 64, 32,
                                  per_channel=per_channel)


def build_cnn() -> bytes:
    return _cnn(per_channel=True)


def build_cnn_per_tensor() -> bytes:
    return _cnn(per_channel=False)


def build_residual() -> bytes:
    keras = _fresh_keras_session(1002)
    rng = np.random.default_rng(1002)
    L = keras.layers
    image = keras.Input((32, 32, 3), name="image")
    x = _conv_bn(keras, image, 16, 3, "stem", activation="relu")
    for i, filters in enumerate((32, 64)):
        main = _conv_bn(keras, x, filters, 3, f"block{i}_a", strides=2, activation="relu")
        main = _conv_bn(keras, main, filters, 3, f"block{i}_b")
        shortcut = _conv_bn(keras, x, filters, 1, f"block{i}_shortcut", strides=2)
        x = L.Add(name=f"block{i}_add")([main, shortcut])
        x = L.ReLU(name=f"block{i}_relu")(x)
    x = L.GlobalAveragePooling2D(name="pool")(x)
    logits = L.Dense(10, name="logits")(x)
    model = keras.Model(image, logits, name="residual")
    return _calibrate_and_convert(model, rng, (32, 32, 3), "logits", 64, 32)


def build_mlp() -> bytes:
    keras = _fresh_keras_session(1003)
    rng = np.random.default_rng(1003)
    L = keras.layers
    features = keras.Input((64,), name="features")
    x = L.Dense(128, activation="relu", name="fc1")(features)
    x = L.Dense(64, activation="relu", name="fc2")(x)
    x = L.Dense(10, name="logits")(x)
    probs = L.Softmax(name="probs")(x)
    model = keras.Model(features, probs, name="mlp")
    for name in ("fc1", "fc2"):
        kernel, bias = model.get_layer(name).get_weights()
        bias = rng.normal(0.0, 0.1, bias.shape).astype(np.float32)
        model.get_layer(name).set_weights([kernel, bias])
    data = rng.normal(0.0, 1.0, size=(128, 64)).astype(np.float32)
    standardize_logits(model, "logits", data, rng)
    return convert_keras(model, (64,), data[:64])


def build_pad_concat_slice() -> bytes:
    """Data-movement and element-wise ops around two convolutions, written as a plain
    tf.function because Keras has no layers for strided slices or constant-padded PAD."""
    tf = _tf()
    rng = np.random.default_rng(1004)

    def weights(kh, kw, cin, cout):
        w = rng.normal(0.0, np.sqrt(2.0 / (kh * kw * cin)), (kh, kw, cin, cout))
        return tf.constant(w.astype(np.float32))

    w1, b1 = weights(3, 3, 8, 16), tf.constant(rng.normal(0, 0.1, 16).astype(np.float32))
    w2, b2 = weights(1, 1, 48, 16), tf.constant(rng.normal(0, 0.1, 16).astype(np.float32))
    gate = tf.constant(rng.uniform(0.5, 1.5, 48).astype(np.float32))

    def net(x):
        c = tf.nn.relu(tf.nn.conv2d(x, w1, 1, "SAME") + b1)                    # 16x16x16
        # A zero PAD feeding a VALID convolution would be folded into a SAME one; feeding
        # slices it stays.
        p = tf.pad(c, [[0, 0], [1, 1], [1, 1], [0, 0]])                      # PAD, 18x18
        even = p[:, ::2, ::2, :]                                                # STRIDED_SLICE
        odd = p[:, 1::2, 1::2, :]                                               # 9x9x16 each
        crop = tf.slice(x, [0, 3, 3, 0], [1, 9, 9, 8])                          # SLICE
        wide = tf.pad(crop, [[0, 0], [0, 0], [0, 0], [0, 8]], constant_values=0.5)  # PADV2
        cat = tf.concat([even, odd, wide], axis=-1)                             # 9x9x48
        mean = tf.reduce_mean(cat, axis=[1, 2], keepdims=True)                  # MEAN
        centered = cat - mean                                                   # SUB
        scaled = centered * gate                                                # MUL
        return tf.nn.conv2d(scaled, w2, 1, "SAME") + b2

    data = _calibration_inputs(rng, (16, 16, 8), 32)
    return convert_function(net, (16, 16, 8), data)


def build_mobilenet_v2() -> bytes:
    keras = _fresh_keras_session(1005)
    rng = np.random.default_rng(1005)
    model = keras.applications.MobileNetV2(input_shape=(224, 224, 3), alpha=1.0,
                                           include_top=True, weights=None, classes=1000)
    return _calibrate_and_convert(model, rng, (224, 224, 3), "predictions", 16, 8)


def build_resnet50() -> bytes:
    keras = _fresh_keras_session(1006)
    rng = np.random.default_rng(1006)
    model = keras.applications.ResNet50(input_shape=(224, 224, 3), include_top=True,
                                        weights=None, classes=1000)
    return _calibrate_and_convert(model, rng, (224, 224, 3), "predictions", 16, 8)


# --------------------------------------------------------------------------------------------
# A STABLEHLO_COMPOSITE model, written with the flatbuffer object API
#
# The converter lowers the composites it knows (ai-edge-torch's "aten.hardswish.default" becomes
# HARD_SWISH) and has no TensorFlow spelling for the others, so this model is assembled by hand:
#   image -> CONV_2D -> composite "aten.hardswish.default" -> composite "aten.avg_pool2d.default"
# Each composite names a decomposition subgraph in int8 TFLite builtins, which is what LiteRT's
# STABLEHLO_COMPOSITE kernel executes.


def _qparams_for_range(lo: float, hi: float) -> tuple[float, int]:
    """Asymmetric int8 parameters covering [lo, hi] (widened to include 0), as the converter
    derives them from calibrated ranges."""
    lo, hi = min(lo, 0.0), max(hi, 0.0)
    scale = (hi - lo) / 255.0
    zero_point = int(np.clip(np.round(-128 - lo / scale), -128, 127))
    return float(np.float32(scale)), zero_point


def _hard_swish(x):
    return x * np.clip(x + 3.0, 0.0, 6.0) / 6.0


def build_composite() -> bytes:
    import flatbuffers
    from ai_edge_litert import schema_py_generated as fb
    from flatbuffers import flexbuffers

    rng = np.random.default_rng(1007)
    H = W = 16
    CIN, COUT = 8, 16

    # Float reference of the network on random inputs, to choose realistic ranges.
    in_scale, in_zp = 1.0 / 128.0, 0
    w_float = rng.normal(0.0, 0.5 * np.sqrt(2.0 / (9 * CIN)), (COUT, 3, 3, CIN)) * 4.0
    w_scale = np.abs(w_float).reshape(COUT, -1).max(axis=1) / 127.0
    w_q = np.clip(np.round(w_float / w_scale[:, None, None, None]), -127, 127).astype(np.int8)
    bias_float = rng.normal(0.0, 0.5, COUT)
    bias_scale = in_scale * w_scale
    bias_q = np.round(bias_float / bias_scale).astype(np.int32)
    x = rng.integers(-128, 128, (64, H, W, CIN)).astype(np.float64) * in_scale
    xp = np.pad(x, ((0, 0), (1, 1), (1, 1), (0, 0)))
    w_deq = w_q.astype(np.float64) * w_scale[:, None, None, None]
    conv = sum(np.einsum("nhwi,oi->nhwo", xp[:, i:i + H, j:j + W, :], w_deq[:, i, j, :])
               for i in range(3) for j in range(3)) + bias_q * bias_scale
    conv_q = _qparams_for_range(conv.min(), conv.max())
    hs_q = _qparams_for_range(-0.375, _hard_swish(conv).max())

    buffers = [fb.BufferT()]  # buffer 0: the empty sentinel

    def buffer(array: np.ndarray | None) -> int:
        b = fb.BufferT()
        if array is not None:
            b.data = np.frombuffer(array.tobytes(), np.uint8)
        buffers.append(b)
        return len(buffers) - 1

    def quant(scale, zero_point, axis=0):
        q = fb.QuantizationParametersT()
        q.scale = np.atleast_1d(np.asarray(scale, np.float32))
        q.zeroPoint = np.atleast_1d(np.asarray(zero_point, np.int64))
        q.quantizedDimension = axis
        return q

    def tensor(tensors, name, shape, qp, dtype=fb.TensorType.INT8, data=None) -> int:
        t = fb.TensorT()
        t.name, t.shape, t.type = name, np.asarray(shape, np.int32), dtype
        t.quantization = quant(*qp)
        t.buffer = buffer(data)
        tensors.append(t)
        return len(tensors) - 1

    opcodes: list[tuple[int, int]] = []

    def op(code, version, inputs, outputs, options_type=0, options=None, options2=None):
        if (code, version) not in opcodes:
            opcodes.append((code, version))
        o = fb.OperatorT()
        o.opcodeIndex = opcodes.index((code, version))
        o.inputs, o.outputs = np.asarray(inputs, np.int32), np.asarray(outputs, np.int32)
        if options is not None:
            o.builtinOptionsType, o.builtinOptions = options_type, options
        if options2 is not None:
            o.builtinOptions2Type = fb.BuiltinOptions2.StableHLOCompositeOptions
            o.builtinOptions2 = options2
        return o

    def subgraph(name, tensors, inputs, outputs, operators):
        sg = fb.SubGraphT()
        sg.name, sg.tensors, sg.operators = name, tensors, operators
        sg.inputs, sg.outputs = np.asarray(inputs, np.int32), np.asarray(outputs, np.int32)
        return sg

    B = fb.BuiltinOperator
    fmap = (1, H, W, COUT)
    pooled = (1, H // 2, W // 2, COUT)

    # Subgraph 1: hard swish, x * relu6(x + 3) / 6, as ADD(+RELU6), MUL, MUL.
    t = []
    hx = tensor(t, "x", fmap, conv_q)
    three = tensor(t, "three", [1], (3.0 / 127.0, 0), data=np.array([127], np.int8))
    relu6 = tensor(t, "relu6_x_plus_3", fmap, (6.0 / 255.0, -128))
    sixth = tensor(t, "one_sixth", [1], ((1.0 / 6.0) / 127.0, 0), data=np.array([127], np.int8))
    gate = tensor(t, "gate", fmap, (1.0 / 255.0, -128))
    hy = tensor(t, "y", fmap, hs_q)
    add_opts = fb.AddOptionsT()
    add_opts.fusedActivationFunction = fb.ActivationFunctionType.RELU6
    mul_opts = fb.MulOptionsT()
    hard_swish = subgraph("aten.hardswish.default.impl_0", t, [hx], [hy], [
        op(B.ADD, 2, [hx, three], [relu6], fb.BuiltinOptions.AddOptions, add_opts),
        op(B.MUL, 2, [relu6, sixth], [gate], fb.BuiltinOptions.MulOptions, mul_opts),
        op(B.MUL, 2, [hx, gate], [hy], fb.BuiltinOptions.MulOptions, mul_opts),
    ])

    # Subgraph 2: 2x2/2 average pooling.
    t = []
    px = tensor(t, "x", fmap, hs_q)
    py = tensor(t, "y", pooled, hs_q)
    pool_opts = fb.Pool2DOptionsT()
    pool_opts.padding = fb.Padding.VALID
    pool_opts.strideW = pool_opts.strideH = pool_opts.filterWidth = pool_opts.filterHeight = 2
    avg_pool = subgraph("aten.avg_pool2d.default.impl_0", t, [px], [py], [
        op(B.AVERAGE_POOL_2D, 2, [px], [py], fb.BuiltinOptions.Pool2DOptions, pool_opts),
    ])

    def composite(name, subgraph_index, attributes: dict):
        c = fb.StableHLOCompositeOptionsT()
        c.name = name
        c.decompositionSubgraphIndex = subgraph_index
        c.compositeAttributes = np.frombuffer(bytes(flexbuffers.Dumps(attributes)), np.uint8)
        c.compositeAttributesFormat = fb.CustomOptionsFormat.FLEXBUFFERS
        c.version = 0
        return c

    # Subgraph 0: the model.
    t = []
    image = tensor(t, "image", (1, H, W, CIN), (in_scale, in_zp))
    weights = tensor(t, "conv/weights", w_q.shape, (w_scale, np.zeros(COUT, np.int64), 0),
                     data=w_q)
    bias = tensor(t, "conv/bias", [COUT], (bias_scale, np.zeros(COUT, np.int64), 0),
                  dtype=fb.TensorType.INT32, data=bias_q)
    conv_out = tensor(t, "conv", fmap, conv_q)
    hs_out = tensor(t, "hardswish", fmap, hs_q)
    pool_out = tensor(t, "avg_pool", pooled, hs_q)
    conv_opts = fb.Conv2DOptionsT()
    conv_opts.padding = fb.Padding.SAME
    conv_opts.strideW = conv_opts.strideH = 1
    conv_opts.dilationWFactor = conv_opts.dilationHFactor = 1
    main = subgraph("main", t, [image], [pool_out], [
        op(B.CONV_2D, 3, [image, weights, bias], [conv_out], fb.BuiltinOptions.Conv2DOptions,
           conv_opts),
        op(B.STABLEHLO_COMPOSITE, 1, [conv_out], [hs_out],
           options2=composite("aten.hardswish.default", 1, {})),
        op(B.STABLEHLO_COMPOSITE, 1, [hs_out], [pool_out],
           options2=composite("aten.avg_pool2d.default", 2, {
               "kernel_size": [2, 2], "stride": [2, 2], "padding": [0, 0],
               "ceil_mode": False, "count_include_pad": True,
           })),
    ])

    model = fb.ModelT()
    model.version = 3
    model.description = "qaccel tools/make_fixtures.py: composite"
    model.subgraphs = [main, hard_swish, avg_pool]
    model.buffers = buffers
    model.operatorCodes = []
    for code, version in opcodes:
        oc = fb.OperatorCodeT()
        oc.builtinCode = code
        oc.deprecatedBuiltinCode = min(code, B.PLACEHOLDER_FOR_GREATER_OP_CODES)
        oc.version = version
        model.operatorCodes.append(oc)
    signature = fb.SignatureDefT()
    signature.signatureKey = "serving_default"
    signature.subgraphIndex = 0
    signature.inputs, signature.outputs = [fb.TensorMapT()], [fb.TensorMapT()]
    signature.inputs[0].name, signature.inputs[0].tensorIndex = "image", image
    signature.outputs[0].name, signature.outputs[0].tensorIndex = "output_0", pool_out
    model.signatureDefs = [signature]

    builder = flatbuffers.Builder(1 << 16)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


# --------------------------------------------------------------------------------------------
# Checks


_REFERENCE_RUN = r"""
import sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType

path, out, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
interpreter = Interpreter(model_path=path,
                          experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
interpreter.allocate_tensors()
rng = np.random.default_rng(0)
results = {}
for run in range(runs):
    for d in interpreter.get_input_details():
        info = np.iinfo(d["dtype"])
        interpreter.set_tensor(d["index"], rng.integers(info.min, info.max + 1, d["shape"],
                                                        dtype=d["dtype"]))
    interpreter.invoke()
    for k, d in enumerate(interpreter.get_output_details()):
        results[f"{run}_{k}"] = interpreter.get_tensor(d["index"])
np.savez(out, **results)
"""


def operator_set(model: bytes) -> list[Counter]:
    """Per subgraph, how many times each builtin operator occurs (``"NAME/vVERSION"``)."""
    from ai_edge_litert import schema_py_generated as fb

    names = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}
    m = fb.Model.GetRootAs(model, 0)
    codes = [m.OperatorCodes(i) for i in range(m.OperatorCodesLength())]
    result = []
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)
        counts = Counter()
        for i in range(sg.OperatorsLength()):
            oc = codes[sg.Operators(i).OpcodeIndex()]
            name = names[max(oc.BuiltinCode(), oc.DeprecatedBuiltinCode())]
            counts[f"{name}/v{oc.Version()}"] += 1
        result.append(counts)
    return result


def io_types(model: bytes) -> list[str]:
    from ai_edge_litert import schema_py_generated as fb

    types = {v: k for k, v in vars(fb.TensorType).items() if not k.startswith("_")}
    sg = fb.Model.GetRootAs(model, 0).Subgraphs(0)
    ends = [sg.Inputs(i) for i in range(sg.InputsLength())]
    ends += [sg.Outputs(i) for i in range(sg.OutputsLength())]
    return [types[sg.Tensors(t).Type()] for t in ends]


def check_with_reference(name: str, model: bytes, runs: int = 4) -> None:
    """Raises unless LiteRT's reference kernels run the model and its outputs depend on the
    input (different across runs, not constant within one)."""
    if set(io_types(model)) != {"INT8"}:
        raise RuntimeError(f"{name}: inputs/outputs are {io_types(model)}, expected int8 only")
    with tempfile.TemporaryDirectory() as tmp:
        path, out = Path(tmp) / f"{name}.tflite", Path(tmp) / "outputs.npz"
        path.write_bytes(model)
        proc = subprocess.run([sys.executable, "-c", _REFERENCE_RUN, str(path), str(out),
                               str(runs)], check=False, capture_output=True, text=True,
                              timeout=900)
        if proc.returncode != 0:
            tail = (proc.stderr.strip().splitlines() or ["(no message)"])[-1]
            raise RuntimeError(f"{name}: LiteRT's reference kernels refused the model "
                               f"(exit {proc.returncode}): {tail}")
        results = dict(np.load(out))
    outputs = sorted({key.split("_")[1] for key in results})
    for k in outputs:
        per_run = [results[f"{run}_{k}"] for run in range(runs)]
        if all(np.array_equal(per_run[0], other) for other in per_run[1:]):
            raise RuntimeError(f"{name}: output {k} is the same for {runs} different inputs")
        if all(np.all(r == r.flat[0]) for r in per_run):
            raise RuntimeError(f"{name}: output {k} is constant within every run")


# --------------------------------------------------------------------------------------------
# Driver


@dataclass(frozen=True)
class Fixture:
    build: Callable[[], bytes]
    committed: bool  # False: too big for the repository, written to tests/fixtures/generated


FIXTURES: dict[str, Fixture] = {
    "cnn": Fixture(build_cnn, True),
    "cnn_per_tensor": Fixture(build_cnn_per_tensor, True),
    "residual": Fixture(build_residual, True),
    "mlp": Fixture(build_mlp, True),
    "pad_concat_slice": Fixture(build_pad_concat_slice, True),
    "composite": Fixture(build_composite, True),
    "mobilenet_v2": Fixture(build_mobilenet_v2, True),
    "resnet50": Fixture(build_resnet50, False),
}


def explain_difference(committed: bytes, rebuilt: bytes, limit: int = 8) -> list[str]:
    """Why a rebuilt model differs from the committed one, as lines for `--check`: the
    TensorFlow versions that converted each (the files' conversion metadata) and this
    environment's, operators that differ, then per tensor (matched by subgraph and name) what
    changed: shape, type, quantization (scales, zero points), constant data (how many values,
    by how much). At most `limit` tensor lines."""
    import re

    from ai_edge_litert import schema_py_generated as fb

    def converter_version(data: bytes) -> str:
        m = fb.Model.GetRootAs(data, 0)
        for i in range(m.MetadataLength()):
            meta = m.Metadata(i)
            if meta.Name() == b"CONVERSION_METADATA":
                raw = m.Buffers(meta.Buffer()).DataAsNumpy()
                data = b"" if isinstance(raw, int) else bytes(raw)
                found = re.findall(rb"\d+\.\d+\.\d+[\w.+-]*", data)
                return found[0].decode() if found else "unknown"
        return "unknown (no conversion metadata)"

    def tensors(data: bytes) -> dict[tuple[int, str], dict]:
        m = fb.Model.GetRootAs(data, 0)
        out = {}
        for s in range(m.SubgraphsLength()):
            sg = m.Subgraphs(s)
            for t in range(sg.TensorsLength()):
                tensor = sg.Tensors(t)
                q = tensor.Quantization()
                buf = m.Buffers(tensor.Buffer())
                raw = buf.DataAsNumpy() if buf is not None and buf.DataLength() else None
                out[(s, (tensor.Name() or b"").decode(errors="replace"))] = {
                    "shape": tuple(tensor.ShapeAsNumpy()) if tensor.ShapeLength() else (),
                    "type": tensor.Type(),
                    "scale": tuple(q.ScaleAsNumpy()) if q is not None and q.ScaleLength() else (),
                    "zero_point": (tuple(q.ZeroPointAsNumpy())
                                   if q is not None and q.ZeroPointLength() else ()),
                    "data": None if raw is None or isinstance(raw, int) else bytes(raw),
                }  # fmt: skip
        return out

    dtypes = {fb.TensorType.INT8: np.int8, fb.TensorType.INT32: np.int32,
              fb.TensorType.UINT8: np.uint8, fb.TensorType.INT16: np.int16,
              fb.TensorType.FLOAT32: np.float32, fb.TensorType.INT64: np.int64}  # fmt: skip
    lines = [f"converted by TensorFlow {converter_version(committed)} (committed file) vs "
             f"{converter_version(rebuilt)} (rebuilt), now running {_versions()}"]  # fmt: skip
    if operator_set(committed) != operator_set(rebuilt):
        lines.append(f"operators differ: committed {describe(committed)}; rebuilt "
                     f"{describe(rebuilt)}")  # fmt: skip
    a, b = tensors(committed), tensors(rebuilt)
    changes = []
    for key in sorted(set(a) | set(b)):
        name = f"'{key[1]}'" + (f" (subgraph {key[0]})" if key[0] else "")
        if key not in a or key not in b:
            changes.append(f"tensor {name} only in the {'rebuilt' if key in b else 'committed'} model")
            continue
        x, y = a[key], b[key]
        what = []
        if x["shape"] != y["shape"] or x["type"] != y["type"]:
            what.append(f"shape/type {x['shape']} -> {y['shape']}")
        if x["scale"] != y["scale"]:
            sa, sb = np.asarray(x["scale"]), np.asarray(y["scale"])
            if sa.shape == sb.shape and sa.size:
                rel = float(np.max(np.abs(sa - sb) / np.maximum(np.abs(sa), 1e-30)))
                what.append(f"quantization scale differs ({sa.size} value(s), by up to {rel:.2%})")
            else:
                what.append(f"quantization scales: {sa.size} -> {sb.size} (per-channel or "
                            "per-tensor changed)")  # fmt: skip
        if x["zero_point"] != y["zero_point"]:
            za, zb = ([int(v) for v in t["zero_point"][:4]] for t in (x, y))
            what.append(f"zero points {za} -> {zb}")
        if x["data"] != y["data"]:
            dtype = dtypes.get(y["type"])
            if x["data"] is None or y["data"] is None or dtype is None \
                    or len(x["data"]) != len(y["data"]):  # fmt: skip
                what.append("constant data differs")
            else:
                va = np.frombuffer(x["data"], dtype).astype(np.float64)
                vb = np.frombuffer(y["data"], dtype).astype(np.float64)
                differ = va != vb
                what.append(f"{int(differ.sum())} of {va.size} constant values differ (max "
                            f"|diff| {float(np.max(np.abs(va - vb)[differ])):g})")  # fmt: skip
        if what:
            changes.append(f"tensor {name}: {'; '.join(what)}")
    lines += changes[:limit]
    if len(changes) > limit:
        lines.append(f"... and {len(changes) - limit} more tensors differ")
    if not changes and len(lines) == 1:
        lines.append("same tensors, operators and constants: the difference is in the "
                     "flatbuffer's layout or metadata")  # fmt: skip
    return lines


def _versions() -> str:
    """TensorFlow, Keras and NumPy as installed (what would rebuild the fixtures now)."""
    from importlib import metadata

    found = []
    for dist in ("tensorflow-cpu", "tensorflow", "keras", "numpy", "ai-edge-litert"):
        try:
            found.append(f"{dist} {metadata.version(dist)}")
        except metadata.PackageNotFoundError:
            continue
    return ", ".join(found) or "no TensorFlow"


def describe(model: bytes) -> str:
    parts = []
    for index, counts in enumerate(operator_set(model)):
        ops = ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(counts.items()))
        parts.append(f"subgraph {index}: {ops}")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--only", action="append", choices=sorted(FIXTURES), metavar="NAME",
                       help="build only NAME (repeatable); one of: " + ", ".join(FIXTURES))
    which.add_argument("--all", action="store_true",
                       help="build every model, including the on-demand ones (resnet50)")
    parser.add_argument("--out", type=Path,
                        help="write every model here instead of tests/fixtures/{models,generated}")
    parser.add_argument("--check", action="store_true",
                        help="rebuild and compare with the files already on disk; write nothing")
    args = parser.parse_args(argv)

    if args.only:
        names = args.only
    elif args.all:
        names = list(FIXTURES)
    else:
        names = [n for n, f in FIXTURES.items() if f.committed]

    failures = 0
    for name in names:
        fixture = FIXTURES[name]
        directory = args.out or (COMMITTED_DIR if fixture.committed else GENERATED_DIR)
        path = directory / f"{name}.tflite"
        start = time.perf_counter()
        model = fixture.build()
        built = time.perf_counter() - start
        try:
            check_with_reference(name, model)
            if fixture.committed and len(model) > MAX_COMMITTED_BYTES and args.out is None:
                raise RuntimeError(f"{name}: {len(model)} bytes, over the "
                                   f"{MAX_COMMITTED_BYTES}-byte limit for committed fixtures")
        except RuntimeError as error:
            print(f"error: {error}", file=sys.stderr)
            failures += 1
            continue
        digest = hashlib.sha256(model).hexdigest()[:16]
        if args.check:
            same = path.exists() and path.read_bytes() == model
            status = "identical" if same else "DIFFERS" if path.exists() else "MISSING"
            failures += not same
            if path.exists() and not same:
                for line in explain_difference(path.read_bytes(), model):
                    print(f"  why: {line}")
        else:
            directory.mkdir(parents=True, exist_ok=True)
            path.write_bytes(model)
            status = "written"
        print(f"{name}: {status} {path} ({len(model)} bytes, sha256 {digest}, "
              f"{built:.1f} s to build, {time.perf_counter() - start - built:.1f} s to check)")
        print(f"  {describe(model)}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
