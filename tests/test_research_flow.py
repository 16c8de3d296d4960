"""The researcher's workflow: stop a pipeline anywhere, change the module with an own pass,
compile it from its stage (API and qaccel-compile) with the change kept; the stage and the
model's MACs read from the IR at every stage; pipelines of pass instances; kebab-case option
errors; elided IR; qaccel-opt's help."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.passes import ModulePass

from qaccel import api
from qaccel.dialects.annotations import ANNOTATIONS, GROUP_ATTR
from qaccel.dialects.macs import model_macs
from qaccel.pipeline.manager import PassManager, PipelineError, expand, parse_passes, qaccel_context
from qaccel.pipeline.stage import VTA_PASSES, module_stage

MODELS = Path(__file__).parent / "fixtures" / "models"
SMALL_CNN = MODELS / "small_cnn.tflite"


@dataclass(frozen=True)
class FirstGroupOnCpu(ModulePass):
    """A researcher's pass: the first op group annotate-target marked stays on the CPU."""

    name = "first-group-on-cpu"

    def apply(self, ctx, module):
        ops = [op for op in module.walk() if GROUP_ATTR in op.attributes]
        first = min(op.attributes[GROUP_ATTR].value.data for op in ops)
        for op in ops:
            if op.attributes[GROUP_ATTR].value.data == first:
                for name in ANNOTATIONS:
                    op.attributes.pop(name, None)


def _call(main, argv, capsys):
    try:
        main([str(a) for a in argv])
        code = 0
    except SystemExit as e:
        code = e.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def edited():
    """small_cnn stopped after annotate-target, its first group kept on the CPU."""
    module = api.import_model(SMALL_CNN)
    api.run_pipeline(module, ["vta-pipeline{stop-after=annotate-target}", FirstGroupOnCpu()])
    return module


# --- stage and MACs -------------------------------------------------------------------------


@pytest.mark.parametrize("model", ["small_cnn", "mlp", "residual"])
def test_stage_and_macs_after_every_pass(model):
    module = api.import_model(MODELS / f"{model}.tflite")
    assert module_stage(module).name == "imported" and module_stage(module).target is None
    macs = model_macs(module)
    assert macs > 0
    passes = expand(parse_passes("vta-pipeline")).passes
    expected = {"attach-target": None, "fuse-composites": None}
    for scheduled in passes:
        PassManager([scheduled]).run(qaccel_context(), module)
        stage = module_stage(module)
        assert stage.target == "vta" and stage.config == "vta-default"
        assert stage.last == expected.get(scheduled.name, scheduled.name), scheduled.name
        done = "attach-target" if scheduled.name == "fuse-composites" else scheduled.name
        rest = VTA_PASSES[VTA_PASSES.index(done) + 1:]  # fuse-composites leaves no mark
        assert stage.remaining() == list(rest)
        assert model_macs(module) == macs, f"MACs changed after {scheduled.name}"
    assert module_stage(module).name == "scheduled"
    assert "every vta-pipeline pass has run" in module_stage(module).describe()


def test_stage_of_a_legalized_module_without_target():
    module = api.import_model(SMALL_CNN)
    api.run_pipeline(module, "cpu-pipeline")
    stage = module_stage(module)
    assert (stage.last, stage.target) == ("legalize-tfl-to-q", None)
    assert stage.remaining() == ["attach-target", "annotate-target", "partition-graph",
                                 "insert-pack-unpack", "lower-q-to-accel", "form-vta-layers",
                                 "schedule-vta"]  # fmt: skip


# --- API ------------------------------------------------------------------------------------


def test_api_compiles_an_edited_module_bit_exact(edited, oracle):
    assert api.stage(edited).describe() == "annotated (target vta-default): next partition-graph"
    before = api.print_ir(edited)
    compiled = api.compile(edited)
    assert api.print_ir(edited) == before  # the caller's module is left as it was
    totals = compiled.report["totals"]
    # The change is kept: the first convolution (32x32x16 outputs, 3x3x3 taps) runs on the CPU.
    assert totals["host_macs"] == 32 * 32 * 16 * 3 * 3 * 3
    assert totals["model_macs"] == model_macs(api.import_model(SMALL_CNN))
    assert 0.5 < totals["accelerator_mac_share"] < 0.6
    assert compiled.report["config"] == "vta-default" and len(compiled.report["config_hash"]) == 12
    host = next(f for f in compiled.module.ops if getattr(f, "sym_name", None)
                and f.sym_name.data == "serving_default")  # fmt: skip
    assert any(op.name == "q.conv2d" for op in host.walk())
    x = np.random.default_rng(3).integers(-128, 128, (1, 32, 32, 3), dtype=np.int8)
    got = api.run_simulator(compiled, [x])
    ref = oracle(SMALL_CNN.read_bytes(), [[x]], keep_all_tensors=False)
    assert ref.refused is None
    for a, b in zip(got, ref.outputs[0], strict=True):
        assert a.dtype == b.dtype and np.array_equal(a, b)


def test_api_compile_from_mlir_text_and_refusals(edited, tmp_path):
    path = tmp_path / "edited.mlir"
    path.write_text(api.print_ir(edited))
    compiled = api.compile(path)
    assert compiled.report["totals"]["host_macs"] == 32 * 32 * 16 * 3 * 3 * 3
    with pytest.raises(PipelineError, match="already targets vta-default .* differs in "
                                            "store_requant"):
        api.compile(edited, "vta-store-requant")
    with pytest.raises(PipelineError, match="max-partitions goes to partition-graph"):
        scheduled = api.import_model(SMALL_CNN)
        api.run_pipeline(scheduled, "vta-pipeline{stop-after=partition-graph}")
        api.compile(scheduled, max_partitions=1)
    with pytest.raises(ValueError, match="expected a .tflite model or .mlir text"):
        api.compile(tmp_path / "model.onnx")


def test_run_pipeline_takes_pass_instances_and_refuses_other_values():
    module = api.import_model(MODELS / "mlp.tflite")
    api.run_pipeline(module, "vta-pipeline{stop-after=annotate-target}")
    groups = {op.attributes[GROUP_ATTR].value.data for op in module.walk()
              if GROUP_ATTR in op.attributes}  # fmt: skip
    api.run_pipeline(module, FirstGroupOnCpu())  # one instance, not registered anywhere
    assert len({op.attributes[GROUP_ATTR].value.data for op in module.walk()
                if GROUP_ATTR in op.attributes}) == len(groups) - 1  # fmt: skip
    for bad, words in ((3, "a int"), ([1], "an entry is a int"), (FirstGroupOnCpu, "pass class")):
        with pytest.raises(PipelineError, match=words):
            api.run_pipeline(module, bad)


def test_pipeline_option_errors_are_kebab_case():
    with pytest.raises(PipelineError, match=r"unknown option\(s\) stop-afte \(its options: "
                                            r"config, max-partitions, bias-placement, "
                                            r"start-after, stop-after\)"):
        parse_passes("vta-pipeline{stop-afte=x}")
    with pytest.raises(PipelineError, match="stop-after=x: no pass 'x' in the pipeline"):
        expand(parse_passes("vta-pipeline{stop-after=x}"))
    passes = expand(parse_passes("vta-pipeline{start-after=annotate-target "
                                 "stop-after=lower-q-to-accel}")).passes
    assert [s.name for s in passes] == ["partition-graph", "insert-pack-unpack",
                                        "lower-q-to-accel"]  # fmt: skip


# --- qaccel-compile -------------------------------------------------------------------------


def test_qaccel_compile_continues_from_the_stage(edited, tmp_path, capsys):
    from qaccel.tools import qaccel_compile

    path = tmp_path / "custom.mlir"
    path.write_text(api.print_ir(edited))
    code, out, err = _call(qaccel_compile.main, [path, "-o", tmp_path / "out"], capsys)
    assert code == 0, err
    assert "MACs on the accelerator: 59.06% of 1080640" in out
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["totals"]["host_macs"] == 32 * 32 * 16 * 3 * 3 * 3
    # An explicit pipeline that would redo a finished pass: one line, nothing written.
    code, _, err = _call(qaccel_compile.main, [path, "-o", tmp_path / "again", "-p",
                                               "vta-pipeline"], capsys)  # fmt: skip
    assert code == 1 and err.count("\n") == 1 and not (tmp_path / "again").exists()
    assert err.startswith("qaccel-compile: error: -p 'vta-pipeline' would run attach-target, "
                          "annotate-target again on a module that is already annotated")
    code, _, err = _call(qaccel_compile.main, [path, "-o", tmp_path / "rq", "--config",
                                               "vta-store-requant"], capsys)  # fmt: skip
    assert code == 1 and "configuration 'vta-store-requant' differs in store_requant" in err


def test_qaccel_compile_of_a_scheduled_module_reports_the_mac_share(tmp_path, capsys):
    from qaccel.tools import qaccel_compile

    module = api.import_model(MODELS / "mlp.tflite")
    api.run_pipeline(module, "vta-pipeline")
    path = tmp_path / "scheduled.mlir"
    path.write_text(api.print_ir(module))
    for extra in ([], ["-p", ""]):
        code, out, err = _call(qaccel_compile.main, [path, "-o", tmp_path / f"o{len(extra)}",
                                                     *extra], capsys)  # fmt: skip
        assert code == 0, err
        assert "MACs on the accelerator: 100.00% of 17024" in out


# --- printing -------------------------------------------------------------------------------


def test_elided_printing(capsys, tmp_path):
    from qaccel.tools import qaccel_opt

    module = api.import_model(SMALL_CNN)
    full = api.print_ir(module)
    short = api.print_ir(module, elide_larger_than=16)
    assert "dense_resource<__elided__> : tensor<16x3x3x3xi8>" in short
    assert len(short) < len(full) / 2 and "__elided__" not in full
    assert api.print_ir(module, elide_larger_than=10**9) == full
    code, out, err = _call(qaccel_opt.main, [SMALL_CNN, "-p", "vta-pipeline{stop-after="
                                             "lower-q-to-accel}", "--elide-elementsattrs-if-"
                                             "larger=8", "--print-ir-after=legalize-tfl-to-q"],
                           capsys)  # fmt: skip
    assert code == 0, err
    assert "dense_resource<__elided__>" in out and "by [__elided__]" in out  # lane lists too
    assert "dense_resource<__elided__>" in err.split("IR Dump After legalize-tfl-to-q")[1]


def test_qaccel_opt_help_lists_qaccel_first():
    def help_text(flag):
        code = f"import sys; sys.argv = ['qaccel-opt', {flag!r}]; from qaccel.tools.qaccel_opt " \
               "import main; main()"
        done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                              env={"COLUMNS": "80", "PATH": ""})  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    short, full = help_text("--help"), help_text("--help-all")
    for flag in ("--pass-timing", "--print-ir-after-all", "--elide-elementsattrs-if-larger",
                 "--list-passes", "--help-all", "-p PASSES"):  # fmt: skip
        assert flag in short and flag in full
    assert short.index("-p PASSES") < short.index("--pass-timing")
    for xdsl_only in ("--shrink", "--print-op-generic", "Available passes are"):
        assert xdsl_only not in short and xdsl_only in full
    assert full.index("--list-fusions") < full.index("--shrink")  # qaccel's first there too
    for alias in ("--time-passes", "--print-between-passes"):  # one flag per meaning
        assert alias not in short and alias not in full


def test_time_passes_is_an_alias_of_pass_timing(capsys):
    from qaccel.tools import qaccel_opt

    code, _, err = _call(qaccel_opt.main, [MODELS / "mlp.tflite", "-p", "cpu-pipeline",
                                           "--time-passes"], capsys)  # fmt: skip
    assert code == 0 and "Execution time report" in err and "legalize-tfl-to-q" in err
