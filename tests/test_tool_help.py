"""Each tool's `--help` is answered from `tools/help/<tool>.txt` without importing xDSL; the
file must be exactly what the tool's own argument parser prints (regenerate with
`python -m qaccel.tools.launch --regenerate`)."""

import subprocess
import sys

import pytest

from qaccel.tools import launch


@pytest.mark.parametrize("tool", sorted(launch.TOOLS))
def test_help_text_is_up_to_date(tool):
    cached = (launch.HELP_DIR / f"{tool}.txt").read_text()
    assert cached == launch.generated_help(tool), (
        f"tools/help/{tool}.txt is stale: run python -m qaccel.tools.launch --regenerate"
    )


def test_help_answers_without_importing_xdsl():
    code = ("import sys; sys.argv = ['qaccel-opt', '--help']; from qaccel.tools import launch; "
            "launch.opt_main(); assert 'xdsl' not in sys.modules and 'numpy' not in sys.modules")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == (launch.HELP_DIR / "qaccel-opt.txt").read_text()
