/* Reading a qaccel-compile artifact from C, as untrusted input (the delegate's mode with an
 * artifact directory): a small JSON reader, SHA-256, and file reads confined to the artifact
 * (the rules of backends/vta/artifact_files.py).  Every function that can fail writes one line
 * into `err` (ERR_BYTES) and returns nonzero. */
#ifndef QACCEL_ARTIFACT_H_
#define QACCEL_ARTIFACT_H_

#include <stddef.h>
#include <stdint.h>

enum { ERR_BYTES = 512 };

/* Writes the printf-formatted line into `err` (ERR_BYTES) and returns 1: `return
 * delegate_fail(err, ...)` in every function that can fail. */
int delegate_fail(char *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

typedef enum { JSON_NULL, JSON_BOOL, JSON_NUMBER, JSON_STRING, JSON_ARRAY, JSON_OBJECT } json_kind;

typedef struct json {
  json_kind kind;
  double number;       /* JSON_NUMBER, JSON_BOOL (0 or 1) */
  char *string;        /* JSON_STRING (NUL-terminated; NUL inside is refused) */
  size_t n;            /* JSON_ARRAY / JSON_OBJECT: number of items */
  struct json *items;  /* the items (an object's values) */
  char **keys;         /* JSON_OBJECT: the keys */
} json;

/* Parse `size` bytes of JSON into *out (freed with json_free); nesting at most 64 deep. */
int json_parse(const char *text, size_t size, json *out, char *err);
void json_free(json *v);
/* The member `key` of an object (NULL if absent or `v` is not an object). */
const json *json_get(const json *v, const char *key);
/* *out = an integral number in [lo, hi]; else 1. */
int json_int(const json *v, int64_t lo, int64_t hi, int64_t *out);

/* The SHA-256 of `data` as 64 lower-case hex digits and a NUL. */
void sha256_hex(const uint8_t *data, size_t size, char out[65]);

/* The bytes of file `rel` of the artifact at `root`, read only when `rel` is a relative path
 * of plain components, no component a symbolic link, the file a regular one of at most
 * `limit` bytes.  *data is malloc'd (free it). */
int read_confined(const char *root, const char *rel, uint64_t limit, uint8_t **data,
                  size_t *size, char *err);

#endif /* QACCEL_ARTIFACT_H_ */
