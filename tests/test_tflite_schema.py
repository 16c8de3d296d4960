"""tflite_schema: name maps, operator -> options table, and the options codec round trip."""

import subprocess
import sys
import zlib
from pathlib import Path

import flatbuffers
import numpy as np
import pytest
import tflite

from qaccel.frontend import tflite_schema as ts

FIXTURES = Path(__file__).parent / "fixtures" / "models"


# ------------------------------------------------------------------------------ name maps


def test_operator_maps_cover_the_schema_enum():
    members = {k: v for k, v in vars(tflite.BuiltinOperator).items() if not k.startswith("_")}
    assert ts.BUILTIN_OPERATOR_CODES == members
    assert ts.BUILTIN_OPERATORS == {v: k for k, v in members.items()}
    assert ts.BUILTIN_OPERATORS[3] == "CONV_2D"
    assert ts.BUILTIN_OPERATOR_CODES["STABLEHLO_COMPOSITE"] == 206


def test_tensor_type_maps():
    assert ts.TENSOR_TYPES[9] == np.dtype(np.int8)
    assert ts.TENSOR_TYPES[2] == np.dtype(np.int32)
    assert ts.TENSOR_TYPES[0] == np.dtype(np.float32)
    assert ts.TENSOR_TYPES[6] == np.dtype(np.bool_)
    assert ts.TENSOR_TYPES[17] == "INT4"
    assert ts.TENSOR_TYPES[5] == "STRING"
    assert ts.TENSOR_TYPE_NAMES[9] == "INT8"
    for code, dtype in ts.TENSOR_TYPES.items():
        assert ts.tensor_type_code(dtype) == code
        assert ts.tensor_type_code(ts.TENSOR_TYPE_NAMES[code]) == code
    with pytest.raises(ValueError, match="no TFLite tensor type"):
        ts.tensor_type_code(np.dtype("datetime64[s]"))


def test_importing_the_schema_does_not_import_tflite():
    # qaccel-opt imports this module on every run; the tflite package costs tens of ms.
    code = (
        "import sys; import qaccel.frontend.tflite_schema as ts; "
        "assert 'tflite' not in sys.modules, 'eager import'; "
        "assert ts.BUILTIN_OPERATORS[0] == 'ADD'; assert 'tflite' in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize(
    "op, table",
    [
        ("CONV_2D", "Conv2DOptions"),
        ("DEPTHWISE_CONV_2D", "DepthwiseConv2DOptions"),
        ("FULLY_CONNECTED", "FullyConnectedOptions"),
        ("AVERAGE_POOL_2D", "Pool2DOptions"),
        ("MAX_POOL_2D", "Pool2DOptions"),
        ("RESHAPE", "ReshapeOptions"),
        ("SOFTMAX", "SoftmaxOptions"),
        ("ADD", "AddOptions"),
        ("MEAN", "ReducerOptions"),
        ("SUM", "ReducerOptions"),
        ("MAXIMUM", "MaximumMinimumOptions"),
        ("PADV2", "PadV2Options"),
        ("MIRROR_PAD", "MirrorPadOptions"),
        ("L2_NORMALIZATION", "L2NormOptions"),
        ("UNIDIRECTIONAL_SEQUENCE_RNN", "SequenceRNNOptions"),
        ("BATCH_MATMUL", "BatchMatMulOptions"),
        ("ATAN2", "ATan2Options"),
        ("STABLEHLO_COMPOSITE", "StableHLOCompositeOptions"),
        ("STABLEHLO_PAD", "StablehloPadOptions"),
        ("RELU", None),
        ("LOGISTIC", None),
        ("CUSTOM", None),
    ],
)
def test_options_table_for(op, table):
    assert ts.options_table_for(op) == table


def test_every_options_table_is_used_by_some_operator():
    used = {ts.options_table_for(op) for op in ts.BUILTIN_OPERATORS.values()} - {None}
    assert used == set(ts.OPTIONS_TABLES)
    assert ts.OPTIONS_TABLES["Conv2DOptions"][0] == 1
    assert ts.OPTIONS_TABLES["StableHLOCompositeOptions"] == (2, 21)


def test_reflected_layouts_match_the_schema():
    conv = ts.options_table("Conv2DOptions")
    assert [f.name for f in conv.fields] == [
        "padding", "stride_w", "stride_h", "fused_activation_function",
        "dilation_w_factor", "dilation_h_factor", "quantized_bias_type",
    ]
    assert conv.field("padding").enum == "Padding"
    assert conv.field("dilation_w_factor").default == 1
    add = ts.options_table("AddOptions")
    assert add.field("pot_scale_int16").default is True
    composite = ts.options_table("StableHLOCompositeOptions")
    assert [(f.name, f.kind) for f in composite.fields] == [
        ("name", "string"), ("decomposition_subgraph_index", "int"),
        ("composite_attributes", "bytes"), ("composite_attributes_format", "enum"),
        ("version", "int"),
    ]
    conv_hlo = ts.options_table("StablehloConvolutionOptions")
    assert conv_hlo.field("padding").kind == "vector"  # not the Padding enum
    assert conv_hlo.field("padding").dtype == np.int64
    assert conv_hlo.field("window_reversal").dtype == np.bool_
    assert ts.options_table("BucketizeOptions").field("boundaries").dtype == np.float32
    assert ts.options_table("RandomOptions").field("seed2").dtype == np.int64


# ------------------------------------------------------------------------------ codec


def _operator_with_options(table: str, fields: dict):
    """Encode `fields` into an Operator's options union and read it back as tflite.Operator."""
    op_module = ts.generated_module("Operator")
    b = flatbuffers.Builder(256)
    options = ts.encode_options(b, table, fields)
    union, code = ts.OPTIONS_TABLES[table]
    op_module.OperatorStart(b)
    if union == 1:
        op_module.OperatorAddBuiltinOptionsType(b, code)
        op_module.OperatorAddBuiltinOptions(b, options)
    else:
        op_module.OperatorAddBuiltinOptions2Type(b, code)
        op_module.OperatorAddBuiltinOptions2(b, options)
    b.Finish(op_module.OperatorEnd(b))
    return tflite.Operator.GetRootAs(bytes(b.Output()), 0)


def _random_value(rng, f):
    if f.kind == "enum":
        return str(rng.choice(list(ts.enum_members(f.enum))))
    if f.kind == "bool":
        return bool(rng.integers(2))
    if f.kind == "float":
        return float(np.float32(rng.normal() * 10))
    if f.kind == "int":
        info = np.iinfo(f.dtype)
        return int(rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), endpoint=True))
    if f.kind == "string":
        return "".join(rng.choice(list("abcXYZ_.é"), size=int(rng.integers(0, 12))))
    if f.kind == "bytes":
        return rng.integers(0, 256, size=int(rng.integers(0, 20)), dtype=np.uint8).tobytes()
    n = int(rng.integers(0, 7))
    if f.dtype == np.bool_:
        return rng.integers(0, 2, size=n).astype(np.bool_)
    if f.dtype.kind == "f":
        return rng.normal(size=n).astype(f.dtype)
    info = np.iinfo(f.dtype)
    return rng.integers(max(info.min, -(2**40)), min(info.max, 2**40), size=n, dtype=f.dtype)


def _assert_options_equal(got: dict, want: dict):
    assert list(got) == list(want)
    for k, v in want.items():
        if isinstance(v, np.ndarray):
            assert isinstance(got[k], np.ndarray) and got[k].dtype == v.dtype, k
            np.testing.assert_array_equal(got[k], v, err_msg=k)
        else:
            assert type(got[k]) is type(v) and got[k] == v, (k, got[k], v)


@pytest.mark.parametrize("table", sorted(ts.OPTIONS_TABLES))
def test_round_trip_every_options_table(table):
    rng = np.random.default_rng(zlib.crc32(table.encode()))
    layout = ts.options_table(table)
    for _ in range(4):
        # Each field present with probability 3/4: absent scalars decode as defaults,
        # absent vectors and strings stay absent.
        fields = {f.name: _random_value(rng, f) for f in layout.fields if rng.random() < 0.75}
        decoded = ts.decode_options(_operator_with_options(table, fields))
        _assert_options_equal(decoded, ts.with_defaults(table, fields))


@pytest.mark.parametrize(
    "table, fields",
    [
        ("Conv2DOptions", {"padding": "VALID", "stride_w": 2, "stride_h": 2,
                           "fused_activation_function": "RELU6", "dilation_w_factor": 1,
                           "dilation_h_factor": 3, "quantized_bias_type": "FLOAT32"}),
        ("DepthwiseConv2DOptions", {"padding": "SAME", "stride_w": 1, "stride_h": 1,
                                    "depth_multiplier": 2, "fused_activation_function": "RELU",
                                    "dilation_w_factor": 1, "dilation_h_factor": 1}),
        ("FullyConnectedOptions", {"fused_activation_function": "NONE", "weights_format": "DEFAULT",
                                   "keep_num_dims": True, "asymmetric_quantize_inputs": False,
                                   "quantized_bias_type": "INT32"}),
        ("ReshapeOptions", {"new_shape": np.array([1, -1], np.int32)}),
        ("ReshapeOptions", {"new_shape": np.zeros(0, np.int32)}),  # present but empty: a scalar
        ("ReshapeOptions", {}),
        ("SqueezeOptions", {"squeeze_dims": np.array([1, 2], np.int32)}),
        ("SoftmaxOptions", {"beta": 1.0}),
        ("ReducerOptions", {"keep_dims": True}),
        ("MirrorPadOptions", {"mode": "SYMMETRIC"}),
        ("LeakyReluOptions", {"alpha": float(np.float32(0.2))}),
        ("StridedSliceOptions", {"begin_mask": 5, "end_mask": 1, "ellipsis_mask": 0,
                                 "new_axis_mask": 0, "shrink_axis_mask": 2, "offset": False}),
        ("StableHLOCompositeOptions", {"name": "odml.rms_norm", "decomposition_subgraph_index": 3,
                                       "composite_attributes": b"\x00\x00\x01\x00\x00$\x01",
                                       "composite_attributes_format": "FLEXBUFFERS",
                                       "version": 2}),
    ],
)
def test_round_trip_real_model_options(table, fields):
    decoded = ts.decode_options(_operator_with_options(table, fields))
    _assert_options_equal(decoded, ts.with_defaults(table, fields))


def test_absent_and_empty_vectors_differ():
    absent = ts.decode_options(_operator_with_options("ReshapeOptions", {}))
    empty = ts.decode_options(_operator_with_options("ReshapeOptions", {"new_shape": []}))
    assert "new_shape" not in absent
    assert empty["new_shape"].shape == (0,) and empty["new_shape"].dtype == np.int32


def test_operator_without_options_decodes_to_empty_dict():
    op_module = ts.generated_module("Operator")
    b = flatbuffers.Builder(64)
    op_module.OperatorStart(b)
    b.Finish(op_module.OperatorEnd(b))
    assert ts.decode_options(tflite.Operator.GetRootAs(bytes(b.Output()), 0)) == {}


def test_encode_accepts_enum_codes_and_lists():
    decoded = ts.decode_options(_operator_with_options(
        "Conv2DOptions", {"padding": 1, "fused_activation_function": 3}))
    assert decoded["padding"] == "VALID" and decoded["fused_activation_function"] == "RELU6"
    decoded = ts.decode_options(_operator_with_options("ReshapeOptions", {"new_shape": [2, 3]}))
    np.testing.assert_array_equal(decoded["new_shape"], np.array([2, 3], np.int32))


@pytest.mark.parametrize(
    "table, fields, message",
    [
        ("Conv2DOptions", {"strides": 2}, r"Conv2DOptions has no field 'strides'"),
        ("Conv2DOptions", {"padding": "FULL"}, r"Conv2DOptions.padding: 'FULL' is not a Padding"),
        ("Conv2DOptions", {"stride_w": 2**40}, r"Conv2DOptions.stride_w: .* does not fit int32"),
        ("Conv2DOptions", {"stride_w": 1.5}, r"Conv2DOptions.stride_w must be an integer"),
        ("ReducerOptions", {"keep_dims": "yes"}, r"ReducerOptions.keep_dims must be a bool"),
        ("ReshapeOptions", {"new_shape": [[1, 2]]}, r"ReshapeOptions.new_shape must be 1-D"),
        ("ReshapeOptions", {"new_shape": [2**40]}, r"ReshapeOptions.new_shape: .* does not fit int32"),
        ("StableHLOCompositeOptions", {"name": 3}, r"StableHLOCompositeOptions.name must be a str"),
    ],
)
def test_encode_errors_name_table_and_field(table, fields, message):
    with pytest.raises(ValueError, match=message):
        ts.encode_options(flatbuffers.Builder(64), table, fields)


def test_unknown_table():
    with pytest.raises(ValueError, match="unknown builtin options table 'Conv4DOptions'"):
        ts.options_table("Conv4DOptions")


def test_decode_real_model_options():
    data = (FIXTURES / "small_cnn.tflite").read_bytes()
    model = tflite.Model.GetRootAs(data, 0)
    sg = model.Subgraphs(0)
    seen = {}
    for i in range(sg.OperatorsLength()):
        op = sg.Operators(i)
        name = ts.BUILTIN_OPERATORS[ts.builtin_code(model.OperatorCodes(op.OpcodeIndex()))]
        seen.setdefault(name, ts.decode_options(op))
    assert seen["CONV_2D"]["padding"] == "SAME"
    assert seen["CONV_2D"]["fused_activation_function"] == "RELU"
    assert seen["DEPTHWISE_CONV_2D"]["fused_activation_function"] == "RELU6"
    assert seen["MAX_POOL_2D"] == {"padding": "VALID", "stride_w": 2, "stride_h": 2,
                                   "filter_width": 2, "filter_height": 2,
                                   "fused_activation_function": "NONE"}
    assert seen["SOFTMAX"] == {"beta": 1.0}


_DEFERRED_PACKAGE = r"""
import sys
from qaccel.frontend.tflite_import import import_tflite

import_tflite(open(sys.argv[1], "rb").read())
imported = sum(name.startswith("tflite.") for name in sys.modules)
assert imported < 40, imported  # the modules the model needs, not the package's ~190
import tflite

# An `import tflite` user sees the whole package: classes over the submodules the
# generated readers imported on their own (SubGraph, Tensor), and the rest.
assert isinstance(tflite.SubGraph, type) and isinstance(tflite.Tensor, type), tflite.SubGraph
assert tflite.Model.GetRootAs and tflite.__version__ and tflite.TensorType.INT8 == 9
assert sum(name.startswith("tflite.") for name in sys.modules) > 150
print("ok")
"""


def test_the_importer_imports_only_the_schema_modules_it_reads():
    run = subprocess.run([sys.executable, "-c", _DEFERRED_PACKAGE,
                          str(FIXTURES / "small_cnn.tflite")],
                         capture_output=True, text=True, timeout=120)  # fmt: skip
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stderr
