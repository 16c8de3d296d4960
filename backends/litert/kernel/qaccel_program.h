/* The qaccel program runner (qaccel_program.c), shared by libqaccel_litert (the QACCEL_VTA
 * custom-op kernel) and libLiteRtDispatch_Qaccel (the LiteRT dispatch library).  Every
 * function returns 0 on success; on failure 1, with the first error kept in the library's
 * side channel (qaccel_litert_last_error). */
#ifndef QACCEL_PROGRAM_H_
#define QACCEL_PROGRAM_H_

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define QACCEL_EXPORT __attribute__((visibility("default")))

/* Record an error (printf format) unless one is already recorded; returns 1. */
int qaccel_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 when an error is recorded. */
int qaccel_failed(void);

/* Validate a program's header, configuration and tables; its input and output counts. */
int qaccel_program_check(const void *program, size_t size, uint32_t *n_in, uint32_t *n_out);

/* Run a program once on plain inputs into plain outputs (sizes in bytes): prepare, run, free. */
int qaccel_program_run(const void *program, size_t size, size_t n_in, const void *const *inputs,
                       const size_t *in_bytes, size_t n_out, void *const *outputs,
                       const size_t *out_bytes);

/* A program prepared once (parsed, its buffers allocated; on the first run every layer checked
 * and timed once, vta_prepare) and run any number of times, each run only moving and computing
 * data (vta_execute). QACCEL_SIMULATION=checked in the environment simulates every layer with
 * every check on every run instead (vta_simulate). The program's bytes must outlive it; one run
 * at a time. */
typedef struct qaccel_prepared qaccel_prepared;
int qaccel_prepared_new(const void *program, size_t size, qaccel_prepared **out);
int qaccel_prepared_run(qaccel_prepared *q, size_t n_in, const void *const *inputs,
                        const size_t *in_bytes, size_t n_out, void *const *outputs,
                        const size_t *out_bytes);
/* The accelerator cycles of one run (the timing model, run once); -1 before the first run. */
int64_t qaccel_prepared_cycles(const qaccel_prepared *q);
void qaccel_prepared_free(qaccel_prepared *q);

/* Little-endian reads at any alignment. */
static inline uint32_t qaccel_u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline int32_t qaccel_i32(const uint8_t *p) { int32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t qaccel_u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline int64_t qaccel_i64(const uint8_t *p) { int64_t v; memcpy(&v, p, 8); return v; }

#endif /* QACCEL_PROGRAM_H_ */
