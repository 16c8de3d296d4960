"""The converter-made corpus (`tests/fixtures/corpus/`) compiled for both bundled configurations:
one row per model with its operators, accelerator partitions, accelerator MAC share (of the
model's MACs; GEMMs left on the host are host work), host fallbacks, cycles and DRAM bytes, and
the LiteRT models: how many accelerator functions became spliced partitions of the original
model (the rest stay CPU operators there, the first reason given); last, the report's cycles
with host steps: the simulated accelerator cycles plus the host steps of its programs and
their program stops, the partition cost model's estimate (`targets/vta/host_cost.py`; the
scale `bench_host_steps.py` compares on). The table the accelerator-coverage work is measured
by.

    python benchmarks/bench_corpus.py [--models a,b] [--configs vta-default,...]
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
CONFIGS = ("vta-default", "vta-store-requant")


def histogram(path: Path) -> str:
    from qaccel.frontend.tflite_writer import read_model

    spec = read_model(path.read_bytes())
    ops = Counter(op.op for op in spec.subgraphs[0].operators)
    return ", ".join(f"{k} x{v}" if v > 1 else k for k, v in sorted(ops.items()))


def row(path: Path, config: str) -> dict:
    from qaccel import api
    from qaccel.backends.litert.partitions import compile_partitions, splice

    start = time.perf_counter()
    try:
        compiled = api.compile(path, config)
    except Exception as e:  # noqa: BLE001  a refusal is a row
        return {"status": f"refused: {str(e).splitlines()[0][:90]}"}
    t = compiled.report["totals"]
    source = path.read_bytes()
    try:
        done, lines = compile_partitions(source, compiled, api.partition_compiler(config))
        for flavour in ("dispatch", "custom-op"):
            splice(source, done, flavour)
        litert = f"yes: {len(done)} of {len(compiled.functions)} spliced"
        litert += f" ({lines[0][:70]})" if lines else ""
    except Exception as e:  # noqa: BLE001  a failure is a row
        litert = f"no ({str(e).splitlines()[0][:60]})"
    return {
        "status": "ok", "partitions": len(compiled.functions),
        "share": t.get("accelerator_mac_share"), "fallbacks": len(compiled.fallbacks),
        "cycles": t["cycles"], "dram": t["dram_bytes"], "litert": litert,
        "with_host": t["cycles_with_host_steps"],
        "seconds": time.perf_counter() - start,
    }  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None, help="comma-separated names (default: all)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated names")
    args = ap.parse_args()
    paths = sorted(CORPUS.glob("*.tflite"))
    if args.models:
        wanted = set(args.models.split(","))
        paths = [p for p in paths if p.stem in wanted]
    print("| model | operators | config | partitions | accel MAC share | host fallbacks | "
          "cycles | DRAM bytes | LiteRT models | cycles with host steps (est.) |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: |")
    for path in paths:
        ops = histogram(path)
        for config in args.configs.split(","):
            r = row(path, config)
            if r["status"] != "ok":
                print(f"| {path.stem} | {ops} | {config} | {r['status']} | | | | | | |")
                continue
            share = "-" if r["share"] is None else f"{r['share']:.1%}"
            print(f"| {path.stem} | {ops} | {config} | {r['partitions']} | {share} | "
                  f"{r['fallbacks']} | {r['cycles']} | {r['dram']} | {r['litert']} | "
                  f"{r['with_host']} |",
                  flush=True)  # fmt: skip
            ops = '"'


if __name__ == "__main__":
    main()
