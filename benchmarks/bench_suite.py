"""The whole test suite's time, and where it goes: the README's test command, timed.

    python benchmarks/bench_suite.py [--cold-cache] [--lit-only | --pytest-only] [--top N]
                                     [-- PYTEST_ARGS... (default: tests)]

Runs `lit -s tests/filecheck`, then `pytest tests` (the project's own settings: both cores,
whole files per worker), in this checkout, and prints:
  - each command's wall time and CPU seconds (its processes and every child they waited for),
    with the load average before and after (the machine may be shared: the CPU seconds and the
    sum of per-test times depend less on the load than the wall time does);
  - for pytest, the sum of the per-test times (setup, call and teardown; a module-scoped
    fixture counts in its first test), each worker's busy time and last finish, and the
    longest files (their tests' time on the worker, and CPU seconds);
  - the `LONG_FILES` table for tests/conftest.py (longest files first), from this run.
`--cold-cache` points QACCEL_CACHE_DIR at an empty directory, as on a new machine (the C
libraries are then built in the run). Timings belong in reports, never in tests.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

_PLUGIN = '''
import json, os, resource, time
import pytest

_rows = []


def _cpu():
    s = resource.getrusage(resource.RUSAGE_SELF)
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):
    cpu, start = _cpu(), time.time()
    yield
    _rows.append([item.nodeid, time.time() - start, _cpu() - cpu, start])


def pytest_sessionfinish(session):
    folder = os.environ.get("BENCH_SUITE_DIR")
    if folder:
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        with open(os.path.join(folder, worker + ".json"), "w") as f:
            json.dump(_rows, f)
'''


def _children_cpu() -> float:
    c = resource.getrusage(resource.RUSAGE_CHILDREN)
    return c.ru_utime + c.ru_stime


def _timed(cmd: list[str], env: dict[str, str]) -> tuple[float, float, int]:
    cpu, start = _children_cpu(), time.perf_counter()
    done = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start, _children_cpu() - cpu, done.returncode


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cold-cache", action="store_true")
    parser.add_argument("--lit-only", action="store_true")
    parser.add_argument("--pytest-only", action="store_true")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("pytest_args", nargs="*")
    args = parser.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-suite-"))
    env = dict(os.environ)
    if args.cold_cache:
        env["QACCEL_CACHE_DIR"] = str(work / "cache")
    failed = 0
    total_wall = 0.0
    if not args.pytest_only:
        load = _load()
        wall, cpu, rc = _timed(["lit", "-s", str(ROOT / "tests" / "filecheck")], env)
        total_wall += wall
        failed |= rc
        print(f"lit:    {wall:7.1f} s wall {cpu:7.1f} s CPU  exit {rc}  "
              f"load {load} -> {_load()}")  # fmt: skip
    if args.lit_only:
        return failed
    (work / "bench_suite_plugin.py").write_text(_PLUGIN)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(work), env.get("PYTHONPATH")]))
    env["BENCH_SUITE_DIR"] = str(work)
    load = _load()
    wall, cpu, rc = _timed([sys.executable, "-m", "pytest", *(args.pytest_args or ["tests"]),
                            "-p", "bench_suite_plugin"], env)  # fmt: skip
    total_wall += wall
    failed |= rc
    print(f"pytest: {wall:7.1f} s wall {cpu:7.1f} s CPU  exit {rc}  load {load} -> {_load()}")
    if not args.pytest_only:
        print(f"both:   {total_wall:7.1f} s wall")

    per_file: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0, 0])
    workers = {}
    for path in sorted(work.glob("*.json")):
        rows = json.loads(path.read_text())
        if not rows:
            continue
        busy = sum(r[1] for r in rows)
        first = min(r[3] for r in rows)
        last = max(r[3] + r[1] for r in rows)
        workers[path.stem] = (busy, last - first)
        for nodeid, seconds, cpu_s, _start in rows:
            entry = per_file[nodeid.split("::")[0]]
            entry[0] += seconds
            entry[1] += cpu_s
            entry[2] += 1
    print(f"sum of per-test times {sum(e[0] for e in per_file.values()):.1f} s, "
          f"CPU {sum(e[1] for e in per_file.values()):.1f} s, "
          f"{sum(e[2] for e in per_file.values())} tests in {len(per_file)} files")  # fmt: skip
    for name, (busy, span) in sorted(workers.items()):
        print(f"  {name}: busy {busy:7.1f} s, first start to last finish {span:7.1f} s")
    longest = sorted(per_file.items(), key=lambda kv: -kv[1][0])[: args.top]
    print(f"{'seconds':>8} {'CPU s':>8} {'tests':>5}  file")
    for name, (seconds, cpu_s, count) in longest:
        print(f"{seconds:8.1f} {cpu_s:8.1f} {count:5d}  {name}")
    print("LONG_FILES: dict[str, float] = {")
    for name, (seconds, _cpu_s, _count) in longest:
        print(f'    "{Path(name).name}": {seconds:.0f},')
    print("}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
