/* An LD_PRELOAD shim for running LiteRT's plugin loading under AddressSanitizer: LiteRT opens
 * compiler plugins with RTLD_DEEPBIND, which the sanitizer runtime refuses; this dlopen drops
 * that flag and calls the next dlopen (the sanitizer's).  Preload it before libasan, with
 * ASAN_OPTIONS=verify_asan_link_order=0. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <string.h>

void *dlopen(const char *file, int mode) {
  static void *(*next)(const char *, int);
  if (!next) {
    void *sym = dlsym(RTLD_NEXT, "dlopen");
    memcpy(&next, &sym, sizeof sym);
  }
  return next(file, mode & ~RTLD_DEEPBIND);
}
