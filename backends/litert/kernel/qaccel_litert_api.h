/* qaccel's own declarations of the subset of the LiteRT C API (libLiteRt.so,
 * ai-edge-litert 2.3.0, symbol version VERS_1.0) that we use.  The kernel library does not
 * link against LiteRT: it resolves these functions at run time (qaccel_litert_bind), so it
 * builds where LiteRT is absent; a host program may link libLiteRt.so and bind to it.  Written from
 * the public headers' documented signatures; layouts checked against the
 * static_asserts upstream (LiteRtRankedTensorType = 72 bytes, LiteRtEnvOption
 * = 24 bytes).  Everything here is plain C ABI. */
#ifndef QACCEL_LITERT_API_H_
#define QACCEL_LITERT_API_H_

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- opaque handles ---------------------------------------------------- */
typedef struct LiteRtEnvironmentT *LiteRtEnvironment;
typedef struct LiteRtModelT *LiteRtModel;
typedef struct LiteRtOptionsT *LiteRtOptions;
typedef struct LiteRtOpaqueOptionsT *LiteRtOpaqueOptions;
typedef struct LiteRtCompiledModelT *LiteRtCompiledModel;
typedef struct LiteRtTensorBufferT *LiteRtTensorBuffer;
typedef struct LiteRtTensorBufferRequirementsT *LiteRtTensorBufferRequirements;
typedef size_t LiteRtParamIndex;

/* ---- status / enums (subset) --------------------------------------------- */
typedef int LiteRtStatus; /* 0 == ok; enum in upstream, int-sized */
enum {
  QLRT_OK = 0,
  QLRT_INVALID_ARGUMENT = 1,
  QLRT_RUNTIME_FAILURE = 3,
  QLRT_UNSUPPORTED = 5,
  QLRT_NOT_FOUND = 6,
  QLRT_WRONG_VERSION = 8,
};

typedef int LiteRtHwAcceleratorSet;
enum { QLRT_HW_CPU = 1, QLRT_HW_GPU = 2, QLRT_HW_NPU = 4 };

enum { /* LiteRtElementType values == TfLiteType values */
  QLRT_ELEM_INT32 = 2,
  QLRT_ELEM_UINT8 = 3,
  QLRT_ELEM_INT8 = 9,
};

enum { QLRT_LOCK_READ = 0, QLRT_LOCK_WRITE = 1, QLRT_LOCK_READWRITE = 2 };
enum { QLRT_TENSOR_BUFFER_HOST_MEMORY = 1 };

#define QLRT_MAX_RANK 8
typedef struct {
  unsigned int rank : 7;
  unsigned int has_strides : 1;
  int32_t dimensions[QLRT_MAX_RANK];
  uint32_t strides[QLRT_MAX_RANK];
} LiteRtLayout;

typedef struct {
  int element_type; /* LiteRtElementType */
  LiteRtLayout layout;
} LiteRtRankedTensorType;

/* ---- environment ---------------------------------------------------------- */
enum { QLRT_ANY_NONE = 0, QLRT_ANY_BOOL = 1, QLRT_ANY_INT = 2, QLRT_ANY_STRING = 8 };
typedef struct {
  int type; /* LiteRtAnyType */
  union {
    bool bool_value;
    int64_t int_value;
    double real_value;
    const char *str_value;
    const void *ptr_value;
  } v; /* named: C99 has no anonymous unions */
} LiteRtAny;
enum {
  QLRT_ENV_COMPILER_PLUGIN_DIR = 0,
  QLRT_ENV_DISPATCH_LIBRARY_DIR = 1,
};
typedef struct {
  int tag; /* LiteRtEnvOptionTag */
  LiteRtAny value;
} LiteRtEnvOption;

LiteRtStatus LiteRtCreateEnvironment(int num_options, const LiteRtEnvOption *options,
                                     LiteRtEnvironment *env);
void LiteRtDestroyEnvironment(LiteRtEnvironment env);

/* ---- model ----------------------------------------------------------------- */
LiteRtStatus LiteRtCreateModelFromFile(LiteRtEnvironment env, const char *path, LiteRtModel *model);
LiteRtStatus LiteRtCreateModelFromBuffer(LiteRtEnvironment env, const void *data, size_t size,
                                         LiteRtModel *model);
void LiteRtDestroyModel(LiteRtModel model);

/* ---- custom op kernel ------------------------------------------------------- */
/* One kernel struct per (op name, version).  The SAME user_data is passed for
 * every node using that op name: Init(custom_options) is called once per node
 * at compiled-model creation, Run() gets no node identity. Return values of
 * GetOutputLayouts and Run are ignored by 2.3.0 (errors are NOT propagated). */
typedef struct {
  LiteRtStatus (*Init)(void *user_data, const void *init_data, size_t init_data_size);
  LiteRtStatus (*GetOutputLayouts)(void *user_data, size_t num_inputs,
                                   const LiteRtLayout *input_layouts, size_t num_outputs,
                                   LiteRtLayout *output_layouts);
  LiteRtStatus (*Run)(void *user_data, size_t num_inputs, const LiteRtTensorBuffer *inputs,
                      size_t num_outputs, LiteRtTensorBuffer *outputs);
  LiteRtStatus (*Destroy)(void *user_data);
} LiteRtCustomOpKernel;

/* ---- options ------------------------------------------------------------------ */
LiteRtStatus LiteRtCreateOptions(LiteRtOptions *options);
void LiteRtDestroyOptions(LiteRtOptions options);
LiteRtStatus LiteRtSetOptionsHardwareAccelerators(LiteRtOptions options, LiteRtHwAcceleratorSet hw);
LiteRtStatus LiteRtAddOpaqueOptions(LiteRtOptions options, LiteRtOpaqueOptions opaque);
LiteRtStatus LiteRtAddCustomOpKernelOption(LiteRtOptions options, const char *custom_op_name,
                                           int custom_op_version,
                                           const LiteRtCustomOpKernel *kernel,
                                           void *kernel_user_data);
/* Opaque options: identifier + payload + destructor. CPU options = identifier
 * "xnnpack", payload = NUL-terminated TOML text such as
 * "kernel_mode = \"reference\"\nnum_threads = 1\n". */
LiteRtStatus LiteRtCreateOpaqueOptions(const char *identifier, void *payload,
                                       void (*payload_destructor)(void *),
                                       LiteRtOpaqueOptions *opaque);
void LiteRtDestroyOpaqueOptions(LiteRtOpaqueOptions opaque);

/* ---- compiled model -------------------------------------------------------------- */
LiteRtStatus LiteRtCreateCompiledModel(LiteRtEnvironment env, LiteRtModel model,
                                       LiteRtOptions options, LiteRtCompiledModel *cm);
void LiteRtDestroyCompiledModel(LiteRtCompiledModel cm);
LiteRtStatus LiteRtRunCompiledModel(LiteRtCompiledModel cm, LiteRtParamIndex signature_index,
                                    size_t num_inputs, LiteRtTensorBuffer *inputs,
                                    size_t num_outputs, LiteRtTensorBuffer *outputs);

/* ---- tensor buffers ----------------------------------------------------------------- */
typedef void (*LiteRtHostMemoryDeallocator)(void *addr);
LiteRtStatus LiteRtCreateTensorBufferFromHostMemory(const LiteRtRankedTensorType *type,
                                                    void *addr, size_t size,
                                                    LiteRtHostMemoryDeallocator dealloc,
                                                    LiteRtTensorBuffer *buffer);
LiteRtStatus LiteRtCreateManagedTensorBuffer(LiteRtEnvironment env, int buffer_type,
                                             const LiteRtRankedTensorType *type,
                                             size_t size, LiteRtTensorBuffer *buffer);
void LiteRtDestroyTensorBuffer(LiteRtTensorBuffer buffer);
LiteRtStatus LiteRtGetTensorBufferTensorType(LiteRtTensorBuffer buffer, LiteRtRankedTensorType *t);
LiteRtStatus LiteRtGetTensorBufferSize(LiteRtTensorBuffer buffer, size_t *size);
LiteRtStatus LiteRtGetTensorBufferPackedSize(LiteRtTensorBuffer buffer, size_t *size);
LiteRtStatus LiteRtLockTensorBuffer(LiteRtTensorBuffer buffer, void **host_addr, int lock_mode);
LiteRtStatus LiteRtUnlockTensorBuffer(LiteRtTensorBuffer buffer);

#ifdef __cplusplus
}
#endif
#endif /* QACCEL_LITERT_API_H_ */
