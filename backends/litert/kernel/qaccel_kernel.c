/* libqaccel_litert: the QACCEL_VTA custom-op kernel LiteRT runs for qaccel's AOT models.
 *
 * A QACCEL_VTA node's inputs are the accelerator function's plain inputs followed by its
 * program (a constant uint8 tensor, see backends/vta/program/writer.py for the format); its outputs
 * are the function's plain outputs.  Run locks the buffers and runs the program with the
 * program runner (backends/vta/program/qaccel_program.h, on libqaccel_vta): each node opens and
 * checks its program once and keeps one run state; inputs and outputs are checked by type and
 * shape.
 *
 * LiteRT 2.3.0 ignores what Run and GetOutputLayouts return, so errors also go to the calling
 * thread's error channel: qaccel_litert_last_error() (qaccel_litert_common.h), which callers
 * check after every run.  Run gets no node identity: the node is its program (the last
 * input); GetOutputLayouts gets only shapes: the node is found by its program's size, which the
 * exporter keeps distinct within a model and Init records from the custom options with the
 * output shapes.  Nodes are per registration (qaccel_litert_register on one model's options:
 * the kernel's user data), so two compiled models run in two threads share nothing.
 *
 * LiteRT's C API is not linked: qaccel_litert_bind(path) resolves the functions we use with
 * dlopen/dlsym (path NULL: from the process, e.g. a host program linked with libLiteRt.so),
 * and names the first one missing.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qaccel_litert_common.h"

#define EXPORT QACCEL_EXPORT

static uint32_t u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static int32_t i32(const uint8_t *p) { int32_t v; memcpy(&v, p, 4); return v; }

enum { OPTIONS_VERSION = 1, MAX_NODES = 256 };

/* ---- LiteRT functions, resolved at run time ------------------------------------------------ */
typedef struct {
  LiteRtStatus (*GetPackedSize)(LiteRtTensorBuffer, size_t *);
  LiteRtStatus (*Lock)(LiteRtTensorBuffer, void **, int);
  LiteRtStatus (*Unlock)(LiteRtTensorBuffer);
  LiteRtStatus (*AddCustomOp)(LiteRtOptions, const char *, int, const LiteRtCustomOpKernel *,
                              void *);
  LiteRtStatus (*CreateOpaque)(const char *, void *, void (*)(void *), LiteRtOpaqueOptions *);
  LiteRtStatus (*AddOpaque)(LiteRtOptions, LiteRtOpaqueOptions);
  LiteRtStatus (*GetTensorType)(LiteRtTensorBuffer, LiteRtRankedTensorType *);
  int bound;
} LiteRtApi;
static LiteRtApi api;

static void *resolve(void *lib, const char *what, const char *name) {
  void *f = dlsym(lib, name);
  if (!f) qaccel_fail("%s: the LiteRT C API lacks %s", what, name);
  return f;
}

/* Resolve the LiteRT functions the kernel uses from `path` (NULL: the running process).
 * 0 on success; else 1 and the error names the missing library or symbol. Binding again to
 * the same functions writes nothing: another thread may be running a model through them (a
 * rebind must never show it an unbound table, even for a moment). */
EXPORT int qaccel_litert_bind(const char *path) {
  void *lib = path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : RTLD_DEFAULT;
  const char *what = path ? path : "this process";
  if (path && !lib) return qaccel_fail("cannot load %s: %s", path, dlerror()); /* RTLD_DEFAULT is 0 */
  LiteRtApi found;
  memset(&found, 0, sizeof found);
  *(void **)&found.GetPackedSize = resolve(lib, what, "LiteRtGetTensorBufferPackedSize");
  *(void **)&found.Lock = resolve(lib, what, "LiteRtLockTensorBuffer");
  *(void **)&found.Unlock = resolve(lib, what, "LiteRtUnlockTensorBuffer");
  *(void **)&found.AddCustomOp = resolve(lib, what, "LiteRtAddCustomOpKernelOption");
  *(void **)&found.CreateOpaque = resolve(lib, what, "LiteRtCreateOpaqueOptions");
  *(void **)&found.AddOpaque = resolve(lib, what, "LiteRtAddOpaqueOptions");
  *(void **)&found.GetTensorType = resolve(lib, what, "LiteRtGetTensorBufferTensorType");
  if (!found.GetPackedSize || !found.Lock || !found.Unlock || !found.AddCustomOp ||
      !found.CreateOpaque || !found.AddOpaque || !found.GetTensorType)
    return 1;
  found.bound = 1;
  if (memcmp(&found, &api, sizeof found) != 0) api = found;
  return 0;
}

/* ---- the LiteRT kernel ---------------------------------------------------------------------- */
typedef struct {
  uint32_t program_bytes, n_out, rank[16];
  int32_t dims[16][QLRT_MAX_RANK];
  /* the node's program opened on its first run (checked once; its layers prepared on the
   * state's first run), for the program bytes at `prepared_at` */
  qaccel_program *program;
  qaccel_state *state;
  const void *prepared_at;
} Node;

/* One registration's nodes (the kernel's user data): one compiled model's. */
typedef struct {
  Node nodes[MAX_NODES];
  int n_nodes, live;
} Kernel;

static __thread long t_runs; /* runs of the kernel in this thread */

static void node_release(Node *node) {
  qaccel_state_free(node->state);
  qaccel_program_close(node->program);
  node->state = NULL;
  node->program = NULL;
  node->prepared_at = NULL;
}

static LiteRtStatus k_init(void *ud, const void *opts, size_t n) {
  Kernel *kernel = (Kernel *)ud;
  const uint8_t *o = (const uint8_t *)opts;
  kernel->live++;
  if (n < 16 || memcmp(o, "QVTA", 4) != 0) { qaccel_fail("QACCEL_VTA: custom options are not ours (bad magic)"); return QLRT_INVALID_ARGUMENT; }
  if (u32(o + 4) != OPTIONS_VERSION) {
    qaccel_fail("QACCEL_VTA: custom options version %u, this kernel reads version %d", u32(o + 4), OPTIONS_VERSION);
    return QLRT_WRONG_VERSION;
  }
  if (kernel->n_nodes >= MAX_NODES) { qaccel_fail("QACCEL_VTA: more than %d nodes", MAX_NODES); return QLRT_RUNTIME_FAILURE; }
  Node *node = &kernel->nodes[kernel->n_nodes];
  node_release(node); /* a slot a destroyed model left */
  node->program_bytes = u32(o + 8);
  node->n_out = u32(o + 12);
  size_t at = 16;
  if (node->n_out > 16) { qaccel_fail("QACCEL_VTA: custom options name %u outputs", node->n_out); return QLRT_INVALID_ARGUMENT; }
  for (uint32_t k = 0; k < node->n_out; k++) {
    if (at + 4 > n || (node->rank[k] = u32(o + at)) > QLRT_MAX_RANK || at + 4 + 4ull * node->rank[k] > n) {
      qaccel_fail("QACCEL_VTA: custom options truncated");
      return QLRT_INVALID_ARGUMENT;
    }
    for (uint32_t d = 0; d < node->rank[k]; d++) node->dims[k][d] = i32(o + at + 4 + 4 * d);
    at += 4 + 4ull * node->rank[k];
  }
  kernel->n_nodes++;
  return QLRT_OK;
}

static LiteRtStatus k_layouts(void *ud, size_t ni, const LiteRtLayout *in, size_t no, LiteRtLayout *out) {
  Kernel *kernel = (Kernel *)ud;
  if (ni < 1 || in[ni - 1].rank != 1) { qaccel_fail("QACCEL_VTA: the last input must be the program"); return QLRT_INVALID_ARGUMENT; }
  uint32_t size = (uint32_t)in[ni - 1].dimensions[0];
  for (int k = 0; k < kernel->n_nodes; k++) {
    const Node *node = &kernel->nodes[k];
    if (node->program_bytes != size) continue;
    if (node->n_out != no) { qaccel_fail("QACCEL_VTA: %zu outputs, the custom options name %u", no, node->n_out); return QLRT_INVALID_ARGUMENT; }
    for (size_t j = 0; j < no; j++) {
      memset(&out[j], 0, sizeof out[j]);
      out[j].rank = node->rank[j];
      memcpy(out[j].dimensions, node->dims[j], sizeof(int32_t) * node->rank[j]);
    }
    return QLRT_OK;
  }
  qaccel_fail("QACCEL_VTA: no node with a program of %u bytes", size);
  return QLRT_INVALID_ARGUMENT;
}

static LiteRtStatus k_run(void *ud, size_t ni, const LiteRtTensorBuffer *in, size_t no, LiteRtTensorBuffer *out) {
  Kernel *kernel = (Kernel *)ud;
  t_runs++;
  if (ni < 1 || ni > 64 || no > 64) { qaccel_fail("QACCEL_VTA: %zu inputs and %zu outputs", ni, no); return QLRT_INVALID_ARGUMENT; }
  void *ptr[128] = {0};
  size_t bytes[128] = {0};
  qaccel_tensor tensors[128];
  size_t locked_in = 0, locked_out = 0;
  int rc = 1;
  for (; locked_in < ni; locked_in++)
    if (api.GetPackedSize(in[locked_in], &bytes[locked_in]) ||
        api.Lock(in[locked_in], &ptr[locked_in], QLRT_LOCK_READ)) {
      qaccel_fail("QACCEL_VTA: cannot lock input %zu", locked_in);
      goto unlock;
    }
  for (; locked_out < no; locked_out++)
    if (api.GetPackedSize(out[locked_out], &bytes[64 + locked_out]) ||
        api.Lock(out[locked_out], &ptr[64 + locked_out], QLRT_LOCK_WRITE)) {
      qaccel_fail("QACCEL_VTA: cannot lock output %zu", locked_out);
      goto unlock;
    }
  {
    /* the node: the one whose program this is (kept per node, freed with the model) */
    Node *node = NULL;
    for (int k = 0; k < kernel->n_nodes && !node; k++)
      if (kernel->nodes[k].program_bytes == bytes[ni - 1]) node = &kernel->nodes[k];
    if (!node) {
      qaccel_fail("QACCEL_VTA: no node with a program of %zu bytes", bytes[ni - 1]);
      goto unlock;
    }
    for (size_t j = 0; j < ni - 1 + no; j++) { /* the tensors as LiteRT types them */
      size_t at = j < ni - 1 ? j : 64 + (j - (ni - 1));
      LiteRtTensorBuffer b = j < ni - 1 ? in[j] : out[j - (ni - 1)];
      LiteRtRankedTensorType t;
      if (api.GetTensorType(b, &t) || !qaccel_tensor_from_litert(&t, ptr[at], bytes[at], &tensors[at])) {
        qaccel_fail("QACCEL_VTA: %s %zu has no type the kernel reads", j < ni - 1 ? "input" : "output",
                    j < ni - 1 ? j : j - (ni - 1));
        goto unlock;
      }
    }
    if (node->program && node->prepared_at != ptr[ni - 1]) node_release(node); /* the program moved */
    if (!node->program) {
      char error[QACCEL_ERROR_BYTES];
      if (qaccel_program_open(ptr[ni - 1], bytes[ni - 1], &node->program, error) ||
          qaccel_state_new(node->program, &node->state, error)) {
        qaccel_fail("%s", error);
        node_release(node);
        goto unlock;
      }
      node->prepared_at = ptr[ni - 1];
    }
    rc = qaccel_state_run(node->state, ni - 1, tensors, no, tensors + 64);
    if (rc) qaccel_fail("%s", qaccel_state_error(node->state));
  }
unlock:
  while (locked_out) api.Unlock(out[--locked_out]);
  while (locked_in) api.Unlock(in[--locked_in]);
  return rc ? QLRT_RUNTIME_FAILURE : QLRT_OK;
}

static LiteRtStatus k_destroy(void *ud) {
  Kernel *kernel = (Kernel *)ud;
  if (--kernel->live <= 0) { /* the model is gone, and with it this registration */
    for (int k = 0; k < MAX_NODES; k++) node_release(&kernel->nodes[k]);
    free(kernel);
  }
  return QLRT_OK;
}

static const LiteRtCustomOpKernel kKernel = {k_init, k_layouts, k_run, k_destroy};

/* Register the QACCEL_VTA kernel (version 1) on the LiteRT options of one compiled model (after
 * qaccel_litert_bind): its nodes live in a registration of their own, freed when LiteRT
 * destroys the model's last node (options registered but never compiled into a model with a
 * QACCEL_VTA node keep theirs). */
EXPORT int qaccel_litert_register(LiteRtOptions options) {
  if (!api.bound) return qaccel_fail("qaccel_litert_bind was not called (or failed)");
  Kernel *kernel = (Kernel *)calloc(1, sizeof *kernel);
  if (!kernel) return qaccel_fail("out of memory");
  int st = api.AddCustomOp(options, "QACCEL_VTA", 1, &kKernel, kernel);
  if (st) free(kernel);
  return st ? qaccel_fail("LiteRtAddCustomOpKernelOption failed with status %d", st) : 0;
}

static void free_payload(void *p) { free(p); }

/* CPU options: identifier "xnnpack", TOML payload with kernel_mode ("reference", ...). */
EXPORT int qaccel_litert_set_cpu_kernel_mode(LiteRtOptions options, const char *mode) {
  if (!api.bound) return qaccel_fail("qaccel_litert_bind was not called (or failed)");
  char *toml = (char *)malloc(128);
  if (!toml) return qaccel_fail("out of memory");
  snprintf(toml, 128, "kernel_mode = \"%s\"\nnum_threads = 1\n", mode);
  LiteRtOpaqueOptions oo = NULL;
  int st = api.CreateOpaque("xnnpack", toml, free_payload, &oo);
  if (st) { free(toml); return qaccel_fail("LiteRtCreateOpaqueOptions failed with status %d", st); }
  st = api.AddOpaque(options, oo); /* options takes ownership */
  return st ? qaccel_fail("LiteRtAddOpaqueOptions failed with status %d", st) : 0;
}

/* How many times LiteRT ran the kernel in this thread since the library was loaded (tests). */
EXPORT int qaccel_litert_runs(void) { return (int)t_runs; }
