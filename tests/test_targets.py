"""Targets: pattern terms, the registry and its `qaccel.targets` entry point (a target added by
another package, end to end through qaccel-opt), vta's ALU-feature and buffer checks, MACs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import FIXTURE_MODELS, parse_module
from qaccel.dialects.macs import function_macs, op_macs
from qaccel.targets.base import (
    Pattern,
    Target,
    TargetError,
    available_targets,
    check,
    get_target,
    parse_pattern,
    register_target,
)
from qaccel.targets.vta.target import vta_target

CONV = """
func.func @f(%x: tensor<1x8x8x16xi8>) -> tensor<1x8x8x32xi8> {
  %w = tfl.const dense<1> : tensor<32x3x3x16xi8> -> tensor<32x3x3x16xi8>
  %b = tfl.const dense<1> : tensor<32xi32> -> tensor<32xi32>
  %a = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x8x8x16xi8>, tensor<32x3x3x16xi8>) -> tensor<1x8x8x32xi32>
  %s = q.bias_add %a, %b : (tensor<1x8x8x32xi32>, tensor<32xi32>) -> tensor<1x8x8x32xi32>
  %y = q.requantize %s {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x8x8x32xi32>) -> tensor<1x8x8x32xi8>
  func.return %y : tensor<1x8x8x32xi8>
}
"""


def _block(text: str):
    module = parse_module(text)
    return module, next(iter(module.ops)).body.block


# --------------------------------------------------------------------------------------------
# Pattern terms


def test_pattern_variants_longest_first():
    term = parse_pattern("q.relu?(q.requantize(q.bias_add?(q.conv2d)))")
    assert [str(v) for v in term.variants()] == [
        "q.relu(q.requantize(q.bias_add(q.conv2d)))",
        "q.relu(q.requantize(q.conv2d))",
        "q.requantize(q.bias_add(q.conv2d))",
        "q.requantize(q.conv2d)",
    ]
    assert str(parse_pattern("q.add(_, q.relu)")) == "q.add(_, q.relu)"


@pytest.mark.parametrize(
    "text, message",
    [
        ("q.relu(", "expected an op name"),
        ("q.relu?", "optional op q.relu? needs exactly one sub-pattern"),
        ("q.add?(_, q.relu)", "needs exactly one sub-pattern, on its first operand"),
        ("q.relu q.add", "expected one op term"),
        ("q.relu(q.add;)", "unexpected ';'"),
    ],
)
def test_malformed_patterns_are_one_line_errors(text, message):
    with pytest.raises(TargetError, match=message.replace("?", r"\?").replace("(", r"\(")):
        parse_pattern(text)


def test_target_definition_errors():
    with pytest.raises(TargetError, match="two patterns named 'a'"):
        Target("t", (Pattern("a", "q.relu"), Pattern("a", "q.add")))
    with pytest.raises(TargetError, match="must be an identifier"):
        Target("my target", ())
    with pytest.raises(TargetError, match="expected an op name"):
        Target("t", (Pattern("a", "q.relu(("),))


# --------------------------------------------------------------------------------------------
# Registry


def test_registry_knows_vta_and_reports_unknown_names():
    vta = get_target("vta")
    assert vta.name == "vta" and vta.config.block == 16
    assert {"conv2d", "depthwise_conv2d", "dense", "add"} <= {p.name for p in vta.patterns}
    with pytest.raises(TargetError, match=r"unknown target 'nope' \(known: .*vta"):
        get_target("nope")


def test_register_target_in_process():
    @check("even-channels")
    def even(m):
        c = m.root.results[0].type.get_shape()[-1]
        return None if c % 64 == 0 else f"{c} channels, not a multiple of 64"

    register_target(
        "picky", Target("picky", (Pattern("conv", "q.requantize(q.bias_add(q.conv2d))", (even,)),))
    )
    try:
        target = get_target("picky")
        _, block = _block(CONV)
        result = target.match(block)
        assert result.groups == []
        conv = next(op for op in block.ops if op.name == "q.conv2d")
        assert target.explain(conv, result) == (
            "pattern conv refused: 32 channels, not a multiple of 64 [even-channels]"
        )
    finally:
        from qaccel.targets import base as targets

        targets._REGISTERED.pop("picky")
    assert "picky" not in available_targets()


OUTSIDE_PACKAGE = '''
"""A target that lives outside qaccel: 1x1 convolutions only, partition index by width."""
from qaccel.targets.base import Pattern, Target, check


@check("pointwise")
def pointwise(m):
    kh, kw = m["q.conv2d"].filter.type.get_shape()[1:3]
    return None if (kh, kw) == (1, 1) else f"{kh}x{kw} filter: acme runs 1x1 convolutions only"


def width_class(m):
    return 0 if m.root.results[0].type.get_shape()[-1] <= 16 else 1


def make_target():
    return Target(
        "acme",
        (Pattern("pointwise", "q.relu?(q.requantize(q.bias_add?(q.conv2d)))", (pointwise,),
                 partition_index=width_class),),
        description="ACME NPU (test)",
    )
'''

OUTSIDE_IR = """
func.func @main(%x: tensor<1x4x4x16xi8>) -> tensor<1x4x4x32xi8> {
  %w1 = tfl.const dense<1> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16xi8>
  %w3 = tfl.const dense<1> : tensor<16x3x3x16xi8> -> tensor<16x3x3x16xi8>
  %w2 = tfl.const dense<1> : tensor<32x1x1x16xi8> -> tensor<32x1x1x16xi8>
  %a0 = q.conv2d %x, %w1 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %a = q.requantize %a0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %b0 = q.conv2d %a, %w1 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
  %b = q.requantize %b0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %c0 = q.conv2d %b, %w3 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x3x3x16xi8>) -> tensor<1x4x4x16xi32>
  %c = q.requantize %c0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
  %d0 = q.conv2d %c, %w2 {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<32x1x1x16xi8>) -> tensor<1x4x4x32xi32>
  %d = q.requantize %d0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x32xi32>) -> tensor<1x4x4x32xi8>
  func.return %d : tensor<1x4x4x32xi8>
}
"""


@pytest.fixture()
def outside_package(tmp_path: Path) -> Path:
    """An installed-looking distribution `acme-npu` declaring `qaccel.targets: acme`."""
    (tmp_path / "acme_npu").mkdir()
    (tmp_path / "acme_npu" / "__init__.py").write_text(OUTSIDE_PACKAGE)
    info = tmp_path / "acme_npu-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: acme-npu\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[qaccel.targets]\nacme = acme_npu:make_target\n")
    return tmp_path


def test_target_from_another_package_partitions_through_qaccel_opt(outside_package: Path):
    model = outside_package / "model.mlir"
    model.write_text(OUTSIDE_IR)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(outside_package), env.get("PYTHONPATH", "")])
    pipeline = "annotate-target{target=acme},partition-graph{target=acme explain=true}"
    run = subprocess.run(
        [sys.executable, "-m", "qaccel.tools.qaccel_opt", str(model), "-p", pipeline],
        check=False, capture_output=True, text=True, env=env, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    out = run.stdout
    # %a, %b (16 channels: index 0) form one partition; %d (32 channels: index 1) another;
    # the 3x3 convolution stays on the CPU, and the report says why.
    assert out.count('attributes {qaccel.target = "acme"}') == 2
    assert "func.call @acme_fn_0(%x)" in out and "func.call @acme_fn_1(" in out
    assert 'qaccel.pattern = "pointwise"' in out and "qaccel.partition_index = 1 : i64" in out
    assert "acme: selected 6 of 8 ops (30.8% of MACs) into 2 partitions" in run.stderr
    assert (
        "acme: kept on CPU: q.conv2d %c0: pattern pointwise refused: 3x3 filter: acme runs "
        "1x1 convolutions only [pointwise]" in run.stderr
    )


def test_target_from_another_package_in_process(outside_package: Path, monkeypatch):
    import importlib

    monkeypatch.syspath_prepend(str(outside_package))
    importlib.invalidate_caches()
    try:
        assert "acme" in available_targets()
        target = get_target("acme")
        assert target.description == "ACME NPU (test)"
        _, block = _block(OUTSIDE_IR)
        result = target.match(block)
        assert [(m.pattern.name, index, len(m.ops)) for m, index in result.groups] == [
            ("pointwise", 0, 2), ("pointwise", 0, 2), ("pointwise", 1, 2),
        ]  # fmt: skip
        with pytest.raises(TargetError, match="takes no hardware configuration file"):
            get_target("acme", "hw.json")
    finally:
        sys.modules.pop("acme_npu", None)


# --------------------------------------------------------------------------------------------
# vta's checks that the command line cannot reach: ALU features and other configurations


def test_plain_vta_alu_cannot_requantize():
    from qaccel.targets.vta.isa import AluOp

    classic = vta_target(alu_ops=[AluOp.MIN, AluOp.MAX, AluOp.ADD, AluOp.SHR])
    _, block = _block(CONV)
    result = classic.match(block)
    assert result.groups == []
    conv = next(op for op in block.ops if op.name == "q.conv2d")
    assert classic.explain(conv, result) == (
        "pattern conv2d refused: q.requantize needs ALU RDMUL/RSHR, which this configuration "
        "lacks (it has ADD, MAX, MIN, SHR) [alu-ops]"
    )
    assert vta_target().match(block).groups  # with our extensions it runs


def test_hardware_config_file_changes_buffer_checks(tmp_path: Path):
    path = tmp_path / "small.json"
    path.write_text(json.dumps({"name": "tiny-wgt", "log_wgt_buff_size": 11}))  # 8 tiles
    small = get_target("vta", str(path))
    assert small.config.name == "tiny-wgt" and small.config.depth("wgt") == 8
    _, block = _block(CONV)
    result = small.match(block)
    conv = next(op for op in block.ops if op.name == "q.conv2d")
    assert small.explain(conv, result) == (
        "pattern conv2d refused: a 3x3 filter needs 9 weight tiles (2.25 KiB) per 16x16 channel "
        "block; the weight buffer holds 8 (2 KiB) [buffers]"
    )
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"log_wgt_buff_size": "big"}))
    with pytest.raises(ValueError, match="log_wgt_buff_size must be a non-negative integer"):
        get_target("vta", str(bad))


# --------------------------------------------------------------------------------------------
# MACs


def test_macs_of_each_kind():
    module = parse_module(
        textwrap.dedent("""
        func.func @f(%x: tensor<1x8x8x16xi8>, %v: tensor<2x3x64xi8>) -> () {
          %w = tfl.const dense<1> : tensor<32x3x3x8xi8> -> tensor<32x3x3x8xi8>
          %dw = tfl.const dense<1> : tensor<1x3x3x32xi8> -> tensor<1x3x3x32xi8>
          %fw = tfl.const dense<1> : tensor<10x64xi8> -> tensor<10x64xi8>
          %g = q.conv2d %x, %w {strides = array<i64: 2, 2>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 1, 0, 1>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x8x8x16xi8>, tensor<32x3x3x8xi8>) -> tensor<1x4x4x32xi32>
          %d = q.depthwise_conv2d %x, %dw {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 1, 1, 1, 1>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32, depth_multiplier = 2 : i32} : (tensor<1x8x8x16xi8>, tensor<1x3x3x32xi8>) -> tensor<1x8x8x32xi32>
          %f = q.dense %v, %fw {input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<2x3x64xi8>, tensor<10x64xi8>) -> tensor<2x3x10xi32>
          %r = q.relu %x {min = 0 : i32, max = 127 : i32} : (tensor<1x8x8x16xi8>) -> tensor<1x8x8x16xi8>
          func.return
        }
    """)
    )
    ops = {op.name: op for op in next(iter(module.ops)).body.block.ops}
    assert op_macs(ops["q.conv2d"]) == 4 * 4 * 32 * 3 * 3 * 8  # grouped: 2 groups of 8
    assert op_macs(ops["q.depthwise_conv2d"]) == 8 * 8 * 32 * 3 * 3
    assert op_macs(ops["q.dense"]) == 2 * 3 * 10 * 64
    assert op_macs(ops["q.relu"]) == 0 and op_macs(ops["tfl.const"]) == 0
    assert function_macs(next(iter(module.ops))) == 36864 + 18432 + 3840


def test_tfl_and_q_forms_count_the_same_macs():
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.passes.legalize_tfl_to_q import LegalizeTflToQPass
    from qaccel.pipeline.manager import qaccel_context

    module = import_tflite((FIXTURE_MODELS / "cnn.tflite").read_bytes(), "cnn.tflite")
    entry = next(iter(module.ops))
    before = function_macs(entry)
    LegalizeTflToQPass().apply(qaccel_context(), module)
    assert function_macs(entry) == before == 2_195_776
