"""`accel.pack` / `accel.unpack` and `insert-pack-unpack`: the layouts, the method's pack/unpack
rules case by case (and against a literal implementation of them on random chains), random DAGs
run before and after the pass, and every fixture model through the partitioned pipeline,
bit-exact with LiteRT."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pytest
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.parser import Parser

from qaccel.interpreter.accel_semantics import pack, unpack
from qaccel.interpreter.interpreter import (
    ExecutionError,
    entry_function,
    random_inputs,
    run_function,
)
from qaccel.dialects import accel
from qaccel.frontend.tflite_import import import_tflite
from qaccel.passes.insert_pack_unpack import (
    InsertPackUnpackPass,
    is_elementwise,
    plan_pack_unpack,
)
from qaccel.pipeline.manager import build_pipeline
from qaccel.tools.qaccel_run import main as qaccel_run

from conftest import (
    FIXTURE_MODELS,
    attach_vta,
    context,
    fixture_models,
    parse_module,
    print_module,
)

# --------------------------------------------------------------------------------------------
# Layouts


def test_activation_layout_is_nchw1n16c():
    x = np.arange(2 * 3 * 5 * 20, dtype=np.int64).reshape(2, 3, 5, 20).astype(np.int8)
    packing = accel.Packing.activations(4, 16)
    p = pack(x, packing, padding_value=-7)
    assert p.shape == (2, 2, 3, 5, 1, 16) == packing.packed_shape(x.shape)
    for n, h, w, c in itertools.product(range(2), range(3), range(5), range(20)):
        assert p[n, c // 16, h, w, 0, c % 16] == x[n, h, w, c]
    assert np.all(p[:, 1, :, :, 0, 4:] == -7)  # channels 20..31 are padding
    assert np.array_equal(unpack(p, packing, x.shape), x)


def test_weight_layout_is_oihw16o16i():
    rng = np.random.default_rng(0)
    w = rng.integers(-128, 128, size=(20, 3, 2, 33), dtype=np.int8)
    packing = accel.Packing.weights(4, 16, 16)
    p = pack(w, packing)
    assert p.shape == (2, 3, 3, 2, 16, 16)
    for o, h, x, i in itertools.product(range(20), range(3), range(2), range(33)):
        assert p[o // 16, i // 16, h, x, o % 16, i % 16] == w[o, h, x, i]
    assert np.all(p[1, :, :, :, 4:, :] == 0) and np.all(p[:, 2, :, :, :, 1:] == 0)
    assert np.array_equal(unpack(p, packing, w.shape), w)


def test_dense_layouts():
    x = np.arange(3 * 37, dtype=np.int32).reshape(3, 37)
    p = pack(x, accel.Packing.activations(2, 16))
    assert p.shape == (3, 3, 1, 16) and p[2, 2, 0, 4] == x[2, 36]
    w = np.arange(10 * 40, dtype=np.int32).reshape(10, 40)
    pw = pack(w, accel.Packing.weights(2, 16, 16))
    assert pw.shape == (1, 3, 16, 16) and pw[0, 2, 9, 7] == w[9, 39]


@pytest.mark.parametrize("seed", range(40))
def test_pack_unpack_round_trip_on_random_layouts(seed):
    rng = np.random.default_rng(seed)
    rank = int(rng.integers(1, 5))
    shape = tuple(int(d) for d in rng.integers(1, 7, size=rank))
    tiled = sorted(rng.choice(rank, size=int(rng.integers(1, rank + 1)), replace=False).tolist())
    order = rng.permutation(len(tiled)).tolist()
    packing = accel.Packing(
        tuple(tiled[i] for i in order),
        tuple(int(t) for t in rng.integers(1, 5, size=len(tiled))),
        tuple(int(d) for d in rng.permutation(rank)),
    )
    assert packing.error() is None
    x = rng.integers(-100, 100, size=shape).astype(np.int8)
    p = pack(x, packing, padding_value=101)
    assert p.shape == packing.packed_shape(shape)
    assert np.count_nonzero(p == 101) == p.size - x.size
    assert np.array_equal(unpack(p, packing, shape), x)


def test_layout_errors():
    assert "permutation" in accel.Packing((0,), (4,), (0, 0)).error()
    assert "inner_tiles" in accel.Packing((0, 1), (4,), (0, 1)).error()
    assert "distinct" in accel.Packing((1, 1), (4, 4), (0, 1)).error()
    assert "positive" in accel.Packing((1,), (0,), (0, 1)).error()
    with pytest.raises(ValueError):
        accel.Packing.activations(1, 16)


# --------------------------------------------------------------------------------------------
# Hand-written partitioned IR

HEADER = """
!q = !quant.uniform<i8:f32, 0.5:-1>
!t = tensor<1x2x2x6x!q>
"""


def accel_fn(name: str, args: int = 1, results: int = 1, lo: int = -1, hi: int = 50) -> str:
    """An accelerator function: relu of its first argument, or a (same-shape) add of its
    first two; `results` results (the relu and then its arguments)."""
    params = ", ".join(f"%arg{i}: !t" for i in range(args))
    if args >= 2:
        body = f"%r = q.add %arg0, %arg1 {{{ADD_PROPS}}} : (!t, !t) -> !t"
    else:
        body = f"%r = q.relu %arg0 {{min = {lo} : i32, max = {hi} : i32}} : (!t) -> !t"
    outs = ["%r"] + [f"%arg{i % args}" for i in range(results - 1)]
    types = ", ".join(["!t"] * results)
    return (
        f'func.func private @{name}({params}) -> ({types}) attributes {{qaccel.target = "vta"}} {{\n'
        f"  {body}\n  func.return {', '.join(outs)} : {types}\n}}\n"
    )


ADD_PROPS = (
    "lhs_zero_point = -1 : i32, rhs_zero_point = -1 : i32, left_shift = 20 : i32, "
    "lhs_multiplier = 1073741824 : i32, lhs_shift = 0 : i32, rhs_multiplier = 1073741824 : i32, "
    "rhs_shift = 0 : i32, output_multiplier = 1073741824 : i32, output_shift = -19 : i32, "
    "output_zero_point = -1 : i32"
)
RELU = "q.relu {x} {{min = 0 : i32, max = 100 : i32}} : (!t) -> !t"
POOL = (
    "q.max_pool2d {x} {{filter = array<i64: 1, 1>, strides = array<i64: 1, 1>, "
    "padding = array<i64: 0, 0, 0, 0>}} : (!t) -> !t"
)


def flags_of(module, block=4) -> list[tuple[str, int, int]]:
    (plan,) = plan_pack_unpack(module, block)
    return [(f.callee, int(f.pack), int(f.unpack)) for f in plan.flags]


def assert_pass_keeps_semantics(text: str, block: int | None = 4, seeds=range(3)):
    """Run the entry function before and after the pass (the module's target: VTA with
    channel block `block`, None: VTA's default configuration); returns the rewritten module."""
    module = parse_module(text)
    attach_vta(module) if block is None else attach_vta(module, block)
    inputs = [random_inputs(entry_function(module), s) for s in seeds]
    before = [run_function(module, x) for x in inputs]
    InsertPackUnpackPass().apply(Context(), module)
    module.verify()
    for x, expected in zip(inputs, before):
        got = run_function(module, x)
        for a, b in zip(expected, got):
            assert a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b)
    return module


CHAIN = (
    HEADER
    + """
func.func @main(%x: !t) -> !t {
  %a = func.call @vta_fn_0(%x) : (!t) -> !t
  %b = q.relu %a {min = 0 : i32, max = 127 : i32} : (!t) -> !t
  %c = func.call @vta_fn_1(%b) : (!t) -> !t
  %d = q.max_pool2d %c {filter = array<i64: 1, 1>, strides = array<i64: 1, 1>, padding = array<i64: 0, 0, 0, 0>} : (!t) -> !t
  %e = func.call @vta_fn_2(%d) : (!t) -> !t
  func.return %e : !t
}
"""
    + accel_fn("vta_fn_0")
    + accel_fn("vta_fn_1", lo=-20, hi=60)
    + accel_fn("vta_fn_2", lo=-30, hi=70)
)


def test_steps_3_1_to_3_3():
    (plan,) = plan_pack_unpack(parse_module(CHAIN), 4)
    assert plan.calls == [("vta_fn_0", 0), ("vta_fn_1", 2), ("vta_fn_2", 4)]
    assert plan.accelerator_calls == plan.calls
    assert [str(f) for f in plan.flags] == [
        "(vta_fn_0, pack=0, unpack=0)",
        "(vta_fn_1, pack=0, unpack=1)",
        "(vta_fn_2, pack=1, unpack=0)",
    ]
    assert plan.lines()[2] == (
        "@main flags: [(vta_fn_0, pack=0, unpack=0), (vta_fn_1, pack=0, unpack=1), "
        "(vta_fn_2, pack=1, unpack=0)]"
    )


def test_print_flags_goes_to_stderr(capsys):
    InsertPackUnpackPass(print_flags=True).apply(Context(), attach_vta(parse_module(CHAIN), 4))
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err.splitlines() == [
        "insert-pack-unpack: @main sub-functions: [(vta_fn_0, 0), (vta_fn_1, 2), (vta_fn_2, 4)]",
        "insert-pack-unpack: @main accelerator functions: [(vta_fn_0, 0), (vta_fn_1, 2), (vta_fn_2, 4)]",
        "insert-pack-unpack: @main flags: [(vta_fn_0, pack=0, unpack=0), (vta_fn_1, pack=0, unpack=1), (vta_fn_2, pack=1, unpack=0)]",
    ]


def test_chain_keeps_semantics_and_signature():
    module = assert_pass_keeps_semantics(CHAIN)
    main = entry_function(module)
    assert [str(t) for t in main.function_type.inputs.data] == [
        "tensor<1x2x2x6x!quant.uniform<i8:f32, 0.5:-1>>"
    ]
    callee = next(
        f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "vta_fn_0"
    )
    assert callee.function_type.inputs.data[0].get_shape() == (1, 2, 2, 2, 1, 4)
    assert accel.PACKED_FUNCTION_ATTR in callee.attributes
    ops = [op.name for op in main.body.block.ops]
    assert ops == [
        "accel.pack", "func.call", "q.relu", "func.call", "accel.unpack", "q.max_pool2d",
        "accel.pack", "func.call", "accel.unpack", "func.return",
    ]  # fmt: skip


def test_pass_is_idempotent():
    module = attach_vta(parse_module(CHAIN), 4)
    InsertPackUnpackPass().apply(Context(), module)
    once = print_module(module)
    InsertPackUnpackPass().apply(Context(), module)
    assert print_module(module) == once
    assert plan_pack_unpack(module, 4) == []


def test_default_block_comes_from_the_target():
    module = assert_pass_keeps_semantics(CHAIN, block=None)
    callee = next(
        f for f in module.ops if isinstance(f, func.FuncOp) and f.sym_name.data == "vta_fn_0"
    )
    assert callee.function_type.inputs.data[0].get_shape() == (1, 1, 2, 2, 1, 16)


def test_elementwise_definition():
    module = parse_module(
        HEADER
        + f"""
func.func @f(%x: !t, %y: tensor<1x1x1x6x!q>) -> (!t, !t, !t, !t) {{
  %a = q.add %x, %x {{{ADD_PROPS}}} : (!t, !t) -> !t
  %b = q.add %x, %y {{{ADD_PROPS}}} : (!t, tensor<1x1x1x6x!q>) -> !t
  %c = q.requantize %x {{multiplier = array<i32: 1073741824>, shift = array<i32: 0>, input_zero_point = -1 : i32, output_zero_point = -1 : i32}} : (!t) -> !t
  %d = q.requantize %x {{multiplier = array<i32: 1, 2, 3, 4, 5, 6>, shift = array<i32: 0, 0, 0, 0, 0, 0>, input_zero_point = -1 : i32, output_zero_point = -1 : i32}} : (!t) -> !t
  func.return %a, %b, %c, %d : !t, !t, !t, !t
}}
"""
    )
    ops = list(entry_function(module).body.block.ops)
    assert [is_elementwise(op) for op in ops[:4]] == [True, False, True, False]


def test_checked_call_names_the_callee():
    # The verifier rejects this module; the interpreter still names the call when it runs one
    # (an op implementation returning the wrong layout is caught the same way).
    module = Parser(
        context(),
        HEADER
        + """
func.func @main(%x: !t) -> tensor<1x2x2x2x1x4x!q> {
  %a = func.call @vta_fn_0(%x) : (!t) -> tensor<1x2x2x2x1x4x!q>
  func.return %a : tensor<1x2x2x2x1x4x!q>
}
func.func private @vta_fn_0(%arg0: tensor<1x2x2x2x1x4x!q>) -> tensor<1x2x2x2x1x4x!q> attributes {qaccel.target = "vta"} {
  func.return %arg0 : tensor<1x2x2x2x1x4x!q>
}
""",
    ).parse_module()
    x = random_inputs(entry_function(module), 0)
    with pytest.raises(
        ExecutionError,
        match=r"call of @vta_fn_0: argument 0: expected int8\[1x2x2x2x1x4\], got int8\[1x2x2x6\]",
    ):
        run_function(module, x)


# --------------------------------------------------------------------------------------------
# The rules against a literal implementation, on random chains; random DAGs keep semantics


def literal_rule(sequence: str) -> list[tuple[int, int]]:
    """The method's step 3.3 on a chain of ops given as letters: A accelerator function,
    E element-wise op, H non-element-wise op."""
    positions = [i for i, c in enumerate(sequence) if c == "A"]
    flags = []
    for k, p in enumerate(positions):
        before = sequence[positions[k - 1] + 1 : p] if k else sequence[:p]
        after = sequence[p + 1 : positions[k + 1]] if k + 1 < len(positions) else sequence[p + 1 :]
        flags.append((int("H" in before), int("H" in after)))
    return flags


def chain_module(sequence: str) -> str:
    lines, functions, value = [], [], "%x"
    for i, c in enumerate(sequence):
        if c == "A":
            name = f"vta_fn_{len(functions)}"
            functions.append(accel_fn(name, lo=-10 - i, hi=40 + i))
            lines.append(f"%v{i} = func.call @{name}({value}) : (!t) -> !t")
        else:
            lines.append(f"%v{i} = " + (RELU if c == "E" else POOL).format(x=value))
        value = f"%v{i}"
    body = "\n  ".join(lines)
    return (
        HEADER
        + f"func.func @main(%x: !t) -> !t {{\n  {body}\n  func.return {value} : !t\n}}\n"
        + "".join(functions)
    )


@pytest.mark.parametrize("seed", range(25))
def test_random_chains_follow_the_literal_rule(seed):
    rng = random.Random(seed)
    sequence = "".join(rng.choice("AAEH") for _ in range(rng.randint(1, 9)))
    if "A" not in sequence:
        sequence += "A"
    text = chain_module(sequence)
    assert [(p, u) for _, p, u in flags_of(parse_module(text))] == literal_rule(sequence), sequence
    assert_pass_keeps_semantics(text, seeds=[seed])


def dag_module(rng: random.Random) -> str:
    """A random host DAG of relus, same-shape adds, 1x1 pools and accelerator calls with one or
    two arguments and one or two results."""
    values, lines, functions = ["%x", "%y"], [], []

    def pick() -> str:
        return rng.choice(values[-4:])

    for i in range(rng.randint(3, 10)):
        kind = rng.choice("AAERPH")
        if kind == "A":
            name = f"vta_fn_{len(functions)}"
            args, results = rng.randint(1, 2), rng.randint(1, 2)
            functions.append(accel_fn(name, args, results))
            operands = [pick() for _ in range(args)]
            outs = [f"%v{i}_{k}" for k in range(results)]
            types = ", ".join(["!t"] * results)
            lines.append(
                f"{', '.join(outs)} = func.call @{name}({', '.join(operands)}) : "
                f"({', '.join(['!t'] * args)}) -> ({types})"
            )
            values += outs
            continue
        if kind == "E":
            lines.append(f"%v{i} = " + RELU.format(x=pick()))
        elif kind == "R":
            lines.append(f"%v{i} = q.add {pick()}, {pick()} {{{ADD_PROPS}}} : (!t, !t) -> !t")
        else:
            lines.append(f"%v{i} = " + POOL.format(x=pick()))
        values.append(f"%v{i}")
    outputs = sorted({values[-1], rng.choice(values)})
    body = "\n  ".join(lines)
    types = ", ".join(["!t"] * len(outputs))
    return (
        HEADER
        + f"func.func @main(%x: !t, %y: !t) -> ({types}) {{\n  {body}\n"
        + f"  func.return {', '.join(outputs)} : {types}\n}}\n"
        + "".join(functions)
    )


@pytest.mark.parametrize("seed", range(40))
def test_random_dags_keep_semantics(seed):
    rng = random.Random(1000 + seed)
    assert_pass_keeps_semantics(dag_module(rng), seeds=[seed])


# --------------------------------------------------------------------------------------------
# Fixture models through the partitioned pipeline

PIPELINE = (
    "attach-target,legalize-tfl-to-q,annotate-target,partition-graph,insert-pack-unpack"
)
COLLAPSED = FIXTURE_MODELS / "mobilenetv2_035_96_collapsed.tflite"
RUNNABLE = [p for p in fixture_models() if p != COLLAPSED]


@pytest.mark.parametrize("path", RUNNABLE, ids=lambda p: p.stem)
def test_fixture_is_bit_exact_after_insert_pack_unpack(path: Path, tmp_path, capsys, oracle):
    module = import_tflite(path.read_bytes())
    inputs = random_inputs(entry_function(module), 3)
    before = run_function(module, inputs)
    build_pipeline(PIPELINE).apply(Context(), module)
    module.verify()
    assert any(isinstance(op, accel.PackOp | accel.UnpackOp) for op in module.walk())
    after = run_function(module, inputs)
    assert all(np.array_equal(a, b) and a.dtype == b.dtype for a, b in zip(before, after))
    # What the issue asks: qaccel-run with the pipeline is bit-exact with LiteRT.
    with pytest.raises(SystemExit) as exit_info:
        qaccel_run([str(path), "-p", PIPELINE, "--outputs-dir", str(tmp_path), "--compare-litert"])
    out = capsys.readouterr().out
    assert exit_info.value.code == 0, out
    assert "(bit-exact)" in out and "MISMATCH" not in out


def elementwise_between_model() -> bytes:
    """conv (20 channels: padded lanes) -> LOGISTIC (the CPU's) -> conv -> TANH: the two
    convolutions become accelerator functions joined by an element-wise op."""
    from qaccel.frontend.builder import (
        ModelBuilder,
        QParams,
        TensorSpec,
        bias_tensor,
        per_axis_qparams,
        random_weights,
    )

    rng = np.random.default_rng(0)
    g = (mb := ModelBuilder()).subgraph("main")
    x_q, h_q, l_q = (QParams.per_tensor(s, z) for s, z in ((0.02, -3), (0.05, 4), (1 / 256, -128)))
    w1_q, w2_q = per_axis_qparams(rng, 20, 0), per_axis_qparams(rng, 12, 0)
    conv = {"padding": "SAME", "stride_w": 1, "stride_h": 1, "fused_activation_function": "RELU"}
    x = g.input("x", (1, 6, 6, 8), q=x_q)
    w1 = TensorSpec("w1", (20, 3, 3, 8), np.int8, w1_q, data=random_weights(rng, (20, 3, 3, 8)))
    h = g.op("CONV_2D", [x, w1, bias_tensor("b1", rng, x_q, w1_q)],
             TensorSpec("h", (1, 6, 6, 20), np.int8, h_q), conv)  # fmt: skip
    lg = g.op("LOGISTIC", [h], TensorSpec("l", (1, 6, 6, 20), np.int8, l_q))
    w2 = TensorSpec("w2", (12, 1, 1, 20), np.int8, w2_q, data=random_weights(rng, (12, 1, 1, 20)))
    y = g.op("CONV_2D", [lg, w2, bias_tensor("b2", rng, l_q, w2_q)],
             TensorSpec("y", (1, 6, 6, 12), np.int8, QParams.per_tensor(0.03, -1)), conv)  # fmt: skip
    g.output(
        g.op("TANH", [y], TensorSpec("t", (1, 6, 6, 12), np.int8, QParams.per_tensor(1 / 128, 0)))
    )
    return mb.build()


# The element-wise ops stay `tfl` (legalized, they would be tables inside one accelerator
# function: `test_tables_join_the_accelerator_function` below).
TFL_ELEMENTWISE_PIPELINE = PIPELINE.replace("legalize-tfl-to-q", "legalize-tfl-to-q{ops=conv_2d}")


def test_host_elementwise_op_on_packed_tensors_is_bit_exact(oracle):
    from qaccel.backends.litert.compare import compare_with_reference

    model = elementwise_between_model()
    module = import_tflite(model)
    inputs = [random_inputs(entry_function(module), s) for s in range(2)]
    build_pipeline(TFL_ELEMENTWISE_PIPELINE).apply(Context(), module)
    host = entry_function(module)
    host_ops = [op.name for op in host.body.block.ops]
    assert host_ops == [
        "accel.pack", "func.call", "tfl.logistic", "func.call", "tfl.tanh", "accel.unpack",
        "func.return",
    ]  # fmt: skip
    logistic = next(op for op in host.body.block.ops if op.name == "tfl.logistic")
    assert logistic.results[0].type.get_shape() == (1, 2, 6, 6, 1, 16)
    report = compare_with_reference(model, module, inputs, layers=False)
    assert report.bit_exact, report.summary()


def test_tables_join_the_accelerator_function(oracle):
    """Legalized, LOGISTIC and TANH are `q.lut` tables the vta target takes: one accelerator
    function holds both convolutions and both tables, on packed data."""
    from qaccel.backends.litert.compare import compare_with_reference

    model = elementwise_between_model()
    module = import_tflite(model)
    inputs = [random_inputs(entry_function(module), s) for s in range(2)]
    build_pipeline(PIPELINE).apply(Context(), module)
    host = entry_function(module)
    assert [op.name for op in host.body.block.ops] == [
        "accel.pack", "func.call", "accel.unpack", "func.return"]  # fmt: skip
    report = compare_with_reference(model, module, inputs, layers=False)
    assert report.bit_exact, report.summary()


def test_collapsed_model_is_refused(tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        qaccel_run([str(COLLAPSED), "-p", PIPELINE, "--outputs-dir", str(tmp_path)])
    assert exit_info.value.code == 1
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("qaccel-run: error: ") and "tfl.softmax" in last
