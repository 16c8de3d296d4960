"""Host steps inside the corpus's accelerator programs, both bundled configurations: per model,
the host fallbacks of the report, the accelerator's cycles and DRAM bytes, and what the host
steps cost by the partition cost model's rates (`targets/vta/host_cost.py`'s `HOST_NS`:
element-wise work per element and op, table lookups, copies, gathers, pools per tap, a
softmax, host matrix products; plus one program stop per run of host steps between two
layers), so that work moved between the host and the ALU is compared on one scale:

    python benchmarks/bench_host_steps.py [--models a,b] [--configs ...] [--kinds]

The host-step figures are the compile report's (`host_step_cycles`, `program_stops`,
`cycles_with_host_steps`: `targets/vta/host_cost.py`'s `program_host_steps` and `host_op_ns`,
summed per accelerator function by `backends/vta/report.py`); "sum" is the report's cycles
with host steps. `--kinds` also lists every host-step op kind with its count and reason (the
census the ALU work starts from). The host figures are the cost model's estimate, not a
measurement.
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
CONFIGS = ("vta-default", "vta-store-requant")


def host_steps(compiled) -> tuple[int, int]:
    """(the host steps' estimated cycles, the program stops) of a compiled model: its report's
    (every op of an accelerator function that no emitted layer holds is a host step; a run of
    them between two layers stops the program once)."""
    t = compiled.report["totals"]
    return t["host_step_cycles"], t["program_stops"]


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
                  f"{t['dram_bytes']} | {host} | {stops} | {t['cycles_with_host_steps']} |",
                  flush=True)  # fmt: skip
            if config == CONFIGS[0]:
                kinds.update((fb.op, fb.reason) for fb in compiled.fallbacks)
    if args.kinds:
        print("\n| count | op | reason |\n| ---: | --- | --- |")
        for (op, reason), n in kinds.most_common():
            print(f"| {n} | `{op}` | {reason} |")


if __name__ == "__main__":
    main()
