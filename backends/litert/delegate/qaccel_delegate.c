/* libqaccel_delegate: qaccel as a classic TensorFlow Lite delegate, for LiteRT's Interpreter
 * (`load_delegate(path, {"artifact": OUTDIR})`, or `{"config": NAME}` / no options to compile
 * on the spot).
 *
 * On the spot (no artifact): every Prepare (LiteRT calls it once per subgraph it lets the
 * delegate see) describes its subgraph from the TfLiteContext in the compiler plugin's format
 * (qaccel_describe.c: tensors with their constants and quantization, nodes with the builtin
 * options decoded from builtin_data), hands it through the plugin's bridge
 * (../bridge/qaccel_pybridge.h, no libpython linked) to
 * qaccel.tools.compiler_plugin.delegate_partitions, which partitions and compiles it as
 * qaccel-compile does (the plugin's compile cache), and claims the nodes of the partitions it
 * returns, after the same checks as an artifact's, each kernel running its programs as below.
 * A failed compile fails Prepare with its one line.
 *
 * With an artifact, the delegate reads a qaccel-compile output directory when it is created: OUTDIR/partitions.json
 * says, per accelerator partition, which operators of which subgraph of the original model it
 * replaces (their indices, which are the interpreter's node indices; the main subgraph's
 * Prepare, the first, finds every other subgraph's context with AcquireSubgraphContext, and
 * that subgraph's Prepare claims its partitions), its boundary tensors and its program
 * (OUTDIR/programs/NAME.qprog, the bytes the dispatch flavour carries).  Every file is read
 * confined to the artifact and checked against manifest.json's SHA-256; every program's header
 * is validated.  Prepare checks the artifact against the model the interpreter holds (node
 * count, each claimed node's builtin code, each boundary tensor's type, shape and quantization,
 * that every claimed node reads only the partition's inputs, constants or tensors the partition
 * computes) and replaces the claimed nodes with delegate kernels; every other node stays on the
 * interpreter's kernels.  A kernel may hold several partitions (LiteRT merges adjacent ones); it
 * runs their programs in order through the one program runner
 * (backends/vta/program/qaccel_program.h: each program opened and checked once per delegate, one
 * run state per kernel), tensors internal to it in the kernel's own buffers.
 *
 * Errors: a bad option or artifact makes tflite_plugin_create_delegate return NULL after one
 * line through report_error; a model mismatch fails Prepare (context->ReportError), an error of
 * a program fails Invoke the same way.  All state is per delegate and per kernel. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bridge/qaccel_pybridge.h"
#include "qaccel_artifact.h"
#include "qaccel_describe.h"
#include "qaccel_program.h"
#include "qaccel_tflite_api.h"


#define QACCEL_EXPORT __attribute__((visibility("default")))
#define FILE_LIMIT (4ull << 30) /* the default memory budget (QACCEL_MEMORY_LIMIT) */
#define PREFIX "qaccel delegate: "

typedef struct {
  int index, type; /* tensor index, TfLiteType (-1: not recorded) */
  int has_quant;
  double scale;
  int64_t zero_point;
} Boundary;

typedef struct {
  char *name;
  int n_ops, n_in, n_out;
  int *ops, *op_codes; /* op_codes may be NULL (not recorded) */
  int *inputs, *outputs;
  Boundary *bounds; /* n_in + n_out, inputs first */
  int n_bounds;
  uint8_t *program;       /* its bytes (8-byte aligned: malloc), which `opened` reads in place */
  size_t program_size;
  qaccel_program *opened; /* opened and checked once; kernels make their own run states */
  TfLiteContext *owner;   /* the subgraph whose nodes it replaces (set at its Prepare) */
  int subgraph;           /* the model's subgraph it is in (partitions.json "subgraph") */
  TfLiteContext *where;   /* that subgraph's context, once known: its Prepare claims it */
} Partition;

typedef struct {
  TfLiteDelegate base; /* first: a TfLiteDelegate* is a Delegate* */
  char *artifact; /* NULL: compile each subgraph on the spot at its Prepare */
  char *config;
  Partition *parts;
  int n_parts;
  long compiled_subgraphs; /* on the spot: subgraphs described and compiled */
  int64_t model_nodes, model_tensors; /* -1: not recorded */
  TfLiteContext *primary;              /* the primary subgraph's context (the first Prepare) */
  long invocations, kernels, claimed_nodes, prepares;
  long kernels_ran; /* kernels invoked at least once (a loop body's run once per iteration) */
  /* On the spot: the contexts of decomposition subgraphs described with their composites,
   * whose Prepare is still to come; they are never compiled on their own (qaccel-compile
   * fuses or inlines a composite where it stands, LiteRT shows no plugin a decomposition). */
  TfLiteContext **decompositions;
  int n_decompositions;
  long skipped_subgraphs;
} Delegate;

typedef struct {
  Delegate *d;
  int n;                   /* partitions run by this kernel */
  int *parts;              /* their indices, in artifact (topological) order */
  qaccel_state **states;   /* one run state each */
  int n_scratch;           /* tensors internal to the kernel, in its own buffers */
  int *scratch_tensor;
  uint8_t **scratch;
  qaccel_tensor *in, *out; /* a run's tensors, sized for the largest partition */
  int ran;                 /* invoked at least once */
  char error[ERR_BYTES];
} Kernel;

/* ---- the artifact ------------------------------------------------------------------------ */

static void free_partition(Partition *p) {
  free(p->name); free(p->ops); free(p->op_codes); free(p->inputs); free(p->outputs);
  free(p->bounds);
  if (p->opened) qaccel_program_close(p->opened);
  free(p->program);
}

static void free_delegate(Delegate *d) {
  if (!d) return;
  for (int k = 0; k < d->n_parts; k++) free_partition(&d->parts[k]);
  free(d->parts); free(d->artifact); free(d->config); free(d->decompositions);
  free(d);
}

static char *dup_string(const char *s) {
  size_t n = strlen(s) + 1;
  char *o = malloc(n);
  if (o) memcpy(o, s, n);
  return o;
}

#define fail delegate_fail

/* A JSON array of integers in [lo, hi] into a malloc'd array. */
static int int_list(const json *v, int64_t lo, int64_t hi, int **out, int *n) {
  if (!v || v->kind != JSON_ARRAY || v->n > (1u << 24)) return 1;
  int *a = malloc((v->n ? v->n : 1) * sizeof *a);
  if (!a) return 1;
  for (size_t k = 0; k < v->n; k++) {
    int64_t x;
    if (json_int(&v->items[k], lo, hi, &x)) { free(a); return 1; }
    a[k] = (int)x;
  }
  *out = a;
  *n = (int)v->n;
  return 0;
}

/* The manifest's SHA-256 of `rel` (NULL when it lists none). */
static const char *manifest_hash(const json *manifest, const char *rel) {
  const json *h = json_get(json_get(manifest, "files"), rel);
  return h && h->kind == JSON_STRING ? h->string : NULL;
}

static int read_json(const char *root, const char *rel, const json *manifest, json *out,
                     char *err) {
  uint8_t *data;
  size_t size;
  if (read_confined(root, rel, FILE_LIMIT, &data, &size, err)) return 1;
  if (manifest) {
    const char *want = manifest_hash(manifest, rel);
    char got[65];
    sha256_hex(data, size, got);
    if (!want) { free(data); return fail(err, "'%s': manifest.json lists no %s", root, rel); }
    if (strcmp(want, got) != 0) {
      free(data);
      return fail(err, "'%s': %s does not match its SHA-256 in manifest.json", root, rel);
    }
  }
  char msg[ERR_BYTES];
  int rc = json_parse((const char *)data, size, out, msg);
  free(data);
  if (rc) return fail(err, "'%s': %s: %s", root, rel, msg);
  return 0;
}

static int load_boundary(const char *root, Partition *p, const json *tensors, char *err) {
  p->n_bounds = p->n_in + p->n_out;
  p->bounds = calloc((size_t)p->n_bounds + 1, sizeof *p->bounds);
  if (!p->bounds) return fail(err, "out of memory");
  for (int k = 0; k < p->n_bounds; k++) {
    p->bounds[k].index = k < p->n_in ? p->inputs[k] : p->outputs[k - p->n_in];
    p->bounds[k].type = -1;
  }
  if (!tensors) return 0;
  if (tensors->kind != JSON_ARRAY)
    return fail(err, "'%s': partitions.json: partition %s: 'tensors' is not a list", root, p->name);
  for (size_t j = 0; j < tensors->n; j++) {
    const json *t = &tensors->items[j];
    int64_t index, type, zp;
    if (json_int(json_get(t, "index"), 0, 1 << 30, &index) ||
        json_int(json_get(t, "type"), 0, 255, &type))
      return fail(err, "'%s': partitions.json: partition %s: a tensor without index or type", root,
                  p->name);
    for (int k = 0; k < p->n_bounds; k++) {
      if (p->bounds[k].index != index) continue;
      p->bounds[k].type = (int)type;
      const json *scale = json_get(t, "scale");
      if (scale && scale->kind == JSON_NUMBER &&
          !json_int(json_get(t, "zero_point"), -(1ll << 31), (1ll << 31) - 1, &zp)) {
        p->bounds[k].has_quant = 1;
        p->bounds[k].scale = scale->number;
        p->bounds[k].zero_point = zp;
      }
    }
  }
  return 0;
}

static int load_partition(const char *root, const json *manifest, const json *j, Partition *p,
                          int k, char *err) {
  const json *name = json_get(j, "name"), *program = json_get(j, "program"),
             *digest = json_get(j, "program_sha256"), *codes = json_get(j, "op_codes");
  int64_t subgraph;
  if (!name || name->kind != JSON_STRING || !program || program->kind != JSON_STRING ||
      !digest || digest->kind != JSON_STRING)
    return fail(err, "'%s': partitions.json: partition %d lacks name, program or program_sha256",
                root, k);
  p->name = dup_string(name->string);
  if (!p->name) return fail(err, "out of memory");
  if (json_int(json_get(j, "subgraph"), 0, 1 << 20, &subgraph))
    return fail(err, "'%s': partitions.json: partition %s names no subgraph", root, p->name);
  p->subgraph = (int)subgraph;
  if (int_list(json_get(j, "ops"), 0, 1 << 30, &p->ops, &p->n_ops) || p->n_ops == 0 ||
      int_list(json_get(j, "inputs"), 0, 1 << 30, &p->inputs, &p->n_in) ||
      int_list(json_get(j, "outputs"), 0, 1 << 30, &p->outputs, &p->n_out) || p->n_out == 0)
    return fail(err, "'%s': partitions.json: partition %s: ops, inputs or outputs is not a "
                "list of indices", root, p->name);
  if (codes) {
    int n;
    if (int_list(codes, 0, 1 << 20, &p->op_codes, &n) || n != p->n_ops)
      return fail(err, "'%s': partitions.json: partition %s: op_codes does not match ops", root,
                  p->name);
  }
  if (load_boundary(root, p, json_get(j, "tensors"), err)) return 1;
  if (read_confined(root, program->string, FILE_LIMIT, &p->program, &p->program_size, err))
    return 1;
  char got[65];
  sha256_hex(p->program, p->program_size, got);
  const char *listed = manifest_hash(manifest, program->string);
  if (strcmp(got, digest->string) != 0 || (listed && strcmp(got, listed) != 0))
    return fail(err, "'%s': %s does not match its SHA-256 in %s", root, program->string,
                strcmp(got, digest->string) != 0 ? "partitions.json" : "manifest.json");
  char msg[QACCEL_ERROR_BYTES];
  if (qaccel_program_open(p->program, p->program_size, &p->opened, msg))
    return fail(err, "'%s': %s: %s", root, program->string, msg);
  uint32_t n_in = qaccel_program_inputs(p->opened), n_out = qaccel_program_outputs(p->opened);
  if (n_in != (uint32_t)p->n_in || n_out != (uint32_t)p->n_out)
    return fail(err, "'%s': %s has %u inputs and %u outputs, partitions.json gives partition %s "
                "%d and %d", root, program->string, n_in, n_out, p->name, p->n_in, p->n_out);
  return 0;
}

static int load_artifact(Delegate *d, char *err) {
  const char *root = d->artifact;
  json manifest, parts;
  if (read_json(root, "manifest.json", NULL, &manifest, err)) return 1;
  if (read_json(root, "partitions.json", &manifest, &parts, err)) {
    json_free(&manifest);
    return 1;
  }
  int rc = 0;
  const json *list = json_get(&parts, "partitions"), *model = json_get(&parts, "model"),
             *config = json_get(&parts, "config");
  d->model_nodes = d->model_tensors = -1;
  if (model) {
    json_int(json_get(model, "operators"), 0, 1 << 30, &d->model_nodes);
    json_int(json_get(model, "tensors"), 0, 1 << 30, &d->model_tensors);
  }
  if (!list || list->kind != JSON_ARRAY || list->n > 4096) {
    rc = fail(err, "'%s': partitions.json holds no list of partitions", root);
  } else if (d->config && (!config || config->kind != JSON_STRING ||
                           strcmp(config->string, d->config) != 0)) {
    rc = fail(err, "'%s' was compiled for the configuration '%s', not '%s'", root,
              config && config->kind == JSON_STRING ? config->string : "(unrecorded)", d->config);
  } else {
    d->parts = calloc(list->n + 1, sizeof *d->parts);
    if (!d->parts) rc = fail(err, "out of memory");
    for (size_t k = 0; !rc && k < list->n; k++) {
      d->n_parts = (int)k + 1;
      rc = load_partition(root, &manifest, &list->items[k], &d->parts[k], (int)k, err);
    }
  }
  json_free(&parts);
  json_free(&manifest);
  return rc;
}

/* ---- the kernel -------------------------------------------------------------------------- */

static size_t type_bytes(int type) {
  switch (type) {
    case kTfLiteInt8: case kTfLiteUInt8: case kTfLiteBool: return 1;
    case kTfLiteInt16: return 2;
    case kTfLiteInt32: case kTfLiteFloat32: return 4;
    case kTfLiteInt64: return 8;
    default: return 0;
  }
}

/* The bytes of a tensor's static shape; 0 for an unknown type or a bad shape. */
static size_t tensor_bytes(const TfLiteTensor *t) {
  size_t n = type_bytes(t->type);
  if (!t->dims) return 0;
  for (int k = 0; k < t->dims->size; k++) {
    if (t->dims->data[k] < 0 || (t->dims->data[k] && n > (SIZE_MAX >> 1) / (size_t)t->dims->data[k]))
      return 0;
    n *= (size_t)t->dims->data[k];
  }
  return n;
}

static int in_list(const TfLiteIntArray *a, int x) {
  for (int k = 0; k < a->size; k++)
    if (a->data[k] == x) return 1;
  return 0;
}

static void kernel_free(TfLiteContext *context, void *buffer) {
  (void)context;
  Kernel *k = buffer;
  if (!k) return;
  for (int j = 0; j < k->n; j++)
    if (k->states && k->states[j]) qaccel_state_free(k->states[j]);
  for (int j = 0; j < k->n_scratch; j++) free(k->scratch[j]);
  free(k->parts); free(k->states); free(k->scratch_tensor); free(k->scratch);
  free(k->in); free(k->out);
  free(k);
}

static int kernel_setup(Kernel *k, TfLiteContext *ctx, const TfLiteDelegateParams *params) {
  Delegate *d = k->d;
  const TfLiteIntArray *nodes = params->nodes_to_replace;
  int covered = 0;
  k->parts = malloc(((size_t)d->n_parts + 1) * sizeof *k->parts);
  if (!k->parts) return fail(k->error, PREFIX "out of memory");
  for (int p = 0; p < d->n_parts; p++) {
    const Partition *part = &d->parts[p];
    if (part->owner != ctx) continue; /* another subgraph's: its node indices are not ours */
    int inside = 0;
    for (int j = 0; j < part->n_ops; j++) inside += in_list(nodes, part->ops[j]);
    if (inside == 0) continue;
    if (inside != part->n_ops)
      return fail(k->error, PREFIX "LiteRT split partition %s across delegate kernels", part->name);
    k->parts[k->n++] = p;
    covered += inside;
  }
  if (covered != nodes->size)
    return fail(k->error, PREFIX "a delegate kernel holds nodes of no partition");
  k->states = calloc((size_t)k->n + 1, sizeof *k->states);
  if (!k->states) return fail(k->error, PREFIX "out of memory");
  for (int j = 0; j < k->n; j++) {
    const Partition *part = &d->parts[k->parts[j]];
    char msg[QACCEL_ERROR_BYTES];
    if (qaccel_state_new(part->opened, &k->states[j], msg))
      return fail(k->error, PREFIX "partition %s: %s", part->name, msg);
  }
  /* Tensors the kernel's partitions pass among themselves have no data of LiteRT's. */
  int cap = 0, most_in = 0, most_out = 0;
  for (int j = 0; j < k->n; j++) {
    const Partition *part = &d->parts[k->parts[j]];
    cap += part->n_out;
    if (part->n_in > most_in) most_in = part->n_in;
    if (part->n_out > most_out) most_out = part->n_out;
  }
  k->in = calloc((size_t)most_in + 1, sizeof *k->in);
  k->out = calloc((size_t)most_out + 1, sizeof *k->out);
  if (!k->in || !k->out) return fail(k->error, PREFIX "out of memory");
  k->scratch_tensor = malloc(((size_t)cap + 1) * sizeof *k->scratch_tensor);
  k->scratch = calloc((size_t)cap + 1, sizeof *k->scratch);
  if (!k->scratch_tensor || !k->scratch) return fail(k->error, PREFIX "out of memory");
  for (int j = 0; j < k->n; j++) {
    const Partition *part = &d->parts[k->parts[j]];
    for (int o = 0; o < part->n_out; o++) {
      int t = part->outputs[o];
      if (in_list(params->output_tensors, t)) continue;
      size_t bytes = tensor_bytes(&ctx->tensors[t]);
      k->scratch_tensor[k->n_scratch] = t;
      k->scratch[k->n_scratch] = malloc(bytes ? bytes : 1);
      if (!k->scratch[k->n_scratch++]) return fail(k->error, PREFIX "out of memory");
    }
  }
  return 0;
}

static void *kernel_init(TfLiteContext *context, const char *buffer, size_t length) {
  (void)length;
  const TfLiteDelegateParams *params = (const TfLiteDelegateParams *)buffer;
  Kernel *k = calloc(1, sizeof *k);
  if (!k) return NULL;
  k->d = (Delegate *)params->delegate;
  if (kernel_setup(k, context, params) == 0) k->d->kernels++;
  return k;
}

static int check_tensor(TfLiteContext *ctx, const Partition *p, int k, char *err);

/* Runs again whenever LiteRT resizes tensors: a model with a dynamic dimension (a batch of -1)
 * is delegated only while its shapes are the ones the programs were compiled for. */
static TfLiteStatus kernel_prepare(TfLiteContext *context, TfLiteNode *node) {
  Kernel *k = node->user_data;
  if (!k) {
    context->ReportError(context, PREFIX "out of memory");
    return kTfLiteError;
  }
  if (k->error[0]) {
    context->ReportError(context, "%s", k->error);
    return kTfLiteError;
  }
  for (int j = 0; j < k->n; j++) {
    const Partition *part = &k->d->parts[k->parts[j]];
    char err[ERR_BYTES];
    for (int b = 0; b < part->n_bounds; b++)
      if (check_tensor(context, part, b, err)) {
        context->ReportError(context, PREFIX "%s", err);
        return kTfLiteError;
      }
  }
  return kTfLiteOk;
}

static void *tensor_data(const Kernel *k, TfLiteContext *ctx, int t) {
  for (int j = 0; j < k->n_scratch; j++)
    if (k->scratch_tensor[j] == t) return k->scratch[j];
  return ctx->tensors[t].data;
}

/* The runner's view of tensor `t`: its data (ours when internal to the kernel), type, shape. */
static int describe(const Kernel *k, TfLiteContext *ctx, int t, qaccel_tensor *out) {
  const TfLiteTensor *tensor = &ctx->tensors[t];
  out->data = tensor_data(k, ctx, t);
  out->bytes = tensor_bytes(tensor);
  out->type = tensor->type;
  out->rank = tensor->dims ? tensor->dims->size : 0;
  if (out->rank > QACCEL_MAX_RANK) return 1;
  for (int d = 0; d < out->rank; d++) out->dims[d] = tensor->dims->data[d];
  return out->data == NULL;
}

static TfLiteStatus kernel_invoke(TfLiteContext *context, TfLiteNode *node) {
  Kernel *k = node->user_data;
  for (int j = 0; j < k->n; j++) {
    const Partition *part = &k->d->parts[k->parts[j]];
    for (int i = 0; i < part->n_in + part->n_out; i++) {
      int t = i < part->n_in ? part->inputs[i] : part->outputs[i - part->n_in];
      if (describe(k, context, t, i < part->n_in ? &k->in[i] : &k->out[i - part->n_in])) {
        context->ReportError(context, PREFIX "partition %s: tensor %d has no data", part->name,
                             t);
        return kTfLiteError;
      }
    }
    if (qaccel_state_run(k->states[j], (size_t)part->n_in, k->in, (size_t)part->n_out, k->out)) {
      context->ReportError(context, PREFIX "partition %s: %s", part->name,
                           qaccel_state_error(k->states[j]));
      return kTfLiteError;
    }
  }
  k->d->invocations++;
  if (!k->ran) {
    k->ran = 1;
    k->d->kernels_ran++;
  }
  return kTfLiteOk;
}

/* ---- Prepare: check the artifact against the model, claim its partitions ----------------- */

static int check_tensor(TfLiteContext *ctx, const Partition *p, int k, char *err) {
  const Boundary *b = &p->bounds[k];
  int io = k >= p->n_in;
  if (b->index < 0 || (size_t)b->index >= ctx->tensors_size)
    return fail(err, "partition %s names tensor %d, the model has %zu", p->name, b->index,
                ctx->tensors_size);
  const TfLiteTensor *t = &ctx->tensors[b->index];
  int32_t type, rank;
  int64_t dims[QACCEL_MAX_RANK];
  qaccel_program_tensor(p->opened, io, (uint32_t)(io ? k - p->n_in : k), &type, &rank, dims);
  if (b->type >= 0 && t->type != b->type)
    return fail(err, "partition %s: tensor %d has type %d in the model, %d in the artifact",
                p->name, b->index, t->type, b->type);
  if (t->type != type)
    return fail(err, "partition %s: tensor %d has type %d in the model, %d in its program",
                p->name, b->index, t->type, type);
  int same = t->dims && rank <= QACCEL_MAX_RANK && t->dims->size == rank;
  for (int32_t d = 0; same && d < rank; d++) same = t->dims->data[d] == dims[d];
  if (!same) {
    char shape[128] = "", want[128] = "";
    for (int d = 0; t->dims && d < t->dims->size && d < QACCEL_MAX_RANK; d++)
      snprintf(shape + strlen(shape), sizeof shape - strlen(shape), "%s%d", d ? "x" : "",
               t->dims->data[d]);
    for (int32_t d = 0; d < rank && d < QACCEL_MAX_RANK; d++)
      snprintf(want + strlen(want), sizeof want - strlen(want), "%s%lld", d ? "x" : "",
               (long long)dims[d]);
    return fail(err, "partition %s: %s tensor %d has shape [%s] in the model, [%s] in its program",
                p->name, io ? "output" : "input", b->index, shape, want);
  }
  if (b->has_quant) {
    const TfLiteAffineQuantization *q = t->quantization.params;
    int per_tensor = t->quantization.type == kTfLiteAffineQuantization && q && q->scale &&
                     q->scale->size == 1 && q->zero_point && q->zero_point->size == 1;
    if (!per_tensor || (float)b->scale != q->scale->data[0] ||
        b->zero_point != q->zero_point->data[0])
      return fail(err, "partition %s: tensor %d is quantized differently in the model (scale %g, "
                  "zero point %d) and the artifact (scale %g, zero point %lld)", p->name,
                  b->index, (double)t->params.scale, t->params.zero_point, b->scale,
                  (long long)b->zero_point);
  }
  return 0;
}

/* The checks of one partition; `owner` marks the nodes claimed so far (partition + 1). */
static int check_partition(TfLiteContext *ctx, const TfLiteIntArray *plan, const Partition *parts,
                           int index, int *owner, unsigned char *produced, char *err) {
  const Partition *p = &parts[index];
  for (int j = 0; j < p->n_ops; j++) {
    int op = p->ops[j];
    TfLiteNode *node;
    TfLiteRegistration *reg;
    if (op >= plan->size || ctx->GetNodeAndRegistration(ctx, op, &node, &reg) != kTfLiteOk)
      return fail(err, "partition %s names node %d, the model has %d", p->name, op, plan->size);
    if (owner[op])
      return fail(err, "node %d is in partitions %s and %s", op, parts[owner[op] - 1].name,
                  p->name);
    owner[op] = index + 1;
    if (reg->builtin_code == kTfLiteBuiltinDelegate)
      return fail(err, "node %d of partition %s is already delegated", op, p->name);
    if (p->op_codes && reg->builtin_code != p->op_codes[j])
      return fail(err, "node %d is operator %d in the model, %d in the artifact (partition %s)",
                  op, reg->builtin_code, p->op_codes[j], p->name);
    for (int o = 0; o < node->outputs->size; o++)
      if (node->outputs->data[o] >= 0) produced[node->outputs->data[o]] = 1;
  }
  for (int j = 0; j < p->n_ops; j++) {
    TfLiteNode *node;
    TfLiteRegistration *reg;
    ctx->GetNodeAndRegistration(ctx, p->ops[j], &node, &reg);
    for (int i = 0; i < node->inputs->size; i++) {
      int t = node->inputs->data[i];
      if (t < 0 || produced[t]) continue;
      int alloc = ctx->tensors[t].allocation_type, listed = 0;
      for (int k = 0; k < p->n_in; k++) listed |= p->inputs[k] == t;
      if (!listed && alloc != kTfLiteMmapRo && alloc != kTfLitePersistentRo)
        return fail(err, "node %d of partition %s reads tensor %d, which is neither an input of "
                    "the partition nor computed in it", p->ops[j], p->name, t);
    }
  }
  for (int o = 0; o < p->n_out; o++)
    if (!produced[p->outputs[o]])
      return fail(err, "partition %s: output tensor %d is not computed by its nodes", p->name,
                  p->outputs[o]);
  for (int k = 0; k < p->n_bounds; k++)
    if (check_tensor(ctx, p, k, err)) return 1;
  for (int j = 0; j < p->n_ops; j++) { /* produced[] is per partition */
    TfLiteNode *node;
    TfLiteRegistration *reg;
    ctx->GetNodeAndRegistration(ctx, p->ops[j], &node, &reg);
    for (int o = 0; o < node->outputs->size; o++)
      if (node->outputs->data[o] >= 0) produced[node->outputs->data[o]] = 0;
  }
  return 0;
}

/* Check partitions [first, n_parts) against the subgraph of `ctx` and replace their nodes
 * with delegate kernels.  `what` names where they come from, for the error. */
static TfLiteStatus claim(Delegate *d, TfLiteContext *ctx, int first, const char *what) {
  char err[ERR_BYTES] = "";
  TfLiteIntArray *plan;
  if (ctx->GetExecutionPlan(ctx, &plan) != kTfLiteOk) {
    ctx->ReportError(ctx, PREFIX "cannot read the execution plan");
    return kTfLiteError;
  }
  int *owner = calloc((size_t)plan->size + 1, sizeof *owner);
  unsigned char *produced = calloc(ctx->tensors_size + 1, 1);
  TfLiteIntArray *nodes = NULL;
  int most = 0, rc = 0;
  if (!owner || !produced) rc = fail(err, "out of memory");
  for (int p = first; !rc && p < d->n_parts; p++) {
    if (d->parts[p].where != ctx) continue; /* another subgraph's */
    d->parts[p].owner = ctx;
    rc = check_partition(ctx, plan, d->parts, p, owner, produced, err);
    if (d->parts[p].n_ops > most) most = d->parts[p].n_ops;
  }
  if (!rc) {
    nodes = malloc(sizeof *nodes + ((size_t)most + 1) * sizeof(int));
    if (!nodes) rc = fail(err, "out of memory");
  }
  free(owner);
  free(produced);
  if (rc) {
    free(nodes);
    ctx->ReportError(ctx, PREFIX "%s does not match the model: %s", what, err);
    return kTfLiteError;
  }
  TfLiteRegistration reg;
  memset(&reg, 0, sizeof reg);
  reg.init = kernel_init;
  reg.free = kernel_free;
  reg.prepare = kernel_prepare;
  reg.invoke = kernel_invoke;
  reg.custom_name = "QACCEL_DELEGATE";
  reg.version = 1;
  /* One replacement per partition: given all claimed nodes at once, LiteRT groups them by
   * readiness and may cut a partition in two (seen on NASNet). */
  TfLiteStatus status = kTfLiteOk;
  for (int p = first; p < d->n_parts && status == kTfLiteOk; p++) {
    const Partition *part = &d->parts[p];
    if (part->where != ctx) continue;
    nodes->size = part->n_ops;
    memcpy(nodes->data, part->ops, (size_t)part->n_ops * sizeof(int));
    status = ctx->ReplaceNodeSubsetsWithDelegateKernels(ctx, reg, nodes, &d->base);
    if (status == kTfLiteOk) d->claimed_nodes += part->n_ops;
  }
  free(nodes);
  return status;
}

static int plan_is_the_model(const TfLiteIntArray *plan) {
  for (int k = 0; k < plan->size; k++)
    if (plan->data[k] != k) return 0;
  return 1;
}

/* ---- on the spot: the subgraph described, compiled by qaccel's Python compiler ------------ */

typedef struct {
  const uint8_t *at;
  size_t left;
} Reader;

static int take(Reader *r, void *out, size_t n) {
  if (r->left < n) return 1;
  memcpy(out, r->at, n);
  r->at += n;
  r->left -= n;
  return 0;
}

/* u32 n + i32 ids, each below `limit`, mapped through `map`, into a malloc'd array. */
static int take_ids(Reader *r, int limit, const int *map, int **out, int *n) {
  uint32_t count;
  if (take(r, &count, 4) || count > r->left / 4) return 1;
  int *a = malloc((count ? count : 1) * sizeof *a);
  if (!a) return 1;
  for (uint32_t k = 0; k < count; k++) {
    int32_t v = -1;
    if (take(r, &v, 4) || v < 0 || v >= limit) {
      free(a);
      return 1;
    }
    a[k] = map[v];
  }
  *out = a;
  *n = (int)count;
  return 0;
}

/* compiler_plugin.delegate_partitions' answer into new partitions owned by `ctx`. */
static int take_partitions(Delegate *d, const qaccel_description *desc, const uint8_t *data,
                           size_t size, char *err) {
  Reader r = {data, size};
  char magic[4];
  uint32_t n;
  if (take(&r, magic, 4) || memcmp(magic, "QDP1", 4) != 0 || take(&r, &n, 4) || n > 4096)
    return fail(err, "malformed answer from the compiler");
  Partition *parts = realloc(d->parts, ((size_t)d->n_parts + n + 1) * sizeof *parts);
  if (!parts) return fail(err, "out of memory");
  d->parts = parts;
  memset(&parts[d->n_parts], 0, ((size_t)n + 1) * sizeof *parts);
  for (uint32_t k = 0; k < n; k++) {
    Partition *p = &d->parts[d->n_parts++];
    uint32_t name_len;
    uint64_t program_size;
    if (take(&r, &name_len, 4) || name_len > 200 || r.left < name_len)
      return fail(err, "malformed answer from the compiler");
    p->name = malloc(name_len + 24);
    if (!p->name) return fail(err, "out of memory");
    /* the first subgraph's partitions keep qaccel's names; later ones are told apart */
    int at = d->compiled_subgraphs ? snprintf(p->name, 24, "s%ld.", d->compiled_subgraphs) : 0;
    take(&r, p->name + at, name_len);
    p->name[at + (int)name_len] = '\0';
    if (take_ids(&r, desc->n_nodes, desc->node_of, &p->ops, &p->n_ops) || p->n_ops == 0 ||
        take_ids(&r, desc->n_tensors, desc->tensor_of, &p->inputs, &p->n_in) ||
        take_ids(&r, desc->n_tensors, desc->tensor_of, &p->outputs, &p->n_out) || p->n_out == 0 ||
        take(&r, &program_size, 8) || program_size > r.left)
      return fail(err, "malformed answer from the compiler (partition %s)", p->name);
    p->program_size = (size_t)program_size;
    p->program = malloc(p->program_size ? p->program_size : 1);
    if (!p->program) return fail(err, "out of memory");
    take(&r, p->program, p->program_size);
    if (load_boundary("", p, NULL, err)) return 1;
    char msg[QACCEL_ERROR_BYTES];
    if (qaccel_program_open(p->program, p->program_size, &p->opened, msg))
      return fail(err, "partition %s: %s", p->name, msg);
    if (qaccel_program_inputs(p->opened) != (uint32_t)p->n_in ||
        qaccel_program_outputs(p->opened) != (uint32_t)p->n_out)
      return fail(err, "partition %s: its program's inputs and outputs are not the partition's",
                  p->name);
  }
  if (r.left) return fail(err, "malformed answer from the compiler (trailing bytes)");
  return 0;
}

static int compile_here(Delegate *d, TfLiteContext *ctx, char *err) {
  TfLiteIntArray *plan;
  if (ctx->GetExecutionPlan(ctx, &plan) != kTfLiteOk) return fail(err, "cannot read the "
                                                                   "execution plan");
  if (!plan_is_the_model(plan))
    return fail(err, "the model was changed by another delegate before this one");
  qaccel_description desc;
  if (qaccel_describe_context(ctx, plan, &desc, err, ERR_BYTES)) return 1;
  qaccel_pybytes answer;
  char msg[ERR_BYTES];
  int rc = qaccel_pybridge_call("qaccel.tools.compiler_plugin", "delegate_partitions", desc.data,
                                desc.size, d->config ? d->config : "", &answer, msg, sizeof msg);
  if (rc) {
    qaccel_description_free(&desc);
    const char *m = strncmp(msg, "PluginError: ", 13) == 0 ? msg + 13 : msg;
    return fail(err, "%s", m);
  }
  int first = d->n_parts;
  rc = take_partitions(d, &desc, answer.data, answer.size, err);
  for (int p = first; !rc && p < d->n_parts; p++) d->parts[p].where = ctx;
  free(answer.data);
  if (!rc && desc.n_decompositions) {
    TfLiteContext **more = realloc(d->decompositions, ((size_t)d->n_decompositions +
                                                       (size_t)desc.n_decompositions) *
                                                          sizeof *more);
    if (!more) {
      rc = fail(err, "out of memory");
    } else {
      d->decompositions = more;
      memcpy(more + d->n_decompositions, desc.decompositions,
             (size_t)desc.n_decompositions * sizeof *more);
      d->n_decompositions += desc.n_decompositions;
    }
  }
  qaccel_description_free(&desc);
  d->compiled_subgraphs++;
  return rc;
}

static TfLiteStatus delegate_prepare(TfLiteContext *ctx, TfLiteDelegate *base) {
  Delegate *d = (Delegate *)base;
  char err[ERR_BYTES] = "";
  if (!d->artifact) { /* every subgraph LiteRT offers, each compiled as a model of its own */
    d->prepares++;
    /* A subgraph prepared again (LiteRT undid the delegation, or a new interpreter's subgraph
     * at a freed one's address) owns only what this Prepare claims. */
    for (int p = 0; p < d->n_parts; p++)
      if (d->parts[p].owner == ctx) d->parts[p].owner = NULL;
    for (int j = 0; j < d->n_decompositions; j++)
      if (d->decompositions[j] == ctx) { /* a decomposition described with its composite */
        d->decompositions[j] = d->decompositions[--d->n_decompositions];
        d->skipped_subgraphs++;
        return kTfLiteOk;
      }
    int first = d->n_parts;
    if (compile_here(d, ctx, err)) {
      ctx->ReportError(ctx, PREFIX "%s", err);
      return kTfLiteError;
    }
    return claim(d, ctx, first, "the compiled partitions");
  }
  if (d->primary && d->primary != ctx) { /* another subgraph: its partitions, if any */
    int any = 0;
    for (int p = 0; p < d->n_parts; p++) any |= d->parts[p].where == ctx;
    if (!any) return kTfLiteOk;
    d->prepares++;
    snprintf(err, sizeof err, "the artifact '%s'", d->artifact);
    return claim(d, ctx, 0, err);
  }
  d->primary = ctx;
  d->prepares++;
  /* The main subgraph's Prepare comes first: it finds the context of every other subgraph the
   * artifact has partitions in (AcquireSubgraphContext), whose own Prepare claims them. */
  for (int p = 0; p < d->n_parts; p++) {
    Partition *part = &d->parts[p];
    part->where = part->subgraph == 0 ? ctx : NULL;
    if (part->subgraph == 0) continue;
    TfLiteContext *sub = NULL;
    if (!ctx->AcquireSubgraphContext || !ctx->ReleaseSubgraphContext ||
        ctx->AcquireSubgraphContext(ctx, part->subgraph, &sub) != kTfLiteOk || !sub ||
        sub == ctx) {
      ctx->ReportError(ctx, PREFIX "the artifact '%s' has partition %s in subgraph %d, which "
                       "the model does not have", d->artifact, part->name, part->subgraph);
      return kTfLiteError;
    }
    ctx->ReleaseSubgraphContext(ctx, part->subgraph);
    part->where = sub;
  }
  TfLiteIntArray *plan;
  if (ctx->GetExecutionPlan(ctx, &plan) != kTfLiteOk) {
    ctx->ReportError(ctx, PREFIX "cannot read the execution plan");
    return kTfLiteError;
  }
  /* Kernels add their temporaries after the model's tensors: at least the model's. */
  if ((d->model_nodes >= 0 && plan->size != d->model_nodes) ||
      (d->model_tensors >= 0 && ctx->tensors_size < (size_t)d->model_tensors)) {
    ctx->ReportError(ctx, PREFIX "the artifact '%s' is for a model of %lld operators and %lld "
                     "tensors, this one has %d and %zu", d->artifact, (long long)d->model_nodes,
                     (long long)d->model_tensors, plan->size, ctx->tensors_size);
    return kTfLiteError;
  }
  if (!plan_is_the_model(plan)) {
    ctx->ReportError(ctx, PREFIX "the model was changed by another delegate before this one");
    return kTfLiteError;
  }
  snprintf(err, sizeof err, "the artifact '%s'", d->artifact);
  return claim(d, ctx, 0, err);
}

/* ---- the entry points ---------------------------------------------------------------------- */

QACCEL_EXPORT TfLiteDelegate *tflite_plugin_create_delegate(char **keys, char **values,
                                                            size_t n_options,
                                                            void (*report_error)(const char *)) {
  char err[ERR_BYTES] = "";
  Delegate *d = calloc(1, sizeof *d);
  if (!d) {
    if (report_error) report_error(PREFIX "out of memory");
    return NULL;
  }
  for (size_t k = 0; k < n_options && !err[0]; k++) {
    const char *key = keys[k], *value = values[k];
    char **slot = strcmp(key, "artifact") == 0 ? &d->artifact
                  : strcmp(key, "config") == 0 ? &d->config : NULL;
    if (!slot)
      fail(err, PREFIX "unknown option '%s' (the options are artifact and config)", key);
    else if (*slot)
      fail(err, PREFIX "option '%s' given twice", key);
    else if (!value[0])
      fail(err, PREFIX "option '%s' is empty", key);
    else if (!(*slot = dup_string(value)))
      fail(err, PREFIX "out of memory");
  }
  if (!err[0] && d->artifact) {
    char msg[ERR_BYTES];
    if (load_artifact(d, msg)) fail(err, PREFIX "%s", msg);
  }
  if (err[0]) {
    if (report_error) report_error(err);
    free_delegate(d);
    return NULL;
  }
  d->base.data_ = d;
  d->base.Prepare = delegate_prepare;
  /* Dynamic dimensions (a batch of -1) are allowed: kernel_prepare checks the shapes the model
   * runs with. Not kTfLiteDelegateFlagsRequirePropagatedShapes: with it, 2.3.0's reference MEAN
   * after a delegate kernel writes through a NULL temporary on the second invoke. */
  d->base.flags = kTfLiteDelegateFlagsAllowDynamicTensors;
  return &d->base;
}

QACCEL_EXPORT void tflite_plugin_destroy_delegate(TfLiteDelegate *delegate) {
  free_delegate((Delegate *)delegate);
}

#ifndef QACCEL_LITERT_SOURCE_HASH
#define QACCEL_LITERT_SOURCE_HASH ""
#endif
/* The digest of the sources this library was built from (delegate.py tells a stale build). */
QACCEL_EXPORT const char *qaccel_litert_source_hash(void) { return QACCEL_LITERT_SOURCE_HASH; }

/* Proof that the delegate ran: kernel invocations, kernels created, nodes claimed. */
QACCEL_EXPORT long qaccel_delegate_invocations(const TfLiteDelegate *d) {
  return ((const Delegate *)d)->invocations;
}
QACCEL_EXPORT long qaccel_delegate_kernels(const TfLiteDelegate *d) {
  return ((const Delegate *)d)->kernels;
}
QACCEL_EXPORT long qaccel_delegate_claimed_nodes(const TfLiteDelegate *d) {
  return ((const Delegate *)d)->claimed_nodes;
}
QACCEL_EXPORT int qaccel_delegate_partitions(const TfLiteDelegate *d) {
  return ((const Delegate *)d)->n_parts;
}
QACCEL_EXPORT long qaccel_delegate_kernels_ran(const TfLiteDelegate *d) {
  return ((const Delegate *)d)->kernels_ran;
}
/* Without an artifact: how many subgraphs were described and compiled (one per Prepare). */
QACCEL_EXPORT long qaccel_delegate_compiled_subgraphs(const TfLiteDelegate *d) {
  return ((const Delegate *)d)->compiled_subgraphs;
}
/* Without an artifact: decomposition subgraphs left to their composite (not compiled alone). */
QACCEL_EXPORT long qaccel_delegate_skipped_subgraphs(const TfLiteDelegate *d) {
  return ((const Delegate *)d)->skipped_subgraphs;
}
