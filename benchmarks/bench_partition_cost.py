"""partition-graph's host-step choice on the converter-made corpus: per model, the decision
points (groups the target runs as host steps of its programs), how many the cost model keeps
inside and how many it runs on the CPU, the partitions under each `host-steps` setting
(cost, inside, cpu), and the cycles the cost model prices for the chosen sides, for every
point inside and for every point on the CPU (sums over the decision points, each priced alone
against the partitions of the cost choice).

    python benchmarks/bench_partition_cost.py [--models a,b] [--config vta-default]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
LINE = re.compile(r"host step (-?\d+) cycles .*; CPU (-?\d+) cycles .*; chosen: (host step|CPU)")


def partition(path: Path, config: str, mode: str) -> tuple[int, list[tuple[int, int, str]]]:
    from xdsl.dialects import func

    from qaccel import api
    from qaccel.passes.partition_graph import PartitionGraphPass

    module = api.import_model(path)
    api.run_pipeline(module, f"vta-pipeline{{config={config} stop-after=annotate-target}}")
    err = io.StringIO()
    with contextlib.redirect_stderr(err):
        api.run_pipeline(module, PartitionGraphPass(explain=True, host_steps=mode))
    parts = sum(isinstance(op, func.FuncOp) and "qaccel.target" in op.attributes
                for op in module.ops)  # fmt: skip
    found = [LINE.search(line) for line in err.getvalue().splitlines()]
    return parts, [(int(m[1]), int(m[2]), m[3]) for m in found if m]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=None, help="comma-separated names (default: all)")
    ap.add_argument("--config", default="vta-default")
    args = ap.parse_args()
    paths = sorted(CORPUS.glob("*.tflite"))
    if args.models:
        wanted = set(args.models.split(","))
        paths = [p for p in paths if p.stem in wanted]
    print("| model | decision points | inside | on CPU | partitions cost / inside / cpu | "
          "host cycles cost / inside / cpu |")
    print("| --- | ---: | ---: | ---: | --- | --- |")
    for path in paths:
        try:
            parts, decisions = partition(path, args.config, "cost")
            inside_parts, _ = partition(path, args.config, "inside")
            cpu_parts, _ = partition(path, args.config, "cpu")
        except Exception as e:  # noqa: BLE001  a refusal is a row
            print(f"| {path.stem} | refused: {str(e).splitlines()[0][:80]} | | | | |")
            continue
        kept = sum(c == "host step" for _, _, c in decisions)
        chosen = sum(i if c == "host step" else o for i, o, c in decisions)
        all_in = sum(i for i, _, _ in decisions)
        all_out = sum(o for _, o, _ in decisions)
        print(f"| {path.stem} | {len(decisions)} | {kept} | {len(decisions) - kept} | "
              f"{parts} / {inside_parts} / {cpu_parts} | {chosen} / {all_in} / {all_out} |",
              flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
