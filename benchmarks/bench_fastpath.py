"""The C machine's fast path against LiteRT's CPU path, and dataset throughput, in one run.

    python benchmarks/bench_fastpath.py [MODEL.tflite] [--artifact OUTDIR] [--repeat N]
                                        [--runs N] [--inputs N] [--check N] [--jobs J]

MODEL defaults to MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2.tflite), compiled
with `qaccel-compile MODEL -o OUTDIR` unless `--artifact` names an artifact. Side by side,
each measured `--repeat` times (default 3), alternating, with `nice -n 0` (the machine may be
shared: min and median are printed):

  xnnpack   LiteRT's benchmark tool (`python -m ai_edge_litert.tools.benchmark_litert_model
            --num_threads 1`) on the original model: LiteRT's default CPU path, XNNPACK
  fast      the same tool on OUTDIR/model.qaccel.dispatch.tflite with `--use_npu
            --dispatch_library_path` our dispatch library: each program checked and timed
            once, then run with data only (the default)
  checked   the same with QACCEL_SIMULATION=checked: every invoke simulates every layer with
            every check and the timing model (what every invoke did before the fast path)

Per-inference figures are the tool's (its min and median over `--runs` invokes, default 30),
then the ratio to XNNPACK. Then the dataset: `qaccel-run OUTDIR --inputs-dir DIR --no-compare`
over `--inputs` random int8 inputs (default 1000; `--jobs`, default every core), wall time of
the whole command and inputs/s; and `qaccel-run OUTDIR --inputs-dir` on the first `--check`
of them (default 16) against LiteRT's reference kernels (BUILTIN_REF): they must be bit-exact.
Targets (MobileNetV2, one thread, an idle 2-core machine): fast <= 10x XNNPACK; the dataset
>= 100 inputs/s.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "tests/fixtures/models/mobilenet_v2.tflite"
NICE = ["nice", "-n", "0"]


def litert_benchmark(model: Path, runs: int, env: dict, dispatch_dir: Path | None) -> dict:
    """LiteRT's benchmark tool, one thread: its latency figures (ms)."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        cmd = [*NICE, sys.executable, "-m", "ai_edge_litert.tools.benchmark_litert_model",
               "--model", str(model), "--num_threads", "1", "--num_runs", str(runs),
               "--warmup_runs", "3", "--result_json", str(out)]  # fmt: skip
        if dispatch_dir is not None:
            cmd += ["--use_npu", "--dispatch_library_path", str(dispatch_dir)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if done.returncode != 0 or not out.is_file():
            sys.exit(f"benchmark_litert_model failed:\n{done.stderr[-3000:]}")
        return json.loads(out.read_text())["latency"]


def qaccel_run(args: list[str], env: dict) -> tuple[float, str]:
    start = time.perf_counter()
    done = subprocess.run([*NICE, sys.executable, "-m", "qaccel.tools.qaccel_run", *args],
                          capture_output=True, text=True, env=env)  # fmt: skip
    wall = time.perf_counter() - start
    if done.returncode != 0:
        sys.exit(f"qaccel-run {' '.join(args)} failed:\n{done.stderr[-3000:]}")
    return wall, done.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--artifact", type=Path, help="an existing qaccel-compile output folder")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runs", type=int, default=30, help="invokes per benchmark tool run")
    ap.add_argument("--inputs", type=int, default=1000, help="dataset size")
    ap.add_argument("--check", type=int, default=16, help="inputs compared with LiteRT")
    ap.add_argument("--jobs", type=int, default=None, help="qaccel-run --jobs (default: all)")
    ap.add_argument("--skip-dataset", action="store_true")
    args = ap.parse_args()

    from qaccel.backends.litert.dispatch import dispatch_library_dir

    work = Path(tempfile.mkdtemp(prefix="qaccel-bench-fastpath-"))
    outdir = args.artifact
    if outdir is None:
        outdir = work / "artifact"
        subprocess.run([sys.executable, "-m", "qaccel.tools.qaccel_compile", str(args.model),
                        "-o", str(outdir), "--quiet"], check=True)  # fmt: skip
    dispatch_model = outdir / "model.qaccel.dispatch.tflite"
    lib_dir = dispatch_library_dir()
    env = dict(os.environ)
    env.pop("QACCEL_SIMULATION", None)
    checked_env = {**env, "QACCEL_SIMULATION": "checked"}

    print(f"model {args.model.name}, artifact {outdir}, {os.cpu_count()} core(s), "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    sides = {"xnnpack": [], "fast": [], "checked": []}
    for r in range(args.repeat):
        sides["xnnpack"].append(litert_benchmark(args.model, args.runs, env, None))
        sides["fast"].append(litert_benchmark(dispatch_model, args.runs, env, lib_dir))
        sides["checked"].append(litert_benchmark(dispatch_model, max(3, args.runs // 10),
                                                 checked_env, lib_dir))  # fmt: skip
        print(f"  repeat {r + 1}/{args.repeat}: " + ", ".join(
            f"{k} median {v[-1]['median_ms']:.2f} ms" for k, v in sides.items()))  # fmt: skip

    def figure(key: str) -> tuple[float, float]:
        mins = [s["min_ms"] for s in sides[key]]
        medians = [s["median_ms"] for s in sides[key]]
        return min(mins), statistics.median(medians)

    x_min, x_med = figure("xnnpack")
    print("\nper inference, LiteRT's benchmark tool, one thread (min / median of the medians):")
    for key, label in (("xnnpack", "XNNPACK, original model"),
                       ("checked", "dispatch library, checked path (before)"),
                       ("fast", "dispatch library, fast path (after)")):  # fmt: skip
        lo, med = figure(key)
        print(f"  {label:42s} {lo:8.2f} / {med:8.2f} ms   x{lo / x_min:6.1f} / "
              f"x{med / x_med:6.1f} XNNPACK")  # fmt: skip

    if args.skip_dataset:
        return
    shape = None
    with tempfile.TemporaryDirectory(dir=work) as tmp:
        from qaccel.backends.vta.run_plan import load_run_plan

        plan = load_run_plan(outdir)
        (shape, dtype), = plan.inputs
        rng = np.random.default_rng(0)
        sets = rng.integers(-128, 128, (args.inputs, *shape)).astype(dtype)
        data = Path(tmp) / "inputs.npz"
        np.savez(data, x=sets)
        subset = Path(tmp) / "subset.npz"
        np.savez(subset, x=sets[: args.check])
        jobs = ["--jobs", str(args.jobs)] if args.jobs else []
        walls = []
        for r in range(args.repeat):
            wall, out = qaccel_run([str(outdir), "--inputs-dir", str(data), "--no-compare",
                                    "--outputs-dir", str(Path(tmp) / f"out{r}"), *jobs], env)  # fmt: skip
            walls.append(wall)
            print(f"  dataset repeat {r + 1}: {wall:.2f} s, {args.inputs / wall:.1f} inputs/s")
        print(f"\nqaccel-run OUTDIR --inputs-dir ({args.inputs} inputs, --no-compare, "
              f"{args.jobs or os.cpu_count()} process(es)): best {min(walls):.2f} s = "
              f"{args.inputs / min(walls):.1f} inputs/s, median {statistics.median(walls):.2f} s "
              f"= {args.inputs / statistics.median(walls):.1f} inputs/s")  # fmt: skip
        _, out = qaccel_run([str(outdir), "--inputs-dir", str(subset), "--outputs-dir",
                             str(Path(tmp) / "check"), *jobs], env)  # fmt: skip
        summary = json.loads((Path(tmp) / "check" / "summary.json").read_text())
        print(f"against LiteRT's reference kernels: bit-exact on {summary['bit_exact']}/"
              f"{summary['sets']} inputs")  # fmt: skip
        if summary["bit_exact"] != summary["sets"]:
            sys.exit("NOT bit-exact")


if __name__ == "__main__":
    main()
