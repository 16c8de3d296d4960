"""Accelerator layers and their geometry: what the scheduler, cost model and emitter share.

One accelerator layer is a quantized convolution, depthwise convolution or matrix product with
its fused tail (`q.conv2d + q.bias_add + q.requantize + q.relu`, or the `q.dense` /
`q.depthwise_conv2d` equivalents), described by a `ConvLayer`; its `LayerGeometry` holds the
shapes and tail structure without weights (what the search needs). The frame helpers give the
input window an output tile reads (`frame_shape`, `frame_rows`, `frame_cols`) and the order of
the micro-ops that cover it (`pixel_block`, `max_kernel`).

* depthwise: runs on the accelerator with one (generalized) diagonal weight tile per output
  block and tap: 1/16 of the GEMM's MACs are useful, but the GEMM part is 9 of the 21 cycles
  per output row (the tail is the rest), so a perfect depthwise unit would save at most 43%,
  and keeping MobileNetV2's blocks in one accelerator partition avoids pack/unpack.
* padding: any top/bottom padding (beyond 15 rows from a DRAM row of zero points), left/right
  up to 15 (LOAD's pad fields); dilation and rectangular kernels are supported.
* batch: a convolution of N images runs as an outer loop over the images (`batch`), each
  image one pass of the batch-1 loop nest on its own slab of the packed input and output
  (`[N][C/B][H][W][B]`: image n's blocks are contiguous); the schedule is searched for one
  image and every MAC and cycle count is N times one image's. A dense layer's batch is
  its rows (folded into the GEMM's rows: exact, and the weights are loaded once).
* not supported (`LayerError`, the layer stays on the CPU): grouped convolution, non-zero
  filter zero points, left/right padding > 15, tilings that do not fit on chip (e.g. more
  than ~2000 output blocks of parameters).
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache

import numpy as np


KINDS = ("conv", "depthwise", "dense")

BIAS_DIGIT = 127  # the "gemm" bias mode's constant input row: [127] * 15 + [1]
MAX_PAD = 15  # LOAD's 4-bit padding fields
MAX_STRIDE = 0xFFFF  # LOAD/STORE 16-bit x_stride


class LayerError(ValueError):
    """A layer the accelerator cannot run (the message says why); it stays on the CPU."""


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(eq=False)
class ConvLayer:
    """One accelerator layer with its requantization tail, in TFLite's integer terms.

    kind        "conv" (filter OHWI), "depthwise" (filter [1, KH, KW, C * depth_multiplier]) or
                "dense" (filter [O, I]; input [..., I], its leading dimensions are rows).
    input_shape NHWC for conv/depthwise (N images: an outer loop); any shape ending in I for
                dense (every leading dimension is rows).
    bias        int32 [O] or None.
    padding     [top, bottom, left, right]; the padded taps count as the input zero point.
    multiplier, shift   int32, one value or one per output channel: TFLite's fixed-point
                requantization `MultiplyByQuantizedMultiplier` (shift > 0 shifts left).
    scale       float64, one or per channel: double-precision requantization (LiteRT's
                reference FULLY_CONNECTED); the accelerator then stores int32 accumulators.
    requant_input_zero_point, output_zero_point, act_min, act_max: the rest of the tail
                (`q.requantize` / `q.relu`); the result is int8.
    block       channels per block of the packed layout: the hardware's BLOCK_IN = BLOCK_OUT
                (`HardwareConfig.block`); the scheduler refuses a layer of another block.

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
    block: int = 16
    runtime_weights: bool = False
    """The weight tiles are an arena value the program writes before the layer runs (a
    BATCH_MATMUL's rhs, `accel.bmm_operand`), not constants; `weights` is zeros of their shape.
    With a batch, each image has its own tiles, stacked in the image order."""
    runtime_init: bool = False
    """The accumulators start from an int32 arena value, one per output element, that the
    program writes before the layer runs (a BATCH_MATMUL's zero-point correction,
    `accel.bmm_zp_correction`): LOAD ACC instead of a reset."""
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
        images = f"{g.batch}x" if g.batch > 1 else ""
        return (
            f"{g.kind} {images}{g.H}x{g.W}x{g.C} -> {g.OH}x{g.OW}x{g.O} k{g.KH}x{g.KW} "
            f"s{g.sh} p{list(self.padding)}" + (f" d{g.dh}" if g.dh > 1 or g.dw > 1 else "")
            + (" weights from the arena" if self.runtime_weights else "")
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
    int32_output: bool  # STORE ACC (dense, or tokens' 1x1 conv, with double requantization)
    input_zero_point: int
    batch: int = 1  # conv/depthwise: images, each one pass of the loop nest (outer loop)
    runtime_init: bool = False  # accumulators LOADed from run-time values (no reset)

    @cached_property
    def image(self) -> LayerGeometry:
        """The geometry of one image (what the search and the cost model walk)."""
        return self if self.batch == 1 else replace(self, batch=1)

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
        return self.batch * self.OH * self.OW * per_pixel * self.block * self.block

    @cached_property
    def useful_macs(self) -> int:
        cin = 1 if self.diagonal else self.C
        return self.batch * self.OH * self.OW * self.O * cin * self.taps

    @cached_property
    def _memo(self) -> dict:
        """Values the search derives from the geometry alone, computed once (hashing the
        geometry for a global cache costs as much as most of them)."""
        return {}

def _geometry(layer: ConvLayer) -> LayerGeometry:
    kind = layer.kind
    if kind not in KINDS:
        raise LayerError(f"layer kind {kind!r} is not one of {', '.join(KINDS)}")
    if layer.block < 2 or layer.block & (layer.block - 1):
        raise LayerError(f"channel block {layer.block} is not a power of two >= 2")
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
        batch, H, W, KH, KW = 1, 1, rows, 1, 1
        sh = sw = dh = dw = 1
        pads = (0, 0, 0, 0)
    else:
        if len(layer.input_shape) != 4 or layer.input_shape[0] < 1:
            raise LayerError(f"{where}: input must be NHWC, got {list(layer.input_shape)}")
        batch, H, W, C = layer.input_shape
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
        if kind == "depthwise" or (kind == "conv" and (
                (KH, KW, sh, sw, dh, dw) != (1, 1, 1, 1, 1, 1) or any(pads))):  # fmt: skip
            raise LayerError(f"{where}: double-precision requantization is only for dense "
                             "layers and 1x1 convolutions over tokens")  # fmt: skip
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
        m_lo, m_hi, s_lo, s_hi = int(m.min()), int(m.max()), int(s.min()), int(s.max())
        if m_lo < 0 or m_hi >= 2**31:
            raise LayerError(f"{where}: multipliers must be in [0, 2**31)")
        if s_hi > 31 or s_lo < -31:
            raise LayerError(f"{where}: shifts must be in [-31, 31]")
        per_channel = len(m) > 1 and not (m_lo == m_hi and s_lo == s_hi)  # not all the same
        if s_hi > 0:
            tail.append("lsh")
        tail.append("rdmul")
        if s_lo < 0:
            tail.append("rshr")
        tail.append("clamp")
        if layer.output_zero_point != 0:
            tail.append("zp")
    fused = _fused_bias(layer, kind, O)
    return LayerGeometry(
        kind=kind, H=H, W=W, C=C, O=O, KH=KH, KW=KW, sh=sh, sw=sw, dh=dh, dw=dw,
        pad_t=pt, pad_b=pb, pad_l=pl, pad_r=pr, OH=OH, OW=OW, block=layer.block,
        depth_multiplier=layer.depth_multiplier, tail=tuple(tail), per_channel=per_channel,
        has_bias=bool(fused.any()), small_bias=bias_fits(fused, _cdiv(O, layer.block), layer.block),
        int32_output=int32_output, input_zero_point=layer.input_zero_point, batch=batch,
        runtime_init=layer.runtime_init,
    )  # fmt: skip

def fused_bias(layer: ConvLayer, g: LayerGeometry | None = None) -> np.ndarray:
    """int32 `bias - zp_in * sum(w) - requant_input_zero_point` per output channel, wrapping
    like TFLite's int32 arithmetic: padded taps hold zp_in, so the GEMM over raw inputs plus
    this bias is exactly `sum(w * (x - zp_in)) + bias`."""
    g = g or layer.geometry
    return _fused_bias(layer, g.kind, g.O)


def weight_sums(w: np.ndarray, axis: int) -> np.ndarray:
    """`w.sum(axis=axis, dtype=np.int64)` of a 2-D weight array, without an int64 copy; int8
    weights are summed in int32 when no sum can overflow it (fewer than 2^24 terms): the same
    values, twice as fast (MobileNetV2's layers are read two or three times per compile)."""
    if w.dtype == np.int8 and w.shape[axis] < 1 << 24:
        return w.sum(axis=axis, dtype=np.int32).astype(np.int64)
    return w.sum(axis=axis, dtype=np.int64)


def _fused_bias(layer: ConvLayer, kind: str, O: int) -> np.ndarray:
    w = layer.weights
    if kind == "conv":
        wsum = weight_sums(w.reshape(O, -1), 1)
    elif kind == "depthwise":
        wsum = weight_sums(w.reshape(-1, O), 0)
    else:
        wsum = weight_sums(w, 1)
    bias = np.zeros(O, np.int64) if layer.bias is None else np.asarray(layer.bias, np.int64)
    total = bias - layer.input_zero_point * wsum - layer.requant_input_zero_point
    return total.astype(np.int32)  # int64 -> int32 keeps the low 32 bits

def _bias_digits(fused: np.ndarray, cob: int, block: int):
    """The "gemm" bias mode's digits of `fused` (padded to `cob * block` lanes): each lane's
    `BIAS_DIGIT * high + low` (|low| <= 63), `high = (block - 1) * base + rem` spread over its
    `block - 1` digits as `rem` digits of `base + 1` and the others of `base`; and whether
    every digit is an int8 (the one rule of `bias_fits` and `bias_tiles`; no lanes fit)."""
    b = np.zeros(cob * block, np.int64)
    b[: len(fused)] = fused
    high = np.round(b / BIAS_DIGIT).astype(np.int64)  # |low| <= 63
    base, rem = np.divmod(high, block - 1)  # 0 <= rem < block - 1
    fits = base.min(initial=0) >= -128 and (base + (rem > 0)).max(initial=0) <= 127
    return b - BIAS_DIGIT * high, base, rem, bool(fits)


def bias_fits(fused: np.ndarray, cob: int, block: int = 16) -> bool:
    """`bias_tiles(fused, cob, block) is not None`, without building the tiles."""
    return _bias_digits(fused, cob, block)[3]


def bias_tiles(fused: np.ndarray, cob: int, block: int = 16):
    """Weight tiles `[cob][16 out][16 in]` (int8) that add `fused` to every accumulator row
    in one GEMM cycle, with the constant input row `[127] * 15 + [1]`: lane j gets
    127 * sum(w[j][:15]) + w[j][15]. None when some |bias| exceeds what int8 digits reach
    (about 127 * 15 * 127)."""
    low, base, rem, fits = _bias_digits(fused, cob, block)
    if not fits:
        return None
    digits = base[:, None] + (np.arange(block - 1)[None, :] < rem[:, None])
    tiles = np.concatenate([digits, low[:, None]], axis=1).astype(np.int8)
    return tiles.reshape(cob, block, block)


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
    key = ("frame_rows", oy0, th)  # memoized: the search and the emitter ask for each often
    found = g._memo.get(key)
    if found is None:
        found = g._memo[key] = _frame_rows(g, oy0, th)
    return found


def _frame_rows(g: LayerGeometry, oy0: int, th: int) -> tuple[int, int, int, int]:
    if g.kind == "dense":
        return 1, 0, 1, (0, 1)
    fr, _ = frame_shape(g, th, 1)
    y0 = oy0 * g.sh - g.pad_t
    step = g.sh if g.row_subsample else 1
    return fr, y0, step, real_span(y0, fr, step, g.H)


def frame_cols(g: LayerGeometry, ox0: int, tw: int) -> tuple[int, int, tuple[int, int]]:
    """(frame columns, input column of frame column 0, (pad before, real columns))."""
    key = ("frame_cols", ox0, tw)
    found = g._memo.get(key)
    if found is None:
        found = g._memo[key] = _frame_cols(g, ox0, tw)
    return found


def _frame_cols(g: LayerGeometry, ox0: int, tw: int) -> tuple[int, int, tuple[int, int]]:
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


def smallest_factors(n: int) -> np.ndarray:
    """`_smallest_factor` of 0..n as an array (index 0 and 1: 0)."""
    out = np.zeros(n + 1, np.int64)
    for k in range(2, n + 1):
        out[k] = _smallest_factor(k)
    return out


def pixel_block_size(nco, reduction, th, tw, factors: np.ndarray):
    """uy * ux of `pixel_block` over arrays (1 where it is None), `factors` from
    `smallest_factors` (covering th and tw)."""
    dx, dy = factors[tw], factors[th]
    pick = np.where((dx > 0) & ((dy == 0) | (dx <= dy)), dx, np.where(dy > 0, dy, 1))
    return np.where((nco >= 2) | (reduction == 1), 1, pick)


def max_kernels(g: LayerGeometry, th, tw, tco, tci, factors: np.ndarray):
    """`max_kernel` over arrays of tilings (th, tw, tco clipped to the layer, tci the ci
    blocks per group)."""
    hs = (th, g.OH - (-(-g.OH // th) - 1) * th)
    ws = (tw, g.OW - (-(-g.OW // tw) - 1) * tw)
    cos = (tco, g.COB - (-(-g.COB // tco) - 1) * tco)
    cis = (1,) if g.diagonal else (tci, g.CIB - (-(-g.CIB // tci) - 1) * tci)
    best = 0
    for ci in cis:
        red = g.taps * ci
        for co in cos:
            for h in hs:
                for w in ws:
                    best = np.maximum(best, red * co * pixel_block_size(co, red, h, w, factors))
    return best
