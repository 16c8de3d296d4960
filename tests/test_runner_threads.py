"""No runner state is process-wide: two compiled models run at the same time in two threads of
one process, through every path that runs an accelerator function (the LiteRT dispatch library,
the QACCEL_VTA custom-op kernel, the program runner from Python, the C driver's runtime, the run
plan), bit-exact with the Python runtime (itself checked against LiteRT's BUILTIN_REF by
test_litert_aot.py); and with one of the two failing, each error belongs to its own run."""

from __future__ import annotations

import shutil
import struct
import threading
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_MODELS

pytest.importorskip("ai_edge_litert")
pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

from qaccel.backends.litert import aot  # noqa: E402
from qaccel.backends.vta.program import writer  # noqa: E402
from qaccel.frontend.tflite_writer import read_model  # noqa: E402

MODELS = ("small_cnn", "mlp")
ROUNDS = 3


def _compile(model: str, out: Path) -> Path:
    from qaccel.tools.qaccel_compile import run

    assert run([str(FIXTURE_MODELS / f"{model}.tflite"), "-o", str(out), "--quiet"]) == 0
    return out


def _inputs(art: Path, seed: int) -> list[np.ndarray]:
    sg = read_model((art / aot.DISPATCH_FILE).read_bytes()).subgraphs[0]
    rng = np.random.default_rng(seed)
    return [rng.integers(-128, 128, sg.tensors[i].shape).astype(sg.tensors[i].dtype)
            for i in sg.inputs]  # fmt: skip


def _programs(art: Path) -> list[bytes]:
    sg = read_model((art / aot.AOT_FILE).read_bytes()).subgraphs[0]
    return [bytes(sg.tensors[op.inputs[-1]].data_bytes()) for op in sg.operators
            if op.custom_code == aot.CUSTOM_CODE]  # fmt: skip


def _broken_program(blob: bytes) -> bytes:
    """`blob` whose first step has an unknown kind, its checksum made right (a forger's)."""
    b = bytearray(blob)
    steps_at = struct.unpack_from("<Q", b, 168)[0]
    struct.pack_into("<I", b, steps_at, 77)
    return writer.seal(bytes(b))


def _break_models(art: Path) -> None:
    """Both LiteRT models of `art` with every program broken in place."""
    programs = _programs(art)
    for name in (aot.AOT_FILE, aot.DISPATCH_FILE):
        data = bytearray((art / name).read_bytes())
        for blob in programs:
            at = bytes(data).find(blob)
            assert at >= 0
            data[at : at + len(blob)] = _broken_program(blob)
        (art / name).write_bytes(bytes(data))


@pytest.fixture(scope="module")
def arts(tmp_path_factory):
    """{name: (artifact, inputs, expected outputs)} and a broken copy of the second model."""
    from qaccel.backends.vta.artifact import load_artifact
    from qaccel.backends.vta.runtime import run_compiled

    root = tmp_path_factory.mktemp("threads")
    out = {}
    for k, name in enumerate(MODELS):
        art = _compile(name, root / name)
        x = _inputs(art, k)
        out[name] = (art, x, [y.tobytes() for y in run_compiled(load_artifact(art), x)])
    broken = root / "broken"
    shutil.copytree(out[MODELS[1]][0], broken)
    _break_models(broken)
    # the C paths that check the artifact's hashes break the good copy in memory instead
    out["broken"] = (broken, out[MODELS[1]][0], out[MODELS[1]][1])
    return out


def _runner(path: str, art: Path, broken: bool = False):
    """A function running the model of `art` through `path` on its inputs."""
    if path == "dispatch":
        from qaccel.backends.litert.dispatch import run_dispatch

        return lambda x: run_dispatch(art / aot.DISPATCH_FILE, x)
    if path == "custom-op":
        from qaccel.backends.litert.runtime import run_litert

        return lambda x: run_litert(art / aot.AOT_FILE, x)
    if path == "program":
        # the function of the model alone: its program's inputs (a tensor the model feeds it)
        from qaccel.backends.vta.program_runner import Program

        blob = _programs(art)[0]

        def run(_x):
            program = Program(_broken_program(blob) if broken else blob)
            rng = np.random.default_rng(3)
            xs = [rng.integers(-128, 128, shape).astype(dtype) for shape, dtype in program.inputs]
            state = program.state()
            return [b"".join(y.tobytes() for y in state.run(xs)) for _ in range(2)]

        return run
    if path == "cdriver":
        from qaccel.backends.vta.artifact import load_artifact
        from qaccel.backends.vta.cdriver_runtime import open_runner, run_compiled_c

        compiled = load_artifact(art)
        if broken:  # a stream the machine refuses: an unknown opcode in the first instruction
            fn = next(iter(compiled.functions.values()))
            fn.layers[0].words = np.array(fn.layers[0].words, dtype=np.uint64)
            fn.layers[0].words.reshape(-1)[0] |= np.uint64(7)
        runner = open_runner(compiled)
        return lambda x: run_compiled_c(compiled, x, runner=runner)
    if path == "run-plan":
        from qaccel.backends.vta.run_plan import load_run_plan

        plan = load_run_plan(art)
        if broken:
            return lambda x: plan.run([a.astype(np.int16) for a in x])
        return lambda x: plan.run(x)
    raise AssertionError(path)


def _concurrently(jobs) -> list:
    """Run every job ROUNDS times, all jobs at once (one thread each); per job its results or
    the exception that stopped it."""
    barrier = threading.Barrier(len(jobs))
    results: list = [None] * len(jobs)

    def work(k):
        barrier.wait()
        try:
            results[k] = [jobs[k]() for _ in range(ROUNDS)]
        except Exception as e:  # the failure under test
            results[k] = e

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=600)
    return results


PATHS = ["dispatch", "custom-op", "program", "cdriver", "run-plan"]


def _bytes(outputs) -> list[bytes]:
    return [y if isinstance(y, bytes) else np.asarray(y).tobytes() for y in outputs]


@pytest.mark.parametrize("path", PATHS)
def test_two_models_in_two_threads_are_bit_exact(arts, path):
    runs = {name: _runner(path, arts[name][0]) for name in MODELS}
    alone = {name: _bytes(runs[name](arts[name][1])) for name in MODELS}
    if path != "program":
        for name in MODELS:
            assert alone[name] == arts[name][2], name
    results = _concurrently([lambda n=name: _bytes(runs[n](arts[n][1])) for name in MODELS])
    for name, result in zip(MODELS, results):
        assert not isinstance(result, Exception), f"{name}: {result}"
        assert result == [alone[name]] * ROUNDS, name


@pytest.mark.parametrize("path", PATHS)
def test_each_error_belongs_to_its_own_run(arts, path):
    good, (broken_art, intact, x_broken) = MODELS[0], arts["broken"]
    bad_art = broken_art if path in ("dispatch", "custom-op", "program") else intact
    # one runner per thread: two threads of the good model, two of the broken one
    runs = [_runner(path, arts[good][0]) if k % 2 == 0 else _runner(path, bad_art, broken=True)
            for k in range(4)]  # fmt: skip
    expected = _bytes(runs[0](arts[good][1]))
    results = _concurrently([
        (lambda r=r: _bytes(r(arts[good][1]))) if k % 2 == 0 else (lambda r=r: _bytes(r(x_broken)))
        for k, r in enumerate(runs)])  # fmt: skip
    for k, result in enumerate(results):
        if k % 2 == 0:
            assert not isinstance(result, Exception), f"the good model failed: {result}"
            assert result == [expected] * ROUNDS
        else:
            assert isinstance(result, Exception), "the broken model ran"
            message = str(result)
            assert "\n" not in message
            if path in ("dispatch", "custom-op", "program"):
                assert "step 0 has unknown kind 77" in message, message
            elif path == "cdriver":
                assert "layer 0" in message, message
            else:
                assert "int16" in message, message


def test_one_run_plan_shared_by_two_threads_runs_one_run_at_a_time(arts):
    from qaccel.backends.vta.run_plan import load_run_plan

    art, x, expected = arts[MODELS[0]]
    plan = load_run_plan(art)
    results = _concurrently([lambda: _bytes(plan.run(x))] * 2)
    assert results == [[expected] * ROUNDS] * 2
