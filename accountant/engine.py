"""The tail-engine layer: what every engine provides, how engines are tuned, what they report.

An *engine* answers certified tails P[Y ≥ k] of one integer lattice sum Y = Σ_k b_k X_k
(X_k ~ N_Z(0, σ_k²), m_k copies each; :class:`LatticeGroup`).  Four kinds exist:

* ``"trapezoid"`` — :class:`accountant.quadrature.TailEngine`, the tilted trapezoid rule over
  the sieved nodes (the general engine);
* ``"split"`` — :class:`accountant.split.SplitEngine`, an exact decomposition Y = d_A·U + d_B·V
  along common factors of the weights, over two inner engines;
* ``"pmf"`` — :class:`accountant.pmf.PmfEngine`, a certified pmf table of a small-span sum;
* ``"coarse"`` — :class:`accountant.coarse.CoarseEngine`, a certified sandwich on a coarsened
  lattice (its width does not shrink with the targets: ``improvable`` is False).

Every engine conforms to :class:`Engine`.  Which engine answers a composition is decided in
one place, :mod:`accountant.choose`, from the switches of an :class:`EngineConfig`.  Every
certified result of :class:`accountant.composition.Composition` carries the
:class:`EngineDiagnostics` of the engine batch that produced it
(:attr:`accountant.certified.Certified.diagnostics`).

This module imports no engine (the engines import it), so the layer has no import cycle:
``engine`` ← ``pmf``, ``quadrature``, ``split``, ``coarse`` ← ``choose`` ← ``composition``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import TYPE_CHECKING, ClassVar, Protocol, runtime_checkable

from .certified import Certified, _mpf, arb_to_certified
from .diagnostics import BOUND_DIAGNOSTICS, EngineDiagnostics  # re-exported (their home is accountant.diagnostics)
from .lattice import LatticeGroup  # re-exported: engines take tuples of it

if TYPE_CHECKING:
    from flint import arb

__all__ = [
    "BOUND_DIAGNOSTICS",
    "DEFAULT_CONFIG",
    "EXHAUSTIVE_CONFIG",
    "Engine",
    "EngineConfig",
    "EngineDiagnostics",
    "LatticeGroup",
    "TailStats",
    "batch_met",
    "stats_diagnostics",
]


@dataclass
class TailStats:
    """Node counts of an engine's last batch (for benchmarks and reports; mutable, per engine)."""

    n_nodes: int = 0
    kept_nodes: int = 0
    tilt_groups: int = 0
    #: evaluations of the integrand's characteristic-function product: one per node on the
    #: Poisson-dual route (accountant.dualprod), one per node and component on the theta route
    phi_evaluations: int = 0
    precision_bits: int = 0
    log_threshold: float = 0.0


def batch_met(results: Sequence, targets: Sequence) -> bool:
    """Every result (a :class:`Certified` or an Arb ball) has half-width ≤ its absolute target."""
    for r, t in zip(results, targets):
        c = r if isinstance(r, Certified) else arb_to_certified(r, clip01=True)
        if not c.error <= _mpf(t):
            return False
    return True


def stats_diagnostics(
    name: str, stats: TailStats, improvable: bool, batch, assess: bool, parts: tuple[EngineDiagnostics, ...] = ()
) -> EngineDiagnostics:
    """:class:`EngineDiagnostics` from an engine's stats and last batch ``(results, targets)``
    (``None`` before the first batch); the tolerance is assessed only when ``assess``."""
    met = None
    if assess and batch is not None:
        met = batch_met(*batch)
    return EngineDiagnostics(
        engine=name,
        improvable=improvable,
        tolerance_met=met,
        thresholds=0 if batch is None else len(batch[0]),
        n_nodes=stats.n_nodes,
        kept_nodes=stats.kept_nodes,
        tilt_groups=stats.tilt_groups,
        phi_evaluations=stats.phi_evaluations,
        precision_bits=stats.precision_bits,
        batches=0 if batch is None else 1,
        parts=parts,
    )


@runtime_checkable
class Engine(Protocol):
    """Certified tails P[Y ≥ k] of one fixed lattice sum Y (what every engine provides).

    The intervals are always rigorous; the absolute targets only steer the effort, and a caller
    that needs more digits calls again with tighter targets — which helps only when
    :attr:`improvable` is True.
    """

    #: the engine kind (see :attr:`EngineDiagnostics.engine`).
    name: ClassVar[str]

    @property
    def var(self) -> float:
        """Variance of Y (float; planning)."""

    @property
    def v_sg(self) -> Fraction:
        """Sub-Gaussian variance proxy of Y: P[Y ≥ k] ≤ exp(−k²/(2v)) (exact)."""

    @property
    def improvable(self) -> bool:
        """Tighter targets give narrower intervals (False: the width is what it is)."""

    @property
    def stats(self) -> TailStats:
        """Node counts of the last batch (of the leaf engine for composite engines)."""

    def tails(self, ks: Sequence[int], abs_targets: Sequence) -> list[Certified]:
        """Certified P[Y ≥ k] for each integer k, each aiming at half-width ≤ its target."""

    def tails_ball(self, ks: Sequence[int], abs_targets: Sequence) -> list[arb]:
        """:meth:`tails` as Arb balls (at the caller's working precision), for composite engines."""

    def diagnostics(self, assess: bool = True) -> EngineDiagnostics:
        """Diagnostics of the last batch; ``assess=False`` skips the tolerance check (for the
        inner parts of composite engines, whose batches may hold many thousands of tails)."""


@dataclass(frozen=True)
class EngineConfig:
    """Every tuning switch of engine choice and engine evaluation, with the measured defaults.

    Pass one to :class:`accountant.composition.Composition` (``config=``) or to an engine
    constructor; no switch changes what is certified, only which engine runs and how fast.
    """

    # ---------------------------------------------------------------- whole-composition choice
    #: a whole composition whose lattice sum spans at most this many points (predicted) is
    #: tabulated exactly (accountant.pmf) instead of integrated: such Y have Var ≲ 50, e.g. a few
    #: components with σ² ≪ 1, where the trapezoid's tilts become extreme.
    direct_pmf_max_span: float = 256
    #: most thresholds × outer terms a chain of exact splits may multiply into (the budget of
    #: :func:`accountant.choose.make_engine`); the DHC pairs' chains cost ≤ 1e3.
    split_chain_max_cost: float = 2e4
    #: a part of an exact split (the outer U, or an inner V that splits no further) is tabulated
    #: by :class:`accountant.pmf.PmfEngine` when its predicted span is at most this (and it has
    #: at most ``pmf_max_groups`` distinct components): split parts are asked for tails at
    #: hundreds to thousands of thresholds, which a table answers by lookup.  Measured (400
    #: thresholds, tol 1e-30): span 1.9e3 — table 41 ms vs trapezoid 84 ms; 8e3 (two weights) 39
    #: vs 130 ms; 1.9e4 — 253 vs 98 ms.  The Block×10 proxy of the optimizer (weights
    #: 15441 : 4882, one split) drops from 140 ms to 27 ms per δ.
    split_pmf_max_span: float = 8_000
    #: an exact split whose chain ends in a trapezoid leaf is not used when its search cost
    #: (:func:`accountant.choose.split_search_cost`) exceeds this: every outer term
    #: re-integrates the leaf (3 components, chain 560 × 95k leaf nodes: one δ > 150 s); the
    #: direct trapezoid or the sandwich is used instead.  Splits ending in pmf tables (every DHC
    #: pair's) are unaffected.
    split_tail_max_cost: float = 10_000
    #: a nested split down to a pmf table replaces the direct trapezoid when the direct
    #: integrand has more than this many peak-window nodes (planning estimate) ...
    nested_min_kept: int = 100_000
    #: ... and the chain multiplies the thresholds by at most this factor (measured on the DHC
    #: pairs: [M6, M10], factor 5·10⁴, 12.7 s instead of 335 s for the 42-ε curve) ...
    nested_max_cost: float = 100_000
    #: ... for compositions of at most this many distinct components (DHC pairs have 8–17; the
    #: planner's search is exponential in the number of weight families).
    nested_max_groups: int = 24
    #: a composition no other exact engine takes (the trapezoid's windows and the ellipsoid finder
    #: both too wide) gets a nested split down to a pmf table of chain cost up to this before the
    #: coarse sandwich: the cost counts every outer value, the evaluation only those its saddle
    #: pruning keeps.  Measured on the optimizer's DHC-persons proposals (issue 35; paths US+State
    #: against US+State+County, four weight families, chain cost 4e7): 9 s per exact δ, where the
    #: ellipsoid finder needed 45 s and the sandwich misses the tolerance.
    nested_fallback_max_cost: float = 1e8
    #: ... and, when this exceeds ``split_max_outer``, the same search with outer enumerations up to
    #: this many values (one family's pmf table on each side of a split): off by default (equal to
    #: ``split_max_outer``); :data:`EXHAUSTIVE_CONFIG` sets 4e5.  Measured on PL94 persons (two weight
    #: families of standard deviation ~5000 each, lattice scale ~1e11, ellipsoid estimates 2e8–2e9):
    #: [M30, M30] 2.9 s and [M28, M28] 5.5 s per exact δ, where the sandwich's interval is 3e-5 wide.
    split_fallback_max_outer: float = 1500
    #: a direct trapezoid whose planned node count N exceeds this is not run (the sandwich
    #: answers instead).
    max_direct_nodes: float = 1e9
    #: a direct trapezoid whose window-sieve estimate (:func:`accountant.sieve.direct_kept_estimate`)
    #: exceeds this many nodes is not run: the sum has no structure the exact engines can use,
    #: and the coarse sandwich answers instead (flagged).  The DHC-persons pairs' largest
    #: estimate is 1.07e6 ([6, 31]: 0.4 s per δ), so every release pair stays exact.
    direct_kept_max: float = 1_200_000
    #: a composition that the rules above would coarsen (lattice too fine to window, or no exact
    #: structure) is integrated by the direct trapezoid with the ellipsoid node finder
    #: (:mod:`accountant.diophantine`: LLL and lattice-point enumeration) instead; the sandwich
    #: then answers only a call whose enumeration exceeds ``ellipsoid_max_visits`` (flagged).
    ellipsoid_sieve: bool = True
    #: enumeration steps after which the ellipsoid node finder gives up (SieveTooWide); the
    #: engine gives up at once when :func:`accountant.diophantine.enumeration_estimate` exceeds
    #: it.  Counted on PL94 persons pairs at log threshold −95: [M3, M6]
    #: 4.7e5 candidates, 6.3e4 nodes kept; [M10, M10] 2.2e6 candidates, 1.1e5 kept.
    ellipsoid_max_visits: int = 10_000_000
    #: a whole composition that every rule above would leave to the sandwich, whose enumeration
    #: estimate is at most a quarter of this, is integrated by the ellipsoid finder with this many
    #: steps (dearer, but exact); off (equal to ``ellipsoid_max_visits``) by default.  Measured at
    #: 6e7 on the optimizer's DHC-persons favour-block proposal (issue 35; estimates 3.3e6–1.15e7):
    #: [6, 10] 20 s, [10, 33] 9.5 s, [33, 33] 26 s, [6, 33] 69 s per exact δ (2 cores shared with a
    #: sweep), where the sandwich misses the tolerance.  Not the default: the watched pairs of that
    #: run then cost 159 s instead of 50 s, and its re-solved proposal landed on a rounding with 8
    #: pairs (N = 2.8e9, estimates 1.7e7–2.1e7) beyond the fallback too.
    ellipsoid_fallback_max_visits: int = 10_000_000
    #: the chooser takes the ellipsoid finder only when its estimated lattice points
    #: (:func:`accountant.diophantine.enumeration_estimate`, at N = 16·sd and this log
    #: threshold, that of a 1e-35 target) are at most ellipsoid_max_visits/4.  Measured: PL94
    #: persons pairs e^8.6–e^13.0; DHC units pairs e^22–e^32 (the enumeration of [4, 15] gave up
    #: at 4e6 steps); four unrelated components at scale 6.7e12 e^25 — the sandwich answers those.
    ellipsoid_plan_log_threshold: float = -95.0
    #: kept-node target of the coarse sandwich's lattice: its width shrinks like 1/g while the
    #: work grows with the kept nodes.  Measured on 5 unrelated components (σ² 92 … 450, shifts
    #: 1–3): 8e4 kept nodes — δ(0.5) to 2.4e-4 relative in 0.5 s (the old planned-count sizing:
    #: > 30 s for a width of 100 %).
    coarse_kept: float = 150_000
    #: node count aimed at by :meth:`accountant.coarse.CoarseEngine.build` when it is given no
    #: divisor (planned-count sizing; the chooser sizes by ``coarse_kept`` instead).
    coarse_nodes: float = 5e8
    #: the sandwich asks its inner engine for this fraction of the enclosure width expected at
    #: each inner threshold (a normal-density estimate), not for the caller's whole target: a
    #: sandwich is never narrower than its width, so more inner precision is wasted work
    #: (measured: fuzz-domain β calls on the sandwich 4.2–6.9 s → 1.4–2.5 s, same widths).
    #: 0 = always the caller's target / 8.
    coarse_inner_fraction: float = 1e-4
    #: ... but never a looser absolute target than this.
    coarse_inner_target_max: float = 1e-8

    # ---------------------------------------------------------------- trade-off engines
    #: in :meth:`accountant.composition.Composition.delta_and_tradeoff` (the only call that
    #: routes β this way) the trade-off thresholds of a composition with an exact split engine go
    #: to the direct trapezoid (summed by DFT, cost per node) when the window-sieve estimate of its nodes at
    #: log threshold ``tradeoff_direct_log_threshold`` is at most this: a split pays per
    #: threshold and per outer × inner term.  Measured on the DHC pairs with splits (901-point
    #: curves, tol 1e-25): [6,28] estimate 9.9e4 — direct 1.3 s vs split 14.0 s; [6,10] 7.9e5 —
    #: 18.8 s vs 10.3 s.
    tradeoff_direct_max_estimate: float = 150_000
    #: the log pruning threshold at which the trade-off estimates above are taken (that of the
    #: trade-off tolerance 1e-25).
    tradeoff_direct_log_threshold: float = -70.0
    #: β's bracket search asks for ~100 thresholds; on an exact split chain costing more than
    #: this (:func:`accountant.choose.split_search_cost`: chain cost × leaf nodes/1000; DHC
    #: [6, 6]: 268) it runs instead on the direct trapezoid when that is small (DHC [6, 10] and
    #: [6, 28], chain costs 5e4: 10–14 s → ~1–2 s, exact), else on the coarse sandwich (flagged):
    #: a 6-component chain of cost ~2e4 took > 100 s per β, 2.7 s so.
    tradeoff_split_max_cost: float = 10_000
    #: ... and this for a chain whose leaf is a trapezoid (every threshold of a batch fans out to
    #: chain-cost leaf thresholds, each summed over the leaf's kept nodes): fuzz-domain
    #: three-component chains of cost 2.5e3–3.3e3 took 16–33 s per β exact (5 ms per unit),
    #: ~1 s on the sandwich (flagged).  No DHC pair has such a chain (their leaves are pmf
    #: tables).  ``math.inf`` keeps the exact search however long it takes.
    tradeoff_trapezoid_leaf_max_cost: float = 300

    # ---------------------------------------------------------------- split planner
    #: a split is used only when the direct problem is at least this many times larger (in N);
    #: measured on the DHC pairs: gains ~18 were slower than the direct route, ~360 much faster.
    split_min_gain: float = 100
    #: largest outer enumeration (number of U values) considered worthwhile.
    split_max_outer: float = 1500
    #: deepest nesting of splits tried by :func:`accountant.split.find_nested`.
    nested_max_depth: int = 3
    #: most distinct components in a pmf table (each costs one long polynomial product).
    pmf_max_groups: int = 6
    #: largest predicted span of the pmf-table leaf of a nested split
    #: (:func:`accountant.split.find_nested`).
    nested_pmf_max_span: float = 600_000

    # ---------------------------------------------------------------- evaluation switches
    #: the trapezoid evaluates G at the nodes by the Poisson-dual product
    #: (:mod:`accountant.dualprod`); off = one Arb theta evaluation per node and component (the
    #: reference route).
    use_dual_product: bool = True
    #: the trapezoid evaluates the kernel sums Σ_j K_j e^{−iζ_j k} run by run (Horner in Arb's C
    #: code over runs of consecutive nodes); off = one Python term per node and threshold.
    kernel_runs: bool = True
    #: thresholds in arithmetic progressions (the default trade-off grid) are summed by one DFT
    #: per tilt group and progression (needs ``kernel_runs``).
    ap_dft: bool = True
    #: pruning levels of a tilt group's members: a member whose own log pruning threshold
    #: exceeds the group's by ℓ·``prune_level_step`` (ℓ < ``prune_levels``) sums only the nodes
    #: whose log product bound is at least that much above the group's threshold.  Measured
    #: (901-point trade-off curve, tol 1e-25): DHC pair [10,33] 16.2 s → 10.8 s, [24,36]
    #: 0.87 → 0.65 s (step 8 / 5 levels: 11.7 s, 0.70 s).
    prune_levels: int = 16
    #: a tilt group's kernel sums come from one length-N DFT (every threshold at once) when
    #: the run-by-run sums would take more than ``full_dft_cost``·N·log2 N node products.
    #: Measured (bench/fuzz_domain.py --cases, 3 comp. trapezoid-leaf delta): Arb's DFT of
    #: length 60480 at 214 bits takes 0.39 s, a run-by-run sum ~0.33 µs per node and threshold.
    full_dft: bool = True
    #: see ``full_dft`` (the cost of one DFT product relative to one run product).
    full_dft_cost: float = 1.5
    #: no full DFT above this N (memory: one Arb ball per lattice point).
    full_dft_max_n: int = 1 << 20
    #: see ``prune_levels``.
    prune_level_step: float = 4.0
    #: a split sums Σ_u P[U = u]·P[V ≥ t(k, u)] over each window as one exact integer dot
    #: product of fixed-point values with a float error bound, instead of Arb ball products
    #: term by term (2–3× fewer Python-level operations; the split pairs' trade-off curves).
    split_fixed_point: bool = True
    #: a split drops the window terms whose bound φ̄_u·exp(−t₊²/(2 v_V)) (docs/method.md §4.3)
    #: is below τ_k/(8 n_k) and charges each that much in the threshold's radius (saddle-point
    #: pruning: deep tails need only the terms near the saddle of u ↦ P[U = u]·P[V ≥ t(k, u)]).
    split_prune_terms: bool = True
    #: a split enumerates, prunes and sums its window terms this many at a time: bounded memory
    #: (one FLINT integer product per term) and buffers that stay allocated (on this machine a
    #: fresh 80 MB numpy array costs ~0.2 s of page faults).  Measured (bench/fuzz_domain.py
    #: --cases, 5 comp. split chain, deep delta: 5.8 M terms): 1.5 GB → 0.8 GB peak memory.
    split_chunk_terms: int = 1 << 18


#: the defaults (what a :class:`~accountant.composition.Composition` uses unless told otherwise).
DEFAULT_CONFIG = EngineConfig()

#: the defaults with the dearer exact fallbacks on, for callers that would rather wait than accept the
#: coarse sandwich's width — a release's confirmation asks it for the pairs the defaults leave on the
#: sandwich (:func:`optimizer.jobs.profile.run_pair_job`): wide splits (``split_fallback_max_outer`` 4e5)
#: and the ellipsoid finder up to 8e7 enumeration steps (estimates ≤ 2e7).  Measured on the 32 PL94-persons
#: pairs the defaults leave on the sandwich (2 cores shared with another job): [M18, M32] 14.7 s and
#: [M10, M10] 12.7 s per exact δ by the ellipsoid; 23 of the 32 have estimates ≤ 2e7 and two more
#: take a wide split; the other seven (estimates 6e7–1e10) stay on the sandwich.  Not the default: the
#: optimizer's screens would then accept proposals whose pairs cost tens of seconds each.
EXHAUSTIVE_CONFIG = replace(DEFAULT_CONFIG, split_fallback_max_outer=400_000, ellipsoid_fallback_max_visits=80_000_000)
