"""`schedule-vta`: choose each accelerator layer's loop structure and keep it in the IR.

Every `accel.conv2d_zp` / `accel.dense_zp` of a `vta` accelerator function that forms a layer
with its requantization tail (`lowering/vta/layers.py`) gets a `qaccel.schedule` dictionary:
the tiling the cost-model search chose (`lowering/vta/schedule.py`), i.e. the loop nest the
emitter walks: output-row, output-column, output-channel and input-channel tile sizes (pixels;
channel blocks), the order of the two outer loops, how the bias reaches the accumulators, and
how many slots of each on-chip buffer double-buffer the loads (VTA's virtual threads).
`qaccel-compile` emits the instruction streams from these attributes, so a schedule written
or edited by hand in the IR is what runs.

    %acc = accel.conv2d_zp %x, %w pad_value(-1) {...} : ...
  becomes
    %acc = accel.conv2d_zp %x, %w pad_value(-1) {..., qaccel.schedule = {
               acc_slots = 2 : i64, bias_mode = "alu", config = "vta-default",
               estimated_cycles = 5216 : i64, inp_slots = 2 : i64, loop_order = "spatial",
               tile_ci = 1 : i64, tile_co = 1 : i64, tile_h = 8 : i64, tile_w = 8 : i64,
               wgt_slots = 1 : i64}} : ...

A `qaccel.schedule` already present is checked (it must fit on chip for this layer and name
this hardware configuration) and kept, unless `recompute=true`. An op that does not form a
layer (e.g. its tail is not a requantization) or has no tiling that fits gets no schedule; `qaccel-compile` runs it on
the host and reports why. The attribute does not change what the op computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from qaccel.dialects import accel
from qaccel.lowering.vta.layers import NotALayer, match_layer
from qaccel.lowering.vta.schedule import (
    BIAS_MODES,
    LOOP_ORDERS,
    ConvLayer,
    LayerError,
    Schedule,
    make_schedule,
    schedule,
)
from qaccel.dialects.annotations import TARGET_ATTR
from qaccel.targets.base import TargetError, hardware_config
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import DictionaryAttr, IntegerAttr, ModuleOp, StringAttr, i64
from xdsl.ir import Attribute, Operation
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

PASS = "schedule-vta"
SCHEDULE_ATTR = "qaccel.schedule"
_INT_FIELDS = ("tile_h", "tile_w", "tile_co", "tile_ci", "inp_slots", "wgt_slots", "acc_slots")
_STR_FIELDS = {"loop_order": LOOP_ORDERS, "bias_mode": BIAS_MODES}


class ScheduleAttrError(ValueError):
    """A `qaccel.schedule` attribute that is malformed (message names the field)."""


def schedule_attr(sched: Schedule, config_name: str) -> DictionaryAttr:
    values: dict[str, Attribute] = {"config": StringAttr(config_name)}
    for key, value in sched.tiling().items():
        values[key] = StringAttr(value) if isinstance(value, str) else IntegerAttr(value, i64)
    values["estimated_cycles"] = IntegerAttr(int(sched.estimated_cycles), i64)
    return DictionaryAttr(values)


def read_schedule_attr(attr: Attribute) -> tuple[str | None, dict]:
    """(hardware config name or None, tiling keyword arguments of `make_schedule`)."""
    if not isinstance(attr, DictionaryAttr):
        raise ScheduleAttrError(f"{SCHEDULE_ATTR} must be a dictionary")
    data = attr.data
    tiling: dict = {}
    for key in _INT_FIELDS:
        value = data.get(key)
        if value is None:
            if key.endswith("_slots"):
                continue  # the search's choice for this tiling
            raise ScheduleAttrError(f"{SCHEDULE_ATTR} lacks {key}")
        if not isinstance(value, IntegerAttr):
            raise ScheduleAttrError(f"{SCHEDULE_ATTR}.{key} must be an integer")
        tiling[key] = value.value.data
    for key, allowed in _STR_FIELDS.items():
        value = data.get(key)
        if value is None:
            continue
        if not isinstance(value, StringAttr) or value.data not in allowed:
            raise ScheduleAttrError(f"{SCHEDULE_ATTR}.{key} must be one of {', '.join(allowed)}")
        tiling[key] = value.data
    unknown = set(data) - set(_INT_FIELDS) - set(_STR_FIELDS) - {"config", "estimated_cycles"}
    if unknown:
        raise ScheduleAttrError(f"{SCHEDULE_ATTR} has unknown fields {', '.join(sorted(unknown))}")
    config = data.get("config")
    return (config.data if isinstance(config, StringAttr) else None), tiling


def layer_schedule(op: Operation, layer: ConvLayer, config) -> Schedule:
    """The schedule an op's `qaccel.schedule` gives (checked), or `ScheduleAttrError` /
    `LayerError` saying why it cannot be used."""
    name, tiling = read_schedule_attr(op.attributes[SCHEDULE_ATTR])
    if name is not None and name != config.name:
        raise ScheduleAttrError(
            f"{SCHEDULE_ATTR} was made for hardware config '{name}', not '{config.name}'"
        )
    return make_schedule(layer, config, **tiling)


@dataclass(frozen=True)
class ScheduleVtaPass(ModulePass):
    """Attach each VTA layer's tiling (the cost model's best loop nest) as `qaccel.schedule`.

    Runs on `vta` accelerator functions after `lower-q-to-accel`. Schedules already in the IR
    are checked and kept unless `recompute=true`."""

    name = "schedule-vta"

    bias_mode: Literal["alu", "dma", "gemm", "store"] | None = None
    """Force how the bias reaches the accumulators: `alu`, `dma`, `gemm`, or `store` (the
    store module's output stage adds it and requantizes; needs a hardware config with
    `store_requant`). Default: the cost model chooses per layer."""

    recompute: bool = False
    """Replace schedules already present instead of checking and keeping them."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        try:
            config = hardware_config(op, "vta")  # the module's #accel.target (attach-target)
        except (TargetError, ValueError) as e:
            raise PassFailedException(f"{PASS}: {e}") from None
        if self.bias_mode == "store" and not config.store_requant:
            raise PassFailedException(f"{PASS}: bias-mode=store needs a hardware config with "
                                      f"store_requant ('{config.name}' has none)")  # fmt: skip
        for f in op.ops:
            if not isinstance(f, func.FuncOp):
                continue
            target = f.attributes.get(TARGET_ATTR)
            if not isinstance(target, StringAttr) or target.data != "vta":
                continue
            self._schedule_function(f, config)

    def _schedule_function(self, f: func.FuncOp, config) -> None:
        fname = f.sym_name.data
        index = 0
        for o in f.body.block.ops:
            if not isinstance(o, accel.Conv2DZpOp | accel.DenseZpOp):
                continue
            try:
                layer = match_layer(o, f"{fname}_layer{index}").layer
            except NotALayer:
                o.attributes.pop(SCHEDULE_ATTR, None)
                continue
            index += 1
            where = f"{PASS}: @{fname}: {o.name} ({layer.describe()})"
            if SCHEDULE_ATTR in o.attributes and not self.recompute:
                try:
                    layer_schedule(o, layer, config)
                except (ScheduleAttrError, LayerError, ValueError) as e:
                    raise PassFailedException(f"{where}: {e}") from None
                continue
            try:
                best = schedule(layer, config, bias_mode=self.bias_mode or None)
            except LayerError:
                continue  # no tiling fits: the op runs on the host, qaccel-compile says why
            o.attributes[SCHEDULE_ATTR] = schedule_attr(best, config.name)
