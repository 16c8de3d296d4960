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

A child may also need a value the caller has only later (`start_fed`): it does what it can
before, then waits for the value, which the caller hands over with `feed(value)` (pickled,
its large arrays' memory written as it is, through a second pipe, from a thread: the caller
does not wait for the child to read it, and does not change the value until `result()`):

    pending = start_fed(work, module)         # work(module, receive): ...; later = receive()
    ...
    pending.feed(later)                       # before result()

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


_NOT_FED = object()


class Pending(Generic[T]):
    """A value being computed by a forked child (or, without one, on demand here)."""

    def __init__(self, fn: Callable[..., T], args: tuple, fed: bool = False) -> None:
        self._fn, self._args, self._fed = fn, args, fed
        self._pid: int | None = None
        self._fd: int | None = None
        self._feed_fd: int | None = None
        self._value: Any = _NOT_FED
        self._sender: threading.Thread | None = None
        if not enabled():
            return
        for stream in (sys.stdout, sys.stderr):  # nothing buffered twice
            try:
                stream.flush()
            except (AttributeError, OSError, ValueError):
                pass
        fds = os.pipe() + (os.pipe() if fed else ())
        try:
            pid = os.fork()
        except OSError:
            for fd in fds:
                os.close(fd)
            return
        if pid == 0:  # the child
            os.close(fds[0])
            if fed:
                os.close(fds[3])
                args = (*args, _Receiver(fds[2]))
            _child(fds[1], fn, args)
        os.close(fds[1])
        if fed:
            os.close(fds[2])
            self._feed_fd = fds[3]
        self._pid, self._fd = pid, fds[0]

    def feed(self, value: Any) -> None:
        """Hand `value` to the child's `receive()` (`start_fed`; once, before `result()`):
        pickled and written on a thread, so this does not wait for the child; large
        contiguous buffers are written from `value`'s own memory, which must not change
        until `result()` or `cancel()`."""
        self._value = value
        fd, self._feed_fd = self._feed_fd, None
        if fd is None:
            return

        def send() -> None:
            # The pipe is closed whatever happens: a value that does not pickle leaves the
            # child an empty pipe (it fails, and result() computes the value here). Large
            # contiguous buffers (numpy arrays: a DRAM image) go out of band, written to the
            # pipe as they are instead of copied into the pickle with the GIL held.
            try:
                with os.fdopen(fd, "wb", buffering=0) as pipe:  # lengths first: a child
                    buffers: list[memoryview] = []  # forked later holds this pipe too, so
                    data = pickle.dumps(value, protocol=5,  # its end is no end of the data
                                        buffer_callback=_out_of_band(buffers))  # fmt: skip
                    sizes = [len(data)] + [b.nbytes for b in buffers]
                    head = len(buffers).to_bytes(8, "little")
                    head += b"".join(n.to_bytes(8, "little") for n in sizes)
                    for piece in (head, data, *buffers):
                        _write_all(pipe, piece)
            except BaseException:  # noqa: BLE001  the child is gone: result() computes it here
                pass

        self._sender = threading.Thread(target=send, name="qaccel-feed", daemon=True)
        self._sender.start()

    def _compute(self) -> T:
        if not self._fed:
            return self._fn(*self._args)
        if self._value is _NOT_FED:
            raise RuntimeError("background: result() of a fed helper before feed()")
        value = self._value
        return self._fn(*self._args, lambda: value)

    def result(self) -> T:
        """The child's value, or `fn(*args)` computed here when there was no child or it
        did not answer."""
        if self._pid is None:
            return self._compute()
        pid, fd = self._pid, self._fd
        self._pid = self._fd = None
        if self._feed_fd is not None:  # never fed: the child cannot answer
            os.close(self._feed_fd)
            self._feed_fd = None
        chunks = []
        try:
            with os.fdopen(fd, "rb") as pipe:  # type: ignore[arg-type]
                while chunk := pipe.read(1 << 20):
                    chunks.append(chunk)
        except BaseException:  # e.g. Ctrl-C while waiting: the child ends too
            _end(pid)
            raise
        os.waitpid(pid, 0)
        self._join_sender()
        try:
            kind, value = pickle.loads(b"".join(chunks))
        except Exception:  # noqa: BLE001  a child that died before answering
            kind, value = "failed", None
        if kind != "ok":
            return self._compute()
        return value

    def cancel(self) -> None:
        """End the child (its answer is not wanted) and reap it; nothing once answered."""
        if self._pid is None:
            return
        pid, fd = self._pid, self._fd
        self._pid = self._fd = None
        os.close(fd)  # type: ignore[arg-type]
        if self._feed_fd is not None:
            os.close(self._feed_fd)
            self._feed_fd = None
        _end(pid)
        self._join_sender()

    def _join_sender(self) -> None:
        if self._sender is not None:
            self._sender.join()  # the child read it, or ended (the write then fails)
            self._sender = None


class _Receiver:
    """The child's `receive()`: the value the caller feeds (read once)."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    def __call__(self) -> Any:
        fd, self._fd = self._fd, None
        if fd is None:
            raise RuntimeError("background: the fed value was read already")
        with os.fdopen(fd, "rb") as pipe:
            count = int.from_bytes(_read_exactly(pipe, 8), "little")
            if count > _MAX_BUFFERS:
                raise EOFError("background: the fed value is malformed")
            sizes = [int.from_bytes(_read_exactly(pipe, 8), "little") for _ in range(count + 1)]
            data = _read_exactly(pipe, sizes[0])
            buffers = [_read_exactly(pipe, n) for n in sizes[1:]]
        return pickle.loads(data, buffers=buffers)


_MAX_BUFFERS = 1 << 20
_OUT_OF_BAND_ABOVE = 1 << 16
"""Buffers of at least this many bytes are fed out of band (smaller ones stay in the pickle)."""


def _out_of_band(buffers: list[memoryview]) -> Callable[[pickle.PickleBuffer], bool]:
    """pickle's `buffer_callback`: a large contiguous buffer's memory appended to `buffers`
    (False: out of band), any other kept in the pickle (True)."""

    def callback(buffer: pickle.PickleBuffer) -> bool:
        try:
            raw = buffer.raw()
        except BufferError:  # not contiguous: copied into the pickle
            return True
        if raw.nbytes < _OUT_OF_BAND_ABOVE:
            return True
        buffers.append(raw)
        return False

    return callback


def _write_all(pipe, data) -> None:
    view = memoryview(data).cast("B")
    while view:
        view = view[pipe.write(view) :]


def _read_exactly(pipe, size: int) -> bytearray:
    """`size` bytes from `pipe` (EOFError when it ends before)."""
    out = bytearray(size)
    view, got = memoryview(out), 0
    while got < size:
        n = pipe.readinto(view[got:])
        if not n:
            raise EOFError("background: the fed value was cut short")
        got += n
    return out


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


def start_fed(fn: Callable[..., T], *args: Any) -> Pending[T]:
    """`fn(*args, receive)` in a forked child when `enabled()`, where `receive()` gives the
    value the caller hands over later with `.feed(value)`; `.result()` gives its value
    (computed here, after `feed`, when there is no child or it did not answer)."""
    return Pending(fn, args, fed=True)


__all__ = ["ENV_VAR", "Pending", "allow", "enabled", "start", "start_fed"]
