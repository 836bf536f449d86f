"""Independent high-precision references written for the tests (no code shared with accountant/).

* ``dg_pmf``: the discrete Gaussian pmf by direct summation.
* ``lattice_pmf``: the exact law of Y = Σ b_k X_k by explicit convolution.
* ``delta_direct``: δ(ε) = Σ_o max(0, P(o) − e^ε Q(o)) by enumerating *joint outcomes* of a
  small composition (does not use the privacy-loss/lattice reduction at all).
"""

from __future__ import annotations

import bisect
import functools
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
    """Law of Y = Σ_k b_k X_k, groups = [(σ², b, multiplicity)], by explicit convolution (a new dict each
    call; the convolution of the same groups is computed once per process)."""
    return dict(_lattice_pmf(tuple((Fraction(s2), int(b), int(m)) for s2, b, m in groups)))


@functools.lru_cache(maxsize=16)
def _lattice_pmf(groups: tuple[tuple[Fraction, int, int], ...]) -> dict[int, mpmath.mpf]:
    with mpmath.workdps(DPS):
        dist = {0: mpmath.mpf(1)}
        cutoff = mpmath.mpf(10) ** (-DPS - 20)  # (once: per term it was half of the oracle's time)
        for s2, b, m in groups:
            base = dg_pmf(s2)
            for _ in range(m):
                new: dict[int, mpmath.mpf] = {}
                for y, p in dist.items():
                    for x, q in base.items():
                        t = p * q
                        if t < cutoff:
                            continue
                        new[y + b * x] = new.get(y + b * x, 0) + t
                dist = new
        return dist


def tail(dist: dict[int, mpmath.mpf], k: int) -> mpmath.mpf:
    """P[Y ≥ k] of the law ``dist``: a suffix sum over its sorted support, accumulated from the far end
    (each partial sum is itself a tail, so each carries ≤ n roundings of 10^-DPS relative), computed once
    per law object and bisected for k."""
    ys, suffix = _suffix_sums(dist)
    return suffix[bisect.bisect_left(ys, k)]


_SUFFIX: dict[int, tuple[dict, list[int], list]] = {}


def _suffix_sums(dist: dict[int, mpmath.mpf]) -> tuple[list[int], list]:
    got = _SUFFIX.get(id(dist))
    if got is not None and got[0] is dist and len(got[1]) == len(dist):
        return got[1], got[2]
    with mpmath.workdps(DPS):
        ys = sorted(dist)
        suffix = [mpmath.mpf(0)] * (len(ys) + 1)
        for i in range(len(ys) - 1, -1, -1):
            suffix[i] = suffix[i + 1] + dist[ys[i]]
    if len(_SUFFIX) > 32:
        _SUFFIX.clear()
    _SUFFIX[id(dist)] = (dist, ys, suffix)  # (the law is kept alive, so its id is not reused)
    return ys, suffix


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
