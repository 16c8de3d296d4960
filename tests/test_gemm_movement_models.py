"""TRANSPOSE_CONV, BATCH_MATMUL and the tiling, splitting and block ops in whole models: they
import as typed `tfl` ops (SPLIT, SPLIT_V and UNPACK with one result per output), print and
parse back, export to the same flatbuffer tensors (names included), run bit-exactly in the
interpreter and, next to accelerator layers, in a compiled VTA artifact's run plan."""

from __future__ import annotations

import numpy as np
import pytest

from qaccel.dialects import tfl
from qaccel.frontend.builder import (
    ModelBuilder,
    TensorSpec,
    bias_tensor,
    per_axis_qparams,
    weights_tensor,
)
from qaccel.frontend.tflite_export import export_tflite
from qaccel.frontend.tflite_import import import_tflite
from qaccel.interpreter.interpreter import run_function
from qaccel.kernels.qparams import QParams

NEW_OPS = {"tfl.transpose_conv", "tfl.batch_matmul", "tfl.tile", "tfl.broadcast_to",
           "tfl.expand_dims", "tfl.split", "tfl.split_v", "tfl.unpack", "tfl.depth_to_space",
           "tfl.space_to_depth"}


def _q(scale: float, zp: int) -> QParams:
    return QParams.per_tensor(scale, zp)


def _i32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.int32)


def unet_like_model(seed: int = 0) -> bytes:
    """conv -> split -> (transpose_conv -> conv) / depth_to_space / space_to_depth, a batch
    matmul of the reshaped activations by themselves and by a constant, tile, broadcast_to,
    expand_dims, split_v and unpack."""
    rng = np.random.default_rng(seed)
    mb = ModelBuilder()
    g = mb.subgraph("main")
    qx, qa = _q(0.05, -3), _q(0.08, 2)
    x = g.input("x", (1, 8, 8, 8), np.int8, qx)
    wq = per_axis_qparams(rng, 8, 0)
    a = g.op("CONV_2D", [x, weights_tensor("conv/w", rng, (8, 3, 3, 8), wq),
                         bias_tensor("conv/b", rng, qx, wq)],
             TensorSpec("conv", (1, 8, 8, 8), np.int8, qa),
             {"padding": "SAME", "stride_h": 1, "stride_w": 1,
              "fused_activation_function": "RELU", "dilation_h_factor": 1,
              "dilation_w_factor": 1})
    left, right = g.op("SPLIT", [g.const("split/axis", np.array(3, np.int32)), a],
                       [TensorSpec("split:0", (1, 8, 8, 4), np.int8, qa),
                        TensorSpec("split:1", (1, 8, 8, 4), np.int8, qa)], {"num_splits": 2})
    tq = per_axis_qparams(rng, 6, 0)
    up = g.op("TRANSPOSE_CONV", [g.const("up/shape", _i32([1, 16, 16, 6])),
                                 weights_tensor("up/w", rng, (6, 3, 3, 4), tq), left,
                                 bias_tensor("up/b", rng, qa, tq)],
              TensorSpec("up", (1, 16, 16, 6), np.int8, _q(0.1, -5)),
              {"padding": "SAME", "stride_h": 2, "stride_w": 2,
               "fused_activation_function": "RELU"}, version=4)
    cq = per_axis_qparams(rng, 4, 0)
    head = g.op("CONV_2D", [up, weights_tensor("head/w", rng, (4, 1, 1, 6), cq),
                            bias_tensor("head/b", rng, _q(0.1, -5), cq)],
                TensorSpec("head", (1, 16, 16, 4), np.int8, _q(0.2, 1)),
                {"padding": "VALID", "stride_h": 1, "stride_w": 1,
                 "fused_activation_function": "NONE", "dilation_h_factor": 1,
                 "dilation_w_factor": 1})
    d2s = g.op("DEPTH_TO_SPACE", [right], TensorSpec("d2s", (1, 16, 16, 1), np.int8, qa),
               {"block_size": 2})
    s2d = g.op("SPACE_TO_DEPTH", [d2s], TensorSpec("s2d", (1, 4, 4, 16), np.int8, qa),
               {"block_size": 4})
    rows = g.op("RESHAPE", [right, g.const("rows/shape", _i32([1, 64, 4]))],
                TensorSpec("rows", (1, 64, 4), np.int8, qa))
    gram = g.op("BATCH_MATMUL", [rows, rows], TensorSpec("gram", (1, 4, 4), np.int8,
                                                         _q(2.0, 0)),
                {"adj_x": True, "adj_y": False})
    proj = g.op("BATCH_MATMUL", [rows, TensorSpec("proj/w", (4, 5), np.int8, _q(0.02, 0),
                                                  data=rng.integers(-127, 128, (4, 5),
                                                                    dtype=np.int8))],
                TensorSpec("proj", (1, 64, 5), np.int8, _q(0.1, 3)))
    tiled = g.op("TILE", [gram, g.const("tile/m", _i32([2, 1, 3]))],
                 TensorSpec("tile", (2, 4, 12), np.int8, _q(2.0, 0)))
    wide = g.op("BROADCAST_TO", [gram, g.const("bcast/shape", _i32([3, 2, 4, 4]))],
                TensorSpec("bcast", (3, 2, 4, 4), np.int8, _q(2.0, 0)), version=2)
    more = g.op("EXPAND_DIMS", [proj, g.const("expand/axis", _i32([-1]))],
                TensorSpec("expand", (1, 64, 5, 1), np.int8, _q(0.1, 3)))
    pieces = g.op("SPLIT_V", [more, g.const("splitv/sizes", _i32([2, -1])),
                              g.const("splitv/axis", _i32([2]))],
                  [TensorSpec("splitv:0", (1, 64, 2, 1), np.int8, _q(0.1, 3)),
                   TensorSpec("splitv:1", (1, 64, 3, 1), np.int8, _q(0.1, 3))],
                  {"num_splits": 2})
    slices = g.op("UNPACK", [pieces[1]],
                  [TensorSpec(f"unpack:{k}", (1, 64, 1), np.int8, _q(0.1, 3)) for k in range(3)],
                  {"num": 3, "axis": 2})
    # The converter's Flatten: SHAPE -> STRIDED_SLICE (the batch, a scalar) -> PACK with the
    # scalar constant -1 -> RESHAPE (the run plan once stored scalar constants as 1-D).
    dims = g.op("SHAPE", [head], TensorSpec("flat/shape", (4,), np.int32), {"out_type": "INT32"})
    batch = g.op("STRIDED_SLICE", [dims, g.const("flat/b", _i32([0])), g.const("flat/e", _i32([1])),
                                   g.const("flat/s", _i32([1]))],
                 TensorSpec("flat/batch", (), np.int32), {"shrink_axis_mask": 1})
    packed = g.op("PACK", [batch, g.const("flat/rest", np.array(-1, np.int32))],
                  TensorSpec("flat/packed", (2,), np.int32), {"values_count": 2, "axis": 0})
    flat = g.op("RESHAPE", [head, packed], TensorSpec("flat", (1, 1024), np.int8, _q(0.2, 1)))
    g.output(flat, s2d, tiled, wide, pieces[0], *slices)
    return mb.build()


@pytest.fixture(scope="module")
def model() -> bytes:
    return unet_like_model()


def test_imports_as_typed_ops_and_round_trips(model, tmp_path):
    from conftest import context
    from xdsl.parser import Parser

    module = import_tflite(model)
    names = {op.name for op in module.walk()}
    assert NEW_OPS <= names and "tfl.opaque" not in names
    split = next(op for op in module.walk() if isinstance(op, tfl.SplitVOp))
    assert len(split.results) == 2 and split.options["num_splits"] == 2
    text = str(module)
    again = Parser(context(), text).parse_module()
    again.verify()
    assert str(again) == text
    exported = import_tflite(export_tflite(module))
    assert str(exported) == text
    from qaccel.dialects.names import location_name

    unpack = next(op for op in exported.walk() if isinstance(op, tfl.UnpackOp))
    assert location_name(unpack) == "unpack:0"
    loc_names = [location_name(part) for part in unpack.location.locations.data]
    assert loc_names == ["unpack:0", "unpack:1", "unpack:2"]


def test_interpreter_is_bit_exact(model, oracle):
    module = import_tflite(model)
    rng = np.random.default_rng(1)
    x = rng.integers(-128, 128, (1, 8, 8, 8), dtype=np.int8)
    ours = run_function(module, [x])
    ref = oracle(model, [[x]], keep_all_tensors=False)
    assert not ref.refused, ref.refused
    assert len(ours) == len(ref.outputs[0]) == 8
    for got, want in zip(ours, ref.outputs[0]):
        np.testing.assert_array_equal(got, want)


def test_vta_artifact_runs_them_on_the_host(model, tmp_path):
    """The convolutions go to the accelerator; the new ops run as "kernel" steps of the run
    plan, which gives the interpreter's outputs."""
    from qaccel import api
    from qaccel.backends.vta.run_plan import load_run_plan

    module = import_tflite(model)
    x = np.random.default_rng(2).integers(-128, 128, (1, 8, 8, 8), dtype=np.int8)
    want = run_function(module, [x])
    compiled = api.compile(model)
    api.write_artifact(compiled, tmp_path, model)
    plan = load_run_plan(tmp_path)
    assert plan is not None
    got = plan.run([x])
    assert plan.layer_runs > 0  # accelerator layers ran
    assert len(got) == len(want)
    for g, w in zip(got, want):
        np.testing.assert_array_equal(g, w)
    kernels = {step[3]["name"] for step in _steps(tmp_path) if step[0] == "kernel"}
    assert {"SPLIT", "SPLIT_V", "UNPACK"} <= kernels
    # its BATCH_MATMUL (activation x activation) is a host step of the accelerator function
    assert "BATCH_MATMUL" not in kernels
    # its 3x3 TRANSPOSE_CONV at stride 2 (overlapping taps) runs in the accelerator function
    assert "TRANSPOSE_CONV" not in kernels


def _steps(artifact) -> list:
    import json

    plan = json.loads((artifact / "runtime.json").read_text())
    return [step for fn in plan["functions"].values() for step in fn.get("steps", [])]


def test_each_op_has_a_kernel_and_a_typed_op():
    from qaccel.kernels.registry import KERNELS

    for name in NEW_OPS:
        tflite_name = name.removeprefix("tfl.").upper()
        assert tflite_name in KERNELS
        assert tfl.OPS_BY_TFLITE_NAME[tflite_name].name == name
