"""`qaccel-run OUTDIR --inputs-dir DIR`: every input set on the artifact (host ops on the
interpreter, accelerator layers on the simulator), in parallel, against LiteRT's reference
kernels; labels give top-1 accuracy."""

from __future__ import annotations

import json

import numpy as np
import pytest

from conftest import FIXTURE_MODELS
from qaccel import api
from qaccel.backends.litert.oracle import litert_available
from qaccel.explore.dataset import DatasetError, load_input_sets
from qaccel.tools import qaccel_run

needs_litert = pytest.mark.skipif(not litert_available(), reason="needs ai-edge-litert")


@pytest.fixture(scope="module")
def artifact(tmp_path_factory):
    model = FIXTURE_MODELS / "small_cnn.tflite"
    out = tmp_path_factory.mktemp("art") / "small_cnn"
    return api.write_artifact(api.compile(model, "vta-store-requant"), out, model)


def _sets(n: int, seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(-128, 128, (n, 1, 32, 32, 3), dtype=np.int8)


@needs_litert
def test_inputs_dir_agrees_with_litert(artifact, tmp_path, capsys):
    data = tmp_path / "data"
    data.mkdir()
    xs = _sets(5)
    for i, x in enumerate(xs):
        np.save(data / f"img_{i}.npy", x)
    ours = [int(np.argmax(api.run_simulator(artifact, [x])[0])) for x in xs]
    labels = np.array([ours[0], ours[1], (ours[2] + 1) % 10, ours[3], (ours[4] + 1) % 10])
    np.save(tmp_path / "labels.npy", labels)
    out = tmp_path / "res"
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(artifact), "--inputs-dir", str(data), "--labels",
                         str(tmp_path / "labels.npy"), "--outputs-dir", str(out), "--jobs", "2"])
    assert e.value.code == 0, capsys.readouterr().err
    printed = capsys.readouterr().out
    assert "bit-exact with LiteRT on 5/5, max |diff| 0" in printed
    summary = json.loads((out / "summary.json").read_text())
    assert summary["sets"] == 5 and summary["bit_exact"] == 5 and summary["max_abs_diff"] == 0
    assert summary["top1_agreement"] == 1.0
    assert summary["accuracy"] == summary["litert_accuracy"] == 0.6
    assert [s["name"] for s in summary["per_set"]] == [f"img_{i}" for i in range(5)]
    y = np.load(out / "img_3" / "output_0.npy")
    assert np.array_equal(y, api.run_simulator(artifact, [xs[3]])[0])


@needs_litert
def test_one_npz_of_input_sets_through_the_api(artifact, tmp_path):
    np.savez(tmp_path / "sets.npz", batch=_sets(3, seed=1), single=_sets(1, seed=2)[0])
    sets = load_input_sets(tmp_path / "sets.npz", [(1, 32, 32, 3)])
    assert [name for name, _ in sets] == ["batch_0", "batch_1", "batch_2", "single"]
    summary = api.evaluate(artifact, tmp_path / "sets.npz", jobs=1)
    assert (summary.sets, summary.bit_exact, summary.max_abs_diff) == (4, 4, 0)


@pytest.mark.parametrize(("extra", "message"), [
    (["--inputs-dir", "nowhere"], "nowhere: expected a folder of .npy/.npz input sets"),
    (["--inputs-dir", "DATA", "--labels", "LABELS"], "1 label(s) for 2 input set(s)"),
    (["--inputs-dir", "DATA", "--random-inputs", "0"], "either --inputs-dir or --inputs"),
    (["--labels", "LABELS"], "--labels, --jobs and --ray go with --inputs-dir"),
])  # fmt: skip
def test_dataset_errors_are_one_line(artifact, tmp_path, capsys, extra, message):
    data = tmp_path / "data"
    data.mkdir()
    for i, x in enumerate(_sets(2)):
        np.save(data / f"{i}.npy", x)
    np.save(tmp_path / "labels.npy", np.array([1]))
    argv = [a.replace("DATA", str(data)).replace("LABELS", str(tmp_path / "labels.npy"))
            for a in extra]  # fmt: skip
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(artifact), *argv, "--outputs-dir", str(tmp_path / "o")])
    err = capsys.readouterr().err
    assert e.value.code == 1 and err.count("\n") == 1 and message in err, err


def test_model_with_two_inputs_needs_npz_per_set(tmp_path):
    np.save(tmp_path / "a.npy", np.zeros((1, 4), np.int8))
    with pytest.raises(DatasetError, match="has 2 inputs; give one .npz per input set"):
        load_input_sets(tmp_path, [(1, 4), (1, 4)])
