"""`canonicalize-accel`: run only the `accel` ops' canonicalization patterns.

The patterns themselves live with the dialect (`dialects/accel_canonicalization.py`, whose
docstring shows each one with its IR before and after), so xDSL's generic `canonicalize`
applies them too; this pass applies nothing else (no folding of other dialects).
"""

from __future__ import annotations

from dataclasses import dataclass

from qaccel.dialects.accel_canonicalization import patterns_of, remembered_ranges
from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.ir import Operation
from xdsl.passes import ModulePass
from xdsl.pattern_rewriter import PatternRewriter, PatternRewriteWalker, RewritePattern
from xdsl.transforms.dead_code_elimination import is_trivially_dead


class _AccelPatterns(RewritePattern):
    """`GreedyRewritePatternApplier(list(all_patterns()))`, trying on each op only the patterns
    of its own kind (`patterns_of`; every other pattern returns at once on it), in the same
    order."""

    def match_and_rewrite(self, op: Operation, rewriter: PatternRewriter, /) -> None:
        if is_trivially_dead(op):
            rewriter.erase(op)
            return
        for pattern in patterns_of(op.name):
            pattern.match_and_rewrite(op, rewriter)
            if rewriter.has_done_action:
                return


def canonicalize_accel(root: Operation) -> None:
    """Apply the `accel` patterns to everything nested in `root` until nothing changes, erasing
    ops that become unused. Value ranges are remembered between rewrites (dropped where the
    IR changes)."""
    with remembered_ranges() as ranges:
        walker = PatternRewriteWalker(_AccelPatterns(), listener=ranges.listener())
        for region in root.regions:
            walker.rewrite_region(region)


@dataclass(frozen=True)
class CanonicalizeAccelPass(ModulePass):
    """Fold and merge `accel` compute ops; no value ever changes.

    Folds clamps that cannot clip (value-range analysis), merges consecutive clamps (also
    across a zero-point add that cannot wrap, and into `accel.host_requantize`), drops shifts by
    0, adds of 0, multiplies by 1 and `widen`/`narrow` round trips, combines consecutive
    constant adds and shifts, folds pads into the convolutions they feed
    (`dialects/accel_canonicalization.py` shows each pattern). `lower-q-to-accel` runs these
    patterns itself (unless `canonicalize=false`).
    """

    name = "canonicalize-accel"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        canonicalize_accel(op)
