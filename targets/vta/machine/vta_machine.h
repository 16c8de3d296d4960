/* libqaccel_vta: functional simulator and timing model of qaccel's VTA-like accelerator.
 *
 * The semantics are docs/isa.md; the reference implementation is the Python simulator
 * (targets/vta/simulator.py). This machine agrees with it bit for bit (DRAM and SRAM after
 * FINISH), cycle for cycle (every instruction's start and end, per-module statistics), and
 * on errors (same instruction index and kind), including the data-race checks.
 *
 * Usage:
 *     vta_config cfg = {...};              // the JSON keys of HardwareConfig
 *     vta_run run;  memset(&run, 0, sizeof run);
 *     run.dram = image; run.dram_len = n;  // modified in place: the DRAM after FINISH
 *     run.uop_image = uops; run.uop_image_len = k;
 *     int rc = vta_simulate(&cfg, words, n_insns, 1, &run);
 *     if (rc == VTA_ERROR) fprintf(stderr, "instruction %lld (%s): %s\n", ...);
 *
 * C99, no global state: a run is reentrant.
 */
#ifndef QACCEL_VTA_MACHINE_H
#define QACCEL_VTA_MACHINE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a struct below or a function signature changes; the Python loader refuses a
 * library built from other sources. */
#define VTA_MACHINE_ABI 4

enum vta_status {
    VTA_OK = 0,
    VTA_ERROR = 1,        /* the program is malformed or fails at run time: see error_* */
    VTA_ERR_CONFIG = 2,   /* a configuration the ISA cannot describe */
    VTA_ERR_NOMEM = 3
};

/* HardwareConfig's keys the machine reads, in order, each with the one range every reader
   accepts: X(key, lowest, highest). Generated from targets/vta/config.py (MACHINE_KEYS,
   c_config_fields); tests/test_config_schema.py fails when they differ. */
/* BEGIN VTA_CONFIG_FIELDS */
#define VTA_CONFIG_N_FIELDS 11
#define VTA_CONFIG_FIELDS(X) \
    X(log_block, 2, 5) \
    X(log_uop_buff_size, 0, 24) \
    X(log_inp_buff_size, 0, 24) \
    X(log_wgt_buff_size, 0, 24) \
    X(log_acc_buff_size, 0, 24) \
    X(bus_width_bytes, 1, 4096) \
    X(dma_setup_cycles, 0, 100000) \
    X(insn_issue_cycles, 0, 100000) \
    X(gemm_cycles_per_uop, 1, 100000) \
    X(alu_cycles_per_uop, 1, 100000) \
    X(store_requant, 0, 1)
/* END VTA_CONFIG_FIELDS */

/* HardwareConfig, key for key (int64 so that every binding lays it out the same way):
   log_block (BLOCK_IN = BLOCK_OUT = 1 << log_block), the buffer sizes in bytes as log2, the
   timing model, store_requant (0 or 1: STORE OUTQ and STORE clear exist). */
typedef struct vta_config {
#define VTA_CONFIG_MEMBER(key, lowest, highest) int64_t key;
    VTA_CONFIG_FIELDS(VTA_CONFIG_MEMBER)
#undef VTA_CONFIG_MEMBER
} vta_config;

/* VTA_OK if every key is within its range (VTA_CONFIG_FIELDS), VTA_ERR_CONFIG otherwise; every
   entry point taking a vta_config checks it. */
int vta_config_check(const vta_config *config);

enum { VTA_MODULES = 3, VTA_MEM_TYPES = 8, VTA_FIFOS = 4 };

#define VTA_DEFAULT_STEP_LIMIT ((int64_t)1 << 28)
#define VTA_DEFAULT_MEMORY_LIMIT ((int64_t)4 << 30)

/* GEMM kernels, slowest to fastest; all compute the same sums. */
enum vta_kernel {
    VTA_KERNEL_AUTO = 0, /* the fastest available, or the one QACCEL_CMACHINE_KERNEL names */
    VTA_KERNEL_C = 1,    /* portable C, any block size */
    VTA_KERNEL_SSE2 = 2, /* x86-64, BLOCK 8/16/32 */
    VTA_KERNEL_AVX2 = 3, /* x86-64 CPUs with AVX2 (checked at run time), BLOCK 8/16/32 */
    /* the fast path only (vta_execute, BLOCK 16; vta_simulate takes them as AVX2) */
    VTA_KERNEL_AVX_VNNI = 4,   /* AVX2 + AVX-VNNI */
    VTA_KERNEL_AVX512_VNNI = 5 /* AVX2 + AVX512-VNNI + AVX512VL */
};

typedef struct vta_run {
    /* --- inputs ---------------------------------------------------------------------------- */
    const uint32_t *uop_image;  /* what LOAD UOP reads (indexed in micro-ops) */
    int64_t uop_image_len;
    uint8_t *dram;              /* the DRAM image, updated in place by STOREs */
    int64_t dram_len;
    /* Final SRAM contents (zero-initialized by the caller, `depth` rows each); when NULL the
     * machine uses private buffers. */
    uint32_t *uop_sram;
    int8_t *inp_sram;
    int8_t *wgt_sram;
    int32_t *acc_sram;
    /* Per instruction (n entries each), may be NULL: start and end cycle, module (0 load,
     * 1 compute, 2 store). */
    int64_t *start;
    int64_t *end;
    int64_t *module;
    /* GEMM kernel (enum vta_kernel): in, what to use (a slower one than available is
     * honoured, a faster one is not); out, the one used. */
    int64_t kernel;
    /* Budgets, checked before the first instruction runs (targets/vta/budget.py): the steps
     * the program takes (one per instruction, plus GEMM/ALU micro-op iterations and LOAD/STORE
     * rows) and the bytes of the machine's state (the DRAM image, scratchpads, hazard trackers
     * and decoded program). 0: the environment's QACCEL_STEP_LIMIT / QACCEL_MEMORY_LIMIT, else
     * VTA_DEFAULT_STEP_LIMIT / VTA_DEFAULT_MEMORY_LIMIT; negative: no limit. A run above a
     * budget fails with VTA_ERROR and a one-line message saying how to raise it. */
    int64_t step_limit;
    int64_t memory_limit;
    /* --- outputs (TimingReport) -------------------------------------------------------------- */
    int64_t total_cycles;
    int64_t busy[VTA_MODULES];
    int64_t stalled[VTA_MODULES];
    int64_t bus_wait[VTA_MODULES];
    int64_t gemm_iterations;
    int64_t alu_iterations;
    int64_t dram_read_bytes[VTA_MEM_TYPES];   /* by memory type id */
    int64_t dram_write_bytes[VTA_MEM_TYPES];
    int64_t leftover_tokens[VTA_FIFOS];       /* load->compute, compute->load, store->compute,
                                                 compute->store */
    /* --- error (status VTA_ERROR) ------------------------------------------------------------ */
    int64_t error_index;        /* instruction index, -1 when none */
    char error_kind[32];        /* "LOAD INP", "GEMM reset", ...; empty when there is none */
    char error_message[512];
} vta_run;

/* Runs `n` instructions (`words`: 2n little-endian 64-bit words, word 0 of each first) to
 * FINISH. functional = 0 is `timing()`: token protocol and cycle counts only, no data. */
int vta_simulate(const vta_config *config, const uint64_t *words, int64_t n, int functional,
                 vta_run *run);

/* --- the fast path ----------------------------------------------------------------------------
 * A program's timing does not depend on its data, nor do its checks (except the shift
 * operands ALU SHR/RSHR read from the accumulator and STORE OUTQ's shifts): vta_prepare runs
 * the checked simulation once without data (every check vta_simulate makes, hazards included,
 * and the timing model: `run` gets the statistics and, when given, start/end/module), keeping
 * the decoded program, the order the instructions executed in and each GEMM/ALU instruction's
 * micro-ops. vta_execute then replays that order with data only: the DRAM after FINISH is
 * vta_simulate's, bit for bit (the hazard checks proved the order cannot change it), and its
 * `run` statistics are the prepared ones. A program is immutable after vta_prepare (share it
 * between threads); a scratch (the scratchpads, made once per configuration) serves one
 * vta_execute at a time. run->dram_len at vta_prepare is the DRAM size every execution uses;
 * run->dram is not read there (the micro-op image is). run->kernel: at vta_scratch_new, the
 * kernel wanted (enum vta_kernel; VTA_KERNEL_AVX2 needs BLOCK 16, anything else runs
 * portable C) and the one chosen; at vta_execute, the one used. run->memory_limit bounds the
 * scratchpads as vta_simulate's state. */
typedef struct vta_program vta_program;
typedef struct vta_scratch vta_scratch;

int vta_prepare(const vta_config *config, const uint64_t *words, int64_t n, vta_run *run,
                vta_program **program);
int vta_scratch_new(const vta_config *config, vta_run *run, vta_scratch **scratch);
int vta_execute(const vta_program *program, vta_scratch *scratch, vta_run *run);
/* The prepared statistics (total_cycles, busy, ..., leftover_tokens) into `run`. */
void vta_program_timing(const vta_program *program, vta_run *run);
/* Declares that the DRAM bytes [constant_from, constant_end) hold in every vta_execute what
 * `dram` (dram_len bytes, the prepared size) holds now, e.g. the weights and constants after
 * the activation arena: the tiles of the WGT LOADs that read only such bytes are converted
 * into the GEMM kernels' layouts here, once, and every execution takes them as they are (a
 * run with other bytes there would compute with these). Call it again to change them, never
 * while the program executes; without it every LOAD converts its tiles. VTA_ERROR when the
 * image is not the prepared size. */
int vta_program_constants(vta_program *p, const uint8_t *dram, int64_t dram_len,
                          int64_t constant_from, int64_t constant_end);
/* A prepared program kept (e.g. in a cache, so that opening the same program again needs no
 * checked run): vta_program_export writes the checked run's results (the execution order, each
 * GEMM/ALU instruction's micro-ops, the statistics) into `buf` when `cap` holds them and
 * returns their size (-1: a program too large to keep). vta_program_import makes the prepared
 * program of the same instructions from them, as vta_prepare would (`run` gets the statistics),
 * without the checked run: the caller vouches that the bytes are vta_program_export's for these
 * very words, configuration and run->dram_len (a cache keyed by a cryptographic digest of
 * them, in a directory only the user writes); the import checks only that they fit (sizes,
 * configuration, indices), VTA_ERROR with run->error_message otherwise. */
int64_t vta_program_export(const vta_program *program, uint8_t *buf, int64_t cap);
int vta_program_import(const vta_config *config, const uint64_t *words, int64_t n,
                       const uint8_t *bytes, int64_t len, vta_run *run, vta_program **program);
/* One past the last DRAM byte the program's STOREs write (0: none): what a run can change. */
int64_t vta_program_dram_written(const vta_program *program);
void vta_program_free(vta_program *program);
void vta_scratch_free(vta_scratch *scratch);

/* The memory budget of QACCEL_MEMORY_LIMIT (VTA_DEFAULT_MEMORY_LIMIT when unset) in bytes, as
 * every simulator reads it: -1 for no limit; -2 when malformed, with the reason in `error`. */
int64_t vta_memory_limit(char *error, size_t size);

/* VTA_MACHINE_ABI of the compiled library. */
int vta_machine_abi(void);

/* The digest of the sources the library was built from ("" when the build gave none). */
const char *vta_source_hash(void);

/* Number of decoded fields per instruction and their names (the order of isa.FIELD_NAMES). */
int vta_field_count(void);
const char *vta_field_name(int field);

/* Decodes `n` instructions into n * vta_field_count() int64 values (isa.decode). */
int vta_decode(const vta_config *config, const uint64_t *words, int64_t n, int64_t *fields);

#ifdef __cplusplus
}
#endif
#endif
