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
    python tools/make_fixtures.py --corpus        # the model corpus -> tests/fixtures/corpus
    python tools/make_fixtures.py --corpus --only unet --check
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
        channels = layer.moving_mean.shape[0]
        if layer.gamma is not None:  # None for BatchNormalization(scale=False)
            layer.gamma.assign(rng.uniform(0.5, 1.5, channels).astype(np.float32))
        if layer.beta is not None:   # None for center=False
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
# The corpus: converter output from many architectures, with the converter's default settings
#
# Unlike the fixtures above (converted for a fixed batch of 1), corpus models keep Keras' batch
# dimension None, as most published .tflite files do: the converter writes `shape_signature`
# -1 for it and computes RESHAPE targets at run time (SHAPE -> STRIDED_SLICE -> PACK). Each
# model is small (a few hundred KB at most; big architectures at small resolutions and widths,
# or their first stages) and comes with its test inputs and LiteRT's reference outputs
# (`NAME.ref.npz`), so that tests need neither TensorFlow nor LiteRT.


CORPUS_DIR = REPO / "tests" / "fixtures" / "corpus"
CORPUS_VERSIONS = {"tensorflow-cpu": "2.21.0", "keras": "3.15.1", "numpy": "2.4.6",
                   "ai-edge-litert": "2.3.0"}
"""The versions that made the committed corpus (manifest.json records them, with Python's):
others may pick other quantization parameters."""
CORPUS_INPUT_SETS = 2
CORPUS_MAX_BYTES = 400 * 1024


def _quantize_default(converter, calibration: np.ndarray, batch: int = 1,
                      int16x8: bool = False) -> bytes:
    """Full-integer quantization with every other converter setting at its default."""
    tf = _tf()
    converter.optimizations = [tf.lite.Optimize.DEFAULT]

    def representative_dataset():
        for start in range(0, len(calibration) - batch + 1, batch):
            yield [calibration[start:start + batch]]

    converter.representative_dataset = representative_dataset
    if int16x8:
        converter.target_spec.supported_ops = [
            tf.lite.OpsSet.EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_INT16_WEIGHTS_INT8]
        converter.inference_input_type = tf.int16
        converter.inference_output_type = tf.int16
    else:
        converter.target_spec.supported_ops = [tf.lite.OpsSet.TFLITE_BUILTINS_INT8]
        converter.inference_input_type = tf.int8
        converter.inference_output_type = tf.int8
    with contextlib.redirect_stdout(io.StringIO()):
        return converter.convert()


def standardize_classifier(model, layer_name: str, data: np.ndarray, rng: np.random.Generator,
                           spread: float = 2.0) -> None:
    """`standardize_logits` for a Dense or a 1x1 Conv2D classifier (keras.applications'
    MobileNet ends with a `conv_preds` convolution): each logit varies with the input."""
    keras = _keras()
    layer = model.get_layer(layer_name)
    features = keras.Model(model.inputs, layer.input)(data, training=False)
    features = np.asarray(features, dtype=np.float64).reshape(len(data), -1)
    kernel, bias = (np.asarray(w, dtype=np.float64) for w in layer.get_weights())
    flat = kernel.reshape(-1, kernel.shape[-1])
    logits = features @ flat + bias
    mean, std = logits.mean(axis=0), logits.std(axis=0) + 1e-6
    offset = rng.normal(0.0, 1.0, bias.shape)
    layer.set_weights([(flat * (spread / std)).reshape(kernel.shape).astype(np.float32),
                       ((bias - mean) * (spread / std) + offset).astype(np.float32)])


def _corpus_convert(model, rng: np.random.Generator, data: np.ndarray, *,
                    classifier: str | None = None, calibration_samples: int = 16,
                    batch: int = 1, int16x8: bool = False) -> bytes:
    """Calibrates BatchNorm statistics (and the classifier, if any) on `data`, then converts
    the Keras model as it is (batch None unless its input fixes one)."""
    tf = _tf()
    fit_batchnorm_statistics(model, data, rng)
    if classifier is not None:
        standardize_classifier(model, classifier, data, rng)
    converter = tf.lite.TFLiteConverter.from_keras_model(model)
    return _quantize_default(converter, data[:calibration_samples], batch, int16x8)


def _head(keras, x, classes: int, name: str = "predictions", softmax: bool = True):
    """Global average pooling, a Dense classifier and (optionally) SOFTMAX."""
    x = keras.layers.GlobalAveragePooling2D(name="avg_pool")(x)
    x = keras.layers.Dense(classes, name=name)(x)
    if softmax:
        x = keras.layers.Softmax(name="probs")(x)
    return x


def _truncated(keras, app, last_layer: str, classes: int, name: str):
    """`app` up to `last_layer` (its first stages), then `_head`."""
    x = _head(keras, app.get_layer(last_layer).output, classes)
    return keras.Model(app.inputs, x, name=name)


# --- keras.applications ---------------------------------------------------------------------


def corpus_mobilenet_v1() -> bytes:
    keras = _fresh_keras_session(2001)
    rng = np.random.default_rng(2001)
    model = keras.applications.MobileNet(input_shape=(32, 32, 3), alpha=0.25, weights=None,
                                         classes=10)
    data = _calibration_inputs(rng, (32, 32, 3), 32)
    return _corpus_convert(model, rng, data, classifier="conv_preds")


def corpus_mobilenet_v2() -> bytes:
    keras = _fresh_keras_session(2002)
    rng = np.random.default_rng(2002)
    app = keras.applications.MobileNetV2(input_shape=(32, 32, 3), alpha=0.35, weights=None,
                                         include_top=False)
    model = _truncated(keras, app, "block_13_expand_relu", 10, "mobilenet_v2")
    data = _calibration_inputs(rng, (32, 32, 3), 32)
    return _corpus_convert(model, rng, data, classifier="predictions")


def corpus_mobilenet_v3_small() -> bytes:
    keras = _fresh_keras_session(2003)
    rng = np.random.default_rng(2003)
    app = keras.applications.MobileNetV3Small(input_shape=(32, 32, 3), alpha=0.5,
                                              weights=None, include_top=False,
                                              include_preprocessing=False)
    model = _truncated(keras, app, "expanded_conv_7_add", 10, "mobilenet_v3_small")
    data = _calibration_inputs(rng, (32, 32, 3), 32)
    return _corpus_convert(model, rng, data, classifier="predictions")


def corpus_mobilenet_v3_large() -> bytes:
    keras = _fresh_keras_session(2004)
    rng = np.random.default_rng(2004)
    app = keras.applications.MobileNetV3Large(input_shape=(32, 32, 3), alpha=0.5,
                                              weights=None, include_top=False,
                                              include_preprocessing=True)
    model = _truncated(keras, app, "expanded_conv_9_add", 10, "mobilenet_v3_large")
    # With its preprocessing (Rescaling to [-1, 1]) the model takes pixels in [0, 255].
    data = rng.uniform(0.0, 255.0, size=(32, 32, 32, 3)).astype(np.float32)
    return _corpus_convert(model, rng, data, classifier="predictions")


def corpus_efficientnet_b0() -> bytes:
    keras = _fresh_keras_session(2005)
    rng = np.random.default_rng(2005)
    app = keras.applications.EfficientNetB0(input_shape=(32, 32, 3), weights=None,
                                            include_top=False)
    model = _truncated(keras, app, "block4a_project_bn", 10, "efficientnet_b0")
    data = rng.uniform(0.0, 255.0, size=(32, 32, 32, 3)).astype(np.float32)
    return _corpus_convert(model, rng, data, classifier="predictions")


def corpus_efficientnet_v2_b0() -> bytes:
    keras = _fresh_keras_session(2006)
    rng = np.random.default_rng(2006)
    app = keras.applications.EfficientNetV2B0(input_shape=(32, 32, 3), weights=None,
                                              include_top=False)
    model = _truncated(keras, app, "block4a_project_bn", 10, "efficientnet_v2_b0")
    data = rng.uniform(0.0, 255.0, size=(32, 32, 32, 3)).astype(np.float32)
    return _corpus_convert(model, rng, data, classifier="predictions")


def corpus_densenet() -> bytes:
    """DenseNet-121's building blocks (stem, dense blocks of BN-ReLU-Conv1x1-BN-ReLU-Conv3x3
    concatenated onto their input, transitions BN-ReLU-Conv1x1-AvgPool) at growth rate 8 with
    2 + 2 blocks: DenseNet121 itself is 8 M parameters."""
    keras = _fresh_keras_session(2007)
    rng = np.random.default_rng(2007)
    L = keras.layers

    def bn_relu(x, name):
        x = L.BatchNormalization(epsilon=1.001e-5, name=f"{name}_bn")(x)
        return L.Activation("relu", name=f"{name}_relu")(x)

    def conv_block(x, growth, name):
        y = bn_relu(x, f"{name}_0")
        y = L.Conv2D(4 * growth, 1, use_bias=False, name=f"{name}_1_conv")(y)
        y = bn_relu(y, f"{name}_1")
        y = L.Conv2D(growth, 3, padding="same", use_bias=False, name=f"{name}_2_conv")(y)
        return L.Concatenate(name=f"{name}_concat")([x, y])

    def transition(x, name):
        x = bn_relu(x, name)
        x = L.Conv2D(x.shape[-1] // 2, 1, use_bias=False, name=f"{name}_conv")(x)
        return L.AveragePooling2D(2, strides=2, name=f"{name}_pool")(x)

    image = keras.Input((32, 32, 3), name="image")
    x = L.ZeroPadding2D(3, name="zero_padding2d")(image)
    x = L.Conv2D(16, 7, strides=2, use_bias=False, name="conv1_conv")(x)
    x = bn_relu(x, "conv1")
    x = L.ZeroPadding2D(1, name="zero_padding2d_1")(x)
    x = L.MaxPooling2D(3, strides=2, name="pool1")(x)
    for i in range(2):
        x = conv_block(x, 8, f"conv2_block{i + 1}")
    x = transition(x, "pool2")
    for i in range(2):
        x = conv_block(x, 8, f"conv3_block{i + 1}")
    x = bn_relu(x, "bn")
    model = keras.Model(image, _head(keras, x, 10), name="densenet")
    data = _calibration_inputs(rng, (32, 32, 3), 32)
    return _corpus_convert(model, rng, data, classifier="predictions")


def corpus_nasnet() -> bytes:
    """NASNet-A (keras.applications' NASNet constructor, of which NASNetMobile is the 4 @ 1056
    setting) with one cell per stage and 4 filters per cell branch, at 32x32."""
    keras = _fresh_keras_session(2008)
    rng = np.random.default_rng(2008)
    from keras.src.applications.nasnet import NASNet

    model = NASNet(input_shape=(32, 32, 3), penultimate_filters=96, num_blocks=1,
                   stem_block_filters=8, skip_reduction=False, filter_multiplier=2,
                   include_top=True, weights=None, classes=10, default_size=32)
    data = _calibration_inputs(rng, (32, 32, 3), 32)
    return _corpus_convert(model, rng, data, classifier="predictions")


def corpus_resnet50() -> bytes:
    keras = _fresh_keras_session(2009)
    rng = np.random.default_rng(2009)
    app = keras.applications.ResNet50(input_shape=(32, 32, 3), weights=None, include_top=False)
    model = _truncated(keras, app, "conv2_block3_out", 10, "resnet50")
    data = _calibration_inputs(rng, (32, 32, 3), 32)
    return _corpus_convert(model, rng, data, classifier="predictions")


def corpus_inception() -> bytes:
    """Inception-v3-style blocks: parallel 1x1, 1x1-3x3, 1x1-3x3-3x3 and pool-1x1 branches
    concatenated; a grid reduction (stride-2 3x3 next to a max pool); a block with factorized
    1x7 / 7x1 convolutions."""
    keras = _fresh_keras_session(2010)
    rng = np.random.default_rng(2010)
    L = keras.layers

    def conv(x, filters, kernel, name, strides=1, padding="same"):
        x = L.Conv2D(filters, kernel, strides=strides, padding=padding, use_bias=False,
                     name=f"{name}_conv")(x)
        x = L.BatchNormalization(scale=False, name=f"{name}_bn")(x)
        return L.Activation("relu", name=name)(x)

    image = keras.Input((32, 32, 3), name="image")
    x = conv(image, 16, 3, "stem", strides=2, padding="valid")                    # 15x15
    a = conv(x, 8, 1, "mixed0_1x1")
    b = conv(conv(x, 8, 1, "mixed0_3x3_reduce"), 12, 3, "mixed0_3x3")
    c = conv(conv(conv(x, 8, 1, "mixed0_dbl_reduce"), 12, 3, "mixed0_dbl_a"), 12, 3,
             "mixed0_dbl_b")
    d = conv(L.AveragePooling2D(3, strides=1, padding="same", name="mixed0_pool")(x), 8, 1,
             "mixed0_pool_proj")
    x = L.Concatenate(name="mixed0")([a, b, c, d])                                  # 40
    a = conv(x, 24, 3, "mixed1_3x3", strides=2, padding="valid")                   # 7x7
    b = conv(conv(x, 8, 1, "mixed1_dbl_reduce"), 12, 3, "mixed1_dbl_a")
    b = conv(b, 12, 3, "mixed1_dbl_b", strides=2, padding="valid")
    c = L.MaxPooling2D(3, strides=2, name="mixed1_pool")(x)
    x = L.Concatenate(name="mixed1")([a, b, c])                                     # 76
    a = conv(x, 16, 1, "mixed2_1x1")
    b = conv(x, 8, 1, "mixed2_7x7_reduce")
    b = conv(conv(b, 8, (1, 7), "mixed2_1x7"), 16, (7, 1), "mixed2_7x1")
    c = conv(L.AveragePooling2D(3, strides=1, padding="same", name="mixed2_pool")(x), 16, 1,
             "mixed2_pool_proj")
    x = L.Concatenate(name="mixed2")([a, b, c])
    model = keras.Model(image, _head(keras, x, 10), name="inception")
    data = _calibration_inputs(rng, (32, 32, 3), 32)
    return _corpus_convert(model, rng, data, classifier="predictions")


# --- MLPerf Tiny-like -----------------------------------------------------------------------


def corpus_resnet8() -> bytes:
    """MLPerf Tiny's image classification model: ResNet-8 on 32x32 CIFAR-10 images."""
    keras = _fresh_keras_session(2101)
    rng = np.random.default_rng(2101)
    L = keras.layers
    image = keras.Input((32, 32, 3), name="image")
    x = L.Conv2D(16, 3, padding="same", name="stem_conv")(image)
    x = L.BatchNormalization(name="stem_bn")(x)
    x = L.Activation("relu", name="stem_relu")(x)
    for stack, (filters, strides) in enumerate(((16, 1), (32, 2), (64, 2))):
        name = f"stack{stack + 1}"
        y = L.Conv2D(filters, 3, strides=strides, padding="same", name=f"{name}_conv_a")(x)
        y = L.BatchNormalization(name=f"{name}_bn_a")(y)
        y = L.Activation("relu", name=f"{name}_relu_a")(y)
        y = L.Conv2D(filters, 3, padding="same", name=f"{name}_conv_b")(y)
        y = L.BatchNormalization(name=f"{name}_bn_b")(y)
        if strides != 1:
            x = L.Conv2D(filters, 1, strides=strides, name=f"{name}_shortcut")(x)
        x = L.Add(name=f"{name}_add")([x, y])
        x = L.Activation("relu", name=f"{name}_relu")(x)
    x = L.AveragePooling2D(8, name="pool")(x)
    x = L.Flatten(name="flatten")(x)
    x = L.Dense(10, name="predictions")(x)
    x = L.Softmax(name="probs")(x)
    model = keras.Model(image, x, name="resnet8")
    data = _calibration_inputs(rng, (32, 32, 3), 32)
    return _corpus_convert(model, rng, data, classifier="predictions")


def corpus_ds_cnn() -> bytes:
    """MLPerf Tiny's keyword spotting model: DS-CNN on 49x10 MFCC features, 12 classes."""
    keras = _fresh_keras_session(2102)
    rng = np.random.default_rng(2102)
    L = keras.layers
    features = keras.Input((49, 10, 1), name="mfcc")
    x = L.Conv2D(64, (10, 4), strides=2, padding="same", name="conv_1")(features)   # 25x5
    x = L.BatchNormalization(name="bn_1")(x)
    x = L.Activation("relu", name="relu_1")(x)
    x = L.Dropout(0.2, name="dropout_1")(x)
    for i in range(4):
        x = L.DepthwiseConv2D(3, padding="same", name=f"dw_{i}")(x)
        x = L.BatchNormalization(name=f"dw_bn_{i}")(x)
        x = L.Activation("relu", name=f"dw_relu_{i}")(x)
        x = L.Conv2D(64, 1, name=f"pw_{i}")(x)
        x = L.BatchNormalization(name=f"pw_bn_{i}")(x)
        x = L.Activation("relu", name=f"pw_relu_{i}")(x)
    x = L.Dropout(0.4, name="dropout_2")(x)
    x = L.AveragePooling2D((25, 5), name="pool")(x)
    x = L.Flatten(name="flatten")(x)
    x = L.Dense(12, name="predictions")(x)
    x = L.Softmax(name="probs")(x)
    model = keras.Model(features, x, name="ds_cnn")
    data = rng.normal(0.0, 1.0, size=(32, 49, 10, 1)).astype(np.float32)
    return _corpus_convert(model, rng, data, classifier="predictions")


def corpus_anomaly_autoencoder() -> bytes:
    """MLPerf Tiny's anomaly detection model: a dense autoencoder on 640 features (5 frames of
    128 log-mel bands), 128-wide layers and an 8-wide bottleneck, each Dense + BN + ReLU."""
    keras = _fresh_keras_session(2103)
    rng = np.random.default_rng(2103)
    L = keras.layers
    features = keras.Input((640,), name="features")
    x = features
    for i, width in enumerate((128, 128, 128, 128, 8, 128, 128, 128, 128)):
        x = L.Dense(width, name=f"dense_{i}")(x)
        x = L.BatchNormalization(name=f"bn_{i}")(x)
        x = L.Activation("relu", name=f"relu_{i}")(x)
    x = L.Dense(640, name="reconstruction")(x)
    model = keras.Model(features, x, name="anomaly_autoencoder")
    data = rng.normal(0.0, 1.0, size=(64, 640)).astype(np.float32)
    return _corpus_convert(model, rng, data, calibration_samples=32)


def corpus_visual_wake_words() -> bytes:
    """MLPerf Tiny's visual wake words model: MobileNetV1 alpha 0.25 on 96x96, 2 classes."""
    keras = _fresh_keras_session(2104)
    rng = np.random.default_rng(2104)
    L = keras.layers
    app = keras.applications.MobileNet(input_shape=(96, 96, 3), alpha=0.25, weights=None,
                                       include_top=False)
    x = L.AveragePooling2D(app.output.shape[1:3], name="pool")(app.output)
    x = L.Flatten(name="flatten")(x)
    x = L.Dense(2, name="predictions")(x)
    x = L.Softmax(name="probs")(x)
    model = keras.Model(app.inputs, x, name="visual_wake_words")
    data = _calibration_inputs(rng, (96, 96, 3), 16)
    return _corpus_convert(model, rng, data, classifier="predictions", calibration_samples=8)


# --- other shapes of networks ---------------------------------------------------------------


def corpus_unet() -> bytes:
    """A small U-Net: three resolutions, decoded by a Conv2DTranspose, a bilinear UpSampling2D
    and a nearest-neighbour resize, each concatenated with its encoder skip."""
    keras = _fresh_keras_session(2201)
    rng = np.random.default_rng(2201)
    L = keras.layers

    def conv_bn(x, filters, name):
        x = L.Conv2D(filters, 3, padding="same", use_bias=False, name=f"{name}_conv")(x)
        x = L.BatchNormalization(name=f"{name}_bn")(x)
        return L.Activation("relu", name=f"{name}_relu")(x)

    image = keras.Input((32, 32, 3), name="image")
    e1 = conv_bn(image, 8, "enc1")                                         # 32x32x8
    e2 = conv_bn(L.MaxPooling2D(2, name="down1")(e1), 16, "enc2")          # 16x16x16
    e3 = conv_bn(L.MaxPooling2D(2, name="down2")(e2), 24, "enc3")          # 8x8x24
    b = conv_bn(L.MaxPooling2D(2, name="down3")(e3), 32, "bottleneck")     # 4x4x32
    u3 = L.Conv2DTranspose(24, 2, strides=2, name="up3")(b)                # 8x8
    d3 = conv_bn(L.Concatenate(name="skip3")([u3, e3]), 24, "dec3")
    u2 = L.UpSampling2D(2, interpolation="bilinear", name="up2")(d3)       # 16x16
    d2 = conv_bn(L.Concatenate(name="skip2")([u2, e2]), 16, "dec2")
    u1 = L.Resizing(32, 32, interpolation="nearest", name="up1")(d2)       # 32x32
    d1 = conv_bn(L.Concatenate(name="skip1")([u1, e1]), 8, "dec1")
    logits = L.Conv2D(4, 1, name="logits")(d1)
    model = keras.Model(image, logits, name="unet")
    data = _calibration_inputs(rng, (32, 32, 3), 32)
    return _corpus_convert(model, rng, data)


def corpus_transformer() -> bytes:
    """One transformer encoder block on 16 tokens of width 32: multi-head self-attention (2
    heads), residual, LayerNormalization, a GELU feed-forward, residual, LayerNormalization."""
    keras = _fresh_keras_session(2202)
    rng = np.random.default_rng(2202)
    L = keras.layers
    tokens = keras.Input((16, 32), name="tokens")
    attention = L.MultiHeadAttention(num_heads=2, key_dim=16, name="attention")(tokens, tokens)
    x = L.LayerNormalization(epsilon=1e-6, name="norm1")(L.Add(name="add1")([tokens, attention]))
    y = L.Dense(64, activation="gelu", name="ffn1")(x)
    y = L.Dense(32, name="ffn2")(y)
    x = L.LayerNormalization(epsilon=1e-6, name="norm2")(L.Add(name="add2")([x, y]))
    model = keras.Model(tokens, x, name="transformer")
    data = rng.normal(0.0, 1.0, size=(32, 16, 32)).astype(np.float32)
    return _corpus_convert(model, rng, data)


def _small_cnn(keras, image):
    L = keras.layers
    x = L.Conv2D(8, 3, padding="same", use_bias=False, name="conv1")(image)
    x = L.BatchNormalization(name="bn1")(x)
    x = L.ReLU(6.0, name="relu1")(x)
    x = L.DepthwiseConv2D(3, strides=2, padding="same", use_bias=False, name="dw")(x)
    x = L.BatchNormalization(name="dw_bn")(x)
    x = L.ReLU(6.0, name="dw_relu")(x)
    x = L.Conv2D(16, 1, use_bias=False, name="pw")(x)
    x = L.BatchNormalization(name="pw_bn")(x)
    x = L.ReLU(name="pw_relu")(x)
    x = L.MaxPooling2D(2, name="pool")(x)
    x = L.Flatten(name="flatten")(x)
    x = L.Dense(10, name="predictions")(x)
    return L.Softmax(name="probs")(x)


def corpus_batch2() -> bytes:
    """A small CNN whose input fixes a batch of 2 (static shapes, no computed RESHAPE)."""
    keras = _fresh_keras_session(2203)
    rng = np.random.default_rng(2203)
    image = keras.Input(batch_shape=(2, 16, 16, 3), name="image")
    model = keras.Model(image, _small_cnn(keras, image), name="batch2")
    data = _calibration_inputs(rng, (16, 16, 3), 32)
    return _corpus_convert(model, rng, data, classifier="predictions", batch=2)


def corpus_int16x8() -> bytes:
    """The same small CNN (batch None) quantized 16x8: int16 activations, inputs and outputs,
    int8 weights, int64 convolution biases."""
    keras = _fresh_keras_session(2204)
    rng = np.random.default_rng(2204)
    image = keras.Input((16, 16, 3), name="image")
    model = keras.Model(image, _small_cnn(keras, image), name="int16x8")
    data = _calibration_inputs(rng, (16, 16, 3), 32)
    return _corpus_convert(model, rng, data, classifier="predictions", int16x8=True)


@dataclass(frozen=True)
class CorpusModel:
    build: Callable[[], bytes]
    summary: str
    """What the model is, for the README."""
    settings: str = "default, full int8"
    """The converter settings beyond `Optimize.DEFAULT` and a representative dataset."""


_DEFAULT = ("default (batch None), `TFLITE_BUILTINS_INT8`, int8 in/out")

CORPUS: dict[str, CorpusModel] = {
    "resnet8": CorpusModel(corpus_resnet8, "MLPerf Tiny ResNet-8, 32x32x3, 10 classes", _DEFAULT),
    "ds_cnn": CorpusModel(corpus_ds_cnn, "MLPerf Tiny DS-CNN keyword spotting, 49x10x1 MFCC, "
                          "12 classes", _DEFAULT),
    "anomaly_autoencoder": CorpusModel(corpus_anomaly_autoencoder, "MLPerf Tiny dense anomaly "
                                       "detection autoencoder, 640 -> 8 -> 640", _DEFAULT),
    "visual_wake_words": CorpusModel(corpus_visual_wake_words, "MLPerf Tiny visual wake words: "
                                     "MobileNetV1 alpha 0.25, 96x96x3, 2 classes", _DEFAULT),
    "mobilenet_v1": CorpusModel(corpus_mobilenet_v1, "keras.applications.MobileNet alpha 0.25, "
                                "32x32x3, 10 classes (its own conv_preds top)", _DEFAULT),
    "mobilenet_v2": CorpusModel(corpus_mobilenet_v2, "keras.applications.MobileNetV2 alpha 0.35, "
                                "32x32x3, up to block_13_expand_relu, then GAP + Dense 10",
                                _DEFAULT),
    "resnet50": CorpusModel(corpus_resnet50, "keras.applications.ResNet50, 32x32x3, up to "
                            "conv2_block3_out (stem + first stage), then GAP + Dense 10",
                            _DEFAULT),
    "batch2": CorpusModel(corpus_batch2, "small CNN, fixed batch 2, 16x16x3",
                          "input batch fixed at 2, `TFLITE_BUILTINS_INT8`, int8 in/out"),
    "mobilenet_v3_small": CorpusModel(corpus_mobilenet_v3_small, "keras.applications."
                                      "MobileNetV3Small alpha 0.5, 32x32x3, no preprocessing, "
                                      "up to expanded_conv_7_add, then GAP + Dense 10",
                                      _DEFAULT),
    "mobilenet_v3_large": CorpusModel(corpus_mobilenet_v3_large, "keras.applications."
                                      "MobileNetV3Large alpha 0.5, 32x32x3 pixels in [0, 255] "
                                      "(with its Rescaling), up to expanded_conv_9_add, then "
                                      "GAP + Dense 10", _DEFAULT),
    "efficientnet_b0": CorpusModel(corpus_efficientnet_b0, "keras.applications.EfficientNetB0, "
                                   "32x32x3 pixels in [0, 255] (with its Rescaling and "
                                   "Normalization), up to block4a_project_bn, then GAP + Dense "
                                   "10", _DEFAULT),
    "efficientnet_v2_b0": CorpusModel(corpus_efficientnet_v2_b0, "keras.applications."
                                      "EfficientNetV2B0, 32x32x3 pixels in [0, 255] (with its "
                                      "Rescaling), up to block4a_project_bn, then GAP + Dense "
                                      "10", _DEFAULT),
    "densenet": CorpusModel(corpus_densenet, "DenseNet-121's blocks, growth 8, 2 + 2 blocks, "
                            "32x32x3, GAP + Dense 10", _DEFAULT),
    "nasnet": CorpusModel(corpus_nasnet, "NASNet-A (keras.applications' NASNet: 1 cell per "
                          "stage, penultimate filters 96, stem 8), 32x32x3, 10 classes",
                          _DEFAULT),
    "inception": CorpusModel(corpus_inception, "Inception-v3-style blocks (branches, grid "
                             "reduction, 1x7/7x1), 32x32x3, GAP + Dense 10", _DEFAULT),
    "unet": CorpusModel(corpus_unet, "U-Net, 32x32x3 -> 32x32x4 logits: Conv2DTranspose, "
                        "bilinear UpSampling2D, nearest Resizing, skip concatenations",
                        _DEFAULT),
    "transformer": CorpusModel(corpus_transformer, "transformer encoder block, 16 tokens x 32: "
                               "MultiHeadAttention (2 heads), LayerNormalization, GELU "
                               "feed-forward", _DEFAULT),
    "int16x8": CorpusModel(corpus_int16x8, "small CNN, 16x16x3, 16x8 quantization",
                           "default (batch None), `EXPERIMENTAL_TFLITE_BUILTINS_ACTIVATIONS_"
                           "INT16_WEIGHTS_INT8`, int16 in/out"),
}


# --- references, manifest, README -----------------------------------------------------------


def _version_table() -> dict[str, str]:
    import importlib.metadata as metadata
    import platform

    versions = {"python": platform.python_version()}
    for package in ("tensorflow-cpu", "keras", "numpy", "ai-edge-litert", "flatbuffers"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "absent"
    return versions


def _model_ends(model: bytes) -> tuple[list[dict], list[dict]]:
    """Subgraph 0's inputs and outputs: name, shape, shape signature, numpy dtype."""
    from ai_edge_litert import schema_py_generated as fb

    dtypes = {fb.TensorType.INT8: np.int8, fb.TensorType.INT16: np.int16,
              fb.TensorType.UINT8: np.uint8, fb.TensorType.FLOAT32: np.float32,
              fb.TensorType.INT32: np.int32}
    sg = fb.Model.GetRootAs(model, 0).Subgraphs(0)

    def info(index):
        t = sg.Tensors(index)
        signature = (t.ShapeSignatureAsNumpy().tolist() if not t.ShapeSignatureIsNone()
                     else t.ShapeAsNumpy().tolist())
        return {"name": t.Name().decode(), "shape": t.ShapeAsNumpy().tolist(),
                "signature": signature, "dtype": np.dtype(dtypes[t.Type()]).name}

    return ([info(sg.Inputs(i)) for i in range(sg.InputsLength())],
            [info(sg.Outputs(i)) for i in range(sg.OutputsLength())])


def corpus_inputs(name: str, model: bytes) -> list[list[np.ndarray]]:
    """`CORPUS_INPUT_SETS` input sets, uniform over each input's integer range, seeded by the
    model's name."""
    import zlib

    rng = np.random.default_rng(zlib.crc32(name.encode()))
    inputs, _ = _model_ends(model)
    sets = []
    for _ in range(CORPUS_INPUT_SETS):
        xs = []
        for d in inputs:
            dtype = np.dtype(d["dtype"])
            if dtype.kind == "f":
                xs.append(rng.uniform(-1.0, 1.0, d["shape"]).astype(dtype))
            else:
                info = np.iinfo(dtype)
                xs.append(rng.integers(info.min, info.max + 1, d["shape"], dtype=dtype))
        sets.append(xs)
    return sets


def corpus_reference(name: str, model: bytes) -> dict[str, np.ndarray]:
    """The test inputs and LiteRT's reference outputs for them, as `NAME.ref.npz` holds them:
    `input_S_K` and `output_S_K` for input set S, model input/output K. Raises unless the
    outputs depend on the input."""
    from qaccel.backends.litert.oracle import run_reference

    sets = corpus_inputs(name, model)
    reference = run_reference(model, sets)
    if reference.refused is not None:
        raise RuntimeError(f"{name}: LiteRT's reference kernels refused the model: "
                           f"{reference.refused}")
    arrays = {}
    for s, (xs, ys) in enumerate(zip(sets, reference.outputs)):
        arrays.update({f"input_{s}_{k}": x for k, x in enumerate(xs)})
        arrays.update({f"output_{s}_{k}": np.asarray(y) for k, y in enumerate(ys)})
    for k in range(len(reference.outputs[0])):
        per_set = [np.asarray(ys[k]) for ys in reference.outputs]
        if all(np.array_equal(per_set[0], other) for other in per_set[1:]):
            raise RuntimeError(f"{name}: output {k} is the same for {len(sets)} different inputs")
        if all(np.all(y == y.flat[0]) for y in per_set):
            raise RuntimeError(f"{name}: output {k} is constant within every input set")
    return arrays


def _tensors(model: bytes) -> list[list[dict]]:
    """Per subgraph, per tensor: what `explain_corpus_difference` compares."""
    from ai_edge_litert import schema_py_generated as fb

    m = fb.Model.GetRootAs(model, 0)
    result = []
    for s in range(m.SubgraphsLength()):
        sg = m.Subgraphs(s)
        tensors = []
        for i in range(sg.TensorsLength()):
            t = sg.Tensors(i)
            q = t.Quantization()
            scale = q.ScaleAsNumpy() if q is not None and not q.ScaleIsNone() else None
            zero = q.ZeroPointAsNumpy() if q is not None and not q.ZeroPointIsNone() else None
            buffer = m.Buffers(t.Buffer())
            data = (buffer.DataAsNumpy().tobytes()
                    if buffer is not None and not buffer.DataIsNone() else b"")
            if not data and buffer is not None and buffer.Offset() > 1:
                data = model[buffer.Offset():buffer.Offset() + buffer.Size()]
            tensors.append({
                "name": (t.Name() or b"").decode(), "type": t.Type(),
                "shape": t.ShapeAsNumpy().tolist() if not t.ShapeIsNone() else [],
                "signature": (t.ShapeSignatureAsNumpy().tolist()
                              if not t.ShapeSignatureIsNone() else None),
                "scale": None if scale is None else scale.tolist(),
                "zero_point": None if zero is None else zero.tolist(),
                "data": data,
            })
        result.append(tensors)
    return result


def _describe_values(old: bytes, new: bytes, type_code: int) -> str:
    from ai_edge_litert import schema_py_generated as fb

    dtype = {fb.TensorType.INT8: np.int8, fb.TensorType.INT16: np.int16,
             fb.TensorType.INT32: np.int32, fb.TensorType.INT64: np.int64,
             fb.TensorType.FLOAT32: np.float32}.get(type_code, np.uint8)
    if len(old) != len(new) or len(old) % np.dtype(dtype).itemsize:
        return f"data {len(old)} -> {len(new)} bytes"
    a = np.frombuffer(old, dtype).astype(np.float64)
    b = np.frombuffer(new, dtype).astype(np.float64)
    changed = a != b
    return (f"values differ in {int(changed.sum())} of {a.size} "
            f"(max |difference| {np.abs(a - b).max():g})")


def explain_corpus_difference(old: bytes, new: bytes, limit: int = 12) -> list[str]:
    """What differs between two versions of a converted model, one line per difference:
    operators, then tensor by tensor (name, type, shape, quantization parameters, weights)."""
    lines = []
    if len(old) != len(new):
        lines.append(f"size {len(old)} -> {len(new)} bytes")
    old_ops, new_ops = operator_set(old), operator_set(new)
    if old_ops != new_ops:
        lines.append(f"operators: {describe(old)} -> {describe(new)}")
    old_t, new_t = _tensors(old), _tensors(new)
    for s, (ts_old, ts_new) in enumerate(zip(old_t, new_t)):
        if len(ts_old) != len(ts_new):
            lines.append(f"subgraph {s}: {len(ts_old)} -> {len(ts_new)} tensors")
        for i, (a, b) in enumerate(zip(ts_old, ts_new)):
            what = []
            for key in ("name", "type", "shape", "signature"):
                if a[key] != b[key]:
                    what.append(f"{key} {a[key]} -> {b[key]}")
            for key in ("scale", "zero_point"):
                if a[key] != b[key]:
                    if a[key] is not None and b[key] is not None and len(a[key]) == len(b[key]):
                        diff = [j for j, (x, y) in enumerate(zip(a[key], b[key])) if x != y]
                        j = diff[0]
                        what.append(f"{key} differs in {len(diff)} of {len(a[key])} channels "
                                    f"(channel {j}: {a[key][j]:.9g} -> {b[key][j]:.9g})")
                    else:
                        what.append(f"{key} {a[key]} -> {b[key]}")
            if a["data"] != b["data"]:
                what.append(_describe_values(a["data"], b["data"], b["type"]))
            if what:
                lines.append(f"subgraph {s} tensor {i} '{b['name']}': " + "; ".join(what))
    if not lines and old != new:
        lines.append("same operators and tensors; the flatbuffer layout or metadata differs")
    if len(lines) > limit:
        lines = lines[:limit] + [f"... and {len(lines) - limit} more differences"]
    return lines


def _manifest_path(directory: Path) -> Path:
    return directory / "manifest.json"


def _load_manifest(directory: Path) -> dict:
    import json

    path = _manifest_path(directory)
    if path.exists():
        return json.loads(path.read_text())
    return {"versions": {}, "models": {}}


def _ops_line(model: bytes) -> str:
    counts = operator_set(model)[0]
    return ", ".join(f"{op} x{n}" if n > 1 else op for op, n in sorted(counts.items()))


def _entry(name: str, model: bytes) -> dict:
    inputs, outputs = _model_ends(model)
    return {"bytes": len(model), "sha256": hashlib.sha256(model).hexdigest(),
            "inputs": inputs, "outputs": outputs, "operators": _ops_line(model),
            "subgraphs": len(operator_set(model)),
            "summary": CORPUS[name].summary, "settings": CORPUS[name].settings}


def _shape_text(ends: list[dict]) -> str:
    parts = []
    for d in ends:
        dims = ["?" if s == -1 else str(s) for s in d["signature"]]
        parts.append("x".join(dims) + f" {d['dtype']}")
    return ", ".join(parts)


_CORPUS_README_HEAD = """\
# Model corpus

Real converter output from many architectures, for checking that qaccel imports, compiles and
runs what TensorFlow's converter actually writes. Each model comes with its test inputs and
LiteRT's reference outputs (`NAME.ref.npz`: `input_S_K` and `output_S_K` for input set S, model
input or output K, from `OpResolverType.BUILTIN_REF`), so `tests/test_corpus.py` needs neither
TensorFlow nor LiteRT.

Made by `python tools/make_fixtures.py --corpus` (the `fixtures` extra: `tensorflow-cpu`, and
`ai-edge-litert`); `python tools/make_fixtures.py --corpus --check` rebuilds every model and its
reference outputs and compares them with these files, naming what differs (tensors, their
quantization parameters or weights, and the package versions that made the files). The script is
seeded: the same versions write the same bytes (`CORPUS_VERSIONS` in the script pins them, and
it warns when others are installed). Versions that made these files:

{versions}

How: the converter's **default settings** (`TFLiteConverter.from_keras_model`, `Optimize.DEFAULT`,
a representative dataset of 16 random samples (32 for the autoencoder, 8 for visual wake words),
int8 input/output) on Keras models whose batch
dimension is None, unless the table says otherwise. So the input's `shape_signature` has -1 for
the batch (`?` below; the stored shape is 1) and Flatten/Reshape targets are computed at run time
(SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE). Weights are random; as in `../models/`, every
BatchNormalization gets random gamma/beta and moving statistics measured on random inputs, and
classifiers are rescaled so that logits vary with the input: random networks that look trained,
whose SOFTMAX the reference kernels accept. Architectures too big for a test fixture are
converted at 32x32 and small widths, some only up to an intermediate layer (said below).
Operators are subgraph 0's, read from the flatbuffer (`NAME/vVERSION xCOUNT`); `manifest.json`
holds the same facts (and each file's sha256) for scripts.

| file | bytes | input -> output | operators | converter settings |
| --- | ---: | --- | --- | --- |
"""


def write_corpus_readme(directory: Path, manifest: dict) -> None:
    versions = "\n".join(f"- {k} {v}" for k, v in manifest["versions"].items())
    lines = [_CORPUS_README_HEAD.format(versions=versions)]
    for name, e in manifest["models"].items():
        size = f"{e['bytes']:,}".replace(",", " ")
        lines.append(f"| `{name}.tflite` | {size} | {_shape_text(e['inputs'])} -> "
                     f"{_shape_text(e['outputs'])} | {e['operators']} | {e['settings']} |\n")
    lines.append("\n## The models\n\n")
    for name, e in manifest["models"].items():
        lines.append(f"- **`{name}`**: {e['summary']}.\n")
    total = sum(e["bytes"] for e in manifest["models"].values())
    total = f"{total:,}".replace(",", " ")
    lines.append(f"\n{len(manifest['models'])} models, {total} bytes of `.tflite` in all.\n")
    (directory / "README.md").write_text("".join(lines))


def build_corpus_model(name: str, directory: Path, check: bool, copy_to: Path | None,
                       manifest: dict) -> bool:
    """Builds one corpus model and its reference; writes them (or compares them with the files
    in `directory`). Returns whether all went well."""
    start = time.perf_counter()
    model = CORPUS[name].build()
    built = time.perf_counter() - start
    path, ref_path = directory / f"{name}.tflite", directory / f"{name}.ref.npz"
    try:
        if len(model) > CORPUS_MAX_BYTES:
            raise RuntimeError(f"{name}: {len(model)} bytes, over the corpus's "
                               f"{CORPUS_MAX_BYTES}-byte limit per model")
        arrays = corpus_reference(name, model)
    except RuntimeError as error:
        print(f"error: {error}", file=sys.stderr)
        return False
    ok = True
    if check:
        if not path.exists():
            status = "MISSING"
            ok = False
        elif path.read_bytes() == model:
            status = "identical"
        else:
            status = "DIFFERS"
            ok = False
        if ok:
            committed = dict(np.load(ref_path)) if ref_path.exists() else None
            if committed is None:
                status, ok = "reference MISSING", False
            else:
                differing = sorted(k for k in committed.keys() | arrays.keys()
                                   if k not in committed or k not in arrays
                                   or not np.array_equal(committed[k], arrays[k]))
                if differing:
                    status = f"identical model, reference arrays DIFFER: {', '.join(differing)}"
                    ok = False
    else:
        directory.mkdir(parents=True, exist_ok=True)
        path.write_bytes(model)
        np.savez(ref_path, **arrays)
        manifest["models"][name] = _entry(name, model)
        status = "written"
        if copy_to is not None:
            import shutil

            copy_to.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, copy_to / path.name)
            shutil.copyfile(ref_path, copy_to / ref_path.name)
    print(f"{name}: {status} {path} ({len(model)} bytes, {built:.1f} s to build, "
          f"{time.perf_counter() - start - built:.1f} s to check)")
    print(f"  {describe(model)}")
    if check and status == "DIFFERS":
        print("  what differs (committed -> rebuilt):")
        for line in explain_corpus_difference(path.read_bytes(), model):
            print(f"    {line}")
        recorded = manifest.get("versions", {})
        for package, version in _version_table().items():
            if recorded.get(package) != version:
                print(f"    {package} {recorded.get(package)} made the committed files, "
                      f"{version} is installed here")
    return ok


def corpus_main(names: list[str], directory: Path, check: bool, copy_to: Path | None) -> int:
    import json

    manifest = _load_manifest(directory)
    installed = _version_table()
    for package, pinned in CORPUS_VERSIONS.items():
        if installed.get(package) != pinned:
            print(f"warning: {package} {installed.get(package)} is installed; the corpus was "
                  f"made with {pinned}, so models may differ", file=sys.stderr)
    failures = 0
    for name in names:
        failures += not build_corpus_model(name, directory, check, copy_to, manifest)
        if not check:
            manifest["versions"] = _version_table()
            manifest["models"] = {n: manifest["models"][n] for n in CORPUS
                                  if n in manifest["models"]}
            _manifest_path(directory).write_text(json.dumps(manifest, indent=1) + "\n")
            write_corpus_readme(directory, manifest)
    return 1 if failures else 0



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
    which.add_argument("--only", action="append", choices=sorted({*FIXTURES, *CORPUS}),
                       metavar="NAME",
                       help="build only NAME (repeatable); one of: " + ", ".join(FIXTURES)
                       + "; with --corpus one of: " + ", ".join(CORPUS))
    which.add_argument("--all", action="store_true",
                       help="build every model, including the on-demand ones (resnet50)")
    parser.add_argument("--out", type=Path,
                        help="write every model here instead of tests/fixtures/{models,generated}")
    parser.add_argument("--check", action="store_true",
                        help="rebuild and compare with the files already on disk; write nothing")
    parser.add_argument("--corpus", action="store_true",
                        help="the model corpus (tests/fixtures/corpus) instead of the fixtures")
    parser.add_argument("--copy-to", type=Path, metavar="DIR",
                        help="with --corpus: also copy each model and its reference to DIR as "
                             "soon as it is made")
    args = parser.parse_args(argv)

    if args.corpus:
        names = args.only or list(CORPUS)
        unknown = [n for n in names if n not in CORPUS]
        if unknown:
            parser.error(f"not a corpus model: {', '.join(unknown)}")
        return corpus_main(names, args.out or CORPUS_DIR, args.check, args.copy_to)
    unknown = [n for n in args.only or () if n not in FIXTURES]
    if unknown:
        parser.error(f"not a fixture model (a corpus model needs --corpus): {', '.join(unknown)}")

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
