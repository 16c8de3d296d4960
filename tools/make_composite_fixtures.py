"""Regenerate the `fuse-composites` fixtures: int8 models with STABLEHLO_COMPOSITE ops.

Each model names an interface that `fuse-composites` knows (or, for `nested`, one it does not)
and carries its decomposition in int8 TFLite builtins, which is what LiteRT's
STABLEHLO_COMPOSITE kernel executes:

- `embedding_lookup.tflite`: `odml.embedding_lookup(ids, table)`, decomposed as GATHER;
- `hard_swish.tflite`: `aten.hardswish.default(x)`, decomposed as ADD(x, 3)+RELU6, MUL by 1/6,
  MUL by x, each rounding to int8 (so the fused HARD_SWISH is not bit-exact with it);
- `conv2d_bias_relu.tflite`: two `conv2d_bias_relu` composites, one with an OHWI filter, bias
  and RELU, one with a TensorFlow-layout (HWIO) filter, no bias, stride 2 and RELU6, decomposed
  as (TRANSPOSE +) CONV_2D + RELU/RELU6 whose convolution already has the activation's
  quantization (so the fused convolution is bit-exact with it);
- `nested.tflite`: an unregistered `test.conv_residual` composite whose decomposition holds a
  `conv2d_bias_relu` composite and an ADD (inlined, then fused).

Pure Python (qaccel's model builder, no TensorFlow); seeded, so re-running writes the same
bytes. Each model is checked to run in LiteRT's reference interpreter when ai-edge-litert is
installed. Usage::

    python tools/make_composite_fixtures.py            # -> tests/fixtures/composites
    python tools/make_composite_fixtures.py --check    # rebuild and compare with the files
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

from qaccel.frontend.builder import (
    GraphBuilder,
    ModelBuilder,
    QParams,
    TensorSpec,
    bias_qparams,
    composite_options,
    per_axis_qparams,
    random_bias,
    random_weights,
)

OUT = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "composites"


def _t(name: str, shape, q: QParams | None = None, dtype=np.int8) -> TensorSpec:
    return TensorSpec(name, tuple(shape), dtype, q)


def embedding_lookup() -> bytes:
    rng = np.random.default_rng(1)
    q = QParams.per_tensor(0.02, 3)
    table = random_weights(rng, (12, 6))
    mb = ModelBuilder()
    main, body = mb.subgraph("main"), mb.subgraph("odml.embedding_lookup.impl_0")
    b_ids = body.input("ids", (5,), np.int32)
    b_table = body.input("table", (12, 6), q=q)
    body.output(body.op("GATHER", [b_table, b_ids], _t("rows", (5, 6), q),
                        {"axis": 0, "batch_dims": 0}))
    ids = main.input("ids", (5,), np.int32)
    t = main.const("table", table, q)
    main.output(main.op("STABLEHLO_COMPOSITE", [ids, t], _t("embedded", (5, 6), q),
                        composite_options("odml.embedding_lookup", body)))
    return mb.build()


def hard_swish() -> bytes:
    x_q = QParams.per_tensor(0.06, 5)
    three_q = QParams.per_tensor(3.0 / 127, 0)
    relu6_q = QParams.per_tensor(6.0 / 255, -128)
    sixth_q = QParams.per_tensor(1.0 / 6 / 127, 0)
    gate_q = QParams.per_tensor(1.0 / 255, -128)
    y_q = QParams.per_tensor(0.035, -110)
    shape = (1, 8, 8, 4)
    mb = ModelBuilder()
    main, body = mb.subgraph("main"), mb.subgraph("aten.hardswish.default.impl_0")
    bx = body.input("x", shape, q=x_q)
    three = body.const("three", np.array([127], np.int8), three_q)
    sixth = body.const("one_sixth", np.array([127], np.int8), sixth_q)
    shifted = body.op("ADD", [bx, three], _t("relu6_x_plus_3", shape, relu6_q),
                      {"fused_activation_function": "RELU6"})
    gate = body.op("MUL", [shifted, sixth], _t("gate", shape, gate_q),
                   {"fused_activation_function": "NONE"})
    body.output(body.op("MUL", [bx, gate], _t("hswish", shape, y_q),
                        {"fused_activation_function": "NONE"}))
    x = main.input("x", shape, q=x_q)
    main.output(main.op("STABLEHLO_COMPOSITE", [x], _t("y", shape, y_q),
                        composite_options("aten.hardswish.default", body)))
    return mb.build()


def _conv_block(
    mb: ModelBuilder, rng: np.random.Generator, name: str, x_shape, x_q: QParams,
    out_channels: int, out_q: QParams, *, stride: int, padding: str, activation: str,
    hwio: bool, with_bias: bool,
) -> tuple[GraphBuilder, dict, list[TensorSpec], tuple[int, ...]]:
    """A `conv2d_bias_relu` decomposition subgraph; returns it, the composite's attributes,
    the weight (and bias) constants the caller passes, and the output shape."""
    n, h, w, c = x_shape
    k = 3
    w_q = per_axis_qparams(rng, out_channels, axis=3 if hwio else 0)
    filt = random_weights(rng, (out_channels, k, k, c))
    if hwio:
        filt = np.ascontiguousarray(np.transpose(filt, (1, 2, 3, 0)))
    if padding == "SAME":
        oh, ow = -(-h // stride), -(-w // stride)
    else:
        oh, ow = (h - k) // stride + 1, (w - k) // stride + 1
    out_shape = (n, oh, ow, out_channels)
    body = mb.subgraph(name)
    bx = body.input("x", x_shape, q=x_q)
    bw = body.input("filter", filt.shape, q=w_q)
    ohwi_q = QParams.per_axis(w_q.scale, w_q.zero_point, 0)
    if hwio:
        perm = body.const("perm", np.array([3, 0, 1, 2], np.int32))
        bw = body.op("TRANSPOSE", [bw, perm], _t("filter_ohwi", (out_channels, k, k, c), ohwi_q))
    b_spec = bias_qparams(x_q, ohwi_q)
    if with_bias:
        bb = body.input("bias", (out_channels,), np.int32, b_spec)
    else:
        bb = body.const("zero_bias", np.zeros(out_channels, np.int32), b_spec)
    conv = body.op("CONV_2D", [bx, bw, bb], _t("conv", out_shape, out_q),
                   {"padding": padding, "stride_w": stride, "stride_h": stride,
                    "fused_activation_function": "NONE"})
    body.output(body.op(activation, [conv], _t("act", out_shape, out_q)))
    consts = [TensorSpec(f"{name}/filter", filt.shape, np.int8, w_q, data=filt)]
    if with_bias:
        consts.append(TensorSpec(f"{name}/bias", (out_channels,), np.int32, b_spec,
                                 data=random_bias(rng, out_channels, 1 << 11)))
    attributes = {"padding": padding, "strides": [stride, stride], "activation": activation}
    if hwio:
        attributes["filter_layout"] = "HWIO"
    return body, attributes, consts, out_shape


def conv2d_bias_relu() -> bytes:
    rng = np.random.default_rng(3)
    x_q = QParams.per_tensor(0.05, -3)
    mid_q = QParams.per_tensor(0.04, -20)
    y_q = QParams.per_tensor(0.05, -60)
    mb = ModelBuilder()
    main = mb.subgraph("main")
    first, attrs1, consts1, shape1 = _conv_block(
        mb, rng, "block1.impl_0", (1, 9, 9, 3), x_q, 8, mid_q, stride=1, padding="SAME",
        activation="RELU", hwio=False, with_bias=True)
    second, attrs2, consts2, shape2 = _conv_block(
        mb, rng, "block2.impl_0", shape1, mid_q, 6, y_q, stride=2, padding="VALID",
        activation="RELU6", hwio=True, with_bias=False)
    x = main.input("x", (1, 9, 9, 3), q=x_q)
    h = main.op("STABLEHLO_COMPOSITE", [x, *consts1], _t("block1", shape1, mid_q),
                composite_options("conv2d_bias_relu", first, attrs1))
    main.output(main.op("STABLEHLO_COMPOSITE", [h, *consts2], _t("block2", shape2, y_q),
                        composite_options("conv2d_bias_relu", second, attrs2)))
    return mb.build()


def nested() -> bytes:
    rng = np.random.default_rng(4)
    x_q = QParams.per_tensor(0.05, -3)
    c_q = QParams.per_tensor(0.05, -40)
    y_q = QParams.per_tensor(0.08, -10)
    shape = (1, 6, 6, 4)
    mb = ModelBuilder()
    main, outer = mb.subgraph("main"), mb.subgraph("test.conv_residual.impl_0")
    inner, attrs, consts, _ = _conv_block(
        mb, rng, "conv2d_bias_relu.impl_0", shape, x_q, 4, c_q, stride=1, padding="SAME",
        activation="RELU", hwio=False, with_bias=True)
    ox = outer.input("x", shape, q=x_q)
    conv = outer.op("STABLEHLO_COMPOSITE", [ox, *consts], _t("conv", shape, c_q),
                    composite_options("conv2d_bias_relu", inner, attrs))
    outer.output(outer.op("ADD", [ox, conv], _t("sum", shape, y_q),
                          {"fused_activation_function": "NONE"}))
    x = main.input("x", shape, q=x_q)
    main.output(main.op("STABLEHLO_COMPOSITE", [x], _t("y", shape, y_q),
                        composite_options("test.conv_residual", outer, {"scale": 1.0})))
    return mb.build()


FIXTURES: dict[str, Callable[[], bytes]] = {
    "embedding_lookup": embedding_lookup,
    "hard_swish": hard_swish,
    "conv2d_bias_relu": conv2d_bias_relu,
    "nested": nested,
}


def _check_with_litert(name: str, model: bytes) -> None:
    try:
        from qaccel.backends.litert.oracle import run_reference
    except ImportError:
        return
    from qaccel.interpreter.interpreter import entry_function, random_inputs
    from qaccel.frontend.tflite_import import import_tflite

    # int32 inputs are embedding ids: keep them inside the 12-row table.
    inputs = [x % 12 if x.dtype == np.int32 else x
              for x in random_inputs(entry_function(import_tflite(model)), 0)]
    result = run_reference(model, [inputs], keep_all_tensors=False)
    if result.refused:
        raise SystemExit(f"{name}: {result.refused}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--check", action="store_true",
                        help="rebuild and compare with the files on disk")
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    stale = []
    for name, make in FIXTURES.items():
        model = make()
        path = args.out / f"{name}.tflite"
        if args.check:
            if not path.exists() or path.read_bytes() != model:
                stale.append(path.name)
            continue
        _check_with_litert(name, model)
        path.write_bytes(model)
        print(f"wrote {path} ({len(model)} bytes)")
    if stale:
        print(f"out of date: {', '.join(stale)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
