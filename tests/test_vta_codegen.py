"""VTA layer scheduling and emission: generated programs run on the simulator (with all its
hazard, deadlock and range checks) and match the q-dialect reference bit for bit."""

from dataclasses import replace
from itertools import pairwise

import numpy as np
import pytest
from qaccel.kernels import arithmetic as ar
from qaccel.targets.vta.config import HardwareConfig
from qaccel.lowering.vta.emit import emit, pack_weights
from qaccel.targets.vta.isa import MemType, Opcode, decode
from qaccel.lowering.vta.bias import dense_requantize_host
from qaccel.lowering.vta.cost_model import estimate
from qaccel.lowering.vta.geometry import ConvLayer, LayerError
from qaccel.lowering.vta.q_layers import reference
from qaccel.lowering.vta.search import candidates, make_schedule, schedule

RNG = np.random.default_rng(1234)


def conv_layer(H=8, W=8, C=17, O=33, k=3, s=1, pad=(1, 1, 1, 1), d=1, per_channel=True,
               zp_in=-3, zp_out=5, act=(-128, 127), shift_range=(-12, -6), bias=True,
               kind="conv", mult=1, kw=None, rng=RNG):  # fmt: skip
    """A random conv/depthwise layer with TFLite-like requantization parameters."""
    kh = k
    kw = k if kw is None else kw
    if kind == "conv":
        w = rng.integers(-127, 128, (O, kh, kw, C)).astype(np.int8)
    else:
        O = C * mult
        w = rng.integers(-127, 128, (1, kh, kw, O)).astype(np.int8)
    n = O if per_channel else 1
    m = rng.integers(1 << 30, 1 << 31, n).astype(np.int32)
    sh = rng.integers(shift_range[0], shift_range[1] + 1, n).astype(np.int32)
    b = rng.integers(-40000, 40000, O).astype(np.int32) if bias else None
    return ConvLayer(
        kind, (1, H, W, C), w, b, strides=(s, s), padding=pad, dilations=(d, d),
        input_zero_point=zp_in, multiplier=m, shift=sh, output_zero_point=zp_out,
        act_min=act[0], act_max=act[1], depth_multiplier=mult,
    )  # fmt: skip


def dense_layer(rows=1, C=40, O=20, zp_in=-7, zp_out=3, per_channel=True, act=(-128, 127),
                rng=RNG):  # fmt: skip
    w = rng.integers(-127, 128, (O, C)).astype(np.int8)
    scale = rng.uniform(1e-4, 2e-3, O if per_channel else 1)
    b = rng.integers(-20000, 20000, O).astype(np.int32)
    return ConvLayer("dense", (rows, C), w, b, input_zero_point=zp_in, scale=scale,
                     output_zero_point=zp_out, act_min=act[0], act_max=act[1])  # fmt: skip


def check(layer, sched=None, config=None, x=None, **kw):
    """Emit, simulate, compare with the reference; returns the LayerProgram."""
    sched = sched or schedule(layer, config, refine=0, **kw)
    prog = emit(layer, sched, config)
    if x is None:
        x = RNG.integers(-128, 128, layer.input_shape).astype(np.int8)
    result = prog.simulate(x)
    o = prog.output_offset
    got = prog.unpack_output(result.dram[o : o + prog.output_nbytes])
    want = reference(layer, x)
    assert got.shape == want.shape
    bad = np.flatnonzero(got.reshape(-1) != want.reshape(-1))
    assert len(bad) == 0, f"{len(bad)} of {want.size} outputs differ ({sched.describe()})"
    assert not any(result.leftover_tokens.values())  # every token pushed is popped
    return prog


# --------------------------------------------------------------------------------------------
# Convolutions


@pytest.mark.parametrize("k", [1, 3, 7])
@pytest.mark.parametrize("s", [1, 2])
@pytest.mark.parametrize("C,O", [(3, 17), (17, 33), (33, 16)])
def test_conv_kernels_strides_channels(k, s, C, O):
    pad = (k // 2,) * 4
    check(conv_layer(H=11, W=9, C=C, O=O, k=k, s=s, pad=pad))


@pytest.mark.parametrize(
    "pad",
    [(0, 0, 0, 0), (0, 1, 0, 1), (1, 1, 1, 1), (2, 0, 1, 3), (3, 3, 3, 3)],
    ids=["valid", "same-s2", "same", "asymmetric", "same-7"],
)
def test_conv_explicit_paddings(pad):
    check(conv_layer(H=10, W=12, C=20, O=24, k=3 if max(pad) < 3 else 7, s=2, pad=pad))


@pytest.mark.parametrize("d", [2, 3])
def test_conv_dilation(d):
    check(conv_layer(H=13, W=11, C=17, O=20, k=3, d=d, pad=(d, d, d, d)))
    check(conv_layer(H=13, W=11, C=16, O=32, k=3, d=d, s=2, pad=(0, 0, 0, 0)))


@pytest.mark.parametrize("bias_mode", ["alu", "dma", "gemm"])
@pytest.mark.parametrize("per_channel", [True, False])
def test_requantization_modes(bias_mode, per_channel):
    layer = conv_layer(C=33, O=40, per_channel=per_channel)
    prog = check(layer, bias_mode=bias_mode)
    assert prog.schedule.bias_mode == bias_mode
    f = decode(prog.program.words)
    acc_loads = np.sum((f["opcode"] == Opcode.LOAD) & (f["memory_type"] == MemType.ACC))
    # the parameter rows, plus per tile bias rows with the DMA bias
    assert (acc_loads > 1) == (bias_mode == "dma")


@pytest.mark.parametrize(
    "shift_range,zp_in,zp_out,act,bias",
    [
        ((1, 3), 0, 0, (-128, 127), True),  # left shifts only, no SETPAD, no zero-point GEMM
        ((-3, 2), 5, -128, (-128, -20), True),  # mixed left/right shifts per channel
        ((0, 0), -128, 12, (12, 80), False),  # multiplier only, no bias, RELU6-like range
        ((-31, -25), 127, -1, (-128, 127), True),  # extreme right shifts
    ],
)
def test_tail_variants(shift_range, zp_in, zp_out, act, bias):
    layer = conv_layer(C=19, O=21, shift_range=shift_range, zp_in=zp_in, zp_out=zp_out,
                       act=act, bias=bias)  # fmt: skip
    check(layer)
    if shift_range[0] == shift_range[1]:
        uniform = conv_layer(C=19, O=21, shift_range=shift_range, per_channel=False, bias=bias)
        check(uniform)


def test_bias_gemm_digits_and_limits():
    """The one-cycle bias GEMM: [127]*15 + [1] times int8 digit tiles reproduces every bias up
    to its limits; larger biases fall back to the ALU add."""
    from qaccel.lowering.vta.bias import bias_row
    from qaccel.lowering.vta.geometry import bias_tiles

    b = np.array([0, 1, -1, 63, -64, 127, 241871, -243903, 100000, -5], np.int64)
    tiles = bias_tiles(b, 1)
    got = tiles[0].astype(np.int64) @ bias_row().astype(np.int64)
    assert np.array_equal(got[: len(b)], b) and not np.any(got[len(b) :])
    assert bias_tiles(np.array([241872 + 127]), 1) is None
    assert bias_tiles(np.array([-243904 - 127]), 1) is None
    layer = conv_layer(C=20, O=20)
    big = replace(layer, bias=np.full(20, 10**6, np.int32))
    assert layer.geometry.small_bias and not big.geometry.small_bias
    assert schedule(layer).bias_mode == "gemm"
    assert schedule(big).bias_mode != "gemm"
    with pytest.raises(LayerError, match="too large"):
        make_schedule(big, tile_h=4, tile_w=4, tile_co=1, bias_mode="gemm")
    check(big)


def test_bias_digits_of_no_channels_and_of_zero_padded_blocks():
    """`bias_fits` and `bias_tiles` share one digit rule, which holds for no lanes at all (an
    empty bias fits, as zero tiles) and for a block padded with zeros."""
    from qaccel.lowering.vta.geometry import bias_fits, bias_tiles

    empty = np.zeros(0, np.int32)
    assert bias_fits(empty, 0) and bias_tiles(empty, 0).shape == (0, 16, 16)
    assert bias_fits(empty, 2, 4) and not bias_tiles(empty, 2, 4).any()
    for fused in (np.array([241871], np.int32), np.array([241872 + 127], np.int32)):
        tiles = bias_tiles(fused, 1)
        assert bias_fits(fused, 1) == (tiles is not None)


def test_per_tensor_left_shift_immediate():
    layer = conv_layer(C=16, O=16, per_channel=False, shift_range=(2, 2))
    prog = check(layer)
    f = decode(prog.program.words)
    shr = f[(f["opcode"] == Opcode.ALU) & (f["alu_opcode"] == 3)]
    assert len(shr) and np.all(shr["use_imm"] == 1) and np.all(shr["imm"] == -2)


def test_wraparound_and_saturation():
    """Large weights/inputs, a big bias and a left shift: int32 wrapping of x << left and the
    clamp-before-zero-point order must reproduce TFLite exactly."""
    layer = conv_layer(C=48, O=16, k=3, shift_range=(8, 12), zp_out=127, zp_in=-128)
    layer = replace(layer, bias=(2**31 - 1 - np.arange(16)).astype(np.int32))
    x = np.full(layer.input_shape, 127, np.int8)
    check(layer, x=x)
    check(layer)


@pytest.mark.parametrize(
    "tiling",
    [
        {"tile_h": 3, "tile_w": 5, "tile_co": 1},  # boundary tiles both ways, one output block
        {"tile_h": 1, "tile_w": 1, "tile_co": 2},  # single-pixel tiles
        {"tile_h": 4, "tile_w": 9, "tile_co": 2, "loop_order": "channel"},
        {"tile_h": 2, "tile_w": 9, "tile_co": 3, "tile_ci": 1},  # reduction split over steps
        {"tile_h": 2, "tile_w": 3, "tile_co": 1, "tile_ci": 1, "loop_order": "channel",
         "bias_mode": "dma"},
        {"tile_h": 5, "tile_w": 9, "tile_co": 3, "inp_slots": 1, "wgt_slots": 1,
         "acc_slots": 1},  # no double buffering at all
        {"tile_h": 3, "tile_w": 4, "tile_co": 2, "tile_ci": 2, "bias_mode": "gemm",
         "loop_order": "channel"},
    ],
)
def test_tile_boundaries_and_loop_orders(tiling):
    layer = conv_layer(H=9, W=9, C=33, O=40, k=3)
    check(layer, make_schedule(layer, **tiling))


def test_micro_op_kernels_must_fit():
    # one output block, odd widths: a kernel enumerates whole rows of 288 reductions
    layer = conv_layer(H=5, W=55, C=512, O=16, k=3)
    with pytest.raises(LayerError, match="does not fit"):
        make_schedule(layer, tile_h=1, tile_w=55, tile_co=1)
    sched = schedule(layer)
    assert sched.tile_w % 2 == 0 or sched.tile_h % 2 == 0 or sched.tile_w * 288 <= 4096


def test_tiles_of_odd_sizes_with_one_output_block():
    """One output block and odd tile sizes: micro-ops enumerate a whole row so consecutive
    GEMM iterations never write one accumulator row."""
    layer = conv_layer(H=7, W=7, C=20, O=10, k=3)
    for th, tw in [(7, 7), (3, 7), (7, 3), (1, 5), (5, 1)]:
        check(layer, make_schedule(layer, tile_h=th, tile_w=tw, tile_co=1))


@pytest.mark.parametrize("bias_mode", ["alu", "dma", "gemm"])
def test_single_output_row_split_accumulator(bias_mode):
    """A 1x1 output with at most 16 channels: the reduction alternates two accumulator rows."""
    layer = conv_layer(H=3, W=3, C=40, O=12, k=3, pad=(0, 0, 0, 0))
    check(layer, bias_mode=bias_mode)
    # the last reduction step is a single block: only the first steps split
    dense = dense_layer(1, 36, 15)
    check(dense, make_schedule(dense, tile_h=1, tile_w=1, tile_co=1, tile_ci=2,
                               bias_mode=bias_mode))  # fmt: skip


def test_large_and_degenerate_paddings():
    # more than 15 padding rows (split into loads from a row of zero points), and output rows
    # whose whole window lies in the padding
    layer = conv_layer(H=4, W=6, C=17, O=18, k=3, pad=(18, 17, 2, 2))
    check(layer)
    check(layer, make_schedule(layer, tile_h=2, tile_w=3, tile_co=2))


def test_planes_beyond_16_bit_strides():
    """H*W > 65535: blocks can no longer be merged into one LOAD/STORE (16-bit strides)."""
    layer = conv_layer(H=257, W=257, C=20, O=18, k=1, pad=(0, 0, 0, 0), bias=False)
    prog = check(layer)
    f = decode(prog.program.words)
    assert f["x_stride"].max() <= 0xFFFF


def test_one_by_one_kernels_with_bottom_right_padding():
    """A 1x1 kernel with bottom/right padding only: outputs on padded positions see just the
    bias. (The CPU reference's 1x1 fast path, `kernels_conv._im2col`, ignores such padding
    and fails, so the expectation is composed from the unpadded layer and the bias.)"""
    layer = conv_layer(H=5, W=5, C=20, O=18, k=1, s=2, pad=(0, 2, 0, 2), zp_out=-9)
    x = RNG.integers(-128, 128, layer.input_shape).astype(np.int8)
    prog = emit(layer, schedule(layer))
    y = prog.run(x)
    assert y.shape == (1, 4, 4, 18)
    inner = reference(replace(layer, padding=(0, 0, 0, 0)), x)
    assert np.array_equal(y[:, :3, :3], inner)
    only_bias = ar.multiply_by_quantized_multiplier(layer.bias, layer.multiplier, layer.shift)
    edge = np.clip(only_bias + layer.output_zero_point, layer.act_min, layer.act_max)
    assert np.all(y[0, 3, :] == edge) and np.all(y[0, :, 3] == edge)


def test_one_row_frames_and_row_subsampling():
    # 1x1 stride 2: only the used input rows are loaded; one-row frames in a single LOAD
    layer = conv_layer(H=14, W=13, C=40, O=20, k=1, s=2, pad=(0, 0, 0, 0))
    prog = check(layer, make_schedule(layer, tile_h=1, tile_w=7, tile_co=2))
    f = decode(prog.program.words)
    inp = f[(f["opcode"] == Opcode.LOAD) & (f["memory_type"] == MemType.INP)]
    assert np.all(inp["y_size"][inp["x_size"] > 1] == 3)  # all 3 input blocks per LOAD
    check(layer, make_schedule(layer, tile_h=3, tile_w=7, tile_co=2))
    # rectangular kernels
    check(conv_layer(H=9, W=10, C=17, O=17, k=1, kw=3, pad=(0, 0, 1, 1)))
    check(conv_layer(H=9, W=10, C=17, O=17, k=5, kw=1, s=2, pad=(2, 2, 0, 0)))


# --------------------------------------------------------------------------------------------
# Depthwise and dense


@pytest.mark.parametrize("mult", [1, 2, 3])
@pytest.mark.parametrize("s", [1, 2])
def test_depthwise(mult, s):
    check(conv_layer(kind="depthwise", H=9, W=10, C=20, mult=mult, k=3, s=s, pad=(1, 1, 1, 1)))


def test_depthwise_tilings():
    layer = conv_layer(kind="depthwise", H=12, W=12, C=40, k=3, pad=(1, 1, 1, 1))
    check(layer, make_schedule(layer, tile_h=5, tile_w=7, tile_co=2, loop_order="channel"))
    check(layer, make_schedule(layer, tile_h=1, tile_w=1, tile_co=1, bias_mode="dma"))
    w = pack_weights(layer)
    assert w.shape == (3, 3, 3, 16, 16)
    assert np.count_nonzero(w[:, 1, 1]) <= 40  # one weight per output lane: diagonal tiles


@pytest.mark.parametrize(
    "rows,C,O,per_channel", [(1, 40, 20, True), (1, 16, 7, False), (3, 33, 50, True),
                             (1, 300, 130, True)],
)  # fmt: skip
@pytest.mark.parametrize("bias_mode", ["alu", "dma", "gemm"])
def test_dense(rows, C, O, per_channel, bias_mode):
    prog = check(dense_layer(rows, C, O, per_channel=per_channel), bias_mode=bias_mode)
    f = decode(prog.program.words)
    stores = f[f["opcode"] == Opcode.STORE]
    assert np.all(stores["memory_type"] == MemType.ACC)  # int32 out, double requantize on host


def tokens_layer(tokens=16, C=32, O=40, zp_in=-7, zp_out=3, per_channel=True, rng=RNG):
    """FULLY_CONNECTED over tokens [1, T, C] (keep_num_dims) as the accelerator runs it: a 1x1
    convolution over a row of T pixels, int32 accumulators stored for the host's double
    requantization."""
    d = dense_layer(tokens, C, O, zp_in=zp_in, zp_out=zp_out, per_channel=per_channel, rng=rng)
    return ConvLayer("conv", (1, 1, tokens, C), d.weights.reshape(O, 1, 1, C), d.bias,
                     input_zero_point=zp_in, scale=d.scale, output_zero_point=zp_out)  # fmt: skip


@pytest.mark.parametrize("tokens,C,O", [(16, 32, 32), (3, 20, 50), (40, 64, 16)])
@pytest.mark.parametrize("bias_mode", ["alu", "dma", "gemm"])
@pytest.mark.parametrize("config", ["vta-default", "vta-store-requant"])
def test_tokens_dense_as_a_one_by_one_convolution(tokens, C, O, bias_mode, config):
    layer = tokens_layer(tokens, C, O)
    prog = check(layer, config=HardwareConfig.from_json(config), bias_mode=bias_mode)
    f = decode(prog.program.words)
    stores = f[f["opcode"] == Opcode.STORE]
    assert np.all(stores["memory_type"] == MemType.ACC)  # int32 out, double requantize on host


def test_double_requantization_is_not_for_depthwise_layers():
    layer = conv_layer(kind="depthwise", H=4, W=4, C=16, k=1, pad=(0, 0, 0, 0))
    with pytest.raises(LayerError, match="only for dense layers and 1x1 convolutions"):
        replace(layer, multiplier=None, shift=None, scale=np.array([0.01])).geometry


def test_dense_host_requantization_edge_cases():
    """LiteRT's reference FULLY_CONNECTED rounds acc * scale in double, halves away from
    zero, then adds the zero point and saturates: exact ties, saturation both ways."""
    layer = replace(dense_layer(1, 16, 4, per_channel=False, zp_out=-3), scale=np.array([0.5]))
    acc = np.array([[1, -1, 3, -3], [255, -255, 2**31 - 1, -(2**31)]], np.int32)
    out = dense_requantize_host(layer, acc)
    assert out.tolist() == [[-2, -4, -1, -5], [125, -128, 127, -128]]
    # and through the accelerator, with accumulators that hit ties and saturate
    w = np.zeros((16, 16), np.int8)
    w[:, 0] = 1
    layer = replace(
        dense_layer(2, 16, 16, per_channel=True, zp_out=0), weights=w,
        scale=np.where(np.arange(16) % 2, 0.5, 0.25), bias=(np.arange(16) - 8).astype(np.int32),
    )  # fmt: skip
    check(layer)
    check(replace(dense_layer(1, 64, 16, zp_out=10, act=(-20, 100)), scale=np.full(16, 0.01)))


def test_dense_matches_int32_accumulators():
    layer = dense_layer(2, 50, 18)
    prog = emit(layer, schedule(layer, refine=0))
    x = RNG.integers(-128, 128, layer.input_shape).astype(np.int8)
    result = prog.simulate(x)
    o = prog.output_offset
    acc = result.dram[o : o + prog.output_nbytes].view("<i4").reshape(2, -1)[:, :18]
    want = (x.astype(np.int64) - layer.input_zero_point) @ layer.weights.astype(np.int64).T
    assert np.array_equal(acc, (want + layer.bias).astype(np.int32))


# --------------------------------------------------------------------------------------------
# Hardware configurations, search, program properties


def test_small_buffers_and_micro_op_cache():
    """A configuration with tiny buffers forces many tiles, and a micro-op buffer too small for
    every kernel forces reloads through the micro-op ring."""
    cfg = HardwareConfig(name="tiny", log_uop_buff_size=9, log_inp_buff_size=11,
                         log_wgt_buff_size=14, log_acc_buff_size=12)  # fmt: skip
    layer = conv_layer(H=10, W=10, C=40, O=40, k=3)
    prog = check(layer, config=cfg)
    assert prog.uop_loads >= 1
    sched = make_schedule(layer, cfg, tile_h=2, tile_w=5, tile_co=1, tile_ci=1)
    prog = check(layer, sched, cfg)
    assert prog.uop_loads > 1


def random_layer(rng):
    """A random small layer of any kind (None when the accelerator refuses it)."""
    kind = str(rng.choice(["conv", "conv", "depthwise", "dense"]))
    try:
        if kind == "dense":
            return dense_layer(int(rng.integers(1, 5)), int(rng.integers(1, 70)),
                               int(rng.integers(1, 70)), per_channel=bool(rng.integers(2)),
                               rng=rng)  # fmt: skip
        k, kw = int(rng.choice([1, 2, 3, 5, 7])), int(rng.choice([1, 3]))
        pad = tuple(int(v) for v in rng.integers(0, 4, 4))
        if k == kw == 1 and pad[0] == pad[2] == 0:
            pad = (0, 0, 0, 0)  # see test_one_by_one_kernels_with_bottom_right_padding
        return conv_layer(
            H=int(rng.integers(1, 14)), W=int(rng.integers(1, 14)), C=int(rng.integers(1, 50)),
            O=int(rng.integers(1, 50)), k=k, kw=kw, s=int(rng.integers(1, 4)),
            d=int(rng.choice([1, 1, 2])), pad=pad, per_channel=bool(rng.integers(2)),
            zp_in=int(rng.integers(-128, 128)), zp_out=int(rng.integers(-128, 128)),
            shift_range=(int(rng.integers(-20, 3)), 3), bias=bool(rng.integers(2)), kind=kind,
            mult=int(rng.integers(1, 4)), rng=rng,
        )  # fmt: skip
    except LayerError:
        return None


def test_random_layers_with_random_legal_tilings():
    """Every candidate the search may pick is legal: random layers, random candidates, two
    hardware configurations (a 100 s run of this loop checked 17,000 combinations)."""
    rng = np.random.default_rng(2024)
    small = HardwareConfig(name="small", log_uop_buff_size=10, log_inp_buff_size=12,
                           log_wgt_buff_size=15, log_acc_buff_size=13)  # fmt: skip
    checked = 0
    while checked < 60:
        layer = random_layer(rng)
        if layer is None:
            continue
        config = small if rng.integers(2) else HardwareConfig()
        cands = candidates(layer.geometry, config)
        for i in rng.choice(len(cands), min(2, len(cands)), replace=False):
            check(layer, cands[i], config)
            checked += 1


def test_search_is_legal_and_picks_a_fast_candidate():
    layer = conv_layer(H=16, W=16, C=64, O=64, k=3)
    cands = candidates(layer.geometry, HardwareConfig())
    assert len(cands) > 10
    best = schedule(layer, refine=2)
    assert best.simulated_cycles > 0
    # every estimate of the chosen schedule is at most the estimate of a random legal one
    others = [estimate(c).cycles for c in cands[:: max(1, len(cands) // 8)]]
    assert best.estimated_cycles <= max(others)
    check(layer, best)


def test_schedule_round_trips_through_its_tiling():
    layer = conv_layer(H=12, W=12, C=40, O=40, k=3)
    sched = schedule(layer, refine=0)
    again = make_schedule(layer, **sched.tiling())
    assert again == sched
    assert emit(layer, again).program.to_bytes() == emit(layer, sched).program.to_bytes()


def test_program_structure():
    layer = conv_layer(H=12, W=12, C=33, O=40, k=3, zp_in=4)
    prog = check(layer)
    words = prog.program.words
    assert words.dtype == np.uint64 and words.shape[1] == 2
    f = decode(words)
    assert f["opcode"][-1] == Opcode.FINISH and np.sum(f["opcode"] == Opcode.FINISH) == 1
    assert np.sum(f["opcode"] == Opcode.SETPAD) == 1 and f["pad_value"][f["opcode"] == 5][0] == 4
    assert prog.program.uops.dtype == np.uint32
    # regions do not overlap and are 256-byte aligned
    spans = sorted(prog.regions.values())
    for (a, n), (b, _) in pairwise(spans):
        assert a % 256 == 0 and a + n <= b
    assert prog.dram_size >= prog.output_offset + prog.output_nbytes


def test_unsupported_layers_are_refused_clearly():
    w = np.ones((8, 3, 3, 4), np.int8)
    with pytest.raises(LayerError, match="grouped convolution"):
        ConvLayer("conv", (1, 8, 8, 8), w, multiplier=[1 << 30], shift=[-1])
    with pytest.raises(LayerError, match="filter zero point"):
        ConvLayer("conv", (1, 8, 8, 4), w, filter_zero_point=3, multiplier=[1 << 30], shift=[0])
    with pytest.raises(LayerError, match="horizontal padding"):
        ConvLayer("conv", (1, 8, 8, 4), w, padding=(0, 0, 16, 0), multiplier=[1 << 30],
                  shift=[0])  # fmt: skip
    with pytest.raises(LayerError, match="double-precision"):
        ConvLayer("conv", (1, 8, 8, 4), w, scale=[0.1])
    layer = conv_layer(H=8, W=8, C=16, O=16)
    with pytest.raises(LayerError, match="do not fit"):
        make_schedule(layer, tile_h=8, tile_w=8, tile_co=1, inp_slots=30)


def test_layers_of_a_fixture_model():
    """Real quantization parameters: every accelerator layer of the small CNN fixture."""
    from pathlib import Path

    from qaccel.frontend.tflite_import import import_tflite_file
    from qaccel.lowering.vta.q_layers import layers_from_q
    from qaccel.passes.legalize_tfl_to_q import LegalizeTflToQPass
    from xdsl.context import Context

    root = Path(__file__).parent / "fixtures" / "models"
    kinds = set()
    for name in ("small_cnn.tflite", "cnn_per_tensor.tflite", "mlp.tflite"):
        module = import_tflite_file(str(root / name))
        LegalizeTflToQPass().apply(Context(), module)
        for layer in layers_from_q(module):
            kinds.add(layer.kind)
            check(layer)
    assert {"conv", "dense"} <= kinds


def test_requantization_parameters_from_scales():
    """Multipliers computed by QuantizeMultiplier from realistic scales (per channel)."""
    rng = np.random.default_rng(7)
    layer = conv_layer(C=24, O=30, rng=rng)
    m, s = ar.quantize_multiplier(rng.uniform(2e-4, 3e-2, 30))
    check(replace(layer, multiplier=m.astype(np.int32), shift=s.astype(np.int32)))


@pytest.mark.parametrize("kind", ["conv", "depthwise"])
@pytest.mark.parametrize("config", [HardwareConfig(), HardwareConfig.from_json("vta-store-requant")])
def test_a_batch_is_an_outer_loop_over_the_images(kind, config):
    """A batch of 3 images: one pass of one image's loop nest per image, bit-exact with the
    q reference on the whole batch, each image's output the batch-1 layer's output for that
    image, and the schedule (searched for one image) the batch-1 layer's."""
    rng = np.random.default_rng(11)
    one = conv_layer(H=9, W=7, C=20, O=24, k=3, s=2, kind=kind, rng=rng)
    layer = replace(one, input_shape=(3, 9, 7, 20))
    assert layer.geometry.batch == 3 and layer.geometry.image == one.geometry
    assert layer.geometry.macs == 3 * one.geometry.macs
    sched = schedule(layer, config, refine=0)
    single = schedule(one, config, refine=0)
    assert sched.tiling() == single.tiling()
    assert sched.estimated_cycles == 3 * single.estimated_cycles
    x = rng.integers(-128, 128, layer.input_shape).astype(np.int8)
    prog = check(layer, sched, config, x)
    y = prog.run(x)
    for n in range(3):
        assert np.array_equal(y[n : n + 1], emit(one, single, config).run(x[n : n + 1]))
    assert "3x9x7x20" in layer.describe()


def test_a_batch_refuses_what_one_image_refuses():
    with pytest.raises(LayerError, match="horizontal padding"):
        ConvLayer("conv", (2, 4, 4, 16), np.zeros((16, 3, 3, 16), np.int8),
                  padding=(1, 1, 16, 1), multiplier=np.ones(1, np.int32),
                  shift=np.zeros(1, np.int32))
    with pytest.raises(LayerError, match="must be NHWC"):
        ConvLayer("conv", (0, 4, 4, 16), np.zeros((16, 3, 3, 16), np.int8),
                  multiplier=np.ones(1, np.int32), shift=np.zeros(1, np.int32))
