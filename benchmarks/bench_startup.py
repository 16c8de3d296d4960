"""Start-up, import and compile time as a user sees them: every figure is a whole process.

    python benchmarks/bench_startup.py [--repeat N] [--tvm-python PATH] [MODEL.tflite]

Measures, best and median of N fresh processes (default 5):
  help     `qaccel-opt --help`                              (target < 0.3 s)
  import   `qaccel-opt MODEL -o OUT.mlir`: import to tfl IR and print it (target < 1.0 s)
  compile  `qaccel-compile MODEL -o OUTDIR --quiet`: the whole artifact
  tvm      with `--tvm-python`, a Python that has `apache-tvm==0.27.*` and `tflite`
           installed (e.g. a separate venv): TVM's TFLite frontend, `tvm.compile(mod,
           target="llvm")` and `export_library`, i.e. TVM's deployable artifact for the same
           model. qaccel-compile's target is at most 0.4x of it.
MODEL defaults to MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2.tflite). Runs of the
different commands alternate, so a change in the machine's load affects them alike.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "tests/fixtures/models/mobilenet_v2.tflite"

_TVM_CHILD = r"""
import sys
import tflite, tvm
from tvm.relax.frontend.tflite import from_tflite
model = tflite.Model.GetRootAsModel(open(sys.argv[1], "rb").read(), 0)
mod = from_tflite(model)
mod = mod[0] if isinstance(mod, tuple) else mod
tvm.compile(mod, target="llvm").export_library(sys.argv[2])
"""


def _tool(name: str) -> str:
    found = shutil.which(name) or str(Path(sys.executable).parent / name)
    return found


def timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        sys.exit(f"bench_startup: {' '.join(cmd[:2])}: {last}")
    return elapsed


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tvm-python", help="a Python with apache-tvm 0.27 and tflite installed")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        commands = {
            "help": [_tool("qaccel-opt"), "--help"],
            "import": [_tool("qaccel-opt"), str(args.model), "-o", str(tmp / "model.mlir")],
            "compile": [_tool("qaccel-compile"), str(args.model), "-o", str(tmp / "artifact"),
                        "--quiet"],  # fmt: skip
        }
        if args.tvm_python:
            commands["tvm"] = [args.tvm_python, "-c", _TVM_CHILD, str(args.model),
                               str(tmp / "tvm_model.so")]  # fmt: skip
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, cmd in commands.items():
                if name == "compile":
                    shutil.rmtree(tmp / "artifact", ignore_errors=True)
                times[name].append(timed(cmd))

    print(f"{args.model.name}, {args.repeat} runs each (whole processes)")
    print(f"{'what':<8} {'best s':>8} {'median s':>9}")
    for name, ts in times.items():
        print(f"{name:<8} {min(ts):>8.3f} {statistics.median(ts):>9.3f}")
    if "tvm" in times:
        ratio = min(times["compile"]) / min(times["tvm"])
        median_ratio = statistics.median(times["compile"]) / statistics.median(times["tvm"])
        print(f"qaccel-compile / TVM: {ratio:.2f}x best, {median_ratio:.2f}x median (target <= 0.4x)")


if __name__ == "__main__":
    main()
