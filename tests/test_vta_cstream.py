"""libqaccel_stream (lowering/vta/stream/) against its Python references
(`emit.resolve_stream_py`; the GEMM emitter's step loop, `_Emitter.run_py`, for
`vta_gemm_emit`): the same programs on the fixture models at both bundled configurations, on
random streams (the micro-op ring included) and on random GEMM layers and schedules, the
library used when it is built, malformed descriptors and parameters refused, and an
AddressSanitizer/UBSan build clean."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest
from qaccel.lowering.vta import cstream, emit
from qaccel.lowering.vta.emit import COMPUTE, LOAD, STORE, _Stream
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.targets.vta.isa import AluOp, MemType, decode, encode_uops, layout_of

pytestmark = pytest.mark.skipif(not cstream.available(),
                                reason=f"libqaccel_stream: {cstream.unavailable_reason()}")  # fmt: skip

MODELS = Path(__file__).parent / "fixtures" / "models"
FIXTURES = sorted(p.stem for p in MODELS.glob("*.tflite"))


def _same(stream: _Stream, label: str, encode=None) -> tuple:
    """The stream encoded by the library and by the reference: equal; the library's."""
    prog, loads = (encode or _Stream.encode_stream)(stream)
    ref, ref_loads = stream.encode_stream_py()
    assert np.array_equal(prog.words, ref.words), label
    assert np.array_equal(prog.uops, ref.uops) and loads == ref_loads, label
    # The library's fields, which `decode` returns for its program, are the words decoded.
    known = decode(prog, prog.config)
    assert np.array_equal(known, decode(prog.words.copy(), prog.config)), label
    assert prog._decoded is not None or not len(prog.words), label  # (decode(prog) used them)
    return prog, loads


# --- GEMM layers emitted by the library (`vta_gemm_emit`) against the Python step loop ---


def _python_twin(emitter: emit._Emitter) -> emit._Emitter:
    """A fresh emitter of the same layer, schedule and DRAM layout (its stream not begun)."""
    twin = emit._Emitter(emitter.layer, emitter.s, emitter.c)
    twin.regions, twin.constants = dict(emitter.regions), emitter.constants
    twin.dram_size, twin.constants_offset = emitter.dram_size, emitter.constants_offset
    return twin


def _same_program(got, want, label: str) -> None:
    assert np.array_equal(got.program.words, want.program.words), label
    assert np.array_equal(got.program.uops, want.program.uops), label
    assert got.uop_loads == want.uop_loads, label
    assert np.array_equal(decode(got.program, got.config), decode(want.program, want.config)), label


def _both_ways(emitter: emit._Emitter, label: str):
    """The layer's program by the library (which must take it) and by the Python step loop:
    the same; the library's."""
    got = emitter.run_c()
    assert got is not None, f"{label}: the library refused the layer"
    _same_program(got, _python_twin(emitter).run_py(), label)
    return got


@pytest.fixture
def gemm_cross_checked(monkeypatch):
    """Every GEMM layer `compile_module` emits is emitted both ways and compared; how many."""
    seen = {"layers": 0}

    def run(self):
        seen["layers"] += 1
        return _both_ways(self, f"layer {seen['layers']} ({self.s.describe()})")

    monkeypatch.setenv("QACCEL_COMPILE_JOBS", "1")
    monkeypatch.setattr(emit._Emitter, "run", run)
    return seen


@pytest.fixture
def cross_checked(monkeypatch):
    """Every stream `compile_module` encodes (all in this process) is encoded both ways and
    compared; the number of streams and of those with a micro-op ring."""
    seen = {"streams": 0, "ring": 0}
    original = _Stream.encode_stream

    def checked(self):
        prog, loads = _same(self, f"stream {seen['streams']}", original)
        seen["streams"] += 1
        seen["ring"] += loads > 1
        return prog, loads

    monkeypatch.setenv("QACCEL_COMPILE_JOBS", "1")
    monkeypatch.setattr(_Stream, "encode_stream", checked)
    return seen


@pytest.mark.parametrize("hw", ["vta-default", "vta-store-requant"])
@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_models_match_reference(name, hw, cross_checked, gemm_cross_checked):
    """Every GEMM layer emitted by `vta_gemm_emit` and by the Python step loop (whose stream,
    like every element-wise and pool layer's, is resolved by the library and by the
    reference): the same programs."""
    from conftest import vta_lowered
    from qaccel.backends.vta.codegen import compile_module

    module, _ = vta_lowered(name, hw)
    compile_module(module, HardwareConfig.from_json(hw))
    assert cross_checked["streams"] > 0 or name == "pad_concat_slice"
    assert gemm_cross_checked["layers"] > 0


def test_library_is_used(monkeypatch):
    """With the library built, no stream is resolved by the reference."""
    from conftest import vta_lowered
    from qaccel.backends.vta.codegen import compile_module

    def refuse(stream):
        raise AssertionError("the reference resolved a stream")

    monkeypatch.setattr(emit, "resolve_stream_py", refuse)
    monkeypatch.setenv("QACCEL_COMPILE_JOBS", "1")
    module, _ = vta_lowered("small_cnn")
    compiled = compile_module(module, DEFAULT_CONFIG)
    assert sum(len(f.layers) for f in compiled.functions.values()) > 0


def test_reference_without_the_library(monkeypatch):
    """`QACCEL_NO_CSTREAM=1`: no library, the reference resolves every stream (the same
    program)."""
    from conftest import vta_lowered
    from qaccel.backends.vta.codegen import compile_module

    module, _ = vta_lowered("small_cnn")
    with_c = compile_module(module.clone(), DEFAULT_CONFIG)
    monkeypatch.setenv("QACCEL_NO_CSTREAM", "1")
    cstream._reset_for_tests()
    try:
        assert not cstream.available() and "QACCEL_NO_CSTREAM" in cstream.unavailable_reason()
        without = compile_module(module, DEFAULT_CONFIG)
    finally:
        monkeypatch.delenv("QACCEL_NO_CSTREAM")
        cstream._reset_for_tests()
    assert cstream.available()
    pairs = [(a, b) for f in with_c.functions
             for a, b in zip(with_c.functions[f].layers, without.functions[f].layers)]  # fmt: skip
    assert pairs and all(np.array_equal(a.words, b.words) and np.array_equal(a.uops, b.uops)
                         for a, b in pairs)  # fmt: skip


def random_stream(rng, config: HardwareConfig, ring: bool) -> _Stream:
    """Loads, GEMMs, ALU ops and stores over random slots: loads write input and weight
    slots, compute reads those and the accumulators, stores read (and may clear) them."""
    s = _Stream(config)
    depth = config.depth("uop")
    sizes = [int(v) for v in rng.integers(1, depth // 3 if ring else 8, 6)]
    keys = [s.kernel(("k", k), lambda n=n: encode_uops(np.arange(n) % 64, 0, 0, config))
            for k, n in enumerate(sizes)]  # fmt: skip
    inp = [("inp", k) for k in range(3)]
    wgt = [("wgt", k) for k in range(2)]
    acc = [("acc", k) for k in range(3)]

    def some(slots):
        return tuple(slots[k] for k in sorted(set(rng.integers(0, len(slots), 2).tolist())))

    for _ in range(int(rng.integers(1, 120))):
        kind = int(rng.integers(0, 6))
        k = int(rng.integers(0, len(keys)))
        if kind == 0:
            s.load(MemType.INP, int(rng.integers(0, 64)), int(rng.integers(0, 1000)), 2, 3,
                   module=LOAD, writes=some(inp))  # fmt: skip
        elif kind == 1:
            s.load(MemType.WGT, 0, int(rng.integers(0, 1000)), 1, 4, module=LOAD, writes=some(wgt))
        elif kind == 2:
            sub = None if rng.integers(0, 2) else int(rng.integers(0, sizes[k]))
            s.gemm(keys[k], 2, 3, (1, 2), (3, 4), (0, 1), reset=bool(rng.integers(0, 2)),
                   reads=some(inp) + some(wgt) + some(acc), writes=some(acc), sub=sub)  # fmt: skip
        elif kind == 3:
            imm = int(rng.integers(-5, 5)) if rng.integers(0, 2) else None
            s.alu(AluOp.ADD, keys[k], None, 1, 2, (0, 1), (0, 1), imm=imm, reads=list(some(acc)),
                  writes=list(some(acc)))  # fmt: skip
        elif kind == 4:
            s.load(MemType.ACC, 0, 0, 1, 2, module=COMPUTE, writes=some(acc))
        else:
            s.store(MemType.OUT, 0, int(rng.integers(0, 500)), 1, 2, 2, reads=list(some(acc)))
        if rng.integers(0, 8) == 0:  # a replayed block of what was just added
            s.recs.extend(s.recs[-3:])
    s.finish()
    return s


@pytest.mark.parametrize("ring", [False, True])
def test_random_streams_match_reference(ring):
    rng = np.random.default_rng(7 + ring)
    loads = []
    for config in (DEFAULT_CONFIG, HardwareConfig.from_json("vta-store-requant")):
        for n in range(40):
            _, k = _same(random_stream(rng, config, ring), f"{config.name} {n}")
            loads.append(k)
    assert (max(loads) > 1) == ring  # the ring reloads kernels; without it one LOAD UOP


def test_refusals_raise_as_the_reference():
    """What the library refuses (a dependency between load and store, a field that
    overflows, a kernel larger than the buffer) the reference raises, as before."""
    s = _Stream(DEFAULT_CONFIG)
    s.load(MemType.INP, 0, 0, 1, 1, module=LOAD, writes=(("x",),))
    s.store(MemType.OUT, 0, 0, 1, 1, 1, reads=(("x",),))
    s.finish()
    assert cstream.call(s.descriptor(), DEFAULT_CONFIG)[0] == cstream.NO_QUEUE
    with pytest.raises(AssertionError, match="no token queue"):
        s.encode_stream()
    s = _Stream(DEFAULT_CONFIG)
    s.load(MemType.INP, 0, 1 << 40, 1, 1, module=LOAD)
    s.finish()
    assert cstream.call(s.descriptor(), DEFAULT_CONFIG)[0] == cstream.OVERFLOW
    with pytest.raises(ValueError, match="dram_base"):
        s.encode_stream()
    s = _Stream(DEFAULT_CONFIG)
    n = DEFAULT_CONFIG.depth("uop") + 1
    key = s.kernel("big", lambda: np.zeros(n, np.uint32))
    s.gemm(key, 1, 1)
    s.finish()
    rc, io, _, _ = cstream.call(s.descriptor(), DEFAULT_CONFIG)
    assert rc == cstream.KERNEL_TOO_BIG and io.error_value == n
    with pytest.raises(emit.LayerError, match="exceeds the buffer"):
        s.encode_stream()


def malformed_descriptors():
    """A valid stream's descriptor, then copies with one index or size out of range."""
    s = _Stream(DEFAULT_CONFIG)
    key = s.kernel("k", lambda: np.zeros(4, np.uint32))
    s.load(MemType.INP, 0, 0, 1, 1, module=LOAD, writes=(("i",),))
    s.gemm(key, 1, 1, reads=(("i",),), writes=(("a",),), sub=2)
    s.store(MemType.OUT, 0, 0, 1, 1, 1, reads=(("a",),))
    s.finish()
    good = s.descriptor()
    yield "valid", good, cstream.OK

    def changed(label, **fields):
        d = cstream.StreamDescriptor(**{**good.__dict__, **fields})
        return label, d, cstream.BAD_INPUT

    n_sigs = len(good.sig_read_ptr) - 1
    for col, bad in ((0, -1), (0, 99), (1, 3), (1, -1), (2, n_sigs), (2, -1), (3, 5), (3, -2),
                     (4, 4), (4, -2)):  # fmt: skip
        recs = good.recs.copy()
        recs[1, col] = bad
        yield changed(f"recs[1, {col}] = {bad}", recs=recs)
    yield changed("a slot id", sig_reads=good.sig_reads + good.n_slots)
    yield changed("a negative slot id", sig_writes=good.sig_writes - good.n_slots - 1)
    ptr = good.sig_read_ptr.copy()
    ptr[-1] += 100
    yield changed("a signature past its slots", sig_read_ptr=ptr)
    ptr = good.sig_write_ptr.copy()
    ptr[1], ptr[0] = 0, 1
    yield changed("a signature's slots decreasing", sig_write_ptr=ptr)
    yield changed("a kernel of no micro-ops", kernel_sizes=np.zeros(1, np.int64))
    yield changed("kernels too large together (their offsets would overflow)",
                  kernel_sizes=np.full((1 << 22) + 1, 1 << 40, np.int64))  # fmt: skip
    recs = good.recs.copy()
    recs[-1, 1] = LOAD
    yield changed("FINISH not on compute", recs=recs)


@pytest.mark.parametrize("label, desc, rc", list(malformed_descriptors()),
                         ids=[m[0] for m in malformed_descriptors()])  # fmt: skip
def test_malformed_descriptors_refused(label, desc, rc):
    got, io, fields, _ = cstream.call(desc, DEFAULT_CONFIG)
    assert got == rc, label
    if rc != cstream.OK:
        assert io.n_out == 0 and not fields.any(), label


def _bad_statics():
    """The configuration's constant inputs with one of them out of range."""
    columns, push, pop, ptr, arrays = cstream._static(DEFAULT_CONFIG)

    def arrays_with(k, j, value):
        out = [a.copy() for a in arrays]
        out[k][j] = value
        return out

    yield "a column", ([99] + columns[1:], push, pop, ptr, arrays)
    yield "a push without its pop", (columns, [3] + push[1:], [-1] + pop[1:], ptr, arrays)
    yield "the encoding's length", (columns, push, pop, ptr[:-1] + [ptr[-1] + 1], arrays)
    yield "opcodes' fields decreasing", (columns, push, pop, [0, 5, 2] + ptr[3:], arrays)
    yield "an encoded column", (columns, push, pop, ptr, arrays_with(0, 3, 34))
    yield "an empty range", (columns, push, pop, ptr, arrays_with(2, 1, -(1 << 40)))
    yield "a shift", (columns, push, pop, ptr, arrays_with(3, 2, 64))
    yield "a word", (columns, push, pop, ptr, arrays_with(4, 2, 2))
    yield "a range of no power of two", (columns, push, pop, ptr,
                                         arrays_with(2, 1, arrays[2][1] + 1))  # fmt: skip


@pytest.mark.parametrize("label", [b[0] for b in _bad_statics()])
def test_malformed_static_inputs_refused(label, monkeypatch):
    bad = dict(_bad_statics())[label]
    desc = next(malformed_descriptors())[1]
    monkeypatch.setattr(cstream, "_static", lambda config: bad)
    assert cstream.call(desc, DEFAULT_CONFIG)[0] == cstream.BAD_INPUT, label


def test_arrays_of_other_shapes_than_their_sizes_say_are_refused():
    """The library reads each array by the sizes it is given: arrays of another shape never
    reach it."""
    good = next(malformed_descriptors())[1]
    cases = (("rows of one dimension", {"rows": good.rows.reshape(-1)}),
             ("records of 4 fields", {"recs": good.recs[:, :4]}),
             ("no signature pointer", {"sig_read_ptr": good.sig_read_ptr[:0]}),
             ("unequal pointers", {"sig_write_ptr": good.sig_write_ptr[:-1]}))
    for label, fields in cases:
        desc = cstream.StreamDescriptor(**{**good.__dict__, **fields})
        assert cstream.call(desc, DEFAULT_CONFIG)[0] == cstream.BAD_INPUT, label
        assert cstream.resolve(desc, DEFAULT_CONFIG) is None, label


def test_without_the_library_a_call_says_why(monkeypatch):
    monkeypatch.setenv("QACCEL_NO_CSTREAM", "1")
    cstream._reset_for_tests()
    try:
        with pytest.raises(RuntimeError, match="QACCEL_NO_CSTREAM is set"):
            cstream.call(next(malformed_descriptors())[1], DEFAULT_CONFIG)
    finally:
        monkeypatch.delenv("QACCEL_NO_CSTREAM")
        cstream._reset_for_tests()


def test_too_small_capacity_refused():
    s = _Stream(DEFAULT_CONFIG)
    key = s.kernel("k", lambda: np.zeros(4, np.uint32))
    s.gemm(key, 1, 1)
    s.finish()
    assert cstream.call(s.descriptor(), DEFAULT_CONFIG, capacity=2)[0] == cstream.BAD_INPUT
    assert cstream.call(s.descriptor(), DEFAULT_CONFIG, capacity=3)[0] == cstream.OK


def _libasan():
    out = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True)
    path = out.stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


@pytest.mark.skipif(shutil.which("gcc") is None or _libasan() is None,
                    reason="needs gcc with AddressSanitizer")  # fmt: skip
def test_sanitizers(tmp_path):
    """The library built with -fsanitize=address,undefined: random streams (ring included),
    the malformed descriptors, random GEMM layers emitted by `vta_gemm_emit`, its malformed
    parameters and a compiled model, with no ASan/UBSan report."""
    from qaccel.targets import cbuild
    from sanitized_build import cached

    flags = ("-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror")  # fmt: skip
    cached(tmp_path / cstream.LIB_NAME,
           lambda out: cstream.build_library(out.parent, cc="gcc", extra_flags=flags),
           label="cstream", flags=flags,
           inputs=[*cstream.LIBRARY.files(), Path(cstream.__file__), Path(cbuild.__file__)])
    code = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, %r)
        import test_vta_cstream as t
        from qaccel.lowering.vta import cstream
        assert cstream.available(), cstream.unavailable_reason()
        t.test_random_streams_match_reference(False)
        t.test_random_streams_match_reference(True)
        t.test_refusals_raise_as_the_reference()
        for label, desc, rc in t.malformed_descriptors():
            t.test_malformed_descriptors_refused(label, desc, rc)
        t.test_too_small_capacity_refused()
        for label, bad in t._bad_statics():
            static, cstream._static = cstream._static, lambda config: bad
            try:
                assert cstream.call(next(t.malformed_descriptors())[1], t.DEFAULT_CONFIG)[0] == 1
            finally:
                cstream._static = static
        for label, emitter in t._random_gemm_cases(50, 11):
            t._both_ways(emitter, label)
        t.test_gemm_micro_op_ring_matches_python_emitter()
        for label, params, rc in t.malformed_gemm_params():
            t.test_malformed_gemm_params_refused(label, params, rc)
        from conftest import vta_lowered
        from qaccel.backends.vta.codegen import compile_module
        for hw in ("vta-default", "vta-store-requant"):
            module, _ = vta_lowered("small_cnn", hw)
            compile_module(module, t.HardwareConfig.from_json(hw))
        print("sanitized: ok")
        """
        % str(Path(__file__).parent)
    )
    env = {**os.environ, "QACCEL_CSTREAM_LIB": str(tmp_path / cstream.LIB_NAME),
           "QACCEL_COMPILE_JOBS": "1", "LD_PRELOAD": _libasan(),
           "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}  # fmt: skip
    env.pop("QACCEL_NO_CSTREAM", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    assert "runtime error" not in out.stderr and "AddressSanitizer" not in out.stderr
    assert "sanitized: ok" in out.stdout


def test_small_uops_as_encode_uops():
    """The emitters' few-micro-op encoder: `encode_uops`'s words, and its error past a field."""
    rng = np.random.default_rng(3)
    for config in (DEFAULT_CONFIG, HardwareConfig.from_json("vta-store-requant")):
        top = [1 << f.width for f in layout_of(config).uop]
        for n in (1, 2, 7):
            idx = [rng.integers(0, t, n).tolist() for t in top]
            assert np.array_equal(emit.small_uops(*idx, config), encode_uops(*idx, config))
        for k in range(3):
            idx = [[0], [0], [0]]
            idx[k] = [top[k]]
            with pytest.raises(ValueError, match="out of its"):
                emit.small_uops(*idx, config)


def _random_gemm_cases(n: int, seed: int):
    """(label, emitter) of random small layers under random legal schedules (every bias mode
    and loop order the search considers), at three configurations, a batch of two and
    run-time weights and accumulators among them."""
    from dataclasses import replace

    from qaccel.lowering.vta.search import candidates
    from test_vta_codegen import random_layer

    rng = np.random.default_rng(seed)
    small = HardwareConfig(name="small", log_uop_buff_size=10, log_inp_buff_size=12,
                           log_wgt_buff_size=15, log_acc_buff_size=13)  # fmt: skip
    configs = (DEFAULT_CONFIG, HardwareConfig.from_json("vta-store-requant"), small)
    made = 0
    while made < n:
        layer = random_layer(rng)
        if layer is None:
            continue
        config = configs[int(rng.integers(3))]
        if layer.geometry.kind == "conv" and rng.integers(4) == 0:  # a batch, run-time data
            try:
                layer = replace(layer, input_shape=(2, *layer.input_shape[1:]),
                                runtime_init=bool(rng.integers(2)),
                                runtime_weights=bool(rng.integers(2)))  # fmt: skip
            except emit.LayerError:
                continue
        try:
            cands = candidates(layer.geometry, config)
        except emit.LayerError:
            continue
        for i in rng.choice(len(cands), min(3, len(cands)), replace=False):
            sched = cands[int(i)]
            try:
                emitter = emit.prepare_emit(layer, sched, config)
            except emit.LayerError:
                continue
            made += 1
            yield f"{layer.geometry.kind} {sched.describe()} on {config.name}", emitter


def test_random_gemm_layers_match_python_emitter():
    modes = set()
    for label, emitter in _random_gemm_cases(150, 11):
        _both_ways(emitter, label)
        modes.add(emitter.s.bias_mode)
        modes.add(emitter.s.loop_order)
    assert modes >= {"alu", "dma", "gemm", "store", "spatial", "channel"}, modes


def test_gemm_micro_op_ring_matches_python_emitter():
    """Micro-op buffers too small for every kernel: the kernels reloaded through the ring."""
    from qaccel.lowering.vta.search import make_schedule, schedule
    from test_vta_codegen import conv_layer

    cfg = HardwareConfig(name="tiny", log_uop_buff_size=9, log_inp_buff_size=11,
                         log_wgt_buff_size=14, log_acc_buff_size=12)  # fmt: skip
    layer = conv_layer(H=10, W=10, C=40, O=40, k=3)
    for sched in (schedule(layer, cfg, refine=0),
                  make_schedule(layer, cfg, tile_h=2, tile_w=5, tile_co=1, tile_ci=1)):
        prog = _both_ways(emit.prepare_emit(layer, sched, cfg), sched.describe())
    assert prog.uop_loads > 1


def test_gemm_library_is_used_and_can_be_disabled(monkeypatch):
    """`compile_module` emits GEMM layers through the library; `QACCEL_NO_CGEMM=1` makes the
    Python step loop emit them (the same programs)."""
    from conftest import vta_lowered
    from qaccel.backends.vta.codegen import compile_module

    used = []
    run_c = emit._Emitter.run_c
    monkeypatch.setattr(emit._Emitter, "run_c", lambda self: used.append(run_c(self)) or used[-1])
    monkeypatch.setenv("QACCEL_COMPILE_JOBS", "1")
    module, _ = vta_lowered("small_cnn")
    with_c = compile_module(module.clone(), DEFAULT_CONFIG)
    assert used and all(p is not None for p in used)
    monkeypatch.setenv("QACCEL_NO_CGEMM", "1")
    used.clear()
    without = compile_module(module, DEFAULT_CONFIG)
    assert used == [None] * len(used) and used
    pairs = [(a, b) for f in with_c.functions
             for a, b in zip(with_c.functions[f].layers, without.functions[f].layers)]  # fmt: skip
    assert pairs and all(np.array_equal(a.words, b.words) and np.array_equal(a.uops, b.uops)
                         for a, b in pairs)  # fmt: skip


def test_gemm_parameter_and_field_order():
    """cstream's names of `vta_gemm_emit`'s parameters and vta_gemm.c's row columns are the
    header's enum and `isa.FIELD_NAMES`."""
    import re

    from qaccel.targets.vta.isa import FIELD_NAMES

    assert cstream.C_FIELDS == FIELD_NAMES
    header = (cstream.STREAM_DIR / "vta_stream.h").read_text()
    body = header[header.index("VTA_GEMM_KIND,") : header.index("VTA_GEMM_UOP_BIT")]
    body = re.sub(r"/\*.*?\*/", "", body, flags=re.S)
    names = tuple(n.strip().removeprefix("VTA_GEMM_") for n in body.split(",") if n.strip())
    assert names == cstream.GEMM_PARAMS
    assert f"#define VTA_GEMM_MAX_STEPS (1 << {cstream.GEMM_MAX_STEPS.bit_length() - 1})" in header
    c = (cstream.STREAM_DIR / "vta_gemm.c").read_text()
    columns = c[c.index("F_OPCODE = 0") : c.index("};", c.index("F_OPCODE = 0"))]
    assert [n.strip().split(" ")[0] for n in columns.split(",")][:3] == ["F_OPCODE", "F_POP_PREV",
                                                                         "F_POP_NEXT"]
    assert len(columns.split(",")) == len(FIELD_NAMES)


def malformed_gemm_params():
    """A valid layer's parameters, then copies with one value out of range."""
    from qaccel.lowering.vta.search import schedule
    from test_vta_codegen import conv_layer

    layer = conv_layer(H=6, W=6, C=20, O=20, k=3)
    emitter = emit.prepare_emit(layer, schedule(layer, DEFAULT_CONFIG, refine=0), DEFAULT_CONFIG)
    good = emitter.c_params()
    yield "valid", good, cstream.OK
    ix = cstream.GEMM_INDEX
    for name, bad in (("KIND", 3), ("H", 0), ("KH", -1), ("TH", 0), ("TCO", 0), ("INP_SLOTS", 0),
                      ("ACC_SLOTS", -2), ("WGT_SLOTS", 1 << 30), ("DEPTH_MULTIPLIER", 0),
                      ("BIAS_MODE", 7), ("E_INPUT", 1 << 50), ("INP_BASE", -5),
                      ("LSH_IMM", 1 << 62)):  # fmt: skip
        p = good.copy()
        p[ix[name]] = bad
        yield f"{name} = {bad}", p, cstream.BAD_INPUT
    p = good.copy()
    p[ix["UOP_WIDTH"]] = 70
    yield "a micro-op field past the word", p, cstream.BAD_INPUT
    p = good.copy()
    p[ix["PARAMS"]] = 9
    yield "a parameter kind", p, cstream.BAD_INPUT
    p = good.copy()
    p[ix["TH"]], p[ix["OH"]], p[ix["TW"]], p[ix["OW"]] = 1, 1 << 20, 1, 1 << 20
    yield "too many steps", p, cstream.BAD_INPUT
    p = good.copy()
    p[ix["UOP_WIDTH"]] = 1  # the destination index outside its field: the layer is refused
    yield "a micro-op index outside its field", p, cstream.OVERFLOW
    yield "too few parameters", good[:-1], cstream.BAD_INPUT
    # Every value in its range, their products not: each refused before anything is built.
    for label, changes in (
            ("the input frame of a tile", dict(H=1 << 20, W=1 << 20, OH=1 << 20, OW=1 << 20,
                                               TH=1 << 20, TW=1 << 20, KH=64, SH=64, DH=64,
                                               CIB=1 << 16, TCI=1 << 16)),
            ("the input frame's rows", dict(OH=1 << 20, TH=1 << 20, SH=64, H=1 << 20)),
            ("the input images", dict(BATCH=1 << 16, H=1 << 20, W=1 << 20)),
            ("the input image", dict(H=1 << 20, W=1 << 20, CIB=1 << 16, TCI=1 << 16)),
            ("the output image and tile", dict(OH=1 << 20, OW=1 << 20, TH=1 << 20, TW=1 << 20,
                                               COB=1 << 16, TCO=1 << 16, WGT_SLOTS=1)),
            ("the weights", dict(COB=1 << 16, CIB=1 << 16, KH=64, KW=64, TCO=1 << 16,
                                 TCI=1 << 16, WGT_SLOTS=1, RUNTIME_WEIGHTS=1)),
            ("the steps of a batch", dict(BATCH=1 << 16)),
            ("the weight slots' parts", dict(WGT_SLOTS=1 << 16, TCO=1 << 16, COB=1 << 16))):
        p = good.copy()
        for name, value in changes.items():
            p[ix[name]] = value
        yield f"too large: {label}", p, cstream.BAD_INPUT
    for name in ("ROW_SUBSAMPLE", "DIAGONAL", "INT32_OUTPUT", "HAS_BIAS", "ZP", "GEMM_BIAS",
                 "STORE_TAIL", "RUNTIME_WEIGHTS", "RUNTIME_INIT", "HAS_SHIFT"):
        p = good.copy()
        p[ix[name]] = 2
        yield f"the flag {name} = 2", p, cstream.BAD_INPUT
    for at, bad in ((ix["PARAMS"] + 1, -2), (ix["PARAMS"] + 1, 1 << 50), (ix["PARAMS"] + 2, 65),
                    (ix["TAIL"], 6), (ix["TAIL"] + 7, -1)):
        p = good.copy()
        p[at] = bad
        yield f"parameter {at} = {bad}", p, cstream.BAD_INPUT
    # Kernels of 2^38 and 2^28 micro-ops (a GEMM of 64x64 taps on 2^13 x 2^13 blocks; one
    # output block on 2^16 input blocks): counted, and refused, before being built.
    p = good.copy()
    for name, value in dict(H=64, W=64, KH=64, KW=64, PAD_T=0, PAD_L=0, OH=1, OW=1, TH=1, TW=1,
                            CIB=1 << 13, COB=1 << 13, TCI=1 << 13, TCO=1 << 13).items():
        p[ix[name]] = value
    yield "a kernel of 2^38 micro-ops", p, cstream.KERNEL_TOO_BIG
    for name, value in dict(CIB=1 << 16, TCI=1 << 16, COB=1, TCO=1).items():
        p[ix[name]] = value
    yield "a kernel of 2^28 micro-ops, one output block", p, cstream.KERNEL_TOO_BIG
    # Steps within their cap, their instructions past it (about 20 per image).
    p = good.copy()
    p[ix["BATCH"]] = cstream.GEMM_MAX_STEPS // 4
    yield "too many instructions", p, cstream.BAD_INPUT


def test_gemm_statics_keep_their_arrays():
    """The configuration's `_IO` record and the arrays it points into are cached together: the
    record stays usable when `_static`'s cache is emptied."""
    import gc

    config = HardwareConfig(name="statics", log_uop_buff_size=13)  # not cached yet
    io = cstream._statics_io(config)
    record, arrays = cstream._STATIC_IO[config]
    assert record is io
    assert [io.enc_col, io.enc_lo, io.enc_hi, io.enc_shift, io.enc_word] == [
        a.ctypes.data for a in arrays]
    cstream._STATIC.pop(config, None)
    gc.collect()
    good = next(malformed_gemm_params())[1]
    assert cstream.gemm_call(good, config)[0] == cstream.OK


@pytest.mark.parametrize("rc", [cstream.NOMEM, cstream.BAD_INPUT, cstream.KERNEL_TOO_BIG])
def test_gemm_refused_by_the_library_falls_back_to_python(monkeypatch, rc):
    """When `vta_gemm_emit` refuses a layer (out of memory, or past a cap), `run()` gives the
    Python step loop's program."""
    from qaccel.lowering.vta.search import schedule
    from test_vta_codegen import conv_layer

    layer = conv_layer(H=6, W=6, C=20, O=20, k=3)
    emitter = emit.prepare_emit(layer, schedule(layer, DEFAULT_CONFIG, refine=0), DEFAULT_CONFIG)
    want = _python_twin(emitter).run_py()
    calls = []

    def refuse(params, config):
        calls.append(params)
        return rc, None, None, None, 0

    monkeypatch.delenv("QACCEL_NO_CGEMM", raising=False)
    monkeypatch.setattr(cstream, "gemm_call", refuse)
    got = emitter.run()
    assert len(calls) == 1
    _same_program(got, want, f"refused with {rc}")


@pytest.mark.parametrize("label, params, rc", list(malformed_gemm_params()),
                         ids=[m[0] for m in malformed_gemm_params()])  # fmt: skip
def test_malformed_gemm_params_refused(label, params, rc):
    got = cstream.gemm_call(params, DEFAULT_CONFIG)
    assert got[0] == rc, label
    assert (got[1] is None) == (rc != cstream.OK), label
