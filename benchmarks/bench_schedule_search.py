"""CPU time of `schedule-vta`'s cost-model searches on MobileNetV2's GEMM layers.

    python benchmarks/bench_schedule_search.py [--repeat N] [--config NAME]

Runs the searches of `tests/fixtures/schedules/mobilenet_v2_searches.json` (MobileNetV2
1.0/224's 31 distinct GEMM layer shapes, the bias mode free as `qaccel-compile` searches;
`--config` picks the hardware configuration, default `vta-default`) in this process, each time
on fresh geometries (nothing memoized from the run before, as in a cold compile), and prints
the best and the median CPU seconds of N runs (default 7), the time of the search's parts in a
first run (modeling the best candidates with `estimate`; the rest: candidates and their
ranking) and whether every search found its pinned schedules. One core; `qaccel-compile`
splits the searches over two (`search.search_ahead`) only without the C search. The C search
(`lowering/vta/search_c/`) runs where built; `QACCEL_NO_CSEARCH=1` times the Python one (the
parts are then the Python search's).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests/fixtures/schedules/mobilenet_v2_searches.json"
TILING = ("tile_h", "tile_w", "tile_co", "tile_ci", "loop_order", "bias_mode", "inp_slots",
          "wgt_slots", "acc_slots")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=7, help="runs (default 7)")
    ap.add_argument("--config", default="vta-default", help="hardware config of the cases")
    args = ap.parse_args()

    from dataclasses import replace

    from qaccel.lowering.vta import cost_model, search
    from qaccel.lowering.vta.geometry import LayerGeometry
    from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig

    configs = {
        "vta-default": DEFAULT_CONFIG,
        "store-requant": replace(DEFAULT_CONFIG, name="store-requant", store_requant=True),
        "small": HardwareConfig(name="small", log_inp_buff_size=11, log_wgt_buff_size=14,
                                log_acc_buff_size=12),  # fmt: skip
    }
    cases = [c for c in json.loads(FIXTURE.read_text())["cases"]
             if c["config"] == args.config and c["try_modes"]]  # as qaccel-compile searches
    if not cases:
        sys.exit(f"bench_schedule_search: no case with config {args.config!r}")

    def keys() -> list[tuple]:  # fresh geometries: their memo starts empty
        return [(LayerGeometry(**{k: tuple(v) if k == "tail" else v
                                  for k, v in c["geometry"].items()}),
                 configs[c["config"]], tuple(c["modes"]), tuple(c["orders"]), c["try_modes"],
                 c["model_steps"]) for c in cases]  # fmt: skip

    parts = {"estimate": 0.0}
    real_estimate = cost_model.estimate

    def timed_estimate(*a, **k):
        t = time.process_time()
        try:
            return real_estimate(*a, **k)
        finally:
            parts["estimate"] += time.process_time() - t

    runs, split, same = [], [], True
    for r in range(max(1, args.repeat)):
        ks = keys()
        timing = r == 0  # the parts from a separate first run (its wrapper costs a little)
        search.estimate = timed_estimate if timing else real_estimate
        parts["estimate"] = 0.0
        start = time.process_time()
        found = []
        for key in ks:
            try:
                found.append(search._search(*key))
            except ValueError as e:
                found.append(f"LayerError: {e}")
        took = time.process_time() - start
        if timing:
            split = [took - parts["estimate"], parts["estimate"]]
            for c, f in zip(cases, found):
                got = f if isinstance(f, str) else [
                    [*(s.tiling()[k] for k in TILING), s.estimated_cycles] for s in f]
                same &= got == c["found"]
        else:
            runs.append(took)
    search.estimate = real_estimate
    if not runs:
        runs = [split[0] + split[1]]
    print(f"{len(cases)} searches ({args.config}): best {min(runs):.3f} s, median "
          f"{statistics.median(runs):.3f} s CPU of {len(runs)} runs; in a first, timed run "
          f"estimate {split[1]:.3f} s + the rest (candidates, ranking) {split[0]:.3f} s; pinned "
          f"schedules {'all found' if same else 'DIFFER'}")


if __name__ == "__main__":
    main()
