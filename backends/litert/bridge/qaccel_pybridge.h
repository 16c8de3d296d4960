/* qaccel_pybridge: call one of qaccel's Python functions from a C library that LiteRT loads
 * (the compiler plugin, the classic delegate), without linking libpython.
 *
 * Inside a Python host (the `ai_edge_litert` wheel, a test) the interpreter is already running
 * in the process: its symbols are found with dlsym(RTLD_DEFAULT) and the call takes the GIL
 * with PyGILState_Ensure (the thread that calls LiteRT from Python holds it: the state is
 * recursive).  Inside a C host (a program linking only libLiteRt.so, apply_plugin_main) no
 * interpreter exists: the bridge loads libpython with RTLD_GLOBAL (its extension modules,
 * numpy's included, resolve their Python symbols globally), names the program after the
 * environment's python so that its site-packages (and qaccel) are importable, initializes it,
 * releases the GIL and never finalizes it (numpy cannot be initialized twice in one process).
 *
 * Which python and libpython: QACCEL_PYTHON and QACCEL_LIBPYTHON when set, else those of the
 * environment that built the library (baked in by setup.py).  Linking libpython instead would
 * start a second interpreter under a Python host whose interpreter is linked statically.
 *
 * The function called takes (bytes, str) and returns bytes; an exception becomes one line
 * ("<ExceptionType>: <message>", its first line) in `err`.  Not reentrant from Python code. */
#ifndef QACCEL_PYBRIDGE_H_
#define QACCEL_PYBRIDGE_H_

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
  unsigned char *data; /* malloc'd copy of the returned bytes (free with free()) */
  size_t size;
} qaccel_pybytes;

/* module.function(bytes(data[:size]), text) -> bytes, copied into *out.  Returns 0 on
 * success; otherwise -1 with a one-line message in err (err_size bytes, NUL-terminated). */
int qaccel_pybridge_call(const char *module, const char *function, const void *data, size_t size,
                         const char *text, qaccel_pybytes *out, char *err, size_t err_size);

/* 1 when the interpreter the bridge uses was started by the bridge (a C host), 0 when it is
 * the host's own, -1 before the first call. */
int qaccel_pybridge_embedded(void);

/* The bytes a plugin or a delegate hands over (compiler_plugin.read_description's format),
 * written into a growing buffer: fields little-endian as this host stores them, a string as
 * its u32 length and bytes. `failed` is set once an allocation failed (the rest is dropped);
 * free `data` with free(). */
typedef struct {
  unsigned char *data;
  size_t size, cap;
  int failed;
} qaccel_desc;

void qaccel_desc_put(qaccel_desc *b, const void *src, size_t n);
void qaccel_desc_u32(qaccel_desc *b, uint32_t v);
void qaccel_desc_i32(qaccel_desc *b, int32_t v);
void qaccel_desc_i64(qaccel_desc *b, int64_t v);
void qaccel_desc_f64(qaccel_desc *b, double v);
void qaccel_desc_str(qaccel_desc *b, const char *s);

#ifdef __cplusplus
}
#endif

#endif /* QACCEL_PYBRIDGE_H_ */
