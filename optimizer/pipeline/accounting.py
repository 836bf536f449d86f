"""The accounting-only view of a scenario, computed with the accountant: the zCDP claim against the
exact certified curve of the proxy pair (the full spine with itself: every measurement twice —
the pair [13, 13] of DHC persons) and the optimizer's uniform rescale (:func:`optimizer.search.
uniform_rescale`) that keeps the exact δ of that pair at the claimed ε within the target δ.

The report renders an :class:`Accounting`; it does no accounting of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import mpmath

from accountant import Composition, DiscreteGaussian, zcdp
from accountant.composition import DEFAULT_TRADEOFF_TOL
from accountant.decimals import half_width
from accountant.tolerance import DELTA, EPSILON_RELATIVE
from optimizer.formatting import fmt, to_mpf
from optimizer.jobs.profile import certified_tolerance_met, tradeoff_tolerance_met
from optimizer.search import target_from_allocation, uniform_rescale

#: tolerances of the accountant calls made here (absolute / relative δ; ε bisection)
DELTA_TOL, DELTA_RTOL, EPS_TOL = DELTA.absolute, DELTA.relative, EPSILON_RELATIVE
N_CURVE = 46
N_TRADEOFF = 201
Progress = Callable[[str], None]


def _quiet(_msg: str) -> None:
    pass


@dataclass
class Accounting:
    """Accounting-only results for a scenario (proxy pair, uniform rescale)."""

    scenario: Any
    allocation: Any
    total_rho: Fraction
    eps_claim: mpmath.mpf
    delta_target: Fraction
    delta_exact: Any  # Certified: exact δ of the proxy pair at eps_claim
    eps_exact: Any  # EpsilonResult: exact ε of the proxy pair at delta_target
    uniform_multiplier: Fraction  # σ² ← σ² × multiplier
    uniform_delta: Any  # Certified δ at eps_claim after the rescale
    curves: list[dict] = field(default_factory=list)
    tradeoff: list[dict] = field(default_factory=list)
    #: tolerance flags of the curves computed here ({label: met}); see :func:`tolerance_flags`
    tolerance: dict[str, bool] = field(default_factory=dict)

    @property
    def uniform_drop_percent(self) -> float:
        return float((1 - self.uniform_multiplier) * 100)


def _claim_eps(rho: Fraction, delta, conversion: str) -> mpmath.mpf:
    return zcdp.get_conversion(conversion).epsilon(rho, delta)


def _claim_delta(rho: Fraction, eps, conversion: str) -> mpmath.mpf:
    return zcdp.get_conversion(conversion).delta(rho, eps)


def proxy_pair(allocation, multiplier: Fraction = Fraction(1)):
    """The full spine with itself: every measurement twice, σ² = multiplier/ρ."""
    mechs = [DiscreteGaussian(multiplier / r) for _, _, r in allocation.items()]
    return Composition(mechs * 2)


def _uniform_multiplier(allocation, scenario, progress: Progress) -> tuple[Fraction, Any]:
    """The uniform rescale of the proxy pair, from the optimizer's own stage 1
    (:func:`optimizer.search.uniform_rescale`: the largest exact c with certified δ(ε) ≤ δ at
    the promise): returns (σ² multiplier 1/c, certified δ at the promised ε after the rescale)."""
    target = target_from_allocation(allocation, delta=scenario.target_delta_text, conversion=scenario.conversion)
    c, _, d = uniform_rescale(allocation, target)
    progress(f"  uniform rescale: sigma^2 x {fmt(1 / c, 10)} (c = {fmt(c, 12)})")
    return 1 / c, d


def eps_grid(eps_claim) -> list[str]:
    """ε values of the curves: N_CURVE points over [0.5, 1.25] × the claimed ε (12 digits)."""
    return [
        mpmath.nstr(to_mpf(eps_claim) * (mpmath.mpf(1) / 2 + mpmath.mpf(3) * k / (4 * (N_CURVE - 1))), 12)
        for k in range(N_CURVE)
    ]


#: above this lattice scale the accountant uses its coarsened-lattice sandwich
#: (accountant.coarse: certified, but wider than the exact engines); the report says so
MAX_LATTICE_SCALE = 10**9


def compute_accounting(scenario, *, curves: bool = True, progress: Progress = _quiet) -> Accounting:
    """zCDP claim vs exact accounting of the proxy pair, and the uniform rescale, for a scenario."""
    alloc = scenario.load_allocation()
    rho = alloc.total_rho
    delta = scenario.target_delta
    progress(
        f"[{scenario.name}] accounting: total rho = {rho}, conversion {scenario.conversion}, "
        f"delta {scenario.target_delta_text}"
    )
    eps_claim = _claim_eps(rho, delta, scenario.conversion)
    base = proxy_pair(alloc)
    if Fraction(base.lattice.scale) > MAX_LATTICE_SCALE:
        progress(
            f"  lattice scale {float(base.lattice.scale):.3g}: certified enclosures come from the "
            f"coarsened-lattice sandwich (wider than {DELTA.absolute}; shown with their certified error)"
        )
    d_exact = base.delta(eps_claim, tol=DELTA_TOL, rtol=DELTA_RTOL)
    e_exact = base.epsilon(delta, tol=EPS_TOL)
    progress(
        f"  claimed eps = {fmt(eps_claim, 10)}; exact delta there = {fmt(d_exact.value, 6)}; "
        f"exact eps at delta = {fmt(e_exact.value, 10)}"
    )
    mult, d_uni = _uniform_multiplier(alloc, scenario, progress)
    acc = Accounting(scenario, alloc, rho, eps_claim, delta, d_exact, e_exact, mult, d_uni)
    if curves:
        progress("  exact (eps, delta) curves and trade-off curves")
        grid = eps_grid(eps_claim)
        uni = proxy_pair(alloc, mult)
        db = base.delta_curve(grid, tol=DELTA_TOL, rtol=DELTA_RTOL)
        du = uni.delta_curve(grid, tol=DELTA_TOL, rtol=DELTA_RTOL)

        for e, b, u in zip(grid, db, du):
            acc.curves.append(
                {
                    "eps": e,
                    "zcdp_claim_delta": _claim_delta(rho, e, scenario.conversion),
                    "baseline_exact_delta": b.value,
                    "baseline_exact_delta_error": half_width(b),  # exact Fraction
                    "uniform_exact_delta": u.value,
                    "uniform_exact_delta_error": half_width(u),
                    "baseline_tolerance_met": certified_tolerance_met(b, DELTA_TOL, DELTA_RTOL),
                    "uniform_tolerance_met": certified_tolerance_met(u, DELTA_TOL, DELTA_RTOL),
                }
            )
        acc.tolerance["δ curve, published noise"] = all(c["baseline_tolerance_met"] for c in acc.curves)
        acc.tolerance["δ curve, uniformly reduced noise"] = all(c["uniform_tolerance_met"] for c in acc.curves)
        tb = base.tradeoff_curve(n=N_TRADEOFF)
        tu = uni.tradeoff_curve(n=N_TRADEOFF)
        acc.tolerance["trade-off curve, published noise"] = _tradeoff_met(tb)
        acc.tolerance["trade-off curve, uniformly reduced noise"] = _tradeoff_met(tu)
        for ab, bb, au, bu in zip(tb.alpha, tb.beta, tu.alpha, tu.beta):
            acc.tradeoff.append(
                {
                    "baseline_alpha": ab.value,
                    "baseline_beta": bb.value,
                    "uniform_alpha": au.value,
                    "uniform_beta": bu.value,
                }
            )
    return acc


def _tradeoff_met(tc) -> bool:
    flag = getattr(tc, "tolerance_met", None)
    return bool(flag) if flag is not None else all(tradeoff_tolerance_met(tc, DEFAULT_TRADEOFF_TOL))
