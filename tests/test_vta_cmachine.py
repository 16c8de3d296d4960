"""libqaccel_vta (the C machine) against the Python reference simulator.

Both run the same programs; they must agree bit for bit (DRAM and SRAM after FINISH), cycle
for cycle (every instruction's start and end, per-module statistics, bytes moved, leftover
tokens) and on errors (the same `SimulationError.kind`, `.index` and message, down to the row,
lane and instruction it names, data races included). The programs:

- structured random programs (`random_program`): tiles of LOAD / GEMM / ALU / STORE (OUT, ACC,
  OUTQ with `store_requant`) synchronized by tokens, on four hardware configurations
  (BLOCK 8, 16 and 32), a third of them mutated (a random field or bit) into malformed,
  racy, deadlocking or out-of-range programs;
- random encodings (`test_vta_isa._random_fields`): mostly malformed;
- the emitter's random layers (`test_vta_codegen.random_layer`);
- every layer of every fixture model, compiled for both bundled configurations.

Every comparison also runs the C machine's fast path (`cmachine.Prepared`: the program checked
and timed once without data, then replayed with data only, in scratchpads shared by every
program of a configuration): the same DRAM and statistics as the checked C run, the same error
(any error when the checked run fails on data: an ALU or output-stage shift out of range).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from qaccel.targets.vta import cmachine
from qaccel.targets.vta.alu import output_stage_block
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.targets.vta.isa import (
    FIELD_NAMES,
    PARAM_ROWS,
    AluOp,
    MemType,
    Opcode,
    Program,
    decode,
    encode,
    encode_uops,
    layout_of,
)
from qaccel.targets.vta.simulator import SimulationError, simulate, timing

STORE_RQ = HardwareConfig.from_json("vta-store-requant")
B8 = HardwareConfig(name="b8", log_block=3, log_uop_buff_size=11, log_inp_buff_size=10,
                    log_wgt_buff_size=12, log_acc_buff_size=12, bus_width_bytes=8,
                    dma_setup_cycles=7, insn_issue_cycles=2, gemm_cycles_per_uop=3,
                    alu_cycles_per_uop=1, store_requant=True)  # fmt: skip
B32 = HardwareConfig(name="b32", log_block=5, log_uop_buff_size=12, log_inp_buff_size=12,
                     log_wgt_buff_size=16, log_acc_buff_size=14, bus_width_bytes=32)  # fmt: skip
CONFIGS = [DEFAULT_CONFIG, STORE_RQ, B8, B32]

needs_c = pytest.mark.skipif(
    os.environ.get("QACCEL_NO_CMACHINE", "") not in ("", "0"), reason="QACCEL_NO_CMACHINE set"
)
pytestmark = needs_c

# Outcome counts over the whole module (printed by the last test, asserted per program).
OUTCOMES: Counter = Counter()


def _run(fn, *args):
    try:
        return fn(*args)
    except SimulationError as e:
        return e


def _same_report(a, b):
    for key in ("total_cycles", "busy", "stalled", "bus_wait", "gemm_iterations",
                "alu_iterations", "dram_read_bytes", "dram_write_bytes"):  # fmt: skip
        assert getattr(a, key) == getattr(b, key), key
    assert np.array_equal(a.start, b.start) and np.array_equal(a.end, b.end)
    assert np.array_equal(a.module, b.module)


_SCRATCH: dict = {}


def _fast(program, uops, dram, config):
    """The fast path on a copy of the DRAM image: (Prepared, DRAM after FINISH), an error,
    or None when the image is not one the machine takes (the checked path says why)."""
    c = config or (program.config if isinstance(program, Program) else DEFAULT_CONFIG)
    prog = program if isinstance(program, Program) else Program(c, program)
    image = prog.initial_dram() if dram is None else np.asarray(dram)
    if image.dtype != np.uint8 or image.ndim != 1:
        return None
    key = (repr(c), cmachine.kernel)  # every field: scratchpads are per configuration
    try:
        if key not in _SCRATCH:
            _SCRATCH[key] = cmachine.Scratch(c)
        p = cmachine.Prepared(prog, uops, image.size, c)
        return p, p.execute(image.copy(), _SCRATCH[key])
    except SimulationError as e:
        return e


def _compare_fast(c, fast, what):
    """The fast path against the checked C run."""
    if fast is None:
        return
    if isinstance(c, SimulationError):
        assert isinstance(fast, SimulationError), f"{what}: checked: {c}; fast ran"
        if "the hardware result is undefined" not in str(c):  # not a check on data
            assert (fast.kind, fast.index, str(fast)) == (c.kind, c.index, str(c)), what
        OUTCOMES["fast: same error"] += 1
        return
    assert not isinstance(fast, SimulationError), f"{what}: fast: {fast}; checked ran"
    prepared, dram = fast
    assert np.array_equal(dram, c.dram), f"{what}: fast path DRAM"
    _same_report(prepared.report, c.timing)
    assert prepared.leftover_tokens == c.leftover_tokens
    OUTCOMES["fast: ran"] += 1


def _compare(program, uops=None, dram=None, config=None, what=""):
    """Run both simulators (and both timing models, and the C machine's fast path); assert
    they agree; returns the outcome."""
    py = _run(lambda: simulate(program, uops, dram, config, simulator="python"))
    c = _run(lambda: simulate(program, uops, dram, config, simulator="c"))
    _compare_fast(c, _fast(program, uops, dram, config), what)
    tp = _run(lambda: timing(program, config, simulator="python"))
    tc = _run(lambda: timing(program, config, simulator="c"))
    for ref, got in ((py, c), (tp, tc)):
        if isinstance(ref, SimulationError):
            assert isinstance(got, SimulationError), f"{what}: python: {ref}; C ran"
            assert (got.kind, got.index) == (ref.kind, ref.index), f"{what}:\n{ref}\n{got}"
            assert str(got) == str(ref), what  # the whole message, rows and lanes included
            OUTCOMES["same error"] += 1
        else:
            assert not isinstance(got, SimulationError), f"{what}: C: {got}; python ran"
    if isinstance(tp, SimulationError):
        OUTCOMES["timing error"] += 1
    else:
        _same_report(tp, tc)
    if isinstance(py, SimulationError):
        OUTCOMES["error " + py.detail.split(":")[0].split(" ")[0]] += 1
        return "error"
    assert np.array_equal(py.dram, c.dram), what
    for key in py.sram:
        assert np.array_equal(py.sram[key], c.sram[key]), f"{what}: {key}"
    _same_report(py.timing, c.timing)
    assert py.leftover_tokens == c.leftover_tokens
    OUTCOMES["ran"] += 1
    return "ran"


def test_the_c_machine_is_available():
    assert cmachine.available(), cmachine.unavailable_reason()


# --------------------------------------------------------------------------------------------
# Structured random programs
# --------------------------------------------------------------------------------------------


def _phase(p, items, **flags):
    """Append `items` ((method, args, kwargs)); the first pops, the last pushes (`flags`)."""
    for k, (method, args, kw) in enumerate(items):
        kw = dict(kw)
        for flag, on in flags.items():
            if on and ((flag.startswith("pop") and k == 0) or
                       (flag.startswith("push") and k == len(items) - 1)):  # fmt: skip
                kw[flag] = True
        getattr(p, method)(*args, **kw)


def random_program(rng, config):
    """A tiled program, every phase handing a token to the next, random sizes and loops."""
    blk, r = config.block, lambda lo, hi: int(rng.integers(lo, hi))
    ri, rw, ra = min(config.depth("inp"), 48), min(config.depth("wgt"), 12), min(config.depth("acc"), 48)
    nu = 40
    uops = encode_uops(rng.integers(0, ra // 2, nu), rng.integers(0, min(ri, ra) // 2, nu),
                       rng.integers(0, rw // 2, nu), config=config)  # fmt: skip
    dram = rng.integers(0, 256, r(4, 9) * 4096).astype(np.uint8)
    small = rng.random() < 0.5  # small ACC values: register shifts in range more often
    if small:
        dram[: len(dram) // 2] = rng.integers(0, 8, len(dram) // 2)
    eb = {"inp": blk, "wgt": blk * blk, "acc": 4 * blk}
    # Output-stage parameter blocks at the top of the ACC rows in use (store_requant configs).
    n_params = 2
    prow = ra - PARAM_ROWS * n_params
    params = output_stage_block(rng.integers(-1000, 1000, (n_params, blk)),
                                rng.integers(1 << 29, 1 << 31, (n_params, blk)),
                                rng.integers(-12, 3, (n_params, blk)), r(-128, 128), -128, 127,
                                block=blk)  # fmt: skip
    pbytes = params.reshape(-1).view(np.uint8)
    pel = r(0, len(dram) // eb["acc"] - len(pbytes) // eb["acc"])
    dram[pel * eb["acc"] : pel * eb["acc"] + len(pbytes)] = pbytes

    def el(kind, n):
        return r(0, max(1, len(dram) // eb[kind] - n))

    p = Program(config)
    p.uops = uops
    p.load(MemType.UOP, 0, r(0, 4), 1, r(20, nu - 4))
    acc_mem = MemType.ACC8 if rng.random() < 0.3 else MemType.ACC
    p.load(acc_mem, 0, el("acc" if acc_mem == MemType.ACC else "inp", prow), 1, prow)
    if config.store_requant:
        p.load(MemType.ACC, prow, pel, 1, PARAM_ROWS * n_params)
    n_tiles = r(1, 4)
    for t in range(n_tiles):
        load = []
        if rng.random() < 0.4:
            load.append(("setpad", (r(-128, 128),), {}))
        if t == 0:
            load.append(("load", (MemType.INP, 0, el("inp", ri), 1, ri), {}))
            load.append(("load", (MemType.WGT, 0, el("wgt", rw), 1, rw), {}))
        for _ in range(r(1, 3)):
            y, x = r(1, 4), r(1, 6)
            pads = [r(0, 3) if rng.random() < 0.3 else 0 for _ in range(4)]
            rows = (y + pads[0] + pads[1]) * (x + pads[2] + pads[3])
            mem = MemType.INP if rng.random() < 0.7 else MemType.WGT
            depth = ri if mem == MemType.INP else rw
            kind = mem.name.lower()
            load.append(("load", (mem, r(0, max(1, depth - rows)), el(kind, 4 * y * x + 16), y,
                                  x, x + r(0, 3), tuple(pads[:2]), tuple(pads[2:])), {}))  # fmt: skip
        _phase(p, load, pop_next=t > 0, push_next=True)
        compute = []
        for _ in range(r(1, 4)):
            b = r(0, 20)
            e = b + r(1, 12)
            io, ii = r(1, 4), r(1, 4)
            kw = dict(iter_out=io, iter_in=ii, dst_factor=(r(0, 5), r(0, 5)))
            if rng.random() < 0.2:
                compute.append(("gemm", (b, e), dict(kw, reset=True)))
            elif rng.random() < 0.6:
                compute.append(("gemm", (b, e), dict(kw, src_factor=(r(0, 5), r(0, 5)),
                                                     wgt_factor=(r(0, 3), r(0, 3)))))  # fmt: skip
            else:
                op = AluOp(r(0, 7))
                if rng.random() < 0.7:
                    lo, hi = {AluOp.SHR: (-31, 32), AluOp.RSHR: (0, 32)}.get(op, (-32768, 32768))
                    kw["imm"] = r(lo, hi)
                else:
                    kw["src_factor"] = (r(0, 5), r(0, 5))
                compute.append(("alu", (op, b, e), kw))
        _phase(p, compute, pop_prev=True, pop_next=t > 0, push_prev=True, push_next=True)
        store = []
        for _ in range(r(1, 3)):
            y, x = r(1, 4), r(1, 8)
            mems = [MemType.OUT, MemType.ACC] + ([MemType.OUTQ] * 2 if config.store_requant else [])
            mem = mems[r(0, len(mems))]
            kw = {}
            if mem == MemType.OUTQ:
                kw = dict(param_row=prow, param_step=(0, r(0, 2)) if x <= n_params else (0, 0))
            if config.store_requant and rng.random() < 0.3:
                kw["clear"] = True
            kind = "acc" if mem == MemType.ACC else "inp"
            store.append(("store", (mem, r(0, prow - y * x), el(kind, 8 * y * x + 16), y, x,
                                    x + r(0, 3)), kw))  # fmt: skip
        _phase(p, store, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)
    return p, dram


def mutate(rng, p, config):
    """One random field set to a random value of its width, or one random bit flipped."""
    words = p.words.copy()
    i = int(rng.integers(len(words)))
    if rng.random() < 0.25:
        b = int(rng.integers(128))
        words[i, b // 64] ^= np.uint64(1 << (b % 64))
    else:
        f = decode(words[i : i + 1], config)
        fmt = layout_of(config).by_opcode[Opcode(int(f["opcode"][0]))]
        fld = fmt[int(rng.integers(1, len(fmt)))] if len(fmt) > 1 else fmt[0]
        if fld.name == "opcode":
            return p
        lo = -(1 << (fld.width - 1)) if fld.signed else 0
        hi = (1 << (fld.width - 1)) if fld.signed else 1 << fld.width
        small = rng.random() < 0.7 and not fld.signed
        f[fld.name][0] = int(rng.integers(0, min(hi, 64))) if small else int(rng.integers(lo, hi))
        words[i] = encode(f, config)[0]
    q = Program(config, words, p.uops)
    return q


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_random_programs(config):
    rng = np.random.default_rng(sum(map(ord, config.name)))
    outcomes = Counter()
    for n in range(250):
        p, dram = random_program(rng, config)
        if n % 3 == 2:
            p = mutate(rng, p, config)
        outcomes[_compare(p, None, dram, config, f"{config.name} program {n}")] += 1
    assert outcomes["ran"] >= 40, outcomes  # enough programs run to FINISH to compare data


def alu_chain_program(rng, config):
    """Runs of ALU instructions over the same accumulator rows, as a requantization is: the
    fast path takes such a run in one pass per row when each row is written once and no
    instruction reads a row the run writes. Sometimes the rows repeat, a source overlaps the
    destinations, or a register RSHR exponent is out of range (one instruction at a time then,
    or the same error)."""
    r = lambda lo, hi: int(rng.integers(lo, hi))  # noqa: E731
    ra = min(config.depth("acc"), 256)
    half, nu = ra // 2, 24
    dst, src = np.arange(nu), half + np.arange(nu)
    if rng.random() < 0.2:  # sources among the destinations: not fused
        src = rng.integers(0, half, nu)
    uops = encode_uops(dst, src, np.zeros(nu, np.int64), config=config)
    eb = 4 * config.block
    acc = rng.integers(-(1 << 20), 1 << 20, (ra, config.block)).astype(np.int32)
    acc[half:] = rng.integers(0, 34 if rng.random() < 0.3 else 32, (ra - half, config.block))
    dram = acc.reshape(-1).view(np.uint8).copy()
    p = Program(config)
    p.uops = uops
    p.load(MemType.UOP, 0, 0, 1, nu)
    p.load(MemType.ACC, 0, 0, 1, ra)  # ACC and UOP loads run in the compute module
    b = r(0, 8)
    e = b + r(1, 6)
    io, ii = r(1, 3), r(1, 3)
    dfi, dfo = e - b, (e - b) * ii
    if rng.random() < 0.2:  # rows written twice: not fused
        dfi, dfo = r(0, 3), r(0, 3)
    chain = []
    for _ in range(r(2, 7)):
        op = AluOp(r(0, 7))
        kw = dict(iter_out=io, iter_in=ii, dst_factor=(dfo, dfi))
        if op != AluOp.SHR and rng.random() < 0.4:
            kw["src_factor"] = (dfo, dfi)
        else:
            lo, hi = {AluOp.SHR: (-31, 32), AluOp.RSHR: (0, 32)}.get(op, (-32768, 32768))
            kw["imm"] = r(lo, hi)
        chain.append(("alu", (op, b, e), kw))
    _phase(p, chain, push_next=True)
    p.store(MemType.ACC, 0, 0, 1, half, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)
    return p, dram


@pytest.mark.parametrize("config", [DEFAULT_CONFIG, B8], ids=lambda c: c.name)
def test_fused_alu_runs(config):
    rng = np.random.default_rng(7)
    outcomes = Counter()
    for n in range(150):
        program, dram = alu_chain_program(rng, config)
        outcomes[_compare(program, None, dram, config, f"{config.name} ALU run {n}")] += 1
    assert outcomes["ran"] >= 60, outcomes


@pytest.mark.parametrize("kernel", ["c", "sse2", "avx2"])
def test_every_gemm_kernel(kernel, monkeypatch):
    """Each GEMM kernel (portable C, SSE2, AVX2; the run uses the best one the CPU has) on
    random programs of every block size and on an emitted convolution."""
    monkeypatch.setattr(cmachine, "kernel", kernel)
    rng = np.random.default_rng(7)
    for config in CONFIGS:
        for n in range(25):
            p, dram = random_program(rng, config)
            _compare(p, None, dram, config, f"{kernel} {config.name} {n}")
    from qaccel.lowering.vta.emit import emit
    from qaccel.lowering.vta.search import schedule
    from test_vta_codegen import conv_layer

    layer = conv_layer(H=9, W=9, C=40, O=36, k=3, rng=rng)
    prog = emit(layer, schedule(layer, DEFAULT_CONFIG, refine=0), DEFAULT_CONFIG)
    x = rng.integers(-128, 128, layer.input_shape).astype(np.int8)
    assert _compare(prog.program, prog.program.uops, prog.dram_image(x), DEFAULT_CONFIG) == "ran"
    assert cmachine.last_kernel in (kernel, "sse2", "c")  # never faster than asked


def test_random_encodings(monkeypatch):
    """Random field values of random opcodes (mostly malformed) as short programs, under one
    step limit for both (their defaults differ)."""
    from qaccel.targets.vta import budget
    from test_vta_isa import _random_fields

    monkeypatch.setenv("QACCEL_STEP_LIMIT", str(budget.PYTHON_DEFAULT_STEP_LIMIT))

    rng = np.random.default_rng(11)
    fields = _random_fields(rng, 2000)
    words = encode(fields)
    uops = encode_uops(rng.integers(0, 64, 64), rng.integers(0, 64, 64), rng.integers(0, 16, 64))
    dram = rng.integers(0, 256, 1 << 16).astype(np.uint8)
    fin = Program()
    fin.finish()
    for n in range(200):
        k = int(rng.integers(0, 6))
        body = words[rng.integers(0, len(words), k)]
        if rng.random() < 0.8:
            body = np.concatenate([body, fin.words])
        _compare(Program(DEFAULT_CONFIG, body, uops), None, dram, DEFAULT_CONFIG, f"encoding {n}")
    _compare(Program(), None, dram, DEFAULT_CONFIG, "empty")


def test_random_emitted_layers():
    """The emitter's random layers (convolutions, depthwise, dense) on both bundled configs."""
    from qaccel.lowering.vta.emit import emit
    from qaccel.lowering.vta.search import schedule
    from test_vta_codegen import random_layer

    rng = np.random.default_rng(31)
    done = 0
    while done < 16:
        layer = random_layer(rng)
        if layer is None:
            continue
        config = (DEFAULT_CONFIG, STORE_RQ)[done % 2]
        prog = emit(layer, schedule(layer, config, refine=0), config)
        x = rng.integers(-128, 128, layer.input_shape).astype(np.int8)
        assert _compare(prog.program, prog.program.uops, prog.dram_image(x), config) == "ran"
        done += 1


def test_random_batched_layers():
    """The emitter's random convolutions and depthwise convolutions with a batch of 2 or 3
    images (an outer loop over them) on both bundled configs."""
    from dataclasses import replace

    from qaccel.lowering.vta.emit import emit
    from qaccel.lowering.vta.search import schedule
    from test_vta_codegen import random_layer

    rng = np.random.default_rng(47)
    done = 0
    while done < 6:
        layer = random_layer(rng)
        if layer is None or layer.kind == "dense":
            continue
        layer = replace(layer, input_shape=(int(rng.integers(2, 4)), *layer.input_shape[1:]))
        config = (DEFAULT_CONFIG, STORE_RQ)[done % 2]
        prog = emit(layer, schedule(layer, config, refine=0), config)
        x = rng.integers(-128, 128, layer.input_shape).astype(np.int8)
        assert _compare(prog.program, prog.program.uops, prog.dram_image(x), config) == "ran"
        done += 1


@pytest.mark.parametrize("config", [DEFAULT_CONFIG, STORE_RQ], ids=lambda c: c.name)
def test_tokens_dense_layers(config):
    """FULLY_CONNECTED over tokens (a 1x1 convolution storing int32 accumulators): both
    simulators and both timing models agree, bit for bit and cycle for cycle."""
    from qaccel.lowering.vta.emit import emit
    from qaccel.lowering.vta.search import schedule
    from test_vta_codegen import tokens_layer

    rng = np.random.default_rng(41)
    for tokens, c, o in ((16, 32, 32), (5, 48, 20), (33, 16, 64)):
        layer = tokens_layer(tokens, c, o, rng=rng)
        prog = emit(layer, schedule(layer, config, refine=0), config)
        x = rng.integers(-128, 128, layer.input_shape).astype(np.int8)
        assert _compare(prog.program, prog.program.uops, prog.dram_image(x), config) == "ran"


# --------------------------------------------------------------------------------------------
# Fixture models
# --------------------------------------------------------------------------------------------

FIXTURES = sorted(p.stem for p in (Path(__file__).parent / "fixtures" / "models").glob("*.tflite"))


@pytest.mark.parametrize("hw", ["vta-default", "vta-store-requant"])
@pytest.mark.parametrize("name", FIXTURES)
def test_fixture_model_layers(name, hw):
    """Every layer of the compiled model, in order, on a DRAM image the previous layers (and
    random host inputs) produced."""
    from conftest import vta_lowered

    module, _ = vta_lowered(name, hw)
    _check_model_layers(name, module, hw)


@pytest.mark.parametrize("hw", ["vta-default", "vta-store-requant"])
def test_batched_model_layers(hw):
    """The corpus' batch-2 model: convolutions (its depthwise one of 16 channels runs as a
    one-block convolution) and a max pool each an outer loop over the two images, a dense
    layer over both rows."""
    from qaccel.frontend.tflite_import import import_tflite
    from qaccel.pipeline.manager import build_pipeline, qaccel_context

    path = Path(__file__).parent / "fixtures" / "corpus" / "batch2.tflite"
    module = import_tflite(path.read_bytes(), str(path))
    build_pipeline(f"vta-pipeline{{config={hw}}}").apply(qaccel_context(), module)
    kinds = _check_model_layers("batch2", module, hw)
    assert kinds >= {"conv", "pool", "dense"}, kinds


def _check_model_layers(name: str, module, hw: str) -> set[str]:
    """C machine against the Python simulator on every layer of `module` compiled; the kinds
    of layer seen."""
    from qaccel.backends.vta.codegen import compile_module

    config = HardwareConfig.from_json(hw)
    compiled = compile_module(module, config)
    rng = np.random.default_rng(5)
    kinds = set()
    layers = 0
    for fn in compiled.functions.values():
        image = fn.image.copy()
        for slot in fn.slots:
            if slot.host_writes:
                image[slot.offset : slot.offset + slot.nbytes] = rng.integers(0, 256, slot.nbytes)
        for lay in fn.layers:
            assert _compare(lay.words, lay.uops, image, config, f"{name} layer {lay.index}") == "ran"
            image = simulate(lay.words, lay.uops, image, config, simulator="c").dram
            layers += 1
            kinds.add(lay.report["kind"])
    assert layers >= 1
    return kinds


# --------------------------------------------------------------------------------------------
# Build, fallback, sanitizers
# --------------------------------------------------------------------------------------------


def test_python_fallback_when_the_library_is_missing(tmp_path):
    """Without the C machine qaccel runs the Python simulator, after one line on stderr."""
    code = textwrap.dedent(
        """
        from qaccel.targets.vta.asm import assemble
        from qaccel.targets.vta.simulator import simulate
        p = assemble("load.uop sram=0 dram=0 y=1 x=1\\ngemm.reset uop=0:1\\nfinish\\n.uop 0 0 0")
        print(simulate(p).timing.total_cycles, simulate(p).timing.total_cycles)
        """
    )
    from qaccel.targets.vta.asm import assemble

    p = assemble("load.uop sram=0 dram=0 y=1 x=1\ngemm.reset uop=0:1\nfinish\n.uop 0 0 0")
    cycles = str(simulate(p, simulator="python").timing.total_cycles)
    for env in ({"QACCEL_NO_CMACHINE": "1"},
                {"QACCEL_CMACHINE_LIB": str(tmp_path / "missing.so")}):  # fmt: skip
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**os.environ, **env}, check=True)  # fmt: skip
        assert out.stdout.split() == [cycles, cycles]
        lines = out.stderr.strip().splitlines()
        assert len(lines) == 1 and "using the Python simulator" in lines[0], out.stderr


def test_simulator_option_of_the_tools(tmp_path, capsys):
    """qaccel-sim and qaccel-run take --simulator c|python; both give the same results."""
    from qaccel.tools import qaccel_compile, qaccel_run, qaccel_sim

    prog = tmp_path / "p.s"
    prog.write_text("load.uop sram=0 dram=0 y=1 x=2\ngemm.reset uop=0:2 iter=2,1 dst=2,0\n"
                    "alu.add uop=0:2 imm=5 push_next\nstore.acc sram=0 dram=0 y=1 x=4 pop_prev "
                    "push_prev\nfinish pop_next\n.uop 0 0 0\n.uop 1 0 0\n.dram 256\n")  # fmt: skip
    outs = []
    for sim in ("c", "python"):
        assert qaccel_sim.main([str(prog), "--trace", "--dump", "0:4:i32", "--simulator", sim]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1] and "dram[0:16] i32: 5 5 5 5" in outs[0]
    art = tmp_path / "art"
    with pytest.raises(SystemExit):
        qaccel_compile.main([str(Path(__file__).parent / "fixtures" / "models" / "cnn.tflite"),
                             "-o", str(art)])  # fmt: skip
    for sim in ("c", "python"):
        with pytest.raises(SystemExit) as e:
            qaccel_run.main([str(art), "--random-inputs", "2", "--outputs-dir",
                             str(tmp_path / sim), "--simulator", sim])  # fmt: skip
        assert e.value.code == 0
    np.testing.assert_array_equal(np.load(tmp_path / "c" / "output_0.npy"),
                                  np.load(tmp_path / "python" / "output_0.npy"))  # fmt: skip


def test_stale_or_foreign_library_is_not_used(monkeypatch):
    """The loader compiles the current sources when the in-place build has another hash."""
    lib = Path(cmachine.library()._name)  # built from the current sources: its stamp matched
    monkeypatch.setattr(cmachine, "source_hash", lambda: "0" * 16)
    with pytest.raises(OSError, match="other sources"):
        cmachine._open(lib, check_hash=True)


def test_decode_matches_the_isa_module():
    """The C field table decodes exactly as isa.decode, for every configuration."""
    import ctypes

    from test_vta_isa import _random_fields

    lib = cmachine.library()
    lib.vta_field_name.restype = ctypes.c_char_p
    assert [lib.vta_field_name(k).decode() for k in range(lib.vta_field_count())] == list(
        FIELD_NAMES
    )
    rng = np.random.default_rng(3)
    for config in CONFIGS:
        words = rng.integers(0, 2**63, (500, 2), dtype=np.uint64) * np.uint64(2)
        words ^= rng.integers(0, 2, (500, 2), dtype=np.uint64)
        if config is DEFAULT_CONFIG:
            words = np.concatenate([words, encode(_random_fields(rng, 300))])
        words = np.ascontiguousarray(words)
        out = np.zeros((len(words), len(FIELD_NAMES)), np.int64)
        cfg = cmachine._config_struct(config)
        assert lib.vta_decode(ctypes.byref(cfg), ctypes.c_void_p(words.ctypes.data),
                              ctypes.c_int64(len(words)), ctypes.c_void_p(out.ctypes.data)) == 0
        ref = decode(words, config)
        for k, name in enumerate(FIELD_NAMES):
            assert np.array_equal(out[:, k], ref[name]), (config.name, name)


def _libasan():
    out = subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True)
    path = out.stdout.strip()
    return path if os.path.isabs(path) and os.path.exists(path) else None


@pytest.mark.skipif(shutil.which("gcc") is None or _libasan() is None,
                    reason="needs gcc with AddressSanitizer")  # fmt: skip
def test_sanitizers(tmp_path):
    """The library built with -fsanitize=address,undefined runs a cross-check subset cleanly:
    any ASan/UBSan report aborts the subprocess."""
    from qaccel.targets import cbuild
    from sanitized_build import cached

    flags = ("-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror")  # fmt: skip
    cached(tmp_path / cmachine.LIB_NAME,
           lambda out: cmachine.build_library(out.parent, cc="gcc", extra_flags=flags),
           label="cmachine", flags=flags,
           inputs=[cmachine.MACHINE_DIR, Path(cmachine.__file__), Path(cbuild.__file__)])
    code = textwrap.dedent(
        """
        import numpy as np, sys
        sys.path.insert(0, %r)
        import test_vta_cmachine as t
        from qaccel.targets.vta import cmachine
        assert cmachine.available(), cmachine.unavailable_reason()
        for config in t.CONFIGS:
            rng = np.random.default_rng(99)
            for n in range(24):
                p, dram = t.random_program(rng, config)
                if n %% 2:
                    p = t.mutate(rng, p, config)
                t._compare(p, None, dram, config, f"asan {config.name} {n}")
        import test_vta_fast_kernels as k  # the fast path's grouped and hoisted kernels
        rng = np.random.default_rng(98)
        for kernel in ("c", "avx2"):
            cmachine.kernel = kernel
            for shape in ("pointwise", "depthwise", "random"):
                for n in range(6):
                    p, dram = k.gemm_program(rng, k.DEFAULT_CONFIG, shape)
                    t._compare(p, None, dram, k.DEFAULT_CONFIG, f"asan {kernel} {shape} {n}")
            for n in range(12):
                p, dram = k.requant_program(rng, k.DEFAULT_CONFIG)
                t._compare(p, None, dram, k.DEFAULT_CONFIG, f"asan {kernel} requant {n}")
        print("outcomes", dict(t.OUTCOMES))
        """
        % str(Path(__file__).parent)
    )
    env = {**os.environ, "QACCEL_CMACHINE_LIB": str(tmp_path / cmachine.LIB_NAME),
           "LD_PRELOAD": _libasan(), "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}  # fmt: skip
    env.pop("QACCEL_NO_CMACHINE", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    assert "runtime error" not in out.stderr and "AddressSanitizer" not in out.stderr
    assert "'ran'" in out.stdout


def test_outcome_summary():
    """Every kind of outcome occurred (the generators reach the error paths)."""
    print("\ncross-check outcomes:", dict(OUTCOMES))
    if OUTCOMES["ran"] == 0:
        pytest.skip("run with the other tests of this module")
    assert OUTCOMES["same error"] > 0
    assert OUTCOMES["fast: ran"] > 0 and OUTCOMES["fast: same error"] > 0


def test_without_the_library_the_c_simulator_says_why():
    """Asked for the C simulator when no library loads, `simulate` and `Scratch` raise one
    RuntimeError naming the reason (the loader's), not a NameError."""
    code = textwrap.dedent(
        """
        from qaccel.targets.vta import cmachine
        from qaccel.targets.vta.asm import assemble
        from qaccel.targets.vta.config import DEFAULT_CONFIG
        p = assemble("finish\\n")
        for call in (lambda: cmachine.simulate(p), lambda: cmachine.Scratch(DEFAULT_CONFIG)):
            try:
                call()
            except RuntimeError as e:
                print(e)
        """
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ, "QACCEL_NO_CMACHINE": "1"}, check=True)  # fmt: skip
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 2 and all("the C simulator is unavailable: " in x for x in lines), out
    assert "QACCEL_NO_CMACHINE" in lines[0]
