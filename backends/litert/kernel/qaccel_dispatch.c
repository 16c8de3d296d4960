/* libLiteRtDispatch_Qaccel: qaccel's LiteRT dispatch library, the NPU vendors' extension point.
 *
 * A model for it (model.qaccel.dispatch.tflite, backends/litert/aot.py) holds one DISPATCH_OP
 * per accelerator function, whose bytecode, a qaccel program, lies in the model file after the
 * flatbuffer.  LiteRT (Environment with this library's directory as its dispatch library
 * directory, NPU | CPU accelerators) hands each op's bytecode to invocation_context_create, asks
 * us which tensor buffers the op's inputs and outputs need (host memory of the tensor's size),
 * registers the buffers it attaches, and calls invoke, which runs the program with the program
 * runner (backends/vta/program/qaccel_program.h, on libqaccel_vta): each invocation context
 * opens and checks its program once and keeps its own run state, and checks every buffer's type
 * and shape against the program's.  LiteRT's CPU kernels run the rest of the graph.
 *
 * No LiteRT function is linked: the ones we call come from the runtime context table LiteRT
 * passes in (its ABI header is checked first).  Errors: a LiteRT status, and the first error's
 * one-line message in the calling thread's qaccel_litert_last_error() (qaccel_litert_common.h;
 * the library loaded again by path, e.g. with ctypes, is the same object).  Nothing
 * model-specific is process-wide: two compiled models run in two threads at once.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qaccel_dispatch_api.h"
#include "qaccel_litert_common.h"

#define EXPORT QACCEL_EXPORT
#define fail qaccel_fail
enum { MAX_IO = 64, MAX_BUFFERS = 1 << 20 };

#ifndef QACCEL_LITERT_SOURCE_HASH
#define QACCEL_LITERT_SOURCE_HASH ""
#endif

/* The runtime context must be a major-1 table holding at least the members we call. */
static int runtime_ok(const QLrtRuntimeContext *rt) {
  if (!rt) return !fail("qaccel dispatch: LiteRT passed no runtime context");
  if (rt->abi_header.major_version != QLRT_RUNTIME_CONTEXT_MAJOR ||
      rt->abi_header.struct_size < QLRT_RUNTIME_CONTEXT_PREFIX)
    return !fail("qaccel dispatch: LiteRT's runtime context is version %u with %u bytes; this "
                 "library needs version %d with at least %d bytes",
                 rt->abi_header.major_version, rt->abi_header.struct_size,
                 QLRT_RUNTIME_CONTEXT_MAJOR, QLRT_RUNTIME_CONTEXT_PREFIX);
  if (!rt->create_tensor_buffer_requirements || !rt->get_tensor_buffer_type ||
      !rt->get_tensor_buffer_packed_size || !rt->lock_tensor_buffer || !rt->unlock_tensor_buffer ||
      !rt->get_tensor_buffer_host_memory || !rt->get_tensor_buffer_tensor_type)
    return !fail("qaccel dispatch: LiteRT's runtime context lacks a tensor buffer function");
  return 1;
}

/* ---- device context: the registered tensor buffers ----------------------------------------- */
struct LiteRtDispatchDeviceContextT {
  const QLrtRuntimeContext *rt;
  LiteRtTensorBuffer *buffers; /* handle h is buffers[h - 1]; NULL: a free slot */
  size_t n, cap;
};

static LiteRtTensorBuffer lookup(LiteRtDispatchDeviceContext d, LiteRtTensorBufferHandle h) {
  return (h >= 1 && h <= d->n) ? d->buffers[h - 1] : NULL;
}

/* ---- invocation context: one DISPATCH_OP ----------------------------------------------------- */
struct LiteRtDispatchInvocationContextT {
  const QLrtRuntimeContext *rt;
  LiteRtDispatchDeviceContext device;
  const uint8_t *bytes; /* the program's */
  size_t size;
  uint8_t *copy; /* the program, when its place in the model is not 8-byte aligned */
  int n_in, n_out;
  LiteRtTensorBufferHandle in[MAX_IO], out[MAX_IO];
  char name[64];
  qaccel_program *program; /* opened and checked when the context is created */
  qaccel_state *state;     /* its run state: layers checked and timed on the first invoke */
  long invocations;
};

/* LiteRT's runtime context table, the same for every model (set by initialize). */
static const QLrtRuntimeContext *g_runtime;
static __thread long t_invocations; /* invocations in this thread */

static LiteRtStatus initialize(const QLrtRuntimeContext *rt, LiteRtEnvironment env,
                               LiteRtOptions options) {
  (void)env;
  (void)options;
  if (!runtime_ok(rt)) return QLRT_UNSUPPORTED;
  g_runtime = rt;
  return QLRT_OK;
}

static LiteRtStatus get_vendor_id(const char **vendor_id) {
  *vendor_id = "Qaccel";
  return QLRT_OK;
}

static LiteRtStatus get_build_id(const char **build_id) {
  *build_id = "qaccel-" QACCEL_LITERT_SOURCE_HASH;
  return QLRT_OK;
}

static LiteRtStatus get_capabilities(int *capabilities) {
  *capabilities = QLRT_DISPATCH_CAPABILITIES_BASIC;
  return QLRT_OK;
}

static LiteRtStatus device_context_create(const QLrtRuntimeContext *rt, LiteRtOptions options,
                                          LiteRtDispatchDeviceContext *device) {
  (void)options;
  if (!runtime_ok(rt ? rt : g_runtime)) return QLRT_UNSUPPORTED;
  LiteRtDispatchDeviceContext d = (LiteRtDispatchDeviceContext)calloc(1, sizeof *d);
  if (!d) return fail("qaccel dispatch: out of memory"), QLRT_RUNTIME_FAILURE;
  d->rt = rt ? rt : g_runtime;
  *device = d;
  return QLRT_OK;
}

static LiteRtStatus device_context_destroy(LiteRtDispatchDeviceContext device) {
  free(device->buffers);
  free(device);
  return QLRT_OK;
}

/* Bytes of a tensor of `type` (0: a type or shape we do not support). */
static size_t tensor_bytes(const LiteRtRankedTensorType *type) {
  size_t elem;
  switch (type->element_type) {
    case QLRT_ELEM_INT8: case QLRT_ELEM_UINT8: case QLRT_ELEM_BOOL: elem = 1; break;
    case QLRT_ELEM_INT16: case QLRT_ELEM_UINT16: case QLRT_ELEM_FLOAT16: elem = 2; break;
    case QLRT_ELEM_INT32: case QLRT_ELEM_UINT32: case QLRT_ELEM_FLOAT32: elem = 4; break;
    case QLRT_ELEM_INT64: case QLRT_ELEM_FLOAT64: elem = 8; break;
    default: return 0;
  }
  if (type->layout.rank > QLRT_MAX_RANK || type->layout.has_strides) return 0;
  size_t n = elem;
  for (unsigned d = 0; d < type->layout.rank; d++) {
    int32_t dim = type->layout.dimensions[d];
    if (dim <= 0 || n > (SIZE_MAX >> 1) / (size_t)dim) return 0;
    n *= (size_t)dim;
  }
  return n;
}

/* Host memory of the tensor's size, for inputs and outputs alike. */
static LiteRtStatus requirements(LiteRtDispatchInvocationContext ic, const char *what, int index,
                                 const LiteRtRankedTensorType *type,
                                 LiteRtTensorBufferRequirements *out) {
  size_t bytes = tensor_bytes(type);
  if (!bytes) {
    fail("qaccel dispatch: %s: %s %d has an element type or shape we do not support", ic->name,
         what, index);
    return QLRT_UNSUPPORTED;
  }
  int32_t want_type, rank;
  int64_t dims[QACCEL_MAX_RANK];
  int same = !qaccel_program_tensor(ic->program, what[0] == 'o', (uint32_t)index, &want_type, &rank, dims) &&
             type->element_type == want_type && (int32_t)type->layout.rank == rank;
  for (int32_t d = 0; same && d < rank; d++) same = type->layout.dimensions[d] == dims[d];
  if (!same) {
    fail("qaccel dispatch: %s: the model's %s %d is not of the type and shape its program takes",
         ic->name, what, index);
    return QLRT_INVALID_ARGUMENT;
  }
  const int host_memory = QLRT_TENSOR_BUFFER_HOST_MEMORY;
  LiteRtStatus st = ic->rt->create_tensor_buffer_requirements(1, &host_memory, bytes, 0, NULL, out);
  if (st) fail("qaccel dispatch: LiteRT could not create buffer requirements (status %d)", st);
  return st;
}

static LiteRtStatus get_input_requirements(LiteRtDispatchInvocationContext ic, int index,
                                           const LiteRtRankedTensorType *type,
                                           LiteRtTensorBufferRequirements *out) {
  return requirements(ic, "input", index, type, out);
}

static LiteRtStatus get_output_requirements(LiteRtDispatchInvocationContext ic, int index,
                                            const LiteRtRankedTensorType *type,
                                            LiteRtTensorBufferRequirements *out) {
  return requirements(ic, "output", index, type, out);
}

static LiteRtStatus register_tensor_buffer(LiteRtDispatchDeviceContext d, LiteRtTensorBuffer buffer,
                                           LiteRtTensorBufferHandle *handle) {
  size_t slot = 0;
  while (slot < d->n && d->buffers[slot]) slot++;
  if (slot == d->n) {
    if (d->n == d->cap) {
      size_t cap = d->cap ? 2 * d->cap : 16;
      LiteRtTensorBuffer *grown =
          cap <= MAX_BUFFERS ? (LiteRtTensorBuffer *)realloc(d->buffers, cap * sizeof *grown) : NULL;
      if (!grown) return fail("qaccel dispatch: too many tensor buffers"), QLRT_RUNTIME_FAILURE;
      d->buffers = grown;
      d->cap = cap;
    }
    d->n++;
  }
  d->buffers[slot] = buffer;
  *handle = (LiteRtTensorBufferHandle)slot + 1;
  return QLRT_OK;
}

static LiteRtStatus unregister_tensor_buffer(LiteRtDispatchDeviceContext d,
                                             LiteRtTensorBufferHandle handle) {
  if (!lookup(d, handle)) {
    fail("qaccel dispatch: unregistering unknown tensor buffer handle %llu",
         (unsigned long long)handle);
    return QLRT_INVALID_ARGUMENT;
  }
  d->buffers[handle - 1] = NULL;
  return QLRT_OK;
}

static LiteRtStatus invocation_context_create(const QLrtRuntimeContext *rt,
                                              LiteRtDispatchDeviceContext device, int exec_type,
                                              const QLrtMemBuffer *bytecode,
                                              const char *function_name, int num_inputs,
                                              int num_outputs,
                                              LiteRtDispatchInvocationContext *out) {
  const char *name = function_name ? function_name : "";
  if (!runtime_ok(rt ? rt : device->rt)) return QLRT_UNSUPPORTED;
  if (exec_type != QLRT_EXECUTABLE_ML_MODEL) {
    fail("qaccel dispatch: %s: executable type %d (qaccel runs bytecode from the model file, "
         "type %d)", name, exec_type, QLRT_EXECUTABLE_ML_MODEL);
    return QLRT_UNSUPPORTED;
  }
  if (!bytecode->base_addr || bytecode->size == 0) {
    fail("qaccel dispatch: %s: no bytecode", name);
    return QLRT_INVALID_ARGUMENT;
  }
  if (num_inputs < 0 || num_outputs < 0 || num_inputs > MAX_IO || num_outputs > MAX_IO) {
    fail("qaccel dispatch: %s: %d inputs and %d outputs (at most %d each)", name, num_inputs,
         num_outputs, MAX_IO);
    return QLRT_INVALID_ARGUMENT;
  }
  LiteRtDispatchInvocationContext ic = (LiteRtDispatchInvocationContext)calloc(1, sizeof *ic);
  if (!ic) return fail("qaccel dispatch: out of memory"), QLRT_RUNTIME_FAILURE;
  ic->rt = rt ? rt : device->rt;
  ic->device = device;
  snprintf(ic->name, sizeof ic->name, "%s", name);
  ic->bytes = (const uint8_t *)bytecode->base_addr + bytecode->offset;
  ic->size = bytecode->size;
  if ((uintptr_t)ic->bytes % 8) { /* the machine reads instruction words in place */
    ic->copy = (uint8_t *)malloc(ic->size);
    if (!ic->copy) {
      free(ic);
      return fail("qaccel dispatch: out of memory"), QLRT_RUNTIME_FAILURE;
    }
    memcpy(ic->copy, ic->bytes, ic->size);
    ic->bytes = ic->copy;
  }
  ic->n_in = num_inputs;
  ic->n_out = num_outputs;
  LiteRtStatus st = QLRT_OK;
  char error[QACCEL_ERROR_BYTES];
  if (qaccel_program_open(ic->bytes, ic->size, &ic->program, error)) {
    fail("%s", error);
    st = QLRT_INVALID_ARGUMENT;
  } else if (qaccel_program_inputs(ic->program) != (uint32_t)num_inputs ||
             qaccel_program_outputs(ic->program) != (uint32_t)num_outputs) {
    fail("qaccel dispatch: %s: the op has %d inputs and %d outputs, its program %u and %u", name,
         num_inputs, num_outputs, qaccel_program_inputs(ic->program),
         qaccel_program_outputs(ic->program));
    st = QLRT_INVALID_ARGUMENT;
  }
  if (st) {
    qaccel_program_close(ic->program);
    free(ic->copy);
    free(ic);
    return st;
  }
  *out = ic;
  return QLRT_OK;
}

static LiteRtStatus invocation_context_destroy(LiteRtDispatchInvocationContext ic) {
  qaccel_state_free(ic->state);
  qaccel_program_close(ic->program);
  free(ic->copy);
  free(ic);
  return QLRT_OK;
}

static LiteRtStatus set_scheduling_info(LiteRtDispatchInvocationContext ic, const void *info) {
  (void)ic;
  (void)info;
  return QLRT_ERROR_UNSUPPORTED; /* LiteRT then keeps its default scheduling */
}

static LiteRtStatus attach(LiteRtDispatchInvocationContext ic, const char *what, int index, int n,
                           LiteRtTensorBufferHandle *slots, LiteRtTensorBufferHandle handle) {
  if (index < 0 || index >= n || !lookup(ic->device, handle)) {
    fail("qaccel dispatch: %s: attaching %s %d of %d (handle %llu)", ic->name, what, index, n,
         (unsigned long long)handle);
    return QLRT_INVALID_ARGUMENT;
  }
  slots[index] = handle;
  return QLRT_OK;
}

static LiteRtStatus attach_input(LiteRtDispatchInvocationContext ic, int index,
                                 LiteRtTensorBufferHandle handle) {
  return attach(ic, "input", index, ic->n_in, ic->in, handle);
}

static LiteRtStatus attach_output(LiteRtDispatchInvocationContext ic, int index,
                                  LiteRtTensorBufferHandle handle) {
  return attach(ic, "output", index, ic->n_out, ic->out, handle);
}

static LiteRtStatus detach_input(LiteRtDispatchInvocationContext ic, int index,
                                 LiteRtTensorBufferHandle handle) {
  if (index >= 0 && index < ic->n_in && ic->in[index] == handle) ic->in[index] = 0;
  return QLRT_OK;
}

static LiteRtStatus detach_output(LiteRtDispatchInvocationContext ic, int index,
                                  LiteRtTensorBufferHandle handle) {
  if (index >= 0 && index < ic->n_out && ic->out[index] == handle) ic->out[index] = 0;
  return QLRT_OK;
}

/* The host memory of every attached buffer, then run the program.  A host memory buffer is
 * read in place without a lock: LiteRT keeps a graph input that CPU ops read too locked
 * for the whole run.  Other buffer types are locked (inputs to read, outputs to write). */
static LiteRtStatus invoke(LiteRtDispatchInvocationContext ic) {
  const QLrtRuntimeContext *rt = ic->rt;
  LiteRtTensorBuffer locked[2 * MAX_IO];
  void *ptr[2 * MAX_IO] = {0};
  size_t bytes[2 * MAX_IO] = {0};
  qaccel_tensor tensors[2 * MAX_IO];
  int n = ic->n_in + ic->n_out, n_locked = 0, rc = 1;
  t_invocations++;
  ic->invocations++;
  for (int j = 0; j < n; j++) {
    int is_in = j < ic->n_in, k = is_in ? j : j - ic->n_in, type = 0;
    const char *what = is_in ? "input" : "output";
    LiteRtTensorBuffer buffer = lookup(ic->device, is_in ? ic->in[k] : ic->out[k]);
    if (!buffer) {
      fail("qaccel dispatch: %s: %s %d has no tensor buffer attached", ic->name, what, k);
      goto unlock;
    }
    LiteRtStatus st = rt->get_tensor_buffer_packed_size(buffer, &bytes[j]);
    if (!st) st = rt->get_tensor_buffer_type(buffer, &type);
    if (!st && type == QLRT_TENSOR_BUFFER_HOST_MEMORY) {
      st = rt->get_tensor_buffer_host_memory(buffer, &ptr[j]);
    } else if (!st) {
      st = rt->lock_tensor_buffer(buffer, &ptr[j], is_in ? QLRT_LOCK_READ : QLRT_LOCK_WRITE);
      if (!st) locked[n_locked++] = buffer;
    }
    if (st || !ptr[j]) {
      fail("qaccel dispatch: %s: no host memory for %s %d (buffer type %d, LiteRT status %d)",
           ic->name, what, k, type, st);
      goto unlock;
    }
    LiteRtRankedTensorType t;
    if (rt->get_tensor_buffer_tensor_type(buffer, &t) ||
        !qaccel_tensor_from_litert(&t, ptr[j], bytes[j], &tensors[j])) {
      fail("qaccel dispatch: %s: %s %d has no type the runner reads", ic->name, what, k);
      goto unlock;
    }
  }
  if (!ic->state) {
    char error[QACCEL_ERROR_BYTES];
    if (qaccel_state_new(ic->program, &ic->state, error)) {
      fail("qaccel dispatch: %s: %s", ic->name, error);
      goto unlock;
    }
  }
  rc = qaccel_state_run(ic->state, (size_t)ic->n_in, tensors, (size_t)ic->n_out, tensors + ic->n_in);
  if (rc) fail("%s", qaccel_state_error(ic->state));
unlock:
  while (n_locked) rt->unlock_tensor_buffer(locked[--n_locked]);
  return rc ? QLRT_RUNTIME_FAILURE : QLRT_OK;
}

static LiteRtStatus check_runtime_compatibility(QLrtApiVersion version,
                                                LiteRtEnvironmentOptions env,
                                                LiteRtOptions options) {
  (void)env;
  (void)options;
  if (version.major != QLRT_API_VERSION_MAJOR || version.minor != QLRT_API_VERSION_MINOR ||
      version.patch != QLRT_API_VERSION_PATCH) {
    fail("qaccel dispatch: LiteRT API version %d.%d.%d, this library implements %d.%d.%d",
         version.major, version.minor, version.patch, QLRT_API_VERSION_MAJOR,
         QLRT_API_VERSION_MINOR, QLRT_API_VERSION_PATCH);
    return QLRT_WRONG_VERSION;
  }
  return QLRT_OK;
}

static LiteRtStatus set_options(LiteRtDispatchInvocationContext ic, LiteRtOptions options) {
  (void)ic;
  (void)options;
  return QLRT_OK; /* no per-run options */
}

/* One function table behind both entry points: LiteRtDispatchGetApi (2.3.0) points to
 * kBasic.functions, LiteRtDispatchQueryInterface (later releases) to kBasic, its ABI header. */
static const QLrtDispatchBasicInterface kBasic = {
    {(uint16_t)sizeof(QLrtDispatchBasicInterface), QLRT_DISPATCH_ABI_MAJOR,
     QLRT_DISPATCH_ABI_MINOR, 0},
    {initialize, get_vendor_id, get_build_id, get_capabilities, device_context_create,
     device_context_destroy, get_input_requirements, get_output_requirements,
     register_tensor_buffer, unregister_tensor_buffer, invocation_context_create,
     invocation_context_destroy, set_scheduling_info, attach_input, attach_output, detach_input,
     detach_output, invoke, NULL, NULL, NULL, NULL, NULL, check_runtime_compatibility,
     set_options, NULL, {NULL, NULL}},
};

EXPORT LiteRtStatus LiteRtDispatchGetApi(QLrtDispatchApi *api) {
  if (!api) return QLRT_INVALID_ARGUMENT;
  memset(api, 0, sizeof *api);
  api->abi_header.struct_size = (uint16_t)sizeof *api;
  api->abi_header.major_version = 1;
  api->version.major = QLRT_API_VERSION_MAJOR;
  api->version.minor = QLRT_API_VERSION_MINOR;
  api->version.patch = QLRT_API_VERSION_PATCH;
  api->interface = &kBasic.functions;
  return QLRT_OK;
}

/* The basic interface for any runtime of the versioned ABI (major 1 or later: the runtime
 * checks our header's major itself); no asynchronous, graph or tensor buffer handler interface. */
EXPORT LiteRtStatus LiteRtDispatchQueryInterface(int interface_id, QLrtApiVersion runtime_version,
                                                 const void **interface) {
  if (!interface) return QLRT_INVALID_ARGUMENT;
  *interface = NULL;
  if (runtime_version.major < QLRT_DISPATCH_ABI_MAJOR) return QLRT_UNSUPPORTED;
  if (interface_id != QLRT_DISPATCH_INTERFACE_BASIC) return QLRT_UNSUPPORTED;
  *interface = &kBasic;
  return QLRT_OK;
}

/* How many times LiteRT invoked a qaccel program in this thread since the library was loaded
 * (tests). */
EXPORT long qaccel_dispatch_invocations(void) { return t_invocations; }

/* ABI checks (LP64): a negative array size stops the build. */
typedef char qlrt_check_api_size[(sizeof(void *) != 8 || sizeof(QLrtDispatchApi) == 56) ? 1 : -1];
typedef char qlrt_check_interface[(sizeof(void *) != 8 ||
                                   offsetof(QLrtDispatchInterface, get_hooks) == 25 * 8) ? 1 : -1];
typedef char qlrt_check_runtime[(sizeof(void *) != 8 ||
                                 (offsetof(QLrtRuntimeContext, get_tensor_buffer_packed_size) == 208 &&
                                  offsetof(QLrtRuntimeContext, lock_tensor_buffer) == 224 &&
                                  sizeof(QLrtRuntimeContext) == QLRT_RUNTIME_CONTEXT_PREFIX)) ? 1 : -1];
typedef char qlrt_check_ranked_type[sizeof(LiteRtRankedTensorType) == 72 ? 1 : -1];
