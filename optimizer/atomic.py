"""Atomic file writes: readers see either the old file, nothing, or the whole new file.

Write to a temporary file in the same directory, flush and fsync, then :func:`os.replace`
(atomic on POSIX and Windows).  A killed run therefore never leaves a half-written output,
and a rerun resumes from whatever complete files exist.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

__all__ = ["atomic_write_text", "atomic_write_json"]


def atomic_write_text(path: str | os.PathLike, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically, creating parent directories."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; give the file ordinary permissions
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_json(path: str | os.PathLike, payload, **dump_kwargs) -> None:
    """JSON-encode ``payload`` (sorted keys, indented unless overridden) and write atomically."""
    kwargs = {"sort_keys": True, "indent": 1, "ensure_ascii": False}
    kwargs.update(dump_kwargs)
    atomic_write_text(path, json.dumps(payload, **kwargs))
