"""Certified tail probabilities P[Y ≥ k] of an integer lattice sum of discrete Gaussians.

Y = Σ_k b_k X_k with X_k ~ N_Z(0, σ_k²) independent (m_k copies of each distinct component),
b_k coprime positive integers (:mod:`accountant.lattice`).  With G(s) = E[e^{sY}] =
Π_k M_{σ_k}(b_k s)^{m_k} (:mod:`accountant.theta`), for any λ > 0

    P[Y ≥ k] = (1/2π) ∫_{−π}^{π} G(λ+iζ) e^{−(λ+iζ)k} / (1 − e^{−(λ+iζ)}) dζ,

the generating-function (contour) form of the tail sum.  λ is placed near the saddle point
(λ ≈ k/Var Y), an exponential change of measure under which every factor is again a
(real-shifted) discrete Gaussian: the integrand then has no cancellation to speak of, so tails
as small as 1e-100 keep full *relative* precision — unlike λ = 0 (arXiv 2606.29835), where an
absolute error Δ becomes e^ε·Δ in δ.  The integral is evaluated by the N-point trapezoid rule
(exponentially convergent for analytic periodic integrands; exact aliasing identity in
:mod:`accountant.bounds`) over the nodes kept by :mod:`accountant.sieve`, in Arb ball
arithmetic.  Many thresholds share one node set and one evaluation of G per tilt group; a batch
sieves once, and thresholds in arithmetic progressions (trade-off grids) are summed for all
nodes by one DFT per progression (N is then a multiple of the step; :func:`_kernel_sums_dft`).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import ClassVar

import mpmath
import numpy as np
from flint import acb, acb_poly, arb, ctx, fmpq
from scipy.special import log_ndtr

from . import bounds
from .certified import Certified, arb_interval_to_certified, ball, down, mpf_to_arb, up
from .diophantine import ellipsoid_nodes
from .dualprod import DualProduct
from .engine import DEFAULT_CONFIG, EngineConfig, EngineDiagnostics, LatticeGroup, TailStats, stats_diagnostics
from .lattice import sub_gaussian_variance
from .sieve import SieveComponent, product_filter, sieve_nodes
from .theta import peak_halfwidth, theta0, theta_tau

# LatticeGroup and TailStats live in accountant.engine (the layer's base); re-exported here.
__all__ = ["LatticeGroup", "TailEngine", "TailStats"]

#: slack, in natural-log units, spent to let several thresholds share one tilt: a threshold joins a
#: group when var·(λ_group − λ)²/2 ≤ this, i.e. its tail bound loses at most a factor e^{LOSS}.
SHARED_TILT_LOSS = 23.0
#: tilts are rounded up to a grid of spacing sqrt(2·TILT_GRID_LOSS/var) (a tail bound loses at
#: most a factor e^{TILT_GRID_LOSS}), so that calls at nearby thresholds share a tilt and the
#: node values cached for it (:meth:`TailEngine._node_kernels`).
TILT_GRID_LOSS = 0.5
#: (λ, N, precision) keys of node values kept per engine (most recent).
KERNEL_CACHE_KEYS = 4
#: extra working bits on top of the planned requirement (guards Arb's own radius growth).
GUARD_BITS = 48
# The evaluation switches (Poisson-dual product, kernel sums by runs, DFT sums of arithmetic
# progressions, pruning levels) are fields of accountant.engine.EngineConfig (TailEngine.config).
#: gaps of at most this many pruned nodes inside a run are filled with exact zeros.
RUN_GAP_FILL = 8
#: longest run: Horner multiplies a complex (rectangular) ball by a unit x = e^{−iθ} per step,
#: which can grow its radius by |cos θ| + |sin θ| ≤ √2 (Arb's wrapping effect), i.e. half a
#: bit per coefficient; runs are cut at this length and the working precision gets
#: RUN_MAX_LENGTH/2 extra bits.
RUN_MAX_LENGTH = 24
#: the planned error target is this fraction of the caller's target (the rest is slack).
PLAN_FRACTION = 1e-3
#: thresholds in an arithmetic progression k₀ + mΔ (the default grid of a trade-off curve) are
#: summed by one DFT per tilt group and progression (:func:`_kernel_sums_dft`, switch
#: ``EngineConfig.ap_dft``): the node count N is rounded up to a multiple PΔ of the step, and
#: Σ_j K_j e^{−2πij(k₀+mΔ)/N} for all m < P is the length-P DFT of the nodes' terms
#: K_j e^{−2πijk₀/N} folded modulo P — cost per node instead of per node and threshold.  Used
#: for residue classes mod Δ with at least ``AP_MIN_MEMBERS`` thresholds and P ≤ ``AP_MAX_LENGTH``.
AP_MIN_MEMBERS = 16
AP_MAX_LENGTH = 1 << 16


#: log pruning thresholds are rounded down to multiples of this for the sieve's peak windows
#: (:meth:`TailEngine._candidate_nodes`): windows at most ~0.3 % wider at the usual thresholds (−80 … −120).
HALFWIDTH_GRID = 0.5


@contextmanager
def workprec(bits: int):
    old = ctx.prec
    ctx.prec = int(bits)
    try:
        yield
    finally:
        ctx.prec = old


def log_tail_estimate(var: float, k: int) -> float:
    """Rough log P[Y ≥ k] for a lattice sum of variance ``var`` (Gaussian); planning only."""
    return float(log_ndtr(-(k - 0.5) / math.sqrt(var)))


def _dg_variance(sigma2: float) -> float:
    """Var of N_Z(0, σ²) in floating point (planning only)."""
    if sigma2 > 50:
        return sigma2
    xs = np.arange(-int(40 * math.sqrt(sigma2) + 40), int(40 * math.sqrt(sigma2) + 41), dtype=float)
    w = np.exp(-xs * xs / (2 * sigma2))
    return float((w * xs * xs).sum() / w.sum())


#: components with σ² below this are "lattice-like" (far from Gaussian): the planner then finds
#: each tilt as the saddle point of the exact cumulant generating function (:class:`_Cgf`)
#: instead of λ = k/Var Y, and estimates G(λ) from it instead of the sub-Gaussian exp(vλ²/2).
SADDLE_SIGMA2 = 2.0


class _Cgf:
    """Float cumulant generating function K(λ) = log E e^{λY} and K'(λ) of the lattice sum
    (planning only): exact sums over the support for components with σ² < SADDLE_SIGMA2, the
    Gaussian σ²t²/2 for the others (relative error ~e^{−2π²σ²})."""

    def __init__(self, groups):
        self.gauss = sum(g.mult * g.b * g.b * float(g.sigma2) for g in groups if g.sigma2 >= SADDLE_SIGMA2)
        self.small = [(float(g.sigma2), g.b, g.mult) for g in groups if g.sigma2 < SADDLE_SIGMA2]

    @property
    def needed(self) -> bool:
        return bool(self.small)

    def __call__(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(K(λ), K'(λ)) elementwise."""
        K, K1, _ = self.derivatives(lam)
        return K, K1

    def derivatives(self, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(K(λ), K'(λ), K''(λ)) elementwise: K'' is the variance of the tilted law, Σ m b² Var_t(X)."""
        lam = np.asarray(lam, dtype=float)
        K = self.gauss * lam**2 / 2
        K1 = self.gauss * lam
        K2 = np.full_like(lam, self.gauss)
        for s2, b, m in self.small:
            t = b * lam  # tilted pmf ∝ exp(−x²/(2σ²) + t x), peak at x* = tσ²
            c = np.round(t * s2)
            R = int(40 * math.sqrt(s2)) + 40
            xs = c[..., None] + np.arange(-R, R + 1)[None, :]
            e = -xs * xs / (2 * s2) + t[..., None] * xs
            top = e.max(axis=-1, keepdims=True)
            w = np.exp(e - top)
            z = w.sum(axis=-1)
            x0 = np.arange(-R, R + 1)
            log_z0 = math.log(float(np.exp(-x0 * x0 / (2 * s2)).sum()))
            K = K + m * (top[..., 0] + np.log(z) - log_z0)
            # moments about the rounded peak c (no cancellation in the variance)
            dx = xs - c[..., None]
            m1 = (w * dx).sum(axis=-1) / z
            m2 = (w * dx * dx).sum(axis=-1) / z
            K1 = K1 + m * b * (c + m1)
            K2 = K2 + m * b * b * np.maximum(m2 - m1 * m1, 0.0)
        return K, K1, K2

    def saddle(self, ks: np.ndarray, var: float) -> np.ndarray:
        """λ > 0 with K'(λ) = k for each k ≥ 1, to float precision (planning only: any λ > 0 gives a
        valid contour).  Newton's method from the Gaussian guess k/Var, safeguarded by a bracket
        [lo, hi] with K'(lo) < k ≤ K'(hi) (K' is increasing: K'' is a variance): a step that leaves
        the bracket is replaced by its geometric midpoint.  Typically 4–8 evaluations of K', where the
        bisection in log λ it replaces took ~60."""
        ks = np.asarray(ks, dtype=float)
        lam = np.maximum(ks / max(var, 1e-300), 1e-300)
        lo = np.zeros_like(lam)
        hi = np.full_like(lam, np.inf)
        done = np.zeros(lam.shape, dtype=bool)
        for _ in range(200):
            _, d, d2 = self.derivatives(lam)
            hit = np.abs(d - ks) <= 1e-13 * ks  # K'(λ) = k to float precision: λ is the answer
            below = d < ks
            lo = np.where(below, np.maximum(lo, lam), lo)
            hi = np.where(below, hi, np.minimum(hi, lam))
            new = lam + (ks - d) / np.where(d2 > 0, d2, np.inf)
            # outside the bracket: the geometric midpoint, or a factor 4 while an end is missing
            mid = np.where(np.isinf(hi), lam * 4, np.where(lo > 0, np.sqrt(lo * hi), hi / 4))
            new = np.where((new > lo) & (new < hi) & np.isfinite(new), new, mid)
            small = (np.abs(new - lam) <= 1e-15 * lam) | (np.isfinite(hi) & (hi - lo <= 1e-15 * hi))
            lam = np.where(done | hit, lam, new)
            done = done | hit | small
            if done.all():
                break
        return lam


@dataclass
class TailEngine:
    """Certified P[Y ≥ k] for a fixed lattice sum; thresholds are processed in batches
    (an :class:`accountant.engine.Engine`, kind ``"trapezoid"``).

    Args:
        groups: the distinct components (σ², b, multiplicity).
        stats: node counts of the last batch (replaced by every batch).
        config: the evaluation switches (``use_dual_product``, ``kernel_runs``, ``ap_dft``,
            ``prune_levels``, ``prune_level_step``).
        node_finder: how the kept nodes are found: ``"windows"`` (peak windows intersected
            component by component, :func:`accountant.sieve.sieve_nodes`) or ``"ellipsoid"``
            (lattice points of an ellipsoid after LLL, :mod:`accountant.diophantine`: for
            Bézout scales too fine to window, e.g. 10¹⁴).  Both feed the same exact product
            filter and pruning bound; they differ only in cost.
    """

    name: ClassVar[str] = "trapezoid"

    groups: tuple[LatticeGroup, ...]
    stats: TailStats = field(default_factory=TailStats)
    config: EngineConfig = field(default=DEFAULT_CONFIG, repr=False)
    node_finder: str = "windows"

    def __post_init__(self):
        if not self.groups:
            raise ValueError("TailEngine: empty composition")
        self._batch = None  # (results, targets) of the last tails() call, for diagnostics()
        self.v_sg = sub_gaussian_variance(self.groups)
        self.var = sum(g.mult * g.b * g.b * _dg_variance(float(g.sigma2)) for g in self.groups)
        self._cgf = _Cgf(self.groups)
        self._theta_cache: dict[int, list[tuple[acb, acb]]] = {}
        self._dual: DualProduct | None = None
        self._kernel_cache: dict[tuple[float, int, int], tuple[dict, arb | None]] = {}

    @property
    def improvable(self) -> bool:
        """Always True: tighter targets buy more nodes, pruning depth and precision."""
        return True

    def diagnostics(self, assess: bool = True) -> EngineDiagnostics:
        """Diagnostics of the last batch (see :class:`accountant.engine.Engine`)."""
        return stats_diagnostics(self.name, self.stats, True, self._batch, assess)

    # ------------------------------------------------------------------ planning
    def _group(self, ks: list[int], lams: list[float]) -> list[tuple[float, list[int]]]:
        """Tilt groups: descending k; a group's tilt is its largest member's λ rounded up to the
        tilt grid (:data:`TILT_GRID_LOSS`)."""
        order = sorted(range(len(ks)), key=lambda i: -ks[i])
        groups: list[tuple[float, list[int]]] = []
        h = math.sqrt(2 * TILT_GRID_LOSS / self.var) if self.var > 0 else 0.0
        for i in order:
            if groups:
                lam_g, members = groups[-1]
                if lams[i] <= lam_g and self.var * (lam_g - lams[i]) ** 2 / 2 <= SHARED_TILT_LOSS:
                    members.append(i)
                    continue
            lam_q = h * math.ceil(lams[i] / h) if h > 0 else lams[i]
            groups.append((max(lam_q, lams[i]), [i]))
        return groups

    def _plan(self, ks: list[int], log_targets: list[float], step: int | None = None):
        """Choose N and the tilt groups so that the aliasing bound meets every target.

        With an AP ``step`` Δ, N is a multiple PΔ of it (P 5-smooth, N even); returns
        ``(N, groups, step)`` with ``step`` = None when that would need P > AP_MAX_LENGTH.
        """
        v_sg = float(self.v_sg)
        N = max(64, int(4 * math.sqrt(v_sg)))
        saddle = None
        while True:
            if step:
                N = _ap_round(N, step)
                if N // step > AP_MAX_LENGTH:
                    return self._plan(ks, log_targets, None)
            if self._cgf.needed and saddle is None:
                saddle = self._cgf.saddle(np.array(ks, dtype=float), self.var).tolist()
            lam0 = saddle if saddle is not None else [k / self.var for k in ks]
            lams = [max(l0, (math.log(3.0) - lt + 1.0) / N) for l0, lt in zip(lam0, log_targets)]
            groups = self._group(ks, lams)
            ok = all(
                bounds.log_aliasing_bound_float(ks[i], lam_g, N, v_sg) <= log_targets[i] - math.log(3.0)
                for lam_g, members in groups
                for i in members
            )
            if ok:
                break
            N = int(N * 1.25) + 1
        N += N % 2  # (a multiple of an AP step is already even)
        return N, groups, step

    # ------------------------------------------------------------------ evaluation
    def _thetas(self, bits: int):
        if bits not in self._theta_cache:
            out = []
            for g in self.groups:
                tau = theta_tau(g.sigma2)
                out.append((tau, theta0(tau)))
            self._theta_cache = {bits: out}
        return self._theta_cache[bits]

    def _node_kernels(self, node_list: list[int], N: int, lam_f: float, bits: int):
        """(Re, Im of w_j·G(λ + iζ_j)/(1 − e^{−λ}e^{−iζ_j}) per node, G(λ)); w_j = 2 off the
        ends of the half range (conjugate symmetry), 1 at ζ = 0, π.

        Cached per (λ, N, precision rounded up to 64 bits) across calls, node by node: the
        batches of a β search ask for nearby thresholds, whose (quantised, :meth:`_group`) tilt
        and node count repeat, so later batches evaluate only the nodes they add.  Values
        computed at a higher precision than asked are as valid."""
        pb = 64 * math.ceil(bits / 64)
        key = (lam_f, N, pb)
        table, g_lam = self._kernel_cache.pop(key, ({}, None))
        missing = [j for j in node_list if j not in table]
        if missing or g_lam is None:
            with workprec(pb):
                lam = arb(lam_f)  # exact binary value of the float: any λ > 0 is valid
                gvals, g_new = self._g_nodes(np.array(missing, dtype=np.int64), N, lam, pb)
                emlam = (-lam).exp()
                for j, gv, z in zip(missing, gvals, _unit_phases(missing, 1, N)):
                    kv = gv / (1 - emlam * z)  # G / (1 − e^{−λ} e^{−iζ})
                    w = 1 if (j == 0 or 2 * j == N) else 2  # half range: conjugate symmetry
                    table[j] = (w * kv.real, w * kv.imag)
            g_lam = g_new if g_lam is None else g_lam
        self._kernel_cache[key] = (table, g_lam)  # most recent last
        while len(self._kernel_cache) > KERNEL_CACHE_KEYS:
            self._kernel_cache.pop(next(iter(self._kernel_cache)))
        return [table[j][0] for j in node_list], [table[j][1] for j in node_list], g_lam

    def _g_nodes(self, nodes: np.ndarray, N: int, lam: arb, bits: int) -> tuple[list[acb], arb]:
        """G(λ + iζ_j) at the kept nodes, and G(λ) (real).

        By the Poisson-dual product of :mod:`accountant.dualprod` (one exponential per node for
        all factors near their peaks) unless ``config.use_dual_product`` is off or indices could
        overflow; else one Arb theta evaluation per node and distinct component.
        """
        thetas = self._thetas(bits)
        if self.config.use_dual_product:
            if self._dual is None:
                self._dual = DualProduct(self.groups)
            res = self._dual.values(nodes, N, lam, thetas)
            if res is not None:
                vals, g0 = res
                self.stats.phi_evaluations += len(vals) + 1
                return vals, g0
        return self._g_nodes_theta(nodes, N, lam, bits)

    def _g_nodes_theta(self, nodes: np.ndarray, N: int, lam: arb, bits: int) -> tuple[list[acb], arb]:
        """:meth:`_g_nodes` by one ``acb.modular_theta`` per node and component (reference)."""
        thetas = self._thetas(bits)
        two_pi = 2 * arb.pi()
        vals = []
        for j in nodes.tolist():
            prod = acb(1)
            for g, (tau, th0) in zip(self.groups, thetas):
                z = acb(arb(fmpq((g.b * j) % N, N)), -(g.b * lam) / two_pi)
                f = acb.modular_theta(z, tau)[2] / th0
                prod *= f if g.mult == 1 else f**g.mult
            vals.append(prod)
        g0 = acb(1)
        for g, (tau, th0) in zip(self.groups, thetas):
            f = acb.modular_theta(acb(0, -(g.b * lam) / two_pi), tau)[2] / th0
            g0 *= f**g.mult
        self.stats.phi_evaluations += (len(vals) + 1) * len(self.groups)
        return vals, g0.real

    def tails(self, ks: Sequence[int], abs_targets: Sequence[float]) -> list[Certified]:
        """Certified P[Y ≥ k] for each k, each with error ≤ about its absolute target.

        The returned intervals are always rigorous; the targets only steer the effort (node
        count, pruning threshold, precision).  Callers verify the achieved error and may call
        again with tighter targets.
        """
        ks = [int(k) for k in ks]
        if len(ks) != len(abs_targets):
            raise ValueError("tails: ks and abs_targets differ in length")
        # symmetry: P[Y >= k] = 1 - P[Y >= 1 - k] for k <= 0
        want: dict[int, float] = {}
        for k, t in zip(ks, abs_targets):
            kk = k if k >= 1 else 1 - k
            if not t > 0:
                raise ValueError(f"tails: error target must be > 0, got {t}")
            lt = (math.log(t) if isinstance(t, float) else float(mpmath.log(t))) + math.log(PLAN_FRACTION)
            lt = min(lt, math.log(1e-3))
            want[kk] = min(want.get(kk, 0.0), lt)
        pos = sorted(want)
        res = self._tails_positive(pos, [want[k] for k in pos])
        out = []
        for k in ks:
            if k >= 1:
                out.append(res[k])
            else:
                c = res[1 - k]
                out.append(Certified(down(1 - c.upper), up(1 - c.lower)))
        self._batch = (out, abs_targets)
        return out

    def tails_ball(self, ks: Sequence[int], abs_targets: Sequence[float]) -> list[arb]:
        """:meth:`tails` as Arb balls at the current working precision."""
        return [ball(mpf_to_arb(c.lower), mpf_to_arb(c.upper)) for c in self.tails(ks, abs_targets)]

    def _tails_positive(self, ks: list[int], log_targets: list[float]) -> dict[int, Certified]:
        cfg = self.config
        N, groups, step = self._plan(ks, log_targets, _ap_step(ks) if (cfg.ap_dft and cfg.kernel_runs) else None)
        v_sg = float(self.v_sg)
        self.stats = TailStats(n_nodes=N, tilt_groups=len(groups), log_threshold=0.0)
        out: dict[int, Certified] = {}
        plans = []
        lam_arr = np.array([lam for lam, _ in groups])
        if self._cgf.needed:  # log G(λ) from the exact cumulant generating function
            log_g = dict(zip(lam_arr.tolist(), self._cgf(lam_arr)[0].tolist()))
        else:
            log_g = {lam: v_sg * lam**2 / 2 for lam in lam_arr.tolist()}
        for lam_f, members in groups:
            # this tilt group's pruning threshold (log) and working precision: each group
            # keeps the nodes its own threshold needs, so shallow tails do not pay for deep ones
            log_thr = 0.0
            log_needed_bits = 0.0
            member_thr: dict[int, float] = {}
            for i in members:
                k, lt = ks[i], log_targets[i]
                log_chernoff = log_g[lam_f] - lam_f * k
                lthr = lt - math.log(3.0) + math.log(-math.expm1(-lam_f)) - log_chernoff
                member_thr[i] = lthr
                log_thr = min(log_thr, lthr)
                log_needed_bits = max(log_needed_bits, (log_chernoff - lt) / math.log(2))
            plans.append((lam_f, members, log_thr, log_needed_bits, member_thr))
        # one sieve for the batch, at the lowest threshold: the per-node product bounds do not
        # depend on λ, so each group keeps the nodes whose bound reaches its own threshold (a
        # node dropped either way has |G(λ+iζ)| < G(λ)·e^{threshold}, what the pruning bound needs)
        min_thr = min(p[2] for p in plans)
        all_nodes = self._candidate_nodes(N, min_thr)
        all_nodes, all_totals = product_filter(all_nodes, N, self.groups, min_thr, return_totals=True)
        for lam_f, members, log_thr, log_needed_bits, member_thr in plans:
            keep = all_totals >= log_thr
            nodes, totals = all_nodes[keep], all_totals[keep]
            bits = max(128, int(log_needed_bits + math.log2(max(2, len(nodes))) + GUARD_BITS))
            if cfg.kernel_runs:
                bits += RUN_MAX_LENGTH // 2
            st = self.stats
            st.kept_nodes = max(st.kept_nodes, len(nodes))
            st.precision_bits = max(st.precision_bits, bits)
            st.log_threshold = min(st.log_threshold, log_thr)
            out.update(self._evaluate_group(ks, members, lam_f, nodes, N, log_thr, bits, totals, member_thr, step))
        return out

    def _candidate_nodes(self, N: int, log_thr: float) -> np.ndarray:
        """A superset of the nodes whose product bound reaches ``log_thr`` (:attr:`node_finder`)."""
        if self.node_finder == "ellipsoid":
            return ellipsoid_nodes(self.groups, N, log_thr, self.config.ellipsoid_max_visits)
        comps = []
        # windows for a threshold rounded down to the grid HALFWIDTH_GRID: wider (a superset of the
        # candidates: the product filter keeps exactly the nodes of log_thr), and the same across the
        # batches of nearby thresholds, so each half-width is found once (peak_halfwidth is cached)
        q = math.floor(log_thr / HALFWIDTH_GRID) * HALFWIDTH_GRID
        for g in self.groups:
            hw = peak_halfwidth(float(g.sigma2), g.mult, q)
            if hw is not None:
                comps.append(SieveComponent(g.b, hw))
        return sieve_nodes(comps, N)

    def _full_dft_pays(self, members, classes, level_of, totals, log_thr, n_nodes: int, N: int) -> bool:
        """Whether one length-N DFT (every threshold at once: the sums are N-periodic in k) costs
        fewer node products than the run-by-run sums (each member over its pruning level's nodes)
        and the progression DFTs, i.e. more than ``config.full_dft_cost``·N·log2 N of them."""
        cfg = self.config
        if not (cfg.full_dft and cfg.full_dft_max_n >= N):
            return False
        n_at: dict[int, int] = {}
        cost = 0
        in_cls = {i for cls in classes for i in cls}
        for i in members:
            lev = level_of[i]
            if i not in in_cls:
                if lev not in n_at:
                    n_at[lev] = int((totals >= log_thr + lev * cfg.prune_level_step).sum()) if lev else n_nodes
                cost += n_at[lev]
        cost += len(classes) * n_nodes
        return cost > cfg.full_dft_cost * N * max(1, N.bit_length())

    def _evaluate_group(
        self, ks, members, lam_f, nodes, N, log_thr, bits, totals, member_thr, step=None
    ) -> dict[int, Certified]:
        """Tails of one tilt group.  With ``totals`` (log product bound per node) and
        ``member_thr`` (each member's own log pruning threshold), members are put on pruning
        levels log_thr + ``config.prune_level_step``·ℓ (ℓ < ``config.prune_levels``): a member at
        level ℓ sums only the nodes whose bound reaches that level (every other node has
        |G| < G(λ)·e^{level}, which the pruning bound charges), so loosely-targeted thresholds
        skip most nodes.  With an AP ``step``
        (N a multiple of it), the members of each large residue class mod ``step`` are summed
        over all kept nodes by one DFT (:func:`_kernel_sums_dft`, level 0)."""
        out: dict[int, Certified] = {}
        node_list = nodes.tolist()
        cfg = self.config
        runs = cfg.kernel_runs
        with workprec(bits):
            # the sieve guarantees |product| < exp(log_thr) at pruned nodes; bound it from above
            thr = arb(log_thr).exp().upper()
            v = arb(fmpq(self.v_sg.numerator, self.v_sg.denominator))
            lam = arb(lam_f)  # exact binary value of the float: any λ > 0 is valid
            k_re, k_im, g_lam = self._node_kernels(node_list, N, lam_f, bits)
            two_n = 2 * N
            # pruning level of each member (level 0 = the group's own node set and threshold)
            level_of = (
                {
                    i: min(cfg.prune_levels - 1, max(0, int((member_thr[i] - log_thr) // cfg.prune_level_step)))
                    for i in members
                }
                if runs
                else dict.fromkeys(members, 0)
            )
            thr_at = {0: thr}
            sums: dict[int, arb] = {}
            classes = _ap_classes(ks, members, step, N) if step else []
            if runs and self._full_dft_pays(members, classes, level_of, totals, log_thr, len(node_list), N):
                classes = []
                for i in members:
                    level_of[i] = 0
                sums.update(zip(members, _kernel_sums_full_dft(node_list, k_re, k_im, [ks[i] for i in members], N)))
            for cls in classes:
                for i in cls:
                    level_of[i] = 0
                sums.update(zip(cls, _kernel_sums_dft(node_list, k_re, k_im, [ks[i] for i in cls], N, step)))
            for lev in sorted({level_of[i] for i in members if i not in sums}) if runs else ():
                mem = [i for i in members if level_of[i] == lev and i not in sums]
                keep = [True] * len(node_list)
                if lev:
                    level = log_thr + lev * cfg.prune_level_step
                    keep = (totals >= level).tolist()
                    thr_at[lev] = arb(level).exp().upper()
                sub_j = [j for j, kp in zip(node_list, keep) if kp]
                sub_re = [kr for kr, kp in zip(k_re, keep) if kp]
                sub_im = [ki for ki, kp in zip(k_im, keep) if kp]
                mem_ks = [ks[i] for i in mem]
                sums.update(
                    zip(mem, _kernel_sums_runs(sub_j, sub_re, sub_im, mem_ks, N) if sub_j else [arb(0)] * len(mem))
                )
            alias = bounds.AliasingBound(lam, N, v)
            prune_at = {lev: bounds.pruning_factor(lam, g_lam, t) for lev, t in thr_at.items()}
            for i in members:
                k = ks[i]
                if runs:
                    acc = sums[i]
                else:
                    acc = arb(0)
                    for j, kr, ki in zip(node_list, k_re, k_im):
                        s, c = arb.sin_cos_pi_fmpq(fmpq((2 * j * k) % two_n, N))
                        acc += kr * c + ki * s
                e_k = (-lam * k).exp()
                T = acc * e_k / N
                prune = prune_at[level_of[i]] * e_k  # G(λ)·thr·e^{−λk}/(1 − e^{−λ}) (accountant.bounds)
                out[k] = arb_interval_to_certified(T - alias(k) - prune, T + prune, clip01=True)
        return out


def _kernel_sums_runs(nodes: list[int], k_re: list, k_im: list, ks: list[int], N: int) -> list[arb]:
    """Re Σ_j K_j e^{−2πi j k/N} for each k (K_j = k_re[j] + i k_im[j]), exactly as the direct
    sum Σ_j (Re K_j cos(2πjk/N) + Im K_j sin(2πjk/N)), in Arb balls.

    The nodes are cut into runs j = s + t (t = 0..L−1, L ≤ :data:`RUN_MAX_LENGTH`, short gaps
    filled with zero coefficients); per run, Σ_t K_{s+t} x^t is evaluated at x = e^{−2πik/N} for all k by Horner
    in Arb's C code, and multiplied by e^{−2πi s k/N}.  All angles are exact rationals of π.
    """
    runs: list[tuple[int, list]] = []
    start, coeffs, last = None, [], None
    zero = acb(0)
    for j, kr, ki in zip(nodes, k_re, k_im):
        if start is not None and last is not None and j - last <= RUN_GAP_FILL + 1 and j - start < RUN_MAX_LENGTH:
            coeffs.extend([zero] * (j - last - 1))
            coeffs.append(acb(kr, ki))
        else:
            if start is not None:
                runs.append((start, coeffs))
            start, coeffs = j, [acb(kr, ki)]
        last = j
    if start is not None:
        runs.append((start, coeffs))
    two_n = 2 * N
    xs = []
    for k in ks:
        s, c = arb.sin_cos_pi_fmpq(fmpq((2 * k) % two_n, N))
        xs.append(acb(c, -s))
    acc = [arb(0) for _ in ks]
    for s0, co in runs:
        if len(co) > 1:
            poly = acb_poly(co)
            vals = [poly(x) for x in xs]
        else:
            vals = [co[0]] * len(ks)
        for idx, (k, v) in enumerate(zip(ks, vals)):
            if s0:
                s, c = arb.sin_cos_pi_fmpq(fmpq((2 * s0 * k) % two_n, N))
                acc[idx] += v.real * c + v.imag * s  # Re(v·(c − i s))
            else:
                acc[idx] += v.real
    return acc


def _smooth_at_least(n: int) -> int:
    """Smallest 5-smooth integer (2^a 3^b 5^c) ≥ n (fast DFT lengths)."""
    n = max(1, int(n))
    best = 1 << (n - 1).bit_length()
    p5 = 1
    while p5 < best:
        p35 = p5
        while p35 < best:
            m = p35
            while m < n:
                m *= 2
            best = min(best, m)
            p35 *= 3
        p5 *= 5
    return best


def _ap_round(N: int, step: int) -> int:
    """The smallest N' = P·step ≥ N with P 5-smooth and N' even."""
    P = _smooth_at_least(-(-N // step))
    if (P * step) % 2:
        P = 2 * _smooth_at_least(-(-P // 2))
    return P * step


def _ap_step(ks: Sequence[int]) -> int | None:
    """The step Δ of the arithmetic progressions among sorted thresholds ``ks``, or ``None``.

    Candidates are the commonest differences at lags 1–4 (a trade-off curve interleaves up to
    four progressions of one step: α and β thresholds, each possibly reflected k ↦ 1 − k);
    Δ is accepted when residue classes mod Δ with ≥ ``AP_MIN_MEMBERS`` members hold at least
    half the thresholds.
    """
    if len(ks) < AP_MIN_MEMBERS:
        return None
    diffs: Counter = Counter()
    for lag in range(1, 5):
        diffs.update(b - a for a, b in zip(ks, ks[lag:]))
    for d, _ in diffs.most_common(3):
        if d < 1:
            continue
        sizes = Counter(k % d for k in ks)
        if 2 * sum(c for c in sizes.values() if c >= AP_MIN_MEMBERS) >= len(ks):
            return d
    return None


def _ap_classes(ks, members, step: int, N: int) -> list[list[int]]:
    """Members (indices into ``ks``) grouped by residue class mod ``step``, each class cut into
    chunks spanning fewer than P = N/step steps; only chunks with ≥ ``AP_MIN_MEMBERS``."""
    P = N // step
    by_res: dict[int, list[int]] = {}
    for i in members:
        by_res.setdefault(ks[i] % step, []).append(i)
    out = []
    for cls in by_res.values():
        cls.sort(key=lambda i: ks[i])
        chunk: list[int] = []
        for i in cls:
            if chunk and ks[i] - ks[chunk[0]] >= P * step:
                out.append(chunk)
                chunk = []
            chunk.append(i)
        out.append(chunk)
    return [c for c in out if len(c) >= AP_MIN_MEMBERS]


#: :func:`_unit_phases` multiplies along runs of consecutive nodes and recomputes the phase
#: exactly every this many nodes (Arb's radius grows by one rounding per multiplication).
PHASE_RESTART = 16


def _unit_phases(nodes: list[int], m: int, N: int) -> list[acb]:
    """e^{−2πi·j·m/N} for each node j (sorted), as Arb balls at the working precision: exact
    rational angles at the start of each run of consecutive nodes and every
    :data:`PHASE_RESTART` nodes, else the previous phase times the step e^{−2πim/N}."""
    two_n = 2 * N
    s, c = arb.sin_cos_pi_fmpq(fmpq((2 * m) % two_n, N))
    step = acb(c, -s)
    out = []
    prev = None
    run = 0
    z = step
    for j in nodes:
        if prev is not None and j == prev + 1 and run < PHASE_RESTART:
            z = z * step
            run += 1
        else:
            s, c = arb.sin_cos_pi_fmpq(fmpq((2 * j * m) % two_n, N))
            z = acb(c, -s)
            run = 0
        out.append(z)
        prev = j
    return out


def _kernel_sums_full_dft(nodes: list[int], k_re: list, k_im: list, ks: list[int], N: int) -> list[arb]:
    """Re Σ_j K_j e^{−2πi j k/N} for any thresholds k, in Arb balls, from one length-N DFT
    (``acb.dft``, rigorous) of the kernels placed at their nodes (zero elsewhere): the sum
    depends on k only through k mod N."""
    zero = acb(0)
    F = [zero] * N
    for j, kr, ki in zip(nodes, k_re, k_im):
        F[j] = acb(kr, ki)
    D = acb.dft(F)
    return [D[k % N].real for k in ks]


def _kernel_sums_dft(nodes: list[int], k_re: list, k_im: list, ks: list[int], N: int, step: int) -> list[arb]:
    """Re Σ_j K_j e^{−2πi j k/N} for thresholds k = k₀ + m·step (m < P = N/step), in Arb balls.

    Since N = P·step, e^{−2πi j(k₀ + m·step)/N} = e^{−2πi j k₀/N}·e^{−2πi (j mod P) m/P}: the sums
    for all m are the length-P DFT (``acb.dft``, rigorous) of F_r = Σ_{j ≡ r (mod P)} K_j
    e^{−2πi j k₀/N}.  Angles are exact rationals of π.
    """
    P = N // step
    k0 = min(ks)
    if P * step != N or any((k - k0) % step or k - k0 >= N for k in ks):
        raise ValueError("_kernel_sums_dft: thresholds are not one progression of the DFT step")
    F = [acb(0)] * P
    for j, kr, ki, z in zip(nodes, k_re, k_im, _unit_phases(nodes, k0, N)):
        r = j % P
        F[r] += acb(kr, ki) * z
    D = acb.dft(F)
    return [D[(k - k0) // step].real for k in ks]
