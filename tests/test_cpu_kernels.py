"""CPU kernels: the registry API, hand-checked results, Prepare refusals, and the harness the
oracle sweeps (tests/test_cpu_sweep_*.py) use.

The harness packs many independent single-op cases into ONE model (one subgraph, each case
with its own inputs and outputs), runs LiteRT's reference kernels on it in one subprocess, and
compares every case's output with our kernel's, element for element.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from qaccel.kernels.registry import (
    KERNELS,
    KernelError,
    OpCall,
    Refusal,
    UnsupportedOp,
    prepare,
    run,
)
from qaccel.kernels.qparams import QParams
from qaccel.frontend.builder import ModelBuilder, TensorSpec


# --------------------------------------------------------------------------------------------
# Harness


@dataclass
class Case:
    """One operator application: `inputs` with data are constants, the others are fed from
    `feeds` (in order); None is an omitted optional input."""

    op: str
    inputs: list[TensorSpec | None]
    outputs: list[TensorSpec]
    options: dict[str, Any] = field(default_factory=dict)
    feeds: list[np.ndarray] = field(default_factory=list)
    label: str = ""
    version: int = 1  # the opcode's version (LiteRT registers some ops from version 2 on)

    def call(self) -> OpCall:
        feeds = iter(self.feeds)
        arrays = []
        for spec in self.inputs:
            if spec is None:
                arrays.append(None)
            elif spec.data is not None:
                arrays.append(np.asarray(spec.data).reshape(spec.shape))
            else:
                arrays.append(next(feeds, None))  # None: unknown at Prepare time
        return OpCall(
            inputs=arrays,
            input_q=[None if s is None else s.quant for s in self.inputs],
            output_q=[s.quant for s in self.outputs],
            output_shapes=[tuple(s.shape) for s in self.outputs],
            output_dtypes=[np.dtype(s.dtype) for s in self.outputs],
            options=dict(self.options),
            input_dtypes=[None if s is None else np.dtype(s.dtype) for s in self.inputs],
            input_shapes=[None if s is None else tuple(s.shape) for s in self.inputs],
        )

    def ours(self) -> list[np.ndarray]:
        return run(self.op, self.call())

    def describe(self) -> str:
        return self.label or f"{self.op} {[None if s is None else s.shape for s in self.inputs]}"


def batch_model(cases: list[Case]) -> bytes:
    mb = ModelBuilder()
    g = mb.subgraph("main")
    for i, case in enumerate(cases):
        idx = []
        for spec in case.inputs:
            if spec is None:
                idx.append(None)
                continue
            t = g.add_tensor(TensorSpec(f"c{i}_{spec.name}", spec.shape, spec.dtype, spec.quant,
                                        spec.data))
            if spec.data is None:
                g.inputs.append(t)
            idx.append(t)
        outs = [TensorSpec(f"c{i}_{s.name}", s.shape, s.dtype, s.quant) for s in case.outputs]
        g.output(g.op(case.op, idx, outs, case.options, version=case.version))
    return mb.build()


def oracle_outputs(oracle, cases: list[Case]) -> list[list[np.ndarray]]:
    """LiteRT's outputs for every case, from one subprocess (a refusal is bisected down to
    the refused case to name it)."""
    feeds = [a for case in cases for a in case.feeds]
    ref = oracle(batch_model(cases), [feeds], keep_all_tensors=False)
    if ref.refused:
        culprit = _find_refused(oracle, cases) if len(cases) > 1 else cases[0]
        raise AssertionError(f"LiteRT refused case {culprit.describe()}: {ref.refused}")
    flat = iter(ref.outputs[0])
    return [[next(flat) for _ in case.outputs] for case in cases]


def _find_refused(oracle, cases: list[Case]) -> Case:
    while len(cases) > 1:
        half = cases[: len(cases) // 2]
        feeds = [a for case in half for a in case.feeds]
        refused = oracle(batch_model(half), [feeds], keep_all_tensors=False).refused
        cases = half if refused else cases[len(cases) // 2:]
    return cases[0]


def assert_bit_exact(oracle, cases: list[Case]) -> int:
    """Run every case on LiteRT and on our kernels; fail listing each mismatching case.
    Returns the number of elements compared."""
    theirs = oracle_outputs(oracle, cases)
    problems, compared = [], 0
    for case, want in zip(cases, theirs):
        try:
            got = case.ours()
        except Exception as exc:  # a refusal or crash of ours is a mismatch too
            problems.append(f"{case.describe()}: our kernel raised {type(exc).__name__}: {exc}")
            continue
        for k, (g, w) in enumerate(zip(got, want)):
            compared += w.size
            if g.shape != w.shape or g.dtype != w.dtype:
                problems.append(f"{case.describe()} output {k}: ours {g.dtype}{list(g.shape)}, "
                                f"LiteRT {w.dtype}{list(w.shape)}")
                continue
            if g.dtype.kind == "f":  # bit for bit: -0.0 is not 0.0; any NaN matches any NaN
                bits = np.dtype(f"u{g.dtype.itemsize}")
                same = (g.view(bits) == w.view(bits)) | (np.isnan(g) & np.isnan(w))
            else:
                same = g == w
            if not np.all(same):
                bad = np.argwhere(~same)[0]
                problems.append(
                    f"{case.describe()} output {k}: {int(np.sum(~same))}/{w.size} differ, first "
                    f"at {tuple(bad)}: ours {g[tuple(bad)]!r}, LiteRT {w[tuple(bad)]!r}")
    assert not problems, f"{len(problems)} of {len(cases)} cases differ:\n" + "\n".join(
        problems[:30])
    return compared


def qt(scale: float, zp: int) -> QParams:
    return QParams.per_tensor(scale, zp)


def spec(name: str, shape, dtype=np.int8, q: QParams | None = None, data=None) -> TensorSpec:
    return TensorSpec(name, tuple(shape), dtype, q, data)


def call_of(op_inputs, input_q, output_shape, output_dtype=np.int8, output_q=None,
            **options) -> OpCall:
    return OpCall(inputs=list(op_inputs), input_q=list(input_q), output_q=[output_q],
                  output_shapes=[tuple(output_shape)], output_dtypes=[np.dtype(output_dtype)],
                  options=options)


# --------------------------------------------------------------------------------------------
# Registry and API


REQUIRED_OPS = (
    "CONV_2D DEPTHWISE_CONV_2D FULLY_CONNECTED ADD SUB MUL AVERAGE_POOL_2D MAX_POOL_2D MEAN "
    "SUM RESHAPE SQUEEZE SOFTMAX CONCATENATION PAD PADV2 QUANTIZE DEQUANTIZE RELU RELU6 "
    "LEAKY_RELU LOGISTIC TANH HARD_SWISH STRIDED_SLICE SLICE SHAPE PACK TRANSPOSE GATHER "
    "EMBEDDING_LOOKUP RESIZE_NEAREST_NEIGHBOR RESIZE_BILINEAR"
).split()


def test_every_required_op_has_a_kernel():
    assert set(REQUIRED_OPS) <= set(KERNELS)


def test_prepare_rejects_unknown_ops():
    with pytest.raises(UnsupportedOp, match="NON_MAX_SUPPRESSION_V4"):
        prepare("NON_MAX_SUPPRESSION_V4", call_of([None], [None], (1,)))


# --------------------------------------------------------------------------------------------
# Hand-checked results


def test_conv_hand_computed():
    # 1x3x3x1 input, 2x2 filter of ones, VALID: sums of 2x2 windows of (x - zp).
    x = np.array([1, 2, 3, 4, 5, 6, 7, 8, 9], np.int8).reshape(1, 3, 3, 1)
    w = np.ones((1, 2, 2, 1), np.int8)
    b = np.array([10], np.int32)
    call = call_of([x, w, b], [qt(1.0, 1), qt(1.0, 0), qt(1.0, 0)], (1, 2, 2, 1),
                   output_q=qt(1.0, -3), padding="VALID", stride_h=1, stride_w=1)
    # windows of x - 1: [0,1,3,4]=8, [1,2,4,5]=12, [3,4,6,7]=20, [4,5,7,8]=24; +10 bias, -3 zp
    np.testing.assert_array_equal(run("CONV_2D", call)[0].reshape(-1), [15, 19, 27, 31])


def test_conv_same_padding_reads_only_in_image_taps():
    # With in_zp = 5 an out-of-image tap would contribute (pad - 5) * w; TFLite skips it.
    x = np.full((1, 2, 2, 1), 5, np.int8)
    w = np.ones((1, 3, 3, 1), np.int8)
    call = call_of([x, w, np.zeros(1, np.int32)], [qt(1.0, 5), qt(1.0, 0), qt(1.0, 0)],
                   (1, 2, 2, 1), output_q=qt(1.0, 0), padding="SAME", stride_h=1, stride_w=1)
    np.testing.assert_array_equal(run("CONV_2D", call)[0], np.zeros((1, 2, 2, 1), np.int8))


def test_average_pool_rounds_half_away_from_zero():
    x = np.array([1, 2, -1, -2], np.int8).reshape(1, 1, 4, 1)
    call = call_of([x], [qt(1.0, 0)], (1, 1, 2, 1), output_q=qt(1.0, 0), padding="VALID",
                   stride_h=1, stride_w=2, filter_height=1, filter_width=2)
    np.testing.assert_array_equal(run("AVERAGE_POOL_2D", call)[0].reshape(-1), [2, -2])


def test_concatenation_is_a_copy():
    a, b = np.arange(4, dtype=np.int8).reshape(2, 2), np.full((2, 1), -7, np.int8)
    q = qt(0.5, 3)
    out = run("CONCATENATION", call_of([a, b], [q, q], (2, 3), output_q=q, axis=-1))[0]
    np.testing.assert_array_equal(out, np.concatenate([a, b], axis=1))


def test_pad_fills_with_output_zero_point():
    x = np.ones((1, 2), np.int8)
    paddings = np.array([[0, 0], [1, 2]], np.int32)
    out = run("PAD", call_of([x, paddings], [qt(0.1, 4), None], (1, 5), output_q=qt(0.1, 4)))[0]
    np.testing.assert_array_equal(out, [[4, 1, 1, 4, 4]])


def test_gather_out_of_range_is_a_kernel_error():
    x = np.arange(6, dtype=np.int8).reshape(3, 2)
    call = call_of([x, np.array([0, 3], np.int32)], [qt(1, 0), None], (2, 2), output_q=qt(1, 0))
    with pytest.raises(KernelError, match="index 3"):
        run("GATHER", call)


def test_strided_slice_masks_like_numpy():
    x = np.arange(2 * 3 * 4, dtype=np.int8).reshape(2, 3, 4)
    # x[..., None, 3::-1]: an ellipsis, a new axis, the last axis reversed (end_mask)
    call = OpCall([x, np.array([0, 0, 3], np.int32), np.array([0, 0, 0], np.int32),
                   np.array([1, 1, -1], np.int32)], [None] * 4, [None], [(2, 3, 1, 4)],
                  [np.dtype(np.int8)],
                  {"ellipsis_mask": 1, "new_axis_mask": 2, "end_mask": 4})
    np.testing.assert_array_equal(run("STRIDED_SLICE", call)[0], x[..., None, ::-1])


# --------------------------------------------------------------------------------------------
# Refusals (Prepare-time checks of the reference kernels)


def _softmax_call(in_scale: float, beta: float = 1.0) -> OpCall:
    return call_of([None], [qt(in_scale, 0)], (1, 10), output_q=qt(1 / 256, -128), beta=beta)


def test_softmax_refuses_tiny_input_scale():
    with pytest.raises(Refusal, match=r"^SOFTMAX: beta \* input_scale \* 2\*\*26"):
        prepare("SOFTMAX", _softmax_call(1e-8))
    prepare("SOFTMAX", _softmax_call(1e-7))  # 1e-7 * 2**26 = 6.7 > 1


def test_concatenation_refuses_mixed_quantization():
    a = qt(0.5, 3)
    call = call_of([None, None], [a, qt(0.25, 3)], (2, 4), output_q=a, axis=1)
    with pytest.raises(Refusal, match="CONCATENATION: input 1 quantization"):
        prepare("CONCATENATION", call)


def test_add_refuses_output_multiplier_above_one():
    call = call_of([None, None], [qt(1.0, 0), qt(1.0, 0)], (4,), output_q=qt(1e-7, 0))
    with pytest.raises(Refusal, match="ADD: output multiplier"):
        prepare("ADD", call)


def test_conv_refuses_missing_bias_and_bad_channels():
    w = np.ones((4, 3, 3, 3), np.int8)
    base = dict(padding="SAME", stride_h=1, stride_w=1)
    no_bias = call_of([np.zeros((1, 5, 5, 3), np.int8), w, None],
                      [qt(1, 0), qt(1, 0), None], (1, 5, 5, 4), output_q=qt(1, 0), **base)
    with pytest.raises(Refusal, match="requires a bias"):
        prepare("CONV_2D", no_bias)
    bad = call_of([np.zeros((1, 5, 5, 4), np.int8), w, np.zeros(4, np.int32)],
                  [qt(1, 0), qt(1, 0), qt(1, 0)], (1, 5, 5, 4), output_q=qt(1, 0), **base)
    with pytest.raises(Refusal, match="not a multiple"):
        prepare("CONV_2D", bad)


def test_add_refuses_unbroadcastable_shapes():
    call = call_of([np.zeros((2, 3), np.int8), np.zeros((4,), np.int8)],
                   [qt(1, 0), qt(1, 0)], (2, 3), output_q=qt(1, 0))
    with pytest.raises(Refusal, match=r"ADD: shapes \[2, 3\] and \[4\]"):
        prepare("ADD", call)


def test_refusal_messages_are_one_line():
    with pytest.raises(Refusal) as info:
        prepare("SOFTMAX", _softmax_call(1e-9))
    assert "\n" not in str(info.value)


def test_reduce_prod_of_integers_is_bit_exact(oracle):
    """REDUCE_PROD on int32 (the converter's dynamic Reshape arithmetic) and int64: axes,
    keep_dims, negative axes, an empty reduction, and products that wrap."""
    rng = np.random.default_rng(7)
    cases = []
    for dtype in (np.int32, np.int64):
        for shape, axes, keep in [((3,), [0], False), ((2, 3, 4), [1], True),
                                  ((2, 3, 4), [-1, 0], False), ((4, 5), [], False)]:  # fmt: skip
            x = rng.integers(-9, 10, shape).astype(dtype)
            if shape == (4, 5):
                x = rng.integers(60000, 70000, shape).astype(dtype)  # wraps modulo 2**32/2**64
            reduced = tuple(1 if keep and i in [a % len(shape) for a in axes] else d
                            for i, d in enumerate(shape)
                            if keep or i not in [a % len(shape) for a in axes])  # fmt: skip
            cases.append(Case(
                "REDUCE_PROD",
                [TensorSpec("x", shape, dtype), TensorSpec("axes", (len(axes),), np.int32,
                                                           data=np.array(axes, np.int32))],
                [TensorSpec("y", reduced, dtype)], {"keep_dims": keep}, feeds=[x],
                label=f"REDUCE_PROD {np.dtype(dtype)} {shape} axes {axes} keep {keep}"))
    assert assert_bit_exact(oracle, cases) > 0
