"""Independent high-precision references written for the tests (no code shared with accountant/).

* ``dg_pmf``: the discrete Gaussian pmf by direct summation.
* ``lattice_pmf``: the exact law of Y = Σ b_k X_k by explicit convolution.
* ``delta_direct``: δ(ε) = Σ_o max(0, P(o) − e^ε Q(o)) by enumerating *joint outcomes* of a
  small composition (does not use the privacy-loss/lattice reduction at all).
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import mpmath

DPS = 60


def dg_pmf(sigma2: Fraction, center: int = 0, width: float = 40.0) -> dict[int, mpmath.mpf]:
    """pmf of N_Z(center, σ²) on |x − center| ≤ width·σ + 10 (truncated mass < 1e-300)."""
    with mpmath.workdps(DPS):
        s2 = mpmath.mpf(sigma2.numerator) / sigma2.denominator
        r = int(width * mpmath.sqrt(s2)) + 10
        xs = range(-r, r + 1)
        w = {x + center: mpmath.exp(-mpmath.mpf(x * x) / (2 * s2)) for x in xs}
        z = mpmath.fsum(w.values())
        return {x: v / z for x, v in w.items()}


def lattice_pmf(groups: list[tuple[Fraction, int, int]]) -> dict[int, mpmath.mpf]:
    """Law of Y = Σ_k b_k X_k, groups = [(σ², b, multiplicity)], by explicit convolution."""
    with mpmath.workdps(DPS):
        dist = {0: mpmath.mpf(1)}
        for s2, b, m in groups:
            base = dg_pmf(s2)
            for _ in range(m):
                new: dict[int, mpmath.mpf] = {}
                for y, p in dist.items():
                    for x, q in base.items():
                        t = p * q
                        if t < mpmath.mpf(10) ** (-DPS - 20):
                            continue
                        new[y + b * x] = new.get(y + b * x, 0) + t
                dist = new
        return dist


def tail(dist: dict[int, mpmath.mpf], k: int) -> mpmath.mpf:
    with mpmath.workdps(DPS):
        return mpmath.fsum(p for y, p in dist.items() if y >= k)


def delta_direct(mechs: list[tuple[Fraction, int]], eps) -> mpmath.mpf:
    """δ(ε) of the product of N_Z(0,σ²) vs N_Z(s,σ²) pairs, by enumerating joint outcomes."""
    with mpmath.workdps(DPS):
        e = mpmath.exp(mpmath.mpf(eps))
        ps = [dg_pmf(s2, 0, width=14) for s2, s in mechs]
        qs = [dg_pmf(s2, s, width=14) for s2, s in mechs]
        support = [sorted(set(p) | set(q)) for p, q in zip(ps, qs)]
        total = mpmath.mpf(0)
        for xs in itertools.product(*support):
            p = mpmath.mpf(1)
            q = mpmath.mpf(1)
            for x, pk, qk in zip(xs, ps, qs):
                p *= pk.get(x, 0)
                q *= qk.get(x, 0)
            d = p - e * q
            if d > 0:
                total += d
        return total
