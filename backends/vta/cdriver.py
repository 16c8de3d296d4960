"""C driver code for a compiled model: what a host program on the board links to run the
accelerator functions, each through the one program runner (`backends/vta/program/`).

`driver_files(compiled)` gives, for the artifact's `driver/` folder:

* `<fn>.qprog` per accelerator function: its program (`program/writer.py`'s
  `function_program`: the format every consumer runs, with the function's own packed inputs
  and outputs, as the host program calls it), which the program runner opens, checks and runs
  (`qaccel_program.h`: open, state, run);
* `qaccel_program.h`: the program runner's API (a copy of the package's), with the
  board-support boundary: a `qaccel_device` (the device-visible DRAM image and running one
  instruction stream with its micro-ops to FINISH) that a state runs its layers on instead of
  the C machine;
* `qaccel_vta.h`: the two calls a board support package provides for that device
  (`qaccel_vta_dram`, `qaccel_vta_run`) and the table `model.c` exports;
* `model.h` / `model.c`: the table of the model's accelerator functions by name (their
  program files, sizes, inputs, outputs and layers; a comment lists each one's tensors and
  layers) and `QACCEL_HW_*`, the hardware configuration the streams were compiled for, so a
  generic runner (`backends/vta/runner/qaccel_runner.c`, on the program runner and
  libqaccel_vta) or a board support package can find, check and run any of them.

A function the program runner cannot run (a host op it does not implement, host ops reading
constants) has no program: `driver_files` names it in `model.c` with no program file, and the
C driver refuses to run it (one line).

Names from the model (tensor names, function symbols, the configuration's name) reach the C
text only through `c_identifier` (identifiers), `c_string` (string literals) and `c_comment`
(comments): printable ASCII, with everything that could end a comment, start a directive or
form a trigraph escaped.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import numpy as np
from qaccel.backends.vta.compiled import CompiledFunction, CompiledModel
from qaccel.backends.vta.program.writer import ProgramWriteError, function_program
from qaccel.dialects.names import location_name
from qaccel.targets.vta.config import MACHINE_KEYS
from xdsl.dialects import func
from xdsl.ir import Operation

# HardwareConfig keys the machine needs (vta_config of targets/vta/machine/vta_machine.h).
HW_KEYS = MACHINE_KEYS
PROGRAM_HEADER = Path(__file__).with_name("program") / "qaccel_program.h"

_C_KEYWORDS = frozenset("""auto break case char const continue default do double else enum extern
float for goto if inline int long register restrict return short signed sizeof static struct
switch typedef union unsigned void volatile while _Bool _Complex _Imaginary""".split())
_IDENT = re.compile(r"[a-z][a-z0-9_]*\Z")  # lower case: `NAME_DRAM_BYTES` macros stay distinct


def c_identifier(name: str) -> str:
    """`name` when it is a plain C identifier (not a keyword, not reserved); otherwise its
    letters, digits and underscores plus a digest of the whole name (distinct names stay
    distinct)."""
    if (_IDENT.match(name) and name not in _C_KEYWORDS and len(name) <= 48
            and not name.startswith("qaccel")):  # fmt: skip
        return name
    digest = hashlib.sha256(name.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    stem = re.sub(r"[^A-Za-z0-9_]", "_", name.encode("ascii", "replace").decode())[:32]
    return f"q_{stem.strip('_') or 'fn'}_{digest}"


def _escaped_bytes(text: str) -> list[str]:
    """Printable ASCII characters as themselves, every other byte (UTF-8) as \\xNN."""
    out = []
    for b in text.encode("utf-8", "surrogateescape"):
        out.append(chr(b) if 0x20 <= b < 0x7F else f"\\x{b:02x}")
    return out


def c_comment(text: str) -> str:
    """`text` for the inside of a /* */ comment on one line: no newline or other control or
    non-ASCII byte (shown as \\xNN), no `*/` or `/*`, no trigraph, backslashes doubled."""
    out = "".join("\\\\" if c == "\\" else c for c in _escaped_bytes(text))
    out = out.replace("*/", "*\\/").replace("/*", "/\\*")
    while "??" in out:
        out = out.replace("??", "?\\?")
    return out


def c_string(text: str) -> str:
    """`text` as a C string literal (UTF-8 bytes; octal escapes, which never run on)."""
    out = []
    for b in text.encode("utf-8", "surrogateescape"):
        c = chr(b)
        if c in "\\\"?" or not 0x20 <= b < 0x7F:
            out.append(f"\\{b:03o}")
        else:
            out.append(c)
    return '"' + "".join(out) + '"'


RUNTIME_HEADER = """\
/* qaccel VTA runtime interface: the board-support boundary of the generated driver.

   Each accelerator function is a program (driver/<fn>.qprog) that the program runner
   (qaccel_program.h, backends/vta/program/qaccel_program.c) opens, checks and runs. On qaccel's
   C machine (backends/vta/runner/qaccel_runner.c) the runner executes every layer itself. On a
   board, the board support package provides the two calls below, and the host program hands
   them to each run state as its device:

       static uint8_t *device_dram(void *ctx, uint64_t n) {
           return qaccel_vta_dram((qaccel_vta *)ctx, (uint32_t)n);
       }
       static int device_run(void *ctx, const uint64_t *insns, uint32_t n, const uint32_t *uops,
                             uint32_t n_uops, char error[QACCEL_ERROR_BYTES]) {
           (void)error;
           return qaccel_vta_run((qaccel_vta *)ctx, insns, n, uops, n_uops);
       }
       qaccel_device device = {dev, device_dram, device_run};
       qaccel_state_set_device(state, &device);

   The runner then writes the arena slots the layers read into that DRAM image, runs each
   layer's stream there, reads the slots back and runs the function's host ops itself. */
#ifndef QACCEL_VTA_H
#define QACCEL_VTA_H

#include <stdint.h>

#include "qaccel_program.h"

typedef struct qaccel_vta qaccel_vta; /* an opened accelerator */

/* The device-visible DRAM image, at least `nbytes` long, physically contiguous (NULL: none).
   Asked again with the same size, it returns the same image, contents kept. */
uint8_t *qaccel_vta_dram(qaccel_vta *dev, uint32_t nbytes);

/* Run `n_insns` 16-byte instructions (two uint64 words each) to FINISH, with the micro-op
   image `uops` for LOAD UOP. 0 on success. */
int qaccel_vta_run(qaccel_vta *dev, const uint64_t *insns, uint32_t n_insns,
                   const uint32_t *uops, uint32_t n_uops);

/* What the generated model.c exports: its accelerator functions, by their names in host.mlir,
   each with its program (a file relative to the artifact, NULL when the function has none),
   and the hardware configuration their instruction streams were compiled for, so a runner
   (qaccel's on the C machine, or a board's) can find, check and run any of them. */
typedef struct qaccel_function {
    const char *name;
    const char *program;        /* "driver/<fn>.qprog", or NULL: no program (see model.c) */
    uint64_t program_bytes;
    uint32_t n_inputs, n_outputs, n_layers;
} qaccel_function;
extern const qaccel_function qaccel_model_functions[];
extern const int qaccel_model_n_functions;
/* HardwareConfig's name and, in this order, log_block, log_uop_buff_size, log_inp_buff_size,
   log_wgt_buff_size, log_acc_buff_size, bus_width_bytes, dma_setup_cycles, insn_issue_cycles,
   gemm_cycles_per_uop, alu_cycles_per_uop, store_requant (QACCEL_HW_* in model.h). */
extern const char qaccel_model_hw_name[];
extern const int64_t qaccel_model_hw[11];

#endif
"""


def program_file(name: str) -> str:
    """The artifact path of accelerator function `name`'s program."""
    return f"driver/{c_identifier(name)}.qprog"


def _argument_names(module, name: str) -> list[str | None]:
    """The model's names of an accelerator function's arguments: what its first call site
    passes (through the `accel.pack` in front of the call), as the importer named it."""
    from qaccel.dialects import accel

    for call in module.walk():
        if isinstance(call, func.CallOp) and call.callee.string_value() == name:
            names = []
            for v in call.operands:
                owner = v.owner
                if isinstance(owner, accel.PackOp):
                    v = owner.operands[0]
                    owner = v.owner
                names.append(location_name(owner if isinstance(owner, Operation) else v))
            return names
    return []


def _shape(t) -> str:
    from qaccel.dialects.types import tensor_dtype

    dims = "x".join(str(d) for d in t.get_shape())
    return f"{np.dtype(tensor_dtype(t)).name}[{dims}]"


def _function_c(module, fn: CompiledFunction, program: bytes | None,
                why: str) -> tuple[str, str, str]:  # fmt: skip
    """(model.h part, model.c comment, table entry) of accelerator function `fn`."""
    f = next(o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == fn.name)
    arg_names = _argument_names(module, fn.name)
    p = c_identifier(fn.name)
    up = p.upper()
    shown = "" if p == fn.name else f" (@{c_comment(fn.name)})"
    ins = f.function_type.inputs.data
    outs = f.function_type.outputs.data
    size = len(program) if program is not None else 0
    h = [
        f"/* {p}{shown}: {len(fn.layers)} layers, {len(ins)} inputs, {len(outs)} outputs; its",
        f"   program {c_comment(program_file(fn.name)) if program is not None else '(none)'}. */",
        f"#define {up}_PROGRAM_BYTES {size}u",
        "",
    ]
    c = [f"/* ---- {p}{shown}"]
    if program is None:
        c.append(f"   No program: {c_comment(why)}")
    c.append("   Inputs (packed, as the host program passes them):")
    for k, t in enumerate(ins):
        name = arg_names[k] if k < len(arg_names) else None
        named = f' "{c_comment(name)}"' if name else ""
        c.append(f"   {k}: {_shape(t)}{named}")
    c.append("   Outputs (packed):")
    for k, t in enumerate(outs):
        c.append(f"   {k}: {_shape(t)}")
    c.append("   Layers:")
    for lay in fn.layers:
        c.append(f"   {lay.index}: {c_comment(lay.description)} ({len(lay.words)} instructions, "
                 f"{len(lay.uops)} micro-ops)")  # fmt: skip
    c.append("*/")
    path = c_string(program_file(fn.name)) if program is not None else "0"
    entry = (f"    {{{c_string(fn.name)}, {path}, {up}_PROGRAM_BYTES, {len(ins)}u, {len(outs)}u, "
             f"{len(fn.layers)}u}},")  # fmt: skip
    return "\n".join(h), "\n".join(c), entry


_C_PRELUDE = """\
/* Generated by qaccel-compile: the model's accelerator functions, each a program the program
   runner (qaccel_program.h) opens and runs. Board-neutral: run them with qaccel's runner on
   the C machine, or with any qaccel_vta.h implementation as the states' device. */
#include "model.h"

"""

_MODEL_H_TABLE = """\
/* The hardware configuration the instruction streams were compiled for (HardwareConfig's
   keys; also qaccel_model_hw); a device must match it. */
{config}

#define QACCEL_MODEL_N_FUNCTIONS {n}
"""


def _config_defines(config) -> str:
    lines = [f"#define QACCEL_HW_NAME {c_string(str(config.name))}"]
    for key in HW_KEYS:
        lines.append(f"#define QACCEL_HW_{key.upper()} {int(getattr(config, key))}")
    return "\n".join(lines)


def function_programs(compiled: CompiledModel) -> dict[str, tuple[bytes | None, str]]:
    """Each accelerator function's program (None and the reason when it has none)."""
    out: dict[str, tuple[bytes | None, str]] = {}
    for name in compiled.functions:
        try:
            out[name] = (function_program(compiled, name), "")
        except ProgramWriteError as e:
            out[name] = (None, str(e))
    return out


def driver_files(compiled: CompiledModel,
                 programs: dict[str, tuple[bytes | None, str]] | None = None,
                 ) -> dict[str, bytes]:  # fmt: skip
    """`driver/qaccel_program.h`, `qaccel_vta.h`, `model.h`, `model.c` and every function's
    `driver/<fn>.qprog` (relative artifact paths -> bytes); `programs` from
    `function_programs` when the caller has them."""
    programs = programs if programs is not None else function_programs(compiled)
    headers, sources, table = [], [], []
    files: dict[str, bytes] = {}
    for name, fn in compiled.functions.items():
        program, why = programs[name]
        h, c, entry = _function_c(compiled.module, fn, program, why)
        headers.append(h)
        sources.append(c)
        table.append(entry)
        if program is not None:
            files[program_file(name)] = program
    size = max(1, len(table))
    if not table:
        table.append("    {0, 0, 0u, 0u, 0u, 0u},")
    model_h = ("/* Generated by qaccel-compile. */\n"
               "#ifndef QACCEL_MODEL_H\n#define QACCEL_MODEL_H\n\n"
               '#include "qaccel_vta.h"\n\n' + "\n".join(headers) + "\n"
               + _MODEL_H_TABLE.format(config=_config_defines(compiled.config),
                                       n=len(compiled.functions))
               + "\n#endif\n")  # fmt: skip
    hw = ", ".join(f"QACCEL_HW_{key.upper()}" for key in HW_KEYS)
    model_c = (_C_PRELUDE + "\n".join(sources)
               + f"\nconst qaccel_function qaccel_model_functions[{size}] = {{\n"
               + "\n".join(table) + "\n};\n"
               + "const int qaccel_model_n_functions = QACCEL_MODEL_N_FUNCTIONS;\n"
               + "const char qaccel_model_hw_name[] = QACCEL_HW_NAME;\n"
               + f"const int64_t qaccel_model_hw[{len(HW_KEYS)}] = {{{hw}}};\n")  # fmt: skip
    files["driver/qaccel_program.h"] = PROGRAM_HEADER.read_bytes()
    files["driver/qaccel_vta.h"] = RUNTIME_HEADER.encode()
    files["driver/model.h"] = model_h.encode()
    files["driver/model.c"] = model_c.encode()
    return files
