"""qaccel's passes and named pipelines, registered lazily by their kebab-case names.

Importing this module imports no pass: each entry names the module and class to load when
the pass is first used, so `qaccel-opt` starts fast however many passes exist.
"""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# pass name -> (module, class name)
_PASSES: dict[str, tuple[str, str]] = {
    "fuse-composites": ("qaccel.passes.fuse_composites", "FuseCompositesPass"),
    "legalize-tfl-to-q": ("qaccel.passes.legalize_tfl_to_q", "LegalizeTflToQPass"),
    "attach-target": ("qaccel.passes.attach_target", "AttachTargetPass"),
    "annotate-target": ("qaccel.passes.annotate_target", "AnnotateTargetPass"),
    "partition-graph": ("qaccel.passes.partition_graph", "PartitionGraphPass"),
    "insert-pack-unpack": ("qaccel.passes.insert_pack_unpack", "InsertPackUnpackPass"),
    "lower-q-to-accel": ("qaccel.lowering.lower_q_to_accel", "LowerQToAccelPass"),
    "canonicalize-accel": ("qaccel.passes.canonicalize_accel", "CanonicalizeAccelPass"),
    "form-vta-layers": ("qaccel.lowering.form_vta_layers", "FormVtaLayersPass"),
    "schedule-vta": ("qaccel.lowering.schedule_vta", "ScheduleVtaPass"),
    # named pipelines
    "cpu-pipeline": ("qaccel.pipeline.named", "CpuPipeline"),
    "vta-pipeline": ("qaccel.pipeline.named", "VtaPipeline"),
}


def _loader(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        return getattr(import_module(module), cls)

    return load


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {name: _loader(module, cls) for name, (module, cls) in _PASSES.items()}
