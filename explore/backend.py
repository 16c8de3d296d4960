"""The one place `explore` touches the VTA backend (`backends/vta/`: `codegen.py` compiles,
`compiled.py` holds the compiled model and `CompileError`, `artifact.py` writes and loads
artifact folders, `runtime.py` runs them); when the backend moves, only these imports
change.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qaccel.targets.vta.config import HardwareConfig


def backend_errors() -> tuple[type[Exception], ...]:
    """Exceptions of the backend that carry a one-line message for the user."""
    from qaccel.backends.vta.compiled import CompileError

    return (CompileError,)


def compile_for(module: Any, config: HardwareConfig | None,
                total_macs: int | None = None) -> Any:  # fmt: skip
    """Schedule and emit every accelerator layer of `module` (after `vta-pipeline`), exactly
    as `qaccel-compile` does: the `CompiledModel` (`.report` is report.json's content);
    `config` None: the module's `#accel.target`."""
    from qaccel.backends.vta.codegen import compile_module

    return compile_module(module, config, total_macs=total_macs)


def write_artifact(compiled: Any, outdir: str | Path, source: bytes | None = None,
                   extra: dict[str, bytes] | None = None) -> None:  # fmt: skip
    from qaccel.backends.vta.artifact import write_artifact as write

    write(compiled, outdir, source, extra)



def run_litert(compiled: Any, inputs: Sequence[np.ndarray], litert_path: str = "dispatch") -> list:
    """LiteRT runs the model for LiteRT of `compiled` (a compiled model or an artifact folder;
    the folder's own model when it has one, else exported into a temporary folder) the
    `litert_path` way (`backends/litert/paths.py`: "dispatch" or "custom-op"). Raises AotError
    or LiteRtError (one line)."""
    import tempfile

    from qaccel.backends.litert.paths import PATHS

    if litert_path not in PATHS:
        raise ValueError(f"litert_path is one of {', '.join(PATHS)}, not {litert_path!r}")
    way = PATHS[litert_path]
    if isinstance(compiled, str | Path) and (Path(compiled) / way.model_file).is_file():
        return way.run(Path(compiled) / way.model_file, inputs)
    if isinstance(compiled, str | Path):
        compiled = load_artifact(compiled)
    with tempfile.TemporaryDirectory() as tmp:
        model = Path(tmp) / way.model_file
        model.write_bytes(way.export(compiled))
        return way.run(model, inputs)


def load_artifact(outdir: str | Path) -> Any:
    from qaccel.backends.vta.artifact import load_artifact as load

    return load(outdir)


def load_run_plan(outdir: str | Path, simulator: str = "c") -> Any:
    """The artifact's run plan (what `qaccel-run OUTDIR` runs: numpy and the C machine), or
    None when it has none."""
    from qaccel.backends.vta.run_plan import load_run_plan as load

    return load(outdir, simulator)


def is_artifact(path: str | Path) -> bool:
    from qaccel.backends.vta.artifact_files import is_artifact as check

    return check(path)


def run_errors() -> tuple[type[Exception], ...]:
    """Exceptions of a run of an artifact (its run plan or the compiled model) on one input
    set that carry a one-line message: inputs of the wrong shape or type, a layer or kernel
    that failed on these values."""
    import sys

    from qaccel.backends.vta.run_plan import RunPlanError
    from qaccel.kernels.base import KernelError, Refusal
    from qaccel.targets.vta.simulation_result import SimulationError

    errors: tuple[type[Exception], ...] = (RunPlanError, KernelError, Refusal, SimulationError)
    prepare = sys.modules.get("qaccel.interpreter.prepare")  # the interpreter's, if it ran:
    if prepare is not None:  # a run plan never imports it (nor xDSL)
        errors += (prepare.ExecutionError,)
    return errors


def run_compiled(compiled: Any, inputs: Sequence[np.ndarray],
                 simulator: str = "c") -> list[np.ndarray]:  # fmt: skip
    """Host ops on the interpreter, accelerator layers on the simulator (`c`: libqaccel_vta,
    falling back to `python`, the reference)."""
    from qaccel.backends.vta.runtime import run_compiled as run

    return run(compiled, inputs, simulator=simulator)
