"""qaccel's xDSL universe: lets plain `xdsl-opt` (and `qaccel-opt`) see our dialects and passes.

Registered through the `xdsl.universe` entry point. Everything is imported lazily, so
listing the universe costs nothing until a dialect or pass is used.
"""

from xdsl.universe import Universe

from qaccel.dialects import get_all_dialects
from qaccel.pipeline.registry import get_all_passes


def _dot_target():
    from qaccel.backends.dot import DotTarget

    return DotTarget


QACCEL_UNIVERSE = Universe(
    all_dialects=get_all_dialects(),
    all_passes=get_all_passes(),
    all_targets={"dot": _dot_target},
)
