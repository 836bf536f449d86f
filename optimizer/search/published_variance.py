"""Published variance: the variance of a published count after the hierarchy's least-squares post-processing.

The noise variance σ_q² = 1/ρ_q of a measurement is not the error a data user sees: the TopDown
Algorithm makes the noisy measurements of all geolevels consistent, so a published County count
borrows strength from its State above and its tracts below.  This module computes that error
under the **standard generalized-least-squares (GLS) model of a hierarchy** (Hay, Rastogi,
Miklau & Suciu, *Boosting the Accuracy of Differentially Private Histograms Through
Consistency*, arXiv 0904.0942, §4, the two-pass estimator for a tree of equal fan-outs):

* geolevels ℓ = 1 (top) … L (bottom); every geounit at level ℓ has exactly c_ℓ children at level
  ℓ+1 (:class:`FanOuts`; a real hierarchy's average fan-out stands in for it);
* every geounit at level ℓ is measured with independent noise of variance σ²_ℓ, or not at all
  (1/σ²_ℓ = 0, the ``None`` of :func:`published_variances`);
* the published count of a geounit is the GLS (best linear unbiased) estimate of its true count
  from all measurements, i.e. the sum of the GLS estimates of its bottom-level units.

Its variance V_ℓ is the same for every geounit of a level and follows from two passes,
computed exactly in fractions (:func:`published_variances`)::

    bottom-up   u_L = σ²_L,   u_ℓ = (1/σ²_ℓ + 1/(c_ℓ u_{ℓ+1}))⁻¹      (u_ℓ = c_ℓ u_{ℓ+1} if ℓ is not measured)
    top-down    V_1 = u_1,    V_{ℓ+1} = (1 − 1/c_ℓ) u_{ℓ+1} + V_ℓ / c_ℓ²

(u_ℓ is the variance of the estimate from the subtree of a level-ℓ unit alone; the top-down
step spreads the parent's residual equally over its c_ℓ children.)  The bottom level must be
measured: otherwise the bottom-level counts are not identified and u_L is infinite.

**Queries across geolevels.**  An :class:`~optimizer.census.allocation.Allocation` measures named
queries at every geolevel; a query name denotes the same marginal at every geolevel (DHC: the
same 10 queries at all 8 geolevels; P.L. 94-171 persons: ``total`` is not measured at US).
Each query is its own hierarchy, its cells independent of each other and of the other queries
(the model ignores the consistency *between* queries that TopDown also imposes, so it is a
per-query upper bound on the benefit of post-processing, not a simulation of TopDown).  The
published variance of query q at level ℓ uses q's σ² = 1/ρ at every geolevel where q is
measured and 1/σ² = 0 where it is not; a query whose lowest measurement is above the bottom
geolevel is a hierarchy that ends at that lowest level (the unmeasured levels below carry no
information).  :func:`allocation_published_variances` returns V for every measured
(geolevel, query).

**Convexity.**  The precision P_ℓ = 1/u_ℓ = ρ_ℓ + P_{ℓ+1}/c_ℓ is *linear* in the budgets ρ
(P_ℓ = Σ_{k≥ℓ} ρ_k / (c_ℓ ⋯ c_{k−1})), so u_ℓ = 1/P_ℓ is convex in ρ, and V_ℓ = Σ_k β_{ℓk} u_k
with β_{ℓk} ≥ 0 (all c ≥ 1) is a non-negative combination of them: every V_ℓ, and every
non-negative weighted sum of V's, is a convex function of ρ — exactly, in cvxpy's DCP rules as
``gamma @ inv_pos(P @ rho)``; no relaxation is needed.  :func:`published_variance_optimum`
minimises the scale-free objective Σ w V'_ℓ / V_ℓ under Σ ρ' ≤ total and ρ' ≥ lower with it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from itertools import pairwise
from typing import Any, NamedTuple

import numpy as np

from accountant.exact import to_fraction
from optimizer.census.allocation import Allocation
from optimizer.search.shares import InfeasibleGuard, solve_shares

__all__ = [
    "DHC_FAN_OUTS_2020",
    "PL94_FAN_OUTS_2020",
    "TALLIES_2020",
    "TALLIES_2020_SOURCE",
    "FanOuts",
    "GeolevelPublishedVariance",
    "allocation_published_variances",
    "bottom_up_variances",
    "default_fan_outs",
    "published_variance_optimum",
    "published_variance_table",
    "published_variances",
    "relative_published_variance",
    "variance_weights",
]

Key = tuple[str, str]


def _exact(value: Any, what: str) -> Fraction:
    """``value`` as an exact Fraction (:func:`accountant.exact.to_fraction`), errors naming ``what``."""
    if isinstance(value, float):
        raise ValueError(f"{what}: got float {value!r}; floats are not exact, write it as a string like '3143/51'")
    try:
        return to_fraction(value, name=what)
    except (TypeError, ValueError):
        raise ValueError(f"{what}: cannot parse {value!r} as an exact rational") from None


@dataclass(frozen=True)
class FanOuts:
    """A hierarchy's geolevels (top first) and the average fan-out between consecutive ones.

    Attributes:
        geolevels: the geolevel names, top-down.
        fan_outs: c_ℓ = (number of units at level ℓ+1)/(number at level ℓ), exact, one fewer
            than ``geolevels``; each ≥ 1 (the model needs every parent to have ≥ 1 child on average).
        source: where the counts come from (cited in reports).
        assumptions: which levels' counts are assumed rather than published, and how.
    """

    geolevels: tuple[str, ...]
    fan_outs: tuple[Fraction, ...]
    source: str
    assumptions: str = ""

    def __post_init__(self):
        levels = tuple(self.geolevels)
        if not levels or any(not isinstance(g, str) or not g for g in levels):
            raise ValueError(f"FanOuts: geolevels must be non-empty strings, got {levels!r}")
        if len(set(levels)) != len(levels):
            raise ValueError(f"FanOuts: repeated geolevel in {levels!r}")
        fans = tuple(_exact(c, f"FanOuts fan-out {i + 1}") for i, c in enumerate(self.fan_outs))
        if len(fans) != len(levels) - 1:
            raise ValueError(f"FanOuts: {len(levels)} geolevels need {len(levels) - 1} fan-outs, got {len(fans)}")
        for (upper, lower), c in zip(pairwise(levels), fans):
            if c < 1:
                raise ValueError(f"FanOuts: fan-out {upper} -> {lower} must be >= 1, got {c}")
        object.__setattr__(self, "geolevels", levels)
        object.__setattr__(self, "fan_outs", fans)

    @classmethod
    def from_counts(cls, counts: Mapping[str, Any], source: str, assumptions: str = "") -> FanOuts:
        """From the number of units per geolevel (``{geolevel: count}``, top-down): c_ℓ = n_{ℓ+1}/n_ℓ."""
        names = tuple(counts)
        n = [_exact(counts[g], f"FanOuts count of {g}") for g in names]
        for g, v in zip(names, n):
            if v <= 0:
                raise ValueError(f"FanOuts: count of {g} must be > 0, got {v}")
        return cls(names, tuple(b / a for a, b in pairwise(n)), source, assumptions)

    def fan_out(self, upper: str, lower: str) -> Fraction:
        """The fan-out from ``upper`` to ``lower`` (the product over the levels between them)."""
        i, j = self.geolevels.index(upper), self.geolevels.index(lower)
        if j <= i:
            raise ValueError(f"FanOuts: {lower!r} is not below {upper!r}")
        out = Fraction(1)
        for c in self.fan_outs[i:j]:
            out *= c
        return out

    def restrict(self, geolevels: Sequence[str]) -> FanOuts:
        """The hierarchy of ``geolevels`` (a top-down subsequence of these): skipped levels multiply out.

        Raises:
            ValueError: an unknown geolevel or one out of order (naming both).
        """
        wanted = tuple(geolevels)
        unknown = [g for g in wanted if g not in self.geolevels]
        if unknown:
            raise ValueError(
                f"fan-outs: no fan-out for geolevel(s) {unknown}; the hierarchy has {', '.join(self.geolevels)}"
            )
        idx = [self.geolevels.index(g) for g in wanted]
        if idx != sorted(idx) or len(set(idx)) != len(idx):
            raise ValueError(f"fan-outs: geolevels {list(wanted)} are not top-down in {', '.join(self.geolevels)}")
        if wanted == self.geolevels:
            return self
        fans = tuple(self.fan_out(a, b) for a, b in pairwise(wanted))
        return FanOuts(wanted, fans, self.source, self.assumptions)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready: geolevels, fan-outs as exact fraction strings, source, assumptions."""
        return {
            "geolevels": list(self.geolevels),
            "fan_outs": [str(c) for c in self.fan_outs],
            "source": self.source,
            "assumptions": self.assumptions,
        }


#: Number of geographic units of the 2020 Census, 50 states and DC (Puerto Rico excluded)
TALLIES_2020: dict[str, int] = {
    "US": 1,
    "State": 51,
    "County": 3143,
    "Tract": 84414,
    "Block_Group": 239780,
    "Block": 8132968,
}
TALLIES_2020_SOURCE = (
    'U.S. Census Bureau, "2020 Census Tallies of United States, States, Counties, Census Tracts, '
    'Block Groups and Blocks" (50 states and DC): 1 US, 51 states (incl. DC), 3,143 counties, '
    "84,414 tracts, 239,780 block groups, 8,132,968 blocks"
)

#: P.L. 94-171 runs measure on tabulation geography: every level has its published tally.
PL94_FAN_OUTS_2020 = FanOuts.from_counts(
    {g: TALLIES_2020[g] for g in ("US", "State", "County", "Tract", "Block_Group", "Block")},
    TALLIES_2020_SOURCE,
    "every geolevel is tabulation geography with a published 2020 tally",
)

#: DHC runs measure on the optimized spine (Abowd et al., "Geographic Spines in the 2020 Census
#: DAS TopDown Algorithm", arXiv 2203.16654), whose Prim, Tract_Subset_Group and Tract_Subset
#: levels and optimized block groups are not tabulation geography and have no published tally.
DHC_FAN_OUTS_2020 = FanOuts.from_counts(
    {
        "US": 1,
        "State": TALLIES_2020["State"],
        "County": TALLIES_2020["County"],
        "Prim": TALLIES_2020["County"],
        "Tract_Subset_Group": TALLIES_2020["County"],
        "Tract_Subset": TALLIES_2020["Tract"],
        "Block_Group": TALLIES_2020["Block_Group"],
        "Block": TALLIES_2020["Block"],
    },
    TALLIES_2020_SOURCE,
    "DHC spine levels without a published tally are assumed: Prim and Tract_Subset_Group have as many "
    "units as counties (3,143; fan-out 1 from County to Prim and from Prim to Tract_Subset_Group), "
    "Tract_Subset as many as tabulation tracts (84,414) and the optimized Block_Group as many as "
    "tabulation block groups (239,780); the real spine has more Prim units in the strong-MCD states "
    "and different tract subsets and block groups (arXiv 2203.16654) - override with the scenario's fan-outs",
)


def default_fan_outs(allocation: Allocation) -> FanOuts:
    """The shipped 2020 fan-outs for ``allocation``'s geolevels (DHC spine or P.L. 94-171 tabulation).

    Raises:
        ValueError: a custom geography, or a run without the US level (Puerto Rico's counts are
            not shipped): the scenario must then give its own fan-outs.
    """
    levels = allocation.geolevels
    if levels[0] != "US":
        raise ValueError(
            f"allocation {allocation.name!r}: no shipped fan-outs for a hierarchy topped by {levels[0]!r} "
            "(the 2020 tallies are for the US, 50 states and DC); give the scenario's fan_outs"
        )
    for known in (DHC_FAN_OUTS_2020, PL94_FAN_OUTS_2020):
        if all(g in known.geolevels for g in levels):
            return known.restrict(levels)
    raise ValueError(
        f"allocation {allocation.name!r}: no shipped fan-outs for geolevels {', '.join(levels)}; "
        "give the scenario's fan_outs"
    )


# --------------------------------------------------------------------------- the recursion


def _check_chain(sigma2: Sequence[Fraction | None], fan_outs: Sequence[Fraction]) -> None:
    if not sigma2:
        raise ValueError("published variance: no geolevels")
    if len(fan_outs) != len(sigma2) - 1:
        raise ValueError(f"published variance: {len(sigma2)} geolevels need {len(sigma2) - 1} fan-outs")
    if sigma2[-1] is None:
        raise ValueError(
            "published variance: the bottom geolevel is not measured, so its counts are not identified "
            "(infinite variance); end the hierarchy at the lowest measured geolevel"
        )
    for s in sigma2:
        if s is not None and s <= 0:
            raise ValueError(f"published variance: noise variance must be > 0, got {s}")
    for c in fan_outs:
        if c < 1:
            raise ValueError(f"published variance: fan-out must be >= 1, got {c}")


def bottom_up_variances(sigma2: Sequence[Fraction | None], fan_outs: Sequence[Fraction]) -> tuple[Fraction, ...]:
    """u_ℓ: u_L = σ²_L, u_ℓ = (1/σ²_ℓ + 1/(c_ℓ u_{ℓ+1}))⁻¹, 1/σ² = 0 where ``sigma2[ℓ]`` is None (exact)."""
    _check_chain(sigma2, fan_outs)
    s2 = [None if s is None else Fraction(s) for s in sigma2]
    c = [Fraction(x) for x in fan_outs]
    last = s2[-1]
    assert last is not None  # _check_chain
    precision = [Fraction(0)] * len(s2)
    precision[-1] = 1 / last
    for i in range(len(s2) - 2, -1, -1):
        s = s2[i]
        precision[i] = (0 if s is None else 1 / s) + precision[i + 1] / c[i]
    return tuple(1 / p for p in precision)


def published_variances(sigma2: Sequence[Fraction | None], fan_outs: Sequence[Fraction]) -> tuple[Fraction, ...]:
    """V_ℓ, the GLS published variance per level (module docstring), exact.

    Args:
        sigma2: σ²_ℓ per level top-down, ``None`` where the level is not measured (bottom must be).
        fan_outs: c_ℓ between level ℓ and ℓ+1 (each ≥ 1).
    """
    u = bottom_up_variances(sigma2, fan_outs)
    v = [u[0]]
    for i, c in enumerate(Fraction(x) for x in fan_outs):
        v.append((1 - 1 / c) * u[i + 1] + v[i] / (c * c))
    return tuple(v)


def variance_weights(fan_outs: Sequence[Fraction]) -> tuple[tuple[Fraction, ...], ...]:
    """β with V_ℓ = Σ_k β_{ℓk} u_k (β_{1·} = e_1, β_{ℓ+1} = (1 − 1/c_ℓ) e_{ℓ+1} + β_ℓ/c_ℓ²; all ≥ 0)."""
    n = len(fan_outs) + 1
    rows = [tuple(Fraction(int(k == 0)) for k in range(n))]
    for i, c in enumerate(Fraction(x) for x in fan_outs):
        rows.append(tuple(rows[i][k] / (c * c) + (1 - 1 / c if k == i + 1 else 0) for k in range(n)))
    return tuple(rows)


def _precision_matrix(fan_outs: Sequence[Fraction]) -> tuple[tuple[Fraction, ...], ...]:
    """M with P_ℓ = Σ_k M_{ℓk} ρ_k: M_{ℓk} = 1/(c_ℓ ⋯ c_{k−1}) for k ≥ ℓ, else 0."""
    n = len(fan_outs) + 1
    rows = []
    for i in range(n):
        row, prod = [Fraction(0)] * n, Fraction(1)
        for k in range(i, n):
            row[k] = 1 / prod
            if k < n - 1:
                prod *= Fraction(fan_outs[k])
        rows.append(tuple(row))
    return tuple(rows)


# --------------------------------------------------------------------------- allocations


def _chains(allocation: Allocation) -> dict[str, list[int]]:
    """query name -> indices of the geolevels where it is measured (top-down)."""
    out: dict[str, list[int]] = {}
    for i, lv in enumerate(allocation.levels):
        for q in lv.queries:
            out.setdefault(q, []).append(i)
    return out


def allocation_published_variances(allocation: Allocation, fan_outs: FanOuts | None = None) -> dict[Key, Fraction]:
    """V for every measured (geolevel, query) of ``allocation`` (σ² = 1/ρ; exact).

    ``fan_outs`` defaults to :func:`default_fan_outs`; it is restricted to the allocation's geolevels.
    Each query's hierarchy runs from the top geolevel to its lowest measured one (module docstring).
    """
    fo = (fan_outs or default_fan_outs(allocation)).restrict(allocation.geolevels)
    rho = {(g, q): r for g, q, r in allocation.items()}
    names = allocation.geolevels
    out: dict[Key, Fraction] = {}
    for q, idx in _chains(allocation).items():
        bottom = idx[-1]
        s2 = [1 / rho[(names[i], q)] if (names[i], q) in rho else None for i in range(bottom + 1)]
        v = published_variances(s2, fo.fan_outs[:bottom])
        for i in idx:
            out[(names[i], q)] = v[i]
    return {(g, q): out[(g, q)] for g, q, _ in allocation.items()}


def relative_published_variance(
    new: Allocation,
    baseline: Allocation,
    weights: Mapping[Key, Any] | None = None,
    fan_outs: FanOuts | None = None,
) -> Fraction:
    """Σ_q w_q V'_q/V_q / Σ_q w_q over the baseline's measured (geolevel, query) (exact; 1 for the baseline).

    Scale-free like the mean relative variance: a uniform rescale ρ' = cρ gives exactly 1/c.

    Raises:
        ValueError: ``new`` does not measure exactly the baseline's (geolevel, query) pairs.
    """
    if {(g, q) for g, q, _ in new.items()} != {(g, q) for g, q, _ in baseline.items()}:
        raise ValueError("published variance: the new allocation must measure the baseline's (geolevel, query) pairs")
    fo = fan_outs or default_fan_outs(baseline)
    vb = allocation_published_variances(baseline, fo)
    vn = allocation_published_variances(new, fo)
    w = {k: Fraction(1) if weights is None else Fraction(weights[k]) for k in vb}
    return sum((w[k] * vn[k] / vb[k] for k in vb), Fraction(0)) / sum(w.values(), Fraction(0))


def published_variance_optimum(
    baseline: Allocation,
    weights: Mapping[Key, Any],
    total: Fraction,
    lower: Mapping[Key, Fraction] | None = None,
    *,
    fan_outs: FanOuts | None = None,
    name: str | None = None,
    on_inaccurate: Callable[[str], None] | None = None,
    unrounded: bool = False,
) -> Any:
    """argmin of :func:`relative_published_variance` under Σ ρ' ≤ ``total`` and ρ' ≥ ``lower``, as fractions.

    The exact convex program of the module docstring (Σ γ_{qk}/P_{qk}(ρ'), P linear in ρ',
    γ ≥ 0) solved with cvxpy/Clarabel in scaled variables ρ'/total, then put on the proposal grid
    (:func:`optimizer.search.shares.solve_shares`; every bound holds exactly, Σ ρ' = total), or with
    ``unrounded`` the solver's float budgets.

    Raises:
        optimizer.search.objectives.InfeasibleGuard: Σ lower > total.
        RuntimeError: the solver did not reach OPTIMAL.
    """
    import cvxpy as cp  # noqa: PLC0415 - 1.4 s to import; only the convex solves need it

    keys = [(g, q) for g, q, _ in baseline.items()]
    lo = {k: Fraction(0) for k in keys} if lower is None else {k: Fraction(lower[k]) for k in keys}
    need = sum(lo.values(), Fraction(0))
    if need > total:
        raise InfeasibleGuard(
            f"the guard's lower bounds need total ρ {float(need):.10g} but only {float(total):.10g} can be spent"
        )
    fo = (fan_outs or default_fan_outs(baseline)).restrict(baseline.geolevels)
    vb = allocation_published_variances(baseline, fo)
    wsum = sum((Fraction(weights[k]) for k in keys), Fraction(0))
    col = {k: j for j, k in enumerate(keys)}
    names = baseline.geolevels
    p_rows: list[np.ndarray] = []
    gamma: list[float] = []
    for q, idx in _chains(baseline).items():
        bottom = idx[-1]
        beta = variance_weights(fo.fan_outs[:bottom])
        prec = _precision_matrix(fo.fan_outs[:bottom])
        for k in range(bottom + 1):
            # coefficient of u_k in the objective: Σ over measured levels ℓ of (w/W)/V_base · β_{ℓk}
            g_k = sum(
                (Fraction(weights[(names[i], q)]) / wsum / vb[(names[i], q)] * beta[i][k] for i in idx),
                Fraction(0),
            )
            if g_k == 0:
                continue
            row = np.zeros(len(keys))
            for j in idx:
                if j >= k:
                    row[col[(names[j], q)]] = float(prec[k][j])
            p_rows.append(row)
            gamma.append(float(g_k))
    gv = np.array(gamma)
    gv = gv / gv.max()
    pm = np.array(p_rows)
    return solve_shares(
        baseline,
        keys,
        lo,
        total,
        lambda x: gv @ cp.inv_pos(pm @ x),
        "published_variance_optimum",
        name,
        on_inaccurate,
        unrounded=unrounded,
    )


# --------------------------------------------------------------------------- report table


class GeolevelPublishedVariance(NamedTuple):
    """One row of :func:`published_variance_table` (exact fractions; format them for display)."""

    geolevel: str
    n_queries: int
    mean_today: Fraction
    mean_after: Fraction
    change_percent: Fraction


def published_variance_table(
    new: Allocation, baseline: Allocation, fan_outs: FanOuts | None = None
) -> list[GeolevelPublishedVariance]:
    """Per geolevel: measured queries, mean published variance in the baseline and in ``new``, and
    the change 100·(after/today − 1) % (negative: less error), top-down."""
    fo = fan_outs or default_fan_outs(baseline)
    vb = allocation_published_variances(baseline, fo)
    vn = allocation_published_variances(new, fo)
    rows = []
    for lv in baseline.levels:
        keys = [(lv.name, q) for q in lv.queries]
        today = sum((vb[k] for k in keys), Fraction(0)) / len(keys)
        after = sum((vn[k] for k in keys), Fraction(0)) / len(keys)
        rows.append(GeolevelPublishedVariance(lv.name, len(keys), today, after, 100 * (after / today - 1)))
    return rows
