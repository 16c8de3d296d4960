"""`lower-q-to-accel{bias-placement=alu|preload}`: the method's operator-level transformation (step
4): inside accelerator functions, q ops become the `accel` ops the accelerator executes, on the
packed layout.

Input: the output of `insert-pack-unpack`: accelerator functions (`qaccel.target`, marked
`accel.packed`) take and return packed tensors, unpack them on entry, pack results before
returning, and reach packed weight constants through an `accel.unpack`. The pass rewrites the
body to compute on packed data directly and drops those conversions; the signature does not
change. Host functions keep their q ops. A conv group (canonicalized; the relu merged):

    %x = accel.unpack %arg0 ...                     %acc = accel.conv2d_zp %arg0, %w_packed
    %w = accel.unpack %w_packed ...                        pad_value(-1) strides = [1, 1] ...
    %a = q.conv2d %x, %w {input_zero_point = -1}    %b = accel.bias_add_zp %acc by [...]
    %b = q.bias_add %a, %bias                =>     %m = accel.round_multiply %b by [...]
    %y = q.requantize %b {multiplier, shift,        %r = accel.round_rshift %m by [...]
           output_zero_point = -128}                %l = accel.max %r by [0]    (-128 - zp)
    %z = q.relu %y {min = -128, max = 127}          %h = accel.min %l by [255]  (127 - zp)
    %p = accel.pack %z ...                          %o = accel.add %h by [-128]
    func.return %p                                  %n = accel.narrow %o : i32 -> i8
                                                    func.return %n

## Where each kind of op is lowered (`lowering/q_to_accel/`, exact: docs/isa.md §7)

- `accumulate.py`: `q.conv2d` / `q.depthwise_conv2d` / `q.dense` -> `accel.conv2d_zp` /
  `accel.dense_zp` over raw int8 inputs padded with the input zero point, `zp_in Σw`, the
  following `q.bias_add` and the requantization's input zero point folded into one bias at
  compile time (`bias-placement`: added by the ALU after the GEMM, `accel.bias_add_zp`, or
  preloaded into the accumulators); grouped and depthwise filters as block-diagonal tiles.
- `requantize.py`: `q.bias_add`, fixed-point `q.requantize` (shift, SRDHM, rounding shift,
  clamp before the zero point, `accel.narrow`), double-scale `q.requantize` on the host
  (`accel.host_requantize`: FULLY_CONNECTED rounds `double(acc) * scale`), `q.relu`, `q.lut`.
- `elementwise.py`: `q.add` / `q.sub` / `q.mul` with tensor, per-channel or scalar sides.
- `pool.py`: `q.max_pool2d`, `q.avg_pool2d` (power-of-two windows on the ALU, the rest as
  `accel.host_pool2d`), `q.mean` over H and W.
- `data_movement.py`: `q.pad`, `q.slice`, `q.reshape`, `q.concat`, `q.depth_to_space`.
- `resize.py`: `q.resize_nearest_neighbor`, `q.resize_bilinear`, `q.col2im`.
- `function.py`: `FunctionLowering`, the per-function state and the arithmetic they share
  (packed forms, constants, widening, requantization, saturation).

int8 data reaches the ALU through `accel.widen` (LOAD ACC8).

An accelerator function holding anything else (an op the target did not accept, a
non-constant weight or bias, a pool with padding, ...) makes the pass fail with one line naming
the function, the op and the reason. Afterwards the `accel` canonicalization patterns run
(`canonicalize-accel`; `canonicalize=false` keeps the raw sequences).

## Structure

The channel block B is the module's target's (`#accel.target`, from `attach-target`). One
`RewritePattern` per q-op family (`PATTERNS`: `LowerAccumulate`, `LowerBiasAdd`,
`LowerRequantize`, ...) is applied by a `PatternRewriteWalker` once per op, in program order
(`dce_enabled=False`: unused pure ops stay until the end). Each replaces its op by the lowered
ops on packed values followed by an `accel.unpack` to the op's plain type, so the IR is valid
after every rewrite; a later pattern takes its operand's packed form from that unpack, and at
the end the function's result packs of those unpacks become the packed values and every unused
conversion and constant is erased. Each kind's lowering is a function
`lower_<kind>(fl: FunctionLowering, op) -> SSAValue` in the module of its kind; a new kind of
op is such a function (in its kind's module or a new one), a pattern here calling it through
`_LowerQOp.lower`, and its q op in `LOWERED_OPS`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import (
    PatternRewriter,
    PatternRewriteWalker,
    RewritePattern,
    op_type_rewrite_pattern,
)
from xdsl.utils.exceptions import PassFailedException

from qaccel.targets.base import TargetError, module_target
from qaccel.dialects import q
from qaccel.dialects.annotations import accelerator_functions
from qaccel.passes.canonicalize_accel import canonicalize_accel
from qaccel.lowering.q_to_accel import accumulate, data_movement, elementwise, pool, requantize
from qaccel.lowering.q_to_accel import attention
from qaccel.lowering.q_to_accel import resize
from qaccel.lowering.q_to_accel.function import PASS, BiasPlacement, FunctionLowering

__all__ = [
    "PASS", "PATTERNS", "LOWERED_OPS", "BiasPlacement", "FunctionLowering", "LowerQToAccelPass",
    "lower_functions",
]  # fmt: skip


# --------------------------------------------------------------------------------------------
# One rewrite pattern per q-op family; the arithmetic is in `q_to_accel/`.


@dataclass
class _LowerQOp(RewritePattern):
    functions: dict[func.FuncOp, FunctionLowering]
    OPS: ClassVar[tuple[type[Operation], ...]] = ()
    """The op classes the pattern rewrites (it leaves every other op alone)."""

    def lowering_of(self, op: Operation) -> FunctionLowering | None:
        return self.functions.get(op.parent_op())  # type: ignore[arg-type]

    def lower(
        self, op: q.QOp, rewriter: PatternRewriter,
        lower_kind: Callable[[FunctionLowering, Any], SSAValue],
    ) -> None:
        """Replace `op` by what `lower_kind` (a `lower_<kind>` of `q_to_accel/`) emits."""
        lowering = self.lowering_of(op)
        if lowering is not None:  # host functions keep their q ops
            lowering.replace(op, rewriter, lambda o: lower_kind(lowering, o))


class LowerAccumulate(_LowerQOp):
    """`q.conv2d` / `q.depthwise_conv2d` / `q.dense` (+ the `q.bias_add` it folds) ->
    `accel.conv2d_zp` / `accel.dense_zp` (+ `accel.bias_add_zp`)."""

    OPS = (q.Conv2DOp, q.DepthwiseConv2DOp, q.DenseOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, q.Conv2DOp | q.DepthwiseConv2DOp | q.DenseOp):
            self.lower(op, rewriter, accumulate.lower_accumulate)


class LowerBiasAdd(_LowerQOp):
    """A `q.bias_add` no accumulating op folded -> `accel.bias_add_zp`."""

    OPS = (q.BiasAddOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.BiasAddOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, requantize.lower_bias_add)


class LowerRequantize(_LowerQOp):
    """`q.requantize` -> shift/multiply/round + clamp + zero point, or `accel.host_requantize`."""

    OPS = (q.RequantizeOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.RequantizeOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, requantize.lower_requantize)


class LowerRelu(_LowerQOp):
    """`q.relu` -> `accel.max` + `accel.min`."""

    OPS = (q.ReluOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.ReluOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, requantize.lower_relu)


class LowerLut(_LowerQOp):
    """`q.lut` -> `accel.lut` (a host step of the program)."""

    OPS = (q.LutOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.LutOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, requantize.lower_lut)


class LowerAddSub(_LowerQOp):
    """`q.add` / `q.sub` -> rescaled sides, `accel.add`, output rescale and clamp."""

    OPS = (q.AddOp, q.SubOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, q.AddOp | q.SubOp):
            self.lower(op, rewriter, elementwise.lower_add_sub)


class LowerMul(_LowerQOp):
    """`q.mul` -> `accel.mul` of the centred sides, rescale and clamp."""

    OPS = (q.MulOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.MulOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, elementwise.lower_mul)


class LowerPool(_LowerQOp):
    """`q.max_pool2d` -> `accel.max_pool2d`; `q.avg_pool2d` -> `accel.sum_pool2d` + shift."""

    OPS = (q.MaxPool2DOp, q.AvgPool2DOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, q.MaxPool2DOp):
            self.lower(op, rewriter, pool.lower_max_pool)
        elif isinstance(op, q.AvgPool2DOp):
            self.lower(op, rewriter, pool.lower_avg_pool)


class LowerMean(_LowerQOp):
    """`q.mean` over H and W -> `accel.reduce_sum` + requantization."""

    OPS = (q.MeanOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.MeanOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, pool.lower_mean)


class LowerPad(_LowerQOp):
    """`q.pad` of H and W -> `accel.pad`."""

    OPS = (q.PadOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.PadOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, data_movement.lower_pad)


class LowerConcat(_LowerQOp):
    """`q.concat` -> `accel.concat`."""

    OPS = (q.ConcatOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.ConcatOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, data_movement.lower_concat)


class LowerReshape(_LowerQOp):
    """`q.reshape` keeping batch and channels -> `accel.reshape` (nothing moves); one that
    moves lanes -> `accel.relayout` (a gather step of the program)."""

    OPS = (q.ReshapeOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.ReshapeOp, rewriter: PatternRewriter) -> None:
        from qaccel.kernels.layout import reshape_is_view

        a, b = op.input.type.get_shape(), op.output.type.get_shape()
        lowering = self.lowering_of(op)
        if lowering is None or reshape_is_view(a, b, lowering.block):
            self.lower(op, rewriter, data_movement.lower_reshape)
        else:
            self.lower(op, rewriter, attention.lower_relayout)


class LowerSlice(_LowerQOp):
    """`q.slice` of the spatial dimensions -> `accel.crop`."""

    OPS = (q.SliceOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.SliceOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, data_movement.lower_slice)


class LowerDepthToSpace(_LowerQOp):
    """`q.depth_to_space` -> `accel.depth_to_space` (a gather step of the program)."""

    OPS = (q.DepthToSpaceOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.DepthToSpaceOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, data_movement.lower_depth_to_space)


class LowerAttention(_LowerQOp):
    """`q.transpose` -> `accel.relayout`; `q.softmax` -> `accel.softmax`; `q.batch_matmul` ->
    `accel.batch_matmul` (host steps of the program)."""

    OPS = (q.TransposeOp, q.SoftmaxOp, q.BatchMatmulOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, q.TransposeOp):
            self.lower(op, rewriter, attention.lower_relayout)
        elif isinstance(op, q.SoftmaxOp):
            self.lower(op, rewriter, attention.lower_softmax)
        elif isinstance(op, q.BatchMatmulOp):
            self.lower(op, rewriter, attention.lower_batch_matmul)


class LowerResize(_LowerQOp):
    """`q.resize_nearest_neighbor` / `q.resize_bilinear` -> `accel.resize_nearest_neighbor`
    (a gather step of the program) / `accel.resize_bilinear` (an interpolation step)."""

    OPS = (q.ResizeNearestNeighborOp, q.ResizeBilinearOp, q.Col2ImOp)

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter) -> None:
        if isinstance(op, q.ResizeNearestNeighborOp | q.ResizeBilinearOp):
            self.lower(op, rewriter, resize.lower_resize)
        elif isinstance(op, q.Col2ImOp):
            self.lower(op, rewriter, resize.lower_col2im)


PATTERNS: tuple[type[_LowerQOp], ...] = (
    LowerAccumulate, LowerBiasAdd, LowerRequantize, LowerRelu, LowerLut, LowerAddSub, LowerMul,
    LowerPool, LowerMean, LowerPad, LowerConcat, LowerReshape, LowerSlice, LowerDepthToSpace,
    LowerResize,
)  # fmt: skip
LOWERED_OPS: tuple[type[q.QOp], ...] = (
    q.Conv2DOp, q.DepthwiseConv2DOp, q.DenseOp, q.BiasAddOp, q.RequantizeOp, q.ReluOp, q.LutOp,
    q.AddOp, q.SubOp, q.MulOp, q.MaxPool2DOp, q.AvgPool2DOp, q.MeanOp, q.PadOp, q.ConcatOp,
    q.ReshapeOp, q.SliceOp, q.DepthToSpaceOp, q.ResizeNearestNeighborOp, q.ResizeBilinearOp,
    q.Col2ImOp,
)  # fmt: skip
"""The q ops the patterns lower (every other q op in an accelerator function is an error)."""


class LowerSquaredDifference(_LowerQOp):
    """`q.squared_difference` -> the rescaled sides' difference squared on the ALU."""

    OPS = (q.SquaredDifferenceOp,)

    @op_type_rewrite_pattern
    def match_and_rewrite(self, op: q.SquaredDifferenceOp, rewriter: PatternRewriter) -> None:
        self.lower(op, rewriter, elementwise.lower_squared_difference)


PATTERNS += (LowerSquaredDifference,)
LOWERED_OPS += (q.SquaredDifferenceOp,)
PATTERNS += (LowerAttention,)
LOWERED_OPS += (q.TransposeOp, q.SoftmaxOp, q.BatchMatmulOp)


class _PatternsOfKind(RewritePattern):
    """`GreedyRewritePatternApplier(patterns, dce_enabled=False)`, trying on each op only the
    patterns whose `OPS` it is one of (the others leave it alone), in the same order."""

    def __init__(self, patterns: list[_LowerQOp]):
        self.patterns = patterns
        self.of_kind: dict[type[Operation], list[_LowerQOp]] = {}

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        kind = type(op)
        patterns = self.of_kind.get(kind)
        if patterns is None:
            patterns = self.of_kind[kind] = [p for p in self.patterns if issubclass(kind, p.OPS)]
        for pattern in patterns:
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return


def lower_functions(functions: dict[func.FuncOp, FunctionLowering]) -> None:
    """Apply the patterns in program order over each accelerator function, once per op (new
    ops are not revisited; unused pure ops are not erased on the way: `dce_enabled=False`)."""
    applier = _PatternsOfKind([p(functions) for p in PATTERNS])
    for f, lowering in functions.items():
        lowering.check(LOWERED_OPS)
        PatternRewriteWalker(applier, apply_recursively=False).rewrite_region(f.body)
        lowering.finish()


@dataclass(frozen=True)
class LowerQToAccelPass(ModulePass):
    """Lower q ops inside accelerator functions to `accel` ops on the packed layout.

    The method's operator-level transformation: `q.conv2d` -> `accel.conv2d_zp` (padding with
    the input zero point), `q.bias_add` -> `accel.bias_add_zp` (`qbias - zp_in Σw`, folded at
    compile time), `q.requantize` -> `accel.round_multiply` + `accel.round_rshift` + clamp +
    `accel.add` of the output zero point + `accel.narrow`, `q.relu` -> `accel.max` +
    `accel.min`; FULLY_CONNECTED's double-precision requantization runs on the host
    (`accel.host_requantize`), and the other ops the vta target accepts lower to ALU and DMA
    ops. Entry unpacks, exit packs and weight unpacks disappear; signatures do not change;
    host functions are untouched. See the module docstring for the arithmetic.

        %a = q.conv2d %x, %w {...}           %acc = accel.conv2d_zp %x, %w_packed pad_value(-1) ...
        %b = q.bias_add %a, %bias      =>    %b = accel.bias_add_zp %acc by [...]
        %y = q.requantize %b {...}           %m = accel.round_multiply %b by [...]  ... narrow
    """

    name = "lower-q-to-accel"

    bias_placement: BiasPlacement = "alu"
    """Where the fused bias enters the accumulators: `alu`, added by the ALU after the GEMM
    (method's variant (a)); `preload`, loaded into them before the GEMM accumulates (variant
    (b)). (`schedule-vta`'s `bias-mode` is another choice: how the scheduled layer moves it.)"""

    canonicalize: bool = True
    """Run the `accel` canonicalization patterns afterwards (merging clamps, dropping no-ops)."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        functions = accelerator_functions(op)
        if not functions:
            return
        try:
            config = module_target(op).config
        except (TargetError, ValueError) as e:
            raise PassFailedException(f"{PASS}: {e}") from None
        block = getattr(config, "block", None)
        if not isinstance(block, int):
            raise PassFailedException(f"{PASS}: the module's target has no block size")
        lower_functions({f: FunctionLowering(f, self.bias_placement, block) for f in functions})
        if self.canonicalize:
            for f in functions:
                canonicalize_accel(f)
