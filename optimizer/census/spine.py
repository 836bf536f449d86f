"""Spine paths: which geolevels measure a record, and the budget each one then spends.

The DAS "spine optimisation" bypasses geounits that have a single child, so a given person's
record is not measured at every geolevel: its *path* is the pattern of geolevels that are
present for it (arXiv 2606.29835 §1.3; the 43 DHC-persons patterns are published with that
paper's code).  Budget is never lost: the total budget of every bypassed geolevel is merged
into the **nearest present geolevel above it** and split in that receiving level's own query
proportions, so every path spends exactly the allocation's total ρ.

Direction, checked against the shipped paths (``optimizer/data/dhc_persons_allocation_paths_*``):
merging *upwards* reproduces all 43 paths exactly (e.g. path 1 has no Block_Group and each
Tract_Subset query gets 217/2500 + (43/100)·(1/16), the 1/16 being the query's share of the
Tract_Subset total; path 6 is US + State only, the State query shares absorbing County … Block).
Merging downwards cannot produce path 6, whose bottom level is absent.  Hence the top geolevel is
always present but the bottom (Block) need not be; :func:`all_patterns` enumerates every
pattern the rule allows (a conservative superset for runs whose real patterns are unpublished).

A *pattern* is a tuple of the present geolevel names, top-down.

>>> from optimizer.census.allocation import load_builtin
>>> a = load_builtin("dhc-persons")
>>> path = path_allocation(a, ("US", "State", "County", "Prim", "Tract_Subset_Group", "Tract_Subset", "Block"))
>>> path[5][0], path[6][0]                         # Tract_Subset absorbs Block_Group
(Fraction(4547, 40000), Fraction(0, 1))
>>> len(dhc_persons_patterns()), len(all_patterns(a.geolevels))
(43, 128)
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from fractions import Fraction
from functools import cache
from itertools import product
from pathlib import Path

from optimizer.census.allocation import Allocation

__all__ = [
    "DHC_GEOLEVELS",
    "Pattern",
    "all_patterns",
    "dhc_persons_patterns",
    "normalize_pattern",
    "path_allocation",
    "path_geolevel_totals",
    "patterns_for",
    "shipped_dhc_persons_paths",
]

Pattern = tuple[str, ...]

_DATA = Path(__file__).resolve().parents[1] / "data"
_TOTALS_FILE = "dhc_persons_allocation_paths_geolevel_totals.csv"
_LONG_FILE = "dhc_persons_allocation_paths_long.csv"


def normalize_pattern(geolevels: Sequence[str], pattern: Iterable[str]) -> Pattern:
    """Validate a pattern against ``geolevels`` and return it in top-down order.

    Raises:
        ValueError: unknown or repeated geolevel names, or the top geolevel missing (nothing
            above it could absorb its budget).
    """
    levels = tuple(geolevels)
    names = list(pattern)
    unknown = [n for n in names if n not in levels]
    if unknown:
        raise ValueError(f"pattern {tuple(names)}: unknown geolevel(s) {unknown}; geolevels are {levels}")
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ValueError(f"pattern {tuple(names)}: repeated geolevel(s) {dup}")
    if levels[0] not in names:
        raise ValueError(
            f"pattern {tuple(names)}: the top geolevel {levels[0]!r} must be present "
            "(a bypassed level's budget goes to the nearest present level above it)"
        )
    return tuple(g for g in levels if g in names)


def path_allocation(allocation: Allocation, pattern: Iterable[str]) -> list[tuple[Fraction, ...]]:
    """Per-geolevel query budgets seen by a record whose path has the given pattern.

    Each bypassed geolevel's total ρ is added to the nearest present geolevel above it and
    split in that level's query proportions: a present level with total T that absorbs A
    gets ρ_q·(1 + A/T) for each of its queries (arXiv 2606.29835 §1.3).

    Args:
        allocation: the nominal allocation (top-down geolevels).
        pattern: the present geolevels (any order; validated by :func:`normalize_pattern`).

    Returns:
        One tuple per geolevel of ``allocation`` (same order), aligned with that level's
        queries; bypassed levels are all zeros.  The grand total equals
        ``allocation.total_rho`` exactly.
    """
    present = set(normalize_pattern(allocation.geolevels, pattern))
    absorbed: dict[str, Fraction] = {}
    receiver: str | None = None
    for lv in allocation.levels:
        if lv.name in present:
            receiver = lv.name
            absorbed[receiver] = Fraction(0)
        else:
            assert receiver is not None  # the top level is present (normalize_pattern keeps it)
            absorbed[receiver] += lv.total
    out: list[tuple[Fraction, ...]] = []
    for lv in allocation.levels:
        if lv.name in present:
            factor = 1 + absorbed[lv.name] / lv.total
            out.append(tuple(r * factor for r in lv.rho))
        else:
            out.append(tuple(Fraction(0) for _ in lv.rho))
    return out


def path_geolevel_totals(allocation: Allocation, pattern: Iterable[str]) -> dict[str, Fraction]:
    """``{geolevel: total ρ on this path}`` (zeros for bypassed levels)."""
    return {g: sum(v, Fraction(0)) for g, v in zip(allocation.geolevels, path_allocation(allocation, pattern))}


def all_patterns(geolevels: Sequence[str], *, keep_bottom: bool = False) -> tuple[Pattern, ...]:
    """Every pattern the bypass rule allows: the top geolevel present, any subset of the rest.

    Args:
        geolevels: top-down geolevel names (e.g. ``allocation.geolevels``).
        keep_bottom: also force the bottom geolevel to be present.  Off by default, because
            the published DHC-persons paths include patterns without Block (e.g. path 6).

    Returns:
        ``2**(n-1)`` patterns (``2**(n-2)`` with ``keep_bottom``), the full spine first, then in
        decreasing binary order of the presence mask.
    """
    levels = tuple(geolevels)
    if not levels:
        raise ValueError("all_patterns: no geolevels")
    if len(set(levels)) != len(levels):
        raise ValueError(f"all_patterns: repeated geolevel names in {levels}")
    free = levels[1:-1] if keep_bottom and len(levels) > 1 else levels[1:]
    tail = (levels[-1],) if keep_bottom and len(levels) > 1 else ()
    out = []
    for mask in product((True, False), repeat=len(free)):
        out.append((levels[0], *(g for g, keep in zip(free, mask) if keep), *tail))
    return tuple(out)


#: the eight DHC geolevels, top-down (the published DHC-persons paths are over these)
DHC_GEOLEVELS: Pattern = ("US", "State", "County", "Prim", "Tract_Subset_Group", "Tract_Subset", "Block_Group", "Block")


def patterns_for(geolevels: Sequence[str]) -> tuple[Pattern, ...]:
    """The one rule mapping an allocation's geolevels to the path patterns of its release.

    The eight DHC geolevels (:data:`DHC_GEOLEVELS`, any DHC run) get the 43 published DHC-persons
    patterns (:func:`dhc_persons_patterns`); any other geolevels (PL94 runs, custom allocations)
    get every pattern the bypass rule allows (:func:`all_patterns`, a conservative superset).
    Used by the all-pairs confirmation and by the release profile alike.

    >>> len(patterns_for(DHC_GEOLEVELS)), len(patterns_for(("US", "State", "County")))
    (43, 4)
    """
    levels = tuple(geolevels)
    if levels == DHC_GEOLEVELS:
        return dhc_persons_patterns()
    return all_patterns(levels)


def dhc_persons_patterns() -> tuple[Pattern, ...]:
    """The 43 published DHC-persons path patterns, in path order (index 1..43).

    Read from ``optimizer/data/dhc_persons_allocation_paths_geolevel_totals.csv`` (nonzero
    geolevels of each path); source: BuxinSu/Exact-Privacy-Accounting-for-2020-U.S.-Census.
    """
    return _dhc_persons_patterns()


@cache
def _dhc_persons_patterns() -> tuple[Pattern, ...]:
    text = _DATA.joinpath(_TOTALS_FILE).read_text(encoding="utf-8")
    reader = csv.DictReader(io.StringIO(text))
    levels = [c for c in (reader.fieldnames or []) if c not in ("path", "total")]
    patterns: list[Pattern] = []
    for row in reader:
        line = reader.line_num
        try:
            index = int(row["path"])
        except (TypeError, ValueError):
            raise ValueError(
                f"{_TOTALS_FILE}, line {line}, field 'path': not an integer: {row.get('path')!r}"
            ) from None
        if index != len(patterns) + 1:
            raise ValueError(
                f"{_TOTALS_FILE}, line {line}, field 'path': expected path {len(patterns) + 1}, got {index}"
            )
        present = []
        for g in levels:
            try:
                value = Fraction(row[g])
            except (TypeError, ValueError, ZeroDivisionError):
                raise ValueError(f"{_TOTALS_FILE}, line {line}, field '{g}': cannot parse {row.get(g)!r}") from None
            if value < 0:
                raise ValueError(f"{_TOTALS_FILE}, line {line}, field '{g}': negative budget {value}")
            if value:
                present.append(g)
        patterns.append(normalize_pattern(levels, present))
    return tuple(patterns)


def shipped_dhc_persons_paths() -> dict[int, dict[str, tuple[Fraction, ...]]]:
    """The published per-query budgets of the 43 DHC-persons paths, as sorted multisets.

    Returns ``{path: {geolevel: sorted tuple of nonzero ρ}}`` read from
    ``optimizer/data/dhc_persons_allocation_paths_long.csv`` (the source lists each level's
    10 slots in ascending ρ, without query names, so only the multiset is meaningful).
    """
    text = _DATA.joinpath(_LONG_FILE).read_text(encoding="utf-8")
    reader = csv.DictReader(io.StringIO(text))
    acc: dict[int, dict[str, list[Fraction]]] = {}
    for row in reader:
        line = reader.line_num
        try:
            index, value = int(row["path"]), Fraction(row["rho_fraction"])
        except (TypeError, ValueError, ZeroDivisionError):
            raise ValueError(f"{_LONG_FILE}, line {line}: cannot parse path/rho_fraction in {row!r}") from None
        levels = acc.setdefault(index, {})
        values = levels.setdefault(row["geolevel"], [])
        if value:
            values.append(value)
    return {i: {g: tuple(sorted(v)) for g, v in lv.items()} for i, lv in sorted(acc.items())}
