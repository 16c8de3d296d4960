"""The attention core's integer arithmetic: int8 SOFTMAX and activation x activation
BATCH_MATMUL by their `q` properties, and the moves of packed activations that a lane-moving
RESHAPE or a TRANSPOSE makes (a gather).

Everything here is LiteRT's `BUILTIN_REF` arithmetic (`elementwise.py`'s SOFTMAX, `gemm.py`'s
BATCH_MATMUL) written over the integers a `q` op carries, so `q.softmax`, `q.batch_matmul`,
their `accel` forms and the program runner's steps compute the same bits:

- int8 SOFTMAX (`reference_ops::Softmax`, gemmlowp fixed point): the exponential of a row's
  difference to its maximum depends only on that difference, an int8 difference in
  [-255, 0], so `softmax_exp_table` computes the 256 Q0.31 exponentials once; a row sums them
  (Q12), takes the reciprocal (`GetReciprocal`) and scales each exponential by it.
- int8 BATCH_MATMUL: `Σ (l - lzp) * (r - rzp)` wrapped to int32, then
  `MultiplyByQuantizedMultiplier` + output zero point, clamped to int8.
- `relayout_index`: for each element of a packed result `[N, C/B, ..., 1, B]`, the flat
  index of the packed input element it copies (-1: a padding lane), for "reshape the plain
  input to `shape`, then transpose by `perm`".
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qaccel.kernels import arithmetic as ar
from qaccel.kernels.layout import Packing, gather, pack, unpack

SCALED_DIFF_INTEGER_BITS = 5
ACCUMULATION_INTEGER_BITS = 12


def softmax_exp_table(multiplier: int, left_shift: int, diff_min: int) -> np.ndarray:
    """Q0.31 exp of each int8 difference d = 0, -1, ..., -255 (entry -d); 0 where d < diff_min
    (the reference kernel skips those values)."""
    diff = -np.arange(256, dtype=np.int64)
    rescaled = ar.saturating_rounding_doubling_high_mul(diff << left_shift, multiplier)
    exp_q0 = ar.exp_on_negative_values(rescaled, SCALED_DIFF_INTEGER_BITS)
    return np.where(diff >= diff_min, exp_q0, 0).astype(np.int64)


def softmax_int8(x: np.ndarray, multiplier: int, left_shift: int, diff_min: int) -> np.ndarray:
    """int8 softmax along the last axis, output scale 1/256 and zero point -128."""
    table = softmax_exp_table(multiplier, left_shift, diff_min)
    xi = x.astype(np.int64)
    diff = xi - xi.max(axis=-1, keepdims=True)
    used = diff >= diff_min
    exp_q0 = table[-diff]
    exp_q12 = ar.rounding_divide_by_pot(exp_q0, ACCUMULATION_INTEGER_BITS)
    sum_of_exps = ar.wrap_int32(np.where(used, exp_q12, 0).sum(axis=-1, keepdims=True))
    shifted_scale, num_bits_over_unit = ar.get_reciprocal(sum_of_exps, ACCUMULATION_INTEGER_BITS)
    exponent = num_bits_over_unit + 31 - 8
    if np.any((exponent < 0) | (exponent > 31)):
        raise ValueError(f"SOFTMAX: a row of {x.shape[-1]} values sums to too many "
                         "exponentials for the int8 reference kernel (its TFLITE_CHECK aborts)")
    unsat = ar.rounding_divide_by_pot(
        ar.saturating_rounding_doubling_high_mul(shifted_scale, exp_q0), exponent)
    out = np.clip(unsat - 128, -128, 127)
    return np.where(used, out, -128).astype(np.int8)


def batch_matmul_operands(lhs: np.ndarray, rhs: np.ndarray, adj_x: bool, adj_y: bool
                          ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """lhs `[..., A, K]` and rhs `[..., K, C]` (after adj_x / adj_y), batch dimensions
    broadcast and flattened: `[batch, A, K]`, `[batch, K, C]`."""
    rank = max(lhs.ndim, rhs.ndim)
    a = lhs.reshape((1,) * (rank - lhs.ndim) + lhs.shape)
    b = rhs.reshape((1,) * (rank - rhs.ndim) + rhs.shape)
    if adj_x:
        a = np.swapaxes(a, -1, -2)
    if adj_y:
        b = np.swapaxes(b, -1, -2)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = np.broadcast_to(a, batch + a.shape[-2:]).reshape(-1, *a.shape[-2:])
    b = np.broadcast_to(b, batch + b.shape[-2:]).reshape(-1, *b.shape[-2:])
    return np.ascontiguousarray(a), np.ascontiguousarray(b)


def batch_matmul_int8(lhs: np.ndarray, rhs: np.ndarray, adj_x: bool, adj_y: bool,
                      lhs_zero_point: int, rhs_zero_point: int, multiplier: int, shift: int,
                      output_zero_point: int, out_shape: Sequence[int]) -> np.ndarray:  # fmt: skip
    """int8 x int8 -> int8 BATCH_MATMUL (`q.batch_matmul`'s arithmetic)."""
    a, b = batch_matmul_operands(lhs, rhs, adj_x, adj_y)
    # |products| < 2**16 and K < 2**37 terms keep float64 sums exact
    acc = ar.wrap_int32(np.matmul(a.astype(np.float64) - lhs_zero_point,
                                  b.astype(np.float64) - rhs_zero_point).astype(np.int64))
    out = ar.multiply_by_quantized_multiplier(acc, multiplier, shift) + output_zero_point
    return np.clip(out, -128, 127).astype(np.int8).reshape(tuple(out_shape))


def relayout_plain(x: np.ndarray, shape: Sequence[int], perm: Sequence[int]) -> np.ndarray:
    """The plain tensor `x` reshaped to `shape`, then transposed by `perm`."""
    return np.ascontiguousarray(np.reshape(x, tuple(shape)).transpose(tuple(perm)))


def relayout_index(in_shape: Sequence[int], shape: Sequence[int], perm: Sequence[int],
                   block: int) -> np.ndarray:  # fmt: skip
    """For each element of the packed result of `relayout_plain` on a plain `in_shape`
    tensor, the flat index in the packed input it copies, or -1 for a padding lane."""
    in_packing = Packing.activations(len(in_shape), block)
    packed_in = in_packing.packed_shape(in_shape)
    source = np.arange(int(np.prod(packed_in)), dtype=np.int64).reshape(packed_in)
    plain = relayout_plain(unpack(source, in_packing, tuple(in_shape)), shape, perm)
    out_packing = Packing.activations(plain.ndim, block)
    return pack(plain, out_packing, -1).reshape(-1)


def relayout_packed(x: np.ndarray, in_shape: Sequence[int], shape: Sequence[int],
                    perm: Sequence[int], fill: int) -> np.ndarray:  # fmt: skip
    """`accel.relayout` of the packed `x` (plain `in_shape`): a gather; padding lanes hold
    `fill`."""
    block = int(x.shape[-1])
    index = relayout_index(in_shape, shape, perm, block)
    out_plain = [int(shape[p]) for p in perm]
    out_shape = Packing.activations(len(out_plain), block).packed_shape(out_plain)
    return gather(x, index, fill).reshape(out_shape)


def plain_of(x: np.ndarray, channels: int) -> np.ndarray:
    """The plain `[N, ..., C]` tensor of a packed activation `[N, C/B, ..., 1, B]` holding
    `channels` real channels."""
    plain = [int(x.shape[0]), *(int(d) for d in x.shape[2:-2]), int(channels)]
    return unpack(x, Packing.activations(len(plain), int(x.shape[-1])), tuple(plain))


def packed_of(y: np.ndarray, block: int, fill: int) -> np.ndarray:
    return pack(y, Packing.activations(y.ndim, block), fill)
