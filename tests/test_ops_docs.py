"""docs/ops.md is generated from the registries (`python -m qaccel.tools.gen_ops_docs`) and
kept up to date; its few hand-kept facts agree with the registries."""

from __future__ import annotations

import subprocess
import sys

from qaccel.tools import gen_ops_docs


def test_docs_ops_md_is_up_to_date():
    problem = gen_ops_docs.check()
    assert problem is None, problem


def test_check_command_fails_on_stale_docs(tmp_path):
    stale = tmp_path / "ops.md"
    stale.write_text("old\n")
    result = subprocess.run(
        [sys.executable, "-m", "qaccel.tools.gen_ops_docs", "--check", "-o", str(stale)],
        capture_output=True, text=True,
    )  # fmt: skip
    assert result.returncode == 1
    assert result.stderr.startswith("gen_ops_docs: error: ")
    assert "regenerate it with `python -m qaccel.tools.gen_ops_docs`" in result.stderr


def test_every_builtin_has_one_row_from_the_registries():
    from qaccel.frontend.tflite_schema import BUILTIN_OPERATORS
    from qaccel.kernels.registry import KERNELS

    rows = {r.builtin: r for r in gen_ops_docs.rows()}
    assert set(rows) == set(BUILTIN_OPERATORS.values())
    assert {name for name, r in rows.items() if r.kernel} == set(KERNELS) & set(rows)
    conv = rows["CONV_2D"]
    assert (conv.status, conv.ir_op, conv.kernel, conv.q_op) == \
        ("accelerator", "tfl.conv_2d", "kernels/conv.py", "q.conv2d")
    assert [name for name, _ in conv.accelerator] == ["conv2d"]
    assert rows["CUSTOM"].status == "no CPU kernel" and rows["CUSTOM"].ir_op == "tfl.opaque"


def test_every_legalization_names_its_q_op():
    """LEGALIZED_TO is the one hand-kept mapping: a new legalization must be added there."""
    from qaccel.dialects import q
    from qaccel.dialects.tfl import TFL_OPS
    from qaccel.passes.legalize_tfl_to_q import PATTERNS, TABLE_OPS

    legalized = {cls.TFLITE_NAME for cls in TFL_OPS if cls.name.removeprefix("tfl.") in PATTERNS}
    legalized |= set(TABLE_OPS)  # legalized by their kernel's table, typed or opaque
    assert set(gen_ops_docs.LEGALIZED_TO) == legalized
    q_ops = {op.name for op in q.Q.operations}
    assert set(gen_ops_docs.LEGALIZED_TO.values()) <= q_ops


def test_every_pattern_says_where_it_runs():
    from qaccel.targets.vta.target import VTA_PATTERNS

    for p in VTA_PATTERNS:
        assert gen_ops_docs.placement(p.doc) is not None, (
            f"pattern {p.name}: its doc must start with one of {gen_ops_docs.PLACEMENTS} and ': '")


def test_every_corpus_operator_has_an_accelerator_decision():
    """docs/ops.md's accelerator column says for every operator of the converter-made corpus
    where it runs and why: a pattern's placement, or the CPU with the reason."""
    from pathlib import Path

    from qaccel.frontend.tflite_writer import read_model

    corpus = Path(__file__).parent / "fixtures" / "corpus"
    rows = {r.builtin: r for r in gen_ops_docs.rows()}
    used = {op.op for path in corpus.glob("*.tflite")
            for sg in read_model(path.read_bytes()).subgraphs for op in sg.operators}  # fmt: skip
    assert "CONV_2D" in used and "SOFTMAX" in used
    for name in sorted(used):
        r = rows[name]
        decided = r.accelerator or name in gen_ops_docs.NOT_ON_THE_ACCELERATOR
        assert decided, f"{name}: no accelerator decision in docs/ops.md"
