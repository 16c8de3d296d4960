"""CPU time of each pass of `vta-pipeline` and of the verifier, in one process, as
`qaccel-compile` runs them (partition-graph's summary on, the IR verified once at the end).

    python benchmarks/bench_passes.py [--repeat N] [--config CONFIG] [MODEL.tflite ...]
    python benchmarks/bench_passes.py --digest [MODEL.tflite ...]

Defaults to MobileNetV2 (tests/fixtures/models/mobilenet_v2.tflite). Each repetition imports
the model afresh and runs the passes one by one; the first (which also imports the passes'
modules) is left out. The collector is set as `qaccel-compile` sets it (what the imports made
frozen, the youngest generation collected every 50,000 allocations) and run between
repetitions. Per pass: the median and the least CPU seconds (`time.process_time`: on a shared
machine the least is the steadier figure), and their sums.

`--digest` prints instead the SHA-256 of the printed IR after every pass, for the default
configuration and `vta-store-requant` (or `--config`'s): run it at two revisions and compare, to check that a
change to the passes leaves every stage's IR as it was.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import hashlib
import io
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULTS = [ROOT / "tests/fixtures/models/mobilenet_v2.tflite"]
CONFIGS = (None, "vta-store-requant")


def scheduled_passes(config: str | None):
    from qaccel.pipeline.expansion import expand
    from qaccel.pipeline.spec import available_passes, parse_passes
    from qaccel.tools.pass_flags import partitioning_output

    spec = "vta-pipeline" if config is None else f"vta-pipeline{{config={config}}}"
    passes = expand(parse_passes(spec, available_passes()), available_passes()).passes
    return [partitioning_output(p, report=True) for p in passes]


def run_passes(data: bytes, name: str, config: str | None, after=None) -> dict[str, float]:
    """Import `data` and run the passes; CPU seconds per pass and of the final verifier.
    `after(pass_name, module)` is called after each pass, outside the timing."""
    from qaccel.dialects import qaccel_context
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.runner import verify_ir

    module = import_tflite(data, name)
    ctx = qaccel_context()
    seconds: dict[str, float] = {}
    for scheduled in scheduled_passes(config):
        start = time.process_time()
        with contextlib.redirect_stderr(io.StringIO()):  # partition-graph's summary
            scheduled.pass_.apply(ctx, module)
        seconds[scheduled.name] = time.process_time() - start
        if after is not None:
            after(scheduled.name, module)
    start = time.process_time()
    verify_ir(module)
    seconds["verifier"] = time.process_time() - start
    return seconds


def timings(model: Path, repeat: int, config: str | None) -> None:
    from qaccel.tools.cli import fewer_collections

    data = model.read_bytes()
    run_passes(data, str(model), config)  # imports the passes' modules
    runs: dict[str, list[float]] = {}
    with fewer_collections():
        for _ in range(repeat):
            gc.collect()
            for name, s in run_passes(data, str(model), config).items():
                runs.setdefault(name, []).append(s)
    print(f"{model.name} ({config or 'vta-default'}), {repeat} runs: CPU ms")
    print(f"  {'pass':22s} {'median':>8s} {'least':>8s}")
    for name, values in runs.items():
        print(f"  {name:22s} {1e3 * statistics.median(values):8.1f} {1e3 * min(values):8.1f}")
    medians = sum(statistics.median(v) for v in runs.values())
    least = sum(min(v) for v in runs.values())
    print(f"  {'total':22s} {1e3 * medians:8.1f} {1e3 * least:8.1f}")


def digests(model: Path, configs=CONFIGS) -> None:
    from qaccel.dialects.printing import op_text

    data = model.read_bytes()
    for config in configs:
        def after(name: str, module) -> None:
            digest = hashlib.sha256(op_text(module).encode()).hexdigest()
            print(f"{model.name} {config or 'vta-default'} {name} {digest}")

        run_passes(data, str(model), config, after)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path, default=DEFAULTS)
    ap.add_argument("--repeat", type=int, default=10)
    ap.add_argument("--config", default=None, help="hardware configuration (file or name)")
    ap.add_argument("--digest", action="store_true", help="SHA-256 of the IR after each pass")
    args = ap.parse_args()
    for model in args.models:
        if args.digest:
            digests(model, CONFIGS if args.config is None else (args.config,))
        else:
            timings(model, max(1, args.repeat), args.config)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
