"""Stage 2: the shape minimising the weighted variance at the same total ρ (cvxpy/Clarabel;
closed form ρ_q ∝ √w_q), quantised to exact fractions, then calibrated by stage 1.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

import numpy as np

from optimizer.census.allocation import Allocation
from optimizer.search.calibrate import _note
from optimizer.search.grid import grid_shape
from optimizer.search.variance import _weights


class SolverWarning(RuntimeWarning):
    """A convex solver's status short of ``OPTIMAL``, explained in one line: what it affects (a
    starting shape) and why the exact accountant's later check keeps every guarantee intact.
    The CLI prints it as one ``note:`` line (``optimizer.cli.main``)."""


def zcdp_optimum(
    alloc: Allocation,
    weights: Mapping[tuple[str, str], Any] | None = None,
    *,
    floor: Fraction | None = None,
    return_info: bool = False,
):
    """Stage 2: minimise Σ w_q/ρ_q subject to Σ ρ_q ≤ total ρ of ``alloc`` and ρ_q ≥ floor.

    Solved by cvxpy with Clarabel (``cp.inv_pos``); only ``OPTIMAL`` is accepted
    (``OPTIMAL_INACCURATE`` warns, anything else raises).  The solution is put on the
    proposal grid (:mod:`optimizer.search.grid`) at the baseline's total exactly — the same zCDP
    guarantee.  Closed form of the
    optimum: ρ_q = R·√w_q / Σ √w.
    """
    import cvxpy as cp  # noqa: PLC0415 - 1.4 s to import; only the convex solves need it

    w = _weights(alloc, weights)
    keys = [(g, q) for g, q, _ in alloc.items()]
    total = alloc.total_rho
    scale = float(total)
    n = len(keys)
    lo = float(floor) / scale if floor is not None else 1e-6 / n
    wv = np.array([w[k] for k in keys], dtype=float)
    wv = wv / wv.max()
    x = cp.Variable(n)  # x = ρ / R (well scaled)
    prob = cp.Problem(cp.Minimize(wv @ cp.inv_pos(x)), [cp.sum(x) <= 1, x >= lo])
    with warnings.catch_warnings():  # cvxpy's own multi-line advice is replaced by one line below
        warnings.simplefilter("ignore", UserWarning)
        prob.solve(solver=cp.CLARABEL, tol_gap_abs=1e-10, tol_gap_rel=1e-10, tol_feas=1e-10)
    if prob.status == cp.OPTIMAL_INACCURATE:
        warnings.warn(
            SolverWarning(
                "the convex solver (cvxpy/Clarabel) stopped at OPTIMAL_INACCURATE on the zCDP-optimum shape; "
                "that shape is only a starting point: it is quantised, calibrated by the exact accountant and "
                "confirmed on all pairs like every other allocation, so no reported guarantee depends on it"
            ),
            stacklevel=2,
        )
    elif prob.status != cp.OPTIMAL:
        raise RuntimeError(f"zcdp_optimum: convex solver (cvxpy/Clarabel) status {prob.status}")
    xs = np.maximum(np.asarray(x.value, dtype=float), lo)
    coef = dict(zip(keys, wv))
    floor_q = {k: Fraction(floor) for k in keys} if floor is not None else None
    grid = grid_shape(
        alloc,
        dict(zip(keys, (float(v) for v in xs))),
        floor_q,
        total,
        lambda rho: math.fsum(coef[k] / rho[k] for k in keys),
    )
    out = grid.allocation
    note = f"zCDP-optimum shape (cvxpy/Clarabel) {grid.describe()}"
    out = Allocation(out.levels, alloc.name, _note(alloc.provenance, note), alloc.run_type)
    if return_info:
        import cvxpy  # noqa: PLC0415 - 1.4 s to import; only the convex solves need it

        return out, {
            "solver": "CLARABEL",
            "status": prob.status,
            "cvxpy": cvxpy.__version__,
            "solver_objective": float(prob.value) * float(max(w.values())) / scale,
        }
    return out
