"""The activation arena (`backends/vta/arena.py`) and its use by `compile_module`: tensors alive
at the same time never share bytes, layers exchange activations in DRAM without the host, and
each layer program writes only its own output slot."""

from __future__ import annotations

import numpy as np
from conftest import vta_lowered
from hypothesis import given, settings
from hypothesis import strategies as st
from qaccel.interpreter.interpreter import entry_function, random_inputs, run_function
from qaccel.backends.vta.arena import ALIGN, Slot, allocate, check
from qaccel.backends.vta.codegen import compile_module
from qaccel.backends.vta.runtime import run_compiled


def test_a_chain_reuses_two_slots():
    # a -> L0 -> b -> L1 -> c -> L2 -> d: at most two tensors are alive at once.
    slots = [Slot(1000, 0, 0), Slot(1000, 0, 1), Slot(1000, 1, 2), Slot(1000, 2, 2)]
    size = allocate(slots)
    check(slots)
    assert size == 2 * 1024
    assert all(s.offset % ALIGN == 0 for s in slots)


def test_largest_first_fills_holes():
    slots = [Slot(300, 0, 1), Slot(5000, 1, 3), Slot(200, 2, 3), Slot(100, 4, 5)]
    size = allocate(slots)
    check(slots)
    assert size == 5120 + 512  # the 300 and 200 byte tensors share the bytes after it
    assert slots[3].offset == 0  # alive after everything else: reuses the start


def test_a_slot_with_its_own_alignment_starts_there():
    # A run-time weight value of 1024-byte tiles alive with a 2500-byte tensor: it starts at
    # the next whole tile (3072), not the next 256 bytes (2560).
    slots = [Slot(2500, 0, 2), Slot(1024, 1, 2, align=1024)]
    size = allocate(slots)
    check(slots)
    assert (slots[0].offset, slots[1].offset, size) == (0, 3072, 4096)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(st.integers(1, 5000), st.integers(0, 20), st.integers(0, 6)),
                min_size=1, max_size=30))  # fmt: skip
def test_random_lifetimes_never_overlap(spec):
    slots = [Slot(n, start, start + length) for n, start, length in spec]
    size = allocate(slots)
    check(slots)
    assert all(s.offset % ALIGN == 0 and s.offset + s.nbytes <= size for s in slots)
    # Never worse than giving every tensor its own bytes.
    assert size <= sum(-(-s.nbytes // ALIGN) * ALIGN for s in slots)


def test_mobilenet_v2_activations_stay_in_dram(mobilenet_v2_compiled):
    compiled = mobilenet_v2_compiled
    (fn,) = compiled.functions.values()
    check([Slot(s.nbytes, s.start, s.end, s.offset) for s in fn.slots])
    # Most layer outputs are read only by the next layer: neither written nor read by the host.
    internal = [s for s in fn.slots if not s.host_writes and not s.host_reads]
    assert len(internal) >= 20
    f = compiled.report["functions"][0]
    assert f["arena_bytes"] < f["activation_bytes"] / 4
    assert f["host_write_bytes"] + f["host_read_bytes"] < f["activation_bytes"]


def test_each_layer_writes_only_its_output_slot():
    module, _ = vta_lowered("residual")
    compiled = compile_module(module)
    inputs = random_inputs(entry_function(module), 0)
    expected = run_function(module, inputs)
    for x, y in zip(run_compiled(compiled, inputs), expected, strict=True):
        np.testing.assert_array_equal(x, y)
    (fn,) = compiled.functions.values()
    rng = np.random.default_rng(0)
    image = fn.image.copy()
    image[: fn.arena_nbytes] = rng.integers(0, 256, fn.arena_nbytes, dtype=np.uint8)
    for lay in fn.layers:
        after = fn.run_layer(lay, image, compiled.config)
        out = fn.slots[lay.output]
        changed = np.flatnonzero(after != image)
        assert changed.size == 0 or (out.offset <= changed.min()
                                     and changed.max() < out.offset + out.nbytes)  # fmt: skip
        image = after
