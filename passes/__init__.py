"""qaccel's passes, registered lazily by their kebab-case names (one pass per module).

Importing this module imports no pass: each entry names the module and class to load when
the pass is first used, so `qaccel-opt` starts fast however many passes exist.
"""

from collections.abc import Callable
from importlib import import_module

from xdsl.passes import ModulePass

# pass name -> (module under qaccel.passes, or a full module path, class name)
_PASSES: dict[str, tuple[str, str]] = {
    "fuse-composites": ("fuse_composites", "FuseCompositesPass"),
    "legalize-tfl-to-q": ("legalize_tfl_to_q", "LegalizeTflToQPass"),
    "annotate-target": ("annotate_target", "AnnotateTargetPass"),
    "partition-graph": ("partition_graph", "PartitionGraphPass"),
    "insert-pack-unpack": ("insert_pack_unpack", "InsertPackUnpackPass"),
    "lower-q-to-accel": ("lower_q_to_accel", "LowerQToAccelPass"),
    "canonicalize-accel": ("canonicalize_accel", "CanonicalizeAccelPass"),
    "schedule-vta": ("qaccel.lowering.schedule_vta", "ScheduleVtaPass"),
}


def _loader(module: str, cls: str) -> Callable[[], type[ModulePass]]:
    def load() -> type[ModulePass]:
        path = module if module.startswith("qaccel.") else f"qaccel.passes.{module}"
        return getattr(import_module(path), cls)

    return load


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    from qaccel.passes.pipelines import PIPELINES

    passes = {name: _loader(module, cls) for name, (module, cls) in _PASSES.items()}
    passes.update({name: _loader("pipelines", cls) for name, cls in PIPELINES.items()})
    return passes
