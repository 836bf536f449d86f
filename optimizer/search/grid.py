"""The proposal grid: a solver's float budgets as level shares × query shares on a common grid.

The exact accountant works on the Bézout lattice of a pair's loss weights (method.md §3.1): the
integers b_k = L·w_k with L the smallest scale making them coprime integers.  Its cost grows with
those integers (the trapezoid's node count N ≈ 4·√v, √v ≈ L·√(Σ ρ) of the pair), and *only the
ratios* of the weights matter: a common factor c of every budget leaves the lattice unchanged,
so the calibration's exact factor (any denominator) costs nothing.  What made the optimizer's
proposals too fine for the exact engines (issue 35) was the shape: budgets rounded to 1/10⁵ each,
then merged along a spine path (:func:`optimizer.census.spine.path_allocation`: a present level of
total T that absorbs the bypassed levels' A gets ρ_q·(T + A)/T), which puts T's numerator in the
denominator — pair scales of 10¹⁰ … 10¹⁴ and the coarse sandwich on 786 of 946 pairs.

Here a proposal is represented as the production allocations are: every geolevel ℓ gets a total
t_ℓ/G (integers t_ℓ ≥ 1, Σ t_ℓ = ⌊R·G⌋) and every query q of ℓ the share n_q/P of its level
(integers n_q ≥ 1, Σ_q n_q = P), so

    ρ'_q = t_ℓ · n_q / (G·P)          and, merged along any path,   ρ'_q (T+A)/T = (t_ℓ + a)·n_q/(G·P)

with a the bypassed levels' integers: every weight of every pair is an integer multiple of
1/(G·P), so each pair's lattice scale is at most G·P whatever the merging.  G is a multiple of the
baseline's level-total denominators and P of its query-share denominators (:func:`grids_for`; 10⁴
and 1040 for DHC persons), so a level or query the Pareto guard holds at its baseline budget is on
the grid exactly and costs no rounding up.

The rounding is an exact integer optimisation, not a nearest-point rule (:func:`on_grid`): for a
separable model Σ a_q/ρ'_q of the objective (its own coefficients, or its gradient at the float
optimum, :func:`local_coefficients`) each level's best counts n for a total t are found by
exchange (optimal for a separable convex sum under one budget), and the level totals by dynamic
programming over a window around the continuous ones, subject to ρ'_q ≥ ℓ_q exactly.

Which grid: the coarsest of :func:`grids_for` whose rounding costs at most ``tol`` (default
:data:`ROUNDING_TOL`) of the objective at the same total — measured, never assumed — because the
accountant's cost grows with G·P (a pair's node count N ≈ 4·√v with √v ≈ G·P·√(2ρ_pair), and the
near-peaks of its integrand with it).  Measured on the DHC-persons mean-relative-variance optimum
(Pareto guard, total 1.129 × the production's): grid (10⁴, 1040) costs 2.3e-5 of the objective and
leaves 4 of 946 pairs to the nested split (the rest trapezoid); the nearest-point rounding on the same
grid cost 1.5e-4, and (10⁴, 10400) leaves 45 pairs beyond the exact engines
(``python -m bench.optimizer --grids``).
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from fractions import Fraction

import numpy as np

from optimizer.census.allocation import Allocation, GeolevelBudget

__all__ = [
    "GRID_SIZES",
    "ROUNDING_TOL",
    "Grid",
    "GridShape",
    "baseline_grid",
    "flat_representation",
    "grid_shape",
    "grids_for",
    "local_coefficients",
    "on_grid",
    "shape_distortion",
]

Key = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Grid:
    """Level totals in multiples of 1/``level`` (absolute ρ), query shares in multiples of 1/``query``
    of their level: every weight of every pair is a multiple of 1/(level·query), so every pair's
    lattice scale is at most ``level·query``."""

    level: int
    query: int

    def __post_init__(self) -> None:
        if self.level < 1 or self.query < 1:
            raise ValueError(f"Grid: level and query units must be ≥ 1, got {self.level}, {self.query}")

    @property
    def scale(self) -> int:
        """The bound G·P on every pair's lattice scale."""
        return self.level * self.query

    def __str__(self) -> str:
        return f"level totals 1/{self.level}, query shares 1/{self.query}"


#: sizes of the grids tried, coarsest first: (level units in the total, query units per level)
GRID_SIZES: tuple[tuple[int, int], ...] = ((10**3, 10**3), (10**4, 10**3), (10**4, 10**4), (10**5, 10**5))
#: a baseline's own denominators (of its level totals; of its query shares) are kept in the grid up to these
#: sizes, so a level or query the guard holds at its baseline budget is represented exactly (no rounding up)
MAX_BASE_LEVEL, MAX_BASE_QUERY = 10**6, 10**5
#: largest accepted relative objective increase from the rounding (at the same total ρ); the
#: issue's bound on proposal vs unrounded optimum is 1e-4, calibration differences included
ROUNDING_TOL = 5e-5


def _lcm_denominators(values, cap: float) -> int:
    d = 1
    for v in values:
        d = math.lcm(d, Fraction(v).denominator)
        if d > cap:
            return 1
    return d


def baseline_grid(baseline: Allocation) -> Grid:
    """The baseline's own grid, uncapped: the common denominator of its level totals, and of its
    query shares — the grid on which every budget of the baseline lies exactly."""
    d_level = _lcm_denominators((lv.total for lv in baseline.levels), math.inf)
    d_query = _lcm_denominators((p for lv in baseline.levels for p in lv.proportions()), math.inf)
    return Grid(d_level, d_query)


def grids_for(baseline: Allocation, total: Fraction, sizes: Sequence[tuple[int, int]] = GRID_SIZES) -> tuple[Grid, ...]:
    """The grids tried for proposals compared with ``baseline`` at total ``total``, coarsest first: the level
    unit a multiple of the baseline's level totals' common denominator (when ≤ :data:`MAX_BASE_LEVEL`) with
    at least ``sizes[i][0]`` units in ``total``; the query unit a multiple of its query shares' common
    denominator (when ≤ :data:`MAX_BASE_QUERY`) with at least ``sizes[i][1]`` units per level.  A level or
    query held at its baseline budget (the Pareto guard) is then on the grid exactly."""
    d_level = _lcm_denominators((lv.total for lv in baseline.levels), MAX_BASE_LEVEL)
    d_query = _lcm_denominators((p for lv in baseline.levels for p in lv.proportions()), MAX_BASE_QUERY)
    out: list[Grid] = []
    for n_level, n_query in sizes:
        g = d_level * max(1, math.ceil(Fraction(n_level) / (total * d_level)))
        p = d_query * max(1, math.ceil(Fraction(n_query, d_query)))
        if Grid(g, p) not in out:
            out.append(Grid(g, p))
    return tuple(out)


@dataclass(frozen=True)
class GridShape:
    """A proposal on a grid and what its rounding cost.

    Attributes:
        allocation: the exact budgets (every lower bound met).
        grid: the grid used.
        objective_unrounded: the objective of the solver's float budgets scaled to the same total.
        objective_rounded: the objective of ``allocation``.
    """

    allocation: Allocation
    grid: Grid
    objective_unrounded: float
    objective_rounded: float
    flat: bool = False

    def describe(self) -> str:
        """How the proposal was rounded, for its provenance."""
        if self.flat:
            return f"floored to 1/{FLAT_DENOMINATOR} each (the pre-issue-35 representation)"
        return f"on the grid {self.grid} (rounding cost {self.rounding_cost:.2e} of the objective)"

    @property
    def rounding_cost(self) -> float:
        """(rounded − unrounded)/unrounded: the relative objective the rounding gave up."""
        return (self.objective_rounded - self.objective_unrounded) / self.objective_unrounded


def shape_distortion(reference: Mapping[Key, float]) -> Callable[[Mapping[Key, float]], float]:
    """The neutral objective for rounding a shape whose purpose is unknown: Σ_q r_q²/ρ'_q / Σ r_q
    (r the reference budgets); at a fixed total it is smallest, = Σ r_q/total, at ρ' ∝ r."""
    s = math.fsum(reference.values())

    def f(rho: Mapping[Key, float]) -> float:
        return math.fsum(reference[k] ** 2 / rho[k] for k in reference) / s

    return f


def _lagrange_counts(coef: Sequence[float], minimum: Sequence[int], units: int) -> list[int]:
    """The counts n_i ≥ ``minimum_i`` that take every unit whose gain c_i/((n−1)·n) is at least λ, for the
    smallest λ (geometric bisection) with Σ n_i ≤ ``units``: within a few units of the integer optimum,
    in O(k·log) steps whatever ``units`` (a start far from it cost one exchange per unit: 10⁵ per call)."""

    c = np.asarray(coef, dtype=float)
    m = np.asarray(minimum, dtype=float)
    live = c > 0

    def counts(lam: float) -> np.ndarray:  # as floats (exact integers below 2^53; huge ones only compared)
        with np.errstate(over="ignore"):
            n = np.floor((1 + np.sqrt(1 + 4 * c / lam)) / 2)
        return np.where(live, np.maximum(m, n), m)

    def as_ints(n: np.ndarray) -> list[int]:
        return [int(x) for x in n]

    lo, hi = 1e-300, 4 * max(max(coef), 1e-300) + 1.0  # at hi every count is its minimum
    if counts(lo).sum() <= units:
        return as_ints(counts(lo))
    for _ in range(120):
        mid = math.sqrt(lo * hi)
        if not lo < mid < hi:  # floats exhausted (~60 steps): every further step would leave lo, hi as they are
            break
        if counts(mid).sum() <= units:
            hi = mid
        else:
            lo = mid
    return as_ints(counts(hi))


def _best_counts(coef: Sequence[float], minimum: Sequence[int], units: int) -> list[int] | None:
    """argmin Σ_i coef_i/n_i over integers n_i ≥ ``minimum_i`` with Σ n_i = ``units`` (``None`` if Σ minimum >
    units): from the Lagrange start (:func:`_lagrange_counts`), single units are added or removed where they
    gain most, then moved between pairs while that lowers the sum — for a separable convex sum with one
    budget constraint no single move improving is the optimum."""
    if sum(minimum) > units:
        return None
    n = _lagrange_counts(coef, minimum, units)

    def gain(i: int) -> float:  # decrease of the sum when n_i grows by one
        return coef[i] / n[i] - coef[i] / (n[i] + 1)

    def loss(i: int) -> float:  # increase of the sum when n_i shrinks by one (inf at its minimum)
        return coef[i] / (n[i] - 1) - coef[i] / n[i] if n[i] > minimum[i] else math.inf

    k = range(len(n))
    total = sum(n)
    while total < units:
        n[max(k, key=gain)] += 1
        total += 1
    while total > units:
        n[min(k, key=loss)] -= 1
        total -= 1
    while True:
        up, down = max(k, key=gain), min(k, key=loss)
        if up == down or gain(up) <= loss(down) * (1 + 1e-12):
            return n
        n[up] += 1
        n[down] -= 1


def _level_costs(coef, lows, grid: Grid, ideal_t: float, window: int, units: int) -> dict[int, tuple]:
    """``{t: (cost, counts)}`` for the level totals t within ``window`` of ``ideal_t`` that fit the level's
    bounds: cost = Σ_q coef_q/ρ'_q with the best counts n for that t (ρ'_q = t·n_q/(G·P))."""
    out = {}
    centre = round(ideal_t)
    for t in range(max(1, centre - window), min(units, centre + window) + 1):
        ns = _best_counts(coef, _query_minimum(lows, grid, t), grid.query)
        if ns is not None:
            out[t] = (grid.scale / t * math.fsum(c / n for c, n in zip(coef, ns)), ns)
    return out


def _choose_totals(costs: Sequence[dict[int, tuple]], units: int) -> list[int] | None:
    """Level totals t_ℓ (one key of each ``costs[ℓ]``) with Σ t_ℓ = ``units`` and the least summed cost
    (dynamic programming over the levels; ``None`` if no choice sums to ``units``)."""
    best: dict[int, tuple[float, tuple[int, ...]]] = {0: (0.0, ())}
    for c in costs:
        nxt: dict[int, tuple[float, tuple[int, ...]]] = {}
        for used, (v, ts) in best.items():
            for t, (ct, _) in c.items():
                if used + t <= units and (used + t not in nxt or v + ct < nxt[used + t][0]):
                    nxt[used + t] = (v + ct, (*ts, t))
        best = nxt
    return list(best[units][1]) if units in best else None


def _query_minimum(lower: Sequence[Fraction], grid: Grid, t: int) -> list[int]:
    """Smallest n_q with (t/G)·(n_q/P) ≥ ℓ_q (and ≥ 1)."""
    return [max(1, math.ceil(lo * grid.scale / t)) if lo > 0 else 1 for lo in lower]


#: level totals are searched within this many grid units of the continuous optimum's (× 4 if nothing fits)
LEVEL_WINDOW = 24


def on_grid(
    baseline: Allocation,
    rho: Mapping[Key, float],
    lower: Mapping[Key, Fraction] | None,
    total: Fraction,
    grid: Grid,
    coefficients: Mapping[Key, float] | None = None,
    name: str | None = None,
) -> Allocation | None:
    """``rho`` (positive floats, any total) as exact budgets on ``grid``: level totals t_ℓ/G with
    Σ t_ℓ = ⌊total·G⌋ (the total rounded down to the grid, by less than 1/G), query shares n_q/P of
    their level, ρ'_q ≥ ``lower[q]`` exactly, chosen to minimise Σ_q a_q/ρ'_q for ``coefficients`` a
    (default the local model a_q = ρ_q², i.e. the least relative distortion of ``rho``): exactly, for
    level totals within :data:`LEVEL_WINDOW` units of the continuous ones.  ``None`` when the bounds do
    not fit on this grid."""
    levels = baseline.levels
    keys = [[(lv.name, q) for q in lv.queries] for lv in levels]
    if any(not (rho[k] > 0) for ks in keys for k in ks):
        raise ValueError("on_grid: every budget must be a positive number")
    units = math.floor(total * grid.level)
    s = math.fsum(rho.values())
    lows = [[Fraction(lower[k]) if lower else Fraction(0) for k in ks] for ks in keys]
    coefs = [[coefficients[k] if coefficients else rho[k] ** 2 for k in ks] for ks in keys]
    for window in (LEVEL_WINDOW, 4 * LEVEL_WINDOW):
        costs = []
        for ks, lo, co in zip(keys, lows, coefs):
            ls = math.fsum(rho[k] for k in ks)
            costs.append(_level_costs(co, lo, grid, units * ls / s, window, units))
        ts = _choose_totals(costs, units)
        if ts is not None:
            break
    else:
        return None
    out = [
        GeolevelBudget(lv.name, lv.queries, tuple(Fraction(t * n, grid.scale) for n in c[t][1]))
        for lv, t, c in zip(levels, ts, costs)
    ]
    return Allocation(tuple(out), name or baseline.name, baseline.provenance, baseline.run_type)


#: the local model of an objective is fitted by differences only up to this many budgets (2 evaluations each)
MAX_FITTED = 2000


def local_coefficients(f: Callable[[Mapping[Key, float]], float], rho: Mapping[Key, float]) -> dict[Key, float]:
    """a_q ≥ 0 of the separable model Σ a_q/ρ'_q that matches ``f``'s gradient at ``rho`` (central
    differences of relative step 1e-5): a_q = ρ_q²·(−∂f/∂ρ_q)."""
    out = {}
    for k, v in rho.items():
        h = v * 1e-5
        lo, hi = dict(rho), dict(rho)
        lo[k], hi[k] = v - h, v + h
        out[k] = max(0.0, v * v * (f(lo) - f(hi)) / (2 * h))
    return out


def grid_shape(
    baseline: Allocation,
    rho: Mapping[Key, float],
    lower: Mapping[Key, Fraction] | None,
    total: Fraction,
    objective: Callable[[Mapping[Key, float]], float] | None = None,
    *,
    coefficients: Mapping[Key, float] | None = None,
    tol: float = ROUNDING_TOL,
    grids: Sequence[Grid] | None = None,
    name: str | None = None,
) -> GridShape:
    """The coarsest grid of ``grids`` (default :func:`grids_for` the baseline) whose rounding of ``rho``
    (scaled to ``total``) costs at most ``tol`` of ``objective`` (default :func:`shape_distortion` of
    ``rho``); the finest one that fits the bounds if none does (its cost is reported, never hidden).
    Each grid's rounding minimises Σ a_q/ρ'_q (:func:`on_grid`) for ``coefficients`` a (default: the
    objective's local model, :func:`local_coefficients`, up to :data:`MAX_FITTED` budgets).

    Raises:
        ValueError: the lower bounds fit on none of the grids (or need more than ``total``).
    """
    s = math.fsum(rho.values())
    scaled = {k: v * float(total) / s for k, v in rho.items()}
    f = objective or shape_distortion(scaled)
    f0 = f(scaled)
    if _FLAT.get():
        flat = _flat_shape(baseline, scaled, lower, name)
        return GridShape(flat, Grid(FLAT_DENOMINATOR, 1), f0, f({(g, q): float(r) for g, q, r in flat.items()}), True)
    if coefficients is None and objective is not None and len(scaled) <= MAX_FITTED:
        coefficients = local_coefficients(f, scaled)
    best: GridShape | None = None
    for grid in grids or grids_for(baseline, total):
        alloc = on_grid(baseline, scaled, lower, total, grid, coefficients, name)
        if alloc is None:
            continue
        f1 = f({(g, q): float(r) for g, q, r in alloc.items()})
        best = GridShape(alloc, grid, f0, f1)
        if best.rounding_cost <= tol:
            return best
    if best is None and grids is None:
        # the sized grids cap the baseline's denominators (MAX_BASE_LEVEL, MAX_BASE_QUERY): with no slack
        # above the lower bounds only the baseline's own grid may hold them (then the proposal is them)
        own = baseline_grid(baseline)
        alloc = on_grid(baseline, scaled, lower, total, own, coefficients, name)
        if alloc is not None:
            best = GridShape(alloc, own, f0, f({(g, q): float(r) for g, q, r in alloc.items()}))
    if best is None:
        raise ValueError(
            f"grid_shape: the lower bounds (total {float(sum((lower or {}).values(), Fraction(0))):.10g}) "
            f"fit on no grid at total ρ {float(total):.10g}"
        )
    return best


# --------------------------------------------------------------------------- the representation before issue 35
#: every budget floored to a multiple of 1/FLAT_DENOMINATOR, then raised to its bound: the proposals of
#: the optimizer before this module (kept only so ``python -m bench.optimizer`` can measure both in one run)
FLAT_DENOMINATOR = 10**5
_FLAT: ContextVar[bool] = ContextVar("flat_representation", default=False)


@contextlib.contextmanager
def flat_representation() -> Iterator[None]:
    """Within this block :func:`grid_shape` returns the pre-issue-35 proposals (budgets floored to
    1/10⁵ each, the total below the requested one): the baseline of ``bench.optimizer``."""
    token = _FLAT.set(True)
    try:
        yield
    finally:
        _FLAT.reset(token)


def _flat_shape(
    baseline: Allocation, rho: Mapping[Key, float], lower: Mapping[Key, Fraction] | None, name: str | None
) -> Allocation:
    d = FLAT_DENOMINATOR
    lo = lower or {}
    rhos = {k: max(Fraction(math.floor(v * d), d), Fraction(lo.get(k, 0)), Fraction(1, d)) for k, v in rho.items()}
    levels = tuple(
        GeolevelBudget(lv.name, lv.queries, tuple(rhos[(lv.name, q)] for q in lv.queries)) for lv in baseline.levels
    )
    return Allocation(levels, name or baseline.name, baseline.provenance, baseline.run_type)
