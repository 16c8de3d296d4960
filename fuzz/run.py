"""Coverage-guided fuzzing of qaccel's input boundaries with atheris (libFuzzer).

    python fuzz/run.py --seconds 600 --harness tflite     # one harness, ten minutes
    python fuzz/run.py --seconds 30                       # every harness, 30 s each
    python fuzz/run.py --harness isa --runs 1000000 --seconds 7200   # a 1 M-input campaign
    python fuzz/run.py --harness mlir --replay crash-abc  # re-run one input, no atheris

Harnesses (`fuzz/harnesses.py`): `tflite` (the importer), `mlir` (parse + verify +
dominance), `config` (`HardwareConfig.from_json`/`from_dict`), `isa` (decode, validate and
simulate with a small step budget). Each starts from its seed corpus in `fuzz/corpus/<name>/`
(never modified: new inputs go to a temporary folder) and stops at the first input that lets an
undocumented exception escape; the input is saved as `fuzz/crashes/<harness>-crash-<sha1>`.
Shows progress on stderr (a line when each chunk of executions starts and ends, and every 10 s
while one runs); prints, per harness, the executions done and whether it crashed; exits 1 if
any did.
Needs the `fuzz` extra (`pip install -e '.[fuzz]'`).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import itertools
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
NAMES = ("tflite", "mlir", "config", "isa")
# Executions per child process. atheris 3.0's comparison tracing leaks about 1 KB whenever an
# instrumented comparison yields a numpy array (the decoders and simulators compare arrays
# throughout: the isa harness grows by ~7 KB per input), so a long campaign restarts its child
# from the corpus it has grown, well before libFuzzer's 3 GB RSS limit.
CHUNK = 200_000
# The modules each harness exercises, imported under atheris's coverage instrumentation.
MODULES = {
    "tflite": ["qaccel.frontend.tflite_import"],
    "mlir": ["qaccel.dialects", "qaccel.dialects.ssa", "qaccel.tools.cli"],
    "config": ["qaccel.targets.vta.config"],
    "isa": ["qaccel.targets.vta.isa", "qaccel.targets.vta.simulator"],
}


def _child(name: str, libfuzzer_args: list[str]) -> None:
    """In a fresh process: instrument, then fuzz one harness (atheris.Fuzz never returns)."""
    import importlib

    import atheris

    with atheris.instrument_imports(include=["qaccel"]):
        for module in MODULES[name]:
            importlib.import_module(module)
    sys.path.insert(0, str(HERE))
    from harnesses import checked, harnesses

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 1000))
    atheris.Setup([sys.argv[0], *libfuzzer_args], checked(harnesses()[name]))
    atheris.Fuzz()


def fuzz(name: str, seconds: int, seed: int, runs: int | None, max_len: int,
         chunk: int = CHUNK) -> tuple[int, bool]:
    """(executions, crashed) of one harness's campaign: child processes of at most `chunk`
    executions each, every one starting from the corpus the previous ones grew."""
    crashes = HERE / "crashes"
    crashes.mkdir(exist_ok=True)
    executions, deadline = 0, time.monotonic() + seconds
    with tempfile.TemporaryDirectory(prefix=f"qaccel-fuzz-{name}-") as work:
        for part in itertools.count():
            left = int(deadline - time.monotonic())
            todo = chunk if runs is None else min(chunk, runs - executions)
            if left <= 0 or todo <= 0:
                break
            started = time.monotonic()
            progress(f"{name}: chunk {part + 1} (at most {todo} executions, {left} s left)")
            done, crashed = _fuzz_chunk(name, work, left, seed + part, todo, max_len)
            executions += done
            progress(f"{name}: chunk {part + 1} done: {done} executions in "
                     f"{time.monotonic() - started:.1f} s ({executions} in all)")  # fmt: skip
            if crashed:
                return executions, True
            if done == 0:
                break
    return executions, False


def _fuzz_chunk(name: str, work: str, seconds: int, seed: int, runs: int,
                max_len: int) -> tuple[int, bool]:  # fmt: skip
    crashes = HERE / "crashes"
    args = [f"-runs={runs}", f"-max_total_time={seconds}", f"-seed={seed}", f"-max_len={max_len}",
            f"-artifact_prefix={crashes}/{name}-", "-print_final_stats=1",
            "-timeout=20", "-rss_limit_mb=3072", work, str(HERE / "corpus" / name)]  # fmt: skip
    start = time.monotonic()
    child = subprocess.Popen([sys.executable, __file__, "--child", name, "--", *args],
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                             errors="replace")  # fmt: skip
    lines: list[str] = []
    seen, last_note = 0, start
    assert child.stdout is not None
    for line in child.stdout:  # libFuzzer's status lines: `#1024 pulse cov: ... exec/s: ...`
        lines.append(line)
        m = re.match(r"#(\d+)\s", line)
        if m:
            seen = int(m.group(1))
        now = time.monotonic()
        if now - last_note >= PROGRESS_EVERY:
            last_note = now
            progress(f"{name}: {seen} executions so far in this chunk, {now - start:.0f} s of "
                     f"at most {seconds} s")  # fmt: skip
    returncode = child.wait()
    log = "".join(lines)
    m = re.search(r"stat::number_of_executed_units:\s*(\d+)", log) or re.search(
        r"Done (\d+) runs", log)
    executions = int(m.group(1)) if m else seen
    crashed = returncode != 0
    if crashed:
        tail = "\n".join(log.strip().splitlines()[-25:])
        print(f"--- {name}: finding (exit {returncode}) ---\n{tail}", file=sys.stderr)
    return executions, crashed


PROGRESS_EVERY = 10.0
"""Seconds between two progress lines of a running chunk."""


def progress(message: str) -> None:
    print(f"fuzz/run.py: {message}", file=sys.stderr, flush=True)


def replay(name: str, paths: list[str]) -> int:
    sys.path.insert(0, str(HERE))
    from harnesses import checked, harnesses

    run = checked(harnesses()[name])
    for p in paths:
        run(Path(p).read_bytes())
        print(f"{p}: ok")
    return 0


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        _child(argv[1], argv[3:])
        return 0
    ap = argparse.ArgumentParser(prog="fuzz/run.py", description=__doc__.splitlines()[0])
    ap.add_argument("--harness", choices=(*NAMES, "all"), default="all")
    ap.add_argument("--seconds", type=int, default=60, help="per harness")
    ap.add_argument("--runs", type=int, default=None, help="stop after this many inputs")
    ap.add_argument("--chunk", type=int, default=CHUNK,
                    help="inputs per child process (each restarts from the grown corpus)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--max-len", type=int, default=4096, help="largest input in bytes")
    ap.add_argument("--replay", nargs="+", metavar="FILE", help="run these inputs, no atheris")
    args = ap.parse_args(argv)
    if args.replay:
        if args.harness == "all":
            ap.error("--replay needs one --harness")
        return replay(args.harness, args.replay)
    names = NAMES if args.harness == "all" else (args.harness,)
    failed = False
    for name in names:
        executions, crashed = fuzz(name, args.seconds, args.seed, args.runs, args.max_len,
                                   args.chunk)
        print(f"{name}: {executions} executions, {'FINDING' if crashed else 'no finding'}")
        failed |= crashed
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
