"""A program's preparation kept (backends/vta/program_runner.py's `kept_state`): the cycles of
a program do not depend on its inputs, so the layers' checked run is done once per program and
kept in the per-user cache; a later state of the same program is prepared from it with the
same cycles and outputs, and anything that does not match (a damaged or foreign file, another
program, other budgets) is checked and timed again."""

from __future__ import annotations

import hashlib
import os
import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_MODELS

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

from qaccel.backends.vta import program_runner as pr  # noqa: E402
from qaccel.backends.vta.program import writer  # noqa: E402


@pytest.fixture(scope="module")
def artifact(tmp_path_factory) -> Path:
    from qaccel.tools.qaccel_compile import run

    art = tmp_path_factory.mktemp("kept") / "cnn"
    assert run([str(FIXTURE_MODELS / "cnn.tflite"), "-o", str(art), "--quiet"]) == 0
    return art


@pytest.fixture
def program(artifact) -> tuple[bytes, str]:
    """The artifact's program and its SHA-256."""
    blob = next((artifact / "driver").glob("*.qprog")).read_bytes()
    return blob, hashlib.sha256(blob).hexdigest()


@pytest.fixture(autouse=True)
def cache(tmp_path, monkeypatch) -> Path:
    pr.library()  # loaded (or built) where it is, before the cache directory moves
    monkeypatch.setenv("QACCEL_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv("QACCEL_SIMULATION", raising=False)
    return tmp_path / "cache"


def _inputs(program: pr.Program, seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, size=shape).astype(dtype) for shape, dtype in program.inputs]


def _no_checked_run(monkeypatch):
    def refuse(self):
        raise AssertionError("the layers were checked and timed again")

    monkeypatch.setattr(pr.State, "prepare", refuse)


def test_cycles_are_the_same_for_every_input(artifact, cache, monkeypatch):
    """The full simulation (data, every check, timing) of every layer on two inputs, and the
    programs' one timing run, kept or not, give the same cycles."""
    from qaccel.backends.vta.run_plan import load_run_plan

    monkeypatch.setenv("QACCEL_SIMULATION", "checked")
    cycles = []
    for seed in (1, 2):
        plan = load_run_plan(artifact, programs=False)  # every layer simulated with its data
        plan.run(plan.random_inputs(seed))
        cycles.append(plan.cycles)
    monkeypatch.delenv("QACCEL_SIMULATION")
    for seed in (3, 4):  # timed once and kept, then from the cache
        plan = load_run_plan(artifact)
        assert all(f.program is not None for f in plan.functions.values() if f.layer_count)
        plan.run(plan.random_inputs(seed))
        cycles.append(plan.cycles)
    assert len(list((cache / pr.KEPT_DIR).glob("*.bin"))) >= 1
    assert len(set(cycles)) == 1 and cycles[0] > 0


def test_a_kept_preparation_runs_as_a_fresh_one(program, cache, monkeypatch):
    blob, digest = program
    first = pr.kept_state(pr.Program(blob), digest)
    path = pr.kept_path(digest)
    assert path.parent == cache / pr.KEPT_DIR and path.read_bytes() == first.export()
    _no_checked_run(monkeypatch)
    p = pr.Program(blob)
    kept = pr.kept_state(p, digest)
    fresh = p.state()
    for seed in range(3):
        xs = _inputs(p, seed)
        assert [y.tobytes() for y in kept.run(xs)] == [y.tobytes() for y in fresh.run(xs)]
    assert kept.cycles == fresh.cycles == first.cycles
    assert kept.export() == first.export()


@pytest.mark.parametrize("damage", ["flipped", "truncated", "empty", "checksum made right"])
def test_a_damaged_kept_file_is_checked_and_timed_again(program, damage):
    blob, digest = program
    good = pr.kept_state(pr.Program(blob), digest).export()
    path = pr.kept_path(digest)
    bad = bytearray(good)
    if damage == "flipped":
        bad[len(bad) // 2] ^= 0x40
    elif damage == "truncated":
        del bad[-24:]
    elif damage == "empty":
        bad = bytearray()
    else:  # an intact-looking file whose layer sizes do not add up
        struct.pack_into("<Q", bad, 32, struct.unpack_from("<Q", bad, 32)[0] + 8)
        struct.pack_into("<I", bad, len(bad) - 8, zlib.crc32(bytes(bad[:-8])))
    path.write_bytes(bytes(bad))
    p = pr.Program(blob)
    assert not p.state().import_kept(bytes(bad))
    state = pr.kept_state(p, digest)
    assert state.cycles > 0 and path.read_bytes() == good  # recomputed, and kept again
    x = _inputs(p, 0)
    assert [y.tobytes() for y in state.run(x)] == [y.tobytes() for y in p.state().run(x)]


def test_the_preparation_of_another_program_is_refused(program):
    """A program changed in one byte (its DRAM image, sealed again) has another digest, and the
    original's kept preparation, put under the changed one's key, is refused."""
    blob, digest = program
    kept = pr.kept_state(pr.Program(blob), digest).export()
    dram_at = struct.unpack_from("<Q", blob, 56)[0]
    changed = bytearray(blob)
    changed[dram_at + struct.unpack_from("<Q", blob, 48)[0] - 1] ^= 1
    changed = writer.seal(bytes(changed))
    other = hashlib.sha256(changed).hexdigest()
    assert other != digest and pr.kept_path(other) != pr.kept_path(digest)
    pr.kept_path(other).write_bytes(kept)
    q = pr.Program(changed)
    assert not q.state().import_kept(kept)
    assert pr.kept_state(q, other).export() != kept


def test_import_is_before_the_first_run_and_on_the_fast_path(program, monkeypatch):
    blob, digest = program
    kept = pr.kept_state(pr.Program(blob), digest).export()
    p = pr.Program(blob)
    state = p.state()
    state.run(_inputs(p, 0))
    assert not state.import_kept(kept) and "before the first run" in state.error
    monkeypatch.setenv("QACCEL_SIMULATION", "checked")
    checked = p.state()
    assert not checked.import_kept(kept) and checked.export() == b""
    assert pr.kept_state(p, digest).export() == b""  # nothing kept on the checked path


def test_the_budgets_the_checks_enforce_are_in_the_key(program, monkeypatch):
    blob, digest = program
    pr.kept_state(pr.Program(blob), digest)
    default = pr.kept_path(digest)
    monkeypatch.setenv("QACCEL_STEP_LIMIT", "100")
    assert pr.kept_path(digest) != default
    with pytest.raises(pr.ProgramError, match="QACCEL_STEP_LIMIT"):
        pr.kept_state(pr.Program(blob), digest)  # checked again, under the small budget


def test_the_run_plan_keeps_its_programs_preparation(artifact, monkeypatch):
    from qaccel.backends.vta.run_plan import load_run_plan

    plan = load_run_plan(artifact)
    x = plan.random_inputs(3)
    first = plan.run(x)
    _no_checked_run(monkeypatch)
    again = load_run_plan(artifact)
    assert [y.tobytes() for y in again.run(x)] == [y.tobytes() for y in first]
    assert again.cycles == plan.cycles > 0


def test_the_cache_keeps_the_most_recent_preparations(cache):
    folder = cache / pr.KEPT_DIR
    folder.mkdir(parents=True)
    for k in range(pr.KEPT_FILES + 5):
        (folder / f"{k:040x}.bin").write_bytes(b"x")
        os.utime(folder / f"{k:040x}.bin", (k, k))
    pr._forget_oldest(folder)
    left = sorted(p.name for p in folder.glob("*.bin"))
    assert left == [f"{k:040x}.bin" for k in range(5, pr.KEPT_FILES + 5)]
