"""`benchmarks/bench_corpus_history.py`'s pricing of extracted facts: for the current code, the
facts `benchmarks/corpus_history_facts.py` extracts from a compiled model, priced by the
current cost model, give the compile report's figures (host steps and program stops, CPU
operators, packing, launches, the whole inference) exactly; an op the pricing cannot price
exactly is listed, never priced silently. (Checking out an older revision is the
benchmark's part, not tested here.)"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest

from qaccel.targets.vta.config import DEFAULT_CONFIG
from qaccel.targets.vta.host_cost import HOST_NS, cpu_cycles

ROOT = Path(__file__).resolve().parent.parent


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    module = sys.modules[name] = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


bench = _load("bench_corpus_history")
extract = _load("corpus_history_facts")


def _small_model(tmp_path) -> Path:
    from test_report_host_estimate import conv_lut_conv_softmax

    path = tmp_path / "conv_lut_conv_softmax.tflite"
    path.write_bytes(conv_lut_conv_softmax())
    return path


@pytest.mark.parametrize("model", ["conv_lut_conv_softmax", "transformer"])
def test_facts_priced_equal_the_report(model, tmp_path):
    from qaccel import api

    path = _small_model(tmp_path) if model == "conv_lut_conv_softmax" else \
        ROOT / "tests" / "fixtures" / "corpus" / "transformer.tflite"  # fmt: skip
    compiled = api.compile(path, "vta-default")
    facts = json.loads(json.dumps(extract.model_facts(compiled)))  # as the subprocess gives it
    fig = bench.price(facts, compiled.config)
    t = compiled.report["totals"]
    assert fig["notes"] == []
    assert fig["partitions"] == len(compiled.functions)
    assert fig["accelerator_cycles"] == t["cycles"] == facts["report_cycles"]
    for key in ("host_step_cycles", "program_stops", "cpu_ops", "cpu_op_cycles", "hop_bytes",
                "hop_cycles", "launches", "launch_cycles", "whole_inference_cycles"):
        assert fig[key] == t[key], key
    assert fig["whole_inference_cycles"] == facts["report_whole_inference_cycles"]
    if model == "conv_lut_conv_softmax":  # one lookup step between two layers: one stop
        assert (fig["program_stops"], fig["cpu_ops"], fig["launches"]) == (1, 2, 1)


def _op(name, results, operands=(), macs=0, props=None):
    return {"name": name, "operands": list(operands), "results": list(results), "macs": macs,
            "props": props or {}}  # fmt: skip


def _facts(body, outside=()):
    return {"partitions": 1, "fallbacks": 0,
            "functions": [{"name": "f", "cycles": 100, "layers": 2, "body": body}],
            "outside": {"ops": list(outside), "launches": 1, "hop_bytes": 0}}  # fmt: skip


def test_unpriceable_ops_are_listed_at_the_default_rate():
    layer = {"layer": True}
    old_kind = {"layer": False, "ops": [_op("accel.retired_op", [[1, 4, 4, 16]])]}
    no_window = {"layer": False, "ops": [_op("accel.max_pool2d", [[1, 2, 2, 16]])]}
    fig = bench.price(_facts([layer, old_kind, no_window, layer]), DEFAULT_CONFIG)
    # both at the gather rate per element of their result, one program stop between layers
    ns = (4 * 4 * 16 + 2 * 2 * 16) * HOST_NS["gather"] + HOST_NS["sync"]
    assert (fig["host_step_cycles"], fig["program_stops"]) == (cpu_cycles(ns, DEFAULT_CONFIG), 1)
    assert any(n.startswith("accel.retired_op: not an op of the current dialects")
               for n in fig["notes"])  # fmt: skip
    assert any(n.startswith("accel.max_pool2d: its facts lack") for n in fig["notes"])


def test_a_cpu_op_without_macs_facts_and_a_host_gemm_are_listed():
    layer = {"layer": True}
    gemm = {"layer": False, "ops": [_op("accel.dense_zp", [[1, 16]], macs=4096)]}
    no_macs = _op("tfl.fully_connected", [[1, 10]], macs=None)
    fig = bench.price(_facts([layer, gemm, layer], [no_macs]), DEFAULT_CONFIG)
    assert fig["cpu_op_cycles"] == cpu_cycles(HOST_NS["dispatch"] + 10 * HOST_NS["gather"],
                                              DEFAULT_CONFIG)  # fmt: skip
    assert any(n.startswith("tfl.fully_connected: its facts lack") for n in fig["notes"])
    assert any(n.startswith("accel.dense_zp: a GEMM left as a host step") for n in fig["notes"])
    assert any("4096 MACs" in n for n in fig["notes"])


def test_an_int8_tfl_operator_on_the_cpu_is_priced_as_its_q_form():
    int8 = "!quant.uniform<i8:f32, 0.00390625:-128>"
    softmax = dict(_op("tfl.softmax", [[1, 10]], [[1, 10]]), element=int8)
    shape = dict(_op("tfl.reshape", [[2]], [[4], [1]]), element="i32")
    fig = bench.price(_facts([{"layer": True}], [softmax, shape]), DEFAULT_CONFIG)
    ns = 2 * HOST_NS["dispatch"] + 10 * HOST_NS["softmax"] + 2 * HOST_NS["gather"]
    assert fig["cpu_op_cycles"] == cpu_cycles(ns, DEFAULT_CONFIG)
    assert fig["notes"] == ["tfl.softmax on the CPU: priced as q.softmax, the current IR's "
                            "form of the same int8 operator"]  # fmt: skip
