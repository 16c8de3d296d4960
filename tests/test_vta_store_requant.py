"""The `store_requant` extension: STORE OUTQ's output stage and STORE ... clear (ISA, assembler,
simulator, hazards), and the scheduler/emitter's bias mode "store" that moves the
requantization tail off the compute module, bit-exact with the reference."""

import re
from pathlib import Path

import numpy as np
import pytest
from qaccel.targets.vta.alu import multiply_by_quantized_multiplier
from qaccel.targets.vta.asm import assemble, disassemble
from qaccel.targets.vta.config import DEFAULT_CONFIG, ConfigError, HardwareConfig
from qaccel.lowering.vta.emit import emit
from qaccel.lowering.vta.emit_alu import emit_alu
from qaccel.targets.vta.isa import PARAM_ROWS, MemType, Opcode, Program, decode, validate
from qaccel.targets.vta.simulator import SimulationError, simulate, timing
from qaccel.lowering.vta.layers import AluLayer, AluStep, PoolLayer, output_stage
from qaccel.lowering.vta.cost_model import alu_bound_cycles, estimate
from qaccel.lowering.vta.geometry import LayerError
from qaccel.lowering.vta.search import candidates, make_schedule, schedule
from test_vta_codegen import check, conv_layer, dense_layer, random_layer
from test_vta_eltwise import run_layer, run_two_inputs

CONFIG_PATH = Path(__file__).parents[1] / "targets/vta/vta_store_requant.json"
RQ = HardwareConfig.from_json(CONFIG_PATH)


def test_bundled_config_is_the_default_plus_the_extension():
    assert RQ.store_requant and not DEFAULT_CONFIG.store_requant
    default = RQ.to_dict() | {"name": "vta-default", "store_requant": False}
    assert default == DEFAULT_CONFIG.to_dict()
    with pytest.raises(ConfigError, match="store_requant must be true or false"):
        HardwareConfig(store_requant=1)
    assert HardwareConfig.from_json("vta-store-requant") == RQ
    with pytest.raises(ConfigError, match="bundled: vta-default, vta-store-requant"):
        HardwareConfig.from_json("vta-fast")


def test_store_fields_layout():
    p = Program(RQ)
    p.store(MemType.OUTQ, sram=5, dram=7, y_size=2, x_size=3, x_stride=9, clear=True,
            param_row=0x7FF, param_step=(1, 1))  # fmt: skip
    v = int(p.words[0, 0]) | int(p.words[0, 1]) << 64
    assert (v >> 7) & 7 == MemType.OUTQ and (v >> 58) & 1 == 1
    assert (v >> 112) & 0x7FF == 0x7FF and (v >> 123) & 1 == 1 and (v >> 124) & 1 == 1
    row = decode(p.words, RQ)[0]
    assert (row["clear"], row["param_row"], row["param_y"], row["param_x"]) == (1, 0x7FF, 1, 1)
    assert validate(Program(RQ, p.words).words, RQ) == [(0, "the program must end with FINISH")]


@pytest.mark.parametrize(
    "config, build, message",
    [
        (DEFAULT_CONFIG, lambda p: p.append_words(Opcode.STORE | MemType.OUTQ << 7, 0),
         "STORE: illegal memory type OUTQ"),
        (DEFAULT_CONFIG, lambda p: p.append_words(Opcode.STORE | 1 << 58, 0), "reserved bits"),
        (DEFAULT_CONFIG, lambda p: p.append_words(Opcode.STORE, 1 << 50), "reserved bits"),
        (RQ, lambda p: p.store(MemType.OUT, 0, 0, 1, 1, param_row=4),
         "parameter rows are only defined for STORE OUTQ"),
        (RQ, lambda p: p.append_words(Opcode.LOAD | MemType.OUTQ << 7, 0),
         "LOAD: illegal memory type OUTQ"),
    ],
)  # fmt: skip
def test_malformed_store_encodings(config, build, message):
    p = Program(config)
    build(p)
    p.finish()
    assert any(re.search(message, m) for _, m in validate(p, config)), validate(p, config)


def test_assembler_round_trip_and_refusal_without_the_extension():
    text = ("store.outq sram=3 dram=4 y=2 x=1 stride=8 pstep=1,0 param=12 clear\n"
            "store.out  sram=0 dram=0 y=1 x=1 stride=1 clear\nfinish\n")  # fmt: skip
    p = assemble(text, RQ)
    assert np.array_equal(assemble(disassemble(p), RQ).words, p.words)
    assert "param=12 clear" in disassemble(p)
    with pytest.raises(ValueError, match="STORE has no field"):
        assemble(text, DEFAULT_CONFIG)


def _output_stage_program(n_rows, blocks, step, param_step=(0, 0), reuse=False):
    """LOAD ACC data rows and parameter blocks, STORE OUTQ ... clear them; with `reuse`, a
    later GEMM reset rewrites the cleared rows (tokens as the emitter makes them)."""
    p = Program(RQ)
    p.load(MemType.ACC, 0, 0, 1, n_rows + blocks * PARAM_ROWS, push_next=True)
    p.store(MemType.OUTQ, 0, 64, *step, clear=True, param_row=n_rows, param_step=param_step,
            pop_prev=True, push_prev=True)  # fmt: skip
    if reuse:
        p.uops = np.zeros(1, np.uint32)
        p.load(MemType.UOP, 0, 0, 1, 1)
        p.gemm(0, 1, reset=True, pop_next=True)
    p.finish(pop_next=not reuse)
    return p


@pytest.mark.parametrize(
    "step, param_step", [((1, 6), (0, 0)), ((3, 2), (1, 0)), ((2, 3), (0, 1))]
)
def test_output_stage_is_tflite_requantization(step, param_step):
    rng = np.random.default_rng(sum(step))
    n = step[0] * step[1]
    y, x = np.indices(step)
    b = (y * param_step[0] + x * param_step[1]).reshape(-1)  # each row's parameter block
    blocks = int(b.max()) + 1
    acc = rng.integers(-(2**31), 2**31, (n, 16), dtype=np.int64).astype(np.int32)
    acc[0, :4] = [2**31 - 1, -(2**31), 0, -1]
    params = np.zeros((blocks, PARAM_ROWS, 16), np.int64)
    params[:, 0] = rng.integers(-(2**31), 2**31, (blocks, 16))  # the bias add wraps
    params[:, 1] = rng.integers(0, 2**31, (blocks, 16))
    params[:, 1, 0] = 2**31 - 1
    params[:, 2] = rng.integers(-31, 32, (blocks, 16))
    params[:, 3, :3] = [(int(rng.integers(-128, 128)), -100, 90) for _ in range(blocks)]
    image = np.zeros(64 * 64 + n * 16, np.uint8)
    data = np.concatenate([acc, params.reshape(-1, 16).astype(np.int32)])
    image[: data.nbytes] = data.view(np.uint8).reshape(-1)
    program = _output_stage_program(n, blocks, step, param_step)
    result = simulate(program, dram=image, config=RQ)
    got = result.dram[64 * 16 : 64 * 16 + n * 16].view(np.int8).reshape(step + (16,))
    wide = acc.astype(np.int64) + params[b, 0]
    wide = ((wide + 2**31) % 2**32 - 2**31).astype(np.int32)
    q = multiply_by_quantized_multiplier(wide, params[b, 1], params[b, 2]).astype(np.int64)
    want = np.clip(q + params[b, 3, :1], params[b, 3, 1:2], params[b, 3, 2:3])
    np.testing.assert_array_equal(got.reshape(n, 16), want)
    assert not result.sram["acc"][:n].any()  # cleared


def test_cleared_rows_are_guarded_by_tokens():
    n, blocks = 2, 1
    image = np.zeros(64 * 64 + 64, np.uint8)
    image[n * 64 + 64 : n * 64 + 64 + 64] = np.full(16, 1 << 30, np.int32).view(np.uint8)
    simulate(_output_stage_program(n, blocks, (1, n), reuse=True), dram=image, config=RQ)
    p = Program(RQ)
    p.load(MemType.ACC, 0, 0, 1, n + PARAM_ROWS, push_next=True)
    p.store(MemType.OUTQ, 0, 64, 1, n, clear=True, param_row=n, pop_prev=True)
    p.uops = np.zeros(1, np.uint32)
    p.load(MemType.UOP, 0, 0, 1, 1)
    p.gemm(0, 1, reset=True)  # no store->compute token: may run before the store clears
    p.finish()
    with pytest.raises(SimulationError, match="overwrites ACC row 0 touched by store"):
        simulate(p, dram=image, config=RQ)


def test_output_stage_errors_name_the_instruction():
    p = Program(RQ)
    p.load(MemType.ACC, 0, 0, 1, 1, push_next=True)
    p.store(MemType.OUTQ, 0, 64, 1, 1, param_row=2046, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)
    with pytest.raises(SimulationError, match="parameter rows up to 2049 exceed the ACC depth"):
        simulate(p, dram=np.zeros(64 * 80, np.uint8), config=RQ)
    image = np.zeros(64 * 80, np.uint8)
    image[64 * 3 : 64 * 4] = np.full(16, 40, np.int32).view(np.uint8)  # shift 40
    p = Program(RQ)
    p.load(MemType.ACC, 0, 0, 1, 5, push_next=True)
    p.store(MemType.OUTQ, 0, 64, 1, 1, param_row=1, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)
    with pytest.raises(SimulationError, match="output stage: SHR shift amount -40"):
        simulate(p, dram=image, config=RQ)


# --------------------------------------------------------------------------------------------
# Bias mode "store"


@pytest.mark.parametrize(
    "kw",
    [{}, {"per_channel": False}, {"zp_out": 0, "bias": False}, {"shift_range": (-3, 3)},
     {"H": 1, "W": 1, "k": 1, "pad": (0, 0, 0, 0)}, {"kind": "depthwise", "mult": 2},
     {"act": (-20, 60), "zp_out": -128}],
)  # fmt: skip
def test_store_mode_layers_are_bit_exact_and_faster(kw):
    layer = conv_layer(**kw)
    prog = check(layer, config=RQ)
    assert prog.schedule.bias_mode == "store"
    f = decode(prog.program.words, RQ)
    assert not np.any(f["opcode"] == Opcode.ALU)  # the whole tail is in the output stage
    stores = f[f["opcode"] == Opcode.STORE]
    assert np.all(stores["memory_type"] == MemType.OUTQ) and np.all(stores["clear"] == 1)
    base = emit(layer, schedule(layer), DEFAULT_CONFIG)
    assert timing(prog.program, RQ).total_cycles < timing(base.program).total_cycles


def test_store_mode_random_layers_and_tilings():
    """Random layers, random legal candidates (every bias mode the config allows)."""
    rng = np.random.default_rng(77)
    small = HardwareConfig(name="small-rq", log_uop_buff_size=10, log_inp_buff_size=12,
                           log_wgt_buff_size=15, log_acc_buff_size=13,
                           store_requant=True)  # fmt: skip
    checked = 0
    while checked < 40:
        layer = random_layer(rng)
        if layer is None:
            continue
        config = small if rng.integers(2) else RQ
        cands = candidates(layer.geometry, config)
        assert layer.geometry.int32_output or any(c.bias_mode == "store" for c in cands)
        for i in rng.choice(len(cands), min(2, len(cands)), replace=False):
            check(layer, cands[i], config)
            checked += 1


def test_store_mode_needs_the_extension_and_an_int8_output():
    layer = conv_layer()
    with pytest.raises(LayerError, match="store_requant"):
        make_schedule(layer, DEFAULT_CONFIG, tile_h=8, tile_w=8, tile_co=3, bias_mode="store")
    assert all(c.bias_mode != "store" for c in candidates(layer.geometry, DEFAULT_CONFIG))
    dense = dense_layer()  # LiteRT's double-precision requantization: int32 out, host finishes
    assert schedule(dense, RQ).bias_mode != "store"
    check(dense, config=RQ)


def test_store_mode_estimate_and_bound():
    layer = conv_layer(H=14, W=14, C=64, O=96, k=1, pad=(0, 0, 0, 0))
    sched = schedule(layer, RQ)
    simulated = timing(emit(layer, sched, RQ).program, RQ).total_cycles
    assert abs(estimate(sched, RQ).cycles - simulated) <= 0.05 * simulated
    g = layer.geometry
    gemm = g.macs // 256
    assert alu_bound_cycles(g, RQ) == max(gemm, alu_bound_cycles(g, RQ))
    assert alu_bound_cycles(g, DEFAULT_CONFIG) > 3 * alu_bound_cycles(g, RQ)


# --------------------------------------------------------------------------------------------
# Element-wise layers and pools: the requantization at the end of their steps


def _tail(*ops):
    return [AluStep(op, 0, kind, v) for op, kind, v in ops]


ADD_TAIL = [("SHR", "imm", -20), ("RDMUL", "param", 0), ("RSHR", "imm", 7),
            ("MAX", "imm", -128 - 3), ("MIN", "imm", 127 - 3), ("ADD", "imm", 3)]  # fmt: skip


def test_output_stage_takes_the_requantization_suffix():
    params = np.full((1, 16), 1 << 30, np.int32)
    steps = [AluStep("ADD", 0, "temp", 1)] + _tail(*ADD_TAIL)
    cut, rows = output_stage(steps, 0, params)
    assert cut == 2  # the left shift stays on the ALU: one shift field, and RSHR needs it
    assert rows[1, 0] == 1 << 30 and rows[2, 0] == -7 and list(rows[3, :3]) == [3, -128, 127]
    left_only = _tail(("SHR", "imm", -2), ("RDMUL", "param", 0), ("MIN", "imm", 9))
    cut, rows = output_stage(left_only, 0, params)
    assert cut == 0 and rows[2, 0] == 2 and list(rows[3, :3]) == [0, -(2**31), 9]
    # No multiplier; an add before the clamp that could wrap (no rounding shift); the wrong
    # temp; a per-block operand; a clamp after the zero point without both bounds.
    for steps in (_tail(("MIN", "imm", 1)),
                  _tail(("RDMUL", "param", 0), ("ADD", "imm", 5), ("MIN", "imm", 9)),
                  [AluStep("RDMUL", 1, "param", 0)],
                  [AluStep("RDMUL", 0, "param", 0, True)],
                  _tail(("RDMUL", "param", 0), ("RSHR", "imm", 3), ("MIN", "imm", 9),
                        ("ADD", "imm", 3))):  # fmt: skip
        found = output_stage(steps, 0, params)
        assert found is None or found[0] == len(steps), steps


@pytest.mark.parametrize("seed", range(6))
def test_element_wise_layers_requantize_in_the_output_stage(seed):
    rng = np.random.default_rng(seed)
    blocks, rows = int(rng.integers(1, 4)), int(rng.choice([1, 300, 1100]))
    params = rng.integers(1 << 29, 1 << 31, (3, 16)).astype(np.int32)
    params[1] = int(rng.integers(-500, 500))  # a per-tensor zero point as a parameter row
    tail = ADD_TAIL[1:] if seed % 2 else [("RDMUL", "param", 2), ("RSHR", "imm", 1),
                                          ("ADD", "param", 1), ("MIN", "imm", 90),
                                          ("MAX", "imm", -100)]  # fmt: skip
    steps = [AluStep("SHR", 0, "imm", -8), AluStep("RDMUL", 0, "param", 0),
             AluStep("SHR", 1, "imm", -8), AluStep("ADD", 0, "temp", 1)] + _tail(*tail)  # fmt: skip
    layer = AluLayer("add", blocks, rows, 16, 2, steps, 0, params)
    xs = [rng.integers(-128, 128, (blocks, rows, 16)).astype(np.int8) for _ in range(2)]
    got = run_layer(layer, xs, RQ)
    np.testing.assert_array_equal(got, layer.reference(xs).reshape(-1))
    prog = emit_alu(layer, RQ, inputs_at=[0, 1 << 20], output_at=2 << 20, constants_at=3 << 20)
    assert prog.stage_steps == len(tail)
    f = decode(prog.program.words, RQ)
    assert set(f["memory_type"][f["opcode"] == Opcode.STORE]) == {MemType.OUTQ}
    assert timing(prog.program, RQ).total_cycles < timing(
        emit_alu(layer, inputs_at=[0, 1 << 20], output_at=2 << 20, constants_at=3 << 20).program
    ).total_cycles


def test_pools_requantize_in_the_output_stage():
    from qaccel.lowering.vta.emit_alu import emit_pool

    rng = np.random.default_rng(3)
    params = rng.integers(1 << 29, 1 << 31, (1, 16)).astype(np.int32)
    layer = PoolLayer("p", "ADD", 2, 14, 14, 7, 7, 2, 2, 2, 2, (0, 0, 0, 0), 0,
                      _tail(*ADD_TAIL[1:]), params)  # fmt: skip
    xs = [rng.integers(-128, 128, (2, 14, 14, 16)).astype(np.int8)] * 2
    got = run_two_inputs(emit_pool, layer, xs[:1] * 2, 2 * 49 * 16, RQ)
    np.testing.assert_array_equal(got, layer.reference(xs[0]).reshape(-1))
    seed_layer = AluLayer("pool", 3, 1, 16, 2, [AluStep("ADD", 0, "temp", 1)] + _tail(
        ("ADD", "imm", 64 * 49), *ADD_TAIL[1:]), 0, params, 49, reduce_at=1)  # fmt: skip
    ins = [rng.integers(-128, 128, (3, 49, 16)).astype(np.int8) for _ in range(2)]
    got = run_two_inputs(emit_alu, seed_layer, ins, 3 * 16, RQ)
    np.testing.assert_array_equal(got, seed_layer.reference(ins).reshape(-1))
