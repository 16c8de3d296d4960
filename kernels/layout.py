"""Blocked tensor layouts and their arithmetic: `Packing` describes one (which dimensions are
tiled, by how much, the outer order: the `accel.pack` / `accel.unpack` properties and MLIR's
`linalg.pack`), `pack` / `unpack` move a numpy array into and out of it (a pad, one reshape and
one transpose each way).

The compiler (lowering, `insert-pack-unpack`, the run plan and the LiteRT program) and the
interpreter share this arithmetic; it needs nothing but numpy.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Packing:
    """A blocked layout: which dimensions are tiled, by how much, and the outer order.

    The same description as the `accel.pack` / `accel.unpack` properties (and MLIR's
    `linalg.pack`); see the module docstring.
    """

    inner_dims_pos: tuple[int, ...]
    inner_tiles: tuple[int, ...]
    outer_dims_perm: tuple[int, ...]
    """A permutation of all dimensions; the identity when the op has none."""

    @staticmethod
    def activations(rank: int, block: int) -> Packing:
        """Channels-last `[N, d1, ..., C]` -> `[N, ceil(C/block), d1, ..., 1, block]`: the
        batch is tiled by 1 (VTA's BATCH) and the channels by `block`. For NHWC, NCHW1n16c."""
        if rank < 2:
            raise ValueError(
                f"activations to pack need a batch and a channel dimension, got rank {rank}"
            )
        last = rank - 1
        return Packing((0, last), (1, block), (0, last, *range(1, last)))

    @staticmethod
    def weights(rank: int, block_out: int, block_in: int) -> Packing:
        """Output-channels-first, input-channels-last `[O, k1, ..., I]` ->
        `[ceil(O/block_out), ceil(I/block_in), k1, ..., block_out, block_in]`. For OHWI
        convolution filters, OIHW16o16i; for `[O, I]` dense weights, `[O/16, I/16, 16, 16]`."""
        if rank < 2:
            raise ValueError(f"weights to pack need output and input channels, got rank {rank}")
        last = rank - 1
        return Packing((0, last), (block_out, block_in), (0, last, *range(1, last)))

    @property
    def rank(self) -> int:
        return len(self.outer_dims_perm)

    def error(self) -> str | None:
        """What is wrong with this description, or None."""
        rank = self.rank
        if sorted(self.outer_dims_perm) != list(range(rank)):
            perm = list(self.outer_dims_perm)
            return f"outer_dims_perm {perm} is not a permutation of {rank} dimensions"
        if len(self.inner_tiles) != len(self.inner_dims_pos):
            return (
                f"{len(self.inner_dims_pos)} inner_dims_pos but {len(self.inner_tiles)} inner_tiles"
            )
        if len(set(self.inner_dims_pos)) != len(self.inner_dims_pos) or any(
            not 0 <= d < rank for d in self.inner_dims_pos
        ):
            dims = list(self.inner_dims_pos)
            return f"inner_dims_pos {dims} must be distinct dimensions below {rank}"
        if any(t < 1 for t in self.inner_tiles):
            return f"inner_tiles {list(self.inner_tiles)} must be positive"
        return None

    def tile_of(self, dim: int) -> int:
        """The tile size of dimension `dim` (1 when it is not tiled)."""
        for d, t in zip(self.inner_dims_pos, self.inner_tiles):
            if d == dim:
                return t
        return 1

    def outer_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """Number of tiles along each dimension, before `outer_dims_perm`."""
        return tuple(-(-size // self.tile_of(d)) for d, size in enumerate(shape))

    def packed_shape(self, shape: Sequence[int]) -> tuple[int, ...]:
        """The shape of a tensor of `shape` once packed."""
        outer = self.outer_shape(shape)
        return (*(outer[d] for d in self.outer_dims_perm), *self.inner_tiles)

    def needs_padding(self, shape: Sequence[int]) -> bool:
        return any(shape[d] % t for d, t in zip(self.inner_dims_pos, self.inner_tiles))


def split_order(packing: Packing) -> list[int]:
    """The transpose from a plain tensor split into (tiles, tile) axis pairs (axes 2d, 2d+1 for
    dimension d) to the packed order; untiled dimensions' unit tiles go last."""
    tiled = set(packing.inner_dims_pos)
    untiled = [d for d in range(packing.rank) if d not in tiled]
    return (
        [2 * d for d in packing.outer_dims_perm]
        + [2 * d + 1 for d in packing.inner_dims_pos]
        + [2 * d + 1 for d in untiled]
    )


def split_shape(packing: Packing, shape) -> list[int]:
    outer = packing.outer_shape(shape)
    return [n for d in range(len(shape)) for n in (outer[d], packing.tile_of(d))]


def pack(x: np.ndarray, packing: Packing, padding_value: int = 0) -> np.ndarray:
    """`x` in the blocked layout `packing`, tiled dimensions padded with `padding_value`."""
    shape = x.shape
    if packing.needs_padding(shape):
        widths = [(0, -size % packing.tile_of(d)) for d, size in enumerate(shape)]
        x = np.pad(x, widths, constant_values=np.asarray(padding_value, dtype=x.dtype))
    view = x.reshape(split_shape(packing, shape)).transpose(split_order(packing))
    return np.ascontiguousarray(view).reshape(packing.packed_shape(shape))


def unpack(p: np.ndarray, packing: Packing, shape: tuple[int, ...]) -> np.ndarray:
    """The plain tensor of `shape` that `pack` turned into `p` (padding dropped)."""
    split = split_shape(packing, shape)
    order = split_order(packing)
    plain = p.reshape([split[k] for k in order]).transpose(np.argsort(order))
    padded = plain.reshape([n * t for n, t in zip(split[::2], split[1::2])])
    return np.asarray(padded[tuple(slice(0, n) for n in shape)], order="C")


def reshape_is_view(src: Sequence[int], dst: Sequence[int], block: int) -> bool:
    """Whether reshaping an activation of shape `src` to `dst` (batch first, channels last)
    leaves its packed bytes (`Packing.activations`, channel block `block`) as they are: the
    batch and the channels stay and only the dimensions between them change, or both shapes
    are whole channel blocks in plain order (one block, or nothing between batch and
    channels: a Flatten of a `[N, H, W, 16]` map to `[N, H*W*16]` is the same bytes)."""

    def plain(shape: Sequence[int]) -> bool:
        between = int(np.prod(shape[1:-1], dtype=np.int64))
        return shape[-1] % block == 0 and (shape[-1] == block or between == 1)

    if len(src) < 2 or len(dst) < 2 or src[0] != dst[0]:
        return False
    return src[-1] == dst[-1] or (plain(src) and plain(dst))


def gather(x: np.ndarray, index: np.ndarray, fill: int = 0) -> np.ndarray:
    """`x.reshape(-1)[index]` (shaped like `index`), `fill` where the index is -1: what a
    program's GATHER step does with an index array built at compile time."""
    flat = x.reshape(-1)
    return np.where(index >= 0, flat[np.maximum(index, 0)], np.asarray(fill, x.dtype)).astype(
        x.dtype)
