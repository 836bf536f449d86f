"""Atomic file writes: readers see either the old file, nothing, or the whole new file.

Write to a temporary file in the same directory, flush and fsync, then :func:`os.replace`
(atomic on POSIX and Windows).  A killed run therefore never leaves a half-written output,
and a rerun resumes from whatever complete files exist.  A destination that is a symbolic link
is refused (:class:`UnsafeOutputError`), so outputs never overwrite a link's target.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["UnsafeOutputError", "atomic_write_bytes", "atomic_write_json", "atomic_write_text", "check_writable"]


class UnsafeOutputError(ValueError):
    """The destination of an output is a symbolic link (writing would clobber its target)."""


def check_writable(path: str | os.PathLike) -> None:
    """Refuse (:class:`UnsafeOutputError`, one line naming the path) a destination that is a
    symbolic link, so a pre-placed ``out/report.md → victim`` never overwrites the victim."""
    path = Path(path)
    if path.is_symlink():
        try:
            target = os.readlink(path)
        except OSError:
            target = "?"
        raise UnsafeOutputError(
            f"{path}: refusing to write an output through a symbolic link (it points to "
            f"{target!r}); remove the link or choose another output folder"
        )


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8, newlines as given) to ``path`` atomically (see :func:`atomic_write_bytes`)."""
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> None:
    """Write ``data`` to ``path`` atomically, creating parent directories.

    The bytes go to a temporary file in the same folder, are flushed and fsync'ed, and the
    temporary file is renamed onto ``path``: readers see the old file or the whole new one, a
    failure (full disk, kill) leaves the old file and no temporary file.  A ``path`` that is a
    symbolic link is refused (:class:`UnsafeOutputError`); the rename itself would replace the
    link, never its target, should one appear after the check.
    """
    path = Path(path)
    check_writable(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file ordinary permissions
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def atomic_write_json(path: str | os.PathLike, payload, **dump_kwargs) -> None:
    """JSON-encode ``payload`` (sorted keys, indented unless overridden) and write atomically."""
    kwargs: dict[str, Any] = {"sort_keys": True, "indent": 1, "ensure_ascii": False}
    kwargs.update(dump_kwargs)
    atomic_write_text(path, json.dumps(payload, **kwargs))
