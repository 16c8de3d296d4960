"""qaccel-config (show, check), configuration names and content hashes, qaccel-report (show,
diff, plot), and make_fixtures' explanation of a fixture that differs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from qaccel.targets.vta.config import ConfigError, HardwareConfig
from qaccel.tools import qaccel_config, qaccel_report

MODELS = Path(__file__).parent / "fixtures" / "models"
HALVED = {"log_block": 3, "log_acc_buff_size": 16, "log_inp_buff_size": 14,
          "log_wgt_buff_size": 17}  # fmt: skip
"""Half of every buffer with half the block: the GEMM word needs 66 bits."""


def _call(main, argv, capsys):
    with pytest.raises(SystemExit) as e:
        main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return e.value.code, out, err


def _write(tmp_path: Path, name: str, data) -> Path:
    path = tmp_path / name
    path.write_text(json.dumps(data))
    return path


# --- configurations -------------------------------------------------------------------------


def test_names_and_content_hash(tmp_path):
    assert HardwareConfig().name == "vta-default"
    assert HardwareConfig(log_inp_buff_size=14).name == "custom"  # never vta-default
    assert HardwareConfig.from_dict({"log_inp_buff_size": 14}).name == "custom"
    small = HardwareConfig.from_json(_write(tmp_path, "small_inp.json", {"log_inp_buff_size": 14}))
    assert small.name == "small-inp"
    named = HardwareConfig.from_json(_write(tmp_path, "x.json", {"name": "mine"}))
    assert named.name == "mine" and named.content_hash == HardwareConfig().content_hash
    assert small.content_hash != HardwareConfig().content_hash
    assert len(small.content_hash) == 12


def test_overflow_error_names_the_keys_and_what_fits():
    with pytest.raises(ConfigError) as e:
        HardwareConfig(**HALVED)
    message = str(e.value)
    assert "more than two 64-bit words" in message  # as before
    assert "the GEMM word needs 2 x (log depths acc 11 + inp 11 + wgt 11) = 66 bits > 64" in message
    assert "log_wgt_buff_size to 16 (or less; now 17)" in message
    assert "log_acc_buff_size to 15 and log_inp_buff_size to 13 and log_wgt_buff_size to 16" in message
    for key, value in (("log_wgt_buff_size", 16), ("log_acc_buff_size", 15)):  # they do fit
        HardwareConfig(**{**HALVED, key: value})


def test_config_show(capsys):
    code, out, _ = _call(qaccel_config.main, ["show", "vta-default"], capsys)
    assert code == 0
    assert f"configuration vta-default (content hash {HardwareConfig().content_hash};" in out
    assert "lanes: BLOCK_IN = BLOCK_OUT = 16, BATCH = 1: 256 MACs per GEMM cycle" in out
    assert "wgt     log_wgt_buff_size      262144  16x16 int8 tile            256    1024" in out
    assert "on-chip SRAM: 458752 bytes (448 KiB)" in out
    assert "GEMM   word bits used 63/64 + 64/64:" in out and "wgt_factor_in:10" in out
    assert "micro-op  32/32 bits: dst:11 src:11 wgt:10" in out
    code, out, _ = _call(qaccel_config.main, ["show", "vta-store-requant", "--json"], capsys)
    g = json.loads(out)
    assert g["store_requant"] and g["buffers"]["acc"]["depth"] == 2048
    assert {f["name"] for f in g["instructions"]["STORE"]["fields"]} >= {"clear", "param_row"}


def test_config_check(tmp_path, capsys):
    code, out, _ = _call(qaccel_config.main, ["check", "vta-default"], capsys)
    assert code == 0 and out.startswith("vta-default: fits (configuration vta-default")
    halved = _write(tmp_path, "halved.json", HALVED)
    code, out, _ = _call(qaccel_config.main, ["check", halved], capsys)
    assert code == 1
    assert "GEMM word needs" in out and "micro-op fields need 33 bits > 32" in out
    assert ("fix: log_wgt_buff_size: 16  (was 17; the largest value that fits with the other "
            "keys unchanged)") in out  # fmt: skip
    assert "fix: log_block: 4  (was 3; the smallest value" in out
    # A key out of its range: the loader's message, which names it.
    code, out, _ = _call(qaccel_config.main, ["check", _write(tmp_path, "b.json",
                                                              {"log_block": 7})], capsys)  # fmt: skip
    assert code == 1 and "log_block must be a non-negative integer in [2, 5], got 7" in out


@pytest.mark.parametrize("argv,expect", [
    (["show", "no-such"], "no-such: no such hardware config file or bundled config (bundled: "),
    (["frobnicate"], "invalid choice"),
    ([], "the following arguments are required"),
], ids=["missing", "command", "none"])  # fmt: skip
def test_config_errors_are_one_line(capsys, argv, expect):
    code, out, err = _call(qaccel_config.main, argv, capsys)
    assert code == 1 and out == "" and err.count("\n") == 1
    assert err.startswith("qaccel-config: error: ") and expect in err


def test_config_show_of_a_config_that_does_not_fit(tmp_path, capsys):
    code, _, err = _call(qaccel_config.main, ["show", _write(tmp_path, "h.json", HALVED)], capsys)
    assert code == 1 and err.count("\n") == 1
    assert "set log_acc_buff_size to 15" in err and "qaccel-config check" in err


# --- reports --------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def two_artifacts(tmp_path_factory):
    from qaccel import api

    root = tmp_path_factory.mktemp("reports")
    small = HardwareConfig(log_inp_buff_size=13, log_wgt_buff_size=16)
    for name, config in (("a", None), ("b", small)):
        api.write_artifact(api.compile(MODELS / "small_cnn.tflite", config), root / name)
    return root / "a", root / "b"


def test_report_carries_config_name_and_hash(two_artifacts):
    a, b = (json.loads((p / "report.json").read_text()) for p in two_artifacts)
    assert a["config"] == "vta-default" and a["config_hash"] == HardwareConfig().content_hash
    assert b["config"] == "custom" and b["config_hash"] != a["config_hash"]


def test_report_diff(two_artifacts, tmp_path, capsys):
    a, b = two_artifacts
    plot = tmp_path / "diff.png"
    code, out, err = _call(qaccel_report.main, ["diff", a, b / "report.json", "--names",
                                                "big,small", "--plot", plot], capsys)  # fmt: skip
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("big: configuration vta-default (content hash ")
    assert lines[1].startswith("small: configuration custom (content hash ")
    assert lines[2].split()[:5] == ["layer", "cycles", "big", "cycles", "small"]
    rows = [line for line in lines if line.startswith("vta_fn_")]
    assert len(rows) == len(json.loads((a / "report.json").read_text())["layers"])
    assert all(row.split()[3].endswith("x") for row in rows)  # the ratio B/A
    assert any(line.startswith("total cycles: ") and "->" in line for line in lines)
    assert plot.read_bytes()[:4] == b"\x89PNG"
    code, out, _ = _call(qaccel_report.main, ["diff", a, b, "--json"], capsys)
    diff = json.loads(out)
    assert diff["totals"]["cycles"][0] == json.loads((a / "report.json").read_text())[
        "totals"]["cycles"]  # fmt: skip
    code, out, _ = _call(qaccel_report.main, ["show", a], capsys)
    assert code == 0 and out.startswith("layer") and "MACs on the accelerator: 100.00%" in out


@pytest.mark.parametrize("argv,expect", [
    (["diff", "nowhere", "nowhere"], "'nowhere': no report.json"),
    (["diff", "A", "B", "--plot", "x.unknown"], "unknown image format"),
    (["show"], "the following arguments are required"),
], ids=["missing", "plot-format", "args"])  # fmt: skip
def test_report_errors_are_one_line(tmp_path, capsys, argv, expect, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "A").mkdir()
    (tmp_path / "A" / "report.json").write_text(json.dumps({"layers": [], "totals": {}}))
    (tmp_path / "B").mkdir()
    (tmp_path / "B" / "report.json").write_text("[1]")
    code, out, err = _call(qaccel_report.main, argv, capsys)
    assert code == 1 and err.count("\n") == 1 and expect in err


def test_report_of_something_else(tmp_path, capsys):
    (tmp_path / "report.json").write_text("[1]")
    code, _, err = _call(qaccel_report.main, ["show", tmp_path], capsys)
    assert code == 1 and "not a qaccel report" in err


# --- make_fixtures --check ------------------------------------------------------------------


def test_make_fixtures_explains_a_difference():
    pytest.importorskip("ai_edge_litert")
    from qaccel.tools.make_fixtures import explain_difference

    cnn = (MODELS / "cnn.tflite").read_bytes()
    per_tensor = (MODELS / "cnn_per_tensor.tflite").read_bytes()
    lines = explain_difference(cnn, per_tensor, limit=3)
    assert lines[0].startswith("converted by TensorFlow 2.21.0 (committed file) vs 2.21.0 "
                               "(rebuilt), now running ")  # fmt: skip
    assert "numpy " in lines[0]
    assert lines[1].startswith("tensor 'cnn_1/")
    assert "quantization scales: 32 -> 1 (per-channel or per-tensor changed)" in lines[1]
    assert "constant values differ (max |diff| " in lines[1]
    assert lines[-1].endswith("more tensors differ") and len(lines) == 5
    same = explain_difference(cnn, cnn)
    assert same[1].startswith("same tensors, operators and constants")
