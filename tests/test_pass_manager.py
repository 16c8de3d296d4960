"""The pass manager: named pipelines, pass-manager flags of qaccel-opt and qaccel-run,
--verify-semantics, and docs/passes.md staleness."""

from __future__ import annotations

import importlib.util
import io
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from qaccel.pipeline.manager import (
    IRPrinter,
    NamedPipeline,
    PassManager,
    PassTiming,
    PipelineError,
    SemanticsVerifier,
    available_passes,
    compare_outputs,
    expand,
    parse_passes,
    pass_info,
    same_ir,
)
from qaccel.pipeline.named import VtaPipeline
from qaccel.tools import gen_pass_docs
from qaccel.tools.qaccel_opt import main as qaccel_opt

from conftest import FIXTURE_MODELS, context, parse_module

TESTS = Path(__file__).parent
_spec = importlib.util.spec_from_file_location(
    "opt_with_test_passes", TESTS / "filecheck" / "tools" / "Inputs" / "opt_with_test_passes.py"
)
test_passes = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(test_passes)
TEST_PASSES = test_passes.TEST_PASSES

ADD_IR = """
!q = !quant.uniform<i8:f32, 0.5:-1>
func.func @main(%x: tensor<4x!q>) -> tensor<4x!q> {
  %c = tfl.const dense<[1, 2, 3, 4]> : tensor<4xi8> -> tensor<4x!q>
  %0 = tfl.add %x, %c {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  %1 = tfl.add %x, %c {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  %2 = tfl.add %0, %1 {fused_activation_function = "NONE", pot_scale_int16 = true} : (tensor<4x!q>, tensor<4x!q>) -> tensor<4x!q>
  func.return %2 : tensor<4x!q>
}
"""


def run_opt(capsys, args: list[str], extra_passes=TEST_PASSES) -> tuple[int, str, str]:
    try:
        qaccel_opt(args, extra_passes=extra_passes)
        code = 0
    except SystemExit as e:
        code = e.code or 0
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def add_ir(tmp_path: Path) -> Path:
    path = tmp_path / "add.mlir"
    path.write_text(ADD_IR)
    return path


# --------------------------------------------------------------------------------------------
# Named pipelines


def _fake_pass(pass_name: str, **options):
    """A registered pass class with the given options (name -> default), doing nothing."""
    fields = {k: (type(v) if v is not None else int | None, v) for k, v in options.items()}
    namespace = {"name": pass_name, "apply": lambda self, ctx, op: None,
                 "__annotations__": {k: t for k, (t, _) in fields.items()},
                 **{k: v for k, (_, v) in fields.items()}}  # fmt: skip
    cls = dataclass(frozen=True)(type(pass_name, (ModulePass,), namespace))
    return lambda: cls


VTA_FLOW = {
    "attach-target": _fake_pass("attach-target", target="", config=""),
    "fuse-composites": _fake_pass("fuse-composites"),
    "legalize-tfl-to-q": _fake_pass("legalize-tfl-to-q"),
    "annotate-target": _fake_pass("annotate-target", target=""),
    "partition-graph": _fake_pass("partition-graph", target="", max_partitions=None),
    "insert-pack-unpack": _fake_pass("insert-pack-unpack"),
    "lower-q-to-accel": _fake_pass("lower-q-to-accel", bias_placement="fused"),
    "form-vta-layers": _fake_pass("form-vta-layers"),
    "schedule-vta": _fake_pass("schedule-vta"),
    "vta-pipeline": lambda: VtaPipeline,
}


def test_vta_pipeline_expands_in_order_with_pass_through_options():
    scheduled = expand(
        parse_passes("vta-pipeline{max-partitions=4 bias-placement=preload},cse", {**VTA_FLOW,
                     "cse": available_passes()["cse"]}),  # fmt: skip
        {**VTA_FLOW, "cse": available_passes()["cse"]},
    )
    assert [s.label for s in scheduled.passes] == [
        "attach-target{target=vta} (vta-pipeline)",
        "fuse-composites (vta-pipeline)",
        "legalize-tfl-to-q (vta-pipeline)",
        "annotate-target (vta-pipeline)",
        "partition-graph{max-partitions=4} (vta-pipeline)",
        "insert-pack-unpack (vta-pipeline)",
        "lower-q-to-accel{bias-placement=preload} (vta-pipeline)",
        "form-vta-layers (vta-pipeline)",
        "schedule-vta (vta-pipeline)",
        "cse",
    ]
    attach, partition = scheduled.passes[0].pass_, scheduled.passes[4].pass_
    assert (attach.target, attach.config) == ("vta", "")
    assert (partition.target, partition.max_partitions) == ("", 4)


def test_unknown_pass_in_a_named_pipeline_is_an_error():
    available = {k: v for k, v in VTA_FLOW.items() if k in ("fuse-composites", "vta-pipeline")}
    with pytest.raises(PipelineError, match=(
        r"^vta-pipeline: unknown pass 'attach-target' in the pipeline \(no pass of that name "
        r"is registered\)$"
    )):  # fmt: skip
        expand(parse_passes("vta-pipeline", available), available)
    available = {k: v for k, v in VTA_FLOW.items() if k != "partition-graph"}
    for spec in ("vta-pipeline", "vta-pipeline{max-partitions=4}"):
        with pytest.raises(PipelineError, match=r"unknown pass 'partition-graph'"):
            expand(parse_passes(spec, available), available)


def test_bad_inner_options_and_unloadable_passes_name_the_pass():
    available = {**VTA_FLOW, "lower-q-to-accel": _fake_pass("lower-q-to-accel")}
    with pytest.raises(PipelineError, match=(
        r"^vta-pipeline\{bias-placement=preload\}: bad options for pass 'lower-q-to-accel': "
    )):  # fmt: skip
        expand(parse_passes("vta-pipeline{bias-placement=preload}", available), available)

    def broken():
        raise ImportError("No module named 'qaccel.passes.annotate_target'")

    available = {**VTA_FLOW, "annotate-target": broken}
    with pytest.raises(PipelineError, match=(
        r"^vta-pipeline: pass 'annotate-target' is registered but cannot be loaded: "
        r"ImportError: No module named"
    )):  # fmt: skip
        expand(parse_passes("vta-pipeline", available), available)
    info = pass_info("annotate-target", available)
    assert info.error is not None and "No module named" in info.error


@dataclass(frozen=True)
class LoopPipeline(NamedPipeline):
    """Expands to itself."""

    name = "test-loop"

    def expansion(self):
        return ["test-loop"]


@dataclass(frozen=True)
class OuterPipeline(NamedPipeline):
    """Nests test-pipeline."""

    name = "test-outer"
    value: int | None = None

    def expansion(self):
        return [f"test-pipeline{{value={self.value or 0}}},dce"]


def test_nested_pipelines_flatten_and_cycles_are_reported():
    available = {**available_passes(), **TEST_PASSES,
                 "test-loop": lambda: LoopPipeline, "test-outer": lambda: OuterPipeline}  # fmt: skip
    scheduled = expand(parse_passes("test-outer{value=3}", available), available)
    assert [s.label for s in scheduled.passes] == [
        "cse (test-outer > test-pipeline)",
        "test-set-attr{value=3} (test-outer > test-pipeline)",
        "dce (test-outer)",
    ]
    with pytest.raises(PipelineError, match="nest too deeply"):
        expand(parse_passes("test-loop", available), available)


def test_named_pipeline_applies_as_one_pass_too():
    module = parse_module(ADD_IR)
    CseOnly().apply(context(), module)  # resolves names in the multiverse
    assert sum(op.name == "tfl.add" for op in module.walk()) == 2
    # test-set-attr is not in the multiverse: running the pipeline there is an error.
    with pytest.raises(PipelineError, match="unknown pass 'test-set-attr'"):
        test_passes.TestPipeline().apply(context(), parse_module(ADD_IR))


@dataclass(frozen=True)
class CseOnly(NamedPipeline):
    """Runs `cse`."""

    name = "test-cse-only"

    def expansion(self):
        return ["cse"]


def test_real_pipelines_are_registered_and_documented():
    available = available_passes()
    for name in ("vta-pipeline", "cpu-pipeline"):
        info = pass_info(name, available)
        assert info.error is None and info.is_pipeline and info.summary
        start = 1 if name == "vta-pipeline" else 0  # after attach-target{target=vta}
        assert info.expansion[start:start + 2] == ("fuse-composites", "legalize-tfl-to-q")
    options = {o.name: o for o in pass_info("vta-pipeline", available).options}
    assert options["max-partitions"].type == "int | None"
    assert options["max-partitions"].doc.startswith("Passed to `partition-graph`")


# --------------------------------------------------------------------------------------------
# qaccel-opt flags


def test_list_passes(capsys):
    def broken():
        raise ImportError("no such module")

    code, out, err = run_opt(capsys, ["--list-passes"], {**TEST_PASSES, "test-broken": broken})
    assert code == 0 and err == ""
    lines = out.splitlines()
    assert lines[0] == "qaccel named pipelines:"
    vta = lines.index(next(line for line in lines if line.startswith("  vta-pipeline ")))
    assert "max-partitions: int | None = none  Passed to `partition-graph`" in lines[vta + 2]
    assert "bias-placement: alu|preload | None = none  Passed to `lower-q-to-accel`" in lines[vta + 3]
    assert "stop-after: str | None = none  Run the passes up to and including" in lines[vta + 5]
    assert any(line.startswith("      runs: attach-target{target=vta}, fuse-composites, "
                               "legalize-tfl-to-q, annotate-target")
               for line in lines[vta:vta + 7])  # fmt: skip
    assert any(line.startswith("  canonicalize ") for line in lines)
    assert "  test-broken               (not available: ImportError: no such module)" in lines


def test_print_ir_after_names_a_pass_or_pipeline_that_runs(capsys, add_ir):
    code, out, err = run_opt(capsys, [str(add_ir), "-p", "test-pipeline{value=1},dce",
                                      "--print-ir-after=test-set-attr,test-pipeline"])  # fmt: skip
    assert code == 0
    headers = [line for line in err.splitlines() if line.startswith("// -----//")]
    assert headers == [
        "// -----// IR Dump After test-set-attr{value=1} (test-pipeline) //----- //",
        "// -----// IR Dump After test-pipeline //----- //",
    ]
    code, out, err = run_opt(capsys, [str(add_ir), "-p", "cse", "--print-ir-after=dce"])
    assert code == 1
    assert err == ("qaccel-opt: error: --print-ir-after: pass 'dce' is not in the pipeline "
                   "(passes that run: cse)\n")  # fmt: skip


def test_pass_timing_table_goes_to_stderr(capsys, add_ir):
    code, out, err = run_opt(capsys, [str(add_ir), "-p", "test-pipeline,cse", "--pass-timing"])
    assert code == 0 and out.startswith("builtin.module")
    lines = err.splitlines()
    assert lines[0] == lines[2] == "===" + "-" * 73 + "==="
    assert lines[1].strip() == "... Execution time report ..."
    assert lines[3].startswith("  Total Execution Time: ")
    names = [line[21:] for line in lines[6:]]
    assert names == ["Parse (mlir)", "test-pipeline", "  cse", "  test-set-attr", "cse",
                     "Verifier", "Output (mlir)", "Total"]  # fmt: skip


def test_timing_report_accumulates_and_orders_rows():
    timing = PassTiming()
    timing.add(("output",), "Output", 1.0)
    timing.add("verifier", "Verifier", 1.0)
    timing.add(("input",), "Parse", 2.0)
    timing.add("verifier", "Verifier", 1.0)
    timing.total = 5.0
    out = io.StringIO()
    timing.report(out)
    rows = out.getvalue().splitlines()[6:]
    assert rows == [
        "    2.0000 ( 40.0%)  Parse",
        "    2.0000 ( 40.0%)  Verifier",
        "    1.0000 ( 20.0%)  Output",
        "    5.0000 (100.0%)  Total",
    ]


# --------------------------------------------------------------------------------------------
# --verify-semantics


def test_verify_semantics_names_the_pass_that_changed_an_output(capsys, add_ir):
    code, out, err = run_opt(
        capsys, ["--verify-semantics", str(add_ir), "-p", "cse,test-corrupt-const{delta=3}"]
    )
    assert code == 1 and out == ""
    assert err == (
        "qaccel-opt: error: --verify-semantics: pass 'test-corrupt-const{delta=3}' changed "
        "output 0 of @main (1 of 4 elements differ, max |diff| 6)\n"
    )


def test_verify_semantics_names_the_pipeline_and_takes_a_seed(capsys, add_ir):
    code, out, err = run_opt(capsys, [str(add_ir), "-p", "test-pipeline,test-corrupt-const",
                                      "--verify-semantics=7"])  # fmt: skip
    assert code == 1
    assert "pass 'test-corrupt-const' changed output 0 of @main (1 of 4" in err
    code, out, err = run_opt(capsys, [str(add_ir), "-p", "test-pipeline,test-corrupt-const{delta=0}",
                                      "--verify-semantics=7"])  # fmt: skip
    assert code == 0, err
    assert "test.value = 0" in out


def test_verify_semantics_reports_a_module_it_cannot_run(capsys, add_ir, tmp_path):
    code, _, err = run_opt(capsys, [str(add_ir), "-p", "cse,test-insert-unknown-op",
                                    "--verify-semantics"])  # fmt: skip
    assert code == 1 and err.count("\n") == 1
    assert err.startswith(
        "qaccel-opt: error: --verify-semantics: cannot run @main after pass "
        "'test-insert-unknown-op': cannot execute op arith.constant: no implementation of "
        "arith.constant\n"
    )
    no_function = tmp_path / "empty.mlir"
    no_function.write_text("builtin.module {}\n")
    code, _, err = run_opt(capsys, [str(no_function), "-p", "cse", "--verify-semantics"])
    assert code == 0  # nothing changed: nothing to run
    code, _, err = run_opt(capsys, [str(no_function), "-p", "test-set-attr", "--verify-semantics"])
    assert code == 1
    assert err == ("qaccel-opt: error: --verify-semantics: cannot run the input: the module "
                   "has no public function to run\n")  # fmt: skip


def test_invalid_ir_after_a_pass_names_the_pass(capsys, add_ir):
    code, _, err = run_opt(capsys, [str(add_ir), "-p", "cse,test-break-ir"])
    assert code == 1
    assert err == (
        "qaccel-opt: error: IR after pass 'test-break-ir' does not verify: tfl.const: value "
        "shape (1, 2, 3) does not match the result shape (4,)\n"
    )


def test_unchanged_modules_are_not_run_again():
    module = parse_module(ADD_IR)
    available = {**available_passes(), **TEST_PASSES}
    scheduled = expand(parse_passes("dce,test-corrupt-const{delta=0},cse,dce", available))
    verifier = SemanticsVerifier(seed=3)
    PassManager(scheduled.passes, [verifier]).run(context(), module)
    assert verifier.runs == 2  # the input, and after cse (the only pass that changed the IR)
    PassManager(scheduled.passes, [verifier]).run(context(), module)
    assert verifier.runs == 2  # nothing changed this time: the interpreter never ran


def test_same_ir_sees_result_types():
    a = parse_module(ADD_IR)
    b = parse_module(ADD_IR.replace("0.5:-1", "0.25:-1"))
    assert same_ir(a, a.clone()) and not same_ir(a, b)
    assert not same_ir(a, parse_module(ADD_IR.replace("[1, 2, 3, 4]", "[1, 2, 3, 5]")))


def test_compare_outputs_is_bit_for_bit():
    x = np.array([1, -2, 3], np.int8)
    assert compare_outputs([x], [x.copy()], "f") is None
    assert compare_outputs([x], [x, x], "f") == "the number of outputs of @f from 1 to 2"
    assert compare_outputs([x], [x.astype(np.int16)], "f") == "output 0 of @f from int8[3] to int16[3]"
    assert compare_outputs([x], [x.reshape(1, 3)], "f") == "output 0 of @f from int8[3] to int8[1x3]"
    assert compare_outputs([x], [np.array([1, 127, 3], np.int8)], "f") == (
        "output 0 of @f (1 of 3 elements differ, max |diff| 129)"
    )
    z = np.array([0.0, np.nan], np.float32)
    assert compare_outputs([z], [z.copy()], "f") is None  # same NaN bits
    assert compare_outputs([z], [np.array([-0.0, np.nan], np.float32)], "f") == (
        "output 0 of @f (1 of 2 elements differ, max |diff| 0)"
    )


def test_verify_semantics_on_a_fixture_model_with_the_real_passes(capsys):
    model = str(FIXTURE_MODELS / "small_cnn.tflite")
    code, out, err = run_opt(capsys, [model, "-p", "cpu-pipeline", "--verify-semantics"], {})
    assert code == 0, err
    assert "tfl.conv_2d" not in out


def test_ir_printer_dumps_after_every_inner_pass():
    module = parse_module(ADD_IR)
    available = {**available_passes(), **TEST_PASSES}
    scheduled = expand(parse_passes("test-pipeline{value=2},dce", available), available)
    out = io.StringIO()
    PassManager(scheduled.passes, [IRPrinter(after_all=True, stream=out)]).run(context(), module)
    headers = [line for line in out.getvalue().splitlines() if line.startswith("//")]
    assert headers == [
        "// -----// IR Dump After cse (test-pipeline) //----- //",
        "// -----// IR Dump After test-set-attr{value=2} (test-pipeline) //----- //",
        "// -----// IR Dump After dce //----- //",
    ]


# --------------------------------------------------------------------------------------------
# qaccel-run and docs


def test_qaccel_run_takes_the_pass_manager_flags(tmp_path, add_ir, capsys):
    from qaccel.tools.qaccel_run import main as qaccel_run

    with pytest.raises(SystemExit) as e:
        qaccel_run([str(add_ir), "-p", "cse", "--print-ir-after-all", "--pass-timing",
                    "--outputs-dir", str(tmp_path / "out")])  # fmt: skip
    out, err = capsys.readouterr()
    assert e.value.code == 0, err
    assert "// -----// IR Dump After cse //----- //" in err
    assert "... Execution time report ..." in err
    assert (tmp_path / "out" / "output_0.npy").exists()


def test_docs_passes_md_is_up_to_date():
    problem = gen_pass_docs.check()
    assert problem is None, problem


def test_docs_check_command_fails_on_stale_docs(tmp_path):
    stale = tmp_path / "passes.md"
    stale.write_text("old\n")
    result = subprocess.run(
        [sys.executable, "-m", "qaccel.tools.gen_pass_docs", "--check", "-o", str(stale)],
        capture_output=True, text=True,
    )
    assert result.returncode == 1
    assert "regenerate it with `python -m qaccel.tools.gen_pass_docs`" in result.stderr


def test_verify_input_false_leaves_the_input_to_its_boundary():
    """`verify_input=False` (qaccel-compile: its input was verified where it was parsed or
    imported) skips only the input's verification; the result is still verified."""
    from qaccel.pipeline.runner import PassVerificationError

    module = parse_module(ADD_IR)
    available = {**available_passes(), **TEST_PASSES}
    timing = PassTiming()
    PassManager(expand(parse_passes("cse", available)).passes, timing=timing,
                verify_each=False, verify_input=False).run(context(), module)  # fmt: skip
    assert timing.rows["verifier"][2] > 0  # the result's verification, after the last pass
    broken = expand(parse_passes("test-break-ir", available)).passes
    module = parse_module(ADD_IR)
    with pytest.raises(PassVerificationError, match="IR after pass 'test-break-ir' does not"):
        PassManager(broken, verify_each=False, verify_input=False).run(context(), module)
    PassManager([], verify_input=False).run(context(), ModuleOp([]))  # nothing to verify
