"""The error budget: one place where truncation, aliasing, pruning and rounding are bounded.

Setting (see :mod:`accountant.quadrature`): Y = Σ_k b_k X_k on Z, G(s) = E[e^{sY}], and for an
integer k ≥ 1 and a tilt λ > 0 the N-point trapezoid sum on the circle Re s = λ,

    T = (1/N) Σ_{j=0}^{N−1} G(λ + iζ_j) e^{−(λ+iζ_j)k} / (1 − e^{−(λ+iζ_j)}),   ζ_j = 2πj/N,

equals  Σ_{y≥k} e^{−λy} Σ_{r∈Z} e^{λ(y+rN)} p(y + rN)  exactly (absolute convergence), so

    0 ≤ T − P[Y ≥ k] = Σ_{r≥1} e^{λrN} P[Y ≥ k + rN]  +  Σ_{r≥1} e^{−λrN} P[Y ≥ k − rN]
                     ≤ Σ_{r≥1} exp(λrN − (k+rN)²/(2v))  +  e^{−λN}/(1 − e^{−λN})      (aliasing)

using the sub-Gaussian tail P[Y ≥ u] ≤ exp(−u²/(2v)), v = Σ m_k b_k² σ_k² (the discrete
Gaussian N_Z(0,σ²) is σ²-sub-Gaussian, Canonne–Kamath–Steinke arXiv 2004.00010).  The aliasing
error is one-sided: the trapezoid sum over-estimates.

Pruning: every pruned node has |G(λ+iζ)| ≤ G(λ)·threshold (one factor is below threshold and
all tilted factors have modulus ≤ 1) and |1 − e^{−λ−iζ}| ≥ 1 − e^{−λ}, hence the pruned part of
T is at most  G(λ) e^{−λk} · threshold / (1 − e^{−λ}).

Rounding and theta-series truncation are carried by Arb's ball arithmetic.
"""

from __future__ import annotations

import math

from flint import arb

__all__ = ["AliasingBound", "log_aliasing_bound_float", "pruning_factor"]


class AliasingBound:
    """Rigorous upper bound on T − P[Y ≥ k] (≥ 0) for the tilted trapezoid rule, for many
    integer thresholds k ≥ 1 at one tilt λ > 0 (an exact Arb value), node count N and
    sub-Gaussian variance proxy v (an Arb value); the k-independent parts are computed once.

    ``AliasingBound(lam, N, v)(k)`` is an ``arb`` whose upper end is the bound (``+inf`` when
    the series bound fails).  r ≥ 1 terms: f(r) = λrN − (k + rN)²/(2v), consecutive ratio
    ≤ e^{−g} with g = N(2k + 3N)/(2v) − λN; r ≤ −1 terms: e^{−λN}/(1 − e^{−λN}).
    """

    def __init__(self, lam: arb, n_nodes: int, v: arb):
        N = arb(n_nodes)
        self._N, self._two_v, self._lam_n = N, 2 * v, lam * N
        self._g0 = N * (3 * N) / (2 * v) - lam * N  # g = g0 + k·N/v
        self._gk = N / v
        self._lower_terms = (-lam * N).exp() / (1 - (-lam * N).exp())

    def __call__(self, k: int) -> arb:
        kk = arb(k)
        g = self._g0 + self._gk * kk
        if not (g > 0):
            return arb("inf")
        f1 = self._lam_n - (kk + self._N) ** 2 / self._two_v
        return f1.exp() / (1 - (-g).exp()) + self._lower_terms


def log_aliasing_bound_float(k: float, lam: float, n_nodes: float, v: float) -> float:
    """Float version of :class:`AliasingBound` (natural log of the bound), for planning only."""
    N = float(n_nodes)
    g = N * (2 * k + 3 * N) / (2 * v) - lam * N
    if g <= 0:
        return math.inf
    f1 = lam * N - (k + N) ** 2 / (2 * v) - math.log(-math.expm1(-g))
    f2 = -lam * N - math.log(-math.expm1(-lam * N))
    hi = max(f1, f2)
    return hi + math.log(math.exp(f1 - hi) + math.exp(f2 - hi))


def pruning_factor(lam: arb, g_lambda: arb, threshold: arb) -> arb:
    """G(λ)·threshold/(1 − e^{−λ}): times e^{−λk}, a rigorous upper bound on the total modulus
    of the pruned nodes' contributions to T at threshold k (see the module docstring)."""
    return g_lambda * threshold / (1 - (-lam).exp())
