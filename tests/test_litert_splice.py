"""The LiteRT models qaccel-compile writes are the user's ORIGINAL model with each accelerator
partition spliced in (backends/litert/partitions.py): bit-exact with BUILTIN_REF on the original
through our dispatch library and our custom-op kernel, for every fixture model and every corpus
model (the corpus's committed reference outputs; the fixtures' from the oracle); every other
operator, signature and metadata entry the original's; a partition the program cannot cover
reported in one line, the files still written; partitions.json and programs/*.qprog.

Each model is compiled once for the default configuration (`_spliced`, cached per session)."""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_MODELS

pytest.importorskip("ai_edge_litert")
pytestmark = pytest.mark.skipif(shutil.which("cc") is None and shutil.which("gcc") is None,
                                reason="no C compiler (the LiteRT libraries are built on use)")

from qaccel import api  # noqa: E402
from qaccel.backends.litert import aot  # noqa: E402
from qaccel.backends.litert.partitions import (  # noqa: E402
    CompiledPartition,
    Partition,
    PartitionError,
    compile_partition,
    compile_partition_model,
    compile_partitions,
    extract_partition,
    partition_files,
    partition_submodel,
    splice,
)
from qaccel.backends.litert.paths import PATHS  # noqa: E402
from qaccel.explore.conformance import committed_reference  # noqa: E402
from qaccel.frontend.tflite_writer import read_model  # noqa: E402

CORPUS = Path(__file__).parent / "fixtures" / "corpus"
CORPUS_MODELS = sorted(p.stem for p in CORPUS.glob("*.tflite") if p.stem != "int16x8")
FIXTURES = sorted(p.stem for p in FIXTURE_MODELS.glob("*.tflite"))
COVERED = {"small_cnn": 2, "mobilenet_v2": 1, "resnet50": 1, "mobilenet_v3_small": 1,
           "efficientnet_b0": 1, "inception": 1, "densenet": 1, "nasnet": 1, "transformer": 1,
           "unet": 1, "batch2": 1, "composite": 1}  # fmt: skip
"""Partitions spliced today (a regression lowers them)."""


CPU_KERNELS_DIFFER = {
    "nasnet": "CONV_2D and DEPTHWISE_CONV_2D",
    "transformer": "FULLY_CONNECTED and DEQUANTIZE",
}
"""Models whose operators left on the CPU LiteRT's CompiledModel computes otherwise than
BUILTIN_REF (its CPU kernels, in either kernel mode; the original model unchanged differs
too): each partition is checked alone, on BUILTIN_REF's tensors."""
NO_REFERENCE = {"mobilenetv2_035_96_collapsed"}
"""BUILTIN_REF refuses the model (fixtures README): nothing to compare with."""


@functools.cache
def _spliced(path: Path):
    source = path.read_bytes()
    compiler = api.partition_compiler()
    compiled = compiler(source)
    done, lines = compile_partitions(source, compiled, compiler)
    return source, compiled, done, lines


def _write(tmp_path: Path, source: bytes, done) -> dict[str, Path]:
    out = {}
    for flavour, way in PATHS.items():
        out[flavour] = tmp_path / way.model_file
        out[flavour].write_bytes(splice(source, done, flavour))
    return out


def _random_inputs(source: bytes, seed: int = 0) -> list[np.ndarray]:
    sg = read_model(source).subgraphs[0]
    rng = np.random.default_rng(seed)
    out = []
    for i in sg.inputs:
        t = sg.tensors[i]
        info = np.iinfo(t.dtype) if np.issubdtype(t.dtype, np.integer) else None
        out.append(rng.integers(info.min, info.max + 1, t.shape).astype(t.dtype) if info
                   else rng.standard_normal(t.shape).astype(t.dtype))  # fmt: skip
    return out


def _check_runs(models: dict[str, Path], inputs, expected) -> None:
    for flavour, model in models.items():
        got = PATHS[flavour].run(model, inputs)
        assert len(got) == len(expected), flavour
        for k, (a, b) in enumerate(zip(got, expected)):
            assert a.dtype == b.dtype and np.array_equal(a, b), (
                f"{model.name} ({flavour}) output {k}: "
                f"{int(np.sum(a != b))} of {a.size} elements differ")


def _check_each_partition(tmp_path: Path, source: bytes, done, inputs, oracle) -> None:
    """Each partition alone: its submodel spliced (one accelerator op) fed BUILTIN_REF's
    tensors of the original model gives BUILTIN_REF's tensors, through both paths. The
    submodels side by side in one subgraph, so that LiteRT runs once per path."""
    from qaccel.frontend.tflite_writer import ModelSpec, OperatorSpec, SubgraphSpec, write_model

    tensors = oracle(source, [inputs]).tensors[0]
    union = SubgraphSpec("partitions", [], [], [], [])
    alone, feed, expected = [], [], []
    for p in done:
        sub, where = partition_submodel(source, p.partition)
        sg = read_model(sub).subgraphs[0]
        at, first_op = len(union.tensors), len(union.operators)
        for t in sg.tensors:  # unique names: LiteRT's signature maps them
            t.name = f"{p.partition.name}/{t.name}"
        union.tensors += sg.tensors
        union.operators += [OperatorSpec(o.op, [t + at if t >= 0 else t for t in o.inputs],
                                         [t + at for t in o.outputs], o.options, o.version,
                                         o.custom_code, o.custom_options)
                            for o in sg.operators]  # fmt: skip
        union.inputs += [t + at for t in sg.inputs]
        union.outputs += [t + at for t in sg.outputs]
        back = {v: k for k, v in where.items()}
        feed += [tensors[back[t]] for t in sg.inputs]
        expected += [tensors[back[t]] for t in sg.outputs]
        alone.append(CompiledPartition(
            Partition(p.partition.name, 0, tuple(range(first_op, len(union.operators))), (), ()),
            p.program, tuple(where[t] + at for t in p.inputs),
            tuple(where[t] + at for t in p.outputs)))  # fmt: skip
    models = _write(tmp_path, write_model(ModelSpec([union])), alone)
    assert len(read_model(models["dispatch"].read_bytes()).subgraphs[0].operators) == len(done)
    _check_runs(models, feed, expected)


@pytest.mark.parametrize("name", CORPUS_MODELS)
def test_corpus_model_spliced_is_bit_exact_with_the_original(name, tmp_path, oracle):
    path = CORPUS / f"{name}.tflite"
    source, compiled, done, lines = _spliced(path)
    assert len(done) + len(lines) >= len(compiled.functions)
    if name in COVERED:
        assert len(done) == COVERED[name], lines
    inputs, reference = committed_reference(path.with_suffix(".ref.npz"))
    if name in CPU_KERNELS_DIFFER:
        _check_each_partition(tmp_path, source, done, inputs[0], oracle)
        return
    _check_runs(_write(tmp_path, source, done), inputs[0], reference.outputs[0])


@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_model_spliced_is_bit_exact_with_the_original(name, tmp_path, oracle):
    path = FIXTURE_MODELS / f"{name}.tflite"
    source, compiled, done, lines = _spliced(path)
    if name in COVERED:
        assert len(done) == COVERED[name], lines
    inputs = _random_inputs(source, seed=3)
    if name in NO_REFERENCE:
        assert read_model(splice(source, done, "dispatch")).subgraphs[0].inputs
        return
    expected = oracle(source, [inputs], keep_all_tensors=False).outputs[0]
    _check_runs(_write(tmp_path, source, done), inputs, expected)


@pytest.mark.parametrize("flavour", list(PATHS))
def test_splice_keeps_every_other_operator_tensor_signature_and_metadata(flavour):
    source, _, done, _ = _spliced(FIXTURE_MODELS / "small_cnn.tflite")
    original, spliced = read_model(source), read_model(splice(source, done, flavour))
    a, b = original.subgraphs[0], spliced.subgraphs[0]
    covered = {k for p in done for k in p.partition.ops}
    kept = [op for k, op in enumerate(a.operators) if k not in covered]
    code = aot.DISPATCH_CODE if flavour == "dispatch" else aot.CUSTOM_CODE
    ours = [op for op in b.operators if op.custom_code == code]
    assert [op for op in b.operators if op.custom_code != code] == kept
    assert len(ours) == len(done)
    assert b.tensors[: len(a.tensors)] == a.tensors
    assert (b.inputs, b.outputs, b.name) == (a.inputs, a.outputs, a.name)
    assert spliced.signature_defs == original.signature_defs
    assert spliced.description == original.description
    extra = {aot.BUILD_STAMP_KEY: aot.build_stamp()} if flavour == "dispatch" else {}
    assert spliced.metadata == {**original.metadata, **extra}
    for op, p in zip(ours, done):
        assert op.outputs == list(p.outputs)
        assert op.inputs[: len(p.inputs)] == list(p.inputs)


def test_partitions_json_names_each_program_by_its_hash():
    _, _, done, _ = _spliced(FIXTURE_MODELS / "small_cnn.tflite")
    files = partition_files(done)
    index = json.loads(files["partitions.json"])
    assert [e["name"] for e in index["partitions"]] == [p.partition.name for p in done]
    for e, p in zip(index["partitions"], done):
        assert files[e["program"]] == p.program
        assert e["program_sha256"] == hashlib.sha256(p.program).hexdigest()
        assert (e["ops"], e["inputs"], e["outputs"]) == (list(p.partition.ops), list(p.inputs),
                                                         list(p.outputs))  # fmt: skip


def test_a_partition_left_on_the_cpu_is_one_line_and_the_models_are_still_written(tmp_path):
    """A FULLY_CONNECTED on token rows `[1, 3, 32]` without keep_num_dims (its result packs as
    rows, not in the tokens' layout) stays a host op of its accelerator function reading its
    constant weights, which programs cannot hold: the function stays CPU operators, reported
    in one line; the models are still written."""
    from test_fully_connected_ranks import fc_model

    path = tmp_path / "fc_tokens.tflite"
    path.write_bytes(fc_model((1, 3, 32), False, True, False, 16))
    source, compiled, done, lines = _spliced(path)
    assert len(done) < len(compiled.functions) and lines
    assert all("\n" not in line and "stays on the CPU" in line for line in lines)
    from qaccel.tools.qaccel_compile import run

    out = tmp_path / "art"
    assert run([str(path), "-o", str(out), "--quiet"]) == 0
    manifest = json.loads((out / "manifest.json").read_text())
    for name in (aot.DISPATCH_FILE, aot.AOT_FILE, "partitions.json",
                 *(f"programs/{p.partition.name}.qprog" for p in done)):  # fmt: skip
        assert name in manifest["files"], name
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == manifest["files"][name]


def test_a_composite_is_spliced_whole_its_program_computing_the_decomposition():
    """composite.tflite: qaccel-compile fuses both composites and puts them on the accelerator
    with the convolution; the partition is the three operators of subgraph 0 (the composite
    ops themselves, not the ops of their decompositions), its submodel the decompositions
    inlined where the composites stood (as LiteRT inlines a composite its plugin does not
    select), and the decomposition subgraphs are never partitioned on their own."""
    from qaccel.backends.litert.partitions import decomposition_subgraphs

    source, compiled, done, lines = _spliced(FIXTURE_MODELS / "composite.tflite")
    assert not lines
    (p,) = done
    assert (p.partition.subgraph, p.partition.ops) == (0, (0, 1, 2))
    sub = read_model(extract_partition(source, p.partition))
    assert len(sub.subgraphs) == 1
    assert [op.op for op in sub.subgraphs[0].operators] == ["CONV_2D", "ADD", "MUL", "MUL",
                                                            "AVERAGE_POOL_2D"]  # fmt: skip
    assert decomposition_subgraphs(read_model(source)) == {1, 2}
    again, _ = compile_partitions(source, compiled, api.partition_compiler(), recompile=True)
    assert [a.program for a in again] == [p.program]


def test_compile_partition_refuses_what_is_not_one_accelerator_function():
    source = (FIXTURE_MODELS / "small_cnn.tflite").read_bytes()
    sg = read_model(source).subgraphs[0]
    softmax = next(k for k, op in enumerate(sg.operators) if op.op == "SOFTMAX")
    op = sg.operators[softmax]
    part = Partition("soft", 0, (softmax,), tuple(op.inputs), tuple(op.outputs))
    sub = read_model(extract_partition(source, part))
    assert [o.op for o in sub.subgraphs[0].operators] == ["SOFTMAX"]
    with pytest.raises(PartitionError, match="^soft: compiled into 0 accelerator functions"):
        compile_partition(source, part, api.partition_compiler())


def test_compile_partition_model_gives_one_program_per_subgraph():
    """LiteRT's outlined form: each subgraph one partition (here the fixtures' first
    partition, extracted); the program is the one qaccel-compile splices in."""
    source, _, done, _ = _spliced(FIXTURE_MODELS / "small_cnn.tflite")
    first: CompiledPartition = done[0]
    outlined = extract_partition(source, first.partition)
    (program,) = compile_partition_model(outlined, api.partition_compiler())
    assert program == first.program
    sg = read_model(source).subgraphs[0]
    softmax = next(k for k, op in enumerate(sg.operators) if op.op == "SOFTMAX")
    op = sg.operators[softmax]
    softmax_only = extract_partition(source, Partition("soft", 0, (softmax,), tuple(op.inputs),
                                                       tuple(op.outputs)))  # fmt: skip
    with pytest.raises(PartitionError, match="^subgraph 0: "):
        compile_partition_model(softmax_only, api.partition_compiler())


def test_model_io_reads_what_read_model_reads():
    """`qaccel-run --runtime litert` reads inputs, outputs and op counts from a few tables."""
    from collections import Counter

    from qaccel.backends.litert.model_io import custom_code_counts, model_io
    from qaccel.backends.litert.runtime import _io_types

    source, _, done, _ = _spliced(FIXTURE_MODELS / "small_cnn.tflite")
    for data in (source, splice(source, done, "dispatch"), splice(source, done, "custom-op"),
                 (CORPUS / "transformer.tflite").read_bytes()):  # fmt: skip
        spec = read_model(data)
        assert model_io(data) == _io_types(spec)
        assert custom_code_counts(data) == Counter(op.custom_code for sg in spec.subgraphs
                                                   for op in sg.operators if op.custom_code)
    for bad in (b"", b"\0" * 8, source[:64]):
        with pytest.raises(ValueError):
            model_io(bad)


# Partition programs taken from the whole-model compile (compile_partitions' default) against
# every partition compiled again (recompile=True, QACCEL_PARTITION_RECOMPILE=1).
REUSED = {"small_cnn": 2, "mobilenet_v2": 1, "cnn": 2, "residual": 1}
"""Programs the whole-model compile must keep giving (a regression compiles them again)."""


@pytest.mark.parametrize("name", [*(f"corpus/{m}" for m in CORPUS_MODELS), *FIXTURES])
def test_programs_from_the_whole_model_compile_are_the_recompiled_ones(name):
    path = (CORPUS / f"{name.removeprefix('corpus/')}.tflite" if name.startswith("corpus/")
            else FIXTURE_MODELS / f"{name}.tflite")  # fmt: skip
    source, compiled, done, lines = _spliced(path)
    again, again_lines = compile_partitions(source, compiled, api.partition_compiler(),
                                            recompile=True)  # fmt: skip
    assert [p.partition for p in done] == [p.partition for p in again]
    for a, b in zip(done, again):
        assert (a.inputs, a.outputs) == (b.inputs, b.outputs), a.partition.name
        assert a.program == b.program, a.partition.name
        assert not b.reused
    assert lines == again_lines
    if name in REUSED:
        assert sum(p.reused for p in done) == REUSED[name]


def test_recompile_is_chosen_by_the_environment(monkeypatch):
    from qaccel.backends.litert.partitions import RECOMPILE_ENV

    source, compiled, done, _ = _spliced(FIXTURE_MODELS / "small_cnn.tflite")
    assert all(p.reused for p in done)
    monkeypatch.setenv(RECOMPILE_ENV, "1")
    again, _ = compile_partitions(source, compiled, api.partition_compiler())
    assert again == done and not any(p.reused for p in again)


def test_a_program_the_whole_model_compile_does_not_prove_is_compiled_again():
    """An op of @vta_fn_0 naming a tensor of the other partition: neither function is shown to
    compute exactly its partition, so both are compiled again, to the same programs."""
    from xdsl.dialects.builtin import NameLoc, StringAttr, UnknownLoc

    source, _, done, _ = _spliced(FIXTURE_MODELS / "small_cnn.tflite")
    compiler = api.partition_compiler()
    compiled = compiler(source)
    sg = read_model(source).subgraphs[0]
    other = sg.tensors[sg.operators[done[1].partition.ops[0]].outputs[0]].name
    f = next(op for op in compiled.module.ops
             if getattr(op, "sym_name", None) and op.sym_name.data == done[0].partition.name)
    inner = next(op for op in f.walk() if op is not f and op.name.startswith("accel."))
    inner.location = NameLoc(StringAttr(other), UnknownLoc())
    again, _ = compile_partitions(source, compiled, compiler)
    assert again == done and not any(p.reused for p in again)
