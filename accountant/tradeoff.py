"""The exact trade-off function β = T(P, Q)(α) at one α, certified from certified lattice tails.

Setting (:mod:`accountant.composition`): Y = Σ_k b_k X_k is an integer lattice sum, symmetric
about 0, and the likelihood-ratio tests of P against Q are "reject when Y ≥ j".  Their errors
are the vertices (α_j, β_j) = (T_j, T_{2C+1−j}) with T_j = P[Y ≥ j]; between consecutive
vertices the Neyman–Pearson curve is linear (randomised tests at the atom Y = j):

    β(α) = (1 − t)·β_{k+1} + t·β_k,   t = (α − α_{k+1})/(α_k − α_{k+1}),   α_{k+1} ≤ α ≤ α_k

(Dong, Roth & Su, arXiv 1905.02383, f-DP; the lattice vertices of Su, Su & Wang, arXiv
2606.29835).  Soundness needs the bracket α_{k+1} ≤ α ≤ α_k to be *certified*, and precision at
extreme α needs every difference with relative precision: near α = 0 the α-side tails are tiny,
near α = 1 their complements 1 − T_j = T_{1−j} are.  Both are supplied by ``small_tail(m)``,
a certified P[Y ≥ m] for m ≥ 1 with the caller's relative tolerance, so every quantity below is
a sum of non-negative terms known to relative precision:

* α ≤ 1/2: u = α − α_{k+1} and w = α_k − α from the tails T_j (j ≥ 1);
* α > 1/2: with q = 1 − α, u = T_{−k} − q and w = q − T_{1−k} from the complements.

Then t = u/(u + w), 1 − t = w/(u + w), and β is increasing in both β's and decreasing in t, so
its interval ends come from the matching ends of u, w and the β_j.

When α lies inside the enclosure of some α_v (α given to more digits than the tails carry, e.g.
a vertex's value printed to 40 digits; or vertices that coincide to the tails' precision), no
adjacent bracket can be certified, only α_{k_hi} < α ≤ α_{k_lo} with k_lo < v < k_hi.  Then β
comes from convexity: with the chord slope S = (β_{k_hi} − β_v)/(α_v − α_{k_hi}) ≥ 0,

    β_v + min(α_v − α, 0)·S  ≤  β(α)  ≤  β_v + max(α_v − α, 0)·S

(below the chord on [α_{k_hi}, α_v], above its extension past α_v), whose width is that of β_v
plus |α_v − α|·S, |α_v − α| ≤ the width of α_v's enclosure: as precise as a separated bracket.
Only when that fails (no positive lower bound of α_v − α_{k_hi}) is the monotone bound
β(α) ∈ [β_{k_lo}, β_{k_hi}] returned (still rigorous, wider, and flagged by its tolerance).
"""

from __future__ import annotations

from collections.abc import Callable
from fractions import Fraction

import mpmath
from scipy.special import log_ndtr

from .certified import Certified, _mpf, down, up

__all__ = ["normal_quantile_guess", "tradeoff_at"]

#: the bracket search doubles its step at most this many times (|k| ≤ 2^64 · sd).
_MAX_DOUBLINGS = 64
#: thresholds per engine call of the bracket search are ``SEARCH_POINTS + 1`` (a grid of
#: ``SEARCH_POINTS // 2`` steps either side of the centre); more per call was measured slower on the
#: coarse sandwich, whose cost grows with thresholds: 256 points 12.9 s vs 16 points 4.2 s per β.
SEARCH_POINTS = 16


def _between_tails(m1: int, m2: int) -> list[int]:
    """The small-side thresholds (all ≥ 1) that give P[m1 ≤ Y < m2] = T_{m1} − T_{m2}, m1 < m2
    (T_m = 1 − T_{1−m} for m ≤ 0 by the symmetry of Y)."""
    return [m for m in (m1, m2, 1 - m1, 1 - m2) if m >= 1]


def normal_quantile_guess(alpha: Fraction) -> float:
    """z with Φ(−z) ≈ α (z ≥ 0 for α ≤ 1/2), from log α in floats: any α in (0, 1),
    however close to 0 or 1 (planning only)."""
    small = alpha if alpha <= Fraction(1, 2) else 1 - alpha
    la = float(mpmath.log(mpmath.mpf(small.numerator) / small.denominator))
    lo, hi = 0.0, 1.0
    while float(log_ndtr(-hi)) > la:
        hi *= 2
    for _ in range(80):
        mid = (lo + hi) / 2
        if float(log_ndtr(-mid)) > la:
            lo = mid
        else:
            hi = mid
    return hi if alpha <= Fraction(1, 2) else -hi


class _Tails:
    """The tails of Y one β(α) needs, fetched in batches of thresholds and cached: T_m = P[Y ≥ m]
    from the small side (m ≥ 1; T_m = 1 − T_{1−m} otherwise), α's order against the vertices
    α_j = T_j, the β vertices β_j = T_{2C+1−j} and the masses P[m1 ≤ Y < m2]."""

    def __init__(self, alpha: Fraction, two_c: int, small_tail: Callable[[list[int]], list[Certified]]):
        self.low_side = alpha <= Fraction(1, 2)
        q = alpha if self.low_side else 1 - alpha  # the small one of α, 1 − α
        self.q_lo, self.q_hi = down(_mpf(q.numerator) / q.denominator), up(_mpf(q.numerator) / q.denominator)
        self.two_c = two_c
        self._small_tail = small_tail
        self._cache: dict[int, Certified] = {}

    def s(self, m: int) -> Certified:
        """P[Y ≥ m], m ≥ 1."""
        if m not in self._cache:
            self._cache[m] = self._small_tail([m])[0]
        return self._cache[m]

    def prefetch(self, ms) -> None:
        need = sorted({m for m in ms if m >= 1 and m not in self._cache})
        if need:
            self._cache.update(zip(need, self._small_tail(need)))

    def fetch(self, js) -> None:
        """The tails :meth:`order` needs at the vertices ``js``, in one batch."""
        self.prefetch([j for j in js if j >= 1] if self.low_side else [1 - j for j in js if j <= 0])

    def order(self, j: int) -> int:
        """+1 if α_j = T_j ≥ α certainly, −1 if T_j < α certainly, 0 if undecided."""
        if self.low_side:
            if j <= 0:
                return 1  # T_j ≥ T_0 > 1/2 ≥ α
            t = self.s(j)
            return 1 if t.lower >= self.q_hi else (-1 if t.upper < self.q_lo else 0)
        if j >= 1:
            return -1  # T_j ≤ T_1 < 1/2 < α
        c = self.s(1 - j)  # 1 − T_j
        return 1 if c.upper <= self.q_lo else (-1 if c.lower > self.q_hi else 0)

    def alpha_error(self, j: int):
        """The width of α_j's enclosure."""
        return (self.s(j) if self.low_side else self.s(1 - j)).error

    def beta_vertex(self, j: int) -> tuple:
        """Enclosure of β_j = T_{2C+1−j}."""
        m = self.two_c + 1 - j
        if m >= 1:
            t = self.s(m)
            return t.lower, t.upper
        c = self.s(1 - m)
        return down(1 - c.upper), up(1 - c.lower)

    def between(self, m1: int, m2: int) -> tuple:
        """Enclosure of P[m1 ≤ Y < m2] = T_{m1} − T_{m2} (m1 < m2), clipped at 0."""
        s = self.s
        if m1 >= 1:
            a1, a2 = s(m1), s(m2)
            lo, hi = down(a1.lower - a2.upper), up(a1.upper - a2.lower)
        elif m2 <= 0:  # (1 − T_{1−m1}) − (1 − T_{1−m2})
            c1, c2 = s(1 - m1), s(1 - m2)
            lo, hi = down(c2.lower - c1.upper), up(c2.upper - c1.lower)
        else:  # 1 − T_{1−m1} − T_{m2}
            c1, a2 = s(1 - m1), s(m2)
            lo, hi = down(down(1 - c1.upper) - a2.upper), up(up(1 - c1.lower) - a2.lower)
        return max(lo, _mpf(0)), hi


def _bracket_vertices(tails: _Tails, alpha: Fraction, sd: float) -> tuple[int, int, list[int]]:
    """``(k_lo, k_hi, pts)``: k_lo the largest j with order(j) = +1, k_hi the smallest with
    order(j) = −1 (order is non-increasing in j), and the last grid searched.  Searched in
    batches (one engine call per batch of thresholds): a grid around the normal guess,
    moved/widened until it brackets, then refined."""
    centre = round(normal_quantile_guess(alpha) * sd)
    half_n = SEARCH_POINTS // 2
    step = max(1, int(sd * 2 // SEARCH_POINTS))
    for _ in range(_MAX_DOUBLINGS):
        pts = [centre + i * step for i in range(-half_n, half_n + 1)]
        tails.fetch(pts)
        ords = [tails.order(j) for j in pts]
        if ords[0] != 1:
            centre, step = pts[0] - half_n // 2 * step, 2 * step
        elif ords[-1] != -1:
            centre, step = pts[-1] + half_n // 2 * step, 2 * step
        else:
            break
    else:
        raise ArithmeticError("tradeoff_at: bracket search did not terminate")
    a = max(j for j, o in zip(pts, ords) if o == 1)
    b = min(j for j, o in zip(pts, ords) if o == -1 and j > a)
    while b - a > 1:
        n = 2 * half_n
        if b - a <= n:
            tails.fetch(range(a, b + 1))
            pts = list(range(a, b + 1))
        else:
            h = (b - a) / n
            pts = sorted({a + int(i * h) for i in range(n + 1)} | {b})
            tails.fetch(pts)
        ords = [tails.order(j) for j in pts]
        a2 = max(j for j, o in zip(pts, ords) if o == 1)
        b2 = min(j for j, o in zip(pts, ords) if o == -1 and j > a2)
        if b - a <= n or 4 * (b2 - a2) > b - a:  # done, or undecided inside (coarse tails:
            a, b = a2, b2  # the bracket no longer shrinks by the grid's factor)
            break
        a, b = a2, b2
    return a, b, pts


def tradeoff_at(
    alpha: Fraction, two_c: int, sd: float, small_tail: Callable[[list[int]], list[Certified]]
) -> tuple[Certified, bool]:
    """Certified β(α) for 0 < α < 1 (see the module docstring).

    Args:
        alpha: the type-I error, exact.
        two_c: 2C of the lattice (β_j = T_{2C+1−j}).
        sd: standard deviation of Y (planning of the search only).
        small_tail: certified P[Y ≥ m] for a list of thresholds m ≥ 1 (relative precision).

    Returns ``(β, bracketed)``: ``bracketed`` is False when neither an adjacent bracket nor the
    convexity bound at an undecided vertex could be certified (the wider monotone bound was used).
    """
    if not (0 < alpha < 1):
        raise ValueError(f"tradeoff_at: alpha must be in (0, 1), got {alpha}")
    tails = _Tails(alpha, two_c, small_tail)
    k_lo, k_hi, pts = _bracket_vertices(tails, alpha, sd)
    # one last batch: the β vertices β_j = T_{2C+1−j} from the small side, and the α tails of
    # the final formula (T_{k+1}, T_k, or their complements T_{−k}, T_{1−k}); when α is
    # undecided against a vertex v, the tails of α_v, α_v − α_{k_hi} and β_{k_hi} − β_v instead
    alpha_side = [k_lo + 1, k_lo, 1 - k_lo] if tails.low_side else [-k_lo, 1 - k_lo]
    # the vertex v of the final formula when α is undecided against vertices between k_lo and
    # k_hi: one whose α_v was fetched and straddles α, with the narrowest enclosure
    undecided = [j for j in pts if k_lo < j < k_hi and tails.order(j) == 0]
    vertex = min(undecided, key=tails.alpha_error) if undecided else None
    if vertex is not None:
        v = vertex
        alpha_side = [v, 1 - v, *_between_tails(v, k_hi), *_between_tails(two_c + 1 - k_hi, two_c + 1 - v)]
    js = (k_lo, k_hi) if vertex is None else (k_lo, k_hi, vertex)
    tails.prefetch([two_c + 1 - j for j in js] + [j - two_c for j in js] + alpha_side)
    bl = tails.beta_vertex(k_lo)  # β at the vertex with the larger α (smaller β)
    bh = tails.beta_vertex(k_hi)
    if vertex is not None:
        got = _convex_bound(tails, vertex, k_hi, bl, bh, alpha)
        if got is not None:
            return got, True
    if k_hi != k_lo + 1:
        return Certified(max(bl[0], _mpf(0)), min(bh[1], _mpf(1))), False
    return _interpolated(tails, k_lo, bl, bh, alpha)


def _convex_bound(tails: _Tails, v: int, k_hi: int, bl: tuple, bh: tuple, alpha: Fraction) -> Certified | None:
    """β(α) when α_{k_hi} < α ≤ α_{k_lo} is certified but not α's side of α_v for a vertex v in
    between (α lies in their enclosures; several v when vertices coincide, P[Y = j] = 0).

    β is convex: on [α_{k_hi}, α_v] it lies below the chord from vertex k_hi to vertex v, and
    for α ≥ α_v above that chord's extension, so with S = (β_{k_hi} − β_v)/(α_v − α_{k_hi}) ≥ 0,
    β_v + min(α_v − α, 0)·S ≤ β(α) ≤ β_v + max(α_v − α, 0)·S, as precise as if α had been
    separated from α_v (|α_v − α| is within α_v's enclosure).  None when α_v − α_{k_hi} is not
    certainly positive."""
    s, q_lo, q_hi, two_c = tails.s, tails.q_lo, tails.q_hi, tails.two_c
    if tails.low_side:  # α_v − α = T_v − q
        t = s(v)
        d_lo, d_hi = down(t.lower - q_hi), up(t.upper - q_lo)
    else:  # α_v − α = (1 − T_{1−v}) − (1 − q)
        c = s(1 - v)
        d_lo, d_hi = down(q_lo - c.upper), up(q_hi - c.lower)
    den = tails.between(v, k_hi)[0]  # α_v − α_{k_hi}
    if not den > 0:
        return None
    bv_lo, bv_hi = tails.beta_vertex(v)
    slope_hi = up(tails.between(two_c + 1 - k_hi, two_c + 1 - v)[1] / den)  # β_{k_hi} − β_v over it
    lo = down(bv_lo + down(min(d_lo, _mpf(0)) * slope_hi))
    hi = up(bv_hi + up(max(d_hi, _mpf(0)) * slope_hi))
    lo, hi = max(lo, bl[0], _mpf(0)), min(hi, bh[1], _mpf(1))  # monotone bound too
    if not (lo <= hi):
        raise ArithmeticError(f"tradeoff_at: empty enclosure [{lo}, {hi}] at alpha = {alpha}")
    return Certified(lo, hi)


def _interpolated(tails: _Tails, k: int, bl: tuple, bh: tuple, alpha: Fraction) -> tuple[Certified, bool]:
    """β(α) on the segment between the adjacent vertices k + 1 (α_{k+1} < α) and k (α ≤ α_k):
    β = (1 − t)β_{k+1} + tβ_k with t = (α − α_{k+1})/(α_k − α_{k+1}); the monotone bound
    (bracketed False) when t cannot be enclosed."""
    s, q_lo, q_hi = tails.s, tails.q_lo, tails.q_hi
    bl_lo, bl_hi = bl
    bh_lo, bh_hi = bh
    zero = _mpf(0)
    if tails.low_side:
        a1 = s(k + 1)  # α_{k+1} < α
        u_lo, u_hi = down(q_lo - a1.upper), up(q_hi - a1.lower)
        if k >= 1:
            a0 = s(k)
            w_lo, w_hi = down(a0.lower - q_hi), up(a0.upper - q_lo)
        else:  # α_k = 1 − T_{1−k}
            c0 = s(1 - k)
            w_lo, w_hi = down(down(1 - c0.upper) - q_hi), up(up(1 - c0.lower) - q_lo)
    else:
        c1 = s(-k)  # 1 − α_{k+1} (k + 1 ≤ 0 here)
        c0 = s(1 - k)  # 1 − α_k
        u_lo, u_hi = down(c1.lower - q_hi), up(c1.upper - q_lo)
        w_lo, w_hi = down(q_lo - c0.upper), up(q_hi - c0.lower)
    u_lo, w_lo = max(u_lo, zero), max(w_lo, zero)
    # t = u/(u+w) ∈ [t_lo, t_hi], 1 − t = w/(u+w) ∈ [1 − t_hi, 1 − t_lo]
    d1, d2 = up(u_hi + w_lo), down(u_lo + w_hi)
    if not (d1 > 0 and d2 > 0):
        return Certified(max(bl_lo, zero), min(bh_hi, _mpf(1))), False
    t_hi, omt_lo = min(up(u_hi / d1), _mpf(1)), down(w_lo / d1)
    t_lo, omt_hi = down(u_lo / d2), min(up(w_hi / d2), _mpf(1))
    # β = (1 − t)β_{k+1} + tβ_k is increasing in both vertex values; in t it is linear, so
    # its extremes over [t_lo, t_hi] are at the ends
    lo = min(down(down(omt_lo * bh_lo) + down(t_hi * bl_lo)), down(down(down(1 - t_lo) * bh_lo) + down(t_lo * bl_lo)))
    hi = max(up(up(omt_hi * bh_hi) + up(t_lo * bl_hi)), up(up(up(1 - t_hi) * bh_hi) + up(t_hi * bl_hi)))
    lo, hi = max(lo, max(bl_lo, zero)), min(hi, min(bh_hi, _mpf(1)))  # monotone bound too
    if not (lo <= hi):
        raise ArithmeticError(f"tradeoff_at: empty enclosure [{lo}, {hi}] at alpha = {alpha}")
    return Certified(lo, hi), True
