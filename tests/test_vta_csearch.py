"""The C schedule search (lowering/vta/csearch.py, lowering/vta/search_c/) gives exactly the
schedules of the Python search (`search._search_python`, the specification): on every
distinct GEMM layer shape of the corpus (tests/fixtures/schedules/corpus_searches.json,
written by `python benchmarks/bench_csearch.py --write-fixture`), on both bundled hardware
configurations, with forced choices and small buffers; it is the one `schedule-vta` uses when
built; its sanitizer build runs the pinned searches cleanly; malformed arguments are refused.
The wider sweep (every variant on every shape) and the timings: benchmarks/bench_csearch.py."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import fields, replace
from pathlib import Path

import numpy as np
import pytest
from qaccel.lowering.vta import csearch, search
from qaccel.lowering.vta.geometry import LayerError, LayerGeometry
from qaccel.lowering.vta.planning import BIAS_MODES, LOOP_ORDERS
from qaccel.targets.vta.config import HardwareConfig

HERE = Path(__file__).parent
CORPUS = HERE / "fixtures/schedules/corpus_searches.json"
VTA = Path(search.__file__).parents[2] / "targets/vta"
TILING = ("tile_h", "tile_w", "tile_co", "tile_ci", "loop_order", "bias_mode", "inp_slots",
          "wgt_slots", "acc_slots")  # fmt: skip

DEFAULT = HardwareConfig.from_json(VTA / "vta_default.json")
STORE = HardwareConfig.from_json(VTA / "vta_store_requant.json")
SMALL = HardwareConfig(name="small", log_inp_buff_size=11, log_wgt_buff_size=14,
                       log_acc_buff_size=12)  # fmt: skip

pytestmark = pytest.mark.skipif(not csearch.available(),
                                reason=f"no C search: {csearch.unavailable_reason()}")  # fmt: skip


def _geometries() -> list[LayerGeometry]:
    return [LayerGeometry(**{k: tuple(v) if k == "tail" else v for k, v in d.items()})
            for d in json.loads(CORPUS.read_text())["geometries"]]  # fmt: skip


def _found(schedules) -> list:
    return [[*(s.tiling()[k] for k in TILING), s.estimated_cycles] for s in schedules]


def _python(key) -> list | str:
    try:
        return _found(search._search_python(*key))
    except LayerError as e:
        return f"LayerError: {e}"


def _compare(keys) -> int:
    """Checks every key the C search runs; returns how many it ran."""
    ran = 0
    for key in keys:
        got = csearch.search(*key, strict=True)
        if got is None:
            continue
        ran += 1
        assert _found(got) == _python(key), (key[0], key[1].name, *key[2:])
    return ran


def test_the_corpus_covers_every_kind():
    geos = _geometries()
    assert len(geos) > 100
    assert {g.kind for g in geos} == {"conv", "depthwise", "dense"}
    assert any(g.runtime_init for g in geos) and any(g.int32_output for g in geos)


@pytest.mark.parametrize("config", [DEFAULT, STORE], ids=lambda c: c.name)
def test_c_equals_python_on_the_corpus(config):
    """Every corpus shape as `qaccel-compile` searches it (the bias mode free)."""
    keys = [(g, config, BIAS_MODES, LOOP_ORDERS, True, 600) for g in _geometries()]
    assert _compare(keys) >= len(keys) - 2


def test_c_equals_python_with_forced_choices_and_small_buffers():
    """A sample of the shapes with each bias mode and loop order forced, other modeling
    budgets, and configurations with small buffers (where some searches go to Python)."""
    geos = _geometries()[::7]
    # depth multipliers (none in the corpus): depthwise shapes with two outputs per input
    geos += [replace(g, O=2 * g.C, depth_multiplier=2) for g in _geometries()[::5]
             if g.kind == "depthwise"]  # fmt: skip
    keys = []
    for g in geos:
        keys += [(g, DEFAULT, (m,), LOOP_ORDERS, False, 600) for m in BIAS_MODES]
        keys += [(g, STORE, ("store",), LOOP_ORDERS, False, 600),
                 (g, DEFAULT, BIAS_MODES, ("channel",), True, 600),
                 (g, STORE, BIAS_MODES, LOOP_ORDERS, True, 0),
                 (g, DEFAULT, BIAS_MODES, LOOP_ORDERS, True, 3000),
                 (g, SMALL, BIAS_MODES, LOOP_ORDERS, True, 600),
                 (g, replace(DEFAULT, name="tiny-uop", log_uop_buff_size=9), BIAS_MODES,
                  LOOP_ORDERS, True, 600)]  # fmt: skip
    assert _compare(keys) > len(keys) // 2


def test_schedule_vta_uses_the_c_search(monkeypatch):
    """`search._search` answers from C when the library is built (the Python search is not
    called), and from Python when it is not (`QACCEL_NO_CSEARCH=1`): the same schedules."""
    g = _geometries()[0]
    key = (g, DEFAULT, BIAS_MODES, LOOP_ORDERS, True, 600)
    want = _python(key)

    def refuse(*_):
        raise AssertionError("the Python search ran")

    with monkeypatch.context() as m:
        m.setattr(search, "_search_python", refuse)
        assert _found(search._search(*key)) == want
    monkeypatch.setenv("QACCEL_NO_CSEARCH", "1")
    csearch._reset_for_tests()
    try:
        assert not csearch.available() and csearch.search(*key) is None
        assert _found(search._search(*key)) == want
    finally:
        monkeypatch.delenv("QACCEL_NO_CSEARCH")
        csearch._reset_for_tests()
    assert csearch.available()


def _good_arguments():
    g = _geometries()[0]
    return list(csearch.arguments(g, DEFAULT, BIAS_MODES, LOOP_ORDERS, True))


@pytest.mark.parametrize("what", [
    "geo length", "cfg length", "info length", "no modes", "mode index", "order index",
    "same order twice", "kind", "zero size", "negative padding", "flag 2", "zero bus",
    "primary", "null out",
])  # fmt: skip
def test_malformed_arguments_are_refused(what):
    lib = csearch.library()
    geo, cfg, info, modes, orders, primary = _good_arguments()
    out_cap = csearch.OUT_CAP
    if what == "geo length":
        geo = geo[:-1]
    elif what == "cfg length":
        cfg = np.append(cfg, 1)
    elif what == "info length":
        info = info[:8]
    elif what == "no modes":
        modes = modes[:0]
    elif what == "mode index":
        modes = np.array([4])
    elif what == "order index":
        orders = np.array([0, 2])
    elif what == "same order twice":
        orders = np.array([1, 1])
    elif what == "kind":
        geo = geo.copy()
        geo[0] = 3
    elif what == "zero size":
        geo = geo.copy()
        geo[13] = 0  # OH
    elif what == "negative padding":
        geo = geo.copy()
        geo[9] = -1
    elif what == "flag 2":
        geo = geo.copy()
        geo[19] = 2
    elif what == "zero bus":
        cfg = cfg.copy()
        cfg[2] = 0
    elif what == "primary":
        primary = 7
    if what == "null out":
        arrays = [np.ascontiguousarray(a, np.int64) for a in (geo, cfg, info, modes, orders)]
        rc = lib.vta_search(*(x for a in arrays for x in (a.ctypes.data, a.size)), primary, 1,
                            600, None, out_cap)  # fmt: skip
    else:
        rc, _ = csearch.run(lib, geo, cfg, info, modes, orders, primary, True, 600, out_cap)
    assert rc == csearch.INVALID


def test_out_of_room_and_out_of_range_leave_the_search_to_python():
    lib = csearch.library()
    args = _good_arguments()
    rc, _ = csearch.run(lib, *args, True, 600, out_cap=1)
    assert rc == csearch.CAPACITY
    geo = args[0].copy()
    geo[17] = 5000  # 80,000 input channels: beyond the sizes the C search takes
    rc, _ = csearch.run(lib, geo, *args[1:], True, 600)
    assert rc == csearch.FALLBACK
    rc, out = csearch.run(lib, *args, True, 600)
    assert rc >= 3 and out[:rc, 9].min() > 0


def _conv1x1(OH: int, C: int, O: int) -> LayerGeometry:
    return LayerGeometry(kind="conv", H=OH, W=16, C=C, O=O, KH=1, KW=1, sh=1, sw=1, dh=1, dw=1,
                         pad_t=0, pad_b=0, pad_l=0, pad_r=0, OH=OH, OW=16, block=16,
                         depth_multiplier=1, tail=("rdmul", "clamp"), per_channel=False,
                         has_bias=False, small_bias=True, int32_output=False,
                         input_zero_point=0, batch=1, runtime_init=False)  # fmt: skip


def _walks() -> tuple[int, int, int]:
    """The C search's codes for a layer whose best schedules walk about 30,000 loop steps,
    and for one whose walk would take 8 M steps (about 1 GB, before `WALK_BYTES` bounded it):
    both with a 256-byte input buffer; and how much the process grew (KB) in the second."""
    import resource

    tiny_inp = HardwareConfig(name="tiny-inp", log_inp_buff_size=8)
    lib = csearch.library()

    def code(g: LayerGeometry) -> int:
        args = csearch.arguments(g, tiny_inp, BIAS_MODES, LOOP_ORDERS, True)
        return csearch.run(lib, *args, True, 600, 604)[0]

    small = code(_conv1x1(4096, 64, 64))
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    huge = code(_conv1x1(32768, 2048, 1024))
    return small, huge, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before


def test_a_walk_too_large_is_left_to_python_before_anything_is_allocated():
    """The memory a schedule's walk needs is computed before it is allocated: above
    `WALK_BYTES` the search is left to Python at once (the process grows by a few MB, not by
    the walk's gigabyte). In a child: its peak memory is its own."""
    code = f"import sys; sys.path.insert(0, {str(HERE)!r}); import test_vta_csearch as t; " \
           "print(*t._walks())"  # fmt: skip
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300)  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    small, huge, grown_kb = map(int, out.stdout.split())
    assert small >= 3 and huge == csearch.FALLBACK
    assert grown_kb < 32 << 10


def test_an_inconsistent_c_search_is_a_bug_and_running_out_of_memory_is_not(monkeypatch):
    """INTERNAL (the C search found its own state inconsistent) is a bug, as a refusal is: the
    Python search runs, and `strict` raises; NOMEM leaves the search to Python quietly."""
    key = (_geometries()[0], DEFAULT, BIAS_MODES, LOOP_ORDERS, True, 600)
    monkeypatch.setattr(csearch, "run", lambda *args: (csearch.INTERNAL, None))
    assert csearch.search(*key) is None
    with pytest.raises(ValueError, match="found itself inconsistent"):
        csearch.search(*key, strict=True)
    monkeypatch.setattr(csearch, "run", lambda *args: (csearch.NOMEM, None))
    assert csearch.search(*key) is None and csearch.search(*key, strict=True) is None


def test_the_codes_are_the_headers():
    header = (csearch.SEARCH_DIR / "vta_search.h").read_text()
    for name in ("INVALID", "FALLBACK", "NOMEM", "CAPACITY", "INTERNAL"):
        assert f"#define VTA_SEARCH_{name} ({getattr(csearch, name)})" in header
    assert "#define VTA_SEARCH_WALK_BYTES (64LL << 20)" in header and csearch.WALK_BYTES == 64 << 20


def _libasan() -> str:
    return subprocess.run(["gcc", "-print-file-name=libasan.so"], capture_output=True,
                          text=True, check=True).stdout.strip()  # fmt: skip


def test_sanitizers(tmp_path):
    """The library built with -fsanitize=address,undefined runs the pinned MobileNetV2
    searches (every configuration and forced choice there) and a sample of the corpus'
    cleanly, with the pinned results: any ASan/UBSan report aborts the subprocess."""
    from qaccel.targets import cbuild
    from sanitized_build import cached

    flags = ("-g", "-O1", "-fno-omit-frame-pointer", "-fsanitize=address,undefined",
             "-fno-sanitize-recover=all", "-Wall", "-Wextra", "-Werror")  # fmt: skip
    cached(tmp_path / csearch.LIB_NAME,
           lambda out: csearch.build_library(out.parent, cc="gcc", extra_flags=flags),
           label="csearch", flags=flags,
           inputs=[*csearch.LIBRARY.files(), Path(csearch.__file__),
                   Path(cbuild.__file__)])  # fmt: skip
    code = textwrap.dedent(
        """
        import sys
        sys.path.insert(0, %r)
        import test_vta_schedule_pins as pins
        import test_vta_csearch as t
        from qaccel.lowering.vta import csearch
        assert csearch.available(), csearch.unavailable_reason()
        ran = 0
        for case in pins._cases():
            key = pins._key(case)
            got = csearch.search(*key, strict=True)
            if got is not None:
                ran += 1
                assert t._found(got) == case["found"], case["geometry"]
        keys = [(g, c, t.BIAS_MODES, t.LOOP_ORDERS, True, 600)
                for g in t._geometries()[::5] for c in (t.DEFAULT, t.STORE)]
        ran += t._compare(keys)
        for what in ("kind", "zero size", "mode index", "null out"):
            t.test_malformed_arguments_are_refused(what)
        t.test_out_of_room_and_out_of_range_leave_the_search_to_python()
        small, huge, _ = t._walks()
        assert small >= 3 and huge == csearch.FALLBACK, (small, huge)
        print("ran", ran)
        """
        % str(HERE)
    )
    env = {**os.environ, "QACCEL_CSEARCH_LIB": str(tmp_path / csearch.LIB_NAME),
           "LD_PRELOAD": _libasan(), "ASAN_OPTIONS": "detect_leaks=0:abort_on_error=1",
           "UBSAN_OPTIONS": "print_stacktrace=1:halt_on_error=1"}  # fmt: skip
    env.pop("QACCEL_NO_CSEARCH", None)
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                         timeout=600)  # fmt: skip
    assert out.returncode == 0, out.stderr[-4000:]
    assert "runtime error" not in out.stderr and "AddressSanitizer" not in out.stderr
    assert int(out.stdout.split("ran")[-1]) > 80


def test_fixture_fields_match_the_geometry():
    """The fixture's geometries have exactly LayerGeometry's fields (a renamed field would
    otherwise fail every test above with a TypeError far from its cause)."""
    names = {f.name for f in fields(LayerGeometry)}
    for d in json.loads(CORPUS.read_text())["geometries"][:3]:
        assert set(d) == names


def test_bias_fits_is_whether_bias_tiles_exist():
    """`geometry.bias_fits` (what a layer's `small_bias` is made of) answers as
    `bias_tiles(...) is not None`, around the limits and at random."""
    from qaccel.lowering.vta.geometry import bias_fits, bias_tiles

    rng = np.random.default_rng(5)
    edges = [241872, 241872 + 63, 241872 + 64, 241872 + 127, 243904, 243904 + 127, 2**31 - 1]
    cases = [np.array([s * e], np.int64) for e in edges for s in (1, -1)]
    for _ in range(400):
        block = int(rng.choice([2, 4, 8, 16, 32]))
        scale = float(rng.choice([100, 3e4, 2.4e5, 2.5e5, 2e6, 2**31 - 1]))
        cases.append(rng.uniform(-scale, scale, int(rng.integers(1, 3 * block))).astype(np.int64))
    for fused in cases:
        fused = fused.astype(np.int32)
        for block in (2, 16) if len(fused) <= 16 else (32,):
            cob = -(-len(fused) // block)
            assert bias_fits(fused, cob, block) == (bias_tiles(fused, cob, block) is not None)


def test_a_refusal_or_a_disagreement_leaves_the_search_to_python(monkeypatch):
    """A refusal of its arguments, or a schedule plan_buffers would place otherwise, is a bug
    of the C search: the compile goes on with the Python search; the tests (`strict`) raise."""
    key = (_geometries()[0], DEFAULT, BIAS_MODES, LOOP_ORDERS, True, 600)
    monkeypatch.setattr(csearch, "run", lambda *args: (csearch.INVALID, None))
    assert csearch.search(*key) is None
    with pytest.raises(ValueError, match="refused its arguments"):
        csearch.search(*key, strict=True)
    monkeypatch.undo()
    monkeypatch.setattr(csearch, "plan_buffers", lambda *args: None)
    assert csearch.search(*key) is None
    with pytest.raises(AssertionError, match="differs from plan_buffers"):
        csearch.search(*key, strict=True)


def test_a_file_without_the_search_is_not_loaded(monkeypatch):
    import ctypes.util

    libm = ctypes.util.find_library("m")
    if libm is None:
        pytest.skip("no libm to load")
    monkeypatch.setenv("QACCEL_CSEARCH_LIB", libm)
    csearch._reset_for_tests()
    try:
        assert not csearch.available()
        assert "cannot load QACCEL_CSEARCH_LIB" in csearch.unavailable_reason()
    finally:
        monkeypatch.delenv("QACCEL_CSEARCH_LIB")
        csearch._reset_for_tests()
