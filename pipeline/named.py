"""Named pipelines: passes that expand to a documented list of passes (see docs/passes.md).

To add a pipeline: a frozen dataclass deriving from `NamedPipeline` here (kebab-case `name`,
options typed `T | None = None` that pass through to inner passes, a docstring whose first
line is the summary and which lists the passes), an entry in `pipeline/registry.py`, then
`python -m qaccel.tools.gen_pass_docs`.

Every named pipeline also takes `start-after=PASS` and `stop-after=PASS` (from
`NamedPipeline`): `vta-pipeline{stop-after=partition-graph}` stops there so that the module can
be changed, `vta-pipeline{start-after=partition-graph}` runs the rest (`pipeline/stage.py` reads
where a module is from its IR, which `qaccel-compile` and `api.compile` use to continue it).

A pass named here must be registered in `pipeline/registry.py`: an unknown name is an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from qaccel.pipeline.expansion import NamedPipeline
from qaccel.pipeline.spec import pass_spec
from xdsl.passes import ModulePass
from xdsl.utils.arg_spec import ArgSpec

@dataclass(frozen=True)
class CpuPipeline(NamedPipeline):
    """Import-level cleanup and legalization: `tfl` ops become quantization-carrying `q` ops.

    Runs, in order:

    1. `fuse-composites`: composite functions and `stablehlo.composite` ops that declare what
       they implement become one fused op;
    2. `legalize-tfl-to-q`: `tfl` ops become `q` ops (ops without a `q` form stay `tfl`).

    This is the target-independent prefix of `vta-pipeline`; the result runs on the CPU
    interpreter.
    """

    name = "cpu-pipeline"

    def expansion(self) -> Sequence[str | ArgSpec | ModulePass]:
        return ["fuse-composites", "legalize-tfl-to-q"]


@dataclass(frozen=True)
class VtaPipeline(NamedPipeline):
    """The whole flow for the VTA-like accelerator, from imported `tfl` IR to scheduled `accel` ops.

    Runs, in order:

    1. `attach-target{target=vta config=...}`: the module gets its `#accel.target` (the VTA
       and its hardware configuration), which every later pass reads;
    2. `fuse-composites`;
    3. `legalize-tfl-to-q`;
    4. `annotate-target`: marks the op patterns VTA runs
       (e.g. `q.conv2d+q.bias_add+q.requantize+q.relu`);
    5. `partition-graph{max-partitions=...}`: outlines accelerator functions;
    6. `insert-pack-unpack`: layout changes at CPU/accelerator borders;
    7. `lower-q-to-accel{bias-placement=...}`: q ops become `conv2d_zp`, `bias_add_zp`,
       `round_multiply`, `round_rshift`, ... ;
    8. `form-vta-layers`: each accelerator layer (a GEMM op with its requantization tail,
       an element-wise tree, a pool) becomes one `vta.layer` op holding its ops;
    9. `schedule-vta`: each layer gets its `#vta.<kind>_schedule` (tiling, chunks),
       from which `qaccel-compile` emits the instruction streams.
    """

    name = "vta-pipeline"

    config: str | None = None
    """Hardware configuration JSON or bundled name (`vta-default`, `vta-store-requant`),
    passed to `attach-target`."""

    max_partitions: int | None = None
    """Passed to `partition-graph`: at most this many accelerator functions."""

    bias_placement: Literal["alu", "preload"] | None = None
    """Passed to `lower-q-to-accel`: where the fused bias (with the zero-point term) enters
    the accumulators."""

    def expansion(self) -> Sequence[str | ArgSpec | ModulePass]:
        return [
            pass_spec("attach-target", target="vta", config=self.config),
            "fuse-composites",
            "legalize-tfl-to-q",
            "annotate-target",
            pass_spec("partition-graph", max_partitions=self.max_partitions),
            "insert-pack-unpack",
            pass_spec("lower-q-to-accel", bias_placement=self.bias_placement),
            "form-vta-layers",
            "schedule-vta",
        ]
