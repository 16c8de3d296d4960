"""docs/python-api.md's examples run: its ```python blocks, in order, as one script from the
repository root."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_python_api_examples_run():
    text = (ROOT / "docs" / "python-api.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(blocks) >= 4
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(ROOT.parent), os.environ.get("PYTHONPATH")]))}  # fmt: skip
    run = subprocess.run([sys.executable, "-c", "\n".join(blocks)], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=300)  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert "Pareto frontier of small_cnn" in run.stdout
