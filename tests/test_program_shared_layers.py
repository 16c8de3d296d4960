"""States sharing one prepared copy of a program's layers (`qaccel_state_share`,
`program_runner.State.share`): each thread's state has its own scratchpads, values and DRAM
image, and runs with the layers (execution order, micro-ops, converted constant weights) of
one prepared state, read-only; the outputs and cycles are those of a state that prepared its
own, in parallel threads too, and a state that is not prepared, or not of the same program, is
refused."""

from __future__ import annotations

import gc
import shutil
import threading

import numpy as np
import pytest
from conftest import FIXTURE_MODELS

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

from qaccel.backends.vta import program_runner as pr  # noqa: E402


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    from qaccel import api

    model = FIXTURE_MODELS / "small_cnn.tflite"
    out = tmp_path_factory.mktemp("shared") / "small_cnn"
    return api.write_artifact(api.compile(model, "vta-store-requant"), out, model)


@pytest.fixture
def blob(artifact, tmp_path, monkeypatch) -> bytes:
    pr.library()  # loaded (or built) where it is, before the cache directory moves
    monkeypatch.setenv("QACCEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("QACCEL_SIMULATION", raising=False)
    return next((artifact / "driver").glob("*.qprog")).read_bytes()


def _inputs(program: pr.Program, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, size=shape).astype(dtype) for shape, dtype in program.inputs]


def _no_preparation(monkeypatch):
    def refuse(*_):
        raise AssertionError("a sharing state prepared its own layers")

    monkeypatch.setattr(pr.State, "prepare", refuse)
    monkeypatch.setattr(pr.State, "import_kept", refuse)


def test_shared_layers_run_as_own_ones_in_parallel_threads(blob, monkeypatch):
    p = pr.Program(blob)
    owner = p.state()
    owner.prepare()
    fresh = pr.Program(blob).state()  # prepares its own at its first run
    want = {seed: [y.tobytes() for y in fresh.run(_inputs(p, seed))] for seed in range(6)}
    _no_preparation(monkeypatch)
    states = [owner]
    for _ in range(2):
        s = p.state()
        s.share(owner)
        states.append(s)
    assert all(s.cycles == fresh.cycles > 0 for s in states)
    got: dict[tuple[int, int], list[bytes]] = {}
    start = threading.Barrier(len(states))

    def work(t: int) -> None:
        start.wait()
        for r in range(4):
            seed = (t + 2 * r) % 6
            got[t, r] = [y.tobytes() for y in states[t].run(_inputs(p, seed))]

    threads = [threading.Thread(target=work, args=(t,)) for t in range(len(states))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 12
    for (t, r), ys in got.items():
        assert ys == want[(t + 2 * r) % 6]
    assert all(s.cycles == fresh.cycles for s in states)


def test_a_sharing_state_keeps_the_owner_alive(blob):
    p = pr.Program(blob)
    owner = p.state()
    x = _inputs(p, 1)
    want = [y.tobytes() for y in owner.run(x)]
    second = p.state()
    second.share(owner)
    third = p.state()
    third.share(second)  # shares the owner's layers, through a state sharing them
    del owner, second
    gc.collect()
    assert [y.tobytes() for y in third.run(x)] == want


def test_sharing_needs_a_prepared_state_of_the_same_program(blob, monkeypatch):
    p = pr.Program(blob)
    unprepared = p.state()
    state = p.state()
    with pytest.raises(pr.ProgramError, match="prepared state of the same program"):
        state.share(unprepared)
    other = pr.Program(blob).state()  # the same bytes, another opened program
    other.prepare()
    with pytest.raises(pr.ProgramError, match="prepared state of the same program"):
        state.share(other)
    with pytest.raises(pr.ProgramError, match="prepared state of the same program"):
        state.share(state)
    owner = p.state()
    owner.prepare()
    x = _inputs(p, 2)
    state.run(x)  # prepares its own
    with pytest.raises(pr.ProgramError, match="before its first run"):
        state.share(owner)
    monkeypatch.setenv("QACCEL_SIMULATION", "checked")
    checked = p.state()
    with pytest.raises(pr.ProgramError, match="on the fast path"):
        checked.share(owner)
    checked_owner = p.state()
    checked_owner.run(x)
    monkeypatch.delenv("QACCEL_SIMULATION")
    late = p.state()
    with pytest.raises(pr.ProgramError, match="prepared state of the same program"):
        late.share(checked_owner)
    assert [y.tobytes() for y in late.run(x)] == [y.tobytes() for y in owner.run(x)]


def test_the_run_plan_prepares_once_for_every_thread(artifact, blob, monkeypatch):  # noqa: ARG001
    """The plan prepares each program once (kept or checked and timed); the states of the
    other threads share that state's layers."""
    from qaccel.backends.vta.run_plan import load_run_plan

    plan = load_run_plan(artifact)
    x = plan.random_inputs(4)
    want = [y.tobytes() for y in plan.run(x)]
    _no_preparation(monkeypatch)
    shared = []
    real_share = pr.State.share

    def share(self, owner):
        shared.append(owner)
        real_share(self, owner)

    monkeypatch.setattr(pr.State, "share", share)
    got = []
    threads = [threading.Thread(target=lambda: got.append([y.tobytes() for y in plan.run(x)]))
               for _ in range(2)]  # fmt: skip
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert got == [want, want]
    owners = {id(f._owner) for f in plan.functions.values() if f.program is not None}
    assert len(shared) == 2 * len(owners) and {id(o) for o in shared} <= owners
