"""The simulators' budgets (targets/vta/budget.py): the Python reference and the C machine
refuse the same programs with the same message, before running them, and the C machine reads
QACCEL_STEP_LIMIT / QACCEL_MEMORY_LIMIT itself for its C callers."""

from __future__ import annotations

import numpy as np
import pytest
from qaccel.targets.vta import budget, cmachine
from qaccel.targets.vta.asm import assemble
from qaccel.targets.vta.simulator import SimulationError, simulate, timing

pytestmark = pytest.mark.skipif(not cmachine.available(), reason="no C machine")

PROGRAM = """\
.uop 0 0 0
.uop 1 0 0
.dram 4096
load.uop sram=0 dram=0 y=1 x=2
gemm.reset uop=0:2 iter=1,1
load.inp sram=0 dram=0 y=1 x=1 ypad=1,1
load.wgt sram=0 dram=0 y=1 x=1 push_next
gemm uop=0:2 iter=30,20 pop_prev
finish
"""
# 1+2, 1+2, 1+3, 1+1, 1+1200, 1: the running counts 3, 6, 10, 12, 1213, 1214
STEPS = 1214


def outcome(run):
    try:
        run()
        return None
    except SimulationError as e:
        return e.index, e.kind, str(e)


@pytest.mark.parametrize("functional", [True, False])
def test_step_budget_agrees(functional):
    prog = assemble(PROGRAM)
    fn = simulate if functional else timing
    for limit, index in [(None, None), (STEPS, None), (STEPS - 1, 5), (1212, 4), (12, 4),
                         (11, 3), (2, 0)]:  # fmt: skip
        got = {sim: outcome(lambda: fn(prog, simulator=sim, step_limit=limit))
               for sim in ("python", "c")}  # fmt: skip
        assert got["python"] == got["c"], limit
        assert (got["c"] or (None,))[0] == index, (limit, got["c"])
    assert "1213 steps up to this instruction" in outcome(
        lambda: fn(prog, simulator="c", step_limit=1212))[2]


def test_steps_are_counted_exactly():
    from qaccel.targets.vta.isa import decode

    prog = assemble(PROGRAM)
    assert budget.check_steps(decode(prog.words), prog.config, None) == STEPS


@pytest.mark.parametrize("dram", [None, np.zeros(1 << 20, np.uint8)])
def test_memory_budget_agrees(dram):
    prog = assemble(PROGRAM)
    dram_len = 4096 if dram is None else len(dram)
    need = sum(budget.state_bytes(prog.config, len(prog), dram_len, True))
    for limit in (need, need - 1, 1000):
        got = {sim: outcome(lambda: simulate(prog, None, dram, simulator=sim, memory_limit=limit))
               for sim in ("python", "c")}  # fmt: skip
        assert got["python"] == got["c"]
        assert (got["c"] is None) == (limit >= need)
    assert "above the memory limit of 1000 bytes (raise it with QACCEL_MEMORY_LIMIT)" in got["c"][2]


def test_the_c_machine_checks_memory_itself(monkeypatch):
    """A C caller (no Python pre-check): the machine's own check, with the same message."""
    prog = assemble(PROGRAM)
    dram = np.zeros(1 << 20, np.uint8)
    monkeypatch.setattr(budget, "check_state", lambda *a: None)  # only the C check is left
    c = outcome(lambda: cmachine.simulate(prog, None, dram, memory_limit=10_000))
    monkeypatch.undo()
    py = outcome(lambda: simulate(prog, None, dram, simulator="python", memory_limit=10_000))
    assert c == py and "above the memory limit of 9.8 KiB" in c[2]


@pytest.mark.parametrize("text,limit", [
    ("100", 100), ("1213", 1213), ("1K", 1024), ("1.5k", 1536), ("2kib", 2048), (" 3 KB ", 3072), ("1b", 1),
    ("none", None), ("0", None), ("", budget.DEFAULT_STEP_LIMIT),
    ("1e3", "bad"), ("2.0001K", "bad"), ("5Gi", "bad"), ("lots", "bad"), ("-1", "bad"),
])  # fmt: skip
def test_the_c_machine_reads_the_environment(monkeypatch, text, limit):
    """vta_run.step_limit = 0: the C machine parses QACCEL_STEP_LIMIT as Python does."""
    monkeypatch.setenv("QACCEL_STEP_LIMIT", text)
    try:
        expected = budget.resolve_limits()[0]
    except SimulationError as e:
        expected = str(e)
    assert expected == limit or (limit == "bad" and "expected a number" in expected)
    # What a C caller gets: vta_run limits 0 ("the environment's"), no Python pre-check.
    monkeypatch.setattr(cmachine, "_limit", lambda value: 0)
    monkeypatch.setattr(budget, "resolve_limits", lambda *a: (None, None))
    prog = assemble(PROGRAM)
    c = outcome(lambda: cmachine.simulate(prog))
    monkeypatch.undo()
    if limit == "bad":
        assert c == (None, None, expected)
    else:
        assert c == outcome(lambda: simulate(prog, simulator="python", step_limit=limit))


def test_the_python_reference_defaults_to_a_lower_step_limit(monkeypatch):
    """The Python reference holds per-iteration index arrays (2**28 GEMM steps: 139 s, 4.1 GB),
    so unless QACCEL_STEP_LIMIT is set it stops at 2**25; the C machine's default is 2**28."""
    from qaccel.targets.vta.isa import decode

    monkeypatch.delenv("QACCEL_STEP_LIMIT", raising=False)
    prog = assemble(PROGRAM.replace("iter=30,20", "iter=4096,4097"))
    steps = budget.check_steps(decode(prog.words), prog.config, None)
    assert budget.PYTHON_DEFAULT_STEP_LIMIT < steps < budget.DEFAULT_STEP_LIMIT
    refused = outcome(lambda: simulate(prog, simulator="python"))
    assert refused is not None and refused[:2] == (4, "GEMM") and "QACCEL_STEP_LIMIT" in refused[2]
    monkeypatch.setenv("QACCEL_STEP_LIMIT", str(steps - 1))
    assert outcome(lambda: timing(prog, simulator="python")) == outcome(
        lambda: timing(prog, simulator="c"))
