"""An artifact folder is untrusted input: nothing it holds selects code to run, and every file
it names is read only when it is a regular file inside it (no symlink, no device, no FIFO, no
path outside), within the memory budget, and matching the manifest's hash. Each refusal is
one line from `qaccel-run`, and says nothing about files outside the artifact."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from qaccel.tools import qaccel_compile, qaccel_run
from test_robustness_cli import call, refused

SMALL_CNN = Path(__file__).parent / "fixtures" / "models" / "small_cnn.tflite"
PROGRAM = "driver/vta_fn_0.qprog"  # a file the run plan reads (the function's program)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("artifact") / "out"
    assert call(qaccel_compile, [SMALL_CNN, "-o", out, "--quiet"]) == 0
    return out


@pytest.fixture
def artifact(compiled, tmp_path) -> Path:
    copy = tmp_path / "a"
    shutil.copytree(compiled, copy)
    return copy


def _rehash(root: Path, rel: str, blob: bytes | None = None) -> None:
    """What an attacker does after editing a file: make the manifest agree."""
    manifest = json.loads((root / "manifest.json").read_text())
    if blob is not None:
        (root / rel).write_bytes(blob)
    manifest["files"][rel] = hashlib.sha256((root / rel).read_bytes()).hexdigest()
    (root / "manifest.json").write_text(json.dumps(manifest))


def _rename_in_manifest(root: Path, old: str, new: str) -> None:
    """Point the manifest (and the run plan) at `new` where they named `old`."""
    for name in ("manifest.json", "runtime.json"):
        text = (root / name).read_text().replace(json.dumps(old), json.dumps(new))
        (root / name).write_text(text)
    _rehash(root, "runtime.json")
    manifest = json.loads((root / "manifest.json").read_text())
    manifest["files"][new] = manifest["files"].pop(old, "0" * 64)
    (root / "manifest.json").write_text(json.dumps(manifest))


def _run(capsys, root: Path, expect: str) -> str:
    return refused(capsys, qaccel_run, [root, "--random-inputs", "0", "--outputs-dir",
                                        root / "o"], prog="qaccel-run", expect=expect)  # fmt: skip


@pytest.fixture
def kernel_artifact(tmp_path) -> Path:
    """An artifact whose run plan has "kernel" steps (LiteRT kernels on the CPU: pad_concat_slice's
    slices; small_cnn's softmax is a step of its own)."""
    out = tmp_path / "k"
    assert call(qaccel_compile, [SMALL_CNN.parent / "pad_concat_slice.tflite", "-o", out,
                                 "--quiet"]) == 0  # fmt: skip
    return out


def test_a_run_plan_naming_a_module_imports_nothing(kernel_artifact, capsys, tmp_path,
                                                     monkeypatch):  # fmt: skip
    artifact = kernel_artifact
    plan = json.loads((artifact / "runtime.json").read_text())
    steps = [s for f in plan["functions"].values() for s in f["steps"] if s[0] == "kernel"]
    assert steps
    (tmp_path / "payload_of_artifact.py").write_text("raise SystemExit('payload ran')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.chdir(tmp_path)
    for step in steps:
        step[3]["module"] = "payload_of_artifact"
    _rehash(artifact, "runtime.json", json.dumps(plan).encode())
    assert call(qaccel_run, [artifact, "--random-inputs", "0", "--outputs-dir",
                             artifact / "o"]) == 0  # fmt: skip
    assert "payload_of_artifact" not in sys.modules
    capsys.readouterr()
    steps[0][3]["name"] = "payload_of_artifact"
    _rehash(artifact, "runtime.json", json.dumps(plan).encode())
    _run(capsys, artifact, "names the kernel 'payload_of_artifact', which qaccel does not have")
    assert "payload_of_artifact" not in sys.modules


@pytest.mark.parametrize("target", ["/etc/passwd", "../outside.bin", "vta_fn_0/../../x.bin"])
def test_a_path_outside_the_artifact_is_not_read(artifact, capsys, target):
    _rename_in_manifest(artifact, PROGRAM, target)
    message = _run(capsys, artifact, "a path outside the artifact")
    assert "No such file" not in message and "Permission" not in message


def test_a_symlink_inside_the_artifact_is_not_followed(artifact, capsys, tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes((artifact / PROGRAM).read_bytes())
    (artifact / PROGRAM).unlink()
    os.symlink(secret, artifact / PROGRAM)
    _run(capsys, artifact, "which is a symbolic link")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_a_device_is_not_opened(artifact, capsys):
    os.mkfifo(artifact / "fifo.bin")
    _rename_in_manifest(artifact, PROGRAM, "fifo.bin")
    _run(capsys, artifact, "which is not a regular file")  # would block forever if opened
    if Path("/dev/zero").exists():
        os.symlink("/dev/zero", artifact / "zero.bin")
        _rename_in_manifest(artifact, "fifo.bin", "zero.bin")
        _run(capsys, artifact, "which is a symbolic link")


def test_a_file_above_the_memory_budget_is_not_read(artifact, capsys, monkeypatch):
    monkeypatch.setenv("QACCEL_MEMORY_LIMIT", "1K")
    _run(capsys, artifact, "above the memory limit")


def test_the_c_driver_an_artifact_carries_is_never_compiled(artifact, tmp_path, monkeypatch):
    """`--driver c` builds the driver qaccel generates from the artifact's checked data; a
    constructor added to the artifact's own `driver/model.c` never runs."""
    from qaccel.backends.vta import cdriver_runtime

    marker = tmp_path / "constructor-ran"
    model_c = artifact / "driver" / "model.c"
    model_c.write_text(model_c.read_text() + (
        '\n#include <stdio.h>\n__attribute__((constructor)) static void payload(void) '
        f'{{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n'))
    _rehash(artifact, "driver/model.c")
    if cdriver_runtime.shutil.which(cdriver_runtime._cc()) is None:
        pytest.skip("no C compiler")
    monkeypatch.setenv("QACCEL_CACHE_DIR", str(tmp_path / "cache"))
    assert call(qaccel_run, [artifact, "--driver", "c", "--random-inputs", "0",
                             "--outputs-dir", artifact / "o"]) == 0  # fmt: skip
    assert not marker.exists()


def test_a_configuration_name_with_a_newline_and_quotes_parses_back(tmp_path):
    """Every string qaccel prints into IR is escaped: `host.mlir` of a configuration named
    with a newline, a quote and a backslash parses back."""
    config = tmp_path / "hw.json"
    config.write_text(json.dumps({"name": 'evil\nname"\\x', "log_block": 4}))
    out = tmp_path / "out"
    mlp = SMALL_CNN.parent / "mlp.tflite"
    assert call(qaccel_compile, [mlp, "-o", out, "--config", config, "--quiet"]) == 0
    from conftest import parse_module

    module = parse_module((out / "host.mlir").read_text())
    names = {op.schedule.config.data for op in module.walk() if hasattr(op, "schedule")}
    assert names == {'evil\nname"\\x'}


def test_a_compile_replaces_the_artifact_whole(compiled, tmp_path, capsys):
    """Written beside, renamed into place: no file of an earlier artifact survives, the LiteRT
    models are in the manifest, and a folder that is not an artifact is never replaced."""
    out = tmp_path / "out"
    shutil.copytree(compiled, out)
    (out / "stale.bin").write_bytes(b"x")
    manifest = json.loads((out / "manifest.json").read_text())
    assert {"model.qaccel.tflite", "model.qaccel.dispatch.tflite"} <= set(manifest["files"])
    mlp = SMALL_CNN.parent / "mlp.tflite"
    assert call(qaccel_compile, [mlp, "-o", out, "--quiet"]) == 0
    assert not (out / "stale.bin").exists()
    assert json.loads((out / "manifest.json").read_text())["source_sha256"] == \
        hashlib.sha256(mlp.read_bytes()).hexdigest()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out"]  # nothing left beside it
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    refused(capsys, qaccel_compile, [mlp, "-o", mine, "--quiet"], prog="qaccel-compile",
            expect="is not a qaccel artifact")
    assert (mine / "notes.txt").read_text() == "keep me"


def test_a_failed_write_leaves_nothing_that_runs(tmp_path, capsys, monkeypatch):
    from qaccel.backends.vta import artifact

    real, real_file = Path.write_bytes, artifact._write_file
    calls = []

    def full_disk(self, data):
        calls.append(self)
        if len(calls) > 3:
            raise OSError(28, "No space left on device", str(self))
        return real(self, data)

    def full_disk_file(path, data):  # Staging's own writes (os.write, no Path)
        calls.append(path)
        if len(calls) > 3:
            raise OSError(28, "No space left on device", str(path))
        return real_file(path, data)

    monkeypatch.setattr(artifact.Path, "write_bytes", full_disk)
    monkeypatch.setattr(artifact, "_write_file", full_disk_file)
    out = tmp_path / "out"
    refused(capsys, qaccel_compile, [SMALL_CNN.parent / "mlp.tflite", "-o", out, "--quiet"],
            prog="qaccel-compile", expect="No space left on device", absent=[out])
    assert list(tmp_path.iterdir()) == []


def test_ctrl_c_is_one_line(tmp_path):
    import signal
    import subprocess

    child = subprocess.Popen(
        # Python's own Ctrl-C handler, whatever SIGINT disposition the test process passes on
        # (an ignored SIGINT stays ignored across exec, and Python then installs none).
        [sys.executable, "-c", "import signal, sys; "
         "signal.signal(signal.SIGINT, signal.default_int_handler); "
         "sys.argv = ['qaccel-compile'] + sys.argv[1:]; "
         "from qaccel.tools.launch import compile_main; sys.exit(compile_main())",
         str(SMALL_CNN.parent / "mobilenet_v2.tflite"), "-o", str(tmp_path / "out")],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True,
        env={**os.environ, "PYTHONUNBUFFERED": "1"})  # fmt: skip
    # The partition line ("vta: selected ...") comes after the imports and the first passes,
    # with the scheduling, the emission and the artifact still to do: the interrupt lands
    # inside the compile however fast the machine (a fixed sleep let a fast compile finish
    # first).
    assert child.stderr.readline().startswith("vta: selected")
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=60)
    if child.returncode == 0:
        pytest.skip("the compile finished before the interrupt")
    assert child.returncode == 130 and err.strip().splitlines()[-1:] == \
        ["qaccel-compile: error: interrupted"], err
    assert "Traceback" not in err
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["model.qaccel.dispatch.tflite", "model.qaccel.tflite"])
def test_a_litert_model_that_is_not_the_compiles_own_is_refused(artifact, capsys, name):
    pytest.importorskip("ai_edge_litert")
    way = "dispatch" if "dispatch" in name else "custom-op"
    args = [artifact, "--runtime", "litert", "--litert-path", way, "--random-inputs", "0",
            "--outputs-dir", artifact / "o"]  # fmt: skip
    other = SMALL_CNN.parent / "mlp.tflite"
    (artifact / name).write_bytes(other.read_bytes())  # e.g. stale, from an earlier compile
    refused(capsys, qaccel_run, args, prog="qaccel-run", expect="does not match the manifest")
    (artifact / name).unlink()
    manifest = json.loads((artifact / "manifest.json").read_text())
    del manifest["files"][name]
    (artifact / "manifest.json").write_text(json.dumps(manifest))
    refused(capsys, qaccel_run, args, prog="qaccel-run", expect="wrote no LiteRT model")


def test_a_litert_crash_is_one_line_not_ours():
    """LiteRT runs in a child: a crash there (here a SIGSEGV raised on purpose) is a
    LiteRtError naming the signal, and this process goes on."""
    import signal

    from qaccel.backends.litert.isolated import run_isolated
    from qaccel.backends.litert.runtime import LiteRtError

    def crash(model):
        os.kill(os.getpid(), signal.SIGSEGV)

    with pytest.raises(LiteRtError, match=r"LiteRT crashed \(SIGSEGV\) running 'm.tflite'"):
        run_isolated(crash, "m.tflite")
    assert run_isolated(lambda model, x: x * 2, "m.tflite", 21) == 42


def test_two_threads_run_two_artifacts_through_litert(compiled, tmp_path):
    """Errors belong to the run that caused them: a failing model and a good one, at once, in
    two threads, through both LiteRT paths."""
    pytest.importorskip("ai_edge_litert")
    from concurrent.futures import ThreadPoolExecutor

    import numpy as np

    from qaccel.backends.litert.paths import PATHS
    from qaccel.backends.litert.runtime import LiteRtError
    from qaccel.kernels.packed import random_arrays

    x = random_arrays([((1, 32, 32, 3), np.int8)], 0)
    for way in PATHS.values():
        good = compiled / way.model_file
        bad = tmp_path / way.model_file
        bad.write_bytes(good.read_bytes().replace(b"QACCPROG\x02", b"QACCPROG\x09"))
        expected = way.run(good, x)
        with ThreadPoolExecutor(2) as pool:
            runs = [pool.submit(way.run, m, x) for m in (good, bad, good, bad)]
        for m, run in zip((good, bad, good, bad), runs):
            if m == good:
                assert all(np.array_equal(a, b) for a, b in zip(run.result(), expected))
            else:
                with pytest.raises(LiteRtError, match="program format version 9"):
                    run.result()


@pytest.mark.parametrize("edit", ["no files", "functions a list", "slot out of range"])
def test_a_damaged_manifest_or_plan_is_one_line(artifact, capsys, edit):
    manifest = json.loads((artifact / "manifest.json").read_text())
    if edit == "no files":
        del manifest["files"]
    elif edit == "functions a list":
        manifest["functions"] = []
    else:
        plan = json.loads((artifact / "runtime.json").read_text())
        fn = next(f for f in plan["functions"].values() if f["steps"])
        fn["results"] = [10**6]
        (artifact / "runtime.json").write_text(json.dumps(plan))
        manifest["files"]["runtime.json"] = hashlib.sha256(
            (artifact / "runtime.json").read_bytes()).hexdigest()
    (artifact / "manifest.json").write_text(json.dumps(manifest))
    message = _run(capsys, artifact, "")
    assert len(message) < 400
