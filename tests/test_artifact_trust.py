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


def test_a_run_plan_naming_a_module_imports_nothing(artifact, capsys, tmp_path, monkeypatch):
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
    _rename_in_manifest(artifact, "vta_fn_0/layer_0.bin", target)
    message = _run(capsys, artifact, "a path outside the artifact")
    assert "No such file" not in message and "Permission" not in message


def test_a_symlink_inside_the_artifact_is_not_followed(artifact, capsys, tmp_path):
    secret = tmp_path / "secret.bin"
    secret.write_bytes((artifact / "vta_fn_0" / "layer_0.bin").read_bytes())
    (artifact / "vta_fn_0" / "layer_0.bin").unlink()
    os.symlink(secret, artifact / "vta_fn_0" / "layer_0.bin")
    _run(capsys, artifact, "which is a symbolic link")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs here")
def test_a_fifo_or_a_device_is_not_opened(artifact, capsys):
    os.mkfifo(artifact / "fifo.bin")
    _rename_in_manifest(artifact, "vta_fn_0/layer_0.bin", "fifo.bin")
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
