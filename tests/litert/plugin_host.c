/* A C host program that compiles an ORIGINAL .tflite model on the device with qaccel's compiler
 * plugin and runs it through qaccel's dispatch library, without Python and without any qaccel
 * code linked: it links libLiteRt.so only, gives LiteRT the directories of
 * libLiteRtCompilerPlugin_Qaccel and libLiteRtDispatch_Qaccel (environment options 0 and 1),
 * selects the NPU and CPU accelerators and runs the CPU kernels in reference mode.  The plugin
 * starts its own Python to compile.  One int8 input and one int8 output:
 *     plugin_host MODEL PLUGIN_LIB DISPATCH_LIB IN.bin 1x32x32x3 OUT.bin 1x10 [QACCEL_OPTIONS]
 * QACCEL_OPTIONS (e.g. "config=vta-store-requant") is handed to the plugin as LiteRT's plugin
 * options: opaque options "qaccel" in the compiled model's options.
 * Then it checks, through the two libraries LiteRT loaded, that the plugin compiled and that
 * the dispatch library ran every program (LiteRT falls back to the CPU silently otherwise).
 * Exit 0 on success; else one line on stderr. */
#define _GNU_SOURCE /* RTLD_NOLOAD */
#include <dlfcn.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qaccel_litert_api.h"

#define PROG "plugin_host"
static void die(const char *what, int status) {
  fprintf(stderr, "plugin_host: error: %s (status %d)\n", what, status);
  exit(1);
}
#define CHECK(x) do { int s_ = (x); if (s_) die(#x, s_); } while (0)
#include "host_io.h"

static void *loaded(const char *path) {
  void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
  if (!h) {
    fprintf(stderr, "plugin_host: error: LiteRT did not load %s\n", path);
    exit(1);
  }
  return h;
}

int main(int argc, char **argv) {
  if (argc != 8 && argc != 9) {
    fprintf(stderr, "usage: plugin_host MODEL PLUGIN_LIB DISPATCH_LIB IN.bin SHAPE OUT.bin SHAPE "
            "[QACCEL_OPTIONS]\n");
    return 1;
  }
  char *plugin_path = strdup(argv[2]), *dispatch_path = strdup(argv[3]);
  char *plugin_copy = strdup(argv[2]), *dispatch_copy = strdup(argv[3]);
  if (!plugin_path || !dispatch_path || !plugin_copy || !dispatch_copy) die("strdup", 0);
  LiteRtEnvOption dirs[2];
  memset(dirs, 0, sizeof dirs);
  dirs[0].tag = QLRT_ENV_COMPILER_PLUGIN_DIR;
  dirs[0].value.type = QLRT_ANY_STRING;
  dirs[0].value.v.str_value = dirname(plugin_copy);
  dirs[1].tag = QLRT_ENV_DISPATCH_LIBRARY_DIR;
  dirs[1].value.type = QLRT_ANY_STRING;
  dirs[1].value.v.str_value = dirname(dispatch_copy);
  LiteRtEnvironment env = NULL;
  CHECK(LiteRtCreateEnvironment(2, dirs, &env));
  LiteRtModel model = NULL;
  CHECK(LiteRtCreateModelFromFile(env, argv[1], &model));
  LiteRtOptions opts = npu_and_reference_cpu();
  if (argc == 9) { /* the plugin's options: LiteRT owns the payload (freed with the options) */
    char *payload = strdup(argv[8]);
    LiteRtOpaqueOptions qaccel = NULL;
    if (!payload) die("strdup", 0);
    CHECK(LiteRtCreateOpaqueOptions("qaccel", payload, free_payload, &qaccel));
    CHECK(LiteRtAddOpaqueOptions(opts, qaccel));
  }
  int rc = run_once(env, model, opts, argv[5], argv[4], argv[7], argv[6]);
  if (rc) return rc;
  /* No silent CPU fallback: the plugin compiled, and every program it returned ran. */
  void *plugin = loaded(plugin_path);
  const char *(*plugin_error)(void) = (const char *(*)(void))dlsym(plugin, "qaccel_plugin_last_error");
  if (plugin_error && plugin_error()[0]) { /* the plugin's own line, before LiteRT's fallback */
    fprintf(stderr, "plugin_host: error: the compiler plugin failed: %s\n", plugin_error());
    return 1;
  }
  void *dispatch = loaded(dispatch_path);
  long (*compiles)(void) = (long (*)(void))dlsym(plugin, "qaccel_plugin_compile_calls");
  long (*programs)(void) = (long (*)(void))dlsym(plugin, "qaccel_plugin_last_programs");
  long (*ran)(void) = (long (*)(void))dlsym(dispatch, "qaccel_dispatch_invocations");
  if (!plugin_error || !compiles || !programs || !ran) die("qaccel's counters not found", 0);
  if (compiles() != 1 || ran() != programs()) {
    fprintf(stderr, "plugin_host: error: %ld compile(s), %ld of %ld program(s) ran\n", compiles(),
            ran(), programs());
    return 1;
  }
  printf("plugin_host: %ld program(s) compiled by the plugin ran in the dispatch library\n",
         programs());
  dlclose(plugin);
  dlclose(dispatch);
  free(plugin_path);
  free(dispatch_path);
  free(plugin_copy);
  free(dispatch_copy);
  return 0;
}
