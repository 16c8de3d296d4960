/* The qaccel program runner shared by LiteRT's two integration paths: the QACCEL_VTA custom-op
 * kernel (qaccel_kernel.c, libqaccel_litert) and the dispatch library (qaccel_dispatch.c,
 * libLiteRtDispatch_Qaccel).  A program (format: backends/litert/aot.py) is validated (magic,
 * format version, hardware configuration, every offset and size) and run: the inputs packed into
 * the function's values, the steps walked (write an arena slot of the DRAM image, run a layer on
 * libqaccel_vta (targets/vta/machine/vta_machine.c), read a slot back, requantize on the host in
 * double precision as LiteRT's FULLY_CONNECTED does, and the other host ops a function keeps:
 * pad, concatenate, lane and binary integer ops, widen, narrow, reduce_sum), the outputs
 * unpacked.  Errors go to a per-library side channel, qaccel_litert_last_error() (the first
 * error since qaccel_litert_clear_error()). */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qaccel_program.h"
#include "vta_machine.h"

enum { PROGRAM_VERSION = 1, HEADER_BYTES = 192, VALUE_BYTES = 16, IO_BYTES = 176, STEP_BYTES = 96,
       LAYER_BYTES = 32, MAX_RANK = 8,
       KIND_WRITE = 1, KIND_LAYER = 2, KIND_READ = 3, KIND_REQUANT = 4, KIND_PAD = 5, KIND_CONCAT = 6,
       KIND_LANE = 7, KIND_BINARY = 8, KIND_REDUCE = 9 };
/* KIND_LANE / KIND_BINARY operations */
enum { OP_CONVERT = 0, OP_BIAS_ADD = 1, OP_SHIFT_LEFT = 2, OP_ROUND_MULTIPLY = 3, OP_ROUND_RSHIFT = 4,
       OP_ADD = 5, OP_MUL = 6, OP_MIN = 7, OP_MAX = 8 };
static const char PROGRAM_MAGIC[8] = {'Q', 'A', 'C', 'C', 'P', 'R', 'O', 'G'};

#define u32 qaccel_u32
#define i32 qaccel_i32
#define u64 qaccel_u64
#define i64 qaccel_i64

/* ---- error side channel ------------------------------------------------------------------ */
static char g_error[512];

int qaccel_fail(const char *fmt, ...) {
  if (g_error[0]) return 1; /* keep the first error: the cause */
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_error, sizeof g_error, fmt, ap);
  va_end(ap);
  return 1;
}

int qaccel_failed(void) { return g_error[0] != 0; }

#ifndef QACCEL_LITERT_SOURCE_HASH
#define QACCEL_LITERT_SOURCE_HASH ""
#endif
/* The digest of the sources this library was built from (runtime.py's source hashes). */
QACCEL_EXPORT const char *qaccel_litert_source_hash(void) { return QACCEL_LITERT_SOURCE_HASH; }

QACCEL_EXPORT const char *qaccel_litert_last_error(void) { return g_error; }
QACCEL_EXPORT void qaccel_litert_clear_error(void) { g_error[0] = 0; }

/* ---- the program ------------------------------------------------------------------------- */

typedef struct {
  const uint8_t *base;
  uint64_t total, dram_bytes, dram_at, values_at, io_at, steps_at, layers_at;
  uint32_t n_in, n_out, n_values, n_steps, n_layers;
  vta_config cfg;
} Program;

static int in_range(const Program *p, uint64_t at, uint64_t n) {
  return at <= p->total && n <= p->total - at;
}

#define MAX_ELEMENTS (1ull << 31) /* per value, and per dimension */

/* outer * mid * inner divides n (<= MAX_ELEMENTS), each factor positive: no overflow. */
static int geometry_ok(int64_t outer, int64_t mid, int64_t inner, uint64_t n) {
  if (outer <= 0 || mid <= 0 || inner <= 0 || (uint64_t)outer > n || (uint64_t)mid > n || (uint64_t)inner > n)
    return 0;
  uint64_t mi = (uint64_t)mid * (uint64_t)inner;
  if (mi > n || (uint64_t)outer > n / mi) return 0;
  return n % (mi * (uint64_t)outer) == 0;
}

/* *product *= d, unless d is out of (0, MAX_ELEMENTS] or the product exceeds it. */
static int times(uint64_t *product, int64_t d) {
  if (d <= 0 || (uint64_t)d > MAX_ELEMENTS || *product > MAX_ELEMENTS / (uint64_t)d) return 0;
  *product *= (uint64_t)d;
  return 1;
}

/* Header, configuration and table bounds; 0 when the program can be run. */
static int parse_program(const uint8_t *b, size_t size, Program *p) {
  if (size < HEADER_BYTES) return qaccel_fail("QACCEL_VTA: program of %zu bytes, shorter than its header", size);
  if (memcmp(b, PROGRAM_MAGIC, 8) != 0) return qaccel_fail("QACCEL_VTA: bad program magic (not a qaccel program)");
  uint32_t version = u32(b + 8);
  if (version != PROGRAM_VERSION)
    return qaccel_fail("QACCEL_VTA: program format version %u, this kernel reads version %d", version,
                PROGRAM_VERSION);
  if (u32(b + 12) != HEADER_BYTES) return qaccel_fail("QACCEL_VTA: header of %u bytes, expected %d", u32(b + 12), HEADER_BYTES);
  p->base = b;
  p->total = u64(b + 16);
  if (p->total > size) return qaccel_fail("QACCEL_VTA: program truncated (%zu of %llu bytes)", size, (unsigned long long)p->total);
  p->n_in = u32(b + 24); p->n_out = u32(b + 28); p->n_values = u32(b + 32);
  p->n_steps = u32(b + 36); p->n_layers = u32(b + 40);
  p->dram_bytes = u64(b + 48); p->dram_at = u64(b + 56);
  const uint8_t *field = b + 64; /* i64 config[VTA_CONFIG_N_FIELDS], vta_config's order */
#define READ_CONFIG_FIELD(key, lowest, highest) p->cfg.key = i64(field); field += 8;
  VTA_CONFIG_FIELDS(READ_CONFIG_FIELD)
#undef READ_CONFIG_FIELD
  p->values_at = u64(b + 152); p->io_at = u64(b + 160); p->steps_at = u64(b + 168);
  p->layers_at = u64(b + 176);
  if (field != b + 152 || vta_config_check(&p->cfg) != VTA_OK)
    return qaccel_fail("QACCEL_VTA: hardware configuration not supported by this kernel (log_block %lld, "
                "store_requant %lld, bus %lld bytes)", (long long)p->cfg.log_block,
                (long long)p->cfg.store_requant, (long long)p->cfg.bus_width_bytes);
  if (p->n_values > (1u << 20) || p->n_steps > (1u << 20) || p->n_layers > (1u << 20) ||
      p->n_in + (uint64_t)p->n_out > 4096 ||
      !in_range(p, p->values_at, (uint64_t)VALUE_BYTES * p->n_values) ||
      !in_range(p, p->io_at, (uint64_t)IO_BYTES * (p->n_in + p->n_out)) ||
      !in_range(p, p->steps_at, (uint64_t)STEP_BYTES * p->n_steps) ||
      !in_range(p, p->layers_at, (uint64_t)LAYER_BYTES * p->n_layers) ||
      !in_range(p, p->dram_at, p->dram_bytes))
    return qaccel_fail("QACCEL_VTA: program tables out of range (corrupt program)");
  for (uint32_t k = 0; k < p->n_layers; k++) {
    const uint8_t *l = b + p->layers_at + (uint64_t)LAYER_BYTES * k;
    uint64_t w_at = u64(l), n = u64(l + 8), u_at = u64(l + 16), nu = u64(l + 24);
    if (n > (1ull << 40) || nu > (1ull << 40) || !in_range(p, w_at, 16 * n) || !in_range(p, u_at, 4 * nu) ||
        (w_at % 8) || (u_at % 4))
      return qaccel_fail("QACCEL_VTA: layer %u's instructions out of range (corrupt program)", k);
  }
  return 0;
}

typedef struct {
  uint32_t elem;
  uint64_t count;
  uint8_t *data;
} Value;

/* The io record's pack/unpack geometry, checked against its value. */
typedef struct {
  uint32_t value, rank, elem;
  int32_t pad;
  int64_t plain[MAX_RANK], split[2 * MAX_RANK];
  int32_t order[2 * MAX_RANK];
  uint64_t plain_count, packed_count;
} Io;

static int parse_io(const Program *p, uint32_t k, Io *io, const Value *values) {
  const uint8_t *r = p->base + p->io_at + (uint64_t)IO_BYTES * k;
  io->value = u32(r); io->rank = u32(r + 4); io->pad = i32(r + 8); io->elem = u32(r + 12);
  if (io->value >= p->n_values || io->rank == 0 || io->rank > MAX_RANK ||
      io->elem != values[io->value].elem)
    return qaccel_fail("QACCEL_VTA: tensor %u of the program is malformed (corrupt program)", k);
  io->plain_count = io->packed_count = 1;
  int seen[2 * MAX_RANK] = {0};
  for (uint32_t d = 0; d < io->rank; d++) {
    io->plain[d] = i32(r + 16 + 4 * d);
    if (!times(&io->plain_count, io->plain[d])) return qaccel_fail("QACCEL_VTA: tensor %u has a bad shape (corrupt program)", k);
  }
  for (uint32_t j = 0; j < 2 * io->rank; j++) {
    io->split[j] = i32(r + 48 + 4 * j);
    io->order[j] = i32(r + 112 + 4 * j);
    if (!times(&io->packed_count, io->split[j]) || io->order[j] < 0 || io->order[j] >= (int32_t)(2 * io->rank) ||
        seen[io->order[j]]++)
      return qaccel_fail("QACCEL_VTA: tensor %u has a bad packing (corrupt program)", k);
  }
  for (uint32_t d = 0; d < io->rank; d++)
    if (io->split[2 * d] * io->split[2 * d + 1] < io->plain[d])
      return qaccel_fail("QACCEL_VTA: tensor %u's packing is smaller than the tensor (corrupt program)", k);
  if (io->packed_count != values[io->value].count)
    return qaccel_fail("QACCEL_VTA: tensor %u packs into %llu elements, its value has %llu (corrupt program)",
                k, (unsigned long long)io->packed_count, (unsigned long long)values[io->value].count);
  return 0;
}

/* pack (to_packed = 1): packed[i] = plain[...] or the padding value; unpack: the reverse,
 * padding dropped.  The packed tensor is transpose(reshape(pad(plain), split), order). */
static void repack(const Io *io, uint8_t *plain, uint8_t *packed, int to_packed) {
  int n = 2 * (int)io->rank;
  int64_t dims[2 * MAX_RANK], idx[2 * MAX_RANK] = {0}, s[2 * MAX_RANK], stride[MAX_RANK];
  for (int k = 0; k < n; k++) dims[k] = io->split[io->order[k]];
  stride[io->rank - 1] = 1;
  for (int d = (int)io->rank - 2; d >= 0; d--) stride[d] = stride[d + 1] * io->plain[d + 1];
  size_t e = io->elem;
  for (uint64_t i = 0; i < io->packed_count; i++) {
    for (int k = 0; k < n; k++) s[io->order[k]] = idx[k];
    int64_t flat = 0, inside = 1;
    for (uint32_t d = 0; d < io->rank; d++) {
      int64_t c = s[2 * d] * io->split[2 * d + 1] + s[2 * d + 1];
      if (c >= io->plain[d]) { inside = 0; break; }
      flat += c * stride[d];
    }
    if (to_packed) {
      if (inside) memcpy(packed + i * e, plain + flat * e, e);
      else if (e == 1) packed[i] = (uint8_t)(int8_t)io->pad;
      else { int32_t v = io->pad; memcpy(packed + i * e, &v, e); }
    } else if (inside) {
      memcpy(plain + flat * e, packed + i * e, e);
    }
    for (int k = n - 1; k >= 0; k--) { /* next packed index */
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
}

/* repack as runs of consecutive elements on both sides, worked out once: (packed index,
 * plain index, length); the packed elements no run covers hold the padding value. */
typedef struct {
  Io io;
  uint64_t n, cap, covered;
  uint64_t *at; /* 3 per run */
} Runs;

static int build_runs(const Io *io, Runs *r) {
  int n = 2 * (int)io->rank;
  int64_t dims[2 * MAX_RANK], idx[2 * MAX_RANK] = {0}, s[2 * MAX_RANK], stride[MAX_RANK];
  r->io = *io;
  r->n = r->covered = 0;
  for (int k = 0; k < n; k++) dims[k] = io->split[io->order[k]];
  stride[io->rank - 1] = 1;
  for (int d = (int)io->rank - 2; d >= 0; d--) stride[d] = stride[d + 1] * io->plain[d + 1];
  for (uint64_t i = 0; i < io->packed_count; i++) {
    for (int k = 0; k < n; k++) s[io->order[k]] = idx[k];
    int64_t flat = 0, inside = 1;
    for (uint32_t d = 0; d < io->rank; d++) {
      int64_t c = s[2 * d] * io->split[2 * d + 1] + s[2 * d + 1];
      if (c >= io->plain[d]) { inside = 0; break; }
      flat += c * stride[d];
    }
    if (inside) {
      uint64_t *last = r->n ? r->at + 3 * (r->n - 1) : NULL;
      if (last && last[0] + last[2] == i && last[1] + last[2] == (uint64_t)flat) {
        last[2]++;
      } else {
        if (r->n == r->cap) {
          uint64_t cap = r->cap ? 2 * r->cap : 64;
          uint64_t *grown = (uint64_t *)realloc(r->at, (size_t)cap * 3 * sizeof(uint64_t));
          if (!grown) return qaccel_fail("QACCEL_VTA: out of memory");
          r->at = grown;
          r->cap = cap;
        }
        r->at[3 * r->n] = i;
        r->at[3 * r->n + 1] = (uint64_t)flat;
        r->at[3 * r->n + 2] = 1;
        r->n++;
      }
      r->covered++;
    }
    for (int k = n - 1; k >= 0; k--) {
      if (++idx[k] < dims[k]) break;
      idx[k] = 0;
    }
  }
  return 0;
}

/* repack by runs (to_packed: pack, else unpack). */
static void repack_runs(const Runs *r, uint8_t *plain, uint8_t *packed, int to_packed) {
  size_t e = r->io.elem;
  if (to_packed && r->covered < r->io.packed_count) {
    if (e == 1) {
      memset(packed, (uint8_t)(int8_t)r->io.pad, (size_t)r->io.packed_count);
    } else {
      int32_t v = r->io.pad;
      for (uint64_t i = 0; i < r->io.packed_count; i++) memcpy(packed + i * e, &v, e);
    }
  }
  for (uint64_t k = 0; k < r->n; k++) {
    const uint64_t *run = r->at + 3 * k;
    if (to_packed) memcpy(packed + run[0] * e, plain + run[1] * e, run[2] * e);
    else memcpy(plain + run[1] * e, packed + run[0] * e, run[2] * e);
  }
}

static int64_t get_elem(const Value *v, uint64_t i) {
  if (v->elem == 1) return (int8_t)v->data[i];
  int32_t x; memcpy(&x, v->data + 4 * i, 4); return x;
}
static void set_elem(Value *v, uint64_t i, int64_t x) {
  if (v->elem == 1) { v->data[i] = (uint8_t)(int8_t)x; return; }
  int32_t y = (int32_t)x; memcpy(v->data + 4 * i, &y, 4);
}

/* accel.host_requantize: clamp(int32(round(double(x - zp_in) * scale)) + zp_out, min, max),
 * halves away from zero (C's round), as interpreter/accel_semantics.host_requantize. */
static int requantize(const Program *p, const uint8_t *s, const Value *in, Value *out) {
  uint32_t n_scales = u32(s + 12);
  int64_t zp_in = i64(s + 16), zp_out = i64(s + 24), lo = i64(s + 32), hi = i64(s + 40);
  int64_t outer = i64(s + 48), mid = i64(s + 56), inner = i64(s + 64);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  if (in->count != out->count || n_scales == 0 || nbytes != 8ull * n_scales || !in_range(p, at, nbytes) ||
      !geometry_ok(outer, mid, inner, in->count) || (n_scales != 1 && (uint64_t)(outer * inner) != n_scales))
    return qaccel_fail("QACCEL_VTA: a host requantization step is malformed (corrupt program)");
  const uint8_t *scales = p->base + at;
  for (uint64_t i = 0; i < in->count; i++) {
    uint64_t lane = n_scales == 1 ? 0 : ((i / (uint64_t)(mid * inner)) % (uint64_t)outer) * (uint64_t)inner + i % (uint64_t)inner;
    double scale; memcpy(&scale, scales + 8 * lane, 8);
    double r = round((double)(get_elem(in, i) - zp_in) * scale);
    int64_t q = (isfinite(r) && r > -2147483649.0 && r < 2147483648.0) ? (int64_t)r : INT32_MIN;
    int64_t y = (int32_t)(uint32_t)(q + zp_out); /* int32 wrap */
    set_elem(out, i, y < lo ? lo : y > hi ? hi : y);
  }
  return 0;
}

/* accel.pad: constant padding of every dimension by (before, after) (spatial ones only). */
static int pad(const Program *p, const uint8_t *s, const Value *in, Value *out) {
  uint32_t rank = u32(s + 12);
  int64_t value = i64(s + 16);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  int64_t shape[MAX_RANK], before[MAX_RANK], oshape[MAX_RANK], idx[MAX_RANK] = {0};
  uint64_t n_in = 1, n_out = 1;
  if (rank == 0 || rank > MAX_RANK || nbytes != 24ull * rank || !in_range(p, at, nbytes) || in->elem != out->elem)
    return qaccel_fail("QACCEL_VTA: a host padding step is malformed (corrupt program)");
  for (uint32_t d = 0; d < rank; d++) {
    shape[d] = i64(p->base + at + 8 * d);
    before[d] = i64(p->base + at + 8 * (rank + d));
    int64_t after = i64(p->base + at + 8 * (2 * rank + d));
    if (before[d] < 0 || after < 0 || before[d] > (1 << 24) || after > (1 << 24) || !times(&n_in, shape[d]) ||
        !times(&n_out, oshape[d] = shape[d] + before[d] + after))
      return qaccel_fail("QACCEL_VTA: a host padding step is malformed (corrupt program)");
  }
  if (n_in != in->count || n_out != out->count)
    return qaccel_fail("QACCEL_VTA: a host padding step does not fit its values (corrupt program)");
  for (uint64_t i = 0; i < n_out; i++) {
    int64_t flat = 0, inside = 1;
    for (uint32_t d = 0; d < rank; d++) {
      int64_t c = idx[d] - before[d];
      if (c < 0 || c >= shape[d]) { inside = 0; break; }
      flat = flat * shape[d] + c;
    }
    set_elem(out, i, inside ? get_elem(in, (uint64_t)flat) : value);
    for (int d = (int)rank - 1; d >= 0; d--) {
      if (++idx[d] < oshape[d]) break;
      idx[d] = 0;
    }
  }
  return 0;
}

/* accel.concat: out = the inputs' chunks, one after the other, for each outer index. */
static int concat(const Program *p, const uint8_t *s, Value *values, Value *out) {
  uint32_t n = u32(s + 12);
  int64_t outer = i64(s + 16);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88), total = 0;
  if (n == 0 || n > 4096 || outer <= 0 || nbytes != 16ull * n || !in_range(p, at, nbytes))
    return qaccel_fail("QACCEL_VTA: a host concatenation step is malformed (corrupt program)");
  for (uint32_t k = 0; k < n; k++) {
    int64_t v = i64(p->base + at + 16 * k), chunk = i64(p->base + at + 16 * k + 8);
    if (v < 0 || (uint64_t)v >= p->n_values || chunk <= 0 || (uint64_t)chunk > MAX_ELEMENTS ||
        (uint64_t)outer > MAX_ELEMENTS || values[v].elem != out->elem ||
        values[v].count != (uint64_t)chunk * (uint64_t)outer)
      return qaccel_fail("QACCEL_VTA: a host concatenation step does not fit its values (corrupt program)");
    total += (uint64_t)chunk;
  }
  if (total > out->count || total * (uint64_t)outer != out->count)
    return qaccel_fail("QACCEL_VTA: a host concatenation step does not fit its values (corrupt program)");
  size_t e = out->elem;
  uint8_t *dst = out->data;
  for (int64_t o = 0; o < outer; o++)
    for (uint32_t k = 0; k < n; k++) {
      int64_t v = i64(p->base + at + 16 * k), chunk = i64(p->base + at + 16 * k + 8);
      memcpy(dst, values[v].data + (size_t)(o * chunk) * e, (size_t)chunk * e);
      dst += (size_t)chunk * e;
    }
  return 0;
}

/* The integer arithmetic of interpreter/accel_semantics.py (kernels/arithmetic.py). */
static int64_t wrap32(int64_t x) { return (int32_t)(uint32_t)(uint64_t)x; }

static int apply(uint32_t code, int64_t a, int64_t b, int64_t *out) {
  switch (code) {
  case OP_BIAS_ADD: case OP_ADD: *out = wrap32(a + b); return 0;
  case OP_MUL: *out = wrap32((int64_t)((uint64_t)a * (uint64_t)b)); return 0;
  case OP_MIN: *out = a < b ? a : b; return 0;
  case OP_MAX: *out = a > b ? a : b; return 0;
  case OP_SHIFT_LEFT:
    if (b < 0 || b > 62) return 1;
    *out = wrap32((int64_t)((uint64_t)a << b));
    return 0;
  case OP_ROUND_MULTIPLY: /* SaturatingRoundingDoublingHighMul */
    if (a == INT32_MIN && b == INT32_MIN) *out = INT32_MAX;
    else *out = wrap32((a * b + (1ll << 30)) >> 31); /* arithmetic shift (gcc, clang) */
    return 0;
  case OP_ROUND_RSHIFT: /* RoundingDivideByPOT */
    if (b < 0 || b > 62) return 1;
    *out = b == 0 ? a : wrap32((a + ((1ll << b) >> 1) - (a < 0)) >> b);
    return 0;
  }
  return 1;
}

static int lane_step(const Program *p, const uint8_t *s, const Value *in, Value *out) {
  uint32_t code = u32(s + 12);
  uint64_t n = in->count;
  if (out->count != n) return qaccel_fail("QACCEL_VTA: a host element-wise step does not fit its values (corrupt program)");
  if (code == OP_CONVERT) { /* widen or narrow: numpy's astype (low bits when narrowing) */
    for (uint64_t i = 0; i < n; i++) set_elem(out, i, get_elem(in, i));
    return 0;
  }
  int64_t n_consts = i64(s + 16), outer = i64(s + 24), mid = i64(s + 32), inner = i64(s + 40);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  if (n_consts <= 0 || nbytes != 8ull * (uint64_t)n_consts || !in_range(p, at, nbytes) ||
      !geometry_ok(outer, mid, inner, n) || (n_consts != 1 && n_consts != outer * inner))
    return qaccel_fail("QACCEL_VTA: a host element-wise step is malformed (corrupt program)");
  const uint8_t *consts = p->base + at;
  for (uint64_t i = 0; i < n; i++) {
    uint64_t lane = n_consts == 1 ? 0 : ((i / (uint64_t)(mid * inner)) % (uint64_t)outer) * (uint64_t)inner + i % (uint64_t)inner;
    int64_t y;
    if (apply(code, get_elem(in, i), i64(consts + 8 * lane), &y))
      return qaccel_fail("QACCEL_VTA: host element-wise operation %u out of range (corrupt program)", code);
    set_elem(out, i, y);
  }
  return 0;
}

static int binary_step(const Program *p, const uint8_t *s, Value *values, const Value *lhs, Value *out) {
  uint32_t code = u32(s + 12);
  int64_t r = i64(s + 16);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88), n = 1, n_rhs = 1;
  if (r < 0 || (uint64_t)r >= p->n_values || nbytes % 16 || nbytes / 16 == 0 || nbytes / 16 > MAX_RANK ||
      !in_range(p, at, nbytes) || code < OP_ADD || code > OP_MAX)
    return qaccel_fail("QACCEL_VTA: a host binary step is malformed (corrupt program)");
  const Value *rhs = &values[r];
  uint32_t rank = (uint32_t)(nbytes / 16);
  int64_t shape[MAX_RANK], rshape[MAX_RANK], idx[MAX_RANK] = {0};
  for (uint32_t d = 0; d < rank; d++) {
    shape[d] = i64(p->base + at + 8 * d);
    rshape[d] = i64(p->base + at + 8 * (rank + d));
    if ((rshape[d] != 1 && rshape[d] != shape[d]) || !times(&n, shape[d]) || !times(&n_rhs, rshape[d]))
      return qaccel_fail("QACCEL_VTA: a host binary step is malformed (corrupt program)");
  }
  if (n != lhs->count || n != out->count || n_rhs != rhs->count)
    return qaccel_fail("QACCEL_VTA: a host binary step does not fit its values (corrupt program)");
  for (uint64_t i = 0; i < n; i++) {
    uint64_t j = 0;
    for (uint32_t d = 0; d < rank; d++) j = j * (uint64_t)rshape[d] + (uint64_t)(rshape[d] == 1 ? 0 : idx[d]);
    int64_t y;
    apply(code, get_elem(lhs, i), get_elem(rhs, j), &y);
    set_elem(out, i, y);
    for (int d = (int)rank - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  return 0;
}

static int reduce_step(const Program *p, const uint8_t *s, const Value *in, Value *out) {
  uint32_t rank = u32(s + 12);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88), n = 1, n_out = 1;
  int64_t shape[MAX_RANK], flag[MAX_RANK], idx[MAX_RANK] = {0};
  if (rank == 0 || rank > MAX_RANK || nbytes != 16ull * rank || !in_range(p, at, nbytes))
    return qaccel_fail("QACCEL_VTA: a host reduction step is malformed (corrupt program)");
  for (uint32_t d = 0; d < rank; d++) {
    shape[d] = i64(p->base + at + 8 * d);
    flag[d] = i64(p->base + at + 8 * (rank + d));
    if (!times(&n, shape[d]) || !times(&n_out, flag[d] ? 1 : shape[d]))
      return qaccel_fail("QACCEL_VTA: a host reduction step is malformed (corrupt program)");
  }
  if (n != in->count || n_out != out->count)
    return qaccel_fail("QACCEL_VTA: a host reduction step does not fit its values (corrupt program)");
  int64_t *acc = (int64_t *)calloc(n_out, sizeof(int64_t));
  if (!acc) return qaccel_fail("QACCEL_VTA: out of memory");
  for (uint64_t i = 0; i < n; i++) {
    uint64_t j = 0;
    for (uint32_t d = 0; d < rank; d++) j = j * (uint64_t)(flag[d] ? 1 : shape[d]) + (uint64_t)(flag[d] ? 0 : idx[d]);
    acc[j] += get_elem(in, i);
    for (int d = (int)rank - 1; d >= 0; d--) {
      if (++idx[d] < shape[d]) break;
      idx[d] = 0;
    }
  }
  for (uint64_t j = 0; j < n_out; j++) set_elem(out, j, wrap32(acc[j]));
  free(acc);
  return 0;
}

static int layer_error(uint32_t k, int rc, const vta_run *r) {
  if (rc == VTA_ERR_CONFIG) return qaccel_fail("QACCEL_VTA: hardware configuration not supported by the machine");
  if (rc == VTA_ERR_NOMEM) return qaccel_fail("QACCEL_VTA: out of memory");
  if (r->error_index >= 0)
    return qaccel_fail("QACCEL_VTA: layer %u, instruction %lld (%s): %s", k, (long long)r->error_index,
                       r->error_kind, r->error_message);
  return qaccel_fail("QACCEL_VTA: layer %u: %s", k, r->error_message);
}

static int leftover_tokens(uint32_t k, const vta_run *r) {
  for (int f = 0; f < VTA_FIFOS; f++)
    if (r->leftover_tokens[f]) return qaccel_fail("QACCEL_VTA: layer %u leaves tokens over", k);
  return 0;
}

/* The checked path: the layer simulated with every check and the timing model. */
static int run_layer(const Program *p, uint32_t k, uint8_t *dram) {
  const uint8_t *l = p->base + p->layers_at + (uint64_t)LAYER_BYTES * k;
  vta_run r;
  memset(&r, 0, sizeof r);
  r.uop_image = (const uint32_t *)(p->base + u64(l + 16));
  r.uop_image_len = (int64_t)u64(l + 24);
  r.dram = dram;
  r.dram_len = (int64_t)p->dram_bytes;
  int rc = vta_simulate(&p->cfg, (const uint64_t *)(p->base + u64(l)), (int64_t)u64(l + 8), 1, &r);
  if (rc != VTA_OK) return layer_error(k, rc, &r);
  return leftover_tokens(k, &r);
}

/* ---- a program prepared once, run many times --------------------------------------------- */

struct qaccel_prepared {
  Program p;
  Value *values;
  uint8_t *dram;
  int checked;           /* QACCEL_SIMULATION=checked: every run simulates every check */
  int ready;             /* the layers are prepared (on the first run) */
  vta_program **layers;  /* per layer, checked and timed once */
  vta_scratch *scratch;
  uint64_t dirty_end;    /* DRAM bytes at or past it keep the image's values in every run */
  Runs *runs;            /* per input, then output: its repacking */
  uint8_t *is_input;     /* per value: an input's packed value (repacking writes all of it) */
  int64_t cycles;        /* one run's accelerator cycles (the layers' timing, once) */
};

void qaccel_prepared_free(qaccel_prepared *q) {
  if (!q) return;
  if (q->values)
    for (uint32_t v = 0; v < q->p.n_values; v++) free(q->values[v].data);
  free(q->values);
  free(q->dram);
  if (q->layers)
    for (uint32_t k = 0; k < q->p.n_layers; k++) vta_program_free(q->layers[k]);
  free(q->layers);
  vta_scratch_free(q->scratch);
  if (q->runs)
    for (uint32_t k = 0; k < q->p.n_in + q->p.n_out; k++) free(q->runs[k].at);
  free(q->runs);
  free(q->is_input);
  free(q);
}

static int checked_by_environment(void) {
  const char *mode = getenv("QACCEL_SIMULATION");
  return mode && strcmp(mode, "checked") == 0;
}

int qaccel_prepared_new(const void *program, size_t size, qaccel_prepared **out) {
  *out = NULL;
  qaccel_prepared *q = (qaccel_prepared *)calloc(1, sizeof *q);
  if (!q) return qaccel_fail("QACCEL_VTA: out of memory");
  if (parse_program((const uint8_t *)program, size, &q->p)) goto fail;
  q->checked = checked_by_environment();
  q->values = (Value *)calloc(q->p.n_values ? q->p.n_values : 1, sizeof(Value));
  q->dram = (uint8_t *)malloc(q->p.dram_bytes ? q->p.dram_bytes : 1);
  q->layers = (vta_program **)calloc(q->p.n_layers ? q->p.n_layers : 1, sizeof(vta_program *));
  if (!q->values || !q->dram || !q->layers) { qaccel_fail("QACCEL_VTA: out of memory"); goto fail; }
  for (uint32_t v = 0; v < q->p.n_values; v++) {
    const uint8_t *r = q->p.base + q->p.values_at + (uint64_t)VALUE_BYTES * v;
    q->values[v].elem = u32(r);
    q->values[v].count = u64(r + 8);
    if ((q->values[v].elem != 1 && q->values[v].elem != 4) || q->values[v].count == 0 ||
        q->values[v].count > MAX_ELEMENTS) {
      qaccel_fail("QACCEL_VTA: value %u is malformed (corrupt program)", v);
      goto fail;
    }
    q->values[v].data = (uint8_t *)calloc(q->values[v].count, q->values[v].elem);
    if (!q->values[v].data) { qaccel_fail("QACCEL_VTA: out of memory"); goto fail; }
  }
  memcpy(q->dram, q->p.base + q->p.dram_at, q->p.dram_bytes);
  q->dirty_end = q->p.dram_bytes; /* until the layers are prepared */
  *out = q;
  return 0;
fail:
  qaccel_prepared_free(q);
  return 1;
}

/* Every layer checked and timed once (vta_prepare), and how far any run writes DRAM. */
static int prepare_layers(qaccel_prepared *q) {
  const Program *p = &q->p;
  uint64_t dirty = 0;
  int64_t cycles = 0;
  vta_run r;
  memset(&r, 0, sizeof r);
  /* what an earlier attempt that failed left */
  for (uint32_t k = 0; k < p->n_layers; k++) {
    vta_program_free(q->layers[k]);
    q->layers[k] = NULL;
  }
  vta_scratch_free(q->scratch);
  q->scratch = NULL;
  if (q->runs)
    for (uint32_t k = 0; k < p->n_in + p->n_out; k++) free(q->runs[k].at);
  free(q->runs);
  free(q->is_input);
  q->runs = NULL;
  q->is_input = NULL;
  int rc = vta_scratch_new(&p->cfg, &r, &q->scratch);
  if (rc != VTA_OK) return layer_error(0, rc, &r);
  for (uint32_t k = 0; k < p->n_layers; k++) {
    const uint8_t *l = p->base + p->layers_at + (uint64_t)LAYER_BYTES * k;
    memset(&r, 0, sizeof r);
    r.uop_image = (const uint32_t *)(p->base + u64(l + 16));
    r.uop_image_len = (int64_t)u64(l + 24);
    r.dram_len = (int64_t)p->dram_bytes;
    rc = vta_prepare(&p->cfg, (const uint64_t *)(p->base + u64(l)), (int64_t)u64(l + 8), &r, &q->layers[k]);
    if (rc != VTA_OK) return layer_error(k, rc, &r);
    if (leftover_tokens(k, &r)) return 1;
    int64_t end = vta_program_dram_written(q->layers[k]);
    if ((uint64_t)end > dirty) dirty = (uint64_t)end;
  }
  for (uint32_t k = 0; k < p->n_steps; k++) {
    const uint8_t *s = p->base + p->steps_at + (uint64_t)STEP_BYTES * k;
    uint32_t kind = u32(s), a = u32(s + 4);
    uint64_t at = u64(s + 80), nbytes = u64(s + 88);
    if (kind == KIND_WRITE && at <= p->dram_bytes && nbytes <= p->dram_bytes - at && at + nbytes > dirty)
      dirty = at + nbytes;
    if (kind == KIND_LAYER && a < p->n_layers) {
      vta_program_timing(q->layers[a], &r);
      cycles += r.total_cycles;
    }
  }
  q->runs = (Runs *)calloc(p->n_in + p->n_out, sizeof(Runs));
  q->is_input = (uint8_t *)calloc(p->n_values ? p->n_values : 1, 1);
  if (!q->runs || !q->is_input) return qaccel_fail("QACCEL_VTA: out of memory");
  for (uint32_t k = 0; k < p->n_in + p->n_out; k++) {
    Io io;
    if (parse_io(p, k, &io, q->values) || build_runs(&io, &q->runs[k])) return 1;
    if (k < p->n_in) q->is_input[io.value] = 1;
  }
  q->cycles = cycles;
  q->dirty_end = dirty;
  q->ready = 1;
  return 0;
}

int64_t qaccel_prepared_cycles(const qaccel_prepared *q) { return q->ready ? q->cycles : -1; }

static int execute_layer(qaccel_prepared *q, uint32_t k) {
  vta_run r;
  memset(&r, 0, sizeof r);
  r.dram = q->dram;
  r.dram_len = (int64_t)q->p.dram_bytes;
  int rc = vta_execute(q->layers[k], q->scratch, &r);
  return rc != VTA_OK ? layer_error(k, rc, &r) : 0;
}

int qaccel_prepared_run(qaccel_prepared *q, size_t n_in, const void *const *inputs, const size_t *in_bytes,
                        size_t n_out, void *const *outputs, const size_t *out_bytes) {
  const Program *p = &q->p;
  Value *values = q->values;
  uint8_t *dram = q->dram;
  if (n_in != p->n_in || n_out != p->n_out)
    return qaccel_fail("QACCEL_VTA: %zu inputs and %zu outputs, the program takes %u and %u", n_in, n_out,
                p->n_in, p->n_out);
  if (!q->checked && !q->ready && prepare_layers(q)) return 1;
  for (uint32_t v = 0; v < p->n_values; v++) /* as fresh as the first run's (inputs: all packed) */
    if (!q->ready || !q->is_input[v]) memset(values[v].data, 0, values[v].count * values[v].elem);
  for (uint32_t k = 0; k < p->n_in; k++) {
    Io io;
    if (parse_io(p, k, &io, values)) return 1;
    if (in_bytes[k] != io.plain_count * io.elem)
      return qaccel_fail("QACCEL_VTA: input %u has %zu bytes, the program expects %llu", k, in_bytes[k],
           (unsigned long long)(io.plain_count * io.elem));
    if (q->ready) repack_runs(&q->runs[k], (uint8_t *)inputs[k], values[io.value].data, 1);
    else repack(&io, (uint8_t *)inputs[k], values[io.value].data, 1);
  }
  /* every run starts from the image; past dirty_end no run writes */
  memcpy(dram, p->base + p->dram_at, q->checked ? p->dram_bytes : q->dirty_end);
  for (uint32_t k = 0; k < p->n_steps; k++) {
    const uint8_t *s = p->base + p->steps_at + (uint64_t)STEP_BYTES * k;
    uint32_t kind = u32(s), a = u32(s + 4), b = u32(s + 8);
    uint64_t at = u64(s + 80), nbytes = u64(s + 88);
    if (kind == KIND_LAYER) {
      if (a >= p->n_layers) return qaccel_fail("QACCEL_VTA: step %u runs layer %u of %u (corrupt program)", k, a, p->n_layers);
      if (q->checked ? run_layer(p, a, dram) : execute_layer(q, a)) return 1;
      continue;
    }
    if (a >= p->n_values || ((kind == KIND_REQUANT || kind == KIND_PAD || kind == KIND_LANE || kind == KIND_BINARY ||
                             kind == KIND_REDUCE) && b >= p->n_values))
      return qaccel_fail("QACCEL_VTA: step %u names value %u of %u (corrupt program)", k, a, p->n_values);
    Value *v = &values[a];
    if (kind == KIND_WRITE || kind == KIND_READ) {
      int widen = kind == KIND_READ && b == 1;
      uint64_t want = widen ? v->count : v->count * v->elem;
      if (at > p->dram_bytes || nbytes > p->dram_bytes - at || nbytes != want || (widen && v->elem != 4))
        return qaccel_fail("QACCEL_VTA: step %u moves %llu bytes at DRAM offset %llu (corrupt program)", k,
             (unsigned long long)nbytes, (unsigned long long)at);
      if (kind == KIND_WRITE) memcpy(dram + at, v->data, nbytes);
      else if (!widen) memcpy(v->data, dram + at, nbytes);
      else {
        int64_t offset = i64(s + 16);
        for (uint64_t i = 0; i < nbytes; i++) set_elem(v, i, (int64_t)(int8_t)dram[at + i] - offset);
      }
    } else if (kind == KIND_REQUANT) {
      if (requantize(p, s, v, &values[b])) return 1;
    } else if (kind == KIND_PAD) {
      if (pad(p, s, v, &values[b])) return 1;
    } else if (kind == KIND_CONCAT) {
      if (concat(p, s, values, v)) return 1;
    } else if (kind == KIND_LANE) {
      if (lane_step(p, s, v, &values[b])) return 1;
    } else if (kind == KIND_BINARY) {
      if (binary_step(p, s, values, v, &values[b])) return 1;
    } else if (kind == KIND_REDUCE) {
      if (reduce_step(p, s, v, &values[b])) return 1;
    } else {
      return qaccel_fail("QACCEL_VTA: step %u has unknown kind %u (corrupt program)", k, kind);
    }
  }
  for (uint32_t k = 0; k < p->n_out; k++) {
    Io io;
    if (parse_io(p, p->n_in + k, &io, values)) return 1;
    if (out_bytes[k] != io.plain_count * io.elem)
      return qaccel_fail("QACCEL_VTA: output %u has %zu bytes, the program produces %llu", k, out_bytes[k],
           (unsigned long long)(io.plain_count * io.elem));
    if (q->ready) repack_runs(&q->runs[p->n_in + k], (uint8_t *)outputs[k], values[io.value].data, 0);
    else repack(&io, (uint8_t *)outputs[k], values[io.value].data, 0);
  }
  return 0;
}

int qaccel_program_run(const void *program, size_t size, size_t n_in, const void *const *inputs,
                       const size_t *in_bytes, size_t n_out, void *const *outputs,
                       const size_t *out_bytes) {
  qaccel_prepared *q;
  if (qaccel_prepared_new(program, size, &q)) return 1;
  int rc = qaccel_prepared_run(q, n_in, inputs, in_bytes, n_out, outputs, out_bytes);
  qaccel_prepared_free(q);
  return rc;
}

int qaccel_program_check(const void *program, size_t size, uint32_t *n_in, uint32_t *n_out) {
  Program p;
  if (parse_program((const uint8_t *)program, size, &p)) return 1;
  *n_in = p.n_in;
  *n_out = p.n_out;
  return 0;
}

/* Run a program on plain inputs into plain outputs (sizes in bytes); 0 on success. */
QACCEL_EXPORT int qaccel_litert_run_program(const void *program, size_t size, size_t n_in,
                                            const void *const *inputs, const size_t *in_bytes,
                                            size_t n_out, void *const *outputs,
                                            const size_t *out_bytes) {
  return qaccel_program_run(program, size, n_in, inputs, in_bytes, n_out, outputs, out_bytes);
}
