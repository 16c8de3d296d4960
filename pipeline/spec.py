"""Pass specs: parse a textual pipeline (`a,b{x=1}`) into pass instances, and print a pass
back as a user would type it.

`parse_passes` checks what xDSL's `PassPipeline.parse_spec` leaves to the pass: unknown
options are named with the pass's own options, `Literal[...]` options name their words, and a
registered pass that cannot be loaded is one line, never a traceback.
"""

from __future__ import annotations

import dataclasses
import re
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec, parse_pipeline

PassFactories = Mapping[str, Callable[[], type[ModulePass]]]


class PipelineError(ValueError):
    """An unknown pass, a pass that cannot be loaded, or a bad pass option, as one line."""


def available_passes() -> PassFactories:
    """Every registered pass of the multiverse (qaccel's and xDSL's), by name."""
    from qaccel.dialects import multiverse

    return dict(multiverse().all_passes)


def pass_spec(pass_name: str, **options: Any) -> ArgSpec:
    """`ArgSpec` of `pass_name` with `options` (Python names); options that are None are left
    out, so the pass uses its own default: `pass_spec("p", max_partitions=None)` is `p`."""
    parameters: dict[str, tuple[Any, ...]] = {}
    for key, value in options.items():
        if value is None:
            continue
        parameters[key.replace("_", "-")] = (
            tuple(value) if isinstance(value, tuple | list) else (value,)
        )
    return ArgSpec(pass_name, parameters)


_BARE_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_-]*")  # what the pipeline lexer reads as a word


def _format_value(value: Any) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        if _BARE_WORD.fullmatch(value) and value not in ("true", "false"):
            return value
        return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'
    return str(value)


def format_spec(spec: ArgSpec) -> str:
    """`name{key=value other=1,2}` as a user would type it (kebab-case keys, bare words)."""
    if not spec.parameters:
        return spec.name
    items = []
    for key, values in spec.parameters.items():
        key = key.replace("_", "-")
        items.append(f"{key}={','.join(_format_value(v) for v in values)}" if values else key)
    return f"{spec.name}{{{' '.join(items)}}}"


def describe_pass(p: ModulePass) -> str:
    """How diagnostics and dumps name a pass instance: its spec without default options."""
    return format_spec(p.spec())


def load_pass(name: str, available: PassFactories) -> type[ModulePass]:
    """The class of the registered pass `name`, or a one-line PipelineError."""
    try:
        return available[name]()
    except Exception as e:  # a registered pass whose module is missing or broken
        raise PipelineError(
            f"pass '{name}' is registered but cannot be loaded: {type(e).__name__}: {e}"
        ) from None


def _literal_choices(hint: Any) -> tuple[Any, ...] | None:
    """The allowed values of a `Literal[...]` (or `Literal[...] | None`) option type."""
    if get_origin(hint) is Literal:
        return get_args(hint)
    if get_origin(hint) in (Union, types.UnionType):
        for arg in get_args(hint):
            if get_origin(arg) is Literal:
                return get_args(arg)
    return None


def _check_literal_options(cls: type[ModulePass], spec: ArgSpec) -> None:
    """A one-line error naming the option for a value outside a `Literal[...]` option's
    words (xDSL's own message names neither the option nor the words)."""
    if not spec.parameters:
        return  # nothing to check (and resolving the hints is most of a pass's setup)
    try:
        hints = get_type_hints(cls)
    except Exception:  # noqa: BLE001 - unresolvable hints: leave the check to xDSL
        return
    for key, values in spec.parameters.items():
        choices = _literal_choices(hints.get(key.replace("-", "_")))
        if choices is None:
            continue
        for value in values:
            if value not in choices:
                raise PipelineError(
                    f"{spec.name}: {key} must be one of {', '.join(map(str, choices))}, "
                    f"got '{value}'"
                )


def _option_names(cls: type[ModulePass]) -> list[str]:
    """The pass's options as a pipeline spells them (kebab-case)."""
    if not dataclasses.is_dataclass(cls):
        return []
    fields = sorted((f for f in dataclasses.fields(cls) if f.init and f.name != "name"),
                    key=lambda f: f.kw_only)  # a pass's own options, then inherited ones  # fmt: skip
    return [f.name.replace("_", "-") for f in fields]


def _kebab_case(message: str, cls: type[ModulePass]) -> str:
    """xDSL's option errors name options by their Python fields (`max_partitions`): spell them
    as pipelines and the docs do."""
    for option in _option_names(cls):
        if "-" in option:
            message = re.sub(rf"\b{re.escape(option.replace('-', '_'))}\b", option, message)
    return message


def instantiate(spec: ArgSpec, available: PassFactories) -> ModulePass:
    cls = load_pass(spec.name, available)
    known = _option_names(cls)
    unknown = [k for k in spec.parameters if k.replace("_", "-") not in known]
    if unknown and known:
        raise PipelineError(
            f"bad options for pass '{spec.name}': unknown option(s) "
            f"{', '.join(k.replace('_', '-') for k in unknown)} (its options: {', '.join(known)})"
        )
    _check_literal_options(cls, spec)
    try:
        return cls.from_spec(spec)
    except ValueError as e:
        raise PipelineError(f"bad options for pass '{spec.name}': {_kebab_case(str(e), cls)}") from None


def parse_passes(spec: str, available: PassFactories | None = None) -> list[ModulePass]:
    """The passes of a textual pipeline (`a,b{x=1}`), named pipelines not yet expanded.

    Raises PipelineError (unknown pass, pass that cannot load, bad option) or xDSL's
    ArgSpecParseError (syntax)."""
    available = available_passes() if available is None else available
    if spec.strip().endswith(","):
        raise PipelineError(f"invalid pass pipeline '{spec}': a pass name must follow the last ','")
    specs = list(parse_pipeline(spec))
    unknown = [s.name for s in specs if s.name not in available]
    if unknown:
        raise PipelineError(f"Unrecognized passes: {unknown}")
    return [instantiate(s, available) for s in specs]


PipelineLike = Union[str, ModulePass, Sequence[Union[str, ModulePass]]]
"""A pipeline as the API takes it: its text (`"a,b{x=1}"`), a pass instance, or a list of
either (a researcher's own pass needs no registration)."""


def pipeline_passes(pipeline: PipelineLike, available: PassFactories | None = None) -> list[ModulePass]:
    """The passes of a pipeline given as text, a pass instance or a list of them, named
    pipelines not yet expanded. Raises PipelineError (also for a value of another type)."""
    if isinstance(pipeline, str):
        return parse_passes(pipeline, available) if pipeline.strip() else []
    if isinstance(pipeline, ModulePass):
        return [pipeline]
    if isinstance(pipeline, type) and issubclass(pipeline, ModulePass):
        raise PipelineError(f"pipeline: {pipeline.__name__} is a pass class; give an instance, "
                            f"{pipeline.__name__}(...)")  # fmt: skip
    if isinstance(pipeline, Sequence):
        passes: list[ModulePass] = []
        for entry in pipeline:
            if not isinstance(entry, str | ModulePass):
                raise PipelineError(f"pipeline: an entry is a {type(entry).__name__}, not a "
                                    "pass name or spec (str) or a ModulePass instance")  # fmt: skip
            passes.extend(pipeline_passes(entry, available))
        return passes
    raise PipelineError(f"pipeline: a {type(pipeline).__name__}, not a pass name or spec (str), "
                        "a ModulePass instance or a list of them")  # fmt: skip
