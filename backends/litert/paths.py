"""The two ways LiteRT runs a qaccel artifact, side by side: what `qaccel-run OUTDIR --runtime
litert --litert-path NAME`, `qaccel.api.run_litert(..., path=NAME)` and the tests choose from.

| NAME        | model in OUTDIR                  | accelerator op | run by (ours)             |
| ----------- | -------------------------------- | -------------- | ------------------------- |
| `dispatch`  | `model.qaccel.dispatch.tflite`   | `DISPATCH_OP`  | libLiteRtDispatch_Qaccel  |
| `custom-op` | `model.qaccel.tflite`            | `QACCEL_VTA`   | libqaccel_litert          |

Both run LiteRT in a child process (`isolated.py`): its crash is one line, not ours.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qaccel.backends.litert.names import AOT_FILE, CUSTOM_CODE, DISPATCH_CODE, DISPATCH_FILE


def export_dispatch(compiled) -> bytes:
    from qaccel.backends.litert.aot import export_dispatch

    return export_dispatch(compiled)


def export_aot(compiled) -> bytes:
    from qaccel.backends.litert.aot import export_aot

    return export_aot(compiled)


def _run_dispatch(model: Path, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    from qaccel.backends.litert.dispatch import run_dispatch
    from qaccel.backends.litert.isolated import run_isolated

    return run_isolated(run_dispatch, model, inputs)


def _run_custom_op(model: Path, inputs: Sequence[np.ndarray]) -> list[np.ndarray]:
    from qaccel.backends.litert.isolated import run_isolated
    from qaccel.backends.litert.runtime import run_litert

    return run_isolated(run_litert, model, inputs)


@dataclass(frozen=True)
class LiteRtPath:
    model_file: str  # in the artifact folder
    ops: str  # each accelerator function's op (its custom code), as a report line counts them
    library: str  # our library LiteRT runs those ops with
    export: Callable  # compiled model -> the model's bytes (raises AotError)
    run: Callable[[Path, Sequence[np.ndarray]], list[np.ndarray]]  # raises LiteRtError


PATHS = {
    "dispatch": LiteRtPath(DISPATCH_FILE, f"{DISPATCH_CODE}(s)",
                           "libLiteRtDispatch_Qaccel",
                           export_dispatch, _run_dispatch),
    "custom-op": LiteRtPath(AOT_FILE, f"{CUSTOM_CODE} op(s)", "libqaccel_litert",
                            export_aot, _run_custom_op),
}  # fmt: skip
__all__ = ["PATHS", "LiteRtPath"]
