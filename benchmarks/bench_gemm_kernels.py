"""Time the bit-exact TRANSPOSE_CONV and BATCH_MATMUL kernels on realistic layer sizes (int8).

TRANSPOSE_CONV: a U-Net decoder's 2x upsamplings (3x3 and 2x2 filters, per-channel weights);
BATCH_MATMUL: the two matmuls of a multi-head attention block (Q K^T and softmax(.) V) at
sequence lengths 128 and 512. Each layer runs through `qaccel.kernels.registry` (prepare +
kernel, as the interpreter does); the best of `--repeat` runs is printed per layer.

    python benchmarks/bench_gemm_kernels.py [--repeat 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from qaccel.kernels.qparams import QParams
from qaccel.kernels.registry import OpCall, run


def _q(scale: float, zp: int) -> QParams:
    return QParams.per_tensor(scale, zp)


def transpose_conv(rng, n, h, w, cin, cout, k, stride=2) -> tuple[str, OpCall]:
    out = (n, h * stride, w * stride, cout)
    wq = QParams.per_axis(rng.uniform(0.002, 0.02, cout).astype(np.float32),
                          np.zeros(cout, np.int64), 0)
    inputs = [np.array(out, np.int32), rng.integers(-127, 128, (cout, k, k, cin), dtype=np.int8),
              rng.integers(-128, 128, (n, h, w, cin), dtype=np.int8),
              rng.integers(-4096, 4096, cout, dtype=np.int32)]
    call = OpCall(inputs, [None, wq, _q(0.05, -3), None], [_q(0.1, 2)], [out],
                  [np.dtype(np.int8)],
                  {"padding": "SAME", "stride_h": stride, "stride_w": stride,
                   "fused_activation_function": "RELU"})
    return f"TRANSPOSE_CONV {n}x{h}x{w}x{cin} -> {out} k{k}", call


def batch_matmul(rng, heads, seq, depth, adj_y) -> tuple[str, OpCall]:
    lhs = (1, heads, seq, depth if adj_y else seq)
    rhs = (1, heads, seq, depth) if adj_y else (1, heads, seq, depth)
    out = (1, heads, seq, seq if adj_y else depth)
    call = OpCall([rng.integers(-128, 128, lhs, dtype=np.int8),
                   rng.integers(-128, 128, rhs, dtype=np.int8)],
                  [_q(0.05, 1), _q(0.04, -2)], [_q(0.5, 0)], [out], [np.dtype(np.int8)],
                  {"adj_x": False, "adj_y": adj_y})
    return f"BATCH_MATMUL {lhs} x {rhs} adj_y={adj_y}", call


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    layers = [
        transpose_conv(rng, 1, 16, 16, 128, 64, 3),
        transpose_conv(rng, 1, 32, 32, 64, 32, 3),
        transpose_conv(rng, 1, 64, 64, 32, 16, 2),
        batch_matmul(rng, 8, 128, 64, True),
        batch_matmul(rng, 8, 128, 64, False),
        batch_matmul(rng, 8, 512, 64, True),
        batch_matmul(rng, 8, 512, 64, False),
    ]
    for name, call in layers:
        op = name.split()[0]
        best = float("inf")
        for _ in range(args.repeat):
            start = time.perf_counter()
            run(op, call)
            best = min(best, time.perf_counter() - start)
        print(f"{best * 1e3:9.1f} ms  {name}")


if __name__ == "__main__":
    main()
