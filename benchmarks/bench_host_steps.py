"""Host steps inside the corpus's accelerator programs, both bundled configurations: per model,
the host fallbacks of the report, the accelerator's cycles and DRAM bytes, and what the host
steps cost by the partition cost model's rates (`targets/vta/host_cost.py`'s `HOST_NS`:
element-wise work per element and op, table lookups, copies, gathers, pools per tap, a
softmax, host matrix products; plus one program stop per run of host steps between two
layers), so that work moved between the host and the ALU is compared on one scale:

    python benchmarks/bench_host_steps.py [--models a,b] [--configs ...] [--kinds]

`--kinds` also lists every host-step op kind with its count and reason (the census the ALU
work starts from). The host figures are the cost model's estimate, not a measurement.
"""

from __future__ import annotations

import argparse
import math
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
CONFIGS = ("vta-default", "vta-store-requant")


def _elements(v) -> int:
    return math.prod(v.type.get_shape())


def host_ns(op) -> float:
    """The cost model's nanoseconds for one host op of a program."""
    from qaccel.dialects import accel
    from qaccel.targets.vta.host_cost import HOST_NS

    alu = (accel.AddOp, accel.MulOp, accel.MinOp, accel.MaxOp, accel.ShiftLeftOp,
           accel.RoundMultiplyOp, accel.RoundRShiftOp, accel.BiasAddZpOp, accel.WidenOp,
           accel.NarrowOp)  # fmt: skip
    if not op.results or not hasattr(op.results[0].type, "get_shape"):
        return 0.0
    n = _elements(op.results[0])
    if isinstance(op, alu):
        return n * HOST_NS["tap"]
    if isinstance(op, accel.MaxPool2DOp | accel.SumPool2DOp):
        return n * math.prod(int(v) for v in op.array_prop("window")) * HOST_NS["tap"]
    if isinstance(op, accel.HostPool2DOp):
        return n * math.prod(int(v) for v in op.array_prop("window")) * HOST_NS["tap"]
    if isinstance(op, accel.ReduceSumOp | accel.LaneSumOp):
        return _elements(op.operands[0]) * HOST_NS["tap"]
    if isinstance(op, accel.LutOp):
        return n * HOST_NS["lookup"]
    if isinstance(op, accel.SoftmaxOp):
        return n * HOST_NS["softmax"]
    if isinstance(op, accel.BatchMatmulOp):
        return n * op.operands[0].type.get_shape()[-1] * HOST_NS["mac"]
    if isinstance(op, accel.ConcatOp | accel.ConcatLanesOp | accel.CropOp | accel.ReshapeOp
                  | accel.PadOp):  # fmt: skip
        return n * HOST_NS["copy"]
    return n * HOST_NS["gather"]


def host_steps(compiled) -> tuple[int, int]:
    """(the host steps' cycles, the program stops): every op of an accelerator function that
    no emitted layer holds is a host step; a run of them between two layers stops the
    program once."""
    from qaccel.dialects import tfl, vta
    from qaccel.targets.vta.host_cost import HOST_NS
    from xdsl.dialects import func

    ns, stops = 0.0, 0
    for f in compiled.module.ops:
        if not isinstance(f, func.FuncOp) or f.sym_name.data not in compiled.functions:
            continue
        ops = list(f.body.block.ops)
        fn = compiled.functions[f.sym_name.data]
        on_accel = {ops[i] for lay in fn.layers for i in lay.ops}
        seen_layer = pending = False
        for op in ops:
            if isinstance(op, func.ReturnOp | tfl.ConstOp):
                continue
            if op in on_accel:
                stops += pending and seen_layer
                pending, seen_layer = False, True
                continue
            inner = list(op.walk()) if op.regions else [op]
            ns += sum(host_ns(o) for o in inner if not isinstance(o, vta.YieldOp | tfl.ConstOp))
            pending = True
    mhz = compiled.config.clock_mhz
    return int(math.ceil((ns + stops * HOST_NS["sync"]) * mhz / 1000)), stops


def main() -> None:
    from qaccel import api

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None, help="comma-separated names (default: all)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated names")
    ap.add_argument("--kinds", action="store_true", help="list host-step op kinds and reasons")
    args = ap.parse_args()
    paths = sorted(p for p in CORPUS.glob("*.tflite") if p.stem != "int16x8")
    if args.models:
        wanted = set(args.models.split(","))
        paths = [p for p in paths if p.stem in wanted]
    kinds: Counter = Counter()
    print("| model | config | host fallbacks | accelerator cycles | DRAM bytes | host-step "
          "cycles (est.) | program stops | sum |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |")
    for path in paths:
        for config in args.configs.split(","):
            compiled = api.compile(path, config)
            t = compiled.report["totals"]
            host, stops = host_steps(compiled)
            print(f"| {path.stem} | {config} | {len(compiled.fallbacks)} | {t['cycles']} | "
                  f"{t['dram_bytes']} | {host} | {stops} | {t['cycles'] + host} |", flush=True)
            if config == CONFIGS[0]:
                kinds.update((fb.op, fb.reason) for fb in compiled.fallbacks)
    if args.kinds:
        print("\n| count | op | reason |\n| ---: | --- | --- |")
        for (op, reason), n in kinds.most_common():
            print(f"| {n} | `{op}` | {reason} |")


if __name__ == "__main__":
    main()
