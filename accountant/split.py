"""Splitting a lattice sum along common factors of its weights (exact decomposition).

If the weights of a group of components share a large common factor d_A, write
Y = d_A·U + d_B·V with U = Σ_{g∈A} (b_g/d_A) X_g and V = Σ_{g∉A} (b_g/d_B) X_g
(d_B = gcd of the other weights).  U and V are independent integer lattice sums on much
coarser lattices than Y, and exactly

    P[Y ≥ k] = Σ_u P[U = u] · P[V ≥ ⌈(k − d_A u)/d_B⌉].

Pairs of short spine paths (e.g. [M_6, M_6] of the DHC, arXiv 2606.29835) have weights like
{194692 = 4·48673, 48673, 3796 = 4·949, 949}: the direct trapezoid rule needs N ≈ 6·10⁶ nodes
with thousands of peak clusters, while U has standard deviation ≈ 8 and V needs ~10³ nodes.
The sum over u is truncated at |u| ≤ R with the sub-Gaussian bound P[|U| > R] ≤
2 exp(−R²/(2 v_U)), and every term is an interval, so the result stays certified.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from fractions import Fraction
from typing import Sequence

import mpmath

from .certified import _CTX, Certified, _mpf, down, up

__all__ = ["find_split", "SplitEngine"]

#: a split is used only when the direct problem is at least this many times larger (in N);
#: measured on the DHC pairs: gains ~18 were slower than the direct route, ~360 much faster.
MIN_GAIN = 100
#: largest outer enumeration (number of U values) considered worthwhile.
MAX_OUTER = 1500


def _sd_proxy(groups) -> float:
    return math.sqrt(sum(g.mult * g.b * g.b * float(g.sigma2) for g in groups))


def find_split(groups):
    """Return (A, B, d_A, d_B) for the most profitable split, or ``None``."""
    if len(groups) < 2:
        return None
    direct = _sd_proxy(groups)
    best = None
    for anchor in groups:
        A = [g for g in groups if math.gcd(g.b, anchor.b) * 64 >= anchor.b]
        B = [g for g in groups if g not in A]
        if not A or not B:
            continue
        dA = math.gcd(*(g.b for g in A))
        dB = math.gcd(*(g.b for g in B))
        sdU = _sd_proxy(A) / dA
        sdV = _sd_proxy(B) / dB
        outer = 2 * 16 * sdU + 1
        if outer > MAX_OUTER:
            continue
        cost = outer * 4 + sdV
        if direct >= MIN_GAIN * cost and (best is None or cost < best[0]):
            best = (cost, A, B, dA, dB)
    if best is None:
        return None
    return best[1], best[2], best[3], best[4]


@dataclass
class SplitEngine:
    """Tails of Y = d_A·U + d_B·V from the tails of U and V (engines with ``tails``)."""

    u_engine: object
    v_engine: object
    d_a: int
    d_b: int
    v_u: Fraction  # sub-Gaussian variance proxy of U

    @property
    def var(self) -> float:
        return self.d_a**2 * self.u_engine.var + self.d_b**2 * self.v_engine.var

    @property
    def v_sg(self) -> Fraction:
        return self.d_a**2 * self.v_u + self.d_b**2 * self.v_engine.v_sg

    @property
    def stats(self):
        return self.v_engine.stats

    def _log_p_est(self, k: int) -> float:
        from scipy.special import log_ndtr

        return float(log_ndtr(-(k - 0.5) / math.sqrt(self.var)))

    def tails(self, ks: Sequence[int], abs_targets: Sequence) -> list[Certified]:
        ks = [int(k) for k in ks]
        tmin = min(_mpf(t) for t in abs_targets)
        vU = float(self.v_u)
        # truncation radius: 2 exp(-R²/(2 v_U)) ≤ tmin / 4
        R = int(math.ceil(math.sqrt(2 * vU * max(1.0, float(mpmath.log(8 / tmin)))))) + 1
        us = list(range(-R, R + 2))
        n_terms = len(us)
        tu = self.u_engine.tails(us, [tmin / (8 * n_terms)] * len(us))
        pu = []
        for a, b in zip(tu[:-1], tu[1:]):
            lo = max(down(a.lower - b.upper), _mpf(0))
            hi = max(up(a.upper - b.lower), _mpf(0))
            pu.append((lo, hi))
        # inner thresholds far outside V's effective support get closed-form sub-Gaussian
        # enclosures instead of quadrature: P[V >= t] <= exp(-t²/2v) (t > 0) and
        # P[V >= t] >= 1 - exp(-(1-t)²/2v) (t <= 0); beyond ±T these are below the budget.
        v_v = self.v_engine.v_sg
        v_vf = float(v_v)
        T = int(math.ceil(math.sqrt(2 * v_vf * max(1.0, float(mpmath.log(8 * n_terms / tmin)))))) + 1
        # each inner tail enters multiplied by P[U = u] ≤ phi: its error target is relaxed by
        # that weight (the final sums below use the certified intervals, so this only steers)
        cap = _mpf("1e-3")
        needed: dict[int, mpmath.mpf] = {}
        for k, tau in zip(ks, abs_targets):
            tau = _mpf(tau)
            for u, (plo, phi) in zip(us[:-1], pu):
                t = -((-(k - self.d_a * u)) // self.d_b)  # ceil division
                if -T <= t <= T:
                    tgt = min(cap, tau / (8 * n_terms * max(phi, _mpf("1e-300"))))
                    if tgt < needed.get(t, cap * 2):
                        needed[t] = tgt
        tks = sorted(needed)
        tv = self.v_engine.tails(tks, [needed[t] for t in tks]) if tks else []
        inner = dict(zip(tks, tv))
        vv = _mpf(v_v.numerator) / v_v.denominator

        def inner_tail(t: int) -> Certified:
            c = inner.get(t)
            if c is not None:
                return c
            if t > T:
                return Certified(_mpf(0), up(_CTX.exp(-_mpf(t) ** 2 / (2 * vv))))
            return Certified(down(1 - up(_CTX.exp(-_mpf(1 - t) ** 2 / (2 * vv)))), _mpf(1))

        trunc = up(2 * _CTX.exp(-_mpf(R) ** 2 / (2 * _mpf(self.v_u.numerator) / self.v_u.denominator)))
        out = []
        for k in ks:
            lo = _mpf(0)
            hi = _mpf(0)
            for u, (plo, phi) in zip(us[:-1], pu):
                t = -((-(k - self.d_a * u)) // self.d_b)
                c = inner_tail(t)
                lo += down(plo * max(c.lower, 0))
                hi += up(phi * c.upper)
            lo = down(lo)
            hi = up(hi + trunc)
            out.append(Certified(max(lo, 0), min(hi, 1)))
        return out
