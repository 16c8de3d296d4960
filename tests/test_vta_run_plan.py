"""The run plan (`backends/vta/run_plan.py`, built by `plan_compile.py`): every fixture runs
bit-exact both ways (the plan, and `run_compiled` on the interpreter); `qaccel-run OUTDIR`
takes the plan without importing xDSL and falls back to the full way when the plan is
missing or of another format."""

from __future__ import annotations

import hashlib
import json
import struct
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_MODELS, vta_lowered
from qaccel.backends.vta.artifact import write_artifact
from qaccel.backends.vta.cdriver import program_file
from qaccel.backends.vta.compiled import CompileError
from qaccel.backends.vta.codegen import compile_module
from qaccel.backends.vta.plan_compile import build_run_plan, encode_value
from qaccel.backends.vta.run_plan import (
    PLAN_ARRAYS,
    PLAN_JSON,
    RUN_PLAN_FORMAT,
    RunPlanError,
    decode_value,
    load_run_plan,
)
from qaccel.backends.vta.runtime import run_compiled
from qaccel.interpreter.interpreter import entry_function, random_inputs
from qaccel.targets.vta.config import HardwareConfig
from qaccel.tools import qaccel_run

REFUSED = "mobilenetv2_035_96_collapsed"
FIXTURES = sorted(p.stem for p in FIXTURE_MODELS.glob("*.tflite"))
CASES = [(name, "vta-default") for name in FIXTURES] + [
    ("cnn", "vta-store-requant"), ("residual", "vta-store-requant"),
    ("pad_concat_slice", "vta-store-requant"), ("composite", "vta-store-requant"),
]  # fmt: skip


def _artifact(name: str, config: str, outdir: Path):
    option = f'"{config}"' if "/" in config else config  # a file: quoted in the pipeline
    module, data = vta_lowered(name, "" if config == "vta-default" else option)
    compiled = compile_module(module, HardwareConfig.from_json(config))
    write_artifact(compiled, outdir, data)
    return compiled


@pytest.fixture(scope="module")
def litert():
    """LiteRT's reference kernels (BUILTIN_REF, in a subprocess), or None without LiteRT."""
    try:
        import ai_edge_litert  # noqa: F401
    except ImportError:
        return None
    from qaccel.backends.litert.oracle import run_reference

    return run_reference


@pytest.mark.parametrize("name,config", CASES)
def test_fixture_runs_bit_exact_by_its_plan(name, config, tmp_path, litert):
    """Both ways bit-exact, and (with LiteRT installed) bit-exact with LiteRT's reference."""
    if name == REFUSED:  # LiteRT's kernels refuse its softmax: no artifact that cannot run
        with pytest.raises(CompileError, match="LiteRT's reference kernels refuse this model: "
                                               'tfl.softmax "'):  # fmt: skip
            _artifact(name, config, tmp_path)
        assert not any(tmp_path.iterdir())
        return
    compiled = _artifact(name, config, tmp_path)
    plan = load_run_plan(tmp_path)
    assert plan is not None, f"{name}: no run plan"
    steps = load_run_plan(tmp_path, programs=False)  # every function's steps walked
    for fn_name, fn in compiled.functions.items():
        assert plan.functions[fn_name].program is not None  # run by its program
        blob = (tmp_path / program_file(fn_name)).read_bytes()
        n, at = struct.unpack_from("<QQ", blob, 48)  # the program's DRAM image
        assert blob[at : at + n] == fn.image.tobytes()
        assert np.array_equal(steps.functions[fn_name].image, fn.image)  # from constants.bin
    for seed in (0, 1):
        inputs = random_inputs(entry_function(compiled.module), seed)
        for x, y in zip(plan.random_inputs(seed), inputs, strict=True):
            assert x.dtype == y.dtype and np.array_equal(x, y)
        expected = run_compiled(compiled, inputs)
        got = plan.run(inputs)
        for x, y in zip(steps.run(inputs), expected, strict=True):
            np.testing.assert_array_equal(x, y)
        for x, y in zip(got, expected, strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)
        if litert is not None and seed == 0:
            ref = litert(tmp_path / "model.tflite", [inputs], keep_all_tensors=False)
            assert ref.refused is None, ref.refused
            for x, y in zip(got, ref.outputs[0], strict=True):
                np.testing.assert_array_equal(x, y)
    assert plan.layer_runs == 2 * sum(len(f.layers) for f in compiled.functions.values())


@pytest.fixture(scope="module")
def small_artifact(tmp_path_factory):
    out = tmp_path_factory.mktemp("plan") / "residual"
    _artifact("residual", "vta-default", out)
    return out


def _run(argv, capsys) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as e:
        qaccel_run.main([str(a) for a in argv])
    out = capsys.readouterr()
    return e.value.code, out.out, out.err


def test_qaccel_run_fast_path_matches_full_path(small_artifact, tmp_path, capsys, monkeypatch):
    x = random_inputs_of(small_artifact, 5)
    np.save(tmp_path / "x.npy", x[0])
    code, out, _ = _run([small_artifact, "--inputs", tmp_path / "x.npy", "--outputs-dir",
                         tmp_path / "fast"], capsys)  # fmt: skip
    assert code == 0 and "accelerator layer(s) on the simulator" in out
    monkeypatch.setattr(qaccel_run, "run_fast", lambda args: None)  # the full way
    code, full_out, _ = _run([small_artifact, "--inputs", tmp_path / "x.npy", "--outputs-dir",
                              tmp_path / "full"], capsys)  # fmt: skip
    assert code == 0 and full_out.replace("full", "fast") == out
    for f in sorted((tmp_path / "full").glob("*.npy")):
        np.testing.assert_array_equal(np.load(f), np.load(tmp_path / "fast" / f.name))


def random_inputs_of(artifact: Path, seed: int):
    plan = load_run_plan(artifact)
    assert plan is not None
    return plan.random_inputs(seed)


def test_qaccel_run_on_a_plan_imports_no_xdsl(small_artifact, tmp_path):
    code = (
        "import sys; from qaccel.tools.qaccel_run import run; "
        f"code = run([{str(small_artifact)!r}, '--outputs-dir', {str(tmp_path)!r}]); "
        "assert code == 0, code; "
        "bad = sorted(m for m in sys.modules if m.split('.')[0] == 'xdsl' or "
        "m.startswith(('qaccel.interpreter', 'qaccel.dialects', 'qaccel.frontend'))); "
        "assert not bad, bad"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=False)
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "output_0.npy").is_file()


def test_qaccel_run_plan_with_the_python_simulator(small_artifact, tmp_path, capsys):
    for sim in ("c", "python"):
        code, _, _ = _run([small_artifact, "--random-inputs", "3", "--simulator", sim,
                           "--outputs-dir", tmp_path / sim], capsys)  # fmt: skip
        assert code == 0
    np.testing.assert_array_equal(np.load(tmp_path / "c" / "output_0.npy"),
                                  np.load(tmp_path / "python" / "output_0.npy"))  # fmt: skip


def _rehash(root: Path, rel: str | None = None, drop: tuple[str, ...] = ()) -> None:
    """Keep the manifest consistent after a deliberate change of `rel` (or dropping files)."""
    manifest = json.loads((root / "manifest.json").read_text())
    for d in drop:
        del manifest["files"][d]
        (root / d).unlink()
    if rel is not None:
        manifest["files"][rel] = hashlib.sha256((root / rel).read_bytes()).hexdigest()
    (root / "manifest.json").write_text(json.dumps(manifest))


def _copy(src: Path, dst: Path) -> Path:
    import shutil

    shutil.copytree(src, dst)
    return dst


def test_plan_missing_or_of_another_format_falls_back(small_artifact, tmp_path, capsys):
    code, _, _ = _run([small_artifact, "--random-inputs", "1", "--outputs-dir", tmp_path / "r"],
                      capsys)  # fmt: skip
    assert code == 0
    missing = _copy(small_artifact, tmp_path / "missing")
    _rehash(missing, drop=(PLAN_JSON, PLAN_ARRAYS))
    other = _copy(small_artifact, tmp_path / "other")
    meta = json.loads((other / PLAN_JSON).read_text())
    meta["format"] = RUN_PLAN_FORMAT + 1
    (other / PLAN_JSON).write_text(json.dumps(meta))
    _rehash(other, PLAN_JSON)
    for art in (missing, other):
        assert load_run_plan(art) is None
        code, _, err = _run([art, "--random-inputs", "1", "--outputs-dir", art / "out"], capsys)
        assert code == 0 and err == ""
        np.testing.assert_array_equal(np.load(art / "out" / "output_0.npy"),
                                      np.load(tmp_path / "r" / "output_0.npy"))  # fmt: skip


def test_damaged_plan_is_one_line(small_artifact, tmp_path, capsys):
    art = _copy(small_artifact, tmp_path / "a")
    (art / PLAN_ARRAYS).write_bytes(b"PK\0\0")
    code, _, err = _run([art, "--outputs-dir", tmp_path / "o"], capsys)
    assert code == 1
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "runtime.npz' does not match the manifest's hash" in lines[0]
    with pytest.raises(RunPlanError):
        load_run_plan(art)


@pytest.mark.parametrize("make_input,message", [
    (lambda: np.zeros((1, 2), np.int8), "expected shape"),
    (lambda: np.zeros((1, 8, 8, 3), np.float32), "expected dtype"),
])  # fmt: skip
def test_fast_path_rejects_bad_inputs_in_one_line(small_artifact, tmp_path, capsys,
                                                  make_input, message):  # fmt: skip
    np.save(tmp_path / "x.npy", make_input())
    code, _, err = _run([small_artifact, "--inputs", tmp_path / "x.npy", "--outputs-dir",
                         tmp_path / "o"], capsys)  # fmt: skip
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and lines[0].startswith("qaccel-run: error: @")
    assert message in lines[0]


def test_fast_path_compare_litert(small_artifact, tmp_path, capsys, oracle):
    code, out, _ = _run([small_artifact, "--random-inputs", "2", "--outputs-dir", tmp_path,
                         "--compare-litert"], capsys)  # fmt: skip
    assert code == 0 and "(bit-exact)" in out


def test_module_without_a_plan_writes_no_plan_files(tmp_path, monkeypatch):
    from qaccel.backends.vta import plan_compile

    module, data = vta_lowered("mlp")
    compiled = compile_module(module)

    def refuse(self, op):
        raise plan_compile.NoPlan(f"no run-plan step for {op.name}")

    monkeypatch.setattr(plan_compile._Builder, "step", refuse)
    assert build_run_plan(compiled) is None
    write_artifact(compiled, tmp_path, data)
    manifest = json.loads((tmp_path / "manifest.json").read_text())
    assert PLAN_JSON not in manifest["files"] and not (tmp_path / PLAN_JSON).exists()
    assert load_run_plan(tmp_path) is None


def test_option_values_round_trip():
    arrays: dict[str, np.ndarray] = {}
    value = {"a": 1, "b": 2.5, "c": "SAME", "d": b"\x01\xff", "e": (1, [2, 3]),
             "f": np.arange(3, dtype=np.int32), "g": None, "h": True}  # fmt: skip
    encoded = json.loads(json.dumps(encode_value(value, arrays, "o")))
    back = decode_value(encoded, arrays)
    assert back.keys() == value.keys()
    for k, v in value.items():
        if isinstance(v, np.ndarray):
            assert back[k].dtype == v.dtype and np.array_equal(back[k], v)
        else:
            assert back[k] == v and type(back[k]) is type(v)


def test_cmachine_runs_in_place(small_artifact):
    """`cmachine.simulate(..., in_place=True)` computes the same DRAM, in the given array."""
    from qaccel.targets.vta import cmachine

    if not cmachine.available():
        pytest.skip("the C machine is unavailable")
    plan = load_run_plan(small_artifact, programs=False)
    fn = next(f for f in plan.functions.values() if f.layers)
    words, uops = fn.layers[0]
    image = fn.image.copy()
    copied = cmachine.simulate(words, uops, image, plan.config)
    assert np.array_equal(image, fn.image)  # not modified
    result = cmachine.simulate(words, uops, image, plan.config, in_place=True)
    assert result.dram is image and np.array_equal(image, copied.dram)


HOST_OPS = """
!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x4x4x1x16xi32>
func.func public @host(%acc: !t, %fc: tensor<1x1x1x16xi32>, %row: tensor<1x2x1x1x1x16xi32>,
                       %y: tensor<1x4x4x2x!q>, %lanes: tensor<1x2x1x4xi32>)
    -> (!t, !t, tensor<1x2x4x4x1x16x!q>, tensor<1x1x1x16x!q>, tensor<1x2x2x2x1x16xi32>,
        tensor<1x2x2x2x1x16xi32>, tensor<1x2x1x16xi32>, tensor<1x2x4x1x1x16xi32>,
        tensor<1x2x5x6x1x16x!q>, tensor<1x4x4x4x1x16x!q>, tensor<1x4x4x2x!q>,
        tensor<1x4x4x4x!q>, tensor<1x2x1x4xi32>, tensor<1x2x1x4xi32>, tensor<1x2x2x2x!q>,
        tensor<1x3x2x2x!q>) {
  %b = accel.bias_add_zp %acc by [3] : !t
  %s = accel.shift_left %b by [1] : !t
  %m = accel.round_multiply %s by [1073741824] : !t
  %r = accel.round_rshift %m by [3] : !t
  %a = accel.add %r, %acc : !t, !t
  %lo = accel.max %a by [-128] : !t
  %hi = accel.min %lo by [127] : !t
  %mul = accel.mul %hi, %row : !t, tensor<1x2x1x1x1x16xi32>
  %n = accel.narrow %hi : !t -> tensor<1x2x4x4x1x16x!q>
  %wide = accel.widen %n : tensor<1x2x4x4x1x16x!q> -> !t
  %host = accel.host_requantize %fc scale = [0.0013913921871730327] zero_points(0, -1) clamp(-128, 127) : tensor<1x1x1x16xi32> -> tensor<1x1x1x16x!q>
  %mp = accel.max_pool2d %wide window = [2, 2] strides = [2, 2] : !t -> tensor<1x2x2x2x1x16xi32>
  %sp = accel.sum_pool2d %wide window = [3, 2] strides = [1, 2] : !t -> tensor<1x2x2x2x1x16xi32>
  %rs = accel.reduce_sum %wide axes = [2, 3] : !t -> tensor<1x2x1x16xi32>
  %kd = accel.reduce_sum %wide axes = [3] : !t -> tensor<1x2x4x1x1x16xi32>
  %p = accel.pad %n pad_value(-1) padding = [1, 0, 0, 2] : tensor<1x2x4x4x1x16x!q> -> tensor<1x2x5x6x1x16x!q>
  %c = accel.concat %n, %n axis = 1 : tensor<1x2x4x4x1x16x!q>, tensor<1x2x4x4x1x16x!q> -> tensor<1x4x4x4x1x16x!q>
  %relu = q.relu %y {min = -1 : i32, max = 11 : i32} : (tensor<1x4x4x2x!q>) -> tensor<1x4x4x2x!q>
  %qc = q.concat %relu, %y {axis = 3 : i32} : (tensor<1x4x4x2x!q>, tensor<1x4x4x2x!q>) -> tensor<1x4x4x4x!q>
  %pl = accel.round_multiply %lanes by [1, 2, 3, 4, 5, 6, 7, 8] : tensor<1x2x1x4xi32>
  %pm = accel.max %pl by [0, -5, 0, -5, 9, 0, 0, 1] : tensor<1x2x1x4xi32>
  %qmp = q.max_pool2d %y {filter = array<i64: 3, 3>, strides = array<i64: 2, 2>, padding = array<i64: 0, 1, 0, 1>} : (tensor<1x4x4x2x!q>) -> tensor<1x2x2x2x!q>
  %qap = q.avg_pool2d %y {filter = array<i64: 2, 3>, strides = array<i64: 1, 2>, padding = array<i64: 0, 0, 1, 0>} : (tensor<1x4x4x2x!q>) -> tensor<1x3x2x2x!q>
  func.return %mul, %wide, %n, %host, %mp, %sp, %rs, %kd, %p, %c, %relu, %qc, %pl, %pm, %qmp, %qap : !t, !t, tensor<1x2x4x4x1x16x!q>, tensor<1x1x1x16x!q>, tensor<1x2x2x2x1x16xi32>, tensor<1x2x2x2x1x16xi32>, tensor<1x2x1x16xi32>, tensor<1x2x4x1x1x16xi32>, tensor<1x2x5x6x1x16x!q>, tensor<1x4x4x4x1x16x!q>, tensor<1x4x4x2x!q>, tensor<1x4x4x4x!q>, tensor<1x2x1x4xi32>, tensor<1x2x1x4xi32>, tensor<1x2x2x2x!q>, tensor<1x3x2x2x!q>
}
"""


def test_host_op_steps_match_the_interpreter(tmp_path):
    """Every host op kind of the plan computes what the interpreter computes."""
    from conftest import parse_module
    from qaccel.backends.vta.compiled import CompiledModel
    from qaccel.interpreter.interpreter import run_function
    from qaccel.targets.vta.config import DEFAULT_CONFIG

    module = parse_module(HOST_OPS)
    write_artifact(CompiledModel(module, DEFAULT_CONFIG, {}, [], {}), tmp_path)
    plan = load_run_plan(tmp_path)
    assert plan is not None
    kinds = {s[0] for f in plan.functions.values() for s in f.steps}
    assert {"lane", "binary", "astype", "requantize", "pool", "reduce_sum", "pad", "clip",
            "concat", "qpool"} <= kinds  # fmt: skip
    for seed in range(3):
        inputs = random_inputs(entry_function(module), seed)
        for x, y in zip(plan.run(inputs), run_function(module, inputs), strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)


def test_plan_reads_the_dram_image_without_constants_bin(small_artifact, tmp_path):
    art = _copy(small_artifact, tmp_path / "a")
    plan = load_run_plan(art, programs=False)  # the functions' steps, which read the image
    drop = tuple(f"{name}/constants.bin" for name, f in plan.functions.items() if f.layers)
    assert drop
    _rehash(art, drop=drop)
    without = load_run_plan(art, programs=False)
    for name, f in plan.functions.items():
        if f.layers:
            assert np.array_equal(without.functions[name].image, f.image)
    inputs = plan.random_inputs(4)
    for x, y in zip(without.run(inputs), plan.run(inputs), strict=True):
        np.testing.assert_array_equal(x, y)


def test_fast_path_checks_the_outputs_dir_first(small_artifact, tmp_path, capsys):
    (tmp_path / "file").write_text("")
    code, out, err = _run([small_artifact, "--outputs-dir", tmp_path / "file"], capsys)
    lines = err.strip().splitlines()
    assert code == 1 and len(lines) == 1 and "exists and is not a directory" in lines[0]
    assert "ran" not in out


def test_plan_on_another_block_size(tmp_path):
    """4-lane blocks (log_block 2): the plan carries its configuration."""
    from qaccel.targets.vta.config import DEFAULT_CONFIG

    config = {**DEFAULT_CONFIG.to_dict(), "name": "block4", "log_block": 2,
              "log_inp_buff_size": 13, "log_wgt_buff_size": 14, "log_acc_buff_size": 15}  # fmt: skip
    path = tmp_path / "block4.json"
    path.write_text(json.dumps(config))
    compiled = _artifact("residual", str(path), tmp_path / "a")
    plan = load_run_plan(tmp_path / "a")
    assert plan is not None and plan.config.log_block == 2
    inputs = plan.random_inputs(0)
    for x, y in zip(plan.run(inputs), run_compiled(compiled, inputs), strict=True):
        np.testing.assert_array_equal(x, y)


HOST_Q_AND_GEMM = """
!q = !quant.uniform<i8:f32, 0.5:-1>
!y = tensor<1x4x4x2x!q>
func.func public @host(%y: !y, %z: !y, %x: tensor<1x2x4x4x1x4xi8>, %w: tensor<3x2x3x3x4x4xi8>,
                       %d: tensor<1x2x3x1x16xi8>, %dw: tensor<1x2x16x16xi8>,
                       %f: tensor<1x2x1x16xi8>, %w1: tensor<2x1x1x1x4x4xi8>)
    -> (!y, !y, !y, tensor<1x2x!q>, tensor<1x4x!q>, tensor<1x3x2x4x1x4xi32>,
        tensor<1x2x4x4x1x4xi32>, tensor<1x1x3x1x16xi32>, tensor<1x1x1x16xi32>) {
  %add = q.add %y, %z {lhs_zero_point = -1 : i32, rhs_zero_point = 3 : i32, left_shift = 20 : i32, lhs_multiplier = 1518500250 : i32, lhs_shift = -1 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1288490189 : i32, output_shift = -18 : i32, output_zero_point = 2 : i32} : (!y, !y) -> !y
  %sub = q.sub %add, %y {lhs_zero_point = 2 : i32, rhs_zero_point = -1 : i32, left_shift = 20 : i32, lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -20 : i32, output_zero_point = -1 : i32} : (!y, !y) -> !y
  %mul = q.mul %sub, %z {lhs_zero_point = -1 : i32, rhs_zero_point = 3 : i32, multiplier = 1431655765 : i32, shift = -5 : i32, output_zero_point = 4 : i32} : (!y, !y) -> !y
  %mean = q.mean %mul {axes = array<i64: 1, 2>, num_elements = 16 : i32, input_zero_point = 4 : i32, multiplier = 1073741824 : i32, shift = -3 : i32, output_zero_point = -1 : i32} : (!y) -> tensor<1x2x!q>
  %m2 = q.mean %y {axes = array<i64: 1, 3>, num_elements = 8 : i32, input_zero_point = -1 : i32, multiplier = 1717986918 : i32, shift = -2 : i32, output_zero_point = 0 : i32} : (!y) -> tensor<1x4x!q>
  %c = accel.conv2d_zp %x, %w pad_value(-3) strides = [2, 1] dilations = [1, 2] padding = [1, 0, 2, 2] bias = [5, -6, 7, 100, -1000, 0, 1, 2, 3, 4, 5, 6] : tensor<1x2x4x4x1x4xi8>, tensor<3x2x3x3x4x4xi8> -> tensor<1x3x2x4x1x4xi32>
  %g = accel.conv2d_zp %x, %w1 pad_value(0) strides = [1, 1] dilations = [1, 1] padding = [0, 0, 0, 0] groups = 2 : tensor<1x2x4x4x1x4xi8>, tensor<2x1x1x1x4x4xi8> -> tensor<1x2x4x4x1x4xi32>
  %dk = accel.dense_zp %d, %dw bias = [9] : tensor<1x2x3x1x16xi8>, tensor<1x2x16x16xi8> -> tensor<1x1x3x1x16xi32>
  %fc = accel.dense_zp %f, %dw : tensor<1x2x1x16xi8>, tensor<1x2x16x16xi8> -> tensor<1x1x1x16xi32>
  func.return %add, %sub, %mul, %mean, %m2, %c, %g, %dk, %fc : !y, !y, !y, tensor<1x2x!q>, tensor<1x4x!q>, tensor<1x3x2x4x1x4xi32>, tensor<1x2x4x4x1x4xi32>, tensor<1x1x3x1x16xi32>, tensor<1x1x1x16xi32>
}
"""


SCALAR_CONSTANT = """
func.func public @main(%x: tensor<i32>) -> tensor<2xi32> {
  %c = tfl.const dense<64> : tensor<i32> -> tensor<i32>
  %p = tfl.pack %x, %c {values_count = 2 : i32, axis = 0 : i32} : (tensor<i32>, tensor<i32>) -> tensor<2xi32>
  func.return %p : tensor<2xi32>
}
"""


def test_plan_keeps_rank0_constants_rank0(tmp_path):
    """The converter's computed Flatten shape packs a scalar taken from SHAPE with a scalar
    constant: the plan's constant stays rank 0, so PACK sees two scalars."""
    from conftest import parse_module
    from qaccel.backends.vta.compiled import CompiledModel
    from qaccel.targets.vta.config import DEFAULT_CONFIG

    module = parse_module(SCALAR_CONSTANT)
    write_artifact(CompiledModel(module, DEFAULT_CONFIG, {}, [], {}), tmp_path)
    plan = load_run_plan(tmp_path)
    assert plan is not None
    (y,) = plan.run([np.array(3, dtype=np.int32)])
    np.testing.assert_array_equal(y, np.array([3, 64], dtype=np.int32))


def test_q_and_gemm_host_steps_match_the_interpreter(tmp_path):
    """`q.add`/`sub`/`mul`/`mean` and the GEMM ops left on the host: the plan computes what
    the interpreter computes (both call `kernels/qhost.py`, `kernels/packed.py`)."""
    from conftest import parse_module
    from qaccel.backends.vta.compiled import CompiledModel
    from qaccel.interpreter.interpreter import run_function
    from qaccel.targets.vta.config import DEFAULT_CONFIG

    module = parse_module(HOST_Q_AND_GEMM)
    write_artifact(CompiledModel(module, DEFAULT_CONFIG, {}, [], {}), tmp_path)
    plan = load_run_plan(tmp_path)
    assert plan is not None and plan.meta["format"] == RUN_PLAN_FORMAT
    kinds = {s[0] for f in plan.functions.values() for s in f.steps}
    assert {"qadd_sub", "qmul", "qmean", "conv2d_zp", "dense_zp"} <= kinds
    for seed in range(3):
        inputs = random_inputs(entry_function(module), seed)
        for x, y in zip(plan.run(inputs), run_function(module, inputs), strict=True):
            assert x.dtype == y.dtype and x.shape == y.shape
            np.testing.assert_array_equal(x, y)


def test_generated_models_all_get_a_run_plan(tmp_path):
    """Every host op the compiler leaves in a generated model has a run-plan step, and the
    plan runs bit-exact with `run_compiled`."""
    from qaccel.backends.vta.codegen import compile_module
    from qaccel.frontend.random_models import generate
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import PassManager, expand, parse_passes, qaccel_context

    kinds: set[str] = set()
    for seed in range(5002, 5013):  # seeds whose host ops need those steps (5012: q.add)
        model = generate(seed)
        for config in ("vta-default", "vta-store-requant"):
            module = import_tflite(model.model, f"seed{seed}")
            passes = expand(parse_passes(f"vta-pipeline{{config={config}}}")).passes
            PassManager(passes, []).run(qaccel_context(), module)
            compiled = compile_module(module, HardwareConfig.from_json(config))
            outdir = tmp_path / f"{seed}-{config}"
            write_artifact(compiled, outdir, model.model)
            plan = load_run_plan(outdir)
            assert plan is not None, (seed, config, model.description)
            kinds |= {s[0] for f in plan.functions.values() for s in f.steps}
            inputs = plan.random_inputs(seed)
            for x, y in zip(plan.run(inputs), run_compiled(compiled, inputs), strict=True):
                np.testing.assert_array_equal(x, y)
    assert {"qadd_sub", "qmul", "dense_zp"} <= kinds  # the steps these seeds need


def test_scalar_constants_stay_scalars_in_the_plan(tmp_path):
    """A regression: plan constants went through np.ascontiguousarray, which makes a rank-0
    array rank 1, so the scalars that PACK stacks into the converter's computed RESHAPE target
    (SHAPE -> STRIDED_SLICE -> PACK) became [1]-shaped and PACK refused to stack them with the
    run-time scalar ("all input arrays must have the same shape")."""
    from qaccel.frontend.builder import ModelBuilder, QParams, TensorSpec
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import PassManager, expand, parse_passes, qaccel_context

    q = QParams.per_tensor(0.05, -3)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    x = g.input("x", (1, 2, 2, 4), q=q)
    shape = g.op("SHAPE", [x], TensorSpec("shape", (4,), np.int32), {"out_type": "INT32"})
    batch = g.op("STRIDED_SLICE", [shape, g.const("b", np.array([0], np.int32)),
                                   g.const("e", np.array([1], np.int32)),
                                   g.const("s", np.array([1], np.int32))],
                 TensorSpec("batch", (), np.int32), {"shrink_axis_mask": 1})  # fmt: skip
    target = g.op("PACK", [batch, g.const("rest", np.array(16, np.int32))],
                  TensorSpec("target", (2,), np.int32), {"values_count": 2, "axis": 0})
    g.output(g.op("RESHAPE", [x, target], TensorSpec("y", (1, 16), np.int8, q)))
    model = mb.build()
    module = import_tflite(model, "flatten")
    PassManager(expand(parse_passes("vta-pipeline")).passes, []).run(qaccel_context(), module)
    compiled = compile_module(module, HardwareConfig.from_json("vta-default"))
    write_artifact(compiled, tmp_path, model)
    plan = load_run_plan(tmp_path)
    assert plan is not None
    inputs = plan.random_inputs(0)
    (got,) = plan.run(inputs)
    np.testing.assert_array_equal(got, inputs[0].reshape(1, 16))
