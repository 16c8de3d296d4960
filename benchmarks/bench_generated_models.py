"""Generated models end to end: N random valid int8 models (`frontend/random_models.py`), each
checked bit for bit against LiteRT's reference kernels at every stage (`explore/conformance.py`:
the tfl interpreter, the interpreter after every pass of `vta-pipeline`, the compiled model on
the C and the Python simulator and the artifact folder's run plan, for both bundled
configurations), on 2 seeded input sets.

    python benchmarks/bench_generated_models.py 1000 [--start S] [--jobs J] [--chunk C]

Prints each failure as it is found (seed, kind, one-line cause, the model's description), then a
summary: models checked, bit-exact, failures by kind, ops and variants covered with their
counts, accelerator layers and host ops, time. Exits 1 if any model failed. `--save DIR` writes
each failing model as DIR/seed-S.tflite. Models are checked in chunks of C seeds, one LiteRT
child process per chunk; `--jobs` runs chunks in that many worker processes.
"""

from __future__ import annotations

import argparse
import multiprocessing
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT.parent))

from qaccel.explore.conformance import check_models  # noqa: E402
from qaccel.frontend.random_models import generate  # noqa: E402


def check_chunk(seeds: list[int]) -> list[dict]:
    models = [generate(seed) for seed in seeds]
    return [
        {"seed": m.seed, "ok": r.ok, "kind": r.kind, "failure": r.failure, "line": r.line(),
         "ops": dict(r.ops), "features": dict(m.features),
         "layers": sum(r.layers.values()), "host_ops": sum(r.host_ops.values()),
         "artifacts": len(r.run_plans), "run_plans": sum(r.run_plans.values()),
         "seconds": r.seconds}
        for m, r in zip(models, check_models(models))
    ]  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("n", type=int, help="number of models")
    ap.add_argument("--start", type=int, default=0, help="first seed (default 0)")
    ap.add_argument("--jobs", type=int, default=1, help="worker processes (default 1)")
    ap.add_argument("--chunk", type=int, default=20, help="seeds per LiteRT child (default 20)")
    ap.add_argument("--save", type=Path, help="write failing models to this folder")
    args = ap.parse_args()
    seeds = list(range(args.start, args.start + args.n))
    chunks = [seeds[i : i + args.chunk] for i in range(0, len(seeds), args.chunk)]
    start = time.perf_counter()
    rows: list[dict] = []
    if args.jobs > 1:
        pool = multiprocessing.get_context("spawn").Pool(args.jobs)
        results = pool.imap(check_chunk, chunks)
    else:
        pool, results = None, map(check_chunk, chunks)
    for chunk_rows in results:
        for row in chunk_rows:
            rows.append(row)
            if not row["ok"]:
                print(f"FAIL seed {row['seed']}: {row['line']}", flush=True)
                if args.save:
                    args.save.mkdir(parents=True, exist_ok=True)
                    (args.save / f"seed-{row['seed']}.tflite").write_bytes(
                        generate(row["seed"]).model)
        done = len(rows)
        if done % 100 == 0 or done == len(seeds):
            print(f"... {done}/{len(seeds)} models, {time.perf_counter() - start:.0f} s",
                  flush=True)
    if pool is not None:
        pool.close()
        pool.join()
    elapsed = time.perf_counter() - start

    ops: Counter = Counter()
    models_with_op: Counter = Counter()
    features: Counter = Counter()
    kinds: Counter = Counter(row["kind"] for row in rows)
    for row in rows:
        ops.update(row["ops"])
        models_with_op.update(row["ops"].keys())
        features.update(row["features"])
    n_ops = sum(ops.values())
    failures = [row for row in rows if not row["ok"]]
    print()
    print(f"models: {len(rows)} (seeds {args.start}..{args.start + args.n - 1}), "
          f"bit-exact: {len(rows) - len(failures)}, failures: {len(failures)} "
          f"({', '.join(f'{k} {v}' for k, v in sorted(kinds.items()) if k != 'ok') or 'none'})")
    print(f"ops: {n_ops} ({n_ops / max(len(rows), 1):.1f} per model); accelerator layers "
          f"{sum(r['layers'] for r in rows)}, host ops {sum(r['host_ops'] for r in rows)} "
          "(both configurations); artifacts run by their run plan too: "
          f"{sum(r['run_plans'] for r in rows)} of {sum(r['artifacts'] for r in rows)}")
    print("op counts (ops, models using it):")
    for op, count in sorted(ops.items(), key=lambda kv: -kv[1]):
        print(f"  {op:20s} {count:6d} {models_with_op[op]:6d}")
    print("variants (count):")
    for name, count in sorted(features.items()):
        print(f"  {name:45s} {count:6d}")
    for row in failures:
        print(f"FAIL seed {row['seed']}: {row['line']}")
    print(f"time: {elapsed:.1f} s ({elapsed / max(len(rows), 1):.2f} s per model, "
          f"{args.jobs} job{'s' if args.jobs > 1 else ''})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
