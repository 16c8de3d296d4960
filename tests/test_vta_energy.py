"""The analytic energy model (targets/vta/energy.py): exact counts of a hand-written program,
the per-operation constants of the hardware configuration, and a compiled model's report whose
per-layer energies add up to its totals."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
from qaccel.backends.vta.report import ENERGY_TOTAL_KEYS, format_report
from qaccel.targets.vta.config import ENERGY_KEYS, ConfigError, HardwareConfig
from qaccel.targets.vta.energy import (
    ENERGY_COMPONENTS,
    OUTPUT_STAGE_MULS,
    OUTPUT_STAGE_OPS,
    access_counts,
    access_counts_reference,
    program_energy,
)
from qaccel.targets.vta.isa import PARAM_ROWS, AluOp, MemType, Program, encode_uops
from qaccel.targets.vta.simulator import timing

SMALL_CNN = Path(__file__).parent / "fixtures" / "models" / "small_cnn.tflite"


def _program(config: HardwareConfig) -> Program:
    p = Program(config)
    p.uops = encode_uops(np.arange(4), np.arange(4), 0)
    p.load(MemType.UOP, 0, 0, 1, 4)
    p.load(MemType.INP, 0, 0, 2, 3, y_pad=(1, 0), x_pad=(0, 1))  # 6 rows, 3x4 = 12 filled
    p.load(MemType.WGT, 0, 0, 1, 1, push_next=True)
    p.gemm(0, 4, reset=True)  # 4 iterations, no MACs
    p.gemm(0, 4, iter_out=2, pop_prev=True)  # 8 iterations
    p.alu(AluOp.ADD, 0, 4, imm=1)  # 4 iterations, immediate
    p.alu(AluOp.MAX, 0, 4, src_factor=(0, 0))  # 4 iterations with a source row
    p.alu(AluOp.RDMUL, 0, 2, imm=3, push_next=True)  # 2 multiplier iterations
    p.store(MemType.OUT, 0, 0, 1, 4, pop_prev=True, push_prev=True)
    p.finish(pop_next=True)
    return p


def test_counts_of_a_hand_written_program_are_exact():
    c = HardwareConfig()
    p = _program(c)
    counts = access_counts(p, c, timing(p, c))  # also checked against the timing model
    inp, wgt, acc, uop = 16, 256, 64, 4
    assert counts.gemm_iterations == 8 and counts.alu_iterations == 10
    assert counts.macs == 8 * 256
    assert counts.alu_ops == 8 * 16 and counts.alu_muls == 2 * 16
    assert counts.dram_read_bytes == 4 * uop + 6 * inp + wgt
    assert counts.dram_write_bytes == 4 * 16
    assert counts.sram_write_bytes == (
        4 * uop + 12 * inp + wgt  # LOADs, padding included
        + (4 + 8) * acc  # GEMM reset and accumulate
        + 10 * acc  # ALU destination rows
    )
    assert counts.sram_read_bytes == (
        8 * (inp + wgt + acc + uop) + 4 * uop  # GEMM
        + 10 * (acc + uop) + 4 * acc  # ALU: destination and micro-op, the one source row
        + 4 * acc  # STORE
    )
    e = program_energy(counts, c)
    assert e.mac_pj == pytest.approx(8 * 256 * 0.3)
    assert e.alu_pj == pytest.approx(8 * 16 * 0.1 + 2 * 16 * 3.1)
    assert e.dram_pj == pytest.approx((counts.dram_read_bytes + counts.dram_write_bytes) * 160)
    assert e.sram_pj == pytest.approx((counts.sram_read_bytes + counts.sram_write_bytes) * 1.25)
    report = e.as_report()
    assert report["energy_pj"] == pytest.approx(sum(report[f"energy_{k}_pj"]
                                                    for k in ENERGY_COMPONENTS))  # fmt: skip


def test_store_output_stage_counts_its_lanes_and_each_parameter_block_once():
    c = HardwareConfig(store_requant=True)
    p = Program(c)
    # 3 stored rows of block 0 (param_x = 0), then 2 rows of two blocks each (param_x = 1)
    p.store(MemType.OUTQ, 0, 0, 1, 3, param_row=8, param_step=(0, 0))
    p.store(MemType.OUTQ, 0, 0, 1, 2, param_row=8, param_step=(0, 1))
    p.finish()
    counts = access_counts(p, c)
    lanes = 5 * 16
    assert counts.alu_ops == lanes * OUTPUT_STAGE_OPS
    assert counts.alu_muls == lanes * OUTPUT_STAGE_MULS
    assert counts.sram_read_bytes == 5 * 64 + (1 + 2) * PARAM_ROWS * 64
    assert counts.dram_write_bytes == 5 * 16


def test_energy_constants_are_configuration_keys_with_defaults_and_ranges(tmp_path):
    c = HardwareConfig()
    assert {k: getattr(c, k) for k in ENERGY_KEYS} == {
        "energy_mac_pj": 0.3, "energy_alu_op_pj": 0.1, "energy_alu_mul_pj": 3.1,
        "energy_sram_read_pj_per_byte": 1.25, "energy_sram_write_pj_per_byte": 1.25,
        "energy_dram_pj_per_byte": 160.0,
    }  # fmt: skip
    for name in ("vta-default", "vta-store-requant"):  # bundled files need no energy keys
        assert HardwareConfig.from_json(name).energy_dram_pj_per_byte == 160.0
    assert HardwareConfig.from_dict(c.to_dict()) == c
    assert HardwareConfig(energy_mac_pj=0).energy_mac_pj == 0
    for bad in (-0.1, math.nan, math.inf, True, "1", 2e6):
        with pytest.raises(ConfigError, match="energy_dram_pj_per_byte must be a number"):
            HardwareConfig(energy_dram_pj_per_byte=bad)
    path = tmp_path / "hw.json"
    path.write_text('{"energy_dram_pj_per_byte": 320}')
    assert HardwareConfig.from_json(path).energy_dram_pj_per_byte == 320


@pytest.fixture(scope="module")
def compiled_small_cnn():
    from qaccel import api

    return {name: api.compile(str(SMALL_CNN), config=name)
            for name in ("vta-default", "vta-store-requant")}  # fmt: skip


def test_report_energy_adds_up_per_layer_and_in_total(compiled_small_cnn):
    for compiled in compiled_small_cnn.values():
        report, c = compiled.report, compiled.config
        rows = report["layers"]
        assert rows
        for row in rows:
            assert row["energy_pj"] > 0
            parts = sum(row[f"energy_{k}_pj"] for k in ENERGY_COMPONENTS)
            assert row["energy_pj"] == pytest.approx(parts, rel=1e-12)
            assert row["energy_dram_pj"] == pytest.approx(
                (row["dram_read_bytes"] + row["dram_write_bytes"]) * c.energy_dram_pj_per_byte)
        totals = report["totals"]
        for key in ENERGY_TOTAL_KEYS:
            assert totals[key] == pytest.approx(sum(r[key] for r in rows), rel=1e-12)
        assert totals["energy_dram_pj"] == pytest.approx(totals["dram_bytes"] * 160.0)
        # the counts are the timing model's: the check inside access_counts must pass
        for layers in compiled.layers.values():
            for lay in layers:
                access_counts(lay.program.program, c, timing(lay.program.program, c))
        assert "energy: " in format_report(report) and " uJ per inference" in format_report(report)


def test_energy_follows_the_constants_and_the_output_stage(compiled_small_cnn):
    base = compiled_small_cnn["vta-default"]
    layer = base.layers["vta_fn_0"][0].program.program
    c = base.config
    one = program_energy(access_counts(layer, c), c)
    twice = program_energy(access_counts(layer, c), replace(c, energy_dram_pj_per_byte=320.0))
    assert twice.dram_pj == pytest.approx(2 * one.dram_pj)
    assert (twice.mac_pj, twice.alu_pj, twice.sram_pj) == (one.mac_pj, one.alu_pj, one.sram_pj)
    # the requantization tail in the store module's output stage walks the accumulator rows
    # once instead of once per ALU step: less SRAM traffic per inference
    rq = compiled_small_cnn["vta-store-requant"].report["totals"]
    assert rq["energy_sram_pj"] < base.report["totals"]["energy_sram_pj"]


def test_one_utilization_definition_labelled_everywhere(compiled_small_cnn):
    """MACs / (cycles x MACs per cycle), saying which MACs: qaccel-sim's figure is the
    report's executed utilization, the report's headline counts useful MACs."""
    compiled = compiled_small_cnn["vta-default"]
    c = compiled.config
    for lay in compiled.layers["vta_fn_0"]:
        t = timing(lay.program.program, c)
        assert lay.report["executed_macs"] == t.gemm_macs
        assert lay.report["executed_utilization"] == pytest.approx(t.gemm_utilization)
        assert lay.report["executed_macs"] >= lay.report.get("padded_macs", 0)
    assert "of executed MACs (every MAC the GEMM core performs" in t.format()
    text = format_report(compiled.report)
    totals = compiled.report["totals"]
    assert (f"GEMM utilization {totals['gemm_utilization']:.1%} of useful MACs "
            f"({totals['executed_utilization']:.1%} of executed MACs)") in text
    assert "util = GEMM utilization of useful MACs" in text


def test_grouped_counts_equal_the_reference_on_layers_and_arbitrary_words(compiled_small_cnn):
    """`access_counts` sums per class key; `access_counts_reference` mask by mask: the same
    counts on every compiled layer (the emitter's known fields, and decoded from the words)
    and on random words (any opcode, memory type and field value decode can give)."""
    for compiled in compiled_small_cnn.values():
        c = compiled.config
        for layers in compiled.layers.values():
            for lay in layers:
                program = lay.program.program
                assert access_counts(program, c) == access_counts_reference(program, c)
                words = program.words.copy()
                assert access_counts(words, c) == access_counts_reference(words, c)
    rng = np.random.default_rng(25)
    c = HardwareConfig()
    for n in (0, 1, 7, 64, 300):
        words = rng.integers(0, 2**63, size=(n, 2), dtype=np.uint64) * np.uint64(2)
        words[: n // 2, 0] |= np.uint64(1)
        assert access_counts(words, c) == access_counts_reference(words, c)
