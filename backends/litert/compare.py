"""Compare the interpreter with LiteRT's reference kernels, output by output and layer by layer.

    report = compare_with_reference(model_bytes, module, input_sets)
    print(report.summary())          # per-output mismatch counts and max |diff|
    report.first_difference          # the first tensor (in execution order) that differs

Layer-by-layer comparison matches the interpreter's values to LiteRT's tensors by name (the
importer keeps every tensor's name as the location of the op defining it), so it works on
the imported IR and on any later stage that keeps those locations.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from xdsl.dialects.builtin import ModuleOp

from qaccel.interpreter.interpreter import Trace, describe, location_name, run_function


@dataclass
class OutputDiff:
    index: int
    mismatches: int
    size: int
    max_abs_diff: int | float

    def line(self) -> str:
        verdict = "bit-exact" if self.mismatches == 0 else "MISMATCH"
        return (
            f"output {self.index}: {self.mismatches} of {self.size} elements differ, "
            f"max |diff| {self.max_abs_diff} ({verdict})"
        )


@dataclass
class TensorDiff:
    """The first intermediate tensor whose value differs from the reference."""

    input_set: int
    tensor_name: str
    op: str
    mismatches: int
    max_abs_diff: int | float

    def line(self) -> str:
        return (
            f"first difference: tensor '{self.tensor_name}' made by {self.op} "
            f"(input set {self.input_set}): {self.mismatches} elements differ, "
            f"max |diff| {self.max_abs_diff}"
        )


@dataclass
class ComparisonReport:
    refused: str | None = None
    outputs: list[OutputDiff] = field(default_factory=list)
    first_difference: TensorDiff | None = None
    tensors_compared: int = 0

    @property
    def bit_exact(self) -> bool:
        return self.refused is None and all(o.mismatches == 0 for o in self.outputs)

    def summary(self) -> str:
        if self.refused is not None:
            return f"reference: {self.refused}"
        lines = [o.line() for o in self.outputs]
        if self.first_difference is not None:
            lines.append(self.first_difference.line())
        return "\n".join(lines)


def diff(a: np.ndarray, b: np.ndarray) -> tuple[int, int | float]:
    """(number of differing elements, max |difference|) of two same-shaped arrays."""
    if a.shape != b.shape:
        return max(a.size, b.size), float("inf")
    if a.dtype.kind == "f" and a.dtype == b.dtype:
        # Bit for bit: -0.0 is not 0.0; any NaN matches any NaN (one NaN is an inf diff).
        both_nan = np.isnan(a) & np.isnan(b)
        bits = np.dtype(f"u{a.dtype.itemsize}")
        mismatches = int(np.count_nonzero((a.view(bits) != b.view(bits)) & ~both_nan))
        with np.errstate(invalid="ignore", over="ignore"):
            d = np.abs(a.astype(np.float64) - b.astype(np.float64))
        d = np.where(both_nan, 0.0, np.where(np.isnan(d), np.inf, d))
        return mismatches, (d.max().item() if d.size else 0)
    wide = np.float64 if a.dtype.kind == "f" or b.dtype.kind == "f" else np.int64
    d = np.abs(a.astype(wide) - b.astype(wide))
    mismatches = int(np.count_nonzero(a != b))
    return mismatches, (d.max().item() if d.size else 0)


def compare_outputs(ours: Sequence[np.ndarray], theirs: Sequence[np.ndarray]) -> list[OutputDiff]:
    diffs = []
    for i, (a, b) in enumerate(zip(ours, theirs, strict=True)):
        n, m = diff(np.asarray(a), np.asarray(b))
        diffs.append(OutputDiff(i, n, max(a.size, b.size), m))
    return diffs


def compare_with_reference(
    model: bytes,
    module: ModuleOp,
    input_sets: Sequence[Sequence[np.ndarray]],
    layers: bool = True,
) -> ComparisonReport:
    """Run `module` and LiteRT (on `model`) on the same inputs; compare outputs and layers."""
    from qaccel.backends.litert.oracle import run_reference

    ref = run_reference(model, [list(s) for s in input_sets], keep_all_tensors=layers)
    if ref.refused is not None:
        return ComparisonReport(refused=ref.refused)
    report = ComparisonReport()
    totals: list[OutputDiff] = []
    for k, inputs in enumerate(input_sets):
        trace = Trace()
        ours = run_function(module, inputs, trace if layers else None)
        per_set = compare_outputs(ours, ref.outputs[k])
        totals = per_set if not totals else [
            OutputDiff(t.index, t.mismatches + p.mismatches, t.size + p.size,
                       max(t.max_abs_diff, p.max_abs_diff))
            for t, p in zip(totals, per_set)
        ]
        if layers and report.first_difference is None:
            by_name = {name: i for i, name in ref.tensor_names.items()}
            for op, results in trace.records:
                name = location_name(op)
                index = by_name.get(name) if name is not None else None
                if index is None or index not in ref.tensors[k]:
                    continue
                expected = ref.tensors[k][index]
                actual = np.asarray(results[0])
                if actual.dtype != expected.dtype or actual.shape != expected.shape:
                    continue  # a lowered stage may hold int32 or packed data under the name
                report.tensors_compared += 1
                n, m = diff(actual, expected)
                if n:
                    report.first_difference = TensorDiff(k, name, describe(op), n, m)
                    break
    report.outputs = totals
    return report
