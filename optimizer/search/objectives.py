"""What "less noise" means: the optimizer's named objectives, the Pareto guard, the convex optimum.

Every allocation is compared with a *baseline* (the production allocation, or the scenario's
own): per measurement q (a (geolevel, query) pair with its nominal budget ρ_q) the noise
variance is σ_q² = 1/ρ_q, and a new allocation ρ' has the *relative variance*
r_q = σ'_q²/σ_q² = ρ_q/ρ'_q (< 1: less noise than today).  The objectives
(:data:`OBJECTIVES`, chosen by name in a scenario):

``minimax-relative``
    max_q r_q.  Its optimum under the exact promise is the uniform rescale ρ' = c·ρ: if every
    r_q ≤ t then Σ ρ' ≥ Σ ρ / t, and among allocations of a given total the exact guarantee
    hardly depends on the shape, so no allocation can cut every query's variance by more than the
    uniform rescale does (arXiv 2606.29835 §4 for the near shape-independence).
``mean-relative-variance``
    Σ_q w_q r_q / Σ_q w_q — scale-free: a Block count and a State count weigh the same.
``sum-variance``
    Σ_q w_q σ'_q² — absolute variances; dominated by the smallest budgets (Block, σ² ≈ 909 in
    DHC persons), so its optimum flattens the allocation.  Kept for comparison, labelled as such.
``published-variance``
    Σ_q w_q V'_q/V_q / Σ_q w_q, V_q the variance of the *published* count of measurement q after
    the hierarchy's least-squares post-processing, with the hierarchy's fan-outs
    (:mod:`optimizer.search.published_variance`; arXiv 0904.0942) — scale-free like the mean relative
    variance.  Not of the form Σ a_q/ρ'_q, but convex in ρ' and solved exactly by its own convex
    program (:meth:`Objective.optimum`).

The **Pareto guard** (on by default for every objective but minimax, whose optimum satisfies
it): ρ'_q ≥ ρ_q/(1 − f) for every q, i.e. no query noisier than in the baseline and, with a
floor f = x/100, every query's variance lower by at least x % — the rule the Census Bureau
applied to design changes ("change only if no query's expected error grows"; Abowd et al.,
*Geographic Spines in the 2020 Census DAS TopDown Algorithm*, §2.4).

Every objective but minimax and published-variance is Σ_q a_q/ρ'_q for coefficients a_q ≥ 0
(:meth:`Objective.coefficients`), a convex function of ρ'; :func:`convex_optimum` minimises it
exactly in that sense with cvxpy (Clarabel) under Σ ρ' ≤ total and the guard's lower bounds,
and returns exact fractions that satisfy the bounds exactly.  The exact accountant then
calibrates the result (the total it may spend is the uniform rescale's, to within ~1e-5) and the
confirmation checks every pair.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, Any

import numpy as np

from optimizer.census.allocation import Allocation
from optimizer.search.published_variance import published_variance_optimum, relative_published_variance
from optimizer.search.shares import InfeasibleGuard, solve_shares  # re-exported

if TYPE_CHECKING:
    from optimizer.search.published_variance import FanOuts

__all__ = [
    "DEFAULT_OBJECTIVE",
    "OBJECTIVES",
    "InfeasibleGuard",
    "Objective",
    "ParetoGuard",
    "convex_optimum",
    "get_objective",
    "max_variance_ratio",
    "mean_relative_variance",
    "relative_variances",
    "solve_shares",
]

Key = tuple[str, str]


def relative_variances(new: Allocation, baseline: Allocation) -> dict[Key, Fraction]:
    """σ'_q²/σ_q² = ρ_q/ρ'_q per measurement (exact)."""
    base = {(g, q): r for g, q, r in baseline.items()}
    out = {}
    for g, q, r in new.items():
        if (g, q) not in base:
            raise ValueError(f"relative_variances: measurement {g}/{q} is not in the baseline allocation")
        out[(g, q)] = base[(g, q)] / r
    if len(out) != len(base):
        missing = sorted(set(base) - set(out))[:3]
        raise ValueError(f"relative_variances: baseline measurement(s) {missing} missing from the new allocation")
    return out


def max_variance_ratio(new: Allocation, baseline: Allocation) -> Fraction:
    """max_q σ'_q²/σ_q² (exact; ≤ 1 means no query is noisier than in the baseline)."""
    return max(relative_variances(new, baseline).values())


def mean_relative_variance(new: Allocation, baseline: Allocation, weights: Mapping[Key, Any] | None = None) -> Fraction:
    """Σ_q w_q σ'_q²/σ_q² / Σ_q w_q (exact; unweighted mean when ``weights`` is None)."""
    r = relative_variances(new, baseline)
    w = {k: Fraction(weights[k]) if weights is not None else Fraction(1) for k in r}
    return sum((w[k] * v for k, v in r.items()), Fraction(0)) / sum(w.values(), Fraction(0))


@dataclass(frozen=True)
class Objective:
    """A named objective (see the module docstring).

    Attributes:
        name: the scenario's ``objective`` value.
        description: one line a report can print next to the number.
        scale_free: whether a uniform rescale changes it by the same factor for every weighting.
        convex: whether it is convex in the budgets ρ'_q (then its calibrated convex optimum is the
            answer, and the Optuna search is off unless a scenario asks for it).
        fan_outs: published-variance only: the hierarchy's fan-outs (``None``: the shipped 2020
            ones, :func:`optimizer.search.published_variance.default_fan_outs`); set with :meth:`with_fan_outs`.
    """

    name: str
    description: str
    scale_free: bool
    fan_outs: FanOuts | None = None
    convex: bool = True

    def with_fan_outs(self, fan_outs: FanOuts | None) -> Objective:
        """This objective with the scenario's fan-outs (only meaningful for published-variance)."""
        return replace(self, fan_outs=fan_outs)

    def coefficients(self, baseline: Allocation, weights: Mapping[Key, Any]) -> dict[Key, Fraction]:
        """a_q of the objective Σ_q a_q/ρ'_q (not defined for minimax-relative)."""
        if self.name == "sum-variance":
            return {(g, q): Fraction(weights[(g, q)]) for g, q, _ in baseline.items()}
        if self.name == "mean-relative-variance":
            total = sum((Fraction(weights[(g, q)]) for g, q, _ in baseline.items()), Fraction(0))
            return {(g, q): Fraction(weights[(g, q)]) * r / total for g, q, r in baseline.items()}
        raise ValueError(f"objective {self.name!r} is not a weighted sum of variances (use Objective.optimum)")

    def value(self, new: Allocation, baseline: Allocation, weights: Mapping[Key, Any]) -> Fraction:
        """The objective of ``new`` (exact)."""
        if self.name == "minimax-relative":
            return max_variance_ratio(new, baseline)
        if self.name == "published-variance":
            return relative_published_variance(new, baseline, weights, self.fan_outs)
        a = self.coefficients(baseline, weights)
        return sum((a[(g, q)] / r for g, q, r in new.items()), Fraction(0))

    def optimum(
        self,
        baseline: Allocation,
        weights: Mapping[Key, Any],
        total: Fraction,
        lower: Mapping[Key, Fraction] | None = None,
        *,
        on_inaccurate: Callable[[str], None] | None = None,
        unrounded: bool = False,
    ) -> Any:
        """The convex optimum of this objective under Σ ρ' ≤ ``total`` and ρ' ≥ ``lower`` (exact fractions
        on the proposal grid; with ``unrounded`` the solver's float budgets ``{key: ρ'}``).

        Weighted sums of variances: :func:`convex_optimum` of :meth:`coefficients`; published-variance:
        :func:`optimizer.search.published_variance.published_variance_optimum`.  Not defined for minimax-relative
        (its optimum is the uniform rescale)."""
        if self.name == "published-variance":
            fo = self.fan_outs
            return published_variance_optimum(
                baseline, weights, total, lower, fan_outs=fo, on_inaccurate=on_inaccurate, unrounded=unrounded
            )
        a = self.coefficients(baseline, weights)
        return convex_optimum(baseline, a, total, lower, on_inaccurate=on_inaccurate, unrounded=unrounded)

    def rounding(
        self, new: Allocation, baseline: Allocation, weights: Mapping[Key, Any], lower: Mapping[Key, Fraction] | None
    ) -> dict[str, float]:
        """What putting ``new`` on the proposal grid cost: this objective of the unrounded convex optimum
        at the same total ρ and under the same ``lower`` bounds (the solver's floats, evaluated exactly)
        and of ``new``, and their relative difference (issue 35 asks ≤ 1e-4)."""
        rho = self.optimum(baseline, weights, new.total_rho, lower, unrounded=True)
        floats = baseline.with_rho({k: Fraction(v) for k, v in rho.items()})
        best = float(self.value(floats, baseline, weights))
        got = float(self.value(new, baseline, weights))
        return {"objective_unrounded": best, "objective_proposal": got, "relative_difference": (got - best) / best}

    def drop_percent(self, new: Allocation, baseline: Allocation, weights: Mapping[Key, Any]) -> float:
        """100·(1 − value(new)/value(baseline)): how much the objective falls, in %."""
        return float(100 * (1 - self.value(new, baseline, weights) / self.value(baseline, baseline, weights)))


OBJECTIVES: dict[str, Objective] = {
    o.name: o
    for o in (
        Objective(
            "minimax-relative",
            "the largest relative variance σ'²/σ² over all queries (the uniform rescale is its optimum)",
            True,
        ),
        Objective(
            "mean-relative-variance",
            "the (weighted) mean over queries of the relative variance σ'²/σ² (scale-free)",
            True,
        ),
        Objective(
            "sum-variance",
            "the (weighted) sum of absolute noise variances Σ w σ'² (dominated by the smallest budgets, e.g. Block)",
            False,
        ),
        Objective(
            "published-variance",
            "the (weighted) mean over queries of the relative variance V'/V of the published count after the "
            "hierarchy's least-squares post-processing (2020 fan-outs; scale-free)",
            True,
        ),
    )
}
#: the objective of a scenario that names none (with the Pareto guard on)
DEFAULT_OBJECTIVE = "mean-relative-variance"


def get_objective(name: str, where: str = "objective") -> Objective:
    """The :class:`Objective` called ``name``; an unknown name is a one-line error listing the known ones."""
    try:
        return OBJECTIVES[name]
    except KeyError:
        raise ValueError(f"{where}: unknown objective {name!r}; known: {', '.join(OBJECTIVES)}") from None


@dataclass(frozen=True)
class ParetoGuard:
    """ρ'_q ≥ ρ_q/(1 − floor_percent/100) for every measurement q of the baseline.

    ``floor_percent = 0`` (default): no query noisier than in the baseline."""

    floor_percent: Fraction = Fraction(0)

    def __post_init__(self):
        f = Fraction(self.floor_percent)
        if not 0 <= f < 100:
            raise ValueError(f"pareto floor must be in [0, 100) percent, got {self.floor_percent}")
        object.__setattr__(self, "floor_percent", f)

    @property
    def max_ratio(self) -> Fraction:
        """The largest relative variance σ'²/σ² the guard allows."""
        return 1 - self.floor_percent / 100

    def lower_bounds(self, baseline: Allocation) -> dict[Key, Fraction]:
        """ρ_q / max_ratio per measurement (exact)."""
        return {(g, q): r / self.max_ratio for g, q, r in baseline.items()}

    def holds(self, new: Allocation, baseline: Allocation) -> bool:
        """Whether every query of ``new`` meets the guard (exact comparison)."""
        return max_variance_ratio(new, baseline) <= self.max_ratio

    def describe(self) -> str:
        if self.floor_percent == 0:
            return "Pareto guard: no query's noise variance above the baseline's"
        return f"Pareto guard: every query's noise variance at least {self.floor_percent} % below the baseline's"


def convex_optimum(
    baseline: Allocation,
    coefficients: Mapping[Key, Fraction],
    total: Fraction,
    lower: Mapping[Key, Fraction] | None = None,
    *,
    name: str | None = None,
    on_inaccurate: Callable[[str], None] | None = None,
    unrounded: bool = False,
) -> Any:
    """argmin Σ_q a_q/ρ'_q subject to Σ_q ρ'_q ≤ ``total`` and ρ'_q ≥ ℓ_q (``lower``), as exact fractions.

    Solved with cvxpy/Clarabel in scaled variables x = ρ'/total; the solution is put on the
    proposal grid (:mod:`optimizer.search.grid`: level shares × query shares, so every pair's lattice
    stays small; Σ ρ' = ``total`` exactly and every bound holds exactly), or with ``unrounded`` the
    solver's float budgets ``{key: ρ'}``.  Without bounds the optimum is ρ'_q ∝ √a_q.

    Raises:
        InfeasibleGuard: Σ ℓ_q > total.
        RuntimeError: the solver did not reach OPTIMAL (OPTIMAL_INACCURATE calls ``on_inaccurate``).
    """
    import cvxpy as cp  # noqa: PLC0415 - 1.4 s to import; only the convex solves need it

    keys = [(g, q) for g, q, _ in baseline.items()]
    lo = {k: Fraction(0) for k in keys} if lower is None else {k: Fraction(lower[k]) for k in keys}
    need = sum(lo.values(), Fraction(0))
    if need > total:
        raise InfeasibleGuard(
            f"the guard's lower bounds need total ρ {float(need):.10g} but only {float(total):.10g} can be spent"
        )
    av = np.array([float(coefficients[k]) for k in keys], dtype=float)
    if not (av >= 0).all() or not av.any():
        raise ValueError("convex_optimum: coefficients must be >= 0 and not all 0")
    av = av / av.max()
    coef = {k: float(coefficients[k]) for k in keys}
    return solve_shares(
        baseline, keys, lo, total, lambda x: av @ cp.inv_pos(x), "convex_optimum", name, on_inaccurate, unrounded, coef
    )
