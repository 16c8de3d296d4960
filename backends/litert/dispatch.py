"""Run a DISPATCH_OP AOT model (`model.qaccel.dispatch.tflite`) with LiteRT's own Python API and
our dispatch library, the NPU vendors' path:

    outputs = run_dispatch("OUTDIR/model.qaccel.dispatch.tflite", inputs)

LiteRT (`ai_edge_litert`'s `CompiledModel`, NPU | CPU accelerators, CPU kernels in reference
mode) loads `libLiteRtDispatch_Qaccel` from the environment's dispatch library directory and
hands it every DISPATCH_OP's bytecode (a qaccel program); the library runs the programs on
libqaccel_vta, LiteRT's CPU kernels run the rest. The library is built from
`kernel/qaccel_dispatch.c`, the program runner `backends/vta/program/qaccel_program.c` and libqaccel_vta's
sources: by `pip install` into `libdispatch/` (setup.py), or else on first use into the
per-user cache directory, keyed by the sources' digest (`runtime.py`); LiteRT takes a
directory, so the library is alone in its own. `QACCEL_LITERT_DISPATCH_DIR` names a prebuilt
one's directory.

LiteRT initializes its dispatch API once per process, with the first dispatch library an
NPU model loads: a process that ran another vendor's library first cannot switch. A run in
which LiteRT did not call our library is therefore an error, not a silent fallback. Errors
are one line: our library's own message (qaccel_litert_last_error, read from the library
LiteRT loaded), else LiteRT's first ERROR log line, else its exception.
"""

from __future__ import annotations

import ctypes as C
import os
import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from qaccel.backends.litert.runtime import (
    DISPATCH_SOURCES,
    LiteRtError,
    _captured_stderr,
    built_library,
    cache_dir,
    checked_inputs,
    is_current,
    source_hash,
)

LIB_NAME = "libLiteRtDispatch_Qaccel.so"
BUILT_HERE = Path(__file__).with_name("libdispatch")


def dispatch_library_dir() -> Path:
    """The directory LiteRT loads libLiteRtDispatch_Qaccel from: `QACCEL_LITERT_DISPATCH_DIR`,
    else `libdispatch/` when `pip install` built it from the current sources, else the cache
    directory (built there on first use)."""
    explicit = os.environ.get("QACCEL_LITERT_DISPATCH_DIR")
    if explicit:
        return Path(explicit)
    built = BUILT_HERE.glob("libLiteRtDispatch_Qaccel*.so")
    if any(is_current(p, DISPATCH_SOURCES) for p in built):
        return BUILT_HERE
    path = cache_dir() / f"litert-dispatch-{source_hash(DISPATCH_SOURCES)}" / LIB_NAME
    return built_library(path, DISPATCH_SOURCES).parent


def _library(directory: Path):
    """Our dispatch library in `directory`, loaded by path: the object LiteRT loads too."""
    found = sorted(directory.glob("libLiteRtDispatch_Qaccel*.so"))
    if not found:
        raise LiteRtError(f"no {LIB_NAME} in {directory}")
    try:
        lib = C.CDLL(str(found[0]))
        lib.qaccel_litert_last_error.restype = C.c_char_p
        lib.qaccel_litert_clear_error.restype = None
        lib.qaccel_dispatch_invocations.restype = C.c_long
    except (OSError, AttributeError) as e:
        raise LiteRtError(f"cannot load {found[0]}: {e}") from None
    return lib


_LOCATION = re.compile(r"ERROR: \[[^\]]*\]")


def _litert_message(model: Path, failure: str | None, log: list[str]) -> str:
    """One line for a LiteRT failure: the deepest cause its exception names (its message is a
    chain of causes, one per "└" line), else its first ERROR log line that says something after
    the source location, else the exception."""
    text = failure or ""
    chain = [c.strip() for c in text.split("└")]
    causes = [c for c in chain if c and not _LOCATION.fullmatch(c)]
    if len(chain) > 2 and causes:
        return f"LiteRT: {' '.join(causes[-1].split())}"
    for line in log:
        said = _LOCATION.sub("", line, count=1).strip() if _LOCATION.match(line) else ""
        if said and not said.startswith("ERROR"):
            return f"LiteRT: {' '.join(said.split())}"
    return f"LiteRT failed on '{model}': {' '.join(text.split()) or 'no reason given'}"


def run_dispatch(model: str | Path, inputs: Sequence[np.ndarray],
                 quiet: bool = True) -> list[np.ndarray]:  # fmt: skip
    """Run the DISPATCH_OP model `model` with LiteRT and libLiteRtDispatch_Qaccel; its outputs.
    `quiet`: LiteRT's log lines are dropped (the first ERROR line completes an error)."""
    model = Path(model)
    require_litert_api()
    from qaccel.backends.litert.model_io import custom_code_counts, model_io
    from qaccel.backends.litert.names import DISPATCH_CODE

    data = model.read_bytes()
    try:
        n_ops = custom_code_counts(data)[DISPATCH_CODE]
        ins, outs = model_io(data)
    except ValueError as e:
        raise LiteRtError(f"'{model}': {e}") from None
    del data
    arrays = checked_inputs(model, inputs, ins)
    directory = dispatch_library_dir()
    lib = _library(directory)
    lib.qaccel_litert_clear_error()
    before = lib.qaccel_dispatch_invocations()
    with _captured_stderr(quiet) as log:
        results, failure = run_compiled_model(model, arrays, outs,
                                              dispatch_library_path=str(directory))
    ours = lib.qaccel_litert_last_error().decode()
    if failure is not None or ours:
        raise LiteRtError(ours or _litert_message(model, failure, log))
    ran = lib.qaccel_dispatch_invocations() - before
    if ran != n_ops:
        raise LiteRtError(f"LiteRT ran {ran} of the {n_ops} DISPATCH_OP(s) of '{model}' with "
                          f"{directory}: did this process load another dispatch library first?")
    return results


def require_litert_api() -> None:
    """LiteRT's CompiledModel API is importable, or LiteRtError (one line)."""
    try:
        import ai_edge_litert.compiled_model  # noqa: F401
    except ImportError as e:
        raise LiteRtError(f"LiteRT's Python API is not available (pip install "
                          f"ai-edge-litert): {e}") from None  # fmt: skip


def run_compiled_model(model: Path, arrays, outs, **environment: str):
    """One run of `model` by LiteRT's CompiledModel (NPU | CPU, reference CPU kernels, one
    thread) in `Environment.create(**environment)`: (outputs, None), or (None, the failure in
    one line). Call it inside `_captured_stderr`: every LiteRT object is released here, so that
    LiteRT's teardown logs are captured too."""
    from ai_edge_litert.compiled_model import CompiledModel
    from ai_edge_litert.cpu_kernel_mode import CpuKernelMode
    from ai_edge_litert.cpu_options import CpuOptions
    from ai_edge_litert.environment import Environment
    from ai_edge_litert.hardware_accelerator import HardwareAccelerator
    from ai_edge_litert.options import Options

    env = compiled = in_bufs = out_bufs = None
    try:
        env = Environment.create(**environment)
        cpu = CpuOptions(num_threads=1, kernel_mode=CpuKernelMode.REFERENCE)
        options = Options(HardwareAccelerator.NPU | HardwareAccelerator.CPU, cpu_options=cpu)
        compiled = CompiledModel.from_file(str(model), environment=env, options=options)
        in_bufs = compiled.create_input_buffers(0)
        out_bufs = compiled.create_output_buffers(0)
        for k, x in enumerate(arrays):
            in_bufs[k].write(x)
        compiled.run_by_index(0, in_bufs, out_bufs)
        return [buf.read(int(np.prod(shape)), np.dtype(dtype)).reshape(shape)
                for buf, (shape, dtype) in zip(out_bufs, outs)], None  # fmt: skip
    except Exception as e:  # LiteRT's wrappers raise RuntimeError, ValueError, ...
        return None, str(e) or type(e).__name__  # not the traceback: it holds LiteRT objects
    finally:
        del env, compiled, in_bufs, out_bufs


__all__ = ["LIB_NAME", "dispatch_library_dir", "require_litert_api", "run_compiled_model",
           "run_dispatch"]
