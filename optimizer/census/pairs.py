"""Pairs of spine paths, and the worst case over them.

Replacing one person's record by another moves one unit out of one cell of every query along
the old record's path and into one cell along the new record's path.  With path i's
measurements M_i = {unit-shift discrete Gaussian with σ² = 1/ρ_q for each nonzero ρ_q on path
i}, a neighbouring pair is the composition [M_i, M_j]; composition is commutative, so the
distinct pairs are i ≤ j (946 for the 43 DHC-persons paths).  The release's (ε, δ) curve is the
maximum of δ over pairs, and its trade-off curve the lower convex envelope of the pointwise
minimum of the pairs' trade-off curves (arXiv 2606.29835 §1.3; arXiv 2410.09296).  Path 13 is
the full spine and [13, 13] the representative "main pair" (160 components, ρ = 24811/5000).

The accountant is imported lazily, so this module stays light.

>>> from optimizer.census.allocation import load_builtin
>>> paths = dhc_persons_paths(load_builtin("dhc-persons"))
>>> len(paths), len(pairs(paths)), paths[12].index, len(paths[12].rho)
(43, 946, 13, 80)
>>> lower_convex_envelope([[(0, 1), (1, 0)], [(0, 1), (Fraction(1, 2), Fraction(1, 4)), (1, 0)]])
[(0, 1), (Fraction(1, 2), Fraction(1, 4)), (1, 0)]
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from accountant import Certified, Composition, DiscreteGaussian
from optimizer.census.allocation import Allocation
from optimizer.census.spine import Pattern, dhc_persons_patterns, normalize_pattern, path_allocation

__all__ = [
    "MAIN_PAIR",
    "Path",
    "WorstCase",
    "WorstPairVerdict",
    "composition_key",
    "dhc_persons_paths",
    "lower_convex_envelope",
    "lower_convex_envelope_decimal",
    "mechanism",
    "pair_composition",
    "pairs",
    "paths_from_allocation",
    "pointwise_min",
    "safe_tradeoff_points",
    "worst_case",
    "worst_pair_rule",
]

#: The representative pair [M_13, M_13] (full spine with itself) of arXiv 2606.29835.
MAIN_PAIR = (13, 13)


@dataclass(frozen=True, slots=True)
class Path:
    """One allocation path: the budgets a record passing through ``pattern`` is measured with.

    Args:
        index: the path number (1-based; 1..43 for the published DHC-persons paths).
        pattern: present geolevels, top-down.
        rho: the nonzero per-query budgets of the path, top-down and in query order.
    """

    index: int
    pattern: Pattern
    rho: tuple[Fraction, ...]

    def __post_init__(self):
        if isinstance(self.index, bool) or not isinstance(self.index, int) or self.index < 1:
            raise ValueError(f"Path: index must be a positive int, got {self.index!r}")
        rho = tuple(self.rho)
        if not rho:
            raise ValueError(f"Path {self.index}: no measurements")
        for r in rho:
            if not isinstance(r, Fraction) or r <= 0:
                raise ValueError(f"Path {self.index}: budgets must be positive Fractions, got {r!r}")
        object.__setattr__(self, "pattern", tuple(self.pattern))
        object.__setattr__(self, "rho", rho)

    @property
    def total_rho(self) -> Fraction:
        """Σ ρ over the path (equals the allocation total)."""
        return sum(self.rho, Fraction(0))


def paths_from_allocation(allocation: Allocation, patterns: Iterable[Iterable[str]]) -> tuple[Path, ...]:
    """Build one :class:`Path` per pattern (indices 1, 2, … in the given order).

    Args:
        allocation: nominal allocation.
        patterns: e.g. :func:`optimizer.census.spine.dhc_persons_patterns` (published, DHC persons)
            or :func:`optimizer.census.spine.all_patterns` (conservative superset).
    """
    out = []
    for i, pattern in enumerate(patterns, start=1):
        norm = normalize_pattern(allocation.geolevels, pattern)
        rho = tuple(r for level in path_allocation(allocation, norm) for r in level if r)
        out.append(Path(i, norm, rho))
    if not out:
        raise ValueError("paths_from_allocation: no patterns given")
    return tuple(out)


def dhc_persons_paths(allocation: Allocation) -> tuple[Path, ...]:
    """The 43 published DHC-persons paths applied to ``allocation`` (8 DHC geolevels)."""
    return paths_from_allocation(allocation, dhc_persons_patterns())


def mechanism(path: Path) -> list:
    """The unit-shift discrete Gaussians of a path: ``DiscreteGaussian.from_rho(ρ)`` per query."""
    return [DiscreteGaussian.from_rho(r) for r in path.rho]


def pairs(paths: Sequence[Path]) -> list[tuple[Path, Path]]:
    """All unordered pairs with repetition, (i, j) with i ≤ j by path index: n(n+1)/2 of them."""
    ordered = sorted(paths, key=lambda p: p.index)
    indices = [p.index for p in ordered]
    if len(set(indices)) != len(indices):
        raise ValueError(f"pairs: repeated path indices {sorted({i for i in indices if indices.count(i) > 1})}")
    return [(a, b) for n, a in enumerate(ordered) for b in ordered[n:]]


def composition_key(rho_i: Iterable[Fraction], rho_j: Iterable[Fraction]) -> tuple[tuple[int, int], ...]:
    """The multiset of budgets of the pair [M_i, M_j] given its two paths' budgets, as sorted (numerator,
    denominator) pairs (integers hash and compare without the modular inverse and cross products of
    Fractions): pairs with the same key have the same composition, hence the same δ and the same engine
    (DHC persons: 946 pairs, 840 keys, e.g. [1, 2] and [13, 26])."""
    return tuple(sorted((r.numerator, r.denominator) for r in (*rho_i, *rho_j)))


def pair_composition(path_i: Path, path_j: Path, composition: Callable[[list], Any] | None = None):
    """The composed mechanism [M_i, M_j] (all unit-shift components of both paths).

    Args:
        path_i, path_j: the two paths (order irrelevant).
        composition: constructor taking a list of mechanisms; defaults to
            :class:`accountant.Composition` (imported lazily).
    """
    if composition is None:
        composition = Composition
    return composition(mechanism(path_i) + mechanism(path_j))


# ====================================================================== worst case over pairs
@dataclass(frozen=True, slots=True)
class WorstCase:
    """Maximum over pairs of a certified quantity at one grid point (e.g. δ at one ε).

    Attributes:
        position: index in the shared grid.
        value: certified enclosure of the maximum, ``[max lower, max upper]``.
        argmax: the certain worst pair when ``certain``, else the pair with the largest upper
            bound (ties: smallest pair) — then only a candidate, never "the worst pair".
        candidates: every pair that may be the maximum (upper ≥ the largest lower bound),
            best upper bound first.
        certain: ``argmax`` is certainly the maximiser: its lower bound ≥ every other pair's
            upper bound, and no other pair's is (:func:`worst_pair_rule`; ``False`` when
            intervals overlap or pairs tie).
    """

    position: int
    value: Any
    argmax: tuple[int, int]
    candidates: tuple[tuple[int, int], ...]
    certain: bool


def worst_case(results: Mapping[tuple[int, int], Sequence[Any]]) -> list[WorstCase]:
    """Pointwise maximum over pairs of certified values on a shared grid.

    Args:
        results: ``{(i, j): [Certified, …]}``, one value per grid point (e.g.
            ``composition.delta_curve(eps_grid)``); anything with ``lower``/``upper`` works.

    Returns:
        One :class:`WorstCase` per grid point.  The maximum itself is always certified
        (``value``); *which* pair attains it is only claimed when ``certain`` is true.
    """
    if not results:
        raise ValueError("worst_case: no results")
    keys = sorted(results)
    lengths = {k: len(results[k]) for k in keys}
    if len(set(lengths.values())) != 1:
        raise ValueError(f"worst_case: results have different grid lengths {sorted(set(lengths.values()))}")

    out = []
    for pos in range(lengths[keys[0]]):
        vals = {k: results[k][pos] for k in keys}
        for k, v in vals.items():
            if not (hasattr(v, "lower") and hasattr(v, "upper")):
                raise TypeError(f"worst_case: result {k} at position {pos} is not certified: {v!r}")
        verdict = worst_pair_rule(vals)
        cands = sorted((k for k, v in vals.items() if v.upper >= verdict.lower), key=lambda k: (-vals[k].upper, k))
        arg = verdict.worst if verdict.worst is not None else cands[0]
        value = Certified.from_bounds(verdict.lower, verdict.upper)
        out.append(WorstCase(pos, value, arg, tuple(cands), verdict.certain))
    return out


@dataclass(frozen=True, slots=True)
class WorstPairVerdict:
    """Which pair decides a release's δ, said only when it is certain (issue 35, item 4).

    Attributes:
        worst: the worst pair, or ``None`` when it is not certain.
        certain: exactly one pair has a lower bound ≥ every other pair's upper bound.
        tied: the pairs tied within their bounds — every pair whose upper bound reaches the
            largest lower bound — largest upper bound first (ties: smallest pair); ``(worst,)``
            when certain.
        lower, upper: the release's δ as an interval: [max of the lower bounds, max of the
            upper bounds] (in the bounds' own number type).
    """

    worst: tuple[int, int] | None
    certain: bool
    tied: tuple[tuple[int, int], ...]
    lower: Any
    upper: Any


def worst_pair_rule(bounds: Mapping[tuple[int, int], Any]) -> WorstPairVerdict:
    """The worst-pair rule over certified intervals ``{pair: obj with .lower/.upper}``: a pair is
    named the worst only when its lower bound is ≥ every other pair's upper bound (and it is the
    only such pair: pairs tied exactly are never called certain); otherwise the tied pairs are
    listed.  The release's δ lies in [max lower, max upper] either way."""
    if not bounds:
        raise ValueError("worst_pair_rule: no pairs")
    keys = sorted(bounds)
    best_lower = max(bounds[k].lower for k in keys)
    best_upper = max(bounds[k].upper for k in keys)
    # the largest and second-largest upper bounds decide, for each pair, the largest upper of the others
    by_upper = sorted(keys, key=lambda k: (-bounds[k].upper, k))
    top = by_upper[0]
    second = bounds[by_upper[1]].upper if len(by_upper) > 1 else None
    winners = [
        k for k in keys if (other := (second if k == top else bounds[top].upper)) is None or bounds[k].lower >= other
    ]
    if len(winners) == 1:
        return WorstPairVerdict(winners[0], True, (winners[0],), best_lower, best_upper)
    tied = tuple(k for k in by_upper if bounds[k].upper >= best_lower)
    return WorstPairVerdict(None, False, tied, best_lower, best_upper)


# ====================================================================== trade-off envelopes
def _cross(o, a, b):
    return (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0])


def lower_convex_envelope(curves: Iterable[Sequence[tuple[Any, Any]]]) -> list[tuple[Any, Any]]:
    """Lower convex envelope of the pointwise minimum of piecewise-linear curves.

    Each curve is a sequence of vertices ``(x, y)`` joined by straight segments (a trade-off
    curve: x = type-I error α, y = type-II error β).  Because the convex hull of the union of
    the curves' epigraphs equals the convex hull of their vertices (plus upward rays), the
    envelope of ``min_k f_k`` is the lower convex hull of all vertices together; it is computed
    exactly (Andrew's monotone chain) in whatever number type is given — use ``Fraction`` for
    exact results, floats or mpmath numbers otherwise.  The curves are assumed to share their
    x-range (trade-off curves live on [0, 1]).

    Returns:
        The envelope's vertices, by increasing x (collinear points dropped).
    """
    best: dict[Any, Any] = {}
    for ci, pi, point, x, y in _points(curves):
        if x != x or y != y:
            raise ValueError(f"lower_convex_envelope: curve {ci}, point {pi} has NaN: {point!r}")
        if x not in best or y < best[x]:
            best[x] = y
    if not best:
        raise ValueError("lower_convex_envelope: no points")
    return _lower_chain(sorted(best.items()))


def _points(curves):
    """(curve index, point index, point, x, y) for every vertex; a clear error for non-pairs."""
    for ci, curve in enumerate(curves):
        for pi, point in enumerate(curve):
            try:
                x, y = point
            except (TypeError, ValueError):
                raise ValueError(
                    f"lower_convex_envelope: curve {ci}, point {pi} is not an (x, y) pair: {point!r}"
                ) from None
            yield ci, pi, point, x, y


def _lower_chain(points):
    """Andrew's monotone chain (lower hull) of points sorted by x with distinct x."""
    hull: list = []
    for p in points:
        while len(hull) >= 2 and _cross(hull[-2], hull[-1], p) <= 0:
            hull.pop()
        hull.append(p)
    return hull


def _parse_decimal(text: str, where: str) -> tuple[int, int]:
    """A decimal string as (m, e) with value m·10^e exactly."""
    mant, _, ex = text.partition("e")
    whole, _, frac = mant.partition(".")
    if (frac.isdigit() or not frac) and whole.lstrip("-").isdigit() and "_" not in ex:
        try:
            return int(whole + frac), (int(ex) if ex else 0) - len(frac)
        except ValueError:
            pass
    t = text.strip()  # slow path: spaces, "E", signs, ints
    mant, _, ex = t.lower().partition("e")
    sign = -1 if mant.startswith("-") else 1
    mant = mant.lstrip("+-")
    whole, _, frac = mant.partition(".")
    digits = (whole + frac) or "0"
    if not digits.isdigit() or (ex and not ex.lstrip("+-").isdigit()):
        raise ValueError(f"lower_convex_envelope: {where} is not a decimal number: {text!r}")
    return sign * int(digits), (int(ex) if ex else 0) - len(frac)


def lower_convex_envelope_decimal(curves: Iterable[Sequence[tuple[str, str]]]) -> list[tuple[Fraction, Fraction]]:
    """:func:`lower_convex_envelope` of curves whose vertices are decimal strings, exactly.

    Every coordinate is an integer multiple of 10^−S for the finest exponent S present, so the
    monotone chain runs on Python integers x·10^S (exact, and far faster than ``Fraction``
    arithmetic on the ~10⁶ vertices of a release's pairs); the envelope is returned as
    Fractions.
    """
    parsed = []
    low = 0
    memo: dict[str, tuple[int, int]] = {}  # trade-off curves repeat values (β_i = α_{n−1−i})
    for ci, pi, _, x, y in _points(curves):
        px = memo.get(x)
        if px is None:
            px = memo[x] = _parse_decimal(str(x), f"curve {ci}, point {pi}, x")
        py = memo.get(y)
        if py is None:
            py = memo[y] = _parse_decimal(str(y), f"curve {ci}, point {pi}, y")
        low = min(low, px[1], py[1])
        parsed.append((px[0], px[1], py[0], py[1]))
    if not parsed:
        raise ValueError("lower_convex_envelope: no points")
    S = -low
    pw = {}

    def scaled(m: int, e: int) -> int:
        k = e + S
        if k not in pw:
            pw[k] = 10**k
        return m * pw[k]

    pts = sorted((scaled(mx, ex), scaled(my, ey)) for mx, ex, my, ey in parsed)
    lowest = [p for n, p in enumerate(pts) if n == 0 or p[0] != pts[n - 1][0]]  # lowest y per x
    hull = _lower_chain(lowest)
    den = 10**S
    return [(Fraction(x, den), Fraction(y, den)) for x, y in hull]


def _interp(curve: Sequence[tuple[Any, Any]], xs: list, x):
    j = bisect_right(xs, x)
    if j > 0 and xs[j - 1] == x:
        return curve[j - 1][1]
    (x0, y0), (x1, y1) = curve[j - 1], curve[j]
    return y0 + (y1 - y0) * (x - x0) / (x1 - x0)


def pointwise_min(curves: Sequence[Sequence[tuple[Any, Any]]]) -> list[tuple[Any, Any]]:
    """Exact pointwise minimum of piecewise-linear curves on their common x-range.

    The result's vertices are every curve's breakpoints plus the crossing points between
    them.  Cost O(K²·B) for K curves with B breakpoints in total — a diagnostic for small
    inputs; :func:`lower_convex_envelope` does not need it.
    """
    cleaned = []
    for ci, curve in enumerate(curves):
        pts = sorted(curve)
        xs = [p[0] for p in pts]
        if len(pts) < 2 or len(set(xs)) != len(xs):
            raise ValueError(f"pointwise_min: curve {ci} needs ≥ 2 points with distinct x")
        cleaned.append((pts, xs))
    if not cleaned:
        raise ValueError("pointwise_min: no curves")
    lo = max(xs[0] for _, xs in cleaned)
    hi = min(xs[-1] for _, xs in cleaned)
    if lo > hi:
        raise ValueError("pointwise_min: the curves have no common x-range")
    grid = sorted({x for _, xs in cleaned for x in xs if lo <= x <= hi} | {lo, hi})
    out: list[tuple[Any, Any]] = []
    for a, b in itertools.pairwise(grid):
        ya = [_interp(p, xs, a) for p, xs in cleaned]
        yb = [_interp(p, xs, b) for p, xs in cleaned]
        points = {a: min(ya)}
        for m in range(len(cleaned)):
            for n in range(m + 1, len(cleaned)):
                da, db = ya[m] - ya[n], yb[m] - yb[n]
                if (da < 0 < db) or (db < 0 < da):
                    t = da / (da - db)
                    x = a + (b - a) * t
                    points[x] = min(_interp(p, xs, x) for p, xs in cleaned)
        out.extend(sorted(points.items()))
    out.append((grid[-1], min(_interp(p, xs, grid[-1]) for p, xs in cleaned)))
    return out


def safe_tradeoff_points(alpha: Sequence[Any], beta: Sequence[Any]) -> list[tuple[Any, Any]]:
    """Certified trade-off vertices → points certainly on or below the true curve.

    A trade-off function f is non-increasing, so for a vertex (α, β) known only as intervals,
    f(α.lower) ≥ f(α) = β ≥ β.lower: the point (α.lower, β.lower) lies on or below f.  Both
    coordinates are clipped at 0 (f ≥ 0, and f(0) ≥ f(α)).  Only these points are certified: a
    piecewise-linear envelope through them is on or below f at its vertices, and between
    vertices only where f is convex (true for a trade-off function, so the lower convex
    envelope of such points never overclaims privacy).
    """
    if len(alpha) != len(beta):
        raise ValueError(f"safe_tradeoff_points: {len(alpha)} alpha values but {len(beta)} beta values")
    return [(_clip0(a.lower), _clip0(b.lower)) for a, b in zip(alpha, beta)]


def _clip0(x):
    return x if x > 0 else x * 0
