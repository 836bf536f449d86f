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

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar

import mpmath
import numpy as np
from flint import arb, ctx, fmpq, fmpz

from .certified import Certified, _mpf, arb_to_certified, ball, from_log, log_of
from .engine import DEFAULT_CONFIG, Engine, EngineConfig, EngineDiagnostics, LatticeGroup, TailStats, stats_diagnostics
from .lattice import sub_gaussian_sd
from .pmf import pmf_span

__all__ = ["SplitEngine", "find_nested", "find_split"]

# The planner's switches (split_min_gain, split_max_outer, nested_max_depth, pmf_max_groups,
# nested_pmf_max_span) and the evaluation switch split_fixed_point are fields of
# accountant.engine.EngineConfig.


def _sd_proxy(groups) -> float:
    return sub_gaussian_sd(groups)


def find_split(groups, config: EngineConfig = DEFAULT_CONFIG):
    """Return (A, B, d_A, d_B) for the most profitable split, or ``None`` (a split is taken only
    when it gains ``config.split_min_gain`` over the direct problem)."""
    if len(groups) < 2:
        return None
    direct = _sd_proxy(groups)
    best = None
    for A, B, dA, dB, outer, sd_b in _family_splits(groups, config.split_max_outer):
        cost = outer * 4 + sd_b / dB
        if direct >= config.split_min_gain * cost and (best is None or cost < best[0]):
            best = (cost, A, B, dA, dB)
    if best is None:
        return None
    return best[1], best[2], best[3], best[4]


def _family_splits(groups, max_outer: float):
    """Candidate (A, B, d_A, d_B, outer, sd_B) partitions: A = a family sharing a large factor,
    outer enumeration ≤ ``max_outer`` (sd_B = :func:`_sd_proxy` of B).  Memoised: the nested
    planner meets the same sub-sums along many chains (a screen of 946 pairs asked ~10⁶ times)."""
    return _family_splits_cached(tuple(groups), float(max_outer))


@functools.lru_cache(maxsize=4096)
def _family_splits_cached(groups: tuple, max_outer: float) -> tuple:
    return tuple(_family_splits_uncached(groups, max_outer))


def _family_splits_uncached(groups, max_outer: float):
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
        if outer <= max_outer:
            A = tuple(g for g, a in zip(groups, inA) if a)
            B = tuple(g for g, a in zip(groups, inA) if not a)
            sd_b = math.sqrt(sum(v for v, a in zip(var, inA) if not a))
            yield A, B, dA, math.gcd(*(g.b for g in B)), outer, sd_b


def find_nested(
    groups,
    depth: int = 0,
    max_span: float | None = None,
    budget: float = math.inf,
    config: EngineConfig = DEFAULT_CONFIG,
):
    """A chain of exact splits ending in a small-span pmf table (:mod:`accountant.pmf`).

    Returns ``(cost, plan)`` with ``plan`` either ``("pmf",)`` or ``(A, B, d_A, d_B, subplan)``
    where ``subplan`` plans B/d_B; ``cost`` is the product of the outer enumeration sizes
    (the factor by which thresholds multiply down the chain) — or ``None`` if no chain of
    cost ≤ ``budget`` exists.  The top level is always a split (a whole composition is left to
    the trapezoid).  ``max_span`` (default ``config.nested_pmf_max_span``) bounds the leaf, which
    has at most ``config.pmf_max_groups`` distinct components; chains are at most
    ``config.nested_max_depth`` splits deep.
    """
    if max_span is None:
        max_span = config.nested_pmf_max_span
    if depth > 0 and len(groups) <= config.pmf_max_groups and pmf_span(groups) <= max_span:
        return 1.0, ("pmf",)
    if depth >= config.nested_max_depth:
        return None
    best = None
    for A, B, dA, dB, outer, _ in _family_splits(groups, config.split_max_outer):
        limit = budget if best is None else min(budget, best[0])
        if outer > limit:
            continue
        Bn = tuple(LatticeGroup(g.sigma2, g.b // dB, g.mult) for g in B)
        sub = find_nested(Bn, depth + 1, max_span, limit / outer, config)
        if sub is None:
            continue
        cost = outer * sub[0]
        if best is None or cost < best[0]:
            best = (cost, (A, B, dA, dB, sub[1]))
    return best


@dataclass(frozen=True)
class _Windows:
    """The windows of one :meth:`SplitEngine.tails_ball` batch: per threshold ``plan`` rows
    ``(k, R_k, T_k, ua, ub, log τ_k, n_k)``, the enumerated part ``enum`` of each window, the term
    counts n_k, log τ_k and log(τ_k/(8 n_k)) as arrays, and the switches in force."""

    plan: list
    enum: list
    n_terms: list
    log_tau: np.ndarray
    log_thr: np.ndarray
    prune: bool
    wide: bool
    log_cap: float


@dataclass
class SplitEngine:
    """Tails of Y = d_A·U + d_B·V from the tails of U and V (an :class:`accountant.engine.Engine`,
    kind ``"split"``, over two inner engines; ``config.split_fixed_point`` selects the window
    sums)."""

    name: ClassVar[str] = "split"

    u_engine: Engine
    v_engine: Engine
    d_a: int
    d_b: int
    v_u: Fraction  # sub-Gaussian variance proxy of U
    config: EngineConfig = field(default=DEFAULT_CONFIG, repr=False)

    def __post_init__(self):
        self._batch = None  # (results, targets) of the last batch, for diagnostics()
        self.summed_terms = 0  # window terms P[U = u]·P[V ≥ t] summed in the last batch (after pruning)

    @property
    def improvable(self) -> bool:
        """True when both parts are (tighter targets narrow both factors of every term)."""
        return self.u_engine.improvable and self.v_engine.improvable

    def diagnostics(self, assess: bool = True) -> EngineDiagnostics:
        """Diagnostics of the last batch: node counts of the V leaf (as :attr:`stats`), the
        parts' diagnostics (not assessed) in ``parts``."""
        parts = (self.u_engine.diagnostics(assess=False), self.v_engine.diagnostics(assess=False))
        return stats_diagnostics(self.name, self.stats, self.improvable, self._batch, assess, parts)

    @property
    def var(self) -> float:
        return self.d_a**2 * self.u_engine.var + self.d_b**2 * self.v_engine.var

    @property
    def v_sg(self) -> Fraction:
        return self.d_a**2 * self.v_u + self.d_b**2 * self.v_engine.v_sg

    @property
    def stats(self) -> TailStats:
        return self.v_engine.stats

    def tails(self, ks: Sequence[int], abs_targets: Sequence) -> list[Certified]:
        out = [arb_to_certified(b, clip01=True) for b in self.tails_ball(ks, abs_targets)]
        self._batch = (out, abs_targets)
        return out

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
        log_taus = [log_of(t) for t in abs_targets]  # logs: targets may underflow floats
        tmin = _mpf(abs_targets[int(np.argmin(log_taus))])
        log_tmin = min(log_taus)
        bits = max(192, int(-float(mpmath.log(tmin, 2))) + 96)
        R = math.ceil(math.sqrt(2 * float(self.v_u) * max(1.0, float(mpmath.log(8 / tmin))))) + 1
        v_vf = float(self.v_engine.v_sg)
        old = ctx.prec
        ctx.prec = bits
        try:
            pu, log_phi_np, prefix = self._u_masses(R, tmin)
            w = self._windows(ks, log_taus, R, log_phi_np)
            window_len = np.array([max(0, ub - ua + 1) for _, _, _, ua, ub, _, _ in w.plan], dtype=np.int64)
            log_8n = np.log(8 * np.array(w.n_terms, dtype=float))
            lengths, u_idx, idx_all, tks_np, tmins = _window_terms(
                w.enum,
                ks,
                R,
                self.d_a,
                self.d_b,
                log_phi_np,
                v_vf,
                w.log_thr if w.prune else None,
                w.wide,
                w.log_tau - log_8n,
                log_tmin - log_8n,
                w.log_cap,
                self.config.split_chunk_terms,
            )
            self.summed_terms = int(lengths.sum())
            tks = [int(t) for t in tks_np.tolist()]
            tgts = [from_log(x) for x in tmins.tolist()]  # (logs → targets)
            tv = self.v_engine.tails_ball(tks, tgts) if tks else []
            ctx.prec = bits  # (inner engines restore the precision they found)
            window_sum = self._window_sums(w, pu, tv, u_idx, idx_all, lengths, tks_np, bits)
            # the pruning charge of each window, n_pruned·τ_k/(8 n_k): exp at 64 bits, upper end
            pruned_count = window_len - lengths  # dropped terms (by the conditions or the bound)
            ctx.prec = 64
            charge = {
                n: arb(float(w.log_thr[n])).exp().upper() * int(pruned_count[n])
                for n in np.flatnonzero(pruned_count).tolist()
            }
            ctx.prec = bits
            out = self._assemble(w.plan, prefix, R, window_sum, charge)
            self._batch = (out, abs_targets)
            return out
        finally:
            ctx.prec = old

    def _u_masses(self, R: int, tmin) -> tuple[list, np.ndarray, list]:
        """``(P[U = u] for u = −R..R as balls, their float log upper ends, prefix sums)``:
        ``prefix[i]`` = Σ_{u < −R + i} P[U = u] (at the caller's precision)."""
        us = list(range(-R, R + 2))
        tu = self.u_engine.tails_ball(us, [tmin / (8 * len(us))] * len(us))
        pu = [a - b for a, b in itertools.pairwise(tu)]  # P[U = u] (ball), u = -R..R
        log_phis = [max(log_of(p.upper()), -1e6) for p in pu]
        prefix = [arb(0)]
        for p in pu:
            prefix.append(prefix[-1] + p)
        return pu, np.array(log_phis), prefix

    def _windows(self, ks: list[int], log_taus: list[float], R: int, log_phi_np: np.ndarray) -> _Windows:
        """Per threshold: its radius R_k, term count, and the u-window with |t| ≤ T (then, in
        :func:`_window_terms`, all windows' inner thresholds t(k, u) and targets as flat numpy
        vectors: the inner target of t is the smallest any (k, u) asks of it)."""
        vU, v_vf, d_a, d_b = float(self.v_u), float(self.v_engine.v_sg), self.d_a, self.d_b
        wide = (abs(d_a) * (R + 2) + max(abs(k) for k in ks) + abs(d_b) * 2) >= 2**62  # int64 safety
        log_cap = math.log(1e-3)
        # radii R_k (2 exp(−R²/(2 v_U)) ≤ τ/4), cut-offs T_k of V's support, and the window
        # [ua, ub] = {u : |t(k, u)| ≤ T_k} ∩ [−R_k, R_k] in closed form:
        # ⌈(k − d_a u)/d_b⌉ ≤ T ⟺ u ≥ ⌈(k − d_b T)/d_a⌉;  ⌈(k − d_a u)/d_b⌉ ≥ −T ⟺ u ≤ ⌈(k + d_b(T + 1))/d_a⌉ − 1
        ltau_np = np.array(log_taus, dtype=float)
        r_np = np.ceil(np.sqrt(2 * vU * np.maximum(1.0, math.log(8) - ltau_np)))
        rk_list = np.minimum(R, r_np.astype(np.int64) + 1).tolist()
        nt_list = [2 * rk + 1 for rk in rk_list]
        log_n8 = np.log(8 * np.array(nt_list, dtype=float))
        t_np = np.ceil(np.sqrt(2 * v_vf * np.maximum(1.0, log_n8 - np.minimum(ltau_np, log_cap)))) + 1
        log_thr = ltau_np - log_n8  # log(τ_k/(8 n_k))
        prune = self.config.split_prune_terms
        if prune:  # necessary conditions for a kept term (see the pruning below), per window:
            # φ̄_u above the threshold (u between the first and last such u), and
            # t ≤ T_c with T_c² ≥ 2 v_V (max φ̄ − threshold)
            margin = 2e-9 * (1 + np.abs(log_thr))
            left = np.maximum.accumulate(log_phi_np)
            right_rev = np.maximum.accumulate(log_phi_np[::-1])
            lo_idx = np.searchsorted(left, log_thr - margin, side="right").tolist()
            hi_idx = (len(log_phi_np) - 1 - np.searchsorted(right_rev, log_thr - margin, side="right")).tolist()
            room = np.maximum(float(log_phi_np.max()) - log_thr + margin, 0.0)
            tc_list = np.ceil(np.sqrt(2 * v_vf * (1 + 1e-9) * room)).astype(np.int64).tolist()
        plan = []
        enum = []  # the enumerated part [ea, eb] of each window [ua, ub]
        for n, (k, tau, Rk, n_terms, T) in enumerate(
            zip(ks, log_taus, rk_list, nt_list, t_np.astype(np.int64).tolist())
        ):
            ua = max(-Rk, -((d_b * T - k) // d_a))
            ub = min(Rk, -(-(k + d_b * (T + 1)) // d_a) - 1)
            plan.append((k, Rk, T, ua, ub, tau, n_terms))
            if prune:
                ea = max(ua, lo_idx[n] - R, -((d_b * tc_list[n] - k) // d_a))
                enum.append((ea, min(ub, hi_idx[n] - R)))
            else:
                enum.append((ua, ub))
        if prune and not wide and plan:
            # tighter windows, by bisection on a concave upper bound of the pruning's
            # log φ̄_u − t₊²/(2 v_V) (its concave majorant minus a convex penalty)
            enum = _bisect_kept_range(enum, ks, _upper_hull(log_phi_np), R, d_a, d_b, v_vf, log_thr)
        return _Windows(plan, enum, nt_list, ltau_np, log_thr, prune, wide, log_cap)

    def _window_sums(self, w: _Windows, pu, tv, u_idx, idx_all, lengths, tks_np, bits: int) -> dict[int, arb]:
        """Σ_u P[U = u]·P[V ≥ t(k, u)] over each window's kept terms (plan index → ball)."""
        nonempty = np.flatnonzero(lengths > 0)
        if not (int(lengths.sum()) and self.config.split_fixed_point):
            window_sum: dict[int, arb] = {}
            starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
            for n in nonempty.tolist():
                o, m = int(starts[n]), int(lengths[n])
                acc = arb(0)
                for a_u, i in zip(u_idx[o : o + m].tolist(), idx_all[o : o + m].tolist()):
                    acc += pu[a_u] * tv[i]
                window_sum[n] = acc
            return window_sum
        # exact integer dot products of fixed-point values, all windows at once, each
        # window at the width its own target needs (rounded up to a bucket of 64 bits):
        # n terms of rounding error 2^(1−fb) stay below τ_k·n·2^−63
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
        need = np.ceil(-w.log_tau / math.log(2)) + 64
        fbs = np.minimum(bits + 16, np.maximum(128, 64 * np.ceil(need / 64))).astype(np.int64)
        # P[U = u] needs fewer bits where every inner tail of the window is small: its
        # rounding 2^−fa times q̄ ≥ max P[V ≥ t] stays below τ_k·2^−64 with
        # fa = log2(q̄/τ_k) + 64 (deep windows: ~150 bits instead of ~1100); q̄ is the
        # sub-Gaussian bound exp(−t₊²/(2 v_V)) (the widths only decide accuracy: the
        # error bound below is computed from the values themselves)
        t_pos = np.maximum(tks_np.astype(float), 0.0)
        log2_q = -(t_pos * t_pos) / (2 * float(self.v_engine.v_sg) * math.log(2))
        q_max = np.full(len(w.plan), -np.inf)
        q_max[nonempty] = np.maximum.reduceat(log2_q[idx_all], starts[nonempty])
        with np.errstate(invalid="ignore"):
            a_need = np.ceil(q_max - w.log_tau / math.log(2)) + 64
        fas = np.minimum(fbs, np.maximum(128, 64 * np.ceil(np.nan_to_num(a_need, nan=0.0) / 64)))
        return _window_sums(pu, tv, u_idx, idx_all, lengths, fas.astype(np.int64), fbs, self.config.split_chunk_terms)

    def _assemble(self, plan, prefix, R: int, window_sum: dict[int, arb], charge: dict) -> list[arb]:
        """Each threshold's ball: U's mass beyond ±R_k, the u-ranges whose inner threshold is
        beyond V's cut-off ±T (prefix sums times one closed-form enclosure), the window's sum
        and its pruning charge."""
        v_v, v_u = self.v_engine.v_sg, self.v_u
        vv = arb(fmpq(v_v.numerator, v_v.denominator))
        vu = arb(fmpq(v_u.numerator, v_u.denominator))
        one, zero = arb(1), arb(0)
        tail_mass: dict[int, arb] = {}
        beyond: dict[int, tuple[arb, arb]] = {}
        out = []
        for n, (_k, Rk, T, ua, ub, _, _) in enumerate(plan):
            # outside [−R_k, R_k]: total mass ≤ 2 exp(−R_k²/(2 v_U)) (sub-Gaussian U)
            if Rk not in tail_mass:
                tail_mass[Rk] = ball(zero, 2 * (-(arb(Rk) ** 2) / (2 * vu)).exp())
            acc = tail_mass[Rk]
            if T not in beyond:
                g = (-(arb(T + 1) ** 2) / (2 * vv)).exp()  # beyond ±T (bounds monotone in t)
                beyond[T] = (ball(zero, g), ball(one - g, one))
            above, below = beyond[T]
            lo_end = min(ua, Rk + 1)  # u in [−R_k, lo_end): t > T
            if lo_end > -Rk:
                acc += (prefix[lo_end + R] - prefix[-Rk + R]) * above
            hi_start = max(ub + 1, lo_end)  # u in [hi_start, R_k]: t < −T
            if hi_start <= Rk:
                acc += (prefix[Rk + 1 + R] - prefix[hi_start + R]) * below
            if n in window_sum:
                acc += window_sum[n]
            if n in charge:
                acc += ball(zero, charge[n])
            out.append(acc)
        return out


def _window_terms(enum, ks, R, d_a, d_b, log_phi, v_v, log_thr, wide, log_tgt, log_floor, log_cap, chunk):
    """The terms of every window, enumerated and pruned window chunk by window chunk (about
    ``chunk`` terms at a time: bounded memory, reused buffers).

    Window n holds u = e_a..e_b of ``enum[n]`` with inner threshold t = ⌈(k_n − d_a u)/d_b⌉.
    With ``log_thr`` (log τ_n/(8 n_n) per window), the saddle-point pruning drops the terms
    whose bound φ̄_u·exp(−t₊²/(2 v_V)) is below it.  Returns (kept terms per window; their
    u + R and the index of their t among the distinct t, window after window; the distinct t,
    sorted; the smallest log target any kept term asks of each distinct t:
    max(min(log_cap, log_tgt_n − log φ̄_u), log_floor_n))."""
    nw = len(enum)
    ea = np.array([e[0] for e in enum], dtype=object if wide else np.int64)
    lengths = np.array([max(0, e[1] - e[0] + 1) for e in enum], dtype=np.int64)
    kept = np.zeros(nw, dtype=np.int64)
    k_np = np.array(ks, dtype=object if wide else np.int64)
    u_parts, t_parts, g_parts = [], [], []
    scale = 2 * v_v * (1 + 1e-12)
    thr = None if log_thr is None else log_thr - 1e-9 * (1 + np.abs(log_thr))  # the margin covers float rounding
    for lo, hi in itertools.pairwise(_chunk_edges(lengths, chunk)):
        ln = lengths[lo:hi]
        m = int(ln.sum())
        if not m:
            continue
        w = np.repeat(np.arange(lo, hi, dtype=np.int64), ln)
        offs = np.concatenate([[0], np.cumsum(ln)[:-1]]).astype(np.int64)
        u = ea[w] + (np.arange(m, dtype=np.int64) - np.repeat(offs, ln))
        t = -((d_a * u - k_np[w]) // d_b)  # ⌈(k − d_a u)/d_b⌉ by floor division
        ui = (u + R).astype(np.int64)
        lp = log_phi[ui]
        if thr is not None:
            # saddle-point pruning: a term P[U = u]·P[V ≥ t] is at most φ̄_u·exp(−t₊²/(2 v_V))
            # (sub-Gaussian V); terms whose bound is below τ_k/(8 n_k) are dropped and each
            # is charged τ_k/(8 n_k) in the threshold's radius (in the caller, ball arithmetic)
            tp = np.maximum(t.astype(float), 0.0)
            keep = lp - tp * tp / scale > thr[w]
            if not keep.all():
                w, t, ui, lp = w[keep], t[keep], ui[keep], lp[keep]
        kept[lo:hi] = np.bincount(w - lo, minlength=hi - lo)
        u_parts.append(ui)
        t_parts.append(t)
        g_parts.append(np.maximum(np.minimum(log_cap, log_tgt[w] - lp), log_floor[w]))
    if not u_parts:
        empty = np.zeros(0, dtype=np.int64)
        return kept, empty, empty, empty, np.zeros(0)
    u_idx = np.concatenate(u_parts)
    t_all = np.concatenate(t_parts)
    tgt = np.concatenate(g_parts)
    # the distinct inner thresholds t (all within ±T_k: a small range) and the smallest target
    # any (k, u) asks of each
    t_min, t_max = int(t_all.min()), int(t_all.max())
    huge = max(-t_min, t_max) >= 2**62  # beyond int64: stay with exact Python ints
    t_int = t_all if huge else t_all.astype(np.int64)
    if not huge and t_max - t_min <= 4 * len(t_int) + 1024:  # dense: one slot per t of the range
        mins = np.full(t_max - t_min + 1, np.inf)
        np.minimum.at(mins, t_int - t_min, tgt)
        seen = np.isfinite(mins)
        present = np.flatnonzero(seen)
        rank = np.cumsum(seen) - 1  # slot → index among the distinct t
        return kept, u_idx, rank[t_int - t_min], present + t_min, mins[present]
    tks_np, inv = np.unique(t_int, return_inverse=True)
    tmins = np.full(len(tks_np), np.inf)
    np.minimum.at(tmins, inv, tgt)
    return kept, u_idx, inv.astype(np.int64), tks_np, tmins


def _upper_hull(y: np.ndarray) -> np.ndarray:
    """H ≥ y on 0..n−1 with H the least concave majorant of the points (i, y_i) (Andrew's
    monotone chain; raised to y where float rounding of the interpolation dips below)."""
    n = len(y)
    hull: list[int] = []
    for i in range(n):
        while len(hull) >= 2:
            i0, i1 = hull[-2], hull[-1]
            # drop i1 when it lies on or below the chord from i0 to i
            if (y[i1] - y[i0]) * (i - i0) <= (y[i] - y[i0]) * (i1 - i0):
                hull.pop()
            else:
                break
        hull.append(i)
    h = np.interp(np.arange(n, dtype=float), np.array(hull, dtype=float), y[hull])
    return np.maximum(h, y)


def _bisect_kept_range(enum, ks, hull, R: int, d_a: int, d_b: int, v_v: float, log_thr) -> list[tuple[int, int]]:
    """Windows ``enum`` [(e_a, e_b)] narrowed to the u at which
    f(u) = hull[u + R] − ((k − d_a u)/d_b)₊²/(2 v_V) exceeds the window's log threshold less
    twice the pruning margin.  f bounds the pruning's log φ̄_u − t₊²/(2 v_V) from above (hull ≥
    log φ̄; t ≥ (k − d_a u)/d_b) and is concave (a concave majorant minus a convex penalty), so
    its superlevel set is one interval: found by bisection for the peak (the first u where f
    stops increasing) and then for each end.  Every term the pruning keeps lies inside."""
    lo0 = np.array([a for a, _ in enum], dtype=np.int64)
    hi0 = np.maximum(np.array([b for _, b in enum], dtype=np.int64), lo0 - 1)
    k = np.array(ks, dtype=float)
    thr = np.asarray(log_thr, dtype=float) - 2e-9 * (1 + np.abs(log_thr))
    scale = 2 * v_v * (1 + 1e-12)
    top = len(hull) - 1

    def f(u):
        x = np.maximum((k - d_a * u.astype(float)) / d_b, 0.0)
        return hull[np.clip(u + R, 0, top)] - x * x / scale

    def first_true(lo, hi, pred):  # smallest u in [lo, hi] with pred (hi + 1 if none); pred monotone
        hi = hi + 1
        while True:
            act = lo < hi
            if not act.any():
                return lo
            mid = (lo + hi) // 2
            ok = pred(np.where(act, mid, lo))
            hi = np.where(act & ok, mid, hi)
            lo = np.where(act & ~ok, mid + 1, lo)

    nonempty = hi0 >= lo0
    peak = first_true(lo0, np.maximum(hi0 - 1, lo0 - 1), lambda u: f(u + 1) <= f(u))
    peak = np.minimum(peak, np.maximum(hi0, lo0))
    alive = nonempty & (f(peak) > thr)
    lo = first_true(lo0, peak, lambda u: f(u) > thr)
    hi = first_true(peak, hi0, lambda u: f(u) <= thr) - 1
    lo = np.where(alive, lo, lo0)
    hi = np.where(alive, hi, lo0 - 1)
    return list(zip(lo.tolist(), hi.tolist()))


def _window_sums(pu, tv, u_idx, idx_all, lengths, fas, fbs, chunk_terms: int) -> dict[int, arb]:
    """{window n: an Arb ball containing Σ_{i in window n} pu[u_idx[i]]·tv[idx_all[i]]} for
    the non-empty windows (terms stored window after window, ``lengths[n]`` each).

    Window n is summed as one exact integer dot product of fixed-point values — ``pu`` with
    ``fas[n]`` and ``tv`` with ``fbs[n]`` fractional bits (:func:`_fixed_point`, or
    :func:`_fixed_point_int` when ``fbs[n]`` passes :data:`FLOAT_ERROR_MAX_BITS`) — plus its
    rounding error bound Σ(|P̃|e_q + e_p|Q̃| + e_p e_q); windows of equal widths are summed
    together, about ``chunk_terms`` terms at a time.  Loosely-targeted windows and windows of
    small inner tails cost products of shorter integers."""
    out: dict[int, arb] = {}
    starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]).astype(np.int64)
    nonempty = lengths > 0
    pairs = sorted({(int(fas[n]), int(fbs[n])) for n in np.flatnonzero(nonempty).tolist()})
    # the balls are converted once per family (float / integer error bounds) at its widest
    # widths; narrower widths shift those integers (_narrowed)
    base: dict[bool, tuple] = {}
    for floats in (True, False):
        fam = [ab for ab in pairs if (ab[1] <= FLOAT_ERROR_MAX_BITS) == floats]
        if fam:
            ta, tb = max(a for a, _ in fam), max(b for _, b in fam)
            if floats:  # FLINT integers for wide products, Python ints (cheaper to make) else
                flint = max(ta, tb) >= FMPZ_MIN_BITS
                base[floats] = (ta, tb, _fixed_point(pu, ta, flint), _fixed_point(tv, tb, flint))
            else:
                base[floats] = (ta, tb, _fixed_point_int(pu, ta), _fixed_point_int(tv, tb))
    for fa, fb in pairs:
        members = np.flatnonzero((fas == fa) & (fbs == fb) & nonempty)
        scale = arb(2) ** (-(fa + fb))
        floats = fb <= FLOAT_ERROR_MAX_BITS  # error bounds in floats (2^−fb ≫ float underflow)
        ta, tb, pb, qb = base[floats]
        if floats:
            p_int, p_abs, p_err = _narrowed(pb, ta - fa, fa)
            q_int, q_abs, q_err = _narrowed(qb, tb - fb, fb)
        else:  # deep targets: error bounds as exact integers too (no float range limits)
            p_int, p_err = _narrowed(pb, ta - fa, fa)
            q_int, q_err = _narrowed(qb, tb - fb, fb)
        for lo, hi in itertools.pairwise(_chunk_edges(lengths[members], chunk_terms)):
            chunk = members[lo:hi]
            ln = lengths[chunk]
            offs = np.concatenate([[0], np.cumsum(ln)[:-1]]).astype(np.int64)
            sel = np.repeat(starts[chunk] - offs, ln) + np.arange(int(ln.sum()), dtype=np.int64)
            ui, qi_idx = u_idx[sel], idx_all[sel]
            pi, qi = p_int[ui], q_int[qi_idx]
            # one dot product per window (numpy's object dot: no array of products)
            exact = [np.dot(pi[o : o + m], qi[o : o + m]) for o, m in zip(offs.tolist(), ln.tolist())]
            pe, qe = p_err[ui], q_err[qi_idx]
            if floats:
                err = np.add.reduceat(p_abs[ui] * qe + pe * q_abs[qi_idx] + pe * qe, offs)
                for n, x, e in zip(chunk.tolist(), exact, err.tolist()):
                    out[n] = arb(x) * scale + arb(0, e * (1 + 1e-10) + 1e-300)
            else:  # errors in units of 2^−fa (P) and 2^−fb (Q)
                err = np.add.reduceat(abs(pi) * qe + pe * abs(qi) + pe * qe, offs)
                for n, x, e in zip(chunk.tolist(), exact, err.tolist()):
                    out[n] = arb(x) * scale + arb(0, arb(e) * scale)
    return out


def _chunk_edges(lengths, chunk: int) -> list[int]:
    """Cut points 0 = c_0 < … < c_m = len(lengths) of consecutive windows holding about
    ``chunk`` terms each (a longer window is a chunk of its own)."""
    n = len(lengths)
    if not n:
        return [0]
    cum = np.cumsum(lengths)
    cuts = np.searchsorted(cum, np.arange(chunk, int(cum[-1]), chunk), side="left") + 1
    return [0, *sorted({int(c) for c in cuts.tolist() if 0 < c < n}), n]


def _narrowed(conv: tuple, shift: int, bits: int) -> tuple:
    """A fixed-point conversion (:func:`_fixed_point` or :func:`_fixed_point_int`) at
    ``bits + shift`` fractional bits narrowed to ``bits``: X' = ⌊X/2^shift⌋, so
    |x − X'·2^−bits| ≤ (old error) + 2^−bits and |X'|·2^−bits ≤ |X|·2^−(bits+shift) + 2^−bits."""
    if not shift:
        return conv
    if len(conv) == 3:  # float error bounds (rounded up by a relative 2^−40, as _fixed_point)
        ints, mags, errs = conv
        ulp = 2.0**-bits * (1.0 + 2.0**-40)
        return ints >> shift, (mags + ulp) * (1.0 + 2.0**-40), (errs + ulp) * (1.0 + 2.0**-40)
    ints, errs = conv  # integer error bounds in units of 2^−bits: ⌈E/2^shift⌉ + 1
    return ints >> shift, -((-errs) >> shift) + 1


def _fixed_point_int(balls, bits: int):
    """Fixed-point form of Arb balls with integer error bounds: (X, E) object arrays with
    |x − X·2^−bits| ≤ E·2^−bits for every x in the ball (X = ⌊mid·2^bits⌋, E = ⌈rad·2^bits⌉ + 1)."""
    ints, errs = [], []
    for x in balls:
        man, exp = x.mid().man_exp()
        m, sh = int(man), int(exp) + bits
        ints.append(fmpz(m << sh if sh >= 0 else m >> -sh))
        rm, re = x.rad().mid().man_exp()
        rm, rsh = int(rm), int(re) + bits
        errs.append(fmpz((rm << rsh if rsh >= 0 else -((-rm) >> -rsh)) + 1))  # ⌈·⌉ for rsh < 0
    return np.array(ints, dtype=object), np.array(errs, dtype=object)


#: window sums whose fixed-point width is at most this many bits bound their error in floats
#: (:func:`_fixed_point`); wider ones (deep targets) in exact integers (:func:`_fixed_point_int`).
FLOAT_ERROR_MAX_BITS = 900


#: window sums whose widest fixed-point values have at least this many fractional bits use
#: FLINT integers (products of ~1000-bit integers ~2× faster than Python's); narrower ones
#: Python ints (cheaper to make).
FMPZ_MIN_BITS = 384


def _fixed_point(balls, bits: int, flint: bool = True):
    """Fixed-point form of Arb balls for exact dot products: (X, |X|·2^−bits, e) as numpy
    arrays (object ints, floats, floats) with |x − X·2^−bits| ≤ e for every x in the ball.

    X = ⌊mid·2^bits⌋ (error < 2^−bits) and e = rad + 2^−bits, both floats rounded up by a
    relative 2^−40 (float conversion rounds to nearest).  Σ p·q over a window is then the exact
    integer Σ P·Q times 2^−2·bits, off by at most Σ(|P̃|e_q + e_p|Q̃| + e_p e_q) (evaluated in
    floats and enlarged by 1e-10 relative for their rounding).
    """
    ints, mags, errs = [], [], []
    ulp = 2.0**-bits
    up = 1.0 + 2.0**-40
    wrap = fmpz if flint else int
    for x in balls:
        man, exp = x.mid().man_exp()
        m, sh = int(man), int(exp) + bits
        X = m << sh if sh >= 0 else m >> -sh
        ints.append(wrap(X))
        mags.append(float(abs(X)) * ulp * up)
        errs.append((float(x.rad()) * up + ulp) * up)  # (the sum rounds too)
    return np.array(ints, dtype=object), np.array(mags), np.array(errs)
