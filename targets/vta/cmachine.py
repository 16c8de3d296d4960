"""libqaccel_vta (targets/vta/machine/, C99) behind the Python simulator's interface.

    result = simulate(program, uops, dram, config)   # SimResult, as simulator.simulate
    report = timing(program, config)                 # TimingReport, as simulator.timing

Same inputs, same outputs, same `SimulationError` (kind and instruction index) as the Python
reference in `simulator.py`, which stays the checked specification: tests/test_vta_cmachine.py
cross-checks the two. `simulator.simulate(..., simulator="c")` (the default) comes here.

Finding the library, first hit wins:
  1. `QACCEL_NO_CMACHINE=1`: none (the Python simulator runs; for tests and debugging);
  2. `QACCEL_CMACHINE_LIB=path`: that shared object (e.g. a sanitizer build);
  3. the extension `pip install` built next to this file (setup.py, optional);
  4. compiled on first use with the system C compiler into a per-user cache directory.
A library built from other sources than the ones next to this file (a stale in-place build)
is not used. When none loads, `available()` is False and one line on stderr says why.

The GEMM kernel (portable C, SSE2, AVX2 when the CPU has it) is the fastest available unless
`QACCEL_CMACHINE_KERNEL` (or the module attribute `kernel`) names a slower one; all compute the
same sums, and the cross-check runs each.
"""

from __future__ import annotations

import ctypes
import os
import shutil
import sys
import tempfile
from pathlib import Path

import numpy as np
from qaccel.targets import cbuild
from qaccel.targets.vta import budget
from qaccel.targets.vta.config import DEFAULT_CONFIG, MACHINE_KEYS, HardwareConfig
from qaccel.targets.vta.isa import MemType, Program
from qaccel.targets.vta.simulation_result import (
    FIFOS,
    MODULE_NAMES,
    SimResult,
    SimulationError,
    TimingReport,
)

LIBRARY = cbuild.MACHINE_LIBRARY  # its sources, digest and extension, declared once
MACHINE_DIR = LIBRARY.directory()
SOURCES, HEADERS = LIBRARY.sources, LIBRARY.headers
ABI = 4  # VTA_MACHINE_ABI in vta_machine.h
# GEMM kernels (enum vta_kernel): all compute the same sums; "auto" is the fastest the CPU has.
KERNELS = {"auto": 0, "c": 1, "sse2": 2, "avx2": 3, "avx-vnni": 4, "avx512-vnni": 5}
kernel = os.environ.get("QACCEL_CMACHINE_KERNEL", "auto")  # tests set it to check each one
last_kernel: str | None = None  # the kernel the last functional run used
CFLAGS = (*cbuild.CFLAGS, *cbuild.SHARED_FLAGS)  # as every C library qaccel builds
LIB_NAME = LIBRARY.lib_name

_CONFIG_KEYS = MACHINE_KEYS  # vta_config's fields, in order
_P = ctypes.c_void_p
_I = ctypes.c_int64


class _Config(ctypes.Structure):
    _fields_ = [(k, _I) for k in _CONFIG_KEYS]


class _Run(ctypes.Structure):  # vta_run
    _fields_ = [
        ("uop_image", _P), ("uop_image_len", _I), ("dram", _P), ("dram_len", _I),
        ("uop_sram", _P), ("inp_sram", _P), ("wgt_sram", _P), ("acc_sram", _P),
        ("start", _P), ("end", _P), ("module", _P), ("kernel", _I),
        ("step_limit", _I), ("memory_limit", _I),
        ("total_cycles", _I), ("busy", _I * 3), ("stalled", _I * 3), ("bus_wait", _I * 3),
        ("gemm_iterations", _I), ("alu_iterations", _I),
        ("dram_read_bytes", _I * 8), ("dram_write_bytes", _I * 8), ("leftover_tokens", _I * 4),
        ("error_index", _I), ("error_kind", ctypes.c_char * 32),
        ("error_message", ctypes.c_char * 512),
    ]  # fmt: skip


VTA_OK, VTA_ERROR, VTA_ERR_CONFIG, VTA_ERR_NOMEM = 0, 1, 2, 3


# The library's digest and its build, as its declaration gives them (setup.py compiles the
# same digest into it): `source_hash()`, `build_library(out_dir, cc=None, extra_flags=())`.
source_hash = LIBRARY.source_hash
build_library = LIBRARY.build


def _open(path: Path, check_hash: bool):
    lib = ctypes.CDLL(str(path))
    lib.vta_machine_abi.restype = ctypes.c_int
    if lib.vta_machine_abi() != ABI:
        raise OSError(f"{path}: ABI {lib.vta_machine_abi()}, expected {ABI}")
    lib.vta_source_hash.restype = ctypes.c_char_p
    if check_hash and lib.vta_source_hash().decode() != source_hash():
        raise OSError(f"{path} was built from other sources")
    lib.vta_simulate.restype = ctypes.c_int
    lib.vta_simulate.argtypes = [ctypes.POINTER(_Config), _P, _I, ctypes.c_int,
                                 ctypes.POINTER(_Run)]  # fmt: skip
    lib.vta_prepare.restype = ctypes.c_int
    lib.vta_prepare.argtypes = [ctypes.POINTER(_Config), _P, _I, ctypes.POINTER(_Run),
                                ctypes.POINTER(_P)]  # fmt: skip
    lib.vta_scratch_new.restype = ctypes.c_int
    lib.vta_scratch_new.argtypes = [ctypes.POINTER(_Config), ctypes.POINTER(_Run),
                                    ctypes.POINTER(_P)]  # fmt: skip
    lib.vta_execute.restype = ctypes.c_int
    lib.vta_execute.argtypes = [_P, _P, ctypes.POINTER(_Run)]
    lib.vta_program_constants.restype = ctypes.c_int
    lib.vta_program_constants.argtypes = [_P, _P, _I, _I, _I]
    lib.vta_program_dram_written.restype = _I
    lib.vta_program_dram_written.argtypes = [_P]
    lib.vta_program_free.restype = None
    lib.vta_program_free.argtypes = [_P]
    lib.vta_scratch_free.restype = None
    lib.vta_scratch_free.argtypes = [_P]
    return lib


def _notice(reason: str) -> None:
    print(f"qaccel: C simulator unavailable ({reason}); using the Python simulator",
          file=sys.stderr)  # fmt: skip


_LOADER = LIBRARY.loader(_open, _notice)
library = _LOADER.library
"""The loaded ctypes library, or None (after one notice on stderr)."""
available = _LOADER.available
unavailable_reason = _LOADER.unavailable_reason
_reset_for_tests = _LOADER.reset
_cache_dir = _LOADER.cache_dir


# --------------------------------------------------------------------------------------------


def _config_struct(c: HardwareConfig) -> _Config:
    return _Config(*(int(getattr(c, k)) for k in _CONFIG_KEYS))


def _ptr(a: np.ndarray) -> int:
    return a.ctypes.data


def _limit(value: int | None) -> int:
    """A vta_run limit: the value, or -1 for none (0 would mean "the environment's")."""
    return -1 if value is None else max(1, int(value))


def _loaded(program, config):
    """The library, the configuration, the program and its words as the C machine takes them
    (a `Program`'s own configuration unless `config` is given)."""
    lib = library()
    if lib is None:
        raise RuntimeError(f"the C simulator is unavailable: {unavailable_reason()}")
    if isinstance(program, Program):
        config = config or program.config
    c = config or DEFAULT_CONFIG
    prog = program if isinstance(program, Program) else Program(c, program)
    return lib, c, prog, np.ascontiguousarray(prog.words, dtype="<u8")


def _run(program, config, functional: bool, uops=None, dram=None, in_place: bool = False,
         limits=(budget.FROM_ENVIRONMENT, budget.FROM_ENVIRONMENT)):  # fmt: skip
    lib, c, prog, words = _loaded(program, config)
    n = len(words)
    step_limit, memory_limit = budget.resolve_limits(*limits)
    run = _Run()
    run.step_limit, run.memory_limit = _limit(step_limit), _limit(memory_limit)
    start = np.zeros(n, np.int64)
    end = np.zeros(n, np.int64)
    module = np.zeros(n, np.int64)
    run.start, run.end, run.module = _ptr(start), _ptr(end), _ptr(module)
    keep = []  # arrays the C call points into
    sram = None
    if functional:
        image = np.ascontiguousarray(
            np.asarray(prog.uops if uops is None else uops, dtype=np.uint32).reshape(-1)
        )
        # Before allocating the image or copying it (the machine checks again, for its C callers).
        size = prog.initial_dram_bytes() if dram is None else np.asarray(dram).nbytes
        budget.check_state(c, n, size, True, memory_limit)
        dram = prog.initial_dram() if dram is None else np.asarray(dram)
        if dram.dtype != np.uint8 or dram.ndim != 1:
            _run(prog, c, False, limits=limits)  # malformed programs first, as the reference
            raise SimulationError("the DRAM image must be a flat uint8 array")
        if not (in_place and dram.flags.c_contiguous and dram.flags.writeable):
            dram = dram.copy()
        blk = c.block
        sram = {
            "uop": np.zeros(c.depth("uop"), np.uint32),
            "inp": np.zeros((c.depth("inp"), blk), np.int8),
            "wgt": np.zeros((c.depth("wgt"), blk, blk), np.int8),
            "acc": np.zeros((c.depth("acc"), blk), np.int32),
        }
        run.uop_image, run.uop_image_len = _ptr(image), len(image)
        run.dram, run.dram_len = _ptr(dram), len(dram)
        run.uop_sram, run.inp_sram = _ptr(sram["uop"]), _ptr(sram["inp"])
        run.wgt_sram, run.acc_sram = _ptr(sram["wgt"]), _ptr(sram["acc"])
        keep += [image, dram]
    run.kernel = KERNELS[kernel]
    cfg = _config_struct(c)
    rc = lib.vta_simulate(ctypes.byref(cfg), _ptr(words), n, int(functional), ctypes.byref(run))
    _check(rc, run, c)
    report = _report(run, c, start, end, module)
    leftover = {name: int(run.leftover_tokens[q]) for q, name in enumerate(FIFOS)}
    if not functional:
        return report, leftover, None, None
    global last_kernel
    last_kernel = {v: k for k, v in KERNELS.items()}[int(run.kernel)]
    return report, leftover, dram, sram


def _check(rc: int, run: _Run, c: HardwareConfig) -> None:
    if rc == VTA_ERROR:
        kind = run.error_kind.decode() or None
        index = None if run.error_index < 0 else int(run.error_index)
        raise SimulationError(run.error_message.decode(errors="replace"), index, kind)
    if rc == VTA_ERR_CONFIG:
        raise SimulationError(f"the C simulator cannot run hardware config {c.name!r}")
    if rc == VTA_ERR_NOMEM:
        raise MemoryError("the C simulator ran out of memory")


def _report(run: _Run, c: HardwareConfig, start, end, module) -> TimingReport:
    mem_names = [m.name.lower() for m in MemType]
    return TimingReport(
        config=c,
        total_cycles=int(run.total_cycles),
        busy=dict(zip(MODULE_NAMES, map(int, run.busy))),
        stalled=dict(zip(MODULE_NAMES, map(int, run.stalled))),
        bus_wait=dict(zip(MODULE_NAMES, map(int, run.bus_wait))),
        gemm_iterations=int(run.gemm_iterations),
        alu_iterations=int(run.alu_iterations),
        dram_read_bytes={k: int(run.dram_read_bytes[int(m)]) for k, m in zip(mem_names, MemType)},
        dram_write_bytes={k: int(run.dram_write_bytes[int(m)]) for k, m in zip(mem_names, MemType)},
        start=start,
        end=end,
        module=module,
    )


def simulate(program, uops=None, dram=None, config: HardwareConfig | None = None, *,
             in_place: bool = False, step_limit=budget.FROM_ENVIRONMENT,
             memory_limit=budget.FROM_ENVIRONMENT) -> SimResult:  # fmt: skip
    """`simulator.simulate` on the C machine. `in_place`: run on `dram` itself (a contiguous,
    writeable uint8 array) instead of a copy, as a runtime that owns its DRAM image does."""
    report, leftover, dram, sram = _run(program, config, True, uops, dram, in_place,
                                        (step_limit, memory_limit))  # fmt: skip
    return SimResult(dram, report, leftover, sram)


def timing(program, config: HardwareConfig | None = None, *,
           step_limit=budget.FROM_ENVIRONMENT,
           memory_limit=budget.FROM_ENVIRONMENT) -> TimingReport:  # fmt: skip
    """`simulator.timing` on the C machine: token protocol and cycle counts only."""
    return _run(program, config, False, limits=(step_limit, memory_limit))[0]


class Scratch:
    """The scratchpads `Prepared.execute` works in, one per hardware configuration (one run at
    a time); `kernel` is the GEMM kernel they use."""

    def __init__(self, config: HardwareConfig, memory_limit=budget.FROM_ENVIRONMENT):
        lib = library()
        if lib is None:
            raise RuntimeError(f"the C simulator is unavailable: {unavailable_reason()}")
        self._lib, self.config = lib, config
        run = _Run()
        run.memory_limit = _limit(budget.resolve_limits(budget.FROM_ENVIRONMENT, memory_limit)[1])
        run.kernel = KERNELS[kernel]
        handle = _P()
        _check(lib.vta_scratch_new(ctypes.byref(_config_struct(config)), ctypes.byref(run),
                                   ctypes.byref(handle)), run, config)  # fmt: skip
        self._handle = handle
        self.kernel = {v: k for k, v in KERNELS.items()}[int(run.kernel)]

    def __del__(self):
        if getattr(self, "_handle", None):
            self._lib.vta_scratch_free(self._handle)
            self._handle = None


class Prepared:
    """An accelerator program checked and timed once (the C machine's vta_prepare: every check
    `simulate` makes, hazards included, and the timing model, without data), then run any
    number of times on DRAM images of `dram_bytes` with data only (vta_execute): the DRAM
    after FINISH is `simulate`'s, bit for bit. `report` and `leftover_tokens` are the one
    timing run's. Malformed programs raise SimulationError here, as `simulate` would."""

    def __init__(self, program, uops, dram_bytes: int, config: HardwareConfig | None = None, *,
                 step_limit=budget.FROM_ENVIRONMENT, memory_limit=budget.FROM_ENVIRONMENT):  # fmt: skip
        lib, c, prog, words = _loaded(program, config)
        n = len(words)
        image = np.ascontiguousarray(
            np.asarray(prog.uops if uops is None else uops, dtype=np.uint32).reshape(-1))
        steps, memory = budget.resolve_limits(step_limit, memory_limit)
        budget.check_state(c, n, int(dram_bytes), True, memory)
        run = _Run()
        run.step_limit, run.memory_limit = _limit(steps), _limit(memory)
        run.uop_image, run.uop_image_len = _ptr(image), len(image)
        run.dram_len = int(dram_bytes)
        start, end, module = (np.zeros(n, np.int64) for _ in range(3))
        run.start, run.end, run.module = _ptr(start), _ptr(end), _ptr(module)
        handle = _P()
        rc = lib.vta_prepare(ctypes.byref(_config_struct(c)), _ptr(words), n, ctypes.byref(run),
                             ctypes.byref(handle))  # fmt: skip
        _check(rc, run, c)
        self._lib, self._handle, self.config, self.dram_bytes = lib, handle, c, int(dram_bytes)
        self.report = _report(run, c, start, end, module)
        self.leftover_tokens = {name: int(run.leftover_tokens[q]) for q, name in enumerate(FIFOS)}
        # one past the last DRAM byte the program's STOREs write: what a run can change
        self.dram_written = int(lib.vta_program_dram_written(handle))

    def execute(self, dram: np.ndarray, scratch: Scratch) -> np.ndarray:
        """Run on `dram` in place (a contiguous, writeable uint8 array of `dram_bytes`)."""
        if not (isinstance(dram, np.ndarray) and dram.dtype == np.uint8 and dram.ndim == 1
                and dram.flags.c_contiguous and dram.flags.writeable):  # fmt: skip
            raise SimulationError("the DRAM image must be a contiguous, writeable uint8 array")
        run = _Run()
        run.dram, run.dram_len = _ptr(dram), len(dram)
        _check(self._lib.vta_execute(self._handle, scratch._handle, ctypes.byref(run)), run,
               self.config)  # fmt: skip
        return dram

    def constants(self, dram: np.ndarray, start: int, end: int | None = None) -> None:
        """Declare that `dram`'s bytes [start, end) (end: the image's) are the same in every
        `execute` (e.g. the weights after the activations): the weight tiles loaded from them
        are converted into the GEMM kernels' layouts now, once, instead of at every run."""
        dram = np.ascontiguousarray(dram, dtype=np.uint8).reshape(-1)
        end = len(dram) if end is None else int(end)
        rc = self._lib.vta_program_constants(self._handle, _ptr(dram), len(dram), int(start),
                                             end)  # fmt: skip
        if rc == 3:
            raise MemoryError("vta_program_constants")
        if rc != 0:
            raise SimulationError(f"a DRAM image of {len(dram)} bytes for a program prepared "
                                  f"for {self.dram_bytes}")  # fmt: skip

    def __del__(self):
        if getattr(self, "_handle", None):
            self._lib.vta_program_free(self._handle)
            self._handle = None


def compiler_available() -> bool:
    return shutil.which(os.environ.get("CC") or "cc") is not None


__all__ = ["available", "build_library", "library", "simulate", "source_hash", "timing",
           "unavailable_reason", "MACHINE_DIR", "Prepared", "Scratch"]  # fmt: skip


if __name__ == "__main__":  # python -m qaccel.targets.vta.cmachine: build and report
    with tempfile.TemporaryDirectory() as d:
        print(build_library(d))
    print("available:", available(), unavailable_reason() or "")
