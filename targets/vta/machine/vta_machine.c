/* libqaccel_vta: the VTA-like accelerator as a C99 functional simulator and timing model.
 *
 * Semantics: docs/isa.md. Reference: targets/vta/simulator.py, which this file mirrors
 * step for step so that both report the same DRAM, the same cycles and the same errors:
 *
 *   decode + validate   -> the first malformed instruction (isa.validate's order)
 *   token counts        -> a pop whose token the program never pushes (static)
 *   event loop          -> the module whose next instruction can start earliest executes it
 *                          (ties: load, compute, store); deadlock when all wait on tokens
 *   execute             -> functional semantics plus the hazard checks: per SRAM row and per
 *                          16-byte DRAM block the last writer / reader instruction, compared
 *                          with the vector clock each module merges when it pops a token.
 *
 * Every size comes from the vta_config (block, buffer depths, field widths); nothing assumes
 * BLOCK = 16, but the GEMM kernel has specialized copies for the common block sizes.
 */
#include "vta_machine.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------------------------ */
/* Instruction fields                                                                          */
/* ------------------------------------------------------------------------------------------ */

/* Every field any instruction has, in the order of isa.FIELD_NAMES. */
#define VTA_FIELDS(X)                                                                       \
    X(OPCODE, "opcode") X(POP_PREV, "pop_prev") X(POP_NEXT, "pop_next")                      \
    X(PUSH_PREV, "push_prev") X(PUSH_NEXT, "push_next") X(MEMORY_TYPE, "memory_type")        \
    X(SRAM_BASE, "sram_base") X(DRAM_BASE, "dram_base") X(Y_SIZE, "y_size")                  \
    X(X_SIZE, "x_size") X(X_STRIDE, "x_stride") X(Y_PAD_0, "y_pad_0") X(Y_PAD_1, "y_pad_1")  \
    X(X_PAD_0, "x_pad_0") X(X_PAD_1, "x_pad_1") X(RESET, "reset") X(UOP_BGN, "uop_bgn")      \
    X(UOP_END, "uop_end") X(ITER_OUT, "iter_out") X(ITER_IN, "iter_in")                      \
    X(DST_FACTOR_OUT, "dst_factor_out") X(DST_FACTOR_IN, "dst_factor_in")                    \
    X(SRC_FACTOR_OUT, "src_factor_out") X(SRC_FACTOR_IN, "src_factor_in")                    \
    X(WGT_FACTOR_OUT, "wgt_factor_out") X(WGT_FACTOR_IN, "wgt_factor_in")                    \
    X(ALU_OPCODE, "alu_opcode") X(USE_IMM, "use_imm") X(IMM, "imm")                          \
    X(PAD_VALUE, "pad_value") X(CLEAR, "clear") X(PARAM_ROW, "param_row")                    \
    X(PARAM_Y, "param_y") X(PARAM_X, "param_x")

#define AS_ENUM(id, name) F_##id,
#define AS_NAME(id, name) name,
enum field { VTA_FIELDS(AS_ENUM) F_COUNT };
static const char *const FIELD_NAMES[F_COUNT] = {VTA_FIELDS(AS_NAME)};

enum opcode { OP_LOAD, OP_STORE, OP_GEMM, OP_FINISH, OP_ALU, OP_SETPAD, OP_COUNT };
enum mem_type { MEM_UOP, MEM_WGT, MEM_INP, MEM_ACC, MEM_OUT, MEM_ACC8, MEM_OUTQ };
enum alu_op { ALU_MIN, ALU_MAX, ALU_ADD, ALU_SHR, ALU_MUL, ALU_RDMUL, ALU_RSHR };
enum module { LOAD, COMPUTE, STORE };
enum buffer { BUF_UOP, BUF_INP, BUF_WGT, BUF_ACC, BUF_COUNT };

static const char *const OPCODE_NAMES[OP_COUNT] = {"LOAD", "STORE", "GEMM", "FINISH", "ALU",
                                                   "SETPAD"};
static const char *const MEM_NAMES[7] = {"UOP", "WGT", "INP", "ACC", "OUT", "ACC8", "OUTQ"};
static const char *const ALU_NAMES[7] = {"MIN", "MAX", "ADD", "SHR", "MUL", "RDMUL", "RSHR"};
static const char *const MODULE_NAMES[VTA_MODULES] = {"load", "compute", "store"};
static const char *const BUF_NAMES[BUF_COUNT] = {"UOP", "INP", "WGT", "ACC"};

/* Instruction formats, one bit per opcode; STORE_RQ is the part of STORE that exists only
 * with store_requant. */
enum {
    FMT_LOAD = 1 << OP_LOAD,
    FMT_STORE = 1 << OP_STORE,
    FMT_GEMM = 1 << OP_GEMM,
    FMT_FINISH = 1 << OP_FINISH,
    FMT_ALU = 1 << OP_ALU,
    FMT_SETPAD = 1 << OP_SETPAD,
    FMT_ALL = (1 << OP_COUNT) - 1,
    FMT_STORE_RQ = 1 << OP_COUNT
};
/* Widths that follow the configuration (log2 of buffer depths, docs/isa.md §2). */
enum { W_LU = -1, W_LU1 = -2, W_LA = -3, W_LI = -4, W_LW = -5 };
#define NEXT (-1) /* the field starts where the format's previous field ends */

struct field_spec {
    int formats, field, bit, width, is_signed;
};

/* The whole ISA encoding (docs/isa.md §4), one line per field. */
static const struct field_spec FIELD_TABLE[] = {
    /* formats                 field               first bit  width   signed */
    {FMT_ALL,                  F_OPCODE,           0,         3,      0},
    {FMT_ALL,                  F_POP_PREV,         3,         1,      0},
    {FMT_ALL,                  F_POP_NEXT,         4,         1,      0},
    {FMT_ALL,                  F_PUSH_PREV,        5,         1,      0},
    {FMT_ALL,                  F_PUSH_NEXT,        6,         1,      0},
    /* 4.1 LOAD / STORE (VTAMemInsn) */
    {FMT_LOAD | FMT_STORE,     F_MEMORY_TYPE,      7,         3,      0},
    {FMT_LOAD | FMT_STORE,     F_SRAM_BASE,        NEXT,      16,     0},
    {FMT_LOAD | FMT_STORE,     F_DRAM_BASE,        NEXT,      32,     0},
    {FMT_LOAD | FMT_STORE,     F_Y_SIZE,           64,        16,     0},
    {FMT_LOAD | FMT_STORE,     F_X_SIZE,           NEXT,      16,     0},
    {FMT_LOAD | FMT_STORE,     F_X_STRIDE,         NEXT,      16,     0},
    {FMT_LOAD,                 F_Y_PAD_0,          NEXT,      4,      0},
    {FMT_LOAD,                 F_Y_PAD_1,          NEXT,      4,      0},
    {FMT_LOAD,                 F_X_PAD_0,          NEXT,      4,      0},
    {FMT_LOAD,                 F_X_PAD_1,          NEXT,      4,      0},
    {FMT_STORE_RQ,             F_CLEAR,            58,        1,      0},
    {FMT_STORE_RQ,             F_PARAM_ROW,        112,       W_LA,   0},
    {FMT_STORE_RQ,             F_PARAM_Y,          NEXT,      1,      0},
    {FMT_STORE_RQ,             F_PARAM_X,          NEXT,      1,      0},
    /* 4.2 / 4.3 GEMM and ALU share word 0 and the dst factors */
    {FMT_GEMM | FMT_ALU,       F_RESET,            7,         1,      0},
    {FMT_GEMM | FMT_ALU,       F_UOP_BGN,          NEXT,      W_LU,   0},
    {FMT_GEMM | FMT_ALU,       F_UOP_END,          NEXT,      W_LU1,  0},
    {FMT_GEMM | FMT_ALU,       F_ITER_OUT,         NEXT,      14,     0},
    {FMT_GEMM | FMT_ALU,       F_ITER_IN,          NEXT,      14,     0},
    {FMT_GEMM | FMT_ALU,       F_DST_FACTOR_OUT,   64,        W_LA,   0},
    {FMT_GEMM | FMT_ALU,       F_DST_FACTOR_IN,    NEXT,      W_LA,   0},
    {FMT_GEMM,                 F_SRC_FACTOR_OUT,   NEXT,      W_LI,   0},
    {FMT_GEMM,                 F_SRC_FACTOR_IN,    NEXT,      W_LI,   0},
    {FMT_GEMM,                 F_WGT_FACTOR_OUT,   NEXT,      W_LW,   0},
    {FMT_GEMM,                 F_WGT_FACTOR_IN,    NEXT,      W_LW,   0},
    {FMT_ALU,                  F_SRC_FACTOR_OUT,   NEXT,      W_LA,   0},
    {FMT_ALU,                  F_SRC_FACTOR_IN,    NEXT,      W_LA,   0},
    {FMT_ALU,                  F_ALU_OPCODE,       NEXT,      3,      0},
    {FMT_ALU,                  F_USE_IMM,          NEXT,      1,      0},
    {FMT_ALU,                  F_IMM,              NEXT,      16,     1},
    /* 4.5 SETPAD [ext] */
    {FMT_SETPAD,               F_PAD_VALUE,        7,         8,      1},
};
#define FIELD_TABLE_LEN ((int)(sizeof FIELD_TABLE / sizeof FIELD_TABLE[0]))

struct field_pos {
    int field, bit, width, is_signed;
};

/* FIFOs: producer, consumer, the producer's push flag, the consumer's pop flag (§5). */
static const struct {
    int producer, consumer, push, pop;
    const char *name;
} FIFOS[VTA_FIFOS] = {
    {LOAD, COMPUTE, F_PUSH_NEXT, F_POP_PREV, "load->compute"},
    {COMPUTE, LOAD, F_PUSH_PREV, F_POP_NEXT, "compute->load"},
    {STORE, COMPUTE, F_PUSH_PREV, F_POP_NEXT, "store->compute"},
    {COMPUTE, STORE, F_PUSH_NEXT, F_POP_PREV, "compute->store"},
};
static const char *const FLAG_NAMES[F_COUNT] = {
    [F_POP_PREV] = "pop_prev", [F_POP_NEXT] = "pop_next",
    [F_PUSH_PREV] = "push_prev", [F_PUSH_NEXT] = "push_next"};

enum { PARAM_ROWS = 4 };  /* STORE OUTQ parameter block: bias, multiplier, shift, (zp, lo, hi) */
enum { DRAM_BLOCK = 16 }; /* hazard-tracking granularity of DRAM, as the reference */

/* ------------------------------------------------------------------------------------------ */
/* Geometry and layout derived from the configuration                                          */
/* ------------------------------------------------------------------------------------------ */

struct geometry {
    int64_t blk;                 /* BLOCK */
    int64_t depth[BUF_COUNT];    /* rows per buffer */
    int log_depth[BUF_COUNT];    /* floor(log2(depth)) */
    int64_t elem[BUF_COUNT];     /* bytes per row */
    struct field_pos fmt[OP_COUNT][F_COUNT];
    int fmt_len[OP_COUNT];
    uint64_t reserved[OP_COUNT][2]; /* bits a format does not use: must be zero */
    int uop_bit[3], uop_width[3];   /* micro-op dst, src, wgt */
};

static int floor_log2(int64_t v) {
    int k = -1;
    while (v > 0) {
        v >>= 1;
        k++;
    }
    return k;
}

static int resolve_width(const struct geometry *g, int w) {
    switch (w) {
    case W_LU: return g->log_depth[BUF_UOP];
    case W_LU1: return g->log_depth[BUF_UOP] + 1;
    case W_LA: return g->log_depth[BUF_ACC];
    case W_LI: return g->log_depth[BUF_INP];
    case W_LW: return g->log_depth[BUF_WGT];
    default: return w;
    }
}

int vta_config_check(const vta_config *c) {
#define VTA_CONFIG_IN_RANGE(key, lowest, highest) \
    if (c->key < (lowest) || c->key > (highest)) return VTA_ERR_CONFIG;
    VTA_CONFIG_FIELDS(VTA_CONFIG_IN_RANGE)
#undef VTA_CONFIG_IN_RANGE
    return VTA_OK;
}

static int make_geometry(const vta_config *c, struct geometry *g) {
    int64_t logs[BUF_COUNT];
    memset(g, 0, sizeof *g);
    if (vta_config_check(c) != VTA_OK) return VTA_ERR_CONFIG;
    g->blk = (int64_t)1 << c->log_block;
    g->elem[BUF_UOP] = 4;
    g->elem[BUF_INP] = g->blk;
    g->elem[BUF_WGT] = g->blk * g->blk;
    g->elem[BUF_ACC] = 4 * g->blk;
    logs[BUF_UOP] = c->log_uop_buff_size;
    logs[BUF_INP] = c->log_inp_buff_size;
    logs[BUF_WGT] = c->log_wgt_buff_size;
    logs[BUF_ACC] = c->log_acc_buff_size;
    for (int b = 0; b < BUF_COUNT; b++) {
        g->depth[b] = ((int64_t)1 << logs[b]) / g->elem[b];
        if (g->depth[b] < 1) return VTA_ERR_CONFIG;
        g->log_depth[b] = floor_log2(g->depth[b]);
    }
    /* Lay the fields out as the table says, per format. */
    for (int op = 0; op < OP_COUNT; op++) {
        int cursor = 0;
        uint64_t used[2] = {0, 0};
        for (int t = 0; t < FIELD_TABLE_LEN; t++) {
            const struct field_spec *s = &FIELD_TABLE[t];
            int formats = s->formats;
            if ((formats & FMT_STORE_RQ) && c->store_requant) formats |= FMT_STORE;
            if (!(formats & (1 << op))) continue;
            struct field_pos p = {s->field, s->bit == NEXT ? cursor : s->bit,
                                  resolve_width(g, s->width), s->is_signed};
            /* A field must sit inside one 64-bit word (the config loader guarantees it). */
            if (p.width < 1 || p.width > 32 || p.bit / 64 != (p.bit + p.width - 1) / 64 ||
                p.bit + p.width > 128)
                return VTA_ERR_CONFIG;
            for (int b = p.bit; b < p.bit + p.width; b++) used[b / 64] |= (uint64_t)1 << (b % 64);
            cursor = p.bit + p.width;
            g->fmt[op][g->fmt_len[op]++] = p;
        }
        g->reserved[op][0] = ~used[0];
        g->reserved[op][1] = ~used[1];
    }
    /* Micro-op: dst (LA bits), src (max(LA, LI)), wgt (LW), from bit 0. */
    g->uop_width[0] = g->log_depth[BUF_ACC];
    g->uop_width[1] = g->log_depth[BUF_ACC] > g->log_depth[BUF_INP] ? g->log_depth[BUF_ACC]
                                                                    : g->log_depth[BUF_INP];
    g->uop_width[2] = g->log_depth[BUF_WGT];
    g->uop_bit[0] = 0;
    g->uop_bit[1] = g->uop_width[0];
    g->uop_bit[2] = g->uop_width[0] + g->uop_width[1];
    if (g->uop_bit[2] + g->uop_width[2] > 32) return VTA_ERR_CONFIG;
    if (c->store_requant && g->log_depth[BUF_ACC] + 2 > 16) return VTA_ERR_CONFIG;
    return VTA_OK;
}

static int64_t extract(const uint64_t *w, const struct field_pos *p) {
    uint64_t v = (w[p->bit / 64] >> (p->bit % 64)) & (((uint64_t)1 << p->width) - 1);
    if (p->is_signed && (v >> (p->width - 1)))
        return (int64_t)v - ((int64_t)1 << p->width);
    return (int64_t)v;
}

static void decode_one(const struct geometry *g, const uint64_t *w, int64_t *f) {
    memset(f, 0, F_COUNT * sizeof *f);
    f[F_OPCODE] = (int64_t)(w[0] & 7);
    if (f[F_OPCODE] >= OP_COUNT) return; /* unknown opcodes decode to their opcode only */
    int op = (int)f[F_OPCODE];
    for (int k = 0; k < g->fmt_len[op]; k++) f[g->fmt[op][k].field] = extract(w, &g->fmt[op][k]);
}

/* isa.describe: "LOAD INP", "ALU RDMUL", "GEMM reset", "opcode 6", ... */
static void describe(const int64_t *f, char *out, size_t size) {
    int64_t op = f[F_OPCODE];
    if (op >= OP_COUNT) {
        snprintf(out, size, "opcode %d", (int)op);
    } else if (op == OP_LOAD || op == OP_STORE) {
        int64_t m = f[F_MEMORY_TYPE];
        if (m < 7)
            snprintf(out, size, "%s %s", OPCODE_NAMES[op], MEM_NAMES[m]);
        else
            snprintf(out, size, "%s %d", OPCODE_NAMES[op], (int)m);
    } else if (op == OP_ALU) {
        if (f[F_ALU_OPCODE] < 7)
            snprintf(out, size, "ALU %s", ALU_NAMES[f[F_ALU_OPCODE]]);
        else
            snprintf(out, size, "ALU");
    } else if (op == OP_GEMM && f[F_RESET]) {
        snprintf(out, size, "GEMM reset");
    } else {
        snprintf(out, size, "%s", OPCODE_NAMES[op]);
    }
}

static int module_of(const int64_t *f) {
    if (f[F_OPCODE] == OP_STORE) return STORE;
    if (f[F_OPCODE] == OP_SETPAD) return LOAD;
    if (f[F_OPCODE] == OP_LOAD && (f[F_MEMORY_TYPE] == MEM_INP || f[F_MEMORY_TYPE] == MEM_WGT))
        return LOAD;
    return COMPUTE;
}

/* ------------------------------------------------------------------------------------------ */
/* The machine                                                                                 */
/* ------------------------------------------------------------------------------------------ */

struct fifo {
    int64_t cap, count, head;
    int64_t *avail;    /* cycle the token becomes available (the pusher's end) */
    int64_t (*clock)[VTA_MODULES]; /* the pusher's vector clock */
};

struct rowset {
    int64_t nb, no;
    int64_t *bases, *offs;
};

typedef struct machine {
    const vta_config *cfg;
    struct geometry g;
    vta_run *run;
    int functional;
    int64_t n;
    const uint64_t *words;
    int64_t *f;                 /* n * F_COUNT decoded fields */
    int64_t *queue[VTA_MODULES];
    int64_t qlen[VTA_MODULES];
    struct fifo fifo[VTA_FIFOS];
    /* vc[m][k]: the last instruction of module k known to happen before module m's next one */
    int64_t vc[VTA_MODULES][VTA_MODULES];
    /* Functional state. */
    uint32_t *uop;
    int8_t *inp, *wgt;
    int32_t *acc;
    uint8_t *uop_valid;
    int32_t *uop_field[3];      /* decoded micro-ops: dst, src, wgt */
    int8_t pad_value;
    /* Hazard tracking: the last instruction that wrote / read each row or DRAM block. */
    int32_t *inp_writer, *inp_reader, *wgt_writer, *wgt_reader;
    int32_t *acc_writer, *acc_store_reader, *acc_clearer;
    int64_t dram_blocks;
    int32_t *dram_writer, *dram_reader[2]; /* readers: load, compute */
    int kernel;                 /* the GEMM kernel in use (enum vta_kernel) */
    /* 0 while vta_prepare runs the program: every check and the timing, no data moved */
    int data;
    struct vta_program *prep;   /* vta_prepare: receives the execution order and micro-ops */
    int16_t *wgt_pairs;         /* WGT widened for the vector kernels, or NULL (gemm_tile_pairs) */
    /* Scratch for the rows a GEMM/ALU/LOAD/STORE touches (see loop_rows, range_rows). */
    uint32_t *stamp_base, *stamp_off, stamp_gen;
    struct rowset rows[3];
    void *owned[24];             /* buffers to free */
    int n_owned;
} machine;

#define FLD(m, i) (&(m)->f[(i) * F_COUNT])

/* WGT tiles in the GEMM kernels' layouts: a scratchpad's WGT buffer (row = SRAM row), or a
 * program's constant weights converted once (row = DRAM tile - first). */
struct tiles {
    int64_t count;
    int8_t *wgt;         /* the tiles as loaded */
    int16_t *pairs;      /* dense tiles as pair rows (the vector kernels), or NULL */
    int16_t *diag;       /* the diagonal of every tile */
    uint8_t *wclass;     /* per tile: TILE_ZERO, TILE_DIAG or TILE_DENSE */
    uint8_t *npairs;     /* per dense tile: its lane pairs (c, c+1) with a nonzero weight */
    uint8_t *pair_list;  /* per tile, pairs_per_tile entries: those pairs */
};

/* A program vta_prepare checked and timed once, for vta_execute to replay with data only. */
struct vta_program {
    vta_config cfg;
    struct geometry g;
    int64_t n, dram_len;
    int64_t *f;          /* n * F_COUNT decoded fields */
    int64_t *order;      /* the instructions in the order the checked run executed them */
    int64_t n_order;
    int64_t *uop_at;     /* per instruction: where its micro-op snapshot starts in uops, or -1 */
    int32_t *uops;       /* per GEMM / ALU of k micro-ops: dst[k], src[k], wgt[k] as loaded */
    int64_t uops_len, uops_used;
    /* per position of order: how many ALU instructions from there run fused (>= 2), else 0 */
    int32_t *alu_fused;
    int64_t dram_written; /* one past the last DRAM byte a STORE writes (0: none) */
    vta_run timing;      /* the checked run's statistics (its pointers cleared) */
    /* vta_program_constants: the DRAM tiles [const_first, const_first + consts.count - 1)
     * every WGT LOAD from the constant bytes reads, converted once; the last is a zero tile
     * (padding). consts.count == 0: none. */
    struct tiles consts;
    int64_t const_first;
};

/* The scratchpads vta_execute works in (any number of programs of one configuration). */
struct vta_scratch {
    vta_config cfg;
    struct geometry g;
    int kernel;          /* enum vta_kernel: VTA_KERNEL_C, or VTA_KERNEL_AVX2 and up */
    int16_t *inp;        /* INP rows widened to int16 */
    struct tiles own;    /* WGT rows loaded from DRAM bytes a run may change */
    /* per WGT row: where its tile is (own, or a program's constants) and its index there */
    const struct tiles **from;
    int64_t *at;
    int64_t pairs_per_tile;
    int32_t *acc;
    int32_t *row;        /* one ACC row: a product added to many rows */
};

struct loops;
static int64_t *prep_fields(struct vta_program *p, int64_t n);
static int prep_replay(struct vta_program *p, machine *m);
static void record_uops(machine *m, int64_t i, const struct loops *L);
static void tiles_free(struct tiles *t);

static int fail(machine *m, int64_t i, const char *fmt, ...) {
    va_list ap;
    vta_run *r = m->run;
    r->error_index = i;
    r->error_kind[0] = 0;
    if (i >= 0 && i < m->n) describe(FLD(m, i), r->error_kind, sizeof r->error_kind);
    va_start(ap, fmt);
    vsnprintf(r->error_message, sizeof r->error_message, fmt, ap);
    va_end(ap);
    return VTA_ERROR;
}

static const char *kind_of(machine *m, int64_t i, char *buf, size_t size) {
    describe(FLD(m, i), buf, size);
    return buf;
}

/* Zeroed memory freed when the run ends (NULL when out of memory). */
static void *alloc(machine *m, size_t count, size_t size) {
    if (m->n_owned == (int)(sizeof m->owned / sizeof m->owned[0])) return NULL;
    void *p = calloc(count ? count : 1, size);
    if (p) m->owned[m->n_owned++] = p;
    return p;
}

static int32_t *alloc_tracker(machine *m, int64_t count) {
    int32_t *p = alloc(m, (size_t)count, sizeof(int32_t));
    if (p)
        for (int64_t k = 0; k < count; k++) p[k] = -1;
    return p;
}

/* --- isa.validate -------------------------------------------------------------------------- */

static int check_encoding(machine *m, int64_t i) {
    const int64_t *f = FLD(m, i);
    const uint64_t *w = m->words + 2 * i;
    const struct geometry *g = &m->g;
    int64_t op = f[F_OPCODE];
    char kind[32];
    kind_of(m, i, kind, sizeof kind);
#define BAD(...) return fail(m, i, "malformed instruction: " __VA_ARGS__)
    if (op >= OP_COUNT) BAD("unknown opcode %d", (int)op);
    if ((w[0] & g->reserved[op][0]) || (w[1] & g->reserved[op][1]))
        BAD("%s: reserved bits are not zero", OPCODE_NAMES[op]);
    int64_t mt = f[F_MEMORY_TYPE];
    const char *mname = mt < 7 ? MEM_NAMES[mt] : "7";
    if (op == OP_LOAD && !(mt == MEM_UOP || mt == MEM_WGT || mt == MEM_INP || mt == MEM_ACC ||
                           mt == MEM_ACC8))
        BAD("LOAD: illegal memory type %s", mname);
    if (op == OP_STORE &&
        !(mt == MEM_ACC || mt == MEM_OUT || (mt == MEM_OUTQ && m->cfg->store_requant)))
        BAD("STORE: illegal memory type %s", mname);
    if (op == OP_STORE && mt != MEM_OUTQ && (f[F_PARAM_ROW] | f[F_PARAM_Y] | f[F_PARAM_X]))
        BAD("%s: parameter rows are only defined for STORE OUTQ", kind);
    if (op == OP_LOAD && mt == MEM_UOP &&
        (f[F_Y_PAD_0] | f[F_Y_PAD_1] | f[F_X_PAD_0] | f[F_X_PAD_1]))
        BAD("%s: padding is only defined for LOAD INP/WGT/ACC/ACC8", kind);
    int mod = module_of(f);
    if (mod == LOAD && (f[F_POP_PREV] | f[F_PUSH_PREV]))
        BAD("%s: the load module has no prev token queues", kind);
    if (mod == STORE && (f[F_POP_NEXT] | f[F_PUSH_NEXT]))
        BAD("%s: the store module has no next token queues", kind);
    if (op == OP_ALU && f[F_RESET]) BAD("ALU: reset bit must be zero");
    if ((op == OP_GEMM || op == OP_ALU) && f[F_UOP_BGN] >= f[F_UOP_END])
        BAD("%s: empty micro-op range %d:%d", kind, (int)f[F_UOP_BGN], (int)f[F_UOP_END]);
    if (op == OP_ALU) {
        int64_t a = f[F_ALU_OPCODE], imm = f[F_IMM];
        if (!f[F_USE_IMM] && imm) BAD("ALU: imm must be zero when use_imm is 0");
        if (a > ALU_RSHR) BAD("ALU: unknown ALU opcode %d", (int)a);
        if (f[F_USE_IMM] && a == ALU_SHR && (imm < -31 || imm > 31))
            BAD("ALU SHR: immediate shift %d outside [-31, 31]", (int)imm);
        if (f[F_USE_IMM] && a == ALU_RSHR && (imm < 0 || imm > 31))
            BAD("ALU RSHR: immediate exponent %d outside [0, 31]", (int)imm);
    }
    if (i == m->n - 1 && op != OP_FINISH) BAD("the program must end with FINISH");
    if (op == OP_FINISH && i != m->n - 1) BAD("FINISH before the end of the program");
#undef BAD
    return VTA_OK;
}

/* The k-th pop of a FIFO with fewer than k pushes in the whole program can never proceed. */
static int check_token_counts(machine *m) {
    for (int q = 0; q < VTA_FIFOS; q++) {
        int64_t pushes = 0, pops = 0;
        int prod = FIFOS[q].producer, cons = FIFOS[q].consumer;
        for (int64_t k = 0; k < m->qlen[prod]; k++) pushes += FLD(m, m->queue[prod][k])[FIFOS[q].push] != 0;
        for (int64_t k = 0; k < m->qlen[cons]; k++) {
            int64_t i = m->queue[cons][k];
            if (!FLD(m, i)[FIFOS[q].pop]) continue;
            if (pops++ == pushes)
                return fail(m, i,
                            "pops %s token #%lld (%s) but the program pushes only %lld %s "
                            "token(s) (%s on %s instructions)",
                            FIFOS[q].name, (long long)(pushes + 1), FLAG_NAMES[FIFOS[q].pop],
                            (long long)pushes, FIFOS[q].name, FLAG_NAMES[FIFOS[q].push],
                            MODULE_NAMES[prod]);
        }
        m->fifo[q].cap = pushes;
    }
    return VTA_OK;
}

/* --- hazards (vector clocks) --------------------------------------------------------------- */

/* Instruction `last` of module `other` must happen before instruction i of module `me`. */
static int after(machine *m, int64_t i, int me, int other, int64_t last, const char *what,
                 int overwrites) {
    char kind[32];
    if (last <= m->vc[me][other]) return VTA_OK;
    return fail(m, i,
                "%s %s %s by %s instruction %lld (%s) with no token chain ordering the two "
                "(missing push/pop of a dependency token?)",
                overwrites ? "overwrites" : "reads", what, overwrites ? "touched" : "written",
                MODULE_NAMES[other], (long long)last, kind_of(m, last, kind, sizeof kind));
}

/* "INP row 5", "DRAM byte 4096": what a hazard is about. */
static const char *where(char *buf, size_t size, const char *what, int64_t at) {
    snprintf(buf, size, "%s %lld", what, (long long)at);
    return buf;
}

/* Row sequences in the reference's order: for each offset (outer), each base (inner); a row
 * may come twice when two sums coincide (the checks and updates are idempotent). A range
 * [base, base + n) is one base and the offsets 0..n-1. */
#define FOR_ROWS(rs, row)                                                                   \
    for (int64_t o_ = 0; o_ < (rs)->no; o_++)                                                \
        for (int64_t b_ = 0, row; b_ < (rs)->nb && (row = (rs)->offs[o_] + (rs)->bases[b_], 1); \
             b_++)

static struct rowset *range_rows(machine *m, int slot, int64_t base, int64_t n) {
    struct rowset *rs = &m->rows[slot];
    rs->nb = 1;
    rs->bases[0] = base;
    rs->no = n;
    for (int64_t k = 0; k < n; k++) rs->offs[k] = k;
    return rs;
}

static int cmp_int64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* The rows the loops touch through `base` (micro-op fields) with factors (fo, fi): the
 * distinct micro-op values (in micro-op order) and the distinct loop offsets o*fo + i*fi in
 * the order of the reference's `distinct_offsets` (loop order, or sorted when it has to
 * deduplicate). Hazard checks visit these instead of every iteration: the reduction loops
 * revisit the same rows many times. All values are below the buffer depth (range-checked). */
static struct rowset *loop_rows(machine *m, int slot, const int32_t *base, int64_t k, int64_t fo,
                                int64_t fi, int64_t n_out, int64_t n_in) {
    struct rowset *rs = &m->rows[slot];
    uint32_t gen = ++m->stamp_gen;
    rs->nb = rs->no = 0;
    for (int64_t u = 0; u < k; u++)
        if (m->stamp_base[base[u]] != gen) {
            m->stamp_base[base[u]] = gen;
            rs->bases[rs->nb++] = base[u];
        }
    int sorted = 0;
    if (fo == 0 || n_out == 1) {
        n_out = 1;
        if (fi == 0) n_in = 1;
    } else if (fi == 0 || n_in == 1) {
        n_in = 1;
    } else if (!(fo >= fi * n_in || fi >= fo * n_out)) {
        sorted = 1; /* offsets may coincide: the reference takes np.unique (sorted) */
    }
    for (int64_t o = 0; o < n_out; o++)
        for (int64_t ii = 0; ii < n_in; ii++) {
            int64_t off = o * fo + ii * fi;
            if (m->stamp_off[off] != gen) {
                m->stamp_off[off] = gen;
                rs->offs[rs->no++] = off;
            }
        }
    if (sorted) qsort(rs->offs, (size_t)rs->no, sizeof rs->offs[0], cmp_int64);
    return rs;
}

/* The reference's `_war` / `_after` over rows: every instruction of module `other` recorded in
 * `tracker` for these rows must happen before instruction i. Names the first offending row
 * and the latest offending instruction. */
static int rows_after(machine *m, int64_t i, int me, int other, const struct rowset *rs,
                      const int32_t *tracker, int buf, int overwrites) {
    int64_t limit = m->vc[me][other], first = -1, worst = -1;
    FOR_ROWS(rs, row)
        if (tracker[row] > limit) {
            if (first < 0) first = row;
            if (tracker[row] > worst) worst = tracker[row];
        }
    if (first < 0) return VTA_OK;
    char what[48], name[8];
    snprintf(name, sizeof name, "%s row", BUF_NAMES[buf]);
    return after(m, i, me, other, worst, where(what, sizeof what, name, first), overwrites);
}

/* The reference's `_read_rows`: every row was written (else "uninitialized"), and a write by
 * another module happens before instruction i. */
static int rows_read(machine *m, int64_t i, int me, const struct rowset *rs,
                     const int32_t *writer, int buf, int writer_module) {
    FOR_ROWS(rs, row)
        if (writer[row] < 0)
            return fail(m, i,
                        "reads %s row %lld before any instruction wrote it (uninitialized, or "
                        "a missing dependency token lets this instruction run first)",
                        BUF_NAMES[buf], (long long)row);
    if (writer_module == me) return VTA_OK;
    return rows_after(m, i, me, writer_module, rs, writer, buf, 0);
}

static void rows_set(const struct rowset *rs, int32_t *tracker, int64_t i) {
    FOR_ROWS(rs, row) tracker[row] = (int32_t)i;
}

/* --- LOAD / STORE -------------------------------------------------------------------------- */

static int64_t dram_elem_bytes(const struct geometry *g, int64_t mt) {
    switch (mt) {
    case MEM_UOP: return 4;
    case MEM_WGT: return g->elem[BUF_WGT];
    case MEM_ACC: return g->elem[BUF_ACC];
    default: return g->blk; /* INP, OUT, OUTQ, ACC8: one int8 per lane */
    }
}

static int sram_of(int64_t mt) {
    return mt == MEM_UOP ? BUF_UOP : mt == MEM_WGT ? BUF_WGT : mt == MEM_INP ? BUF_INP : BUF_ACC;
}

/* The DRAM element range of a 2-D access must lie inside `limit` bytes. */
static int check_dram(machine *m, int64_t i, const int64_t *f, int64_t eb, int64_t limit,
                      const char *what) {
    int64_t last = f[F_DRAM_BASE] + (f[F_Y_SIZE] - 1) * f[F_X_STRIDE] + f[F_X_SIZE] - 1;
    if ((last + 1) * eb > limit)
        return fail(m, i,
                    "%s access out of range: element %lld of %lld bytes ends at byte %lld > %s "
                    "size %lld",
                    what, (long long)last, (long long)eb, (long long)((last + 1) * eb), what,
                    (long long)limit);
    return VTA_OK;
}

/* The 16-byte DRAM blocks element `e` of `eb` bytes covers, `lo..hi` (for every element of
 * 16 bytes or more, `e * eb / 16` and the following `eb / 16 - 1`). */
#define BLOCKS_OF(e, eb, lo, hi)                                                            \
    int64_t lo = (e) * (eb) / DRAM_BLOCK, hi = ((e) * (eb) + (eb) - 1) / DRAM_BLOCK

static int32_t to_i32(uint32_t u) {
    /* two's complement reinterpretation without implementation-defined conversions */
    return u < 0x80000000u ? (int32_t)u : (int32_t)(u - 0x80000000u) + INT32_MIN;
}

static int32_t read_le32(const uint8_t *p) {
    return to_i32((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
                  (uint32_t)p[3] << 24);
}

static void widen_weights(machine *m, int64_t row);

static int exec_load(machine *m, int64_t i, int me, const int64_t *f) {
    const struct geometry *g = &m->g;
    int64_t mt = f[F_MEMORY_TYPE];
    if (f[F_X_SIZE] == 0 || f[F_Y_SIZE] == 0) return VTA_OK; /* dependency-only no-op */
    int64_t yp0 = f[F_Y_PAD_0], xp0 = f[F_X_PAD_0];
    int64_t ys = f[F_Y_SIZE], xs = f[F_X_SIZE], stride = f[F_X_STRIDE];
    int64_t ytot = yp0 + ys + f[F_Y_PAD_1], xtot = xp0 + xs + f[F_X_PAD_1];
    int buf = sram_of(mt);
    int64_t depth = g->depth[buf], base = f[F_SRAM_BASE], rows = ytot * xtot;
    int rc;
    if (base + rows > depth)
        return fail(m, i, "%s SRAM out of range: rows %lld..%lld (depth %lld)", BUF_NAMES[buf],
                    (long long)base, (long long)(base + rows - 1), (long long)depth);
    if (mt == MEM_UOP) { /* no padding (validated); from the micro-op image */
        if ((rc = check_dram(m, i, f, 4, 4 * m->run->uop_image_len, "micro-op image"))) return rc;
        for (int64_t y = 0; y < ys; y++)
            for (int64_t x = 0; x < xs; x++) {
                int64_t row = base + y * xs + x;
                uint32_t u = m->run->uop_image[f[F_DRAM_BASE] + y * stride + x];
                m->uop[row] = u;
                m->uop_valid[row] = 1;
                for (int k = 0; k < 3; k++)
                    m->uop_field[k][row] =
                        (int32_t)((u >> g->uop_bit[k]) & (((uint64_t)1 << g->uop_width[k]) - 1));
            }
        return VTA_OK;
    }
    int64_t eb = dram_elem_bytes(g, mt);
    if ((rc = check_dram(m, i, f, eb, m->run->dram_len, "DRAM"))) return rc;
    /* DRAM read after a STORE's write: the STORE must happen before. */
    int64_t worst = -1, worst_block = 0;
    for (int64_t y = 0; y < ys; y++)
        for (int64_t x = 0; x < xs; x++) {
            BLOCKS_OF(f[F_DRAM_BASE] + y * stride + x, eb, b0, b1);
            for (int64_t b = b0; b <= b1; b++)
                if (m->dram_writer[b] > m->vc[me][STORE] && worst < 0) {
                    worst_block = b;
                    worst = m->dram_writer[b];
                }
        }
    if (worst >= 0) {
        /* the reference names the first offending block and the latest offending writer */
        for (int64_t y = 0; y < ys; y++)
            for (int64_t x = 0; x < xs; x++) {
                BLOCKS_OF(f[F_DRAM_BASE] + y * stride + x, eb, b0, b1);
                for (int64_t b = b0; b <= b1; b++)
                    if (m->dram_writer[b] > worst) worst = m->dram_writer[b];
            }
        char what[48];
        return after(m, i, me, STORE, worst,
                     where(what, sizeof what, "DRAM byte", worst_block * DRAM_BLOCK), 0);
    }
    int32_t *reader = m->dram_reader[me == LOAD ? 0 : 1];
    for (int64_t y = 0; y < ys; y++)
        for (int64_t x = 0; x < xs; x++) {
            BLOCKS_OF(f[F_DRAM_BASE] + y * stride + x, eb, b0, b1);
            for (int64_t b = b0; b <= b1; b++) reader[b] = (int32_t)i;
        }
    /* Write-after-read on the SRAM rows: the reader must have finished. */
    const int32_t *readers = buf == BUF_INP ? m->inp_reader : buf == BUF_WGT ? m->wgt_reader
                                                                              : m->acc_store_reader;
    int other = buf == BUF_ACC ? STORE : COMPUTE;
    if ((rc = rows_after(m, i, me, other, range_rows(m, 0, base, rows), readers, buf, 1)))
        return rc;
    if (!m->data) { /* vta_prepare: the writers only */
        int32_t *writer = buf == BUF_INP ? m->inp_writer : buf == BUF_WGT ? m->wgt_writer
                                                                          : m->acc_writer;
        for (int64_t row = base; row < base + rows; row++) writer[row] = (int32_t)i;
        return VTA_OK;
    }
    const uint8_t *dram = m->run->dram;
    int64_t blk = g->blk;
    for (int64_t y = 0; y < ytot; y++)
        for (int64_t x = 0; x < xtot; x++) {
            int64_t row = base + y * xtot + x;
            int inside = y >= yp0 && y < yp0 + ys && x >= xp0 && x < xp0 + xs;
            const uint8_t *src =
                inside ? dram + (f[F_DRAM_BASE] + (y - yp0) * stride + (x - xp0)) * eb : NULL;
            if (buf == BUF_INP) {
                if (src)
                    memcpy(m->inp + row * blk, src, (size_t)blk);
                else
                    memset(m->inp + row * blk, (unsigned char)m->pad_value, (size_t)blk);
                m->inp_writer[row] = (int32_t)i;
            } else if (buf == BUF_WGT) {
                if (src)
                    memcpy(m->wgt + row * blk * blk, src, (size_t)(blk * blk));
                else
                    memset(m->wgt + row * blk * blk, 0, (size_t)(blk * blk));
                m->wgt_writer[row] = (int32_t)i;
                if (m->wgt_pairs) widen_weights(m, row);
            } else {
                int32_t *dst = m->acc + row * blk;
                for (int64_t j = 0; j < blk; j++)
                    dst[j] = !src ? 0 : mt == MEM_ACC ? read_le32(src + 4 * j)
                                                      : (int32_t)(int8_t)src[j];
                m->acc_writer[row] = (int32_t)i;
            }
        }
    return VTA_OK;
}

/* --- ALU lanes (alu.py) --------------------------------------------------------------------- */

/* Arithmetic shift right, s in [0, 31]. C99 leaves `>>` of a negative value
 * implementation-defined; every compiler we target (GCC, Clang, MSVC) shifts arithmetically,
 * which lets the lane loops vectorize. The typedef stops the build on one that does not. */
typedef char vta_requires_arithmetic_right_shift[((-8) >> 1) == -4 ? 1 : -1];
static int32_t asr32(int32_t x, int s) { return x >> s; }

static int32_t rdmul(int32_t x, int32_t y) { /* gemmlowp SaturatingRoundingDoublingHighMul */
    if (x == INT32_MIN && y == INT32_MIN) return INT32_MAX;
    int64_t p = (int64_t)x * y;
    int64_t nudge = p >= 0 ? (int64_t)1 << 30 : 1 - ((int64_t)1 << 30);
    return (int32_t)((p + nudge) / ((int64_t)1 << 31)); /* C division truncates toward zero */
}

static int32_t rshr(int32_t x, int e) { /* gemmlowp RoundingDivideByPOT, e in [0, 31] */
    int64_t mask = ((int64_t)1 << e) - 1;
    int64_t rem = (int64_t)x & mask;
    int64_t threshold = (mask >> 1) + (x < 0);
    return asr32(x, e) + (rem > threshold);
}

/* SHR: y in [0, 31] shifts right; y in [-31, -1] shifts left keeping the low 32 bits. */
static int32_t shr(int32_t x, int32_t y) {
    return y >= 0 ? asr32(x, y) : to_i32((uint32_t)x << -y);
}

/* One accumulator row: x[j] = op(x[j], y ? y[j] : imm) for every lane. Returns the first lane
 * whose shift operand is out of range (the hardware result is undefined), or -1. The switch
 * is outside the lane loops so that each loop is tight. */
#define LANES(expr)                                                                         \
    if (y) {                                                                                \
        for (int64_t j = 0; j < blk; j++) {                                                 \
            int32_t a = x[j], b = y[j];                                                     \
            x[j] = (expr);                                                                  \
        }                                                                                   \
    } else { /* the immediate: one operand for every lane */                                \
        const int32_t b = imm;                                                              \
        for (int64_t j = 0; j < blk; j++) {                                                 \
            int32_t a = x[j];                                                               \
            x[j] = (expr);                                                                  \
        }                                                                                   \
    }
static int64_t alu_row(int op, int32_t *x, const int32_t *y, int32_t imm, int64_t blk) {
    switch (op) {
    case ALU_MIN: LANES(a < b ? a : b) break;
    case ALU_MAX: LANES(a > b ? a : b) break;
    case ALU_ADD: LANES(to_i32((uint32_t)a + (uint32_t)b)) break;
    case ALU_MUL: LANES(to_i32((uint32_t)a * (uint32_t)b)) break;
    case ALU_RDMUL: LANES(rdmul(a, b)) break;
    case ALU_SHR:
        for (int64_t j = 0; j < blk; j++)
            if ((y ? y[j] : imm) < -31 || (y ? y[j] : imm) > 31) return j;
        if (!y && imm >= 0) { /* the common immediate right shift, one direction */
            for (int64_t j = 0; j < blk; j++) x[j] = asr32(x[j], imm);
            break;
        }
        LANES(shr(a, b)) break;
    default: /* ALU_RSHR */
        for (int64_t j = 0; j < blk; j++)
            if ((y ? y[j] : imm) < 0 || (y ? y[j] : imm) > 31) return j;
        LANES(rshr(a, b)) break;
    }
    return -1;
}
#undef LANES

/* STORE OUTQ's output stage on one lane (docs/isa.md §6.3); 0: shift lane out of range. */
static int output_lane(int32_t x, const int32_t *p, int64_t blk, int64_t lane, int32_t *out) {
    int32_t bias = p[lane], mult = p[blk + lane], s = p[2 * blk + lane];
    int32_t zp = p[3 * blk], lo = p[3 * blk + 1], hi = p[3 * blk + 2];
    if (s > 31 || s < -31) return 0;
    int32_t v = to_i32((uint32_t)x + (uint32_t)bias);
    v = shr(v, -(s > 0 ? s : 0));
    v = rdmul(v, mult);
    v = rshr(v, s < 0 ? -s : 0);
    int64_t w = (int64_t)v + zp; /* exact: the sum does not wrap */
    if (w < lo) w = lo;
    if (w > hi) w = hi;
    *out = (int32_t)w;
    return 1;
}

/* STORE OUTQ: range-check every shift lane before writing anything; the reference reports
 * the first lane whose shift is > 31 (its SHR step), else the first < -31 (RSHR step). The
 * shifts are data (parameter rows): checked on every run, by both paths. */
static int store_shifts(machine *m, int64_t i, const int64_t *f) {
    int64_t xs = f[F_X_SIZE], n = f[F_Y_SIZE] * xs, blk = m->g.blk;
    int64_t py = f[F_PARAM_Y], px = f[F_PARAM_X];
    for (int pass = 0; pass < 2; pass++)
        for (int64_t k = 0; k < n; k++) {
            int64_t p = f[F_PARAM_ROW] + PARAM_ROWS * ((k / xs) * py + (k % xs) * px);
            const int32_t *shift = m->acc + (p + 2) * blk;
            for (int64_t j = 0; j < blk; j++)
                if (pass == 0 ? shift[j] > 31 : shift[j] < -31)
                    return fail(m, i,
                                "output stage: %s %d outside [%d, %d] (row %lld of the "
                                "store, lane %lld); the hardware result is undefined",
                                pass == 0 ? "SHR shift amount" : "RSHR exponent",
                                pass == 0 ? -shift[j] : -shift[j], pass == 0 ? -31 : 0,
                                31, (long long)k, (long long)j);
        }
    return VTA_OK;
}

static void store_acc_row(uint8_t *dst, const int32_t *v, int64_t blk) {
    for (int64_t j = 0; j < blk; j++) {
        uint32_t u = (uint32_t)v[j];
        dst[4 * j] = (uint8_t)u;
        dst[4 * j + 1] = (uint8_t)(u >> 8);
        dst[4 * j + 2] = (uint8_t)(u >> 16);
        dst[4 * j + 3] = (uint8_t)(u >> 24);
    }
}

static void store_narrow_rows(uint8_t *dst, const int32_t *v, int64_t count, int vector); /* below */

/* The data a STORE writes to DRAM (ranges and shifts checked before). */
static void store_rows(machine *m, const int64_t *f) {
    int64_t mt = f[F_MEMORY_TYPE], blk = m->g.blk, eb = dram_elem_bytes(&m->g, mt);
    int64_t ys = f[F_Y_SIZE], xs = f[F_X_SIZE], stride = f[F_X_STRIDE], base = f[F_SRAM_BASE];
    uint8_t *dram = m->run->dram;
    for (int64_t y = 0; y < ys; y++) {
        uint8_t *dst = dram + (f[F_DRAM_BASE] + y * stride) * eb;
        const int32_t *v = m->acc + (base + y * xs) * blk;
        if (mt == MEM_OUT) { /* the low 8 bits; a line of rows is contiguous on both sides */
            store_narrow_rows(dst, v, xs * blk, m->kernel >= VTA_KERNEL_AVX2);
            continue;
        }
        for (int64_t x = 0; x < xs; x++, dst += eb, v += blk) {
            if (mt == MEM_ACC) {
                store_acc_row(dst, v, blk);
                continue;
            }
            const int32_t *params =
                m->acc + (f[F_PARAM_ROW] + PARAM_ROWS * (y * f[F_PARAM_Y] + x * f[F_PARAM_X])) * blk;
            for (int64_t j = 0; j < blk; j++) {
                int32_t out = v[j];
                output_lane(v[j], params, blk, j, &out); /* ranges checked before */
                dst[j] = (uint8_t)(uint32_t)out; /* OUTQ: the low 8 bits */
            }
        }
    }
}

static int exec_store(machine *m, int64_t i, const int64_t *f) {
    const struct geometry *g = &m->g;
    int64_t mt = f[F_MEMORY_TYPE];
    if (f[F_X_SIZE] == 0 || f[F_Y_SIZE] == 0) return VTA_OK;
    int64_t ys = f[F_Y_SIZE], xs = f[F_X_SIZE], stride = f[F_X_STRIDE], n = ys * xs;
    int64_t base = f[F_SRAM_BASE], depth = g->depth[BUF_ACC], blk = g->blk;
    int rc;
    if (base + n > depth)
        return fail(m, i, "ACC SRAM out of range: rows %lld..%lld (depth %lld)",
                    (long long)base, (long long)(base + n - 1), (long long)depth);
    if (ys > 1 && stride < xs)
        return fail(m, i, "x_stride %lld < x_size %lld: the rows overlap in DRAM",
                    (long long)stride, (long long)xs);
    const struct rowset *data = range_rows(m, 0, base, n);
    if ((rc = rows_read(m, i, STORE, data, m->acc_writer, BUF_ACC, COMPUTE))) return rc;
    int64_t eb = dram_elem_bytes(g, mt);
    if ((rc = check_dram(m, i, f, eb, m->run->dram_len, "DRAM"))) return rc;
    for (int other = LOAD; other <= COMPUTE; other++) {
        const int32_t *rd = m->dram_reader[other];
        for (int64_t y = 0; y < ys; y++)
            for (int64_t x = 0; x < xs; x++) {
                BLOCKS_OF(f[F_DRAM_BASE] + y * stride + x, eb, b0, b1);
                for (int64_t b = b0; b <= b1; b++)
                    if (rd[b] > m->vc[STORE][other]) {
                        /* the reference names the latest offending reader */
                        int64_t worst = -1;
                        for (int64_t y2 = 0; y2 < ys; y2++)
                            for (int64_t x2 = 0; x2 < xs; x2++) {
                                BLOCKS_OF(f[F_DRAM_BASE] + y2 * stride + x2, eb, c0, c1);
                                for (int64_t c = c0; c <= c1; c++)
                                    if (rd[c] > worst) worst = rd[c];
                            }
                        char what[48];
                        return after(m, i, STORE, other, worst,
                                     where(what, sizeof what, "DRAM byte", b * DRAM_BLOCK), 1);
                    }
            }
    }
    if (mt == MEM_OUTQ) {
        int64_t py = f[F_PARAM_Y], px = f[F_PARAM_X];
        int64_t first_max = f[F_PARAM_ROW] + PARAM_ROWS * ((ys - 1) * py + (xs - 1) * px);
        if (first_max + PARAM_ROWS > depth)
            return fail(m, i, "parameter rows up to %lld exceed the ACC depth %lld",
                        (long long)(first_max + PARAM_ROWS - 1), (long long)depth);
        /* the parameter blocks, row by row: offsets = each block's first row */
        struct rowset *prs = &m->rows[1];
        prs->nb = PARAM_ROWS;
        for (int64_t k = 0; k < PARAM_ROWS; k++) prs->bases[k] = k;
        prs->no = n;
        for (int64_t k = 0; k < n; k++)
            prs->offs[k] = f[F_PARAM_ROW] + PARAM_ROWS * ((k / xs) * py + (k % xs) * px);
        if ((rc = rows_read(m, i, STORE, prs, m->acc_writer, BUF_ACC, COMPUTE))) return rc;
        rows_set(prs, m->acc_store_reader, i);
        if (m->data && (rc = store_shifts(m, i, f))) return rc;
    }
    if (!m->data) { /* vta_prepare: the trackers only */
        for (int64_t k = 0; k < n; k++) {
            m->acc_store_reader[base + k] = (int32_t)i;
            BLOCKS_OF(f[F_DRAM_BASE] + (k / xs) * stride + k % xs, eb, b0, b1);
            for (int64_t b = b0; b <= b1; b++) m->dram_writer[b] = (int32_t)i;
        }
        if (f[F_CLEAR])
            for (int64_t r = base; r < base + n; r++) m->acc_clearer[r] = (int32_t)i;
        return VTA_OK;
    }
    store_rows(m, f);
    for (int64_t k = 0; k < n; k++) {
        m->acc_store_reader[base + k] = (int32_t)i;
        BLOCKS_OF(f[F_DRAM_BASE] + (k / xs) * stride + k % xs, eb, b0, b1);
        for (int64_t b = b0; b <= b1; b++) m->dram_writer[b] = (int32_t)i;
    }
    if (f[F_CLEAR])
        for (int64_t r = base; r < base + n; r++) {
            memset(m->acc + r * blk, 0, (size_t)(blk * 4));
            m->acc_clearer[r] = (int32_t)i;
        }
    return VTA_OK;
}
/* --- GEMM / ALU ---------------------------------------------------------------------------- */

struct loops {
    int64_t bgn, end, n_out, n_in;
    int64_t dfo, dfi, sfo, sfi, wfo, wfi;
    const int32_t *dk, *sk, *wk; /* micro-op fields from bgn */
};

static int uop_range(machine *m, int64_t i, const int64_t *f, struct loops *L) {
    L->bgn = f[F_UOP_BGN];
    L->end = f[F_UOP_END];
    L->n_out = f[F_ITER_OUT];
    L->n_in = f[F_ITER_IN];
    L->dfo = f[F_DST_FACTOR_OUT];
    L->dfi = f[F_DST_FACTOR_IN];
    L->sfo = f[F_SRC_FACTOR_OUT];
    L->sfi = f[F_SRC_FACTOR_IN];
    L->wfo = f[F_WGT_FACTOR_OUT];
    L->wfi = f[F_WGT_FACTOR_IN];
    int64_t depth = m->g.depth[BUF_UOP];
    if (L->end > depth)
        return fail(m, i, "micro-op range %lld:%lld exceeds the micro-op buffer (%lld)",
                    (long long)L->bgn, (long long)L->end, (long long)depth);
    for (int64_t k = L->bgn; k < L->end; k++)
        if (!m->uop_valid[k])
            return fail(m, i, "micro-op %lld was never loaded (LOAD UOP)", (long long)k);
    L->dk = m->uop_field[0] + L->bgn;
    L->sk = m->uop_field[1] + L->bgn;
    L->wk = m->uop_field[2] + L->bgn;
    return VTA_OK;
}

/* Every base[k] + o*fo + i*fi below the depth (factors are unsigned: check the largest). */
static int index_range(machine *m, int64_t i, const struct loops *L, const int32_t *base,
                       int64_t fo, int64_t fi, int buf) {
    int64_t hi = 0;
    for (int64_t k = 0; k < L->end - L->bgn; k++)
        if (base[k] > hi) hi = base[k];
    hi += (L->n_out - 1) * fo + (L->n_in - 1) * fi;
    if (hi >= m->g.depth[buf])
        return fail(m, i,
                    "%s SRAM index %lld out of range (depth %lld): micro-op index + "
                    "iter_out*factor_out + iter_in*factor_in",
                    BUF_NAMES[buf], (long long)hi, (long long)m->g.depth[buf]);
    return VTA_OK;
}

/* VTA's pipeline rule: consecutive iterations of a non-reset GEMM write different rows. */
static int pipeline_rule(machine *m, int64_t i, const struct loops *L) {
    int64_t k = L->end - L->bgn;
    for (int64_t u = 0; u + 1 < k; u++)
        if (L->dk[u] == L->dk[u + 1])
            return fail(m, i,
                        "micro-ops %lld and %lld write the same accumulator row consecutively "
                        "(the GEMM pipeline cannot accumulate back to back into one row)",
                        (long long)(L->bgn + u), (long long)(L->bgn + u + 1));
    int64_t total = L->n_out * L->n_in, prev = 0;
    for (int64_t b = 1; b < total; b++) {
        int64_t off = (b / L->n_in) * L->dfo + (b % L->n_in) * L->dfi;
        if (L->dk[k - 1] + prev == L->dk[0] + off)
            return fail(m, i,
                        "the last micro-op of iteration (outer %lld, inner %lld) and the first "
                        "of the next write the same accumulator row %lld consecutively",
                        (long long)((b - 1) / L->n_in), (long long)((b - 1) % L->n_in),
                        (long long)(L->dk[k - 1] + prev));
        prev = off;
    }
    return VTA_OK;
}

/* acc[j] += sum_c x[c] * w[j][c], modulo 2^32. |sum| <= blk * 2^14 fits int32 for every block
 * the configuration allows. Inlined with a constant `blk` into the specialized loops. */
static inline void gemm_tile(int32_t *restrict acc, const int8_t *restrict x,
                             const int8_t *restrict w, int64_t blk) {
    for (int64_t j = 0; j < blk; j++) {
        int32_t s = 0;
        for (int64_t c = 0; c < blk; c++) s += (int32_t)x[c] * (int32_t)w[j * blk + c];
        acc[j] = to_i32((uint32_t)acc[j] + (uint32_t)s);
    }
}

#define GEMM_LOOPS(TILE, WGT, WROW, BLK)                                                    \
    for (int64_t o = 0; o < L->n_out; o++)                                                  \
        for (int64_t ii = 0; ii < L->n_in; ii++) {                                          \
            int64_t d0 = o * L->dfo + ii * L->dfi, s0 = o * L->sfo + ii * L->sfi;           \
            int64_t w0 = o * L->wfo + ii * L->wfi;                                          \
            for (int64_t k = 0; k < nk; k++)                                                \
                TILE(acc + (d0 + L->dk[k]) * (BLK), inp + (s0 + L->sk[k]) * (BLK),          \
                     (WGT) + (w0 + L->wk[k]) * (WROW), (BLK));                              \
        }

#ifdef __SSE2__
#include <emmintrin.h>
/* x86-64 always has SSE2. The weights are kept a second time, widened to int16 and laid out
 * as [c / 2][j][c % 2] ("pair rows"), so that one PMADDWD multiplies the lane pair
 * (x[c], x[c+1]) into four output lanes at once and no horizontal sums are needed. */
#define HAVE_PAIR_KERNEL 1
static int pair_kernel_fits(int64_t blk) { return blk == 8 || blk == 16 || blk == 32; }

/* Accumulators are named variables, not an array, so that they live in registers; with a
 * constant `blk` the `nv > k` tests fold away. */
#define PAIR_STEP(pair, w)                                                                  \
    do {                                                                                    \
        s0 = _mm_add_epi32(s0, _mm_madd_epi16(pair, _mm_loadu_si128((w) + 0)));             \
        s1 = _mm_add_epi32(s1, _mm_madd_epi16(pair, _mm_loadu_si128((w) + 1)));             \
        if (nv > 2) s2 = _mm_add_epi32(s2, _mm_madd_epi16(pair, _mm_loadu_si128((w) + 2))); \
        if (nv > 3) s3 = _mm_add_epi32(s3, _mm_madd_epi16(pair, _mm_loadu_si128((w) + 3))); \
        if (nv > 4) s4 = _mm_add_epi32(s4, _mm_madd_epi16(pair, _mm_loadu_si128((w) + 4))); \
        if (nv > 5) s5 = _mm_add_epi32(s5, _mm_madd_epi16(pair, _mm_loadu_si128((w) + 5))); \
        if (nv > 6) s6 = _mm_add_epi32(s6, _mm_madd_epi16(pair, _mm_loadu_si128((w) + 6))); \
        if (nv > 7) s7 = _mm_add_epi32(s7, _mm_madd_epi16(pair, _mm_loadu_si128((w) + 7))); \
    } while (0)

static inline void gemm_tile_pairs(int32_t *acc, const int8_t *x, const int16_t *wp,
                                   int64_t blk) {
    const int64_t nv = blk / 4; /* 2..8 vectors of four int32 lanes */
    __m128i *a = (__m128i *)acc;
    __m128i s0 = _mm_loadu_si128(a), s1 = _mm_loadu_si128(a + 1), zero = _mm_setzero_si128();
    __m128i s2 = nv > 2 ? _mm_loadu_si128(a + 2) : zero, s3 = nv > 3 ? _mm_loadu_si128(a + 3) : zero;
    __m128i s4 = nv > 4 ? _mm_loadu_si128(a + 4) : zero, s5 = nv > 5 ? _mm_loadu_si128(a + 5) : zero;
    __m128i s6 = nv > 6 ? _mm_loadu_si128(a + 6) : zero, s7 = nv > 7 ? _mm_loadu_si128(a + 7) : zero;
    for (int64_t c0 = 0; c0 < blk; c0 += 8) { /* four lane pairs at a time */
        __m128i raw = _mm_loadl_epi64((const __m128i *)(x + c0));
        __m128i x16 = _mm_unpacklo_epi8(raw, _mm_cmpgt_epi8(zero, raw)); /* sign-extend */
        const __m128i *w = (const __m128i *)(wp + c0 * blk); /* pair row c0 / 2 */
        PAIR_STEP(_mm_shuffle_epi32(x16, 0x00), w);
        PAIR_STEP(_mm_shuffle_epi32(x16, 0x55), w + nv);
        PAIR_STEP(_mm_shuffle_epi32(x16, 0xAA), w + 2 * nv);
        PAIR_STEP(_mm_shuffle_epi32(x16, 0xFF), w + 3 * nv);
    }
    _mm_storeu_si128(a, s0);
    _mm_storeu_si128(a + 1, s1);
    if (nv > 2) _mm_storeu_si128(a + 2, s2);
    if (nv > 3) _mm_storeu_si128(a + 3, s3);
    if (nv > 4) _mm_storeu_si128(a + 4, s4);
    if (nv > 5) _mm_storeu_si128(a + 5, s5);
    if (nv > 6) _mm_storeu_si128(a + 6, s6);
    if (nv > 7) _mm_storeu_si128(a + 7, s7);
}

#if defined(__GNUC__) && defined(__x86_64__)
/* The same pair rows, eight output lanes per AVX2 instruction. Compiled for AVX2 whatever the
 * build flags and used only when the CPU has it (vta_simulate checks). */
#include <immintrin.h>
#define HAVE_AVX2_KERNEL 1
#define AVX2 __attribute__((target("avx2")))

#define PAIR_STEP8(pair, w)                                                                 \
    do {                                                                                    \
        s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(pair, _mm256_loadu_si256((w) + 0)));    \
        if (nv > 1)                                                                         \
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(pair, _mm256_loadu_si256((w) + 1)));\
        if (nv > 2)                                                                         \
            s2 = _mm256_add_epi32(s2, _mm256_madd_epi16(pair, _mm256_loadu_si256((w) + 2)));\
        if (nv > 3)                                                                         \
            s3 = _mm256_add_epi32(s3, _mm256_madd_epi16(pair, _mm256_loadu_si256((w) + 3)));\
    } while (0)

static inline AVX2 void gemm_tile_pairs_avx2(int32_t *acc, const int8_t *x, const int16_t *wp,
                                             int64_t blk) {
    const int64_t nv = blk / 8; /* 1..4 vectors of eight int32 lanes */
    __m256i *a = (__m256i *)acc, zero = _mm256_setzero_si256();
    __m256i s0 = _mm256_loadu_si256(a);
    __m256i s1 = nv > 1 ? _mm256_loadu_si256(a + 1) : zero;
    __m256i s2 = nv > 2 ? _mm256_loadu_si256(a + 2) : zero;
    __m256i s3 = nv > 3 ? _mm256_loadu_si256(a + 3) : zero;
    for (int64_t c0 = 0; c0 < blk; c0 += 8) { /* four lane pairs at a time */
        __m128i x16 = _mm_cvtepi8_epi16(_mm_loadl_epi64((const __m128i *)(x + c0)));
        __m256i both = _mm256_broadcastsi128_si256(x16); /* in-lane shuffles broadcast */
        const __m256i *w = (const __m256i *)(wp + c0 * blk);
        PAIR_STEP8(_mm256_shuffle_epi32(both, 0x00), w);
        PAIR_STEP8(_mm256_shuffle_epi32(both, 0x55), w + nv);
        PAIR_STEP8(_mm256_shuffle_epi32(both, 0xAA), w + 2 * nv);
        PAIR_STEP8(_mm256_shuffle_epi32(both, 0xFF), w + 3 * nv);
    }
    _mm256_storeu_si256(a, s0);
    if (nv > 1) _mm256_storeu_si256(a + 1, s1);
    if (nv > 2) _mm256_storeu_si256(a + 2, s2);
    if (nv > 3) _mm256_storeu_si256(a + 3, s3);
}

static int cpu_has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2");
}

/* AVX-VNNI (VPDPWSSD on VEX) and AVX512-VNNI with AVX512VL (VPDPWSSD on 256-bit vectors):
 * the pair kernel's multiply-add-accumulate in one instruction. */
static int cpu_has_avx_vnni(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avxvnni");
}

static int cpu_has_avx512_vnni(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("avx512vnni") &&
           __builtin_cpu_supports("avx512vl");
}
#else
#define HAVE_AVX2_KERNEL 0
#endif
#else
#define HAVE_PAIR_KERNEL 0
#define HAVE_AVX2_KERNEL 0
static int pair_kernel_fits(int64_t blk) { (void)blk; return 0; }
#endif

/* The pair-row copy of WGT row `row` (see gemm_tile_pairs). */
static void widen_weights(machine *m, int64_t row) {
    int64_t blk = m->g.blk;
    const int8_t *w = m->wgt + row * blk * blk;
    int16_t *wp = m->wgt_pairs + row * blk * blk;
    for (int64_t j = 0; j < blk; j++)
        for (int64_t c = 0; c < blk; c++) wp[(c / 2) * 2 * blk + 2 * j + c % 2] = w[j * blk + c];
}

#if HAVE_AVX2_KERNEL
static AVX2 void gemm_run_avx2(machine *m, const struct loops *L) {
    int32_t *acc = m->acc;
    const int8_t *inp = m->inp;
    const int16_t *wp = m->wgt_pairs;
    int64_t nk = L->end - L->bgn;
    switch (m->g.blk) {
    case 8: GEMM_LOOPS(gemm_tile_pairs_avx2, wp, 64, 8) return;
    case 16: GEMM_LOOPS(gemm_tile_pairs_avx2, wp, 256, 16) return;
    default: GEMM_LOOPS(gemm_tile_pairs_avx2, wp, 1024, 32) return;
    }
}
#endif

static void gemm_run(machine *m, const struct loops *L) {
    int32_t *acc = m->acc;
    const int8_t *inp = m->inp, *wgt = m->wgt;
    int64_t nk = L->end - L->bgn, blk = m->g.blk;
#if HAVE_AVX2_KERNEL
    if (m->kernel == VTA_KERNEL_AVX2) {
        gemm_run_avx2(m, L);
        return;
    }
#endif
#if HAVE_PAIR_KERNEL
    const int16_t *wp = m->wgt_pairs;
    if (m->kernel == VTA_KERNEL_SSE2) {
        switch (blk) { /* constant block sizes let the compiler unroll the vector loops */
        case 8: GEMM_LOOPS(gemm_tile_pairs, wp, 64, 8) return;
        case 16: GEMM_LOOPS(gemm_tile_pairs, wp, 256, 16) return;
        default: GEMM_LOOPS(gemm_tile_pairs, wp, 1024, 32) return;
        }
    }
#endif
    switch (blk) { /* VTA_KERNEL_C */
    case 16: GEMM_LOOPS(gemm_tile, wgt, 256, 16) break;
    default: GEMM_LOOPS(gemm_tile, wgt, blk * blk, blk) break;
    }
}

/* --- ALU rows and STORE narrowing, vectorized where the CPU allows -------------------------- */

#if HAVE_AVX2_KERNEL
/* gemmlowp SaturatingRoundingDoublingHighMul on eight lanes, as rdmul. rdmul's nudged
 * product divided by 2^31 truncating toward zero is floor((p + 2^30) / 2^31) for either sign
 * of p (p < 0: (p + 1 - 2^30 + 2^31 - 1) >> 31), i.e. bits 31..62 of p + 2^30. */
static inline AVX2 __m256i rdmul8(__m256i x, __m256i y) {
    const __m256i half = _mm256_set1_epi64x((int64_t)1 << 30);
    __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, y), half);
    __m256i odd = _mm256_add_epi64(
        _mm256_mul_epi32(_mm256_srli_epi64(x, 32), _mm256_srli_epi64(y, 32)), half);
    __m256i out = _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
    const __m256i min = _mm256_set1_epi32(INT32_MIN);
    __m256i both_min = _mm256_and_si256(_mm256_cmpeq_epi32(x, min), _mm256_cmpeq_epi32(y, min));
    return _mm256_blendv_epi8(out, _mm256_set1_epi32(INT32_MAX), both_min);
}

/* gemmlowp RoundingDivideByPOT on eight lanes, exponents in [0, 31], as rshr. */
static inline AVX2 __m256i rshr8(__m256i x, __m256i e) {
    const __m256i zero = _mm256_setzero_si256();
    __m256i mask = _mm256_sub_epi32(_mm256_sllv_epi32(_mm256_set1_epi32(1), e), _mm256_set1_epi32(1));
    __m256i rem = _mm256_and_si256(x, mask);
    __m256i threshold = _mm256_sub_epi32(_mm256_srli_epi32(mask, 1), _mm256_cmpgt_epi32(zero, x));
    return _mm256_sub_epi32(_mm256_srav_epi32(x, e), _mm256_cmpgt_epi32(rem, threshold));
}

/* alu_row for BLOCK 16; -2 when alu_row must do it (SHR, or a shift operand out of range:
 * alu_row then names the lane without writing anything). */
static AVX2 int64_t alu_row16_avx2(int op, int32_t *x, const int32_t *y, int32_t imm) {
    __m256i *xv = (__m256i *)x;
    __m256i a0 = _mm256_loadu_si256(xv), a1 = _mm256_loadu_si256(xv + 1), b0, b1;
    if (y) {
        b0 = _mm256_loadu_si256((const __m256i *)y);
        b1 = _mm256_loadu_si256((const __m256i *)y + 1);
    } else {
        b0 = b1 = _mm256_set1_epi32(imm);
    }
    switch (op) {
    case ALU_MIN: a0 = _mm256_min_epi32(a0, b0), a1 = _mm256_min_epi32(a1, b1); break;
    case ALU_MAX: a0 = _mm256_max_epi32(a0, b0), a1 = _mm256_max_epi32(a1, b1); break;
    case ALU_ADD: a0 = _mm256_add_epi32(a0, b0), a1 = _mm256_add_epi32(a1, b1); break;
    case ALU_MUL: a0 = _mm256_mullo_epi32(a0, b0), a1 = _mm256_mullo_epi32(a1, b1); break;
    case ALU_RDMUL: a0 = rdmul8(a0, b0), a1 = rdmul8(a1, b1); break;
    case ALU_RSHR: {
        const __m256i zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(31);
        __m256i bad = _mm256_or_si256(
            _mm256_or_si256(_mm256_cmpgt_epi32(zero, b0), _mm256_cmpgt_epi32(b0, top)),
            _mm256_or_si256(_mm256_cmpgt_epi32(zero, b1), _mm256_cmpgt_epi32(b1, top)));
        if (!_mm256_testz_si256(bad, bad)) return -2;
        a0 = rshr8(a0, b0), a1 = rshr8(a1, b1);
        break;
    }
    case ALU_SHR:
        if (y) return -2;
        if (imm >= 0) { /* the immediate is in [-31, 31] (validated) */
            __m128i c = _mm_cvtsi32_si128(imm);
            a0 = _mm256_sra_epi32(a0, c), a1 = _mm256_sra_epi32(a1, c);
        } else {
            __m128i c = _mm_cvtsi32_si128(-imm);
            a0 = _mm256_sll_epi32(a0, c), a1 = _mm256_sll_epi32(a1, c);
        }
        break;
    default: return -2;
    }
    _mm256_storeu_si256(xv, a0);
    _mm256_storeu_si256(xv + 1, a1);
    return -1;
}
#endif

/* alu_row with the machine's kernel. */
static int64_t alu_row_fast(const machine *m, int op, int32_t *x, const int32_t *y, int32_t imm) {
#if HAVE_AVX2_KERNEL
    if (m->kernel >= VTA_KERNEL_AVX2 && m->g.blk == 16) {
        int64_t j = alu_row16_avx2(op, x, y, imm);
        if (j != -2) return j;
    }
#endif
    return alu_row(op, x, y, imm, m->g.blk);
}

/* alu_loops for BLOCK 16 with the AVX2 kernel: the op chosen once, every row in loop order.
 * Returns -1 when done, else the iteration (flat, loop order) it stopped at without touching
 * it: SHR with register shifts, or an RSHR exponent out of range, which alu_row names. */
#if HAVE_AVX2_KERNEL
#define ALU16_LOOP(EXPR)                                                                      \
    for (int64_t o = 0, t = 0; o < L->n_out; o++)                                               \
        for (int64_t ii = 0; ii < L->n_in; ii++)                                                \
            for (int64_t k = 0; k < nk; k++, t++) {                                             \
                __m256i *xv = (__m256i *)(acc + (L->dk[k] + o * L->dfo + ii * L->dfi) * 16);    \
                __m256i a0 = _mm256_loadu_si256(xv), a1 = _mm256_loadu_si256(xv + 1);           \
                __m256i b0 = c, b1 = c;                                                         \
                if (!use_imm) {                                                                 \
                    const __m256i *yv =                                                         \
                        (const __m256i *)(acc + (L->sk[k] + o * L->sfo + ii * L->sfi) * 16);    \
                    b0 = _mm256_loadu_si256(yv);                                                \
                    b1 = _mm256_loadu_si256(yv + 1);                                            \
                }                                                                               \
                EXPR;                                                                           \
                _mm256_storeu_si256(xv, a0);                                                    \
                _mm256_storeu_si256(xv + 1, a1);                                                \
            }

static AVX2 int64_t alu_loops16_avx2(int32_t *acc, const int64_t *f, const struct loops *L) {
    int64_t nk = L->end - L->bgn;
    int use_imm = f[F_USE_IMM] != 0, op = (int)f[F_ALU_OPCODE];
    int32_t imm = (int32_t)f[F_IMM];
    const __m256i c = _mm256_set1_epi32(imm), zero = _mm256_setzero_si256();
    const __m256i top = _mm256_set1_epi32(31);
    switch (op) {
    case ALU_MIN: ALU16_LOOP((a0 = _mm256_min_epi32(a0, b0), a1 = _mm256_min_epi32(a1, b1))) break;
    case ALU_MAX: ALU16_LOOP((a0 = _mm256_max_epi32(a0, b0), a1 = _mm256_max_epi32(a1, b1))) break;
    case ALU_ADD: ALU16_LOOP((a0 = _mm256_add_epi32(a0, b0), a1 = _mm256_add_epi32(a1, b1))) break;
    case ALU_MUL: ALU16_LOOP((a0 = _mm256_mullo_epi32(a0, b0), a1 = _mm256_mullo_epi32(a1, b1))) break;
    case ALU_RDMUL: ALU16_LOOP((a0 = rdmul8(a0, b0), a1 = rdmul8(a1, b1))) break;
    case ALU_RSHR:
        ALU16_LOOP({
            __m256i bad = _mm256_or_si256(
                _mm256_or_si256(_mm256_cmpgt_epi32(zero, b0), _mm256_cmpgt_epi32(b0, top)),
                _mm256_or_si256(_mm256_cmpgt_epi32(zero, b1), _mm256_cmpgt_epi32(b1, top)));
            if (!_mm256_testz_si256(bad, bad)) return t;
            a0 = rshr8(a0, b0);
            a1 = rshr8(a1, b1);
        })
        break;
    default: /* SHR */
        if (!use_imm) return 0;
        if (imm >= 0) {
            __m128i n = _mm_cvtsi32_si128(imm);
            ALU16_LOOP(((void)b0, (void)b1, a0 = _mm256_sra_epi32(a0, n), a1 = _mm256_sra_epi32(a1, n)))
        } else {
            __m128i n = _mm_cvtsi32_si128(-imm);
            ALU16_LOOP(((void)b0, (void)b1, a0 = _mm256_sll_epi32(a0, n), a1 = _mm256_sll_epi32(a1, n)))
        }
        break;
    }
    return -1;
}
#undef ALU16_LOOP
#endif

static int64_t alu_loops16(const machine *m, const int64_t *f, const struct loops *L) {
#if HAVE_AVX2_KERNEL
    return alu_loops16_avx2(m->acc, f, L);
#else
    (void)m, (void)f, (void)L;
    return 0;
#endif
}

#if HAVE_AVX2_KERNEL
/* store_narrow_rows, 32 lanes at a time: 0..255 passes both saturating packs unchanged, which
 * interleave the 128-bit halves (a permutation puts them back in order). */
static AVX2 int64_t store_narrow32_avx2(uint8_t *dst, const int32_t *v, int64_t count) {
    const __m256i low = _mm256_set1_epi32(0xFF);
    int64_t k = 0;
    for (; k + 32 <= count; k += 32) {
        const __m256i *s = (const __m256i *)(v + k);
        __m256i a = _mm256_and_si256(_mm256_loadu_si256(s), low);
        __m256i b = _mm256_and_si256(_mm256_loadu_si256(s + 1), low);
        __m256i c = _mm256_and_si256(_mm256_loadu_si256(s + 2), low);
        __m256i d = _mm256_and_si256(_mm256_loadu_si256(s + 3), low);
        __m256i bytes = _mm256_packus_epi16(_mm256_packs_epi32(a, b), _mm256_packs_epi32(c, d));
        /* 32-bit units now: a[0:4] b[0:4] c[0:4] d[0:4] | a[4:8] b[4:8] c[4:8] d[4:8] */
        bytes = _mm256_permutevar8x32_epi32(bytes, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(dst + k), bytes);
    }
    return k;
}
#endif

/* dst[k] = the low 8 bits of v[k] (STORE OUT). */
static void store_narrow_rows(uint8_t *dst, const int32_t *v, int64_t count, int vector) {
    int64_t k = 0;
#if HAVE_AVX2_KERNEL
    if (vector) k = store_narrow32_avx2(dst, v, count);
#else
    (void)vector;
#endif
#if HAVE_PAIR_KERNEL
    const __m128i low = _mm_set1_epi32(0xFF);
    for (; k + 16 <= count; k += 16) {
        const __m128i *s = (const __m128i *)(v + k);
        __m128i a = _mm_and_si128(_mm_loadu_si128(s), low);
        __m128i b = _mm_and_si128(_mm_loadu_si128(s + 1), low);
        __m128i c = _mm_and_si128(_mm_loadu_si128(s + 2), low);
        __m128i d = _mm_and_si128(_mm_loadu_si128(s + 3), low);
        /* 0..255 passes both saturating packs unchanged */
        _mm_storeu_si128((__m128i *)(dst + k),
                         _mm_packus_epi16(_mm_packs_epi32(a, b), _mm_packs_epi32(c, d)));
    }
#endif
    for (; k < count; k++) dst[k] = (uint8_t)(uint32_t)v[k];
}

static int exec_gemm(machine *m, int64_t i, const int64_t *f) {
    struct loops L;
    int rc;
    if ((rc = uop_range(m, i, f, &L))) return rc;
    if (L.n_out == 0 || L.n_in == 0) return VTA_OK;
    int64_t nk = L.end - L.bgn, blk = m->g.blk;
    if ((rc = index_range(m, i, &L, L.dk, L.dfo, L.dfi, BUF_ACC))) return rc;
    if (!f[F_RESET]) {
        if ((rc = index_range(m, i, &L, L.sk, L.sfo, L.sfi, BUF_INP))) return rc;
        if ((rc = index_range(m, i, &L, L.wk, L.wfo, L.wfi, BUF_WGT))) return rc;
        if ((rc = pipeline_rule(m, i, &L))) return rc;
    }
    const struct rowset *dst = loop_rows(m, 0, L.dk, nk, L.dfo, L.dfi, L.n_out, L.n_in);
    if ((rc = rows_after(m, i, COMPUTE, STORE, dst, m->acc_store_reader, BUF_ACC, 1))) return rc;
    if (f[F_RESET]) {
        if (m->data) FOR_ROWS(dst, d) memset(m->acc + d * blk, 0, (size_t)(blk * 4));
        else record_uops(m, i, &L);
        rows_set(dst, m->acc_writer, i);
        return VTA_OK;
    }
    const struct rowset *src = loop_rows(m, 1, L.sk, nk, L.sfo, L.sfi, L.n_out, L.n_in);
    const struct rowset *wgt = loop_rows(m, 2, L.wk, nk, L.wfo, L.wfi, L.n_out, L.n_in);
    if ((rc = rows_read(m, i, COMPUTE, dst, m->acc_writer, BUF_ACC, COMPUTE)) ||
        (rc = rows_read(m, i, COMPUTE, src, m->inp_writer, BUF_INP, LOAD)) ||
        (rc = rows_read(m, i, COMPUTE, wgt, m->wgt_writer, BUF_WGT, LOAD)))
        return rc;
    rows_set(src, m->inp_reader, i);
    rows_set(wgt, m->wgt_reader, i);
    if (m->data) gemm_run(m, &L);
    else record_uops(m, i, &L);
    rows_set(dst, m->acc_writer, i);
    return VTA_OK;
}

/* The ALU's iterations, in loop order: a later one sees the rows earlier ones wrote. The
 * shift operands of SHR / RSHR from the accumulator are data: checked on every run. */
static int64_t alu_row_fast(const machine *m, int op, int32_t *x, const int32_t *y, int32_t imm);

static int64_t alu_loops16(const machine *m, const int64_t *f, const struct loops *L);

static int alu_loops(machine *m, int64_t i, const int64_t *f, const struct loops *L) {
    int64_t nk = L->end - L->bgn, blk = m->g.blk, first = 0;
    int use_imm = f[F_USE_IMM] != 0, op = (int)f[F_ALU_OPCODE];
    int32_t imm = (int32_t)f[F_IMM];
    if (m->kernel >= VTA_KERNEL_AVX2 && blk == 16) {
        first = alu_loops16(m, f, L); /* where it stopped: a row the lanes below must do */
        if (first < 0) return VTA_OK;
    }
    for (int64_t t = first, total = L->n_out * L->n_in * nk; t < total; t++) {
        int64_t o = t / (L->n_in * nk), ii = t / nk % L->n_in, k = t % nk;
        int64_t d = L->dk[k] + o * L->dfo + ii * L->dfi;
        int32_t *x = m->acc + d * blk;
        const int32_t *y = use_imm ? NULL : m->acc + (L->sk[k] + o * L->sfo + ii * L->sfi) * blk;
        int64_t j = alu_row_fast(m, op, x, y, imm);
        if (j >= 0)
            return fail(m, i,
                        "%s %d outside [%d, 31] (iteration outer %lld, inner %lld, "
                        "micro-op %lld, lane %lld, accumulator row %lld); the "
                        "hardware result is undefined",
                        op == ALU_SHR ? "SHR shift amount" : "RSHR exponent",
                        (int)(y ? y[j] : imm), op == ALU_SHR ? -31 : 0, (long long)o,
                        (long long)ii, (long long)(L->bgn + k), (long long)j, (long long)d);
    }
    return VTA_OK;
}

static int exec_alu(machine *m, int64_t i, const int64_t *f) {
    struct loops L;
    int rc;
    if ((rc = uop_range(m, i, f, &L))) return rc;
    if (L.n_out == 0 || L.n_in == 0) return VTA_OK;
    int64_t nk = L.end - L.bgn;
    int use_imm = f[F_USE_IMM] != 0;
    if ((rc = index_range(m, i, &L, L.dk, L.dfo, L.dfi, BUF_ACC))) return rc;
    if (!use_imm && (rc = index_range(m, i, &L, L.sk, L.sfo, L.sfi, BUF_ACC))) return rc;
    const struct rowset *dst = loop_rows(m, 0, L.dk, nk, L.dfo, L.dfi, L.n_out, L.n_in);
    if ((rc = rows_read(m, i, COMPUTE, dst, m->acc_writer, BUF_ACC, COMPUTE))) return rc;
    if (!use_imm) {
        const struct rowset *src = loop_rows(m, 1, L.sk, nk, L.sfo, L.sfi, L.n_out, L.n_in);
        if ((rc = rows_read(m, i, COMPUTE, src, m->acc_writer, BUF_ACC, COMPUTE))) return rc;
        /* a row a STORE cleared must not be read before that STORE */
        int64_t cleared = -1;
        FOR_ROWS(src, s)
            if (m->acc_clearer[s] > cleared) cleared = m->acc_clearer[s];
        if ((rc = after(m, i, COMPUTE, STORE, cleared, "ACC rows", 0))) return rc;
    }
    if ((rc = rows_after(m, i, COMPUTE, STORE, dst, m->acc_store_reader, BUF_ACC, 1))) return rc;
    if (m->data && (rc = alu_loops(m, i, f, &L))) return rc;
    if (!m->data) record_uops(m, i, &L);
    rows_set(dst, m->acc_writer, i);
    return VTA_OK;
}

/* Every LOAD INP/WGT/SETPAD and STORE must happen before FINISH. */
static int exec_finish(machine *m, int64_t i) {
    static const int others[2] = {LOAD, STORE};
    char kind[32];
    for (int k = 0; k < 2; k++) {
        int o = others[k];
        if (m->qlen[o] && m->vc[COMPUTE][o] < m->queue[o][m->qlen[o] - 1]) {
            int64_t last = m->queue[o][m->qlen[o] - 1];
            return fail(m, i,
                        "FINISH does not wait for %s instruction %lld (%s): no token chain "
                        "orders it before FINISH, so the host could see the accelerator idle "
                        "before it completes",
                        MODULE_NAMES[o], (long long)last, kind_of(m, last, kind, sizeof kind));
        }
    }
    return VTA_OK;
}

static int execute(machine *m, int64_t i, int me) {
    const int64_t *f = FLD(m, i);
    switch (f[F_OPCODE]) {
    case OP_LOAD: return exec_load(m, i, me, f);
    case OP_STORE: return exec_store(m, i, f);
    case OP_GEMM: return exec_gemm(m, i, f);
    case OP_ALU: return exec_alu(m, i, f);
    case OP_SETPAD: m->pad_value = (int8_t)f[F_PAD_VALUE]; return VTA_OK;
    default: return exec_finish(m, i);
    }
}

/* --- the event loop (simulator._Machine.run) ----------------------------------------------- */

static int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

static int run_events(machine *m) {
    const vta_config *c = m->cfg;
    const struct geometry *g = &m->g;
    vta_run *r = m->run;
    int64_t head[VTA_MODULES] = {0, 0, 0}, free_at[VTA_MODULES] = {0, 0, 0};
    int64_t bus_free = 0;
    int rc;
    for (int a = 0; a < VTA_MODULES; a++)
        for (int b = 0; b < VTA_MODULES; b++) m->vc[a][b] = -1;
    for (;;) {
        int best_m = -1;
        int64_t best_t = 0;
        int nblocked = 0, blocked_m[VTA_MODULES], blocked_q[VTA_MODULES];
        for (int md = 0; md < VTA_MODULES; md++) {
            if (head[md] >= m->qlen[md]) continue;
            const int64_t *f = FLD(m, m->queue[md][head[md]]);
            int64_t t = free_at[md];
            int waiting = -1;
            for (int q = 0; q < VTA_FIFOS; q++) {
                if (FIFOS[q].consumer != md || !f[FIFOS[q].pop]) continue;
                if (m->fifo[q].head >= m->fifo[q].count) {
                    waiting = q;
                    break;
                }
                if (m->fifo[q].avail[m->fifo[q].head] > t) t = m->fifo[q].avail[m->fifo[q].head];
            }
            if (waiting >= 0) {
                blocked_m[nblocked] = md;
                blocked_q[nblocked++] = waiting;
            } else if (best_m < 0 || t < best_t) {
                best_m = md;
                best_t = t;
            }
        }
        if (best_m < 0) {
            if (!nblocked) break;
            char detail[400] = "", kind[32];
            size_t used = 0;
            for (int b = 0; b < nblocked; b++) {
                int64_t i = m->queue[blocked_m[b]][head[blocked_m[b]]];
                int w = snprintf(detail + used, sizeof detail - used,
                                 "%s%s waits at instruction %lld (%s) for a %s token",
                                 b ? "; " : "", MODULE_NAMES[blocked_m[b]], (long long)i,
                                 kind_of(m, i, kind, sizeof kind), FIFOS[blocked_q[b]].name);
                if (w > 0) used += (size_t)w;
                if (used >= sizeof detail) used = sizeof detail - 1;
            }
            return fail(m, m->queue[blocked_m[0]][head[blocked_m[0]]], "deadlock: %s", detail);
        }
        int md = best_m;
        int64_t i = m->queue[md][head[md]++], t0 = best_t;
        const int64_t *f = FLD(m, i);
        r->stalled[md] += t0 - free_at[md];
        for (int q = 0; q < VTA_FIFOS; q++) {
            if (FIFOS[q].consumer != md || !f[FIFOS[q].pop]) continue;
            const int64_t *clock = m->fifo[q].clock[m->fifo[q].head++];
            for (int k = 0; k < VTA_MODULES; k++)
                if (clock[k] > m->vc[md][k]) m->vc[md][k] = clock[k];
        }
        int64_t op = f[F_OPCODE], t = t0 + c->insn_issue_cycles;
        if (op == OP_LOAD || op == OP_STORE) {
            int64_t mt = f[F_MEMORY_TYPE];
            if (f[F_X_SIZE] && f[F_Y_SIZE]) {
                int64_t n = f[F_Y_SIZE] * f[F_X_SIZE];
                int64_t total = (f[F_Y_PAD_0] + f[F_Y_SIZE] + f[F_Y_PAD_1]) *
                                (f[F_X_PAD_0] + f[F_X_SIZE] + f[F_X_PAD_1]);
                int64_t nbytes = n * dram_elem_bytes(g, mt);
                int64_t pad_bytes = (total - n) * g->elem[sram_of(mt)];
                (op == OP_LOAD ? r->dram_read_bytes : r->dram_write_bytes)[mt] += nbytes;
                int64_t ready = t + c->dma_setup_cycles;
                int64_t data_start = ready > bus_free ? ready : bus_free;
                r->bus_wait[md] += data_start - ready;
                bus_free = data_start + ceil_div(nbytes, c->bus_width_bytes);
                t = bus_free + ceil_div(pad_bytes, c->bus_width_bytes);
            }
        } else if (op == OP_GEMM || op == OP_ALU) {
            int64_t iters = f[F_ITER_OUT] * f[F_ITER_IN] * (f[F_UOP_END] - f[F_UOP_BGN]);
            if (op == OP_GEMM) {
                if (!f[F_RESET]) r->gemm_iterations += iters;
                t += iters * c->gemm_cycles_per_uop;
            } else {
                r->alu_iterations += iters;
                t += iters * c->alu_cycles_per_uop;
            }
        }
        if (m->functional)
            rc = execute(m, i, md);
        else
            rc = op == OP_FINISH ? exec_finish(m, i) : VTA_OK;
        if (rc) return rc;
        if (m->prep) m->prep->order[m->prep->n_order++] = i;
        m->vc[md][md] = i;
        if (r->start) r->start[i] = t0;
        if (r->end) r->end[i] = t;
        if (t > r->total_cycles) r->total_cycles = t;
        r->busy[md] += t - t0;
        free_at[md] = t;
        for (int q = 0; q < VTA_FIFOS; q++) {
            if (FIFOS[q].producer != md || !f[FIFOS[q].push]) continue;
            struct fifo *fq = &m->fifo[q];
            fq->avail[fq->count] = t; /* cap = the program's pushes: counted statically */
            memcpy(fq->clock[fq->count], m->vc[md], sizeof fq->clock[0]);
            fq->count++;
        }
    }
    for (int q = 0; q < VTA_FIFOS; q++) r->leftover_tokens[q] = m->fifo[q].count - m->fifo[q].head;
    return VTA_OK;
}

/* --- budgets (targets/vta/budget.py) ---------------------------------------------------------- */

#define MAX_LIMIT ((int64_t)1 << 62) /* larger limits are no limit; keeps counts in int64 */
enum { LIMIT_NONE = -1, LIMIT_MALFORMED = -2 };

static int is_space(char c) { return c == ' ' || (c >= '\t' && c <= '\r'); }
static char lower(char c) { return c >= 'A' && c <= 'Z' ? (char)(c - 'A' + 'a') : c; }

static int64_t mul_sat(int64_t a, int64_t b) { return a && b > INT64_MAX / a ? INT64_MAX : a * b; }
/* num * 10 + digit, saturating at INT64_MAX */
static int64_t append_digit(int64_t num, char digit) {
    int64_t tens = mul_sat(num, 10);
    return tens > INT64_MAX - 9 ? INT64_MAX : tens + (digit - '0');
}

/* kernels.memory.parse_limit on the variable `name`: the limit, `fallback` when unset or
 * blank, LIMIT_NONE for "none" or 0, LIMIT_MALFORMED otherwise (the stripped text in `text`).
 * Grammar: [0-9]{1,30} ("." [0-9]{0,3})? [ \t]* ([KMGT] ("B" | "iB")? | "B")?, case-insensitive,
 * K/M/G/T powers of 1024; the value is truncated to a whole number. */
static int64_t env_limit(const char *name, int64_t fallback, char *text, size_t size) {
    const char *s = getenv(name), *end;
    if (!s) return fallback;
    while (is_space(*s)) s++;
    end = s + strlen(s);
    while (end > s && is_space(end[-1])) end--;
    snprintf(text, size, "%.*s", (int)(end - s), s);
    if (end == s) return fallback;
    if (end - s == 4 && lower(s[0]) == 'n' && lower(s[1]) == 'o' && lower(s[2]) == 'n' &&
        lower(s[3]) == 'e')
        return LIMIT_NONE;
    const char *p = s;
    int64_t num = 0, scale = 1, mult = 1;
    int digits = 0;
    for (; p < end && *p >= '0' && *p <= '9'; p++, digits++) num = append_digit(num, *p);
    if (digits < 1 || digits > 30) return LIMIT_MALFORMED;
    if (p < end && *p == '.') {
        int frac = 0;
        for (p++; p < end && *p >= '0' && *p <= '9'; p++, frac++) {
            num = append_digit(num, *p);
            scale *= 10;
        }
        if (frac > 3) return LIMIT_MALFORMED;
    }
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    if (p < end) {
        const char *units = "kmgt";
        const char *u = strchr(units, lower(*p));
        if (u && *p) {
            mult = (int64_t)1 << (10 * (u - units + 1));
            p++;
            if (p < end && lower(*p) == 'i') p++, u = NULL; /* "iB" needs its B */
            if (p < end && lower(*p) == 'b') p++, u = units;
            if (!u) return LIMIT_MALFORMED;
        } else if (lower(*p) == 'b') {
            p++;
        } else {
            return LIMIT_MALFORMED;
        }
    }
    if (p != end) return LIMIT_MALFORMED;
    int64_t limit = num == INT64_MAX ? INT64_MAX : mul_sat(num, mult) / scale;
    return limit == 0 ? LIMIT_NONE : limit;
}

/* A limit from vta_run: its own, or the environment's, or the default. */
static int resolve_limit(machine *m, int64_t given, const char *name, int64_t fallback,
                         int64_t *out) {
    char text[128];
    *out = given < 0 ? LIMIT_NONE : given;
    if (given != 0) return VTA_OK;
    *out = env_limit(name, fallback, text, sizeof text);
    if (*out == LIMIT_MALFORMED)
        return fail(m, -1, "%s='%s': expected a number, optionally with K, M, G or T, or none",
                    name, text);
    return VTA_OK;
}

/* kernels.memory.format_bytes */
static const char *format_bytes(char *buf, size_t size, int64_t n) {
    static const char *const units[4] = {"TiB", "GiB", "MiB", "KiB"};
    for (int k = 0; k < 4; k++) {
        int64_t unit = (int64_t)1 << (10 * (4 - k));
        if (n >= unit) {
            snprintf(buf, size, "%.1f %s", (double)n / (double)unit, units[k]);
            return buf;
        }
    }
    snprintf(buf, size, "%lld bytes", (long long)n);
    return buf;
}

/* budget.check_state: the state vta_simulate and setup_state allocate (as laid out there). */
static int check_state(machine *m, int64_t limit) {
    const struct geometry *g = &m->g;
    int64_t decoded = m->n * (F_COUNT + 1) * 8, dram = 0, state = 0;
    if (limit < 0) return VTA_OK;
    if (m->functional) {
        int64_t du = g->depth[BUF_UOP], di = g->depth[BUF_INP], dw = g->depth[BUF_WGT];
        int64_t da = g->depth[BUF_ACC], blk = g->blk;
        dram = m->run->dram_len;
        state = du * 4 + di * blk + dw * blk * blk + da * blk * 4;
        state += 4 * (3 * du + 2 * di + 2 * dw + 3 * da) + du;
        state += 3 * 4 * ceil_div(dram, DRAM_BLOCK);
    }
    int64_t total = dram + state + decoded;
    if (total <= limit) return VTA_OK;
    char a[32], b[32], c[32], d[32], e[32];
    return fail(m, -1,
                "the simulator needs %s (DRAM image %s, scratchpads and hazard trackers %s, "
                "decoded program %s), above the memory limit of %s (raise it with "
                "QACCEL_MEMORY_LIMIT)",
                format_bytes(a, sizeof a, total), format_bytes(b, sizeof b, dram),
                format_bytes(c, sizeof c, state), format_bytes(d, sizeof d, decoded),
                format_bytes(e, sizeof e, limit));
}

/* budget.check_steps: refuses the program at the instruction where its steps pass `limit`. */
static int check_steps(machine *m, int64_t limit) {
    int64_t total = 0;
    if (limit < 0) return VTA_OK;
    if (limit > MAX_LIMIT) limit = MAX_LIMIT;
    for (int64_t i = 0; i < m->n; i++) {
        const int64_t *f = FLD(m, i);
        int64_t op = f[F_OPCODE], steps = 1;
        if (op == OP_GEMM || op == OP_ALU) {
            steps += f[F_ITER_OUT] * f[F_ITER_IN] * (f[F_UOP_END] - f[F_UOP_BGN]);
        } else if ((op == OP_LOAD || op == OP_STORE) && f[F_Y_SIZE] && f[F_X_SIZE]) {
            int64_t rows = (f[F_Y_PAD_0] + f[F_Y_SIZE] + f[F_Y_PAD_1]) *
                           (f[F_X_PAD_0] + f[F_X_SIZE] + f[F_X_PAD_1]);
            int64_t depth = m->g.depth[op == OP_STORE ? BUF_ACC : sram_of(f[F_MEMORY_TYPE])];
            steps += rows < depth ? rows : depth;
        }
        total += steps;
        if (total > limit)
            return fail(m, i,
                        "%lld steps up to this instruction (one per instruction, plus GEMM/ALU "
                        "micro-op iterations and LOAD/STORE rows) pass the step limit of %lld "
                        "(raise it with QACCEL_STEP_LIMIT)",
                        (long long)total, (long long)limit);
    }
    return VTA_OK;
}

/* --- entry points -------------------------------------------------------------------------- */

/* The kernel a caller that leaves the choice to the machine (VTA_KERNEL_AUTO) gets:
 * QACCEL_CMACHINE_KERNEL names a slower one (c, sse2, avx2, avx-vnni, avx512-vnni; auto or
 * anything else: the fastest), for every C host alike (the program runner, the LiteRT
 * libraries, the C driver), as cmachine.py reads it for Python's callers. */
static int64_t wanted_kernel(int64_t asked) {
    static const char *const names[] = {"auto", "c", "sse2", "avx2", "avx-vnni", "avx512-vnni"};
    const char *env = getenv("QACCEL_CMACHINE_KERNEL");
    if (asked != VTA_KERNEL_AUTO || !env) return asked;
    for (int k = 0; k < (int)(sizeof names / sizeof names[0]); k++)
        if (strcmp(env, names[k]) == 0) return k;
    return VTA_KERNEL_AUTO;
}

static int setup_state(machine *m) {
    const struct geometry *g = &m->g;
    vta_run *r = m->run;
    int64_t du = g->depth[BUF_UOP], di = g->depth[BUF_INP], dw = g->depth[BUF_WGT];
    int64_t da = g->depth[BUF_ACC], blk = g->blk;
    m->uop = r->uop_sram ? r->uop_sram : alloc(m, (size_t)du, 4);
    if (m->data) {
        m->inp = r->inp_sram ? r->inp_sram : alloc(m, (size_t)(di * blk), 1);
        m->wgt = r->wgt_sram ? r->wgt_sram : alloc(m, (size_t)(dw * blk * blk), 1);
        m->acc = r->acc_sram ? r->acc_sram : alloc(m, (size_t)(da * blk), 4);
    } else { /* vta_prepare: no data (never dereferenced, non-NULL for the check below) */
        m->inp = m->wgt = (int8_t *)m->uop;
        m->acc = (int32_t *)m->uop;
    }
    /* One block for the small per-row arrays keeps the allocation count fixed. */
    int64_t words = 3 * du + 2 * di + 2 * dw + 3 * da;
    int32_t *t = alloc_tracker(m, words);
    m->uop_valid = alloc(m, (size_t)du, 1);
    m->dram_blocks = ceil_div(r->dram_len, DRAM_BLOCK);
    int32_t *d = alloc_tracker(m, 3 * m->dram_blocks);
    if (!m->uop || !m->inp || !m->wgt || !m->acc || !t || !m->uop_valid || !d)
        return VTA_ERR_NOMEM;
    /* GEMM scratch: stamps and distinct-row lists, indexed by row (< the largest depth). */
    int64_t maxd = du;
    for (int b = BUF_INP; b < BUF_COUNT; b++)
        if (g->depth[b] > maxd) maxd = g->depth[b];
    m->stamp_base = alloc(m, (size_t)(2 * maxd), sizeof(uint32_t));
    int64_t *lists = alloc(m, (size_t)(6 * maxd), sizeof(int64_t));
    if (!m->stamp_base || !lists) return VTA_ERR_NOMEM;
    m->stamp_off = m->stamp_base + maxd;
    for (int k = 0; k < 3; k++) {
        m->rows[k].bases = lists + 2 * k * maxd;
        m->rows[k].offs = lists + (2 * k + 1) * maxd;
    }
    /* The fastest GEMM kernel this build, CPU and block size have, unless the caller asks
     * for a given one (tests run each against the reference). */
    int best = VTA_KERNEL_C;
    if (HAVE_PAIR_KERNEL && pair_kernel_fits(blk)) best = VTA_KERNEL_SSE2;
#if HAVE_AVX2_KERNEL
    if (best == VTA_KERNEL_SSE2 && cpu_has_avx2()) best = VTA_KERNEL_AVX2;
#endif
    int64_t asked = wanted_kernel(r->kernel);
    m->kernel = asked == VTA_KERNEL_AUTO || asked > best ? best : (int)asked;
    r->kernel = m->kernel;
    if (m->kernel != VTA_KERNEL_C && m->data) {
        m->wgt_pairs = alloc(m, (size_t)(dw * blk * blk), sizeof(int16_t));
        if (!m->wgt_pairs) return VTA_ERR_NOMEM; /* zero, like the WGT buffer (API contract) */
    }
    for (int k = 0; k < 3; k++, t += du) m->uop_field[k] = t;
    m->inp_writer = t, t += di;
    m->inp_reader = t, t += di;
    m->wgt_writer = t, t += dw;
    m->wgt_reader = t, t += dw;
    m->acc_writer = t, t += da;
    m->acc_store_reader = t, t += da;
    m->acc_clearer = t;
    m->dram_writer = d;
    m->dram_reader[0] = d + m->dram_blocks;
    m->dram_reader[1] = d + 2 * m->dram_blocks;
    return VTA_OK;
}

/* vta_simulate, and vta_prepare's checked run (data 0, prep: where the replay goes). */
static int simulate(const vta_config *config, const uint64_t *words, int64_t n, int functional,
                    int data, struct vta_program *prep, vta_run *run) {
    machine mach, *m = &mach;
    int rc;
    memset(m, 0, sizeof *m);
    run->error_index = -1;
    run->error_kind[0] = run->error_message[0] = 0;
    run->total_cycles = run->gemm_iterations = run->alu_iterations = 0;
    for (int k = 0; k < VTA_MODULES; k++) run->busy[k] = run->stalled[k] = run->bus_wait[k] = 0;
    for (int k = 0; k < VTA_MEM_TYPES; k++) run->dram_read_bytes[k] = run->dram_write_bytes[k] = 0;
    for (int k = 0; k < VTA_FIFOS; k++) run->leftover_tokens[k] = 0;
    if ((rc = make_geometry(config, &m->g))) return rc;
    m->cfg = config;
    m->run = run;
    m->functional = functional;
    m->data = data;
    m->n = n;
    m->words = words;
    int64_t step_limit, memory_limit;
    if ((rc = resolve_limit(m, run->step_limit, "QACCEL_STEP_LIMIT", VTA_DEFAULT_STEP_LIMIT,
                            &step_limit)) ||
        (rc = resolve_limit(m, run->memory_limit, "QACCEL_MEMORY_LIMIT",
                            VTA_DEFAULT_MEMORY_LIMIT, &memory_limit)) ||
        (rc = check_state(m, memory_limit)))
        return rc;
    if (n <= 0) return fail(m, 0, "malformed instruction: empty program (it must end with FINISH)");
    m->f = prep ? prep_fields(prep, n) : alloc(m, (size_t)n * F_COUNT, sizeof(int64_t));
    int64_t *queues = alloc(m, (size_t)n, sizeof(int64_t));
    if (!m->f || !queues) {
        rc = VTA_ERR_NOMEM;
        goto done;
    }
    for (int64_t i = 0; i < n; i++) decode_one(&m->g, words + 2 * i, FLD(m, i));
    for (int64_t i = 0; i < n; i++)
        if ((rc = check_encoding(m, i))) goto done;
    /* Fetch: route every instruction to its module's queue, in program order. */
    for (int64_t i = 0; i < n; i++) m->qlen[module_of(FLD(m, i))]++;
    for (int md = 0, off = 0; md < VTA_MODULES; md++) {
        m->queue[md] = queues + off;
        off += (int)m->qlen[md];
        m->qlen[md] = 0; /* refilled below */
    }
    for (int64_t i = 0; i < n; i++) {
        int md = module_of(FLD(m, i));
        m->queue[md][m->qlen[md]++] = i;
        if (run->module) run->module[i] = md;
    }
    if ((rc = check_token_counts(m)) || (rc = check_steps(m, step_limit))) goto done;
    if (prep && (rc = prep_replay(prep, m))) goto done;
    m->prep = prep;
    for (int q = 0; q < VTA_FIFOS; q++) {
        m->fifo[q].avail = alloc(m, (size_t)m->fifo[q].cap, sizeof(int64_t));
        m->fifo[q].clock = alloc(m, (size_t)m->fifo[q].cap, sizeof m->fifo[q].clock[0]);
        if (!m->fifo[q].avail || !m->fifo[q].clock) {
            rc = VTA_ERR_NOMEM;
            goto done;
        }
    }
    if (functional && (rc = setup_state(m))) goto done;
    rc = run_events(m);
done:
    for (int k = 0; k < m->n_owned; k++) free(m->owned[k]);
    return rc;
}

int vta_simulate(const vta_config *config, const uint64_t *words, int64_t n, int functional,
                 vta_run *run) {
    return simulate(config, words, n, functional, 1, NULL, run);
}

/* --- the prepared program: checked once, replayed with data only --------------------------- */

#define MAX_PREPARED ((int64_t)1 << 40) /* instructions or micro-ops: beyond, out of memory */

static int64_t *prep_fields(struct vta_program *p, int64_t n) {
    if (n <= 0 || n > MAX_PREPARED) return NULL;
    p->f = (int64_t *)calloc((size_t)n * F_COUNT, sizeof(int64_t));
    return p->f;
}

/* After decoding and the static checks: room for the execution order and for each GEMM / ALU
 * instruction's micro-ops (it executes once). */
static int prep_replay(struct vta_program *p, machine *m) {
    int64_t total = 0;
    for (int64_t i = 0; i < m->n; i++) {
        const int64_t *f = FLD(m, i);
        if (f[F_OPCODE] == OP_GEMM || f[F_OPCODE] == OP_ALU)
            total += 3 * (f[F_UOP_END] - f[F_UOP_BGN]); /* positive: validated */
    }
    if (m->n <= 0 || m->n > MAX_PREPARED || total < 0 || total > MAX_PREPARED) return VTA_ERR_NOMEM;
    p->order = (int64_t *)calloc((size_t)m->n, sizeof(int64_t));
    p->uop_at = (int64_t *)calloc((size_t)m->n, sizeof(int64_t));
    p->uops = (int32_t *)calloc((size_t)(total ? total : 1), sizeof(int32_t));
    if (!p->order || !p->uop_at || !p->uops) return VTA_ERR_NOMEM;
    for (int64_t i = 0; i < m->n; i++) p->uop_at[i] = -1;
    p->uops_len = total;
    return VTA_OK;
}

/* The micro-ops instruction i runs with (the micro-op buffer at that point of the run). */
static void record_uops(machine *m, int64_t i, const struct loops *L) {
    struct vta_program *p = m->prep;
    int64_t nk = L->end - L->bgn;
    if (!p || p->uops_used + 3 * nk > p->uops_len) return; /* cannot happen: counted */
    int32_t *dst = p->uops + p->uops_used;
    memcpy(dst, L->dk, (size_t)nk * sizeof(int32_t));
    memcpy(dst + nk, L->sk, (size_t)nk * sizeof(int32_t));
    memcpy(dst + 2 * nk, L->wk, (size_t)nk * sizeof(int32_t));
    p->uop_at[i] = p->uops_used;
    p->uops_used += 3 * nk;
}

/* --- fused ALU sequences --------------------------------------------------------------------
 * A requantization is a run of ALU instructions over the same accumulator rows (multiply,
 * shift, add the zero point, clamp), one pass over the rows each. When every instruction of a
 * run writes the same rows in the same iteration order, each row once, and none reads a row
 * the run writes (other than through its destination), every row is independent of the others:
 * taking each row through the whole run in one pass leaves exactly what the instructions one
 * after another leave. vta_prepare finds these runs in the replay order; vta_execute takes
 * them in one pass with the AVX2 kernel (BLOCK 16), and one instruction at a time otherwise. */

#define MAX_FUSED 16

static int alu_fusable(const struct vta_program *p, int64_t i) {
    const int64_t *f = p->f + i * F_COUNT;
    if (f[F_OPCODE] != OP_ALU || p->uop_at[i] < 0) return 0;
    if (f[F_ITER_OUT] <= 0 || f[F_ITER_IN] <= 0 || f[F_UOP_END] <= f[F_UOP_BGN]) return 0;
    switch (f[F_ALU_OPCODE]) {
    case ALU_MIN: case ALU_MAX: case ALU_ADD: case ALU_MUL: case ALU_RDMUL: case ALU_RSHR:
        return 1; /* immediate exponents are validated; register ones checked per run */
    case ALU_SHR:
        return f[F_USE_IMM] != 0;
    default:
        return 0;
    }
}

static int same_destination(const struct vta_program *p, int64_t i, int64_t j) {
    const int64_t *a = p->f + i * F_COUNT, *b = p->f + j * F_COUNT;
    int64_t nk = a[F_UOP_END] - a[F_UOP_BGN];
    if (b[F_UOP_END] - b[F_UOP_BGN] != nk || a[F_ITER_OUT] != b[F_ITER_OUT] ||
        a[F_ITER_IN] != b[F_ITER_IN] || a[F_DST_FACTOR_OUT] != b[F_DST_FACTOR_OUT] ||
        a[F_DST_FACTOR_IN] != b[F_DST_FACTOR_IN])
        return 0;
    return memcmp(p->uops + p->uop_at[i], p->uops + p->uop_at[j], (size_t)nk * sizeof(int32_t)) == 0;
}

/* Marks (value 1) or clears (0) instruction i's destination rows; returns 0 if a row is marked
 * twice (written by two iterations) or lies outside the accumulator. */
static int mark_rows(const struct vta_program *p, int64_t i, uint8_t *mark, int64_t depth,
                     int src, uint8_t value) {
    const int64_t *f = p->f + i * F_COUNT;
    int64_t nk = f[F_UOP_END] - f[F_UOP_BGN];
    const int32_t *k0 = p->uops + p->uop_at[i] + (src ? nk : 0);
    int64_t fo = src ? f[F_SRC_FACTOR_OUT] : f[F_DST_FACTOR_OUT];
    int64_t fi = src ? f[F_SRC_FACTOR_IN] : f[F_DST_FACTOR_IN];
    for (int64_t o = 0; o < f[F_ITER_OUT]; o++)
        for (int64_t ii = 0; ii < f[F_ITER_IN]; ii++)
            for (int64_t k = 0; k < nk; k++) {
                int64_t r = k0[k] + o * fo + ii * fi;
                if (r < 0 || r >= depth) return 0;
                if (src) {
                    if (mark[r]) return 0;
                } else {
                    if (value && mark[r]) return 0;
                    mark[r] = value;
                }
            }
    return 1;
}

static int prep_alu_fusion(struct vta_program *p) {
    int64_t depth = p->g.depth[BUF_ACC];
    p->alu_fused = (int32_t *)calloc((size_t)(p->n_order ? p->n_order : 1), sizeof(int32_t));
    uint8_t *mark = (uint8_t *)calloc((size_t)depth, 1);
    if (!p->alu_fused || !mark) {
        free(mark);
        return VTA_ERR_NOMEM;
    }
    for (int64_t k = 0; k < p->n_order;) {
        int64_t i = p->order[k], len = 1;
        if (!alu_fusable(p, i)) {
            k++;
            continue;
        }
        int unique = mark_rows(p, i, mark, depth, 0, 1);
        const int64_t *f = p->f + i * F_COUNT;
        if (unique && (f[F_USE_IMM] || mark_rows(p, i, mark, depth, 1, 0))) {
            while (k + len < p->n_order && len < MAX_FUSED) {
                int64_t j = p->order[k + len];
                if (!alu_fusable(p, j) || !same_destination(p, i, j)) break;
                if (!p->f[j * F_COUNT + F_USE_IMM] && !mark_rows(p, j, mark, depth, 1, 0)) break;
                len++;
            }
        }
        mark_rows(p, i, mark, depth, 0, 0);
        if (len >= 2) p->alu_fused[k] = (int32_t)len;
        k += len;
    }
    free(mark);
    return VTA_OK;
}

void vta_program_free(vta_program *p) {
    if (!p) return;
    free(p->f);
    free(p->order);
    free(p->uop_at);
    free(p->uops);
    free(p->alu_fused);
    tiles_free(&p->consts);
    free(p);
}

/* What vta_prepare derives from the checked run once it is over (vta_program_import too,
 * which has the fused ALU runs already). */
static int prepare_finish(vta_program *p, const vta_run *run) {
    int rc = make_geometry(&p->cfg, &p->g);
    if (rc == VTA_OK && !p->alu_fused) rc = prep_alu_fusion(p);
    if (rc != VTA_OK) return rc;
    for (int64_t i = 0; i < p->n; i++) {
        const int64_t *f = p->f + i * F_COUNT;
        if (f[F_OPCODE] != OP_STORE || !f[F_X_SIZE] || !f[F_Y_SIZE]) continue;
        int64_t end = (f[F_DRAM_BASE] + (f[F_Y_SIZE] - 1) * f[F_X_STRIDE] + f[F_X_SIZE]) *
                      dram_elem_bytes(&p->g, f[F_MEMORY_TYPE]); /* within dram_len: checked */
        if (end > p->dram_written) p->dram_written = end;
    }
    p->timing = *run;
    p->timing.uop_image = NULL;
    p->timing.dram = NULL;
    p->timing.uop_sram = NULL;
    p->timing.inp_sram = p->timing.wgt_sram = NULL;
    p->timing.acc_sram = NULL;
    p->timing.start = p->timing.end = p->timing.module = NULL;
    return VTA_OK;
}

int vta_prepare(const vta_config *config, const uint64_t *words, int64_t n, vta_run *run,
                vta_program **out) {
    *out = NULL;
    vta_program *p = (vta_program *)calloc(1, sizeof *p);
    if (!p) return VTA_ERR_NOMEM;
    p->cfg = *config;
    p->n = n;
    p->dram_len = run->dram_len;
    int rc = simulate(config, words, n, 1, 0, p, run);
    if (rc == VTA_OK) rc = prepare_finish(p, run);
    if (rc != VTA_OK) {
        vta_program_free(p);
        return rc;
    }
    *out = p;
    return VTA_OK;
}

/* --- a prepared program kept: its checked run's results as bytes ----------------------------
 * int64 header[PREP_HEADER] (PREP_MAGIC, n, dram_len, n_order, uops_used, the configuration,
 * the statistics), then int32 order[n_order], int32 uop_at[n], int32 uops[uops_used], uint8
 * alu_fused[n_order]. */

#define PREP_MAGIC ((int64_t)0x3150455250415456) /* "VTAPREP1", little-endian */
enum { PREP_STATS = 1 + 3 * VTA_MODULES + 2 + 2 * VTA_MEM_TYPES + VTA_FIFOS,
       PREP_HEADER = 5 + VTA_CONFIG_N_FIELDS + PREP_STATS };

static int64_t *prep_stats(vta_run *r, int64_t *at, int to_run) {
    int64_t *fields[PREP_STATS], **f = fields;
    *f++ = &r->total_cycles;
    for (int k = 0; k < VTA_MODULES; k++) *f++ = &r->busy[k];
    for (int k = 0; k < VTA_MODULES; k++) *f++ = &r->stalled[k];
    for (int k = 0; k < VTA_MODULES; k++) *f++ = &r->bus_wait[k];
    *f++ = &r->gemm_iterations;
    *f++ = &r->alu_iterations;
    for (int k = 0; k < VTA_MEM_TYPES; k++) *f++ = &r->dram_read_bytes[k];
    for (int k = 0; k < VTA_MEM_TYPES; k++) *f++ = &r->dram_write_bytes[k];
    for (int k = 0; k < VTA_FIFOS; k++) *f++ = &r->leftover_tokens[k];
    for (int k = 0; k < PREP_STATS; k++) {
        if (to_run) *fields[k] = at[k];
        else at[k] = *fields[k];
    }
    return at + PREP_STATS;
}

static void config_words(const vta_config *c, int64_t *at) {
#define CONFIG_WORD(key, lowest, highest) *at++ = c->key;
    VTA_CONFIG_FIELDS(CONFIG_WORD)
#undef CONFIG_WORD
}

int64_t vta_program_export(const vta_program *p, uint8_t *buf, int64_t cap) {
    if (p->n > INT32_MAX || p->uops_used > INT32_MAX) return -1;
    int64_t size = 8 * (int64_t)PREP_HEADER + 4 * (p->n_order + p->n + p->uops_used) + p->n_order;
    if (!buf || cap < size) return size;
    int64_t head[PREP_HEADER] = {PREP_MAGIC, p->n, p->dram_len, p->n_order, p->uops_used};
    config_words(&p->cfg, head + 5);
    vta_run stats = p->timing;
    prep_stats(&stats, head + 5 + VTA_CONFIG_N_FIELDS, 0);
    memcpy(buf, head, sizeof head);
    uint8_t *at = buf + sizeof head;
    for (int64_t k = 0; k < p->n_order; k++, at += 4) {
        int32_t v = (int32_t)p->order[k];
        memcpy(at, &v, 4);
    }
    for (int64_t i = 0; i < p->n; i++, at += 4) {
        int32_t v = (int32_t)p->uop_at[i];
        memcpy(at, &v, 4);
    }
    memcpy(at, p->uops, (size_t)p->uops_used * 4);
    at += p->uops_used * 4;
    for (int64_t k = 0; k < p->n_order; k++) at[k] = (uint8_t)p->alu_fused[k]; /* <= MAX_FUSED */
    return size;
}

int vta_program_import(const vta_config *config, const uint64_t *words, int64_t n,
                       const uint8_t *bytes, int64_t len, vta_run *run, vta_program **out) {
    int64_t head[PREP_HEADER], cfg[VTA_CONFIG_N_FIELDS];
    *out = NULL;
    run->error_index = -1;
    run->error_kind[0] = run->error_message[0] = 0;
    if (vta_config_check(config) != VTA_OK) return VTA_ERR_CONFIG;
#define STALE(what) do { \
        snprintf(run->error_message, sizeof run->error_message, "a kept preparation %s", what); \
        vta_program_free(p); \
        return VTA_ERROR; \
    } while (0)
    vta_program *p = NULL;
    if (!bytes || len < (int64_t)sizeof head) STALE("is truncated");
    memcpy(head, bytes, sizeof head);
    config_words(config, cfg);
    int64_t n_order = head[3], used = head[4];
    if (head[0] != PREP_MAGIC) STALE("is not one");
    if (head[1] != n || n <= 0 || n > INT32_MAX || head[2] != run->dram_len ||
        memcmp(head + 5, cfg, sizeof cfg) != 0)
        STALE("is of another program or configuration");
    if (n_order < 0 || n_order > n || used < 0 || used > INT32_MAX ||
        len != 8 * (int64_t)PREP_HEADER + 4 * (n_order + n + used) + n_order)
        STALE("has the wrong size");
    p = (vta_program *)calloc(1, sizeof *p);
    if (!p) return VTA_ERR_NOMEM;
    p->cfg = *config;
    p->n = n;
    p->dram_len = run->dram_len;
    p->n_order = n_order;
    p->uops_len = p->uops_used = used;
    p->f = prep_fields(p, n);
    p->order = (int64_t *)calloc((size_t)(n_order ? n_order : 1), sizeof(int64_t));
    p->uop_at = (int64_t *)calloc((size_t)n, sizeof(int64_t));
    p->uops = (int32_t *)malloc((size_t)(used ? used : 1) * sizeof(int32_t));
    p->alu_fused = (int32_t *)calloc((size_t)(n_order ? n_order : 1), sizeof(int32_t));
    if (!p->f || !p->order || !p->uop_at || !p->uops || !p->alu_fused) {
        vta_program_free(p);
        return VTA_ERR_NOMEM;
    }
    if (make_geometry(config, &p->g) != VTA_OK) STALE("is of another configuration");
    for (int64_t i = 0; i < n; i++) decode_one(&p->g, words + 2 * i, p->f + i * F_COUNT);
    const uint8_t *at = bytes + sizeof head;
    for (int64_t k = 0; k < n_order; k++, at += 4) {
        int32_t v;
        memcpy(&v, at, 4);
        if (v < 0 || v >= n) STALE("names an instruction out of range");
        p->order[k] = v;
    }
    for (int64_t i = 0; i < n; i++, at += 4) {
        int32_t v;
        memcpy(&v, at, 4);
        const int64_t *f = p->f + i * F_COUNT;
        int64_t nk = f[F_UOP_END] - f[F_UOP_BGN];
        if (v != -1 && (v < 0 || (f[F_OPCODE] != OP_GEMM && f[F_OPCODE] != OP_ALU) || nk <= 0 ||
                        v + 3 * nk > used))
            STALE("has micro-ops out of range");
        p->uop_at[i] = v;
    }
    memcpy(p->uops, at, (size_t)used * 4);
    at += used * 4;
    for (int64_t k = 0; k < n_order; k++) {
        int len = at[k];
        if (len == 1 || len > MAX_FUSED || k + len > n_order) STALE("has fused ALU runs out of range");
        for (int64_t j = k; j < k + len; j++)
            if (p->f[p->order[j] * F_COUNT + F_OPCODE] != OP_ALU || p->uop_at[p->order[j]] < 0)
                STALE("fuses an instruction that is not an ALU one");
        p->alu_fused[k] = len;
    }
    prep_stats(run, head + 5 + VTA_CONFIG_N_FIELDS, 1);
#undef STALE
    int rc = prepare_finish(p, run);
    if (rc != VTA_OK) {
        vta_program_free(p);
        return rc;
    }
    *out = p;
    return VTA_OK;
}

int64_t vta_program_dram_written(const vta_program *p) { return p->dram_written; }

void vta_program_timing(const vta_program *p, vta_run *run) {
    run->total_cycles = p->timing.total_cycles;
    for (int k = 0; k < VTA_MODULES; k++) {
        run->busy[k] = p->timing.busy[k];
        run->stalled[k] = p->timing.stalled[k];
        run->bus_wait[k] = p->timing.bus_wait[k];
    }
    run->gemm_iterations = p->timing.gemm_iterations;
    run->alu_iterations = p->timing.alu_iterations;
    for (int k = 0; k < VTA_MEM_TYPES; k++) {
        run->dram_read_bytes[k] = p->timing.dram_read_bytes[k];
        run->dram_write_bytes[k] = p->timing.dram_write_bytes[k];
    }
    for (int k = 0; k < VTA_FIFOS; k++) run->leftover_tokens[k] = p->timing.leftover_tokens[k];
}

/* --- scratchpads ----------------------------------------------------------------------------- */

enum { TILE_ZERO = 0, TILE_DIAG = 1, TILE_DENSE = 2 };

static void tiles_free(struct tiles *t) {
    free(t->wgt);
    free(t->pairs);
    free(t->diag);
    free(t->wclass);
    free(t->npairs);
    free(t->pair_list);
    memset(t, 0, sizeof *t);
}

/* Room for `count` zero tiles (with pair rows when `pairs`). */
static int tiles_alloc(struct tiles *t, int64_t count, int64_t blk, int64_t ppt, int pairs) {
    t->count = count;
    t->wgt = (int8_t *)calloc((size_t)(count * blk * blk), 1);
    t->diag = (int16_t *)calloc((size_t)(count * blk), sizeof(int16_t));
    t->wclass = (uint8_t *)calloc((size_t)count, 1);
    t->npairs = (uint8_t *)calloc((size_t)count, 1);
    t->pair_list = (uint8_t *)calloc((size_t)(count * ppt), 1);
    if (pairs) t->pairs = (int16_t *)calloc((size_t)(count * blk * blk), sizeof(int16_t));
    if (!t->wgt || !t->diag || !t->wclass || !t->npairs || !t->pair_list || (pairs && !t->pairs)) {
        tiles_free(t);
        return VTA_ERR_NOMEM;
    }
    return VTA_OK;
}

void vta_scratch_free(vta_scratch *s) {
    if (!s) return;
    free(s->inp);
    tiles_free(&s->own);
    free(s->from);
    free(s->at);
    free(s->acc);
    free(s->row);
    free(s);
}

int vta_scratch_new(const vta_config *config, vta_run *run, vta_scratch **out) {
    struct geometry g;
    machine mach, *m = &mach;
    int64_t limit;
    int rc;
    *out = NULL;
    memset(m, 0, sizeof *m);
    run->error_index = -1;
    run->error_kind[0] = run->error_message[0] = 0;
    if ((rc = make_geometry(config, &g))) return rc;
    m->run = run;
    if ((rc = resolve_limit(m, run->memory_limit, "QACCEL_MEMORY_LIMIT",
                            VTA_DEFAULT_MEMORY_LIMIT, &limit)))
        return rc;
    int64_t blk = g.blk, di = g.depth[BUF_INP], dw = g.depth[BUF_WGT], da = g.depth[BUF_ACC];
    int64_t ppt = blk / 2 > 0 ? blk / 2 : 1;
    int best = VTA_KERNEL_C, has_avx_vnni = 0;
#if HAVE_AVX2_KERNEL
    if (blk == 16 && cpu_has_avx2()) {
        best = VTA_KERNEL_AVX2;
        has_avx_vnni = cpu_has_avx_vnni();
        if (has_avx_vnni) best = VTA_KERNEL_AVX_VNNI;
        if (cpu_has_avx512_vnni()) best = VTA_KERNEL_AVX512_VNNI;
    }
#endif
    /* the fastest available unless a slower one is asked for (SSE2: portable C here) */
    int64_t asked = wanted_kernel(run->kernel);
    int kernel = asked == VTA_KERNEL_AUTO || asked >= best ? best
                 : asked == VTA_KERNEL_AVX_VNNI && !has_avx_vnni ? VTA_KERNEL_AVX2
                 : asked >= VTA_KERNEL_AVX2 ? (int)asked : VTA_KERNEL_C;
    int64_t bytes = di * blk * 2 + dw * blk * blk * (kernel >= VTA_KERNEL_AVX2 ? 3 : 1) +
                    dw * blk * 2 + dw * (2 + ppt) + da * blk * 4 + dw * 16;
    if (limit >= 0 && bytes > limit) {
        char a[32], b[32];
        return fail(m, -1,
                    "the scratchpads need %s, above the memory limit of %s (raise it with "
                    "QACCEL_MEMORY_LIMIT)",
                    format_bytes(a, sizeof a, bytes), format_bytes(b, sizeof b, limit));
    }
    vta_scratch *s = (vta_scratch *)calloc(1, sizeof *s);
    if (!s) return VTA_ERR_NOMEM;
    s->cfg = *config;
    s->g = g;
    s->kernel = kernel;
    s->pairs_per_tile = ppt;
    s->inp = (int16_t *)calloc((size_t)(di * blk), sizeof(int16_t));
    s->acc = (int32_t *)calloc((size_t)(da * blk), sizeof(int32_t));
    s->from = (const struct tiles **)calloc((size_t)dw, sizeof *s->from);
    s->at = (int64_t *)calloc((size_t)dw, sizeof(int64_t));
    s->row = (int32_t *)calloc((size_t)blk, sizeof(int32_t));
    if (!s->inp || !s->acc || !s->from || !s->at || !s->row ||
        tiles_alloc(&s->own, dw, blk, ppt, kernel >= VTA_KERNEL_AVX2)) {
        vta_scratch_free(s);
        return VTA_ERR_NOMEM;
    }
    for (int64_t r = 0; r < dw; r++) {
        s->from[r] = &s->own;
        s->at[r] = r;
    }
    run->kernel = kernel;
    *out = s;
    return VTA_OK;
}

/* --- LOAD: rows into the scratchpads in the kernels' layouts -------------------------------- */

/* WGT tile `row` from `src` (blk * blk int8) or zero (padding): the tile, its class, its
 * diagonal, its nonzero lane pairs and, for the AVX2 kernel, its pair rows. Zero weights
 * contribute nothing to a sum: the kernels skip them, the sums are the same. */
#if HAVE_AVX2_KERNEL
/* set_tile for BLOCK 16 with the AVX2 kernel. */
static AVX2 void set_tile16_avx2(struct tiles *s, int64_t row, const uint8_t *src) {
    int8_t *w = s->wgt + row * 256;
    __m256i v[8], any = _mm256_setzero_si256(), off = _mm256_setzero_si256();
    for (int q = 0; q < 8; q++) { /* rows 2q and 2q + 1 */
        v[q] = src ? _mm256_loadu_si256((const __m256i *)(src + 32 * q)) : _mm256_setzero_si256();
        _mm256_storeu_si256((__m256i *)(w + 32 * q), v[q]);
        any = _mm256_or_si256(any, v[q]);
    }
    if (_mm256_testz_si256(any, any)) {
        s->wclass[row] = TILE_ZERO;
        return;
    }
    for (int q = 0; q < 8; q++) {
        int8_t keep[32];
        memset(keep, -1, sizeof keep);
        keep[2 * q] = 0;           /* w[2q][2q] */
        keep[16 + 2 * q + 1] = 0;  /* w[2q+1][2q+1] */
        off = _mm256_or_si256(off, _mm256_and_si256(v[q], _mm256_loadu_si256((const __m256i *)keep)));
    }
    if (_mm256_testz_si256(off, off)) {
        for (int64_t j = 0; j < 16; j++) s->diag[row * 16 + j] = w[j * 16 + j];
        s->wclass[row] = TILE_DIAG;
        return;
    }
    s->wclass[row] = TILE_DENSE;
    /* the lane pairs with a nonzero weight: OR of every row, pairs of bytes */
    __m128i cols = _mm_or_si128(_mm256_castsi256_si128(any), _mm256_extracti128_si256(any, 1));
    int zero_bytes = _mm_movemask_epi8(_mm_cmpeq_epi8(cols, _mm_setzero_si128()));
    uint8_t *list = s->pair_list + row * 8;
    int np = 0;
    for (int p = 0; p < 8; p++)
        if (((zero_bytes >> (2 * p)) & 3) != 3) list[np++] = (uint8_t)p;
    s->npairs[row] = (uint8_t)np;
    /* pair rows: unit (j, p) = (w[j][2p], w[j][2p+1]) widened goes to 32-bit slot p * 16 + j,
     * an 8x8 transpose of 32-bit units for each half of j */
    int16_t *wp = s->pairs + row * 256;
    for (int half = 0; half < 2; half++) {
        __m256i r[8], t[8];
        for (int j = 0; j < 8; j++)
            r[j] = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(w + 16 * (8 * half + j))));
        for (int j = 0; j < 8; j += 2) {
            t[j] = _mm256_unpacklo_epi32(r[j], r[j + 1]);
            t[j + 1] = _mm256_unpackhi_epi32(r[j], r[j + 1]);
        }
        for (int j = 0; j < 8; j += 4) {
            r[j] = _mm256_unpacklo_epi64(t[j], t[j + 2]);
            r[j + 1] = _mm256_unpackhi_epi64(t[j], t[j + 2]);
            r[j + 2] = _mm256_unpacklo_epi64(t[j + 1], t[j + 3]);
            r[j + 3] = _mm256_unpackhi_epi64(t[j + 1], t[j + 3]);
        }
        /* r[0..3] hold units p = 0,1,2,3 (low lane) and 4,5,6,7 (high lane) of rows 0..3,
         * r[4..7] the same of rows 4..7 */
        for (int p = 0; p < 4; p++) {
            __m256i a = r[p], b = r[4 + p];
            __m256i lo = _mm256_permute2x128_si256(a, b, 0x20); /* unit p, rows 0..7 */
            __m256i hi = _mm256_permute2x128_si256(a, b, 0x31); /* unit p + 4 */
            _mm256_storeu_si256((__m256i *)(wp + p * 32 + 16 * half), lo);
            _mm256_storeu_si256((__m256i *)(wp + (p + 4) * 32 + 16 * half), hi);
        }
    }
}
#endif

static void set_tile(struct tiles *s, int vector, int64_t blk, int64_t ppt, int64_t row,
                     const uint8_t *src) {
    int64_t bb = blk * blk;
    int8_t *w = s->wgt + row * bb;
#if HAVE_AVX2_KERNEL
    if (vector) { /* BLOCK 16, a CPU with AVX2 */
        set_tile16_avx2(s, row, src);
        return;
    }
#else
    (void)vector;
#endif
    if (src)
        memcpy(w, src, (size_t)bb);
    else
        memset(w, 0, (size_t)bb);
    int off_diag = 0, any = 0;
    uint8_t *list = s->pair_list + row * ppt;
    int np = 0;
    for (int64_t j = 0; j < blk; j++) {
        s->diag[row * blk + j] = w[j * blk + j];
        for (int64_t c = 0; c < blk; c++)
            if (w[j * blk + c]) {
                any = 1;
                if (c != j) off_diag = 1;
            }
    }
    if (!any) {
        s->wclass[row] = TILE_ZERO;
        return;
    }
    if (!off_diag) {
        s->wclass[row] = TILE_DIAG;
        return;
    }
    s->wclass[row] = TILE_DENSE;
    for (int64_t p = 0; p < ppt; p++) {
        int nz = 0;
        for (int64_t j = 0; j < blk && !nz; j++)
            for (int64_t c = 2 * p; c < 2 * p + 2 && c < blk; c++) nz |= w[j * blk + c] != 0;
        if (nz) list[np++] = (uint8_t)p;
    }
    s->npairs[row] = (uint8_t)np;
    if (s->pairs) {
        int16_t *wp = s->pairs + row * bb;
        for (int64_t j = 0; j < blk; j++)
            for (int64_t c = 0; c < blk; c++) wp[(c / 2) * 2 * blk + 2 * j + c % 2] = w[j * blk + c];
    }
}

#if HAVE_AVX2_KERNEL
static AVX2 void widen_avx2(int16_t *dst, const uint8_t *src, int64_t n) {
    int64_t k = 0;
    for (; k + 16 <= n; k += 16)
        _mm256_storeu_si256((__m256i *)(dst + k),
                            _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(src + k))));
    for (; k < n; k++) dst[k] = (int8_t)src[k];
}
#endif

static void load_rows(machine *m, vta_scratch *s, int64_t mt, int64_t row, const uint8_t *src,
                      int64_t count) {
    int64_t blk = s->g.blk;
    if (mt == MEM_INP) {
        int16_t *dst = s->inp + row * blk;
#if HAVE_AVX2_KERNEL
        if (src && s->kernel >= VTA_KERNEL_AVX2) {
            widen_avx2(dst, src, count * blk);
            return;
        }
#endif
        if (src)
            for (int64_t k = 0; k < count * blk; k++) dst[k] = (int8_t)src[k];
        else
            for (int64_t k = 0; k < count * blk; k++) dst[k] = m->pad_value;
    } else if (mt == MEM_WGT) {
        for (int64_t k = 0; k < count; k++) {
            set_tile(&s->own, s->kernel >= VTA_KERNEL_AVX2, blk, s->pairs_per_tile, row + k,
                     src ? src + k * blk * blk : NULL);
            s->from[row + k] = &s->own;
            s->at[row + k] = row + k;
        }
    } else {
        int32_t *dst = s->acc + row * blk;
        if (!src)
            memset(dst, 0, (size_t)(count * blk) * sizeof(int32_t));
        else if (mt == MEM_ACC)
            for (int64_t k = 0; k < count * blk; k++) dst[k] = read_le32(src + 4 * k);
        else
            for (int64_t k = 0; k < count * blk; k++) dst[k] = (int8_t)src[k];
    }
}

/* A WGT LOAD of constant tiles: each SRAM row refers to its converted tile. */
static int const_load(vta_scratch *s, const vta_program *p, const int64_t *f) {
    const struct tiles *c = &p->consts;
    int64_t yp0 = f[F_Y_PAD_0], xp0 = f[F_X_PAD_0], xp1 = f[F_X_PAD_1];
    int64_t ys = f[F_Y_SIZE], xs = f[F_X_SIZE], stride = f[F_X_STRIDE];
    int64_t ytot = yp0 + ys + f[F_Y_PAD_1], xtot = xp0 + xs + xp1, base = f[F_SRAM_BASE];
    int64_t first = f[F_DRAM_BASE] - p->const_first, zero = c->count - 1;
    if (c->count == 0 || first < 0 || first + (ys - 1) * stride + xs > zero ||
        (s->kernel >= VTA_KERNEL_AVX2 && !c->pairs))
        return 0;
    for (int64_t y = 0; y < ytot; y++) {
        int64_t row = base + y * xtot, inside = y >= yp0 && y < yp0 + ys;
        for (int64_t x = 0; x < xtot; x++, row++) {
            s->from[row] = c;
            s->at[row] = inside && x >= xp0 && x < xp0 + xs ? first + (y - yp0) * stride + x - xp0
                                                             : zero;
        }
    }
    return 1;
}

static void fast_load(machine *m, vta_scratch *s, const vta_program *p, const int64_t *f) {
    int64_t mt = f[F_MEMORY_TYPE];
    if (f[F_X_SIZE] == 0 || f[F_Y_SIZE] == 0 || mt == MEM_UOP) return; /* UOP: snapshots */
    if (mt == MEM_WGT && const_load(s, p, f)) return;
    int64_t yp0 = f[F_Y_PAD_0], xp0 = f[F_X_PAD_0], xp1 = f[F_X_PAD_1];
    int64_t ys = f[F_Y_SIZE], xs = f[F_X_SIZE], stride = f[F_X_STRIDE];
    int64_t ytot = yp0 + ys + f[F_Y_PAD_1], xtot = xp0 + xs + xp1;
    int64_t eb = dram_elem_bytes(&s->g, mt), base = f[F_SRAM_BASE];
    const uint8_t *dram = m->run->dram;
    for (int64_t y = 0; y < ytot; y++) {
        int64_t row = base + y * xtot;
        if (y < yp0 || y >= yp0 + ys) {
            load_rows(m, s, mt, row, NULL, xtot);
            continue;
        }
        if (xp0) load_rows(m, s, mt, row, NULL, xp0);
        load_rows(m, s, mt, row + xp0, dram + (f[F_DRAM_BASE] + (y - yp0) * stride) * eb, xs);
        if (xp1) load_rows(m, s, mt, row + xp0 + xs, NULL, xp1);
    }
}

/* --- GEMM kernels over the rows one micro-op touches ------------------------------------------- */

/* The (outer, inner) iterations of one micro-op: rows d + o*dfo + i*dfi += W . inp rows
 * s + o*sfo + i*sfi. Additions modulo 2^32 commute: any iteration order gives the same sums. */
struct span {
    int64_t n_out, n_in, dfo, dfi, sfo, sfi, d, s;
};

/* The span's fields are copied into locals (the kernels' stores could alias them, which would
 * make the compiler read them again at every row) and the rows advance by addition. */
#define FOR_SPAN(sp, drow, srow)                                                             \
    for (int64_t o_ = 0, no_ = (sp)->n_out, ni_ = (sp)->n_in, dfo_ = (sp)->dfo,               \
                 dfi_ = (sp)->dfi, sfo_ = (sp)->sfo, sfi_ = (sp)->sfi, do_ = (sp)->d,          \
                 so_ = (sp)->s;                                                               \
         o_ < no_; o_++, do_ += dfo_, so_ += sfo_)                                            \
        for (int64_t i_ = 0, drow = do_, srow = so_; i_ < ni_; i_++, drow += dfi_, srow += sfi_)

static void dense_rows_c(int32_t *acc, const int16_t *inp, const int8_t *w, int64_t blk,
                         const struct span *sp) {
    FOR_SPAN(sp, d, r) {
        int32_t *a = acc + d * blk;
        const int16_t *x = inp + r * blk;
        for (int64_t j = 0; j < blk; j++) {
            int32_t sum = 0;
            for (int64_t c = 0; c < blk; c++) sum += (int32_t)x[c] * (int32_t)w[j * blk + c];
            a[j] = to_i32((uint32_t)a[j] + (uint32_t)sum);
        }
    }
}

static void diag_rows_c(int32_t *acc, const int16_t *inp, const int16_t *dg, int64_t blk,
                        const struct span *sp) {
    FOR_SPAN(sp, d, r) {
        int32_t *a = acc + d * blk;
        const int16_t *x = inp + r * blk;
        for (int64_t j = 0; j < blk; j++)
            a[j] = to_i32((uint32_t)a[j] + (uint32_t)((int32_t)x[j] * (int32_t)dg[j]));
    }
}

#if HAVE_AVX2_KERNEL
static inline AVX2 __m256i bcast_pair(const int16_t *x) {
    int32_t v;
    memcpy(&v, x, 4);
    return _mm256_set1_epi32(v);
}

/* BLOCK 16, every lane pair: one half of the output lanes at a time, its eight pair-row
 * vectors in registers for every row of the span. DP(s, x, w) is s + madd(x, w): AVX2's
 * VPMADDWD and VPADDD, or VNNI's VPDPWSSD (the same sums: the int16 products of int8 values
 * and their pair sums cannot overflow). */
#define DENSE16(NAME, ATTR, DP)                                                                  \
    static ATTR void NAME(int32_t *acc, const int16_t *inp, const int16_t *wp,                  \
                          const struct span *sp) {                                              \
        for (int half = 0; half < 2; half++) {                                                  \
            __m256i w[8];                                                                       \
            for (int p = 0; p < 8; p++)                                                         \
                w[p] = _mm256_loadu_si256((const __m256i *)(wp + 32 * p + 16 * half));          \
            FOR_SPAN(sp, d, r) {                                                                \
                __m256i *a = (__m256i *)(acc + d * 16 + 8 * half);                              \
                const int16_t *x = inp + r * 16;                                                \
                __m256i z = _mm256_setzero_si256();                                             \
                __m256i s0 = DP(z, bcast_pair(x), w[0]), s1 = DP(z, bcast_pair(x + 2), w[1]);   \
                __m256i s2 = DP(z, bcast_pair(x + 4), w[2]), s3 = DP(z, bcast_pair(x + 6), w[3]); \
                s0 = DP(s0, bcast_pair(x + 8), w[4]);                                           \
                s1 = DP(s1, bcast_pair(x + 10), w[5]);                                          \
                s2 = DP(s2, bcast_pair(x + 12), w[6]);                                          \
                s3 = DP(s3, bcast_pair(x + 14), w[7]);                                          \
                __m256i sum = _mm256_add_epi32(_mm256_add_epi32(s0, s1), _mm256_add_epi32(s2, s3)); \
                _mm256_storeu_si256(a, _mm256_add_epi32(_mm256_loadu_si256(a), sum));          \
            }                                                                                   \
        }                                                                                       \
    }

#define DP_AVX2(s, x, w) _mm256_add_epi32((s), _mm256_madd_epi16((x), (w)))
DENSE16(dense16_avx2, AVX2, DP_AVX2)
#if defined(__GNUC__) && (__GNUC__ >= 11 || defined(__clang__))
#define HAVE_VNNI_KERNELS 1
#define DP_AVX_VNNI(s, x, w) _mm256_dpwssd_avx_epi32((s), (x), (w))
#define DP_AVX512_VNNI(s, x, w) _mm256_dpwssd_epi32((s), (x), (w))
DENSE16(dense16_avx_vnni, __attribute__((target("avx2,avxvnni"))), DP_AVX_VNNI)
DENSE16(dense16_avx512_vnni, __attribute__((target("avx2,avx512vnni,avx512vl"))),
        DP_AVX512_VNNI)
#else
#define HAVE_VNNI_KERNELS 0
#endif

/* BLOCK 16, every lane pair, up to MAX_GROUP dense tiles that read the same input rows (the
 * micro-ops of one input block for several output blocks): each input row's eight lane pairs
 * broadcast once, then every tile's sixteen output lanes from them, its pair rows as memory
 * operands. sp->d is 0: tile t adds to rows dks[t] + the span's destination offset. */
#define MAX_GROUP 8
#define DENSE16_GROUP(NAME, ATTR, DP)                                                            \
    static ATTR void NAME(int32_t *acc, const int16_t *inp, const int16_t *const *wps,          \
                          const int64_t *dks, int nt, const struct span *sp) {                  \
        FOR_SPAN(sp, d, r) {                                                                    \
            const int16_t *x = inp + r * 16;                                                    \
            __m256i x0 = bcast_pair(x), x1 = bcast_pair(x + 2), x2 = bcast_pair(x + 4);         \
            __m256i x3 = bcast_pair(x + 6), x4 = bcast_pair(x + 8), x5 = bcast_pair(x + 10);    \
            __m256i x6 = bcast_pair(x + 12), x7 = bcast_pair(x + 14);                           \
            for (int t = 0; t < nt; t++) {                                                      \
                const __m256i *w = (const __m256i *)wps[t];                                     \
                __m256i *a = (__m256i *)(acc + (dks[t] + d) * 16);                              \
                for (int h = 0; h < 2; h++) {                                                   \
                    __m256i s0 = DP(_mm256_loadu_si256(a + h), x0, _mm256_loadu_si256(w + h));  \
                    __m256i s1 = _mm256_madd_epi16(x1, _mm256_loadu_si256(w + 2 + h));          \
                    s0 = DP(s0, x2, _mm256_loadu_si256(w + 4 + h));                             \
                    s1 = DP(s1, x3, _mm256_loadu_si256(w + 6 + h));                             \
                    s0 = DP(s0, x4, _mm256_loadu_si256(w + 8 + h));                             \
                    s1 = DP(s1, x5, _mm256_loadu_si256(w + 10 + h));                            \
                    s0 = DP(s0, x6, _mm256_loadu_si256(w + 12 + h));                            \
                    s1 = DP(s1, x7, _mm256_loadu_si256(w + 14 + h));                            \
                    _mm256_storeu_si256(a + h, _mm256_add_epi32(s0, s1));                       \
                }                                                                               \
            }                                                                                   \
        }                                                                                       \
    }

DENSE16_GROUP(dense16_group_avx2, AVX2, DP_AVX2)

/* BLOCK 16, up to MAX_TAPS diagonal tiles adding to the same rows (a depthwise convolution's
 * taps): the products of two taps at a time interleaved and summed by VPMADDWD (|x * w| <=
 * 2^14, a pair's sum fits), every tap summed in registers, each destination row read and
 * written once. Unpacking interleaves within 128-bit halves: one sum holds lanes 0-3 and 8-11,
 * the other 4-7 and 12-15. sp->d and sp->s are 0: rows d0 + the span's destination offset,
 * sks[t] + its source offset. */
#define MAX_TAPS 16
static AVX2 void diag16_group_avx2(int32_t *acc, const int16_t *inp, const int16_t *const *dgs,
                                   const int64_t *sks, int nt, int64_t d0, const struct span *sp) {
    __m256i wlo[MAX_TAPS / 2], whi[MAX_TAPS / 2];
    int64_t sa[MAX_TAPS / 2], sb[MAX_TAPS / 2];
    int np = (nt + 1) / 2;
    for (int q = 0; q < np; q++) {
        __m256i da = _mm256_loadu_si256((const __m256i *)dgs[2 * q]);
        __m256i db = 2 * q + 1 < nt ? _mm256_loadu_si256((const __m256i *)dgs[2 * q + 1])
                                    : _mm256_setzero_si256(); /* an odd tap: times zero */
        wlo[q] = _mm256_unpacklo_epi16(da, db);
        whi[q] = _mm256_unpackhi_epi16(da, db);
        sa[q] = sks[2 * q];
        sb[q] = 2 * q + 1 < nt ? sks[2 * q + 1] : sks[2 * q];
    }
    FOR_SPAN(sp, d, r) {
        __m256i lo = _mm256_setzero_si256(), hi = _mm256_setzero_si256();
        for (int q = 0; q < np; q++) {
            __m256i xa = _mm256_loadu_si256((const __m256i *)(inp + (sa[q] + r) * 16));
            __m256i xb = _mm256_loadu_si256((const __m256i *)(inp + (sb[q] + r) * 16));
            lo = _mm256_add_epi32(lo, _mm256_madd_epi16(_mm256_unpacklo_epi16(xa, xb), wlo[q]));
            hi = _mm256_add_epi32(hi, _mm256_madd_epi16(_mm256_unpackhi_epi16(xa, xb), whi[q]));
        }
        __m256i *a = (__m256i *)(acc + (d0 + d) * 16);
        _mm256_storeu_si256(a, _mm256_add_epi32(_mm256_loadu_si256(a), _mm256_permute2x128_si256(lo, hi, 0x20)));
        _mm256_storeu_si256(a + 1, _mm256_add_epi32(_mm256_loadu_si256(a + 1), _mm256_permute2x128_si256(lo, hi, 0x31)));
    }
}
#if HAVE_VNNI_KERNELS
DENSE16_GROUP(dense16_group_avx_vnni, __attribute__((target("avx2,avxvnni"))), DP_AVX_VNNI)
DENSE16_GROUP(dense16_group_avx512_vnni, __attribute__((target("avx2,avx512vnni,avx512vl"))),
              DP_AVX512_VNNI)
#endif

/* pairs16_avx2 with NP (a constant: the loops unroll) lane pairs at offsets off[] of each
 * input row, their pair-row vectors w[2q], w[2q + 1] in registers for every row of the span. */
static inline __attribute__((always_inline)) AVX2 void pairs16_fixed(
    int32_t *acc, const int16_t *inp, const __m256i *w, const int *off, int NP,
    const struct span *sp) {
    FOR_SPAN(sp, d, r) {
        __m256i *a = (__m256i *)(acc + d * 16);
        const int16_t *x = inp + r * 16;
        __m256i s0 = _mm256_loadu_si256(a), s1 = _mm256_loadu_si256(a + 1);
        for (int q = 0; q < NP; q++) {
            __m256i b = bcast_pair(x + off[q]);
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(b, w[2 * q]));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(b, w[2 * q + 1]));
        }
        _mm256_storeu_si256(a, s0);
        _mm256_storeu_si256(a + 1, s1);
    }
}

/* BLOCK 16, only the listed lane pairs (e.g. input channels padded to the block): up to four
 * (a first layer's few input channels) with their weights held in registers, more from
 * memory. */
static AVX2 void pairs16_avx2(int32_t *acc, const int16_t *inp, const int16_t *wp,
                              const uint8_t *list, int np, const struct span *sp) {
    if (np <= 4) {
        __m256i w[8];
        int off[4];
        for (int q = 0; q < np; q++) {
            w[2 * q] = _mm256_loadu_si256((const __m256i *)(wp + 32 * list[q]));
            w[2 * q + 1] = _mm256_loadu_si256((const __m256i *)(wp + 32 * list[q] + 16));
            off[q] = 2 * list[q];
        }
        switch (np) {
        case 1: pairs16_fixed(acc, inp, w, off, 1, sp); return;
        case 2: pairs16_fixed(acc, inp, w, off, 2, sp); return;
        case 3: pairs16_fixed(acc, inp, w, off, 3, sp); return;
        case 4: pairs16_fixed(acc, inp, w, off, 4, sp); return;
        default: return; /* no pair: a zero tile, never given */
        }
    }
    FOR_SPAN(sp, d, r) {
        __m256i *a = (__m256i *)(acc + d * 16);
        const int16_t *x = inp + r * 16;
        __m256i s0 = _mm256_loadu_si256(a), s1 = _mm256_loadu_si256(a + 1);
        for (int q = 0; q < np; q++) {
            const __m256i *w = (const __m256i *)(wp + 32 * list[q]);
            __m256i b = bcast_pair(x + 2 * list[q]);
            s0 = _mm256_add_epi32(s0, _mm256_madd_epi16(b, _mm256_loadu_si256(w)));
            s1 = _mm256_add_epi32(s1, _mm256_madd_epi16(b, _mm256_loadu_si256(w + 1)));
        }
        _mm256_storeu_si256(a, s0);
        _mm256_storeu_si256(a + 1, s1);
    }
}

/* BLOCK 16, a diagonal tile: |x * w| <= 2^14 fits int16. */
static AVX2 void diag16_avx2(int32_t *acc, const int16_t *inp, const int16_t *dg,
                             const struct span *sp) {
    __m256i dv = _mm256_loadu_si256((const __m256i *)dg);
    FOR_SPAN(sp, d, r) {
        __m256i *a = (__m256i *)(acc + d * 16);
        __m256i prod = _mm256_mullo_epi16(_mm256_loadu_si256((const __m256i *)(inp + r * 16)), dv);
        __m256i lo = _mm256_cvtepi16_epi32(_mm256_castsi256_si128(prod));
        __m256i hi = _mm256_cvtepi16_epi32(_mm256_extracti128_si256(prod, 1));
        _mm256_storeu_si256(a, _mm256_add_epi32(_mm256_loadu_si256(a), lo));
        _mm256_storeu_si256(a + 1, _mm256_add_epi32(_mm256_loadu_si256(a + 1), hi));
    }
}
#endif

static void tile_kernel(const vta_scratch *s, int32_t *acc, const struct tiles *t, int64_t tile,
                        const struct span *sp);

#if HAVE_AVX2_KERNEL
/* BLOCK 16: every destination row of the span += row. */
static AVX2 void add_row16_avx2(int32_t *acc, const int32_t *row, const struct span *sp) {
    __m256i lo = _mm256_loadu_si256((const __m256i *)row);
    __m256i hi = _mm256_loadu_si256((const __m256i *)(row + 8));
    for (int64_t o = 0; o < sp->n_out; o++)
        for (int64_t i = 0; i < sp->n_in; i++) {
            __m256i *a = (__m256i *)(acc + (sp->d + o * sp->dfo + i * sp->dfi) * 16);
            _mm256_storeu_si256(a, _mm256_add_epi32(_mm256_loadu_si256(a), lo));
            _mm256_storeu_si256(a + 1, _mm256_add_epi32(_mm256_loadu_si256(a + 1), hi));
        }
}
#endif

/* Whether every row of the span reads the same input row (and there are several). */
static int one_source_row(const struct span *sp) {
    return sp->n_out * sp->n_in > 1 && (sp->sfi == 0 || sp->n_in == 1) &&
           (sp->sfo == 0 || sp->n_out == 1);
}

/* acc rows of the span += W . inp rows of the span, W the tile in WGT row `row`. */
static void tile_rows(const vta_scratch *s, int64_t row, const struct span *sp) {
    const struct tiles *t = s->from[row];
    int64_t tile = s->at[row], blk = s->g.blk;
    if (t->wclass[tile] == TILE_ZERO || sp->n_out <= 0 || sp->n_in <= 0) return;
    if (one_source_row(sp)) {
        /* one source row for every destination (e.g. a bias row times a row of ones): its
         * product once, added to each */
        struct span one = {1, 1, 0, 0, 0, 0, 0, sp->s};
        memset(s->row, 0, (size_t)blk * sizeof(int32_t));
        tile_kernel(s, s->row, t, tile, &one);
#if HAVE_AVX2_KERNEL
        if (s->kernel >= VTA_KERNEL_AVX2) { /* BLOCK 16 */
            add_row16_avx2(s->acc, s->row, sp);
            return;
        }
#endif
        FOR_SPAN(sp, d, r) {
            (void)r;
            int32_t *a = s->acc + d * blk;
            for (int64_t j = 0; j < blk; j++) a[j] = to_i32((uint32_t)a[j] + (uint32_t)s->row[j]);
        }
        return;
    }
    tile_kernel(s, s->acc, t, tile, sp);
}

static void tile_kernel(const vta_scratch *s, int32_t *acc, const struct tiles *t, int64_t tile,
                        const struct span *sp) {
    int64_t blk = s->g.blk;
    int cls = t->wclass[tile];
#if HAVE_AVX2_KERNEL
    if (s->kernel >= VTA_KERNEL_AVX2) { /* BLOCK 16 */
        if (cls == TILE_DIAG)
            diag16_avx2(acc, s->inp, t->diag + tile * 16, sp);
#if HAVE_VNNI_KERNELS
        else if (t->npairs[tile] == 8 && s->kernel == VTA_KERNEL_AVX512_VNNI)
            dense16_avx512_vnni(acc, s->inp, t->pairs + tile * 256, sp);
        else if (t->npairs[tile] == 8 && s->kernel == VTA_KERNEL_AVX_VNNI)
            dense16_avx_vnni(acc, s->inp, t->pairs + tile * 256, sp);
#endif
        else if (t->npairs[tile] == 8)
            dense16_avx2(acc, s->inp, t->pairs + tile * 256, sp);
        else
            pairs16_avx2(acc, s->inp, t->pairs + tile * 256, t->pair_list + tile * 8,
                         t->npairs[tile], sp);
        return;
    }
#endif
    if (cls == TILE_DIAG)
        diag_rows_c(acc, s->inp, t->diag + tile * blk, blk, sp);
    else
        dense_rows_c(acc, s->inp, t->wgt + tile * blk * blk, blk, sp);
}

#if HAVE_AVX2_KERNEL
static AVX2 void zero_rows16_avx2(int32_t *acc, int64_t n) {
    const __m256i z = _mm256_setzero_si256();
    __m256i *a = (__m256i *)acc;
    for (int64_t k = 0; k < 2 * n; k += 2) {
        _mm256_storeu_si256(a + k, z);
        _mm256_storeu_si256(a + k + 1, z);
    }
}
#endif

/* Accumulator rows [first, first + n) set to zero: at BLOCK 16 with vector stores, as fast as
 * memset on these ranges of a few kilobytes, without its call and size dispatch. */
static void zero_rows(const vta_scratch *s, int64_t first, int64_t n) {
#if HAVE_AVX2_KERNEL
    if (s->kernel >= VTA_KERNEL_AVX2) { /* BLOCK 16 */
        zero_rows16_avx2(s->acc + first * 16, n);
        return;
    }
#endif
    memset(s->acc + first * s->g.blk, 0, (size_t)(n * s->g.blk) * 4);
}

#if HAVE_AVX2_KERNEL
#define MAX_GROUPED_UOPS 256 /* diagonal tiles are grouped in GEMMs of at most so many micro-ops */

/* The micro-ops of a GEMM whose tile does not move with the loops (BLOCK 16, the vector
 * kernels): micro-ops with diagonal tiles adding to the same rows go through diag16_group
 * together, then consecutive micro-ops reading the same input row whose tiles are dense in
 * every lane pair through dense16_group; the others one at a time. Additions modulo
 * 2^32 commute, and a GEMM writes only accumulator rows: any order gives the same sums. */
static void gemm_groups16(const vta_scratch *s, int64_t nk, const int32_t *dk, const int32_t *sk,
                          const int32_t *wk, const struct span *all) {
    uint8_t taken[MAX_GROUPED_UOPS] = {0};
    if (nk <= MAX_GROUPED_UOPS) /* diagonal tiles by destination row */
        for (int64_t k = 0; k < nk; k++) {
            if (taken[k] || s->from[wk[k]]->wclass[s->at[wk[k]]] != TILE_DIAG) continue;
            const int16_t *dgs[MAX_TAPS];
            int64_t sks[MAX_TAPS];
            int nt = 0;
            for (int64_t j = k; j < nk && nt < MAX_TAPS; j++) {
                const struct tiles *t = s->from[wk[j]];
                if (taken[j] || dk[j] != dk[k] || t->wclass[s->at[wk[j]]] != TILE_DIAG) continue;
                dgs[nt] = t->diag + s->at[wk[j]] * 16;
                sks[nt++] = sk[j];
                taken[j] = 1;
            }
            diag16_group_avx2(s->acc, s->inp, dgs, sks, nt, dk[k], all);
        }
    for (int64_t k = 0; k < nk;) {
        int64_t end = k + 1;
        while (end < nk && sk[end] == sk[k] && end - k < MAX_GROUP) end++;
        const int16_t *wps[MAX_GROUP];
        int64_t dks[MAX_GROUP];
        int nt = 0;
        for (int64_t j = k; j < end; j++) {
            if (j < MAX_GROUPED_UOPS && taken[j]) continue;
            const struct tiles *t = s->from[wk[j]];
            int64_t tile = s->at[wk[j]];
            if (t->wclass[tile] == TILE_DENSE && t->npairs[tile] == 8) {
                wps[nt] = t->pairs + tile * 256;
                dks[nt++] = dk[j];
            } else if (t->wclass[tile] != TILE_ZERO) {
                struct span sp = *all;
                sp.d = dk[j];
                sp.s = sk[j];
                tile_rows(s, wk[j], &sp);
            }
        }
        if (nt) {
            struct span sp = *all;
            sp.s = sk[k];
#if HAVE_VNNI_KERNELS
            if (s->kernel == VTA_KERNEL_AVX512_VNNI)
                dense16_group_avx512_vnni(s->acc, s->inp, wps, dks, nt, &sp);
            else if (s->kernel == VTA_KERNEL_AVX_VNNI)
                dense16_group_avx_vnni(s->acc, s->inp, wps, dks, nt, &sp);
            else
#endif
                dense16_group_avx2(s->acc, s->inp, wps, dks, nt, &sp);
        }
        k = end;
    }
}
#endif

static void fast_gemm(vta_scratch *s, const int64_t *f, const int32_t *snap) {
    int64_t nk = f[F_UOP_END] - f[F_UOP_BGN], blk = s->g.blk;
    const int32_t *dk = snap, *sk = snap + nk, *wk = snap + 2 * nk;
    int64_t n_out = f[F_ITER_OUT], n_in = f[F_ITER_IN];
    int64_t dfo = f[F_DST_FACTOR_OUT], dfi = f[F_DST_FACTOR_IN];
    int64_t sfo = f[F_SRC_FACTOR_OUT], sfi = f[F_SRC_FACTOR_IN];
    int64_t wfo = f[F_WGT_FACTOR_OUT], wfi = f[F_WGT_FACTOR_IN];
    if (f[F_RESET]) {
        if (nk == 1 && ((n_in == 1 && dfo == 1) || (dfi == 1 && (n_out == 1 || dfo == n_in)))) {
            /* the usual reset: one range of consecutive rows */
            zero_rows(s, dk[0], n_out * n_in);
            return;
        }
        if (nk == 1 && dfi == 1) { /* runs of consecutive rows */
            for (int64_t o = 0; o < n_out; o++)
                memset(s->acc + (dk[0] + o * dfo) * blk, 0, (size_t)(n_in * blk) * 4);
            return;
        }
        for (int64_t o = 0; o < n_out; o++)
            for (int64_t ii = 0; ii < n_in; ii++)
                for (int64_t k = 0; k < nk; k++)
                    memset(s->acc + (dk[k] + o * dfo + ii * dfi) * blk, 0, (size_t)blk * 4);
        return;
    }
    if ((wfo == 0 || n_out == 1) && (wfi == 0 || n_in == 1)) { /* one tile per micro-op */
#if HAVE_AVX2_KERNEL
        struct span all = {n_out, n_in, dfo, dfi, sfo, sfi, 0, 0};
        if (s->kernel >= VTA_KERNEL_AVX2 && !one_source_row(&all)) {
            gemm_groups16(s, nk, dk, sk, wk, &all);
            return;
        }
#endif
        for (int64_t k = 0; k < nk; k++) {
            struct span sp = {n_out, n_in, dfo, dfi, sfo, sfi, dk[k], sk[k]};
            tile_rows(s, wk[k], &sp);
        }
        return;
    }
    if (wfi == 0 || n_in == 1) { /* one tile per micro-op and outer iteration */
        for (int64_t o = 0; o < n_out; o++)
            for (int64_t k = 0; k < nk; k++) {
                struct span sp = {1, n_in, 0, dfi, 0, sfi, dk[k] + o * dfo, sk[k] + o * sfo};
                tile_rows(s, wk[k] + o * wfo, &sp);
            }
        return;
    }
    if (wfo == 0 || n_out == 1) { /* one tile per micro-op and inner iteration */
        for (int64_t ii = 0; ii < n_in; ii++)
            for (int64_t k = 0; k < nk; k++) {
                struct span sp = {n_out, 1, dfo, 0, sfo, 0, dk[k] + ii * dfi, sk[k] + ii * sfi};
                tile_rows(s, wk[k] + ii * wfi, &sp);
            }
        return;
    }
    for (int64_t o = 0; o < n_out; o++)
        for (int64_t ii = 0; ii < n_in; ii++)
            for (int64_t k = 0; k < nk; k++) {
                struct span sp = {1, 1, 0, 0, 0, 0, dk[k] + o * dfo + ii * dfi,
                                  sk[k] + o * sfo + ii * sfi};
                tile_rows(s, wk[k] + o * wfo + ii * wfi, &sp);
            }
}

/* --- resets left pending -----------------------------------------------------------------------
 * A GEMM layer resets a range of accumulator rows, then adds to each of them one product row
 * (its bias: a bias tile times a row of ones), then the products of its micro-ops. vta_execute
 * keeps the last reset of one range of consecutive rows pending instead of zeroing it: the
 * next GEMM that adds one product row to exactly each row of that range writes the product
 * (0 + P is P, modulo 2^32 too) instead of adding it; anything else that may read or write
 * those rows first zeroes them (settle_reset), so every instruction sees the accumulator the
 * replay order gives. */

/* The rows [first, first + n) a reset GEMM zeroes when they are consecutive, else n = 0. */
static int64_t reset_range(const int64_t *f, const int32_t *snap, int64_t *first) {
    int64_t nk = f[F_UOP_END] - f[F_UOP_BGN], n_out = f[F_ITER_OUT], n_in = f[F_ITER_IN];
    int64_t dfo = f[F_DST_FACTOR_OUT], dfi = f[F_DST_FACTOR_IN];
    if (!f[F_RESET] || nk != 1 || n_out <= 0 || n_in <= 0) return 0;
    if (!((n_in == 1 && dfo == 1) || (dfi == 1 && (n_out == 1 || dfo == n_in)))) return 0;
    *first = snap[0];
    return n_out * n_in;
}

/* BLOCK 16: rows [first, first + n) = row. */
#if HAVE_AVX2_KERNEL
static AVX2 void set_rows16_avx2(int32_t *acc, const int32_t *row, int64_t n) {
    __m256i lo = _mm256_loadu_si256((const __m256i *)row);
    __m256i hi = _mm256_loadu_si256((const __m256i *)(row + 8));
    __m256i *a = (__m256i *)acc;
    for (int64_t k = 0; k < 2 * n; k += 2) {
        _mm256_storeu_si256(a + k, lo);
        _mm256_storeu_si256(a + k + 1, hi);
    }
}
#endif

static void set_rows(const vta_scratch *s, int64_t first, int64_t n, const int32_t *row) {
    int64_t blk = s->g.blk;
#if HAVE_AVX2_KERNEL
    if (s->kernel >= VTA_KERNEL_AVX2) { /* BLOCK 16 */
        set_rows16_avx2(s->acc + first * 16, row, n);
        return;
    }
#endif
    for (int64_t r = 0; r < n; r++) memcpy(s->acc + (first + r) * blk, row, (size_t)blk * 4);
}

/* A GEMM (no reset) whose one micro-op adds one product row to each row of the pending range
 * [first, first + n), once each (its source row fixed, its tile moving with the outer loop
 * at most): the products written instead. 1 when taken, 0 (nothing done) otherwise. */
static int gemm_writes_pending(const vta_scratch *s, const int64_t *f, const int32_t *snap,
                               int64_t first, int64_t n) {
    int64_t nk = f[F_UOP_END] - f[F_UOP_BGN], n_out = f[F_ITER_OUT], n_in = f[F_ITER_IN];
    int64_t dfo = f[F_DST_FACTOR_OUT], dfi = f[F_DST_FACTOR_IN];
    int64_t sfo = f[F_SRC_FACTOR_OUT], sfi = f[F_SRC_FACTOR_IN];
    int64_t wfo = f[F_WGT_FACTOR_OUT], wfi = f[F_WGT_FACTOR_IN], blk = s->g.blk;
    if (f[F_RESET] || nk != 1 || n_out <= 0 || n_in <= 0 || snap[0] != first || n_out * n_in != n)
        return 0;
    /* row (o, i) = first + o * n_in + i: every row of the range once */
    if (!((n_in == 1 && dfo == 1) || (dfi == 1 && (n_out == 1 || dfo == n_in)))) return 0;
    if ((sfo != 0 && n_out > 1) || (sfi != 0 && n_in > 1) || (wfi != 0 && n_in > 1)) return 0;
    struct span one = {1, 1, 0, 0, 0, 0, 0, snap[1]};
    for (int64_t o = 0; o < n_out; o++) {
        int64_t row = snap[2] + o * wfo; /* within the WGT buffer: checked */
        const struct tiles *t = s->from[row];
        int64_t tile = s->at[row];
        memset(s->row, 0, (size_t)blk * sizeof(int32_t));
        if (t->wclass[tile] != TILE_ZERO) tile_kernel(s, s->row, t, tile, &one);
        set_rows(s, first + o * n_in, n_in, s->row);
    }
    return 1;
}

/* Whether instruction f may read or write accumulator rows [first, first + n) (a pending
 * reset's): everything but LOADs into INP, WGT or UOP, SETPAD, FINISH and STOREs of other
 * rows without parameters. */
static int touches_rows(const int64_t *f, int64_t first, int64_t n) {
    int64_t mt = f[F_MEMORY_TYPE];
    switch (f[F_OPCODE]) {
    case OP_LOAD:
        return !(mt == MEM_INP || mt == MEM_WGT || mt == MEM_UOP);
    case OP_STORE: {
        if (mt != MEM_OUT) return 1;
        int64_t base = f[F_SRAM_BASE], end = base + f[F_Y_SIZE] * f[F_X_SIZE];
        return f[F_X_SIZE] && f[F_Y_SIZE] && base < first + n && first < end;
    }
    case OP_SETPAD:
    case OP_FINISH:
        return 0;
    default:
        return 1;
    }
}

/* --- constant weights, converted once per program ------------------------------------------- */

int vta_program_constants(vta_program *p, const uint8_t *dram, int64_t dram_len,
                          int64_t constant_from, int64_t constant_end) {
    const struct geometry *g = &p->g;
    int64_t blk = g->blk, bb = blk * blk, ppt = blk / 2 > 0 ? blk / 2 : 1;
    tiles_free(&p->consts);
    p->const_first = 0;
    if (!dram || dram_len != p->dram_len) return VTA_ERROR;
    if (constant_from < 0) constant_from = 0;
    if (constant_end > dram_len) constant_end = dram_len;
    /* the DRAM tiles the WGT LOADs of constant bytes read */
    int64_t lo = INT64_MAX, hi = -1;
    for (int64_t i = 0; i < p->n; i++) {
        const int64_t *f = p->f + i * F_COUNT;
        if (f[F_OPCODE] != OP_LOAD || f[F_MEMORY_TYPE] != MEM_WGT || !f[F_X_SIZE] || !f[F_Y_SIZE])
            continue;
        int64_t first = f[F_DRAM_BASE], end = first + (f[F_Y_SIZE] - 1) * f[F_X_STRIDE] + f[F_X_SIZE];
        if (first * bb < constant_from || end * bb > constant_end) continue;
        if (first < lo) lo = first;
        if (end > hi) hi = end;
    }
    if (hi < 0) return VTA_OK;
    int vector = 0;
#if HAVE_AVX2_KERNEL
    vector = blk == 16 && cpu_has_avx2();
#endif
    if (tiles_alloc(&p->consts, hi - lo + 1, blk, ppt, 1)) return VTA_ERR_NOMEM;
    for (int64_t t = lo; t <= hi; t++)
        set_tile(&p->consts, vector, blk, ppt, t - lo, t < hi ? dram + t * bb : NULL);
    p->const_first = lo;
    return VTA_OK;
}

#if HAVE_AVX2_KERNEL
struct fused_op {
    int op, use_imm;
    __m256i imm;
    __m128i count; /* SHR: the shift, right when shr_right */
    int shr_right;
    const int32_t *sk;
    int64_t sfo, sfi;
};

/* One instruction of a fused run whose register operand is the same row for every inner
 * iteration (a per-channel multiplier, exponent or zero point): its operand and what the
 * operation derives from it (RDMUL: the odd lanes; RSHR: the remainder mask and its half) are
 * computed once per outer iteration and micro-op, not once per row. */
struct hoisted_op {
    int op, saturate, shr_right;
    __m128i count;       /* SHR: the shift, right when shr_right */
    __m256i b[2], c[2], d[2];
};

/* The operand rows of the hoisted ops for outer iteration o and micro-op kk. Returns 0 when
 * a register RSHR exponent is outside [0, 31]. */
static inline AVX2 int hoist_operands(struct hoisted_op *h, const struct fused_op *ops, int len,
                                      const int32_t *acc, int64_t o, int64_t kk) {
    const __m256i zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(31);
    const __m256i one = _mm256_set1_epi32(1), min = _mm256_set1_epi32(INT32_MIN);
    for (int j = 0; j < len; j++) {
        const struct fused_op *q = &ops[j];
        struct hoisted_op *t = &h[j];
        t->op = q->op;
        t->shr_right = q->shr_right;
        t->count = q->count;
        t->b[0] = t->b[1] = q->imm;
        if (!q->use_imm) {
            const __m256i *y = (const __m256i *)(acc + (q->sk[kk] + o * q->sfo) * 16);
            t->b[0] = _mm256_loadu_si256(y);
            t->b[1] = _mm256_loadu_si256(y + 1);
        }
        for (int v = 0; v < 2; v++) {
            __m256i b = t->b[v];
            if (q->op == ALU_RDMUL) {
                t->c[v] = _mm256_srli_epi64(b, 32);
            } else if (q->op == ALU_RSHR) {
                __m256i bad = _mm256_or_si256(_mm256_cmpgt_epi32(zero, b), _mm256_cmpgt_epi32(b, top));
                if (!_mm256_testz_si256(bad, bad)) return 0;
                t->c[v] = _mm256_sub_epi32(_mm256_sllv_epi32(one, b), one);
                t->d[v] = _mm256_srli_epi32(t->c[v], 1);
            }
        }
        /* only INT32_MIN times INT32_MIN saturates */
        __m256i m = _mm256_or_si256(_mm256_cmpeq_epi32(t->b[0], min), _mm256_cmpeq_epi32(t->b[1], min));
        t->saturate = !_mm256_testz_si256(m, m);
    }
    return 1;
}

/* rdmul8 when y is not INT32_MIN (nothing saturates), y_odd = y >> 32 (64-bit lanes) */
static inline AVX2 __m256i rdmul8_nosat(__m256i x, __m256i y, __m256i y_odd) {
    const __m256i half = _mm256_set1_epi64x((int64_t)1 << 30);
    __m256i even = _mm256_add_epi64(_mm256_mul_epi32(x, y), half);
    __m256i odd = _mm256_add_epi64(_mm256_mul_epi32(_mm256_srli_epi64(x, 32), y_odd), half);
    return _mm256_blend_epi32(_mm256_srli_epi64(even, 31), _mm256_slli_epi64(odd, 1), 0xAA);
}

/* rshr8 with mask = 2^e - 1 and half_mask = mask >> 1 computed once */
static inline AVX2 __m256i rshr8_masked(__m256i x, __m256i e, __m256i mask, __m256i half_mask) {
    __m256i rem = _mm256_and_si256(x, mask);
    __m256i threshold = _mm256_sub_epi32(half_mask, _mm256_srai_epi32(x, 31));
    return _mm256_sub_epi32(_mm256_srav_epi32(x, e), _mm256_cmpgt_epi32(rem, threshold));
}

/* Rows x0 and x1 (the same row twice is allowed) through the run's `len` operations, in
 * registers. */
static inline AVX2 void hoisted_rows(const struct hoisted_op *h, int len, __m256i *x0, __m256i *x1) {
    __m256i a0 = _mm256_loadu_si256(x0), a1 = _mm256_loadu_si256(x0 + 1);
    __m256i a2 = _mm256_loadu_si256(x1), a3 = _mm256_loadu_si256(x1 + 1);
#define HOISTED4(F, ...) \
    (a0 = F(a0, q->b[0] __VA_ARGS__), a1 = F(a1, q->b[1] __VA_ARGS__), \
     a2 = F(a2, q->b[0] __VA_ARGS__), a3 = F(a3, q->b[1] __VA_ARGS__))
    for (int j = 0; j < len; j++) {
        const struct hoisted_op *q = &h[j];
        switch (q->op) {
        case ALU_MIN: HOISTED4(_mm256_min_epi32); break;
        case ALU_MAX: HOISTED4(_mm256_max_epi32); break;
        case ALU_ADD: HOISTED4(_mm256_add_epi32); break;
        case ALU_MUL: HOISTED4(_mm256_mullo_epi32); break;
        case ALU_RDMUL:
            if (q->saturate) {
                HOISTED4(rdmul8);
            } else {
                a0 = rdmul8_nosat(a0, q->b[0], q->c[0]), a1 = rdmul8_nosat(a1, q->b[1], q->c[1]);
                a2 = rdmul8_nosat(a2, q->b[0], q->c[0]), a3 = rdmul8_nosat(a3, q->b[1], q->c[1]);
            }
            break;
        case ALU_RSHR:
            a0 = rshr8_masked(a0, q->b[0], q->c[0], q->d[0]);
            a1 = rshr8_masked(a1, q->b[1], q->c[1], q->d[1]);
            a2 = rshr8_masked(a2, q->b[0], q->c[0], q->d[0]);
            a3 = rshr8_masked(a3, q->b[1], q->c[1], q->d[1]);
            break;
        default: /* SHR by an immediate */
            if (q->shr_right) {
                a0 = _mm256_sra_epi32(a0, q->count), a1 = _mm256_sra_epi32(a1, q->count);
                a2 = _mm256_sra_epi32(a2, q->count), a3 = _mm256_sra_epi32(a3, q->count);
            } else {
                a0 = _mm256_sll_epi32(a0, q->count), a1 = _mm256_sll_epi32(a1, q->count);
                a2 = _mm256_sll_epi32(a2, q->count), a3 = _mm256_sll_epi32(a3, q->count);
            }
            break;
        }
    }
#undef HOISTED4
    _mm256_storeu_si256(x1, a2);
    _mm256_storeu_si256(x1 + 1, a3);
    _mm256_storeu_si256(x0, a0);
    _mm256_storeu_si256(x0 + 1, a1);
}

/* A requantization's usual run, [RDMUL by a register row, unless no_rdmul] RSHR by a
 * register row, MAX, MIN (immediates), with no INT32_MIN multiplier: the `n` rows from x on
 * (`step` ACC rows apart) through it, the operations inlined (no dispatch per row). */
static inline __attribute__((always_inline)) AVX2 void requant_rows(const struct hoisted_op *h,
                                                                    int no_rdmul, int32_t *x,
                                                                    int64_t step, int64_t n) {
    const struct hoisted_op *m = &h[0], *e = &h[no_rdmul ? 0 : 1], *lo = e + 1, *hi = e + 2;
    for (int64_t r = 0; r < n; r++, x += step * 16) {
        __m256i *v = (__m256i *)x;
        __m256i a0 = _mm256_loadu_si256(v), a1 = _mm256_loadu_si256(v + 1);
        if (!no_rdmul) {
            a0 = rdmul8_nosat(a0, m->b[0], m->c[0]);
            a1 = rdmul8_nosat(a1, m->b[1], m->c[1]);
        }
        a0 = rshr8_masked(a0, e->b[0], e->c[0], e->d[0]);
        a1 = rshr8_masked(a1, e->b[1], e->c[1], e->d[1]);
        a0 = _mm256_min_epi32(_mm256_max_epi32(a0, lo->b[0]), hi->b[0]);
        a1 = _mm256_min_epi32(_mm256_max_epi32(a1, lo->b[1]), hi->b[1]);
        _mm256_storeu_si256(v, a0);
        _mm256_storeu_si256(v + 1, a1);
    }
}

/* Whether the run is requant_rows' (1: with RDMUL, 2: without), else 0. */
static int requant_shape(const struct fused_op *ops, int len) {
    int k = len == 4 && ops[0].op == ALU_RDMUL && !ops[0].use_imm ? 1 : len == 3 ? 0 : -1;
    if (k < 0 || ops[k].op != ALU_RSHR || ops[k].use_imm || ops[k + 1].op != ALU_MAX ||
        !ops[k + 1].use_imm || ops[k + 2].op != ALU_MIN || !ops[k + 2].use_imm)
        return 0;
    return k ? 1 : 2;
}

/* The fused run when no register operand row moves with the inner iteration: every
 * operand prepared once per outer iteration and micro-op, two rows per operation. */
static AVX2 int alu_hoisted16_avx2(int32_t *acc, const struct fused_op *ops, int len,
                                   const int32_t *dk, int64_t nk, int64_t n_out, int64_t n_in,
                                   int64_t dfo, int64_t dfi) {
    struct hoisted_op h[MAX_FUSED];
    int shape = requant_shape(ops, len);
    for (int64_t o = 0; o < n_out; o++) /* exponents checked before any row changes */
        for (int64_t kk = 0; kk < nk; kk++)
            if (!hoist_operands(h, ops, len, acc, o, kk)) return 0;
    for (int64_t o = 0; o < n_out; o++)
        for (int64_t kk = 0; kk < nk; kk++) {
            hoist_operands(h, ops, len, acc, o, kk);
            int32_t *base = acc + (dk[kk] + o * dfo) * 16;
            if (shape == 1 && !h[0].saturate) {
                requant_rows(h, 0, base, dfi, n_in);
                continue;
            }
            if (shape == 2) {
                requant_rows(h, 1, base, dfi, n_in);
                continue;
            }
            int64_t ii = 0;
            for (; ii + 1 < n_in; ii += 2)
                hoisted_rows(h, len, (__m256i *)(base + ii * dfi * 16),
                             (__m256i *)(base + (ii + 1) * dfi * 16));
            if (ii < n_in) {
                __m256i *x = (__m256i *)(base + ii * dfi * 16);
                hoisted_rows(h, len, x, x);
            }
        }
    return 1;
}

/* The run of `len` ALU instructions from order position k in one pass per row (BLOCK 16).
 * Returns 0 without touching anything when a register RSHR exponent is outside [0, 31]:
 * the instructions then run one at a time and the failing one names the lane. */
static AVX2 int alu_fused16_avx2(int32_t *acc, const struct vta_program *p, int64_t k, int len) {
    struct fused_op ops[MAX_FUSED];
    const int64_t *f0 = p->f + p->order[k] * F_COUNT;
    int64_t nk = f0[F_UOP_END] - f0[F_UOP_BGN], n_out = f0[F_ITER_OUT], n_in = f0[F_ITER_IN];
    int64_t dfo = f0[F_DST_FACTOR_OUT], dfi = f0[F_DST_FACTOR_IN];
    const int32_t *dk = p->uops + p->uop_at[p->order[k]];
    const __m256i zero = _mm256_setzero_si256(), top = _mm256_set1_epi32(31);
    int hoist = 1;
    for (int j = 0; j < len; j++) {
        int64_t i = p->order[k + j];
        const int64_t *f = p->f + i * F_COUNT;
        struct fused_op *q = &ops[j];
        q->op = (int)f[F_ALU_OPCODE];
        q->use_imm = f[F_USE_IMM] != 0;
        q->imm = _mm256_set1_epi32((int32_t)f[F_IMM]);
        q->shr_right = f[F_IMM] >= 0;
        q->count = _mm_cvtsi32_si128((int)(f[F_IMM] >= 0 ? f[F_IMM] : -f[F_IMM]));
        q->sk = p->uops + p->uop_at[i] + nk;
        q->sfo = f[F_SRC_FACTOR_OUT];
        q->sfi = f[F_SRC_FACTOR_IN];
        if (!q->use_imm && n_in > 1 && q->sfi != 0) hoist = 0;
    }
    if (hoist) return alu_hoisted16_avx2(acc, ops, len, dk, nk, n_out, n_in, dfo, dfi);
    for (int j = 0; j < len; j++) {
        const struct fused_op *q = &ops[j];
        if (q->op != ALU_RSHR || q->use_imm) continue;
        for (int64_t o = 0; o < n_out; o++)
            for (int64_t ii = 0; ii < n_in; ii++)
                for (int64_t kk = 0; kk < nk; kk++) {
                    const __m256i *y = (const __m256i *)(acc + (q->sk[kk] + o * q->sfo + ii * q->sfi) * 16);
                    __m256i b0 = _mm256_loadu_si256(y), b1 = _mm256_loadu_si256(y + 1);
                    __m256i bad = _mm256_or_si256(
                        _mm256_or_si256(_mm256_cmpgt_epi32(zero, b0), _mm256_cmpgt_epi32(b0, top)),
                        _mm256_or_si256(_mm256_cmpgt_epi32(zero, b1), _mm256_cmpgt_epi32(b1, top)));
                    if (!_mm256_testz_si256(bad, bad)) return 0;
                }
    }
    for (int64_t o = 0; o < n_out; o++)
        for (int64_t ii = 0; ii < n_in; ii++)
            for (int64_t kk = 0; kk < nk; kk++) {
                __m256i *xv = (__m256i *)(acc + (dk[kk] + o * dfo + ii * dfi) * 16);
                __m256i a0 = _mm256_loadu_si256(xv), a1 = _mm256_loadu_si256(xv + 1);
                for (int j = 0; j < len; j++) {
                    const struct fused_op *q = &ops[j];
                    __m256i b0 = q->imm, b1 = q->imm;
                    if (!q->use_imm) {
                        const __m256i *y = (const __m256i *)(acc + (q->sk[kk] + o * q->sfo + ii * q->sfi) * 16);
                        b0 = _mm256_loadu_si256(y);
                        b1 = _mm256_loadu_si256(y + 1);
                    }
                    switch (q->op) {
                    case ALU_MIN: a0 = _mm256_min_epi32(a0, b0), a1 = _mm256_min_epi32(a1, b1); break;
                    case ALU_MAX: a0 = _mm256_max_epi32(a0, b0), a1 = _mm256_max_epi32(a1, b1); break;
                    case ALU_ADD: a0 = _mm256_add_epi32(a0, b0), a1 = _mm256_add_epi32(a1, b1); break;
                    case ALU_MUL: a0 = _mm256_mullo_epi32(a0, b0), a1 = _mm256_mullo_epi32(a1, b1); break;
                    case ALU_RDMUL: a0 = rdmul8(a0, b0), a1 = rdmul8(a1, b1); break;
                    case ALU_RSHR: a0 = rshr8(a0, b0), a1 = rshr8(a1, b1); break;
                    default: /* SHR by an immediate */
                        if (q->shr_right)
                            a0 = _mm256_sra_epi32(a0, q->count), a1 = _mm256_sra_epi32(a1, q->count);
                        else
                            a0 = _mm256_sll_epi32(a0, q->count), a1 = _mm256_sll_epi32(a1, q->count);
                        break;
                    }
                }
                _mm256_storeu_si256(xv, a0);
                _mm256_storeu_si256(xv + 1, a1);
            }
    return 1;
}
#endif

/* Whether the fused run from order position k was taken (else: one instruction at a time). */
static int alu_fused(const vta_scratch *s, const struct vta_program *p, int64_t k) {
#if HAVE_AVX2_KERNEL
    if (s->kernel >= VTA_KERNEL_AVX2 && s->g.blk == 16)
        return alu_fused16_avx2(s->acc, p, k, p->alu_fused[k]);
#endif
    (void)s, (void)p, (void)k;
    return 0;
}

/* --- the replay ------------------------------------------------------------------------------ */

static int fast_step(machine *m, vta_scratch *s, const vta_program *p, int64_t i) {
    const int64_t *f = FLD(m, i);
    int rc;
    switch (f[F_OPCODE]) {
    case OP_LOAD:
        fast_load(m, s, p, f);
        return VTA_OK;
    case OP_STORE:
        if (f[F_X_SIZE] == 0 || f[F_Y_SIZE] == 0) return VTA_OK;
        if (f[F_MEMORY_TYPE] == MEM_OUTQ && (rc = store_shifts(m, i, f))) return rc;
        store_rows(m, f);
        if (f[F_CLEAR])
            memset(s->acc + f[F_SRAM_BASE] * s->g.blk, 0,
                   (size_t)(f[F_Y_SIZE] * f[F_X_SIZE] * s->g.blk) * sizeof(int32_t));
        return VTA_OK;
    case OP_GEMM:
        if (p->uop_at[i] >= 0) fast_gemm(s, f, p->uops + p->uop_at[i]);
        return VTA_OK;
    case OP_ALU: {
        if (p->uop_at[i] < 0) return VTA_OK;
        const int32_t *snap = p->uops + p->uop_at[i];
        struct loops L;
        int64_t nk = f[F_UOP_END] - f[F_UOP_BGN];
        L.bgn = f[F_UOP_BGN];
        L.end = f[F_UOP_END];
        L.n_out = f[F_ITER_OUT];
        L.n_in = f[F_ITER_IN];
        L.dfo = f[F_DST_FACTOR_OUT];
        L.dfi = f[F_DST_FACTOR_IN];
        L.sfo = f[F_SRC_FACTOR_OUT];
        L.sfi = f[F_SRC_FACTOR_IN];
        L.wfo = L.wfi = 0;
        L.dk = snap;
        L.sk = snap + nk;
        L.wk = snap + 2 * nk;
        return alu_loops(m, i, f, &L);
    }
    case OP_SETPAD:
        m->pad_value = (int8_t)f[F_PAD_VALUE];
        return VTA_OK;
    default:
        return VTA_OK; /* FINISH */
    }
}

int vta_execute(const vta_program *p, vta_scratch *s, vta_run *run) {
    machine mach, *m = &mach;
    memset(m, 0, sizeof *m);
    run->error_index = -1;
    run->error_kind[0] = run->error_message[0] = 0;
    m->run = run;
    m->n = p->n;
    m->f = p->f;
    m->g = p->g;
    m->cfg = &p->cfg;
    if (memcmp(&p->cfg, &s->cfg, sizeof p->cfg) != 0)
        return fail(m, -1, "the scratchpads were made for another hardware configuration");
    if (!run->dram || run->dram_len != p->dram_len)
        return fail(m, -1, "a DRAM image of %lld bytes for a program prepared for %lld",
                    (long long)(run->dram ? run->dram_len : 0), (long long)p->dram_len);
    m->acc = s->acc;
    m->kernel = s->kernel;
    m->data = 1;
    vta_program_timing(p, run);
    run->kernel = s->kernel;
    int rc = VTA_OK;
    int64_t zero_first = 0, zero_n = 0; /* a reset left pending (see reset_range) */
    for (int64_t k = 0; k < p->n_order && rc == VTA_OK; k++) {
        int64_t i = p->order[k];
        const int64_t *f = p->f + i * F_COUNT;
        if (f[F_OPCODE] == OP_GEMM && p->uop_at[i] >= 0) {
            const int32_t *snap = p->uops + p->uop_at[i];
            int64_t first = 0, n = reset_range(f, snap, &first);
            if (n) {
                if (zero_n) zero_rows(s, zero_first, zero_n);
                zero_first = first, zero_n = n;
                continue;
            }
            if (zero_n && gemm_writes_pending(s, f, snap, zero_first, zero_n)) {
                zero_n = 0;
                continue;
            }
        }
        if (zero_n && touches_rows(f, zero_first, zero_n)) {
            zero_rows(s, zero_first, zero_n);
            zero_n = 0;
        }
        if (p->alu_fused[k] >= 2 && alu_fused(s, p, k)) {
            k += p->alu_fused[k] - 1;
            continue;
        }
        rc = fast_step(m, s, p, i);
    }
    if (zero_n) zero_rows(s, zero_first, zero_n); /* the accumulator as the replay leaves it */
    /* No row refers to the program's constants once it is done (it may be freed): a prepared
     * program reads no WGT row it has not loaded itself (vta_prepare checks it), so the rows
     * only need to be valid. */
    if (p->consts.count) {
        int64_t dw = s->g.depth[BUF_WGT];
        for (int64_t r = 0; r < dw; r++) {
            s->from[r] = &s->own;
            s->at[r] = r;
        }
    }
    return rc;
}

int vta_machine_abi(void) { return VTA_MACHINE_ABI; }

/* Builds pass -DVTA_SOURCE_HASH="..." (a digest of these sources) so that a loader can tell a
 * stale library from a current one. */
#ifndef VTA_SOURCE_HASH
#define VTA_SOURCE_HASH ""
#endif
const char *vta_source_hash(void) { return VTA_SOURCE_HASH; }

int vta_field_count(void) { return F_COUNT; }

const char *vta_field_name(int field) {
    return field >= 0 && field < F_COUNT ? FIELD_NAMES[field] : NULL;
}

int vta_decode(const vta_config *config, const uint64_t *words, int64_t n, int64_t *fields) {
    struct geometry g;
    int rc = make_geometry(config, &g);
    if (rc) return rc;
    for (int64_t i = 0; i < n; i++) decode_one(&g, words + 2 * i, fields + i * F_COUNT);
    return VTA_OK;
}

int64_t vta_memory_limit(char *error, size_t size) {
    char text[128];
    int64_t limit = env_limit("QACCEL_MEMORY_LIMIT", VTA_DEFAULT_MEMORY_LIMIT, text, sizeof text);
    if (limit == LIMIT_MALFORMED && error && size)
        snprintf(error, size,
                 "QACCEL_MEMORY_LIMIT='%s': expected a number, optionally with K, M, G or T, or none",
                 text);
    return limit;
}
