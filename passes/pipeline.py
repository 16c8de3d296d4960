"""Building pass pipelines from textual specs, shared by the command-line drivers."""

from __future__ import annotations

from xdsl.context import Context
from xdsl.passes import PassPipeline
from xdsl.universe import Universe


class PipelineError(ValueError):
    """An unknown pass or a bad pass option, as one line."""


def qaccel_context() -> Context:
    """A context with every dialect of the multiverse (qaccel's and xDSL's), loaded lazily."""
    ctx = Context()
    for name, factory in Universe.get_multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    return ctx


def build_pipeline(spec: str) -> PassPipeline:
    """`PassPipeline` for a spec such as `legalize-tfl-to-q,annotate-target{target=vta}`."""
    passes = Universe.get_multiverse().all_passes
    try:
        return PassPipeline.parse_spec(passes, spec)
    except ValueError as e:
        raise PipelineError(str(e)) from None
