"""The classic TFLite delegate (libqaccel_delegate) on every fixture and corpus model: bit-exact
with BUILTIN_REF, proof that it ran, and its times.

    python benchmarks/bench_delegate.py [MODEL.tflite ...] [--out DIR] [--repeat N] [--json F]
                                        [--reuse]

Every model (default: tests/fixtures/models/*.tflite and tests/fixtures/corpus/*.tflite) is
compiled with `qaccel-compile MODEL -o DIR/FOLDER/NAME` (again on every run, so the artifact
is today's compiler's; `--reuse` keeps one an earlier run left there; it writes
partitions.json and programs/), its partitions.json annotated (`annotate_partitions`: the
model's operator codes and boundary tensors, for the delegate's checks), and run with LiteRT's
Interpreter under the BUILTIN_REF resolver with the delegate loaded from the artifact, in a
forked child, on two input sets: the committed inputs of a corpus model (compared with its
committed BUILTIN_REF outputs), random ones for a fixture (compared with LiteRT's BUILTIN_REF
run in a subprocess). A model passes when every output is bit-exact and every delegate kernel
ran once per input set.

Per model: partitions delegated (qaccel-compile says which accelerator functions stay on the
CPU and why) and claimed nodes, `load` (load_delegate: partitions.json and the programs read,
hashed and checked), `prepare` (Interpreter(...) with the delegate, its Prepare and
allocate_tensors included), `cpu` (load + prepare in CPU time: their cost on an idle machine,
since wall times on a shared machine include waiting for a core), the first and the median of
the next `--repeat` invokes (default 5) with the delegate, and the median invoke of the plain
BUILTIN_REF interpreter in the same child. Target: load + prepare < 0.2 s (idle machine) for
MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2).

Then the delegate without the artifact, compiling on the spot (`load_delegate(path, {})`: each
subgraph's Prepare describes it and hands it to qaccel's compiler): bit-exact with the same
reference, every kernel run, and the same nodes claimed as the artifact's partitions
(else the status says how many it claimed); `spot` is its load + prepare with an empty compile
cache (a fresh QACCEL_PLUGIN_CACHE: the whole compile), `cached` the same in a new process with
that cache filled (the description made and hashed, the programs read back and opened), each
in wall and in CPU time. `--no-spot` skips it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
# Not runnable by qaccel-compile (its own tests say why): int16x8 is refused at import; the
# collapsed MobileNetV2 is a partitioning fixture.
SKIP = {"int16x8", "mobilenetv2_035_96_collapsed"}


def _inputs(model: Path) -> tuple[list[list[np.ndarray]], list | None]:
    ref = model.with_suffix(".ref.npz")
    if ref.is_file():
        from qaccel.explore.conformance import committed_reference

        inputs, result = committed_reference(ref)
        return inputs[:2], result.outputs[:2]
    from qaccel.frontend.tflite_writer import read_model

    sg = read_model(model.read_bytes()).subgraphs[0]
    rng = np.random.default_rng(0)
    sets = []
    for _ in range(2):
        xs = []
        for i in sg.inputs:
            t = sg.tensors[i]
            if np.dtype(t.dtype).kind == "f":
                xs.append(rng.standard_normal(t.shape).astype(t.dtype))
            else:
                info = np.iinfo(t.dtype)
                xs.append(rng.integers(info.min, info.max + 1, t.shape).astype(t.dtype))
        sets.append(xs)
    return sets, None


def _timed_child(model: str, artifact: str, input_sets, repeat: int) -> dict:
    """In the child: the delegate run, then more invokes, then plain BUILTIN_REF."""
    from ai_edge_litert.interpreter import Interpreter, OpResolverType

    from qaccel.backends.litert.delegate import delegate_run

    result = delegate_run(model, artifact, [input_sets[0]] * (1 + repeat))
    first, rest = result["invoke_s"][0], result["invoke_s"][1:]
    ran = delegate_run(model, artifact, input_sets)
    interp = Interpreter(model_path=model, experimental_op_resolver_type=OpResolverType.BUILTIN_REF)
    interp.allocate_tensors()
    for d, x in zip(interp.get_input_details(), input_sets[0]):
        interp.set_tensor(d["index"], x)
    ref = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        interp.invoke()
        ref.append(time.perf_counter() - t0)
    return {"outputs": ran["outputs"], "counters": ran["counters"], "load_s": result["load_s"],
            "prepare_s": result["prepare_s"], "first_s": first,
            "setup_cpu_s": result["load_cpu_s"] + result["prepare_cpu_s"],
            "invoke_s": statistics.median(rest), "ref_s": statistics.median(ref)}


def _every_kernel_ran(c: dict, runs: int) -> bool:
    """Every kernel ran, each at least once per run (once per iteration in a loop body)."""
    return (c.get("kernels_ran", c["kernels"]) == c["kernels"]
            and c["invocations"] >= c["kernels"] * runs
            and (c["kernels"] > 0) == (c["partitions"] > 0))


def _spot_child(model: str, input_sets, cache: str) -> dict:
    """In the child: the delegate compiling on the spot with the compile cache `cache`."""
    import os

    from qaccel.backends.litert.delegate import delegate_run

    os.environ["QACCEL_PLUGIN_CACHE"] = cache
    r = delegate_run(model, None, input_sets)
    return {"outputs": r["outputs"], "counters": r["counters"],
            "setup_s": r["load_s"] + r["prepare_s"],
            "setup_cpu_s": r["load_cpu_s"] + r["prepare_cpu_s"]}


def spot(model: Path, inputs, expected, claimed: int | None) -> dict:
    import tempfile

    from qaccel.backends.litert.isolated import run_isolated

    with tempfile.TemporaryDirectory() as cache:
        cold = run_isolated(_spot_child, str(model), inputs, cache)
        warm = run_isolated(_spot_child, str(model), inputs[:1], cache)
    exact = all(np.array_equal(a, b) for r in (cold, warm)
                for got, want in zip(r["outputs"], expected) for a, b in zip(got, want))  # fmt: skip
    c = cold["counters"]
    ran = _every_kernel_ran(c, len(inputs))
    return {"spot_status": "ok" if exact and ran else ("not bit-exact" if not exact else
                                                       "delegate did not run every kernel"),
            "spot_same": claimed is None or c["claimed_nodes"] == claimed,
            "spot_claimed": c["claimed_nodes"], "spot_subgraphs": c["compiled_subgraphs"],
            "spot_s": cold["setup_s"], "cached_s": warm["setup_s"],
            "spot_cpu_s": cold["setup_cpu_s"], "cached_cpu_s": warm["setup_cpu_s"]}  # fmt: skip


def bench(model: Path, out: Path, repeat: int, on_the_spot: bool = True,
          reuse: bool = False) -> dict:  # fmt: skip
    from qaccel.backends.litert.delegate import annotate_partitions
    from qaccel.backends.litert.isolated import run_isolated
    from qaccel.backends.litert.oracle import run_reference
    from qaccel.tools.qaccel_compile import run as compile_run

    artifact = out / model.parent.name / model.stem
    if not (reuse and (artifact / "manifest.json").is_file()):
        if compile_run([str(model), "-o", str(artifact), "--quiet"]) != 0:
            return {"model": model.stem, "status": "compile failed"}
    if not (artifact / "partitions.json").is_file():
        return {"model": model.stem, "status": "no partitions.json"}
    if "op_codes" not in (artifact / "partitions.json").read_text():
        annotate_partitions(artifact)
    inputs, expected = _inputs(model)
    if expected is None:
        expected = run_reference(model, inputs, keep_all_tensors=False).outputs
    r = run_isolated(_timed_child, str(model), str(artifact), inputs, repeat)
    exact = all(np.array_equal(a, b) for got, want in zip(r["outputs"], expected)
                for a, b in zip(got, want))  # fmt: skip
    c = r["counters"]
    ran = _every_kernel_ran(c, len(inputs))
    row = {"model": model.stem, "status": "ok" if exact and ran else
           ("not bit-exact" if not exact else "delegate did not run every kernel"),
           **c,
           **{k: r[k] for k in ("load_s", "prepare_s", "setup_cpu_s", "first_s", "invoke_s",
                                "ref_s")}}  # fmt: skip
    if on_the_spot:
        row.update(spot(model, inputs, expected, c["claimed_nodes"]))
        if row["spot_status"] != "ok" or not row["spot_same"]:
            row["status"] = f"on the spot: {row['spot_status']}" + (
                "" if row["spot_same"] else f", claimed {row['spot_claimed']} nodes")
    return row


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "out" / "delegate")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--json", type=Path)
    ap.add_argument("--no-spot", action="store_true", help="only the delegate with the artifact")
    ap.add_argument("--reuse", action="store_true",
                    help="keep an artifact an earlier run compiled (it may be an older compiler's)")
    args = ap.parse_args(argv)
    models = args.models or sorted(
        p for d in (FIXTURES / "models", FIXTURES / "corpus") for p in d.glob("*.tflite")
        if p.stem not in SKIP)  # fmt: skip
    args.out.mkdir(parents=True, exist_ok=True)
    rows = []
    print(f"{'model':20} {'status':8} {'parts':>5} {'nodes':>5} {'load ms':>8} "
          f"{'prep ms':>8} {'cpu ms':>8} {'1st ms':>8} {'inv ms':>8} {'ref ms':>8} "
          f"{'spot ms':>8} {'cpu ms':>8} {'cached':>8} {'cpu ms':>8}")  # fmt: skip
    for model in models:
        try:
            row = bench(model, args.out, args.repeat, not args.no_spot, args.reuse)
        except Exception as e:  # noqa: BLE001  one row per model, whatever happened
            row = {"model": model.stem, "status": f"error: {str(e).splitlines()[0][:60]}"}
        rows.append(row)
        if "load_s" in row:
            print(f"{row['model']:20} {row['status']:8} {row['partitions']:5} "
                  f"{row['claimed_nodes']:5} {1e3 * row['load_s']:8.1f} "
                  f"{1e3 * row['prepare_s']:8.1f} {1e3 * row['setup_cpu_s']:8.1f} "
                  f"{1e3 * row['first_s']:8.1f} "
                  f"{1e3 * row['invoke_s']:8.1f} {1e3 * row['ref_s']:8.1f}"
                  + (f" {1e3 * row['spot_s']:8.1f} {1e3 * row['spot_cpu_s']:8.1f}"
                     f" {1e3 * row['cached_s']:8.1f} {1e3 * row['cached_cpu_s']:8.1f}"
                     if "spot_s" in row else ""), flush=True)
        else:
            print(f"{row['model']:20} {row['status']}", flush=True)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    bad = [r["model"] for r in rows if r["status"] != "ok"]
    print(f"{len(rows) - len(bad)}/{len(rows)} bit-exact with the delegate running"
          + (f"; failed: {', '.join(bad)}" if bad else ""))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
