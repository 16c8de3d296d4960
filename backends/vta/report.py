"""The cycle report of a compiled model: one row per accelerator layer, totals, fallbacks.

    report = build_report(compiled, total_macs)      # JSON-able (the artifact's report.json)
    print(format_report(report))                     # a table, as `qaccel-compile` prints it

A row gives the layer's simulated cycles (timing model), GEMM utilization, roofline and
ALU-bound cycles, DRAM traffic, instruction and micro-op counts and the tiling it ran with.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from qaccel.backends.vta.compiled import TARGET_ATTR, CompiledFunction, CompiledModel
from qaccel.lowering.vta.emit import LayerProgram
from qaccel.lowering.vta.layers import AluLayer, ConvLayer, PoolLayer
from qaccel.lowering.vta.cost_model import alu_bound_cycles, roofline_cycles
from qaccel.targets.vta.config import HardwareConfig
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp


def gemm_report(
    name: str, index: int, layer: ConvLayer, sched, prog: LayerProgram, c: HardwareConfig
) -> dict:
    """The report row of a GEMM layer (conv, depthwise or dense)."""
    from qaccel.targets.vta.simulator import timing

    t = timing(prog.program, c)
    g = layer.geometry
    cycles = int(t.total_cycles)
    roof = roofline_cycles(g, c)
    return {
        "function": name, "layer": index, "kind": g.kind,
        "description": layer.describe(), "cycles": cycles,
        "ms": cycles / (c.clock_mhz * 1e3),
        "gemm_utilization": g.useful_macs / max(1, cycles * c.macs_per_cycle),
        "macs": int(g.useful_macs), "roofline_cycles": int(roof),
        # what the GEMM core spends: channels padded to blocks, depthwise block-diagonal tiles
        "padded_macs": int(g.macs),
        "padded_utilization": g.macs / max(1, cycles * c.macs_per_cycle),
        "roofline_ratio": cycles / max(1, roof),
        "alu_bound_cycles": int(alu_bound_cycles(g, c)),
        "dram_read_bytes": int(sum(t.dram_read_bytes.values())),
        "dram_write_bytes": int(sum(t.dram_write_bytes.values())),
        "instructions": len(prog.program), "uop_loads": prog.uop_loads,
        "constant_bytes": len(prog.constants), "tiling": sched.tiling(),
        "host_requantize": bool(g.int32_output),
    }  # fmt: skip



def _row_counts(layer: AluLayer | PoolLayer, stage_steps: int = 0) -> tuple[int, int]:
    """(DRAM rows the layer reads and writes, accumulator rows its ALU instructions walk when
    the last `stage_steps` steps run in the store module's output stage), over every image of
    a batch."""
    blocks = layer.images * layer.blocks  # a batch: each image's blocks in turn
    if isinstance(layer, PoolLayer):
        rows_in = blocks * layer.H * layer.W
        rows_out = blocks * layer.OH * layer.OW
        steps = len(layer.steps) - stage_steps
        alu = rows_out * (layer.KH * layer.KW + steps) + rows_in * len(layer.pre_steps)
        return rows_in * layer.n_inputs + rows_out, alu
    rows_out = blocks * layer.rows
    rows_in = rows_out * layer.reduce
    steps = len(layer.steps) - stage_steps
    if layer.reduce > 1:  # steps before the sum on every input row, the sum, the rest
        alu = rows_in * (layer.reduce_at + 1) + rows_out * (steps - layer.reduce_at)
    else:
        alu = rows_in * steps
    if layer.broadcast:  # one row per block, and the steps on it run on that row alone
        wide = [s for s in layer.steps[: len(layer.steps) - stage_steps]
                if s.dst not in layer.broadcast]  # fmt: skip
        alu = rows_in * len(wide) + blocks * (steps - len(wide))
    loaded = sum(blocks * layer.input_rows(k) for k in range(layer.n_inputs))
    return loaded + rows_out, alu


def alu_report(
    name: str, index: int, layer: AluLayer | PoolLayer, prog, c: HardwareConfig
) -> dict:
    """The report row of an element-wise or pool layer (no MACs; bounds: memory and ALU)."""
    from qaccel.targets.vta.roofline import roofline
    from qaccel.targets.vta.simulator import timing

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
    """MACs of the ops outside accelerator functions (all on the host)."""
    from qaccel.dialects.macs import op_macs

    return sum(
        op_macs(op) for f in module.ops if isinstance(f, func.FuncOp)
        and TARGET_ATTR not in f.attributes for op in f.body.walk()
    )  # fmt: skip


def _fallback_macs(compiled: CompiledModel) -> list[int]:
    """MACs of each host fallback of an accelerator function (a GEMM op left on the host, or
    a refused layer holding one: host work, however the function is labelled)."""
    from qaccel.dialects.macs import op_macs

    bodies = {
        f.sym_name.data: list(f.body.block.ops)
        for f in compiled.module.ops if isinstance(f, func.FuncOp) and f.body.blocks
    }  # fmt: skip
    counts = []
    for fb in compiled.fallbacks:
        ops = bodies.get(fb.function, [])
        op = ops[fb.position] if 0 <= fb.position < len(ops) else None
        counts.append(0 if op is None else sum(op_macs(inner) for inner in op.walk()))
    return counts


def function_host_steps(compiled: CompiledModel) -> dict[str, tuple[float, int]]:
    """Per accelerator function, (the host's nanoseconds, the program's stops) for its host
    steps (`targets/vta/host_cost.py`'s `program_host_steps`): every op of its body no
    emitted layer holds."""
    from qaccel.targets.vta.host_cost import program_host_steps

    steps = {}
    for f in compiled.module.ops:
        if not isinstance(f, func.FuncOp) or f.sym_name.data not in compiled.functions:
            continue
        ops = list(f.body.block.ops)
        fn = compiled.functions[f.sym_name.data]
        steps[fn.name] = program_host_steps(ops, {ops[i] for lay in fn.layers for i in lay.ops})
    return steps


def _outside_estimate(compiled: CompiledModel) -> dict:
    """The host's work around the accelerator functions, by the cost model's rates: the
    operators of the other functions on the CPU (`cpu_op_ns`), the packing and unpacking of
    the values that cross into and out of accelerator functions (`hop_cycles`) and one
    launch per call of an accelerator function."""
    from qaccel.dialects import accel, tfl
    from qaccel.targets.base import shape_of, storage_dtype
    from qaccel.targets.vta.host_cost import cpu_cycles, cpu_op_ns, hop_cycles, launch_cycles

    c = compiled.config
    cpu_ns = 0.0
    ops = hop_bytes = launches = 0
    for f in compiled.module.ops:
        if not isinstance(f, func.FuncOp) or TARGET_ATTR in f.attributes or not f.body.blocks:
            continue
        for op in f.body.block.ops:
            if isinstance(op, func.ReturnOp | tfl.ConstOp):
                continue
            if isinstance(op, func.CallOp):
                launches += op.callee.root_reference.data in compiled.functions
                continue
            if isinstance(op, accel.PackOp | accel.UnpackOp):
                packed = op.results[0] if isinstance(op, accel.PackOp) else op.operands[0]
                dtype = storage_dtype(packed)
                hop_bytes += math.prod(shape_of(packed)) * (dtype.itemsize if dtype else 1)
                continue
            ops += 1
            cpu_ns += cpu_op_ns(op, c.block)
    return {
        "cpu_ops": ops, "cpu_op_cycles": cpu_cycles(cpu_ns, c),
        "hop_bytes": hop_bytes, "hop_cycles": hop_cycles(hop_bytes, c),
        "launches": launches, "launch_cycles": launches * launch_cycles(c),
    }  # fmt: skip


def _host_estimate(compiled: CompiledModel, functions: list[dict], totals: dict) -> None:
    """The cost model's estimate of the host's work next to the simulated cycles, per function
    and in total (see `format_report`'s lines): host steps, program stops, cycles with host
    steps; and the whole inference with the CPU's work outside the accelerator functions."""
    from qaccel.targets.vta.host_cost import host_steps_cycles

    c = compiled.config
    steps = function_host_steps(compiled)
    cycles = {fn: 0 for fn in compiled.functions}
    for fn, layers in compiled.layers.items():
        cycles[fn] = sum(int(lay.report.get("cycles", 0)) for lay in layers)
    for row in functions:
        ns, stops = steps.get(row["function"], (0.0, 0))
        host = host_steps_cycles(ns, stops, c)
        row.update({"cycles": cycles[row["function"]], "host_step_cycles": host,
                    "program_stops": stops,
                    "cycles_with_host_steps": cycles[row["function"]] + host})  # fmt: skip
    host = sum(row["host_step_cycles"] for row in functions)
    totals["host_step_cycles"] = host
    totals["program_stops"] = sum(row["program_stops"] for row in functions)
    totals["cycles_with_host_steps"] = totals["cycles"] + host
    outside = _outside_estimate(compiled)
    totals.update(outside)
    totals["whole_inference_cycles"] = totals["cycles_with_host_steps"] + sum(
        outside[key] for key in ("cpu_op_cycles", "hop_cycles", "launch_cycles"))


def build_report(compiled: CompiledModel, total_macs: int | None) -> dict:
    c = compiled.config
    rows = [lay.report for ls in compiled.layers.values() for lay in ls]
    cycles = sum(r["cycles"] for r in rows)
    vta_macs = sum(r["macs"] for r in rows)
    fallback_macs = _fallback_macs(compiled)
    inside = sum(fallback_macs)
    host_macs = _host_macs(compiled.module) + inside
    totals = {
        "layers": len(rows), "cycles": cycles, "ms": cycles / (c.clock_mhz * 1e3),
        "clock_mhz": c.clock_mhz, "roofline_cycles": sum(r["roofline_cycles"] for r in rows),
        "alu_bound_cycles": sum(r["alu_bound_cycles"] for r in rows),
        "dram_bytes": sum(r["dram_read_bytes"] + r["dram_write_bytes"] for r in rows),
        "accelerator_functions": len(compiled.layers),
        "host_fallback_ops": len(compiled.fallbacks),
        "host_macs": host_macs, "host_macs_in_accelerator_functions": inside,
    }  # fmt: skip
    if total_macs:
        # Layer MACs count channels padded to blocks; the model's split is exact from the
        # host's MACs: those of host functions and of the GEMMs accelerator functions leave
        # on the host.
        totals["model_macs"] = int(total_macs)
        totals["accelerator_macs"] = max(0, int(total_macs) - host_macs)
        totals["accelerator_mac_share"] = totals["accelerator_macs"] / total_macs
    totals["roofline_ratio"] = cycles / max(1, totals["roofline_cycles"])
    totals["gemm_utilization"] = vta_macs / max(1, cycles * c.macs_per_cycle)
    padded = sum(r.get("padded_macs", r["macs"]) for r in rows)
    totals["padded_macs"] = padded
    totals["padded_utilization"] = padded / max(1, cycles * c.macs_per_cycle)
    totals.update(energy_totals(rows, c))
    functions = [_function_report(fn) for fn in compiled.functions.values()]
    for key in ("arena_bytes", "activation_bytes", "constant_bytes", "host_write_bytes",
                "host_read_bytes"):  # fmt: skip
        totals[key] = sum(f[key] for f in functions)
    _host_estimate(compiled, functions, totals)
    return {
        "config": c.name, "config_hash": c.content_hash,
        "layers": rows, "totals": totals, "functions": functions,
        "host_fallbacks": [
            fb.line() + (f" ({macs} MACs on the host)" if macs else "")
            for fb, macs in zip(compiled.fallbacks, fallback_macs)
        ],
        "host_gemm_fallbacks": [
            {"function": fb.function, "op": fb.op, "position": fb.position, "macs": macs,
             "reason": fb.reason}
            for fb, macs in zip(compiled.fallbacks, fallback_macs) if macs
        ],
    }  # fmt: skip


def layer_energy(program, c: HardwareConfig, cycles: int) -> dict:
    """The energy keys of a layer's report row (`targets/vta/energy.py`): `energy_pj` per
    inference and its components `energy_{mac,alu,sram,dram}_pj`, with the SRAM traffic and
    ALU lane operations they come from, and the MACs the GEMM core executes (padding lanes
    and the bias and zero-point GEMMs included: what `qaccel-sim` counts) with their
    utilization of the `cycles` the layer takes."""
    from qaccel.targets.vta.energy import access_counts, program_energy

    counts = access_counts(program, c)
    return {
        **program_energy(counts, c).as_report(),
        "sram_read_bytes": counts.sram_read_bytes, "sram_write_bytes": counts.sram_write_bytes,
        "alu_lane_ops": counts.alu_ops + counts.alu_muls, "executed_macs": counts.macs,
        "executed_utilization": counts.macs / max(1, cycles * c.macs_per_cycle),
    }  # fmt: skip


ENERGY_TOTAL_KEYS = ("energy_pj", "energy_mac_pj", "energy_alu_pj", "energy_sram_pj",
                     "energy_dram_pj", "sram_read_bytes", "sram_write_bytes", "alu_lane_ops",
                     "executed_macs")  # fmt: skip
"""The report's totals that are sums of the layers' keys of `layer_energy`."""


def energy_totals(rows: Sequence[dict], c: HardwareConfig) -> dict:
    """The model's energy per inference: the layers' energy keys summed, and the executed
    MACs' utilization (none when the rows have no energy, e.g. a report.json written before
    the energy model)."""
    if any("energy_pj" not in r for r in rows):
        return {}
    totals = {key: sum(r[key] for r in rows) for key in ENERGY_TOTAL_KEYS}
    cycles = sum(r["cycles"] for r in rows)
    totals["executed_utilization"] = totals["executed_macs"] / max(1, cycles * c.macs_per_cycle)
    return totals


def energy_lines(report: dict) -> list[str]:
    """The report text's energy line: the total per inference and its split."""
    t = report["totals"]
    if "energy_pj" not in t:
        return []
    total = t["energy_pj"]
    split = ", ".join(f"{name} {t[f'energy_{key}_pj'] / max(total, 1e-300):.1%}"
                      for key, name in (("mac", "MACs"), ("alu", "ALU"), ("sram", "SRAM"),
                                        ("dram", "DRAM")))  # fmt: skip
    return [f"energy: {total / 1e6:.3f} uJ per inference on the accelerator ({split}; "
            f"per-operation energies of the hardware configuration)"]


def host_estimate_lines(report: dict) -> list[str]:
    """The report text's lines for the host's work, the cost model's estimate next to the
    simulated cycles (none for a report.json written before the estimate): the host steps
    inside accelerator programs with their program stops, and what they add to the
    accelerator's cycles (per function too when there are several); then the whole inference
    with the CPU's operators outside accelerator functions, the packing and unpacking of
    what crosses and the launches."""
    t = report["totals"]
    if "cycles_with_host_steps" not in t:
        return []
    stops = t["program_stops"]
    lines = [f"host steps (estimated by the cost model, not simulated): {t['host_step_cycles']} "
             f"cycles, {stops} program stop{'' if stops == 1 else 's'}; cycles with host steps "
             f"(estimated): {t['cycles_with_host_steps']} = {t['cycles']} simulated + "
             f"{t['host_step_cycles']} estimated"]  # fmt: skip
    functions = [f for f in report.get("functions", []) if "cycles_with_host_steps" in f]
    if len(functions) > 1:
        lines += [f"  {f['function']}: {f['cycles']} simulated + {f['host_step_cycles']} "
                  f"estimated ({f['program_stops']} program "
                  f"stop{'' if f['program_stops'] == 1 else 's'}) = "
                  f"{f['cycles_with_host_steps']}" for f in functions]  # fmt: skip
    ops, launches = t["cpu_ops"], t["launches"]
    lines.append(
        f"whole inference (estimated): {t['whole_inference_cycles']} cycles = "
        f"{t['cycles_with_host_steps']} with host steps + {t['cpu_op_cycles']} for {ops} CPU "
        f"op{'' if ops == 1 else 's'} outside accelerator functions + {t['hop_cycles']} packing "
        f"and unpacking {t['hop_bytes']} bytes + {t['launch_cycles']} for {launches} "
        f"launch{'' if launches == 1 else 'es'}")  # fmt: skip
    return lines


def _tiling_text(t: dict) -> str:
    if "chunk_rows" in t:  # an element-wise layer
        return f"chunks of {t['chunk_rows']} rows"
    if "tile_rows" in t:  # a windowed pool
        return f"tiles of {t['tile_rows']} output rows"
    return (f"{t['tile_h']}x{t['tile_w']}px co{t['tile_co']} ci{t['tile_ci']} {t['loop_order']} "
            f"{t['bias_mode']}")  # fmt: skip


UTILIZATION_LEGEND = (
    "util = GEMM utilization of useful MACs: the model's MACs / (cycles x MACs per cycle); "
    "executed MACs (what qaccel-sim counts) add the padding lanes and the bias and "
    "zero-point GEMMs"
)
"""How the report text defines utilization. One definition everywhere: MACs / (cycles x the
GEMM core's MACs per cycle), always saying which MACs: useful (the model's, `macs`,
`gemm_utilization`), padded (channels padded to blocks, `padded_macs`,
`padded_utilization`) or executed (every MAC the core performs, `executed_macs`,
`executed_utilization`; `qaccel-sim`'s figure)."""


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
    executed = (f" ({t['executed_utilization']:.1%} of executed MACs)"
                if "executed_utilization" in t else "")  # fmt: skip
    lines.append(
        f"total: {t['layers']} accelerator layers, {t['cycles']} cycles = {t['ms']:.3f} ms at "
        f"{t['clock_mhz']:g} MHz, GEMM utilization {t['gemm_utilization']:.1%} of useful "
        f"MACs{executed}, {t['roofline_ratio']:.2f}x the roofline, {t['dram_bytes']} DRAM bytes"
    )
    lines.extend(host_estimate_lines(report))
    if "accelerator_mac_share" in t:
        inside = t.get("host_macs_in_accelerator_functions", 0)
        note = (f" ({inside} MACs of accelerator functions run on the host: GEMM fallbacks "
                "below)") if inside else ""  # fmt: skip
        lines.append(f"MACs on the accelerator: {t['accelerator_mac_share']:.2%} of "
                     f"{t['model_macs']}{note}")  # fmt: skip
    lines.extend(energy_lines(report))
    if rows:
        lines.append(UTILIZATION_LEGEND)
    lines.extend(report["host_fallbacks"])
    return "\n".join(lines)


def _layer_key(row: dict) -> tuple[str, int]:
    return (row["function"], int(row["layer"]))


def _dram(row: dict) -> int:
    return int(row["dram_read_bytes"]) + int(row["dram_write_bytes"])


def diff_reports(a: dict, b: dict) -> dict:
    """Two reports layer by layer: layers are matched by (function, index) and described by
    both sides' descriptions; a layer only one side has is listed with None on the other.
    Each row: cycles, GEMM utilization and DRAM bytes of both, and the cycle ratio b/a."""
    rows_a = {_layer_key(r): r for r in a["layers"]}
    rows_b = {_layer_key(r): r for r in b["layers"]}
    keys = list(rows_a) + [k for k in rows_b if k not in rows_a]
    rows = []
    for key in keys:
        ra, rb = rows_a.get(key), rows_b.get(key)
        row = {"function": key[0], "layer": key[1]}
        for side, r in (("a", ra), ("b", rb)):
            row[f"cycles_{side}"] = None if r is None else int(r["cycles"])
            row[f"util_{side}"] = None if r is None else float(r["gemm_utilization"])
            row[f"dram_{side}"] = None if r is None else _dram(r)
            row[f"description_{side}"] = None if r is None else r["description"]
        if ra is not None and rb is not None:
            row["cycles_ratio"] = rb["cycles"] / max(1, ra["cycles"])
        else:
            row["cycles_ratio"] = None
        rows.append(row)
    ta, tb = a["totals"], b["totals"]
    totals = {}
    for key in ("cycles", "ms", "gemm_utilization", "dram_bytes", "layers", "host_fallback_ops",
                "accelerator_mac_share", "cycles_with_host_steps",
                "whole_inference_cycles"):  # fmt: skip
        totals[key] = (ta.get(key), tb.get(key))
    configs = tuple((r.get("config"), r.get("config_hash")) for r in (a, b))
    return {"configs": configs, "layers": rows, "totals": totals}


def format_diff(diff: dict, names: tuple[str, str] = ("A", "B")) -> str:
    """`diff_reports`'s result as a table: per layer cycles A -> B (ratio), utilization and
    DRAM bytes of both; then the totals."""
    na, nb = names

    def num(v) -> str:
        return "-" if v is None else str(v)

    def pct(v) -> str:
        return "-" if v is None else f"{v:.1%}"

    columns = ("layer", f"cycles {na}", f"cycles {nb}", "ratio", f"util {na}", f"util {nb}",
               f"DRAM B {na}", f"DRAM B {nb}", "description")  # fmt: skip
    table = []
    for r in diff["layers"]:
        desc = r["description_a"] or r["description_b"] or ""
        if r["description_a"] and r["description_b"] and r["description_a"] != r["description_b"]:
            desc = f"{r['description_a']} | {nb}: {r['description_b']}"
        ratio = "-" if r["cycles_ratio"] is None else f"{r['cycles_ratio']:.2f}x"
        table.append((f"{r['function']}/{r['layer']}", num(r["cycles_a"]), num(r["cycles_b"]),
                      ratio, pct(r["util_a"]), pct(r["util_b"]), num(r["dram_a"]),
                      num(r["dram_b"]), desc))  # fmt: skip
    widths = [max(len(c) for c in col) for col in zip(columns, *table)]

    def line(cells) -> str:
        return "  ".join(c.ljust(w) if i in (0, len(columns) - 1) else c.rjust(w)
                         for i, (c, w) in enumerate(zip(cells, widths))).rstrip()  # fmt: skip

    lines = []
    for name, (config, digest) in zip(names, diff["configs"]):
        lines.append(f"{name}: configuration {config or 'unknown'}"
                     f"{f' (content hash {digest})' if digest else ''}")  # fmt: skip
    head = [line(columns)] + [line(row) for row in table]
    rule = "-" * max(len(h) for h in head)
    lines += [head[0], rule, *head[1:], rule]
    t = diff["totals"]
    ca, cb = t["cycles"]
    ratio = f" ({cb / max(1, ca):.2f}x)" if ca is not None and cb is not None else ""
    ms = ["-" if v is None else f"{v:.3f}" for v in t["ms"]]
    lines.append(f"total cycles: {num(ca)} -> {num(cb)}{ratio}; ms: {ms[0]} -> {ms[1]}")
    lines.append(f"GEMM utilization: {pct(t['gemm_utilization'][0])} -> "
                 f"{pct(t['gemm_utilization'][1])}; DRAM bytes: {num(t['dram_bytes'][0])} -> "
                 f"{num(t['dram_bytes'][1])}")  # fmt: skip
    lines.append(f"accelerator layers: {num(t['layers'][0])} -> {num(t['layers'][1])}; host "
                 f"fallbacks: {num(t['host_fallback_ops'][0])} -> "
                 f"{num(t['host_fallback_ops'][1])}; MAC share: "
                 f"{pct(t['accelerator_mac_share'][0])} -> {pct(t['accelerator_mac_share'][1])}")  # fmt: skip
    estimated = [t.get(key, (None, None)) for key in ("cycles_with_host_steps",
                                                      "whole_inference_cycles")]  # fmt: skip
    if any(v is not None for pair in estimated for v in pair):
        parts = []
        for name, (va, vb) in zip(("cycles with host steps", "whole inference"), estimated):
            ratio = f" ({vb / max(1, va):.2f}x)" if va is not None and vb is not None else ""
            parts.append(f"{name}: {num(va)} -> {num(vb)}{ratio}")
        lines.append(f"estimated by the cost model: {'; '.join(parts)}")
    return "\n".join(lines)


__all__ = [
    "alu_report", "build_report", "diff_reports", "energy_lines", "energy_totals", "format_diff",
    "format_report", "function_host_steps", "gemm_report", "host_estimate_lines", "layer_energy",
]
