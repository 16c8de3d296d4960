"""TRANSPOSE_CONV whose taps overlap (kernel larger than the stride) inside the accelerator
function: its taps a 1x1 convolution on the GEMM core storing int32 accumulators, the taps
summed by the program's GATHER_SUM step (`accel.col2im`), then the bias and requantization as
host lane steps. Models with such a layer between convolutions compile into one accelerator
function with all their MACs on it and run bit-exact with BUILTIN_REF through the artifact
(the C program runner; the Python simulator with the run plan's host steps) and both LiteRT
models, on both bundled configurations; the packed tap sum equals the q op's; the program
runner refuses a corrupt GATHER_SUM step when it opens the program."""

from __future__ import annotations

import shutil
import struct

import numpy as np
import pytest
from test_resize_accel import _bit_exact

from qaccel.kernels import packed


def transpose_conv_model(kernel=3, stride=2, padding="SAME", size=(8, 8), out=(16, 16),
                         channels=11, bias=True, activation="RELU", seed=0) -> bytes:
    """conv -> TRANSPOSE_CONV (`kernel` x `kernel` at `stride`, `channels` out) -> conv."""
    from qaccel.frontend.builder import (ModelBuilder, QParams, TensorSpec, bias_tensor,
                                         per_axis_qparams, random_weights)  # fmt: skip

    rng = np.random.default_rng(seed)
    q, q_out = QParams.per_tensor(0.05, -3), QParams.per_tensor(0.1, 5)
    mb = ModelBuilder()
    g = mb.subgraph("main")

    def conv2d(x, cin, cout, hw, name, out_q=q):
        wq = per_axis_qparams(rng, channels=cout, axis=0)
        w = g.const(f"{name}_w", random_weights(rng, (cout, 1, 1, cin)), wq)
        b = g.add_tensor(bias_tensor(f"{name}_b", rng, q, wq))
        return g.op("CONV_2D", [x, w, b], TensorSpec(name, (1, *hw, cout), np.int8, out_q),
                    {"padding": "VALID", "stride_w": 1, "stride_h": 1,
                     "fused_activation_function": "NONE"})  # fmt: skip

    x = g.input("x", (1, *size, 16), q=q)
    wq = per_axis_qparams(rng, channels=channels, axis=0)
    inputs = [g.const("up_shape", np.array([1, *out, channels], np.int32)),
              g.const("up_w", random_weights(rng, (channels, kernel, kernel, 16)), wq),
              conv2d(x, 16, 16, size, "a")]  # fmt: skip
    if bias:
        inputs.append(g.add_tensor(bias_tensor("up_b", rng, q, wq)))
    up = g.op("TRANSPOSE_CONV", inputs, TensorSpec("up", (1, *out, channels), np.int8, q),
              {"padding": padding, "stride_w": stride, "stride_h": stride,
               "fused_activation_function": activation})  # fmt: skip
    g.output(conv2d(up, channels, 8, out, "y", out_q=q_out))
    return mb.build()


CASES = {
    "3x3-s2-same": ({}, ("python", "dispatch", "custom-op")),
    "4x4-s2-same-no-bias": ({"kernel": 4, "bias": False, "activation": "NONE",
                             "channels": 20}, ("dispatch",)),
    "3x3-s2-valid": ({"padding": "VALID", "out": (17, 17)}, ("custom-op",)),
    "5x5-s3-same": ({"kernel": 5, "stride": 3, "size": (4, 5), "out": (12, 15)}, ("dispatch",)),
}  # fmt: skip


def _compiled(model: bytes, tmp_path, capsys, *extra: str):
    from qaccel.tools.qaccel_compile import run as compile_run

    path = tmp_path / "model.tflite"
    path.write_bytes(model)
    art = tmp_path / "art"
    assert compile_run([str(path), "-o", str(art), *extra]) == 0
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "into 1 partition" in out, out
    assert "MACs on the accelerator: 100.00%" in out, out
    assert "host fallback inside vta_fn_0: accel.col2im" in out, out
    assert "stays on the CPU" not in out, out
    return art


@pytest.mark.parametrize("case", list(CASES))
def test_overlapping_transpose_conv_runs_inside_one_function_bit_exact(case, tmp_path, capsys):
    options, ways = CASES[case]
    art = _compiled(transpose_conv_model(**options), tmp_path, capsys)
    _bit_exact(art, ways, tmp_path, capsys, seed=8)


def test_store_requant_configuration_runs_it_too(tmp_path, capsys):
    art = _compiled(transpose_conv_model(kernel=4, channels=20), tmp_path, capsys, "--config",
                    "vta-store-requant")  # fmt: skip
    _bit_exact(art, ("dispatch", "custom-op"), tmp_path, capsys, seed=9)


def test_the_packed_tap_sum_equals_the_q_op():
    """`packed.col2im` (the run plan's and the program's GATHER_SUM) against the interpreter's
    `q.col2im` on NHWC accumulators, int32 wrap-around included."""
    from xdsl.dialects.builtin import TensorType, i32

    from qaccel.dialects import q
    from qaccel.interpreter.q_semantics import QFunctions

    rng = np.random.default_rng(3)
    for kernel, stride, pad, (h, w), o in [((3, 3), (2, 2), (1, 1), (3, 4), 5),
                                           ((4, 2), (2, 1), (1, 0), (2, 3), 17),
                                           ((5, 5), (3, 3), (2, 1), (2, 2), 3)]:  # fmt: skip
        oh = (h - 1) * stride[0] + kernel[0] - 2 * pad[0]
        ow = (w - 1) * stride[1] + kernel[1] - 2 * pad[1]
        x = rng.integers(-(2**31), 2**31, (1, h, w, kernel[0] * kernel[1] * o)).astype(np.int32)
        op = q.Col2ImOp.create(
            operands=[], result_types=[TensorType(i32, [1, oh, ow, o])],
            properties={"kernel": q.i64_array(kernel), "strides": q.i64_array(stride),
                        "padding": q.i64_array(pad)})  # fmt: skip
        want = np.asarray(QFunctions().run_col2im(None, op, (x,))[0]).reshape(1, oh, ow, o)
        block = 4
        cbi, cbo = -(-x.shape[3] // block), -(-o // block)
        full = np.zeros((1, h, w, cbi * block), np.int32)
        full[..., : x.shape[3]] = x
        got = packed.col2im(packed.from_nhwc(full, block), [1, cbo, oh, ow, 1, block], kernel,
                            stride, pad, o)  # fmt: skip
        got = packed.to_nhwc(got)
        assert np.array_equal(got[..., :o], want)
        assert not got[..., o:].any()  # padding lanes 0


KIND_GATHER_SUM, STEP = 15, 96


@pytest.mark.parametrize(("offset", "value", "message"), [
    (16, 0, "is malformed"),  # no taps
    (16, 1 << 20, "is malformed"),  # more taps than the index holds
    ("index", 1 << 40, "reads outside its value"),
])  # fmt: skip
def test_a_corrupt_gather_sum_step_is_refused_when_opened(offset, value, message):
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    from qaccel import api
    from qaccel.backends.vta.program import writer
    from qaccel.backends.vta.program_runner import Program, ProgramError

    blob = writer.function_program(api.compile(transpose_conv_model(size=(4, 4), out=(8, 8))),
                                   "vta_fn_0")  # fmt: skip
    n, at = struct.unpack_from("<I", blob, 36)[0], struct.unpack_from("<Q", blob, 168)[0]
    step = next(at + STEP * k for k in range(n)
                if struct.unpack_from("<I", blob, at + STEP * k)[0] == KIND_GATHER_SUM)  # fmt: skip
    where = struct.unpack_from("<Q", blob, step + 80)[0] if offset == "index" else step + offset
    b = bytearray(blob)
    struct.pack_into("<q", b, where, value)
    with pytest.raises(ProgramError) as e:
        Program(writer.seal(bytes(b)))
    assert f"a host gather-sum step {message}" in str(e.value), str(e.value)
    assert "\n" not in str(e.value)
