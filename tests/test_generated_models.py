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
from qaccel.frontend.random_models import PENDING_OPS, generate, generate_model
from qaccel.kernels.registry import KERNELS

SEEDS = range(21)  # seed 20: the first with a PAD since the generator makes more kinds of op

OPS = {
    "CONV_2D", "DEPTHWISE_CONV_2D", "FULLY_CONNECTED", "ADD", "SUB", "MUL", "AVERAGE_POOL_2D",
    "MAX_POOL_2D", "MEAN", "PAD", "CONCATENATION", "RESHAPE", "SOFTMAX", "LOGISTIC", "HARD_SWISH",
    "SHAPE", "STRIDED_SLICE", "PACK", "QUANTIZE", "DEQUANTIZE", "TRANSPOSE", "GATHER",
}  # fmt: skip

MORE_OPS = {
    "RESIZE_NEAREST_NEIGHBOR", "RESIZE_BILINEAR", "SQUEEZE", "SLICE", "LEAKY_RELU", "TANH",
    "RELU", "RELU6", "SUM",
}  # fmt: skip
"""Ops with CPU kernels that 200 seeds use (the fixed seeds need not)."""


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
        "large feature maps", "fc per-channel", "fc per-tensor", "dynamic batch", "batch 2",
        "reshape computed shape", "reshape -1 batch", "float island", "float input",
        "float output", "gather axis last", "gather axis inner",
    ]  # fmt: skip
    assert not [f for f in wanted if not features[f]]


def test_generated_models_use_the_ops_with_cpu_kernels():
    ops = Counter()
    for seed in range(200):
        ops.update(generate(seed).ops)
    assert MORE_OPS <= set(ops), MORE_OPS - set(ops)
    assert not set(ops) - set(KERNELS)


def test_the_fixed_seeds_have_dynamic_batches_and_computed_reshapes():
    from qaccel.frontend.tflite_writer import read_model

    dynamic = computed = 0
    for seed in SEEDS:
        g = generate(seed)
        tensors = read_model(g.model).subgraphs[0].tensors
        signatures = [t.shape_signature for t in tensors if t.shape_signature is not None]
        assert all(s[0] == -1 and len(s) >= 1 for s in signatures)
        dynamic += bool(signatures)
        computed += g.features["reshape computed shape"]
    assert dynamic >= 3 and computed >= 1, (dynamic, computed)


def test_rules_for_ops_without_kernels_make_models_litert_accepts(oracle):
    """The rules of the ops whose kernels came last (`PENDING_OPS`, on by themselves once the
    kernels exist): what they make must be valid (LiteRT's reference kernels run it)."""
    from qaccel.backends.litert.oracle import run_reference_batch
    from qaccel.frontend.tflite_writer import read_model

    every = set(KERNELS) | set(PENDING_OPS)
    models, ops = [], Counter()
    for seed in range(60):
        g = generate(seed, every)
        if set(g.ops) & set(PENDING_OPS):
            models.append(g)
            ops.update(g.ops)
    assert set(PENDING_OPS) - {"SPACE_TO_DEPTH"} <= set(ops), \
        set(PENDING_OPS) - set(ops)  # fmt: skip
    jobs = []
    for g in models:
        graph = read_model(g.model).subgraphs[0]
        rng = np.random.default_rng(g.seed)
        xs = []
        for t in (graph.tensors[i] for i in graph.inputs):
            xs.append(rng.integers(-128, 128, t.shape, dtype=np.int8) if t.dtype == np.int8
                      else rng.standard_normal(t.shape).astype(np.float32))  # fmt: skip
        jobs.append((g.model, [xs]))
    refused = [(g.seed, r.refused) for g, r in zip(models, run_reference_batch(jobs)) if r.refused]
    assert not refused, refused[:3]


def test_generation_is_deterministic():
    assert generate_model(3) == generate_model(3)
    assert generate(3).description == generate(3).description
    assert generate_model(3) != generate_model(4)


def test_a_wrong_artifact_output_is_a_mismatch(oracle, monkeypatch):
    real = conformance.run_compiled

    def off_by_one(compiled, inputs, simulator):
        outputs = real(compiled, inputs, simulator)
        outputs[0] = np.ascontiguousarray(outputs[0]).copy()
        outputs[0].reshape(-1).view(np.uint8)[0] ^= 1  # int8 or float32 outputs
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


def test_seed_818_conv_clamp_mul_chain(oracle):
    """A conv whose clamp (a MAXIMUM legalized to q.relu: [244, 255] before the zero point
    -128 is added) feeds a MUL fused into its layer: the layer's int8 offset must hold both
    the clamp and the zero point (it put the zero point at -372 and refused the model)."""
    (result,) = check_models([generate(818)])
    assert result.ok, result.line()
