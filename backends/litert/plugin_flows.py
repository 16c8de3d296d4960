"""LiteRT's two compiler-plugin flows with qaccel's plugin, `libLiteRtCompilerPlugin_Qaccel`
(`plugin/qaccel_plugin.c`, built by `pip install` into `libplugin/`):

    apply_plugin("model.tflite", "model.npu.tflite")   # AOT: the wheel's apply_plugin_main
    outputs = run_on_device("model.tflite", inputs)     # on-device: CompiledModel compiles it

AOT writes the original model with each accelerator partition replaced by a DISPATCH_OP whose
bytecode is a qaccel program; `dispatch.run_dispatch` runs it. On-device, `CompiledModel` of the
ORIGINAL model with an environment naming both our plugin's and our dispatch library's
directories and NPU | CPU accelerators calls the plugin (Partition, Compile) and then runs the
programs through the dispatch library, LiteRT's reference CPU kernels running the rest.

In that flow LiteRT falls back to its CPU kernels when the plugin fails, with only a log line:
`run_on_device` therefore checks that the plugin compiled and that the dispatch library ran
every program it returned, and raises `LiteRtError` with one line otherwise ("the compiler
plugin failed: ...; LiteRT would have run the model on the CPU"). The configuration is
`QACCEL_PLUGIN_CONFIG` (`config=` sets it for the call), the compile cache `QACCEL_PLUGIN_CACHE`.
"""

from __future__ import annotations

import ctypes as C
import os
import subprocess
from collections.abc import Sequence
from contextlib import contextmanager
from pathlib import Path

import numpy as np

from qaccel.backends.litert.dispatch import _library as _dispatch_library
from qaccel.backends.litert.dispatch import (
    dispatch_library_dir,
    require_litert_api,
    run_compiled_model,
)
from qaccel.backends.litert.runtime import LiteRtError, _captured_stderr, _io_types, checked_inputs

PLUGIN_DIR = Path(__file__).with_name("libplugin")
SOC_MANUFACTURER, SOC_MODEL = "Qaccel", "VTA"


def plugin_library_dir() -> Path:
    """The directory holding libLiteRtCompilerPlugin_Qaccel (what LiteRT takes)."""
    override = os.environ.get("QACCEL_LITERT_PLUGIN_DIR")
    directory = Path(override) if override else PLUGIN_DIR
    if not list(directory.glob("libLiteRtCompilerPlugin_Qaccel*.so")):
        raise LiteRtError(f"no libLiteRtCompilerPlugin_Qaccel*.so in {directory} (pip install "
                          "qaccel again with a C compiler)")
    return directory


def plugin_library() -> C.CDLL:
    """The plugin library as LiteRT loads it (the same object: dlopen by the same path)."""
    path = sorted(plugin_library_dir().glob("libLiteRtCompilerPlugin_Qaccel*.so"))[0]
    lib = C.CDLL(str(path))
    lib.qaccel_plugin_last_error.restype = C.c_char_p
    for name in ("qaccel_plugin_partition_calls", "qaccel_plugin_compile_calls",
                 "qaccel_plugin_last_programs", "qaccel_plugin_selected_ops"):
        getattr(lib, name).restype = C.c_long
    return lib


def apply_plugin_main() -> Path:
    """The wheel's `apply_plugin_main` binary."""
    try:
        import ai_edge_litert
    except ImportError as e:
        raise LiteRtError(f"LiteRT's Python API is not available (pip install ai-edge-litert): "
                          f"{e}") from None
    tool = Path(ai_edge_litert.__file__).parent / "tools" / "apply_plugin_main"
    if not tool.is_file():
        raise LiteRtError(f"this ai-edge-litert has no {tool.name}")
    return tool


@contextmanager
def _config_env(config: str | None):
    old = os.environ.get("QACCEL_PLUGIN_CONFIG")
    if config is not None:
        os.environ["QACCEL_PLUGIN_CONFIG"] = str(config)
    try:
        yield
    finally:
        if config is not None:
            if old is None:
                os.environ.pop("QACCEL_PLUGIN_CONFIG", None)
            else:
                os.environ["QACCEL_PLUGIN_CONFIG"] = old


def apply_plugin(model: str | Path, out: str | Path, config: str | None = None,
                 timeout: float = 600) -> Path:  # fmt: skip
    """AOT: `apply_plugin_main --cmd=apply` with our plugin; raises LiteRtError with our
    plugin's message (or apply_plugin_main's last line)."""
    cmd = [str(apply_plugin_main()), "--cmd=apply", f"--model={model}", f"--o={out}",
           f"--soc_manufacturer={SOC_MANUFACTURER}", f"--soc_model={SOC_MODEL}",
           f"--libs={plugin_library_dir()}", "--err=--"]  # fmt: skip
    env = dict(os.environ)
    if config is not None:
        env["QACCEL_PLUGIN_CONFIG"] = str(config)
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    log = (proc.stdout + proc.stderr).splitlines()
    if proc.returncode != 0 or not Path(out).is_file() or Path(out).stat().st_size == 0:
        if any("resulted in 0 partitions" in line for line in log) and not any(
                "resulted in" in line and "resulted in 0 partitions" not in line for line in log):
            kept = [line[len("qaccel plugin: "):] for line in log
                    if line.startswith("qaccel plugin: @")]  # fmt: skip
            why = f" ({kept[0]}{f', and {len(kept) - 1} more' if len(kept) > 1 else ''})" if kept else ""
            raise LiteRtError(f"qaccel puts no operator of {model} on the accelerator, and "
                              f"apply_plugin_main writes no model then{why}")
        ours = [line for line in log if line.startswith("qaccel plugin: error: ")]
        theirs = [line for line in log if "ERROR" in line or "Failed" in line]
        why = (ours[0][len("qaccel plugin: error: "):] if ours
               else theirs[-1] if theirs else f"exit status {proc.returncode}")  # fmt: skip
        raise LiteRtError(f"apply_plugin_main failed on {model}: {why}")
    return Path(out)


def run_on_device(model: str | Path, inputs: Sequence[np.ndarray], config: str | None = None,
                  quiet: bool = True) -> list[np.ndarray]:  # fmt: skip
    """On-device compilation: CompiledModel.from_file(model) with our plugin and dispatch
    library (NPU | CPU, reference CPU kernels); its outputs. Raises LiteRtError (one line) when
    the plugin failed or a program did not run in our dispatch library."""
    model = Path(model)
    require_litert_api()
    from qaccel.frontend.tflite_writer import read_model

    spec = read_model(model.read_bytes())
    ins, outs = _io_types(spec)
    arrays = checked_inputs(model, inputs, ins)
    plugin_dir, dispatch_dir = plugin_library_dir(), dispatch_library_dir()
    plugin, dispatch = plugin_library(), _dispatch_library(dispatch_dir)
    plugin.qaccel_plugin_clear_error()
    dispatch.qaccel_litert_clear_error()
    compiles, ran = plugin.qaccel_plugin_compile_calls(), dispatch.qaccel_dispatch_invocations()
    partitions, selected = plugin.qaccel_plugin_partition_calls(), plugin.qaccel_plugin_selected_ops()
    with _config_env(config), _captured_stderr(quiet) as log:
        results, failure = run_compiled_model(model, arrays, outs,
                                              compiler_plugin_path=str(plugin_dir),
                                              dispatch_library_path=str(dispatch_dir))
    plugin_error = plugin.qaccel_plugin_last_error().decode()
    if plugin_error:
        raise LiteRtError(f"the compiler plugin failed on {model}: {plugin_error} (LiteRT would "
                          "have run the model on the CPU)")
    ours = dispatch.qaccel_litert_last_error().decode()
    if failure is not None or ours:
        errors = [line for line in log if "ERROR" in line]
        raise LiteRtError(ours or failure or (errors[0] if errors else "LiteRT failed"))
    if plugin.qaccel_plugin_partition_calls() == partitions:
        raise LiteRtError(f"LiteRT did not call the compiler plugin for {model} (is it already "
                          "compiled, or was NPU not selected?)")
    if plugin.qaccel_plugin_selected_ops() == selected:
        raise LiteRtError(f"qaccel puts no operator of {model} on the accelerator: LiteRT ran it "
                          "on the CPU")
    if plugin.qaccel_plugin_compile_calls() == compiles:
        raise LiteRtError(f"LiteRT did not compile the partitions of {model} with the plugin")
    programs = plugin.qaccel_plugin_last_programs()
    done = dispatch.qaccel_dispatch_invocations() - ran
    if done < programs:  # a program in a loop body (WHILE) runs once per iteration
        raise LiteRtError(f"LiteRT ran {done} of the {programs} qaccel program(s) of {model} in "
                          f"{dispatch_dir}: did this process load another dispatch library first?")
    return results


__all__ = ["PLUGIN_DIR", "apply_plugin", "apply_plugin_main", "plugin_library",
           "plugin_library_dir", "run_on_device"]  # fmt: skip
