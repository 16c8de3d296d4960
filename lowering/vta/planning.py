"""The schedule of one layer and its step plan: loop nest, buffer slots, load order.

A `Schedule` is the explicit loop structure that `lowering/vta/emit.py` turns into an
instruction stream, small enough to be carried by an IR op (`Schedule.tiling()` gives the
fields, `search.make_schedule(layer, config, **tiling)` rebuilds it):

    for tile in output tiles (tile_h x tile_w pixels)     | loop_order "spatial": tiles outer,
      for co group (tile_co blocks of channels)           | "channel": co groups outer
        for ci group (tile_ci blocks of channels)         | reduction, innermost
          LOAD INP frame / LOAD WGT chunk (unless already in a slot) ; GEMM
        (after the last ci group) requantize tail on the accumulator tile ; STORE

Every buffer is split into slots (`inp_slots`, `wgt_slots`, `acc_slots`): a chunk keeps its
slot while it is reused and the next chunk loads into another, so with two or more slots the
load of step i+1 overlaps the GEMM of step i and the store of tile j overlaps tile j+1 (VTA's
"virtual threads"); when every chunk of a buffer fits, each gets its own slot and is loaded
exactly once. `plan_buffers` sizes the slots and places the constants, `plan_steps` fixes the
slots and the load order (with a one-chunk prefetch at the start of each run of steps sharing
a chunk); the emitter derives the dependency tokens.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass
from functools import lru_cache
from typing import NamedTuple

import numpy as np

from qaccel.lowering.vta.bias import n_param_rows
from qaccel.lowering.vta.geometry import (
    MAX_PAD,
    MAX_STRIDE,
    LayerError,
    LayerGeometry,
    _cdiv,
    frame_cols,
    frame_rows,
    frame_shape,
    max_kernel,
    max_kernels,
)
from qaccel.targets.vta.config import HardwareConfig
from qaccel.dialects.vta import BIAS_MODES, LOOP_ORDERS  # noqa: F401  (re-exported)


@dataclass(frozen=True)
class BufferPlan:
    """Where everything lives on chip (row indices of each buffer).

    INP: [zp constant row][bias constant row][inp_slots x inp_slot_rows]; WGT: [zp constant
    tile][bias tiles][wgt_slots x wgt_slot_tiles]; ACC: [parameter rows][acc_slots x
    acc_slot_rows] (constants only when used). Micro-op kernels are placed by the emitter
    (all loaded once when they fit, else cached and reloaded)."""

    inp_const: int  # row of the constant [1, 0, ...] input (-1: none)
    inp_bias: int  # row of the "gemm" bias mode's constant input (-1: none)
    inp_base: int
    inp_slot_rows: int
    wgt_const: int
    wgt_bias: int  # first of the COB bias tiles of the "gemm" bias mode (-1: none)
    wgt_base: int
    wgt_slot_tiles: int
    param_rows: int  # ACC rows 0.. hold bias / shift / multiplier rows
    acc_base: int
    acc_slot_rows: int

@dataclass(frozen=True)
class Schedule:
    """The loop structure of one layer (see the module docstring); all sizes in blocks of 16
    channels or output pixels. `estimated_cycles` is the cost model's figure, `simulated_cycles`
    the timing model's when the search measured it (else 0)."""

    geometry: LayerGeometry
    tile_h: int
    tile_w: int
    tile_co: int
    tile_ci: int
    loop_order: str
    bias_mode: str
    inp_slots: int
    wgt_slots: int
    acc_slots: int
    buffers: BufferPlan
    estimated_cycles: int = 0
    simulated_cycles: int = 0

    @property
    def tiles_y(self) -> int:
        return _cdiv(self.geometry.OH, self.tile_h)

    @property
    def tiles_x(self) -> int:
        return _cdiv(self.geometry.OW, self.tile_w)

    @property
    def co_groups(self) -> int:
        return _cdiv(self.geometry.COB, self.tile_co)

    @property
    def ci_groups(self) -> int:
        return 1 if self.geometry.diagonal else _cdiv(self.geometry.CIB, self.tile_ci)

    def steps(self):
        """The loop nest, in execution order: one `Step` per GEMM instruction."""
        return iter(self.step_list())

    def step_list(self) -> list[Step]:
        """`steps()` as a list (the search asks for it for every schedule it models)."""
        g = self.geometry
        th, tw, tco, tci = self.tile_h, self.tile_w, self.tile_co, self.tile_ci
        OH, OW, COB = g.OH, g.OW, g.COB
        spatial = [(oy0, min(th, OH - oy0), ox0, min(tw, OW - ox0))
                   for oy0 in range(0, OH, th) for ox0 in range(0, OW, tw)]  # fmt: skip
        cos = [(co0, min(tco, COB - co0)) for co0 in range(0, COB, tco)]
        if self.loop_order == "spatial":
            order = [(s, c) for s in range(len(spatial)) for c in range(len(cos))]
        else:
            order = [(s, c) for c in range(len(cos)) for s in range(len(spatial))]
        out = []
        append = out.append
        new = tuple.__new__  # Step(...) without the generated __new__'s call: the same tuple
        if g.diagonal:
            m = g.depth_multiplier
            for tile, (s, c) in enumerate(order):
                oy0, h, ox0, w = spatial[s]
                co0, nco = cos[c]
                first = co0 // m
                append(new(Step, (tile, s, oy0, h, ox0, w, c, co0, nco, first,
                                  (co0 + nco - 1) // m - first + 1, True, True)))  # fmt: skip
            return out
        CIB = g.CIB
        cis = [(ci0, min(tci, CIB - ci0)) for ci0 in range(0, CIB, tci)]
        last = len(cis) - 1
        for tile, (s, c) in enumerate(order):
            oy0, h, ox0, w = spatial[s]
            co0, nco = cos[c]
            for r, (ci0, nci) in enumerate(cis):
                append(new(Step, (tile, s, oy0, h, ox0, w, c, co0, nco, ci0, nci, r == 0,
                                  r == last)))  # fmt: skip
        return out

    def tiling(self) -> dict:
        """The loop-structure fields; `make_schedule(layer, config, **tiling)` rebuilds it."""
        return {
            "tile_h": self.tile_h, "tile_w": self.tile_w, "tile_co": self.tile_co,
            "tile_ci": self.tile_ci, "loop_order": self.loop_order, "bias_mode": self.bias_mode,
            "inp_slots": self.inp_slots, "wgt_slots": self.wgt_slots, "acc_slots": self.acc_slots,
        }  # fmt: skip

    def describe(self) -> str:
        return (
            f"tiles {self.tile_h}x{self.tile_w} px x {self.tile_co} co x {self.tile_ci} ci blocks, "
            f"{self.loop_order} order, bias {self.bias_mode}, slots inp {self.inp_slots} "
            f"wgt {self.wgt_slots} acc {self.acc_slots}"
        )

class Step(NamedTuple):  # a tuple: the search builds tens of thousands of these per model
    tile: int  # accumulator tile index (execution order)
    spatial: int  # spatial tile index
    oy0: int
    th: int
    ox0: int
    tw: int
    group: int  # co group index
    co0: int
    nco: int
    ci0: int
    nci: int
    first: bool  # first reduction step of its tile
    last: bool  # last: the tail and the store follow

def _depths(config: HardwareConfig) -> tuple[int, int, int, int]:
    """Buffer depths (uop, inp, wgt, acc) in elements."""
    last = _last_depths  # the search asks for one configuration's thousands of times in a row
    if last[0] is config:
        return last[1]
    depths = _depths_of(config)
    last[:] = [config, depths]
    return depths


_last_depths: list = [None, None]


@lru_cache(maxsize=16)
def _depths_of(config: HardwareConfig) -> tuple[int, int, int, int]:
    return tuple(config.depth(key) for key in ("uop", "inp", "wgt", "acc"))  # type: ignore[return-value]


def check_block(g: LayerGeometry, config: HardwareConfig) -> None:
    """Refuse a layer packed in blocks other than the hardware's BLOCK_IN = BLOCK_OUT."""
    if g.block != config.block:
        raise LayerError(f"the layer is packed in blocks of {g.block} channels, hardware config "
                         f"'{config.name}' has blocks of {config.block}")  # fmt: skip


def uses_zp_gemm(g: LayerGeometry, bias_mode: str = "alu") -> bool:
    """Whether the tail adds the output zero point with a one-block GEMM (not in the store
    module's output stage)."""
    return "zp" in g.tail and bias_mode != "store"


def store_requant(g: LayerGeometry, config: HardwareConfig) -> bool:
    """Whether the store module can run this layer's tail (bias mode "store")."""
    return config.store_requant and not g.int32_output


def available_bias_modes(g: LayerGeometry, config: HardwareConfig, modes=BIAS_MODES) -> list[str]:
    """The bias modes of `modes` this layer can use on `config`."""
    return [m for m in modes if (m != "gemm" or (g.has_bias and g.small_bias))
            and (m != "dma" or g.has_bias) and (m != "store" or store_requant(g, config))]  # fmt: skip

def frame_mode(g: LayerGeometry, st: Step) -> str:
    """How the emitter loads a step's input frame: "dense" (one LOAD of [row][ci]),
    "contiguous" (every block's frame is a contiguous run of DRAM rows: one LOAD, one frame
    per LOAD row), "row" (one-row frames: one LOAD, one block per LOAD row, horizontal
    padding per row), "padding" (the frame lies in the padding: one LOAD per block from a
    row of zero points), "blocks" (one LOAD per input block, with padding)."""
    if g.kind == "dense":
        return "dense"
    fr, _, ystep, (_, yreal) = frame_rows(g, st.oy0, st.th)
    fc, _, (_, xreal) = frame_cols(g, st.ox0, st.tw)
    if yreal == 0 or xreal == 0:
        return "padding"
    if g.H * g.W > MAX_STRIDE:  # a block's plane is too far for a LOAD's 16-bit row stride
        return "blocks"
    if fr == 1:
        return "row"
    if yreal == fr and xreal == fc == g.W and ystep == 1:
        return "contiguous"
    return "blocks"


def frame_loads(g: LayerGeometry, st: Step) -> int:
    """LOAD instructions of a step's input frame (see `frame_mode`)."""
    mode = frame_mode(g, st)
    if mode in ("dense", "contiguous", "row"):
        return 1
    if mode == "padding":
        return st.nci
    fr, _, _, (ypad0, yreal) = frame_rows(g, st.oy0, st.th)
    extra = (ypad0 > MAX_PAD) + (fr - ypad0 - yreal > MAX_PAD)
    return st.nci * (1 + extra)

class _SlotLRU:
    """Least-recently-used slots of one buffer. Slots are only ever reused by evicting the
    oldest chunk once all are taken, so the chunks in use hold slots 0..len-1 and a new
    chunk gets the next one while any is free."""

    __slots__ = ("chunks", "n_slots")

    def __init__(self, n_slots: int):
        self.chunks: OrderedDict = OrderedDict()  # chunk key -> slot, oldest first
        self.n_slots = n_slots

    def claim(self, key) -> tuple[int, bool]:
        """(slot of the chunk `key`, whether the chunk must be loaded)."""
        chunks = self.chunks
        slot = chunks.get(key)
        if slot is not None:
            chunks.move_to_end(key)
            return slot, False
        slot = len(chunks) if len(chunks) < self.n_slots else chunks.popitem(last=False)[1]
        chunks[key] = slot
        return slot, True

class StepPlan(NamedTuple):
    """One step with its buffer slots and the loads to issue before its GEMM: `loads` holds
    (kind "inp"/"wgt", the step whose chunk it loads, slot, part), the step's own chunks
    first, then prefetches of the next chunks; `part` is None for a whole chunk, or the output
    block of a weight chunk loaded piecewise."""

    step: Step
    inp_slot: int
    wgt_slot: int
    acc_slot: int
    loads: tuple[tuple[str, Step, int, int | None], ...]

def plan_steps(sched: Schedule) -> list[StepPlan]:
    """Slot assignment and load order of the whole loop nest (the emitter and `estimate`
    both follow it). Chunks keep their slot while reused (LRU eviction). Loads issue in
    program order on the in-order load module, so at the first step of a run of steps using
    one chunk, the next different chunk of the same kind is claimed too: the weights of the
    next output group do not wait behind input loads that wait for the GEMM to free a slot.
    A prefetched weight chunk is loaded one output block at a time, spread over the run, so
    that it does not hold up the run's own input loads either."""
    steps = sched.step_list()
    n = len(steps)
    inp_keys = [(st.spatial, st.ci0, st.nci) for st in steps]
    wgt_keys = [(st.co0, st.nco, st.ci0, st.nci) for st in steps]

    def prefetches(keys) -> dict[int, int]:
        """First step of each run of steps sharing a chunk -> first step of the next run."""
        starts = [0]
        starts += [i for i in range(1, n) if keys[i] != keys[i - 1]]
        return dict(zip(starts, starts[1:]))

    # The two buffers' least-recently-used slots (as `_SlotLRU`, inlined: this runs for
    # every schedule the search models). A chunk's slot: the next one while any is free,
    # else the oldest chunk's. A buffer prefetches with two slots at least.
    inp_chunks: OrderedDict = OrderedDict()
    wgt_chunks: OrderedDict = OrderedDict()
    n_inp, n_wgt = sched.inp_slots, sched.wgt_slots
    inp_ahead = prefetches(inp_keys) if n_inp >= 2 else {}
    wgt_ahead = prefetches(wgt_keys) if n_wgt >= 2 else {}
    acc_slots = sched.acc_slots
    plans = []
    append = plans.append
    new_plan = tuple.__new__
    later: dict[int, list] = {}  # step index -> weight parts to load there
    for i, st in enumerate(steps):
        loads = []
        key = inp_keys[i]
        islot = inp_chunks.get(key)
        if islot is None:
            islot = (len(inp_chunks) if len(inp_chunks) < n_inp
                     else inp_chunks.popitem(last=False)[1])  # fmt: skip
            inp_chunks[key] = islot
            loads.append(("inp", st, islot, None))
        else:
            inp_chunks.move_to_end(key)
        key = wgt_keys[i]
        wslot = wgt_chunks.get(key)
        if wslot is None:
            wslot = (len(wgt_chunks) if len(wgt_chunks) < n_wgt
                     else wgt_chunks.popitem(last=False)[1])  # fmt: skip
            wgt_chunks[key] = wslot
            loads.append(("wgt", st, wslot, None))
        else:
            wgt_chunks.move_to_end(key)
        j = inp_ahead.get(i)
        if j is not None:
            ahead_key = inp_keys[j]
            if ahead_key not in inp_chunks:
                slot = (len(inp_chunks) if len(inp_chunks) < n_inp
                        else inp_chunks.popitem(last=False)[1])  # fmt: skip
                inp_chunks[ahead_key] = slot
                loads.append(("inp", steps[j], slot, None))
                inp_chunks.move_to_end(inp_keys[i])  # the chunk this step uses: the most recent
        j = wgt_ahead.get(i)
        if j is not None:
            ahead_key = wgt_keys[j]
            if ahead_key not in wgt_chunks:
                ahead = steps[j]
                slot = (len(wgt_chunks) if len(wgt_chunks) < n_wgt
                        else wgt_chunks.popitem(last=False)[1])  # fmt: skip
                wgt_chunks[ahead_key] = slot
                run = j - i
                if run > 1 and ahead.nco > 1:
                    for part in range(ahead.nco):
                        later.setdefault(i + part * run // ahead.nco, []).append(
                            ("wgt", ahead, slot, part)
                        )
                else:
                    loads.append(("wgt", ahead, slot, None))
                wgt_chunks.move_to_end(key)
        if later:
            loads.extend(later.pop(i, ()))
        append(new_plan(StepPlan, (st, islot, wslot, st.tile % acc_slots, tuple(loads))))
    return plans

def plan_buffers(
    g: LayerGeometry, th: int, tw: int, tco: int, tci: int, loop_order: str, bias_mode: str,
    config: HardwareConfig,
) -> tuple[int, int, int, BufferPlan] | None:
    """Slots and buffer bases for a tiling, or None when it does not fit on chip."""
    K = g.taps
    depth_uop, depth_inp, depth_wgt, depth_acc = _depths(config)
    th, tw = min(th, g.OH), min(tw, g.OW)
    tco = min(tco, g.COB)
    nci = g.ci_range(0, tco, 0, 0)[1] if g.diagonal else min(tci, g.CIB)
    if g.diagonal and g.depth_multiplier > 1:
        nci = max(g.ci_range(i, tco, 0, 0)[1] for i in range(0, g.COB, tco))
    fr, fc = frame_shape(g, th, tw)
    inp_rows = nci * fr * fc
    wgt_tiles = tco * (1 if g.diagonal else nci) * K
    red = K * (1 if g.diagonal else nci)
    split = tco == 1 and th * tw == 1 and red > 1
    acc_rows = tco * th * tw + (1 if split else 0)
    zp = 1 if uses_zp_gemm(g, bias_mode) else 0
    gemm_bias = g.has_bias and bias_mode == "gemm"
    if gemm_bias and not g.small_bias:
        return None
    inp_reserved = zp + (1 if gemm_bias else 0)
    wgt_reserved = zp + (g.COB if gemm_bias else 0)
    inp_free = depth_inp - inp_reserved
    wgt_free = depth_wgt - wgt_reserved
    params = n_param_rows(g, bias_mode)
    acc_free = depth_acc - params
    if inp_rows > inp_free or wgt_tiles > wgt_free or acc_rows > acc_free:
        return None
    key = ("max_kernel", th, tw, tco, nci)  # the same for every bias mode and loop order
    biggest = g._memo.get(key)
    if biggest is None:
        biggest = g._memo[key] = max_kernel(g, th, tw, tco, nci)
    if biggest > depth_uop // 2:  # room for two at least
        return None
    # Micro-op fields: ACC/INP indices and loop factors must fit their widths (< depth).
    if fr * fc * nci > depth_inp or tco * (1 if g.diagonal else nci) * K > depth_wgt:
        return None
    Ty, Tx = _cdiv(g.OH, th), _cdiv(g.OW, tw)
    G = _cdiv(g.COB, tco)
    R = 1 if g.diagonal else _cdiv(g.CIB, tci)
    n_inp_chunks = Ty * Tx * (G if g.diagonal else R)
    n_wgt_chunks = G * R
    inp_cap, wgt_cap, acc_cap = inp_free // inp_rows, wgt_free // wgt_tiles, acc_free // acc_rows
    inp_slots = n_inp_chunks if n_inp_chunks <= inp_cap else min(inp_cap, 2)
    wgt_slots = n_wgt_chunks if n_wgt_chunks <= wgt_cap else min(wgt_cap, 2)
    acc_slots = min(acc_cap, 2, Ty * Tx * G)
    # Spatial order with a split reduction wants every ci chunk of a tile resident.
    if not g.diagonal and loop_order == "spatial" and R > 1 and inp_slots < n_inp_chunks:
        inp_slots = min(inp_cap, R + 1) if inp_cap >= R + 1 else inp_slots
    plan = BufferPlan(
        inp_const=0 if zp else -1,
        inp_bias=zp if gemm_bias else -1,
        inp_base=inp_reserved,
        inp_slot_rows=inp_rows,
        wgt_const=0 if zp else -1,
        wgt_bias=zp if gemm_bias else -1,
        wgt_base=wgt_reserved,
        wgt_slot_tiles=wgt_tiles,
        param_rows=params,
        acc_base=params,
        acc_slot_rows=acc_rows,
    )
    return inp_slots, wgt_slots, acc_slots, plan


def diagonal_ci_blocks(g: LayerGeometry, tco: int) -> int:
    """Input blocks a depthwise step of `tco` output blocks reads (the largest over the
    groups with a depth multiplier): `plan_buffers`' slot rows."""
    nci = g.ci_range(0, tco, 0, 0)[1]
    if g.depth_multiplier > 1:
        nci = max(g.ci_range(i, tco, 0, 0)[1] for i in range(0, g.COB, tco))
    return nci


def plan_slots(g: LayerGeometry, th, tw, tco, tci, spatial, bias_mode: str,
               config: HardwareConfig, factors: np.ndarray):  # fmt: skip
    """`plan_buffers` over int64 arrays of tilings of one bias mode (`spatial`: a bool array,
    the loop order): (fits, inp_slots, wgt_slots, acc_slots), the slots valid where it fits.
    The search ranks every candidate with these; `plan_buffers` places the chosen ones."""
    K = g.taps
    depth_uop, depth_inp, depth_wgt, depth_acc = _depths(config)
    th, tw, tco = np.minimum(th, g.OH), np.minimum(tw, g.OW), np.minimum(tco, g.COB)
    if g.diagonal:
        per_tco = {v: diagonal_ci_blocks(g, v) for v in set(tco.tolist())}
        nci = np.array([per_tco[v] for v in tco.tolist()], np.int64).reshape(tco.shape)
    else:
        nci = np.minimum(tci, g.CIB)
    if g.kind == "dense":
        fr, fc = np.ones_like(th), tw
    else:
        fr = th if g.row_subsample else (th - 1) * g.sh + (g.KH - 1) * g.dh + 1
        fc = (tw - 1) * g.sw + (g.KW - 1) * g.dw + 1
    inp_rows = nci * fr * fc
    per_co = 1 if g.diagonal else nci
    wgt_tiles = tco * per_co * K
    red = K * per_co
    split = (tco == 1) & (th * tw == 1) & (red > 1)
    acc_rows = tco * th * tw + split
    zp = 1 if uses_zp_gemm(g, bias_mode) else 0
    gemm_bias = g.has_bias and bias_mode == "gemm"
    none = np.zeros(th.shape, bool)
    if gemm_bias and not g.small_bias:
        return none, none, none, none
    inp_free = depth_inp - (zp + (1 if gemm_bias else 0))
    wgt_free = depth_wgt - (zp + (g.COB if gemm_bias else 0))
    acc_free = depth_acc - n_param_rows(g, bias_mode)
    fits = (inp_rows <= inp_free) & (wgt_tiles <= wgt_free) & (acc_rows <= acc_free)
    fits &= max_kernels(g, th, tw, tco, nci, factors) <= depth_uop // 2
    fits &= (inp_rows <= depth_inp) & (wgt_tiles <= depth_wgt)
    Ty, Tx = -(-g.OH // th), -(-g.OW // tw)
    G = -(-g.COB // tco)
    R = 1 if g.diagonal else -(-g.CIB // tci)
    n_inp_chunks = Ty * Tx * (G if g.diagonal else R)
    n_wgt_chunks = G * R
    inp_cap, wgt_cap, acc_cap = inp_free // inp_rows, wgt_free // wgt_tiles, acc_free // acc_rows
    inp_slots = np.where(n_inp_chunks <= inp_cap, n_inp_chunks, np.minimum(inp_cap, 2))
    wgt_slots = np.where(n_wgt_chunks <= wgt_cap, n_wgt_chunks, np.minimum(wgt_cap, 2))
    acc_slots = np.minimum(np.minimum(acc_cap, 2), Ty * Tx * G)
    if not g.diagonal:
        more = spatial & (R > 1) & (inp_slots < n_inp_chunks) & (inp_cap >= R + 1)
        inp_slots = np.where(more, R + 1, inp_slots)
    return fits, inp_slots, wgt_slots, acc_slots
