"""Files that several processes update: a lock beside the file for read-modify-write (filelock), and a
write that replaces the file atomically, so that a crash mid-write leaves the old file whole.

Pure: no torch, no pytest.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import filelock


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold ``path``'s lock (``filelock``, on ``path.lock`` beside it) while the body reads, merges and
    writes: another process's update waits for it."""
    with filelock.FileLock(path.with_name(path.name + ".lock")):
        yield


def atomic_write(path: Path, content: str | bytes) -> Path:
    """Write a temporary file beside ``path`` (its folder made if missing), then rename it over ``path``,
    with the mode ``path`` had (or that ``open()`` gives a new file: mkstemp alone would leave it readable
    by its owner only). Every file the plugin writes for its user goes through here."""
    path.parent.mkdir(parents=True, exist_ok=True)
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else _new_file_mode()
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    data = content.encode("utf-8") if isinstance(content, str) else content
    try:
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fchmod(out.fileno(), mode)
            os.fsync(out.fileno())
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    return path


def _new_file_mode() -> int:
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask
