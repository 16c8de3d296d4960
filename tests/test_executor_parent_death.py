"""`kill -9` of a process with a local pool (qaccel-sweep, qaccel-run --inputs-dir) leaves no
pool worker running: each worker notices its parent's death and exits (explore/executors.py).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="fork and kill -9 are POSIX")

CHILD = r"""
import os, sys, time
from qaccel.explore.executors import LocalExecutor

def work(folder, item):
    open(os.path.join(folder, f"{os.getpid()}.pid"), "w").close()
    time.sleep(120)  # a long sweep point
    return item

for _ in LocalExecutor(jobs=2).map(work, sys.argv[1], list(range(4))):
    pass
"""


def _alive(pid: int) -> bool:
    """Running (a zombie waiting for init to reap it has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True
    return state not in ("Z", "X")


@pytest.mark.parametrize("thread", ["main", "other"])
def test_pool_workers_exit_when_the_main_process_is_killed(tmp_path, thread):
    script = CHILD if thread == "main" else CHILD.replace(
        "for _ in LocalExecutor", "import threading\ndef run():\n    for _ in LocalExecutor"
    ).replace("    pass\n", "        pass\nt = threading.Thread(target=run); t.start(); t.join()\n")
    main = subprocess.Popen([sys.executable, "-c", script, str(tmp_path)])
    workers: list[int] = []
    try:
        deadline = time.monotonic() + 60
        while len(workers) < 2 and time.monotonic() < deadline:
            workers = [int(p.stem) for p in tmp_path.glob("*.pid")]
            time.sleep(0.05)
        assert len(workers) == 2, "the pool's workers did not start"
        main.send_signal(signal.SIGKILL)
        main.wait()
        deadline = time.monotonic() + 10
        while any(map(_alive, workers)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not any(map(_alive, workers)), "a pool worker outlived its killed parent"
    finally:
        for pid in workers:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if main.poll() is None:
            main.kill()
