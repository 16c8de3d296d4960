"""A sweep on a real multi-node Ray cluster with token authentication, on loopback, against
the same sweep on local processes: equal tables, and both wall times.

    python benchmarks/bench_ray_cluster.py [--nodes 2] [--port 6391] [MODEL.tflite ...]

Starts `ray start --head` (and `--nodes - 1` worker nodes, one CPU each) on 127.0.0.1 with
`RAY_AUTH_MODE=token` and a token of its own (`ray get-auth-token --generate` in a private
HOME, so ~/.ray is left alone), then runs `qaccel-sweep --ray 127.0.0.1:PORT` as a client
that has no ~/.ray/auth_token and gets the token from `RAY_AUTH_TOKEN` (what a user of a
remote cluster does), once more without any token (it must fail in one line saying
InvalidAuthToken), and `qaccel-sweep --jobs 2`. The tables must be equal up to compile
times. Afterwards it stops exactly the processes its nodes started (found by their private
temp dir and port), never other Ray clusters. Needs the `distributed` extra; not run in CI.
Default models: mlp and small_cnn over 8 points (a minute on 2 cores).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODELS = [ROOT / "tests" / "fixtures" / "models" / n for n in ("mlp.tflite", "small_cnn.tflite")]
SPEC = {"grid": {"log_inp_buff_size": [14, 15], "log_wgt_buff_size": [17, 18],
                 "store_requant": [False, True]}}  # fmt: skip


def _ray(args: list[str], env: dict[str, str]) -> None:
    proc = subprocess.run([str(Path(sys.executable).with_name("ray")), *args], env=env,
                          capture_output=True, text=True, timeout=300)  # fmt: skip
    if proc.returncode != 0:
        raise SystemExit(f"ray {' '.join(args)} failed: {proc.stderr.strip()[-500:]}")


def _cluster_pids(marker: str, port: int) -> set[int]:
    """PIDs of the processes our nodes started: command lines naming our temp dir or our
    GCS port, and their descendants."""
    parents: dict[int, int] = {}
    roots: set[int] = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        pid = int(entry.name)
        parents[pid] = int(stat.rsplit(")", 1)[1].split()[1])
        if pid != os.getpid() and (marker in cmd or f":{port} " in cmd or cmd.endswith(f":{port}")):
            roots.add(pid)
    found = set(roots)
    while True:
        more = {p for p, pp in parents.items() if pp in found and p not in found}
        if not more:
            return found
        found |= more


def _stop(marker: str, port: int) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _cluster_pids(marker, port):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        time.sleep(3)


def _sweep(models: list[Path], spec: Path, out: Path, executor: list[str],
           env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.run([str(Path(sys.executable).with_name("qaccel-sweep")), *map(str, models),
                           "--spec", str(spec), "-o", str(out), "--quiet", *executor],
                          env=env, capture_output=True, text=True, timeout=1800)  # fmt: skip
    return time.perf_counter() - start, proc


def _table(out: Path) -> list[dict]:
    rows = [json.loads(line) for line in (out / "table.jsonl").read_text().splitlines()]
    return sorted(({k: v for k, v in r.items() if k != "compile_s"} for r in rows),
                  key=lambda r: r["key"])  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("models", nargs="*", type=Path, default=MODELS)
    ap.add_argument("--nodes", type=int, default=2)
    ap.add_argument("--port", type=int, default=6391)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="qaccel-ray-bench-"))
    marker = str(work / "ray")
    head_home, client_home = work / "head-home", work / "client-home"
    head_home.mkdir()
    client_home.mkdir()
    spec = work / "spec.json"
    spec.write_text(json.dumps(SPEC))
    head_env = {**os.environ, "HOME": str(head_home), "RAY_AUTH_MODE": "token"}
    client_env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_AUTH")}
    client_env["HOME"] = str(client_home)
    address = f"127.0.0.1:{args.port}"
    failures = 0
    try:
        _ray(["get-auth-token", "--generate"], head_env)
        token = (head_home / ".ray" / "auth_token").read_text().strip()
        _ray(["start", "--head", f"--port={args.port}", "--node-ip-address=127.0.0.1",
              "--num-cpus=1", f"--temp-dir={marker}", "--include-dashboard=false",
              "--disable-usage-stats"], head_env)  # fmt: skip
        for _ in range(args.nodes - 1):
            _ray(["start", f"--address={address}", "--node-ip-address=127.0.0.1",
                  "--num-cpus=1", "--disable-usage-stats"], head_env)  # fmt: skip
        seconds, proc = _sweep(args.models, spec, work / "no-token", ["--ray", address],
                               client_env)  # fmt: skip
        refused = proc.returncode == 1 and "InvalidAuthToken" in proc.stderr
        lines = proc.stderr.strip().splitlines()
        print(f"without a token: exit {proc.returncode} after {seconds:.1f} s, "
              f"{len(lines)} line(s): {lines[-1] if lines else ''}")
        failures += not (refused and len(lines) == 1)
        ray_s, proc = _sweep(args.models, spec, work / "ray", ["--ray", address],
                             {**client_env, "RAY_AUTH_TOKEN": token})  # fmt: skip
        if proc.returncode != 0:
            raise SystemExit(f"sweep on Ray failed: {proc.stderr.strip()[-800:]}")
        local_s, proc = _sweep(args.models, spec, work / "local", ["--jobs", "2"], client_env)
        if proc.returncode != 0:
            raise SystemExit(f"local sweep failed: {proc.stderr.strip()[-800:]}")
        same = _table(work / "ray") == _table(work / "local")
        failures += not same
        points = len(_table(work / "local"))
        print(f"{points} points: Ray cluster of {args.nodes} node(s) with token authentication "
              f"{ray_s:.1f} s, 2 local processes {local_s:.1f} s; tables equal: {same}")
    finally:
        _stop(marker, args.port)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
