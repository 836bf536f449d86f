"""Compositions of discrete Gaussian mechanisms and their exact, certified privacy profiles.

A :class:`Composition` is a multiset of :class:`~accountant.mechanism.DiscreteGaussian`
mechanisms (identical components grouped with multiplicities).  Its privacy loss under P is
ℓ_P = ρ + Σ_k w_k X_k and under Q is ℓ_Q = −ρ + Σ_k w_k X_k in distribution (w_k = s_k/σ_k²,
X_k ~ N_Z(0, σ_k²)); with the lattice scale L of :mod:`accountant.lattice`,
Y = Σ_k b_k X_k ∈ Z and ℓ_P = (Y + C)/L, ℓ_Q = (Y − C)/L.

* (ε, δ): the hockey-stick divergence δ(ε) = P[ℓ_P > ε] − e^ε P[ℓ_Q > ε]
  = P[Y ≥ k] − e^ε P[Y ≥ k + 2C] with k = ⌊Lε − C⌋ + 1.
* f-DP: the Neyman–Pearson trade-off curve; its vertices (deterministic likelihood-ratio
  tests) are (α_k, β_k) = (P[Y ≥ k], P[Y ≥ 2C + 1 − k]) and between them it is linear
  (randomised tests at the atoms).

All numbers are certified intervals (:class:`~accountant.certified.Certified`).  Method:
Su, Su & Wang, arXiv 2606.29835 (lattice + characteristic functions + trapezoid + sieve), with
the saddle-point tilt of :mod:`accountant.quadrature`.
"""

from __future__ import annotations

import functools
import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real

import mpmath
from flint import arb, fmpq
from scipy.special import log_ndtr

from .certified import Certified, _mpf, down, exact_mpf, up
from .exact import to_fraction
from .lattice import Lattice
from .mechanism import DiscreteGaussian
from .quadrature import LatticeGroup, TailEngine, log_tail_estimate, workprec
from .coarse import MAX_DIRECT_NODES, CoarseEngine, kept_divisor, planned_nodes
from .pmf import PmfEngine, pmf_span
from .sieve import SieveTooWide, direct_kept_estimate
from .split import MAX_PMF_GROUPS, SplitEngine, find_nested, find_split
from .tradeoff import tradeoff_at

__all__ = ["Composition", "EpsilonResult", "TradeoffCurve", "DEFAULT_TOL", "DEFAULT_RTOL"]

#: default absolute error tolerance of reported probabilities (the census-mandated 1e-35 of
#: arXiv 2606.29835).
DEFAULT_TOL = 1e-35
#: default relative error tolerance; δ keeps 20 correct digits even when δ ≪ tol.
DEFAULT_RTOL = 1e-20
#: default tolerance of trade-off curves (the paper's 1e-25).
DEFAULT_TRADEOFF_TOL = 1e-25
#: retries with tightened internal targets when a result misses its tolerance.
MAX_REFINEMENTS = 3
#: tails (and δ) whose sub-Gaussian bound exp(−k²/(2v)) is below this are returned as the
#: certified enclosure [0, bound] without integration (δ down to this keeps its relative
#: tolerance; below it the answer is a clear "δ ≤ bound", flagged as a relative-tolerance miss).
TAIL_FLOOR = 1e-300
LOG_TAIL_FLOOR = math.log(TAIL_FLOOR)
#: smallest absolute error target asked of a δ or a tail (bounds the working precision to
#: ~1.1e3 bits); the second tail of δ, which is multiplied by e^ε, gets this times e^{−ε} ...
ABS_TARGET_FLOOR = 1e-320
#: ... and no engine target is ever below this (a hard cap on working precision, ~3.4e3 bits).
ENGINE_TARGET_MIN_LOG10 = -1000
_EXACT_BITS = 256  # precision of the exact-input → ball conversions
#: a nested split down to a pmf table (accountant.pmf) replaces the direct trapezoid when the
#: direct integrand has more than this many peak-window nodes (planning estimate) ...
NESTED_MIN_KEPT = 100_000
#: ... and the chain multiplies the thresholds by at most this factor (measured on the DHC
#: pairs: [M6, M10], factor 5·10⁴, 12.7 s instead of 335 s for the 42-ε curve).
NESTED_MAX_COST = 100_000
#: ... for compositions of at most this many distinct components (DHC pairs have 8–17; the
#: planner's search is exponential in the number of weight families).
NESTED_MAX_GROUPS = 24
#: most thresholds × outer terms a chain of exact splits may multiply into (see make_engine);
#: the DHC pairs' chains cost ≤ 1e3.
SPLIT_CHAIN_MAX_COST = 2e4
#: a part of an exact split (the outer U, or an inner V that splits no further) is tabulated
#: by :class:`accountant.pmf.PmfEngine` when its predicted span is at most this (and it has at
#: most ``MAX_PMF_GROUPS`` distinct components): split parts are asked for tails at hundreds to
#: thousands of thresholds, which a table answers by lookup.  Measured (400 thresholds, tol
#: 1e-30): span 1.9e3 — table 41 ms vs trapezoid 84 ms; 8e3 (two weights) 39 vs 130 ms;
#: 1.9e4 — 253 vs 98 ms.  The Block×10 proxy of the optimizer (weights 15441 : 4882, one
#: split) drops from 140 ms to 27 ms per δ.
SPLIT_PMF_MAX_SPAN = 8_000
#: the trade-off thresholds of a composition with an exact split engine go to the direct
#: trapezoid (summed by DFT, cost per node) when the window-sieve estimate of its nodes at log
#: threshold ``TRADEOFF_DIRECT_LOG_THRESHOLD`` is at most this: a split pays per threshold and
#: per outer × inner term.  Measured on the DHC pairs with splits (901-point curves, tol 1e-25):
#: [6,28] estimate 9.9e4 — direct 1.3 s vs split 14.0 s; [6,10] 7.9e5 — 18.8 s vs 10.3 s.
TRADEOFF_DIRECT_MAX_ESTIMATE = 150_000
#: a whole composition whose lattice sum spans at most this many points (predicted) is
#: tabulated exactly (accountant.pmf) instead of integrated: such Y have Var ≲ 50, e.g. a few
#: components with σ² ≪ 1, where the trapezoid's tilts become extreme.
DIRECT_PMF_MAX_SPAN = 256
#: supported range of σ² (exact rationals): outside it the engines' planning (floats) and theta
#: evaluations are not validated; compositions are refused up front with this range named.
SIGMA2_MIN = Fraction(1, 10**4)
SIGMA2_MAX = Fraction(10**12)
#: most mechanisms (with multiplicity) in one composition.
MAX_COMPONENTS = 10**6


def _short(x: Fraction) -> str:
    """A Fraction for an error message: exact when short, else a 6-digit decimal."""
    t = str(x)
    return t if len(t) <= 24 else f"{float(x):.6g}" if math.isfinite(_float(x)) else f"~1e{len(str(x.numerator)) - len(str(x.denominator))}"
TRADEOFF_DIRECT_LOG_THRESHOLD = -70.0
#: a direct trapezoid whose window-sieve estimate (:func:`accountant.sieve.direct_kept_estimate`)
#: exceeds this many nodes is not run: the sum has no structure the exact engines can use, and
#: the coarse sandwich answers instead (flagged).  The DHC-persons pairs' largest estimate is
#: 1.07e6 ([6, 31]: 0.4 s per δ), so every release pair stays exact.
DIRECT_KEPT_MAX = 1_200_000
#: kept-node target of the coarse sandwich's lattice: its width shrinks like 1/g while the
#: work grows with the kept nodes.  Measured on 5 unrelated components (σ² 92 … 450, shifts
#: 1–3): 8e4 kept nodes — δ(0.5) to 2.4e-4 relative in 0.5 s (the old planned-count sizing:
#: > 30 s for a width of 100 %).
COARSE_KEPT = 150_000
#: β's bracket search asks for ~100 thresholds; on an exact split chain costing more than this
#: (:func:`split_search_cost`: chain cost × leaf nodes/1000; DHC [6, 6]: 268) it runs instead
#: on the direct trapezoid when that is small (:meth:`Composition._tradeoff_search_engine`:
#: DHC [6, 10] and [6, 28], chain costs 5e4: 10–14 s → ~1–2 s, exact), else on the coarse
#: sandwich (flagged): a 6-component chain of cost ~2e4 took > 100 s per β, 2.7 s so.
TRADEOFF_SPLIT_MAX_COST = 10_000
#: an exact split whose chain ends in a trapezoid leaf is not used when its search cost
#: (:func:`split_search_cost`) exceeds this: every outer term re-integrates the leaf (3
#: components, chain 560 × 95k leaf nodes: one δ > 150 s); the direct trapezoid or the
#: sandwich is used instead.  Splits ending in pmf tables (every DHC pair's) are unaffected.
SPLIT_TAIL_MAX_COST = 10_000


_ENGINE_TARGET_MIN = mpmath.mpf(10) ** ENGINE_TARGET_MIN_LOG10


class _NeedsCoarse(Exception):
    """Raised inside :func:`make_engine` when a part of a split has no exact engine within
    :data:`DIRECT_KEPT_MAX`: the whole composition is then coarsened instead (one sandwich
    over few thresholds is far cheaper and narrower than a coarsened part queried at every
    outer term)."""


def make_engine(groups: tuple[LatticeGroup, ...], budget: float = SPLIT_CHAIN_MAX_COST, *,
                coarse_ok: bool = True):
    """The tail engine for a lattice sum: a pmf table, an exact split (accountant.split), the
    direct trapezoid, or — for sums with no exploitable structure, whose exact lattice would
    keep more than :data:`DIRECT_KEPT_MAX` nodes — the certified coarse sandwich of
    :mod:`accountant.coarse` sized to :data:`COARSE_KEPT` nodes (flagged: its width does not
    reach the usual tolerances).

    ``budget`` bounds the product of the outer enumeration sizes along a chain of splits (the
    factor by which thresholds multiply down the chain); past it the chain stops and the
    remainder is integrated directly.  With ``coarse_ok=False`` (parts of a split, the inside
    of a sandwich) a sum that would need coarsening raises :class:`_NeedsCoarse`."""
    if len(groups) <= MAX_PMF_GROUPS and pmf_span(groups) <= DIRECT_PMF_MAX_SPAN:
        return PmfEngine(tuple(groups))
    split = find_split(groups)
    if split is not None:
        outer = 2 * 16 * math.sqrt(sum(g.mult * g.b * g.b * float(g.sigma2) for g in split[0])) / split[2] + 1
        if outer > budget:
            split = None
        else:
            try:
                engine = _build_split(split, budget / outer)
            except _NeedsCoarse:
                engine = None
            if engine is not None and not (_leaf_is_trapezoid(engine)
                                           and split_search_cost(engine) > SPLIT_TAIL_MAX_COST):
                return engine
            split = None
    planned = planned_nodes(groups)
    kept: list[int] = []

    def kept_estimate() -> int:
        if not kept:
            kept.append(direct_kept_estimate(groups))
        return kept[0]

    too_fine = planned > MAX_DIRECT_NODES
    if not too_fine:
        nested = find_nested(groups, budget=NESTED_MAX_COST) if len(groups) <= NESTED_MAX_GROUPS else None
        if nested is not None and kept_estimate() > NESTED_MIN_KEPT:
            return _build_nested(groups, nested[1])
        too_fine = planned > 2 * DIRECT_KEPT_MAX and kept_estimate() > DIRECT_KEPT_MAX
    if too_fine:
        if not coarse_ok:
            raise _NeedsCoarse
        return coarse_engine(groups)
    return TailEngine(groups)


def coarse_engine(groups, kept_target: float = None):
    """The coarse sandwich (accountant.coarse) of ``groups`` with about ``kept_target``
    (default :data:`COARSE_KEPT`) kept nodes on its coarse lattice."""
    target = COARSE_KEPT if kept_target is None else kept_target
    g = kept_divisor(groups, target, direct_kept_estimate)
    inner = functools.partial(make_engine, coarse_ok=False)
    for _ in range(4):
        try:
            return CoarseEngine.build(groups, inner, divisor=g)
        except _NeedsCoarse:
            g *= 8
    return CoarseEngine.build(groups, make_engine, divisor=g)


def split_chain_cost(engine) -> float:
    """Leaf thresholds per threshold of an engine: the product of the outer enumeration sizes
    along its chain of exact splits (1 for other engines)."""
    if isinstance(engine, SplitEngine):
        return (32 * math.sqrt(engine.u_engine.var) + 1) * split_chain_cost(engine.v_engine)
    return 1.0


def _leaf_is_trapezoid(engine) -> bool:
    while isinstance(engine, SplitEngine):
        engine = engine.v_engine
    return isinstance(engine, TailEngine)


def split_search_cost(engine) -> float:
    """Planning cost of one threshold on an exact split chain: :func:`split_chain_cost` times
    the leaf's kept trapezoid nodes in thousands (1 for a pmf-table leaf); 0 for engines that
    are not splits."""
    if not isinstance(engine, SplitEngine):
        return 0.0
    leaf = engine
    while isinstance(leaf, SplitEngine):
        leaf = leaf.v_engine
    nodes = direct_kept_estimate(leaf.groups) / 1000 if isinstance(leaf, TailEngine) else 1.0
    return split_chain_cost(engine) * max(1.0, nodes)


def _build_split(split, budget: float):
    A, B, dA, dB = split
    u_groups = tuple(LatticeGroup(g.sigma2, g.b // dA, g.mult) for g in A)
    v_groups = tuple(LatticeGroup(g.sigma2, g.b // dB, g.mult) for g in B)
    v_u = sum(Fraction(g.mult * g.b * g.b) * g.sigma2 for g in u_groups)
    v_engine = _split_part(v_groups) if find_split(v_groups) is None else None
    u_engine = _split_part(u_groups) or TailEngine(u_groups)
    return SplitEngine(u_engine, v_engine or make_engine(v_groups, budget, coarse_ok=False), dA, dB, v_u)


def _split_part(groups):
    """A pmf table for a small-span part of an exact split, or ``None`` (see
    :data:`SPLIT_PMF_MAX_SPAN`)."""
    if len(groups) <= MAX_PMF_GROUPS and pmf_span(groups) <= SPLIT_PMF_MAX_SPAN:
        return PmfEngine(tuple(groups))
    return None


def _build_nested(groups, plan):
    """Engine for a :func:`accountant.split.find_nested` plan: splits down to a pmf table."""
    if plan[0] == "pmf":
        return PmfEngine(tuple(groups))
    A, B, dA, dB, sub = plan
    u_groups = tuple(LatticeGroup(g.sigma2, g.b // dA, g.mult) for g in A)
    v_groups = tuple(LatticeGroup(g.sigma2, g.b // dB, g.mult) for g in B)
    v_u = sum(Fraction(g.mult * g.b * g.b) * g.sigma2 for g in u_groups)
    return SplitEngine(PmfEngine(u_groups), _build_nested(v_groups, sub), dA, dB, v_u)


def _parse_exact(x, name: str) -> Fraction:
    """A user-supplied real as an exact Fraction: what :func:`accountant.exact.to_fraction`
    accepts (ints, Fractions, Decimals, exact strings), plus floats and mpmath numbers at their
    exact binary value (ε and α are not budgets: any exact value is a valid question).  Refuses
    non-finite values with a message naming ``name`` and the value."""
    if hasattr(x, "_mpf_") or (isinstance(x, Real) and not isinstance(x, (bool, int, Fraction))):
        m = x if hasattr(x, "_mpf_") else mpmath.mpf(float(x))  # float → mpf is exact
        if not mpmath.isfinite(m):
            raise ValueError(f"{name}: must be finite, got {x!r}")
        sign, man, exp, _ = m._mpf_
        f = Fraction(man) * (Fraction(2) ** exp)
        return -f if sign else f
    return to_fraction(x, name=name)

def _frac_arb(f: Fraction) -> arb:
    """An Arb ball enclosing the rational ``f`` at the current precision."""
    return arb(fmpq(f.numerator, f.denominator))


def _frac_bounds(f: Fraction) -> tuple[mpmath.mpf, mpmath.mpf]:
    """mpf numbers ``lo ≤ f ≤ hi`` (outward-rounded)."""
    m = _mpf(f.numerator) / f.denominator
    return down(m), up(m)


def _float(x: Fraction) -> float:
    """float(x), saturating to ±inf instead of raising OverflowError (planning only)."""
    try:
        return float(x)
    except OverflowError:
        return math.inf if x > 0 else -math.inf


def _log_subgauss_tail(k: int, v_sg: Fraction) -> float:
    """log of the sub-Gaussian bound P[Y ≥ k] ≤ exp(−k²/(2v)) for k ≥ 1 (float, planning)."""
    return -_float(Fraction(k * k) / (2 * v_sg)) if k >= 1 else 0.0


def _subgauss_tail_upper(k: int, v_sg: Fraction) -> mpmath.mpf:
    """exp(−k²/(2v)) rounded up (a certified upper bound of P[Y ≥ k], k ≥ 1; Canonne–Kamath–
    Steinke arXiv 2004.00010: N_Z(0, σ²) is σ²-sub-Gaussian), without underflow."""
    expo = up(-(_mpf(k) ** 2) / (2 * (_mpf(v_sg.numerator) / v_sg.denominator)))
    return up(up(mpmath.exp(expo)))


def _arb_lower(x: arb) -> mpmath.mpf:
    """The lower end of an Arb ball as an exact mpf."""
    man, exp = x.lower().mid().man_exp()
    return exact_mpf(man, exp)


def _arb_upper(x: arb) -> mpmath.mpf:
    """The upper end of an Arb ball as an exact mpf."""
    man, exp = x.upper().mid().man_exp()
    return exact_mpf(man, exp)





@dataclass(frozen=True, slots=True)
class EpsilonResult:
    """ε(δ) for a target δ, on the safe side.

    Attributes:
        value: an ε with certified δ(value) ≤ target (this is the one to publish).
        lower: an ε with certified δ(lower) > target, so the exact ε(δ) ∈ (lower, value];
            ``None`` when no such ε was certified (e.g. δ(0) ≤ target, where ε(δ) = 0 = value).
        delta_at_value: the certified δ at ``value``.
        tol: the requested relative accuracy: value − lower ≤ tol·max(1, value).
    """

    value: mpmath.mpf
    lower: mpmath.mpf | None
    delta_at_value: Certified
    tol: float = 1e-12

    @property
    def upper(self) -> mpmath.mpf:
        return self.value

    @property
    def tolerance_met(self) -> bool:
        """The bracket (lower, value] is as narrow as requested (or ε = 0 is certified)."""
        if self.lower is None:
            return self.value == 0
        return bool(self.value - self.lower <= self.tol * max(1, abs(self.value)))

    def __float__(self) -> float:
        return float(self.value)


@dataclass(frozen=True, slots=True)
class TradeoffCurve:
    """Vertices of the exact trade-off curve at lattice thresholds.

    ``alpha[i] = P[Y ≥ k[i]]`` (type-I error) and ``beta[i] = P[Y ≥ 2C + 1 − k[i]]`` (type-II
    error); ``zeta[i]`` is the normalised threshold of arXiv 2606.29835 (k ≈ (ζ₀ + 1)·C).
    """

    zeta: tuple[float, ...]
    k: tuple[int, ...]
    alpha: tuple[Certified, ...]
    beta: tuple[Certified, ...]

    @property
    def tolerance_met(self) -> bool:
        """Every vertex meets the requested tolerance."""
        return all(c.tolerance_met for c in self.alpha) and all(c.tolerance_met for c in self.beta)

    def as_floats(self) -> tuple[list[float], list[float]]:
        return [float(a) for a in self.alpha], [float(b) for b in self.beta]


class Composition:
    """A multiset of discrete Gaussian mechanisms (composition is commutative).

    Args:
        mechanisms: an iterable of :class:`DiscreteGaussian`, or a mapping
            ``{DiscreteGaussian: multiplicity}``.

    >>> comp = Composition([DiscreteGaussian.from_rho("73/10000")] * 2)
    >>> comp.rho, comp.size, comp.lattice.weights
    (Fraction(73, 10000), 2, (1,))
    >>> Composition([])
    Traceback (most recent call last):
    ...
    ValueError: Composition: empty composition (no mechanisms)
    """

    def __init__(self, mechanisms: Iterable[DiscreteGaussian] | Mapping[DiscreteGaussian, int]):
        counts: Counter = Counter()
        if isinstance(mechanisms, Mapping):
            items = mechanisms.items()
        else:
            if isinstance(mechanisms, (str, bytes)) or not isinstance(mechanisms, Iterable):
                raise TypeError(f"Composition: expected an iterable of DiscreteGaussian, got {mechanisms!r}")
            items = ((m, 1) for m in mechanisms)
        for i, (mech, mult) in enumerate(items):
            if not isinstance(mech, DiscreteGaussian):
                raise TypeError(f"Composition: item {i} is {type(mech).__name__} {mech!r}, not DiscreteGaussian")
            if isinstance(mult, bool) or not isinstance(mult, int) or mult < 0:
                raise ValueError(f"Composition: multiplicity of {mech!r} must be an int >= 0, got {mult!r}")
            if mult:
                counts[mech] += mult
        if not counts:
            raise ValueError("Composition: empty composition (no mechanisms)")
        for mech in counts:
            if not (SIGMA2_MIN <= mech.sigma2 <= SIGMA2_MAX):
                raise ValueError(
                    f"Composition: a mechanism has sigma2 = {_short(mech.sigma2)}, outside the supported range "
                    f"[{SIGMA2_MIN}, {SIGMA2_MAX}] (rho = 1/sigma2 in [1e-12, 1e4])")
        total = sum(counts.values())
        if total > MAX_COMPONENTS:
            raise ValueError(f"Composition: {total} mechanisms exceed the supported {MAX_COMPONENTS}")
        self.groups: tuple[tuple[DiscreteGaussian, int], ...] = tuple(sorted(counts.items()))
        self.lattice = Lattice.from_weights([(m.loss_weight, m.shift, c) for m, c in self.groups])
        self._engine = make_engine(
            tuple(LatticeGroup(m.sigma2, b, c) for (m, c), b in zip(self.groups, self.lattice.weights))
        )
        self._beta_engine = None  # β's engine on costly split chains, built on first use

    # ------------------------------------------------------------------ structure
    @property
    def size(self) -> int:
        return sum(c for _, c in self.groups)

    @property
    def rho(self) -> Fraction:
        """zCDP parameter Σ s²/(2σ²) of the composition (Bun & Steinke arXiv 1605.02065)."""
        return sum((m.zcdp_rho * c for m, c in self.groups), Fraction(0))

    @property
    def mu2(self) -> Fraction:
        """μ² = Σ s²/σ² of the Gaussian-DP surrogate (Dong, Roth & Su arXiv 1905.02383)."""
        return 2 * self.rho

    @property
    def stats(self):
        """Diagnostics of the last numerical run (nodes, tilt groups, precision)."""
        return self._engine.stats

    def spec_key(self) -> str:
        """A stable hash of the exact multiset (cache key for jobs)."""
        text = ";".join(f"{m.sigma2}|{m.shift}|{c}" for m, c in self.groups)
        return hashlib.sha256(text.encode()).hexdigest()

    def compose(self, other: "Composition") -> "Composition":
        counts: Counter = Counter(dict(self.groups))
        counts.update(dict(other.groups))
        return Composition(dict(counts))

    __add__ = compose

    def __eq__(self, other) -> bool:
        return isinstance(other, Composition) and self.groups == other.groups

    def __hash__(self) -> int:
        return hash(self.groups)

    def __repr__(self) -> str:
        return f"Composition({len(self.groups)} distinct, {self.size} mechanisms, rho={self.rho})"

    # ------------------------------------------------------------------ tails
    def _engine_tails(self, ks, targets, engine=None) -> list[Certified]:
        """Engine call with a per-call fallback: when the exact sieve is too wide for these
        thresholds, this call (only) is answered by the certified coarse sandwich of
        :mod:`accountant.coarse`, coarsening further if needed.  The composition's own engine is
        never replaced, so no call changes the results of later calls."""
        targets = [max(_mpf(t), _ENGINE_TARGET_MIN) for t in targets]
        try:
            return (engine or self._engine).tails(ks, targets)
        except SieveTooWide:
            pass
        groups = self._lattice_groups()
        for factor in (1, 8, 64):
            try:
                return coarse_engine(groups, COARSE_KEPT / factor).tails(ks, targets)
            except SieveTooWide:
                continue
        raise SieveTooWide("no engine (exact or coarse) can integrate this composition")

    @property
    def v_sg(self) -> Fraction:
        """Sub-Gaussian variance proxy v = Σ m_k b_k² σ_k² of Y (P[Y ≥ k] ≤ exp(−k²/(2v)))."""
        return sum((Fraction(c * b * b) * m.sigma2 for (m, c), b in zip(self.groups, self.lattice.weights)),
                   Fraction(0))

    def _lattice_groups(self) -> tuple[LatticeGroup, ...]:
        return tuple(LatticeGroup(m.sigma2, b, c) for (m, c), b in zip(self.groups, self.lattice.weights))

    def tails(self, ks: Iterable[int], tol: float = DEFAULT_TOL, rtol: float = DEFAULT_RTOL) -> list[Certified]:
        """Certified P[Y ≥ k] for integer thresholds k of the lattice variable Y = Σ b_k X_k.

        Each result aims at error ≤ tol (absolute) and ≤ rtol·P (relative), so deep tails keep
        their digits, and records the request (:attr:`Certified.tolerance_met`).  Tails whose
        sub-Gaussian bound exp(−k²/(2v)) is below :data:`TAIL_FLOOR` are returned as
        [0, bound] (or [1 − bound, 1] for k ≤ 0) without integration, and absolute targets stop
        at :data:`ABS_TARGET_FLOOR`; such results miss a relative target and say so.
        """
        return self._tails(ks, tol, rtol, None)

    def _tails(self, ks: Iterable[int], tol: float, rtol: float, engine) -> list[Certified]:
        """:meth:`tails` on ``engine`` (default: the composition's own)."""
        ks = list(ks)
        for k in ks:
            if isinstance(k, bool) or not isinstance(k, int):
                raise TypeError(f"tails: thresholds must be ints, got {k!r}")
        _check_tol(tol, rtol)
        v = self.v_sg
        out: list[Certified | None] = [None] * len(ks)
        todo = []
        for i, k in enumerate(ks):
            m = k if k >= 1 else 1 - k
            if _log_subgauss_tail(m, v) < LOG_TAIL_FLOOR:
                b = _subgauss_tail_upper(m, v)
                out[i] = Certified(_mpf(0), b) if k >= 1 else Certified(down(1 - b), _mpf(1))
            else:
                todo.append(i)
        scale = 1.0
        for _ in range(MAX_REFINEMENTS + 1):
            if not todo:
                break
            targets = []
            for i in todo:
                k = ks[i]
                lp = log_tail_estimate(self._engine.var, k) if k >= 1 else 0.0
                targets.append(max(scale * min(tol, mpmath.exp(math.log(rtol) + lp)), ABS_TARGET_FLOOR))
            res = self._engine_tails([ks[i] for i in todo], targets, engine)
            still = []
            for i, c in zip(todo, res):
                out[i] = c
                if c.error > min(mpmath.mpf(tol), rtol * c.value):
                    still.append(i)
            if not still or not getattr(engine or self._engine, "improvable", True):
                break
            todo = still
            scale *= 1e-6
        return [c.with_target(tol, rtol) for c in out]  # type: ignore[union-attr]

    def tail(self, k: int, tol: float = DEFAULT_TOL, rtol: float = DEFAULT_RTOL) -> Certified:
        """Certified P[Y ≥ k] (see :meth:`tails`)."""
        return self.tails([k], tol, rtol)[0]

    # ------------------------------------------------------------------ (eps, delta)
    def _log_delta_gdp(self, eps: float) -> float:
        mu = math.sqrt(float(self.mu2))
        a = float(log_ndtr(-eps / mu + mu / 2))
        b = eps + float(log_ndtr(-eps / mu - mu / 2))
        if b >= a:
            return a - 50.0
        return a + math.log1p(-math.exp(b - a))

    def _thresholds(self, eps: Fraction) -> tuple[int, int]:
        """(k₁, k₂) = (⌊Lε − C⌋ + 1, k₁ + 2C), exactly: δ(ε) = P[Y ≥ k₁] − e^ε P[Y ≥ k₂]."""
        x = eps * self.lattice.scale - self.lattice.c
        k = math.floor(x) + 1
        return k, k + self.lattice.two_c

    def delta_curve(self, eps_values: Iterable, tol: float = DEFAULT_TOL, rtol: float = DEFAULT_RTOL) -> list[Certified]:
        """Certified δ(ε) for each ε; error ≤ tol (absolute) and ≤ rtol·δ (relative).

        ``eps`` values may be ints, Fractions, decimal strings (parsed exactly), floats (their
        exact binary value) or mpmath numbers; they must be finite and ≥ 0.
        """
        return self._delta_curve(eps_values, tol, rtol)[0]

    def delta_and_tradeoff(self, eps_values: Iterable, n: int = 901, tol: float = DEFAULT_TOL,
                           rtol: float = DEFAULT_RTOL, tradeoff_tol: float = DEFAULT_TRADEOFF_TOL,
                           zeta: Iterable | None = None, zeta_max: float | None = None
                           ) -> tuple[list[Certified], TradeoffCurve]:
        """:meth:`delta_curve` and :meth:`tradeoff_curve` (same arguments, same results) from one
        engine batch: the trade-off thresholds ride along with the (ε, δ) thresholds, sharing their
        nodes, tilt groups and integrand evaluations (the two batches of a pair need almost the
        same N and tilts)."""
        _check_tol(tradeoff_tol, 1.0)
        zeta, ks, all_k = self._tradeoff_thresholds(zeta, n, zeta_max, tradeoff_tol)
        direct = self._direct_tradeoff_engine()
        if direct is not None:
            try:
                tails = [c.with_target(tradeoff_tol) for c in direct.tails(all_k, [tradeoff_tol] * len(all_k))]
                return self.delta_curve(eps_values, tol, rtol), self._tradeoff_from(zeta, ks, dict(zip(all_k, tails)))
            except SieveTooWide:
                pass
        deltas, tails = self._delta_curve(eps_values, tol, rtol, all_k, [tradeoff_tol] * len(all_k))
        tails = [c.with_target(tradeoff_tol) for c in tails]
        return deltas, self._tradeoff_from(zeta, ks, dict(zip(all_k, tails)))

    def _tradeoff_search_engine(self):
        """The engine for β when the exact split chain is too costly: the direct trapezoid when
        its window-sieve estimate is at most :data:`DIRECT_KEPT_MAX` (exact), else the coarse
        sandwich (flagged).  Built once per composition."""
        if self._beta_engine is None:
            groups = self._lattice_groups()
            if direct_kept_estimate(groups, TRADEOFF_DIRECT_LOG_THRESHOLD) <= DIRECT_KEPT_MAX:
                self._beta_engine = TailEngine(groups)
            else:
                self._beta_engine = coarse_engine(groups)
        return self._beta_engine

    def _direct_tradeoff_engine(self):
        """A direct trapezoid engine for the trade-off thresholds of a composition whose engine
        is an exact split, when the direct integrand is small enough (see
        :data:`TRADEOFF_DIRECT_MAX_ESTIMATE`), else ``None``."""
        if not isinstance(self._engine, SplitEngine):
            return None
        groups = self._lattice_groups()
        if direct_kept_estimate(groups, TRADEOFF_DIRECT_LOG_THRESHOLD) > TRADEOFF_DIRECT_MAX_ESTIMATE:
            return None
        return TailEngine(groups)

    def _delta_curve(self, eps_values: Iterable, tol: float, rtol: float, extra_ks: Sequence[int] = (),
                     extra_targets: Sequence[float] = ()) -> tuple[list[Certified], list[Certified]]:
        """:meth:`delta_curve`; the first engine batch also carries the thresholds ``extra_ks``
        (absolute targets ``extra_targets``), whose tails are returned second.

        ε is exact (a Fraction), so the thresholds k₁, k₂ are exact integers; e^ε is an Arb ball
        at a precision matched to the target.  When the sub-Gaussian bound of P[Y ≥ k₁] is below
        :data:`TAIL_FLOOR`, δ(ε) ∈ [0, that bound] is returned at once (no integration; flagged
        by its relative tolerance)."""
        _check_tol(tol, rtol)
        if isinstance(eps_values, (str, bytes)) or not isinstance(eps_values, Iterable):
            raise TypeError(f"delta_curve: expected a list of eps values, got {eps_values!r}")
        eps_list = list(eps_values)
        fracs = []
        for i, e in enumerate(eps_list):
            f = _parse_exact(e, f"eps[{i}]")
            if f < 0:
                raise ValueError(f"eps[{i}]: must be >= 0, got {e!r}")
            fracs.append(f)
        v = self.v_sg
        results: list[Certified | None] = [None] * len(fracs)
        todo = []
        for i, f in enumerate(fracs):
            k1, _ = self._thresholds(f)
            if _log_subgauss_tail(k1, v) < LOG_TAIL_FLOOR:
                results[i] = Certified(_mpf(0), _subgauss_tail_upper(k1, v))
            else:
                todo.append(i)
        scale = 1.0
        extra: list[Certified] = []
        if extra_ks and not todo:
            extra = self._engine_tails(list(extra_ks), list(extra_targets))
        for attempt in range(MAX_REFINEMENTS + 1):
            if not todo:
                break
            ks, targets, info = [], [], []
            for i in todo:
                k1, k2 = self._thresholds(fracs[i])
                ef = _float(fracs[i])
                log_d = self._log_delta_gdp(ef)
                need = min(math.log(tol), math.log(rtol) + log_d) + math.log(scale) - math.log(4)
                need = max(need, math.log(ABS_TARGET_FLOOR))  # δ-level floor (see ABS_TARGET_FLOOR)
                ks += [k1, k2]
                targets += [mpmath.exp(need), mpmath.exp(need - ef)]
                info.append((i, k1, k2, need))
            if attempt == 0 and extra_ks:
                tails = self._engine_tails(ks + list(extra_ks), targets + list(extra_targets))
                tails, extra = tails[:len(ks)], tails[len(ks):]
            else:
                tails = self._engine_tails(ks, targets)
            still = []
            for n, (i, k1, k2, need) in enumerate(info):
                t1, t2 = tails[2 * n], tails[2 * n + 1]
                bits = max(_EXACT_BITS, int(-need / math.log(2)) + 64)
                with workprec(bits):
                    e = _frac_arb(fracs[i]).exp()
                    elo, ehi = _arb_lower(e), _arb_upper(e)
                lo = down(t1.lower - up(ehi * t2.upper))
                hi = up(t1.upper - down(elo * t2.lower))
                if hi < 0:
                    raise ArithmeticError(f"delta: certified upper bound {hi} < 0 at eps[{i}] = {eps_list[i]!r}"
                                          " (the tail enclosures are inconsistent)")
                d = Certified(max(lo, _mpf(0)), min(hi, _mpf(1)))
                results[i] = d
                if d.error > min(mpmath.mpf(tol), rtol * d.value):
                    still.append(i)
            if not still or not getattr(self._engine, "improvable", True):
                break
            todo = still
            scale *= 1e-6
        return [d.with_target(tol, rtol) for d in results], extra  # type: ignore[union-attr]

    def delta(self, eps, tol: float = DEFAULT_TOL, rtol: float = DEFAULT_RTOL) -> Certified:
        """Certified δ(ε) = sup_S P(S) − e^ε Q(S) (hockey-stick divergence) of the composition."""
        return self.delta_curve([eps], tol, rtol)[0]

    def epsilon(self, delta, tol: float = 1e-12, delta_tol: float = DEFAULT_TOL) -> EpsilonResult:
        """Smallest ε (to within ``tol``·max(1, ε)) with certified δ(ε) ≤ ``delta``.

        Returned on the safe side: ``result.value`` certainly satisfies δ(value) ≤ delta, and
        ``result.lower`` (when not ``None``) certainly violates it; ``result.tolerance_met``
        says whether the bracket is as narrow as ``tol`` asks.
        """
        target = _parse_exact(delta, "delta")
        if not (0 < target < 1):
            raise ValueError(f"delta: must be in (0, 1), got {delta!r}")
        if not (isinstance(tol, (int, float)) and tol > 0 and math.isfinite(tol)):
            raise ValueError(f"epsilon: tol must be a finite number > 0, got {tol!r}")
        # the search's own arithmetic runs at a precision set here (not the caller's global one)
        with mpmath.workdps(max(30, int(-math.log10(tol)) + 15)):
            return self._epsilon(target, delta, tol, delta_tol)

    def _epsilon(self, target: Fraction, delta, tol: float, delta_tol: float) -> EpsilonResult:
        tgt_lo, tgt_hi = _frac_bounds(target)  # tgt_lo ≤ δ_target ≤ tgt_hi

        def dlt(e):
            return self.delta(e, tol=delta_tol)

        def below(d: Certified) -> bool:  # δ ≤ target, certainly
            return bool(d.upper <= tgt_lo)

        def above(d: Certified) -> bool:  # δ > target, certainly
            return bool(d.lower > tgt_hi)

        d0 = dlt(0)
        if below(d0):  # ε(δ) = 0
            return EpsilonResult(value=mpmath.mpf(0), lower=None, delta_at_value=d0, tol=tol)
        ltgt = float(mpmath.log(tgt_lo))
        # surrogate start: solve log δ_GDP(ε) = log target by bisection in floats
        lo_f, hi_f = 0.0, 1.0
        while self._log_delta_gdp(hi_f) > ltgt:
            hi_f *= 2
            if hi_f > 1e300:
                raise ValueError(f"epsilon: delta {delta!r} too small to bracket")
        for _ in range(100):
            mid = (lo_f + hi_f) / 2
            if self._log_delta_gdp(mid) > ltgt:
                lo_f = mid
            else:
                hi_f = mid
        guess = mpmath.mpf(hi_f)
        # bracket with certified values: δ(lo) > target (or lo = 0), δ(hi) ≤ target
        step = mpmath.mpf(max(1e-3, 1e-3 * float(guess)))
        lo, hi = max(guess - step, mpmath.mpf(0)), guess + step
        d_lo = d0 if lo == 0 else dlt(lo)
        d_hi = dlt(hi)
        for _ in range(60):
            if above(d_lo) or lo == 0:
                break
            step *= 4
            lo = max(mpmath.mpf(0), lo - step)
            d_lo = d0 if lo == 0 else dlt(lo)
        for _ in range(200):
            if below(d_hi):
                break
            step *= 4
            hi = hi + step
            d_hi = dlt(hi)
        if not below(d_hi):
            raise ArithmeticError(f"epsilon: could not certify delta <= {delta}")
        lo_ok = above(d_lo)  # else lo = 0 and δ(0) is not certainly above the target

        def logd(d: Certified):
            return mpmath.log(d.value) - mpmath.log(tgt_lo) if d.value > 0 else None

        # Illinois regula falsi on log δ, keeping certified bracket ends
        f_lo = logd(d_lo) if d_lo.value > 0 else mpmath.mpf(1)
        f_hi = logd(d_hi) if d_hi.value > 0 else mpmath.mpf(-1)
        side = 0
        for _ in range(200):
            if hi - lo <= tol * max(1, abs(hi)):
                break
            x = hi - f_hi * (hi - lo) / (f_hi - f_lo) if f_hi != f_lo else (lo + hi) / 2
            width = hi - lo
            if not (lo < x < hi) or min(x - lo, hi - x) < width * 1e-3:
                x = (lo + hi) / 2 if not (lo < x < hi) else x
                x = min(max(x, lo + width * 1e-3), hi - width * 1e-3)  # keep progress
            d = dlt(x)
            fx = logd(d) if d.value > 0 else -mpmath.mpf(1)
            if below(d):
                hi, d_hi, f_hi = x, d, fx
                if side == 1:
                    f_lo /= 2
                side = 1
            elif above(d):
                lo, d_lo, f_lo, lo_ok = x, d, fx, True
                if side == -1:
                    f_hi /= 2
                side = -1
            else:  # target inside the certified interval: cannot separate further
                break
        return EpsilonResult(value=hi, lower=lo if lo_ok else None, delta_at_value=d_hi, tol=tol)

    # ------------------------------------------------------------------ f-DP
    def _default_zeta_max(self, tol: float) -> int:
        sd = math.sqrt(float(self._engine.v_sg))
        U = sd * math.sqrt(2 * math.log(8 / tol))
        return max(1, math.ceil(U / float(self.lattice.c)))

    def tradeoff_curve(
        self, zeta: Iterable | None = None, n: int = 901, zeta_max: float | None = None, tol: float = DEFAULT_TRADEOFF_TOL
    ) -> TradeoffCurve:
        """Exact trade-off curve vertices at thresholds ζ₀.

        For each ζ₀ the vertex k = ⌈(ζ₀ + 1)·C⌉ is used: α = P[Y ≥ k], β = P[Y ≥ 2C + 1 − k];
        both are points of the exact Neyman–Pearson curve.  Default grid: ``n`` evenly spaced
        lattice thresholds k_i = k_0 + i·Δ, Δ ≈ 2ζmax·C/(n − 1) (so ζ runs over about
        [−ζmax, ζmax]), ζ_i = k_i/C − 1 (reported rounded to float; ``k`` is exact), placed
        symmetrically about C + 1/2 (:func:`_symmetric_grid`) so that the β thresholds
        2C + 1 − k_i are grid points too (n or n + 1 distinct tails, not 2n).  The thresholds
        form arithmetic progressions, which the tail engine sums by one DFT per tilt group
        (:mod:`accountant.quadrature`).
        """
        _check_tol(tol, 1.0)
        zeta, ks, all_k = self._tradeoff_thresholds(zeta, n, zeta_max, tol)
        tails = [c.with_target(tol) for c in self._engine_tails(all_k, [tol] * len(all_k))]
        return self._tradeoff_from(zeta, ks, dict(zip(all_k, tails)))

    def _tradeoff_thresholds(self, zeta, n, zeta_max, tol) -> tuple[list[float], list[int], list[int]]:
        """(ζ grid, vertex thresholds k, all distinct tail thresholds incl. 2C + 1 − k)."""
        C = self.lattice.c
        two_c = self.lattice.two_c
        if zeta is None:
            if not isinstance(n, int) or n < 2:
                raise ValueError(f"tradeoff_curve: n must be an int >= 2, got {n!r}")
            zm = Fraction(self._default_zeta_max(tol)) if zeta_max is None else _parse_exact(zeta_max, "zeta_max")
            if not zm > 0:
                raise ValueError(f"tradeoff_curve: zeta_max must be > 0, got {zeta_max!r}")
            # at most one vertex per lattice point: when [−ζmax, ζmax] holds fewer than n lattice
            # thresholds (small C), take each of them once instead of stretching the grid
            n = min(n, max(2, math.floor(2 * zm * C) + 1))
            ks = _symmetric_grid(two_c, n, 2 * zm * C / (n - 1))
            zeta = [(2 * k - two_c) / two_c for k in ks]  # k/C − 1, correctly rounded (int / int)
        else:
            if isinstance(zeta, (str, bytes)) or not isinstance(zeta, Iterable):
                raise TypeError(f"tradeoff_curve: zeta must be a list of numbers, got {zeta!r}")
            zf = [_parse_exact(z, f"zeta[{i}]") for i, z in enumerate(zeta)]
            if not zf:
                raise ValueError("tradeoff_curve: zeta is empty (give at least one threshold, or None for the default grid)")
            zeta = [float(z) for z in zf]
            ks = [math.ceil((z + 1) * C) for z in zf]
        all_k = sorted(set(ks) | {two_c + 1 - k for k in ks})
        return zeta, ks, all_k

    def _tradeoff_from(self, zeta, ks, vals) -> TradeoffCurve:
        two_c = self.lattice.two_c
        return TradeoffCurve(
            zeta=tuple(zeta),
            k=tuple(ks),
            alpha=tuple(vals[k] for k in ks),
            beta=tuple(vals[two_c + 1 - k] for k in ks),
        )

    def tradeoff(self, alpha, tol: float = DEFAULT_TRADEOFF_TOL, rtol: float = DEFAULT_RTOL) -> Certified:
        """β = T(P, Q)(α): the smallest type-II error at type-I error α (exact, randomised tests).

        Certified for every α ∈ [0, 1], however close to 0 or 1: the bracketing vertices are
        chosen from certified tails (relative precision on the small side) and the bracket is
        verified (:func:`accountant.tradeoff.tradeoff_at`).  Aims at error ≤ tol and ≤ rtol·β.
        """
        a = _parse_exact(alpha, "alpha")
        if not (0 <= a <= 1):
            raise ValueError(f"alpha: must be in [0, 1], got {alpha!r}")
        _check_tol(tol, rtol)
        if a == 0:
            return Certified(1, 1).with_target(tol, rtol)
        if a == 1:
            return Certified(0, 0).with_target(tol, rtol)
        sd = math.sqrt(self._engine.var)
        engine = self._engine
        if split_search_cost(engine) > TRADEOFF_SPLIT_MAX_COST:  # β's search would take minutes
            engine = self._tradeoff_search_engine()
        improvable = getattr(engine, "improvable", True)
        res = None
        for scale in (1.0, 1e-6, 1e-12):
            res, _ = tradeoff_at(a, self.lattice.two_c, sd,
                                 lambda ms, s=scale: self._tails(ms, tol * s / 4, rtol * s / 4, engine))
            res = res.with_target(tol, rtol)
            if res.tolerance_met or not improvable:
                break
        return res


def _symmetric_grid(two_c: int, n: int, step) -> list[int]:
    """``n`` thresholds k_i = k_0 + i·Δ, Δ ≥ 1 an integer near ``step``, such that the
    progression (extended by one point when n·parity requires it) is symmetric about C + 1/2:
    {2C + 1 − k_i} ⊆ {k_0, …, k_n}.

    Symmetry needs 2k_0 + (m − 1)Δ = 2C + 1 for the m = n (or n + 1) points, i.e. an even
    2C + 1 − (m − 1)Δ: with n odd and 2C even the n + 1 point progression with Δ odd is used.

    >>> _symmetric_grid(10, 5, 2)  # 2C + 1 = 11: k ↦ 11 − k maps the grid into itself ∪ {13}
    [-2, 1, 4, 7, 10]
    >>> _symmetric_grid(11, 5, 2)
    [2, 4, 6, 8, 10]
    """
    d0 = max(1, round(step))
    for m in (n, n + 1):
        for d in (d0, d0 + 1, max(1, d0 - 1)):
            if (two_c + 1 - (m - 1) * d) % 2 == 0:
                k0 = (two_c + 1 - (m - 1) * d) // 2
                return [k0 + i * d for i in range(n)]
    raise AssertionError("unreachable: Δ odd always works with n + 1 points")


def _check_tol(tol, rtol):
    if not (isinstance(tol, (int, float)) and tol > 0 and math.isfinite(tol)):
        raise ValueError(f"tol: must be a finite number > 0, got {tol!r}")
    if not (isinstance(rtol, (int, float)) and rtol > 0 and math.isfinite(rtol)):
        raise ValueError(f"rtol: must be a finite number > 0, got {rtol!r}")
