/* qaccel's own declarations of the LiteRT compiler plugin ABI that libLiteRtCompilerPlugin_Qaccel
 * implements, as the ai-edge-litert 2.3.0 wheel (and apply_plugin_main) expects it, written from
 * the documented layout of LiteRT's public headers (litert/vendors/c/litert_compiler_plugin.h,
 * litert/c/internal/litert_compiler_context.h) and checked against the wheel: 18 exported
 * functions, plugin API version exactly 0.1.0, a four-parameter create.  The next release looks
 * up LiteRtCompilerPluginQueryInterface instead and reads the same 18 functions from a
 * versioned table (QLrtCompilerPluginInterface).
 *
 * The plugin links no LiteRT: everything it asks about a model goes through the
 * LiteRtCompilerContext table handed to create, a struct of function pointers behind an ABI
 * header.  We read the slots we use by byte offset (the 2.3.0 table has 1408 bytes, major 1)
 * and check the header's size and major version first. */
#ifndef QACCEL_PLUGIN_API_H_
#define QACCEL_PLUGIN_API_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "qaccel_dispatch_api.h" /* QLrtApiVersion, QLrtAbiHeader, LiteRtEnvironmentOptions */
#include "qaccel_litert_api.h"   /* status, LiteRtModel, LiteRtOptions, LiteRtRankedTensorType */

typedef struct LiteRtSubgraphT *LiteRtSubgraph;
typedef struct LiteRtOpT *LiteRtOp;
typedef struct LiteRtTensorT *LiteRtTensor;
typedef struct LiteRtWeightsT *LiteRtWeights;
typedef struct LiteRtOpListT *LiteRtOpList;
typedef struct LiteRtCompilerPluginT *LiteRtCompilerPlugin;
typedef struct LiteRtCompiledResultT *LiteRtCompiledResult;
typedef struct LiteRtCompilerContextT LiteRtCompilerContext;
typedef void *LiteRtJitExecutable;
typedef int LiteRtHwAccelerators;

typedef struct {
  float scale;
  int64_t zero_point;
} QLrtPerTensorQuant; /* LiteRtQuantizationPerTensor */

typedef struct {
  int32_t quantized_dimension;
  uint64_t num_channels;
  float *scales;
  int64_t *zero_points;
} QLrtPerChannelQuant; /* LiteRtQuantizationPerChannel */

typedef struct {
  size_t bytecode_alignment;
} QLrtSerializationOptions; /* LiteRtModelSerializationOptions */

typedef struct {
  void *pattern;
  const char *name;
  size_t benefit;
} QLrtTransformation; /* LiteRtTransformation (we register none) */

enum { QLRT_TENSOR_RANKED = 0, QLRT_TENSOR_UNRANKED = 1 };
enum { QLRT_QUANT_NONE = 0, QLRT_QUANT_PER_TENSOR = 1, QLRT_QUANT_PER_CHANNEL = 2 };

/* The LiteRtCompilerContext: ABI header, then function pointers (8 bytes each on LP64). */
enum {
  QLRT_CC_MAJOR = 1,
  QLRT_CC_MIN_BYTES = 1048, /* through serialize_model_with_signatures */
  QLRT_CC_NUM_MODEL_SUBGRAPHS = 8,
  QLRT_CC_MODEL_SUBGRAPH = 16,
  QLRT_CC_NUM_SUBGRAPH_OPS = 24,
  QLRT_CC_SUBGRAPH_OP = 32,
  QLRT_CC_NUM_SUBGRAPH_INPUTS = 40,
  QLRT_CC_SUBGRAPH_INPUT = 48,
  QLRT_CC_NUM_SUBGRAPH_OUTPUTS = 56,
  QLRT_CC_SUBGRAPH_OUTPUT = 64,
  QLRT_CC_OP_CODE = 72,
  QLRT_CC_CUSTOM_CODE = 80,
  QLRT_CC_NUM_OP_INPUTS = 88,
  QLRT_CC_OP_INPUT = 96,
  QLRT_CC_NUM_OP_OUTPUTS = 104,
  QLRT_CC_OP_OUTPUT = 112,
  QLRT_CC_TENSOR_NAME = 120,
  QLRT_CC_TENSOR_TYPE_ID = 136,
  QLRT_CC_RANKED_TENSOR_TYPE = 144,
  QLRT_CC_QUANTIZATION_TYPE_ID = 160,
  QLRT_CC_PER_TENSOR_QUANT = 168,
  QLRT_CC_PER_CHANNEL_QUANT = 176,
  QLRT_CC_TENSOR_WEIGHTS = 208,
  QLRT_CC_WEIGHTS_BYTES = 224,
  QLRT_CC_PUSH_OP = 264,
  QLRT_CC_GET_OPAQUE_OPTIONS = 272,       /* LiteRtGetOpaqueOptions */
  QLRT_CC_FIND_OPAQUE_OPTIONS_DATA = 280, /* LiteRtFindOpaqueOptionsData */
  QLRT_CC_CUSTOM_OPTIONS = 1032,
  QLRT_CC_SERIALIZE_MODEL = 1040,
};

typedef LiteRtStatus (*QLrtGetCount)(void *, LiteRtParamIndex *);
typedef LiteRtStatus (*QLrtGetItem)(void *, LiteRtParamIndex, void **);
typedef LiteRtStatus (*QLrtGetOpCode)(LiteRtOp, int *);
typedef LiteRtStatus (*QLrtGetString)(void *, const char **);
typedef LiteRtStatus (*QLrtGetInt)(void *, int *);
typedef LiteRtStatus (*QLrtGetRanked)(LiteRtTensor, LiteRtRankedTensorType *);
typedef LiteRtStatus (*QLrtGetPerTensor)(LiteRtTensor, QLrtPerTensorQuant *);
typedef LiteRtStatus (*QLrtGetPerChannel)(LiteRtTensor, QLrtPerChannelQuant *);
typedef LiteRtStatus (*QLrtGetWeights)(LiteRtTensor, LiteRtWeights *);
typedef LiteRtStatus (*QLrtGetWeightsBytes)(LiteRtWeights, const void **, size_t *);
typedef LiteRtStatus (*QLrtPushOp)(LiteRtOpList, LiteRtOp, LiteRtParamIndex);
typedef LiteRtStatus (*QLrtGetOpaqueOptions)(LiteRtOptions, LiteRtOpaqueOptions *);
typedef LiteRtStatus (*QLrtFindOpaqueOptionsData)(LiteRtOpaqueOptions, const char *, void **);
typedef LiteRtStatus (*QLrtGetCustomOptions)(LiteRtOp, const uint8_t **, int32_t *);
typedef LiteRtStatus (*QLrtSerializeModel)(LiteRtModel, uint8_t **, size_t *, size_t *, bool,
                                           char **, LiteRtParamIndex, QLrtSerializationOptions);
/* Builtin option getters by the type of their result. */
typedef LiteRtStatus (*QLrtOptU32)(LiteRtOp, uint32_t *);
typedef LiteRtStatus (*QLrtOptI32)(LiteRtOp, int32_t *);
typedef LiteRtStatus (*QLrtOptBool)(LiteRtOp, bool *);
typedef LiteRtStatus (*QLrtOptF32)(LiteRtOp, float *);
typedef LiteRtStatus (*QLrtOptVec)(LiteRtOp, const int32_t **, int32_t *);

/* The plugin's exports, as the next release's versioned table lists them. */
typedef struct {
  QLrtAbiHeader abi_header;
  LiteRtStatus (*get_compiler_plugin_version)(QLrtApiVersion *);
  const char *(*get_compiler_plugin_soc_manufacturer)(void);
  LiteRtStatus (*create_compiler_plugin)(const LiteRtCompilerContext *, LiteRtCompilerPlugin *,
                                         LiteRtEnvironmentOptions, LiteRtOptions);
  void (*destroy_compiler_plugin)(LiteRtCompilerPlugin);
  LiteRtStatus (*get_compiler_plugin_supported_hardware)(LiteRtCompilerPlugin,
                                                         LiteRtHwAccelerators *);
  LiteRtStatus (*get_num_compiler_plugin_supported_models)(LiteRtCompilerPlugin,
                                                           LiteRtParamIndex *);
  LiteRtStatus (*get_compiler_plugin_supported_soc_model)(LiteRtCompilerPlugin, LiteRtParamIndex,
                                                          const char **);
  LiteRtStatus (*compiler_plugin_partition)(LiteRtCompilerPlugin, const char *, LiteRtSubgraph,
                                            LiteRtOpList);
  LiteRtStatus (*compiler_plugin_compile)(LiteRtCompilerPlugin, const char *, LiteRtModel,
                                          LiteRtCompiledResult *);
  void (*destroy_compiled_result)(LiteRtCompiledResult);
  LiteRtStatus (*get_compiled_result_byte_code)(LiteRtCompiledResult, LiteRtParamIndex,
                                                const void **, size_t *);
  LiteRtStatus (*get_compiled_result_num_byte_code)(LiteRtCompiledResult, LiteRtParamIndex *);
  LiteRtStatus (*get_compiled_result_call_info)(LiteRtCompiledResult, LiteRtParamIndex,
                                                const void **, size_t *, LiteRtParamIndex *);
  LiteRtStatus (*get_num_compiled_result_calls)(LiteRtCompiledResult, LiteRtParamIndex *);
  LiteRtStatus (*register_all_transformations)(LiteRtCompilerPlugin, QLrtTransformation **,
                                               LiteRtParamIndex *);
  LiteRtStatus (*get_compiler_plugin_sdk_version)(LiteRtCompilerPlugin, const char **);
  LiteRtStatus (*get_compiled_result_handle)(LiteRtCompiledResult, LiteRtParamIndex,
                                             LiteRtJitExecutable *);
  LiteRtStatus (*check_compiler_compatibility)(QLrtApiVersion, LiteRtCompilerPlugin,
                                               LiteRtEnvironmentOptions, LiteRtOptions,
                                               const char *);
} QLrtCompilerPluginInterface;

enum {
  QLRT_PLUGIN_INTERFACE_BASIC = 0,
  QLRT_PLUGIN_ABI_MAJOR = 1,
  QLRT_PLUGIN_ABI_MINOR = 0,
};

#endif /* QACCEL_PLUGIN_API_H_ */
