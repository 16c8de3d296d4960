"""`qaccel-report`: read and compare the cycle reports of compiled artifacts.

    qaccel-report show out/                          # the table qaccel-compile printed
    qaccel-report diff out-a/ out-b/                 # layer by layer: cycles, utilization, DRAM
    qaccel-report diff a/report.json b/report.json --plot diff.png

An artifact is an OUTDIR of `qaccel-compile` (its `report.json` is read) or a `report.json`
itself. `diff` matches layers by accelerator function and index (a layer only one side has is
shown with `-` on the other), prints per layer the cycles of A and B and their ratio B/A, the
GEMM utilization and DRAM bytes of both and the layer's description (both when they differ),
then the totals (cycles, ms, utilization, DRAM bytes, layers, host fallbacks, MAC share; the
cost model's estimated cycles with host steps and of the whole inference) and each side's
configuration name and content hash; `--plot F.png` draws the cycles side by side
and the utilizations (needs matplotlib). `--names A,B` names the sides (default: the paths).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NoReturn

from qaccel.tools.cli import OutputPathError, check_output_file, fail, one_line_argument_errors

PROG = "qaccel-report"


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="command", required=True, metavar="{show,diff}")
    show = sub.add_parser("show", help="print an artifact's report table")
    show.add_argument("artifact", metavar="A", help="an artifact folder or its report.json")
    diff = sub.add_parser("diff", help="compare two artifacts' reports layer by layer")
    diff.add_argument("a", metavar="A", help="an artifact folder or its report.json")
    diff.add_argument("b", metavar="B", help="an artifact folder or its report.json")
    diff.add_argument("--plot", type=Path, metavar="F.png",
                      help="draw the per-layer cycles and utilizations (needs matplotlib)")
    diff.add_argument("--names", metavar="A,B", help="what to call the two sides")
    diff.add_argument("--json", action="store_true", help="print the comparison as JSON")
    for p in (ap, show, diff):
        one_line_argument_errors(p, PROG)
    return ap


def _fail(message: str) -> NoReturn:
    fail(PROG, message)


def load_report(path: str | Path) -> dict:
    """The report of an artifact folder (its report.json) or of a report.json file."""
    p = Path(path)
    file = p / "report.json" if p.is_dir() else p
    try:
        data = json.loads(file.read_text())
    except FileNotFoundError:
        _fail(f"'{path}': no report.json (not an artifact of qaccel-compile)")
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as e:
        _fail(f"'{file}': cannot read the report: {e}")
    if not isinstance(data, dict) or not isinstance(data.get("layers"), list) \
            or not isinstance(data.get("totals"), dict):  # fmt: skip
        _fail(f"'{file}': not a qaccel report (no layers and totals)")
    return data


def run(argv: Sequence[str] | None = None) -> int:
    from qaccel.backends.vta.report import diff_reports, format_diff, format_report

    args = parser().parse_args(argv)
    if args.command == "show":
        print(format_report(load_report(args.artifact)))
        return 0
    names = (args.a, args.b)
    if args.names:
        parts = args.names.split(",")
        if len(parts) != 2 or not all(parts):
            _fail(f"--names '{args.names}': give two names, A,B")
        names = (parts[0], parts[1])
    if args.plot:
        from qaccel.backends.vta.report_plot import require_matplotlib

        check_output_file(args.plot, "--plot")
        require_matplotlib(args.plot)
    a, b = load_report(args.a), load_report(args.b)
    try:
        diff = diff_reports(a, b)
    except (KeyError, TypeError, ValueError) as e:
        _fail(f"the reports cannot be compared: a layer row lacks {e}")
    if args.json:
        print(json.dumps(diff, indent=1))
    else:
        print(format_diff(diff, names))
    if args.plot:
        from qaccel.backends.vta.report_plot import plot_report_diff

        plot_report_diff(diff, args.plot, names)
        if not args.json:
            print(f"wrote {args.plot}")
    return 0


def main(argv: Sequence[str] | None = None) -> None:
    from qaccel.backends.vta.report_plot import PlotError
    from qaccel.tools.cli import resource_errors

    try:
        with resource_errors(PROG):
            code = run(argv)
    except (PlotError, OutputPathError) as e:
        _fail(str(e))
    sys.exit(code)


if __name__ == "__main__":
    main()
