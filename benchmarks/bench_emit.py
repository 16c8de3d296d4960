"""CPU time of codegen's emission (`compile_module`) alone, in one process, cold caches.

    python benchmarks/bench_emit.py [--repeat N] [--jobs 1|2] [MODEL.tflite ...]

Each model (default: MobileNetV2 1.0/224, tests/fixtures/models/mobilenet_v2.tflite) is
imported and run through `vta-pipeline` once; then `compile_module` runs N times (default 5)
on the scheduled module, with the emitters' micro-op kernel caches emptied before each run
(so every run is as cold as a fresh `qaccel-compile`). The table gives this process's best
and median CPU seconds, the CPU seconds of any forked children (none: the emission runs in
one process; `--jobs 2`, the default, allows them as `qaccel-compile` does, `--jobs 1` sets
`QACCEL_COMPILE_JOBS=1`), and the best wall seconds. CPU time is the figure to compare on a
loaded machine; `bench_compile.py --phases` puts the phase in the whole compile. With
`QACCEL_NO_CSTREAM=1` the streams are emitted and resolved by the Python references (the C
library's share of the figure); with `QACCEL_NO_CGEMM=1` only the GEMM layers' step loop runs
in Python (`vta_gemm_emit`'s share).
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT = ROOT / "tests/fixtures/models/mobilenet_v2.tflite"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def measure(model: Path, repeat: int) -> dict:
    import qaccel.lowering.vta.emit as emit
    from qaccel.backends.vta.codegen import compile_module
    from qaccel.dialects.macs import model_macs
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import available_passes, qaccel_context
    from qaccel.tools import qaccel_compile as qc
    from qaccel.tools.qaccel_opt import pass_manager_for

    data = model.read_bytes()
    module = import_tflite(data, str(model))
    macs = model_macs(module)
    args = qc.parser().parse_args([str(model), "-o", "unused"])
    manager, _ = pass_manager_for(args, available_passes(), "bench_emit")
    manager.verify_each = False
    manager.run(qaccel_context(), module)
    cpu, child, wall = [], [], []
    layers = 0
    for _ in range(repeat):
        for cache in ("_KERNELS", "_RELATIVE"):  # the micro-op kernels shared by layers
            getattr(emit, cache, {}).clear()
        c0, k0, w0 = time.process_time(), _children_cpu(), time.perf_counter()
        compiled = compile_module(module, total_macs=macs)
        wall.append(time.perf_counter() - w0)
        cpu.append(time.process_time() - c0)
        child.append(_children_cpu() - k0)
        layers = sum(len(f.layers) for f in compiled.functions.values())
    return {"cpu": cpu, "child": child, "wall": wall, "layers": layers}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("models", nargs="*", type=Path, default=[DEFAULT])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--jobs", type=int, choices=(1, 2), default=2)
    args = ap.parse_args()
    if args.jobs == 1:
        os.environ["QACCEL_COMPILE_JOBS"] = "1"
    from qaccel.kernels import background
    from qaccel.tools.cli import fewer_collections

    background.allow()  # as qaccel-compile's process
    print(f"{'model':28} {'layers':>6} {'CPU best':>9} {'median':>7} {'child':>6} {'wall best':>9}")
    with fewer_collections():  # as qaccel-compile's main()
        for model in args.models:
            if not model.exists():
                sys.exit(f"bench_emit: {model}: no such file")
            r = measure(model, args.repeat)
            print(f"{model.name:28} {r['layers']:6d} {min(r['cpu']):9.3f} "
                  f"{statistics.median(r['cpu']):7.3f} {statistics.median(r['child']):6.3f} "
                  f"{min(r['wall']):9.3f}")  # fmt: skip


if __name__ == "__main__":
    main()
