"""Element-wise int8 ops as 256-entry tables (`q.lut`, `accel.lut`): each op of `TABLE_OPS`
after a convolution, in one accelerator function, bit-exact with LiteRT's reference kernels at
every stage (the interpreter after each pass, the compiled model, its run plan), and each table
equal to the kernel on every int8 value."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.frontend.builder import (
    ModelBuilder,
    QParams,
    TensorSpec,
    bias_tensor,
    per_axis_qparams,
    random_weights,
)

Q = QParams.per_tensor
SHAPE = (1, 8, 8, 16)
CONV_Q = Q(0.05, 2)

# op, options, output quantization (RELU6 keeps the convolution's: a clamp, q.relu)
TABLES = [
    ("LOGISTIC", {}, Q(1 / 256, -128)),
    ("TANH", {}, Q(1 / 128, 0)),
    ("HARD_SWISH", {}, Q(0.04, -20)),
    ("RELU", {}, Q(0.03, -128)),
    ("RELU6", {}, CONV_Q),
    ("RELU_N1_TO_1", {}, Q(1 / 128, 0)),
    ("LEAKY_RELU", {"alpha": 0.1}, Q(0.04, 10)),
    ("GELU", {"approximate": False}, Q(0.03, -100)),
    ("QUANTIZE", {}, Q(0.07, 5)),
]


def tables_model() -> bytes:
    rng = np.random.default_rng(1)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", SHAPE, q=Q(0.03, -1))
    w_q = per_axis_qparams(rng, channels=16, axis=0)
    w = g.const("w", random_weights(rng, (16, 1, 1, 16)), w_q)
    b = g.add_tensor(bias_tensor("b", rng, Q(0.03, -1), w_q))
    c = g.op("CONV_2D", [x, w, b], TensorSpec("conv", SHAPE, np.int8, CONV_Q),
             {"padding": "SAME", "stride_w": 1, "stride_h": 1})  # fmt: skip
    outs = [g.op(op, [c], TensorSpec(op.lower(), SHAPE, np.int8, q), options)
            for op, options, q in TABLES]  # fmt: skip
    g.output(*outs)
    return mb.build()


def test_tables_are_the_kernels_on_every_int8_value():
    from qaccel import api
    from qaccel.dialects import q, tfl
    from qaccel.kernels import registry as kernels
    from qaccel.interpreter.prepare import prepare_op
    from qaccel.passes.legalize_tfl_to_q import element_table

    module = api.import_model(tables_model())
    ops = [op for op in module.walk() if isinstance(op, tfl.TflOp | tfl.OpaqueOp)
           and getattr(op, "TFLITE_NAME", None) != "CONV_2D"]  # fmt: skip
    ops = [op for op in ops if not isinstance(op, tfl.ConstOp)]
    assert len(ops) == len(TABLES)
    every = np.resize(np.arange(-128, 128, dtype=np.int8), int(np.prod(SHAPE))).reshape(SHAPE)
    for op in ops:
        table = element_table(op)
        assert table is not None, op.name
        call = prepare_op(op)
        name = op.TFLITE_NAME if isinstance(op, tfl.TflOp) else op.op_name.data
        (want,) = kernels.run(name, kernels.OpCall(**{**call.__dict__, "inputs": [every]}))
        assert np.array_equal(table[every.astype(np.int16) + 128], want), name
    api.run_pipeline(module, "legalize-tfl-to-q")
    kinds = sorted(op.name for op in module.walk() if isinstance(op, q.ReluOp | q.LutOp))
    assert kinds == ["q.lut"] * (len(TABLES) - 1) + ["q.relu"]


def test_tables_run_inside_one_accelerator_function_bit_exact():
    pytest.importorskip("ai_edge_litert")
    from qaccel.explore.conformance import check_models

    (result,) = check_models([("tables", tables_model())], input_sets=2,
                             configs=("vta-default",), simulators=("c",))  # fmt: skip
    assert result.ok, result.line()
    assert result.run_plans["vta-default"]


def test_tables_do_not_split_the_partition():
    from qaccel import api

    compiled = api.compile(tables_model(), "vta-default")
    assert len(compiled.functions) == 1
    luts = [fb for fb in compiled.fallbacks if fb.op.startswith("accel.lut")]
    assert len(luts) == len(TABLES) - 1 and all("256-entry table" in fb.reason for fb in luts)
