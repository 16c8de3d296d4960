"""The C driver of a compiled model (`backends/vta/cdriver.py`): it compiles cleanly as C99,
copies the constants behind the arena, and runs exactly the artifact's instruction streams and
micro-ops, in order, with the host steps (slot writes and reads, host op segments) where the
simulated runtime takes them."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import vta_lowered
from qaccel.backends.vta.artifact import write_artifact
from qaccel.backends.vta.compile import compile_module
from qaccel.backends.vta.runtime import STEP_HOST, STEP_LAYER, STEP_READ, function_steps

HARNESS = Path(__file__).parent / "cdriver" / "harness.c"
CC = shutil.which("cc") or shutil.which("gcc")


@pytest.mark.skipif(CC is None, reason="no C compiler")
@pytest.mark.parametrize("name", ["residual", "small_cnn"])
def test_driver_runs_the_artifact_streams(name, tmp_path):
    module, _ = vta_lowered(name)
    compiled = compile_module(module)
    art = tmp_path / "art"
    write_artifact(compiled, art)
    exe = tmp_path / "harness"
    subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-Werror", "-O0", f"-I{art / 'driver'}",
                    str(HARNESS), str(art / "driver" / "model.c"), "-o", str(exe)],
                   check=True)  # fmt: skip
    dump = tmp_path / "dump.bin"
    run = subprocess.run([str(exe), str(dump), str(art / "vta_fn_0" / "constants.bin")],
                         check=False, capture_output=True, text=True)  # fmt: skip
    assert run.returncode == 0, run.stderr
    fn = compiled.functions["vta_fn_0"]
    f = next(o for o in compiled.module.ops if getattr(o, "sym_name", None)
             and o.sym_name.data == "vta_fn_0")  # fmt: skip
    plan = function_steps(fn, list(f.body.block.ops))
    steps, segments = plan.steps, plan.segments
    expected = []
    for kind, arg in steps:
        if kind == STEP_LAYER:
            expected.append("L")
        elif kind == STEP_HOST:
            expected.append(f"H {arg}")
        else:
            tag = "R" if kind == STEP_READ else "W"
            expected.append(f"{tag} {arg} {fn.slots[arg].nbytes}")
    assert run.stdout.split("\n")[:-1] == expected
    assert sum(k == STEP_LAYER for k, _ in steps) == len(fn.layers)
    assert len(segments) == sum(k == STEP_HOST for k, _ in steps)
    data = dump.read_bytes()
    at = 0
    for lay in fn.layers:
        n = int(np.frombuffer(data, "<u4", 1, at)[0])
        words = np.frombuffer(data, "<u8", 2 * n, at + 4).reshape(-1, 2)
        at += 4 + 16 * n
        m = int(np.frombuffer(data, "<u4", 1, at)[0])
        uops = np.frombuffer(data, "<u4", m, at + 4)
        at += 4 + 4 * m
        assert words.tobytes() == (art / "vta_fn_0" / f"layer_{lay.index}.bin").read_bytes()
        assert uops.tobytes() == (art / "vta_fn_0" / f"layer_{lay.index}.uops.bin").read_bytes()
    assert at == len(data)
