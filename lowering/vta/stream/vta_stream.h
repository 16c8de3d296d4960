/* libqaccel_stream: an accelerator layer's instruction stream resolved in one call (C99).
 *
 * The emitter (lowering/vta/emit.py) describes a stream as flat int64 arrays and
 * vta_stream_resolve sets the dependency tokens, places the micro-op kernels (inserting the
 * LOAD UOP instructions) and encodes every instruction, exactly as the Python reference
 * `resolve_stream_py` does. Inputs are untrusted: every index is checked first. */
#ifndef VTA_STREAM_H
#define VTA_STREAM_H

#include <stdint.h>

#define VTA_STREAM_ABI 2
#define VTA_STREAM_NF 34     /* fields of a row (isa.FIELD_NAMES) */
#define VTA_STREAM_OPCODES 6 /* isa.Opcode */

enum {
    VTA_STREAM_OK = 0,
    VTA_STREAM_BAD_INPUT = 1,      /* a descriptor index or size out of range */
    VTA_STREAM_NOMEM = 2,
    VTA_STREAM_NO_QUEUE = 3,       /* a dependency between modules no token queue links */
    VTA_STREAM_KERNEL_TOO_BIG = 4, /* a kernel larger than the micro-op buffer (error_value) */
    VTA_STREAM_OVERFLOW = 5,       /* a field outside its range, or an unknown opcode */
    VTA_STREAM_NO_COMPUTE = 6,     /* no compute instruction to load the micro-ops before */
};

typedef struct vta_stream_io {
    /* inputs */
    int64_t nf;           /* VTA_STREAM_NF */
    int64_t n;            /* instructions */
    const int64_t *recs;  /* [n][5]: row index, module (0 load, 1 compute, 2 store),
                             access signature, kernel (-1: none), micro-op within it (-1: all) */
    int64_t n_rows;
    const int64_t *rows;  /* [n_rows][nf]: the fields each instruction starts from */
    int64_t n_sigs;       /* access signatures: the slots read and written, CSR */
    const int64_t *sig_read_ptr, *sig_reads, *sig_write_ptr, *sig_writes;
    int64_t sig_entries[2]; /* lengths of sig_reads, sig_writes */
    int64_t n_slots;
    int64_t n_kernels;
    const int64_t *kernel_sizes; /* micro-ops of each kernel, in image order */
    int64_t uop_depth;
    int64_t finish;       /* the last instruction is FINISH: it waits for every module */
    int64_t columns[8];   /* uop_bgn, uop_end, memory_type, sram_base, dram_base, y_size,
                             x_size, x_stride */
    int64_t token_push[9], token_pop[9]; /* [producer * 3 + consumer]: columns, -1: none */
    int64_t enc_ptr[VTA_STREAM_OPCODES + 1]; /* per opcode its fields in enc_* */
    int64_t enc_entries;  /* the length of each enc_* array */
    const int64_t *enc_col, *enc_lo, *enc_hi, *enc_shift, *enc_word;
    int64_t capacity;     /* rows of fields / words */
    /* outputs */
    int64_t *fields;      /* [capacity][nf]: as isa.decode gives the words back */
    uint64_t *words;      /* [capacity][2] */
    int64_t n_out, n_uop_loads;
    int64_t error_index, error_value;
} vta_stream_io;

int64_t vta_stream_abi(void);
const char *vta_stream_source_hash(void);
int vta_stream_resolve(vta_stream_io *io);

/* A GEMM layer's stream emitted and resolved in one call (vta_gemm.c): `params` holds
 * VTA_GEMM_N int64 values indexed by the enum below (lowering/vta/cstream.py's
 * `gemm_params` fills them from the emitter); `statics` the configuration's inputs of
 * vta_stream_io (columns, token queues, encoding plan, uop_depth), the rest of it unused.
 * On success `out` holds malloc'ed arrays the caller releases with vta_gemm_free. */
enum {
    /* geometry */
    VTA_GEMM_KIND, VTA_GEMM_H, VTA_GEMM_W, VTA_GEMM_KH, VTA_GEMM_KW, VTA_GEMM_SH, VTA_GEMM_SW,
    VTA_GEMM_DH, VTA_GEMM_DW, VTA_GEMM_PAD_T, VTA_GEMM_PAD_L, VTA_GEMM_OH, VTA_GEMM_OW,
    VTA_GEMM_CIB, VTA_GEMM_COB, VTA_GEMM_DEPTH_MULTIPLIER, VTA_GEMM_BATCH,
    VTA_GEMM_ROW_SUBSAMPLE, VTA_GEMM_DIAGONAL, VTA_GEMM_INT32_OUTPUT, VTA_GEMM_HAS_BIAS,
    VTA_GEMM_IZP,
    /* schedule */
    VTA_GEMM_TH, VTA_GEMM_TW, VTA_GEMM_TCO, VTA_GEMM_TCI, VTA_GEMM_LOOP_SPATIAL,
    VTA_GEMM_INP_SLOTS, VTA_GEMM_WGT_SLOTS, VTA_GEMM_ACC_SLOTS,
    /* the emitter's modes */
    VTA_GEMM_ZP, VTA_GEMM_GEMM_BIAS, VTA_GEMM_STORE_TAIL, VTA_GEMM_RUNTIME_WEIGHTS,
    VTA_GEMM_RUNTIME_INIT, VTA_GEMM_BIAS_MODE, VTA_GEMM_PARAM_ROWS, VTA_GEMM_HAS_SHIFT,
    /* buffer plan, then the DRAM regions' first elements (-1: no such region) */
    VTA_GEMM_INP_CONST, VTA_GEMM_INP_BIAS, VTA_GEMM_INP_BASE, VTA_GEMM_INP_SLOT_ROWS,
    VTA_GEMM_WGT_CONST, VTA_GEMM_WGT_BIAS, VTA_GEMM_WGT_BASE, VTA_GEMM_WGT_SLOT_TILES,
    VTA_GEMM_ACC_BASE, VTA_GEMM_ACC_SLOT_ROWS, VTA_GEMM_E_INPUT, VTA_GEMM_E_OUTPUT,
    VTA_GEMM_E_WEIGHTS, VTA_GEMM_E_INIT, VTA_GEMM_E_BIAS, VTA_GEMM_E_PAD_ROW, VTA_GEMM_E_PARAMS,
    VTA_GEMM_PARAMS_N, VTA_GEMM_E_ONE_ROW, VTA_GEMM_E_ZP_TILE, VTA_GEMM_E_BIAS_ROW,
    VTA_GEMM_E_BIAS_TILES,
    /* the tail's immediates */
    VTA_GEMM_LSH_IMM, VTA_GEMM_RSHR_IMM, VTA_GEMM_CLAMP_LO, VTA_GEMM_CLAMP_HI,
    /* micro-op fields (dst, src, wgt): bit, width */
    VTA_GEMM_UOP_BIT, VTA_GEMM_UOP_WIDTH = VTA_GEMM_UOP_BIT + 3,
    /* parameter rows in order: (kind 0 bias, 1 lsh, 2 rdmul, 3 rshr, 4 store or -1, first
       row, per block) */
    VTA_GEMM_PARAMS = VTA_GEMM_UOP_WIDTH + 3,
    /* the tail's ops in order (VTA_GEMM_TAIL_*; 0: none) */
    VTA_GEMM_TAIL = VTA_GEMM_PARAMS + 15,
    VTA_GEMM_N = VTA_GEMM_TAIL + 8
};
#define VTA_GEMM_N_PARAMS 5
#define VTA_GEMM_N_TAIL 8
/* Bounds on what one call builds, checked before anything is allocated or walked: the steps
 * of all images, the instructions and the micro-ops. At the caps a call holds well under 64 MB
 * (at most about 1.3 KB per instruction: its row, accesses, resolved fields and words; 20 B per
 * micro-op), far above real layers' (the corpus's and MobileNetV2's largest: 336 steps, about
 * 1,100 instructions, 4,700 micro-ops); a layer past them is refused and emitted by the Python
 * step loop. */
#define VTA_GEMM_MAX_UOPS (1 << 18)
#define VTA_GEMM_MAX_INSNS (1 << 15)
#define VTA_GEMM_MAX_STEPS (1 << 14)
/* Every DRAM element and derived size (image, weights, frame, tile) stays below it. */
#define VTA_GEMM_MAX_ELEMS ((int64_t)1 << 40)
enum { VTA_GEMM_BIAS_ALU, VTA_GEMM_BIAS_DMA, VTA_GEMM_BIAS_GEMM, VTA_GEMM_BIAS_STORE };
enum {
    VTA_GEMM_TAIL_NONE, VTA_GEMM_TAIL_LSH, VTA_GEMM_TAIL_RDMUL, VTA_GEMM_TAIL_RSHR,
    VTA_GEMM_TAIL_CLAMP, VTA_GEMM_TAIL_ZP
};

typedef struct vta_gemm_result {
    int64_t n_out, n_uop_loads, n_uops;
    int64_t *fields;  /* [n_out][VTA_STREAM_NF] */
    uint64_t *words;  /* [n_out][2] */
    uint32_t *uops;   /* [n_uops]: the micro-op image */
} vta_gemm_result;

int vta_gemm_emit(const int64_t *params, int64_t n_params, const vta_stream_io *statics,
                  vta_gemm_result *out);
void vta_gemm_free(vta_gemm_result *out);

#endif
