"""The `vta` dialect's schedule attributes: each attribute's field table is its parameter list,
every layer kind has a schedule kind, and `schedule_attr` / `fields()` round-trip."""

from __future__ import annotations

import pytest
from xdsl.utils.exceptions import VerifyException

from qaccel.dialects import vta


@pytest.mark.parametrize("attr", vta.VTA_ATTRIBUTES, ids=lambda a: a.name)
def test_fields_are_the_parameters(attr):
    parameters = [name for name, _ in attr.get_irdl_definition().parameters]
    assert [f.name for f in attr.FIELDS] == parameters
    assert vta.SCHEDULES[attr.SCHEDULE_KIND] is attr


def test_every_layer_kind_has_a_schedule_kind():
    assert set(vta.LAYER_SCHEDULES.values()) <= set(vta.SCHEDULES.values())
    assert set(vta.GEMM_KINDS) == {"conv", "depthwise", "dense"}


def test_round_trip_of_fields():
    fields = dict(config="vta-default", tile_h=2, tile_w=8, tile_co=1, tile_ci=1,
                  loop_order="channel", bias_mode="dma", acc_slots=2)  # fmt: skip
    attr = vta.schedule_attr("gemm", **fields)
    assert isinstance(attr, vta.GemmScheduleAttr) and attr.fields() == fields
    alu = vta.schedule_attr("pool", rows=3, output_stage=True)
    assert alu.fields() == {"rows": 3, "output_stage": True}


def test_constructor_refuses_unknown_and_invalid_fields():
    with pytest.raises(VerifyException, match="unknown fields rows"):
        vta.GemmScheduleAttr(tile_h=1, tile_w=1, tile_co=1, tile_ci=1, rows=4)
    with pytest.raises(VerifyException, match="tile_w must be positive, got 0"):
        vta.GemmScheduleAttr(tile_h=1, tile_w=0, tile_co=1, tile_ci=1)
