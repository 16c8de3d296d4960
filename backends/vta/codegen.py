"""Compile a `vta-pipeline` module for the VTA-like accelerator: IR -> compiled functions.

    compiled = compile_module(module, config)        # a `CompiledModel` (backends/vta/compiled.py)

**What runs where.** Each accelerator function (`qaccel.target = "vta"`) is a sequence of
`accel` ops on the packed layout in which `form-vta-layers` made every accelerator layer one
`vta.layer` op and `schedule-vta` gave it its schedule attribute. Compilation walks those
ops in body order and never looks for patterns: each layer's body is read as its kind says
(`lowering/vta/layers.py`: a GEMM layer `ConvLayer`, an element-wise tree `AluLayer`, a
pool `PoolLayer`), its schedule is checked (a GEMM layer without one is searched, an
element-wise or pool layer without one gets the emitter's choice), and it is emitted as one
instruction stream (`lowering/vta/emit.py`, `emit_alu.py`) that runs on the simulator. The
`accel` packed tensor of a layer's input is its DRAM input region byte for byte, and its
output region is the packed result.

**DRAM.** An accelerator function has one DRAM image: the activation arena
(`backends/vta/arena.py`: a slot per packed tensor a layer reads or writes, reused by
liveness), then each layer's constants (packed weights, fused biases, multipliers, shifts).
Layers run one after another on that image, so a layer's output is read by the next layer
where it was stored; the host writes into the arena only tensors it produced and reads back
only tensors a host op or the return uses (`host_write_bytes` / `host_read_bytes` in the
report).

Every other op of an accelerator function (pads, concatenations, ops no layer holds, a layer
whose body does not read as its kind or whose schedule or emission fails) runs on the host
interpreter and is listed in the report as a host fallback with its reason; nothing is
dropped silently.
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Callable, Iterator
from dataclasses import dataclass

import numpy as np
from qaccel.backends.vta.arena import ALIGN as ARENA_ALIGN
from qaccel.backends.vta.arena import Slot, allocate
from qaccel.backends.vta.compiled import (
    ArenaSlot,
    CompiledFunction,
    CompiledLayer,
    CompiledModel,
    CompileError,
    Fallback,
    accelerator_functions,
    top_level,
    value_ref,
)
from qaccel.backends.vta.report import alu_report, build_report, gemm_report, layer_energy
from qaccel.targets.base import TargetError, hardware_config
from qaccel.dialects import accel, tfl, vta
from qaccel.dialects.types import tensor_dtype
from qaccel.lowering.form_vta_layers import HOST_REASON_ATTR
from qaccel.lowering.schedule_vta import (
    ScheduleAttrError,
    alu_schedule,
    describe,
    gemm_schedule,
)
from qaccel.lowering.vta.emit import LayerProgram, Placement, prepare_emit
from qaccel.lowering.vta.emit_alu import AluPlan, prepare_alu
from qaccel.lowering.vta.layers import AluMatch, LayerMatch, LayerReader, NotALayer, PoolMatch
from qaccel.lowering.vta.geometry import LayerError
from qaccel.lowering.vta.planning import Schedule
from qaccel.lowering.vta.search import schedule
from qaccel.targets.vta.config import HardwareConfig
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr
from xdsl.ir import Operation, SSAValue

_NO_CODEGEN = "no VTA code generator yet"


_STEP = "a host step of the accelerator program"
_HOST_STEP_REASONS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    ((accel.ConcatOp, accel.ConcatLanesOp), f"{_STEP} (concatenation, a copy)"),
    (accel.CropOp, f"{_STEP} (a spatial crop: a copy)"),
    (accel.ReshapeOp, f"{_STEP} (a reshape: a copy)"),
    (accel.DepthToSpaceOp, f"{_STEP} (depth to space: a gather)"),
    (accel.RelayoutOp, f"{_STEP} (a reshape or transpose: a gather)"),
    (accel.SoftmaxOp, f"{_STEP} (LiteRT's int8 fixed-point softmax: the ALU has no reciprocal "
                      "or max across lanes)"),
    (accel.BatchMatmulOp, f"{_STEP} (activation x activation product beyond the GEMM "
                          "layers' 1024 rows, depth or columns)"),
    (accel.BmmOperandOp, f"{_STEP} (a matrix product's operand gathered into a token image or "
                         "weight tiles in the arena)"),
    (accel.BmmZpCorrectionOp, f"{_STEP} (a matrix product's zero-point terms: row and column "
                              "sums of the int8 operands)"),
    (accel.ResizeNearestNeighborOp, f"{_STEP} (nearest-neighbour resize: a gather)"),
    (accel.ResizeBilinearOp, f"{_STEP} (bilinear resize: LiteRT's integer interpolation, exact)"),
    (accel.Col2ImOp, f"{_STEP} (a transposed convolution's overlapping taps summed: a "
                     "gather-sum)"),
    (accel.HostPool2DOp, f"{_STEP} (a pool the ALU cannot do bit-exactly: padded taps, or a "
                         "divisor not a power of two)"),
    (accel.HostRequantizeOp, "a host op by design (LiteRT's double-precision requantization)"),
    (accel.LutOp, "a host op by design (an element-wise int8 op as its 256-entry table; the ALU "
                  "cannot index a table)"),
    (accel.LaneSumOp, f"{_STEP} (a sum across the 16 lanes of each row: ALU instructions "
                      "combine rows lane by lane, never lanes of one row)"),
    (accel.LaneBroadcastOp, f"{_STEP} (one lane copied into all 16 of its row: the ALU and "
                            "the DMA move whole rows, never lanes)"),
    (accel.PadOp, f"{_STEP} (a spatial pad no layer's LOAD applies: its reader is a crop, a "
                  "host step or an element-wise tree, which load without padding)"),
)  # fmt: skip
"""Why an op of the host's kind is not a layer: one line each, in the report's host fallbacks."""


@dataclass
class _Planned:
    """One layer as the arena sees it."""

    when: int  # body position it runs at (its anchor)
    inputs: list[SSAValue]
    output: SSAValue
    ops: list[Operation]
    int8_bytes: bool  # the output is int32 in the IR but stored as int8 (`offset`)
    widened: SSAValue | None
    weights: SSAValue | None = None  # run-time weight tiles: their slot starts a whole tile


def _plan_arena(layers: list[_Planned], ops: list[Operation]):
    """The arena slots of the layers' inputs and outputs; (slots, slot of each value)."""
    index_of = {op: i for i, op in enumerate(ops)}
    block = ops[0].parent_block() if ops else None
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
            host_reads = any(top_level(u.operation, block) not in in_layers
                             for w in seen for u in w.uses)  # fmt: skip
            start, end = p.when, max([p.when, *uses])
        else:
            host_reads = False
            start, end = min(uses), max(uses)
        n = int(np.prod(v.type.get_shape()))
        nbytes = n if p is not None and p.int8_bytes else n * tensor_dtype(v.type).itemsize
        slot_of[v] = len(slots)
        slots.append(ArenaSlot(value_ref(v, index_of), -1, nbytes, start, end, p is None,
                               host_reads))  # fmt: skip
    # A run-time weight value is loaded as whole tiles (`[.., B, B]`): its slot starts one.
    tile = {p.weights: int(np.prod(p.weights.type.get_shape()[-2:])) for p in layers
            if p.weights is not None}  # fmt: skip
    plan = [Slot(s.nbytes, s.start, s.end, align=max(ARENA_ALIGN, tile.get(v, 0)))
            for s, v in zip(slots, values, strict=True)]  # fmt: skip
    size = allocate(plan)
    for s, q in zip(slots, plan, strict=True):
        s.offset = q.offset
    return slots, slot_of, size


@dataclass
class _Layer:
    """A formed layer that reads as a layer of its kind, with the schedule it runs with."""

    op: vta.LayerOp
    match: LayerMatch | AluMatch | PoolMatch
    schedule: Schedule | AluPlan

    def planned(self, when: int) -> _Planned:
        m, outputs = self.match, self.op.outputs
        widened = outputs[1] if len(outputs) > 1 else None
        if isinstance(m, LayerMatch):
            inputs = [m.input] + [v for v in (m.weights, m.init) if v is not None]
            return _Planned(when, inputs, outputs[0], [self.op], m.offset is not None, widened,
                            m.weights)  # fmt: skip
        return _Planned(when, list(m.inputs), outputs[0], [self.op], False, widened)


def _layer_schedule(fname: str, op: vta.LayerOp, m, c: HardwareConfig) -> Schedule | AluPlan:
    """The schedule `op` carries (checked: `CompileError` when it does not suit the layer),
    or the one the search (GEMM layers) or the emitter (others) chooses without one; a
    `LayerError` when none fits."""
    attr = op.schedule
    if isinstance(m, LayerMatch) and attr is None:
        return schedule(m.layer, c)
    try:
        if isinstance(m, LayerMatch):
            return gemm_schedule(attr, m.layer, c)
        return alu_schedule(attr, m.layer, c)
    except (ScheduleAttrError, LayerError) as e:
        if attr is None:
            raise
        raise CompileError(f"@{fname}: {describe(op, m)}: {e}") from None


def compile_module(
    module: ModuleOp,
    config: HardwareConfig | None = None,
    *,
    total_macs: int | None = None,
    progress: Callable[[str], None] | None = None,
    settled: dict | None = None,
    image_ready: Callable[[str, np.ndarray], None] | None = None,
) -> CompiledModel:
    """Emit every formed, scheduled accelerator layer (`vta.layer`) of `module` (the
    output of `vta-pipeline`) into one DRAM image per accelerator function. `total_macs`
    (the model's MACs, e.g. of the imported IR) gives the report's MAC share. `config`
    defaults to the module's (`#accel.target`, from `attach-target`). `settled`: what
    `settle_host_trees(module)` returned when the caller ran it already (it changes the
    module; everything after it only reads the module). `image_ready(name, image)` is called
    with a function's DRAM image as soon as its layout is known, before the streams are
    emitted (`qaccel-compile` compresses it meanwhile); should the emitter then refuse a layer,
    the layout is made again and the function's final image (`CompiledFunction.image`) differs
    from the one given."""
    with _no_collections():
        return _compile_module(module, config, total_macs, progress, settled, image_ready)


@contextlib.contextmanager
def _no_collections() -> Iterator[None]:
    """The cyclic garbage collector off while the emission runs: the emission's objects
    (instruction rows, micro-op arrays) form no cycles, but their allocations made the
    collector walk the whole module's IR again and again (a third of the emission's time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _compile_module(module: ModuleOp, config: HardwareConfig | None, total_macs: int | None,
                    progress: Callable[[str], None] | None, settled: dict | None,
                    image_ready: Callable[[str, np.ndarray], None] | None) -> CompiledModel:
    try:
        c = config or hardware_config(module, "vta")
    except (TargetError, ValueError) as e:
        raise CompileError(str(e)) from None
    functions: dict[str, CompiledFunction] = {}
    fallbacks: list[Fallback] = []
    accel_functions = accelerator_functions(module)
    if settled is None:
        settled = settle_host_trees(module, c)
    total = sum(isinstance(op, vta.LayerOp) for f in accel_functions for op in f.body.block.ops)
    count = [0, total]
    for f in accel_functions:
        name = f.sym_name.data
        ops = list(f.body.block.ops)
        reasons: dict[Operation, str] = dict(settled[f][0])
        fn = _compile_function(name, ops, reasons, c, progress, count, settled[f][1],
                               image_ready)  # fmt: skip
        functions[name] = fn
        covered = {ops[i] for lay in fn.layers for i in lay.ops}
        for i, op in enumerate(ops):
            if op in covered or isinstance(op, func.ReturnOp | tfl.ConstOp):
                continue
            why = op.attributes.get(HOST_REASON_ATTR)
            reason = reasons.get(op, why.data if isinstance(why, StringAttr) else _NO_CODEGEN)
            if reason == _NO_CODEGEN:
                reason = _tree_reason(op, ops, reasons) or reason
            for kinds, text in _HOST_STEP_REASONS:
                if isinstance(op, kinds):
                    reason = text
                    break
            fallbacks.append(Fallback(name, _fallback_name(op), i, reason))
    compiled = CompiledModel(module, c, functions, fallbacks, {})
    compiled.report = build_report(compiled, total_macs)
    return compiled


def _tree_reason(op: Operation, ops: list[Operation], reasons: dict[Operation, str]) -> str | None:
    """An ALU op left on the host as part of an element-wise tree that formed no layer: the
    reason of the narrowing (or refused layer) its result flows to, named with its place."""
    from qaccel.backends.vta.alu_or_host import tree_end

    end = tree_end(op)
    if end is None:
        users = {u.operation for r in op.results for u in r.uses}
        if isinstance(op, accel._ComputeOp) and len(users) > 1:
            return (f"its int32 result is read by {len(users)} ops, and no layer stores it for "
                    "them (element-wise layers exchange int8 tensors): the trees reading it "
                    "run on the host with it")
        return None
    why = end.attributes.get(HOST_REASON_ATTR)
    text = reasons.get(end, why.data if isinstance(why, StringAttr) else None)
    if text is None:
        return None
    return f"in the element-wise tree ending at {_fallback_name(end)} (#{ops.index(end)}): {text}"


def _check_formed(name: str, ops: list[Operation]) -> None:
    """A GEMM op outside any layer that does not say why (`accel.host_reason`): the IR was
    not formed (e.g. text from before `form-vta-layers`), so compiling it would silently put
    every layer on the host."""
    for i, op in enumerate(ops):
        if isinstance(op, accel.Conv2DZpOp | accel.DenseZpOp) and HOST_REASON_ATTR not in (
            op.attributes
        ):  # fmt: skip
            raise CompileError(f"@{name}: {op.name} (#{i}) is in no vta.layer: run "
                               "form-vta-layers and schedule-vta first (vta-pipeline does)")


def _fallback_name(op: Operation) -> str:
    """A refused layer is named by its GEMM op, or by the narrowing that ends it."""
    if isinstance(op, vta.LayerOp):
        body = op.body_ops()
        root = body[0] if op.kind.data in vta.GEMM_KINDS else body[-1]
        return f"{root.name} (vta.layer \"{op.kind.data}\")"
    return op.name


_BETWEEN_HOST_STEPS = (
    "kept on the host: an input comes from a host step of the program and its results go only "
    "to host steps, so on the ALU it would add a DRAM round trip and its cycles, saving nothing"
)


def _between_host_steps(op: vta.LayerOp) -> bool:
    """An element-wise layer with an operand a host op of the function computes (e.g. a host
    pool) whose results only host ops (or the return) use: on the host it costs no DRAM round
    trip and no accelerator cycles (NASNet's pool-add-concat)."""
    if op.kind.data != "eltwise":
        return False
    block = op.parent_block()
    body = op.body_ops()
    inside = set(body)
    inputs = [v for inner in body for v in inner.operands if v.owner not in inside]
    if not inputs:
        return False
    hosted = [v for v in inputs if isinstance(v.owner, Operation)
              and not isinstance(v.owner, tfl.ConstOp)
              and not isinstance(top_level(v.owner, block), vta.LayerOp)]  # fmt: skip
    if not hosted:
        return False
    for r in op.results:
        for use in r.uses:
            if isinstance(top_level(use.operation, block), vta.LayerOp):
                return False
    return True


def _read_layers(name: str, ops: list[Operation], refused: dict[Operation, str],
                 c: HardwareConfig, progress=None, count=None,
                 kept: dict[Operation, str] | None = None, decide: bool = False) -> list[_Layer]:  # fmt: skip
    """The function's formed layers that read as layers and have a schedule that fits, in
    body order; the others go to `refused` with the reason (they run on the host, and later
    layers cannot read their results from DRAM). The element-wise and pool layers of `kept`
    stay on the host (decided before, with why); with `decide`, which of those reading host
    steps stay on the host is decided here and added to `kept` (`_settle_host_trees`)."""
    from qaccel.backends.vta.alu_or_host import place_trees, reads_host_step
    from qaccel.targets.vta.host_cost import host_tree_cycles

    kept = {} if kept is None else kept
    reader = LayerReader(name)
    out = []
    fixed: set[Operation] = set()
    costs: dict[Operation, tuple[int, int]] = {}
    for op in ops:
        if not isinstance(op, vta.LayerOp) or op in refused:
            continue
        if op in kept and not decide:
            refused[op] = kept[op]
            if len(op.outputs) > 1:  # later trees read the int8 result the host stores
                reader.leaves[op.outputs[1]] = (op.outputs[0], 0)
            continue
        if decide and _between_host_steps(op):
            refused[op] = kept[op] = _BETWEEN_HOST_STEPS
            continue
        try:
            m = reader.read(op)
            if progress and count is not None:
                count[0] += 1
                progress(f"[{count[0]}/{count[1]}] {name} {op.kind.data} layer: "
                         f"{m.layer.describe()}")  # fmt: skip
            sched = _layer_schedule(name, op, m, c)
        except (NotALayer, LayerError) as e:
            refused[op] = str(e)
            continue
        if decide and isinstance(m, AluMatch | PoolMatch) and reads_host_step(op, fixed):
            costs[op] = (_alu_cycles(op, m, sched, c), host_tree_cycles(op.body_ops(), c))
        else:
            fixed.add(op)
        reader.accept(op, m)
        out.append(_Layer(op, m, sched))
    if costs:
        host = place_trees(ops, fixed, costs, c)
        refused.update(host)
        kept.update(host)
        out = [lay for lay in out if lay.op not in host]
    return out


def _alu_cycles(op: vta.LayerOp, m: AluMatch | PoolMatch, plan: AluPlan, c: HardwareConfig) -> int:
    """The element-wise or pool layer's ALU program's cycles, as `schedule-vta` estimated."""
    from qaccel.lowering.schedule_vta import alu_cycles

    attr = op.schedule
    cycles = attr.get("estimated_cycles") if attr is not None else None
    return int(cycles) if cycles is not None else alu_cycles(m.layer, plan, c)


def settle_host_trees(module: ModuleOp, config: HardwareConfig | None = None) -> dict:
    """The only change codegen makes to `module`: in each accelerator function, the element-wise
    and pool layers the cost model keeps on the host go back into the body as host steps
    (`_settle_host_trees`). Run it before anything that must see the final module (the
    artifact's `host.mlir`), and pass its result to `compile_module`."""
    try:
        c = config or hardware_config(module, "vta")
    except (TargetError, ValueError) as e:
        raise CompileError(str(e)) from None
    settled = {}
    for f in accelerator_functions(module):
        _check_formed(f.sym_name.data, list(f.body.block.ops))
        settled[f] = _settle_host_trees(f.sym_name.data, f, c)
    return settled


def _settle_host_trees(name: str, f: func.FuncOp,
                       c: HardwareConfig) -> tuple[dict[Operation, str], dict[Operation, str]]:  # fmt: skip
    """Decide which element-wise and pool layers of `f` reading host steps stay on the host
    (`alu_or_host.place_trees`: per run of host steps, for the whole program) and put their
    ops back in the body as host steps (`alu_or_host.dissolve`), without the narrowing and the
    widening copies `form-vta-layers` added for the ALU when nothing needs them there now.
    (why each op moved back runs on the host, the layers that stay on the host as layers with
    why: a later layer reads their int32 result from DRAM)."""
    from qaccel.backends.vta.alu_or_host import dissolve, merge_widenings, reads_host_step

    block = f.body.block
    kept: dict[Operation, str] = {}
    layers = {o for o in block.ops if isinstance(o, vta.LayerOp)}
    if not any(o.kind.data in ("eltwise", "pool") and reads_host_step(o, layers) for o in layers):
        return {}, kept  # nothing to decide: every tree reads layers only
    _read_layers(name, list(block.ops), {}, c, kept=kept, decide=True)
    reasons: dict[Operation, str] = {}
    on_host = set(kept)
    for layer in [o for o in block.ops if o in kept]:
        moved = dissolve(layer, on_host)  # type: ignore[arg-type]
        if moved is None:
            continue
        why = kept.pop(layer)
        for o in moved:
            reasons[o] = why
    merge_widenings(block, list(reasons))
    reasons = {o: why for o, why in reasons.items() if o.parent_block() is block}
    for o, why in reasons.items():
        o.attributes[HOST_REASON_ATTR] = StringAttr(why)
    return reasons, kept


def _compile_function(
    name: str, ops: list[Operation], reasons: dict[Operation, str], c: HardwareConfig,
    progress=None, count=None, kept: dict[Operation, str] | None = None,
    image_ready: Callable[[str, np.ndarray], None] | None = None,
) -> CompiledFunction:
    """Arena, placement and emission of one accelerator function's layers, in body order.
    A layer the emitter refuses goes back to the host (its reason reported) and the arena
    is planned again without it."""
    index_of = {op: i for i, op in enumerate(ops)}
    layers_read = _read_layers(name, ops, reasons, c, progress, count, kept)
    while True:
        planned = [lay.planned(index_of[lay.op]) for lay in layers_read]
        slots, slot_of, arena = _plan_arena(planned, ops)
        layers, image, failed = _emit_layers(name, layers_read, slots, slot_of, arena, index_of,
                                             c, image_ready)  # fmt: skip
        if failed is None:
            break
        reasons[failed[0].op] = failed[1]
        layers_read = _read_layers(name, ops, reasons, c, kept=kept)
    for lay in layers:
        if isinstance(lay.program, LayerProgram):
            lay.program.dram_size = len(image)
    return CompiledFunction(name, layers, slots, arena, image)


def _dram_image(size: int, constants: list[tuple[int, np.ndarray]]) -> np.ndarray:
    """A function's DRAM image: the arena zero, each layer's constants at its offset."""
    image = np.zeros(size, np.uint8)
    for offset, data in constants:
        image[offset : offset + len(data)] = data
    return image


def _emit_layers(name: str, layers_read: list[_Layer], slots, slot_of, arena: int, index_of,
                 c: HardwareConfig, image_ready=None):  # fmt: skip
    """Emit the layers in body order, each layer's constants after the last one's: (compiled
    layers, the DRAM image, None), or (..., (the first layer the emitter refuses, why)).
    Every layer's constants are laid out first (the image is final then, and given to
    `image_ready` before the streams are emitted) and its stream
    emitted after (`prepare_emit`, `prepare_alu`), then the streams and the report rows
    (timing and energy) in body order (`_run_emitters`); the first refusal in body order is
    the one reported, as when they were emitted one by one."""
    at = -(-arena // c.dram_align) * c.dram_align  # constants: weights need whole tiles
    entries: list[tuple[_Layer, object]] = []  # (layer, emitter)
    laid_out: list[tuple[int, np.ndarray]] = []  # (offset, constants) of each
    failed = None
    for lay in layers_read:
        try:
            prepared, consts = _prepare_layer(lay, slots, slot_of, at, c)
        except LayerError as err:
            failed = (lay, str(err))
            break
        entries.append((lay, prepared))
        laid_out.append((at, consts))
        at = -(-(at + len(consts)) // c.dram_align) * c.dram_align
    image = _dram_image(at, laid_out)
    if image_ready is not None and failed is None:
        image_ready(name, image)
    # A layer's index is its entry's: the layers after a refusal are not compiled.
    jobs = [_LayerJob(name, i, lay, prepared, c) for i, (lay, prepared) in enumerate(entries)]
    done = _run_emitters(jobs)
    layers = []
    for (lay, _), (prog, report) in zip(entries, done):
        if isinstance(prog, LayerError):
            failed = (lay, str(prog))
            break
        layers.append(_compiled_layer(name, len(layers), lay, prog, report, slot_of, index_of))
    return layers, image, failed


def _prepare_layer(lay: _Layer, slots, slot_of, at: int, c: HardwareConfig):
    """(the layer's emitter, placed: a GEMM layer's, or an element-wise/pool layer's; the
    layer's constants bytes, which do not depend on its stream), its constants at byte
    `at`."""
    m, output = lay.match, lay.op.outputs[0]
    if isinstance(m, LayerMatch):
        weights, init = (None if v is None else slots[slot_of[v]].offset
                         for v in (m.weights, m.init))  # fmt: skip
        placement = Placement(at, slots[slot_of[m.input]].offset, slots[slot_of[output]].offset,
                              weights, init)  # fmt: skip
        emitter = prepare_emit(m.layer, lay.schedule, c, placement)
        return emitter, emitter.constants
    plan = lay.schedule
    emitter = prepare_alu(m.layer, c, inputs_at=[slots[slot_of[v]].offset for v in m.inputs],
                          output_at=slots[slot_of[output]].offset, constants_at=at,
                          rows=plan.rows, output_stage=plan.output_stage,
                          pool=isinstance(m, PoolMatch))  # fmt: skip
    return emitter, emitter.constants


@dataclass
class _LayerJob:
    """What is left to do for one layer once its constants are laid out: its stream (its
    emitter runs) and its report row (the stream's timing and energy), as `run()` gives
    them: (program, report) or (LayerError, None)."""

    function: str
    index: int  # the layer's index in its function
    layer: _Layer
    prepared: object  # the layer's emitter: a GEMM layer's or an element-wise/pool layer's
    config: HardwareConfig

    def run(self) -> tuple:
        try:
            prog = self.prepared.run()
        except LayerError as err:
            return err, None
        return prog, _layer_report(self.function, self.index, self.layer, prog, self.config)


def _run_emitters(jobs: list[_LayerJob]) -> list:
    """Each job's result, in this process, in order. (Half of them used to run in a forked
    child: since the streams are resolved in C that cost more CPU, forking and sending the
    words back, than it saved, and the second core is the host IR's and the LiteRT models'.)"""
    out = []
    for job in jobs:
        out.append(job.run())
        if isinstance(out[-1][0], LayerError):  # the layers after it are not compiled
            break
    return out


def _layer_report(name: str, index: int, lay: _Layer, prog, c: HardwareConfig) -> dict:
    """The report row of a formed layer emitted as `prog`."""
    m = lay.match
    if isinstance(m, LayerMatch):
        report = gemm_report(name, index, m.layer, lay.schedule, prog, c)
    else:
        report = alu_report(name, index, m.layer, prog, c)
    report.update(layer_energy(prog.program, c, report["cycles"]))
    return report


def _compiled_layer(name: str, index: int, lay: _Layer, prog, report: dict, slot_of,
                    index_of) -> CompiledLayer:  # fmt: skip
    """The `CompiledLayer` of a formed layer emitted as `prog`, with its report row."""
    m, op = lay.match, lay.op
    output = op.outputs[0]
    position = index_of[op]
    widened = position if len(op.outputs) > 1 else None
    if isinstance(m, LayerMatch):
        inputs, offset = [slot_of[m.input]], m.offset
        for v in (m.weights, m.init):  # run-time weight tiles and accumulators, written first
            if v is not None:
                inputs.append(slot_of[v])
    else:
        inputs, offset = [slot_of[v] for v in m.inputs], None
    return CompiledLayer(
        function=name, index=index, ops=[position], anchor=position, inputs=inputs,
        output=slot_of[output], widened=widened, offset=offset, program=prog,
        words=prog.program.words, uops=prog.program.uops, description=m.layer.describe(),
        report=report,
    )  # fmt: skip


__all__ = ["compile_module", "settle_host_trees"]
