"""The registered discardable attributes (`dialects/annotations.py`) and `#accel.target`:
verified with the IR, on the pass manager's input and after every pass."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from qaccel.dialects.accel import MODULE_TARGET_ATTR, TargetAttr
from qaccel.dialects.annotations import REGISTERED, accelerator_functions, verify_annotations
from qaccel.pipeline.manager import (
    PassManager,
    PassVerificationError,
    ScheduledPass,
    build_pipeline,
    qaccel_context,
)
from qaccel.targets.base import TargetError, module_target, target_attr, target_from_attr
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.targets.vta.target import vta_target
from xdsl.dialects.builtin import IntegerAttr, StringAttr, i32, i64
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import VerifyException

from conftest import parse_module

IR = """
func.func @main(%x: tensor<1x4xi8>) -> tensor<1x4xi8> {
  %y = q.relu %x {min = -128 : i32, max = 127 : i32, qaccel.target = "vta", qaccel.group = 0 : i64} : (tensor<1x4xi8>) -> tensor<1x4xi8>
  func.return %y : tensor<1x4xi8>
}
"""


def relu_of(module):
    return next(op for op in module.walk() if op.name == "q.relu")


def test_annotations_are_registered_under_the_qaccel_dialect():
    assert set(REGISTERED) == {"qaccel.target", "qaccel.pattern", "qaccel.group",
                               "qaccel.partition_index", "accel.target"}  # fmt: skip
    assert "qaccel" in qaccel_context().registered_dialect_names


@pytest.mark.parametrize(
    "name, value, message",
    [
        ("qaccel.target", IntegerAttr(1, i64), "qaccel.target must be a target name"),
        ("qaccel.target", StringAttr("two words"), "qaccel.target must be a target name"),
        ("qaccel.group", IntegerAttr(-1, i64), "qaccel.group must be >= 0, got -1"),
        ("qaccel.group", IntegerAttr(1, i32), "qaccel.group must be an i64 integer"),
        ("qaccel.partition_index", StringAttr("0"), "qaccel.partition_index must be an i64"),
        ("qaccel.pattern", StringAttr(""), "qaccel.pattern must be a non-empty pattern name"),
        ("accel.target", StringAttr("vta"), "accel.target belongs on builtin.module only"),
    ],
)
def test_bad_values_are_refused_naming_op_and_attribute(name, value, message):
    module = parse_module(IR)
    verify_annotations(module)
    relu_of(module).attributes[name] = value
    with pytest.raises(VerifyException, match=f"^q.relu: {message}"):
        verify_annotations(module)


def test_group_needs_a_target():
    module = parse_module(IR)
    del relu_of(module).attributes["qaccel.target"]
    with pytest.raises(VerifyException, match="qaccel.group needs qaccel.target on the same op"):
        verify_annotations(module)


def test_the_pass_manager_verifies_annotations_after_every_pass():
    @dataclass(frozen=True)
    class BreakGroup(ModulePass):
        name = "break-group"

        def apply(self, ctx, op):
            relu_of(op).attributes["qaccel.group"] = IntegerAttr(-2, i64)

    module = parse_module(IR)
    manager = PassManager([ScheduledPass(BreakGroup())])
    with pytest.raises(PassVerificationError, match="after pass 'break-group'.*qaccel.group must"):
        manager.run(qaccel_context(), module)


def test_target_attr_round_trips_every_config():
    for config in (DEFAULT_CONFIG, HardwareConfig.from_json("vta-store-requant")):
        attr = target_attr(vta_target(config))
        attr.verify()
        assert target_from_attr(attr).config == config


def test_module_target_names_what_is_missing_or_wrong():
    module = parse_module(IR)
    with pytest.raises(TargetError, match="no accel.target: run attach-target"):
        module_target(module)
    build_pipeline("attach-target{config=vta-store-requant}").apply(qaccel_context(), module)
    assert module_target(module).config.store_requant
    with pytest.raises(TargetError, match="compiled for target vta, not acme"):
        module_target(module, "acme")
    bad = dict(DEFAULT_CONFIG.to_dict(), log_block=40)
    module.attributes[MODULE_TARGET_ATTR] = TargetAttr("vta", bad)
    with pytest.raises(TargetError, match='#accel.target<"vta">: hardware config'):
        module_target(module)


def test_accelerator_functions_in_module_order():
    module = parse_module(IR + """
      func.func private @vta_fn_1() attributes {qaccel.target = "vta"} { func.return }
      func.func private @vta_fn_0() attributes {qaccel.target = "vta"} { func.return }
    """)
    assert [f.sym_name.data for f in accelerator_functions(module)] == ["vta_fn_1", "vta_fn_0"]
