"""Dataset evaluation's worker layouts side by side: threads of one process against processes.

    python benchmarks/bench_dataset.py [MODEL.tflite] [--artifact OUTDIR] [--inputs N]
                                       [--jobs J] [--repeat R] [--folder] [--check N]
                                       [--layouts threads,processes]

MODEL defaults to MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2.tflite), compiled
with `qaccel-compile MODEL -o OUTDIR` unless `--artifact` names an artifact. `--inputs` random
int8 input sets (default 1000), as one `.npz` of sets or, with `--folder`, a folder of one
`.npy` per set. Each layout runs `--repeat` times (default 2), alternating, each in a fresh
process (`python -c` calling `qaccel.api.evaluate(..., workers=LAYOUT, compare=False)` with
an outputs folder, as `qaccel-run OUTDIR --inputs-dir DIR --no-compare` does): the wall time
of the evaluation itself (start-up excluded: loading the plan, listing the sets), inputs/s,
and the CPU time of the whole process and its children per input, which depends much less
on what else the machine runs than the wall time does (the load average is printed before
and after). Then the first `--check` sets (default 16) through `qaccel-run OUTDIR
--inputs-dir` against LiteRT's reference kernels (BUILTIN_REF): they must be bit-exact.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "tests/fixtures/models/mobilenet_v2.tflite"

ONE_RUN = """
import json, resource, sys, time
from qaccel import api
from qaccel.explore.dataset import input_shapes, load_input_sets
artifact, source, layout, jobs, out = sys.argv[1:6]
sets = load_input_sets(source, input_shapes(artifact))
start = time.perf_counter()
from qaccel.explore.dataset import evaluate_dataset
from qaccel.explore.executors import LocalExecutor
evaluate_dataset(artifact, sets, executor=LocalExecutor(int(jobs)), outputs_dir=out,
                 compare=False, workers=layout)
wall = time.perf_counter() - start
cpu = sum(getattr(resource.getrusage(who), f) for who in (resource.RUSAGE_SELF,
          resource.RUSAGE_CHILDREN) for f in ("ru_utime", "ru_stime"))
print(json.dumps({"wall": wall, "cpu": cpu, "sets": len(sets)}))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--artifact", type=Path)
    ap.add_argument("--inputs", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--repeat", type=int, default=2)
    ap.add_argument("--folder", action="store_true", help="one .npy file per set")
    ap.add_argument("--check", type=int, default=16)
    ap.add_argument("--layouts", default="threads,processes")
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="qaccel-bench-dataset-"))
    outdir = args.artifact
    if outdir is None:
        outdir = work / args.model.stem
        subprocess.run([sys.executable, "-m", "qaccel.tools.qaccel_compile", str(args.model),
                        "-o", str(outdir), "--quiet"], check=True)  # fmt: skip
    from qaccel.backends.vta.run_plan import load_run_plan

    (shape, dtype), = load_run_plan(outdir).inputs
    sets = np.random.default_rng(0).integers(-128, 128, (args.inputs, *shape)).astype(dtype)
    if args.folder:
        source = work / "inputs"
        source.mkdir()
        for i, x in enumerate(sets):
            np.save(source / f"in_{i:06d}.npy", x)
    else:
        source = work / "inputs.npz"
        np.savez(source, x=sets)
    print(f"{outdir.name}: {args.inputs} inputs ({'folder' if args.folder else 'one .npz'}), "
          f"{args.jobs} worker(s), {os.cpu_count()} core(s), load average "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip
    layouts = args.layouts.split(",")
    runs: dict[str, list[dict]] = {k: [] for k in layouts}
    for r in range(args.repeat):
        for layout in layouts:
            done = subprocess.run(
                ["nice", "-n", "0", sys.executable, "-c", ONE_RUN, str(outdir), str(source),
                 layout, str(args.jobs), str(work / f"out-{layout}-{r}")],
                capture_output=True, text=True, check=False)  # fmt: skip
            if done.returncode != 0:
                sys.exit(f"{layout} failed:\n{done.stderr[-3000:]}")
            m = json.loads(done.stdout.strip().splitlines()[-1])
            runs[layout].append(m)
            print(f"  {layout:9s} run {r + 1}: {m['wall']:6.2f} s = {m['sets'] / m['wall']:6.1f} "
                  f"inputs/s; CPU {m['cpu']:6.2f} s = {1e3 * m['cpu'] / m['sets']:5.1f} ms per "
                  f"input (whole process); load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    for layout in layouts:
        best = min(runs[layout], key=lambda m: m["wall"])
        cpu = min(m["cpu"] for m in runs[layout])
        print(f"{layout:9s} best {args.inputs / best['wall']:6.1f} inputs/s; CPU "
              f"{1e3 * cpu / args.inputs:5.1f} ms per input, i.e. "
              f"{args.inputs / cpu * args.jobs:6.1f} inputs/s on {args.jobs} idle core(s)")
    first = layouts[0]
    for k in range(args.inputs):  # the layouts wrote the same outputs
        name = f"in_{k:06d}" if args.folder else f"x_{k}"
        a = np.load(work / f"out-{first}-0" / name / "output_0.npy")
        for layout in layouts[1:]:
            if not np.array_equal(a, np.load(work / f"out-{layout}-0" / name / "output_0.npy")):
                sys.exit(f"{layout} and {first} differ on {name}")
    if args.check:
        subset = work / "subset.npz"
        np.savez(subset, x=sets[: args.check])
        done = subprocess.run([sys.executable, "-m", "qaccel.tools.qaccel_run", str(outdir),
                               "--inputs-dir", str(subset), "--outputs-dir", str(work / "check")],
                              capture_output=True, text=True, check=False)  # fmt: skip
        summary = json.loads((work / "check" / "summary.json").read_text())
        print(f"against LiteRT's reference kernels: bit-exact on {summary['bit_exact']}/"
              f"{summary['sets']} inputs")  # fmt: skip
        if done.returncode != 0 or summary["bit_exact"] != summary["sets"]:
            sys.exit("NOT bit-exact")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
