/* The LiteRT libraries' shared glue (qaccel_litert_common.h). */
#include "qaccel_litert_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

static __thread char t_error[QACCEL_ERROR_BYTES]; /* per thread: see the header */

int qaccel_fail(const char *fmt, ...) {
  if (t_error[0]) return 1; /* keep the first error: the cause */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_error, sizeof t_error, fmt, ap);
  va_end(ap);
  return 1;
}

int qaccel_failed(void) { return t_error[0] != 0; }

QACCEL_EXPORT const char *qaccel_litert_last_error(void) { return t_error; }
QACCEL_EXPORT void qaccel_litert_clear_error(void) { t_error[0] = 0; }

#ifndef QACCEL_LITERT_SOURCE_HASH
#define QACCEL_LITERT_SOURCE_HASH ""
#endif
QACCEL_EXPORT const char *qaccel_litert_source_hash(void) { return QACCEL_LITERT_SOURCE_HASH; }

int qaccel_tensor_from_litert(const LiteRtRankedTensorType *t, void *data, size_t bytes,
                              qaccel_tensor *out) {
  memset(out, 0, sizeof *out);
  if (t->layout.has_strides || t->layout.rank > QACCEL_MAX_RANK) return 0;
  out->data = data;
  out->bytes = bytes;
  out->type = t->element_type; /* LiteRtElementType == TfLiteType == QACCEL_TYPE_* */
  out->rank = (int32_t)t->layout.rank;
  for (unsigned d = 0; d < t->layout.rank; d++) out->dims[d] = t->layout.dimensions[d];
  return 1;
}
