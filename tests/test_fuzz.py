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


def test_short_program_fuzz_run_finds_nothing(tmp_path):
    """The program runner under AddressSanitizer and UBSan: 2,000 mutated programs (values,
    instruction fields, records; checksum made right again) open, run or fail with one line.
    The long campaign: `python fuzz/program_fuzz.py --iterations 1000000 --jobs 2`."""
    import shutil

    if shutil.which("gcc") is None:
        pytest.skip("needs gcc with AddressSanitizer")
    import program_fuzz

    from sanitized_build import cached

    try:
        exe = cached(tmp_path / "program_fuzz", program_fuzz.build, label="program-fuzz",
                     flags=program_fuzz.SANITIZE,
                     inputs=[FUZZ, program_fuzz.ROOT / "backends" / "vta" / "program",
                             program_fuzz.ROOT / "targets" / "vta" / "machine"])  # fmt: skip
    except subprocess.CalledProcessError as e:
        pytest.skip(f"no sanitizer build: {e.stderr[-200:]}")
    seeds = program_fuzz.seed_programs(tmp_path, ["small_cnn"], 1 << 15)
    assert seeds
    result = program_fuzz.campaign(exe, seeds, 2000, 7, 1)
    assert result["findings"] == []
    assert result["executions"] == 2000 and result["ran"] > 0
    outcomes = result["outcomes"]
    assert any("checksum mismatch" in k for k in outcomes)  # unsealed mutants
    assert sum(n for k, n in outcomes.items() if k != "ran") > 500  # refused mutants
