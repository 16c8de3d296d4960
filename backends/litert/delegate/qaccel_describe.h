/* The subgraph a TfLiteContext holds, described for qaccel's Python compiler in the format the
 * compiler plugin hands over (qaccel/tools/compiler_plugin.py `read_description`, "QPD1"):
 * its tensors (type, shape, quantization, the bytes of constants), its nodes in execution
 * order (builtin code or custom name, inputs, outputs, and the builtin options qaccel reads,
 * decoded from builtin_data), its inputs and outputs.
 *
 * An operator whose options qaccel would need but this file does not decode is described as
 * an opaque custom operator ("QACCEL_UNDECODED_BUILTIN_<code>"), and so is a control-flow
 * operator (its subgraphs are not part of the description) and a node another delegate already
 * holds: the compiler never puts those on the accelerator.
 *
 * A STABLEHLO_COMPOSITE node is described with its decomposition (read through
 * AcquireSubgraphContext) as another subgraph of the description ("QPD2": the main subgraph,
 * then the decompositions), so the compiler sees the model qaccel-compile sees and may put the
 * composite node itself in a partition.  The decomposition's inputs and outputs, which
 * TfLiteContext does not list, are the tensors its nodes read and compute from and for outside,
 * matched to the composite's operands by type, shape and quantization; when that match is not
 * unique the composite stays opaque (code 206 without options). */
#ifndef QACCEL_DESCRIBE_H_
#define QACCEL_DESCRIBE_H_

#include <stddef.h>
#include <stdint.h>

#include "qaccel_tflite_api.h"

typedef struct {
  unsigned char *data; /* malloc'd */
  size_t size;
  int *tensor_of;      /* description tensor id -> TfLite tensor index (malloc'd) */
  int n_tensors;
  int *node_of;        /* description op index -> node index (malloc'd) */
  int n_nodes;
  /* The contexts of the decomposition subgraphs described with their composites (malloc'd):
   * the delegate never compiles them on their own. */
  TfLiteContext **decompositions;
  int n_decompositions;
} qaccel_description;

/* Describe the subgraph of `ctx` (its execution plan `plan`).  Returns 0, or 1 with one line
 * in err (err_size bytes). */
int qaccel_describe_context(TfLiteContext *ctx, const TfLiteIntArray *plan,
                            qaccel_description *out, char *err, size_t err_size);
void qaccel_description_free(qaccel_description *d);

#endif /* QACCEL_DESCRIBE_H_ */
