"""Generated models (`frontend/random_models.py`) bit-exact with LiteRT's reference kernels at
every stage (`explore/conformance.py`): the tfl interpreter, the interpreter after every pass of
`vta-pipeline`, the compiled model on both simulators (C and Python) and the artifact folder's
run plan, for both bundled configurations.

A fixed set of seeds runs here (about 15 s, one LiteRT child for all of them);
`benchmarks/bench_generated_models.py N` runs any number."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from qaccel.explore import conformance
from qaccel.explore.conformance import check_models
from qaccel.frontend.builder import QParams, TensorSpec, single_op_model
from qaccel.frontend.random_models import generate, generate_model

SEEDS = range(20)

OPS = {
    "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "SUB", "MUL", "AVERAGE_POOL_2D",
    "MAX_POOL_2D", "MEAN", "PAD", "CONCATENATION", "RESHAPE", "SOFTMAX", "LOGISTIC", "HARD_SWISH",
}  # fmt: skip


@pytest.fixture(scope="module")
def checked(oracle):
    return {int(r.name.split()[-1]): r for r in check_models([generate(s) for s in SEEDS])}


@pytest.mark.parametrize("seed", SEEDS)
def test_generated_model_is_bit_exact_at_every_stage(checked, seed):
    result = checked[seed]
    assert result.ok, result.line()
    assert set(result.layers) == set(conformance.CONFIGS)


def test_artifacts_with_a_run_plan_are_run_by_it_too(checked):
    plans = Counter(has for r in checked.values() for has in r.run_plans.values())
    assert plans[True] >= 10, plans


def test_the_fixed_seeds_use_every_op():
    ops = Counter()
    for seed in SEEDS:
        ops.update(generate(seed).ops)
    assert OPS <= set(ops), OPS - set(ops)


def test_generated_models_cover_the_variants_converters_emit():
    features = Counter()
    for seed in range(200):
        features.update(generate(seed).features)
    wanted = [f"fc rank {r}" for r in (2, 3, 4)] + [
        "fc keep_num_dims", "fc flattening", "fc bias", "fc no bias",
        "conv per-channel", "conv per-tensor", "depthwise per-channel", "depthwise per-tensor",
        "conv SAME", "conv VALID", "depthwise SAME", "depthwise VALID", "conv stride 2",
        "conv dilation 2", "depthwise stride 2", "depthwise dilation 2",
        "conv channels not a multiple of 16", "depthwise multiplier 2", "add broadcast",
        "sub broadcast", "mul broadcast", "block residual", "block inverted residual",
        "block squeeze-excite conv", "block squeeze-excite fc", "block squeeze-excite fc rank 4",
        "conv non-square kernel", "conv unequal strides", "depthwise non-square kernel",
        "large feature maps",
    ]  # fmt: skip
    assert not [f for f in wanted if not features[f]]


def test_generation_is_deterministic():
    assert generate_model(3) == generate_model(3)
    assert generate(3).description == generate(3).description
    assert generate_model(3) != generate_model(4)


def test_a_wrong_artifact_output_is_a_mismatch(oracle, monkeypatch):
    real = conformance.run_compiled

    def off_by_one(compiled, inputs, simulator):
        outputs = real(compiled, inputs, simulator)
        outputs[0] = outputs[0].copy()
        outputs[0].flat[0] ^= 1
        return outputs

    monkeypatch.setattr(conformance, "run_compiled", off_by_one)
    (result,) = check_models([generate(0)], input_sets=1, configs=("vta-default",),
                             simulators=("python",))  # fmt: skip
    assert result.kind == "mismatch"
    assert result.failure.startswith(
        "vta-default: artifact on the python simulator: output 0 of @main")
    assert "1 of " in result.failure


def test_a_model_litert_refuses_is_invalid(oracle):
    x_q = QParams.per_tensor(0.1, 0)
    model = single_op_model("LOGISTIC", [TensorSpec("x", (1, 8), np.int8, x_q)],
                            [TensorSpec("y", (1, 8), np.int8, x_q)])  # not 1/256: refused
    (result,) = check_models([("logistic", model)], input_sets=1)
    assert result.kind == "invalid" and "LiteRT" in result.failure
