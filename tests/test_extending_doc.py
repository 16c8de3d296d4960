"""docs/extending.md is true: its plugin package (built from the page's code blocks outside
the source tree, found through a `.dist-info` on PYTHONPATH, never installed) adds a target,
a fusion and a pass; the listings show them, fuse-composites reports the fusion, and failures
inside plugin code are one line naming the entry point."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "extending.md").read_text()


def _blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", DOC, re.S)


def build_plugin(where: Path, breakage: dict[str, str] | None = None) -> Path:
    """The documented package in `where`; `breakage` maps a file to a line to append."""
    for block in _blocks("python"):
        first, _, body = block.partition("\n")
        path = where / first.removeprefix("# ").strip()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body + (breakage or {}).get(path.name, ""))
    info = where / "qaccel_demo-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: qaccel-demo\nVersion: 0.1\n")
    # entry_points.txt is the pyproject tables without the prefix and the quotes.
    toml = _blocks("toml")[0].replace('[project.entry-points."', "[").replace('"]', "]")
    (info / "entry_points.txt").write_text(toml.replace('"', ""))
    (where / "ident.mlir").write_text(_blocks("mlir")[0])
    return where


def opt(plugin: Path, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(plugin), str(ROOT.parent)])}
    return subprocess.run([sys.executable, "-m", "qaccel.tools.qaccel_opt", *args], cwd=plugin,
                          env=env, capture_output=True, text=True, timeout=120)  # fmt: skip


def test_plugin_target_fusion_and_pass(tmp_path):
    plugin = build_plugin(tmp_path)
    listed = opt(plugin, "--list-targets")
    assert listed.returncode == 0, listed.stderr
    assert re.search(r"^demo +entry point 'qaccel_demo.target:make_target' - Demo accel",
                     listed.stdout, re.M), listed.stdout  # fmt: skip
    assert re.search(r"^vta +built-in", listed.stdout, re.M)
    fusions = opt(plugin, "--list-fusions")
    assert re.search(r"^demo.identity +entry point 'demo = qaccel_demo.fusions:FUSIONS'",
                     fusions.stdout, re.M), fusions.stdout  # fmt: skip
    assert re.search(r"^hard_swish +built-in", fusions.stdout, re.M)
    run = opt(plugin, "ident.mlir", "-p", "fuse-composites{report=true},demo-count-ops")
    assert run.returncode == 0, run.stderr
    assert ("fuse-composites: 1 fused: demo.identity x1 (entry point 'demo = "
            "qaccel_demo.fusions:FUSIONS')") in run.stderr  # fmt: skip
    assert re.search(r"demo-count-ops: \d+ ops", run.stderr)
    assert "qaccel.fused" in run.stdout
    model = ROOT / "tests" / "fixtures" / "models" / "small_cnn.tflite"
    run = opt(plugin, str(model), "-p", "legalize-tfl-to-q,annotate-target{target=demo}")
    assert run.returncode == 0, run.stderr


@pytest.mark.parametrize(("breakage", "args", "message"), [
    ({"target.py": "\ndef make_target():\n    raise RuntimeError('no silicon')\n"},
     ["--list-targets"],
     "target demo: entry point 'qaccel_demo.target:make_target' (qaccel.targets) raised "
     "RuntimeError: no silicon"),
    ({"fusions.py": "\nIdentity.check = lambda self, sig: 1 / 0\n"},
     ["ident.mlir", "-p", "fuse-composites"],
     "from entry point 'demo = qaccel_demo.fusions:FUSIONS' failed checking 'demo.identity': "
     "ZeroDivisionError"),
    ({"passes.py": "\nCountOpsPass.apply = lambda self, ctx, op: {}['missing']\n"},
     ["ident.mlir", "-p", "demo-count-ops"],
     "pass 'demo-count-ops' (qaccel_demo.passes.CountOpsPass, entry point 'demo = "
     "qaccel_demo.universe:DEMO_UNIVERSE' (xdsl.universe)) raised KeyError: 'missing'"),
    ({"fusions.py": "\nimport no_such_module\n"}, ["--list-fusions"],
     "fusion plugin entry point 'demo = qaccel_demo.fusions:FUSIONS' (group qaccel.fusions) "
     "failed to load: ModuleNotFoundError"),
    ({"universe.py": "\nraise ImportError('broken universe')\n"}, ["--list-passes"],
     "pass plugin entry point 'demo = qaccel_demo.universe:DEMO_UNIVERSE' (xdsl.universe) "
     "failed to load: ImportError: broken universe"),
])  # fmt: skip
def test_plugin_failures_are_one_line(tmp_path, breakage, args, message):
    run = opt(build_plugin(tmp_path, breakage), *args)
    assert run.returncode == 1 and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("qaccel-opt: error: ") and message in run.stderr, run.stderr
