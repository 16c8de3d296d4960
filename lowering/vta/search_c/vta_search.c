/* The schedule search of one VTA GEMM layer (lowering/vta/search.py's `_search`), in C.
 *
 * Enumerates the ranked candidate tilings (search.py's `_Ranked`: the same grid, order and
 * buffer slots as `planning.plan_buffers`), ranks them by the closed-form estimate
 * (`cost_model.quick_estimate`), tries the other bias modes on the best four, and walks the
 * best ones' loop nests with the step-level model (`planning.plan_steps` +
 * `cost_model.estimate`) until `model_steps` loop steps have been walked (three at least).
 * The Python code is the specification: the same integers, the same order, ties broken by
 * the candidate's index. What this file does not handle (a grid of more than 2^18 points,
 * no candidate that fits: the one-by-one and exhaustive enumerations, or a loop nest to walk
 * that needs more than VTA_SEARCH_WALK_BYTES) it reports with VTA_SEARCH_FALLBACK and the
 * Python search runs.
 *
 * Every input is validated; every array index is within its allocation. A walk that finds
 * its own state inconsistent ends the search with VTA_SEARCH_INTERNAL, never with a guess. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "vta_search.h"
#include "../tiling_c/vta_tiling.h"

#ifndef VTA_SEARCH_SOURCE_HASH
#define VTA_SEARCH_SOURCE_HASH "unknown"
#endif

#define MAX_PAD 15
#define MAX_STRIDE 0xFFFF
#define GRID_MAX (1 << 18)
#define SIDE_MAX 65536 /* the largest side, padding or frame sum the C search takes */

enum { MODE_ALU = 0, MODE_DMA = 1, MODE_GEMM = 2, MODE_STORE = 3, N_MODES = 4 };
enum { KIND_CONV = 0, KIND_DEPTHWISE = 1, KIND_DENSE = 2 };

const char *vta_search_source_hash(void) { return VTA_SEARCH_SOURCE_HASH; }

int vta_search_abi(void) { return VTA_SEARCH_ABI; }

typedef struct {
    int64_t kind, H, W, KH, KW, sh, sw, dh, dw, pad_t, pad_b, pad_l, pad_r, OH, OW, block, dm;
    int64_t CIB, COB, has_bias, small_bias, int32_output, runtime_init, has_zp;
    int64_t diagonal, dense, row_subsample, taps;
} geo_t;

typedef struct {
    int64_t I, setup, bw, gemm_c, alu_c, d_uop, d_inp, d_wgt, d_acc;
} cfg_t;

typedef struct {
    int64_t param_rows, tail_cycles, tail_insns, available;
} bmode_t;

typedef struct {
    int64_t th, tw, tco, tci, mode, order, inp_slots, wgt_slots, acc_slots, quick, steps;
} cand_t;

typedef struct {
    const geo_t *g;
    const cfg_t *c;
    const bmode_t *modes;
    int64_t *axis_y; /* [OH + 1][2]: (real, frame) sums per tile height; -1: not yet */
    int64_t *axis_x; /* [OW + 1][2] */
} ctx_t;

static int64_t fdiv(int64_t a, int64_t b) { /* Python's a // b, b > 0 */
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

static int64_t pixel_block_size(int64_t nco, int64_t red, int64_t th, int64_t tw) {
    int64_t uy, ux;
    return pixel_block(nco, red, th, tw, &uy, &ux) ? uy * ux : 1;
}

static void frame_shape(const geo_t *g, int64_t th, int64_t tw, int64_t *fr, int64_t *fc) {
    if (g->dense) {
        *fr = 1;
        *fc = tw;
        return;
    }
    *fr = g->row_subsample ? th : (th - 1) * g->sh + (g->KH - 1) * g->dh + 1;
    *fc = (tw - 1) * g->sw + (g->KW - 1) * g->dw + 1;
}

/* geometry.frame_rows: frame rows, DRAM row step, pad before, real rows. */
static void frame_rows(const geo_t *g, int64_t oy0, int64_t th, int64_t *fr, int64_t *ystep,
                       int64_t *pad, int64_t *real) {
    if (g->dense) {
        *fr = 1;
        *ystep = 1;
        *pad = 0;
        *real = 1;
        return;
    }
    int64_t fc;
    frame_shape(g, th, 1, fr, &fc);
    int64_t y0 = oy0 * g->sh - g->pad_t;
    *ystep = g->row_subsample ? g->sh : 1;
    real_span(y0, *fr, *ystep, g->H, pad, real);
}

/* geometry.frame_cols: frame columns, pad before, real columns. */
static void frame_cols(const geo_t *g, int64_t ox0, int64_t tw, int64_t *fc, int64_t *pad,
                       int64_t *real) {
    if (g->dense) {
        *fc = tw;
        *pad = 0;
        *real = tw;
        return;
    }
    int64_t fr;
    frame_shape(g, 1, tw, &fr, fc);
    real_span(ox0 * g->sw - g->pad_l, *fc, 1, g->W, pad, real);
}

/* cost_model._axis_sums: (real input positions, frame positions) over the tiles of an axis. */
static void axis_sums(ctx_t *x, int64_t tile, int rows, int64_t *real, int64_t *frame) {
    const geo_t *g = x->g;
    int64_t *memo = rows ? x->axis_y : x->axis_x;
    if (memo[2 * tile] >= 0) {
        *real = memo[2 * tile];
        *frame = memo[2 * tile + 1];
        return;
    }
    int64_t n_out = rows ? g->OH : g->OW, r = 0, f = 0;
    for (int64_t i = 0; i < cdiv(n_out, tile); i++) {
        int64_t size = min64(tile, n_out - i * tile), fr, step, pad, re;
        if (rows)
            frame_rows(g, i * tile, size, &fr, &step, &pad, &re);
        else
            frame_cols(g, i * tile, size, &fr, &pad, &re);
        r += re;
        f += fr;
    }
    memo[2 * tile] = *real = r;
    memo[2 * tile + 1] = *frame = f;
}

static int merged_frames(const geo_t *g, int64_t tw) {
    if (g->dense || (g->KH == 1 && (g->row_subsample || g->OH == 1)))
        return g->dense || g->H * g->W <= MAX_STRIDE;
    return g->KW == 1 && tw >= g->OW && g->pad_t == 0 && g->pad_b == 0 && !g->row_subsample &&
           g->H * g->W <= MAX_STRIDE;
}

/* geometry.max_kernel */
static int64_t max_kernel(const geo_t *g, int64_t th, int64_t tw, int64_t tco, int64_t tci) {
    int64_t hs[2] = {th, g->OH - (cdiv(g->OH, th) - 1) * th};
    int64_t ws[2] = {tw, g->OW - (cdiv(g->OW, tw) - 1) * tw};
    int64_t cos[2] = {tco, g->COB - (cdiv(g->COB, tco) - 1) * tco};
    int64_t cis[2] = {1, 1};
    if (!g->diagonal) {
        cis[0] = tci;
        cis[1] = g->CIB - (cdiv(g->CIB, tci) - 1) * tci;
    }
    int64_t best = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int c = 0; c < 2; c++)
                for (int d = 0; d < 2; d++) {
                    int64_t red = g->taps * cis[d], uy, ux, k;
                    if (pixel_block(cos[c], red, hs[a], ws[b], &uy, &ux))
                        k = red * cos[c] * uy * ux;
                    else
                        k = red;
                    best = max64(best, k);
                }
    return best;
}

static int64_t diag_nci(const geo_t *g, int64_t co0, int64_t nco) {
    int64_t first = co0 / g->dm;
    return (co0 + nco - 1) / g->dm - first + 1;
}

/* planning.plan_buffers: 1 and the slots when the tiling fits, else 0. `biggest`: the
   tiling's max_kernel, or -1 (computed here when needed; it depends on neither the bias
   mode nor the loop order, and the enumeration keeps it across them). */
static int plan_buffers(const ctx_t *x, int64_t th, int64_t tw, int64_t tco, int64_t tci,
                        int64_t order, int64_t mode, int64_t slots[3], int64_t *biggest) {
    const geo_t *g = x->g;
    const cfg_t *c = x->c;
    int64_t K = g->taps;
    th = min64(th, g->OH);
    tw = min64(tw, g->OW);
    tco = min64(tco, g->COB);
    int64_t nci;
    if (g->diagonal) {
        nci = diag_nci(g, 0, tco);
        if (g->dm > 1)
            for (int64_t i = 0; i < g->COB; i += tco) nci = max64(nci, diag_nci(g, i, tco));
    } else {
        nci = min64(tci, g->CIB);
    }
    int64_t fr, fc;
    frame_shape(g, th, tw, &fr, &fc);
    int64_t inp_rows = nci * fr * fc;
    int64_t per_co = g->diagonal ? 1 : nci;
    int64_t wgt_tiles = tco * per_co * K;
    int64_t red = K * per_co;
    int split = tco == 1 && th * tw == 1 && red > 1;
    int64_t acc_rows = tco * th * tw + (split ? 1 : 0);
    int64_t zp = (g->has_zp && mode != MODE_STORE) ? 1 : 0;
    int gemm_bias = g->has_bias && mode == MODE_GEMM;
    if (gemm_bias && !g->small_bias) return 0;
    int64_t inp_reserved = zp + (gemm_bias ? 1 : 0);
    int64_t wgt_reserved = zp + (gemm_bias ? g->COB : 0);
    int64_t inp_free = c->d_inp - inp_reserved;
    int64_t wgt_free = c->d_wgt - wgt_reserved;
    int64_t acc_free = c->d_acc - x->modes[mode].param_rows;
    if (inp_rows > inp_free || wgt_tiles > wgt_free || acc_rows > acc_free) return 0;
    if (*biggest < 0) *biggest = max_kernel(g, th, tw, tco, nci);
    if (*biggest > c->d_uop / 2) return 0;
    if (fr * fc * nci > c->d_inp || tco * per_co * K > c->d_wgt) return 0;
    int64_t Ty = cdiv(g->OH, th), Tx = cdiv(g->OW, tw), G = cdiv(g->COB, tco);
    int64_t R = g->diagonal ? 1 : cdiv(g->CIB, tci);
    int64_t n_inp_chunks = Ty * Tx * (g->diagonal ? G : R);
    int64_t n_wgt_chunks = G * R;
    int64_t inp_cap = fdiv(inp_free, inp_rows), wgt_cap = fdiv(wgt_free, wgt_tiles);
    int64_t acc_cap = fdiv(acc_free, acc_rows);
    int64_t inp_slots = n_inp_chunks <= inp_cap ? n_inp_chunks : min64(inp_cap, 2);
    int64_t wgt_slots = n_wgt_chunks <= wgt_cap ? n_wgt_chunks : min64(wgt_cap, 2);
    int64_t acc_slots = min64(min64(acc_cap, 2), Ty * Tx * G);
    if (!g->diagonal && order == 0 && R > 1 && inp_slots < n_inp_chunks && inp_cap >= R + 1)
        inp_slots = R + 1;
    slots[0] = inp_slots;
    slots[1] = wgt_slots;
    slots[2] = acc_slots;
    return 1;
}

/* cost_model.quick_estimate */
static int64_t quick_estimate(ctx_t *x, const cand_t *s) {
    const geo_t *g = x->g;
    const cfg_t *c = x->c;
    const bmode_t *m = &x->modes[s->mode];
    int64_t I = c->I, bw = c->bw, blk = g->block, K = g->taps;
    int64_t out_eb = g->int32_output ? 4 * blk : blk;
    int64_t OH = g->OH, OW = g->OW, COB = g->COB;
    int64_t rows = OH * OW * COB, out_bytes = rows * out_eb;
    int64_t gemm_tail = OH * OW * COB * (g->diagonal ? 1 : g->CIB) * K * c->gemm_c +
                        rows * m->tail_cycles;
    int dma_bias = (g->has_bias && s->mode == MODE_DMA) || g->runtime_init;
    int64_t param_bytes = m->param_rows * 4 * blk;
    int64_t ci_per_pass = g->diagonal ? (COB + g->dm - 1) / g->dm : g->CIB;
    int64_t th = s->th, tw = s->tw, tci = s->tci, tco = min64(s->tco, COB);
    int64_t G = cdiv(COB, s->tco), Ty = cdiv(OH, th), Tx = cdiv(OW, tw);
    int64_t R = g->diagonal ? 1 : cdiv(g->CIB, tci), T = Ty * Tx;
    int64_t sy, fy, sx, fx;
    axis_sums(x, th, 1, &sy, &fy);
    axis_sums(x, tw, 0, &sx, &fx);
    int64_t real_pass = sy * sx, frame_pass = fy * fx;
    int64_t chunk_ci = g->diagonal ? (tco - 1) / g->dm + 1 : min64(tci, g->CIB);
    int64_t inp_slots = s->inp_slots, wgt_slots = s->wgt_slots;
    int spatial = s->order == 0;
    int64_t inp_passes, inp_chunks, w_passes;
    if (g->diagonal) {
        inp_passes = 1;
        inp_chunks = T * G;
        w_passes = (!spatial || wgt_slots >= G) ? 1 : T;
    } else {
        if (spatial) {
            inp_passes = (R == 1 || inp_slots >= R + 1) ? 1 : G;
            w_passes = (G * R == 1 || wgt_slots >= G * R) ? 1 : T;
        } else {
            inp_passes = (T * R == 1 || inp_slots >= T * R) ? 1 : G;
            w_passes = (R == 1 || wgt_slots >= R + 1) ? 1 : T;
        }
        inp_chunks = T * R * inp_passes;
    }
    int64_t inp_bytes = inp_passes * real_pass * ci_per_pass * blk;
    int64_t pad_rows = inp_passes * (frame_pass - real_pass) * ci_per_pass;
    int merged = merged_frames(g, tw);
    int64_t inp_loads = inp_chunks * (merged ? 1 : max64(1, chunk_ci));
    int64_t wgt_bytes = w_passes * COB * (g->diagonal ? 1 : g->CIB) * K * blk * blk;
    int64_t wgt_loads = w_passes * G * R;
    int64_t IS = I + c->setup;
    int64_t inp_time = inp_loads * IS + cdiv(inp_bytes + pad_rows * blk, bw);
    int64_t wgt_time = wgt_loads * IS + cdiv(wgt_bytes, bw);
    int64_t load = inp_time + wgt_time;
    int64_t serial = ((inp_slots == 1 && inp_chunks > 1) ? inp_time : 0) +
                     ((wgt_slots == 1 && wgt_loads > 1) ? wgt_time : 0);
    int64_t tiles = T * G;
    int64_t n_store = (g->dense || tw >= OW) ? tiles : T * COB;
    int64_t store = n_store * IS + cdiv(out_bytes, bw);
    int64_t insns = T * G * R + tiles * m->tail_insns;
    int64_t compute_dma = 0;
    if (dma_bias) {
        compute_dma = tiles * (g->dense ? 1 : tco) * IS;
        compute_dma += cdiv(rows * 4 * blk, bw);
    }
    int64_t red = K * (g->diagonal ? 1 : min64(tci, g->CIB));
    int64_t th_ = min64(th, OH), tw_ = min64(tw, OW);
    int64_t kernel = red * tco * pixel_block_size(tco, red, th_, tw_);
    int64_t combos = min64(min64(T * G * R, inp_slots * s->acc_slots * wgt_slots), 8);
    int64_t uops = kernel * combos;
    if (uops > c->d_uop) {
        compute_dma += T * G * R * (IS + cdiv(kernel * 4, bw));
        uops = c->d_uop;
    }
    int64_t preamble = 2 * IS + cdiv(param_bytes + 4 * uops, bw);
    int64_t compute = gemm_tail + insns * I + compute_dma + preamble + serial;
    int64_t bus = cdiv(inp_bytes + wgt_bytes + out_bytes + param_bytes + 4 * uops, bw);
    if (dma_bias) bus += cdiv(rows * 4 * blk, bw);
    int64_t fr, fc;
    frame_shape(g, th_, tw_, &fr, &fc);
    int64_t first_w = tco * (g->diagonal ? 1 : min64(tci, g->CIB)) * K * blk * blk;
    int64_t first_loads = (merged ? 1 : chunk_ci) + 1;
    int64_t prologue =
        first_loads * IS + cdiv(chunk_ci * fr * fc * blk + first_w + param_bytes + 4 * uops, bw);
    int64_t last_rows = th_ * tw_ * tco;
    int64_t epilogue = IS * (tw >= OW ? 1 : tco) + cdiv(last_rows * out_eb, bw);
    int64_t steady = max64(max64(compute - preamble, load - first_loads * IS), max64(store, bus));
    return prologue + steady + epilogue;
}

static int64_t step_count(const geo_t *g, const cand_t *s) {
    return cdiv(g->OH, s->th) * cdiv(g->OW, s->tw) * cdiv(g->COB, s->tco) *
           (g->diagonal ? 1 : cdiv(g->CIB, s->tci));
}

/* ---- the step-level model (planning.plan_steps + cost_model.estimate) ---- */

typedef struct {
    int64_t tile, spatial, oy0, th, ox0, tw, co0, nco, ci0, nci;
    int first, last;
} step_t;

typedef struct { /* an OrderedDict chunk key -> slot, oldest first */
    int64_t *key;
    int64_t *slot;
    int64_t len, n_slots;
} lru_t;

static int64_t lru_find(const lru_t *l, int64_t key) {
    for (int64_t i = l->len - 1; i >= 0; i--)
        if (l->key[i] == key) return i;
    return -1;
}

static void lru_remove(lru_t *l, int64_t at) {
    memmove(l->key + at, l->key + at + 1, (size_t)(l->len - at - 1) * sizeof(int64_t));
    memmove(l->slot + at, l->slot + at + 1, (size_t)(l->len - at - 1) * sizeof(int64_t));
    l->len--;
}

static void lru_move_to_end(lru_t *l, int64_t at) {
    int64_t k = l->key[at], s = l->slot[at];
    lru_remove(l, at);
    l->key[l->len] = k;
    l->slot[l->len] = s;
    l->len++;
}

/* A new chunk's slot: the next one while any is free, else the oldest chunk's. */
static int64_t lru_claim(lru_t *l, int64_t key) {
    int64_t slot;
    if (l->len < l->n_slots) {
        slot = l->len;
    } else {
        slot = l->slot[0];
        lru_remove(l, 0);
    }
    l->key[l->len] = key;
    l->slot[l->len] = slot;
    l->len++;
    return slot;
}

typedef struct {
    int64_t target, j, slot, part;
} later_t;

typedef struct { /* the walk's state */
    int64_t l_end, load_busy, bus_bytes;
    int64_t *inp_ready, *wgt_ready, *inp_use, *wgt_use, *cend;
} walk_t;

static void do_load(const ctx_t *x, walk_t *w, const step_t *ch, int inp, int64_t slot,
                    int64_t part) {
    const geo_t *g = x->g;
    const cfg_t *c = x->c;
    int64_t blk = g->block, IS = c->I + c->setup, nbytes, ldur;
    if (inp) {
        int64_t fr, ystep, ypad, yreal, fc, xpad, xreal, n_loads;
        frame_rows(g, ch->oy0, ch->th, &fr, &ystep, &ypad, &yreal);
        frame_cols(g, ch->ox0, ch->tw, &fc, &xpad, &xreal);
        int64_t real = ch->nci * yreal * xreal;
        int64_t padded = ch->nci * (fr * fc - yreal * xreal);
        /* planning.frame_loads / frame_mode */
        if (g->dense) {
            n_loads = 1;
        } else if (yreal == 0 || xreal == 0) {
            n_loads = ch->nci; /* padding */
        } else if (g->H * g->W <= MAX_STRIDE &&
                   (fr == 1 || (yreal == fr && xreal == fc && fc == g->W && ystep == 1))) {
            n_loads = 1; /* row, contiguous */
        } else {
            n_loads = ch->nci * (1 + (ypad > MAX_PAD) + (fr - ypad - yreal > MAX_PAD));
        }
        nbytes = real * blk;
        ldur = n_loads * IS + cdiv(nbytes, c->bw) + cdiv(padded * blk, c->bw);
    } else {
        int64_t blocks = part < 0 ? ch->nco : 1;
        nbytes = blocks * (g->diagonal ? 1 : ch->nci) * g->taps * blk * blk;
        ldur = IS + cdiv(nbytes, c->bw);
    }
    w->bus_bytes += nbytes;
    int64_t wait = inp ? w->inp_use[slot] : w->wgt_use[slot];
    if (wait >= 0 && w->cend[wait] > w->l_end) w->l_end = w->cend[wait];
    w->l_end += ldur;
    w->load_busy += ldur;
    if (inp)
        w->inp_ready[slot] = w->l_end;
    else
        w->wgt_ready[slot] = w->l_end;
}

/* A set of kernel keys (th, tw, nco, nci, inp slot, wgt slot, acc slot): open addressing
   over `cap` (a power of two, more than twice the keys added) entries. */
typedef struct {
    int64_t *keys; /* [cap][7] */
    unsigned char *used;
    uint64_t mask;
} kset_t;

static uint64_t kset_hash(const int64_t *k) {
    uint64_t h = 1469598103934665603ULL;
    for (int i = 0; i < 7; i++) {
        h ^= (uint64_t)k[i];
        h *= 1099511628211ULL;
        h ^= h >> 29;
    }
    return h;
}

/* 1 when `k` was not in the set (it is now). */
static int kset_add(kset_t *s, const int64_t *k) {
    uint64_t i = kset_hash(k) & s->mask;
    while (s->used[i]) {
        if (memcmp(s->keys + 7 * i, k, 7 * sizeof(int64_t)) == 0) return 0;
        i = (i + 1) & s->mask;
    }
    s->used[i] = 1;
    memcpy(s->keys + 7 * i, k, 7 * sizeof(int64_t));
    return 1;
}

/* The bytes estimate() allocates to walk `n` loop steps of `n_tiles` tiles (the arrays
   below, in the same order); `limit` + 1 once that is more than `limit` (computed without
   overflow: a walk of more than `limit` / 8 steps is over it whatever its slots). */
static int64_t walk_bytes(int64_t n, int64_t n_tiles, int64_t tails, int64_t n_inp,
                          int64_t n_wgt, int64_t COB, int64_t limit) {
    if (n > limit / 8 || n_tiles > n || tails > limit || n_inp > n || n_wgt > n ||
        COB > limit / 8)
        return limit + 1;
    int64_t kcap = 2;
    while (kcap < 2 * n + 2) kcap *= 2;
    int64_t bytes = n * (int64_t)sizeof(step_t) + 5 * n * 8 + n_tiles * 8 + 7 * n * 8 +
                    kcap * 7 * 8 + kcap + tails + (2 * n_inp + 2 * n_wgt) * 8 +
                    (2 * (n_inp + 1) + 2 * (n_wgt + 1)) * 8 +
                    (n + COB + 1) * (int64_t)sizeof(later_t);
    return bytes > limit ? limit + 1 : bytes;
}

/* cost_model.estimate(...).cycles of a candidate, or a negative code: VTA_SEARCH_FALLBACK
   when the walk needs more than VTA_SEARCH_WALK_BYTES (checked before allocating),
   VTA_SEARCH_NOMEM when an allocation fails, VTA_SEARCH_INTERNAL when the walk contradicts
   itself (a bug of this file). */
static int64_t estimate(const ctx_t *x, const cand_t *s) {
    const geo_t *g = x->g;
    const cfg_t *c = x->c;
    const bmode_t *m = &x->modes[s->mode];
    int64_t th = s->th, tw = s->tw, tco = s->tco, tci = s->tci;
    int64_t OH = g->OH, OW = g->OW, COB = g->COB, CIB = g->CIB;
    int64_t Ty = cdiv(OH, th), Tx = cdiv(OW, tw), G = cdiv(COB, tco);
    int64_t R = g->diagonal ? 1 : cdiv(CIB, tci);
    int64_t n_sp = Ty * Tx, n_tiles = n_sp * G, n = n_tiles * R;
    int64_t I = c->I, IS = c->I + c->setup, bw = c->bw, blk = g->block, K = g->taps;
    int64_t n_inp = s->inp_slots, n_wgt = s->wgt_slots, acc_slots = s->acc_slots;
    if (n_inp < 1 || n_wgt < 1 || acc_slots < 1 || n_inp > n || n_wgt > n ||
        acc_slots > n_tiles)
        return VTA_SEARCH_INTERNAL; /* plan_buffers gives 1 <= slots <= chunks */
    if (walk_bytes(n, n_tiles, acc_slots * G, n_inp, n_wgt, COB, VTA_SEARCH_WALK_BYTES) >
        VTA_SEARCH_WALK_BYTES)
        return VTA_SEARCH_FALLBACK;
    int64_t result = VTA_SEARCH_INTERNAL; /* until the walk ends consistently */

    step_t *steps = calloc((size_t)n, sizeof *steps);
    int64_t *ikey = calloc((size_t)n, sizeof(int64_t)), *wkey = calloc((size_t)n, sizeof(int64_t));
    int64_t *iahead = calloc((size_t)n, sizeof(int64_t));
    int64_t *wahead = calloc((size_t)n, sizeof(int64_t));
    int64_t *cend = calloc((size_t)n, sizeof(int64_t));
    int64_t *store_end = calloc((size_t)n_tiles, sizeof(int64_t));
    uint64_t kcap = 2;
    while (kcap < 2 * (uint64_t)n + 2) kcap *= 2;
    int64_t *kern = calloc((size_t)n * 7, sizeof(int64_t)); /* the distinct kernels, in order */
    int64_t *kset_keys = malloc((size_t)kcap * 7 * sizeof(int64_t));
    unsigned char *kset_used = calloc((size_t)kcap, 1);
    unsigned char *tails = calloc((size_t)(acc_slots * G), 1); /* (acc slot, co group) seen */
    int64_t *islots = calloc((size_t)(2 * n_inp + 2 * n_wgt), sizeof(int64_t));
    int64_t *lru_mem = calloc((size_t)(2 * (n_inp + 1) + 2 * (n_wgt + 1)), sizeof(int64_t));
    later_t *later = calloc((size_t)n + (size_t)COB + 1, sizeof *later);
    if (!steps || !ikey || !wkey || !iahead || !wahead || !cend || !store_end || !kern ||
        !kset_keys || !kset_used || !tails || !islots || !lru_mem || !later) {
        result = VTA_SEARCH_NOMEM;
        goto done;
    }

    /* Schedule.step_list */
    {
        int64_t k = 0, tile = 0;
        for (int64_t outer = 0; outer < n_tiles; outer++, tile++) {
            int64_t si, ci;
            if (s->order == 0) {
                si = outer / G;
                ci = outer % G;
            } else {
                ci = outer / n_sp;
                si = outer % n_sp;
            }
            int64_t oy0 = (si / Tx) * th, ox0 = (si % Tx) * tw, co0 = ci * tco;
            step_t base = {tile, si, oy0, min64(th, OH - oy0), ox0, min64(tw, OW - ox0), co0,
                           min64(tco, COB - co0), 0, 0, 1, 1};
            if (g->diagonal) {
                base.ci0 = co0 / g->dm;
                base.nci = diag_nci(g, co0, base.nco);
                steps[k++] = base;
            } else {
                for (int64_t r = 0; r < R; r++) {
                    step_t st = base;
                    st.ci0 = r * tci;
                    st.nci = min64(tci, CIB - st.ci0);
                    st.first = r == 0;
                    st.last = r == R - 1;
                    steps[k++] = st;
                }
            }
        }
    }
    int64_t span = CIB + g->COB + 2; /* every ci0, nci, co0 and nco is below it */
    for (int64_t i = 0; i < n; i++) {
        const step_t *st = &steps[i];
        ikey[i] = (st->spatial * span + st->ci0) * span + st->nci;
        wkey[i] = ((st->co0 * span + st->nco) * span + st->ci0) * span + st->nci;
    }
    /* prefetches: first step of each run of steps sharing a chunk -> first of the next run */
    for (int b = 0; b < 2; b++) {
        int64_t *keys = b ? wkey : ikey, *ahead = b ? wahead : iahead;
        int on = (b ? n_wgt : n_inp) >= 2;
        for (int64_t i = 0; i < n; i++) ahead[i] = -1;
        if (!on) continue;
        int64_t start = 0;
        for (int64_t i = 1; i < n; i++)
            if (keys[i] != keys[i - 1]) {
                ahead[start] = i;
                start = i;
            }
    }

    lru_t inp = {lru_mem, lru_mem + n_inp + 1, 0, n_inp};
    lru_t wgt = {lru_mem + 2 * (n_inp + 1), lru_mem + 2 * (n_inp + 1) + n_wgt + 1, 0, n_wgt};
    walk_t w = {0, 0, 0, islots, islots + n_inp, islots + n_inp + n_wgt,
                islots + 2 * n_inp + n_wgt, cend};
    for (int64_t i = 0; i < n_inp; i++) w.inp_use[i] = -1;
    for (int64_t i = 0; i < n_wgt; i++) w.wgt_use[i] = -1;
    int64_t n_later = 0, later_cap = n + COB + 1;

    int dma_bias = (g->has_bias && s->mode == MODE_DMA) || g->runtime_init;
    int store_tail = s->mode == MODE_STORE;
    int64_t out_eb = g->int32_output ? 4 * blk : blk;
    int64_t per_row = m->tail_cycles;
    int64_t after_gemm = (dma_bias || store_tail) ? per_row : per_row - c->gemm_c;
    int64_t n_tail = m->tail_insns;
    int64_t param_bytes = m->param_rows * 4 * blk;
    int64_t c_end = 2 * IS + cdiv(param_bytes, bw);
    int whole_width = OH * OW <= MAX_STRIDE;
    int reset_once = store_tail && !g->runtime_init;
    int64_t s_free = 0, n_stored = 0, n_kern = 0, n_tails = 0;
    kset_t kset = {kset_keys, kset_used, kcap - 1};
    int split = 0;

    for (int64_t i = 0; i < n; i++) {
        const step_t *st = &steps[i];
        int64_t at = lru_find(&inp, ikey[i]), islot, wslot;
        if (at < 0) {
            islot = lru_claim(&inp, ikey[i]);
            do_load(x, &w, st, 1, islot, -1);
        } else {
            islot = inp.slot[at];
            lru_move_to_end(&inp, at);
        }
        at = lru_find(&wgt, wkey[i]);
        if (at < 0) {
            wslot = lru_claim(&wgt, wkey[i]);
            do_load(x, &w, st, 0, wslot, -1);
        } else {
            wslot = wgt.slot[at];
            lru_move_to_end(&wgt, at);
        }
        int64_t j = iahead[i];
        if (j >= 0 && lru_find(&inp, ikey[j]) < 0) {
            int64_t slot = lru_claim(&inp, ikey[j]);
            do_load(x, &w, &steps[j], 1, slot, -1);
            at = lru_find(&inp, ikey[i]);
            if (at < 0) goto done;
            lru_move_to_end(&inp, at);
        }
        j = wahead[i];
        if (j >= 0 && lru_find(&wgt, wkey[j]) < 0) {
            const step_t *ahead = &steps[j];
            int64_t slot = lru_claim(&wgt, wkey[j]);
            int64_t run = j - i;
            if (run > 1 && ahead->nco > 1) {
                for (int64_t part = 0; part < ahead->nco; part++) {
                    if (n_later >= later_cap) goto done;
                    later[n_later++] = (later_t){i + part * run / ahead->nco, j, slot, part};
                }
            } else {
                do_load(x, &w, ahead, 0, slot, -1);
            }
            at = lru_find(&wgt, wkey[i]);
            if (at < 0) goto done;
            lru_move_to_end(&wgt, at);
        }
        if (n_later) {
            int64_t kept = 0;
            for (int64_t k = 0; k < n_later; k++) {
                if (later[k].target == i)
                    do_load(x, &w, &steps[later[k].j], 0, later[k].slot, later[k].part);
                else
                    later[kept++] = later[k];
            }
            n_later = kept;
        }
        /* the GEMM */
        int64_t sth = st->th, stw = st->tw, nco = st->nco, nci = st->nci;
        int64_t aslot = st->tile % acc_slots;
        int64_t red = g->diagonal ? K : K * nci, uy, ux;
        int has_pb = pixel_block(nco, red, sth, stw, &uy, &ux);
        int64_t rows = sth * stw * nco;
        int64_t init = 0, init_bytes = 0;
        if (reset_once) {
        } else if (dma_bias) {
            int64_t nl = (g->dense || sth * stw == 1) ? 1 : nco;
            if (g->runtime_init) {
                nl = sth == 1 ? 1 : nco;
                if (!has_pb) init += I + 2 * c->gemm_c;
            }
            init += nl * IS + cdiv(rows * 4 * blk, bw);
            init_bytes = rows * 4 * blk;
        } else {
            init = I + rows * c->gemm_c;
        }
        int64_t n_st = (g->dense || (stw == OW && whole_width)) ? 1 : nco;
        int64_t dur = I + red * rows * c->gemm_c;
        int64_t reset = I + rows * c->gemm_c;
        int64_t tail = n_tail * I + rows * after_gemm;
        int64_t sdur = n_st * IS + cdiv(rows * out_eb, bw);
        int64_t out_bytes = rows * out_eb;
        int64_t kr[7] = {sth, stw, nco, nci, islot, wslot, aslot};
        if (kset_add(&kset, kr)) memcpy(kern + 7 * n_kern++, kr, sizeof kr);
        int64_t tail_at = aslot * G + st->co0 / tco;
        if (aslot < 0 || aslot >= acc_slots || tail_at < 0 || tail_at >= acc_slots * G) goto done;
        if (!tails[tail_at]) {
            tails[tail_at] = 1;
            n_tails++;
        }
        int64_t start = c_end;
        if (w.inp_ready[islot] > start) start = w.inp_ready[islot];
        if (w.wgt_ready[wslot] > start) start = w.wgt_ready[wslot];
        if (st->first) {
            split = !has_pb;
            if (st->tile >= acc_slots && st->tile - acc_slots < n_stored &&
                store_end[st->tile - acc_slots] > start)
                start = store_end[st->tile - acc_slots];
            if (reset_once) {
                if (st->tile < acc_slots || split) dur += reset;
            } else {
                dur += init;
                w.bus_bytes += init_bytes;
            }
        }
        if (st->last) {
            dur += tail;
            if (split) dur += I + c->alu_c;
        }
        c_end = start + dur;
        cend[i] = c_end;
        w.inp_use[islot] = i;
        w.wgt_use[wslot] = i;
        if (st->last) {
            s_free = (s_free > c_end ? s_free : c_end) + sdur;
            if (n_stored >= n_tiles) goto done;
            store_end[n_stored++] = s_free;
            w.bus_bytes += out_bytes;
        }
    }
    {
        int64_t nk = n_kern, nt = n_tails;
        int64_t uops = 0, biggest = 0;
        for (int64_t k = 0; k < nk; k++) {
            const int64_t *kr = kern + 7 * k;
            int64_t red = g->diagonal ? K : K * kr[3], uy, ux;
            int64_t u = pixel_block(kr[2], red, kr[0], kr[1], &uy, &ux) ? red * kr[2] * uy * ux
                                                                         : red;
            uops += u;
            biggest = max64(biggest, u);
        }
        uops += 6 * nt;
        int64_t depth = c->d_uop, extra;
        if (uops <= depth)
            extra = cdiv(4 * uops, bw);
        else
            extra = n * (IS + cdiv(4 * biggest, bw));
        w.bus_bytes += 4 * min64(uops, depth) + param_bytes;
        int64_t total = max64(c_end + extra, s_free + (uops > depth ? extra : 0)) + I;
        result = max64(total, cdiv(w.bus_bytes, bw));
    }
done:
    free(steps);
    free(ikey);
    free(wkey);
    free(iahead);
    free(wahead);
    free(cend);
    free(store_end);
    free(kern);
    free(kset_keys);
    free(kset_used);
    free(tails);
    free(islots);
    free(lru_mem);
    free(later);
    return result;
}

/* ---- the search ---- */

static int64_t distinct_splits(int64_t n, int64_t *out, int64_t limit) {
    int64_t k = 0, prev = -1;
    for (int64_t d = 1; d <= n && k < limit; d++) {
        int64_t v = cdiv(n, d);
        if (v != prev) out[k++] = prev = v;
    }
    return k;
}

static int cmp_modeled(const void *a, const void *b) {
    const int64_t *x = a, *y = b;
    if (x[0] != y[0]) return x[0] < y[0] ? -1 : 1;
    return x[1] < y[1] ? -1 : (x[1] > y[1]);
}

/* Rank candidates 0..n-1 by (quick, index) into rank (no globals kept across calls). */
static void rank_all(const cand_t *cands, int64_t n, int64_t *rank) {
    /* a merge sort: qsort with a global would not be reentrant */
    for (int64_t i = 0; i < n; i++) rank[i] = i;
    int64_t *tmp = rank + n;
    for (int64_t width = 1; width < n; width *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * width) {
            int64_t mid = min64(lo + width, n), hi = min64(lo + 2 * width, n);
            int64_t a = lo, b = mid, k = lo;
            while (a < mid && b < hi) {
                int64_t ia = rank[a], ib = rank[b];
                int take_b = cands[ib].quick < cands[ia].quick ||
                             (cands[ib].quick == cands[ia].quick && ib < ia);
                tmp[k++] = take_b ? rank[b++] : rank[a++];
            }
            while (a < mid) tmp[k++] = rank[a++];
            while (b < hi) tmp[k++] = rank[b++];
        }
        memcpy(rank, tmp, (size_t)n * sizeof(int64_t));
    }
}

static int valid(const int64_t *v, int n, int64_t lo, int64_t hi) {
    for (int i = 0; i < n; i++)
        if (v[i] < lo || v[i] > hi) return 0;
    return 1;
}

int vta_search(const int64_t *geo, int64_t n_geo, const int64_t *cfg, int64_t n_cfg,
               const int64_t *modes_info, int64_t n_modes_info, const int64_t *rank_modes,
               int64_t n_rank_modes, const int64_t *orders, int64_t n_orders, int64_t primary,
               int64_t try_modes, int64_t model_steps, int64_t *out, int64_t out_cap) {
    if (!geo || !cfg || !modes_info || !rank_modes || !orders || !out) return VTA_SEARCH_INVALID;
    if (n_geo != VTA_SEARCH_GEO_N || n_cfg != VTA_SEARCH_CFG_N ||
        n_modes_info != 4 * N_MODES || n_rank_modes < 1 || n_rank_modes > N_MODES ||
        n_orders < 1 || n_orders > 2 || out_cap < 0 || out_cap > (1 << 24))
        return VTA_SEARCH_INVALID;
    if (primary < 0 || primary >= N_MODES || model_steps < 0 || model_steps > (1LL << 40))
        return VTA_SEARCH_INVALID;
    if (!valid(rank_modes, (int)n_rank_modes, 0, N_MODES - 1) ||
        !valid(orders, (int)n_orders, 0, 1))
        return VTA_SEARCH_INVALID;
    if (n_orders == 2 && orders[0] == orders[1]) return VTA_SEARCH_INVALID;
    /* geometry: kind, then sizes >= 1 (paddings >= 0), flags 0/1 */
    geo_t g;
    g.kind = geo[0];
    if (g.kind < KIND_CONV || g.kind > KIND_DENSE) return VTA_SEARCH_INVALID;
    if (!valid(geo + 1, 8, 1, INT32_MAX) || !valid(geo + 9, 4, 0, INT32_MAX) ||
        !valid(geo + 13, 6, 1, INT32_MAX) || !valid(geo + 19, 5, 0, 1))
        return VTA_SEARCH_INVALID;
    g.H = geo[1], g.W = geo[2], g.KH = geo[3], g.KW = geo[4], g.sh = geo[5], g.sw = geo[6];
    g.dh = geo[7], g.dw = geo[8], g.pad_t = geo[9], g.pad_b = geo[10], g.pad_l = geo[11];
    g.pad_r = geo[12], g.OH = geo[13], g.OW = geo[14], g.block = geo[15], g.dm = geo[16];
    g.CIB = geo[17], g.COB = geo[18], g.has_bias = geo[19], g.small_bias = geo[20];
    g.int32_output = geo[21], g.runtime_init = geo[22], g.has_zp = geo[23];
    g.diagonal = g.kind == KIND_DEPTHWISE;
    g.dense = g.kind == KIND_DENSE;
    g.row_subsample = !g.dense && g.KH == 1 && g.sh > 1;
    g.taps = g.KH * g.KW;
    if (!valid(cfg, 2, 0, INT32_MAX) || !valid(cfg + 2, 7, 1, INT32_MAX)) return VTA_SEARCH_INVALID;
    cfg_t c = {cfg[0], cfg[1], cfg[2], cfg[3], cfg[4], cfg[5], cfg[6], cfg[7], cfg[8]};
    bmode_t modes[N_MODES];
    for (int k = 0; k < N_MODES; k++) {
        const int64_t *mi = modes_info + 4 * k;
        if (!valid(mi, 3, 0, INT32_MAX) || !valid(mi + 3, 1, 0, 1)) return VTA_SEARCH_INVALID;
        modes[k] = (bmode_t){mi[0], mi[1], mi[2], mi[3]};
    }
    /* Sizes whose every product below fits in 63 bits (legal layers beyond them: the
       Python search). */
    if (g.H > SIDE_MAX || g.W > SIDE_MAX || g.OH > SIDE_MAX || g.OW > SIDE_MAX ||
        g.pad_t > SIDE_MAX || g.pad_b > SIDE_MAX || g.pad_l > SIDE_MAX || g.pad_r > SIDE_MAX ||
        g.KH > 256 || g.KW > 256 || g.sh > 256 || g.sw > 256 || g.dh > 256 || g.dw > 256 ||
        g.block > 64 || g.dm > 4096 || g.CIB > 4096 || g.COB > 4096 ||
        g.OH * (g.sh + g.KH * g.dh) > SIDE_MAX || g.OW * (g.sw + g.KW * g.dw) > SIDE_MAX ||
        g.OH * g.OW * g.COB * (g.diagonal ? 1 : g.CIB) * g.taps > (1LL << 40))
        return VTA_SEARCH_FALLBACK;
    if (c.I > 65536 || c.setup > 65536 || c.bw > 65536 || c.gemm_c > 1024 || c.alu_c > 1024 ||
        c.d_uop > (1 << 24) || c.d_inp > (1 << 24) || c.d_wgt > (1 << 24) || c.d_acc > (1 << 24))
        return VTA_SEARCH_FALLBACK;
    for (int k = 0; k < N_MODES; k++)
        if (modes[k].param_rows > (1 << 24) || modes[k].tail_cycles > 65536 ||
            modes[k].tail_insns > 65536)
            return VTA_SEARCH_FALLBACK;

    int64_t nth = 0, ntw = 0, ntco = 0, ntci = 0;
    int64_t *ths = malloc((size_t)g.OH * sizeof(int64_t));
    int64_t *tws = malloc((size_t)(g.OW < 4 ? 4 : g.OW) * sizeof(int64_t));
    int64_t *tcos = malloc((size_t)g.COB * sizeof(int64_t));
    int64_t *tcis = malloc((size_t)g.CIB * sizeof(int64_t));
    int64_t *axis = malloc((size_t)(2 * (g.OH + 1) + 2 * (g.OW + 1)) * sizeof(int64_t));
    cand_t *cands = NULL;
    int64_t *rank = NULL, *modeled = NULL;
    int rc = VTA_SEARCH_NOMEM;
    if (!ths || !tws || !tcos || !tcis || !axis) goto out;
    nth = distinct_splits(g.OH, ths, g.OH);
    if (g.OW > 16) {
        ntw = distinct_splits(g.OW, tws, 4);
    } else {
        tws[0] = g.OW;
        ntw = 1;
    }
    ntco = distinct_splits(g.COB, tcos, g.COB);
    if (g.diagonal) {
        tcis[0] = g.CIB;
        ntci = 1;
    } else {
        ntci = distinct_splits(g.CIB, tcis, g.CIB);
    }
    for (int64_t i = 0; i < 2 * (g.OH + 1) + 2 * (g.OW + 1); i++) axis[i] = -1;
    ctx_t x = {&g, &c, modes, axis, axis + 2 * (g.OH + 1)};

    if (ntci * ntco * ntw * nth * n_rank_modes * n_orders > GRID_MAX) {
        rc = VTA_SEARCH_FALLBACK;
        goto out;
    }
    int64_t grid = ntci * ntco * ntw * nth * n_rank_modes * n_orders;
    int64_t cap = grid + 4 * N_MODES;
    cands = malloc((size_t)cap * sizeof *cands);
    if (!cands) goto out;
    int64_t n = 0, ci_used = 0;
    for (int64_t a = 0; a < ntci && ci_used < 2; a++) {
        int64_t found = n;
        for (int64_t b = 0; b < ntco; b++)
            for (int64_t cw = 0; cw < ntw; cw++)
                for (int64_t d = 0; d < nth; d++) {
                    int64_t biggest = -1;
                    for (int64_t e = 0; e < n_rank_modes; e++)
                        for (int64_t f = 0; f < n_orders; f++) {
                            cand_t s = {ths[d], tws[cw], tcos[b], tcis[a], rank_modes[e],
                                        orders[f], 0, 0, 0, 0, 0};
                            if (s.th * s.tw * s.tco > c.d_acc) continue;
                            int64_t n_outer = cdiv(g.OH, s.th) * cdiv(g.OW, s.tw);
                            if (f != 0 && !(n_outer > 1 && s.tco < g.COB)) continue;
                            int64_t sl[3];
                            if (!plan_buffers(&x, s.th, s.tw, s.tco, s.tci, s.order, s.mode, sl,
                                              &biggest))
                                continue;
                            if (min64(min64(sl[0], sl[1]), sl[2]) < 1) continue;
                            s.inp_slots = sl[0];
                            s.wgt_slots = sl[1];
                            s.acc_slots = sl[2];
                            cands[n++] = s;
                        }
                }
        if (n > found) ci_used++;
    }
    if (n == 0) {
        rc = VTA_SEARCH_FALLBACK;
        goto out;
    }
    for (int64_t i = 0; i < n; i++) {
        cands[i].quick = quick_estimate(&x, &cands[i]);
        cands[i].steps = step_count(&g, &cands[i]);
    }
    rank = malloc((size_t)(2 * cap) * sizeof(int64_t));
    if (!rank) goto out;
    rank_all(cands, n, rank);
    int64_t n0 = n;
    if (try_modes && g.has_bias) {
        for (int64_t r = 0; r < 4 && r < n0; r++) {
            const cand_t base = cands[rank[r]];
            for (int64_t mode = 0; mode < N_MODES; mode++) {
                if (mode == primary || !modes[mode].available) continue;
                int64_t sl[3], biggest = -1;
                if (!plan_buffers(&x, base.th, base.tw, base.tco, base.tci, base.order, mode, sl,
                                  &biggest))
                    continue;
                if (min64(min64(sl[0], sl[1]), sl[2]) < 1) continue;
                cand_t o = base;
                o.mode = mode;
                o.inp_slots = sl[0];
                o.wgt_slots = sl[1];
                o.acc_slots = sl[2];
                o.quick = quick_estimate(&x, &o);
                o.steps = step_count(&g, &o);
                cands[n++] = o;
            }
        }
        if (n > n0) rank_all(cands, n, rank);
    }
    modeled = malloc((size_t)(2 * n) * sizeof(int64_t));
    if (!modeled) goto out;
    int64_t n_modeled = 0, walked = 0;
    for (int64_t r = 0; r < n; r++) {
        const cand_t *s = &cands[rank[r]];
        if (n_modeled >= 3 && walked + s->steps > model_steps) break;
        walked += s->steps;
        int64_t e = estimate(&x, s);
        if (e < 0) {
            rc = (int)e;
            goto out;
        }
        modeled[2 * n_modeled] = e;
        modeled[2 * n_modeled + 1] = rank[r];
        n_modeled++;
    }
    qsort(modeled, (size_t)n_modeled, 2 * sizeof(int64_t), cmp_modeled);
    if (n_modeled > out_cap) {
        rc = VTA_SEARCH_CAPACITY;
        goto out;
    }
    for (int64_t k = 0; k < n_modeled; k++) {
        const cand_t *s = &cands[modeled[2 * k + 1]];
        int64_t *o = out + VTA_SEARCH_OUT_N * k;
        o[0] = s->th;
        o[1] = s->tw;
        o[2] = s->tco;
        o[3] = s->tci;
        o[4] = s->order;
        o[5] = s->mode;
        o[6] = s->inp_slots;
        o[7] = s->wgt_slots;
        o[8] = s->acc_slots;
        o[9] = modeled[2 * k];
    }
    rc = (int)n_modeled;
out:
    free(ths);
    free(tws);
    free(tcos);
    free(tcis);
    free(axis);
    free(cands);
    free(rank);
    free(modeled);
    return rc;
}
