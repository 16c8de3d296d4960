"""The program runner (backends/vta/program/qaccel_program.h) from Python
(backends/vta/program_runner.py): the format's checksum (zlib's CRC-32, verified before
anything else), the constants a step computes with range-checked when the program is opened,
the memory budget, and inputs checked by type and shape. (Corrupt headers and tables, and the
LiteRT paths: test_litert_aot.py; threads: test_runner_threads.py; fuzzing: test_fuzz.py.)"""

from __future__ import annotations

import shutil
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_MODELS

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")

from qaccel.backends.litert import aot  # noqa: E402
from qaccel.backends.vta.program import writer  # noqa: E402
from qaccel.backends.vta.program_runner import Program, ProgramError, checksum  # noqa: E402

STEP, KIND_READ, KIND_REQUANT = 96, 3, 4


@pytest.fixture(scope="module")
def fn1(tmp_path_factory) -> bytes:
    """small_cnn's vta_fn_1 program: 1x288 int8 -> 1x10 int8, with a READ and a host REQUANT
    step."""
    from qaccel.frontend.tflite_writer import read_model
    from qaccel.tools.qaccel_compile import run

    art = tmp_path_factory.mktemp("program") / "small_cnn"
    assert run([str(FIXTURE_MODELS / "small_cnn.tflite"), "-o", str(art), "--quiet"]) == 0
    sg = read_model((art / aot.AOT_FILE).read_bytes()).subgraphs[0]
    ops = [o for o in sg.operators if o.custom_code == aot.CUSTOM_CODE]
    return bytes(sg.tensors[ops[1].inputs[-1]].data_bytes())


def _step(blob: bytes, kind: int) -> int:
    n, at = struct.unpack_from("<I", blob, 36)[0], struct.unpack_from("<Q", blob, 168)[0]
    return next(at + STEP * k for k in range(n) if struct.unpack_from("<I", blob, at + STEP * k)[0] == kind)


def _patched(blob: bytes, at: int, fmt: str, value) -> bytes:
    b = bytearray(blob)
    struct.pack_into(fmt, b, at, value)
    return writer.seal(bytes(b))


def _error(blob: bytes) -> str:
    with pytest.raises(ProgramError) as e:
        Program(blob)
    assert "\n" not in str(e.value)
    return str(e.value)


def test_checksum_is_zlibs_crc32_with_the_field_as_zeros(fn1):
    zeroed = fn1[: writer.CHECKSUM_AT] + bytes(8) + fn1[writer.CHECKSUM_AT + 8 :]
    assert struct.unpack_from("<Q", fn1, writer.CHECKSUM_AT)[0] == zlib.crc32(zeroed)
    assert checksum(fn1) == zlib.crc32(zeroed)


def test_runs_and_describes_its_tensors(fn1):
    program = Program(fn1)
    assert program.inputs == [((1, 288), np.dtype(np.int8))]
    assert program.outputs == [((1, 10), np.dtype(np.int8))]
    state = program.state()
    x = np.arange(288, dtype=np.int8).reshape(1, 288)
    first = state.run([x])[0]
    assert state.cycles > 0 and state.runs == 1
    assert state.run([x])[0].tobytes() == first.tobytes()  # a run starts afresh


@pytest.mark.parametrize(("where", "fmt", "value", "message"), [
    ((KIND_REQUANT, 16), "<q", 1 << 40, "zero points or clamp out of int32"),  # input zero point
    ((KIND_REQUANT, 24), "<q", -(1 << 31) - 1, "zero points or clamp out of int32"),  # output's
    ((KIND_REQUANT, 32), "<q", 200, "zero points or clamp out of int32"),  # min above max
    ((KIND_READ, 8), "<I", 2, "moves"),  # a read mode that does not exist
])  # fmt: skip
def test_step_constants_out_of_range_are_refused_when_opened(fn1, where, fmt, value, message):
    kind, offset = where
    err = _error(_patched(fn1, _step(fn1, kind) + offset, fmt, value))
    assert message in err, err


@pytest.mark.parametrize("scale", [float("nan"), float("inf"), 1e300])
def test_requantize_scales_must_be_finite_and_bounded(fn1, scale):
    at = struct.unpack_from("<Q", fn1, _step(fn1, KIND_REQUANT) + 80)[0]
    assert "a host requantization step has scale" in _error(_patched(fn1, at, "<d", scale))


def test_an_io_padding_value_outside_int8_is_refused(fn1):
    io_at = struct.unpack_from("<Q", fn1, 160)[0]
    assert "tensor 0 of the program is malformed" in _error(_patched(fn1, io_at + 8, "<i", 1000))


def test_an_unsealed_change_is_a_checksum_mismatch(fn1):
    b = bytearray(fn1)
    b[len(b) // 2] ^= 0x10
    assert "program checksum mismatch" in _error(bytes(b))


def test_the_memory_budget_covers_the_programs_buffers(fn1, monkeypatch):
    monkeypatch.setenv("QACCEL_MEMORY_LIMIT", "4K")
    assert "above the memory limit of 4096 bytes (raise it with QACCEL_MEMORY_LIMIT)" in _error(fn1)
    monkeypatch.setenv("QACCEL_MEMORY_LIMIT", "lots")
    assert "QACCEL_MEMORY_LIMIT='lots': expected a number" in _error(fn1)
    monkeypatch.setenv("QACCEL_MEMORY_LIMIT", "none")
    Program(fn1).state().run([np.zeros((1, 288), np.int8)])


@pytest.mark.parametrize(("x", "message"), [
    (np.zeros((1, 288), np.uint8), "input 0 has element type 3, the program's has type 9"),
    (np.zeros((288, 1), np.int8), "input 0 has shape [288x1], the program's is [1x288]"),
    (np.zeros((1, 1, 288), np.int8), "input 0 has shape [1x1x288], the program's is [1x288]"),
])  # fmt: skip
def test_inputs_are_checked_by_type_and_shape(fn1, x, message):
    state = Program(fn1).state()
    with pytest.raises(ProgramError, match=message.replace("[", r"\[").replace("]", r"\]")):
        state.run([x])
    assert state.run([np.zeros((1, 288), np.int8)])[0].shape == (1, 10)  # the state still runs
