"""Budgets as shares of a total: the convex solve and its exact rounding, shared by the objectives.

:func:`solve_shares` minimises a convex objective over shares x = ρ'/total (Σ x ≤ 1, x ≥ lower
bounds) with cvxpy/Clarabel and returns exact fractions on the proposal grid
(:func:`optimizer.search.grid.grid_shape`); :class:`InfeasibleGuard` says the
bounds need more than the total.  A leaf of the optimizer's objectives: :mod:`optimizer.search.objectives`
and :mod:`optimizer.search.published_variance` both build on it (and neither on the other's internals).
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

import numpy as np

from optimizer.census.allocation import Allocation
from optimizer.search.grid import grid_shape

__all__ = ["InfeasibleGuard", "solve_shares"]

Key = tuple[str, str]


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
    unrounded: bool = False,
    coefficients: Mapping[Key, float] | None = None,
) -> Any:
    """argmin ``objective(x)`` over shares x = ρ'/total (cvxpy/Clarabel, tolerances 1e-12) subject to
    Σ x ≤ 1 and x ≥ ℓ/total (and > 0), as exact fractions on the coarsest proposal grid whose
    rounding costs at most :data:`optimizer.search.grid.ROUNDING_TOL` of ``objective``
    (:func:`optimizer.search.grid.grid_shape`; Σ ρ' = total exactly, every bound exact), or with
    ``unrounded`` the solver's float budgets ``{key: ρ'}``.  ``coefficients`` a_q: the objective is
    Σ a_q/ρ'_q (else the rounding fits a local model of it).  ``who`` names the caller in the error
    raised when the solver does not reach OPTIMAL; OPTIMAL_INACCURATE calls ``on_inaccurate`` instead."""
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
    if unrounded:
        return {k: float(v) * scale for k, v in zip(keys, xs)}

    def value(rho: Mapping[Key, float]) -> float:
        return float(objective(cp.Constant(np.array([rho[k] / scale for k in keys]))).value)

    rho = {k: float(v) * scale for k, v in zip(keys, xs)}
    shape = grid_shape(baseline, rho, lo, total, value, coefficients=coefficients, name=name)
    note = shape.describe()
    a = shape.allocation
    return Allocation(a.levels, a.name, f"{a.provenance}; {note}" if a.provenance else note, a.run_type)
