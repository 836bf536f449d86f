"""The accounting-only view of a scenario, computed with the accountant: the zCDP claim against the
exact certified curve of the proxy pair (the full spine with itself: every measurement twice —
the pair [13, 13] of DHC persons) and the optimizer's uniform rescale (:func:`optimizer.search.
uniform_rescale`) that keeps the exact δ of that pair at the claimed ε within the target δ.

The pipeline computes it once per run (:func:`account`, on the one ε grid :func:`eps_grid`) and
stores it in the run (``accounting.json``, :meth:`Accounting.as_json`); the report renders the
:class:`Accounting` it reads back (:meth:`Accounting.from_json`) and does no accounting of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import mpmath

from accountant import Composition, DiscreteGaussian, zcdp
from accountant.certified import Certified, exact_mpf
from accountant.composition import DEFAULT_TRADEOFF_TOL, EpsilonResult
from accountant.decimals import exact_fraction, half_width
from accountant.exact import to_fraction
from accountant.tolerance import DELTA, EPSILON_RELATIVE
from optimizer.formatting import fmt, to_mpf
from optimizer.jobs.profile import certified_tolerance_met, tradeoff_tolerance_met
from optimizer.search import target_from_allocation, uniform_rescale

#: tolerances of the accountant calls made here (absolute / relative δ; ε bisection)
DELTA_TOL, DELTA_RTOL, EPS_TOL = DELTA.absolute, DELTA.relative, EPSILON_RELATIVE
#: the curves' ε grid: ε_claim·k/40 for these k (0.2 … 1.2 × the promised ε, the promise at k = 40)
CURVE_STEPS = range(8, 49)
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

    def as_json(self) -> dict[str, Any]:
        """Everything computed here, JSON-ready and exact (binary numbers as fractions ``"p/2^k"``);
        the scenario and the allocation are the run's own inputs and are not repeated."""
        return {
            "total_rho": str(self.total_rho),
            "eps_claim": _enc(self.eps_claim),
            "delta_target": str(self.delta_target),
            "delta_exact": _enc_certified(self.delta_exact),
            "eps_exact": {
                "value": _enc(self.eps_exact.value),
                "lower": None if self.eps_exact.lower is None else _enc(self.eps_exact.lower),
                "delta_at_value": _enc_certified(self.eps_exact.delta_at_value),
                "tol": self.eps_exact.tol,
            },
            "uniform_multiplier": str(self.uniform_multiplier),
            "uniform_delta": _enc_certified(self.uniform_delta),
            "curves": [{k: _enc_cell(v) for k, v in row.items()} for row in self.curves],
            "tradeoff": [{k: _enc_cell(v) for k, v in row.items()} for row in self.tradeoff],
            "tolerance": dict(self.tolerance),
        }

    @classmethod
    def from_json(cls, doc: dict[str, Any], scenario, allocation=None) -> Accounting:
        """The :class:`Accounting` that :meth:`as_json` stored, for ``scenario`` and its allocation
        (default: ``scenario.load_allocation()``)."""
        e = doc["eps_exact"]
        eps_exact = EpsilonResult(
            value=_dec(e["value"]),
            lower=None if e["lower"] is None else _dec(e["lower"]),
            delta_at_value=_dec_certified(e["delta_at_value"]),
            tol=float(e["tol"]),
        )
        return cls(
            scenario,
            allocation if allocation is not None else scenario.load_allocation(),
            Fraction(doc["total_rho"]),
            _dec(doc["eps_claim"]),
            Fraction(doc["delta_target"]),
            _dec_certified(doc["delta_exact"]),
            eps_exact,
            Fraction(doc["uniform_multiplier"]),
            _dec_certified(doc["uniform_delta"]),
            curves=[{k: _dec_cell(k, v) for k, v in row.items()} for row in doc["curves"]],
            tradeoff=[{k: _dec_cell(k, v) for k, v in row.items()} for row in doc["tradeoff"]],
            tolerance={k: bool(v) for k, v in doc["tolerance"].items()},
        )


#: the curve columns that are exact fractions (the others: binary numbers, or flags and labels)
_FRACTION_KEYS = frozenset({"baseline_exact_delta_error", "uniform_exact_delta_error"})


def _enc(x) -> str:
    """A finite binary number m·2^e (mpf, float or int) exactly, as ``"<m>p<e>"``."""
    f = exact_fraction(x)
    k = f.denominator.bit_length() - 1
    return f"{f.numerator}p{-k}"


def _dec(text: str):
    """The mpf :func:`_enc` wrote, exactly (a number that is not m·2^e is refused)."""
    m, sep, e = text.partition("p")
    try:
        if not sep:
            raise ValueError
        return exact_mpf(int(m), int(e))
    except ValueError:
        raise ValueError(f"accounting.json: {text!r} is not a binary number m·2^e written as '<m>p<e>'") from None


def _enc_certified(c: Certified) -> dict[str, Any]:
    return {"lower": _enc(c.lower), "upper": _enc(c.upper), "tol": c.tol, "rtol": c.rtol}


def _dec_certified(d: dict[str, Any]) -> Certified:
    return Certified(_dec(d["lower"]), _dec(d["upper"])).with_target(tol=d["tol"], rtol=d["rtol"])


def _enc_cell(v):
    if isinstance(v, (bool, str)) or v is None:
        return v
    if isinstance(v, Fraction):
        return str(v)
    return _enc(v)


def _dec_cell(key: str, v):
    if isinstance(v, bool) or v is None or key == "eps":
        return v
    return Fraction(v) if key in _FRACTION_KEYS else _dec(v)


def _claim_eps(rho: Fraction, delta, conversion: str) -> mpmath.mpf:
    return zcdp.get_conversion(conversion).epsilon(rho, delta)


def _claim_delta(rho: Fraction, eps, conversion: str) -> mpmath.mpf:
    return zcdp.get_conversion(conversion).delta(rho, eps)


def proxy_pair(allocation, multiplier: Fraction = Fraction(1)):
    """The full spine with itself: every measurement twice, σ² = multiplier/ρ."""
    mechs = [DiscreteGaussian(multiplier / r) for _, _, r in allocation.items()]
    return Composition(mechs * 2)


def _uniform_multiplier(allocation, delta_text: str, conversion: str, progress: Progress) -> tuple[Fraction, Any]:
    """The uniform rescale of the proxy pair, from the optimizer's own stage 1
    (:func:`optimizer.search.uniform_rescale`: the largest exact c with certified δ(ε) ≤ δ at
    the promise): returns (σ² multiplier 1/c, certified δ at the promised ε after the rescale)."""
    target = target_from_allocation(allocation, delta=delta_text, conversion=conversion)
    c, _, d = uniform_rescale(allocation, target)
    progress(f"  uniform rescale: sigma^2 x {fmt(1 / c, 10)} (c = {fmt(c, 12)})")
    return 1 / c, d


def eps_grid(eps_claim) -> list[str]:
    """The one ε grid of a run's curves: ε_claim·k/40 for k in :data:`CURVE_STEPS` (0.2 … 1.2 × the
    promised ε, which is the point k = 40), 12 significant digits."""
    return [mpmath.nstr(to_mpf(eps_claim) * k / 40, 12) for k in CURVE_STEPS]


#: above this lattice scale the accountant uses its coarsened-lattice sandwich
#: (accountant.coarse: certified, but wider than the exact engines); the report says so
MAX_LATTICE_SCALE = 10**9


def compute_accounting(scenario, *, curves: bool = True, progress: Progress = _quiet) -> Accounting:
    """zCDP claim vs exact accounting of the proxy pair, and the uniform rescale, for a scenario
    (:func:`account` of its allocation and promise)."""
    return account(
        scenario.load_allocation(),
        scenario.target_delta_text,
        scenario.conversion,
        scenario=scenario,
        curves=curves,
        progress=progress,
    )


def account(
    alloc, delta_text: str, conversion: str, *, scenario=None, curves: bool = True, progress: Progress = _quiet
) -> Accounting:
    """zCDP claim vs exact accounting of ``alloc``'s proxy pair at the promise (δ ``delta_text``,
    ``conversion``), and the proxy pair's uniform rescale; with ``curves``, the exact δ(ε) of both
    on :func:`eps_grid` and their trade-off curves."""
    rho = alloc.total_rho
    delta = to_fraction(delta_text)
    progress(
        f"[{getattr(scenario, 'name', alloc.name)}] accounting: total rho = {rho}, conversion {conversion}, "
        f"delta {delta_text}"
    )
    eps_claim = _claim_eps(rho, delta, conversion)
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
    mult, d_uni = _uniform_multiplier(alloc, delta_text, conversion, progress)
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
                    "zcdp_claim_delta": _claim_delta(rho, e, conversion),
                    "baseline_exact_delta": b.value,
                    "baseline_exact_delta_upper": b.upper,
                    "baseline_exact_delta_error": half_width(b),  # exact Fraction
                    "uniform_exact_delta": u.value,
                    "uniform_exact_delta_upper": u.upper,
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
        for zb, ab, bb, zu, au, bu in zip(tb.zeta, tb.alpha, tb.beta, tu.zeta, tu.alpha, tu.beta):
            acc.tradeoff.append(
                {
                    "baseline_zeta": zb,
                    "baseline_alpha": ab.value,
                    "baseline_alpha_lower": ab.lower,
                    "baseline_beta": bb.value,
                    "baseline_beta_lower": bb.lower,
                    "uniform_zeta": zu,
                    "uniform_alpha": au.value,
                    "uniform_alpha_lower": au.lower,
                    "uniform_beta": bu.value,
                    "uniform_beta_lower": bu.lower,
                }
            )
    return acc


def _tradeoff_met(tc) -> bool:
    flag = getattr(tc, "tolerance_met", None)
    return bool(flag) if flag is not None else all(tradeoff_tolerance_met(tc, DEFAULT_TRADEOFF_TOL))
