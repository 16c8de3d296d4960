"""Work done by a forked child while the caller goes on: the second core of a compile.

`qaccel-compile` is one Python process, and most of its phases depend on the one before. The
few pieces that do not (printing the host IR while the artifact's files are made; half of
the scheduler's searches while this process does the other half) run in a forked child, which
starts with everything imported and the caller's data in place, and hands its result back
pickled through a pipe:

    pending = start(module_text, module)     # the child prints while we write
    ...
    text = pending.result()                  # its value, or computed here

Nothing changes but the wall time: the child computes exactly what the caller would, and when
anything goes wrong on the way (the child raised, died, or its answer did not unpickle)
`result()` computes the value in the caller, so errors are the caller's own, with their usual
one-line messages. The child never runs the caller's exit handlers or flushes its buffers.

Only where it is safe and useful: `enabled()` needs `os.fork`, more than one usable core, no
other thread in the process (a fork copies only the calling thread, and another thread may
hold a lock the child then needs) and the process's opt-in (`allow()`, which `qaccel-compile`
gives; libraries and tests that call the compiler in-process do not fork). `QACCEL_COMPILE_JOBS=1`
turns it off. This module sits in `kernels/` (the bottom layer) so that any stage can use it.
"""

from __future__ import annotations

import gc
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

ENV_VAR = "QACCEL_COMPILE_JOBS"
T = TypeVar("T")

_allowed = False


def allow(on: bool = True) -> None:
    """Let this process fork helpers (`qaccel-compile` does, as a whole process)."""
    global _allowed
    _allowed = on


def enabled() -> bool:
    """Whether `start` forks (see the module docstring)."""
    if not _allowed or not hasattr(os, "fork") or os.environ.get(ENV_VAR, "").strip() == "1":
        return False
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    return cores > 1 and threading.active_count() == 1


class Pending(Generic[T]):
    """A value being computed by a forked child (or, without one, on demand here)."""

    def __init__(self, fn: Callable[..., T], args: tuple) -> None:
        self._fn, self._args = fn, args
        self._pid: int | None = None
        self._fd: int | None = None
        if not enabled():
            return
        for stream in (sys.stdout, sys.stderr):  # nothing buffered twice
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        read_fd, write_fd = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(read_fd)
            os.close(write_fd)
            return
        if pid == 0:  # the child
            os.close(read_fd)
            _child(write_fd, fn, args)
        os.close(write_fd)
        self._pid, self._fd = pid, read_fd

    def result(self) -> T:
        """The child's value, or `fn(*args)` computed here when there was no child or it
        did not answer."""
        if self._pid is None:
            return self._fn(*self._args)
        pid, fd = self._pid, self._fd
        self._pid = self._fd = None
        chunks = []
        try:
            with os.fdopen(fd, "rb") as pipe:  # type: ignore[arg-type]
                while chunk := pipe.read(1 << 20):
                    chunks.append(chunk)
        except BaseException:  # e.g. Ctrl-C while waiting: the child ends too
            _end(pid)
            raise
        os.waitpid(pid, 0)
        try:
            kind, value = pickle.loads(b"".join(chunks))
        except Exception:  # noqa: BLE001  a child that died before answering
            kind, value = "failed", None
        if kind != "ok":
            return self._fn(*self._args)
        return value

    def cancel(self) -> None:
        """End the child (its answer is not wanted) and reap it; nothing once answered."""
        if self._pid is None:
            return
        pid, fd = self._pid, self._fd
        self._pid = self._fd = None
        os.close(fd)  # type: ignore[arg-type]
        _end(pid)


def _end(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    os.waitpid(pid, 0)


def _child(write_fd: int, fn: Callable, args: tuple) -> None:
    # A collection would walk (and so copy) every object the child shares with the caller.
    gc.disable()
    try:
        try:
            payload: tuple[str, Any] = ("ok", fn(*args))
            data = pickle.dumps(payload, protocol=pickle.HIGHEST_PROTOCOL)
        except BaseException:  # noqa: BLE001  the caller computes it again and raises there
            data = pickle.dumps(("failed", None))
        with os.fdopen(write_fd, "wb") as out:
            out.write(data)
    except BaseException:  # noqa: BLE001  e.g. the caller closed the pipe (cancel)
        pass
    finally:
        os._exit(0)  # no exit handlers, no caller's buffers flushed


def start(fn: Callable[..., T], *args: Any) -> Pending[T]:
    """`fn(*args)` in a forked child when `enabled()`; `.result()` gives its value."""
    return Pending(fn, args)


__all__ = ["ENV_VAR", "Pending", "allow", "enabled", "start"]
