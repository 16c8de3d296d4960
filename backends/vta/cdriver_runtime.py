"""Run a compiled model through its generated C driver (`qaccel-run OUTDIR --driver c`).

    outputs = run_compiled_c(compiled, inputs, artifact_dir)

The host program runs on the interpreter, as in `run_compiled`; each call of an accelerator
function goes to the C entry point `qaccel_runner_call` (`runner/qaccel_runner.h`), which walks
the function's steps in `driver/model.c` and runs every layer's instruction stream on
libqaccel_vta. The C side calls back into Python for the host's steps: fill an arena slot with
a tensor the host produced, read one back, run a segment of host ops on the interpreter.

The driver library is `driver/model.c` as `driver_files(compiled)` generates it (for an
artifact, from its checked data: the C source an artifact carries is never compiled),
`runner/qaccel_runner.c` and libqaccel_vta's sources
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
from qaccel.backends.vta.cdriver import HW_KEYS, driver_files
from qaccel.backends.vta.compiled import CompiledModel, CompileError, resolve
from qaccel.backends.vta.runtime import function_body, function_steps, run_host_op
from qaccel.dialects.types import tensor_dtype
from qaccel.targets import cbuild
from xdsl.dialects import func
from xdsl.interpreter import Interpreter, impl, register_impls
from xdsl.ir import Operation, SSAValue

RUNNER_DIR = Path(__file__).with_name("runner")
DRIVER_FILES = ("model.c", "model.h", "qaccel_vta.h")
RUNNER_ABI = 1  # QACCEL_RUNNER_ABI in runner/qaccel_runner.h
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
    return [RUNNER_DIR / "qaccel_runner.c", _machine_dir() / "vta_machine.c"]


def _headers() -> list[Path]:
    return [RUNNER_DIR / "qaccel_runner.h", _machine_dir() / "vta_machine.h"]


def driver_sources(compiled: CompiledModel | None, artifact_dir: str | Path | None = None):
    """`driver/model.c`, `model.h`, `qaccel_vta.h` (name -> bytes), generated from `compiled`.

    For an artifact too (`artifact_dir`, kept for callers' symmetry), the driver is generated
    again from the artifact's checked data: C source an artifact carries is never compiled, so
    an edited `driver/model.c` (a constructor added to it, say) runs nothing."""
    files = driver_files(compiled)
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
            _compile([cc, *(f for f in flags if f != "-shared"), "-c", f"-I{tmp}", f"-I{RUNNER_DIR}", f"-I{_machine_dir()}",
                      str(src), "-o", str(out)])  # fmt: skip
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
                      "-o", str(out)])  # fmt: skip
            os.replace(out, lib)  # atomic: a concurrent user never loads a half-written file
    except OSError as e:
        raise DriverUnavailable(f"cannot build the C driver in {folder}: {e}") from None
    return lib


# --------------------------------------------------------------------------------------------
# ctypes binding of runner/qaccel_runner.h


_WRITE = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p,
                          ctypes.c_uint32)  # fmt: skip
_READ = _WRITE
_HOST = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.c_int)


class _Host(ctypes.Structure):  # qaccel_host
    _fields_ = [("ctx", ctypes.c_void_p), ("write_slot", _WRITE), ("read_slot", _READ),
                ("host_ops", _HOST)]  # fmt: skip


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
                                       ctypes.c_uint32]  # fmt: skip
    lib.qaccel_runner_call.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(_Host)]
    lib.qaccel_runner_error.argtypes = [ctypes.c_void_p]
    lib.qaccel_runner_error.restype = ctypes.c_char_p
    lib.qaccel_runner_cycles.argtypes = [ctypes.c_void_p]
    lib.qaccel_runner_cycles.restype = ctypes.c_int64
    _LOADED[key] = lib
    return lib


class Runner:
    """One `qaccel_runner` of a driver library, every function's constants loaded."""

    def __init__(self, lib: ctypes.CDLL, compiled: CompiledModel):
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
        self.index: dict[str, int] = {}
        self.constants: dict[str, np.ndarray] = {}
        for name, fn in compiled.functions.items():
            k = lib.qaccel_runner_find(name.encode("utf-8", "surrogateescape"))
            if k < 0:
                raise DriverUnavailable(f"the C driver has no accelerator function @{name}")
            self.index[name] = k
            self.constants[name] = np.ascontiguousarray(fn.image[fn.arena_nbytes :])
            self._load(name)

    def _load(self, name: str) -> None:
        constants = self.constants[name]
        if self.lib.qaccel_runner_load(self.handle, self.index[name], constants.ctypes.data,
                                       constants.size):  # fmt: skip
            raise DriverError(self.error())

    last_error = ""  # the error of the last failed `call`

    def error(self) -> str:
        return self.lib.qaccel_runner_error(self.handle).decode("utf-8", "replace")

    def cycles(self) -> int:
        return int(self.lib.qaccel_runner_cycles(self.handle))

    def call(self, name: str, host: _Host) -> int:
        """`qaccel_runner_call`; after a failure the constants are loaded again (the error
        stays readable), so the runner remains usable."""
        rc = self.lib.qaccel_runner_call(self.handle, self.index[name], ctypes.byref(host))
        if rc != 0:
            error = self.error()
            self._load(name)
            self.last_error = error
        return rc

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
        """`func.call` of a compiled accelerator function: `qaccel_runner_call`, whose host
        steps call back here (slots from and into the interpreter's values, host segments on
        the interpreter); other calls as usual."""

        def __init__(self, compiled: CompiledModel, runner: Runner):
            super().__init__()
            self.compiled = compiled
            self.runner = runner
            self.plans: dict[str, tuple] = {}

        def _plan(self, name: str, interpreter: Interpreter):
            plan = self.plans.get(name)
            if plan is None:
                f, ops = function_body(interpreter, name)
                fn = self.compiled.functions[name]
                steps = function_steps(fn, ops)
                writer = {lay.output: lay for lay in fn.layers}
                plan = self.plans[name] = (f, ops, steps, writer)
            return plan

        def _run_op(self, interpreter: Interpreter, o: Operation, env) -> None:
            run_host_op(interpreter, o, env)

        @impl(func.CallOp)
        def run_call(self, interpreter: Interpreter, op: func.CallOp, args: tuple[Any, ...]):
            name = op.callee.string_value()
            fn = self.compiled.functions.get(name)
            if fn is None:
                return super().run_call(interpreter, op, args)
            f, ops, plan, writer = self._plan(name, interpreter)
            env: dict[SSAValue, Any] = dict(zip(f.body.block.args, args))
            for i in plan.host_constants:
                self._run_op(interpreter, ops[i], env)
            failure: list[BaseException] = []

            def guarded(body):
                def callback(*a):
                    try:
                        body(*a)
                        return 0
                    except BaseException as e:  # noqa: BLE001 - re-raised after the C call
                        failure.append(e)
                        return -1

                return callback

            def write_slot(_ctx, k, dst, nbytes):
                data = np.ascontiguousarray(env[resolve(fn.slots[k].value, ops, f)])
                data = data.reshape(-1).view(np.uint8)
                if data.size != nbytes:
                    raise CompileError(f"{name}: a tensor of {data.size} bytes for arena slot "
                                       f"{k} of {nbytes}")  # fmt: skip
                ctypes.memmove(dst, data.ctypes.data, nbytes)

            def read_slot(_ctx, k, src, nbytes):
                lay = writer[k]
                raw = np.empty(nbytes, np.uint8)
                ctypes.memmove(raw.ctypes.data, src, nbytes)
                result = ops[lay.anchor].results[0]
                shape = result.type.get_shape()
                if lay.offset is None:
                    y = raw.view(tensor_dtype(result.type)).reshape(shape)
                else:
                    y = (raw.view(np.int8).astype(np.int32) - np.int32(lay.offset)).reshape(shape)
                env[result] = y
                if lay.widened is not None:
                    env[ops[lay.widened].results[1]] = y.astype(np.int32)

            def host_ops(_ctx, segment):
                for i in plan.segments[segment]:
                    self._run_op(interpreter, ops[i], env)

            host = _Host(None, _WRITE(guarded(write_slot)), _READ(guarded(read_slot)),
                         _HOST(guarded(host_ops)))  # fmt: skip
            rc = self.runner.call(name, host)
            if failure:
                raise failure[0]
            if rc != 0:
                raise DriverError(self.runner.last_error)
            return tuple(env[v] for v in ops[-1].operands)

    return CDriverCalls


def open_runner(compiled: CompiledModel, artifact_dir: str | Path | None = None) -> Runner:
    """Build (or reuse) the driver library of `compiled` and open a runner on it."""
    return Runner(load_driver(build_driver(driver_sources(compiled, artifact_dir))), compiled)


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
