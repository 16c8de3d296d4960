"""qaccel's LiteRT compiler plugin (libLiteRtCompilerPlugin_Qaccel, backends/litert/plugin/,
tools/compiler_plugin.py, backends/litert/plugin_flows.py, aot_backend.py) in LiteRT's own
flows, each bit-exact with BUILTIN_REF on the ORIGINAL model and each proving that our dispatch
library ran every program the plugin compiled (no silent CPU fallback):

- AOT with the wheel's `apply_plugin_main`, and with `ai_edge_litert.aot.aot_compile` and the
  registered qaccel backend;
- on-device: `CompiledModel.from_file(ORIGINAL)` with our plugin and dispatch directories, from
  Python (a second CompiledModel compiles nothing) and from a C host linking only libLiteRt.so
  (the plugin starts its own Python there);
- the exports (the 18 of LiteRT 2.3 and the versioned table of later releases) and a plugin
  failure reported in one line.

Skipped only when the wheel or the built plugin is missing. Every corpus model and the
sanitizer build run in benchmarks/bench_plugin.py."""

from __future__ import annotations

import ctypes
import os
import shutil
import struct
import subprocess
from pathlib import Path

import numpy as np
import pytest
from conftest import FIXTURE_MODELS

pytest.importorskip("ai_edge_litert")

from qaccel.backends.litert.plugin_flows import (  # noqa: E402
    apply_plugin,
    apply_plugin_main,
    plugin_library,
    plugin_library_dir,
    run_on_device,
)
from qaccel.backends.litert.runtime import LiteRtError  # noqa: E402
from qaccel.frontend.tflite_writer import read_model  # noqa: E402

CORPUS = FIXTURE_MODELS.parent / "corpus"
PLUGIN_HOST = Path(__file__).parent / "litert" / "plugin_host.c"
CC = shutil.which("cc") or shutil.which("gcc")

try:
    plugin_library_dir()
    apply_plugin_main()
except LiteRtError as e:
    pytestmark = pytest.mark.skip(reason=str(e))


@pytest.fixture(autouse=True, scope="module")
def plugin_cache(tmp_path_factory):
    """A compile cache of this module's own (the plugin reads QACCEL_PLUGIN_CACHE)."""
    old = os.environ.get("QACCEL_PLUGIN_CACHE")
    os.environ["QACCEL_PLUGIN_CACHE"] = str(tmp_path_factory.mktemp("plugin-cache"))
    yield
    if old is None:
        os.environ.pop("QACCEL_PLUGIN_CACHE", None)
    else:
        os.environ["QACCEL_PLUGIN_CACHE"] = old


def _inputs(model: Path, seed: int = 0) -> list[np.ndarray]:
    sg = read_model(model.read_bytes()).subgraphs[0]
    rng = np.random.default_rng(seed)
    out = []
    for i in sg.inputs:
        t = sg.tensors[i]
        if t.dtype == np.float32:
            out.append(rng.standard_normal(t.shape).astype(np.float32))
        else:
            info = np.iinfo(t.dtype)
            out.append(rng.integers(info.min, info.max + 1, t.shape).astype(t.dtype))
    return out


def _same(a: list[np.ndarray], b: list[np.ndarray]) -> bool:
    return len(a) == len(b) and all(x.dtype == y.dtype and np.array_equal(x, y)
                                    for x, y in zip(a, b))  # fmt: skip


# --------------------------------------------------------------------------------------------
# Exports


def test_exports_the_legacy_symbols_and_the_versioned_interface():
    lib = plugin_library()
    version = (ctypes.c_int * 3)()
    assert lib.LiteRtGetCompilerPluginVersion(version) == 0 and list(version) == [0, 1, 0]
    lib.LiteRtGetCompilerPluginSocManufacturer.restype = ctypes.c_char_p
    assert lib.LiteRtGetCompilerPluginSocManufacturer() == b"Qaccel"
    for name in ("CreateCompilerPlugin", "DestroyCompilerPlugin",
                 "GetCompilerPluginSupportedHardware", "GetNumCompilerPluginSupportedSocModels",
                 "GetCompilerPluginSupportedSocModel", "GetCompilerPluginSDKVersion",
                 "CompilerPluginCheckCompilerCompatibility",
                 "CompilerPluginRegisterAllTransformations", "CompilerPluginPartition",
                 "CompilerPluginCompile", "CompiledResultNumByteCodeModules",
                 "GetCompiledResultByteCode", "GetNumCompiledResultCalls",
                 "GetCompiledResultCallInfo", "GetCompiledResultHandle",
                 "DestroyCompiledResult"):  # fmt: skip
        assert hasattr(lib, "LiteRt" + name), name

    class Version(ctypes.Structure):
        _fields_ = [("major", ctypes.c_int), ("minor", ctypes.c_int), ("patch", ctypes.c_int)]

    query = lib.LiteRtCompilerPluginQueryInterface
    query.argtypes = [ctypes.c_int, Version, ctypes.POINTER(ctypes.c_void_p)]
    iface = ctypes.c_void_p()
    assert query(0, Version(1, 0, 0), ctypes.byref(iface)) == 0 and iface.value
    raw = ctypes.string_at(iface.value, 152)
    assert struct.unpack_from("<4H", raw) == (152, 1, 0, 0)
    assert all(struct.unpack_from("<18Q", raw, 8))
    # first entry: get_compiler_plugin_version
    get_version = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)(struct.unpack_from("<Q", raw, 8)[0])
    version = (ctypes.c_int * 3)()
    assert get_version(ctypes.addressof(version)) == 0 and list(version) == [0, 1, 0]
    assert query(1, Version(1, 0, 0), ctypes.byref(iface)) != 0 and not iface.value
    assert query(0, Version(0, 1, 0), ctypes.byref(iface)) != 0


# --------------------------------------------------------------------------------------------
# AOT


@pytest.mark.parametrize("model", [FIXTURE_MODELS / "small_cnn.tflite",
                                   FIXTURE_MODELS / "composite.tflite",
                                   CORPUS / "ds_cnn.tflite", CORPUS / "batch2.tflite"],
                         ids=lambda p: p.stem)  # fmt: skip
def test_apply_plugin_main_is_bit_exact(model, tmp_path, oracle):
    from qaccel.backends.litert.dispatch import run_dispatch

    out = apply_plugin(model, tmp_path / "npu.tflite")
    spec = read_model(out.read_bytes())
    ops = [op for op in spec.subgraphs[0].operators]
    assert any(op.custom_code == "DISPATCH_OP" for op in ops)
    assert "LiteRtStamp" in spec.metadata
    x = _inputs(model)
    # run_dispatch checks that our library ran every DISPATCH_OP
    assert _same(run_dispatch(out, x), oracle(model, [x], keep_all_tensors=False).outputs[0])


def test_the_plugin_takes_qaccel_compiles_composite_decision(tmp_path):
    """composite.tflite: the plugin does not select a composite op (its decomposition is not in
    the subgraph LiteRT shows), so LiteRT inlines both decompositions and asks again; the
    plugin then selects the convolution and every inlined op into one partition: the three
    operators qaccel-compile's partition holds, and the same program bytes."""
    from qaccel import api
    from qaccel.backends.litert.partitions import compile_partitions

    model = FIXTURE_MODELS / "composite.tflite"
    out = read_model(apply_plugin(model, tmp_path / "npu.tflite").read_bytes())
    (sg,) = out.subgraphs  # the decomposition subgraphs are gone with their composites
    assert [op.custom_code for op in sg.operators] == ["DISPATCH_OP"]
    source = model.read_bytes()
    compiler = api.partition_compiler()
    (done,), _ = compile_partitions(source, compiler(source), compiler)
    assert done.partition.ops == (0, 1, 2)
    assert done.program in (tmp_path / "npu.tflite").read_bytes()


def test_aot_compile_with_the_registered_qaccel_backend(tmp_path, oracle, monkeypatch):
    import sys

    from ai_edge_litert.aot import aot_compile

    # LiteRT looks for its tools under a module named `litert` first: here that name would be
    # tests/litert/ (a namespace package on the test path), not LiteRT's workspace.
    monkeypatch.setitem(sys.modules, "litert", None)

    from qaccel.backends.litert.dispatch import run_dispatch
    from qaccel.backends.litert.aot_backend import QaccelTarget, register

    register()
    model = FIXTURE_MODELS / "small_cnn.tflite"
    result = aot_compile.aot_compile(str(model), output_dir=str(tmp_path), target=QaccelTarget(),
                                     keep_going=False)  # fmt: skip
    assert not result.failed_backends and len(result.models) == 1
    compiled = Path(result.models[0].path)
    x = _inputs(model, seed=1)
    assert _same(run_dispatch(compiled, x), oracle(model, [x], keep_all_tensors=False).outputs[0])


# --------------------------------------------------------------------------------------------
# On-device compilation


def test_on_device_compile_is_bit_exact_and_cached(oracle):
    from qaccel.tools import compiler_plugin

    model = FIXTURE_MODELS / "residual.tflite"
    x = _inputs(model, seed=2)
    want = oracle(model, [x], keep_all_tensors=False).outputs[0]
    assert _same(run_on_device(model, x), want)
    made = compiler_plugin.COMPILES.copy()
    assert _same(run_on_device(model, x), want)  # a second CompiledModel of the same model
    assert compiler_plugin.COMPILES == made  # ... compiled nothing


def test_compile_takes_the_programs_partition_kept(oracle):
    """Partition compiles the whole model once; Compile of the subgraphs LiteRT outlined from
    its selection finds their programs by content and compiles none of them."""
    from qaccel.tools import compiler_plugin

    model = FIXTURE_MODELS / "cnn.tflite"
    x = _inputs(model, seed=4)
    before = compiler_plugin.RECOMPILED["subgraphs"]
    partitioned = compiler_plugin.COMPILES["partition"]
    assert _same(run_on_device(model, x), oracle(model, [x], keep_all_tensors=False).outputs[0])
    assert compiler_plugin.COMPILES["partition"] == partitioned + 1
    assert compiler_plugin.RECOMPILED["subgraphs"] == before


def test_a_kept_program_is_found_by_content_not_by_names():
    """The digest Compile looks programs up by is the partition's content: the same for the
    partition in the original model and its outlined subgraph, another when a weight changes."""
    from qaccel import api
    from qaccel.backends.litert.partitions import extract_partition
    from qaccel.tools.compiler_plugin import _content_key

    source = (FIXTURE_MODELS / "small_cnn.tflite").read_bytes()
    sg = read_model(source).subgraphs[0]
    for part in api.plan_partitions(source):
        outlined = read_model(extract_partition(source, part)).subgraphs[0]
        key = _content_key("", sg, part.inputs, part.outputs, part.ops)
        assert key == _content_key("", outlined, outlined.inputs, outlined.outputs,
                                   range(len(outlined.operators)))  # fmt: skip
        weight = next(t for k in part.ops for t in sg.operators[k].inputs
                      if t >= 0 and sg.tensors[t].data is not None)  # fmt: skip
        changed = bytearray(bytes(sg.tensors[weight].data))
        changed[0] ^= 1
        outlined_weight = next(t for t in range(len(outlined.tensors))
                               if outlined.tensors[t].name == sg.tensors[weight].name)
        outlined.tensors[outlined_weight].data = bytes(changed)
        assert key != _content_key("", outlined, outlined.inputs, outlined.outputs,
                                   range(len(outlined.operators)))  # fmt: skip


def test_on_device_compile_reaches_a_loop_body(tmp_path, oracle):
    """A WHILE model: LiteRT hands the plugin every subgraph; the body's convolution becomes a
    program the dispatch library runs once per iteration, bit-exact."""
    from control_flow_models import while_conv_model

    model = tmp_path / "while.tflite"
    model.write_bytes(while_conv_model(iterations=2))
    x = _inputs(model, seed=4)
    selected = plugin_library().qaccel_plugin_selected_ops()
    assert _same(run_on_device(model, x), oracle(model, [x], keep_all_tensors=False).outputs[0])
    assert plugin_library().qaccel_plugin_selected_ops() - selected == 1  # the body's CONV_2D


def test_plugin_failure_is_one_line_not_a_cpu_fallback():
    model = FIXTURE_MODELS / "small_cnn.tflite"
    with pytest.raises(LiteRtError) as e:
        run_on_device(model, _inputs(model), config="no-such-configuration")
    text = str(e.value)
    assert "\n" not in text and "the compiler plugin failed" in text, text
    assert "no-such-configuration" in text


def _plugin_host(tmp_path) -> Path:
    from qaccel.backends.litert.runtime import KERNEL_DIR, litert_library

    lrt = litert_library().parent
    exe = tmp_path / "plugin_host"
    subprocess.run([CC, "-std=c99", "-O2", "-Wall", "-Wextra", "-Werror", f"-I{KERNEL_DIR}",
                    str(PLUGIN_HOST), f"-L{lrt}", "-lLiteRt", f"-Wl,-rpath,{lrt}", "-ldl", "-o",
                    str(exe)], check=True, capture_output=True)  # fmt: skip
    return exe


@pytest.mark.skipif(CC is None, reason="no C host")
def test_plugin_options_choose_the_configuration_before_the_environment(tmp_path):
    """LiteRT's plugin options (opaque options "qaccel" of the compiled model's options, here
    from the C host): `config=` is taken over QACCEL_PLUGIN_CONFIG; a bad one fails the plugin
    in one line, which the host reports instead of a silent CPU fallback."""
    from qaccel.backends.litert.dispatch import dispatch_library_dir

    exe = _plugin_host(tmp_path)
    model = FIXTURE_MODELS / "small_cnn.tflite"
    (tmp_path / "in.bin").write_bytes(_inputs(model, seed=3)[0].tobytes())
    plugin = next(plugin_library_dir().glob("libLiteRtCompilerPlugin_Qaccel*.so"))
    dispatch = next(dispatch_library_dir().glob("libLiteRtDispatch_Qaccel*.so"))
    env = {**os.environ, "QACCEL_PLUGIN_CONFIG": "no-such-configuration"}

    def host(*options):
        return subprocess.run([str(exe), str(model), str(plugin), str(dispatch),
                               str(tmp_path / "in.bin"), "1x32x32x3", str(tmp_path / "out.bin"),
                               "1x10", *options], capture_output=True, text=True, timeout=600,
                              env=env)  # fmt: skip

    run = host("config=vta-default")
    assert run.returncode == 0, run.stderr[-2000:]
    run = host("config=also-no-such-configuration")
    assert run.returncode == 1
    assert "the compiler plugin failed" in run.stderr and "also-no-such-configuration" in run.stderr
    run = host("colour=red")
    assert run.returncode == 1
    assert 'plugin option "colour=red": the only setting is config=FILE|NAME' in run.stderr


@pytest.mark.skipif(CC is None, reason="no C compiler")
def test_c_host_compiles_on_device_through_the_plugin(tmp_path, oracle):
    from qaccel.backends.litert.dispatch import dispatch_library_dir

    exe = _plugin_host(tmp_path)
    model = FIXTURE_MODELS / "small_cnn.tflite"
    x = _inputs(model, seed=3)[0]
    (tmp_path / "in.bin").write_bytes(x.tobytes())
    plugin = next(plugin_library_dir().glob("libLiteRtCompilerPlugin_Qaccel*.so"))
    dispatch = next(dispatch_library_dir().glob("libLiteRtDispatch_Qaccel*.so"))
    run = subprocess.run([str(exe), str(model), str(plugin), str(dispatch), str(tmp_path / "in.bin"),
                          "1x32x32x3", str(tmp_path / "out.bin"), "1x10"],
                         capture_output=True, text=True, timeout=600)  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    assert "program(s) compiled by the plugin ran in the dispatch library" in run.stdout
    want = oracle(model, [[x]], keep_all_tensors=False).outputs[0][0]
    assert (tmp_path / "out.bin").read_bytes() == want.tobytes()
