/* A seeded mutation fuzzer for the program runner (backends/vta/program/qaccel_program.h),
 * built with AddressSanitizer and UBSan by fuzz/program_fuzz.py (no libFuzzer needed).
 *
 *     program_fuzz SEED ITERATIONS PROGRAM...
 *
 * Every iteration takes one of the seed programs and changes 1 to 4 things in it, aimed at what
 * a reader that checks only structure misses: the constants of the host steps (zero points,
 * clamps, scales as doubles, lane operands, shifts, pad values, shapes: extreme and boundary
 * values), every field of step, io and value records, the header, instruction words and
 * micro-ops (random bits), the DRAM image; then it makes the checksum right again (15 times in
 * 16, as a forger would; else the mutant must be refused by the checksum) and opens the
 * program, creates a state and runs it, on inputs of the program's types and shapes (one
 * iteration in 8 with a wrong shape or type). Anything but a one-line error or a run is a
 * finding: the sanitizers abort the process. Prints counts by outcome and executions/s. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "qaccel_program.h"

enum { HEADER = 192, VALUE = 16, IO = 184, STEP = 96, LAYER = 32 };

static uint64_t rng_state;
static uint64_t next(void) { /* splitmix64 */
  uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}
static uint64_t below(uint64_t n) { return n ? next() % n : 0; }

static uint64_t rd64(const uint8_t *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static uint32_t rd32(const uint8_t *p) { uint32_t v; memcpy(&v, p, 4); return v; }

static int64_t interesting(void) {
  static const int64_t values[] = {0, 1, -1, 2, 7, 8, 31, 32, 61, 62, 63, 64, 127, 128, -128, -129,
                                   255, 256, 65535, 1 << 24, (1 << 24) + 1, 2147483647LL,
                                   2147483648LL, -2147483647LL - 1, -2147483649LL,
                                   4294967295LL, 4294967296LL, INT64_MAX, INT64_MIN,
                                   INT64_MAX - 1, INT64_MIN + 1, 1LL << 40, -(1LL << 40)};
  if (below(4) == 0) return (int64_t)next();
  int64_t v = values[below(sizeof values / sizeof values[0])];
  return below(4) == 0 ? (int64_t)((uint64_t)v + below(3) - 1) : v;
}

static double interesting_double(void) {
  static const double values[] = {0.0, -0.0, 1.0, -1.0, 0.5, 1e-300, 1e300, 2147483648.0,
                                  4294967296.0, 1e18, -1e18, 3.0e38};
  uint64_t k = below(16);
  if (k == 0) { uint64_t bits = 0x7FF0000000000000ull; double d; memcpy(&d, &bits, 8); return d; }  /* inf */
  if (k == 1) { uint64_t bits = 0x7FF8000000000001ull; double d; memcpy(&d, &bits, 8); return d; }  /* NaN */
  if (k == 2) { uint64_t bits = next(); double d; memcpy(&d, &bits, 8); return d; }
  return values[below(sizeof values / sizeof values[0])] * (below(2) ? 1.0 : -1.0);
}

/* `at` .. `at` + `len` lies inside the n bytes (no wrap-around) */
static int inside(uint64_t at, uint64_t len, size_t n) { return at <= n && len <= n - at; }
static void put64(uint8_t *b, size_t n, uint64_t at, int64_t v) { if (inside(at, 8, n)) memcpy(b + at, &v, 8); }
static void put32(uint8_t *b, size_t n, uint64_t at, int32_t v) { if (inside(at, 4, n)) memcpy(b + at, &v, 4); }

/* One change to the program `b` of `n` bytes (its tables read from its own header). */
static void mutate(uint8_t *b, size_t n) {
  uint64_t values_at = rd64(b + 152), io_at = rd64(b + 160), steps_at = rd64(b + 168),
           layers_at = rd64(b + 176), dram_at = rd64(b + 56), dram_bytes = rd64(b + 48);
  uint32_t n_in = rd32(b + 24), n_out = rd32(b + 28), n_values = rd32(b + 32), n_steps = rd32(b + 36),
           n_layers = rd32(b + 40);
  switch (below(10)) {
  case 0: /* a header field */
    if (below(2)) put64(b, n, 8 * below(HEADER / 8), interesting());
    else put32(b, n, 4 * below(HEADER / 4), (int32_t)interesting());
    break;
  case 1: case 2: { /* a step's kind, operands or constants p[0..7] */
    if (!n_steps) break;
    uint64_t s = steps_at + STEP * below(n_steps);
    uint64_t field = below(12);
    if (field < 4) put32(b, n, s + 4 * field, (int32_t)(below(3) ? below(12) : (uint64_t)interesting()));
    else put64(b, n, s + 16 + 8 * (field - 4), interesting());
    break;
  }
  case 3: case 4: { /* the data a host step reads: shapes, lane operands, scales, chunks */
    if (!n_steps) break;
    uint64_t s = steps_at + STEP * below(n_steps);
    if (!inside(s, STEP, n)) break;
    uint64_t at = rd64(b + s + 80), nbytes = rd64(b + s + 88);
    if (nbytes < 8 || !inside(at, nbytes, n)) break;
    uint64_t where = at + 8 * below(nbytes / 8);
    if (rd32(b + s) == 4) { double d = interesting_double(); memcpy(b + where, &d, 8); } /* REQUANT scales */
    else put64(b, n, where, interesting());
    if (below(4) == 0) put64(b, n, s + 88, (int64_t)(nbytes + 8 * below(3) - 8)); /* its size */
    break;
  }
  case 5: { /* an io record: value, rank, pad, element size, shapes, order, type */
    uint32_t k = n_in + n_out;
    if (!k) break;
    uint64_t r = io_at + IO * below(k);
    put32(b, n, r + 4 * below(IO / 4), (int32_t)(below(2) ? (int64_t)below(20) - 2 : interesting()));
    break;
  }
  case 6: { /* a value record */
    if (!n_values) break;
    uint64_t r = values_at + VALUE * below(n_values);
    if (!inside(r, VALUE, n)) break;
    if (below(2)) put32(b, n, r, (int32_t)below(6));
    else put64(b, n, r + 8, below(2) ? interesting() : (int64_t)(rd64(b + r + 8) + below(5) - 2));
    break;
  }
  case 7: case 8: { /* instruction words and micro-ops of a layer: random bits */
    if (!n_layers) break;
    uint64_t l = layers_at + LAYER * below(n_layers);
    if (!inside(l, LAYER, n)) break;
    uint64_t w_at = rd64(b + l), nw = rd64(b + l + 8), u_at = rd64(b + l + 16), nu = rd64(b + l + 24);
    if (below(3) && nw && nw < n && inside(w_at, 16 * nw, n)) {
      uint64_t at = w_at + 8 * below(2 * nw);
      uint64_t w = rd64(b + at);
      for (uint64_t k = 1 + below(3); k; k--) w ^= 1ull << below(64);
      memcpy(b + at, &w, 8);
    } else if (nu && nu < n && inside(u_at, 4 * nu, n)) {
      uint64_t at = u_at + 4 * below(nu);
      uint32_t u = rd32(b + at) ^ (1u << below(32));
      memcpy(b + at, &u, 4);
    }
    break;
  }
  default: /* the DRAM image (constants) */
    if (dram_bytes && inside(dram_at, dram_bytes, n)) b[dram_at + below(dram_bytes)] = (uint8_t)next();
    break;
  }
}

typedef struct { uint8_t *data; size_t size; } Blob;

static int read_file(const char *path, Blob *out) {
  FILE *f = fopen(path, "rb");
  if (!f) return 1;
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  out->data = (uint8_t *)malloc(size > 0 ? (size_t)size : 1);
  out->size = size > 0 ? (size_t)size : 0;
  int bad = !out->data || fread(out->data, 1, out->size, f) != out->size;
  fclose(f);
  return bad;
}

typedef struct { char text[64]; long count; } Outcome;
static Outcome outcomes[256];
static int n_outcomes;

static void count(const char *error) {
  char key[64];
  const char *cut = strstr(error, " (");
  size_t len = cut ? (size_t)(cut - error) : strlen(error);
  for (size_t k = 0; k < len && k < sizeof key - 1; k++) key[k] = (error[k] >= '0' && error[k] <= '9') ? '#' : error[k];
  key[len < sizeof key - 1 ? len : sizeof key - 1] = 0;
  for (int k = 0; k < n_outcomes; k++)
    if (!strcmp(outcomes[k].text, key)) { outcomes[k].count++; return; }
  if (n_outcomes < 256) { snprintf(outcomes[n_outcomes].text, 64, "%s", key); outcomes[n_outcomes++].count = 1; }
}

int main(int argc, char **argv) {
  if (argc < 4) { fprintf(stderr, "usage: %s SEED ITERATIONS PROGRAM...\n", argv[0]); return 2; }
  rng_state = strtoull(argv[1], NULL, 10);
  long iterations = strtol(argv[2], NULL, 10);
  int n_seeds = argc - 3;
  Blob *seeds = (Blob *)calloc((size_t)n_seeds, sizeof(Blob));
  size_t largest = 0;
  for (int k = 0; k < n_seeds; k++) {
    if (read_file(argv[3 + k], &seeds[k]) || seeds[k].size < HEADER) {
      fprintf(stderr, "program_fuzz: error: cannot read a program from %s\n", argv[3 + k]);
      return 2;
    }
    if (seeds[k].size > largest) largest = seeds[k].size;
  }
  uint64_t *storage = (uint64_t *)malloc(largest + 8); /* 8-byte aligned */
  uint8_t *b = (uint8_t *)storage;
  char error[QACCEL_ERROR_BYTES];
  uint8_t *io_data[2 * 64] = {0};
  size_t io_size[2 * 64] = {0};
  long opened = 0, ran = 0;
  clock_t start = clock();
  for (long it = 0; it < iterations; it++) {
    const Blob *seed = &seeds[below((uint64_t)n_seeds)];
    memcpy(b, seed->data, seed->size);
    for (uint64_t m = 1 + below(4); m; m--) mutate(b, seed->size);
    if (below(16)) { /* the checksum made right again */
      uint64_t total = rd64(b + 16) <= seed->size ? rd64(b + 16) : seed->size;
      uint64_t crc = qaccel_program_checksum(b, (size_t)total);
      memcpy(b + QACCEL_CHECKSUM_AT, &crc, 8);
    }
    qaccel_program *program = NULL;
    if (qaccel_program_open(b, seed->size, &program, error)) { count(error); continue; }
    opened++;
    qaccel_state *state = NULL;
    if (qaccel_state_new(program, &state, error)) { count(error); qaccel_program_close(program); continue; }
    uint32_t n_in = qaccel_program_inputs(program), n_out = qaccel_program_outputs(program);
    qaccel_tensor tensors[2 * 64];
    int ok = n_in <= 64 && n_out <= 64;
    int wrong = below(8) == 0 ? (int)below(n_in + n_out ? n_in + n_out : 1) : -1;
    for (uint32_t k = 0; ok && k < n_in + n_out; k++) {
      qaccel_tensor *t = &tensors[k];
      memset(t, 0, sizeof *t);
      qaccel_program_tensor(program, k >= n_in, k < n_in ? k : k - n_in, &t->type, &t->rank, t->dims);
      size_t bytes = t->type == QACCEL_TYPE_INT32 ? 4 : 1;
      for (int32_t d = 0; d < t->rank; d++) bytes *= (size_t)t->dims[d];
      if ((int)k == wrong) {
        if (below(2)) t->dims[below((uint64_t)t->rank)] += 1;
        else t->type = t->type == QACCEL_TYPE_INT8 ? QACCEL_TYPE_UINT8 : QACCEL_TYPE_INT8;
      }
      if (io_size[k] < bytes) {
        free(io_data[k]);
        io_data[k] = (uint8_t *)malloc(bytes);
        io_size[k] = io_data[k] ? bytes : 0;
        if (!io_data[k]) { ok = 0; break; }
      }
      for (size_t i = 0; i < bytes; i++) io_data[k][i] = (uint8_t)next();
      t->data = io_data[k];
      t->bytes = bytes;
    }
    if (!ok) count("too many tensors");
    else if (qaccel_state_run(state, n_in, tensors, n_out, tensors + n_in)) count(qaccel_state_error(state));
    else { ran++; count("ran"); }
    qaccel_state_free(state);
    qaccel_program_close(program);
  }
  double seconds = (double)(clock() - start) / CLOCKS_PER_SEC;
  for (int k = 0; k < n_outcomes; k++) printf("%ld %s\n", outcomes[k].count, outcomes[k].text);
  printf("executions %ld opened %ld ran %ld seconds %.1f per_second %.0f\n", iterations, opened, ran, seconds,
         seconds > 0 ? (double)iterations / seconds : 0.0);
  for (int k = 0; k < 2 * 64; k++) free(io_data[k]);
  for (int k = 0; k < n_seeds; k++) free(seeds[k].data);
  free(seeds);
  free(storage);
  return 0;
}
