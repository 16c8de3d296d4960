"""The compile report's estimate of the host's work next to the simulated cycles: the host
steps of an accelerator program with its stops ("cycles with host steps"), and the whole
inference with the CPU's operators, packing and launches around the accelerator functions.
Every figure is checked against a hand computation with the cost model's rates
(`targets/vta/host_cost.py`'s `HOST_NS`), and `benchmarks/bench_host_steps.py` reads the same
figures the report gives (one pricing)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

from qaccel.backends.vta.report import format_report, host_estimate_lines
from qaccel.targets.vta.config import DEFAULT_CONFIG
from qaccel.targets.vta.host_cost import HOST_NS, program_host_steps

ROOT = Path(__file__).resolve().parent.parent
MHZ = DEFAULT_CONFIG.clock_mhz  # vta-default: 333 MHz


def _cycles(ns: float) -> int:
    return math.ceil(ns * MHZ / 1000)


def conv_lut_conv_softmax() -> bytes:
    """[1, 4, 4, 8] -> conv to 20 channels -> LOGISTIC -> conv to 10 channels -> RESHAPE to
    [1, 160] -> SOFTMAX: the table lookup is a host step between the two convolutions' layers,
    the reshape and the softmax run on the CPU after the accelerator function."""
    from qaccel.frontend.builder import (ModelBuilder, QParams, TensorSpec, bias_tensor,
                                         per_axis_qparams, random_weights)  # fmt: skip

    rng = np.random.default_rng(0)
    Q = QParams.per_tensor
    mb = ModelBuilder()
    g = mb.subgraph("main")

    def conv(x, cin, cout, name, out_q):
        wq = per_axis_qparams(rng, channels=cout, axis=0)
        w = g.const(f"{name}_w", random_weights(rng, (cout, 1, 1, cin)), wq)
        b = g.add_tensor(bias_tensor(f"{name}_b", rng, Q(0.05, -3), wq))
        return g.op("CONV_2D", [x, w, b], TensorSpec(name, (1, 4, 4, cout), np.int8, out_q),
                    {"padding": "VALID", "stride_w": 1, "stride_h": 1,
                     "fused_activation_function": "NONE"})  # fmt: skip

    x = g.input("x", (1, 4, 4, 8), q=Q(0.05, -3))
    c = conv(x, 8, 20, "c1", Q(0.06, -10))
    s = g.op("LOGISTIC", [c], TensorSpec("sig", (1, 4, 4, 20), np.int8, Q(1 / 256, -128)))
    c = conv(s, 20, 10, "c2", Q(0.1, 5))
    shape = g.const("shape", np.array([1, 160], np.int32))
    r = g.op("RESHAPE", [c, shape], TensorSpec("flat", (1, 160), np.int8, Q(0.1, 5)),
             {"new_shape": [1, 160]})
    g.output(g.op("SOFTMAX", [r], TensorSpec("prob", (1, 160), np.int8, Q(1 / 256, -128)),
                  {"beta": 1.0}))
    return mb.build()


@pytest.fixture(scope="module")
def compiled(tmp_path_factory):
    from qaccel import api

    path = tmp_path_factory.mktemp("model") / "conv_lut_conv_softmax.tflite"
    path.write_bytes(conv_lut_conv_softmax())
    return api.compile(path, "vta-default")


def test_host_steps_equal_a_hand_computation(compiled):
    t = compiled.report["totals"]
    assert len(compiled.functions) == 1
    # The table lookup: 20 channels packed into 2 blocks of 16 lanes, 4x4 pixels, one lookup
    # per element; it stops the program once between the two layers.
    lookup_ns = 1 * 2 * 4 * 4 * 16 * HOST_NS["lookup"]
    host = _cycles(lookup_ns + HOST_NS["sync"])
    assert (t["host_step_cycles"], t["program_stops"]) == (host, 1) == (837, 1)
    assert t["cycles_with_host_steps"] == t["cycles"] + host
    [fn] = compiled.report["functions"]
    assert fn["cycles"] == t["cycles"] == sum(r["cycles"] for r in compiled.report["layers"])
    assert (fn["host_step_cycles"], fn["program_stops"]) == (host, 1)
    assert fn["cycles_with_host_steps"] == t["cycles_with_host_steps"]


def test_whole_inference_equals_a_hand_computation(compiled):
    t = compiled.report["totals"]
    # Outside the accelerator function: the reshape (it moves lanes: a gather per element)
    # and the softmax, each with the runtime's dispatch; the packed input [1,1,4,4,1,16] and
    # output [1,1,4,4,1,16] packed and unpacked byte by byte and moved over the 16-byte DRAM
    # port; one launch.
    cpu_ns = (HOST_NS["dispatch"] + 160 * HOST_NS["gather"]
              + HOST_NS["dispatch"] + 160 * HOST_NS["softmax"])  # fmt: skip
    hop_bytes = 256 + 256
    hop = _cycles(hop_bytes * HOST_NS["pack"]) + hop_bytes // DEFAULT_CONFIG.bus_width_bytes
    launch = _cycles(HOST_NS["launch"])
    assert (t["cpu_ops"], t["cpu_op_cycles"]) == (2, _cycles(cpu_ns))
    assert (t["hop_bytes"], t["hop_cycles"]) == (hop_bytes, hop)
    assert (t["launches"], t["launch_cycles"]) == (1, launch)
    assert t["whole_inference_cycles"] == t["cycles_with_host_steps"] + _cycles(cpu_ns) + hop \
        + launch == 9891  # fmt: skip


def test_report_text_labels_the_estimates(compiled):
    t = compiled.report["totals"]
    lines = format_report(compiled.report).splitlines()
    total = next(i for i, line in enumerate(lines) if line.startswith("total: "))
    assert lines[total + 1] == (
        "host steps (estimated by the cost model, not simulated): 837 cycles, 1 program stop; "
        f"cycles with host steps (estimated): {t['cycles_with_host_steps']} = {t['cycles']} "
        "simulated + 837 estimated")
    assert lines[total + 2] == (
        f"whole inference (estimated): {t['whole_inference_cycles']} cycles = "
        f"{t['cycles_with_host_steps']} with host steps + {t['cpu_op_cycles']} for 2 CPU ops "
        f"outside accelerator functions + {t['hop_cycles']} packing and unpacking 512 bytes + "
        f"{t['launch_cycles']} for 1 launch")
    assert lines[total + 3].startswith("MACs on the accelerator: ")


def test_benchmark_reads_the_reports_pricing(compiled):
    spec = importlib.util.spec_from_file_location(
        "bench_host_steps", ROOT / "benchmarks" / "bench_host_steps.py")
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)  # type: ignore[union-attr]
    t = compiled.report["totals"]
    assert bench.host_steps(compiled) == (t["host_step_cycles"], t["program_stops"]) == (837, 1)


def test_artifact_report_keeps_the_estimate(compiled, tmp_path):
    from qaccel.backends.vta.artifact import write_artifact

    write_artifact(compiled, tmp_path / "out")
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["totals"]["whole_inference_cycles"] == \
        compiled.report["totals"]["whole_inference_cycles"]  # fmt: skip
    assert host_estimate_lines(report) == host_estimate_lines(compiled.report)


class _Op:
    """A stand-in op for counting program stops: no results, so no host work."""

    def __init__(self, name: str):
        self.name, self.regions, self.results = name, (), ()


def test_program_stops_count_runs_between_layers():
    a, b, c, d, e, f, g = (_Op(n) for n in ("accel.lut", "L1", "accel.lut", "accel.concat",
                                            "L2", "accel.lut", "L3"))  # fmt: skip
    layers = {b, e, g}
    # before the first layer: no stop; two steps between L1 and L2: one; one between L2, L3
    assert program_host_steps([a, b, c, d, e, f, g], layers) == (0.0, 2)
    assert program_host_steps([b, c, _Op("tfl.const"), e], layers) == (0.0, 1)
    assert program_host_steps([b, e, c], layers) == (0.0, 0)  # after the last layer: none


def test_several_functions_get_a_line_each():
    report = {"totals": {"cycles": 30, "host_step_cycles": 7, "program_stops": 2,
                         "cycles_with_host_steps": 37, "cpu_ops": 1, "cpu_op_cycles": 5,
                         "hop_bytes": 64, "hop_cycles": 4, "launches": 2,
                         "launch_cycles": 10, "whole_inference_cycles": 56},
              "functions": [{"function": "vta_fn_0", "cycles": 10, "host_step_cycles": 3,
                             "program_stops": 1, "cycles_with_host_steps": 13},
                            {"function": "vta_fn_1", "cycles": 20, "host_step_cycles": 4,
                             "program_stops": 1, "cycles_with_host_steps": 24}]}  # fmt: skip
    lines = host_estimate_lines(report)
    assert lines[1:3] == ["  vta_fn_0: 10 simulated + 3 estimated (1 program stop) = 13",
                          "  vta_fn_1: 20 simulated + 4 estimated (1 program stop) = 24"]
    assert lines[3].endswith("+ 10 for 2 launches")
    assert host_estimate_lines({"totals": {"cycles": 1}}) == []  # a report.json from before


def test_report_diff_compares_the_estimates(compiled):
    from qaccel.backends.vta.report import diff_reports, format_diff

    before = json.loads(json.dumps(compiled.report))
    for key in ("cycles_with_host_steps", "whole_inference_cycles"):
        before["totals"][key] += 100
    t = compiled.report["totals"]
    last = format_diff(diff_reports(before, compiled.report)).splitlines()[-1]
    a, b = t["cycles_with_host_steps"], t["whole_inference_cycles"]
    assert last == (f"estimated by the cost model: cycles with host steps: {a + 100} -> {a} "
                    f"({a / (a + 100):.2f}x); whole inference: {b + 100} -> {b} "
                    f"({b / (b + 100):.2f}x)")
    old = {"layers": [], "totals": {"cycles": 1}}  # a report.json from before the estimate
    assert "estimated by the cost model" not in format_diff(diff_reports(old, old))
