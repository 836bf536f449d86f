"""The budget explorer's numbers: what one setting of the budgets guarantees, exactly.

A :class:`Setting` multiplies each query's baseline budget by a geolevel factor and a query factor
(ρ'_q = f_g·f_q·ρ_q, so σ'_q² = σ_q²/(f_g·f_q)). :func:`live` answers, from the exact accountant on
the proxy pair [M_full, M_full] (:func:`optimizer.search.proxy_composition`), everything the page
shows after a move, against a :class:`PagePromise` (the promise of the page's target controls: a
point (ε, δ) or a curve of them, through a zCDP conversion of the *baseline's* total ρ): the
certified δ at each promised ε (an interval, with whether it met its tolerance), the safe ε at the
promised δ, the total ρ, whether the promise is kept *on the proxy pair* (certified: every upper
bound of δ ≤ its promised δ), each geolevel's noise standard deviation in persons before and
after, and the (ε, δ) curves of the zCDP claim and of the exact mechanism. The f-DP trade-off
curve (arXiv 1905.02383) of the proxy pair comes from the same engine batch as the δ curve.
The all-pairs confirmation is a separate, slower step (:mod:`explorer.certify`).

Factors are exact: a float from a slider becomes a fraction on the grid 1/:data:`FACTOR_GRID`
(:func:`factor_from_slider`), a typed factor is parsed exactly (:func:`parse_factor`), and every
number is computed for exactly the allocation the page names. Bad input raises :class:`FieldError`
naming the field and the value, before any accounting.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from accountant.decimals import decimal_string
from accountant.exact import to_fraction
from accountant.zcdp import CONVERSIONS
from optimizer.census.allocation import Allocation
from optimizer.jobs.provenance import allocation_digest
from optimizer.scenario import TARGET_DELTA_MIN, Scenario
from optimizer.search import Target, proxy_composition, target_from_allocation, zcdp_claim_delta
from optimizer.search.curve_target import default_curve_deltas
from optimizer.search.proxy import mpf_to_fraction

__all__ = [
    "FACTOR_GRID",
    "FACTOR_RANGE",
    "SLIDER_RANGE",
    "FieldError",
    "Live",
    "PagePromise",
    "Setting",
    "factor_from_slider",
    "live",
    "parse_factor",
]

#: factors are multiples of 1/FACTOR_GRID: 5 % steps keep the composition's lattice small (the finer the
#: grid, the larger the denominators and the slower some moves; `python -m bench.explorer` times this grid)
FACTOR_GRID = 20
#: the slider's log10 range of a factor (0.1× … 10× the baseline budget) and its step (×1.12 a step:
#: above 1× every step lands on a new grid point)
SLIDER_RANGE = (-1.0, 1.0)
SLIDER_STEP = 0.05
#: a typed factor must lie in this range (exact; beyond it the page has nothing sensible to show)
FACTOR_RANGE = (Fraction(1, 1000), Fraction(1000))
#: tolerances of the live numbers: δ to 1e-35 absolute / 1e-12 relative, ε to 1e-12 relative, the
#: trade-off curve's vertices to 1e-12 absolute (it is drawn, never printed: floats of the midpoints)
DELTA_TOL, DELTA_RTOL, EPS_RTOL, TRADEOFF_TOL = 1e-35, 1e-12, 1e-12, 1e-12
#: ε grid of the live curves: this many points from 0.5 to 1.5 × the promised ε
CURVE_POINTS = 11
#: vertices of the live trade-off curve
TRADEOFF_POINTS = 41


class FieldError(ValueError):
    """Bad input in one field of the page: ``field`` names it, the message names the value."""

    def __init__(self, field_name: str, message: str):
        super().__init__(f"{field_name}: {message}")
        self.field = field_name


def factor_from_slider(value: Any, where: str = "factor") -> Fraction:
    """The exact factor 10^value rounded to the grid 1/:data:`FACTOR_GRID` (at least one step);
    a value that is not a finite number in :data:`SLIDER_RANGE` is refused (:class:`FieldError`)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise FieldError(where, f"expected a number, got {value!r}")
    lo, hi = SLIDER_RANGE
    if not lo <= value <= hi:
        raise FieldError(where, f"log10 value {value} outside [{lo}, {hi}]")
    return max(Fraction(round(10**value * FACTOR_GRID), FACTOR_GRID), Fraction(1, FACTOR_GRID))


def parse_factor(text: Any, where: str) -> Fraction:
    """A typed factor (``"3/2"``, ``"1.25"``, ``"2e-1"``) as an exact fraction in :data:`FACTOR_RANGE`;
    anything else is a :class:`FieldError` naming ``where`` and the text (a factor 0 is a budget of 0)."""
    raw = "" if text is None else str(text).strip()
    if not raw:
        raise FieldError(where, "empty; type a factor such as 1.5 or 3/2")
    try:
        f = to_fraction(raw, name=where)
    except (TypeError, ValueError, ZeroDivisionError):
        raise FieldError(where, f"{raw!r} is not a number (type a factor such as 1.5 or 3/2)") from None
    if f <= 0:
        raise FieldError(where, f"{raw} would make a budget of {'0' if f == 0 else 'below 0'}; a factor must be > 0")
    lo, hi = FACTOR_RANGE
    if not lo <= f <= hi:
        raise FieldError(where, f"{raw} is outside [{lo}, {hi}]")
    return f


@dataclass(frozen=True)
class Setting:
    """Exact factors on a baseline allocation: ρ'_q = ρ_q · f_g · f_q.

    Attributes:
        geolevel: ``((geolevel, f_g), …)``; an unlisted geolevel has f_g = 1.
        query: ``(((geolevel, query), f_q), …)``; an unlisted query has f_q = 1.
    """

    geolevel: tuple[tuple[str, Fraction], ...] = ()
    query: tuple[tuple[tuple[str, str], Fraction], ...] = ()

    def __post_init__(self):
        for name, f in (*self.geolevel, *((f"{g}/{q}", f) for (g, q), f in self.query)):
            if not isinstance(f, Fraction) or f <= 0:
                raise FieldError(f"factor of {name}", f"expected a positive Fraction, got {f!r}")

    def geolevel_factor(self, geolevel: str) -> Fraction:
        return dict(self.geolevel).get(geolevel, Fraction(1))

    def query_factor(self, geolevel: str, query: str) -> Fraction:
        return dict(self.query).get((geolevel, query), Fraction(1))

    def with_geolevel(self, geolevel: str, factor: Fraction) -> Setting:
        """This setting with f_g = ``factor``."""
        rest = tuple((g, f) for g, f in self.geolevel if g != geolevel)
        return Setting(tuple(sorted((*rest, (geolevel, factor)))) if factor != 1 else rest, self.query)

    def with_query(self, geolevel: str, query: str, factor: Fraction) -> Setting:
        """This setting with f_q = ``factor`` for (geolevel, query)."""
        rest = tuple((k, f) for k, f in self.query if k != (geolevel, query))
        return Setting(self.geolevel, tuple(sorted((*rest, ((geolevel, query), factor)))) if factor != 1 else rest)

    def check(self, baseline: Allocation) -> None:
        """Every named geolevel and query exists in ``baseline`` (:class:`FieldError` otherwise)."""
        unknown = sorted({g for g, _ in self.geolevel} - set(baseline.geolevels))
        if unknown:
            raise FieldError("factors", f"unknown geolevel(s) {', '.join(unknown)} of {baseline.name!r}")
        keys = {(g, q) for g, q, _ in baseline.items()}
        missing = sorted(k for k, _ in self.query if k not in keys)
        if missing:
            raise FieldError("factors", f"unknown query {missing[0][1]!r} of geolevel {missing[0][0]!r}")

    def allocation(self, baseline: Allocation) -> Allocation:
        """The allocation this setting names (exact)."""
        self.check(baseline)
        return baseline.with_rho(
            {(g, q): r * self.geolevel_factor(g) * self.query_factor(g, q) for g, q, r in baseline.items()}
        )

    @classmethod
    def from_allocation(cls, baseline: Allocation, new: Allocation) -> Setting:
        """The setting whose allocation is ``new``: f_g = level total of ``new`` / the baseline's,
        f_q = ρ'_q / (f_g·ρ_q) (exact, so ``from_allocation(b, n).allocation(b) == n``)."""
        if new.geolevels != baseline.geolevels:
            raise ValueError(f"{new.name!r} has geolevels {new.geolevels}, the baseline {baseline.geolevels}")
        fg = {g: new.level(g).total / baseline.level(g).total for g in baseline.geolevels}
        rho = {(g, q): r for g, q, r in new.items()}
        if set(rho) != {(g, q) for g, q, _ in baseline.items()}:
            raise ValueError(f"{new.name!r} does not have the queries of the baseline {baseline.name!r}")
        fq = {(g, q): rho[(g, q)] / (fg[g] * r) for g, q, r in baseline.items()}
        return cls(
            tuple(sorted((g, f) for g, f in fg.items() if f != 1)),
            tuple(sorted((k, f) for k, f in fq.items() if f != 1)),
        )

    def as_json(self) -> dict[str, Any]:
        """JSON-ready (the page's store): exact factors as strings."""
        return {
            "geolevel": {g: str(f) for g, f in self.geolevel},
            "query": [[g, q, str(f)] for (g, q), f in self.query],
        }

    @classmethod
    def from_json(cls, doc: Mapping[str, Any] | None) -> Setting:
        """The inverse of :meth:`as_json` (``None``: the baseline itself)."""
        if not doc:
            return cls()
        geo = tuple(sorted((str(g), Fraction(f)) for g, f in doc.get("geolevel", {}).items()))
        qry = tuple(sorted(((str(g), str(q)), Fraction(f)) for g, q, f in doc.get("query", [])))
        return cls(geo, qry)


@dataclass(frozen=True)
class PagePromise:
    """The promise the page checks: ``kind`` ``"point"`` (the zCDP conversion of the baseline's total ρ
    at ``delta``) or ``"curve"`` (at every δ of ``curve_deltas``), through ``conversion``."""

    kind: str = "point"
    delta: str = "1e-10"
    conversion: str = "bun-steinke"
    curve_deltas: tuple[str, ...] = field(default_factory=default_curve_deltas)

    @classmethod
    def parse(cls, kind: Any, delta: Any, conversion: Any, curve_deltas: Sequence[str] | None = None) -> PagePromise:
        """The page's target fields, checked: a δ that is not a number in (0, 1), an unknown kind or
        conversion is a :class:`FieldError` naming the field and the value."""
        if kind not in ("point", "curve"):
            raise FieldError("target", f"expected 'point' or 'curve', got {kind!r}")
        if conversion not in CONVERSIONS:
            raise FieldError("conversion", f"expected one of {', '.join(CONVERSIONS)}, got {conversion!r}")
        raw = "" if delta is None else str(delta).strip()
        try:
            d = to_fraction(raw, name="δ")
        except (TypeError, ValueError, ZeroDivisionError):
            raise FieldError("δ", f"{raw!r} is not a number (type e.g. 1e-10)") from None
        if not 0 < d < 1:
            raise FieldError("δ", f"{raw} is outside (0, 1)")
        if d < TARGET_DELTA_MIN:
            raise FieldError("δ", f"{raw} is below {float(TARGET_DELTA_MIN):g} (the scenarios' smallest δ)")
        deltas = tuple(curve_deltas) if curve_deltas else default_curve_deltas()
        return cls(kind, raw, conversion, deltas)

    @classmethod
    def of_scenario(cls, sc: Scenario) -> PagePromise:
        kind = "curve" if sc.target_kind == "curve" else "point"
        return cls(kind, sc.target_delta_text, sc.conversion, sc.curve_deltas or default_curve_deltas())

    def points(self, baseline: Allocation) -> tuple[Target, ...]:
        """The promised (ε, δ) points: one for a point, one per δ of the curve."""
        deltas = (self.delta,) if self.kind == "point" else self.curve_deltas
        return tuple(target_from_allocation(baseline, delta=d, conversion=self.conversion) for d in deltas)

    def describe(self) -> str:
        label = CONVERSIONS[self.conversion].label
        if self.kind == "point":
            return f"the {label} conversion of the baseline's ρ at δ = {self.delta}"
        return f"the {label} conversion of the baseline's ρ at every δ of {', '.join(self.curve_deltas)}"


@dataclass(frozen=True)
class Live:
    """What the page shows for one setting (strings are decimals on their safe side)."""

    factors: dict[str, str]  # geolevel → exact factor "p/q"
    query_factors: dict[str, str]  # "geolevel/query" → exact factor, only those ≠ 1
    total_rho: str  # exact fraction
    total_rho_decimal: str
    promise: str  # what is promised, in words
    promised_epsilon: str  # the headline point: its ε (conversion of the *baseline's* ρ)
    promised_delta: str
    delta_upper: str  # certified δ at the headline ε, rounded up
    delta_lower: str  # rounded down
    delta_tolerance_met: bool
    epsilon_safe: str  # exact ε at the headline δ, safe side (rounded up)
    kept_on_proxy: bool  # certified: δ upper ≤ promised δ at every promised point
    points: list[dict[str, Any]]  # every promised point: eps, delta, exact δ upper, kept
    noise_sd: list[dict[str, str]]  # per geolevel: RMS noise SD of one count, today and now (persons)
    curve: list[dict[str, float]]  # eps, zCDP claim δ of the baseline ρ, exact δ now (upper)
    tradeoff: dict[str, list[float]]  # the trade-off curve now: alpha, beta (floats of midpoints, plotted)
    seconds: float  # accountant time

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _rms_sd(alloc: Allocation, geolevel: str) -> float:
    level = alloc.level(geolevel)
    return math.sqrt(float(sum((1 / r for r in level.rho), Fraction(0)) / len(level.rho)))


def _plotted(tc) -> dict[str, list[float]]:
    return {"alpha": [float(a.value) for a in tc.alpha], "beta": [float(b.value) for b in tc.beta]}


#: live results kept per (baseline, setting, promise): scrubbing back to a setting is instant
LIVE_CACHE_SIZE = 128


def live(scenario: Scenario, baseline: Allocation, setting: Setting, promise: PagePromise | None = None) -> Live:
    """The live numbers of ``setting`` on ``baseline`` against ``promise`` (default: the scenario's;
    module docstring), the last :data:`LIVE_CACHE_SIZE` kept (a kept result says ``seconds`` = 0, its
    numbers are those computed for exactly these inputs). Bad input raises :class:`FieldError`
    naming it, before any accounting."""
    page = promise or PagePromise.of_scenario(scenario)
    key = (allocation_digest(baseline), setting, page)  # a bad setting is never kept: _live refuses it
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return replace(hit, seconds=0.0)
    res = _live(scenario, baseline, setting, page)
    with _LOCK:
        _CACHE[key] = res
        while len(_CACHE) > LIVE_CACHE_SIZE:
            _CACHE.popitem(last=False)
    return res


_CACHE: OrderedDict[tuple[Any, ...], Live] = OrderedDict()
_LOCK = threading.Lock()


def epsilon_hints(*eps_lists: Sequence[Fraction]) -> tuple[Fraction, ...] | None:
    """Every ε > 0 the page has just asked δ for, increasing: the hint ``near`` of
    :meth:`accountant.Composition.epsilon`, which checks it from the tails it already holds (no new
    integration), takes the bracket two neighbours give and starts from their interpolation."""
    xs = sorted({x for xs in eps_lists for x in xs if x > 0})
    return tuple(xs) if len(xs) >= 2 else None


@functools.lru_cache(maxsize=1024)
def _claim(rho: Fraction, eps: Fraction, conversion: str) -> float:
    """The zCDP claim's δ at ``eps`` for the baseline's ρ (plotted): the same on every move."""
    return float(zcdp_claim_delta(rho, eps, conversion))


def _live(scenario: Scenario, baseline: Allocation, setting: Setting, page: PagePromise) -> Live:
    new = setting.allocation(baseline)
    t0 = time.perf_counter()
    points = page.points(baseline)
    comp = proxy_composition(new)
    # the headline point: the promise's (point) or the curve's most binding point (largest δ/δ_k)
    eps_p = [Fraction(t.epsilon) for t in points]
    grid = [eps_p[0] * Fraction(5 + k, 10) for k in range(CURVE_POINTS)] if page.kind == "point" else []
    # one engine batch for every promised point, the curve and the trade-off curve (shared nodes and tilts;
    # a second call for the trade-off would wait for this one's lock and slow the next move)
    # ... and at the surrogate's estimate of each promised δ's ε: the safe ε's search then usually ends in
    # closed form from those tails (the root shares the estimate's lattice cell), with no batch of its own
    guesses = [comp.epsilon_estimate(t.delta) for t in points]
    ds, tc = comp.delta_and_tradeoff(
        [t.epsilon for t in points] + grid + guesses,
        n=TRADEOFF_POINTS,
        tol=DELTA_TOL,
        rtol=DELTA_RTOL,
        tradeoff_tol=TRADEOFF_TOL,
    )
    at_points, exact = ds[: len(points)], ds[len(points) : len(points) + len(grid)]
    uppers = [mpf_to_fraction(d.upper) for d in at_points]
    head = max(range(len(points)), key=lambda i: uppers[i] / points[i].delta_fraction)
    if page.kind == "curve":
        grid, exact = eps_p, list(at_points)
    # the curve just computed brackets the safe ε most of the time: the search starts there (checked)
    e = comp.epsilon(points[head].delta, tol=EPS_RTOL, near=epsilon_hints(eps_p, grid, guesses))
    rho0 = baseline.total_rho
    curve = [
        {"eps": float(x), "claim": _claim(rho0, x, page.conversion), "exact": float(y.upper)}
        for x, y in zip(grid, exact, strict=True)
    ]
    seconds = time.perf_counter() - t0
    d = at_points[head]
    return Live(
        factors={g: str(setting.geolevel_factor(g)) for g in baseline.geolevels},
        query_factors={f"{g}/{q}": str(f) for (g, q), f in setting.query},
        total_rho=str(new.total_rho),
        total_rho_decimal=decimal_string(new.total_rho, 8, "nearest", notation="auto"),
        promise=page.describe(),
        promised_epsilon=decimal_string(eps_p[head], 12, "down", notation="auto"),
        promised_delta=points[head].delta,
        delta_upper=decimal_string(uppers[head], 12, "up"),
        delta_lower=decimal_string(mpf_to_fraction(d.lower), 12, "down"),
        delta_tolerance_met=bool(d.tolerance_met),
        epsilon_safe=decimal_string(mpf_to_fraction(e.value), 12, "up", notation="auto"),
        kept_on_proxy=all(u <= t.delta_fraction for u, t in zip(uppers, points, strict=True)),
        points=[
            {
                "epsilon": decimal_string(x, 8, "down", notation="auto"),
                "delta": t.delta,
                "exact_upper": decimal_string(u, 6, "up"),
                "kept": u <= t.delta_fraction,
            }
            for x, t, u in zip(eps_p, points, uppers, strict=True)
        ],
        noise_sd=[
            {"geolevel": g, "today": f"{_rms_sd(baseline, g):.2f}", "now": f"{_rms_sd(new, g):.2f}"}
            for g in baseline.geolevels
        ],
        curve=curve,
        tradeoff=_plotted(tc),
        seconds=seconds,
    )
