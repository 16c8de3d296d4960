"""The README's quick start stays true: exactly two commands, and CI runs the test one."""

import re
from pathlib import Path

ROOT = Path(__file__).parent.parent


def quick_start_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```sh\n(.*?)\n```", section, flags=re.S)


def test_quick_start_has_two_commands():
    commands = quick_start_commands()
    assert len(commands) == 2
    assert all("\n" not in c for c in commands)


def test_ci_runs_the_readme_test_command():
    test_command = quick_start_commands()[1]
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test_command in ci
