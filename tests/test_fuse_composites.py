"""`fuse-composites`: fused IR computes what the unfused IR computes (bit for bit where the
fused op's integer arithmetic is the decomposition's, else as LiteRT's fused op does), the
fusion registry's API and `qaccel.fusions` entry points, and one-line diagnostics."""

from __future__ import annotations

import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.utils.exceptions import PassFailedException

from qaccel.interpreter.interpreter import entry_function, random_inputs, run_function
from qaccel.dialects.tfl import (
    Conv2DOp,
    EmbeddingLookupOp,
    HardSwishOp,
    ReluOp,
    StableHLOCompositeOp,
    TransposeOp,
)
from qaccel.frontend.tflite_export import export_tflite
from qaccel.frontend.tflite_import import import_tflite_file
from qaccel.fusions import registry as fusion_registry
from qaccel.passes.fuse_composites import FuseCompositesPass
from qaccel.fusions.registry import (
    Fusion,
    FusionRegistry,
    FusionRegistryError,
    Signature,
    parse_implements,
    register_fusion,
)

from conftest import FIXTURE_MODELS, parse_module, print_module

COMPOSITES = Path(__file__).parent / "fixtures" / "composites"
SEEDS = range(4)


def fused(module: ModuleOp, **options) -> ModuleOp:
    out = module.clone()
    FuseCompositesPass(**options).apply(Context(), out)
    out.verify()
    return out


def inputs_for(module: ModuleOp, seed: int, rows: int = 10) -> list[np.ndarray]:
    """Seeded inputs over each argument's range; int32 arguments are embedding ids."""
    return [x % rows if x.dtype == np.int32 else x
            for x in random_inputs(entry_function(module), seed)]


def ops_of(module: ModuleOp, cls) -> list:
    return [op for op in module.walk() if isinstance(op, cls)]


# --------------------------------------------------------------------------------------------
# Fixtures: fused IR against unfused IR and against LiteRT


@pytest.mark.parametrize("name, fused_ops", [
    ("embedding_lookup", {EmbeddingLookupOp: 1}),
    ("conv2d_bias_relu", {Conv2DOp: 2, ReluOp: 0, TransposeOp: 0}),
    ("nested", {Conv2DOp: 1, ReluOp: 0}),
])
def test_exact_fusions_compute_the_same_bit_for_bit(name, fused_ops):
    module = import_tflite_file(str(COMPOSITES / f"{name}.tflite"))
    after = fused(module)
    assert not ops_of(after, StableHLOCompositeOp)
    assert [f.sym_name.data for f in after.ops] == ["serving_default"]  # decompositions erased
    for cls, count in fused_ops.items():
        assert len(ops_of(after, cls)) == count, cls.name
    for seed in SEEDS:
        x = inputs_for(module, seed, rows=12)
        for a, b in zip(run_function(module, x), run_function(after, x), strict=True):
            np.testing.assert_array_equal(a, b)


def test_inexact_hard_swish_is_inlined_by_default_and_fused_on_request():
    """The int8 decomposition rounds after each of its three ops, HARD_SWISH once: not
    exact, so the default keeps the decomposition's numbers; allow-inexact fuses, and the
    outputs then differ by one output step on a few elements (measured; see fusions.py)."""
    module = import_tflite_file(str(COMPOSITES / "hard_swish.tflite"))
    exact = fused(module)
    assert not ops_of(exact, HardSwishOp) and not ops_of(exact, StableHLOCompositeOp)
    inexact = fused(module, allow_inexact=True)
    assert len(ops_of(inexact, HardSwishOp)) == 1 and not ops_of(inexact, StableHLOCompositeOp)
    differing = 0
    for seed in SEEDS:
        x = inputs_for(module, seed)
        a = run_function(module, x)[0]
        np.testing.assert_array_equal(a, run_function(exact, x)[0])
        diff = np.abs(a.astype(np.int32) - run_function(inexact, x)[0].astype(np.int32))
        assert diff.max() <= 1
        differing += int(np.count_nonzero(diff))
    assert differing > 0  # if they were always equal, the fusion would be exact


_HARD_SWISH_DECOMPOSED_AS = """
!x = !quant.uniform<i8:f32, 0.06:5>
!y = !quant.uniform<i8:f32, 0.035:-110>
func.func @main(%x: tensor<3x5x!x>) -> tensor<3x5x!y> {{
  %0 = tfl.stablehlo_composite %x {{name = "hard_swish", decomposition = @impl,
         composite_attributes = {{}}, version = 0 : i32}} : (tensor<3x5x!x>) -> tensor<3x5x!y>
  func.return %0 : tensor<3x5x!y>
}}
func.func private @impl(%x: tensor<3x5x!x>) -> tensor<3x5x!y> {{
  %0 = {op} %x : (tensor<3x5x!x>) -> tensor<3x5x!y>
  func.return %0 : tensor<3x5x!y>
}}
"""


@pytest.mark.parametrize("op, exact", [("tfl.hard_swish", True), ("tfl.quantize", False)])
def test_elementwise_exactness_is_proved_on_every_int8_value(op, exact):
    """15 elements per run: the proof runs the 256 values in 18 batches."""
    module = parse_module(_HARD_SWISH_DECOMPOSED_AS.format(op=op))
    after = fused(module)
    assert bool(ops_of(after, HardSwishOp)) == exact
    assert [f.sym_name.data for f in after.ops] == ["main"]  # inlined when not fused


@pytest.mark.parametrize("path", [
    *(COMPOSITES / f"{n}.tflite" for n in ("embedding_lookup", "hard_swish",
                                           "conv2d_bias_relu", "nested")),
    FIXTURE_MODELS / "composite.tflite",
], ids=lambda p: p.stem)
def test_fused_model_runs_bit_exact_in_litert(path, oracle):
    """Exported after fusion (inexact fusions too), each model loads in LiteRT's reference
    interpreter, which computes what our interpreter computes on the fused IR: the fused
    ops' semantics."""
    after = fused(import_tflite_file(str(path)), allow_inexact=True)
    assert not ops_of(after, StableHLOCompositeOp)
    sets = [inputs_for(after, seed, rows=12) for seed in SEEDS]
    result = oracle(export_tflite(after), sets, keep_all_tensors=False)
    assert result.refused is None, result.refused
    for x, expected in zip(sets, result.outputs, strict=True):
        for ours, theirs in zip(run_function(after, x), expected, strict=True):
            np.testing.assert_array_equal(ours, theirs)


def test_bundled_composite_model_keeps_unfused_composites_on_request():
    module = import_tflite_file(str(FIXTURE_MODELS / "composite.tflite"))
    kept = fused(module, keep_unregistered=True)
    names = [op.composite_name.data for op in ops_of(kept, StableHLOCompositeOp)]
    assert names == ["aten.hardswish.default", "aten.avg_pool2d.default"]  # nothing exact
    kept = fused(module, keep_unregistered=True, allow_inexact=True)
    names = [op.composite_name.data for op in ops_of(kept, StableHLOCompositeOp)]
    assert names == ["aten.avg_pool2d.default"]
    assert len(ops_of(kept, HardSwishOp)) == 1
    assert [f.sym_name.data for f in kept.ops] == [
        "serving_default", "aten.avg_pool2d.default.impl_0"]
    x = inputs_for(module, 0)
    np.testing.assert_array_equal(run_function(kept, x)[0],
                                  run_function(fused(module, allow_inexact=True), x)[0])
    np.testing.assert_array_equal(run_function(module, x)[0], run_function(fused(module), x)[0])


def test_implements_functions_compute_the_same():
    module = parse_module((COMPOSITES / "implements_functions.mlir").read_text())
    after = fused(module)
    by_name = {f.sym_name.data: f for f in after.ops if isinstance(f, func.FuncOp)}
    assert by_name["conv_block"].attributes["qaccel.fused"].data == "conv2d_bias_relu"
    for name in ("EmbFprop", "hybrid_lookup"):
        assert [op.name for op in by_name[name].body.block.ops] == [
            "tfl.embedding_lookup", "func.return"]
    # The argument filter cannot fold: the transpose runs in the fused body.
    assert len(ops_of(by_name["conv_block"], TransposeOp)) == 1
    for seed in SEEDS:
        x = inputs_for(module, seed)
        for a, b in zip(run_function(module, x), run_function(after, x), strict=True):
            np.testing.assert_array_equal(a, b)


def test_pass_is_idempotent():
    module = parse_module((COMPOSITES / "implements_functions.mlir").read_text())
    once = fused(module)
    assert print_module(fused(once)) == print_module(once)


# --------------------------------------------------------------------------------------------
# Registry API: a fusion from outside the package

_MY_RELU = """
!q = !quant.uniform<i8:f32, 0.1:-5>
func.func @main(%x: tensor<2x3x!q>) -> tensor<2x3x!q> {
  %0 = tfl.stablehlo_composite %x {name = "test.my_relu", decomposition = @impl,
         composite_attributes = {}, version = 0 : i32} : (tensor<2x3x!q>) -> tensor<2x3x!q>
  func.return %0 : tensor<2x3x!q>
}
func.func private @impl(%x: tensor<2x3x!q>) -> tensor<2x3x!q> {
  %0 = tfl.relu %x : (tensor<2x3x!q>) -> tensor<2x3x!q>
  func.return %0 : tensor<2x3x!q>
}
"""


@pytest.fixture
def registry():
    """A fresh registry (built-ins, no entry points) as the default, restored afterwards."""
    fresh = FusionRegistry(entry_points=False)
    old = fusion_registry.set_default_registry(fresh)
    yield fresh
    fusion_registry.set_default_registry(old)


def _relu_build(b, operands, sig):
    """max(x, 0) as one tfl.relu."""
    op = ReluOp.create(operands=[operands[0]], result_types=[sig.result()],
                       properties=ReluOp.properties_from_options({}))
    return [b.insert(op).output]


def test_fusion_registered_through_the_api_is_applied(registry):
    calls = []

    def check(sig: Signature) -> str | None:
        calls.append(sig)
        return sig.expect_arity(1, 1)

    register_fusion("test.my_relu", check=check, exact=True)(_relu_build)
    module = parse_module(_MY_RELU)
    after = fused(module)
    assert [op.name for op in after.ops.first.body.block.ops] == ["tfl.relu", "func.return"]
    assert len(after.ops) == 1
    assert calls[0].where == "tfl.stablehlo_composite" and calls[0].name == "test.my_relu"
    assert registry.origin("test.my_relu") == "the API"
    x = [np.arange(-64, 128, 32, dtype=np.int8).reshape(2, 3)]
    np.testing.assert_array_equal(run_function(module, x)[0], run_function(after, x)[0])


def test_fusion_not_known_exact_applies_only_when_allowed(registry):
    register_fusion("test.my_relu")(_relu_build)
    module = parse_module(_MY_RELU)
    assert not ops_of(fused(module), StableHLOCompositeOp)  # inlined: the same tfl.relu
    assert [f.sym_name.data for f in fused(module, keep_unregistered=True).ops] == ["main", "impl"]
    assert [f.sym_name.data for f in fused(module, keep_unregistered=True,
                                           allow_inexact=True).ops] == ["main"]


def test_fusion_class_decorator_aliases_and_replace(registry):
    @register_fusion("test.relu_a", aliases=("test.relu_b",))
    class MyRelu(Fusion):
        """A relu."""

        def build(self, b, operands, sig):
            return _relu_build(b, operands, sig)

    assert registry.lookup("test.relu_b") is registry.lookup("test.relu_a")
    assert registry.lookup("test.relu_a").summary == "A relu."
    with pytest.raises(FusionRegistryError, match="'test.relu_b' from the API is already taken"):
        register_fusion("test.relu_b")(_relu_build)
    register_fusion("test.relu_b", replace=True)(_relu_build)
    assert registry.lookup("test.relu_a") is None  # replaced with all its names
    assert registry.lookup("test.relu_b").summary == "max(x, 0) as one tfl.relu."
    registry.unregister("test.relu_b")
    assert registry.lookup("test.relu_b") is None
    assert registry.lookup("embedding_lookup").name == "embedding_lookup"
    assert registry.origin("aten.hardswish.default") == "built-in"


def _make_plugin(tmp_path: Path, dist: str, module: str, source: str, entry: str) -> None:
    (tmp_path / f"{module}.py").write_text(textwrap.dedent(source))
    info = tmp_path / f"{dist}-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(f"[qaccel.fusions]\n{entry}\n")


def test_fusion_from_an_entry_point_is_applied(tmp_path, monkeypatch):
    _make_plugin(tmp_path, "qaccel_test_plugin", "qaccel_test_plugin_fusions", """
        from qaccel.dialects.tfl import ReluOp
        from qaccel.fusions.registry import Fusion

        class MyRelu(Fusion):
            '''max(x, 0) from a plugin.'''
            name = "test.my_relu"

            def check(self, sig):
                return sig.expect_arity(1, 1)

            def exact(self, sig):
                return True

            def build(self, b, operands, sig):
                op = ReluOp.create(operands=[operands[0]], result_types=[sig.result()],
                                   properties=ReluOp.properties_from_options({}))
                return [b.insert(op).output]

        def register(registry):
            registry.register(MyRelu())
        """, "relu = qaccel_test_plugin_fusions:register")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = FusionRegistry()
    old = fusion_registry.set_default_registry(registry)
    try:
        after = fused(parse_module(_MY_RELU))
    finally:
        fusion_registry.set_default_registry(old)
        sys.modules.pop("qaccel_test_plugin_fusions", None)
    assert [op.name for op in after.ops.first.body.block.ops] == ["tfl.relu", "func.return"]
    assert registry.origin("test.my_relu") == (
        "entry point 'relu = qaccel_test_plugin_fusions:register'")
    assert registry.lookup("hard_swish") is not None  # built-ins still there


def test_broken_plugin_is_one_clear_line(tmp_path, monkeypatch):
    _make_plugin(tmp_path, "qaccel_broken_plugin", "qaccel_broken_plugin_fusions",
                 "raise ImportError('needs torch')\n", "broken = qaccel_broken_plugin_fusions")
    monkeypatch.syspath_prepend(str(tmp_path))
    registry = FusionRegistry()
    with pytest.raises(FusionRegistryError) as info:
        registry.lookup("hard_swish")
    sys.modules.pop("qaccel_broken_plugin_fusions", None)
    assert str(info.value) == (
        "fusion plugin entry point 'broken = qaccel_broken_plugin_fusions' (group "
        "qaccel.fusions) failed to load: ImportError: needs torch")


def test_plugin_fusion_that_builds_the_wrong_type_is_reported(registry):
    @register_fusion("test.my_relu", exact=True)
    def build(b, operands, sig):
        return [operands[0], operands[0]]

    with pytest.raises(PassFailedException, match=(
        r"^fuse-composites: tfl.stablehlo_composite: fusion <fusion test.my_relu .*> built "
        r"\(tensor<2x3x.*>, tensor<2x3x.*>\), the interface 'test.my_relu' returns "
        r"\(tensor<2x3x.*>\)$")):
        fused(parse_module(_MY_RELU))


def test_plugin_fusion_that_raises_is_reported(registry):
    @register_fusion("test.my_relu", exact=True)
    def build(b, operands, sig):
        raise KeyError("scale")

    with pytest.raises(PassFailedException, match=(
        "failed building 'test.my_relu': KeyError: 'scale'")):
        fused(parse_module(_MY_RELU))


# --------------------------------------------------------------------------------------------
# Driver, registry of passes, helpers


def test_pass_is_registered_with_its_option():
    from qaccel.pipeline.registry import get_all_passes
    from qaccel.pipeline.manager import build_pipeline

    assert get_all_passes()["fuse-composites"]() is FuseCompositesPass
    pipeline = build_pipeline("fuse-composites{keep-unregistered=true allow-inexact=true}")
    assert pipeline.passes == (FuseCompositesPass(keep_unregistered=True, allow_inexact=True),)


def test_driver_fails_with_one_line_and_exit_1(tmp_path, capsys):
    from qaccel.tools.qaccel_opt import main

    bad = tmp_path / "bad.mlir"
    bad.write_text(textwrap.dedent("""
        func.func @f(%x: tensor<4xf32>) -> tensor<4x2xf32>
            attributes {tf._implements = "hard_swish"} {
          %0 = tfl.const dense<0.0> : tensor<4x2xf32> -> tensor<4x2xf32>
          func.return %0 : tensor<4x2xf32>
        }
        """))
    with pytest.raises(SystemExit) as exit_info:
        main([str(bad), "-p", "fuse-composites"])
    assert exit_info.value.code == 1
    err = capsys.readouterr().err
    assert err == (
        "qaccel-opt: error: fuse-composites: func @f implements 'hard_swish', which does not "
        "fit the fused op: the result shape [4, 2] differs from the operand's [4]\n")


def test_parse_implements():
    assert parse_implements("embedding_lookup") == ("embedding_lookup", {})
    assert parse_implements(
        'name: "my_op" attr {key: "tfl_fusable_op" value { b: true } } '
        'attr {key: "n" value { i: 10 } } attr {key: "s" value { s: "a\\"b" } } '
        'attr {key: "f" value { f: 0.5 } }'
    ) == ("my_op", {"tfl_fusable_op": True, "n": 10, "s": 'a"b', "f": 0.5})
    with pytest.raises(ValueError, match="cannot read implements signature"):
        parse_implements('name: "x" attr {key: "k" value { q: 1 } }')


def test_composite_fixtures_are_what_their_generator_writes():
    from qaccel.tools.make_composite_fixtures import main

    assert main(["--check"]) == 0
