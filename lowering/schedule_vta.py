"""`schedule-vta`: decide how each accelerator layer runs and keep it in the IR.

Every `vta.layer` (`form-vta-layers`) of a `vta` accelerator function gets an
attribute of its kind's schedule (`dialects/vta.py`):

- a GEMM layer (`conv`, `depthwise`, `dense`): the tiling the cost-model search chose
  (`lowering/vta/search.py`), i.e. the loop nest the emitter walks: output-row,
  output-column, output-channel and input-channel tile sizes (pixels; channel blocks), the
  order of the two outer loops, how the bias reaches the accumulators, and how many slots of
  each on-chip buffer double-buffer the loads (VTA's virtual threads);
- an `eltwise` or `pool` layer: what its emitter decides (`lowering/vta/emit_alu.py`): the
  rows of a channel block processed at a time (chunk; output rows of a pool tile), the
  parameter rows loaded first into the accumulator buffer, and whether the store module's
  output stage runs the requantizing tail; `estimated_cycles` is the timing model's count
  for that program.

`qaccel-compile` emits the instruction streams from these attributes, so a schedule written
or edited by hand in the IR is what runs.

    %y = vta.layer "conv" {...} : tensor<1x1x8x8x1x16xi8>
  becomes
    %y = vta.layer "conv" schedule #vta.gemm_schedule<config = "vta-default", tile_h = 8,
             tile_w = 8, tile_co = 1, tile_ci = 1, loop_order = spatial, bias_mode = alu,
             inp_slots = 2, wgt_slots = 1, acc_slots = 2, estimated_cycles = 5216> {...}
             : tensor<1x1x8x8x1x16xi8>

A schedule already present is checked (it must fit on chip for this layer and name this
hardware configuration; the message names the function, the layer and the problem) and kept,
unless `recompute=true`. A layer whose body is not a layer of its kind or that has no
schedule that fits gets none; `qaccel-compile` runs it on the host and reports why. The
attribute does not change what the layer computes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from qaccel.dialects import vta
from qaccel.dialects.vta import ScheduleAttr
from qaccel.lowering.form_vta_layers import vta_functions
from qaccel.lowering.vta.emit_alu import AluPlan, emit_alu, emit_pool, plan_alu
from qaccel.lowering.vta.layers import AluLayer, LayerMatch, LayerReader, NotALayer, PoolLayer
from qaccel.lowering.vta.geometry import ConvLayer, LayerError
from qaccel.lowering.vta.planning import Schedule
from qaccel.lowering.vta.search import make_schedule, schedule, search_ahead
from qaccel.targets.base import TargetError, hardware_config
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

PASS = "schedule-vta"
_TILING = ("tile_h", "tile_w", "tile_co", "tile_ci", "loop_order", "bias_mode", "inp_slots",
           "wgt_slots", "acc_slots")  # fmt: skip


class ScheduleAttrError(ValueError):
    """A schedule that does not suit its layer (message: why)."""


def gemm_schedule_attr(sched: Schedule, config_name: str) -> ScheduleAttr:
    return vta.GemmScheduleAttr(config=config_name, **sched.tiling(),
                                estimated_cycles=int(sched.estimated_cycles))  # fmt: skip


def alu_cycles(layer: AluLayer | PoolLayer, plan: AluPlan, config) -> int:
    """The timing model's cycles for the program `plan` gives (placed at DRAM offset 0)."""
    emitter = emit_pool if isinstance(layer, PoolLayer) else emit_alu
    prog = emitter(layer, config, inputs_at=[0] * layer.n_inputs, output_at=0, constants_at=0,
                   rows=plan.rows, output_stage=plan.output_stage)  # fmt: skip
    return int(prog.timing().total_cycles)


def alu_schedule_attr(kind: str, plan: AluPlan, config_name: str,
                      cycles: int | None = None) -> ScheduleAttr:  # fmt: skip
    return vta.LAYER_SCHEDULES[kind](config=config_name, rows=plan.rows,
                                     param_rows=plan.param_rows,
                                     output_stage=plan.output_stage,
                                     estimated_cycles=cycles)  # fmt: skip


def _check_config(attr: ScheduleAttr, config) -> None:
    name = attr.get("config")
    if name is not None and name != config.name:
        raise ScheduleAttrError(
            f"#{attr.name} was made for hardware config '{name}', not '{config.name}'"
        )


def gemm_schedule(attr: ScheduleAttr, layer: ConvLayer, config) -> Schedule:
    """The schedule a GEMM layer's `#vta.gemm_schedule` gives (checked), or `ScheduleAttrError` /
    `LayerError` saying why it cannot be used. Its `estimated_cycles` is left 0: the emitter
    and the check do not read it (the attribute carries the search's)."""
    _check_config(attr, config)
    fields = attr.fields()
    tiling = {k: fields[k] for k in _TILING if k in fields}
    try:
        return make_schedule(layer, config, **tiling, estimated=False)
    except ValueError as e:
        raise ScheduleAttrError(str(e)) from None


def alu_schedule(attr: ScheduleAttr | None, layer, config) -> AluPlan:
    """The plan an element-wise or pool layer's schedule attribute gives (checked; the
    emitter's own choice without one), or `ScheduleAttrError` / `LayerError` saying why."""
    if attr is None:
        return plan_alu(layer, config)
    _check_config(attr, config)
    plan = plan_alu(layer, config, rows=attr.get("rows"), output_stage=attr.get("output_stage"))
    given = attr.get("param_rows")
    if given is not None and given != plan.param_rows:
        raise ScheduleAttrError(f"param_rows {given}: the layer loads {plan.param_rows} "
                                "parameter rows")  # fmt: skip
    return plan


def describe(op: vta.LayerOp, m=None) -> str:
    """`vta.layer "conv" (conv 8x8x16 -> ...)`: how messages name a layer."""
    what = f" ({m.layer.describe()})" if m is not None else ""
    return f'{op.name} "{op.kind.data}"{what}'


@dataclass(frozen=True)
class ScheduleVtaPass(ModulePass):
    """Attach each VTA layer's schedule (GEMM layers: the cost model's best loop nest;
    element-wise and pool layers: chunk rows, parameter rows, output stage) as
    `#vta.<kind>_schedule`.

    Runs on the `vta.layer` ops of `vta` accelerator functions (`form-vta-layers`).
    Schedules already in the IR are checked and kept unless `recompute=true`."""

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
        for f in vta_functions(op):
            self._schedule_function(f, config)

    def _schedule_function(self, f: func.FuncOp, config) -> None:
        # Every layer read first, as if each will be accepted, so the searches can run
        # ahead on two cores (`search_ahead`); the reads stand while that holds (a layer
        # that gets no schedule is not accepted: the layers after it are read again).
        reads = _read_all(f)
        todo = [m.layer for o, m in reads if isinstance(m, LayerMatch)
                and (o.schedule is None or self.recompute)]  # fmt: skip
        # While the child searches, this process plans the element-wise and pool layers.
        alu = [(o, m) for o, m in reads if not isinstance(m, (LayerMatch, Exception))
               and (o.schedule is None or self.recompute)]  # fmt: skip
        planned: dict[int, tuple[AluPlan, int]] = {}  # by id of the op
        search_ahead(todo, config, bias_mode=self.bias_mode or None,
                     meanwhile=lambda: _plan_alu_layers(alu, config, planned),
                     weight=0.5 * len(alu))  # fmt: skip
        reader = LayerReader(f.sym_name.data)
        ahead = True
        for o, read in reads:
            try:
                if not ahead:
                    read = reader.read(o)
                if isinstance(read, Exception):
                    raise read
                m = read
            except NotALayer:
                o.schedule = None
                continue
            where = f"{PASS}: @{f.sym_name.data}: {describe(o, m)}"
            if o.schedule is not None and not self.recompute:
                try:
                    if isinstance(m, LayerMatch):
                        gemm_schedule(o.schedule, m.layer, config)
                    else:
                        alu_schedule(o.schedule, m.layer, config)
                except (ScheduleAttrError, LayerError) as e:
                    raise PassFailedException(f"{where}: {e}") from None
                reader.accept(o, m)
                continue
            try:
                if isinstance(m, LayerMatch):
                    best = schedule(m.layer, config, bias_mode=self.bias_mode or None)
                    o.schedule = gemm_schedule_attr(best, config.name)
                else:
                    found = planned.get(id(o)) if ahead else None  # planned from this read
                    if found is None:
                        plan = plan_alu(m.layer, config)
                        found = plan, alu_cycles(m.layer, plan, config)
                    o.schedule = alu_schedule_attr(o.kind.data, found[0], config.name, found[1])
            except LayerError:
                o.schedule = None  # nothing fits: the layer runs on the host (qaccel-compile)
                ahead = False
                continue
            reader.accept(o, m)


def _plan_alu_layers(reads, config, out: dict) -> None:
    """`plan_alu` and `alu_cycles` of these element-wise / pool layer reads, into `out` by
    op id; a layer that raises is left for the scheduling loop, which raises the same."""
    for o, m in reads:
        try:
            plan = plan_alu(m.layer, config)
            out[id(o)] = plan, alu_cycles(m.layer, plan, config)
        except Exception:  # noqa: BLE001  computed again, and raised, where it is scheduled
            continue


def _read_all(f: func.FuncOp) -> list[tuple[vta.LayerOp, object]]:
    """Each `vta.layer` of `f` with what a reader that accepts every layer reads (a match,
    or what it raised, e.g. `NotALayer`)."""
    reader = LayerReader(f.sym_name.data)
    out: list[tuple[vta.LayerOp, object]] = []
    for o in f.body.block.ops:
        if not isinstance(o, vta.LayerOp):
            continue
        try:
            m = reader.read(o)
        except Exception as e:  # noqa: BLE001  raised again where the layer is scheduled
            out.append((o, e))
            continue
        reader.accept(o, m)
        out.append((o, m))
    return out
