/* qaccel_pybridge: see qaccel_pybridge.h.  Every Python function used is looked up with dlsym,
 * so the library has no link-time dependency on libpython. */
#define _GNU_SOURCE /* RTLD_DEFAULT */
#include "qaccel_pybridge.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>
#include <wchar.h>

#ifndef QACCEL_PYTHON
#define QACCEL_PYTHON ""
#endif
#ifndef QACCEL_LIBPYTHON
#define QACCEL_LIBPYTHON ""
#endif

typedef struct PyObjectOpaque PyObject; /* only ever handled through pointers */
typedef ssize_t Py_ssize_t;
typedef int PyGILState_STATE;

static struct {
  int (*IsInitialized)(void);
  void (*InitializeEx)(int);
  void (*SetProgramName)(const wchar_t *);
  wchar_t *(*DecodeLocale)(const char *, size_t *);
  void *(*EvalSaveThread)(void);
  PyGILState_STATE (*GILStateEnsure)(void);
  void (*GILStateRelease)(PyGILState_STATE);
  PyObject *(*ImportModule)(const char *);
  PyObject *(*GetAttrString)(PyObject *, const char *);
  PyObject *(*BytesFromStringAndSize)(const char *, Py_ssize_t);
  int (*BytesAsStringAndSize)(PyObject *, char **, Py_ssize_t *);
  PyObject *(*UnicodeFromString)(const char *);
  const char *(*UnicodeAsUTF8)(PyObject *);
  PyObject *(*CallFunctionObjArgs)(PyObject *, ...);
  void (*ErrFetch)(PyObject **, PyObject **, PyObject **);
  void (*ErrNormalize)(PyObject **, PyObject **, PyObject **);
  void (*ErrClear)(void);
  PyObject *(*ObjectStr)(PyObject *);
  void (*DecRef)(PyObject *);
} py;

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;
static int g_state = -1; /* -1 not set up, 0 host interpreter, 1 embedded, 2 failed */
static char g_setup_error[512];

static void message(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  if (!err || !n) return;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
  for (char *c = err; *c; c++) /* one line */
    if (*c == '\n' || *c == '\r') {
      *c = '\0';
      break;
    }
}

static const char *setting(const char *env, const char *baked) {
  const char *v = getenv(env);
  return (v && *v) ? v : baked;
}

#define BIND(handle, field, name)                                                   \
  do {                                                                              \
    void *sym_ = dlsym((handle), (name));                                           \
    if (!sym_) {                                                                    \
      message(g_setup_error, sizeof g_setup_error, "Python symbol %s not found", name); \
      return -1;                                                                    \
    }                                                                               \
    memcpy(&py.field, &sym_, sizeof sym_);                                          \
  } while (0)

static int bind_all(void *h) {
  BIND(h, IsInitialized, "Py_IsInitialized");
  BIND(h, InitializeEx, "Py_InitializeEx");
  BIND(h, DecodeLocale, "Py_DecodeLocale");
  BIND(h, EvalSaveThread, "PyEval_SaveThread");
  BIND(h, GILStateEnsure, "PyGILState_Ensure");
  BIND(h, GILStateRelease, "PyGILState_Release");
  BIND(h, ImportModule, "PyImport_ImportModule");
  BIND(h, GetAttrString, "PyObject_GetAttrString");
  BIND(h, BytesFromStringAndSize, "PyBytes_FromStringAndSize");
  BIND(h, BytesAsStringAndSize, "PyBytes_AsStringAndSize");
  BIND(h, UnicodeFromString, "PyUnicode_FromString");
  BIND(h, UnicodeAsUTF8, "PyUnicode_AsUTF8");
  BIND(h, CallFunctionObjArgs, "PyObject_CallFunctionObjArgs");
  BIND(h, ErrFetch, "PyErr_Fetch");
  BIND(h, ErrNormalize, "PyErr_NormalizeException");
  BIND(h, ErrClear, "PyErr_Clear");
  BIND(h, ObjectStr, "PyObject_Str");
  BIND(h, DecRef, "Py_DecRef");
  { /* deprecated (3.11) and later removed: optional */
    void *sym = dlsym(h, "Py_SetProgramName");
    memcpy(&py.SetProgramName, &sym, sizeof sym);
  }
  return 0;
}

/* Find (or start) the interpreter; called with g_lock held. */
static int setup(void) {
  if (g_state == 0 || g_state == 1) return 0;
  if (g_state == 2) return -1;
  g_state = 2;
  if (dlsym(RTLD_DEFAULT, "Py_IsInitialized") && bind_all(RTLD_DEFAULT) == 0 &&
      py.IsInitialized()) {
    g_state = 0;
    return 0;
  }
  const char *lib = setting("QACCEL_LIBPYTHON", QACCEL_LIBPYTHON);
  const char *exe = setting("QACCEL_PYTHON", QACCEL_PYTHON);
  if (!*lib) {
    message(g_setup_error, sizeof g_setup_error,
            "no libpython to load (set QACCEL_LIBPYTHON to the shared libpython of the "
            "environment where qaccel is installed)");
    return -1;
  }
  void *h = dlopen(lib, RTLD_NOW | RTLD_GLOBAL);
  if (!h) {
    message(g_setup_error, sizeof g_setup_error, "cannot load %s: %s", lib, dlerror());
    return -1;
  }
  if (bind_all(h) != 0) return -1;
  if (!py.IsInitialized()) {
    if (*exe && py.SetProgramName) {
      wchar_t *name = py.DecodeLocale(exe, NULL); /* kept: Python keeps the pointer */
      if (name) py.SetProgramName(name);
    }
    py.InitializeEx(0);
    if (!py.IsInitialized()) {
      message(g_setup_error, sizeof g_setup_error, "Python (%s) did not start", lib);
      return -1;
    }
    py.EvalSaveThread(); /* other threads (and our later calls) take the GIL as they need */
  }
  g_state = 1;
  return 0;
}

int qaccel_pybridge_embedded(void) {
  int s;
  pthread_mutex_lock(&g_lock);
  s = g_state == 0 ? 0 : g_state == 1 ? 1 : -1;
  pthread_mutex_unlock(&g_lock);
  return s;
}

/* The pending exception as "Type: first line of its message". */
static void exception_line(char *err, size_t n) {
  PyObject *type = NULL, *value = NULL, *tb = NULL;
  py.ErrFetch(&type, &value, &tb);
  py.ErrNormalize(&type, &value, &tb);
  const char *tname = "Exception", *text = "";
  PyObject *name = type ? py.GetAttrString(type, "__name__") : NULL;
  PyObject *str = value ? py.ObjectStr(value) : NULL;
  if (name) tname = py.UnicodeAsUTF8(name);
  if (str) text = py.UnicodeAsUTF8(str);
  if (!tname || !text) py.ErrClear();
  message(err, n, "%s: %s", tname ? tname : "Exception", text ? text : "");
  if (name) py.DecRef(name);
  if (str) py.DecRef(str);
  if (type) py.DecRef(type);
  if (value) py.DecRef(value);
  if (tb) py.DecRef(tb);
}

int qaccel_pybridge_call(const char *module, const char *function, const void *data, size_t size,
                         const char *text, qaccel_pybytes *out, char *err, size_t err_size) {
  if (!out || !module || !function || (!data && size)) {
    message(err, err_size, "qaccel_pybridge_call: invalid arguments");
    return -1;
  }
  out->data = NULL;
  out->size = 0;
  pthread_mutex_lock(&g_lock);
  int ok = setup() == 0;
  pthread_mutex_unlock(&g_lock);
  if (!ok) {
    message(err, err_size, "%s", g_setup_error);
    return -1;
  }
  int rc = -1;
  PyGILState_STATE gil = py.GILStateEnsure();
  PyObject *mod = NULL, *fn = NULL, *arg = NULL, *txt = NULL, *res = NULL;
  char *buf = NULL;
  Py_ssize_t len = 0;
  if (!(mod = py.ImportModule(module)) || !(fn = py.GetAttrString(mod, function)) ||
      !(arg = py.BytesFromStringAndSize((const char *)data, (Py_ssize_t)size)) ||
      !(txt = py.UnicodeFromString(text ? text : "")) ||
      !(res = py.CallFunctionObjArgs(fn, arg, txt, (PyObject *)NULL)) ||
      py.BytesAsStringAndSize(res, &buf, &len) != 0) {
    exception_line(err, err_size);
  } else if (!(out->data = malloc(len > 0 ? (size_t)len : 1))) {
    message(err, err_size, "out of memory (%zd bytes from %s.%s)", len, module, function);
  } else {
    if (len > 0) memcpy(out->data, buf, (size_t)len);
    out->size = (size_t)len;
    rc = 0;
  }
  if (res) py.DecRef(res);
  if (txt) py.DecRef(txt);
  if (arg) py.DecRef(arg);
  if (fn) py.DecRef(fn);
  if (mod) py.DecRef(mod);
  py.GILStateRelease(gil);
  return rc;
}

/* ---- the description buffer ---------------------------------------------------------------- */

void qaccel_desc_put(qaccel_desc *b, const void *src, size_t n) {
  if (b->failed || n == 0) return;
  if (b->size + n > b->cap) {
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->size + n) cap *= 2;
    unsigned char *d = realloc(b->data, cap);
    if (!d) {
      b->failed = 1;
      return;
    }
    b->data = d;
    b->cap = cap;
  }
  memcpy(b->data + b->size, src, n);
  b->size += n;
}

void qaccel_desc_u32(qaccel_desc *b, uint32_t v) { qaccel_desc_put(b, &v, 4); }
void qaccel_desc_i32(qaccel_desc *b, int32_t v) { qaccel_desc_put(b, &v, 4); }
void qaccel_desc_i64(qaccel_desc *b, int64_t v) { qaccel_desc_put(b, &v, 8); }
void qaccel_desc_f64(qaccel_desc *b, double v) { qaccel_desc_put(b, &v, 8); }

void qaccel_desc_str(qaccel_desc *b, const char *s) {
  size_t n = s ? strlen(s) : 0;
  qaccel_desc_u32(b, (uint32_t)n);
  qaccel_desc_put(b, s, n);
}
