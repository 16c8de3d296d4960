"""The reference pages generated from code (`python -m qaccel.tools.gen_reference_docs`):
up to date, and complete (every configuration key, spec key, derived quantity and target API
name documented)."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields
from pathlib import Path

from qaccel.dialects.q import Q_OPS
from qaccel.explore import spec
from qaccel.targets import base
from qaccel.targets.vta.config import FIELD_DOCS, HardwareConfig, key_range
from qaccel.tools import gen_reference_docs

DOCS = Path(__file__).resolve().parent.parent / "docs"


def test_reference_pages_are_up_to_date():
    problem = gen_reference_docs.check()
    assert problem is None, problem


def test_every_key_and_name_is_documented():
    names = [f.name for f in fields(HardwareConfig)]
    assert set(FIELD_DOCS) == set(names)
    configuration = (DOCS / "configuration.md").read_text()
    for name in names:
        assert f"| `{name}` |" in configuration and key_range(name) in configuration
    assert "Horowitz" in configuration and "640 pJ" in configuration
    assert set(spec.SPEC_KEY_DOCS) == set(spec.SPEC_KEYS)
    assert set(spec.PIPELINE_KEY_DOCS) == set(spec.PIPELINE_KEYS)
    assert set(spec.DERIVED_DOCS) == set(spec.DERIVED)
    sweep = (DOCS / "sweep-spec.md").read_text()
    for key in (*spec.SPEC_KEYS, *spec.PIPELINE_KEYS, *spec.DERIVED):
        assert f"| `{key}` |" in sweep, key
    targets = (DOCS / "targets.md").read_text()
    assert "**OHWI**" in targets
    for name in gen_reference_docs.TARGET_API:
        assert hasattr(base, name) and f"### `{name}`" in targets
    for op in Q_OPS:
        assert f"| `{op.name}` |" in targets


def test_check_fails_on_a_stale_page(tmp_path):
    for name, render in gen_reference_docs.PAGES.items():
        (tmp_path / name).write_text(render())
    (tmp_path / "sweep-spec.md").write_text("old\n")
    result = subprocess.run(
        [sys.executable, "-m", "qaccel.tools.gen_reference_docs", "--check", "-o", str(tmp_path)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 1
    assert "sweep-spec.md is stale" in result.stderr
    assert f"regenerate it with `{gen_reference_docs.COMMAND}`" in result.stderr
