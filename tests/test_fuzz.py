"""The fuzz harnesses (`fuzz/`): the seed corpus replays cleanly through every harness, and a
short coverage-guided atheris run of each finds nothing (long runs: `python fuzz/run.py`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

FUZZ = Path(__file__).resolve().parent.parent / "fuzz"
sys.path.insert(0, str(FUZZ))

from harnesses import CORPUS, checked, harnesses  # noqa: E402

# Seconds of atheris per harness in the test suite (all together stay under a minute).
SHORT_RUN = {"tflite": 12, "mlir": 12, "isa": 12, "config": 6}


@pytest.mark.parametrize("name", list(harnesses()))
def test_seed_corpus_replays(name):
    run = checked(harnesses()[name])
    files = sorted((CORPUS / name).iterdir())
    assert files, f"no seed corpus for {name}"
    for f in files:
        run(f.read_bytes())


def test_harnesses_refuse_garbage_only_with_documented_errors():
    for name, harness in harnesses().items():
        run = checked(harness)
        for data in (b"", b"\x00" * 64, b"\xff" * 100, b"{" * 3000, b"TFL3" * 8):
            run(data)


@pytest.mark.parametrize("name", ["tflite", "mlir", "isa", "config"])
def test_short_atheris_run_finds_nothing(name):
    pytest.importorskip("atheris")
    seconds = SHORT_RUN[name]
    done = subprocess.run(
        [sys.executable, str(FUZZ / "run.py"), "--harness", name, "--seconds", str(seconds)],
        capture_output=True, text=True, timeout=seconds + 60,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"{name}: " in done.stdout and "no finding" in done.stdout
    assert f"fuzz/run.py: {name}: chunk 1 done: " in done.stderr  # progress, not silence
