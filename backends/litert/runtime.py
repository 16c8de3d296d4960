"""Run an AOT model (`model.qaccel.tflite`) with LiteRT itself: ctypes on the wheel's
`libLiteRt.so`, the CPU kernels in reference mode, our QACCEL_VTA kernel registered.

    outputs = run_litert("OUTDIR/model.qaccel.tflite", inputs)

The kernel, `libqaccel_litert.so`, is built from `kernel/qaccel_kernel.c`,
`kernel/qaccel_litert_common.c`, the program runner (`backends/vta/program/qaccel_program.c`)
and libqaccel_vta's sources (`targets/vta/machine/`): by `pip
install` (setup.py, optional, next to this file) or else on first use with the system C
compiler into the per-user cache directory (`QACCEL_CACHE_DIR`, else `~/.cache/qaccel`), keyed
by the sources' digest; a library built from other sources is not used.
`QACCEL_LITERT_KERNEL_LIB` names a prebuilt one. The dispatch library of the DISPATCH_OP path
(`dispatch.py`) is built the same way (`build_library`). It links no LiteRT: it resolves LiteRT's
functions at run time from the library we run (`qaccel_litert_bind`), so building it needs
no LiteRT and a missing function is one error naming it. The Python `CompiledModel` of
ai_edge_litert cannot take custom ops (and runs a separate copy of the runtime), hence ctypes.

LiteRT ignores what a custom kernel's Run returns: after creating the compiled model and after
every run we read the kernel's own error (`qaccel_litert_last_error`).
"""

from __future__ import annotations

import contextlib
import ctypes as C
import os
import sys
import tempfile
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from qaccel.targets import cbuild

KERNEL_DIR = Path(__file__).with_name("kernel")
PROGRAM_DIR = Path(__file__).parents[1] / "vta" / "program"
MACHINE_DIR = Path(__file__).parents[2] / "targets" / "vta" / "machine"
# The C sources of each library, then the headers they include (all hashed, in this order;
# setup.py builds the same lists).
SOURCES = (KERNEL_DIR / "qaccel_kernel.c", KERNEL_DIR / "qaccel_litert_common.c",
           PROGRAM_DIR / "qaccel_program.c", MACHINE_DIR / "vta_machine.c",
           KERNEL_DIR / "qaccel_litert_api.h", KERNEL_DIR / "qaccel_litert_common.h",
           PROGRAM_DIR / "qaccel_program.h", MACHINE_DIR / "vta_machine.h")  # fmt: skip
DISPATCH_SOURCES = (KERNEL_DIR / "qaccel_dispatch.c", KERNEL_DIR / "qaccel_litert_common.c",
                    PROGRAM_DIR / "qaccel_program.c", MACHINE_DIR / "vta_machine.c",
                    KERNEL_DIR / "qaccel_dispatch_api.h", KERNEL_DIR / "qaccel_litert_api.h",
                    KERNEL_DIR / "qaccel_litert_common.h", PROGRAM_DIR / "qaccel_program.h",
                    MACHINE_DIR / "vta_machine.h")  # fmt: skip
# Every C library's flags (targets/cbuild.py), and: only the exported API visible, no
# undefined symbol left.
EXTRA_FLAGS = ("-fvisibility=hidden", "-Wl,-z,defs")
CFLAGS = (*cbuild.CFLAGS, *cbuild.SHARED_FLAGS, *EXTRA_FLAGS)
LIB_NAME = "libqaccel_litert.so"
# The LiteRT C functions the runner calls (the kernel resolves its own, also by name).
RUNNER_API = (
    "LiteRtCreateEnvironment", "LiteRtDestroyEnvironment", "LiteRtCreateModelFromFile",
    "LiteRtDestroyModel", "LiteRtCreateOptions", "LiteRtDestroyOptions",
    "LiteRtSetOptionsHardwareAccelerators", "LiteRtCreateCompiledModel",
    "LiteRtDestroyCompiledModel", "LiteRtRunCompiledModel",
    "LiteRtCreateTensorBufferFromHostMemory", "LiteRtDestroyTensorBuffer",
)  # fmt: skip
_ELEMENT_TYPES = {np.dtype(np.float32): 1, np.dtype(np.int32): 2, np.dtype(np.uint8): 3,
                  np.dtype(np.int64): 4, np.dtype(np.int16): 7, np.dtype(np.int8): 9}  # fmt: skip
P = C.c_void_p


class LiteRtError(Exception):
    """LiteRT or the QACCEL_VTA kernel failed (one line for the user)."""


class _Layout(C.Structure):
    _fields_ = [("rank_bits", C.c_uint32), ("dimensions", C.c_int32 * 8),
                ("strides", C.c_uint32 * 8)]  # fmt: skip


class _RankedType(C.Structure):
    _fields_ = [("element_type", C.c_int), ("layout", _Layout)]


def litert_library() -> Path:
    """The wheel's libLiteRt.so (`QACCEL_LITERT_LIB` overrides it)."""
    explicit = os.environ.get("QACCEL_LITERT_LIB")
    if explicit:
        return Path(explicit)
    try:
        import ai_edge_litert
    except ImportError:
        raise LiteRtError("LiteRT is not installed (pip install ai-edge-litert)") from None
    return Path(ai_edge_litert.__file__).with_name("libLiteRt.so")


def source_hash(sources: Sequence[Path] = SOURCES) -> str:
    return cbuild.source_hash(sources)


def build_library(out: Path, sources: Sequence[Path], cc: str | None = None,
                  defines: dict | None = None) -> Path:
    """Compile the C files of `sources` into the shared library `out` (C99, every warning an
    error, no undefined symbol; `defines`: more macros); raises CalledProcessError/OSError."""
    digest = source_hash(sources)
    return cbuild.build_shared(out, sources, include_dirs=(KERNEL_DIR, PROGRAM_DIR, MACHINE_DIR),
                               defines={"QACCEL_LITERT_SOURCE_HASH": digest,
                                        "VTA_SOURCE_HASH": digest, **(defines or {})},
                               extra_flags=EXTRA_FLAGS, libraries=("dl", "m", "pthread"),
                               cc=cc)  # fmt: skip


def build_kernel(out_dir, cc: str | None = None) -> Path:
    """Compile libqaccel_litert.so into `out_dir` (raises CalledProcessError/OSError)."""
    return build_library(Path(out_dir) / LIB_NAME, SOURCES, cc)


def cache_dir() -> Path:
    """The per-user directory of libraries built on first use."""
    return cbuild.cache_root()


def built_library(path: Path, sources: Sequence[Path], defines: dict | None = None) -> Path:
    """`path`, compiled first if it is missing; raises LiteRtError naming the compiler's
    complaint."""
    failure = cbuild.build_once(path, lambda out: build_library(out, sources, defines=defines))
    if failure is not None:
        raise LiteRtError(f"cannot build {path.name}: {failure}")
    return path


def is_current(path: Path, sources: Sequence[Path]) -> bool:
    """Whether the library at `path` was built from the current `sources`."""
    return cbuild.is_stamped(path, "qaccel_litert_source_hash", source_hash(sources))


def _built_here() -> Path | None:
    """The library `pip install` built next to this file (setup.py), if it is current."""
    for path in sorted(Path(__file__).parent.glob("_qaccel_litert*.so")):
        if is_current(path, SOURCES):
            return path
    return None


def kernel_library() -> Path:
    """libqaccel_litert: `QACCEL_LITERT_KERNEL_LIB`, else the one `pip install` built (when
    built from the current sources), else compiled on first use into the cache directory."""
    explicit = os.environ.get("QACCEL_LITERT_KERNEL_LIB")
    if explicit:
        return Path(explicit)
    here = _built_here()
    if here is not None:
        return here
    return built_library(cache_dir() / f"litert-kernel-{source_hash()}" / LIB_NAME, SOURCES)


_loaded: dict[str, tuple] = {}
_kernel_lib: list = []


def _kernel():
    """libqaccel_litert, loaded once per process (its error channel is process-wide)."""
    if not _kernel_lib:
        _kernel_lib.append(C.CDLL(str(kernel_library())))
    return _kernel_lib[0]


def _fn(lib, name, res, *args):
    f = getattr(lib, name)
    f.restype, f.argtypes = res, list(args)
    return f


def load(litert: str | Path | None = None):
    """(LiteRT library, kernel library), both bound; raises LiteRtError naming a missing
    library or C API function."""
    path = str(litert or litert_library())
    if path in _loaded:
        lrt, kern = _loaded[path]
        kern.qaccel_litert_clear_error()
        if kern.qaccel_litert_bind(path.encode()):  # the kernel may have been bound elsewhere
            raise LiteRtError(kern.qaccel_litert_last_error().decode())
        return lrt, kern
    try:
        lrt = C.CDLL(path)
    except OSError as e:
        raise LiteRtError(f"cannot load LiteRT: {e}") from None
    for name in RUNNER_API:
        if not hasattr(lrt, name):
            raise LiteRtError(f"{path}: the LiteRT C API lacks {name}")
    kern = _kernel()
    _fn(kern, "qaccel_litert_bind", C.c_int, C.c_char_p)
    _fn(kern, "qaccel_litert_last_error", C.c_char_p)
    _fn(kern, "qaccel_litert_clear_error", None)
    _fn(kern, "qaccel_litert_register", C.c_int, P)
    _fn(kern, "qaccel_litert_set_cpu_kernel_mode", C.c_int, P, C.c_char_p)
    _fn(kern, "qaccel_litert_runs", C.c_int)
    kern.qaccel_litert_clear_error()
    if kern.qaccel_litert_bind(path.encode()):
        raise LiteRtError(kern.qaccel_litert_last_error().decode())
    _fn(lrt, "LiteRtCreateEnvironment", C.c_int, C.c_int, P, C.POINTER(P))
    _fn(lrt, "LiteRtDestroyEnvironment", None, P)
    _fn(lrt, "LiteRtCreateModelFromFile", C.c_int, P, C.c_char_p, C.POINTER(P))
    _fn(lrt, "LiteRtDestroyModel", None, P)
    _fn(lrt, "LiteRtCreateOptions", C.c_int, C.POINTER(P))
    _fn(lrt, "LiteRtDestroyOptions", None, P)
    _fn(lrt, "LiteRtSetOptionsHardwareAccelerators", C.c_int, P, C.c_int)
    _fn(lrt, "LiteRtCreateCompiledModel", C.c_int, P, P, P, C.POINTER(P))
    _fn(lrt, "LiteRtDestroyCompiledModel", None, P)
    _fn(lrt, "LiteRtRunCompiledModel", C.c_int, P, C.c_size_t, C.c_size_t, C.POINTER(P),
        C.c_size_t, C.POINTER(P))  # fmt: skip
    _fn(lrt, "LiteRtCreateTensorBufferFromHostMemory", C.c_int, C.POINTER(_RankedType), P,
        C.c_size_t, P, C.POINTER(P))  # fmt: skip
    _fn(lrt, "LiteRtDestroyTensorBuffer", None, P)
    _loaded[path] = (lrt, kern)
    return lrt, kern


def _aligned(shape, dtype) -> np.ndarray:
    dtype = np.dtype(dtype)
    n = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
    raw = np.zeros(n + 64, np.uint8)
    off = (-raw.ctypes.data) % 64
    return raw[off : off + n].view(dtype).reshape(shape)


def _io_types(spec) -> tuple[list, list]:
    """(shape, dtype) of the entry subgraph's inputs and outputs of a model (its ModelSpec)."""
    sg = spec.subgraphs[0]
    return ([(sg.tensors[i].shape, sg.tensors[i].dtype) for i in sg.inputs],
            [(sg.tensors[i].shape, sg.tensors[i].dtype) for i in sg.outputs])  # fmt: skip


def checked_inputs(model: Path, inputs: Sequence[np.ndarray], ins: list) -> list[np.ndarray]:
    """`inputs` as C-ordered arrays (rank 0 kept), or LiteRtError when their number, shapes or
    dtypes are not the model's `ins` ((shape, dtype) pairs from `_io_types`)."""
    if len(inputs) != len(ins):
        raise LiteRtError(f"'{model}' takes {len(ins)} inputs, got {len(inputs)}")
    arrays = []
    for x, (shape, dtype) in zip(inputs, ins):
        x = np.asarray(x, order="C")
        if tuple(x.shape) != tuple(shape) or x.dtype != dtype:
            raise LiteRtError(f"'{model}': input of {x.dtype}{list(x.shape)}, the model takes "
                              f"{np.dtype(dtype)}{list(shape)}")  # fmt: skip
        arrays.append(x)
    return arrays


_stderr_lock = threading.Lock()
_stderr_capture: list = []  # [saved fd 2, temporary file, users] while any run captures


@contextlib.contextmanager
def _captured_stderr(enabled: bool):
    """LiteRT logs (INFO lines, its own errors) to file descriptor 2 and has no C API to quiet
    it: capture them; yields a list that holds the captured lines afterwards. File descriptor
    2 is the process's: runs in several threads share one capture (each gets the lines written
    while it ran, the others' included), and the last one to finish restores it."""
    lines: list[str] = []
    if not enabled:
        yield lines
        return
    with _stderr_lock:
        if not _stderr_capture:
            sys.stderr.flush()
            tmp = tempfile.TemporaryFile()
            saved = os.dup(2)
            os.dup2(tmp.fileno(), 2)
            _stderr_capture.extend([saved, tmp, 0])
        _stderr_capture[2] += 1
        tmp = _stderr_capture[1]
        start = os.lseek(2, 0, os.SEEK_CUR)
    try:
        yield lines
    finally:
        with _stderr_lock:
            end = os.lseek(2, 0, os.SEEK_CUR)
            text = os.pread(tmp.fileno(), max(0, end - start), start)
            _stderr_capture[2] -= 1
            if _stderr_capture[2] == 0:
                saved = _stderr_capture[0]
                os.dup2(saved, 2)
                os.close(saved)
                tmp.close()
                _stderr_capture.clear()
        lines.extend(text.decode("utf-8", "replace").splitlines())


def run_litert(
    model: str | Path,
    inputs: Sequence[np.ndarray],
    kernel_mode: str = "reference",
    litert: str | Path | None = None,
    quiet: bool = True,
) -> list[np.ndarray]:
    """Run `model` (an AOT `.tflite`, or any `.tflite`) with LiteRT, QACCEL_VTA registered.
    `quiet`: LiteRT's log lines are dropped, except that its first ERROR line completes a
    LiteRtError that only has a status."""
    with _captured_stderr(quiet) as log:
        try:
            return _run(model, inputs, kernel_mode, litert)
        except LiteRtError as e:
            failure = e
    errors = [line for line in log if line.startswith("ERROR")]
    if errors and "LiteRT status" in str(failure):
        raise LiteRtError(f"{failure}: {errors[0]}") from None
    raise failure


def _run(model, inputs, kernel_mode, litert) -> list[np.ndarray]:
    from qaccel.backends.litert.model_io import model_io

    model = Path(model)
    try:
        ins, outs = model_io(model.read_bytes())
    except ValueError as e:
        raise LiteRtError(f"'{model}': {e}") from None
    inputs = checked_inputs(model, inputs, ins)
    lrt, kern = load(litert)
    kern.qaccel_litert_clear_error()
    env, mdl, opts, cm = P(), P(), P(), P()
    buffers: list[P] = []
    keep: list[np.ndarray] = []

    def ok(status: int, what: str) -> None:
        err = kern.qaccel_litert_last_error().decode()
        if err:
            raise LiteRtError(err)
        if status != 0:
            raise LiteRtError(f"{what} failed with LiteRT status {status}")

    def host_buffer(arr: np.ndarray) -> P:
        t = _RankedType()
        if arr.dtype not in _ELEMENT_TYPES:
            raise LiteRtError(f"'{model}': a {arr.dtype} tensor (not supported by the runner)")
        t.element_type = _ELEMENT_TYPES[arr.dtype]
        t.layout.rank_bits = arr.ndim
        for i, d in enumerate(arr.shape):
            t.layout.dimensions[i] = d
        tb = P()
        ok(lrt.LiteRtCreateTensorBufferFromHostMemory(C.byref(t), arr.ctypes.data, arr.nbytes,
                                                       None, C.byref(tb)),
           "LiteRtCreateTensorBufferFromHostMemory")  # fmt: skip
        buffers.append(tb)
        return tb

    try:
        ok(lrt.LiteRtCreateEnvironment(0, None, C.byref(env)), "LiteRtCreateEnvironment")
        ok(lrt.LiteRtCreateModelFromFile(env, str(model).encode(), C.byref(mdl)),
           f"loading '{model}'")  # fmt: skip
        ok(lrt.LiteRtCreateOptions(C.byref(opts)), "LiteRtCreateOptions")
        ok(lrt.LiteRtSetOptionsHardwareAccelerators(opts, 1), "selecting the CPU")
        ok(kern.qaccel_litert_set_cpu_kernel_mode(opts, kernel_mode.encode()), "CPU options")
        ok(kern.qaccel_litert_register(opts), "registering QACCEL_VTA")
        ok(lrt.LiteRtCreateCompiledModel(env, mdl, opts, C.byref(cm)),
           f"compiling '{model}' with LiteRT")  # fmt: skip
        in_bufs = []
        for x, (shape, dtype) in zip(inputs, ins):
            a = _aligned(shape, dtype)
            a[...] = x
            keep.append(a)
            in_bufs.append(host_buffer(a))
        results = [_aligned(shape, dtype) for shape, dtype in outs]
        out_bufs = [host_buffer(y) for y in results]
        in_arr, out_arr = (P * len(in_bufs))(*in_bufs), (P * len(out_bufs))(*out_bufs)
        ok(lrt.LiteRtRunCompiledModel(cm, 0, len(in_bufs), in_arr, len(out_bufs), out_arr),
           f"running '{model}'")  # fmt: skip
        return [np.array(y) for y in results]
    finally:
        for tb in buffers:
            lrt.LiteRtDestroyTensorBuffer(tb)
        if cm:
            lrt.LiteRtDestroyCompiledModel(cm)
        if opts:
            lrt.LiteRtDestroyOptions(opts)
        if mdl:
            lrt.LiteRtDestroyModel(mdl)
        if env:
            lrt.LiteRtDestroyEnvironment(env)


__all__ = ["LiteRtError", "build_kernel", "build_library", "kernel_library", "litert_library",
           "load", "run_litert"]  # fmt: skip
