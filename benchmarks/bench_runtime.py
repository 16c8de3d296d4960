"""The runtime of a compiled artifact against LiteRT's reference interpreter, same model and input.

    python benchmarks/bench_runtime.py [MODEL.tflite] [--artifact OUTDIR] [--config NAME]
                                       [--repeat N] [--simulator c|python]

MODEL defaults to MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2.tflite), compiled
with `qaccel-compile MODEL -o OUTDIR` (default configuration) unless `--artifact` names an
existing artifact. Best and median of N (default 5), runs of the two sides alternating so a
change in the machine's load affects both alike:

  inference  in this process: the artifact loaded once (`load_run_plan`), then inputs in,
             outputs out (`RunPlan.run`) — against LiteRT's `invoke()` (BUILTIN_REF, the
             interpreter built and its tensors allocated once). Target: qaccel <= LiteRT.
  load       `load_run_plan(OUTDIR)` (the plan, DRAM images and programs, hashes checked)
  process    whole processes: `qaccel-run OUTDIR --inputs X.npy --outputs-dir Y` against a
             Python that imports LiteRT, builds the BUILTIN_REF interpreter from the .tflite,
             sets X.npy, invokes once and saves the output. Target: qaccel <= 1.5x LiteRT.

The outputs of both sides are compared: they must be bit-exact.
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

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "tests/fixtures/models/mobilenet_v2.tflite"

_LITERT_CHILD = r"""
import sys
import numpy as np
from ai_edge_litert.interpreter import Interpreter, OpResolverType
interp = Interpreter(model_path=sys.argv[1],
                     experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
interp.allocate_tensors()
interp.set_tensor(interp.get_input_details()[0]["index"], np.load(sys.argv[2]))
interp.invoke()
np.save(sys.argv[3], interp.get_tensor(interp.get_output_details()[0]["index"]))
"""


def _tool(name: str) -> str:
    """The console script beside this Python (not a version manager's shim, which would add
    its own start-up to qaccel's side only)."""
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else (shutil.which(name) or name)


def _timed(cmd: list[str]) -> float:
    start = time.perf_counter()
    done = subprocess.run(cmd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        sys.exit(f"bench_runtime: {' '.join(cmd[:2])}: {last}")
    return elapsed


def _row(name: str, ts: list[float]) -> str:
    return f"{name:<28} {min(ts):>8.3f} {statistics.median(ts):>9.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--artifact", type=Path, help="an artifact of MODEL (default: compile it)")
    ap.add_argument("--config", default=None, help="--config of qaccel-compile")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--simulator", choices=("c", "python"), default="c")
    args = ap.parse_args()

    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    from qaccel.backends.vta.run_plan import load_run_plan

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        art = args.artifact
        if art is None:
            art = tmp / "artifact"
            cmd = [_tool("qaccel-compile"), str(args.model), "-o", str(art), "--quiet"]
            if args.config:
                cmd += ["--config", args.config]
            print(f"compiling {args.model.name}: {_timed(cmd):.1f} s")
        plan = load_run_plan(art, args.simulator)
        if plan is None:
            sys.exit(f"bench_runtime: {art} has no run plan (compile it again)")
        inputs = plan.random_inputs(0)
        np.save(tmp / "x.npy", inputs[0])

        litert = Interpreter(model_path=str(args.model),
                             experimental_op_resolver_type=OpResolverType.BUILTIN_REF)  # fmt: skip
        litert.allocate_tensors()
        in_index = litert.get_input_details()[0]["index"]
        out_index = litert.get_output_details()[0]["index"]

        times: dict[str, list[float]] = {k: [] for k in
                                         ("qaccel load", "qaccel inference", "LiteRT invoke")}
        for _ in range(args.repeat):
            start = time.perf_counter()
            plan = load_run_plan(art, args.simulator)
            times["qaccel load"].append(time.perf_counter() - start)
            start = time.perf_counter()
            ours = plan.run(inputs)
            times["qaccel inference"].append(time.perf_counter() - start)
            start = time.perf_counter()
            litert.set_tensor(in_index, inputs[0])
            litert.invoke()
            theirs = litert.get_tensor(out_index)
            times["LiteRT invoke"].append(time.perf_counter() - start)
        exact = np.array_equal(ours[0], theirs) and ours[0].dtype == theirs.dtype

        process = {"qaccel-run (process)": [], "LiteRT (process)": []}
        for _ in range(args.repeat):
            process["qaccel-run (process)"].append(_timed([
                _tool("qaccel-run"), str(art), "--inputs", str(tmp / "x.npy"), "--outputs-dir",
                str(tmp / "y"), "--simulator", args.simulator,
            ]))  # fmt: skip
            process["LiteRT (process)"].append(_timed([
                sys.executable, "-c", _LITERT_CHILD, str(args.model), str(tmp / "x.npy"),
                str(tmp / "litert_y.npy"),
            ]))  # fmt: skip
        exact = exact and np.array_equal(np.load(tmp / "y" / "output_0.npy"),
                                         np.load(tmp / "litert_y.npy"))  # fmt: skip

    print(f"{args.model.name}, {args.repeat} runs each, simulator {args.simulator}")
    print(f"{'what':<28} {'best s':>8} {'median s':>9}")
    for name, ts in {**times, **process}.items():
        print(_row(name, ts))
    inf = min(times["qaccel inference"]) / min(times["LiteRT invoke"])
    proc = min(process["qaccel-run (process)"]) / min(process["LiteRT (process)"])
    print(f"inference / LiteRT invoke: {inf:.2f}x best (target <= 1.0x)")
    print(f"qaccel-run / LiteRT process: {proc:.2f}x best (target <= 1.5x)")
    print(f"outputs bit-exact with LiteRT: {exact}")


if __name__ == "__main__":
    main()
