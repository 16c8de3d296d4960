/* A GEMM layer's instruction stream emitted in C: the loop nest of its schedule walked step by
 * step (slots, loads, GEMMs, tails, stores, micro-op kernels) as lowering/vta/emit.py's
 * `_Emitter.run` does, then resolved by vta_stream_resolve (tokens, micro-ops, encoding).
 * The Python emitter is the reference: tests/test_vta_cstream.py checks both give the same
 * programs. The parameters are untrusted: every size and index is checked, and anything
 * this file does not handle is refused (the caller then runs the Python emitter). */
#include "vta_stream.h"
#include "../tiling_c/vta_tiling.h"

#include <stdlib.h>
#include <string.h>

/* Columns of a row (isa.FIELD_NAMES; cstream.C_FIELDS checks the order). */
enum {
    F_OPCODE = 0, F_POP_PREV, F_POP_NEXT, F_PUSH_PREV, F_PUSH_NEXT, F_MEM, F_SRAM, F_DRAM,
    F_YSIZE, F_XSIZE, F_XSTRIDE, F_YPAD0, F_YPAD1, F_XPAD0, F_XPAD1, F_RESET, F_UOP_BGN,
    F_UOP_END, F_ITER_OUT, F_ITER_IN, F_DST_OUT, F_DST_IN, F_SRC_OUT, F_SRC_IN, F_WGT_OUT,
    F_WGT_IN, F_ALU_OP, F_USE_IMM, F_IMM, F_PAD_VALUE, F_CLEAR, F_PARAM_ROW, F_PARAM_Y,
    F_PARAM_X
};
enum { OP_LOAD = 0, OP_STORE = 1, OP_GEMM = 2, OP_FINISH = 3, OP_ALU = 4, OP_SETPAD = 5 };
enum { MEM_WGT = 1, MEM_INP = 2, MEM_ACC = 3, MEM_OUT = 4, MEM_OUTQ = 6 };
enum { ALU_MIN = 0, ALU_MAX = 1, ALU_ADD = 2, ALU_SHR = 3, ALU_RDMUL = 5, ALU_RSHR = 6 };
enum { M_LOAD = 0, M_COMPUTE = 1, M_STORE = 2 };
enum { MAX_PAD = 15, MAX_STRIDE = 0xFFFF, MAX_SIDE = 1 << 20 };
#define MAX_ELEMS VTA_GEMM_MAX_ELEMS

typedef struct {
    int64_t tile, spatial, oy0, th, ox0, tw, co0, nco, ci0, nci, first, last;
} step_t;

typedef struct { /* one planned load: a chunk of step `step`, into `slot` (part -1: all) */
    int64_t kind, step, slot, part; /* kind 0 inp, 1 wgt */
} load_t;

typedef struct { /* a growable array of int64 */
    int64_t *v;
    int64_t n, cap;
} vec_t;

/* Room for `more` values: 0, or -1 when out of memory. */
static int reserve(vec_t *a, int64_t more) {
    if (a->n + more <= a->cap)
        return 0;
    int64_t cap = a->cap ? 2 * a->cap : 256;
    while (cap < a->n + more)
        cap *= 2;
    int64_t *v = realloc(a->v, sizeof(int64_t) * (size_t)cap);
    if (!v)
        return -1;
    a->v = v, a->cap = cap;
    return 0;
}

static int push(vec_t *a, int64_t x) {
    if (a->n == a->cap && reserve(a, 1))
        return -1;
    a->v[a->n++] = x;
    return 0;
}

typedef struct {
    const int64_t *p;
    int failed;            /* a VTA_STREAM_* code, sticky */
    /* instructions: rows [n][NF], per instruction module, kernel, sub, access slots */
    vec_t rows, recs, reads, read_ptr, writes, write_ptr;
    /* kernels: keys [9 each], sizes, the micro-op words of all, in registration order */
    vec_t kkeys, ksizes, uops;
    int64_t image;
    int64_t uop_depth;     /* the micro-op buffer's: no kernel is larger */
    /* weight slots: the chunk each holds (5 ints) and the output blocks of it loaded */
    int64_t *held;         /* [wgt_slots][5], held[0] = -1: none */
    unsigned char *parts;  /* [wgt_slots][tco + 1]: part loaded (index tco: the whole) */
    int64_t *zeroed;       /* [acc_slots] */
    int64_t slot_base[8];  /* slot ids: inp, wgt, acc, inpc, wgtc, biasc, params */
} em_t;

#define P(k) (e->p[VTA_GEMM_##k])

/* The product of `n` non-negative factors, or `limit` + 1 when it is above `limit` (> 0):
 * computed without overflow whatever the factors. */
static int64_t product_upto(const int64_t *f, int n, int64_t limit) {
    int64_t acc = 1;
    for (int k = 0; k < n; k++) {
        if (f[k] == 0)
            return 0;
        if (acc > limit / f[k])
            acc = limit + 1; /* stays above the limit: later factors are >= 1 or 0 */
        else
            acc *= f[k];
    }
    return acc;
}

/* Slot ids of the accesses (`_Stream.add`'s reads and writes). */
static int64_t s_inp(em_t *e, int64_t s) { return e->slot_base[0] + s; }
static int64_t s_wgt(em_t *e, int64_t s) { return e->slot_base[1] + s; }
static int64_t s_acc(em_t *e, int64_t s) { return e->slot_base[2] + s; }
#define S_INPC(e) ((e)->slot_base[3])
#define S_WGTC(e) ((e)->slot_base[3] + 1)
#define S_BIASC(e) ((e)->slot_base[3] + 2)
#define S_PARAMS(e) ((e)->slot_base[3] + 3)

/* Append an instruction: its row, module, kernel (-1) and micro-op (-1), slots read, written. */
static void add(em_t *e, const int64_t *row, int64_t module, int64_t kernel, int64_t sub,
                const int64_t *reads, int nr, const int64_t *writes, int nw) {
    if (e->failed)
        return;
    if (e->recs.n / 3 >= VTA_GEMM_MAX_INSNS) {
        e->failed = VTA_STREAM_BAD_INPUT;
        return;
    }
    int bad = reserve(&e->rows, VTA_STREAM_NF);
    if (!bad) {
        memcpy(e->rows.v + e->rows.n, row, sizeof(int64_t) * VTA_STREAM_NF);
        e->rows.n += VTA_STREAM_NF;
    }
    bad |= push(&e->recs, module) | push(&e->recs, kernel) | push(&e->recs, sub);
    for (int k = 0; k < nr; k++)
        bad |= push(&e->reads, reads[k]);
    for (int k = 0; k < nw; k++)
        bad |= push(&e->writes, writes[k]);
    bad |= push(&e->read_ptr, e->reads.n) | push(&e->write_ptr, e->writes.n);
    if (bad)
        e->failed = VTA_STREAM_NOMEM;
}

static void load(em_t *e, int64_t mem, int64_t sram, int64_t dram, int64_t y, int64_t x,
                 int64_t stride, int64_t ypad0, int64_t ypad1, int64_t xpad0, int64_t xpad1,
                 int64_t module, int64_t wslot) {
    int64_t row[VTA_STREAM_NF] = {0};
    row[F_OPCODE] = OP_LOAD, row[F_MEM] = mem, row[F_SRAM] = sram, row[F_DRAM] = dram;
    row[F_YSIZE] = y, row[F_XSIZE] = x, row[F_XSTRIDE] = stride;
    row[F_YPAD0] = ypad0, row[F_YPAD1] = ypad1, row[F_XPAD0] = xpad0, row[F_XPAD1] = xpad1;
    add(e, row, module, -1, -1, NULL, 0, &wslot, 1);
}

static void gemm(em_t *e, int64_t kernel, int64_t sub, int64_t n_out, int64_t n_in,
                 const int64_t dst[2], const int64_t src[2], const int64_t wgt[2], int reset,
                 const int64_t *reads, int nr, int64_t write) {
    int64_t row[VTA_STREAM_NF] = {0};
    row[F_OPCODE] = OP_GEMM, row[F_RESET] = reset ? 1 : 0;
    row[F_ITER_OUT] = n_out, row[F_ITER_IN] = n_in;
    if (n_out > 1)
        row[F_DST_OUT] = dst[0], row[F_SRC_OUT] = src[0], row[F_WGT_OUT] = wgt[0];
    if (n_in > 1)
        row[F_DST_IN] = dst[1], row[F_SRC_IN] = src[1], row[F_WGT_IN] = wgt[1];
    add(e, row, M_COMPUTE, kernel, sub, reads, nr, &write, 1);
}

static void alu(em_t *e, int64_t op, int64_t kernel, int64_t sub, int64_t n_out, int64_t n_in,
                const int64_t dst[2], const int64_t src[2], int use_imm, int64_t imm,
                int64_t slot) {
    int64_t row[VTA_STREAM_NF] = {0};
    row[F_OPCODE] = OP_ALU, row[F_ALU_OP] = op;
    if (use_imm)
        row[F_USE_IMM] = 1, row[F_IMM] = imm;
    row[F_ITER_OUT] = n_out, row[F_ITER_IN] = n_in;
    if (n_out > 1)
        row[F_DST_OUT] = dst[0], row[F_SRC_OUT] = src[0];
    if (n_in > 1)
        row[F_DST_IN] = dst[1], row[F_SRC_IN] = src[1];
    add(e, row, M_COMPUTE, kernel, sub, &slot, 1, &slot, 1);
}

/* A micro-op word (`encode_uops`); an index outside its field fails the layer. */
static void uop(em_t *e, int64_t dst, int64_t src, int64_t wgt) {
    int64_t idx[3] = {dst, src, wgt};
    if (e->uops.n >= VTA_GEMM_MAX_UOPS) {
        if (!e->failed)
            e->failed = VTA_STREAM_BAD_INPUT;
        return;
    }
    uint64_t word = 0;
    for (int f = 0; f < 3; f++) {
        int64_t width = e->p[VTA_GEMM_UOP_WIDTH + f], bit = e->p[VTA_GEMM_UOP_BIT + f];
        if (idx[f] < 0 || idx[f] >= ((int64_t)1 << width)) {
            if (!e->failed)
                e->failed = VTA_STREAM_OVERFLOW;
            return;
        }
        word |= (uint64_t)idx[f] << bit;
    }
    if (push(&e->uops, (int64_t)(word & 0xFFFFFFFFu)))
        e->failed = VTA_STREAM_NOMEM;
}

/* The id of the kernel with this key, registered (-1 for a new one: the caller builds it
 * and calls `kernel_done`). */
static int64_t kernel_find(em_t *e, const int64_t key[9]) {
    for (int64_t k = e->ksizes.n - 1; k >= 0; k--)
        if (!memcmp(e->kkeys.v + 9 * k, key, 9 * sizeof(int64_t)))
            return k;
    return -1;
}

static int64_t kernel_begin(em_t *e, const int64_t key[9]) {
    for (int k = 0; k < 9; k++)
        if (push(&e->kkeys, key[k]))
            e->failed = VTA_STREAM_NOMEM;
    return e->uops.n;
}

static int64_t kernel_done(em_t *e, int64_t start) {
    int64_t size = e->uops.n - start;
    if (size < 1 && !e->failed)
        e->failed = VTA_STREAM_BAD_INPUT;
    if (push(&e->ksizes, size))
        e->failed = VTA_STREAM_NOMEM;
    return e->ksizes.n - 1;
}

/* --- geometry (lowering/vta/geometry.py) --- */

static int dense(em_t *e) { return P(KIND) == 2; }

static int64_t frame_h(em_t *e, int64_t th) {
    if (dense(e))
        return 1;
    return P(ROW_SUBSAMPLE) ? th : (th - 1) * P(SH) + (P(KH) - 1) * P(DH) + 1;
}

static int64_t frame_w(em_t *e, int64_t tw) {
    if (dense(e))
        return tw;
    return (tw - 1) * P(SW) + (P(KW) - 1) * P(DW) + 1;
}

typedef struct {
    int64_t fr, y0, ystep, ypad0, yreal, fc, x0, xpad0, xreal;
} frame_t;

static frame_t frame_of(em_t *e, const step_t *st) {
    frame_t f;
    if (dense(e)) {
        f.fr = 1, f.y0 = 0, f.ystep = 1, f.ypad0 = 0, f.yreal = 1;
        f.fc = st->tw, f.x0 = st->ox0, f.xpad0 = 0, f.xreal = st->tw;
        return f;
    }
    f.fr = frame_h(e, st->th);
    f.y0 = st->oy0 * P(SH) - P(PAD_T);
    f.ystep = P(ROW_SUBSAMPLE) ? P(SH) : 1;
    real_span(f.y0, f.fr, f.ystep, P(H), &f.ypad0, &f.yreal);
    f.fc = frame_w(e, st->tw);
    f.x0 = st->ox0 * P(SW) - P(PAD_L);
    real_span(f.x0, f.fc, 1, P(W), &f.xpad0, &f.xreal);
    return f;
}

enum { FM_DENSE, FM_PADDING, FM_BLOCKS, FM_ROW, FM_CONTIGUOUS };

static int frame_mode(em_t *e, const frame_t *f) {
    if (dense(e))
        return FM_DENSE;
    if (f->yreal == 0 || f->xreal == 0)
        return FM_PADDING;
    if (P(H) * P(W) > MAX_STRIDE)
        return FM_BLOCKS;
    if (f->fr == 1)
        return FM_ROW;
    if (f->yreal == f->fr && f->xreal == f->fc && f->fc == P(W) && f->ystep == 1)
        return FM_CONTIGUOUS;
    return FM_BLOCKS;
}

/* --- DRAM elements --- */

static int64_t elem_input(em_t *e) { return P(E_INPUT) + e->image * P(H) * P(W) * P(CIB); }
static int64_t elem_output(em_t *e) { return P(E_OUTPUT) + e->image * P(OH) * P(OW) * P(COB); }

/* --- the emitter's steps (emit.py's `_Emitter`) --- */

static void load_frame(em_t *e, const step_t *st, int64_t slot) {
    int64_t base = P(INP_BASE) + slot * P(INP_SLOT_ROWS);
    int64_t res = s_inp(e, slot);
    int64_t inp = elem_input(e);
    frame_t f = frame_of(e, st);
    int64_t frame = f.fr * f.fc;
    int mode = frame_mode(e, &f);
    if (mode == FM_DENSE) {
        load(e, MEM_INP, base, inp + st->ox0 * P(CIB) + st->ci0, st->tw, st->nci, P(CIB), 0, 0,
             0, 0, M_LOAD, res);
        return;
    }
    int64_t hw = P(H) * P(W);
    if (mode == FM_PADDING) {
        for (int64_t k = 0; k < st->nci; k++)
            load(e, MEM_INP, base + k * frame, P(E_PAD_ROW), f.fr, f.fc, 0, 0, 0, 0, 0, M_LOAD,
                 res);
        return;
    }
    int64_t ypad1 = f.fr - f.ypad0 - f.yreal, xpad1 = f.fc - f.xpad0 - f.xreal;
    int64_t first_row = f.y0 + f.ypad0 * f.ystep;
    if (mode == FM_CONTIGUOUS) {
        load(e, MEM_INP, base, inp + st->ci0 * hw + first_row * P(W), st->nci, frame, hw, 0, 0,
             0, 0, M_LOAD, res);
        return;
    }
    if (mode == FM_ROW) {
        load(e, MEM_INP, base, inp + st->ci0 * hw + first_row * P(W) + f.x0 + f.xpad0, st->nci,
             f.xreal, hw, 0, 0, f.xpad0, xpad1, M_LOAD, res);
        return;
    }
    int64_t top = max64(0, f.ypad0 - MAX_PAD), bottom = max64(0, ypad1 - MAX_PAD);
    int64_t pad = P(E_PAD_ROW);
    for (int64_t k = 0; k < st->nci; k++) {
        int64_t at = base + k * frame;
        if (top)
            load(e, MEM_INP, at, pad, top, f.fc, 0, 0, 0, 0, 0, M_LOAD, res);
        int64_t dram = inp + (st->ci0 + k) * hw + first_row * P(W) + f.x0 + f.xpad0;
        load(e, MEM_INP, at + top * f.fc, dram, f.yreal, f.xreal, P(W) * f.ystep,
             f.ypad0 - top, ypad1 - bottom, f.xpad0, xpad1, M_LOAD, res);
        if (bottom)
            load(e, MEM_INP, at + (f.fr - bottom) * f.fc, pad, bottom, f.fc, 0, 0, 0, 0, 0,
                 M_LOAD, res);
    }
}

static void load_weights(em_t *e, const step_t *st, int64_t slot, int64_t part) {
    int64_t chunk[5] = {st->co0, st->ci0, st->nco, st->nci, P(RUNTIME_WEIGHTS) ? e->image : -1};
    int64_t *held = e->held + 5 * slot;
    int64_t tco = P(TCO);
    unsigned char *parts = e->parts + (tco + 1) * slot;
    int64_t bit = part < 0 ? tco : part;
    if (part >= tco) { /* a part is an output block of a chunk of tco at most */
        if (!e->failed)
            e->failed = VTA_STREAM_BAD_INPUT;
        return;
    }
    int same = !memcmp(held, chunk, sizeof chunk);
    if (same && (parts[tco] || parts[bit]))
        return;
    if (!same) {
        memcpy(held, chunk, sizeof chunk);
        memset(parts, 0, (size_t)tco + 1);
    }
    parts[bit] = 1;
    int64_t base = P(WGT_BASE) + slot * P(WGT_SLOT_TILES);
    int64_t wgt = P(E_WEIGHTS);
    if (P(RUNTIME_WEIGHTS))
        wgt += e->image * P(COB) * P(CIB) * P(KH) * P(KW);
    int64_t K = P(KH) * P(KW);
    int64_t per_co = K * (P(DIAGONAL) ? 1 : st->nci);
    int64_t first = part < 0 ? 0 : part, count = part < 0 ? st->nco : 1;
    base += first * per_co;
    int64_t co0 = st->co0 + first;
    if (P(DIAGONAL))
        load(e, MEM_WGT, base, wgt + co0 * K, 1, count * K, count * K, 0, 0, 0, 0, M_LOAD,
             s_wgt(e, slot));
    else
        load(e, MEM_WGT, base, wgt + (co0 * P(CIB) + st->ci0) * K, count, st->nci * K,
             P(CIB) * K, 0, 0, 0, 0, M_LOAD, s_wgt(e, slot));
}

static void load_consts(em_t *e) {
    if (P(ZP)) {
        int64_t w = S_INPC(e);
        load(e, MEM_INP, P(INP_CONST), P(E_ONE_ROW), 1, 1, 1, 0, 0, 0, 0, M_LOAD, w);
        w = S_WGTC(e);
        load(e, MEM_WGT, P(WGT_CONST), P(E_ZP_TILE), 1, 1, 1, 0, 0, 0, 0, M_LOAD, w);
    }
    if (P(GEMM_BIAS)) {
        int64_t w = S_BIASC(e);
        load(e, MEM_INP, P(INP_BIAS), P(E_BIAS_ROW), 1, 1, 1, 0, 0, 0, 0, M_LOAD, w);
        load(e, MEM_WGT, P(WGT_BIAS), P(E_BIAS_TILES), 1, P(COB), P(COB), 0, 0, 0, 0, M_LOAD,
             w);
    }
}

/* (strides) of a step: acc channel, acc pixel, frame ci / row / col (`layouts`). */
static void layouts(em_t *e, const step_t *st, int64_t s[5]) {
    if (dense(e)) {
        s[0] = 1, s[1] = st->nco, s[2] = 1, s[3] = 0, s[4] = st->nci;
        return;
    }
    int64_t fr = frame_h(e, st->th), fc = frame_w(e, st->tw);
    s[0] = st->th * st->tw, s[1] = 1, s[2] = fr * fc, s[3] = fc, s[4] = 1;
}

static void gemm_step(em_t *e, const step_t *st, int64_t islot, int64_t wslot, int64_t aslot) {
    int64_t KH = P(KH), KW = P(KW), K = KH * KW, m = P(DEPTH_MULTIPLIER);
    int diag = P(DIAGONAL) != 0;
    int64_t inp_b = P(INP_BASE) + islot * P(INP_SLOT_ROWS);
    int64_t wgt_b = P(WGT_BASE) + wslot * P(WGT_SLOT_TILES);
    int64_t acc_b = P(ACC_BASE) + aslot * P(ACC_SLOT_ROWS);
    int64_t s[5];
    layouts(e, st, s);
    int64_t s_co = s[0], s_p = s[1], s_ci = s[2], s_fy = s[3], s_fx = s[4];
    int64_t red = K * (diag ? 1 : st->nci);
    int64_t uy = 0, ux = 0;
    int pb = pixel_block(st->nco, red, st->th, st->tw, &uy, &ux);
    int64_t sy = P(ROW_SUBSAMPLE) ? 1 : P(SH);
    int64_t dyf = P(ROW_SUBSAMPLE) ? 0 : P(DH);
    int64_t dw = P(DW), sw = P(SW);
    int64_t diag_off = diag ? st->co0 % m : 0;
    int64_t key[9] = {1, st->th, st->tw, st->nco, st->nci, diag_off, inp_b, wgt_b, acc_b};
    int64_t kern = kernel_find(e, key);
    if (kern < 0) {
        /* the kernel's micro-ops, counted before it is built: larger than the micro-op buffer
           (the resolver would refuse it) or past the cap, the layer is refused unbuilt */
        int64_t f[5] = {K, diag ? 1 : st->nci, st->nco, uy, ux};
        int64_t size = pb ? product_upto(f, 5, VTA_GEMM_MAX_UOPS) : red;
        if (size > e->uop_depth || size > VTA_GEMM_MAX_UOPS - e->uops.n) {
            if (!e->failed)
                e->failed = size > e->uop_depth ? VTA_STREAM_KERNEL_TOO_BIG : VTA_STREAM_BAD_INPUT;
            return;
        }
        int64_t start = kernel_begin(e, key);
        if (!pb) {
            for (int64_t r = 0; r < red && !e->failed; r++) {
                int64_t ci = diag ? 0 : r / K, tap = diag ? r : r % K;
                int64_t ky = tap / KW, kx = tap % KW;
                uop(e, acc_b + r % 2, inp_b + ci * s_ci + ky * dyf * s_fy + kx * dw * s_fx,
                    wgt_b + ci * K + tap);
            }
        } else if (diag) {
            for (int64_t ky = 0; ky < KH && !e->failed; ky++)
                for (int64_t kx = 0; kx < KW && !e->failed; kx++)
                    for (int64_t co = 0; co < st->nco && !e->failed; co++)
                        for (int64_t py = 0; py < uy && !e->failed; py++)
                            for (int64_t px = 0; px < ux && !e->failed; px++) {
                                int64_t ci = (st->co0 + co) / m - st->co0 / m;
                                uop(e, acc_b + co * s_co + (py * st->tw + px) * s_p,
                                    inp_b + ci * s_ci + (py * sy + ky * dyf) * s_fy +
                                        (px * sw + kx * dw) * s_fx,
                                    wgt_b + co * K + ky * KW + kx);
                            }
        } else {
            for (int64_t ci = 0; ci < st->nci && !e->failed; ci++)
                for (int64_t ky = 0; ky < KH && !e->failed; ky++)
                    for (int64_t kx = 0; kx < KW && !e->failed; kx++)
                        for (int64_t co = 0; co < st->nco && !e->failed; co++)
                            for (int64_t py = 0; py < uy && !e->failed; py++)
                                for (int64_t px = 0; px < ux && !e->failed; px++)
                                    uop(e, acc_b + co * s_co + (py * st->tw + px) * s_p,
                                        inp_b + ci * s_ci + (py * sy + ky * dyf) * s_fy +
                                            (px * sw + kx * dw) * s_fx,
                                        wgt_b + (co * st->nci + ci) * K + ky * KW + kx);
        }
        kern = kernel_done(e, start);
    }
    int64_t reads[3] = {s_inp(e, islot), s_wgt(e, wslot), s_acc(e, aslot)};
    int64_t zero[2] = {0, 0};
    if (!pb) {
        gemm(e, kern, -1, 1, 1, zero, zero, zero, 0, reads, 3, s_acc(e, aslot));
        return;
    }
    int64_t dst[2] = {uy * st->tw * s_p, ux * s_p};
    int64_t src[2] = {uy * sy * s_fy, ux * sw * s_fx};
    gemm(e, kern, -1, st->th / uy, st->tw / ux, dst, src, zero, 0, reads, 3, s_acc(e, aslot));
}

/* The tail kernel of a slot and output group: its id, and the micro-op of each entry. */
enum { T_ROW, T_SPLIT, T_BIAS, T_LSH, T_RDMUL, T_RSHR, T_STORE, T_BIAS_GEMM, T_N };

static int64_t tail_kernel(em_t *e, int64_t aslot, int64_t co0, int64_t idx[T_N]) {
    int64_t acc_b = P(ACC_BASE) + aslot * P(ACC_SLOT_ROWS);
    int64_t src[T_N], wgt[T_N], names[T_N];
    int n = 0;
    names[n] = T_ROW, src[n] = P(ZP) ? P(INP_CONST) : 0, wgt[n++] = P(ZP) ? P(WGT_CONST) : 0;
    names[n] = T_SPLIT, src[n] = acc_b + 1, wgt[n++] = 0;
    for (int k = 0; k < VTA_GEMM_N_PARAMS; k++) {
        int64_t kind = e->p[VTA_GEMM_PARAMS + 3 * k];
        if (kind < 0)
            continue;
        int64_t start = e->p[VTA_GEMM_PARAMS + 3 * k + 1], per = e->p[VTA_GEMM_PARAMS + 3 * k + 2];
        names[n] = T_BIAS + kind, src[n] = start + (per ? co0 : 0), wgt[n++] = 0;
    }
    if (P(GEMM_BIAS))
        names[n] = T_BIAS_GEMM, src[n] = P(INP_BIAS), wgt[n++] = P(WGT_BIAS) + co0;
    for (int k = 0; k < T_N; k++)
        idx[k] = -1;
    for (int k = 0; k < n; k++)
        idx[names[k]] = k;
    int64_t key[9] = {2, acc_b, co0, 0, 0, 0, 0, 0, 0};
    int64_t kern = kernel_find(e, key);
    if (kern >= 0)
        return kern;
    int64_t start = kernel_begin(e, key);
    for (int k = 0; k < n; k++)
        uop(e, acc_b, src[k], wgt[k]);
    return kernel_done(e, start);
}

static void tile_loops(em_t *e, const step_t *st, int64_t *n_out, int64_t *n_in, int64_t dst[2],
                       int64_t per_block[2]) {
    int64_t npix = st->th * st->tw;
    if (dense(e)) {
        *n_out = npix, *n_in = st->nco, dst[0] = st->nco, dst[1] = 1, per_block[0] = 0,
        per_block[1] = 1;
        return;
    }
    *n_out = st->nco, *n_in = npix, dst[0] = npix, dst[1] = 1, per_block[0] = 1,
    per_block[1] = 0;
}

static int64_t sub_of(em_t *e, const int64_t idx[T_N], int name) {
    if (idx[name] < 0 && !e->failed) /* the Python emitter would fail on it */
        e->failed = VTA_STREAM_BAD_INPUT;
    return idx[name] < 0 ? 0 : idx[name];
}

static void init_tile(em_t *e, const step_t *st, int64_t aslot, int split) {
    int64_t acc_b = P(ACC_BASE) + aslot * P(ACC_SLOT_ROWS);
    int64_t idx[T_N];
    int64_t key = tail_kernel(e, aslot, st->co0, idx);
    int64_t rows = st->th * st->tw * st->nco;
    int64_t res = s_acc(e, aslot);
    int64_t zero[2] = {0, 0}, down[2] = {1, 0};
    if (P(RUNTIME_INIT)) {
        if (split)
            gemm(e, key, sub_of(e, idx, T_ROW), 2, 1, down, zero, zero, 1, NULL, 0, res);
        int64_t plane = P(OH) * P(OW), npix = st->th * st->tw;
        int64_t init = P(E_INIT) + e->image * P(OH) * P(OW) * P(COB);
        int64_t first = init + st->co0 * plane + st->oy0 * P(OW) + st->ox0;
        if (st->th == 1)
            load(e, MEM_ACC, acc_b, first, st->nco, st->tw, plane, 0, 0, 0, 0, M_COMPUTE, res);
        else
            for (int64_t k = 0; k < st->nco; k++)
                load(e, MEM_ACC, acc_b + k * npix, first + k * plane, st->th, st->tw, P(OW), 0, 0,
                     0, 0, M_COMPUTE, res);
        if (P(STORE_TAIL))
            e->zeroed[aslot] = 0;
        return;
    }
    if (P(STORE_TAIL)) {
        if (split || e->zeroed[aslot] < rows) {
            gemm(e, key, sub_of(e, idx, T_ROW), rows + split, 1, down, zero, zero, 1, NULL, 0,
                 res);
            e->zeroed[aslot] = rows + split;
        }
        return;
    }
    if (P(HAS_BIAS) && P(BIAS_MODE) == VTA_GEMM_BIAS_DMA) {
        if (split)
            gemm(e, key, sub_of(e, idx, T_ROW), 2, 1, down, zero, zero, 1, NULL, 0, res);
        int64_t bias = P(E_BIAS) + st->co0, npix = st->th * st->tw;
        if (dense(e) || npix == 1)
            load(e, MEM_ACC, acc_b, bias, npix, st->nco, 0, 0, 0, 0, 0, M_COMPUTE, res);
        else
            for (int64_t k = 0; k < st->nco; k++)
                load(e, MEM_ACC, acc_b + k * npix, bias + k, npix, 1, 0, 0, 0, 0, 0, M_COMPUTE,
                     res);
        return;
    }
    gemm(e, key, sub_of(e, idx, T_ROW), rows + split, 1, down, zero, zero, 1, NULL, 0, res);
    if (P(GEMM_BIAS)) {
        int64_t n_out, n_in, dst[2], per_block[2];
        tile_loops(e, st, &n_out, &n_in, dst, per_block);
        int64_t reads[2] = {res, S_BIASC(e)};
        gemm(e, key, sub_of(e, idx, T_BIAS_GEMM), n_out, n_in, dst, zero, per_block, 0, reads, 2,
             res);
    }
}

static void tail(em_t *e, const step_t *st, int64_t aslot, int split) {
    int64_t idx[T_N];
    int64_t key = tail_kernel(e, aslot, st->co0, idx);
    int64_t n_out, n_in, dst[2], psrc[2], zero[2] = {0, 0};
    tile_loops(e, st, &n_out, &n_in, dst, psrc);
    int64_t res = s_acc(e, aslot);
    if (split) {
        alu(e, ALU_ADD, key, sub_of(e, idx, T_SPLIT), 1, 1, zero, zero, 0, 0, res);
        if (P(STORE_TAIL))
            e->zeroed[aslot] = 1;
    }
    if (P(STORE_TAIL))
        return;
    if (idx[T_BIAS] >= 0)
        alu(e, ALU_ADD, key, idx[T_BIAS], n_out, n_in, dst, psrc, 0, 0, res);
    for (int k = 0; k < VTA_GEMM_N_TAIL; k++) {
        int64_t op = e->p[VTA_GEMM_TAIL + k];
        if (op == VTA_GEMM_TAIL_LSH || op == VTA_GEMM_TAIL_RDMUL || op == VTA_GEMM_TAIL_RSHR) {
            int lsh = op == VTA_GEMM_TAIL_LSH, rdmul = op == VTA_GEMM_TAIL_RDMUL;
            int name = lsh ? T_LSH : rdmul ? T_RDMUL : T_RSHR;
            int64_t alu_op = lsh ? ALU_SHR : rdmul ? ALU_RDMUL : ALU_RSHR;
            if (idx[name] >= 0) {
                int64_t per = 0;
                for (int j = 0; j < VTA_GEMM_N_PARAMS; j++)
                    if (e->p[VTA_GEMM_PARAMS + 3 * j] == name - T_BIAS)
                        per = e->p[VTA_GEMM_PARAMS + 3 * j + 2];
                alu(e, alu_op, key, idx[name], n_out, n_in, dst, per ? psrc : zero, 0, 0, res);
            } else {
                if (!P(HAS_SHIFT)) { /* the Python emitter fails on it */
                    if (!e->failed)
                        e->failed = VTA_STREAM_BAD_INPUT;
                    return;
                }
                int64_t imm = op == VTA_GEMM_TAIL_LSH ? P(LSH_IMM) : P(RSHR_IMM);
                alu(e, alu_op, key, sub_of(e, idx, T_ROW), n_out, n_in, dst, zero, 1, imm, res);
            }
        } else if (op == VTA_GEMM_TAIL_CLAMP) {
            alu(e, ALU_MAX, key, sub_of(e, idx, T_ROW), n_out, n_in, dst, zero, 1, P(CLAMP_LO),
                res);
            alu(e, ALU_MIN, key, sub_of(e, idx, T_ROW), n_out, n_in, dst, zero, 1, P(CLAMP_HI),
                res);
        } else if (op == VTA_GEMM_TAIL_ZP) {
            int64_t reads[3] = {res, S_INPC(e), S_WGTC(e)};
            gemm(e, key, sub_of(e, idx, T_ROW), n_out, n_in, dst, zero, zero, 0, reads, 3, res);
        }
    }
}

static void store_one(em_t *e, int64_t aslot, int64_t sram, int64_t dram, int64_t y, int64_t x,
                      int64_t stride, int64_t block, int64_t py, int64_t px) {
    int64_t row[VTA_STREAM_NF] = {0};
    int64_t res = s_acc(e, aslot);
    row[F_OPCODE] = OP_STORE, row[F_MEM] = P(INT32_OUTPUT) ? MEM_ACC : MEM_OUT;
    row[F_SRAM] = sram, row[F_DRAM] = dram, row[F_YSIZE] = y, row[F_XSIZE] = x;
    row[F_XSTRIDE] = stride;
    if (!P(STORE_TAIL)) {
        add(e, row, M_STORE, -1, -1, &res, 1, NULL, 0);
        return;
    }
    int64_t start = -1;
    for (int j = 0; j < VTA_GEMM_N_PARAMS; j++)
        if (e->p[VTA_GEMM_PARAMS + 3 * j] == T_STORE - T_BIAS)
            start = e->p[VTA_GEMM_PARAMS + 3 * j + 1];
    if (start < 0) {
        if (!e->failed)
            e->failed = VTA_STREAM_BAD_INPUT;
        return;
    }
    row[F_MEM] = MEM_OUTQ, row[F_PARAM_ROW] = start + P(PARAM_ROWS) * block;
    row[F_PARAM_Y] = py, row[F_PARAM_X] = px, row[F_CLEAR] = 1;
    int64_t reads[2] = {res, S_PARAMS(e)};
    add(e, row, M_STORE, -1, -1, reads, 2, &res, 1);
}

static void store_tile(em_t *e, const step_t *st, int64_t aslot) {
    int64_t acc_b = P(ACC_BASE) + aslot * P(ACC_SLOT_ROWS);
    int64_t out = elem_output(e);
    if (dense(e)) {
        store_one(e, aslot, acc_b, out + st->ox0 * P(COB) + st->co0, st->tw, st->nco, P(COB),
                  st->co0, 0, 1);
        return;
    }
    int64_t plane = P(OH) * P(OW), npix = st->th * st->tw;
    if (st->tw == P(OW) && plane <= MAX_STRIDE) {
        store_one(e, aslot, acc_b, out + st->co0 * plane + st->oy0 * P(OW), st->nco, npix, plane,
                  st->co0, 1, 0);
        return;
    }
    for (int64_t k = 0; k < st->nco; k++)
        store_one(e, aslot, acc_b + k * npix,
                  out + (st->co0 + k) * plane + st->oy0 * P(OW) + st->ox0, st->th, st->tw, P(OW),
                  st->co0 + k, 0, 0);
}

/* --- the step plan (planning.py's `step_list` and `plan_steps`) --- */

static int64_t n_steps(em_t *e) {
    int64_t tiles = cdiv(P(OH), P(TH)) * cdiv(P(OW), P(TW)) * cdiv(P(COB), P(TCO));
    return tiles * (P(DIAGONAL) ? 1 : cdiv(P(CIB), P(TCI)));
}

static void step_list(em_t *e, step_t *out) {
    int64_t OH = P(OH), OW = P(OW), COB = P(COB), CIB = P(CIB);
    int64_t th = P(TH), tw = P(TW), tco = P(TCO), tci = P(TCI), m = P(DEPTH_MULTIPLIER);
    int64_t ny = cdiv(OH, th), nx = cdiv(OW, tw), ng = cdiv(COB, tco), nr = cdiv(CIB, tci);
    int64_t n_sp = ny * nx, tile = 0, k = 0;
    for (int64_t a = 0; a < (P(LOOP_SPATIAL) ? n_sp : ng); a++)
        for (int64_t b = 0; b < (P(LOOP_SPATIAL) ? ng : n_sp); b++, tile++) {
            int64_t s = P(LOOP_SPATIAL) ? a : b, c = P(LOOP_SPATIAL) ? b : a;
            step_t st;
            st.tile = tile, st.spatial = s;
            st.oy0 = (s / nx) * th, st.th = min64(th, OH - st.oy0);
            st.ox0 = (s % nx) * tw, st.tw = min64(tw, OW - st.ox0);
            st.co0 = c * tco, st.nco = min64(tco, COB - st.co0);
            if (P(DIAGONAL)) {
                st.ci0 = st.co0 / m, st.nci = (st.co0 + st.nco - 1) / m - st.ci0 + 1;
                st.first = st.last = 1;
                out[k++] = st;
                continue;
            }
            for (int64_t r = 0; r < nr; r++) {
                st.ci0 = r * tci, st.nci = min64(tci, CIB - st.ci0);
                st.first = r == 0, st.last = r == nr - 1;
                out[k++] = st;
            }
        }
}

typedef struct { /* least-recently-used slots of a buffer (`plan_steps`' OrderedDicts) */
    int64_t *keys;  /* [n_slots][4] */
    int64_t *stamp; /* per slot: last use (0: free) */
    int64_t n_slots, used, clock;
} lru_t;

static int64_t lru_find(lru_t *l, const int64_t key[4]) {
    for (int64_t s = 0; s < l->used; s++)
        if (l->stamp[s] && !memcmp(l->keys + 4 * s, key, 4 * sizeof(int64_t)))
            return s;
    return -1;
}

static void lru_touch(lru_t *l, int64_t s) { l->stamp[s] = ++l->clock; }

/* A slot for a new chunk: the next free one, else the oldest chunk's. */
static int64_t lru_claim(lru_t *l, const int64_t key[4]) {
    int64_t s;
    if (l->used < l->n_slots) {
        s = l->used++;
    } else {
        s = 0;
        for (int64_t k = 1; k < l->used; k++)
            if (l->stamp[k] < l->stamp[s])
                s = k;
    }
    memcpy(l->keys + 4 * s, key, 4 * sizeof(int64_t));
    lru_touch(l, s);
    return s;
}

static void inp_key(const step_t *st, int64_t k[4]) {
    k[0] = st->spatial, k[1] = st->ci0, k[2] = st->nci, k[3] = 0;
}

static void wgt_key(const step_t *st, int64_t k[4]) {
    k[0] = st->co0, k[1] = st->nco, k[2] = st->ci0, k[3] = st->nci;
}

static int same_key(const step_t *a, const step_t *b, int wgt) {
    int64_t x[4], y[4];
    if (wgt)
        wgt_key(a, x), wgt_key(b, y);
    else
        inp_key(a, x), inp_key(b, y);
    return !memcmp(x, y, sizeof x);
}

/* The first step of the next run of steps sharing a chunk, for the first step of each run
 * (-1: none), when the buffer prefetches (two slots at least). */
static void prefetches(const step_t *steps, int64_t n, int wgt, int64_t n_slots, int64_t *ahead) {
    for (int64_t i = 0; i < n; i++)
        ahead[i] = -1;
    if (n_slots < 2)
        return;
    int64_t prev = 0;
    for (int64_t i = 1; i < n; i++)
        if (!same_key(steps + i, steps + i - 1, wgt)) {
            ahead[prev] = i;
            prev = i;
        }
}

typedef struct {
    int64_t islot, wslot, aslot, load_first, load_count; /* loads: [first, first + count) */
} plan_t;

/* `plan_steps`: the slots of each step and its loads (own chunks, prefetches, weight parts). */
static int plan_steps(em_t *e, const step_t *steps, int64_t n, plan_t *plans, vec_t *loads) {
    int64_t ni = P(INP_SLOTS), nw = P(WGT_SLOTS);
    int rc = VTA_STREAM_NOMEM;
    lru_t inp = {0}, wgt = {0};
    int64_t *inp_ahead = malloc(sizeof(int64_t) * (size_t)n);
    int64_t *wgt_ahead = malloc(sizeof(int64_t) * (size_t)n);
    /* weight parts for later steps: per step a linked list (head/tail), entries in `later` */
    int64_t *head = malloc(sizeof(int64_t) * (size_t)n);
    int64_t *tail_ = malloc(sizeof(int64_t) * (size_t)n);
    vec_t later = {0}; /* [4 each]: step, slot, part, next */
    inp.keys = malloc(sizeof(int64_t) * 4 * (size_t)ni);
    inp.stamp = calloc((size_t)ni, sizeof(int64_t));
    wgt.keys = malloc(sizeof(int64_t) * 4 * (size_t)nw);
    wgt.stamp = calloc((size_t)nw, sizeof(int64_t));
    if (!inp_ahead || !wgt_ahead || !head || !tail_ || !inp.keys || !inp.stamp || !wgt.keys ||
        !wgt.stamp)
        goto out;
    inp.n_slots = ni, wgt.n_slots = nw;
    prefetches(steps, n, 0, ni, inp_ahead);
    prefetches(steps, n, 1, nw, wgt_ahead);
    for (int64_t i = 0; i < n; i++)
        head[i] = tail_[i] = -1;
    for (int64_t i = 0; i < n; i++) {
        const step_t *st = steps + i;
        plan_t *pl = plans + i;
        pl->load_first = loads->n / 4;
        int64_t key[4], bad = 0;
        inp_key(st, key);
        int64_t islot = lru_find(&inp, key);
        if (islot < 0) {
            islot = lru_claim(&inp, key);
            bad |= push(loads, 0) | push(loads, i) | push(loads, islot) | push(loads, -1);
        } else {
            lru_touch(&inp, islot);
        }
        int64_t wkey[4];
        wgt_key(st, wkey);
        int64_t wslot = lru_find(&wgt, wkey);
        if (wslot < 0) {
            wslot = lru_claim(&wgt, wkey);
            bad |= push(loads, 1) | push(loads, i) | push(loads, wslot) | push(loads, -1);
        } else {
            lru_touch(&wgt, wslot);
        }
        int64_t j = inp_ahead[i];
        if (j >= 0) {
            int64_t ak[4];
            inp_key(steps + j, ak);
            if (lru_find(&inp, ak) < 0) {
                int64_t slot = lru_claim(&inp, ak);
                bad |= push(loads, 0) | push(loads, j) | push(loads, slot) | push(loads, -1);
                lru_touch(&inp, islot); /* the chunk this step uses: the most recent */
            }
        }
        j = wgt_ahead[i];
        if (j >= 0) {
            int64_t ak[4];
            wgt_key(steps + j, ak);
            if (lru_find(&wgt, ak) < 0) {
                const step_t *ahead = steps + j;
                int64_t slot = lru_claim(&wgt, ak);
                int64_t run = j - i;
                if (run > 1 && ahead->nco > 1) {
                    for (int64_t part = 0; part < ahead->nco; part++) {
                        int64_t at = i + part * run / ahead->nco, entry = later.n / 4;
                        bad |= push(&later, j) | push(&later, slot) | push(&later, part) |
                               push(&later, -1);
                        if (bad)
                            break;
                        if (tail_[at] < 0)
                            head[at] = entry;
                        else
                            later.v[4 * tail_[at] + 3] = entry;
                        tail_[at] = entry;
                    }
                } else {
                    bad |= push(loads, 1) | push(loads, j) | push(loads, slot) | push(loads, -1);
                }
                lru_touch(&wgt, wslot);
            }
        }
        for (int64_t k = head[i]; k >= 0 && !bad; k = later.v[4 * k + 3])
            bad |= push(loads, 1) | push(loads, later.v[4 * k]) | push(loads, later.v[4 * k + 1]) |
                   push(loads, later.v[4 * k + 2]);
        if (bad)
            goto out;
        pl->islot = islot, pl->wslot = wslot, pl->aslot = st->tile % P(ACC_SLOTS);
        pl->load_count = loads->n / 4 - pl->load_first;
    }
    rc = 0;
out:
    free(inp_ahead), free(wgt_ahead), free(head), free(tail_), free(later.v);
    free(inp.keys), free(inp.stamp), free(wgt.keys), free(wgt.stamp);
    return rc;
}

/* --- the whole layer --- */

static int64_t image_pass(em_t *e, const step_t *steps, int64_t n, const plan_t *plans,
                          const vec_t *loads, int64_t consts_loaded) {
    int split = 0;
    for (int64_t i = 0; i < n && !e->failed; i++) {
        const step_t *st = steps + i;
        const plan_t *pl = plans + i;
        for (int64_t k = pl->load_first; k < pl->load_first + pl->load_count; k++) {
            const int64_t *ld = loads->v + 4 * k;
            if (ld[1] != i && !consts_loaded) { /* before the first prefetch */
                load_consts(e);
                consts_loaded = 1;
            }
            if (ld[0] == 0)
                load_frame(e, steps + ld[1], ld[2]);
            else
                load_weights(e, steps + ld[1], ld[2], ld[3]);
        }
        if (!consts_loaded) {
            load_consts(e);
            consts_loaded = 1;
        }
        if (st->first) {
            int64_t red = P(KH) * P(KW) * (P(DIAGONAL) ? 1 : st->nci), uy, ux;
            split = !pixel_block(st->nco, red, st->th, st->tw, &uy, &ux);
            init_tile(e, st, pl->aslot, split);
        }
        gemm_step(e, st, pl->islot, pl->wslot, pl->aslot);
        if (st->last) {
            tail(e, st, pl->aslot, split);
            store_tile(e, st, pl->aslot);
        }
    }
    return consts_loaded;
}

/* The parameters' ranges: what the loops and the slot arrays index. */
static int check_params(const int64_t *p, int64_t n_params) {
    if (n_params != VTA_GEMM_N)
        return 0;
#define IN(k, lo, hi) (p[VTA_GEMM_##k] >= (lo) && p[VTA_GEMM_##k] <= (hi))
    if (!(IN(KIND, 0, 2) && IN(H, 1, MAX_SIDE) && IN(W, 1, MAX_SIDE) && IN(KH, 1, 64) &&
          IN(KW, 1, 64) && IN(SH, 1, 64) && IN(SW, 1, 64) && IN(DH, 1, 64) && IN(DW, 1, 64) &&
          IN(PAD_T, 0, MAX_SIDE) && IN(PAD_L, 0, MAX_SIDE) && IN(OH, 1, MAX_SIDE) &&
          IN(OW, 1, MAX_SIDE) && IN(CIB, 1, 1 << 16) && IN(COB, 1, 1 << 16) &&
          IN(DEPTH_MULTIPLIER, 1, 1 << 16) && IN(BATCH, 1, 1 << 16) && IN(TH, 1, MAX_SIDE) &&
          IN(TW, 1, MAX_SIDE) && IN(TCO, 1, 1 << 16) && IN(TCI, 1, 1 << 16) &&
          IN(INP_SLOTS, 1, 1 << 20) && IN(WGT_SLOTS, 1, 1 << 16) && IN(ACC_SLOTS, 1, 1 << 20) &&
          IN(BIAS_MODE, 0, 3) && IN(PARAM_ROWS, 0, 64) && IN(LOOP_SPATIAL, 0, 1)))
        return 0;
    for (int f = 0; f < 3; f++)
        if (p[VTA_GEMM_UOP_BIT + f] < 0 || p[VTA_GEMM_UOP_WIDTH + f] < 1 ||
            p[VTA_GEMM_UOP_BIT + f] + p[VTA_GEMM_UOP_WIDTH + f] > 62)
            return 0;
    for (int k = 0; k < VTA_GEMM_N_PARAMS; k++)
        if (p[VTA_GEMM_PARAMS + 3 * k] < -1 || p[VTA_GEMM_PARAMS + 3 * k] > T_STORE - T_BIAS)
            return 0;
    /* the address arithmetic stays far from overflow: every base and element below 2^40 */
    for (int k = VTA_GEMM_INP_CONST; k <= VTA_GEMM_E_BIAS_TILES; k++)
        if (p[k] < -1 || p[k] > ((int64_t)1 << 40))
            return 0;
    for (int k = VTA_GEMM_LSH_IMM; k <= VTA_GEMM_CLAMP_HI; k++)
        if (p[k] < -((int64_t)1 << 40) || p[k] > ((int64_t)1 << 40))
            return 0;
    /* the flags are 0 or 1 (some are read as numbers) */
    static const int flags[] = {VTA_GEMM_ROW_SUBSAMPLE, VTA_GEMM_DIAGONAL, VTA_GEMM_INT32_OUTPUT,
                                VTA_GEMM_HAS_BIAS,      VTA_GEMM_ZP,       VTA_GEMM_GEMM_BIAS,
                                VTA_GEMM_STORE_TAIL,    VTA_GEMM_RUNTIME_WEIGHTS,
                                VTA_GEMM_RUNTIME_INIT,  VTA_GEMM_HAS_SHIFT};
    for (size_t k = 0; k < sizeof flags / sizeof flags[0]; k++)
        if (p[flags[k]] != 0 && p[flags[k]] != 1)
            return 0;
    for (int k = 0; k < VTA_GEMM_N_PARAMS; k++) /* first row, rows per block */
        if (p[VTA_GEMM_PARAMS + 3 * k] >= 0 &&
            (p[VTA_GEMM_PARAMS + 3 * k + 1] < 0 || p[VTA_GEMM_PARAMS + 3 * k + 1] > MAX_ELEMS ||
             p[VTA_GEMM_PARAMS + 3 * k + 2] < 0 || p[VTA_GEMM_PARAMS + 3 * k + 2] > 64))
            return 0;
    for (int k = 0; k < VTA_GEMM_N_TAIL; k++)
        if (p[VTA_GEMM_TAIL + k] < VTA_GEMM_TAIL_NONE || p[VTA_GEMM_TAIL + k] > VTA_GEMM_TAIL_ZP)
            return 0;
    if (p[VTA_GEMM_WGT_SLOTS] * (p[VTA_GEMM_TCO] + 1) > (1 << 26))
        return 0;
    /* derived sizes, each value alone being bounded above: the images of the input, output and
       weights (all images), a tile's rows and its input frame */
    int64_t batch = p[VTA_GEMM_BATCH], kh = p[VTA_GEMM_KH], kw = p[VTA_GEMM_KW];
    int64_t th = min64(p[VTA_GEMM_TH], p[VTA_GEMM_OH]), tw = min64(p[VTA_GEMM_TW], p[VTA_GEMM_OW]);
    int64_t input[4] = {batch, p[VTA_GEMM_H], p[VTA_GEMM_W], p[VTA_GEMM_CIB]};
    int64_t output[4] = {batch, p[VTA_GEMM_OH], p[VTA_GEMM_OW], p[VTA_GEMM_COB]};
    int64_t weights[5] = {batch, p[VTA_GEMM_COB], p[VTA_GEMM_CIB], kh, kw};
    int64_t rows[3] = {th, tw, min64(p[VTA_GEMM_TCO], p[VTA_GEMM_COB])};
    if (product_upto(input, 4, MAX_ELEMS) > MAX_ELEMS ||
        product_upto(output, 4, MAX_ELEMS) > MAX_ELEMS ||
        product_upto(weights, 5, MAX_ELEMS) > MAX_ELEMS ||
        product_upto(rows, 3, MAX_ELEMS) > MAX_ELEMS)
        return 0;
    if (p[VTA_GEMM_KIND] != 2) { /* `frame_h`, `frame_w` (below 2^27 here) */
        int64_t fr = p[VTA_GEMM_ROW_SUBSAMPLE]
                         ? th
                         : (th - 1) * p[VTA_GEMM_SH] + (kh - 1) * p[VTA_GEMM_DH] + 1;
        int64_t fc = (tw - 1) * p[VTA_GEMM_SW] + (kw - 1) * p[VTA_GEMM_DW] + 1;
        if (fr > MAX_SIDE || fc > MAX_SIDE)
            return 0;
    }
    /* the steps of all images (each at least one instruction), before they are allocated */
    int64_t steps[5] = {cdiv(p[VTA_GEMM_OH], p[VTA_GEMM_TH]), cdiv(p[VTA_GEMM_OW], p[VTA_GEMM_TW]),
                        cdiv(p[VTA_GEMM_COB], p[VTA_GEMM_TCO]),
                        p[VTA_GEMM_DIAGONAL] ? 1 : cdiv(p[VTA_GEMM_CIB], p[VTA_GEMM_TCI]), batch};
    if (product_upto(steps, 5, VTA_GEMM_MAX_STEPS) > VTA_GEMM_MAX_STEPS)
        return 0;
    return 1;
#undef IN
}

void vta_gemm_free(vta_gemm_result *r) {
    if (!r)
        return;
    free(r->fields), free(r->words), free(r->uops);
    r->fields = NULL, r->words = NULL, r->uops = NULL;
}

int vta_gemm_emit(const int64_t *params, int64_t n_params, const vta_stream_io *statics,
                  vta_gemm_result *out) {
    if (!out)
        return VTA_STREAM_BAD_INPUT;
    memset(out, 0, sizeof *out);
    if (!params || !statics || !check_params(params, n_params))
        return VTA_STREAM_BAD_INPUT;
    em_t em, *e = &em;
    memset(e, 0, sizeof em);
    e->p = params;
    e->uop_depth = statics->uop_depth;
    int64_t ni = P(INP_SLOTS), nw = P(WGT_SLOTS), na = P(ACC_SLOTS);
    e->slot_base[0] = 0, e->slot_base[1] = ni, e->slot_base[2] = ni + nw;
    e->slot_base[3] = ni + nw + na;
    int64_t n = n_steps(e);
    step_t *steps = malloc(sizeof(step_t) * (size_t)n);
    plan_t *plans = malloc(sizeof(plan_t) * (size_t)n);
    e->held = malloc(sizeof(int64_t) * 5 * (size_t)nw);
    e->parts = calloc((size_t)nw, (size_t)P(TCO) + 1);
    e->zeroed = calloc((size_t)na, sizeof(int64_t));
    vec_t loads = {0};
    int rc = VTA_STREAM_NOMEM;
    vta_stream_io io;
    if (!steps || !plans || !e->held || !e->parts || !e->zeroed)
        goto done;
    for (int64_t s = 0; s < 5 * nw; s++)
        e->held[s] = -2; /* no chunk: never equal to one */
    if (push(&e->read_ptr, 0) || push(&e->write_ptr, 0))
        goto done;
    step_list(e, steps);
    rc = plan_steps(e, steps, n, plans, &loads);
    if (rc)
        goto done;
    int64_t row[VTA_STREAM_NF] = {0};
    if (P(IZP) != 0 && !dense(e)) {
        row[F_OPCODE] = OP_SETPAD, row[F_PAD_VALUE] = P(IZP);
        add(e, row, M_LOAD, -1, -1, NULL, 0, NULL, 0);
    }
    if (P(PARAMS_N) >= 0)
        load(e, MEM_ACC, 0, P(E_PARAMS), 1, P(PARAMS_N), P(PARAMS_N), 0, 0, 0, 0, M_COMPUTE,
             S_PARAMS(e));
    int64_t consts_loaded = !(P(ZP) || P(GEMM_BIAS));
    for (e->image = 0; e->image < P(BATCH) && !e->failed; e->image++)
        consts_loaded = image_pass(e, steps, n, plans, &loads, consts_loaded);
    memset(row, 0, sizeof row);
    row[F_OPCODE] = OP_FINISH;
    add(e, row, M_COMPUTE, -1, -1, NULL, 0, NULL, 0);
    if (e->failed) {
        rc = e->failed;
        goto done;
    }
    /* resolve: one signature and one row per instruction */
    int64_t count = e->recs.n / 3;
    int64_t *recs = malloc(sizeof(int64_t) * 5 * (size_t)(count ? count : 1));
    if (!recs)
        goto done;
    int64_t refs = 0;
    for (int64_t i = 0; i < count; i++) {
        int64_t *r = recs + 5 * i;
        r[0] = i, r[1] = e->recs.v[3 * i], r[2] = i, r[3] = e->recs.v[3 * i + 1];
        r[4] = e->recs.v[3 * i + 2];
        refs += r[3] >= 0;
    }
    io = *statics;
    io.nf = VTA_STREAM_NF, io.n = count, io.recs = recs, io.n_rows = count, io.rows = e->rows.v;
    io.n_sigs = count, io.sig_read_ptr = e->read_ptr.v, io.sig_reads = e->reads.v;
    io.sig_write_ptr = e->write_ptr.v, io.sig_writes = e->writes.v;
    io.sig_entries[0] = e->reads.n, io.sig_entries[1] = e->writes.n;
    io.n_slots = e->slot_base[3] + 4;
    io.n_kernels = e->ksizes.n, io.kernel_sizes = e->ksizes.v, io.finish = 1;
    io.capacity = count + refs + 1;
    out->fields = malloc(sizeof(int64_t) * VTA_STREAM_NF * (size_t)io.capacity);
    out->words = malloc(sizeof(uint64_t) * 2 * (size_t)io.capacity);
    out->uops = malloc(sizeof(uint32_t) * (size_t)(e->uops.n ? e->uops.n : 1));
    if (!out->fields || !out->words || !out->uops) {
        free(recs);
        vta_gemm_free(out);
        goto done;
    }
    io.fields = out->fields, io.words = out->words;
    rc = vta_stream_resolve(&io);
    free(recs);
    if (rc) {
        vta_gemm_free(out);
        goto done;
    }
    for (int64_t k = 0; k < e->uops.n; k++)
        out->uops[k] = (uint32_t)e->uops.v[k];
    out->n_out = io.n_out, out->n_uop_loads = io.n_uop_loads, out->n_uops = e->uops.n;
done:
    free(steps), free(plans), free(e->held), free(e->parts), free(e->zeroed), free(loads.v);
    free(e->rows.v), free(e->recs.v), free(e->reads.v), free(e->read_ptr.v), free(e->writes.v);
    free(e->write_ptr.v), free(e->kkeys.v), free(e->ksizes.v), free(e->uops.v);
    return rc;
}
