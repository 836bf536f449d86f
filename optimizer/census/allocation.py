"""Privacy-loss budget allocations: an exact zCDP budget ρ for every (geolevel, query).

The 2020 Census TopDown Algorithm measures, at every geolevel of its spine (top-down: US,
State, County, …, Block) and for every geounit, a fixed list of histogram queries, each with
discrete Gaussian noise of scale σ_q² = 1/ρ_q (Census convention, arXiv 2410.09296 and
arXiv 2606.29835 §1; replace-one neighbours).  An :class:`Allocation` is that table of ρ_q, held
as :class:`fractions.Fraction` end to end, plus a name and a free-text provenance.

Two file formats are read, both validated *before* anything is computed; every problem is a
:class:`AllocationError` (a ``ValueError``) naming the file, the line and the field:

* the Census-data CSV (``optimizer/data/census2020/*_allocation*.csv``): columns ``geolevel``,
  ``query``, ``rho_exact`` (required) and, when present, the declared derived columns
  ``rho_fraction_of_total``, ``geolevel_fraction_of_total``, ``query_fraction_within_geolevel``,
  ``sigma_sq_exact`` (checked exactly) and ``rho``, ``sigma_sq`` (decimals, checked to 1e-9).
* a TOML scenario schema (budgets as exact fraction strings)::

      name = "dhc-persons"                 # optional
      provenance = "where the numbers come from"   # optional
      run_type = "dhc"                     # optional: "dhc", "pl94" or "custom"
      total_rho = "24811/5000"             # optional; checked against the sum

      [[geolevel]]                         # one table per geolevel, top-down
      name = "US"
      total_rho = "949/10000"              # optional; checked
      [geolevel.queries]                   # query name -> rho (an inline table works too)
      "hispanic * sex" = "73/10000"

>>> a = load_builtin("dhc-persons")
>>> a.total_rho, a.geolevels[0], a.geolevels[-1], a.n_queries
(Fraction(24811, 5000), 'US', 'Block', 80)
>>> a.geolevel_totals()["Block_Group"]
Fraction(43, 100)
"""

from __future__ import annotations

import csv
import io
import json
import math
import tomllib
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import NamedTuple

from accountant.composition import SIGMA2_MAX, SIGMA2_MIN
from accountant.exact import to_fraction
from optimizer.atomic import atomic_write_text
from optimizer.located import LocatedError, toml_key_line

__all__ = [
    "BUILTIN_NAMES",
    "RUN_TYPES",
    "Allocation",
    "AllocationError",
    "GeolevelBudget",
    "load_builtin",
]

#: Known run types and their full top-down geolevel lists (Puerto Rico runs drop ``US``).
RUN_TYPES: dict[str, tuple[str, ...]] = {
    "dhc": ("US", "State", "County", "Prim", "Tract_Subset_Group", "Tract_Subset", "Block_Group", "Block"),
    "pl94": ("US", "State", "County", "Tract", "Block_Group", "Block"),
}

# name -> (file under optimizer/data/census2020, run type)
_BUILTINS: dict[str, tuple[str, str]] = {
    "dhc-persons": ("dhc_persons_allocation.csv", "dhc"),
    "dhc-persons-pr": ("dhc_persons_allocation_pr.csv", "dhc"),
    "dhc-units": ("dhc_units_allocation.csv", "dhc"),
    "dhc-units-pr": ("dhc_units_allocation_pr.csv", "dhc"),
    "pl94-persons": ("pl94_persons_allocation.csv", "pl94"),
    "pl94-persons-pr": ("pl94_persons_allocation_pr.csv", "pl94"),
    "pl94-units": ("pl94_units_allocation.csv", "pl94"),
    "pl94-units-pr": ("pl94_units_allocation_pr.csv", "pl94"),
}
#: Names accepted by :func:`load_builtin`.
BUILTIN_NAMES: tuple[str, ...] = tuple(_BUILTINS)

# Package data, located next to this file (editable installs may treat ``optimizer`` as a
# namespace package, which importlib.resources cannot read from).
_DATA = Path(__file__).resolve().parents[1] / "data"

_CSV_REQUIRED = ("geolevel", "query", "rho_exact")
_CSV_COLUMNS = (
    "geolevel",
    "query",
    "rho_fraction_of_total",
    "rho",
    "geolevel_fraction_of_total",
    "query_fraction_within_geolevel",
    "rho_exact",
    "sigma_sq_exact",
    "sigma_sq",
)
_EXACT_DERIVED = (
    "rho_fraction_of_total",
    "geolevel_fraction_of_total",
    "query_fraction_within_geolevel",
    "sigma_sq_exact",
)
# Decimal display columns are written with 10 significant digits; allow that rounding.
_DECIMAL_RTOL = 1e-9
_TOML_TOP_KEYS = {"name", "provenance", "run_type", "total_rho", "geolevel"}
_TOML_LEVEL_KEYS = {"name", "total_rho", "queries"}


class AllocationError(LocatedError):
    """Invalid allocation input; ``source``, ``line`` and ``field`` locate the problem
    (:class:`optimizer.located.LocatedError`)."""


@dataclass(frozen=True, slots=True)
class GeolevelBudget:
    """The queries measured at one geolevel and their budgets ρ (all > 0, exact).

    Args:
        name: geolevel name, e.g. ``"Tract_Subset"``.
        queries: query names, in the order they were given (unique).
        rho: the zCDP budget of each query, aligned with ``queries``.
    """

    name: str
    queries: tuple[str, ...]
    rho: tuple[Fraction, ...]

    def __post_init__(self):
        if not isinstance(self.name, str) or not self.name.strip():
            raise ValueError(f"GeolevelBudget: name must be a non-empty string, got {self.name!r}")
        queries, rho = tuple(self.queries), tuple(self.rho)
        if not queries:
            raise ValueError(f"GeolevelBudget '{self.name}': no queries")
        if len(queries) != len(rho):
            raise ValueError(f"GeolevelBudget '{self.name}': {len(queries)} queries but {len(rho)} rho values")
        seen: set[str] = set()
        values = []
        for q, r in zip(queries, rho):
            if not isinstance(q, str) or not q.strip():
                raise ValueError(f"GeolevelBudget '{self.name}': query name must be a non-empty string, got {q!r}")
            if q in seen:
                raise ValueError(f"GeolevelBudget '{self.name}': duplicate query {q!r}")
            seen.add(q)
            value = to_fraction(r, name=f"GeolevelBudget '{self.name}', query {q!r}: rho")
            if value <= 0:
                raise ValueError(f"GeolevelBudget '{self.name}', query {q!r}: rho must be > 0, got {value}")
            values.append(value)
        object.__setattr__(self, "queries", queries)
        object.__setattr__(self, "rho", tuple(values))

    @property
    def total(self) -> Fraction:
        """Sum of the query budgets at this geolevel."""
        return sum(self.rho, Fraction(0))

    def proportions(self) -> tuple[Fraction, ...]:
        """Each query's share of the geolevel total (sums to exactly 1)."""
        total = self.total
        return tuple(r / total for r in self.rho)

    def items(self) -> Iterator[tuple[str, Fraction]]:
        """``(query, rho)`` pairs in order."""
        return zip(self.queries, self.rho)


@dataclass(frozen=True, slots=True)
class Allocation:
    """An exact privacy-loss budget allocation: ordered geolevels (top-down) × queries → ρ.

    Total zCDP budget is Σ ρ_q over all geolevels and queries (each person is in one geounit
    per geolevel; arXiv 2606.29835 §1.2).  Instances are immutable and hashable, so they can
    be used directly inside job specs.

    Args:
        levels: one :class:`GeolevelBudget` per geolevel, top-down, unique names.
        name: short identifier (e.g. ``"dhc-persons"``).
        provenance: where the numbers come from (free text).
        run_type: ``"dhc"``, ``"pl94"`` (geolevels must then be known for that run and in
            its top-down order) or ``None`` for a custom geography.
    """

    levels: tuple[GeolevelBudget, ...]
    name: str = "allocation"
    provenance: str = ""
    run_type: str | None = None

    def __post_init__(self):
        levels = tuple(self.levels)
        if not levels:
            raise ValueError(f"Allocation '{self.name}': no geolevels")
        for lv in levels:
            if not isinstance(lv, GeolevelBudget):
                raise TypeError(f"Allocation '{self.name}': levels must be GeolevelBudget, got {type(lv).__name__}")
        names = [lv.name for lv in levels]
        dup = {n for n, count in Counter(names).items() if count > 1}
        if dup:
            raise ValueError(f"Allocation '{self.name}': duplicate geolevel(s) {sorted(dup)}")
        if self.run_type is not None:
            if self.run_type not in RUN_TYPES:
                raise ValueError(
                    f"Allocation '{self.name}': unknown run_type {self.run_type!r}; "
                    f"expected one of {sorted(RUN_TYPES)} or None"
                )
            known = RUN_TYPES[self.run_type]
            for n in names:
                if n not in known:
                    raise ValueError(
                        f"Allocation '{self.name}': unknown geolevel {n!r} for run type "
                        f"{self.run_type!r} (known: {', '.join(known)})"
                    )
            if sorted(names, key=known.index) != names:
                raise ValueError(
                    f"Allocation '{self.name}': geolevels {names} are not in the top-down order "
                    f"of run type {self.run_type!r} ({', '.join(known)})"
                )
        if not isinstance(self.name, str) or not isinstance(self.provenance, str):
            raise TypeError("Allocation: name and provenance must be strings")
        object.__setattr__(self, "levels", levels)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def from_mapping(
        cls,
        budgets: Mapping[str, Mapping[str, object]],
        *,
        name: str = "allocation",
        provenance: str = "",
        run_type: str | None = "auto",
    ) -> Allocation:
        """Build from ``{geolevel: {query: rho}}`` (ordered top-down; rho exact).

        ``run_type="auto"`` infers ``"dhc"``/``"pl94"`` from the geolevel names (see
        :meth:`from_csv`).
        """
        records = []
        for geo, queries in budgets.items():
            for query, raw in queries.items():
                records.append(_Record(geo, query, raw, None, f"{geo}/{query}"))
        return _build(records, "mapping", name=name, provenance=provenance, run_type=run_type)

    @classmethod
    def from_csv(
        cls,
        path_or_text: str | Path,
        *,
        name: str | None = None,
        provenance: str | None = None,
        run_type: str | None = "auto",
        declared_total: object | None = None,
    ) -> Allocation:
        """Load a Census-data allocation CSV (a path, or the CSV text itself).

        Args:
            path_or_text: a :class:`~pathlib.Path`, a path string, or CSV text (any string
                containing a newline is taken as text).
            name: defaults to the file stem (``"allocation"`` for text).
            provenance: defaults to ``"loaded from <file>"``.
            run_type: ``"auto"`` (default) infers ``"dhc"`` or ``"pl94"`` from the geolevel
                names and then rejects unknown geolevels; ``"dhc"``/``"pl94"`` force it;
                ``None`` accepts any geolevel names in file order.
            declared_total: optional exact total ρ the file must add up to.

        Raises:
            AllocationError: missing columns, unparseable numbers, ρ ≤ 0, duplicate
                (geolevel, query) rows, unknown or misordered geolevels, or declared
                derived columns/totals that do not add up.
        """
        text, source, stem = _read(path_or_text, "csv")
        return _parse_csv(
            text,
            source,
            name=name if name is not None else stem,
            provenance=provenance if provenance is not None else f"loaded from {source}",
            run_type=run_type,
            declared_total=declared_total,
        )

    @classmethod
    def from_toml(cls, path_or_text: str | Path, *, run_type: str | None = "auto") -> Allocation:
        """Load the TOML schema of the module docstring (a path, or the TOML text itself).

        A ``run_type`` key in the file overrides the argument (``"custom"`` means no
        geolevel check).

        Raises:
            AllocationError: invalid TOML, unknown keys, floats or unparseable budgets,
                ρ ≤ 0, duplicates, unknown geolevels, or a declared total that does not add up.
        """
        text, source, stem = _read(path_or_text, "toml")
        return _parse_toml(text, source, stem, run_type)

    # ------------------------------------------------------------------ views
    @property
    def geolevels(self) -> tuple[str, ...]:
        """Geolevel names, top-down."""
        return tuple(lv.name for lv in self.levels)

    @property
    def total_rho(self) -> Fraction:
        """Total zCDP budget Σ ρ_q (exact)."""
        return sum((lv.total for lv in self.levels), Fraction(0))

    @property
    def n_queries(self) -> int:
        """Number of (geolevel, query) measurements."""
        return sum(len(lv.queries) for lv in self.levels)

    def level(self, geolevel: str) -> GeolevelBudget:
        """The :class:`GeolevelBudget` of ``geolevel`` (``ValueError`` if absent)."""
        for lv in self.levels:
            if lv.name == geolevel:
                return lv
        raise ValueError(f"Allocation '{self.name}': no geolevel {geolevel!r} (have {', '.join(self.geolevels)})")

    def rho_of(self, geolevel: str, query: str) -> Fraction:
        """ρ of one measurement."""
        lv = self.level(geolevel)
        try:
            return lv.rho[lv.queries.index(query)]
        except ValueError:
            raise ValueError(f"Allocation '{self.name}': no query {query!r} at geolevel {geolevel!r}") from None

    def items(self) -> Iterator[tuple[str, str, Fraction]]:
        """``(geolevel, query, rho)`` for every measurement, top-down."""
        for lv in self.levels:
            for q, r in lv.items():
                yield lv.name, q, r

    def geolevel_totals(self) -> dict[str, Fraction]:
        """``{geolevel: Σ ρ over its queries}``, top-down."""
        return {lv.name: lv.total for lv in self.levels}

    def sigma2(self) -> dict[tuple[str, str], Fraction]:
        """Discrete Gaussian scale σ² = 1/ρ of every measurement (Census convention)."""
        return {(g, q): 1 / r for g, q, r in self.items()}

    # ------------------------------------------------------------------ transformations
    def scaled(self, c: object) -> Allocation:
        """All budgets multiplied by the exact factor ``c`` > 0 (ρ scales, σ² scales by 1/c)."""
        factor = to_fraction(c, name="Allocation.scaled: c")
        if factor <= 0:
            raise ValueError(f"Allocation.scaled: c must be > 0, got {factor}")
        levels = tuple(GeolevelBudget(lv.name, lv.queries, tuple(r * factor for r in lv.rho)) for lv in self.levels)
        return Allocation(levels, self.name, _append(self.provenance, f"scaled by {factor}"), self.run_type)

    def with_rho(self, mapping: Mapping[tuple[str, str], object]) -> Allocation:
        """A copy with the budgets of some existing ``(geolevel, query)`` keys replaced.

        Raises:
            ValueError: a key not in this allocation, or a budget that is not exact or ≤ 0.
        """
        updates: dict[tuple[str, str], Fraction] = {}
        existing = {(g, q) for g, q, _ in self.items()}
        for key, raw in mapping.items():
            if not (isinstance(key, tuple) and len(key) == 2):
                raise ValueError(f"Allocation.with_rho: keys must be (geolevel, query) tuples, got {key!r}")
            if key not in existing:
                raise ValueError(f"Allocation.with_rho: {key!r} is not a measurement of allocation '{self.name}'")
            value = to_fraction(raw, name=f"Allocation.with_rho[{key!r}]")
            if value <= 0:
                raise ValueError(f"Allocation.with_rho[{key!r}]: rho must be > 0, got {value}")
            updates[key] = value
        levels = tuple(
            GeolevelBudget(lv.name, lv.queries, tuple(updates.get((lv.name, q), r) for q, r in lv.items()))
            for lv in self.levels
        )
        return Allocation(
            levels, self.name, _append(self.provenance, f"{len(updates)} budget(s) replaced"), self.run_type
        )

    # ------------------------------------------------------------------ writers
    def to_toml(self, path: str | Path | None = None) -> str:
        """Serialise to the TOML schema (exact fraction strings); write to ``path`` if given.

        ``Allocation.from_toml(a.to_toml()) == a`` (exact round trip).
        """
        out = [
            "# census-plb allocation: zCDP budget rho per (geolevel, query), exact fractions",
            f"name = {_tq(self.name)}",
            f"provenance = {_tq(self.provenance)}",
            f"run_type = {_tq(self.run_type or 'custom')}",
            f'total_rho = "{self.total_rho}"',
        ]
        for lv in self.levels:
            out += ["", "[[geolevel]]", f"name = {_tq(lv.name)}", f'total_rho = "{lv.total}"', "[geolevel.queries]"]
            out += [f'{_tq(q)} = "{r}"' for q, r in lv.items()]
        text = "\n".join(out) + "\n"
        if path is not None:
            atomic_write_text(path, text)
        return text

    def to_csv(self, path: str | Path | None = None) -> str:
        """Serialise to the Census-data CSV format (all declared columns); write if ``path``.

        ``Allocation.from_csv(a.to_csv(), name=a.name, provenance=a.provenance) == a``.
        """
        total = self.total_rho
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(_CSV_COLUMNS)
        for lv in self.levels:
            gtot = lv.total
            for q, r in lv.items():
                w.writerow(
                    [
                        lv.name,
                        q,
                        r / total,
                        f"{float(r):.10g}",
                        gtot / total,
                        r / gtot,
                        r,
                        1 / r,
                        f"{float(1 / r):.10g}",
                    ]
                )
        text = buf.getvalue()
        if path is not None:
            atomic_write_text(path, text)
        return text


# ====================================================================== built-ins
def load_builtin(name: str) -> Allocation:
    """Load a 2020 production allocation shipped in ``optimizer/data/census2020``.

    Args:
        name: one of :data:`BUILTIN_NAMES` (``"dhc-persons"``, ``"dhc-persons-pr"``,
            ``"dhc-units"``, ``"dhc-units-pr"``, ``"pl94-persons"``, ``"pl94-persons-pr"``,
            ``"pl94-units"``, ``"pl94-units-pr"``).

    The file's total is checked against the run's declared total in ``totals.csv``.
    """
    if name not in _BUILTINS:
        raise ValueError(f"load_builtin: unknown allocation {name!r}; expected one of {', '.join(BUILTIN_NAMES)}")
    return _load_builtin_cached(name)


@cache
def _load_builtin_cached(name: str) -> Allocation:
    fname, run_type = _BUILTINS[name]
    data = _DATA.joinpath("census2020")
    text = data.joinpath(fname).read_text(encoding="utf-8")
    source = f"census2020/{fname} (built-in '{name}')"
    declared = _declared_totals().get(fname)
    return _parse_csv(
        text,
        source,
        name=name,
        provenance=f"US Census Bureau 2020 production DAS allocation, optimizer/data/census2020/{fname} "
        "(see that folder's README for the source commits)",
        run_type=run_type,
        declared_total=declared,
        declared_where=("census2020/totals.csv", "rho_exact"),
    )


@cache
def _declared_totals() -> dict[str, Fraction]:
    text = _DATA.joinpath("census2020", "totals.csv").read_text(encoding="utf-8")
    totals: dict[str, Fraction] = {}
    reader = csv.DictReader(io.StringIO(text))
    for row in reader:
        if row.get("allocation_file"):
            try:
                totals[row["allocation_file"]] = Fraction(row["rho_exact"])
            except (ValueError, ZeroDivisionError):
                raise AllocationError(
                    "census2020/totals.csv",
                    reader.line_num,
                    "rho_exact",
                    f"cannot parse {row['rho_exact']!r} as an exact rational",
                ) from None
    return totals


# ====================================================================== parsing
class _Record(NamedTuple):
    geolevel: str
    query: str
    raw: object
    line: int | None
    field: str


def _read(path_or_text: str | Path, kind: str) -> tuple[str, str, str]:
    """Return (text, source label, stem)."""
    if isinstance(path_or_text, Path) or (isinstance(path_or_text, str) and "\n" not in path_or_text):
        path = Path(path_or_text)
        if not path.is_file():
            raise ValueError(f"Allocation.from_{kind}: no such file {str(path)!r}")
        return _decode(path.read_bytes(), str(path)), str(path), path.stem
    if isinstance(path_or_text, str):
        return path_or_text, f"<{kind} text>", "allocation"
    raise TypeError(f"Allocation.from_{kind}: expected a path or text, got {type(path_or_text).__name__}")


def _decode(data: bytes, source: str) -> str:
    """UTF-8 text of an allocation file (a BOM is dropped); a non-UTF-8 file is refused naming
    the file, the line and the column of the first bad byte."""
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise AllocationError(
            source,
            line,
            None,
            f"not UTF-8 text (byte 0x{data[exc.start]:02x} at column {column}); an allocation "
            "file must be UTF-8 (CSV with columns geolevel,query,rho_exact, or TOML)",
        ) from None


def _excerpt(text: str, n: int = 40) -> str:
    """A short, escaped excerpt of arbitrary text for an error message (never the whole line)."""
    cut = text[:n]
    return ascii(cut)[1:-1].replace("<", "\\x3c").replace(">", "\\x3e") + ("…" if len(text) > n else "")


def _check_rho_range(value: Fraction, raw: object, source: str, line: int | None, field: str) -> None:
    """A measured query's ρ must give σ² = 1/ρ inside the accountant's supported range."""
    lo, hi = 1 / SIGMA2_MAX, 1 / SIGMA2_MIN
    if not lo <= value <= hi:
        shown = raw if isinstance(raw, str) and len(raw) <= 40 else _excerpt(str(raw))
        raise AllocationError(
            source,
            line,
            field,
            f"rho {shown} is outside the supported range [{lo}, {hi}] (the accountant "
            f"handles sigma^2 = 1/rho in [{SIGMA2_MIN}, {SIGMA2_MAX}])",
        )


def _parse_rho(raw: object, source: str, line: int | None, field: str) -> Fraction:
    if isinstance(raw, float):
        raise AllocationError(
            source,
            line,
            field,
            f"got float {raw!r}; floats are not exact, write the budget as a string like '73/10000'",
        )
    try:
        value = to_fraction(raw, name="rho")
    except (TypeError, ValueError):
        raise AllocationError(source, line, field, f"cannot parse {raw!r} as an exact rational") from None
    if value <= 0:
        raise AllocationError(source, line, field, f"rho must be > 0 for a measured query, got {raw!r}")
    return value


def _resolve_run_type(
    geolevels: list[str], first_line: dict[str, int | None], run_type: str | None, source: str
) -> str | None:
    if run_type in (None, "custom"):
        return None
    if run_type == "auto":
        complete = [rt for rt, known in RUN_TYPES.items() if all(g in known for g in geolevels)]
        best = complete[0] if complete else max(RUN_TYPES, key=lambda rt: sum(g in RUN_TYPES[rt] for g in geolevels))
        if not any(g in RUN_TYPES[best] for g in geolevels):
            return None  # a custom geography: nothing to check against
        run_type = best
    if run_type not in RUN_TYPES:
        raise ValueError(
            f"{source}: unknown run_type {run_type!r}; expected 'auto', 'custom', None or one of {sorted(RUN_TYPES)}"
        )
    known = RUN_TYPES[run_type]
    for g in geolevels:
        if g not in known:
            raise AllocationError(
                source,
                first_line[g],
                "geolevel",
                f"unknown geolevel {g!r} for run type {run_type!r} (known: {', '.join(known)}); "
                "pass run_type=None for a custom geography",
            )
    expected = sorted(geolevels, key=known.index)
    for got, want in zip(geolevels, expected):
        if got != want:
            raise AllocationError(
                source,
                first_line[got],
                "geolevel",
                f"geolevel {got!r} is out of order: run type {run_type!r} is top-down "
                f"{', '.join(known)}; expected {want!r} here",
            )
    return run_type


def _build(
    records: Iterable[_Record],
    source: str,
    *,
    name: str,
    provenance: str,
    run_type: str | None,
    declared_total: object | None = None,
    declared_where: tuple[str, str] | None = None,
) -> Allocation:
    """Validate located records and assemble the allocation."""
    order: list[str] = []
    first_line: dict[str, int | None] = {}
    per_level: dict[str, dict[str, Fraction]] = {}
    seen: dict[tuple[str, str], int | None] = {}
    for rec in records:
        geo = rec.geolevel.strip() if isinstance(rec.geolevel, str) else rec.geolevel
        query = rec.query.strip() if isinstance(rec.query, str) else rec.query
        if not isinstance(geo, str) or not geo:
            raise AllocationError(source, rec.line, "geolevel", f"empty or invalid geolevel name {rec.geolevel!r}")
        if not isinstance(query, str) or not query:
            raise AllocationError(source, rec.line, "query", f"empty or invalid query name {rec.query!r}")
        value = _parse_rho(rec.raw, source, rec.line, rec.field)
        _check_rho_range(value, rec.raw, source, rec.line, rec.field)
        key = (geo, query)
        if key in seen:
            prev = f" (first at line {seen[key]})" if seen[key] is not None else ""
            raise AllocationError(source, rec.line, "query", f"duplicate (geolevel, query) {key!r}{prev}")
        seen[key] = rec.line
        if geo not in per_level:
            order.append(geo)
            first_line[geo] = rec.line
            per_level[geo] = {}
        per_level[geo][query] = value
    if not order:
        raise AllocationError(source, None, None, "no budgets found")
    resolved = _resolve_run_type(order, first_line, run_type, source)
    levels = tuple(GeolevelBudget(g, tuple(per_level[g]), tuple(per_level[g].values())) for g in order)
    alloc = Allocation(levels, name, provenance, resolved)
    if declared_total is not None:
        declared = to_fraction(declared_total, name="declared_total")
        if alloc.total_rho != declared:
            where_src, where_field = declared_where or (source, "total_rho")
            raise AllocationError(
                where_src,
                None,
                where_field,
                f"declared total rho {declared} does not match the sum of the budgets in {source}, {alloc.total_rho}",
            )
    return alloc


def _parse_csv(
    text: str,
    source: str,
    *,
    name: str,
    provenance: str,
    run_type: str | None,
    declared_total: object | None,
    declared_where: tuple[str, str] | None = None,
) -> Allocation:
    reader = csv.DictReader(io.StringIO(text))
    try:
        header = reader.fieldnames or []
    except csv.Error as exc:
        raise _csv_error(exc, text, source, reader.line_num + 1, []) from None
    missing = [c for c in _CSV_REQUIRED if c not in header]
    if missing:
        # the file's own text is never quoted: it may be any file, e.g. one given by mistake
        present = [c for c in _CSV_REQUIRED if c in header]
        raise AllocationError(
            source,
            1,
            missing[0],
            f"not an allocation CSV: missing required column(s) {', '.join(missing)} (the header "
            f"must include {','.join(_CSV_REQUIRED)}; line 1 has {len(header)} column(s)"
            + (f", among them {', '.join(present)})" if present else ", none of them required)"),
        )
    dupcols = {c for c in header if header.count(c) > 1}
    if dupcols:
        raise AllocationError(source, 1, sorted(dupcols)[0], "duplicate column name in header")
    rows: list[tuple[int, dict[str, str]]] = []
    records: list[_Record] = []
    rows_in = iter(reader)
    while True:
        try:
            row = next(rows_in)
        except StopIteration:
            break
        except csv.Error as exc:  # e.g. a field over csv's size limit: located, never quoted
            raise _csv_error(exc, text, source, reader.line_num + 1, header) from None
        line = reader.line_num
        if None in row:
            raise AllocationError(source, line, None, f"more fields than the {len(header)} header columns")
        if all((v is None or not v.strip()) for v in row.values()):
            continue
        absent = [c for c, v in row.items() if v is None]
        if absent:
            raise AllocationError(source, line, absent[0], f"row has fewer fields than the header (missing {absent})")
        rows.append((line, row))
        records.append(_Record(row["geolevel"], row["query"], row["rho_exact"].strip(), line, "rho_exact"))
    alloc = _build(
        records,
        source,
        name=name,
        provenance=provenance,
        run_type=run_type,
        declared_total=declared_total,
        declared_where=declared_where,
    )
    _check_declared_columns(alloc, rows, source)
    return alloc


def _csv_error(exc: csv.Error, text: str, source: str, line: int, header: Sequence[str]) -> AllocationError:
    """csv's own error (no file, no line) as a located one: the file, the line (``line``: the one
    being read, one past csv's ``line_num``) and, for a field over csv's size limit, the column (the
    first field on that line longer than the limit)."""
    limit = csv.field_size_limit()
    field = None
    if "field limit" in str(exc):
        lines = text.split("\n", line)
        raw = lines[line - 1] if 0 < line <= len(lines) else ""
        for i, piece in enumerate(raw.split(",")):
            if len(piece) > limit:
                field = header[i] if i < len(header) else f"column {i + 1}"
                break
        return AllocationError(
            source,
            line,
            field,
            f"a field is longer than the CSV limit of {limit} characters ({exc}); not an allocation CSV",
        )
    return AllocationError(source, line, field, f"cannot read the line as CSV ({exc})")


def _check_declared_columns(alloc: Allocation, rows: list[tuple[int, dict[str, str]]], source: str) -> None:
    """Check the optional derived columns of the Census-data CSV against ``rho_exact``."""
    if not rows or not any(c in rows[0][1] for c in (*_EXACT_DERIVED, "rho", "sigma_sq")):
        return  # only the required columns: nothing derived to check
    total = alloc.total_rho
    gtot = alloc.geolevel_totals()
    lookup = {(g, q): r for g, q, r in alloc.items()}  # one dict, not a per-row search (linear load)
    for line, row in rows:
        g, q = row["geolevel"].strip(), row["query"].strip()
        rho = lookup[(g, q)]
        # four exact divisions per row (rho > 0, so none divides by zero)
        exact = {
            "rho_fraction_of_total": rho / total,
            "geolevel_fraction_of_total": gtot[g] / total,
            "query_fraction_within_geolevel": rho / gtot[g],
            "sigma_sq_exact": 1 / rho,
        }
        for col, want in exact.items():
            text = (row.get(col) or "").strip()
            if not text:
                continue
            try:
                got = Fraction(text)
            except (ValueError, ZeroDivisionError):
                raise AllocationError(source, line, col, f"cannot parse {text!r} as an exact rational") from None
            if got != want:
                raise AllocationError(
                    source, line, col, f"declared {got} does not add up: rho_exact and the file's totals give {want}"
                )
        for col, want in (("rho", rho), ("sigma_sq", 1 / rho)):
            text = (row.get(col) or "").strip()
            if not text:
                continue
            try:
                got_f = float(text)
            except ValueError:
                raise AllocationError(source, line, col, f"cannot parse {text!r} as a decimal number") from None
            if not math.isfinite(got_f) or abs(got_f - float(want)) > _DECIMAL_RTOL * abs(float(want)):
                raise AllocationError(
                    source, line, col, f"decimal {text} disagrees with the exact value {want} (= {float(want):.10g})"
                )


class _TomlLocator:
    """Best-effort line numbers for keys of the ``[[geolevel]]`` tables (tomllib has none)."""

    def __init__(self, text: str):
        self.lines = text.splitlines()
        self.starts = [i for i, ln in enumerate(self.lines) if ln.strip().startswith("[[geolevel]]")]

    def line(self, level_index: int | None, key: str | None = None) -> int | None:
        if level_index is None:
            lo, hi = 0, (self.starts[0] if self.starts else len(self.lines))
        elif level_index < len(self.starts):
            lo = self.starts[level_index]
            hi = self.starts[level_index + 1] if level_index + 1 < len(self.starts) else len(self.lines)
        else:
            return None
        if key is None:
            return lo + 1
        return toml_key_line(self.lines, key, lo, hi)


def _parse_toml(text: str, source: str, stem: str, run_type: str | None) -> Allocation:
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise AllocationError(source, None, None, f"invalid TOML: {exc}") from None
    loc = _TomlLocator(text)
    unknown = sorted(set(doc) - _TOML_TOP_KEYS)
    if unknown:
        raise AllocationError(
            source, loc.line(None, unknown[0]), unknown[0], f"unknown key; allowed keys are {sorted(_TOML_TOP_KEYS)}"
        )
    for key in ("name", "provenance", "run_type"):
        if key in doc and not isinstance(doc[key], str):
            raise AllocationError(source, loc.line(None, key), key, f"must be a string, got {doc[key]!r}")
    if "run_type" in doc:
        run_type = doc["run_type"]
        if run_type not in (*RUN_TYPES, "custom", "auto"):
            raise AllocationError(
                source,
                loc.line(None, "run_type"),
                "run_type",
                f"unknown run type {run_type!r}; expected one of {sorted(RUN_TYPES)}, 'custom' or 'auto'",
            )
    levels = doc.get("geolevel")
    if not isinstance(levels, list) or not levels:
        raise AllocationError(source, None, "geolevel", "expected at least one [[geolevel]] table")
    records, level_totals = _toml_levels(levels, source, loc)
    alloc = _build(
        records,
        source,
        name=doc.get("name", stem),
        provenance=doc.get("provenance", f"loaded from {source}"),
        run_type=run_type,
    )
    _check_declared_totals(alloc, doc, level_totals, source, loc)
    return alloc


def _toml_levels(levels: list, source: str, loc) -> tuple[list[_Record], list[tuple[int, str, object]]]:
    """The ``[[geolevel]]`` tables as query records, each located, and the declared level totals."""
    records: list[_Record] = []
    level_totals: list[tuple[int, str, object]] = []
    first_table: dict[str, int] = {}
    for i, lv in enumerate(levels):
        where = loc.line(i)
        if not isinstance(lv, dict):
            raise AllocationError(source, where, f"geolevel[{i}]", "must be a table")
        extra = sorted(set(lv) - _TOML_LEVEL_KEYS)
        if extra:
            raise AllocationError(
                source,
                loc.line(i, extra[0]),
                f"geolevel[{i}].{extra[0]}",
                f"unknown key; allowed keys are {sorted(_TOML_LEVEL_KEYS)}",
            )
        gname = lv.get("name")
        if not isinstance(gname, str) or not gname.strip():
            raise AllocationError(
                source,
                loc.line(i, "name") or where,
                f"geolevel[{i}].name",
                f"must be a non-empty string, got {gname!r}",
            )
        if gname.strip() in first_table:  # two tables of one geolevel would be merged silently
            j = first_table[gname.strip()]
            raise AllocationError(
                source,
                where,
                f"geolevel[{i}].name",
                f"duplicate [[geolevel]] {gname.strip()!r} (first defined by the table at line "
                f"{loc.line(j)}, geolevel[{j}]); give each geolevel one table",
            )
        first_table[gname.strip()] = i
        queries = lv.get("queries")
        if not isinstance(queries, dict) or not queries:
            raise AllocationError(
                source,
                loc.line(i, "queries") or where,
                f"geolevel[{i}].queries",
                f'geolevel {gname!r} needs a non-empty table of query = "rho"',
            )
        for q, raw in queries.items():
            records.append(_Record(gname, q, raw, loc.line(i, q), f"geolevel[{i}].queries.{q!r} ({gname})"))
        if "total_rho" in lv:
            level_totals.append((i, gname, lv["total_rho"]))
    return records, level_totals


def _check_declared_totals(alloc: Allocation, doc: dict, level_totals, source: str, loc) -> None:
    """A declared ``total_rho`` (per level, or of the whole file) must equal the sum of the budgets."""
    for i, gname, raw in level_totals:
        field = f"geolevel[{i}].total_rho ({gname})"
        declared = _parse_rho(raw, source, loc.line(i, "total_rho"), field)
        actual = alloc.level(gname.strip()).total
        if declared != actual:
            raise AllocationError(
                source,
                loc.line(i, "total_rho"),
                field,
                f"declared {declared} does not add up: the queries sum to {actual}",
            )
    if "total_rho" in doc:
        declared = _parse_rho(doc["total_rho"], source, loc.line(None, "total_rho"), "total_rho")
        if declared != alloc.total_rho:
            raise AllocationError(
                source,
                loc.line(None, "total_rho"),
                "total_rho",
                f"declared {declared} does not add up: the budgets sum to {alloc.total_rho}",
            )


def _tq(s: str) -> str:
    """A TOML basic string (JSON string escapes are valid TOML escapes)."""
    return json.dumps(s, ensure_ascii=False)


def _append(provenance: str, note: str) -> str:
    return f"{provenance}; {note}" if provenance else note
