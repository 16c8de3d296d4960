"""Work on the second core (`kernels/background.py`): a forked child computes exactly what the
caller would, a failed child leaves the work to the caller, and `qaccel-compile` writes the
same artifact with and without it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from qaccel.kernels import background
from qaccel.lowering.vta import csearch, search
from qaccel.lowering.vta.planning import BIAS_MODES, LOOP_ORDERS
from qaccel.targets.vta.config import DEFAULT_CONFIG
from test_vta_codegen import conv_layer

MODELS = Path(__file__).parent / "fixtures" / "models"


@pytest.fixture
def forking(monkeypatch):
    """As in qaccel-compile's process (the test process may run other threads)."""
    monkeypatch.setattr(background, "enabled", lambda: hasattr(os, "fork"))
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork")


def _pid_and(value):
    return os.getpid(), value


def test_without_the_opt_in_the_caller_computes():
    assert not background.enabled()  # tests never opted in
    pid, value = background.start(_pid_and, 7).result()
    assert (pid, value) == (os.getpid(), 7)


def test_the_child_computes_and_answers(forking):
    pid, value = background.start(_pid_and, [1, 2]).result()
    assert pid != os.getpid() and value == [1, 2]


def _only_here(parent: int) -> int:
    if os.getpid() != parent:
        raise RuntimeError("the child fails")
    return 42


def _always_fails() -> None:
    raise ValueError("bad input, one line")


def test_a_failed_child_leaves_the_work_to_the_caller(forking):
    assert background.start(_only_here, os.getpid()).result() == 42
    with pytest.raises(ValueError, match="bad input, one line"):
        background.start(_always_fails).result()


def test_cancel_reaps_the_child(forking):
    pending = background.start(_pid_and, bytes(1 << 20))  # more than a pipe holds
    pid = pending._pid
    assert pid is not None
    pending.cancel()
    with pytest.raises(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)


@pytest.fixture
def python_search(monkeypatch):
    """Without the C search (`lowering/vta/csearch.py`): the searches run ahead only then."""
    monkeypatch.setenv("QACCEL_NO_CSEARCH", "1")
    csearch._reset_for_tests()
    yield
    monkeypatch.delenv("QACCEL_NO_CSEARCH")
    csearch._reset_for_tests()


def _layers():
    return [conv_layer(H=h, W=h, C=c, O=o, rng=np.random.default_rng(seed)) for h, c, o, seed
            in ((9, 20, 24, 1), (7, 32, 16, 2), (12, 16, 40, 3), (9, 20, 24, 1))]  # fmt: skip


def _with_fed(parent: int, value, receive):
    if value == "fail in the child" and os.getpid() != parent:
        raise RuntimeError("the child fails")
    return os.getpid(), value, receive()


def _through_the_pipe(parent: int, receive):
    """What only a child that read the fed value from its pipe can answer: its pid, and
    whether its `receive` is the pipe's reader (the caller's own is a plain function)."""
    got = receive()
    return os.getpid(), isinstance(receive, background._Receiver), got


@pytest.fixture
def computed_here(monkeypatch):
    """The values `Pending` computed in the caller (no child, or its answer not taken)."""
    calls = []
    compute = background.Pending._compute

    def counted(self):
        calls.append(self._fn.__name__)
        return compute(self)

    monkeypatch.setattr(background.Pending, "_compute", counted)
    return calls


def test_a_fed_child_gets_the_value_fed_later(forking, computed_here):
    """`start_fed`: the child works, then reads the value the caller feeds (larger than a
    pipe holds: the caller does not wait for the child to read it), and its answer is the one
    taken (nothing computed here); a failed child leaves the work to the caller, who passes
    the fed value itself."""
    fed = bytes(1 << 20)
    pending = background.start_fed(_with_fed, os.getpid(), "before")
    assert pending._pid is not None
    pending.feed(fed)
    pid, value, got = pending.result()
    assert pid != os.getpid() and value == "before" and got == fed
    pending = background.start_fed(_through_the_pipe, os.getpid())
    child = pending._pid
    pending.feed(fed)
    assert pending.result() == (child, True, fed) and child != os.getpid()
    assert computed_here == []
    pending = background.start_fed(_with_fed, os.getpid(), "fail in the child")
    assert pending._pid is not None  # a child was started, and failed
    pending.feed([3])
    assert pending.result() == (os.getpid(), "fail in the child", [3])
    assert computed_here == ["_with_fed"]


def test_a_fed_child_without_fork_and_never_fed(forking, monkeypatch):
    pending = background.start_fed(_with_fed, os.getpid(), "x")
    pending.cancel()  # never fed: the child waiting for it is ended
    monkeypatch.setattr(background, "enabled", lambda: False)
    pending = background.start_fed(_with_fed, os.getpid(), "here")
    pending.feed(5)
    assert pending.result() == (os.getpid(), "here", 5)
    with pytest.raises(RuntimeError, match="before feed"):
        background.start_fed(_with_fed, os.getpid(), "here").result()


def test_searches_run_ahead_give_the_same_schedules(forking, python_search):
    layers = _layers()
    search._best.cache_clear()
    search._known.clear()
    search.search_ahead(layers, DEFAULT_CONFIG)
    assert len(search._ahead) == 3  # the repeated shape searched once
    got = [search.schedule(lay, DEFAULT_CONFIG) for lay in layers]
    assert not search._ahead
    for lay, s in zip(layers, got):
        fresh = search._search(lay.geometry, DEFAULT_CONFIG, BIAS_MODES, LOOP_ORDERS, True, 600)
        assert s == fresh[0]
    search.search_ahead(layers, DEFAULT_CONFIG)
    assert not search._ahead  # all known: nothing run again


def test_with_the_c_search_nothing_runs_ahead(forking):
    """The C searches of a whole model take less time than starting a child: none forks,
    and `meanwhile` is left to the caller (as where the process does not fork)."""
    if not csearch.available():
        pytest.skip(f"no C search: {csearch.unavailable_reason()}")
    search._best.cache_clear()
    search._known.clear()
    called = []
    search.search_ahead(_layers(), DEFAULT_CONFIG, meanwhile=lambda: called.append(1))
    assert not search._ahead and not called


def _compile(model: Path, out: Path, jobs: str) -> None:
    env = dict(os.environ, QACCEL_COMPILE_JOBS=jobs)
    done = subprocess.run([sys.executable, "-m", "qaccel.tools.qaccel_compile", str(model),
                           "-o", str(out), "--quiet"], env=env, capture_output=True, text=True)  # fmt: skip
    assert done.returncode == 0, done.stderr


def test_qaccel_compile_writes_the_same_artifact_on_one_core(tmp_path):
    model = MODELS / "cnn.tflite"
    _compile(model, tmp_path / "two", "2")
    _compile(model, tmp_path / "one", "1")
    files = sorted(p.relative_to(tmp_path / "one") for p in (tmp_path / "one").rglob("*"))
    assert files == sorted(p.relative_to(tmp_path / "two") for p in (tmp_path / "two").rglob("*"))
    for rel in files:
        if (tmp_path / "one" / rel).is_file():
            assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "two" / rel).read_bytes()


def test_a_fed_value_that_does_not_pickle_leaves_the_work_to_the_caller(forking):
    """The child gets an empty pipe (and fails) instead of waiting for ever; `result()`
    then computes the value here with what was fed."""
    import threading

    pending = background.start_fed(_with_fed, os.getpid(), "before")
    assert pending._pid is not None
    value = lambda: 0  # noqa: E731  not picklable
    pending.feed(value)
    out = []
    waiter = threading.Thread(target=lambda: out.append(pending.result()), daemon=True)
    waiter.start()
    waiter.join(60)
    assert out == [(os.getpid(), "before", value)]
