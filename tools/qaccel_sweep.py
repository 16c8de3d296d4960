"""`qaccel-sweep`: design-space exploration over hardware configurations and models.

    qaccel-sweep tests/fixtures/models/small_cnn.tflite models/ --spec spec.yaml -o out
    qaccel-sweep model.tflite --spec spec.json -o out --jobs 2        # local process pool
    qaccel-sweep model.tflite --spec spec.json -o out --ray           # local Ray cluster
    qaccel-sweep model.tflite --spec spec.json -o out --ray HOST:6379 # an existing cluster
    RAY_AUTH_TOKEN=TOKEN qaccel-sweep ... --ray HOST:6379  # one with token authentication

MODELS are `.tflite` files or folders of them; the spec (YAML or JSON, `explore/spec.py`) is a
grid or a seeded random sample over `HardwareConfig` keys and `vta-pipeline` options
(`bias_placement`, `max_partitions`), with fixed keys and constraints. Every (model, point) is
compiled as `qaccel-compile` does and evaluated with the timing model. Results are appended to
OUTDIR/results.jsonl as they finish (a rerun skips points already there); at the end
OUTDIR/table.csv, table.jsonl (table.parquet with pyarrow; energy columns in microjoules per
inference from the analytic model at the point's energy_* keys), pareto.png (cycles vs on-chip
SRAM) and energy.png (energy vs latency; with matplotlib), and frontier.txt with both frontiers
are written and the frontiers are printed. A point that fails
(a configuration HardwareConfig refuses, a layer that does not fit, a timeout) is a row whose
status is the reason.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from qaccel.explore.executors import ExecutorError, make_executor
from qaccel.explore.spec import SpecError, SweepSpec
from qaccel.explore.sweep import SweepError, run_sweep
from qaccel.tools.cli import fail

PROG = "qaccel-sweep"


def _fail(message: str) -> NoReturn:
    fail(PROG, message)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="+", metavar="MODEL", help=".tflite files or folders")
    ap.add_argument("--spec", required=True, type=Path, help="sweep spec (.yaml or .json)")
    ap.add_argument("-o", "--output", required=True, type=Path, metavar="OUTDIR")
    ap.add_argument("--jobs", "-j", type=int, default=None, metavar="N",
                    help="local processes (default: every core); with --ray, a local "
                         "cluster's CPUs")  # fmt: skip
    ap.add_argument("--ray", nargs="?", const="local", default=None, metavar="ADDRESS",
                    help="run the points as Ray tasks (a local cluster, or ADDRESS)")
    ap.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                    help="per-point compile time limit (default 600; 0: none)")
    ap.add_argument("--no-plot", action="store_true", help="do not draw pareto.png")
    ap.add_argument("--quiet", action="store_true", help="no progress bar, no frontier")

    def error(message: str) -> NoReturn:
        _fail(message)

    ap.error = error  # type: ignore[method-assign]
    return ap


def run(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.jobs is not None and args.jobs < 1:
        raise SpecError("--jobs must be at least 1")
    spec = SweepSpec.load(args.spec)
    executor = make_executor(args.jobs, args.ray)
    start = time.perf_counter()
    result = run_sweep(args.models, spec, args.output, executor, progress=not args.quiet,
                       timeout_s=args.timeout or None, plot=not args.no_plot)  # fmt: skip
    if not args.quiet:
        print(result.table.frontier_summary())
        print(result.table.energy_frontier_summary())
        print(f"{result.computed} point(s) computed on {executor.describe()}, "
              f"{result.cached} from {args.output / 'results.jsonl'}, in "
              f"{time.perf_counter() - start:.1f} s; wrote "
              f"{', '.join(f.name for f in result.files)} to {args.output}")  # fmt: skip
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    try:
        code = run(argv)
    except (SpecError, SweepError, ExecutorError) as e:
        _fail(str(e))
    except KeyboardInterrupt:
        _fail("interrupted; finished points are in results.jsonl, rerun to resume")
    sys.exit(code)


if __name__ == "__main__":
    main()
