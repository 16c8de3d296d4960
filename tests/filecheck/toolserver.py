"""Start-up for the FileCheck tests' tool runs: a forked copy of a process that already
imported the tool, instead of a new interpreter importing xDSL, numpy and qaccel again.

About 170 RUN lines start `qaccel-opt`, `qaccel-compile`, `qaccel-run` or `qaccel-sim`, and
each new process spent about a second of CPU importing before it read its input, most of lit's
time (`filecheck`, run as often, about 0.15 s). `lit.cfg.py` starts one server per console
script (`python toolserver.py serve SOCKET SCRIPT`) that imports what the script imports before
calling its entry point (for qaccel's launcher, the tool's module too), then waits. RUN lines
find a small client of the same name first on PATH (written by `write_clients`): it hands the
server its arguments, working directory, environment and standard streams (the descriptors
themselves); the server forks, and the child runs the console script itself as `__main__`
with them, its standard streams made anew as Python makes them at start-up. The child's exit
status (or the signal that ended it) is the client's.

The child is the process the script would be at that point, with one difference: the modules
were imported under the server's environment. So a request whose environment differs from it
(a RUN line's `env VAR=...`, which a module may read when imported) is not served, and the
client runs the real script instead (`os.execv`), as it does when no server answers; only the
variables lit sets per test (temporary directories) may differ. Standard library only, and no
threads (a fork of a process with threads can inherit a held lock; `qaccel-compile` forks
helpers only when it has no other thread). With `QACCEL_TOOLSERVER_DEBUG=FILE` in lit's
environment the servers log each run's CPU seconds there.
"""

from __future__ import annotations

import json
import os
import selectors
import signal
import socket
import struct
import sys

_HEADER = struct.Struct("!I")
_IDLE_SECONDS = 900  # a server left behind by a killed lit stops by itself
# lit sets these for each test; no module reads them when imported (`tempfile` reads them
# when first asked, and its answer is forgotten in the child), so they may differ.
_PER_TEST = frozenset({"LIT_CURRENT_TESTCASE", "TEMP", "TEMPDIR", "TMP", "TMPDIR"})


def _lasting(env: dict[str, str]) -> dict[str, str]:
    return {k: v for k, v in env.items() if k not in _PER_TEST}


def _send(sock: socket.socket, payload: bytes, fds: list[int] = ()) -> None:
    data = _HEADER.pack(len(payload)) + payload
    if fds:
        socket.send_fds(sock, [data], list(fds))
    else:
        sock.sendall(data)


def _recv_exact(sock: socket.socket, n: int, fds_wanted: int = 0) -> tuple[bytes, list[int]]:
    data, fds = b"", []
    while len(data) < n:
        if fds_wanted and not fds:
            chunk, got, _flags, _addr = socket.recv_fds(sock, n - len(data), fds_wanted)
            fds.extend(got)
        else:
            chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError("connection closed")
        data += chunk
    return data, fds


def _recv(sock: socket.socket, fds_wanted: int = 0) -> tuple[bytes, list[int]]:
    header, fds = _recv_exact(sock, _HEADER.size, fds_wanted)
    (size,) = _HEADER.unpack(header)
    payload, more = _recv_exact(sock, size)
    return payload, fds + more


# ------------------------------------------------------------------------------------ client


def client(sock_path: str, real_script: str, args: list[str], interpreter: str = "") -> int:
    """Run `real_script args` through the server at `sock_path`, or exec it (with
    `interpreter`, for a script that is not executable itself)."""
    try:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(sock_path)
        request = {"argv": args, "cwd": os.getcwd(), "env": dict(os.environ)}
        _send(sock, json.dumps(request).encode(), [0, 1, 2])
        reply, _ = _recv(sock)
        status = json.loads(reply)
    except (OSError, EOFError, ValueError):
        status = {"exec": True}
    if status.get("exec"):
        if interpreter:
            os.execv(interpreter, [interpreter, real_script, *args])
        os.execv(real_script, [real_script, *args])
    if "signal" in status:  # end the way the tool's process ended
        signal.signal(status["signal"], signal.SIG_DFL)
        os.kill(os.getpid(), status["signal"])
        return 128 + status["signal"]
    return status["code"]


def write_clients(bin_dir: str, python: str, servers: dict[str, tuple[str, ...]]) -> None:
    """One executable per tool in `bin_dir`: `servers` maps a tool's name to its server's
    socket, its real console script and, for a Python script that is not executable itself,
    the interpreter that runs it."""
    os.makedirs(bin_dir, exist_ok=True)
    here = os.path.abspath(__file__)
    for tool, (sock_path, real_script, *interpreter) in servers.items():
        path = os.path.join(bin_dir, tool)
        with open(path, "w") as f:
            f.write(f"#!{python} -IS\n"
                    "import sys\n"
                    f"sys.path.insert(0, {os.path.dirname(here)!r})\n"
                    "import toolserver\n"
                    f"sys.exit(toolserver.client({sock_path!r}, {real_script!r},"
                    f" sys.argv[1:], {''.join(interpreter)!r}))\n")  # fmt: skip
        os.chmod(path, 0o755)


# ------------------------------------------------------------------------------------ server


def _die_with_parent() -> None:
    """SIGTERM when lit (our parent) exits, however it exits."""
    try:
        import ctypes

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _preload(real_script: str) -> None:
    """Import what the console script `real_script` imports before it calls its entry point
    (`from MODULE import FUNCTION`; for qaccel's launcher also the tool's module, which the
    launcher imports before calling its `main()`)."""
    from importlib import import_module

    with open(real_script) as f:
        for line in f:
            words = line.split()
            if len(words) == 4 and words[0] == "from" and words[2] == "import":
                module = import_module(words[1])
                if words[1] == "qaccel.tools.launch":
                    import_module(module.TOOLS[os.path.basename(real_script)])


def serve(sock_path: str, real_script: str) -> dict:
    """Import what `real_script` imports, then serve requests until killed or idle. Returns
    only in a forked child, with the request it is to run."""
    parent = os.getppid()
    _die_with_parent()
    if os.getppid() != parent:  # lit already gone
        sys.exit(0)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(sock_path)
    listener.listen(64)  # clients queue while the imports run

    start_env = dict(os.environ)  # before the imports, which may set variables
    sys.path[0] = os.path.dirname(real_script)  # the console script's, not this folder
    _preload(real_script)
    tool = os.path.basename(real_script)

    selector = selectors.DefaultSelector()
    selector.register(listener, selectors.EVENT_READ, None)
    running: dict[int, tuple[int, socket.socket]] = {}  # pidfd -> (pid, connection)
    args: dict[int, list[str]] = {}
    while True:
        events = selector.select(timeout=_IDLE_SECONDS)
        if not events and not running:
            os.unlink(sock_path)
            sys.exit(0)
        for key, _mask in events:
            if key.data is None:  # a new client
                conn, _ = listener.accept()
                conn.settimeout(10)
                try:
                    payload, fds = _recv(conn, fds_wanted=3)
                    request = json.loads(payload)
                except (OSError, EOFError, ValueError):
                    conn.close()
                    continue
                if _lasting(request["env"]) != _lasting(start_env) or len(fds) != 3:
                    diff = {k for k in set(start_env) | set(request["env"])
                            if start_env.get(k) != request["env"].get(k)} - _PER_TEST
                    print(f"{tool}: not served, environment differs in {sorted(diff)}",
                          file=sys.stderr, flush=True)
                    for fd in fds:
                        os.close(fd)
                    _send(conn, json.dumps({"exec": True}).encode())
                    conn.close()
                    continue
                pid = os.fork()
                if pid == 0:
                    selector.close()
                    listener.close()
                    conn.close()
                    for fd, (_pid, other) in running.items():
                        os.close(fd)
                        other.close()
                    for target, fd in enumerate(fds):
                        os.dup2(fd, target)
                        os.close(fd)
                    request["real_script"] = real_script
                    return request
                for fd in fds:
                    os.close(fd)
                pidfd = os.pidfd_open(pid)
                running[pidfd] = (pid, conn)
                args[pid] = request["argv"]
                selector.register(pidfd, selectors.EVENT_READ, pid)
            else:  # a child ended
                pidfd = key.fd
                pid, conn = running.pop(pidfd)
                selector.unregister(pidfd)
                os.close(pidfd)
                _, status, usage = os.wait4(pid, 0)
                print(f"{tool}: {usage.ru_utime + usage.ru_stime:.2f} s CPU {args.pop(pid)}",
                      file=sys.stderr, flush=True)
                if os.WIFSIGNALED(status):
                    reply = {"signal": os.WTERMSIG(status)}
                else:
                    reply = {"code": os.WEXITSTATUS(status)}
                try:
                    _send(conn, json.dumps(reply).encode())
                except OSError:
                    pass
                conn.close()


def _reopen_stdio() -> None:
    """New `sys.stdin`/`stdout`/`stderr` over descriptors 0-2, made as Python makes them at
    start-up (POSIX): the server's were made for other files (seekable /dev/null, say)."""
    import io

    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        old = getattr(sys, name)
        unbuffered = mode == "w" and old.write_through
        raw = io.FileIO(fd, mode + "b", closefd=False)
        raw.name = f"<{name}>"
        buffer = raw if unbuffered else (io.BufferedReader(raw) if mode == "r"
                                         else io.BufferedWriter(raw))  # fmt: skip
        line_buffering = not unbuffered and (raw.isatty() or name == "stderr")
        stream = io.TextIOWrapper(buffer, encoding=old.encoding, errors=old.errors, newline="\n",
                                  line_buffering=line_buffering, write_through=unbuffered)
        stream.mode = mode
        setattr(sys, name, stream)
        setattr(sys, f"__{name}__", stream)


def main() -> None:
    _, command, sock_path, real_script = sys.argv
    assert command == "serve"
    request = serve(sock_path, real_script)
    _reopen_stdio()
    # From here on, what the console script does: the same file, run as the main module.
    os.chdir(request["cwd"])
    for key in _PER_TEST:
        if key in request["env"]:
            os.environ[key] = request["env"][key]
        else:
            os.environ.pop(key, None)
    if "tempfile" in sys.modules:
        sys.modules["tempfile"].tempdir = None
    sys.argv = [request["real_script"], *request["argv"]]
    import runpy

    runpy.run_path(request["real_script"], run_name="__main__")


if __name__ == "__main__":
    main()
