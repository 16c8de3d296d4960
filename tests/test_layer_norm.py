"""The transformer corpus model's layer norms inside its accelerator partition: MEAN over the
channels (`accel.lane_sum`, a REDUCE and a PAD step of the program), SQUARED_DIFFERENCE, the
DEQUANTIZE -> NEG -> QUANTIZE chain (one table) and the `[1, T, 1]` broadcast MULs
(`accel.lane_broadcast`, a GATHER step), bit-exact with LiteRT's reference kernels on random
inputs through the artifact's run plan (the program runner), on both bundled configurations.
(`test_corpus.py` checks every stage on the committed inputs, `test_litert_splice.py` the
spliced LiteRT models.)"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from qaccel import api
from qaccel.dialects import accel, q, tfl
from qaccel.dialects.names import location_name
from qaccel.backends.vta.run_plan import load_run_plan
from qaccel.explore.conformance import CONFIGS
from qaccel.interpreter.interpreter import entry_function

TRANSFORMER = Path(__file__).parent / "fixtures" / "corpus" / "transformer.tflite"


@pytest.fixture(scope="module")
def inputs():
    rng = np.random.default_rng(24)
    return [[rng.integers(-128, 128, (1, 16, 32)).astype(np.int8)] for _ in range(3)]


@pytest.mark.parametrize("config", CONFIGS)
def test_layer_norms_run_inside_the_partition_bit_exact(config, inputs, oracle, tmp_path):
    compiled = api.compile(TRANSFORMER, config)
    assert len(compiled.functions) == 1  # with the attention core inside too
    host = entry_function(compiled.module)
    on_cpu = [op.name for op in host.walk()  # the norms' ops (the attention's are not ours)
              if isinstance(op, q.MeanOp | q.SquaredDifferenceOp | q.MulOp | q.LutOp
                            | tfl.DequantizeOp | tfl.NegOp | tfl.QuantizeOp)
              and "norm" in (location_name(op) or "norm")]  # fmt: skip
    assert on_cpu == [], on_cpu
    body = [op for f in compiled.module.ops if getattr(f, "sym_name", None) is not None
            and f.sym_name.data in compiled.functions for op in f.walk()]  # fmt: skip
    assert sum(isinstance(op, accel.LaneSumOp) for op in body) == 4
    assert sum(isinstance(op, accel.LaneBroadcastOp) for op in body) >= 4
    artifact = api.write_artifact(compiled, tmp_path / "out", TRANSFORMER)
    reference = oracle(TRANSFORMER, inputs).outputs
    for programs in (True, False):  # the program runner, the run plan's own host steps
        plan = load_run_plan(artifact, programs=programs)
        for k, xs in enumerate(inputs):
            got = plan.run(xs)
            assert np.array_equal(got[0], reference[k][0]), (config, programs, k)
