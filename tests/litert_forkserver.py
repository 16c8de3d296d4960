"""The LiteRT oracle's children forked from a process that already imported LiteRT.

The oracle (`qaccel.backends.litert.oracle`) runs LiteRT's reference kernels in a child process,
`python -m qaccel.backends.litert.worker REQUEST.json`, because a failed kernel check abort()s
the process. Each such child spent about 0.25 CPU seconds starting Python and importing numpy,
`ai_edge_litert` and `tflite` before it read its request, and the suite starts dozens. Here one
server per test process (`python litert_forkserver.py`, its end of a socket pair on descriptor
3) imports those once; for each request it forks, and the child runs the worker's `main` with
the request's environment, its standard output and error going to files the caller reads. The
child is still a process of its own: an abort() ends it alone, with the same signal as before.

`install(oracle)` puts `run` in place of the `subprocess.run` the oracle module calls: the
worker command goes to the server; any other command, a call from a process forked from the
test process (it does not own the socket), a call while another thread's is being served (the
server runs one at a time) or a server that cannot start runs as before. A
child that runs past its timeout is killed and `subprocess.TimeoutExpired` raised, as
`subprocess.run` does. `enabled = False` (tests of the oracle's own process handling) runs
every command as before.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading

WORKER = "qaccel.backends.litert.worker"
_HEADER = struct.Struct("!I")

enabled = True


# ------------------------------------------------------------------------------------ protocol


def _send(sock: socket.socket, message: dict) -> None:
    data = json.dumps(message).encode()
    sock.sendall(_HEADER.pack(len(data)) + data)


def _recv_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("connection closed")
        data += chunk
    return data


def _recv(sock: socket.socket) -> dict:
    (size,) = _HEADER.unpack(_recv_exact(sock, _HEADER.size))
    return json.loads(_recv_exact(sock, size))


# ------------------------------------------------------------------------------------ client


class _Server:
    def __init__(self) -> None:
        ours, theirs = socket.socketpair()
        env = dict(os.environ)
        env.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")  # as the oracle starts its children
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), str(theirs.fileno())],
            pass_fds=[theirs.fileno()], stdin=subprocess.DEVNULL, env=env)
        theirs.close()
        self.sock = ours
        self.owner = os.getpid()
        self.lock = threading.Lock()  # one request at a time on the socket
        _recv(self.sock)  # {"ready": true} once it has imported what the worker imports

    def run(self, argv: list[str], env: dict, timeout: float | None) -> tuple[int, str, str]:
        with tempfile.TemporaryDirectory(prefix="qaccel-oracle-") as tmp:
            out, err = os.path.join(tmp, "stdout"), os.path.join(tmp, "stderr")
            _send(self.sock, {"argv": argv, "env": env, "cwd": os.getcwd(), "stdout": out,
                              "stderr": err})  # fmt: skip
            pid = _recv(self.sock)["pid"]
            self.sock.settimeout(timeout)
            try:
                status = _recv(self.sock)
            except socket.timeout:
                os.kill(pid, signal.SIGKILL)
                self.sock.settimeout(None)
                _recv(self.sock)
                raise subprocess.TimeoutExpired(argv, timeout) from None
            finally:
                self.sock.settimeout(None)
            with open(out, errors="replace") as f_out, open(err, errors="replace") as f_err:
                return status["code"], f_out.read(), f_err.read()

    def close(self) -> None:
        self.sock.close()
        self.proc.wait()


_server: _Server | None = None
_broken = False
_starting = threading.Lock()


def _get_server() -> _Server | None:
    global _server, _broken
    with _starting:
        if _broken:
            return None
        if _server is None:
            try:
                _server = _Server()
            except (OSError, EOFError, ValueError):
                _broken = True
                return None
        return _server


def run(cmd, *args, **kwargs):
    """`subprocess.run` for the oracle module: the worker command through the server."""
    plain = (
        not enabled
        or args
        or len(cmd) != 4
        or list(cmd[:3]) != [sys.executable, "-m", WORKER]
        or set(kwargs) != {"capture_output", "text", "timeout", "env"}
        or not kwargs["capture_output"]
        or not kwargs["text"]
        or (_server is not None and _server.owner != os.getpid())
    )
    server = None if plain else _get_server()
    if server is None or not server.lock.acquire(blocking=False):
        return subprocess.run(cmd, *args, **kwargs)
    try:
        code, out, err = server.run(list(cmd), kwargs["env"], kwargs["timeout"])
    except (EOFError, ConnectionError, ValueError):  # the server is gone: no more of it
        global _broken
        _broken = True
        return subprocess.run(cmd, *args, **kwargs)
    finally:
        server.lock.release()
    return subprocess.CompletedProcess(cmd, code, out, err)


class _SubprocessWithServer:
    """The `subprocess` module as the oracle sees it, with `run` above."""

    def __getattr__(self, name):
        return getattr(subprocess, name)

    run = staticmethod(run)


def install(oracle_module) -> None:
    oracle_module.subprocess = _SubprocessWithServer()


def shutdown() -> None:
    global _server
    if _server is not None and _server.owner == os.getpid():
        _server.close()
    _server = None


# ------------------------------------------------------------------------------------ server


def _child(request: dict) -> None:
    """In the forked child: the worker's `main`, as `python -m WORKER REQUEST` runs it."""
    code = 1
    try:
        for fd, path in ((1, request["stdout"]), (2, request["stderr"])):
            target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            os.dup2(target, fd)
            os.close(target)
        sys.stdout = open(1, "w", closefd=False)
        sys.stderr = open(2, "w", closefd=False)
        os.environ.clear()
        os.environ.update(request["env"])
        os.chdir(request["cwd"])
        signal.signal(signal.SIGINT, signal.default_int_handler)
        from qaccel.backends.litert import worker

        sys.argv = [worker.__file__, *request["argv"][3:]]
        code = worker.main(sys.argv)
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    finally:
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)


def serve(fd: int) -> None:
    sock = socket.socket(fileno=fd)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the test process decides; EOF ends us
    # What the worker imports, and what its requests load (see the worker's `run`).
    import numpy  # noqa: F401

    try:
        import ai_edge_litert.interpreter  # noqa: F401
        import tflite.Model  # noqa: F401
    except ImportError:
        pass
    import qaccel.backends.litert.worker  # noqa: F401

    _send(sock, {"ready": True})
    while True:
        try:
            request = _recv(sock)
        except (EOFError, OSError):  # the test process is gone
            return
        pid = os.fork()
        if pid == 0:
            sock.close()
            _child(request)
        _send(sock, {"pid": pid})
        _, status = os.waitpid(pid, 0)
        _send(sock, {"code": os.waitstatus_to_exitcode(status)})


if __name__ == "__main__":
    serve(int(sys.argv[1]))
