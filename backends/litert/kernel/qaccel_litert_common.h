/* What libqaccel_litert (the QACCEL_VTA custom-op kernel) and libLiteRtDispatch_Qaccel (the
 * dispatch library) share around the program runner (backends/vta/program/qaccel_program.h):
 * the error channel LiteRT's status codes leave us, and LiteRT tensor types as the runner's
 * tensors.
 *
 * LiteRT ignores what a custom kernel's Run returns and passes only a status through the
 * dispatch API, so the first error's text is also kept for the caller: per thread (LiteRT runs
 * a compiled model's ops in the thread that runs it), never process-wide, so two models run in
 * two threads each see their own errors. */
#ifndef QACCEL_LITERT_COMMON_H_
#define QACCEL_LITERT_COMMON_H_

#include <stddef.h>
#include <stdint.h>

#include "qaccel_litert_api.h"
#include "qaccel_program.h"

#define QACCEL_EXPORT __attribute__((visibility("default")))

/* Record an error (printf format) in this thread's channel unless one is there; returns 1. */
int qaccel_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* 1 when this thread's channel holds an error. */
int qaccel_failed(void);

/* The first error this thread recorded since qaccel_litert_clear_error(); "" when none. */
QACCEL_EXPORT const char *qaccel_litert_last_error(void);
QACCEL_EXPORT void qaccel_litert_clear_error(void);
/* The digest of the sources this library was built from (runtime.py's source hashes). */
QACCEL_EXPORT const char *qaccel_litert_source_hash(void);

/* `t` as the runner's tensor at `data` of `bytes` (0: a type or layout it cannot be). */
int qaccel_tensor_from_litert(const LiteRtRankedTensorType *t, void *data, size_t bytes,
                              qaccel_tensor *out);

#endif /* QACCEL_LITERT_COMMON_H_ */
