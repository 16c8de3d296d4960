"""Instructions the C machine's fast path executes per inference, by kernel (callgrind).

    python benchmarks/bench_machine_kernels.py [MODEL.tflite] [--artifact OUTDIR]
                                               [--inputs N] [--kernel auto|c|avx2|...]
                                               [--top N]

MODEL defaults to MobileNetV2 1.0/224 (tests/fixtures/models/mobilenet_v2.tflite), compiled
with `qaccel-compile MODEL -o OUTDIR` unless `--artifact` names an artifact. The artifact's run
plan runs `--inputs` random inputs (default 1) under `valgrind --tool=callgrind`, collecting
inside `vta_execute` only: the accelerator functions' data work, what every input costs (the
program runner's host steps, program opening and Python are not counted). Printed: the
instructions per inference, and the `--top` C functions by their own instructions (code
inlined into a function counts for it). Instruction counts do not depend on the machine's
load, unlike wall time. callgrind counts each iteration of a `rep stos` as one instruction (a
memset of n bytes costs n). `--kernel` sets `QACCEL_CMACHINE_KERNEL`, which the C machine
reads for the program runner (e.g. `c`: the portable kernels).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "tests/fixtures/models/mobilenet_v2.tflite"

RUN_INPUTS = """
import sys
from qaccel.backends.vta.run_plan import load_run_plan
plan = load_run_plan(sys.argv[1])
assert plan is not None and plan.programs, "no run plan with programs"
for seed in range(int(sys.argv[2])):
    plan.run(plan.random_inputs(seed))
"""


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", nargs="?", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--artifact", type=Path)
    ap.add_argument("--inputs", type=int, default=1)
    ap.add_argument("--kernel", default=os.environ.get("QACCEL_CMACHINE_KERNEL", "auto"))
    ap.add_argument("--top", type=int, default=15)
    args = ap.parse_args()
    if shutil.which("valgrind") is None:
        sys.exit("valgrind is not installed")
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        outdir = args.artifact
        if outdir is None:
            outdir = tmp / "artifact"
            subprocess.run(["qaccel-compile", str(args.model), "-o", str(outdir), "--quiet"],
                           check=True)  # fmt: skip
        env = dict(os.environ, QACCEL_CMACHINE_KERNEL=args.kernel)
        out = tmp / "callgrind.out"
        # programs are opened (checked, timed) outside vta_execute: every counted
        # instruction is per-input data work
        cmd = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}",
               "--collect-atstart=no", "--toggle-collect=vta_execute",
               sys.executable, "-c", RUN_INPUTS, str(outdir), str(args.inputs)]  # fmt: skip
        done = subprocess.run(cmd, env=env, capture_output=True, text=True)
        if done.returncode != 0:
            sys.exit(f"callgrind failed:\n{done.stderr[-3000:]}")
        ann = subprocess.run(["callgrind_annotate", "--inclusive=no", str(out)],
                             capture_output=True, text=True, check=True).stdout  # fmt: skip
    runs = args.inputs
    total = None
    by_name: dict[str, int] = {}
    for line in ann.splitlines():
        m = re.match(r"\s*([\d,]+) \(\s*[\d.]+%\)\s+(PROGRAM TOTALS|\S+)", line)
        if not m:
            continue
        count = int(m.group(1).replace(",", ""))
        if m.group(2) == "PROGRAM TOTALS":
            total = count
        else:
            name = m.group(2).split(":")[-1]  # inlined header code counts for its caller
            by_name[name] = by_name.get(name, 0) + count
    if total is None:
        sys.exit("no totals in callgrind's output")
    print(f"kernel {args.kernel}: {total / runs / 1e6:.1f} M instructions per inference "
          f"(callgrind, inside vta_execute, {runs} inferences)")  # fmt: skip
    rows = sorted(((c, n) for n, c in by_name.items()), reverse=True)
    for count, name in rows[: args.top]:
        print(f"  {count / runs / 1e6:8.2f} M  {100 * count / total:5.1f}%  {name}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
