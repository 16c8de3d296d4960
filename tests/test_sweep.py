"""qaccel-sweep and the explore package: spec parsing and constraints, the table, the Pareto
plot and frontier, failing points as rows, resuming an interrupted sweep, the Ray executor."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qaccel.explore.executors import LocalExecutor
from qaccel.explore.result_store import ResultStore, pareto_front
from qaccel.explore.spec import SpecError, SweepSpec
from qaccel.explore.sweep import SweepError, _evaluate_task, collect_models, run_sweep
from qaccel.tools import qaccel_sweep

from conftest import FIXTURE_MODELS

SMALL = [FIXTURE_MODELS / "small_cnn.tflite", FIXTURE_MODELS / "mlp.tflite"]

# Three swept keys; log_block=3 with VTA's buffers is a configuration the ISA refuses.
GRID = {
    "grid": {"log_inp_buff_size": [14, 15], "store_requant": [False, True], "log_block": [3, 4]},
    "fixed": {"log_wgt_buff_size": 17},
    "constraints": ["total_sram_bytes <= 524288", "not (store_requant and log_inp_buff_size < 14)"],
}


def test_cli_sweep_writes_table_plot_and_frontier(tmp_path, capsys):
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(GRID))
    out = tmp_path / "out"
    with pytest.raises(SystemExit) as e:
        qaccel_sweep.main([*map(str, SMALL), "--spec", str(spec), "-o", str(out), "--jobs", "2"])
    assert e.value.code == 0
    printed = capsys.readouterr().out
    assert "Pareto frontier of small_cnn" in printed and "Pareto frontier of mlp" in printed
    assert "16 point(s): 8 ok, 8 failed" in printed
    lines = (out / "table.csv").read_text().splitlines()
    header = lines[0].split(",")
    for column in ("model", "log_block", "log_inp_buff_size", "log_wgt_buff_size",
                   "store_requant", "cycles", "ms", "gemm_utilization", "roofline_ratio",
                   "dram_bytes", "sram_bytes", "host_fallback_ops", "compile_s", "status"):
        assert column in header, column
    assert len(lines) == 17
    rows = [json.loads(line) for line in (out / "table.jsonl").read_text().splitlines()]
    refused = [r for r in rows if r["log_block"] == 3]
    assert refused and all("more than two 64-bit words" in r["status"] for r in refused)
    assert all(r["cycles"] is None for r in refused)
    ok = [r for r in rows if r["status"] == "ok"]
    assert len(ok) == 8 and all(r["cycles"] > 0 and r["sram_bytes"] > 0 for r in ok)
    # The store module's output stage is faster on the same buffers.
    by = {(r["model"], r["log_inp_buff_size"], r["store_requant"]): r["cycles"] for r in ok}
    assert by[("small_cnn", 15, True)] < by[("small_cnn", 15, False)]
    assert (out / "pareto.png").read_bytes()[:4] == b"\x89PNG"
    assert "Pareto frontier" in (out / "frontier.txt").read_text()
    # energy per inference: columns, the energy-latency frontier and its plot
    for column in ("executed_utilization", "energy_uj", "energy_mac_uj", "energy_alu_uj",
                   "energy_sram_uj", "energy_dram_uj"):
        assert column in header, column
    for r in ok:
        parts = sum(r[f"energy_{k}_uj"] for k in ("mac", "alu", "sram", "dram"))
        assert r["energy_uj"] == pytest.approx(parts) and r["energy_uj"] > 0
    assert "Pareto frontier of small_cnn (energy_uj vs ms)" in printed
    assert "(energy_uj vs ms)" in (out / "frontier.txt").read_text()
    assert (out / "energy.png").read_bytes()[:4] == b"\x89PNG"


def test_interrupted_sweep_resumes_without_recomputing(tmp_path):
    spec = SweepSpec.from_dict({"grid": {"log_inp_buff_size": [14, 15],
                                         "store_requant": [False, True]}})  # fmt: skip
    seen: list[dict] = []

    def interrupt_after_three(row):
        seen.append(row)
        if len(seen) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run_sweep(SMALL[:1], spec, tmp_path, LocalExecutor(1), on_row=interrupt_after_three)
    assert len(ResultStore(tmp_path / "results.jsonl").rows) == 3
    with (tmp_path / "results.jsonl").open("a") as f:
        f.write('{"key": "cut sh')  # killed while writing
    again: list[dict] = []
    result = run_sweep(SMALL[:1], spec, tmp_path, LocalExecutor(1), on_row=again.append)
    assert (result.computed, result.cached) == (1, 3) and len(again) == 1
    assert [r["key"] for r in seen] == [r["key"] for r in result.table][:3]
    rerun = run_sweep(SMALL[:1], spec, tmp_path, LocalExecutor(1))
    assert (rerun.computed, rerun.cached) == (0, 4)
    assert rerun.table.rows == result.table.rows


def test_changed_model_is_not_taken_from_the_cache(tmp_path):
    spec = SweepSpec.from_dict({"grid": {"store_requant": [True]}})
    models = {"m": SMALL[1].read_bytes()}
    assert run_sweep(models, spec, tmp_path, LocalExecutor(1)).computed == 1
    assert run_sweep(models, spec, tmp_path, LocalExecutor(1)).computed == 0
    models = {"m": SMALL[0].read_bytes()}  # same name, other content
    assert run_sweep(models, spec, tmp_path, LocalExecutor(1)).computed == 1


def test_point_over_time_limit_is_a_row(tmp_path, monkeypatch):
    import time

    from qaccel.explore import evaluate

    def slow_compile(*args):
        time.sleep(30)

    monkeypatch.setattr(evaluate, "compile_for", slow_compile)
    spec = SweepSpec.from_dict({"grid": {"log_acc_buff_size": [12]}})
    result = run_sweep(SMALL[:1], spec, tmp_path, LocalExecutor(1), timeout_s=0.5)
    assert result.table[0]["status"] == "timeout: compiling took more than 0.5 s"
    assert run_sweep(SMALL[:1], spec, tmp_path, LocalExecutor(1), timeout_s=0.5).computed == 0
    retried = run_sweep(SMALL[:1], spec, tmp_path, LocalExecutor(1), timeout_s=0.7)
    assert retried.computed == 1  # a longer time limit tries the point again


def _die(models, task):
    import os

    if task[1].as_dict()["store_requant"]:
        os._exit(3)  # the worker process dies (as when the OS kills it)
    return _evaluate_task(models, task)


def test_dead_worker_is_a_failed_row_tried_again(tmp_path, monkeypatch):
    from qaccel.explore import sweep

    spec = SweepSpec.from_dict({"grid": {"store_requant": [False, True]}})
    monkeypatch.setattr(sweep, "_evaluate_task", _die)
    result = run_sweep(SMALL[1:], spec, tmp_path, LocalExecutor(2))
    assert result.table[1]["status"].startswith("worker failed: BrokenProcessPool")
    monkeypatch.undo()
    again = run_sweep(SMALL[1:], spec, tmp_path, LocalExecutor(1))
    assert again.computed >= 1 and [r["status"] for r in again.table] == ["ok", "ok"]


def test_spec_constraints_and_sampling():
    spec = SweepSpec.from_dict({
        "grid": {"log_inp_buff_size": [13, 14, 15, 16], "log-wgt-buff-size": [16, 17, 18],
                 "bias_placement": ["alu", "preload"]},
        "constraints": ["inp_buff_bytes * 8 <= wgt_buff_bytes <= 2 ** 18",
                        "bias_placement == 'alu' or max(log_inp_buff_size, 14) == 14"],
    })  # fmt: skip
    points = spec.points()
    assert all(p.config is not None for p in points)
    for p in points:
        d = p.as_dict()
        assert (1 << d["log_inp_buff_size"]) * 8 <= 1 << d["log_wgt_buff_size"]
        assert d["bias_placement"] == "alu" or d["log_inp_buff_size"] <= 14
        assert dict(p.pipeline_options) == {"bias_placement": d["bias_placement"]}
    sampled = SweepSpec.from_dict({**spec_dict(spec), "samples": 3, "seed": 7}).points()
    assert len(sampled) == 3 and set(sampled) <= set(points)
    assert sampled == SweepSpec.from_dict({**spec_dict(spec), "samples": 3, "seed": 7}).points()


def spec_dict(spec: SweepSpec) -> dict:
    return {"grid": spec.grid, "constraints": spec.constraints}


@pytest.mark.parametrize(("data", "message"), [
    ({"grid": {"log_blok": [4]}}, "grid: unknown key 'log_blok'"),
    ({"grid": {"log_block": 4}}, "grid key 'log_block' needs a non-empty list"),
    ({"grid": {"log_block": [4]}, "fixed": {"log_block": 4}}, "both fixed and swept"),
    ({"gird": {}}, "unknown key(s) gird"),
    ({"constraints": ["__import__('os').system('true')"]}, "unsupported syntax"),
    ({"constraints": ["(lambda: 1)()"]}, "unsupported syntax"),
    ({"constraints": ["block.__class__"]}, "unsupported syntax"),
    ({"constraints": ["sram <= 1"]}, "unknown name 'sram'"),
    ({"constraints": ["total_sram_bytes <="]}, "syntax error"),
    ({"samples": -1}, "samples must be a non-negative integer"),
    ({"base": "vta-nope"}, "no such hardware config file or bundled config"),
])  # fmt: skip
def test_bad_specs_are_one_line_errors(data, message):
    with pytest.raises(SpecError) as e:
        SweepSpec.from_dict(data).points()
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize(("args", "message"), [
    (["nope.tflite"], "nope.tflite: no such model file or folder"),
    ([str(FIXTURE_MODELS / "README.md")], "expected a .tflite model or a folder"),
    ([str(SMALL[0]), "--spec", "missing.yaml"], "missing.yaml: cannot read sweep spec"),
    ([str(SMALL[0]), "--jobs", "0"], "--jobs must be at least 1"),
])  # fmt: skip
def test_cli_errors_are_one_line(tmp_path, capsys, args, message):
    spec = tmp_path / "s.yaml"
    spec.write_text("grid:\n  store_requant: [true]\n")
    argv = args if "--spec" in args else [*args, "--spec", str(spec)]
    with pytest.raises(SystemExit) as e:
        qaccel_sweep.main([*argv, "-o", str(tmp_path / "o"), "--quiet"])
    err = capsys.readouterr().err
    assert e.value.code == 1 and err.count("\n") == 1, err
    assert err.startswith("qaccel-sweep: error: ") and message in err, err


def test_yaml_spec_and_folder_of_models(tmp_path):
    spec = tmp_path / "s.yml"
    spec.write_text("grid:\n  store_requant: [true]\nconstraints: total_sram_bytes > 0\n")
    models = collect_models([FIXTURE_MODELS])
    assert {"small_cnn", "mlp", "mobilenet_v2"} <= set(models)
    assert SweepSpec.load(spec).points()[0].config.store_requant is True
    with pytest.raises(SweepError, match="no .tflite models"):
        collect_models([tmp_path])


def test_parquet_table(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    spec = SweepSpec.from_dict({"grid": {"store_requant": [True], "log_block": [3, 4]}})
    result = run_sweep(SMALL[:1], spec, tmp_path, LocalExecutor(1), plot=False)
    table = pq.read_table(tmp_path / "table.parquet").to_pylist()
    assert table == result.table.to_dicts() and len(table) == 2


def test_pareto_front_keeps_undominated_points():
    rows = [{"x": 1, "y": 9}, {"x": 2, "y": 5}, {"x": 2, "y": 7}, {"x": 3, "y": 6},
            {"x": 4, "y": 1}]  # fmt: skip
    assert [(r["x"], r["y"]) for r in pareto_front(rows, "x", "y")] == [(1, 9), (2, 5), (4, 1)]


def test_ray_executor_gives_the_same_table(tmp_path):
    ray = pytest.importorskip("ray")
    from qaccel.explore.executors import RayExecutor

    spec = SweepSpec.from_dict({"grid": {"store_requant": [False, True], "log_block": [3, 4]}})
    local = run_sweep(SMALL[:1], spec, None, LocalExecutor(1)).table
    try:
        executor = RayExecutor(num_cpus=2)
        assert executor.describe().startswith("Ray (local")
        remote = run_sweep(SMALL[:1], spec, tmp_path, executor).table
    finally:
        ray.shutdown()
    strip = [{k: v for k, v in r.items() if k != "compile_s"} for r in local]
    assert strip == [{k: v for k, v in r.items() if k != "compile_s"} for r in remote]


def test_pareto_plot_has_a_panel_per_model_and_a_marker_per_setting(tmp_path):
    pytest.importorskip("matplotlib")
    from qaccel.explore.result_store import MAX_SETTINGS, ResultTable, _setting_keys

    rows = []
    for m in range(5):
        for inp in (14, 15, 16):
            for rq in (False, True):
                for bias in ("alu", "preload"):
                    rows.append({"model": f"model_{m}", "log_inp_buff_size": inp,
                                 "store_requant": rq, "bias_placement": bias,
                                 "sram_bytes": 1 << inp, "cycles": (10 + m) * (3 - rq) * 1000,
                                 "ms": 0.1 * (3 - rq), "energy_uj": 5.0 + inp - rq,
                                 "gemm_utilization": 0.5, "status": "ok"})  # fmt: skip
    rows.append({"model": "model_0", "log_inp_buff_size": 14, "store_requant": False,
                 "bias_placement": "alu", "sram_bytes": 1 << 14, "cycles": 1,
                 "gemm_utilization": 0.5, "status": "ok"})  # stored before energy existed
    table = ResultTable(rows)
    params = table.params
    # the buffer sizes make up the SRAM axis: settings are the other keys
    assert _setting_keys(table.ok, params, "sram_bytes") == ["bias_placement", "store_requant"]
    # against latency every key varies; 12 > MAX_SETTINGS settings: the non-numeric keys only
    assert 3 * 2 * 2 > MAX_SETTINGS
    assert _setting_keys(table.ok, params, "ms") == ["bias_placement", "store_requant"]
    assert "model_0" in table.pareto("ms", "energy_uj")  # the row without energy left out
    table.plot_pareto(tmp_path / "pareto.png")
    table.plot_pareto(tmp_path / "energy.png", "ms", "energy_uj")
    for name in ("pareto.png", "energy.png"):
        assert (tmp_path / name).read_bytes()[:4] == b"\x89PNG"


def test_ray_token_is_sent_when_given_and_a_refusal_is_one_line(tmp_path, monkeypatch):
    import os

    from qaccel.explore import executors

    for var in ("RAY_AUTH_MODE", "RAY_AUTH_TOKEN", "RAY_AUTH_TOKEN_PATH"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    assert executors.ray_auth_token() is None and "RAY_AUTH_MODE" not in os.environ
    message = executors.auth_error("127.0.0.1:6379", None)
    assert message.startswith("cannot connect to Ray at 127.0.0.1:6379: InvalidAuthToken: ")
    assert "no token was given" in message and "RAY_AUTH_TOKEN=" in message
    assert "\n" not in message
    (tmp_path / ".ray").mkdir()
    (tmp_path / ".ray" / "auth_token").write_text("secret")
    assert executors.ray_auth_token() == "~/.ray/auth_token"
    assert os.environ["RAY_AUTH_MODE"] == "token"  # Ray's client sends the token only then
    monkeypatch.setenv("RAY_AUTH_TOKEN", "secret")
    assert executors.ray_auth_token() == "RAY_AUTH_TOKEN"
    assert "refused the token from RAY_AUTH_TOKEN" in executors.auth_error("h:1", "RAY_AUTH_TOKEN")
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # an explicit choice is kept
    executors.ray_auth_token()
    assert os.environ["RAY_AUTH_MODE"] == "disabled"
    assert "keeps it from being sent" in executors.auth_error("h:1", "RAY_AUTH_TOKEN")
    with executors._captured_stderr() as captured:
        os.write(2, b"InvalidAuthToken: retrying\n")
    assert captured == ["InvalidAuthToken: retrying\n"]
