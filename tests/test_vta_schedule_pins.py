"""The scheduler's choices are pinned: every search of MobileNetV2's GEMM layers (and the same
layers on other hardware configurations and with forced choices) gives the schedules
`tests/fixtures/schedules/mobilenet_v2_searches.json` records, every one the search modeled
with its estimated cycles, best first. A faster search (vectorized ranking, pruning, shared
work) must find exactly these, so the compiled programs stay byte-identical.

The fixture was written by the search before it was vectorized; a deliberate change of the
cost model or of the search space rewrites it with `python tests/test_vta_schedule_pins.py`
(and says why in the commit)."""

from __future__ import annotations

import json
from dataclasses import fields, replace
from pathlib import Path

import pytest
from qaccel.lowering.vta.geometry import LayerError, LayerGeometry
from qaccel.lowering.vta.cost_model import quick_estimate
from qaccel.lowering.vta.planning import BIAS_MODES, LOOP_ORDERS
from qaccel.lowering.vta.search import _Ranked, _search, _step_count, candidates
from qaccel.targets.vta.config import DEFAULT_CONFIG, HardwareConfig

FIXTURE = Path(__file__).parent / "fixtures/schedules/mobilenet_v2_searches.json"

CONFIGS = {
    "vta-default": DEFAULT_CONFIG,
    "store-requant": replace(DEFAULT_CONFIG, name="store-requant", store_requant=True),
    "small": HardwareConfig(name="small", log_inp_buff_size=11, log_wgt_buff_size=14,
                            log_acc_buff_size=12),  # fmt: skip
}
_TILING = ("tile_h", "tile_w", "tile_co", "tile_ci", "loop_order", "bias_mode", "inp_slots",
           "wgt_slots", "acc_slots")  # fmt: skip


def _geometry(d: dict) -> LayerGeometry:
    return LayerGeometry(**{k: tuple(v) if k == "tail" else v for k, v in d.items()})


def _key(case: dict) -> tuple:
    return (_geometry(case["geometry"]), CONFIGS[case["config"]], tuple(case["modes"]),
            tuple(case["orders"]), case["try_modes"], case["model_steps"])  # fmt: skip


def _found(key: tuple) -> list | str:
    """What the search answers: (tiling values..., estimated cycles) of every schedule it
    modeled, best first; or the `LayerError` message."""
    try:
        found = _search(*key)
    except LayerError as e:
        return f"LayerError: {e}"
    return [[*(s.tiling()[k] for k in _TILING), s.estimated_cycles] for s in found]


def _cases() -> list[dict]:
    return json.loads(FIXTURE.read_text())["cases"]


def test_the_searches_find_the_pinned_schedules():
    cases = _cases()
    assert len(cases) > 60
    differ = [(i, c["geometry"], c["config"]) for i, c in enumerate(cases)
              if _found(_key(c)) != c["found"]]  # fmt: skip
    assert not differ, f"{len(differ)} searches changed, first: {differ[0]}"


@pytest.mark.parametrize("at", [0, 1, 4, 12, 30])
def test_candidates_are_unchanged(at):
    """The public candidate list (order included: it breaks ties between equal estimates)."""
    case = _cases()[at]
    g, c = _key(case)[:2]
    got = [[*(s.tiling()[k] for k in _TILING)] for s in candidates(g, c, ("gemm",))]
    assert len(got) == case["n_candidates"]
    assert got[:: max(1, len(got) // 8)] == case["candidates_sample"]


@pytest.mark.parametrize("at", [0, 1, 4, 13, 30, 35, 65, 70, 72])
def test_the_ranking_gives_the_candidates_and_quick_estimates_one_by_one(at):
    """The search ranks the candidates as arrays: the same candidates in the same order (it
    breaks ties), the same quick estimates and loop steps as `candidates` and
    `quick_estimate` give one by one (every bias mode: each has its own terms)."""
    g, c = _key(_cases()[at])[:2]
    ranked = _Ranked(g, c, BIAS_MODES, LOOP_ORDERS)
    one_by_one = candidates(g, c, BIAS_MODES, LOOP_ORDERS)
    assert not ranked.too_large and len(ranked) == len(one_by_one) > 0
    for i, s in enumerate(one_by_one):
        assert ranked.schedule(i) == s
        assert (ranked.quick[i], ranked.steps[i]) == (quick_estimate(s, c), _step_count(s))


def _regenerate(cases: list[dict]) -> None:
    for c in cases:
        key = _key(c)
        c["found"] = _found(key)
        cands = [[*(s.tiling()[k] for k in _TILING)] for s in candidates(*key[:2], ("gemm",))]
        c["n_candidates"] = len(cands)
        c["candidates_sample"] = cands[:: max(1, len(cands) // 8)]
    FIXTURE.write_text(json.dumps({"cases": cases}, separators=(",", ":")) + "\n")


def _geometry_dict(g: LayerGeometry) -> dict:
    return {f.name: getattr(g, f.name) for f in fields(g)}


if __name__ == "__main__":
    _regenerate(_cases())
