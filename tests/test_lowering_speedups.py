"""The shortcuts that make the lowering passes fast give the answers of the plain algorithms:
remembered value ranges and per-kind pattern dispatch in `canonicalize-accel`, the corner
bound of `value_range`, the direct construction of `accel` ops. (Speed itself is measured by
benchmarks/, not here.)"""

from __future__ import annotations

import numpy as np
import pytest
from xdsl.irdl import IRDLOperation
from xdsl.pattern_rewriter import GreedyRewritePatternApplier, PatternRewriteWalker

from conftest import FIXTURE_MODELS, context, print_module
from qaccel.dialects import accel
from qaccel.dialects import accel_canonicalization as ac
from qaccel.kernels import arithmetic as ar
from qaccel.passes.canonicalize_accel import canonicalize_accel


def _lowered_raw(name: str):
    """A fixture model lowered to `accel` ops, not canonicalized yet."""
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline

    path = FIXTURE_MODELS / f"{name}.tflite"
    module = import_tflite(path.read_bytes(), str(path))
    build_pipeline(
        "vta-pipeline{stop-after=insert-pack-unpack},lower-q-to-accel{canonicalize=false}"
    ).apply(context(), module)
    return module


@pytest.mark.parametrize("name", ["residual", "small_cnn"])
def test_canonicalize_accel_as_the_generic_applier(name, monkeypatch):
    """Same IR as xDSL's applier over every pattern with uncached ranges; every remembered
    range is the one `value_range` computes afresh at that moment."""
    plain = _lowered_raw(name)
    fast = plain.clone()
    walker = PatternRewriteWalker(GreedyRewritePatternApplier(list(ac.all_patterns())))
    walker.rewrite_region(plain.body)

    asked = []
    remembered = ac.ValueRanges.value_range

    def checked(self, v):
        got = remembered(self, v)
        if got is not None:
            assert got == ac._value_range(v, 0, {})
            asked.append(v)
        return got

    monkeypatch.setattr(ac.ValueRanges, "value_range", checked)
    canonicalize_accel(fast)
    assert asked, "no value range was asked for"
    assert print_module(fast) == print_module(plain)


def test_remembered_ranges_follow_changes():
    """A range is forgotten with everything computed from it when its defining op changes."""
    from xdsl.dialects.builtin import TensorType, i32
    from xdsl.ir import Block
    from xdsl.pattern_rewriter import PatternRewriter

    t = TensorType(i32, [1, 1, 2, 2, 1, 16])
    block = Block(arg_types=[t])
    lo = accel.MaxOp(block.args[0], value=[-5])
    hi = accel.MinOp(lo, value=[7])
    add = accel.AddOp(hi, value=[100])
    block.add_ops([lo, hi, add])
    ranges = ac.ValueRanges()
    assert ranges.value_range(add.output) == (95, 107)
    rewriter = PatternRewriter(hi)
    rewriter.extend_from_listener(ranges.listener())
    rewriter.replace(hi, accel.MinOp(lo, value=[3]))
    assert ranges.value_range(add.output) == (95, 103) == ac._value_range(add.output, 0, {})


def test_ranges_beyond_the_depth_limit_use_the_limited_walk():
    from xdsl.dialects.builtin import TensorType, i32
    from xdsl.ir import Block

    t = TensorType(i32, [1, 1, 2, 2, 1, 16])
    block = Block(arg_types=[t])
    v = accel.MaxOp(block.args[0], value=[0]).output
    block.add_op(v.owner)
    for _ in range(ac._MAX_DEPTH + 5):
        op = accel.AddOp(v, value=[1])
        block.add_op(op)
        v = op.output
    assert ac.ValueRanges().value_range(v) is None  # higher than the limit: not remembered
    with ac.remembered_ranges():
        assert ac.value_range(v) == ac._value_range(v, 0, {})


def test_corner_bounds_are_exact():
    """`_corners` (extremes of the values only, where the function allows it) == the range
    over every value, and no x in between leaves it."""
    rng = np.random.default_rng(1)
    i32 = (-(2**31), 2**31 - 1)
    for trial in range(400):
        a, b = sorted(int(t) for t in rng.integers(*i32, 2, endpoint=True))
        if trial % 5 == 0:
            a, b = sorted(int(t) for t in rng.integers(-300, 300, 2))
        if trial % 7 == 0:
            a = i32[0]
        size = int(rng.integers(3, 30))
        fn, v = [
            (ac._times, rng.integers(*i32, size, endpoint=True)),
            (ac._shifted_left, rng.integers(0, 32, size)),
            (ar.rounding_divide_by_pot, rng.integers(0, 32, size)),
            (ar.saturating_rounding_doubling_high_mul, rng.integers(*i32, size, endpoint=True)),
            (ar.saturating_rounding_doubling_high_mul, rng.integers(2**30, 2**31, size)),
        ][trial % 5]
        v = v.astype(np.int32)
        ac._corners_of.cache_clear()
        got = ac._corners(fn, a, b, v)
        xs = np.concatenate([[a, b], rng.integers(a, b, 20, endpoint=True)]).astype(np.int64)
        every = fn(xs[:, None], v.astype(np.int64)[None, :])
        assert got == (int(every.min()), int(every.max())), (fn, a, b, v)


def test_accel_ops_built_directly_equal_irdl_built():
    from xdsl.dialects.builtin import TensorType, i8, i32
    from xdsl.ir import Block

    t32, t8 = TensorType(i32, [1, 2, 3, 3, 1, 16]), TensorType(i8, [1, 2, 3, 3, 1, 16])
    block = Block(arg_types=[t32, t32, t8])
    x, y, n = block.args
    plain = TensorType(i8, [1, 3, 3, 32])
    packing = accel.Packing.activations(4, 16)
    cases = [
        (accel.MaxOp(x, value=[3]), dict(operands=[x, []], result_types=[t32],
                                         properties={"value": accel.i32_array([3])})),
        (accel.AddOp(x, y), dict(operands=[x, [y]], result_types=[t32])),
        (accel.RoundRShiftOp(x, [1] * 32), dict(operands=[x], result_types=[t32],
                                               properties={"shift": accel.i32_array([1] * 32)})),
        (accel.NarrowOp(x, t8), dict(operands=[x], result_types=[t8])),
        (accel.WidenOp(n, t32), dict(operands=[n], result_types=[t32])),
        (accel.UnpackOp(n, packing, plain),
         dict(operands=[n], result_types=[plain], properties=accel.packing_properties(packing))),
    ]  # fmt: skip
    for built, kwargs in cases:
        reference = type(built).__new__(type(built))
        IRDLOperation.__init__(reference, **kwargs)
        assert str(built) == str(reference)
        assert built.properties == reference.properties
        assert list(built.operands) == list(reference.operands)
        assert [r.type for r in built.results] == [r.type for r in reference.results]
        built.verify()


def test_lowering_patterns_name_the_ops_they_rewrite():
    """`lower-q-to-accel` tries on an op only the patterns whose `OPS` hold its class: every
    lowered q op is some pattern's, and each pattern leaves the other ops alone."""
    from xdsl.dialects.builtin import TensorType, i32
    from xdsl.ir import Block
    from xdsl.pattern_rewriter import PatternRewriter

    from qaccel.dialects import q
    from qaccel.lowering.lower_q_to_accel import LOWERED_OPS, PATTERNS

    claimed = [kind for p in PATTERNS for kind in p.OPS]
    assert sorted(claimed, key=str) == sorted(LOWERED_OPS, key=str)
    block = Block(arg_types=[TensorType(i32, [1, 4])])
    for kind in LOWERED_OPS:  # an op of each kind, in no accelerator function
        op = kind.create(operands=[block.args[0]], result_types=[block.args[0].type])
        block.add_op(op)
        for p in PATTERNS:
            rewriter = PatternRewriter(op)
            p({}).match_and_rewrite(op, rewriter)  # no lowering: nothing happens
            assert not rewriter.has_done_action
    assert all(isinstance(op, q.QOp) for op in block.ops)


def test_shared_attributes_are_the_plain_ones():
    """`i32_array` / `i64_array` / `f64_array` / `i32_attr` hand out one attribute per value,
    equal to the one built afresh (and values that differ in type or bytes stay apart)."""
    from xdsl.dialects.builtin import BytesAttr, DenseArrayBase, IntegerAttr, f64, i32, i64

    from qaccel.dialects import q

    for values in ([0], [1, 2, 3], np.arange(-5, 40), [2**31 - 1, -(2**31)], []):
        plain = DenseArrayBase(i32, BytesAttr(np.asarray(values, dtype="<i4").tobytes()))
        assert q.i32_array(values) == plain and q.i32_array(values) is q.i32_array(list(values))
        plain64 = DenseArrayBase(i64, BytesAttr(np.asarray(values, dtype="<i8").tobytes()))
        assert q.i64_array(values) == plain64 != q.i32_array(values)
    assert q.f64_array([0.0]) != q.f64_array([-0.0])
    assert q.f64_array([0.5, 2.0]) == DenseArrayBase(f64, BytesAttr(np.array([0.5, 2.0]).tobytes()))
    for v in (0, -128, 127, np.int64(5), 2**31 - 1):
        assert q.i32_attr(v) == IntegerAttr(int(v), i32) and q.i32_attr(v) is q.i32_attr(int(v))
    with pytest.raises(Exception):
        q.i32_attr(2**40)


def test_packed_types_are_the_plain_ones():
    """`FunctionLowering.packed_type` remembers each type it packs; the answer is the packing's."""
    from xdsl.dialects.builtin import TensorType, i8, i32

    from qaccel.dialects import accel
    from qaccel.lowering.q_to_accel.function import FunctionLowering, LoweringError

    fl = FunctionLowering(None, "alu", 16)  # type: ignore[arg-type]
    for shape in ([1, 7, 7, 24], [1, 40], [2, 3, 5, 6, 33]):
        t = TensorType(i8, shape)
        packing = accel.Packing.activations(len(shape), 16)
        for element in (None, i32):
            want = TensorType(element or i8, packing.packed_shape(shape))
            assert fl.packed_type(t, element) == want
            assert fl.packed_type(TensorType(i8, shape), element) is fl.packed_type(t, element)
    with pytest.raises(LoweringError):
        fl.packed_type(TensorType(i8, [5]))


@pytest.mark.parametrize("name", ["small_cnn", "mlp", "residual", "mobilenetv2_035_96_collapsed"])
def test_packed_filter_sums_are_the_unpacked_ones(name, monkeypatch):
    """`filter_tiles` takes insert-pack-unpack's packed filter and sums it on the tiles: the
    same tiles, groups and sums as unpacking the filter first (every convolution and matrix
    product of the model), also when the padded lanes hold garbage; and the same IR."""
    from qaccel.dialects import q, tfl
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.kernels.layout import unpack
    from qaccel.lowering.q_to_accel import accumulate
    from qaccel.pipeline.manager import build_pipeline

    path = FIXTURE_MODELS / f"{name}.tflite"
    module = import_tflite(path.read_bytes(), str(path))
    build_pipeline("vta-pipeline{stop-after=insert-pack-unpack}").apply(context(), module)
    taken = padded = 0
    for op in module.walk():
        if not isinstance(op, q.Conv2DOp | q.DenseOp):
            continue
        found = accumulate._packed_filter(op, 16)
        if found is None:
            continue
        taken += 1
        owner = op.filter.owner
        w = unpack(owner.input.owner.as_array(), owner.packing, tuple(owner.output.type.get_shape()))
        want = w.reshape(w.shape[0], -1).sum(axis=1, dtype=np.int64)
        assert found[0] is owner.input and found[1] == 1
        assert found[2].dtype == np.int64 and np.array_equal(found[2], want)
        tiles = owner.input.owner.as_array().copy()  # garbage in the padding: same sums
        o, i = w.shape[0], w.shape[-1]
        tiles.reshape(-1)[:] = np.where(tiles.reshape(-1) == 0, 77, tiles.reshape(-1))
        garbage = unpack(tiles, owner.packing, w.shape)
        if o % 16 or i % 16:
            padded += 1
            monkeypatch.setattr(tfl.ConstOp, "as_array", lambda self, t=tiles: t)
            again = accumulate._packed_filter(op, 16)
            monkeypatch.undo()
            assert np.array_equal(again[2], garbage.reshape(o, -1).sum(axis=1, dtype=np.int64))
    assert taken and (padded or name != "small_cnn")
    fast = module.clone()
    build_pipeline("lower-q-to-accel").apply(context(), fast)
    monkeypatch.setattr(accumulate, "_packed_filter", lambda op, block: None)
    build_pipeline("lower-q-to-accel").apply(context(), module)
    assert print_module(fast) == print_module(module)


def test_tiles_transposed_as_numpy_transposes():
    """Weight tiles moved row by row (`lowering/vta/layers.py`): the same array as numpy's
    transpose, reshape and int8 copy, a new writable array also from read-only bytes; other
    dtypes and orders take numpy's own path."""
    from qaccel.lowering.vta.layers import _tiles_transposed

    rng = np.random.default_rng(0)
    cases = [((80, 20, 1, 1, 16, 16), (0, 4, 2, 3, 1, 5), (1280, 1, 1, 320)),
             ((3, 2, 3, 3, 16, 16), (0, 4, 2, 3, 1, 5), (48, 3, 3, 32)),
             ((5, 7, 16, 16), (0, 2, 1, 3), (80, 112)),
             ((1, 1, 1, 1, 16, 16), (0, 4, 2, 3, 1, 5), (16, 1, 1, 16)),
             ((2, 3, 8, 8), (0, 2, 1, 3), (16, 1, 1, 24))]  # fmt: skip
    for shape, perm, out in cases:
        w = rng.integers(-128, 128, size=shape).astype(np.int8)
        want = w.transpose(perm).reshape(out).astype(np.int8)
        for given in (w, np.frombuffer(w.tobytes(), np.int8).reshape(shape), w.astype(np.int32)):
            got = _tiles_transposed(given, perm, out)
            assert got.dtype == np.int8 and got.shape == want.shape and np.array_equal(got, want)
            assert got.flags.c_contiguous and got.flags.writeable
            assert not np.shares_memory(got, given)
