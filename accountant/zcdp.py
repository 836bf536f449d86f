"""zCDP → (ε, δ)-DP conversions (the Bureau's published-guarantee baselines).

A mechanism is ρ-zCDP (Bun & Steinke, arXiv 1605.02065) if every Rényi divergence of order
α > 1 between neighbouring output laws is at most αρ.  Two conversions to approximate DP are
provided:

* **Bun–Steinke** (arXiv 1605.02065, Prop. 1.3): ε = ρ + 2√(ρ ln(1/δ)); inverse
  δ = exp(−(ε − ρ)²/(4ρ)) for ε ≥ ρ.  This is what the DHC release code prints.
* **Canonne–Kamath–Steinke** (arXiv 2004.00010, Corollary 13): for every α > 1 the mechanism is
  (ε, δ_α)-DP with δ_α = exp((α−1)(αρ − ε))/(α−1) · (1 − 1/α)^α; δ(ε) = inf_α δ_α.  Equivalently
  ε(δ) = inf_{α>1} αρ + (ln(1/δ) + (α−1)ln(1−1/α) − ln α)/(α−1).  This is the tighter conversion
  behind the published redistricting figures (17.14 persons).

Numerics.  Everything is evaluated with :mod:`mpmath` at ``dps`` decimal digits (default 50) in
a private precision context.  The CKS infimum is a 1-D minimisation whose stationarity
condition is a strictly increasing function of α (derived below), solved by a safeguarded
Newton/bisection iteration.  *Any* α > 1 gives a valid bound, so the returned number is the
objective evaluated at the α actually found: a slightly sub-optimal α only makes the answer
larger, i.e. conservative, never below the true infimum.  Finally every returned ε or δ is
rounded **outward** (upwards) by a relative ``10**(8 - dps)``, which dominates the working
rounding error, so the value is an upper bound on the bound it names.

>>> import mpmath
>>> with mpmath.workdps(30):
...     print(mpmath.nstr(epsilon_bun_steinke("24811/5000", "1e-10"), 20))
26.340588852722324354
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from fractions import Fraction
from numbers import Rational

import mpmath

from .exact import to_fraction
from .mechanism import DiscreteGaussian

__all__ = [
    "CONVERSIONS",
    "Conversion",
    "cks_alpha_for_delta",
    "cks_alpha_for_epsilon",
    "delta_bun_steinke",
    "delta_cks",
    "epsilon_bun_steinke",
    "epsilon_cks",
    "get_conversion",
    "rho_of",
]

DEFAULT_DPS = 50
#: Outward rounding margin (in decimal digits below ``dps``) applied to every returned bound.
_OUTWARD_DIGITS = 8


# --------------------------------------------------------------------------------------------
# input handling (shared with accountant.gdp)
# --------------------------------------------------------------------------------------------


def iter_groups(composition) -> list[tuple[DiscreteGaussian, int]]:
    """Normalise a composition-like object to a list of ``(DiscreteGaussian, multiplicity)``.

    Accepts an object with ``.groups`` (an :class:`accountant.Composition`), a mapping
    ``{DiscreteGaussian: multiplicity}``, a single :class:`DiscreteGaussian`, or an iterable
    of :class:`DiscreteGaussian` (repeats allowed).

    Raises:
        TypeError: for items that are not ``DiscreteGaussian``.
        ValueError: for an empty composition or a non-positive multiplicity.
    """
    if isinstance(composition, DiscreteGaussian):
        pairs = [(composition, 1)]
    elif hasattr(composition, "groups"):
        pairs = [(dg, m) for dg, m in composition.groups]
    elif isinstance(composition, Mapping):
        pairs = list(composition.items())
    elif isinstance(composition, Iterable) and not isinstance(composition, (str, bytes)):
        pairs = [(dg, 1) for dg in composition]
    else:
        raise TypeError(
            f"expected a Composition, a mapping {{DiscreteGaussian: int}} or an iterable of "
            f"DiscreteGaussian, got {type(composition).__name__}"
        )
    out: list[tuple[DiscreteGaussian, int]] = []
    for dg, m in pairs:
        if not isinstance(dg, DiscreteGaussian):
            raise TypeError(f"composition item must be a DiscreteGaussian, got {type(dg).__name__} {dg!r}")
        if isinstance(m, bool) or not isinstance(m, int) or m <= 0:
            raise ValueError(f"multiplicity must be a positive int, got {m!r} for {dg!r}")
        out.append((dg, m))
    if not out:
        raise ValueError("empty composition: need at least one DiscreteGaussian")
    return out


def rho_of(composition) -> Fraction:
    """zCDP parameter of a composition: ρ = Σ_k m_k s_k²/(2σ_k²) (exact).

    zCDP composes additively (Bun & Steinke, arXiv 1605.02065, Lemma 2.3).

    Args:
        composition: a ``Composition`` (``.groups``), a mapping ``{DiscreteGaussian: m}`` or an
            iterable of ``DiscreteGaussian``.

    Returns:
        ρ as a ``Fraction``.

    >>> rho_of([DiscreteGaussian.from_rho("73/10000")] * 2)
    Fraction(73, 10000)
    """
    return sum((m * dg.zcdp_rho for dg, m in iter_groups(composition)), Fraction(0))


def _exact_rho(rho, name: str = "rho") -> Fraction:
    if isinstance(rho, float) and not math.isfinite(rho):
        raise ValueError(f"{name} must be a finite positive exact number, got {rho!r}")
    if isinstance(rho, mpmath.mpf) and not mpmath.isfinite(rho):
        raise ValueError(f"{name} must be a finite positive exact number, got {rho!r}")
    r = to_fraction(rho, name=name)
    if r <= 0:
        raise ValueError(f"{name} must be > 0, got {rho!r}")
    return r


def to_mpf(x, name: str) -> mpmath.mpf:
    """Convert int/Fraction/float/str/mpf to an mpf at the *current* precision, rejecting NaN/inf.

    Strings are parsed by mpmath (decimal, correctly rounded), Fractions divided at working
    precision, floats taken at their exact binary value.
    """
    if isinstance(x, bool):
        raise TypeError(f"{name}: got bool {x!r}; expected a number")
    if isinstance(x, Rational):
        v = mpmath.mpf(x.numerator) / x.denominator
    elif isinstance(x, (float, int, str, mpmath.mpf)):
        try:
            v = mpmath.mpf(x.strip() if isinstance(x, str) else x)
        except (ValueError, TypeError):
            raise ValueError(f"{name}: cannot parse {x!r} as a real number") from None
    else:
        try:
            v = mpmath.mpf(x)
        except (ValueError, TypeError):
            raise TypeError(f"{name}: got {type(x).__name__} {x!r}; expected a real number") from None
    if not mpmath.isfinite(v):
        raise ValueError(f"{name} must be finite, got {x!r}")
    return v


def _delta_in_unit(delta) -> mpmath.mpf:
    d = to_mpf(delta, "delta")
    if not (0 < d < 1):
        raise ValueError(f"delta must lie in (0, 1), got {delta!r}")
    return d


def _frac_mpf(r: Fraction) -> mpmath.mpf:
    return mpmath.mpf(r.numerator) / r.denominator


def _up(x: mpmath.mpf, dps: int) -> mpmath.mpf:
    """Round a positive bound outward (up) by a relative 10^(OUTWARD - dps)."""
    return x * (1 + mpmath.mpf(10) ** (_OUTWARD_DIGITS - dps))


def _check_dps(dps: int) -> int:
    if isinstance(dps, bool) or not isinstance(dps, int) or dps < 20:
        raise ValueError(f"dps must be an int >= 20, got {dps!r}")
    return dps


def solve_increasing(f, fprime, lo, hi, xtol, maxiter: int = 400):
    """Root of a continuous strictly increasing ``f`` on ``[lo, hi]`` with f(lo) < 0 < f(hi).

    Safeguarded Newton (falls back to bisection whenever the Newton step leaves the bracket
    or fails to halve it).  Returns a point within ``xtol`` of the root (or an exact root).
    """
    flo, fhi = f(lo), f(hi)
    if not (flo < 0 < fhi):
        raise ArithmeticError(f"root not bracketed: f({lo})={flo}, f({hi})={fhi}")
    x = (lo + hi) / 2
    dx_old = hi - lo
    dx = dx_old
    for _ in range(maxiter):
        fx = f(x)
        if fx == 0:
            return x
        if fx < 0:
            lo = x
        else:
            hi = x
        d = fprime(x)
        step = fx / d if d > 0 else None
        if step is not None and lo < x - step < hi and 2 * abs(step) < abs(dx_old):
            dx_old, dx = dx, step
            x = x - step
        else:
            dx_old = dx
            dx = (hi - lo) / 2
            x = (lo + hi) / 2
        if abs(dx) <= xtol or hi - lo <= xtol:
            return x
    return x


# --------------------------------------------------------------------------------------------
# Bun–Steinke
# --------------------------------------------------------------------------------------------


def epsilon_bun_steinke(rho, delta, *, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """ε = ρ + 2√(ρ ln(1/δ)) (Bun & Steinke, arXiv 1605.02065, Prop. 1.3).

    Args:
        rho: zCDP parameter, exact (int, Fraction, or string like ``"24811/5000"``), > 0.
        delta: target δ ∈ (0, 1) (float, str, Fraction or mpf).
        dps: working precision in decimal digits.

    Returns:
        ε as ``mpmath.mpf``, rounded up (conservative).

    Raises:
        ValueError: ρ ≤ 0, δ ∉ (0, 1), NaN or infinite inputs.
        TypeError: ρ given as a float (not exact).
    """
    r = _exact_rho(rho)
    with mpmath.workdps(_check_dps(dps)):
        d = _delta_in_unit(delta)
        rr = _frac_mpf(r)
        eps = rr + 2 * mpmath.sqrt(rr * -mpmath.log(d))
        return _up(eps, dps)


def delta_bun_steinke(rho, eps, *, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """Inverse of :func:`epsilon_bun_steinke`: δ = exp(−(ε − ρ)²/(4ρ)) for ε ≥ ρ, else 1.

    (arXiv 1605.02065, Prop. 1.3 solved for δ; for ε < ρ the statement gives nothing better than
    the trivial δ = 1.)

    Args:
        rho: zCDP parameter, exact, > 0.
        eps: ε (float, str, Fraction or mpf), finite.
        dps: working precision in decimal digits.

    Returns:
        δ ∈ (0, 1] as ``mpmath.mpf``, rounded up (conservative).
    """
    r = _exact_rho(rho)
    with mpmath.workdps(_check_dps(dps)):
        e = to_mpf(eps, "eps")
        rr = _frac_mpf(r)
        if e <= rr:
            return mpmath.mpf(1)
        return min(mpmath.mpf(1), _up(mpmath.exp(-((e - rr) ** 2) / (4 * rr)), dps))


# --------------------------------------------------------------------------------------------
# Canonne–Kamath–Steinke
# --------------------------------------------------------------------------------------------
#
# δ_α(ε) in logs, with t = α − 1 > 0:
#     h(α) = (α−1)(αρ − ε) − ln(α−1) + α ln(1 − 1/α)
#     h'(α) = (2α − 1)ρ − ε + ln(1 − 1/α),    h''(α) = 2ρ + 1/(α(α−1)) > 0,
# so h is strictly convex and the minimiser is the unique root of the increasing h'.
#
# ε_α(δ) with L = ln(1/δ):
#     e(α) = αρ + (L − ln α)/(α − 1) + ln(1 − 1/α)
#     e'(α) = ρ − (L − ln α)/(α − 1)²,
# and e'(α) has the sign of g(α) = ρ(α−1)² − (L − ln α), strictly increasing
# (g' = 2ρ(α−1) + 1/α > 0), negative as α → 1⁺ (L > 0), so the minimiser is the root of g.
# We solve in u = ln(α − 1) so that minimisers extremely close to α = 1 are resolved.


def _log1m_inv(t):
    """ln(1 − 1/α) for α = 1 + t, t > 0, without cancellation: ln t − ln(1 + t)."""
    return mpmath.log(t) - mpmath.log1p(t)


def _cks_log_delta_at(rr, e, t):
    a = 1 + t
    return t * (a * rr - e) - mpmath.log(t) + a * _log1m_inv(t)


def _cks_eps_at(rr, big_l, t):
    a = 1 + t
    return a * rr + (big_l - mpmath.log(a)) / t + _log1m_inv(t)


def _bracket_u(f, u_lo=-4.0, u_hi=4.0):
    u_lo, u_hi = mpmath.mpf(u_lo), mpmath.mpf(u_hi)
    while f(u_lo) >= 0:
        u_lo = 2 * u_lo - 1
        if u_lo < -1e6:
            raise ArithmeticError("CKS: cannot bracket the optimal alpha from below")
    while f(u_hi) <= 0:
        u_hi = 2 * u_hi + 1
        if u_hi > 1e6:
            raise ArithmeticError("CKS: cannot bracket the optimal alpha from above")
    return u_lo, u_hi


def _cks_t_for_eps(rr, e):
    def f(u):
        t = mpmath.exp(u)
        return (1 + 2 * t) * rr - e + _log1m_inv(t)

    def fp(u):
        t = mpmath.exp(u)
        return t * (2 * rr + 1 / (t * (1 + t)))

    lo, hi = _bracket_u(f)
    u = solve_increasing(f, fp, lo, hi, xtol=mpmath.mpf(10) ** (-(mpmath.mp.dps // 2 + 5)))
    return mpmath.exp(u)


def _cks_t_for_delta(rr, big_l):
    def f(u):
        t = mpmath.exp(u)
        return rr * t * t - big_l + mpmath.log1p(t)

    def fp(u):
        t = mpmath.exp(u)
        return t * (2 * rr * t + 1 / (1 + t))

    lo, hi = _bracket_u(f)
    u = solve_increasing(f, fp, lo, hi, xtol=mpmath.mpf(10) ** (-(mpmath.mp.dps // 2 + 5)))
    return mpmath.exp(u)


def cks_alpha_for_epsilon(rho, eps, *, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """The Rényi order α > 1 minimising the CKS δ_α(ε) (arXiv 2004.00010, Cor. 13).

    Root of (2α − 1)ρ − ε + ln(1 − 1/α) = 0 (the objective is strictly convex in α).
    """
    r = _exact_rho(rho)
    with mpmath.workdps(_check_dps(dps)):
        return 1 + _cks_t_for_eps(_frac_mpf(r), to_mpf(eps, "eps"))


def cks_alpha_for_delta(rho, delta, *, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """The Rényi order α > 1 minimising the CKS ε_α(δ) (arXiv 2004.00010, Cor. 13).

    Root of ρ(α − 1)² − ln(1/δ) + ln α = 0 (unique stationary point, a minimum).
    """
    r = _exact_rho(rho)
    with mpmath.workdps(_check_dps(dps)):
        return 1 + _cks_t_for_delta(_frac_mpf(r), -mpmath.log(_delta_in_unit(delta)))


def delta_cks(rho, eps, *, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """δ(ε) = inf_{α>1} exp((α−1)(αρ − ε))/(α−1) · (1 − 1/α)^α, clamped to ≤ 1.

    Canonne, Kamath & Steinke, arXiv 2004.00010, Corollary 13 (the conversion in the Census DAS
    ``curve.py``).  The log-objective is strictly convex in α; the minimiser is found by a
    safeguarded Newton iteration on its derivative and the objective is evaluated at the α
    found, so an imperfect α errs on the large (conservative) side.  For ε < 0 the trivial
    δ = 1 is returned.

    Args:
        rho: zCDP parameter, exact (int, Fraction, or string), > 0.
        eps: ε (float, str, Fraction or mpf), finite.
        dps: working precision in decimal digits.

    Returns:
        δ ∈ (0, 1] as ``mpmath.mpf``, rounded up.
    """
    r = _exact_rho(rho)
    with mpmath.workdps(_check_dps(dps) + 10):
        e = to_mpf(eps, "eps")
        if e < 0:
            return mpmath.mpf(1)
        rr = _frac_mpf(r)
        t = _cks_t_for_eps(rr, e)
        log_d = _cks_log_delta_at(rr, e, t)
        if log_d >= 0:
            return mpmath.mpf(1)
        return min(mpmath.mpf(1), _up(mpmath.exp(log_d), dps))


def epsilon_cks(rho, delta, *, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """ε(δ) = inf_{α>1} αρ + (ln(1/δ) + (α−1)ln(1−1/α) − ln α)/(α−1).

    Canonne, Kamath & Steinke, arXiv 2004.00010, Corollary 13 solved for ε (the same family of
    (ε, δ_α) pairs as :func:`delta_cks`, so the two are mutually inverse).  The minimiser is the
    unique root of ρ(α−1)² = ln(1/δ) − ln α; the objective is evaluated at the α found, so the
    result is never below the infimum.

    Args:
        rho: zCDP parameter, exact (int, Fraction, or string), > 0.
        delta: δ ∈ (0, 1) (float, str, Fraction or mpf).
        dps: working precision in decimal digits.

    Returns:
        ε ≥ 0 as ``mpmath.mpf``, rounded up (clamped at 0 when the infimum is negative, which
        happens only for δ extremely close to 1).
    """
    r = _exact_rho(rho)
    with mpmath.workdps(_check_dps(dps) + 10):
        big_l = -mpmath.log(_delta_in_unit(delta))
        rr = _frac_mpf(r)
        t = _cks_t_for_delta(rr, big_l)
        eps = _cks_eps_at(rr, big_l, t)
        # For δ very close to 1 the infimum can be negative (a near-trivial statement); ε = 0 is
        # a larger, hence still valid, value and the meaningful one for DP.
        return _up(eps, dps) if eps > 0 else mpmath.mpf(0)


# ---------------------------------------------------------------------- the registry
@dataclass(frozen=True)
class Conversion:
    """One zCDP → (ε, δ) conversion: its name (as scenarios and the CLI write it), the label a report
    prints, the paper (arXiv id), and its two directions ``epsilon(rho, delta)`` and
    ``delta(rho, eps)`` (each rounded on its safe side, up)."""

    name: str
    label: str
    arxiv: str
    epsilon: Callable[..., mpmath.mpf]
    delta: Callable[..., mpmath.mpf]


#: every conversion by name (the one registry: scenarios, the CLI and the reports read it)
CONVERSIONS: dict[str, Conversion] = {
    c.name: c
    for c in (
        Conversion("bun-steinke", "Bun–Steinke", "1605.02065", epsilon_bun_steinke, delta_bun_steinke),
        Conversion("cks", "Canonne–Kamath–Steinke", "2004.00010", epsilon_cks, delta_cks),
    )
}


def get_conversion(name: str) -> Conversion:
    """The conversion called ``name``; a ValueError naming the choices otherwise.

    >>> get_conversion("cks").label
    'Canonne–Kamath–Steinke'
    """
    try:
        return CONVERSIONS[name]
    except (KeyError, TypeError):
        raise ValueError(f"zCDP conversion must be one of {tuple(CONVERSIONS)}, got {name!r}") from None
