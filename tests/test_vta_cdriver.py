"""The C driver of a compiled model (`backends/vta/cdriver.py`): each accelerator function's
program (`driver/<fn>.qprog`) in a table that compiles cleanly as C99; a board's host program
(qaccel_vta.h's calls as the program runner's device) runs exactly the artifact's instruction
streams and micro-ops, in order. Linked with the runner, the program runner and libqaccel_vta
(`backends/vta/cdriver_runtime.py`, `qaccel-run --driver c`) it computes: bit-exact with LiteRT
on the fixtures, also under AddressSanitizer/UBSan; a failing layer is one line naming
function, layer and instruction; names from the model never reach the C text unsanitized."""

from __future__ import annotations

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_MODELS, vta_lowered
from qaccel.backends.vta.artifact import write_artifact
from qaccel.backends.vta.codegen import compile_module
from qaccel.backends.vta.runtime import STEP_LAYER, function_steps, run_compiled

HARNESS = Path(__file__).parent / "cdriver" / "harness.c"
CC = shutil.which("cc") or shutil.which("gcc")


@pytest.fixture(scope="module")
def runner_objects(tmp_path_factory) -> list[str]:
    """The program runner and libqaccel_vta compiled once for the harness (model-independent)."""
    from qaccel.backends.vta.program_runner import MACHINE_DIR, PROGRAM_DIR

    out = tmp_path_factory.mktemp("harness-objects")
    objects = []
    for src in (PROGRAM_DIR / "qaccel_program.c", MACHINE_DIR / "vta_machine.c"):
        obj = out / f"{src.stem}.o"
        subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O0", "-c",
                        f"-I{PROGRAM_DIR}", f"-I{MACHINE_DIR}", str(src), "-o", str(obj)],
                       check=True)  # fmt: skip
        objects.append(str(obj))
    return objects


@pytest.mark.skipif(CC is None, reason="no C compiler")
@pytest.mark.parametrize("name", ["residual", "small_cnn"])
def test_board_support_package_runs_the_artifact_streams(name, tmp_path, runner_objects):
    """A host program on a board (tests/cdriver/harness.c: qaccel_vta.h's two calls on the
    checked simulator, handed to the program runner as its device) runs `driver/`'s program:
    exactly the artifact's instruction streams and micro-ops, in the order of the function's
    layer steps, computing what the program runner on the C machine computes."""
    from qaccel.backends.vta.program_runner import MACHINE_DIR, Program

    module, _ = vta_lowered(name)
    compiled = compile_module(module)
    art = tmp_path / "art"
    write_artifact(compiled, art)
    exe = tmp_path / "harness"
    subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O0", f"-I{art / 'driver'}",
                    f"-I{MACHINE_DIR}", str(HARNESS), str(art / "driver" / "model.c"),
                    *runner_objects, "-o", str(exe), "-lm", "-lpthread"], check=True)  # fmt: skip
    blob = (art / "driver" / "vta_fn_0.qprog").read_bytes()
    program = Program(blob)
    rng = np.random.default_rng(0)
    xs = [rng.integers(-128, 128, shape).astype(dtype) for shape, dtype in program.inputs]
    (tmp_path / "in.bin").write_bytes(b"".join(x.tobytes() for x in xs))
    dump = tmp_path / "dump.bin"
    run = subprocess.run([str(exe), str(art / "driver" / "vta_fn_0.qprog"),
                          str(tmp_path / "in.bin"), str(tmp_path / "out.bin"), str(dump)],
                         check=False, capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    expected = program.state().run(xs)
    assert (tmp_path / "out.bin").read_bytes() == b"".join(y.tobytes() for y in expected)
    fn = compiled.functions["vta_fn_0"]
    f = next(o for o in compiled.module.ops if getattr(o, "sym_name", None)
             and o.sym_name.data == "vta_fn_0")  # fmt: skip
    order = [arg for kind, arg in function_steps(fn, list(f.body.block.ops)).steps
             if kind == STEP_LAYER]  # fmt: skip
    assert sorted(order) == [lay.index for lay in fn.layers]
    data = dump.read_bytes()
    at = 0
    for index in order:
        n = int(np.frombuffer(data, "<u4", 1, at)[0])
        words = np.frombuffer(data, "<u8", 2 * n, at + 4).reshape(-1, 2)
        at += 4 + 16 * n
        m = int(np.frombuffer(data, "<u4", 1, at)[0])
        uops = np.frombuffer(data, "<u4", m, at + 4)
        at += 4 + 4 * m
        assert words.tobytes() == (art / "vta_fn_0" / f"layer_{index}.bin").read_bytes()
        assert uops.tobytes() == (art / "vta_fn_0" / f"layer_{index}.uops.bin").read_bytes()
    assert at == len(data)


# --------------------------------------------------------------------------------------------
# The driver library: model.c + runner/qaccel_runner.c + libqaccel_vta, run through ctypes
# --------------------------------------------------------------------------------------------

from qaccel.backends.vta import cdriver_runtime as cdr  # noqa: E402
from qaccel.backends.vta.cdriver import c_comment, c_identifier, c_string, driver_files  # noqa: E402
from qaccel.interpreter.interpreter import entry_function, random_inputs  # noqa: E402
from qaccel.targets.vta.config import HardwareConfig  # noqa: E402
from qaccel.tools import qaccel_run  # noqa: E402

needs_cc = pytest.mark.skipif(CC is None, reason="no C compiler")
FIXTURES = sorted(p.stem for p in FIXTURE_MODELS.glob("*.tflite"))
# vta-store-requant: a subset (the full set runs on vta-default) that still has host segments
# (FULLY_CONNECTED's requantization), residual adds, concatenation and MobileNetV2.
STORE_REQUANT_SUBSET = ["mlp", "mobilenet_v2", "pad_concat_slice", "residual", "small_cnn"]


def _compiled(name: str, hw: str = "vta-default"):
    module, data = vta_lowered(name, hw)
    return compile_module(module, HardwareConfig.from_json(hw)), data


def _run_c(compiled, inputs, **kw):
    return cdr.run_compiled_c(compiled, inputs, **kw)


@needs_cc
def test_driver_library_builds_strict_c99(tmp_path):
    """model.c, the runner and libqaccel_vta build with -std=c99 -Wall -Wextra -Werror into one
    shared library whose table lists the model's functions."""
    assert {"-std=c99", "-Wall", "-Wextra", "-Werror"} <= set(cdr.CFLAGS)
    compiled, _ = _compiled("residual")
    lib_path = cdr.build_driver(cdr.driver_sources(compiled), out_dir=tmp_path)
    lib = cdr.load_driver(lib_path)
    assert lib.qaccel_runner_function_count() == len(compiled.functions) == 1
    lib.qaccel_runner_function_name.restype = ctypes.c_char_p
    assert lib.qaccel_runner_function_name(0) == b"vta_fn_0"
    assert lib.qaccel_runner_find(b"vta_fn_0") == 0 and lib.qaccel_runner_find(b"nope") == -1


@needs_cc
def test_library_is_cached_by_content():
    """(In the user's cache, as `qaccel-run` uses it: the edited driver below is always the
    same, so repeated test runs add nothing to it.)"""
    compiled, _ = _compiled("small_cnn")
    files = cdr.driver_sources(compiled)
    first = cdr.build_driver(files)
    mtime = first.stat().st_mtime_ns
    assert cdr.build_driver(files) == first and first.stat().st_mtime_ns == mtime
    other = dict(files, **{"model.c": files["model.c"] + b"\n/* edited */\n"})
    assert cdr.build_driver(other) != first


def _without_final_softmax(data: bytes) -> bytes:
    """The model minus its final SOFTMAX: mobilenetv2_035_96_collapsed's softmax scales are
    refused by LiteRT's reference kernel (and so by our interpreter); its prefix is not."""
    from qaccel.dialects import tfl
    from qaccel.frontend.tflite_export import export_tflite
    from qaccel.frontend.tflite_import import import_tflite
    from xdsl.dialects import func

    module = import_tflite(data)
    entry = entry_function(module)
    softmax = next(op for op in entry.walk() if isinstance(op, tfl.SoftmaxOp))
    ret = entry.body.block.last_op
    assert isinstance(ret, func.ReturnOp) and ret.operands[0] is softmax.output
    ret.operands[0] = softmax.input
    softmax.detach()
    softmax.erase()
    entry.update_function_type()
    return export_tflite(module)


def _assert_bit_exact(oracle, name, hw):
    if name == "mobilenetv2_035_96_collapsed":
        from qaccel.frontend.tflite_import import import_tflite
        from qaccel.pipeline.manager import build_pipeline, qaccel_context

        data = _without_final_softmax((FIXTURE_MODELS / f"{name}.tflite").read_bytes())
        module = import_tflite(data)
        build_pipeline(f"vta-pipeline{{config={hw}}}").apply(qaccel_context(), module)
        compiled = compile_module(module, HardwareConfig.from_json(hw))
    else:
        compiled, data = _compiled(name, hw)
    inputs = random_inputs(entry_function(compiled.module), 0)
    got = _run_c(compiled, inputs)
    ref = oracle(data, [inputs], keep_all_tensors=False)
    assert ref.refused is None, ref.refused
    for x, y in zip(got, ref.outputs[0], strict=True):
        assert x.dtype == y.dtype and x.shape == y.shape
        np.testing.assert_array_equal(x, y, err_msg=f"{name} {hw}")


@needs_cc
@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_bit_exact_with_litert_vta_default(oracle, name):
    _assert_bit_exact(oracle, name, "vta-default")


@needs_cc
@pytest.mark.parametrize("name", STORE_REQUANT_SUBSET)
def test_fixture_bit_exact_with_litert_store_requant(oracle, name):
    _assert_bit_exact(oracle, name, "vta-store-requant")


@needs_cc
def test_same_as_python_runtime_and_runner_reused():
    """Several calls on one runner (the arena starts from zero every time) give what the
    Python runtime gives, and the machine's cycles add up."""
    compiled, _ = _compiled("mlp")
    runner = cdr.open_runner(compiled)
    for seed in (0, 1, 2):
        inputs = random_inputs(entry_function(compiled.module), seed)
        for x, y in zip(_run_c(compiled, inputs, runner=runner), run_compiled(compiled, inputs),
                        strict=True):  # fmt: skip
            np.testing.assert_array_equal(x, y)
    assert runner.cycles() > 0


@needs_cc
def test_cli_runs_the_artifact_driver(tmp_path, capsys):
    compiled, data = _compiled("residual")
    art = tmp_path / "art"
    write_artifact(compiled, art, data)
    for driver in ("c", "python"):
        with pytest.raises(SystemExit) as e:
            qaccel_run.main([str(art), "--driver", driver, "--outputs-dir",
                             str(tmp_path / driver)])  # fmt: skip
        assert e.value.code == 0
    for a, b in zip(sorted((tmp_path / "c").iterdir()), sorted((tmp_path / "python").iterdir()),
                    strict=True):  # fmt: skip
        np.testing.assert_array_equal(np.load(a), np.load(b))
    assert "through the C driver" in capsys.readouterr().out


@needs_cc
def test_cli_target_vta_driver_c_compares_with_litert(tmp_path, capsys, oracle):
    """`--target vta --driver c`: the driver generated in memory, bit-exact with LiteRT."""
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(FIXTURE_MODELS / "small_cnn.tflite"), "--target", "vta",
                         "--config", "vta-store-requant", "--driver", "c",
                         "--outputs-dir", str(tmp_path), "--compare-litert"])  # fmt: skip
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert "through the C driver" in out and "(bit-exact)" in out


def test_driver_c_with_the_python_simulator_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(FIXTURE_MODELS / "small_cnn.tflite"), "--target", "vta",
                         "--driver", "c", "--simulator", "python",
                         "--outputs-dir", str(tmp_path)])  # fmt: skip
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--simulator python needs --driver python" in err
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(tmp_path), "--driver", "c", "--runtime", "litert",
                         "--outputs-dir", str(tmp_path / "o")])  # fmt: skip
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--driver c" in err and "--runtime" in err


def _corrupt(compiled, layer: int, insn: int):
    """Give instruction `insn` of layer `layer` of vta_fn_0 an opcode that does not exist."""
    lay = compiled.functions["vta_fn_0"].layers[layer]
    words = np.array(lay.words, np.uint64).reshape(-1, 2)
    words[insn, 0] = (words[insn, 0] & ~np.uint64(7)) | np.uint64(7)
    lay.words = words
    return lay


@needs_cc
def test_layer_error_is_one_line_naming_function_layer_and_instruction():
    from qaccel.targets.vta.simulator import SimulationError, simulate

    compiled, _ = _compiled("residual")
    lay = _corrupt(compiled, 2, 3)
    fn = compiled.functions["vta_fn_0"]
    with pytest.raises(SimulationError) as expected:
        simulate(lay.words, lay.uops, fn.image, compiled.config)
    assert expected.value.index == 3
    inputs = random_inputs(entry_function(compiled.module), 0)
    with pytest.raises(cdr.DriverError) as e:
        _run_c(compiled, inputs)
    assert str(e.value) == f"vta_fn_0: QACCEL_VTA: layer 2, {expected.value}"
    assert "\n" not in str(e.value)


@needs_cc
def test_cli_layer_error_is_one_line(tmp_path, capsys):
    compiled, data = _compiled("residual")
    _corrupt(compiled, 1, 2)
    write_artifact(compiled, tmp_path / "art", data)
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(tmp_path / "art"), "--driver", "c", "--outputs-dir",
                         str(tmp_path / "out")])  # fmt: skip
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("qaccel-run: error: vta_fn_0: QACCEL_VTA: layer 1, instruction 2 (")
    with pytest.raises(SystemExit) as e:  # the run plan: one line too
        qaccel_run.main([str(tmp_path / "art"), "--outputs-dir", str(tmp_path / "out")])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert err.startswith("qaccel-run: error: vta_fn_0: QACCEL_VTA: layer 1, instruction 2 (")


@needs_cc
def test_a_function_without_a_program_is_refused_with_one_line():
    """A function the program runner cannot run (here: as if its host ops were not
    implemented) has no program: model.c lists it without one, the runner's C API refuses to
    load it, and a call names it and why."""
    compiled, _ = _compiled("residual")
    programs = {"vta_fn_0": (None, "vta_fn_0: host op accel.x (#3) is not supported by the "
                                   "program runner")}  # fmt: skip
    files = driver_files(compiled, programs)
    assert "driver/vta_fn_0.qprog" not in files
    assert "No program: vta_fn_0: host op accel.x (#3)" in files["driver/model.c"].decode()
    lib = cdr.load_driver(cdr.build_driver({n: files[f"driver/{n}"] for n in cdr.DRIVER_FILES}))
    runner = cdr.Runner(lib, compiled, programs)
    assert lib.qaccel_runner_load(runner.handle, 0, None, 0) != 0
    assert runner.error() == "vta_fn_0 has no program (see model.c)"
    inputs = random_inputs(entry_function(compiled.module), 0)
    with pytest.raises(cdr.DriverUnavailable) as e:
        _run_c(compiled, inputs, runner=runner)
    assert str(e.value) == ("the C driver cannot run @vta_fn_0: vta_fn_0: host op accel.x (#3) "
                            "is not supported by the program runner")  # fmt: skip


def test_without_a_compiler_driver_c_fails_with_one_line(tmp_path, monkeypatch, capsys):
    compiled, data = _compiled("small_cnn")
    art = tmp_path / "art"
    write_artifact(compiled, art, data)
    monkeypatch.setenv("CC", str(tmp_path / "no-such-cc"))
    monkeypatch.setenv("QACCEL_CACHE_DIR", str(tmp_path / "cache"))
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(art), "--driver", "c", "--outputs-dir", str(tmp_path / "o")])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("qaccel-run: error: --driver c needs a C "
                                                   "compiler")  # fmt: skip


def _libasan():
    if shutil.which("gcc") is None:
        return None
    out = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True)
    path = out.stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


ASAN_FLAGS = ("-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
              "-fno-sanitize-recover=all")  # fmt: skip


@pytest.mark.skipif(_libasan() is None, reason="needs gcc with AddressSanitizer")
def test_sanitizers(tmp_path):
    """The driver library built with -fsanitize=address,undefined (the runner, the program
    runner and libqaccel_vta) runs a fixture with host ops in its accelerator function, twice on
    one runner, on two runners in two threads at once, and a failing layer, cleanly: any
    report aborts the subprocess. (Compiling the model and the libraries happens here, outside
    the sanitized process, which is slow.)"""
    compiled, data = _compiled("residual")
    write_artifact(compiled, tmp_path / "good", data)
    for seed in (0, 1):
        inputs = random_inputs(entry_function(compiled.module), seed)
        np.savez(tmp_path / f"in{seed}.npz", *inputs)
        np.savez(tmp_path / f"out{seed}.npz", *run_compiled(compiled, inputs))
    _corrupt(compiled, 1, 2)
    write_artifact(compiled, tmp_path / "bad", data)
    for name in ("good", "bad"):
        from qaccel.backends.vta.artifact import load_artifact

        cdr.build_driver(cdr.driver_sources(load_artifact(tmp_path / name)),
                         out_dir=tmp_path / name / "lib",
                         cc="gcc", extra_flags=ASAN_FLAGS)  # fmt: skip
    code = textwrap.dedent(
        """
        import numpy as np
        from pathlib import Path
        from qaccel.backends.vta import cdriver_runtime as cdr
        from qaccel.backends.vta.artifact import load_artifact
        root = Path(%r)
        good = load_artifact(root / "good")
        runner = cdr.Runner(cdr.load_driver(root / "good" / "lib" / cdr.LIB_NAME), good)
        for seed in (0, 1):
            ins, outs = (np.load(root / f"{k}{seed}.npz") for k in ("in", "out"))
            inputs = [ins[f"arr_{k}"] for k in range(len(ins.files))]
            got = cdr.run_compiled_c(good, inputs, runner=runner)
            for k, x in enumerate(got):
                np.testing.assert_array_equal(x, outs[f"arr_{k}"])
            assert len(got) == len(outs.files)
        runner.close()
        import threading  # two runners of two loads of the model, in two threads at once
        copies = [load_artifact(root / "good") for _ in range(2)]
        runners = [cdr.Runner(cdr.load_driver(root / "good" / "lib" / cdr.LIB_NAME), c)
                   for c in copies]
        got = [None, None]
        def work(k):
            got[k] = [cdr.run_compiled_c(copies[k], inputs, runner=runners[k]) for _ in range(2)]
        threads = [threading.Thread(target=work, args=(k,)) for k in range(2)]
        for t in threads: t.start()
        for t in threads: t.join()
        for results in got:
            for outputs in results:
                for k, x in enumerate(outputs):
                    np.testing.assert_array_equal(x, outs[f"arr_{k}"])
        print("threads done")
        bad = load_artifact(root / "bad")
        try:
            cdr.run_compiled_c(bad, inputs, runner=cdr.Runner(
                cdr.load_driver(root / "bad" / "lib" / cdr.LIB_NAME), bad))
        except cdr.DriverError as e:
            print("error:", e)
        print("sanitized runs done")
        """
        % str(tmp_path)
    )
    env = {**os.environ, "LD_PRELOAD": _libasan(),
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    assert "runtime error" not in out.stderr and "AddressSanitizer" not in out.stderr
    assert "error: vta_fn_0: QACCEL_VTA: layer 1, instruction 2" in out.stdout
    assert "sanitized runs done" in out.stdout and "threads done" in out.stdout


# --------------------------------------------------------------------------------------------
# Names from the model
# --------------------------------------------------------------------------------------------


def test_c_text_escapes():
    assert c_comment("a*/b\n#include \"x\"") == 'a*\\/b\\x0a#include "x"'
    assert "*/" not in c_comment("**//**/") and "/*" not in c_comment("/**/*")
    assert "??" not in c_comment("??/??=???") and "\\x" not in c_comment("plain")
    assert c_comment("é\\") == "\\xc3\\xa9\\\\"
    assert c_string('a"b\\?\n') == '"a\\042b\\134\\077\\012"'
    assert c_identifier("vta_fn_0") == "vta_fn_0"
    for bad in ("a b", "int", "Vta", "_x", "qaccel_run", "1a", "é", "a*/b"):
        ident = c_identifier(bad)
        assert ident.isascii() and ident.replace("_", "a").isalnum() and ident[0].isalpha()
        assert ident != bad
    assert c_identifier("a b") != c_identifier("a-b")


HOSTILE = ['a*/b\n#include "x"', "??/\\ \t\r*/ /* // \u2028 é \U0001f600", "XXINVALIDUTF8XX",
           "y\x00z */ #error boom"]  # fmt: skip


def _hostile_model() -> bytes:
    from qaccel.frontend.builder import (
        QParams,
        TensorSpec,
        bias_tensor,
        per_axis_qparams,
        random_weights,
        single_op_model,
    )

    rng = np.random.default_rng(0)
    x_q = QParams.per_tensor(0.05, -3)
    w_q = per_axis_qparams(rng, channels=16, axis=0)
    model = single_op_model(
        "CONV_2D",
        inputs=[
            TensorSpec(HOSTILE[0], (1, 8, 8, 16), np.int8, x_q),
            TensorSpec(HOSTILE[1], (16, 3, 3, 16), np.int8, w_q,
                       data=random_weights(rng, (16, 3, 3, 16))),  # fmt: skip
            bias_tensor(HOSTILE[2], rng, x_q, w_q),
        ],
        outputs=[TensorSpec(HOSTILE[3], (1, 8, 8, 16), np.int8, QParams.per_tensor(0.1, 5))],
        options={"padding": "SAME", "stride_w": 1, "stride_h": 1,
                 "fused_activation_function": "RELU6"},  # fmt: skip
    )
    assert model.count(b"XXINVALIDUTF8XX") == 1
    return model.replace(b"XXINVALIDUTF8XX", b"\xff\xfe*/\xc3(\x80\xed\xa0\x80??/\n\x00")


@needs_cc
def test_hostile_tensor_names_never_reach_c_unsanitized(tmp_path, oracle):
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline, qaccel_context

    data = _hostile_model()
    module = import_tflite(data, "hostile.tflite")
    build_pipeline("vta-pipeline").apply(qaccel_context(), module)
    compiled = compile_module(module)
    assert sum(len(v) for v in compiled.layers.values()) >= 1
    files = driver_files(compiled)
    text = b"".join(files[f"driver/{n}"] for n in ("model.c", "model.h", "qaccel_vta.h"))
    assert all(b < 0x80 for b in text), "non-ASCII byte in the C driver"
    assert b"#include \"x\"" not in text.replace(b"\\x0a#include", b"")
    for line in text.decode().splitlines():
        assert not line.lstrip().startswith("#include \"x") and "#error" not in line.split("/*")[0]
    c = files["driver/model.c"].decode()
    # every comment closes where the generator closes it: no name ends or opens one
    assert c.count("/*") == c.count("*/")
    assert "a*\\/b\\x0a#include" in c  # the input's name, shown escaped in the slot table
    # it compiles strictly and computes the same as LiteRT
    lib = cdr.build_driver(cdr.driver_sources(compiled), out_dir=tmp_path)
    inputs = random_inputs(entry_function(compiled.module), 0)
    got = cdr.run_compiled_c(compiled, inputs, runner=cdr.Runner(cdr.load_driver(lib), compiled))
    ref = oracle(data, [inputs], keep_all_tensors=False)
    if ref.refused is None:
        for x, y in zip(got, ref.outputs[0], strict=True):
            np.testing.assert_array_equal(x, y)
    for x, y in zip(got, run_compiled(compiled, inputs), strict=True):
        np.testing.assert_array_equal(x, y)


@needs_cc
def test_hostile_function_name_gets_a_c_identifier(tmp_path):
    """An accelerator function whose symbol is no C identifier (IR given to qaccel-compile):
    the C names are sanitized, the table keeps the symbol (as a C string) for lookup."""
    compiled, _ = _compiled("residual")
    name = 'f*/"\n\u00e9'
    fn = compiled.functions.pop("vta_fn_0")
    fn.name = name
    compiled.functions[name] = fn
    for op in compiled.module.ops:
        if getattr(op, "sym_name", None) is not None and op.sym_name.data == "vta_fn_0":
            from xdsl.dialects.builtin import StringAttr

            op.sym_name = StringAttr(name)
    files = driver_files(compiled)
    assert all(b < 0x80 for b in files["driver/model.c"] + files["driver/model.h"])
    lib = cdr.load_driver(cdr.build_driver(
        {n: files[f"driver/{n}"] for n in cdr.DRIVER_FILES}, out_dir=tmp_path))  # fmt: skip
    assert lib.qaccel_runner_find(name.encode()) == 0


@needs_cc
def test_runner_c_api_checks_what_it_is_given(tmp_path):
    """Through the C API alone (as a host program uses it): a program of another size, a
    corrupt one, one for another hardware configuration, an unknown function, a call before
    a load and inputs of the wrong shape are refused, each with one line naming the
    function; a failed call leaves the runner usable."""
    import struct

    from qaccel.backends.vta.cdriver import function_programs
    from qaccel.backends.vta.program import writer

    compiled, _ = _compiled("residual")
    lib = cdr.load_driver(cdr.build_driver(cdr.driver_sources(compiled)))
    lib.qaccel_runner_error.restype = ctypes.c_char_p
    blob = function_programs(compiled)["vta_fn_0"][0]
    r = lib.qaccel_runner_open()

    def load(data: bytes) -> str:
        buf = np.frombuffer(data, np.uint8)
        assert lib.qaccel_runner_load(r, 0, buf.ctypes.data, buf.size) != 0
        return lib.qaccel_runner_error(r).decode()

    assert load(blob + bytes(8)).startswith("vta_fn_0: a program of ")
    flipped = bytearray(blob)
    flipped[-1] ^= 1
    assert "checksum mismatch" in load(bytes(flipped))
    other = bytearray(blob)
    struct.pack_into("<q", other, 64 + 8 * 10, 1 - struct.unpack_from("<q", other, 144)[0])
    assert load(writer.seal(bytes(other))) == ("vta_fn_0: the program was compiled for another "
                                               "hardware config than vta-default (store_requant "
                                               "differs)")  # fmt: skip
    x = np.zeros(8, np.int8)
    t = (cdr._Tensor * 1)(cdr._tensor(x))
    assert lib.qaccel_runner_call(r, 0, 1, t, 1, t) != 0
    assert lib.qaccel_runner_error(r) == b"vta_fn_0: program not loaded"
    assert lib.qaccel_runner_call(r, 5, 1, t, 1, t) != 0
    assert lib.qaccel_runner_error(r) == b"no accelerator function 5 (the model has 1)"
    buf = np.frombuffer(blob, np.uint8)
    assert lib.qaccel_runner_load(r, 0, buf.ctypes.data, buf.size) == 0
    assert lib.qaccel_runner_call(r, 0, 1, t, 1, t) != 0
    assert lib.qaccel_runner_error(r).startswith(b"vta_fn_0: QACCEL_VTA: input 0 has shape [8]")
    lib.qaccel_runner_close(r)
    runner = cdr.Runner(lib, compiled)
    inputs = random_inputs(entry_function(compiled.module), 0)
    for x, y in zip(_run_c(compiled, inputs, runner=runner), run_compiled(compiled, inputs),
                    strict=True):  # fmt: skip
        np.testing.assert_array_equal(x, y)
    runner.close()


@needs_cc
def test_model_without_accelerator_functions():
    """Nothing for the accelerator: the driver still builds strictly (empty table) and the
    host program runs."""
    from qaccel.frontend.builder import QParams, TensorSpec, single_op_model
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline, qaccel_context

    q = QParams.per_tensor(0.1, 0)
    model = single_op_model("ADD", [TensorSpec("a", (1, 4), np.int8, q),
                                    TensorSpec("b", (1, 4), np.int8, q)],
                            [TensorSpec("c", (1, 4), np.int8, q)])  # fmt: skip
    module = import_tflite(model)
    build_pipeline("vta-pipeline").apply(qaccel_context(), module)
    compiled = compile_module(module)
    assert not compiled.functions
    inputs = random_inputs(entry_function(compiled.module), 0)
    for x, y in zip(_run_c(compiled, inputs), run_compiled(compiled, inputs), strict=True):
        np.testing.assert_array_equal(x, y)


@needs_cc
def test_runner_refuses_a_driver_for_another_hardware_config():
    compiled, _ = _compiled("small_cnn")
    lib = cdr.load_driver(cdr.build_driver(cdr.driver_sources(compiled)))
    compiled.config = HardwareConfig.from_json("vta-store-requant")
    with pytest.raises(cdr.DriverUnavailable, match=r"another hardware config than "
                       r"'vta-store-requant' \(store_requant differ\)"):  # fmt: skip
        cdr.Runner(lib, compiled)


@needs_cc
@pytest.mark.parametrize("log_block", [2, 5])
def test_other_block_sizes(tmp_path, log_block):
    """4- and 32-lane blocks: the driver carries the configuration to the C machine and runs
    as the Python runtime does."""
    import json

    from qaccel.targets.vta.config import DEFAULT_CONFIG
    from test_vta_hw_configs import BLOCKS

    path = tmp_path / f"block{1 << log_block}.json"
    path.write_text(json.dumps({**DEFAULT_CONFIG.to_dict(), **BLOCKS[log_block],
                                "log_block": log_block, "name": path.stem}))  # fmt: skip
    module, _ = vta_lowered("residual", f'"{path}"')
    compiled = compile_module(module, HardwareConfig.from_json(path))
    assert compiled.layers["vta_fn_0"]
    inputs = random_inputs(entry_function(compiled.module), 0)
    for x, y in zip(_run_c(compiled, inputs), run_compiled(compiled, inputs), strict=True):
        np.testing.assert_array_equal(x, y)
