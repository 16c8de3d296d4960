"""The runtime of a compiled artifact against LiteRT's reference interpreter, same model and input.

    python benchmarks/bench_runtime.py [MODEL.tflite] [--artifact OUTDIR] [--config NAME]
                                       [--repeat N] [--simulator c|python]
    python benchmarks/bench_runtime.py --resnet50-proxy [--repeat N]

MODEL defaults to MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2.tflite), compiled
with `qaccel-compile MODEL -o OUTDIR` (default configuration) unless `--artifact` names an
existing artifact. `--resnet50-proxy` builds, without TensorFlow, an int8 model of ResNet-50
v1's shape (224x224 input, 7x7 stem, max pool, 3-4-6-3 bottlenecks with projection
shortcuts, mean, 1000-way FC, softmax; 4.1 GMACs) with random weights and quantization, for
when the real ResNet-50 (`tools/make_fixtures.py --only resnet50`, needs TensorFlow) is not
at hand. Best and median of N (default 5), runs of the two sides alternating so a
change in the machine's load affects both alike:

  inference  in this process: the artifact loaded once (`load_run_plan`), then inputs in,
             outputs out (`RunPlan.run`) — against LiteRT's `invoke()` (BUILTIN_REF, the
             interpreter built and its tensors allocated once). Target: qaccel <= LiteRT.
  load       `load_run_plan(OUTDIR)` (the plan, DRAM images and programs, hashes checked)
  process    whole processes: `qaccel-run OUTDIR --inputs X.npy --outputs-dir Y` against a
             Python that imports LiteRT, builds the BUILTIN_REF interpreter from the .tflite,
             sets X.npy, invokes once and saves the output. Target: qaccel <= 1.5x LiteRT.
             And `qaccel-run OUTDIR --runtime litert` (the dispatch model in LiteRT with our
             dispatch library) against the same. Target: <= 1.2x LiteRT.

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


def resnet50_proxy(seed: int = 0) -> bytes:
    """An int8 .tflite of ResNet-50 v1's shape with random weights (see the docstring)."""
    from qaccel.frontend.builder import (
        ModelBuilder,
        QParams,
        TensorSpec,
        bias_tensor,
        per_axis_qparams,
        weights_tensor,
    )

    rng = np.random.default_rng(seed)
    model = ModelBuilder("resnet50 proxy")
    g = model.subgraph("main")
    names = iter(range(10**6))

    def conv(x, xq, shape, cout, k, stride, act="RELU"):
        spread = 40.0 * np.sqrt(k * k * shape[3])  # weight scales that keep activations' scale
        w_q = per_axis_qparams(rng, cout, 0, (0.5 / spread, 1.0 / spread))
        n = next(names)
        y_q = QParams.per_tensor(xq.s * float(np.max(w_q.scale)) * spread,
                                 int(rng.integers(-20, 20)))  # fmt: skip
        oh, ow = -(-shape[1] // stride), -(-shape[2] // stride)
        out_shape = (1, oh, ow, cout)
        y = g.op("CONV_2D", [x, weights_tensor(f"w{n}", rng, (cout, k, k, shape[3]), w_q),
                             bias_tensor(f"b{n}", rng, xq, w_q, cout)],
                 TensorSpec(f"y{n}", out_shape, np.int8, y_q),
                 {"padding": "SAME", "stride_w": stride, "stride_h": stride,
                  "dilation_w_factor": 1, "dilation_h_factor": 1,
                  "fused_activation_function": act})  # fmt: skip
        return y, y_q, out_shape

    x_q = QParams.per_tensor(0.0078125, 0)
    x = g.input("image", (1, 224, 224, 3), np.int8, x_q)
    y, q, shape = conv(x, x_q, (1, 224, 224, 3), 64, 7, 2)
    shape = (1, 56, 56, 64)
    y = g.op("MAX_POOL_2D", [y], TensorSpec("pool", shape, np.int8, q),
             {"padding": "SAME", "stride_w": 2, "stride_h": 2, "filter_width": 3,
              "filter_height": 3, "fused_activation_function": "NONE"})  # fmt: skip
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for b in range(blocks):
            s = stride if b == 0 else 1
            a, aq, ashape = conv(y, q, shape, width, 1, s)
            a, aq, ashape = conv(a, aq, ashape, width, 3, 1)
            a, aq, ashape = conv(a, aq, ashape, 4 * width, 1, 1, act="NONE")
            if b == 0:
                short, sq, _ = conv(y, q, shape, 4 * width, 1, s, act="NONE")
            else:
                short, sq = y, q
            n = next(names)
            q = QParams.per_tensor(max(aq.s, sq.s) * 1.5, int(rng.integers(-20, 20)))
            y = g.op("ADD", [a, short], TensorSpec(f"add{n}", ashape, np.int8, q),
                     {"fused_activation_function": "RELU"})  # fmt: skip
            shape = ashape
    axes = g.const("axes", np.array([1, 2], np.int32))
    mq = QParams.per_tensor(q.s, q.zero_point[0])
    y = g.op("MEAN", [y, axes], TensorSpec("mean", (1, shape[3]), np.int8, mq),
             {"keep_dims": False})  # fmt: skip
    w_q = QParams.per_tensor(float(1.0 / (40.0 * np.sqrt(shape[3]))), 0)
    fq = QParams.per_tensor(mq.s, 0)
    y = g.op("FULLY_CONNECTED", [y, weights_tensor("fc_w", rng, (1000, shape[3]), w_q),
                                 bias_tensor("fc_b", rng, mq, w_q, 1000)],
             TensorSpec("logits", (1, 1000), np.int8, fq),
             {"fused_activation_function": "NONE"})  # fmt: skip
    y = g.op("SOFTMAX", [y], TensorSpec("probs", (1, 1000), np.int8,
                                        QParams.per_tensor(1 / 256, -128)), {"beta": 1.0})
    g.output(y)
    return model.build()


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
    ap.add_argument("--resnet50-proxy", action="store_true",
                    help="build and measure an int8 model of ResNet-50's shape (no TensorFlow)")
    args = ap.parse_args()

    from ai_edge_litert.interpreter import Interpreter, OpResolverType
    from qaccel.backends.vta.run_plan import load_run_plan

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        if args.resnet50_proxy:
            args.model = tmp / "resnet50_proxy.tflite"
            args.model.write_bytes(resnet50_proxy())
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

        process = {"qaccel-run (process)": [], "qaccel-run --runtime litert": [],
                   "LiteRT (process)": []}  # fmt: skip
        for _ in range(args.repeat):
            process["qaccel-run (process)"].append(_timed([
                _tool("qaccel-run"), str(art), "--inputs", str(tmp / "x.npy"), "--outputs-dir",
                str(tmp / "y"), "--simulator", args.simulator,
            ]))  # fmt: skip
            process["qaccel-run --runtime litert"].append(_timed([
                _tool("qaccel-run"), str(art), "--runtime", "litert", "--inputs",
                str(tmp / "x.npy"), "--outputs-dir", str(tmp / "y_litert"),
            ]))  # fmt: skip
            process["LiteRT (process)"].append(_timed([
                sys.executable, "-c", _LITERT_CHILD, str(args.model), str(tmp / "x.npy"),
                str(tmp / "litert_y.npy"),
            ]))  # fmt: skip
        for folder in ("y", "y_litert"):
            exact = exact and np.array_equal(np.load(tmp / folder / "output_0.npy"),
                                             np.load(tmp / "litert_y.npy"))  # fmt: skip

    print(f"{args.model.name}, {args.repeat} runs each, simulator {args.simulator}")
    print(f"{'what':<28} {'best s':>8} {'median s':>9}")
    for name, ts in {**times, **process}.items():
        print(_row(name, ts))
    inf = min(times["qaccel inference"]) / min(times["LiteRT invoke"])
    proc = min(process["qaccel-run (process)"]) / min(process["LiteRT (process)"])
    print(f"inference / LiteRT invoke: {inf:.2f}x best (target <= 1.0x)")
    print(f"qaccel-run / LiteRT process: {proc:.2f}x best (target <= 1.5x)")
    lite = min(process["qaccel-run --runtime litert"]) / min(process["LiteRT (process)"])
    print(f"qaccel-run --runtime litert / LiteRT process: {lite:.2f}x best (target <= 1.2x)")
    print(f"outputs bit-exact with LiteRT: {exact}")


if __name__ == "__main__":
    main()
