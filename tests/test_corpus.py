"""The model corpus (`tests/fixtures/corpus/`, real converter output from many architectures)
bit-exact with its committed BUILTIN_REF outputs at every stage (`explore/conformance.py`): the
tfl interpreter, the interpreter after every pass of `vta-pipeline`, the compiled model on the
simulators and the artifact folder's run plan, for both bundled configurations. The reference
outputs are committed (`NAME.ref.npz`), so LiteRT does not run here.

One input set per model (the corpus holds two; `check_committed(path)` checks both). The
Python reference simulator runs only for the models in `PYTHON_SIMULATOR` (it is about 35x
slower than the C one); every other model runs its accelerator layers on the C simulator only.

A model that fails today for a known reason is in `KNOWN_FAILURES`, as a strict xfail: the
change that makes it pass must remove its entry.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qaccel.explore.conformance import CONFIGS, check_committed, committed_reference

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
MODELS = sorted(p.stem for p in CORPUS.glob("*.tflite"))

PYTHON_SIMULATOR = {"batch2", "ds_cnn"}
"""Small enough for the Python reference simulator too (seconds)."""

INT16 = "int16x8"
"""16x8 quantization: qaccel refuses it at import in one line, or runs it bit-exact."""

KNOWN_FAILURES: dict[str, str] = {
}
"""model -> why it fails today (missing CPU kernels, or the stage and error)."""


def _param(name: str):
    if name in KNOWN_FAILURES:
        return pytest.param(name, marks=pytest.mark.xfail(strict=True,
                                                           reason=KNOWN_FAILURES[name]))
    return name


@pytest.mark.parametrize("name", [_param(n) for n in MODELS if n != INT16])
def test_corpus_model_is_bit_exact_at_every_stage(name):
    simulators = ("c", "python") if name in PYTHON_SIMULATOR else ("c",)
    result = check_committed(CORPUS / f"{name}.tflite", input_sets=1, simulators=simulators)
    assert result.ok, result.line()
    assert set(result.layers) == set(CONFIGS)
    assert all(result.run_plans.values()), result.run_plans


@pytest.mark.parametrize("name", [_param(INT16)])
def test_int16x8_model_is_refused_in_one_line_or_bit_exact(name):
    result = check_committed(CORPUS / f"{name}.tflite", input_sets=1, simulators=("c",))
    if result.ok:
        return
    assert result.kind == "refused" and result.failure.startswith("import: "), result.line()
    assert "\n" not in result.failure, result.line()


def test_every_corpus_model_has_its_reference_and_a_readme_row():
    readme = (CORPUS / "README.md").read_text()
    assert len(MODELS) >= 18
    total = 0
    for name in MODELS:
        size = (CORPUS / f"{name}.tflite").stat().st_size
        total += size
        assert size <= 400 * 1024, name
        assert f"| `{name}.tflite` |" in readme, name
        inputs, reference = committed_reference(CORPUS / f"{name}.ref.npz")
        assert len(inputs) == 2 and len(reference.outputs) == 2, name
        # Outputs that depend on the input: the reference is not a degenerate one.
        for k, y in enumerate(reference.outputs[0]):
            assert not np.array_equal(y, reference.outputs[1][k]), (name, k)
    assert total < 4 * 1024 * 1024


def test_known_failures_name_corpus_models():
    assert set(KNOWN_FAILURES) <= set(MODELS)


def test_a_wrong_committed_output_is_a_mismatch(tmp_path):
    """`check_committed` compares with the committed arrays, not with a fresh LiteRT run."""
    import shutil

    shutil.copyfile(CORPUS / "batch2.tflite", tmp_path / "batch2.tflite")
    with np.load(CORPUS / "batch2.ref.npz") as data:
        arrays = {k: data[k].copy() for k in data.files}
    arrays["output_0_0"].flat[3] ^= 1
    np.savez(tmp_path / "batch2.ref.npz", **arrays)
    result = check_committed(tmp_path / "batch2.tflite", input_sets=1, configs=("vta-default",),
                             simulators=("c",))  # fmt: skip
    assert result.kind == "mismatch", result.line()
    assert result.failure.startswith("tfl: interpreter: output 0 of @"), result.line()
