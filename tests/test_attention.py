"""The attention core inside accelerator functions: the transformer corpus model's lane-moving
reshapes, transposes and int8 softmax are host steps of its programs (GATHER, SOFTMAX), its
activation x activation BATCH_MATMULs GEMM layers (tests/test_bmm_gemm.py), bit-exact with BUILTIN_REF through the artifact
(run plan and C driver) and through LiteRT (partitions spliced), on both bundled
configurations; and the kernels agree with the reference kernels on random rows."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from qaccel.kernels import attention as at
from qaccel.kernels import arithmetic as ar

TRANSFORMER = Path(__file__).parent / "fixtures" / "corpus" / "transformer.tflite"


def test_softmax_table_matches_the_fixed_point_exponentials():
    rng = np.random.default_rng(0)
    m, left_shift, diff_min = 2061584256, 21, -992
    x = rng.integers(-128, 128, size=(64, 16)).astype(np.int8)
    diff = x.astype(np.int64) - x.astype(np.int64).max(axis=-1, keepdims=True)
    direct = ar.exp_on_negative_values(
        ar.saturating_rounding_doubling_high_mul(diff << left_shift, m), 5)
    table = at.softmax_exp_table(m, left_shift, diff_min)
    assert np.array_equal(table[-diff], direct)
    y = at.softmax_int8(x, m, left_shift, diff_min)
    assert y.dtype == np.int8 and y.shape == x.shape


def test_relayout_index_is_the_packed_transpose():
    from qaccel.kernels.layout import Packing, pack

    x = np.arange(1 * 5 * 2 * 7, dtype=np.int64).reshape(1, 5, 2, 7) % 100
    packed = pack(x.astype(np.int8), Packing.activations(4, 4), 9)
    y = at.relayout_packed(packed, [1, 5, 2, 7], [1, 5, 2, 7], [0, 2, 1, 3], 9)
    expect = pack(x.transpose(0, 2, 1, 3).astype(np.int8), Packing.activations(4, 4), 9)
    assert np.array_equal(y, expect)


def _program_kinds(blob: bytes) -> list[int]:
    from qaccel.backends.vta.program.writer import STEP_BYTES

    n_steps = struct.unpack_from("<I", blob, 36)[0]
    steps_at = struct.unpack_from("<Q", blob, 192 - 24)[0]
    return [struct.unpack_from("<I", blob, steps_at + STEP_BYTES * k)[0] for k in range(n_steps)]


@pytest.mark.parametrize("config", ["vta-default", "vta-store-requant"])
def test_transformer_attention_runs_inside_bit_exact(config, tmp_path, capsys):
    from qaccel.tools.qaccel_compile import run as compile_run
    from qaccel.tools.qaccel_run import run

    art = tmp_path / "art"
    assert compile_run([str(TRANSFORMER), "-o", str(art), "--config", config]) == 0
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "into 1 partition" in out  # with the layer norms inside too
    assert "MACs on the accelerator: 100.00%" in out  # the two products on the GEMM core
    for needle in ("accel.relayout", "accel.softmax", "accel.bmm_zp_correction"):
        assert f"host fallback inside vta_fn_0: {needle}" in out
    kinds = _program_kinds((art / "programs" / "vta_fn_0.qprog").read_bytes())
    assert {13, 16, 22} <= set(kinds)  # GATHER, SOFTMAX, BMM_CORRECTIONS (both heads at once)
    runs = [["--driver", "c"], [], ["--runtime", "litert"]] if config == "vta-default" else [[]]
    for extra in runs:
        code = run([str(art), "--outputs-dir", str(tmp_path / "o"), "--compare-litert",
                    "--random-inputs", "3", *extra])  # fmt: skip
        text = capsys.readouterr().out
        assert code == 0 and "(bit-exact)" in text, text
