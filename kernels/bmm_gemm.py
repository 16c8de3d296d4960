"""BATCH_MATMUL (activation x activation) as GEMM layers: the data movement and the zero-point
correction around one product `lhs[i] @ rhs[i]` per flattened batch index i.

LiteRT's int8 BATCH_MATMUL (`reference_ops::BatchMatMul`) computes, per output element,
`acc = Σ_k (l[m, k] - zl) * (r[k, n] - zr)` in int32, then `MultiplyByQuantizedMultiplier`,
the output zero point and the int8 clamp. The GEMM core multiplies raw int8 values, so the
product is split as

    acc = Σ_k l*r  +  ( -zr * Σ_k l[m, k]  -  zl * Σ_k r[k, n]  +  K * zl * zr )
          GEMM core     the correction: one int32 per output element

modulo 2^32 (both sides wrap alike). Per batch index:

- `lhs_tokens_index`: the lhs rows as a token image `[1, K/B, M, 1, B]` (`accel.dense_zp`'s
  input over M tokens), gathered from the packed lhs;
- `weight_tiles_index`: the rhs as weight tiles `[N/B, K/B, B out, B in]` (`accel.dense_zp`'s
  filter: the WGT layout OIHW16o16i of a 1x1 convolution, byte for byte), gathered from the
  packed rhs; padding is 0, so padded K lanes add nothing;
- `zp_correction`: the correction above, packed like the GEMM's int32 result
  `[1, N/B, M, 1, B]`, padding lanes 0.

Index arrays hold flat indices into the packed operand, -1 for padding (a GATHER step).

Batch index `ALL` (-1) stands for every batch index at once, stacked on a leading dimension:
tokens `[batch, K/B, M, 1, B]`, tiles `[batch, N/B, K/B, B, B]`, correction
`[batch, N/B, M, 1, B]` (`operand_index`, `stacked_correction`). Those are the bytes of one
GEMM layer over `batch` images whose weight tiles and accumulator starts change per image
(`STACKED_MAX_BYTES` bounds what is gathered at once).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from qaccel.kernels import arithmetic as ar
from qaccel.kernels.layout import Packing, gather, unpack

GEMM_MAX_DIM = 1024
"""Largest M, K or N (and flattened batch) `lower-q-to-accel` runs as GEMM layers; beyond it,
the exact host step (`accel.batch_matmul`)."""


ALL = -1
"""The batch index of an op about every batch index at once (stacked, module docstring)."""

STACKED_MAX_BYTES = 1 << 20
"""Largest gathered operands plus correction (bytes) of one stacked product; a larger product
runs as one GEMM layer per batch index."""


View = tuple[tuple[int, ...], tuple[tuple[tuple[int, ...], tuple[int, ...]], ...]]
"""An operand read through relayouts (`accel.relayout`): the plain shape of the packed value
read, and each relayout's (shape, perm): reshaped to `shape`, then transposed by `perm`."""


def encode_view(root: Sequence[int], steps) -> list[int]:
    """A `View` as one int64 array: rank, root shape, then per relayout rank, shape, perm."""
    flat = [len(root), *root]
    for shape, perm in steps:
        flat += [len(shape), *shape, *perm]
    return [int(v) for v in flat]


def decode_view(flat: Sequence[int]) -> View:
    """`encode_view`'s array back as a `View`; ValueError when it is not one."""
    flat = [int(v) for v in flat]
    if not flat or flat[0] < 1 or len(flat) < 1 + flat[0]:
        raise ValueError("a view starts with a rank and that many dimensions")
    root, i, steps = tuple(flat[1 : 1 + flat[0]]), 1 + flat[0], []
    current = list(root)
    while i < len(flat):
        r = flat[i]
        if r < 1 or len(flat) < i + 1 + 2 * r:
            raise ValueError("a relayout of a view is a rank, a shape and a permutation")
        shape, perm = tuple(flat[i + 1 : i + 1 + r]), tuple(flat[i + 1 + r : i + 1 + 2 * r])
        if (sorted(perm) != list(range(r)) or min(shape) < 1
                or int(np.prod(shape)) != int(np.prod(current))):  # fmt: skip
            raise ValueError(f"relayout {list(shape)} {list(perm)} does not fit {current}")
        steps.append((shape, perm))
        current = [shape[p] for p in perm]
        i += 1 + 2 * r
    if min(root) < 1:
        raise ValueError(f"view root {list(root)} is not a shape")
    return root, tuple(steps)


def view_shape(view: View) -> list[int]:
    """The plain shape a `View` reads."""
    root, steps = view
    shape = list(root)
    for mid, perm in steps:
        shape = [mid[p] for p in perm]
    return shape


def operand_sources(lhs_shape: Sequence[int], rhs_shape: Sequence[int], adj_x: bool,
                    adj_y: bool, block: int,
                    views: tuple[View | None, View | None] = (None, None),
                    ) -> tuple[np.ndarray, np.ndarray]:  # fmt: skip
    """Flat indices into the packed lhs and rhs (`Packing.activations`, channel block `block`)
    of the plain operands after adj_x / adj_y, batch broadcast and flattened:
    `[batch, M, K]` and `[batch, K, N]`. An operand with a `View` is read through its
    relayouts: the indices are into the packed value the first relayout reads."""
    from qaccel.kernels.attention import batch_matmul_operands, relayout_plain

    sources = []
    for plain, view in zip((list(lhs_shape), list(rhs_shape)), views, strict=True):
        root, steps = (tuple(plain), ()) if view is None else view
        packing = Packing.activations(len(root), block)
        packed = packing.packed_shape(root)
        index = unpack(np.arange(int(np.prod(packed)), dtype=np.int64).reshape(packed), packing,
                       tuple(root))  # fmt: skip
        for shape, perm in steps:
            index = relayout_plain(index, shape, perm)
        sources.append(index.reshape(plain))
    return batch_matmul_operands(sources[0], sources[1], adj_x, adj_y)


def dims(lhs_shape, rhs_shape, adj_x: bool, adj_y: bool) -> tuple[int, int, int, int]:
    """(batch, M, K, N) of the flattened product."""
    ls, rs = list(lhs_shape), list(rhs_shape)
    m, k = (ls[-1], ls[-2]) if adj_x else (ls[-2], ls[-1])
    n = rs[-2] if adj_y else rs[-1]
    batch = int(np.prod(np.broadcast_shapes(tuple(ls[:-2]), tuple(rs[:-2])), dtype=np.int64))
    return batch, m, k, n


def tokens_shape(m: int, k: int, block: int, batch: int = 1) -> tuple[int, ...]:
    return (batch, -(-k // block), m, 1, block)


def tiles_shape(k: int, n: int, block: int, batch: int | None = None) -> tuple[int, ...]:
    """One batch index's tiles `[N/B, K/B, B, B]`, or `batch` of them stacked."""
    tiles = (-(-n // block), -(-k // block), block, block)
    return tiles if batch is None else (batch, *tiles)


def result_shape(m: int, n: int, block: int, batch: int = 1) -> tuple[int, ...]:
    return (batch, -(-n // block), m, 1, block)


def stacked_bytes(batch: int, m: int, k: int, n: int, block: int) -> int:
    """Bytes of the stacked tokens, tiles and int32 correction of a product."""
    kb, nb = -(-k // block), -(-n // block)
    return batch * block * (kb * m + nb * kb * block + 4 * nb * m)


def operand_index(sources: tuple[np.ndarray, np.ndarray], operand: int, index: int,
                  block: int) -> np.ndarray:  # fmt: skip
    """The gather index array of GEMM operand `operand` (0: tokens, 1: tiles) of batch index
    `index`, or of every batch index stacked (`ALL`)."""
    plain = sources[operand]
    one = lhs_tokens_index if operand == 0 else weight_tiles_index
    if index != ALL:
        return one(plain[index], block)
    if operand == 0:
        return np.concatenate([one(p, block) for p in plain], axis=0)
    return np.stack([one(p, block) for p in plain])


def lhs_tokens_index(lhs_plain: np.ndarray, block: int) -> np.ndarray:
    """`[M, K]` values (or indices) -> the token image `[1, K/B, M, 1, B]`, padding -1."""
    m, k = lhs_plain.shape
    kb = -(-k // block)
    padded = np.full((m, kb * block), -1, np.int64)
    padded[:, :k] = lhs_plain
    return np.ascontiguousarray(padded.reshape(m, kb, block).transpose(1, 0, 2)).reshape(
        tokens_shape(m, k, block))


def weight_tiles_index(rhs_plain: np.ndarray, block: int) -> np.ndarray:
    """`[K, N]` values (or indices) -> weight tiles `[N/B, K/B, B out, B in]` (tile
    `[nb, kb]` holds `rhs[kb*B + in, nb*B + out]`), padding -1."""
    k, n = rhs_plain.shape
    kb, nb = -(-k // block), -(-n // block)
    padded = np.full((kb * block, nb * block), -1, np.int64)
    padded[:k, :n] = rhs_plain
    return np.ascontiguousarray(padded.reshape(kb, block, nb, block).transpose(2, 0, 3, 1))


def zp_correction(a: np.ndarray, b: np.ndarray, lhs_zero_point: int, rhs_zero_point: int,
                  block: int) -> np.ndarray:  # fmt: skip
    """The int32 correction of `a [M, K] @ b [K, N]` (raw int8 values) for the zero points,
    packed `[1, N/B, M, 1, B]`, padding lanes 0 (see the module docstring)."""
    m, k = a.shape
    n = b.shape[1]
    rows = a.astype(np.int64).sum(axis=1)
    cols = b.astype(np.int64).sum(axis=0)
    corr = (-rhs_zero_point * rows[:, None] - lhs_zero_point * cols[None, :]
            + k * lhs_zero_point * rhs_zero_point)  # fmt: skip
    nb = -(-n // block)
    padded = np.zeros((m, nb * block), np.int64)
    padded[:, :n] = ar.wrap_int32(corr)
    return np.ascontiguousarray(padded.reshape(m, nb, block).transpose(1, 0, 2)).reshape(
        result_shape(m, n, block)).astype(np.int32)


def correction(lhs: np.ndarray, rhs: np.ndarray, sources: tuple[np.ndarray, np.ndarray],
               index: int, lhs_zero_point: int, rhs_zero_point: int,
               block: int) -> np.ndarray:  # fmt: skip
    """`zp_correction` of batch index `index` of packed `lhs` and `rhs`, or of every batch
    index stacked on the leading dimension (`ALL`)."""
    which = range(len(sources[0])) if index == ALL else [index]
    parts = [zp_correction(gather(lhs, sources[0][i]), gather(rhs, sources[1][i]),
                           lhs_zero_point, rhs_zero_point, block) for i in which]  # fmt: skip
    return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=0)


__all__ = ["ALL", "GEMM_MAX_DIM", "STACKED_MAX_BYTES", "View", "correction", "decode_view", "dims",
           "encode_view", "gather", "view_shape",
           "lhs_tokens_index", "operand_index", "operand_sources", "result_shape",
           "stacked_bytes", "tiles_shape", "tokens_shape", "weight_tiles_index",
           "zp_correction"]  # fmt: skip
