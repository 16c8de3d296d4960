/* What the C host programs (host.c, dispatch_host.c, plugin_host.c) share: reading a shape
 * argument, the options of a run on the NPU and the CPU's reference kernels, and one run of a
 * compiled model on one int8 input file, writing its one int8 output file, then releasing
 * everything.  The including program defines PROG (its name, for messages) and
 * CHECK(call) (which ends the program with one line when a LiteRT call fails). */
#ifndef QACCEL_TESTS_HOST_IO_H
#define QACCEL_TESTS_HOST_IO_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qaccel_litert_api.h"

static void free_payload(void *p) { free(p); }

/* Options selecting the NPU and the CPU, the CPU kernels in reference mode on one thread (CPU
 * options: identifier "xnnpack", a TOML payload; LiteRT owns it once added). */
static inline LiteRtOptions npu_and_reference_cpu(void) {
  LiteRtOptions opts = NULL;
  CHECK(LiteRtCreateOptions(&opts));
  CHECK(LiteRtSetOptionsHardwareAccelerators(opts, QLRT_HW_NPU | QLRT_HW_CPU));
  const char toml[] = "kernel_mode = \"reference\"\nnum_threads = 1\n";
  char *payload = (char *)malloc(sizeof toml);
  if (!payload) {
    fprintf(stderr, PROG ": error: out of memory\n");
    exit(1);
  }
  memcpy(payload, toml, sizeof toml);
  LiteRtOpaqueOptions cpu = NULL;
  CHECK(LiteRtCreateOpaqueOptions("xnnpack", payload, free_payload, &cpu));
  CHECK(LiteRtAddOpaqueOptions(opts, cpu));
  return opts;
}

/* "1x32x32x3" as an int8 ranked tensor type; returns its element count. */
static size_t parse_shape(const char *text, LiteRtRankedTensorType *t) {
  memset(t, 0, sizeof *t);
  t->element_type = QLRT_ELEM_INT8;
  size_t n = 1;
  char *end;
  for (const char *p = text; *p; p = *end ? end + 1 : end) {
    long d = strtol(p, &end, 10);
    if (d <= 0 || t->layout.rank >= QLRT_MAX_RANK) {
      fprintf(stderr, "%s: error: bad shape %s\n", PROG, text);
      exit(1);
    }
    t->layout.dimensions[t->layout.rank++] = (int32_t)d;
    n *= (size_t)d;
  }
  return n;
}

/* Compile `model` with `opts`, run it once from in_path to out_path, destroy everything. */
static int run_once(LiteRtEnvironment env, LiteRtModel model, LiteRtOptions opts,
                    const char *in_shape, const char *in_path, const char *out_shape,
                    const char *out_path) {
  LiteRtRankedTensorType tin, tout;
  size_t nin = parse_shape(in_shape, &tin), nout = parse_shape(out_shape, &tout);
  LiteRtCompiledModel cm = NULL;
  CHECK(LiteRtCreateCompiledModel(env, model, opts, &cm));
  LiteRtTensorBuffer bin, bout;
  CHECK(LiteRtCreateManagedTensorBuffer(env, QLRT_TENSOR_BUFFER_HOST_MEMORY, &tin, nin, &bin));
  CHECK(LiteRtCreateManagedTensorBuffer(env, QLRT_TENSOR_BUFFER_HOST_MEMORY, &tout, nout, &bout));
  void *p;
  CHECK(LiteRtLockTensorBuffer(bin, &p, QLRT_LOCK_WRITE));
  FILE *f = fopen(in_path, "rb");
  if (!f || fread(p, 1, nin, f) != nin) {
    fprintf(stderr, "%s: error: cannot read %zu bytes from %s\n", PROG, nin, in_path);
    return 1;
  }
  fclose(f);
  CHECK(LiteRtUnlockTensorBuffer(bin));
  CHECK(LiteRtRunCompiledModel(cm, 0, 1, &bin, 1, &bout));
  CHECK(LiteRtLockTensorBuffer(bout, &p, QLRT_LOCK_READ));
  f = fopen(out_path, "wb");
  if (!f || fwrite(p, 1, nout, f) != nout) {
    fprintf(stderr, "%s: error: cannot write %s\n", PROG, out_path);
    return 1;
  }
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

#endif
