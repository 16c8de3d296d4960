"""libqaccel_delegate, the classic TFLite delegate: LiteRT's Interpreter under the BUILTIN_REF
resolver with the delegate loaded from a qaccel-compile artifact is bit-exact with BUILTIN_REF
alone, the delegate's kernels ran (its counters), and a bad option, a tampered artifact or one
that does not match the model is one line through LiteRT's own error path. Every Interpreter
runs in a forked child (`run_delegate`). `benchmarks/bench_delegate.py` runs every fixture and
corpus model."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("ai_edge_litert")

from qaccel.backends.litert.delegate import (  # noqa: E402
    DELEGATE_SOURCES,
    delegate_library,
    run_delegate,
    annotate_partitions,
)
from qaccel.backends.litert.runtime import LiteRtError  # noqa: E402
from qaccel.frontend.tflite_writer import read_model  # noqa: E402

FIXTURES = Path(__file__).parent / "fixtures"
MODELS = FIXTURES / "models"


def _artifact(model: Path, out: Path, annotate: bool = True) -> Path:
    from qaccel.tools.qaccel_compile import run

    assert run([str(model), "-o", str(out), "--quiet"]) == 0
    if annotate:
        annotate_partitions(out)
    return out


def _inputs(model: Path, n: int = 2, seed: int = 0) -> list[list[np.ndarray]]:
    sg = read_model(model.read_bytes()).subgraphs[0]
    rng = np.random.default_rng(seed)
    return [[rng.integers(-128, 128, sg.tensors[i].shape).astype(np.int8) for i in sg.inputs]
            for _ in range(n)]  # fmt: skip


@pytest.fixture(scope="module")
def small_cnn(tmp_path_factory) -> Path:
    return _artifact(MODELS / "small_cnn.tflite", tmp_path_factory.mktemp("delegate") / "small")


def _copy(artifact: Path, tmp_path: Path) -> Path:
    out = tmp_path / "artifact"
    shutil.copytree(artifact, out)
    return out


def _edit_partitions(artifact: Path, change) -> None:
    """Change partitions.json and give manifest.json its new hash (a consistent artifact)."""
    doc = json.loads((artifact / "partitions.json").read_text())
    change(doc)
    text = json.dumps(doc).encode()
    (artifact / "partitions.json").write_bytes(text)
    manifest = json.loads((artifact / "manifest.json").read_text())
    manifest["files"]["partitions.json"] = hashlib.sha256(text).hexdigest()
    (artifact / "manifest.json").write_text(json.dumps(manifest))


def _error(model: Path, artifact: Path | None, options=None, inputs=None) -> str:
    with pytest.raises(LiteRtError) as e:
        run_delegate(model, artifact, inputs or _inputs(model, 1), options)
    message = str(e.value)
    assert "\n" not in message and message.startswith("qaccel delegate: "), message
    return message


# --------------------------------------------------------------------------------------------
# Bit-exact, and the delegate ran


def _bit_exact_with_partitions(result: dict, reference, art: Path) -> tuple[list, dict]:
    """Asserts the delegate's outputs equal BUILTIN_REF's; the artifact's partitions and the
    delegate's counters, for the caller's checks of what ran."""
    for got, want in zip(result["outputs"], reference.outputs, strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    return json.loads((art / "partitions.json").read_text())["partitions"], result["counters"]


@pytest.mark.parametrize("model", ["small_cnn", "cnn", "residual", "pad_concat_slice", "composite"])
def test_delegate_is_bit_exact_with_builtin_ref(model, tmp_path, oracle):
    path = MODELS / f"{model}.tflite"
    art = _artifact(path, tmp_path / model)
    inputs = _inputs(path)
    result = run_delegate(path, art, inputs)
    reference = oracle(path, inputs, keep_all_tensors=False)
    parts, counters = _bit_exact_with_partitions(result, reference, art)
    assert counters["partitions"] == len(parts) > 0
    assert counters["claimed_nodes"] == sum(len(p["ops"]) for p in parts)
    assert counters["kernels"] >= 1 and counters["invocations"] == counters["kernels"] * 2


def test_corpus_model_is_bit_exact_with_its_committed_outputs(tmp_path):
    from qaccel.explore.conformance import committed_reference

    path = FIXTURES / "corpus" / "resnet8.tflite"
    inputs, reference = committed_reference(path.with_suffix(".ref.npz"))
    art = _artifact(path, tmp_path / "resnet8")
    result = run_delegate(path, art, inputs[:1])
    for a, b in zip(result["outputs"][0], reference.outputs[0], strict=True):
        np.testing.assert_array_equal(a, b)
    assert result["counters"]["invocations"] == result["counters"]["kernels"] >= 1


def test_qaccel_compiles_partitions_file_is_taken_as_it_is(tmp_path):
    """Without annotate_partitions: the delegate checks the programs' boundary shapes and what
    the claimed nodes read and compute (a corpus model, its committed BUILTIN_REF outputs)."""
    from qaccel.explore.conformance import committed_reference

    path = FIXTURES / "corpus" / "ds_cnn.tflite"
    art = _artifact(path, tmp_path / "ds_cnn", annotate=False)
    assert "op_codes" not in (art / "partitions.json").read_text()
    inputs, reference = committed_reference(path.with_suffix(".ref.npz"))
    result = run_delegate(path, art, inputs)
    for got, want in zip(result["outputs"], reference.outputs, strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)
    parts = json.loads((art / "partitions.json").read_text())["partitions"]
    assert result["counters"]["partitions"] == len(parts) > 0
    assert result["counters"]["invocations"] == result["counters"]["kernels"] * len(inputs)


def test_annotated_partitions_file_describes_the_original_model(small_cnn):
    doc = json.loads((small_cnn / "partitions.json").read_text())
    manifest = json.loads((small_cnn / "manifest.json").read_text())
    text = (small_cnn / "partitions.json").read_bytes()
    assert manifest["files"]["partitions.json"] == hashlib.sha256(text).hexdigest()
    assert doc["config"] == "vta-default"
    assert doc["partitions"][0]["op_codes"] == [3, 4, 3, 0, 17, 3, 1]
    assert doc["partitions"][0]["tensors"][0]["type"] == 9  # int8
    sg = read_model((MODELS / "small_cnn.tflite").read_bytes()).subgraphs[0]
    assert doc["model"] == {"operators": len(sg.operators), "tensors": len(sg.tensors)}
    claimed = [o for p in doc["partitions"] for o in p["ops"]]
    # the RESHAPE and the SOFTMAX stay on the interpreter's kernels
    kept = [op.op for k, op in enumerate(sg.operators) if k not in claimed]
    assert kept == ["RESHAPE", "SOFTMAX"]
    for p in doc["partitions"]:
        data = (small_cnn / p["program"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == p["program_sha256"]
        assert data[:8] == b"QACCPROG"


# --------------------------------------------------------------------------------------------
# On the spot: no artifact, each subgraph compiled at Prepare


@pytest.fixture(scope="module")
def spot_cache(tmp_path_factory):
    """The compile cache (QACCEL_PLUGIN_CACHE, the plugin's) of this module's on-the-spot runs:
    each model compiles once, in the first test that delegates it."""
    old = os.environ.get("QACCEL_PLUGIN_CACHE")
    path = tmp_path_factory.mktemp("spot-cache")
    os.environ["QACCEL_PLUGIN_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("QACCEL_PLUGIN_CACHE", None)
    else:
        os.environ["QACCEL_PLUGIN_CACHE"] = old


def test_on_the_spot_claims_what_qaccel_compile_claims(small_cnn, spot_cache, oracle):
    """Bit-exact with BUILTIN_REF, the same nodes as the artifact's partitions.json, and a
    second Interpreter of the same model compiles nothing (the cache). Every fixture and corpus
    model: benchmarks/bench_delegate.py."""
    path, art = MODELS / "small_cnn.tflite", small_cnn
    inputs = _inputs(path)
    result = run_delegate(path, None, inputs)
    reference = oracle(path, inputs, keep_all_tensors=False)
    parts, counters = _bit_exact_with_partitions(result, reference, art)
    assert counters["compiled_subgraphs"] == 1
    assert counters["partitions"] == len(parts) > 0
    assert counters["claimed_nodes"] == sum(len(p["ops"]) for p in parts)
    assert counters["invocations"] == counters["kernels"] * len(inputs)
    cached = sorted(spot_cache.glob("delegate-*.bin"))
    again = run_delegate(path, None, inputs[:1])
    assert sorted(spot_cache.glob("delegate-*.bin")) == cached
    for a, b in zip(again["outputs"][0], result["outputs"][0], strict=True):
        np.testing.assert_array_equal(a, b)


def test_on_the_spot_claims_a_composite_as_qaccel_compile_does(spot_cache, oracle, tmp_path):
    """composite.tflite: the main subgraph is described with both decompositions (read through
    AcquireSubgraphContext) as qaccel-compile sees the model, so the delegate claims the same
    three nodes (the convolution and both composite nodes) with the same program as the
    artifact's partition; the decomposition subgraphs LiteRT offers next are left to their
    composite, never compiled on their own."""
    from qaccel.tools.qaccel_compile import run as compile_run

    path = MODELS / "composite.tflite"
    art = tmp_path / "composite"
    assert compile_run([str(path), "-o", str(art), "--quiet"]) == 0
    inputs = _inputs(path, 1)
    result = run_delegate(path, None, inputs)
    reference = oracle(path, inputs, keep_all_tensors=False)
    parts, c = _bit_exact_with_partitions(result, reference, art)
    assert [(p["subgraph"], p["ops"]) for p in parts] == [(0, [0, 1, 2])]
    assert c["compiled_subgraphs"] == 1 and c["skipped_subgraphs"] == 2
    assert c["claimed_nodes"] == 3 and c["kernels_ran"] == c["kernels"] == 1
    kept = {f.read_bytes() for f in spot_cache.glob("delegate-*.bin")}
    program = (art / parts[0]["program"]).read_bytes()
    assert any(program in answer for answer in kept)  # the artifact's program, byte for byte


def test_on_the_spot_compiles_a_loop_body(spot_cache, tmp_path, oracle):
    """A WHILE model: LiteRT offers the delegate the main subgraph, the condition and the body;
    the body's convolution runs on our kernel once per iteration, bit-exact."""
    from control_flow_models import while_conv_model

    path = tmp_path / "while.tflite"
    path.write_bytes(while_conv_model(iterations=2))
    inputs = _inputs(path)
    result = run_delegate(path, None, inputs)
    c = result["counters"]
    assert c["compiled_subgraphs"] == 3 and c["partitions"] == 1 and c["claimed_nodes"] == 1
    assert c["kernels_ran"] == c["kernels"] == 1 and c["invocations"] == 2 * len(inputs)
    reference = oracle(path, inputs, keep_all_tensors=False)
    for got, want in zip(result["outputs"], reference.outputs, strict=True):
        for a, b in zip(got, want, strict=True):
            np.testing.assert_array_equal(a, b)


def test_the_artifact_delegate_runs_the_partitions_of_every_subgraph(spot_cache, tmp_path,
                                                                     oracle):
    """A WHILE model: partitions.json may name partitions in any subgraph, here the loop
    body's convolution (each subgraph but the main one is compiled as a model of its own, as
    LiteRT's plugin and the on-the-spot delegate compile each subgraph they are shown). The
    main subgraph's Prepare finds the body's context, the body's Prepare claims the partition:
    the same node the delegate claims on the spot, bit-exact, run once per iteration."""
    from control_flow_models import while_conv_model

    from qaccel import api
    from qaccel.backends.litert.partitions import other_subgraph_partitions, partition_files

    path = tmp_path / "while.tflite"
    data = while_conv_model(iterations=2)
    path.write_bytes(data)
    done, lines = other_subgraph_partitions(data, api.partition_compiler())
    assert [(p.partition.subgraph, p.partition.ops) for p in done] == [(2, (1,))], lines
    art = tmp_path / "art"
    files = {**partition_files(done), "model.tflite": data}
    for rel, blob in files.items():
        (art / rel).parent.mkdir(parents=True, exist_ok=True)
        (art / rel).write_bytes(blob)
    (art / "manifest.json").write_text(json.dumps(
        {"files": {rel: hashlib.sha256(blob).hexdigest() for rel, blob in files.items()}}))
    annotate_partitions(art)
    inputs = _inputs(path)
    reference = oracle(path, inputs, keep_all_tensors=False)
    result = run_delegate(path, art, inputs)
    parts, c = _bit_exact_with_partitions(result, reference, art)
    assert [p["subgraph"] for p in parts] == [2]
    assert c["partitions"] == c["claimed_nodes"] == 1
    assert c["kernels_ran"] == c["kernels"] == 1 and c["invocations"] == 2 * len(inputs)
    spot = run_delegate(path, None, inputs)
    assert spot["counters"]["claimed_nodes"] == 1
    for a, b in zip(spot["outputs"], result["outputs"], strict=True):
        for x, y in zip(a, b, strict=True):
            np.testing.assert_array_equal(x, y)


def test_an_artifact_partition_in_a_missing_subgraph_is_one_line(small_cnn, tmp_path):
    art = tmp_path / "art"
    shutil.copytree(small_cnn, art)
    doc = json.loads((art / "partitions.json").read_text())
    doc["partitions"][0]["subgraph"] = 3
    text = json.dumps(doc)
    (art / "partitions.json").write_text(text)
    manifest = json.loads((art / "manifest.json").read_text())
    manifest["files"]["partitions.json"] = hashlib.sha256(text.encode()).hexdigest()
    (art / "manifest.json").write_text(json.dumps(manifest))
    error = _error(MODELS / "small_cnn.tflite", art)
    assert "has partition vta_fn_0 in subgraph 3, which the model does not have" in error, error


DELEGATE_HOST = Path(__file__).parent / "litert" / "delegate_host.c"


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler")
@pytest.mark.parametrize(("model", "config"), [("composite", None),
                                               ("small_cnn", "vta-store-requant")])  # fmt: skip
def test_c_host_compiles_on_the_spot_without_python(model, config, spot_cache, tmp_path, oracle):
    """tests/litert/delegate_host.c links libLiteRt.so only: it opens the delegate library,
    hands the delegate to CompiledModel as an accelerator of its own (CPU kernels in reference
    mode for the rest); the delegate's bridge starts this environment's Python inside the host
    to compile each subgraph; bit-exact, and the host checks through the delegate's counters
    that it compiled, claimed nodes and ran every kernel. A bad configuration is one line."""
    from qaccel.backends.litert.delegate import delegate_library
    from qaccel.backends.litert.runtime import KERNEL_DIR, litert_library

    lrt = litert_library().parent
    exe = tmp_path / "delegate_host"
    subprocess.run(["cc", "-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", f"-I{KERNEL_DIR}",
                    str(DELEGATE_HOST), f"-L{lrt}", "-lLiteRt", f"-Wl,-rpath,{lrt}", "-ldl", "-o",
                    str(exe)], check=True, capture_output=True)  # fmt: skip
    path = MODELS / f"{model}.tflite"
    sg = read_model(path.read_bytes()).subgraphs[0]
    (t_in,), (t_out,) = [sg.tensors[i] for i in sg.inputs], [sg.tensors[i] for i in sg.outputs]
    x = _inputs(path, 1)[0][0]
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    shapes = ["x".join(map(str, t.shape)) for t in (t_in, t_out)]
    args = [str(exe), str(path), str(delegate_library()), str(tmp_path / "in.bin"), shapes[0],
            str(tmp_path / "out.bin"), shapes[1], *([config] if config else [])]  # fmt: skip
    run = subprocess.run(args, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-2000:]
    assert "subgraph(s) compiled on the spot" in run.stdout
    want = oracle(path, [[x]], keep_all_tensors=False).outputs[0][0]
    assert (tmp_path / "out.bin").read_bytes() == want.tobytes()
    if config:
        bad = subprocess.run(args[:-1] + ["no-such-configuration"], capture_output=True,
                             text=True, timeout=600)  # fmt: skip
        assert bad.returncode == 1
        assert "qaccel delegate: option config='no-such-configuration'" in bad.stderr


def test_on_the_spot_failure_fails_prepare_in_one_line(spot_cache):
    error = _error(MODELS / "small_cnn.tflite", None, {"config": "no-such-configuration"})
    assert error.startswith("qaccel delegate: option config='no-such-configuration': ")


# --------------------------------------------------------------------------------------------
# Errors: one line, through LiteRT's error path


@pytest.mark.parametrize(("options", "message"), [
    ({"colour": "red"}, "unknown option 'colour' (the options are artifact and config)"),
    ({"artifact": ""}, "option 'artifact' is empty"),
    ({"config": "vta-store-requant"}, "was compiled for the configuration 'vta-default', not "
                                      "'vta-store-requant'"),
])  # fmt: skip
def test_bad_options_are_one_line(small_cnn, options, message):
    assert message in _error(MODELS / "small_cnn.tflite", small_cnn, options)


def test_the_matching_config_is_accepted(small_cnn):
    model = MODELS / "small_cnn.tflite"
    result = run_delegate(model, small_cnn, _inputs(model, 1), {"config": "vta-default"})
    assert result["counters"]["invocations"] == result["counters"]["kernels"]


def test_an_artifact_without_partitions_is_refused(tmp_path):
    (tmp_path / "manifest.json").write_text('{"files": {}}')
    assert "the artifact names 'partitions.json', which it does not hold" in _error(
        MODELS / "small_cnn.tflite", tmp_path)
    assert "which it does not hold" in _error(MODELS / "small_cnn.tflite", tmp_path / "missing")


def _program_flip(art: Path) -> None:
    program = art / "programs" / "vta_fn_0.qprog"
    data = bytearray(program.read_bytes())
    data[-1] ^= 1
    program.write_bytes(bytes(data))


def _program_link(art: Path) -> None:
    program = art / "programs" / "vta_fn_0.qprog"
    os.replace(program, art / "elsewhere.qprog")
    program.symlink_to(art / "elsewhere.qprog")


@pytest.mark.parametrize(("tamper", "message"), [
    (_program_flip, "programs/vta_fn_0.qprog does not match its SHA-256 in partitions.json"),
    (lambda a: (a / "partitions.json").write_text('{"partitions": []}'),
     "partitions.json does not match its SHA-256 in manifest.json"),
    (_program_link, "the artifact names 'programs/vta_fn_0.qprog', which is a symbolic link"),
    (lambda a: _edit_partitions(a, lambda d: d["partitions"][0].update(program="../x.qprog")),
     "the artifact names '../x.qprog', a path outside the artifact"),
    (lambda a: _edit_partitions(a, lambda d: d["partitions"][0].update(program="/etc/passwd")),
     "the artifact names '/etc/passwd', a path outside the artifact"),
    (lambda a: _edit_partitions(a, lambda d: d["partitions"][0].pop("ops")),
     "partition vta_fn_0: ops, inputs or outputs is not a list of indices"),
    (lambda a: _edit_partitions(a, lambda d: d["partitions"][0].update(inputs=[0, 1])),
     "programs/vta_fn_0.qprog has 1 inputs and 1 outputs, partitions.json gives partition "
     "vta_fn_0 2 and 1"),
    (lambda a: (a / "manifest.json").write_text("{"), "manifest.json: invalid JSON"),
])  # fmt: skip
def test_a_tampered_artifact_is_refused_in_one_line(small_cnn, tmp_path, tamper, message):
    art = _copy(small_cnn, tmp_path)
    tamper(art)
    assert message in _error(MODELS / "small_cnn.tflite", art)


def _replace_program(art: Path, k: int, change) -> None:
    """Change partition k's program, its checksum made right again, its hashes updated."""
    from qaccel.backends.vta.program.writer import seal

    program = art / "programs" / f"vta_fn_{k}.qprog"
    data = bytearray(program.read_bytes())
    change(data)
    data = seal(bytes(data))
    program.write_bytes(data)
    digest = hashlib.sha256(data).hexdigest()
    _edit_partitions(art, lambda d: d["partitions"][k].update(program_sha256=digest))
    manifest = json.loads((art / "manifest.json").read_text())
    manifest["files"][f"programs/vta_fn_{k}.qprog"] = digest
    (art / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: struct.pack_into("<I", d, 8, 9), "program format version 9"),
    (lambda d: struct.pack_into("<I", d, struct.unpack_from("<Q", d, 168)[0], 77),
     "step 0 has unknown kind 77"),
])  # fmt: skip
def test_a_corrupt_program_with_good_hashes_is_refused(small_cnn, tmp_path, change, message):
    art = _copy(small_cnn, tmp_path)
    _replace_program(art, 0, change)
    error = _error(MODELS / "small_cnn.tflite", art)
    assert error.startswith(f"qaccel delegate: '{art}': programs/vta_fn_0.qprog: ")
    assert message in error


def test_a_program_whose_checksum_is_wrong_is_refused(small_cnn, tmp_path):
    art = _copy(small_cnn, tmp_path)
    _replace_program(art, 0, lambda d: None)
    program = art / "programs" / "vta_fn_0.qprog"
    data = bytearray(program.read_bytes())
    data[-1] ^= 1
    program.write_bytes(bytes(data))
    digest = hashlib.sha256(data).hexdigest()
    _edit_partitions(art, lambda d: d["partitions"][0].update(program_sha256=digest))
    manifest = json.loads((art / "manifest.json").read_text())
    manifest["files"]["programs/vta_fn_0.qprog"] = digest
    (art / "manifest.json").write_text(json.dumps(manifest))
    assert "checksum" in _error(MODELS / "small_cnn.tflite", art)


def _ops(partition: dict, ops: list[int]) -> None:
    partition["ops"] = ops
    partition.pop("op_codes")


@pytest.mark.parametrize(("change", "message"), [
    (lambda d: d["model"].update(operators=11), "is for a model of 11 operators"),
    (lambda d: d["partitions"][0]["op_codes"].__setitem__(0, 4),
     "node 0 is operator 3 in the model, 4 in the artifact (partition vta_fn_0)"),
    (lambda d: d["partitions"][0]["tensors"][0].update(type=3),
     "partition vta_fn_0: tensor 0 has type 9 in the model, 3 in the artifact"),
    (lambda d: d["partitions"][0]["tensors"][1].update(zero_point=5),
     "partition vta_fn_0: tensor 17 is quantized differently in the model"),
    (lambda d: _ops(d["partitions"][0], [0, 1, 2, 4, 5, 6]),
     "node 4 of partition vta_fn_0 reads tensor"),
    (lambda d: _ops(d["partitions"][1], [8, 2]), "node 2 is in partitions vta_fn_0 and vta_fn_1"),
    (lambda d: d["partitions"][1].update(outputs=[20]),
     "partition vta_fn_1: output tensor 20 is not computed by its nodes"),
    (lambda d: _ops(d["partitions"][1], [8, 99]), "partition vta_fn_1 names node 99"),
])  # fmt: skip
def test_an_artifact_that_does_not_match_the_model_fails_prepare(small_cnn, tmp_path, change,
                                                                 message):  # fmt: skip
    art = _copy(small_cnn, tmp_path)
    _edit_partitions(art, change)
    error = _error(MODELS / "small_cnn.tflite", art)
    assert "does not match the model" in error or "is for a model" in error
    assert message in error


def test_another_models_artifact_fails_prepare(small_cnn):
    error = _error(MODELS / "cnn.tflite", small_cnn)
    assert f"the artifact '{small_cnn}' is for a model of 10 operators" in error


def test_an_error_of_a_program_fails_invoke(small_cnn, monkeypatch):
    """A run over the step limit fails only when it runs: Invoke raises with our line."""
    monkeypatch.setenv("QACCEL_STEP_LIMIT", "1")
    error = _error(MODELS / "small_cnn.tflite", small_cnn)
    assert error.startswith("qaccel delegate: partition vta_fn_0: QACCEL_VTA: layer 0, ")
    assert error.endswith("pass the step limit of 1 (raise it with QACCEL_STEP_LIMIT)")


# --------------------------------------------------------------------------------------------
# The library


def test_pip_install_builds_the_delegate_from_the_current_sources():
    path = delegate_library()
    assert path.name == "libqaccel_delegate.so" and path.is_file()
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(path)], capture_output=True,
                             text=True).stdout if shutil.which("nm") else ""  # fmt: skip
    for name in ("tflite_plugin_create_delegate", "tflite_plugin_destroy_delegate",
                 "qaccel_delegate_invocations"):
        assert not symbols or f" {name}\n" in symbols


_SANITIZED_RUN = """
import os, sys, numpy as np
from qaccel.backends.litert.delegate import delegate_run
from qaccel.backends.litert.runtime import LiteRtError
model, good, bad, other = sys.argv[1:5]
x = [[np.random.default_rng(0).integers(-128, 128, (1, 32, 32, 3)).astype(np.int8)]]
print(delegate_run(model, good, x)["counters"]["invocations"])
# on the spot: the subgraph described, handed to Python through the bridge, compiled (cached)
print(delegate_run(model, None, x)["counters"]["invocations"])
# a corrupt program, a bad option, a Prepare that fails, an invoke that fails, a compile that
# fails
for m, artifact, options in ((model, bad, {}), (model, good, {"colour": "red"}),
                             (other, good, {}), (model, good, "step"),
                             (model, None, {"config": "no-such-configuration"})):
    if options == "step":
        os.environ["QACCEL_STEP_LIMIT"] = "1"
        options = {}
    try:
        delegate_run(m, artifact, x, options)
    except LiteRtError as e:
        print("refused:", e)
"""


@pytest.mark.skipif(shutil.which("gcc") is None, reason="needs gcc with AddressSanitizer")
def test_delegate_under_sanitizers(small_cnn, spot_cache, tmp_path):
    """The delegate built with -fsanitize=address,undefined in a Python with ASan preloaded:
    a run with the artifact and one compiled on the spot, a corrupt program, a bad option, a
    Prepare that fails, an invoke that fails and a compile that fails, without a report."""
    sanitize = ["-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
                "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror", "-std=c99"]  # fmt: skip
    from sanitized_build import cached

    includes = sorted({f"-I{p.parent}" for p in DELEGATE_SOURCES})
    command = ["gcc", *sanitize, "-fPIC", "-shared", "-fvisibility=hidden", *includes,
               *(str(p) for p in DELEGATE_SOURCES if p.suffix == ".c"), "-lm"]  # fmt: skip
    try:
        lib = cached(tmp_path / "libqaccel_delegate.so",
                     lambda out: subprocess.run([*command, "-o", str(out)], check=True,
                                                capture_output=True),
                     label="delegate", flags=command,
                     inputs=sorted({p.parent for p in DELEGATE_SOURCES}))  # fmt: skip
        asan, libstdcxx = (subprocess.run(["gcc", f"-print-file-name={name}"], check=True,
                                          capture_output=True, text=True).stdout.strip()
                           for name in ("libasan.so", "libstdc++.so.6"))  # fmt: skip
    except subprocess.CalledProcessError as e:
        pytest.skip(f"no sanitizer build: {e.stderr.decode()[-200:]}")
    bad = _copy(small_cnn, tmp_path)
    _replace_program(bad, 1, lambda d: struct.pack_into(
        "<I", d, struct.unpack_from("<Q", d, 168)[0], 77))  # the first step's kind
    # libstdc++ preloaded too: ASan must find the __cxa_throw LiteRT's errors go through
    env = {**os.environ, "LD_PRELOAD": f"{asan} {libstdcxx}",
           "QACCEL_LITERT_DELEGATE_LIB": str(lib),
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}  # fmt: skip
    run = subprocess.run([sys.executable, "-c", _SANITIZED_RUN, str(MODELS / "small_cnn.tflite"),
                          str(small_cnn), str(bad), str(MODELS / "cnn.tflite")],
                         capture_output=True, text=True, env=env)  # fmt: skip
    assert "Sanitizer" not in run.stderr and "runtime error" not in run.stderr, run.stderr[-3000:]
    assert run.returncode == 0, run.stderr[-3000:]
    lines = run.stdout.splitlines()
    assert lines[0] == lines[1] == "2"
    assert "step 0 has unknown kind 77" in lines[2] and "unknown option 'colour'" in lines[3]
    assert "is for a model of 10 operators" in lines[4] and "step limit of 1" in lines[5]
    assert "option config='no-such-configuration'" in lines[6]
