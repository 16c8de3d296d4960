/* libLiteRtCompilerPlugin_Qaccel: qaccel's LiteRT compiler plugin, for AOT compilation
 * (apply_plugin_main, ai_edge_litert.aot) and on-device compilation (CompiledModel with a
 * compiler plugin directory and NPU | CPU).
 *
 * The compiler stays Python.  Partition describes the subgraph LiteRT shows it (tensors: name,
 * type, shape, quantization, constant bytes; ops: builtin code, inputs, outputs and their
 * builtin options read through the context's getters) and hands the description to
 * qaccel.tools.compiler_plugin.partition, which rebuilds the model, decides the
 * accelerator partitions as qaccel-compile does and returns (op, partition) pairs; we push them.
 * Compile serializes the model of outlined partitions LiteRT gives us and hands its bytes to
 * compiler_plugin.compile (qaccel/tools/compiler_plugin.py), which returns one qaccel program per partition (run by
 * libLiteRtDispatch_Qaccel).  The hand-off goes through qaccel_pybridge (no libpython link).
 *
 * Configuration: the plugin options LiteRT hands to Create (the LiteRtOptions of the compiled
 * model: opaque options with the identifier "qaccel", whose payload is a NUL-terminated text of
 * `key=value` settings separated by ';' or newlines; the key: `config`, a hardware
 * configuration file or bundled name); else QACCEL_PLUGIN_CONFIG; default vta-default.  The
 * compile cache directory: QACCEL_PLUGIN_CACHE ("off" disables it).  The SDK version string is
 * "qaccel <version> config <hash> code <hash>", what a cache keys on.
 *
 * Errors: a LiteRT status, one line on stderr ("qaccel plugin: error: ..."), and the last
 * message in qaccel_plugin_last_error(). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qaccel_plugin_api.h"
#include "qaccel_pybridge.h"

#define EXPORT __attribute__((visibility("default")))
#define PY_MODULE "qaccel.tools.compiler_plugin"

static char g_error[1024];
static long g_partitions, g_compiles, g_programs, g_selected;

EXPORT const char *qaccel_plugin_last_error(void) { return g_error; }
/* How many Partition and Compile calls succeeded since the library was loaded (tests). */
EXPORT long qaccel_plugin_partition_calls(void) { return g_partitions; }
EXPORT long qaccel_plugin_compile_calls(void) { return g_compiles; }
/* How many operators Partition selected since the library was loaded. */
EXPORT long qaccel_plugin_selected_ops(void) { return g_selected; }
/* How many programs the last successful Compile returned. */
EXPORT long qaccel_plugin_last_programs(void) { return g_programs; }
EXPORT void qaccel_plugin_clear_error(void) { g_error[0] = '\0'; }

static LiteRtStatus fail(LiteRtStatus status, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_error, sizeof g_error, fmt, ap);
  va_end(ap);
  fprintf(stderr, "qaccel plugin: error: %s\n", g_error);
  return status;
}

/* ---- the plugin ------------------------------------------------------------------------ */
struct LiteRtCompilerPluginT {
  const LiteRtCompilerContext *ctx;
  char sdk_version[256];
  char config[1024]; /* from the plugin options, else QACCEL_PLUGIN_CONFIG, else "" */
};

#define config_text() (p->config)

struct LiteRtCompiledResultT {
  size_t n;
  unsigned char *blob;      /* what compile returned, which the pointers below point into */
  const unsigned char **code;
  size_t *size;
  const char **name;
  size_t *name_len;
};

/* A context slot by byte offset (the table is an ABI header followed by function pointers). */
static void *slot(const LiteRtCompilerContext *ctx, size_t offset) {
  void *fn;
  memcpy(&fn, (const unsigned char *)ctx + offset, sizeof fn);
  return fn;
}
#define CTX(plugin, type, offset) ((type)slot((plugin)->ctx, (offset)))

/* The configuration: the "qaccel" plugin options of `options` (config=...), else the
 * environment variable.  Returns QLRT_OK, or a failure (an unknown or malformed setting). */
static LiteRtStatus read_config(const LiteRtCompilerContext *ctx, LiteRtOptions options,
                                char *config, size_t size) {
  const char *env = getenv("QACCEL_PLUGIN_CONFIG");
  snprintf(config, size, "%s", env ? env : "");
  QLrtGetOpaqueOptions get = (QLrtGetOpaqueOptions)slot(ctx, QLRT_CC_GET_OPAQUE_OPTIONS);
  QLrtFindOpaqueOptionsData find =
      (QLrtFindOpaqueOptionsData)slot(ctx, QLRT_CC_FIND_OPAQUE_OPTIONS_DATA);
  LiteRtOpaqueOptions opaque = NULL;
  void *payload = NULL;
  if (!options || !get || !find || get(options, &opaque) != QLRT_OK || !opaque ||
      find(opaque, "qaccel", &payload) != QLRT_OK || !payload)
    return QLRT_OK; /* no qaccel options: the environment's */
  const char *text = payload;
  while (*text) {
    size_t n = strcspn(text, ";\n");
    const char *eq = memchr(text, '=', n);
    while (n && (*text == ' ' || *text == '\t')) text++, n--;
    if (n) {
      if (!eq || (size_t)(eq - text) != 6 || strncmp(text, "config", 6) != 0)
        return fail(QLRT_INVALID_ARGUMENT, "plugin option \"%.*s\": the only setting is "
                    "config=FILE|NAME", (int)n, text);
      size_t len = n - 7;
      if (len >= size) return fail(QLRT_INVALID_ARGUMENT, "plugin option config: too long");
      memcpy(config, eq + 1, len);
      config[len] = '\0';
    }
    text += n;
    if (*text) text++;
  }
  return QLRT_OK;
}

static LiteRtStatus get_version(QLrtApiVersion *v) {
  if (!v) return QLRT_INVALID_ARGUMENT;
  v->major = QLRT_API_VERSION_MAJOR;
  v->minor = QLRT_API_VERSION_MINOR;
  v->patch = QLRT_API_VERSION_PATCH;
  return QLRT_OK;
}

static const char *soc_manufacturer(void) { return "Qaccel"; }

static LiteRtStatus create_plugin(const LiteRtCompilerContext *ctx, LiteRtCompilerPlugin *out,
                                  LiteRtEnvironmentOptions env, LiteRtOptions options) {
  (void)env;
  if (!out) return QLRT_INVALID_ARGUMENT;
  *out = NULL;
  if (!ctx) return fail(QLRT_INVALID_ARGUMENT, "LiteRT passed no compiler context");
  QLrtAbiHeader h;
  memcpy(&h, ctx, sizeof h);
  if (h.major_version != QLRT_CC_MAJOR || h.struct_size < QLRT_CC_MIN_BYTES)
    return fail(QLRT_WRONG_VERSION,
                "LiteRT's compiler context is version %u with %u bytes; this plugin needs "
                "version %d with at least %d bytes",
                h.major_version, h.struct_size, QLRT_CC_MAJOR, QLRT_CC_MIN_BYTES);
  static const size_t used[] = {
      QLRT_CC_NUM_MODEL_SUBGRAPHS, QLRT_CC_NUM_SUBGRAPH_OPS, QLRT_CC_SUBGRAPH_OP,
      QLRT_CC_NUM_SUBGRAPH_INPUTS, QLRT_CC_SUBGRAPH_INPUT, QLRT_CC_NUM_SUBGRAPH_OUTPUTS,
      QLRT_CC_SUBGRAPH_OUTPUT, QLRT_CC_OP_CODE, QLRT_CC_NUM_OP_INPUTS, QLRT_CC_OP_INPUT,
      QLRT_CC_NUM_OP_OUTPUTS, QLRT_CC_OP_OUTPUT, QLRT_CC_TENSOR_NAME, QLRT_CC_TENSOR_TYPE_ID,
      QLRT_CC_RANKED_TENSOR_TYPE, QLRT_CC_QUANTIZATION_TYPE_ID, QLRT_CC_PER_TENSOR_QUANT,
      QLRT_CC_PER_CHANNEL_QUANT, QLRT_CC_TENSOR_WEIGHTS, QLRT_CC_WEIGHTS_BYTES, QLRT_CC_PUSH_OP,
      QLRT_CC_SERIALIZE_MODEL};
  for (size_t i = 0; i < sizeof used / sizeof used[0]; i++)
    if (!slot(ctx, used[i]))
      return fail(QLRT_WRONG_VERSION, "LiteRT's compiler context lacks the function at byte %zu",
                  used[i]);
  LiteRtCompilerPlugin p = calloc(1, sizeof *p);
  if (!p) return fail(QLRT_RUNTIME_FAILURE, "out of memory");
  p->ctx = ctx;
  LiteRtStatus st = read_config(ctx, options, p->config, sizeof p->config);
  if (st != QLRT_OK) {
    free(p);
    return st;
  }
  char err[512];
  qaccel_pybytes v;
  if (qaccel_pybridge_call(PY_MODULE, "sdk_version", NULL, 0, config_text(), &v, err,
                           sizeof err) != 0) {
    free(p);
    return fail(QLRT_RUNTIME_FAILURE, "%s", err);
  }
  size_t n = v.size < sizeof p->sdk_version - 1 ? v.size : sizeof p->sdk_version - 1;
  memcpy(p->sdk_version, v.data, n);
  p->sdk_version[n] = '\0';
  free(v.data);
  *out = p;
  return QLRT_OK;
}

static void destroy_plugin(LiteRtCompilerPlugin p) { free(p); }

static LiteRtStatus supported_hardware(LiteRtCompilerPlugin p, LiteRtHwAccelerators *hw) {
  if (!p || !hw) return QLRT_INVALID_ARGUMENT;
  *hw = QLRT_HW_NPU;
  return QLRT_OK;
}

static LiteRtStatus num_soc_models(LiteRtCompilerPlugin p, LiteRtParamIndex *n) {
  if (!p || !n) return QLRT_INVALID_ARGUMENT;
  *n = 1;
  return QLRT_OK;
}

static LiteRtStatus soc_model(LiteRtCompilerPlugin p, LiteRtParamIndex i, const char **name) {
  if (!p || !name || i != 0) return QLRT_INVALID_ARGUMENT;
  *name = "VTA";
  return QLRT_OK;
}

static LiteRtStatus sdk_version(LiteRtCompilerPlugin p, const char **v) {
  if (!p || !v) return QLRT_INVALID_ARGUMENT;
  *v = p->sdk_version;
  return QLRT_OK;
}

static LiteRtStatus check_compatibility(QLrtApiVersion v, LiteRtCompilerPlugin p,
                                        LiteRtEnvironmentOptions env, LiteRtOptions options,
                                        const char *soc) {
  (void)v;
  (void)env;
  (void)options;
  if (!p) return QLRT_INVALID_ARGUMENT;
  if (soc && strcmp(soc, "VTA") != 0) return QLRT_UNSUPPORTED;
  return QLRT_OK;
}

static LiteRtStatus register_transformations(LiteRtCompilerPlugin p, QLrtTransformation **t,
                                             LiteRtParamIndex *n) {
  if (!p || !t || !n) return QLRT_INVALID_ARGUMENT;
  *t = NULL;
  *n = 0;
  return QLRT_OK;
}

/* ---- the subgraph's description (read by compiler_plugin.read_description) -------------- */

typedef struct {
  LiteRtTensor *items;
  size_t n, cap;
} TensorSet;

/* Index of t in the set, added when new (-1: out of memory). */
static long tensor_id(TensorSet *s, LiteRtTensor t) {
  for (size_t i = s->n; i-- > 0;)
    if (s->items[i] == t) return (long)i;
  if (s->n == s->cap) {
    size_t cap = s->cap ? 2 * s->cap : 256;
    LiteRtTensor *d = realloc(s->items, cap * sizeof *d);
    if (!d) return -1;
    s->items = d;
    s->cap = cap;
  }
  s->items[s->n] = t;
  return (long)s->n++;
}

enum { OPT_U32 = 0, OPT_I32 = 1, OPT_BOOL = 2, OPT_F32 = 3, OPT_VEC = 4 };
typedef struct {
  int code;          /* TFLite builtin operator */
  const char *field; /* the schema's option field */
  int kind;
  size_t offset; /* of the getter in the compiler context */
} OptionGetter;

/* The builtin options qaccel's importer reads, by the context getter that reads each. */
static const OptionGetter kOptions[] = {
    {0, "fused_activation_function", OPT_U32, 504},   /* ADD */
    {1, "padding", OPT_U32, 672},                     /* AVERAGE_POOL_2D */
    {1, "stride_w", OPT_I32, 680},
    {1, "stride_h", OPT_I32, 688},
    {1, "filter_width", OPT_I32, 696},
    {1, "filter_height", OPT_I32, 704},
    {1, "fused_activation_function", OPT_U32, 712},
    {2, "axis", OPT_I32, 576}, /* CONCATENATION */
    {2, "fused_activation_function", OPT_U32, 584},
    {3, "padding", OPT_U32, 368}, /* CONV_2D */
    {3, "stride_w", OPT_I32, 376},
    {3, "stride_h", OPT_I32, 384},
    {3, "fused_activation_function", OPT_U32, 392},
    {3, "dilation_w_factor", OPT_I32, 400},
    {3, "dilation_h_factor", OPT_I32, 408},
    {4, "padding", OPT_U32, 416}, /* DEPTHWISE_CONV_2D */
    {4, "stride_w", OPT_I32, 424},
    {4, "stride_h", OPT_I32, 432},
    {4, "depth_multiplier", OPT_I32, 440},
    {4, "fused_activation_function", OPT_U32, 448},
    {4, "dilation_w_factor", OPT_I32, 456},
    {4, "dilation_h_factor", OPT_I32, 464},
    {5, "block_size", OPT_I32, 976},                 /* DEPTH_TO_SPACE */
    {9, "fused_activation_function", OPT_U32, 528}, /* FULLY_CONNECTED */
    {9, "weights_format", OPT_U32, 536},
    {9, "keep_num_dims", OPT_BOOL, 544},
    {9, "asymmetric_quantize_inputs", OPT_BOOL, 560},
    {12, "padding", OPT_U32, 928}, /* L2_POOL_2D */
    {12, "stride_w", OPT_I32, 936},
    {12, "stride_h", OPT_I32, 944},
    {12, "filter_width", OPT_I32, 952},
    {12, "filter_height", OPT_I32, 960},
    {12, "fused_activation_function", OPT_U32, 968},
    {17, "padding", OPT_U32, 720}, /* MAX_POOL_2D */
    {17, "stride_w", OPT_I32, 728},
    {17, "stride_h", OPT_I32, 736},
    {17, "filter_width", OPT_I32, 744},
    {17, "filter_height", OPT_I32, 752},
    {17, "fused_activation_function", OPT_U32, 760},
    {18, "fused_activation_function", OPT_U32, 512}, /* MUL */
    {22, "new_shape", OPT_VEC, 776},                 /* RESHAPE */
    {23, "align_corners", OPT_BOOL, 616},            /* RESIZE_BILINEAR */
    {23, "half_pixel_centers", OPT_BOOL, 624},
    {25, "beta", OPT_F32, 568},       /* SOFTMAX */
    {26, "block_size", OPT_I32, 984}, /* SPACE_TO_DEPTH */
    {36, "axis", OPT_I32, 848},       /* GATHER */
    {36, "batch_dims", OPT_I32, 856},
    {40, "keep_dims", OPT_BOOL, 600},                /* MEAN */
    {41, "fused_activation_function", OPT_U32, 352}, /* SUB */
    {42, "fused_activation_function", OPT_U32, 520}, /* DIV */
    {43, "squeeze_dims", OPT_VEC, 1024},             /* SQUEEZE */
    {45, "begin_mask", OPT_I32, 304},                /* STRIDED_SLICE */
    {45, "end_mask", OPT_I32, 312},
    {45, "shrink_axis_mask", OPT_I32, 320},
    {45, "ellipsis_mask", OPT_I32, 328},
    {45, "new_axis_mask", OPT_I32, 336},
    {45, "offset", OPT_BOOL, 344},
    {49, "num_splits", OPT_I32, 592}, /* SPLIT */
    {67, "padding", OPT_U32, 472},    /* TRANSPOSE_CONV */
    {67, "stride_w", OPT_I32, 480},
    {67, "stride_h", OPT_I32, 488},
    {67, "fused_activation_function", OPT_U32, 496},
    {74, "keep_dims", OPT_BOOL, 360}, /* SUM */
    {82, "keep_dims", OPT_BOOL, 608}, /* REDUCE_MAX */
    {83, "values_count", OPT_I32, 816}, /* PACK */
    {83, "axis", OPT_I32, 808},
    {88, "num", OPT_I32, 840}, /* UNPACK */
    {88, "axis", OPT_I32, 832},
    {89, "keep_dims", OPT_BOOL, 784}, /* REDUCE_MIN */
    {91, "keep_dims", OPT_BOOL, 792}, /* REDUCE_ANY */
    {97, "align_corners", OPT_BOOL, 632}, /* RESIZE_NEAREST_NEIGHBOR */
    {97, "half_pixel_centers", OPT_BOOL, 640},
    {98, "alpha", OPT_F32, 768},      /* LEAKY_RELU */
    {100, "mode", OPT_U32, 1016},     /* MIRROR_PAD */
    {102, "num_splits", OPT_I32, 1400}, /* SPLIT_V */
    {126, "adj_x", OPT_BOOL, 648},    /* BATCH_MATMUL */
    {126, "adj_y", OPT_BOOL, 656},
    {126, "asymmetric_quantize_inputs", OPT_BOOL, 664},
    {128, "exclusive", OPT_BOOL, 992}, /* CUMSUM */
    {128, "reverse", OPT_BOOL, 1000},
    {150, "approximate", OPT_BOOL, 1008}, /* GELU */
};

/* Options: u32 count, then per option: str field, u32 kind (0 int, 1 float, 2 int vector),
 * an i64, an f64, or a u32 count and that many i32. */
static void describe_options(LiteRtCompilerPlugin p, LiteRtOp op, int code, qaccel_desc *b) {
  size_t h_size = b->size;
  uint32_t count = 0;
  qaccel_desc_u32(b, 0);
  size_t struct_size;
  {
    QLrtAbiHeader h;
    memcpy(&h, p->ctx, sizeof h);
    struct_size = h.struct_size;
  }
  for (size_t i = 0; i < sizeof kOptions / sizeof kOptions[0]; i++) {
    const OptionGetter *g = &kOptions[i];
    if (g->code != code || g->offset + 8 > struct_size) continue;
    void *fn = slot(p->ctx, g->offset);
    if (!fn) continue;
    LiteRtStatus s = QLRT_RUNTIME_FAILURE;
    int64_t iv = 0;
    double fv = 0;
    const int32_t *vec = NULL;
    int32_t vn = 0;
    switch (g->kind) {
      case OPT_U32: {
        uint32_t v = 0;
        s = ((QLrtOptU32)fn)(op, &v);
        iv = v;
        break;
      }
      case OPT_I32: {
        int32_t v = 0;
        s = ((QLrtOptI32)fn)(op, &v);
        iv = v;
        break;
      }
      case OPT_BOOL: {
        bool v = false;
        s = ((QLrtOptBool)fn)(op, &v);
        iv = v;
        break;
      }
      case OPT_F32: {
        float v = 0;
        s = ((QLrtOptF32)fn)(op, &v);
        fv = v;
        break;
      }
      default:
        s = ((QLrtOptVec)fn)(op, &vec, &vn);
        if (vn < 0 || (vn > 0 && !vec)) s = QLRT_RUNTIME_FAILURE;
        break;
    }
    if (s != QLRT_OK) continue; /* not set: the schema's default */
    qaccel_desc_str(b, g->field);
    if (g->kind == OPT_F32) {
      qaccel_desc_u32(b, 1);
      qaccel_desc_f64(b, fv);
    } else if (g->kind == OPT_VEC) {
      qaccel_desc_u32(b, 2);
      qaccel_desc_u32(b, (uint32_t)vn);
      qaccel_desc_put(b, vec, (size_t)vn * 4);
    } else {
      qaccel_desc_u32(b, 0);
      qaccel_desc_i64(b, iv);
    }
    count++;
  }
  if (!b->failed) memcpy(b->data + h_size, &count, 4);
}

static LiteRtStatus describe_tensor(LiteRtCompilerPlugin p, LiteRtTensor t, qaccel_desc *b) {
  const char *name = NULL;
  if (CTX(p, QLrtGetString, QLRT_CC_TENSOR_NAME)(t, &name) != QLRT_OK) name = "";
  qaccel_desc_str(b, name);
  int type_id = -1;
  LiteRtRankedTensorType rt;
  memset(&rt, 0, sizeof rt);
  if (CTX(p, QLrtGetInt, QLRT_CC_TENSOR_TYPE_ID)(t, &type_id) != QLRT_OK ||
      type_id != QLRT_TENSOR_RANKED ||
      CTX(p, QLrtGetRanked, QLRT_CC_RANKED_TENSOR_TYPE)(t, &rt) != QLRT_OK)
    return fail(QLRT_UNSUPPORTED, "tensor \"%s\" has no ranked type (qaccel needs static shapes)",
                name);
  qaccel_desc_i32(b, rt.element_type);
  qaccel_desc_u32(b, rt.layout.rank);
  for (unsigned i = 0; i < rt.layout.rank && i < QLRT_MAX_RANK; i++)
    qaccel_desc_i32(b, rt.layout.dimensions[i]);
  int q = QLRT_QUANT_NONE;
  if (CTX(p, QLrtGetInt, QLRT_CC_QUANTIZATION_TYPE_ID)(t, &q) != QLRT_OK) q = QLRT_QUANT_NONE;
  if (q == QLRT_QUANT_PER_TENSOR) {
    QLrtPerTensorQuant pt;
    if (CTX(p, QLrtGetPerTensor, QLRT_CC_PER_TENSOR_QUANT)(t, &pt) != QLRT_OK)
      return fail(QLRT_RUNTIME_FAILURE, "tensor \"%s\": no per-tensor quantization", name);
    qaccel_desc_u32(b, 1);
    qaccel_desc_f64(b, pt.scale);
    qaccel_desc_i64(b, pt.zero_point);
  } else if (q == QLRT_QUANT_PER_CHANNEL) {
    QLrtPerChannelQuant pc;
    if (CTX(p, QLrtGetPerChannel, QLRT_CC_PER_CHANNEL_QUANT)(t, &pc) != QLRT_OK ||
        (pc.num_channels && (!pc.scales || !pc.zero_points)))
      return fail(QLRT_RUNTIME_FAILURE, "tensor \"%s\": no per-channel quantization", name);
    qaccel_desc_u32(b, 2);
    qaccel_desc_i32(b, pc.quantized_dimension);
    qaccel_desc_u32(b, (uint32_t)pc.num_channels);
    for (uint64_t i = 0; i < pc.num_channels; i++) qaccel_desc_f64(b, pc.scales[i]);
    qaccel_desc_put(b, pc.zero_points, (size_t)pc.num_channels * 8);
  } else if (q == QLRT_QUANT_NONE) {
    qaccel_desc_u32(b, 0);
  } else {
    return fail(QLRT_UNSUPPORTED, "tensor \"%s\": quantization kind %d", name, q);
  }
  LiteRtWeights w = NULL;
  const void *bytes = NULL;
  size_t size = 0;
  if (CTX(p, QLrtGetWeights, QLRT_CC_TENSOR_WEIGHTS)(t, &w) != QLRT_OK || !w ||
      CTX(p, QLrtGetWeightsBytes, QLRT_CC_WEIGHTS_BYTES)(w, &bytes, &size) != QLRT_OK || !bytes)
    size = 0;
  qaccel_desc_u32(b, size > 0);
  if (size > 0) {
    qaccel_desc_i64(b, (int64_t)size);
    qaccel_desc_put(b, bytes, size);
  }
  return QLRT_OK;
}

/* "QPD1", u32 tensors, ops, inputs, outputs; the inputs' and outputs' tensor ids; the ops
 * (i32 code, str custom code, u32 n + i32 input ids (-1: none), u32 n + i32 output ids,
 * options, u32 has custom options [+ u32 n + bytes]); then the tensors (str name, i32 element
 * type, u32 rank + i32 dims, quantization: u32 kind 0 | 1 f64 scale i64 zero point | 2 i32
 * dimension u32 n f64 scales[n] i64 zero points[n]; u32 constant [+ i64 n + bytes]). */
static LiteRtStatus describe(LiteRtCompilerPlugin p, LiteRtSubgraph sg, qaccel_desc *b, LiteRtOp **ops_out,
                             size_t *n_ops_out) {
  TensorSet ts = {NULL, 0, 0};
  qaccel_desc ob = {NULL, 0, 0, 0};
  LiteRtStatus st = QLRT_OK;
  LiteRtParamIndex n_ops = 0, n_in = 0, n_out = 0;
  LiteRtOp *ops = NULL;
  if (CTX(p, QLrtGetCount, QLRT_CC_NUM_SUBGRAPH_OPS)(sg, &n_ops) != QLRT_OK ||
      CTX(p, QLrtGetCount, QLRT_CC_NUM_SUBGRAPH_INPUTS)(sg, &n_in) != QLRT_OK ||
      CTX(p, QLrtGetCount, QLRT_CC_NUM_SUBGRAPH_OUTPUTS)(sg, &n_out) != QLRT_OK)
    return fail(QLRT_RUNTIME_FAILURE, "cannot read the subgraph's ops, inputs and outputs");
  ops = calloc(n_ops ? n_ops : 1, sizeof *ops);
  if (!ops) return fail(QLRT_RUNTIME_FAILURE, "out of memory");
  for (size_t k = 0; k < 2 && st == QLRT_OK; k++) {
    LiteRtParamIndex n = k == 0 ? n_in : n_out;
    for (LiteRtParamIndex i = 0; i < n; i++) {
      void *t = NULL;
      if (CTX(p, QLrtGetItem, k == 0 ? QLRT_CC_SUBGRAPH_INPUT : QLRT_CC_SUBGRAPH_OUTPUT)(
              sg, i, &t) != QLRT_OK) {
        st = fail(QLRT_RUNTIME_FAILURE, "cannot read subgraph input/output %zu", (size_t)i);
        break;
      }
      qaccel_desc_i32(&ob, (int32_t)tensor_id(&ts, (LiteRtTensor)t));
    }
  }
  for (LiteRtParamIndex i = 0; i < n_ops && st == QLRT_OK; i++) {
    void *op = NULL;
    int code = -1;
    if (CTX(p, QLrtGetItem, QLRT_CC_SUBGRAPH_OP)(sg, i, &op) != QLRT_OK ||
        CTX(p, QLrtGetOpCode, QLRT_CC_OP_CODE)((LiteRtOp)op, &code) != QLRT_OK) {
      st = fail(QLRT_RUNTIME_FAILURE, "cannot read op %zu", (size_t)i);
      break;
    }
    ops[i] = (LiteRtOp)op;
    qaccel_desc_i32(&ob, code);
    const char *custom = NULL;
    void *cc = slot(p->ctx, QLRT_CC_CUSTOM_CODE);
    if (code == 32 && cc && ((QLrtGetString)cc)(op, &custom) != QLRT_OK) custom = NULL;
    qaccel_desc_str(&ob, custom);
    for (int k = 0; k < 2; k++) {
      LiteRtParamIndex n = 0;
      if (CTX(p, QLrtGetCount, k == 0 ? QLRT_CC_NUM_OP_INPUTS : QLRT_CC_NUM_OP_OUTPUTS)(op, &n) !=
          QLRT_OK) {
        st = fail(QLRT_RUNTIME_FAILURE, "cannot read op %zu's operands", (size_t)i);
        break;
      }
      qaccel_desc_u32(&ob, (uint32_t)n);
      for (LiteRtParamIndex j = 0; j < n; j++) {
        void *t = NULL;
        LiteRtStatus s =
            CTX(p, QLrtGetItem, k == 0 ? QLRT_CC_OP_INPUT : QLRT_CC_OP_OUTPUT)(op, j, &t);
        qaccel_desc_i32(&ob, (s == QLRT_OK && t) ? (int32_t)tensor_id(&ts, (LiteRtTensor)t) : -1);
      }
    }
    describe_options(p, (LiteRtOp)op, code, &ob);
    const uint8_t *copts = NULL;
    int32_t cn = 0;
    void *co = slot(p->ctx, QLRT_CC_CUSTOM_OPTIONS);
    if (code == 32 && co && ((QLrtGetCustomOptions)co)((LiteRtOp)op, &copts, &cn) == QLRT_OK &&
        copts && cn > 0) {
      qaccel_desc_u32(&ob, 1);
      qaccel_desc_u32(&ob, (uint32_t)cn);
      qaccel_desc_put(&ob, copts, (size_t)cn);
    } else {
      qaccel_desc_u32(&ob, 0);
    }
  }
  if (st == QLRT_OK) {
    qaccel_desc_put(b, "QPD1", 4);
    qaccel_desc_u32(b, (uint32_t)ts.n);
    qaccel_desc_u32(b, (uint32_t)n_ops);
    qaccel_desc_u32(b, (uint32_t)n_in);
    qaccel_desc_u32(b, (uint32_t)n_out);
    qaccel_desc_put(b, ob.data, ob.size);
    for (size_t i = 0; i < ts.n && st == QLRT_OK; i++) st = describe_tensor(p, ts.items[i], b);
    if (st == QLRT_OK && (b->failed || ob.failed))
      st = fail(QLRT_RUNTIME_FAILURE, "out of memory describing the subgraph");
  }
  free(ob.data);
  free(ts.items);
  if (st != QLRT_OK) {
    free(ops);
    return st;
  }
  *ops_out = ops;
  *n_ops_out = n_ops;
  return QLRT_OK;
}

static LiteRtStatus partition(LiteRtCompilerPlugin p, const char *soc, LiteRtSubgraph sg,
                              LiteRtOpList selected) {
  if (!p || !sg || !selected) return QLRT_INVALID_ARGUMENT;
  if (soc && strcmp(soc, "VTA") != 0)
    return fail(QLRT_UNSUPPORTED, "SoC model \"%s\" (qaccel compiles for VTA)", soc);
  qaccel_desc b = {NULL, 0, 0, 0};
  LiteRtOp *ops = NULL;
  size_t n_ops = 0;
  LiteRtStatus st = describe(p, sg, &b, &ops, &n_ops);
  if (st != QLRT_OK) {
    free(b.data);
    return st;
  }
  char err[768];
  qaccel_pybytes r;
  int rc = qaccel_pybridge_call(PY_MODULE, "partition", b.data, b.size, config_text(), &r, err,
                                sizeof err);
  free(b.data);
  if (rc != 0) {
    free(ops);
    return fail(QLRT_RUNTIME_FAILURE, "partition: %s", err);
  }
  /* (i32 op index, i32 partition index) pairs */
  for (size_t i = 0; i + 8 <= r.size && st == QLRT_OK; i += 8) {
    int32_t op, part;
    memcpy(&op, r.data + i, 4);
    memcpy(&part, r.data + i + 4, 4);
    if (op < 0 || (size_t)op >= n_ops || part < 0)
      st = fail(QLRT_RUNTIME_FAILURE, "partition: op %d / partition %d out of range", op, part);
    else if (CTX(p, QLrtPushOp, QLRT_CC_PUSH_OP)(selected, ops[op], (LiteRtParamIndex)part) !=
             QLRT_OK)
      st = fail(QLRT_RUNTIME_FAILURE, "partition: LiteRT refused op %d", op);
    else
      g_selected++;
  }
  free(r.data);
  free(ops);
  if (st == QLRT_OK) g_partitions++;
  return st;
}

static void destroy_result(LiteRtCompiledResult r) {
  if (!r) return;
  free(r->blob);
  free(r->code);
  free(r->size);
  free(r->name);
  free(r->name_len);
  free(r);
}

/* compile returns u32 n, then per program: u32 name length, name, u64 size, bytes. */
static LiteRtStatus parse_result(const unsigned char *d, size_t size, LiteRtCompiledResult r) {
  size_t at = 4;
  uint32_t n;
  if (size < 4) return QLRT_RUNTIME_FAILURE;
  memcpy(&n, d, 4);
  if (n > size) return QLRT_RUNTIME_FAILURE;
  r->n = n;
  r->code = calloc(n ? n : 1, sizeof *r->code);
  r->size = calloc(n ? n : 1, sizeof *r->size);
  r->name = calloc(n ? n : 1, sizeof *r->name);
  r->name_len = calloc(n ? n : 1, sizeof *r->name_len);
  if (!r->code || !r->size || !r->name || !r->name_len) return QLRT_RUNTIME_FAILURE;
  for (uint32_t i = 0; i < n; i++) {
    uint32_t nl;
    uint64_t cs;
    if (size - at < 4) return QLRT_RUNTIME_FAILURE;
    memcpy(&nl, d + at, 4);
    at += 4;
    if (size - at < (size_t)nl + 8) return QLRT_RUNTIME_FAILURE;
    r->name[i] = (const char *)d + at;
    r->name_len[i] = nl;
    at += nl;
    memcpy(&cs, d + at, 8);
    at += 8;
    if (size - at < cs) return QLRT_RUNTIME_FAILURE;
    r->code[i] = d + at;
    r->size[i] = (size_t)cs;
    at += (size_t)cs;
  }
  return at == size ? QLRT_OK : QLRT_RUNTIME_FAILURE;
}

static LiteRtStatus compile(LiteRtCompilerPlugin p, const char *soc, LiteRtModel partitions,
                            LiteRtCompiledResult *out) {
  if (!p || !partitions || !out) return QLRT_INVALID_ARGUMENT;
  *out = NULL;
  if (soc && strcmp(soc, "VTA") != 0)
    return fail(QLRT_UNSUPPORTED, "SoC model \"%s\" (qaccel compiles for VTA)", soc);
  uint8_t *buf = NULL;
  size_t size = 0, offset = 0;
  QLrtSerializationOptions so = {8};
  LiteRtParamIndex n_sub = 0;
  if (CTX(p, QLrtGetCount, QLRT_CC_NUM_MODEL_SUBGRAPHS)(partitions, &n_sub) != QLRT_OK)
    return fail(QLRT_RUNTIME_FAILURE, "compile: cannot count the partitions");
  /* One signature key per subgraph is required; NULL keeps each subgraph's default. */
  char **keys = calloc(n_sub ? n_sub : 1, sizeof *keys);
  if (!keys) return fail(QLRT_RUNTIME_FAILURE, "out of memory");
  /* Serializing moves the model's contents out (LiteRT does not read it after Compile). */
  LiteRtStatus s = CTX(p, QLrtSerializeModel, QLRT_CC_SERIALIZE_MODEL)(
      partitions, &buf, &size, &offset, false, keys, n_sub, so);
  free(keys);
  if (s != QLRT_OK || !buf || offset > size)
    return fail(QLRT_RUNTIME_FAILURE, "compile: LiteRT could not serialize the partitions "
                "(status %d)", s);
  char err[768];
  qaccel_pybytes res;
  int rc = qaccel_pybridge_call(PY_MODULE, "compile", buf + offset, size - offset, config_text(),
                                &res, err, sizeof err);
  free(buf); /* LiteRT hands the buffer over (operator new[], i.e. malloc) */
  if (rc != 0) return fail(QLRT_RUNTIME_FAILURE, "compile: %s", err);
  LiteRtCompiledResult r = calloc(1, sizeof *r);
  if (!r) {
    free(res.data);
    return fail(QLRT_RUNTIME_FAILURE, "out of memory");
  }
  r->blob = res.data;
  if (parse_result(res.data, res.size, r) != QLRT_OK) {
    destroy_result(r);
    return fail(QLRT_RUNTIME_FAILURE, "compile: malformed result from the Python compiler");
  }
  g_compiles++;
  g_programs = (long)r->n;
  *out = r;
  return QLRT_OK;
}

static LiteRtStatus result_byte_code(LiteRtCompiledResult r, LiteRtParamIndex i, const void **code,
                                     size_t *size) {
  if (!r || !code || !size || i >= r->n) return QLRT_INVALID_ARGUMENT;
  *code = r->code[i];
  *size = r->size[i];
  return QLRT_OK;
}

static LiteRtStatus result_num_byte_code(LiteRtCompiledResult r, LiteRtParamIndex *n) {
  if (!r || !n) return QLRT_INVALID_ARGUMENT;
  *n = r->n;
  return QLRT_OK;
}

static LiteRtStatus result_call_info(LiteRtCompiledResult r, LiteRtParamIndex i, const void **info,
                                     size_t *size, LiteRtParamIndex *code_index) {
  if (!r || !info || !size || !code_index || i >= r->n) return QLRT_INVALID_ARGUMENT;
  *info = r->name[i];
  *size = r->name_len[i];
  *code_index = i;
  return QLRT_OK;
}

static LiteRtStatus result_num_calls(LiteRtCompiledResult r, LiteRtParamIndex *n) {
  if (!r || !n) return QLRT_INVALID_ARGUMENT;
  *n = r->n;
  return QLRT_OK;
}

static LiteRtStatus result_handle(LiteRtCompiledResult r, LiteRtParamIndex i,
                                  LiteRtJitExecutable *h) {
  (void)r;
  (void)i;
  if (h) *h = NULL;
  return QLRT_UNSUPPORTED; /* programs are bytecode in the model, run by the dispatch library */
}

/* ---- exports: the 2.3 symbol set, and the versioned table of later releases ------------- */
EXPORT LiteRtStatus LiteRtGetCompilerPluginVersion(QLrtApiVersion *v) { return get_version(v); }
EXPORT const char *LiteRtGetCompilerPluginSocManufacturer(void) { return soc_manufacturer(); }
EXPORT LiteRtStatus LiteRtCreateCompilerPlugin(const LiteRtCompilerContext *ctx,
                                               LiteRtCompilerPlugin *out,
                                               LiteRtEnvironmentOptions env,
                                               LiteRtOptions options) {
  return create_plugin(ctx, out, env, options);
}
EXPORT void LiteRtDestroyCompilerPlugin(LiteRtCompilerPlugin p) { destroy_plugin(p); }
EXPORT LiteRtStatus LiteRtGetCompilerPluginSupportedHardware(LiteRtCompilerPlugin p,
                                                             LiteRtHwAccelerators *hw) {
  return supported_hardware(p, hw);
}
EXPORT LiteRtStatus LiteRtGetNumCompilerPluginSupportedSocModels(LiteRtCompilerPlugin p,
                                                                 LiteRtParamIndex *n) {
  return num_soc_models(p, n);
}
EXPORT LiteRtStatus LiteRtGetCompilerPluginSupportedSocModel(LiteRtCompilerPlugin p,
                                                             LiteRtParamIndex i,
                                                             const char **name) {
  return soc_model(p, i, name);
}
EXPORT LiteRtStatus LiteRtGetCompilerPluginSDKVersion(LiteRtCompilerPlugin p, const char **v) {
  return sdk_version(p, v);
}
EXPORT LiteRtStatus LiteRtCompilerPluginCheckCompilerCompatibility(QLrtApiVersion v,
                                                                   LiteRtCompilerPlugin p,
                                                                   LiteRtEnvironmentOptions env,
                                                                   LiteRtOptions options,
                                                                   const char *soc) {
  return check_compatibility(v, p, env, options, soc);
}
EXPORT LiteRtStatus LiteRtCompilerPluginRegisterAllTransformations(LiteRtCompilerPlugin p,
                                                                   QLrtTransformation **t,
                                                                   LiteRtParamIndex *n) {
  return register_transformations(p, t, n);
}
EXPORT LiteRtStatus LiteRtCompilerPluginPartition(LiteRtCompilerPlugin p, const char *soc,
                                                  LiteRtSubgraph sg, LiteRtOpList selected) {
  return partition(p, soc, sg, selected);
}
EXPORT LiteRtStatus LiteRtCompilerPluginCompile(LiteRtCompilerPlugin p, const char *soc,
                                                LiteRtModel partitions,
                                                LiteRtCompiledResult *out) {
  return compile(p, soc, partitions, out);
}
EXPORT LiteRtStatus LiteRtCompiledResultNumByteCodeModules(LiteRtCompiledResult r,
                                                          LiteRtParamIndex *n) {
  return result_num_byte_code(r, n);
}
EXPORT LiteRtStatus LiteRtGetCompiledResultByteCode(LiteRtCompiledResult r, LiteRtParamIndex i,
                                                    const void **code, size_t *size) {
  return result_byte_code(r, i, code, size);
}
EXPORT LiteRtStatus LiteRtGetNumCompiledResultCalls(LiteRtCompiledResult r, LiteRtParamIndex *n) {
  return result_num_calls(r, n);
}
EXPORT LiteRtStatus LiteRtGetCompiledResultCallInfo(LiteRtCompiledResult r, LiteRtParamIndex i,
                                                    const void **info, size_t *size,
                                                    LiteRtParamIndex *code_index) {
  return result_call_info(r, i, info, size, code_index);
}
EXPORT LiteRtStatus LiteRtGetCompiledResultHandle(LiteRtCompiledResult r, LiteRtParamIndex i,
                                                  LiteRtJitExecutable *h) {
  return result_handle(r, i, h);
}
EXPORT void LiteRtDestroyCompiledResult(LiteRtCompiledResult r) { destroy_result(r); }

static const QLrtCompilerPluginInterface kInterface = {
    {(uint16_t)sizeof(QLrtCompilerPluginInterface), QLRT_PLUGIN_ABI_MAJOR, QLRT_PLUGIN_ABI_MINOR,
     0},
    get_version,
    soc_manufacturer,
    create_plugin,
    destroy_plugin,
    supported_hardware,
    num_soc_models,
    soc_model,
    partition,
    compile,
    destroy_result,
    result_byte_code,
    result_num_byte_code,
    result_call_info,
    result_num_calls,
    register_transformations,
    sdk_version,
    result_handle,
    check_compatibility,
};

EXPORT LiteRtStatus LiteRtCompilerPluginQueryInterface(int interface_id,
                                                       QLrtApiVersion runtime_version,
                                                       const void **interface) {
  if (!interface) return QLRT_INVALID_ARGUMENT;
  *interface = NULL;
  if (runtime_version.major < QLRT_PLUGIN_ABI_MAJOR) return QLRT_UNSUPPORTED;
  if (interface_id != QLRT_PLUGIN_INTERFACE_BASIC) return QLRT_UNSUPPORTED;
  *interface = &kInterface;
  return QLRT_OK;
}

/* ABI checks (LP64): a negative array size stops the build. */
typedef char qlrt_check_plugin_iface[(sizeof(void *) != 8 ||
                                      sizeof(QLrtCompilerPluginInterface) == 152) ? 1 : -1];
typedef char qlrt_check_per_tensor[(sizeof(void *) != 8 || sizeof(QLrtPerTensorQuant) == 16) ? 1 : -1];
typedef char qlrt_check_per_channel[(sizeof(void *) != 8 || sizeof(QLrtPerChannelQuant) == 32) ? 1 : -1];
