"""End-to-end compile time of `qaccel-compile` (import, pipeline, scheduling, emission, artifact).

    python benchmarks/bench_compile.py [--repeat N] [MODEL.tflite ...]

Defaults to MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2.tflite), ResNet-50
(tests/fixtures/generated/resnet50.tflite, made by `python tools/make_fixtures.py --only
resnet50`; skipped when missing) and the small CNN fixture. Each run is a fresh
`qaccel-compile MODEL -o TMPDIR --quiet` process, so the figure includes Python start-up and
imports, as a user sees it; the table gives the best and the median of N runs (default 3),
the median CPU seconds of the process and the helpers it forked (the figure to compare on a
loaded machine), the accelerator layers and the artifact's size.
Target (2-core machine): MobileNetV2 under 3 s.

    python benchmarks/bench_compile.py --phases [--repeat N] [MODEL.tflite ...]

splits one compile into its phases instead, each run in a fresh process doing what
`qaccel-compile` does step by step (with its work on the second core: half the schedule
searches, the host IR's text from the end of the passes on, then the
LiteRT models while the artifact is written, in forked children, whose CPU time the
process's own CPU seconds do not count; `QACCEL_COMPILE_JOBS=1` runs it all here): the imports, the importer, every pass of
`vta-pipeline` (with the verifier of the input and of the result), `compile_module`
(emission), and `write_artifact` (with the manifest's hashes); then, apart, what the
children did (the models for LiteRT, `_aot_models`, and the host IR's text, each written
into the artifact's folder and hashed by the child), each run once more in the process to
show its cost. Per phase the median CPU and wall seconds of N runs.
CPU time is the figure to compare on a loaded machine.
"""

from __future__ import annotations

import argparse
import json
import resource
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
    before = _children_cpu()
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"bench_compile: {model.name}: {done.stderr.strip().splitlines()[-1]}")
    return elapsed, _children_cpu() - before


def _children_cpu() -> float:
    """CPU seconds of the finished children (a compile and the helpers it forked)."""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(model: Path, repeat: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "artifact"
        runs = [compile_once(model, out) for _ in range(repeat)]
        report = json.loads((out / "report.json").read_text())
        size = sum(f.stat().st_size for f in out.rglob("*") if f.is_file())
    times = [t for t, _ in runs]
    return {"best": min(times), "median": statistics.median(times),
            "cpu": statistics.median(c for _, c in runs),
            "layers": report["totals"]["layers"], "mb": size / 2**20}  # fmt: skip


_PHASES = r"""
import json, sys, time
from pathlib import Path

out = []


class phase:
    def __init__(self, name):
        self.name = name

    def __enter__(self):
        self.cpu, self.wall = time.process_time(), time.perf_counter()

    def __exit__(self, *exc):
        out.append((self.name, time.process_time() - self.cpu, time.perf_counter() - self.wall))


with phase("import qaccel-compile"):
    from qaccel.tools import qaccel_compile as qc
    from qaccel.backends.vta.artifact import Staging, check_runnable, write_artifact
    from qaccel.backends.vta.codegen import compile_module
    from qaccel.dialects.macs import model_macs
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import available_passes, qaccel_context
    from qaccel.tools.pass_flags import pass_manager_for
    from qaccel.kernels import background
    from qaccel.backends.vta.artifact import module_text
background.allow()  # as qaccel-compile's process (QACCEL_COMPILE_JOBS=1: one core)
from qaccel.tools.cli import fewer_collections
fewer_collections().__enter__()  # as qaccel-compile's main(): the collector mostly idle
model, outdir = Path(sys.argv[1]), sys.argv[2]
with phase("import the .tflite"):
    data = model.read_bytes()
    module = import_tflite(data, str(model))
    macs = model_macs(module)
args = qc.parser().parse_args([str(model), "-o", outdir, "--pass-timing"])
manager, timing = pass_manager_for(args, available_passes(), "bench")
manager.verify_each = False
manager.verify_input = False  # as qaccel-compile: verified where it was imported
with phase("passes (vta-pipeline)"):
    manager.run(qaccel_context(), module)
for key, (label, depth, seconds) in timing.rows.items():
    if depth == 1 or key == "verifier":
        out.append(("  " + label, None, seconds))
with phase("compile_module (emission)"):
    check_runnable(module)
    # as qaccel-compile: the host IR's text on the second core from here on, written by the
    # child into the artifact's folder
    staging = Staging(outdir)
    host_text = background.start(qc._write_host_ir, module, staging)
    compiled = compile_module(module, total_macs=macs)
with phase("write_artifact (+ host IR, LiteRT models)"):
    # as qaccel-compile: the LiteRT models on the second core, written by the child
    litert = background.start(qc._write_aot_models, compiled, data, staging)
    write_artifact(compiled, outdir, data, extra=lambda: litert.result()[0],
                   host_text=host_text.result, staging=staging)
again = Staging(outdir + ".again")
with phase("  LiteRT models (again, here)"):
    qc._write_aot_models(compiled, data, again)
with phase("  host IR text (again, here)"):
    qc._write_host_ir(module, again)
again.discard()
print(json.dumps(out))
"""


def phases(model: Path, repeat: int) -> None:
    runs = []
    with tempfile.TemporaryDirectory() as tmp:
        for k in range(repeat):
            cmd = [sys.executable, "-c", _PHASES, str(model), str(Path(tmp) / f"a{k}")]
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                sys.exit(f"bench_compile: {model.name}: {done.stderr.strip()}")
            rows = json.loads(done.stdout.strip().splitlines()[-1])
            runs.append(rows)
    print(f"{model.name}: median of {repeat} runs (indented, not in the total: each pass's "
          "wall seconds from --pass-timing; the children's work run again here)")
    print(f"{'phase':44} {'CPU s':>7} {'wall s':>7}")
    for i, (name, _, _) in enumerate(runs[0]):
        cpu = [r[i][1] for r in runs]
        wall = statistics.median(r[i][2] for r in runs)
        c = "" if cpu[0] is None else f"{statistics.median(cpu):7.3f}"
        print(f"{name:44} {c:>7} {wall:7.3f}")
    top = [n for n, c, _ in runs[0] if c is not None and not n.startswith(" ")]
    total = statistics.median(sum(c for n, c, _ in r if n in top) for r in runs)
    print(f"{'total (without Python start-up)':44} {total:7.3f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", type=Path, help="default: see the module docstring")
    ap.add_argument("--repeat", type=int, default=3, help="runs per model (default 3)")
    ap.add_argument("--phases", action="store_true", help="split one compile into its phases")
    args = ap.parse_args()
    if args.phases:
        for model in args.models or DEFAULTS[:1]:
            phases(model, max(1, args.repeat))
        return
    print(f"{'model':32} {'best s':>7} {'median s':>9} {'CPU s':>7} {'layers':>7} "
          f"{'artifact MB':>12}")  # fmt: skip
    for model in args.models or DEFAULTS:
        if not model.exists():
            print(f"{model.name:32} (missing: see the docstring for how to make it)")
            continue
        r = measure(model, max(1, args.repeat))
        print(f"{model.name:32} {r['best']:>7.2f} {r['median']:>9.2f} {r['cpu']:>7.2f} "
              f"{r['layers']:>7} {r['mb']:>12.1f}")  # fmt: skip


if __name__ == "__main__":
    main()
