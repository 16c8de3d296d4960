"""Every fixture model through the whole VTA pipeline that exists so far, with
`--verify-semantics` checking after every pass that the outputs stay bit-identical."""

from pathlib import Path

import pytest

from qaccel.tools.qaccel_opt import main as qaccel_opt

from conftest import FIXTURE_MODELS, fixture_models

RUNNABLE = [p for p in fixture_models() if p.stem != "mobilenetv2_035_96_collapsed"]


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_vta_pipeline_keeps_semantics(path: Path, tmp_path, capsys):
    out = tmp_path / "out.mlir"
    try:
        qaccel_opt([str(path), "-p", "vta-pipeline", "--verify-semantics=5", "-o", str(out)])
    except SystemExit as e:
        pytest.fail(f"qaccel-opt exited {e.code}: {capsys.readouterr().err}")
    assert "accel." in out.read_text()  # the accelerator functions are lowered


def test_refused_model_is_reported_by_verify_semantics(capsys):
    with pytest.raises(SystemExit) as exit_info:
        qaccel_opt([str(FIXTURE_MODELS / "mobilenetv2_035_96_collapsed.tflite"),
                    "-p", "legalize-tfl-to-q", "--verify-semantics"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "tfl.softmax" in err
