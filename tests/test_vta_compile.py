"""Whole-model compilation for VTA (`backends/vta/codegen.py`, `qaccel-compile`, `qaccel-run
OUTDIR` / `--target vta`): every accelerator call run on the simulator is bit-exact with the
interpreter's semantics of the same accel function (whole packed tensors, padded lanes
included) and with LiteRT's reference kernels; artifacts are deterministic."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from conftest import vta_lowered
from qaccel.interpreter.interpreter import Trace, entry_function, random_inputs, run_function
from qaccel.targets.vta.config import HardwareConfig
from qaccel.backends.vta.artifact import load_artifact, write_artifact
from qaccel.backends.vta.codegen import compile_module
from qaccel.backends.vta.report import format_report
from qaccel.backends.vta.runtime import run_compiled
from qaccel.tools import qaccel_compile, qaccel_run
from xdsl.dialects import func

MODELS = Path(__file__).parent / "fixtures" / "models"
SMALL = ["cnn", "small_cnn", "mlp", "residual", "cnn_per_tensor", "pad_concat_slice", "composite"]


def call_results(trace: Trace) -> list[tuple[np.ndarray, ...]]:
    return [res for op, res in trace.records if isinstance(op, func.CallOp)]


def assert_same_calls(module, compiled, inputs):
    ours, theirs = Trace(), Trace()
    expected = run_function(module, inputs, theirs)
    got = run_compiled(compiled, inputs, ours)
    for a, b in zip(call_results(ours), call_results(theirs), strict=True):
        for x, y in zip(a, b, strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
    for x, y in zip(got, expected, strict=True):
        np.testing.assert_array_equal(x, y)
    return got


@pytest.mark.parametrize("name", SMALL)
def test_fixture_bit_exact_with_interpreter(name):
    module, _ = vta_lowered(name)
    compiled = compile_module(module)
    assert sum(len(v) for v in compiled.layers.values()) >= 1
    for seed in (0, 1):
        assert_same_calls(module, compiled, random_inputs(entry_function(module), seed))


def test_every_convolution_of_the_fixtures_runs_on_the_accelerator():
    for name in SMALL:
        module, _ = vta_lowered(name)
        compiled = compile_module(module)
        refused = [fb for fb in compiled.fallbacks if fb.op in ("accel.conv2d_zp",
                                                                 "accel.dense_zp")]  # fmt: skip
        assert not refused, f"{name}: {[fb.line() for fb in refused]}"


def test_fallbacks_are_reported():
    module, _ = vta_lowered("pad_concat_slice")
    compiled = compile_module(module)
    lines = compiled.report["host_fallbacks"]
    assert any("accel.concat" in line and "a host step of the accelerator program" in line
               for line in lines)  # fmt: skip
    text = format_report(compiled.report)
    assert "host fallback inside vta_fn_1: accel.concat" in text
    module, _ = vta_lowered("small_cnn")
    lines = compile_module(module).report["host_fallbacks"]
    assert len(lines) == 1 and "accel.host_requantize" in lines[0] and "by design" in lines[0]


def test_report_fields():
    module, _ = vta_lowered("residual")
    compiled = compile_module(module, total_macs=1)
    layer = compiled.report["layers"][0]
    for key in ("cycles", "gemm_utilization", "roofline_cycles", "roofline_ratio",
                "dram_read_bytes", "dram_write_bytes", "tiling", "ms"):  # fmt: skip
        assert key in layer
    assert layer["cycles"] >= layer["roofline_cycles"] > 0
    totals = compiled.report["totals"]
    assert totals["cycles"] == sum(r["cycles"] for r in compiled.report["layers"])


def test_report_counts_useful_and_padded_macs_apart(mobilenet_v2_compiled):
    """A depthwise layer runs as block-diagonal GEMM tiles: its utilization counts the model's
    MACs; the MACs the hardware spends on padding are reported separately."""
    report = mobilenet_v2_compiled.report
    depthwise = [r for r in report["layers"] if r["kind"] == "depthwise"]
    assert depthwise
    for r in depthwise:
        assert r["padded_macs"] == 16 * r["macs"]  # 1 useful lane in 16 of each tile
        assert r["padded_utilization"] == pytest.approx(16 * r["gemm_utilization"])
    totals = report["totals"]
    assert totals["padded_macs"] > sum(r["macs"] for r in report["layers"])
    assert totals["padded_utilization"] > totals["gemm_utilization"]


def test_artifact_round_trip_and_determinism(tmp_path):
    module, data = vta_lowered("residual")
    compiled = compile_module(module)
    write_artifact(compiled, tmp_path / "a", data)
    module2, _ = vta_lowered("residual", fresh=True)
    write_artifact(compile_module(module2), tmp_path / "b", data)
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*"))
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*"))
    assert files_a == files_b
    for rel in files_a:
        if (tmp_path / "a" / rel).is_file():
            assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel
    manifest = json.loads((tmp_path / "a" / "manifest.json").read_text())
    assert "vta_fn_0/layer_0.bin" in manifest["files"]
    loaded = load_artifact(tmp_path / "a")
    inputs = random_inputs(entry_function(module), 3)
    expected = run_function(module, inputs)
    for x, y in zip(run_compiled(loaded, inputs), expected, strict=True):
        np.testing.assert_array_equal(x, y)


# the file each way of running reads: the run plan the function's program, its step walk (the
# Python simulator) the layers' instruction streams
@pytest.mark.parametrize("rel,options", [("driver/vta_fn_0.qprog", []),
                                         ("vta_fn_0/layer_0.bin", ["--simulator", "python"])])
def test_corrupt_artifact_is_refused(tmp_path, capsys, rel, options):
    module, data = vta_lowered("mlp")
    write_artifact(compile_module(module), tmp_path, data)
    (tmp_path / rel).write_bytes(b"\0" * 16)
    capsys.readouterr()
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(tmp_path), "--outputs-dir", str(tmp_path / "out"), *options])
    assert e.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "does not match the manifest's hash" in err[0]


def test_cli_compile_then_run(tmp_path, capsys):
    out = tmp_path / "art"
    with pytest.raises(SystemExit) as e:
        qaccel_compile.main([str(MODELS / "cnn.tflite"), "-o", str(out)])
    assert e.value.code == 0
    text = capsys.readouterr().out
    assert "accelerator layers" in text and "MACs on the accelerator: 100.00%" in text
    assert json.loads((out / "report.json").read_text())["totals"]["layers"] >= 1
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(out), "--random-inputs", "1", "--outputs-dir", str(tmp_path / "r")])
    assert e.value.code == 0
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(MODELS / "cnn.tflite"), "-p", "cpu-pipeline", "--random-inputs",
                         "1", "--outputs-dir", str(tmp_path / "c")])  # fmt: skip
    np.testing.assert_array_equal(np.load(tmp_path / "r" / "output_0.npy"),
                                  np.load(tmp_path / "c" / "output_0.npy"))  # fmt: skip


def test_cli_bad_input(tmp_path, capsys):
    with pytest.raises(SystemExit) as e:
        qaccel_compile.main([str(tmp_path / "missing.tflite"), "-o", str(tmp_path / "o")])
    assert e.value.code == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("qaccel-compile: error: cannot open model")
    for name, data, expected in [
        ("bad.mlir", b"builtin.module {\n  func.func @f( {\n}\n", "bad.mlir:2:"),
        ("binary.mlir", b"\xff\xfe", "not UTF-8 text"),
        ("notes.txt", b"hello", "expected a .tflite model or .mlir text"),
    ]:
        (tmp_path / name).write_bytes(data)
        with pytest.raises(SystemExit) as e:
            qaccel_compile.main([str(tmp_path / name), "-o", str(tmp_path / "o")])
        assert e.value.code == 1
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and expected in err[0], err


@pytest.mark.parametrize("config", [[], ["--config", "vta-store-requant"]], ids=["vta", "rq"])
@pytest.mark.parametrize("name", SMALL)
def test_target_vta_bit_exact_with_litert(name, config, tmp_path, capsys):
    pytest.importorskip("ai_edge_litert")
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(MODELS / f"{name}.tflite"), "--target", "vta", "--outputs-dir",
                         str(tmp_path), "--compare-litert", *config])  # fmt: skip
    out = capsys.readouterr().out
    assert e.value.code == 0, out
    assert "bit-exact" in out and "MISMATCH" not in out


@pytest.mark.parametrize("hw_config", ["", "vta-store-requant"])
def test_mobilenet_v2_all_layers_on_the_accelerator(hw_config):
    module, _ = vta_lowered("mobilenet_v2", hw_config)
    config = HardwareConfig.from_json(hw_config) if hw_config else None
    compiled = compile_module(module, config)
    modes = {r["tiling"]["bias_mode"] for r in compiled.report["layers"]
             if r["kind"] in ("conv", "depthwise")}  # fmt: skip
    assert modes == {"store"} if hw_config else "store" not in modes
    kinds = [r["kind"] for r in compiled.report["layers"]]
    assert len(kinds) - kinds.count("eltwise") == 53  # every convolution and the classifier
    _assert_bit_exact(module, compiled)


def _assert_bit_exact(module, compiled, seed: int = 0) -> None:
    """The compiled model's outputs equal the interpreter's on the same random inputs."""
    inputs = random_inputs(entry_function(module), seed)
    expected = run_function(module, inputs)
    for x, y in zip(run_compiled(compiled, inputs), expected, strict=True):
        np.testing.assert_array_equal(x, y)


def test_schedules_come_from_the_ir():
    from qaccel.dialects.vta import LayerOp, schedule_attr

    module, _ = vta_lowered("cnn")
    roots = [op for op in module.walk() if isinstance(op, LayerOp) and op.schedule is not None]
    assert roots, "vta-pipeline ends with schedule-vta"
    searched = compile_module(module)
    chosen = [r["tiling"] for r in searched.report["layers"]]
    first = roots[0]
    values = first.schedule.fields()
    values["tile_h"] = 1
    values.pop("inp_slots")
    first.schedule = schedule_attr("gemm", **values)
    edited = compile_module(module)
    assert edited.report["layers"][0]["tiling"]["tile_h"] == 1
    assert [r["tiling"] for r in edited.report["layers"][1:]] == chosen[1:]
    _assert_bit_exact(module, edited)


def test_element_wise_schedules_come_from_the_ir():
    # An element-wise layer's chunk rows, as edited in the IR, are what the program walks;
    # the result stays bit-exact.
    from qaccel.dialects.vta import LayerOp, schedule_attr

    module, _ = vta_lowered("residual")
    eltwise = [op for op in module.walk() if isinstance(op, LayerOp)
               and op.kind.data == "eltwise"]  # fmt: skip
    assert eltwise and all(op.schedule is not None for op in eltwise)
    searched = compile_module(module)
    rows = [r["tiling"]["chunk_rows"] for r in searched.report["layers"] if r["kind"] == "eltwise"]
    assert rows == [op.schedule.get("rows") for op in eltwise]
    values = eltwise[0].schedule.fields()
    values["rows"] = max(1, values["rows"] // 4)
    eltwise[0].schedule = schedule_attr("eltwise", **values)
    edited = compile_module(module)
    got = [r["tiling"]["chunk_rows"] for r in edited.report["layers"] if r["kind"] == "eltwise"]
    assert got == [values["rows"], *rows[1:]]
    _assert_bit_exact(module, edited)


def test_a_schedule_that_does_not_fit_is_a_one_line_error(tmp_path, capsys):
    from qaccel.backends.vta.compiled import CompileError
    from qaccel.dialects.vta import LayerOp, schedule_attr

    module, _ = vta_lowered("cnn")
    first = next(op for op in module.walk() if isinstance(op, LayerOp) and op.schedule)
    values = first.schedule.fields()
    values["tile_co"] = 1
    values["tile_h"] = values["tile_w"] = 4096
    first.schedule = schedule_attr("gemm", **values)
    with pytest.raises(CompileError, match=r'^@vta_fn_0: vta.layer "conv" \(conv .*\): .* fit'):
        compile_module(module)


def test_compile_mlir_text_and_hardware_config(tmp_path, capsys):
    from qaccel.backends.vta.artifact import module_text

    module, _ = vta_lowered("mlp")
    text = tmp_path / "mlp.mlir"
    text.write_text(module_text(module))
    with pytest.raises(SystemExit) as e:
        qaccel_compile.main([str(text), "-p", "", "-o", str(tmp_path / "a"), "--quiet"])
    assert e.value.code == 0
    assert not (tmp_path / "a" / "model.tflite").exists()
    # A configuration file reaches the pipeline (partitioning, tiling) and the emitter.
    config = json.loads((Path(qaccel_compile.__file__).parent.parent / "targets" / "vta"
                         / "vta_default.json").read_text())  # fmt: skip
    config["name"] = "small-acc"
    config["log_acc_buff_size"] -= 2
    (tmp_path / "hw.json").write_text(json.dumps(config))
    with pytest.raises(SystemExit) as e:
        qaccel_compile.main([str(MODELS / "mlp.tflite"), "-o", str(tmp_path / "b"), "--quiet",
                             "--config", str(tmp_path / "hw.json")])  # fmt: skip
    assert e.value.code == 0
    assert 'config = "small-acc"' in (tmp_path / "b" / "host.mlir").read_text()
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(tmp_path / "b"), "--random-inputs", "0", "--outputs-dir",
                         str(tmp_path / "r")])  # fmt: skip
    assert e.value.code == 0


def test_qaccel_sim_runs_a_layer_of_the_artifact(tmp_path, capsys):
    from qaccel.tools import qaccel_sim

    module, data = vta_lowered("cnn")
    write_artifact(compile_module(module), tmp_path, data)
    fn = tmp_path / "vta_fn_0"
    code = qaccel_sim.main([str(fn / "layer_1.bin"), "--dram", str(fn / "dram.npz"),
                            "--uops", str(fn / "layer_1.uops.bin")])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "total cycles" in out and "leftover" not in out
    (tmp_path / "bad.uops").write_bytes(b"\0" * 6)
    code = qaccel_sim.main([str(fn / "layer_1.bin"), "--uops", str(tmp_path / "bad.uops")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "not a whole number of micro-ops" in err[0]


def test_a_layer_that_does_not_read_as_its_kind_runs_on_the_host():
    # A hand-edited layer whose body is not a layer of its kind is refused with the reason,
    # its body runs on the host interpreter, the layers after it still run on the simulator,
    # and the result stays bit-exact.
    from qaccel.dialects.vta import LayerOp
    from xdsl.dialects.builtin import StringAttr

    module, _ = vta_lowered("residual")
    layers = [op for op in module.walk() if isinstance(op, LayerOp)]
    eltwise = next(op for op in layers if op.kind.data == "eltwise")
    eltwise.kind = StringAttr("pool")
    eltwise.schedule = None
    compiled = compile_module(module)
    assert len(compiled.report["layers"]) == len(layers) - 1
    refused = [fb for fb in compiled.fallbacks if "vta.layer" in fb.op]
    assert len(refused) == 1 and refused[0].op == 'accel.narrow (vta.layer "pool")'
    assert refused[0].reason == "not a pool followed by constant ALU ops"
    _assert_bit_exact(module, compiled)


def test_pool_schedules_come_from_the_ir():
    # A pool's output rows per tile, as edited in the IR, are what the program walks; the
    # result stays bit-exact. Asking for the output stage on a configuration without one is
    # a one-line error naming the layer.
    from qaccel.backends.vta.compiled import CompileError
    from qaccel.dialects.vta import LayerOp, schedule_attr

    module, _ = vta_lowered("small_cnn")
    pool = next(op for op in module.walk() if isinstance(op, LayerOp) and op.kind.data == "pool")
    values = pool.schedule.fields()
    assert values["rows"] > 1
    values["rows"] = 1
    pool.schedule = schedule_attr("pool", **values)
    compiled = compile_module(module)
    tiles = [r["tiling"]["tile_rows"] for r in compiled.report["layers"] if r["kind"] == "pool"]
    assert tiles[0] == 1
    _assert_bit_exact(module, compiled)
    values["output_stage"] = True
    pool.schedule = schedule_attr("pool", **values)
    with pytest.raises(CompileError, match=r'^@vta_fn_0: vta.layer "pool" \(max pool .*\): '
                                           r".*output stage cannot run"):  # fmt: skip
        compile_module(module)


def test_ir_without_formed_layers_is_a_one_line_error():
    # accel IR that never went through form-vta-layers (e.g. text from an older qaccel)
    # would put every GEMM on the host: qaccel-compile says what to run instead.
    from qaccel.backends.vta.compiled import CompileError
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline, qaccel_context

    module = import_tflite((MODELS / "cnn.tflite").read_bytes(), "cnn.tflite")
    build_pipeline("attach-target,fuse-composites,legalize-tfl-to-q,annotate-target,"
                   "partition-graph,insert-pack-unpack,lower-q-to-accel"
                   ).apply(qaccel_context(), module)  # fmt: skip
    with pytest.raises(CompileError, match=r"^@vta_fn_0: accel.conv2d_zp \(#\d+\) is in no "
                                           r"vta.layer: run form-vta-layers and schedule-vta"):
        compile_module(module)
