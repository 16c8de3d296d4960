"""Run LiteRT in a child process, so that its crashes cannot take the caller down.

LiteRT's checks abort the process, and a corrupt model can make `libLiteRt.so` read out of
bounds: inside `qaccel-run` or a notebook that is exit 139 with no message. So the LiteRT
runners (`paths.py`) run in a forked child, which also keeps what LiteRT does to the process
(its log on file descriptor 2, which the runners capture by redirecting it; its one-time
dispatch initialization; our libraries' counters) out of the caller and out of other threads:

    outputs = run_isolated(run_dispatch, model, inputs)   # or LiteRtError, one line

The child is a fork of the caller (no new interpreter to start, modules already imported), so
the cost is LiteRT's own work. Its result comes back pickled through a pipe; a child killed by
a signal becomes "LiteRT crashed (SIGSEGV) running 'model'". Where `os.fork` does not exist
the function runs in the caller.
"""

from __future__ import annotations

import os
import pickle
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

from qaccel.backends.litert.runtime import LiteRtError


def _child(write_fd: int, fn: Callable, args: tuple) -> None:
    try:
        import faulthandler

        faulthandler.disable()  # a crash is reported by the parent, in one line
        try:
            payload: tuple[str, Any] = ("ok", fn(*args))
        except LiteRtError as e:
            payload = ("error", str(e))
        except BaseException as e:  # noqa: BLE001  everything becomes the parent's one line
            payload = ("error", f"{type(e).__name__}: {e}")
        with os.fdopen(write_fd, "wb") as out:
            pickle.dump(payload, out, protocol=pickle.HIGHEST_PROTOCOL)
    finally:
        os._exit(0)  # no atexit handlers, no LiteRT teardown logs, no parent's buffers flushed


def run_isolated(fn: Callable, model: str | Path, *args: Any) -> Any:
    """`fn(model, *args)` in a forked child; its result, or LiteRtError (one line)."""
    if not hasattr(os, "fork"):
        return fn(model, *args)
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child
        os.close(read_fd)
        _child(write_fd, fn, (model, *args))
    os.close(write_fd)
    with os.fdopen(read_fd, "rb") as pipe:
        data = pipe.read()
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else sig
        raise LiteRtError(f"LiteRT crashed ({name}) running '{model}'")
    try:
        kind, value = pickle.loads(data)
    except Exception:  # noqa: BLE001  a child that died before answering
        raise LiteRtError(f"LiteRT ended without an answer running '{model}' "
                          f"(exit status {os.waitstatus_to_exitcode(status)})") from None
    if kind == "error":
        raise LiteRtError(value)
    return value


__all__ = ["run_isolated"]
