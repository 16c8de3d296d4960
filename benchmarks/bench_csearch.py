"""The C schedule search against the Python one: same schedules, and the time of each.

    python benchmarks/bench_csearch.py [--repeat N]      # the sweep (below)
    python benchmarks/bench_csearch.py --write-fixture   # rewrite the corpus' search keys

The sweep runs every search of `tests/fixtures/schedules/corpus_searches.json` (the distinct
GEMM layer shapes `qaccel-compile` searches on the 18 models of tests/fixtures/corpus/ and
tests/fixtures/models/) on both bundled hardware configurations, with the bias mode free,
each bias mode forced, each loop order forced, a short and a long modeling budget, and on
three configurations with small buffers; it checks that `csearch.search` gives exactly the
schedules (and estimated cycles) of `search._search_python` wherever it does not leave the
search to Python, and prints the CPU seconds of both over the cases the C search runs (best
of N runs, fresh geometries each run: nothing memoized, as in a cold compile).

`--write-fixture` compiles each model (`QACCEL_COMPILE_JOBS=1`, so every search runs in this
process) while recording the arguments of every search, and writes the fixture that
tests/test_vta_csearch.py reads.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from dataclasses import fields, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FIXTURE = ROOT / "tests/fixtures/schedules/corpus_searches.json"
MODELS = sorted((ROOT / "tests/fixtures/corpus").glob("*.tflite")) + sorted(
    (ROOT / "tests/fixtures/models").glob("*.tflite")
)
TILING = ("tile_h", "tile_w", "tile_co", "tile_ci", "loop_order", "bias_mode", "inp_slots",
          "wgt_slots", "acc_slots")  # fmt: skip


def configs() -> dict:
    """The bundled configurations and three with small buffers."""
    from qaccel.targets.vta.config import HardwareConfig

    vta = ROOT / "targets/vta"
    default = HardwareConfig.from_json(vta / "vta_default.json")
    store = HardwareConfig.from_json(vta / "vta_store_requant.json")
    return {
        default.name: default,
        store.name: store,
        "small": HardwareConfig(name="small", log_inp_buff_size=11, log_wgt_buff_size=14,
                                log_acc_buff_size=12),  # fmt: skip
        "tiny-uop": replace(default, name="tiny-uop", log_uop_buff_size=9),
        "small-store": replace(store, name="small-store", log_inp_buff_size=12,
                               log_acc_buff_size=13),  # fmt: skip
    }


def variants(config_names) -> list[tuple[str, tuple, tuple, bool, int]]:
    """(config name, modes, orders, try_modes, model_steps) of the sweep."""
    from qaccel.lowering.vta.planning import BIAS_MODES, LOOP_ORDERS

    out = []
    for name in config_names:
        out.append((name, BIAS_MODES, LOOP_ORDERS, True, 600))
        if name in ("vta-default", "vta-store-requant"):
            out += [(name, (m,), LOOP_ORDERS, False, 600) for m in BIAS_MODES]
            out += [(name, BIAS_MODES, (o,), True, 600) for o in LOOP_ORDERS]
            out += [(name, BIAS_MODES, LOOP_ORDERS, True, 0),
                    (name, BIAS_MODES, LOOP_ORDERS, True, 5000)]  # fmt: skip
    return out


def geometry(d: dict):
    from qaccel.lowering.vta.geometry import LayerGeometry

    return LayerGeometry(**{k: tuple(v) if k == "tail" else v for k, v in d.items()})


def found(schedules) -> list:
    return [[*(s.tiling()[k] for k in TILING), s.estimated_cycles] for s in schedules]


def python_found(key) -> list | str:
    from qaccel.lowering.vta.geometry import LayerError
    from qaccel.lowering.vta.search import _search_python

    try:
        return found(_search_python(*key))
    except LayerError as e:
        return f"LayerError: {e}"


def write_fixture() -> None:
    os.environ["QACCEL_COMPILE_JOBS"] = "1"
    from qaccel.lowering.vta import search
    from qaccel.tools import qaccel_compile

    seen: dict[str, dict] = {}
    real = search._search

    def recording(g, c, modes, orders, try_modes, model_steps):
        d = {f.name: getattr(g, f.name) for f in fields(g)}
        seen.setdefault(json.dumps(d, sort_keys=True), d)
        return real(g, c, modes, orders, try_modes, model_steps)

    search._search = recording
    for model in MODELS:
        before = len(seen)
        with tempfile.TemporaryDirectory() as out:
            try:
                qaccel_compile.main([str(model), "-o", out, "--quiet"])
            except SystemExit:
                pass
        print(f"{model.name}: {len(seen) - before} new searches", file=sys.stderr)
    cases = sorted(seen.values(), key=lambda d: json.dumps(d, sort_keys=True))
    FIXTURE.write_text(json.dumps({"geometries": cases}, separators=(",", ":")) + "\n")
    print(f"{len(cases)} geometries -> {FIXTURE.relative_to(ROOT)}", file=sys.stderr)


def sweep(repeat: int) -> None:
    from qaccel.lowering.vta import csearch
    from qaccel.lowering.vta.search import _search_python

    if not csearch.available():
        sys.exit(f"bench_csearch: the C search is unavailable ({csearch.unavailable_reason()})")
    cfgs = configs()
    geos = json.loads(FIXTURE.read_text())["geometries"]
    cases = [(g, v) for v in variants(cfgs) for g in geos]
    ran, fallback, differ = [], 0, []
    for d, (name, modes, orders, try_modes, steps) in cases:
        key = (geometry(d), cfgs[name], modes, orders, try_modes, steps)
        got = csearch.search(*key, strict=True)
        if got is None:
            fallback += 1
            continue
        ran.append((d, (name, modes, orders, try_modes, steps)))
        if found(got) != python_found(key):
            differ.append((name, modes, orders, try_modes, steps, d))
    print(f"{len(cases)} searches ({len(geos)} shapes x {len(cases) // len(geos)} variants): "
          f"{len(ran)} in C, {fallback} left to Python; {len(differ)} differ")  # fmt: skip
    for what in differ[:5]:
        print("  differs:", what)

    def keys():
        return [(geometry(d), cfgs[v[0]], *v[1:]) for d, v in ran]

    def timed(fn) -> float:
        best = float("inf")
        for _ in range(repeat):
            ks = keys()
            t0 = time.process_time()
            for k in ks:
                try:
                    fn(*k)
                except Exception:  # noqa: BLE001  a LayerError: timed as the search
                    pass
            best = min(best, time.process_time() - t0)
        return best

    tc, tp = timed(csearch.search), timed(_search_python)
    print(f"CPU s over the {len(ran)} searches (best of {repeat}): C {tc:.3f}, Python {tp:.3f} "
          f"({tp / tc:.0f}x)")  # fmt: skip
    if differ:
        sys.exit(1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3, help="timed runs (default 3)")
    ap.add_argument("--write-fixture", action="store_true",
                    help="compile the models and rewrite the fixture of search keys")
    args = ap.parse_args()
    if args.write_fixture:
        write_fixture()
    else:
        sweep(args.repeat)


if __name__ == "__main__":
    main()
