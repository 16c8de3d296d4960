"""Whole-model compilation for the VTA-like accelerator: artifact, runtime and report.

    compiled = compile_module(module, config)        # module: output of `vta-pipeline`
    write_artifact(compiled, outdir)                   # host.mlir, vta_fn_k/layer_i.*, report.json
    compiled = load_artifact(outdir, ctx)
    outputs = run_compiled(compiled, inputs)           # host on the interpreter, layers simulated

**What runs where.** Each accelerator function (`qaccel.target = "vta"`) is a sequence of
`accel` ops on the packed layout. Every convolution, depthwise convolution or matrix product
with its requantization tail, as `lower-q-to-accel` (+ `canonicalize-accel`) writes it,

    accel.conv2d_zp | accel.dense_zp   (filter a constant; `bias` preloaded or not)
    accel.bias_add_zp*  [accel.shift_left]  accel.round_multiply  [accel.round_rshift]
    [accel.max]  [accel.min]  [accel.add by zp_out]  accel.narrow          (int8 result)
    -- or, for a dense layer requantized in double: the int32 accumulators (bias included),
       the `accel.host_requantize` that follows stays a host op,

becomes one `ConvLayer` (`lowering/vta_schedule.py`), scheduled and emitted as one
`LayerProgram` (`backends/vta/emit.py`) that runs on the simulator. The layer's parameters
come from the accel ops themselves (the IR the artifact keeps), not from the q IR: the
packed layout is taken as it is, so channel counts are whole blocks (padded lanes have zero
weights, zero bias and multiplier 0, exactly as in the accel ops), the `accel` packed tensor
of a layer's input is its DRAM input region byte for byte, and its output region is the
packed result. The fused bias `qbias - zp_in Σw` of `accel.bias_add_zp` becomes the layer's
bias `fused + zp_in Σw` (modulo 2^32) so that the library folds it back to the same value.
A clamp that `canonicalize-accel` removed (proved unable to clip) is the int8 range.

Every other op of an accelerator function (element-wise `accel.add` of two tensors, pools,
means, pads, concatenations, a layer whose tail does not match, a layer the scheduler
refuses) runs on the host interpreter and is listed in the report as a host fallback with
its reason; nothing is dropped silently.

**Artifact** (`write_artifact`): `host.mlir` (the whole module as text: host functions and
accelerator functions, whose fallback ops the runtime interprets), for every accelerator
function `vta_fn_k/layer_i.bin` (16-byte instructions, `qaccel-sim` reads it) and
`vta_fn_k/layer_i.dram.npz` (`dram`: the layer's DRAM image with constants, input and output
regions zero; `uops`: the micro-op image; `qaccel-sim layer_i.bin --dram layer_i.dram.npz`
runs it), `model.tflite` (the source, for `--compare-litert`), `report.json`, and
`manifest.json` (versions, hardware config, every layer's
op indices and DRAM offsets, SHA-256 of every file). No timestamps, sorted keys, npz members
with a fixed date: compiling the same model twice gives identical bytes.
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
from qaccel.backends.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.backends.vta.emit import LayerProgram, emit
from qaccel.dialects import accel, tfl
from qaccel.dialects.types import tensor_dtype
from qaccel.lowering.vta_schedule import (
    ConvLayer,
    LayerError,
    alu_bound_cycles,
    roofline_cycles,
    schedule,
)
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType
from xdsl.interpreter import Interpreter, impl, register_impls
from xdsl.ir import Operation, SSAValue

ARTIFACT_FORMAT = 1
TARGET_ATTR = "qaccel.target"
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


def accelerator_functions(module: ModuleOp) -> list[func.FuncOp]:
    return [
        op for op in module.ops
        if isinstance(op, func.FuncOp) and TARGET_ATTR in op.attributes
    ]  # fmt: skip


# --------------------------------------------------------------------------------------------
# Matching accel op groups to layers


class _NoMatch(Exception):
    """A compute op that does not form an accelerator layer (message: why)."""


def _sole_user(value: SSAValue) -> Operation | None:
    uses = list(value.uses)
    return uses[0].operation if len(uses) == 1 else None


def _scalar(values: np.ndarray, what: str) -> int:
    v = np.asarray(values).reshape(-1)
    if len(v) == 0 or np.any(v != v[0]):
        raise _NoMatch(f"{what} differs between lanes")
    return int(v[0])


def _lanes(values: np.ndarray, lanes: int) -> np.ndarray:
    v = np.asarray(values, np.int64).reshape(-1)
    return np.broadcast_to(v, (lanes,)) if len(v) == 1 else v


@dataclass
class _Match:
    layer: ConvLayer
    ops: list[Operation]  # every op of the group, in order (anchor last)
    input: SSAValue
    output: SSAValue  # the anchor's result: what the layer's DRAM output holds
    widened: SSAValue | None  # int32 value equal to widen(output), used outside the group
    weight_consts: list[Operation]
    offset: int | None = None  # output is int32: the layer's int8 values minus `offset`


def _filter_array(op: Operation) -> tuple[np.ndarray, Operation]:
    owner = op.filter.owner  # type: ignore[attr-defined]
    if not isinstance(owner, tfl.ConstOp):
        raise _NoMatch("the filter is not a constant")
    return np.asarray(owner.as_array()), owner


def _conv_params(op: accel.Conv2DZpOp) -> tuple[str, dict]:
    w, _ = _filter_array(op)
    n, ib, h, wd, _, blk = op.input.type.get_shape()
    if n != 1:
        raise _NoMatch(f"batch {n} (the accelerator runs batch 1 convolutions)")
    ob, ibg, kh, kw = w.shape[:4]
    groups = op.group_count
    kw_args = {
        "input_shape": (1, h, wd, ib * blk),
        "strides": tuple(int(v) for v in op.array_prop("strides")),
        "dilations": tuple(int(v) for v in op.array_prop("dilations")),
        "padding": tuple(int(v) for v in op.array_prop("padding")),
        "input_zero_point": op.pad_value.value.data,
    }
    if groups == 1:
        kw_args["weights"] = (
            w.transpose(0, 4, 2, 3, 1, 5).reshape(ob * blk, kh, kw, ib * blk).astype(np.int8)
        )
        return "conv", kw_args
    if groups == ib == ob and ibg == 1:
        eye = np.eye(blk, dtype=bool)
        if np.any(w[:, 0][..., ~eye]):
            raise _NoMatch("grouped tiles are not diagonal (depth multiplier not block-aligned)")
        diag = w[:, 0][..., eye]  # [ob, kh, kw, blk]
        kw_args["weights"] = diag.transpose(1, 2, 0, 3).reshape(1, kh, kw, ob * blk).astype(np.int8)
        return "depthwise", kw_args
    raise _NoMatch(f"grouped convolution ({groups} groups of channel blocks)")


def _dense_params(op: accel.DenseZpOp) -> tuple[str, dict]:
    w, _ = _filter_array(op)
    shape = op.input.type.get_shape()
    if len(shape) != 4:
        raise _NoMatch(f"dense input of rank {len(shape)} (rows beyond the batch dimension)")
    n, ib, _, blk = shape
    ob = w.shape[0]
    weights = w.transpose(0, 2, 1, 3).reshape(ob * blk, ib * blk).astype(np.int8)
    return "dense", {"input_shape": (n, ib * blk), "weights": weights, "input_zero_point": 0}


def match_layer(op: Operation, name: str) -> _Match:
    """The layer rooted at `op` (an `accel.conv2d_zp` / `accel.dense_zp`) or `_NoMatch`."""
    if isinstance(op, accel.Conv2DZpOp):
        kind, kw = _conv_params(op)
    else:
        kind, kw = _dense_params(op)
    out_shape = op.output.type.get_shape()
    lanes = accel.packed_lanes(out_shape)
    ops: list[Operation] = [op]
    fused = np.zeros(lanes, np.int64)
    if op.bias is not None:
        fused += _lanes(accel.array_values(op.bias), lanes)
    cur: SSAValue = op.output
    nxt = _sole_user(cur)
    while isinstance(nxt, accel.BiasAddZpOp):
        fused += nxt.values.astype(np.int64)
        ops.append(nxt)
        cur, nxt = nxt.output, _sole_user(nxt.output)
    # qbias such that the library's fused bias `qbias - zp_in Σw` is `fused` modulo 2^32.
    w = kw["weights"].astype(np.int64)
    wsum = w.reshape(-1, lanes).sum(axis=0) if kind == "depthwise" else w.reshape(lanes, -1).sum(1)
    qbias = (fused + kw["input_zero_point"] * wsum) & 0xFFFFFFFF
    kw["bias"] = qbias.astype(np.uint32).view(np.int32)
    if kind == "dense" and isinstance(nxt, accel.HostRequantizeOp):
        # LiteRT's FULLY_CONNECTED requantizes in double: the accelerator stores the int32
        # accumulators, `accel.host_requantize` stays a host op (the scale only marks this).
        kw["scale"] = np.ones(1)
        layer = ConvLayer(kind, name=name, **kw)
        return _Match(layer, ops, op.input, cur, None, [_filter_array(op)[1]], None)
    left = right = np.zeros(1, np.int64)
    if isinstance(nxt, accel.ShiftLeftOp):
        left = nxt.values.astype(np.int64)
        ops.append(nxt)
        cur, nxt = nxt.output, _sole_user(nxt.output)
    if not isinstance(nxt, accel.RoundMultiplyOp):
        raise _NoMatch(f"the accumulators go to {nxt.name if nxt else 'several ops'}, "
                       "not a requantization")  # fmt: skip
    multiplier = nxt.values.astype(np.int64)
    ops.append(nxt)
    cur, nxt = nxt.output, _sole_user(nxt.output)
    if isinstance(nxt, accel.RoundRShiftOp):
        right = nxt.values.astype(np.int64)
        ops.append(nxt)
        cur, nxt = nxt.output, _sole_user(nxt.output)
    if np.any((_lanes(left, lanes) > 0) & (_lanes(right, lanes) > 0)):
        raise _NoMatch("a lane shifted both left and right")
    per_channel = max(len(left), len(right), len(multiplier)) > 1
    n = lanes if per_channel else 1
    shift = _lanes(left, n) - _lanes(right, n)
    lo, hi, zp = -(2**31), 2**31 - 1, 0
    widened = None
    for cls in (accel.MaxOp, accel.MinOp, accel.AddOp):
        if isinstance(nxt, cls) and nxt.rhs is None:
            v = _scalar(nxt.values, f"{nxt.name}'s value")
            if cls is accel.MaxOp:
                lo = v
            elif cls is accel.MinOp:
                hi = v
            else:
                zp = v
            ops.append(nxt)
            cur, nxt = nxt.output, _sole_user(nxt.output)
            if nxt is None:
                # Also read elsewhere (a residual add): as int32 it is the widened int8 result.
                narrows = [u.operation for u in cur.uses if isinstance(u.operation, accel.NarrowOp)]
                nxt, widened = (narrows[0], cur) if len(narrows) == 1 else (None, None)
                break
    offset = None
    if isinstance(nxt, accel.NarrowOp) and tensor_dtype(nxt.output.type) == np.int8:
        # A clamp that canonicalization removed could not clip: the int8 range is as good.
        act_min = lo + zp if lo > -(2**31) else -128
        act_max = hi + zp if hi < 2**31 - 1 else 127
        ops.append(nxt)
        output = nxt.output
    else:
        # An int32 consumer (an element-wise op fused after the requantization, e.g. a
        # residual add): when the clamp spans at most 256 values, the layer stores them as
        # int8 shifted by `offset` and the host adds it back (exact).
        if lo == -(2**31) or hi == 2**31 - 1 or hi - lo > 255:
            raise _NoMatch("the requantized value is not narrowed to int8 and its clamp spans "
                           "more than 256 values")  # fmt: skip
        offset = -128 - (lo + zp)
        zp, act_min, act_max = zp + offset, -128, hi + zp + offset
        output, widened = cur, None
    if not -128 <= act_min <= act_max <= 127:
        raise _NoMatch(f"clamp [{act_min}, {act_max}] is not within int8")
    kw.update(multiplier=_lanes(multiplier, n).astype(np.int32), shift=shift.astype(np.int32),
              output_zero_point=zp, act_min=act_min, act_max=act_max)  # fmt: skip
    layer = ConvLayer(kind, name=name, **kw)
    return _Match(layer, ops, op.input, output, widened, [_filter_array(op)[1]], offset)


# --------------------------------------------------------------------------------------------
# The compiled model


@dataclass
class CompiledLayer:
    function: str
    index: int
    ops: list[int]  # body positions of the group's ops (skipped by the runtime)
    anchor: int  # body position of the op whose result the layer produces
    input: list[int]  # value reference (see `_value_ref`)
    widened: int | None  # body position of the int32 value equal to widen(output), if used
    offset: int | None  # the anchor is int32 = the stored int8 values - offset (None: as stored)
    program: LayerProgram | None  # None after `load_artifact` (then the fields below)
    description: str = ""
    report: dict = field(default_factory=dict)
    words: np.ndarray | None = None
    uops: np.ndarray | None = None
    constants: np.ndarray | None = None
    dram: dict = field(default_factory=dict)  # size, input/output offset and nbytes

    def run(self, x: np.ndarray, config: HardwareConfig, out_type: TensorType) -> np.ndarray:
        """The packed input tensor in, the packed output tensor out, on the simulator."""
        from qaccel.backends.vta.simulator import simulate

        d = self.dram
        data = np.ascontiguousarray(x).reshape(-1).view(np.uint8)
        if data.size != d["input_nbytes"]:
            raise CompileError(f"{self.function} layer {self.index}: input of {data.size} bytes, "
                               f"the program expects {d['input_nbytes']}")  # fmt: skip
        image = np.zeros(d["size"], np.uint8)
        image[: len(self.constants)] = self.constants
        image[d["input_offset"] : d["input_offset"] + data.size] = data
        result = simulate(self.words, self.uops, image, config)
        if any(result.leftover_tokens.values()):
            raise CompileError(f"{self.function} layer {self.index}: tokens left over "
                               f"{result.leftover_tokens}")  # fmt: skip
        o = d["output_offset"]
        raw = result.dram[o : o + d["output_nbytes"]]
        if self.offset is None:
            return raw.view(tensor_dtype(out_type)).reshape(out_type.get_shape()).copy()
        y = raw.view(np.int8).astype(np.int32) - np.int32(self.offset)
        return y.reshape(out_type.get_shape())


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
    layers: dict[str, list[CompiledLayer]]  # accelerator function -> its layers
    fallbacks: list[Fallback]
    report: dict


_NO_CODEGEN = "no VTA code generator yet"


def compile_module(
    module: ModuleOp,
    config: HardwareConfig | None = None,
    *,
    total_macs: int | None = None,
    progress: Callable[[str], None] | None = None,
) -> CompiledModel:
    """Schedule and emit every accelerator layer of `module` (the output of `vta-pipeline`).
    `total_macs` (the model's MACs, e.g. of the imported IR) gives the report's MAC share."""
    from qaccel.backends.vta.simulator import timing

    c = config or DEFAULT_CONFIG
    layers: dict[str, list[CompiledLayer]] = {}
    fallbacks: list[Fallback] = []
    functions = accelerator_functions(module)
    roots = [(f, op) for f in functions for op in f.body.block.ops
             if isinstance(op, accel.Conv2DZpOp | accel.DenseZpOp)]  # fmt: skip
    done = 0
    for f in functions:
        name = f.sym_name.data
        ops = list(f.body.block.ops)
        index_of = {op: i for i, op in enumerate(ops)}
        covered: set[Operation] = set()
        out: list[CompiledLayer] = []
        reasons: dict[Operation, str] = {}
        for op in ops:
            if not isinstance(op, accel.Conv2DZpOp | accel.DenseZpOp):
                continue
            done += 1
            label = f"{name} layer {len(out)}"
            try:
                m = match_layer(op, f"{name}_layer{len(out)}")
                if progress:
                    progress(f"[{done}/{len(roots)}] {label}: {m.layer.describe()}")
                sched = schedule(m.layer, c)
                prog = emit(m.layer, sched, c)
            except (_NoMatch, LayerError) as e:
                reasons[op] = str(e)
                continue
            t = timing(prog.program, c)
            g = m.layer.geometry
            cycles = int(t.total_cycles)
            roof = roofline_cycles(g, c)
            report = {
                "function": name, "layer": len(out), "kind": g.kind,
                "description": m.layer.describe(), "cycles": cycles,
                "ms": cycles / (c.clock_mhz * 1e3),
                "gemm_utilization": g.useful_macs / max(1, cycles * c.macs_per_cycle),
                "macs": int(g.useful_macs), "roofline_cycles": int(roof),
                "roofline_ratio": cycles / max(1, roof),
                "alu_bound_cycles": int(alu_bound_cycles(g, c)),
                "dram_read_bytes": int(sum(t.dram_read_bytes.values())),
                "dram_write_bytes": int(sum(t.dram_write_bytes.values())),
                "instructions": len(prog.program), "uop_loads": prog.uop_loads,
                "dram_image_bytes": prog.dram_size, "tiling": sched.tiling(),
                "host_requantize": bool(g.int32_output),
            }  # fmt: skip
            out.append(CompiledLayer(
                function=name, index=len(out), ops=sorted(index_of[o] for o in m.ops),
                anchor=index_of[m.output.owner], input=_value_ref(m.input, index_of),
                widened=None if m.widened is None else index_of[m.widened.owner],
                offset=m.offset, program=prog, description=m.layer.describe(), report=report,
                words=prog.program.words, uops=prog.program.uops, constants=prog.constants,
                dram={"size": prog.dram_size, "input_offset": prog.input_offset,
                      "input_nbytes": prog.input_nbytes, "output_offset": prog.output_offset,
                      "output_nbytes": prog.output_nbytes},
            ))  # fmt: skip
            covered.update(m.ops)
        layers[name] = out
        for i, op in enumerate(ops):
            if op in covered or isinstance(op, func.ReturnOp | tfl.ConstOp):
                continue
            reason = reasons.get(op, _NO_CODEGEN)
            if isinstance(op, accel.HostRequantizeOp):
                reason = "a host op by design (LiteRT's double-precision requantization)"
            fallbacks.append(Fallback(name, op.name, i, reason))
    compiled = CompiledModel(module, c, layers, fallbacks, {})
    compiled.report = build_report(compiled, total_macs)
    return compiled


def _host_macs(module: ModuleOp) -> int:
    from qaccel.passes.analysis import op_macs

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
    return {
        "config": c.name, "layers": rows, "totals": totals,
        "host_fallbacks": [fb.line() for fb in compiled.fallbacks],
    }  # fmt: skip


def format_report(report: dict) -> str:
    """The report as a table (one line per accelerator layer) and totals."""
    head = (f"{'layer':<18} {'description':<46} {'cycles':>10} {'util':>6} {'roofline':>10} "
            f"{'ratio':>6} {'DRAM B':>10}  tiling")  # fmt: skip
    lines = [head, "-" * len(head)]
    for r in report["layers"]:
        t = r["tiling"]
        tiling = (f"{t['tile_h']}x{t['tile_w']}px co{t['tile_co']} ci{t['tile_ci']} "
                  f"{t['loop_order']} {t['bias_mode']}")  # fmt: skip
        lines.append(
            f"{r['function'] + '/' + str(r['layer']):<18} {r['description'][:46]:<46} "
            f"{r['cycles']:>10} {r['gemm_utilization']:>6.1%} {r['roofline_cycles']:>10} "
            f"{r['roofline_ratio']:>6.2f} {r['dram_read_bytes'] + r['dram_write_bytes']:>10}  "
            f"{tiling}"
        )
    t = report["totals"]
    lines.append("-" * len(head))
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
    for name, layers in compiled.layers.items():
        entries = []
        for lay in layers:
            base = f"{name}/layer_{lay.index}"
            image = np.zeros(lay.dram["size"], np.uint8)
            image[: len(lay.constants)] = lay.constants
            files[f"{base}.bin"] = np.asarray(lay.words).astype("<u8").tobytes()
            files[f"{base}.dram.npz"] = _npz_bytes(
                {"dram": image, "uops": np.asarray(lay.uops, np.uint32),
                 "constants_nbytes": np.array(len(lay.constants), np.int64)}
            )  # fmt: skip
            entries.append({
                "index": lay.index, "ops": lay.ops, "anchor": lay.anchor, "input": lay.input,
                "widened": lay.widened, "offset": lay.offset, "dram": lay.dram, "description": lay.description,
                "program": f"{base}.bin", "image": f"{base}.dram.npz",
            })  # fmt: skip
        functions[name] = entries
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
    from qaccel.passes.pipeline import qaccel_context
    from xdsl.parser import Parser

    root = Path(outdir)
    try:
        manifest = json.loads((root / "manifest.json").read_text())
    except (OSError, ValueError) as e:
        raise CompileError(f"'{root}': not a qaccel-compile artifact ({e})") from None
    if manifest.get("format") != ARTIFACT_FORMAT:
        raise CompileError(f"'{root}': artifact format {manifest.get('format')}, "
                           f"expected {ARTIFACT_FORMAT}")  # fmt: skip
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
    layers = {}
    for name, entries in manifest["functions"].items():
        out = []
        for e in entries:
            with np.load(io.BytesIO(data[e["image"]])) as z:
                n = int(z["constants_nbytes"])
                constants, uops = z["dram"][:n].copy(), z["uops"].copy()
            words = np.frombuffer(data[e["program"]], "<u8").reshape(-1, 2)
            out.append(CompiledLayer(
                function=name, index=e["index"], ops=e["ops"], anchor=e["anchor"],
                input=e["input"], widened=e["widened"], offset=e["offset"], program=None,
                description=e["description"], words=words, uops=uops, constants=constants,
                dram=e["dram"],
            ))  # fmt: skip
        layers[name] = out
    fallbacks = [Fallback(**fb) for fb in manifest["fallbacks"]]
    report = json.loads(data["report.json"])
    return CompiledModel(module, config, layers, fallbacks, report)


# --------------------------------------------------------------------------------------------
# Runtime


def _make_call_impl():
    from qaccel.backends.cpu.accel_semantics import AccelFunctions

    @register_impls
    class VtaCalls(AccelFunctions):
        """`func.call` of a compiled accelerator function: its layers on the simulator, every
        other op of its body on the interpreter (the fallbacks); other calls as usual."""

        def __init__(self, compiled: CompiledModel):
            super().__init__()
            self.compiled = compiled
            self.plans: dict[str, tuple] = {}
            self.layer_runs = 0

        def _plan(self, name: str, interpreter: Interpreter):
            plan = self.plans.get(name)
            if plan is None:
                f = interpreter.get_op_for_symbol(name)
                ops = list(f.body.block.ops)
                by_anchor, skip = {}, set()
                for lay in self.compiled.layers.get(name, []):
                    by_anchor[lay.anchor] = lay
                    skip.update(lay.ops)
                skipped = {ops[i] for i in skip}
                for i, o in enumerate(ops):  # weights only the accelerator layers read
                    uses = [u.operation for r in o.results for u in r.uses]
                    if isinstance(o, tfl.ConstOp) and uses and all(u in skipped for u in uses):
                        skip.add(i)
                plan = self.plans[name] = (f, ops, by_anchor, skip)
            return plan

        @impl(func.CallOp)
        def run_call(self, interpreter: Interpreter, op: func.CallOp, args: tuple[Any, ...]):
            name = op.callee.string_value()
            if name not in self.compiled.layers:
                return super().run_call(interpreter, op, args)
            f, ops, by_anchor, skip = self._plan(name, interpreter)
            env: dict[SSAValue, Any] = dict(zip(f.body.block.args, args))
            for i, o in enumerate(ops):
                if isinstance(o, func.ReturnOp):
                    return tuple(env[v] for v in o.operands)
                lay = by_anchor.get(i)
                if lay is not None:
                    x = env[_resolve(lay.input, ops, f)]
                    y = lay.run(x, self.compiled.config, o.results[0].type)
                    env[o.results[0]] = y
                    if lay.widened is not None:
                        env[ops[lay.widened].results[0]] = y.astype(np.int32)
                    self.layer_runs += 1
                    continue
                if i in skip:
                    continue
                results = interpreter.run_op(o, tuple(env[v] for v in o.operands))
                env.update(zip(o.results, results))
            raise CompileError(f"@{name} has no func.return")

    return VtaCalls


def run_compiled(
    compiled: CompiledModel, inputs: Sequence[np.ndarray], listener=None
) -> list[np.ndarray]:
    """Run the host program with the interpreter and each compiled accelerator layer on the
    simulator (bit-exact with the interpreter's own semantics of the accel ops)."""
    from qaccel.backends.cpu.interpreter import (
        check_inputs,
        entry_function,
        make_interpreter,
        prepare_module,
    )

    function = entry_function(compiled.module)
    args = check_inputs(function, inputs)
    prepare_module(compiled.module)
    interpreter = make_interpreter(compiled.module, [listener] if listener else [])
    interpreter.register_implementations(_make_call_impl()(compiled), override=True)
    return [np.asarray(r) for r in interpreter.call_op(function, tuple(args))]


__all__ = [
    "CompileError", "CompiledLayer", "CompiledModel", "Fallback", "accelerator_functions",
    "build_report", "compile_module", "format_report", "is_artifact", "load_artifact",
    "match_layer", "run_compiled", "write_artifact",
]  # fmt: skip
