/* The part of TensorFlow Lite's C delegate interface (tensorflow/lite/core/c/common.h) that the
 * qaccel delegate uses, declared here from the layouts of ai-edge-litert 2.3.0 on LP64 Linux
 * (the wheel ships no headers).  Only leading members are declared where LiteRT owns the
 * struct and hands us a pointer; the _Static_asserts pin every offset we read or write. */
#ifndef QACCEL_TFLITE_API_H_
#define QACCEL_TFLITE_API_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { kTfLiteOk = 0, kTfLiteError = 1, kTfLiteDelegateError = 2 } TfLiteStatus;

/* TfLiteType values the delegate distinguishes. */
enum {
  kTfLiteNoType = 0, kTfLiteFloat32 = 1, kTfLiteInt32 = 2, kTfLiteUInt8 = 3, kTfLiteInt64 = 4,
  kTfLiteBool = 6, kTfLiteInt16 = 7, kTfLiteInt8 = 9
};
/* TfLiteAllocationType values. */
enum { kTfLiteMemNone = 0, kTfLiteMmapRo = 1, kTfLiteArenaRw = 2, kTfLitePersistentRo = 5 };
enum { kTfLiteNoQuantization = 0, kTfLiteAffineQuantization = 1 };
/* TfLiteDelegateFlags */
enum { kTfLiteDelegateFlagsAllowDynamicTensors = 1 };
/* BuiltinOperator_DELEGATE: the code LiteRT gives a delegate kernel's node. */
enum { kTfLiteBuiltinDelegate = 51 };

typedef struct TfLiteIntArray {
  int size;
  int data[];
} TfLiteIntArray;

typedef struct TfLiteFloatArray {
  int size;
  float data[];
} TfLiteFloatArray;

typedef struct TfLiteQuantizationParams {
  float scale;
  int32_t zero_point;
} TfLiteQuantizationParams;

typedef struct TfLiteAffineQuantization {
  TfLiteFloatArray *scale;
  TfLiteIntArray *zero_point;
  int32_t quantized_dimension;
} TfLiteAffineQuantization;

typedef struct TfLiteQuantization {
  int type; /* kTfLiteNoQuantization / kTfLiteAffineQuantization */
  void *params;
} TfLiteQuantization;

struct TfLiteDelegate;

typedef struct TfLiteTensor {
  int type; /* TfLiteType */
  void *data;
  TfLiteIntArray *dims;
  TfLiteQuantizationParams params;
  int allocation_type;
  size_t bytes;
  const void *allocation;
  const char *name;
  struct TfLiteDelegate *delegate;
  int buffer_handle;
  bool data_is_stale;
  bool is_variable;
  TfLiteQuantization quantization;
  void *sparsity;
  const TfLiteIntArray *dims_signature;
} TfLiteTensor;

typedef struct TfLiteNode {
  TfLiteIntArray *inputs;
  TfLiteIntArray *outputs;
  TfLiteIntArray *intermediates;
  TfLiteIntArray *temporaries;
  void *user_data;
  void *builtin_data;
  const void *custom_initial_data;
  int custom_initial_data_size;
  struct TfLiteDelegate *delegate;
  bool might_have_side_effect;
} TfLiteNode;

struct TfLiteContext;

typedef struct TfLiteRegistration {
  void *(*init)(struct TfLiteContext *context, const char *buffer, size_t length);
  void (*free)(struct TfLiteContext *context, void *buffer);
  TfLiteStatus (*prepare)(struct TfLiteContext *context, TfLiteNode *node);
  TfLiteStatus (*invoke)(struct TfLiteContext *context, TfLiteNode *node);
  const char *(*profiling_string)(const struct TfLiteContext *context, const TfLiteNode *node);
  int32_t builtin_code;
  const char *custom_name;
  int version;
  void *registration_external;
  void *async_kernel;
  uint64_t inplace_operator;
} TfLiteRegistration;

struct TfLiteDelegateParams;

/* The leading members of TfLiteContext (LiteRT allocates it). */
typedef struct TfLiteContext {
  size_t tensors_size;
  TfLiteStatus (*GetExecutionPlan)(struct TfLiteContext *context, TfLiteIntArray **plan);
  TfLiteTensor *tensors;
  void *impl_;
  TfLiteStatus (*ResizeTensor)(struct TfLiteContext *context, TfLiteTensor *tensor,
                               TfLiteIntArray *new_size);
  void (*ReportError)(struct TfLiteContext *context, const char *format, ...);
  TfLiteStatus (*AddTensors)(struct TfLiteContext *context, int n, int *first_new_index);
  TfLiteStatus (*GetNodeAndRegistration)(struct TfLiteContext *context, int node_index,
                                         TfLiteNode **node, TfLiteRegistration **registration);
  TfLiteStatus (*ReplaceNodeSubsetsWithDelegateKernels)(struct TfLiteContext *context,
                                                        TfLiteRegistration registration,
                                                        const TfLiteIntArray *nodes_to_replace,
                                                        struct TfLiteDelegate *delegate);
  int recommended_num_threads;
  void *GetExternalContext;
  void *SetExternalContext;
  bool allow_fp32_relax_to_fp16;
  void *profiler;
  void *AllocatePersistentBuffer;
  void *AllocateBufferForEval;
  void *RequestScratchBufferInArena;
  void *GetScratchBuffer;
  void *ResizeTensorExplicit;
  /* The kernels LiteRT would make of `nodes_to_replace` (it owns the array). */
  TfLiteStatus (*PreviewDelegatePartitioning)(struct TfLiteContext *context,
                                              const TfLiteIntArray *nodes_to_replace,
                                              struct TfLiteDelegateParams **partition_params,
                                              int *num_partitions);
  void *GetTensor;
  void *GetEvalTensor;
  void *GetModelMetadata;
  /* Another subgraph's context, switched to its delegate context (GetExecutionPlan and
   * GetNodeAndRegistration work on it) until ReleaseSubgraphContext. */
  TfLiteStatus (*AcquireSubgraphContext)(struct TfLiteContext *context, int subgraph_index,
                                         struct TfLiteContext **acquired_context);
  TfLiteStatus (*ReleaseSubgraphContext)(struct TfLiteContext *context, int subgraph_index);
} TfLiteContext;

typedef struct TfLiteDelegate {
  void *data_;
  TfLiteStatus (*Prepare)(TfLiteContext *context, struct TfLiteDelegate *delegate);
  void *CopyFromBufferHandle;
  void *CopyToBufferHandle;
  void *FreeBufferHandle;
  int64_t flags;
  void *opaque_delegate_builder;
} TfLiteDelegate;

/* What LiteRT passes to a delegate kernel's init (as `buffer`). */
typedef struct TfLiteDelegateParams {
  TfLiteDelegate *delegate;
  TfLiteIntArray *nodes_to_replace;
  TfLiteIntArray *input_tensors;
  TfLiteIntArray *output_tensors;
} TfLiteDelegateParams;


/* ---- builtin_data of the operators whose options qaccel reads (builtin_op_data.h) ---------- */
/* TfLitePadding: 0 unknown, 1 SAME, 2 VALID (the schema's Padding is SAME 0, VALID 1);
 * TfLiteFusedActivation: the schema's numbers (0 none .. 5 sign bit), and 6 sigmoid. */
/* STABLEHLO_COMPOSITE: its decomposition is subgraph `subgraph_index`. */
typedef struct { const char *name; int32_t subgraph_index, version; const uint8_t *attributes;
                 size_t attributes_size; } QTfLiteStablehloCompositeParams;
typedef struct { int padding, stride_width, stride_height, activation, dilation_width_factor,
                 dilation_height_factor; } QTfLiteConvParams;
typedef struct { int padding, stride_width, stride_height, filter_width, filter_height,
                 activation; int computed[4]; } QTfLitePoolParams;
typedef struct { int padding, stride_width, stride_height, depth_multiplier, activation,
                 dilation_width_factor, dilation_height_factor; } QTfLiteDepthwiseConvParams;
typedef struct { int activation, weights_format; bool keep_num_dims, asymmetric_quantize_inputs;
               } QTfLiteFullyConnectedParams;
typedef struct { float beta; } QTfLiteSoftmaxParams;
typedef struct { int axis, activation; } QTfLiteConcatenationParams;
typedef struct { int activation; bool pot_scale_int16; } QTfLiteAddSubParams;
typedef struct { int activation; } QTfLiteActivationParams; /* MUL, DIV, L2_NORMALIZATION */
typedef struct { bool adj_x, adj_y, asymmetric_quantize_inputs; } QTfLiteBatchMatMulParams;
typedef struct { bool align_corners, half_pixel_centers; } QTfLiteResizeParams;
typedef struct { int32_t shape[8]; int num_dimensions; } QTfLiteReshapeParams;
typedef struct { int block_size; } QTfLiteBlockSizeParams; /* SPACE_TO_DEPTH, DEPTH_TO_SPACE */
typedef struct { int in_data_type, out_data_type; } QTfLiteCastParams;
typedef struct { int axis, batch_dims; } QTfLiteGatherParams;
typedef struct { bool keep_dims; } QTfLiteReducerParams;
typedef struct { int num_splits; } QTfLiteSplitParams; /* SPLIT, SPLIT_V */
typedef struct { int32_t squeeze_dims[8]; int num_squeeze_dims; } QTfLiteSqueezeParams;
typedef struct { int begin_mask, end_mask, ellipsis_mask, new_axis_mask, shrink_axis_mask;
                 bool offset; } QTfLiteStridedSliceParams;
typedef struct { int output_type; } QTfLiteTypeParams; /* ARG_MAX, ARG_MIN, SHAPE */
typedef struct { int padding, stride_width, stride_height, activation; } QTfLiteTransposeConvParams;
typedef struct { int values_count, axis; } QTfLitePackParams;
typedef struct { int axis; } QTfLiteOneHotParams;
typedef struct { int num, axis; } QTfLiteUnpackParams;
typedef struct { float alpha; } QTfLiteLeakyReluParams;
typedef struct { int mode; } QTfLiteMirrorPaddingParams; /* 1 REFLECT, 2 SYMMETRIC */
typedef struct { bool exclusive, reverse; } QTfLiteCumsumParams;
typedef struct { bool approximate; } QTfLiteGeluParams;

_Static_assert(sizeof(QTfLiteConvParams) == 24, "TfLiteConvParams");
_Static_assert(sizeof(QTfLitePoolParams) == 40, "TfLitePoolParams");
_Static_assert(sizeof(QTfLiteDepthwiseConvParams) == 28, "TfLiteDepthwiseConvParams");
_Static_assert(sizeof(QTfLiteFullyConnectedParams) == 12, "TfLiteFullyConnectedParams");
_Static_assert(sizeof(QTfLiteReshapeParams) == 36, "TfLiteReshapeParams");
_Static_assert(sizeof(QTfLiteSqueezeParams) == 36, "TfLiteSqueezeParams");
_Static_assert(sizeof(QTfLiteStridedSliceParams) == 24, "TfLiteStridedSliceParams");

_Static_assert(sizeof(void *) == 8 && sizeof(size_t) == 8, "LP64 layouts");
_Static_assert(sizeof(TfLiteTensor) == 112, "TfLiteTensor is 112 bytes");
_Static_assert(offsetof(TfLiteTensor, dims) == 16, "TfLiteTensor.dims");
_Static_assert(offsetof(TfLiteTensor, bytes) == 40, "TfLiteTensor.bytes");
_Static_assert(offsetof(TfLiteTensor, quantization) == 80, "TfLiteTensor.quantization");
_Static_assert(sizeof(TfLiteNode) == 80, "TfLiteNode is 80 bytes");
_Static_assert(offsetof(TfLiteNode, builtin_data) == 40, "TfLiteNode.builtin_data");
_Static_assert(sizeof(TfLiteRegistration) == 88, "TfLiteRegistration is 88 bytes");
_Static_assert(offsetof(TfLiteRegistration, builtin_code) == 40, "TfLiteRegistration.builtin_code");
_Static_assert(offsetof(TfLiteContext, ReportError) == 40, "TfLiteContext.ReportError");
_Static_assert(offsetof(TfLiteContext, GetNodeAndRegistration) == 56,
               "TfLiteContext.GetNodeAndRegistration");
_Static_assert(offsetof(TfLiteContext, ReplaceNodeSubsetsWithDelegateKernels) == 64,
               "TfLiteContext.ReplaceNodeSubsetsWithDelegateKernels");
_Static_assert(sizeof(TfLiteDelegate) == 56, "TfLiteDelegate is 56 bytes");
_Static_assert(offsetof(TfLiteContext, PreviewDelegatePartitioning) == 152,
               "TfLiteContext.PreviewDelegatePartitioning");

_Static_assert(offsetof(TfLiteContext, AcquireSubgraphContext) == 184,
               "TfLiteContext.AcquireSubgraphContext");
_Static_assert(offsetof(TfLiteContext, ReleaseSubgraphContext) == 192,
               "TfLiteContext.ReleaseSubgraphContext");
_Static_assert(sizeof(QTfLiteStablehloCompositeParams) == 32, "TfLiteStablehloCompositeParams");

#endif /* QACCEL_TFLITE_API_H_ */
