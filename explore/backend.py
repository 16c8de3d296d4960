"""The one place `explore` touches the VTA backend (`backends/vta/compile.py`).

`backends/vta/compile.py` is being split into compile/artifact/runtime/report modules; when it
moves, only the imports in these small functions change.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from qaccel.targets.vta.config import HardwareConfig


def backend_errors() -> tuple[type[Exception], ...]:
    """Exceptions of the backend that carry a one-line message for the user."""
    from qaccel.backends.vta.compile import CompileError

    return (CompileError,)


def compile_for(module: Any, config: HardwareConfig, total_macs: int | None = None) -> Any:
    """Schedule and emit every accelerator layer of `module` (after `vta-pipeline`), exactly
    as `qaccel-compile` does: the `CompiledModel` (`.report` is report.json's content)."""
    from qaccel.backends.vta.compile import compile_module

    return compile_module(module, config, total_macs=total_macs)


def write_artifact(compiled: Any, outdir: str | Path, source: bytes | None = None) -> None:
    from qaccel.backends.vta import compile as backend

    backend.write_artifact(compiled, outdir, source)


def load_artifact(outdir: str | Path) -> Any:
    from qaccel.backends.vta.compile import load_artifact as load

    return load(outdir)


def is_artifact(path: str | Path) -> bool:
    from qaccel.backends.vta.compile import is_artifact as check

    return check(path)


def run_compiled(compiled: Any, inputs: Sequence[np.ndarray],
                 simulator: str = "c") -> list[np.ndarray]:  # fmt: skip
    """Host ops on the interpreter, accelerator layers on the simulator (`c`: libqaccel_vta,
    falling back to `python`, the reference)."""
    from qaccel.backends.vta.compile import run_compiled as run

    return run(compiled, inputs, simulator=simulator)
