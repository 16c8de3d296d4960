"""What the `vta` target's decisions cost or gain, per model: the measurements behind
`qaccel.targets.vta.target.vta_target`'s docstring.

    python benchmarks/bench_partition.py [MODEL.tflite ...]

Default: every fixture, and ResNet-50 when `tests/fixtures/generated/` has it.

For the built-in `vta` target and for variants that drop one decision, it prints per model:
ops selected, % of MACs on the accelerator, partitions, bytes crossing CPU/accelerator borders
(each a host pack or unpack plus a DMA transfer), GEMM cycles of the accelerated layers
(VTA's schedule: one 1x16x16 block per cycle, channels padded to 16), the lane utilization
(useful MACs / MACs the padded blocks compute) and an estimate of the ALU cycles (one
accumulator row every 2 cycles; instructions per row in `_ALU_PER_ROW`). Variants:

  vta          the built-in target;
  tvm-channels convolutions need input channels divisible by 16 (TVM's VTA rule);
  no-depthwise depthwise convolutions stay on the CPU;
  gemm-only    only conv2d / depthwise / dense groups (no element-wise, pool, pad, concat...).

Also prints, for the small-channel and depthwise layers, their share of the model's MACs and
their utilization.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import io
import math
import sys
from pathlib import Path

from qaccel.dialects.macs import op_macs
from qaccel.frontend.tflite_import import import_tflite
from qaccel.pipeline.manager import build_pipeline, qaccel_context
from qaccel.targets.base import (
    Target,
    check,
    register_target,
    shape_of,
    tensor_bytes,
)
from qaccel.targets.vta.target import vta_target
from xdsl.dialects import func

ROOT = Path(__file__).resolve().parent.parent
BLOCK = 16


def gemm_cycles(op) -> tuple[int, int]:
    """(cycles, padded MACs) of one accumulating q op on VTA's 1x16x16 core (grouped
    convolutions: a lower bound, each output block reading only its own groups' inputs)."""
    if op.name not in ("q.dense", "q.conv2d", "q.depthwise_conv2d"):
        return 0, 0
    out = shape_of(op.results[0])
    flt = shape_of(op.operands[1])
    if op.name == "q.dense":
        rows = math.prod(out[:-1])
        blocks = rows * math.ceil(out[-1] / BLOCK) * math.ceil(flt[1] / BLOCK)
    elif op.name == "q.conv2d":
        n, oh, ow, oc = out
        _, kh, kw, ic = flt  # ic: input channels per group
        blocks = n * oh * ow * kh * kw * math.ceil(oc / BLOCK) * math.ceil(ic / BLOCK)
    else:
        n, oh, ow, c = out
        _, kh, kw, _ = flt
        blocks = n * oh * ow * kh * kw * math.ceil(c / BLOCK)  # block-diagonal tiles
    return blocks, blocks * BLOCK * BLOCK


# ALU instructions per 16-lane accumulator row (each one row per `alu_cycles_per_uop`):
# the requantize sequence is RDMUL, RSHR, ADD (zero point), MAX, MIN; an int8 ADD rescales both
# inputs (ADD zp, SHR left, RDMUL, RSHR each), adds, then requantizes.
_ALU_PER_ROW = {
    "q.bias_add": 1, "q.requantize": 5, "q.relu": 2, "q.add": 14, "q.sub": 15, "q.mul": 10,
    "q.max_pool2d": 0, "q.avg_pool2d": 1, "q.mean": 6,
}  # fmt: skip


def alu_cycles(op, cycles_per_row: int = 2) -> int:
    """Cycles the ALU spends on `op` (pools and mean: one op per window tap or input row)."""
    if op.name not in _ALU_PER_ROW:
        return 0
    out = shape_of(op.results[0])
    rows = math.prod(out[:-1]) * math.ceil(out[-1] / BLOCK) if out else 1
    per_row = _ALU_PER_ROW[op.name]
    if op.name in ("q.max_pool2d", "q.avg_pool2d"):
        per_row += math.prod(int(v) for v in op.array_prop("filter"))
    if op.name == "q.mean":
        inp = shape_of(op.operands[0])
        rows_in = math.prod(inp[:-1]) * math.ceil(inp[-1] / BLOCK)
        return cycles_per_row * (rows_in + rows * per_row)
    return cycles_per_row * rows * per_row


@check("tvm-channels")
def _tvm_channels(m):
    ic = shape_of(m.ops[0].operands[0])[-1]
    return None if ic % BLOCK == 0 else f"input channels {ic} not divisible by {BLOCK}"


def variants() -> dict[str, Target]:
    base = vta_target()
    by_name = {p.name: p for p in base.patterns}
    tvm = tuple(
        dataclasses.replace(p, checks=(*p.checks, _tvm_channels)) if p.name == "conv2d" else p
        for p in base.patterns
    )
    return {
        "vta": base,
        "tvm-channels": dataclasses.replace(base, name="tvm-channels", patterns=tvm),
        "no-depthwise": dataclasses.replace(
            base,
            name="no-depthwise",
            patterns=tuple(p for p in base.patterns if p.name != "depthwise_conv2d"),
        ),
        "gemm-only": dataclasses.replace(
            base,
            name="gemm-only",
            patterns=tuple(by_name[n] for n in ("conv2d", "depthwise_conv2d", "dense")),
        ),
    }


def measure(path: Path, target: Target) -> dict:
    module = import_tflite(path.read_bytes(), str(path))
    build_pipeline("fuse-composites,legalize-tfl-to-q").apply(qaccel_context(), module)
    total_macs = sum(op_macs(op) for op in module.walk())
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        spec = (f"annotate-target{{target={target.name}}},"
                f"partition-graph{{target={target.name} report=true}}")
        build_pipeline(spec).apply(qaccel_context(), module)
    report = err.getvalue().splitlines()[0].split(": ", 1)[1]
    functions = {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, func.FuncOp) and "qaccel.target" in op.attributes
    }
    border = cycles = padded = useful = alu = 0
    for op in module.walk():
        if isinstance(op, func.CallOp) and op.callee.root_reference.data in functions:
            border += sum(tensor_bytes(v) for v in (*op.operands, *op.results))
    for f in functions.values():
        for op in f.body.block.ops:
            c, p = gemm_cycles(op)
            alu += alu_cycles(op)
            cycles += c
            padded += p
            useful += op_macs(op)
    return {
        "report": report,
        "border_kib": border / 1024,
        "gemm_cycles": cycles,
        "alu_cycles": alu,
        "utilization": useful / padded if padded else 0.0,
        "total_macs": total_macs,
    }


def layer_shares(path: Path) -> list[str]:
    module = import_tflite(path.read_bytes(), str(path))
    build_pipeline("fuse-composites,legalize-tfl-to-q").apply(qaccel_context(), module)
    total = sum(op_macs(op) for op in module.walk())
    small = [
        op for op in module.walk() if op.name == "q.conv2d" and shape_of(op.operands[0])[-1] % BLOCK
    ]
    dw = [op for op in module.walk() if op.name == "q.depthwise_conv2d"]
    lines = []
    named = (("convs with input channels not a multiple of 16", small), ("depthwise convs", dw))
    for what, ops in named:
        if not ops:
            continue
        macs = sum(op_macs(op) for op in ops)
        c = sum(gemm_cycles(op)[0] for op in ops)
        p = sum(gemm_cycles(op)[1] for op in ops)
        lines.append(
            f"    {what}: {len(ops)}, {100 * macs / total:.1f}% of MACs, {c} GEMM cycles, "
            f"lane utilization {100 * macs / p:.1f}% ({macs / c:.1f} useful MACs/cycle)"
        )
    return lines


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    args = ap.parse_args(argv)
    models = args.models or sorted((ROOT / "tests/fixtures/models").glob("*.tflite"))
    generated = ROOT / "tests/fixtures/generated/resnet50.tflite"
    if not args.models and generated.exists():
        models.append(generated)
    targets = variants()
    for name, target in targets.items():
        if name != "vta":
            register_target(name, target)
    for path in models:
        print(f"{path.stem}")
        for name, target in targets.items():
            r = measure(path, target)
            print(
                f"  {name:13s} {r['report']}; borders {r['border_kib']:.1f} KiB; "
                f"GEMM {r['gemm_cycles']} cycles, lanes {100 * r['utilization']:.1f}% used, "
                f"ALU {r['alu_cycles']} cycles"
            )
        for line in layer_shares(path):
            print(line)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
