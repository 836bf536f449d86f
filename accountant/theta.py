"""Moment and characteristic functions of discrete Gaussians as Jacobi theta functions.

For X ~ N_Z(0, σ²) (pmf ∝ exp(−x²/(2σ²)) on Z) the moment generating function at a complex
argument u is

    M_σ(u) = E[e^{uX}] = θ₃(z, τ) / θ₃(0, τ),   τ = i/(2πσ²),   z = u/(2πi),

with θ₃(z, τ) = Σ_n exp(πiτn² + 2πinz).  Arb's ``acb.modular_theta`` evaluates θ₃ with
rigorous error balls and applies the modular transformation (the Poisson-dual series) when
σ² is large, so neither the ~48σ² terms of direct summation nor a hand-written truncation
bound is needed.  The characteristic function is φ_σ(θ) = M_σ(iθ).

For the sieve we also need a cheap *upper bound* on |φ| of any real-shifted discrete Gaussian
N_Z(c, σ²) (the exponentially tilted factors of :mod:`accountant.quadrature` are of this form).
By Poisson summation, for θ ∈ [−π, π],

    |φ_c(θ)| ≤ Σ_j exp(−σ²(θ + 2πj)²/2) / (1 − 2 Σ_{j≥1} exp(−2π²σ²j²)),

independent of c; the numerator is the wrapped-normal kernel, decreasing in |θ| on [0, π].
References: Canonne, Kamath & Steinke arXiv 2004.00010; Su, Su & Wang arXiv 2606.29835.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import numpy as np
from flint import acb, arb, fmpq

__all__ = ["log_abs_cf_bound", "peak_halfwidth", "theta0", "theta_tau"]


def theta_tau(sigma2: Fraction) -> acb:
    """τ = i/(2πσ²), the modular parameter of N_Z(0, σ²), at the current Arb precision."""
    s2 = arb(fmpq(sigma2.numerator, sigma2.denominator))
    return acb(0, 1 / (2 * arb.pi() * s2))


def theta0(tau: acb) -> acb:
    """θ₃(0, τ) = Σ_x exp(−x²/(2σ²)) for τ = i/(2πσ²): the normalising constant of the pmf of
    N_Z(0, σ²) (≈ √(2πσ²) for large σ²), at the current Arb precision."""
    return acb.modular_theta(acb(0), tau)[2]


def _bound_constants(s2: float) -> tuple[float, float] | None:
    """(log(1 − den_tail), log of the |j| ≥ 5 terms' geometric bound) of the Poisson bound, or
    ``None`` when its denominator is not safely positive (σ² too small: the trivial bound 1)."""
    den_tail = 2.0 * sum(math.exp(-2.0 * math.pi**2 * s2 * j * j) for j in range(1, 8))
    if den_tail >= 0.5:
        return None
    # remaining |j| >= 5 terms: each <= exp(-s2 (2π(|j|-1))^2 / 2), summed geometrically
    two_pi = 2.0 * math.pi
    log_rest = math.log(2.0) - s2 * (two_pi * 4) ** 2 / 2.0 - math.log(-math.expm1(-s2 * two_pi**2))
    return math.log1p(-den_tail), log_rest


def log_abs_cf_bound(sigma2: float, theta: float) -> float:
    """Natural log of the Poisson upper bound on |φ_c(θ)| for θ ∈ [0, π] (any real shift c).

    Returns 0.0 (the trivial bound |φ| ≤ 1) when the Poisson bound is not informative, i.e.
    when σ² is too small for the denominator to be safely positive.
    """
    s2 = float(sigma2)
    consts = _bound_constants(s2)
    if consts is None:
        return 0.0
    log_den, log_rest = consts
    # numerator: wrapped normal, terms j = -4..4 plus the geometric tail bound
    terms = [-s2 * (theta + 2.0 * math.pi * j) ** 2 / 2.0 for j in range(-4, 5)]
    top = max(terms)
    a = top + math.log(sum(math.exp(t - top) for t in terms))
    hi = max(a, log_rest)
    val = hi + math.log(math.exp(a - hi) + math.exp(log_rest - hi)) - log_den
    return min(val, 0.0)


def log_abs_cf_bounds(sigma2: float, theta: np.ndarray) -> np.ndarray:
    """:func:`log_abs_cf_bound` at many θ ∈ [0, π] at once (the same terms, vectorised)."""
    s2 = float(sigma2)
    theta = np.asarray(theta, dtype=float)
    consts = _bound_constants(s2)
    if consts is None:
        return np.zeros(theta.shape)
    log_den, log_rest = consts
    terms = np.stack([-s2 * (theta + 2.0 * math.pi * j) ** 2 / 2.0 for j in range(-4, 5)])
    top = terms.max(axis=0)
    a = top + np.log(np.exp(terms - top).sum(axis=0))
    return np.minimum(np.logaddexp(a, log_rest) - log_den, 0.0)


#: relative width at which :func:`peak_halfwidth` stops refining its bracket (the result is
#: on the wide side: at most 1e-4 more nodes kept, never fewer).
_HW_RTOL = 1e-4


@functools.lru_cache(maxsize=8192)  # a pure function of its three numbers, asked again by every batch and plan
def peak_halfwidth(sigma2: float, multiplicity: int, log_threshold: float) -> float | None:
    """Smallest θ_r ∈ (0, π) with  m·log B(θ) < log_threshold  for all θ ∈ [θ_r, π] (up to a
    relative 1e-4, on the wide side).

    B is the Poisson bound of :func:`log_abs_cf_bound`, decreasing on [0, π].  Returns ``None``
    when the bound never drops below the threshold (the component cannot sieve).  Since
    log B(θ) ≥ −σ²θ²/2 (the j = 0 term alone, denominator ≤ 1), the root is ≥ θ₀ =
    √(−2·threshold/(mσ²)); the bracket [θ₀, θ₀(1 + h)] is widened until its right end is below
    the threshold, then bisected.  The returned point has m·log B < threshold and is widened by
    a relative 1e-9 so that float rounding can only keep more nodes, never fewer.
    """
    m = multiplicity
    s2 = float(sigma2)

    def f(t: float) -> float:
        return m * log_abs_cf_bound(s2, t)

    if f(math.pi) >= log_threshold:
        return None
    lo, hi = 0.0, math.pi  # f(lo) >= thr (f(0) ~ 0 >= thr), f(hi) < thr
    theta0 = math.sqrt(max(0.0, -2.0 * log_threshold / (m * s2)))
    if theta0 < math.pi:
        lo = theta0 * (1.0 - 1e-12)
        for h in (1e-3, 1e-2, 0.1, 0.5):
            t = theta0 * (1.0 + h)
            if t >= math.pi:
                break
            if f(t) < log_threshold:
                hi = t
                break
            lo = t
    while hi - lo > _HW_RTOL * hi:
        mid = 0.5 * (lo + hi)
        if f(mid) < log_threshold:
            hi = mid
        else:
            lo = mid
    return min(math.pi, hi * (1.0 + 1e-9) + 1e-15)
