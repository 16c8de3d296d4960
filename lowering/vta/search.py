"""Layer scheduling for the VTA-like accelerator: the tiled loop nest chosen with a cost model.

`schedule(layer, config)` returns the best legal `Schedule` (`lowering/vta/planning.py`) of a
`ConvLayer` (`lowering/vta/geometry.py`); `make_schedule(layer, config, **tiling)` rebuilds one
from its loop-structure fields (e.g. carried by an IR op).

The search enumerates legal tilings (buffer capacities, micro-op field widths, `candidates`),
ranks them with `quick_estimate` (closed form: busiest module or the DRAM bus, plus prologue
and epilogue), re-ranks the best with `estimate` (a step-level model of the three modules that
follows the emitter's slots and tokens; `lowering/vta/cost_model.py`) and can time the best few
with the simulator's timing model (`refine`: emits them with `lowering/vta/emit.py`). The
candidates are enumerated and ranked as numpy arrays (`_Ranked`: `plan_slots`,
`quick_estimates`), in the order and with the values `candidates` and `quick_estimate` give
one by one; a `Schedule` is built only for the few the search models. Where the C library is
built (`lowering/vta/search_c/`, loaded by `csearch.py`) the same search runs in C:
`_search_python` is its specification and the fallback for what it leaves to Python (no
library, grids too large to rank at once, the exhaustive enumeration).

Bias modes (`lowering/vta/bias.py`): per accumulator row the bias GEMM costs 2 cycles (reset +
add), the ALU 3, the DMA 4 bus cycles on the compute module, the store module's output stage
none on the compute module. The search starts from the cheapest mode the layer and hardware
allow and tries the others on its best tilings (they reserve different buffer space).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from functools import lru_cache

import numpy as np

from qaccel.kernels import background
from qaccel.lowering.vta import csearch
from qaccel.lowering.vta.cost_model import (
    _merged_frames,
    estimate,
    quick_estimate,
    quick_estimates,
)
from qaccel.lowering.vta.emit import emit
from qaccel.lowering.vta.geometry import (
    ConvLayer,
    LayerError,
    LayerGeometry,
    _cdiv,
    pixel_block,
    smallest_factors,
)
from qaccel.lowering.vta.planning import (
    BIAS_MODES,
    LOOP_ORDERS,
    Schedule,
    _depths,
    available_bias_modes,
    check_block,
    plan_buffers,
    plan_slots,
    store_requant,
)
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.targets.vta.simulator import timing


def _distinct_splits(n: int, limit: int | None = None) -> list[int]:
    """Distinct tile sizes ceil(n / k), largest first."""
    out = sorted({_cdiv(n, k) for k in range(1, n + 1)}, reverse=True)
    return out if limit is None else out[:limit]

def candidates(g: LayerGeometry, config: HardwareConfig, bias_modes=BIAS_MODES,
               loop_orders=LOOP_ORDERS, exhaustive: bool = False) -> list[Schedule]:  # fmt: skip
    """Every legal tiling of a pruned space: tile heights ceil(OH/k), widths full (or
    ceil(OW/k), k <= 4, for rows wider than 16), co group sizes ceil(COB/k), the two largest
    ci group sizes ceil(CIB/k) that fit; both loop orders when they differ; `bias_modes`.
    `exhaustive`: every width ceil(OW/k) and every ci group size (used when the pruned space
    has no legal tiling, e.g. with small buffers)."""
    out: list[Schedule] = []
    ths = _distinct_splits(g.OH)
    if exhaustive:
        tws = _distinct_splits(g.OW)
    else:
        tws = _distinct_splits(g.OW, 4) if g.OW > 16 else [g.OW]
    tcos = _distinct_splits(g.COB)
    tcis = [g.CIB] if g.diagonal else _distinct_splits(g.CIB)
    modes = available_bias_modes(g, config, bias_modes) or ["alu"]
    depth_acc = _depths(config)[3]
    ci_sizes_used = 0
    for tci in tcis:
        found = len(out)
        for tco in tcos:
            red = g.taps * (1 if g.diagonal else tci)
            for tw in tws:
                for th in ths:
                    if th * tw * tco > depth_acc:
                        continue
                    if pixel_block(tco, red, th, tw) is None and th * tw > 1:
                        continue
                    n_outer = _cdiv(g.OH, th) * _cdiv(g.OW, tw)
                    orders = loop_orders if n_outer > 1 and tco < g.COB else loop_orders[:1]
                    for mode in modes:
                        for order in orders:
                            planned = plan_buffers(g, th, tw, tco, tci, order, mode, config)
                            if planned is None or min(planned[:3]) < 1:
                                continue
                            inp_slots, wgt_slots, acc_slots, plan = planned
                            out.append(Schedule(g, th, tw, tco, tci, order, mode, inp_slots,
                                                wgt_slots, acc_slots, plan))  # fmt: skip
        if len(out) > found:
            ci_sizes_used += 1
            if ci_sizes_used == 2 and not exhaustive:
                break
    return out

class _Ranked:
    """The candidates of `candidates(g, config, bias_modes, loop_orders)` (same order) as
    arrays, each with its `quick_estimate` and loop steps, ranked at once with numpy; a
    `Schedule` is built (by `plan_buffers`, as `candidates` does) only for the few the search
    looks at. `len(self) == 0` when none fits."""

    _MAX = 1 << 18  # grid points; a larger space is enumerated one by one (`candidates`)

    def __init__(self, g: LayerGeometry, config: HardwareConfig, bias_modes, loop_orders):
        self.g, self.config = g, config
        ths = _distinct_splits(g.OH)
        tws = _distinct_splits(g.OW, 4) if g.OW > 16 else [g.OW]
        tcos = _distinct_splits(g.COB)
        tcis = [g.CIB] if g.diagonal else _distinct_splits(g.CIB)
        self.modes = modes = available_bias_modes(g, config, bias_modes) or ["alu"]
        self.orders = orders = list(loop_orders)
        shape = (len(tcis), len(tcos), len(tws), len(ths), len(modes), len(orders))
        self.too_large = int(np.prod(shape)) > self._MAX
        if self.too_large:
            return
        grid = np.indices(shape).reshape(len(shape), -1)
        tci = np.array(tcis, np.int64)[grid[0]]
        tco = np.array(tcos, np.int64)[grid[1]]
        tw = np.array(tws, np.int64)[grid[2]]
        th = np.array(ths, np.int64)[grid[3]]
        mode, order = grid[4], grid[5]
        spatial = np.array([o == "spatial" for o in orders])[order]
        n_outer = -(-g.OH // th) * -(-g.OW // tw)
        keep = th * tw * tco <= _depths(config)[3]
        # (`candidates`' pixel_block test never refuses: only a 1x1 tile has no pixel block)
        keep &= (order == 0) | ((n_outer > 1) & (tco < g.COB))
        factors = smallest_factors(max(g.OH, g.OW))
        slots = np.zeros((3, len(th)), np.int64)
        for k, m in enumerate(modes):
            at = keep & (mode == k)
            fits, *sl = plan_slots(g, th[at], tw[at], tco[at], tci[at], spatial[at], m, config,
                                   factors)  # fmt: skip
            fits &= np.minimum(np.minimum(sl[0], sl[1]), sl[2]) >= 1
            keep[at] = fits
            slots[:, at] = np.where(fits, sl, 0)
        # Like `candidates`: the first two ci group sizes with a tiling that fits.
        used = np.flatnonzero(np.bincount(grid[0][keep], minlength=len(tcis)))[:2]
        first_two = np.zeros(len(tcis), bool)
        first_two[used] = True
        keep &= first_two[grid[0]]
        at = np.flatnonzero(keep)
        self.th, self.tw, self.tco, self.tci = th[at], tw[at], tco[at], tci[at]
        self.mode, self.order, self.spatial = mode[at], order[at], spatial[at]
        self.slots = slots[:, at]
        quick = np.zeros(len(at), np.int64)
        for k, m in enumerate(modes):
            sel = self.mode == k
            if sel.any():
                quick[sel] = quick_estimates(
                    g, m, self.th[sel], self.tw[sel], self.tco[sel], self.tci[sel],
                    self.spatial[sel], *self.slots[:, sel], config, factors)  # fmt: skip
        self.quick = quick
        R = 1 if g.diagonal else -(-g.CIB // self.tci)
        self.steps = (-(-g.OH // self.th) * -(-g.OW // self.tw) * -(-g.COB // self.tco)
                      * R)  # fmt: skip

    def __len__(self) -> int:
        return len(self.quick)

    def schedule(self, i: int) -> Schedule:
        g, c = self.g, self.config
        th, tw, tco, tci = (int(a[i]) for a in (self.th, self.tw, self.tco, self.tci))
        order, mode = self.orders[self.order[i]], self.modes[self.mode[i]]
        inp_slots, wgt_slots, acc_slots, plan = plan_buffers(g, th, tw, tco, tci, order, mode, c)
        assert [inp_slots, wgt_slots, acc_slots] == self.slots[:, i].tolist()
        return Schedule(g, th, tw, tco, tci, order, mode, inp_slots, wgt_slots, acc_slots, plan)


def make_schedule(layer: ConvLayer | LayerGeometry, config: HardwareConfig | None = None, *,
                  tile_h: int, tile_w: int, tile_co: int, tile_ci: int | None = None,
                  loop_order: str = "spatial", bias_mode: str = "alu",
                  inp_slots: int | None = None, wgt_slots: int | None = None,
                  acc_slots: int | None = None, estimated: bool = True) -> Schedule:  # fmt: skip
    """A schedule with the given tiling (sizes clipped to the layer), buffer slots as the
    search would choose them unless given; raises `LayerError` when it does not fit on chip.
    Rebuilds a `Schedule` from its loop-structure fields (e.g. carried by an IR op).
    `estimated=False` leaves `estimated_cycles` 0 (the cost model's walk of the loop nest is
    skipped: emitting the schedule does not read it)."""
    c = config or DEFAULT_CONFIG
    g = layer.geometry if isinstance(layer, ConvLayer) else layer
    check_block(g, c)
    if loop_order not in LOOP_ORDERS or bias_mode not in BIAS_MODES:
        raise ValueError(f"loop_order {loop_order!r} / bias_mode {bias_mode!r} unknown")
    if bias_mode == "store" and not store_requant(g, c):
        raise LayerError(f"bias mode 'store' needs an int8 output and a hardware config with "
                         f"store_requant ('{c.name}' has none)")  # fmt: skip
    tci = g.CIB if tile_ci is None else tile_ci
    if min(tile_h, tile_w, tile_co, tci) < 1:
        raise LayerError("tile sizes must be positive")
    th, tw, tco, tci = min(tile_h, g.OH), min(tile_w, g.OW), min(tile_co, g.COB), min(tci, g.CIB)
    red = g.taps * (1 if g.diagonal else tci)
    if pixel_block(tco, red, th, tw) is None and th * tw > 1:
        raise LayerError(f"tile {th}x{tw} with one output block has no legal micro-op order")
    planned = plan_buffers(g, th, tw, tco, tci, loop_order, bias_mode, c)
    if planned is None:
        if bias_mode == "gemm" and g.has_bias and not g.small_bias:
            raise LayerError("a fused bias is too large for the one-cycle bias GEMM")
        raise LayerError(f"tile {th}x{tw} x {tco} co x {tci} ci blocks does not fit on chip")
    slots = list(planned[:3])
    plan = planned[3]
    for i, (want, rows, depth, reserved) in enumerate((
        (inp_slots, plan.inp_slot_rows, c.depth("inp"), plan.inp_base),
        (wgt_slots, plan.wgt_slot_tiles, c.depth("wgt"), plan.wgt_base),
        (acc_slots, plan.acc_slot_rows, c.depth("acc"), plan.param_rows),
    )):  # fmt: skip
        if want is not None:
            if want < 1 or reserved + want * rows > depth:
                raise LayerError(f"{want} slots of {rows} rows do not fit in {depth} rows")
            slots[i] = want
    sched = Schedule(g, th, tw, tco, tci, loop_order, bias_mode, *slots, plan)
    if not estimated:
        return sched
    return replace(sched, estimated_cycles=estimate(sched, c).cycles)

def with_bias_mode(s: Schedule, bias_mode: str, config: HardwareConfig) -> Schedule | None:
    """The same tiling with the other bias mode (None when it does not fit)."""
    planned = plan_buffers(s.geometry, s.tile_h, s.tile_w, s.tile_co, s.tile_ci, s.loop_order,
                           bias_mode, config)  # fmt: skip
    if planned is None or min(planned[:3]) < 1 or bias_mode not in available_bias_modes(
        s.geometry, config
    ):
        return None
    inp_slots, wgt_slots, acc_slots, plan = planned
    return replace(s, bias_mode=bias_mode, inp_slots=inp_slots, wgt_slots=wgt_slots,
                   acc_slots=acc_slots, buffers=plan)  # fmt: skip

def schedule(layer: ConvLayer | LayerGeometry, config: HardwareConfig | None = None, *,
             refine: int = 0, bias_mode: str | None = None, loop_order: str | None = None,
             model_steps: int = 600, refine_insns: int = 2500) -> Schedule:  # fmt: skip
    """The best legal schedule for `layer`: every candidate ranked by `quick_estimate`, the
    best ones (until `model_steps` loop steps have been walked, at least 3) by `estimate`,
    and the `refine` best of those emitted and run through the simulator's timing model
    (only programs of about `refine_insns` instructions or fewer, beyond the first). The
    default, 0, trusts `estimate`: on MobileNetV2 and ResNet-50 timing the best 2-3 changes
    the total by 0.01% for 2-3x the compile time. `bias_mode` / `loop_order` force a choice."""
    c = config or DEFAULT_CONFIG
    g = layer.geometry if isinstance(layer, ConvLayer) else layer
    check_block(g, c)
    modes = BIAS_MODES if bias_mode is None else (bias_mode,)
    orders = LOOP_ORDERS if loop_order is None else (loop_order,)
    for m in modes:
        if m not in BIAS_MODES:
            raise ValueError(f"bias_mode {m!r} is not one of {', '.join(BIAS_MODES)}")
    for o in orders:
        if o not in LOOP_ORDERS:
            raise ValueError(f"loop_order {o!r} is not one of {', '.join(LOOP_ORDERS)}")
    if refine > 0 and isinstance(layer, ConvLayer):
        return _refined(layer, _search(g, c, modes, orders, bias_mode is None, model_steps),
                        c, refine, refine_insns)  # fmt: skip
    key = _search_key(g, c, modes, orders, bias_mode is None, model_steps)
    best = _best(*key)
    _known.add(key)
    return replace(best, geometry=g, estimated_cycles=g.batch * best.estimated_cycles)


def _search_key(g: LayerGeometry, c: HardwareConfig, modes: tuple[str, ...],
                orders: tuple[str, ...], try_modes: bool, model_steps: int) -> tuple:
    """The arguments of `_best` for a layer. The search reads the geometry's shapes and tail
    only, never the input zero point (the emitter's SETPAD value): layers that differ only
    there share one search. A batch is an outer loop over the images: one image's loop nest,
    N times."""
    return (replace(g.image, input_zero_point=0), c, tuple(modes), tuple(orders), try_modes,
            model_steps)  # fmt: skip


_known: set[tuple] = set()
"""Keys `_best` has answered (a hint for `search_ahead`: it may have been cleared since)."""
_ahead: dict[tuple, Schedule] = {}
"""Searches `search_ahead` ran before their layer asked, by key; `_best` takes them."""


@lru_cache(maxsize=1024)
def _best(g: LayerGeometry, c: HardwareConfig, modes: tuple[str, ...], orders: tuple[str, ...],
          try_modes: bool, model_steps: int) -> Schedule:
    """The first of `_search`, memoized: MobileNetV2 and ResNet-50 repeat layer shapes
    (53 layers, 31 searches; 54 layers, 22)."""
    found = _ahead.pop((g, c, modes, orders, try_modes, model_steps), None)
    if found is not None:
        return found
    return _search_first(g, c, modes, orders, try_modes, model_steps)


def search_ahead(layers: Iterable[ConvLayer | LayerGeometry], config: HardwareConfig, *,
                 bias_mode: str | None = None, model_steps: int = 600,
                 meanwhile: Callable[[], None] | None = None,
                 weight: float = 0.0) -> None:  # fmt: skip
    """Run the searches `schedule(layer, config, bias_mode=bias_mode)` will need for these
    layers now, about half of them in a forked child (`kernels/background.py`): the same
    searches, the same results, on two cores. `meanwhile`: more work for this process while
    the child searches, worth `weight` searches (the child then takes more of them). A no-op
    (`meanwhile` not called) where the process does not fork; a layer whose search fails is
    left for `schedule` to fail on. With the C search (`csearch.py`) a no-op too: all the
    searches take less time than starting the child."""
    if not background.enabled() or csearch.available():
        return
    if len(_known) > 4096:
        _known.clear()
    modes = BIAS_MODES if bias_mode is None else (bias_mode,)
    keys: list[tuple] = []
    for layer in layers:
        g = layer.geometry if isinstance(layer, ConvLayer) else layer
        key = _search_key(g, config, modes, LOOP_ORDERS, bias_mode is None, model_steps)
        if key in _known or key in _ahead or key in keys:
            continue
        try:
            check_block(g, config)
        except LayerError:
            continue
        keys.append(key)
    if len(keys) < 2:
        return
    # From the largest down, each search goes to the side with less work so far (the
    # searches cost about the same: each models about `model_steps` loop steps).
    keys.sort(key=lambda k: -(k[0].OH * k[0].OW * k[0].COB * (1 if k[0].diagonal else k[0].CIB)))
    here: list[tuple] = []
    there: list[tuple] = []
    for key in keys:
        (there if len(there) <= len(here) + weight else here).append(key)
    theirs = background.start(_searches, there)
    try:
        mine = _searches(here)
        if meanwhile is not None:
            meanwhile()
        done = theirs.result()
    finally:
        theirs.cancel()  # when this half raised
    for key, found in (*zip(here, mine), *zip(there, done)):
        if found is not None:
            _ahead[key] = found


def _searches(keys: list[tuple]) -> list[Schedule | None]:
    out: list[Schedule | None] = []
    for key in keys:
        try:
            out.append(_search_first(*key))
        except LayerError:
            out.append(None)
    return out


def _search(g: LayerGeometry, c: HardwareConfig, modes: tuple[str, ...],
            orders: tuple[str, ...], try_modes: bool, model_steps: int) -> list[Schedule]:  # fmt: skip
    """The schedules `estimate` modeled, best first (see `schedule`); `try_modes`: the bias
    mode is free (not forced). The C search (`csearch.py`) where it runs, else
    `_search_python`: the same schedules."""
    found = csearch.search(g, c, modes, orders, try_modes, model_steps)
    if found is not None:
        return found
    return _search_python(g, c, modes, orders, try_modes, model_steps)


def _search_first(g: LayerGeometry, c: HardwareConfig, modes: tuple[str, ...],
                  orders: tuple[str, ...], try_modes: bool,
                  model_steps: int) -> Schedule:  # fmt: skip
    """The first of `_search` (the C search builds only that one `Schedule`)."""
    found = csearch.search(g, c, modes, orders, try_modes, model_steps, first=True)
    if found is not None:
        return found[0]
    return _search_python(g, c, modes, orders, try_modes, model_steps)[0]


def _search_python(g: LayerGeometry, c: HardwareConfig, modes: tuple[str, ...],
                   orders: tuple[str, ...], try_modes: bool,
                   model_steps: int) -> list[Schedule]:  # fmt: skip
    """`_search` in Python: the specification the C search follows, and its fallback."""
    # Per accumulator row, the bias GEMM costs 2 cycles (reset + add), the ALU 3, the DMA 4 bus
    # cycles on the compute module: search with the cheapest available, then try the others
    # on the best tilings only (they reserve different buffer space).
    primary = ("store" if store_requant(g, c) and "store" in modes
               else "gemm" if g.has_bias and g.small_bias else "alu")  # fmt: skip
    first = (primary,) if try_modes else modes
    ranked = _Ranked(g, c, first, orders)
    cands = (candidates(g, c, first, orders) if ranked.too_large
             else None if len(ranked) else [])  # fmt: skip
    if cands is not None:  # one by one: a large space, or the exhaustive one
        if not cands:
            cands = candidates(g, c, modes, orders, exhaustive=True)
        if not cands:
            raise LayerError(f"no tiling of {g.kind} layer {g.H}x{g.W}x{g.C}->{g.O} fits on chip")
        quick = [quick_estimate(s, c) for s in cands]
        steps = [_step_count(s) for s in cands]
        built = dict(enumerate(cands))
    else:
        quick, steps, built = ranked.quick.tolist(), ranked.steps.tolist(), {}
    n = len(quick)

    def cand(i: int) -> Schedule:
        s = built.get(i)
        if s is None:
            s = built[i] = ranked.schedule(i)
        return s

    # Ranked by (quick estimate, index): the index breaks ties, as sorting the pairs does.
    rank = np.lexsort((np.arange(n), np.array(quick, np.int64))).tolist()
    if try_modes and g.has_bias:
        for i in rank[:4]:
            for mode in BIAS_MODES:
                other = None if mode == primary else with_bias_mode(cand(i), mode, c)
                if other is not None:
                    built[len(quick)] = other
                    quick.append(quick_estimate(other, c))
                    steps.append(_step_count(other))
        if len(quick) > n:
            rank = np.lexsort((np.arange(len(quick)), np.array(quick, np.int64))).tolist()
    modeled = []
    walked = 0
    for i in rank:
        n = steps[i]
        if len(modeled) >= 3 and walked + n > model_steps:
            break
        walked += n
        modeled.append((estimate(cand(i), c).cycles, i))
    modeled.sort()
    return [replace(cand(i), estimated_cycles=e) for e, i in modeled]


def _refined(layer: ConvLayer, best: list[Schedule], c: HardwareConfig, refine: int,
             refine_insns: int) -> Schedule:
    """The best of the `refine` first of `best` by the simulator's timing model."""
    timed = []
    for s in best[:refine]:
        if timed and _insn_count(s) > refine_insns:
            continue
        timed.append((timing(emit(layer, s, c).program, c).total_cycles, len(timed), s))
    cycles, _, s = min(timed)
    return replace(s, simulated_cycles=int(cycles))


def _step_count(s: Schedule) -> int:
    return s.tiles_y * s.tiles_x * s.co_groups * s.ci_groups


def _insn_count(s: Schedule) -> int:
    g = s.geometry
    per_step = 2 + (1 if _merged_frames(g, s.tile_w) else min(s.tile_ci, g.CIB))
    return _step_count(s) * per_step + s.tiles_y * s.tiles_x * s.co_groups * (8 + s.tile_co)
