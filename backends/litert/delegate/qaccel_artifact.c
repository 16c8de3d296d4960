/* See qaccel_artifact.h. */
#define _POSIX_C_SOURCE 200809L
#include "qaccel_artifact.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int delegate_fail(char *err, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, ERR_BYTES, fmt, ap);
  va_end(ap);
  return 1;
}

#define fail delegate_fail

/* ---- JSON -------------------------------------------------------------------------------- */

typedef struct {
  const char *s, *end;
  char *err;
  int depth;
} Parser;

static void skip_space(Parser *p) {
  while (p->s < p->end && (*p->s == ' ' || *p->s == '\t' || *p->s == '\n' || *p->s == '\r')) p->s++;
}

static int at_error(Parser *p, const char *what) {
  return fail(p->err, "invalid JSON: %s", what);
}

static int hex4(const char *s, unsigned *out) {
  unsigned v = 0;
  for (int k = 0; k < 4; k++) {
    char c = s[k];
    v <<= 4;
    if (c >= '0' && c <= '9') v |= (unsigned)(c - '0');
    else if (c >= 'a' && c <= 'f') v |= (unsigned)(c - 'a' + 10);
    else if (c >= 'A' && c <= 'F') v |= (unsigned)(c - 'A' + 10);
    else return 1;
  }
  *out = v;
  return 0;
}

static size_t put_utf8(char *o, unsigned cp) {
  if (cp < 0x80) { o[0] = (char)cp; return 1; }
  if (cp < 0x800) { o[0] = (char)(0xC0 | (cp >> 6)); o[1] = (char)(0x80 | (cp & 63)); return 2; }
  if (cp < 0x10000) {
    o[0] = (char)(0xE0 | (cp >> 12)); o[1] = (char)(0x80 | ((cp >> 6) & 63));
    o[2] = (char)(0x80 | (cp & 63));
    return 3;
  }
  o[0] = (char)(0xF0 | (cp >> 18)); o[1] = (char)(0x80 | ((cp >> 12) & 63));
  o[2] = (char)(0x80 | ((cp >> 6) & 63)); o[3] = (char)(0x80 | (cp & 63));
  return 4;
}

static int parse_string(Parser *p, char **out) {
  const char *s = ++p->s; /* after the quote */
  size_t n = 0;
  while (s < p->end && *s != '"') {
    if (*s == '\\') s++;
    if (s < p->end) s++;
    n++;
  }
  if (s >= p->end) return at_error(p, "unterminated string");
  char *o = malloc(4 * n + 1); /* an escape yields at most 4 bytes */
  if (!o) return fail(p->err, "out of memory");
  size_t k = 0;
  while (*p->s != '"') {
    unsigned char c = (unsigned char)*p->s++;
    if (c < 0x20) { free(o); return at_error(p, "control character in a string"); }
    if (c != '\\') { o[k++] = (char)c; continue; }
    char e = *p->s++;
    switch (e) {
      case '"': o[k++] = '"'; break;
      case '\\': o[k++] = '\\'; break;
      case '/': o[k++] = '/'; break;
      case 'b': o[k++] = '\b'; break;
      case 'f': o[k++] = '\f'; break;
      case 'n': o[k++] = '\n'; break;
      case 'r': o[k++] = '\r'; break;
      case 't': o[k++] = '\t'; break;
      case 'u': {
        unsigned cp, lo;
        if (p->end - p->s < 4 || hex4(p->s, &cp)) { free(o); return at_error(p, "bad \\u escape"); }
        p->s += 4;
        if (cp >= 0xD800 && cp < 0xDC00) {
          if (p->end - p->s < 6 || p->s[0] != '\\' || p->s[1] != 'u' || hex4(p->s + 2, &lo) ||
              lo < 0xDC00 || lo >= 0xE000) {
            free(o);
            return at_error(p, "unpaired surrogate");
          }
          p->s += 6;
          cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        } else if (cp >= 0xDC00 && cp < 0xE000) {
          free(o);
          return at_error(p, "unpaired surrogate");
        }
        if (cp == 0) { free(o); return at_error(p, "NUL in a string"); }
        k += put_utf8(o + k, cp);
        break;
      }
      default: free(o); return at_error(p, "bad escape");
    }
  }
  p->s++;
  o[k] = 0;
  *out = o;
  return 0;
}

static int parse_value(Parser *p, json *v);

static int grow(json **items, char ***keys, size_t n, size_t *cap) {
  if (n < *cap) return 0;
  size_t c = *cap ? 2 * *cap : 8;
  json *it = realloc(*items, c * sizeof **items);
  if (!it) return 1;
  *items = it;
  if (keys) {
    char **k = realloc(*keys, c * sizeof **keys);
    if (!k) return 1;
    *keys = k;
  }
  *cap = c;
  return 0;
}

static int parse_container(Parser *p, json *v, int object) {
  char close = object ? '}' : ']';
  size_t cap = 0;
  v->kind = object ? JSON_OBJECT : JSON_ARRAY;
  if (++p->depth > 64) return at_error(p, "nested deeper than 64");
  p->s++;
  skip_space(p);
  if (p->s < p->end && *p->s == close) { p->s++; p->depth--; return 0; }
  for (;;) {
    if (grow(&v->items, object ? &v->keys : NULL, v->n, &cap)) return fail(p->err, "out of memory");
    if (object) {
      skip_space(p);
      if (p->s >= p->end || *p->s != '"') return at_error(p, "expected a key");
      if (parse_string(p, &v->keys[v->n])) return 1;
      skip_space(p);
      if (p->s >= p->end || *p->s != ':') { free(v->keys[v->n]); return at_error(p, "expected ':'"); }
      p->s++;
    }
    memset(&v->items[v->n], 0, sizeof(json));
    if (parse_value(p, &v->items[v->n])) { v->n++; return 1; }
    v->n++;
    skip_space(p);
    if (p->s < p->end && *p->s == ',') { p->s++; continue; }
    if (p->s < p->end && *p->s == close) { p->s++; p->depth--; return 0; }
    return at_error(p, object ? "expected ',' or '}'" : "expected ',' or ']'");
  }
}

static int literal(Parser *p, const char *word) {
  size_t n = strlen(word);
  if ((size_t)(p->end - p->s) < n || memcmp(p->s, word, n) != 0) return at_error(p, "unexpected character");
  p->s += n;
  return 0;
}

static int parse_value(Parser *p, json *v) {
  skip_space(p);
  if (p->s >= p->end) return at_error(p, "unexpected end");
  char c = *p->s;
  if (c == '{' || c == '[') return parse_container(p, v, c == '{');
  if (c == '"') { v->kind = JSON_STRING; return parse_string(p, &v->string); }
  if (c == 't') { v->kind = JSON_BOOL; v->number = 1; return literal(p, "true"); }
  if (c == 'f') { v->kind = JSON_BOOL; return literal(p, "false"); }
  if (c == 'n') { v->kind = JSON_NULL; return literal(p, "null"); }
  if (c == '-' || (c >= '0' && c <= '9')) {
    char buf[64];
    size_t n = 0;
    while (p->s + n < p->end && n < sizeof buf - 1 && strchr("+-.eE0123456789", p->s[n])) n++;
    memcpy(buf, p->s, n);
    buf[n] = 0;
    char *stop;
    v->kind = JSON_NUMBER;
    v->number = strtod(buf, &stop);
    if (stop != buf + n) return at_error(p, "bad number");
    p->s += n;
    return 0;
  }
  return at_error(p, "unexpected character");
}

void json_free(json *v) {
  if (!v) return;
  free(v->string);
  for (size_t k = 0; k < v->n; k++) {
    json_free(&v->items[k]);
    if (v->keys) free(v->keys[k]);
  }
  free(v->items);
  free(v->keys);
  memset(v, 0, sizeof *v);
}

int json_parse(const char *text, size_t size, json *out, char *err) {
  Parser p = {text, text + size, err, 0};
  memset(out, 0, sizeof *out);
  if (parse_value(&p, out)) { json_free(out); return 1; }
  skip_space(&p);
  if (p.s != p.end) { json_free(out); return at_error(&p, "trailing data"); }
  return 0;
}

const json *json_get(const json *v, const char *key) {
  if (!v || v->kind != JSON_OBJECT) return NULL;
  for (size_t k = 0; k < v->n; k++)
    if (strcmp(v->keys[k], key) == 0) return &v->items[k];
  return NULL;
}

int json_int(const json *v, int64_t lo, int64_t hi, int64_t *out) {
  if (!v || v->kind != JSON_NUMBER || !(v->number >= (double)lo && v->number <= (double)hi)) return 1;
  int64_t i = (int64_t)v->number;
  if ((double)i != v->number) return 1;
  *out = i;
  return 0;
}

/* ---- SHA-256 (FIPS 180-4) ---------------------------------------------------------------- */

static const uint32_t K256[64] = {
  0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
  0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
  0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
  0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
  0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
  0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
  0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
  0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void sha256_block(uint32_t h[8], const uint8_t *b) {
  uint32_t w[64];
  for (int t = 0; t < 16; t++)
    w[t] = (uint32_t)b[4 * t] << 24 | (uint32_t)b[4 * t + 1] << 16 | (uint32_t)b[4 * t + 2] << 8 | b[4 * t + 3];
  for (int t = 16; t < 64; t++) {
    uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
    uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);
    w[t] = w[t - 16] + s0 + w[t - 7] + s1;
  }
  uint32_t a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
  for (int t = 0; t < 64; t++) {
    uint32_t t1 = hh + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K256[t] + w[t];
    uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
    hh = g; g = f; f = e; e = d + t1; d = c; c = bb; bb = a; a = t1 + t2;
  }
  h[0] += a; h[1] += bb; h[2] += c; h[3] += d; h[4] += e; h[5] += f; h[6] += g; h[7] += hh;
}

void sha256_hex(const uint8_t *data, size_t size, char out[65]) {
  uint32_t h[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  size_t full = size / 64;
  for (size_t k = 0; k < full; k++) sha256_block(h, data + 64 * k);
  uint8_t tail[128] = {0};
  size_t rest = size - 64 * full;
  if (rest) memcpy(tail, data + 64 * full, rest);
  tail[rest] = 0x80;
  size_t blocks = rest + 9 <= 64 ? 1 : 2;
  uint64_t bits = (uint64_t)size * 8;
  for (int k = 0; k < 8; k++) tail[64 * blocks - 1 - k] = (uint8_t)(bits >> (8 * k));
  for (size_t k = 0; k < blocks; k++) sha256_block(h, tail + 64 * k);
  static const char digits[] = "0123456789abcdef";
  for (int k = 0; k < 32; k++) {
    uint8_t byte = (uint8_t)(h[k / 4] >> (24 - 8 * (k % 4)));
    out[2 * k] = digits[byte >> 4];
    out[2 * k + 1] = digits[byte & 15];
  }
  out[64] = 0;
}

/* ---- confined reads ---------------------------------------------------------------------- */

int read_confined(const char *root, const char *rel, uint64_t limit, uint8_t **data, size_t *size,
                  char *err) {
  size_t nroot = strlen(root), nrel = strlen(rel);
  if (!nrel || strchr(rel, '\\'))
    return fail(err, "'%s': the artifact names '%s', which is not a file name inside it", root, rel);
  if (rel[0] == '/') return fail(err, "'%s': the artifact names '%s', a path outside the artifact", root, rel);
  char *path = malloc(nroot + nrel + 2);
  if (!path) return fail(err, "out of memory");
  memcpy(path, root, nroot);
  path[nroot] = '/';
  size_t at = nroot + 1;
  const char *part = rel;
  struct stat st;
  for (;;) {
    const char *slash = strchr(part, '/');
    size_t n = slash ? (size_t)(slash - part) : strlen(part);
    if (n == 0 || (n == 1 && part[0] == '.') || (n == 2 && part[0] == '.' && part[1] == '.')) {
      free(path);
      return fail(err, "'%s': the artifact names '%s', a path outside the artifact", root, rel);
    }
    memcpy(path + at, part, n);
    at += n;
    path[at] = 0;
    if (lstat(path, &st) != 0) {
      free(path);
      return fail(err, "'%s': the artifact names '%s', which it does not hold", root, rel);
    }
    if (S_ISLNK(st.st_mode)) {
      free(path);
      return fail(err, "'%s': the artifact names '%s', which is a symbolic link", root, rel);
    }
    if (!slash) break;
    path[at++] = '/';
    part = slash + 1;
  }
  if (!S_ISREG(st.st_mode)) {
    free(path);
    return fail(err, "'%s': the artifact names '%s', which is not a regular file", root, rel);
  }
  int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK);
  if (fd < 0) {
    fail(err, "'%s': %s", path, strerror(errno));
    free(path);
    return 1;
  }
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    close(fd);
    free(path);
    return fail(err, "'%s': the artifact names '%s', which is not a regular file", root, rel);
  }
  if ((uint64_t)st.st_size > limit) {
    close(fd);
    fail(err, "'%s': %lld bytes, more than the limit of %llu bytes", path, (long long)st.st_size,
         (unsigned long long)limit);
    free(path);
    return 1;
  }
  size_t n = (size_t)st.st_size;
  uint8_t *buf = malloc(n ? n : 1);
  size_t got = 0;
  while (buf && got < n) {
    ssize_t r = read(fd, buf + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) break;
    got += (size_t)r;
  }
  close(fd);
  if (!buf || got != n) {
    free(buf);
    fail(err, "'%s': %s", path, buf ? "short read" : "out of memory");
    free(path);
    return 1;
  }
  free(path);
  *data = buf;
  *size = n;
  return 0;
}
