"""The C machine's fast path against LiteRT's CPU path, dataset throughput and start-up, in one run.

    python benchmarks/bench_fastpath.py [MODEL.tflite ...] [--artifact OUTDIR] [--repeat N]
                                        [--runs N] [--inputs N] [--check N] [--jobs J]
                                        [--skip-per-inference] [--skip-dataset]
                                        [--skip-startup]

MODELs default to MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2.tflite) and, when it
exists, ResNet-50 (tests/fixtures/generated/resnet50.tflite: `python tools/make_fixtures.py
--only resnet50`); each is compiled with `qaccel-compile MODEL -o OUTDIR` unless `--artifact`
names an artifact (of the first model). Side by side, each measured `--repeat` times (default
3), alternating, with `nice -n 0` (the machine may be shared: min and median are printed, and
the ratios to the XNNPACK baseline of the same run are what carries over):

  xnnpack   LiteRT's benchmark tool (`python -m ai_edge_litert.tools.benchmark_litert_model
            --num_threads 1`) on the original model: LiteRT's default CPU path, XNNPACK
  fast      the same tool on OUTDIR/model.qaccel.dispatch.tflite with `--use_npu
            --dispatch_library_path` our dispatch library: each program checked and timed
            once, its constant weights converted once, then run with data only (the default)
  checked   the same with QACCEL_SIMULATION=checked: every invoke simulates every layer with
            every check and the timing model (what every invoke did before the fast path)

Per-inference figures are the tool's (its min and median over `--runs` invokes, default 30),
then the ratio to XNNPACK. Then, for the first model, the dataset: `qaccel-run OUTDIR
--inputs-dir DIR --no-compare` over `--inputs` random int8 inputs (default 1000; `--jobs`,
default every core), wall time of the whole command, its CPU time and inputs/s; and
`qaccel-run OUTDIR --inputs-dir` on the first `--check` of them (default 16) against LiteRT's
reference kernels (BUILTIN_REF): they must be bit-exact. Then start-up: the whole process of
`qaccel-run OUTDIR` (one input, the run plan) against a process running LiteRT's BUILTIN_REF
interpreter once on the original model (wall and CPU seconds; `.pyc` files written first for
both, as an installed package has them), and the same `qaccel-run OUTDIR` with no preparation
of its programs kept yet (the kept files removed before each run: every layer checked and
timed, as the first run of a program on a machine is).
Targets (MobileNetV2 and ResNet-50, one thread): fast <= 10x XNNPACK; the dataset >= 100
inputs/s on an idle 2-core machine; start-up <= 1.0x BUILTIN_REF.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "tests/fixtures/models/mobilenet_v2.tflite"
RESNET50 = ROOT / "tests/fixtures/generated/resnet50.tflite"
REFERENCE_ONCE = """
import sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
it = Interpreter(model_path=sys.argv[1],
                 experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
it.allocate_tensors()
d = it.get_input_details()[0]
x = np.random.default_rng(0).integers(-128, 128, d["shape"]).astype(d["dtype"])
it.set_tensor(d["index"], x)
it.invoke()
np.save(sys.argv[2], it.get_tensor(it.get_output_details()[0]["index"]))
"""
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


def timed(cmd: list[str], env: dict) -> tuple[float, float, str]:
    """Wall and CPU (user + system, the process and its children) seconds, and stdout."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    done = subprocess.run([*NICE, *cmd], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if done.returncode != 0:
        sys.exit(f"{' '.join(cmd)} failed:\n{done.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, done.stdout


def qaccel_run(args: list[str], env: dict) -> tuple[float, float, str]:
    return timed([sys.executable, "-m", "qaccel.tools.qaccel_run", *args], env)


def compiled(model: Path, work: Path) -> Path:
    outdir = work / model.stem
    subprocess.run([sys.executable, "-m", "qaccel.tools.qaccel_compile", str(model), "-o",
                    str(outdir), "--quiet"], check=True)  # fmt: skip
    return outdir


def per_inference(model: Path, outdir: Path, args, env: dict, lib_dir: Path) -> None:
    dispatch_model = outdir / "model.qaccel.dispatch.tflite"
    checked_env = {**env, "QACCEL_SIMULATION": "checked"}
    sides = {"xnnpack": [], "fast": [], "checked": []}
    for r in range(args.repeat):
        sides["xnnpack"].append(litert_benchmark(model, args.runs, env, None))
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
    print(f"\n{model.stem}: per inference, LiteRT's benchmark tool, one thread "
          "(min / median of the medians):")  # fmt: skip
    for key, label in (("xnnpack", "XNNPACK, original model"),
                       ("checked", "dispatch library, checked path"),
                       ("fast", "dispatch library, fast path")):  # fmt: skip
        lo, med = figure(key)
        print(f"  {label:42s} {lo:8.2f} / {med:8.2f} ms   x{lo / x_min:6.1f} / "
              f"x{med / x_med:6.1f} XNNPACK")  # fmt: skip


def dataset(outdir: Path, work: Path, args, env: dict) -> None:
    from qaccel.backends.vta.run_plan import load_run_plan

    with tempfile.TemporaryDirectory(dir=work) as tmp:
        plan = load_run_plan(outdir)
        (shape, dtype), = plan.inputs
        rng = np.random.default_rng(0)
        sets = rng.integers(-128, 128, (args.inputs, *shape)).astype(dtype)
        data = Path(tmp) / "inputs.npz"
        np.savez(data, x=sets)
        subset = Path(tmp) / "subset.npz"
        np.savez(subset, x=sets[: args.check])
        jobs = ["--jobs", str(args.jobs)] if args.jobs else []
        walls, cpus = [], []
        for r in range(args.repeat):
            wall, cpu, _ = qaccel_run([str(outdir), "--inputs-dir", str(data), "--no-compare",
                                       "--outputs-dir", str(Path(tmp) / f"out{r}"), *jobs],
                                      env)  # fmt: skip
            walls.append(wall)
            cpus.append(cpu)
            print(f"  dataset repeat {r + 1}: {wall:.2f} s ({cpu:.2f} CPU s, "
                  f"{1e3 * cpu / args.inputs:.1f} CPU ms per input), "
                  f"{args.inputs / wall:.1f} inputs/s")  # fmt: skip
        cores = args.jobs or os.cpu_count()
        print(f"\nqaccel-run OUTDIR --inputs-dir ({args.inputs} inputs, --no-compare, "
              f"{cores} process(es)): best {min(walls):.2f} s = "
              f"{args.inputs / min(walls):.1f} inputs/s, median {statistics.median(walls):.2f} s "
              f"= {args.inputs / statistics.median(walls):.1f} inputs/s; CPU "
              f"{min(cpus):.2f} s, i.e. {args.inputs / min(cpus) * cores:.1f} inputs/s on "
              f"{cores} idle core(s)")  # fmt: skip
        _, _, out = qaccel_run([str(outdir), "--inputs-dir", str(subset), "--outputs-dir",
                                str(Path(tmp) / "check"), *jobs], env)  # fmt: skip
        summary = json.loads((Path(tmp) / "check" / "summary.json").read_text())
        print(f"against LiteRT's reference kernels: bit-exact on {summary['bit_exact']}/"
              f"{summary['sets']} inputs")  # fmt: skip
        if summary["bit_exact"] != summary["sets"]:
            sys.exit("NOT bit-exact")


def startup(model: Path, outdir: Path, work: Path, args, env: dict) -> None:
    env = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
    ours = [sys.executable, "-m", "qaccel.tools.qaccel_run", str(outdir), "--outputs-dir",
            str(work / "startup")]  # fmt: skip
    ref = [sys.executable, "-c", REFERENCE_ONCE, str(model), str(work / "ref.npy")]
    timed(ours, env), timed(ref, env)  # .pyc files written
    sides: dict[str, list[tuple[float, float]]] = {
        "qaccel-run OUTDIR": [], "BUILTIN_REF": [], "qaccel-run OUTDIR, nothing kept": []}
    for _ in range(max(3, args.repeat)):
        sides["qaccel-run OUTDIR"].append(timed(ours, env)[:2])
        sides["BUILTIN_REF"].append(timed(ref, env)[:2])
        forget_kept(outdir)
        sides["qaccel-run OUTDIR, nothing kept"].append(timed(ours, env)[:2])
    timed(ours, env)  # kept again
    ref_wall = min(w for w, _ in sides["BUILTIN_REF"])
    ref_cpu = min(c for _, c in sides["BUILTIN_REF"])
    print(f"\n{model.stem}: start-up, the whole process, one input (min wall / min CPU s):")
    for key, runs in sides.items():
        wall, cpu = min(w for w, _ in runs), min(c for _, c in runs)
        print(f"  {key:42s} {wall:6.2f} / {cpu:6.2f} s   x{wall / ref_wall:5.2f} / "
              f"x{cpu / ref_cpu:5.2f} BUILTIN_REF")  # fmt: skip


def forget_kept(outdir: Path) -> None:
    """The kept preparations of the artifact's programs removed (program_runner.kept_path;
    the children's budgets are this process's)."""
    import hashlib

    from qaccel.backends.vta import program_runner

    for program in outdir.rglob("*.qprog"):
        path = program_runner.kept_path(hashlib.sha256(program.read_bytes()).hexdigest())
        if path is not None:
            path.unlink(missing_ok=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--artifact", type=Path, help="an existing qaccel-compile output folder "
                    "(of the first model)")  # fmt: skip
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--runs", type=int, default=30, help="invokes per benchmark tool run")
    ap.add_argument("--inputs", type=int, default=1000, help="dataset size")
    ap.add_argument("--check", type=int, default=16, help="inputs compared with LiteRT")
    ap.add_argument("--jobs", type=int, default=None, help="qaccel-run --jobs (default: all)")
    ap.add_argument("--skip-per-inference", action="store_true",
                    help="no LiteRT benchmark tool runs (the dataset and start-up only)")
    ap.add_argument("--skip-dataset", action="store_true")
    ap.add_argument("--skip-startup", action="store_true")
    args = ap.parse_args()
    models = args.models or [DEFAULT_MODEL] + ([RESNET50] if RESNET50.is_file() else [])

    from qaccel.backends.litert.dispatch import dispatch_library_dir

    work = Path(tempfile.mkdtemp(prefix="qaccel-bench-fastpath-"))
    lib_dir = dispatch_library_dir()
    env = dict(os.environ)
    env.pop("QACCEL_SIMULATION", None)
    print(f"models {', '.join(m.name for m in models)}, {os.cpu_count()} core(s), "
          f"load average {os.getloadavg()[0]:.1f}")  # fmt: skip
    artifacts = {}
    for k, model in enumerate(models):
        if k and args.skip_per_inference:
            break  # the dataset and start-up take the first model only
        artifacts[model] = args.artifact if k == 0 and args.artifact else compiled(model, work)
        if not args.skip_per_inference:
            per_inference(model, artifacts[model], args, env, lib_dir)
    if not args.skip_dataset:
        dataset(artifacts[models[0]], work, args, env)
    if not args.skip_startup:
        startup(models[0], artifacts[models[0]], work, args, env)
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
