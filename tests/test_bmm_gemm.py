"""BATCH_MATMUL (activation x activation) on the GEMM core: one GEMM layer over every batch
index (its images, each with its own weight tiles; one layer per batch index when the stacked
operands are too large) whose weight tiles the program gathers into the arena at run time and
whose accumulators start from the zero points' int32 correction (step kinds 18 and 22),
requantized as any GEMM layer,
bit-exact with BUILTIN_REF through the run plan, the C driver
and the spliced LiteRT model on both bundled configurations; the C machine and the Python
simulator agree on the layers bit for bit and cycle for cycle."""

from __future__ import annotations

import struct
from pathlib import Path

import numpy as np
import pytest

from qaccel.dialects import accel
from qaccel.kernels import bmm_gemm as bg
from qaccel.kernels import packed
from qaccel.kernels.attention import batch_matmul_operands
from qaccel.kernels.layout import Packing, pack

TRANSFORMER = Path(__file__).parent / "fixtures" / "corpus" / "transformer.tflite"


@pytest.mark.parametrize("ls, rs, adj_x, adj_y, block", [
    ((2, 5, 7), (2, 9, 7), False, True, 4),
    ((1, 3, 5, 20), (1, 3, 20, 6), False, False, 16),
    ((4, 6), (6, 18), False, False, 4),
    ((2, 7, 5), (1, 7, 3), True, False, 4),
])  # fmt: skip
def test_gathered_gemm_and_correction_are_the_reference_sums(ls, rs, adj_x, adj_y, block):
    """Token image x weight tiles (what the GEMM core multiplies) plus the correction is
    Σ (l - zl)(r - zr) for every batch index, padding included."""
    rng = np.random.default_rng(3)
    lhs = rng.integers(-128, 128, ls).astype(np.int8)
    rhs = rng.integers(-128, 128, rs).astype(np.int8)
    lp = pack(lhs, Packing.activations(len(ls), block), 0)
    rp = pack(rhs, Packing.activations(len(rs), block), 0)
    li, ri = bg.operand_sources(ls, rs, adj_x, adj_y, block)
    batch, m, k, n = bg.dims(ls, rs, adj_x, adj_y)
    a_all, b_all = batch_matmul_operands(lhs, rhs, adj_x, adj_y)
    for zl, zr in ((-5, 17), (-128, -128), (127, 0)):
        want = (a_all.astype(np.int64) - zl) @ (b_all.astype(np.int64) - zr)
        for i in range(batch):
            tokens = bg.gather(lp, bg.lhs_tokens_index(li[i], block))
            tiles = bg.gather(rp, bg.weight_tiles_index(ri[i], block))
            rows = tokens.reshape(-1, m, block).transpose(1, 0, 2).reshape(m, -1)
            weights = tiles.transpose(0, 2, 1, 3).reshape(-1, rows.shape[1])
            acc = rows.astype(np.int64) @ weights.astype(np.int64).T
            corr = bg.zp_correction(bg.gather(lp, li[i]), bg.gather(rp, ri[i]), zl, zr, block)
            total = acc + corr.reshape(-1, m, block).transpose(1, 0, 2).reshape(m, -1)
            assert np.array_equal(total[:, :n], want[i])
            assert not np.any(total[:, n:])  # padding lanes: zero weights, zero correction
        # Every batch index at once (index ALL): the stacked tokens by their own stacked tiles
        # (accel.dense_zp's per-image filter) plus the stacked correction.
        tokens = bg.gather(lp, bg.operand_index((li, ri), 0, bg.ALL, block))
        tiles = bg.gather(rp, bg.operand_index((li, ri), 1, bg.ALL, block))
        assert tokens.shape == bg.tokens_shape(m, k, block, batch)
        assert tiles.shape == bg.tiles_shape(k, n, block, batch)
        acc = packed.dense_zp(tokens, tiles, None, list(bg.result_shape(m, n, block, batch)))
        total = acc.astype(np.int64) + bg.correction(lp, rp, (li, ri), bg.ALL, zl, zr, block)
        plain = total[..., 0, :].transpose(0, 2, 1, 3).reshape(batch, m, -1)
        assert np.array_equal(plain[..., :n], want)
        assert not np.any(plain[..., n:])


def _program_kinds(blob: bytes) -> list[int]:
    from qaccel.backends.vta.program.writer import STEP_BYTES

    n_steps = struct.unpack_from("<I", blob, 36)[0]
    steps_at = struct.unpack_from("<Q", blob, 192 - 24)[0]
    return [struct.unpack_from("<I", blob, steps_at + STEP_BYTES * k)[0] for k in range(n_steps)]


def _attention_model(tokens: int, channels: int, depth: int, heads: int, adj_x: bool = False,
                     seed: int = 0) -> bytes:  # fmt: skip
    """x [1, T, C] -> q, k, v projections (FULLY_CONNECTED keeping the token dimension) ->
    scores q k^T (adj_y; with `heads` > 1 split by RESHAPE + TRANSPOSE into [1, H, T, D/H])
    -> scores x v; with `adj_x`, q^T k instead ([1, D, D])."""
    from qaccel.frontend.builder import (
        ModelBuilder, QParams, TensorSpec, bias_tensor, weights_tensor)

    rng = np.random.default_rng(seed)
    mb = ModelBuilder("bmm test model")
    g = mb.subgraph("main")
    xq = QParams.per_tensor(0.05, -3)
    x = g.input("x", (1, tokens, channels), q=xq)
    projected = []
    for name, zp in (("q", 7), ("k", -20), ("v", 0)):
        wq = QParams.per_tensor(0.02, 0)
        w = weights_tensor(f"w{name}", rng, (depth, channels), wq)
        b = bias_tensor(f"b{name}", rng, xq, wq, depth)
        out = TensorSpec(name, (1, tokens, depth), np.int8, QParams.per_tensor(0.1, zp))
        projected.append(g.op("FULLY_CONNECTED", [x, w, b], out,
                              {"fused_activation_function": "NONE", "keep_num_dims": True}))
    q_, k_, v_ = projected
    if adj_x:
        out = TensorSpec("s", (1, depth, depth), np.int8, QParams.per_tensor(0.8, -9))
        g.output(g.op("BATCH_MATMUL", [q_, k_], out, {"adj_x": True, "adj_y": False}))
        return mb.build()
    hd = depth // heads
    if heads > 1:
        split = []
        for t, name in ((q_, "q"), (k_, "k"), (v_, "v")):
            shape = g.const(f"{name}_shape", np.asarray([1, tokens, heads, hd], np.int32))
            r = g.op("RESHAPE", [t, shape], TensorSpec(f"{name}_h", (1, tokens, heads, hd),
                                                       np.int8, QParams.per_tensor(0.1, 0)))
            perm = g.const(f"{name}_perm", np.asarray([0, 2, 1, 3], np.int32))
            split.append(g.op("TRANSPOSE", [r, perm], TensorSpec(
                f"{name}_t", (1, heads, tokens, hd), np.int8, QParams.per_tensor(0.1, 0))))
        q_, k_, v_ = split
        lead: tuple[int, ...] = (1, heads)
    else:
        lead = (1,)
    s = g.op("BATCH_MATMUL", [q_, k_], TensorSpec("s", (*lead, tokens, tokens), np.int8,
                                                  QParams.per_tensor(0.4, -11)),
             {"adj_x": False, "adj_y": True})  # fmt: skip
    o = g.op("BATCH_MATMUL", [s, v_], TensorSpec("o", (*lead, tokens, hd), np.int8,
                                                 QParams.per_tensor(0.6, 4)),
             {"adj_x": False, "adj_y": False})  # fmt: skip
    g.output(s, o)
    return mb.build()


@pytest.mark.parametrize("tokens, channels, depth, heads, adj_x, config, runs", [
    (16, 32, 16, 1, False, "vta-default", ("c", "plan", "litert")),
    (5, 24, 20, 2, False, "vta-store-requant", ("plan", "litert")),
    (7, 16, 12, 1, True, "vta-default", ("plan",)),
    (20, 64, 64, 2, False, "vta-default", ("plan",)),  # two heads of 2 x 2 blocks: chunks per image
])  # fmt: skip
def test_small_models_bit_exact(tokens, channels, depth, heads, adj_x, config, runs, tmp_path,
                                capsys):  # fmt: skip
    from qaccel.tools.qaccel_compile import run as compile_run
    from qaccel.tools.qaccel_run import run

    model = tmp_path / "bmm.tflite"
    model.write_bytes(_attention_model(tokens, channels, depth, heads, adj_x))
    art = tmp_path / "art"
    assert compile_run([str(model), "-o", str(art), "--config", config]) == 0
    captured = capsys.readouterr()
    out = captured.out + captured.err
    # (the split heads' lane-moving reshapes may end a partition: not this test's business)
    assert heads > 1 or "into 1 partition" in out, out
    assert "MACs on the accelerator: 100.00%" in out, out
    assert "accel.batch_matmul" not in out and "accel.dense_zp" not in out  # none on the host
    kinds = [k for p in (art / "programs").glob("*.qprog") for k in _program_kinds(p.read_bytes())]
    # BMM_CORRECTION (one batch index) or BMM_CORRECTIONS (every head at once), no host
    # BATCH_MATMUL
    assert (18 if heads == 1 else 22) in kinds and 17 not in kinds
    from qaccel.backends.vta.run_plan import load_run_plan

    # the run plan's own steps (numpy gathers and correction, layers on the C machine) agree
    # with its programs
    plans = [load_run_plan(art), load_run_plan(art, programs=False)]
    rng = np.random.default_rng(1)
    xs = [rng.integers(-128, 128, i["shape"]).astype(i["dtype"]) for i in plans[0].meta["inputs"]]
    for a, b in zip(plans[0].run(xs), plans[1].run(xs), strict=True):
        assert np.array_equal(a, b)
    flags = {"c": ["--driver", "c"], "plan": [], "litert": ["--runtime", "litert"]}
    for name in runs:
        code = run([str(art), "--outputs-dir", str(tmp_path / "o"), "--compare-litert",
                    "--random-inputs", "2", *flags[name]])  # fmt: skip
        text = capsys.readouterr().out
        assert code == 0 and text.count("(bit-exact)") == (1 if adj_x else 2), text


@pytest.mark.parametrize("hw", ["vta-default", "vta-store-requant"])
def test_transformer_layers_agree_on_both_simulators(hw):
    """The transformer's layers, its two run-time-weight GEMMs (two heads each) among them, on the C machine
    and the Python simulator (the existing cross-check): same DRAM, same cycles."""
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline, qaccel_context
    from test_vta_cmachine import _check_model_layers

    module = import_tflite(TRANSFORMER.read_bytes(), str(TRANSFORMER))
    build_pipeline(f"vta-pipeline{{config={hw}}}").apply(qaccel_context(), module)
    assert "conv" in _check_model_layers("transformer", module, hw)


@pytest.mark.parametrize("hw", ["vta-default", "vta-store-requant"])
def test_stacked_multi_block_layers_agree_on_both_simulators(hw):
    """Three heads whose products span several blocks of K and N (each image loads its own
    weight chunks and accumulator starts): the C machine and the Python simulator agree."""
    from qaccel import api
    from test_vta_cmachine import _check_model_layers

    module = api.run_pipeline(api.import_model(_attention_model(9, 96, 96, 3, False)),
                              "vta-pipeline", hw)  # fmt: skip
    runtime = [op for op in module.walk() if isinstance(op, accel.DenseZpOp)
               and len(op.filter.type.get_shape()) == 5]  # fmt: skip
    assert len(runtime) == 2  # both products, every head in one layer
    assert "conv" in _check_model_layers("attention", module, hw)


def test_weight_tiles_and_correction_sit_in_the_arena():
    """Each run-time-weight layer's WGT loads read its arena slot, and its accumulators start
    from the correction's slot, both written by the program before the layer runs; its
    constants hold no weights."""
    from qaccel.backends.vta.codegen import compile_module
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline, qaccel_context

    module = import_tflite(TRANSFORMER.read_bytes(), str(TRANSFORMER))
    build_pipeline("vta-pipeline").apply(qaccel_context(), module)
    compiled = compile_module(module)
    fn = compiled.functions["vta_fn_0"]
    runtime = [lay for lay in fn.layers if lay.program.layer.runtime_weights]
    assert len(runtime) == 2  # one layer per product, its two heads the layer's images
    for lay in runtime:
        assert lay.program.layer.geometry.batch == 2
        assert lay.program.layer.runtime_init and len(lay.inputs) == 3
        for region, k in (("weights", 1), ("init", 2)):
            at, nbytes = lay.program.regions[region]
            slot = fn.slots[lay.inputs[k]]
            assert slot.host_writes and (slot.offset, slot.nbytes) == (at, nbytes)
            assert at + nbytes <= fn.arena_nbytes
        assert lay.program.regions["weights"][0] < lay.program.constants_offset


@pytest.mark.parametrize("tokens, channels, depth, heads", [(9, 32, 16, 1), (9, 24, 20, 2)])
def test_runtime_weight_slot_is_tile_aligned_with_block_32(tokens, channels, depth, heads,
                                                           tmp_path, capsys):  # fmt: skip
    """With 32-lane blocks a weight tile is 1024 bytes, more than the arena's 256-byte slot
    alignment: the run-time weight slot still starts a whole tile (these shapes put it at
    1280 or 2304 before, and the layer was refused), and the product is bit-exact."""
    import json

    from qaccel import api
    from qaccel.targets.vta.config import DEFAULT_CONFIG
    from qaccel.tools.qaccel_run import run
    from test_vta_hw_configs import BLOCKS

    config = tmp_path / "block32.json"
    config.write_text(json.dumps({**DEFAULT_CONFIG.to_dict(), **BLOCKS[5], "log_block": 5,
                                  "name": "block32"}))  # fmt: skip
    model = tmp_path / "bmm.tflite"
    model.write_bytes(_attention_model(tokens, channels, depth, heads, False))
    compiled = api.compile(model, str(config))
    assert not [fb for fb in compiled.fallbacks if "run-time weight" in fb.reason]
    runtime = [lay for fn in compiled.functions.values() for lay in fn.layers
               if lay.program.layer.runtime_weights]  # fmt: skip
    assert runtime
    for lay in runtime:
        assert lay.program.regions["weights"][0] % 1024 == 0
    art = api.write_artifact(compiled, tmp_path / "art", model)
    code = run([str(art), "--outputs-dir", str(tmp_path / "o"), "--compare-litert",
                "--random-inputs", "2"])  # fmt: skip
    text = capsys.readouterr().out
    assert code == 0 and text.count("(bit-exact)") == 2, text


def test_operands_read_through_relayouts():
    """A gather through a head split's reshape and transpose (`lhs_view` / `rhs_view`) reads the
    same values as the gather of the relayouts' result, and the relayouts then go away: the
    transformer's products read their projections directly."""
    from qaccel import api
    from qaccel.kernels.attention import relayout_packed

    block, rng = 4, np.random.default_rng(7)
    x = rng.integers(-128, 128, (1, 6, 6)).astype(np.int8)
    packed_x = pack(x, Packing.activations(3, block), 3)
    mid = relayout_packed(packed_x, [1, 6, 6], [1, 6, 2, 3], [0, 1, 2, 3], 3)
    heads = relayout_packed(mid, [1, 6, 2, 3], [1, 6, 2, 3], [0, 2, 1, 3], 3)
    view = ((1, 6, 6), (((1, 6, 2, 3), (0, 1, 2, 3)), ((1, 6, 2, 3), (0, 2, 1, 3))))
    assert bg.decode_view(bg.encode_view(*view)) == view and bg.view_shape(view) == [1, 2, 6, 3]
    plain = bg.operand_sources([1, 2, 6, 3], [1, 2, 6, 3], False, True, block)
    viewed = bg.operand_sources([1, 2, 6, 3], [1, 2, 6, 3], False, True, block, (view, view))
    for operand in (0, 1):
        want = bg.gather(heads, bg.operand_index(plain, operand, bg.ALL, block))
        got = bg.gather(packed_x, bg.operand_index(viewed, operand, bg.ALL, block))
        assert np.array_equal(got, want)
    want = bg.correction(heads, heads, plain, bg.ALL, -128, 5, block)
    assert np.array_equal(bg.correction(packed_x, packed_x, viewed, bg.ALL, -128, 5, block), want)
    module = api.run_pipeline(api.import_model(TRANSFORMER.read_bytes()), "vta-pipeline")
    ops = [op for op in module.walk() if isinstance(op, accel.BmmOperandOp)]
    # Q K^T: both operands head splits; P V: the softmax's result, and V's head split
    assert [op.properties.get("lhs_view") is not None for op in ops] == [True, True, False, False]
    assert all(op.properties.get("rhs_view") is not None for op in ops)
    # the head splits of the query, key and value are no host steps of their own
    relayouts = [op for op in module.walk() if isinstance(op, accel.RelayoutOp)]
    assert not any(isinstance(u.operation, accel.BmmOperandOp)
                   for r in relayouts for u in r.output.uses)  # fmt: skip
