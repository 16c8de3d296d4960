"""Import, print-parse round trip, export, and the driver's diagnostics for bad input."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import flatbuffers
import numpy as np
import pytest
import tflite

from qaccel.dialects.tfl import Conv2DOp, ConstOp, OpaqueOp, StableHLOCompositeOp
from qaccel.frontend.tflite_export import export_tflite
from qaccel.frontend.tflite_import import TFLiteImportError, import_tflite, import_tflite_file
from qaccel.tools.qaccel_opt import main as qaccel_opt

from conftest import FIXTURE_MODELS, fixture_models, parse_module, print_module


@pytest.mark.parametrize("path", fixture_models(), ids=lambda p: p.stem)
def test_fixture_imports_and_round_trips_as_text(path: Path):
    module = import_tflite_file(str(path))
    module.verify()
    text = print_module(module)
    again = parse_module(text)
    assert print_module(again) == text


def test_import_keeps_names_quantization_and_weight_bytes():
    data = (FIXTURE_MODELS / "small_cnn.tflite").read_bytes()
    module = import_tflite(data)
    entry = module.ops.first
    assert entry.sym_name.data == "serving_default"
    convs = [op for op in module.walk() if isinstance(op, Conv2DOp)]
    assert convs and convs[0].location.desc.data  # tensor name kept as a NameLoc
    weights = convs[0].filter.owner
    assert isinstance(weights, ConstOp)
    assert weights.output.type.element_type.is_per_axis
    model = tflite.Model.GetRootAs(data, 0)
    graph = model.Subgraphs(0)
    names = {graph.Tensors(i).Name().decode(): i for i in range(graph.TensorsLength())}
    tensor = graph.Tensors(names[weights.location.desc.data])
    expected = model.Buffers(tensor.Buffer()).DataAsNumpy().tobytes()
    assert weights.value.data.data == expected


@pytest.mark.parametrize("path", fixture_models(), ids=lambda p: p.stem)
def test_export_of_import_reimports_identically(path: Path):
    module = import_tflite_file(str(path))
    exported = export_tflite(module)
    again = import_tflite(exported)
    assert print_module(again) == print_module(module)


@pytest.mark.parametrize("path", fixture_models(), ids=lambda p: p.stem)
def test_export_runs_in_litert_with_identical_outputs(path: Path, oracle):
    original = path.read_bytes()
    exported = export_tflite(import_tflite(original))
    module = import_tflite(original)
    rng = np.random.default_rng(7)
    input_sets = [
        [
            rng.integers(-128, 128, size=a.type.get_shape(), dtype=np.int8)
            for a in module.ops.first.body.block.args
        ]
        for _ in range(2)
    ]
    a = oracle(original, input_sets)
    b = oracle(exported, input_sets)
    assert (a.refused is None) == (b.refused is None)
    if a.refused is not None:
        pytest.skip(f"the reference refuses {path.name} itself: {a.refused}")
    for outs_a, outs_b in zip(a.outputs, b.outputs, strict=True):
        for x, y in zip(outs_a, outs_b, strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y)


def test_composite_and_opaque_ops_survive_export():
    text = """
    !q = !quant.uniform<i8:f32, 0.5:-1>
    func.func @main(%x: tensor<1x4x!q>) -> tensor<1x4x!q> {
      %0 = tfl.stablehlo_composite %x {name = "odml.thing", decomposition = @dec,
             composite_attributes = {alpha = 2 : i64, mode = "fast"}, version = 1 : i32}
             : (tensor<1x4x!q>) -> tensor<1x4x!q>
      %1 = tfl.opaque %0 {op_name = "ARG_MAX", opcode = 56 : i32, version = 2 : i32,
             options = {output_type = "INT32"}} : (tensor<1x4x!q>) -> tensor<1xi32>
      func.return %0 : tensor<1x4x!q>
    }
    func.func private @dec(%x: tensor<1x4x!q>) -> tensor<1x4x!q> {
      %y = tfl.relu %x : (tensor<1x4x!q>) -> tensor<1x4x!q>
      func.return %y : tensor<1x4x!q>
    }
    """
    module = parse_module(text)
    again = import_tflite(export_tflite(module))
    composite = next(op for op in again.walk() if isinstance(op, StableHLOCompositeOp))
    assert composite.composite_name.data == "odml.thing"
    assert composite.decomposition.root_reference.data == "dec"
    assert dict(composite.composite_attributes.data).keys() == {"alpha", "mode"}
    opaque = next(op for op in again.walk() if isinstance(op, OpaqueOp))
    assert opaque.op_name.data == "ARG_MAX" and opaque.op_version == 2


# ---------------------------------------------------------------------------------------------
# Bad input: one line on stderr, exit code 1, never a traceback.


def _raw_model(*, shape=(1, 4), buffer=0, op_inputs=(0,), op_outputs=(1,), opcode_index=0) -> bytes:
    """A RELU model written field by field, so tests can put any index or shape in it."""
    b = flatbuffers.Builder(1024)

    def int_vector(start, values):
        start(b, len(values))
        for v in reversed(values):
            b.PrependInt32(v)
        return b.EndVector()

    names = [b.CreateString("x"), b.CreateString("y")]
    tensors = []
    for i in range(2):
        shape_vec = int_vector(tflite.TensorStartShapeVector, list(shape))
        tflite.TensorStart(b)
        tflite.TensorAddShape(b, shape_vec)
        tflite.TensorAddType(b, tflite.TensorType.FLOAT32)
        tflite.TensorAddBuffer(b, buffer if i == 0 else 0)
        tflite.TensorAddName(b, names[i])
        tensors.append(tflite.TensorEnd(b))
    tflite.SubGraphStartTensorsVector(b, 2)
    for t in reversed(tensors):
        b.PrependUOffsetTRelative(t)
    tensors_vec = b.EndVector()
    ins = int_vector(tflite.OperatorStartInputsVector, list(op_inputs))
    outs = int_vector(tflite.OperatorStartOutputsVector, list(op_outputs))
    tflite.OperatorStart(b)
    tflite.OperatorAddOpcodeIndex(b, opcode_index)
    tflite.OperatorAddInputs(b, ins)
    tflite.OperatorAddOutputs(b, outs)
    operator = tflite.OperatorEnd(b)
    tflite.SubGraphStartOperatorsVector(b, 1)
    b.PrependUOffsetTRelative(operator)
    ops_vec = b.EndVector()
    sg_in = int_vector(tflite.SubGraphStartInputsVector, [0])
    sg_out = int_vector(tflite.SubGraphStartOutputsVector, [1])
    tflite.SubGraphStart(b)
    tflite.SubGraphAddTensors(b, tensors_vec)
    tflite.SubGraphAddInputs(b, sg_in)
    tflite.SubGraphAddOutputs(b, sg_out)
    tflite.SubGraphAddOperators(b, ops_vec)
    subgraph = tflite.SubGraphEnd(b)
    tflite.ModelStartSubgraphsVector(b, 1)
    b.PrependUOffsetTRelative(subgraph)
    subgraphs = b.EndVector()
    tflite.OperatorCodeStart(b)
    tflite.OperatorCodeAddDeprecatedBuiltinCode(b, tflite.BuiltinOperator.RELU)
    tflite.OperatorCodeAddBuiltinCode(b, tflite.BuiltinOperator.RELU)
    tflite.OperatorCodeAddVersion(b, 1)
    code = tflite.OperatorCodeEnd(b)
    tflite.ModelStartOperatorCodesVector(b, 1)
    b.PrependUOffsetTRelative(code)
    codes = b.EndVector()
    tflite.BufferStart(b)
    empty = tflite.BufferEnd(b)
    tflite.ModelStartBuffersVector(b, 1)
    b.PrependUOffsetTRelative(empty)
    buffers = b.EndVector()
    tflite.ModelStart(b)
    tflite.ModelAddVersion(b, 3)
    tflite.ModelAddOperatorCodes(b, codes)
    tflite.ModelAddSubgraphs(b, subgraphs)
    tflite.ModelAddBuffers(b, buffers)
    b.Finish(tflite.ModelEnd(b), file_identifier=b"TFL3")
    return bytes(b.Output())


def test_raw_model_helper_makes_a_valid_model():
    module = import_tflite(_raw_model())
    module.verify()


def _run_opt(capsys, args) -> tuple[int, str]:
    with pytest.raises(SystemExit) as exit_info:
        qaccel_opt(args)
    err = capsys.readouterr().err
    return exit_info.value.code, err


BAD_MODELS = {
    "empty": (b"", "the file is empty"),
    "random_bytes": (
        bytes(np.random.default_rng(0).integers(0, 256, 512, dtype=np.uint8)),
        "not a TFLite model (file identifier",
    ),
    "wrong_identifier": (_raw_model()[:4] + b"XXXX" + _raw_model()[8:], "expected b'TFL3'"),
    "truncated": (_raw_model()[:100], "truncated or malformed flatbuffer"),
    "tensor_index": (_raw_model(op_inputs=(7,)), "tensor index 7 out of range"),
    "buffer_index": (_raw_model(buffer=9), "buffer index 9 out of range"),
    "opcode_index": (_raw_model(opcode_index=3), "opcode index 3 out of range"),
    "shape_overflow": (
        _raw_model(shape=(1 << 30, 1 << 30, 1 << 30)),
        "element count of shape [1073741824, 1073741824, 1073741824] overflows",
    ),
    "negative_dim": (_raw_model(shape=(1, -4)), "negative dimension in shape [1, -4]"),
}


@pytest.mark.parametrize("case", BAD_MODELS, ids=str)
def test_bad_model_gives_one_line_and_exit_code_1(case, tmp_path, capsys):
    data, message = BAD_MODELS[case]
    path = tmp_path / f"{case}.tflite"
    path.write_bytes(data)
    code, err = _run_opt(capsys, [str(path)])
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("qaccel-opt: error: ")
    assert message in err
    assert str(path) in err


def test_import_error_is_a_value_error_with_the_source_name():
    with pytest.raises(TFLiteImportError, match="^model.tflite: the file is empty$"):
        import_tflite(b"", "model.tflite")


@pytest.mark.parametrize(
    "args, message",
    [
        (["/nonexistent/model.tflite"], "cannot open input file '/nonexistent/model.tflite'"),
        (["-p", "no-such-pass", "IN"], "Unrecognized passes: ['no-such-pass']"),
        (["--no-such-flag", "IN"], "unrecognized arguments: --no-such-flag"),
        (["IN.txt"], "unknown file extension '.txt'"),
        (["BROKEN.mlir"], "BROKEN.mlir:1:"),
    ],
)
def test_bad_command_line_gives_one_line_and_exit_code_1(args, message, tmp_path, capsys):
    good = tmp_path / "in.mlir"
    good.write_text("func.func @f() {\n  func.return\n}\n")
    (tmp_path / "in.txt").write_text("")
    (tmp_path / "broken.mlir").write_text("func.func @f( {\n")
    args = [
        {"IN": str(good), "IN.txt": str(tmp_path / "in.txt"), "BROKEN.mlir": str(tmp_path / "broken.mlir")}.get(a, a)
        for a in args
    ]
    message = message.replace("BROKEN.mlir", str(tmp_path / "broken.mlir"))
    code, err = _run_opt(capsys, args)
    assert code == 1
    assert err.count("\n") == 1 and err.startswith("qaccel-opt: error: ")
    assert message in err


def test_cli_round_trip_and_tflite_target(tmp_path):
    model = FIXTURE_MODELS / "small_cnn.tflite"
    text = subprocess.run(
        [sys.executable, "-m", "qaccel.tools.qaccel_opt", str(model)],
        check=True, capture_output=True, text=True,
    ).stdout
    again = subprocess.run(
        [sys.executable, "-m", "qaccel.tools.qaccel_opt"],
        input=text, check=True, capture_output=True, text=True,
    ).stdout
    assert again == text
    out = tmp_path / "out.tflite"
    subprocess.run(
        [sys.executable, "-m", "qaccel.tools.qaccel_opt", "-t", "tflite", "-o", str(out)],
        input=text, check=True, capture_output=True, text=True,
    )
    assert print_module(import_tflite(out.read_bytes())) == print_module(import_tflite(model.read_bytes()))


def test_plain_xdsl_opt_parses_tfl_ir():
    xdsl_opt = shutil.which("xdsl-opt")
    if xdsl_opt is None:
        pytest.skip("xdsl-opt is not on PATH")
    text = print_module(import_tflite_file(str(FIXTURE_MODELS / "small_cnn.tflite")))
    result = subprocess.run([xdsl_opt], input=text, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert "tfl.conv_2d" in result.stdout


def _computed_reshape_model() -> bytes:
    """Keras' Flatten as the converter writes it: the target shape is computed at run time
    (SHAPE -> STRIDED_SLICE -> PACK), so RESHAPE's `new_shape` option is absent."""
    from qaccel.frontend.builder import ModelBuilder, QParams, TensorSpec

    q = QParams.per_tensor(0.05, -3)
    g = ModelBuilder()
    main = g.subgraph("main")
    x = main.input("x", (1, 2, 2, 4), q=q)
    shape = main.op("SHAPE", [x], TensorSpec("shape", (4,), np.int32), {"out_type": "INT32"})
    batch = main.op(
        "STRIDED_SLICE",
        [shape, main.const("b", np.array([0], np.int32)), main.const("e", np.array([1], np.int32)),
         main.const("s", np.array([1], np.int32))],
        TensorSpec("batch", (), np.int32), {"shrink_axis_mask": 1},
    )  # fmt: skip
    target = main.op("PACK", [batch, main.const("rest", np.array(16, np.int32))],
                     TensorSpec("target", (2,), np.int32), {"values_count": 2, "axis": 0})
    y = main.op("RESHAPE", [x, target], TensorSpec("y", (1, 16), np.int8, q))
    main.output(y)
    return g.build()


def test_reshape_with_a_computed_shape_imports_and_runs_bit_exact(oracle):
    """A regression: the option's empty default `new_shape` was read as the target shape
    ("cannot reshape [1, 2, 2, 4] (16 elements) to []") whenever the shape operand was not a
    constant, which refused every converter-made model with a Reshape or Flatten layer."""
    from qaccel.interpreter.interpreter import run_function

    model = _computed_reshape_model()
    module = import_tflite(model)
    module.verify()
    x = np.random.default_rng(0).integers(-128, 128, (1, 2, 2, 4), dtype=np.int8)
    (ours,) = run_function(module, [x])
    ref = oracle(model, [[x]])
    assert ref.refused is None, ref.refused
    assert np.array_equal(ours, ref.outputs[0][0])


def _dynamic_flatten_model() -> bytes:
    """A Dense on a rank-3 input as the converter writes it for batch None: the rows of the
    FULLY_CONNECTED are computed at run time (SHAPE -> STRIDED_SLICE -> PACK -> RESHAPE), and the
    tensors whose every dimension depends on them hold placeholder shapes ([1, 8] for what is
    [4, 8] when the model runs, signature [-1, 8])."""
    from qaccel.frontend.builder import ModelBuilder, QParams, TensorSpec

    q, w_q, y_q = QParams.per_tensor(0.05, -3), QParams.per_tensor(0.02, 0), QParams.per_tensor(0.1, 2)
    rng = np.random.default_rng(1)
    g = ModelBuilder()
    main = g.subgraph("main")
    x = main.add_tensor(TensorSpec("x", (1, 4, 8), np.int8, q, shape_signature=(-1, 4, 8)))
    main.inputs.append(x)
    shape = main.op("SHAPE", [x], TensorSpec("shape", (3,), np.int32), {"out_type": "INT32"})
    rows = main.op(
        "STRIDED_SLICE",
        [shape, main.const("b", np.array([1], np.int32)), main.const("e", np.array([2], np.int32)),
         main.const("s", np.array([1], np.int32))],
        TensorSpec("rows", (), np.int32), {"shrink_axis_mask": 1},
    )  # fmt: skip
    target = main.op("PACK", [rows, main.const("depth", np.array(8, np.int32))],
                     TensorSpec("target", (2,), np.int32), {"values_count": 2, "axis": 0})
    flat = main.op("RESHAPE", [x, target],
                   TensorSpec("flat", (1, 8), np.int8, q, shape_signature=(-1, 8)))
    w = main.const("w", rng.integers(-127, 128, (16, 8), dtype=np.int8), w_q)
    y = main.op("FULLY_CONNECTED", [flat, w, None],
                TensorSpec("y", (1, 16), np.int8, y_q, shape_signature=(-1, 16)))
    main.output(y)
    return g.build()


def test_placeholder_shapes_of_dynamic_tensors_are_computed_at_import(oracle):
    """A regression: the placeholder [1, 8] was taken for the RESHAPE's result, and the
    FULLY_CONNECTED then refused "input of 8 elements ..." or computed one row instead of 4
    (converter-made transformers were refused at import). The importer now evaluates the shape
    computation and gives both results the shapes LiteRT computes: [4, 8] and [4, 16]."""
    from qaccel.interpreter.interpreter import entry_function, run_function

    model = _dynamic_flatten_model()
    module = import_tflite(model)
    module.verify()
    assert entry_function(module).function_type.outputs.data[0].get_shape() == (4, 16)
    x = np.random.default_rng(0).integers(-128, 128, (1, 4, 8), dtype=np.int8)
    (ours,) = run_function(module, [x])
    ref = oracle(model, [[x]])
    assert ref.refused is None, ref.refused
    assert ref.outputs[0][0].shape == (4, 16)
    assert np.array_equal(ours, ref.outputs[0][0])


def test_shape_inference_of_transpose_batch_matmul_and_unary_ops():
    """What the importer needs to follow a converter-made attention block's shapes."""
    from qaccel.kernels.shape_inference import ShapeMismatch, infer_shape

    perm = np.array([0, 2, 1, 3], np.int32)
    assert infer_shape("TRANSPOSE", [(1, 16, 2, 8), (4,)], [None, perm], {}) == (1, 2, 16, 8)
    assert infer_shape("TRANSPOSE", [(1, 16, 2, 8), (4,)], [None, None], {}) is None
    assert infer_shape("BATCH_MATMUL", [(1, 2, 16, 8), (1, 2, 8, 5)], [None, None], {}) == (1, 2, 16, 5)
    assert infer_shape("BATCH_MATMUL", [(2, 1, 16, 8), (3, 16, 8)], [None, None],
                       {"adj_y": True}) == (2, 3, 16, 16)  # fmt: skip
    assert infer_shape("BATCH_MATMUL", [(8, 4), (8, 5)], [None, None], {"adj_x": True}) == (4, 5)
    with pytest.raises(ShapeMismatch):
        infer_shape("BATCH_MATMUL", [(1, 16, 8), (1, 7, 5)], [None, None], {})
    assert infer_shape("RSQRT", [(1, 16, 1)], [None], {}) == (1, 16, 1)
    assert infer_shape("GELU", [(1, 16, 64)], [None], {}) == (1, 16, 64)
