"""Assembly text form of VTA-like programs: `assemble(text) -> Program`, `disassemble(program)`.

One instruction per line; `//`, `#` and `;` start comments. Fields are `key=value`; dependency
flags are bare words. The disassembler prints the canonical form, which assembles back to the
identical 128-bit encoding:

    setpad -3
    load.inp   sram=0 dram=0 y=4 x=4 stride=4 ypad=1,1 xpad=1,1 push_next
    load.uop   sram=0 dram=0 y=1 x=16 stride=16
    gemm.reset uop=0:16 iter=1,1
    gemm       uop=0:16 iter=1,4 dst=0,0 src=0,1 wgt=0,1 pop_prev
    alu.rdmul  uop=0:16 iter=1,1 src=0,0
    alu.max    uop=0:16 iter=1,1 imm=-128
    store.out  sram=0 dram=0 y=1 x=16 stride=16 push_next
    finish

With `store_requant`, `store.outq ... param=ROW pstep=Y,X` requantizes through the parameter
rows and the bare word `clear` zeroes the accumulator rows a STORE has read.

Data directives fill the program's micro-op image and initial DRAM (used by `simulate` and
`qaccel-sim` when no image is given): `.uop DST SRC [WGT]` appends a micro-op; `.dram SIZE`
sets a minimum DRAM size in bytes; `.i8 OFFSET V...`, `.u8 OFFSET V...` and `.i32 OFFSET V...`
write little-endian values at a byte offset. Full grammar: docs/isa.md.
"""

from __future__ import annotations

import re

import numpy as np

from qaccel.targets.vta.config import HardwareConfig
from qaccel.targets.vta.isa import (
    DEP_FLAGS,
    LOAD_MEM_TYPES,
    STORE_MEM_TYPES,
    AluOp,
    MemType,
    Opcode,
    Program,
    decode,
    decode_uops,
    encode_uops,
)


class AsmError(ValueError):
    """A malformed assembly line; the message starts with `line N:`."""


_COMMENT = re.compile(r"(//|#|;).*$")
_PAIR_KEYS = {
    "iter": ("iter_out", "iter_in"),
    "dst": ("dst_factor_out", "dst_factor_in"),
    "src": ("src_factor_out", "src_factor_in"),
    "wgt": ("wgt_factor_out", "wgt_factor_in"),
    "ypad": ("y_pad_0", "y_pad_1"),
    "xpad": ("x_pad_0", "x_pad_1"),
    "pstep": ("param_y", "param_x"),
}
_SCALAR_KEYS = {"sram": "sram_base", "dram": "dram_base", "y": "y_size", "x": "x_size",
                "stride": "x_stride", "imm": "imm", "param": "param_row"}  # fmt: skip
_ALLOWED = {
    "mem": {"sram", "dram", "y", "x", "stride", "ypad", "xpad"},
    "store": {"sram", "dram", "y", "x", "stride", "param", "pstep"},
    "gemm": {"uop", "iter", "dst", "src", "wgt"},
    "alu": {"uop", "iter", "dst", "src", "imm"},
}


def _int(text: str, lineno: int) -> int:
    try:
        return int(text, 0)
    except ValueError:
        raise AsmError(f"line {lineno}: expected an integer, got {text!r}") from None


def _mnemonic_table():
    table = {}
    for m in LOAD_MEM_TYPES:
        table[f"load.{m.name.lower()}"] = (Opcode.LOAD, {"memory_type": int(m)}, "mem")
    for m in STORE_MEM_TYPES:
        table[f"store.{m.name.lower()}"] = (Opcode.STORE, {"memory_type": int(m)}, "store")
    table["gemm"] = (Opcode.GEMM, {}, "gemm")
    table["gemm.reset"] = (Opcode.GEMM, {"reset": 1}, "gemm")
    for op in AluOp:
        table[f"alu.{op.name.lower()}"] = (Opcode.ALU, {"alu_opcode": int(op)}, "alu")
    table["finish"] = (Opcode.FINISH, {}, None)
    table["setpad"] = (Opcode.SETPAD, {}, None)
    return table


_MNEMONICS = _mnemonic_table()


def assemble(text: str, config: HardwareConfig | None = None) -> Program:
    """A `Program` from assembly text (micro-op image and DRAM data directives included)."""
    program = Program(config)
    uops = []
    for lineno, raw in enumerate(text.splitlines(), 1):
        line = _COMMENT.sub("", raw).strip()
        if not line:
            continue
        words = line.split()
        head = words[0].lower()
        if head.startswith("."):
            _directive(program, uops, head, words[1:], lineno, config)
            continue
        if head not in _MNEMONICS:
            raise AsmError(f"line {lineno}: unknown mnemonic {words[0]!r}")
        opcode, values, group = _MNEMONICS[head]
        values = dict(values)
        args = words[1:]
        if opcode == Opcode.SETPAD:
            if not args or "=" in args[0] or args[0] in DEP_FLAGS:
                raise AsmError(f"line {lineno}: setpad needs a value, e.g. 'setpad -128'")
            values["pad_value"] = _int(args[0], lineno)
            args = args[1:]
        for arg in args:
            if arg in DEP_FLAGS or (arg == "clear" and group == "store"):
                values[arg] = 1
                continue
            key, eq, val = arg.partition("=")
            if not eq or group is None or key not in _ALLOWED[group]:
                raise AsmError(f"line {lineno}: unexpected operand {arg!r} for {head}")
            if key == "uop":
                bgn, colon, end = val.partition(":")
                if not colon:
                    raise AsmError(f"line {lineno}: uop range must be BEGIN:END, got {val!r}")
                values["uop_bgn"], values["uop_end"] = _int(bgn, lineno), _int(end, lineno)
            elif key in _PAIR_KEYS:
                parts = val.split(",")
                if len(parts) != 2:
                    raise AsmError(f"line {lineno}: {key} takes two values OUT,IN; got {val!r}")
                for name, part in zip(_PAIR_KEYS[key], parts):
                    values[name] = _int(part, lineno)
            else:
                values[_SCALAR_KEYS[key]] = _int(val, lineno)
                if key == "imm":
                    values["use_imm"] = 1
        if group in ("mem", "store"):
            missing = [k for k in ("sram", "dram", "y", "x") if _SCALAR_KEYS[k] not in values]
            if missing:
                raise AsmError(f"line {lineno}: {head} needs {', '.join(missing)}")
            values.setdefault("x_stride", values["x_size"])
        if group in ("gemm", "alu"):
            if "uop_bgn" not in values:
                raise AsmError(f"line {lineno}: {head} needs uop=BEGIN:END")
            values.setdefault("iter_out", 1)
            values.setdefault("iter_in", 1)
        try:
            program.append(opcode, **values)
        except ValueError as e:
            raise AsmError(f"line {lineno}: {e}") from None
    if uops:
        try:
            program.uops = encode_uops(*np.array(uops, np.int64).T, config=config)
        except ValueError as e:
            raise AsmError(f".uop: {e}") from None
    return program


def _directive(program, uops, head, args, lineno, config):
    if head == ".uop":
        if len(args) not in (2, 3):
            raise AsmError(f"line {lineno}: .uop takes DST SRC [WGT]")
        uops.append([_int(a, lineno) for a in args] + [0] * (3 - len(args)))
    elif head == ".dram":
        if len(args) != 1:
            raise AsmError(f"line {lineno}: .dram takes one size in bytes")
        program.dram_size = max(program.dram_size, _int(args[0], lineno))
    elif head in (".i8", ".u8", ".i32"):
        if len(args) < 2:
            raise AsmError(f"line {lineno}: {head} takes OFFSET VALUE...")
        offset = _int(args[0], lineno)
        vals = [_int(a, lineno) for a in args[1:]]
        dtype, lo, hi = {".i8": ("i1", -128, 127), ".u8": ("u1", 0, 255),
                         ".i32": ("<i4", -(2**31), 2**31 - 1)}[head]  # fmt: skip
        if offset < 0 or any(not lo <= v <= hi for v in vals):
            raise AsmError(f"line {lineno}: {head} value or offset out of range")
        program.dram_init.append((offset, np.array(vals, dtype).tobytes()))
    else:
        raise AsmError(f"line {lineno}: unknown directive {head!r}")


def _pair(row, key):
    a, b = (int(row[n]) for n in _PAIR_KEYS[key])
    return f"{key}={a},{b}"


def _line(row) -> str:
    op = int(row["opcode"])
    parts = []
    if op in (Opcode.LOAD, Opcode.STORE):
        mem = MemType(int(row["memory_type"])).name.lower()
        parts.append(f"{'load' if op == Opcode.LOAD else 'store'}.{mem}")
        parts += [f"sram={row['sram_base']}", f"dram={row['dram_base']}", f"y={row['y_size']}",
                  f"x={row['x_size']}", f"stride={row['x_stride']}"]  # fmt: skip
        for key in ("ypad", "xpad", "pstep"):
            if any(row[n] for n in _PAIR_KEYS[key]):
                parts.append(_pair(row, key))
        if row["param_row"]:
            parts.append(f"param={row['param_row']}")
        if row["clear"]:
            parts.append("clear")
    elif op in (Opcode.GEMM, Opcode.ALU):
        if op == Opcode.GEMM:
            parts.append("gemm.reset" if row["reset"] else "gemm")
            keys = ("dst", "src", "wgt")
        else:
            parts.append(f"alu.{AluOp(int(row['alu_opcode'])).name.lower()}")
            keys = ("dst", "src")
        parts += [f"uop={row['uop_bgn']}:{row['uop_end']}", _pair(row, "iter")]
        for key in keys:
            if any(row[n] for n in _PAIR_KEYS[key]) or (
                key == "src" and op == Opcode.ALU and not row["use_imm"]
            ):
                parts.append(_pair(row, key))
        if op == Opcode.ALU and row["use_imm"]:
            parts.append(f"imm={row['imm']}")
    elif op == Opcode.SETPAD:
        parts += ["setpad", str(row["pad_value"])]
    elif op == Opcode.FINISH:
        parts.append("finish")
    else:
        parts.append(f"<opcode {op}>")
    parts += [flag for flag in DEP_FLAGS if row[flag]]
    head = parts[0]
    return f"{head:<10} {' '.join(parts[1:])}".rstrip()


def disassemble_lines(program) -> list[str]:
    """One canonical assembly line per instruction (no micro-ops or data)."""
    config = program.config if isinstance(program, Program) else None
    f = decode(program.words if isinstance(program, Program) else program, config)
    return [_line(dict(zip(f.dtype.names, row))) for row in f.tolist()]


def disassemble(program, with_index: bool = False, with_uops: bool = True) -> str:
    """Canonical assembly text; `assemble(disassemble(p))` re-creates `p`'s encodings and
    micro-op image (not the DRAM data directives)."""
    lines = []
    if with_uops and isinstance(program, Program) and len(program.uops):
        for d, s, w in zip(*decode_uops(program.uops, program.config)):
            lines.append(f".uop {d} {s} {w}")
    for n, text in enumerate(disassemble_lines(program)):
        lines.append(f"{text}  // {n}" if with_index else text)
    return "\n".join(lines) + ("\n" if lines else "")
