/* qaccel_program: the one runner of qaccel's compiled accelerator functions.
 *
 * A program (format and writer: program/writer.py beside this file) holds one accelerator function
 * whole: the hardware configuration, the DRAM image, how each input is packed and each output
 * unpacked, the steps (write an arena slot, run a layer on libqaccel_vta, read a slot back, a
 * host op), every layer's instructions and micro-ops, and a CRC-32 of all of it. Every
 * consumer executes it through this API: the LiteRT dispatch library and custom-op kernel
 * (backends/litert/kernel/), the C driver, and Python through ctypes
 * (backends/vta/program_runner.py).
 *
 *     char error[QACCEL_ERROR_BYTES];
 *     qaccel_program *program;
 *     if (qaccel_program_open(bytes, size, &program, error)) { puts(error); ... }
 *     qaccel_state *state;
 *     if (qaccel_state_new(program, &state, error)) { puts(error); ... }
 *     qaccel_tensor in[1] = {{x, sizeof x, QACCEL_TYPE_INT8, 4, {1, 32, 32, 3}}}, out[1] = ...;
 *     if (qaccel_state_run(state, 1, in, 1, out)) puts(qaccel_state_error(state));
 *     qaccel_state_free(state);
 *     qaccel_program_close(program);
 *
 * qaccel_program_open checks everything before anything runs: magic, format version, checksum,
 * hardware configuration, every offset and size, every step's geometry and every constant a
 * step computes with (zero points, clamps, scales, multipliers, shifts, lane operands, pad
 * values, shapes), so that no arithmetic of a run can overflow, and that the memory a run needs
 * (its values, its DRAM copy, its repacking tables) fits the memory budget (QACCEL_MEMORY_LIMIT,
 * 4 GiB by default; the machine charges its own state the same way). The program's bytes are
 * not copied: they must outlive the program, 8-byte aligned (the machine reads instruction
 * words in place). An opened program is immutable: any number of threads may create states
 * from it and run them at the same time.
 *
 * A state is one run's memory (values, DRAM image, prepared layers, error text): one run at a
 * time per state; states are independent. On the first run each layer is checked and timed once
 * (vta_prepare), every later run only moves and computes data (vta_execute);
 * QACCEL_SIMULATION=checked in the environment simulates every layer with every check on every
 * run instead. Nothing in this library is process-global: errors belong to the state (or the
 * open call) they happened in.
 *
 * Every function returning int returns 0 on success and 1 on failure, with one line of text
 * (no newline) in `error` / qaccel_state_error(). */
#ifndef QACCEL_PROGRAM_H_
#define QACCEL_PROGRAM_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever a declaration below changes. */
#define QACCEL_PROGRAM_ABI 4
/* The program format version this runner reads (writer.py's PROGRAM_VERSION). */
#define QACCEL_PROGRAM_FORMAT 2
/* The size of every error buffer this API fills (one line, NUL-terminated). */
#define QACCEL_ERROR_BYTES 512
#define QACCEL_MAX_RANK 8

/* Element types: TFLite's codes (tflite::TensorType), which LiteRT's element types share. */
enum {
  QACCEL_TYPE_INT32 = 2,
  QACCEL_TYPE_UINT8 = 3,
  QACCEL_TYPE_INT16 = 7,
  QACCEL_TYPE_INT8 = 9
};

typedef struct qaccel_program qaccel_program;
typedef struct qaccel_state qaccel_state;

/* One input (data read) or output (data written) of a run: its bytes, element type and shape,
 * all checked against the program's (a scalar: rank 0). */
typedef struct qaccel_tensor {
  void *data;
  size_t bytes;
  int32_t type;
  int32_t rank;
  int64_t dims[QACCEL_MAX_RANK];
} qaccel_tensor;

int qaccel_program_abi(void);
/* The digest of the sources the library was built from (empty when not stamped). */
const char *qaccel_program_source_hash(void);

/* Open and check the program of `size` bytes at `bytes` (see above). */
int qaccel_program_open(const void *bytes, size_t size, qaccel_program **out,
                        char error[QACCEL_ERROR_BYTES]);
void qaccel_program_close(qaccel_program *program);

/* The function's inputs and outputs: their number, and each one's type and shape
 * (`is_output` 0: input `index`; 1: output `index`; `dims` holds QACCEL_MAX_RANK). */
uint32_t qaccel_program_inputs(const qaccel_program *program);
uint32_t qaccel_program_outputs(const qaccel_program *program);
int qaccel_program_tensor(const qaccel_program *program, int is_output, uint32_t index,
                          int32_t *type, int32_t *rank, int64_t *dims);

/* The checksum the format stores: CRC-32 (zlib's) of `size` bytes with the checksum field, bytes
 * [QACCEL_CHECKSUM_AT, +8), read as zeros. */
#define QACCEL_CHECKSUM_AT 184
uint32_t qaccel_program_checksum(const void *bytes, size_t size);

/* A new state for running `program` (which must outlive its runs; the state may be freed after
 * the program is closed). */
int qaccel_state_new(const qaccel_program *program, qaccel_state **out,
                     char error[QACCEL_ERROR_BYTES]);
/* Run once: `inputs` packed in, the steps walked, `outputs` unpacked. */
int qaccel_state_run(qaccel_state *state, size_t n_in, const qaccel_tensor *inputs, size_t n_out,
                     const qaccel_tensor *outputs);
/* The last run's error ("" after a success). */
const char *qaccel_state_error(const qaccel_state *state);
/* The board-support boundary. By default a state runs every layer on libqaccel_vta, the C
 * machine, in its own DRAM image. A device (a board support package: the generated driver's
 * qaccel_vta.h calls, qaccel_vta_dram and qaccel_vta_run) takes over both: the state keeps the
 * function's DRAM image in `dram(ctx, bytes)`, the device-visible memory (physically contiguous,
 * the same image when asked again), and each layer runs through `run` (its instruction stream,
 * 16-byte instructions as two little-endian uint64 words, and its micro-op image, to FINISH;
 * 0 on success, else one line in `error`). Set before the state's first run; the device must
 * outlive the state. QACCEL_SIMULATION does not apply, and cycles stay -1 (the timing model
 * belongs to the C machine). */
typedef struct qaccel_device {
  void *ctx;
  uint8_t *(*dram)(void *ctx, uint64_t bytes);
  int (*run)(void *ctx, const uint64_t *insns, uint32_t n_insns, const uint32_t *uops,
             uint32_t n_uops, char error[QACCEL_ERROR_BYTES]);
} qaccel_device;
int qaccel_state_set_device(qaccel_state *state, const qaccel_device *device);
/* What the first run does first, now: every layer checked and timed (e.g. in another thread
 * while the caller reads its inputs). Nothing with QACCEL_SIMULATION=checked or a device. */
int qaccel_state_prepare(qaccel_state *state);
/* A preparation kept, so that a state of the same program later needs no checked run: after
 * the first run or qaccel_state_prepare, qaccel_state_export writes the layers' checked runs
 * (execution order, micro-ops, statistics and cycles) into `buf` when `cap` holds them and
 * returns their size (0: nothing to keep). qaccel_state_import, before the first run, prepares
 * the state from such bytes instead of checking and timing every layer; 1 (the state then
 * prepares as usual) when they are not an intact export of this program (checksums, sizes,
 * indices). They are trusted otherwise: keep them where only the user writes, keyed by a
 * cryptographic digest of the program's bytes and of this library (as
 * backends/vta/program_runner.py does), never inside an artifact. */
size_t qaccel_state_export(const qaccel_state *state, void *buf, size_t cap);
int qaccel_state_import(qaccel_state *state, const void *bytes, size_t size);
/* A state that runs with the prepared layers of `from`, a prepared state (its first run or
 * qaccel_state_prepare done, on the fast path) of the same program, instead of preparing its
 * own: before its first run, once. The layers (execution order, micro-ops, converted constant
 * weights) are read-only once prepared, so states sharing them run in parallel threads, each
 * with its own scratchpads, values and DRAM image; `from` keeps owning them and must outlive
 * every state sharing them. 1 (the state unchanged, its error set) when `from` is not such a
 * state. */
int qaccel_state_share(qaccel_state *state, const qaccel_state *from);
/* The accelerator cycles of one run (the timing model, run once); -1 before the first run. */
int64_t qaccel_state_cycles(const qaccel_state *state);
/* Runs of this state so far, successful or not. */
uint64_t qaccel_state_runs(const qaccel_state *state);
void qaccel_state_free(qaccel_state *state);

#ifdef __cplusplus
}
#endif
#endif /* QACCEL_PROGRAM_H_ */
