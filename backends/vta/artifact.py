"""The artifact `qaccel-compile` writes: write it, check and load it back.

    write_artifact(compiled, outdir, source)     # host.mlir, vta_fn_k/*, driver/, report.json
    compiled = load_artifact(outdir, ctx)        # for `run_compiled` (backends/vta/runtime.py)

**Files.** `host.mlir` (the whole module as text: host functions and accelerator functions,
whose bodies show every formed layer as a `vta.layer` op with its `#vta.<kind>_schedule`; the
runtime interprets the ops outside the layers); for every accelerator function
`vta_fn_k/dram.npz` (`dram`: the function's DRAM image, constants in place and the arena zero;
its member stored, not deflated: `IMAGE_COMPRESSION`)
and per layer `vta_fn_k/layer_i.bin` (16-byte instructions) and `vta_fn_k/layer_i.uops.bin`
(the micro-op image, little-endian uint32):
`qaccel-sim vta_fn_0/layer_0.bin --dram vta_fn_0/dram.npz --uops vta_fn_0/layer_0.uops.bin`
runs one layer; `vta_fn_k/constants.bin`: the image's constants alone (the run plan's). The C
driver (`backends/vta/cdriver.py`): `driver/qaccel_program.h`, `driver/qaccel_vta.h`,
`driver/model.h`, `driver/model.c` and each function's program `driver/vta_fn_k.qprog` (the
run plan runs it too). Also
`model.tflite` (the source, for `--compare-litert`), `report.json`, and `manifest.json`
(versions, hardware config, every layer's body position and DRAM offsets, the arena's slots,
SHA-256 of every file). `runtime.json` and `runtime.npz`: the run plan
(`backends/vta/run_plan.py`), with which `qaccel-run OUTDIR` runs the model without parsing
`host.mlir` (absent when the module holds something the plan cannot express). `extra` files
(qaccel-compile's LiteRT models) are written and hashed like the others. No timestamps, sorted
keys, npz members with a fixed date: compiling the same model twice gives identical bytes.

**Written whole or not at all.** The files go into a fresh folder beside `outdir`, which is
renamed into place only when every file is written: an interrupted, failed or concurrent
write never leaves a folder that runs, and no file of an earlier artifact in `outdir`
survives (the earlier folder is replaced as a whole). An existing `outdir` must be empty or an
artifact: a folder holding anything else is refused, never replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import secrets
import shutil
import threading
import zipfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
from qaccel.backends.vta.artifact_files import is_artifact, read_artifact_file
from qaccel.backends.vta.cdriver import driver_files, function_programs
from qaccel.kernels.memory import MemoryBudgetError, check_npz
from qaccel.backends.vta.compiled import (
    ArenaSlot,
    CompiledFunction,
    CompiledLayer,
    CompiledModel,
    CompileError,
    Fallback,
)
from qaccel.targets.vta.config import HardwareConfig
from xdsl.dialects.builtin import ModuleOp

ARTIFACT_FORMAT = 4
"""4: the run plan, `runtime.json` + `runtime.npz` (every other file as in 3; `load_artifact`
reads 3 too; `dram.npz`'s member is stored since a later 4, deflated before: the same .npz to
every reader, so the number stayed). 3: layers are `vta.layer` ops of host.mlir (a layer's
`ops`, `anchor` and `widened` are the position of its `vta.layer`; `widened` names its result
1). 2: layers were groups of ops found by pattern matching (positions of every op of the
group)."""
_READS = (3, ARTIFACT_FORMAT)  # format 4 only adds files `load_artifact` does not need
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)

def _npz_bytes(arrays: dict[str, np.ndarray],
               compression: int = zipfile.ZIP_DEFLATED) -> bytes:  # fmt: skip
    """An .npz that `np.load` reads, with fixed member dates (np.savez stamps the time), its
    members deflated (`compression`: `zipfile.ZIP_STORED` stores them as they are, as
    `np.savez` does; the DRAM images' `IMAGE_COMPRESSION`). Each member's .npy is written
    straight into its member stream, never held whole (the bytes of `_npz_bytes_whole`:
    deflate's output does not depend on how its input comes in pieces, and `writestr` is
    this same member stream given the .npy in one piece)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for key in sorted(arrays):
            array = np.asarray(arrays[key])
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_DATE)
            info.compress_type = compression
            if array.nbytes >= _STREAM_BELOW:  # near ZIP64's sizes: exactly as writestr
                _write_whole(z, info, array)
                continue
            info.file_size = array.nbytes  # (read only for the ZIP64 decision, as writestr's)
            with z.open(info, "w") as member:
                np.lib.format.write_array(member, array, allow_pickle=False)
    return buf.getvalue()


IMAGE_COMPRESSION = zipfile.ZIP_STORED
"""How `dram.npz`'s member is kept: stored, not deflated. A DRAM image is mostly int8
weights, which deflate shrinks little (MobileNetV2's 6.4 MB image to 3.7 MB, most of that
its arena's zeros), at some 0.13 s of CPU per compile and an inflating at every load; the
run plan reads `constants.bin` raw anyway. Artifacts written before hold it deflated, which
every reader (`np.load`, `load_artifact`, `qaccel-sim --dram`) takes as well."""

_STREAM_BELOW = 1 << 30
"""Members of fewer bytes are streamed (ZIP64 is decided for members of about 2 GB)."""


def _write_whole(z: zipfile.ZipFile, info: zipfile.ZipInfo, array: np.ndarray) -> None:
    member = io.BytesIO()
    np.lib.format.write_array(member, array, allow_pickle=False)
    z.writestr(info, member.getvalue())


def _npz_bytes_whole(arrays: dict[str, np.ndarray],
                     compression: int = zipfile.ZIP_DEFLATED) -> bytes:  # fmt: skip
    """`_npz_bytes` with each member's .npy made whole first (the reference)."""
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression) as z:
        for key in sorted(arrays):
            info = zipfile.ZipInfo(f"{key}.npy", date_time=_ZIP_DATE)
            info.compress_type = compression
            _write_whole(z, info, np.asarray(arrays[key]))
    return buf.getvalue()


def _image_npz(image: np.ndarray) -> bytes:
    """A function's `dram.npz`: its DRAM image as the member `dram`, stored."""
    return _npz_bytes({"dram": image}, IMAGE_COMPRESSION)


def _on_thread(fn: Callable[[], Any]) -> Callable[[], Any]:
    """`fn()` started on a thread; the function returned waits for it and gives its value
    (or raises what it raised)."""
    out: list = []

    def run() -> None:
        try:
            out.append((True, fn()))
        except BaseException as e:  # noqa: BLE001  raised again in the caller
            out.append((False, e))

    thread = threading.Thread(target=run, name="qaccel-artifact", daemon=True)
    thread.start()

    def result() -> Any:
        thread.join()
        ok, value = out[0]
        if not ok:
            raise value
        return value

    return result


class ImageAhead:
    """A DRAM image's `dram.npz` made on a thread from now on, for `write_artifact`
    (`compile_module`'s `image_ready`: a function's layout is known before its streams are
    emitted), and written as `rel` into `staging` when given (during the emission, its
    writing and hashing off the artifact's tail). The image must not change afterwards.
    `result()`: the file's bytes, or its `Written` digest when written."""

    def __init__(self, image: np.ndarray, staging: Staging | None = None,
                 rel: str | None = None) -> None:  # fmt: skip
        self._image = image
        self.staging = staging if rel is not None else None

        def made() -> bytes | Written:
            blob = _image_npz(image)
            if self.staging is None:
                return blob
            return self.staging.write(rel, blob)  # type: ignore[arg-type]

        self.result = _on_thread(made)

    def image_is(self, image: np.ndarray) -> bool:
        """Whether `image` is the one made into `dram.npz` (the emitter may have refused a layer
        after the image was given, and laid the constants out again)."""
        return self._image is image or (self._image.shape == image.shape
                                         and bool(np.array_equal(self._image, image)))


def module_text(module: ModuleOp) -> str:
    from qaccel.dialects.printing import op_text  # xDSL's text, printed faster

    return op_text(module)


def module_bytes(module: ModuleOp) -> bytes:
    """`module_text(module).encode()` (host.mlir's bytes), made faster."""
    from qaccel.dialects.printing import op_bytes

    return op_bytes(module)


def module_pieces(module: ModuleOp) -> Iterator[bytes]:
    """`module_bytes(module)` as pieces made as they are asked for (`Staging.write` writes
    and hashes each as it comes, never holding the whole text)."""
    from qaccel.dialects.printing import op_pieces

    return op_pieces(module)


def _versions() -> dict:
    # importlib.metadata's answers, read without importing it (and the email package) where
    # the environment allows: ~20 ms of every compile (kernels/entry_points.py).
    from qaccel.kernels.entry_points import distribution_version

    out = {}
    for dist in ("qaccel", "xdsl", "numpy"):
        try:
            out[dist] = distribution_version(dist)
        except ModuleNotFoundError:  # importlib.metadata.PackageNotFoundError, a subclass
            out[dist] = "unknown"
    return out


def _dumps(obj: Any) -> str:
    return json.dumps(obj, indent=1, sort_keys=True) + "\n"


def check_runnable(module: ModuleOp) -> None:
    """Refuse (CompileError, one line) a module its runtime could not run: an op with no
    CPU kernel (or none for its tensor type), no semantics or no body to call, or one LiteRT's
    reference kernels refuse at Prepare. The check is the runtime's own (`prepare_module`), so
    `qaccel-run` and `qaccel-opt --verify-semantics` refuse the same module with the same
    line. `write_artifact` runs it before writing anything, and `qaccel-compile` as soon as
    the pipeline ran, before the compile's work."""
    from qaccel.interpreter.interpreter import ExecutionError, prepare_module
    from qaccel.kernels.registry import Refusal

    try:
        prepare_module(module)
    except ExecutionError as e:
        raise CompileError(str(e)) from None
    except Refusal as e:
        raise CompileError(f"LiteRT's reference kernels refuse this model: {e}") from None


def check_artifact_destination(outdir: str | Path) -> None:
    """Raise CompileError when `outdir` exists and is neither empty nor an artifact (writing
    the artifact would replace it)."""
    root = Path(outdir)
    if root.is_dir() and not (root / "manifest.json").is_file() and any(root.iterdir()):
        raise CompileError(f"'{root}': a folder that holds files and is not a qaccel artifact "
                           "(give a new or empty folder)")  # fmt: skip


def write_artifact(
    compiled: CompiledModel, outdir: str | Path, source: bytes | None = None,
    extra: dict[str, bytes | Written] | Callable[[], dict[str, bytes | Written]] | None = None,
    host_text: str | bytes | Written | Callable[[], str | bytes | Written] | None = None,
    staging: Staging | None = None,
    images_ahead: dict[str, ImageAhead] | None = None,
    source_by_helper: bool = False,
) -> None:
    """Write the artifact (see the module docstring) as the folder `outdir`, whole; a model
    that could not run is refused first (`check_runnable`), so no such artifact is ever
    written. `host_text`: `module_text(compiled.module)` when the caller has it already, or
    a function giving it. `extra` may be a function giving the files. Both functions are
    called once the artifact's own files are made (`qaccel-compile` prints the host IR and
    makes its LiteRT models meanwhile on the second core). `staging`: the `Staging` folder
    for `outdir` the caller made (and removes should this raise), into which helper processes
    wrote files already: a file given as `Written` (host.mlir, a file of `extra`) is one of
    those, with its SHA-256, and must be a file the artifact does not make itself.
    `images_ahead`: the functions' `dram.npz` begun ahead (`ImageAhead`), by function name
    (written into `staging` already when made for it). `source_by_helper`: `model.tflite`
    (`source`'s bytes) is written by a helper, and given by `extra` as `Written`."""
    # The DRAM images' `dram.npz` are made on a thread (their CRC and copies let go of the
    # GIL) while the other files are made here (they are written only once the checks below
    # passed). An image made ahead of time (`ImageAhead`) is taken when it is the
    # function's final image.
    ahead = dict(images_ahead or {})
    given = staging  # the folder the images made ahead may have been written into

    def image_files() -> dict[str, bytes | Written]:
        out: dict[str, bytes | Written] = {}
        taken = set()
        for name, fn in compiled.functions.items():
            early = ahead.get(name)
            if early is not None and early.image_is(fn.image):
                made = early.result()
                if not isinstance(made, Written) or early.staging is given:
                    out[f"{name}/dram.npz"] = made
                    taken.add(name)
                    continue
            out[f"{name}/dram.npz"] = _image_npz(fn.image)
        for name, early in ahead.items():  # one not taken: its file written again, or none
            if name not in taken and early.staging is not None and early.staging is given:
                with contextlib.suppress(Exception):
                    early.result()  # (ended before the file is written again)
                if f"{name}/dram.npz" not in out:
                    given.remove(f"{name}/dram.npz")
        return out

    images = _on_thread(image_files)
    check_runnable(compiled.module)
    root = Path(outdir)
    check_artifact_destination(root)
    files: dict[str, bytes] = {}
    functions = {}
    for name, fn in compiled.functions.items():
        entries = []
        for lay in fn.layers:
            base = f"{name}/layer_{lay.index}"
            files[f"{base}.bin"] = np.asarray(lay.words).astype("<u8").tobytes()
            files[f"{base}.uops.bin"] = np.asarray(lay.uops).astype("<u4").tobytes()
            entries.append({
                "index": lay.index, "ops": lay.ops, "anchor": lay.anchor, "inputs": lay.inputs,
                "output": lay.output, "widened": lay.widened, "offset": lay.offset,
                "description": lay.description, "program": f"{base}.bin",
                "uops": f"{base}.uops.bin",
            })  # fmt: skip
        functions[name] = {
            "image": f"{name}/dram.npz", "arena_bytes": fn.arena_nbytes,
            "slots": [s.__dict__ for s in fn.slots], "layers": entries,
        }  # fmt: skip
    programs = function_programs(compiled)
    files.update(driver_files(compiled, programs))
    for name, fn in compiled.functions.items():  # the run plan's DRAM image, uncompressed
        files[f"{name}/constants.bin"] = fn.image[fn.arena_nbytes :].tobytes()
    if source is not None and not source_by_helper:
        files["model.tflite"] = source  # for `qaccel-run OUTDIR --compare-litert`
    files["report.json"] = _dumps(compiled.report).encode()
    files.update(_run_plan_files(compiled, programs))
    # These files are hashed and written into the new folder before the host IR's text and
    # `extra` are asked for: `qaccel-compile` makes those on the second core meanwhile.
    own = staging is None
    if staging is None:
        staging = Staging(root)
    try:
        for rel, data in files.items():
            staging.write(rel, data)
        for rel, data in images().items():  # (a file written ahead: its digest, written)
            if not isinstance(data, Written):
                staging.write(rel, data)
        if host_text is None:
            host_text = module_pieces(compiled.module)
        host = host_text() if callable(host_text) else host_text
        later: dict[str, bytes | str | Iterator[bytes] | Written] = {"host.mlir": host}
        later.update((extra() if callable(extra) else extra) or {})
        for rel, data in later.items():  # a file of `extra` replaces one written above
            if isinstance(data, Written):
                staging.digests[rel] = data.sha256
            else:
                staging.write(rel, data.encode() if isinstance(data, str) else data)
        # Each file hashed once: the source is model.tflite (unless `extra` replaced it).
        source_digest = None
        if source is not None:
            by_helper = source_by_helper and isinstance(later.get("model.tflite"), Written)
            if source_by_helper and not by_helper:  # (never seen) the helper did not write it
                staging.write("model.tflite", source)
            source_digest = (staging.digests["model.tflite"]
                             if "model.tflite" not in later or by_helper
                             else hashlib.sha256(source).hexdigest())  # fmt: skip
        manifest = {
            "format": ARTIFACT_FORMAT, "versions": _versions(),
            "config": compiled.config.to_dict(), "functions": functions,
            "fallbacks": [fb.__dict__ for fb in compiled.fallbacks],
            "source_sha256": source_digest,
            "files": dict(sorted(staging.digests.items())),
        }  # fmt: skip
        (staging.folder / "manifest.json").write_bytes(_dumps(manifest).encode())
        _put_in_place(staging.folder, root)
        staging.placed = True
    except BaseException:
        if own:
            staging.discard()
        raise


@dataclass(frozen=True)
class Written:
    """A file of the artifact a helper process wrote into its `Staging` folder already."""

    sha256: str


class Staging:
    """The fresh folder beside `outdir` that an artifact is written into (`write_artifact`
    renames it into place once every file is written). `qaccel-compile`'s helper processes
    write their files (host.mlir, the LiteRT models) into it themselves and hand back only
    the files' `Written` digests; whoever made it calls `discard()` when the artifact is not
    written (nothing once it is in place).

    `write(rel, data)` writes each file once and hashes it once: a file whose bytes equal
    those of a large file this process wrote into the folder before is a hard link to it,
    and takes its digest (a copy where the file system has no links). A forked helper sees
    the files written before it was forked."""

    def __init__(self, outdir: str | Path) -> None:
        root = Path(outdir)
        root.parent.mkdir(parents=True, exist_ok=True)
        self.folder = _fresh_sibling(root, "partial")
        self.digests: dict[str, str] = {}
        self.placed = False
        self._root = str(self.folder)
        self._dirs = {self._root}
        self._large: dict[int, list[tuple[bytes, str]]] = {}  # size -> (bytes, rel)
        self._owner = os.getpid()
        self._lock = threading.Lock()  # (`ImageAhead`'s threads write too)

    def write(self, rel: str, data: bytes | Iterable, sha256: str | None = None) -> Written:
        """Write (or link) the file `rel` with `data`; its digest, also in `digests`.
        `sha256`: the digest of `data` when the caller has it already. `data` may be a list
        (or an iterator) of bytes-like pieces, the file their concatenation: written and
        hashed piece by piece, never joined (and never linked)."""
        with self._lock:
            return self._write(rel, data, sha256)

    def remove(self, rel: str) -> None:
        """The file `rel` written before removed (it is no file of the artifact)."""
        with self._lock:
            if self.digests.pop(rel, None) is not None:
                os.unlink(f"{self._root}/{rel}")
                for same in self._large.values():
                    same[:] = [(b, r) for b, r in same if r != rel]
                parent = os.path.dirname(f"{self._root}/{rel}")
                if parent != self._root:  # its folder too, when that holds nothing else
                    with contextlib.suppress(OSError):
                        os.rmdir(parent)
                        self._dirs.discard(parent)

    def _write(self, rel: str, data: bytes | Iterable, sha256: str | None) -> Written:
        path = f"{self._root}/{rel}"  # (strings: some 0.1 ms a file less than Paths)
        if rel in self.digests:  # replaced: never through a link another file shares
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
            for same in self._large.values():
                same[:] = [(b, r) for b, r in same if r != rel]
        else:
            parent = os.path.dirname(path)
            if parent not in self._dirs:
                os.makedirs(parent, exist_ok=True)
                self._dirs.add(parent)
        if not isinstance(data, bytes | bytearray | memoryview):
            hashed = None if sha256 else hashlib.sha256()
            with open(path, "wb") as out:
                for piece in data:
                    out.write(piece)
                    if hashed is not None:
                        hashed.update(piece)
            digest = sha256 or hashed.hexdigest()  # type: ignore[union-attr]
        elif len(data) < _LINK_ABOVE:
            _write_file(path, data)
            digest = sha256 or hashlib.sha256(data).hexdigest()
        else:
            same = self._large.setdefault(len(data), [])
            earlier = next((r for b, r in same if b is data or b == data), None)
            if earlier is None:
                _write_file(path, data)
                digest = sha256 or hashlib.sha256(data).hexdigest()
                same.append((data, rel))
            else:
                _link(f"{self._root}/{earlier}", path)
                digest = self.digests[earlier]
        self.digests[rel] = digest
        return Written(digest)

    def discard(self) -> None:
        """Remove the folder (unless the artifact is in place)."""
        if not self.placed:
            shutil.rmtree(self.folder, ignore_errors=True)


_LINK_ABOVE = 1 << 16
"""Files of at least this many bytes are compared with the earlier ones, and linked."""


def _write_file(path: str, data: bytes | bytearray | memoryview) -> None:
    """`Path(path).write_bytes(data)` without its buffered file object."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_BINARY", 0), 0o666)
    try:
        view = memoryview(data).cast("B")
        while view:
            view = view[os.write(fd, view) :]
    finally:
        os.close(fd)


def _link(existing: str | Path, path: str | Path) -> None:
    """`path` a hard link to `existing`, or a copy of it where links are not possible."""
    try:
        os.link(existing, path)
    except OSError:
        shutil.copyfile(existing, path)


def _fresh_sibling(root: Path, kind: str) -> Path:
    """A new empty folder beside `root` (mode as the umask says, like the artifact's own)."""
    while True:
        path = root.parent / f".{root.name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"
        try:
            path.mkdir()
            return path
        except FileExistsError:
            continue


def _put_in_place(partial: Path, root: Path) -> None:
    """The written folder `partial` renamed to `root`, replacing an earlier artifact there
    as a whole (the caller removes `partial` when this raises)."""
    try:
        os.rename(partial, root)  # absent or empty: one step
        return
    except OSError:
        pass
    check_artifact_destination(root)
    old = _fresh_sibling(root, "old")
    os.rename(root, old / "artifact")
    os.rename(partial, root)
    shutil.rmtree(old, ignore_errors=True)


def _run_plan_files(compiled: CompiledModel, programs=None) -> dict[str, bytes]:
    from qaccel.backends.vta.plan_compile import build_run_plan
    from qaccel.backends.vta.run_plan import PLAN_ARRAYS, PLAN_JSON

    plan = build_run_plan(compiled, programs)
    if plan is None:
        return {}
    meta, arrays = plan
    return {PLAN_JSON: _dumps(meta).encode(), PLAN_ARRAYS: _npz_bytes(arrays)}


def load_artifact(outdir: str | Path, ctx=None) -> CompiledModel:
    """Read an artifact back (checking the files' hashes) for `run_compiled`."""
    from qaccel.dialects import qaccel_context
    from xdsl.parser import Parser

    root = Path(outdir)
    try:
        manifest = json.loads(read_artifact_file(root, "manifest.json", CompileError))
    except (CompileError, ValueError) as e:
        raise CompileError(f"'{root}': not a qaccel-compile artifact ({e})") from None
    if manifest.get("format") not in _READS:
        raise CompileError(f"'{root}': artifact format {manifest.get('format')}, "
                           f"expected {ARTIFACT_FORMAT} (compile the model again)")  # fmt: skip
    data = {}
    for rel, digest in manifest["files"].items():
        blob = read_artifact_file(root, rel, CompileError)
        if hashlib.sha256(blob).hexdigest() != digest:
            raise CompileError(f"'{root / rel}' does not match the manifest's hash")
        data[rel] = blob
    module = Parser(ctx or qaccel_context(), data["host.mlir"].decode(), str(root / "host.mlir"))
    module = module.parse_module()
    config = HardwareConfig.from_dict(manifest["config"])
    functions = {}
    for name, entry in manifest["functions"].items():
        layers = []
        for e in entry["layers"]:
            layers.append(CompiledLayer(
                function=name, index=e["index"], ops=e["ops"], anchor=e["anchor"],
                inputs=e["inputs"], output=e["output"], widened=e["widened"], offset=e["offset"],
                program=None, words=np.frombuffer(data[e["program"]], "<u8").reshape(-1, 2),
                uops=np.frombuffer(data[e["uops"]], "<u4"), description=e["description"],
            ))  # fmt: skip
        try:  # what the image's arrays declare, from their headers, before inflating them
            check_npz(data[entry["image"]], f"'{root / entry['image']}': the DRAM image")
        except (ValueError, MemoryBudgetError) as e:
            raise CompileError(str(e) if isinstance(e, MemoryBudgetError)
                               else f"'{root / entry['image']}': {e}") from None  # fmt: skip
        with np.load(io.BytesIO(data[entry["image"]])) as z:
            image = z["dram"].copy()
        slots = [ArenaSlot(**s) for s in entry["slots"]]
        functions[name] = CompiledFunction(name, layers, slots, entry["arena_bytes"], image)
    fallbacks = [Fallback(**fb) for fb in manifest["fallbacks"]]
    report = json.loads(data["report.json"])
    return CompiledModel(module, config, functions, fallbacks, report)


__all__ = ["ARTIFACT_FORMAT", "Staging", "Written", "check_runnable", "is_artifact", "load_artifact",
           "module_bytes", "module_pieces", "module_text", "write_artifact"]
