/* The qaccel program runner (qaccel_program.h): the one executor of a compiled accelerator
 * function in its one serialized form, the program (format: writer.py beside this file), for every
 * consumer (the LiteRT dispatch library and custom-op kernel, backends/litert/kernel/; the C
 * driver; Python through ctypes, backends/vta/program_runner.py).
 *
 * qaccel_program_open checks a program whole before it runs: magic, format version, CRC-32,
 * hardware configuration, every offset and size, every step walked once without data (the
 * same step functions a run executes, each returning after its checks when its values have no
 * data), every constant a step computes with range-checked, and the memory a run allocates
 * charged to the budget.  A run (qaccel_state_run) packs the inputs into the function's values,
 * walks the steps (write an arena slot of the DRAM image, run a layer on libqaccel_vta
 * (targets/vta/machine/vta_machine.c), read a slot back, requantize on the host in double
 * precision as LiteRT's FULLY_CONNECTED does, and the other host ops a function keeps: pad,
 * concatenate, lane and binary integer ops, widen, narrow, reduce_sum) and unpacks the outputs.
 * To add a step kind: its KIND_ value, a step function that checks its record (and returns
 * after the checks when its values have no data), and its case in walk_steps. */
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "qaccel_program.h"
#include "vta_machine.h"

#define EXPORT __attribute__((visibility("default")))

enum { PROGRAM_VERSION = QACCEL_PROGRAM_FORMAT, HEADER_BYTES = 192, VALUE_BYTES = 16, IO_BYTES = 184,
       STEP_BYTES = 96, LAYER_BYTES = 32, MAX_RANK = QACCEL_MAX_RANK, CHECKSUM_AT = QACCEL_CHECKSUM_AT,
       KIND_WRITE = 1, KIND_LAYER = 2, KIND_READ = 3, KIND_REQUANT = 4, KIND_PAD = 5, KIND_CONCAT = 6,
       KIND_LANE = 7, KIND_BINARY = 8, KIND_REDUCE = 9, KIND_CONCAT_LANES = 10, KIND_POOL = 11,
       KIND_LUT = 12, KIND_GATHER = 13, KIND_BILINEAR = 14, KIND_GATHER_SUM = 15, KIND_SOFTMAX = 16,
       KIND_BATCH_MATMUL = 17, KIND_BMM_CORRECTION = 18, KIND_BMM_CORRECTIONS = 22 };
/* KIND_LANE / KIND_BINARY operations */
enum { OP_CONVERT = 0, OP_BIAS_ADD = 1, OP_SHIFT_LEFT = 2, OP_ROUND_MULTIPLY = 3, OP_ROUND_RSHIFT = 4,
       OP_ADD = 5, OP_MUL = 6, OP_MIN = 7, OP_MAX = 8 };
static const char PROGRAM_MAGIC[8] = {'Q', 'A', 'C', 'C', 'P', 'R', 'O', 'G'};

/* Little-endian reads at any alignment. */
static uint32_t u32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static int32_t i32(const uint8_t *p) { int32_t v; memcpy(&v, p, 4); return v; }
static uint64_t u64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static int64_t i64(const uint8_t *p) { int64_t v; memcpy(&v, p, 8); return v; }

/* ---- errors: into the buffer of the open call or the state that failed --------------------- */

/* Record an error (printf format) in `e` unless one is already there (the first error is the
 * cause); returns 1. */
static int fail(char *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int fail(char *e, const char *fmt, ...) {
  if (e[0]) return 1;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e, QACCEL_ERROR_BYTES, fmt, ap);
  va_end(ap);
  return 1;
}

#define INT32_OK(x) ((x) >= INT32_MIN && (x) <= INT32_MAX)

/* ---- the checksum: CRC-32 (zlib's, reflected 0xEDB88320), slicing by 8 ---------------------- */
static uint32_t crc_table[8][256];

static void crc_build(void) {
  for (uint32_t n = 0; n < 256; n++) {
    uint32_t c = n;
    for (int k = 0; k < 8; k++) c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
    crc_table[0][n] = c;
  }
  for (uint32_t n = 0; n < 256; n++)
    for (int k = 1; k < 8; k++) crc_table[k][n] = (crc_table[k - 1][n] >> 8) ^ crc_table[0][crc_table[k - 1][n] & 0xff];
}

static pthread_once_t crc_once = PTHREAD_ONCE_INIT;
static void crc_init(void) { pthread_once(&crc_once, crc_build); }

static uint32_t crc_update(uint32_t c, const uint8_t *p, size_t n) {
  c = ~c;
  for (; n >= 8; n -= 8, p += 8) {
    uint32_t a, b;
    memcpy(&a, p, 4);
    memcpy(&b, p + 4, 4);
    a ^= c; /* little-endian hosts (the program format is little-endian too) */
    c = crc_table[7][a & 0xff] ^ crc_table[6][(a >> 8) & 0xff] ^ crc_table[5][(a >> 16) & 0xff] ^
        crc_table[4][a >> 24] ^ crc_table[3][b & 0xff] ^ crc_table[2][(b >> 8) & 0xff] ^
        crc_table[1][(b >> 16) & 0xff] ^ crc_table[0][b >> 24];
  }
  while (n--) c = crc_table[0][(c ^ *p++) & 0xff] ^ (c >> 8);
  return ~c;
}

EXPORT uint32_t qaccel_program_checksum(const void *bytes, size_t size) {
  static const uint8_t zeros[8] = {0};
  const uint8_t *b = (const uint8_t *)bytes;
  crc_init();
  if (size <= CHECKSUM_AT) return crc_update(0, b, size);
  uint32_t c = crc_update(0, b, CHECKSUM_AT);
  c = crc_update(c, zeros, size - CHECKSUM_AT < 8 ? size - CHECKSUM_AT : 8);
  return size > CHECKSUM_AT + 8 ? crc_update(c, b + CHECKSUM_AT + 8, size - CHECKSUM_AT - 8) : c;
}

EXPORT int qaccel_program_abi(void) { return QACCEL_PROGRAM_ABI; }

/* The digest of the sources this library was built from (-DVTA_SOURCE_HASH, as the machine's),
 * exported so that a loader can tell a stale build: the machine's own vta_source_hash is hidden
 * in a library that exports only the runner's API. */
#ifndef VTA_SOURCE_HASH
#define VTA_SOURCE_HASH ""
#endif
EXPORT const char *qaccel_program_source_hash(void) { return VTA_SOURCE_HASH; }

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

/* The hardware configuration: the header's i64 config[VTA_CONFIG_N_FIELDS] (vta_config's fields,
 * in order), each checked against the one schema (VTA_CONFIG_FIELDS of vta_machine.h). */
static int read_config(const uint8_t *b, vta_config *cfg, char *e) {
  const uint8_t *field = b + 64; /* i64 config[VTA_CONFIG_N_FIELDS], vta_config's order */
#define READ_CONFIG_FIELD(key, lowest, highest) cfg->key = i64(field); field += 8;
  VTA_CONFIG_FIELDS(READ_CONFIG_FIELD)
#undef READ_CONFIG_FIELD
  if (field != b + 152 || vta_config_check(cfg) != VTA_OK)
    return fail(e, "QACCEL_VTA: hardware configuration not supported by this kernel (log_block %lld, "
                "store_requant %lld, bus %lld bytes)", (long long)cfg->log_block,
                (long long)cfg->store_requant, (long long)cfg->bus_width_bytes);
  return 0;
}

/* Header, configuration and table bounds; 0 when the program can be run. */
static int parse_program(const uint8_t *b, size_t size, Program *p, char *e) {
  if (size < HEADER_BYTES) return fail(e, "QACCEL_VTA: program of %zu bytes, shorter than its header", size);
  if (memcmp(b, PROGRAM_MAGIC, 8) != 0) return fail(e, "QACCEL_VTA: bad program magic (not a qaccel program)");
  uint32_t version = u32(b + 8);
  if (version != PROGRAM_VERSION)
    return fail(e, "QACCEL_VTA: program format version %u, this kernel reads version %d", version,
                PROGRAM_VERSION);
  if (u32(b + 12) != HEADER_BYTES) return fail(e, "QACCEL_VTA: header of %u bytes, expected %d", u32(b + 12), HEADER_BYTES);
  p->base = b;
  p->total = u64(b + 16);
  if (p->total > size) return fail(e, "QACCEL_VTA: program truncated (%zu of %llu bytes)", size, (unsigned long long)p->total);
  p->n_in = u32(b + 24); p->n_out = u32(b + 28); p->n_values = u32(b + 32);
  p->n_steps = u32(b + 36); p->n_layers = u32(b + 40);
  p->dram_bytes = u64(b + 48); p->dram_at = u64(b + 56);
  if (p->total < HEADER_BYTES) return fail(e, "QACCEL_VTA: program of %llu bytes, shorter than its header", (unsigned long long)p->total);
  uint32_t stored = (uint32_t)u64(b + CHECKSUM_AT), computed = qaccel_program_checksum(b, (size_t)p->total);
  if (u64(b + CHECKSUM_AT) >> 32 || stored != computed)
    return fail(e, "QACCEL_VTA: program checksum mismatch (stored %08x, computed %08x): the program is corrupt",
                stored, computed);
  if (read_config(b, &p->cfg, e)) return 1;
  p->values_at = u64(b + 152); p->io_at = u64(b + 160); p->steps_at = u64(b + 168);
  p->layers_at = u64(b + 176);
  if (p->n_values > (1u << 20) || p->n_steps > (1u << 20) || p->n_layers > (1u << 20) ||
      p->n_in + (uint64_t)p->n_out > 4096 ||
      !in_range(p, p->values_at, (uint64_t)VALUE_BYTES * p->n_values) ||
      !in_range(p, p->io_at, (uint64_t)IO_BYTES * (p->n_in + p->n_out)) ||
      !in_range(p, p->steps_at, (uint64_t)STEP_BYTES * p->n_steps) ||
      !in_range(p, p->layers_at, (uint64_t)LAYER_BYTES * p->n_layers) ||
      !in_range(p, p->dram_at, p->dram_bytes))
    return fail(e, "QACCEL_VTA: program tables out of range (corrupt program)");
  for (uint32_t k = 0; k < p->n_layers; k++) {
    const uint8_t *l = b + p->layers_at + (uint64_t)LAYER_BYTES * k;
    uint64_t w_at = u64(l), n = u64(l + 8), u_at = u64(l + 16), nu = u64(l + 24);
    if (n > (1ull << 40) || nu > (1ull << 40) || !in_range(p, w_at, 16 * n) || !in_range(p, u_at, 4 * nu) ||
        (w_at % 8) || (u_at % 4))
      return fail(e, "QACCEL_VTA: layer %u's instructions out of range (corrupt program)", k);
  }
  return 0;
}

typedef struct {
  uint32_t elem;
  uint64_t count;
  uint8_t *data;
} Value;

/* Whether an element type (QACCEL_TYPE_*) has elements of `elem` bytes. */
static int type_fits(int32_t type, uint32_t elem) {
  if (type == QACCEL_TYPE_INT8 || type == QACCEL_TYPE_UINT8) return elem == 1;
  return type == QACCEL_TYPE_INT32 && elem == 4;
}

/* The io record's pack/unpack geometry, checked against its value. */
typedef struct {
  uint32_t value, rank, elem;
  int32_t pad, type;
  int64_t plain[MAX_RANK], split[2 * MAX_RANK];
  int32_t order[2 * MAX_RANK];
  uint64_t plain_count, packed_count;
} Io;

static int parse_io(const Program *p, uint32_t k, Io *io, const Value *values, char *e) {
  const uint8_t *r = p->base + p->io_at + (uint64_t)IO_BYTES * k;
  io->value = u32(r); io->rank = u32(r + 4); io->pad = i32(r + 8); io->elem = u32(r + 12);
  io->type = i32(r + 176);
  if (io->value >= p->n_values || io->rank == 0 || io->rank > MAX_RANK ||
      io->elem != values[io->value].elem || !type_fits(io->type, io->elem) || u32(r + 180) != 0 ||
      (io->elem == 1 && (io->pad < -128 || io->pad > 127)))
    return fail(e, "QACCEL_VTA: tensor %u of the program is malformed (corrupt program)", k);
  io->plain_count = io->packed_count = 1;
  int seen[2 * MAX_RANK] = {0};
  for (uint32_t d = 0; d < io->rank; d++) {
    io->plain[d] = i32(r + 16 + 4 * d);
    if (!times(&io->plain_count, io->plain[d])) return fail(e, "QACCEL_VTA: tensor %u has a bad shape (corrupt program)", k);
  }
  for (uint32_t j = 0; j < 2 * io->rank; j++) {
    io->split[j] = i32(r + 48 + 4 * j);
    io->order[j] = i32(r + 112 + 4 * j);
    if (!times(&io->packed_count, io->split[j]) || io->order[j] < 0 || io->order[j] >= (int32_t)(2 * io->rank) ||
        seen[io->order[j]]++)
      return fail(e, "QACCEL_VTA: tensor %u has a bad packing (corrupt program)", k);
  }
  for (uint32_t d = 0; d < io->rank; d++)
    if (io->split[2 * d] * io->split[2 * d + 1] < io->plain[d])
      return fail(e, "QACCEL_VTA: tensor %u's packing is smaller than the tensor (corrupt program)", k);
  if (io->packed_count != values[io->value].count)
    return fail(e, "QACCEL_VTA: tensor %u packs into %llu elements, its value has %llu (corrupt program)",
                k, (unsigned long long)io->packed_count, (unsigned long long)values[io->value].count);
  return 0;
}

/* repack as runs of consecutive elements on both sides, worked out once: (packed index,
 * plain index, length); the packed elements no run covers hold the padding value. */
typedef struct {
  Io io;
  uint64_t n, cap, covered;
  uint64_t *at; /* 3 per run */
} Runs;

/* Append `len` elements from packed index `i` and plain index `flat` on, merged with the last
 * run when they continue it on both sides. */
static int add_run(Runs *r, uint64_t i, uint64_t flat, uint64_t len, char *e) {
  uint64_t *last = r->n ? r->at + 3 * (r->n - 1) : NULL;
  r->covered += len;
  if (last && last[0] + last[2] == i && last[1] + last[2] == flat) {
    last[2] += len;
    return 0;
  }
  if (r->n == r->cap) {
    uint64_t cap = r->cap ? 2 * r->cap : 64;
    uint64_t *grown = (uint64_t *)realloc(r->at, (size_t)cap * 3 * sizeof(uint64_t));
    if (!grown) return fail(e, "QACCEL_VTA: out of memory");
    r->at = grown;
    r->cap = cap;
  }
  r->at[3 * r->n] = i;
  r->at[3 * r->n + 1] = flat;
  r->at[3 * r->n + 2] = len;
  r->n++;
  return 0;
}

/* The runs, walking the packed elements in order a row at a time. A row is either the trailing
 * packed dimensions that run through plain memory as one block (each of them the next stride
 * out, none padded): one run; or else the innermost packed dimension of more than one element,
 * along which one plain coordinate grows by a fixed step: a prefix of its elements lies inside
 * the tensor, consecutive in plain order too when that step is one element. */
static int build_runs(const Io *io, Runs *r, char *e) {
  int n = 2 * (int)io->rank;
  int64_t dims[2 * MAX_RANK], idx[2 * MAX_RANK] = {0}, s[2 * MAX_RANK], stride[MAX_RANK];
  r->io = *io;
  r->n = r->covered = 0;
  for (int k = 0; k < n; k++) dims[k] = io->split[io->order[k]];
  stride[io->rank - 1] = 1;
  for (int d = (int)io->rank - 2; d >= 0; d--) stride[d] = stride[d + 1] * io->plain[d + 1];
  int tail = n; /* packed dimensions tail.. make one block of `block` elements */
  int64_t block = 1;
  while (tail > 0) {
    int k = tail - 1, j = io->order[k], d = j / 2;
    if (dims[k] != 1) {
      int64_t plain_step = (j % 2 ? 1 : io->split[j + 1]) * stride[d];
      if (plain_step != block || io->split[2 * d] * io->split[2 * d + 1] != io->plain[d]) break;
      block *= dims[k];
    }
    tail = k;
  }
  int by_block = block > 1 || tail == 0;
  int outer = by_block ? tail : tail - 1; /* packed dimensions 0..outer-1 index the rows */
  int j = io->order[by_block ? 0 : outer], dj = j / 2;
  int64_t row = by_block ? block : dims[outer];
  int64_t step = j % 2 ? 1 : io->split[j + 1]; /* along the row, in plain coordinate dj */
  uint64_t rows = io->packed_count / (uint64_t)row;
  for (int k = outer; k < n; k++) s[io->order[k]] = 0;
  for (uint64_t o = 0; o < rows; o++) {
    for (int k = 0; k < outer; k++) s[io->order[k]] = idx[k];
    int64_t flat = 0, inside = 1, c0 = 0;
    for (uint32_t d = 0; d < io->rank; d++) {
      int64_t c = s[2 * d] * io->split[2 * d + 1] + s[2 * d + 1];
      if (c >= io->plain[d]) { inside = 0; break; }
      if ((int)d == dj) c0 = c;
      flat += c * stride[d];
    }
    if (inside) {
      uint64_t i = o * (uint64_t)row;
      if (by_block) {
        if (add_run(r, i, (uint64_t)flat, (uint64_t)row, e)) return 1;
      } else {
        int64_t len = (io->plain[dj] - c0 + step - 1) / step; /* >= 1: c0 is inside */
        if (len > row) len = row;
        if (step * stride[dj] == 1) {
          if (add_run(r, i, (uint64_t)flat, (uint64_t)len, e)) return 1;
        } else {
          for (int64_t t = 0; t < len; t++)
            if (add_run(r, i + (uint64_t)t, (uint64_t)(flat + t * step * stride[dj]), 1, e)) return 1;
        }
      }
    }
    for (int k = outer - 1; k >= 0; k--) {
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
static int requantize(const Program *p, const uint8_t *s, const Value *in, Value *out, char *e) {
  uint32_t n_scales = u32(s + 12);
  int64_t zp_in = i64(s + 16), zp_out = i64(s + 24), lo = i64(s + 32), hi = i64(s + 40);
  int64_t outer = i64(s + 48), mid = i64(s + 56), inner = i64(s + 64);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  if (in->count != out->count || n_scales == 0 || nbytes != 8ull * n_scales || !in_range(p, at, nbytes) ||
      !geometry_ok(outer, mid, inner, in->count) || (n_scales != 1 && (uint64_t)(outer * inner) != n_scales))
    return fail(e, "QACCEL_VTA: a host requantization step is malformed (corrupt program)");
  const uint8_t *scales = p->base + at;
  if (!INT32_OK(zp_in) || !INT32_OK(zp_out) || !INT32_OK(lo) || !INT32_OK(hi) || lo > hi)
    return fail(e, "QACCEL_VTA: a host requantization step has zero points or clamp out of int32 (corrupt program)");
  for (uint32_t k = 0; k < n_scales; k++) {
    double scale;
    memcpy(&scale, scales + 8 * k, 8);
    if (!isfinite(scale) || fabs(scale) > 2147483648.0)
      return fail(e, "QACCEL_VTA: a host requantization step has scale %g (corrupt program)", scale);
  }
  if (!out->data) return 0; /* checked only */
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
static int pad(const Program *p, const uint8_t *s, const Value *in, Value *out, char *e) {
  uint32_t rank = u32(s + 12);
  int64_t value = i64(s + 16);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  int64_t shape[MAX_RANK], before[MAX_RANK], oshape[MAX_RANK], idx[MAX_RANK] = {0};
  uint64_t n_in = 1, n_out = 1;
  if (rank == 0 || rank > MAX_RANK || nbytes != 24ull * rank || !in_range(p, at, nbytes) || in->elem != out->elem)
    return fail(e, "QACCEL_VTA: a host padding step is malformed (corrupt program)");
  for (uint32_t d = 0; d < rank; d++) {
    shape[d] = i64(p->base + at + 8 * d);
    before[d] = i64(p->base + at + 8 * (rank + d));
    int64_t after = i64(p->base + at + 8 * (2 * rank + d));
    /* negative widths crop (accel.crop); every output dimension keeps at least one element */
    if (before[d] < -(1 << 24) || after < -(1 << 24) || before[d] > (1 << 24) || after > (1 << 24) ||
        shape[d] < 0 || shape[d] > (1 << 30) || shape[d] + before[d] + after < 1 || !times(&n_in, shape[d]) ||
        !times(&n_out, oshape[d] = shape[d] + before[d] + after))
      return fail(e, "QACCEL_VTA: a host padding step is malformed (corrupt program)");
  }
  if (n_in != in->count || n_out != out->count)
    return fail(e, "QACCEL_VTA: a host padding step does not fit its values (corrupt program)");
  if (in->elem == 1 ? value < -128 || value > 127 : !INT32_OK(value))
    return fail(e, "QACCEL_VTA: a host padding step pads with %lld, out of its element type (corrupt program)",
                (long long)value);
  if (!out->data) return 0; /* checked only */
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
static int concat(const Program *p, const uint8_t *s, Value *values, Value *out, char *e) {
  uint32_t n = u32(s + 12);
  int64_t outer = i64(s + 16);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88), total = 0;
  if (n == 0 || n > 4096 || outer <= 0 || nbytes != 16ull * n || !in_range(p, at, nbytes))
    return fail(e, "QACCEL_VTA: a host concatenation step is malformed (corrupt program)");
  for (uint32_t k = 0; k < n; k++) {
    int64_t v = i64(p->base + at + 16 * k), chunk = i64(p->base + at + 16 * k + 8);
    if (v < 0 || (uint64_t)v >= p->n_values || chunk <= 0 || (uint64_t)chunk > MAX_ELEMENTS ||
        (uint64_t)outer > MAX_ELEMENTS || values[v].elem != out->elem ||
        values[v].count != (uint64_t)chunk * (uint64_t)outer)
      return fail(e, "QACCEL_VTA: a host concatenation step does not fit its values (corrupt program)");
    total += (uint64_t)chunk;
  }
  if (total > out->count || total * (uint64_t)outer != out->count)
    return fail(e, "QACCEL_VTA: a host concatenation step does not fit its values (corrupt program)");
  if (!out->data) return 0; /* checked only */
  size_t elem = out->elem;
  uint8_t *dst = out->data;
  for (int64_t o = 0; o < outer; o++)
    for (uint32_t k = 0; k < n; k++) {
      int64_t v = i64(p->base + at + 16 * k), chunk = i64(p->base + at + 16 * k + 8);
      memcpy(dst, values[v].data + (size_t)(o * chunk) * elem, (size_t)chunk * elem);
      dst += (size_t)chunk * elem;
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

static int lane_step(const Program *p, const uint8_t *s, const Value *in, Value *out, char *e) {
  uint32_t code = u32(s + 12);
  uint64_t n = in->count;
  if (out->count != n) return fail(e, "QACCEL_VTA: a host element-wise step does not fit its values (corrupt program)");
  if (code == OP_CONVERT) { /* widen or narrow: numpy's astype (low bits when narrowing) */
    if (!out->data) return 0; /* checked only */
    for (uint64_t i = 0; i < n; i++) set_elem(out, i, get_elem(in, i));
    return 0;
  }
  int64_t n_consts = i64(s + 16), outer = i64(s + 24), mid = i64(s + 32), inner = i64(s + 40);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  if (n_consts <= 0 || nbytes != 8ull * (uint64_t)n_consts || !in_range(p, at, nbytes) ||
      !geometry_ok(outer, mid, inner, n) || (n_consts != 1 && n_consts != outer * inner))
    return fail(e, "QACCEL_VTA: a host element-wise step is malformed (corrupt program)");
  const uint8_t *consts = p->base + at;
  if (code < OP_BIAS_ADD || code > OP_MAX)
    return fail(e, "QACCEL_VTA: host element-wise operation %u out of range (corrupt program)", code);
  for (int64_t k = 0; k < n_consts; k++) { /* every operand: int32, shifts in [0, 62] */
    int64_t c = i64(consts + 8 * k);
    if ((code == OP_SHIFT_LEFT || code == OP_ROUND_RSHIFT) ? c < 0 || c > 62 : !INT32_OK(c))
      return fail(e, "QACCEL_VTA: host element-wise operation %u with operand %lld out of range (corrupt program)",
                  code, (long long)c);
  }
  if (!out->data) return 0; /* checked only */
  for (uint64_t i = 0; i < n; i++) {
    uint64_t lane = n_consts == 1 ? 0 : ((i / (uint64_t)(mid * inner)) % (uint64_t)outer) * (uint64_t)inner + i % (uint64_t)inner;
    int64_t y;
    if (apply(code, get_elem(in, i), i64(consts + 8 * lane), &y))
      return fail(e, "QACCEL_VTA: host element-wise operation %u out of range (corrupt program)", code);
    set_elem(out, i, y);
  }
  return 0;
}

static int binary_step(const Program *p, const uint8_t *s, Value *values, const Value *lhs, Value *out,
                       char *e) {
  uint32_t code = u32(s + 12);
  int64_t r = i64(s + 16);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88), n = 1, n_rhs = 1;
  if (r < 0 || (uint64_t)r >= p->n_values || nbytes % 16 || nbytes / 16 == 0 || nbytes / 16 > MAX_RANK ||
      !in_range(p, at, nbytes) || code < OP_ADD || code > OP_MAX)
    return fail(e, "QACCEL_VTA: a host binary step is malformed (corrupt program)");
  const Value *rhs = &values[r];
  uint32_t rank = (uint32_t)(nbytes / 16);
  int64_t shape[MAX_RANK], rshape[MAX_RANK], idx[MAX_RANK] = {0};
  for (uint32_t d = 0; d < rank; d++) {
    shape[d] = i64(p->base + at + 8 * d);
    rshape[d] = i64(p->base + at + 8 * (rank + d));
    if ((rshape[d] != 1 && rshape[d] != shape[d]) || !times(&n, shape[d]) || !times(&n_rhs, rshape[d]))
      return fail(e, "QACCEL_VTA: a host binary step is malformed (corrupt program)");
  }
  if (n != lhs->count || n != out->count || n_rhs != rhs->count)
    return fail(e, "QACCEL_VTA: a host binary step does not fit its values (corrupt program)");
  if (!out->data) return 0; /* checked only */
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

static int reduce_step(const Program *p, const uint8_t *s, const Value *in, Value *out, char *e) {
  uint32_t rank = u32(s + 12);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88), n = 1, n_out = 1;
  int64_t shape[MAX_RANK], flag[MAX_RANK], idx[MAX_RANK] = {0};
  if (rank == 0 || rank > MAX_RANK || nbytes != 16ull * rank || !in_range(p, at, nbytes))
    return fail(e, "QACCEL_VTA: a host reduction step is malformed (corrupt program)");
  for (uint32_t d = 0; d < rank; d++) {
    shape[d] = i64(p->base + at + 8 * d);
    flag[d] = i64(p->base + at + 8 * (rank + d));
    if (!times(&n, shape[d]) || !times(&n_out, flag[d] ? 1 : shape[d]))
      return fail(e, "QACCEL_VTA: a host reduction step is malformed (corrupt program)");
  }
  if (n != in->count || n_out != out->count)
    return fail(e, "QACCEL_VTA: a host reduction step does not fit its values (corrupt program)");
  if (!out->data) return 0; /* checked only */
  int64_t *acc = (int64_t *)calloc(n_out, sizeof(int64_t));
  if (!acc) return fail(e, "QACCEL_VTA: out of memory");
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

static int layer_error(uint32_t k, int rc, const vta_run *r, char *e) {
  if (rc == VTA_ERR_CONFIG) return fail(e, "QACCEL_VTA: hardware configuration not supported by the machine");
  if (rc == VTA_ERR_NOMEM) return fail(e, "QACCEL_VTA: out of memory");
  if (r->error_index >= 0)
    return fail(e, "QACCEL_VTA: layer %u, instruction %lld (%s): %s", k, (long long)r->error_index,
                       r->error_kind, r->error_message);
  return fail(e, "QACCEL_VTA: layer %u: %s", k, r->error_message);
}

static int leftover_tokens(uint32_t k, const vta_run *r, char *e) {
  for (int f = 0; f < VTA_FIFOS; f++)
    if (r->leftover_tokens[f]) return fail(e, "QACCEL_VTA: layer %u leaves tokens over", k);
  return 0;
}

/* The checked path: the layer simulated with every check and the timing model. */
static int run_layer(const Program *p, uint32_t k, uint8_t *dram, int64_t *cycles, char *e) {
  const uint8_t *l = p->base + p->layers_at + (uint64_t)LAYER_BYTES * k;
  vta_run r;
  memset(&r, 0, sizeof r);
  r.uop_image = (const uint32_t *)(p->base + u64(l + 16));
  r.uop_image_len = (int64_t)u64(l + 24);
  r.dram = dram;
  r.dram_len = (int64_t)p->dram_bytes;
  int rc = vta_simulate(&p->cfg, (const uint64_t *)(p->base + u64(l)), (int64_t)u64(l + 8), 1, &r);
  if (rc != VTA_OK) return layer_error(k, rc, &r, e);
  *cycles += r.total_cycles;
  return leftover_tokens(k, &r, e);
}

/* ---- the program: opened, checked, immutable ---------------------------------------------- */

struct qaccel_program {
  Program p;
  Value *shapes;       /* per value: its element size and count (no data) */
  Io *io;              /* inputs, then outputs */
  Runs *runs;          /* per input, then output: its repacking as runs */
  uint8_t *is_input;   /* per value: an input's packed value (repacking writes all of it) */
  uint64_t state_bytes; /* what a state allocates: values and DRAM image */
};

static int checked_by_environment(void) {
  const char *mode = getenv("QACCEL_SIMULATION");
  return mode && strcmp(mode, "checked") == 0;
}

struct qaccel_state {
  const qaccel_program *program;
  uint32_t n_values, n_layers; /* the program's: freeing a state does not read the program */
  Value *values;
  uint8_t *dram;
  int checked;           /* QACCEL_SIMULATION=checked: every run simulates every check */
  int ready;             /* the layers are prepared (on the first run) */
  vta_program **layers;  /* per layer, checked and timed once (the pointers: this state's) */
  /* qaccel_state_share: the state that owns `layers` (prepared, read-only from then on; it
   * outlives this one), else NULL: this state owns them */
  const qaccel_state *owner;
  vta_scratch *scratch;
  uint64_t dirty_end;    /* DRAM bytes at or past it keep the image's values in every run */
  int64_t cycles;        /* one run's accelerator cycles (the layers' timing, once) */
  int64_t checked_cycles; /* QACCEL_SIMULATION=checked: the last run's, simulated; -1 before */
  uint64_t runs;
  qaccel_device device;  /* a board's device (qaccel_state_set_device), else run is NULL */
  char error[QACCEL_ERROR_BYTES];
};

/* LUT: int8 b = table[int8 a + 128], the 256 int8 entries at the step's offset (accel.lut). */
static int lut_step(const Program *p, const uint8_t *s, const Value *in, Value *out, char *e) {
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  if (nbytes != 256 || !in_range(p, at, nbytes) || in->elem != 1 || out->elem != 1 || in->count != out->count)
    return fail(e, "QACCEL_VTA: a host table step is malformed (corrupt program)");
  if (!out->data) return 0; /* checked only */
  const uint8_t *table = p->base + at;
  const uint8_t *x = (const uint8_t *)in->data;
  uint8_t *y = (uint8_t *)out->data;
  for (uint64_t i = 0; i < in->count; i++) y[i] = table[(uint8_t)(x[i] ^ 0x80u)];
  return 0;
}

/* GATHER: b[i] = a[idx[i]], or p[0] where idx[i] is -1; i64 idx at the step's offset, one per
   element of b (accel.depth_to_space: kernels/packed.py's depth_to_space_index). */
static int gather_step(const Program *p, const uint8_t *s, const Value *in, Value *out, char *e) {
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  int64_t fill = i64(s + 16);
  int64_t lo = in->elem == 1 ? -128 : INT32_MIN, hi = in->elem == 1 ? 127 : INT32_MAX;
  if (in->elem != out->elem || out->count > UINT64_MAX / 8 || nbytes != 8 * out->count ||
      !in_range(p, at, nbytes) || fill < lo || fill > hi)
    return fail(e, "QACCEL_VTA: a host gather step is malformed (corrupt program)");
  const uint8_t *idx = p->base + at;
  if (!out->data) { /* checked only: every index in range */
    for (uint64_t i = 0; i < out->count; i++) {
      int64_t j = i64(idx + 8 * i);
      if (j < -1 || (j >= 0 && (uint64_t)j >= in->count))
        return fail(e, "QACCEL_VTA: a host gather step reads outside its value (corrupt program)");
    }
    return 0;
  }
  for (uint64_t i = 0; i < out->count; i++) {
    int64_t j = i64(idx + 8 * i);
    set_elem(out, i, j < 0 ? fill : get_elem(in, (uint64_t)j));
  }
  return 0;
}

/* BILINEAR (accel.resize_bilinear; kernels/packed.py's resize_bilinear_from_tables): LiteRT's
   int8 ResizeBilinearInteger on packed values a -> b, every lane alike; p: images (N * C/B), H, W,
   B, OH, OW; at offset i64 y0, y1, wy (OH each), x0, x1, wx (OW each). Output row y reads input
   rows y0[y] and y1[y] weighted 1024 - wy[y] and wy[y] (columns alike); the four products are
   summed in int64 and divided by 2^20 rounding half away from zero (C division truncates). */
static int bilinear_step(const Program *p, const uint8_t *s, const Value *in, Value *out, char *e) {
  int64_t images = i64(s + 16), h = i64(s + 24), w = i64(s + 32), block = i64(s + 40);
  int64_t oh = i64(s + 48), ow = i64(s + 56);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88), n_in = 1, n_out = 1;
  if (in->elem != 1 || out->elem != 1 || !times(&n_in, images) || !times(&n_in, h) || !times(&n_in, w) ||
      !times(&n_in, block) || !times(&n_out, images) || !times(&n_out, oh) || !times(&n_out, ow) ||
      !times(&n_out, block) || n_in != in->count || n_out != out->count ||
      nbytes != 24 * ((uint64_t)oh + (uint64_t)ow) || !in_range(p, at, nbytes))
    return fail(e, "QACCEL_VTA: a host bilinear resize step is malformed (corrupt program)");
  const uint8_t *ty = p->base + at, *tx = ty + 24 * (uint64_t)oh;
  if (!out->data) { /* checked only: rows and columns inside the input, weights bounded */
    for (int k = 0; k < 2; k++) {
      const uint8_t *t = k == 0 ? ty : tx;
      int64_t n = k == 0 ? oh : ow, size = k == 0 ? h : w;
      for (int64_t i = 0; i < n; i++) {
        int64_t lo = i64(t + 8 * i), hi = i64(t + 8 * (n + i)), wt = i64(t + 8 * (2 * n + i));
        if (lo < 0 || lo >= size || hi < 0 || hi >= size || wt < -1024 || wt > 2048)
          return fail(e, "QACCEL_VTA: a host bilinear resize step reads outside its value (corrupt program)");
      }
    }
    return 0;
  }
  const int8_t *x = (const int8_t *)in->data;
  for (int64_t n = 0; n < images; n++)
    for (int64_t oy = 0; oy < oh; oy++) {
      int64_t y0 = i64(ty + 8 * oy), y1 = i64(ty + 8 * (oh + oy)), wy1 = i64(ty + 8 * (2 * oh + oy));
      int64_t wy0 = 1024 - wy1;
      const int8_t *r0 = x + (n * h + y0) * w * block, *r1 = x + (n * h + y1) * w * block;
      for (int64_t ox = 0; ox < ow; ox++) {
        int64_t x0 = i64(tx + 8 * ox), x1 = i64(tx + 8 * (ow + ox)), wx1 = i64(tx + 8 * (2 * ow + ox));
        int64_t wx0 = 1024 - wx1;
        uint8_t *y = out->data + ((n * oh + oy) * ow + ox) * block;
        for (int64_t b = 0; b < block; b++) {
          int64_t v = r0[x0 * block + b] * wy0 * wx0 + r1[x0 * block + b] * wy1 * wx0 +
                      r0[x1 * block + b] * wy0 * wx1 + r1[x1 * block + b] * wy1 * wx1;
          int64_t r = (v + (v > 0 ? (1 << 19) : -(1 << 19))) / (1 << 20);
          y[b] = (uint8_t)r; /* the reference kernel's cast to int8, modulo 256 */
        }
      }
    }
  return 0;
}

/* GATHER_SUM (accel.col2im; kernels/packed.py's gather_sum): int32 b[i] = the int32 (wrapping)
   sum of a[idx[i * T + j]], j < T = p[0], -1 entries skipped; i64 idx at the step's offset. */
static int gather_sum_step(const Program *p, const uint8_t *s, const Value *in, Value *out, char *e) {
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  int64_t taps = i64(s + 16);
  if (in->elem != 4 || out->elem != 4 || taps <= 0 || taps > 4096 ||
      out->count > UINT64_MAX / 8 / (uint64_t)taps || nbytes != 8 * (uint64_t)taps * out->count ||
      !in_range(p, at, nbytes))
    return fail(e, "QACCEL_VTA: a host gather-sum step is malformed (corrupt program)");
  const uint8_t *idx = p->base + at;
  uint64_t n = out->count * (uint64_t)taps;
  if (!out->data) { /* checked only: every index in range */
    for (uint64_t i = 0; i < n; i++) {
      int64_t j = i64(idx + 8 * i);
      if (j < -1 || (j >= 0 && (uint64_t)j >= in->count))
        return fail(e, "QACCEL_VTA: a host gather-sum step reads outside its value (corrupt program)");
    }
    return 0;
  }
  for (uint64_t i = 0; i < out->count; i++) {
    uint32_t sum = 0; /* modulo 2^32, as the reference kernel's int32 accumulator */
    for (int64_t t = 0; t < taps; t++) {
      int64_t j = i64(idx + 8 * (i * (uint64_t)taps + (uint64_t)t));
      if (j >= 0) sum += (uint32_t)get_elem(in, (uint64_t)j);
    }
    int32_t y;
    memcpy(&y, &sum, 4);
    memcpy(out->data + 4 * i, &y, 4);
  }
  return 0;
}

/* accel.host_pool2d (kernels/packed.py's host_pool2d, qhost.pool2d): int8 max or average pool
   of value a into b, c = 0 max, 1 average; p: images (N * C/B), H, W, B, OH, OW, KH, KW; at
   offset i64 stride h, stride w, top, left, min, max. Taps in the padding are skipped and not
   counted; the average divides rounding half away from zero (C division truncates).
   accel.max_pool2d / accel.sum_pool2d left on the host (kernels/packed.py's window_pool): c = 0
   max or 2 sum (modulo 2^32) of int32 values, no padding, clamp the int32 range. */
static int pool_step(const Program *p, const uint8_t *s, const Value *in, Value *out, char *e) {
  uint32_t kind = u32(s + 12);
  int64_t g[8];
  for (int k = 0; k < 8; k++) g[k] = i64(s + 16 + 8 * k);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  int64_t images = g[0], h = g[1], w = g[2], block = g[3], oh = g[4], ow = g[5], kh = g[6], kw = g[7];
  /* int8 for max and average; int32 for max and sum */
  int wide = in->elem == 4 && out->elem == 4 && kind != 1;
  if (kind > 2 || (kind == 2 && !wide) || nbytes != 48 || !in_range(p, at, nbytes) || !(wide || (in->elem == 1 && out->elem == 1)))
    return fail(e, "QACCEL_VTA: a host pool step is malformed (corrupt program)");
  for (int k = 0; k < 8; k++)
    if (g[k] <= 0 || (uint64_t)g[k] > MAX_ELEMENTS)
      return fail(e, "QACCEL_VTA: a host pool step is malformed (corrupt program)");
  int64_t sh = i64(p->base + at), sw = i64(p->base + at + 8), top = i64(p->base + at + 16);
  int64_t left = i64(p->base + at + 24), lo = i64(p->base + at + 32), hi = i64(p->base + at + 40);
  if (sh <= 0 || sw <= 0 || top < 0 || left < 0 || top >= kh || left >= kw || sh > (1 << 20) ||
      sw > (1 << 20) || lo < (wide ? INT32_MIN : -128) || hi > (wide ? INT32_MAX : 127) || lo > hi ||
      in->count != (uint64_t)images * (uint64_t)h * (uint64_t)w * (uint64_t)block ||
      out->count != (uint64_t)images * (uint64_t)oh * (uint64_t)ow * (uint64_t)block)
    return fail(e, "QACCEL_VTA: a host pool step does not fit its values (corrupt program)");
  if (!out->data) return 0; /* checked only */
  for (int64_t n = 0; n < images; n++)
    for (int64_t oy = 0; oy < oh; oy++)
      for (int64_t ox = 0; ox < ow; ox++)
        for (int64_t b = 0; b < block; b++) {
          int64_t acc = kind == 0 ? INT64_MIN : 0, count = 0;
          for (int64_t ky = 0; ky < kh; ky++) {
            int64_t iy = oy * sh - top + ky;
            if (iy < 0 || iy >= h) continue;
            for (int64_t kx = 0; kx < kw; kx++) {
              int64_t ix = ox * sw - left + kx;
              if (ix < 0 || ix >= w) continue;
              int64_t v = get_elem(in, (uint64_t)(((n * h + iy) * w + ix) * block + b));
              if (kind == 0) acc = v > acc ? v : acc;
              else acc += v;
              count++;
            }
          }
          if (count == 0) return fail(e, "QACCEL_VTA: a host pool window lies in the padding (corrupt program)");
          if (kind == 1) acc = acc > 0 ? (acc + count / 2) / count : (acc - count / 2) / count;
          if (kind == 2) acc = wrap32(acc);
          acc = acc < lo ? lo : acc > hi ? hi : acc;
          set_elem(out, (uint64_t)(((n * oh + oy) * ow + ox) * block + b), acc);
        }
  return 0;
}

/* accel.concat_lanes (kernels/packed.py's concat_lanes): channel c of input k, packed
   [N, ceil(C_k/B), M, B], goes to channel c + C_0 + ... + C_{k-1} of the packed result; p[0] N,
   p[1] M (the product of the middle dimensions), p[2] B; at offset i64 (value, channels) per
   input. The result's padding lanes stay 0 (values start zeroed). */
static int concat_lanes(const Program *p, const uint8_t *s, Value *values, Value *out, char *e) {
  uint32_t n = u32(s + 12);
  int64_t batch = i64(s + 16), middle = i64(s + 24), block = i64(s + 32);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88), total = 0;
  if (n == 0 || n > 4096 || batch <= 0 || middle <= 0 || block <= 0 || (uint64_t)batch > MAX_ELEMENTS ||
      (uint64_t)middle > MAX_ELEMENTS || block > 4096 || nbytes != 16ull * n || !in_range(p, at, nbytes))
    return fail(e, "QACCEL_VTA: a host lane concatenation step is malformed (corrupt program)");
  uint64_t plane = (uint64_t)batch * (uint64_t)middle * (uint64_t)block; /* elements per block */
  for (uint32_t k = 0; k < n; k++) {
    int64_t v = i64(p->base + at + 16 * k), c = i64(p->base + at + 16 * k + 8);
    if (v < 0 || (uint64_t)v >= p->n_values || c <= 0 || (uint64_t)c > MAX_ELEMENTS || values[v].elem != out->elem ||
        values[v].count != (uint64_t)((c + block - 1) / block) * plane)
      return fail(e, "QACCEL_VTA: a host lane concatenation step does not fit its values (corrupt program)");
    total += (uint64_t)c;
  }
  uint64_t out_blocks = (total + (uint64_t)block - 1) / (uint64_t)block;
  if (out_blocks * plane != out->count)
    return fail(e, "QACCEL_VTA: a host lane concatenation step does not fit its values (corrupt program)");
  if (!out->data) return 0; /* checked only */
  size_t esize = out->elem;
  uint64_t base = 0;
  for (uint32_t k = 0; k < n; k++) {
    int64_t v = i64(p->base + at + 16 * k), c = i64(p->base + at + 16 * k + 8);
    uint64_t in_blocks = (uint64_t)((c + block - 1) / block);
    const uint8_t *src = values[v].data;
    for (int64_t b = 0; b < batch; b++)
      for (int64_t ch = 0; ch < c; ch++) {
        uint64_t g = base + (uint64_t)ch;
        uint64_t from = ((uint64_t)b * in_blocks + (uint64_t)ch / (uint64_t)block) * (uint64_t)middle;
        uint64_t to = ((uint64_t)b * out_blocks + g / (uint64_t)block) * (uint64_t)middle;
        uint64_t lane_in = (uint64_t)ch % (uint64_t)block, lane_out = g % (uint64_t)block;
        for (int64_t m = 0; m < middle; m++)
          memcpy(out->data + ((to + (uint64_t)m) * (uint64_t)block + lane_out) * esize,
                 src + ((from + (uint64_t)m) * (uint64_t)block + lane_in) * esize, esize);
      }
    base += (uint64_t)c;
  }
  return 0;
}

/* ---- the attention core's host steps (kernels/attention.py) ----------------------------- */

/* gemmlowp's fixed point on int32 raw values (kernels/arithmetic.py). */
static int64_t srdhm(int64_t a, int64_t b) {
  if (a == INT32_MIN && b == INT32_MIN) return INT32_MAX;
  return (a * b + (1ll << 30)) >> 31; /* arithmetic shift (gcc, clang) */
}
static int64_t rdbpot(int64_t x, int64_t exponent) {
  if (exponent <= 0) return x;
  return (x + ((1ll << exponent) >> 1) - (x < 0)) >> exponent;
}
static int64_t sat_left_shift(int64_t x, int exponent) {
  int64_t threshold = (1ll << (31 - exponent)) - 1;
  return x > threshold ? INT32_MAX : x < -threshold ? INT32_MIN : x * (1ll << exponent);
}
/* TFLite's GetReciprocal (one_over_one_plus_x_for_x_in_0_1, Newton-Raphson): the Q0.31
   reciprocal of x (Q12) rescaled, and num_bits_over_unit. */
static int64_t reciprocal(int64_t x, int x_integer_digits, int *num_bits_over_unit) {
  uint32_t ux = (uint32_t)x;
  int headroom_plus_one = 0;
  while (headroom_plus_one < 32 && !(ux & (0x80000000u >> headroom_plus_one))) headroom_plus_one++;
  *num_bits_over_unit = x_integer_digits - headroom_plus_one;
  uint32_t shifted = headroom_plus_one >= 32 ? 0u : ux << headroom_plus_one;
  int64_t a = wrap32((int64_t)shifted - (1ll << 31));
  int64_t sum = a + INT32_MAX; /* rounding half sum */
  int64_t half_denominator = (sum + (sum >= 0 ? 1 : -1)) / 2;
  int64_t y = wrap32(1515870810 + srdhm(half_denominator, -1010580540));
  for (int k = 0; k < 3; k++) {
    int64_t one_minus = wrap32((1ll << 29) - srdhm(half_denominator, y));
    y = wrap32(y + sat_left_shift(srdhm(y, one_minus), 2));
  }
  return sat_left_shift(y, 1);
}

/* SOFTMAX (accel.softmax): int8 value a into b, both packed [N, C/B, M, B]; p: N, C/B, M, B,
   C (real channels), diff_min; at offset the 256 i64 Q0.31 exponentials of the differences
   0, -1, ..., -255 (kernels/attention.py's softmax_exp_table). Padding lanes become -128. */
static int softmax_step(const Program *p, const uint8_t *s, const Value *in, Value *out, char *e) {
  int64_t n = i64(s + 16), cb = i64(s + 24), m = i64(s + 32), b = i64(s + 40), c = i64(s + 48);
  int64_t diff_min = i64(s + 56);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  if (in->elem != 1 || out->elem != 1 || in->count != out->count || nbytes != 256 * 8 ||
      n < 1 || cb < 1 || (uint64_t)n > MAX_ELEMENTS || (uint64_t)cb > MAX_ELEMENTS ||
      !in_range(p, at, nbytes) || !geometry_ok(n * cb, m, b, in->count) ||
      (uint64_t)(n * cb) * (uint64_t)m * (uint64_t)b != in->count || c < 1 || c > cb * b ||
      c <= (cb - 1) * b || diff_min < -256 || diff_min > 0)
    return fail(e, "QACCEL_VTA: a host softmax step is malformed (corrupt program)");
  for (int k = 0; k < 256; k++) { /* Q0.31 exponentials: the fixed-point arithmetic assumes them */
    int64_t t = i64(p->base + at + 8 * (uint64_t)k);
    if (t < 0 || t > INT32_MAX)
      return fail(e, "QACCEL_VTA: a host softmax step's exponential %d is out of range (corrupt program)", k);
  }
  if (!out->data) return 0; /* checked only */
  const uint8_t *table = p->base + at;
  const int8_t *x = (const int8_t *)in->data;
  int8_t *y = (int8_t *)out->data;
  uint64_t lane_stride = (uint64_t)m * (uint64_t)b; /* between blocks of one row */
  for (int64_t img = 0; img < n; img++)
    for (int64_t mid = 0; mid < m; mid++) {
      uint64_t base = (uint64_t)img * (uint64_t)cb * lane_stride + (uint64_t)mid * (uint64_t)b;
#define AT(ch) (base + (uint64_t)((ch) / b) * lane_stride + (uint64_t)((ch) % b))
      int max = -128;
      for (int64_t ch = 0; ch < c; ch++) if (x[AT(ch)] > max) max = x[AT(ch)];
      int64_t sum = 0;
      for (int64_t ch = 0; ch < c; ch++) {
        int diff = x[AT(ch)] - max;
        if (diff >= diff_min) sum += rdbpot(i64(table + 8 * (uint64_t)(-diff)), 12);
      }
      int bits;
      int64_t scale = reciprocal(wrap32(sum), 12, &bits);
      int64_t exponent = bits + 31 - 8;
      if (exponent < 0 || exponent > 31)
        return fail(e, "QACCEL_VTA: a softmax row of %lld values sums to too many exponentials for the "
                    "int8 reference kernel", (long long)c);
      for (int64_t ch = 0; ch < cb * b; ch++) {
        int64_t v = -128;
        if (ch < c) {
          int diff = x[AT(ch)] - max;
          if (diff >= diff_min) {
            v = rdbpot(srdhm(scale, i64(table + 8 * (uint64_t)(-diff))), exponent) - 128;
            v = v < -128 ? -128 : v > 127 ? 127 : v;
          }
        }
        y[AT(ch)] = (int8_t)v;
      }
#undef AT
    }
  return 0;
}

/* BATCH_MATMUL (accel.batch_matmul, after gathers into plain operands): int8 value a
   [batch, A, K] times int8 value c [batch, K, C] into int8 value b [batch, A, C]; p: batch, A,
   K, C, lhs zero point, rhs zero point, output zero point; at offset i64 multiplier, shift:
   MultiplyByQuantizedMultiplier(Σ (l - lzp)(r - rzp) wrapped to int32) + ozp, clamped. */
static int batch_matmul_step(const Program *p, const uint8_t *s, Value *values, const Value *lhs,
                             Value *out, char *e) {
  uint32_t rhs_id = u32(s + 12);
  int64_t bt = i64(s + 16), rows = i64(s + 24), depth = i64(s + 32), cols = i64(s + 40);
  int64_t lzp = i64(s + 48), rzp = i64(s + 56), ozp = i64(s + 64);
  uint64_t at = u64(s + 80), nbytes = u64(s + 88);
  if (rhs_id >= p->n_values || nbytes != 16 || !in_range(p, at, nbytes))
    return fail(e, "QACCEL_VTA: a host batch matmul step is malformed (corrupt program)");
  const Value *rhs = &values[rhs_id];
  int64_t mult = i64(p->base + at), shift = i64(p->base + at + 8);
  if (lhs->elem != 1 || rhs->elem != 1 || out->elem != 1 || !geometry_ok(bt, rows, depth, lhs->count) ||
      !geometry_ok(bt, depth, cols, rhs->count) || !geometry_ok(bt, rows, cols, out->count) ||
      (uint64_t)(bt * rows * depth) != lhs->count || (uint64_t)(bt * depth * cols) != rhs->count ||
      (uint64_t)(bt * rows * cols) != out->count || lzp < -128 || lzp > 127 || rzp < -128 ||
      rzp > 127 || ozp < -128 || ozp > 127 || mult < 0 || mult > INT32_MAX || shift < -62 || shift > 31)
    return fail(e, "QACCEL_VTA: a host batch matmul step is malformed (corrupt program)");
  if (!out->data) return 0; /* checked only */
  const int8_t *l = (const int8_t *)lhs->data, *r = (const int8_t *)rhs->data;
  int8_t *y = (int8_t *)out->data;
  for (int64_t k = 0; k < bt; k++)
    for (int64_t i = 0; i < rows; i++)
      for (int64_t j = 0; j < cols; j++) {
        int64_t acc = 0;
        const int8_t *lr = l + (k * rows + i) * depth, *rc = r + k * depth * cols + j;
        for (int64_t t = 0; t < depth; t++) acc += (int64_t)(lr[t] - lzp) * (int64_t)(rc[t * cols] - rzp);
        int64_t x = wrap32(acc);
        if (shift > 0) x = wrap32((int64_t)((uint64_t)x << shift));
        int64_t v = rdbpot(srdhm(x, mult), shift < 0 ? -shift : 0) + ozp;
        y[(k * rows + i) * cols + j] = (int8_t)(v < -128 ? -128 : v > 127 ? 127 : v);
      }
  return 0;
}

/* BMM_CORRECTION (accel.bmm_zp_correction, after gathers into plain operands): int8 value a
   [M, K] and int8 value c [K, N] into int32 value b packed [N/B, M, B]: -zr * Σ_k a[m, k] -
   zl * Σ_k c[k, n] + K * zl * zr wrapped to int32, padding lanes 0; p: M, K, N, B, zl, zr.
   BMM_CORRECTIONS: the same for `batch` (p[6]) products at once, a [batch, M, K] and c
   [batch, K, N] into b [batch, N/B, M, B]. */
static int bmm_correction_step(const Program *p, const uint8_t *s, Value *values, const Value *lhs,
                               Value *out, int batched, char *e) {
  uint32_t rhs_id = u32(s + 12);
  int64_t rows = i64(s + 16), depth = i64(s + 24), cols = i64(s + 32), blk = i64(s + 40);
  int64_t lzp = i64(s + 48), rzp = i64(s + 56), batch = batched ? i64(s + 64) : 1;
  if (rhs_id >= p->n_values || blk < 1 || blk > 1024 || rows < 1 || depth < 1 || cols < 1 || batch < 1 ||
      (uint64_t)rows > MAX_ELEMENTS || (uint64_t)depth > MAX_ELEMENTS || (uint64_t)cols > MAX_ELEMENTS ||
      (uint64_t)batch > MAX_ELEMENTS)
    return fail(e, "QACCEL_VTA: a zero-point correction step is malformed (corrupt program)");
  const Value *rhs = &values[rhs_id];
  int64_t nb = (cols + blk - 1) / blk;
  if (lhs->elem != 1 || rhs->elem != 1 || out->elem != 4 || !geometry_ok(batch, rows, depth, lhs->count) ||
      !geometry_ok(batch, depth, cols, rhs->count) || !geometry_ok(batch * nb, rows, blk, out->count) ||
      (uint64_t)(batch * rows * depth) != lhs->count || (uint64_t)(batch * depth * cols) != rhs->count ||
      (uint64_t)(batch * nb * rows * blk) != out->count || lzp < -128 || lzp > 127 || rzp < -128 || rzp > 127)
    return fail(e, "QACCEL_VTA: a zero-point correction step is malformed (corrupt program)");
  if (!out->data) return 0; /* checked only */
  int64_t *col = (int64_t *)calloc((size_t)cols, sizeof *col);
  if (!col) return fail(e, "QACCEL_VTA: out of memory");
  memset(out->data, 0, out->count * 4);
  for (int64_t n = 0; n < batch; n++) {
    const int8_t *l = (const int8_t *)lhs->data + n * rows * depth;
    const int8_t *r = (const int8_t *)rhs->data + n * depth * cols;
    int32_t *y = (int32_t *)out->data + n * nb * rows * blk;
    memset(col, 0, (size_t)cols * sizeof *col);
    for (int64_t t = 0; t < depth; t++)
      for (int64_t j = 0; j < cols; j++) col[j] += r[t * cols + j];
    for (int64_t i = 0; i < rows; i++) {
      int64_t row = 0;
      for (int64_t t = 0; t < depth; t++) row += l[i * depth + t];
      /* |each term| < 2^8 * 2^8 * 2^34: no int64 overflow for any count the runner accepts */
      int64_t base = -rzp * row + depth * lzp * rzp;
      for (int64_t j = 0; j < cols; j++)
        y[((j / blk) * rows + i) * blk + j % blk] = (int32_t)wrap32(base - lzp * col[j]);
    }
  }
  free(col);
  return 0;
}

static int execute_layer(qaccel_state *q, uint32_t k, char *e);

/* The steps walked in order: run in `q`, or, with `q` NULL, only checked (every value without
 * data: each step function returns after its checks). */
static int walk_steps(const Program *p, Value *values, qaccel_state *q, char *e) {
  uint8_t *dram = q ? q->dram : NULL;
  for (uint32_t k = 0; k < p->n_steps; k++) {
    const uint8_t *s = p->base + p->steps_at + (uint64_t)STEP_BYTES * k;
    uint32_t kind = u32(s), a = u32(s + 4), b = u32(s + 8);
    uint64_t at = u64(s + 80), nbytes = u64(s + 88);
    if (kind == KIND_LAYER) {
      if (a >= p->n_layers) return fail(e, "QACCEL_VTA: step %u runs layer %u of %u (corrupt program)", k, a, p->n_layers);
      if (q && q->device.run) {
        const uint8_t *l = p->base + p->layers_at + (uint64_t)LAYER_BYTES * a;
        uint64_t n = u64(l + 8), nu = u64(l + 24);
        char why[QACCEL_ERROR_BYTES] = {0};
        if (n > UINT32_MAX || nu > UINT32_MAX)
          return fail(e, "QACCEL_VTA: layer %u is too long for the device", a);
        if (q->device.run(q->device.ctx, (const uint64_t *)(p->base + u64(l)), (uint32_t)n,
                          (const uint32_t *)(p->base + u64(l + 16)), (uint32_t)nu, why)) {
          why[QACCEL_ERROR_BYTES - 1] = 0;
          return fail(e, "QACCEL_VTA: layer %u on the device: %s", a, why[0] ? why : "failed");
        }
        continue;
      }
      if (q && (q->checked ? run_layer(p, a, dram, &q->checked_cycles, e) : execute_layer(q, a, e))) return 1;
      continue;
    }
    if (a >= p->n_values || ((kind == KIND_REQUANT || kind == KIND_PAD || kind == KIND_LANE || kind == KIND_BINARY ||
                             kind == KIND_REDUCE || kind == KIND_LUT || kind == KIND_POOL ||
                             kind == KIND_GATHER || kind == KIND_BILINEAR || kind == KIND_GATHER_SUM ||
                             kind == KIND_SOFTMAX || kind == KIND_BATCH_MATMUL ||
                             kind == KIND_BMM_CORRECTION || kind == KIND_BMM_CORRECTIONS) && b >= p->n_values))
      return fail(e, "QACCEL_VTA: step %u names value %u of %u (corrupt program)", k, a, p->n_values);
    Value *v = &values[a];
    if (kind == KIND_WRITE || kind == KIND_READ) {
      int widen = kind == KIND_READ && b == 1;
      uint64_t want = widen ? v->count : v->count * v->elem;
      int64_t offset = i64(s + 16);
      if (at > p->dram_bytes || nbytes > p->dram_bytes - at || nbytes != want || (widen && v->elem != 4) ||
          (kind == KIND_READ && b > 1) || (widen && !INT32_OK(offset)))
        return fail(e, "QACCEL_VTA: step %u moves %llu bytes at DRAM offset %llu (corrupt program)", k,
             (unsigned long long)nbytes, (unsigned long long)at);
      if (!q) continue;
      if (kind == KIND_WRITE) memcpy(dram + at, v->data, nbytes);
      else if (!widen) memcpy(v->data, dram + at, nbytes);
      else
        for (uint64_t i = 0; i < nbytes; i++) set_elem(v, i, (int64_t)(int8_t)dram[at + i] - offset);
    } else if (kind == KIND_REQUANT) {
      if (requantize(p, s, v, &values[b], e)) return 1;
    } else if (kind == KIND_PAD) {
      if (pad(p, s, v, &values[b], e)) return 1;
    } else if (kind == KIND_CONCAT) {
      if (concat(p, s, values, v, e)) return 1;
    } else if (kind == KIND_LANE) {
      if (lane_step(p, s, v, &values[b], e)) return 1;
    } else if (kind == KIND_BINARY) {
      if (binary_step(p, s, values, v, &values[b], e)) return 1;
    } else if (kind == KIND_REDUCE) {
      if (reduce_step(p, s, v, &values[b], e)) return 1;
    } else if (kind == KIND_LUT) {
      if (lut_step(p, s, v, &values[b], e)) return 1;
    } else if (kind == KIND_POOL) {
      if (pool_step(p, s, v, &values[b], e)) return 1;
    } else if (kind == KIND_CONCAT_LANES) {
      if (concat_lanes(p, s, values, v, e)) return 1;
    } else if (kind == KIND_GATHER) {
      if (gather_step(p, s, v, &values[b], e)) return 1;
    } else if (kind == KIND_SOFTMAX) {
      if (softmax_step(p, s, v, &values[b], e)) return 1;
    } else if (kind == KIND_BATCH_MATMUL) {
      if (batch_matmul_step(p, s, values, v, &values[b], e)) return 1;
    } else if (kind == KIND_BMM_CORRECTION || kind == KIND_BMM_CORRECTIONS) {
      if (bmm_correction_step(p, s, values, v, &values[b], kind == KIND_BMM_CORRECTIONS, e)) return 1;
    } else if (kind == KIND_BILINEAR) {
      if (bilinear_step(p, s, v, &values[b], e)) return 1;
    } else if (kind == KIND_GATHER_SUM) {
      if (gather_sum_step(p, s, v, &values[b], e)) return 1;
    } else {
      return fail(e, "QACCEL_VTA: step %u has unknown kind %u (corrupt program)", k, kind);
    }
  }
  return 0;
}

/* The memory budget (QACCEL_MEMORY_LIMIT, as the machine reads it) for `need` bytes. */
static int within_budget(uint64_t need, const char *what, char *e) {
  char why[256] = {0};
  int64_t limit = vta_memory_limit(why, sizeof why);
  if (limit == -2) return fail(e, "QACCEL_VTA: %s", why);
  if (limit >= 0 && need > (uint64_t)limit)
    return fail(e, "QACCEL_VTA: %s needs %llu bytes, above the memory limit of %lld bytes (raise it with "
                "QACCEL_MEMORY_LIMIT)", what, (unsigned long long)need, (long long)limit);
  return 0;
}

EXPORT void qaccel_program_close(qaccel_program *g) {
  if (!g) return;
  if (g->runs)
    for (uint32_t k = 0; k < g->p.n_in + g->p.n_out; k++) free(g->runs[k].at);
  free(g->runs);
  free(g->shapes);
  free(g->io);
  free(g->is_input);
  free(g);
}

EXPORT int qaccel_program_open(const void *bytes, size_t size, qaccel_program **out,
                               char error[QACCEL_ERROR_BYTES]) {
  char *e = error;
  e[0] = 0;
  *out = NULL;
  if (!bytes || (uintptr_t)bytes % 8)
    return fail(e, "QACCEL_VTA: the program's bytes must be 8-byte aligned");
  qaccel_program *g = (qaccel_program *)calloc(1, sizeof *g);
  if (!g) return fail(e, "QACCEL_VTA: out of memory");
  Program *p = &g->p;
  if (parse_program((const uint8_t *)bytes, size, p, e)) goto fail;
  uint32_t n_io = p->n_in + p->n_out;
  g->shapes = (Value *)calloc(p->n_values ? p->n_values : 1, sizeof(Value));
  g->io = (Io *)calloc(n_io ? n_io : 1, sizeof(Io));
  g->runs = (Runs *)calloc(n_io ? n_io : 1, sizeof(Runs));
  g->is_input = (uint8_t *)calloc(p->n_values ? p->n_values : 1, 1);
  if (!g->shapes || !g->io || !g->runs || !g->is_input) { fail(e, "QACCEL_VTA: out of memory"); goto fail; }
  uint64_t value_bytes = 0, run_bytes = 0;
  for (uint32_t v = 0; v < p->n_values; v++) {
    const uint8_t *r = p->base + p->values_at + (uint64_t)VALUE_BYTES * v;
    g->shapes[v].elem = u32(r);
    g->shapes[v].count = u64(r + 8);
    if ((g->shapes[v].elem != 1 && g->shapes[v].elem != 4) || g->shapes[v].count == 0 ||
        g->shapes[v].count > MAX_ELEMENTS || u32(r + 4) != 0) {
      fail(e, "QACCEL_VTA: value %u is malformed (corrupt program)", v);
      goto fail;
    }
    value_bytes += g->shapes[v].count * g->shapes[v].elem; /* < 2^20 * 2^33 */
  }
  for (uint32_t k = 0; k < n_io; k++) {
    if (parse_io(p, k, &g->io[k], g->shapes, e)) goto fail;
    run_bytes += 3 * sizeof(uint64_t) * g->io[k].plain_count; /* at most one run per element */
    if (k < p->n_in) g->is_input[g->io[k].value] = 1;
  }
  g->state_bytes = value_bytes + p->dram_bytes;
  if (within_budget(g->state_bytes + run_bytes, "the program's values, DRAM image and repacking tables", e))
    goto fail;
  if (walk_steps(p, g->shapes, NULL, e)) goto fail;
  for (uint32_t k = 0; k < n_io; k++)
    if (build_runs(&g->io[k], &g->runs[k], e)) goto fail;
  *out = g;
  return 0;
fail:
  qaccel_program_close(g);
  return 1;
}

EXPORT uint32_t qaccel_program_inputs(const qaccel_program *g) { return g->p.n_in; }
EXPORT uint32_t qaccel_program_outputs(const qaccel_program *g) { return g->p.n_out; }

EXPORT int qaccel_program_tensor(const qaccel_program *g, int is_output, uint32_t index, int32_t *type,
                                 int32_t *rank, int64_t *dims) {
  if (index >= (is_output ? g->p.n_out : g->p.n_in)) return 1;
  const Io *io = &g->io[is_output ? g->p.n_in + index : index];
  *type = io->type;
  *rank = (int32_t)io->rank;
  for (uint32_t d = 0; d < MAX_RANK; d++) dims[d] = d < io->rank ? io->plain[d] : 0;
  return 0;
}

/* ---- a state: one run's memory ------------------------------------------------------------ */

EXPORT void qaccel_state_free(qaccel_state *q) {
  if (!q) return;
  if (q->values)
    for (uint32_t v = 0; v < q->n_values; v++) free(q->values[v].data);
  free(q->values);
  if (!q->device.run) free(q->dram); /* a device's image is the device's */
  if (q->layers && !q->owner)
    for (uint32_t k = 0; k < q->n_layers; k++) vta_program_free(q->layers[k]);
  free(q->layers);
  vta_scratch_free(q->scratch);
  free(q);
}

EXPORT int qaccel_state_new(const qaccel_program *g, qaccel_state **out, char error[QACCEL_ERROR_BYTES]) {
  char *e = error;
  e[0] = 0;
  *out = NULL;
  const Program *p = &g->p;
  if (within_budget(g->state_bytes, "a run of the program (its values and DRAM image)", e)) return 1;
  qaccel_state *q = (qaccel_state *)calloc(1, sizeof *q);
  if (!q) return fail(e, "QACCEL_VTA: out of memory");
  q->program = g;
  q->n_values = p->n_values;
  q->n_layers = p->n_layers;
  q->checked = checked_by_environment();
  q->values = (Value *)calloc(p->n_values ? p->n_values : 1, sizeof(Value));
  q->dram = (uint8_t *)malloc(p->dram_bytes ? p->dram_bytes : 1);
  q->layers = (vta_program **)calloc(p->n_layers ? p->n_layers : 1, sizeof(vta_program *));
  if (!q->values || !q->dram || !q->layers) { fail(e, "QACCEL_VTA: out of memory"); goto fail; }
  for (uint32_t v = 0; v < p->n_values; v++) {
    q->values[v] = g->shapes[v];
    q->values[v].data = (uint8_t *)calloc(q->values[v].count, q->values[v].elem);
    if (!q->values[v].data) { fail(e, "QACCEL_VTA: out of memory"); goto fail; }
  }
  memcpy(q->dram, p->base + p->dram_at, p->dram_bytes);
  q->dirty_end = p->dram_bytes; /* until the layers are prepared */
  q->cycles = q->checked_cycles = -1;
  *out = q;
  return 0;
fail:
  qaccel_state_free(q);
  return 1;
}

/* Before preparing the layers: what an earlier attempt that failed left freed, a new scratch. */
static int prepare_begin(qaccel_state *q, char *e) {
  const Program *p = &q->program->p;
  vta_run r;
  memset(&r, 0, sizeof r);
  for (uint32_t k = 0; k < p->n_layers; k++) {
    vta_program_free(q->layers[k]);
    q->layers[k] = NULL;
  }
  vta_scratch_free(q->scratch);
  q->scratch = NULL;
  int rc = vta_scratch_new(&p->cfg, &r, &q->scratch);
  return rc != VTA_OK ? layer_error(0, rc, &r, e) : 0;
}

/* Layer k prepared: checked and timed (vta_prepare), or from what an earlier preparation of
 * the same program kept (`kept`, vta_program_export's bytes; NULL: none). */
static int prepare_layer(qaccel_state *q, uint32_t k, const uint8_t *kept, uint64_t kept_size, char *e) {
  const Program *p = &q->program->p;
  const uint8_t *l = p->base + p->layers_at + (uint64_t)LAYER_BYTES * k;
  const uint64_t *words = (const uint64_t *)(p->base + u64(l));
  vta_run r;
  memset(&r, 0, sizeof r);
  r.uop_image = (const uint32_t *)(p->base + u64(l + 16));
  r.uop_image_len = (int64_t)u64(l + 24);
  r.dram_len = (int64_t)p->dram_bytes;
  int rc = kept ? vta_program_import(&p->cfg, words, (int64_t)u64(l + 8), kept, (int64_t)kept_size, &r, &q->layers[k])
                : vta_prepare(&p->cfg, words, (int64_t)u64(l + 8), &r, &q->layers[k]);
  if (rc != VTA_OK) return layer_error(k, rc, &r, e);
  return leftover_tokens(k, &r, e);
}

/* Once every layer is prepared: how far any run writes DRAM, one run's cycles, and the
 * weights past that converted once. */
static int prepare_end(qaccel_state *q, char *e) {
  const Program *p = &q->program->p;
  uint64_t dirty = 0;
  int64_t cycles = 0;
  vta_run r;
  memset(&r, 0, sizeof r);
  for (uint32_t k = 0; k < p->n_layers; k++) {
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
  /* past `dirty` every run sees the image: the layers' weights there are converted once */
  for (uint32_t k = 0; k < p->n_layers; k++) {
    int rc = vta_program_constants(q->layers[k], p->base + p->dram_at, (int64_t)p->dram_bytes,
                                   (int64_t)dirty, (int64_t)p->dram_bytes);
    if (rc == VTA_ERR_NOMEM) return fail(e, "QACCEL_VTA: out of memory");
  }
  q->cycles = cycles;
  q->dirty_end = dirty;
  q->ready = 1;
  return 0;
}

/* Every layer checked and timed once (vta_prepare), and how far any run writes DRAM. */
static int prepare_layers(qaccel_state *q, char *e) {
  if (prepare_begin(q, e)) return 1;
  for (uint32_t k = 0; k < q->program->p.n_layers; k++)
    if (prepare_layer(q, k, NULL, 0, e)) return 1;
  return prepare_end(q, e);
}

EXPORT int qaccel_state_prepare(qaccel_state *q) {
  q->error[0] = 0;
  if (q->checked || q->ready) return 0;
  return prepare_layers(q, q->error);
}

/* ---- a preparation kept: the layers' checked runs as bytes ----------------------------------
 * KEPT_MAGIC[8], u32 version, u32 layers, u64 the program's bytes, u32 its checksum, u32
 * reserved; per layer u64 n, then n bytes (vta_program_export's) padded to 8; u32 CRC-32 of all
 * that, u32 reserved. */
static const char KEPT_MAGIC[8] = {'Q', 'A', 'C', 'C', 'K', 'E', 'P', 'T'};
enum { KEPT_VERSION = 1, KEPT_HEADER = 32 };

static uint64_t pad8(uint64_t n) { return n + (-n & 7u); }

EXPORT size_t qaccel_state_export(const qaccel_state *q, void *buf, size_t cap) {
  const Program *p = &q->program->p;
  if (!q->ready || q->checked || q->device.run) return 0;
  uint64_t size = KEPT_HEADER + 8;
  for (uint32_t k = 0; k < p->n_layers; k++) {
    int64_t n = vta_program_export(q->layers[k], NULL, 0);
    if (n < 0) return 0;
    size += 8 + pad8((uint64_t)n);
  }
  if (size > SIZE_MAX) return 0;
  if (!buf || cap < size) return (size_t)size;
  uint8_t *b = (uint8_t *)buf, *at = b + KEPT_HEADER;
  uint32_t version = KEPT_VERSION, layers = p->n_layers, checksum = (uint32_t)u64(p->base + CHECKSUM_AT), zero = 0;
  memset(b, 0, (size_t)size);
  memcpy(b, KEPT_MAGIC, 8);
  memcpy(b + 8, &version, 4);
  memcpy(b + 12, &layers, 4);
  memcpy(b + 16, &p->total, 8);
  memcpy(b + 24, &checksum, 4);
  for (uint32_t k = 0; k < p->n_layers; k++) {
    int64_t n = vta_program_export(q->layers[k], at + 8, (int64_t)(size - (uint64_t)(at + 8 - b)));
    memcpy(at, &n, 8);
    at += 8 + pad8((uint64_t)n);
  }
  crc_init();
  uint32_t crc = crc_update(0, b, (size_t)(at - b));
  memcpy(at, &crc, 4);
  memcpy(at + 4, &zero, 4);
  return (size_t)size;
}

EXPORT int qaccel_state_import(qaccel_state *q, const void *bytes, size_t size) {
  const Program *p = &q->program->p;
  const uint8_t *b = (const uint8_t *)bytes;
  char *e = q->error;
  e[0] = 0;
  if (q->runs || q->ready || q->checked || q->device.run)
    return fail(e, "QACCEL_VTA: a kept preparation is imported before the first run, on the fast path");
  if (!b || size < KEPT_HEADER + 8 || size % 8 || memcmp(b, KEPT_MAGIC, 8) != 0 || u32(b + 8) != KEPT_VERSION)
    return fail(e, "QACCEL_VTA: not a kept preparation of this version");
  crc_init();
  if (u32(b + size - 8) != crc_update(0, b, size - 8))
    return fail(e, "QACCEL_VTA: a kept preparation fails its checksum");
  if (u32(b + 12) != p->n_layers || u64(b + 16) != p->total || u32(b + 24) != (uint32_t)u64(p->base + CHECKSUM_AT))
    return fail(e, "QACCEL_VTA: a kept preparation of another program");
  if (prepare_begin(q, e)) return 1;
  const uint8_t *at = b + KEPT_HEADER, *end = b + size - 8;
  for (uint32_t k = 0; k < p->n_layers; k++) {
    uint64_t left = (uint64_t)(end - at), n = left >= 8 ? u64(at) : 0;
    if (left < 8 || n > left - 8 || pad8(n) > left - 8) {
      fail(e, "QACCEL_VTA: a kept preparation is truncated");
      break;
    }
    if (prepare_layer(q, k, at + 8, n, e)) break;
    at += 8 + pad8(n);
  }
  if (!e[0] && at != end) fail(e, "QACCEL_VTA: a kept preparation has bytes past its layers");
  if (!e[0] && !prepare_end(q, e)) return 0;
  for (uint32_t k = 0; k < p->n_layers; k++) { /* as if never imported */
    vta_program_free(q->layers[k]);
    q->layers[k] = NULL;
  }
  q->ready = 0;
  return 1;
}

EXPORT int qaccel_state_set_device(qaccel_state *q, const qaccel_device *device) {
  const Program *p = &q->program->p;
  char *e = q->error;
  e[0] = 0;
  if (!device || !device->dram || !device->run) return fail(e, "QACCEL_VTA: a device needs dram and run");
  if (q->runs || q->device.run) return fail(e, "QACCEL_VTA: the device is set before the first run, once");
  uint8_t *dram = device->dram(device->ctx, p->dram_bytes ? p->dram_bytes : 1);
  if (!dram) return fail(e, "QACCEL_VTA: the device has no DRAM image of %llu bytes", (unsigned long long)p->dram_bytes);
  free(q->dram);
  q->dram = dram;
  q->device = *device;
  q->checked = 0;
  q->ready = 1;                  /* nothing to prepare: the device runs the streams */
  q->dirty_end = p->dram_bytes;  /* the device's memory is restored whole at every run */
  return 0;
}

EXPORT int qaccel_state_share(qaccel_state *q, const qaccel_state *from) {
  const Program *p = &q->program->p;
  char *e = q->error;
  e[0] = 0;
  if (q->runs || q->ready || q->checked || q->device.run)
    return fail(e, "QACCEL_VTA: a state shares prepared layers before its first run, on the fast path");
  if (!from || from == q || from->program != q->program || !from->ready || from->checked || from->device.run)
    return fail(e, "QACCEL_VTA: layers are shared from a prepared state of the same program");
  if (prepare_begin(q, e)) return 1; /* this state's own scratchpads */
  const qaccel_state *owner = from->owner ? from->owner : from;
  for (uint32_t k = 0; k < p->n_layers; k++) q->layers[k] = owner->layers[k];
  q->owner = owner;
  q->cycles = from->cycles;
  q->dirty_end = from->dirty_end;
  q->ready = 1;
  return 0;
}

EXPORT int64_t qaccel_state_cycles(const qaccel_state *q) {
  return q->checked ? q->checked_cycles : q->ready ? q->cycles : -1;
}
EXPORT uint64_t qaccel_state_runs(const qaccel_state *q) { return q->runs; }
EXPORT const char *qaccel_state_error(const qaccel_state *q) { return q->error; }

static int execute_layer(qaccel_state *q, uint32_t k, char *e) {
  vta_run r;
  memset(&r, 0, sizeof r);
  r.dram = q->dram;
  r.dram_len = (int64_t)q->program->p.dram_bytes;
  int rc = vta_execute(q->layers[k], q->scratch, &r);
  return rc != VTA_OK ? layer_error(k, rc, &r, e) : 0;
}

/* A tensor of a run against the program's: data, type, shape and bytes. */
static int tensor_ok(const qaccel_tensor *t, const Io *io, const char *what, size_t k, char *e) {
  uint64_t bytes = io->plain_count * io->elem;
  if (!t->data) return fail(e, "QACCEL_VTA: %s %zu has no data", what, k);
  if (t->type != io->type)
    return fail(e, "QACCEL_VTA: %s %zu has element type %d, the program's has type %d", what, k, t->type, io->type);
  int same = t->rank == (int32_t)io->rank;
  for (uint32_t d = 0; same && d < io->rank; d++) same = t->dims[d] == io->plain[d];
  if (!same) {
    char want[128] = "", got[128] = "";
    size_t w = 0, g = 0;
    for (uint32_t d = 0; d < io->rank && w < 100; d++)
      w += (size_t)snprintf(want + w, sizeof want - w, d ? "x%lld" : "%lld", (long long)io->plain[d]);
    for (int32_t d = 0; d < t->rank && d < MAX_RANK && g < 100; d++)
      g += (size_t)snprintf(got + g, sizeof got - g, d ? "x%lld" : "%lld", (long long)t->dims[d]);
    return fail(e, "QACCEL_VTA: %s %zu has shape [%s], the program's is [%s]", what, k, got, want);
  }
  if (t->bytes != bytes)
    return fail(e, "QACCEL_VTA: %s %zu has %zu bytes, the program %s %llu", what, k, t->bytes,
                what[0] == 'i' ? "expects" : "produces", (unsigned long long)bytes);
  return 0;
}

EXPORT int qaccel_state_run(qaccel_state *q, size_t n_in, const qaccel_tensor *inputs, size_t n_out,
                            const qaccel_tensor *outputs) {
  const qaccel_program *g = q->program;
  const Program *p = &g->p;
  Value *values = q->values;
  char *e = q->error;
  e[0] = 0;
  q->runs++;
  if (n_in != p->n_in || n_out != p->n_out)
    return fail(e, "QACCEL_VTA: %zu inputs and %zu outputs, the program takes %u and %u", n_in, n_out,
                p->n_in, p->n_out);
  for (size_t k = 0; k < n_in; k++)
    if (tensor_ok(&inputs[k], &g->io[k], "input", k, e)) return 1;
  for (size_t k = 0; k < n_out; k++)
    if (tensor_ok(&outputs[k], &g->io[p->n_in + k], "output", k, e)) return 1;
  if (!q->checked && !q->ready && prepare_layers(q, e)) return 1;
  for (uint32_t v = 0; v < p->n_values; v++) /* as fresh as the first run's (inputs: all packed) */
    if (!g->is_input[v]) memset(values[v].data, 0, values[v].count * values[v].elem);
  for (uint32_t k = 0; k < p->n_in; k++)
    repack_runs(&g->runs[k], (uint8_t *)inputs[k].data, values[g->io[k].value].data, 1);
  if (q->checked) q->checked_cycles = 0;
  /* every run starts from the image; past dirty_end no run writes */
  memcpy(q->dram, p->base + p->dram_at, q->checked ? p->dram_bytes : q->dirty_end);
  if (walk_steps(p, values, q, e)) return 1;
  for (uint32_t k = 0; k < p->n_out; k++)
    repack_runs(&g->runs[p->n_in + k], (uint8_t *)outputs[k].data, values[g->io[p->n_in + k].value].data, 0);
  return 0;
}
