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
