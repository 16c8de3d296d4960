"""Where sweep points and dataset inputs run: a local process pool or Ray tasks.

Both run `fn(shared, item)` for every item and yield `(index, result)` as results finish (in
completion order). `shared` (e.g. the models' bytes) goes to every worker once: as the
process pool's initializer argument, or with `ray.put` into Ray's object store.

    executor = make_executor(jobs=4)            # local processes (jobs=1: in this process)
    executor = make_executor(ray="auto")        # Ray: "local" starts one, else an address
    for index, result in executor.map(fn, shared, items): ...

A cluster started by `ray start --head` with token authentication (Ray 2.5x turns it on when a
token exists, e.g. after a local `ray.init()` wrote `~/.ray/auth_token`, or with
`RAY_AUTH_MODE=token`) refuses clients without its token, which Ray reports as a stream of
`InvalidAuthToken` retries. Give the token with `RAY_AUTH_TOKEN` or `RAY_AUTH_TOKEN_PATH` (or
have it in `~/.ray/auth_token`): `ray_auth_token` then sets `RAY_AUTH_MODE=token` so that the
client sends it; a refusal is one line saying so (`auth_error`).
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import multiprocessing
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from typing import Any


class ExecutorError(RuntimeError):
    """An executor that cannot start (e.g. Ray not installed, no cluster at the address)."""


class TaskFailed:
    """What `map` yields for an item whose worker failed (crashed, was killed, raised): the
    caller decides; the other items go on."""

    def __init__(self, error: BaseException):
        text = str(error).strip().splitlines()
        self.reason = f"{type(error).__name__}{': ' + text[0] if text else ''}"

    def __repr__(self) -> str:
        return f"TaskFailed({self.reason!r})"


_SHARED: Any = None
PARENT_POLL_SECONDS = 0.2
"""How often a pool worker checks that the process that started it is still there."""


def _init_worker(shared: Any, parent: int | None = None, deathsig: bool = False) -> None:
    global _SHARED
    _SHARED = shared
    if parent is not None:
        _exit_with_parent(parent, deathsig)


def _exit_with_parent(parent: int, deathsig: bool) -> None:
    """End this worker when `parent` (the pool's process) ends, even by SIGKILL, which gives
    the pool no chance to shut its workers down: they would go on computing (a whole sweep)
    for no one. On Linux the kernel sends SIGKILL at once (PR_SET_PDEATHSIG; only when the
    pool's main thread forked the worker, because the signal follows the forking thread, not
    the process); everywhere a daemon thread sees the worker re-parented within
    PARENT_POLL_SECONDS and exits."""
    import signal
    import threading
    import time

    if deathsig and sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, int(signal.SIGKILL), 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass  # the watch thread below does it
    if os.getppid() != parent:  # died between the fork and this point
        os._exit(1)

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(PARENT_POLL_SECONDS)
        os._exit(1)

    threading.Thread(target=watch, name="qaccel-parent-watch", daemon=True).start()


def _call_in_worker(fn: Callable[[Any, Any], Any], item: Any) -> Any:
    return fn(_SHARED, item)


class LocalExecutor:
    """A pool of `jobs` processes (default: every core); `jobs=1` runs in this process."""

    name = "local"

    def __init__(self, jobs: int | None = None):
        self.jobs = max(1, jobs or os.cpu_count() or 1)

    def describe(self) -> str:
        return f"{self.jobs} local process(es)" if self.jobs > 1 else "this process"

    def map(self, fn: Callable[[Any, Any], Any], shared: Any,
            items: Sequence[Any]) -> Iterator[tuple[int, Any]]:  # fmt: skip
        if self.jobs == 1 or len(items) <= 1:
            for i, item in enumerate(items):
                yield i, fn(shared, item)
            return
        import threading

        context = multiprocessing.get_context("fork" if os.name == "posix" else "spawn")
        # The workers are forked by this thread (at the first submit): the kernel's parent
        # death signal is safe only when it is the main thread, which lives as long as we do.
        deathsig = threading.current_thread() is threading.main_thread()
        pool = concurrent.futures.ProcessPoolExecutor(
            min(self.jobs, len(items)), mp_context=context, initializer=_init_worker,
            initargs=(shared, os.getpid(), deathsig),
        )  # fmt: skip
        try:
            futures = {pool.submit(_call_in_worker, fn, item): i for i, item in enumerate(items)}
            for future in concurrent.futures.as_completed(futures):
                try:
                    result = future.result()
                except Exception as e:  # noqa: BLE001 - e.g. a worker killed by the OS
                    result = TaskFailed(e)
                yield futures[future], result
        finally:
            pool.shutdown(wait=True, cancel_futures=True)


class RayExecutor:
    """Ray tasks, one per item, on a cluster (`address`) or on a local one Ray starts
    (`address` None or "local", with `num_cpus`). Results stream back with `ray.wait`."""

    name = "ray"

    def __init__(self, address: str | None = None, num_cpus: int | None = None):
        remote = address not in (None, "", "local")
        token = ray_auth_token() if remote else None  # before Ray reads its configuration
        try:
            import ray
        except ImportError:
            raise ExecutorError("--ray needs Ray: pip install 'qaccel[distributed]'") from None
        self.ray = ray
        self.address = None if address in (None, "", "local") else address
        if not ray.is_initialized():
            kwargs: dict[str, Any] = {"ignore_reinit_error": True, "log_to_driver": False,
                                      "include_dashboard": False}  # fmt: skip
            if self.address is None:
                kwargs["num_cpus"] = num_cpus or os.cpu_count()
            else:
                import qaccel

                # The workers import qaccel from this checkout, uploaded once.
                kwargs["runtime_env"] = {"py_modules": [os.path.dirname(qaccel.__file__)]}
            if token is not None:
                _refresh_ray_config()
            failure = None
            with _captured_stderr() as captured:
                try:
                    ray.init(address=self.address, **kwargs)
                except Exception as e:  # noqa: BLE001 - ray raises many kinds; one line
                    failure = str(e).strip().splitlines()[0] if str(e).strip() else repr(e)
            if failure is not None:
                if "InvalidAuthToken" in captured[0] or "Unauthenticated" in failure:
                    raise ExecutorError(auth_error(self.address or "local", token))
                raise ExecutorError(f"cannot start Ray at {self.address or 'local'}: {failure}")
        self._remote = ray.remote(_ray_call)

    def describe(self) -> str:
        cpus = int(self.ray.cluster_resources().get("CPU", 0))
        return f"Ray ({self.address or 'local'}, {cpus} CPU(s))"

    def map(self, fn: Callable[[Any, Any], Any], shared: Any,
            items: Sequence[Any]) -> Iterator[tuple[int, Any]]:  # fmt: skip
        ray = self.ray
        # The models (shared), the function and the points each go to the object store once,
        # whatever the number of tasks; a task gets them by reference and takes its item.
        shared_ref, fn_ref, items_ref = ray.put(shared), ray.put(fn), ray.put(list(items))
        pending = {self._remote.remote(fn_ref, shared_ref, items_ref, i): i
                   for i in range(len(items))}  # fmt: skip
        try:
            while pending:
                done, _ = ray.wait(list(pending), num_returns=1)
                for ref in done:
                    try:
                        result = ray.get(ref)
                    except Exception as e:  # noqa: BLE001 - a task error, a dead worker
                        result = TaskFailed(e)
                    yield pending.pop(ref), result
        finally:
            for ref in pending:
                ray.cancel(ref)


AUTH_HELP = (
    "give the cluster's token: RAY_AUTH_TOKEN=<token> or RAY_AUTH_TOKEN_PATH=<file> (`ray "
    "get-auth-token` on the head node prints it; ~/.ray/auth_token is read too), or start the "
    "head with RAY_AUTH_MODE=disabled"
)


def ray_auth_token() -> str | None:
    """Where the token for a Ray cluster with token authentication comes from
    (`RAY_AUTH_TOKEN`, `RAY_AUTH_TOKEN_PATH`, or `~/.ray/auth_token`, where `ray start` and
    `ray get-auth-token --generate` write it), or None. Ray's client sends a token only when
    `RAY_AUTH_MODE=token`; with a token at hand this sets it (unless the variable is set),
    for this process and the workers it starts. A cluster without authentication ignores it."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        source = "RAY_AUTH_TOKEN"
    elif os.environ.get("RAY_AUTH_TOKEN_PATH"):
        source = f"RAY_AUTH_TOKEN_PATH={os.environ['RAY_AUTH_TOKEN_PATH']}"
    elif os.path.isfile(os.path.join(os.path.expanduser("~"), ".ray", "auth_token")):
        source = "~/.ray/auth_token"
    else:
        return None
    os.environ.setdefault("RAY_AUTH_MODE", "token")
    return source


def auth_error(address: str, token: str | None) -> str:
    """The one line for a cluster that refused the client's authentication."""
    if token is None:
        why = "the cluster has token authentication on and no token was given"
    elif os.environ.get("RAY_AUTH_MODE", "").lower() != "token":
        why = (f"the cluster has token authentication on; a token was found ({token}) but "
               f"RAY_AUTH_MODE={os.environ.get('RAY_AUTH_MODE')} keeps it from being sent")
    else:
        why = f"the cluster refused the token from {token}"
    return f"cannot connect to Ray at {address}: InvalidAuthToken: {why}; {AUTH_HELP}"


@contextlib.contextmanager
def _captured_stderr():
    """Ray's core writes its connection retries to file descriptor 2, one line a second:
    keep them in a file while connecting (its text is the yielded list's item afterwards),
    so that a refused token ends in one line instead of a screenful."""
    import tempfile

    sys.stderr.flush()
    saved = os.dup(2)
    text: list[str] = []
    with tempfile.TemporaryFile(mode="w+b") as log:
        os.dup2(log.fileno(), 2)
        try:
            yield text
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            log.seek(0)
            text.append(log.read().decode(errors="replace"))


def _refresh_ray_config() -> None:
    """Make an already imported Ray see `RAY_AUTH_MODE` (it reads it into its configuration
    once, as Ray's own token setup does)."""
    try:
        from ray._raylet import Config

        Config.initialize("")
    except Exception:  # noqa: BLE001 - a Ray without this hook reads the variable itself
        pass


def _ray_call(fn: Callable[[Any, Any], Any], shared: Any, items: Sequence[Any], i: int) -> Any:
    return fn(shared, items[i])


def make_executor(jobs: int | None = None, ray: str | None = None) -> LocalExecutor | RayExecutor:
    """`ray` (an address, or "local"/"" for a local cluster) selects Ray, else local processes."""
    if ray is not None:
        return RayExecutor(ray, num_cpus=jobs)
    return LocalExecutor(jobs)
