"""The LiteRT oracle on builder-made models: they load and run, results look like the ops'
arithmetic, refusals and bad inputs are reported clearly."""

from pathlib import Path

import numpy as np
import pytest

from qaccel.backends.litert import oracle as litert
from qaccel.backends.litert.oracle import LiteRTUnavailable, run_reference
from qaccel.frontend.builder import (
    ModelBuilder,
    QParams,
    TensorSpec,
    bias_tensor,
    composite_options,
    per_axis_qparams,
    random_int8,
    single_op_model,
    weights_tensor,
)
from qaccel.frontend.tflite_writer import read_model, write_model

FIXTURES = Path(__file__).parent / "fixtures" / "models"


def _close(got: np.ndarray, want: np.ndarray, tol: int = 1) -> None:
    """Int8 results vs a float model of the op: the fixed-point arithmetic may differ by one."""
    assert got.shape == want.shape and got.dtype == np.int8
    diff = np.abs(got.astype(np.int64) - want.astype(np.int64))
    assert diff.max() <= tol, f"max difference {diff.max()}"
    assert np.mean(diff == 0) >= 0.5


def _requantize(real: np.ndarray, q: QParams, relu6: bool = False) -> np.ndarray:
    out = np.round(real / q.s) + q.zp
    if relu6:
        out = np.clip(out, q.zp, q.zp + np.round(6.0 / q.s))
    return np.clip(out, -128, 127).astype(np.int8)


def test_conv2d_per_channel():
    rng = np.random.default_rng(10)
    x_q, y_q = QParams.per_tensor(0.05, -3), QParams.per_tensor(0.08, 5)
    w_q = per_axis_qparams(rng, 8, axis=0)
    w = weights_tensor("w", rng, (8, 3, 3, 4), w_q)
    b = bias_tensor("b", rng, x_q, w_q)
    model = single_op_model(
        "CONV_2D",
        inputs=[TensorSpec("x", (1, 9, 9, 4), np.int8, x_q), w, b],
        outputs=[TensorSpec("y", (1, 5, 5, 8), np.int8, y_q)],
        options={"padding": "SAME", "stride_w": 2, "stride_h": 2,
                 "fused_activation_function": "RELU6"},
        version=3,
    )
    xs = [random_int8(rng, (1, 9, 9, 4)) for _ in range(3)]
    ref = run_reference(model, [[x] for x in xs])
    assert ref.refused is None
    assert len(ref.outputs) == 3 and all(len(o) == 1 for o in ref.outputs)
    assert ref.tensor_names == {0: "x", 1: "w", 2: "b", 3: "y"}
    assert ref.input_indices == [0] and ref.output_indices == [3]
    wa = w.array().astype(np.float64) * w_q.scale[:, None, None, None]
    ba = b.array() * b.quant.scale.astype(np.float64)
    for x, out, tensors in zip(xs, ref.outputs, ref.tensors):
        np.testing.assert_array_equal(tensors[0], x)
        np.testing.assert_array_equal(tensors[1], w.array())  # constants are reported too
        np.testing.assert_array_equal(tensors[3], out[0])
        xr = np.pad((x.astype(np.float64) - x_q.zp) * x_q.s, ((0, 0), (1, 1), (1, 1), (0, 0)))
        real = np.zeros((1, 5, 5, 8))
        for oy in range(5):
            for ox in range(5):
                patch = xr[0, 2 * oy : 2 * oy + 3, 2 * ox : 2 * ox + 3, :]
                real[0, oy, ox] = np.tensordot(wa, patch, axes=([1, 2, 3], [0, 1, 2])) + ba
        _close(out[0], _requantize(real, y_q, relu6=True))


def test_fully_connected_with_and_without_bias():
    rng = np.random.default_rng(11)
    x_q, y_q = QParams.per_tensor(0.03, 7), QParams.per_tensor(0.1, -2)
    w_q = QParams.per_tensor(0.004, 0)
    w = weights_tensor("w", rng, (6, 32), w_q)
    for bias in (bias_tensor("b", rng, x_q, w_q, channels=6), None):
        model = single_op_model(
            "FULLY_CONNECTED",
            inputs=[TensorSpec("x", (2, 32), np.int8, x_q), w, bias],
            outputs=[TensorSpec("y", (2, 6), np.int8, y_q)],
            version=4,
        )
        x = random_int8(rng, (2, 32))
        ref = run_reference(model, [[x]], keep_all_tensors=False)
        assert ref.refused is None and ref.tensors == []
        real = ((x.astype(np.float64) - x_q.zp) * x_q.s) @ (w.array().T * w_q.s)
        if bias is not None:
            real += bias.array() * bias.quant.s
        _close(ref.outputs[0][0], _requantize(real, y_q))


def _add_model(q_a, q_b, q_out, shape=(2, 5), **tensor_kw):
    return single_op_model(
        "ADD",
        inputs=[TensorSpec("a", shape, np.int8, q_a, **tensor_kw),
                TensorSpec("b", shape, np.int8, q_b, **tensor_kw)],
        outputs=[TensorSpec("y", shape, np.int8, q_out, **tensor_kw)],
        options={"fused_activation_function": "NONE"},
    )


def test_add_and_several_input_sets_in_one_run():
    rng = np.random.default_rng(12)
    q_a, q_b, q_out = QParams.per_tensor(0.1, 2), QParams.per_tensor(0.05, -7), QParams.per_tensor(0.2, 1)
    model = _add_model(q_a, q_b, q_out)
    sets = [[random_int8(rng, (2, 5)), random_int8(rng, (2, 5))] for _ in range(4)]
    together = run_reference(model, sets)
    for arrays, out in zip(sets, together.outputs):
        a, b = arrays
        real = (a.astype(np.float64) - q_a.zp) * q_a.s + (b.astype(np.float64) - q_b.zp) * q_b.s
        _close(out[0], _requantize(real, q_out))
    # One process for all sets computes what one process per set does.
    alone = run_reference(model, sets[2:3])
    np.testing.assert_array_equal(alone.outputs[0][0], together.outputs[2][0])


def test_dynamic_batch_is_resized():
    q = QParams.per_tensor(0.1, 0)
    model = _add_model(q, q, q, shape=(1, 4), shape_signature=(-1, 4))
    ones = np.ones((3, 4), np.int8)
    ref = run_reference(model, [[ones, ones], [ones[:1], ones[:1]]])
    assert [o[0].shape for o in ref.outputs] == [(3, 4), (1, 4)]
    assert np.all(ref.outputs[0][0] == 2)


def test_reshape_is_a_byte_copy():
    rng = np.random.default_rng(13)
    q = QParams.per_tensor(0.1, -4)
    model = single_op_model(
        "RESHAPE",
        inputs=[TensorSpec("x", (1, 4, 6), np.int8, q),
                TensorSpec("shape", (2,), np.int32, data=np.array([4, 6], np.int32))],
        outputs=[TensorSpec("y", (4, 6), np.int8, q)],
        options={"new_shape": np.array([4, 6], np.int32)},
    )
    x = random_int8(rng, (1, 4, 6))
    ref = run_reference(model, [[x]])
    np.testing.assert_array_equal(ref.outputs[0][0], x.reshape(4, 6))


def test_softmax():
    rng = np.random.default_rng(14)
    x_q, y_q = QParams.per_tensor(0.1, 3), QParams.per_tensor(1 / 256, -128)
    model = single_op_model(
        "SOFTMAX",
        inputs=[TensorSpec("x", (3, 10), np.int8, x_q)],
        outputs=[TensorSpec("y", (3, 10), np.int8, y_q)],
        options={"beta": 1.0},
    )
    x = random_int8(rng, (3, 10), -60, 60)
    ref = run_reference(model, [[x]])
    real = (x.astype(np.float64) - x_q.zp) * x_q.s
    p = np.exp(real - real.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    _close(ref.outputs[0][0], _requantize(p, y_q))


def test_stablehlo_composite_runs_its_decomposition():
    rng = np.random.default_rng(15)
    q_a, q_b, q_out = QParams.per_tensor(0.1, 2), QParams.per_tensor(0.07, -1), QParams.per_tensor(0.2, -5)
    mb = ModelBuilder()
    main, body = mb.subgraph("main"), mb.subgraph("add_decomposition")
    a, b = body.input("a", (2, 5), q=q_a), body.input("b", (2, 5), q=q_b)
    body.output(body.op("ADD", [a, b], TensorSpec("s", (2, 5), np.int8, q_out)))
    x, y = main.input("x", (2, 5), q=q_a), main.input("y", (2, 5), q=q_b)
    main.output(main.op("STABLEHLO_COMPOSITE", [x, y], TensorSpec("z", (2, 5), np.int8, q_out),
                        composite_options("test.add", body)))
    inputs = [random_int8(rng, (2, 5)), random_int8(rng, (2, 5))]
    ref = run_reference(mb.build(), [inputs])
    assert ref.refused is None
    assert ref.tensor_names == {0: "x", 1: "y", 2: "z"}
    plain = run_reference(_add_model(q_a, q_b, q_out), [inputs])
    np.testing.assert_array_equal(ref.outputs[0][0], plain.outputs[0][0])


def test_rewritten_fixture_model_computes_the_same():
    path = FIXTURES / "small_cnn.tflite"
    rewritten = write_model(read_model(path.read_bytes()))
    x = random_int8(np.random.default_rng(16), (1, 32, 32, 3))
    original = run_reference(path, [[x]])  # a path works as well as bytes
    again = run_reference(rewritten, [[x]])
    assert original.refused is None and again.refused is None
    np.testing.assert_array_equal(original.outputs[0][0], again.outputs[0][0])
    assert original.tensor_names == again.tensor_names
    for t, value in original.tensors[0].items():
        np.testing.assert_array_equal(again.tensors[0][t], value, err_msg=original.tensor_names[t])


def test_collapsed_softmax_model_is_refused_not_raised():
    x = np.zeros((1, 96, 96, 3), np.int8)
    ref = run_reference(FIXTURES / "mobilenetv2_035_96_collapsed.tflite", [[x]])
    assert ref.refused is not None and not ref.ok
    assert "\n" not in ref.refused
    assert ref.refused.startswith("LiteRT's reference kernels refused the model")
    assert "SIGABRT" in ref.refused
    assert ref.outputs == [] and ref.tensors == []


def test_a_batch_runs_the_models_after_one_that_aborts():
    """run_reference_batch: one child for every model; a model that makes LiteRT abort is
    refused and the models after it run in a new child."""
    q = QParams.per_tensor(0.1, 0)
    add = _add_model(q, q, q, shape=(1, 4))
    ones = np.ones((1, 4), np.int8)
    collapsed = FIXTURES / "mobilenetv2_035_96_collapsed.tflite"
    refs = litert.run_reference_batch([(add, [[ones, ones]]),
                                       (collapsed, [[np.zeros((1, 96, 96, 3), np.int8)]]),
                                       (add, [[ones, 2 * ones]])])  # fmt: skip
    assert [r.ok for r in refs] == [True, False, True]
    assert "SIGABRT" in refs[1].refused
    alone = run_reference(add, [[ones, ones]])
    np.testing.assert_array_equal(refs[0].outputs[0][0], alone.outputs[0][0])
    assert refs[2].outputs[0][0].tolist() == [[3, 3, 3, 3]]


def test_a_scalar_input_keeps_its_rank():
    q = QParams.per_tensor(0.1, 0)
    model = single_op_model(
        "ADD", [TensorSpec("a", (1, 4), np.int8, q), TensorSpec("b", (), np.int8, q)],
        [TensorSpec("y", (1, 4), np.int8, q)], {"fused_activation_function": "NONE"},
    )
    ref = run_reference(model, [[np.arange(4, dtype=np.int8).reshape(1, 4), np.array(2, np.int8)]])
    assert ref.ok, ref.refused
    assert ref.outputs[0][0].tolist() == [[2, 3, 4, 5]]


def test_prepare_error_is_refused_with_litert_message():
    rng = np.random.default_rng(17)
    x_q, w_q = QParams.per_tensor(0.05, 0), per_axis_qparams(rng, 8, axis=0)
    model = single_op_model(
        "CONV_2D",
        inputs=[TensorSpec("x", (1, 8, 8, 3), np.int8, x_q),
                weights_tensor("w", rng, (8, 3, 3, 4), w_q), bias_tensor("b", rng, x_q, w_q)],
        outputs=[TensorSpec("y", (1, 8, 8, 8), np.int8, QParams.per_tensor(0.1, 0))],
        options={"padding": "SAME", "stride_w": 1, "stride_h": 1},
    )
    ref = run_reference(model, [[np.zeros((1, 8, 8, 3), np.int8)]])
    assert ref.refused is not None and "\n" not in ref.refused
    assert "CONV_2D" in ref.refused and "failed to prepare" in ref.refused


@pytest.mark.parametrize(
    "inputs, message",
    [
        ([[np.zeros((2, 5), np.int8)]], r"input set 0 has 1 arrays, the model has 2 inputs"),
        ([[np.zeros((2, 5), np.int8)] * 2, [np.zeros((2, 4), np.int8)] * 2],
         r"input set 1, input 0 \('a'\): shape \(2, 4\), the model wants \(2, 5\)"),
        ([[np.zeros((2, 5), np.float32)] * 2],
         r"input set 0, input 0 \('a'\): dtype float32, the model wants int8"),
        ([np.zeros((2, 5), np.int8)] * 2, r"input_sets is a list of input sets"),
    ],
)
def test_bad_inputs_raise_clear_errors(inputs, message):
    q = QParams.per_tensor(0.1, 0)
    with pytest.raises(ValueError, match=message):
        run_reference(_add_model(q, q, q), inputs)


def test_missing_model_file():
    with pytest.raises(FileNotFoundError, match="no model file"):
        run_reference(FIXTURES / "nonexistent.tflite", [[]])


def test_timeout():
    q = QParams.per_tensor(0.1, 0)
    with pytest.raises(TimeoutError, match="did not finish within"):
        run_reference(_add_model(q, q, q), [[np.zeros((2, 5), np.int8)] * 2], timeout=0.01)


def test_missing_litert_says_to_install_the_test_extra(monkeypatch):
    monkeypatch.setattr(litert, "litert_available", lambda: False)
    with pytest.raises(LiteRTUnavailable, match=r"install the `test` extra"):
        run_reference(b"", [[]])


def test_the_runtime_package_never_imports_litert():
    import subprocess
    import sys

    code = (
        "import sys; import qaccel.backends.litert.oracle, qaccel.frontend.builder; "
        "assert 'ai_edge_litert' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
