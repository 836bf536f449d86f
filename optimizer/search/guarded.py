"""The convex optimum of an objective, calibrated by the exact accountant without breaking its guard.

:func:`optimizer.search.objectives.convex_optimum` minimises Σ a_q/ρ'_q at a given total under lower
bounds ρ'_q ≥ ℓ_q (the Pareto guard).  The exact promise fixes how much total ρ may be spent
only through the accountant: :func:`calibrated_optimum` starts from the uniform rescale's total
c_u·Σρ (the exact guarantee of a composition hardly depends on its shape at a fixed total, so
this is within ~1e-5 of the answer), solves, and calibrates the solution by a common factor c
(:func:`optimizer.search.calibrate_shape`: the largest exact c whose certified proxy δ(ε) ≤ δ).
If c ≥ 1 the calibrated allocation is c·ρ' ≥ ρ' ≥ ℓ — the guard holds exactly; if c < 1 the total
is lowered by c and the problem solved again.  Every returned allocation meets the guard,
checked exactly with fractions.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optimizer.census.allocation import Allocation
from optimizer.search import calibrate_shape
from optimizer.search.calibrate import Calibration
from optimizer.search.objectives import ParetoGuard, convex_optimum
from optimizer.search.shares import InfeasibleGuard

__all__ = ["GuardedOptimum", "calibrated_optimum"]

#: rounds of solve → calibrate before giving up (one or two suffice: c moves by ~1e-5; a shape that the
#: grid rounding leaves unchanged takes a few more, see :data:`TOTAL_MARGIN`)
MAX_ROUNDS = 10
#: relative margin by which the total is lowered below c·total after a round with c < 1 (× 100 after a
#: round whose rounded shape did not change: measured, the DHC-persons optimum at a lowered promise kept
#: c = 0.99999744 for 5 rounds at 1e-9)
TOTAL_MARGIN = Fraction(1, 10**9)


@dataclass(frozen=True)
class GuardedOptimum:
    """A calibrated convex optimum.

    Attributes:
        allocation: the calibrated allocation (meets the guard, certified proxy δ ≤ target δ).
        shape: the convex solution before calibration.
        c: the calibration factor of the last round (≥ 1).
        delta: certified proxy δ(target ε) of ``allocation``.
        rounds: solve → calibrate rounds used.
    """

    allocation: Allocation
    shape: Allocation
    c: Fraction
    delta: Any
    rounds: int


def calibrated_optimum(
    baseline: Allocation,
    target,
    coefficients: Mapping[tuple[str, str], Fraction] | None,
    start_total: Fraction,
    guard: ParetoGuard | None,
    *,
    on_inaccurate: Callable[[str], None] | None = None,
    solve: Callable[[Fraction, Mapping[tuple[str, str], Fraction] | None], Allocation] | None = None,
    calibrate: Callable[..., Calibration] | None = None,
) -> GuardedOptimum:
    """Minimise Σ a_q/ρ'_q under ``guard`` at the largest total the exact promise ``target`` allows.

    Args:
        baseline: the allocation the guard compares with (and whose geolevels/queries are kept).
        target: the promise (:class:`optimizer.search.Target`).
        coefficients: a_q (:meth:`optimizer.search.objectives.Objective.coefficients`); ``None`` with ``solve``.
        start_total: the first total to try (the uniform rescale's total c_u·Σρ).
        guard: the Pareto guard, or ``None`` for no lower bounds.
        solve: ``solve(total, lower)`` → the convex optimum at that total, used instead of
            :func:`~optimizer.search.objectives.convex_optimum` of ``coefficients`` for objectives not of the
            form Σ a_q/ρ'_q (:meth:`optimizer.search.objectives.Objective.optimum`).
        calibrate: ``calibrate(shape, target, hint=…)`` → the largest exact factor keeping ``target``
            (default :func:`optimizer.search.calibrate_shape`, the proxy pair; the per-geolevel target
            passes a geolevel's own mechanism).

    Raises:
        optimizer.search.objectives.InfeasibleGuard: the guard needs more budget than the promise allows.
        RuntimeError: no round reached a calibration factor ≥ 1.
    """
    lower = guard.lower_bounds(baseline) if guard is not None else None
    total = Fraction(start_total)
    margin, previous = TOTAL_MARGIN, None
    for k in range(1, MAX_ROUNDS + 1):
        if solve is not None:
            shape = solve(total, lower)
        elif coefficients is not None:
            shape = convex_optimum(baseline, coefficients, total, lower, on_inaccurate=on_inaccurate)
        else:
            raise ValueError("calibrated_optimum: give coefficients or solve")
        cal = (calibrate or calibrate_shape)(shape, target, hint=1.0)
        if cal.c >= 1:
            if guard is not None and not guard.holds(cal.allocation, baseline):  # c ≥ 1 makes this impossible
                raise AssertionError("calibrated_optimum: guard broken by an upward calibration")
            return GuardedOptimum(cal.allocation, shape, cal.c, cal.delta, k)
        # the solution is rounded to a grid (optimizer.search.grid): a total lowered by a hair can give the
        # same shape, whose factor is then the same c < 1 again; lower by 100 × more each time that happens
        # (budgets compared, not provenance: a rounding note states the requested total)
        margin = margin * 100 if previous is not None and shape.levels == previous.levels else margin
        previous = shape
        # from the shape's own total (floored to the grid: below the requested one), so the next request
        # falls below it even when c is closer to 1 than the floor's gap
        total = shape.total_rho * cal.c * (1 - margin)
        if lower is not None and sum(lower.values(), Fraction(0)) > total:
            raise InfeasibleGuard(
                f"the guard ({guard.describe() if guard else ''}) needs total ρ {float(sum(lower.values())):.10g}, "
                f"more than the {float(total):.10g} the exact promise allows"
            )
    raise RuntimeError(f"calibrated_optimum: no calibration factor ≥ 1 after {MAX_ROUNDS} rounds")
