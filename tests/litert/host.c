/* A C host program that runs a qaccel AOT model (model.qaccel.tflite) with LiteRT, without
 * Python: links libLiteRt.so and libqaccel_litert's sources, registers the QACCEL_VTA kernel,
 * runs the CPU kernels in reference mode.  One int8 input and one int8 output:
 *     host MODEL IN.bin 1x32x32x3 OUT.bin 1x10
 * Exit 0 on success; else one line on stderr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qaccel_litert_api.h"

int qaccel_litert_bind(const char *path);
int qaccel_litert_register(LiteRtOptions options);
int qaccel_litert_set_cpu_kernel_mode(LiteRtOptions options, const char *mode);
const char *qaccel_litert_last_error(void);

#define PROG "host"
static void die(const char *what, int status) {
  const char *err = qaccel_litert_last_error();
  fprintf(stderr, "host: error: %s (status %d)%s%s\n", what, status, *err ? ": " : "", err);
  exit(1);
}
#define CHECK(x) do { int s_ = (x); if (s_ || *qaccel_litert_last_error()) die(#x, s_); } while (0)
#include "host_io.h"

int main(int argc, char **argv) {
  if (argc != 6) { fprintf(stderr, "usage: host MODEL IN.bin SHAPE OUT.bin SHAPE\n"); return 1; }
  CHECK(qaccel_litert_bind(NULL)); /* LiteRT is linked into this process */
  LiteRtEnvironment env = NULL;
  CHECK(LiteRtCreateEnvironment(0, NULL, &env));
  LiteRtModel model = NULL;
  CHECK(LiteRtCreateModelFromFile(env, argv[1], &model));
  LiteRtOptions opts = NULL;
  CHECK(LiteRtCreateOptions(&opts));
  CHECK(LiteRtSetOptionsHardwareAccelerators(opts, QLRT_HW_CPU));
  CHECK(qaccel_litert_set_cpu_kernel_mode(opts, "reference"));
  CHECK(qaccel_litert_register(opts));
  return run_once(env, model, opts, argv[3], argv[2], argv[5], argv[4]);
}
