"""Run a sweep: every model at every point of a `SweepSpec`, on an executor, cached.

    result = run_sweep(["tests/fixtures/models"], SweepSpec.load("spec.yaml"), "out")
    print(result.table.frontier_summary())

With an output folder, finished points are appended to `OUTDIR/results.jsonl` as they
arrive and a rerun computes only the points missing there; at the end the table
(`table.csv`, `table.jsonl`, `table.parquet` with pyarrow), the Pareto plots (with
matplotlib: `pareto.png`, cycles against on-chip SRAM, and `energy.png`, energy per inference
against latency) and both frontiers (`frontier.txt`) are written.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from qaccel.explore.evaluate import empty_row, evaluate_point
from qaccel.explore.executors import LocalExecutor, RayExecutor, TaskFailed
from qaccel.explore.result_store import ResultStore, ResultTable, content_hash, point_key
from qaccel.explore.spec import Point, SweepSpec


class SweepError(ValueError):
    """Bad sweep input (no models, an unreadable model): one line."""


def collect_models(sources: Iterable[str | Path | tuple[str, bytes]]) -> dict[str, bytes]:
    """Model name -> `.tflite` bytes, from files, folders of `.tflite` files (sorted), or
    (name, bytes) pairs. Names are file stems, made unique with the parent folder."""
    found: list[tuple[str, Path | bytes]] = []
    for source in sources:
        if isinstance(source, tuple):
            found.append(source)
            continue
        path = Path(source)
        if path.is_dir():
            files = sorted(path.glob("*.tflite"))
            if not files:
                raise SweepError(f"{path}: no .tflite models in this folder")
            found.extend((f.stem, f) for f in files)
        elif path.is_file():
            if path.suffix != ".tflite":
                raise SweepError(f"{path}: expected a .tflite model or a folder of them")
            found.append((path.stem, path))
        else:
            raise SweepError(f"{path}: no such model file or folder")
    if not found:
        raise SweepError("no models given")
    models: dict[str, bytes] = {}
    for name, src in found:
        if isinstance(src, Path):
            try:
                data = src.read_bytes()
            except OSError as e:
                raise SweepError(f"cannot read model '{src}': {e.strerror}") from None
            if name in models and models[name] != data:
                name = f"{src.parent.name}/{src.stem}"
        else:
            data = src
        models[name] = data
    return models


@dataclass
class SweepResult:
    table: ResultTable
    computed: int = 0
    """Points evaluated by this run (the others came from the result store)."""
    cached: int = 0
    files: list[Path] = field(default_factory=list)


def _evaluate_task(models: dict[str, bytes], task: tuple[str, Point, float | None]) -> dict:
    name, point, timeout_s = task
    return evaluate_point(name, models[name], point, timeout_s)


def run_sweep(
    models: Sequence[str | Path | tuple[str, bytes]] | dict[str, bytes],
    spec: SweepSpec,
    outdir: str | Path | None = None,
    executor: LocalExecutor | RayExecutor | None = None,
    *,
    progress: bool = False,
    timeout_s: float | None = None,
    plot: bool = True,
    on_row: Callable[[dict[str, Any]], None] | None = None,
) -> SweepResult:
    """Evaluate every model at every point; rows in (model, point) order."""
    named = models if isinstance(models, dict) else collect_models(models)
    points = spec.points()
    executor = executor or LocalExecutor()
    store = ResultStore(Path(outdir) / "results.jsonl") if outdir is not None else None
    hashes = {name: content_hash(data) for name, data in named.items()}
    keys: list[str] = []
    pending: list[tuple[str, tuple[str, Point, float | None]]] = []
    for name in named:
        for point in points:
            key = point_key(hashes[name], point.as_dict())
            keys.append(key)
            if store is None or not _done(store.rows.get(key), timeout_s):
                pending.append((key, (name, point, timeout_s)))
    rows: dict[str, dict[str, Any]] = {}
    if store is not None:
        rows.update({k: store.rows[k] for k in keys if _done(store.rows.get(k), timeout_s)})
    bar = _progress_bar(len(keys), len(keys) - len(pending), progress)
    failures = 0
    try:
        needed = {pending[i][1][0] for i in range(len(pending))}
        shared = {n: d for n, d in named.items() if n in needed}
        for index, row in executor.map(_evaluate_task, shared, [t for _, t in pending]):
            key, (name, point, _) = pending[index]
            if isinstance(row, TaskFailed):  # not stored: a rerun tries the point again
                row = {**empty_row(name, point), "status": f"worker failed: {row.reason}"}
            elif store is not None:
                store.append({**row, "key": key})
            row["key"] = key
            rows[key] = row
            if on_row is not None:
                on_row(row)
            failures += row["status"] != "ok"
            if bar is not None:
                bar.set_postfix(failed=failures, refresh=False)
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()
    table = ResultTable(rows[k] for k in keys if k in rows)
    result = SweepResult(table, len(pending), len(keys) - len(pending))
    if outdir is not None:
        result.files = table.write(outdir)
        summary = Path(outdir) / "frontier.txt"
        summary.write_text(table.frontier_summary() + "\n"
                           + table.energy_frontier_summary() + "\n")  # fmt: skip
        result.files.append(summary)
        if plot and table.ok:
            try:
                table.plot_pareto(Path(outdir) / "pareto.png")
                result.files.append(Path(outdir) / "pareto.png")
                if table.pareto("ms", "energy_uj"):
                    table.plot_pareto(Path(outdir) / "energy.png", "ms", "energy_uj")
                    result.files.append(Path(outdir) / "energy.png")
            except ImportError:
                pass
    return result


def _done(row: dict[str, Any] | None, timeout_s: float | None) -> bool:
    """Whether a stored row stands: a point that timed out is tried again with a longer (or
    no) time limit."""
    if row is None:
        return False
    limit = re.fullmatch(r"timeout: compiling took more than (\S+) s", str(row.get("status")))
    if limit:
        return timeout_s is not None and timeout_s <= float(limit.group(1))
    return True


def _progress_bar(total: int, done: int, enabled: bool):
    if not enabled:
        return None
    from tqdm import tqdm

    tqdm.monitor_interval = 0  # no monitor thread in a process that forks workers
    return tqdm(total=total, initial=done, desc="sweep", unit="pt", dynamic_ncols=True,
                postfix={"failed": 0})  # fmt: skip
