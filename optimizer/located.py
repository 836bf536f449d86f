"""Errors located in their input, and where a TOML key is (one rule for every input file).

Every bad input is reported before work starts as one line naming the value and where it came
from: ``<source>, line <n>, <noun> '<name>': <message>``.  :class:`LocatedError` is the base of
:class:`optimizer.census.allocation.AllocationError` (noun "field") and
:class:`optimizer.scenario.ScenarioError` (noun "key"); :func:`toml_key_line` is the best-effort
line finder both use (``tomllib`` keeps no positions).
"""

from __future__ import annotations

import json
import re
from typing import ClassVar

__all__ = ["LocatedError", "toml_key_line"]


class LocatedError(ValueError):
    """Invalid input; ``source`` (file or name), ``line`` (1-based, or None) and ``field`` (the
    key or column, or None) locate the problem."""

    noun: ClassVar[str] = "field"

    def __init__(self, source: str, line: int | None, field: str | None, message: str):
        self.source, self.line, self.field = source, line, field
        where = source
        if line is not None:
            where += f", line {line}"
        if field is not None:
            where += f", {self.noun} '{field}'"
        super().__init__(f"{where}: {message}")


def toml_key_line(lines: list[str], key: str, lo: int = 0, hi: int | None = None) -> int | None:
    """1-based number of the first line in ``lines[lo:hi]`` that assigns ``key`` (bare, "quoted"
    or 'quoted', also inside inline tables), ignoring comments on lines without a double quote;
    None when there is none."""
    hi = len(lines) if hi is None else hi
    pat = re.compile(
        r"(^|[{,\s])(" + re.escape(json.dumps(key)) + "|'" + re.escape(key) + "'|" + re.escape(key) + r")\s*="
    )
    for i in range(lo, hi):
        code = lines[i].split("#", 1)[0] if '"' not in lines[i] else lines[i]
        if pat.search(code):
            return i + 1
    return None
