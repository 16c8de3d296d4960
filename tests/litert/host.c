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

static void die(const char *what, int status) {
  const char *err = qaccel_litert_last_error();
  fprintf(stderr, "host: error: %s (status %d)%s%s\n", what, status, *err ? ": " : "", err);
  exit(1);
}
#define CHECK(x) do { int s_ = (x); if (s_ || *qaccel_litert_last_error()) die(#x, s_); } while (0)

static size_t parse_shape(const char *text, LiteRtRankedTensorType *t) {
  memset(t, 0, sizeof *t);
  t->element_type = QLRT_ELEM_INT8;
  size_t n = 1;
  char *end;
  for (const char *p = text; *p; p = *end ? end + 1 : end) {
    long d = strtol(p, &end, 10);
    if (d <= 0 || t->layout.rank >= QLRT_MAX_RANK) { fprintf(stderr, "host: error: bad shape %s\n", text); exit(1); }
    t->layout.dimensions[t->layout.rank++] = (int32_t)d;
    n *= (size_t)d;
  }
  return n;
}

int main(int argc, char **argv) {
  if (argc != 6) { fprintf(stderr, "usage: host MODEL IN.bin SHAPE OUT.bin SHAPE\n"); return 1; }
  LiteRtRankedTensorType tin, tout;
  size_t nin = parse_shape(argv[3], &tin), nout = parse_shape(argv[5], &tout);
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
  LiteRtCompiledModel cm = NULL;
  CHECK(LiteRtCreateCompiledModel(env, model, opts, &cm));
  LiteRtTensorBuffer bin, bout;
  CHECK(LiteRtCreateManagedTensorBuffer(env, QLRT_TENSOR_BUFFER_HOST_MEMORY, &tin, nin, &bin));
  CHECK(LiteRtCreateManagedTensorBuffer(env, QLRT_TENSOR_BUFFER_HOST_MEMORY, &tout, nout, &bout));
  void *p;
  CHECK(LiteRtLockTensorBuffer(bin, &p, QLRT_LOCK_WRITE));
  FILE *f = fopen(argv[2], "rb");
  if (!f || fread(p, 1, nin, f) != nin) { fprintf(stderr, "host: error: cannot read %zu bytes from %s\n", nin, argv[2]); return 1; }
  fclose(f);
  CHECK(LiteRtUnlockTensorBuffer(bin));
  CHECK(LiteRtRunCompiledModel(cm, 0, 1, &bin, 1, &bout));
  CHECK(LiteRtLockTensorBuffer(bout, &p, QLRT_LOCK_READ));
  f = fopen(argv[4], "wb");
  if (!f || fwrite(p, 1, nout, f) != nout) { fprintf(stderr, "host: error: cannot write %s\n", argv[4]); return 1; }
  fclose(f);
  CHECK(LiteRtUnlockTensorBuffer(bout));
  LiteRtDestroyTensorBuffer(bin);
  LiteRtDestroyTensorBuffer(bout);
  LiteRtDestroyCompiledModel(cm);
  LiteRtDestroyOptions(opts);
  LiteRtDestroyModel(model);
  LiteRtDestroyEnvironment(env);
  return 0;
}
