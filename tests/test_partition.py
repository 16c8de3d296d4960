"""partition-graph on real models and random DAGs: outputs stay bit-exact, partitions are
cycle-free and maximal, per-fixture statistics, function naming."""

from __future__ import annotations

import random

import numpy as np
import pytest
from conftest import FIXTURE_MODELS, attach_vta, parse_module, print_module
from xdsl.dialects import func

from qaccel.kernels import registry as kernels
from qaccel.interpreter.interpreter import entry_function, random_inputs, run_function
from qaccel.targets.base import Pattern, Target, register_target
from qaccel.frontend.tflite_import import import_tflite
from qaccel.passes.annotate_target import AnnotateTargetPass
from qaccel.passes.partition_graph import PartitionGraphPass
from qaccel.pipeline.manager import build_pipeline, qaccel_context

# Per fixture: the report partition-graph prints (ops selected, % of MACs, partitions).
EXPECTED = {
    "cnn": "selected 23 of 25 ops (100.0% of MACs) into 2 partitions",
    "cnn_per_tensor": "selected 23 of 25 ops (100.0% of MACs) into 2 partitions",
    "composite": "selected 7 of 7 ops (100.0% of MACs) into 1 partition",
    "mlp": "selected 9 of 10 ops (100.0% of MACs) into 1 partition",
    "mobilenet_v2": "selected 170 of 171 ops (100.0% of MACs) into 1 partition",
    "mobilenetv2_035_96_collapsed": "selected 179 of 180 ops (100.0% of MACs) into 1 partition",
    "pad_concat_slice": "selected 12 of 16 ops (100.0% of MACs) into 2 partitions",
    "residual": "selected 27 of 27 ops (100.0% of MACs) into 1 partition",
    "small_cnn": "selected 17 of 19 ops (100.0% of MACs) into 2 partitions",
}


def _legalized(path):
    module = import_tflite(path.read_bytes(), str(path))
    build_pipeline("fuse-composites,legalize-tfl-to-q").apply(qaccel_context(), module)
    return module


def _accelerator_functions(module) -> list[func.FuncOp]:
    return [
        op for op in module.ops if isinstance(op, func.FuncOp) and "qaccel.target" in op.attributes
    ]


@pytest.mark.parametrize("path", sorted(FIXTURE_MODELS.glob("*.tflite")), ids=lambda p: p.stem)
def test_partitioned_fixture_is_bit_exact(path, capsys):
    module = _legalized(path)
    inputs = [random_inputs(entry_function(module), seed) for seed in (0, 1)]
    try:
        before = [run_function(module, x) for x in inputs]
    except kernels.Refusal as refusal:
        before = refusal
    capsys.readouterr()
    build_pipeline("attach-target,annotate-target,partition-graph{report=true}").apply(
        qaccel_context(), module
    )
    module.verify()
    assert f"vta: {EXPECTED[path.stem]}" in capsys.readouterr().err
    functions = _accelerator_functions(module)
    assert functions and all(f.sym_visibility.data == "private" for f in functions)
    if isinstance(before, kernels.Refusal):
        # The collapsed model: LiteRT refuses its SOFTMAX; so must we, after partitioning too.
        with pytest.raises(kernels.Refusal, match="softmax"):
            run_function(module, inputs[0])
        return
    after = [run_function(module, x) for x in inputs]
    for b, a in zip(before, after):
        for x, y in zip(b, a):
            np.testing.assert_array_equal(x, y)


def test_explain_names_every_cpu_op(capsys):
    module = attach_vta(_legalized(FIXTURE_MODELS / "cnn.tflite"))
    PartitionGraphPass(explain=True).apply(qaccel_context(), module)  # nothing annotated yet
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "vta: selected 0 of 25 ops (0.0% of MACs) into 0 partitions"
    assert len(err) == 1 + 25  # every op, with a reason
    AnnotateTargetPass().apply(qaccel_context(), module)
    PartitionGraphPass(explain=True).apply(qaccel_context(), module)
    assert capsys.readouterr().err.splitlines() == [
        "vta: selected 23 of 25 ops (100.0% of MACs) into 2 partitions",
        (
            'vta: kept on CPU: q.reshape "cnn_1/flatten_1/Reshape": pattern reshape refused: '
            "reshapes [1, 4, 4, 32] to [1, 512]: only the dimensions between batch and channels "
            "may change, or both be whole channel blocks in plain order, or lanes would move "
            "[reshape-view]"
        ),
        (
            'vta: kept on CPU: q.softmax "StatefulPartitionedCall_1:0": pattern softmax refused: '
            "a rank-2 softmax (a classifier's output): after the last layer it joins no "
            "partitions, so it stays a CPU operator [softmax-rows]"
        ),
    ]


def test_summary_is_printed_on_request_only(capsys):
    module = _legalized(FIXTURE_MODELS / "cnn.tflite")
    build_pipeline("attach-target,annotate-target,partition-graph").apply(qaccel_context(), module)
    assert capsys.readouterr().err == ""
    assert len(_accelerator_functions(module)) == 2


def test_max_partitions_keeps_the_most_macs(capsys):
    module = _legalized(FIXTURE_MODELS / "cnn.tflite")
    build_pipeline(
        "attach-target,annotate-target,partition-graph{max-partitions=1 report=true}"
    ).apply(qaccel_context(), module)
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "vta: selected 18 of 25 ops (99.2% of MACs) into 1 partition"
    assert err[1].startswith(
        "vta: dropped a partition of 5 ops (0.8% of MACs) beyond max-partitions=1: q.dense"
    )
    (function,) = _accelerator_functions(module)
    assert function.sym_name.data == "vta_fn_0"
    # The dropped partition's ops are back on the CPU without annotations.
    host = entry_function(module)
    dense = [op for op in host.body.block.ops if op.name == "q.dense"]
    assert len(dense) == 2 and all("qaccel.target" not in op.attributes for op in dense)


def test_names_avoid_existing_symbols_and_rerun_is_a_no_op(capsys):
    module = parse_module("""
      func.func @main(%x: tensor<1x4x4x16xi8>) -> tensor<1x4x4x16xi8> {
        %w = tfl.const dense<1> : tensor<16x1x1x16xi8> -> tensor<16x1x1x16xi8>
        %a0 = q.conv2d %x, %w {strides = array<i64: 1, 1>, dilations = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>, input_zero_point = 0 : i32, filter_zero_point = 0 : i32} : (tensor<1x4x4x16xi8>, tensor<16x1x1x16xi8>) -> tensor<1x4x4x16xi32>
        %a = q.requantize %a0 {multiplier = array<i32: 1073741824>, shift = array<i32: -4>, input_zero_point = 0 : i32, output_zero_point = 0 : i32} : (tensor<1x4x4x16xi32>) -> tensor<1x4x4x16xi8>
        func.return %a : tensor<1x4x4x16xi8>
      }
      func.func private @vta_fn_0() {
        func.return
      }
    """)
    passes = build_pipeline("attach-target,annotate-target,partition-graph{report=true}")
    passes.apply(qaccel_context(), module)
    assert [f.sym_name.data for f in _accelerator_functions(module)] == ["vta_fn_1"]
    once = print_module(module)
    passes.apply(qaccel_context(), module)
    assert print_module(module) == once
    assert capsys.readouterr().err.splitlines()[-1] == (
        "vta: selected 0 of 1 ops (0.0% of MACs) into 0 partitions"
    )


# --------------------------------------------------------------------------------------------
# Random DAGs: every annotated op is outlined, the host stays in dominance order and computes
# the same, and no two partitions could be merged without a cycle.

_ADD_PROPS = (
    "lhs_zero_point = 0 : i32, rhs_zero_point = 0 : i32, left_shift = 20 : i32, "
    "lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, "
    "rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -19 : i32, "
    "output_zero_point = 0 : i32"
)
T = "tensor<1x8xi8>"


def _random_dag(rng: random.Random, n_ops: int, n_indices: int) -> tuple[str, int]:
    values = ["%x", "%y"]
    used: set[str] = set()
    lines = []
    annotated = 0
    for i in range(n_ops):
        attrs = ""
        if rng.random() < 0.6:
            attrs = f'qaccel.target = "ew", qaccel.group = {i} : i64, '
            if n_indices > 1:
                attrs += f"qaccel.partition_index = {rng.randrange(n_indices)} : i64, "
            annotated += 1
        name = f"%v{i}"
        if rng.random() < 0.5:
            a = rng.choice(values)
            used.add(a)
            lines.append(
                f"{name} = q.relu {a} {{{attrs}min = {-100 + i} : i32, max = 100 : i32}} : ({T}) -> {T}"
            )
        else:
            a, b = rng.choice(values), rng.choice(values)
            used.update((a, b))
            lines.append(f"{name} = q.add {a}, {b} {{{attrs}{_ADD_PROPS}}} : ({T}, {T}) -> {T}")
        values.append(name)
    outputs = [v for v in values[2:] if v not in used] or [values[-1]]
    body = "\n  ".join(lines)
    types = ", ".join([T] * len(outputs))
    text = (
        f"func.func @main(%x: {T}, %y: {T}) -> ({types}) {{\n  {body}\n"
        f"  func.return {', '.join(outputs)} : {types}\n}}\n"
    )
    return text, annotated


def _host_reachability(host: func.FuncOp) -> dict:
    ops = list(host.body.block.ops)
    reach: dict = {}
    for op in reversed(ops):
        r: set = set()
        for res in op.results:
            for use in res.uses:
                r.add(use.operation)
                r |= reach.get(use.operation, set())
        reach[op] = r
    return reach


@pytest.fixture(scope="module")
def ew_target():
    register_target("ew", Target("ew", (Pattern("relu", "q.relu"), Pattern("add", "q.add"))))
    yield
    from qaccel.targets import base as targets

    targets._REGISTERED.pop("ew")


@pytest.mark.parametrize("seed", range(12))
def test_random_dags_partition_acyclic_maximal_and_exact(seed, ew_target, capsys):
    rng = random.Random(seed)
    text, annotated = _random_dag(rng, n_ops=rng.randrange(6, 16), n_indices=1 + seed % 3)
    module = parse_module(text)
    inputs = random_inputs(entry_function(module), seed)
    before = run_function(module, inputs)
    PartitionGraphPass(target="ew").apply(qaccel_context(), module)
    module.verify()
    host = entry_function(module)
    seen: set = set()
    for op in host.body.block.ops:  # dominance: every operand is defined earlier
        for v in op.operands:
            assert v.owner in seen or v.owner is host.body.block, f"seed {seed}: {op} out of order"
        seen.add(op)
    functions = _accelerator_functions(module)
    assert sum(len(list(f.body.block.ops)) - 1 for f in functions) == annotated
    assert all("qaccel.target" not in op.attributes for op in host.body.block.ops)
    for got, want in zip(run_function(module, inputs), before):
        np.testing.assert_array_equal(got, want)
    # Maximal: any two calls with the same partition index are joined by a path through the
    # host (merging them would create a cycle).
    calls = [op for op in host.body.block.ops if isinstance(op, func.CallOp)]
    index = {}
    for call in calls:
        callee = next(f for f in functions if f.sym_name.data == call.callee.root_reference.data)
        first = next(iter(callee.body.block.ops))
        pidx = first.attributes.get("qaccel.partition_index")
        index[call] = pidx.value.data if pidx is not None else 0
    reach = _host_reachability(host)
    for i, a in enumerate(calls):
        for b in calls[i + 1 :]:
            if index[a] != index[b]:
                continue
            through = any(b in reach[x] for x in reach[a] if x is not b)
            assert through, f"seed {seed}: {a.callee} and {b.callee} could have been merged"
    capsys.readouterr()
