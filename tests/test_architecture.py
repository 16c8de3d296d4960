"""The layering of the package holds: `lint-imports` checks the contracts in pyproject.toml
(each stage imports only the stages below it; no import cycles between modules)."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def test_import_contracts_hold():
    exe = shutil.which("lint-imports") or str(Path(sys.executable).parent / "lint-imports")
    if not Path(exe).exists():
        pytest.fail("lint-imports is missing: install qaccel with the 'test' extra")
    run = subprocess.run([exe, str(ROOT / "pyproject.toml")], capture_output=True, text=True,
                         cwd=ROOT.parent)  # fmt: skip
    assert run.returncode == 0, run.stdout[-4000:] + run.stderr[-2000:]


def test_compiler_takes_layout_arithmetic_from_kernels_not_the_interpreter():
    """Packing math (`kernels/layout.py`) sits below everything that needs it: the lowering,
    the passes and the backends never reach into the interpreter for it."""
    offenders = []
    for folder in ("lowering", "passes", "backends", "targets", "dialects"):
        for path in (ROOT / folder).rglob("*.py"):
            for line in path.read_text().splitlines():
                if "accel_semantics import" in line and any(
                    name in line for name in ("pack", "split_order", "split_shape")
                ):
                    offenders.append(f"{path.relative_to(ROOT)}: {line.strip()}")
    assert not offenders, offenders
