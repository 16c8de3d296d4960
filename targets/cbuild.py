"""How qaccel builds every C library: one set of flags, one source digest, one cache.

    digest = source_hash(files)                    # 16 hex digits over names and contents
    build_shared(out, files, include_dirs=[...], defines={"VTA_SOURCE_HASH": digest})
    folder = cache_root() / f"vta-machine-{digest}"

Every library is C99 with every warning an error (`CFLAGS`), position-independent and shared
(`SHARED_FLAGS`): the C machine (`targets/vta/cmachine.py`), the LiteRT kernel and dispatch
libraries (`backends/litert/runtime.py`), the C driver (`backends/vta/cdriver_runtime.py`)
and `setup.py`'s extensions, which load this file by path (it needs only the standard library)
so that `pip install` compiles with the same flags and stamps the same digest. A library is
compiled to a temporary name and renamed into place, so a concurrent first use never loads a
half-written file. `$CC` names the compiler (default `cc`); `$QACCEL_CACHE_DIR` the cache
(default `$XDG_CACHE_HOME/qaccel`, else `~/.cache/qaccel`).
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

CFLAGS = ("-std=c99", "-O2", "-Wall", "-Wextra", "-Werror")
"""Every C file qaccel compiles, whatever the library."""
SHARED_FLAGS = ("-fPIC", "-shared")


def compiler() -> str:
    return os.environ.get("CC") or "cc"


def cache_root() -> Path:
    """The per-user directory of libraries built on first use."""
    root = os.environ.get("QACCEL_CACHE_DIR")
    if root:
        return Path(root)
    base = os.environ.get("XDG_CACHE_HOME")
    return (Path(base) if base else Path.home() / ".cache") / "qaccel"


def source_hash(files: Iterable[Path]) -> str:
    """16 hex digits of SHA-256 over each file's name and contents, in order: a library
    stamped with it was built from exactly these files."""
    h = hashlib.sha256()
    for path in files:
        path = Path(path)
        h.update(path.name.encode() + b"\0" + path.read_bytes())
    return h.hexdigest()[:16]


def build_shared(
    out: Path,
    files: Sequence[Path],
    include_dirs: Sequence[Path] = (),
    defines: Mapping[str, str] | None = None,
    extra_flags: Sequence[str] = (),
    libraries: Sequence[str] = (),
    cc: str | None = None,
) -> Path:
    """Compile the `.c` files of `files` into the shared library `out` (headers in `files` are
    only hashed by callers); raises CalledProcessError (its stderr the compiler's) or OSError."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.name}.{os.getpid()}.tmp")
    cmd = [cc or compiler(), *CFLAGS, *SHARED_FLAGS, *extra_flags,
           *(f"-I{d}" for d in include_dirs),
           *(f'-D{k}="{v}"' for k, v in (defines or {}).items()),
           *(str(p) for p in files if Path(p).suffix == ".c"), "-o", str(tmp),
           *(f"-l{lib}" for lib in libraries)]  # fmt: skip
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    os.replace(tmp, out)  # atomic: concurrent first uses never load a half-written file
    return out


def is_stamped(path: Path, symbol: str, digest: str) -> bool:
    """Whether the library at `path` loads and its `const char *symbol(void)` returns `digest`
    (it was built from the sources `digest` names)."""
    try:
        fn = getattr(ctypes.CDLL(str(path)), symbol)
        fn.restype = ctypes.c_char_p
        return fn().decode() == digest
    except (OSError, AttributeError):
        return False


def build_once(path: Path, build: Callable[[Path], object]) -> str | None:
    """`build(path)` unless `path` exists; None, or the compiler's last line when it failed
    (for a one-line error naming the library)."""
    if Path(path).is_file():
        return None
    try:
        build(Path(path))
    except (OSError, subprocess.CalledProcessError) as e:
        lines = (getattr(e, "stderr", None) or str(e)).strip().splitlines()
        return lines[-1] if lines else type(e).__name__
    return None


class Loader:
    """One C library, found, checked and loaded once, the same way for every library that has
    a Python reference to fall back on (the C machine, the schedule search, the stream
    resolver). With `key` e.g. "CSEARCH":

      1. `$QACCEL_NO_<key>` set (to anything but "" or "0"): no library, the reference runs;
      2. `$QACCEL_<key>_LIB=path`: that shared object (e.g. a sanitizer build), whatever
         sources it was built from;
      3. the extension `pip install` built beside the module (`here/<extension><suffix>`),
         when it was built from the current sources;
      4. else the current sources, compiled on first use into
         `cache_root()/<cache_prefix>-<digest>/<lib_name>`.

    `open_(path, check_hash)` loads a file and declares its functions; it raises OSError when
    the file's ABI, or with `check_hash` its stamp, is not the current sources' (and ctypes
    raises AttributeError for a file without the library's functions). `build(folder)`
    compiles the sources into `folder/<lib_name>`. `notice(reason)`, when given, is called once
    when no library could be had."""

    def __init__(self, key: str, here: Path, extension: str, cache_prefix: str, lib_name: str,
                 digest: Callable[[], str], build: Callable[[Path], object],
                 open_: Callable[[Path, bool], ctypes.CDLL],
                 notice: Callable[[str], None] | None = None) -> None:  # fmt: skip
        self.key, self.here, self.extension = key, Path(here), extension
        self.cache_prefix, self.lib_name, self.digest = cache_prefix, lib_name, digest
        self.build, self.open, self.notice = build, open_, notice
        self.reset()

    def cache_dir(self) -> Path:
        return cache_root() / f"{self.cache_prefix}-{self.digest()}"

    def _load(self) -> tuple[ctypes.CDLL | None, str | None]:
        off, explicit = f"QACCEL_NO_{self.key}", f"QACCEL_{self.key}_LIB"
        if os.environ.get(off, "") not in ("", "0"):
            return None, f"{off} is set"
        path = os.environ.get(explicit)
        if path:
            try:
                return self.open(Path(path), False), None
            except (OSError, AttributeError) as e:  # AttributeError: a symbol is missing
                return None, f"cannot load {explicit}: {e}"
        import importlib.machinery

        for suffix in importlib.machinery.EXTENSION_SUFFIXES:  # built by setup.py
            ext = self.here / f"{self.extension}{suffix}"
            if ext.is_file():
                try:
                    return self.open(ext, True), None
                except (OSError, AttributeError):
                    break  # stale or foreign build: compile the current sources instead
        cached = self.cache_dir() / self.lib_name
        failed = build_once(cached, lambda p: self.build(p.parent))
        if failed is not None:
            return None, f"compiling it failed ({failed})"
        try:
            return self.open(cached, True), None
        except (OSError, AttributeError) as e:
            return None, f"cannot load {cached}: {e}"

    def library(self) -> ctypes.CDLL | None:
        """The loaded library, or None (`unavailable_reason()` says why)."""
        if not self._loaded:
            self._lib, self._reason = self._load()
            self._loaded = True
            if self._lib is None and self.notice is not None:
                self.notice(self._reason or "")
        return self._lib

    def available(self) -> bool:
        return self.library() is not None

    def unavailable_reason(self) -> str | None:
        self.library()
        return self._reason

    def reset(self) -> None:
        """Forget the loaded library: the next call looks again (the environment changed)."""
        self._lib: ctypes.CDLL | None = None
        self._reason: str | None = None
        self._loaded = False


PACKAGE_ROOT = Path(__file__).parents[1]
"""The package's folder (the repository's root, where `setup.py` loads this file by path)."""


class CLibrary:
    """One C library with a Python reference, declared once: the module that loads it
    (`loader()`) and `setup.py`, which builds it at install time, read the same declaration,
    so both compile the same files and stamp the same digest.

      extension     the extension setup.py builds, beside the module that loads it
                    (`qaccel.lowering.vta._vta_search`); the module's folder is `Loader`'s `here`
      folder        the sources' folder, relative to the package root
      sources       its C files, then headers (only hashed), in the order they are hashed
      headers       relative to `folder` as the sources are: a header shared with another
                    library is named through its own folder (`../tiling_c/vta_tiling.h`)
      hash_macro    the macro the digest is compiled into (the library returns it)
      key, cache_prefix, lib_name    as `Loader`'s
    """

    def __init__(self, key: str, extension: str, folder: str, sources: tuple[str, ...],
                 headers: tuple[str, ...], hash_macro: str, cache_prefix: str,
                 lib_name: str) -> None:  # fmt: skip
        self.key, self.extension, self.folder = key, extension, folder
        self.sources, self.headers, self.hash_macro = tuple(sources), tuple(headers), hash_macro
        self.cache_prefix, self.lib_name = cache_prefix, lib_name

    def directory(self, root: Path = PACKAGE_ROOT) -> Path:
        return Path(root) / self.folder

    def files(self, root: Path = PACKAGE_ROOT) -> list[Path]:
        """The sources, then the headers, under `root` (setup.py: relative to its folder)."""
        folder = self.directory(root)
        return [folder / name for name in self.sources + self.headers]

    def source_hash(self) -> str:
        """Identifies the sources; the library is compiled with it (`hash_macro`)."""
        return source_hash(self.files())

    def build(self, out_dir, cc: str | None = None, extra_flags: Sequence[str] = ()) -> Path:
        """Compile the sources into `out_dir/<lib_name>` (raises CalledProcessError or
        OSError)."""
        folder = self.directory()
        return build_shared(Path(out_dir) / self.lib_name, [folder / s for s in self.sources],
                            defines={self.hash_macro: self.source_hash()},
                            extra_flags=extra_flags, cc=cc)  # fmt: skip

    def loader(self, open_: Callable[[Path, bool], ctypes.CDLL],
               notice: Callable[[str], None] | None = None) -> Loader:  # fmt: skip
        package, _, name = self.extension.rpartition(".")
        here = PACKAGE_ROOT.joinpath(*package.split(".")[1:])
        return Loader(self.key, here, name, self.cache_prefix, self.lib_name, self.source_hash,
                      self.build, open_, notice)  # fmt: skip


MACHINE_LIBRARY = CLibrary("CMACHINE", "qaccel.targets.vta._vta_machine", "targets/vta/machine",
                           ("vta_machine.c",), ("vta_machine.h",), "VTA_SOURCE_HASH",
                           "vta-machine", "libqaccel_vta.so")  # fmt: skip
"""libqaccel_vta, the C machine (`targets/vta/cmachine.py`)."""
TILING_HEADER = "../tiling_c/vta_tiling.h"
"""The tiling arithmetic libqaccel_search and libqaccel_stream's GEMM emitter share
(lowering/vta/tiling_c/), named from each library's folder: both digests cover it."""
SEARCH_LIBRARY = CLibrary("CSEARCH", "qaccel.lowering.vta._vta_search", "lowering/vta/search_c",
                          ("vta_search.c",), ("vta_search.h", TILING_HEADER),
                          "VTA_SEARCH_SOURCE_HASH", "vta-search",
                          "libqaccel_search.so")  # fmt: skip
"""libqaccel_search, the schedule search (`lowering/vta/csearch.py`)."""
STREAM_LIBRARY = CLibrary("CSTREAM", "qaccel.lowering.vta._vta_stream", "lowering/vta/stream",
                          ("vta_stream.c", "vta_gemm.c"), ("vta_stream.h", TILING_HEADER),
                          "VTA_STREAM_SOURCE_HASH", "vta-stream", "libqaccel_stream.so")  # fmt: skip
"""libqaccel_stream, the emitters' stream resolver and GEMM emitter (`lowering/vta/cstream.py`)."""
REFERENCE_LIBRARIES = (MACHINE_LIBRARY, SEARCH_LIBRARY, STREAM_LIBRARY)
"""The C libraries with a Python reference, as setup.py builds them."""
