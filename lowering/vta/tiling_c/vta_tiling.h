/* The tiling arithmetic of lowering/vta/geometry.py that both C libraries of the VTA lowering
 * need: libqaccel_search (search_c/vta_search.c) and libqaccel_stream's GEMM emitter
 * (stream/vta_gemm.c) include this header, so the schedule the search picks and the stream
 * the emitter writes for it rest on the same definitions. C99, static inline functions only:
 * each library compiles its own copy, and targets/cbuild.py lists this header among both
 * libraries' files, so a change to it rebuilds both. */
#ifndef VTA_TILING_H
#define VTA_TILING_H

#include <stdint.h>

/* Python's -(-a // b) (geometry._cdiv), b > 0: rounds up for a of either sign. */
static inline int64_t cdiv(int64_t a, int64_t b) {
    int64_t q = a / b;
    return (a % b != 0 && a > 0) ? q + 1 : q;
}

static inline int64_t min64(int64_t a, int64_t b) { return a < b ? a : b; }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

/* geometry._smallest_factor: the smallest divisor >= 2 of n, 0 for n <= 1. */
static inline int64_t smallest_factor(int64_t n) {
    for (int64_t d = 2; d * d <= n; d++)
        if (n % d == 0)
            return d;
    return n > 1 ? n : 0;
}

/* geometry.pixel_block: 1 with (uy, ux) in *uy, *ux; 0 (and both 0) for None. */
static inline int pixel_block(int64_t nco, int64_t red, int64_t th, int64_t tw, int64_t *uy,
                              int64_t *ux) {
    if (nco >= 2 || red == 1) {
        *uy = *ux = 1;
        return 1;
    }
    int64_t dx = smallest_factor(tw), dy = smallest_factor(th);
    if (dx && (!dy || dx <= dy)) {
        *uy = 1, *ux = dx;
        return 1;
    }
    if (dy) {
        *uy = dy, *ux = 1;
        return 1;
    }
    *uy = *ux = 0;
    return 0;
}

/* geometry.real_span: of the `count` positions start, start + step, ... (step > 0), the
 * padding before [0, size) in *pad and the number inside it in *real. */
static inline void real_span(int64_t start, int64_t count, int64_t step, int64_t size,
                             int64_t *pad, int64_t *real) {
    int64_t first = start >= 0 ? 0 : min64(count, cdiv(-start, step));
    int64_t last = size - 1 >= start ? (size - 1 - start) / step : -1;
    last = min64(last, count - 1);
    *pad = first;
    *real = max64(0, last - first + 1);
}

#endif
