"""Instruction emission for element-wise layers (`AluLayer`: residual adds and their
requantization): int8 tensors in DRAM, ALU ops on the accumulator buffer, int8 out.

    prog = emit_alu(layer, inputs_at=[off_a, off_b], output_at=off_y, constants_at=off_c)

The rows of every packed tensor (`[blocks][H*W][16]` int8) are processed in chunks of at most
`chunk_rows` rows of one channel block. For each chunk the compute module loads every input
widened (LOAD ACC8) into its temp, runs the layer's steps over the chunk's rows (one ALU
instruction per step, immediates for per-tensor values that fit 16 bits, parameter rows read
with a zero source stride otherwise), and the store module writes the result temp narrowed
(STORE OUT). Chunks alternate between two sets of temps, so the store of one chunk overlaps
the next chunk's compute; the dependency tokens come from the same slot bookkeeping as the
convolution emitter's. The parameter rows are loaded once, first.

    ACC rows: [params][set 0: temp 0 .. temp T-1][set 1: temp 0 .. temp T-1], R rows a temp

A broadcast input (`broadcast`: one row per channel block, a squeeze-excite scale) is loaded
as the chunk's block's one row; the steps on it run on that row, and a step reading it from a
temp of the map's rows reads it with source factors 0 (every row the same operand).

A global sum pool (`reduce` = H*W rows per block) works on chunks of R whole blocks: the
inputs' rows are loaded whole, the steps before the sum run with an outer loop over blocks
(per-block parameter rows advance with it) and an inner loop over their rows, the R sums are
zeroed (GEMM reset) and accumulated by one ALU ADD walking blocks and rows, and the remaining
steps run on the sums.

A batch of N images (`images`) is an outer loop: each image's chunks in turn, on its own slabs
of the inputs and the output, with the same parameter rows (loaded once); the sets of temps
keep alternating across images.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig
from qaccel.lowering.vta.emit import COMPUTE, _Stream, small_uops
from qaccel.targets.vta.isa import AluOp, MemType, Program
from qaccel.lowering.vta.layers import AluLayer, PoolLayer, output_stage
from qaccel.lowering.vta.geometry import LayerError


@dataclass
class AluProgram:
    """An element-wise layer ready to run in a shared DRAM image."""

    layer: AluLayer | PoolLayer
    config: HardwareConfig
    program: Program
    chunk_rows: int
    constants: np.ndarray  # the parameter rows' bytes, at `constants_offset`
    constants_offset: int
    uop_loads: int = 0
    stage_steps: int = 0  # trailing steps the store module's output stage runs (STORE OUTQ)

    def timing(self):
        from qaccel.targets.vta.simulator import timing

        return timing(self.program, self.config)


def chunk_rows(layer: AluLayer, config: HardwareConfig, n_params: int | None = None) -> int:
    """The largest chunk two sets of temps (and, for a sum pool, their sums) hold next to the
    `n_params` parameter rows (default: the layer's) and the ALU's iteration field counts:
    rows, or blocks of a sum pool."""
    free = config.depth("acc") - (len(layer.params) if n_params is None else n_params)
    if layer.reduce > 1:
        rows = min(layer.blocks, free // (2 * (layer.n_inputs * layer.reduce + 1)), (1 << 14) - 1)
    else:
        rows = min(layer.rows, free // (2 * layer.n_inputs), (1 << 14) - 1)
    if rows < 1:
        raise LayerError(f"{len(layer.params)} parameter rows leave no room for the temps")
    return rows


def _rows(layer: AluLayer | PoolLayer, rows: int | None, most: int, what: str) -> int:
    """A schedule's `rows` (checked to fit: at most `most`), or `most`."""
    if rows is None:
        return most
    if not 1 <= rows <= most:
        raise LayerError(f"{layer.name}: {what} {rows} rows do not fit (at most {most})")
    return rows


class _AluEmitter(_Stream):
    """Element-wise layers; the pool emitter below shares its steps, stores and parameters."""

    def __init__(self, layer: AluLayer | PoolLayer, config: HardwareConfig,
                 inputs_at: list[int], output_at: int, constants_at: int,
                 rows: int | None = None, use_stage: bool | None = None):  # fmt: skip
        align = config.elem_bytes("acc")  # int8 rows and int32 parameter rows
        if any(v % align for v in (*inputs_at, output_at, constants_at)):
            raise LayerError(f"{layer.name}: DRAM regions must be {align}-byte aligned")
        super().__init__(config)
        self.layer = layer
        self.inputs_at, self.output_at, self.constants_at = inputs_at, output_at, constants_at
        self.steps, self.params = list(layer.steps), np.asarray(layer.params, np.int32)
        self.stage_row = None  # the output stage's parameter block, when it runs the tail
        result, first = self.stage_scope()
        stage = output_stage(self.steps, result, self.params, first, layer.block) if (
            config.store_requant and use_stage is not False) else None  # fmt: skip
        if use_stage and stage is None:
            raise LayerError(f"{layer.name}: the store module's output stage cannot run the "
                             "layer's tail (no store_requant, or not a requantization)")
        if stage is not None:
            cut, stage_rows = stage
            self.steps, self.stage_row = self.steps[:cut], len(self.params)
            self.params = np.concatenate([self.params.reshape(-1, layer.block), stage_rows])
        self.n_params = len(self.params)
        self.layout(rows)

    def stage_scope(self) -> tuple[int, int]:
        """(the temp the steps leave the result in, the first step the output stage may
        take): a sum pool's stage can only take steps after the sum."""
        lay = self.layer
        return lay.result, (lay.reduce_at if lay.reduce > 1 else 0)

    def layout(self, rows: int | None) -> None:
        """Accumulator rows: chunk size (`rows`, a schedule's, or as many as fit), temps and
        (for a sum pool) sums of each set."""
        layer = self.layer
        self.R = _rows(layer, rows, chunk_rows(layer, self.c, self.n_params), "chunks of")
        self.span = self.R * layer.reduce  # rows of one temp
        self.set_rows = layer.n_inputs * self.span + (self.R if layer.reduce > 1 else 0)

    def temp_row(self, slot: int, temp: int) -> int:
        return self.n_params + slot * self.set_rows + temp * self.span

    def sums_row(self, slot: int) -> int:
        """A sum pool's R sums, after the set's temps."""
        return self.temp_row(slot, self.layer.n_inputs)

    def uop(self, dst: int, src: int):
        key = ("alu", dst, src)
        return self.kernel(key, lambda: small_uops((dst,), (src,), (0,), self.c))

    def load_params(self) -> None:
        if self.n_params:
            self.load(MemType.ACC, 0, self.constants_at // (4 * self.layer.block), 1,
                      self.n_params, module=COMPUTE, writes=(("params",),))  # fmt: skip

    def program(self, rows_per_chunk: int) -> AluProgram:
        """FINISH, encode, and the layer's program with its parameter rows' bytes."""
        self.finish()
        program, loads = self.encode_stream()
        lay = self.layer
        return AluProgram(lay, self.c, program, rows_per_chunk, self.constants, self.constants_at,
                          loads, len(lay.steps) - len(self.steps))  # fmt: skip

    @property
    def constants(self) -> np.ndarray:
        """The parameter rows' bytes (known before the program is emitted)."""
        return np.ascontiguousarray(self.params, dtype="<i4").reshape(-1).view(np.uint8)

    def image_bytes(self) -> tuple[int, int]:
        """(bytes of one image of each input, of the output): a batch's outer loop steps by
        them."""
        lay = self.layer
        return lay.blocks * lay.rows * lay.reduce * lay.block, lay.blocks * lay.rows * lay.block

    def run(self) -> AluProgram:
        self.load_params()
        # A batch: an outer loop over the images, each on its own slabs of the inputs and the
        # output, with the same parameter rows (loaded once).
        first_inputs, first_output = list(self.inputs_at), self.output_at
        step_in, step_out = self.image_bytes()
        lay = self.layer
        # A broadcast input holds one row per block of each image.
        steps_in = [lay.blocks * lay.block if k in getattr(lay, "broadcast", ()) else step_in
                    for k in range(len(first_inputs))]  # fmt: skip
        chunk = 0
        for n in range(self.layer.images):
            self.inputs_at = [at + n * st for at, st in zip(first_inputs, steps_in)]
            self.output_at = first_output + n * step_out
            chunk = self.image_pass(chunk)
        self.inputs_at, self.output_at = first_inputs, first_output
        return self.program(self.rows_per_chunk())

    def rows_per_chunk(self) -> int:
        return self.R

    def image_pass(self, chunk: int) -> int:
        """One image's chunks, numbered from `chunk` (their sets of temps alternate); the next
        chunk's number."""
        lay = self.layer
        if lay.reduce > 1:
            for b0 in range(0, lay.blocks, self.R):
                self.pool_chunk(chunk % 2, b0, min(self.R, lay.blocks - b0))
                chunk += 1
        for b in range(lay.blocks if lay.reduce == 1 else 0):
            for r0 in range(0, lay.rows, self.R):
                n = min(self.R, lay.rows - r0)
                self.chunk(chunk % 2, b, b * lay.rows + r0, n)
                chunk += 1
        return chunk

    def step(self, s, dst: int, src_temp, b: int, n_out: int, n_in: int, dst_f, temp_f,
             block_f, res):  # fmt: skip
        """One step over n_out x n_in rows: `src_temp(t)` is temp t's first row, `block_f`
        the source factors of per-block parameter rows."""
        reads = res + ((("params",),) if s.kind == "param" else ())
        if s.kind == "temp":
            key = self.uop(dst, src_temp(s.operand))
            self.alu(AluOp[s.op], key, None, n_out, n_in, dst_f, temp_f, reads=reads, writes=res)
        elif s.kind == "imm":
            key = self.uop(dst, 0)
            self.alu(AluOp[s.op], key, None, n_out, n_in, dst_f, imm=s.operand, reads=reads,
                     writes=res)  # fmt: skip
        else:
            key = self.uop(dst, s.operand + (b if s.per_block else 0))
            src_f = block_f if s.per_block else (0, 0)
            self.alu(AluOp[s.op], key, None, n_out, n_in, dst_f, src_f, reads=reads, writes=res)

    def store_rows(self, sram: int, row: int, n: int, res):
        """STORE OUT `n` rows to output row `row`, or STORE OUTQ through the output stage's
        parameter block."""
        dram = self.output_at // self.layer.block + row
        if self.stage_row is None:
            self.store(MemType.OUT, sram, dram, 1, n, n, reads=res)
        else:
            self.store(MemType.OUTQ, sram, dram, 1, n, n, reads=res + (("params",),),
                       param_row=self.stage_row)  # fmt: skip

    def chunk(self, slot: int, b: int, row: int, n: int):
        """`n` rows of channel block `b` from output row `row`."""
        lay = self.layer
        res = (("acc", slot),)
        bcast = lay.broadcast
        for k, at in enumerate(self.inputs_at):
            # A broadcast input: block b's one row, read by every row of the chunk.
            src, count = (b, 1) if k in bcast else (row, n)
            self.load(MemType.ACC8, self.temp_row(slot, k), at // lay.block + src, 1, count,
                      module=COMPUTE, writes=res)  # fmt: skip
        for s in self.steps:
            rows = 1 if s.dst in bcast else n
            src_f = (0, 0) if s.kind == "temp" and s.operand in bcast else (0, 1)
            self.step(s, self.temp_row(slot, s.dst), lambda t: self.temp_row(slot, t), b, 1,
                      rows, (0, 1), src_f, (0, 0), res)  # fmt: skip
        self.store_rows(self.temp_row(slot, lay.result), row, n, res)

    def pool_chunk(self, slot: int, b0: int, n: int):
        """Blocks b0 .. b0+n-1 of a sum pool: every input row through the first steps (outer
        loop over blocks, inner over the block's rows), the sum, the rest on the n sums."""
        lay = self.layer
        r = lay.reduce
        res = (("acc", slot),)
        for k, at in enumerate(self.inputs_at):
            self.load(MemType.ACC8, self.temp_row(slot, k), at // lay.block + b0 * r, 1, n * r,
                      module=COMPUTE, writes=res)  # fmt: skip
        for s in self.steps[: lay.reduce_at]:
            self.step(s, self.temp_row(slot, s.dst), lambda t: self.temp_row(slot, t), b0, n, r,
                      (r, 1), (r, 1), (1, 0), res)  # fmt: skip
        sums = self.sums_row(slot)
        self.gemm(self.uop(sums, 0), n, 1, dst=(1, 0), reset=True, writes=res)  # sums = 0
        key = self.uop(sums, self.temp_row(slot, lay.result))
        self.alu(AluOp.ADD, key, None, n, r, (1, 0), (r, 1), reads=res, writes=res)
        for s in self.steps[lay.reduce_at :]:
            self.step(s, sums, lambda t: sums, b0, 1, n, (0, 1), (0, 1), (0, 1), res)
        self.store_rows(sums, b0, n, res)


def prepare_alu(layer: AluLayer | PoolLayer, config: HardwareConfig | None = None, *,
                inputs_at: list[int], output_at: int, constants_at: int, rows: int | None = None,
                output_stage: bool | None = None, pool: bool = False) -> _AluEmitter:  # fmt: skip
    """`emit_alu` (or, with `pool`, `emit_pool`) in two steps: the parameter rows' bytes now
    (`.constants`), the program when `.run()` is called (once)."""
    cls = _PoolEmitter if pool else _AluEmitter
    return cls(layer, config or DEFAULT_CONFIG, inputs_at, output_at, constants_at, rows,
               output_stage)  # fmt: skip


def emit_alu(layer: AluLayer, config: HardwareConfig | None = None, *, inputs_at: list[int],
             output_at: int, constants_at: int, rows: int | None = None,
             output_stage: bool | None = None) -> AluProgram:  # fmt: skip
    """The program of an element-wise layer whose inputs, output and parameter rows live at
    the given byte offsets of a DRAM image; `rows` / `output_stage` as a schedule gives them
    (default: as many rows as fit; the output stage when the configuration has one)."""
    return _AluEmitter(layer, config or DEFAULT_CONFIG, inputs_at, output_at, constants_at,
                       rows, output_stage).run()  # fmt: skip


@dataclass(frozen=True)
class AluPlan:
    """What the emitter decides for an element-wise or pool layer (its schedule): rows of a
    channel block at a time (element-wise chunk, or output rows of a pool tile), parameter
    rows loaded first into the accumulator buffer, and whether the store module's output
    stage runs the requantizing tail."""

    rows: int
    param_rows: int
    output_stage: bool


def plan_alu(layer: AluLayer | PoolLayer, config: HardwareConfig | None = None, *,
             rows: int | None = None, output_stage: bool | None = None) -> AluPlan:  # fmt: skip
    """The emitter's decisions for `layer` (given ones checked); `LayerError` when it does
    not fit or the output stage cannot run its tail."""
    cls = _PoolEmitter if isinstance(layer, PoolLayer) else _AluEmitter
    e = cls(layer, config or DEFAULT_CONFIG, [0] * layer.n_inputs, 0, 0, rows, output_stage)
    return AluPlan(e.th if isinstance(e, _PoolEmitter) else e.R, e.n_params,
                   e.stage_row is not None)  # fmt: skip


# --------------------------------------------------------------------------------------------
# Windowed pools


def pool_tile_rows(layer: PoolLayer, config: HardwareConfig, n_params: int | None = None) -> int:
    """Output rows per tile: two sets of (input frame + output tile) next to the `n_params`
    parameter rows (default: the layer's)."""
    free = config.depth("acc") - (len(layer.params) if n_params is None else n_params)
    for th in range(layer.OH, 0, -1):
        frame = ((th - 1) * layer.sh + layer.KH) * layer.W * layer.n_inputs
        if 2 * (frame + th * layer.OW) <= free:
            return th
    raise LayerError(f"one output row of {layer.describe()} does not fit in the accumulators")


class _PoolEmitter(_AluEmitter):
    """Per channel block and tile of output rows: LOAD ACC8 the input rows the tile's windows
    read (of every input, then the pre-steps over them for a computed tensor), set the tile to the pool's identity (GEMM reset; ADD -128 for max), one ALU
    instruction per tap over the output pixels whose tap lies inside the input (padding taps
    are skipped: the padding holds the identity), the steps, STORE OUT."""

    def stage_scope(self) -> tuple[int, int]:
        return 0, 0  # the steps run on the pooled tile

    def layout(self, rows: int | None) -> None:
        """Accumulator rows: each set holds every input's frame, then the output tile."""
        layer = self.layer
        self.th = _rows(layer, rows, pool_tile_rows(layer, self.c, self.n_params), "tiles of")
        self.frame_rows = ((self.th - 1) * layer.sh + layer.KH) * layer.W
        self.set_rows = layer.n_inputs * self.frame_rows + self.th * layer.OW

    def frame(self, slot: int, k: int = 0) -> int:
        return self.n_params + slot * self.set_rows + k * self.frame_rows

    def tile(self, slot: int) -> int:
        return self.frame(slot, self.layer.n_inputs)

    def image_bytes(self) -> tuple[int, int]:
        lay = self.layer
        return lay.blocks * lay.H * lay.W * lay.block, lay.blocks * lay.OH * lay.OW * lay.block

    def image_pass(self, n: int) -> int:
        lay = self.layer
        for b in range(lay.blocks):
            for oy0 in range(0, lay.OH, self.th):
                self.pool_tile(n % 2, b, oy0, min(self.th, lay.OH - oy0))
                n += 1
        return n

    def rows_per_chunk(self) -> int:
        return self.th

    def pool_tile(self, slot: int, b: int, oy0: int, th: int):
        lay = self.layer
        t, _, left, _ = lay.pad
        res = (("acc", slot),)
        iy_lo = max(0, oy0 * lay.sh - t)
        iy_hi = min(lay.H - 1, (oy0 + th - 1) * lay.sh - t + lay.KH - 1)
        tile, rows = self.tile(slot), th * lay.OW
        n_in = (iy_hi - iy_lo + 1) * lay.W
        for k, at in enumerate(self.inputs_at):
            dram = at // lay.block + (b * lay.H + iy_lo) * lay.W
            self.load(MemType.ACC8, self.frame(slot, k), dram, 1, n_in, module=COMPUTE,
                      writes=res)  # fmt: skip
        for s in lay.pre_steps:  # a computed pooled tensor, on every loaded row
            self.step(s, self.frame(slot, s.dst), lambda t: self.frame(slot, t), b, 1, n_in,
                      (0, 1), (0, 1), (0, 0), res)  # fmt: skip
        frame = self.frame(slot, lay.pooled)
        self.gemm(self.uop(tile, 0), rows, 1, dst=(1, 0), reset=True, writes=res)
        if lay.op == "MAX":
            self.alu(AluOp.ADD, self.uop(tile, 0), None, 1, rows, (0, 1), imm=-128, reads=res,
                     writes=res)  # fmt: skip
        for ky in range(lay.KH):
            # Output rows oy whose tap row oy*sh - t + ky lies in [0, H) and in this tile.
            a = max(oy0, -(-(t - ky) // lay.sh))
            z = min(oy0 + th - 1, (lay.H - 1 + t - ky) // lay.sh)
            for kx in range(lay.KW):
                c0 = max(0, -(-(left - kx) // lay.sw))
                c1 = min(lay.OW - 1, (lay.W - 1 + left - kx) // lay.sw)
                if a > z or c0 > c1:
                    continue
                dst = tile + (a - oy0) * lay.OW + c0
                src = frame + (a * lay.sh - t + ky - iy_lo) * lay.W + c0 * lay.sw - left + kx
                self.alu(AluOp[lay.op], self.uop(dst, src), None, z - a + 1, c1 - c0 + 1,
                         (lay.OW, 1), (lay.sh * lay.W, lay.sw), reads=res, writes=res)  # fmt: skip
        for s in self.steps:
            self.step(s, tile, lambda _: tile, b, 1, rows, (0, 1), (0, 1), (0, 0), res)
        self.store_rows(tile, (b * lay.OH + oy0) * lay.OW, rows, res)


def emit_pool(layer: PoolLayer, config: HardwareConfig | None = None, *, inputs_at: list[int],
              output_at: int, constants_at: int, rows: int | None = None,
              output_stage: bool | None = None) -> AluProgram:  # fmt: skip
    """The program of a windowed pool whose inputs, output and parameter rows live at the
    given byte offsets of a DRAM image; `rows` (output rows of a tile) / `output_stage` as
    for `emit_alu`."""
    return _PoolEmitter(layer, config or DEFAULT_CONFIG, inputs_at, output_at, constants_at,
                        rows, output_stage).run()  # fmt: skip
