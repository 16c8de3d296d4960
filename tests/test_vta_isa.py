"""VTA-like ISA: bit layout, encode/decode round trips, validation, assembler/disassembler."""

import numpy as np
import pytest

from qaccel.targets.vta.asm import AsmError, assemble, disassemble
from qaccel.targets.vta.config import DEFAULT_CONFIG, ConfigError, HardwareConfig
from qaccel.targets.vta.isa import (
    FIELDS_DTYPE,
    AluOp,
    MemType,
    Opcode,
    Program,
    decode,
    decode_uops,
    encode,
    encode_uops,
    layout_of,
    validate,
)


def test_default_config_matches_vta():
    c = DEFAULT_CONFIG
    assert (c.depth("uop"), c.depth("inp"), c.depth("wgt"), c.depth("acc")) == (8192, 2048, 1024, 2048)
    assert (c.log_uop_depth, c.log_inp_depth, c.log_wgt_depth, c.log_acc_depth) == (13, 11, 10, 11)
    assert HardwareConfig.from_json(
        __import__("qaccel.targets.vta.config", fromlist=["x"]).DEFAULT_CONFIG_PATH
    ) == c


def test_config_rejects_unknown_keys_and_oversized_buffers(tmp_path):
    bad = tmp_path / "hw.json"
    bad.write_text('{"log_acc_buff_size": 17, "frequency": 3}')
    with pytest.raises(ConfigError, match="unknown key.*frequency"):
        HardwareConfig.from_json(bad)
    with pytest.raises(ConfigError, match="more than two 64-bit words"):
        HardwareConfig(log_acc_buff_size=20)


def _bits(program):
    w = program.words
    return int(w[0, 0]) | int(w[0, 1]) << 64


def test_memory_instruction_layout_is_vtas():
    p = Program()
    p.load(MemType.INP, sram=0x1234, dram=0xDEADBEEF, y_size=3, x_size=5, x_stride=7,
           y_pad=(1, 2), x_pad=(3, 4), pop_next=True, push_next=True)  # fmt: skip
    v = _bits(p)
    assert v & 7 == Opcode.LOAD
    assert (v >> 3) & 0xF == 0b1010  # pop_prev, pop_next, push_prev, push_next
    assert (v >> 7) & 7 == MemType.INP
    assert (v >> 10) & 0xFFFF == 0x1234
    assert (v >> 26) & 0xFFFFFFFF == 0xDEADBEEF
    assert (v >> 58) & 0x3F == 0  # padding to the 64-bit boundary, as the C bitfields
    assert [(v >> b) & 0xFFFF for b in (64, 80, 96)] == [3, 5, 7]
    assert [(v >> b) & 0xF for b in (112, 116, 120, 124)] == [1, 2, 3, 4]


def test_gemm_and_alu_layout_is_vtas():
    p = Program()
    p.gemm(5, 9, iter_out=3, iter_in=4, dst_factor=(1, 2), src_factor=(3, 4), wgt_factor=(5, 6),
           reset=True)  # fmt: skip
    v = _bits(p)
    assert v & 7 == Opcode.GEMM and (v >> 7) & 1 == 1
    assert (v >> 8) & 0x1FFF == 5 and (v >> 21) & 0x3FFF == 9
    assert (v >> 35) & 0x3FFF == 3 and (v >> 49) & 0x3FFF == 4
    fields = [(64, 11), (75, 11), (86, 11), (97, 11), (108, 10), (118, 10)]
    assert [(v >> b) & ((1 << w) - 1) for b, w in fields] == [1, 2, 3, 4, 5, 6]
    p = Program()
    p.alu(AluOp.RSHR, 0, 1, dst_factor=(7, 8), src_factor=(9, 10), imm=-2)
    v = _bits(p)
    assert [(v >> b) & 0x7FF for b in (64, 75, 86, 97)] == [7, 8, 9, 10]
    assert (v >> 108) & 7 == AluOp.RSHR and (v >> 111) & 1 == 1
    assert (v >> 112) & 0xFFFF == 0xFFFE


def test_uop_layout_and_round_trip():
    u = encode_uops([2047, 1], [5, 2047], [1023, 0])
    assert int(u[0]) == 2047 | 5 << 11 | 1023 << 22
    d, s, w = decode_uops(u)
    assert d.tolist() == [2047, 1] and s.tolist() == [5, 2047] and w.tolist() == [1023, 0]
    with pytest.raises(ValueError, match="wgt"):
        encode_uops(0, 0, 1024)


def _random_fields(rng, n):
    layout = layout_of(DEFAULT_CONFIG)
    f = np.zeros(n, FIELDS_DTYPE)
    ops = rng.choice([int(o) for o in Opcode], n)
    f["opcode"] = ops
    for i, op in enumerate(ops):
        for fld in layout.by_opcode[Opcode(op)][1:]:
            if fld.signed:
                f[fld.name][i] = rng.integers(-(1 << (fld.width - 1)), 1 << (fld.width - 1))
            else:
                f[fld.name][i] = rng.integers(0, 1 << fld.width)
    return f


def test_encode_decode_round_trip_random_fields():
    rng = np.random.default_rng(1)
    f = _random_fields(rng, 3000)
    words = encode(f)
    assert np.array_equal(decode(words), f)
    # and words -> fields -> words
    assert np.array_equal(encode(decode(words)), words)
    # the builder path agrees with the vectorized encoder
    p = Program()
    names = FIELDS_DTYPE.names
    for row in f[:200].tolist():
        values = dict(zip(names, row))
        op = values.pop("opcode")
        fmt = {x.name for x in layout_of(DEFAULT_CONFIG).by_opcode[Opcode(op)]}
        p.append(op, **{k: v for k, v in values.items() if k in fmt})
    assert np.array_equal(p.words, words[:200])


def test_encode_rejects_overflowing_fields():
    f = np.zeros(1, FIELDS_DTYPE)
    f["opcode"] = Opcode.GEMM
    f["uop_end"] = 1 << 14
    with pytest.raises(ValueError, match="uop_end"):
        encode(f)
    with pytest.raises(ValueError, match="imm=40000"):
        Program().alu(AluOp.ADD, 0, 1, imm=40000)
    with pytest.raises(ValueError, match="no field"):
        Program().gemm(0, 1, push_nxt=True)


def test_encode_names_the_first_overflow_by_opcode_then_field():
    """Several overflows: the error names the one the field-by-field order meets first (the
    opcode's formats in order, then its fields, then the first instruction), whichever
    instruction comes first in the stream."""
    f = _random_fields(np.random.default_rng(3), 40)
    f["opcode"] = Opcode.GEMM
    f["iter_out"][5] = 1 << 14
    f["uop_end"][30] = 1 << 14
    with pytest.raises(ValueError, match=r"^instruction 30 \(GEMM\): field uop_end=16384"):
        encode(f)
    # A structured array with other fields than FIELDS_DTYPE's encodes the same.
    g = _random_fields(np.random.default_rng(4), 50)
    wider = np.zeros(len(g), FIELDS_DTYPE.descr + [("note", np.int8)])
    for name in FIELDS_DTYPE.names:
        wider[name] = g[name]
    assert np.array_equal(encode(wider), encode(g))


def test_binary_round_trip():
    p = assemble("load.uop sram=0 dram=0 y=1 x=4\ngemm uop=0:4 iter=2,2 dst=4,0\nfinish")
    q = Program.from_bytes(p.to_bytes())
    assert np.array_equal(p.words, q.words)
    assert len(p.to_bytes()) == 16 * 3
    with pytest.raises(ValueError, match="multiple of 16"):
        Program.from_bytes(b"\0" * 15)


@pytest.mark.parametrize(
    "build, message",
    [
        (lambda p: p.append_words(6, 0), "unknown opcode 6"),
        (lambda p: p.append_words(Opcode.FINISH | 1 << 40, 0), "reserved bits"),
        (lambda p: p.append_words(Opcode.LOAD | MemType.OUT << 7, 0), "LOAD: illegal memory type OUT"),
        (lambda p: p.store(MemType.INP, 0, 0, 1, 1), "STORE: illegal memory type INP"),
        (lambda p: p.load(MemType.UOP, 0, 0, 1, 1, x_pad=(1, 0)), "padding"),
        (lambda p: p.load(MemType.INP, 0, 0, 1, 1, pop_prev=True), "no prev token"),
        (lambda p: p.store(MemType.OUT, 0, 0, 1, 1, push_next=True), "no next token"),
        (lambda p: p.gemm(3, 3), "empty micro-op range"),
        (lambda p: p.append(Opcode.ALU, alu_opcode=7, uop_bgn=0, uop_end=1), "unknown ALU opcode 7"),
        (lambda p: p.alu(AluOp.SHR, 0, 1, imm=32), "outside \\[-31, 31\\]"),
        (lambda p: p.alu(AluOp.RSHR, 0, 1, imm=-1), "outside \\[0, 31\\]"),
        (lambda p: p.append(Opcode.ALU, reset=1, uop_bgn=0, uop_end=1), "reset bit"),
        (lambda p: p.append(Opcode.ALU, imm=5, uop_bgn=0, uop_end=1), "imm must be zero"),
    ],
)
def test_validate_reports_malformed_encodings(build, message):
    p = Program()
    build(p)
    p.finish()
    errors = validate(p)
    assert errors and errors[0][0] == 0
    assert any(__import__("re").search(message, m) for _, m in errors), errors


def test_validate_requires_single_trailing_finish():
    p = Program()
    p.finish()
    p.gemm(0, 1, reset=True)
    msgs = [m for _, m in validate(p)]
    assert "the program must end with FINISH" in msgs and "FINISH before the end of the program" in msgs
    assert validate(Program()) == [(0, "empty program (it must end with FINISH)")]


def test_disassemble_assemble_round_trip_random():
    rng = np.random.default_rng(2)
    f = _random_fields(rng, 500)
    # keep only encodings the text form can express: legal memory types and ALU opcodes
    f["memory_type"] = np.where(f["opcode"] == Opcode.STORE, MemType.OUT, f["memory_type"] % 4)
    f["alu_opcode"] %= 7
    is_alu = f["opcode"] == Opcode.ALU
    f["reset"][is_alu] = 0
    f["imm"][is_alu & (f["use_imm"] == 0)] = 0
    p = Program(words=encode(f))
    p.uops = encode_uops(rng.integers(0, 2048, 10), rng.integers(0, 2048, 10), rng.integers(0, 1024, 10))
    q = assemble(disassemble(p))
    assert np.array_equal(p.words, q.words)
    assert np.array_equal(p.uops, q.uops)


def test_assembler_data_directives_and_comments():
    p = assemble(
        """
        # comment
        .dram 256        ; another comment
        .i8 16 -1 2      // and another
        .i32 32 -2
        .u8 40 255
        .uop 1 2
        finish
        """
    )
    assert p.dram_size == 256 and len(p) == 1
    assert p.dram_init == [(16, b"\xff\x02"), (32, b"\xfe\xff\xff\xff"), (40, b"\xff")]
    assert [a.tolist() for a in decode_uops(p.uops)] == [[1], [2], [0]]


@pytest.mark.parametrize(
    "text, message",
    [
        ("lod.inp sram=0", "line 1: unknown mnemonic 'lod.inp'"),
        ("\nload.inp sram=0 dram=0 y=1", "line 2: load.inp needs x"),
        ("gemm iter=1,1", "needs uop=BEGIN:END"),
        ("gemm uop=0:1 iter=1", "iter takes two values"),
        ("gemm uop=0:1 imm=3", "unexpected operand 'imm=3'"),
        ("alu.add uop=0:1 imm=x", "expected an integer"),
        ("gemm uop=0:99999", "uop_end=99999 does not fit"),
        ("setpad", "setpad needs a value"),
        ("setpad 300", "pad_value=300 does not fit"),
        (".i8 0 200", "out of range"),
        (".weird 1", "unknown directive"),
        (".uop 1 2 3 4", ".uop takes"),
    ],
)
def test_assembler_errors_are_one_line(text, message):
    with pytest.raises(AsmError) as e:
        assemble(text)
    assert message in str(e.value)
    assert "\n" not in str(e.value)
