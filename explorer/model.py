"""The budget explorer's numbers: what one setting of the geolevel budgets guarantees, exactly.

A *setting* multiplies each geolevel's baseline budgets by a factor f_g (every query of geolevel g:
ρ'_q = f_g·ρ_q, so σ'_q² = σ_q²/f_g). :func:`live` answers, from the exact accountant on the proxy
pair [M_full, M_full] (:func:`optimizer.search.proxy_composition`), everything the page shows after
a move: the promised (ε, δ) of the scenario's baseline, the certified δ at the promised ε (an
interval, with whether it met its tolerance), the safe ε at the promised δ, the total ρ, whether the
promise is kept *on the proxy pair* (certified: the upper bound of δ ≤ the promised δ), each
geolevel's noise standard deviation in persons before and after, and the (ε, δ) curves of the
zCDP claim and the exact mechanism. The all-pairs confirmation is a separate, slower step.

Factors are exact: a float from a slider is turned into a fraction on the grid 1/:data:`FACTOR_GRID`
(:func:`factor_from_slider`), so the lattice of the composition stays small and every number is
computed for exactly the allocation the page names.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from accountant.decimals import decimal_string
from optimizer.census.allocation import Allocation
from optimizer.scenario import Scenario
from optimizer.search import proxy_composition, target_from_allocation, zcdp_claim_delta
from optimizer.search.proxy import mpf_to_fraction

__all__ = ["FACTOR_GRID", "SLIDER_RANGE", "Live", "factor_from_slider", "live", "scaled_allocation"]

#: factors are multiples of 1/FACTOR_GRID: 5 % steps keep the composition's lattice small (the finer the
#: grid, the larger the denominators and the slower some moves; `python -m bench.explorer` times this grid)
FACTOR_GRID = 20
#: the slider's log10 range of a factor (0.1× … 10× the baseline budget) and its step (×1.12 a step:
#: above 1× every step lands on a new grid point)
SLIDER_RANGE = (-1.0, 1.0)
SLIDER_STEP = 0.05
#: tolerances of the live numbers: δ to 1e-35 absolute / 1e-12 relative, ε to 1e-12 relative
DELTA_TOL, DELTA_RTOL, EPS_RTOL = 1e-35, 1e-12, 1e-12
#: ε grid of the live curves: this many points from 0.5 to 1.5 × the promised ε
CURVE_POINTS = 11


def factor_from_slider(value: float) -> Fraction:
    """The exact factor 10^value rounded to the grid 1/:data:`FACTOR_GRID` (at least one step);
    a value that is not a finite number in :data:`SLIDER_RANGE` is refused (``ValueError``)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"factor: expected a number, got {value!r}")
    lo, hi = SLIDER_RANGE
    if not lo <= value <= hi:
        raise ValueError(f"factor: log10 value {value} outside [{lo}, {hi}]")
    return max(Fraction(round(10**value * FACTOR_GRID), FACTOR_GRID), Fraction(1, FACTOR_GRID))


def scaled_allocation(baseline: Allocation, factors: Mapping[str, Fraction]) -> Allocation:
    """``baseline`` with every query of geolevel g multiplied by ``factors[g]`` (missing: 1)."""
    unknown = sorted(set(factors) - set(baseline.geolevels))
    if unknown:
        raise ValueError(f"factors: unknown geolevel(s) {', '.join(unknown)} of {baseline.name!r}")
    for g, f in factors.items():
        if not isinstance(f, Fraction) or f <= 0:
            raise ValueError(f"factors[{g!r}]: expected a positive Fraction, got {f!r}")
    return baseline.with_rho({(g, q): r * factors.get(g, Fraction(1)) for g, q, r in baseline.items()})


@dataclass(frozen=True)
class Live:
    """What the page shows for one setting (strings are decimals on their safe side)."""

    factors: dict[str, str]  # geolevel → exact factor "p/q"
    total_rho: str  # exact fraction
    total_rho_decimal: str
    promised_epsilon: str  # conversion of the *baseline's* ρ at the promised δ (the promise kept)
    promised_delta: str
    delta_upper: str  # certified δ at the promised ε, rounded up
    delta_lower: str  # rounded down
    delta_tolerance_met: bool
    epsilon_safe: str  # exact ε at the promised δ, safe side (rounded up)
    kept_on_proxy: bool  # certified: δ upper ≤ promised δ
    noise_sd: list[dict[str, str]]  # per geolevel: RMS noise SD of one count, today and now (persons)
    curve: list[dict[str, float]]  # eps, zCDP claim δ of the baseline ρ, exact δ now (upper)
    seconds: float  # accountant time

    def as_dict(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _rms_sd(alloc: Allocation, geolevel: str) -> float:
    level = alloc.level(geolevel)
    return math.sqrt(float(sum((1 / r for r in level.rho), Fraction(0)) / len(level.rho)))


def live(scenario: Scenario, baseline: Allocation, factors: Mapping[str, Fraction]) -> Live:
    """The live numbers of ``baseline`` scaled by ``factors`` against ``scenario``'s promise (module
    docstring). Bad factors raise ``ValueError`` naming them, before any accounting."""
    new = scaled_allocation(baseline, factors)
    t0 = time.perf_counter()
    promise = target_from_allocation(baseline, delta=scenario.target_delta_text, conversion=scenario.conversion)
    comp = proxy_composition(new)
    eps_p = Fraction(promise.epsilon)
    grid = [eps_p * Fraction(5 + k, 10) for k in range(CURVE_POINTS)]
    # one pass for the headline δ and the curve (shared set-up, instead of one call per ε)
    d, *exact = comp.delta_curve([promise.epsilon, *grid], tol=DELTA_TOL, rtol=DELTA_RTOL)
    e = comp.epsilon(promise.delta, tol=EPS_RTOL)
    curve = [
        {
            "eps": float(x),
            "claim": float(zcdp_claim_delta(baseline.total_rho, x, scenario.conversion)),
            "exact": float(y.upper),
        }
        for x, y in zip(grid, exact, strict=True)
    ]
    seconds = time.perf_counter() - t0
    upper, lower = mpf_to_fraction(d.upper), mpf_to_fraction(d.lower)
    return Live(
        factors={g: str(factors.get(g, Fraction(1))) for g in baseline.geolevels},
        total_rho=str(new.total_rho),
        total_rho_decimal=decimal_string(new.total_rho, 8, "nearest", notation="auto"),
        promised_epsilon=decimal_string(eps_p, 12, "down", notation="auto"),
        promised_delta=scenario.target_delta_text,
        delta_upper=decimal_string(upper, 12, "up"),
        delta_lower=decimal_string(lower, 12, "down"),
        delta_tolerance_met=bool(d.tolerance_met),
        epsilon_safe=decimal_string(mpf_to_fraction(e.value), 12, "up", notation="auto"),
        kept_on_proxy=upper <= promise.delta_fraction,
        noise_sd=[
            {"geolevel": g, "today": f"{_rms_sd(baseline, g):.2f}", "now": f"{_rms_sd(new, g):.2f}"}
            for g in baseline.geolevels
        ],
        curve=curve,
        seconds=seconds,
    )
