"""Sweep specification: which hardware configurations and pipeline options to evaluate.

A spec is a YAML or JSON mapping:

    base: vta-default            # bundled config name or JSON file the points start from
    fixed: {clock_mhz: 333.0}    # keys every point takes
    grid:                        # keys swept: each a list of values
      log_inp_buff_size: [14, 15, 16]
      log_wgt_buff_size: [17, 18]
      store_requant: [false, true]
      bias_placement: [alu, preload]  # a vta-pipeline option
    constraints:                 # every point must satisfy all of them
      - total_sram_bytes <= 524288
    samples: 8                   # optional: a seeded random sample of the grid's points
    seed: 0

Keys are `HardwareConfig` fields (`targets/vta/config.py`) or the `vta-pipeline` options
`bias_placement` and `max_partitions` (spelled with `_` or `-`). Constraints are a small expression
language evaluated without `eval`: numbers, `true`/`false`, strings, parameter names and the
derived quantities in `DERIVED` (e.g. `total_sram_bytes`, `block`, `macs_per_cycle`),
`+ - * / // % **`, comparisons (chained too), `and`/`or`/`not`, parentheses and `min`/`max`.
A bad spec raises `SpecError` with a one-line message naming the key or the constraint.
"""

from __future__ import annotations

import ast
import itertools
import json
import operator
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from qaccel.targets.vta.config import ConfigError, HardwareConfig

PIPELINE_KEYS = ("bias_placement", "max_partitions")
"""Points' keys that are `vta-pipeline` options rather than hardware configuration keys."""

HARDWARE_KEYS = tuple(f.name for f in fields(HardwareConfig) if f.name != "name")

SPEC_KEYS = ("base", "fixed", "grid", "constraints", "samples", "seed")

SPEC_KEY_DOCS = {
    "base": ("bundled configuration name or JSON file", '"vta-default"',
             "the hardware configuration every point starts from; a point's keys override it"),
    "fixed": ("mapping key -> value", "{}",
              "keys every point takes (hardware configuration keys or pipeline options)"),
    "grid": ("mapping key -> non-empty list of values", "{}",
             "the swept keys: every combination of their values is a point"),
    "constraints": ("list of expressions (or one expression)", "[]",
                    "every point must satisfy all of them (the expression language below); "
                    "the others are left out, not failed"),
    "samples": ("non-negative integer", "none: every point",
                "evaluate a seeded random sample of this many of the points (in grid order)"),
    "seed": ("non-negative integer", "0", "the seed of `samples`' random choice"),
}
"""Type, default and meaning of every spec key (docs/sweep-spec.md is generated from it)."""

PIPELINE_KEY_DOCS = {
    "bias_placement": "vta-pipeline's `bias-placement`: where the fused bias enters the "
                      "accumulators, `alu` or `preload` (unset: the pass's default)",
    "max_partitions": "vta-pipeline's `max-partitions`: keep at most this many accelerator "
                      "partitions, those with the most MACs (unset: all)",
}


class SpecError(ValueError):
    """A sweep specification that cannot be used (one line, naming the key)."""


def _buffer_bytes(c: Mapping[str, Any], key: str) -> int:
    return 1 << int(c[f"log_{key}_buff_size"])


DERIVED: dict[str, Callable[[Mapping[str, Any]], int | float]] = {
    "block": lambda c: 1 << int(c["log_block"]),
    "batch": lambda c: 1 << int(c["log_batch"]),
    "macs_per_cycle": lambda c: (1 << int(c["log_batch"])) * (1 << int(c["log_block"])) ** 2,
    "uop_buff_bytes": lambda c: _buffer_bytes(c, "uop"),
    "inp_buff_bytes": lambda c: _buffer_bytes(c, "inp"),
    "wgt_buff_bytes": lambda c: _buffer_bytes(c, "wgt"),
    "acc_buff_bytes": lambda c: _buffer_bytes(c, "acc"),
    "total_sram_bytes": lambda c: sum(_buffer_bytes(c, k) for k in ("uop", "inp", "wgt", "acc")),
    "peak_gops": lambda c: 2 * DERIVED["macs_per_cycle"](c) * float(c["clock_mhz"]) / 1e3,
}
"""Quantities of a configuration (its keys as a dict) that constraints may name besides its
keys; a refused configuration has them too."""

DERIVED_DOCS = {
    "block": "BLOCK_IN = BLOCK_OUT, `2 ** log_block`",
    "batch": "BATCH, `2 ** log_batch`",
    "macs_per_cycle": "MACs of one GEMM block per cycle, `batch * block ** 2`",
    "uop_buff_bytes": "micro-op buffer bytes, `2 ** log_uop_buff_size`",
    "inp_buff_bytes": "input buffer bytes, `2 ** log_inp_buff_size`",
    "wgt_buff_bytes": "weight buffer bytes, `2 ** log_wgt_buff_size`",
    "acc_buff_bytes": "accumulator buffer bytes, `2 ** log_acc_buff_size`",
    "total_sram_bytes": "all four on-chip buffers' bytes (the sweep table's `sram_bytes`)",
    "peak_gops": "peak GEMM throughput in giga-operations per second, `2 * macs_per_cycle * "
                 "clock_mhz / 1000`",
}


def sram_bytes(config: HardwareConfig | Mapping[str, Any]) -> int:
    """On-chip SRAM of a configuration: micro-op, input, weight and accumulator buffers."""
    keys = config.to_dict() if isinstance(config, HardwareConfig) else config
    return int(DERIVED["total_sram_bytes"](keys))


# --- the constraint language ---------------------------------------------------------------

_BINOPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow,
}  # fmt: skip
_CMPOPS: dict[type, Callable[[Any, Any], bool]] = {
    ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
    ast.Eq: operator.eq, ast.NotEq: operator.ne,
}  # fmt: skip
_FUNCS = {"min": min, "max": max}
_WORDS = {"true": True, "false": False, "True": True, "False": False}


@dataclass(frozen=True)
class Constraint:
    """One boolean expression over a point's keys and the derived quantities."""

    text: str
    tree: ast.expr

    @staticmethod
    def parse(text: str, names: frozenset[str]) -> Constraint:
        if not isinstance(text, str):
            raise SpecError(f"constraint {text!r}: expected an expression string")
        try:
            tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as e:
            raise SpecError(f"constraint '{text}': syntax error: {e.msg}") from None
        Constraint._check(tree, text, names)
        return Constraint(text, tree)

    @staticmethod
    def _check(node: ast.AST, text: str, names: frozenset[str]) -> None:
        if isinstance(node, ast.Constant):
            if not isinstance(node.value, int | float | str | bool):
                raise SpecError(f"constraint '{text}': unsupported constant {node.value!r}")
            return
        if isinstance(node, ast.Name):
            if node.id not in names and node.id not in _WORDS:
                raise SpecError(f"constraint '{text}': unknown name '{node.id}' "
                                f"(known: {', '.join(sorted(names))})")  # fmt: skip
            return
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            children: list[ast.AST] = [node.left, node.right]
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not | ast.USub | ast.UAdd):
            children = [node.operand]
        elif isinstance(node, ast.BoolOp):
            children = list(node.values)
        elif isinstance(node, ast.Compare) and all(type(o) in _CMPOPS for o in node.ops):
            children = [node.left, *node.comparators]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id in _FUNCS and not node.keywords and node.args):  # fmt: skip
            children = list(node.args)
        else:
            raise SpecError(f"constraint '{text}': unsupported syntax "
                            f"'{ast.unparse(node)}'")  # fmt: skip
        for child in children:
            Constraint._check(child, text, names)

    def holds(self, env: Mapping[str, Any]) -> bool:
        try:
            return bool(_evaluate(self.tree, env))
        except (TypeError, ZeroDivisionError, OverflowError) as e:
            raise SpecError(f"constraint '{self.text}': {e}") from None


def _evaluate(node: ast.AST, env: Mapping[str, Any]) -> Any:
    if isinstance(node, ast.Constant):
        return node.value
    if isinstance(node, ast.Name):
        return env[node.id] if node.id in env else _WORDS[node.id]
    if isinstance(node, ast.BinOp):
        left, right = _evaluate(node.left, env), _evaluate(node.right, env)
        if isinstance(node.op, ast.Pow) and abs(right) > 64:
            raise OverflowError("exponent larger than 64")
        return _BINOPS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp):
        value = _evaluate(node.operand, env)
        if isinstance(node.op, ast.Not):
            return not value
        return -value if isinstance(node.op, ast.USub) else +value
    if isinstance(node, ast.BoolOp):
        if isinstance(node.op, ast.And):
            return all(_evaluate(v, env) for v in node.values)
        return any(_evaluate(v, env) for v in node.values)
    if isinstance(node, ast.Compare):
        left = _evaluate(node.left, env)
        for op, comparator in zip(node.ops, node.comparators, strict=True):
            right = _evaluate(comparator, env)
            if not _CMPOPS[type(op)](left, right):
                return False
            left = right
        return True
    assert isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
    return _FUNCS[node.func.id](*(_evaluate(a, env) for a in node.args))


# --- points --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Point:
    """One configuration to evaluate: its hardware configuration and pipeline options, or
    the one-line reason `HardwareConfig` refuses it (then it is a failed row of the table)."""

    params: tuple[tuple[str, Any], ...]
    """The swept and fixed keys (what the result table shows), sorted by key."""
    config: HardwareConfig | None
    pipeline_options: tuple[tuple[str, Any], ...] = ()
    refused: str | None = None

    @property
    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.params)

    def as_dict(self) -> dict[str, Any]:
        return dict(self.params)


def _normalize_key(key: Any, where: str) -> str:
    if not isinstance(key, str):
        raise SpecError(f"{where}: key {key!r} is not a string")
    name = key.replace("-", "_")
    if name not in HARDWARE_KEYS and name not in PIPELINE_KEYS:
        raise SpecError(f"{where}: unknown key '{key}' (hardware config keys: "
                        f"{', '.join(HARDWARE_KEYS)}; pipeline options: "
                        f"{', '.join(PIPELINE_KEYS)})")  # fmt: skip
    return name


@dataclass
class SweepSpec:
    """A grid (or a seeded random sample of it) of points with fixed keys and constraints."""

    grid: dict[str, list[Any]] = field(default_factory=dict)
    fixed: dict[str, Any] = field(default_factory=dict)
    constraints: list[str] = field(default_factory=list)
    base: str | HardwareConfig = "vta-default"
    samples: int | None = None
    seed: int = 0

    @staticmethod
    def from_dict(data: Any, where: str = "spec") -> SweepSpec:
        if not isinstance(data, dict):
            raise SpecError(f"{where}: expected a mapping with keys {', '.join(SPEC_KEYS)}")
        unknown = sorted(set(data) - set(SPEC_KEYS))
        if unknown:
            raise SpecError(f"{where}: unknown key(s) {', '.join(map(str, unknown))} "
                            f"(expected {', '.join(SPEC_KEYS)})")  # fmt: skip
        grid = data.get("grid") or {}
        fixed = data.get("fixed") or {}
        constraints = data.get("constraints") or []
        if not isinstance(grid, dict):
            raise SpecError(f"{where}: grid must be a mapping of key to list of values")
        if not isinstance(fixed, dict):
            raise SpecError(f"{where}: fixed must be a mapping of key to value")
        if isinstance(constraints, str):
            constraints = [constraints]
        if not isinstance(constraints, list):
            raise SpecError(f"{where}: constraints must be a list of expressions")
        samples, seed = data.get("samples"), data.get("seed", 0)
        for key, value in (("samples", samples), ("seed", seed)):
            if value is not None and (not isinstance(value, int) or isinstance(value, bool)
                                      or value < 0):  # fmt: skip
                raise SpecError(f"{where}: {key} must be a non-negative integer, got {value!r}")
        base = data.get("base", "vta-default")
        if not isinstance(base, str):
            raise SpecError(f"{where}: base must be a bundled config name or a file")
        spec = SweepSpec(dict(grid), dict(fixed), list(constraints), base, samples, seed)
        spec.validate(where)
        return spec

    @staticmethod
    def load(path: str | Path) -> SweepSpec:
        """Read a `.yaml`/`.yml` or `.json` spec file."""
        path = Path(path)
        try:
            text = path.read_text()
        except OSError as e:
            raise SpecError(f"{path}: cannot read sweep spec: {e.strerror}") from None
        if path.suffix in (".yaml", ".yml"):
            try:
                import yaml
            except ImportError:
                raise SpecError(f"{path}: YAML specs need PyYAML (or write the spec as JSON)") from None
            try:
                data = yaml.safe_load(text)
            except yaml.YAMLError as e:
                raise SpecError(f"{path}: invalid YAML: {str(e).splitlines()[0]}") from None
        elif path.suffix == ".json":
            try:
                data = json.loads(text)
            except json.JSONDecodeError as e:
                raise SpecError(f"{path}: invalid JSON: {e}") from None
        else:
            raise SpecError(f"{path}: expected a .yaml, .yml or .json sweep spec")
        return SweepSpec.from_dict(data, str(path))

    def validate(self, where: str = "spec") -> None:
        grid: dict[str, list[Any]] = {}
        for key, values in self.grid.items():
            name = _normalize_key(key, f"{where}: grid")
            if not isinstance(values, list) or not values:
                raise SpecError(f"{where}: grid key '{key}' needs a non-empty list of values")
            grid[name] = values
        fixed = {_normalize_key(k, f"{where}: fixed"): v for k, v in self.fixed.items()}
        both = sorted(set(grid) & set(fixed))
        if both:
            raise SpecError(f"{where}: key(s) {', '.join(both)} both fixed and swept")
        self.grid, self.fixed = grid, fixed
        names = frozenset(HARDWARE_KEYS) | frozenset(PIPELINE_KEYS) | frozenset(DERIVED)
        self._constraints = [Constraint.parse(c, names) for c in self.constraints]
        self._base = self.base_config()

    def base_config(self) -> HardwareConfig:
        if isinstance(self.base, HardwareConfig):
            return self.base
        try:
            return HardwareConfig.from_json(self.base)
        except ConfigError as e:
            raise SpecError(f"spec: base: {e}") from None

    @property
    def grid_size(self) -> int:
        n = 1
        for values in self.grid.values():
            n *= len(values)
        return n

    def _combinations(self) -> Iterator[dict[str, Any]]:
        keys = sorted(self.grid)
        for values in itertools.product(*(self.grid[k] for k in keys)):
            yield dict(zip(keys, values, strict=True))

    def points(self) -> list[Point]:
        """The points to evaluate, in grid order: every combination that satisfies the
        constraints, including those `HardwareConfig` refuses (their `refused` says why).
        With `samples`, a seeded random sample of them (still in grid order)."""
        if not hasattr(self, "_constraints"):
            self.validate()
        base = self._base.to_dict()
        points: list[Point] = []
        for combo in self._combinations():
            params = {**self.fixed, **combo}
            hw = {k: v for k, v in params.items() if k in HARDWARE_KEYS}
            pipe = {k: v for k, v in params.items() if k in PIPELINE_KEYS}
            env: dict[str, Any] = {"bias_placement": "alu", "max_partitions": 0, **base, **hw, **pipe}
            try:
                env.update({k: f(env) for k, f in DERIVED.items()})
            except (TypeError, ValueError) as e:
                raise SpecError(f"spec: point {params}: {e}") from None
            if not all(c.holds(env) for c in self._constraints):
                continue
            key = tuple(sorted(params.items()))
            try:
                config = HardwareConfig.from_dict({**base, **hw, "name": "sweep"})
            except (ConfigError, TypeError) as e:
                points.append(Point(key, None, tuple(sorted(pipe.items())),
                                    str(e).strip().splitlines()[0]))  # fmt: skip
                continue
            points.append(Point(key, config, tuple(sorted(pipe.items()))))
        if self.samples is not None and self.samples < len(points):
            chosen = sorted(random.Random(self.seed).sample(range(len(points)), self.samples))
            points = [points[i] for i in chosen]
        return points
