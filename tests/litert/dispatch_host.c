/* A C host program that runs a qaccel DISPATCH_OP model (model.qaccel.dispatch.tflite) with
 * LiteRT, without Python and without any qaccel code linked: it links libLiteRt.so only, gives
 * LiteRT the directory of libLiteRtDispatch_Qaccel as its dispatch library directory, selects
 * the NPU and CPU accelerators and runs the CPU kernels in reference mode.  One int8 input and
 * one int8 output:
 *     dispatch_host MODEL DISPATCH_DIR IN.bin 1x32x32x3 OUT.bin 1x10
 * Exit 0 on success; else one line on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qaccel_litert_api.h"

#define PROG "dispatch_host"
static void die(const char *what, int status) {
  fprintf(stderr, "dispatch_host: error: %s (status %d)\n", what, status);
  exit(1);
}
#define CHECK(x) do { int s_ = (x); if (s_) die(#x, s_); } while (0)
#include "host_io.h"

int main(int argc, char **argv) {
  if (argc != 7) { fprintf(stderr, "usage: dispatch_host MODEL DISPATCH_DIR IN.bin SHAPE OUT.bin SHAPE\n"); return 1; }
  LiteRtEnvOption dir;
  memset(&dir, 0, sizeof dir);
  dir.tag = QLRT_ENV_DISPATCH_LIBRARY_DIR;
  dir.value.type = QLRT_ANY_STRING;
  dir.value.v.str_value = argv[2];
  LiteRtEnvironment env = NULL;
  CHECK(LiteRtCreateEnvironment(1, &dir, &env));
  LiteRtModel model = NULL;
  CHECK(LiteRtCreateModelFromFile(env, argv[1], &model));
  LiteRtOptions opts = npu_and_reference_cpu();
  return run_once(env, model, opts, argv[4], argv[3], argv[6], argv[5]);
}
