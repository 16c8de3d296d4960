"""Per-inference time of a compiled model: the Python runtime vs. the generated C driver.

    python benchmarks/bench_cdriver.py [MODEL.tflite] [--config NAME] [--repeat N]

Compiles MODEL (default MobileNetV2, tests/fixtures/models/mobilenet_v2.tflite) for the VTA,
writes the artifact to a temporary folder, builds its C driver (or takes it from the cache),
then times `run_compiled` (`qaccel-run OUTDIR --driver python`: the host program on the
interpreter, every layer on libqaccel_vta through numpy) and `run_compiled_c` (`--driver c`:
every accelerator function's program, driver/<fn>.qprog, through the runner and the program
runner on libqaccel_vta) on the same
inputs, after one warm-up run each; prints the best and median of N runs and checks that the
outputs agree. Start-up (import, artifact load, library build) is excluded and printed apart.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np

from qaccel.backends.vta import cdriver_runtime as cdr
from qaccel.backends.vta.artifact import load_artifact, write_artifact
from qaccel.backends.vta.runtime import run_compiled
from qaccel.interpreter.interpreter import entry_function, random_inputs
from qaccel.targets.vta.config import HardwareConfig
from qaccel.tools.qaccel_compile import compile_model

MOBILENET = Path(__file__).parents[1] / "tests" / "fixtures" / "models" / "mobilenet_v2.tflite"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", type=Path, default=MOBILENET)
    ap.add_argument("--config", default="vta-default")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    config = HardwareConfig.from_json(args.config)
    compiled, data = compile_model(args.model, "vta-pipeline", config_path=Path(args.config))
    with tempfile.TemporaryDirectory() as tmp:
        write_artifact(compiled, tmp, data)
        loaded = load_artifact(tmp)
        start = time.perf_counter()
        runner = cdr.open_runner(loaded, tmp)
        print(f"C driver library ready in {time.perf_counter() - start:.2f} s "
              f"(built, or from the cache)")  # fmt: skip
        inputs = random_inputs(entry_function(loaded.module), 0)
        results = {}
        for name, run in (("python", lambda: run_compiled(loaded, inputs)),
                          ("c", lambda: cdr.run_compiled_c(loaded, inputs, runner=runner))):  # fmt: skip
            run()
            times = []
            for _ in range(args.repeat):
                t = time.perf_counter()
                results[name] = run()
                times.append(time.perf_counter() - t)
            times.sort()
            print(f"--driver {name:6s} per inference: best {times[0] * 1e3:.0f} ms, "
                  f"median {times[len(times) // 2] * 1e3:.0f} ms")  # fmt: skip
        same = all(np.array_equal(a, b) for a, b in zip(results["python"], results["c"]))
        print(f"outputs identical: {same}; {args.model.name} on {config.name}")


if __name__ == "__main__":
    main()
