"""The scheduler's search memo and slot bookkeeping (lowering/vta/search.py, planning.py): a memoized
search returns what a fresh search finds, carries the caller's geometry, and the emitted
program is still bit-exact."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.lowering.vta import search
from qaccel.lowering.vta.geometry import LayerGeometry
from qaccel.lowering.vta.planning import (
    BIAS_MODES,
    LOOP_ORDERS,
    Schedule,
    _SlotLRU,
    plan_steps,
)
from qaccel.lowering.vta.search import _search, _step_count, candidates, schedule
from test_vta_codegen import check, conv_layer


def _fresh(g: LayerGeometry, config: HardwareConfig = DEFAULT_CONFIG) -> Schedule:
    return _search(g, config, BIAS_MODES, LOOP_ORDERS, True, 600)[0]


def test_layers_differing_only_in_input_zero_point_share_one_search():
    a = conv_layer(H=7, W=9, C=20, O=24, zp_in=-3, rng=np.random.default_rng(5))
    b = conv_layer(H=7, W=9, C=20, O=24, zp_in=6, rng=np.random.default_rng(5))
    assert a.geometry != b.geometry
    assert replace(a.geometry, input_zero_point=0) == replace(b.geometry, input_zero_point=0)
    search._best.cache_clear()
    sa, sb = schedule(a), schedule(b)
    info = search._best.cache_info()
    assert (info.misses, info.hits) == (1, 1)
    assert sa.geometry is a.geometry and sb.geometry is b.geometry
    assert sa.tiling() == sb.tiling() == _fresh(a.geometry).tiling()
    assert sa.estimated_cycles == sb.estimated_cycles == _fresh(b.geometry).estimated_cycles
    check(a, sa)
    check(b, sb)  # the shared schedule emits b's own zero point


def test_memo_is_per_config_and_per_forced_choice():
    layer = conv_layer(H=10, W=10, C=32, O=48, k=1, pad=(0, 0, 0, 0))
    small = HardwareConfig(name="small", log_inp_buff_size=11, log_wgt_buff_size=14,
                           log_acc_buff_size=12)  # fmt: skip
    default, tight = schedule(layer), schedule(layer, small)
    assert tight.tiling() == _fresh(layer.geometry, small).tiling()
    assert default.tiling() == _fresh(layer.geometry).tiling()
    assert schedule(layer, bias_mode="alu").bias_mode == "alu"
    assert schedule(layer, loop_order="channel").loop_order == "channel"
    assert schedule(layer).tiling() == default.tiling()


def test_slot_lru():
    lru = _SlotLRU(2)
    assert lru.claim("a") == (0, True)
    assert lru.claim("b") == (1, True)
    assert lru.claim("a") == (0, False)  # "b" is now the oldest
    assert lru.claim("c") == (1, True)
    assert list(lru.chunks.items()) == [("a", 0), ("c", 1)]
    assert lru.claim("b") == (0, True)


def test_plan_steps_uses_at_most_the_schedule_slots():
    layer = conv_layer(H=12, W=12, C=48, O=64, k=3)
    for s in candidates(layer.geometry, DEFAULT_CONFIG)[::7]:
        plans = plan_steps(s)
        assert len(plans) == _step_count(s)
        assert max(p.inp_slot for p in plans) < s.inp_slots
        assert max(p.wgt_slot for p in plans) < s.wgt_slots
        loaded = {(kind, slot) for p in plans for kind, _, slot, _ in p.loads}
        assert ("inp", plans[0].inp_slot) in loaded and ("wgt", plans[0].wgt_slot) in loaded


def test_weight_sums_equal_int64_sums():
    """`weight_sums` (int32 when no sum can overflow) gives the int64 sums: random and extreme
    int8 weights along either axis, and other dtypes as before."""
    from qaccel.lowering.vta.geometry import weight_sums

    rng = np.random.default_rng(7)
    for shape in ((1, 1), (3, 5), (64, 288), (320, 1280)):
        for w in (rng.integers(-128, 128, shape, dtype=np.int8),
                  np.full(shape, -128, np.int8), np.full(shape, 127, np.int8)):  # fmt: skip
            for axis in (0, 1):
                got = weight_sums(w, axis)
                assert got.dtype == np.int64
                assert np.array_equal(got, w.sum(axis=axis, dtype=np.int64))
    wide = np.full((2, 3), 2**40, np.int64)
    assert np.array_equal(weight_sums(wide, 1), [3 * 2**40] * 2)
