"""The corpus's whole inference before and after, on one scale: the code at an older revision
against the current code, both priced by the current cost model.

    python benchmarks/bench_corpus_history.py --base REV [--models a,b] [--configs c,d]
        [--scratch DIR] [--keep]

Accelerator cycles alone do not compare across revisions when work moved between the CPU and
the accelerator: the report counts the accelerator's partitions only, and what a revision left
on the CPU (operators outside partitions, host steps of the programs, the packing and
unpacking at each border, the launches) is not counted at all. So each side only extracts
facts (`corpus_history_facts.py`: per accelerator function its simulated cycles and its host
steps, outside them every operator, border and call), and this script prices both sides'
facts with the current `targets/vta/host_cost.py` (`host_op_ns`, `program_host_steps`,
`host_steps_cycles`, `host_step_kind`, `HOST_NS`, `hop_cycles`, `launch_cycles`,
`cpu_cycles`; the CPU operators as `cpu_op_ns` prices them), the same figures as the current
report's "whole inference (estimated)" line. For the current code the script checks its
figure against the report's `whole_inference_cycles` and says when they differ.

The older revision is checked out with `git worktree add --detach` into `--scratch` (its
directory named `qaccel`, as the repository root is the package) and run in a subprocess with
that directory first on the import path; the worktree is removed at the end unless `--keep`.
Whatever is not priced as the current code's own IR would be is listed under the model's
table (`note (before)` / `note (after)`), never silently:
- an op kind the current dialects do not define, or an op whose facts lack what its rule
  reads: priced at the rate the pricing gives ops it has no rule for (gather, per element);
- a GEMM an older revision left as a host step of a program: `host_op_ns` has no per-MAC rule
  for it and prices it per element; the note gives its MACs at the host's MAC rate;
- an int8 `tfl` operator an older revision left on the CPU that the current IR holds as a `q`
  op with its own rule (softmax, concatenation, reshape, bilinear resize): priced as that op.
The script also says when an older revision's layers do not add up to its own report's
cycles. All figures are the cost model's estimate (accelerator cycles are simulated;
everything else is at `HOST_NS`'s rates; a launch is 20 us, so partition counts weigh heavily).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from types import SimpleNamespace

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
CORPUS = ROOT / "tests" / "fixtures" / "corpus"
CONFIGS = ("vta-default", "vta-store-requant")
FACTS = Path(__file__).resolve().parent / "corpus_history_facts.py"


# --------------------------------------------------------------------------------------------
# Facts as ops the current pricing reads


class _Value:
    """A value with an extracted shape (a ranked int8 tensor; `None`: not a tensor)."""

    def __init__(self, shape):
        from xdsl.dialects.builtin import TensorType, i8

        self.type = TensorType(i8, shape) if shape is not None else object()


class FactOp:
    """One op's extracted facts in the shape `host_cost`'s functions read: name, operands and
    results with their shapes, integer array properties, adjoint flags, the ops it holds."""

    def __init__(self, facts: dict, inner: list[dict] = ()):
        self.name = facts["name"]
        self.operands = [_Value(s) for s in facts["operands"]]
        self.results = [_Value(s) for s in facts["results"]]
        self.macs = facts.get("macs")
        self._props = facts.get("props", {})
        self.properties = {k: SimpleNamespace(value=SimpleNamespace(data=int(v)))
                           for k, v in self._props.items() if isinstance(v, bool)}  # fmt: skip
        self.inner = [FactOp(f) for f in inner]
        self.regions = (None,) if inner else ()

    def walk(self):
        yield self
        yield from self.inner

    def array_prop(self, name: str) -> np.ndarray:
        return np.array(self._props[name], dtype=np.int64)


def current_op_names() -> set[str]:
    """Every op name the current dialects define (with xDSL's `func` and `builtin`)."""
    from xdsl.dialects.builtin import Builtin
    from xdsl.dialects.func import Func

    from qaccel.dialects import get_all_dialects

    names = {op.name for d in (Builtin, Func) for op in d.operations}
    for factory in get_all_dialects().values():
        names.update(op.name for op in factory().operations)
    return names


def _checked(op: FactOp, fn, known: set[str], notes: list[str]) -> FactOp:
    """`op`, or when the current dialects do not define its kind or its facts lack what `fn`
    (the pricing) reads, a stand-in with its operands and results that the pricing prices at
    its default rate (the gather rate per element), with a note."""
    if op.name not in known:
        notes.append(f"{op.name}: not an op of the current dialects, priced at the default rate")
    else:
        try:
            fn(op)
            return op
        except (KeyError, IndexError, TypeError, ValueError, AttributeError) as e:
            notes.append(f"{op.name}: its facts lack {e!s:.40} for its pricing, priced at the "
                         "default rate")  # fmt: skip
    stand_in = FactOp({"name": _DEFAULT, "operands": [], "results": []})
    stand_in.operands, stand_in.results, stand_in.macs = op.operands, op.results, 0
    return stand_in


# int8 `tfl` operators an older revision left on the CPU that the current IR holds as `q` ops
# with a rule of their own (`host_step_kind`); the rest are priced alike in both forms.
_Q_FORMS = {"tfl.softmax": "q.softmax", "tfl.concatenation": "q.concat",
            "tfl.reshape": "q.reshape", "tfl.resize_bilinear": "q.resize_bilinear"}


def _q_form(op: FactOp, facts: dict, notes: list[str]) -> FactOp:
    """An int8 `tfl` operator of `_Q_FORMS` as its `q` form (with a note), else `op`."""
    q = _Q_FORMS.get(op.name)
    if q is None or not (facts.get("element") or "").startswith("!quant.uniform<i8"):
        return op
    notes.append(f"{op.name} on the CPU: priced as {q}, the current IR's form of the same "
                 "int8 operator")  # fmt: skip
    op.name = q
    return op


_DEFAULT = "unpriced.op"  # no rule of the pricing names it: its default rate


def price(facts: dict, config, known: set[str] | None = None) -> dict:
    """One side's figures from its facts (`corpus_history_facts.model_facts`), in the
    configuration's accelerator cycles: the current report's pricing (see the module
    docstring). `notes` lists what could not be priced exactly."""
    from qaccel.targets.vta.host_cost import (HOST_NS, cpu_cycles, hop_cycles, host_op_ns,
                                              host_step_kind, host_steps_cycles,
                                              launch_cycles, program_host_steps)  # fmt: skip

    known = current_op_names() if known is None else known
    notes: list[str] = []
    accel = host = stops = 0
    gemm_macs = [0]  # MACs of GEMMs left as host steps
    for fn in facts["functions"]:
        body, layers = [], set()
        for entry in fn["body"]:
            if entry["layer"]:
                op = FactOp({"name": "layer", "operands": [], "results": []})
                layers.add(op)
            else:
                first, *inner = [_checked(FactOp(f), host_op_ns, known, notes)
                                 for f in entry["ops"]]  # fmt: skip
                op, op.inner = first, inner
                op.regions = (None,) if inner else ()
            body.append(op)
        for op in body:
            gemm = [o for o in ([] if op in layers else op.walk())
                    if o.macs and o.name != "accel.batch_matmul"]  # fmt: skip
            for o in gemm:
                notes.append(f"{o.name}: a GEMM left as a host step, priced per element of its "
                             "result (the pricing has no per-MAC rule for it)")  # fmt: skip
                gemm_macs[0] += o.macs
        ns, n = program_host_steps(body, layers)
        accel += int(fn["cycles"])
        host += host_steps_cycles(ns, n, config)
        stops += n

    def elements(op: FactOp) -> int:  # `host_cost._elements` of each result, summed
        return sum(int(np.prod(facts_shape(r) or ())) for r in op.results)

    def cpu_ns(op: FactOp) -> float:  # `cpu_op_ns`'s rule, on the extracted MACs
        if op.macs is None:
            raise ValueError("MACs")
        if op.macs:
            return HOST_NS["dispatch"] + op.macs * HOST_NS["mac"]
        kind = host_step_kind([op], config.block)
        if kind is None:
            return HOST_NS["dispatch"] + elements(op) * HOST_NS["gather"]
        _, rate, units = kind
        return HOST_NS["dispatch"] + elements(op) * units * HOST_NS[rate]

    out = facts["outside"]
    cpu = sum(cpu_ns(_checked(_q_form(FactOp(f), f, notes), cpu_ns, known, notes))
              for f in out["ops"])  # fmt: skip
    figures = {
        "partitions": facts["partitions"], "accelerator_cycles": accel,
        "host_step_cycles": host, "program_stops": stops,
        "cpu_ops": len(out["ops"]), "cpu_op_cycles": cpu_cycles(cpu, config),
        "hop_bytes": out["hop_bytes"], "hop_cycles": hop_cycles(out["hop_bytes"], config),
        "launches": out["launches"], "launch_cycles": out["launches"] * launch_cycles(config),
    }  # fmt: skip
    figures["whole_inference_cycles"] = accel + host + sum(
        figures[k] for k in ("cpu_op_cycles", "hop_cycles", "launch_cycles"))
    if gemm_macs[0]:
        notes.append(f"those GEMMs hold {gemm_macs[0]} MACs: "
                     f"{cpu_cycles(gemm_macs[0] * HOST_NS['mac'], config)} cycles at the "
                     "host's MAC rate, not counted")  # fmt: skip
    figures["notes"] = sorted(set(notes))
    return figures


def facts_shape(value: _Value):
    t = value.type
    return tuple(t.get_shape()) if hasattr(t, "get_shape") else None


# --------------------------------------------------------------------------------------------
# Running each side


def facts_of(model: Path, configs: list[str], import_root: Path | None) -> dict:
    """The facts of `model` on `configs`, extracted in a subprocess with `import_root` (a
    directory holding the package `qaccel`) first on the import path; None: the current code."""
    env = dict(os.environ)
    if import_root is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(import_root),
                                                          env.get("PYTHONPATH")]))  # fmt: skip
    done = subprocess.run([sys.executable, str(FACTS), str(model), *configs], env=env,
                          capture_output=True, text=True, check=False)  # fmt: skip
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {c: {"refused": f"the extractor failed: {last[:160]}"} for c in configs}
    out = json.loads(done.stdout)
    expected = (import_root / "qaccel") if import_root is not None else ROOT
    if Path(out["qaccel"]) != expected.resolve():
        raise SystemExit(f"bench_corpus_history: error: the extractor imported qaccel from "
                         f"{out['qaccel']}, not {expected}")  # fmt: skip
    return out["configs"]


def checkout(base: str, scratch: Path) -> Path:
    """A detached worktree of `base` at `scratch/qaccel`; `scratch` is its import root."""
    tree = scratch / "qaccel"
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "--detach", str(tree), base],
                   check=True, capture_output=True, text=True)  # fmt: skip
    return scratch


def remove(scratch: Path) -> None:
    subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force",
                    str(scratch / "qaccel")], check=False, capture_output=True)  # fmt: skip


_ROWS = (("partitions", "partitions", None), ("accelerator cycles", "accelerator_cycles", None),
         ("host-step cycles", "host_step_cycles", "program_stops"),
         ("CPU-op cycles", "cpu_op_cycles", "cpu_ops"),
         ("hop cycles", "hop_cycles", "hop_bytes"),
         ("launch cycles", "launch_cycles", "launches"),
         ("whole inference (est.)", "whole_inference_cycles", None))  # fmt: skip
_COUNTS = {"program_stops": "stops", "cpu_ops": "ops", "hop_bytes": "bytes",
           "launches": "launches"}


def _cell(fig: dict, key: str, count: str | None) -> str:
    text = str(fig[key])
    return f"{text} ({fig[count]} {_COUNTS[count]})" if count else text


def _ratio(a: int, b: int) -> str:
    return f"x{b / a:.3f}" if a else ("=" if a == b else "-")


def table(model: str, config: str, before: dict, after: dict, base: str) -> list[str]:
    """The markdown table of one model and configuration, and its notes."""
    lines = [f"### {model}, {config}", "",
             f"| figure | before ({base}) | after | after / before |",
             "| --- | ---: | ---: | ---: |"]  # fmt: skip
    if "refused" in before or "refused" in after:
        for side, f in (("before", before), ("after", after)):
            if "refused" in f:
                lines.append(f"| {side} | {f['refused']} | | |")
        return lines + [""]
    for label, key, count in _ROWS:
        lines.append(f"| {label} | {_cell(before, key, count)} | {_cell(after, key, count)} "
                     f"| {_ratio(before[key], after[key])} |")  # fmt: skip
    for side, f in (("before", before), ("after", after)):
        for note in f["notes"]:
            lines.append(f"\nnote ({side}): {note}")
    return lines + [""]


def main() -> int:
    from qaccel.api import load_config

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base", required=True, help="the older revision (any git revision)")
    ap.add_argument("--models", default=None, help="comma-separated names (default: all)")
    ap.add_argument("--configs", default=",".join(CONFIGS), help="comma-separated names")
    ap.add_argument("--scratch", default=None, help="where the older worktree goes "
                    "(default: a temporary directory)")  # fmt: skip
    ap.add_argument("--keep", action="store_true", help="keep the older worktree")
    args = ap.parse_args()
    paths = sorted(CORPUS.glob("*.tflite"))
    if args.models:
        wanted = set(args.models.split(","))
        paths = [p for p in paths if p.stem in wanted]
    configs = args.configs.split(",")
    scratch = Path(args.scratch or tempfile.mkdtemp(prefix="qaccel-history-"))
    scratch.mkdir(parents=True, exist_ok=True)
    try:
        root = checkout(args.base, scratch)
    except subprocess.CalledProcessError as e:
        why = ((e.stderr or "").strip().splitlines() or [""])[-1]
        print(f"bench_corpus_history: error: cannot check out {args.base}: {why}",
              file=sys.stderr)  # fmt: skip
        return 1
    known = current_op_names()
    summary = []
    try:
        for path in paths:
            old = facts_of(path, configs, root)
            new = facts_of(path, configs, None)
            for config in configs:
                c = load_config(config)
                before = old[config] if "refused" in old[config] else \
                    price(old[config], c, known)  # fmt: skip
                after = new[config] if "refused" in new[config] else \
                    price(new[config], c, known)  # fmt: skip
                print("\n".join(table(path.stem, config, before, after, args.base)))
                if "refused" not in after:
                    report = new[config]["report_whole_inference_cycles"]
                    same = "equals" if report == after["whole_inference_cycles"] else \
                        "DIFFERS FROM"  # fmt: skip
                    print(f"after {same} the current report's whole inference ({report})\n")
                if "refused" not in before and \
                        before["accelerator_cycles"] != old[config]["report_cycles"]:
                    print(f"before: the accelerator functions' layers sum to "
                          f"{before['accelerator_cycles']} cycles, the revision's report "
                          f"says {old[config]['report_cycles']}\n")  # fmt: skip
                if "refused" not in before and "refused" not in after:
                    summary.append((path.stem, config, before, after))
                sys.stdout.flush()
    finally:
        if not args.keep:
            remove(scratch)
    print("### summary: whole inference (est.), before -> after\n")
    print("| model | config | partitions | accelerator cycles | whole inference (est.) | "
          "after / before |")
    print("| --- | --- | ---: | ---: | ---: | ---: |")
    for model, config, b, a in summary:
        w = "whole_inference_cycles"
        print(f"| {model} | {config} | {b['partitions']} -> {a['partitions']} | "
              f"{b['accelerator_cycles']} -> {a['accelerator_cycles']} | {b[w]} -> {a[w]} | "
              f"{_ratio(b[w], a[w])}{' (slower)' if a[w] > b[w] else ''} |")  # fmt: skip
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
