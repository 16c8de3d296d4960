"""VTA-like simulator: every instruction kind against numpy, error detection, timing model."""

import subprocess
import sys

import numpy as np
import pytest

from qaccel.targets.vta.alu import ALU_FUNCTIONS
from qaccel.targets.vta.asm import assemble
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.targets.vta.isa import AluOp, MemType, Program, encode_uops
from qaccel.targets.vta.roofline import conv2d_roofline, gemm_roofline, roofline
from qaccel.targets.vta.simulator import SimulationError, simulate, timing

INP_AT, WGT_AT, ACC_AT, OUT_AT = 0, 1 << 16, 1 << 19, 1 << 20  # byte offsets in test DRAM


def make_dram(inp=None, wgt=None, acc=None, size=(1 << 20) + (1 << 18)):
    dram = np.zeros(size, np.uint8)
    for data, at in ((inp, INP_AT), (wgt, WGT_AT), (acc, ACC_AT)):
        if data is not None:
            raw = np.ascontiguousarray(data).reshape(-1).view(np.uint8)
            dram[at : at + len(raw)] = raw
    return dram


def staged(n_inp, n_wgt, n_acc, uops, body, n_out_rows, store_mem=MemType.ACC):
    """LOAD inputs/weights (load module), LOAD UOP/ACC, `body(p)` on compute, STORE rows."""
    p = Program()
    p.uops = uops
    p.load(MemType.INP, 0, INP_AT // 16, 1, n_inp)
    p.load(MemType.WGT, 0, WGT_AT // 256, 1, n_wgt, push_next=True)
    p.load(MemType.UOP, 0, 0, 1, len(uops), pop_prev=True)
    if n_acc:
        p.load(MemType.ACC, 0, ACC_AT // 64, 1, n_acc)
    body(p)
    eb = 64 if store_mem == MemType.ACC else 16
    p.store(store_mem, 0, OUT_AT // eb, 1, n_out_rows, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)
    return p


def stored(result, rows, mem=MemType.ACC):
    if mem == MemType.ACC:
        return result.dram[OUT_AT : OUT_AT + rows * 64].view("<i4").reshape(rows, 16)
    return result.dram[OUT_AT : OUT_AT + rows * 16].view(np.int8).reshape(rows, 16)


def ref_gemm(acc, inp, wgt, d, s, w, n_out, n_in, f):
    acc = acc.astype(np.int64).copy()
    for o in range(n_out):
        for i in range(n_in):
            for k in range(len(d)):
                dd = d[k] + o * f[0] + i * f[1]
                ss = s[k] + o * f[2] + i * f[3]
                ww = w[k] + o * f[4] + i * f[5]
                acc[dd] += wgt[ww].astype(np.int64) @ inp[ss].astype(np.int64)
    return ((acc + 2**31) % 2**32 - 2**31).astype(np.int32)


def _flat_dst(d, n_out, n_in, f):
    o = np.arange(n_out)[:, None, None]
    i = np.arange(n_in)[None, :, None]
    return (d[None, None, :] + o * f[0] + i * f[1]).reshape(-1)


GEMM_CASES = [
    # (uops, n_out, n_in, factors dst_o, dst_i, src_o, src_i, wgt_o, wgt_i, weights per uop)
    ("reduce-inner", 12, 3, 4, (12, 0, 1, 13, 4, 1), "same"),
    ("reduce-outer", 8, 5, 2, (0, 8, 7, 1, 1, 2), "same"),
    ("reduce-both", 16, 3, 3, (0, 0, 5, 1, 3, 1), "same"),
    ("no-reduction", 6, 3, 2, (12, 6, 2, 3, 0, 0), "same"),
    ("colliding-offsets", 5, 3, 3, (1, 1, 1, 1, 1, 1), "few"),
    ("deep-reduction-float64", 4, 1, 80, (0, 0, 0, 4, 0, 1), "same"),
    ("distinct-weights", 70, 1, 2, (70, 0, 0, 1, 0, 0), "all"),
    ("few-weights", 9, 2, 2, (9, 0, 1, 2, 3, 0), "few"),
]


@pytest.mark.parametrize("name, k, n_out, n_in, f, wmode", GEMM_CASES, ids=[c[0] for c in GEMM_CASES])
def test_gemm_matches_reference(name, k, n_out, n_in, f, wmode):
    rng = np.random.default_rng(sum(map(ord, name)))
    for _ in range(100):
        d = rng.choice(128, k, replace=False)
        if not np.any(np.diff(_flat_dst(d, n_out, n_in, f)) == 0):
            break
    s = rng.integers(0, 40, k)
    w = {"same": np.full(k, 3), "few": rng.integers(0, 3, k), "all": rng.permutation(80)[:k]}[wmode]
    n_inp, n_wgt = 40 + 400, 80 + 100
    inp = rng.integers(-128, 128, (n_inp, 16)).astype(np.int8)
    inp[:4] = -128  # extreme values: products of -128 * -128 summed in the float paths
    wgt = rng.integers(-128, 128, (n_wgt, 16, 16)).astype(np.int8)
    wgt[:8] = -128
    acc0 = rng.integers(-(2**31), 2**31, (256, 16)).astype(np.int32)  # wraps on purpose
    rows = int(_flat_dst(d, n_out, n_in, f).max()) + 1
    p = staged(n_inp, n_wgt, 256, encode_uops(d, s, w),
               lambda p: p.gemm(0, k, n_out, n_in, f[:2], f[2:4], f[4:], push_next=True),
               rows)  # fmt: skip
    result = simulate(p, dram=make_dram(inp, wgt, acc0))
    want = ref_gemm(acc0, inp, wgt, d, s, w, n_out, n_in, f)[:rows]
    assert np.array_equal(stored(result, rows), want)
    assert result.timing.gemm_iterations == k * n_out * n_in


def test_gemm_reset_zeroes_rows_and_accumulates_from_zero():
    rng = np.random.default_rng(5)
    inp = rng.integers(-128, 128, (4, 16)).astype(np.int8)
    wgt = rng.integers(-128, 128, (1, 16, 16)).astype(np.int8)
    acc0 = np.full((8, 16), 99, np.int32)

    def body(p):
        p.gemm(0, 4, iter_out=2, dst_factor=(4, 0), reset=True)
        p.gemm(0, 4, push_next=True)

    p = staged(4, 1, 8, encode_uops(np.arange(4), np.arange(4), 0), body, 8)
    out = stored(simulate(p, dram=make_dram(inp, wgt, acc0)), 8)
    assert np.array_equal(out[:4], inp.astype(np.int32) @ wgt[0].T.astype(np.int32))
    assert np.array_equal(out[4:], np.zeros((4, 16)))


@pytest.mark.parametrize("op", list(AluOp))
@pytest.mark.parametrize("use_imm", [False, True])
def test_every_alu_opcode_with_loops(op, use_imm):
    rng = np.random.default_rng(int(op) * 2 + use_imm)
    acc0 = rng.integers(-(2**31), 2**31, (40, 16)).astype(np.int32)
    operand_rows = {AluOp.SHR: (-31, 32), AluOp.RSHR: (0, 32)}.get(op)
    if operand_rows:
        acc0[32:40] = rng.integers(*operand_rows, (8, 16))
    imm = {AluOp.SHR: -7, AluOp.RSHR: 13}.get(op, -12345)
    # dst rows 0..31 via 4 uops x (4 outer x 2 inner); src: 8 parameter rows 32..39
    d, s = np.array([0, 1, 2, 3]), np.array([32, 33, 34, 35])

    def body(p):
        p.alu(op, 0, 4, iter_out=4, iter_in=2, dst_factor=(8, 4), src_factor=(0, 4),
              imm=imm if use_imm else None, push_next=True)  # fmt: skip

    p = staged(1, 1, 40, encode_uops(d, s, 0), body, 40)
    out = stored(simulate(p, dram=make_dram(np.zeros((1, 16), np.int8), None, acc0)), 40)
    want = acc0.copy()
    fn = ALU_FUNCTIONS[op]
    for o in range(4):
        for i in range(2):
            for k in range(4):
                dst, src = d[k] + 8 * o + 4 * i, s[k] + 4 * i
                y = np.int32(imm) if use_imm else want[src]
                want[dst] = fn(want[dst], y)
    assert np.array_equal(out, want)


def test_alu_sequential_dependence_within_one_instruction():
    # Row 1 = row 1 + row 0, then row 2 = row 2 + row 1 (the new row 1): a running sum.
    acc0 = np.arange(4 * 16, dtype=np.int32).reshape(4, 16)
    p = staged(1, 1, 4, encode_uops([1, 2, 3], [0, 1, 2], 0),
               lambda p: p.alu(AluOp.ADD, 0, 3, push_next=True), 4)  # fmt: skip
    out = stored(simulate(p, dram=make_dram(np.zeros((1, 16), np.int8), None, acc0)), 4)
    assert np.array_equal(out, np.cumsum(acc0, axis=0))


def test_load_2d_strided_padded_with_setpad_and_store_truncates():
    rng = np.random.default_rng(7)
    image = rng.integers(-128, 128, (5, 7, 16)).astype(np.int8)  # 5 rows of 7 elements in DRAM
    p = Program()
    p.uops = encode_uops(np.arange(12), 0, 0)
    p.setpad(-5)
    p.load(MemType.INP, 3, INP_AT // 16 + 7 + 2, 2, 3, 7, y_pad=(1, 2), x_pad=(2, 1),
           push_next=True)  # fmt: skip
    p.load(MemType.ACC8, 0, INP_AT // 16 + 7 + 2, 2, 3, 7, y_pad=(1, 0), x_pad=(0, 1),
           pop_prev=True)  # fmt: skip
    p.load(MemType.UOP, 0, 0, 1, 12)
    p.alu(AluOp.ADD, 0, 12, imm=300, push_next=True)
    p.store(MemType.OUT, 0, OUT_AT // 16, 3, 4, 10, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)
    result = simulate(p, dram=make_dram(image))
    tile = np.full((5, 6, 16), -5, np.int8)
    tile[1:3, 2:5] = image[1:3, 2:5]
    assert np.array_equal(result.sram["inp"][3 : 3 + 30].reshape(5, 6, 16), tile)
    acc = np.zeros((3, 4, 16), np.int32)
    acc[1:3, 0:3] = image[1:3, 2:5]
    acc += 300
    out = result.dram[OUT_AT : OUT_AT + 3 * 10 * 16].view(np.int8).reshape(3, 10, 16)[:, :4]
    assert np.array_equal(out, acc.astype(np.int8))  # low 8 bits, no saturation
    assert result.timing.dram_write_bytes["out"] == 12 * 16


def test_weight_load_and_padding_zero():
    rng = np.random.default_rng(8)
    wgt = rng.integers(-128, 128, (3, 16, 16)).astype(np.int8)
    p = Program()
    p.setpad(7)  # only INP padding uses the pad value
    p.load(MemType.WGT, 0, WGT_AT // 256, 1, 3, x_pad=(1, 1), push_next=True)
    p.load(MemType.UOP, 0, 0, 0, 0, pop_prev=True)  # x_size 0: a no-op carrying the token
    p.finish()
    result = simulate(p, dram=make_dram(None, wgt))
    assert np.array_equal(result.sram["wgt"][1:4], wgt)
    assert not result.sram["wgt"][0].any() and not result.sram["wgt"][4].any()


def _expect(p, match, dram=None):
    with pytest.raises(SimulationError, match=match) as e:
        simulate(p, dram=make_dram() if dram is None else dram)
    return e.value


def test_deadlock_is_reported_with_index():
    p = assemble(
        """
        load.inp sram=0 dram=0 y=1 x=1 pop_next push_next
        gemm.reset uop=0:1 iter=1,1 pop_prev push_prev
        finish
        """
    )
    p.uops = encode_uops(0, 0, 0)
    err = _expect(p, "deadlock: load waits at instruction 0 .* compute waits at instruction 1")
    assert err.index == 0


def test_missing_token_is_reported_statically():
    p = Program()
    p.load(MemType.INP, 0, 0, 1, 1)
    p.gemm(0, 1, reset=True, pop_prev=True)
    p.finish()
    err = _expect(p, "pops load->compute token #1 .* pushes only 0")
    assert err.index == 1


def test_raw_hazard_without_token_fails_even_if_the_order_happens_to_work():
    p = Program()
    p.uops = encode_uops(0, 0, 0)
    p.load(MemType.WGT, 0, 0, 1, 1, push_next=True)
    p.load(MemType.INP, 0, 0, 1, 1)  # after the token: nothing orders it before the GEMM
    p.load(MemType.UOP, 0, 0, 1, 1)
    p.gemm(0, 1, reset=True, pop_prev=True)
    p.gemm(0, 1)
    p.finish()
    err = _expect(p, "reads INP row 0 written by load instruction 1 .* no token chain")
    assert err.index == 4


def test_war_hazard_load_overwrites_buffer_compute_still_reads():
    p = Program()
    p.uops = encode_uops(0, 0, 0)
    p.load(MemType.INP, 0, 0, 1, 1)
    p.load(MemType.WGT, 0, 0, 1, 1, push_next=True)
    p.load(MemType.INP, 0, 1, 1, 1, push_next=True)  # overwrites row 0 with no compute->load pop
    p.load(MemType.UOP, 0, 0, 1, 1)
    p.gemm(0, 1, reset=True, pop_prev=True)
    p.gemm(0, 1)
    p.gemm(0, 1, pop_prev=True, reset=True)
    p.finish()
    err = _expect(p, "(overwrites INP row 0 touched by compute|reads INP row 0 written by load)")
    assert err.index in (2, 5)


def test_finish_must_wait_for_the_last_store():
    p = Program()
    p.uops = encode_uops(0, 0, 0)
    p.load(MemType.UOP, 0, 0, 1, 1)
    p.gemm(0, 1, reset=True, push_next=True)
    p.store(MemType.OUT, 0, 0, 1, 1, pop_prev=True)
    p.finish()
    _expect(p, "FINISH does not wait for store instruction 2")


@pytest.mark.parametrize(
    "build, match, index",
    [
        (lambda p: p.load(MemType.INP, 2047, 0, 1, 2), "INP SRAM out of range: rows 2047..2048", 0),
        (lambda p: p.load(MemType.ACC, 1500, 0, 1, 1, y_pad=(15, 15), x_pad=(15, 15)),
         "ACC SRAM out of range", 0),
        (lambda p: p.load(MemType.INP, 0, (1 << 20) + (1 << 18) - 1, 1, 2),
         "DRAM access out of range", 0),
        (lambda p: p.load(MemType.UOP, 0, 5, 1, 1), "micro-op image access out of range", 0),
        (lambda p: p.store(MemType.ACC, 2040, 0, 1, 9, push_prev=True), "ACC SRAM out of range", 0),
        (lambda p: p.store(MemType.OUT, 0, 0, 2, 4, 3, push_prev=True), "rows overlap in DRAM", 0),
    ],
)
def test_out_of_range_accesses(build, match, index):
    p = Program()
    p.uops = encode_uops(np.arange(5), 0, 0)
    build(p)
    p.finish(pop_next=p.fields()["push_prev"].any())
    err = _expect(p, match)
    assert err.index == index


def _compute_program(uops, *instructions):
    p = Program()
    p.uops = uops
    p.load(MemType.UOP, 0, 0, 1, len(uops))
    for build in instructions:
        build(p)
    p.finish()
    return p


def test_gemm_index_out_of_range_and_uop_range_checks():
    uops = encode_uops([0, 1000], 0, 0)
    _expect(_compute_program(uops, lambda p: p.gemm(0, 2, iter_out=2, dst_factor=(1048, 0),
                                                    reset=True)),
            "ACC SRAM index 2048 out of range")  # fmt: skip
    _expect(_compute_program(uops, lambda p: p.gemm(0, 8193, reset=True)),
            "micro-op range 0:8193 exceeds the micro-op buffer")  # fmt: skip
    _expect(_compute_program(uops, lambda p: p.gemm(0, 3, reset=True)), "micro-op 2 was never loaded")


def test_consecutive_uops_writing_one_accumulator_row():
    uops = encode_uops([4, 4], [0, 1], 0)
    p = _compute_program(uops, lambda p: p.gemm(0, 2, reset=True), lambda p: p.gemm(0, 2))
    err = _expect(p, "micro-ops 0 and 1 write the same accumulator row consecutively")
    assert err.index == 2
    # across the loop seam: one micro-op, inner loop accumulating into the same row
    uops = encode_uops([4], [0], 0)
    p = _compute_program(uops, lambda p: p.gemm(0, 1, reset=True),
                         lambda p: p.gemm(0, 1, iter_in=2, src_factor=(0, 1)))  # fmt: skip
    _expect(p, "outer 0, inner 0\\) and the first of the next write the same accumulator row 4")


def test_uninitialized_accumulator_read():
    uops = encode_uops([0], [1], 0)
    p = _compute_program(uops, lambda p: p.gemm(0, 1, reset=True),
                         lambda p: p.alu(AluOp.ADD, 0, 1))  # fmt: skip
    _expect(p, "reads ACC row 1 before any instruction wrote it")


def test_alu_shift_operand_out_of_range_names_lane():
    acc0 = np.zeros((2, 16), np.int32)
    acc0[1, 5] = 40
    p = staged(1, 1, 2, encode_uops([0], [1], 0),
               lambda p: p.alu(AluOp.RSHR, 0, 1, push_next=True), 1)  # fmt: skip
    _expect(p, "RSHR exponent 40 outside \\[0, 31\\] .*lane 5",
            make_dram(np.zeros((1, 16), np.int8), None, acc0))  # fmt: skip


def test_malformed_encoding_is_reported():
    p = Program()
    p.append_words(7, 0)
    p.finish()
    err = _expect(p, "malformed instruction: unknown opcode 7")
    assert err.index == 0


# --- timing model ---------------------------------------------------------------------------


def _tiled_gemm(n_tiles, double_buffered):
    """Per tile: LOAD 64 input rows, GEMM 64 x 4 iterations over them, no store."""
    rows, reps = 64, 4
    p = Program()
    p.uops = np.concatenate([encode_uops(np.arange(rows) + b * rows, np.arange(rows) + b * rows, 0)
                             for b in range(2)])  # fmt: skip
    p.load(MemType.WGT, 0, 0, 1, 1)
    for t in range(n_tiles):
        b = t % 2 if double_buffered else 0
        # before refilling a buffer, wait until the GEMM that read it released it
        wait = t >= 2 if double_buffered else t >= 1
        p.load(MemType.INP, b * rows, 0, 1, rows, pop_next=wait, push_next=True)
    p.load(MemType.UOP, 0, 0, 1, 2 * rows)
    p.gemm(0, 2 * rows, reset=True)
    for t in range(n_tiles):
        b = t % 2 if double_buffered else 0
        p.gemm(b * rows, (b + 1) * rows, iter_out=reps, pop_prev=True,
               push_prev=t < n_tiles - (2 if double_buffered else 1))  # fmt: skip
    p.finish()
    return p


def test_double_buffering_overlaps_load_and_compute():
    c = DEFAULT_CONFIG
    n = 8
    serial = timing(_tiled_gemm(n, False))
    double = timing(_tiled_gemm(n, True))
    load_cycles = c.insn_issue_cycles + c.dma_setup_cycles + 64 * 16 // c.bus_width_bytes
    gemm_cycles = c.insn_issue_cycles + 64 * 4 * c.gemm_cycles_per_uop
    assert load_cycles < gemm_cycles  # compute-bound: loads hide entirely behind GEMMs
    # serialized, every tile after the first waits for the previous GEMM, then loads: the
    # double-buffered version hides (n - 1) loads of (n - 1) * load_cycles
    assert serial.total_cycles - double.total_cycles == (n - 1) * load_cycles
    assert double.stalled["compute"] < serial.stalled["compute"]
    assert double.gemm_utilization > serial.gemm_utilization
    # and both compute the same thing
    dram = make_dram(np.ones((64, 16), np.int8) - 2, np.ones((1, 16, 16), np.int8))
    dram[: 64 * 16] = np.frombuffer(np.full(64 * 16, 3, np.int8).tobytes(), np.uint8)
    a = simulate(_tiled_gemm(n, False), dram=dram)
    b = simulate(_tiled_gemm(n, True), dram=dram)
    assert np.array_equal(a.sram["acc"][:64], b.sram["acc"][:64] + b.sram["acc"][64:128])
    assert a.timing.total_cycles == serial.total_cycles


def test_timing_report_figures_and_bus_sharing():
    c = DEFAULT_CONFIG
    p = Program()
    p.uops = encode_uops(np.arange(16), np.arange(16), 0)
    p.load(MemType.INP, 0, 0, 1, 16)
    p.load(MemType.WGT, 0, 0, 1, 1, push_next=True)
    p.load(MemType.UOP, 0, 0, 1, 16)
    p.gemm(0, 16, reset=True)
    p.gemm(0, 16, pop_prev=True, push_next=True)
    p.store(MemType.OUT, 0, 0, 1, 16, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)
    r = simulate(p, dram=make_dram()).timing
    dma = c.insn_issue_cycles + c.dma_setup_cycles
    t_inp = dma + 16 * 16 // 16
    t_wgt_end = t_inp + 256 // 16  # issued at t_inp, setup overlaps, then waits for the bus
    assert r.start[1] == t_inp and r.end[1] == t_inp + dma + 16
    assert r.start[2] == 0 and r.end[2] == t_inp + 4  # UOP DMA waits for the shared bus
    assert r.bus_wait["compute"] == t_inp - dma
    gemm_start = r.end[1]
    assert r.start[4] == gemm_start and r.end[4] == gemm_start + 1 + 16
    assert r.start[5] == r.end[4] and r.end[6] == r.end[5] + 1
    assert r.total_cycles == r.end[6]
    assert r.gemm_macs == 16 * 256
    assert r.gemm_utilization == pytest.approx(16 / r.total_cycles)
    assert r.dram_bytes == 256 + 256 + 64 + 256
    assert r.busy["load"] == r.end[1]
    assert r.stalled["store"] == r.start[5]
    assert t_wgt_end < r.end[1]


def test_timing_only_matches_simulation_and_config_changes_timing(tmp_path):
    p = _tiled_gemm(4, True)
    dram = make_dram()
    dram[:1024] = 1
    assert timing(p).total_cycles == simulate(p, dram=dram).timing.total_cycles
    slow_bus = HardwareConfig(bus_width_bytes=8)
    assert timing(p, slow_bus).total_cycles > timing(p).total_cycles


def test_roofline():
    r = roofline(256 * 1000, 16 * 10, DEFAULT_CONFIG)
    assert (r.compute_cycles, r.memory_cycles, r.cycles, r.bound) == (1000, 10, 1000, "compute")
    conv = conv2d_roofline(56, 56, 64, 64, 3, 3, 1, 1)
    assert conv.compute_cycles == 56 * 56 * 4 * 4 * 9
    assert conv.bound == "compute"
    fc = gemm_roofline(1, 1024, 1000)
    assert fc.bound == "memory" and fc.memory_cycles > fc.compute_cycles
    layer = timing(_tiled_gemm(8, True))
    assert layer.total_cycles >= roofline(layer.gemm_macs, layer.dram_bytes).cycles


# --- qaccel-sim -----------------------------------------------------------------------------


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "qaccel.tools.qaccel_sim", *map(str, args)],
                          capture_output=True, text=True)  # fmt: skip


def test_cli_binary_program_with_npz_image_and_trace(tmp_path):
    p = _tiled_gemm(2, True)
    (tmp_path / "prog.bin").write_bytes(p.to_bytes())
    dram = make_dram(size=4096)
    dram[:1024] = 2
    np.savez(tmp_path / "image.npz", dram=dram, uops=p.uops)
    r = _cli(tmp_path / "prog.bin", "--dram", tmp_path / "image.npz", "--trace",
             "--output", tmp_path / "out.npz", "--dump", "0:4:i8")  # fmt: skip
    assert r.returncode == 0, r.stderr
    assert f"total cycles:      {timing(p).total_cycles}" in r.stdout
    assert "gemm utilization:" in r.stdout and "dram bytes read:" in r.stdout
    assert "leftover tokens" not in r.stdout  # every token pushed is popped
    trace = [line for line in r.stdout.splitlines() if line.strip().startswith(("0 ", "1 "))]
    assert trace[0].split()[:4] == ["0", "load", "0", str(timing(p).end[0])]
    assert "dram[0:4] i8: 2 2 2 2" in r.stdout
    assert np.array_equal(np.load(tmp_path / "out.npz")["dram"], dram)


def test_cli_errors_are_one_line(tmp_path):
    bad = tmp_path / "bad.s"
    bad.write_text("gemm uop=0:1 iter=1,1 pop_prev\nfinish\n")
    r = _cli(bad)
    assert r.returncode == 1
    # (without the C simulator, its one-line fallback notice comes first)
    err = [x for x in r.stderr.strip().splitlines() if "using the Python simulator" not in x]
    assert len(err) == 1
    assert "bad.s: instruction 0 (GEMM): pops load->compute token #1" in r.stderr
    r = _cli(tmp_path / "missing.s")
    assert r.returncode == 1 and "missing.s" in r.stderr and "Traceback" not in r.stderr
    cfg = tmp_path / "hw.json"
    cfg.write_text("{")
    r = _cli(bad, "--config", cfg)
    assert r.returncode == 1 and "cannot read hardware config" in r.stderr
