"""The squeeze-excite block on the ALU: the swish's int8 result that both the global MEAN and
the broadcast MUL read is stored once by its layer (`split_shared_values`), the MEAN is a
global sum pool layer, and the `[1, H, W, C] x [1, 1, 1, C]` MUL is an element-wise layer
whose per-channel operand is one accumulator row per channel block read with a micro-op
source factor of 0. Models with such a block between convolutions compile into one
accelerator function and run bit-exact with BUILTIN_REF through the artifact's run plan, its
C driver and the LiteRT dispatch model, on both bundled configurations; the emitted program
agrees with the layer's reference on the C machine and the Python simulator, cycle for cycle.
(EfficientNet and MobileNetV3 themselves: test_corpus.py at every stage.)"""

from __future__ import annotations

import numpy as np
import pytest
from test_resize_accel import _bit_exact, _run

from qaccel.lowering.vta.emit_alu import emit_alu
from qaccel.lowering.vta.layers import AluLayer, AluStep
from qaccel.targets.vta.config import DEFAULT_CONFIG


def squeeze_excite_model(size=(16, 16), channels=32, squeeze=8, swish=True, seed=0) -> bytes:
    """conv -> [swish] -> MEAN over H, W -> conv -> RELU -> conv -> LOGISTIC -> MUL by the
    feature map (broadcast over H, W) -> conv."""
    from qaccel.frontend.builder import (ModelBuilder, QParams, TensorSpec, bias_tensor,
                                         per_axis_qparams, random_weights)  # fmt: skip

    rng = np.random.default_rng(seed)
    Q = QParams.per_tensor
    mb = ModelBuilder()
    g = mb.subgraph("main")
    hw = tuple(size)

    def conv(x, cin, cout, shape, name, out_q, act="NONE"):
        wq = per_axis_qparams(rng, channels=cout, axis=0)
        w = g.const(f"{name}_w", random_weights(rng, (cout, 1, 1, cin)), wq)
        b = g.add_tensor(bias_tensor(f"{name}_b", rng, Q(0.05, -3), wq))
        return g.op("CONV_2D", [x, w, b], TensorSpec(name, (1, *shape, cout), np.int8, out_q),
                    {"padding": "VALID", "stride_w": 1, "stride_h": 1,
                     "fused_activation_function": act})  # fmt: skip

    def t(name, shape, q):
        return TensorSpec(name, shape, np.int8, q)

    x = g.input("x", (1, *hw, 16), q=Q(0.05, -3))
    c = conv(x, 16, channels, hw, "expand", Q(0.06, -10))
    if swish:
        sig = g.op("LOGISTIC", [c], t("sig", (1, *hw, channels), Q(1 / 256, -128)))
        c = g.op("MUL", [c, sig], t("swish", (1, *hw, channels), Q(0.03, -118)))
    axes = g.const("axes", np.array([1, 2], np.int32))
    m = g.op("MEAN", [c, axes], t("squeeze", (1, 1, 1, channels), Q(0.004, -95)),
             {"keep_dims": True})
    r = conv(m, channels, squeeze, (1, 1), "reduce", Q(0.01, -100), act="RELU")
    e = conv(r, squeeze, channels, (1, 1), "excite", Q(0.007, -4))
    s = g.op("LOGISTIC", [e], t("gate", (1, 1, 1, channels), Q(1 / 256, -128)))
    y = g.op("MUL", [c, s], t("scaled", (1, *hw, channels), Q(0.02, -119)))
    g.output(conv(y, channels, 16, hw, "project", Q(0.1, 5)))
    return mb.build()


def _compiled(model: bytes, tmp_path, capsys, *extra: str):
    from qaccel.tools.qaccel_compile import run as compile_run

    path = tmp_path / "se.tflite"
    path.write_bytes(model)
    art = tmp_path / "art"
    assert compile_run([str(path), "-o", str(art), *extra]) == 0
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "into 1 partition" in out, out
    assert "1 input(s) (1 per channel)" not in out  # the feature map is the other input
    assert "2 input(s) (1 per channel)" in out, out  # the squeeze-excite MUL on the ALU
    assert "sum of 256 px" in out, out  # the global MEAN on the ALU
    host = [line for line in out.splitlines() if "host fallback inside" in line]
    assert all("accel.lut" in line or "accel.host_requantize" in line for line in host), host
    return art


CASES = {"swish": ({}, ("dispatch",)), "plain": ({"swish": False, "channels": 20}, ())}


@pytest.mark.parametrize("case", list(CASES))
def test_squeeze_excite_runs_on_the_alu_bit_exact(case, tmp_path, capsys):
    options, ways = CASES[case]
    art = _compiled(squeeze_excite_model(**options), tmp_path, capsys)
    _bit_exact(art, ways, tmp_path, capsys, seed=11)
    common = ["--outputs-dir", str(tmp_path / "c"), "--compare-litert", "--random-inputs", "12"]
    assert "(bit-exact)" in _run([str(art), "--driver", "c", *common], capsys)


def test_store_requant_configuration_runs_it_too(tmp_path, capsys):
    art = _compiled(squeeze_excite_model(seed=1), tmp_path, capsys, "--config",
                    "vta-store-requant")  # fmt: skip
    _bit_exact(art, ("dispatch",), tmp_path, capsys, seed=13)


@pytest.mark.parametrize("images", [1, 2])
def test_a_broadcast_operand_agrees_on_both_simulators(images):
    """A per-channel operand (temp 1, one row per block) with a step of its own, multiplying
    the map's rows: the C machine and the Python simulator give the layer's reference, in the
    same cycles."""
    from qaccel.targets.vta.simulator import simulate

    rng = np.random.default_rng(images)
    blocks, rows, block = 3, 20, 16
    steps = [AluStep("ADD", 1, "imm", 7), AluStep("MUL", 0, "temp", 1),
             AluStep("RDMUL", 0, "param", 0), AluStep("RSHR", 0, "imm", 6),
             AluStep("MAX", 0, "imm", -128), AluStep("MIN", 0, "imm", 127)]  # fmt: skip
    params = np.full((1, block), 1 << 30, np.int32)
    layer = AluLayer("se", blocks, rows, block, 2, steps, 0, params, images=images,
                     broadcast=(1,))
    x = rng.integers(-128, 128, (images * blocks, rows, block)).astype(np.int8)
    s = rng.integers(-128, 128, (images * blocks, 1, block)).astype(np.int8)
    def up(n: int) -> int:
        return -(-n // 64) * 64  # DRAM regions are 64-byte aligned

    at_x, at_s = 0, up(x.size)
    at_y = up(at_s + s.size)
    consts = up(at_y + x.size)
    prog = emit_alu(layer, DEFAULT_CONFIG, inputs_at=[at_x, at_s], output_at=at_y,
                    constants_at=consts, rows=7)  # fmt: skip
    dram = np.zeros(consts + len(prog.constants), np.uint8)
    dram[at_x : at_x + x.size] = x.reshape(-1).view(np.uint8)
    dram[at_s : at_s + s.size] = s.reshape(-1).view(np.uint8)
    dram[consts:] = prog.constants
    want = layer.reference([x, s])
    results = [simulate(prog.program, dram=dram, config=DEFAULT_CONFIG, simulator=sim)
               for sim in ("c", "python")]  # fmt: skip
    for r in results:
        got = np.asarray(r.dram)[at_y : at_y + x.size].view(np.int8).reshape(want.shape)
        np.testing.assert_array_equal(got, want)
    assert results[0].timing.total_cycles == results[1].timing.total_cycles


def test_a_small_map_stays_on_the_host_by_the_cost_model(tmp_path, capsys):
    """On a 2x2 map the swish's and the scale's layers cost their programs' fixed start more
    than the host's work on 64 elements: they stay host steps, the report says both figures,
    and the model stays bit-exact."""
    from qaccel.tools.qaccel_compile import run as compile_run

    path = tmp_path / "small.tflite"
    path.write_bytes(squeeze_excite_model(size=(2, 2), channels=16, seed=2))
    art = tmp_path / "art"
    assert compile_run([str(path), "-o", str(art)]) == 0
    captured = capsys.readouterr()
    out = captured.out + captured.err
    assert "into 1 partition" in out, out
    assert "kept on the host: the cost model prices it at" in out, out
    # The layers after it read the int8 result the host stores for it.
    assert "result of a layer that runs on the host" not in out, out
    common = ["--outputs-dir", str(tmp_path / "o"), "--compare-litert", "--random-inputs", "3"]
    assert "(bit-exact)" in _run([str(art), *common], capsys)


def test_the_report_counts_one_row_per_block_of_a_broadcast_input():
    from qaccel.backends.vta.report import _row_counts

    steps = [AluStep("MUL", 0, "temp", 1), AluStep("ADD", 1, "imm", 3)]
    layer = AluLayer("se", 2, 10, 16, 2, steps, 0, np.zeros((0, 16), np.int32), broadcast=(1,))
    # DRAM rows: 20 of the map, 2 of the scale, 20 stored; ALU rows: 20 for the MUL, 2 for
    # the step on the scale's row.
    assert _row_counts(layer) == (42, 22)


def _top_level(compiled):
    from xdsl.dialects import func

    (f,) = [f for f in compiled.module.ops
            if isinstance(f, func.FuncOp) and f.sym_name.data in compiled.functions]  # fmt: skip
    return list(f.body.block.ops)


def test_a_tree_kept_on_the_host_gets_no_narrowing_back():
    """On the 2x2 map the swish, the MEAN and the scale stay on the host: their ops are host
    steps of the program again, not layers the host runs (which copy their results), the
    narrowing `form-vta-layers` put back on the swish's shared int32 value is gone (only the
    MEAN's and the scale's remain), and one widening per int8 value remains."""
    from qaccel import api
    from qaccel.dialects import accel, vta

    for config in ("vta-default", "vta-store-requant"):
        compiled = api.compile(squeeze_excite_model(size=(2, 2), channels=16, seed=2), config)
        ops = _top_level(compiled)
        assert [o.kind.data for o in ops if isinstance(o, vta.LayerOp)] == ["conv"] * 4
        narrows = [o for o in ops if isinstance(o, accel.NarrowOp)]
        assert len(narrows) == 2 and all(n.output.uses for n in narrows)
        swish = next(o for o in ops if isinstance(o, accel.ReduceSumOp)).operands[0]
        assert not any(isinstance(u.operation, accel.NarrowOp) for u in swish.uses)
        widened = [o.input for o in ops if isinstance(o, accel.WidenOp)]
        assert len(widened) == len(set(widened)) == 2
        reasons = {fb.op: fb.reason for fb in compiled.fallbacks}
        assert reasons["accel.reduce_sum"].startswith("kept on the host"), reasons


def test_a_run_of_host_steps_is_decided_as_a_whole():
    """`_best` places the trees reading host steps for the whole program: a MEAN after the
    swish's tree that stays on the host saves no stop on the ALU and stays too (layer by
    layer, it saw the swish's layer as an accelerator layer); two trees between a host step
    and a layer go to the ALU together when their programs cost less; a tree between two
    host steps stays unless its program and the stop it adds cost less than its host work."""
    from qaccel.backends.vta.alu_or_host import _HOST, _LAYER, _best, _cost

    L, H = (_LAYER, 0, 0), (_HOST, 0, 0)
    stop = 600
    seq = [L, H, (-1, 1862, 1279), (-1, 458, 313), L]  # lut, swish, mean, then a conv
    total, places = _best(seq, stop)
    assert places == [_LAYER, _HOST, _HOST, _HOST, _LAYER] and total == 1279 + 313 + stop
    seq = [L, H, (-1, 100, 300), (-1, 100, 300), L]
    assert _best(seq, stop) == (200 + stop, [_LAYER, _HOST, _LAYER, _LAYER, _LAYER])
    seq = [L, H, (-1, 100, 650), H, L]
    assert _best(seq, stop)[1][2] == _HOST
    seq = [L, H, (-1, 100, 750), H, L]
    assert _best(seq, stop)[1][2] == _LAYER
    # A reader on the ALU makes a tree kept on the host store its int32 result (the pair's
    # cycles): then the reader goes to the host too.
    seq = [L, H, (-1, 1338, 1151), (-1, 349, 352), L]
    places = _best(seq, stop)[1]
    assert places[2:4] == [_HOST, _LAYER]
    pairs = [(2, 3, 382)]
    assert _cost(seq, [_LAYER, _HOST, _HOST, _HOST, _LAYER], stop, pairs) < \
        _cost(seq, places, stop, pairs)  # fmt: skip


@pytest.mark.parametrize("config", ["vta-default", "vta-store-requant"])
def test_efficientnet_v2_squeeze_excite_stays_on_the_host_as_host_steps(config):
    """EfficientNetV2-B0's last squeeze-excite block on a 2x2 map: its table lookups stop the
    program anyway, so its swish, MEAN and scale stay with them on the host, as host steps
    (no layer the host runs, no narrowing nobody reads). Bit-exact through every stage and
    the run plan on both configurations: test_corpus.py."""
    from pathlib import Path

    from qaccel import api
    from qaccel.dialects import accel, vta

    path = Path(__file__).parent / "fixtures" / "corpus" / "efficientnet_v2_b0.tflite"
    compiled = api.compile(path, config)
    ops = _top_level(compiled)
    on_accel = {ops[i] for lay in compiled.functions[next(iter(compiled.functions))].layers
                for i in lay.ops}  # fmt: skip
    assert all(o in on_accel for o in ops if isinstance(o, vta.LayerOp))
    assert all(n.output.uses for n in ops if isinstance(n, accel.NarrowOp))
    means = [o for o in ops if isinstance(o, accel.ReduceSumOp)]
    assert len(means) == 1
