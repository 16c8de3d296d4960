/* A C host program that runs an ORIGINAL .tflite model with qaccel's classic delegate compiling
 * on the spot (no artifact), without Python and without any qaccel code linked: it links
 * libLiteRt.so only, opens libqaccel_delegate.so, creates the delegate through its external
 * delegate entry point (tflite_plugin_create_delegate, options `config=NAME` when given) and
 * hands it to LiteRT's CompiledModel as an accelerator of its own (LiteRtCreateAccelerator,
 * LiteRtSetDelegateFunction wrapping it with LiteRtWrapDelegate, LiteRtRegisterAccelerator),
 * with the CPU kernels in reference mode for the rest.  The delegate's Prepare describes each
 * subgraph and hands it to qaccel's compiler through its bridge, which starts the environment's
 * Python inside this host.  One int8 input and one int8 output:
 *     delegate_host MODEL DELEGATE_LIB IN.bin 1x32x32x3 OUT.bin 1x10 [CONFIG]
 * Then it checks through the delegate's counters that it compiled, claimed nodes and ran every
 * kernel (no silent CPU fallback).  Exit 0 on success; else one line on stderr. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qaccel_litert_api.h"

#define PROG "delegate_host"
static void die(const char *what, int status) {
  fprintf(stderr, "delegate_host: error: %s (status %d)\n", what, status);
  exit(1);
}
#define CHECK(x) do { int s_ = (x); if (s_) die(#x, s_); } while (0)
#include "host_io.h"

/* LiteRT's accelerator registration (litert_accelerator_registration.h, 2.3.0), declared here:
 * LiteRT ships no headers. Handles are opaque pointers. */
typedef struct LiteRtAcceleratorT *LiteRtAccelerator;
typedef struct LiteRtDelegateWrapperT *LiteRtDelegateWrapper;
typedef struct { int major, minor, patch; } HostApiVersion;
typedef void TfLiteOpaqueDelegate; /* a TfLiteDelegate, as tflite_plugin_create_delegate gives */
LiteRtStatus LiteRtCreateAccelerator(LiteRtAccelerator *accelerator);
LiteRtStatus LiteRtRegisterAccelerator(LiteRtEnvironment env, LiteRtAccelerator accelerator,
                                       void *data, void (*release)(void *));
LiteRtStatus LiteRtSetAcceleratorGetName(LiteRtAccelerator,
                                         LiteRtStatus (*)(const void *, const char **));
LiteRtStatus LiteRtSetAcceleratorGetVersion(LiteRtAccelerator,
                                            LiteRtStatus (*)(const void *, HostApiVersion *));
LiteRtStatus LiteRtSetAcceleratorGetHardwareSupport(
    LiteRtAccelerator, LiteRtStatus (*)(const void *, LiteRtHwAcceleratorSet *));
LiteRtStatus LiteRtSetDelegateFunction(
    LiteRtAccelerator, LiteRtStatus (*)(void *runtime_context, LiteRtEnvironment env,
                                        const void *accelerator, LiteRtOptions options,
                                        LiteRtDelegateWrapper *delegate));
LiteRtStatus LiteRtWrapDelegate(TfLiteOpaqueDelegate *delegate,
                                void (*deleter)(TfLiteOpaqueDelegate *),
                                LiteRtDelegateWrapper *wrapper);

typedef void *(*CreateDelegate)(char **keys, char **values, size_t n, void (*report)(const char *));
typedef long (*Counter)(const void *delegate);

static void *the_delegate; /* made before the compiled model, destroyed after it */

static void report(const char *message) { fprintf(stderr, "delegate_host: error: %s\n", message); }
static LiteRtStatus get_name(const void *a, const char **name) {
  (void)a;
  *name = "qaccel delegate";
  return 0;
}
static LiteRtStatus get_version(const void *a, HostApiVersion *v) {
  (void)a;
  v->major = 1;
  v->minor = v->patch = 0;
  return 0;
}
static LiteRtStatus get_hardware(const void *a, LiteRtHwAcceleratorSet *hw) {
  (void)a;
  *hw = QLRT_HW_CPU; /* an NPU accelerator is not applied this way in 2.3.0 */
  return 0;
}
static void keep(TfLiteOpaqueDelegate *d) { (void)d; } /* the host destroys it */
static LiteRtStatus create_delegate(void *runtime_context, LiteRtEnvironment env,
                                    const void *accelerator, LiteRtOptions options,
                                    LiteRtDelegateWrapper *wrapper) {
  (void)runtime_context, (void)env, (void)accelerator, (void)options;
  return LiteRtWrapDelegate(the_delegate, keep, wrapper);
}

int main(int argc, char **argv) {
  if (argc != 7 && argc != 8) {
    fprintf(stderr, "usage: delegate_host MODEL DELEGATE_LIB IN.bin SHAPE OUT.bin SHAPE [CONFIG]\n");
    return 1;
  }
  void *lib = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "delegate_host: error: cannot open %s: %s\n", argv[2], dlerror());
    return 1;
  }
  CreateDelegate create = (CreateDelegate)dlsym(lib, "tflite_plugin_create_delegate");
  void (*destroy)(void *) = (void (*)(void *))dlsym(lib, "tflite_plugin_destroy_delegate");
  Counter invocations = (Counter)dlsym(lib, "qaccel_delegate_invocations");
  Counter kernels = (Counter)dlsym(lib, "qaccel_delegate_kernels");
  Counter kernels_ran = (Counter)dlsym(lib, "qaccel_delegate_kernels_ran");
  Counter claimed = (Counter)dlsym(lib, "qaccel_delegate_claimed_nodes");
  Counter compiled = (Counter)dlsym(lib, "qaccel_delegate_compiled_subgraphs");
  if (!create || !destroy || !invocations || !kernels || !kernels_ran || !claimed || !compiled)
    die("not qaccel's delegate library", 0);
  char *keys[] = {"config"}, *values[] = {argc == 8 ? argv[7] : NULL};
  the_delegate = create(keys, values, argc == 8 ? 1 : 0, report);
  if (!the_delegate) return 1; /* report() said why */

  LiteRtEnvironment env = NULL;
  CHECK(LiteRtCreateEnvironment(0, NULL, &env));
  LiteRtAccelerator acc = NULL;
  CHECK(LiteRtCreateAccelerator(&acc));
  CHECK(LiteRtSetAcceleratorGetName(acc, get_name));
  CHECK(LiteRtSetAcceleratorGetVersion(acc, get_version));
  CHECK(LiteRtSetAcceleratorGetHardwareSupport(acc, get_hardware));
  CHECK(LiteRtSetDelegateFunction(acc, create_delegate));
  CHECK(LiteRtRegisterAccelerator(env, acc, NULL, NULL));
  LiteRtModel model = NULL;
  CHECK(LiteRtCreateModelFromFile(env, argv[1], &model));
  LiteRtOptions opts = npu_and_reference_cpu();
  int rc = run_once(env, model, opts, argv[4], argv[3], argv[6], argv[5]);
  if (rc) return rc;
  long k = kernels(the_delegate), ran = kernels_ran(the_delegate), n = invocations(the_delegate);
  long nodes = claimed(the_delegate), subgraphs = compiled(the_delegate);
  destroy(the_delegate);
  if (subgraphs < 1 || nodes < 1 || k < 1 || ran != k || n < k) {
    fprintf(stderr, "delegate_host: error: the delegate compiled %ld subgraph(s), claimed %ld "
            "node(s), %ld of %ld kernel(s) ran\n", subgraphs, nodes, ran, k);
    return 1;
  }
  printf("delegate_host: %ld subgraph(s) compiled on the spot, %ld node(s) in %ld kernel(s), "
         "%ld invocation(s)\n", subgraphs, nodes, k, n);
  dlclose(lib);
  return 0;
}
