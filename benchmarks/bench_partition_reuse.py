"""Partition programs taken from the whole-model compile against compiling each partition again:
the same partitions and bit-identical programs, and what each way costs.

    python benchmarks/bench_partition_reuse.py [--configs vta-default,...] [MODEL.tflite ...]

Default: every fixture model and every corpus model (tests/fixtures/models, tests/fixtures/corpus)
for the default configuration. For each model, one whole-model compile (`api.compile`), then
`compile_partitions` both ways on that compile: `recompile=False` (each partition's program is
its accelerator function's in the whole-model compile when that compile proves it; else the
partition is compiled again) and `recompile=True` (every partition extracted and compiled
again, the check that cannot be wrong). One row per model: partitions, how many programs were
taken from the whole-model compile, the seconds of each way, and whether both ways agree (same
partitions, same tensors, bit-identical programs, same lines); a difference is named. Exit
status 1 when any model differs.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = ROOT / "tests" / "fixtures" / "models"
CORPUS = ROOT / "tests" / "fixtures" / "corpus"


def compare(source: bytes, config: str | None) -> dict:
    from qaccel import api
    from qaccel.backends.litert.partitions import compile_partitions

    compiler = api.partition_compiler(config)
    start = time.perf_counter()
    try:
        compiled = compiler(source)
    except Exception as e:  # noqa: BLE001  a refusal is a row
        return {"status": f"refused: {str(e).splitlines()[0][:80]}"}
    whole = time.perf_counter() - start
    start = time.perf_counter()
    fast, fast_lines = compile_partitions(source, compiled, compiler, recompile=False)
    reuse_s = time.perf_counter() - start
    start = time.perf_counter()
    slow, slow_lines = compile_partitions(source, compiled, compiler, recompile=True)
    recompile_s = time.perf_counter() - start
    diffs = []
    if [p.partition for p in fast] != [p.partition for p in slow]:
        diffs.append("partitions differ")
    for a, b in zip(fast, slow):
        if (a.inputs, a.outputs) != (b.inputs, b.outputs):
            diffs.append(f"{a.partition.name}: tensor order differs")
        elif a.program != b.program:
            diffs.append(f"{a.partition.name}: programs differ ({len(a.program)} B, "
                         f"{len(b.program)} B)")  # fmt: skip
    if fast_lines != slow_lines:
        diffs.append(f"lines differ: {fast_lines} / {slow_lines}")
    return {"status": "ok", "partitions": len(fast), "reused": sum(p.reused for p in fast),
            "whole": whole, "reuse": reuse_s, "recompile": recompile_s,
            "same": not diffs, "diffs": diffs}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--configs", default="vta-default", help="comma-separated names")
    args = ap.parse_args()
    paths = args.models or sorted([*MODELS.glob("*.tflite"), *CORPUS.glob("*.tflite")])
    print("| model | config | partitions | reused | whole compile s | reuse s | recompile s | "
          "same |")
    print("| --- | --- | ---: | ---: | ---: | ---: | ---: | --- |")
    failed = False
    for path in paths:
        for config in args.configs.split(","):
            r = compare(path.read_bytes(), config)
            if r["status"] != "ok":
                print(f"| {path.stem} | {config} | {r['status']} | | | | | |", flush=True)
                continue
            same = "yes" if r["same"] else "NO: " + "; ".join(r["diffs"])
            failed |= not r["same"]
            print(f"| {path.stem} | {config} | {r['partitions']} | {r['reused']} | "
                  f"{r['whole']:.2f} | {r['reuse']:.2f} | {r['recompile']:.2f} | {same} |",
                  flush=True)  # fmt: skip
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
