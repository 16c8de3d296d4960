"""Wall time of a design-space sweep: 1 process, 2 processes, and a local Ray cluster.

    python benchmarks/bench_sweep.py [--points N] [--modes 1,2,ray] [MODEL.tflite]

The sweep is 64 points of MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2.tflite)
over the buffer sizes (input 4 KiB-32 KiB, weight 32 KiB-256 KiB, accumulator 64-128 KiB) and
the output stage (`store_requant`); every point is compiled and evaluated with the timing
model, without a cache. `--points N` takes a seeded sample of N of them (a quick check).
Modes: `1` (one worker process: the serial baseline), `2` (a pool of 2 processes), `ray`
(Ray tasks on `ray.init(num_cpus=2)`, start-up included). The tables of all modes must be
equal (up to compile times).
Targets (2-core machine): 2 processes >= 1.8x faster than 1; Ray within 1.2x of 2 processes.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT.parent))

from qaccel.explore.executors import LocalExecutor, RayExecutor  # noqa: E402
from qaccel.explore.spec import SweepSpec  # noqa: E402
from qaccel.explore.sweep import run_sweep  # noqa: E402

GRID = {
    "log_inp_buff_size": [12, 13, 14, 15],
    "log_wgt_buff_size": [15, 16, 17, 18],
    "log_acc_buff_size": [16, 17],
    "store_requant": [False, True],
}


def _rows(table) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "compile_s"} for r in table]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", default=ROOT / "tests/fixtures/models/mobilenet_v2.tflite")
    ap.add_argument("--points", type=int, default=64, help="a seeded sample of the 64 points")
    ap.add_argument("--modes", default="1,2,ray", help="comma-separated: 1, 2, ray")
    args = ap.parse_args()
    spec = SweepSpec.from_dict({"grid": GRID, "samples": args.points, "seed": 0})
    models = {Path(args.model).stem: Path(args.model).read_bytes()}
    n = len(spec.points())
    times: dict[str, float] = {}
    tables: dict[str, list[dict]] = {}
    for mode in args.modes.split(","):
        start = time.perf_counter()
        if mode == "ray":
            import ray

            executor = RayExecutor(num_cpus=2)
        else:
            executor = LocalExecutor(int(mode))
            if executor.jobs == 1:  # a worker process too, as the pool's workers are
                executor = _OneProcess()
        result = run_sweep(models, spec, None, executor, timeout_s=600)
        times[mode] = time.perf_counter() - start
        tables[mode] = _rows(result.table)
        if mode == "ray":
            ray.shutdown()
        ok = len(result.table.ok)
        print(f"{mode:>4}: {n} point(s) ({ok} ok) in {times[mode]:7.1f} s "
              f"({times[mode] / n:.2f} s/point)", flush=True)  # fmt: skip
    first = next(iter(tables.values()))
    assert all(t == first for t in tables.values()), "the modes' tables differ"
    if "1" in times and "2" in times:
        print(f"2 processes: {times['1'] / times['2']:.2f}x faster than 1 (target >= 1.8x)")
    if "2" in times and "ray" in times:
        print(f"Ray: {times['ray'] / times['2']:.2f}x the time of 2 processes (target <= 1.2x)")


class _OneProcess(LocalExecutor):
    """One worker process (not the calling one), so the baseline pays what the pool pays."""

    def __init__(self):
        super().__init__(1)

    def map(self, fn, shared, items):
        import concurrent.futures
        import multiprocessing

        from qaccel.explore import executors

        with concurrent.futures.ProcessPoolExecutor(
            1, mp_context=multiprocessing.get_context("fork"),
            initializer=executors._init_worker, initargs=(shared,),
        ) as pool:  # fmt: skip
            futures = {pool.submit(executors._call_in_worker, fn, item): i
                       for i, item in enumerate(items)}  # fmt: skip
            for future in concurrent.futures.as_completed(futures):
                yield futures[future], future.result()


if __name__ == "__main__":
    main()
