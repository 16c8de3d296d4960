"""qaccel's passes, registered lazily by their kebab-case names (one pass per module)."""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    return {}
