"""Fuzz the program runner (`backends/vta/program/`) with the seeded mutation driver
`program_fuzz.c`, built with AddressSanitizer and UBSan: mutated programs (values and
instruction fields, not only headers and tables, the checksum made right again) are opened,
given a state and run; anything but a one-line error or a run is a finding.

    python fuzz/program_fuzz.py --iterations 1000000 --seed 1 [--jobs 2] [--models a b ...]

The seed programs are those of fixture models (`tests/fixtures/models/`) compiled here with
`qaccel-compile` (every accelerator function whose program the LiteRT export writes, up to
`--max-bytes`). Prints the outcomes (error kinds with their counts), the executions and
executions/s per job and in total; exit status 1 on a finding. `tests/test_fuzz.py` runs a short
seeded campaign; `benchmarks/` keeps the long one's figures.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
MODELS = ROOT / "tests" / "fixtures" / "models"
DEFAULT_MODELS = ("small_cnn", "mlp", "pad_concat_slice", "residual", "composite")
SANITIZE = ("-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
            "-fno-sanitize-recover=all", "-std=c99", "-Wall", "-Wextra", "-Werror")  # fmt: skip
# bounds for the mutants: a changed count may ask for gigabytes or billions of steps
ENV = {"QACCEL_MEMORY_LIMIT": "256M", "QACCEL_STEP_LIMIT": "4M",
       "ASAN_OPTIONS": "abort_on_error=1:detect_leaks=1:allocator_may_return_null=1",
       "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}  # fmt: skip


def build(out: Path, cc: str = "gcc") -> Path:
    program, machine = ROOT / "backends" / "vta" / "program", ROOT / "targets" / "vta" / "machine"
    subprocess.run([cc, *SANITIZE, f"-I{program}", f"-I{machine}", str(HERE / "program_fuzz.c"),
                    str(program / "qaccel_program.c"), str(machine / "vta_machine.c"), "-o",
                    str(out), "-lm", "-lpthread"], check=True, capture_output=True, text=True)  # fmt: skip
    return out


def seed_programs(out_dir: Path, models=DEFAULT_MODELS, max_bytes: int = 1 << 18) -> list[Path]:
    """The programs of `models`' accelerator functions, one file each in `out_dir`."""
    from qaccel.backends.litert import aot
    from qaccel.frontend.tflite_writer import read_model
    from qaccel.tools.qaccel_compile import run

    paths = []
    for name in models:
        art = out_dir / name
        if run([str(MODELS / f"{name}.tflite"), "-o", str(art), "--quiet"]) != 0:
            continue
        model = art / aot.AOT_FILE
        if not model.is_file():
            continue
        sg = read_model(model.read_bytes()).subgraphs[0]
        for k, op in enumerate(o for o in sg.operators if o.custom_code == aot.CUSTOM_CODE):
            blob = bytes(sg.tensors[op.inputs[-1]].data_bytes())
            if len(blob) <= max_bytes:
                path = out_dir / f"{name}_{k}.program"
                path.write_bytes(blob)
                paths.append(path)
    return paths


def campaign(exe: Path, seeds: list[Path], iterations: int, seed: int, jobs: int) -> dict:
    """Run `iterations` executions split over `jobs` processes; their outcomes and figures."""
    per = [iterations // jobs + (k < iterations % jobs) for k in range(jobs)]
    start = time.perf_counter()
    procs = [subprocess.Popen([str(exe), str(seed + k), str(n), *map(str, seeds)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env={**os.environ, **ENV})
             for k, n in enumerate(per)]  # fmt: skip
    outcomes: dict[str, int] = {}
    findings, executions, opened, ran = [], 0, 0, 0
    for proc in procs:
        out, err = proc.communicate()
        if proc.returncode != 0 or "Sanitizer" in err or "runtime error" in err:
            findings.append(err[-4000:])
        for line in out.splitlines():
            m = re.match(r"executions (\d+) opened (\d+) ran (\d+)", line)
            if m:
                executions += int(m[1])
                opened += int(m[2])
                ran += int(m[3])
                continue
            count, _, text = line.partition(" ")
            if count.isdigit():
                outcomes[text] = outcomes.get(text, 0) + int(count)
    seconds = time.perf_counter() - start
    return {"executions": executions, "opened": opened, "ran": ran, "seconds": seconds,
            "per_second": executions / seconds if seconds else 0.0, "outcomes": outcomes,
            "findings": findings}  # fmt: skip


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--iterations", type=int, default=100_000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--models", nargs="*", default=list(DEFAULT_MODELS))
    ap.add_argument("--max-bytes", type=int, default=1 << 18)
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="qaccel-program-fuzz-") as tmp:
        tmp = Path(tmp)
        exe = build(tmp / "program_fuzz")
        seeds = seed_programs(tmp, args.models, args.max_bytes)
        print(f"{len(seeds)} seed programs: "
              + ", ".join(f"{p.stem} ({p.stat().st_size} B)" for p in seeds))  # fmt: skip
        result = campaign(exe, seeds, args.iterations, args.seed, args.jobs)
    for text, n in sorted(result["outcomes"].items(), key=lambda kv: -kv[1]):
        print(f"{n:>9} {text}")
    print(f"executions {result['executions']}, opened {result['opened']}, ran {result['ran']}, "
          f"{result['seconds']:.0f} s, {result['per_second']:.0f} executions/s, "
          f"findings {len(result['findings'])}")  # fmt: skip
    for f in result["findings"]:
        print(f, file=sys.stderr)
    return 1 if result["findings"] else 0


if __name__ == "__main__":
    sys.exit(main())
