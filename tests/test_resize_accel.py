"""RESIZE_NEAREST_NEIGHBOR and RESIZE_BILINEAR inside accelerator functions: the packed kernels
the run plan and the interpreter run (`kernels/packed.py`) equal the CPU reference kernels on
every coordinate mode; models with resizes between convolutions compile into one accelerator
function and run bit-exact with BUILTIN_REF through the artifact (the C program runner and the
Python simulator with the run plan's host steps) and through both LiteRT models, on both
bundled configurations; the program runner refuses a corrupt bilinear step when it opens the
program. (U-Net itself: test_corpus.py at every stage, test_litert_splice.py spliced whole.)"""

from __future__ import annotations

import shutil
import struct
from pathlib import Path

import numpy as np
import pytest

from qaccel.kernels import packed
from qaccel.kernels.shape import nearest_indices, resize_bilinear_integer

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
FLAGS = [(False, False), (True, False), (False, True)]
"""(align_corners, half_pixel_centers): both true is refused by LiteRT's bilinear kernel."""


def _packed(x: np.ndarray, block: int, pad: int) -> np.ndarray:
    n, h, w, c = x.shape
    lanes = -(-c // block) * block
    full = np.full((n, h, w, lanes), pad, x.dtype)
    full[..., :c] = x
    return packed.from_nhwc(full, block)


@pytest.mark.parametrize(("align_corners", "half_pixel"), FLAGS + [(True, True)])
def test_packed_resizes_equal_the_reference_kernels(align_corners, half_pixel):
    rng = np.random.default_rng(int(align_corners) * 2 + int(half_pixel))
    for _ in range(40):
        n, h, w, c = (int(v) for v in rng.integers(1, [3, 7, 7, 21]))
        oh, ow = (int(v) for v in rng.integers(1, 13, 2))
        x = rng.integers(-128, 128, (n, h, w, c)).astype(np.int8)
        px = _packed(x, 4, -7)
        out = [n, px.shape[1], oh, ow, 1, 4]
        ys = nearest_indices(h, oh, align_corners, half_pixel)
        xs = nearest_indices(w, ow, align_corners, half_pixel)
        got = packed.to_nhwc(packed.resize_nearest(px, out, align_corners, half_pixel))
        assert np.array_equal(got[..., :c], x[:, ys][:, :, xs])
        assert np.all(got[..., c:] == -7)  # padding lanes move with their pixels
        if align_corners and half_pixel:
            continue
        want = resize_bilinear_integer(x, oh, ow, align_corners, half_pixel).astype(np.int8)
        got = packed.to_nhwc(packed.resize_bilinear(px, out, align_corners, half_pixel))
        assert np.array_equal(got[..., :c], want), (n, h, w, c, oh, ow)
        assert np.all(got[..., c:] == -7)  # weights sum to 2^20: a constant stays


def resize_model(flags_bilinear=(False, True), flags_nearest=(False, True), size=(8, 8),
                 up=(16, 16), up2=(32, 32), channels=11, seed=0) -> bytes:
    """conv -> RESIZE_BILINEAR -> conv -> RESIZE_NEAREST_NEIGHBOR -> conv, int8 (`channels`
    of each resize's input: not a whole number of 16-lane blocks by default)."""
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

    def resize(op, x, hw, c, flags, name):
        s = g.const(f"{name}_size", np.array(hw, np.int32))
        return g.op(op, [x, s], TensorSpec(name, (1, *hw, c), np.int8, q),
                    {"align_corners": flags[0], "half_pixel_centers": flags[1]})  # fmt: skip

    x = g.input("x", (1, *size, 16), q=q)
    a = conv2d(x, 16, channels, size, "a")
    b = resize("RESIZE_BILINEAR", a, up, channels, flags_bilinear, "bilinear")
    c = conv2d(b, channels, 16, up, "c")
    d = resize("RESIZE_NEAREST_NEIGHBOR", c, up2, 16, flags_nearest, "nearest")
    g.output(conv2d(d, 16, 8, up2, "y", out_q=q_out))
    return mb.build()


def _run(args: list[str], capsys) -> str:
    from qaccel.tools.qaccel_run import run

    code = run(args)
    out = capsys.readouterr().out
    assert code == 0, out
    return out


CASES = {
    "half-pixel-2x": {},
    "align-corners": {"flags_bilinear": (True, False), "flags_nearest": (True, False),
                      "size": (5, 7), "up": (9, 13), "up2": (17, 25)},
    "asymmetric-down": {"flags_bilinear": (False, False), "flags_nearest": (False, False),
                        "size": (9, 7), "up": (4, 3), "up2": (6, 5), "channels": 20},
    "nearest-both-flags": {"flags_nearest": (True, True), "size": (4, 4), "up": (7, 6),
                           "up2": (12, 11)},
}  # fmt: skip
WAYS = {"half-pixel-2x": ("python", "dispatch", "custom-op"), "align-corners": ("dispatch",),
        "asymmetric-down": ("python", "custom-op"), "nearest-both-flags": ("dispatch",)}
"""Beyond the artifact's C program runner, which every case runs: the Python simulator with
the run plan's host steps, and the LiteRT models (the same program runner inside LiteRT)."""


def _compile(model: Path, art: Path, capsys, *extra: str) -> str:
    from qaccel.tools.qaccel_compile import run as compile_run

    assert compile_run([str(model), "-o", str(art), *extra]) == 0
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "into 1 partition" in out, out
    assert "host fallback inside vta_fn_0: accel.resize_bilinear" in out
    assert "host fallback inside vta_fn_0: accel.resize_nearest_neighbor" in out
    return out


def _bit_exact(art: Path, ways, tmp_path: Path, capsys, seed: int) -> None:
    common = ["--outputs-dir", str(tmp_path / "o"), "--compare-litert", "--random-inputs",
              str(seed)]  # fmt: skip
    assert "(bit-exact)" in _run([str(art), *common], capsys)
    if "python" in ways:
        assert "(bit-exact)" in _run([str(art), "--simulator", "python", *common], capsys)
    ways = [w for w in ways if w != "python"]
    if not ways or shutil.which("cc") is None:
        return
    pytest.importorskip("ai_edge_litert")
    for path in ways:
        got = _run([str(art), "--runtime", "litert", "--litert-path", path, *common], capsys)
        assert "(bit-exact)" in got, got


@pytest.mark.parametrize("case", list(CASES))
def test_resizes_run_inside_one_function_bit_exact(case, tmp_path, capsys):
    """One accelerator function; the artifact's C program runner gives BUILTIN_REF's outputs,
    as do the Python simulator with the run plan's numpy host steps and the LiteRT models
    (`WAYS`)."""
    model = tmp_path / f"{case}.tflite"
    model.write_bytes(resize_model(**CASES[case]))
    _compile(model, tmp_path / "art", capsys)
    _bit_exact(tmp_path / "art", WAYS[case], tmp_path, capsys, seed=4)


@pytest.mark.parametrize("model", ["unet", "resize"])
def test_store_requant_configuration_runs_the_resizes_too(model, tmp_path, capsys):
    """vta-store-requant: U-Net (one partition) and a resize model through the artifact and
    both LiteRT models, against BUILTIN_REF."""
    if model == "unet":
        path = CORPUS / "unet.tflite"
    else:
        path = tmp_path / "resize.tflite"
        path.write_bytes(resize_model(**CASES["align-corners"]))
    _compile(path, tmp_path / "art", capsys, "--config", "vta-store-requant")
    _bit_exact(tmp_path / "art", ("dispatch", "custom-op"), tmp_path, capsys, seed=5)


def test_resizes_left_on_the_cpu_export_as_tflite_resizes(tmp_path, capsys):
    """With every host step on the CPU (`host-steps=cpu`), the q resizes between partitions
    go back to TFLite's RESIZE_BILINEAR / RESIZE_NEAREST_NEIGHBOR in the LiteRT models, which
    stay bit-exact."""
    from qaccel.backends.litert import aot
    from qaccel.frontend.tflite_writer import read_model
    from qaccel.tools.qaccel_compile import run as compile_run

    model = tmp_path / "resize.tflite"
    model.write_bytes(resize_model(**CASES["asymmetric-down"]))
    pipeline = ("attach-target,legalize-tfl-to-q,annotate-target,"
                "partition-graph{host-steps=cpu},insert-pack-unpack,lower-q-to-accel,"
                "form-vta-layers,schedule-vta")  # fmt: skip
    art = tmp_path / "art"
    assert compile_run([str(model), "-o", str(art), "-p", pipeline, "--quiet"]) == 0
    capsys.readouterr()
    ops = [o.op for o in read_model((art / aot.AOT_FILE).read_bytes()).subgraphs[0].operators]
    assert ops == ["CUSTOM", "RESIZE_BILINEAR", "CUSTOM", "RESIZE_NEAREST_NEIGHBOR", "CUSTOM"]
    _bit_exact(art, ("python", "dispatch"), tmp_path, capsys, seed=6)


# --------------------------------------------------------------------------------------------
# The BILINEAR step in the program runner


KIND_BILINEAR, STEP = 14, 96


@pytest.fixture(scope="module")
def bilinear_program():
    """The program of a resize model's one function and a packed input for it."""
    if shutil.which("cc") is None:
        pytest.skip("no C compiler")
    from qaccel import api
    from qaccel.backends.vta.program.writer import function_program

    model = resize_model(**CASES["align-corners"])
    compiled = api.compile(model)
    return function_program(compiled, "vta_fn_0"), compiled


def _bilinear_step(blob: bytes) -> int:
    n, at = struct.unpack_from("<I", blob, 36)[0], struct.unpack_from("<Q", blob, 168)[0]
    steps = [at + STEP * k for k in range(n)]
    return next(s for s in steps if struct.unpack_from("<I", blob, s)[0] == KIND_BILINEAR)


def _refused(blob: bytes, at: int, fmt: str, value) -> str:
    from qaccel.backends.vta.program import writer
    from qaccel.backends.vta.program_runner import Program, ProgramError

    b = bytearray(blob)
    struct.pack_into(fmt, b, at, value)
    with pytest.raises(ProgramError) as e:
        Program(writer.seal(bytes(b)))
    assert "\n" not in str(e.value)
    return str(e.value)


def test_the_program_runner_agrees_with_the_packed_kernels(bilinear_program):
    """The whole function in C (GATHER and BILINEAR steps included) against the interpreter
    on the function's packed IR (the packed kernels)."""
    from qaccel.backends.vta.program_runner import Program
    from qaccel.interpreter.interpreter import run_function

    blob, compiled = bilinear_program
    program = Program(blob)
    state = program.state()
    rng = np.random.default_rng(5)
    for _ in range(3):
        (shape, dtype), = program.inputs
        x = rng.integers(-128, 128, shape).astype(dtype)
        got = state.run([x])
        want = run_function(compiled.module, [x], entry="vta_fn_0")
        assert [a.tobytes() for a in got] == [np.asarray(b).tobytes() for b in want]


@pytest.mark.parametrize(("offset", "fmt", "value", "message"), [
    (16, "<q", 0, "is malformed"),  # no images
    (24, "<q", 1 << 20, "is malformed"),  # an input height the value does not have
    (88, "<Q", 8, "is malformed"),  # tables shorter than 3 (OH + OW) values
    ("row", "<q", 99, "reads outside its value"),  # an input row past the last
    ("weight", "<q", 1 << 40, "reads outside its value"),  # a weight out of bounds
])  # fmt: skip
def test_a_corrupt_bilinear_step_is_refused_when_opened(bilinear_program, offset, fmt, value,
                                                       message):  # fmt: skip
    blob, _ = bilinear_program
    step = _bilinear_step(blob)
    if offset in ("row", "weight"):
        oh = struct.unpack_from("<q", blob, step + 48)[0]
        table = struct.unpack_from("<Q", blob, step + 80)[0]
        at = table + (0 if offset == "row" else 16 * oh)
    else:
        at = step + offset
    err = _refused(blob, at, fmt, value)
    assert f"a host bilinear resize step {message}" in err, err
