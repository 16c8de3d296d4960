"""Reading the files an artifact names, as untrusted input.

An artifact folder is something people copy, download and share, and its `manifest.json` and
`runtime.json` name the files to read. A name is honoured only when it is a relative path of
plain components inside the artifact, every component an existing entry that is not a symbolic
link, the last one a regular file whose size fits the memory budget (`QACCEL_MEMORY_LIMIT`),
checked before a byte is read:

    read_artifact_file(root, "vta_fn_0/layer_0.bin", RunPlanError)   # bytes, or one line

So `/etc/passwd`, `../x`, a symlink, `/dev/zero` or a FIFO named by an edited manifest are
refused without being opened, and the message names only what the artifact said (never
whether something outside the artifact exists).
"""

from __future__ import annotations

import os
import stat
from pathlib import Path, PurePosixPath

from qaccel.kernels.memory import MemoryBudgetError, check_bytes


def _refuse(error: type[Exception], root: Path, rel: object, why: str) -> Exception:
    return error(f"'{root}': the artifact names {rel!r}, {why}")


def confined_path(root: Path, rel: object, error: type[Exception]) -> Path:
    """`root / rel` when `rel` is a relative path of plain components; raises `error`."""
    if not isinstance(rel, str) or not rel or "\0" in rel or "\\" in rel:
        raise _refuse(error, root, rel, "which is not a file name inside it")
    parts = PurePosixPath(rel).parts
    if PurePosixPath(rel).is_absolute() or any(p in ("..", ".") for p in parts) or not parts:
        raise _refuse(error, root, rel, "a path outside the artifact")
    return root.joinpath(*parts)


def read_artifact_file(root: str | Path, rel: object, error: type[Exception]) -> bytes:
    """The bytes of file `rel` of the artifact at `root`, read only when it is a regular file
    inside it (no symlink on the way) within the memory budget; else `error` (one line)."""
    root = Path(root)
    path = confined_path(root, rel, error)
    here = root
    for part in PurePosixPath(str(rel)).parts:
        here = here / part
        try:
            mode = os.lstat(here).st_mode
        except OSError:
            raise _refuse(error, root, rel, "which it does not hold") from None
        if stat.S_ISLNK(mode):
            raise _refuse(error, root, rel, "which is a symbolic link") from None
    if not stat.S_ISREG(mode):
        raise _refuse(error, root, rel, "which is not a regular file")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags)
    except OSError as e:
        raise error(f"'{path}': {e.strerror}") from None
    with os.fdopen(fd, "rb") as f:
        info = os.fstat(f.fileno())
        if not stat.S_ISREG(info.st_mode):  # replaced between the lstat and the open
            raise _refuse(error, root, rel, "which is not a regular file")
        try:
            check_bytes(info.st_size, f"'{path}'")
        except MemoryBudgetError as e:
            raise error(str(e)) from None
        return f.read(info.st_size)


def is_artifact(path: str | Path) -> bool:
    """A folder with a manifest (cheap: starting a dataset run imports no compiler)."""
    return Path(path).is_dir() and (Path(path) / "manifest.json").is_file()


__all__ = ["confined_path", "is_artifact", "read_artifact_file"]
