"""No artifact that cannot run: an op qaccel has no implementation for is refused by
`qaccel-compile` before it writes anything, and by `qaccel-run` and `qaccel-opt
--verify-semantics`, with the same one line (`interpreter.prepare_module`, the one check all
three reach)."""

from __future__ import annotations

import numpy as np
import pytest

from conftest import parse_module
from qaccel.frontend.builder import (
    ModelBuilder,
    QParams,
    TensorSpec,
    bias_tensor,
    per_axis_qparams,
    random_weights,
)
from qaccel.kernels.registry import KERNELS
from qaccel.tools import qaccel_compile, qaccel_opt, qaccel_run

# Rare builtins; the test takes the first one that still has no CPU kernel.
RARE_BUILTINS = ("FAKE_QUANT", "CUMSUM", "REVERSE_SEQUENCE", "MATRIX_DIAG", "SEGMENT_SUM",
                 "UNSORTED_SEGMENT_PROD", "RFFT2D", "HASHTABLE_LOOKUP")  # fmt: skip
KERNEL_LESS = next(op for op in RARE_BUILTINS if op not in KERNELS)

X_Q = QParams.per_tensor(0.05, -3)
Y_Q = QParams.per_tensor(0.1, 5)


def conv_then(op: str, *, custom_code: str | None = None) -> bytes:
    """x -> CONV_2D (accelerator work) -> `op` (one input, same shape) -> output."""
    rng = np.random.default_rng(0)
    w_q = per_axis_qparams(rng, channels=8, axis=0)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", (1, 8, 8, 4), q=X_Q)
    w = TensorSpec("w", (8, 3, 3, 4), np.int8, w_q, data=random_weights(rng, (8, 3, 3, 4)))
    y = g.op("CONV_2D", [x, w, bias_tensor("b", rng, X_Q, w_q)],
             TensorSpec("y", (1, 8, 8, 8), np.int8, Y_Q),
             {"padding": "SAME", "stride_w": 1, "stride_h": 1,
              "fused_activation_function": "NONE"})  # fmt: skip
    extra = {"custom_code": custom_code, "custom_options": b""} if custom_code else {}
    z = g.op(op, [y], TensorSpec("z", (1, 8, 8, 8), np.int8, Y_Q), **extra)
    g.output(z)
    return mb.build()


def error_line(capsys, tool, args) -> str:
    with pytest.raises(SystemExit) as exit_info:
        tool.main([str(a) for a in args])
    err = capsys.readouterr().err
    assert exit_info.value.code == 1, err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err.rstrip("\n")


@pytest.fixture
def kernel_less_model(tmp_path):
    path = tmp_path / "model.tflite"
    path.write_bytes(conv_then(KERNEL_LESS))
    return path


def test_compile_refuses_an_op_without_cpu_kernel_and_writes_nothing(kernel_less_model, tmp_path,
                                                                     capsys):  # fmt: skip
    out = tmp_path / "out"
    line = error_line(capsys, qaccel_compile, [kernel_less_model, "-o", out])
    assert line == (f'qaccel-compile: error: cannot execute op tfl.opaque "z": no CPU kernel '
                    f"for {KERNEL_LESS}")  # fmt: skip
    assert not out.exists()


def test_run_and_opt_refuse_it_with_the_same_line(kernel_less_model, tmp_path, capsys):
    compile_line = error_line(capsys, qaccel_compile, [kernel_less_model, "-o", tmp_path / "o"])
    message = compile_line.removeprefix("qaccel-compile: error: ")
    for args in ([], ["-p", "vta-pipeline"], ["--target", "vta"]):
        line = error_line(capsys, qaccel_run,
                          [kernel_less_model, *args, "--outputs-dir", tmp_path / "res"])
        assert line == f"qaccel-run: error: {message}", args
        assert not (tmp_path / "res").exists()
    line = error_line(capsys, qaccel_opt,
                      [kernel_less_model, "-p", "vta-pipeline", "--verify-semantics"])
    assert line == f"qaccel-opt: error: --verify-semantics: cannot run the input: {message}"


def test_opt_still_imports_and_prints_it(kernel_less_model, capsys):
    """Only running is refused: the op stays opaque, printed and partitioned around."""
    qaccel_opt.main([str(kernel_less_model), "-p", "vta-pipeline"])
    out = capsys.readouterr().out
    assert f'op_name = "{KERNEL_LESS}"' in out


def test_custom_op_is_named_by_its_custom_code(tmp_path, capsys):
    path = tmp_path / "model.tflite"
    path.write_bytes(conv_then("CUSTOM", custom_code="QaccelNoSuchOp"))
    line = error_line(capsys, qaccel_compile, [path, "-o", tmp_path / "out"])
    assert line.endswith(": no CPU kernel for custom op QaccelNoSuchOp")
    assert not (tmp_path / "out").exists()


CALL_OF_DECLARATION = """
builtin.module {
  func.func private @elsewhere(tensor<1x4xi32>) -> tensor<1x4xi32>
  func.func public @main(%x: tensor<1x4xi32>) -> tensor<1x4xi32> {
    %y = func.call @elsewhere(%x) : (tensor<1x4xi32>) -> tensor<1x4xi32>
    func.return %y : tensor<1x4xi32>
  }
}
"""


def test_call_of_a_function_without_body_is_refused(tmp_path, capsys):
    parse_module(CALL_OF_DECLARATION)  # valid IR: only running it is impossible
    path = tmp_path / "call.mlir"
    path.write_text(CALL_OF_DECLARATION)
    line = error_line(capsys, qaccel_compile, [path, "-o", tmp_path / "out", "-p", "vta-pipeline"])
    assert line == "qaccel-compile: error: cannot execute op func.call: @elsewhere has no body to run"
    assert not (tmp_path / "out").exists()
    line = error_line(capsys, qaccel_run, [path, "--outputs-dir", tmp_path / "res"])
    assert line == "qaccel-run: error: cannot execute op func.call: @elsewhere has no body to run"


def test_refused_by_litert_prepare_is_refused_by_compile_too(tmp_path, capsys):
    """A model LiteRT's reference kernels refuse at Prepare would fail at run time: no
    artifact either (the same line as qaccel-run's)."""
    from conftest import FIXTURE_MODELS

    collapsed = FIXTURE_MODELS / "mobilenetv2_035_96_collapsed.tflite"
    line = error_line(capsys, qaccel_compile, [collapsed, "-o", tmp_path / "out"])
    assert line.startswith("qaccel-compile: error: LiteRT's reference kernels refuse this "
                           'model: tfl.softmax "')  # fmt: skip
    assert not (tmp_path / "out").exists()
    run_line = error_line(capsys, qaccel_run,
                          [collapsed, "--target", "vta", "--outputs-dir", tmp_path / "res"])
    assert run_line.removeprefix("qaccel-run") == line.removeprefix("qaccel-compile")


def int16x8_conv() -> bytes:
    """What the converter's 16-bit-activation mode (int16x8) emits for a convolution: int16
    activations (zero point 0), int8 weights, int64 biases."""
    rng = np.random.default_rng(1)
    x_q, y_q = QParams.per_tensor(3.05e-5, 0), QParams.per_tensor(6.1e-5, 0)
    w_q = per_axis_qparams(rng, channels=4, axis=0)
    bias_q = QParams.per_axis(x_q.scale[0] * w_q.scale, np.zeros(4, np.int64), 0)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", (1, 6, 6, 3), np.int16, q=x_q)
    w = TensorSpec("w", (4, 3, 3, 3), np.int8, w_q, data=random_weights(rng, (4, 3, 3, 3)))
    b = TensorSpec("b", (4,), np.int64, bias_q, data=rng.integers(-1000, 1000, 4))
    g.output(g.op("CONV_2D", [x, w, b], TensorSpec("y", (1, 6, 6, 4), np.int16, y_q),
                  {"padding": "SAME", "stride_w": 1, "stride_h": 1,
                   "fused_activation_function": "NONE"}))  # fmt: skip
    return mb.build()


def test_int16x8_models_are_refused_at_import_by_every_tool(tmp_path, capsys):
    path = tmp_path / "int16x8.tflite"
    path.write_bytes(int16x8_conv())
    message = (f"{path}: subgraph 0: 16-bit activations (int16x8 quantization) are not "
               "supported: tensor 0 'x' is int16")  # fmt: skip
    out = tmp_path / "out"
    assert error_line(capsys, qaccel_compile, [path, "-o", out]) == \
        f"qaccel-compile: error: {message}"
    assert not out.exists()
    assert error_line(capsys, qaccel_run, [path, "--outputs-dir", tmp_path / "res"]) == \
        f"qaccel-run: error: {message}"
    assert error_line(capsys, qaccel_opt, [path]) == f"qaccel-opt: error: {message}"


def test_a_kernel_without_the_tensor_type_is_refused_like_a_missing_kernel(tmp_path, capsys):
    """A kernel that declares the output types it computes (`register(output_types=...)`)
    refuses the others at Prepare: a uint8 (legacy) CONV_2D compiled to an artifact that
    failed at run time."""
    from qaccel.frontend.builder import single_op_model
    from qaccel.kernels.base import OUTPUT_TYPES

    assert np.dtype(np.uint8) not in OUTPUT_TYPES["CONV_2D"]
    rng = np.random.default_rng(2)
    model = single_op_model(
        "CONV_2D",
        inputs=[TensorSpec("x", (1, 6, 6, 4), np.uint8, QParams.per_tensor(0.05, 128)),
                TensorSpec("w", (8, 3, 3, 4), np.uint8, QParams.per_tensor(0.01, 120),
                           data=rng.integers(0, 255, (8, 3, 3, 4)).astype(np.uint8)),
                TensorSpec("b", (8,), np.int32, QParams.per_tensor(0.0005, 0),
                           data=rng.integers(-100, 100, 8).astype(np.int32))],
        outputs=[TensorSpec("y", (1, 6, 6, 8), np.uint8, QParams.per_tensor(0.1, 128))],
        options={"padding": "SAME", "stride_w": 1, "stride_h": 1,
                 "fused_activation_function": "NONE"},
    )  # fmt: skip
    path = tmp_path / "u8.tflite"
    path.write_bytes(model)
    message = ('cannot execute op tfl.conv_2d "y": no CPU kernel for CONV_2D with uint8 output '
               "(it computes int8, float32)")  # fmt: skip
    assert error_line(capsys, qaccel_compile, [path, "-o", tmp_path / "out"]) == \
        f"qaccel-compile: error: {message}"
    assert not (tmp_path / "out").exists()
    assert error_line(capsys, qaccel_run, [path, "--outputs-dir", tmp_path / "res"]) == \
        f"qaccel-run: error: {message}"
