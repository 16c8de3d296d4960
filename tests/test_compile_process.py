"""`qaccel-compile`'s own process: it collects garbage rarely and ends without the
interpreter's teardown (`tools/cli.py`'s `fewer_collections` and `end_process`); what it
prints, writes and returns is as before."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from pathlib import Path

from qaccel.tools.cli import fewer_collections

SMALL_CNN = Path(__file__).parent / "fixtures" / "models" / "small_cnn.tflite"
LAUNCH = "import sys; from qaccel.tools.launch import compile_main; sys.argv[0] = 'qaccel-compile'; compile_main()"


def _run(args: list[str], tmp_path: Path, stdout_file: bool = False):
    """The command in a child; with `stdout_file`, its stdout goes to a file (fully buffered,
    so output not flushed before the process ends would be lost)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if not stdout_file:
        return subprocess.run([sys.executable, *args], capture_output=True, text=True, env=env)
    out = tmp_path / "stdout.txt"
    with out.open("w") as f:
        done = subprocess.run([sys.executable, *args], stdout=f, stderr=subprocess.PIPE,
                              text=True, env=env)  # fmt: skip
    done.stdout = out.read_text()
    return done


def test_the_module_and_the_console_script_print_everything_and_write_the_artifact(tmp_path):
    for k, head in enumerate((["-m", "qaccel.tools.qaccel_compile"], ["-c", LAUNCH])):
        outdir = tmp_path / f"a{k}"
        done = _run([*head, str(SMALL_CNN), "-o", str(outdir)], tmp_path, stdout_file=True)
        assert done.returncode == 0, done.stderr
        lines = done.stdout.splitlines()
        assert lines[-1].startswith(f"wrote {outdir} in "), done.stdout  # the last line too
        assert "LiteRT models" in done.stdout
        assert json.loads((outdir / "manifest.json").read_text())["files"]
    a, b = tmp_path / "a0", tmp_path / "a1"
    assert sorted(p.relative_to(a) for p in a.rglob("*")) == \
        sorted(p.relative_to(b) for p in b.rglob("*"))  # fmt: skip


def test_errors_keep_their_line_and_status(tmp_path):
    for head in (["-m", "qaccel.tools.qaccel_compile"], ["-c", LAUNCH]):
        done = _run([*head, str(tmp_path / "missing.tflite"), "-o", str(tmp_path / "o")],
                    tmp_path)  # fmt: skip
        assert done.returncode == 1
        assert done.stderr.strip().splitlines() == [
            f"qaccel-compile: error: cannot open model '{tmp_path / 'missing.tflite'}': "
            "No such file or directory"
        ]
        done = _run([*head, str(SMALL_CNN)], tmp_path)  # no -o: an argument error
        assert done.returncode == 1 and done.stderr.startswith("qaccel-compile: error: ")


def test_end_process_statuses(tmp_path):
    code = ("import sys; from qaccel.tools.cli import end_process; print('out'); "
            "sys.stderr.write('err\\n'); end_process({})")  # fmt: skip
    for arg, status, err in (("None", 0, "err\n"), ("3", 3, "err\n"),
                             ("'why'", 1, "err\nwhy\n")):  # fmt: skip
        done = _run(["-c", code.format(arg)], tmp_path, stdout_file=True)
        assert (done.returncode, done.stdout, done.stderr) == (status, "out\n", err)


def test_fewer_collections_restores_the_collector():
    before = gc.get_threshold()
    frozen = gc.get_freeze_count()
    with fewer_collections(young=12_345):
        assert gc.get_threshold()[0] == max(12_345, before[0])
        assert gc.get_freeze_count() >= frozen
    assert gc.get_threshold() == before
    assert gc.get_freeze_count() == 0
