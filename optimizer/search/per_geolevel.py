"""The per-geolevel target: keep every geolevel's own (ε, δ) promise, and nothing more.

A geolevel ℓ alone is one mechanism — its queries, each moved as the scenario's neighbour model
says (:mod:`optimizer.search.geolevels`): every pair of spine paths that differ at ℓ gives this
same composition, so its certified δ is the all-pairs check of ℓ's promise. The promise of ℓ is
ε_ℓ = conversion(ρ_ℓ, δ) of the baseline's geolevel total ρ_ℓ.

The promises are independent, so the optimum splits by geolevel (for an objective that is a sum
or a maximum over queries: every objective but ``published-variance``, whose published counts mix
geolevels):

* the **uniform cut** scales every query by the smallest geolevel factor c = min_ℓ c_ℓ, where c_ℓ is
  the largest exact factor keeping ℓ's promise (one noise scale for the whole release);
* the **optimum** solves each geolevel on its own: the objective's convex optimum under the Pareto
  guard at the largest total ρ_ℓ that keeps ε_ℓ
  (:func:`optimizer.search.guarded.calibrated_optimum` with ℓ's mechanism as the calibration),
  or ℓ's own uniform factor c_ℓ for ``minimax-relative`` (its optimum).

Each final factor is rounded down to a multiple of 1/:data:`FACTOR_GRID` (a promise kept at c is
kept below it, and a guard met at c ≥ 1 is met at any grid point ≥ 1), which keeps the lattices of
the release-wide side-effect checks small.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optimizer.census.allocation import Allocation
from optimizer.search import Target, target_from_allocation
from optimizer.search.calibrate import Calibration
from optimizer.search.geolevels import calibrate_geolevel, geolevel_composition
from optimizer.search.guarded import calibrated_optimum
from optimizer.search.objectives import Objective, ParetoGuard

__all__ = ["FACTOR_GRID", "GeolevelOptimum", "PerGeolevel", "floor_to_grid", "per_geolevel_optimum"]

#: final factors are rounded down to multiples of 1/FACTOR_GRID (see the module docstring)
FACTOR_GRID = 10**4


@dataclass(frozen=True)
class GeolevelOptimum:
    """One geolevel of :func:`per_geolevel_optimum`."""

    geolevel: str
    target: Target  # its own promise (ε_ℓ, δ)
    c_uniform: Fraction  # the largest exact factor of its ρ keeping its promise (rounded down)
    allocation: Allocation  # the geolevel alone, optimized and calibrated
    delta: Any  # certified δ(ε_ℓ) of its mechanism in ``allocation``


@dataclass(frozen=True)
class PerGeolevel:
    """The per-geolevel target's uniform cut and optimum."""

    levels: tuple[GeolevelOptimum, ...]
    c_uniform: Fraction  # min over geolevels of c_uniform
    uniform: Allocation  # the baseline × c_uniform
    optimized: Allocation  # every geolevel's optimum, in the baseline's order

    @property
    def binding(self) -> str:
        """The geolevel whose factor sets the uniform cut."""
        return min(self.levels, key=lambda lv: lv.c_uniform).geolevel


def floor_to_grid(c: Fraction) -> Fraction:
    """The largest multiple of 1/:data:`FACTOR_GRID` not above ``c``."""
    return Fraction((c * FACTOR_GRID).numerator // (c * FACTOR_GRID).denominator, FACTOR_GRID)


def _sub(baseline: Allocation, name: str) -> Allocation:
    return Allocation((baseline.level(name),), f"{baseline.name}/{name}", "", None)


def per_geolevel_optimum(
    baseline: Allocation,
    delta: str,
    conversion: str,
    model: str,
    objective: Objective,
    weights: Mapping[tuple[str, str], Any],
    guard: ParetoGuard | None,
) -> PerGeolevel:
    """Every geolevel's promise kept, the objective optimized geolevel by geolevel (module docstring).

    Raises:
        ValueError: an objective that does not split by geolevel (``published-variance``).
    """
    if objective.name == "published-variance":
        raise ValueError(
            'target = "per-geolevel" needs an objective that splits by geolevel; published-variance mixes '
            "geolevels (its published counts add them up): choose mean-relative-variance, sum-variance or "
            "minimax-relative"
        )
    levels = []
    for lv in baseline.levels:
        sub = _sub(baseline, lv.name)
        target = target_from_allocation(sub, delta=delta, conversion=conversion)

        def calibrate(shape: Allocation, t: Target = target, hint: float = 1.0) -> Calibration:
            return calibrate_geolevel(shape, t, model, hint=hint)

        c_level = floor_to_grid(calibrate(sub).c)
        if objective.name == "minimax-relative":
            shape, c = sub, c_level
        else:

            def solve(total: Fraction, lower: Mapping[tuple[str, str], Fraction] | None, s: Allocation = sub):
                return objective.optimum(s, weights, total, lower)

            opt = calibrated_optimum(
                sub,
                target,
                None,
                sub.total_rho * c_level,
                guard,
                solve=solve,
                calibrate=calibrate,
            )
            shape, c = opt.shape, floor_to_grid(opt.c)
        final = shape.scaled(c)
        d = geolevel_composition(final.levels[0], model).delta(target.epsilon)
        levels.append(GeolevelOptimum(lv.name, target, c_level, final, d))
    c_u = min(lv.c_uniform for lv in levels)
    optimized = Allocation(
        tuple(lv.allocation.levels[0] for lv in levels),
        baseline.name,
        f"what-if derived from {baseline.name}: every geolevel's own promise kept (target per-geolevel)",
        baseline.run_type,
    )
    return PerGeolevel(tuple(levels), c_u, baseline.scaled(c_u), optimized)
