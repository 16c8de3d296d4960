"""C driver code for a compiled model: what a host program on the board links to run the
accelerator functions, the same sequence `run_compiled` simulates.

`driver_files(compiled)` gives, for the artifact's `driver/` folder:

* `qaccel_vta.h`: the two calls the board support package provides (the device's DRAM image
  and running one instruction stream with its micro-ops to FINISH), the host callbacks a
  driver function takes, and where a failing driver function stopped (`qaccel_where`);
* `model.h` / `model.c`: per accelerator function `<fn>_init(dev, constants, nbytes)` (copies
  the constants, `vta_fn_k/constants.bin`, behind the arena) and `<fn>_run(dev, host, where)`,
  which walks the function's steps: hand an arena slot to the host to fill (a tensor the host
  produced), run a layer's instruction stream, hand a slot to the host to read (a tensor a
  host op or the function's result uses), run a segment of host ops. Instruction streams and
  micro-ops are `static const` arrays (16-byte instructions as two little-endian uint64
  words, exactly the artifact's `layer_i.bin`); a table in comments says which tensor each
  slot holds and which ops each host segment runs. `qaccel_model_functions` lists the
  functions by name, and `QACCEL_HW_*` is the hardware configuration the streams were compiled
  for, so a generic runner (`backends/vta/runner/qaccel_runner.c`, on libqaccel_vta) or a
  board support package can check and run any of them.

Names from the model (tensor names, function symbols, the configuration's name) reach the C
text only through `c_identifier` (identifiers), `c_string` (string literals) and `c_comment`
(comments): printable ASCII, with everything that could end a comment, start a directive or
form a trigraph escaped.
"""

from __future__ import annotations

import hashlib
import re

import numpy as np
from qaccel.backends.vta.compiled import CompiledFunction, CompiledModel
from qaccel.backends.vta.runtime import function_steps
from qaccel.dialects.names import location_name
from qaccel.targets.vta.config import MACHINE_KEYS
from xdsl.dialects import func
from xdsl.ir import Operation

# HardwareConfig keys the machine needs (vta_config of targets/vta/machine/vta_machine.h).
HW_KEYS = MACHINE_KEYS

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
/* qaccel VTA runtime interface: provided by the board support package (qaccel's own
   implementation on the C machine is backends/vta/runner/qaccel_runner.c). */
#ifndef QACCEL_VTA_H
#define QACCEL_VTA_H

#include <stdint.h>

typedef struct qaccel_vta qaccel_vta; /* an opened accelerator */

/* The device-visible DRAM image, at least `nbytes` long, physically contiguous (NULL: none).
   Asked again with the same size, it returns the same image, contents kept. */
uint8_t *qaccel_vta_dram(qaccel_vta *dev, uint32_t nbytes);

/* Run `n_insns` 16-byte instructions (two uint64 words each) to FINISH, with the micro-op
   image `uops` for LOAD UOP. 0 on success. */
int qaccel_vta_run(qaccel_vta *dev, const uint64_t *insns, uint32_t n_insns,
                   const uint32_t *uops, uint32_t n_uops);

/* What a driver function asks of the host program; each returns 0 on success. */
typedef struct qaccel_host {
    void *ctx;
    /* Fill arena slot `slot` (a tensor the host produced, packed) at `dst`. */
    int (*write_slot)(void *ctx, int slot, uint8_t *dst, uint32_t nbytes);
    /* Arena slot `slot` at `src` was just written by a layer and is needed on the host. */
    int (*read_slot)(void *ctx, int slot, const uint8_t *src, uint32_t nbytes);
    /* Run the host ops of segment `segment` (listed in model.c). */
    int (*host_ops)(void *ctx, int segment);
} qaccel_host;

/* Where a driver function stopped when it returned nonzero: its step index, the step's kind
   (QACCEL_STEP_*) and argument (slot, layer or segment index). */
enum { QACCEL_STEP_WRITE = 0, QACCEL_STEP_LAYER = 1, QACCEL_STEP_READ = 2, QACCEL_STEP_HOST = 3 };
typedef struct qaccel_where {
    int step;
    int kind;
    int arg;
} qaccel_where;

/* What the generated model.c exports: its accelerator functions, by their names in host.mlir,
   and the hardware configuration their instruction streams were compiled for, so a runner
   (qaccel's on the C machine, or a board's) can find, check and run any of them. */
typedef struct qaccel_function {
    const char *name;
    uint32_t dram_bytes, arena_bytes, constants_bytes, n_layers;
    int (*init)(qaccel_vta *dev, const uint8_t *constants, uint32_t nbytes);
    int (*run)(qaccel_vta *dev, const qaccel_host *host, qaccel_where *where);
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


def _array(ctype: str, name: str, values: np.ndarray, per_line: int) -> str:
    suffix = "u" if ctype == "uint32_t" else "ull"
    flat = [f"{v}{suffix}" for v in np.asarray(values).reshape(-1).tolist()]  # Python ints
    if not flat:
        flat = ["0"]  # C forbids empty arrays
    lines = [", ".join(flat[i : i + per_line]) for i in range(0, len(flat), per_line)]
    return f"static const {ctype} {name}[{len(flat)}] = {{\n    " + ",\n    ".join(lines) + "\n};\n"


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


def _tensor(ref, arg_names: list[str | None]) -> str:
    """` "name"` of the tensor a value reference names, sanitized; "" when it has none (the
    partitioning keeps names only outside accelerator functions)."""
    name = arg_names[ref[1]] if ref[0] < 0 and ref[1] < len(arg_names) else None
    return f' "{c_comment(name)}"' if name else ""


def _function_c(module, fn: CompiledFunction) -> tuple[str, str, str]:
    """(model.h part, model.c part, the C name) of accelerator function `fn`."""
    f = next(o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == fn.name)
    ops = list(f.body.block.ops)
    plan = function_steps(fn, ops)
    steps = plan.steps
    arg_names = _argument_names(module, fn.name)
    segments = [
        [f"{c_comment(ops[i].name)} (#{i})" for i in seg] for seg in plan.segments
    ]  # fmt: skip
    p = c_identifier(fn.name)
    up = p.upper()
    const_bytes = len(fn.image) - fn.arena_nbytes
    shown = "" if p == fn.name else f" (@{c_comment(fn.name)})"
    h = [
        f"/* {p}{shown}: {len(fn.layers)} layers; DRAM image {len(fn.image)} bytes: the activation",
        f"   arena [0, {fn.arena_nbytes}), constants from {fn.arena_nbytes}. */",
        f"#define {up}_DRAM_BYTES {len(fn.image)}u",
        f"#define {up}_ARENA_BYTES {fn.arena_nbytes}u",
        f"#define {up}_CONSTANTS_BYTES {const_bytes}u",
        f"int {p}_init(qaccel_vta *dev, const uint8_t *constants, uint32_t nbytes);",
        f"int {p}_run(qaccel_vta *dev, const qaccel_host *host, qaccel_where *where);",
        "",
    ]
    c = [
        f"/* ---- {p}{shown} ---- */",
        "/* Arena slots (byte offset, bytes, tensor as a value reference [op position, result];",
        "   [-1, i] is argument i, with its name in the model):",
    ]
    for k, s in enumerate(fn.slots):
        role = "host writes" if s.host_writes else ("host reads" if s.host_reads else "on chip")
        c.append(f"   slot {k}: offset {s.offset}, {s.nbytes} bytes, value {s.value}"
                 f"{_tensor(s.value, arg_names)}, {role}")  # fmt: skip
    c.append("   Host segments:")
    for n, seg in enumerate(segments):
        c.append(f"   segment {n}: {', '.join(seg)}")
    c.append("*/")
    for lay in fn.layers:
        c.append(f"/* layer {lay.index}: {c_comment(lay.description)} */")
        words = np.asarray(lay.words, np.uint64)
        c.append(_array("uint64_t", f"{p}_layer{lay.index}_insns", words, 4))
        c.append(_array("uint32_t", f"{p}_layer{lay.index}_uops", np.asarray(lay.uops), 8))
    c.append(f"static const qaccel_layer {p}_layers[{max(1, len(fn.layers))}] = {{")
    for lay in fn.layers:
        c.append(f"    {{{p}_layer{lay.index}_insns, {len(lay.words)}u, "
                 f"{p}_layer{lay.index}_uops, {len(lay.uops)}u}},")  # fmt: skip
    if not fn.layers:
        c.append("    {0, 0u, 0, 0u},")
    c.append("};")
    c.append(f"static const qaccel_step {p}_steps[{max(1, len(steps))}] = {{")
    c.extend(f"    {{{kind}, {arg}}}," for kind, arg in steps)
    if not steps:
        c.append("    {-1, 0},")
    c.append("};")
    offsets = ", ".join(f"{s.offset}u" for s in fn.slots) or "0u"
    sizes = ", ".join(f"{s.nbytes}u" for s in fn.slots) or "0u"
    c.append(f"static const uint32_t {p}_slot_offset[{max(1, len(fn.slots))}] = {{{offsets}}};")
    c.append(f"static const uint32_t {p}_slot_bytes[{max(1, len(fn.slots))}] = {{{sizes}}};")
    c.append(f"""
int {p}_init(qaccel_vta *dev, const uint8_t *constants, uint32_t nbytes) {{
    uint8_t *dram = qaccel_vta_dram(dev, {up}_DRAM_BYTES);
    if (!dram || nbytes != {up}_CONSTANTS_BYTES) return -1;
    memset(dram, 0, {up}_ARENA_BYTES);
    memcpy(dram + {up}_ARENA_BYTES, constants, nbytes);
    return 0;
}}

int {p}_run(qaccel_vta *dev, const qaccel_host *host, qaccel_where *where) {{
    return qaccel_run_steps(dev, host, qaccel_vta_dram(dev, {up}_DRAM_BYTES), {p}_steps,
                            {len(steps)}u, {p}_layers, {p}_slot_offset, {p}_slot_bytes, where);
}}
""")
    return "\n".join(h), "\n".join(c), p


_C_PRELUDE = """\
/* Generated by qaccel-compile: the accelerator functions' instruction streams and the host
   sequence around them. Board-neutral: link with any qaccel_vta.h implementation (a board
   support package on the hardware, or qaccel's runner on the C machine). */
#include <string.h>

#include "model.h"

typedef struct {
    const uint64_t *insns;
    uint32_t n_insns;
    const uint32_t *uops;
    uint32_t n_uops;
} qaccel_layer;

typedef struct {
    int kind; /* QACCEL_STEP_*: 0 write slot, 1 run layer, 2 read slot, 3 host segment */
    int arg;
} qaccel_step;

"""

_C_RUN_STEPS = """\
static int qaccel_run_steps(qaccel_vta *dev, const qaccel_host *host, uint8_t *dram,
                            const qaccel_step *steps, uint32_t n_steps,
                            const qaccel_layer *layers, const uint32_t *slot_offset,
                            const uint32_t *slot_bytes, qaccel_where *where) {
    uint32_t i;
    int rc = 0;
    if (!dram) return -1;
    for (i = 0; i < n_steps; i++) {
        int a = steps[i].arg;
        switch (steps[i].kind) {
        case QACCEL_STEP_WRITE:
            rc = host->write_slot(host->ctx, a, dram + slot_offset[a], slot_bytes[a]);
            break;
        case QACCEL_STEP_LAYER:
            rc = qaccel_vta_run(dev, layers[a].insns, layers[a].n_insns, layers[a].uops,
                                layers[a].n_uops);
            break;
        case QACCEL_STEP_READ:
            rc = host->read_slot(host->ctx, a, dram + slot_offset[a], slot_bytes[a]);
            break;
        case QACCEL_STEP_HOST: rc = host->host_ops(host->ctx, a); break;
        default: break;
        }
        if (rc != 0) {
            if (where) {
                where->step = (int)i;
                where->kind = steps[i].kind;
                where->arg = a;
            }
            return rc;
        }
    }
    return 0;
}

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


def driver_files(compiled: CompiledModel) -> dict[str, bytes]:
    """`driver/qaccel_vta.h`, `driver/model.h`, `driver/model.c` and every function's
    `constants.bin` (relative artifact paths -> bytes)."""
    headers, sources, table = [], [], []
    files: dict[str, bytes] = {}
    for name, fn in compiled.functions.items():
        h, c, p = _function_c(compiled.module, fn)
        headers.append(h)
        sources.append(c)
        up = p.upper()
        table.append(f"    {{{c_string(name)}, {up}_DRAM_BYTES, {up}_ARENA_BYTES, "
                     f"{up}_CONSTANTS_BYTES, {len(fn.layers)}u, {p}_init, {p}_run}},")  # fmt: skip
        files[f"{name}/constants.bin"] = fn.image[fn.arena_nbytes :].tobytes()
    size = max(1, len(table))
    if not table:
        table.append("    {0, 0u, 0u, 0u, 0u, 0, 0},")
    model_h = ("/* Generated by qaccel-compile. */\n#ifndef QACCEL_MODEL_H\n#define QACCEL_MODEL_H\n\n"
               '#include "qaccel_vta.h"\n\n' + "\n".join(headers) + "\n"
               + _MODEL_H_TABLE.format(config=_config_defines(compiled.config),
                                       n=len(compiled.functions), size=size)
               + "\n#endif\n")  # fmt: skip
    hw = ", ".join(f"QACCEL_HW_{key.upper()}" for key in HW_KEYS)
    run_steps = _C_RUN_STEPS if compiled.functions else ""  # unused static: -Werror
    model_c = (_C_PRELUDE + run_steps + "\n".join(sources)
               + f"\nconst qaccel_function qaccel_model_functions[{size}] = {{\n"
               + "\n".join(table) + "\n};\n"
               + "const int qaccel_model_n_functions = QACCEL_MODEL_N_FUNCTIONS;\n"
               + "const char qaccel_model_hw_name[] = QACCEL_HW_NAME;\n"
               + f"const int64_t qaccel_model_hw[{len(HW_KEYS)}] = {{{hw}}};\n")  # fmt: skip
    files["driver/qaccel_vta.h"] = RUNTIME_HEADER.encode()
    files["driver/model.h"] = model_h.encode()
    files["driver/model.c"] = model_c.encode()
    return files
