"""tflite_writer and builder: what they write reads back, field by field, with the `tflite` package."""

from pathlib import Path

import numpy as np
import pytest
import tflite

from qaccel.frontend import tflite_schema as ts
from qaccel.frontend.builder import (
    ModelBuilder,
    QParams,
    TensorSpec,
    bias_qparams,
    bias_tensor,
    composite_options,
    per_axis_qparams,
    random_int8,
    random_weights,
    single_op_model,
    weights_tensor,
)
from qaccel.frontend.tflite_writer import (
    ModelSpec,
    OperatorSpec,
    SignatureDefSpec,
    SubgraphSpec,
    read_model,
    write_model,
)

FIXTURES = Path(__file__).parent / "fixtures" / "models"


def _conv_spec(rng) -> ModelSpec:
    x_q = QParams.per_tensor(0.05, -3)
    w_q = per_axis_qparams(rng, 8, axis=0)
    tensors = [
        TensorSpec("x", (1, 8, 8, 4), np.int8, x_q),
        weights_tensor("w", rng, (8, 3, 3, 4), w_q),
        bias_tensor("b", rng, x_q, w_q),
        TensorSpec("y", (1, 8, 8, 8), np.int8, QParams.per_tensor(0.1, 5)),
        TensorSpec("shape", (2,), np.int32, data=np.array([1, -1], np.int32)),
        TensorSpec("z", (1, 512), np.int8, QParams.per_tensor(0.1, 5), shape_signature=(-1, 512)),
    ]
    ops = [
        OperatorSpec("CONV_2D", [0, 1, 2], [3],
                     {"padding": "SAME", "stride_w": 1, "stride_h": 1,
                      "fused_activation_function": "RELU6"}, version=3),
        OperatorSpec("RESHAPE", [3, 4], [5], {"new_shape": np.array([1, -1], np.int32)}),
    ]
    side = SubgraphSpec(
        "side",
        [TensorSpec("a", (2,), np.float16), TensorSpec("f", (2,), np.bool_, data=np.array([1, 0], bool)),
         TensorSpec("c", (2,), np.float16)],
        [0], [2],
        [OperatorSpec("CUSTOM", [0, 1, -1], [2], custom_code="MyOp", custom_options=b"\x01\x02"),
         OperatorSpec("STABLEHLO_COMPOSITE", [0], [2],
                      {"name": "x.y", "decomposition_subgraph_index": 0,
                       "composite_attributes": b"\x00\x00\x01\x00\x00$\x01"})],
    )
    return ModelSpec(
        [SubgraphSpec("main", tensors, [0], [5], ops), side],
        description="test model",
        signature_defs=[SignatureDefSpec("serving_default", {"input": 0}, {"output": 5})],
        metadata={"min_runtime_version": b"1.14.0\x00"},
    )


def test_read_model_inverts_write_model():
    spec = _conv_spec(np.random.default_rng(1))
    data = write_model(spec)
    assert read_model(data) == spec
    # And writing what was read gives the same bytes.
    assert write_model(read_model(data)) == data


def test_written_model_reads_back_with_the_tflite_package():
    rng = np.random.default_rng(2)
    spec = _conv_spec(rng)
    data = write_model(spec)
    assert data[4:8] == b"TFL3"
    assert tflite.Model.ModelBufferHasIdentifier(data, 0)
    model = tflite.Model.GetRootAs(data, 0)
    assert model.Version() == 3
    assert model.Description() == b"test model"
    # Buffer 0 is the empty sentinel; constants get one buffer each, 16-byte aligned.
    assert model.Buffers(0).DataLength() == 0
    sg = model.Subgraphs(0)
    assert sg.Name() == b"main"
    assert sg.InputsAsNumpy().tolist() == [0] and sg.OutputsAsNumpy().tolist() == [5]
    for i, t in enumerate(spec.subgraphs[0].tensors):
        ft = sg.Tensors(i)
        assert ft.Name().decode() == t.name
        assert tuple(ft.ShapeAsNumpy().tolist()) == t.shape
        assert ts.TENSOR_TYPES[ft.Type()] == t.dtype
        if t.data is None:
            assert ft.Buffer() == 0
        else:
            buf = model.Buffers(ft.Buffer())
            np.testing.assert_array_equal(
                buf.DataAsNumpy().view(t.dtype).reshape(t.shape), np.asarray(t.data))
            start = buf._tab.Vector(buf._tab.Offset(4))
            assert start % 16 == 0
        q = ft.Quantization()
        if t.quant is None:
            assert q is None
        else:
            np.testing.assert_array_equal(q.ScaleAsNumpy(), t.quant.scale)
            assert q.ScaleAsNumpy().dtype == np.float32
            np.testing.assert_array_equal(q.ZeroPointAsNumpy(), t.quant.zero_point)
            assert q.ZeroPointAsNumpy().dtype == np.int64
            assert q.QuantizedDimension() == (t.quant.axis or 0)
    assert sg.Tensors(1).Quantization().ScaleLength() == 8  # per-channel weights
    assert sg.Tensors(5).ShapeSignatureAsNumpy().tolist() == [-1, 512]
    # Operators and their options.
    conv = sg.Operators(0)
    assert conv.InputsAsNumpy().tolist() == [0, 1, 2]
    assert conv.BuiltinOptionsType() == tflite.BuiltinOptions.Conv2DOptions
    opts = tflite.Conv2DOptions()
    opts.Init(conv.BuiltinOptions().Bytes, conv.BuiltinOptions().Pos)
    assert (opts.Padding(), opts.StrideW(), opts.FusedActivationFunction()) == (
        tflite.Padding.SAME, 1, tflite.ActivationFunctionType.RELU6)
    code = model.OperatorCodes(conv.OpcodeIndex())
    assert (code.BuiltinCode(), code.DeprecatedBuiltinCode(), code.Version()) == (3, 3, 3)
    reshape = sg.Operators(1)
    assert ts.decode_options(reshape)["new_shape"].tolist() == [1, -1]
    # The composite's options live in builtin_options_2; its code needs the wide field.
    side = model.Subgraphs(1)
    custom, composite = side.Operators(0), side.Operators(1)
    assert custom.InputsAsNumpy().tolist() == [0, 1, -1]
    assert custom.CustomOptionsAsNumpy().tobytes() == b"\x01\x02"
    assert model.OperatorCodes(custom.OpcodeIndex()).CustomCode() == b"MyOp"
    assert composite.BuiltinOptionsType() == 0
    assert composite.BuiltinOptions2Type() == tflite.BuiltinOptions2.StableHLOCompositeOptions
    code = model.OperatorCodes(composite.OpcodeIndex())
    assert (code.BuiltinCode(), code.DeprecatedBuiltinCode()) == (206, 127)
    assert ts.decode_options(composite)["name"] == "x.y"
    # Signature and metadata.
    sig = model.SignatureDefs(0)
    assert sig.SignatureKey() == b"serving_default"
    assert (sig.Inputs(0).Name(), sig.Inputs(0).TensorIndex()) == (b"input", 0)
    assert model.Metadata(0).Name() == b"min_runtime_version"


def test_operator_codes_are_shared_by_op_version_and_custom_code():
    t = [TensorSpec(f"t{i}", (1,), np.int8) for i in range(6)]
    ops = [
        OperatorSpec("RELU", [0], [1]),
        OperatorSpec("RELU", [1], [2]),
        OperatorSpec("RELU", [2], [3], version=2),
        OperatorSpec("CUSTOM", [3], [4], custom_code="A"),
        OperatorSpec("CUSTOM", [4], [5], custom_code="B"),
    ]
    model = tflite.Model.GetRootAs(write_model(ModelSpec([SubgraphSpec("g", t, [0], [5], ops)])), 0)
    assert model.OperatorCodesLength() == 4
    sg = model.Subgraphs(0)
    assert [sg.Operators(i).OpcodeIndex() for i in range(5)] == [0, 0, 1, 2, 3]


def test_fixture_models_survive_read_and_write():
    for path in sorted(FIXTURES.glob("*.tflite")):
        original = read_model(path.read_bytes())
        rewritten = read_model(write_model(original))
        assert rewritten == original, path.name


def test_large_model_is_written_from_numpy_without_copies_per_element():
    rng = np.random.default_rng(3)
    weights = rng.integers(-127, 127, size=(5000, 5000), dtype=np.int8)  # 25 MB
    spec = ModelSpec([SubgraphSpec(
        "main",
        [TensorSpec("x", (1, 5000), np.int8), TensorSpec("w", (5000, 5000), np.int8, data=weights),
         TensorSpec("y", (1, 5000), np.int8)],
        [0], [2], [OperatorSpec("FULLY_CONNECTED", [0, 1, -1], [2])])])
    data = write_model(spec)
    assert 25_000_000 < len(data) < 25_010_000
    np.testing.assert_array_equal(read_model(data).subgraphs[0].tensors[1].array(), weights)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda: write_model(ModelSpec([SubgraphSpec(
            "g", [TensorSpec("x", (1,), np.int8)], [0], [0],
            [OperatorSpec("RELU", [0], [0], {"alpha": 1.0})])])),
         r"subgraph 0 operator 0 \(RELU\): RELU takes no builtin options"),
        (lambda: write_model(ModelSpec([SubgraphSpec(
            "g", [TensorSpec("x", (1,), np.int8)], [0], [0],
            [OperatorSpec("CONV_2D", [0], [0], {"stride": 1})])])),
         r"subgraph 0 operator 0 \(CONV_2D\): Conv2DOptions has no field 'stride'"),
        (lambda: write_model(ModelSpec([SubgraphSpec(
            "g", [TensorSpec("x", (1,), np.int8)], [0], [0], [OperatorSpec("FROB", [0], [0])])])),
         r"unknown operator 'FROB'"),
        (lambda: write_model(ModelSpec([SubgraphSpec(
            "g", [TensorSpec("w", (2, 2), np.int8, data=np.zeros((2, 2), np.int32))], [], [], [])])),
         r"tensor 'w': data has dtype int32, the tensor is int8"),
        (lambda: write_model(ModelSpec([SubgraphSpec(
            "g", [TensorSpec("w", (2, 2), np.int8, data=np.zeros(3, np.int8))], [], [], [])])),
         r"tensor 'w': data has 3 elements, shape \(2, 2\) needs 4"),
        (lambda: TensorSpec("t", (1,), np.dtype("datetime64[s]")), r"has no TFLite tensor type"),
        (lambda: read_model(b"\x00" * 16), r"not a TFLite flatbuffer"),
    ],
)
def test_writer_errors(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_tensor_types_numpy_lacks():
    packed = bytes([0x21, 0x43])  # four int4 values
    spec = ModelSpec([SubgraphSpec(
        "g", [TensorSpec("w", (4,), "INT4", data=packed), TensorSpec("y", (4,), "INT8")],
        [], [1], [])])
    back = read_model(write_model(spec))
    assert back.subgraphs[0].tensors[0].dtype == "INT4"
    assert bytes(back.subgraphs[0].tensors[0].data) == packed
    assert back.subgraphs[0].tensors[1].dtype == np.int8


# ------------------------------------------------------------------------------ builder


def test_single_op_model_inputs_constants_and_omitted():
    rng = np.random.default_rng(4)
    x_q = QParams.per_tensor(0.02, 1)
    w_q = QParams.per_tensor(0.01, 0)
    data = single_op_model(
        "FULLY_CONNECTED",
        inputs=[TensorSpec("x", (2, 16), np.int8, x_q), weights_tensor("w", rng, (4, 16), w_q), None],
        outputs=[TensorSpec("y", (2, 4), np.int8, QParams.per_tensor(0.1, 0))],
        options={"keep_num_dims": True},
    )
    sg = read_model(data).subgraphs[0]
    assert [t.name for t in sg.tensors] == ["x", "w", "y"]
    assert sg.inputs == [0] and sg.outputs == [2]
    (op,) = sg.operators
    assert op.op == "FULLY_CONNECTED" and op.inputs == [0, 1, -1] and op.outputs == [2]
    assert op.options["keep_num_dims"] is True
    assert op.options["fused_activation_function"] == "NONE"


def test_model_builder_with_two_subgraphs():
    q = QParams.per_tensor(0.1, 2)
    mb = ModelBuilder()
    main, body = mb.subgraph("main"), mb.subgraph("decomposition")
    a, b = body.input("a", (1, 4), q=q), body.input("b", (1, 4), q=q)
    body.output(body.op("ADD", [a, b], TensorSpec("s", (1, 4), np.int8, q)))
    x = main.input("x", (1, 4), q=q)
    c = main.const("c", np.arange(4, dtype=np.int8).reshape(1, 4), q=q)
    main.output(main.op("STABLEHLO_COMPOSITE", [x, c], TensorSpec("z", (1, 4), np.int8, q),
                        composite_options("my.add", body, {"k": 2})))
    spec = read_model(mb.build())
    assert [g.name for g in spec.subgraphs] == ["main", "decomposition"]
    (composite,) = spec.subgraphs[0].operators
    assert composite.options["decomposition_subgraph_index"] == 1
    assert composite.options["name"] == "my.add"
    from flatbuffers import flexbuffers

    assert flexbuffers.Loads(composite.options["composite_attributes"]) == {"k": 2}
    assert spec.subgraphs[0].tensors[c].array().tolist() == [[0, 1, 2, 3]]
    assert spec.signature_defs[0].inputs == {"x": 0}


def test_random_helpers():
    rng = np.random.default_rng(5)
    w = random_weights(rng, (64, 3, 3, 8))
    assert w.dtype == np.int8 and w.min() >= -127 and w.max() <= 127
    x = random_int8(rng, (1000,))
    assert x.dtype == np.int8 and x.min() < -100 and x.max() > 100
    w_q = per_axis_qparams(rng, 16, axis=0, scale_range=(0.01, 0.02))
    assert w_q.axis == 0 and w_q.scale.dtype == np.float32 and len(w_q.scale) == 16
    assert np.all((w_q.scale >= 0.0099) & (w_q.scale <= 0.0201)) and not w_q.zero_point.any()
    b_q = bias_qparams(QParams.per_tensor(0.5, 3), w_q)
    np.testing.assert_array_equal(b_q.scale, np.float32(0.5) * w_q.scale)
    assert b_q.axis == 0 and not b_q.zero_point.any()
    b = bias_tensor("b", rng, QParams.per_tensor(0.5, 3), w_q, magnitude=100)
    assert b.shape == (16,) and b.array().dtype == np.int32 and np.abs(b.array()).max() <= 100
    b1 = bias_tensor("b", rng, QParams.per_tensor(0.5, 3), QParams.per_tensor(0.25, 0), channels=4)
    assert b1.shape == (4,) and b1.quant == QParams.per_tensor(0.125, 0)
    # Seeded: the same generator state gives the same model.
    assert random_weights(np.random.default_rng(9), (4,)).tolist() == \
        random_weights(np.random.default_rng(9), (4,)).tolist()
