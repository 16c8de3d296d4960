"""Op by op: does LiteRT's CompiledModel (CPU options `kernel_mode`, as `runtime.run_litert`
runs the ops of an AOT model that stay on the CPU) compute what its BUILTIN_REF reference
kernels compute?

    rows = check_ops("model.tflite", seed=0)     # one OpCheck per operator

Every operator of subgraph 0 becomes a one-op model whose non-constant inputs are model inputs,
fed the tensors BUILTIN_REF computed for the whole model (so each op sees the same inputs in
both runtimes); its output is compared with BUILTIN_REF's tensor. `python -m
qaccel.backends.litert.opcheck MODEL...` prints the table.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from qaccel.frontend.tflite_writer import (
    ModelSpec,
    SignatureDefSpec,
    SubgraphSpec,
    TensorSpec,
    read_model,
    write_model,
)


@dataclass
class OpCheck:
    index: int
    op: str
    output: str
    elements: int
    mismatches: int  # -1: LiteRT could not run the one-op model
    max_diff: int
    error: str = ""

    def line(self) -> str:
        if self.mismatches < 0:
            return f"#{self.index:3d} {self.op:20s} {self.output}: not run ({self.error})"
        verdict = "bit-exact" if self.mismatches == 0 else f"max |diff| {self.max_diff}"
        return (f"#{self.index:3d} {self.op:20s} {self.output}: {self.mismatches} of "
                f"{self.elements} differ ({verdict})")  # fmt: skip


def _one_op_model(spec: ModelSpec, k: int) -> tuple[bytes, list[int], int]:
    """Operator k of subgraph 0 alone: (model bytes, original indices of its inputs, original
    index of its output 0)."""
    sg = spec.subgraphs[0]
    op = sg.operators[k]
    tensors: list[TensorSpec] = []
    index: dict[int, int] = {}
    inputs: list[int] = []

    def add(t: int) -> int:
        if t < 0:
            return t
        if t not in index:
            src = sg.tensors[t]
            index[t] = len(tensors)
            tensors.append(TensorSpec(src.name or f"t{t}", src.shape, src.dtype, src.quant,
                                      src.data, shape_signature=src.shape_signature))  # fmt: skip
            if src.data is None:
                inputs.append(t)
        return index[t]

    new_inputs = [add(t) for t in op.inputs]
    new_outputs = [add(t) for t in op.outputs]
    for t in op.outputs:
        inputs.remove(t)
    new_op = type(op)(op.op, new_inputs, new_outputs, op.options, op.version, op.custom_code,
                      op.custom_options, [])  # fmt: skip
    sub = SubgraphSpec("main", tensors, [index[t] for t in inputs], new_outputs, [new_op])
    sig = SignatureDefSpec("serving_default", {tensors[index[t]].name: index[t] for t in inputs},
                           {tensors[i].name: i for i in new_outputs})  # fmt: skip
    # the other subgraphs too: a STABLEHLO_COMPOSITE names its decomposition by index
    model = ModelSpec([sub, *spec.subgraphs[1:]], signature_defs=[sig])
    return write_model(model), inputs, op.outputs[0]


def check_ops(model: str | Path, seed: int = 0, kernel_mode: str = "reference") -> list[OpCheck]:
    from qaccel.backends.litert.oracle import run_reference
    from qaccel.backends.litert.runtime import LiteRtError, run_litert
    import tempfile

    data = Path(model).read_bytes()
    spec = read_model(data)
    sg = spec.subgraphs[0]
    rng = np.random.default_rng(seed)
    xs = []
    for i in sg.inputs:
        t = sg.tensors[i]
        info = np.iinfo(t.dtype)
        xs.append(rng.integers(info.min, info.max, t.shape, endpoint=True).astype(t.dtype))
    ref = run_reference(data, [xs])
    if ref.refused is not None:
        raise LiteRtError(f"BUILTIN_REF refuses '{model}': {ref.refused}")
    tensors = ref.tensors[0]
    rows = []
    with tempfile.TemporaryDirectory(prefix="qaccel-opcheck-") as tmp:
        for k, op in enumerate(sg.operators):
            name = op.custom_code or op.op
            one, ins, out = _one_op_model(spec, k)
            path = Path(tmp) / f"op{k}.tflite"
            path.write_bytes(one)
            expected = tensors[out]
            try:
                (y, *_) = run_litert(path, [tensors[t] for t in ins], kernel_mode=kernel_mode)
            except LiteRtError as e:
                rows.append(OpCheck(k, name, sg.tensors[out].name, expected.size, -1, 0, str(e)))
                continue
            diff = np.abs(y.astype(np.int64) - expected.astype(np.int64))
            rows.append(OpCheck(k, name, sg.tensors[out].name, expected.size,
                                int(np.count_nonzero(diff)), int(diff.max(initial=0))))  # fmt: skip
    return rows


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    for model in argv:
        print(f"{model}:")
        for row in check_ops(model):
            print("  " + row.line())
    return 0


if __name__ == "__main__":
    sys.exit(main())
