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


def readme_blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)\n```", (ROOT / "README.md").read_text(), flags=re.S)


def test_readme_python_snippets_run(tmp_path):
    """Every Python snippet of the README runs as written, in a fresh process, from a folder
    with the repository's tests/ and the artifact `out/` the README's commands make (the LiteRT
    snippet feeds an input and reads the output)."""
    import subprocess
    import sys

    from qaccel.tools import qaccel_compile

    (tmp_path / "tests").symlink_to(ROOT / "tests")
    try:
        qaccel_compile.main([str(ROOT / "tests" / "fixtures" / "models" / "small_cnn.tflite"),
                             "-o", str(tmp_path / "out"), "--quiet"])  # fmt: skip
    except SystemExit as e:
        assert e.code == 0
    blocks = readme_blocks("python")
    assert any("run_by_index" in b and ".read(" in b for b in blocks), "LiteRT snippet ends early"
    for i, block in enumerate(blocks):
        done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True,
                              text=True, timeout=300)  # fmt: skip
        assert done.returncode == 0, f"README python snippet {i}:\n{block}\n{done.stderr[-3000:]}"


def test_readme_commands_are_console_scripts():
    """Every `qaccel-*` command in the README's shell snippets and tools table is installed."""
    import tomllib

    scripts = set(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["scripts"])
    text = (ROOT / "README.md").read_text()
    named = set(re.findall(r"(?<![\w/.-])(qaccel-[a-z]+)(?=[ `\]])", text))
    assert named <= scripts, named - scripts
    for tool in scripts:
        assert f"`{tool} " in text, f"{tool} is missing from the README's tools table"


def test_readme_apply_plugin_main_command_runs(tmp_path):
    """The README's AOT command (LiteRT's apply_plugin_main with qaccel's plugin) runs as
    pasted in a shell, from a folder with the repository's tests/, and writes a model."""
    import os
    import shutil
    import subprocess

    import pytest

    pytest.importorskip("ai_edge_litert")
    commands = [b for b in readme_blocks("sh") if "apply_plugin_main" in b]
    assert commands, "the README shows no apply_plugin_main command"
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    env = {**os.environ, "QACCEL_PLUGIN_CACHE": str(tmp_path / "cache")}
    for command in commands:
        done = subprocess.run([shutil.which("bash") or "sh", "-c", command], cwd=tmp_path,
                              capture_output=True, text=True, timeout=600, env=env)  # fmt: skip
        assert done.returncode == 0, f"{command}\n{done.stderr[-3000:]}"
    assert (tmp_path / "small_cnn.npu.tflite").stat().st_size > 0
