"""The program runner's packing of inputs and unpacking of outputs (qaccel_program.c's repacking
runs, worked out once when a program is opened) against numpy's pad / reshape / transpose, on
random shapes, blockings and dimension orders: programs with one value and no steps, whose
input packs into the value and whose output reads it back (or the other way round)."""

from __future__ import annotations

import shutil
import struct

import numpy as np
import pytest

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

from qaccel.backends.vta.program import writer  # noqa: E402
from qaccel.backends.vta.program_runner import Program  # noqa: E402
from qaccel.targets.vta.config import HardwareConfig  # noqa: E402


def _io(rank: int, plain, split, order, pad: int, dtype) -> bytes:
    def ints(xs, n):
        return list(xs) + [0] * (n - len(xs))

    return struct.pack("<IIiI8i16i16iiI", 0, rank, pad, np.dtype(dtype).itemsize,
                       *ints(plain, 8), *ints(split, 16), *ints(order, 16),
                       writer.ELEMENT_TYPES[np.dtype(dtype)], 0)  # fmt: skip


def _program(count: int, dtype, input_io: bytes, output_io: bytes) -> bytes:
    """One value of `count` elements, no steps, no layers, no DRAM."""
    config = HardwareConfig().to_dict()
    values_at = writer.HEADER_BYTES
    io_at = values_at + writer.VALUE_BYTES
    end = io_at + 2 * writer.IO_BYTES
    header = struct.pack(
        f"<8sIIQ6IQQ{len(writer.CONFIG_KEYS)}q5Q", writer.PROGRAM_MAGIC, writer.PROGRAM_VERSION,
        writer.HEADER_BYTES, end, 1, 1, 1, 0, 0, 0, 0, end,
        *(int(config[k]) for k in writer.CONFIG_KEYS), values_at, io_at, end, end, 0,
    )  # fmt: skip
    value = struct.pack("<IIQ", np.dtype(dtype).itemsize, 0, count)
    return writer.seal(header + value + input_io + output_io)


def _packing(rng, plain):
    """A random blocking of every dimension (outer x inner >= the dimension) and order."""
    split = []
    for d in plain:
        inner = int(rng.integers(1, d + 3))
        split += [-(-d // inner) + int(rng.integers(0, 2)), inner]
    return split, [int(k) for k in rng.permutation(2 * len(plain))]


def _pack(x, split, order, pad):
    rank = x.ndim
    widths = [(0, split[2 * d] * split[2 * d + 1] - x.shape[d]) for d in range(rank)]
    padded = np.pad(x, widths, constant_values=np.asarray(pad, x.dtype))
    return padded.reshape(split).transpose(order).reshape(-1)


# (plain shape, split, order): the layouts programs have (a value as it is; NHWC in channel
# blocks, padded or not; a block of trailing dimensions in plain order after a transposed one)
LAYOUTS = [
    ([1, 4, 5, 16], [1, 1, 4, 1, 5, 1, 16, 1], [0, 1, 2, 3, 4, 5, 6, 7]),
    ([1, 4, 5, 3], [1, 1, 4, 1, 5, 1, 1, 16], [0, 2, 4, 6, 1, 3, 5, 7]),
    ([1, 4, 5, 32], [1, 1, 4, 1, 5, 1, 2, 16], [0, 6, 2, 4, 1, 3, 5, 7]),
    ([2, 3, 4, 5], [1, 2, 3, 1, 4, 1, 5, 1], [2, 3, 0, 1, 4, 5, 6, 7]),
    ([3, 4], [1, 3, 4, 1], [1, 0, 2, 3]),
    ([1], [1, 1], [0, 1]),
]


def _layouts(rng):
    yield from LAYOUTS
    for _ in range(60):
        rank = int(rng.integers(1, 5))
        plain = [int(rng.integers(1, 7)) for _ in range(rank)]
        yield (plain, *_packing(rng, plain))


@pytest.mark.parametrize("dtype", [np.int8, np.int32])
def test_packing_and_unpacking_are_numpys(dtype):
    rng = np.random.default_rng(7)
    for plain, split, order in _layouts(rng):
        rank = len(plain)
        pad = int(rng.integers(-128, 128))
        count = int(np.prod(split))
        flat = _io(1, [count], [count, 1], [0, 1], 0, dtype)
        packed = _io(rank, plain, split, order, pad, dtype)
        x = rng.integers(-100, 100, size=plain).astype(dtype)

        pack = Program(_program(count, dtype, packed, flat))
        (y,) = pack.state().run([x])
        assert y.tobytes() == _pack(x, split, order, pad).tobytes(), (plain, split, order)

        unpack = Program(_program(count, dtype, flat, packed))
        z = rng.integers(-100, 100, size=[count]).astype(dtype)
        (w,) = unpack.state().run([z])
        plain_view = z.reshape([split[k] for k in order]).transpose(np.argsort(order))
        expected = plain_view.reshape([split[2 * d] * split[2 * d + 1] for d in range(rank)])
        expected = expected[tuple(slice(0, n) for n in plain)]
        assert w.tobytes() == np.ascontiguousarray(expected).tobytes()
