"""qaccel's dialects, registered lazily by name (one dialect per module)."""

from collections.abc import Callable

from xdsl.context import Context
from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    def get_quant():
        from qaccel.dialects.quant import Quant

        return Quant

    def get_tfl():
        from qaccel.dialects.tfl import TFL

        return TFL

    def get_q():
        from qaccel.dialects.q import Q

        return Q

    def get_accel():
        from qaccel.dialects.accel import Accel

        return Accel

    def get_vta():
        from qaccel.dialects.vta import Vta

        return Vta

    def get_qaccel():
        from qaccel.dialects.annotations import Qaccel

        return Qaccel

    return {
        "quant": get_quant, "tfl": get_tfl, "q": get_q, "accel": get_accel, "vta": get_vta,
        "qaccel": get_qaccel,
    }  # fmt: skip


def qaccel_context() -> Context:
    """A context with every dialect of the multiverse (qaccel's and xDSL's), loaded lazily."""
    ctx = Context()
    for name, factory in multiverse().all_dialects.items():
        ctx.register_dialect(name, factory)
    return ctx


def multiverse():
    """xDSL's multiverse (every `xdsl.universe` entry point's dialects and passes), read once
    per import path (`kernels/entry_points.py`)."""
    from qaccel.kernels.entry_points import kept

    return kept("xdsl.universe", _read_multiverse)


def _read_multiverse():
    """`xdsl.universe.Universe.get_multiverse()` over the entry points as
    `kernels/entry_points.py` reads them (without importing `importlib.metadata`): the
    universes in the order of their names, a name defined by two of them an error."""
    from xdsl.universe import Universe

    from qaccel.kernels.entry_points import entry_points

    universes = sorted({ep.name: ep.load() for ep in entry_points("xdsl.universe")}.items(),
                       key=lambda item: item[0])  # fmt: skip
    merged = Universe()
    for name, universe in universes:
        if not isinstance(universe, Universe):
            raise ValueError(f"Entry point {universe} for plugin {name} is not an instance of "
                             "Universe.")  # fmt: skip
        for kind in ("all_dialects", "all_passes", "all_targets"):
            into = getattr(merged, kind)
            for key, factory in getattr(universe, kind).items():
                if key in into:
                    owners = [n for n, u in universes if key in getattr(u, kind)]
                    raise ValueError(f"Duplicate definition of {key} in {owners}.")
                into[key] = factory
    return merged
