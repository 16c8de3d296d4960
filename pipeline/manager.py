"""qaccel's pass manager, one module per concern, re-exported here in one namespace:

- `pipeline/spec.py`: parse a textual pipeline into passes, print a pass as a user types it;
- `pipeline/expansion.py`: named pipelines and their expansion into the passes that run (an
  unknown pass inside a named pipeline is an error);
- `pipeline/runner.py`: `PassManager`, xDSL's `PassPipeline` with a callback that verifies
  the IR after every pass and calls the instrumentations (IR printing, timing);
- `pipeline/semantics.py`: `--verify-semantics`;
- `pipeline/pass_docs.py`: what `--list-passes` and docs/passes.md say about a pass.

    scheduled = expand(parse_passes("vta-pipeline{max-partitions=4},cse"))
    PassManager(scheduled.passes, [IRPrinter(after_all=True)]).run(ctx, module)
"""

from __future__ import annotations

from qaccel.dialects import qaccel_context
from qaccel.pipeline.expansion import (
    Expansion,
    NamedPipeline,
    PipelineFrame,
    ScheduledPass,
    build_pipeline,
    expand,
)
from qaccel.pipeline.pass_docs import (
    OptionInfo,
    PassInfo,
    option_infos,
    pass_doc,
    pass_info,
    pipeline_expansion,
    qaccel_pass_names,
    summary_of,
)
from qaccel.pipeline.runner import (
    IRPrinter,
    PassInstrumentation,
    PassManager,
    PassTiming,
    PassVerificationError,
    verify_ir,
)
from qaccel.pipeline.semantics import (
    SemanticsError,
    SemanticsVerifier,
    compare_outputs,
    describe_array,
    same_ir,
)
from qaccel.pipeline.spec import (
    PassFactories,
    PipelineError,
    PipelineLike,
    available_passes,
    describe_pass,
    format_spec,
    instantiate,
    load_pass,
    parse_passes,
    pass_spec,
    pipeline_passes,
)

__all__ = [
    "Expansion", "IRPrinter", "NamedPipeline", "OptionInfo", "PassFactories", "PassInfo",
    "PassInstrumentation", "PassManager", "PassTiming", "PassVerificationError", "PipelineError",
    "PipelineFrame", "PipelineLike", "ScheduledPass", "SemanticsError", "SemanticsVerifier",
    "available_passes", "build_pipeline", "compare_outputs", "describe_array", "describe_pass",
    "expand", "format_spec", "instantiate", "load_pass", "option_infos", "parse_passes",
    "pass_doc", "pass_info", "pass_spec", "pipeline_expansion", "pipeline_passes",
    "qaccel_context", "qaccel_pass_names", "same_ir", "summary_of", "verify_ir",
]  # fmt: skip
