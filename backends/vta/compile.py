"""Whole-model compilation for the VTA-like accelerator: artifact, runtime and report.

    compiled = compile_module(module, config)        # module: output of `vta-pipeline`
    write_artifact(compiled, outdir)                   # host.mlir, vta_fn_k/*, report.json
    compiled = load_artifact(outdir, ctx)
    outputs = run_compiled(compiled, inputs)           # host on the interpreter, layers simulated

**What runs where.** Each accelerator function (`qaccel.target = "vta"`) is a sequence of
`accel` ops on the packed layout. Every GEMM op with its requantization tail becomes one
`ConvLayer` (`lowering/vta/layers.py`), scheduled with the tiling its `qaccel.schedule`
attribute gives (`schedule-vta`; searched here when absent) and emitted as one
`LayerProgram` (`lowering/vta/emit.py`) that runs on the simulator. Every tree of ALU-able
ops (`accel.add`/`max`/`min`/`mul` of two tensors or by constants, shifts, rounding multiplies)
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
does not match, a layer the scheduler or emitter refuses) runs on the host interpreter and is listed in the report as a host fallback with
its reason; nothing is dropped silently.

**Artifact** (`write_artifact`): `host.mlir` (the whole module as text, schedules included:
host functions and accelerator functions, whose fallback ops the runtime interprets); for
every accelerator function `vta_fn_k/dram.npz` (`dram`: the function's DRAM image, constants
in place and the arena zero) and per layer `vta_fn_k/layer_i.bin` (16-byte instructions) and
`vta_fn_k/layer_i.uops.bin` (the micro-op image, little-endian uint32):
`qaccel-sim vta_fn_0/layer_0.bin --dram vta_fn_0/dram.npz --uops vta_fn_0/layer_0.uops.bin`
runs one layer. The C driver (`backends/vta/cdriver.py`): `driver/qaccel_vta.h`,
`driver/model.h`, `driver/model.c` and each function's `vta_fn_k/constants.bin`. Also
`model.tflite` (the source, for `--compare-litert`), `report.json`, and
`manifest.json` (versions, hardware config, every layer's op indices and DRAM offsets, the
arena's slots, SHA-256 of every file). No timestamps, sorted keys, npz members with a fixed
date: compiling the same model twice gives identical bytes.
"""

from __future__ import annotations

import hashlib
import io
import json
import zipfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from qaccel.backends.vta.arena import Slot, allocate
from qaccel.dialects.annotations import TARGET_ATTR, accelerator_functions
from qaccel.targets.base import TargetError, hardware_config
from qaccel.targets.vta.config import HardwareConfig
from qaccel.lowering.vta.emit import ALIGN, LayerProgram, Placement, emit
from qaccel.lowering.vta.emit_alu import AluProgram, emit_alu, emit_pool
from qaccel.dialects import accel, tfl
from qaccel.dialects.types import tensor_dtype
from qaccel.lowering.schedule_vta import SCHEDULE_ATTR, ScheduleAttrError, layer_schedule
from qaccel.lowering.vta.layers import (
    AluLayer,
    AluMatch,
    LayerMatch,
    NotALayer,
    PoolLayer,
    PoolMatch,
    match_alu_layer,
    match_layer,
    match_pool_layer,
)
from qaccel.lowering.vta.schedule import (
    LayerError,
    alu_bound_cycles,
    roofline_cycles,
    schedule,
)
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import Interpreter, impl, register_impls
from xdsl.ir import Operation, SSAValue

ARTIFACT_FORMAT = 2
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)


class CompileError(Exception):
    """The module cannot be compiled (one line for the user)."""


# --------------------------------------------------------------------------------------------
# Value references: positions in a function body, stable across print and parse.


def _value_ref(value: SSAValue, index_of: dict[Operation, int]) -> list[int]:
    """["arg", i] is not JSON-homogeneous; use [-1, i] for block argument i, [op, result]."""
    owner = value.owner
    if isinstance(owner, Operation):
        return [index_of[owner], value.index]  # type: ignore[attr-defined]
    return [-1, value.index]  # type: ignore[attr-defined]


def _resolve(ref: Sequence[int], ops: list[Operation], f: func.FuncOp) -> SSAValue:
    op_index, result = ref
    if op_index < 0:
        return f.body.block.args[result]
    return ops[op_index].results[result]


# --------------------------------------------------------------------------------------------
# The compiled model


@dataclass
class CompiledLayer:
    function: str
    index: int
    ops: list[int]  # body positions of the group's ops (skipped by the runtime)
    anchor: int  # body position of the op whose result the layer produces
    inputs: list[int]  # arena slots (indices into the function's `slots`) the layer reads
    output: int  # arena slot the layer writes
    widened: int | None  # body position of the int32 value equal to widen(output), if used
    offset: int | None  # the anchor is int32 = the stored int8 values - offset (None: as stored)
    program: LayerProgram | AluProgram | None  # None after `load_artifact`
    words: np.ndarray  # the instruction stream
    uops: np.ndarray  # the micro-op image
    description: str = ""
    report: dict = field(default_factory=dict)


@dataclass
class ArenaSlot:
    """A packed tensor in a function's arena: where, how long it lives, who moves it."""

    value: list[int]  # value reference (see `_value_ref`)
    offset: int
    nbytes: int
    start: int
    end: int
    host_writes: bool  # produced on the host: written before the first layer reads it
    host_reads: bool  # read back after the layer that writes it (a host op or return uses it)


@dataclass
class CompiledFunction:
    name: str
    layers: list[CompiledLayer]
    slots: list[ArenaSlot]
    arena_nbytes: int
    image: np.ndarray  # the DRAM image: arena zero, then every layer's constants

    def run_layer(self, lay: CompiledLayer, image: np.ndarray, config: HardwareConfig,
                  simulator: str = "c"):  # fmt: skip
        """Simulate one layer on `image` (not modified); the DRAM after it. `simulator`: "c"
        (libqaccel_vta) or "python" (the reference)."""
        from qaccel.targets.vta.simulator import simulate

        result = simulate(lay.words, lay.uops, image, config, simulator=simulator)
        if any(result.leftover_tokens.values()):
            raise CompileError(f"{self.name} layer {lay.index}: tokens left over "
                               f"{result.leftover_tokens}")  # fmt: skip
        return result.dram

    def read(self, image: np.ndarray, lay: CompiledLayer, out_type: TensorType) -> np.ndarray:
        """The layer's output as the accel op's value (int32 minus `offset` when widened)."""
        slot = self.slots[lay.output]
        raw = image[slot.offset : slot.offset + slot.nbytes]
        if lay.offset is None:
            return raw.view(tensor_dtype(out_type)).reshape(out_type.get_shape()).copy()
        y = raw.view(np.int8).astype(np.int32) - np.int32(lay.offset)
        return y.reshape(out_type.get_shape())

    def write(self, image: np.ndarray, slot_index: int, x: np.ndarray) -> None:
        slot = self.slots[slot_index]
        data = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
        if data.size != slot.nbytes:
            raise CompileError(f"{self.name}: a tensor of {data.size} bytes for an arena slot "
                               f"of {slot.nbytes}")  # fmt: skip
        image[slot.offset : slot.offset + slot.nbytes] = data


@dataclass
class Fallback:
    function: str
    op: str  # op name
    position: int
    reason: str

    def line(self) -> str:
        return f"host fallback inside {self.function}: {self.op} (#{self.position}): {self.reason}"


@dataclass
class CompiledModel:
    module: ModuleOp
    config: HardwareConfig
    functions: dict[str, CompiledFunction]
    fallbacks: list[Fallback]
    report: dict

    @property
    def layers(self) -> dict[str, list[CompiledLayer]]:
        return {name: f.layers for name, f in self.functions.items()}


_NO_CODEGEN = "no VTA code generator yet"


def _layer_report(name: str, index: int, m: LayerMatch, sched, prog: LayerProgram, c) -> dict:
    from qaccel.targets.vta.simulator import timing

    t = timing(prog.program, c)
    g = m.layer.geometry
    cycles = int(t.total_cycles)
    roof = roofline_cycles(g, c)
    return {
        "function": name, "layer": index, "kind": g.kind,
        "description": m.layer.describe(), "cycles": cycles,
        "ms": cycles / (c.clock_mhz * 1e3),
        "gemm_utilization": g.useful_macs / max(1, cycles * c.macs_per_cycle),
        "macs": int(g.useful_macs), "roofline_cycles": int(roof),
        "roofline_ratio": cycles / max(1, roof),
        "alu_bound_cycles": int(alu_bound_cycles(g, c)),
        "dram_read_bytes": int(sum(t.dram_read_bytes.values())),
        "dram_write_bytes": int(sum(t.dram_write_bytes.values())),
        "instructions": len(prog.program), "uop_loads": prog.uop_loads,
        "constant_bytes": len(prog.constants), "tiling": sched.tiling(),
        "host_requantize": bool(g.int32_output),
    }  # fmt: skip


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
        slots.append(ArenaSlot(_value_ref(v, index_of), -1, nbytes, start, end, p is None,
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
    imported IR) gives the report's MAC share. `config` defaults to the module's
    (`#accel.target`, from `attach-target`)."""
    try:
        c = config or hardware_config(module, "vta")
    except (TargetError, ValueError) as e:
        raise CompileError(str(e)) from None
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
        report = _alu_report(name, index, entry.layer, prog, c)
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
        description=m.layer.describe(), report=_layer_report(name, index, m, sched, prog, c),
    )  # fmt: skip
    return lay, prog.constants


def _row_counts(layer: AluLayer | PoolLayer, stage_steps: int = 0) -> tuple[int, int]:
    """(DRAM rows the layer reads and writes, accumulator rows its ALU instructions walk when
    the last `stage_steps` steps run in the store module's output stage)."""
    if isinstance(layer, PoolLayer):
        rows_in = layer.blocks * layer.H * layer.W
        rows_out = layer.blocks * layer.OH * layer.OW
        steps = len(layer.steps) - stage_steps
        alu = rows_out * (layer.KH * layer.KW + steps) + rows_in * len(layer.pre_steps)
        return rows_in * layer.n_inputs + rows_out, alu
    rows_out = layer.blocks * layer.rows
    rows_in = rows_out * layer.reduce
    steps = len(layer.steps) - stage_steps
    if layer.reduce > 1:  # steps before the sum on every input row, the sum, the rest
        alu = rows_in * (layer.reduce_at + 1) + rows_out * (steps - layer.reduce_at)
    else:
        alu = rows_in * steps
    return rows_in * layer.n_inputs + rows_out, alu


def _alu_report(
    name: str, index: int, layer: AluLayer | PoolLayer, prog, c: HardwareConfig
) -> dict:
    """The report row of an element-wise or pool layer (no MACs; bounds: memory and ALU)."""
    from qaccel.targets.vta.simulator import roofline, timing

    t = timing(prog.program, c)
    cycles = int(t.total_cycles)
    nrows, alu_rows = _row_counts(layer, prog.stage_steps)
    roof = roofline(0, nrows * c.block + len(prog.constants), c).cycles
    pool = isinstance(layer, PoolLayer)
    return {
        "function": name, "layer": index, "kind": "pool" if pool else "eltwise",
        "description": layer.describe(),
        "cycles": cycles, "ms": cycles / (c.clock_mhz * 1e3), "gemm_utilization": 0.0,
        "macs": 0, "roofline_cycles": int(roof), "roofline_ratio": cycles / max(1, roof),
        "alu_bound_cycles": int(max(roof, alu_rows * c.alu_cycles_per_uop)),
        "dram_read_bytes": int(sum(t.dram_read_bytes.values())),
        "dram_write_bytes": int(sum(t.dram_write_bytes.values())),
        "instructions": len(prog.program), "uop_loads": prog.uop_loads,
        "constant_bytes": len(prog.constants),
        "tiling": {"tile_rows" if pool else "chunk_rows": prog.chunk_rows},
        "host_requantize": False,
    }  # fmt: skip


def _function_report(fn: CompiledFunction) -> dict:
    return {
        "function": fn.name, "layers": len(fn.layers), "dram_image_bytes": len(fn.image),
        "arena_bytes": fn.arena_nbytes,
        "activation_bytes": sum(s.nbytes for s in fn.slots),
        "constant_bytes": len(fn.image) - fn.arena_nbytes,
        "host_write_bytes": sum(s.nbytes for s in fn.slots if s.host_writes),
        "host_read_bytes": sum(s.nbytes for s in fn.slots if s.host_reads),
    }  # fmt: skip


def _host_macs(module: ModuleOp) -> int:
    from qaccel.dialects.macs import op_macs

    return sum(
        op_macs(op) for f in module.ops if isinstance(f, func.FuncOp)
        and TARGET_ATTR not in f.attributes for op in f.body.walk()
    )  # fmt: skip


def build_report(compiled: CompiledModel, total_macs: int | None) -> dict:
    c = compiled.config
    rows = [lay.report for ls in compiled.layers.values() for lay in ls]
    cycles = sum(r["cycles"] for r in rows)
    vta_macs = sum(r["macs"] for r in rows)
    host_macs = _host_macs(compiled.module)
    totals = {
        "layers": len(rows), "cycles": cycles, "ms": cycles / (c.clock_mhz * 1e3),
        "clock_mhz": c.clock_mhz, "roofline_cycles": sum(r["roofline_cycles"] for r in rows),
        "alu_bound_cycles": sum(r["alu_bound_cycles"] for r in rows),
        "dram_bytes": sum(r["dram_read_bytes"] + r["dram_write_bytes"] for r in rows),
        "accelerator_functions": len(compiled.layers),
        "host_fallback_ops": len(compiled.fallbacks),
        "host_macs": host_macs,
    }  # fmt: skip
    if total_macs:
        # Layer MACs count padded channel lanes; the model's split is exact from host MACs.
        totals["model_macs"] = int(total_macs)
        totals["accelerator_mac_share"] = 1.0 - host_macs / total_macs
    totals["roofline_ratio"] = cycles / max(1, totals["roofline_cycles"])
    totals["gemm_utilization"] = vta_macs / max(1, cycles * c.macs_per_cycle)
    functions = [_function_report(fn) for fn in compiled.functions.values()]
    for key in ("arena_bytes", "activation_bytes", "constant_bytes", "host_write_bytes",
                "host_read_bytes"):  # fmt: skip
        totals[key] = sum(f[key] for f in functions)
    return {
        "config": c.name, "layers": rows, "totals": totals, "functions": functions,
        "host_fallbacks": [fb.line() for fb in compiled.fallbacks],
    }  # fmt: skip


def _tiling_text(t: dict) -> str:
    if "chunk_rows" in t:  # an element-wise layer
        return f"chunks of {t['chunk_rows']} rows"
    if "tile_rows" in t:  # a windowed pool
        return f"tiles of {t['tile_rows']} output rows"
    return (f"{t['tile_h']}x{t['tile_w']}px co{t['tile_co']} ci{t['tile_ci']} {t['loop_order']} "
            f"{t['bias_mode']}")  # fmt: skip


def format_report(report: dict) -> str:
    """The report as a table, one line per accelerator layer, then the totals. Columns are as
    wide as their contents and the layer's description comes last, so nothing is cut."""
    columns = ("layer", "cycles", "util", "roofline", "ratio", "DRAM B", "tiling", "description")
    left = {"layer", "tiling", "description"}
    rows = []
    for r in report["layers"]:
        t = r["tiling"]
        rows.append((
            f"{r['function']}/{r['layer']}", str(r["cycles"]), f"{r['gemm_utilization']:.1%}",
            str(r["roofline_cycles"]), f"{r['roofline_ratio']:.2f}",
            str(r["dram_read_bytes"] + r["dram_write_bytes"]),
            _tiling_text(t), r["description"],
        ))  # fmt: skip
    widths = [max(len(cell) for cell in col) for col in zip(columns, *rows)]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(
            cell.ljust(w) if name in left else cell.rjust(w)
            for name, w, cell in zip(columns, widths, cells)
        ).rstrip()

    table = [line(columns)] + [line(row) for row in rows]
    rule = "-" * max(len(text) for text in table)
    lines = [table[0], rule, *table[1:], rule]
    t = report["totals"]
    lines.append(
        f"total: {t['layers']} accelerator layers, {t['cycles']} cycles = {t['ms']:.3f} ms at "
        f"{t['clock_mhz']:g} MHz, GEMM utilization {t['gemm_utilization']:.1%}, "
        f"{t['roofline_ratio']:.2f}x the roofline, {t['dram_bytes']} DRAM bytes"
    )
    if "accelerator_mac_share" in t:
        lines.append(f"MACs on the accelerator: {t['accelerator_mac_share']:.2%} of "
                     f"{t['model_macs']}")  # fmt: skip
    lines.extend(report["host_fallbacks"])
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Artifact


def _npz_bytes(arrays: dict[str, np.ndarray]) -> bytes:
    """An .npz that `np.load` reads, with fixed member dates (np.savez stamps the time)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as z:
        for key in sorted(arrays):
            member = io.BytesIO()
            np.lib.format.write_array(member, np.asarray(arrays[key]),
                                      allow_pickle=False)  # fmt: skip
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, member.getvalue())
    return buf.getvalue()


def module_text(module: ModuleOp) -> str:
    from qaccel.dialects.printing import op_text  # xDSL's text, printed faster

    return op_text(module)


def _versions() -> dict:
    from importlib import metadata

    out = {}
    for dist in ("qaccel", "xdsl", "numpy"):
        try:
            out[dist] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            out[dist] = "unknown"
    return out


def _dumps(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True) + "\n"


def write_artifact(
    compiled: CompiledModel, outdir: str | Path, source: bytes | None = None
) -> None:
    """Write the artifact (see the module docstring) into `outdir` (created if needed)."""
    root = Path(outdir)
    root.mkdir(parents=True, exist_ok=True)
    files: dict[str, bytes] = {"host.mlir": module_text(compiled.module).encode()}
    functions = {}
    for name, fn in compiled.functions.items():
        entries = []
        for lay in fn.layers:
            base = f"{name}/layer_{lay.index}"
            files[f"{base}.bin"] = np.asarray(lay.words).astype("<u8").tobytes()
            files[f"{base}.uops.bin"] = np.asarray(lay.uops).astype("<u4").tobytes()
            entries.append({
                "index": lay.index, "ops": lay.ops, "anchor": lay.anchor, "inputs": lay.inputs,
                "output": lay.output, "widened": lay.widened, "offset": lay.offset,
                "description": lay.description, "program": f"{base}.bin",
                "uops": f"{base}.uops.bin",
            })  # fmt: skip
        files[f"{name}/dram.npz"] = _npz_bytes({"dram": fn.image})
        functions[name] = {
            "image": f"{name}/dram.npz", "arena_bytes": fn.arena_nbytes,
            "slots": [s.__dict__ for s in fn.slots], "layers": entries,
        }  # fmt: skip
    from qaccel.backends.vta.cdriver import driver_files

    files.update(driver_files(compiled))
    if source is not None:
        files["model.tflite"] = source  # for `qaccel-run OUTDIR --compare-litert`
    files["report.json"] = _dumps(compiled.report).encode()
    manifest = {
        "format": ARTIFACT_FORMAT, "versions": _versions(),
        "config": compiled.config.to_dict(), "functions": functions,
        "fallbacks": [fb.__dict__ for fb in compiled.fallbacks],
        "source_sha256": hashlib.sha256(source).hexdigest() if source is not None else None,
        "files": {k: hashlib.sha256(v).hexdigest() for k, v in sorted(files.items())},
    }  # fmt: skip
    files["manifest.json"] = _dumps(manifest).encode()
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def is_artifact(path: str | Path) -> bool:
    return Path(path).is_dir() and (Path(path) / "manifest.json").is_file()


def load_artifact(outdir: str | Path, ctx=None) -> CompiledModel:
    """Read an artifact back (checking the files' hashes) for `run_compiled`."""
    from qaccel.dialects import qaccel_context
    from xdsl.parser import Parser

    root = Path(outdir)
    try:
        manifest = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError) as e:
        raise CompileError(f"'{root}': not a qaccel-compile artifact ({e})") from None
    if manifest.get("format") != ARTIFACT_FORMAT:
        raise CompileError(f"'{root}': artifact format {manifest.get('format')}, "
                           f"expected {ARTIFACT_FORMAT} (compile the model again)")  # fmt: skip
    data = {}
    for rel, digest in manifest["files"].items():
        try:
            blob = (root / rel).read_bytes()
        except OSError as e:
            raise CompileError(f"'{root / rel}': {e.strerror}") from None
        if hashlib.sha256(blob).hexdigest() != digest:
            raise CompileError(f"'{root / rel}' does not match the manifest's hash")
        data[rel] = blob
    module = Parser(ctx or qaccel_context(), data["host.mlir"].decode(), str(root / "host.mlir"))
    module = module.parse_module()
    config = HardwareConfig.from_dict(manifest["config"])
    functions = {}
    for name, entry in manifest["functions"].items():
        layers = []
        for e in entry["layers"]:
            layers.append(CompiledLayer(
                function=name, index=e["index"], ops=e["ops"], anchor=e["anchor"],
                inputs=e["inputs"], output=e["output"], widened=e["widened"], offset=e["offset"],
                program=None, words=np.frombuffer(data[e["program"]], "<u8").reshape(-1, 2),
                uops=np.frombuffer(data[e["uops"]], "<u4"), description=e["description"],
            ))  # fmt: skip
        with np.load(io.BytesIO(data[entry["image"]])) as z:
            image = z["dram"].copy()
        slots = [ArenaSlot(**s) for s in entry["slots"]]
        functions[name] = CompiledFunction(name, layers, slots, entry["arena_bytes"], image)
    fallbacks = [Fallback(**fb) for fb in manifest["fallbacks"]]
    report = json.loads(data["report.json"])
    return CompiledModel(module, config, functions, fallbacks, report)


# --------------------------------------------------------------------------------------------
# Runtime


STEP_WRITE, STEP_LAYER, STEP_READ, STEP_HOST = 0, 1, 2, 3


@dataclass
class FunctionSteps:
    """How an accelerator function runs, for the simulated runtime and the C driver alike:
    `steps` are (kind, argument): STEP_WRITE slot (the host fills an arena slot with a tensor
    it produced), STEP_LAYER layer index, STEP_READ slot (the host reads back what a host op or
    the return needs), STEP_HOST segment (host ops, at body positions `segments[segment]`).
    `host_constants` are the constants host ops read (the layers' weights are in DRAM)."""

    steps: list[tuple[int, int]]
    segments: list[list[int]]
    host_constants: list[int]


def function_steps(fn: CompiledFunction, ops: list[Operation]) -> FunctionSteps:
    """The steps of `fn` whose body ops are `ops`."""
    by_anchor = {lay.anchor: lay for lay in fn.layers}
    in_layers = {ops[i] for lay in fn.layers for i in lay.ops}
    out = FunctionSteps([], [], [])
    written: set[int] = set()
    for i, op in enumerate(ops):
        lay = by_anchor.get(i)
        if lay is not None:
            for k in lay.inputs:
                if fn.slots[k].host_writes and k not in written:
                    out.steps.append((STEP_WRITE, k))
                    written.add(k)
            out.steps.append((STEP_LAYER, lay.index))
            if fn.slots[lay.output].host_reads:
                out.steps.append((STEP_READ, lay.output))
        elif isinstance(op, tfl.ConstOp):
            uses = [u.operation for u in op.results[0].uses]
            if not all(u in in_layers for u in uses):
                out.host_constants.append(i)
        elif op not in in_layers and not isinstance(op, func.ReturnOp):
            if not out.steps or out.steps[-1][0] != STEP_HOST:
                out.steps.append((STEP_HOST, len(out.segments)))
                out.segments.append([])
            out.segments[-1].append(i)
    return out


def _make_call_impl():
    from qaccel.interpreter.accel_semantics import AccelFunctions

    @register_impls
    class VtaCalls(AccelFunctions):
        """`func.call` of a compiled accelerator function: its `function_steps`, layers on the
        simulator over the function's DRAM image, host segments on the interpreter (the
        fallbacks); other calls as usual."""

        def __init__(self, compiled: CompiledModel, simulator: str = "c"):
            super().__init__()
            self.compiled = compiled
            self.simulator = simulator
            self.plans: dict[str, tuple] = {}
            self.layer_runs = 0
            self.host_bytes = 0  # bytes the host wrote into or read from an arena

        def _plan(self, name: str, interpreter: Interpreter):
            plan = self.plans.get(name)
            if plan is None:
                f = interpreter.get_op_for_symbol(name)
                ops = list(f.body.block.ops)
                if not ops or not isinstance(ops[-1], func.ReturnOp):
                    raise CompileError(f"@{name} has no func.return")
                plan = self.plans[name] = (
                    f,
                    ops,
                    function_steps(self.compiled.functions[name], ops),
                )
            return plan

        def _run_ops(self, interpreter: Interpreter, ops, positions, env) -> None:
            for i in positions:
                o = ops[i]
                env.update(zip(o.results, interpreter.run_op(o, tuple(env[v] for v in o.operands))))

        @impl(func.CallOp)
        def run_call(self, interpreter: Interpreter, op: func.CallOp, args: tuple[Any, ...]):
            name = op.callee.string_value()
            fn = self.compiled.functions.get(name)
            if fn is None:
                return super().run_call(interpreter, op, args)
            f, ops, plan = self._plan(name, interpreter)
            env: dict[SSAValue, Any] = dict(zip(f.body.block.args, args))
            self._run_ops(interpreter, ops, plan.host_constants, env)
            image, lay = fn.image, None
            for kind, arg in plan.steps:
                if kind == STEP_WRITE:
                    slot = fn.slots[arg]
                    image = image.copy() if image is fn.image else image
                    fn.write(image, arg, env[_resolve(slot.value, ops, f)])
                    self.host_bytes += slot.nbytes
                elif kind == STEP_LAYER:
                    lay = fn.layers[arg]
                    image = fn.run_layer(lay, image, self.compiled.config, self.simulator)
                    self.layer_runs += 1
                elif kind == STEP_READ:  # right after the layer that wrote the slot
                    result = ops[lay.anchor].results[0]
                    env[result] = y = fn.read(image, lay, result.type)
                    if lay.widened is not None:
                        env[ops[lay.widened].results[0]] = y.astype(np.int32)
                    self.host_bytes += fn.slots[arg].nbytes
                else:
                    self._run_ops(interpreter, ops, plan.segments[arg], env)
            return tuple(env[v] for v in ops[-1].operands)

    return VtaCalls


def run_compiled(
    compiled: CompiledModel, inputs: Sequence[np.ndarray], listener=None, simulator: str = "c"
) -> list[np.ndarray]:
    """Run the host program with the interpreter and each compiled accelerator layer on the
    simulator (bit-exact with the interpreter's own semantics of the accel ops); `simulator`
    "c" (libqaccel_vta, the default) or "python" (the reference)."""
    from qaccel.interpreter.interpreter import (
        check_inputs,
        entry_function,
        make_interpreter,
        prepare_module,
    )

    function = entry_function(compiled.module)
    args = check_inputs(function, inputs)
    prepare_module(compiled.module)
    interpreter = make_interpreter(compiled.module, [listener] if listener else [])
    interpreter.register_implementations(_make_call_impl()(compiled, simulator), override=True)
    return [np.asarray(r) for r in interpreter.call_op(function, tuple(args))]


__all__ = [
    "STEP_HOST", "STEP_LAYER", "STEP_READ", "STEP_WRITE", "ArenaSlot", "CompileError",
    "CompiledFunction", "CompiledLayer", "CompiledModel", "Fallback", "FunctionSteps",
    "accelerator_functions", "build_report", "compile_module", "format_report",
    "function_steps", "is_artifact", "load_artifact", "match_layer", "run_compiled",
    "write_artifact",
]  # fmt: skip
