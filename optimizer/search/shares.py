"""Budgets as shares of a total: the convex solve and its exact rounding, shared by the objectives.

:func:`solve_shares` minimises a convex objective over shares x = ρ'/total (Σ x ≤ 1, x ≥ lower
bounds) with cvxpy/Clarabel and returns exact fractions through :func:`exact_shape` (rounded down to
the grid 1/:data:`SHAPE_DENOMINATOR`, then raised to the bounds); :class:`InfeasibleGuard` says the
bounds need more than the total.  A leaf of the optimizer's objectives: :mod:`optimizer.search.objectives`
and :mod:`optimizer.search.published_variance` both build on it (and neither on the other's internals).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from optimizer.census.allocation import Allocation, GeolevelBudget

__all__ = ["SHAPE_DENOMINATOR", "InfeasibleGuard", "exact_shape", "solve_shares"]

Key = tuple[str, str]
#: denominator of the convex solution's budgets (as optimizer.search.SHAPE_DENOMINATOR: a small
#: common denominator keeps the accountant's lattice small); bounds are then imposed exactly
SHAPE_DENOMINATOR = 10**5


class InfeasibleGuard(ValueError):
    """The guard's lower bounds already need more budget than the exact promise allows."""


def solve_shares(
    baseline: Allocation,
    keys: Sequence[Key],
    lo: Mapping[Key, Fraction],
    total: Fraction,
    objective: Callable[[Any], Any],
    who: str,
    name: str | None = None,
    on_inaccurate: Callable[[str], None] | None = None,
) -> Allocation:
    """argmin ``objective(x)`` over shares x = ρ'/total (cvxpy/Clarabel, tolerances 1e-12) subject to
    Σ x ≤ 1 and x ≥ ℓ/total (and > 0), as exact fractions (:func:`exact_shape`). ``who`` names
    the caller in the error raised when the solver does not reach OPTIMAL; OPTIMAL_INACCURATE
    calls ``on_inaccurate`` instead."""
    import cvxpy as cp  # noqa: PLC0415 - 1.4 s to import; only the convex solves need it

    scale = float(total)
    lov = np.array([float(lo[k]) / scale for k in keys], dtype=float)
    eps_lo = np.maximum(lov, 1e-9 / len(keys))
    x = cp.Variable(len(keys))
    prob = cp.Problem(cp.Minimize(objective(x)), [cp.sum(x) <= 1, x >= eps_lo])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-12, tol_gap_rel=1e-12, tol_feas=1e-12)
    if prob.status == cp.OPTIMAL_INACCURATE and on_inaccurate is not None:
        on_inaccurate(str(prob.status))
    elif prob.status not in (cp.OPTIMAL, cp.OPTIMAL_INACCURATE):
        raise RuntimeError(f"{who}: convex solver (cvxpy/Clarabel) status {prob.status}")
    xs = np.maximum(np.asarray(x.value, dtype=float), eps_lo)
    return exact_shape(baseline, {k: float(v) * scale for k, v in zip(keys, xs)}, lo, name)


def exact_shape(
    baseline: Allocation, rho: Mapping[Key, float], lower: Mapping[Key, Fraction], name: str | None = None
) -> Allocation:
    """A solver's float budgets as exact fractions: rounded down to the grid 1/:data:`SHAPE_DENOMINATOR`,
    then raised to ``lower`` (and to 1/SHAPE_DENOMINATOR) where below, so every bound holds exactly."""
    D = SHAPE_DENOMINATOR
    rhos = {k: max(Fraction(math.floor(v * D), D), Fraction(lower[k]), Fraction(1, D)) for k, v in rho.items()}
    levels = tuple(
        GeolevelBudget(lv.name, lv.queries, tuple(rhos[(lv.name, q)] for q in lv.queries)) for lv in baseline.levels
    )
    return Allocation(levels, name or baseline.name, baseline.provenance, baseline.run_type)
