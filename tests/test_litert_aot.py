"""The LiteRT deployment paths (backends/litert/aot.py, dispatch.py, runtime.py, kernel/): the
AOT models qaccel-compile writes, `model.qaccel.dispatch.tflite` (DISPATCH_OPs run by LiteRT
through our dispatch library, libLiteRtDispatch_Qaccel) and `model.qaccel.tflite` (QACCEL_VTA
custom ops run through our kernel, libqaccel_litert), bit-exact with LiteRT's BUILTIN_REF on
the original model; their errors (missing LiteRT symbol or runtime-context member,
unsupported program version or hardware configuration, corrupt programs, bad bytecode places)
as one line; interop (re-import, LiteRT's analyzer, the plain Interpreter's refusal); and C
host programs running them without Python."""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_MODELS, fixture_models

pytest.importorskip("ai_edge_litert")
CC = shutil.which("cc") or shutil.which("gcc")
pytestmark = pytest.mark.skipif(CC is None, reason="no C compiler (the kernel is built on use)")

from qaccel.backends.litert import aot  # noqa: E402
from qaccel.backends.vta.program import writer  # noqa: E402
from qaccel.backends.litert.runtime import (  # noqa: E402
    RUNNER_API,
    LiteRtError,
    kernel_library,
    litert_library,
    load,
    run_litert,
)
from qaccel.backends.litert.dispatch import dispatch_library_dir, run_dispatch  # noqa: E402
from qaccel.frontend.tflite_writer import read_model  # noqa: E402

HOST = Path(__file__).parent / "litert" / "host.c"
DISPATCH_HOST = Path(__file__).parent / "litert" / "dispatch_host.c"
# --litert-path: the flavour of the AOT model it runs and how qaccel-run names its ops
LITERT_PATHS = {"dispatch": (aot.DISPATCH_FILE, "DISPATCH_OP(s)"),
                "custom-op": (aot.AOT_FILE, "QACCEL_VTA op(s)")}  # fmt: skip


def _compile(model: str, out: Path, *extra: str) -> Path:
    from qaccel.tools.qaccel_compile import run

    assert run([str(FIXTURE_MODELS / f"{model}.tflite"), "-o", str(out), "--quiet", *extra]) == 0
    return out


@pytest.fixture(scope="module")
def small_cnn(tmp_path_factory) -> Path:
    return _compile("small_cnn", tmp_path_factory.mktemp("aot") / "small_cnn")


def _program_place(model: Path, k: int = 0) -> tuple[int, int]:
    """File offset and size of the k-th external buffer (a program)."""
    import tflite

    m = tflite.Model.GetRootAs(model.read_bytes(), 0)
    places = [(m.Buffers(i).Offset(), m.Buffers(i).Size()) for i in range(m.BuffersLength())
              if m.Buffers(i).Offset() > 1]  # fmt: skip
    return places[k]


def _original(model: str):
    """Subgraph 0 of the fixture model `model` (the original the LiteRT models splice)."""
    return read_model((FIXTURE_MODELS / f"{model}.tflite").read_bytes()).subgraphs[0]


def _input(model: Path, seed: int = 0) -> list[np.ndarray]:
    sg = read_model(model.read_bytes()).subgraphs[0]
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, sg.tensors[i].shape).astype(np.int8) for i in sg.inputs]


# --------------------------------------------------------------------------------------------
# The AOT model


def test_aot_model_replaces_each_function_by_one_custom_op(small_cnn):
    data = (small_cnn / aot.AOT_FILE).read_bytes()
    spec = read_model(data)
    sg = spec.subgraphs[0]
    ops = [(o.op, o.custom_code) for o in sg.operators]
    assert ops == [("CUSTOM", "QACCEL_VTA"), ("RESHAPE", None), ("CUSTOM", "QACCEL_VTA"),
                   ("SOFTMAX", None)]  # fmt: skip
    for op in sg.operators:
        if op.op != "CUSTOM":
            continue
        program = sg.tensors[op.inputs[-1]]
        assert program.external and np.dtype(program.dtype) == np.uint8
        blob = bytes(program.data_bytes())
        assert blob[:8] == writer.PROGRAM_MAGIC and struct.unpack_from("<I", blob, 8)[0] == 2
        options = op.custom_options
        assert options[:4] == aot.CUSTOM_MAGIC
        assert struct.unpack_from("<III", options, 4) == (1, len(blob), len(op.outputs))
    for k in range(2):
        offset, size = _program_place(small_cnn / aot.AOT_FILE, k)
        assert offset % 64 == 0 and offset + size <= len(data)
    # the original model's tensors, each function's program a tensor named after it
    assert [o["program"] for o in aot.custom_ops(data)] == [
        f"{aot.PROGRAM_PREFIX}vta_fn_0", f"{aot.PROGRAM_PREFIX}vta_fn_1"]
    original = read_model((FIXTURE_MODELS / "small_cnn.tflite").read_bytes()).subgraphs[0]
    assert [o["name"] for o in aot.custom_ops(data)] == [
        original.tensors[op.outputs[0]].name for op in sg.operators if op.op == "CUSTOM"]


def test_aot_model_is_byte_identical_on_recompilation(small_cnn, tmp_path):
    again = _compile("small_cnn", tmp_path / "again")
    assert (again / aot.AOT_FILE).read_bytes() == (small_cnn / aot.AOT_FILE).read_bytes()
    assert (again / aot.DISPATCH_FILE).read_bytes() == (small_cnn / aot.DISPATCH_FILE).read_bytes()
    from qaccel.backends.vta.artifact import load_artifact

    # the host IR's export (kept for MLIR input: host.mlir keeps no tensor names) has the
    # same graph as the spliced original and the same programs
    a = read_model(aot.export_aot(load_artifact(small_cnn))).subgraphs[0]
    b = read_model((small_cnn / aot.AOT_FILE).read_bytes()).subgraphs[0]
    assert [(o.op, o.custom_code) for o in a.operators] == [(o.op, o.custom_code)
                                                           for o in b.operators]  # fmt: skip
    programs = [[bytes(sg.tensors[o.inputs[-1]].data_bytes()) for o in sg.operators
                 if o.custom_code == aot.CUSTOM_CODE] for sg in (a, b)]  # fmt: skip
    assert programs[0] == programs[1]


def test_dispatch_model_is_in_litert_dispatch_op_format(small_cnn):
    data = (small_cnn / aot.DISPATCH_FILE).read_bytes()
    spec = read_model(data)
    sg = spec.subgraphs[0]
    assert [(o.op, o.custom_code) for o in sg.operators] == [
        ("CUSTOM", "DISPATCH_OP"), ("RESHAPE", None), ("CUSTOM", "DISPATCH_OP"), ("SOFTMAX", None)]
    # the same graph as the custom-op flavour, without the program tensors
    custom = read_model((small_cnn / aot.AOT_FILE).read_bytes()).subgraphs[0]
    assert len(sg.tensors) == len(custom.tensors) - 2
    end = 0
    pairs = [(a, b) for a, b in zip(sg.operators, custom.operators) if a.op == "CUSTOM"]
    for (op, their), name in zip(pairs, ["vta_fn_0", "vta_fn_1"], strict=True):
        program = bytes(custom.tensors[their.inputs[-1]].data_bytes())
        names = [custom.tensors[i].name for i in [*their.inputs[:-1], *their.outputs]]
        assert [sg.tensors[i].name for i in [*op.inputs, *op.outputs]] == names
        options = aot.read_dispatch_options(op.custom_options)
        assert options["name"] == name and options["bytecode_size"] == len(program)
        at = options["bytecode_offset"]
        assert at % 64 == 0 and at >= end and data[at : at + len(program)] == program
        end = at + len(program)
    assert end == len(data)
    # LiteRT updates the places in place: its integers are 64 bits whatever their values
    assert len(aot.dispatch_options("vta_fn_0", 0, 0)) == len(
        aot.dispatch_options("vta_fn_0", 1 << 40, 1 << 40))  # fmt: skip
    stamp = spec.metadata["LiteRtStamp"]  # compiled: LiteRT applies no compiler plugin
    assert len(stamp) == 250 and stamp[:7] == b"Qaccel\0" and stamp[125:129] == b"VTA\0"
    assert [o["program"] for o in aot.custom_ops(data)] == ["vta_fn_0", "vta_fn_1"]


def test_unsupported_host_op_leaves_the_partition_on_the_cpu_and_says_why(tmp_path, capsys,
                                                                          monkeypatch):  # fmt: skip
    # every host op of the fixtures is supported: pretend the element-wise ones are not
    from qaccel.tools.qaccel_compile import run

    monkeypatch.setattr(writer, "_elementwise_step", lambda *args: None)
    out = tmp_path / "pcs"
    assert run([str(FIXTURE_MODELS / "pad_concat_slice.tflite"), "-o", str(out)]) == 0
    assert ("@vta_fn_1 stays on the CPU in the LiteRT models: host op accel.widen (#2) is not "
            "supported by the program runner") in capsys.readouterr().out  # fmt: skip
    names = [p["name"] for p in json.loads((out / "partitions.json").read_text())["partitions"]]
    assert "vta_fn_1" not in names
    for model in (aot.AOT_FILE, aot.DISPATCH_FILE):
        assert [o["program"] for o in aot.custom_ops((out / model).read_bytes())
                if o["program"].endswith("vta_fn_1")] == []  # fmt: skip


def test_external_buffers_round_trip():
    from qaccel.frontend.tflite_writer import (ModelSpec, OperatorSpec, SubgraphSpec, TensorSpec,
                                               write_model)  # fmt: skip

    blob = bytes(range(200))
    spec = ModelSpec([SubgraphSpec("main", [
        TensorSpec("x", (1, 4), np.int8), TensorSpec("p", (200,), np.uint8, data=blob,
                                                     external=True),
        TensorSpec("c", (4,), np.int8, data=np.arange(4, dtype=np.int8)),
        TensorSpec("y", (1, 4), np.int8)], [0], [3],
        [OperatorSpec("CUSTOM", [0, 1, 2], [3], custom_code="X", custom_options=b"o")])])
    data = write_model(spec)
    back = read_model(data)
    assert back == spec
    at = data.index(blob)
    assert at % 64 == 0 and at + len(blob) == len(data)


def test_external_offsets_set_in_place_are_the_second_passes_bytes(monkeypatch):
    """The first pass's placeholder offsets are set in place (one flatbuffer pass saved) when
    found once; otherwise the flatbuffer is written again: the same bytes either way."""
    from qaccel.frontend import tflite_writer as tw

    spec = tw.ModelSpec([tw.SubgraphSpec("main", [
        tw.TensorSpec("x", (1, 4), np.int8),
        tw.TensorSpec("p", (300,), np.uint8, data=bytes(range(100)) * 3, external=True),
        tw.TensorSpec("q", (70,), np.uint8, data=bytes(70), external=True),
        tw.TensorSpec("c", (8,), np.uint8, data=np.arange(8, dtype=np.uint8)),
        tw.TensorSpec("y", (1, 4), np.int8)], [0], [4],
        [tw.OperatorSpec("CUSTOM", [0, 1, 2, 3], [4], custom_code="X", custom_options=b"o")])])
    passes = []
    real = tw.write_flatbuffer
    monkeypatch.setattr(tw, "write_flatbuffer", lambda *a: passes.append(1) or real(*a))
    patched = tw.write_model(spec)
    assert len(passes) == 1
    # a placeholder whose bytes the constant `c` holds too: found twice, a second pass
    monkeypatch.setattr(tw, "OFFSET_PLACEHOLDER", int.from_bytes(bytes(range(8)), "little"))
    assert tw.write_model(spec) == patched and len(passes) == 3
    assert read_model(patched) == spec


def test_a_program_sealed_from_its_parts_is_the_sealed_whole():
    head = bytes(range(256)) * 2  # holds the checksum field
    parts = [os.urandom(1000), b"", bytes(77)]
    whole = head + b"".join(parts)
    assert writer._sealed(head, parts) == writer.seal(whole) != whole


# --------------------------------------------------------------------------------------------
# Run by LiteRT


# Every fixture but the one BUILTIN_REF itself refuses (tests/fixtures/models/README.md).
RUNNABLE = sorted(p.stem for p in fixture_models() if p.stem != "mobilenetv2_035_96_collapsed")


@pytest.mark.parametrize("model", RUNNABLE)
def test_litert_runs_the_aot_model_bit_exact_with_builtin_ref(model, tmp_path, capsys):
    from qaccel.tools.qaccel_run import run

    art = _compile(model, tmp_path / model)
    for path, (model_file, ops) in LITERT_PATHS.items():
        extra = [] if path == "dispatch" else ["--litert-path", path]  # dispatch: the default
        code = run([str(art), "--runtime", "litert", "--outputs-dir", str(tmp_path / "o"),
                    "--compare-litert", "--random-inputs", "3", *extra])  # fmt: skip
        out = capsys.readouterr().out
        assert code == 0, out
        assert f"{model_file} with LiteRT" in out and ops in out and "(bit-exact)" in out


def _built_model(kind: str) -> bytes:
    """Small models whose accelerator functions need the kernel's host steps: "cpu-pad" (a
    channel PAD left on the CPU: exported as TFLite PAD), "host-pad" (a spatial PAD after a
    conv: accel.pad inside the function), "host-concat" (accel.concat inside the function),
    "host-lut" (a LOGISTIC between two convs: accel.lut inside the function),
    "host-concat-lanes" (24 + 11 channels: accel.concat_lanes inside the function),
    "host-pool" (a 3x3 SAME average pool at stride 1 and a padded 2x2 max pool between
    convolutions: accel.host_pool2d inside the function), "host-crop-flatten" (Cropping2D
    before a convolution, a reshape of its pixels to one axis: accel.crop and accel.reshape),
    "host-transpose-conv" (a 2x2 TRANSPOSE_CONV at stride 2 of 11 channels between
    convolutions: its taps a convolution, accel.depth_to_space inside the function)."""
    from qaccel.frontend.builder import (ModelBuilder, QParams, TensorSpec, bias_tensor,
                                         per_axis_qparams, random_weights)  # fmt: skip

    rng = np.random.default_rng(0)
    q, q_out = QParams.per_tensor(0.05, -3), QParams.per_tensor(0.1, 5)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    conv = {"padding": "VALID", "stride_w": 1, "stride_h": 1, "fused_activation_function": "RELU"}

    def conv2d(x, cin, name, k=1, out_q=q, cout=16):
        wq = per_axis_qparams(rng, channels=cout, axis=0)
        w = g.const(f"{name}_w", random_weights(rng, (cout, k, k, cin)), wq)
        b = g.add_tensor(bias_tensor(f"{name}_b", rng, q, wq))
        return g.op("CONV_2D", [x, w, b], TensorSpec(name, (1, 8, 8, cout), np.int8, out_q),
                    conv)  # fmt: skip

    def pad(x, widths, shape, name, value=None):
        pads = g.const(f"{name}_pads", np.array(widths, np.int32))
        if value is None:
            return g.op("PAD", [x, pads], TensorSpec(name, shape, np.int8, q))
        c = g.const(f"{name}_value", np.array([value], np.int8), q)
        return g.op("PADV2", [x, pads, c], TensorSpec(name, shape, np.int8, q))

    if kind == "cpu-padv2":
        x = g.input("x", (1, 8, 8, 8), q=q)
        g.output(conv2d(pad(x, [[0, 0], [0, 0], [0, 0], [0, 8]], (1, 8, 8, 16), "padded", 17),
                        16, "y", out_q=q_out))  # fmt: skip
    elif kind == "cpu-pad":
        x = g.input("x", (1, 8, 8, 8), q=q)
        g.output(conv2d(pad(x, [[0, 0], [0, 0], [0, 0], [0, 8]], (1, 8, 8, 16), "padded"), 16,
                        "y", out_q=q_out))  # fmt: skip
    elif kind == "host-pad":
        x = g.input("x", (1, 8, 8, 16), q=q)
        g.output(pad(conv2d(x, 16, "c"), [[0, 0], [1, 2], [2, 1], [0, 0]], (1, 11, 11, 16), "y"))
    elif kind == "host-lut":
        x = g.input("x", (1, 8, 8, 16), q=q)
        sig = g.op("LOGISTIC", [conv2d(x, 16, "c")],
                   TensorSpec("sig", (1, 8, 8, 16), np.int8, QParams.per_tensor(1 / 256, -128)))
        g.output(conv2d(sig, 16, "y", out_q=q_out))
    elif kind == "host-pool":
        def pool(op, x, k, s, shape, name):
            return g.op(op, [x], TensorSpec(name, shape, np.int8, q),
                        {"padding": "SAME", "stride_w": s, "stride_h": s, "filter_width": k,
                         "filter_height": k, "fused_activation_function": "NONE"})  # fmt: skip

        x = g.input("x", (1, 8, 8, 16), q=q)
        a = pool("AVERAGE_POOL_2D", conv2d(x, 16, "a"), 3, 1, (1, 8, 8, 16), "avg")
        m = pool("MAX_POOL_2D", conv2d(a, 16, "b"), 2, 3, (1, 3, 3, 16), "max")
        g.output(g.op("CONV_2D", [m, g.const("y_w", random_weights(rng, (16, 1, 1, 16)),
                                             per_axis_qparams(rng, channels=16, axis=0)),
                                  g.add_tensor(bias_tensor("y_b", rng, q, per_axis_qparams(
                                      rng, channels=16, axis=0)))],
                      TensorSpec("y", (1, 3, 3, 16), np.int8, q_out), conv))  # fmt: skip
    elif kind == "host-crop-flatten":
        x = g.input("x", (1, 9, 9, 16), q=q)
        bounds = [g.const(f"crop_{k}", np.array(v, np.int32))
                  for k, v in (("b", [0, 1, 0, 0]), ("e", [0, 0, 8, 0]), ("s", [1, 1, 1, 1]))]
        crop = g.op("STRIDED_SLICE", [x, *bounds], TensorSpec("crop", (1, 8, 8, 16), np.int8, q),
                    {"begin_mask": 13, "end_mask": 11})  # fmt: skip
        shape = g.const("flat_shape", np.array([1, 64, 16], np.int32))
        g.output(g.op("RESHAPE", [conv2d(crop, 16, "a"), shape],
                      TensorSpec("flat", (1, 64, 16), np.int8, q)))  # fmt: skip
    elif kind == "host-transpose-conv":
        x = g.input("x", (1, 8, 8, 16), q=q)
        wq = per_axis_qparams(rng, channels=11, axis=0)
        up = g.op("TRANSPOSE_CONV", [
            g.const("up_shape", np.array([1, 16, 16, 11], np.int32)),
            g.const("up_w", random_weights(rng, (11, 2, 2, 16)), wq), conv2d(x, 16, "a"),
            g.add_tensor(bias_tensor("up_b", rng, q, wq))],
            TensorSpec("up", (1, 16, 16, 11), np.int8, q),
            {"padding": "VALID", "stride_w": 2, "stride_h": 2,
             "fused_activation_function": "NONE"})  # fmt: skip
        yq = per_axis_qparams(rng, channels=16, axis=0)
        g.output(g.op("CONV_2D", [up, g.const("y_w", random_weights(rng, (16, 1, 1, 11)), yq),
                                  g.add_tensor(bias_tensor("y_b", rng, q, yq))],
                      TensorSpec("y", (1, 16, 16, 16), np.int8, q_out), conv))  # fmt: skip
    elif kind == "host-concat-lanes":
        x = g.input("x", (1, 8, 8, 16), q=q)
        a, b = conv2d(x, 16, "a", cout=24), conv2d(x, 16, "b", cout=11)
        cat = g.op("CONCATENATION", [a, b], TensorSpec("cat", (1, 8, 8, 35), np.int8, q),
                   {"axis": 3})  # fmt: skip
        g.output(conv2d(cat, 35, "y", out_q=q_out))
    else:
        x, x2 = g.input("x", (1, 8, 8, 16), q=q), g.input("x2", (1, 8, 8, 16), q=q)
        c = conv2d(pad(x2, [[0, 0], [1, 1], [1, 1], [0, 0]], (1, 10, 10, 16), "p"), 16, "c", k=3)
        cat = g.op("CONCATENATION", [x, c], TensorSpec("cat", (1, 8, 8, 32), np.int8, q),
                   {"axis": 3})  # fmt: skip
        g.output(conv2d(cat, 32, "y", out_q=q_out))
    return mb.build()


@pytest.mark.parametrize(("kind", "needle"), [
    ("cpu-pad", "PAD"), ("cpu-padv2", "PADV2"), ("host-pad", "accel.pad"),
    ("host-concat", "accel.concat"), ("host-lut", "accel.lut"),
    ("host-concat-lanes", "accel.concat_lanes"), ("host-pool", "accel.host_pool2d"),
    ("host-crop-flatten", "accel.crop"), ("host-transpose-conv", "accel.depth_to_space")])
def test_kernel_host_steps_are_bit_exact(kind, needle, tmp_path, capsys):
    from qaccel.tools.qaccel_compile import run as compile_run
    from qaccel.tools.qaccel_run import run

    model = tmp_path / f"{kind}.tflite"
    model.write_bytes(_built_model(kind))
    assert compile_run([str(model), "-o", str(tmp_path / "art")]) == 0
    out = capsys.readouterr().out
    if kind.startswith("cpu-"):
        ops = [o.op for o in read_model((tmp_path / "art" / aot.AOT_FILE).read_bytes())
               .subgraphs[0].operators]  # fmt: skip
        assert ops == [needle, "CUSTOM"]
    else:
        assert f"host fallback inside vta_fn_0: {needle}" in out
    for path in LITERT_PATHS:
        code = run([str(tmp_path / "art"), "--runtime", "litert", "--litert-path", path,
                    "--outputs-dir", str(tmp_path / "o"), "--compare-litert"])  # fmt: skip
        out = capsys.readouterr().out
        assert code == 0 and "(bit-exact)" in out, out


def test_litert_matches_the_simulated_runtime(small_cnn):
    from qaccel.backends.vta.artifact import load_artifact
    from qaccel.backends.vta.runtime import run_compiled

    x = _input(small_cnn / aot.AOT_FILE, seed=7)
    ours = run_compiled(load_artifact(small_cnn), x)
    theirs = run_litert(small_cnn / aot.AOT_FILE, x)
    assert [a.tobytes() for a in ours] == [b.tobytes() for b in theirs]
    theirs = run_dispatch(small_cnn / aot.DISPATCH_FILE, x)
    assert [a.tobytes() for a in ours] == [b.tobytes() for b in theirs]


def test_api_runs_a_compiled_model_with_litert(small_cnn):
    from qaccel import api

    expected = [a.tobytes() for a in api.run_simulator(small_cnn, seed=2)]
    for path in LITERT_PATHS:
        assert [a.tobytes() for a in api.run_litert(small_cnn, seed=2, path=path)] == expected
    # a compiled model without a folder: exported for the run
    compiled = api.compile(FIXTURE_MODELS / "mlp.tflite")
    assert [a.tobytes() for a in api.run_litert(compiled, seed=2)] == [
        a.tobytes() for a in api.run_simulator(compiled, seed=2)]  # fmt: skip


def test_store_requant_config_runs_too(tmp_path):
    art = _compile("mlp", tmp_path / "mlp", "--config", "vta-store-requant")
    from qaccel.backends.vta.artifact import load_artifact
    from qaccel.backends.vta.runtime import run_compiled

    x = _input(art / aot.AOT_FILE, seed=1)
    expected = [a.tobytes() for a in run_compiled(load_artifact(art), x)]
    assert [a.tobytes() for a in run_litert(art / aot.AOT_FILE, x)] == expected
    assert [a.tobytes() for a in run_dispatch(art / aot.DISPATCH_FILE, x)] == expected


def test_c_host_program_runs_the_aot_model(small_cnn, tmp_path):
    from qaccel.backends.litert.runtime import KERNEL_DIR, MACHINE_DIR, PROGRAM_DIR, SOURCES

    lrt = litert_library().parent
    exe = tmp_path / "host"
    subprocess.run([CC, "-std=c99", "-O2", "-Wall", "-Werror", f"-I{KERNEL_DIR}", f"-I{PROGRAM_DIR}",
                    f"-I{MACHINE_DIR}", str(HOST), *(str(p) for p in SOURCES if p.suffix == ".c"),
                    f"-L{lrt}", "-lLiteRt", f"-Wl,-rpath,{lrt}", "-ldl", "-lm", "-lpthread", "-o",
                    str(exe)],
                   check=True, capture_output=True)  # fmt: skip
    model = small_cnn / aot.AOT_FILE
    x = _input(model, seed=5)[0]
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    run = subprocess.run([str(exe), str(model), str(tmp_path / "in.bin"), "1x32x32x3",
                          str(tmp_path / "out.bin"), "1x10"], capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out.bin").read_bytes() == run_litert(model, [x])[0].tobytes()


def test_c_host_program_runs_the_dispatch_model(small_cnn, tmp_path):
    # libLiteRt.so alone, no qaccel code linked: LiteRT loads the dispatch library itself
    from qaccel.backends.litert.runtime import KERNEL_DIR

    lrt = litert_library().parent
    exe = tmp_path / "dispatch_host"
    subprocess.run([CC, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{KERNEL_DIR}",
                    str(DISPATCH_HOST), f"-L{lrt}", "-lLiteRt", f"-Wl,-rpath,{lrt}", "-o",
                    str(exe)],
                   check=True, capture_output=True)  # fmt: skip
    model = small_cnn / aot.DISPATCH_FILE
    x = _input(model, seed=5)[0]
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    run = subprocess.run([str(exe), str(model), str(dispatch_library_dir()),
                          str(tmp_path / "in.bin"), "1x32x32x3", str(tmp_path / "out.bin"), "1x10"],
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert (tmp_path / "out.bin").read_bytes() == run_dispatch(model, [x])[0].tobytes()


# --------------------------------------------------------------------------------------------
# Errors: one line each


def _run_blob(blob: bytes, x: np.ndarray, out_bytes: int) -> str:
    """The program runner's error for `blob` run on one input ("" when it runs)."""
    from qaccel.backends.vta.program_runner import Program, ProgramError

    try:
        program = Program(blob)
    except ProgramError as e:
        return str(e)
    state = program.state()
    y = np.zeros((1, out_bytes), np.int8)
    from qaccel.backends.vta import program_runner as pr

    ins = (pr._Tensor * 1)(pr._tensor(np.ascontiguousarray(x)))
    outs = (pr._Tensor * 1)(pr._tensor(y))
    rc = pr.library().qaccel_state_run(state._handle, 1, ins, 1, outs)
    err = state.error
    assert (rc != 0) == bool(err)
    return err


def _patch(blob: bytes, at: int, fmt: str, *values, seal: bool = True) -> bytes:
    """`blob` with `values` at `at`, its checksum made right again (`seal`)."""
    b = bytearray(blob)
    struct.pack_into(fmt, b, at, *values)
    return writer.seal(bytes(b)) if seal else bytes(b)


@pytest.fixture(scope="module")
def fn1_program(small_cnn) -> bytes:
    """vta_fn_1's program (1x288 int8 -> 1x10 int8)."""
    sg = read_model((small_cnn / aot.AOT_FILE).read_bytes()).subgraphs[0]
    op = [o for o in sg.operators if o.op == "CUSTOM"][1]
    return bytes(sg.tensors[op.inputs[-1]].data_bytes())


@pytest.mark.parametrize(
    ("corrupt", "message"),
    [
        (lambda b: b[:100], "program of 100 bytes, shorter than its header"),
        (lambda b: b[: len(b) // 2], "program truncated"),
        (lambda b: b"XXXXXXXX" + b[8:], "bad program magic"),
        (lambda b: _patch(b, 8, "<I", 1), "program format version 1, this kernel reads version 2"),
        (lambda b: _patch(b, 64, "<q", 5, seal=False), "program checksum mismatch"),
        (lambda b: _patch(b, len(b) - 1, "<B", b[-1] ^ 1, seal=False), "program checksum mismatch"),
        (lambda b: _patch(b, 64, "<q", 9), "hardware configuration not supported"),
        (lambda b: _patch(b, 64 + 8 * 10, "<q", 7), "hardware configuration not supported"),
        (lambda b: _patch(b, 56, "<Q", 1 << 40), "program tables out of range"),
        (lambda b: _patch(b, 40, "<I", 1 << 19), "program tables out of range"),
        (lambda b: _patch(b, struct.unpack_from("<Q", b, 176)[0] + 8, "<Q", 1 << 30),
         "layer 0's instructions out of range"),  # fmt: skip
    ],
)
def test_corrupt_or_unsupported_programs_are_one_line_errors(fn1_program, corrupt, message):
    x = np.zeros((1, 288), np.int8)
    assert _run_blob(fn1_program, x, 10) == ""
    err = _run_blob(corrupt(fn1_program), x, 10)
    assert message in err and "\n" not in err


def test_randomly_corrupted_programs_never_crash(small_cnn):
    script = Path(__file__).parent / "litert" / "fuzz_program.py"
    run = subprocess.run([sys.executable, str(script), str(small_cnn / aot.AOT_FILE), "11", "150"],
                         capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "program tables out of range" in run.stdout


def test_wrong_io_sizes_are_errors(fn1_program):
    assert "input 0 has shape [100], the program's is [1x288]" in _run_blob(
        fn1_program, np.zeros(100, np.int8), 10)  # fmt: skip
    assert "input 0 has shape [288], the program's is [1x288]" in _run_blob(
        fn1_program, np.zeros(288, np.int8), 10)  # fmt: skip
    assert "input 0 has element type 3, the program's has type 9" in _run_blob(
        fn1_program, np.zeros((1, 288), np.uint8), 10)  # fmt: skip
    assert "output 0 has shape [1x11], the program's is [1x10]" in _run_blob(
        fn1_program, np.zeros((1, 288), np.int8), 11)  # fmt: skip


def test_corrupt_program_through_litert_is_one_line(small_cnn, tmp_path, capfd):
    art = tmp_path / "art"
    shutil.copytree(small_cnn, art)
    model = art / aot.AOT_FILE
    offset, _ = _program_place(model)
    data = bytearray(model.read_bytes())
    data[offset + 8] = 9  # format version 9
    model.write_bytes(bytes(data))
    _forge_manifest(model)
    with pytest.raises(LiteRtError, match="program format version 9, this kernel reads version 2"):
        run_litert(model, _input(model))
    from qaccel.tools.qaccel_run import main

    with pytest.raises(SystemExit) as exit_:
        main([str(art), "--runtime", "litert", "--litert-path", "custom-op", "--outputs-dir",
              str(tmp_path / "o")])  # fmt: skip
    assert exit_.value.code == 1
    err = capfd.readouterr().err.splitlines()  # LiteRT's own log lines included
    assert err == ["qaccel-run: error: QACCEL_VTA: program format version 9, this kernel reads "
                   "version 2"]  # fmt: skip


def _dispatch_variant(small_cnn: Path, tmp_path: Path, change) -> Path:
    """A copy of small_cnn's dispatch model with `change(data, options of vta_fn_0)` applied:
    a bytearray edited in place (its bytecode), or new options for vta_fn_0 (offset, size)."""
    data = bytearray((small_cnn / aot.DISPATCH_FILE).read_bytes())
    op = read_model(bytes(data)).subgraphs[0].operators[0]
    options = aot.read_dispatch_options(op.custom_options)
    place = change(data, options)
    if place is not None:
        at = data.index(op.custom_options)
        new = aot.dispatch_options(options["name"], *place)
        data[at : at + len(new)] = new
    out = tmp_path / aot.DISPATCH_FILE
    out.write_bytes(bytes(data))
    _forge_manifest(out)
    return out


def _forge_manifest(model: Path) -> None:
    """In an artifact, make the manifest agree with the edited `model`, as a forger would, so
    that the program's own checks are what refuses it."""
    manifest = model.parent / "manifest.json"
    if manifest.is_file():
        meta = json.loads(manifest.read_text())
        meta["files"][model.name] = hashlib.sha256(model.read_bytes()).hexdigest()
        manifest.write_text(json.dumps(meta))


def _poke(at_in_program: int, fmt: str, value):
    return lambda data, o: struct.pack_into(fmt, data, o["bytecode_offset"] + at_in_program, value)


def _sealed(change):
    """`change`, then the program's checksum made right again (as a forger would)."""

    def sealed(data, o):
        change(data, o)
        at, size = o["bytecode_offset"], o["bytecode_size"]
        data[at : at + size] = writer.seal(bytes(data[at : at + size]))

    return sealed


def _first_step_kind(data, o):
    steps_at = struct.unpack_from("<Q", data, o["bytecode_offset"] + 168)[0]
    struct.pack_into("<I", data, o["bytecode_offset"] + steps_at, 77)


@pytest.mark.parametrize(("change", "message"), [
    (_poke(8, "<I", 9), "QACCEL_VTA: program format version 9, this kernel reads version 2"),
    (_poke(64, "<q", 9), "QACCEL_VTA: program checksum mismatch"),
    (_sealed(_poke(64, "<q", 9)), "QACCEL_VTA: hardware configuration not supported by this kernel"),
    (_poke(0, "<8s", b"XXXXXXXX"), "QACCEL_VTA: bad program magic"),
    (_sealed(_first_step_kind), "QACCEL_VTA: step 0 has unknown kind 77 (corrupt program)"),
    (lambda d, o: (len(d) + 64, o["bytecode_size"]),
     "LiteRT: dispatch op bytecode range is outside the model allocation"),
    (lambda d, o: (o["bytecode_offset"], len(d)),
     "LiteRT: dispatch op bytecode range is outside the model allocation"),
    (lambda d, o: (0, o["bytecode_size"]),
     "LiteRT: Found dispatch op with missing bytecode offset"),
    (lambda d, o: (64, o["bytecode_size"]), "QACCEL_VTA: bad program magic"),  # into the flatbuffer
    (lambda d, o: (o["bytecode_offset"], 100),
     "QACCEL_VTA: program of 100 bytes, shorter than its"),
])  # fmt: skip
def test_bad_dispatch_bytecode_is_one_line(small_cnn, tmp_path, change, message):
    model = _dispatch_variant(small_cnn, tmp_path, change)
    with pytest.raises(LiteRtError) as err:
        run_dispatch(model, _input(model))
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_bad_dispatch_bytecode_through_qaccel_run_is_one_line(small_cnn, tmp_path, capfd):
    art = tmp_path / "art"
    shutil.copytree(small_cnn, art)
    _dispatch_variant(small_cnn, art, _poke(8, "<I", 9))
    from qaccel.tools.qaccel_run import main

    with pytest.raises(SystemExit) as exit_:
        main([str(art), "--runtime", "litert", "--outputs-dir", str(tmp_path / "o")])
    assert exit_.value.code == 1
    err = capfd.readouterr().err.splitlines()  # LiteRT's own log lines included
    assert err == ["qaccel-run: error: QACCEL_VTA: program format version 9, this kernel reads "
                   "version 2"]  # fmt: skip


def test_qaccel_run_process_says_one_line_with_litert(small_cnn, tmp_path):
    """The whole process's stderr: LiteRT's exit-time log lines must not follow our line."""
    art = tmp_path / "art"
    shutil.copytree(small_cnn, art)
    argv = ["qaccel-run", str(art), "--runtime", "litert", "--outputs-dir", str(tmp_path / "o")]
    code = f"import sys; sys.argv = {argv!r}; from qaccel.tools import launch; launch.run_main()"
    cmd = [sys.executable, "-c", code]
    ok = subprocess.run(cmd, capture_output=True, text=True)
    assert ok.returncode == 0 and ok.stderr == "", ok.stderr
    _dispatch_variant(small_cnn, art, _poke(8, "<I", 9))
    bad = subprocess.run(cmd, capture_output=True, text=True)
    assert bad.returncode == 1
    assert bad.stderr.count("\n") == 1 and "format version 9" in bad.stderr, bad.stderr


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc with AddressSanitizer")
def test_dispatch_library_under_sanitizers(small_cnn, tmp_path):
    """The dispatch library and the C host built with -fsanitize=address,undefined: LiteRT runs
    the model and refuses corrupt bytecode (at creation and at run time) without a report."""
    from qaccel.backends.litert.dispatch import LIB_NAME
    from qaccel.backends.litert.runtime import DISPATCH_SOURCES, KERNEL_DIR, MACHINE_DIR, PROGRAM_DIR

    sanitize = ["-g", "-O0", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror", "-std=c99"]  # fmt: skip
    lib_dir, lrt = tmp_path / "lib", litert_library().parent
    lib_dir.mkdir()
    from sanitized_build import cached

    library = ["gcc", *sanitize, "-fPIC", "-shared", "-fvisibility=hidden", f"-I{KERNEL_DIR}",
               f"-I{PROGRAM_DIR}", f"-I{MACHINE_DIR}",
               *(str(p) for p in DISPATCH_SOURCES if p.suffix == ".c"), "-lm", "-lpthread"]
    host = ["gcc", *sanitize, f"-I{KERNEL_DIR}", str(DISPATCH_HOST), f"-L{lrt}", "-lLiteRt",
            f"-Wl,-rpath,{lrt}"]  # fmt: skip
    try:
        for command, out, label, inputs in (
            (library, lib_dir / LIB_NAME, "dispatch", [KERNEL_DIR, PROGRAM_DIR, MACHINE_DIR]),
            (host, tmp_path / "host", "dispatch-host",
             [KERNEL_DIR, DISPATCH_HOST, litert_library()]),
        ):  # fmt: skip
            cached(out, lambda path, command=command: subprocess.run(
                [*command, "-o", str(path)], check=True, capture_output=True),
                label=label, flags=command, inputs=inputs)  # fmt: skip
    except subprocess.CalledProcessError as e:
        pytest.skip(f"no sanitizer build: {e.stderr.decode()[-200:]}")
    env = {**os.environ, "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}  # fmt: skip
    x = _input(small_cnn / aot.DISPATCH_FILE)[0]
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    variants = {"ok": lambda d, o: None, "version": _poke(8, "<I", 9),
                "magic": _poke(0, "<8s", b"XXXXXXXX"), "step": _sealed(_first_step_kind),
                "short": lambda d, o: (o["bytecode_offset"], 100)}  # fmt: skip
    for name, change in variants.items():
        (tmp_path / name).mkdir()
        model = _dispatch_variant(small_cnn, tmp_path / name, change)
        run = subprocess.run([str(tmp_path / "host"), str(model), str(lib_dir),
                              str(tmp_path / "in.bin"), "1x32x32x3", str(tmp_path / "out.bin"),
                              "1x10"], capture_output=True, text=True, env=env)  # fmt: skip
        assert "Sanitizer" not in run.stderr and "runtime error" not in run.stderr, run.stderr
        assert run.returncode == (0 if name == "ok" else 1), (name, run.stderr[-2000:])
        assert run.returncode or (tmp_path / "out.bin").read_bytes() == run_dispatch(
            small_cnn / aot.DISPATCH_FILE, [x])[0].tobytes()  # fmt: skip


class _Header(ctypes.Structure):
    _fields_ = [("struct_size", ctypes.c_uint16), ("major", ctypes.c_uint16),
                ("minor", ctypes.c_uint16), ("reserved", ctypes.c_uint16)]  # fmt: skip


def _dispatch_api():
    """libLiteRtDispatch_Qaccel's api struct (bytes) and its interface's functions (addresses)."""
    lib = ctypes.CDLL(str(next(dispatch_library_dir().glob("libLiteRtDispatch_Qaccel*.so"))))
    api = (ctypes.c_uint8 * 56)()
    assert lib.LiteRtDispatchGetApi(api) == 0
    interface = struct.unpack_from("<Q", bytes(api), 24)[0]
    return lib, bytes(api), list((ctypes.c_uint64 * 28).from_address(interface))


def test_dispatch_api_is_the_layout_the_wheel_expects():
    lib, api, functions = _dispatch_api()
    # ABI header (56 bytes, layout 1), version 0.1.0, interface; async, graph, handlers: none
    assert struct.unpack_from("<4H3i", api) == (56, 1, 0, 0, 0, 1, 0)
    assert struct.unpack_from("<3Q", api, 32) == (0, 0, 0)
    # 26 entries: the 18 of the basic API, 5 metrics (none), compatibility, options, hooks (none)
    assert all(functions[:18]) and functions[18:23] == [0] * 5 and all(functions[23:25])
    assert functions[25:] == [0, 0, 0]


class _Version(ctypes.Structure):
    _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int)]


def test_dispatch_library_serves_the_versioned_abi_too():
    """Releases after 2.3.0 look up LiteRtDispatchQueryInterface(id, runtime version by value,
    &interface) only; the library exports it beside LiteRtDispatchGetApi, same table behind."""
    lib, _, functions = _dispatch_api()
    query = lib.LiteRtDispatchQueryInterface
    query.argtypes = [ctypes.c_int, _Version, ctypes.POINTER(ctypes.c_void_p)]
    interface = ctypes.c_void_p()
    assert query(0, _Version(1, 0, 0), ctypes.byref(interface)) == 0  # what the runtime passes
    # the basic interface: ABI header (232 bytes, 1.0), then the table LiteRtDispatchGetApi gives
    assert struct.unpack("<4H", ctypes.string_at(interface.value, 8)) == (232, 1, 0, 0)
    assert list((ctypes.c_uint64 * 28).from_address(interface.value + 8)) == functions
    for ident, version in [(1, (1, 0, 0)), (2, (1, 0, 0)), (3, (1, 0, 0)), (4, (1, 0, 0)),
                           (-1, (1, 0, 0)), (0, (0, 1, 0))]:  # fmt: skip
        interface = ctypes.c_void_p(1)
        assert query(ident, _Version(*version), ctypes.byref(interface)) == 5  # unsupported
        assert interface.value is None
    assert query(0, _Version(1, 0, 0), None) == 1  # invalid argument
    if shutil.which("nm"):
        exported = subprocess.run(["nm", "-D", "--defined-only", lib._name], capture_output=True,
                                  text=True, check=True).stdout.split()  # fmt: skip
        assert {"LiteRtDispatchGetApi", "LiteRtDispatchQueryInterface"} <= set(exported)
        assert "LiteRtDispatchInitialize" not in exported  # the symbol newer releases call legacy


def test_dispatch_library_refuses_a_runtime_context_it_cannot_use():
    lib, _, functions = _dispatch_api()
    initialize = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p,
                                  ctypes.c_void_p)(functions[0])  # fmt: skip
    lib.qaccel_litert_last_error.restype = ctypes.c_char_p
    for header, message in [((8, 1, 0, 0), "version 1 with 8 bytes; this library needs version 1 "
                                           "with at least 248 bytes"),
                            ((408, 2, 0, 0), "version 2 with 408 bytes")]:  # fmt: skip
        context = (ctypes.c_uint64 * 51)()  # a null table after the header
        _Header.from_buffer(context).__init__(*header)
        lib.qaccel_litert_clear_error()
        assert initialize(ctypes.addressof(context), None, None) != 0
        assert message in lib.qaccel_litert_last_error().decode()
    context = (ctypes.c_uint64 * 51)()
    _Header.from_buffer(context).__init__(408, 1, 1, 0)
    lib.qaccel_litert_clear_error()
    assert initialize(ctypes.addressof(context), None, None) != 0
    error = lib.qaccel_litert_last_error().decode()
    assert "runtime context lacks a tensor buffer function" in error
    lib.qaccel_litert_clear_error()


def test_foreign_custom_options_are_one_line(small_cnn, tmp_path):
    model = tmp_path / aot.AOT_FILE
    data = (small_cnn / aot.AOT_FILE).read_bytes()
    assert data.count(aot.CUSTOM_MAGIC) == 2  # the two ops' custom options
    model.write_bytes(data.replace(aot.CUSTOM_MAGIC, b"XVTA", 1))
    with pytest.raises(LiteRtError, match="^QACCEL_VTA: custom options are not ours"):
        run_litert(model, _input(model))


def _stub_library(tmp_path: Path, names) -> Path:
    src = tmp_path / "stub.c"
    src.write_text("".join(f"int {n}(void) {{ return 0; }}\n" for n in names))
    lib = tmp_path / "libstub.so"
    subprocess.run([CC, "-shared", "-fPIC", str(src), "-o", str(lib)], check=True)
    return lib


def test_litert_without_a_function_we_need_is_one_line(small_cnn, tmp_path):
    empty = _stub_library(tmp_path, ["Unrelated"])
    with pytest.raises(LiteRtError, match=r"libstub.so: the LiteRT C API lacks LiteRtCreateEnvironment$"):
        run_litert(small_cnn / aot.AOT_FILE, _input(small_cnn / aot.AOT_FILE), litert=empty)


def test_kernel_binding_names_the_missing_symbol(small_cnn, tmp_path):
    (tmp_path / "k").mkdir()
    runner_only = _stub_library(tmp_path / "k", RUNNER_API)  # no tensor-buffer functions
    with pytest.raises(LiteRtError, match="the LiteRT C API lacks LiteRtGetTensorBufferPackedSize"):
        load(runner_only)
    # and the real library works again afterwards
    x = _input(small_cnn / aot.AOT_FILE)
    assert run_litert(small_cnn / aot.AOT_FILE, x)[0].shape == (1, 10)


def test_runtime_litert_needs_an_artifact(tmp_path, capsys):
    from qaccel.tools.qaccel_run import main

    with pytest.raises(SystemExit):
        main([str(FIXTURE_MODELS / "mlp.tflite"), "--runtime", "litert", "--outputs-dir",
              str(tmp_path)])  # fmt: skip
    assert "--runtime litert runs an artifact folder" in capsys.readouterr().err


@pytest.mark.parametrize("path", ["dispatch", "custom-op"])
def test_litert_path_needs_runtime_litert(small_cnn, tmp_path, capsys, path):
    from qaccel.tools.qaccel_run import main

    with pytest.raises(SystemExit):
        main([str(small_cnn), "--litert-path", path, "--outputs-dir", str(tmp_path)])
    assert "--litert-path goes with --runtime litert" in capsys.readouterr().err


# --------------------------------------------------------------------------------------------
# Interop


def test_plain_interpreter_names_the_unresolved_custom_op(small_cnn):
    code = ("from ai_edge_litert.interpreter import Interpreter\n"
            f"i = Interpreter({str(small_cnn / aot.AOT_FILE)!r})\n"
            "try:\n    i.allocate_tensors()\nexcept RuntimeError as e:\n    print(e)\n")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "Encountered unresolved custom op: QACCEL_VTA." in out
    assert "(QACCEL_VTA) failed to prepare" in out


def test_litert_analyzer_opens_the_aot_model(small_cnn):
    code = ("from ai_edge_litert import _pywrap_analyzer_wrapper as a\n"
            f"print(a.ModelAnalyzer({str(small_cnn / aot.AOT_FILE)!r}, True, False))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    # the original's tensors, then the programs: vta_fn_0 is original ops 0-6 (T#0 -> T#17)
    program = len(_original("small_cnn").tensors)
    assert f"Op#0 QACCEL_VTA(T#0, T#{program}) -> [T#17]" in out
    assert f"T#{program}(qaccel_program_vta_fn_0) shape:[79248], type:UINT8" in out


def test_aot_model_reimports_with_opaque_custom_ops_on_the_cpu(small_cnn, tmp_path, capsys):
    from qaccel.tools.qaccel_opt import main

    out = tmp_path / "out.mlir"
    try:
        main([str(small_cnn / aot.AOT_FILE), "-p", "vta-pipeline", "--explain-partitioning",
              "-o", str(out)])  # fmt: skip
    except SystemExit as e:
        assert e.code in (0, None)
    captured = capsys.readouterr()
    text = out.read_text()
    assert text.count('custom_code = "QACCEL_VTA"') == 2 and "func.call" not in text
    name = _original("small_cnn").tensors[17].name  # vta_fn_0's output, as in the original
    assert (f'vta: kept on CPU: tfl.opaque QACCEL_VTA "{name}": custom op QACCEL_VTA: an '
            "accelerator function compiled ahead of time") in captured.err  # fmt: skip


def test_dispatch_model_interop(small_cnn, tmp_path, capsys):
    model = small_cnn / aot.DISPATCH_FILE
    code = ("from ai_edge_litert.interpreter import Interpreter\n"
            f"i = Interpreter({str(model)!r})\n"
            "try:\n    i.allocate_tensors()\nexcept RuntimeError as e:\n    print(e)\n"
            "from ai_edge_litert import _pywrap_analyzer_wrapper as a\n"
            f"print(a.ModelAnalyzer({str(model)!r}, True, False))\n")  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True).stdout
    assert "Encountered unresolved custom op: DISPATCH_OP." in out
    # the original's tensors: vta_fn_0 is ops 0-6 (T#0 -> T#17), vta_fn_1 op 8 (T#18 -> T#19)
    assert "Op#0 DISPATCH_OP(T#0) -> [T#17]" in out and "Op#2 DISPATCH_OP(T#18) -> [T#19]" in out
    from qaccel.tools.qaccel_opt import main

    out_file = tmp_path / "out.mlir"
    try:
        main([str(model), "-p", "vta-pipeline", "--explain-partitioning", "-o", str(out_file)])
    except SystemExit as e:
        assert e.code in (0, None)
    text = out_file.read_text()
    assert text.count('custom_code = "DISPATCH_OP"') == 2 and "func.call" not in text
    name = _original("small_cnn").tensors[17].name
    assert (f'vta: kept on CPU: tfl.opaque DISPATCH_OP "{name}": custom op DISPATCH_OP: a '
            "partition compiled ahead of time for an NPU") in capsys.readouterr().err  # fmt: skip


def test_opcheck_compares_litert_with_builtin_ref_op_by_op():
    from qaccel.backends.litert.opcheck import check_ops

    rows = check_ops(FIXTURE_MODELS / "small_cnn.tflite")
    assert [r.op for r in rows] == ["CONV_2D", "DEPTHWISE_CONV_2D", "CONV_2D", "ADD", "MAX_POOL_2D",
                                    "CONV_2D", "AVERAGE_POOL_2D", "RESHAPE", "FULLY_CONNECTED",
                                    "SOFTMAX"]  # fmt: skip
    assert all(r.mismatches >= 0 for r in rows)
    # the ops the AOT models leave to LiteRT's CPU kernels agree with BUILTIN_REF
    assert all(r.mismatches == 0 for r in rows if r.op in ("RESHAPE", "SOFTMAX"))
    assert "of 288 differ (bit-exact)" in rows[7].line()


def test_kernel_library_knows_its_sources(tmp_path):
    from qaccel.backends.litert import runtime

    lib = ctypes.CDLL(str(runtime.build_kernel(tmp_path)))
    lib.qaccel_litert_source_hash.restype = ctypes.c_char_p
    assert lib.qaccel_litert_source_hash().decode() == runtime.source_hash()
    setup = (Path(runtime.__file__).parents[2] / "setup.py").read_text()
    assert "qaccel.backends.litert._qaccel_litert" in setup  # pip install builds it too


def test_dispatch_library_knows_its_sources(tmp_path):
    from qaccel.backends.litert import runtime
    from qaccel.backends.litert.dispatch import LIB_NAME

    path = runtime.build_library(tmp_path / LIB_NAME, runtime.DISPATCH_SOURCES)
    assert runtime.is_current(path, runtime.DISPATCH_SOURCES)
    assert not runtime.is_current(path, runtime.SOURCES)
    setup = (Path(runtime.__file__).parents[2] / "setup.py").read_text()
    assert "qaccel.backends.litert.libdispatch.libLiteRtDispatch_Qaccel" in setup
