"""The LiteRT models begun before the emission ends (`prepare_litert_files`: the partitions
proven from the final module, the dispatch model's flatbuffer made before the programs are
known; `finish_litert_files` with the emitted functions) are the plain splice's bytes, and
`qaccel-compile`'s helper begun that way (`_write_spliced_models`, fed the emitted functions)
writes the files `_write_aot_models` writes."""

from __future__ import annotations

import functools
import hashlib
from pathlib import Path

import pytest
from conftest import FIXTURE_MODELS
from qaccel import api
from qaccel.backends.litert import partitions
from qaccel.backends.litert.names import AOT_FILE, DISPATCH_FILE
from qaccel.backends.litert.partitions import (
    compile_partitions,
    finish_litert_files,
    litert_files,
    partition_files,
    prepare_litert_files,
    splice,
)
from qaccel.backends.vta.artifact import Staging, Written
from qaccel.backends.vta.program.writer import ProgramWriteError
from qaccel.tools import qaccel_compile

MODELS = ["small_cnn", "composite", "residual"]


@functools.cache
def _compiled(name: str):
    source = (FIXTURE_MODELS / f"{name}.tflite").read_bytes()
    compiler = api.partition_compiler()
    return source, compiler(source), compiler


def _plain(source: bytes, compiled, compiler) -> dict[str, bytes]:
    done, _ = compile_partitions(source, compiled, compiler)
    files = {DISPATCH_FILE: splice(source, done, "dispatch"),
             AOT_FILE: splice(source, done, "custom-op")}  # fmt: skip
    files.update(partition_files(done))
    return files


@pytest.mark.parametrize("name", MODELS)
def test_prepared_models_are_the_plain_splice(name):
    source, compiled, compiler = _compiled(name)
    prepared = prepare_litert_files(source, compiled.module, set(compiled.functions))
    assert prepared.head is not None  # every partition proven: the flatbuffer made ahead
    assert prepared.custom is not None and prepared.head.where is not None
    files, lines = finish_litert_files(prepared, compiled, compiler)
    assert files == _plain(source, compiled, compiler)
    assert (files, lines) == litert_files(source, compiled, compiler)
    prepared = prepare_litert_files(source, compiled.module, set(compiled.functions))
    pieces, _ = finish_litert_files(prepared, compiled, compiler, joined=False)
    assert isinstance(pieces[DISPATCH_FILE], list) and isinstance(pieces[AOT_FILE], list)
    assert _joined(pieces) == files


def test_placeholders_not_found_once_splice_plainly(monkeypatch):
    """A placeholder whose bytes do not occur exactly once in the prepared flatbuffer: the
    dispatch model's options are written by writing its flatbuffer again, the custom-op
    model is spliced again."""
    source, compiled, compiler = _compiled("small_cnn")
    monkeypatch.setattr(partitions, "_found_once", lambda data, marks: None)
    prepared = prepare_litert_files(source, compiled.module, set(compiled.functions))
    assert prepared.custom is None and prepared.head is not None and prepared.head.where is None
    files, _ = finish_litert_files(prepared, compiled, compiler, joined=False)
    assert _joined(files) == _plain(source, compiled, compiler)


def _joined(files: dict) -> dict[str, bytes]:
    return {rel: b"".join(m) if isinstance(m, list) else m for rel, m in files.items()}


def test_a_program_that_cannot_be_taken_drops_the_prepared_flatbuffer(monkeypatch):
    """A proven partition whose program cannot be written from the compile is compiled
    again; when that fails too it stays on the CPU, and the dispatch model is spliced again
    for the partitions left."""
    source, compiled, compiler = _compiled("small_cnn")
    plain, _ = compile_partitions(source, compiled, compiler)
    assert len(plain) == 2
    prepared = prepare_litert_files(source, compiled.module, set(compiled.functions))
    assert prepared.head is not None
    taken = partitions._proven_program
    first = plain[0].partition.name

    def refused(compiled, proof):
        if proof.name == first:
            raise ProgramWriteError(f"{proof.name}: refused by the test")
        return taken(compiled, proof)

    def not_again(model_bytes, part, compiler):
        raise partitions.PartitionError(f"{part.name}: not compiled again by the test")

    monkeypatch.setattr(partitions, "_proven_program", refused)
    monkeypatch.setattr(partitions, "compile_partition", not_again)
    files, lines = finish_litert_files(prepared, compiled, compiler)
    left = plain[1:]
    assert files[DISPATCH_FILE] == splice(source, left, "dispatch")
    assert files[AOT_FILE] == splice(source, left, "custom-op")
    assert f"@{first} stays on the CPU in the LiteRT models: not compiled again by the test" in lines


def test_the_helper_begun_early_writes_the_same_files(tmp_path: Path):
    source, compiled, _ = _compiled("small_cnn")
    early, plain = Staging(tmp_path / "early"), Staging(tmp_path / "plain")
    try:
        fed = qaccel_compile._emitted(compiled)
        got = qaccel_compile._write_spliced_models(compiled.module, source, early, lambda: fed)
        want = qaccel_compile._write_aot_models(compiled, source, plain)
        # It writes model.tflite (the source) too, which write_artifact then leaves to it.
        assert got[0].pop("model.tflite") == Written(hashlib.sha256(source).hexdigest())
        assert (early.folder / "model.tflite").read_bytes() == source
        assert got == want
        for rel in want[0]:
            assert (early.folder / rel).read_bytes() == (plain.folder / rel).read_bytes()
    finally:
        early.discard()
        plain.discard()
