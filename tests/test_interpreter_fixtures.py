"""The interpreter against LiteRT's reference kernels on every fixture model, tensor by tensor,
and the same after `legalize-tfl-to-q`."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func

from qaccel.backends.litert.compare import compare_with_reference
from qaccel.interpreter.interpreter import entry_function, random_inputs, run_function
from qaccel.dialects import q, tfl
from qaccel.frontend.tflite_export import export_tflite
from qaccel.frontend.tflite_import import import_tflite
from qaccel.passes.legalize_tfl_to_q import LegalizeTflToQPass
from qaccel.tools.qaccel_run import main as qaccel_run

from conftest import FIXTURE_MODELS, fixture_models

COLLAPSED = FIXTURE_MODELS / "mobilenetv2_035_96_collapsed.tflite"
RUNNABLE = [p for p in fixture_models() if p != COLLAPSED]


def _input_sets(module, count=3):
    function = entry_function(module)
    return [random_inputs(function, seed) for seed in range(count)]


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_every_tensor_is_bit_exact(path: Path, oracle):
    data = path.read_bytes()
    module = import_tflite(data)
    report = compare_with_reference(data, module, _input_sets(module))
    assert report.refused is None
    assert report.first_difference is None, report.first_difference.line()
    assert report.bit_exact, report.summary()
    # Every op result that LiteRT also keeps was compared (constants included).
    ops = [op for op in module.walk() if op.results and not isinstance(op, tfl.NoValueOp)]
    assert report.tensors_compared >= len(ops)


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_legalized_model_is_bit_exact(path: Path, oracle):
    data = path.read_bytes()
    module = import_tflite(data)
    inputs = _input_sets(module, 2)
    before = [run_function(module, x) for x in inputs]
    LegalizeTflToQPass().apply(Context(), module)
    module.verify()
    assert any(isinstance(op, q.QOp) for op in module.walk())
    after = [run_function(module, x) for x in inputs]
    for b, a in zip(before, after):
        for x, y in zip(b, a):
            assert x.dtype == y.dtype and np.array_equal(x, y)
    report = compare_with_reference(data, module, inputs, layers=False)
    assert report.bit_exact, report.summary()


def test_collapsed_softmax_is_refused_with_a_clear_message(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        qaccel_run([str(COLLAPSED), "--outputs-dir", str(tmp_path)])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "tfl.softmax" in err and "beta * input_scale * 2**26" in err and "must exceed 1" in err


def test_collapsed_prefix_without_softmax_is_bit_exact(oracle):
    module = import_tflite(COLLAPSED.read_bytes())
    entry = entry_function(module)
    softmax = next(op for op in entry.walk() if isinstance(op, tfl.SoftmaxOp))
    ret = entry.body.block.last_op
    assert isinstance(ret, func.ReturnOp) and ret.operands[0] is softmax.output
    ret.operands[0] = softmax.input
    softmax.detach()
    softmax.erase()
    entry.update_function_type()
    prefix = export_tflite(module)
    report = compare_with_reference(prefix, import_tflite(prefix), _input_sets(module, 2))
    assert report.refused is None and report.bit_exact, report.summary()
    assert report.first_difference is None


def test_qaccel_run_writes_outputs_and_compares(tmp_path, capsys, oracle):
    model = FIXTURE_MODELS / "cnn.tflite"
    with pytest.raises(SystemExit) as exit_info:
        qaccel_run([str(model), "-p", "legalize-tfl-to-q", "--random-inputs", "3",
                    "--outputs-dir", str(tmp_path), "--compare-litert"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert "output 0: 0 of 10 elements differ, max |diff| 0 (bit-exact)" in out
    y = np.load(tmp_path / "output_0.npy")
    assert y.shape == (1, 10) and y.dtype == np.int8


@pytest.mark.parametrize(
    "make_input, message",
    [
        (lambda: np.zeros((1, 32, 32, 3), np.float32), "input 0: expected dtype int8, got float32"),
        (lambda: np.zeros((1, 16, 16, 3), np.int8), "input 0: expected shape [1, 32, 32, 3], got [1, 16, 16, 3]"),
    ],
)
def test_qaccel_run_rejects_bad_inputs_in_one_line(make_input, message, tmp_path, capsys):
    x = tmp_path / "x.npy"
    np.save(x, make_input())
    with pytest.raises(SystemExit) as exit_info:
        qaccel_run([str(FIXTURE_MODELS / "small_cnn.tflite"), "--inputs", str(x),
                    "--outputs-dir", str(tmp_path)])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and message in err


def test_qaccel_run_rejects_wrong_input_count(tmp_path, capsys):
    x = tmp_path / "x.npy"
    np.save(x, np.zeros((1, 32, 32, 3), np.int8))
    with pytest.raises(SystemExit) as exit_info:
        qaccel_run([str(FIXTURE_MODELS / "small_cnn.tflite"), "--inputs", str(x), str(x),
                    "--outputs-dir", str(tmp_path)])
    assert exit_info.value.code == 1
    assert "takes 1 inputs, got 2" in capsys.readouterr().err


def test_q_conv2d_1x1_with_bottom_right_padding():
    """Explicit padding after the image on a 1x1 convolution (TFLite never makes it, q may)."""
    from qaccel.interpreter.q_semantics import conv2d
    from xdsl.dialects.builtin import TensorType, i8, i32

    x = np.arange(1 * 2 * 2 * 1, dtype=np.int8).reshape(1, 2, 2, 1)
    w = np.full((1, 1, 1, 1), 2, dtype=np.int8)
    from xdsl.ir import Block

    block = Block(arg_types=[TensorType(i8, [1, 2, 2, 1]), TensorType(i8, [1, 1, 1, 1])])
    op = q.Conv2DOp.create(
        operands=list(block.args),
        result_types=[TensorType(i32, [1, 3, 3, 1])],
        properties={"strides": q.i64_array([1, 1]), "dilations": q.i64_array([1, 1]),
                    "padding": q.i64_array([0, 1, 0, 1]), "input_zero_point": q.i32_attr(0),
                    "filter_zero_point": q.i32_attr(0)},
    )
    y = conv2d(op, x, w)
    expected = np.zeros((1, 3, 3, 1), np.int32)
    expected[0, :2, :2, 0] = 2 * x[0, :, :, 0]
    assert np.array_equal(y, expected)
