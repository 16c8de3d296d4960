"""The C machine's fast-path kernels on the shapes they are chosen for, against the checked path.

`test_vta_cmachine.py` compares the fast path with the checked C run (and the Python
simulator) on random programs; the programs here are built to reach each fast-path variant
and its edges, for the portable C kernels and the vector ones (`QACCEL_CMACHINE_KERNEL`):

- GEMMs whose micro-ops share an input row across several output blocks (a 1x1
  convolution: dense tiles taken together, more of them than one group holds, mixed with
  tiles dense in only some lane pairs, diagonal and zero tiles, or a first layer's tiles
  with the same few lane pairs);
- GEMMs whose micro-ops add several diagonal tiles to the same rows (a depthwise
  convolution's taps: odd and even counts, more than one group holds, interleaved
  destinations, GEMMs with more micro-ops than are grouped);
- fused ALU runs whose register operands do not move with the inner loop (a per-channel
  requantization: operands prepared once per row block), with INT32_MIN operands
  (RDMUL's saturating case) and RSHR exponents out of range (the error of the checked run);
- resets left pending: a reset of consecutive rows, then what may come before the GEMM that
  adds one product row (a bias) to each of them (a STORE of other rows or of the same ones,
  an ALU, another reset), then that GEMM or one that does not cover the range exactly.
"""

from __future__ import annotations

import numpy as np
import pytest
from test_vta_cmachine import _compare, _phase, needs_c

from qaccel.targets.vta import cmachine
from qaccel.targets.vta.config import DEFAULT_CONFIG
from qaccel.targets.vta.isa import AluOp, MemType, Program, encode_uops

pytestmark = needs_c
KERNELS = ["c", "avx2"]


def _tiles(rng, blk, n):
    """`n` weight tiles of random classes: dense, dense in some lane pairs, diagonal, zero;
    int8 values over the whole range (-128 included)."""
    tiles = np.zeros((n, blk, blk), np.int8)
    for t in range(n):
        kind = rng.choice(["dense", "dense", "pairs", "diag", "zero"])
        if kind == "zero":
            continue
        w = rng.integers(-128, 128, (blk, blk)).astype(np.int8)
        if rng.random() < 0.1:
            w[:] = -128
        if kind == "diag":
            w = np.diag(np.diag(w)).astype(np.int8)
        elif kind == "pairs":
            keep = rng.random(max(1, blk // 2)) < 0.4
            keep[rng.integers(len(keep))] = True
            cols = np.repeat(keep, 2)[:blk]
            w[:, ~cols] = 0
        tiles[t] = w
    return tiles


def gemm_program(rng, config, shape):
    """One GEMM layer's data flow: ACC rows loaded with random sums, INP and WGT loaded,
    one or two GEMMs of the given micro-op `shape`, the ACC rows stored back."""
    blk, r = config.block, lambda lo, hi: int(rng.integers(lo, hi))
    ri, rw, ra = 64, len(TILES), 256
    n_in, n_out = r(1, 6), r(1, 3)
    if shape == "pointwise":  # K input blocks x M output blocks, the same input row M times
        k_blocks, m_blocks = r(1, 4), r(1, 12)
        dst = [m * 24 for _ in range(k_blocks) for m in range(m_blocks) if m * 24 < 200]
        src = [k * 12 for k in range(k_blocks) for m in range(m_blocks) if m * 24 < 200]
        dense = [t for t in range(rw) if np.any(TILES[t] - np.diag(np.diag(TILES[t]))) and
                 all(np.any(TILES[t][:, c : c + 2]) for c in range(0, 16, 2))]  # fmt: skip
        if rng.random() < 0.3:  # a first layer: the same few lane pairs
            dense = list(range(48, rw, 2)) if rng.random() < 0.5 else list(range(48, rw))
        wgt = [int(rng.choice(dense)) if rng.random() < 0.9 else r(0, rw) for _ in dst]
        dfo, dfi, sfo, sfi = n_in, 1, n_in, 1
    elif shape == "depthwise":  # taps of one or more interleaved destination rows
        taps, n_dst = r(1, 21), r(2, 4)  # the pipeline: no row twice in a row
        diag = [t for t in range(rw) if np.count_nonzero(TILES[t] - np.diag(np.diag(TILES[t]))) == 0]
        dst = [d for _ in range(taps) for d in range(n_dst)]
        src = [t + d for t in range(taps) for d in range(n_dst)]
        wgt = [int(rng.choice(diag)) if diag and rng.random() < 0.9 else r(0, rw)
               for _ in range(taps) for _ in range(n_dst)]  # fmt: skip
        if rng.random() < 0.15:  # more micro-ops than are grouped by destination
            reps = 300 // len(dst) + 1
            dst, src, wgt = dst * reps, src * reps, wgt * reps
            n_in, n_out = 1, 1
        dfo, dfi, sfo, sfi = n_in * n_dst, n_dst, r(0, 3), 1
    else:  # micro-ops of random rows, one source row for every destination now and then
        nu = r(1, 20)
        dst, src, wgt = ([r(0, lim) for _ in range(nu)] for lim in (64, 24, rw))
        dfo, dfi = r(0, 8), r(0, 4)
        sfo, sfi = (0, 0) if rng.random() < 0.3 else (r(0, 4), r(0, 3))
    nu = len(dst)
    uops = encode_uops(np.array(dst), np.array(src), np.array(wgt), config=config)
    eb_acc, eb_wgt = 4 * blk, blk * blk
    acc = rng.integers(-(1 << 31), 1 << 31, (ra, blk), dtype=np.int64).astype(np.int32)
    inp = rng.integers(-128, 128, (ri, blk)).astype(np.int8)
    inp[rng.integers(ri, size=4)] = -128
    wgt_at = ra * eb_acc
    inp_at = wgt_at + rw * eb_wgt
    dram = np.concatenate([acc.reshape(-1).view(np.uint8), TILES[:rw].reshape(-1).view(np.uint8),
                           inp.reshape(-1).view(np.uint8)])  # fmt: skip
    p = Program(config)
    p.uops = uops
    p.load(MemType.UOP, 0, 0, 1, nu)
    p.load(MemType.ACC, 0, 0, 1, ra)
    _phase(p, [("load", (MemType.INP, 0, inp_at // blk, 1, ri), {}),
               ("load", (MemType.WGT, 0, wgt_at // eb_wgt, 1, rw), {})], push_next=True)  # fmt: skip
    gemms = []
    if rng.random() < 0.2:  # a reset first
        gemms.append(("gemm", (0, nu), dict(iter_out=n_out, iter_in=n_in, dst_factor=(dfo, dfi),
                                            reset=True)))  # fmt: skip
    gemms.append(("gemm", (0, nu), dict(iter_out=n_out, iter_in=n_in, dst_factor=(dfo, dfi),
                                        src_factor=(sfo, sfi))))  # fmt: skip
    _phase(p, gemms, pop_prev=True, push_next=True)
    p.store(MemType.ACC, 0, 0, 1, ra, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)
    return p, dram


def _first_layer_tiles(rng, n):
    """Tiles dense in lane pairs 0 and 1 only (three input channels padded to the block),
    every other one in pair 5 too."""
    tiles = np.zeros((n, 16, 16), np.int8)
    for t in range(n):
        tiles[t, :, :3] = rng.integers(-128, 128, (16, 3))
        if t % 2:
            tiles[t, :, 10] = rng.integers(1, 128, 16)
    return tiles


TILES = np.concatenate([_tiles(np.random.default_rng(11), 16, 48),
                        _first_layer_tiles(np.random.default_rng(12), 8)])  # fmt: skip


@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("shape", ["pointwise", "depthwise", "random"])
def test_grouped_gemm_micro_ops(kernel, shape, monkeypatch):
    monkeypatch.setattr(cmachine, "kernel", kernel)
    rng = np.random.default_rng(sum(map(ord, shape)))
    ran = 0
    for n in range(30):
        program, dram = gemm_program(rng, DEFAULT_CONFIG, shape)
        ran += _compare(program, None, dram, DEFAULT_CONFIG, f"{kernel} {shape} {n}") == "ran"
    assert ran >= (15 if shape == "random" else 25)  # random rows break pipeline rules


def requant_program(rng, config, usual=False):
    """A requantization-like ALU run: register operands from rows that move with the outer
    iteration only (or not at all), immediates, INT32_MIN in operands and sums, RSHR
    exponents in range or (sometimes) not. `usual`: a requantization's usual run (RDMUL
    and RSHR by register rows, MAX and MIN by immediates; sometimes without the RDMUL)."""
    r = lambda lo, hi: int(rng.integers(lo, hi))  # noqa: E731
    blk, ra = config.block, 256
    half, nu = ra // 2, 8  # destinations stay below `half`, operands above: fusable
    b = r(0, 3)
    e = b + r(1, 5)
    io, ii = r(1, 4), r(1, 8)
    dfi, dfo = e - b, (e - b) * ii
    sfo = r(0, 3)
    uops = encode_uops(np.arange(nu), half + np.arange(nu) * 3, np.zeros(nu, np.int64), config=config)
    if usual:  # micro-ops nu.. read the multipliers, from rows of their own
        uops = encode_uops(np.tile(np.arange(nu), 2),
                           half + np.concatenate([np.arange(nu) * 3, 64 + np.arange(nu) * 3]),
                           np.zeros(2 * nu, np.int64), config=config)  # fmt: skip
    acc = rng.integers(-(1 << 31), 1 << 31, (ra, blk), dtype=np.int64).astype(np.int32)
    acc[rng.random((ra, blk)) < 0.2] = np.iinfo(np.int32).min
    kind = "exponents" if usual else rng.choice(["exponents", "multipliers"])
    if kind == "exponents":  # register RSHR exponents: in range, now and then one is not
        acc[half:] = rng.integers(0, 32, (ra - half, blk))
        if rng.random() < 0.3:  # in an operand row the run reads
            acc[half + 3 * r(b, e) + sfo * r(0, io), r(0, blk)] = rng.choice([-1, 32, 40])
    else:  # multipliers, INT32_MIN among them
        acc[half:][rng.random((ra - half, blk)) < 0.2] = np.iinfo(np.int32).min
    dram = acc.reshape(-1).view(np.uint8).copy()
    p = Program(config)
    p.uops = uops
    p.load(MemType.UOP, 0, 0, 1, 2 * nu if usual else nu)
    p.load(MemType.ACC, 0, 0, 1, ra)
    chain = []
    ops = [AluOp.ADD, AluOp.RDMUL, AluOp.RSHR, AluOp.MAX, AluOp.MIN, AluOp.MUL, AluOp.SHR]
    for n in range(r(2, 7)):
        op = ops[r(0, len(ops))] if n or kind == "exponents" else AluOp.RDMUL
        kw = dict(iter_out=io, iter_in=ii, dst_factor=(dfo, dfi))
        register = op != AluOp.SHR and rng.random() < 0.5
        if op == AluOp.RSHR and kind == "multipliers":
            register = False
        if register:
            kw["src_factor"] = (sfo, 0)
        else:
            lo, hi = {AluOp.SHR: (-31, 32), AluOp.RSHR: (0, 32)}.get(op, (-32768, 32768))
            kw["imm"] = r(lo, hi)
        chain.append(("alu", (op, b, e), kw))
    if usual:
        kw = dict(iter_out=io, iter_in=ii, dst_factor=(dfo, dfi))
        ops = [(AluOp.RDMUL, None), (AluOp.RSHR, None), (AluOp.MAX, r(-200, 0)),
               (AluOp.MIN, r(0, 200))]  # fmt: skip
        acc[half + 64 :] = rng.integers(1 << 29, 1 << 31, (ra - half - 64, blk))
        if rng.random() < 0.3:  # INT32_MIN multipliers: RDMUL's saturating case
            acc[half + 64 :][rng.random((ra - half - 64, blk)) < 0.1] = np.iinfo(np.int32).min
        dram = acc.reshape(-1).view(np.uint8).copy()
        chain = [("alu", (op, b + (nu if op == AluOp.RDMUL else 0), e + (nu if op == AluOp.RDMUL else 0)),
                  {**kw, **({"src_factor": (sfo, 0)} if imm is None else {"imm": imm})})
                 for op, imm in ops[r(0, 2):]]  # fmt: skip
    _phase(p, chain, push_next=True)
    p.store(MemType.ACC, 0, 0, 1, half, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)
    return p, dram


@pytest.mark.parametrize("kernel", KERNELS)
def test_fused_alu_runs_with_fixed_operands(kernel, monkeypatch):
    monkeypatch.setattr(cmachine, "kernel", kernel)
    config = DEFAULT_CONFIG
    rng = np.random.default_rng(23)
    outcomes = {"ran": 0, "error": 0}
    for n in range(80):
        program, dram = requant_program(rng, config)
        outcomes[_compare(program, None, dram, config, f"{kernel} {config.name} run {n}")] += 1
    assert outcomes["ran"] >= 50 and outcomes["error"] >= 1, outcomes


@pytest.mark.parametrize("kernel", KERNELS)
def test_fused_requantization_runs(kernel, monkeypatch):
    monkeypatch.setattr(cmachine, "kernel", kernel)
    rng = np.random.default_rng(29)
    outcomes = {"ran": 0, "error": 0}
    for n in range(60):
        program, dram = requant_program(rng, DEFAULT_CONFIG, usual=True)
        outcomes[_compare(program, None, dram, DEFAULT_CONFIG, f"{kernel} requant {n}")] += 1
    assert outcomes["ran"] >= 30 and outcomes["error"] >= 1, outcomes


@pytest.mark.parametrize("name", ["c", "sse2", "avx2", "auto", "no-such-kernel"])
def test_the_environment_chooses_the_kernel_of_c_hosts(name, monkeypatch):
    """A caller leaving the choice to the C machine (the program runner, the LiteRT
    libraries, the C driver: VTA_KERNEL_AUTO) gets the kernel QACCEL_CMACHINE_KERNEL names,
    never a faster one than the CPU has (SSE2 is no fast-path kernel: portable C); an unknown
    name is the fastest, as auto."""
    monkeypatch.setattr(cmachine, "kernel", "auto")  # what the C hosts pass
    monkeypatch.delenv("QACCEL_CMACHINE_KERNEL", raising=False)
    fastest = cmachine.Scratch(DEFAULT_CONFIG).kernel
    monkeypatch.setenv("QACCEL_CMACHINE_KERNEL", name)
    got = cmachine.Scratch(DEFAULT_CONFIG).kernel
    order = list(cmachine.KERNELS)
    expected = {"auto": fastest, "no-such-kernel": fastest, "sse2": "c"}.get(name, name)
    if order.index(expected) > order.index(fastest):
        expected = fastest
    assert got == expected


def reset_program(rng, config):
    """A reset of rows [a, a + n), something between it and the next GEMM (nothing, a STORE of
    other rows or of some of the same, an ALU on some of them, another reset), a bias-like GEMM
    (one source row, a tile fixed or moving with the outer loop) over exactly those rows or not
    quite, sometimes the products of a layer, then every ACC row stored."""
    r = lambda lo, hi: int(rng.integers(lo, hi))  # noqa: E731
    blk, ri, rw, ra = config.block, 16, len(TILES), 256
    a, n_out, n_in = r(0, 40), r(1, 4), r(1, 9)
    n = n_out * n_in
    exact = rng.random() < 0.7
    first = a if exact or rng.random() < 0.5 else a + 1
    if not exact and first == a:
        n_out, n_in = (n_out, n_in - 1) if n_in > 1 else (n_out + 1, n_in)
    if rng.random() < 0.5:  # one tile for every row, or one per outer iteration
        dfo, wfo = n_in, r(0, 2)
    else:
        n_out, n_in = n_out * n_in, 1
        dfo, wfo = 1, r(0, 2)
    sfi = 0 if exact or rng.random() < 0.5 else 1
    between = rng.choice(["none", "store other", "store same", "alu", "reset", "reset other"])
    dst = [a, first, r(0, 100), 120]
    src = [0, r(0, ri), r(0, ri), 0]
    wgt = [0, r(0, rw - 4), r(0, rw), 0]
    uops = encode_uops(np.array(dst), np.array(src), np.array(wgt), config=config)
    acc = rng.integers(-(1 << 31), 1 << 31, (ra, blk), dtype=np.int64).astype(np.int32)
    inp = rng.integers(-128, 128, (ri, blk)).astype(np.int8)
    wgt_at = ra * 4 * blk
    inp_at = wgt_at + rw * blk * blk
    dram = np.concatenate([acc.reshape(-1).view(np.uint8), TILES[:rw].reshape(-1).view(np.uint8),
                           inp.reshape(-1).view(np.uint8),
                           np.zeros(ra * blk, np.uint8)])  # fmt: skip
    out_at = (inp_at + ri * blk) // blk
    p = Program(config)
    p.uops = uops
    p.load(MemType.UOP, 0, 0, 1, len(dst))
    p.load(MemType.ACC, 0, 0, 1, ra)
    _phase(p, [("load", (MemType.INP, 0, inp_at // blk, 1, ri), {}),
               ("load", (MemType.WGT, 0, wgt_at // (blk * blk), 1, rw), {})], push_next=True)  # fmt: skip
    reset = ("gemm", (0, 1), dict(iter_out=n, dst_factor=(1, 0), reset=True))
    bias = ("gemm", (1, 2), dict(iter_out=n_out, iter_in=n_in, dst_factor=(dfo, 1),
                                 src_factor=(0, sfi), wgt_factor=(wfo, 0)))  # fmt: skip
    then = [bias]
    if rng.random() < 0.5:  # a layer's products after its bias
        then.append(("gemm", (2, 3), dict(iter_out=n, dst_factor=(1, 0), src_factor=(0, 0))))
    if between in ("store other", "store same"):
        _phase(p, [reset], pop_prev=True, push_next=True)
        lo = a + n + r(0, 20) if between == "store other" else a + r(0, n)
        p.store(MemType.OUT, lo, out_at, 1, r(1, 30), pop_prev=True, push_prev=True)
        _phase(p, then, pop_next=True, push_next=True)
    else:
        mid = []
        if between == "alu":
            mid = [("alu", (AluOp.ADD, 1, 2), dict(iter_out=r(1, n + 1), dst_factor=(1, 0), imm=r(-9, 9)))]
        elif between.startswith("reset"):
            mid = [("gemm", (3 if between == "reset other" else 0, 4 if between == "reset other" else 1),
                    dict(iter_out=r(1, 30), dst_factor=(1, 0), reset=True))]  # fmt: skip
        _phase(p, [reset, *mid, *then], pop_prev=True, push_next=True)
    p.store(MemType.ACC, 0, 0, 1, ra, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)
    return p, dram


@pytest.mark.parametrize("kernel", KERNELS)
def test_resets_left_pending(kernel, monkeypatch):
    monkeypatch.setattr(cmachine, "kernel", kernel)
    rng = np.random.default_rng(31)
    outcomes = {"ran": 0, "error": 0}
    for n in range(60):
        program, dram = reset_program(rng, DEFAULT_CONFIG)
        outcomes[_compare(program, None, dram, DEFAULT_CONFIG, f"{kernel} reset {n}")] += 1
    assert outcomes["ran"] >= 50, outcomes
