"""Scenario files: what to promise, what to optimise for — pure data, validated on load.

A scenario is a small TOML file (the built-in ones in ``scenarios/``) (numbers that matter are exact strings)::

    name = "dhc-persons"               # must match the file stem for built-in scenarios
    description = "free text"
    allocation = "dhc-persons"         # a built-in allocation name, or a path to an
                                       # allocation .csv/.toml (relative to the scenario file)
    conversion = "bun-steinke"         # the zCDP -> (ε, δ) conversion being promised: "bun-steinke" | "cks"
    target_delta = "1e-10"             # exact decimal or fraction string, 0 < δ < 1
    trials = 30                        # Optuna trials when the search runs (positive int; see search)
    seed = 20201                       # optimizer seed (int >= 0)
    objective = "mean-relative-variance"  # optional: minimax-relative | mean-relative-variance | sum-variance |
                                       # published-variance
                                       # (optimizer.search.objectives; default mean-relative-variance)
    pareto = true                      # optional: no query noisier than in the allocation (default true)
    pareto_floor_percent = "0"         # optional: every query's variance lower by at least this % (exact)
    target = "point"                   # optional: "point" (ε of the conversion at target_delta, the
                                       # default), "curve" (that ε(δ) at every δ of curve_deltas) or
                                       # "per-geolevel" (every geolevel's own ε at target_delta)
    curve_deltas = ["1e-1", "1e-15"]   # optional, with target = "curve": the δ grid (exact strings;
                                       # default 1e-1, 1e-2, …, 1e-15)
    search = "auto"                    # optional: the Optuna search around the convex optimum: "auto" (only
                                       # for an objective that is not convex: none today), "optuna", "none"
    neighbour_model = "census"         # optional: "census" (σ² = 1/ρ, a replaced record shifts each query
                                       # twice) or "su2024" (σ² = 1/(2ρ), one shift: arXiv 2410.09296) in
                                       # the per-geolevel view (optimizer.search.geolevels)

    [weights]                          # optional; exact fraction strings > 0, default weight 1
    geolevel = { Block = "10" }        # geolevel name -> weight
    query = { "hispanic * sex" = "2" } # query name (at every geolevel) -> weight

    [fan_outs]                         # optional: the hierarchy of the published-variance objective
    source = "where the counts come from"  # required; cited in the report
    assumptions = "which counts are assumed"  # optional
    counts = { US = "1", State = "51", County = "3143" }  # units per geolevel, top-down, exact
                                       # (default: the 2020 tallies, optimizer.search.published_variance)

Every problem raises :class:`ScenarioError` (a ``ValueError``) naming the file, the line and
the key.

>>> s = load_scenario("dhc-persons")
>>> s.allocation, s.conversion, s.target_delta, s.trials, s.seed
('dhc-persons', 'bun-steinke', Fraction(1, 10000000000), 30, 20201)
>>> load_scenario("dhc-persons-favour-block").geolevel_weight("Block")
Fraction(10, 1)
"""

from __future__ import annotations

import hashlib
import re
import tomllib
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import scenarios
from accountant import zcdp as _zcdp
from accountant.exact import to_fraction
from optimizer.census.allocation import BUILTIN_NAMES, Allocation, load_builtin
from optimizer.located import LocatedError, toml_key_line
from optimizer.search.curve_target import default_curve_deltas
from optimizer.search.objectives import DEFAULT_OBJECTIVE, OBJECTIVES
from optimizer.search.published_variance import FanOuts

__all__ = [
    "SCENARIO_DIR",
    "TARGET_DELTA_MIN",
    "Scenario",
    "ScenarioError",
    "check_target_delta",
    "list_scenarios",
    "load_scenario",
    "parse_scenario",
]

#: the built-in scenarios: the TOML files of the ``scenarios`` package (data only)
SCENARIO_DIR = Path(scenarios.__file__).resolve().parent
_TOP_KEYS = (
    "name",
    "description",
    "allocation",
    "conversion",
    "target_delta",
    "trials",
    "seed",
    "objective",
    "pareto",
    "pareto_floor_percent",
    "target",
    "curve_deltas",
    "weights",
    "fan_outs",
    "neighbour_model",
    "search",
)
#: neighbour models a scenario may name (:data:`optimizer.search.geolevels.NEIGHBOUR_MODELS`)
NEIGHBOUR_MODEL_NAMES = ("census", "su2024")
_FAN_OUT_KEYS = ("source", "assumptions", "counts")
_REQUIRED = ("name", "allocation", "conversion", "target_delta", "trials", "seed")
_WEIGHT_KEYS = ("geolevel", "query")
#: supported target δ: [TARGET_DELTA_MIN, 1).  The accountant's δ(ε) has full precision far above its
#: floor of ~1e-300 (below it only the bound [0, e^{-k²/2v}] is known, so ε(δ) and the all-pairs
#: confirmation cannot work there: δ = 1e-300 ended in SieveTooWide, 1e-400 in a math domain error).
TARGET_DELTA_MIN = Fraction(1, 10**100)
#: supported weights [WEIGHT_MIN, WEIGHT_MAX]: the optimizer's objective Σ w·σ² is evaluated in
#: double precision (a weight of 1e-400 would be 0.0 there).
WEIGHT_MIN, WEIGHT_MAX = Fraction(1, 10**100), Fraction(10**100)
_FRACTION_RE = re.compile(r"^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?(\s*/\s*\d+)?\s*$")


class ScenarioError(LocatedError):
    """Invalid scenario; ``source``, ``line`` and ``key`` locate the problem
    (:class:`optimizer.located.LocatedError`)."""

    noun = "key"

    @property
    def key(self) -> str | None:
        return self.field


@dataclass(frozen=True)
class Scenario:
    """A validated scenario (immutable, hashable).

    Attributes:
        name, description: identification.
        allocation: built-in allocation name or path of an allocation file.
        conversion: ``"bun-steinke"`` or ``"cks"``.
        target_delta: exact δ (``Fraction``); ``target_delta_text`` is the string as written.
        trials, seed: optimizer settings.
        objective, pareto, pareto_floor_percent: what the optimizer minimises and its guard
            (:mod:`optimizer.search.objectives`).
        geolevel_weights, query_weights: ``((name, weight), …)`` sorted by name.
        fan_outs: the scenario's :class:`optimizer.search.published_variance.FanOuts` (``None``: the
            shipped 2020 ones); checked against the allocation's geolevels on load.
        target_kind: ``"point"`` (the promise at ``target_delta``), ``"curve"`` (the promise at
            every δ of ``curve_deltas``, :mod:`optimizer.search.curve_target`) or ``"per-geolevel"``
            (every geolevel's own promise at ``target_delta``, :mod:`optimizer.search.per_geolevel`).
        curve_deltas: the curve's δ grid as written (empty for a point target).
        search: ``"auto"``, ``"optuna"`` or ``"none"``: whether the Optuna search runs around the
            calibrated convex optimum (``auto``: only for an objective that is not convex).
        neighbour_model: how one record's change moves each query's noise in the per-geolevel view
            (:mod:`optimizer.search.geolevels`): ``"census"`` (σ² = 1/ρ, two unit shifts per query: a
            replaced record) or ``"su2024"`` (σ² = 1/(2ρ), one shift: the earlier paper's model).
        source: the file it was read from (``"<text>"`` for text).
        sha256: hash of the file's bytes (provenance).
    """

    name: str
    description: str
    allocation: str
    conversion: str
    target_delta: Fraction
    target_delta_text: str
    trials: int
    seed: int
    geolevel_weights: tuple[tuple[str, Fraction], ...] = ()
    query_weights: tuple[tuple[str, Fraction], ...] = ()
    objective: str = "mean-relative-variance"
    pareto: bool = True
    pareto_floor_percent: Fraction = Fraction(0)
    fan_outs: Any = None
    target_kind: str = "point"
    curve_deltas: tuple[str, ...] = ()
    neighbour_model: str = "census"
    search: str = "auto"
    source: str = field(default="<text>", compare=False)
    sha256: str = field(default="", compare=False)

    def geolevel_weight(self, geolevel: str) -> Fraction:
        """Weight of a geolevel (1 unless listed)."""
        return dict(self.geolevel_weights).get(geolevel, Fraction(1))

    def query_weight(self, query: str) -> Fraction:
        """Weight of a query (1 unless listed)."""
        return dict(self.query_weights).get(query, Fraction(1))

    def weight(self, geolevel: str, query: str) -> Fraction:
        """Weight of one measurement: geolevel weight × query weight."""
        return self.geolevel_weight(geolevel) * self.query_weight(query)

    @property
    def equal_weights(self) -> bool:
        return all(w == 1 for _, w in self.geolevel_weights + self.query_weights)

    def load_allocation(self):
        """The :class:`optimizer.census.allocation.Allocation` this scenario tunes (weights validated)."""
        if self.allocation in BUILTIN_NAMES:
            alloc = load_builtin(self.allocation)
        else:
            path = Path(self.allocation)
            if not path.is_absolute() and self.source not in ("<text>", ""):
                path = Path(self.source).parent / path
            alloc = Allocation.from_toml(path) if path.suffix == ".toml" else Allocation.from_csv(path)
        self._check_weights(alloc)
        if self.fan_outs is not None:
            try:
                self.fan_outs.restrict(alloc.geolevels)
            except ValueError as exc:
                raise ScenarioError(
                    self.source, None, "fan_outs.counts", f"{exc} (allocation '{self.allocation}')"
                ) from None
        return alloc

    def _check_weights(self, alloc) -> None:
        for g, _ in self.geolevel_weights:
            if g not in alloc.geolevels:
                raise ScenarioError(
                    self.source,
                    None,
                    f"weights.geolevel.{g}",
                    f"unknown geolevel for allocation '{self.allocation}' (known: {', '.join(alloc.geolevels)})",
                )
        queries = {q for _, q, _ in alloc.items()}
        for q, _ in self.query_weights:
            if q not in queries:
                raise ScenarioError(
                    self.source, None, f"weights.query.{q}", f"unknown query for allocation '{self.allocation}'"
                )

    def as_dict(self) -> dict:
        """JSON-ready view (exact numbers as strings)."""
        out = {
            "name": self.name,
            "description": self.description,
            "allocation": self.allocation,
            "conversion": self.conversion,
            "target_delta": self.target_delta_text,
            "trials": self.trials,
            "seed": self.seed,
            "objective": self.objective,
            "pareto": self.pareto,
            "pareto_floor_percent": str(self.pareto_floor_percent),
            "weights": {
                "geolevel": {k: str(v) for k, v in self.geolevel_weights},
                "query": {k: str(v) for k, v in self.query_weights},
            },
        }
        if self.fan_outs is not None:  # only when given: existing scenarios keep their config hash
            out["fan_outs"] = self.fan_outs.as_dict()
        if self.target_kind != "point":  # likewise
            out["target"] = self.target_kind
            out["curve_deltas"] = list(self.curve_deltas)
        if self.neighbour_model != "census":  # likewise
            out["neighbour_model"] = self.neighbour_model
        if self.search != "auto":  # likewise
            out["search"] = self.search
        return out


def _line_of(lines: list[str], key: str, section: str | None = None) -> int | None:
    """Best-effort 1-based line of ``key = …`` (inside ``[section]`` when given)."""
    lo, hi = 0, len(lines)
    if section is not None:
        starts = [i for i, ln in enumerate(lines) if ln.strip().startswith(f"[{section}]")]
        if starts:
            lo = starts[0]
            nxt = [i for i, ln in enumerate(lines) if i > lo and re.match(r"\s*\[", ln)]
            hi = nxt[0] if nxt else len(lines)
    found = toml_key_line(lines, key, lo, hi)
    if found is None and section is not None:  # dotted keys: weights.geolevel = …
        found = toml_key_line(lines, key)
    return found


def _fraction(raw, source: str, line, key: str, *, positive: bool = True) -> Fraction:
    if isinstance(raw, bool) or not isinstance(raw, (str, int)):
        kind = "a float" if isinstance(raw, float) else type(raw).__name__
        raise ScenarioError(
            source, line, key, f'must be an exact fraction string such as "10" or "1/3", got {kind} {raw!r}'
        )
    if isinstance(raw, str) and not _FRACTION_RE.match(raw):
        raise ScenarioError(source, line, key, f"not an exact fraction/decimal string: {raw!r}")
    try:
        value = to_fraction(raw.replace(" ", "") if isinstance(raw, str) else raw, name=key)
    except (TypeError, ValueError) as exc:
        raise ScenarioError(source, line, key, f"bad fraction {raw!r}: {exc}") from None
    if positive and value <= 0:
        raise ScenarioError(source, line, key, f"must be > 0, got {raw!r}")
    return value


def check_target_delta(delta: Fraction, raw, source: str, line: int | None, key: str | None) -> None:
    """Refuse a target δ below :data:`TARGET_DELTA_MIN` (one line naming the value and the range)."""
    if not TARGET_DELTA_MIN <= delta < 1:
        raise ScenarioError(
            source,
            line,
            key,
            f"target delta {raw} is outside the supported range [1e-100, 1): "
            "exact delta(eps) is computed to full precision only far above the "
            "accountant's floor of ~1e-300",
        )


def _name_and_conversion(doc: dict, lines: list[str], source: str, expect_name: str | None) -> tuple[str, str]:
    """The scenario's name (a folder-safe word, matching the file name when one is expected) and
    conversion; the string keys must be non-empty strings."""
    for key in ("name", "description", "allocation", "conversion"):
        if key in doc and (not isinstance(doc[key], str) or (key != "description" and not doc[key].strip())):
            raise ScenarioError(source, _line_of(lines, key), key, f"must be a non-empty string, got {doc[key]!r}")
    name = doc["name"].strip()
    if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]*", name):
        raise ScenarioError(
            source,
            _line_of(lines, "name"),
            "name",
            f"use letters, digits, '.', '_' and '-' only (it names output folders), got {name!r}",
        )
    if expect_name is not None and name != expect_name:
        raise ScenarioError(
            source, _line_of(lines, "name"), "name", f"must match the file name '{expect_name}', got {name!r}"
        )
    conversion = doc["conversion"].strip().lower()
    if conversion not in _zcdp.CONVERSIONS:
        raise ScenarioError(
            source,
            _line_of(lines, "conversion"),
            "conversion",
            f"unknown conversion {doc['conversion']!r}; expected one of {', '.join(_zcdp.CONVERSIONS)}",
        )
    return name, conversion


def _objective_and_guard(doc: dict, lines: list[str], source: str) -> tuple[str, bool, Fraction]:
    """The objective (one of :data:`optimizer.search.objectives.OBJECTIVES`), the Pareto guard and its floor."""
    objective = doc.get("objective", DEFAULT_OBJECTIVE)
    if not isinstance(objective, str) or objective.strip() not in OBJECTIVES:
        raise ScenarioError(
            source,
            _line_of(lines, "objective"),
            "objective",
            f"unknown objective {objective!r}; expected one of {', '.join(OBJECTIVES)}",
        )
    pareto = doc.get("pareto", True)
    if not isinstance(pareto, bool):
        raise ScenarioError(source, _line_of(lines, "pareto"), "pareto", f"must be true or false, got {pareto!r}")
    fline = _line_of(lines, "pareto_floor_percent")
    floor = _fraction(doc.get("pareto_floor_percent", "0"), source, fline, "pareto_floor_percent", positive=False)
    if not 0 <= floor < 100:
        raise ScenarioError(
            source, fline, "pareto_floor_percent", f"must be in [0, 100), got {doc['pareto_floor_percent']!r}"
        )
    if "pareto_floor_percent" in doc and not pareto:
        raise ScenarioError(source, fline, "pareto_floor_percent", "is given but pareto = false; set pareto = true")
    return objective, pareto, floor


def _only_known_keys(table: dict, allowed, section: str, lines: list[str], source: str) -> None:
    """A one-line :class:`ScenarioError` at the first key of ``[section]`` not in ``allowed``."""
    for k in table:
        if k not in allowed:
            raise ScenarioError(
                source,
                _line_of(lines, k, section),
                f"{section}.{k}",
                f"unknown key; allowed keys are {', '.join(allowed)}",
            )


def _parse_weights(doc: dict, lines: list[str], source: str) -> dict[str, tuple[tuple[str, Fraction], ...]]:
    """``[weights]``: ``{"geolevel" | "query": ((name, weight), ...)}``, each weight exact and within
    [WEIGHT_MIN, WEIGHT_MAX]."""
    weights = doc.get("weights", {})
    if not isinstance(weights, dict):
        raise ScenarioError(source, _line_of(lines, "weights"), "weights", "must be a table")
    parsed: dict[str, tuple[tuple[str, Fraction], ...]] = {}
    _only_known_keys(weights, _WEIGHT_KEYS, "weights", lines, source)
    for wkey, table in weights.items():
        if not isinstance(table, dict):
            raise ScenarioError(
                source, _line_of(lines, wkey, "weights"), f"weights.{wkey}", 'must be a table of name = "weight"'
            )
        items = []
        for k, raw in table.items():
            wline, wfield = _line_of(lines, k, "weights"), f"weights.{wkey}.{k}"
            w = _fraction(raw, source, wline, wfield)
            if not WEIGHT_MIN <= w <= WEIGHT_MAX:
                raise ScenarioError(
                    source,
                    wline,
                    wfield,
                    f"weight {raw!r} is > 0 but outside the supported range [1e-100, 1e100] (the "
                    "optimizer's objective sum of w * sigma^2 is evaluated in double precision)",
                )
            items.append((k, w))
        parsed[wkey] = tuple(sorted(items))
    return parsed


def parse_scenario(text: str, source: str = "<text>", *, expect_name: str | None = None) -> Scenario:
    """Validate scenario TOML text (see the module docstring for the schema)."""
    lines = text.splitlines()
    try:
        doc = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        m = re.search(r"line (\d+)", str(exc))
        raise ScenarioError(source, int(m.group(1)) if m else None, None, f"invalid TOML: {exc}") from None
    for key in doc:
        if key not in _TOP_KEYS:
            raise ScenarioError(
                source, _line_of(lines, key), key, f"unknown key; allowed keys are {', '.join(_TOP_KEYS)}"
            )
    for key in _REQUIRED:
        if key not in doc:
            raise ScenarioError(source, None, key, "required key is missing")
    name, conversion = _name_and_conversion(doc, lines, source, expect_name)
    dline = _line_of(lines, "target_delta")
    delta = _fraction(doc["target_delta"], source, dline, "target_delta")
    if not delta < 1:
        raise ScenarioError(source, dline, "target_delta", f"must be in (0, 1), got {doc['target_delta']!r}")
    check_target_delta(delta, doc["target_delta"], source, dline, "target_delta")
    ints = {}
    for key, lo in (("trials", 1), ("seed", 0)):
        v = doc[key]
        if isinstance(v, bool) or not isinstance(v, int) or v < lo:
            raise ScenarioError(source, _line_of(lines, key), key, f"must be an integer >= {lo}, got {v!r}")
        ints[key] = v
    objective, pareto, floor = _objective_and_guard(doc, lines, source)
    target_kind, curve_deltas = _parse_target(doc, lines, source)
    parsed = _parse_weights(doc, lines, source)
    return Scenario(
        name=name,
        description=doc.get("description", "").strip(),
        allocation=doc["allocation"].strip(),
        conversion=conversion,
        target_delta=delta,
        target_delta_text=str(doc["target_delta"]).strip(),
        trials=ints["trials"],
        seed=ints["seed"],
        geolevel_weights=parsed.get("geolevel", ()),
        query_weights=parsed.get("query", ()),
        objective=objective.strip(),
        pareto=pareto,
        pareto_floor_percent=floor,
        fan_outs=_parse_fan_outs(doc, lines, source) if "fan_outs" in doc else None,
        target_kind=target_kind,
        curve_deltas=curve_deltas,
        neighbour_model=_parse_neighbour_model(doc, lines, source),
        search=_parse_search(doc, lines, source),
        source=source,
        sha256=hashlib.sha256(text.encode()).hexdigest(),
    )


#: the kinds of promise a scenario can ask for
TARGET_KINDS = ("point", "curve", "per-geolevel")
#: the ``search`` key: when the Optuna search runs around the calibrated convex optimum
SEARCH_MODES = ("auto", "optuna", "none")


def _parse_neighbour_model(doc: dict, lines: list[str], source: str) -> str:
    """``neighbour_model`` (default ``"census"``), one of :data:`NEIGHBOUR_MODEL_NAMES`."""
    model = doc.get("neighbour_model", "census")
    if model not in NEIGHBOUR_MODEL_NAMES:
        raise ScenarioError(
            source,
            _line_of(lines, "neighbour_model"),
            "neighbour_model",
            f"unknown neighbour model {model!r}; expected one of {', '.join(NEIGHBOUR_MODEL_NAMES)}",
        )
    return model


def _parse_search(doc: dict, lines: list[str], source: str) -> str:
    """``search`` (default ``"auto"``), one of :data:`SEARCH_MODES`."""
    mode = doc.get("search", "auto")
    if mode not in SEARCH_MODES:
        raise ScenarioError(
            source,
            _line_of(lines, "search"),
            "search",
            f"unknown search {mode!r}; expected one of {', '.join(SEARCH_MODES)}",
        )
    return mode


def _parse_target(doc: dict, lines: list[str], source: str) -> tuple[str, tuple[str, ...]]:
    """``target`` and ``curve_deltas``: the kind of promise and the curve's δ grid (exact strings,
    each in the supported range, no repeats; default :func:`optimizer.search.curve_target.default_curve_deltas`)."""
    kind = doc.get("target", "point")
    tline = _line_of(lines, "target")
    if not isinstance(kind, str) or kind.strip() not in TARGET_KINDS:
        raise ScenarioError(
            source, tline, "target", f"unknown target {kind!r}; expected one of {', '.join(TARGET_KINDS)}"
        )
    kind = kind.strip()
    cline = _line_of(lines, "curve_deltas")
    if "curve_deltas" not in doc:
        return kind, (default_curve_deltas() if kind == "curve" else ())
    if kind != "curve":
        raise ScenarioError(source, cline, "curve_deltas", 'is given but target is not "curve"; set target = "curve"')
    raw = doc["curve_deltas"]
    if not isinstance(raw, list) or not raw:
        raise ScenarioError(source, cline, "curve_deltas", f"must be a non-empty list of δ strings, got {raw!r}")
    seen: set[Fraction] = set()
    out = []
    for k, item in enumerate(raw):
        key = f"curve_deltas[{k}]"
        if not isinstance(item, str):
            raise ScenarioError(source, cline, key, f'write δ as an exact string (e.g. "1e-12"), got {item!r}')
        d = _fraction(item, source, cline, key)
        if not d < 1:
            raise ScenarioError(source, cline, key, f"must be in (0, 1), got {item!r}")
        check_target_delta(d, item, source, cline, key)
        if d in seen:
            raise ScenarioError(source, cline, key, f"δ {item!r} is listed twice")
        seen.add(d)
        out.append(item.strip())
    return kind, tuple(sorted(out, key=lambda s: -_fraction(s, source, cline, "curve_deltas")))


def _parse_fan_outs(doc: dict, lines: list[str], source: str):
    """The ``[fan_outs]`` table as :class:`optimizer.search.published_variance.FanOuts` (one-line errors)."""
    table = doc["fan_outs"]
    header = next((i + 1 for i, ln in enumerate(lines) if ln.strip().startswith("[fan_outs]")), None)
    at = header or _line_of(lines, "fan_outs")
    if not isinstance(table, dict):
        raise ScenarioError(source, at, "fan_outs", "must be a table")
    _only_known_keys(table, _FAN_OUT_KEYS, "fan_outs", lines, source)
    for k in ("source", "assumptions"):
        if k in table and (not isinstance(table[k], str) or not table[k].strip()):
            raise ScenarioError(source, _line_of(lines, k, "fan_outs"), f"fan_outs.{k}", "must be a non-empty string")
    if "source" not in table:
        raise ScenarioError(source, at, "fan_outs.source", "is required: cite where the counts come from")
    counts = table.get("counts")
    cline = _line_of(lines, "counts", "fan_outs")
    if not isinstance(counts, dict) or len(counts) < 2:
        raise ScenarioError(
            source, cline, "fan_outs.counts", 'must be a table of at least two geolevel = "count" entries, top-down'
        )
    parsed = {g: _fraction(raw, source, cline, f"fan_outs.counts.{g}") for g, raw in counts.items()}
    try:
        return FanOuts.from_counts(parsed, table["source"].strip(), table.get("assumptions", "").strip())
    except ValueError as exc:
        raise ScenarioError(source, cline, "fan_outs.counts", str(exc)) from None


def list_scenarios(directory: str | Path | None = None) -> list[str]:
    """Names of the scenario files in ``directory`` (default: the built-in ``scenarios/``), sorted."""
    d = Path(directory) if directory is not None else SCENARIO_DIR
    return sorted(p.stem for p in d.glob("*.toml"))


def load_scenario(name_or_path: str | Path) -> Scenario:
    """Load a built-in scenario by name (``"dhc-persons"``) or any scenario file by path."""
    p = Path(name_or_path)
    if p.suffix == ".toml" or p.exists():
        if not p.is_file():
            raise FileNotFoundError(f"scenario file not found: {p}")
        path, expect = p, None
    else:
        path = SCENARIO_DIR / f"{name_or_path}.toml"
        if not path.is_file():
            raise ScenarioError(
                str(name_or_path), None, None, f"unknown scenario; known: {', '.join(list_scenarios())}"
            )
        expect = path.stem
    data = path.read_bytes()
    try:
        shown = str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        shown = str(path)
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ScenarioError(
            shown,
            data.count(b"\n", 0, exc.start) + 1,
            None,
            f"not UTF-8 text (byte 0x{data[exc.start]:02x}); a scenario file must be UTF-8 TOML",
        ) from None
    return parse_scenario(text, shown, expect_name=expect)
