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
LAST_COLUMNS = ("cycles", "ms", "gemm_utilization", "roofline_ratio", "dram_bytes",
                "sram_bytes", "host_fallback_ops", "accelerator_mac_share", "layers",
                "compile_s", "status", "key")  # fmt: skip


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
        sorted by `x`."""
        return {m: pareto_front(rs, x, y) for m, rs in _by_model(self.ok).items()}

    def frontier_summary(self, x: str = "sram_bytes", y: str = "cycles",
                         params: Sequence[str] | None = None) -> str:  # fmt: skip
        """The frontier as text: per model, one line per Pareto point."""
        shown = list(params) if params is not None else [
            c for c in self.columns if c not in (*FIRST_COLUMNS, *LAST_COLUMNS)
        ]
        lines = [f"{len(self)} point(s): {len(self.ok)} ok, {len(self.failed)} failed"]
        for model, front in self.pareto(x, y).items():
            lines.append(f"Pareto frontier of {model} ({y} vs {x}), {len(front)} point(s):")
            for r in front:
                p = " ".join(f"{k}={r.get(k)}" for k in shown if k in r)
                lines.append(f"  {y}={r[y]:>10} {x}={r[x]:>8} ms={r['ms']:.3f} "
                             f"util={r['gemm_utilization']:.2f}  {p}")  # fmt: skip
        reasons: dict[str, int] = {}
        for r in self.failed:
            reasons[str(r.get("status"))] = reasons.get(str(r.get("status")), 0) + 1
        for reason, n in sorted(reasons.items(), key=lambda kv: -kv[1])[:5]:
            lines.append(f"failed x{n}: {reason}")
        return "\n".join(lines)

    def plot_pareto(self, path: str | Path, x: str = "sram_bytes", y: str = "cycles") -> None:
        """Scatter of every `ok` row (`y` against `x`), one colour per model, each model's
        frontier as a step line; PNG (needs matplotlib)."""
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(7, 4.5))
        colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
        fronts = self.pareto(x, y)
        for i, (model, rows) in enumerate(_by_model(self.ok).items()):
            colour = colours[i % len(colours)]
            ax.scatter([r[x] for r in rows], [r[y] for r in rows], s=14, alpha=0.5,
                       color=colour, label=model)  # fmt: skip
            front = fronts[model]
            ax.step([r[x] for r in front], [r[y] for r in front], where="post", color=colour,
                    linewidth=1.5)  # fmt: skip
        values = [r[y] for r in self.ok]
        if values and min(values) > 0 and max(values) > 20 * min(values):
            ax.set_yscale("log")  # models of very different sizes
        if x.endswith("_bytes"):
            xs = sorted({r[x] for r in self.ok})
            if len(xs) <= 10:  # the configurations' sizes themselves
                ax.set_xticks(xs, [f"{v / 1024:.0f} KiB" for v in xs], rotation=30)
            else:
                from matplotlib.ticker import FuncFormatter

                ax.xaxis.set_major_formatter(FuncFormatter(lambda v, _: f"{v / 1024:.0f} KiB"))
        ax.set_xlabel("on-chip SRAM (uop + inp + wgt + acc buffers)" if x == "sram_bytes" else x)
        ax.set_ylabel(y)
        ax.set_title("Design-space sweep: Pareto frontier per model")
        ax.grid(True, which="major", alpha=0.3)
        if fronts:
            ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)


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
