"""The artifact's staging folder (`backends/vta/artifact.py`'s `Staging`): each file written
once and hashed once (equal large files are one file, linked), files helper processes wrote
into it taken with their digests, and nothing left beside the artifact when it is written
or when the write fails."""

from __future__ import annotations

import hashlib
import io
import json
import os
import time
import zipfile
from pathlib import Path

import numpy as np
import pytest
from qaccel.backends.vta.artifact import Staging, Written, write_artifact
from qaccel.kernels import background
from qaccel.tools import qaccel_compile

MODELS = Path(__file__).parent / "fixtures" / "models"


def _siblings(root: Path) -> list[str]:
    return sorted(p.name for p in root.parent.iterdir() if p.name.startswith(f".{root.name}."))


def _check_manifest(root: Path) -> dict:
    """Every file of the manifest is there with the hash it says, and nothing else is."""
    manifest = json.loads((root / "manifest.json").read_text())
    on_disk = {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}
    assert on_disk == set(manifest["files"]) | {"manifest.json"}
    for rel, digest in manifest["files"].items():
        assert hashlib.sha256((root / rel).read_bytes()).hexdigest() == digest, rel
    return manifest


def test_equal_large_files_are_written_once_and_hashed_once(tmp_path):
    staging = Staging(tmp_path / "out")
    big = os.urandom(1 << 17)
    first = staging.write("a/program.bin", big)
    again = staging.write("b/program.bin", bytes(bytearray(big)))  # equal, another object
    other = staging.write("c/other.bin", big[:-1] + bytes([big[-1] ^ 1]))
    small = staging.write("d/small.bin", b"x" * 10)
    small_again = staging.write("e/small.bin", b"x" * 10)
    folder = staging.folder
    assert first == again == Written(hashlib.sha256(big).hexdigest())
    assert os.path.samefile(folder / "a/program.bin", folder / "b/program.bin")
    assert not os.path.samefile(folder / "a/program.bin", folder / "c/other.bin")
    assert other.sha256 == hashlib.sha256((folder / "c/other.bin").read_bytes()).hexdigest()
    assert small == small_again
    assert not os.path.samefile(folder / "d/small.bin", folder / "e/small.bin")
    # A file written again replaces its own bytes only, never those of a file it was linked to.
    replaced = staging.write("b/program.bin", b"new")
    assert (folder / "a/program.bin").read_bytes() == big
    assert (folder / "b/program.bin").read_bytes() == b"new"
    assert staging.digests["b/program.bin"] == replaced.sha256 == hashlib.sha256(b"new").hexdigest()
    staging.write("f/program.bin", big)  # links to the file that still holds these bytes
    assert os.path.samefile(folder / "a/program.bin", folder / "f/program.bin")
    # Pieces (a list, or an iterator of them): written and hashed as they come.
    pieces = [big[:5], memoryview(big)[5:1000], bytearray(big[1000:])]
    assert staging.write("g/pieces.bin", pieces) == first
    assert staging.write("h/pieces.bin", iter(pieces)) == first
    assert (folder / "h/pieces.bin").read_bytes() == big
    assert not os.path.samefile(folder / "a/program.bin", folder / "h/pieces.bin")
    staging.discard()
    assert not folder.exists()


def _in_child(fn) -> None:
    pid = os.fork()
    if pid == 0:
        try:
            fn()
        finally:
            os._exit(0)
    os.waitpid(pid, 0)


@pytest.fixture(scope="module")
def small_cnn():
    return qaccel_compile.compile_model(MODELS / "small_cnn.tflite")


def test_files_written_by_helpers_are_taken_with_their_digests(small_cnn, tmp_path):
    compiled, data = small_cnn
    root = tmp_path / "out"
    write_artifact(compiled, tmp_path / "plain", data)
    staging = Staging(root)
    helper = staging.write("host.mlir", (tmp_path / "plain" / "host.mlir").read_bytes())
    write_artifact(compiled, root, data, host_text=lambda: helper, staging=staging)
    assert _siblings(root) == []
    plain, staged = _check_manifest(tmp_path / "plain"), _check_manifest(root)
    assert plain == staged
    for rel in plain["files"]:
        assert (root / rel).read_bytes() == (tmp_path / "plain" / rel).read_bytes()


def test_the_source_written_by_a_helper_is_taken(small_cnn, tmp_path, monkeypatch):
    """`source_by_helper`: model.tflite comes from `extra` as `Written` (write_artifact does
    not write it, nor hash the source again); when `extra` lacks it, it is written here."""
    from qaccel.backends.vta import artifact

    compiled, data = small_cnn
    write_artifact(compiled, tmp_path / "plain", data)
    plain = _check_manifest(tmp_path / "plain")
    staging = Staging(tmp_path / "helped")
    helper = staging.write("model.tflite", data)
    writes = []
    write = artifact.Staging._write

    def counted(self, rel, blob, sha256):
        writes.append(rel)
        return write(self, rel, blob, sha256)

    monkeypatch.setattr(artifact.Staging, "_write", counted)
    write_artifact(compiled, tmp_path / "helped", data, staging=staging,
                   extra={"model.tflite": helper}, source_by_helper=True)  # fmt: skip
    assert "model.tflite" not in writes
    write_artifact(compiled, tmp_path / "not_helped", data, source_by_helper=True)
    assert "model.tflite" in writes
    for out in ("helped", "not_helped"):
        assert _check_manifest(tmp_path / out) == plain


def test_a_failed_write_leaves_nothing_beside_the_artifact(small_cnn, tmp_path):
    compiled, data = small_cnn
    root = tmp_path / "out"

    def broken():
        raise OSError("no space left")

    with pytest.raises(OSError, match="no space"):
        write_artifact(compiled, root, data, extra=broken)
    assert not root.exists() and _siblings(root) == []
    staging = Staging(root)  # the caller's folder: the caller discards it
    with pytest.raises(OSError, match="no space"):
        write_artifact(compiled, root, data, extra=broken, staging=staging)
    assert staging.folder.exists()
    staging.discard()
    assert not root.exists() and _siblings(root) == []


def test_forked_helpers_write_the_same_artifact(small_cnn, tmp_path, monkeypatch):
    """qaccel-compile's children write host.mlir and the LiteRT models into the folder; the
    artifact is byte for byte the one the process writes alone. Every child's answer is the
    one taken: none of their work is done again in the process (which would write the same
    bytes)."""
    args = [str(MODELS / "small_cnn.tflite"), "--quiet", "-o"]
    assert qaccel_compile.run([*args, str(tmp_path / "one")]) == 0
    if not hasattr(os, "fork"):
        pytest.skip("no os.fork")
    monkeypatch.setattr(background, "enabled", lambda: True)
    forked, computed_here = [], []
    result, compute = background.Pending.result, background.Pending._compute

    def taken(self):
        if self._pid is not None:
            forked.append(self._fn.__name__)
        return result(self)

    def counted(self):
        computed_here.append(self._fn.__name__)
        return compute(self)

    monkeypatch.setattr(background.Pending, "result", taken)
    monkeypatch.setattr(background.Pending, "_compute", counted)
    assert qaccel_compile.run([*args, str(tmp_path / "two")]) == 0
    assert len(forked) >= 2 and computed_here == []  # host.mlir, the LiteRT models
    one, two = _check_manifest(tmp_path / "one"), _check_manifest(tmp_path / "two")
    assert one == two
    for rel in one["files"]:
        assert (tmp_path / "one" / rel).read_bytes() == (tmp_path / "two" / rel).read_bytes()
    assert _siblings(tmp_path / "one") == _siblings(tmp_path / "two") == []


def test_npz_streamed_is_the_npz_made_whole():
    """The DRAM images' (and the run plan's) .npz, each member's .npy streamed into its
    deflate stream, has the bytes of the same .npz with each .npy made whole first."""
    from qaccel.backends.vta.artifact import _npz_bytes, _npz_bytes_whole

    rng = np.random.default_rng(3)
    image = np.zeros(3 << 20, np.uint8)
    image[1 << 20 :] = rng.integers(-8, 8, 2 << 20).astype(np.int8).view(np.uint8)
    cases = [
        {"dram": image},
        {"b": rng.integers(-5, 5, (300, 200)).astype(np.int8), "a": rng.standard_normal(999),
         "c": np.array([True, False]), "s": np.float32(3.5), "e": np.zeros((0, 3))},
        {"f": np.asfortranarray(rng.integers(0, 9, (5, 7))),
         "t": rng.integers(0, 3, (40, 50, 3)).transpose(2, 0, 1)},
    ]  # fmt: skip
    for arrays in cases:
        assert _npz_bytes(arrays) == _npz_bytes_whole(arrays)
        stored = _npz_bytes(arrays, zipfile.ZIP_STORED)
        assert stored == _npz_bytes_whole(arrays, zipfile.ZIP_STORED)
        with np.load(io.BytesIO(stored)) as z:
            assert sorted(z.files) == sorted(arrays)
            for key, array in arrays.items():
                assert np.array_equal(z[key], array)


def test_dram_images_are_stored_and_deflated_ones_still_load(small_cnn, tmp_path):
    """`dram.npz`'s member is stored, not deflated (the run plan's `runtime.npz` stays
    deflated); an artifact whose images are deflated (as written before) loads the same."""
    from qaccel.backends.vta.artifact import _npz_bytes, load_artifact

    compiled, data = small_cnn
    out = tmp_path / "out"
    write_artifact(compiled, out, data)
    manifest = _check_manifest(out)
    for name, fn in compiled.functions.items():
        with zipfile.ZipFile(out / name / "dram.npz") as z:
            assert [i.compress_type for i in z.infolist()] == [zipfile.ZIP_STORED]
    with zipfile.ZipFile(out / "runtime.npz") as z:
        assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED}
    for name, fn in compiled.functions.items():  # as an earlier qaccel wrote it
        rel = f"{name}/dram.npz"
        blob = _npz_bytes({"dram": fn.image})
        (out / rel).write_bytes(blob)
        manifest["files"][rel] = hashlib.sha256(blob).hexdigest()
    (out / "manifest.json").write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    loaded = load_artifact(out)
    for name, fn in compiled.functions.items():
        assert np.array_equal(loaded.functions[name].image, fn.image)


def test_images_written_ahead_into_the_folder_are_taken_or_written_again(small_cnn, tmp_path,
                                                                        monkeypatch):  # fmt: skip
    """`ImageAhead` given the artifact's `Staging` writes `dram.npz` into it on its thread:
    write_artifact takes that file when the image is the function's final one (making no
    .npz itself), writes it again when it is not, and removes one of a function the artifact
    does not have; the artifact is the same every way."""
    from qaccel.backends.vta import artifact
    from qaccel.backends.vta.artifact import ImageAhead

    compiled, data = small_cnn
    write_artifact(compiled, tmp_path / "plain", data)
    plain = _check_manifest(tmp_path / "plain")
    npz_bytes = artifact._npz_bytes

    def no_image(arrays, *compression):
        if "dram" in arrays:
            raise AssertionError("made again")
        return npz_bytes(arrays, *compression)

    name, fn = next(iter(compiled.functions.items()))
    staging = Staging(tmp_path / "same")
    same = {n: ImageAhead(f.image.copy(), staging, f"{n}/dram.npz")
            for n, f in compiled.functions.items()}  # fmt: skip
    same["vta_fn_99"] = ImageAhead(fn.image, staging, "vta_fn_99/dram.npz")  # no such function
    for ahead in same.values():
        assert isinstance(ahead.result(), Written)
    monkeypatch.setattr(artifact, "_npz_bytes", no_image)
    write_artifact(compiled, tmp_path / "same", data, staging=staging, images_ahead=same)
    monkeypatch.setattr(artifact, "_npz_bytes", npz_bytes)
    staging = Staging(tmp_path / "stale")
    changed = fn.image.copy()
    changed[-1] ^= 1
    stale = {name: ImageAhead(changed, staging, f"{name}/dram.npz")}
    write_artifact(compiled, tmp_path / "stale", data, staging=staging, images_ahead=stale)
    other = {name: ImageAhead(fn.image, Staging(tmp_path / "other"), f"{name}/dram.npz")}
    other[name].result()  # written into another folder: made again here
    write_artifact(compiled, tmp_path / "elsewhere", data, images_ahead=other)
    other[name].staging.discard()
    for out in ("same", "stale", "elsewhere"):
        assert _check_manifest(tmp_path / out) == plain
        for rel in plain["files"]:
            assert (tmp_path / out / rel).read_bytes() == (tmp_path / "plain" / rel).read_bytes()
        assert _siblings(tmp_path / out) == []
    assert not (tmp_path / "same" / "vta_fn_99").exists()


def test_an_image_compressed_ahead_is_taken_only_when_it_is_the_final_one(small_cnn, tmp_path,
                                                                          monkeypatch):  # fmt: skip
    """`ImageAhead`: write_artifact takes the dram.npz compressed ahead when its image is the
    function's final one (and compresses nothing then), and compresses the final image when
    it is not; the artifact is the same either way."""
    from qaccel.backends.vta import artifact
    from qaccel.backends.vta.artifact import ImageAhead

    compiled, data = small_cnn
    write_artifact(compiled, tmp_path / "plain", data)
    same = {name: ImageAhead(fn.image.copy()) for name, fn in compiled.functions.items()}
    stale = dict(same)
    name, fn = next(iter(compiled.functions.items()))
    changed = fn.image.copy()
    changed[-1] ^= 1
    stale[name] = ImageAhead(changed)
    for ahead in [*same.values(), *stale.values()]:
        ahead.result()  # compressed before the compressor is taken away
    npz_bytes = artifact._npz_bytes

    def no_image(arrays, *compression):  # the run plan's own .npz is still made here
        if "dram" in arrays:
            raise AssertionError("compressed again")
        return npz_bytes(arrays, *compression)

    monkeypatch.setattr(artifact, "_npz_bytes", no_image)
    write_artifact(compiled, tmp_path / "same", data, images_ahead=same)
    with pytest.raises(AssertionError, match="compressed again"):
        write_artifact(compiled, tmp_path / "refused", data, images_ahead=stale)
    monkeypatch.setattr(artifact, "_npz_bytes", npz_bytes)
    write_artifact(compiled, tmp_path / "stale", data, images_ahead=stale)
    plain = _check_manifest(tmp_path / "plain")
    for out in ("same", "stale"):
        assert _check_manifest(tmp_path / out) == plain
        for rel in plain["files"]:
            assert (tmp_path / out / rel).read_bytes() == (tmp_path / "plain" / rel).read_bytes()


def test_the_last_image_given_ahead_is_the_final_one(monkeypatch):
    """compile_module's `image_ready` gets each function's image once its layout is known;
    when the emitter then refuses a layer, the layout is made again and given again, and
    the last image given is the function's final one."""
    from qaccel.backends.vta import codegen
    from qaccel.lowering.vta.geometry import LayerError

    given: list[tuple[str, np.ndarray]] = []

    def ready(name, image):
        given.append((name, image.copy()))

    compiled, _ = qaccel_compile.compile_model(MODELS / "small_cnn.tflite", image_ready=ready)
    assert [n for n, _ in given] == list(compiled.functions)
    for name, image in given:
        assert np.array_equal(image, compiled.functions[name].image)

    run = codegen._LayerJob.run
    refused: list[int] = []

    def refuse_once(job):  # the second layer's stream is refused the first time
        if job.index == 1 and not refused:
            refused.append(job.index)
            return LayerError("refused for the test"), None
        return run(job)

    monkeypatch.setattr(codegen._LayerJob, "run", refuse_once)
    given.clear()
    compiled, _ = qaccel_compile.compile_model(MODELS / "small_cnn.tflite", image_ready=ready)
    names = [n for n, _ in given]
    assert refused and len(given) == len(compiled.functions) + 1
    twice = names[0]  # the first function's second layer was refused: its layout made again
    assert names[:2] == [twice, twice] and set(names) == set(compiled.functions)
    assert not np.array_equal(given[0][1], compiled.functions[twice].image)
    last = {n: image for n, image in given}
    for name, fn in compiled.functions.items():
        assert np.array_equal(last[name], fn.image)


def test_a_compile_that_fails_leaves_no_image_written_beside_it(tmp_path, monkeypatch):
    """A DRAM image written ahead on a thread is waited for before the failed compile's
    folder is discarded: nothing is written beside the artifact afterwards."""
    from qaccel.backends.vta import artifact, codegen

    if not hasattr(os, "fork"):
        pytest.skip("no os.fork")
    monkeypatch.setattr(background, "enabled", lambda: True)
    made, slow = [], artifact._image_npz

    def late(image):
        made.append(1)
        time.sleep(0.3)  # still writing when the compile has failed
        return slow(image)

    def broken(*args, **kwargs):
        raise OSError("emission failed")

    monkeypatch.setattr(artifact, "_image_npz", late)
    monkeypatch.setattr(codegen, "_run_emitters", broken)
    out = tmp_path / "out"
    with pytest.raises(OSError, match="emission failed"):
        qaccel_compile.run([str(MODELS / "small_cnn.tflite"), "--quiet", "-o", str(out)])
    assert made  # an image was being written ahead
    time.sleep(0.5)
    assert not out.exists() and _siblings(out) == []


def test_an_image_laid_out_again_is_not_overwritten_by_the_first(tmp_path, monkeypatch):
    """When the emitter refuses a layer after a function's image was given ahead, the image
    is given again: the first one's thread is done before the second starts, so the
    artifact's dram.npz (and its digest) is the final image, however slow the first is."""
    from qaccel.backends.vta import artifact, codegen
    from qaccel.lowering.vta.geometry import LayerError

    if not hasattr(os, "fork"):
        pytest.skip("no os.fork")
    monkeypatch.setattr(background, "enabled", lambda: True)
    calls, slow = [], artifact._image_npz

    def first_late(image):
        calls.append(image.copy())
        if len(calls) == 1:
            time.sleep(0.3)
        return slow(image)

    run, refused = codegen._LayerJob.run, []

    def refuse_once(job):
        if job.index == 1 and not refused:
            refused.append(job.index)
            return LayerError("refused for the test"), None
        return run(job)

    monkeypatch.setattr(artifact, "_image_npz", first_late)
    monkeypatch.setattr(codegen._LayerJob, "run", refuse_once)
    out = tmp_path / "out"
    assert qaccel_compile.run([str(MODELS / "small_cnn.tflite"), "--quiet", "-o", str(out)]) == 0
    # The first function's image given twice (its second layer refused), then the others'.
    assert refused and len(calls) == len(compiled_functions(out)) + 1
    assert not np.array_equal(calls[0], calls[1])
    time.sleep(0.4)
    manifest = _check_manifest(out)  # every file's digest is its bytes'
    first = manifest["functions"][compiled_functions(out)[0]]
    with np.load(out / first["image"]) as npz:
        assert np.array_equal(npz["dram"], calls[1])  # the image laid out again
    assert _siblings(out) == []  # nor was the first written after the artifact was placed


def compiled_functions(out: Path) -> list[str]:
    """The artifact's accelerator functions by name (vta_fn_0, compiled first, first)."""
    return list(json.loads((out / "manifest.json").read_text())["functions"])
