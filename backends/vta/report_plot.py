"""Per-layer cycles of a compiled model against their lower bounds, as a picture.

    plot_report(compiled.report, "layers.png", model="mobilenet_v2.tflite")
    qaccel-compile model.tflite -o out/ --plot layers.png      # the same from the command line

One bar per accelerator layer (x: the layers in execution order) with its simulated cycles
(y, log scale), coloured by kind; over each bar the layer's roofline bound (GEMM throughput or
DRAM bandwidth, `roofline_cycles`) and the tighter bound of this ISA (GEMM plus the
requantization tail on the compute module, `alu_bound_cycles`). A bar far above both marks a
layer the schedule leaves slow; the title gives the model's totals. The report is
`build_report`'s dictionary (also `report.json` of an artifact). The output format follows
the file's extension (.png, .svg, .pdf).

matplotlib is an optional dependency (`pip install 'qaccel[plot]'`), imported only here and
drawn with the Agg canvas: no display, no pyplot state.
"""

from __future__ import annotations

from pathlib import Path

MISSING = "--plot needs matplotlib (pip install 'qaccel[plot]')"
_KIND_COLORS = {"conv": "tab:blue", "depthwise": "tab:orange", "dense": "tab:green"}


class PlotError(Exception):
    """The plot cannot be made (one line for the user)."""


def require_matplotlib(path: str | Path | None = None) -> None:
    """Raise `PlotError` when matplotlib is missing or cannot write `path`'s format (check
    before a long compile)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise PlotError(MISSING) from None
    if path is None:
        return
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    formats = FigureCanvasAgg.get_supported_filetypes()
    suffix = Path(path).suffix[1:].lower()
    if suffix not in formats:
        raise PlotError(f"cannot write plot '{path}': unknown image format '{suffix}' "
                        f"(use one of {', '.join(sorted(formats))})")  # fmt: skip


def _title(report: dict, model: str | None) -> str:
    t = report["totals"]
    head = f"{model}: " if model else ""
    return (f"{head}{t['layers']} accelerator layers on {report.get('config', 'the VTA')}\n"
            f"{t['cycles']:,} cycles = {t['ms']:.3f} ms at {t['clock_mhz']:g} MHz, "
            f"{t['roofline_ratio']:.2f}x the roofline\nGEMM utilization "
            f"{t['gemm_utilization']:.1%} of useful MACs{_energy(t)}")  # fmt: skip


def _energy(totals: dict) -> str:
    return (f", {totals['energy_pj'] / 1e6:.3g} uJ per inference" if "energy_pj" in totals
            else "")  # fmt: skip


def _tick_labels(rows: list[dict]) -> list[str]:
    several = len({r["function"] for r in rows}) > 1
    return [f"{r['function']}/{r['layer']}" if several else str(r["layer"]) for r in rows]


def plot_report(report: dict, path: str | Path, model: str | None = None) -> None:
    """Draw `report`'s layers into `path` (see the module docstring); `model` names the model
    in the title. Raises `PlotError` without matplotlib or when the file cannot be written."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows = report["layers"]
    n = len(rows)
    fig = Figure(figsize=(min(24.0, max(8.0, 3.0 + 0.22 * n)), 5.5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.add_subplot()
    xs = range(n)
    kinds = [r["kind"] for r in rows]
    ax.bar(xs, [max(1, r["cycles"]) for r in rows], width=0.8, zorder=2,
           color=[_KIND_COLORS.get(k, "tab:gray") for k in kinds])  # fmt: skip
    ax.scatter(xs, [max(1, r["roofline_cycles"]) for r in rows], marker="_", s=120,
               linewidths=2.0, color="black", zorder=3)  # fmt: skip
    ax.scatter(xs, [max(1, r["alu_bound_cycles"]) for r in rows], marker="x", s=18,
               linewidths=1.0, color="tab:red", zorder=3)  # fmt: skip
    if n:
        ax.set_yscale("log")
        ax.set_xlim(-0.6, n - 0.4)
        step = max(1, -(-n // 60))  # at most ~60 labels
        ax.set_xticks(list(xs)[::step], _tick_labels(rows)[::step], rotation=90, fontsize=7)
    else:
        ax.text(0.5, 0.5, "no accelerator layers", ha="center", va="center",
                transform=ax.transAxes)  # fmt: skip
    ax.set_xlabel("accelerator layer (execution order)")
    ax.set_ylabel("cycles (log scale)")
    ax.set_title(_title(report, model), fontsize=10)
    ax.grid(axis="y", which="both", alpha=0.3, zorder=0)
    handles = [Patch(color=_KIND_COLORS.get(k, "tab:gray"), label=f"{k}: simulated cycles")
               for k in dict.fromkeys(kinds)]  # fmt: skip
    handles.append(Line2D([], [], color="black", marker="_", linestyle="none", markersize=11,
                          markeredgewidth=2.0, label="roofline bound"))  # fmt: skip
    handles.append(Line2D([], [], color="tab:red", marker="x", linestyle="none",
                          label="GEMM + tail bound"))  # fmt: skip
    ax.legend(handles=handles, fontsize=8, loc="upper left", bbox_to_anchor=(1.005, 1.0))
    try:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=120)
    except (OSError, ValueError) as e:
        reason = e.strerror if isinstance(e, OSError) and e.strerror else str(e)
        raise PlotError(f"cannot write plot '{path}': {reason}") from None


__all__ = ["MISSING", "PlotError", "plot_report", "require_matplotlib"]


def plot_report_diff(diff: dict, path: str | Path, names: tuple[str, str] = ("A", "B")) -> None:
    """Draw `diff_reports`'s result into `path`: per layer, the cycles of A and B side by side
    (log scale) over their ratio B/A, and the GEMM utilization of both. Raises `PlotError`
    without matplotlib or when the file cannot be written."""
    require_matplotlib()
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = diff["layers"]
    n = len(rows)
    fig = Figure(figsize=(min(24.0, max(8.0, 3.0 + 0.3 * n)), 7.5), layout="constrained")
    FigureCanvasAgg(fig)
    top, bottom = fig.subplots(2, 1, sharex=True, height_ratios=(2, 1))
    xs = list(range(n))
    width = 0.4
    for offset, side, name, color in ((-width / 2, "a", names[0], "tab:blue"),
                                      (width / 2, "b", names[1], "tab:orange")):  # fmt: skip
        top.bar([x + offset for x in xs], [max(1, r[f"cycles_{side}"] or 0) for r in rows],
                width=width, label=name, color=color, zorder=2)  # fmt: skip
        bottom.plot(xs, [r[f"util_{side}"] if r[f"util_{side}"] is not None else float("nan")
                         for r in rows], marker="o", color=color, label=name)  # fmt: skip
    top.set_yscale("log")
    top.set_ylabel("cycles (timing model)")
    top.grid(axis="y", which="both", alpha=0.3, zorder=0)
    top.legend(loc="upper right")
    for x, r in zip(xs, rows):
        if r["cycles_ratio"] is not None:
            top.annotate(f"{r['cycles_ratio']:.2f}x", (x, max(1, r["cycles_a"] or 1,
                                                              r["cycles_b"] or 1)),
                         ha="center", va="bottom", fontsize=7)  # fmt: skip
    bottom.set_ylabel("GEMM utilization")
    bottom.set_ylim(0, 1)
    bottom.grid(alpha=0.3)
    several = len({r["function"] for r in rows}) > 1
    bottom.set_xticks(xs, [f"{r['function']}/{r['layer']}" if several else str(r["layer"])
                           for r in rows], rotation=90 if n > 20 else 0, fontsize=8)  # fmt: skip
    bottom.set_xlabel("accelerator layer")
    t = diff["totals"]
    (ca, cb), ((conf_a, _), (conf_b, _)) = t["cycles"], diff["configs"]
    ratio = f" ({cb / max(1, ca):.2f}x)" if ca and cb else ""
    top.set_title(f"{names[0]} ({conf_a}) vs {names[1]} ({conf_b}): {ca:,} -> {cb:,} "
                  f"cycles{ratio}", fontsize=10)  # fmt: skip
    try:
        fig.savefig(path, dpi=100)
    except (OSError, ValueError) as e:
        raise PlotError(f"cannot write plot '{path}': {e}") from None
