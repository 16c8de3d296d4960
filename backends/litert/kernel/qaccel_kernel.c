/* libqaccel_litert: the QACCEL_VTA custom-op kernel LiteRT runs for qaccel's AOT models.
 *
 * A QACCEL_VTA node's inputs are the accelerator function's plain inputs followed by its
 * program (a constant uint8 tensor, see backends/litert/aot.py for the format); its outputs
 * are the function's plain outputs.  Run locks the buffers and runs the program with the
 * shared runner (qaccel_program.c, on libqaccel_vta).
 *
 * LiteRT 2.3.0 ignores what Run and GetOutputLayouts return, so errors also go to our own side
 * channel: qaccel_litert_last_error() (the first error since qaccel_litert_clear_error()),
 * which callers check after every run.  Run gets no node identity: the node is its program
 * (the last input); GetOutputLayouts gets only shapes: the node is found by its program's
 * size, which the exporter keeps distinct within a model and Init records from the custom
 * options with the output shapes.
 *
 * LiteRT's C API is not linked: qaccel_litert_bind(path) resolves the functions we use with
 * dlopen/dlsym (path NULL: from the process, e.g. a host program linked with libLiteRt.so),
 * and names the first one missing.  Not thread-safe: one compiled model runs at a time.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qaccel_litert_api.h"
#include "qaccel_program.h"

#define EXPORT QACCEL_EXPORT
#define u32 qaccel_u32
#define i32 qaccel_i32

enum { OPTIONS_VERSION = 1, MAX_NODES = 256 };

/* ---- LiteRT functions, resolved at run time ------------------------------------------------ */
static struct {
  LiteRtStatus (*GetPackedSize)(LiteRtTensorBuffer, size_t *);
  LiteRtStatus (*Lock)(LiteRtTensorBuffer, void **, int);
  LiteRtStatus (*Unlock)(LiteRtTensorBuffer);
  LiteRtStatus (*AddCustomOp)(LiteRtOptions, const char *, int, const LiteRtCustomOpKernel *,
                              void *);
  LiteRtStatus (*CreateOpaque)(const char *, void *, void (*)(void *), LiteRtOpaqueOptions *);
  LiteRtStatus (*AddOpaque)(LiteRtOptions, LiteRtOpaqueOptions);
  int bound;
} api;

static void *resolve(void *lib, const char *what, const char *name) {
  void *f = dlsym(lib, name);
  if (!f) qaccel_fail("%s: the LiteRT C API lacks %s", what, name);
  return f;
}

/* Resolve the LiteRT functions the kernel uses from `path` (NULL: the running process).
 * 0 on success; else 1 and the error names the missing library or symbol. */
EXPORT int qaccel_litert_bind(const char *path) {
  void *lib = path ? dlopen(path, RTLD_NOW | RTLD_GLOBAL) : RTLD_DEFAULT;
  const char *what = path ? path : "this process";
  if (path && !lib) return qaccel_fail("cannot load %s: %s", path, dlerror()); /* RTLD_DEFAULT is 0 */
  api.bound = 0;
  *(void **)&api.GetPackedSize = resolve(lib, what, "LiteRtGetTensorBufferPackedSize");
  *(void **)&api.Lock = resolve(lib, what, "LiteRtLockTensorBuffer");
  *(void **)&api.Unlock = resolve(lib, what, "LiteRtUnlockTensorBuffer");
  *(void **)&api.AddCustomOp = resolve(lib, what, "LiteRtAddCustomOpKernelOption");
  *(void **)&api.CreateOpaque = resolve(lib, what, "LiteRtCreateOpaqueOptions");
  *(void **)&api.AddOpaque = resolve(lib, what, "LiteRtAddOpaqueOptions");
  if (!api.GetPackedSize || !api.Lock || !api.Unlock || !api.AddCustomOp || !api.CreateOpaque ||
      !api.AddOpaque)
    return 1;
  api.bound = 1;
  return 0;
}

/* ---- the LiteRT kernel ---------------------------------------------------------------------- */
typedef struct {
  uint32_t program_bytes, n_out, rank[16];
  int32_t dims[16][QLRT_MAX_RANK];
  /* the node's program prepared on its first run (checked and timed once), for the program
   * bytes at `prepared_at` */
  qaccel_prepared *prepared;
  const void *prepared_at;
} Node;

static struct {
  Node nodes[MAX_NODES];
  int n_nodes, live, runs;
} g_kernel;

static LiteRtStatus k_init(void *ud, const void *opts, size_t n) {
  (void)ud;
  const uint8_t *o = (const uint8_t *)opts;
  g_kernel.live++;
  if (n < 16 || memcmp(o, "QVTA", 4) != 0) { qaccel_fail("QACCEL_VTA: custom options are not ours (bad magic)"); return QLRT_INVALID_ARGUMENT; }
  if (u32(o + 4) != OPTIONS_VERSION) {
    qaccel_fail("QACCEL_VTA: custom options version %u, this kernel reads version %d", u32(o + 4), OPTIONS_VERSION);
    return QLRT_WRONG_VERSION;
  }
  if (g_kernel.n_nodes >= MAX_NODES) { qaccel_fail("QACCEL_VTA: more than %d nodes", MAX_NODES); return QLRT_RUNTIME_FAILURE; }
  Node *node = &g_kernel.nodes[g_kernel.n_nodes];
  qaccel_prepared_free(node->prepared); /* a slot a destroyed model left */
  node->prepared = NULL;
  node->prepared_at = NULL;
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
  g_kernel.n_nodes++;
  return QLRT_OK;
}

static LiteRtStatus k_layouts(void *ud, size_t ni, const LiteRtLayout *in, size_t no, LiteRtLayout *out) {
  (void)ud;
  if (ni < 1 || in[ni - 1].rank != 1) { qaccel_fail("QACCEL_VTA: the last input must be the program"); return QLRT_INVALID_ARGUMENT; }
  uint32_t size = (uint32_t)in[ni - 1].dimensions[0];
  for (int k = 0; k < g_kernel.n_nodes; k++) {
    const Node *node = &g_kernel.nodes[k];
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
  (void)ud;
  g_kernel.runs++;
  if (ni < 1 || ni > 64 || no > 64) { qaccel_fail("QACCEL_VTA: %zu inputs and %zu outputs", ni, no); return QLRT_INVALID_ARGUMENT; }
  void *ptr[128] = {0};
  size_t bytes[128] = {0};
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
    for (int k = 0; k < g_kernel.n_nodes && !node; k++)
      if (g_kernel.nodes[k].program_bytes == bytes[ni - 1]) node = &g_kernel.nodes[k];
    if (!node) {
      rc = qaccel_program_run(ptr[ni - 1], bytes[ni - 1], ni - 1, (const void *const *)ptr, bytes, no,
                              ptr + 64, bytes + 64);
      goto unlock;
    }
    if (node->prepared && node->prepared_at != ptr[ni - 1]) {
      qaccel_prepared_free(node->prepared); /* the program moved: prepare it again */
      node->prepared = NULL;
    }
    if (!node->prepared) {
      if (qaccel_prepared_new(ptr[ni - 1], bytes[ni - 1], &node->prepared)) goto unlock;
      node->prepared_at = ptr[ni - 1];
    }
    rc = qaccel_prepared_run(node->prepared, ni - 1, (const void *const *)ptr, bytes, no, ptr + 64,
                             bytes + 64);
  }
unlock:
  while (locked_out) api.Unlock(out[--locked_out]);
  while (locked_in) api.Unlock(in[--locked_in]);
  return rc ? QLRT_RUNTIME_FAILURE : QLRT_OK;
}

static LiteRtStatus k_destroy(void *ud) {
  (void)ud;
  if (--g_kernel.live <= 0) { /* the model is gone */
    for (int k = 0; k < g_kernel.n_nodes; k++) {
      qaccel_prepared_free(g_kernel.nodes[k].prepared);
      g_kernel.nodes[k].prepared = NULL;
    }
    g_kernel.live = 0;
    g_kernel.n_nodes = 0;
  }
  return QLRT_OK;
}

static const LiteRtCustomOpKernel kKernel = {k_init, k_layouts, k_run, k_destroy};

/* Register the QACCEL_VTA kernel (version 1) on LiteRT options (after qaccel_litert_bind). */
EXPORT int qaccel_litert_register(LiteRtOptions options) {
  if (!api.bound) return qaccel_fail("qaccel_litert_bind was not called (or failed)");
  int st = api.AddCustomOp(options, "QACCEL_VTA", 1, &kKernel, &g_kernel);
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

/* How many times LiteRT ran the kernel since the library was loaded (tests). */
EXPORT int qaccel_litert_runs(void) { return g_kernel.runs; }
