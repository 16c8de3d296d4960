/* See qaccel_describe.h.  The format (little-endian), as qaccel_plugin.c writes it:
 * "QPD1", u32 tensors, ops, inputs, outputs; the inputs' and outputs' tensor ids; the ops (i32
 * code, str custom code, u32 n + i32 input ids (-1: none), u32 n + i32 output ids, options:
 * u32 count + per option str field, u32 kind (0: i64, 1: f64, 2: u32 n + i32s), u32 has custom
 * options [+ u32 n + bytes]); then the tensors (str name, i32 element type, u32 rank + i32
 * dims, quantization u32 kind 0 | 1 f64 scale i64 zero point | 2 i32 dimension u32 n f64
 * scales[n] i64 zero points[n]; u32 constant [+ i64 n + bytes]).  A str is u32 n + bytes. */
#include "qaccel_describe.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bridge/qaccel_pybridge.h"

enum { CUSTOM_CODE = 32, DELEGATE_CODE = 51, COMPOSITE_CODE = 206 };

static int fail(char *err, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return 1;
}

/* ---- options ------------------------------------------------------------------------------ */

/* One op's options, collected before they are written (the count comes first). */
typedef struct {
  qaccel_desc b;
  uint32_t count;
  int bad; /* a value the schema cannot hold: the op is described as opaque */
} Options;

static void opt_int(Options *o, const char *field, int64_t v) {
  qaccel_desc_str(&o->b, field);
  qaccel_desc_u32(&o->b, 0);
  qaccel_desc_i64(&o->b, v);
  o->count++;
}
static void opt_float(Options *o, const char *field, float v) {
  qaccel_desc_str(&o->b, field);
  qaccel_desc_u32(&o->b, 1);
  qaccel_desc_f64(&o->b, (double)v);
  o->count++;
}
static void opt_vec(Options *o, const char *field, const int32_t *v, int n) {
  if (n < 0 || n > 8) {
    o->bad = 1;
    return;
  }
  qaccel_desc_str(&o->b, field);
  qaccel_desc_u32(&o->b, 2);
  qaccel_desc_u32(&o->b, (uint32_t)n);
  qaccel_desc_put(&o->b, v, (size_t)n * 4);
  o->count++;
}
/* TfLitePadding (1 SAME, 2 VALID) as the schema's Padding (0 SAME, 1 VALID). */
static void opt_padding(Options *o, int padding) {
  if (padding != 1 && padding != 2) o->bad = 1;
  opt_int(o, "padding", padding - 1);
}
/* TfLiteFusedActivation: the schema's numbers up to SIGN_BIT (5); sigmoid (6) has none. */
static void opt_activation(Options *o, int act) {
  if (act < 0 || act > 5) o->bad = 1;
  opt_int(o, "fused_activation_function", act);
}

/* The builtin codes whose schema options table has fields (LiteRT's schema): an op among
 * them that describe_options does not decode is described as opaque. */
static const int kCodesWithOptions[] = {
    0,   1,   2,   3,   4,   5,   9,   11,  12,  13,  15,  16,  17,  18,  22,  23,  24,
    25,  26,  27,  29,  30,  31,  33,  35,  36,  40,  41,  42,  43,  44,  45,  46,  49,
    52,  53,  56,  67,  68,  74,  77,  79,  80,  81,  82,  83,  85,  88,  89,  91,  97,
    98,  100, 102, 103, 112, 118, 119, 126, 128, 129, 132, 136, 140, 141, 142, 146, 147,
    148, 149, 150, 169, 170, 171, 172, 173, 174, 190, 191, 193, 195, 196, 197, 198, 199,
    200, 201, 202, 204, 205, 206};

static int has_options(int code) {
  for (size_t k = 0; k < sizeof kCodesWithOptions / sizeof kCodesWithOptions[0]; k++)
    if (kCodesWithOptions[k] == code) return 1;
  return 0;
}

/* The options of `code` from `data` (its builtin_data); 0 when decoded (or the op has none),
 * 1 when the op must stay opaque. */
static int describe_options(int code, const void *data, Options *o) {
  if (!has_options(code) || code == COMPOSITE_CODE) return 0; /* composite: describe_body */
  if (!data) return 1;
  switch (code) {
    case 0:  /* ADD */
    case 41: /* SUB */
      opt_activation(o, ((const QTfLiteAddSubParams *)data)->activation);
      break;
    case 18: /* MUL */
    case 42: /* DIV */
    case 11: /* L2_NORMALIZATION */
      opt_activation(o, ((const QTfLiteActivationParams *)data)->activation);
      break;
    case 1:  /* AVERAGE_POOL_2D */
    case 12: /* L2_POOL_2D */
    case 17: { /* MAX_POOL_2D */
      const QTfLitePoolParams *p = data;
      opt_padding(o, p->padding);
      opt_int(o, "stride_w", p->stride_width);
      opt_int(o, "stride_h", p->stride_height);
      opt_int(o, "filter_width", p->filter_width);
      opt_int(o, "filter_height", p->filter_height);
      opt_activation(o, p->activation);
      break;
    }
    case 2: { /* CONCATENATION */
      const QTfLiteConcatenationParams *p = data;
      opt_int(o, "axis", p->axis);
      opt_activation(o, p->activation);
      break;
    }
    case 3: { /* CONV_2D */
      const QTfLiteConvParams *p = data;
      opt_padding(o, p->padding);
      opt_int(o, "stride_w", p->stride_width);
      opt_int(o, "stride_h", p->stride_height);
      opt_activation(o, p->activation);
      opt_int(o, "dilation_w_factor", p->dilation_width_factor);
      opt_int(o, "dilation_h_factor", p->dilation_height_factor);
      break;
    }
    case 4: { /* DEPTHWISE_CONV_2D */
      const QTfLiteDepthwiseConvParams *p = data;
      opt_padding(o, p->padding);
      opt_int(o, "stride_w", p->stride_width);
      opt_int(o, "stride_h", p->stride_height);
      opt_int(o, "depth_multiplier", p->depth_multiplier);
      opt_activation(o, p->activation);
      opt_int(o, "dilation_w_factor", p->dilation_width_factor);
      opt_int(o, "dilation_h_factor", p->dilation_height_factor);
      break;
    }
    case 5:  /* DEPTH_TO_SPACE */
    case 26: /* SPACE_TO_DEPTH */
      opt_int(o, "block_size", ((const QTfLiteBlockSizeParams *)data)->block_size);
      break;
    case 9: { /* FULLY_CONNECTED */
      const QTfLiteFullyConnectedParams *p = data;
      opt_activation(o, p->activation);
      if (p->weights_format != 0) o->bad = 1; /* shuffled weights: LiteRT's own layout */
      opt_int(o, "weights_format", p->weights_format);
      opt_int(o, "keep_num_dims", p->keep_num_dims);
      opt_int(o, "asymmetric_quantize_inputs", p->asymmetric_quantize_inputs);
      break;
    }
    case 22: { /* RESHAPE: the shape input when present; the option in old models */
      const QTfLiteReshapeParams *p = data;
      if (p->num_dimensions > 0) opt_vec(o, "new_shape", p->shape, p->num_dimensions);
      break;
    }
    case 23: /* RESIZE_BILINEAR */
    case 97: { /* RESIZE_NEAREST_NEIGHBOR */
      const QTfLiteResizeParams *p = data;
      opt_int(o, "align_corners", p->align_corners);
      opt_int(o, "half_pixel_centers", p->half_pixel_centers);
      break;
    }
    case 25: /* SOFTMAX */
      opt_float(o, "beta", ((const QTfLiteSoftmaxParams *)data)->beta);
      break;
    case 36: { /* GATHER */
      const QTfLiteGatherParams *p = data;
      opt_int(o, "axis", p->axis);
      opt_int(o, "batch_dims", p->batch_dims);
      break;
    }
    case 40:  /* MEAN */
    case 74:  /* SUM */
    case 81:  /* REDUCE_PROD */
    case 82:  /* REDUCE_MAX */
    case 89:  /* REDUCE_MIN */
    case 91:  /* REDUCE_ANY */
    case 140: /* REDUCE_ALL */
      opt_int(o, "keep_dims", ((const QTfLiteReducerParams *)data)->keep_dims);
      break;
    case 43: { /* SQUEEZE */
      const QTfLiteSqueezeParams *p = data;
      opt_vec(o, "squeeze_dims", p->squeeze_dims, p->num_squeeze_dims);
      break;
    }
    case 45: { /* STRIDED_SLICE */
      const QTfLiteStridedSliceParams *p = data;
      opt_int(o, "begin_mask", p->begin_mask);
      opt_int(o, "end_mask", p->end_mask);
      opt_int(o, "ellipsis_mask", p->ellipsis_mask);
      opt_int(o, "new_axis_mask", p->new_axis_mask);
      opt_int(o, "shrink_axis_mask", p->shrink_axis_mask);
      opt_int(o, "offset", p->offset);
      break;
    }
    case 49:  /* SPLIT */
    case 102: /* SPLIT_V */
      opt_int(o, "num_splits", ((const QTfLiteSplitParams *)data)->num_splits);
      break;
    case 53: { /* CAST */
      const QTfLiteCastParams *p = data;
      opt_int(o, "in_data_type", p->in_data_type);
      opt_int(o, "out_data_type", p->out_data_type);
      break;
    }
    case 56: /* ARG_MAX */
    case 79: /* ARG_MIN */
      opt_int(o, "output_type", ((const QTfLiteTypeParams *)data)->output_type);
      break;
    case 77: /* SHAPE */
      opt_int(o, "out_type", ((const QTfLiteTypeParams *)data)->output_type);
      break;
    case 67: { /* TRANSPOSE_CONV */
      const QTfLiteTransposeConvParams *p = data;
      opt_padding(o, p->padding);
      opt_int(o, "stride_w", p->stride_width);
      opt_int(o, "stride_h", p->stride_height);
      opt_activation(o, p->activation);
      break;
    }
    case 83: { /* PACK */
      const QTfLitePackParams *p = data;
      opt_int(o, "values_count", p->values_count);
      opt_int(o, "axis", p->axis);
      break;
    }
    case 85: /* ONE_HOT */
      opt_int(o, "axis", ((const QTfLiteOneHotParams *)data)->axis);
      break;
    case 88: { /* UNPACK */
      const QTfLiteUnpackParams *p = data;
      opt_int(o, "num", p->num);
      opt_int(o, "axis", p->axis);
      break;
    }
    case 98: /* LEAKY_RELU */
      opt_float(o, "alpha", ((const QTfLiteLeakyReluParams *)data)->alpha);
      break;
    case 100: { /* MIRROR_PAD: TfLite 1 REFLECT, 2 SYMMETRIC; the schema 0, 1 */
      int mode = ((const QTfLiteMirrorPaddingParams *)data)->mode;
      if (mode != 1 && mode != 2) o->bad = 1;
      opt_int(o, "mode", mode - 1);
      break;
    }
    case 126: { /* BATCH_MATMUL */
      const QTfLiteBatchMatMulParams *p = data;
      opt_int(o, "adj_x", p->adj_x);
      opt_int(o, "adj_y", p->adj_y);
      opt_int(o, "asymmetric_quantize_inputs", p->asymmetric_quantize_inputs);
      break;
    }
    case 128: { /* CUMSUM */
      const QTfLiteCumsumParams *p = data;
      opt_int(o, "exclusive", p->exclusive);
      opt_int(o, "reverse", p->reverse);
      break;
    }
    case 150: /* GELU */
      opt_int(o, "approximate", ((const QTfLiteGeluParams *)data)->approximate);
      break;
    default:
      return 1;
  }
  return o->bad;
}

/* ---- tensors ------------------------------------------------------------------------------ */

static int tensor_id(int *id_of, int *tensor_of, int *n, int t) {
  if (t < 0) return -1;
  if (id_of[t] < 0) {
    id_of[t] = *n;
    tensor_of[(*n)++] = t;
  }
  return id_of[t];
}

static void describe_tensor(const TfLiteTensor *t, qaccel_desc *b) {
  qaccel_desc_str(b, t->name ? t->name : "");
  qaccel_desc_i32(b, t->type);
  int rank = t->dims ? t->dims->size : 0;
  /* A dimension the model leaves to run time (its shape signature's -1, e.g. behind a RESHAPE
   * whose shape is computed) is described as -1, as LiteRT shows it to the plugin: the
   * importer then takes it from the computation, not from the placeholder shape. */
  const TfLiteIntArray *sig = t->dims_signature;
  int dynamic = 0;
  if (sig && sig->size == rank)
    for (int d = 0; d < rank; d++) dynamic |= sig->data[d] < 0;
  qaccel_desc_u32(b, (uint32_t)rank);
  for (int d = 0; d < rank; d++) qaccel_desc_i32(b, dynamic ? sig->data[d] : t->dims->data[d]);
  const TfLiteAffineQuantization *q = t->quantization.params;
  if (t->quantization.type == kTfLiteAffineQuantization && q && q->scale && q->zero_point &&
      q->scale->size >= 1 && q->zero_point->size == q->scale->size) {
    if (q->scale->size == 1) {
      qaccel_desc_u32(b, 1);
      qaccel_desc_f64(b, (double)q->scale->data[0]);
      qaccel_desc_i64(b, q->zero_point->data[0]);
    } else {
      qaccel_desc_u32(b, 2);
      qaccel_desc_i32(b, q->quantized_dimension);
      qaccel_desc_u32(b, (uint32_t)q->scale->size);
      for (int k = 0; k < q->scale->size; k++) qaccel_desc_f64(b, (double)q->scale->data[k]);
      for (int k = 0; k < q->scale->size; k++) qaccel_desc_i64(b, q->zero_point->data[k]);
    }
  } else {
    qaccel_desc_u32(b, 0);
  }
  int constant = t->allocation_type == kTfLiteMmapRo && t->data && t->bytes > 0;
  qaccel_desc_u32(b, (uint32_t)constant);
  if (constant) {
    qaccel_desc_i64(b, (int64_t)t->bytes);
    qaccel_desc_put(b, t->data, t->bytes);
  }
}

static int is_constant(const TfLiteContext *ctx, int t) {
  return ctx->tensors[t].allocation_type == kTfLiteMmapRo;
}

/* The subgraph's inputs and outputs, which TfLiteContext does not list: LiteRT's own preview
 * of a delegate kernel holding every node gives them (its outputs are the tensors the nodes
 * compute that leave the subgraph, its inputs what they read from outside); else the tensors
 * read and computed by no node, and those computed and read by none. */
static int graph_io(TfLiteContext *ctx, const TfLiteIntArray *plan, int **in, int *n_in,
                    int **out, int *n_out) {
  size_t nt = ctx->tensors_size;
  *in = malloc((nt + 1) * sizeof **in);
  *out = malloc((nt + 1) * sizeof **out);
  unsigned char *role = calloc(nt + 1, 1); /* 1 read, 2 computed */
  if (!*in || !*out || !role) {
    free(role);
    return 1;
  }
  *n_in = *n_out = 0;
  for (int k = 0; k < plan->size; k++) {
    TfLiteNode *node;
    TfLiteRegistration *reg;
    if (ctx->GetNodeAndRegistration(ctx, plan->data[k], &node, &reg) != kTfLiteOk) continue;
    for (int i = 0; i < node->inputs->size; i++) {
      int t = node->inputs->data[i];
      if (t >= 0 && (size_t)t < nt) role[t] |= 1;
    }
    for (int i = 0; i < node->outputs->size; i++) {
      int t = node->outputs->data[i];
      if (t >= 0 && (size_t)t < nt) role[t] |= 2;
    }
  }
  TfLiteDelegateParams *params = NULL;
  int n_params = 0;
  if (ctx->PreviewDelegatePartitioning &&
      ctx->PreviewDelegatePartitioning(ctx, plan, &params, &n_params) == kTfLiteOk &&
      n_params == 1 && params) {
    for (int i = 0; i < params[0].input_tensors->size; i++) {
      int t = params[0].input_tensors->data[i];
      if (t >= 0 && (size_t)t < nt && !is_constant(ctx, t) && !(role[t] & 2)) (*in)[(*n_in)++] = t;
    }
    for (int i = 0; i < params[0].output_tensors->size; i++) {
      int t = params[0].output_tensors->data[i];
      if (t >= 0 && (size_t)t < nt) (*out)[(*n_out)++] = t;
    }
  } else {
    for (size_t t = 0; t < nt; t++) {
      if (role[t] == 1 && !is_constant(ctx, (int)t)) (*in)[(*n_in)++] = (int)t;
      if (role[t] == 2) (*out)[(*n_out)++] = (int)t;
    }
  }
  free(role);
  return 0;
}

/* ---- composites: the decomposition described as a subgraph of its own ------------------ */

#define MAX_DECOMPOSITIONS 64
#define MAX_COMPOSITE_DEPTH 4

typedef struct {
  TfLiteContext *root;              /* the subgraph described: its AcquireSubgraphContext */
  int subgraph[MAX_DECOMPOSITIONS]; /* the model's subgraph index of description subgraph k+1 */
  qaccel_desc body[MAX_DECOMPOSITIONS];
  TfLiteContext *acquired[MAX_DECOMPOSITIONS];
  int n;
} Decompositions;

static int describe_body(TfLiteContext *ctx, const TfLiteIntArray *plan, const int *in, int n_in,
                         const int *outs, int n_out, Decompositions *dec, int depth,
                         qaccel_desc *b, int **tensor_of_out, int *n_ids_out, int *node_of,
                         char *err, size_t err_size);

static int same_tensor_kind(const TfLiteTensor *a, const TfLiteTensor *b) {
  if (a->type != b->type || !a->dims || !b->dims || a->dims->size != b->dims->size) return 0;
  for (int d = 0; d < a->dims->size; d++)
    if (a->dims->data[d] != b->dims->data[d]) return 0;
  return a->params.scale == b->params.scale && a->params.zero_point == b->params.zero_point;
}

/* The decomposition's tensors matching the composite's operands (`want`, tensors of `outer`),
 * in their order, among `cand` (tensors of `sub`): each must match exactly one candidate, and
 * no two operands may look alike (their order would be a guess).  0, or 1. */
static int match_tensors(TfLiteContext *outer, const TfLiteIntArray *want, TfLiteContext *sub,
                         const int *cand, int n_cand, int *out) {
  if (want->size != n_cand) return 1;
  for (int i = 0; i < want->size; i++) {
    int t = want->data[i], found = -1, hits = 0;
    if (t < 0 || (size_t)t >= outer->tensors_size) return 1;
    for (int j = 0; j < want->size; j++) {
      int u = want->data[j];
      if (j != i && u >= 0 && (size_t)u < outer->tensors_size &&
          same_tensor_kind(&outer->tensors[t], &outer->tensors[u]))
        return 1;
    }
    for (int c = 0; c < n_cand; c++)
      if (same_tensor_kind(&outer->tensors[t], &sub->tensors[cand[c]])) {
        found = cand[c];
        hits++;
      }
    if (hits != 1) return 1;
    out[i] = found;
  }
  return 0;
}

/* Describe the decomposition of composite `node` (of `ctx`) as description subgraph k (its
 * number returned in *k), its inputs and outputs in the composite's operand order.  Returns 0;
 * 1 when it cannot be described (the composite then stays opaque); -1 on an error. */
static int describe_decomposition(TfLiteContext *ctx, const TfLiteNode *node,
                                  Decompositions *dec, int depth, int *k, char *err,
                                  size_t err_size) {
  const QTfLiteStablehloCompositeParams *p = node->builtin_data;
  if (!p || depth >= MAX_COMPOSITE_DEPTH || !dec->root->AcquireSubgraphContext ||
      !dec->root->ReleaseSubgraphContext || p->subgraph_index <= 0)
    return 1;
  for (int j = 0; j < dec->n; j++)
    if (dec->subgraph[j] == p->subgraph_index) return 1; /* used twice: not described twice */
  if (dec->n >= MAX_DECOMPOSITIONS) return 1;
  TfLiteContext *sub = NULL;
  if (dec->root->AcquireSubgraphContext(dec->root, p->subgraph_index, &sub) != kTfLiteOk || !sub)
    return 1;
  int rc = 1;
  TfLiteIntArray *plan = NULL;
  size_t nt = sub->tensors_size;
  unsigned char *role = calloc(nt + 1, 1); /* 1 read, 2 computed */
  int *cand_in = malloc((nt + 1) * sizeof *cand_in), *cand_out = malloc((nt + 1) * sizeof *cand_out);
  int *in = malloc(((size_t)node->inputs->size + 1) * sizeof *in);
  int *outs = malloc(((size_t)node->outputs->size + 1) * sizeof *outs);
  int n_cin = 0, n_cout = 0;
  if (!role || !cand_in || !cand_out || !in || !outs) {
    rc = -fail(err, err_size, "out of memory");
    goto done;
  }
  if (sub == ctx || sub == dec->root || sub->GetExecutionPlan(sub, &plan) != kTfLiteOk) goto done;
  for (int n = 0; n < plan->size; n++) {
    TfLiteNode *inner;
    TfLiteRegistration *reg;
    if (sub->GetNodeAndRegistration(sub, plan->data[n], &inner, &reg) != kTfLiteOk) goto done;
    for (int i = 0; i < inner->inputs->size; i++) {
      int t = inner->inputs->data[i];
      if (t >= 0 && (size_t)t < nt) role[t] |= 1;
    }
    for (int i = 0; i < inner->outputs->size; i++) {
      int t = inner->outputs->data[i];
      if (t >= 0 && (size_t)t < nt) role[t] |= 2;
    }
  }
  for (size_t t = 0; t < nt; t++) {
    if (role[t] == 1 && !is_constant(sub, (int)t)) cand_in[n_cin++] = (int)t;
    if (role[t] == 2) cand_out[n_cout++] = (int)t;
  }
  if (match_tensors(ctx, node->inputs, sub, cand_in, n_cin, in) ||
      match_tensors(ctx, node->outputs, sub, cand_out, n_cout, outs))
    goto done;
  int j = dec->n++;
  dec->subgraph[j] = p->subgraph_index;
  dec->acquired[j] = sub;
  memset(&dec->body[j], 0, sizeof dec->body[j]);
  int *tensor_of = NULL, n_ids = 0;
  int *node_of = malloc(((size_t)plan->size + 1) * sizeof *node_of);
  if (!node_of) {
    rc = -fail(err, err_size, "out of memory");
    goto done;
  }
  rc = describe_body(sub, plan, in, node->inputs->size, outs, node->outputs->size, dec, depth + 1,
                     &dec->body[j], &tensor_of, &n_ids, node_of, err, err_size)
           ? -1
           : 0;
  free(tensor_of);
  free(node_of);
  *k = j + 1;
done:
  if (sub != dec->root) /* releasing the subgraph being delegated would end its delegation */
    dec->root->ReleaseSubgraphContext(dec->root, p->subgraph_index);
  free(role);
  free(cand_in);
  free(cand_out);
  free(in);
  free(outs);
  return rc;
}

/* One subgraph's body (after the magic): u32 tensors, ops, inputs, outputs; the inputs' and
 * outputs' ids; the ops; the tensors.  *tensor_of_out: description id -> tensor (malloc'd). */
static int describe_body(TfLiteContext *ctx, const TfLiteIntArray *plan, const int *in, int n_in,
                         const int *outs, int n_out, Decompositions *dec, int depth,
                         qaccel_desc *b, int **tensor_of_out, int *n_ids_out, int *node_of,
                         char *err, size_t err_size) {
  size_t nt = ctx->tensors_size;
  int *id_of = malloc((nt + 1) * sizeof *id_of);
  int *tensor_of = malloc((nt + 1) * sizeof *tensor_of);
  int n_ids = 0, rc = 0;
  qaccel_desc ops = {NULL, 0, 0, 0}, io = {NULL, 0, 0, 0};
  if (!id_of || !tensor_of) {
    free(id_of);
    free(tensor_of);
    return fail(err, err_size, "out of memory");
  }
  for (size_t t = 0; t < nt; t++) id_of[t] = -1;
  for (int k = 0; k < n_in; k++) qaccel_desc_i32(&io, tensor_id(id_of, tensor_of, &n_ids, in[k]));
  for (int k = 0; k < n_out; k++) qaccel_desc_i32(&io, tensor_id(id_of, tensor_of, &n_ids, outs[k]));
  for (int k = 0; k < plan->size && !rc; k++) {
    TfLiteNode *node;
    TfLiteRegistration *reg;
    node_of[k] = plan->data[k];
    if (ctx->GetNodeAndRegistration(ctx, plan->data[k], &node, &reg) != kTfLiteOk) {
      rc = fail(err, err_size, "cannot read node %d", plan->data[k]);
      break;
    }
    int code = reg->builtin_code, decomposition = 0;
    char opaque[64] = "";
    Options opts = {{NULL, 0, 0, 0}, 0, 0};
    if (code == COMPOSITE_CODE) {
      int got = describe_decomposition(ctx, node, dec, depth, &decomposition, err, err_size);
      if (got < 0) {
        rc = 1;
        break;
      }
      if (got == 0) { /* name, the description's subgraph, attributes, version */
        const QTfLiteStablehloCompositeParams *p = node->builtin_data;
        const char *name = p->name ? p->name : "";
        qaccel_desc_str(&opts.b, "name");
        qaccel_desc_u32(&opts.b, 3);
        qaccel_desc_u32(&opts.b, (uint32_t)strlen(name));
        qaccel_desc_put(&opts.b, name, strlen(name));
        opt_int(&opts, "decomposition_subgraph_index", decomposition);
        qaccel_desc_str(&opts.b, "composite_attributes");
        qaccel_desc_u32(&opts.b, 3);
        qaccel_desc_u32(&opts.b, (uint32_t)(p->attributes ? p->attributes_size : 0));
        if (p->attributes) qaccel_desc_put(&opts.b, p->attributes, p->attributes_size);
        opt_int(&opts, "version", p->version);
        opts.count += 2;
      }
    } else if (code == DELEGATE_CODE) {
      snprintf(opaque, sizeof opaque, "QACCEL_OTHER_DELEGATE");
    } else if (code != CUSTOM_CODE && describe_options(code, node->builtin_data, &opts)) {
      snprintf(opaque, sizeof opaque, "QACCEL_UNDECODED_BUILTIN_%d", code);
    }
    qaccel_desc_i32(&ops, opaque[0] ? CUSTOM_CODE : code);
    qaccel_desc_str(&ops, opaque[0] ? opaque : code == CUSTOM_CODE ? reg->custom_name : NULL);
    for (int side = 0; side < 2; side++) {
      const TfLiteIntArray *ts = side == 0 ? node->inputs : node->outputs;
      qaccel_desc_u32(&ops, (uint32_t)ts->size);
      for (int i = 0; i < ts->size; i++) {
        int t = ts->data[i];
        qaccel_desc_i32(&ops, t >= 0 && (size_t)t < nt ? tensor_id(id_of, tensor_of, &n_ids, t) : -1);
      }
    }
    if (opaque[0]) {
      qaccel_desc_u32(&ops, 0);
    } else {
      qaccel_desc_u32(&ops, opts.count);
      qaccel_desc_put(&ops, opts.b.data, opts.b.size);
    }
    if (opts.b.failed) ops.failed = 1;
    free(opts.b.data);
    if (code == CUSTOM_CODE && node->custom_initial_data && node->custom_initial_data_size > 0) {
      qaccel_desc_u32(&ops, 1);
      qaccel_desc_u32(&ops, (uint32_t)node->custom_initial_data_size);
      qaccel_desc_put(&ops, node->custom_initial_data, (size_t)node->custom_initial_data_size);
    } else {
      qaccel_desc_u32(&ops, 0);
    }
  }
  if (!rc) {
    qaccel_desc_u32(b, (uint32_t)n_ids);
    qaccel_desc_u32(b, (uint32_t)plan->size);
    qaccel_desc_u32(b, (uint32_t)n_in);
    qaccel_desc_u32(b, (uint32_t)n_out);
    qaccel_desc_put(b, io.data, io.size);
    qaccel_desc_put(b, ops.data, ops.size);
    for (int k = 0; k < n_ids; k++) describe_tensor(&ctx->tensors[tensor_of[k]], b);
    if (b->failed || ops.failed || io.failed) rc = fail(err, err_size, "out of memory");
  }
  free(io.data);
  free(ops.data);
  free(id_of);
  if (rc) {
    free(tensor_of);
    return 1;
  }
  *tensor_of_out = tensor_of;
  *n_ids_out = n_ids;
  return 0;
}

int qaccel_describe_context(TfLiteContext *ctx, const TfLiteIntArray *plan,
                            qaccel_description *out, char *err, size_t err_size) {
  memset(out, 0, sizeof *out);
  int *node_of = malloc(((size_t)plan->size + 1) * sizeof *node_of);
  int *in = NULL, *outs = NULL, n_in = 0, n_out = 0, n_ids = 0, rc = 0;
  int *tensor_of = NULL;
  qaccel_desc main_body = {NULL, 0, 0, 0}, b = {NULL, 0, 0, 0};
  Decompositions *dec = calloc(1, sizeof *dec);
  if (!node_of || !dec || graph_io(ctx, plan, &in, &n_in, &outs, &n_out)) {
    rc = fail(err, err_size, "out of memory");
    goto done;
  }
  dec->root = ctx;
  rc = describe_body(ctx, plan, in, n_in, outs, n_out, dec, 0, &main_body, &tensor_of, &n_ids,
                     node_of, err, err_size);
  if (!rc) {
    /* Without composites described, the plugin's format (QPD1); with them, QPD2: the main
     * subgraph, u32 n, then each decomposition's body (description subgraph 1..n). */
    qaccel_desc_put(&b, dec->n ? "QPD2" : "QPD1", 4);
    qaccel_desc_put(&b, main_body.data, main_body.size);
    if (dec->n) {
      qaccel_desc_u32(&b, (uint32_t)dec->n);
      for (int j = 0; j < dec->n; j++) qaccel_desc_put(&b, dec->body[j].data, dec->body[j].size);
    }
    if (b.failed) rc = fail(err, err_size, "out of memory");
  }
  if (!rc && dec->n) {
    out->decompositions = malloc((size_t)dec->n * sizeof *out->decompositions);
    if (!out->decompositions) {
      rc = fail(err, err_size, "out of memory");
    } else {
      memcpy(out->decompositions, dec->acquired, (size_t)dec->n * sizeof *dec->acquired);
      out->n_decompositions = dec->n;
    }
  }
done:
  free(main_body.data);
  if (dec)
    for (int j = 0; j < dec->n; j++) free(dec->body[j].data);
  free(dec);
  free(in);
  free(outs);
  if (rc) {
    free(b.data);
    free(tensor_of);
    free(node_of);
    free(out->decompositions);
    memset(out, 0, sizeof *out);
    return 1;
  }
  out->data = b.data;
  out->size = b.size;
  out->tensor_of = tensor_of;
  out->n_tensors = n_ids;
  out->node_of = node_of;
  out->n_nodes = plan->size;
  return 0;
}

void qaccel_description_free(qaccel_description *d) {
  if (!d) return;
  free(d->data);
  free(d->tensor_of);
  free(d->node_of);
  free(d->decompositions);
  memset(d, 0, sizeof *d);
}
