"""The VTA-like ISA: opcodes, bit layouts, vectorized encode/decode, and the `Program` builder.

An instruction stream is a `Program`: an `(n, 2)` uint64 array holding the exact 128-bit
encodings (word 0 = bits 0..63, little-endian in memory as VTA's `VTAGenericInsn`), never one
Python object per instruction. Builders append encodings:

    p = Program()
    p.load(MemType.INP, sram=0, dram=0, y_size=1, x_size=4, push_next=True)
    p.gemm(uop_bgn=0, uop_end=4, pop_prev=True)
    p.alu(AluOp.MAX, 0, 4, imm=-128)
    p.store(MemType.OUT, sram=0, dram=0, y_size=1, x_size=4, pop_prev=True)
    p.finish()

`decode(words)` returns a numpy structured array with one column per field (`FIELD_NAMES`);
`encode(fields)` is its inverse; `validate(words)` lists malformed encodings. Micro-ops are
uint32: `encode_uops(dst, src, wgt)` / `decode_uops(uops)`. Field positions and widths are
documented in `docs/isa.md`; widths follow the `HardwareConfig`.
"""

from __future__ import annotations

from functools import cached_property, lru_cache
from dataclasses import dataclass
from enum import IntEnum

import numpy as np

from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig


class Opcode(IntEnum):
    LOAD = 0
    STORE = 1
    GEMM = 2
    FINISH = 3
    ALU = 4
    SETPAD = 5  # extension: sets the load module's INP padding value


class MemType(IntEnum):
    UOP = 0
    WGT = 1
    INP = 2
    ACC = 3  # LOAD: int32 rows; STORE: int32 rows (extension)
    OUT = 4  # STORE only: int32 accumulator rows truncated to int8
    ACC8 = 5  # LOAD only: int8 elements sign-extended into accumulator rows (as VTA's ACC_8BIT)
    OUTQ = 6  # STORE only, with `store_requant`: accumulator rows requantized to int8


class AluOp(IntEnum):
    MIN = 0
    MAX = 1
    ADD = 2
    SHR = 3
    MUL = 4
    RDMUL = 5  # extension: gemmlowp SaturatingRoundingDoublingHighMul
    RSHR = 6  # extension: gemmlowp RoundingDivideByPOT


class Module(IntEnum):
    LOAD = 0
    COMPUTE = 1
    STORE = 2


LOAD_MEM_TYPES = (MemType.UOP, MemType.WGT, MemType.INP, MemType.ACC, MemType.ACC8)
STORE_MEM_TYPES = (MemType.ACC, MemType.OUT, MemType.OUTQ)
PARAM_ROWS = 4  # OUTQ parameter rows per output block: bias, multiplier, shift, (zp, min, max)
DEP_FLAGS = ("pop_prev", "pop_next", "push_prev", "push_next")
# The four dependency-token FIFOs: name -> (producer, consumer, the producer's push flag, the
# consumer's pop flag). Load and store exchange tokens with compute only.
TOKEN_FIFOS = {
    "load->compute": (Module.LOAD, Module.COMPUTE, "push_next", "pop_prev"),
    "compute->load": (Module.COMPUTE, Module.LOAD, "push_prev", "pop_next"),
    "store->compute": (Module.STORE, Module.COMPUTE, "push_prev", "pop_next"),
    "compute->store": (Module.COMPUTE, Module.STORE, "push_next", "pop_prev"),
}
INSN_BYTES = 16

# Every field any instruction has, in one table; unused ones decode as 0.
FIELD_NAMES = (
    "opcode", "pop_prev", "pop_next", "push_prev", "push_next",
    "memory_type", "sram_base", "dram_base", "y_size", "x_size", "x_stride",
    "y_pad_0", "y_pad_1", "x_pad_0", "x_pad_1",
    "reset", "uop_bgn", "uop_end", "iter_out", "iter_in",
    "dst_factor_out", "dst_factor_in", "src_factor_out", "src_factor_in",
    "wgt_factor_out", "wgt_factor_in", "alu_opcode", "use_imm", "imm", "pad_value",
    "clear", "param_row", "param_y", "param_x",
)  # fmt: skip
FIELDS_DTYPE = np.dtype([(n, np.int64) for n in FIELD_NAMES])


@dataclass(frozen=True)
class Field:
    name: str
    bit: int  # position in the 128-bit instruction
    width: int
    signed: bool = False


class Layout:
    """Bit positions of every field of every instruction format for one `HardwareConfig`."""

    def __init__(self, config: HardwareConfig):
        self.config = config
        head = [Field("opcode", 0, 3)] + [Field(n, 3 + i, 1) for i, n in enumerate(DEP_FLAGS)]

        def seq(start, spec):
            out, bit = [], start
            for name, width, *signed in spec:
                out.append(Field(name, bit, width, bool(signed)))
                bit += width
            return out, bit

        mem0, end0 = seq(7, [("memory_type", 3), ("sram_base", 16), ("dram_base", 32)])
        mem1, end1 = seq(64, [("y_size", 16), ("x_size", 16), ("x_stride", 16),
                              ("y_pad_0", 4), ("y_pad_1", 4), ("x_pad_0", 4), ("x_pad_1", 4)])  # fmt: skip
        self.mem = head + mem0 + mem1
        # STORE has no padding; with `store_requant` it has the output stage's fields.
        self.store = head + mem0 + mem1[:3]
        if config.store_requant:
            self.store += [Field("clear", 58, 1), Field("param_row", 112, config.log_acc_depth),
                           Field("param_y", 112 + config.log_acc_depth, 1),
                           Field("param_x", 113 + config.log_acc_depth, 1)]  # fmt: skip
        lu, la, li, lw = (config.log_uop_depth, config.log_acc_depth,
                          config.log_inp_depth, config.log_wgt_depth)  # fmt: skip
        loop0, loop_end = seq(7, [("reset", 1), ("uop_bgn", lu), ("uop_end", lu + 1),
                                  ("iter_out", 14), ("iter_in", 14)])  # fmt: skip
        gemm1, gemm_end = seq(64, [("dst_factor_out", la), ("dst_factor_in", la),
                                   ("src_factor_out", li), ("src_factor_in", li),
                                   ("wgt_factor_out", lw), ("wgt_factor_in", lw)])  # fmt: skip
        alu1, alu_end = seq(64, [("dst_factor_out", la), ("dst_factor_in", la),
                                 ("src_factor_out", la), ("src_factor_in", la),
                                 ("alu_opcode", 3), ("use_imm", 1), ("imm", 16, True)])  # fmt: skip
        self.gemm = head + loop0 + gemm1
        self.alu = head + loop0 + alu1
        self.finish = list(head)
        self.setpad = head + [Field("pad_value", 7, 8, True)]
        self.by_opcode = {
            Opcode.LOAD: self.mem,
            Opcode.STORE: self.store,
            Opcode.GEMM: self.gemm,
            Opcode.FINISH: self.finish,
            Opcode.ALU: self.alu,
            Opcode.SETPAD: self.setpad,
        }
        # Bits that must be zero: everything a format does not use.
        self.reserved = {}
        for op, fmt in self.by_opcode.items():
            used = [0, 0]
            for f in fmt:
                for b in range(f.bit, f.bit + f.width):
                    used[b // 64] |= 1 << (b % 64)
            self.reserved[op] = (~used[0] & (2**64 - 1), ~used[1] & (2**64 - 1))
        self.uop = [Field("dst", 0, la), Field("src", la, config.uop_src_bits),
                    Field("wgt", la + config.uop_src_bits, lw)]  # fmt: skip
        assert end0 <= 64 and end1 <= 128 and loop_end <= 64
        assert gemm_end <= 128 and alu_end <= 128

    @cached_property
    def encode_plan(self) -> dict:
        """Per opcode, its fields as arrays `encode` computes with at once: (columns in
        `FIELDS_DTYPE`, lowest value, bound, bit mask, shift within the word, word)."""
        plan = {}
        for op, fmt in self.by_opcode.items():
            lo = [-(1 << (f.width - 1)) if f.signed else 0 for f in fmt]
            hi = [1 << (f.width - 1) if f.signed else 1 << f.width for f in fmt]
            plan[int(op)] = (
                np.array([FIELD_NAMES.index(f.name) for f in fmt]),
                np.array(lo, np.int64), np.array(hi, np.int64),
                np.array([(1 << f.width) - 1 for f in fmt], np.int64),
                np.array([f.bit % 64 for f in fmt], np.uint64),
                np.array([f.bit // 64 for f in fmt]),
            )  # fmt: skip
        return plan

    @cached_property
    def decode_plan(self) -> dict:
        """Per opcode, its fields but the opcode as arrays `decode` computes with at once:
        (columns in `FIELDS_DTYPE`, word, shift within it, bit mask, the signed fields'
        positions among them, and their sign bits)."""
        plan = {}
        for op, fmt in self.by_opcode.items():
            fs = fmt[1:]
            signed = [k for k, f in enumerate(fs) if f.signed]
            plan[int(op)] = (
                np.array([FIELD_NAMES.index(f.name) for f in fs], np.intp),
                np.array([f.bit // 64 for f in fs], np.intp),
                np.array([f.bit % 64 for f in fs], np.uint64),
                np.array([(1 << f.width) - 1 for f in fs], np.uint64),
                np.array(signed, np.intp),
                np.array([1 << (fs[k].width - 1) for k in signed], np.int64),
            )  # fmt: skip
        return plan

    def field(self, opcode: int, name: str) -> Field:
        for f in self.by_opcode[Opcode(opcode)]:
            if f.name == name:
                return f
        raise KeyError(f"{Opcode(opcode).name} has no field {name!r}")


@lru_cache(maxsize=64)
def layout_of(config: HardwareConfig) -> Layout:
    """The instruction formats of `config` (computed once per configuration)."""
    return Layout(config)


def _layout(config: HardwareConfig | None) -> Layout:
    return layout_of(config or DEFAULT_CONFIG)


def _extract(words: np.ndarray, f: Field) -> np.ndarray:
    w = words[:, f.bit // 64]
    v = (w >> np.uint64(f.bit % 64)) & np.uint64((1 << f.width) - 1)
    v = v.astype(np.int64)
    if f.signed:
        v = np.where(v >= 1 << (f.width - 1), v - (1 << f.width), v)
    return v


def as_words(program) -> np.ndarray:
    """The `(n, 2)` uint64 view of a Program, a words array, or raw little-endian bytes."""
    if isinstance(program, Program):
        return program.words
    if isinstance(program, (bytes, bytearray, memoryview)):
        return Program.from_bytes(program).words
    words = np.asarray(program)
    if words.dtype != np.uint64 or words.ndim != 2 or words.shape[1] != 2:
        raise TypeError("an instruction stream is an (n, 2) uint64 array")
    return words


def decode(program, config: HardwareConfig | None = None, *, copy: bool = True) -> np.ndarray:
    """All fields of every instruction as a structured array (`FIELDS_DTYPE`), vectorized.

    Fields an instruction's format does not have are 0. Opcodes outside `Opcode` decode to
    their opcode only; `validate` reports them. With `copy=False` the fields a `Program`
    knows (`know_fields`) are returned read-only instead of copied, for callers that only
    read them.
    """
    layout = _layout(config)
    words = as_words(program)
    if isinstance(program, Program) and program._decoded is not None:
        known_words, fields = program._decoded  # the emitter's fields of these encodings
        if layout.config == program.config and np.array_equal(known_words, words):
            if copy:
                return fields.copy()
            view = fields.view()
            view.flags.writeable = False
            return view
    out = np.zeros(len(words), FIELDS_DTYPE)
    opcode = (words[:, 0] & np.uint64(7)).astype(np.int64)
    # All fields of one opcode at once, into the records viewed as an int64 matrix.
    matrix = out.view(np.int64).reshape(len(words), len(FIELD_NAMES))
    matrix[:, 0] = opcode
    for op, (cols, word, shift, mask, signed, sign) in layout.decode_plan.items():
        rows = np.flatnonzero(opcode == op)
        if len(rows) == 0 or len(cols) == 0:
            continue
        v = ((words[rows][:, word] >> shift) & mask).astype(np.int64)
        if len(signed):
            s = v[:, signed]
            v[:, signed] = np.where(s >= sign, s - 2 * sign, s)
        matrix[np.ix_(rows, cols)] = v
    return out


def encode(fields: np.ndarray, config: HardwareConfig | None = None) -> np.ndarray:
    """The `(n, 2)` uint64 encodings of a structured field array; raises if a field overflows."""
    layout = _layout(config)
    fields = np.asarray(fields)
    opcode = fields["opcode"]
    bad = ~np.isin(opcode, [int(o) for o in Opcode])
    if bad.any():
        raise ValueError(f"instruction {int(np.flatnonzero(bad)[0])}: unknown opcode")
    if fields.dtype != FIELDS_DTYPE or fields.ndim != 1:
        return _encode_by_field(fields, layout)
    # All fields of one opcode at once (an int64 matrix of the records): a few array
    # operations per opcode instead of a dozen per field.
    matrix = np.ascontiguousarray(fields).view(np.int64).reshape(len(fields), len(FIELD_NAMES))
    words = np.zeros((len(fields), 2), np.uint64)
    for op, (cols, lo, hi, mask, shift, word) in layout.encode_plan.items():
        rows = np.flatnonzero(opcode == op)
        if len(rows) == 0:
            continue
        v = matrix[np.ix_(rows, cols)]
        if ((v < lo) | (v >= hi)).any():
            return _encode_by_field(fields, layout)  # raises, naming the first overflow
        u = (v & mask).astype(np.uint64) << shift
        for w in (0, 1):
            in_word = word == w
            if in_word.any():
                words[rows, w] = np.bitwise_or.reduce(u[:, in_word], axis=1)
    return words


def _encode_by_field(fields: np.ndarray, layout: Layout) -> np.ndarray:
    """`encode` one field at a time (any structured array that has the fields)."""
    words = np.zeros((len(fields), 2), np.uint64)
    opcode = fields["opcode"]
    for op, fmt in layout.by_opcode.items():
        rows = np.flatnonzero(opcode == op)
        if len(rows) == 0:
            continue
        for f in fmt:
            v = fields[f.name][rows].astype(np.int64)
            lo, hi = (-(1 << (f.width - 1)), 1 << (f.width - 1)) if f.signed else (0, 1 << f.width)
            oob = (v < lo) | (v >= hi)
            if oob.any():
                i = int(rows[np.flatnonzero(oob)[0]])
                raise ValueError(
                    f"instruction {i} ({Opcode(op).name}): field {f.name}={int(fields[f.name][i])}"
                    f" does not fit in {f.width} {'signed ' if f.signed else ''}bits"
                )
            u = (v & ((1 << f.width) - 1)).astype(np.uint64) << np.uint64(f.bit % 64)
            words[rows, f.bit // 64] |= u
    return words


def validate(program, config: HardwareConfig | None = None, fields=None) -> list[tuple[int, str]]:
    """Every malformed encoding as `(instruction index, message)`, in program order.

    Checks: known opcode, reserved bits zero, memory type legal for LOAD/STORE (OUTQ only with
    `store_requant`), parameter rows only on STORE OUTQ, dependency
    flags the issuing module has, padding only where defined, ALU opcode and immediate range,
    reset bit only on GEMM, imm zero unless use_imm, uop_bgn < uop_end, exactly one FINISH as
    the last instruction.
    """
    layout = _layout(config)
    words = as_words(program)
    f = decode(words, config) if fields is None else fields
    errors: list[tuple[int, str]] = []
    opcode = f["opcode"]
    known = np.isin(opcode, [int(o) for o in Opcode])
    for i in np.flatnonzero(~known):
        errors.append((int(i), f"unknown opcode {int(opcode[i])}"))
    for op in Opcode:
        rows = np.flatnonzero(opcode == op)
        if len(rows) == 0:
            continue
        r0, r1 = layout.reserved[op]
        bad = ((words[rows, 0] & np.uint64(r0)) != 0) | ((words[rows, 1] & np.uint64(r1)) != 0)
        for i in rows[bad]:
            errors.append((int(i), f"{op.name}: reserved bits are not zero"))
    mem_type = f["memory_type"]
    pads = f["y_pad_0"] | f["y_pad_1"] | f["x_pad_0"] | f["x_pad_1"]
    is_load, is_store = opcode == Opcode.LOAD, opcode == Opcode.STORE
    for i in np.flatnonzero(is_load & ~np.isin(mem_type, [int(m) for m in LOAD_MEM_TYPES])):
        errors.append((int(i), f"LOAD: illegal memory type {_mem_name(mem_type[i])}"))
    store_types = [int(m) for m in STORE_MEM_TYPES
                   if m != MemType.OUTQ or layout.config.store_requant]  # fmt: skip
    for i in np.flatnonzero(is_store & ~np.isin(mem_type, store_types)):
        errors.append((int(i), f"STORE: illegal memory type {_mem_name(mem_type[i])}"))
    params = f["param_row"] | f["param_y"] | f["param_x"]
    for i in np.flatnonzero(is_store & (mem_type != MemType.OUTQ) & (params != 0)):
        errors.append((int(i), f"{_kind(f[i])}: parameter rows are only defined for STORE OUTQ"))
    for i in np.flatnonzero(is_load & (mem_type == MemType.UOP) & (pads != 0)):
        errors.append((int(i), f"{_kind(f[i])}: padding is only defined for LOAD INP/WGT/ACC/ACC8"))
    module = module_of(f)
    prev = f["pop_prev"] | f["push_prev"]
    nxt = f["pop_next"] | f["push_next"]
    for i in np.flatnonzero((module == Module.LOAD) & (prev != 0)):
        errors.append((int(i), f"{_kind(f[i])}: the load module has no prev token queues"))
    for i in np.flatnonzero((module == Module.STORE) & (nxt != 0)):
        errors.append((int(i), f"{_kind(f[i])}: the store module has no next token queues"))
    is_gemm, is_alu = opcode == Opcode.GEMM, opcode == Opcode.ALU
    for i in np.flatnonzero(is_alu & (f["reset"] != 0)):
        errors.append((int(i), "ALU: reset bit must be zero"))
    for i in np.flatnonzero((is_gemm | is_alu) & (f["uop_bgn"] >= f["uop_end"])):
        errors.append(
            (int(i), f"{_kind(f[i])}: empty micro-op range {f['uop_bgn'][i]}:{f['uop_end'][i]}")
        )
    alu_op, imm, use_imm = f["alu_opcode"], f["imm"], f["use_imm"] != 0
    for i in np.flatnonzero(is_alu & ~use_imm & (imm != 0)):
        errors.append((int(i), "ALU: imm must be zero when use_imm is 0"))
    for i in np.flatnonzero(is_alu & (alu_op > AluOp.RSHR)):
        errors.append((int(i), f"ALU: unknown ALU opcode {int(alu_op[i])}"))
    bad_shr = is_alu & use_imm & (alu_op == AluOp.SHR) & ((imm < -31) | (imm > 31))
    bad_rshr = is_alu & use_imm & (alu_op == AluOp.RSHR) & ((imm < 0) | (imm > 31))
    for i in np.flatnonzero(bad_shr):
        errors.append((int(i), f"ALU SHR: immediate shift {int(imm[i])} outside [-31, 31]"))
    for i in np.flatnonzero(bad_rshr):
        errors.append((int(i), f"ALU RSHR: immediate exponent {int(imm[i])} outside [0, 31]"))
    finishes = np.flatnonzero(opcode == Opcode.FINISH)
    if len(words) and (len(finishes) == 0 or finishes[-1] != len(words) - 1):
        errors.append((len(words) - 1, "the program must end with FINISH"))
    for i in finishes[finishes != len(words) - 1]:
        errors.append((int(i), "FINISH before the end of the program"))
    if len(words) == 0:
        errors.append((0, "empty program (it must end with FINISH)"))
    errors.sort(key=lambda e: e[0])
    return errors


def module_of(fields: np.ndarray) -> np.ndarray:
    """The module each instruction is routed to by fetch, as VTA's fetch stage does."""
    opcode, mem = fields["opcode"], fields["memory_type"]
    module = np.full(len(fields), int(Module.COMPUTE), np.int64)
    module[opcode == Opcode.STORE] = Module.STORE
    load_q = ((opcode == Opcode.LOAD) & np.isin(mem, [MemType.INP, MemType.WGT])) | (
        opcode == Opcode.SETPAD
    )
    module[load_q] = Module.LOAD
    return module


def _mem_name(m) -> str:
    try:
        return MemType(int(m)).name
    except ValueError:
        return str(int(m))


def _kind(row) -> str:
    op = int(row["opcode"])
    try:
        name = Opcode(op).name
    except ValueError:
        return f"opcode {op}"
    if op in (Opcode.LOAD, Opcode.STORE):
        return f"{name} {_mem_name(row['memory_type'])}"
    if op == Opcode.ALU:
        try:
            return f"ALU {AluOp(int(row['alu_opcode'])).name}"
        except ValueError:
            return "ALU"
    if op == Opcode.GEMM and row["reset"]:
        return "GEMM reset"
    return name


def describe(row) -> str:
    """A short name for an instruction ("LOAD INP", "ALU RDMUL", "GEMM reset", ...)."""
    return _kind(row)


# --- micro-ops -----------------------------------------------------------------------------


def encode_uops(dst, src, wgt=0, config: HardwareConfig | None = None) -> np.ndarray:
    """uint32 micro-ops from index arrays (broadcast); raises if an index overflows its field."""
    layout = _layout(config)
    dst, src, wgt = np.broadcast_arrays(
        np.asarray(dst, np.int64), np.asarray(src, np.int64), np.asarray(wgt, np.int64)
    )
    out = np.zeros(dst.shape, np.uint64)
    for f, v in zip(layout.uop, (dst, src, wgt)):
        if v.size and (v.min() < 0 or v.max() >= 1 << f.width):
            raise ValueError(f"micro-op {f.name} index out of its {f.width}-bit field")
        out |= v.astype(np.uint64) << np.uint64(f.bit)
    return out.astype(np.uint32).reshape(-1)


def decode_uops(uops, config: HardwareConfig | None = None):
    """(dst, src, wgt) int64 index arrays of uint32 micro-ops."""
    layout = _layout(config)
    u = np.asarray(uops, np.uint32).astype(np.int64).reshape(-1)
    return tuple((u >> f.bit) & ((1 << f.width) - 1) for f in layout.uop)


# --- the instruction stream ----------------------------------------------------------------


class Program:
    """An instruction stream backed by an `(n, 2)` uint64 array, with builder methods.

    Builders encode immediately (raising `ValueError` when a field overflows) and return the
    new instruction's index. `uops` (uint32) is the micro-op image that LOAD UOP reads by
    `dram_base`; `dram_init` holds `(byte offset, bytes)` segments and `dram_size` a minimum
    DRAM size, both set by the assembler's data directives (`simulate` uses them when no DRAM
    image is given).
    """

    def __init__(self, config: HardwareConfig | None = None, words=None, uops=None):
        self.config = config or DEFAULT_CONFIG
        self._layout = layout_of(self.config)
        if words is None:
            self._buf = np.zeros((64, 2), np.uint64)
            self._n = 0
        else:
            w = as_words(words)
            self._buf = np.array(w, np.uint64).reshape(-1, 2)
            self._n = len(self._buf)
        self.uops = np.zeros(0, np.uint32) if uops is None else np.asarray(uops, np.uint32)
        self.dram_init: list[tuple[int, bytes]] = []
        self.dram_size = 0
        self._decoded: tuple[np.ndarray, np.ndarray] | None = None  # `know_fields`

    def know_fields(self, fields: np.ndarray) -> None:
        """Record what `decode` of the current words gives (`FIELDS_DTYPE` records, e.g. the
        emitter's, which encoded them): `decode` returns a copy while the words are unchanged."""
        self._decoded = (self.words.copy(), fields)

    # --- container ---
    @property
    def words(self) -> np.ndarray:
        return self._buf[: self._n]

    def __len__(self) -> int:
        return self._n

    def fields(self) -> np.ndarray:
        return decode(self.words, self.config)

    def initial_dram_bytes(self) -> int:
        """The size of the DRAM the data directives ask for (used when no image is given)."""
        return max([self.dram_size] + [o + len(b) for o, b in self.dram_init])

    def initial_dram(self) -> np.ndarray:
        """The DRAM image the data directives describe (check its size against the memory
        budget first: `initial_dram_bytes`)."""
        dram = np.zeros(self.initial_dram_bytes(), np.uint8)
        for off, data in self.dram_init:
            dram[off : off + len(data)] = np.frombuffer(data, np.uint8)
        return dram

    def to_bytes(self) -> bytes:
        return self.words.astype("<u8").tobytes()

    @staticmethod
    def from_bytes(data: bytes, config: HardwareConfig | None = None) -> Program:
        if len(data) % INSN_BYTES:
            raise ValueError(f"binary program size {len(data)} is not a multiple of 16 bytes")
        words = np.frombuffer(bytes(data), "<u8").astype(np.uint64).reshape(-1, 2)
        return Program(config, words)

    def append_words(self, w0: int, w1: int) -> int:
        if self._n == len(self._buf):
            self._buf = np.concatenate([self._buf, np.zeros_like(self._buf)])
        self._buf[self._n, 0] = w0
        self._buf[self._n, 1] = w1
        self._n += 1
        return self._n - 1

    def append(self, opcode: int, **values) -> int:
        """Encode one instruction from field values (names as in `FIELD_NAMES`)."""
        fmt = self._layout.by_opcode[Opcode(opcode)]
        values["opcode"] = int(opcode)
        names = {f.name for f in fmt}
        extra = [k for k, v in values.items() if k not in names and v]
        if extra:
            raise ValueError(f"{Opcode(opcode).name} has no field(s) {', '.join(extra)}")
        w = [0, 0]
        for f in fmt:
            v = int(values.get(f.name, 0))
            lo, hi = (-(1 << (f.width - 1)), 1 << (f.width - 1)) if f.signed else (0, 1 << f.width)
            if not lo <= v < hi:
                raise ValueError(
                    f"{Opcode(opcode).name}: {f.name}={v} does not fit in {f.width}"
                    f"{' signed' if f.signed else ''} bits"
                )
            w[f.bit // 64] |= (v & ((1 << f.width) - 1)) << (f.bit % 64)
        return self.append_words(w[0], w[1])

    # --- builders ---
    def load(self, mem, sram, dram, y_size, x_size, x_stride=None, y_pad=(0, 0), x_pad=(0, 0),
             **deps) -> int:  # fmt: skip
        """LOAD `y_size` rows of `x_size` elements (DRAM row pitch `x_stride`, default
        `x_size`) into SRAM rows from `sram` on, framed by `y_pad`/`x_pad` padding."""
        return self.append(
            Opcode.LOAD, memory_type=int(mem), sram_base=sram, dram_base=dram, y_size=y_size,
            x_size=x_size, x_stride=x_size if x_stride is None else x_stride,
            y_pad_0=y_pad[0], y_pad_1=y_pad[1], x_pad_0=x_pad[0], x_pad_1=x_pad[1], **deps,
        )  # fmt: skip

    def store(self, mem, sram, dram, y_size, x_size, x_stride=None, *, clear=False,
              param_row=0, param_step=(0, 0), **deps) -> int:  # fmt: skip
        """STORE accumulator rows from `sram` on (`mem` OUT: int8-truncated, ACC: int32, OUTQ:
        requantized with the parameter rows from `param_row`, advancing by `PARAM_ROWS` per
        `(y, x)` step); `clear` zeroes the rows read (both need `store_requant`)."""
        return self.append(
            Opcode.STORE, memory_type=int(mem), sram_base=sram, dram_base=dram, y_size=y_size,
            x_size=x_size, x_stride=x_size if x_stride is None else x_stride,
            clear=int(clear), param_row=param_row, param_y=param_step[0],
            param_x=param_step[1], **deps,
        )  # fmt: skip

    def gemm(self, uop_bgn, uop_end, iter_out=1, iter_in=1, dst_factor=(0, 0),
             src_factor=(0, 0), wgt_factor=(0, 0), reset=False, **deps) -> int:  # fmt: skip
        """GEMM over `iter_out x iter_in x uops[uop_bgn:uop_end]`; factors are (out, in)."""
        return self.append(
            Opcode.GEMM, reset=int(bool(reset)), uop_bgn=uop_bgn, uop_end=uop_end,
            iter_out=iter_out, iter_in=iter_in,
            dst_factor_out=dst_factor[0], dst_factor_in=dst_factor[1],
            src_factor_out=src_factor[0], src_factor_in=src_factor[1],
            wgt_factor_out=wgt_factor[0], wgt_factor_in=wgt_factor[1], **deps,
        )  # fmt: skip

    def alu(self, op, uop_bgn, uop_end, iter_out=1, iter_in=1, dst_factor=(0, 0),
            src_factor=(0, 0), imm=None, **deps) -> int:  # fmt: skip
        """ALU `op` on accumulator rows: `dst = op(dst, imm)` if `imm` is given, else
        `dst = op(dst, src)` with `src` another accumulator row."""
        return self.append(
            Opcode.ALU, alu_opcode=int(op), use_imm=int(imm is not None),
            imm=0 if imm is None else imm, uop_bgn=uop_bgn, uop_end=uop_end,
            iter_out=iter_out, iter_in=iter_in,
            dst_factor_out=dst_factor[0], dst_factor_in=dst_factor[1],
            src_factor_out=src_factor[0], src_factor_in=src_factor[1], **deps,
        )  # fmt: skip

    def setpad(self, value: int, **deps) -> int:
        """Set the int8 value LOAD INP writes into padding (the input zero point)."""
        return self.append(Opcode.SETPAD, pad_value=value, **deps)

    def finish(self, **deps) -> int:
        return self.append(Opcode.FINISH, **deps)

    def __repr__(self) -> str:
        return f"<Program {self._n} instructions, {len(self.uops)} micro-ops>"
