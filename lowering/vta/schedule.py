"""Layer scheduling for the VTA-like accelerator: tiled loop nests chosen with a cost model.

One accelerator layer is a quantized convolution, depthwise convolution or matrix product with
its fused tail (`q.conv2d + q.bias_add + q.requantize + q.relu`, or the `q.dense` /
`q.depthwise_conv2d` equivalents), described by a `ConvLayer`. `schedule(layer, config)`
returns a `Schedule`: the explicit loop structure that `lowering/vta/emit.py` turns into an
instruction stream, small enough to be carried by an IR op (`Schedule.tiling()` gives the
fields, `make_schedule(layer, config, **tiling)` rebuilds it):

    for tile in output tiles (tile_h x tile_w pixels)     | loop_order "spatial": tiles outer,
      for co group (tile_co blocks of 16 channels)        | "channel": co groups outer
        for ci group (tile_ci blocks of 16 channels)      | reduction, innermost
          LOAD INP frame / LOAD WGT chunk (unless already in a slot) ; GEMM
        (after the last ci group) requantize tail on the accumulator tile ; STORE

Every buffer is split into slots (`inp_slots`, `wgt_slots`, `acc_slots`): a chunk keeps its
slot while it is reused and the next chunk loads into another, so with two or more slots the
load of step i+1 overlaps the GEMM of step i and the store of tile j overlaps tile j+1 (VTA's
"virtual threads"); when every chunk of a buffer fits, each gets its own slot and is loaded
exactly once. `plan_steps` fixes the slots and the load order (with a one-chunk prefetch at
the start of each run of steps sharing a chunk); the emitter derives the dependency tokens.

The search enumerates legal tilings (buffer capacities, micro-op field widths), ranks them with
`quick_estimate` (closed form: busiest module or the DRAM bus, plus prologue and epilogue),
re-ranks the best with `estimate` (a step-level model of the three modules that follows the
emitter's slots and tokens; within about 1% of the simulator's timing model on MobileNetV2 and
ResNet-50 layers) and can time the best few with the simulator's timing model (`refine`).

Arithmetic (docs/isa.md §7). Inputs are fed raw and padded with the input zero point (SETPAD),
the zero-point term is folded into the bias, `qfused_bias = bias - zp_in * sum(w)`. The tail on
each accumulator tile is

    reset + GEMM bias (bias_mode "gemm") | reset + ALU ADD bias ("alu") | LOAD ACC bias ("dma")
    GEMM ...               (the convolution accumulates onto the tile)
    [ALU SHR -left]  ALU RDMUL M  [ALU RSHR right]    TFLite's MultiplyByQuantizedMultiplier
    ALU MAX lo - zp_out ; ALU MIN hi - zp_out           clamp first: the zero point add can
    GEMM +zp_out                                         then never wrap around int32
    STORE OUT

The output zero point is added by a one-block GEMM (a constant input row [1, 0, ...] times a
constant weight tile whose column 0 holds zp_out): one cycle per row instead of the ALU's two.
Per-tensor shifts are immediates; multipliers (31 bits) always come from a parameter row.

With VTA's ISA this tail costs 11-12 compute-module cycles per accumulator row (2 more with a left shift),
on the same module as the GEMM, which runs (input blocks x taps) cycles per row: a 1x1
convolution with 32 input channels spends 2 cycles in the GEMM for 11 in the tail.
`alu_bound_cycles` is therefore the bound to compare schedules with; the roofline (GEMM and
DRAM only) is below it by 3.1x on average on MobileNetV2's convolutions with >= 16 input
channels and by 1.65x on ResNet-50's; the chosen schedules are within 2.8% and 0.9% of it.

Decisions:
* bias: the method's two modes are implemented, (a) "alu": reset, GEMM, ALU ADD of a bias
  row (3 cycles per row), (b) "dma": LOAD ACC of the bias rows into the tile, the GEMM
  accumulates onto them (4 bus cycles per row, on the compute module), and a third, "gemm":
  reset, then a one-cycle GEMM of the constant input row [127]*15 + [1] with per-block int8
  "digit" tiles (`bias_tiles`) adds the bias (2 cycles per row), available when every
  |fused bias| <= ~241,000 (97% of MobileNetV2's accumulator rows, 40% of ResNet-50's). The
  search starts from the cheapest available mode and tries the others on its best tilings.
* bias mode "store" (hardware configs with `store_requant`, docs/isa.md §6.3): the store
  module's output stage adds the bias and requantizes (STORE OUTQ, one parameter block of
  `PARAM_ROWS` rows per output block) and clears the rows it stored, so the compute
  module runs the GEMMs only (a reset when a slot is first used) and the tail overlaps them:
  MobileNetV2's convolutions come within 1.06x of the roofline, ResNet-50's within 1.02x.
* FULLY_CONNECTED: LiteRT's reference kernel requantizes in double; no fixed-point multiplier
  is provably equal over the accumulator range, so the accelerator stores the int32
  accumulators (bias included, STORE ACC) and `dense_requantize_host` finishes in double.
* depthwise: runs on the accelerator with one (generalized) diagonal weight tile per output
  block and tap: 1/16 of the GEMM's MACs are useful, but the GEMM part is 9 of the 21 cycles
  per output row (the tail is the rest), so a perfect depthwise unit would save at most 43%,
  and keeping MobileNetV2's blocks in one accelerator partition avoids pack/unpack.
* padding: any top/bottom padding (beyond 15 rows from a DRAM row of zero points), left/right
  up to 15 (LOAD's pad fields); dilation and rectangular kernels are supported.
* not supported (`LayerError`, the layer stays on the CPU): grouped convolution, non-zero
  filter zero points, batch > 1 for convolutions, left/right padding > 15, tilings that do not
  fit on chip (e.g. more than ~2000 output blocks of parameters).
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

import numpy as np
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.targets.vta.isa import PARAM_ROWS

KINDS = ("conv", "depthwise", "dense")
LOOP_ORDERS = ("spatial", "channel")
BIAS_MODES = ("alu", "dma", "gemm", "store")
BIAS_DIGIT = 127  # the "gemm" bias mode's constant input row: [127] * 15 + [1]
MAX_PAD = 15  # LOAD's 4-bit padding fields
MAX_STRIDE = 0xFFFF  # LOAD/STORE 16-bit x_stride


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

    `geometry` is derived once at construction: treat a layer as immutable and make variants
    with `dataclasses.replace`.
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
    small_bias: bool  # every fused bias fits the one-cycle bias GEMM (`bias_tiles`)
    int32_output: bool  # STORE ACC (dense with double requantization)
    input_zero_point: int

    @cached_property
    def CIB(self) -> int:
        return _cdiv(self.C, self.block)

    @cached_property
    def COB(self) -> int:
        return _cdiv(self.O, self.block)

    @cached_property
    def taps(self) -> int:
        return self.KH * self.KW

    @cached_property
    def rows(self) -> int:  # dense: input rows
        return self.W

    @cached_property
    def diagonal(self) -> bool:
        """Output block b reads only input block b // depth_multiplier (depthwise)."""
        return self.kind == "depthwise"

    @cached_property
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

    @cached_property
    def macs(self) -> int:
        """MACs the GEMM core performs (channels padded to blocks, 256 per block)."""
        per_pixel = self.COB * (1 if self.diagonal else self.CIB) * self.taps
        return self.OH * self.OW * per_pixel * self.block * self.block

    @cached_property
    def useful_macs(self) -> int:
        cin = 1 if self.diagonal else self.C
        return self.OH * self.OW * self.O * cin * self.taps

    @cached_property
    def _memo(self) -> dict:
        """Values the search derives from the geometry alone, computed once (hashing the
        geometry for a global cache costs as much as most of them)."""
        return {}


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
    if kind != "dense" and max(W * sh, OW) > MAX_STRIDE:
        raise LayerError(f"{where}: rows of {W} pixels exceed the 16-bit LOAD/STORE row stride")
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
        has_bias=True, small_bias=False, int32_output=int32_output,
        input_zero_point=layer.input_zero_point,
    )  # fmt: skip
    fused = fused_bias(layer, geometry)
    small = bias_tiles(fused, geometry.COB, geometry.block) is not None
    return replace(geometry, has_bias=bool(np.any(fused != 0)), small_bias=small)


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


def bias_tiles(fused: np.ndarray, cob: int, block: int = 16):
    """Weight tiles `[cob][16 out][16 in]` (int8) that add `fused` to every accumulator row
    in one GEMM cycle, with the constant input row `[127] * 15 + [1]`: lane j gets
    127 * sum(w[j][:15]) + w[j][15]. None when some |bias| exceeds what int8 digits reach
    (about 127 * 15 * 127)."""
    b = np.zeros(cob * block, np.int64)
    b[: len(fused)] = fused
    high = np.round(b / BIAS_DIGIT).astype(np.int64)  # |low| <= 63
    low = b - BIAS_DIGIT * high
    n = block - 1
    base, rem = np.divmod(high, n)  # high = n * base + rem, 0 <= rem < n
    digits = base[:, None] + (np.arange(n)[None, :] < rem[:, None])
    if digits.min(initial=0) < -128 or digits.max(initial=0) > 127:
        return None
    tiles = np.concatenate([digits, low[:, None]], axis=1).astype(np.int8)
    return tiles.reshape(cob, block, block)


def bias_row(block: int = 16) -> np.ndarray:
    """The constant input row of the "gemm" bias mode."""
    row = np.full(block, BIAS_DIGIT, np.int8)
    row[-1] = 1
    return row


def dense_requantize_host(layer: ConvLayer, acc: np.ndarray) -> np.ndarray:
    """The host half of a dense layer with double-precision requantization: int32
    accumulators that already include the fused bias -> int8, as LiteRT's reference
    FULLY_CONNECTED (and `q.requantize` with `scale` + `q.relu`) computes it."""
    from qaccel.kernels import arithmetic as ar

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
        g = self.geometry
        ty = [(i * self.tile_h, min(self.tile_h, g.OH - i * self.tile_h))
              for i in range(self.tiles_y)]  # fmt: skip
        tx = [(i * self.tile_w, min(self.tile_w, g.OW - i * self.tile_w))
              for i in range(self.tiles_x)]  # fmt: skip
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
        for tile, (s, c) in enumerate(order):
            (oy0, th), (ox0, tw) = spatial[s]
            co0, nco = cos[c]
            for r, (ci0, nci) in enumerate(cis):
                ci0, nci = g.ci_range(co0, nco, ci0, nci)
                yield Step(tile, s, oy0, th, ox0, tw, c, co0, nco, ci0, nci,
                           r == 0, r == len(cis) - 1)  # fmt: skip

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


@lru_cache(maxsize=4096)
def pixel_block(nco: int, reduction: int, th: int, tw: int) -> tuple[int, int] | None:
    """Output pixels (uy, ux) each micro-op block enumerates, so that two consecutive GEMM
    iterations never write the same accumulator row (VTA's pipeline rule): micro-ops run over
    (reduction, co, uy, ux) with the pixel loops outside. None: a single output row with a
    reduction longer than one, which needs a split accumulator."""
    if nco >= 2 or reduction == 1:
        return 1, 1
    dx, dy = _smallest_factor(tw), _smallest_factor(th)
    if dx and (not dy or dx <= dy):
        return 1, dx
    if dy:
        return dy, 1
    return None


def _smallest_factor(n: int) -> int:
    """The smallest divisor >= 2 of n (0 for n = 1)."""
    for d in range(2, int(n**0.5) + 1):
        if n % d == 0:
            return d
    return n if n > 1 else 0


def max_kernel(g: LayerGeometry, th: int, tw: int, tco: int, tci: int) -> int:
    """Micro-ops of the largest GEMM kernel of a tiling, over its edge tiles and groups."""
    hs = {th, g.OH - (_cdiv(g.OH, th) - 1) * th}
    ws = {tw, g.OW - (_cdiv(g.OW, tw) - 1) * tw}
    cos = {tco, g.COB - (_cdiv(g.COB, tco) - 1) * tco}
    cis = {1} if g.diagonal else {tci, g.CIB - (_cdiv(g.CIB, tci) - 1) * tci}
    best = 0
    for h in hs:
        for w in ws:
            for co in cos:
                for ci in cis:
                    red = g.taps * ci
                    pb = pixel_block(co, red, h, w)
                    best = max(best, red if pb is None else red * co * pb[0] * pb[1])
    return best


def param_layout(g: LayerGeometry, bias_mode: str) -> dict[str, tuple[int, int]]:
    """ACC parameter rows: kind -> (first row, rows per output block; 0 = one shared row).
    Bias mode "store" has one kind, "store": `PARAM_ROWS` rows per block, read by the
    store module's output stage (STORE OUTQ)."""
    rows: dict[str, tuple[int, int]] = {}
    if bias_mode == "store":
        return {"store": (0, PARAM_ROWS)}
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
    key = ("param_rows", bias_mode)
    rows = g._memo.get(key)
    if rows is None:
        lay = param_layout(g, bias_mode)
        rows = max((start + (g.COB * per if per else 1) for start, per in lay.values()), default=0)
        g._memo[key] = rows
    return rows


@lru_cache(maxsize=16)
def _depths(config: HardwareConfig) -> tuple[int, int, int, int]:
    """Buffer depths (uop, inp, wgt, acc) in elements."""
    return tuple(config.depth(key) for key in ("uop", "inp", "wgt", "acc"))  # type: ignore[return-value]


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
    """Compute-module cycles per accumulator row of the init + tail (GEMM/ALU rows). Bias mode
    "store" has none: the store module requantizes and clears the rows it stores, so only the
    first tile of each accumulator slot is reset."""
    alu, gemm = config.alu_cycles_per_uop, config.gemm_cycles_per_uop
    if bias_mode == "store":
        return 0
    c = 0
    if bias_mode != "dma" or not g.has_bias:
        c += gemm  # reset
        if g.has_bias:
            c += gemm if bias_mode == "gemm" else alu
    for op in g.tail:
        c += {"lsh": alu, "rdmul": alu, "rshr": alu, "clamp": 2 * alu, "zp": gemm}[op]
    return c


def _tail_insns(g: LayerGeometry, bias_mode: str) -> int:
    if bias_mode == "store":
        return 0
    n = 1 + (1 if g.has_bias and bias_mode != "dma" else 0)
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


def _merged_frames(g: LayerGeometry, tw: int) -> bool:
    """Whether a typical frame of `tw`-wide tiles loads in one LOAD (for the quick model)."""
    if g.kind == "dense" or (g.KH == 1 and (g.row_subsample or g.OH == 1)):
        return g.kind == "dense" or g.H * g.W <= MAX_STRIDE
    return (g.KW == 1 and tw >= g.OW and g.pad_t == g.pad_b == 0 and not g.row_subsample
            and g.H * g.W <= MAX_STRIDE)  # fmt: skip


def quick_estimate(sched: Schedule, config: HardwareConfig | None = None) -> int:
    """Closed-form cycle estimate used to prune the search: prologue + the busiest of compute,
    load, store and the DRAM bus + epilogue (no transient stalls; see `estimate`)."""
    c = config or DEFAULT_CONFIG
    g = sched.geometry
    I, setup, bw = c.insn_issue_cycles, c.dma_setup_cycles, c.bus_width_bytes
    blk = g.block
    K = g.taps
    th, tw, tco, tci = sched.tile_h, sched.tile_w, min(sched.tile_co, g.COB), sched.tile_ci
    Ty, Tx, G, R = sched.tiles_y, sched.tiles_x, sched.co_groups, sched.ci_groups
    T = Ty * Tx
    sy, fy = _axis_sums(g, th, True)
    sx, fx = _axis_sums(g, tw, False)
    real_pass, frame_pass = sy * sx, fy * fx
    chunk_ci = g.ci_range(0, tco, 0, 0)[1] if g.diagonal else min(tci, g.CIB)
    ci_per_pass = (g.COB + g.depth_multiplier - 1) // g.depth_multiplier if g.diagonal else g.CIB
    if g.diagonal:
        inp_passes, inp_chunks = 1, T * G
        w_passes = 1 if (sched.loop_order == "channel" or sched.wgt_slots >= G) else T
    else:
        if sched.loop_order == "spatial":
            inp_passes = 1 if (R == 1 or sched.inp_slots >= R + 1) else G
            w_passes = 1 if (G * R == 1 or sched.wgt_slots >= G * R) else T
        else:
            inp_passes = 1 if (T * R == 1 or sched.inp_slots >= T * R) else G
            w_passes = 1 if (R == 1 or sched.wgt_slots >= R + 1) else T
        inp_chunks = T * R * inp_passes
    inp_bytes = inp_passes * real_pass * ci_per_pass * blk
    pad_rows = inp_passes * (frame_pass - real_pass) * ci_per_pass
    merged = _merged_frames(g, tw)
    inp_loads = inp_chunks * (1 if merged else max(1, chunk_ci))
    wgt_bytes = w_passes * g.COB * (1 if g.diagonal else g.CIB) * K * blk * blk
    wgt_loads = w_passes * G * R
    inp_time = inp_loads * (I + setup) + _cdiv(inp_bytes + pad_rows * blk, bw)
    wgt_time = wgt_loads * (I + setup) + _cdiv(wgt_bytes, bw)
    load = inp_time + wgt_time
    # With a single slot a reloaded chunk cannot overlap the GEMMs that read the previous one.
    serial = (inp_time if sched.inp_slots == 1 and inp_chunks > 1 else 0) + (
        wgt_time if sched.wgt_slots == 1 and wgt_loads > 1 else 0
    )
    out_eb = 4 * blk if g.int32_output else blk
    out_bytes = g.OH * g.OW * g.COB * out_eb
    tiles = T * G
    n_store = tiles if (g.kind == "dense" or tw >= g.OW) else T * g.COB
    store = n_store * (I + setup) + _cdiv(out_bytes, bw)
    rows = g.OH * g.OW * g.COB
    gemm = (g.macs // (blk * blk)) * c.gemm_cycles_per_uop
    tail = rows * tail_cycles_per_row(g, sched.bias_mode, c)
    insns = T * G * R + tiles * _tail_insns(g, sched.bias_mode)
    compute_dma = 0
    dma_bias = g.has_bias and sched.bias_mode == "dma"
    if dma_bias:
        compute_dma = tiles * (1 if g.kind == "dense" else tco) * (I + setup)
        compute_dma += _cdiv(rows * 4 * blk, bw)
    param_bytes = n_param_rows(g, sched.bias_mode) * 4 * blk
    red = K * (1 if g.diagonal else min(tci, g.CIB))
    pb = pixel_block(tco, red, min(th, g.OH), min(tw, g.OW)) or (1, 1)
    kernel = red * tco * pb[0] * pb[1]
    combos = min(T * G * R, sched.inp_slots * sched.acc_slots * sched.wgt_slots, 8)
    uops = kernel * combos
    uop_depth = _depths(c)[0]
    if uops > uop_depth:  # kernels reloaded every step
        compute_dma += T * G * R * (I + setup + _cdiv(kernel * 4, bw))
        uops = uop_depth
    preamble = 2 * (I + setup) + _cdiv(param_bytes + 4 * uops, bw)
    compute = gemm + tail + insns * I + compute_dma + preamble + serial
    bus = _cdiv(inp_bytes + wgt_bytes + out_bytes + param_bytes + 4 * uops, bw)
    if dma_bias:
        bus += _cdiv(rows * 4 * blk, bw)
    fr, fc = frame_shape(g, min(th, g.OH), min(tw, g.OW))
    first_w = tco * (1 if g.diagonal else min(tci, g.CIB)) * K * blk * blk
    first_loads = (1 if merged else chunk_ci) + 1
    prologue = first_loads * (I + setup) + _cdiv(
        chunk_ci * fr * fc * blk + first_w + param_bytes + 4 * uops, bw
    )
    last_rows = min(th, g.OH) * min(tw, g.OW) * tco
    epilogue = (I + setup) * (1 if tw >= g.OW else tco) + _cdiv(last_rows * out_eb, bw)
    steady = max(compute - preamble, load - first_loads * (I + setup), store, bus)
    return int(prologue + steady + epilogue)


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
    I, setup, bw = c.insn_issue_cycles, c.dma_setup_cycles, c.bus_width_bytes
    blk = g.block
    K = g.taps
    alu, gemm_c = c.alu_cycles_per_uop, c.gemm_cycles_per_uop
    dma_bias = g.has_bias and sched.bias_mode == "dma"
    store_tail = sched.bias_mode == "store"
    out_eb = 4 * blk if g.int32_output else blk
    per_row = tail_cycles_per_row(g, sched.bias_mode, c)
    # The tail after the GEMMs (the reset that starts a tile is counted with its first step).
    after_gemm = per_row if (dma_bias or store_tail) else per_row - gemm_c
    n_tail = _tail_insns(g, sched.bias_mode)
    slot_ready: dict = {}
    last_use: dict = {}  # slot -> step index whose GEMM read it last
    cend: list[int] = []
    store_end: list[int] = []
    kernels: dict = {}
    l_end = s_free = bus_bytes = 0
    load_busy = store_busy = compute_busy = 0
    param_bytes = n_param_rows(g, sched.bias_mode) * 4 * blk
    c_end = 2 * (I + setup) + _cdiv(param_bytes, bw)  # the parameter load (uops added below)
    prologue = None
    inp_loads: dict = {}  # frame -> (bytes, load cycles): frames repeat across output groups
    plans = plan_steps(sched)
    n_steps = len(plans)
    for n, sp in enumerate(plans):
        st, islot, wslot = sp.step, sp.inp_slot, sp.wgt_slot
        for kind, ch, slot, part in sp.loads:
            if kind == "inp":
                frame = (ch.oy0, ch.th, ch.ox0, ch.tw, ch.nci)
                found = inp_loads.get(frame)
                if found is None:
                    fr, _, _, (_, yreal) = frame_rows(g, ch.oy0, ch.th)
                    fc, _, (_, xreal) = frame_cols(g, ch.ox0, ch.tw)
                    nbytes = ch.nci * yreal * xreal * blk
                    pad = ch.nci * (fr * fc - yreal * xreal) * blk
                    ldur = frame_loads(g, ch) * (I + setup) + _cdiv(nbytes, bw) + _cdiv(pad, bw)
                    found = inp_loads[frame] = (nbytes, ldur)
                nbytes, ldur = found
            else:
                blocks = ch.nco if part is None else 1
                nbytes = blocks * (1 if g.diagonal else ch.nci) * K * blk * blk
                ldur = I + setup + _cdiv(nbytes, bw)
            bus_bytes += nbytes
            wait = last_use.get((kind, slot), -1)
            l_end = max(l_end, cend[wait] if wait >= 0 else 0) + ldur
            load_busy += ldur
            slot_ready[(kind, slot)] = l_end
        aslot = st.tile % sched.acc_slots
        red = K * (1 if g.diagonal else st.nci)
        pb = pixel_block(st.nco, red, st.th, st.tw)
        kernels[(st.th, st.tw, st.nco, st.nci, islot, wslot, aslot)] = (
            red if pb is None else red * st.nco * pb[0] * pb[1]
        )
        kernels[(aslot, st.co0)] = 6  # the tail's single micro-ops
        rows = st.th * st.tw * st.nco
        dur = I + red * rows * gemm_c
        start = max(c_end, slot_ready[("inp", islot)], slot_ready[("wgt", wslot)])
        if st.first:
            split = pb is None
            if st.tile >= sched.acc_slots:
                start = max(start, store_end[st.tile - sched.acc_slots])
            if store_tail:  # rows are reset once per slot, then cleared by the stores
                if st.tile < sched.acc_slots or split:
                    dur += I + rows * gemm_c
            elif dma_bias:
                nl = 1 if (g.kind == "dense" or st.th * st.tw == 1) else st.nco
                dur += nl * (I + setup) + _cdiv(rows * 4 * blk, bw)
                bus_bytes += rows * 4 * blk
            else:
                dur += I + rows * gemm_c
        if st.last:
            dur += n_tail * I + rows * after_gemm
            if split:
                dur += I + alu
        if prologue is None:
            prologue = start
        c_end = start + dur
        compute_busy += dur
        cend.append(c_end)
        last_use[("inp", islot)] = last_use[("wgt", wslot)] = n
        if st.last:
            whole_rows = st.tw == g.OW and g.OH * g.OW <= MAX_STRIDE
            n_st = 1 if (g.kind == "dense" or whole_rows) else st.nco
            nbytes = rows * out_eb
            sdur = n_st * (I + setup) + _cdiv(nbytes, bw)
            s_free = max(s_free, c_end) + sdur
            store_busy += sdur
            store_end.append(s_free)
            bus_bytes += nbytes
    uops = sum(kernels.values())
    depth = _depths(c)[0]
    if uops <= depth:
        extra = _cdiv(4 * uops, bw)  # one LOAD UOP in the prologue
    else:
        biggest = max(v for k, v in kernels.items() if len(k) == 7)
        extra = n_steps * (I + setup + _cdiv(4 * biggest, bw))
    bus_bytes += 4 * min(uops, depth) + param_bytes
    total = max(c_end + extra, s_free + (extra if uops > depth else 0)) + I
    bus = _cdiv(bus_bytes, bw)
    total = max(total, bus)
    return Estimate(int(total), int(compute_busy + extra), int(load_busy), int(store_busy),
                    int(bus), int(prologue or 0), int(total - c_end))  # fmt: skip


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


@dataclass(frozen=True)
class StepPlan:
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
    steps = list(sched.steps())
    n = len(steps)
    inp_keys = [(st.spatial, st.ci0, st.nci) for st in steps]
    wgt_keys = [(st.co0, st.nco, st.ci0, st.nci) for st in steps]

    def next_different(keys):
        out = [-1] * n
        nxt = -1
        for i in range(n - 2, -1, -1):
            if keys[i + 1] != keys[i]:
                nxt = i + 1
            out[i] = nxt
        return out

    inp_lru, wgt_lru = _SlotLRU(sched.inp_slots), _SlotLRU(sched.wgt_slots)
    kinds = (("inp", inp_lru, inp_keys, next_different(inp_keys)),
             ("wgt", wgt_lru, wgt_keys, next_different(wgt_keys)))  # fmt: skip
    acc_slots = sched.acc_slots
    plans = []
    later: dict[int, list] = {}  # step index -> weight parts to load there
    for i, st in enumerate(steps):
        loads = []
        islot, new = inp_lru.claim(inp_keys[i])
        if new:
            loads.append(("inp", st, islot, None))
        wslot, new = wgt_lru.claim(wgt_keys[i])
        if new:
            loads.append(("wgt", st, wslot, None))
        for kind, lru, keys, nxt in kinds:
            key = keys[i]
            if lru.n_slots < 2 or nxt[i] < 0 or (i > 0 and keys[i - 1] == key):
                continue  # one slot, nothing ahead, or not the first step of a run
            ahead_key = keys[nxt[i]]
            if ahead_key in lru.chunks:
                continue
            ahead = steps[nxt[i]]
            slot, _ = lru.claim(ahead_key)
            run = nxt[i] - i
            if kind == "wgt" and run > 1 and ahead.nco > 1:
                for part in range(ahead.nco):
                    later.setdefault(i + part * run // ahead.nco, []).append(
                        (kind, ahead, slot, part)
                    )
            else:
                loads.append((kind, ahead, slot, None))
            lru.chunks.move_to_end(key)  # keep the chunk this step uses the most recent
        loads.extend(later.pop(i, ()))
        plans.append(StepPlan(st, islot, wslot, st.tile % acc_slots, tuple(loads)))
    return plans


# --------------------------------------------------------------------------------------------
# The search


def _distinct_splits(n: int, limit: int | None = None) -> list[int]:
    """Distinct tile sizes ceil(n / k), largest first."""
    out = sorted({_cdiv(n, k) for k in range(1, n + 1)}, reverse=True)
    return out if limit is None else out[:limit]


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
    if max_kernel(g, th, tw, tco, nci) > depth_uop // 2:  # room for two at least
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


def make_schedule(layer: ConvLayer | LayerGeometry, config: HardwareConfig | None = None, *,
                  tile_h: int, tile_w: int, tile_co: int, tile_ci: int | None = None,
                  loop_order: str = "spatial", bias_mode: str = "alu",
                  inp_slots: int | None = None, wgt_slots: int | None = None,
                  acc_slots: int | None = None) -> Schedule:  # fmt: skip
    """A schedule with the given tiling (sizes clipped to the layer), buffer slots as the
    search would choose them unless given; raises `LayerError` when it does not fit on chip.
    Rebuilds a `Schedule` from its loop-structure fields (e.g. carried by an IR op)."""
    c = config or DEFAULT_CONFIG
    g = layer.geometry if isinstance(layer, ConvLayer) else layer
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
    # The search reads the geometry's shapes and tail only, never the input zero point
    # (the emitter's SETPAD value): layers that differ only there share one search.
    best = _best(replace(g, input_zero_point=0), c, modes, orders, bias_mode is None,
                 model_steps)  # fmt: skip
    return replace(best, geometry=g)


@lru_cache(maxsize=1024)
def _best(g: LayerGeometry, c: HardwareConfig, modes: tuple[str, ...], orders: tuple[str, ...],
          try_modes: bool, model_steps: int) -> Schedule:
    """The first of `_search`, memoized: MobileNetV2 and ResNet-50 repeat layer shapes
    (53 layers, 31 searches; 54 layers, 22)."""
    return _search(g, c, modes, orders, try_modes, model_steps)[0]


def _search(g: LayerGeometry, c: HardwareConfig, modes: tuple[str, ...],
            orders: tuple[str, ...], try_modes: bool, model_steps: int) -> list[Schedule]:  # fmt: skip
    """The schedules `estimate` modeled, best first (see `schedule`); `try_modes`: the bias
    mode is free (not forced)."""
    # Per accumulator row, the bias GEMM costs 2 cycles (reset + add), the ALU 3, the DMA 4 bus
    # cycles on the compute module: search with the cheapest available, then try the others
    # on the best tilings only (they reserve different buffer space).
    primary = ("store" if store_requant(g, c) and "store" in modes
               else "gemm" if g.has_bias and g.small_bias else "alu")  # fmt: skip
    cands = candidates(g, c, (primary,) if try_modes else modes, orders)
    if not cands:
        cands = candidates(g, c, modes, orders, exhaustive=True)
    if not cands:
        raise LayerError(f"no tiling of {g.kind} layer {g.H}x{g.W}x{g.C}->{g.O} fits on chip")
    quick = sorted((quick_estimate(s, c), i) for i, s in enumerate(cands))
    if try_modes and g.has_bias:
        for _, i in quick[:4]:
            for mode in BIAS_MODES:
                other = None if mode == primary else with_bias_mode(cands[i], mode, c)
                if other is not None:
                    cands.append(other)
                    quick.append((quick_estimate(other, c), len(cands) - 1))
        quick.sort()
    modeled = []
    walked = 0
    for _, i in quick:
        n = _step_count(cands[i])
        if len(modeled) >= 3 and walked + n > model_steps:
            break
        walked += n
        modeled.append((estimate(cands[i], c).cycles, i))
    modeled.sort()
    return [replace(cands[i], estimated_cycles=e) for e, i in modeled]


def _refined(layer: ConvLayer, best: list[Schedule], c: HardwareConfig, refine: int,
             refine_insns: int) -> Schedule:
    """The best of the `refine` first of `best` by the simulator's timing model."""
    from qaccel.lowering.vta.emit import emit
    from qaccel.targets.vta.simulator import timing

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


def roofline_cycles(g: LayerGeometry, config: HardwareConfig | None = None) -> int:
    """`conv2d_roofline` / `gemm_roofline` of the layer (docs/isa.md §9): the lower bound the
    benchmarks compare with. Depthwise counts its diagonal MACs (one block per tap)."""
    from qaccel.targets.vta.simulator import conv2d_roofline, gemm_roofline, roofline

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
    back to back, so no schedule beats max(GEMM + tail, memory) (the tail with the cheapest
    bias mode the layer allows)."""
    c = config or DEFAULT_CONFIG
    rows = g.OH * g.OW * g.COB
    modes = available_bias_modes(g, c, ("alu", "gemm", "store"))
    tail = rows * min(tail_cycles_per_row(g, m, c) for m in modes)
    gemm = g.macs // (g.block * g.block) * c.gemm_cycles_per_uop
    return max(gemm + tail, roofline_cycles(g, c))




# --------------------------------------------------------------------------------------------
# Layers from q IR


def layers_from_q(module) -> list[ConvLayer]:
    """Every `q.conv2d` / `q.depthwise_conv2d` / `q.dense` group (+ `q.bias_add`) +
    `q.requantize` (+ `q.relu`) of a module whose filter and bias are constants, as
    `ConvLayer`s named after the group's position (for benchmarks and tests; the accel
    lowering builds layers from its own ops)."""
    from qaccel.dialects import q, tfl

    def const(value):
        owner = value.owner
        return owner.as_array() if isinstance(owner, tfl.ConstOp) else None

    def only_user(value):
        users = list(value.uses)
        return users[0].operation if len(users) == 1 else None

    layers = []
    for op in module.walk():
        if not isinstance(op, (q.Conv2DOp, q.DepthwiseConv2DOp, q.DenseOp)):
            continue
        w = const(op.filter)
        if w is None:
            continue
        nxt = only_user(op.output)
        bias = None
        if isinstance(nxt, q.BiasAddOp):
            bias = const(nxt.bias)
            if bias is None:
                continue
            nxt = only_user(nxt.output)
        if not isinstance(nxt, q.RequantizeOp):
            continue
        rq = nxt
        act = (-128, 127)
        relu = only_user(rq.output)
        if isinstance(relu, q.ReluOp):
            act = (relu.int_prop("min"), relu.int_prop("max"))
        kw = {}
        if not isinstance(op, q.DenseOp):
            kw = {
                "strides": tuple(int(v) for v in op.array_prop("strides")),
                "padding": tuple(int(v) for v in op.array_prop("padding")),
                "dilations": tuple(int(v) for v in op.array_prop("dilations")),
            }
        if isinstance(op, q.DepthwiseConv2DOp):
            kw["depth_multiplier"] = op.int_prop("depth_multiplier")
        if rq.is_double:
            kw["scale"] = rq.array_prop("scale").copy()
        else:
            kw["multiplier"] = rq.array_prop("multiplier").copy()
            kw["shift"] = rq.array_prop("shift").copy()
        kind = {q.Conv2DOp: "conv", q.DepthwiseConv2DOp: "depthwise", q.DenseOp: "dense"}[type(op)]
        layers.append(
            ConvLayer(
                kind, tuple(op.input.type.get_shape()), np.asarray(w).astype(np.int8),
                None if bias is None else np.asarray(bias).astype(np.int32),
                input_zero_point=op.int_prop("input_zero_point"),
                filter_zero_point=op.int_prop("filter_zero_point"),
                requant_input_zero_point=rq.int_prop("input_zero_point"),
                output_zero_point=rq.int_prop("output_zero_point"),
                act_min=act[0], act_max=act[1], name=f"{kind}{len(layers)}", **kw,
            )
        )  # fmt: skip
    return layers


def reference(layer: ConvLayer, x: np.ndarray) -> np.ndarray:
    """The layer computed by the `q` dialect's semantics (`interpreter/q_semantics.py`, the
    numeric reference the accelerator must match bit for bit): accumulate, bias, requantize,
    clamp. `x` is the int8 input tensor; returns int8."""
    from qaccel.interpreter import q_semantics as qs
    from qaccel.dialects import q
    from xdsl.dialects.builtin import TensorType, i8, i32
    from xdsl.ir import Block

    g = layer.geometry
    x = np.asarray(x)
    w = layer.weights

    def t(shape, el=i32):
        return TensorType(el, list(shape))

    xv, wv, accv = Block(arg_types=[t(x.shape, i8), t(w.shape, i8), t((1,))]).args
    zps = {"input_zero_point": q.i32_attr(layer.input_zero_point),
           "filter_zero_point": q.i32_attr(layer.filter_zero_point)}  # fmt: skip
    if g.kind == "dense":
        out_shape = (*x.shape[:-1], g.O)
        op = q.DenseOp.create(operands=[xv, wv], result_types=[t(out_shape)], properties=zps)
        acc = qs.dense(op, x, w)
    else:
        out_shape = (1, g.OH, g.OW, g.O)
        props = {"strides": q.i64_array(layer.strides), "dilations": q.i64_array(layer.dilations),
                 "padding": q.i64_array(layer.padding), **zps}  # fmt: skip
        if g.kind == "conv":
            op = q.Conv2DOp.create(operands=[xv, wv], result_types=[t(out_shape)], properties=props)
            acc = qs.conv2d(op, x, w)
        else:
            props["depth_multiplier"] = q.i32_attr(layer.depth_multiplier)
            op = q.DepthwiseConv2DOp.create(
                operands=[xv, wv], result_types=[t(out_shape)], properties=props
            )
            acc = qs.depthwise_conv2d(op, x, w)
    if layer.bias is not None:
        acc = (acc.astype(np.int64) + np.asarray(layer.bias, np.int64)).astype(np.int32)
    props = {"input_zero_point": q.i32_attr(layer.requant_input_zero_point),
             "output_zero_point": q.i32_attr(layer.output_zero_point)}  # fmt: skip
    if layer.scale is not None:
        props["scale"] = q.f64_array(np.asarray(layer.scale, np.float64).reshape(-1))
    else:
        props["multiplier"] = q.i32_array(np.asarray(layer.multiplier).reshape(-1))
        props["shift"] = q.i32_array(np.asarray(layer.shift).reshape(-1))
    rq = q.RequantizeOp.create(operands=[accv], result_types=[t(out_shape, i8)], properties=props)
    y = qs.requantize(rq, acc)
    return np.clip(y, layer.act_min, layer.act_max).astype(np.int8)


__all__ = [
    "BufferPlan", "ConvLayer", "Estimate", "LayerError", "LayerGeometry", "Schedule", "Step",
    "StepPlan", "alu_bound_cycles", "candidates", "dense_requantize_host", "estimate",
    "fused_bias", "layers_from_q", "make_schedule", "plan_steps", "quick_estimate", "reference",
    "roofline_cycles", "schedule",
]  # fmt: skip
