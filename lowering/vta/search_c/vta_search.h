/* libqaccel_search: the schedule search of one VTA GEMM layer (vta_search.c). The Python
 * wrapper is lowering/vta/csearch.py; the Python search (lowering/vta/search.py) is the
 * specification and the fallback. */
#ifndef VTA_SEARCH_H
#define VTA_SEARCH_H

#include <stdint.h>

#define VTA_SEARCH_ABI 1

/* geo[VTA_SEARCH_GEO_N]: kind (0 conv, 1 depthwise, 2 dense), H, W, KH, KW, sh, sw, dh, dw,
 * pad_t, pad_b, pad_l, pad_r, OH, OW, block, depth_multiplier, CIB, COB, has_bias,
 * small_bias, int32_output, runtime_init, has_zp (the tail adds the output zero point).
 * cfg[VTA_SEARCH_CFG_N]: insn_issue_cycles, dma_setup_cycles, bus_width_bytes,
 * gemm_cycles_per_uop, alu_cycles_per_uop, depths of the uop, inp, wgt and acc buffers.
 * modes_info[4 * 4]: per bias mode (alu, dma, gemm, store): parameter rows, tail cycles per
 * accumulator row, tail instructions, available (0/1).
 * rank_modes: the bias modes the candidates are enumerated with (indices); orders: the loop
 * orders (0 spatial, 1 channel); primary: the mode the others are tried against; try_modes:
 * the bias mode is free.
 * out[out_cap][VTA_SEARCH_OUT_N]: per modeled schedule, best first: tile_h, tile_w, tile_co,
 * tile_ci, loop order, bias mode, inp_slots, wgt_slots, acc_slots, estimated cycles.
 * Returns the number of modeled schedules, or one of the negative codes below. */
#define VTA_SEARCH_GEO_N 24
#define VTA_SEARCH_CFG_N 9
#define VTA_SEARCH_OUT_N 10
#define VTA_SEARCH_INVALID (-1)  /* malformed arguments */
#define VTA_SEARCH_FALLBACK (-2) /* a search this library does not do: run the Python one */
#define VTA_SEARCH_NOMEM (-3)
#define VTA_SEARCH_CAPACITY (-4) /* more modeled schedules than out_cap */
#define VTA_SEARCH_INTERNAL (-5) /* the search contradicted itself: a bug of this library */

/* The most memory the step-level model may take to walk one schedule's loop nest (computed
 * before allocating it); a search with a schedule to walk that needs more is
 * VTA_SEARCH_FALLBACK. The corpus' largest walk takes about 2 MB. */
#define VTA_SEARCH_WALK_BYTES (64LL << 20)

int vta_search_abi(void);
const char *vta_search_source_hash(void);
int vta_search(const int64_t *geo, int64_t n_geo, const int64_t *cfg, int64_t n_cfg,
               const int64_t *modes_info, int64_t n_modes_info, const int64_t *rank_modes,
               int64_t n_rank_modes, const int64_t *orders, int64_t n_orders, int64_t primary,
               int64_t try_modes, int64_t model_steps, int64_t *out, int64_t out_cap);

#endif
