"""partition-graph's cost choice for host steps on corpus models: a host step between two
layers stays inside its partition (the hop, with its launch, costs more than the op), one at a
partition's edge may run on the CPU; `--explain-partitioning` prints both choices per decision
point. The model's meaning under each choice is `test_corpus.py`'s (bit-exact at every stage)."""

from __future__ import annotations

import contextlib
import io
import re
import subprocess
import sys
from pathlib import Path

from xdsl.dialects import func

from qaccel import api
from qaccel.passes.partition_graph import PartitionGraphPass
from qaccel.targets.base import HopSummary
from qaccel.targets.vta.config import DEFAULT_CONFIG
from qaccel.targets.vta.host_cost import HOST_NS, vta_host_step_cost

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
DECISION = re.compile(
    r"^vta: host step or CPU: (?P<op>.+), (?P<step>.+) (?P<where>inside its partition|at its "
    r"partition's edge): host step (?P<inside>-?\d+) cycles \((?P<iterms>[^)]*)\); "
    r"CPU (?P<outside>-?\d+) cycles \((?P<oterms>[^)]*)\); chosen: (?P<choice>host step|CPU)"
    r"(?P<forced> \(host-steps option\))?$"
)


def _partition(name: str, **options):
    module = api.import_model(CORPUS / f"{name}.tflite")
    api.run_pipeline(module, "vta-pipeline{stop-after=annotate-target}")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        api.run_pipeline(module, PartitionGraphPass(explain=True, **options))
    functions = [op for op in module.ops if isinstance(op, func.FuncOp)
                 and "qaccel.target" in op.attributes]  # fmt: skip
    decisions = [DECISION.match(line) for line in err.getvalue().splitlines()
                 if line.startswith("vta: host step or CPU: ")]  # fmt: skip
    assert all(decisions), err.getvalue()
    return functions, decisions


def _terms(text: str) -> int:
    return sum(int(t.rsplit(" ", 1)[1]) for t in text.split(", "))


def test_table_lookups_between_layers_stay_inside_one_partition():
    functions, decisions = _partition("mobilenet_v3_small")
    assert len(functions) == 1
    assert len(decisions) == 11  # its HARD_SWISH ops, each a q.lut
    for d in decisions:
        assert d["step"] == "a table lookup" and d["where"] == "inside its partition"
        assert d["choice"] == "host step" and not d["forced"]
        assert int(d["inside"]) < int(d["outside"])
        assert _terms(d["iterms"]) == int(d["inside"]) and _terms(d["oterms"]) == int(d["outside"])
        assert "launch " in d["oterms"]


def test_running_every_host_step_on_the_cpu_splits_the_partition():
    functions, decisions = _partition("mobilenet_v3_small", host_steps="cpu")
    assert len(functions) > 1
    assert decisions and all(d["choice"] == "CPU" and d["forced"] for d in decisions)


def test_concatenations_at_partition_edges_run_on_the_cpu_when_cheaper():
    """UNet's skip concatenations. skip3's sits between the transposed convolution and the
    convolution after it, inside one partition: running it on the CPU would split the
    partition (a launch, packs, DRAM), so it stays a host step. skip2's and skip1's start a
    partition (their inputs come from the CPU's upsampling), so no launch is at stake: where
    the packed layout's padded lanes cost more than a CPU operator's dispatch (skip1: a third
    more packed lanes than channels to copy) the copy leaves the partition; skip2's stays. The
    partitions stay 3."""
    inside, kept = _partition("unet", host_steps="inside")
    functions, decisions = _partition("unet")
    assert len(functions) == len(inside) == 3
    assert [d["choice"] for d in decisions] == ["host step", "host step", "CPU"]
    assert [d["where"] for d in decisions] == ["inside its partition"] + [
        "at its partition's edge"] * 2  # fmt: skip
    assert "launch 0" not in decisions[0].group(0)
    for d in decisions:
        cheaper_outside = int(d["outside"]) < int(d["inside"])
        assert cheaper_outside == (d["choice"] == "CPU")
    assert all(d["choice"] == "host step" and d["forced"] for d in kept)


def test_a_launch_costs_more_than_a_sync_and_only_host_steps_have_a_price():
    """A split adds a launch; a host step only stops the program for a while."""
    launch = int(HOST_NS["launch"] * DEFAULT_CONFIG.clock_mhz / 1000)
    assert launch > 3 * int(HOST_NS["sync"] * DEFAULT_CONFIG.clock_mhz / 1000)
    assert vta_host_step_cost(HopSummary((), (), (), (), (), 2), DEFAULT_CONFIG) is None


def test_qaccel_compile_explains_each_decision(tmp_path):
    result = subprocess.run(
        [sys.executable, "-m", "qaccel.tools.qaccel_compile", str(CORPUS / "unet.tflite"),
         "-o", str(tmp_path / "out"), "--explain-partitioning"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    lines = [line for line in result.stderr.splitlines() if "host step or CPU" in line]
    assert len(lines) == 3 and all(DECISION.match(line) for line in lines), result.stderr
    assert [line.rsplit("chosen: ", 1)[1] for line in lines] == ["host step", "host step", "CPU"]
    assert 'q.concat "unet_1/skip1_1/concat"' in lines[-1]
