"""qaccel-compile's report: the table (`format_report`) and `--plot` (qaccel-compile and
qaccel-run), including the one-line error without matplotlib."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from qaccel.backends.vta.report import format_report
from qaccel.tools import qaccel_compile, qaccel_run

SMALL_CNN = Path(__file__).parent / "fixtures" / "models" / "small_cnn.tflite"
LONG = "depthwise 112x112x96 -> 56x56x96 k3x3 s2 p[0, 1, 0, 1] d2"  # longer than 46 characters


def _layer(function: str, index: int, description: str, cycles: int, kind: str = "conv") -> dict:
    return {
        "function": function, "layer": index, "kind": kind, "description": description,
        "cycles": cycles, "gemm_utilization": 0.123, "roofline_cycles": cycles // 3,
        "roofline_ratio": 3.0, "alu_bound_cycles": cycles // 2, "dram_read_bytes": 1000,
        "dram_write_bytes": 24,
        "tiling": {"tile_h": 14, "tile_w": 28, "tile_co": 1, "tile_ci": 12,
                   "loop_order": "spatial", "bias_mode": "gemm", "inp_slots": 2,
                   "wgt_slots": 2, "acc_slots": 2},
    }  # fmt: skip


def _report(layers: list[dict]) -> dict:
    cycles = sum(r["cycles"] for r in layers)
    return {
        "config": "vta-default", "layers": layers, "host_fallbacks": ["host fallback: x"],
        "totals": {"layers": len(layers), "cycles": cycles, "ms": cycles / 333e3,
                   "clock_mhz": 333.0, "gemm_utilization": 0.2, "roofline_ratio": 2.5,
                   "dram_bytes": 1024 * len(layers), "accelerator_mac_share": 1.0,
                   "model_macs": 1000},
    }  # fmt: skip


def test_table_keeps_whole_descriptions_in_aligned_columns():
    rows = [_layer("vta_fn_0", 0, "conv 8x8x16 -> 8x8x16 k1x1 s1 p[0, 0, 0, 0]", 950),
            _layer("vta_fn_0", 1, LONG, 12_345_678, "depthwise"),
            _layer("vta_fn_12", 2, "dense 1x1280 -> 1008", 77, "dense")]  # fmt: skip
    lines = format_report(_report(rows)).splitlines()
    head, rule, body = lines[0], lines[1], lines[2:5]
    assert head.split() == ["layer", "cycles", "util", "roofline", "ratio", "DRAM", "B",
                            "tiling", "description"]  # fmt: skip
    assert set(rule) == {"-"} and lines[5] == rule
    assert len(rule) == max(len(line) for line in [head, *body])
    column = head.index("description")
    for row, line in zip(rows, body):
        assert line[column:] == row["description"]  # whole, in one column
        assert line.startswith(f"{row['function']}/{row['layer']} ")
    # numbers are right-aligned: every row's cycles end where the header's "cycles" ends
    end = head.index("cycles") + len("cycles")
    assert [line[:end].split()[-1] for line in body] == ["950", "12345678", "77"]
    assert "14x28px co1 ci12 spatial gemm" in body[0]
    assert lines[6].startswith("total: 3 accelerator layers, 12346705 cycles")
    assert lines[7] == "MACs on the accelerator: 100.00% of 1000"
    assert lines[-1] == "host fallback: x"


def test_table_without_layers():
    lines = format_report(_report([])).splitlines()
    assert lines[0].split()[0] == "layer" and set(lines[1]) == {"-"} and lines[2] == lines[1]
    assert lines[3].startswith("total: 0 accelerator layers")


def _no_matplotlib(monkeypatch):
    """Make `import matplotlib` fail as if it were not installed."""
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)


def test_plot_without_matplotlib_is_one_line(monkeypatch, tmp_path, capsys):
    _no_matplotlib(monkeypatch)
    plot = tmp_path / "p.png"
    with pytest.raises(SystemExit) as e:
        qaccel_compile.main([str(SMALL_CNN), "-o", str(tmp_path / "out"), "--plot", str(plot)])
    assert e.value.code == 1
    err = capsys.readouterr().err
    assert err == ("qaccel-compile: error: --plot needs matplotlib "
                   "(pip install 'qaccel[plot]')\n")  # fmt: skip
    assert not plot.exists() and not (tmp_path / "out").exists()  # refused before compiling
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(SMALL_CNN), "--target", "vta", "--outputs-dir", str(tmp_path),
                         "--plot", str(plot)])  # fmt: skip
    assert e.value.code == 1
    assert capsys.readouterr().err.splitlines() == [
        "qaccel-run: error: --plot needs matplotlib (pip install 'qaccel[plot]')"
    ]


def test_run_plot_needs_the_accelerator(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(SMALL_CNN), "--outputs-dir", str(tmp_path), "--plot", "p.png"])
    assert e.value.code == 1
    assert capsys.readouterr().err.splitlines() == [
        "qaccel-run: error: --plot needs an accelerator compile (an artifact folder or "
        "--target vta)"
    ]


def _is_png(path: Path) -> bool:
    data = path.read_bytes()
    return data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 2000


def test_plot_report_draws_a_png(tmp_path):
    pytest.importorskip("matplotlib")
    from qaccel.backends.vta.report_plot import PlotError, plot_report

    rows = [_layer("vta_fn_0", i, LONG, 1000 * (i + 1)) for i in range(70)]
    plot_report(_report(rows), tmp_path / "sub" / "layers.png", model="m.tflite")
    assert _is_png(tmp_path / "sub" / "layers.png")
    plot_report(_report([]), tmp_path / "empty.svg")
    assert (tmp_path / "empty.svg").read_text().lstrip().startswith("<?xml")
    with pytest.raises(PlotError, match="cannot write plot"):
        plot_report(_report(rows), tmp_path / "empty.svg" / "x.png")  # a file, not a folder


def test_compile_and_run_plot(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    out, plot = tmp_path / "artifact", tmp_path / "compile.png"
    with pytest.raises(SystemExit) as e:
        qaccel_compile.main([str(SMALL_CNN), "-o", str(out), "--plot", str(plot)])
    assert e.value.code == 0
    assert _is_png(plot)
    assert capsys.readouterr().out.splitlines()[-1].startswith(f"wrote {out} and {plot} in ")
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(out), "--outputs-dir", str(tmp_path / "res"), "--plot",
                         str(tmp_path / "run.png")])  # fmt: skip
    assert e.value.code == 0
    assert _is_png(tmp_path / "run.png")


def test_plot_format_is_checked_before_compiling(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    with pytest.raises(SystemExit) as e:
        qaccel_compile.main([str(SMALL_CNN), "-o", str(tmp_path / "out"), "--plot",
                             str(tmp_path / "p.xyz")])  # fmt: skip
    assert e.value.code == 1
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 1 and "unknown image format 'xyz'" in err[0]
    assert not (tmp_path / "out").exists()
