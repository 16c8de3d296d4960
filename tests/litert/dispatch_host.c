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

static void die(const char *what, int status) {
  fprintf(stderr, "dispatch_host: error: %s (status %d)\n", what, status);
  exit(1);
}
#define CHECK(x) do { int s_ = (x); if (s_) die(#x, s_); } while (0)

static size_t parse_shape(const char *text, LiteRtRankedTensorType *t) {
  memset(t, 0, sizeof *t);
  t->element_type = QLRT_ELEM_INT8;
  size_t n = 1;
  char *end;
  for (const char *p = text; *p; p = *end ? end + 1 : end) {
    long d = strtol(p, &end, 10);
    if (d <= 0 || t->layout.rank >= QLRT_MAX_RANK) { fprintf(stderr, "dispatch_host: error: bad shape %s\n", text); exit(1); }
    t->layout.dimensions[t->layout.rank++] = (int32_t)d;
    n *= (size_t)d;
  }
  return n;
}

static void free_payload(void *p) { free(p); }

int main(int argc, char **argv) {
  if (argc != 7) { fprintf(stderr, "usage: dispatch_host MODEL DISPATCH_DIR IN.bin SHAPE OUT.bin SHAPE\n"); return 1; }
  LiteRtRankedTensorType tin, tout;
  size_t nin = parse_shape(argv[4], &tin), nout = parse_shape(argv[6], &tout);
  LiteRtEnvOption dir;
  memset(&dir, 0, sizeof dir);
  dir.tag = QLRT_ENV_DISPATCH_LIBRARY_DIR;
  dir.value.type = QLRT_ANY_STRING;
  dir.value.v.str_value = argv[2];
  LiteRtEnvironment env = NULL;
  CHECK(LiteRtCreateEnvironment(1, &dir, &env));
  LiteRtModel model = NULL;
  CHECK(LiteRtCreateModelFromFile(env, argv[1], &model));
  LiteRtOptions opts = NULL;
  CHECK(LiteRtCreateOptions(&opts));
  CHECK(LiteRtSetOptionsHardwareAccelerators(opts, QLRT_HW_NPU | QLRT_HW_CPU));
  /* CPU options: identifier "xnnpack", a TOML payload; LiteRT owns it once added */
  const char toml[] = "kernel_mode = \"reference\"\nnum_threads = 1\n";
  char *payload = (char *)malloc(sizeof toml);
  if (!payload) die("malloc", 0);
  memcpy(payload, toml, sizeof toml);
  LiteRtOpaqueOptions cpu = NULL;
  CHECK(LiteRtCreateOpaqueOptions("xnnpack", payload, free_payload, &cpu));
  CHECK(LiteRtAddOpaqueOptions(opts, cpu));
  LiteRtCompiledModel cm = NULL;
  CHECK(LiteRtCreateCompiledModel(env, model, opts, &cm));
  LiteRtTensorBuffer bin, bout;
  CHECK(LiteRtCreateManagedTensorBuffer(env, QLRT_TENSOR_BUFFER_HOST_MEMORY, &tin, nin, &bin));
  CHECK(LiteRtCreateManagedTensorBuffer(env, QLRT_TENSOR_BUFFER_HOST_MEMORY, &tout, nout, &bout));
  void *p;
  CHECK(LiteRtLockTensorBuffer(bin, &p, QLRT_LOCK_WRITE));
  FILE *f = fopen(argv[3], "rb");
  if (!f || fread(p, 1, nin, f) != nin) { fprintf(stderr, "dispatch_host: error: cannot read %zu bytes from %s\n", nin, argv[3]); return 1; }
  fclose(f);
  CHECK(LiteRtUnlockTensorBuffer(bin));
  CHECK(LiteRtRunCompiledModel(cm, 0, 1, &bin, 1, &bout));
  CHECK(LiteRtLockTensorBuffer(bout, &p, QLRT_LOCK_READ));
  f = fopen(argv[5], "wb");
  if (!f || fwrite(p, 1, nout, f) != nout) { fprintf(stderr, "dispatch_host: error: cannot write %s\n", argv[5]); return 1; }
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
