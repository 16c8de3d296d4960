"""Real data: the int8 digits classifier (`tools/make_digits_example.py`, trained on
scikit-learn's handwritten digits) compiled for the accelerator and run on its whole test split
as the README shows: bit-exact with LiteRT's reference kernels on every image, so the top-1
accuracy is LiteRT's. Needs no TensorFlow (the model and data are committed)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from qaccel.tools import qaccel_compile, qaccel_run

DIGITS = Path(__file__).parent / "fixtures" / "digits"


def test_digits_data_is_what_qaccel_run_takes():
    images = sorted((DIGITS / "inputs").glob("*.npy"))
    labels = np.load(DIGITS / "labels.npy")
    assert len(images) == len(labels) == 360
    assert set(labels.tolist()) == set(range(10))
    first = np.load(images[0])
    assert first.dtype == np.int8 and first.shape == (1, 8, 8, 1)


def test_digits_accuracy_on_the_accelerator_equals_litert_bit_exact(tmp_path, capsys):
    pytest.importorskip("ai_edge_litert")
    out, results = tmp_path / "out", tmp_path / "results"
    with pytest.raises(SystemExit) as e:
        qaccel_compile.main([str(DIGITS / "model.tflite"), "-o", str(out), "--quiet"])
    assert e.value.code == 0
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(out), "--inputs-dir", str(DIGITS / "inputs"), "--labels",
                         str(DIGITS / "labels.npy"), "--outputs-dir", str(results),
                         "--jobs", "2"])  # fmt: skip
    assert e.value.code == 0
    printed = capsys.readouterr().out
    assert "bit-exact with LiteRT on 360/360" in printed
    summary = json.loads((results / "summary.json").read_text())
    assert summary["bit_exact"] == summary["sets"] == 360 and summary["max_abs_diff"] == 0
    assert summary["accuracy"] == summary["litert_accuracy"]
    assert summary["accuracy"] > 0.95  # a trained network, not random weights
