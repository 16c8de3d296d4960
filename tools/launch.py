"""The console scripts' entry points: `qaccel-opt --help` and friends answer without importing
xDSL or numpy.

Importing xDSL's builtin dialect alone takes longer than a user should wait for a usage text,
so each tool's `--help` output is generated once (`python -m qaccel.tools.launch
--regenerate`, 80 columns) into `tools/help/<tool>.txt`, and `tests/test_tool_help.py` checks
that it is what the tool's own argument parser prints. Every other invocation imports the tool
and runs its `main()`.
"""

from __future__ import annotations

import os
import subprocess
import sys
from importlib import import_module
from pathlib import Path

HELP_DIR = Path(__file__).with_name("help")
HELP_COLUMNS = "80"

# console script -> module whose main() it runs
TOOLS = {
    "qaccel-opt": "qaccel.tools.qaccel_opt",
    "qaccel-compile": "qaccel.tools.qaccel_compile",
    "qaccel-run": "qaccel.tools.qaccel_run",
    "qaccel-sim": "qaccel.tools.qaccel_sim",
    "qaccel-sweep": "qaccel.tools.qaccel_sweep",
    "qaccel-config": "qaccel.tools.qaccel_config",
    "qaccel-report": "qaccel.tools.qaccel_report",
}


def _launch(tool: str):
    if sys.argv[1:] in (["-h"], ["--help"]):
        try:
            text = (HELP_DIR / f"{tool}.txt").read_text()
        except OSError:
            text = None
        if text is not None:
            sys.stdout.write(text)
            return 0
    try:
        return import_module(TOOLS[tool]).main()
    except KeyboardInterrupt:  # Ctrl-C: one line, the shell's status for SIGINT, no traceback
        sys.stderr.write(f"{tool}: error: interrupted\n")
        return 130


def opt_main():
    return _launch("qaccel-opt")


def compile_main():
    # A compile's process ends without the interpreter's teardown (`cli.end_process`).
    from qaccel.tools.cli import end_process

    try:
        code = _launch("qaccel-compile")
    except SystemExit as e:
        code = e.code
    end_process(code)


def run_main():
    return _launch("qaccel-run")


def sim_main():
    return _launch("qaccel-sim")


def sweep_main():
    return _launch("qaccel-sweep")


def config_main():
    return _launch("qaccel-config")


def report_main():
    return _launch("qaccel-report")


def generated_help(tool: str) -> str:
    """What `tool --help` prints from its own argument parser, at 80 columns."""
    env = {**os.environ, "COLUMNS": HELP_COLUMNS}
    child = (f"import sys; sys.argv = [{tool!r}, '--help']; "
             f"from {TOOLS[tool]} import main; sys.exit(main())")
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True, env=env)
    if done.returncode != 0:
        raise RuntimeError(f"{tool} --help failed: {done.stderr.strip()[-500:]}")
    return done.stdout


def regenerate() -> None:
    HELP_DIR.mkdir(exist_ok=True)
    for tool in TOOLS:
        (HELP_DIR / f"{tool}.txt").write_text(generated_help(tool))
        print(f"wrote {HELP_DIR / f'{tool}.txt'}")


if __name__ == "__main__":
    if sys.argv[1:] != ["--regenerate"]:
        sys.exit("usage: python -m qaccel.tools.launch --regenerate")
    regenerate()
