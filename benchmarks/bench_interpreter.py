"""Interpreter speed per inference, on the imported (tfl) and legalized (q) IR.

    python benchmarks/bench_interpreter.py [MODEL.tflite ...]

Defaults to MobileNetV2 1.0/224 and ResNet-50 (see bench_frontend.py for how to make it).
Targets (2-core machine): MobileNetV2 under 2 s per inference, ResNet-50 under 10 s.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from xdsl.context import Context

from qaccel.interpreter.interpreter import entry_function, random_inputs, run_function
from qaccel.frontend.tflite_import import import_tflite
from qaccel.passes.legalize_tfl_to_q import LegalizeTflToQPass

ROOT = Path(__file__).resolve().parent.parent
DEFAULTS = [
    ROOT / "tests/fixtures/models/mobilenet_v2.tflite",
    ROOT / "tests/fixtures/generated/resnet50.tflite",
]


def per_inference(module, runs: int = 3) -> float:
    x = random_inputs(entry_function(module), 0)
    run_function(module, x)  # first run: prepare checks, caches
    best = float("inf")
    for _ in range(runs):
        t = time.perf_counter()
        run_function(module, x)
        best = min(best, time.perf_counter() - t)
    return best


def main() -> None:
    paths = [Path(p) for p in sys.argv[1:]] or DEFAULTS
    print(f"{'model':24} {'tfl s/inference':>16} {'q s/inference':>14}")
    for path in paths:
        if not path.exists():
            print(f"{path.name:24} (missing)")
            continue
        module = import_tflite(path.read_bytes())
        tfl_s = per_inference(module)
        LegalizeTflToQPass().apply(Context(), module)
        q_s = per_inference(module)
        print(f"{path.stem:24} {tfl_s:16.3f} {q_s:14.3f}")


if __name__ == "__main__":
    main()
