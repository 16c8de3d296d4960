"""Run a compiled model through its generated C driver (`qaccel-run OUTDIR --driver c`).

    outputs = run_compiled_c(compiled, inputs, artifact_dir)

The host program runs on the interpreter, as in `run_compiled`; each call of an accelerator
function goes to the C entry point `qaccel_runner_call` (`runner/qaccel_runner.h`), which runs
the function's program (`driver/<fn>.qprog`) through the one program runner
(`program/qaccel_program.c`): its packed inputs in, its packed outputs back, every layer and
every host op the function keeps run in C. A function without a program (a host op the
program runner does not implement) cannot run through the C driver (`DriverUnavailable`, one
line naming it).

The driver library is `driver/model.c` as `driver_files(compiled)` generates it (for an
artifact, from its checked data: the C source an artifact carries is never compiled, and the
programs are written again from it too), `runner/qaccel_runner.c`, the program runner and
libqaccel_vta's sources
(`targets/vta/machine/`), compiled from the installed package with the system C compiler
(`$CC`, else `cc`) as C99 with `-Wall -Wextra -Werror`, once: it is cached under
`$QACCEL_CACHE_DIR` (else `~/.cache/qaccel`) in a folder named by the SHA-256 of every source,
the compiler and the flags (`cdriver-<hash>/`); the runner's and libqaccel_vta's objects are
shared by every model (`cdriver-objects-<hash>/`), so a new artifact compiles only its model.c.
Nothing is evicted: remove the folders to reclaim the space. The artifact is never written to
(it may be read-only, and its bytes are deterministic). Without a working C compiler `--driver c` fails with one line
(`DriverUnavailable`); it does not fall back, because the user asked for this driver.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from qaccel.backends.vta.cdriver import HW_KEYS, driver_files, function_programs
from qaccel.backends.vta.compiled import CompiledModel, CompileError
from qaccel.backends.vta.program_runner import PROGRAM_DIR, _Tensor, _tensor
from qaccel.dialects.types import tensor_dtype
from qaccel.targets import cbuild
from xdsl.dialects import func
from xdsl.interpreter import Interpreter, impl, register_impls

RUNNER_DIR = Path(__file__).with_name("runner")
DRIVER_FILES = ("model.c", "model.h", "qaccel_vta.h", "qaccel_program.h")
RUNNER_ABI = 2  # QACCEL_RUNNER_ABI in runner/qaccel_runner.h
CFLAGS = (*cbuild.CFLAGS, *cbuild.SHARED_FLAGS)  # as every C library qaccel builds
LIB_NAME = "libqaccel_driver.so"


class DriverUnavailable(CompileError):
    """The C driver cannot be built or loaded here (one line)."""


class DriverError(CompileError):
    """An accelerator function failed inside the C driver (one line: function, layer, why)."""


def _machine_dir() -> Path:
    from qaccel.targets.vta.cmachine import MACHINE_DIR

    return MACHINE_DIR


def _sources() -> list[Path]:
    return [RUNNER_DIR / "qaccel_runner.c", PROGRAM_DIR / "qaccel_program.c",
            _machine_dir() / "vta_machine.c"]  # fmt: skip


def _headers() -> list[Path]:
    return [RUNNER_DIR / "qaccel_runner.h", PROGRAM_DIR / "qaccel_program.h",
            _machine_dir() / "vta_machine.h"]  # fmt: skip


def driver_sources(compiled: CompiledModel | None, artifact_dir: str | Path | None = None,
                   programs=None):  # fmt: skip
    """`driver/model.c`, `model.h`, `qaccel_vta.h`, `qaccel_program.h` (name -> bytes),
    generated from `compiled`.

    For an artifact too (`artifact_dir`, kept for callers' symmetry), the driver is generated
    again from the artifact's checked data: C source an artifact carries is never compiled, so
    an edited `driver/model.c` (a constructor added to it, say) runs nothing."""
    files = driver_files(compiled, programs)
    return {name: files[f"driver/{name}"] for name in DRIVER_FILES}


def _cc() -> str:
    return cbuild.compiler()


def _hash_sources(h, paths) -> None:
    for path in paths:
        h.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")


def _digest(files: dict[str, bytes], cc: str, flags: Sequence[str]) -> str:
    h = hashlib.sha256()
    for name in sorted(files):
        h.update(b"driver/" + name.encode() + b"\0" + files[name] + b"\0")
    _hash_sources(h, _sources() + _headers())
    h.update("\0".join([cc, *flags]).encode())
    return h.hexdigest()[:24]


def cache_root() -> Path:
    return cbuild.cache_root()


def _compile(cmd: list[str]) -> None:
    run = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if run.returncode != 0:
        lines = [ln for ln in (run.stderr or run.stdout).splitlines() if "error" in ln]
        first = lines[0] if lines else ((run.stderr or run.stdout).strip().splitlines() or ["?"])[0]
        raise DriverUnavailable(f"compiling the C driver failed: {first.strip()}")


def _shared_objects(interface: bytes, cc: str, flags: Sequence[str]) -> list[Path]:
    """The runner and libqaccel_vta compiled once per sources, `qaccel_vta.h` (`interface`),
    compiler and flags, in the cache: the part of the driver library every model shares, so
    that only model.c is compiled per model."""
    h = hashlib.sha256(interface + b"\0")
    _hash_sources(h, _sources() + _headers())
    h.update("\0".join([cc, *flags]).encode())
    folder = cache_root() / f"cdriver-objects-{h.hexdigest()[:24]}"
    objects = [folder / f"{src.stem}.o" for src in _sources()]
    if all(o.is_file() for o in objects):
        return objects
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=folder) as tmp:
        (Path(tmp) / "qaccel_vta.h").write_bytes(interface)
        for src, obj in zip(_sources(), objects, strict=True):
            out = Path(tmp) / obj.name
            _compile([cc, *(f for f in flags if f != "-shared"), "-c", f"-I{tmp}",
                      f"-I{RUNNER_DIR}", f"-I{PROGRAM_DIR}", f"-I{_machine_dir()}", str(src),
                      "-o", str(out)])  # fmt: skip
            os.replace(out, obj)  # atomic, as the library
    return objects


def build_driver(files: dict[str, bytes], out_dir: str | Path | None = None, cc: str | None = None,
                 extra_flags: Sequence[str] = ()) -> Path:  # fmt: skip
    """Compile the driver library from `files` (`driver_sources`): into `out_dir`, or into the
    cache folder of its content hash (reused when it is there). Raises DriverUnavailable."""
    cc = cc or _cc()
    flags = (*CFLAGS, *extra_flags)
    folder = Path(out_dir) if out_dir else cache_root() / f"cdriver-{_digest(files, cc, flags)}"
    lib = folder / LIB_NAME
    if out_dir is None and lib.is_file():
        return lib
    if shutil.which(cc) is None:
        raise DriverUnavailable(f"--driver c needs a C compiler: '{cc}' not found (set CC)")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            for name, data in files.items():
                (Path(tmp) / name).write_bytes(data)
            out = Path(tmp) / LIB_NAME
            objects = _shared_objects(files["qaccel_vta.h"], cc, flags)
            _compile([cc, *flags, f"-I{tmp}", str(Path(tmp) / "model.c"), *map(str, objects),
                      "-o", str(out), "-lm", "-lpthread"])  # fmt: skip
            os.replace(out, lib)  # atomic: a concurrent user never loads a half-written file
    except OSError as e:
        raise DriverUnavailable(f"cannot build the C driver in {folder}: {e}") from None
    return lib


# --------------------------------------------------------------------------------------------
# ctypes binding of runner/qaccel_runner.h


_LOADED: dict[str, ctypes.CDLL] = {}


def load_driver(path: str | Path) -> ctypes.CDLL:
    """The driver library at `path` (loaded once per process), its signatures declared."""
    key = str(path)
    lib = _LOADED.get(key)
    if lib is not None:
        return lib
    try:
        lib = ctypes.CDLL(key)
    except OSError as e:
        raise DriverUnavailable(f"cannot load the C driver: {e}") from None
    lib.qaccel_runner_abi.restype = ctypes.c_int
    if lib.qaccel_runner_abi() != RUNNER_ABI:
        raise DriverUnavailable(f"{path}: runner ABI {lib.qaccel_runner_abi()}, "
                                f"expected {RUNNER_ABI}")  # fmt: skip
    lib.qaccel_runner_open.restype = ctypes.c_void_p
    lib.qaccel_runner_close.argtypes = [ctypes.c_void_p]
    lib.qaccel_runner_close.restype = None
    lib.qaccel_runner_find.argtypes = [ctypes.c_char_p]
    lib.qaccel_runner_function_count.restype = ctypes.c_int
    lib.qaccel_runner_load.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                                       ctypes.c_uint64]  # fmt: skip
    lib.qaccel_runner_call.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t,
                                       ctypes.POINTER(_Tensor), ctypes.c_size_t,
                                       ctypes.POINTER(_Tensor)]  # fmt: skip
    lib.qaccel_runner_error.argtypes = [ctypes.c_void_p]
    lib.qaccel_runner_error.restype = ctypes.c_char_p
    lib.qaccel_runner_cycles.argtypes = [ctypes.c_void_p]
    lib.qaccel_runner_cycles.restype = ctypes.c_int64
    _LOADED[key] = lib
    return lib


class Runner:
    """One `qaccel_runner` of a driver library, every function's program loaded. One call at
    a time per runner; runners are independent (one per thread)."""

    def __init__(self, lib: ctypes.CDLL, compiled: CompiledModel, programs=None):
        self.lib = lib
        self.handle = None
        built = list((ctypes.c_int64 * len(HW_KEYS)).in_dll(lib, "qaccel_model_hw"))
        wanted = [int(getattr(compiled.config, k)) for k in HW_KEYS]
        if built != wanted:
            differ = [k for k, a, b in zip(HW_KEYS, built, wanted, strict=True) if a != b]
            raise DriverUnavailable(f"the C driver was generated for another hardware config "
                                    f"than {compiled.config.name!r} ({', '.join(differ)} "
                                    "differ)")  # fmt: skip
        self.handle = lib.qaccel_runner_open()
        if not self.handle:
            raise MemoryError("the C driver ran out of memory")
        programs = programs if programs is not None else function_programs(compiled)
        self.index: dict[str, int] = {}
        self.outputs: dict[str, list[tuple[tuple[int, ...], np.dtype]]] = {}
        self.missing: dict[str, str] = {}  # functions without a program: why
        for name, (program, why) in programs.items():
            k = lib.qaccel_runner_find(name.encode("utf-8", "surrogateescape"))
            if k < 0:
                raise DriverUnavailable(f"the C driver has no accelerator function @{name}")
            self.index[name] = k
            if program is None:
                self.missing[name] = why
                continue
            buf = np.frombuffer(program, np.uint8)
            if lib.qaccel_runner_load(self.handle, k, buf.ctypes.data, buf.size):
                raise DriverError(self.error())
        for name in programs:
            f = next(o for o in compiled.module.ops
                     if isinstance(o, func.FuncOp) and o.sym_name.data == name)  # fmt: skip
            self.outputs[name] = [(tuple(t.get_shape()), np.dtype(tensor_dtype(t)))
                                  for t in f.function_type.outputs.data]  # fmt: skip

    def error(self) -> str:
        return self.lib.qaccel_runner_error(self.handle).decode("utf-8", "replace")

    def cycles(self) -> int:
        return int(self.lib.qaccel_runner_cycles(self.handle))

    def call(self, name: str, args) -> list[np.ndarray]:
        """`qaccel_runner_call` of function `name` on its packed arguments; its results."""
        if name in self.missing:
            raise DriverUnavailable(f"the C driver cannot run @{name}: {self.missing[name]}")
        xs = [np.ascontiguousarray(x) for x in args]
        ys = [np.zeros(shape, dtype) for shape, dtype in self.outputs[name]]
        ins = (_Tensor * max(1, len(xs)))(*[_tensor(x) for x in xs])
        outs = (_Tensor * max(1, len(ys)))(*[_tensor(y) for y in ys])
        if self.lib.qaccel_runner_call(self.handle, self.index[name], len(xs), ins, len(ys),
                                       outs):  # fmt: skip
            raise DriverError(self.error())
        return ys

    def close(self) -> None:
        if self.handle:
            self.lib.qaccel_runner_close(self.handle)
            self.handle = None

    def __del__(self):
        self.close()


# --------------------------------------------------------------------------------------------
# The interpreter's `func.call` of an accelerator function, through the runner


def _make_call_impl():
    from qaccel.interpreter.accel_semantics import AccelFunctions

    @register_impls
    class CDriverCalls(AccelFunctions):
        """`func.call` of a compiled accelerator function: `qaccel_runner_call` on its packed
        arguments; other calls as usual."""

        def __init__(self, compiled: CompiledModel, runner: Runner):
            super().__init__()
            self.compiled = compiled
            self.runner = runner

        @impl(func.CallOp)
        def run_call(self, interpreter: Interpreter, op: func.CallOp, args: tuple[Any, ...]):
            name = op.callee.string_value()
            if name not in self.compiled.functions:
                return super().run_call(interpreter, op, args)
            return tuple(self.runner.call(name, args))

    return CDriverCalls


def open_runner(compiled: CompiledModel, artifact_dir: str | Path | None = None) -> Runner:
    """Build (or reuse) the driver library of `compiled` and open a runner on it."""
    programs = function_programs(compiled)
    sources = driver_sources(compiled, artifact_dir, programs)
    return Runner(load_driver(build_driver(sources)), compiled, programs)


def run_compiled_c(compiled: CompiledModel, inputs: Sequence[np.ndarray],
                   artifact_dir: str | Path | None = None, listener=None,
                   runner: Runner | None = None) -> list[np.ndarray]:  # fmt: skip
    """`run_compiled` with every accelerator function run by the C driver: the artifact's
    `driver/` when `artifact_dir` is given, else the driver generated from `compiled`.
    `runner` (from `open_runner`) is reused across calls when given."""
    from qaccel.interpreter.interpreter import (
        check_inputs,
        entry_function,
        make_interpreter,
        prepare_module,
    )

    runner = runner or open_runner(compiled, artifact_dir)
    function = entry_function(compiled.module)
    args = check_inputs(function, inputs)
    prepare_module(compiled.module)
    interpreter = make_interpreter(compiled.module, [listener] if listener else [])
    interpreter.register_implementations(_make_call_impl()(compiled, runner), override=True)
    return [np.asarray(r) for r in interpreter.call_op(function, tuple(args))]


__all__ = [
    "DriverError", "DriverUnavailable", "Runner", "build_driver", "driver_sources",
    "load_driver", "open_runner", "run_compiled_c",
]  # fmt: skip
