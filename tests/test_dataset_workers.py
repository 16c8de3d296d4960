"""Where a dataset's input sets run (`explore/dataset.py`): threads of one process on the
artifact's run plan (its programs releasing the GIL, a program state per thread) or the
executor's processes; both give the checked simulation's outputs, read a folder's sets as they
run, and end with one line naming the set and its file when one cannot be read or run."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from conftest import FIXTURE_MODELS
from qaccel import api
from qaccel.backends.vta.run_plan import load_run_plan
from qaccel.explore import dataset
from qaccel.explore.dataset import DatasetError, evaluate_dataset, input_shapes, load_input_sets
from qaccel.explore.executors import LocalExecutor
from qaccel.tools import qaccel_run


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    model = FIXTURE_MODELS / "small_cnn.tflite"
    out = tmp_path_factory.mktemp("art") / "small_cnn"
    return api.write_artifact(api.compile(model, "vta-store-requant"), out, model)


def _sets(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, (n, 1, 32, 32, 3), dtype=np.int8)


@pytest.fixture(scope="module")
def expected(artifact):
    """Every layer simulated with every check, one set at a time."""
    plan = load_run_plan(artifact)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("QACCEL_SIMULATION", "checked")
        checked = load_run_plan(artifact)
        outputs = [checked.run([x])[0] for x in _sets(6)]
    assert plan.concurrent  # every accelerator function runs through its program
    return outputs


def _folder(tmp_path, xs) -> list:
    data = tmp_path / "data"
    data.mkdir()
    for i, x in enumerate(xs):
        np.save(data / f"img_{i}.npy", x)
    return data


@pytest.mark.parametrize("workers", ["threads", "processes", "auto"])
def test_threads_and_processes_give_the_checked_outputs(artifact, expected, tmp_path, workers):
    data = _folder(tmp_path, _sets(6))
    sets = load_input_sets(data, input_shapes(artifact))
    out = tmp_path / "out"
    summary = evaluate_dataset(artifact, sets, executor=LocalExecutor(2), outputs_dir=out,
                               compare=False, workers=workers)  # fmt: skip
    assert [s["name"] for s in summary.per_set] == [f"img_{i}" for i in range(6)]
    for i, want in enumerate(expected):
        assert np.array_equal(np.load(out / f"img_{i}" / "output_0.npy"), want)
        assert summary.per_set[i]["top1"] == int(np.argmax(want))


def test_threads_run_the_plan_in_parallel_each_with_its_own_state(artifact, expected):
    """Runs of one plan on several threads at once: no run sees another's values."""
    plan = load_run_plan(artifact)
    xs = _sets(6)
    got: dict[tuple[int, int], np.ndarray] = {}
    start = threading.Barrier(3)

    def work(t: int) -> None:
        start.wait()
        for r in range(4):
            i = (t + 2 * r) % 6
            got[t, r] = (i, plan.run([xs[i]])[0])

    threads = [threading.Thread(target=work, args=(t,)) for t in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 12
    for i, y in got.values():
        assert np.array_equal(y, expected[i])
    assert plan.layer_runs == 12 * plan.layer_count


def test_a_folder_is_read_as_its_sets_run(artifact, tmp_path, monkeypatch):
    data = _folder(tmp_path, _sets(3))
    reads = []
    real = np.load
    monkeypatch.setattr(dataset.np, "load", lambda p, **k: (reads.append(p), real(p, **k))[1])
    sets = load_input_sets(data, input_shapes(artifact))
    assert len(sets) == 3 and reads == []
    assert sets.names == ["img_0", "img_1", "img_2"]
    name, (x,) = sets[1]
    assert name == "img_1" and reads == [data / "img_1.npy"] and x.shape == (1, 32, 32, 3)


@pytest.mark.parametrize("workers", ["threads", "processes"])
@pytest.mark.parametrize(("bad", "message"), [
    (np.zeros((1, 32, 32, 4), np.int8), ("input set 'img_3' ({file}): @main input 0: expected "
                                         "shape [1, 32, 32, 3], got [1, 32, 32, 4]")),
    (np.zeros((1, 32, 32, 3), np.float32), ("input set 'img_3' ({file}): @main input 0: "
                                            "expected dtype int8, got float32")),
    (b"not an array", "cannot read input '{file}'"),
])  # fmt: skip
def test_a_bad_set_is_one_error_naming_its_file(artifact, tmp_path, workers, bad, message):
    data = _folder(tmp_path, _sets(6))
    file = data / "img_3.npy"
    if isinstance(bad, bytes):
        file.write_bytes(bad)
    else:
        np.save(file, bad)
    sets = load_input_sets(data, input_shapes(artifact))
    entry = load_run_plan(artifact).meta["entry"]
    with pytest.raises(DatasetError) as e:
        evaluate_dataset(artifact, sets, executor=LocalExecutor(2), compare=False,
                         workers=workers)  # fmt: skip
    text = message.format(file=file).replace("@main", f"@{entry}")
    assert str(e.value).startswith(text) and "\n" not in str(e.value), str(e.value)


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_qaccel_run_reports_a_bad_set_in_one_line(artifact, tmp_path, capsys, jobs):
    data = _folder(tmp_path, _sets(4))
    np.save(data / "img_2.npy", np.zeros((1, 8, 8, 3), np.int8))
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(artifact), "--inputs-dir", str(data), "--no-compare",
                         "--outputs-dir", str(tmp_path / "out"), "--jobs", jobs])  # fmt: skip
    err = capsys.readouterr().err
    assert e.value.code == 1 and err.count("\n") == 1, err
    assert err.startswith(f"qaccel-run: error: input set 'img_2' ({data / 'img_2.npy'}): "), err
    assert "expected shape [1, 32, 32, 3], got [1, 8, 8, 3]" in err


def test_workers_is_checked(artifact):
    with pytest.raises(ValueError, match="workers is auto, threads or processes"):
        evaluate_dataset(artifact, [("a", [_sets(1)[0]])], compare=False, workers="fibers")


@pytest.mark.parametrize("save", [np.savez, np.savez_compressed])
def test_an_npz_of_sets_is_mapped_not_read_whole(tmp_path, save):
    batch, single = _sets(3, seed=1), _sets(1, seed=2)[0]
    save(tmp_path / "sets.npz", batch=batch, single=single)
    sets = load_input_sets(tmp_path / "sets.npz", [(1, 32, 32, 3)])
    assert sets.names == ["batch_0", "batch_1", "batch_2", "single"]
    for (_, (x,)), want in zip(sets, [*batch, single]):
        assert np.array_equal(x, want)
        assert isinstance(x, np.memmap) == (save is np.savez)  # stored members are mapped
