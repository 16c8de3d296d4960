/* qaccel's own declarations of the LiteRT vendor dispatch ABI that libLiteRtDispatch_Qaccel
 * implements, as the ai-edge-litert 2.3.0 wheel expects it.  Written from the documented
 * layout of LiteRT's public headers (litert/vendors/c/litert_dispatch.h, litert_dispatch_api.h,
 * litert/c/internal/litert_runtime_context.h) and checked against the wheel itself: its
 * dispatch library (vendors/intel_openvino/dispatch) fills a 56-byte LiteRtDispatchApi with
 * version 0.1.0 and points it at a table of 26 functions; the runtime loads the library from
 * the environment's dispatch library directory (any libLiteRtDispatch*.so in it), calls its
 * export LiteRtDispatchGetApi, and refuses any version but its own (0.1.0).  Later releases
 * call LiteRtDispatchQueryInterface instead (declared at the end); the library exports both,
 * with the same function table behind them.
 *
 * The dispatch library links no LiteRT: every LiteRT function it calls comes from the
 * LiteRtRuntimeContext table the runtime passes to initialize and to the create functions (the
 * Python runtime exports no LiteRT symbol at all).  That table starts with an ABI header
 * (struct size, major version 1); we declare the prefix we use and check the header at run
 * time.  Enums are int-sized, handles are pointers: everything here is plain C ABI.  */
#ifndef QACCEL_DISPATCH_API_H_
#define QACCEL_DISPATCH_API_H_

#include <stddef.h>
#include <stdint.h>

#include "qaccel_litert_api.h" /* status, handles, LiteRtRankedTensorType */

#ifdef __cplusplus
extern "C" {
#endif

/* The version the runtime accepts (LITERT_API_VERSION_{MAJOR,MINOR,PATCH} of the wheel). */
enum { QLRT_API_VERSION_MAJOR = 0, QLRT_API_VERSION_MINOR = 1, QLRT_API_VERSION_PATCH = 0 };

typedef struct {
  int major, minor, patch;
} QLrtApiVersion;

/* First member of LiteRT's ABI-stable structs. */
typedef struct {
  uint16_t struct_size;   /* bytes of the whole struct */
  uint16_t major_version; /* layout generation */
  uint16_t minor_version; /* members appended */
  uint16_t reserved;
} QLrtAbiHeader;

enum { QLRT_DISPATCH_CAPABILITIES_BASIC = 1 };
enum { QLRT_EXECUTABLE_ML_MODEL = 2 }; /* bytecode in the model file (DISPATCH_OP) */
enum { QLRT_ERROR_UNSUPPORTED = 5 };
enum { /* LiteRtElementType (== TfLiteType) */
  QLRT_ELEM_FLOAT32 = 1, QLRT_ELEM_INT64 = 4, QLRT_ELEM_BOOL = 6, QLRT_ELEM_INT16 = 7,
  QLRT_ELEM_FLOAT16 = 10, QLRT_ELEM_FLOAT64 = 11, QLRT_ELEM_UINT32 = 16, QLRT_ELEM_UINT16 = 17,
};

typedef struct LiteRtDispatchDeviceContextT *LiteRtDispatchDeviceContext;
typedef struct LiteRtDispatchInvocationContextT *LiteRtDispatchInvocationContext;
typedef struct LiteRtDispatchMetricsT *LiteRtDispatchMetrics;
typedef struct LiteRtEnvironmentOptionsT *LiteRtEnvironmentOptions;
typedef uint64_t LiteRtTensorBufferHandle;

/* Where an executable's bytecode lies: base_addr + offset, size bytes (fd: -1 or the model
 * file's descriptor).  Newer runtimes append members; we read these four. */
typedef struct {
  int fd;
  const void *base_addr;
  size_t offset;
  size_t size;
} QLrtMemBuffer;

/* The prefix of LiteRtRuntimeContext that we call (byte offsets on LP64 in comments). */
typedef void (*QLrtUnusedFn)(void);
typedef struct {
  QLrtAbiHeader abi_header; /* 0 */
  LiteRtStatus (*create_tensor_buffer_requirements)(      /* 8 */
      int num_types, const int *types, size_t buffer_size, int num_strides,
      const uint32_t *strides, LiteRtTensorBufferRequirements *requirements);
  QLrtUnusedFn unused_16_to_176[21];                      /* 16 .. 176 */
  LiteRtStatus (*get_tensor_buffer_type)(LiteRtTensorBuffer buffer, int *type); /* 184 */
  LiteRtStatus (*get_tensor_buffer_tensor_type)(LiteRtTensorBuffer buffer,
                                                LiteRtRankedTensorType *type); /* 192 */
  QLrtUnusedFn get_tensor_buffer_size;                    /* 200 */
  LiteRtStatus (*get_tensor_buffer_packed_size)(LiteRtTensorBuffer buffer, size_t *size); /* 208 */
  QLrtUnusedFn get_tensor_buffer_offset;                  /* 216 */
  LiteRtStatus (*lock_tensor_buffer)(LiteRtTensorBuffer buffer, void **host, int mode); /* 224 */
  LiteRtStatus (*unlock_tensor_buffer)(LiteRtTensorBuffer buffer); /* 232 */
  LiteRtStatus (*get_tensor_buffer_host_memory)(LiteRtTensorBuffer buffer, void **host); /* 240 */
} QLrtRuntimeContext;
enum { QLRT_RUNTIME_CONTEXT_MAJOR = 1, QLRT_RUNTIME_CONTEXT_PREFIX = 248 };

/* The function table, in the runtime's order (LiteRtDispatchInterface). */
typedef struct {
  LiteRtStatus (*initialize)(const QLrtRuntimeContext *rt, LiteRtEnvironment env,
                             LiteRtOptions options);
  LiteRtStatus (*get_vendor_id)(const char **vendor_id);
  LiteRtStatus (*get_build_id)(const char **build_id);
  LiteRtStatus (*get_capabilities)(int *capabilities);
  LiteRtStatus (*device_context_create)(const QLrtRuntimeContext *rt, LiteRtOptions options,
                                        LiteRtDispatchDeviceContext *device);
  LiteRtStatus (*device_context_destroy)(LiteRtDispatchDeviceContext device);
  LiteRtStatus (*get_input_requirements)(LiteRtDispatchInvocationContext ic, int index,
                                         const LiteRtRankedTensorType *type,
                                         LiteRtTensorBufferRequirements *requirements);
  LiteRtStatus (*get_output_requirements)(LiteRtDispatchInvocationContext ic, int index,
                                          const LiteRtRankedTensorType *type,
                                          LiteRtTensorBufferRequirements *requirements);
  LiteRtStatus (*register_tensor_buffer)(LiteRtDispatchDeviceContext device,
                                         LiteRtTensorBuffer buffer,
                                         LiteRtTensorBufferHandle *handle);
  LiteRtStatus (*unregister_tensor_buffer)(LiteRtDispatchDeviceContext device,
                                           LiteRtTensorBufferHandle handle);
  LiteRtStatus (*invocation_context_create)(const QLrtRuntimeContext *rt,
                                            LiteRtDispatchDeviceContext device, int exec_type,
                                            const QLrtMemBuffer *bytecode,
                                            const char *function_name, int num_inputs,
                                            int num_outputs,
                                            LiteRtDispatchInvocationContext *ic);
  LiteRtStatus (*invocation_context_destroy)(LiteRtDispatchInvocationContext ic);
  LiteRtStatus (*invocation_context_set_scheduling_info)(LiteRtDispatchInvocationContext ic,
                                                         const void *scheduling_info);
  LiteRtStatus (*attach_input)(LiteRtDispatchInvocationContext ic, int index,
                               LiteRtTensorBufferHandle handle);
  LiteRtStatus (*attach_output)(LiteRtDispatchInvocationContext ic, int index,
                                LiteRtTensorBufferHandle handle);
  LiteRtStatus (*detach_input)(LiteRtDispatchInvocationContext ic, int index,
                               LiteRtTensorBufferHandle handle);
  LiteRtStatus (*detach_output)(LiteRtDispatchInvocationContext ic, int index,
                                LiteRtTensorBufferHandle handle);
  LiteRtStatus (*invoke)(LiteRtDispatchInvocationContext ic);
  QLrtUnusedFn start_metrics_collection, stop_metrics_collection, get_num_metrics, get_metric,
      destroy_metrics; /* optional: NULL */
  LiteRtStatus (*check_runtime_compatibility)(QLrtApiVersion version,
                                              LiteRtEnvironmentOptions env,
                                              LiteRtOptions options);
  LiteRtStatus (*invocation_context_set_options)(LiteRtDispatchInvocationContext ic,
                                                 LiteRtOptions options);
  QLrtUnusedFn get_hooks; /* optional: NULL (no profiling hooks) */
  QLrtUnusedFn reserved[2]; /* NULL: optional members of other builds */
} QLrtDispatchInterface;

/* What LiteRtDispatchGetApi fills (LiteRtDispatchApi, 56 bytes on LP64). */
typedef struct {
  QLrtAbiHeader abi_header;
  QLrtApiVersion version;
  const QLrtDispatchInterface *interface;
  const void *async_interface;            /* NULL: no asynchronous execution */
  const void *graph_interface;            /* NULL: no graph API */
  const void *tensor_buffer_handlers_def; /* NULL: host memory buffers only */
} QLrtDispatchApi;

/* The entry point of LiteRT 2.3.0. */
LiteRtStatus LiteRtDispatchGetApi(QLrtDispatchApi *api);

/* The versioned entry point of the releases after 2.3.0 (checked against the 2.4.0 nightlies'
 * libLiteRt.so and their intel_openvino dispatch library), which look up only this symbol and
 * refuse a library without it.  The runtime calls it once per interface, by number, passing its
 * dispatch ABI version by value (1.0.0); a library returns a pointer to a static interface that
 * starts with an ABI header, or a nonzero status for one it lacks.  The runtime needs the basic
 * interface (status 0, header major 1, at least 16 bytes, initialize set) and takes the others
 * when their header says major 1.  The basic interface is the ABI header followed by the same
 * function table LiteRtDispatchGetApi points to; the runtime reads a function only when the
 * header's struct_size covers it (e.g. invoke at byte 144, check_runtime_compatibility at 192),
 * and reports the header's major.minor as the dispatch API version. */
enum {
  QLRT_DISPATCH_INTERFACE_BASIC = 0,
  QLRT_DISPATCH_INTERFACE_ASYNC = 1,                  /* optional */
  QLRT_DISPATCH_INTERFACE_GRAPH = 2,                  /* optional */
  QLRT_DISPATCH_INTERFACE_TENSOR_BUFFER_HANDLERS = 3, /* optional */
};
enum { QLRT_DISPATCH_ABI_MAJOR = 1, QLRT_DISPATCH_ABI_MINOR = 0 };

typedef struct {
  QLrtAbiHeader abi_header;        /* struct_size 232, major 1, minor 0 */
  QLrtDispatchInterface functions; /* what LiteRtDispatchGetApi's interface points to */
} QLrtDispatchBasicInterface;

LiteRtStatus LiteRtDispatchQueryInterface(int interface_id, QLrtApiVersion runtime_version,
                                          const void **interface);

/* Layout checks (LP64; GCC and Clang accept _Static_assert in C99 mode). */
#if UINTPTR_MAX == UINT64_MAX
_Static_assert(sizeof(QLrtApiVersion) == 12, "LiteRtApiVersion is three ints, passed by value");
_Static_assert(sizeof(QLrtAbiHeader) == 8, "LiteRtAbiHeader is 8 bytes");
_Static_assert(sizeof(QLrtDispatchInterface) == 28 * 8, "the function table has 28 entries");
_Static_assert(sizeof(QLrtDispatchApi) == 56, "LiteRtDispatchApi (2.3.0) is 56 bytes");
_Static_assert(offsetof(QLrtDispatchApi, interface) == 24, "2.3.0 reads the table at byte 24");
_Static_assert(sizeof(QLrtDispatchBasicInterface) == 232, "the basic interface is 232 bytes");
_Static_assert(offsetof(QLrtDispatchBasicInterface, functions) == 8, "functions follow the header");
_Static_assert(offsetof(QLrtDispatchBasicInterface, functions.initialize) == 8, "initialize");
_Static_assert(offsetof(QLrtDispatchBasicInterface, functions.get_vendor_id) == 16, "vendor id");
_Static_assert(offsetof(QLrtDispatchBasicInterface, functions.invoke) == 144, "invoke");
_Static_assert(offsetof(QLrtDispatchBasicInterface, functions.check_runtime_compatibility) == 192,
               "check_runtime_compatibility");
#endif

#ifdef __cplusplus
}
#endif
#endif /* QACCEL_DISPATCH_API_H_ */
