"""C driver code for a compiled model: what a host program on the board links to run the
accelerator functions, the same sequence `run_compiled` simulates.

`driver_files(compiled)` gives, for the artifact's `driver/` folder:

* `qaccel_vta.h`: the two calls the board support package provides (the device's DRAM image
  and running one instruction stream with its micro-ops to FINISH), and the host callbacks a
  driver function takes;
* `model.h` / `model.c`: per accelerator function `<fn>_init(dev, constants, nbytes)` (copies
  the constants, `vta_fn_k/constants.bin`, behind the arena) and `<fn>_run(dev, host)`, which
  walks the function's steps: hand an arena slot to the host to fill (a tensor the host
  produced), run a layer's instruction stream, hand a slot to the host to read (a tensor a
  host op or the function's result uses), run a segment of host ops. Instruction streams and
  micro-ops are `static const` arrays (16-byte instructions as two little-endian uint64
  words, exactly the artifact's `layer_i.bin`); a table in comments says which tensor each
  slot holds and which ops each host segment runs.
"""

from __future__ import annotations

import numpy as np
from qaccel.backends.vta.compiled import CompiledFunction, CompiledModel
from qaccel.backends.vta.runtime import function_steps
from xdsl.dialects import func

RUNTIME_HEADER = """\
/* qaccel VTA runtime interface: provided by the board support package. */
#ifndef QACCEL_VTA_H
#define QACCEL_VTA_H

#include <stdint.h>

typedef struct qaccel_vta qaccel_vta; /* an opened accelerator */

/* The device-visible DRAM image, at least `nbytes` long, physically contiguous (NULL: none). */
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

#endif
"""


def _array(ctype: str, name: str, values: np.ndarray, per_line: int) -> str:
    flat = [str(int(v)) + ("u" if ctype == "uint32_t" else "ull") for v in values.reshape(-1)]
    if not flat:
        flat = ["0"]  # C forbids empty arrays
    lines = [", ".join(flat[i : i + per_line]) for i in range(0, len(flat), per_line)]
    return f"static const {ctype} {name}[{len(flat)}] = {{\n    " + ",\n    ".join(lines) + "\n};\n"


def _function_c(module, fn: CompiledFunction) -> tuple[str, str]:
    f = next(o for o in module.ops if isinstance(o, func.FuncOp) and o.sym_name.data == fn.name)
    ops = list(f.body.block.ops)
    plan = function_steps(fn, ops)
    steps = plan.steps
    segments = [[f"{ops[i].name} (#{i})" for i in seg] for seg in plan.segments]
    p = fn.name
    up = p.upper()
    const_bytes = len(fn.image) - fn.arena_nbytes
    h = [
        f"/* {p}: {len(fn.layers)} layers; DRAM image {len(fn.image)} bytes: the activation",
        f"   arena [0, {fn.arena_nbytes}), constants from {fn.arena_nbytes}. */",
        f"#define {up}_DRAM_BYTES {len(fn.image)}u",
        f"#define {up}_ARENA_BYTES {fn.arena_nbytes}u",
        f"#define {up}_CONSTANTS_BYTES {const_bytes}u",
        f"int {p}_init(qaccel_vta *dev, const uint8_t *constants, uint32_t nbytes);",
        f"int {p}_run(qaccel_vta *dev, const qaccel_host *host);",
        "",
    ]
    c = [
        f"/* ---- {p} ---- */",
        "/* Arena slots (byte offset, bytes, tensor as a value reference [op position, result];",
        "   [-1, i] is argument i):",
    ]
    for k, s in enumerate(fn.slots):
        role = "host writes" if s.host_writes else ("host reads" if s.host_reads else "on chip")
        c.append(f"   slot {k}: offset {s.offset}, {s.nbytes} bytes, value {s.value}, {role}")
    c.append("   Host segments:")
    for n, seg in enumerate(segments):
        c.append(f"   segment {n}: {', '.join(seg)}")
    c.append("*/")
    for lay in fn.layers:
        c.append(f"/* layer {lay.index}: {lay.description} */")
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

int {p}_run(qaccel_vta *dev, const qaccel_host *host) {{
    return run_steps(dev, host, qaccel_vta_dram(dev, {up}_DRAM_BYTES), {p}_steps,
                     {len(steps)}u, {p}_layers, {p}_slot_offset, {p}_slot_bytes);
}}
""")
    return "\n".join(h), "\n".join(c)


_C_PRELUDE = """\
/* Generated by qaccel-compile: the accelerator functions' instruction streams and the host
   sequence around them. Link with a qaccel_vta.h implementation. */
#include <string.h>

#include "model.h"

typedef struct {
    const uint64_t *insns;
    uint32_t n_insns;
    const uint32_t *uops;
    uint32_t n_uops;
} qaccel_layer;

typedef struct {
    int kind; /* 0 write slot, 1 run layer, 2 read slot, 3 host segment */
    int arg;
} qaccel_step;

static int run_steps(qaccel_vta *dev, const qaccel_host *host, uint8_t *dram,
                     const qaccel_step *steps, uint32_t n_steps, const qaccel_layer *layers,
                     const uint32_t *slot_offset, const uint32_t *slot_bytes) {
    uint32_t i;
    int rc = 0;
    if (!dram) return -1;
    for (i = 0; i < n_steps && rc == 0; i++) {
        int a = steps[i].arg;
        switch (steps[i].kind) {
        case 0: rc = host->write_slot(host->ctx, a, dram + slot_offset[a], slot_bytes[a]); break;
        case 1:
            rc = qaccel_vta_run(dev, layers[a].insns, layers[a].n_insns, layers[a].uops,
                                layers[a].n_uops);
            break;
        case 2: rc = host->read_slot(host->ctx, a, dram + slot_offset[a], slot_bytes[a]); break;
        case 3: rc = host->host_ops(host->ctx, a); break;
        default: break;
        }
    }
    return rc;
}

"""


def driver_files(compiled: CompiledModel) -> dict[str, bytes]:
    """`driver/qaccel_vta.h`, `driver/model.h`, `driver/model.c` and every function's
    `constants.bin` (relative artifact paths -> bytes)."""
    headers, sources = [], []
    files: dict[str, bytes] = {}
    for name, fn in compiled.functions.items():
        h, c = _function_c(compiled.module, fn)
        headers.append(h)
        sources.append(c)
        files[f"{name}/constants.bin"] = fn.image[fn.arena_nbytes :].tobytes()
    model_h = ("/* Generated by qaccel-compile. */\n#ifndef QACCEL_MODEL_H\n#define QACCEL_MODEL_H\n\n"
               '#include "qaccel_vta.h"\n\n' + "\n".join(headers) + "\n#endif\n")  # fmt: skip
    files["driver/qaccel_vta.h"] = RUNTIME_HEADER.encode()
    files["driver/model.h"] = model_h.encode()
    files["driver/model.c"] = (_C_PRELUDE + "\n".join(sources)).encode()
    return files
