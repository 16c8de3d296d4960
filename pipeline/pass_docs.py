"""What `--list-passes` and docs/passes.md say about a pass: its summary and description
(the class docstring), its options with their types, defaults and docs (the docstrings written
under dataclass fields, xDSL's convention), and a named pipeline's passes."""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass
from typing import Any, Literal, get_args, get_origin, get_type_hints

from xdsl.passes import ModulePass
from xdsl.utils.hints import type_repr

from qaccel.pipeline.expansion import NamedPipeline, _entry_specs
from qaccel.pipeline.spec import (
    PassFactories,
    PipelineError,
    _format_value,
    _literal_choices,
    describe_pass,
    format_spec,
    load_pass,
)


@dataclass(frozen=True)
class OptionInfo:
    name: str  # kebab-case, as typed in a pipeline
    type: str
    default: str | None  # None: required
    doc: str = ""


@dataclass(frozen=True)
class PassInfo:
    name: str
    summary: str = ""
    doc: str = ""
    options: tuple[OptionInfo, ...] = ()
    expansion: tuple[str, ...] | None = None  # named pipelines: inner specs, default options
    error: str | None = None  # why the pass cannot be loaded

    @property
    def is_pipeline(self) -> bool:
        return self.expansion is not None


def pass_doc(cls: type) -> str:
    """The class's own docstring, cleaned; '' if it has none (dataclasses invent one)."""
    doc = cls.__dict__.get("__doc__") or ""
    if doc.startswith(cls.__name__ + "("):
        return ""
    return inspect.cleandoc(doc)


def summary_of(doc: str) -> str:
    """The first paragraph of a docstring, as one line."""
    paragraph = doc.strip().split("\n\n", 1)[0]
    return " ".join(line.strip() for line in paragraph.splitlines())


def _attribute_docs(cls: type) -> dict[str, str]:
    """Docstrings written under dataclass fields (xDSL's convention), by field name."""
    import ast
    import textwrap

    docs: dict[str, str] = {}
    for klass in reversed(cls.__mro__):
        if klass in (object, ModulePass) or not dataclasses.is_dataclass(klass):
            continue
        try:
            tree = ast.parse(textwrap.dedent(inspect.getsource(klass)))
        except (OSError, TypeError, SyntaxError):
            continue
        body = tree.body[0].body if tree.body and isinstance(tree.body[0], ast.ClassDef) else []
        for stmt, following in zip(body, body[1:]):
            if (
                isinstance(stmt, ast.AnnAssign)
                and isinstance(stmt.target, ast.Name)
                and isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                docs[stmt.target.id] = " ".join(inspect.cleandoc(following.value.value).split())
    return docs


def _default_text(f: dataclasses.Field[Any]) -> str | None:
    if f.default is not dataclasses.MISSING:
        value = f.default
    elif f.default_factory is not dataclasses.MISSING:
        value = f.default_factory()
    else:
        return None
    if value is None:
        return "none"
    if isinstance(value, tuple):
        return ",".join(_format_value(v) for v in value) if value else "(empty)"
    return _format_value(value)


def _option_type_text(hint: Any) -> str:
    """`int | None`; a `Literal[...]` option as its words, `alu|preload` (`| None`)."""
    choices = _literal_choices(hint)
    if choices is not None:
        words = "|".join(map(str, choices))
        optional = get_origin(hint) is not Literal and type(None) in get_args(hint)
        return f"{words} | None" if optional else words
    return type_repr(hint).replace("|", " | ").replace("typing.", "")


def option_infos(cls: type[ModulePass], with_docs: bool = True) -> tuple[OptionInfo, ...]:
    try:
        hints = get_type_hints(cls)
    except Exception:
        hints = {}
    docs = _attribute_docs(cls) if with_docs else {}
    ordered = sorted((f for f in dataclasses.fields(cls) if f.init and f.name != "name"),
                     key=lambda f: f.kw_only)  # a pass's own options first  # fmt: skip
    return tuple(
        OptionInfo(
            f.name.replace("_", "-"),
            _option_type_text(hints.get(f.name, f.type)),
            _default_text(f),
            docs.get(f.name, ""),
        )
        for f in ordered
    )


def pipeline_expansion(cls: type[NamedPipeline], available: PassFactories) -> tuple[str, ...]:
    """The inner passes of a named pipeline with default options (an unknown one marked
    `(not registered)`: running the pipeline is an error then)."""
    entries: list[str] = []
    for entry in cls().expansion():
        for s in _entry_specs(entry):
            if isinstance(s, ModulePass):
                entries.append(describe_pass(s))
            else:
                text = format_spec(s)
                entries.append(text if s.name in available else f"{text} (not registered)")
    return tuple(entries)


def pass_info(name: str, available: PassFactories, with_option_docs: bool = True) -> PassInfo:
    """Everything `--list-passes` and docs/passes.md say about a registered pass; never
    raises (a pass that cannot load is described by `error`)."""
    try:
        cls = load_pass(name, available)
    except PipelineError as e:
        return PassInfo(name, error=str(e).split(": ", 1)[1])
    doc = pass_doc(cls)
    try:
        options = option_infos(cls, with_option_docs)
        expansion = (
            pipeline_expansion(cls, available) if issubclass(cls, NamedPipeline) else None
        )
    except Exception as e:
        return PassInfo(name, summary_of(doc), doc, error=f"{type(e).__name__}: {e}")
    return PassInfo(name, summary_of(doc), doc, options, expansion)


def qaccel_pass_names() -> set[str]:
    """Names of the passes and pipelines registered by qaccel itself."""
    from qaccel.pipeline.registry import get_all_passes

    return set(get_all_passes())
