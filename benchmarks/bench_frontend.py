"""Import and export speed and memory of the TFLite frontend.

    python benchmarks/bench_frontend.py [MODEL.tflite ...]

Defaults to MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2.tflite) and ResNet-50
(tests/fixtures/generated/resnet50.tflite, made by `python tools/make_fixtures.py --only
resnet50`). Each model is measured in a fresh process so peak memory is its own: the figure
is the peak resident set above the process's baseline after importing qaccel.
Targets (2-core machine): MobileNetV2 import < 1 s, ResNet-50 < 3 s, memory < 3x file size.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULTS = [
    ROOT / "tests/fixtures/models/mobilenet_v2.tflite",
    ROOT / "tests/fixtures/generated/resnet50.tflite",
]

_CHILD = r"""
import json, resource, sys, time
from qaccel.frontend.tflite_import import import_tflite
from qaccel.frontend.tflite_export import export_tflite
import qaccel.frontend.tflite_schema as schema
schema.BUILTIN_OPERATORS  # load the name tables, as every import does once
path = sys.argv[1]
data = open(path, "rb").read()
base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter(); module = import_tflite(data, path); t1 = time.perf_counter()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t2 = time.perf_counter(); out = export_tflite(module); t3 = time.perf_counter()
ops = sum(1 for _ in module.walk())
print(json.dumps({"import_s": t1 - t0, "export_s": t3 - t2, "peak_above_base_mb": (peak - base) / 1024,
                  "file_mb": len(data) / 2**20, "ops": ops, "exported_mb": len(out) / 2**20}))
"""


def measure(path: Path) -> dict:
    best: dict | None = None
    for _ in range(3):
        out = subprocess.run([sys.executable, "-c", _CHILD, str(path)], check=True,
                             capture_output=True, text=True).stdout
        run = json.loads(out)
        if best is None or run["import_s"] < best["import_s"]:
            best = run
    return best


def main() -> None:
    paths = [Path(p) for p in sys.argv[1:]] or DEFAULTS
    print(f"{'model':28} {'file MB':>8} {'ops':>6} {'import s':>9} {'export s':>9} {'mem/file':>9}")
    for path in paths:
        if not path.exists():
            print(f"{path.name:28} (missing: see the docstring for how to make it)")
            continue
        r = measure(path)
        ratio = r["peak_above_base_mb"] / r["file_mb"]
        print(f"{path.stem:28} {r['file_mb']:8.2f} {r['ops']:6d} {r['import_s']:9.3f} "
              f"{r['export_s']:9.3f} {ratio:9.2f}")


if __name__ == "__main__":
    main()
