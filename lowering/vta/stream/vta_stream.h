/* libqaccel_stream: an accelerator layer's instruction stream resolved in one call (C99).
 *
 * The emitter (lowering/vta/emit.py) describes a stream as flat int64 arrays and
 * vta_stream_resolve sets the dependency tokens, places the micro-op kernels (inserting the
 * LOAD UOP instructions) and encodes every instruction, exactly as the Python reference
 * `resolve_stream_py` does. Inputs are untrusted: every index is checked first. */
#ifndef VTA_STREAM_H
#define VTA_STREAM_H

#include <stdint.h>

#define VTA_STREAM_ABI 1
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

#endif
