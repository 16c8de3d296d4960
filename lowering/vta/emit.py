"""Instruction emission for one scheduled accelerator layer: program, micro-ops, DRAM image.

    prog = emit(layer, schedule(layer, config), config)     # -> LayerProgram
    y = prog.run(x_nhwc)                                      # pack, simulate, unpack

`emit` walks the `Schedule`'s loop nest (`lowering/vta/planning.py`) and produces

* the **DRAM layout** (`LayerProgram.regions`): constants first (packed weights
  OIHW16o16i, or one diagonal tile per output block and tap for depthwise; int32 parameter
  rows: fused bias for bias_mode "alu", -left shift, multiplier, right shift; bias rows for
  "dma"; digit tiles and their input row for "gemm"; the zero-point GEMM's row and tile; a
  row of input zero points for frames in the padding), then the packed input
  (`[ci block][H][W][16]` int8, channels padded with the input zero point; dense
  `[row][ci block][16]`), then the packed output (`[co block][OH][OW][16]` int8, or int32
  `[row][co block][16]` for dense layers that finish on the host). Every region starts on a
  `HardwareConfig.dram_align` boundary (256 bytes, or a larger element) so any memory type
  can address it.
* the **micro-op kernels**: GEMM micro-ops enumerate (input block, tap, output block, pixel
  block) with the output pixels in the instruction's two loops, so a kernel's size does not
  grow with the tile; one kernel per tile shape and slot combination, built with numpy. All
  kernels are loaded once when they fit in the micro-op buffer, else loaded before use into a
  ring (VTA's runtime micro-op cache).
* the **instruction stream** (a `Program`, one compact array) with dependency tokens derived
  from buffer slots: every instruction declares the slots it reads and writes; an access that
  needs an instruction of another module to happen first becomes a push on that instruction
  and a pop on this one. Pops only ever advance to the latest producer needed, so each
  instruction pops at most one token per queue, every pushed token is popped, and the loads of
  step i+1 and the store of tile j overlap the compute of step i / tile j+1 whenever the slots
  allow it. Loads follow `plan_steps` (prefetches, weight chunks split per output block).
* a **batch** of N images (`LayerGeometry.batch`): the loop nest once per image, on image n's
  slabs of the input and output regions (`[image][block][H][W][16]`); the parameters and
  constants are loaded once, and a weight chunk its slot still holds is not loaded again, so
  the images after the first reuse the weights the last pass left (run-time weights,
  `ConvLayer.runtime_weights`, are each image's own: image n's tiles are loaded in its pass).
  The loads of image n+1 overlap the stores of image n as within one image.

With libqaccel_stream built (`cstream.py`), a GEMM layer's whole stream is emitted by it in
one call (`_Emitter.run_c`: `vta_gemm_emit` walks the same loop nest); the step loop here
(`_Emitter.run_py`) is its reference and fallback, and `QACCEL_NO_CGEMM=1` makes it the one
used (the same programs, more slowly).
"""

from __future__ import annotations

import os
from array import array
from dataclasses import dataclass, field
from itertools import chain

import numpy as np
from qaccel.dialects import accel
from qaccel.lowering.vta import cstream
from qaccel.lowering.vta.cstream import StreamDescriptor
from qaccel.targets.vta.alu import output_stage_block
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.targets.vta.isa import (
    FIELD_NAMES,
    FIELDS_DTYPE,
    PARAM_ROWS,
    TOKEN_FIFOS,
    AluOp,
    MemType,
    Module,
    Opcode,
    Program,
    encode,
    encode_uops,
    layout_of,
)
from qaccel.lowering.vta.bias import bias_row, dense_requantize_host, param_layout
from qaccel.lowering.vta.geometry import (
    MAX_STRIDE,
    ConvLayer,
    LayerError,
    bias_tiles,
    frame_cols,
    frame_rows,
    frame_shape,
    fused_bias,
    pixel_block,
)
from qaccel.lowering.vta.planning import Schedule, Step, frame_mode, plan_steps, uses_zp_gemm

_IDX = {name: i for i, name in enumerate(FIELD_NAMES)}
_NF = len(FIELD_NAMES)
LOAD, COMPUTE, STORE = int(Module.LOAD), int(Module.COMPUTE), int(Module.STORE)
# (producer, consumer) -> (producer's push flag, consumer's pop flag)
_TOKEN_FLAGS = {(int(p), int(c)): (push, pop) for p, c, push, pop in TOKEN_FIFOS.values()}
_TOKEN_COLUMNS = {pair: (_IDX[push], _IDX[pop]) for pair, (push, pop) in _TOKEN_FLAGS.items()}


def _align(n: int, alignment: int) -> int:
    return -(-n // alignment) * alignment


def _factors(f, n_out: int, n_in: int) -> tuple[int, int]:
    """Loop factors with those of single-iteration loops zeroed (they are never applied, and
    a tile-sized factor could overflow its field)."""
    return (f[0] if n_out > 1 else 0, f[1] if n_in > 1 else 0)


def _row(opcode: int, **values) -> array:
    """A record's fields (`FIELD_NAMES` order) as int64s: `_Stream.descriptor` joins the
    rows' bytes into one matrix."""
    row = array("q", bytes(8 * _NF))
    row[0] = int(opcode)
    for k, v in values.items():
        row[_IDX[k]] = int(v)
    return row


# Field positions of the rows the stream builders fill (`FIELD_NAMES` order).
(_MEM, _SRAM, _DRAM, _YSIZE, _XSIZE, _XSTRIDE, _YPAD0, _YPAD1, _XPAD0, _XPAD1, _RESET,
 _ITER_OUT, _ITER_IN, _DST_OUT, _DST_IN, _SRC_OUT, _SRC_IN, _WGT_OUT, _WGT_IN, _ALU_OP, _USE_IMM,
 _IMM) = (_IDX[n] for n in (
    "memory_type", "sram_base", "dram_base", "y_size", "x_size", "x_stride", "y_pad_0",
    "y_pad_1", "x_pad_0", "x_pad_1", "reset", "iter_out", "iter_in", "dst_factor_out",
    "dst_factor_in", "src_factor_out", "src_factor_in", "wgt_factor_out", "wgt_factor_in",
    "alu_opcode", "use_imm", "imm"))  # fmt: skip
_EMPTY = {int(op): _row(op) for op in Opcode}  # a zero row per opcode (copied by slicing)
_GEMM, _ALU = int(Opcode.GEMM), int(Opcode.ALU)


# --------------------------------------------------------------------------------------------
# The result


@dataclass(frozen=True)
class Placement:
    """Where one layer's data lives in a DRAM image it shares with other layers (byte offsets,
    multiples of `HardwareConfig.dram_align`): its constants, its input and its output (in an
    activation arena).
    Without a placement a layer has an image of its own: constants, input, output. The
    program's `dram_size` is then where its last region ends; the image may be larger."""

    constants: int
    input: int
    output: int
    weights: int | None = None  # run-time weight tiles (`ConvLayer.runtime_weights`): in the arena
    init: int | None = None  # run-time accumulator start (`ConvLayer.runtime_init`): in the arena


@dataclass
class LayerProgram:
    """One layer ready to run: the program (micro-op image in `program.uops`), the DRAM layout
    and the constants. Offsets are byte offsets into the DRAM image."""

    layer: ConvLayer
    schedule: Schedule
    config: HardwareConfig
    program: Program
    dram_size: int
    input_offset: int
    input_nbytes: int
    output_offset: int
    output_nbytes: int
    constants: np.ndarray  # uint8 image of bytes [0, len(constants)) of DRAM
    regions: dict[str, tuple[int, int]] = field(default_factory=dict)  # name -> (offset, bytes)
    uop_loads: int = 0  # LOAD UOP instructions (1 when every kernel fits at once)
    constants_offset: int = 0  # where `constants` start in the DRAM image

    @property
    def uops(self) -> np.ndarray:
        return self.program.uops

    # --- activations ---
    def pack_input(self, x: np.ndarray) -> np.ndarray:
        """The packed input bytes of an int8 tensor (NHWC, or [..., I] for dense)."""
        g = self.layer.geometry
        x = np.asarray(x)
        if x.dtype != np.int8 or x.shape != self.layer.input_shape:
            raise ValueError(
                f"input must be int8 {list(self.layer.input_shape)}, got {x.dtype} {list(x.shape)}"
            )
        blk = g.block
        cp = g.CIB * blk
        if g.kind == "dense":
            rows = x.reshape(g.rows, g.C)
            packed = np.full((g.rows, cp), g.input_zero_point, np.int8)
            packed[:, : g.C] = rows
            return packed.reshape(-1).view(np.uint8)
        packed = np.full((g.batch, g.H, g.W, cp), g.input_zero_point, np.int8)
        packed[..., : g.C] = x
        return (  # [image][ci block][H][W][16]
            np.ascontiguousarray(
                packed.reshape(g.batch, g.H, g.W, g.CIB, blk).transpose(0, 3, 1, 2, 4)
            )
            .reshape(-1)
            .view(np.uint8)
        )

    def unpack_output(self, raw: np.ndarray) -> np.ndarray:
        """Output bytes -> NHWC int8 (dense: [..., O] int8 after the host requantization)."""
        g = self.layer.geometry
        blk = g.block
        if g.kind == "dense":
            dtype = "<i4" if g.int32_output else np.int8
            acc = np.frombuffer(raw.tobytes(), dtype).reshape(g.rows, g.COB * blk)[:, : g.O]
            out = dense_requantize_host(self.layer, acc) if g.int32_output else acc
            return out.reshape(*self.layer.input_shape[:-1], g.O)
        dtype = "<i4" if g.int32_output else np.int8
        y = np.frombuffer(raw.tobytes(), dtype).reshape(g.batch, g.COB, g.OH, g.OW, blk)
        y = y.transpose(0, 2, 3, 1, 4).reshape(g.batch, g.OH, g.OW, -1)[..., : g.O]
        if g.int32_output:
            y = dense_requantize_host(self.layer, y)
        return np.ascontiguousarray(y)

    def dram_image(self, x: np.ndarray) -> np.ndarray:
        dram = np.zeros(self.dram_size, np.uint8)
        co = self.constants_offset
        dram[co : co + len(self.constants)] = self.constants
        packed = self.pack_input(x)
        dram[self.input_offset : self.input_offset + len(packed)] = packed
        return dram

    def simulate(self, x: np.ndarray):
        """Run on the functional simulator (all its checks); returns the `SimResult`."""
        from qaccel.targets.vta.simulator import simulate

        return simulate(self.program, self.program.uops, self.dram_image(x), self.config)

    def run(self, x: np.ndarray) -> np.ndarray:
        """Pack `x`, simulate, unpack the result (bit-exact with the q ops it implements)."""
        result = self.simulate(x)
        o = self.output_offset
        return self.unpack_output(result.dram[o : o + self.output_nbytes])

    def timing(self):
        from qaccel.targets.vta.simulator import timing

        return timing(self.program, self.config)


# --------------------------------------------------------------------------------------------
# Constants


def pack_weights(layer: ConvLayer) -> np.ndarray:
    """Weights as WGT elements: conv/dense `[COB][CIB][KH][KW][16 out][16 in]` (OIHW16o16i),
    depthwise `[COB][KH][KW][16][16]` with each output lane's weight in the column of the input
    lane it reads (a diagonal tile for depth multiplier 1)."""
    g = layer.geometry
    blk = g.block
    w = layer.weights
    if g.kind == "depthwise":
        m = g.depth_multiplier
        packed = np.zeros((g.COB, g.KH, g.KW, blk, blk), np.int8)
        oc = np.arange(g.O)
        ob, lane = oc // blk, oc % blk
        col = oc // m - blk * (ob // m)
        packed[ob, :, :, lane, col] = w[0].transpose(2, 0, 1)
        return packed
    if g.kind == "dense":
        w = w[:, None, None, :]
    full = np.zeros((g.COB * blk, g.KH, g.KW, g.CIB * blk), np.int8)
    full[: g.O, :, :, : g.C] = w
    return np.ascontiguousarray(
        full.reshape(g.COB, blk, g.KH, g.KW, g.CIB, blk).transpose(0, 4, 2, 3, 1, 5)
    )


def _padded(values, g, fill=0) -> np.ndarray:
    """A per-tensor or per-channel parameter as int64 values of the layer's channels, padded
    to whole blocks with `fill`."""
    return accel.per_lane(np.asarray(values, np.int64), g.COB * g.block, fill, channels=g.O)


def param_rows(layer: ConvLayer, bias_mode: str) -> np.ndarray:
    """int32 ACC rows `[rows][16]` of `param_layout`: fused bias, -left shift, multiplier,
    right shift (per output block, or one shared row); for bias mode "store", the output
    stage's rows per block: fused bias, multiplier, shift, and (zp, min, max) in lanes 0-2."""
    g = layer.geometry
    if bias_mode == "store":
        lanes = [_padded(v, g).reshape(g.COB, g.block)
                 for v in (fused_bias(layer), layer.multiplier, layer.shift)]  # fmt: skip
        rows = output_stage_block(*lanes, layer.output_zero_point, max(layer.act_min, -128),
                                  min(layer.act_max, 127), g.block)  # fmt: skip
        return rows.reshape(-1, g.block)
    lay = param_layout(g, bias_mode)
    n = max((s + (g.COB if per else 1) for s, per in lay.values()), default=0)
    rows = np.zeros((n, g.block), np.int64)
    shift = np.asarray(layer.shift, np.int64).reshape(-1) if layer.shift is not None else None
    values = {}
    if "bias" in lay:
        values["bias"] = _padded(fused_bias(layer), g)
    if shift is not None:
        values["lsh"] = -_padded(np.maximum(shift, 0), g)
        values["rdmul"] = _padded(layer.multiplier, g)
        values["rshr"] = _padded(np.maximum(-shift, 0), g)
    for kind, (start, per) in lay.items():
        v = values[kind]
        if per:
            rows[start : start + g.COB] = v.reshape(g.COB, g.block)
        else:
            rows[start] = v[0]
    return rows.astype(np.int32)


# --------------------------------------------------------------------------------------------
# The emitter


_KERNELS: dict[tuple, np.ndarray] = {}


def _shared_kernel(key: tuple, build) -> np.ndarray:
    """A GEMM micro-op kernel by everything it is built from (configuration, layer shape,
    tile, buffer bases, strides): layers of one shape share most of theirs. The arrays are
    never written after they are built."""
    found = _KERNELS.get(key)
    if found is None:
        if len(_KERNELS) > 4096:
            _KERNELS.clear()
        found = _KERNELS[key] = build()
    return found


def small_uops(dst, src, wgt, c: HardwareConfig) -> np.ndarray:
    """`encode_uops(dst, src, wgt, c)` of a few micro-ops (index sequences of one length),
    with Python integers: a handful of numpy calls cost more than the work. An index outside
    its field goes to `encode_uops`, which raises."""
    fields = layout_of(c).uop
    (_, b0, w0), (_, b1, w1), (_, b2, w2) = ((f.name, f.bit, 1 << f.width) for f in fields)
    words = []
    for d, s, w in zip(dst, src, wgt):
        if not (0 <= d < w0 and 0 <= s < w1 and 0 <= w < w2):
            return encode_uops(dst, src, wgt, c)
        words.append(((d << b0) | (s << b1) | (w << b2)) & 0xFFFFFFFF)
    return np.array(words, np.uint32)


_RELATIVE: dict[tuple, tuple] = {}


def _placed_kernel(shape: tuple, bases: tuple[int, int, int], indices, c: HardwareConfig):
    """`encode_uops(*indices(*bases))`: a GEMM kernel's micro-ops for the buffer bases
    (dst, src, wgt). The indices from bases 0 are built and encoded once per `shape` (the
    kernels of every slot of a layer, and of layers of one shape, differ by their bases only);
    the bases are then added to the encodings, which carries into no other field when every
    index fits its field (else the kernel is built from its bases, and raises as it did)."""
    rel = _RELATIVE.get(shape)
    if rel is None:
        if len(_RELATIVE) > 4096:
            _RELATIVE.clear()
        arrays = np.broadcast_arrays(*(np.asarray(v, np.int64) for v in indices(0, 0, 0)))
        fields = layout_of(c).uop
        if arrays[0].size and all(0 <= v.min() and v.max() < 1 << f.width
                                  for f, v in zip(fields, arrays)):  # fmt: skip
            words = np.zeros(arrays[0].shape, np.uint64)
            for f, v in zip(fields, arrays):
                words |= v.astype(np.uint64) << np.uint64(f.bit)
            rel = (words.reshape(-1), [(int(v.max()), f) for f, v in zip(fields, arrays)])
        else:
            rel = (None, [])
        _RELATIVE[shape] = rel
    words, limits = rel
    if words is None or any(b < 0 or top + b >= 1 << f.width
                            for (top, f), b in zip(limits, bases)):  # fmt: skip
        return encode_uops(*indices(*bases), c)
    offset = sum(b << f.bit for (_, f), b in zip(limits, bases))
    return (words + np.uint64(offset)).astype(np.uint32)


# Access signatures (the slots an instruction reads and writes) by id, shared by every stream:
# layers use the same few.
_SIGS: dict[tuple[tuple, tuple], int] = {}
_SIG_SLOTS: list[tuple[tuple[int, ...], tuple[int, ...]]] = []
_SLOT_IDS: dict = {}
_SIG_CSR: dict = {}  # the signatures as `StreamDescriptor` arrays, and how many they hold


class _Stream:
    """An instruction stream under construction: records with the buffer slots each reads and
    writes (dependency tokens are derived from them), micro-op kernels, and the encoding. The
    layer emitters (GEMM layers here, element-wise and pool layers in `emit_alu.py`) build on
    it.

    Instructions are recorded, not resolved, as they are added: each is a tuple (row index,
    module, access signature, kernel, micro-op) over rows of fields that replays share, and
    the whole stream is resolved at the end in one call (`encode_stream`: dependency tokens,
    micro-op placement, encoding), by libqaccel_stream (`cstream.py`) when it is built, else
    by `resolve_stream_py`, the reference; both give the same program."""

    def __init__(self, config: HardwareConfig):
        self.c = config
        self.rows: list[array] = []  # int64 fields each record starts from (replays share them)
        self.recs: list[tuple] = []  # (row index, module, signature, kernel id or -1, sub or -1)
        if len(_SIGS) > 65536:  # ids stay fixed while a stream is built
            _SIGS.clear(), _SIG_SLOTS.clear(), _SLOT_IDS.clear(), _SIG_CSR.clear()
        self.sigs = _SIGS  # (reads, writes) -> access signature id (shared by every stream)
        self.sig_slots = _SIG_SLOTS  # per signature, the ids of the slots read and written
        self.slot_ids = _SLOT_IDS  # slot -> id
        self.kernels: dict = {}  # key -> uint32 micro-ops
        self.kernel_ids: dict = {}  # key -> its position in `kernels`
        self.replays: dict = {}  # `replay`'s recorded instructions by key
        self.recording: list | None = None
        self.finished = False  # the last record is FINISH (`finish`)

    def signature(self, key: tuple[tuple, tuple]) -> int:
        """The id of a new access signature (the slots an instruction reads and writes)."""
        ids = self.slot_ids
        sig = self.sigs[key] = len(self.sig_slots)
        self.sig_slots.append(tuple(tuple(ids.setdefault(s, len(ids)) for s in part)
                                    for part in key))  # fmt: skip
        return sig

    def add(self, module: int, row, reads=(), writes=(), kernel=None) -> int:
        """Append an instruction of `module` that reads and writes these slots; it will wait
        (a dependency token) for the latest instruction of another module that last wrote a
        slot it accesses, or read a slot it writes. `row` is not changed (and must not be
        after this); int64 fields, an `array("q")` like `_row`'s, or a list of ints."""
        key = (reads if type(reads) is tuple else tuple(reads),
               writes if type(writes) is tuple else tuple(writes))  # fmt: skip
        sig = self.sigs.get(key)
        if sig is None:
            sig = self.signature(key)
        if type(row) is not array:
            row = array("q", row)
        rows = self.rows
        if kernel is None:
            rec = (len(rows), module, sig, -1, -1)
        else:
            sub = kernel[1]
            rec = (len(rows), module, sig, self.kernel_ids[kernel[0]], -1 if sub is None else sub)
        rows.append(row)
        if self.recording is not None:
            self.recording.append(rec)
        self.recs.append(rec)
        return len(self.recs) - 1

    def replay(self, key, emit_fn, *args) -> None:
        """`emit_fn(*args)`, whose instructions depend on nothing but `key` (no DRAM address,
        no state of the stream but its slots): the first time run and recorded, then the
        recorded instructions added again (their dependency tokens derived anew)."""
        known = self.replays.get(key)
        if known is None:
            if self.recording is not None:  # nested: the outer recording holds these too
                emit_fn(*args)
                return
            self.recording = []
            try:
                emit_fn(*args)
                self.replays[key] = self.recording
            finally:
                self.recording = None
            return
        self.recs.extend(known)
        if self.recording is not None:
            self.recording.extend(known)

    def load(self, mem, sram, dram, y, x, stride=None, ypad=(0, 0), xpad=(0, 0), *, module,
             reads=(), writes=()) -> int:  # fmt: skip
        row = _EMPTY[0][:]
        row[_MEM] = int(mem)
        row[_SRAM] = sram
        row[_DRAM] = dram
        row[_YSIZE] = y
        row[_XSIZE] = x
        row[_XSTRIDE] = x if stride is None else stride
        row[_YPAD0], row[_YPAD1] = ypad
        row[_XPAD0], row[_XPAD1] = xpad
        return self.add(module, row, reads, writes)

    def store(self, mem, sram, dram, y, x, stride, *, reads=(), writes=(), param_row=None,
              param_step=(0, 0)) -> int:  # fmt: skip
        """A STORE; with `param_row` a STORE OUTQ through the parameter blocks from that row
        (`param_step`: whether they advance with y, x) that clears the rows it reads
        (`writes` then names them)."""
        row = _EMPTY[1][:]
        row[_MEM] = int(mem)
        row[_SRAM] = sram
        row[_DRAM] = dram
        row[_YSIZE] = y
        row[_XSIZE] = x
        row[_XSTRIDE] = stride
        if param_row is not None:
            row[_MEM] = int(MemType.OUTQ)
            row[_IDX["param_row"]] = param_row
            row[_IDX["param_y"]], row[_IDX["param_x"]] = param_step
            row[_IDX["clear"]] = int(bool(writes))
        return self.add(STORE, row, reads, writes)

    def gemm(self, kernel, n_out, n_in, dst=(0, 0), src=(0, 0), wgt=(0, 0), reset=False,
             reads=(), writes=(), sub=None) -> int:  # fmt: skip
        row = _EMPTY[_GEMM][:]
        row[_RESET] = 1 if reset else 0
        row[_ITER_OUT] = n_out
        row[_ITER_IN] = n_in
        # Loop factors of single-iteration loops are zero (`_factors`).
        if n_out > 1:
            row[_DST_OUT], row[_SRC_OUT], row[_WGT_OUT] = dst[0], src[0], wgt[0]
        if n_in > 1:
            row[_DST_IN], row[_SRC_IN], row[_WGT_IN] = dst[1], src[1], wgt[1]
        return self.add(COMPUTE, row, reads, writes, (kernel, sub))

    def alu(self, op, kernel, sub, n_out, n_in, dst=(0, 0), src=(0, 0), imm=None, reads=(),
            writes=()) -> int:  # fmt: skip
        row = _EMPTY[_ALU][:]
        row[_ALU_OP] = int(op)
        if imm is not None:
            row[_USE_IMM] = 1
            row[_IMM] = imm
        row[_ITER_OUT] = n_out
        row[_ITER_IN] = n_in
        if n_out > 1:
            row[_DST_OUT], row[_SRC_OUT] = dst[0], src[0]
        if n_in > 1:
            row[_DST_IN], row[_SRC_IN] = dst[1], src[1]
        return self.add(COMPUTE, row, reads, writes, (kernel, sub))

    def kernel(self, key, build) -> tuple:
        if key not in self.kernels:
            self.kernels[key] = build()
            self.kernel_ids[key] = len(self.kernel_ids)
        return key

    def finish(self) -> None:
        """FINISH after the last instruction of every module."""
        self.add(COMPUTE, _row(Opcode.FINISH))
        self.finished = True

    def descriptor(self) -> StreamDescriptor:
        """The stream as flat int64 arrays (`cstream.StreamDescriptor`)."""
        n = len(self.recs)
        recs = np.fromiter(chain.from_iterable(self.recs), np.int64, 5 * n).reshape(n, 5)
        m = len(self.rows)
        rows = np.frombuffer(b"".join(self.rows), np.int64).reshape(m, _NF)  # read-only
        if _SIG_CSR.get("n") != len(self.sig_slots):  # signatures were added since
            parts = []
            for w in (0, 1):
                ptr = np.zeros(len(self.sig_slots) + 1, np.int64)
                ptr[1:] = np.cumsum([len(s[w]) for s in self.sig_slots])
                slots = np.array([i for s in self.sig_slots for i in s[w]], np.int64)
                parts += [ptr, slots]
            _SIG_CSR.update(n=len(self.sig_slots), parts=parts)
        sizes = np.array([len(k) for k in self.kernels.values()], np.int64)
        return StreamDescriptor(recs, rows, *_SIG_CSR["parts"], len(self.slot_ids), sizes,
                                self.finished)  # fmt: skip

    def encode_stream(self) -> tuple[Program, int]:
        """Micro-ops placed, the records' dependency tokens set and the records encoded:
        the program and its number of LOAD UOPs."""
        keys = list(self.kernels)
        image = np.concatenate([self.kernels[k] for k in keys]) if keys else np.zeros(0, np.uint32)
        done = cstream.resolve(self.descriptor(), self.c) if cstream.library() else None
        if done is None:
            return self.encode_stream_py()
        fields, words, n_uop_loads = done
        program = Program(self.c, words, image)
        program.know_fields(fields.view(FIELDS_DTYPE).reshape(-1))  # the report decodes it
        return program, n_uop_loads

    def encode_stream_py(self) -> tuple[Program, int]:
        """`encode_stream` by the reference, `resolve_stream_py`."""
        keys = list(self.kernels)
        image = np.concatenate([self.kernels[k] for k in keys]) if keys else np.zeros(0, np.uint32)
        rows, n_uop_loads = resolve_stream_py(self)
        # The rows are the fields in FIELD_NAMES order, all int64: one matrix, viewed as records.
        fields = np.array(rows, np.int64).reshape(len(rows), _NF).view(FIELDS_DTYPE).reshape(-1)
        words = encode(fields, self.c)
        return Program(self.c, words, image), n_uop_loads


def resolve_stream_py(stream: _Stream) -> tuple[list[array], int]:
    """The reference of libqaccel_stream: the stream's rows with their dependency tokens set
    and its micro-ops placed (the LOAD UOPs inserted), and the number of LOAD UOPs.

    Tokens: an instruction waits for the latest instruction of another module that last
    wrote a slot it accesses, or read a slot it writes (FINISH: for the last instruction of
    every module); that is a push on the producer and a pop here. Pops only ever advance to
    the latest producer needed, so each instruction pops at most one token per queue, and a
    producer an earlier pop covered needs none. Micro-ops: every kernel once up front when
    they all fit in the micro-op buffer, else each loaded before use into a ring, reusing
    resident copies."""
    recs, c = stream.recs, stream.c
    rows = [stream.rows[r[0]][:] for r in recs]
    # Per slot: [last writer, its module, last reader in module 0, 1, 2] (-1: none; a slot
    # never written has module 3).
    slots = [[-1, 3, -1, -1, -1] for _ in stream.slot_ids]
    synced: dict[tuple[int, int], int] = {}  # token queue -> latest producer popped
    last = [-1, -1, -1]
    n = len(recs)
    for i, (_, module, sig, _, _) in enumerate(recs):
        reads, writes = stream.sig_slots[sig]
        latest = [-1, -1, -1, -1]
        for r in reads:
            st = slots[r]
            if st[0] > latest[st[1]]:
                latest[st[1]] = st[0]
        for w in writes:
            st = slots[w]
            if st[0] > latest[st[1]]:
                latest[st[1]] = st[0]
            for m in (0, 1, 2):
                if st[2 + m] > latest[m]:
                    latest[m] = st[2 + m]
            st[:] = (i, module, -1, -1, -1)
        for r in reads:
            slots[r][2 + module] = i
        if stream.finished and i == n - 1:
            for m in (0, 1, 2):
                if m != module and last[m] > latest[m]:
                    latest[m] = last[m]
        latest[module] = -1
        for p in (0, 1, 2):
            d = latest[p]
            if d < 0:
                continue
            pair = (p, module)
            flags = _TOKEN_COLUMNS.get(pair)
            if flags is None:
                raise AssertionError(f"no token queue from module {p} to module {module}")
            if d > synced.get(pair, -1):  # else an earlier pop covered it
                synced[pair] = d
                rows[d][flags[0]] = 1
                rows[i][flags[1]] = 1
        last[module] = i

    depth = c.depth("uop")
    sizes = [len(k) for k in stream.kernels.values()]
    offsets, at = [], 0
    for size in sizes:
        offsets.append(at)
        at += size
    out_rows: list[array] = []
    uop_bgn, uop_end = _IDX["uop_bgn"], _IDX["uop_end"]

    def load_row(sram, dram, n):
        return _row(Opcode.LOAD, memory_type=int(MemType.UOP), sram_base=sram,
                    dram_base=dram, y_size=1, x_size=n, x_stride=n)  # fmt: skip

    if at <= depth:
        first = next(i for i, r in enumerate(recs) if r[1] == COMPUTE)
        for i, (rec, row) in enumerate(zip(recs, rows)):
            if i == first and at:
                out_rows.append(load_row(0, 0, at))
            k, sub = rec[3], rec[4]
            if k >= 0:
                base = offsets[k] + max(sub, 0)
                row[uop_bgn] = base
                row[uop_end] = base + 1 if sub >= 0 else offsets[k] + sizes[k]
            out_rows.append(row)
        return out_rows, 1 if at else 0
    # Ring cache: place each kernel at a bump pointer, evicting what it overlaps.
    resident: dict = {}  # kernel -> sram offset
    ptr, loads = 0, 0
    for rec, row in zip(recs, rows):
        k, sub = rec[3], rec[4]
        if k >= 0:
            n = sizes[k]
            if n > depth:
                raise LayerError(f"a micro-op kernel of {n} micro-ops exceeds the buffer")
            if k not in resident:
                if ptr + n > depth:
                    ptr = 0
                lo, hi = ptr, ptr + n
                for other, o in list(resident.items()):
                    if o < hi and lo < o + sizes[other]:
                        del resident[other]
                resident[k] = ptr
                out_rows.append(load_row(ptr, offsets[k], n))
                loads += 1
                ptr += n
            base = resident[k] + max(sub, 0)
            row[uop_bgn] = base
            row[uop_end] = base + 1 if sub >= 0 else resident[k] + n
        out_rows.append(row)
    return out_rows, loads


class _Emitter(_Stream):
    def __init__(self, layer: ConvLayer, sched: Schedule, config: HardwareConfig,
                 placement: Placement | None = None):  # fmt: skip
        if sched.geometry != layer.geometry:
            raise LayerError("the schedule was made for another layer geometry")
        super().__init__(config)
        self.layer, self.s = layer, sched
        self.g = g = layer.geometry
        self.blk = g.block
        self.plan = sched.buffers
        self.param_layout = param_layout(g, sched.bias_mode)
        self.zp = uses_zp_gemm(g, sched.bias_mode)
        self.gemm_bias = g.has_bias and sched.bias_mode == "gemm"
        self.store_tail = sched.bias_mode == "store"
        self.zeroed: dict[int, int] = {}  # store_tail: ACC slot -> leading rows known zero
        self.tail_kernels: dict[tuple, dict[str, int]] = {}  # tail_kernel's, once per key
        self.constants_offset = 0
        self.image = 0  # the image of a batch whose loop nest is being emitted
        self.wgt_held: dict[int, tuple] = {}  # weight slot -> (chunk, output blocks loaded)
        self.layout_dram()
        if placement is not None:
            self.place(placement)

    # --- DRAM ---
    def layout_dram(self):
        g, blk, layer = self.g, self.blk, self.layer
        weights = pack_weights(layer).reshape(-1).view(np.uint8)
        parts: list[tuple[str, np.ndarray]] = [] if layer.runtime_weights else [("weights", weights)]
        params = param_rows(layer, self.s.bias_mode)
        if len(params):
            parts.append(("params", params.reshape(-1).view(np.uint8)))
        if g.has_bias and self.s.bias_mode == "dma":
            parts.append(("bias", _padded(fused_bias(layer), g).astype(np.int32).view(np.uint8)))
        if self.gemm_bias:
            tiles = bias_tiles(fused_bias(layer), g.COB, blk)
            if tiles is None:
                raise LayerError("a fused bias is too large for the one-cycle bias GEMM")
            parts.append(("bias_tiles", tiles.reshape(-1).view(np.uint8)))
            parts.append(("bias_row", bias_row(blk).view(np.uint8)))
        if self.zp:
            tile = np.zeros((blk, blk), np.int8)
            tile[:, 0] = self.layer.output_zero_point
            parts.append(("zp_tile", tile.reshape(-1).view(np.uint8)))
            row = np.zeros(blk, np.int8)
            row[0] = 1
            parts.append(("one_row", row.view(np.uint8)))
        _, fc = frame_shape(g, min(self.s.tile_h, g.OH), min(self.s.tile_w, g.OW))
        parts.append(("pad_row", np.full(fc * blk, g.input_zero_point, np.int8).view(np.uint8)))
        regions, at = {}, 0
        for name, data in parts:
            regions[name] = (at, len(data))
            at = _align(at + len(data), self.c.dram_align)
        const = np.zeros(at, np.uint8)
        for name, data in parts:
            off, n = regions[name]
            const[off : off + n] = data
        in_bytes = g.batch * (g.rows if g.kind == "dense" else g.H * g.W) * g.CIB * blk
        out_eb = 4 * blk if g.int32_output else blk
        out_bytes = g.batch * (g.rows if g.kind == "dense" else g.OH * g.OW) * g.COB * out_eb
        regions["input"] = (at, in_bytes)
        at = _align(at + in_bytes, self.c.dram_align)
        regions["output"] = (at, out_bytes)
        at = _align(at + out_bytes, self.c.dram_align)
        if layer.runtime_weights:  # written at run time; on its own, after the output
            regions["weights"] = (at, g.batch * len(weights))  # each image's own tiles
            at = _align(at + g.batch * len(weights), self.c.dram_align)
        if layer.runtime_init:  # int32 [co block][OH][OW][16], like an int32 output
            regions["init"] = (at, g.batch * g.OH * g.OW * g.COB * 4 * blk)
            at = _align(at + regions["init"][1], self.c.dram_align)
        self.regions, self.constants, self.dram_size = regions, const, at
        self.out_eb = out_eb

    def place(self, p: Placement) -> None:
        """Move the regions into a shared image (`layout_dram` made them start at 0)."""
        align = self.c.dram_align
        act = self.c.elem_bytes("acc")  # a multiple of the int8 row; int32 outputs are ACC rows
        if p.constants % align or p.input % act or p.output % act:
            raise LayerError(f"placement {p} is not aligned ({align}-byte constants, {act}-byte "
                             f"activations)")  # fmt: skip
        if self.layer.runtime_weights:
            tile = self.blk * self.blk
            if p.weights is None or p.weights % tile:
                raise LayerError(f"run-time weight tiles at {p.weights} (need a multiple of the "
                                 f"{tile}-byte tile)")  # fmt: skip
        if self.layer.runtime_init and (p.init is None or p.init % act):
            raise LayerError(f"run-time accumulators at {p.init} (need {act}-byte rows)")
        for name, (off, n) in self.regions.items():
            if name == "weights" and self.layer.runtime_weights:
                self.regions[name] = (p.weights, n)
            elif name == "init" and self.layer.runtime_init:
                self.regions[name] = (p.init, n)
            elif name == "input":
                self.regions[name] = (p.input, n)
            elif name == "output":
                self.regions[name] = (p.output, n)
            else:
                self.regions[name] = (off + p.constants, n)
        self.constants_offset = p.constants
        self.dram_size = _align(max(off + n for off, n in self.regions.values()), align)

    def elem(self, region: str, nbytes: int) -> int:
        """The first element of `region`; for the input and output, of the current image."""
        at = self.regions[region][0] // nbytes
        if self.image and region in ("input", "output"):
            g = self.g
            plane = g.H * g.W * g.CIB if region == "input" else g.OH * g.OW * g.COB
            at += self.image * plane  # elements: one input row / output row of a block each
        return at

    # --- loads of one step ---
    def load_frame(self, st: Step, slot: int):
        g, blk, plan = self.g, self.blk, self.plan
        base = plan.inp_base + slot * plan.inp_slot_rows
        res = ("inp", slot)
        inp = self.elem("input", blk)
        fr, y0, ystep, (ypad0, yreal) = frame_rows(g, st.oy0, st.th)
        fc, x0, (xpad0, xreal) = frame_cols(g, st.ox0, st.tw)
        frame = fr * fc
        mode = frame_mode(g, st)
        if mode == "dense":  # [row][ci] in DRAM -> [pixel][ci] frame
            self.load(MemType.INP, base, inp + st.ox0 * g.CIB + st.ci0, st.tw, st.nci, g.CIB,
                      module=LOAD, writes=(res,))  # fmt: skip
            return
        hw = g.H * g.W
        if mode == "padding":
            pad = self.elem("pad_row", blk)
            for k in range(st.nci):
                self.load(MemType.INP, base + k * frame, pad, fr, fc, 0, module=LOAD,
                          writes=(res,))  # fmt: skip
            return
        ypad1, xpad1 = fr - ypad0 - yreal, fc - xpad0 - xreal
        first_row = y0 + ypad0 * ystep
        if mode == "contiguous":  # y = input block, x = its whole frame
            self.load(MemType.INP, base, inp + st.ci0 * hw + first_row * g.W, st.nci,
                      frame, hw, module=LOAD, writes=(res,))  # fmt: skip
            return
        if mode == "row":  # y = input block, x = the frame's one row, padded per block
            self.load(MemType.INP, base, inp + st.ci0 * hw + first_row * g.W + x0 + xpad0,
                      st.nci, xreal, hw, (0, 0), (xpad0, xpad1), module=LOAD,
                      writes=(res,))  # fmt: skip
            return
        top, bottom = max(0, ypad0 - 15), max(0, ypad1 - 15)
        pad = self.elem("pad_row", blk)
        for k in range(st.nci):
            at = base + k * frame
            if top:
                self.load(MemType.INP, at, pad, top, fc, 0, module=LOAD, writes=(res,))
            dram = inp + (st.ci0 + k) * hw + first_row * g.W + x0 + xpad0
            self.load(MemType.INP, at + top * fc, dram, yreal, xreal, g.W * ystep,
                      (ypad0 - top, ypad1 - bottom), (xpad0, xpad1), module=LOAD,
                      writes=(res,))  # fmt: skip
            if bottom:
                self.load(MemType.INP, at + (fr - bottom) * fc, pad, bottom, fc, 0, module=LOAD,
                          writes=(res,))  # fmt: skip

    def load_weights(self, st: Step, slot: int, part: int | None = None):
        """A weight chunk ([co][ci][tap] in its slot), or only output block `part` of it;
        nothing when the slot still holds it (the next image of a batch finds the chunks the
        last one left: only weight loads write weight slots)."""
        chunk = (st.co0, st.ci0, st.nco, st.nci)
        if self.layer.runtime_weights:  # each image its own tiles
            chunk += (self.image,)
        held, parts = self.wgt_held.get(slot, (None, set()))
        if held == chunk and (None in parts or part in parts):
            return
        self.wgt_held[slot] = (chunk, (parts if held == chunk else set()) | {part})
        g, plan = self.g, self.plan
        base = plan.wgt_base + slot * plan.wgt_slot_tiles
        wgt = self.elem("weights", self.blk * self.blk)
        if self.layer.runtime_weights:
            wgt += self.image * g.COB * g.CIB * g.taps
        K = g.taps
        per_co = K * (1 if g.diagonal else st.nci)
        first, count = (0, st.nco) if part is None else (part, 1)
        base += first * per_co
        co0 = st.co0 + first
        if g.diagonal:
            self.load(MemType.WGT, base, wgt + co0 * K, 1, count * K, module=LOAD,
                      writes=(("wgt", slot),))  # fmt: skip
        else:
            self.load(MemType.WGT, base, wgt + (co0 * g.CIB + st.ci0) * K, count,
                      st.nci * K, g.CIB * K, module=LOAD, writes=(("wgt", slot),))  # fmt: skip

    def layouts(self, st: Step):
        """(acc channel stride, acc pixel stride, frame ci/row/col strides) of a step."""
        g = self.g
        fr, fc = frame_shape(g, st.th, st.tw)
        npix = st.th * st.tw
        if g.kind == "dense":
            return 1, st.nco, 1, 0, st.nci
        return npix, 1, fr * fc, fc, 1

    def gemm_step(self, st: Step, islot: int, wslot: int, aslot: int):
        """The step's GEMM: it depends on the tile's shape, the slots and (depthwise) where
        the output group starts in a multiplier's group of channels, never on DRAM."""
        g = self.g
        diag_off = st.co0 % g.depth_multiplier if g.diagonal else 0
        key = ("gemm", st.th, st.tw, st.nco, st.nci, diag_off, islot, wslot, aslot)
        self.replay(key, self._gemm_step, st, islot, wslot, aslot)

    def _gemm_step(self, st: Step, islot: int, wslot: int, aslot: int):
        g, plan, c = self.g, self.plan, self.c
        K = g.taps
        inp_base = plan.inp_base + islot * plan.inp_slot_rows
        wgt_base = plan.wgt_base + wslot * plan.wgt_slot_tiles
        acc_base = plan.acc_base + aslot * plan.acc_slot_rows
        s_co, s_p, s_ci, s_fy, s_fx = self.layouts(st)
        red = K * (1 if g.diagonal else st.nci)
        pb = pixel_block(st.nco, red, st.th, st.tw)
        sy = 1 if g.row_subsample else g.sh
        dyf = 0 if g.row_subsample else g.dh
        m = g.depth_multiplier
        diag_off = st.co0 % m if g.diagonal else 0
        key = ("gemm", st.th, st.tw, st.nco, st.nci, diag_off, inp_base, wgt_base, acc_base)

        def indices(acc_base: int, inp_base: int, wgt_base: int):
            """(dst, src, wgt) of the kernel's micro-ops from these buffer bases."""
            if pb is None:  # one output row: alternate with a scratch row (added in the tail)
                r = np.arange(red)
                ci, tap = (np.zeros_like(r), r) if g.diagonal else (r // K, r % K)
                ky, kx = tap // g.KW, tap % g.KW
                dst = acc_base + (r % 2)
                src = inp_base + ci * s_ci + ky * dyf * s_fy + kx * g.dw * s_fx
                wgt = wgt_base + ci * K + tap
                return dst, src, wgt
            uy, ux = pb
            if g.diagonal:
                ky, kx, co, py, px = np.indices((g.KH, g.KW, st.nco, uy, ux)).reshape(5, -1)
                ci = (st.co0 + co) // m - st.co0 // m
                wgt = wgt_base + co * K + ky * g.KW + kx
            else:
                ci, ky, kx, co, py, px = np.indices((st.nci, g.KH, g.KW, st.nco, uy, ux)).reshape(
                    6, -1
                )
                wgt = wgt_base + (co * st.nci + ci) * K + ky * g.KW + kx
            dst = acc_base + co * s_co + (py * st.tw + px) * s_p
            src = (inp_base + ci * s_ci + (py * sy + ky * dyf) * s_fy
                   + (px * g.sw + kx * g.dw) * s_fx)  # fmt: skip
            return dst, src, wgt

        def build():
            return _placed_kernel(shape, (acc_base, inp_base, wgt_base), indices, c)

        shape = (c, pb, red, g.diagonal, g.KH, g.KW, g.dw, g.sw, sy, dyf, m, st.nci, s_co, s_p,
                 s_ci, s_fy, s_fx, *key[:6])  # fmt: skip
        shared = (*shape, *key[6:])
        kern = self.kernel(key, lambda: _shared_kernel(shared, build))
        reads = (("inp", islot), ("wgt", wslot), ("acc", aslot))
        if pb is None:
            self.gemm(kern, 1, 1, reads=reads, writes=(("acc", aslot),))
            return
        uy, ux = pb
        self.gemm(
            kern, st.th // uy, st.tw // ux,
            dst=(uy * st.tw * s_p, ux * s_p),
            src=(uy * sy * s_fy, ux * g.sw * s_fx),
            reads=reads, writes=(("acc", aslot),),
        )  # fmt: skip

    def tail_kernel(self, aslot: int, co0: int):
        """Single micro-ops the init/tail instructions use, as (kernel, index) pairs."""
        plan, c = self.plan, self.c
        acc_base = plan.acc_base + aslot * plan.acc_slot_rows
        key = ("tail", acc_base, co0)
        known = self.tail_kernels.get(key)
        if known is not None:  # every tile of a slot and output group uses the same one
            return key, known
        entries = [("row", plan.inp_const if self.zp else 0, plan.wgt_const if self.zp else 0)]
        entries.append(("split", acc_base + 1, 0))
        for kind, (start, per) in self.param_layout.items():
            entries.append((kind, start + (co0 if per else 0), 0))
        if self.gemm_bias:
            entries.append(("bias_gemm", plan.inp_bias, plan.wgt_bias + co0))
        names = [e[0] for e in entries]

        srcs, wgts = tuple(e[1] for e in entries), tuple(e[2] for e in entries)

        def build():
            return small_uops([acc_base] * len(entries), srcs, wgts, c)

        self.kernel(key, lambda: _shared_kernel(("tail", c, acc_base, srcs, wgts), build))
        known = self.tail_kernels[key] = {n: i for i, n in enumerate(names)}
        return key, known

    # --- init, tail, store ---
    def tile_loops(self, st: Step):
        """(iter_out, iter_in, dst factors, per-block param src factors) over a tile's rows."""
        npix = st.th * st.tw
        if self.g.kind == "dense":  # [pixel][co]
            return npix, st.nco, (st.nco, 1), (0, 1)
        return st.nco, npix, (npix, 1), (1, 0)

    def init_tile(self, st: Step, aslot: int, split: bool):
        """The tile's accumulators set to their start: the instructions depend on the tile's
        shape, slot and output group (the bias rows' DRAM address is the layer's), except
        for run-time start values (each tile's own DRAM rows) and the output stage's (what
        the last store left)."""
        if self.layer.runtime_init or self.store_tail:
            self._init_tile(st, aslot, split)
            return
        key = ("init", aslot, st.co0, st.th, st.tw, st.nco, split)
        self.replay(key, self._init_tile, st, aslot, split)

    def _init_tile(self, st: Step, aslot: int, split: bool):
        g, plan = self.g, self.plan
        acc_base = plan.acc_base + aslot * plan.acc_slot_rows
        key, idx = self.tail_kernel(aslot, st.co0)
        rows = st.th * st.tw * st.nco
        res = (("acc", aslot),)
        if self.layer.runtime_init:
            self.load_init(st, acc_base, key, idx, split, res)
            if self.store_tail:
                self.zeroed[aslot] = 0  # loaded rows are not zero
            return
        if self.store_tail:  # the stores clear what they read: reset only what is not zero
            if split or self.zeroed.get(aslot, 0) < rows:
                self.gemm(key, rows + (1 if split else 0), 1, dst=(1, 0), reset=True,
                          writes=res, sub=idx["row"])  # fmt: skip
                self.zeroed[aslot] = rows + (1 if split else 0)
            return
        if g.has_bias and self.s.bias_mode == "dma":
            if split:  # the scratch row starts at zero, the real row with the bias
                self.gemm(key, 2, 1, dst=(1, 0), reset=True, writes=res, sub=idx["row"])
            bias = self.elem("bias", 4 * self.blk) + st.co0
            npix = st.th * st.tw
            if g.kind == "dense" or npix == 1:
                self.load(MemType.ACC, acc_base, bias, npix, st.nco, 0, module=COMPUTE,
                          writes=res)  # fmt: skip
            else:
                for k in range(st.nco):
                    self.load(MemType.ACC, acc_base + k * npix, bias + k, npix, 1, 0,
                              module=COMPUTE, writes=res)  # fmt: skip
            return
        self.gemm(key, rows + (1 if split else 0), 1, dst=(1, 0), reset=True, writes=res,
                  sub=idx["row"])  # fmt: skip
        if self.gemm_bias:  # [127]*15 + [1] times the block's digit tile: + bias, one cycle
            n_out, n_in, dst, per_block = self.tile_loops(st)
            self.gemm(key, n_out, n_in, dst=dst, wgt=per_block, reads=res + (("biasc",),),
                      writes=res, sub=idx["bias_gemm"])  # fmt: skip

    def load_init(self, st: Step, acc_base: int, key, idx, split: bool, res):
        """The tile's accumulators loaded from the run-time int32 start values (`[co block]
        [OH][OW][16]` in DRAM; ACC row `k * pixels + y * tw + x`); a split tile's scratch
        row reset to zero."""
        g = self.g
        if split:
            self.gemm(key, 2, 1, dst=(1, 0), reset=True, writes=res, sub=idx["row"])
        init = self.elem("init", 4 * self.blk) + self.image * g.OH * g.OW * g.COB
        plane, npix = g.OH * g.OW, st.th * st.tw
        first = init + st.co0 * plane + st.oy0 * g.OW + st.ox0
        if st.th == 1:  # one LOAD: a row of pixels per output block
            self.load(MemType.ACC, acc_base, first, st.nco, st.tw, plane, module=COMPUTE,
                      writes=res)  # fmt: skip
            return
        for k in range(st.nco):
            self.load(MemType.ACC, acc_base + k * npix, first + k * plane, st.th, st.tw, g.OW,
                      module=COMPUTE, writes=res)  # fmt: skip

    def tail(self, st: Step, aslot: int, split: bool):
        """The tile's requantizing tail: ALU instructions that depend on the tile's shape,
        slot and output group only."""
        if self.store_tail:
            self._tail(st, aslot, split)
            return
        key = ("tail", aslot, st.co0, st.th, st.tw, st.nco, split)
        self.replay(key, self._tail, st, aslot, split)

    def _tail(self, st: Step, aslot: int, split: bool):
        g = self.g
        key, idx = self.tail_kernel(aslot, st.co0)
        n_out, n_in, dst, psrc = self.tile_loops(st)
        res = (("acc", aslot),)
        if split:
            self.alu(AluOp.ADD, key, idx["split"], 1, 1, reads=res, writes=res)
            if self.store_tail:  # the scratch row is not stored, so not cleared
                self.zeroed[aslot] = 1
        if self.store_tail:
            return
        if "bias" in self.param_layout:
            self.alu(AluOp.ADD, key, idx["bias"], n_out, n_in, dst, psrc, reads=res, writes=res)
        shift = None if self.layer.shift is None else np.asarray(self.layer.shift).reshape(-1)
        for op in g.tail:
            if op in ("lsh", "rdmul", "rshr"):
                alu_op = {"lsh": AluOp.SHR, "rdmul": AluOp.RDMUL, "rshr": AluOp.RSHR}[op]
                if op in self.param_layout:
                    per = self.param_layout[op][1]
                    src = psrc if per else (0, 0)
                    self.alu(alu_op, key, idx[op], n_out, n_in, dst, src, reads=res, writes=res)
                else:
                    imm = -max(int(shift[0]), 0) if op == "lsh" else max(-int(shift[0]), 0)
                    self.alu(alu_op, key, idx["row"], n_out, n_in, dst, imm=imm, reads=res,
                             writes=res)  # fmt: skip
            elif op == "clamp":
                z = self.layer.output_zero_point
                lo, hi = max(self.layer.act_min, -128), min(self.layer.act_max, 127)
                self.alu(AluOp.MAX, key, idx["row"], n_out, n_in, dst, imm=lo - z, reads=res,
                         writes=res)  # fmt: skip
                self.alu(AluOp.MIN, key, idx["row"], n_out, n_in, dst, imm=hi - z, reads=res,
                         writes=res)  # fmt: skip
            elif op == "zp":
                self.gemm(key, n_out, n_in, dst=dst, reads=res + (("inpc",), ("wgtc",)),
                          writes=res, sub=idx["row"])  # fmt: skip

    def store_tile(self, st: Step, aslot: int):
        """STORE the tile: OUT (int8, requantized by the tail), ACC (int32) or, for bias mode
        "store", OUTQ through the output block's parameter rows, clearing the rows read."""
        g, plan = self.g, self.plan
        acc_base = plan.acc_base + aslot * plan.acc_slot_rows
        mem = MemType.ACC if g.int32_output else MemType.OUT
        out = self.elem("output", self.out_eb)
        res = (("acc", aslot),)

        def store(sram, dram, y, x, stride, block, param_step):
            if not self.store_tail:
                self.store(mem, sram, dram, y, x, stride, reads=res)
                return
            param_row = self.param_layout["store"][0] + PARAM_ROWS * block
            self.store(mem, sram, dram, y, x, stride, reads=res + (("params",),), writes=res,
                       param_row=param_row, param_step=param_step)  # fmt: skip

        if g.kind == "dense":  # [pixel][co]: the parameters advance with x
            store(acc_base, out + st.ox0 * g.COB + st.co0, st.tw, st.nco, g.COB, st.co0, (0, 1))
            return
        plane = g.OH * g.OW
        npix = st.th * st.tw
        if st.tw == g.OW and plane <= MAX_STRIDE:  # one row per output block
            store(acc_base, out + st.co0 * plane + st.oy0 * g.OW, st.nco, npix, plane, st.co0,
                  (1, 0))  # fmt: skip
            return
        for k in range(st.nco):
            store(acc_base + k * npix, out + (st.co0 + k) * plane + st.oy0 * g.OW + st.ox0,
                  st.th, st.tw, g.OW, st.co0 + k, (0, 0))  # fmt: skip

    def load_consts(self):
        """The zero-point GEMM's constant input row and weight tile, the bias GEMM's."""
        plan, blk = self.plan, self.blk
        if self.zp:
            self.load(MemType.INP, plan.inp_const, self.elem("one_row", blk), 1, 1,
                      module=LOAD, writes=(("inpc",),))  # fmt: skip
            self.load(MemType.WGT, plan.wgt_const, self.elem("zp_tile", blk * blk), 1, 1,
                      module=LOAD, writes=(("wgtc",),))  # fmt: skip
        if self.gemm_bias:
            self.load(MemType.INP, plan.inp_bias, self.elem("bias_row", blk), 1, 1,
                      module=LOAD, writes=(("biasc",),))  # fmt: skip
            self.load(MemType.WGT, plan.wgt_bias, self.elem("bias_tiles", blk * blk), 1,
                      self.g.COB, module=LOAD, writes=(("biasc",),))  # fmt: skip

    # --- the whole layer ---
    def run(self) -> LayerProgram:
        """The layer's program: emitted and resolved by libqaccel_stream (`run_c`) when it is
        built, else (or when it refuses the layer) by this emitter's step loop (`run_py`, the
        reference; both give the same program)."""
        done = self.run_c()
        return done if done is not None else self.run_py()

    def run_c(self) -> LayerProgram | None:
        """`run()` by libqaccel_stream's `vta_gemm_emit`: the loop nest walked and the stream
        resolved in one call; None when the library is unavailable, disabled
        (`QACCEL_NO_CGEMM=1`) or refuses the layer (e.g. a micro-op index outside its field:
        `run_py` then raises as it does)."""
        if os.environ.get("QACCEL_NO_CGEMM") == "1" or not cstream.library():
            return None
        params = self.c_params()
        if params is None:
            return None
        rc, fields, words, uops, n_uop_loads = cstream.gemm_call(params, self.c)
        if rc != cstream.OK:
            return None
        program = Program(self.c, words, uops)
        program.know_fields(fields.view(FIELDS_DTYPE).reshape(-1))  # the report decodes it
        return self.program_of(program, n_uop_loads)

    def c_params(self) -> np.ndarray | None:
        """`vta_gemm_emit`'s parameters (`cstream.GEMM_INDEX`), or None for a layer it does
        not describe (a tail op or bias mode it does not know)."""
        g, s, plan, layer, blk = self.g, self.s, self.plan, self.layer, self.blk
        if (s.bias_mode not in cstream.GEMM_BIAS_MODES or len(g.tail) > 8
                or any(op not in cstream.GEMM_TAIL_OPS for op in g.tail)
                or len(self.param_layout) > 5
                or any(k not in cstream.GEMM_PARAM_KINDS for k in self.param_layout)):  # fmt: skip
            return None
        ix = cstream.GEMM_INDEX
        p = np.zeros(cstream.GEMM_N, np.int64)
        regions = self.regions

        def elem(name: str, nbytes: int) -> int:
            return regions[name][0] // nbytes if name in regions else -1

        shift = None if layer.shift is None else np.asarray(layer.shift).reshape(-1)
        has_shift = shift is not None and len(shift) > 0  # `shift[0]`: the tail's immediates
        lo, hi = max(layer.act_min, -128), min(layer.act_max, 127)
        z = layer.output_zero_point
        values = {
            "KIND": ("conv", "depthwise", "dense").index(g.kind) if g.kind in (
                "conv", "depthwise", "dense") else -1,
            "H": g.H, "W": g.W, "KH": g.KH, "KW": g.KW, "SH": g.sh, "SW": g.sw, "DH": g.dh,
            "DW": g.dw, "PAD_T": g.pad_t, "PAD_L": g.pad_l, "OH": g.OH, "OW": g.OW,
            "CIB": g.CIB, "COB": g.COB, "DEPTH_MULTIPLIER": g.depth_multiplier,
            "BATCH": g.batch, "ROW_SUBSAMPLE": g.row_subsample, "DIAGONAL": g.diagonal,
            "INT32_OUTPUT": g.int32_output, "HAS_BIAS": g.has_bias, "IZP": g.input_zero_point,
            "TH": s.tile_h, "TW": s.tile_w, "TCO": s.tile_co, "TCI": s.tile_ci,
            "LOOP_SPATIAL": s.loop_order == "spatial", "INP_SLOTS": s.inp_slots,
            "WGT_SLOTS": s.wgt_slots, "ACC_SLOTS": s.acc_slots, "ZP": self.zp,
            "GEMM_BIAS": self.gemm_bias, "STORE_TAIL": self.store_tail,
            "RUNTIME_WEIGHTS": bool(layer.runtime_weights),
            "RUNTIME_INIT": bool(layer.runtime_init),
            "BIAS_MODE": cstream.GEMM_BIAS_MODES.index(s.bias_mode), "PARAM_ROWS": PARAM_ROWS,
            "HAS_SHIFT": has_shift,
            "INP_CONST": plan.inp_const, "INP_BIAS": plan.inp_bias, "INP_BASE": plan.inp_base,
            "INP_SLOT_ROWS": plan.inp_slot_rows, "WGT_CONST": plan.wgt_const,
            "WGT_BIAS": plan.wgt_bias, "WGT_BASE": plan.wgt_base,
            "WGT_SLOT_TILES": plan.wgt_slot_tiles, "ACC_BASE": plan.acc_base,
            "ACC_SLOT_ROWS": plan.acc_slot_rows,
            "E_INPUT": elem("input", blk), "E_OUTPUT": elem("output", self.out_eb),
            "E_WEIGHTS": elem("weights", blk * blk), "E_INIT": elem("init", 4 * blk),
            "E_BIAS": elem("bias", 4 * blk), "E_PAD_ROW": elem("pad_row", blk),
            "E_PARAMS": elem("params", 4 * blk),
            "PARAMS_N": regions["params"][1] // (4 * blk) if "params" in regions else -1,
            "E_ONE_ROW": elem("one_row", blk), "E_ZP_TILE": elem("zp_tile", blk * blk),
            "E_BIAS_ROW": elem("bias_row", blk), "E_BIAS_TILES": elem("bias_tiles", blk * blk),
            "LSH_IMM": -max(int(shift[0]), 0) if has_shift else 0,
            "RSHR_IMM": max(-int(shift[0]), 0) if has_shift else 0,
            "CLAMP_LO": lo - z, "CLAMP_HI": hi - z,
        }  # fmt: skip
        if values["KIND"] < 0:
            return None
        for name, v in values.items():
            p[ix[name]] = int(v)
        for k, f in enumerate(layout_of(self.c).uop):
            p[ix["UOP_BIT"] + k], p[ix["UOP_WIDTH"] + k] = f.bit, f.width
        p[ix["PARAMS"] : ix["PARAMS"] + 15] = -1
        for k, (kind, (start, per)) in enumerate(self.param_layout.items()):
            at = ix["PARAMS"] + 3 * k
            p[at : at + 3] = cstream.GEMM_PARAM_KINDS.index(kind), start, per
        for k, op in enumerate(g.tail):
            p[ix["TAIL"] + k] = cstream.GEMM_TAIL_OPS.index(op)
        return p

    def run_py(self) -> LayerProgram:
        """`run()` by this emitter's step loop (the reference of `run_c`)."""
        g, s = self.g, self.s
        blk = self.blk
        if g.input_zero_point != 0 and g.kind != "dense":
            self.add(LOAD, _row(Opcode.SETPAD, pad_value=g.input_zero_point))
        if "params" in self.regions:
            off, n = self.regions["params"]
            self.load(MemType.ACC, 0, off // (4 * blk), 1, n // (4 * blk), module=COMPUTE,
                      writes=(("params",),))  # fmt: skip
        consts_loaded = not (self.zp or self.gemm_bias)
        # A batch: the outer loop, each image one pass of the loop nest on its own slabs of
        # the input and output (the parameters and constants are loaded once).
        steps = plan_steps(s)
        for self.image in range(g.batch):
            consts_loaded = self.image_pass(steps, consts_loaded)
        self.finish()
        return self.finalize()

    def image_pass(self, steps, consts_loaded: bool) -> bool:
        """One pass of the loop nest (one image); whether the constants are loaded."""
        g = self.g
        for sp in steps:
            st, islot, wslot = sp.step, sp.inp_slot, sp.wgt_slot
            for kind, chunk, slot, part in sp.loads:
                if chunk is not st and not consts_loaded:  # before the first prefetch
                    self.load_consts()
                    consts_loaded = True
                if kind == "inp":
                    self.load_frame(chunk, slot)
                else:
                    self.load_weights(chunk, slot, part)
            if not consts_loaded:
                self.load_consts()
                consts_loaded = True
            aslot = sp.acc_slot
            if st.first:
                # A one-row tile accumulates into two rows when its first (largest) reduction
                # step needs it; later steps may use one row, the tail adds both either way.
                red = g.taps * (1 if g.diagonal else st.nci)
                split = pixel_block(st.nco, red, st.th, st.tw) is None
                self.init_tile(st, aslot, split)
            self.gemm_step(st, islot, wslot, aslot)
            if st.last:
                self.tail(st, aslot, split)
                self.store_tile(st, aslot)
        return consts_loaded

    def finalize(self) -> LayerProgram:
        return self.program_of(*self.encode_stream())

    def program_of(self, program: Program, n_uop_loads: int) -> LayerProgram:
        """The `LayerProgram` of this layer's encoded stream (e.g. one `run()` made in
        another process: the DRAM layout and constants are this emitter's)."""
        return LayerProgram(
            layer=self.layer, schedule=self.s, config=self.c, program=program,
            dram_size=self.dram_size, input_offset=self.regions["input"][0],
            input_nbytes=self.regions["input"][1], output_offset=self.regions["output"][0],
            output_nbytes=self.regions["output"][1], constants=self.constants,
            regions=dict(self.regions), uop_loads=n_uop_loads,
            constants_offset=self.constants_offset,
        )  # fmt: skip


def emit(layer: ConvLayer, sched: Schedule, config: HardwareConfig | None = None,
         placement: Placement | None = None) -> LayerProgram:  # fmt: skip
    """The program, micro-ops and DRAM layout of `layer` under `sched` (see the module doc),
    in an image of its own or where `placement` puts it."""
    return _Emitter(layer, sched, config or DEFAULT_CONFIG, placement).run()


def prepare_emit(layer: ConvLayer, sched: Schedule, config: HardwareConfig | None = None,
                 placement: Placement | None = None) -> _Emitter:  # fmt: skip
    """`emit` in two steps: the layer's DRAM layout and constants now (`.constants`, which
    do not depend on the stream), the program when `.run()` is called (once)."""
    return _Emitter(layer, sched, config or DEFAULT_CONFIG, placement)
