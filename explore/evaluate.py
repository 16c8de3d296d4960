"""Evaluate one sweep point: import a model, run `vta-pipeline` for the point's hardware
configuration and options, compile it as `qaccel-compile` does, and read the timing model's
figures from the report. Never raises: a failing point is a row whose `status` is the one-line
reason.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import tempfile
import time
from typing import Any

from qaccel.explore.backend import backend_errors, compile_for
from qaccel.explore.spec import Point, sram_bytes

METRICS = (
    "cycles", "ms", "gemm_utilization", "executed_utilization", "roofline_ratio", "dram_bytes",
    "sram_bytes", "energy_uj", "energy_mac_uj", "energy_alu_uj", "energy_sram_uj",
    "energy_dram_uj", "host_fallback_ops", "accelerator_mac_share", "layers", "compile_s",
)  # fmt: skip
"""The columns every row has besides `model`, the point's parameters and `status`.
`gemm_utilization` counts the model's (useful) MACs, `executed_utilization` every MAC the
GEMM core performs (padding lanes, bias and zero-point GEMMs included); `energy_*_uj` are microjoules per inference on the
accelerator (the analytic model of `targets/vta/energy.py` at the point's per-operation
energies), in total and per component."""


def pipeline_spec(point: Point, config_path: str) -> str:
    """`vta-pipeline{config="..." bias-placement=... max-partitions=...}` for the point."""
    options = [f'config="{config_path}"']
    for key, value in point.pipeline_options:
        options.append(f"{key.replace('_', '-')}={value}")
    return "vta-pipeline{" + " ".join(options) + "}"


def one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    message = text[0] if text else type(e).__name__
    return message if _known(e) or isinstance(e, PointTimeout) else f"{type(e).__name__}: {message}"


def _known(e: BaseException) -> bool:
    from qaccel.frontend.tflite_import import TFLiteImportError
    from qaccel.pipeline.manager import PipelineError
    from qaccel.targets.vta.config import ConfigError
    from xdsl.utils.exceptions import DiagnosticException

    return isinstance(e, (*backend_errors(), PipelineError, TFLiteImportError,
                          DiagnosticException, ConfigError))  # fmt: skip


def import_model(data: bytes, name: str) -> Any:
    from qaccel.frontend.tflite_import import import_tflite

    return import_tflite(data, name)


def run_pipeline(module: Any, spec: Any) -> None:
    """Run a pass pipeline (text, a pass instance or a list of them; named pipelines
    expanded) on `module`, verifying after each pass."""
    from qaccel.pipeline.manager import (
        PassManager,
        available_passes,
        expand,
        pipeline_passes,
        qaccel_context,
    )

    available = available_passes()
    PassManager(list(expand(pipeline_passes(spec, available), available).passes)).run(
        qaccel_context(), module
    )


def empty_row(model: str, point: Point) -> dict[str, Any]:
    row: dict[str, Any] = {"model": model, **point.as_dict()}
    row.update(dict.fromkeys(METRICS))
    if point.config is not None:
        row["sram_bytes"] = sram_bytes(point.config)
    return row


class PointTimeout(BaseException):
    """A point that took longer than the sweep's per-point time limit. A BaseException, as
    KeyboardInterrupt is, so that no `except Exception` on the way swallows it."""


@contextlib.contextmanager
def _time_limit(seconds: float | None):
    """Raise `PointTimeout` after `seconds` (SIGALRM; only on a main thread, else no limit)."""
    import signal
    import threading

    if not seconds or threading.current_thread() is not threading.main_thread() or not hasattr(
        signal, "setitimer"
    ):
        yield
        return

    def expire(signum, frame):
        # Raised wherever the main thread is; if that is a finalizer (__del__, a weakref
        # callback), Python swallows the exception, so the timer fires again until the
        # point is given up.
        signal.setitimer(signal.ITIMER_REAL, 0.25)
        raise PointTimeout(f"timeout: compiling took more than {seconds:g} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def evaluate_point(
    model: str, data: bytes, point: Point, timeout_s: float | None = None
) -> dict[str, Any]:
    """The table row of `model` (its `.tflite` bytes) at `point`; `timeout_s` limits the
    point's compile (then its status is `timeout: ...`)."""
    row = empty_row(model, point)
    if point.refused is not None:
        row["status"] = point.refused
        return row
    from qaccel.dialects.macs import op_macs

    start = time.perf_counter()
    fd, path = tempfile.mkstemp(prefix="qaccel-sweep-", suffix=".json")
    try:
        with os.fdopen(fd, "w") as f:
            json.dump(point.config.to_dict(), f)
        # The passes' summaries (partition-graph's) would interleave across workers.
        with contextlib.redirect_stderr(io.StringIO()), _time_limit(timeout_s):
            module = import_model(data, model)
            total_macs = sum(op_macs(op) for op in module.walk())
            run_pipeline(module, pipeline_spec(point, path))
            compiled = compile_for(module, point.config, total_macs)
    except (Exception, PointTimeout) as e:  # a failing point is a row, never a crash
        row["status"] = one_line(e)
        row["compile_s"] = round(time.perf_counter() - start, 3)
        return row
    finally:
        os.unlink(path)
    t = compiled.report["totals"]
    row.update({
        "cycles": int(t["cycles"]), "ms": float(t["ms"]),
        "gemm_utilization": float(t["gemm_utilization"]),
        "roofline_ratio": float(t["roofline_ratio"]), "dram_bytes": int(t["dram_bytes"]),
        "host_fallback_ops": int(t["host_fallback_ops"]),
        "accelerator_mac_share": t.get("accelerator_mac_share"), "layers": int(t["layers"]),
        "compile_s": round(time.perf_counter() - start, 3), "status": "ok",
    })  # fmt: skip
    row.update(_energy_columns(t))
    return row


def _energy_columns(totals: dict[str, Any]) -> dict[str, Any]:
    """The row's utilization of executed MACs and energy columns (microjoules) from the report's
    totals."""
    row: dict[str, Any] = {"executed_utilization": totals.get("executed_utilization")}
    for key in ("", "mac_", "alu_", "sram_", "dram_"):
        value = totals.get(f"energy_{key}pj")
        row[f"energy_{key}uj"] = None if value is None else float(value) / 1e6
    return row
