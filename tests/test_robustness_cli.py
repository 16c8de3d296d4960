"""Hostile input to the command-line tools: every case ends with exit status 1, exactly one line
`<tool>: error: ...` on stderr, no traceback, within a time limit, and no output left behind.

The tools run in-process through their `main()` (a subprocess only where the behaviour is the
process's own: the console-script launcher). One test per class of bad input found when qaccel
was tried with ~420 malformed files and arguments.
"""

from __future__ import annotations

import os
import struct
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from qaccel.frontend.builder import (
    QParams,
    TensorSpec,
    per_axis_qparams,
    random_weights,
    single_op_model,
)
from conftest import parse_module
from qaccel.tools import qaccel_compile, qaccel_opt, qaccel_run, qaccel_sim

FIXTURES = Path(__file__).parent / "fixtures" / "models"
MLP = FIXTURES / "mlp.tflite"
TIME_LIMIT = 30.0  # seconds per case; they take well under one

Q = QParams.per_tensor(0.1, 0)


def call(tool, args) -> int:
    """The exit status of `tool.main(args)` run in-process."""
    code = 0
    try:
        result = tool.main([str(a) for a in args])
        code = result if isinstance(result, int) else 0
    except SystemExit as e:
        code = e.code if isinstance(e.code, int) else 1
    return code


def refused(capsys, tool, args, *, prog: str, expect: str, absent=()) -> str:
    """Run the tool; assert the one-line refusal (naming `expect`) and that nothing in `absent`
    was written. Returns the message."""
    start = time.perf_counter()
    code = call(tool, args)
    elapsed = time.perf_counter() - start
    err = capsys.readouterr().err
    assert code == 1, err
    assert err.endswith("\n") and err.count("\n") == 1, err
    assert err.startswith(f"{prog}: error: "), err
    assert "Traceback" not in err
    assert expect in err, err
    assert elapsed < TIME_LIMIT
    for path in absent:
        assert not Path(path).exists(), f"{path} was left behind"
    return err


def write(tmp_path: Path, name: str, data: bytes | str) -> Path:
    path = tmp_path / name
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def add_model(out_shape=(1, 4), in_shape=(1, 4)) -> bytes:
    return single_op_model(
        "ADD",
        inputs=[TensorSpec("x", in_shape, np.int8, Q), TensorSpec("z", in_shape, np.int8, Q)],
        outputs=[TensorSpec("y", out_shape, np.int8, Q)],
    )


# --- undecodable text -------------------------------------------------------------------------


def test_non_utf8_mlir(tmp_path, capsys):
    path = write(tmp_path, "bad.mlir", b"func.func @f() {\n  func.return\n}\n// \xff\xfe\n")
    out = tmp_path / "out.mlir"
    refused(capsys, qaccel_opt, [path, "-o", out], prog="qaccel-opt", expect="not UTF-8",
            absent=[out])  # fmt: skip
    refused(capsys, qaccel_run, [path, "--outputs-dir", tmp_path / "o"], prog="qaccel-run",
            expect="not UTF-8", absent=[tmp_path / "o"])  # fmt: skip
    refused(capsys, qaccel_compile, [path, "-o", tmp_path / "c"], prog="qaccel-compile",
            expect="not UTF-8", absent=[tmp_path / "c"])  # fmt: skip


def test_signature_key_not_utf8(tmp_path, capsys):
    data = add_model()
    assert data.count(b"serving_default\0") == 1
    path = write(tmp_path, "sig.tflite", data.replace(b"serving_default\0", b"serving\xffdefault\0"))
    refused(capsys, qaccel_opt, [path], prog="qaccel-opt", expect="signature 0: key is not UTF-8")


def test_tensor_name_not_utf8_is_accepted(tmp_path, capsys):
    """A tensor's name is only a label (LiteRT does not decode it either): it is decoded with
    U+FFFD replacements and the model compiles and runs; signature keys, which name the
    model's API, are refused above."""
    data = add_model()
    first = data.index(b"x\0")  # the signature's key; the tensor table's name comes after it
    at = data.index(b"x\0", first + 1)
    path = write(tmp_path, "name.tflite", data[:at] + b"\xff" + data[at + 1:])
    assert call(qaccel_compile, [path, "-o", tmp_path / "out"]) == 0, capsys.readouterr().err
    assert call(qaccel_run, [tmp_path / "out", "--outputs-dir", tmp_path / "y"]) == 0
    assert (tmp_path / "y" / "output_0.npy").exists()


# --- deep nesting -----------------------------------------------------------------------------


@pytest.mark.parametrize("text", [
    '"test.op"() {a = ' + "[" * 5000 + "]" * 5000 + "} : () -> ()\n",
    '"test.op"() ({' * 3000 + "}) : () -> ()" * 3000 + "\n",
], ids=["brackets", "regions"])  # fmt: skip
def test_deep_nesting(tmp_path, capsys, text):
    path = write(tmp_path, "deep.mlir", text)
    refused(capsys, qaccel_opt, [path, "--allow-unregistered-dialect"], prog="qaccel-opt",
            expect="deep.mlir': nested too deeply to parse")  # fmt: skip
    refused(capsys, qaccel_run, [path, "--outputs-dir", tmp_path / "o"], prog="qaccel-run",
            expect="nested too deeply to parse", absent=[tmp_path / "o"])  # fmt: skip
    refused(capsys, qaccel_compile, [path, "-o", tmp_path / "c"], prog="qaccel-compile",
            expect="nested too deeply to parse", absent=[tmp_path / "c"])  # fmt: skip


def test_complex_literal_with_three_parts(tmp_path, capsys):
    """xDSL's parser asserts on it (found by the mlir fuzz harness)."""
    path = write(tmp_path, "c.mlir", '%0 = "test.op"() {a = dense<[(1, 2, 3)]> : '
                                     'tensor<1xcomplex<i32>>} : () -> i32\n')
    refused(capsys, qaccel_opt, [path], prog="qaccel-opt", expect="cannot parse: Unexpected token")


def test_dense_literal_of_an_unusual_integer_width(tmp_path, capsys):
    """xDSL cannot pack i92 values (NotImplementedError; found by the mlir fuzz harness)."""
    path = write(tmp_path, "w.mlir", '%0 = "test.op"() {a = dense<[3, -4]> : tensor<2xi92>} : '
                                     '() -> i32\n')
    refused(capsys, qaccel_opt, [path], prog="qaccel-opt", expect="not supported by the parser")
    path = write(tmp_path, "h.mlir", "tfl.const dense<1> : tensor<i7777777777781>\n")
    refused(capsys, qaccel_opt, [path], prog="qaccel-opt", expect="too large to represent")


def test_unterminated_string_does_not_hang(tmp_path, capsys):
    """xDSL's string-literal regex backtracked exponentially (minutes for 30 characters)."""
    path = write(tmp_path, "s.mlir", 'func.func @f() attributes {a = "' + "x" * 60 + "\n} {\n}\n")
    refused(capsys, qaccel_opt, [path], prog="qaccel-opt",
            expect="End of file reached before closing string literal")  # fmt: skip
    refused(capsys, qaccel_compile, [path, "-o", tmp_path / "c"], prog="qaccel-compile",
            expect="closing string literal", absent=[tmp_path / "c"])  # fmt: skip


# --- graph wiring the importer trusted --------------------------------------------------------


def test_per_channel_constant_used_as_activation(tmp_path, capsys):
    rng = np.random.default_rng(0)
    w_q = per_axis_qparams(rng, channels=4, axis=1)
    model = single_op_model(
        "ADD",
        inputs=[TensorSpec("x", (1, 4), np.int8, Q),
                TensorSpec("w", (1, 4), np.int8, w_q, data=random_weights(rng, (1, 4)))],
        outputs=[TensorSpec("y", (1, 4), np.int8, Q)],
    )  # fmt: skip
    path = write(tmp_path, "perchannel.tflite", model)
    refused(capsys, qaccel_run, [path, "-p", "legalize-tfl-to-q", "--outputs-dir", tmp_path / "o"],
            prog="qaccel-run", expect="'w', is quantized per axis", absent=[tmp_path / "o"])  # fmt: skip


def test_reshape_shape_tensor_disagrees_with_output(tmp_path, capsys):
    model = single_op_model(
        "RESHAPE",
        inputs=[TensorSpec("x", (1, 8), np.int8, Q),
                TensorSpec("s", (2,), np.int32, None, data=np.array([2, 4], np.int32))],
        outputs=[TensorSpec("y", (4, 2), np.int8, Q)],
    )  # fmt: skip
    path = write(tmp_path, "reshape.tflite", model)
    refused(capsys, qaccel_run, [path, "--outputs-dir", tmp_path / "o"], prog="qaccel-run",
            expect="declared with shape [4, 2], but the inputs give [2, 4]",
            absent=[tmp_path / "o"])  # fmt: skip


def test_reshape_to_impossible_shape(tmp_path, capsys):
    model = single_op_model(
        "RESHAPE",
        inputs=[TensorSpec("x", (1, 8), np.int8, Q),
                TensorSpec("s", (2,), np.int32, None, data=np.array([3, 3], np.int32))],
        outputs=[TensorSpec("y", (3, 3), np.int8, Q)],
    )  # fmt: skip
    path = write(tmp_path, "reshape.tflite", model)
    refused(capsys, qaccel_opt, [path], prog="qaccel-opt", expect="cannot reshape [1, 8]")


SELF_USE = """func.func @f(%b: tensor<2xi32>) -> tensor<1x2xi32> {
  %4 = q.bias_add %4, %b : (tensor<1x2xi32>, tensor<2xi32>) -> tensor<1x2xi32>
  func.return %4 : tensor<1x2xi32>
}
"""

USE_BEFORE_DEF = """func.func @f(%a: tensor<1x2xi32>, %b: tensor<2xi32>) -> tensor<1x2xi32> {
  %1 = q.bias_add %2, %b : (tensor<1x2xi32>, tensor<2xi32>) -> tensor<1x2xi32>
  %2 = q.bias_add %a, %b : (tensor<1x2xi32>, tensor<2xi32>) -> tensor<1x2xi32>
  func.return %1 : tensor<1x2xi32>
}
"""


@pytest.mark.parametrize("text,expect", [
    (SELF_USE, "@f: op 0 (q.bias_add) uses its own result as operand 0"),
    (USE_BEFORE_DEF, "@f: op 0 (q.bias_add): operand 0 (its value) is used before its "
                     "definition by op 1 (q.bias_add)"),
], ids=["self-use", "use-before-def"])  # fmt: skip
def test_ssa_dominance(tmp_path, capsys, text, expect):
    path = write(tmp_path, "ssa.mlir", text)
    refused(capsys, qaccel_opt, [path], prog="qaccel-opt", expect=expect)
    refused(capsys, qaccel_run, [path, "--outputs-dir", tmp_path / "o"], prog="qaccel-run",
            expect=expect, absent=[tmp_path / "o"])  # fmt: skip
    refused(capsys, qaccel_compile, [path, "-o", tmp_path / "c", "-p", ""],
            prog="qaccel-compile", expect=expect, absent=[tmp_path / "c"])  # fmt: skip


def test_dominance_accepts_valid_ir():
    from qaccel.dialects.ssa import verify_dominance

    module = parse_module(
        "func.func @f(%a: tensor<1x2xi32>, %b: tensor<2xi32>) -> tensor<1x2xi32> {\n"
        "  %1 = q.bias_add %a, %b : (tensor<1x2xi32>, tensor<2xi32>) -> tensor<1x2xi32>\n"
        "  func.return %1 : tensor<1x2xi32>\n}\n"
    )
    verify_dominance(module)


# --- declared sizes ---------------------------------------------------------------------------


def huge_model() -> bytes:
    return add_model(out_shape=(1, 100000, 100000, 16), in_shape=(1, 100000, 100000, 16))


def test_huge_declared_tensors_refused_before_allocating(tmp_path, capsys):
    path = write(tmp_path, "huge.tflite", huge_model())
    refused(capsys, qaccel_run, [path, "--outputs-dir", tmp_path / "o"], prog="qaccel-run",
            expect="above the memory limit of 4.0 GiB (raise it with QACCEL_MEMORY_LIMIT)",
            absent=[tmp_path / "o"])  # fmt: skip
    refused(capsys, qaccel_compile, [path, "-o", tmp_path / "c"], prog="qaccel-compile",
            expect="above the memory limit", absent=[tmp_path / "c"])  # fmt: skip


def test_memory_limit_from_environment(tmp_path, capsys, monkeypatch):
    path = write(tmp_path, "add.tflite", add_model(out_shape=(1, 64), in_shape=(1, 64)))
    monkeypatch.setenv("QACCEL_MEMORY_LIMIT", "100")
    refused(capsys, qaccel_run, [path, "--outputs-dir", tmp_path / "o"], prog="qaccel-run",
            expect="192 bytes of tensors, above the memory limit of 100 bytes")  # fmt: skip
    monkeypatch.setenv("QACCEL_MEMORY_LIMIT", "lots")
    refused(capsys, qaccel_run, [path, "--outputs-dir", tmp_path / "o"], prog="qaccel-run",
            expect="QACCEL_MEMORY_LIMIT='lots'")  # fmt: skip
    monkeypatch.setenv("QACCEL_MEMORY_LIMIT", "1K")
    assert call(qaccel_run, [path, "--outputs-dir", tmp_path / "o"]) == 0


# A GEMM of 16383 x 16383 iterations over 4 micro-ops: about 2**30 micro-op executions.
HUGE_LOOPS = """\
.uop 0 0 0
.uop 1 0 0
.uop 2 0 0
.uop 3 0 0
load.uop sram=0 dram=0 y=1 x=4
gemm.reset uop=0:4 iter=16383,16383
finish
"""


@pytest.mark.parametrize("simulator", ["c", "python"])
def test_sim_huge_loop_extents_refused_before_running(tmp_path, capsys, simulator):
    program = write(tmp_path, "loops.s", HUGE_LOOPS)
    limit = {"c": 1 << 28, "python": 1 << 25}[simulator]  # the Python reference's is lower
    err = refused(capsys, qaccel_sim, [program, "--simulator", simulator], prog="qaccel-sim",
                  expect=f"pass the step limit of {limit} (raise it with QACCEL_STEP_LIMIT)")
    assert "instruction 1 (GEMM reset): 1073610762 steps" in err


def test_sim_step_limit_from_environment(tmp_path, capsys, monkeypatch):
    program = write(tmp_path, "loops.s", HUGE_LOOPS.replace("16383,16383", "10,10"))
    monkeypatch.setenv("QACCEL_STEP_LIMIT", "100")
    refused(capsys, qaccel_sim, [program], prog="qaccel-sim", expect="step limit of 100 ")
    monkeypatch.setenv("QACCEL_STEP_LIMIT", "many")
    refused(capsys, qaccel_sim, [program], prog="qaccel-sim",
            expect="QACCEL_STEP_LIMIT='many': expected a number")  # fmt: skip
    monkeypatch.setenv("QACCEL_STEP_LIMIT", "1K")
    assert call(qaccel_sim, [program]) == 0


@pytest.mark.parametrize("simulator", ["c", "python"])
def test_sim_huge_dram_refused_before_allocating(tmp_path, capsys, simulator):
    program = write(tmp_path, "dram.s", ".dram 100000000000\nfinish\n")
    refused(capsys, qaccel_sim, [program, "--simulator", simulator], prog="qaccel-sim",
            expect="the simulator needs 163.0 GiB (DRAM image 93.1 GiB, scratchpads and hazard "
                   "trackers 69.8 GiB, decoded program 280 bytes), above the memory limit of "
                   "4.0 GiB (raise it with QACCEL_MEMORY_LIMIT)")  # fmt: skip
    program = write(tmp_path, "init.s", ".i8 99999999999 1\nfinish\n")
    refused(capsys, qaccel_sim, [program, "--simulator", simulator], prog="qaccel-sim",
            expect="DRAM image 93.1 GiB")  # fmt: skip


def test_sim_dram_image_declaring_huge_array(tmp_path, capsys):
    """An .npz whose header declares 10 GB: refused from the header, nothing inflated."""
    import io
    import zipfile

    header = io.BytesIO()
    np.lib.format.write_array_header_1_0(
        header, {"descr": "|u1", "fortran_order": False, "shape": (10**10,)})  # fmt: skip
    image = tmp_path / "dram.npz"
    with zipfile.ZipFile(image, "w") as z:
        z.writestr("dram.npy", header.getvalue() + b"\0" * 64)
    program = write(tmp_path, "p.s", "finish\n")
    refused(capsys, qaccel_sim, [program, "--dram", image], prog="qaccel-sim",
            expect="dram.npz: the DRAM image needs 9.3 GiB, above the memory limit")  # fmt: skip


def test_interpreter_budget_on_mlir(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("QACCEL_MEMORY_LIMIT", "1M")
    path = write(tmp_path, "big.mlir", (
        "func.func @f(%a: tensor<1x2048x2048xi32>, %b: tensor<2048xi32>) -> tensor<1x2048x2048xi32> {\n"
        "  %1 = q.bias_add %a, %b : (tensor<1x2048x2048xi32>, tensor<2048xi32>) -> tensor<1x2048x2048xi32>\n"
        "  func.return %1 : tensor<1x2048x2048xi32>\n}\n"))  # fmt: skip
    refused(capsys, qaccel_run, [path, "--outputs-dir", tmp_path / "o"], prog="qaccel-run",
            expect="@f declares 32.0 MiB of tensors, above the memory limit of 1.0 MiB",
            absent=[tmp_path / "o"])  # fmt: skip


# --- outputs ----------------------------------------------------------------------------------


def test_output_dir_is_an_existing_file(tmp_path, capsys):
    afile = write(tmp_path, "afile", "keep me")
    refused(capsys, qaccel_compile, [MLP, "-o", afile, "--quiet"], prog="qaccel-compile",
            expect="exists and is not a directory")  # fmt: skip
    refused(capsys, qaccel_run, [MLP, "--outputs-dir", afile], prog="qaccel-run",
            expect="exists and is not a directory")  # fmt: skip
    assert afile.read_text() == "keep me"


def test_output_below_a_file_or_nowhere(tmp_path, capsys):
    afile = write(tmp_path, "afile", "x")
    refused(capsys, qaccel_compile, [MLP, "-o", afile / "sub", "--quiet"],
            prog="qaccel-compile", expect="is not a directory")  # fmt: skip
    refused(capsys, qaccel_opt, [MLP, "-o", tmp_path / "missing" / "out.mlir"],
            prog="qaccel-opt", expect="does not exist")  # fmt: skip
    refused(capsys, qaccel_opt, [MLP, "-o", tmp_path], prog="qaccel-opt",
            expect="is a directory")  # fmt: skip
    refused(capsys, qaccel_run, [MLP, "--outputs-dir", tmp_path / "o", "--target", "vta",
                                 "--plot", tmp_path / "nowhere" / "p.png"],
            prog="qaccel-run", expect="--plot", absent=[tmp_path / "o"])  # fmt: skip


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_output_in_read_only_folder(tmp_path, capsys):
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o500)
    try:
        refused(capsys, qaccel_compile, [MLP, "-o", ro / "out", "--quiet"],
                prog="qaccel-compile", expect="is not writable")  # fmt: skip
    finally:
        ro.chmod(0o700)


def test_output_folder_that_cannot_be_created(tmp_path, capsys):
    # Even root cannot create folders in /proc: the check passes, mkdir fails, one line.
    refused(capsys, qaccel_compile, [MLP, "-o", "/proc/qaccel-no/out", "--quiet"],
            prog="qaccel-compile", expect="/proc/qaccel-no")  # fmt: skip


def test_failed_opt_leaves_no_output_file(tmp_path, capsys):
    path = write(tmp_path, "shift.mlir", REQUANTIZE_SHIFT_100)
    out = tmp_path / "out.mlir"
    refused(capsys, qaccel_opt, [path, "-o", out], prog="qaccel-opt", expect="shift 100",
            absent=[out])  # fmt: skip


# --- silent successes -------------------------------------------------------------------------


def test_declared_output_shape_disagrees(tmp_path, capsys):
    path = write(tmp_path, "add.tflite", add_model(out_shape=(1, 5)))
    refused(capsys, qaccel_compile, [path, "-o", tmp_path / "c", "--quiet"],
            prog="qaccel-compile", expect="declared with shape [1, 5], but the inputs give [1, 4]",
            absent=[tmp_path / "c"])  # fmt: skip


def test_broadcast_mismatch(tmp_path, capsys):
    model = single_op_model(
        "ADD",
        inputs=[TensorSpec("x", (1, 3), np.int8, Q), TensorSpec("z", (1, 4), np.int8, Q)],
        outputs=[TensorSpec("y", (1, 4), np.int8, Q)],
    )
    path = write(tmp_path, "add.tflite", model)
    refused(capsys, qaccel_opt, [path], prog="qaccel-opt", expect="do not broadcast")


REQUANTIZE_SHIFT_100 = """func.func @f(%a: tensor<1x4xi32>) -> tensor<1x4xi8> {
  %0 = q.requantize %a {multiplier = array<i32: 1073741824>, shift = array<i32: 100>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4xi32>) -> tensor<1x4xi8>
  func.return %0 : tensor<1x4xi8>
}
"""


def test_requantize_shift_out_of_range(tmp_path, capsys):
    path = write(tmp_path, "shift.mlir", REQUANTIZE_SHIFT_100)
    refused(capsys, qaccel_opt, [path], prog="qaccel-opt",
            expect="q.requantize: shift 100 is outside [-62, 31]")  # fmt: skip


@pytest.mark.parametrize("pipeline", ["cse,", "cse, ", "canonicalize,cse,"])
def test_trailing_comma_in_pipeline(tmp_path, capsys, pipeline):
    path = write(tmp_path, "f.mlir", "func.func @f() {\n  func.return\n}\n")
    refused(capsys, qaccel_opt, [path, "-p", pipeline], prog="qaccel-opt",
            expect="a pass name must follow the last ','")  # fmt: skip
    refused(capsys, qaccel_run, [path, "-p", pipeline, "--outputs-dir", tmp_path / "o"],
            prog="qaccel-run", expect="a pass name must follow", absent=[tmp_path / "o"])  # fmt: skip


@pytest.mark.parametrize("text", ["builtin.module {}\n", "module {\n}\n",
                                  "func.func private @f()\n"])
def test_empty_module_is_not_compiled(tmp_path, capsys, text):
    path = write(tmp_path, "empty.mlir", text)
    refused(capsys, qaccel_compile, [path, "-o", tmp_path / "c", "--quiet"],
            prog="qaccel-compile", expect="no function to compile", absent=[tmp_path / "c"])  # fmt: skip


# --- mutated flatbuffers ----------------------------------------------------------------------


def _patched(data: bytes, pos: int, fmt: str, value: int) -> bytes:
    out = bytearray(data)
    struct.pack_into(fmt, out, pos, value)
    return bytes(out)


def _root_vtable(data: bytes) -> tuple[int, int]:
    root = struct.unpack_from("<I", data, 0)[0]
    return root, root - struct.unpack_from("<i", data, root)[0]


def mutants() -> dict[str, tuple[bytes, str]]:
    base = add_model()
    root, vtable = _root_vtable(base)
    subgraphs_field = root + struct.unpack_from("<H", base, vtable + 8)[0]
    subgraphs_vec = subgraphs_field + struct.unpack_from("<I", base, subgraphs_field)[0]
    version_field = root + struct.unpack_from("<H", base, vtable + 4)[0]
    return {
        "root-offset-past-end": (_patched(base, 0, "<I", len(base) + 100), "past the end"),
        "vtable-outside": (_patched(base, root, "<i", -(1 << 20)), "vtable at byte"),
        "vector-length-past-end": (_patched(base, subgraphs_vec, "<I", 1 << 28),
                                   "vector of 268435456 elements runs past the end"),
        "misaligned-offset": (_patched(base, subgraphs_field, "<I",
                                       struct.unpack_from("<I", base, subgraphs_field)[0] + 1),
                              "not aligned"),
        "schema-version": (_patched(base, version_field, "<I", 51715),
                           "schema version 51715, expected 3"),
    }  # fmt: skip


@pytest.mark.parametrize("case", list(mutants()), ids=str)
def test_mutated_flatbuffer(tmp_path, capsys, case):
    data, expect = mutants()[case]
    path = write(tmp_path, "m.tflite", data)
    refused(capsys, qaccel_opt, [path], prog="qaccel-opt", expect=expect)


def test_mutated_flatbuffers_litert_rejects_are_refused(oracle, tmp_path):
    """The mutants whose refusal is least obvious (alignment, version) are ones LiteRT's own
    verifier rejects too: we are not stricter than LiteRT."""
    x = np.zeros((1, 4), np.int8)
    for case in ("misaligned-offset", "schema-version"):
        data, _ = mutants()[case]
        result = oracle(data, [[x, x]], keep_all_tensors=False)
        assert result.refused is not None, case


def test_random_byte_mutations_never_crash_the_importer():
    """A few hundred mutants: each imports or is refused with TFLiteImportError."""
    from qaccel.frontend.errors import TFLiteImportError
    from qaccel.frontend.tflite_import import import_tflite

    base = add_model()
    rng = np.random.default_rng(0)
    for _ in range(300):
        data = bytearray(base)
        for _ in range(int(rng.integers(1, 4))):
            data[int(rng.integers(0, len(data)))] = int(rng.integers(0, 256))
        try:
            import_tflite(bytes(data), "mutant")
        except TFLiteImportError as e:
            assert "\n" not in str(e)


# --- consistency of argument errors -----------------------------------------------------------


@pytest.mark.parametrize("tool,prog,args", [
    (qaccel_sim, "qaccel-sim", ["--bogus"]),
    (qaccel_sim, "qaccel-sim", []),
    (qaccel_run, "qaccel-run", ["--bogus"]),
    (qaccel_compile, "qaccel-compile", ["x.tflite"]),
    (qaccel_opt, "qaccel-opt", ["--bogus-flag"]),
], ids=["sim-unknown", "sim-missing", "run-unknown", "compile-missing-o", "opt-unknown"])  # fmt: skip
def test_argument_errors_are_one_line_exit_1(capsys, tool, prog, args):
    refused(capsys, tool, args, prog=prog, expect="")


def test_sim_output_unwritable(tmp_path, capsys):
    program = write(tmp_path, "p.s", "FINISH\n")
    refused(capsys, qaccel_sim, [program, "--output", tmp_path / "no" / "dram.npz"],
            prog="qaccel-sim", expect="--output")  # fmt: skip


def test_missing_config_with_target_vta(tmp_path, capsys):
    refused(capsys, qaccel_run, [MLP, "--target", "vta", "--config", tmp_path / "none.json",
                                 "--outputs-dir", tmp_path / "o"],
            prog="qaccel-run", expect="cannot read hardware config",
            absent=[tmp_path / "o"])  # fmt: skip


def test_console_script_argument_error_in_subprocess():
    """The process's own exit status and stderr, through the console-script launcher."""
    done = subprocess.run(
        [sys.executable, "-c", "import sys; sys.argv = ['qaccel-sim', '--bogus'];"
         "from qaccel.tools.launch import sim_main; sys.exit(sim_main())"],
        capture_output=True, text=True, timeout=60, env={**os.environ},
    )  # fmt: skip
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1 and done.stderr.startswith("qaccel-sim: error: ")
