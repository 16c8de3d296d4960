"""End-to-end compile time of `qaccel-compile` (import, pipeline, scheduling, emission, artifact).

    python benchmarks/bench_compile.py [--repeat N] [MODEL.tflite ...]

Defaults to MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2.tflite), ResNet-50
(tests/fixtures/generated/resnet50.tflite, made by `python tools/make_fixtures.py --only
resnet50`; skipped when missing) and the small CNN fixture. Each run is a fresh
`qaccel-compile MODEL -o TMPDIR --quiet` process, so the figure includes Python start-up and
imports, as a user sees it; the table gives the best and the median of N runs (default 3),
the accelerator layers and the artifact's size.
Target (2-core machine): MobileNetV2 under 3 s.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULTS = [
    ROOT / "tests/fixtures/models/mobilenet_v2.tflite",
    ROOT / "tests/fixtures/generated/resnet50.tflite",
    ROOT / "tests/fixtures/models/small_cnn.tflite",
]


def compile_once(model: Path, outdir: Path) -> float:
    cmd = [sys.executable, "-m", "qaccel.tools.qaccel_compile", str(model), "-o", str(outdir),
           "--quiet"]  # fmt: skip
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bench_compile: {model.name}: {done.stderr.strip().splitlines()[-1]}")
    return elapsed


def measure(model: Path, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "artifact"
        times = [compile_once(model, out) for _ in range(repeat)]
        report = json.loads((out / "report.json").read_text())
        size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    return {"best": min(times), "median": statistics.median(times),
            "layers": report["totals"]["layers"], "mb": size / 2**20}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", type=Path, help="default: see the module docstring")
    ap.add_argument("--repeat", type=int, default=3, help="runs per model (default 3)")
    args = ap.parse_args()
    print(f"{'model':32} {'best s':>7} {'median s':>9} {'layers':>7} {'artifact MB':>12}")
    for model in args.models or DEFAULTS:
        if not model.exists():
            print(f"{model.name:32} (missing: see the docstring for how to make it)")
            continue
        r = measure(model, max(1, args.repeat))
        print(f"{model.name:32} {r['best']:>7.2f} {r['median']:>9.2f} {r['layers']:>7} "
              f"{r['mb']:>12.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
