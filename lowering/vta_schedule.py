"""Layer scheduling for the VTA-like accelerator: tiled loop nests chosen with a cost model.

One accelerator layer is a quantized convolution, depthwise convolution or matrix product with
its fused tail (`q.conv2d + q.bias_add + q.requantize + q.relu`, or the `q.dense` /
`q.depthwise_conv2d` equivalents), described by a `ConvLayer`. `schedule(layer, config)`
returns a `Schedule`: the explicit loop structure that `backends/vta/emit.py` turns into an
instruction stream, small enough to be carried by an IR op later:

    for tile in output tiles (tile_h x tile_w pixels)     | loop_order "spatial": tiles outer,
      for co group (tile_co blocks of 16 channels)        | "channel": co groups outer
        for ci group (tile_ci blocks of 16 channels)      | reduction, innermost
          LOAD INP frame / LOAD WGT chunk (unless already in a slot) ; GEMM
        (after the last ci group) requantize tail on the accumulator tile ; STORE

Every buffer is split into slots (`inp_slots`, `wgt_slots`, `acc_slots`): a chunk keeps its
slot while it is reused and the next chunk loads into another, so with two or more slots the
load of step i+1 overlaps the GEMM of step i and the store of tile j overlaps tile j+1 (VTA's
"virtual threads"); when every chunk of a buffer fits, each gets its own slot and is loaded
exactly once. The emitter derives the dependency tokens from the slots.

The tiling search enumerates legal tilings (buffer capacities, micro-op field widths), ranks
them with `estimate` (a closed-form model of the three modules, the shared DRAM bus and the
pipeline's prologue and epilogue, in the spirit of VTA's planner and AutoTVM's cost model), then
emits the best few and keeps the one the simulator's timing model finds fastest.

Arithmetic (docs/isa.md §7). Inputs are fed raw and padded with the input zero point (SETPAD),
the zero-point term is folded into the bias, `qfused_bias = bias - zp_in * sum(w)`. The tail on
each accumulator tile is

    reset + ALU ADD bias   (bias_mode "alu")   or   LOAD ACC bias rows (bias_mode "dma")
    GEMM ...               (the convolution accumulates onto the tile)
    [ALU SHR -left]  ALU RDMUL M  [ALU RSHR right]    TFLite's MultiplyByQuantizedMultiplier
    ALU MAX lo - zp_out ; ALU MIN hi - zp_out           clamp first: the zero point add can
    GEMM +zp_out                                         then never wrap around int32
    STORE OUT

The output zero point is added by a one-block GEMM (a constant input row [1, 0, ...] times a
constant weight tile whose column 0 holds zp_out): one cycle per row instead of the ALU's two.
FULLY_CONNECTED with LiteRT's double-precision requantization stores the int32 accumulators
(STORE ACC) and finishes on the host (`dense_requantize_host`).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np

from qaccel.backends.vta.config import DEFAULT_CONFIG, HardwareConfig

KINDS = ("conv", "depthwise", "dense")
LOOP_ORDERS = ("spatial", "channel")
BIAS_MODES = ("alu", "dma")
MAX_PAD = 15  # LOAD's 4-bit padding fields


class LayerError(ValueError):
    """A layer the accelerator cannot run (the message says why); it stays on the CPU."""


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


# --------------------------------------------------------------------------------------------
# The layer


@dataclass(eq=False)
class ConvLayer:
    """One accelerator layer with its requantization tail, in TFLite's integer terms.

    kind        "conv" (filter OHWI), "depthwise" (filter [1, KH, KW, C * depth_multiplier]) or
                "dense" (filter [O, I]; input [..., I], its leading dimensions are rows).
    input_shape NHWC with N = 1 for conv/depthwise; any shape ending in I for dense.
    bias        int32 [O] or None.
    padding     [top, bottom, left, right]; the padded taps count as the input zero point.
    multiplier, shift   int32, one value or one per output channel: TFLite's fixed-point
                requantization `MultiplyByQuantizedMultiplier` (shift > 0 shifts left).
    scale       float64, one or per channel: double-precision requantization (LiteRT's
                reference FULLY_CONNECTED); the accelerator then stores int32 accumulators.
    requant_input_zero_point, output_zero_point, act_min, act_max: the rest of the tail
                (`q.requantize` / `q.relu`); the result is int8.
    """

    kind: str
    input_shape: tuple[int, ...]
    weights: np.ndarray
    bias: np.ndarray | None = None
    strides: tuple[int, int] = (1, 1)
    padding: tuple[int, int, int, int] = (0, 0, 0, 0)
    dilations: tuple[int, int] = (1, 1)
    input_zero_point: int = 0
    filter_zero_point: int = 0
    multiplier: np.ndarray | None = None
    shift: np.ndarray | None = None
    scale: np.ndarray | None = None
    requant_input_zero_point: int = 0
    output_zero_point: int = 0
    act_min: int = -128
    act_max: int = 127
    depth_multiplier: int = 1
    name: str = ""
    geometry: LayerGeometry = field(init=False, repr=False)

    def __post_init__(self):
        self.weights = np.asarray(self.weights)
        self.input_shape = tuple(int(d) for d in self.input_shape)
        self.strides = tuple(int(v) for v in self.strides)
        self.padding = tuple(int(v) for v in self.padding)
        self.dilations = tuple(int(v) for v in self.dilations)
        self.geometry = _geometry(self)

    def describe(self) -> str:
        g = self.geometry
        if g.kind == "dense":
            return f"dense {g.rows}x{g.C} -> {g.O}"
        return (
            f"{g.kind} {g.H}x{g.W}x{g.C} -> {g.OH}x{g.OW}x{g.O} k{g.KH}x{g.KW} "
            f"s{g.sh} p{list(self.padding)}" + (f" d{g.dh}" if g.dh > 1 or g.dw > 1 else "")
        )


@dataclass(frozen=True)
class LayerGeometry:
    """Shapes and tail structure of a layer: everything the scheduler needs, no weights.

    Activations are laid out in DRAM as `[channel block][H][W][16]` int8 for conv/depthwise
    (the `accel` dialect's NCHW1n16c) and `[row][channel block][16]` for dense
    (`[N, C] -> [N, C/16, 1, 16]`): element (cb, y, x) is at `cb*cstride + y*ystride + x*xstride`.
    """

    kind: str
    H: int
    W: int
    C: int
    O: int
    KH: int
    KW: int
    sh: int
    sw: int
    dh: int
    dw: int
    pad_t: int
    pad_b: int
    pad_l: int
    pad_r: int
    OH: int
    OW: int
    block: int
    depth_multiplier: int
    tail: tuple[str, ...]  # ALU/GEMM tail after the bias: "lsh", "rdmul", "rshr", "clamp", "zp"
    per_channel: bool  # multiplier/shift rows per output block (else one row / immediates)
    has_bias: bool  # some fused bias value is non-zero
    int32_output: bool  # STORE ACC (dense with double requantization)
    input_zero_point: int

    @property
    def CIB(self) -> int:
        return _cdiv(self.C, self.block)

    @property
    def COB(self) -> int:
        return _cdiv(self.O, self.block)

    @property
    def taps(self) -> int:
        return self.KH * self.KW

    @property
    def rows(self) -> int:  # dense: input rows
        return self.W

    @property
    def diagonal(self) -> bool:
        """Output block b reads only input block b // depth_multiplier (depthwise)."""
        return self.kind == "depthwise"

    @property
    def row_subsample(self) -> bool:
        """1-row kernels with a vertical stride load only the rows they use."""
        return self.kind != "dense" and self.KH == 1 and self.sh > 1

    def act_strides(self, blocks: int, h: int, w: int) -> tuple[int, int, int]:
        """(cstride, ystride, xstride) of a packed activation tensor, in 16-byte elements."""
        if self.kind == "dense":
            return 1, 0, blocks
        return h * w, w, 1

    def ci_range(self, co0: int, nco: int, ci0: int, nci: int) -> tuple[int, int]:
        """Input blocks [first, count) a reduction step of output blocks co0.. reads."""
        if self.diagonal:
            m = self.depth_multiplier
            first = co0 // m
            return first, (co0 + nco - 1) // m - first + 1
        return ci0, nci

    @property
    def macs(self) -> int:
        """MACs the GEMM core performs (channels padded to blocks, 256 per block)."""
        per_pixel = self.COB * (1 if self.diagonal else self.CIB) * self.taps
        return self.OH * self.OW * per_pixel * self.block * self.block

    @property
    def useful_macs(self) -> int:
        cin = 1 if self.diagonal else self.C
        return self.OH * self.OW * self.O * cin * self.taps


def _geometry(layer: ConvLayer) -> LayerGeometry:
    kind = layer.kind
    if kind not in KINDS:
        raise LayerError(f"layer kind {kind!r} is not one of {', '.join(KINDS)}")
    w = layer.weights
    where = f"{layer.name or kind}"
    if w.dtype != np.int8:
        raise LayerError(f"{where}: weights must be int8, got {w.dtype}")
    if layer.filter_zero_point != 0:
        raise LayerError(
            f"{where}: filter zero point {layer.filter_zero_point} (the accelerator needs "
            f"symmetric int8 weights)"
        )
    if kind == "dense":
        if w.ndim != 2:
            raise LayerError(f"{where}: dense weights must be [O, I], got shape {list(w.shape)}")
        O, C = w.shape
        if layer.input_shape[-1] != C:
            raise LayerError(f"{where}: input {list(layer.input_shape)} does not end in I={C}")
        rows = int(np.prod(layer.input_shape[:-1], dtype=np.int64))
        H, W, KH, KW = 1, rows, 1, 1
        sh = sw = dh = dw = 1
        pads = (0, 0, 0, 0)
    else:
        if len(layer.input_shape) != 4 or layer.input_shape[0] != 1:
            raise LayerError(f"{where}: input must be NHWC with N=1, got {list(layer.input_shape)}")
        _, H, W, C = layer.input_shape
        if w.ndim != 4:
            raise LayerError(f"{where}: filter must be 4-D, got shape {list(w.shape)}")
        if kind == "conv":
            O, KH, KW, ci = w.shape
            if ci != C:
                raise LayerError(
                    f"{where}: grouped convolution ({C} input channels, filter takes {ci}) "
                    f"is not supported on the accelerator"
                )
        else:
            _, KH, KW, O = w.shape
            if w.shape[0] != 1 or O != C * layer.depth_multiplier:
                raise LayerError(
                    f"{where}: depthwise filter {list(w.shape)} does not match {C} channels "
                    f"x multiplier {layer.depth_multiplier}"
                )
        sh, sw = layer.strides
        dh, dw = layer.dilations
        pads = layer.padding
        if min(sh, sw, dh, dw) < 1:
            raise LayerError(f"{where}: strides and dilations must be positive")
        if len(pads) != 4 or min(pads) < 0:
            raise LayerError(f"{where}: padding must be 4 non-negative values [t, b, l, r]")
        if max(pads[2], pads[3]) > MAX_PAD:
            raise LayerError(
                f"{where}: horizontal padding {pads[2]}/{pads[3]} exceeds the {MAX_PAD} columns "
                f"a LOAD can pad"
            )
    pt, pb, pl, pr = pads
    OH = (H + pt + pb - ((KH - 1) * dh + 1)) // sh + 1
    OW = (W + pl + pr - ((KW - 1) * dw + 1)) // sw + 1
    if OH < 1 or OW < 1:
        raise LayerError(f"{where}: empty output ({OH}x{OW})")
    if layer.bias is not None and np.asarray(layer.bias).shape != (O,):
        raise LayerError(f"{where}: bias shape {list(np.shape(layer.bias))} is not [{O}]")
    if not (-128 <= layer.input_zero_point <= 127 and -128 <= layer.output_zero_point <= 127):
        raise LayerError(f"{where}: zero points must be int8")
    lo, hi = max(layer.act_min, -128), min(layer.act_max, 127)
    if lo > hi:
        raise LayerError(f"{where}: empty activation range [{layer.act_min}, {layer.act_max}]")

    int32_output = layer.scale is not None
    tail: list[str] = []
    per_channel = False
    if int32_output:
        if kind != "dense":
            raise LayerError(f"{where}: double-precision requantization is only for dense layers")
        if layer.multiplier is not None or layer.shift is not None:
            raise LayerError(f"{where}: give either scale or multiplier+shift")
        scale = np.asarray(layer.scale, np.float64).reshape(-1)
        if len(scale) not in (1, O):
            raise LayerError(f"{where}: {len(scale)} scales for {O} channels")
    else:
        if layer.multiplier is None or layer.shift is None:
            raise LayerError(f"{where}: requantization needs multiplier and shift (or scale)")
        m = np.asarray(layer.multiplier, np.int64).reshape(-1)
        s = np.asarray(layer.shift, np.int64).reshape(-1)
        if len(m) not in (1, O) or len(s) != len(m):
            raise LayerError(f"{where}: {len(m)} multipliers / {len(s)} shifts for {O} channels")
        if np.any(m < 0) or np.any(m >= 2**31):
            raise LayerError(f"{where}: multipliers must be in [0, 2**31)")
        if np.any(s > 31) or np.any(s < -31):
            raise LayerError(f"{where}: shifts must be in [-31, 31]")
        per_channel = len(m) > 1 and not (np.all(m == m[0]) and np.all(s == s[0]))
        if np.any(s > 0):
            tail.append("lsh")
        tail.append("rdmul")
        if np.any(s < 0):
            tail.append("rshr")
        tail.append("clamp")
        if layer.output_zero_point != 0:
            tail.append("zp")
    geometry = LayerGeometry(
        kind=kind, H=H, W=W, C=C, O=O, KH=KH, KW=KW, sh=sh, sw=sw, dh=dh, dw=dw,
        pad_t=pt, pad_b=pb, pad_l=pl, pad_r=pr, OH=OH, OW=OW, block=16,
        depth_multiplier=layer.depth_multiplier, tail=tuple(tail), per_channel=per_channel,
        has_bias=True, int32_output=int32_output, input_zero_point=layer.input_zero_point,
    )  # fmt: skip
    fused = fused_bias(layer, geometry)
    return replace(geometry, has_bias=bool(np.any(fused != 0)))


def fused_bias(layer: ConvLayer, g: LayerGeometry | None = None) -> np.ndarray:
    """int32 `bias - zp_in * sum(w) - requant_input_zero_point` per output channel, wrapping
    like TFLite's int32 arithmetic: padded taps hold zp_in, so the GEMM over raw inputs plus
    this bias is exactly `sum(w * (x - zp_in)) + bias`."""
    g = g or layer.geometry
    w = layer.weights.astype(np.int64)
    if g.kind == "conv":
        wsum = w.reshape(g.O, -1).sum(axis=1)
    elif g.kind == "depthwise":
        wsum = w.reshape(-1, g.O).sum(axis=0)
    else:
        wsum = w.sum(axis=1)
    bias = np.zeros(g.O, np.int64) if layer.bias is None else np.asarray(layer.bias, np.int64)
    total = bias - layer.input_zero_point * wsum - layer.requant_input_zero_point
    return total.astype(np.int32)  # int64 -> int32 keeps the low 32 bits


def dense_requantize_host(layer: ConvLayer, acc: np.ndarray) -> np.ndarray:
    """The host half of a dense layer with double-precision requantization: int32
    accumulators that already include the fused bias -> int8, as LiteRT's reference
    FULLY_CONNECTED (and `q.requantize` with `scale` + `q.relu`) computes it."""
    from qaccel.backends.cpu import arithmetic as ar

    scale = np.asarray(layer.scale, np.float64).reshape(-1)
    # requant_input_zero_point is already folded into the accumulators.
    scaled = ar.float_to_int32(ar.round_half_away(acc.astype(np.float64) * scale))
    out = ar.wrap_int32(scaled + layer.output_zero_point)
    lo, hi = max(layer.act_min, -128), min(layer.act_max, 127)
    return np.clip(out, lo, hi).astype(np.int8)


# --------------------------------------------------------------------------------------------
# The schedule


@dataclass(frozen=True)
class BufferPlan:
    """Where everything lives on chip (row indices of each buffer).

    INP: [zp constant row][inp_slots x inp_slot_rows]; WGT: [zp constant tile][wgt_slots x
    wgt_slot_tiles]; ACC: [parameter rows][acc_slots x acc_slot_rows]. Micro-op kernels are
    placed by the emitter (all loaded once when they fit, else cached and reloaded)."""

    inp_const: int  # row of the constant [1, 0, ...] input (-1: none)
    inp_base: int
    inp_slot_rows: int
    wgt_const: int
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
        g = self.geometry
        ty = [(i * self.tile_h, min(self.tile_h, g.OH - i * self.tile_h)) for i in range(self.tiles_y)]
        tx = [(i * self.tile_w, min(self.tile_w, g.OW - i * self.tile_w)) for i in range(self.tiles_x)]
        spatial = [(a, b) for a in ty for b in tx]
        cos = [(i * self.tile_co, min(self.tile_co, g.COB - i * self.tile_co))
               for i in range(self.co_groups)]  # fmt: skip
        if g.diagonal:
            cis = [(0, 0)]
        else:
            cis = [(i * self.tile_ci, min(self.tile_ci, g.CIB - i * self.tile_ci))
                   for i in range(self.ci_groups)]  # fmt: skip
        if self.loop_order == "spatial":
            order = [(s, c) for s in range(len(spatial)) for c in range(len(cos))]
        else:
            order = [(s, c) for c in range(len(cos)) for s in range(len(spatial))]
        tile = 0
        for s, c in order:
            (oy0, th), (ox0, tw) = spatial[s]
            co0, nco = cos[c]
            for r, (ci0, nci) in enumerate(cis):
                ci0, nci = g.ci_range(co0, nco, ci0, nci)
                yield Step(tile, s, oy0, th, ox0, tw, c, co0, nco, ci0, nci,
                           r == 0, r == len(cis) - 1)  # fmt: skip
            tile += 1

    def describe(self) -> str:
        return (
            f"tiles {self.tile_h}x{self.tile_w} px x {self.tile_co} co x {self.tile_ci} ci blocks, "
            f"{self.loop_order} order, bias {self.bias_mode}, slots inp {self.inp_slots} "
            f"wgt {self.wgt_slots} acc {self.acc_slots}"
        )


@dataclass(frozen=True)
class Step:
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


# --------------------------------------------------------------------------------------------
# Frame geometry shared by the cost model and the emitter


def frame_shape(g: LayerGeometry, th: int, tw: int) -> tuple[int, int]:
    """Input rows x columns a th x tw output tile reads (per input block)."""
    if g.kind == "dense":
        return 1, tw
    fr = th if g.row_subsample else (th - 1) * g.sh + (g.KH - 1) * g.dh + 1
    fc = (tw - 1) * g.sw + (g.KW - 1) * g.dw + 1
    return fr, fc


def real_span(start: int, count: int, step: int, size: int) -> tuple[int, int]:
    """(padding before, real count) of positions start, start+step, ... (count of them)
    inside [0, size)."""
    first = 0 if start >= 0 else min(count, _cdiv(-start, step))
    last = (size - 1 - start) // step if size - 1 >= start else -1
    last = min(last, count - 1)
    return first, max(0, last - first + 1)


def frame_rows(g: LayerGeometry, oy0: int, th: int) -> tuple[int, int, int, int]:
    """(frame rows, input row of frame row 0, DRAM row step, (pad before, real rows))."""
    if g.kind == "dense":
        return 1, 0, 1, (0, 1)
    fr, _ = frame_shape(g, th, 1)
    y0 = oy0 * g.sh - g.pad_t
    step = g.sh if g.row_subsample else 1
    return fr, y0, step, real_span(y0, fr, step, g.H)


def frame_cols(g: LayerGeometry, ox0: int, tw: int) -> tuple[int, int, tuple[int, int]]:
    if g.kind == "dense":
        return tw, ox0, (0, tw)
    _, fc = frame_shape(g, 1, tw)
    x0 = ox0 * g.sw - g.pad_l
    return fc, x0, real_span(x0, fc, 1, g.W)


def pixel_block(nco: int, reduction: int, th: int, tw: int) -> tuple[int, int] | None:
    """Output pixels (uy, ux) each micro-op block enumerates, so that two consecutive GEMM
    iterations never write the same accumulator row (VTA's pipeline rule): micro-ops run over
    (reduction, co, uy, ux) with the pixel loops outside. None: a single output row with a
    reduction longer than one, which needs a split accumulator."""
    if nco >= 2 or reduction == 1:
        return 1, 1
    for uy, ux in ((1, 2), (2, 1)):
        if th % uy == 0 and tw % ux == 0:
            return uy, ux
    if tw >= 2:
        return 1, tw
    if th >= 2:
        return th, 1
    return None


def param_layout(g: LayerGeometry, bias_mode: str) -> dict[str, tuple[int, int]]:
    """ACC parameter rows: kind -> (first row, rows per output block: 1 or 0 = shared)."""
    rows: dict[str, tuple[int, int]] = {}
    at = 0
    cob = g.COB
    if g.has_bias and bias_mode == "alu":
        rows["bias"] = (at, 1)
        at += cob
    if g.int32_output:
        return rows
    per = 1 if g.per_channel else 0
    for kind in ("lsh", "rdmul", "rshr"):
        if kind in g.tail and (kind == "rdmul" or g.per_channel):
            rows[kind] = (at, per)
            at += cob if per else 1
    return rows


def n_param_rows(g: LayerGeometry, bias_mode: str) -> int:
    lay = param_layout(g, bias_mode)
    return max((start + (g.COB if per else 1) for start, per in lay.values()), default=0)


def uses_zp_gemm(g: LayerGeometry) -> bool:
    return "zp" in g.tail


# --------------------------------------------------------------------------------------------
# Cost model


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
    """Compute-module cycles per accumulator row of the init + tail (GEMM/ALU rows)."""
    alu, gemm = config.alu_cycles_per_uop, config.gemm_cycles_per_uop
    c = 0
    if bias_mode == "alu" or not g.has_bias:
        c += gemm  # reset
        if g.has_bias:
            c += alu
    for op in g.tail:
        c += {"lsh": alu, "rdmul": alu, "rshr": alu, "clamp": 2 * alu, "zp": gemm}[op]
    return c


def _tail_insns(g: LayerGeometry, bias_mode: str) -> int:
    n = 1 + (1 if g.has_bias and bias_mode == "alu" else 0)
    return n + sum(2 if op == "clamp" else 1 for op in g.tail)


def estimate(sched: Schedule, config: HardwareConfig | None = None) -> Estimate:
    """Closed-form cycle estimate of a schedule: per-module busy time, DRAM bus time, and
    the pipeline's prologue (first loads before any GEMM) and epilogue (last store)."""
    c = config or DEFAULT_CONFIG
    g = sched.geometry
    I, setup, bw = c.insn_issue_cycles, c.dma_setup_cycles, c.bus_width_bytes
    blk = g.block
    K = g.taps
    th, tw, tco, tci = sched.tile_h, sched.tile_w, sched.tile_co, sched.tile_ci
    Ty, Tx, G, R = sched.tiles_y, sched.tiles_x, sched.co_groups, sched.ci_groups
    T = Ty * Tx
    # Real input elements of one pass over every tile (separable over rows and columns).
    sy = sum(frame_rows(g, i * th, min(th, g.OH - i * th))[3][1] for i in range(Ty))
    sx = sum(frame_cols(g, i * tw, min(tw, g.OW - i * tw))[2][1] for i in range(Tx))
    fr_all = sum(frame_rows(g, i * th, min(th, g.OH - i * th))[0] for i in range(Ty))
    fc_all = sum(frame_cols(g, i * tw, min(tw, g.OW - i * tw))[0] for i in range(Tx))
    real_pass, frame_pass = sy * sx, fr_all * fc_all
    if g.diagonal:
        ci_per_pass = sum(g.ci_range(i * tco, min(tco, g.COB - i * tco), 0, 0)[1] for i in range(G))
        chunk_ci = g.ci_range(0, tco, 0, 0)[1]
    else:
        ci_per_pass, chunk_ci = g.CIB, tci
    # How many times the input / weights cross the bus.
    if g.diagonal:
        inp_passes, inp_chunks = 1, T * G
        w_passes = 1 if (sched.loop_order == "channel" or sched.wgt_slots >= G) else T
    else:
        n_inp = T * R
        if sched.loop_order == "spatial":
            inp_passes = 1 if (R == 1 or sched.inp_slots >= R + 1) else G
            w_passes = 1 if (G * R == 1 or sched.wgt_slots >= G * R) else T
        else:
            inp_passes = 1 if (T * R == 1 or sched.inp_slots >= n_inp) else G
            w_passes = 1 if (R == 1 or sched.wgt_slots >= R + 1) else T
        inp_chunks = n_inp * (inp_passes if inp_passes > 1 else 1)
    inp_bytes = inp_passes * real_pass * ci_per_pass * blk
    pad_rows = inp_passes * (frame_pass - real_pass) * ci_per_pass
    merged = g.kind == "dense" or (g.KW == 1 and g.pad_l == g.pad_r == 0 and tw >= g.OW
                                   and g.pad_t == g.pad_b == 0 and not g.row_subsample)
    inp_loads = inp_chunks * (1 if merged else max(1, chunk_ci))
    wgt_tiles = g.COB * (1 if g.diagonal else g.CIB) * K
    wgt_bytes = w_passes * wgt_tiles * blk * blk
    wgt_loads = w_passes * G * R
    load = (inp_loads + wgt_loads) * (I + setup) + _cdiv(inp_bytes + wgt_bytes, bw)
    load += _cdiv(pad_rows * blk, bw)
    # Stores: one per co block of a tile, or one per tile when tiles span whole rows.
    out_eb = 4 * blk if g.int32_output else blk
    out_bytes = g.OH * g.OW * g.COB * out_eb
    tiles = T * G
    if g.kind == "dense" or tw >= g.OW:
        n_store = tiles
    else:
        n_store = T * g.COB
    store = n_store * (I + setup) + _cdiv(out_bytes, bw)
    # Compute: GEMM iterations are fixed; the tail costs a few cycles per accumulator row.
    rows = g.OH * g.OW * g.COB
    gemm = (g.macs // (blk * blk)) * c.gemm_cycles_per_uop
    tail = rows * tail_cycles_per_row(g, sched.bias_mode, c)
    insns = T * G * R + tiles * _tail_insns(g, sched.bias_mode)
    compute_dma = 0
    if g.has_bias and sched.bias_mode == "dma":
        per_tile_loads = 1 if g.kind == "dense" else tco
        compute_dma = tiles * per_tile_loads * (I + setup) + _cdiv(rows * 4 * blk, bw)
    param_bytes = n_param_rows(g, sched.bias_mode) * 4 * blk
    uop_bytes = 4 * _uop_estimate(sched)
    preamble = 2 * (I + setup) + _cdiv(param_bytes + uop_bytes, bw)
    compute = gemm + tail + insns * I + compute_dma + preamble
    bus = _cdiv(inp_bytes + wgt_bytes + out_bytes + param_bytes + uop_bytes, bw)
    if g.has_bias and sched.bias_mode == "dma":
        bus += _cdiv(rows * 4 * blk, bw)
    # Prologue: the first step's loads; epilogue: the last tile's store.
    fr, fc = frame_shape(g, min(th, g.OH), min(tw, g.OW))
    first_inp = chunk_ci * fr * fc * blk
    first_w = min(tco, g.COB) * (1 if g.diagonal else min(tci, g.CIB)) * K * blk * blk
    first_loads = (1 if merged else chunk_ci) + 1
    prologue = first_loads * (I + setup) + _cdiv(first_inp + first_w + param_bytes + uop_bytes, bw)
    last_rows = min(th, g.OH) * min(tw, g.OW) * min(tco, g.COB)
    epilogue = (I + setup) * (1 if tw >= g.OW else min(tco, g.COB)) + _cdiv(last_rows * out_eb, bw)
    steady = max(compute - preamble, load - first_loads * (I + setup), store, bus)
    total = prologue + steady + epilogue
    return Estimate(int(total), int(compute), int(load), int(store), int(bus), int(prologue),
                    int(epilogue))  # fmt: skip


def _uop_estimate(sched: Schedule) -> int:
    """Micro-ops the emitter will load: GEMM kernels per slot combination, plus tails."""
    g = sched.geometry
    red = g.taps * (1 if g.diagonal else min(sched.tile_ci, g.CIB))
    per_kernel = red * min(sched.tile_co, g.COB)
    if sched.tile_co == 1 and red > 1:
        per_kernel *= 2
    combos = min(sched.inp_slots * sched.acc_slots, 4) * min(sched.wgt_slots, sched.co_groups * sched.ci_groups)
    shapes = (1 + (g.OH % sched.tile_h != 0)) * (1 + (g.OW % sched.tile_w != 0))
    return min(per_kernel * combos * shapes, 8192)


# --------------------------------------------------------------------------------------------
# The search


def _distinct_splits(n: int, limit: int | None = None) -> list[int]:
    """Distinct tile sizes ceil(n / k), largest first."""
    out = sorted({_cdiv(n, k) for k in range(1, n + 1)}, reverse=True)
    return out if limit is None else out[:limit]


def plan_buffers(g: LayerGeometry, th: int, tw: int, tco: int, tci: int, loop_order: str,
                 bias_mode: str, config: HardwareConfig) -> tuple[int, int, int, BufferPlan] | None:  # fmt: skip
    """Slots and buffer bases for a tiling, or None when it does not fit on chip."""
    blk = g.block
    K = g.taps
    depth_inp, depth_wgt = config.depth("inp"), config.depth("wgt")
    depth_acc = config.depth("acc")
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
    zp = uses_zp_gemm(g)
    inp_free = depth_inp - (1 if zp else 0)
    wgt_free = depth_wgt - (1 if zp else 0)
    params = n_param_rows(g, bias_mode)
    acc_free = depth_acc - params
    if inp_rows > inp_free or wgt_tiles > wgt_free or acc_rows > acc_free:
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
    del blk
    plan = BufferPlan(
        inp_const=0 if zp else -1,
        inp_base=1 if zp else 0,
        inp_slot_rows=inp_rows,
        wgt_const=0 if zp else -1,
        wgt_base=1 if zp else 0,
        wgt_slot_tiles=wgt_tiles,
        param_rows=params,
        acc_base=params,
        acc_slot_rows=acc_rows,
    )
    return inp_slots, wgt_slots, acc_slots, plan


def candidates(g: LayerGeometry, config: HardwareConfig, bias_modes=BIAS_MODES,
               loop_orders=LOOP_ORDERS) -> list[Schedule]:  # fmt: skip
    """Every legal tiling of a pruned space: tile heights ceil(OH/k), widths full or ceil(OW/k)
    for small k, co/ci group sizes ceil(COB/k), ceil(CIB/k); both loop orders and bias modes."""
    out = []
    ths = _distinct_splits(g.OH)
    tws = _distinct_splits(g.OW, 4)
    tcos = _distinct_splits(g.COB)
    tcis = [g.CIB] if g.diagonal else _distinct_splits(g.CIB, 6)
    modes = [m for m in bias_modes if g.has_bias or m == "alu"]
    depth_acc = config.depth("acc")
    for tci in tcis:
        for tco in tcos:
            for tw in tws:
                for th in ths:
                    if th * tw * tco > depth_acc:
                        continue
                    for mode in modes:
                        for order in loop_orders:
                            planned = plan_buffers(g, th, tw, tco, tci, order, mode, config)
                            if planned is None:
                                continue
                            inp_slots, wgt_slots, acc_slots, plan = planned
                            if acc_slots < 1 or inp_slots < 1 or wgt_slots < 1:
                                continue
                            red = g.taps * (1 if g.diagonal else tci)
                            if pixel_block(tco, red, th, tw) is None and th * tw > 1:
                                continue
                            out.append(Schedule(g, th, tw, tco, tci, order, mode, inp_slots,
                                                wgt_slots, acc_slots, plan))  # fmt: skip
            if out and not g.diagonal and tci < g.CIB:
                break  # the largest ci group that fits is enough
        if out and not g.diagonal:
            break
    return out


def schedule(layer: ConvLayer | LayerGeometry, config: HardwareConfig | None = None, *,
             refine: int = 2, bias_mode: str | None = None, loop_order: str | None = None,
             refine_budget: int = 6000) -> Schedule:  # fmt: skip
    """The best legal schedule for `layer` by the cost model, then by the timing model.

    `refine`: how many of the best-estimated candidates to emit and time with the simulator's
    timing model (0: trust the estimate); candidates whose programs would exceed
    `refine_budget` instructions are not timed. `bias_mode` / `loop_order` force a choice.
    """
    c = config or DEFAULT_CONFIG
    g = layer.geometry if isinstance(layer, ConvLayer) else layer
    modes = BIAS_MODES if bias_mode is None else (bias_mode,)
    orders = LOOP_ORDERS if loop_order is None else (loop_order,)
    for m in modes:
        if m not in BIAS_MODES:
            raise ValueError(f"bias_mode {m!r} is not one of {', '.join(BIAS_MODES)}")
    for o in orders:
        if o not in LOOP_ORDERS:
            raise ValueError(f"loop_order {o!r} is not one of {', '.join(LOOP_ORDERS)}")
    cands = candidates(g, c, modes, orders)
    if not cands:
        raise LayerError(f"no tiling of {g.kind} layer {g.H}x{g.W}x{g.C}->{g.O} fits on chip")
    scored = sorted(((estimate(s, c).cycles, i, s) for i, s in enumerate(cands)))
    best = [replace(s, estimated_cycles=e) for e, _, s in scored[: max(1, refine)]]
    if refine <= 0 or not isinstance(layer, ConvLayer):
        return best[0]
    from qaccel.backends.vta.emit import emit
    from qaccel.backends.vta.simulator import timing

    timed = []
    for s in best:
        if _step_count(s) * 12 > refine_budget and timed:
            continue
        prog = emit(layer, s, c)
        timed.append((timing(prog.program, c).total_cycles, s, prog))
    cycles, s, _ = min(timed, key=lambda t: t[0])
    return replace(s, simulated_cycles=int(cycles))


def _step_count(s: Schedule) -> int:
    return s.tiles_y * s.tiles_x * s.co_groups * s.ci_groups


def roofline_cycles(g: LayerGeometry, config: HardwareConfig | None = None) -> int:
    """`conv2d_roofline` / `gemm_roofline` of the layer (docs/isa.md §9): the lower bound the
    benchmarks compare with. Depthwise counts its diagonal MACs (one block per tap)."""
    from qaccel.backends.vta.simulator import conv2d_roofline, gemm_roofline, roofline

    c = config or DEFAULT_CONFIG
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
    back to back, so no schedule beats max(GEMM + tail, memory)."""
    c = config or DEFAULT_CONFIG
    rows = g.OH * g.OW * g.COB
    tail = rows * min(tail_cycles_per_row(g, m, c) for m in ("alu",))
    gemm = g.macs // (g.block * g.block) * c.gemm_cycles_per_uop
    return max(gemm + tail, roofline_cycles(g, c))


__all__ = [
    "ConvLayer", "LayerGeometry", "LayerError", "Schedule", "BufferPlan", "Step", "Estimate",
    "schedule", "estimate", "candidates", "fused_bias", "dense_requantize_host",
    "roofline_cycles", "alu_bound_cycles",
]  # fmt: skip
