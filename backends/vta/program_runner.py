"""The program runner (`program/qaccel_program.h`) from Python: the C path that runs a compiled
accelerator function's program, the same code the LiteRT dispatch library, the custom-op kernel
and the C driver run.

    program = Program(blob)                # opened and checked (checksum, values, budget)
    state = program.state()                # one run's memory; one per thread
    outputs = state.run([x])               # inputs checked by dtype and shape
    state = kept_state(program, digest)    # prepared from the cache when it was kept before
    other = program.state(); other.share(state)  # another thread's, with the same prepared layers

`libqaccel_program` is built by `pip install` (setup.py) next to `program/`, or else on first
use with the system C compiler into the per-user cache directory (`QACCEL_CACHE_DIR`, else
`~/.cache/qaccel`), keyed by the sources' digest. Errors are `ProgramError`, one line, from the
open call or the state that failed: nothing is process-wide, so states run in parallel threads
(ctypes releases the GIL during a run).

A state's first run checks and times every layer (the checked simulation without data), which
costs more than a run itself. `kept_state` keeps what that found (the layers' execution
order, micro-ops and cycles: `State.export`) in the per-user cache directory, under a SHA-256
of the program's bytes (the caller's digest, e.g. the artifact manifest's, checked against the
bytes read), of this library's sources and of the budgets the checks enforce
(`QACCEL_STEP_LIMIT`, `QACCEL_MEMORY_LIMIT`), and prepares a later state of the same program
from it (`State.import_kept`) instead: the cycles are the same, and a program that differs in
one byte has another key, so it is checked again. What the cache holds is checked to be an
intact export of this program (CRC-32, sizes, indices), not checked again instruction by
instruction: it is trusted as the libraries built in the same directory are.
"""

from __future__ import annotations

import contextlib
import ctypes as C
import hashlib
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from qaccel.targets import cbuild

PROGRAM_DIR = Path(__file__).with_name("program")
MACHINE_DIR = Path(__file__).parents[2] / "targets" / "vta" / "machine"
# C files, then headers, hashed in this order (setup.py's PROGRAM_FILES).
SOURCES = (PROGRAM_DIR / "qaccel_program.c", MACHINE_DIR / "vta_machine.c",
           PROGRAM_DIR / "qaccel_program.h", MACHINE_DIR / "vta_machine.h")  # fmt: skip
# Every C library's flags (targets/cbuild.py), and: only the API visible, no undefined symbol.
EXTRA_FLAGS = ("-fvisibility=hidden", "-Wl,-z,defs")
LIB_NAME = "libqaccel_program.so"
ABI = 4  # QACCEL_PROGRAM_ABI
ERROR_BYTES = 512  # QACCEL_ERROR_BYTES
MAX_RANK = 8
# numpy dtype <-> QACCEL_TYPE_* (TFLite's codes)
TYPES = {np.dtype(np.int32): 2, np.dtype(np.uint8): 3, np.dtype(np.int16): 7,
         np.dtype(np.int8): 9}  # fmt: skip
DTYPES = {code: dtype for dtype, code in TYPES.items()}


class ProgramError(Exception):
    """A program could not be opened or run (one line)."""


class _Tensor(C.Structure):
    _fields_ = [("data", C.c_void_p), ("bytes", C.c_size_t), ("type", C.c_int32),
                ("rank", C.c_int32), ("dims", C.c_int64 * MAX_RANK)]  # fmt: skip


def source_hash(sources: Sequence[Path] = SOURCES) -> str:
    return cbuild.source_hash(sources)


def build_library(out: Path, cc: str | None = None) -> Path:
    """Compile libqaccel_program into `out` (raises CalledProcessError/OSError)."""
    return cbuild.build_shared(out, SOURCES, include_dirs=(PROGRAM_DIR, MACHINE_DIR),
                               defines={"VTA_SOURCE_HASH": source_hash()},
                               extra_flags=EXTRA_FLAGS, libraries=("m", "pthread"), cc=cc)


def library_path() -> Path:
    """libqaccel_program: the one `pip install` built (when current), else built on first use."""
    for path in sorted(PROGRAM_DIR.glob("_qaccel_program*.so")):
        if cbuild.is_stamped(path, "qaccel_program_source_hash", source_hash()):
            return path
    path = cbuild.cache_root() / f"program-{source_hash()}" / LIB_NAME
    failure = cbuild.build_once(path, build_library)
    if failure is not None:
        raise ProgramError(f"cannot build {LIB_NAME}: {failure}")
    return path


_lib: list = []


def library() -> C.CDLL:
    """libqaccel_program, loaded once, its functions typed."""
    if _lib:
        return _lib[0]
    lib = C.CDLL(str(library_path()))
    P, E = C.c_void_p, C.c_char_p
    for name, res, args in (
        ("qaccel_program_abi", C.c_int, []),
        ("qaccel_program_open", C.c_int, [P, C.c_size_t, C.POINTER(P), E]),
        ("qaccel_program_close", None, [P]),
        ("qaccel_program_inputs", C.c_uint32, [P]),
        ("qaccel_program_outputs", C.c_uint32, [P]),
        ("qaccel_program_tensor", C.c_int, [P, C.c_int, C.c_uint32, C.POINTER(C.c_int32),
                                            C.POINTER(C.c_int32), C.POINTER(C.c_int64)]),
        ("qaccel_program_checksum", C.c_uint32, [P, C.c_size_t]),
        ("qaccel_state_new", C.c_int, [P, C.POINTER(P), E]),
        ("qaccel_state_run", C.c_int, [P, C.c_size_t, C.POINTER(_Tensor), C.c_size_t,
                                       C.POINTER(_Tensor)]),
        ("qaccel_state_error", C.c_char_p, [P]),
        ("qaccel_state_cycles", C.c_int64, [P]),
        ("qaccel_state_runs", C.c_uint64, [P]),
        ("qaccel_state_free", None, [P]),
        ("qaccel_state_prepare", C.c_int, [P]),
        ("qaccel_state_export", C.c_size_t, [P, P, C.c_size_t]),
        ("qaccel_state_import", C.c_int, [P, P, C.c_size_t]),
        ("qaccel_state_share", C.c_int, [P, P]),
        ("qaccel_program_source_hash", C.c_char_p, []),
    ):  # fmt: skip
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    if lib.qaccel_program_abi() != ABI:
        raise ProgramError(f"{LIB_NAME} has ABI {lib.qaccel_program_abi()}, expected {ABI}")
    _lib.append(lib)
    return lib


def _tensor(array: np.ndarray) -> _Tensor:
    t = _Tensor()
    t.data = array.ctypes.data
    t.bytes = array.nbytes
    t.type = TYPES.get(array.dtype, 0)
    t.rank = array.ndim
    for d, n in enumerate(array.shape[:MAX_RANK]):
        t.dims[d] = n
    return t


class Program:
    """A program opened and checked (its bytes kept, 8-byte aligned, for its lifetime)."""

    def __init__(self, blob: bytes):
        lib = library()
        raw = np.zeros(len(blob) + 8, np.uint8)
        off = (-raw.ctypes.data) % 8
        self._bytes = raw[off : off + len(blob)]
        self._bytes[:] = np.frombuffer(blob, np.uint8)
        self._handle = C.c_void_p()
        error = C.create_string_buffer(ERROR_BYTES)
        if lib.qaccel_program_open(self._bytes.ctypes.data, len(blob), C.byref(self._handle),
                                   error):  # fmt: skip
            raise ProgramError(error.value.decode("utf-8", "replace"))
        self.inputs = [self._tensor(0, k) for k in range(lib.qaccel_program_inputs(self._handle))]
        self.outputs = [self._tensor(1, k) for k in range(lib.qaccel_program_outputs(self._handle))]

    def _tensor(self, is_output: int, k: int) -> tuple[tuple[int, ...], np.dtype]:
        code, rank, dims = C.c_int32(), C.c_int32(), (C.c_int64 * MAX_RANK)()
        library().qaccel_program_tensor(self._handle, is_output, k, C.byref(code), C.byref(rank),
                                        dims)  # fmt: skip
        return tuple(dims[: rank.value]), DTYPES[code.value]

    def state(self) -> State:
        return State(self)

    def close(self) -> None:
        if getattr(self, "_handle", None):
            library().qaccel_program_close(self._handle)
            self._handle = None

    def __del__(self):
        self.close()


class State:
    """One run's memory for a `Program`: one run at a time; states are independent."""

    def __init__(self, program: Program):
        self.program = program  # outlives the state
        self._handle = C.c_void_p()
        error = C.create_string_buffer(ERROR_BYTES)
        if library().qaccel_state_new(program._handle, C.byref(self._handle), error):
            raise ProgramError(error.value.decode("utf-8", "replace"))

    def run(self, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
        """The outputs for `inputs` (their dtypes and shapes are checked by the runner)."""
        xs = [np.ascontiguousarray(x) for x in inputs]
        ys = [np.zeros(shape, dtype) for shape, dtype in self.program.outputs]
        ins = (_Tensor * max(1, len(xs)))(*[_tensor(x) for x in xs])
        outs = (_Tensor * max(1, len(ys)))(*[_tensor(y) for y in ys])
        if library().qaccel_state_run(self._handle, len(xs), ins, len(ys), outs):
            raise ProgramError(self.error)
        return ys

    def prepare(self) -> None:
        """What the first run does first, now: every layer checked and timed."""
        if library().qaccel_state_prepare(self._handle):
            raise ProgramError(self.error)

    def export(self) -> bytes:
        """The layers' checked runs as bytes (b"" before the first run or `prepare`, and on
        the checked path)."""
        lib = library()
        size = lib.qaccel_state_export(self._handle, None, 0)
        buf = np.empty(size, np.uint8)
        if not size or lib.qaccel_state_export(self._handle, buf.ctypes.data, size) != size:
            return b""
        return buf.tobytes()

    def import_kept(self, blob: bytes) -> bool:
        """Prepared from `export`'s bytes of a state of the same program (before the first
        run); False, the state unchanged, when they are not an intact export of it."""
        buf = np.frombuffer(blob, np.uint8)
        return library().qaccel_state_import(self._handle, buf.ctypes.data, buf.size) == 0

    def share(self, owner: State) -> None:
        """Run with the prepared layers of `owner` (a prepared state of the same program)
        instead of preparing them again (before the first run): one copy of the layers'
        execution order, micro-ops and converted weights for every thread's state. `owner`
        is kept alive as long as this state."""
        if library().qaccel_state_share(self._handle, owner._handle):
            raise ProgramError(self.error)
        self._owner = owner

    @property
    def error(self) -> str:
        return library().qaccel_state_error(self._handle).decode("utf-8", "replace")

    @property
    def cycles(self) -> int:
        return library().qaccel_state_cycles(self._handle)

    @property
    def runs(self) -> int:
        return library().qaccel_state_runs(self._handle)

    def close(self) -> None:
        if getattr(self, "_handle", None):
            library().qaccel_state_free(self._handle)
            self._handle = None

    def __del__(self):
        self.close()


def checksum(blob: bytes) -> int:
    """The C runner's checksum of `blob` (writer.seal's, computed in C)."""
    buf = np.frombuffer(blob, np.uint8)
    return library().qaccel_program_checksum(buf.ctypes.data, buf.size)


KEPT_DIR = "prepared"  # under cbuild.cache_root()
KEPT_FILES = 64  # the most recently kept preparations; older ones are removed
_BUDGETS = ("QACCEL_STEP_LIMIT", "QACCEL_MEMORY_LIMIT")


def kept_path(digest: str) -> Path | None:
    """Where the preparation of the program whose bytes have SHA-256 `digest` is kept (None
    when this library has no source stamp to key it by)."""
    stamp = library().qaccel_program_source_hash().decode()
    if not stamp:
        return None
    key = "\0".join([digest, stamp, *(os.environ.get(k, "") for k in _BUDGETS)])
    return cbuild.cache_root() / KEPT_DIR / f"{hashlib.sha256(key.encode()).hexdigest()[:40]}.bin"


def kept_state(program: Program, digest: str | None) -> State:
    """A state of `program` (whose bytes have SHA-256 `digest`), prepared: from the cache
    when its preparation was kept there, else checked and timed now and kept (see the module
    docstring). The checked path (QACCEL_SIMULATION=checked) prepares and keeps nothing."""
    state = program.state()
    if digest is None or os.environ.get("QACCEL_SIMULATION") == "checked":
        return state
    path = kept_path(digest)
    if path is None:
        return state
    try:
        blob = path.read_bytes()
    except OSError:
        blob = None
    if blob is not None and state.import_kept(blob):
        return state
    state.prepare()
    blob = state.export()
    if blob:
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_bytes(blob)
            os.replace(tmp, path)
        except OSError:  # a cache that cannot be written is not an error
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
        _forget_oldest(path.parent)
    return state


def _forget_oldest(folder: Path, keep: int = KEPT_FILES) -> None:
    """Only the `keep` most recently written preparations stay (a miss writes one)."""
    with contextlib.suppress(OSError):
        kept = sorted(folder.glob("*.bin"), key=lambda p: p.stat().st_mtime)
        for old in kept[:-keep]:
            with contextlib.suppress(OSError):
                old.unlink()


__all__ = ["Program", "ProgramError", "State", "checksum", "kept_path", "kept_state",
           "library"]  # fmt: skip
