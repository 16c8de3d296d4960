"""A mutation campaign over compiled artifacts: `qaccel-run OUTDIR` on thousands of damaged,
forged and hostile copies of one artifact, every way it runs one (the run plan, and LiteRT with
the dispatch library and with the custom-op kernel).

    python benchmarks/bench_artifact_mutations.py [--mutants N] [--seconds S] [--seed K]
                                                   [--model M.tflite] [--ways plan,dispatch,custom-op]

Each mutant is a copy of the artifact with one mutation, drawn from a seeded generator:

  flip      bytes of one file changed (the manifest left as it was)
  forge     bytes of one file changed and the manifest's hash made to agree (what an attacker
            does: the run may give other outputs, it must not misbehave)
  json      a key of manifest.json or runtime.json deleted, or its value replaced by another
            type, a huge or negative number, or a path (`/etc/passwd`, `../x`, `/dev/zero`)
            (hashes made to agree)
  module    the run plan's kernels say to import `payload_of_artifact`, a module that exists
            in the working directory and writes a marker when imported
  node      a file replaced by a symbolic link to a file outside, a FIFO, or removed

and is run in a forked child of this process (imports done once) with a time limit. Verdicts:

  same       exit 0, outputs equal the unmutated artifact's
  refused    exit 1 with exactly one line `qaccel-run: error: ...`
  different  exit 0, other outputs, after a forged change (allowed)
  SILENT     exit 0, other outputs, after a change of a hashed file the manifest does not
             vouch for (must be 0)
  TRACEBACK  a traceback or more than one line on stderr (must be 0)
  HANG       over the time limit (must be 0)
  CRASH      killed by a signal (must be 0)
  CODE       the payload module ran (must be 0)
  OUTSIDE    a file outside the artifact was opened (strace, when installed; must be 0)

Prints the table of verdicts per way and mutation kind, and the first example of each bad one.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import io
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_MODEL = ROOT / "tests/fixtures/models/small_cnn.tflite"
WAYS = {
    "plan": [],
    "dispatch": ["--runtime", "litert", "--litert-path", "dispatch"],
    "custom-op": ["--runtime", "litert", "--litert-path", "custom-op"],
}
FOCUS = {"dispatch": "model.qaccel.dispatch.tflite", "custom-op": "model.qaccel.tflite"}
BAD = ("SILENT", "TRACEBACK", "HANG", "CRASH", "CODE", "OUTSIDE")
HOSTILE_VALUES = [None, -1, 2**62, "", "x", [], {}, 3.5, "/etc/passwd", "../outside.bin",
                  "/dev/zero", "vta_fn_0/../../x"]  # fmt: skip


def _rehash(root: Path, rel: str) -> None:
    manifest = json.loads((root / "manifest.json").read_text())
    if isinstance(manifest.get("files"), dict) and (root / rel).is_file():
        manifest["files"][rel] = hashlib.sha256((root / rel).read_bytes()).hexdigest()
        (root / "manifest.json").write_text(json.dumps(manifest))


def _paths(obj, prefix=()):
    """Every (path, value) inside a JSON document."""
    yield prefix, obj
    if isinstance(obj, dict):
        for k, v in obj.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(obj, list):
        for i, v in enumerate(obj):
            yield from _paths(v, prefix + (i,))


def mutate(root: Path, rng: random.Random, outside: Path, focus: str | None) -> tuple[str, bool]:
    """Apply one mutation to the artifact at `root`; (kind, vouched) where vouched says the
    manifest's hashes still vouch for every changed file (a SILENT change is then no bug).
    Half of the byte changes hit `focus` (the file the way under test reads), if given."""
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    kind = rng.choice(["flip", "forge", "json", "json", "module", "node"])
    if kind in ("flip", "forge"):
        rel = rng.choice([f for f in files if f != "manifest.json"])
        if focus is not None and rng.random() < 0.5:
            rel = focus
        data = bytearray((root / rel).read_bytes())
        if data:
            for _ in range(rng.choice([1, 1, 2, 8])):
                data[rng.randrange(len(data))] = rng.randrange(256)
        (root / rel).write_bytes(bytes(data))
        if kind == "forge":
            _rehash(root, rel)
        return kind, kind == "forge"
    if kind == "json":
        name = rng.choice(["manifest.json", "runtime.json"])
        if not (root / name).is_file():
            name = "manifest.json"
        doc = json.loads((root / name).read_text())
        paths = [p for p, _ in _paths(doc) if p]
        path = rng.choice(paths)
        parent = doc
        for k in path[:-1]:
            parent = parent[k]
        if isinstance(parent, dict) and rng.random() < 0.4:
            del parent[path[-1]]
        else:
            parent[path[-1]] = rng.choice(HOSTILE_VALUES)
        (root / name).write_text(json.dumps(doc))
        if name == "runtime.json":
            _rehash(root, name)
        return kind, True
    if kind == "module":
        if (root / "runtime.json").is_file():
            plan = json.loads((root / "runtime.json").read_text())
            for f in plan.get("functions", {}).values():
                for step in f.get("steps", []):
                    if step[0] == "kernel":
                        step[3]["module"] = "payload_of_artifact"
                        if rng.random() < 0.3:
                            step[3]["name"] = "payload_of_artifact"
            (root / "runtime.json").write_text(json.dumps(plan))
            _rehash(root, "runtime.json")
        return kind, True
    rel = rng.choice([f for f in files if f != "manifest.json"])
    (root / rel).unlink()
    choice = rng.randrange(3)
    if choice == 0:
        os.symlink(outside, root / rel)
    elif choice == 1:
        os.mkfifo(root / rel)
    return kind, True


def _child_run(args: list[str], out: Path) -> None:
    """In a forked child: qaccel-run's main with stdout/stderr in files."""
    code = 0
    with open(out / "stdout", "w") as so, open(out / "stderr", "w") as se:
        os.dup2(so.fileno(), 1)
        os.dup2(se.fileno(), 2)
        sys.stdout = io.TextIOWrapper(os.fdopen(1, "wb", closefd=False), write_through=True)
        sys.stderr = io.TextIOWrapper(os.fdopen(2, "wb", closefd=False), write_through=True)
        try:
            from qaccel.tools.qaccel_run import main

            main(args)
        except SystemExit as e:
            code = e.code if isinstance(e.code, int) else 1
        except BaseException:  # noqa: BLE001
            import traceback

            traceback.print_exc()
            code = 2
        sys.stdout.flush()
        sys.stderr.flush()
    os._exit(code)


def run_once(args: list[str], out: Path, timeout: float) -> tuple[str, int | None]:
    """('exit', code) / ('signal', n) / ('hang', None)."""
    out.mkdir(parents=True, exist_ok=True)
    pid = os.fork()
    if pid == 0:
        _child_run(args, out)
    deadline = time.monotonic() + timeout
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            if os.WIFSIGNALED(status):
                return "signal", os.WTERMSIG(status)
            return "exit", os.waitstatus_to_exitcode(status)
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "hang", None
        time.sleep(0.005)


def verdict(result, out: Path, baseline: list[np.ndarray], vouched: bool,
            marker: Path) -> str:  # fmt: skip
    how, code = result
    if marker.exists():
        marker.unlink()
        return "CODE"
    if how == "hang":
        return "HANG"
    if how == "signal":
        return "CRASH"
    err = (out / "stderr").read_text(errors="replace")
    ours = [ln for ln in err.splitlines() if ln.strip() and not ln.startswith(("INFO:", "WARNING:"))]
    if "Traceback" in err or len(ours) > 1:
        return "TRACEBACK"
    if code == 1 and len(ours) == 1 and ours[0].startswith("qaccel-run: error: "):
        return "refused"
    if code != 0:
        return "TRACEBACK"
    try:
        got = [np.load(out / "o" / f"output_{i}.npy") for i in range(len(baseline))]
    except OSError:
        return "TRACEBACK"
    if all(np.array_equal(a, b) for a, b in zip(got, baseline)):
        return "same"
    return "different" if vouched else "SILENT"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=DEFAULT_MODEL)
    ap.add_argument("--mutants", type=int, default=3000)
    ap.add_argument("--seconds", type=float, default=1800.0)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--timeout", type=float, default=20.0, help="per run, seconds")
    ap.add_argument("--ways", default=",".join(WAYS))
    ap.add_argument("--strace", action="store_true",
                    help="also run every mutant under strace and count opens outside (slow)")
    args = ap.parse_args()
    ways = args.ways.split(",")

    from qaccel.tools import qaccel_compile

    work = Path(tempfile.mkdtemp(prefix="qaccel-mutants-"))
    marker = work / "payload-ran"
    (work / "payload_of_artifact.py").write_text(f"open({str(marker)!r}, 'w').close()\n")
    sys.path.insert(0, str(work))
    os.chdir(work)
    outside = work / "outside-secret.bin"
    outside.write_bytes(b"\x00" * 4096)
    art = work / "artifact"
    with contextlib.redirect_stdout(io.StringIO()):
        try:
            qaccel_compile.main([str(args.model), "-o", str(art), "--quiet"])
        except SystemExit as e:
            if e.code:
                sys.exit(f"bench_artifact_mutations: cannot compile {args.model}")
    import qaccel.tools.qaccel_run  # noqa: F401  (imported once, before the forks)

    baselines = {}
    for way in ways:
        out = work / f"base-{way}"
        result = run_once([str(art), *WAYS[way], "--random-inputs", "0", "--outputs-dir",
                           str(out / "o")], out, args.timeout)  # fmt: skip
        if result != ("exit", 0):
            sys.exit(f"bench_artifact_mutations: the unmutated artifact fails the {way} way: "
                     f"{(out / 'stderr').read_text()[-300:]}")  # fmt: skip
        baselines[way] = [np.load(p) for p in sorted((out / "o").glob("output_*.npy"))]

    rng = random.Random(args.seed)
    table: dict[tuple[str, str], Counter] = defaultdict(Counter)
    examples: dict[str, str] = {}
    start = time.monotonic()
    n = 0
    while n < args.mutants and time.monotonic() - start < args.seconds:
        way = ways[n % len(ways)]
        copy = work / "m"
        shutil.rmtree(copy, ignore_errors=True)
        shutil.copytree(art, copy, symlinks=True)
        kind, vouched = mutate(copy, rng, outside, FOCUS.get(way))
        out = work / "run"
        shutil.rmtree(out, ignore_errors=True)
        cmd = [str(copy), *WAYS[way], "--random-inputs", "0", "--outputs-dir", str(out / "o")]
        v = verdict(run_once(cmd, out, args.timeout), out, baselines[way], vouched, marker)
        if args.strace and v not in ("HANG", "CRASH") and shutil.which("strace"):
            log = work / "strace.log"
            subprocess.run(["strace", "-f", "-qq", "-e", "trace=open,openat", "-o", str(log),
                            sys.executable, "-c", "import sys; from qaccel.tools.qaccel_run "
                            "import main; main(sys.argv[1:])", *cmd],
                           capture_output=True, timeout=args.timeout * 3, check=False)  # fmt: skip
            if str(outside) in log.read_text(errors="replace"):
                v = "OUTSIDE"
        table[(way, kind)][v] += 1
        if v in BAD and v not in examples:
            examples[v] = (f"{way} {kind}: "
                           f"{(out / 'stderr').read_text(errors='replace')[-400:]!r}")
        n += 1
    elapsed = time.monotonic() - start

    verdicts = ["same", "refused", "different", *BAD]
    print(f"{n} mutants of {args.model.name} in {elapsed:.0f} s (seed {args.seed})")
    print(f"{'way':<10} {'kind':<7} " + " ".join(f"{v:>9}" for v in verdicts))
    totals: Counter = Counter()
    for (way, kind), counts in sorted(table.items()):
        totals.update(counts)
        print(f"{way:<10} {kind:<7} " + " ".join(f"{counts[v]:>9}" for v in verdicts))
    print(f"{'all':<18} " + " ".join(f"{totals[v]:>9}" for v in verdicts))
    for v, example in examples.items():
        print(f"first {v}: {example}")
    shutil.rmtree(work, ignore_errors=True)
    sys.exit(1 if any(totals[v] for v in BAD) else 0)


if __name__ == "__main__":
    main()
