"""Cycle models of a schedule: `quick_estimate` (closed form) and `estimate` (step level).

`quick_estimate` is the busiest module or the DRAM bus, plus prologue and epilogue; the search
ranks every candidate with it. `estimate` walks the step plan as the emitter does (same slots
and tokens) and is within about 1% of the simulator's timing model on MobileNetV2 and ResNet-50
layers. The tail of each accumulator tile is

    reset + GEMM bias (bias_mode "gemm") | reset + ALU ADD bias ("alu") | LOAD ACC bias ("dma")
    GEMM ...               (the convolution accumulates onto the tile)
    [ALU SHR -left]  ALU RDMUL M  [ALU RSHR right]    TFLite's MultiplyByQuantizedMultiplier
    ALU MAX lo - zp_out ; ALU MIN hi - zp_out           clamp first: the zero point add can
    GEMM +zp_out                                         then never wrap around int32
    STORE OUT

The output zero point is added by a one-block GEMM (a constant input row [1, 0, ...] times a
constant weight tile whose column 0 holds zp_out): one cycle per row instead of the ALU's two.
Per-tensor shifts are immediates; multipliers (31 bits) always come from a parameter row.

With VTA's ISA this tail costs 11-12 compute-module cycles per accumulator row (2 more with a
left shift), on the same module as the GEMM, which runs (input blocks x taps) cycles per row: a
1x1 convolution with 32 input channels spends 2 cycles in the GEMM for 11 in the tail.
`alu_bound_cycles` is therefore the bound to compare schedules with; the roofline
(`targets/vta/roofline.py`: GEMM and DRAM only) is below it by 3.1x on average on MobileNetV2's
convolutions with >= 16 input channels and by 1.65x on ResNet-50's; the chosen schedules are
within 2.8% and 0.9% of it. With the store module's output stage (bias mode "store") the tail
overlaps the GEMMs: MobileNetV2's convolutions come within 1.06x of the roofline, ResNet-50's
within 1.02x.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, replace

import numpy as np

from qaccel.lowering.vta.bias import n_param_rows
from qaccel.lowering.vta.geometry import (
    MAX_STRIDE,
    LayerGeometry,
    _cdiv,
    frame_cols,
    frame_rows,
    frame_shape,
    pixel_block,
    pixel_block_size,
)
from qaccel.lowering.vta.planning import (
    Schedule,
    _depths,
    available_bias_modes,
    frame_loads,
    plan_steps,
)
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.targets.vta.roofline import conv2d_roofline, gemm_roofline, roofline


@dataclass(frozen=True)
class Estimate:
    cycles: int
    compute: int
    load: int
    store: int
    bus: int
    prologue: int
    epilogue: int

def tail_cycles_per_row(g: LayerGeometry, bias_mode: str, config: HardwareConfig) -> int:
    """Compute-module cycles per accumulator row of the init + tail (GEMM/ALU rows). Bias mode
    "store" has none: the store module requantizes and clears the rows it stores, so only the
    first tile of each accumulator slot is reset."""
    alu, gemm = config.alu_cycles_per_uop, config.gemm_cycles_per_uop
    if bias_mode == "store":
        return 0
    c = 0
    if (bias_mode != "dma" or not g.has_bias) and not g.runtime_init:
        c += gemm  # reset
        if g.has_bias:
            c += gemm if bias_mode == "gemm" else alu
    for op in g.tail:
        c += {"lsh": alu, "rdmul": alu, "rshr": alu, "clamp": 2 * alu, "zp": gemm}[op]
    return c


def _tail_insns(g: LayerGeometry, bias_mode: str) -> int:
    if bias_mode == "store":
        return 0
    n = (0 if g.runtime_init else 1) + (1 if g.has_bias and bias_mode != "dma" else 0)
    return n + sum(2 if op == "clamp" else 1 for op in g.tail)

def _axis_sums(g: LayerGeometry, tile: int, rows: bool) -> tuple[int, int]:
    """(real input positions, frame positions) summed over the tiles of one axis."""
    key = ("axis_sums", tile, rows)
    found = g._memo.get(key)
    if found is None:
        found = g._memo[key] = _axis_sums_of(g, tile, rows)
    return found


def _axis_sums_of(g: LayerGeometry, tile: int, rows: bool) -> tuple[int, int]:
    n_out = g.OH if rows else g.OW
    if _cdiv(n_out, tile) > 8 and g.kind != "dense":
        return _axis_sums_array(g, tile, rows)
    real = frame = 0
    for i in range(_cdiv(n_out, tile)):
        size = min(tile, n_out - i * tile)
        if rows:
            fr, _, _, (_, r) = frame_rows(g, i * tile, size)
        else:
            fr, _, (_, r) = frame_cols(g, i * tile, size)
        real += r
        frame += fr
    return real, frame

def _axis_sums_array(g: LayerGeometry, tile: int, rows: bool) -> tuple[int, int]:
    """`_axis_sums_of` of a conv/depthwise layer over all its tiles at once (many tiles):
    `frame_rows` / `frame_cols` and `real_span` over arrays."""
    n_out = g.OH if rows else g.OW
    i = np.arange(_cdiv(n_out, tile))
    size = np.minimum(tile, n_out - i * tile)
    if rows:
        fr = size if g.row_subsample else (size - 1) * g.sh + (g.KH - 1) * g.dh + 1
        start, step, extent = i * tile * g.sh - g.pad_t, g.sh if g.row_subsample else 1, g.H
    else:
        fr = (size - 1) * g.sw + (g.KW - 1) * g.dw + 1
        start, step, extent = i * tile * g.sw - g.pad_l, 1, g.W
    first = np.where(start >= 0, 0, np.minimum(fr, -(start // step)))
    last = np.minimum(np.where(extent - 1 >= start, (extent - 1 - start) // step, -1), fr - 1)
    return int(np.maximum(0, last - first + 1).sum()), int(fr.sum())


def _merged_frames(g: LayerGeometry, tw: int) -> bool:
    """Whether a typical frame of `tw`-wide tiles loads in one LOAD (for the quick model)."""
    if g.kind == "dense" or (g.KH == 1 and (g.row_subsample or g.OH == 1)):
        return g.kind == "dense" or g.H * g.W <= MAX_STRIDE
    return (g.KW == 1 and tw >= g.OW and g.pad_t == g.pad_b == 0 and not g.row_subsample
            and g.H * g.W <= MAX_STRIDE)  # fmt: skip

def _quick_terms(g: LayerGeometry, bias_mode: str, c: HardwareConfig) -> tuple:
    """The terms of `quick_estimate` that depend on the layer, bias mode and configuration
    only (not on the tiling)."""
    I, setup, bw = c.insn_issue_cycles, c.dma_setup_cycles, c.bus_width_bytes
    blk = g.block
    out_eb = 4 * blk if g.int32_output else blk
    rows = g.OH * g.OW * g.COB
    gemm = (g.macs // (blk * blk)) * c.gemm_cycles_per_uop
    tail = rows * tail_cycles_per_row(g, bias_mode, c)
    dma_bias = (g.has_bias and bias_mode == "dma") or g.runtime_init
    param_bytes = n_param_rows(g, bias_mode) * 4 * blk
    ci_per_pass = (g.COB + g.depth_multiplier - 1) // g.depth_multiplier if g.diagonal else g.CIB
    return (c, I, setup, bw, blk, g.taps, out_eb, g.OH * g.OW * g.COB * out_eb, rows,
            gemm + tail, _tail_insns(g, bias_mode), dma_bias, param_bytes, ci_per_pass,
            _depths(c)[0])  # fmt: skip


def quick_estimate(sched: Schedule, config: HardwareConfig | None = None) -> int:
    """Closed-form cycle estimate used to prune the search: prologue + the busiest of compute,
    load, store and the DRAM bus + epilogue (no transient stalls; see `estimate`)."""
    c = config or DEFAULT_CONFIG
    g = sched.geometry
    if g.batch > 1:  # an outer loop over the images: each one pass of one image's loop nest
        return g.batch * quick_estimate(replace(sched, geometry=g.image), c)
    key = ("quick", sched.bias_mode)
    terms = g._memo.get(key)
    if terms is None or terms[0] is not c:  # the search asks thousands of times per layer
        terms = g._memo[key] = _quick_terms(g, sched.bias_mode, c)
    (_, I, setup, bw, blk, K, out_eb, out_bytes, rows, gemm_tail, tail_insns, dma_bias,
     param_bytes, ci_per_pass, uop_depth) = terms  # fmt: skip
    diagonal = g.diagonal
    OH, OW, COB = g.OH, g.OW, g.COB
    th, tw, tco, tci = sched.tile_h, sched.tile_w, min(sched.tile_co, COB), sched.tile_ci
    Ty, Tx, G = -(-OH // th), -(-OW // tw), -(-COB // sched.tile_co)
    R = 1 if diagonal else -(-g.CIB // tci)
    T = Ty * Tx
    sy, fy = _axis_sums(g, th, True)
    sx, fx = _axis_sums(g, tw, False)
    real_pass, frame_pass = sy * sx, fy * fx
    chunk_ci = g.ci_range(0, tco, 0, 0)[1] if diagonal else min(tci, g.CIB)
    inp_slots, wgt_slots = sched.inp_slots, sched.wgt_slots
    if diagonal:
        inp_passes, inp_chunks = 1, T * G
        w_passes = 1 if (sched.loop_order == "channel" or wgt_slots >= G) else T
    else:
        if sched.loop_order == "spatial":
            inp_passes = 1 if (R == 1 or inp_slots >= R + 1) else G
            w_passes = 1 if (G * R == 1 or wgt_slots >= G * R) else T
        else:
            inp_passes = 1 if (T * R == 1 or inp_slots >= T * R) else G
            w_passes = 1 if (R == 1 or wgt_slots >= R + 1) else T
        inp_chunks = T * R * inp_passes
    inp_bytes = inp_passes * real_pass * ci_per_pass * blk
    pad_rows = inp_passes * (frame_pass - real_pass) * ci_per_pass
    merged = _merged_frames(g, tw)
    inp_loads = inp_chunks * (1 if merged else max(1, chunk_ci))
    wgt_bytes = w_passes * COB * (1 if diagonal else g.CIB) * K * blk * blk
    wgt_loads = w_passes * G * R
    IS = I + setup
    inp_time = inp_loads * IS + -(-(inp_bytes + pad_rows * blk) // bw)
    wgt_time = wgt_loads * IS + -(-wgt_bytes // bw)
    load = inp_time + wgt_time
    # With a single slot a reloaded chunk cannot overlap the GEMMs that read the previous one.
    serial = (inp_time if inp_slots == 1 and inp_chunks > 1 else 0) + (
        wgt_time if wgt_slots == 1 and wgt_loads > 1 else 0
    )
    tiles = T * G
    n_store = tiles if (g.kind == "dense" or tw >= OW) else T * COB
    store = n_store * IS + -(-out_bytes // bw)
    insns = T * G * R + tiles * tail_insns
    compute_dma = 0
    if dma_bias:
        compute_dma = tiles * (1 if g.kind == "dense" else tco) * IS
        compute_dma += -(-(rows * 4 * blk) // bw)
    red = K * (1 if diagonal else min(tci, g.CIB))
    pb = pixel_block(tco, red, min(th, OH), min(tw, OW)) or (1, 1)
    kernel = red * tco * pb[0] * pb[1]
    combos = min(T * G * R, inp_slots * sched.acc_slots * wgt_slots, 8)
    uops = kernel * combos
    if uops > uop_depth:  # kernels reloaded every step
        compute_dma += T * G * R * (IS + -(-(kernel * 4) // bw))
        uops = uop_depth
    preamble = 2 * IS + -(-(param_bytes + 4 * uops) // bw)
    compute = gemm_tail + insns * I + compute_dma + preamble + serial
    bus = -(-(inp_bytes + wgt_bytes + out_bytes + param_bytes + 4 * uops) // bw)
    if dma_bias:
        bus += -(-(rows * 4 * blk) // bw)
    fr, fc = frame_shape(g, min(th, OH), min(tw, OW))
    first_w = tco * (1 if diagonal else min(tci, g.CIB)) * K * blk * blk
    first_loads = (1 if merged else chunk_ci) + 1
    prologue = first_loads * IS + -(
        -(chunk_ci * fr * fc * blk + first_w + param_bytes + 4 * uops) // bw
    )
    last_rows = min(th, OH) * min(tw, OW) * tco
    epilogue = IS * (1 if tw >= OW else tco) + -(-(last_rows * out_eb) // bw)
    steady = max(compute - preamble, load - first_loads * IS, store, bus)
    return int(prologue + steady + epilogue)

def _terms(g: LayerGeometry, bias_mode: str, c: HardwareConfig) -> tuple:
    key = ("quick", bias_mode)
    terms = g._memo.get(key)
    if terms is None or terms[0] is not c:  # the search asks thousands of times per layer
        terms = g._memo[key] = _quick_terms(g, bias_mode, c)
    return terms


def _per_value(values, most: int, fn) -> list:
    """The tuples `fn(v)` for an array of tile sizes in 1..`most` (one call per distinct
    size), as arrays by position in the tuple."""
    distinct = sorted(set(values.tolist()))
    found = [fn(v) for v in distinct]
    table = np.zeros((max(most, max(distinct)) + 1, len(found[0])), np.int64)
    table[distinct] = found
    return [table[values, k] for k in range(len(found[0]))]


def quick_estimates(g: LayerGeometry, bias_mode: str, th, tw, tco, tci, spatial, inp_slots,
                    wgt_slots, acc_slots, config: HardwareConfig, factors: np.ndarray):  # fmt: skip
    """`quick_estimate` of many schedules of one layer and bias mode at once: the tiling
    fields as int64 arrays (`spatial`: bool, the loop order), `factors` from
    `geometry.smallest_factors` covering the layer's output rows and columns. The same
    integers, one array."""
    c = config
    if g.batch > 1:
        return g.batch * quick_estimates(g.image, bias_mode, th, tw, tco, tci, spatial,
                                         inp_slots, wgt_slots, acc_slots, c, factors)  # fmt: skip
    (_, I, setup, bw, blk, K, out_eb, out_bytes, rows, gemm_tail, tail_insns, dma_bias,
     param_bytes, ci_per_pass, uop_depth) = _terms(g, bias_mode, c)  # fmt: skip
    diagonal = g.diagonal
    OH, OW, COB = g.OH, g.OW, g.COB
    G = -(-COB // tco)
    tco = np.minimum(tco, COB)
    Ty, Tx = -(-OH // th), -(-OW // tw)
    R = 1 if diagonal else -(-g.CIB // tci)
    T = Ty * Tx
    sy, fy = _per_value(th, OH, lambda v: _axis_sums(g, v, True))
    sx, fx = _per_value(tw, OW, lambda v: _axis_sums(g, v, False))
    real_pass, frame_pass = sy * sx, fy * fx
    if diagonal:
        chunk_ci = (tco - 1) // g.depth_multiplier + 1
        inp_passes, inp_chunks = 1, T * G
        w_passes = np.where(~spatial | (wgt_slots >= G), 1, T)
    else:
        chunk_ci = np.minimum(tci, g.CIB)
        inp_passes = np.where(spatial, np.where((R == 1) | (inp_slots >= R + 1), 1, G),
                              np.where((T * R == 1) | (inp_slots >= T * R), 1, G))  # fmt: skip
        w_passes = np.where(spatial, np.where((G * R == 1) | (wgt_slots >= G * R), 1, T),
                            np.where((R == 1) | (wgt_slots >= R + 1), 1, T))  # fmt: skip
        inp_chunks = T * R * inp_passes
    inp_bytes = inp_passes * real_pass * ci_per_pass * blk
    pad_rows = inp_passes * (frame_pass - real_pass) * ci_per_pass
    merged = _per_value(tw, OW, lambda v: (_merged_frames(g, v),))[0].astype(bool)
    inp_loads = inp_chunks * np.where(merged, 1, np.maximum(1, chunk_ci))
    wgt_bytes = w_passes * COB * (1 if diagonal else g.CIB) * K * blk * blk
    wgt_loads = w_passes * G * R
    IS = I + setup
    inp_time = inp_loads * IS + -(-(inp_bytes + pad_rows * blk) // bw)
    wgt_time = wgt_loads * IS + -(-wgt_bytes // bw)
    load = inp_time + wgt_time
    serial = (np.where((inp_slots == 1) & (inp_chunks > 1), inp_time, 0)
              + np.where((wgt_slots == 1) & (wgt_loads > 1), wgt_time, 0))  # fmt: skip
    tiles = T * G
    n_store = tiles if g.kind == "dense" else np.where(tw >= OW, tiles, T * COB)
    store = n_store * IS + -(-out_bytes // bw)
    insns = T * G * R + tiles * tail_insns
    compute_dma = 0
    if dma_bias:
        compute_dma = tiles * (1 if g.kind == "dense" else tco) * IS
        compute_dma = compute_dma + -(-(rows * 4 * blk) // bw)
    red = K * (1 if diagonal else np.minimum(tci, g.CIB))
    th_, tw_ = np.minimum(th, OH), np.minimum(tw, OW)
    kernel = red * tco * pixel_block_size(tco, red, th_, tw_, factors)
    combos = np.minimum(np.minimum(T * G * R, inp_slots * acc_slots * wgt_slots), 8)
    uops = kernel * combos
    reload = uops > uop_depth  # kernels reloaded every step
    compute_dma = compute_dma + np.where(reload, T * G * R * (IS + -(-(kernel * 4) // bw)), 0)
    uops = np.where(reload, uop_depth, uops)
    preamble = 2 * IS + -(-(param_bytes + 4 * uops) // bw)
    compute = gemm_tail + insns * I + compute_dma + preamble + serial
    bus = -(-(inp_bytes + wgt_bytes + out_bytes + param_bytes + 4 * uops) // bw)
    if dma_bias:
        bus = bus + -(-(rows * 4 * blk) // bw)
    if g.kind == "dense":
        fr, fc = 1, tw_
    else:
        fr = th_ if g.row_subsample else (th_ - 1) * g.sh + (g.KH - 1) * g.dh + 1
        fc = (tw_ - 1) * g.sw + (g.KW - 1) * g.dw + 1
    first_w = tco * (1 if diagonal else np.minimum(tci, g.CIB)) * K * blk * blk
    first_loads = np.where(merged, 1, chunk_ci) + 1
    prologue = first_loads * IS + -(
        -(chunk_ci * fr * fc * blk + first_w + param_bytes + 4 * uops) // bw
    )
    last_rows = th_ * tw_ * tco
    epilogue = IS * np.where(tw >= OW, 1, tco) + -(-(last_rows * out_eb) // bw)
    steady = np.maximum(np.maximum(compute - preamble, load - first_loads * IS),
                        np.maximum(store, bus))  # fmt: skip
    return prologue + steady + epilogue

def estimate(sched: Schedule, config: HardwareConfig | None = None) -> Estimate:
    """Cycle estimate of a schedule from a step-level model of the three modules.

    Walks the loop nest as the emitter does (same slot assignment), with each step's load,
    GEMM, tail and store durations from the timing model's formulas, and the dependencies the
    tokens enforce: a load waits for the last GEMM that read its slot, a GEMM for its data,
    a tile's first write for the store that last read its accumulator slot. The shared DRAM
    bus is only a global bound. Micro-op kernels are counted exactly; when they do not fit the
    buffer, every step pays a reload."""
    c = config or DEFAULT_CONFIG
    g = sched.geometry
    if g.batch > 1:  # an outer loop over the images: each one pass of one image's loop nest
        e = estimate(replace(sched, geometry=g.image), c)
        return Estimate(*(g.batch * v for v in astuple(e)))
    I, setup, bw = c.insn_issue_cycles, c.dma_setup_cycles, c.bus_width_bytes
    blk = g.block
    K = g.taps
    alu, gemm_c = c.alu_cycles_per_uop, c.gemm_cycles_per_uop
    dma_bias = (g.has_bias and sched.bias_mode == "dma") or g.runtime_init
    store_tail = sched.bias_mode == "store"
    out_eb = 4 * blk if g.int32_output else blk
    per_row = tail_cycles_per_row(g, sched.bias_mode, c)
    # The tail after the GEMMs (the reset that starts a tile is counted with its first step).
    after_gemm = per_row if (dma_bias or store_tail) else per_row - gemm_c
    n_tail = _tail_insns(g, sched.bias_mode)
    # Per buffer and slot: when its chunk is in (load end), the last step whose GEMM read it.
    ready = {"inp": [0] * sched.inp_slots, "wgt": [0] * sched.wgt_slots}
    last_use = {"inp": [-1] * sched.inp_slots, "wgt": [-1] * sched.wgt_slots}
    inp_ready, wgt_ready = ready["inp"], ready["wgt"]
    inp_use, wgt_use = last_use["inp"], last_use["wgt"]
    cend: list[int] = []
    store_end: list[int] = []
    kernels: set = set()  # (shape, slots) of every GEMM kernel: shape -> micro-ops in `sizes`
    sizes: dict = {}  # (th, tw, nco, nci) -> (reduction, pixel block, micro-ops)
    tails: set = set()  # (acc slot, co0): the tail's single micro-ops, 6 each
    l_end = s_free = bus_bytes = 0
    load_busy = store_busy = compute_busy = 0
    param_bytes = n_param_rows(g, sched.bias_mode) * 4 * blk
    c_end = 2 * (I + setup) + _cdiv(param_bytes, bw)  # the parameter load (uops added below)
    prologue = None
    inp_loads: dict = {}  # (spatial tile, nci) -> (bytes, load cycles): frames repeat
    wgt_loads: dict = {}  # (nco, nci, part is None) -> (bytes, load cycles)
    plans = plan_steps(sched)
    n_steps = len(plans)
    IS = I + setup
    diagonal, dense = g.diagonal, g.kind == "dense"
    acc_slots = sched.acc_slots
    whole_width = g.OH * g.OW <= MAX_STRIDE
    OW = g.OW
    cend_append, store_append = cend.append, store_end.append
    reset_once = store_tail and not g.runtime_init  # reset once per slot, cleared by stores
    for n, (st, islot, wslot, _, loads) in enumerate(plans):
        for kind, ch, slot, part in loads:
            if kind == "inp":
                found = inp_loads.get((ch.spatial, ch.nci))
                if found is None:
                    frame = (ch.oy0, ch.th, ch.ox0, ch.tw, ch.nci)
                    real, padded, n_loads = _frame(g, ch, frame)
                    nbytes = real * blk
                    ldur = n_loads * IS + _cdiv(nbytes, bw) + _cdiv(padded * blk, bw)
                    found = inp_loads[(ch.spatial, ch.nci)] = (nbytes, ldur)
            else:
                found = wgt_loads.get((ch.nco, ch.nci, part is None))
                if found is None:
                    blocks = ch.nco if part is None else 1
                    nbytes = blocks * (1 if diagonal else ch.nci) * K * blk * blk
                    ldur = IS + -(-nbytes // bw)
                    found = wgt_loads[(ch.nco, ch.nci, part is None)] = (nbytes, ldur)
            nbytes, ldur = found
            bus_bytes += nbytes
            wait = last_use[kind][slot]
            if wait >= 0 and cend[wait] > l_end:
                l_end = cend[wait]
            l_end += ldur
            load_busy += ldur
            ready[kind][slot] = l_end
        tile, th, tw, nco, nci = st.tile, st.th, st.tw, st.nco, st.nci
        aslot = tile % acc_slots
        shape = (th, tw, nco, nci)
        size = sizes.get(shape)
        if size is None:
            red = K if diagonal else K * nci
            pb = pixel_block(nco, red, th, tw)
            rows = th * tw * nco
            # GEMM; a tile's first step: the reset or bias load (without the store module's
            # once-per-slot reset), its DMA bytes; its last: the tail (a split row's ALU op
            # is added by the tile's first step's pixel block), the store and its bytes.
            init = init_bytes = 0
            if reset_once:
                pass
            elif dma_bias:
                nl = 1 if (dense or th * tw == 1) else nco
                if g.runtime_init:  # `load_init`: one LOAD per tile row of blocks
                    nl = 1 if th == 1 else nco
                    if pb is None:
                        init += I + 2 * gemm_c
                init += nl * IS + _cdiv(rows * 4 * blk, bw)
                init_bytes = rows * 4 * blk
            else:
                init = I + rows * gemm_c
            n_st = 1 if (dense or (tw == OW and whole_width)) else nco
            size = sizes[shape] = (
                red * nco * pb[0] * pb[1] if pb is not None else red, pb is None,
                I + red * rows * gemm_c, init, init_bytes, I + rows * gemm_c,
                n_tail * I + rows * after_gemm, n_st * IS + -(-(rows * out_eb) // bw),
                rows * out_eb,
            )  # fmt: skip
        _, pb_none, dur, init, init_bytes, reset, tail, sdur, out_bytes = size
        kernels.add((shape, islot, wslot, aslot))
        tails.add((aslot, st.co0))
        start = c_end
        if inp_ready[islot] > start:
            start = inp_ready[islot]
        if wgt_ready[wslot] > start:
            start = wgt_ready[wslot]
        if st.first:
            split = pb_none
            if tile >= acc_slots and store_end[tile - acc_slots] > start:
                start = store_end[tile - acc_slots]
            if reset_once:
                if tile < acc_slots or split:
                    dur += reset
            else:
                dur += init
                bus_bytes += init_bytes
        last = st.last
        if last:
            dur += tail
            if split:
                dur += I + alu
        if prologue is None:
            prologue = start
        c_end = start + dur
        compute_busy += dur
        cend_append(c_end)
        inp_use[islot] = wgt_use[wslot] = n
        if last:
            s_free = (s_free if s_free > c_end else c_end) + sdur
            store_busy += sdur
            store_append(s_free)
            bus_bytes += out_bytes
    kernel_uops = [sizes[k[0]][0] for k in kernels]
    uops = sum(kernel_uops) + 6 * len(tails)
    depth = _depths(c)[0]
    if uops <= depth:
        extra = _cdiv(4 * uops, bw)  # one LOAD UOP in the prologue
    else:
        biggest = max(kernel_uops)
        extra = n_steps * (I + setup + _cdiv(4 * biggest, bw))
    bus_bytes += 4 * min(uops, depth) + param_bytes
    total = max(c_end + extra, s_free + (extra if uops > depth else 0)) + I
    bus = _cdiv(bus_bytes, bw)
    total = max(total, bus)
    return Estimate(int(total), int(compute_busy + extra), int(load_busy), int(store_busy),
                    int(bus), int(prologue or 0), int(total - c_end))  # fmt: skip

def _frame(g: LayerGeometry, ch, frame: tuple) -> tuple[int, int, int]:
    """(real input rows, padding rows, LOADs) of a step's input frame, once per layer: the
    search models many schedules of a layer, whose tiles share their frames."""
    key = ("frame", *frame)
    found = g._memo.get(key)
    if found is None:
        fr, _, _, (_, yreal) = frame_rows(g, ch.oy0, ch.th)
        fc, _, (_, xreal) = frame_cols(g, ch.ox0, ch.tw)
        found = g._memo[key] = (ch.nci * yreal * xreal, ch.nci * (fr * fc - yreal * xreal),
                                frame_loads(g, ch))  # fmt: skip
    return found


def roofline_cycles(g: LayerGeometry, config: HardwareConfig | None = None) -> int:
    """`conv2d_roofline` / `gemm_roofline` of the layer (docs/isa.md §9): the lower bound the
    benchmarks compare with. Depthwise counts its diagonal MACs (one block per tap)."""
    c = config or DEFAULT_CONFIG
    if g.batch > 1:
        return g.batch * roofline_cycles(g.image, c)
    if g.kind == "dense":
        return gemm_roofline(g.rows, g.C, g.O, c).cycles
    if g.kind == "depthwise":
        blk = c.block
        cb = _cdiv(g.O, blk) * blk
        nbytes = g.H * g.W * _cdiv(g.C, blk) * blk + g.taps * cb * blk + g.OH * g.OW * cb + cb * 12
        return roofline(g.macs, nbytes, c).cycles
    if g.pad_t == g.pad_b == g.pad_l == g.pad_r and g.sh == g.sw and g.dh == g.dw == 1:
        return conv2d_roofline(g.H, g.W, g.C, g.O, g.KH, g.KW, g.sh, g.pad_t, c).cycles
    blk = c.block
    ci, co = g.CIB * blk, g.COB * blk
    nbytes = g.H * g.W * ci + g.taps * ci * co + g.OH * g.OW * co + co * 12
    return roofline(g.macs, nbytes, c).cycles


def alu_bound_cycles(g: LayerGeometry, config: HardwareConfig | None = None) -> int:
    """A tighter lower bound for this ISA: the compute module runs the GEMM iterations and the
    requantization tail (reset, bias, RDMUL, RSHR, clamp, zero point) of every accumulator row
    back to back, so no schedule beats max(GEMM + tail, memory) (the tail with the cheapest
    bias mode the layer allows)."""
    c = config or DEFAULT_CONFIG
    if g.batch > 1:
        return g.batch * alu_bound_cycles(g.image, c)
    rows = g.OH * g.OW * g.COB
    modes = available_bias_modes(g, c, ("alu", "gemm", "store"))
    tail = rows * min(tail_cycles_per_row(g, m, c) for m in modes)
    gemm = g.macs // (g.block * g.block) * c.gemm_cycles_per_uop
    return max(gemm + tail, roofline_cycles(g, c))
