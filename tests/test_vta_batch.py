"""Batch > 1 on the accelerator: every layer kind runs a batch of N images as an outer loop
(each image one pass of the batch-1 loop nest, or of the element-wise and pool chunks, on its
own slab of the packed `[N, C/B, H, W, 1, B]` tensors), a dense layer over its N rows; the
network stays one accelerator partition, bit-exact with LiteRT's reference kernels at every
stage (`explore/conformance.py`: the interpreter after every pass, both simulators, the run
plan, both bundled configurations).

The emitters' batched element-wise and pool layers (per-block parameter rows shared by the
images) against the layers' references; convolutions are in `test_vta_codegen.py`, the C
machine against the Python simulator in `test_vta_cmachine.py`."""

from __future__ import annotations

import numpy as np
import pytest
from qaccel.explore.conformance import check_models
from qaccel.frontend.builder import (ModelBuilder, QParams, TensorSpec, bias_tensor,
                                     per_axis_qparams, weights_tensor)  # fmt: skip
from qaccel.lowering.vta.emit_alu import emit_alu, emit_pool
from qaccel.lowering.vta.layers import AluLayer, AluStep, PoolLayer
from qaccel.targets.vta.simulator import simulate

CONV = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "fused_activation_function": "RELU"}


def batch_network(batch: int) -> bytes:
    """conv (20 channels: two blocks, per-channel) -> depthwise -> residual ADD -> 2x2 max pool
    -> conv 1x1 to 16 channels -> Flatten -> FULLY_CONNECTED, on `batch` images."""
    rng = np.random.default_rng(batch)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x_q = QParams.per_tensor(0.05, -3)
    a_q, b_q, c_q = (QParams.per_tensor(s, z) for s, z in ((0.2, -128), (0.15, -128), (0.3, -20)))
    x = g.input("x", (batch, 8, 6, 5), np.int8, x_q)
    w_q = per_axis_qparams(rng, 20, 0)
    a = g.op("CONV_2D", [x, weights_tensor("w0", rng, (20, 3, 3, 5), w_q),
                         bias_tensor("b0", rng, x_q, w_q, 20)],
             TensorSpec("a", (batch, 8, 6, 20), np.int8, a_q), CONV)  # fmt: skip
    dw_q = per_axis_qparams(rng, 20, 3)
    b = g.op("DEPTHWISE_CONV_2D", [a, weights_tensor("w1", rng, (1, 3, 3, 20), dw_q),
                                   bias_tensor("b1", rng, a_q, dw_q, 20)],
             TensorSpec("b", (batch, 8, 6, 20), np.int8, b_q),
             {**CONV, "depth_multiplier": 1})  # fmt: skip
    s = g.op("ADD", [a, b], TensorSpec("s", (batch, 8, 6, 20), np.int8, c_q),
             {"fused_activation_function": "NONE"})
    p = g.op("MAX_POOL_2D", [s], TensorSpec("p", (batch, 4, 3, 20), np.int8, c_q),
             {"padding": "VALID", "stride_w": 2, "stride_h": 2, "filter_width": 2,
              "filter_height": 2, "fused_activation_function": "NONE"})  # fmt: skip
    k_q = QParams.per_tensor(0.01, 0)
    d_q = QParams.per_tensor(0.25, -7)
    d = g.op("CONV_2D", [p, weights_tensor("w2", rng, (16, 1, 1, 20), k_q),
                         bias_tensor("b2", rng, c_q, k_q, 16)],
             TensorSpec("d", (batch, 4, 3, 16), np.int8, d_q), CONV)  # fmt: skip
    shape = TensorSpec("shape", (2,), np.int32, data=np.array([batch, 192], np.int32))
    f = g.op("RESHAPE", [d, shape], TensorSpec("f", (batch, 192), np.int8, d_q))
    y = g.op("FULLY_CONNECTED", [f, weights_tensor("w3", rng, (10, 192), k_q),
                                 bias_tensor("b3", rng, d_q, k_q, 10)],
             TensorSpec("y", (batch, 10), np.int8, QParams.per_tensor(0.2, 4)),
             {"fused_activation_function": "NONE", "keep_num_dims": False})  # fmt: skip
    g.output(y)
    return mb.build()


@pytest.mark.parametrize("batch", [1, 3])
def test_a_batched_network_is_one_partition_and_bit_exact_at_every_stage(batch):
    from qaccel import api

    model = batch_network(batch)
    (result,) = check_models([(f"batch {batch}", model)], input_sets=1)
    assert result.ok, result.line()
    # Every op on the accelerator but the dense layer's double-precision requantization and
    # the Flatten (a copy step of the program): the same as for one image.
    assert result.host_ops == {"vta-default": 2, "vta-store-requant": 2}, result.host_ops
    compiled = api.compile(model, "vta-default")
    assert len(compiled.functions) == 1
    assert compiled.report["totals"]["accelerator_mac_share"] == 1.0
    kinds = [r["kind"] for r in compiled.report["layers"]]
    # The residual add runs in the pool layer (a pool of a computed tensor: two inputs).
    assert kinds == ["conv", "depthwise", "pool", "conv", "dense"], kinds


def _align(n: int) -> int:
    return -(-n // 256) * 256


def _run(emitter, layer, xs: list[np.ndarray], n_out: int) -> np.ndarray:
    """The layer's program on its inputs (each `[images * blocks, ...]` int8), its output."""
    at, inputs_at = 0, []
    for x in xs:
        inputs_at.append(at)
        at = _align(at + x.size)
    out_at, const_at = at, _align(at + n_out)
    prog = emitter(layer, inputs_at=inputs_at, output_at=out_at, constants_at=const_at)
    image = np.zeros(const_at + len(prog.constants), np.uint8)
    for x, where in zip(xs, inputs_at):
        image[where : where + x.size] = x.reshape(-1).view(np.uint8)
    image[const_at:] = prog.constants
    result = simulate(prog.program, prog.program.uops, image)
    assert not any(result.leftover_tokens.values())
    return result.dram[out_at : out_at + n_out].view(np.int8)


@pytest.mark.parametrize(("rows", "reduce"), [(5, 1), (700, 1), (1, 12)])
def test_batched_element_wise_layers_share_their_per_block_parameters(rows, reduce):
    """Three images of two channel blocks: per-block parameter rows apply to each image's
    blocks (a sum pool's too)."""
    rng = np.random.default_rng(rows)
    images, blocks = 3, 2
    params = rng.integers(1 << 29, 1 << 31, (blocks + 1, 16)).astype(np.int32)
    steps = [AluStep("ADD", 0, "temp", 1), AluStep("SHR", 0, "imm", -8),
             AluStep("RDMUL", 0, "param", 0, True), AluStep("RDMUL", 0, "param", blocks),
             AluStep("MIN", 0, "imm", 127), AluStep("MAX", 0, "imm", -128)]  # fmt: skip
    reduce_at = 1 if reduce > 1 else 0
    layer = AluLayer("t", blocks, rows, 16, 2, steps, 0, params, reduce, reduce_at, images)
    xs = [rng.integers(-128, 128, (images * blocks, rows * reduce, 16)).astype(np.int8)
          for _ in range(2)]  # fmt: skip
    want = layer.reference(xs).reshape(-1)
    got = _run(emit_alu, layer, xs, images * blocks * rows * 16)
    np.testing.assert_array_equal(got, want)
    # Image by image, the batch-1 layer's result.
    one = AluLayer("t", blocks, rows, 16, 2, steps, 0, params, reduce, reduce_at)
    per_image = [one.reference([x[n * blocks : (n + 1) * blocks] for x in xs])
                 for n in range(images)]  # fmt: skip
    np.testing.assert_array_equal(want, np.concatenate(per_image).reshape(-1))


@pytest.mark.parametrize("op", ["MAX", "ADD"])
def test_batched_windowed_pools(op):
    rng = np.random.default_rng(7)
    images, blocks, h, w = 2, 3, 9, 7
    params = rng.integers(1 << 29, 1 << 31, (blocks, 16)).astype(np.int32)
    steps = [AluStep("RDMUL", 0, "param", 0, True), AluStep("MIN", 0, "imm", 127),
             AluStep("MAX", 0, "imm", -128)]  # fmt: skip
    pad = (1, 1, 0, 1)
    oh, ow = (h + 2 - 3) // 2 + 1, (w + 1 - 3) // 2 + 1
    layer = PoolLayer("p", op, blocks, h, w, oh, ow, 3, 3, 2, 2, pad, 0, steps, params,
                      images=images)  # fmt: skip
    x = rng.integers(-128, 128, (images * blocks, h, w, 16)).astype(np.int8)
    got = _run(emit_pool, layer, [x], images * blocks * oh * ow * 16)
    np.testing.assert_array_equal(got, layer.reference(x).reshape(-1))


def test_the_report_counts_every_image():
    """A batched element-wise layer's report row: its DRAM rows and ALU-bound cycles are
    those of all its images."""
    from qaccel.backends.vta.report import alu_report
    from qaccel.targets.vta.config import DEFAULT_CONFIG

    steps = [AluStep("ADD", 0, "temp", 1), AluStep("RSHR", 0, "imm", 1)]
    rows = {}
    for images in (1, 4):
        layer = AluLayer("t", 2, 64, 16, 2, steps, 0, np.zeros((0, 16), np.int32),
                         images=images)  # fmt: skip
        n = images * 2 * 64 * 16
        prog = emit_alu(layer, inputs_at=[0, _align(n)], output_at=2 * _align(n),
                        constants_at=3 * _align(n))  # fmt: skip
        rows[images] = alu_report("f", 0, layer, prog, DEFAULT_CONFIG)
    assert rows[4]["alu_bound_cycles"] == 4 * rows[1]["alu_bound_cycles"]
    # Three more images of two inputs of 2 blocks x 64 rows x 16 bytes (the micro-ops: once).
    assert rows[4]["dram_read_bytes"] - rows[1]["dram_read_bytes"] == 3 * 2 * 2 * 64 * 16
    assert rows[4]["cycles"] > 3 * rows[1]["cycles"]
