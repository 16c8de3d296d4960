"""What importing `qaccel-compile` loads: the modules a compile never uses stay out, so their
import time cannot come back unnoticed (one subprocess, about a second)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Modules a compile of a .tflite or .mlir model never needs at import time.
KEPT_OUT = [
    "xdsl.xdsl_opt_main",  # xdsl-opt's driver (qaccel-opt's base class)
    "xdsl.tools.command_line_tool",
    "qaccel.tools.qaccel_opt",
    "qaccel.api",
    "qaccel.explore",
    "matplotlib",  # --plot only
    "ray",
    "tensorflow",
    "ai_edge_litert",
    "qaccel.backends.litert.runtime",
    "qaccel.pipeline.pass_docs",  # --list-passes and the docs
    "qaccel.pipeline.semantics",  # --verify-semantics
    "importlib.metadata",  # entry points are read from entry_points.txt (kernels/entry_points.py)
]

# Modules the compile's setup (the pass registry, the context, the target) never needs either.
KEPT_OUT_OF_SETUP = ["importlib.metadata", "email", "qaccel.pipeline.pass_docs"]

_PROBE = """
import json, sys
import qaccel.tools.qaccel_compile
from qaccel.dialects import get_all_dialects
built = sorted(op.name for load in get_all_dialects().values() for op in load().operations
               if op.__dict__.get("_qaccel_format_program"))
imported = sorted(sys.modules)
from qaccel.dialects import qaccel_context
from qaccel.pipeline.spec import available_passes
from qaccel.targets.base import get_target
from qaccel.tools.pass_flags import pass_manager_for
passes = available_passes()
qaccel_context()
get_target("vta")
args = qaccel.tools.qaccel_compile.parser().parse_args(["m.tflite", "-o", "out"])
pass_manager_for(args, passes, "qaccel-compile")
print(json.dumps({"modules": imported, "formats_built": built, "setup": sorted(sys.modules)}))
"""


def test_the_compiler_imports_nothing_it_does_not_use():
    done = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True,
                          check=True)  # fmt: skip
    found = json.loads(done.stdout.strip().splitlines()[-1])
    loaded = set(found["modules"])
    assert "qaccel.tools.qaccel_compile" in loaded
    assert [m for m in KEPT_OUT if m in loaded] == []
    # Assembly formats are compiled when an op is first parsed or printed, not on import.
    assert found["formats_built"] == []
    assert [m for m in KEPT_OUT_OF_SETUP if m in set(found["setup"])] == []


def test_qaccel_run_parses_its_flags_without_xdsl_opts_driver():
    probe = ("import json, sys\nfrom qaccel.tools import qaccel_run\nqaccel_run.parser()\n"
             "print(json.dumps(sorted(sys.modules)))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)  # fmt: skip
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert [m for m in ("xdsl.xdsl_opt_main", "qaccel.tools.qaccel_opt") if m in loaded] == []


# Modules a whole compile never needs: importlib.metadata (entry points and the manifest's
# versions are read from the distributions' files, kernels/entry_points.py) and numpy.ma
# (imported by a first np.unique / np.isin call).
KEPT_OUT_OF_COMPILE = ["importlib.metadata", "email", "numpy.ma"]

_COMPILE_PROBE = """
import json, os, sys, tempfile
import qaccel.tools.qaccel_compile as qc
out = tempfile.mkdtemp()
try:
    qc.main([sys.argv[1], "-o", os.path.join(out, "a"), "--quiet"])
except SystemExit as e:
    assert not e.code, e.code
print(json.dumps(sorted(sys.modules)))
"""


def test_a_compile_imports_nothing_it_does_not_use():
    model = Path(__file__).parent / "fixtures" / "models" / "small_cnn.tflite"
    env = {**os.environ, "QACCEL_COMPILE_JOBS": "1"}
    done = subprocess.run([sys.executable, "-c", _COMPILE_PROBE, str(model)],
                          capture_output=True, text=True, check=True, env=env)  # fmt: skip
    loaded = set(json.loads(done.stdout.strip().splitlines()[-1]))
    assert "qaccel.backends.vta.codegen" in loaded
    assert [m for m in KEPT_OUT_OF_COMPILE if m in loaded] == []


# Modules only the compile's forked children use (the LiteRT models, the host IR's text): the
# parent imports none of them before it forks them, so their import time is spent on the
# second core, beside the emission.
CHILD_ONLY = [
    "qaccel.backends.litert.partitions",
    "qaccel.frontend.tflite_writer",
    "qaccel.dialects.printing",
    "flatbuffers.flexbuffers",
]

_FORK_PROBE = """
import json, os, sys, tempfile
import qaccel.tools.qaccel_compile as qc
seen = []
os.register_at_fork(before=lambda: seen.append(sorted(sys.modules)))
out = tempfile.mkdtemp()
try:
    qc.main([sys.argv[1], "-o", os.path.join(out, "a"), "--quiet"])
except SystemExit as e:
    assert not e.code, e.code
print(json.dumps(seen))
"""


def test_the_parent_leaves_the_childrens_modules_to_them():
    if len(os.sched_getaffinity(0)) < 2:  # as kernels/background.enabled()
        pytest.skip("the compile forks no helper here (one usable core)")
    env = {k: v for k, v in os.environ.items() if k != "QACCEL_COMPILE_JOBS"}
    model = Path(__file__).parent / "fixtures" / "models" / "small_cnn.tflite"
    done = subprocess.run([sys.executable, "-c", _FORK_PROBE, str(model)],
                          capture_output=True, text=True, check=True, env=env)  # fmt: skip
    forks = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(forks) >= 2, "the compile forked fewer helpers than the host IR and LiteRT's"
    for at_fork in forks:  # every fork, not the first only
        assert "qaccel.backends.vta.codegen" in at_fork
        assert [m for m in CHILD_ONLY if m in at_fork] == []
