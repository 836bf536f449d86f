"""Gaussian-DP surrogates for compositions of discrete Gaussian mechanisms.

**μ-GDP** (Dong, Roth & Su, arXiv 1905.02383).  A mechanism is μ-GDP if its trade-off curve
dominates G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) — the curve of testing N(0, 1) against N(μ, 1).  Its
privacy profile (Cor. 2.13 of 1905.02383) is

    δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2).

A composition of discrete Gaussians with shifts s_k and scales σ_k² is *approximated* (central
limit theorem, Thm 3.5 of 1905.02383) by μ-GDP with μ² = Σ_k m_k s_k²/σ_k² (= 2ρ_zCDP).  This
surrogate is **not** a certified bound (for discrete Gaussians it is not even guaranteed to be
on the safe side); it is a fast sanity check of the exact accountant (docs/method.md §2: for the DHC
persons pair [13, 13] it agrees with the exact δ to ~1e-9 relative).

**Edgeworth-corrected surrogate.**  Under P the privacy loss of the composition is exactly

    L_P = ρ + V,   V = Σ_k w_k X_k,   w_k = s_k/σ_k²,  X_k ~ N_Z(0, σ_k²) independent,

and under Q, L_Q = −ρ + V (same V, by symmetry of N_Z(0, σ²)).  V is symmetric, so its odd
cumulants vanish; κ₂(V) = Σ m_k w_k² κ₂(X_k) and κ₄(V) = Σ m_k w_k⁴ κ₄(X_k), with the cumulants of
the discrete Gaussian computed exactly (direct summation for σ² ≤ 1, the Poisson/Jacobi-theta
dual for σ² > 1).  The one-term Edgeworth expansion of the tail of V,

    P[V > x] ≈ Φ̄(z) + (γ₂/24) φ(z) (z³ − 3z),   z = x/√κ₂,   γ₂ = κ₄/κ₂²,

(the skewness term is absent by symmetry) is inserted into δ(ε) = P[L_P > ε] − e^ε P[L_Q > ε]
for *both* tails.  Compared with plain GDP it (i) uses the true variance κ₂ ≤ μ² (the variance of
N_Z(0, σ²) is strictly below σ², noticeably so for σ² ≲ 1) and (ii) adds the kurtosis term.  For
m i.i.d.-like components γ₂ = O(1/m); the next omitted terms (γ₃-type sixth cumulant and γ₂²) are
O(m⁻²) in the distribution function, so the error is O(m^{-3/2}) or better *for non-lattice or
fine-lattice* loss variables — the order claimed by Su, Su & Wang (arXiv 2606.29835; statement
not verified, see docs/method.md §8).  If all weights are commensurate with a coarse span (e.g. m
identical mechanisms), V lives on a lattice of span h = gcd(w_k) and a lattice (Euler–Maclaurin)
error of relative order (h/√κ₂)² remains that no continuous expansion removes; the hockey-stick
functional is Lipschitz, which keeps this term second order.  Like GDP, this is an approximation,
not a certificate.

All functions use :mod:`mpmath` in a private precision context (``dps`` digits, default 50) and
increase the precision automatically when the two terms of δ cancel, so tiny δ (down to 1e-100
and below) keep full relative accuracy.
"""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath

from .mechanism import DiscreteGaussian
from .zcdp import DEFAULT_DPS, iter_groups, solve_increasing, to_mpf

__all__ = [
    "delta",
    "discrete_gaussian_cumulants",
    "edgeworth_delta",
    "edgeworth_tradeoff",
    "epsilon",
    "loss_cumulants",
    "loss_lattice_span",
    "mu2_of",
    "mu_of",
    "tradeoff",
]

#: Extra digits carried beyond ``dps`` in every evaluation.
_GUARD = 15


def _check_dps(dps: int) -> int:
    if isinstance(dps, bool) or not isinstance(dps, int) or dps < 15:
        raise ValueError(f"dps must be an int >= 15, got {dps!r}")
    return dps


def _positive(x, name: str) -> mpmath.mpf:
    v = to_mpf(x, name)
    if v <= 0:
        raise ValueError(f"{name} must be > 0, got {x!r}")
    return v


def _unit(x, name: str, closed: bool) -> mpmath.mpf:
    v = to_mpf(x, name)
    ok = (0 <= v <= 1) if closed else (0 < v < 1)
    if not ok:
        raise ValueError(f"{name} must lie in {'[0, 1]' if closed else '(0, 1)'}, got {x!r}")
    return v


# --------------------------------------------------------------------------------------------
# μ of a composition
# --------------------------------------------------------------------------------------------


def mu2_of(composition) -> Fraction:
    """μ² = Σ_k m_k s_k²/σ_k² of a composition (exact; equals 2ρ_zCDP).

    Args:
        composition: a ``Composition`` (``.groups``), a mapping ``{DiscreteGaussian: m}`` or an
            iterable of ``DiscreteGaussian``.

    >>> mu2_of([DiscreteGaussian.from_rho("24811/5000")])
    Fraction(24811, 5000)
    """
    return sum((m * dg.shift * dg.loss_weight for dg, m in iter_groups(composition)), Fraction(0))


def mu_of(composition, *, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """μ = √(Σ_k m_k s_k²/σ_k²), the GDP parameter of the CLT surrogate (arXiv 1905.02383, Thm 3.5)."""
    m2 = mu2_of(composition)
    with mpmath.workdps(_check_dps(dps) + _GUARD):
        return mpmath.sqrt(mpmath.mpf(m2.numerator) / m2.denominator)


# --------------------------------------------------------------------------------------------
# hockey-stick evaluation with automatic precision
# --------------------------------------------------------------------------------------------


def _hockey(tail, shift, eps, dps: int) -> mpmath.mpf:
    """δ(ε) = T(ε − shift) − e^ε T(ε + shift) for a symmetric noise tail T, adaptively.

    ``tail``, ``shift`` and ``eps`` are callables / thunks re-evaluated at the working
    precision so that the precision can be raised when the two terms cancel.
    """
    work = dps + _GUARD
    for _ in range(6):
        with mpmath.workdps(work):
            e = eps()
            r = shift()
            t1 = tail(e - r)
            t2 = mpmath.exp(e) * tail(e + r)
            d = t1 - t2
            if t1 == 0:
                return mpmath.mpf(0)
            lost = 0 if d == 0 else int(mpmath.ceil(mpmath.log10(abs(t1 / d))))
            if d != 0 and lost <= _GUARD - 5:
                return +d
            work = dps + _GUARD + max(lost, 2 * _GUARD)
    return +d


def _ncdf(x):
    return mpmath.ncdf(x)


# --------------------------------------------------------------------------------------------
# μ-GDP
# --------------------------------------------------------------------------------------------


def delta(mu, eps, *, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """μ-GDP privacy profile δ(ε) = Φ(−ε/μ + μ/2) − e^ε Φ(−ε/μ − μ/2) (arXiv 1905.02383, Cor. 2.13).

    Evaluated with erfc-based Φ at ``dps`` + guard digits; the precision is raised automatically
    when the difference cancels, so the result has ~``dps`` correct digits even for δ ≪ 1e-100.

    Args:
        mu: μ > 0 (int, Fraction, str, float or mpf).
        eps: ε, any finite real.
        dps: decimal digits of the result.

    Returns:
        δ as ``mpmath.mpf``.
    """
    dps = _check_dps(dps)
    with mpmath.workdps(dps + _GUARD):
        _positive(mu, "mu")
        to_mpf(eps, "eps")

    def tail(x):
        m = to_mpf(mu, "mu")
        return _ncdf(-x / m)

    return _hockey(tail, lambda: to_mpf(mu, "mu") ** 2 / 2, lambda: to_mpf(eps, "eps"), dps)


def epsilon(mu, delta, *, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """Inverse of :func:`delta`: the smallest ε ≥ 0 with δ_μ(ε) ≤ ``delta``.

    Solved by safeguarded Newton on ln δ(ε) (dδ/dε = −e^ε Φ(−ε/μ − μ/2)), bracketed by
    [0, μ²/2 + μ√(2 ln(1/δ))] (the Bun–Steinke ε of ρ = μ²/2, which μ-GDP implies).  The result
    is nudged up by a relative 10^(8−dps) and checked, so δ(returned ε) ≤ target.

    Args:
        mu: μ > 0.
        delta: target δ ∈ (0, 1).
        dps: decimal digits.

    Returns:
        ε ≥ 0 as ``mpmath.mpf`` (0 if δ(0) = 2Φ(μ/2) − 1 is already ≤ target).
    """
    dps = _check_dps(dps)
    with mpmath.workdps(dps + _GUARD):
        m = _positive(mu, "mu")
        target = _unit(delta, "delta", closed=False)
        if delta_fn(m, 0, dps=dps) <= target:
            return mpmath.mpf(0)
        log_t = mpmath.log(target)

        def f(e):
            return log_t - mpmath.log(delta_fn(m, e, dps=dps))

        def fp(e):
            with mpmath.workdps(dps + _GUARD):
                d = delta_fn(m, e, dps=dps)
                return mpmath.exp(e) * _ncdf(-e / m - m / 2) / d

        hi = m * m / 2 + m * mpmath.sqrt(2 * -log_t)
        while f(hi) <= 0:
            hi = 2 * hi + 1
        e = solve_increasing(f, fp, mpmath.mpf(0), hi, xtol=mpmath.mpf(10) ** (-(dps + 5)) * (1 + hi))
        e = e * (1 + mpmath.mpf(10) ** (8 - dps))
        while delta_fn(m, e, dps=dps) > target:
            e = e * (1 + mpmath.mpf(10) ** (8 - dps)) + mpmath.mpf(10) ** (8 - dps)
        return e


delta_fn = delta  # the name ``delta`` is shadowed by parameters below


def _ndtri(p) -> mpmath.mpf:
    """Φ⁻¹(p) for p ∈ (0, 1) at the current precision, accurate in the tails (no 1 − p loss)."""
    if p > mpmath.mpf(1) / 2:
        return -_ndtri(1 - p)
    if p == mpmath.mpf(1) / 2:
        return mpmath.mpf(0)
    log_p = mpmath.log(p)

    def f(x):
        return mpmath.log(_ncdf(x)) - log_p

    def fp(x):
        return mpmath.npdf(x) / _ncdf(x)

    lo = -mpmath.sqrt(-2 * log_p)
    while f(lo) >= 0:
        lo = 2 * lo
    return solve_increasing(f, fp, lo, mpmath.mpf(0), xtol=mpmath.mpf(10) ** (-(mpmath.mp.dps - 3)))


def tradeoff(mu, alpha, *, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """GDP trade-off curve G_μ(α) = Φ(Φ⁻¹(1 − α) − μ) (arXiv 1905.02383, Def. 2.7).

    Φ⁻¹(1 − α) is computed as −Φ⁻¹(α) by a Newton solve on ln Φ, so tiny α and α near 1 keep
    full relative accuracy.

    Args:
        mu: μ > 0.
        alpha: type-I error α ∈ [0, 1].
        dps: decimal digits.

    Returns:
        β = G_μ(α) as ``mpmath.mpf``.
    """
    dps = _check_dps(dps)
    with mpmath.workdps(dps + _GUARD):
        m = _positive(mu, "mu")
        a = _unit(alpha, "alpha", closed=True)
        if a == 0:
            return mpmath.mpf(1)
        if a == 1:
            return mpmath.mpf(0)
        return _ncdf(-_ndtri(a) - m)


# --------------------------------------------------------------------------------------------
# cumulants of the discrete Gaussian and of the privacy loss
# --------------------------------------------------------------------------------------------


def _cumulants_direct(t):
    """(κ₂, κ₄) of N_Z(0, σ²), t = 1/(2σ²), by direct summation over x ≥ 0."""
    z = mpmath.mpf(1)
    s2 = s4 = mpmath.mpf(0)
    eps = mpmath.mpf(10) ** (-(mpmath.mp.dps + 5))
    x = 1
    while True:
        w = mpmath.exp(-t * x * x)
        z += 2 * w
        s2 += 2 * w * x * x
        s4 += 2 * w * x**4
        if w * x**4 < eps * s4:
            break
        x += 1
    m2, m4 = s2 / z, s4 / z
    return m2, m4 - 3 * m2 * m2


def _cumulants_dual(t):
    """(κ₂, κ₄) of N_Z(0, σ²), t = 1/(2σ²), from the Poisson (Jacobi theta) dual.

    Z(t) = Σ_x e^{−t x²} = √(π/t) Θ(t), Θ = 1 + 2Σ_{k≥1} e^{−π²k²/t}.  With ℓ = ln Θ:
    κ₂ = −(ln Z)' = 1/(2t) − ℓ',  κ₄ = (ln Z)'' − 2κ₂² = ℓ'' + 2ℓ'/t − 2ℓ'²  (no cancellation:
    every term is O(e^{−π²/t})).
    """
    theta = mpmath.mpf(1)
    d1 = d2 = mpmath.mpf(0)
    pi2 = mpmath.pi**2
    eps = mpmath.mpf(10) ** (-(mpmath.mp.dps + 5))
    k = 1
    while True:
        a = pi2 * k * k
        e = mpmath.exp(-a / t)
        theta += 2 * e
        d1 += 2 * (a / t**2) * e
        d2 += 2 * ((a / t**2) ** 2 - 2 * a / t**3) * e
        if e < eps or k > 10**6:
            break
        k += 1
    l1 = d1 / theta
    l2 = d2 / theta - l1 * l1
    return 1 / (2 * t) - l1, l2 + 2 * l1 / t - 2 * l1 * l1


def discrete_gaussian_cumulants(sigma2, *, method: str | None = None, dps: int = DEFAULT_DPS):
    """Variance κ₂ and fourth cumulant κ₄ of N_Z(0, σ²) (odd cumulants are 0).

    N_Z(0, σ²)(x) ∝ exp(−x²/(2σ²)) on the integers (Canonne, Kamath & Steinke, arXiv
    2004.00010); κ₂ < σ² and κ₄ → 0 exponentially fast (∝ e^{−2π²σ²}) as σ² grows.

    Args:
        sigma2: σ² > 0 (exact, or anything :func:`accountant.exact.to_fraction` accepts; a
            ``DiscreteGaussian``'s ``sigma2``).
        method: ``"direct"`` (sum over x), ``"dual"`` (Poisson/theta series) or ``None``
            (direct for σ² ≤ 1, dual otherwise; both converge geometrically there).
        dps: decimal digits.

    Returns:
        ``(kappa2, kappa4)`` as ``mpmath.mpf``.
    """
    s2 = DiscreteGaussian(sigma2).sigma2
    if method is None:
        method = "direct" if s2 <= 1 else "dual"
    if method not in ("direct", "dual"):
        raise ValueError(f"method must be 'direct', 'dual' or None, got {method!r}")
    with mpmath.workdps(_check_dps(dps) + _GUARD):
        t = mpmath.mpf(s2.denominator) / (2 * s2.numerator)
        return _cumulants_direct(t) if method == "direct" else _cumulants_dual(t)


def loss_cumulants(composition, *, dps: int = DEFAULT_DPS):
    """(ρ, κ₂, κ₄) of the privacy loss L_P = ρ + Σ_k w_k X_k of a composition.

    ρ = Σ m_k s_k²/(2σ_k²) is the mean (exact ``Fraction``); κ₂ = Σ m_k w_k² κ₂(X_k) and
    κ₄ = Σ m_k w_k⁴ κ₄(X_k) (mpf) are the cumulants of the symmetric part V.
    """
    groups = iter_groups(composition)
    rho = sum((m * dg.zcdp_rho for dg, m in groups), Fraction(0))
    with mpmath.workdps(_check_dps(dps) + _GUARD):
        k2 = k4 = mpmath.mpf(0)
        for dg, m in groups:
            c2, c4 = discrete_gaussian_cumulants(dg.sigma2, dps=dps)
            w = mpmath.mpf(dg.loss_weight.numerator) / dg.loss_weight.denominator
            k2 += m * w**2 * c2
            k4 += m * w**4 * c4
        return rho, k2, k4


def _edgeworth_tail(k2, k4):
    """x ↦ Φ̄(z) + (γ₂/24) φ(z)(z³ − 3z), z = x/√κ₂ (one-term Edgeworth tail of symmetric V)."""

    def tail(x):
        s = mpmath.sqrt(k2)
        g2 = k4 / (k2 * k2)
        z = x / s
        return _ncdf(-z) + g2 / 24 * mpmath.npdf(z) * (z**3 - 3 * z)

    return tail


def loss_lattice_span(composition) -> Fraction:
    """Span h of the lattice carrying V = Σ w_k X_k: h = gcd of the rational weights w_k = s_k/σ_k².

    Since each X_k ranges over all of Z, V takes values in hZ and h is its maximal span.

    >>> loss_lattice_span([DiscreteGaussian("1/2"), DiscreteGaussian("1/3")])
    Fraction(1, 1)
    """
    nums, dens = 0, 1
    for dg, _ in iter_groups(composition):
        w = dg.loss_weight
        nums = math.gcd(nums, w.numerator)
        dens = math.lcm(dens, w.denominator)
    return Fraction(nums, dens)


#: ``edgeworth_delta(..., lattice=None)`` sums over the lattice when √κ₂/h is at most this
#: (≲ 20·LATTICE_AUTO_MAX lattice terms); above it the lattice correction is ≲ (h z/√κ₂)²/12.
LATTICE_AUTO_MAX = 400


def _edgeworth_lattice_delta(rho, k2, k4, h, eps):
    """Σ_{v∈hZ, ρ+v>ε} p(v)(1 − e^{ε−ρ−v}), p(v) = (h/√κ₂) φ(z)(1 + γ₂/24·He₄(z)), z = v/√κ₂."""
    s = mpmath.sqrt(k2)
    g2 = k4 / (k2 * k2)
    c = eps - rho
    n = int(mpmath.floor(c / h)) + 1  # first lattice point with v > c
    tiny = mpmath.mpf(10) ** (-(mpmath.mp.dps + 5))
    total = mpmath.mpf(0)
    while True:
        v = h * n
        z = v / s
        p = h / s * mpmath.npdf(z) * (1 + g2 / 24 * (z**4 - 6 * z * z + 3))
        term = p * -mpmath.expm1(c - v)
        total += term
        if z > 1 and abs(term) <= tiny * abs(total):
            return total
        n += 1


def edgeworth_delta(composition, eps, *, lattice: bool | None = None, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """Edgeworth-corrected δ(ε) = P[L_P > ε] − e^ε P[L_Q > ε] for a discrete Gaussian composition.

    L_P = ρ + V, L_Q = −ρ + V with V = Σ w_k X_k symmetric, using the exact cumulants κ₂, κ₄ of
    the discrete Gaussians (:func:`loss_cumulants`).  Two variants:

    * ``lattice=False`` — continuous one-term Edgeworth tail T(x) = Φ̄(z) + (γ₂/24)φ(z)(z³ − 3z)
      for *both* tails: δ ≈ T(ε − ρ) − e^ε T(ε + ρ).  Error O(m^{-3/2}) for non-lattice /
      fine-lattice V plus a lattice term of relative order (h z/√κ₂)²/12, h the lattice span.
    * ``lattice=True`` — local (lattice) Edgeworth expansion of the pmf of V on hZ,
      p(v) = (h/√κ₂) φ(z)(1 + γ₂/24·He₄(z)) (Petrov's local expansion), summed in the
      hockey-stick form δ = Σ_{ρ+v>ε} p(v)(1 − e^{ε−ρ−v}), which is the two-tail formula under
      the law of L_Q that the exact pair satisfies (Q(ℓ) = e^{−ℓ}P(ℓ)).  This removes the lattice
      error entirely and is the right choice for coarse lattices (few distinct weights, small
      √κ₂/h); its cost is O(√κ₂/h) terms.
    * ``lattice=None`` (default) — lattice sum if √κ₂/h ≤ :data:`LATTICE_AUTO_MAX`, else continuous.

    This is an approximation, not a certified bound.  The result is clamped at 0 (a truncated
    expansion can dip below 0 far in the tail).

    Args:
        composition: a ``Composition``, a mapping ``{DiscreteGaussian: m}`` or an iterable of
            ``DiscreteGaussian``.
        eps: ε, finite real.
        lattice: see above.
        dps: decimal digits.

    Returns:
        the surrogate δ as ``mpmath.mpf``.
    """
    dps = _check_dps(dps)
    with mpmath.workdps(dps + _GUARD):
        to_mpf(eps, "eps")
    rho, k2, k4 = loss_cumulants(composition, dps=dps + 2 * _GUARD)
    if lattice is None:
        h = loss_lattice_span(composition)
        with mpmath.workdps(dps + _GUARD):
            lattice = mpmath.sqrt(k2) / (mpmath.mpf(h.numerator) / h.denominator) <= LATTICE_AUTO_MAX
    if lattice:
        h = loss_lattice_span(composition)
        with mpmath.workdps(dps):
            ratio = mpmath.sqrt(k2) / (mpmath.mpf(h.numerator) / h.denominator)
        if ratio > 100 * LATTICE_AUTO_MAX:
            raise ValueError(
                f"edgeworth_delta: lattice sum would need ~{int(20 * ratio)} terms (sqrt(kappa2)/h = "
                f"{mpmath.nstr(ratio, 6)}); use lattice=False or None for fine lattices"
            )
        with mpmath.workdps(dps + 2 * _GUARD):
            d = _edgeworth_lattice_delta(
                mpmath.mpf(rho.numerator) / rho.denominator,
                k2,
                k4,
                mpmath.mpf(h.numerator) / h.denominator,
                to_mpf(eps, "eps"),
            )
    else:
        d = _hockey(
            _edgeworth_tail(k2, k4),
            lambda: mpmath.mpf(rho.numerator) / rho.denominator,
            lambda: to_mpf(eps, "eps"),
            dps,
        )
    with mpmath.workdps(dps + _GUARD):
        return +max(d, mpmath.mpf(0))


def edgeworth_tradeoff(composition, alpha, *, dps: int = DEFAULT_DPS) -> mpmath.mpf:
    """Edgeworth-corrected trade-off β(α) of the likelihood-ratio test of Q (null) vs P.

    The test rejects when L > τ: α = P[L_Q > τ] = T(τ + ρ) and β = P[L_P ≤ τ] = T(ρ − τ), with T
    the one-term Edgeworth tail of V (so T(−x) = 1 − T(x) exactly).  τ is found by bisection /
    Newton on T.  For κ₄ = 0 this is G_{2ρ/√κ₂}(α), i.e. exactly :func:`tradeoff` with μ = √(2ρ)
    when κ₂ = 2ρ.  Approximation, not a certified bound.

    Limitation: this uses the *continuous* expansion only.  For a coarse lattice (few distinct
    weights, √κ₂/h small) the exact curve is piecewise linear between lattice atoms and the
    surrogate carries a lattice error of relative order (h z/√κ₂)²; there it is not reliably
    better than plain GDP (e.g. ~10% relative at σ² = 1/2, m = 20).

    Args:
        composition: as for :func:`edgeworth_delta`.
        alpha: α ∈ [0, 1].
        dps: decimal digits.

    Returns:
        β as ``mpmath.mpf``, clamped to [0, 1].
    """
    dps = _check_dps(dps)
    with mpmath.workdps(dps + _GUARD):
        a = _unit(alpha, "alpha", closed=True)
        if a == 0:
            return mpmath.mpf(1)
        if a == 1:
            return mpmath.mpf(0)
    rho, k2, k4 = loss_cumulants(composition, dps=dps + _GUARD)
    with mpmath.workdps(dps + 2 * _GUARD):
        a = to_mpf(alpha, "alpha")
        tail = _edgeworth_tail(k2, k4)
        s = mpmath.sqrt(k2)
        r = mpmath.mpf(rho.numerator) / rho.denominator
        # f(x) = α − T(x) is increasing wherever the Edgeworth density is positive.
        g2 = k4 / (k2 * k2)

        def f(x):
            return a - tail(x)

        def fp(x):
            z = x / s
            return mpmath.npdf(z) * (1 + g2 / 24 * (z**4 - 6 * z**2 + 3)) / s

        z0 = -_ndtri(a)
        lo, hi = s * (z0 - 1), s * (z0 + 1)
        while f(lo) >= 0:
            lo -= 2 * s * (1 + abs(lo / s))
        while f(hi) <= 0:
            hi += 2 * s * (1 + abs(hi / s))
        x = solve_increasing(f, fp, lo, hi, xtol=s * mpmath.mpf(10) ** (-(dps + 5)))
        beta = tail(2 * r - x)
        return min(max(beta, mpmath.mpf(0)), mpmath.mpf(1))
