"""Generate docs/ops.md: every TFLite builtin operator and what qaccel does with it.

    python -m qaccel.tools.gen_ops_docs            # rewrite docs/ops.md
    python -m qaccel.tools.gen_ops_docs --check    # exit 1 if docs/ops.md is stale

One row per member of the schema's `BuiltinOperator` enum, every column read from a registry:
the op the importer makes (a typed `tfl` op of `dialects/tfl.py`'s `TFL_OPS`, else
`tfl.opaque`), the CPU kernel (`kernels.registry.KERNELS`, by the module that registers it),
the `q` op `legalize-tfl-to-q` makes (its `PATTERNS`), and the accelerator pattern that takes
that `q` op (`targets/vta/target.py`'s `VTA_PATTERNS`, the pattern whose innermost op it is).
Rerun it after adding a kernel, a typed op, a legalization or a target pattern.

The few facts no registry holds are the tables below: the `q` op each legalization makes
(`LEGALIZED_TO`, checked against `PATTERNS` by the test suite), the notes of ops the
importer treats specially (`NOTES`) and why some ops with a CPU kernel stay off the
accelerator (`NOT_ON_THE_ACCELERATOR`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from qaccel.tools import generated_docs

DOCS_PATH = Path(__file__).resolve().parent.parent / "docs" / "ops.md"
COMMAND = "python -m qaccel.tools.gen_ops_docs"

LEGALIZED_TO: dict[str, str] = {
    "CONV_2D": "q.conv2d",
    "DEPTHWISE_CONV_2D": "q.depthwise_conv2d",
    "FULLY_CONNECTED": "q.dense",
    "ADD": "q.add",
    "SUB": "q.sub",
    "MUL": "q.mul",
    "AVERAGE_POOL_2D": "q.avg_pool2d",
    "MAX_POOL_2D": "q.max_pool2d",
    "MEAN": "q.mean",
    "PAD": "q.pad",
    "PADV2": "q.pad",
    "CONCATENATION": "q.concat",
    "RESHAPE": "q.reshape",
    "STRIDED_SLICE": "q.slice",
    # a kernel equal to its stride: a 1x1 convolution over the taps + q.depth_to_space
    "TRANSPOSE_CONV": "q.conv2d",
    "MAXIMUM": "q.relu",  # with a one-value constant bound and the tensor's type: a clamp
    "MINIMUM": "q.relu",
    "SQUARED_DIFFERENCE": "q.squared_difference",
    "RESIZE_NEAREST_NEIGHBOR": "q.resize_nearest_neighbor",
    "RESIZE_BILINEAR": "q.resize_bilinear",
    # TABLE_OPS: an int8 -> int8 element-wise op is its 256-entry table (`q.relu` when the
    # table is a clamp of the input, as a RELU that keeps the scale)
    **dict.fromkeys(("RELU", "RELU6", "RELU_N1_TO_1", "RELU_0_TO_1", "LOGISTIC", "TANH",
                     "HARD_SWISH", "LEAKY_RELU", "GELU", "QUANTIZE", "NEG", "SQRT", "RSQRT"),
                    "q.lut"),
    "TRANSPOSE": "q.transpose",
    "SOFTMAX": "q.softmax",
    "BATCH_MATMUL": "q.batch_matmul",
}
"""The `q` op (the one target patterns anchor on) each builtin `legalize-tfl-to-q` rewrites
becomes; a fused activation adds `q.relu`, which the patterns take along."""

PATTERN_ROWS: dict[str, str] = {"transpose_conv_taps": "TRANSPOSE_CONV"}
"""Patterns shown on one builtin's row rather than on every row whose `q` op is their
innermost op (`transpose_conv_taps` anchors on the `q.conv2d` of TRANSPOSE_CONV's taps)."""

NOTES: dict[str, str] = {
    "CUSTOM": "imported as `tfl.opaque` with its custom code; no custom op has a CPU kernel",
    "STABLEHLO_COMPOSITE": "runs its decomposition; `fuse-composites` fuses known ones",
    "DELEGATE": "a placeholder of delegated subgraphs, not an operator",
    "PLACEHOLDER_FOR_GREATER_OP_CODES": "marks codes beyond 127, not an operator",
}
"""What the importer does with builtins that are not ordinary operators."""


PLACEMENTS = ("GEMM core", "ALU", "DMA", "host step")
"""Where the accelerator runs what a pattern takes; each pattern's doc starts with one, then
`:` and why (checked by the test suite). "host step": an exact step of the accelerator
program run by the host between two layers, inside the partition (no split)."""

CPU_BOUNDARY = "CPU (partition boundary)"

NOT_ON_THE_ACCELERATOR: dict[str, str] = {
    **dict.fromkeys(("LOG_SOFTMAX", "EXP"),
                    "a nonlinear function of a whole row (exp and a division: no ALU sequence "
                    "computes BUILTIN_REF's fixed-point result bit-exactly; it ends classifiers, "
                    "after the last partition)"),
    **dict.fromkeys(("SQUEEZE", "EXPAND_DIMS", "SHAPE"),
                    "no data moves: a view on the host"),
    "DEQUANTIZE": "changes the number format, at the borders; a DEQUANTIZE -> float "
                  "element-wise ops (NEG, ABS, SQUARE, SQRT, RSQRT, RELU) -> QUANTIZE chain of "
                  "one int8 input (a layer norm's negated mean) is one `q.lut`, its 256 entries "
                  "computed by the chain's kernels as LiteRT computes them: a table lookup "
                  "step inside the partition",
    "PACK": "stacks tensors on a new axis; in converter output it builds the int32 shape "
            "vector of a RESHAPE: a few scalars, nothing to accelerate",
    "GATHER": "reads at data-dependent indices (embeddings): no LOAD or ALU op addresses by "
              "a tensor's values",
    "REDUCE_PROD": "a product reduction: no ALU op keeps a product of many int8 values exact "
                   "in 32-bit lanes (in the corpus it multiplies shape dimensions)",
}  # fmt: skip
"""Why some builtins with a CPU kernel have no accelerator pattern (the column's text): each
is a partition boundary, the partition around it split into the ops before and after it."""

ACCELERATOR_NOTES: dict[str, str] = {
    "TRANSPOSE_CONV": "when the kernel is the stride (taps on distinct output pixels): a 1x1 "
                      "convolution over the k*k taps, then `q.depth_to_space`, a gather step "
                      "of the accelerator program; when the taps overlap (kernel larger than "
                      "the stride): the same 1x1 convolution storing its int32 accumulators, "
                      "then `q.col2im` sums the taps landing on each pixel (an exact "
                      "gather-sum host step) and the bias and requantization run as host lane "
                      "steps of the program (the ALU's element-wise layers load int8 only)",
    "BATCH_MATMUL": "int8 x int8 -> int8 only; `sum((a - za)(b - zb))` is split as the GEMM "
                    "core's `sum(ab)` (raw int8 operands: the lhs rows as a token image, the "
                    "rhs as weight tiles written into the arena by a gather and a WRITE step, "
                    "so the layer's WGT LOADs read the arena instead of the constants) plus "
                    "the int32 correction `-zb rowsum(a) - za colsum(b) + K za zb` "
                    "(`accel.bmm_zp_correction`, an exact host step: kind 22 for every batch "
                    "index at once, 18 for one), which the "
                    "layer LOADs into its accumulators before the GEMMs (as a bias in DMA mode, "
                    "one value per output element); the requantization is the layer's ALU "
                    "tail or store stage. The product's MACs are accelerator MACs (the "
                    "transformer's share is 100%); the operand gathers and the correction are "
                    "host work of O(M K + K N) per batch index. Every batch index runs in "
                    "one GEMM layer (the batch indices are its images, each with its own "
                    "weight tiles), so the program stops once per product for its gathers",
    "SOFTMAX": "int8 -> int8 only (float softmax stays on the CPU)",
}
"""What the accelerator column adds for builtins a pattern takes only in some forms."""


@dataclass(frozen=True)
class OpRow:
    builtin: str
    code: int
    ir_op: str  # tfl.<name> or tfl.opaque
    kernel: str | None  # the registering module, e.g. "kernels/conv.py"
    kernel_outputs: tuple[str, ...]  # the output types it declares, e.g. ("int8", "float32")
    q_op: str | None
    accelerator: tuple[tuple[str, str], ...]  # (pattern name, its doc)

    @property
    def status(self) -> str:
        if self.builtin == "STABLEHLO_COMPOSITE":
            return "decomposition"
        if self.kernel is None:
            return "no CPU kernel"
        if self.accelerator:
            return "accelerator"
        return "CPU"


def _anchor(dag: str) -> str | None:
    """The innermost op of a pattern term, e.g. `q.conv2d` of
    `q.relu?(q.requantize(q.bias_add?(q.conv2d)))`."""
    ops = re.findall(r"[a-z_]+\.[a-z0-9_]+", dag)
    return ops[-1] if ops else None


def rows() -> list[OpRow]:
    """One row per BuiltinOperator member, in code order."""
    from qaccel.dialects.tfl import TFL_OPS
    from qaccel.frontend.tflite_schema import BUILTIN_OPERATORS
    from qaccel.kernels.base import OUTPUT_TYPES
    from qaccel.kernels.registry import KERNELS
    from qaccel.passes.legalize_tfl_to_q import PATTERNS, TABLE_OPS
    from qaccel.targets.vta.target import VTA_PATTERNS

    typed = {cls.TFLITE_NAME: cls.name for cls in TFL_OPS}
    legalized = {name for name, op in typed.items() if op.removeprefix("tfl.") in PATTERNS}
    legalized |= set(TABLE_OPS)
    by_anchor: dict[str, list[tuple[str, str]]] = {}
    by_builtin: dict[str, list[tuple[str, str]]] = {}
    for p in VTA_PATTERNS:
        anchor = _anchor(p.dag)
        if p.name in PATTERN_ROWS:
            by_builtin.setdefault(PATTERN_ROWS[p.name], []).append((p.name, p.doc))
        elif anchor is not None:
            by_anchor.setdefault(anchor, []).append((p.name, p.doc))
    out = []
    for code, name in sorted(BUILTIN_OPERATORS.items()):
        kernel = KERNELS.get(name)
        module = None
        if kernel is not None:
            module = kernel.__module__.removeprefix("qaccel.").replace(".", "/") + ".py"
        q_op = LEGALIZED_TO.get(name) if name in legalized else None
        ir_op = typed.get(name, "tfl.stablehlo_composite" if name == "STABLEHLO_COMPOSITE"
                          else "tfl.opaque")  # fmt: skip
        accel = tuple(by_anchor.get(q_op, ())) if q_op else ()
        accel += tuple(by_builtin.get(name, ())) if q_op else ()
        types = tuple(str(t) for t in OUTPUT_TYPES.get(name, ()))
        out.append(OpRow(name, code, ir_op, module, types, q_op, accel))
    return out


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _kernel_cell(r: OpRow) -> str:
    if r.kernel is None:
        return "—"
    types = f" ({', '.join(r.kernel_outputs)} outputs)" if r.kernel_outputs else ""
    return f"`{r.kernel}`{types}"


def placement(doc: str) -> tuple[str, str] | None:
    """(placement, why) of a pattern's doc that starts with one of `PLACEMENTS`."""
    head, sep, rest = doc.partition(": ")
    return (head, rest) if sep and head in PLACEMENTS else None


def _placement_cell(name: str, doc: str) -> str:
    found = placement(doc)
    if found is None:
        return f"`{name}`: {_cell(doc)}" if doc else f"`{name}`"
    where, why = found
    return f"**{where}** (`{name}`): {_cell(why)}"


def render() -> str:
    """The text of docs/ops.md for the registries as they are now."""
    table = rows()
    counts = {s: sum(r.status == s for r in table)
              for s in ("accelerator", "CPU", "no CPU kernel")}  # fmt: skip
    lines = [
        f"<!-- Generated by `{COMMAND}` from the kernel, op, legalization and target "
        "registries: do not edit. -->",
        "",
        "# TFLite operators",
        "",
        "Every TFLite builtin operator and what qaccel does with it. Of "
        f"{len(table)} builtins, {counts['accelerator']} can run on the accelerator, "
        f"{counts['CPU']} more run on the CPU only, {counts['no CPU kernel']} have no CPU kernel.",
        "",
        "- **IR op**: what the importer makes of it: a typed `tfl` op, or `tfl.opaque` (kept",
        "  as it is, printed and partitioned around).",
        "- **CPU kernel**: the module of its bit-exact reference kernel (`kernels/`), the CPU",
        "  fallback of everything the accelerator does not take, and the output types it",
        "  computes where the kernel declares them. A model with an op without",
        "  one (or of another type) is refused by `qaccel-compile` (before writing anything), `qaccel-run` and",
        "  `qaccel-opt --verify-semantics`, in one line naming the op; `qaccel-opt` still",
        "  imports and prints it.",
        "- **q op**: what `legalize-tfl-to-q` rewrites its int8 form to (the rest stays `tfl`",
        "  and runs on the CPU).",
        "- **accelerator**: where the `vta` target runs it and why, when its pattern's checks",
        "  pass (`qaccel-opt MODEL -p vta-pipeline --explain-partitioning` says why not):",
        "  on the **GEMM core**, the **ALU** or the **DMA** (LOAD/STORE), or as a **host step**:",
        "  an exact step of the accelerator program that the host runs between two layers,",
        "  inside the partition, where the ALU cannot match BUILTIN_REF bit for bit (a table,",
        "  a double-precision rounding, a divisor that is not a power of two) or lanes move. A",
        "  host step is a decision of the target's cost model: it stays inside unless running",
        "  the op on the CPU, with the hop a partition boundary costs (pack, DRAM transfers,",
        "  unpack, one more launch), is cheaper; `--explain-partitioning` prints both choices.",
        f"  **{CPU_BOUNDARY}**: the op runs on the CPU and the accelerator function around it",
        "  ends before it, for the reason given.",
        "",
        "The kernels compute int8 models (and the float and integer ops around them);",
        "int16x8 models (16-bit activations) are refused at import.",
        "",
        "| code | operator | status | IR op | CPU kernel | q op | accelerator |",
        "| ---: | --- | --- | --- | --- | --- | --- |",
    ]
    for r in table:
        accel = "; ".join(_placement_cell(name, doc) for name, doc in r.accelerator)
        if not accel and r.kernel and r.builtin in NOT_ON_THE_ACCELERATOR:
            accel = f"**{CPU_BOUNDARY}**: {_cell(NOT_ON_THE_ACCELERATOR[r.builtin])}"
        if accel and r.builtin in ACCELERATOR_NOTES:
            accel += f" ({_cell(ACCELERATOR_NOTES[r.builtin])})"
        note = NOTES.get(r.builtin)
        status = r.status + (f" ({_cell(note)})" if note else "")
        lines.append(
            f"| {r.code} | `{r.builtin}` | {status} | `{r.ir_op}` | "
            f"{_kernel_cell(r)} | "
            f"{f'`{r.q_op}`' if r.q_op else '—'} | {accel or '—'} |"
        )
    return "\n".join(lines) + "\n"


def check(path: Path = DOCS_PATH) -> str | None:
    """None if `path` is up to date, else the one-line reason and the command that fixes it."""
    return generated_docs.stale(path, render, COMMAND, "kernels, ops, legalizations or target patterns")


def main(argv: Sequence[str] | None = None) -> None:
    generated_docs.main(argv, "gen_ops_docs", __doc__.split("\n\n")[0], DOCS_PATH, render, check)


if __name__ == "__main__":
    main()
