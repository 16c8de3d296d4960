"""The value fed to a forked helper (`kernels/background.py`'s `feed`): large contiguous
buffers (a DRAM image) go through the pipe out of band, as they are, and arrive equal."""

from __future__ import annotations

import os
import pickle

import numpy as np
import pytest
from qaccel.kernels import background


@pytest.fixture
def forking(monkeypatch):
    monkeypatch.setattr(background, "enabled", lambda: hasattr(os, "fork"))
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork")


def _received(receive):
    value = receive()
    return os.getpid(), value


def _value():
    rng = np.random.default_rng(5)
    image = rng.integers(0, 256, 3 << 20, dtype=np.uint8)  # out of band (3 MB)
    return {
        "image": image,
        "strided": image[::3][: 1 << 17],  # not contiguous: in the pickle
        "fortran": np.asfortranarray(rng.integers(0, 9, (300, 400))),  # contiguous, F order
        "small": np.arange(10, dtype=np.int32),
        "empty": np.zeros((0, 4), np.int8),
        "bytes": bytes(range(256)) * 1000,
        "words": [np.arange(4096, dtype="<u8").reshape(-1, 2) for _ in range(3)],
    }


def _check(got, want) -> None:
    assert sorted(got) == sorted(want)
    for key, value in want.items():
        if isinstance(value, np.ndarray):
            assert got[key].dtype == value.dtype and np.array_equal(got[key], value)
            if key == "fortran":
                assert got[key].flags.f_contiguous
        elif key == "words":
            assert all(np.array_equal(a, b) for a, b in zip(got[key], value))
        else:
            assert got[key] == value


def test_large_buffers_are_fed_out_of_band_and_arrive_equal(forking, monkeypatch):
    want = _value()
    buffers: list = []
    data = pickle.dumps(want, protocol=5, buffer_callback=background._out_of_band(buffers))
    assert sorted(b.nbytes for b in buffers) == [want["fortran"].nbytes, 3 << 20]
    assert len(data) < (1 << 20)  # the image is not copied into the pickle
    written: list[int] = []  # what `feed` itself writes into the pipe, piece by piece
    write_all = background._write_all

    def recorded(pipe, piece) -> None:
        written.append(memoryview(piece).nbytes)
        write_all(pipe, piece)

    monkeypatch.setattr(background, "_write_all", recorded)
    pending = background.start_fed(_received)
    assert pending._pid is not None
    pending.feed(want)
    pid, got = pending.result()
    assert pid != os.getpid()
    _check(got, want)
    # The two large buffers went through the pipe as pieces of their own, not in the pickle.
    assert 3 << 20 in written and want["fortran"].nbytes in written
    assert max(n for n in written if n not in (3 << 20, want["fortran"].nbytes)) < (1 << 20)


def test_a_fed_value_cut_short_is_computed_by_the_caller(forking, monkeypatch):
    """A child that reads a truncated feed fails; the caller computes the value itself."""
    want = _value()
    monkeypatch.setattr(background, "_write_all", _first_half)
    pending = background.start_fed(_received)
    pending.feed(want)
    pid, got = pending.result()
    assert pid == os.getpid()
    _check(got, want)


def _first_half(pipe, data) -> None:
    view = memoryview(data).cast("B")
    pipe.write(view[: max(1, len(view) // 2)])
