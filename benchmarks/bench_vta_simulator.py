"""Throughput of the VTA-like functional simulator: GEMM micro-op iterations per second.

    python benchmarks/bench_vta_simulator.py [--repeat N] [--simulator c|python]

Scenarios (each checked once against a numpy reference):
  layer    a whole ResNet-18 layer-1 convolution (3x3, 56x56x64 -> 64, int8 out) as 16 tiles
           of 14x14 outputs, input and accumulator double-buffered with dependency tokens so
           loads overlap compute: 451584 GEMM iterations per run (the headline figure);
  conv3x3  a 3x3 convolution tile as VTA schedules it: 14x14 output positions as micro-ops,
           one GEMM per kernel tap, outer loop over 4 output-channel blocks, inner loop over 4
           input-channel blocks (reduction), 28224 iterations per run;
  dense    a 1x1 convolution / matrix product, 256 positions, 8x8 channel blocks, one GEMM.
  perrow   micro-ops with 128 distinct weight tiles (the slow gather path), for reference.
A whole run includes LOAD/STORE/ALU, token protocol, hazard checks and the timing model.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from qaccel.targets.vta.isa import AluOp, MemType, Program, encode_uops
from qaccel.targets.vta.simulator import simulate


def _image(x, wt, out_bytes):
    """DRAM holding the inputs, then the weights, then room for the outputs."""
    dram = np.zeros(x.nbytes + wt.nbytes + out_bytes, np.uint8)
    dram[: x.nbytes] = x.reshape(-1).view(np.uint8)
    dram[x.nbytes : x.nbytes + wt.nbytes] = wt.reshape(-1).view(np.uint8)
    return dram


def _conv3x3(rng):
    h = w = 14
    hp = wp = 16
    cib = cob = 4
    x = rng.integers(-128, 128, (cib, hp, wp, 16)).astype(np.int8)  # ci block, y, x, lane
    wt = rng.integers(-128, 128, (3, 3, cob, cib, 16, 16)).astype(np.int8)  # tap, co, ci, out, in
    dram = _image(x, wt, cob * h * w * 16)
    out_el = (x.nbytes + wt.nbytes) // 16
    oy, ox = np.meshgrid(np.arange(h), np.arange(w), indexing="ij")
    uops = []
    for ky in range(3):
        for kx in range(3):
            tap = ky * 3 + kx
            uops.append(encode_uops((oy * w + ox).ravel(), ((oy + ky) * wp + ox + kx).ravel(),
                                    tap * cob * cib))  # fmt: skip
    p = Program()
    p.uops = np.concatenate(uops)
    n = h * w
    p.load(MemType.INP, 0, 0, 1, cib * hp * wp)
    p.load(MemType.WGT, 0, x.nbytes // 256, 1, wt.nbytes // 256, push_next=True)
    p.load(MemType.UOP, 0, 0, 1, len(p.uops))
    p.gemm(0, n, iter_out=cob, dst_factor=(n, 0), reset=True)
    for tap in range(9):
        p.gemm(tap * n, (tap + 1) * n, iter_out=cob, iter_in=cib, dst_factor=(n, 0),
               src_factor=(0, hp * wp), wgt_factor=(cib, 1), pop_prev=tap == 0)  # fmt: skip
    p.alu(AluOp.SHR, 0, n, iter_out=cob, dst_factor=(n, 0), imm=8)
    p.alu(AluOp.MAX, 0, n, iter_out=cob, dst_factor=(n, 0), imm=-128)
    p.alu(AluOp.MIN, 0, n, iter_out=cob, dst_factor=(n, 0), imm=127, push_next=True)
    p.store(MemType.OUT, 0, out_el, 1, cob * n, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)

    def reference():
        acc = np.zeros((cob, h, w, 16), np.int64)
        for ky in range(3):
            for kx in range(3):
                patch = x[:, ky : ky + h, kx : kx + w, :].astype(np.int64)
                acc += np.einsum("cyxi,dcoi->dyxo", patch, wt[ky, kx].astype(np.int64))
        return np.clip(acc >> 8, -128, 127).astype(np.int8).reshape(-1)

    return p, dram, out_el * 16, reference, 9 * cob * cib * n


def _layer(rng):
    """ResNet-18 layer-1 conv, double-buffered tiles (the pattern the backend will emit)."""
    size, tile, cib, cob = 56, 14, 4, 4
    padded = size + 2
    tiles = [(ty, tx) for ty in range(size // tile) for tx in range(size // tile)]
    x = rng.integers(-128, 128, (cib, padded, padded, 16)).astype(np.int8)
    wt = rng.integers(-128, 128, (3, 3, cob, cib, 16, 16)).astype(np.int8)
    out_bytes = cob * size * size * 16
    dram = _image(x, wt, out_bytes)
    out_el = (x.nbytes + wt.nbytes) // 16
    n = tile * tile
    inp_buf, acc_buf = cib * 256, cob * n
    oy, ox = np.meshgrid(np.arange(tile), np.arange(tile), indexing="ij")
    uops = []
    for b in range(2):
        for ky in range(3):
            for kx in range(3):
                uops.append(encode_uops(b * acc_buf + (oy * tile + ox).ravel(),
                                        b * inp_buf + ((oy + ky) * 16 + ox + kx).ravel(),
                                        (ky * 3 + kx) * cob * cib))  # fmt: skip
    p = Program()
    p.uops = np.concatenate(uops)
    p.load(MemType.UOP, 0, 0, 1, len(p.uops))
    p.load(MemType.WGT, 0, x.nbytes // 256, 1, wt.nbytes // 256)
    for t, (ty, tx) in enumerate(tiles):
        b = t % 2
        for c in range(cib):
            p.load(MemType.INP, b * inp_buf + c * 256, c * padded * padded + ty * tile * padded
                   + tx * tile, 16, 16, padded, pop_next=t >= 2 and c == 0,
                   push_next=c == cib - 1)  # fmt: skip
        u0 = b * 9 * n
        p.gemm(u0, u0 + n, iter_out=cob, dst_factor=(n, 0), reset=True, pop_prev=True,
               pop_next=t >= 2)  # fmt: skip
        for tap in range(9):
            p.gemm(u0 + tap * n, u0 + (tap + 1) * n, iter_out=cob, iter_in=cib,
                   dst_factor=(n, 0), src_factor=(0, 256), wgt_factor=(cib, 1),
                   push_prev=tap == 8)  # fmt: skip
        p.alu(AluOp.SHR, u0, u0 + n, iter_out=cob, dst_factor=(n, 0), imm=9)
        p.alu(AluOp.MAX, u0, u0 + n, iter_out=cob, dst_factor=(n, 0), imm=-128)
        p.alu(AluOp.MIN, u0, u0 + n, iter_out=cob, dst_factor=(n, 0), imm=127, push_next=True)
        for co in range(cob):
            p.store(MemType.OUT, b * acc_buf + co * n, out_el + co * size * size
                    + ty * tile * size + tx * tile, tile, tile, size, pop_prev=co == 0,
                    push_prev=co == cob - 1)  # fmt: skip
    p.load(MemType.UOP, 0, 0, 0, 0, pop_next=True)  # no-op: collect the last store tokens
    p.finish(pop_next=True)

    def reference():
        acc = np.zeros((cob, size, size, 16), np.int64)
        for ky in range(3):
            for kx in range(3):
                patch = x[:, ky : ky + size, kx : kx + size, :].astype(np.int64)
                acc += np.einsum("cyxi,dcoi->dyxo", patch, wt[ky, kx].astype(np.int64))
        return np.clip(acc >> 9, -128, 127).astype(np.int8).reshape(-1)

    return p, dram, out_el * 16, reference, len(tiles) * 9 * cob * cib * n


def _dense(rng):
    n, cib, cob = 256, 8, 8
    x = rng.integers(-128, 128, (cib, n, 16)).astype(np.int8)
    wt = rng.integers(-128, 128, (cob, cib, 16, 16)).astype(np.int8)
    dram = _image(x, wt, cob * n * 64)
    out_el = (x.nbytes + wt.nbytes) // 64
    p = Program()
    p.uops = encode_uops(np.arange(n), np.arange(n), 0)
    p.load(MemType.INP, 0, 0, 1, cib * n)
    p.load(MemType.WGT, 0, x.nbytes // 256, 1, cob * cib, push_next=True)
    p.load(MemType.UOP, 0, 0, 1, n)
    p.gemm(0, n, iter_out=cob, dst_factor=(n, 0), reset=True)
    p.gemm(0, n, iter_out=cob, iter_in=cib, dst_factor=(n, 0), src_factor=(0, n),
           wgt_factor=(cib, 1), pop_prev=True, push_next=True)  # fmt: skip
    p.store(MemType.ACC, 0, out_el, 1, cob * n, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)

    def reference():
        return np.einsum("cni,dcoi->dno", x.astype(np.int64), wt.astype(np.int64)).astype(
            np.int32
        ).reshape(-1).view(np.uint8)

    return p, dram, out_el * 64, reference, cob * cib * n


def _perrow(rng):
    n = 128
    x = rng.integers(-128, 128, (n, 16)).astype(np.int8)
    wt = rng.integers(-128, 128, (n, 16, 16)).astype(np.int8)
    dram = _image(x, wt, 16 * n * 64)
    out_el = (x.nbytes + wt.nbytes) // 64
    p = Program()
    p.uops = encode_uops(np.arange(n), np.arange(n), np.arange(n))
    p.load(MemType.INP, 0, 0, 1, n)
    p.load(MemType.WGT, 0, x.nbytes // 256, 1, n, push_next=True)
    p.load(MemType.UOP, 0, 0, 1, n)
    p.gemm(0, n, iter_out=16, dst_factor=(n, 0), reset=True)
    p.gemm(0, n, iter_out=16, dst_factor=(n, 0), pop_prev=True, push_next=True)
    p.store(MemType.ACC, 0, out_el, 1, 16 * n, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)

    def reference():
        one = np.einsum("ni,noi->no", x.astype(np.int64), wt.astype(np.int64)).astype(np.int32)
        return np.broadcast_to(one, (16, n, 16)).reshape(-1).view(np.uint8)

    return p, dram, out_el * 64, reference, 16 * n


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--simulator", choices=("c", "python"), default="c",
                    help="c: libqaccel_vta (default); python: the reference simulator")  # fmt: skip
    args = ap.parse_args(argv)
    rng = np.random.default_rng(0)
    for name, make in (("layer", _layer), ("conv3x3", _conv3x3), ("dense", _dense), ("perrow", _perrow)):
        p, dram, out_off, reference, iters = make(rng)
        result = simulate(p, dram=dram, simulator=args.simulator)
        ref = reference()
        got = result.dram[out_off : out_off + ref.nbytes].view(ref.dtype)
        assert np.array_equal(got, ref), f"{name}: simulator disagrees with numpy"
        times = []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            simulate(p, dram=dram, simulator=args.simulator)
            times.append(time.perf_counter() - t0)
        # best of N: the machine is shared, the minimum is the least disturbed run
        dt, median = min(times), float(np.median(times))
        rep = result.timing
        print(
            f"{name:8s} {iters:7d} GEMM iterations  best {dt * 1e3:7.2f} ms/run "
            f"(median {median * 1e3:7.2f})  {iters / dt / 1e6:6.2f} M iterations/s  "
            f"(model: {rep.total_cycles} cycles, "
            f"utilization {rep.gemm_utilization:.3f})"
        )


if __name__ == "__main__":
    main()
