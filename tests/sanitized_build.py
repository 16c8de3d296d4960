"""Sanitizer builds for the tests, made once per content and kept in qaccel's C cache.

    lib = sanitized_build.cached(tmp_path / "libx.so", lambda out: compile_into(out),
                                 label="x", inputs=[SOURCE_DIR, other_file], flags=COMMAND)

Building the C machine with -fsanitize=address,undefined takes about 9 CPU seconds, and several
test files build it (alone, inside the program runner, the LiteRT delegate and dispatch
library, the fuzz driver), each with its own flags. A build is a function of its inputs: the
key is SHA-256 over the compiler's identity, the flags (every word that shapes the command) and
the names and contents of the input files (a folder stands for every `.c`, `.cc` and `.h` in
it), paths inside the checkout taken relative to it. A build with that key is made once, under
a file lock (pytest-xdist's workers may ask at the same time), in `cbuild.cache_root()`
(`QACCEL_CACHE_DIR`, where the C machine and the C driver's sanitizer objects are kept too),
and copied to where the test wants it. A changed source, header, flag or compiler is another
key: the build is made again, and with it every warning `-Werror` turns into a failure. A
failed build is not kept: the caller's exception goes through, as without the cache.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from qaccel.targets import cbuild

KEEP = 4
"""Builds kept per label (the most recently used): other keys are older sources."""

_SOURCE_SUFFIXES = (".c", ".cc", ".h")


def _compiler_identity(cc: str) -> bytes:
    try:
        done = subprocess.run([cc, "--version"], capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return cc.encode()  # the build itself will say what is wrong
    path = shutil.which(cc) or cc
    return path.encode() + b"\0" + done.stdout


def _files(inputs: Iterable[Path]) -> list[Path]:
    files: list[Path] = []
    for p in map(Path, inputs):
        if p.is_dir():
            files += sorted(f for f in p.iterdir() if f.suffix in _SOURCE_SUFFIXES and f.is_file())
        else:
            files.append(p)
    return files


ROOT = str(Path(cbuild.__file__).resolve().parents[1])
"""qaccel's checkout: paths inside it are keyed relative to it, so that another clone of the
same sources finds the same builds."""


def _portable(text: str) -> str:
    return text.replace(ROOT, "<qaccel>")


def key(inputs: Iterable[Path], flags: Sequence[str], cc: str = "gcc") -> str:
    """The build's content key: compiler identity, flags, input names and contents."""
    h = hashlib.sha256(_compiler_identity(cc) + b"\0")
    h.update("\0".join(map(_portable, flags)).encode() + b"\0\0")
    for f in _files(inputs):
        h.update(_portable(str(f.resolve())).encode() + b"\0" + f.read_bytes() + b"\0")
    return h.hexdigest()[:24]


def cached(out: Path, build: Callable[[Path], object], *, label: str, inputs: Iterable[Path],
           flags: Sequence[str], cc: str = "gcc") -> Path:  # fmt: skip
    """`out`, a copy of what `build(path)` writes at `path` for these inputs and flags, built
    at most once per content key (see the module docstring); raises what `build` raises."""
    out = Path(out)
    root = cbuild.cache_root()
    folder = root / f"sanitized-{label}-{key(inputs, flags, cc)}"
    kept = folder / out.name
    if not kept.is_file():
        root.mkdir(parents=True, exist_ok=True)
        with open(root / f".sanitized-{label}.lock", "a") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            if not kept.is_file():
                with tempfile.TemporaryDirectory(dir=root, prefix=".sanitized-") as tmp:
                    built = Path(tmp) / out.name
                    build(built)
                    folder.mkdir(exist_ok=True)
                    os.replace(built, kept)  # atomic: a reader never sees half a file
                _forget_old(root, label, keep=folder)
    os.utime(folder)  # most recently used
    out.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(kept, out)
    return out


def _forget_old(root: Path, label: str, keep: Path) -> None:
    """Remove all but the `KEEP` most recently used builds of `label`."""
    folders = sorted((p for p in root.glob(f"sanitized-{label}-*") if p != keep),
                     key=lambda p: p.stat().st_mtime, reverse=True)  # fmt: skip
    for old in folders[KEEP - 1 :]:
        shutil.rmtree(old, ignore_errors=True)
