"""Sweep results: the append-only result store (the cache that makes sweeps resumable), the
result table (CSV, JSON lines, Parquet, pandas), the Pareto frontier and its plot.

Every finished point is appended to `OUTDIR/results.jsonl` at once (one JSON object a line,
flushed), keyed by `point_key` (the model's content hash, the point's parameters and the
qaccel version), so an interrupted sweep loses nothing that finished and a rerun skips it. A
truncated last line (a sweep killed while writing) is ignored.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import qaccel


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def point_key(model_hash: str, params: dict[str, Any], version: str | None = None) -> str:
    """The cache key of a model (its content hash) at a point's parameters."""
    text = json.dumps({"model": model_hash, "params": params,
                       "qaccel": version or qaccel.__version__}, sort_keys=True)  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()[:24]


class ResultStore:
    """`results.jsonl`: rows by key; `append` writes (and flushes) one row."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.rows: dict[str, dict[str, Any]] = {}
        if self.path.exists():
            text = self.path.read_text()
            if text and not text.endswith("\n"):
                with self.path.open("a") as f:  # the next row starts on a line of its own
                    f.write("\n")
            for line in text.splitlines():
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a line cut short by an interrupted sweep
                if isinstance(row, dict) and "key" in row:
                    self.rows[row["key"]] = row

    def __contains__(self, key: str) -> bool:
        return key in self.rows

    def append(self, row: dict[str, Any]) -> None:
        self.rows[row["key"]] = row
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a") as f:
            f.write(json.dumps(row, sort_keys=True) + "\n")
            f.flush()
            os.fsync(f.fileno())


FIRST_COLUMNS = ("model",)
LAST_COLUMNS = ("cycles", "ms", "gemm_utilization", "executed_utilization", "roofline_ratio",
                "dram_bytes", "sram_bytes", "energy_uj", "energy_mac_uj", "energy_alu_uj",
                "energy_sram_uj", "energy_dram_uj", "host_fallback_ops",
                "accelerator_mac_share", "layers", "compile_s", "status", "key")  # fmt: skip


class ResultTable:
    """Rows (dicts) of a sweep: `model`, the parameters, the figures, `status` (`ok` or the
    one-line reason), `key`. A list of dicts is what pandas takes: `to_pandas()`."""

    def __init__(self, rows: Iterable[dict[str, Any]]):
        self.rows = [dict(r) for r in rows]

    def __len__(self) -> int:
        return len(self.rows)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.rows)

    def __getitem__(self, index: int) -> dict[str, Any]:
        return self.rows[index]

    @property
    def columns(self) -> list[str]:
        middle: list[str] = []
        for r in self.rows:
            for k in r:
                if k not in FIRST_COLUMNS and k not in LAST_COLUMNS and k not in middle:
                    middle.append(k)
        return [*FIRST_COLUMNS, *sorted(middle), *LAST_COLUMNS]

    @property
    def ok(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("status") == "ok"]

    @property
    def failed(self) -> list[dict[str, Any]]:
        return [r for r in self.rows if r.get("status") != "ok"]

    def to_dicts(self) -> list[dict[str, Any]]:
        return [{c: r.get(c) for c in self.columns} for r in self.rows]

    def to_pandas(self):
        """A `pandas.DataFrame` (needs pandas)."""
        import pandas

        return pandas.DataFrame(self.to_dicts(), columns=self.columns)

    def csv_text(self) -> str:
        out = io.StringIO()
        writer = csv.DictWriter(out, self.columns, lineterminator="\n")
        writer.writeheader()
        for r in self.to_dicts():
            writer.writerow({k: "" if v is None else v for k, v in r.items()})
        return out.getvalue()

    def write(self, outdir: str | Path, stem: str = "table") -> list[Path]:
        """`stem.csv`, `stem.jsonl`, and `stem.parquet` when pyarrow is installed."""
        outdir = Path(outdir)
        outdir.mkdir(parents=True, exist_ok=True)
        written = [outdir / f"{stem}.csv", outdir / f"{stem}.jsonl"]
        written[0].write_text(self.csv_text())
        written[1].write_text("".join(json.dumps(r) + "\n" for r in self.to_dicts()))
        try:
            import pyarrow
            import pyarrow.parquet
        except ImportError:
            return written
        columns = self.columns
        table = pyarrow.Table.from_pylist(self.to_dicts())
        pyarrow.parquet.write_table(table.select(columns), outdir / f"{stem}.parquet")
        written.append(outdir / f"{stem}.parquet")
        return written

    def pareto(self, x: str = "sram_bytes", y: str = "cycles") -> dict[str, list[dict]]:
        """Per model, the `ok` rows no other row beats on both `x` and `y` (lower is better),
        sorted by `x` (rows without both figures, e.g. stored before a column existed, are
        left out)."""
        rows = [r for r in self.ok if r.get(x) is not None and r.get(y) is not None]
        return {m: pareto_front(rs, x, y) for m, rs in _by_model(rows).items()}

    @property
    def params(self) -> list[str]:
        """The swept and fixed keys (the columns between `model` and the figures)."""
        return [c for c in self.columns if c not in (*FIRST_COLUMNS, *LAST_COLUMNS)]

    def frontier_summary(self, x: str = "sram_bytes", y: str = "cycles",
                         params: Sequence[str] | None = None) -> str:  # fmt: skip
        """The frontier as text: per model, one line per Pareto point."""
        shown = list(params) if params is not None else self.params
        lines = [f"{len(self)} point(s): {len(self.ok)} ok, {len(self.failed)} failed"]
        for model, front in self.pareto(x, y).items():
            lines.append(f"Pareto frontier of {model} ({y} vs {x}), {len(front)} point(s):")
            for r in front:
                p = " ".join(f"{k}={r.get(k)}" for k in shown if k in r)
                figures = [f"{y}={_figure(r[y]):>10}", f"{x}={_figure(r[x]):>8}"]
                figures += [f"{k}={_figure(r[k])}" for k in ("ms", "energy_uj")
                            if k not in (x, y) and r.get(k) is not None]  # fmt: skip
                lines.append(f"  {' '.join(figures)} "
                             f"util(useful MACs)={r['gemm_utilization']:.1%}  {p}")  # fmt: skip
        reasons: dict[str, int] = {}
        for r in self.failed:
            reasons[str(r.get("status"))] = reasons.get(str(r.get("status")), 0) + 1
        for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:5]:
            lines.append(f"failed x{n}: {reason}")
        return "\n".join(lines)

    def energy_frontier_summary(self, params: Sequence[str] | None = None) -> str:
        """The energy-latency frontier as text (energy per inference against latency)."""
        text = self.frontier_summary("ms", "energy_uj", params)
        return "\n".join(text.splitlines()[1:])  # without the point count, said once

    def plot_pareto(self, path: str | Path, x: str = "sram_bytes", y: str = "cycles") -> None:
        """`y` against `x` for every `ok` row, each model's frontier as a step line; PNG
        (needs matplotlib). One panel per model (side by side, up to three a row), so
        models of different sizes keep their own scales. Within a panel, a marker and colour
        per setting: the swept keys that do not make up `x` (for SRAM, all but the buffer
        sizes), or only the non-numeric ones when that gives more than
        `MAX_SETTINGS`; the legend of settings is outside the panels, under them."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.lines import Line2D
        from matplotlib.ticker import EngFormatter, FuncFormatter, LogLocator, MaxNLocator

        rows = [r for r in self.ok if r.get(x) is not None and r.get(y) is not None]
        models = _by_model(rows)
        fronts = self.pareto(x, y)
        keys = _setting_keys(rows, self.params, x)
        settings = list(dict.fromkeys(_setting(r, keys) for r in rows))
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        style = {s: (_MARKERS[i % len(_MARKERS)], colours[i % len(colours)])
                 for i, s in enumerate(settings)}  # fmt: skip
        n = max(1, len(models))
        ncols = min(3, n)
        nrows = -(-n // ncols)
        fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols + 0.6, 3.6 * nrows + 1.2),
                                 squeeze=False, layout="constrained")  # fmt: skip
        for ax in axes.flat[n:]:
            ax.set_visible(False)
        for ax, (model, model_rows) in zip(axes.flat, models.items()):
            for k, setting in enumerate(settings):
                mine = [r for r in model_rows if _setting(r, keys) == setting]
                if mine:  # hollow, the later settings smaller: equal points stay visible
                    marker, colour = style[setting]
                    ax.scatter([r[x] for r in mine], [r[y] for r in mine], marker=marker,
                               s=_marker_size(k, len(settings)) ** 2, facecolors="none",
                               edgecolors=colour, linewidths=1.4, zorder=3)  # fmt: skip
            front = fronts.get(model, [])
            ax.step([r[x] for r in front], [r[y] for r in front], where="post", color="black",
                    linewidth=1.2, marker=".", markersize=4, zorder=2)  # fmt: skip
            values = [r[y] for r in model_rows]
            if min(values) > 0 and max(values) > 20 * min(values):
                ax.set_yscale("log")
                ax.yaxis.set_major_locator(LogLocator(numticks=6))
            else:
                ax.yaxis.set_major_locator(MaxNLocator(5))
            ax.yaxis.set_major_formatter(EngFormatter(sep=""))
            if x.endswith("_bytes"):
                xs = sorted({r[x] for r in model_rows})
                if len(xs) <= 6:  # the configurations' sizes themselves
                    ax.set_xticks(xs, [_kib(v) for v in xs])
                else:
                    ax.xaxis.set_major_locator(MaxNLocator(5))
                    ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: _kib(v)))
            else:
                ax.xaxis.set_major_locator(MaxNLocator(5))
            ax.tick_params(axis="x", labelrotation=30, labelsize=8)
            ax.tick_params(axis="y", labelsize=8)
            ax.set_title(model, fontsize=10)
            ax.set_xlabel(_AXIS_LABELS.get(x, x), fontsize=8)
            ax.set_ylabel(_AXIS_LABELS.get(y, y), fontsize=8)
            ax.grid(True, which="major", alpha=0.3)
        handles = [Line2D([], [], linestyle="none", marker=style[s][0], markerfacecolor="none",
                          markeredgecolor=style[s][1], markeredgewidth=1.4,
                          markersize=_marker_size(k, len(settings)), label=s or "every point")
                   for k, s in enumerate(settings)]  # fmt: skip
        handles.append(Line2D([], [], color="black", linewidth=1.2, marker=".", markersize=4,
                              label="Pareto frontier"))  # fmt: skip
        fig.suptitle(f"Design-space sweep: {_AXIS_LABELS.get(y, y)} against "
                     f"{_AXIS_LABELS.get(x, x)}, Pareto frontier per model", fontsize=10)  # fmt: skip
        fig.legend(handles=handles, loc="outside lower center", fontsize=8,
                   ncols=min(len(handles), 3))  # fmt: skip
        fig.savefig(path, dpi=110)
        plt.close(fig)


MAX_SETTINGS = 10
"""At most this many settings get a marker of their own in `plot_pareto`."""
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "<", ">", "*")
_AXIS_LABELS = {
    "sram_bytes": "on-chip SRAM (uop+inp+wgt+acc)",
    "cycles": "cycles per inference",
    "ms": "latency per inference (ms)",
    "energy_uj": "energy per inference (µJ)",
    "dram_bytes": "DRAM bytes per inference",
}


def _marker_size(index: int, count: int) -> float:
    """Marker size (points) of the `index`-th of `count` settings: 11 down to 5."""
    return 11.0 - 6.0 * index / max(1, count - 1)


def _kib(v: float) -> str:
    return f"{v / 1024:.0f} KiB" if v < 1 << 20 else f"{v / (1 << 20):.3g} MiB"


def _figure(v: Any) -> str:
    return f"{v:.4g}" if isinstance(v, float) else str(v)


def _setting_keys(rows: list[dict[str, Any]], params: Sequence[str], x: str) -> list[str]:
    """The keys whose values make a point's setting in a plot of `x` (see `plot_pareto`)."""
    varied = [k for k in params if len({repr(r.get(k)) for r in rows}) > 1]
    if x == "sram_bytes":  # the buffer sizes are the x axis
        varied = [k for k in varied if not (k.startswith("log_") and k.endswith("_buff_size"))]
    if len({_setting(r, varied) for r in rows}) > MAX_SETTINGS:
        varied = [k for k in varied if any(isinstance(r.get(k), str | bool) for r in rows)]
    if len({_setting(r, varied) for r in rows}) > MAX_SETTINGS:
        return []
    return varied


def _setting(row: dict[str, Any], keys: Sequence[str]) -> str:
    return " ".join(f"{k}={row.get(k)}" for k in keys)


def _by_model(rows: Iterable[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(str(r["model"]), []).append(r)
    return out


def pareto_front(rows: Iterable[dict[str, Any]], x: str, y: str) -> list[dict[str, Any]]:
    """Rows not dominated on (`x`, `y`), both minimized; ties on both keep the first."""
    front: list[dict[str, Any]] = []
    best_y = None
    for r in sorted(rows, key=lambda r: (r[x], r[y])):
        if best_y is None or r[y] < best_y:
            front.append(r)
            best_y = r[y]
    return front
