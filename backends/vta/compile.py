"""Compile a `vta-pipeline` module for the VTA-like accelerator: IR -> compiled functions.

    compiled = compile_module(module, config)        # a `CompiledModel` (backends/vta/compiled.py)

**What runs where.** Each accelerator function (`qaccel.target = "vta"`) is a sequence of
`accel` ops on the packed layout. Every GEMM op with its requantization tail becomes one
`ConvLayer` (`lowering/vta/layers.py`), scheduled with the tiling its schedule attribute
gives (`schedule-vta`; searched here when absent) and emitted as one `LayerProgram`
(`lowering/vta/emit.py`) that runs on the simulator. Every tree of ALU-able ops
(`accel.add`/`max`/`min`/`mul` of two tensors or by constants, shifts, rounding multiplies)
from GEMM layers' outputs or widened int8 tensors to an `accel.narrow` (a residual add with
its requantization) becomes an element-wise layer (`AluLayer`, `lowering/vta/emit_alu.py`).
The `accel` packed tensor of a layer's input is its DRAM input region byte for byte, and its
output region is the packed result.

**DRAM.** An accelerator function has one DRAM image: the activation arena
(`backends/vta/arena.py`: a slot per packed tensor a layer reads or writes, reused by
liveness), then each layer's constants (packed weights, fused biases, multipliers, shifts).
Layers run one after another on that image, so a layer's output is read by the next layer
where it was stored; the host writes into the arena only tensors it produced and reads back
only tensors a host op or the return uses (`host_write_bytes` / `host_read_bytes` in the
report).

A global average pool (`accel.reduce_sum` over H and W, after any such tree) with its
requantization is an element-wise layer too, and a windowed max or sum pool of an int8
tensor (`PoolLayer`, padding with the pool's identity folded in) with its constant tail is a
pool layer. Every other op of an accelerator function (pads, concatenations, pools of
computed values, element-wise trees that do not end in an int8 narrowing, a layer whose tail
does not match, a layer the scheduler or emitter refuses) runs on the host interpreter and is
listed in the report as a host fallback with its reason; nothing is dropped silently.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
from qaccel.backends.vta.arena import Slot, allocate
from qaccel.backends.vta.compiled import (
    ArenaSlot,
    CompiledFunction,
    CompiledLayer,
    CompiledModel,
    CompileError,
    Fallback,
    accelerator_functions,
    value_ref,
)
from qaccel.backends.vta.report import alu_report, build_report, gemm_report
from qaccel.dialects import accel, tfl
from qaccel.dialects.types import tensor_dtype
from qaccel.lowering.schedule_vta import SCHEDULE_ATTR, ScheduleAttrError, layer_schedule
from qaccel.lowering.vta.emit import ALIGN, LayerProgram, Placement, emit
from qaccel.lowering.vta.emit_alu import emit_alu, emit_pool
from qaccel.lowering.vta.layers import (
    AluMatch,
    LayerMatch,
    NotALayer,
    PoolMatch,
    match_alu_layer,
    match_layer,
    match_pool_layer,
)
from qaccel.lowering.vta.schedule import LayerError, schedule
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue

_NO_CODEGEN = "no VTA code generator yet"

def _layer_schedule(f: func.FuncOp, op: Operation, m: LayerMatch, c: HardwareConfig):
    if SCHEDULE_ATTR not in op.attributes:
        return schedule(m.layer, c)
    try:
        return layer_schedule(op, m.layer, c)
    except (ScheduleAttrError, LayerError) as e:
        raise CompileError(f"@{f.sym_name.data}: {op.name} ({m.layer.describe()}): {e}") from None


@dataclass
class _Planned:
    """One layer as the arena sees it."""

    when: int  # body position it runs at (its anchor)
    inputs: list[SSAValue]
    output: SSAValue
    ops: list[Operation]
    int8_bytes: bool  # the output is int32 in the IR but stored as int8 (`offset`)
    widened: SSAValue | None


def _plan_arena(layers: list[_Planned], ops: list[Operation]):
    """The arena slots of the layers' inputs and outputs; (slots, slot of each value)."""
    index_of = {op: i for i, op in enumerate(ops)}
    in_layers = {o for p in layers for o in p.ops}
    users: dict[SSAValue, list[int]] = {}
    produced: dict[SSAValue, _Planned] = {}
    for p in layers:
        for v in p.inputs:
            users.setdefault(v, []).append(p.when)
        produced[p.output] = p
    values = list(dict.fromkeys([v for p in layers for v in (*p.inputs, p.output)]))
    slots, slot_of = [], {}
    for v in values:
        uses = users.get(v, [])
        p = produced.get(v)
        if p is not None:
            # Read back when a host op (or the return) uses the value or its widened copy.
            seen = [v] if p.widened is None else [v, p.widened]
            host_reads = any(u.operation not in in_layers for w in seen for u in w.uses)
            start, end = p.when, max([p.when, *uses])
        else:
            host_reads = False
            start, end = min(uses), max(uses)
        n = int(np.prod(v.type.get_shape()))
        nbytes = n if p is not None and p.int8_bytes else n * tensor_dtype(v.type).itemsize
        slot_of[v] = len(slots)
        slots.append(ArenaSlot(value_ref(v, index_of), -1, nbytes, start, end, p is None,
                               host_reads))  # fmt: skip
    plan = [Slot(s.nbytes, s.start, s.end) for s in slots]
    size = allocate(plan)
    for s, q in zip(slots, plan, strict=True):
        s.offset = q.offset
    return slots, slot_of, size


def compile_module(
    module: ModuleOp,
    config: HardwareConfig | None = None,
    *,
    total_macs: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> CompiledModel:
    """Schedule and emit every accelerator layer of `module` (the output of `vta-pipeline`)
    into one DRAM image per accelerator function. `total_macs` (the model's MACs, e.g. of the
    imported IR) gives the report's MAC share."""
    c = config or DEFAULT_CONFIG
    functions: dict[str, CompiledFunction] = {}
    fallbacks: list[Fallback] = []
    accel_functions = accelerator_functions(module)
    n_roots = sum(isinstance(op, accel.Conv2DZpOp | accel.DenseZpOp)
                  for f in accel_functions for op in f.body.block.ops)  # fmt: skip
    done = 0
    for f in accel_functions:
        name = f.sym_name.data
        ops = list(f.body.block.ops)
        reasons: dict[Operation, str] = {}
        gemms: list[tuple[LayerMatch, Any]] = []
        for op in ops:
            if not isinstance(op, accel.Conv2DZpOp | accel.DenseZpOp):
                continue
            done += 1
            try:
                m = match_layer(op, f"{name}_layer{len(gemms)}")
                if progress:
                    progress(f"[{done}/{n_roots}] {name} layer {len(gemms)}: "
                             f"{m.layer.describe()}")  # fmt: skip
                gemms.append((m, _layer_schedule(f, op, m, c)))
            except (NotALayer, LayerError) as e:
                reasons[op] = str(e)
        fn = _compile_function(name, ops, gemms, reasons, c)
        functions[name] = fn
        covered = {ops[i] for lay in fn.layers for i in lay.ops}
        for i, op in enumerate(ops):
            if op in covered or isinstance(op, func.ReturnOp | tfl.ConstOp):
                continue
            reason = reasons.get(op, _NO_CODEGEN)
            if isinstance(op, accel.HostRequantizeOp):
                reason = "a host op by design (LiteRT's double-precision requantization)"
            fallbacks.append(Fallback(name, op.name, i, reason))
    compiled = CompiledModel(module, c, functions, fallbacks, {})
    compiled.report = build_report(compiled, total_macs)
    return compiled


def _alu_layers(name: str, ops: list[Operation], gemms: list[tuple[LayerMatch, Any]],
                refused: dict[Operation, str]) -> list[AluMatch | PoolMatch]:  # fmt: skip
    """Element-wise layers and windowed pools over the GEMM layers' outputs (and int8
    tensors)."""
    leaves: dict[SSAValue, tuple[SSAValue, int]] = {}
    claimed: set[Operation] = set()
    for m, _ in gemms:
        claimed.update(m.ops)
        if m.offset is not None:
            leaves[m.output] = (m.output, m.offset)
        if m.widened is not None:
            leaves[m.widened] = (m.output, 0)
    out = []
    for op in ops:
        if not isinstance(op, accel.NarrowOp) or op in claimed or op in refused:
            continue
        try:
            am = match_alu_layer(op, leaves, claimed, f"{name}_eltwise{len(out)}")
        except NotALayer as e:
            try:
                am = match_pool_layer(op, leaves, claimed, f"{name}_pool{len(out)}")
            except NotALayer:
                refused[op] = str(e)
                continue
            if any(o in claimed for o in am.ops):
                refused[op] = str(e)
                continue
        claimed.update(am.ops)
        if am.widened is not None:
            leaves[am.widened] = (am.output, 0)
        out.append(am)
    return out


def _compile_function(name: str, ops: list[Operation], gemms: list[tuple[LayerMatch, Any]],
                      reasons: dict[Operation, str], c: HardwareConfig) -> CompiledFunction:  # fmt: skip
    """Arena, placement and emission of one accelerator function's layers, in body order.
    A layer the emitter refuses goes back to the host (its reason reported) and the arena
    is planned again without it."""
    index_of = {op: i for i, op in enumerate(ops)}
    refused_alu: dict[Operation, str] = {}
    while True:
        alus = _alu_layers(name, ops, gemms, refused_alu)
        entries: list[tuple[int, Any]] = sorted(
            [(index_of[m.output.owner], (m, s)) for m, s in gemms]
            + [(index_of[a.output.owner], a) for a in alus],
            key=lambda e: e[0],
        )
        slots, slot_of, arena = _plan_arena([_planned(w, e) for w, e in entries], ops)
        layers, constants, at, failed = [], [], arena, None
        for when, e in entries:
            try:
                lay, consts = _emit_layer(name, len(layers), e, slots, slot_of, at, index_of, c)
            except LayerError as err:
                failed = (e, str(err))
                break
            layers.append(lay)
            constants.append((at, consts))
            at = -(-(at + len(consts)) // ALIGN) * ALIGN
        if failed is None:
            break
        e, why = failed
        if isinstance(e, tuple):
            gemms = [g for g in gemms if g is not e]
            reasons[e[0].ops[0]] = why
        else:
            refused_alu[e.ops[-1]] = why
    for op, why in refused_alu.items():
        reasons.setdefault(op, why)
    image = np.zeros(at, np.uint8)
    for offset, data in constants:
        image[offset : offset + len(data)] = data
    for lay in layers:
        if isinstance(lay.program, LayerProgram):
            lay.program.dram_size = len(image)
    return CompiledFunction(name, layers, slots, arena, image)


def _planned(when: int, entry) -> _Planned:
    if isinstance(entry, AluMatch | PoolMatch):
        return _Planned(when, list(entry.inputs), entry.output, entry.ops, False, entry.widened)
    m = entry[0]
    return _Planned(when, [m.input], m.output, m.ops, m.offset is not None, m.widened)


def _emit_layer(name, index, entry, slots, slot_of, at, index_of, c):
    """(CompiledLayer, constants bytes) of a GEMM layer `(match, schedule)`, an `AluMatch` or
    a `PoolMatch` whose constants go at byte `at`."""
    if isinstance(entry, AluMatch | PoolMatch):
        inputs_at = [slots[slot_of[v]].offset for v in entry.inputs]
        output_at = slots[slot_of[entry.output]].offset
        emitter = emit_pool if isinstance(entry, PoolMatch) else emit_alu
        prog = emitter(entry.layer, c, inputs_at=inputs_at, output_at=output_at, constants_at=at)
        report = alu_report(name, index, entry.layer, prog, c)
        lay = CompiledLayer(
            function=name, index=index, ops=sorted(index_of[o] for o in entry.ops),
            anchor=index_of[entry.output.owner], inputs=[slot_of[v] for v in entry.inputs],
            output=slot_of[entry.output], offset=None, program=prog,
            widened=None if entry.widened is None else index_of[entry.widened.owner],
            words=prog.program.words, uops=prog.program.uops,
            description=entry.layer.describe(), report=report,
        )  # fmt: skip
        return lay, prog.constants
    m, sched = entry
    placement = Placement(at, slots[slot_of[m.input]].offset, slots[slot_of[m.output]].offset)
    prog = emit(m.layer, sched, c, placement)
    lay = CompiledLayer(
        function=name, index=index, ops=sorted(index_of[o] for o in m.ops),
        anchor=index_of[m.output.owner], inputs=[slot_of[m.input]], output=slot_of[m.output],
        widened=None if m.widened is None else index_of[m.widened.owner], offset=m.offset,
        program=prog, words=prog.program.words, uops=prog.program.uops,
        description=m.layer.describe(), report=gemm_report(name, index, m.layer, sched, prog, c),
    )  # fmt: skip
    return lay, prog.constants


__all__ = ["compile_module"]
