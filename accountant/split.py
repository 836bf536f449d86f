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
import numpy as np
from flint import arb, ctx, fmpq

from .certified import Certified, _mpf, arb_to_certified, ball, mpf_to_arb

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
    for A, B, dA, dB, outer, sd_b in _family_splits(groups):
        cost = outer * 4 + sd_b / dB
        if direct >= MIN_GAIN * cost and (best is None or cost < best[0]):
            best = (cost, A, B, dA, dB)
    if best is None:
        return None
    return best[1], best[2], best[3], best[4]


#: deepest nesting of splits tried by :func:`find_nested`.
MAX_DEPTH = 3
#: most distinct components in a pmf-table leaf (each costs one long polynomial product; a
#: whole composition is never tabulated — the trapezoid is faster there).
MAX_PMF_GROUPS = 6


def _family_splits(groups):
    """Candidate (A, B, d_A, d_B, outer, sd_B) partitions: A = a family sharing a large factor
    (sd_B = :func:`_sd_proxy` of B)."""
    seen = set()
    var = [g.mult * g.b * g.b * float(g.sigma2) for g in groups]  # _sd_proxy terms, once
    for anchor in groups:
        inA = tuple(math.gcd(g.b, anchor.b) * 64 >= anchor.b for g in groups)
        if all(inA) or inA in seen:
            continue
        seen.add(inA)
        dA = math.gcd(*(g.b for g, a in zip(groups, inA) if a))
        var_a = sum(v for v, a in zip(var, inA) if a)
        outer = 2 * 16 * math.sqrt(var_a) / dA + 1
        if outer <= MAX_OUTER:
            A = [g for g, a in zip(groups, inA) if a]
            B = [g for g, a in zip(groups, inA) if not a]
            sd_b = math.sqrt(sum(v for v, a in zip(var, inA) if not a))
            yield A, B, dA, math.gcd(*(g.b for g in B)), outer, sd_b


def find_nested(groups, depth: int = 0, max_span: float | None = None, budget: float = math.inf):
    """A chain of exact splits ending in a small-span pmf table (:mod:`accountant.pmf`).

    Returns ``(cost, plan)`` with ``plan`` either ``("pmf",)`` or ``(A, B, d_A, d_B, subplan)``
    where ``subplan`` plans B/d_B; ``cost`` is the product of the outer enumeration sizes
    (the factor by which thresholds multiply down the chain) — or ``None`` if no chain of
    cost ≤ ``budget`` exists.  The top level is always a split (a whole composition is left to
    the trapezoid).  ``max_span`` (default :data:`accountant.pmf.MAX_PMF_SPAN`) bounds the leaf.
    """
    from .pmf import MAX_PMF_SPAN, pmf_span
    from .quadrature import LatticeGroup

    if max_span is None:
        max_span = MAX_PMF_SPAN
    if depth > 0 and len(groups) <= MAX_PMF_GROUPS and pmf_span(groups) <= max_span:
        return 1.0, ("pmf",)
    if depth >= MAX_DEPTH:
        return None
    best = None
    for A, B, dA, dB, outer, _ in _family_splits(groups):
        limit = budget if best is None else min(budget, best[0])
        if outer > limit:
            continue
        Bn = tuple(LatticeGroup(g.sigma2, g.b // dB, g.mult) for g in B)
        sub = find_nested(Bn, depth + 1, max_span, limit / outer)
        if sub is None:
            continue
        cost = outer * sub[0]
        if best is None or cost < best[0]:
            best = (cost, (A, B, dA, dB, sub[1]))
    return best


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

    def tails(self, ks: Sequence[int], abs_targets: Sequence) -> list[Certified]:
        return [arb_to_certified(b, clip01=True) for b in self.tails_ball(ks, abs_targets)]

    def tails_ball(self, ks: Sequence[int], abs_targets: Sequence) -> list[arb]:
        """Arb balls enclosing P[Y ≥ k] (ball arithmetic: the enclosure is automatic).

        For each k only the u whose inner threshold t = ⌈(k − d_A u)/d_B⌉ lies in V's
        effective support [−T, T] get an inner tail; the u with t > T (t < −T) form one range
        each (t is monotone in u) whose mass Σ P[U = u] (prefix sums) is multiplied by one
        closed-form enclosure.  The sum over u is truncated per threshold at its own radius R_k
        (from its own target), so loosely-targeted thresholds — e.g. those an outer split asks
        for with a tiny weight — cost fewer terms.
        """
        ks = [int(k) for k in ks]
        taus = [float(t) for t in abs_targets]
        tmin = _mpf(min(abs_targets, key=float))  # float keys pick the minimum ...
        if not float(tmin) > 0:  # ... unless targets underflow floats
            tmin = min(_mpf(t) for t in abs_targets)
        tminf = float(tmin)
        bits = max(192, int(-float(mpmath.log(tmin, 2))) + 96)
        vU = float(self.v_u)

        def radius(t: float) -> int:  # 2 exp(-R²/(2 v_U)) ≤ t / 4
            return int(math.ceil(math.sqrt(2 * vU * max(1.0, math.log(8 / max(t, 1e-300)))))) + 1

        R = int(math.ceil(math.sqrt(2 * vU * max(1.0, float(mpmath.log(8 / tmin)))))) + 1
        us = list(range(-R, R + 2))
        v_v = self.v_engine.v_sg
        v_vf = float(v_v)
        d_a, d_b = self.d_a, self.d_b

        def t_of(k: int, u: int) -> int:
            return -((d_a * u - k) // d_b)  # ⌈(k − d_a u)/d_b⌉

        old = ctx.prec
        ctx.prec = bits
        try:
            tu = tails_ball(self.u_engine, us, [tmin / (8 * len(us))] * len(us))
            pu = [a - b for a, b in zip(tu[:-1], tu[1:])]  # P[U = u] (ball), u = -R..R
            phis = [max(float(p.upper()), 1e-300) for p in pu]
            prefix = [arb(0)]  # prefix[i] = Σ_{u < us[i]} P[U = u]
            for p in pu:
                prefix.append(prefix[-1] + p)
            # per threshold: its radius R_k, term count, and the u-window with |t| ≤ T; the
            # inner thresholds t(k, u) of a window and their targets are numpy vectors (the
            # inner target of t is the smallest any (k, u) asks of it)
            phi_np = np.array(phis)
            wide = (abs(d_a) * (R + 2) + max(abs(k) for k in ks) + abs(d_b) * 2) >= 2**62  # int64 safety
            plan = []
            t_parts, g_parts = [], []
            cap = 1e-3
            for k, tau in zip(ks, taus):
                Rk = min(R, radius(tau))
                n_terms = 2 * Rk + 1
                T = int(math.ceil(math.sqrt(2 * v_vf * max(1.0, math.log(8 * n_terms / min(tau, cap)))))) + 1
                # u window: t(k, u) ≤ T  ⟺  u ≥ ua;  t(k, u) ≥ −T  ⟺  u ≤ ub
                ua = max(-Rk, -((d_b * T - k) // d_a) - 2)
                while ua <= Rk and t_of(k, ua) > T:
                    ua += 1
                while ua > -Rk and t_of(k, ua - 1) <= T:
                    ua -= 1
                ub = min(Rk, (k + d_b * T) // d_a + 2)
                while ub >= -Rk and t_of(k, ub) < -T:
                    ub -= 1
                while ub < Rk and t_of(k, ub + 1) >= -T:
                    ub += 1
                floor_t = tminf / (8 * n_terms)
                if ua <= ub:
                    us = np.array(range(ua, ub + 1), dtype=object if wide else np.int64)
                    t = -((d_a * us - k) // d_b)  # ⌈(k − d_a u)/d_b⌉, floor division as in t_of
                    tgt = np.maximum(np.minimum(cap, tau / (8 * n_terms * phi_np[ua + R:ub + R + 1])), floor_t)
                    t_parts.append(t)
                    g_parts.append(tgt)
                else:
                    t = None
                plan.append((k, Rk, T, ua, ub, t))
            if t_parts:
                t_all = np.concatenate(t_parts)
                g_all = np.concatenate(g_parts)
                order = np.lexsort((g_all, t_all))  # by t, then target: first of a run is its min
                t_sorted, g_sorted = t_all[order], g_all[order]
                first = np.ones(len(t_sorted), dtype=bool)
                first[1:] = t_sorted[1:] != t_sorted[:-1]
                tks_np = t_sorted[first]
                tks = [int(t) for t in tks_np.tolist()]
                tgts = g_sorted[first].tolist()
            else:
                tks_np, tks, tgts = np.zeros(0, dtype=np.int64), [], []
            tv = tails_ball(self.v_engine, tks, tgts) if tks else []
            ctx.prec = bits  # (inner engines restore the precision they found)
            vv = arb(fmpq(v_v.numerator, v_v.denominator))
            v_u = arb(fmpq(self.v_u.numerator, self.v_u.denominator))
            one, zero = arb(1), arb(0)
            out = []
            for k, Rk, T, ua, ub, t in plan:
                # outside [−R_k, R_k]: total mass ≤ 2 exp(−R_k²/(2 v_U)) (sub-Gaussian U)
                acc = ball(zero, 2 * (-(arb(Rk) ** 2) / (2 * v_u)).exp())
                g = (-(arb(T + 1) ** 2) / (2 * vv)).exp()  # beyond ±T (bounds monotone in t)
                lo_end = min(ua, Rk + 1)  # u in [−R_k, lo_end): t > T
                if lo_end > -Rk:
                    acc += (prefix[lo_end + R] - prefix[-Rk + R]) * ball(zero, g)
                hi_start = max(ub + 1, lo_end)  # u in [hi_start, R_k]: t < −T
                if hi_start <= Rk:
                    acc += (prefix[Rk + 1 + R] - prefix[hi_start + R]) * ball(one - g, one)
                if t is not None:
                    for p_u, i in zip(pu[ua + R:ub + R + 1], np.searchsorted(tks_np, t).tolist()):
                        acc += p_u * tv[i]
                out.append(acc)
            return out
        finally:
            ctx.prec = old


def tails_ball(engine, ks, targets) -> list:
    """Tails of any engine as Arb balls (engines without ``tails_ball`` return intervals)."""
    f = getattr(engine, "tails_ball", None)
    if f is not None:
        return f(ks, targets)
    return [ball(mpf_to_arb(c.lower), mpf_to_arb(c.upper)) for c in engine.tails(ks, targets)]
