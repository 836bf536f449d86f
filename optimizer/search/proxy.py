"""The proxy pair [M_13, M_13] the search accounts (the full spine path with itself), its certified
δ at the promised ε, and the exact reading of a δ bound against the target.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

import mpmath

from accountant import Composition, DiscreteGaussian
from accountant.composition import thorough_composition
from optimizer.census.allocation import Allocation, GeolevelBudget
from optimizer.search.target import RTOL_FINAL, TOL_FINAL, Target


def _full_path_rho(alloc: Allocation) -> tuple[Fraction, ...]:
    """Budgets on the full-spine path (every geolevel present: no merging) — path 13 of DHC."""
    return tuple(r for _, _, r in alloc.items())


def _apply(alloc: Allocation, rhos: Sequence[Fraction]) -> Allocation:
    """``alloc`` with the budgets ``rhos``, given along the full path (the order of
    :func:`_full_path_rho`)."""
    it = iter(rhos)
    levels = tuple(GeolevelBudget(lv.name, lv.queries, tuple(next(it) for _ in lv.rho)) for lv in alloc.levels)
    return Allocation(levels, alloc.name, alloc.provenance, alloc.run_type)


def _composition(rhos: Sequence[Fraction], multiplicity: int = 2, *, thorough: bool = False):
    """The composition of N_Z(0, 1/ρ) over ``rhos``, each ``multiplicity`` times; ``thorough``: built by
    :func:`accountant.composition.thorough_composition` (the dearer exact fallbacks where the defaults give
    the coarse sandwich)."""
    counts: dict[Fraction, int] = {}
    for r in rhos:
        counts[r] = counts.get(r, 0) + multiplicity
    mechanisms = {DiscreteGaussian.from_rho(r): n for r, n in counts.items()}
    return thorough_composition(mechanisms) if thorough else Composition(mechanisms)


def proxy_composition(alloc: Allocation):
    """[M_full, M_full]: the full-spine path (path 13 for DHC persons) composed with itself."""
    return _composition(_full_path_rho(alloc))


def proxy_delta(alloc: Allocation, target: Target, *, tol: float = TOL_FINAL, rtol: float = RTOL_FINAL):
    """Certified δ(target ε) of the proxy pair of ``alloc``."""
    return proxy_composition(alloc).delta(target.epsilon, tol=tol, rtol=rtol)


def mpf_to_fraction(x) -> Fraction:
    """The exact rational value of a finite ``mpmath.mpf``."""
    x = mpmath.mpf(x)
    if not mpmath.isfinite(x):
        raise ValueError(f"mpf_to_fraction: not finite: {x}")
    sign, man, exp, _ = x._mpf_  # (mpf.man_exp drops the sign)
    return (-1 if sign else 1) * Fraction(man) * (Fraction(2) ** exp)


def certified_ok(delta_certified, target: Target) -> bool:
    """δ.upper ≤ target δ, compared exactly."""
    return mpf_to_fraction(delta_certified.upper) <= target.delta_fraction
