"""Per-geolevel view: each geolevel's own mechanism, its promised and exact ε, and its saving.

The mechanism of one geolevel is its queries' noise on the records of one geounit.  Two
neighbour models (:data:`NEIGHBOUR_MODELS`):

``census``
    the 2020 DAS convention: a query of budget ρ_q gets N_Z(0, σ² = 1/ρ_q) noise and a replaced
    record moves two cells (two unit shifts), so the geolevel is ρ_ℓ-zCDP with ρ_ℓ = Σ_q ρ_q;
``su2024``
    the earlier paper's model (Su, Su & Wang, arXiv 2410.09296): σ² = 1/(2ρ_q) and one unit shift
    per query — the same ρ_ℓ, a different exact curve.

Per geolevel (:func:`geolevel_view`): the promised ε_ℓ = conversion(ρ_ℓ, δ) (Bun–Steinke,
arXiv 1605.02065, or CKS, arXiv 2004.00010), the exact ε_ℓ at δ (certified, on its safe side:
δ(ε_exact) ≤ δ), the unused budget 1 − ε_exact/ε_promised, and the variance drop that keeps that
geolevel's own promise: 1 − 1/c for the largest exact c such that the certified δ(ε_promised) of
the geolevel with every ρ_q × c stays ≤ δ.  On the earlier paper's inputs this is its Figure 2
and its 15.08 % (State) … 24.82 % (Block) range (scenario ``su2024-per-geolevel``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from accountant import Composition, DiscreteGaussian
from accountant.decimals import decimal_string
from optimizer.census.allocation import Allocation, GeolevelBudget
from optimizer.search import Target, mpf_to_fraction, target_from_allocation
from optimizer.search.calibrate import Calibration, _calibrate_rhos

__all__ = [
    "NEIGHBOUR_MODELS",
    "GeolevelPromise",
    "GeolevelRow",
    "geolevel_composition",
    "geolevel_promises",
    "geolevel_view",
]

#: neighbour model → (unit shifts per query, σ² as a function of ρ_q)
NEIGHBOUR_MODELS: dict[str, tuple[int, Callable[[Fraction], Fraction]]] = {
    "census": (2, lambda r: 1 / r),
    "su2024": (1, lambda r: 1 / (2 * r)),
}
#: relative tolerance of the exact ε (≥ 12 correct digits with margin)
EPS_RTOL = 1e-16
#: digits of the decimal strings in the table
DIGITS = 20


def _model(name: str) -> tuple[int, Callable[[Fraction], Fraction]]:
    try:
        return NEIGHBOUR_MODELS[name]
    except KeyError:
        raise ValueError(f"unknown neighbour model {name!r}; known: {', '.join(NEIGHBOUR_MODELS)}") from None


def _composition(rhos: Sequence[Fraction], model: str):
    shifts, s2 = _model(model)
    counts: dict[Fraction, int] = {}
    for r in rhos:
        counts[r] = counts.get(r, 0) + shifts
    return Composition({DiscreteGaussian(s2(r)): n for r, n in counts.items()})


def calibrate_geolevel(shape: Allocation, target: Target, model: str = "census", *, hint: float = 1.0) -> Calibration:
    """The largest exact factor c with certified δ(target ε) ≤ target δ for the one geolevel of
    ``shape`` alone under ``model`` (the geolevel's mechanism, not the proxy pair)."""
    if len(shape.levels) != 1:
        raise ValueError(f"calibrate_geolevel: {shape.name!r} has {len(shape.levels)} geolevels, expected one")
    t0 = time.perf_counter()
    c, d, n = _calibrate_rhos(list(shape.levels[0].rho), target, hint=hint, builder=lambda rs: _composition(rs, model))
    return Calibration(c, shape.scaled(c), d, n, time.perf_counter() - t0)


def geolevel_composition(level: GeolevelBudget, model: str = "census"):
    """The composition of one geolevel's queries under ``model`` (one geounit, one replaced record)."""
    return _composition(level.rho, model)


@dataclass(frozen=True)
class GeolevelRow:
    """One geolevel of :func:`geolevel_view` (decimal strings on their safe sides)."""

    geolevel: str
    rho: Fraction
    epsilon_promised: str  # the conversion's ε, rounded down (what was promised, never overstated)
    epsilon_exact: str  # certified: δ(ε_exact) ≤ δ; rounded up
    epsilon_exact_lower: str | None  # certainly violates δ; rounded down
    unused_budget_percent: float
    variance_drop_percent: float
    c: Fraction  # ρ factor that keeps this geolevel's promise
    tolerance_met: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "geolevel": self.geolevel,
            "rho": str(self.rho),
            "epsilon_promised": self.epsilon_promised,
            "epsilon_exact": self.epsilon_exact,
            "epsilon_exact_lower": self.epsilon_exact_lower,
            "unused_budget_percent": self.unused_budget_percent,
            "variance_drop_percent": self.variance_drop_percent,
            "rho_factor": str(self.c),
            "tolerance_met": self.tolerance_met,
        }


def _plain(text: str) -> str:
    """A decimal string in positional notation (no exponent), digits unchanged."""
    return format(Decimal(text), "f")


def geolevel_view(
    alloc: Allocation,
    delta: str = "1e-10",
    conversion: str = "bun-steinke",
    model: str = "census",
    *,
    eps_rtol: float = EPS_RTOL,
) -> list[GeolevelRow]:
    """Per geolevel of ``alloc``: promised and exact ε at ``delta``, unused budget, variance drop."""
    _model(model)
    rows = []
    for lv in alloc.levels:
        sub = Allocation((lv,), f"{alloc.name}/{lv.name}", "", None)
        target = target_from_allocation(sub, delta=delta, conversion=conversion)
        comp = geolevel_composition(lv, model)
        res = comp.epsilon(target.delta, tol=eps_rtol)
        eps_p = Fraction(target.epsilon)

        e_hi = mpf_to_fraction(res.value)
        e_lo = mpf_to_fraction(res.lower) if res.lower is not None else None
        c, _, _ = _calibrate_rhos(
            list(lv.rho), Target(target.epsilon, target.delta), hint=1.2, builder=lambda rs: _composition(rs, model)
        )
        rows.append(
            GeolevelRow(
                geolevel=lv.name,
                rho=lv.total,
                epsilon_promised=_plain(decimal_string(eps_p, DIGITS, "down")),
                epsilon_exact=_plain(decimal_string(e_hi, DIGITS, "up")),
                epsilon_exact_lower=_plain(decimal_string(e_lo, DIGITS, "down")) if e_lo is not None else None,
                unused_budget_percent=float(100 * (1 - e_hi / eps_p)),
                variance_drop_percent=float(100 * (1 - 1 / c)),
                c=c,
                tolerance_met=bool(res.tolerance_met),
            )
        )
    return rows


@dataclass(frozen=True)
class GeolevelPromise:
    """One geolevel of :func:`geolevel_promises`: does ``new`` keep the baseline's per-geolevel promise?"""

    geolevel: str
    epsilon_promised: str  # conversion(ρ_ℓ of the baseline, δ), rounded down
    epsilon_exact_new: str  # certified exact ε of the new allocation's geolevel at δ, rounded up
    kept: bool  # certified: epsilon_exact_new ≤ epsilon_promised
    tolerance_met: bool

    def as_dict(self) -> dict[str, Any]:
        return {
            "geolevel": self.geolevel,
            "epsilon_promised": self.epsilon_promised,
            "epsilon_exact_new": self.epsilon_exact_new,
            "kept": self.kept,
            "tolerance_met": self.tolerance_met,
        }


def geolevel_promises(
    baseline: Allocation,
    new: Allocation,
    delta: str = "1e-10",
    conversion: str = "bun-steinke",
    model: str = "census",
    *,
    eps_rtol: float = EPS_RTOL,
) -> list[GeolevelPromise]:
    """Per geolevel ℓ: the baseline's promise ε_ℓ = conversion(ρ_ℓ, δ) and the certified exact ε
    at δ of ``new``'s geolevel ℓ alone (its queries under ``model``); ``kept`` when the certified
    upper bound is at most ε_ℓ. A reallocation calibrated on the whole release may move budget
    between geolevels and so break some geolevel's own promise; this says which."""
    _model(model)
    by_name = {lv.name: lv for lv in new.levels}
    out = []
    for lv in baseline.levels:
        if lv.name not in by_name:
            raise ValueError(f"geolevel_promises: geolevel {lv.name!r} of {baseline.name!r} is not in {new.name!r}")
        sub = Allocation((lv,), f"{baseline.name}/{lv.name}", "", None)
        target = target_from_allocation(sub, delta=delta, conversion=conversion)
        res = geolevel_composition(by_name[lv.name], model).epsilon(target.delta, tol=eps_rtol)
        e_hi = mpf_to_fraction(res.value)
        eps_p = Fraction(target.epsilon)
        out.append(
            GeolevelPromise(
                geolevel=lv.name,
                epsilon_promised=_plain(decimal_string(eps_p, DIGITS, "down")),
                epsilon_exact_new=_plain(decimal_string(e_hi, DIGITS, "up")),
                kept=e_hi <= eps_p,
                tolerance_met=bool(res.tolerance_met),
            )
        )
    return out
