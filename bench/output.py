"""How a benchmark writes its results: one CSV row per measurement and a JSON summary beside it."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from optimizer.atomic import atomic_write_text


def write_results(out: str | Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str], summary: Any) -> None:
    """Write ``rows`` (``columns`` in order) to the CSV ``out`` and ``summary`` to ``out`` with a
    ``.json`` suffix, atomically, and say so on stdout."""
    path = Path(out)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(columns), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_text(path, buf.getvalue())
    atomic_write_text(path.with_suffix(".json"), json.dumps(summary, indent=2, default=str) + "\n")
    print(f"wrote {path} and {path.with_suffix('.json')}")
