"""The facts of one compiled model that `bench_corpus_history.py` prices, as JSON: what any
revision of qaccel can say about its own compilation, with no pricing of its own.

    python benchmarks/corpus_history_facts.py MODEL.tflite CONFIG [CONFIG ...]   # JSON on stdout

(`{"qaccel": the package's directory, "configs": {config: facts or {"refused": why}}}`)

It runs with whichever `qaccel` is first on the import path (`bench_corpus_history.py` puts an
older checkout there), so it uses only what every revision has had since the VTA report: the
compiled model's accelerator functions with their layers (body positions) and the layers'
simulated cycles, the module's functions and their ops. Per configuration it emits:

- per accelerator function: its simulated cycles (the sum of its layers' report rows), and its
  body's top-level ops in order, each either a layer or a host step, a host step with the facts
  of every op it holds (itself first, then the ops of its regions);
- outside the accelerator functions: one launch per call of an accelerator function, the packed
  bytes of every pack and unpack at a border, and every other op (constants and returns
  aside) with its facts.

An op's facts: its name, its operands' and results' shapes (None for a value that is not a
ranked tensor), its first result's element type (as text), its multiply-accumulates (`dialects/macs.py`'s `op_macs`, where the revision has
it) and the integer properties the pricing reads (windows, filters, padding, axes, adjoint
flags) where the op has them.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

_INT_PROPS = ("window", "filter", "padding", "axes")
_FLAG_PROPS = ("adj_x", "adj_y")


def _shape(value):
    from xdsl.dialects.builtin import TensorType

    t = value.type
    return [int(d) for d in t.get_shape()] if isinstance(t, TensorType) else None


def _element(op) -> str | None:
    """The element type of the op's first result, as text (a tensor's), else None."""
    from xdsl.dialects.builtin import TensorType

    t = op.results[0].type if op.results else None
    return str(t.element_type) if isinstance(t, TensorType) else None


def _itemsize(value) -> int:
    try:
        from qaccel.dialects.types import tensor_dtype

        return int(tensor_dtype(value.type).itemsize)
    except Exception:  # noqa: BLE001  not a storage type: one byte, as the report counts it
        return 1


def _macs(op) -> int | None:
    try:
        from qaccel.dialects.macs import op_macs
    except ImportError:
        return None
    return int(op_macs(op))


def op_facts(op) -> dict:
    """The facts of one op (see the module docstring)."""
    facts = {"name": op.name, "operands": [_shape(v) for v in op.operands],
             "results": [_shape(r) for r in op.results], "macs": _macs(op),
             "element": _element(op)}  # fmt: skip
    props = {}
    for key in _INT_PROPS:
        prop = op.properties.get(key)
        if prop is None:
            continue
        try:
            props[key] = [int(v) for v in prop.get_values()]  # a dense array
        except (AttributeError, TypeError):
            try:  # an array of integer attributes
                props[key] = [int(v.value.data) for v in prop.data]
            except (AttributeError, TypeError):
                pass
    for key in _FLAG_PROPS:
        prop = op.properties.get(key)
        if prop is not None:
            try:
                props[key] = bool(prop.value.data)
            except AttributeError:
                pass
    facts["props"] = props
    return facts


def model_facts(compiled) -> dict:
    """The facts of one compiled model (`api.compile`'s result)."""
    from xdsl.dialects import func

    from qaccel.backends.vta.compiled import TARGET_ATTR
    from qaccel.dialects import accel, tfl

    functions, outside = [], {"ops": [], "launches": 0, "hop_bytes": 0}
    for f in compiled.module.ops:
        if not isinstance(f, func.FuncOp) or not f.body.blocks:
            continue
        name = f.sym_name.data
        ops = list(f.body.block.ops)
        if name in compiled.functions:
            fn = compiled.functions[name]
            on_accel = {i for lay in fn.layers for i in lay.ops}
            body = []
            for i, op in enumerate(ops):
                if i in on_accel:
                    body.append({"layer": True})
                else:
                    body.append({"layer": False,
                                 "ops": [op_facts(o) for o in op.walk()]})  # fmt: skip
            cycles = sum(int(lay.report.get("cycles", 0)) for lay in fn.layers)
            functions.append({"name": name, "cycles": cycles, "layers": len(fn.layers),
                              "body": body})  # fmt: skip
            continue
        if TARGET_ATTR in f.attributes:
            continue  # an accelerator function the compiler did not keep: none expected
        for op in ops:
            if isinstance(op, func.ReturnOp | tfl.ConstOp):
                continue
            if isinstance(op, func.CallOp):
                outside["launches"] += op.callee.root_reference.data in compiled.functions
                continue
            if isinstance(op, accel.PackOp | accel.UnpackOp):
                packed = op.results[0] if isinstance(op, accel.PackOp) else op.operands[0]
                outside["hop_bytes"] += math.prod(_shape(packed) or ()) * _itemsize(packed)
                continue
            outside["ops"].append(op_facts(op))
    totals = compiled.report.get("totals", {})
    return {"partitions": len(compiled.functions), "fallbacks": len(compiled.fallbacks),
            "functions": functions, "outside": outside,
            # the revision's own report: its cycles, and its whole-inference estimate if any
            "report_cycles": totals.get("cycles"),
            "report_whole_inference_cycles": totals.get("whole_inference_cycles")}  # fmt: skip


def main(argv: list[str]) -> int:
    from qaccel import api

    path, configs = argv[0], argv[1:]
    out = {}
    for config in configs:
        try:
            out[config] = model_facts(api.compile(path, config))
        except Exception as e:  # noqa: BLE001  a refusal is a fact
            lines = str(e).splitlines() or [type(e).__name__]
            out[config] = {"refused": lines[0][:200]}
    import qaccel

    json.dump({"qaccel": str(Path(qaccel.__file__).resolve().parent), "configs": out},
              sys.stdout)  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
