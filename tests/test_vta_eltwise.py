"""Element-wise layers on the VTA (`lowering/vta/layers.py` `match_alu_layer`,
`lowering/vta/emit_alu.py`): the ALU programs are bit-exact with their reference on the
simulator (chunk boundaries, parameter rows, immediates, two inputs), and the residual adds of
real models run on the accelerator, bit-exact with the interpreter."""

from __future__ import annotations

import numpy as np
import pytest
from conftest import vta_lowered
from qaccel.interpreter.interpreter import entry_function, random_inputs, run_function
from qaccel.backends.vta.codegen import compile_module
from qaccel.backends.vta.runtime import run_compiled
from qaccel.targets.vta.config import DEFAULT_CONFIG
from qaccel.lowering.vta.emit_alu import chunk_rows, emit_alu
from qaccel.targets.vta.simulator import simulate
from qaccel.lowering.vta.layers import AluLayer, AluStep


def _align(n: int) -> int:
    return -(-n // 256) * 256


def run_layer(layer: AluLayer, inputs: list[np.ndarray], config=DEFAULT_CONFIG) -> np.ndarray:
    n = layer.blocks * layer.rows * layer.block
    offsets = [_align(n) * k for k in range(len(inputs) + 1)]
    consts_at = offsets[-1] + _align(n)
    prog = emit_alu(layer, config, inputs_at=offsets[:-1], output_at=offsets[-1],
                    constants_at=consts_at)  # fmt: skip
    image = np.zeros(consts_at + len(prog.constants), np.uint8)
    for at, x in zip(offsets, inputs):
        image[at : at + n] = x.reshape(-1).view(np.uint8)
    image[consts_at:] = prog.constants
    result = simulate(prog.program, prog.program.uops, image, config)
    assert not any(result.leftover_tokens.values())
    return result.dram[offsets[-1] : offsets[-1] + n].view(np.int8)


def run_two_inputs(emitter, layer, inputs: list[np.ndarray], n: int,
                   config=DEFAULT_CONFIG) -> np.ndarray:  # fmt: skip
    """`layer` emitted with `emitter` on two int8 inputs of one size: its `n` output bytes."""
    size = _align(inputs[0].size)
    out_at, consts_at = 2 * size, 2 * size + _align(n)
    prog = emitter(layer, config, inputs_at=[0, size], output_at=out_at, constants_at=consts_at)
    image = np.zeros(consts_at + len(prog.constants), np.uint8)
    for k, x in enumerate(inputs):
        image[k * size : k * size + x.size] = x.reshape(-1).view(np.uint8)
    image[consts_at:] = prog.constants
    result = simulate(prog.program, prog.program.uops, image, config)
    assert not any(result.leftover_tokens.values())
    return result.dram[out_at : out_at + n].view(np.int8)


def random_layer(rng, blocks: int, rows: int, n_inputs: int) -> AluLayer:
    blk = 16
    steps, params = [], []
    for t in range(n_inputs):
        for _ in range(rng.integers(1, 4)):
            op = str(rng.choice(["ADD", "SHR", "RDMUL", "RSHR", "MAX", "MIN", "MUL"]))
            per = bool(rng.integers(2))
            if op == "SHR":
                lo, hi = -8, 8
            elif op == "RSHR":
                lo, hi = 0, 31
            elif op == "RDMUL":
                lo, hi = 1 << 29, (1 << 31) - 1
            else:
                lo, hi = -300, 300
            if per or op == "RDMUL":
                start = sum(len(p) for p in params)
                rows_ = rng.integers(lo, hi + 1, (blocks if per else 1, blk)).astype(np.int32)
                if not per:
                    rows_[:] = rows_[0, 0]
                params.append(rows_)
                steps.append(AluStep(op, t, "param", start, per))
            else:
                steps.append(AluStep(op, t, "imm", int(rng.integers(lo, hi + 1))))
    for t in range(1, n_inputs):
        steps.append(AluStep(str(rng.choice(["ADD", "MAX", "MIN"])), 0, "temp", t))
    steps.append(AluStep("MIN", 0, "imm", 127))
    steps.append(AluStep("MAX", 0, "imm", -128))
    table = np.concatenate(params) if params else np.zeros((0, blk), np.int32)
    return AluLayer("random", blocks, rows, blk, n_inputs, steps, 0, table)


@pytest.mark.parametrize("seed", range(12))
def test_random_alu_programs_are_bit_exact(seed):
    rng = np.random.default_rng(seed)
    blocks, n_inputs = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    # Rows around the chunk size (two sets of temps next to the parameter rows).
    rows = int(rng.choice([1, 7, 300, 511, 512, 513, 1100]))
    layer = random_layer(rng, blocks, rows, n_inputs)
    inputs = [rng.integers(-128, 128, (blocks, rows, 16)).astype(np.int8) for _ in range(n_inputs)]
    expected = layer.reference(inputs).reshape(-1)
    np.testing.assert_array_equal(run_layer(layer, inputs), expected)


@pytest.mark.parametrize(("blocks", "reduce"), [(1, 2), (3, 49), (80, 49), (41, 100)])
def test_global_sum_pools_are_bit_exact(blocks, reduce):
    rng = np.random.default_rng(blocks * reduce)
    params = rng.integers(1 << 29, 1 << 31, (blocks + 1, 16)).astype(np.int32)
    steps = [AluStep("ADD", 0, "imm", 64 * reduce), AluStep("RDMUL", 0, "param", blocks),
             AluStep("RSHR", 0, "imm", 3), AluStep("ADD", 0, "param", 0, True),
             AluStep("MIN", 0, "imm", 127), AluStep("MAX", 0, "imm", -128)]  # fmt: skip
    layer = AluLayer("pool", blocks, 1, 16, 1, steps, 0, params, reduce)
    x = rng.integers(-128, 128, (blocks, reduce, 16)).astype(np.int8)
    n = blocks * 16
    at = _align(x.size)
    prog = emit_alu(layer, inputs_at=[0], output_at=at, constants_at=at + _align(n))
    image = np.zeros(at + _align(n) + len(prog.constants), np.uint8)
    image[: x.size] = x.reshape(-1).view(np.uint8)
    image[at + _align(n) :] = prog.constants
    result = simulate(prog.program, prog.program.uops, image)
    got = result.dram[at : at + n].view(np.int8)
    np.testing.assert_array_equal(got, layer.reference([x]).reshape(-1))


@pytest.mark.parametrize("seed", range(4))
def test_sum_pools_of_element_wise_trees_are_bit_exact(seed):
    # A residual add then the global average pool (ResNet's last block): two inputs through
    # per-row steps (per-block parameters walk with the outer loop), the sum, then steps.
    rng = np.random.default_rng(100 + seed)
    blocks, reduce = int(rng.integers(1, 40)), int(rng.choice([4, 49, 64]))
    params = rng.integers(1 << 29, 1 << 31, (blocks + 1, 16)).astype(np.int32)
    steps = [AluStep("ADD", 0, "imm", 7), AluStep("SHR", 0, "imm", -10),
             AluStep("RDMUL", 0, "param", 0, True), AluStep("SHR", 1, "imm", -10),
             AluStep("ADD", 0, "temp", 1), AluStep("RSHR", 0, "imm", 9),
             AluStep("ADD", 0, "imm", 64 * reduce), AluStep("RDMUL", 0, "param", blocks),
             AluStep("RSHR", 0, "imm", 5), AluStep("MIN", 0, "imm", 127),
             AluStep("MAX", 0, "imm", -128)]  # fmt: skip
    layer = AluLayer("pool", blocks, 1, 16, 2, steps, 0, params, reduce, reduce_at=6)
    inputs = [rng.integers(-128, 128, (blocks, reduce, 16)).astype(np.int8) for _ in range(2)]
    got = run_two_inputs(emit_alu, layer, inputs, blocks * 16)
    np.testing.assert_array_equal(got, layer.reference(inputs).reshape(-1))


def test_chunks_fill_the_accumulator_buffer():
    layer = AluLayer("t", 1, 5000, 16, 2, [AluStep("ADD", 0, "temp", 1)], 0,
                     np.zeros((3, 16), np.int32))  # fmt: skip
    depth = DEFAULT_CONFIG.depth("acc")
    assert chunk_rows(layer, DEFAULT_CONFIG) == (depth - 3) // 4


def test_mobilenet_v2_runs_on_the_accelerator_but_the_double_requantization(mobilenet_v2_compiled):
    compiled = mobilenet_v2_compiled
    kinds = [r["kind"] for r in compiled.report["layers"]]
    # 10 residual adds and the global average pool with its requantization.
    assert kinds.count("eltwise") == 11
    assert [fb.op for fb in compiled.fallbacks] == ["accel.host_requantize"]


def test_a_residual_add_into_the_average_pool_runs_on_the_accelerator():
    module, _ = vta_lowered("residual")
    compiled = compile_module(module)
    assert [fb.op for fb in compiled.fallbacks] == ["accel.host_requantize"]
    inputs = random_inputs(entry_function(module), 2)
    expected = run_function(module, inputs)
    for x, y in zip(run_compiled(compiled, inputs), expected, strict=True):
        np.testing.assert_array_equal(x, y)
    inputs = random_inputs(entry_function(module), 1)
    expected = run_function(module, inputs)
    for x, y in zip(run_compiled(compiled, inputs), expected, strict=True):
        np.testing.assert_array_equal(x, y)


def test_refusals_are_reported():
    compiled = compile_module(vta_lowered("pad_concat_slice")[0])
    lines = compiled.report["host_fallbacks"]
    # The widening two trees read is one per tree now; the tree still reduces other axes.
    assert any("accel.narrow" in line and "a reduction other than one global sum pool" in line
               for line in lines)  # fmt: skip


def test_a_residual_add_into_a_max_pool_runs_on_the_accelerator():
    module, _ = vta_lowered("small_cnn")
    compiled = compile_module(module)
    kinds = [r["kind"] for r in compiled.report["layers"]]
    assert kinds.count("pool") == 2  # add -> max pool, and the average pool
    pool = next(
        lay for lay in compiled.functions["vta_fn_0"].layers if lay.report["kind"] == "pool"
    )
    assert pool.program.layer.n_inputs == 2 and pool.program.layer.pre_steps
    inputs = random_inputs(entry_function(module), 3)
    expected = run_function(module, inputs)
    for x, y in zip(run_compiled(compiled, inputs), expected, strict=True):
        np.testing.assert_array_equal(x, y)


def test_pools_of_computed_tensors_are_bit_exact():
    from qaccel.lowering.vta.emit_alu import emit_pool
    from qaccel.lowering.vta.layers import PoolLayer

    rng = np.random.default_rng(7)
    blocks, h, w = 2, 14, 10
    params = rng.integers(1 << 29, 1 << 31, (blocks, 16)).astype(np.int32)
    pre = [AluStep("ADD", 0, "imm", 3), AluStep("SHR", 0, "imm", -12),
           AluStep("RDMUL", 0, "param", 0, True), AluStep("SHR", 1, "imm", -12),
           AluStep("ADD", 0, "temp", 1), AluStep("RSHR", 0, "imm", 12),
           AluStep("MIN", 0, "imm", 127), AluStep("MAX", 0, "imm", -128)]  # fmt: skip
    layer = PoolLayer("p", "MAX", blocks, h, w, 7, 5, 2, 2, 2, 2, (0, 0, 0, 0), 0,
                      [AluStep("ADD", 0, "imm", -5)], params, 16, 2, pre, 0)  # fmt: skip
    xs = [rng.integers(-128, 128, (blocks, h, w, 16)).astype(np.int8) for _ in range(2)]
    got = run_two_inputs(emit_pool, layer, xs, blocks * 7 * 5 * 16)
    np.testing.assert_array_equal(got, layer.reference(xs).reshape(-1))


@pytest.mark.parametrize(
    ("op", "blocks", "hw", "k", "s", "pad", "offset"),
    [("MAX", 4, (112, 112), 3, 2, (1, 1, 1, 1), 0), ("MAX", 1, (32, 30), 2, 2, (0, 0, 0, 0), 5),
     ("ADD", 2, (16, 16), 2, 2, (0, 0, 0, 0), 0), ("MAX", 1, (7, 9), 3, 1, (1, 1, 1, 1), 0),
     ("ADD", 3, (15, 13), 3, 2, (0, 1, 0, 1), 0), ("MAX", 2, (5, 5), 5, 1, (2, 2, 2, 2), -7)],
)  # fmt: skip
def test_windowed_pools_are_bit_exact(op, blocks, hw, k, s, pad, offset):
    from qaccel.lowering.vta.emit_alu import emit_pool
    from qaccel.lowering.vta.layers import PoolLayer

    h, w = hw
    oh, ow = (h + pad[0] + pad[1] - k) // s + 1, (w + pad[2] + pad[3] - k) // s + 1
    steps = [AluStep("ADD", 0, "imm", -offset)] if offset else []
    if op == "ADD":
        steps = [AluStep("RSHR", 0, "imm", 2), AluStep("MIN", 0, "imm", 127),
                 AluStep("MAX", 0, "imm", -128)]  # fmt: skip
    layer = PoolLayer("p", op, blocks, h, w, oh, ow, k, k, s, s, pad, offset, steps,
                      np.zeros((0, 16), np.int32))  # fmt: skip
    x = np.random.default_rng(k * h).integers(-128, 128, (blocks, h, w, 16)).astype(np.int8)
    out_at = _align(x.size)
    n = blocks * oh * ow * 16
    prog = emit_pool(layer, inputs_at=[0], output_at=out_at, constants_at=out_at + _align(n))
    image = np.zeros(out_at + _align(n), np.uint8)
    image[: x.size] = x.reshape(-1).view(np.uint8)
    result = simulate(prog.program, prog.program.uops, image)
    assert not any(result.leftover_tokens.values())
    got = result.dram[out_at : out_at + n].view(np.int8)
    np.testing.assert_array_equal(got, layer.reference(x).reshape(-1))


POOL_IR = """
!q = !quant.uniform<i8:f32, 0.5:-128>
func.func @main(%x: tensor<1x2x9x9x1x16x!q>) -> tensor<1x2x5x5x1x16x!q> {
  %y = func.call @vta_fn_0(%x) : (tensor<1x2x9x9x1x16x!q>) -> tensor<1x2x5x5x1x16x!q>
  func.return %y : tensor<1x2x5x5x1x16x!q>
}
func.func private @vta_fn_0(%x: tensor<1x2x9x9x1x16x!q>) -> tensor<1x2x5x5x1x16x!q> attributes {qaccel.target = "vta", accel.packed} {
  %p = accel.pad %x pad_value(-128) padding = [1, 1, 1, 1] : tensor<1x2x9x9x1x16x!q> -> tensor<1x2x11x11x1x16x!q>
  %w = accel.widen %p : tensor<1x2x11x11x1x16x!q> -> tensor<1x2x11x11x1x16xi32>
  %m = accel.max_pool2d %w window = [3, 3] strides = [2, 2] : tensor<1x2x11x11x1x16xi32> -> tensor<1x2x5x5x1x16xi32>
  %c = accel.max %m by [-100] : tensor<1x2x5x5x1x16xi32>
  %y = accel.narrow %c : tensor<1x2x5x5x1x16xi32> -> tensor<1x2x5x5x1x16x!q>
  func.return %y : tensor<1x2x5x5x1x16x!q>
}
"""


def test_a_padded_max_pool_runs_on_the_accelerator():
    from conftest import attach_vta, parse_module

    from qaccel.lowering.form_vta_layers import FormVtaLayersPass
    from qaccel.pipeline.manager import qaccel_context
    from conftest import attach_vta

    module = attach_vta(parse_module(POOL_IR))  # the hand-written IR is for VTA's default
    FormVtaLayersPass().apply(qaccel_context(), module)  # compile emits formed layers
    compiled = compile_module(module)
    assert [r["kind"] for r in compiled.report["layers"]] == ["pool"]
    assert compiled.fallbacks == []
    for seed in range(3):
        inputs = random_inputs(entry_function(module), seed)
        expected = run_function(module, inputs)
        for x, y in zip(run_compiled(compiled, inputs), expected, strict=True):
            np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize("keep_dims", [False, True])
def test_a_mean_of_a_mean_is_bit_exact(oracle, keep_dims):
    """MEAN over H and W (keep_dims) then MEAN of the 1x1 map: the outer sum (over one row)
    used to overwrite the inner one when both joined one element-wise layer, which then summed
    nothing (found by generated models). Both run on the accelerator: a sum keeping its 1x1
    dimensions (`[1, C/B, 1, 1, 1, B]`) is an element-wise layer too."""
    from qaccel.explore.conformance import check_models
    from qaccel.frontend.builder import (ModelBuilder, QParams, TensorSpec, bias_tensor,
                                         weights_tensor)  # fmt: skip

    rng = np.random.default_rng(3)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x_q, w_q = QParams.per_tensor(0.05, -3), QParams.per_tensor(0.01, 0)
    y_q = QParams.per_tensor(0.3, 2)
    x = g.input("x", (1, 9, 9, 16), np.int8, x_q)
    w = weights_tensor("w", rng, (32, 1, 1, 16), w_q)
    y = g.op("CONV_2D", [x, w, bias_tensor("b", rng, x_q, w_q, 32)],
             TensorSpec("y", (1, 9, 9, 32), np.int8, y_q),
             {"padding": "SAME", "stride_w": 1, "stride_h": 1,
              "fused_activation_function": "NONE"})  # fmt: skip
    axes = TensorSpec("axes", (2,), np.int32, data=np.array([1, 2], np.int32))
    m = g.op("MEAN", [y, axes], TensorSpec("m", (1, 1, 1, 32), np.int8, y_q), {"keep_dims": True})
    shape = (1, 1, 1, 32) if keep_dims else (1, 32)
    out = g.op("MEAN", [m, axes], TensorSpec("mm", shape, np.int8, QParams.per_tensor(0.2, -5)),
               {"keep_dims": keep_dims})  # fmt: skip
    g.output(out)
    (result,) = check_models([("mean-of-mean", mb.build())])
    assert result.ok, result.line()
    assert result.host_ops == {"vta-default": 0, "vta-store-requant": 0}
