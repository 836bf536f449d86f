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

The tails P[Y ≥ k] come from the engines of :mod:`accountant.engine`, chosen by
:mod:`accountant.choose` under the composition's :class:`~accountant.engine.EngineConfig`;
every result carries the :class:`~accountant.engine.EngineDiagnostics` of its engine batch.
"""

from __future__ import annotations

import functools
import hashlib
import itertools
import math
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from numbers import Real

import mpmath
from flint import arb, fmpq
from scipy.special import log_ndtr

from .certified import Certified, _mpf, down, exact_mpf, up
from .choose import EngineChooser, EnginePlan, plan_engine, plan_exactness
from .engine import (
    BOUND_DIAGNOSTICS,
    DEFAULT_CONFIG,
    EXHAUSTIVE_CONFIG,
    Engine,
    EngineConfig,
    EngineDiagnostics,
    LatticeGroup,
)
from .exact import cut, to_fraction
from .lattice import Lattice
from .mechanism import DiscreteGaussian
from .quadrature import log_tail_estimate, workprec
from .serial import serialized
from .sieve import SieveTooWide
from .tolerance import DELTA, EPSILON_RELATIVE, TRADEOFF, Tolerance
from .tradeoff import tradeoff_at

__all__ = [
    "DEFAULT_RTOL",
    "DEFAULT_TOL",
    "Composition",
    "EpsilonResult",
    "TradeoffCurve",
    "engine_plan",
    "thorough_composition",
]

#: default absolute error tolerance of reported probabilities (:data:`accountant.tolerance.DELTA`).
DEFAULT_TOL = DELTA.absolute
#: default relative error tolerance; δ keeps 20 correct digits even when δ ≪ tol.
DEFAULT_RTOL = DELTA.relative
#: default tolerance of trade-off curves (:data:`accountant.tolerance.TRADEOFF`).
DEFAULT_TRADEOFF_TOL = TRADEOFF.absolute
#: retries with tightened internal targets when a result misses its tolerance.
MAX_REFINEMENTS = 3
#: ε(δ): recomputations (each at 1e-10 of the previous targets) of a δ whose interval straddles
#: the target, when its engine can tighten it ...
EPSILON_REFINEMENTS = 2
#: ... and, where it cannot, how close (as a fraction of the band of ε it cannot separate) the
#: bracket's ends are brought to that band.
EPSILON_BAND_FRACTION = 1e-3
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
#: certified tails P[Y ≥ k] a composition keeps, by threshold, from its δ batches: a caller's ε hint
#: (:meth:`Composition.epsilon`'s ``near``) at ε it has already asked δ for is checked from them,
#: with no new integration (any certified enclosure decides "certainly above / below the target").
TAIL_MEMO_SIZE = 4096
#: the ε search steps to the lattice-cell root of its last probe (a Newton step in e^ε) at most this
#: many times before it keeps to regula falsi alone.
EPSILON_CELL_STEPS = 4
#: a hinted bracket's end starts the cell steps only when its δ is within this of the target in log
#: (a factor 1.1); farther, the first probe interpolates the hints instead.
CELL_STEP_LOG_REACH = 0.1
#: supported range of σ² (exact rationals): outside it the engines' planning (floats) and theta
#: evaluations are not validated; compositions are refused up front with this range named.
SIGMA2_MIN = Fraction(1, 10**4)
SIGMA2_MAX = Fraction(10**12)
#: most mechanisms (with multiplicity) in one composition.
MAX_COMPONENTS = 10**6
#: the largest ε accepted: beyond it the exact thresholds ⌈ε·L⌉ are integers of thousands of
#: digits, while δ(ε) is already below 10^(−10^900) for every supported composition (the bound
#: e^(−k²/(2v)) with σ² ≤ 10^12 and at most MAX_COMPONENTS components)
EPS_MAX_DIGITS = 1000
EPS_MAX = Fraction(10**EPS_MAX_DIGITS)
#: the largest binary exponent of an mpmath/float ε or α turned into an exact Fraction
MAX_BINARY_EXPONENT = 10**6
# The engine-choice switches (which engine answers, and when) are the fields of
# accountant.engine.EngineConfig; the choice itself is made in accountant.choose.

_ENGINE_TARGET_MIN = mpmath.mpf(10) ** ENGINE_TARGET_MIN_LOG10


def _short(x: Fraction) -> str:
    """A Fraction for an error message: exact when short, else a 6-digit decimal."""
    t = str(x)
    return (
        t
        if len(t) <= 24
        else f"{float(x):.6g}"
        if math.isfinite(_float(x))
        else f"~1e{len(str(x.numerator)) - len(str(x.denominator))}"
    )


class _Batches:
    """The engine batches of one public call, for the diagnostics attached to its results."""

    __slots__ = ("count", "last")

    def __init__(self):
        self.count = 0
        self.last: EngineDiagnostics | None = None

    def add(self, diag: EngineDiagnostics) -> EngineDiagnostics:
        self.count += 1
        self.last = diag
        return diag

    def final(self, diag: EngineDiagnostics | None = None) -> EngineDiagnostics:
        """``diag`` (default: the last batch's) with the call's batch count; the bound's
        diagnostics when no batch ran."""
        d = self.last if diag is None else diag
        if d is None or d is BOUND_DIAGNOSTICS:
            return BOUND_DIAGNOSTICS
        return replace(d, batches=self.count)


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
        if abs(exp) > MAX_BINARY_EXPONENT:
            raise ValueError(f"{name}: the binary exponent of {cut(repr(x))} is beyond ±{MAX_BINARY_EXPONENT}")
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


def _mpf_fraction(x: mpmath.mpf) -> Fraction:
    """The exact value of a finite mpf."""
    man, exp = x.man_exp
    return Fraction(int(man)) * Fraction(2) ** int(exp)


def _mpf_arb(x: mpmath.mpf) -> arb:
    """An Arb ball enclosing the mpf ``x`` (exactly, at the current precision's rounding)."""
    return _frac_arb(_mpf_fraction(x))


def _arb_lower(x: arb) -> mpmath.mpf:
    """The lower end of an Arb ball as an exact mpf."""
    man, exp = x.lower().mid().man_exp()
    return exact_mpf(int(man), int(exp))


def _arb_upper(x: arb) -> mpmath.mpf:
    """The upper end of an Arb ball as an exact mpf."""
    man, exp = x.upper().mid().man_exp()
    return exact_mpf(int(man), int(exp))


@dataclass(frozen=True, slots=True)
class EpsilonResult:
    """ε(δ) for a target δ, on the safe side.

    Attributes:
        value: an ε with certified δ(value) ≤ target (this is the one to publish).
        lower: an ε with certified δ(lower) > target, so the exact ε(δ) ∈ (lower, value];
            ``None`` when no such ε was certified (e.g. δ(0) ≤ target, where ε(δ) = 0 = value).
        delta_at_value: the certified δ at ``value`` (its ``diagnostics`` say which engine
            computed it; also :attr:`diagnostics`).
        tol: the requested relative accuracy: value − lower ≤ tol·max(1, value).

    The bracket is refined until it is that narrow or until no δ interval can separate the
    target any further (an engine whose enclosures do not shrink with the request, such as the
    coarse sandwich, has a band of ε whose δ intervals all contain the target); then
    :attr:`tolerance_met` is False and :attr:`relative_width` says how loose ``value`` may be.
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

    @property
    def relative_width(self) -> mpmath.mpf:
        """(value − lower)/max(1, value), the bracket's width on the scale of :attr:`tol`
        (``lower = None`` counts as 0): the exact ε(δ) is at most this much (relative to
        max(1, ε)) below ``value``.  :attr:`tolerance_met` is ``relative_width ≤ tol`` (or
        ε = 0 certified)."""
        lo = mpmath.mpf(0) if self.lower is None else self.lower
        return (self.value - lo) / max(1, abs(self.value))

    @property
    def diagnostics(self) -> EngineDiagnostics | None:
        """The engine diagnostics of the δ evaluation at ``value``."""
        return self.delta_at_value.diagnostics

    def __float__(self) -> float:
        return float(self.value)


@dataclass(frozen=True, slots=True)
class TradeoffCurve:
    """Vertices of the exact trade-off curve at lattice thresholds.

    ``alpha[i] = P[Y ≥ k[i]]`` (type-I error) and ``beta[i] = P[Y ≥ 2C + 1 − k[i]]`` (type-II
    error); ``zeta[i]`` is the normalised threshold of arXiv 2606.29835 (k ≈ (ζ₀ + 1)·C).
    ``diagnostics`` describes the engine batch that computed the vertices (not compared).
    """

    zeta: tuple[float, ...]
    k: tuple[int, ...]
    alpha: tuple[Certified, ...]
    beta: tuple[Certified, ...]
    diagnostics: EngineDiagnostics | None = field(default=None, compare=False, repr=False)

    @property
    def tolerance_met(self) -> bool:
        """Every vertex meets the requested tolerance."""
        return all(c.tolerance_met for c in self.alpha) and all(c.tolerance_met for c in self.beta)


def _counted(mechanisms: Iterable[DiscreteGaussian] | Mapping[DiscreteGaussian, int]) -> Counter:
    """The mechanisms of a composition with their multiplicities, validated (one-line errors)."""
    counts: Counter = Counter()
    items: Iterable[tuple[object, object]]
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
                f"[{SIGMA2_MIN}, {SIGMA2_MAX}] (rho = 1/sigma2 in [1e-12, 1e4])"
            )
    total = sum(counts.values())
    if total > MAX_COMPONENTS:
        raise ValueError(f"Composition: {total} mechanisms exceed the supported {MAX_COMPONENTS}")
    return counts


def engine_plan(
    mechanisms: Iterable[DiscreteGaussian] | Mapping[DiscreteGaussian, int],
    config: EngineConfig = DEFAULT_CONFIG,
    *,
    kinds: bool = True,
) -> EnginePlan:
    """Which engine a :class:`Composition` of ``mechanisms`` would answer with (exact, or the coarse
    sandwich and why), decided by :func:`accountant.choose.plan_engine` on the same lattice groups
    as the composition's, without building the sandwich or computing any tail.  With ``kinds=False``
    the exact engines are not told apart where the direct trapezoid is within reach
    (:func:`accountant.choose.plan_exactness`: the same verdict, several times faster)."""
    counts = _counted(mechanisms)
    groups = tuple(sorted(counts.items()))
    lattice = Lattice.from_weights([(m.loss_weight, m.shift, c) for m, c in groups])
    planner = plan_engine if kinds else plan_exactness
    return planner(tuple(LatticeGroup(m.sigma2, b, c) for (m, c), b in zip(groups, lattice.weights)), config)


def thorough_composition(mechanisms: Iterable[DiscreteGaussian] | Mapping[DiscreteGaussian, int]) -> Composition:
    """A :class:`Composition` with the default engines, or with
    :data:`~accountant.engine.EXHAUSTIVE_CONFIG` where the defaults would answer with the coarse sandwich
    (whose width misses the usual tolerances) and its dearer exact fallbacks reach an exact engine: for a
    certificate worth seconds more per composition (docs/method.md §4.4)."""
    if not isinstance(mechanisms, Mapping):
        mechanisms = list(mechanisms)  # (read twice)
    comp = Composition(mechanisms)
    if comp.engine_kind == "coarse" and engine_plan(mechanisms, EXHAUSTIVE_CONFIG).exact:
        return Composition(mechanisms, EXHAUSTIVE_CONFIG)
    return comp


def _eps_fractions(eps_values) -> tuple[list, list[Fraction]]:
    """The ε values as given and as exact fractions, each checked to lie in [0, 10^EPS_MAX_DIGITS]."""
    if isinstance(eps_values, (str, bytes)) or not isinstance(eps_values, Iterable):
        raise TypeError(f"delta_curve: expected a list of eps values, got {eps_values!r}")
    eps_list = list(eps_values)
    fracs = []
    for i, e in enumerate(eps_list):
        f = _parse_exact(e, f"eps[{i}]")
        if not (0 <= f <= EPS_MAX):
            raise ValueError(f"eps[{i}]: must be in [0, 1e{EPS_MAX_DIGITS}], got {cut(repr(e))}")
        fracs.append(f)
    return eps_list, fracs


def _delta_from_tails(t1: Certified, t2: Certified, eps: Fraction, need: float, where: str) -> Certified:
    """δ(ε) = P[Y ≥ k₁] − e^ε·Q-tail enclosed from the two certified tails, outward, clipped to
    [0, 1]; e^ε is an Arb ball at a precision matched to the target ``need`` (log)."""
    bits = max(_EXACT_BITS, int(-need / math.log(2)) + 64)
    with workprec(bits):
        e = _frac_arb(eps).exp()
        elo, ehi = _arb_lower(e), _arb_upper(e)
    lo = down(t1.lower - up(ehi * t2.upper))
    hi = up(t1.upper - down(elo * t2.lower))
    if hi < 0:
        raise ArithmeticError(
            f"delta: certified upper bound {hi} < 0 at {where} (the tail enclosures are inconsistent)"
        )
    return Certified(max(lo, _mpf(0)), min(hi, _mpf(1)))


def _cell_step(tails: tuple[Certified, Certified], target) -> mpmath.mpf | None:
    """The root of the lattice cell's formula A − e^ε·B = target from the tails' midpoints (a Newton step
    in e^ε: where to probe next, never a certified bound), or ``None`` when it has none."""
    a, b = tails[0].value, tails[1].value
    return mpmath.log((a - target) / b) if b > 0 and a > target else None


def _falsi_point(lo, hi, f_lo, f_hi):
    """Regula falsi's next probe in (lo, hi) on log δ − log target (``f_lo`` > 0 > ``f_hi``), kept at least
    1e-3 of the bracket from either end (progress)."""
    x = hi - f_hi * (hi - lo) / (f_hi - f_lo) if f_hi != f_lo else (lo + hi) / 2
    width = hi - lo
    if not (lo < x < hi) or min(x - lo, hi - x) < width * 1e-3:
        x = (lo + hi) / 2 if not (lo < x < hi) else x
        x = min(max(x, lo + width * 1e-3), hi - width * 1e-3)  # keep progress
    return x


def _bracket(guess, d0: Certified, dlt, below, above):
    """``(lo, δ(lo), hi, δ(hi))`` around ``guess``, widened geometrically until δ(lo) is certainly
    above the target (or lo = 0) and δ(hi) certainly not (the caller checks the second: 200
    widenings may not suffice)."""
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
    return lo, d_lo, hi, d_hi


class Composition:
    """A multiset of discrete Gaussian mechanisms (composition is commutative).

    Args:
        mechanisms: an iterable of :class:`DiscreteGaussian`, or a mapping
            ``{DiscreteGaussian: multiplicity}``.
        config: the engine switches (:class:`~accountant.engine.EngineConfig`; default: the
            measured defaults).  They choose engines and evaluation routes, never what is
            certified.

    Every certified result carries the :class:`~accountant.engine.EngineDiagnostics` of the
    engine batch that produced it (``result.diagnostics``: engine kind, node counts, whether the
    engine met its targets, batches, fallback).

    >>> comp = Composition([DiscreteGaussian.from_rho("73/10000")] * 2)
    >>> comp.rho, comp.size, comp.lattice.weights
    (Fraction(73, 10000), 2, (1,))
    >>> Composition([])
    Traceback (most recent call last):
    ...
    ValueError: Composition: empty composition (no mechanisms)
    """

    def __init__(
        self,
        mechanisms: Iterable[DiscreteGaussian] | Mapping[DiscreteGaussian, int],
        config: EngineConfig = DEFAULT_CONFIG,
    ):
        if not isinstance(config, EngineConfig):
            raise TypeError(f"Composition: config must be an EngineConfig, got {config!r}")
        counts = _counted(mechanisms)
        self.groups: tuple[tuple[DiscreteGaussian, int], ...] = tuple(sorted(counts.items()))
        self.lattice = Lattice.from_weights([(m.loss_weight, m.shift, c) for m, c in self.groups])
        self.config = config
        self._chooser = EngineChooser(self._lattice_groups(), config)
        self._engine: Engine = self._chooser.main
        self._tail_memo: OrderedDict[int, Certified] = OrderedDict()

    def _remember_tails(self, ks: Sequence[int], tails: Sequence[Certified]) -> None:
        """Keep certified tails by threshold (the narrower enclosure when one is already kept; at most
        :data:`TAIL_MEMO_SIZE`, oldest first out)."""
        memo = self._tail_memo
        for k, t in zip(ks, tails):
            old = memo.pop(k, None)
            memo[k] = t if old is None or t.upper - t.lower <= old.upper - old.lower else old
        while len(memo) > TAIL_MEMO_SIZE:
            memo.popitem(last=False)

    # ------------------------------------------------------------------ structure
    @property
    def size(self) -> int:
        return sum(c for _, c in self.groups)

    @functools.cached_property
    def rho(self) -> Fraction:
        """zCDP parameter Σ s²/(2σ²) of the composition (Bun & Steinke arXiv 1605.02065); computed once
        (the ε search's Gaussian-DP guess reads it ~130 times)."""
        return sum((m.zcdp_rho * c for m, c in self.groups), Fraction(0))

    @property
    def mu2(self) -> Fraction:
        """μ² = Σ s²/σ² of the Gaussian-DP surrogate (Dong, Roth & Su arXiv 1905.02383)."""
        return 2 * self.rho

    @property
    def engine_kind(self) -> str:
        """The kind of the composition's own engine (``"pmf"``, ``"split"``, ``"trapezoid"``, or ``"coarse"``
        for the sandwich, whose width does not reach the usual tolerances)."""
        return self._engine.name

    @property
    def stats(self):
        """Node counts of the composition's own engine's last batch (nodes, tilt groups,
        precision; :class:`accountant.engine.TailStats`).  Each result also carries the
        diagnostics of its own batch (``result.diagnostics``)."""
        return self._engine.stats

    def spec_key(self) -> str:
        """A stable hash of the exact multiset (cache key for jobs)."""
        text = ";".join(f"{m.sigma2}|{m.shift}|{c}" for m, c in self.groups)
        return hashlib.sha256(text.encode()).hexdigest()

    def compose(self, other: Composition) -> Composition:
        counts: Counter = Counter(dict(self.groups))
        counts.update(dict(other.groups))
        return Composition(dict(counts), self.config)

    __add__ = compose

    def __eq__(self, other) -> bool:
        return isinstance(other, Composition) and self.groups == other.groups

    def __hash__(self) -> int:
        return hash(self.groups)

    def __repr__(self) -> str:
        return f"Composition({len(self.groups)} distinct, {self.size} mechanisms, rho={self.rho})"

    # ------------------------------------------------------------------ tails
    def _engine_tails(
        self, ks, targets, engine: Engine | None = None, batches: _Batches | None = None
    ) -> tuple[list[Certified], EngineDiagnostics]:
        """One engine batch, and its diagnostics (also recorded in ``batches``), with a per-call
        fallback: when the exact sieve is too wide for these thresholds, this call (only) is
        answered by the certified coarse sandwich of :mod:`accountant.coarse`, coarsening
        further if needed (:meth:`accountant.choose.EngineChooser.fallbacks`; diagnostics flag
        ``fallback``).  The composition's own engine is never replaced, so no call changes the
        results of later calls."""
        targets = [max(_mpf(t), _ENGINE_TARGET_MIN) for t in targets]
        batches = _Batches() if batches is None else batches
        eng = engine or self._engine
        try:
            tails = eng.tails(ks, targets)
        except SieveTooWide:
            pass
        else:
            return tails, batches.add(eng.diagnostics())
        for fallback in self._chooser.fallbacks():
            try:
                tails = fallback.tails(ks, targets)
            except SieveTooWide:
                continue
            return tails, batches.add(replace(fallback.diagnostics(), fallback=True))
        raise SieveTooWide("no engine (exact or coarse) can integrate this composition")

    @property
    def v_sg(self) -> Fraction:
        """Sub-Gaussian variance proxy v = Σ m_k b_k² σ_k² of Y (P[Y ≥ k] ≤ exp(−k²/(2v)))."""
        return sum(
            (Fraction(c * b * b) * m.sigma2 for (m, c), b in zip(self.groups, self.lattice.weights)), Fraction(0)
        )

    def _lattice_groups(self) -> tuple[LatticeGroup, ...]:
        return tuple(LatticeGroup(m.sigma2, b, c) for (m, c), b in zip(self.groups, self.lattice.weights))

    @serialized
    def tails(self, ks: Iterable[int], tol: float = DEFAULT_TOL, rtol: float = DEFAULT_RTOL) -> list[Certified]:
        """Certified P[Y ≥ k] for integer thresholds k of the lattice variable Y = Σ b_k X_k.

        Each result aims at error ≤ tol (absolute) and ≤ rtol·P (relative), so deep tails keep
        their digits, and records the request (:attr:`Certified.tolerance_met`).  Tails whose
        sub-Gaussian bound exp(−k²/(2v)) is below :data:`TAIL_FLOOR` are returned as
        [0, bound] (or [1 − bound, 1] for k ≤ 0) without integration, and absolute targets stop
        at :data:`ABS_TARGET_FLOOR`; such results miss a relative target and say so.
        """
        return self._tails(ks, tol, rtol, None)

    def _tails(
        self, ks: Iterable[int], tol: float, rtol: float, engine: Engine | None, batches: _Batches | None = None
    ) -> list[Certified]:
        """:meth:`tails` on ``engine`` (default: the composition's own); its engine batches are
        counted in ``batches`` (default: a fresh count)."""
        ks = list(ks)
        for k in ks:
            if isinstance(k, bool) or not isinstance(k, int):
                raise TypeError(f"tails: thresholds must be ints, got {k!r}")
        _check_tol(tol, rtol)
        v = self.v_sg
        batches = _Batches() if batches is None else batches
        out: list[Certified | None] = [None] * len(ks)
        diag: list[EngineDiagnostics] = [BOUND_DIAGNOSTICS] * len(ks)
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
            res, d = self._engine_tails([ks[i] for i in todo], targets, engine, batches)
            still = []
            for i, c in zip(todo, res):
                out[i] = c
                diag[i] = d
                if c.error > min(mpmath.mpf(tol), rtol * c.value):
                    still.append(i)
            if not still or not (engine or self._engine).improvable:
                break
            todo = still
            scale *= 1e-6
        final = {id(d): batches.final(d) for d in diag}
        return [c.with_target(tol, rtol, final[id(d)]) for c, d in zip(out, diag)]  # type: ignore[union-attr]

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

    @serialized
    def delta_curve(
        self, eps_values: Iterable, tol: float | Tolerance = DEFAULT_TOL, rtol: float = DEFAULT_RTOL
    ) -> list[Certified]:
        """Certified δ(ε) for each ε; error ≤ tol (absolute) and ≤ rtol·δ (relative).  ``tol`` may be
        a :class:`~accountant.tolerance.Tolerance`, which then gives both (``rtol`` is ignored).

        ``eps`` values may be ints, Fractions, decimal strings (parsed exactly), floats (their
        exact binary value) or mpmath numbers; they must be finite and ≥ 0.
        """
        if isinstance(tol, Tolerance):
            return self._delta_curve(eps_values, tol.absolute, tol.relative)[0]
        return self._delta_curve(eps_values, tol, rtol)[0]

    @serialized
    def delta_and_tradeoff(
        self,
        eps_values: Iterable,
        n: int = 901,
        tol: float = DEFAULT_TOL,
        rtol: float = DEFAULT_RTOL,
        tradeoff_tol: float = DEFAULT_TRADEOFF_TOL,
        zeta: Iterable | None = None,
        zeta_max: float | None = None,
    ) -> tuple[list[Certified], TradeoffCurve]:
        """:meth:`delta_curve` and :meth:`tradeoff_curve` (same arguments, same results) from one
        engine batch: the trade-off thresholds ride along with the (ε, δ) thresholds, sharing their
        nodes, tilt groups and integrand evaluations (the two batches of a pair need almost the
        same N and tilts).  A composition with an exact split engine may send the trade-off
        thresholds to a direct trapezoid instead (:meth:`accountant.choose.EngineChooser.tradeoff_batch`)."""
        _check_tol(tradeoff_tol, 1.0)
        zeta, ks, all_k = self._tradeoff_thresholds(zeta, n, zeta_max, tradeoff_tol)
        direct = self._chooser.tradeoff_batch(self._engine)
        if direct is not None:
            try:
                tails = direct.tails(all_k, [tradeoff_tol] * len(all_k))
                diag = direct.diagnostics()
                tails = [c.with_target(tradeoff_tol, None, diag) for c in tails]
                return self.delta_curve(eps_values, tol, rtol), self._tradeoff_from(
                    zeta, ks, dict(zip(all_k, tails)), diag
                )
            except SieveTooWide:
                pass
        deltas, tails = self._delta_curve(eps_values, tol, rtol, all_k, [tradeoff_tol] * len(all_k))
        tails = [c.with_target(tradeoff_tol) for c in tails]
        return deltas, self._tradeoff_from(zeta, ks, dict(zip(all_k, tails)), tails[0].diagnostics if tails else None)

    def _tail_requests(self, todo, fracs, tol: float, rtol: float, scale: float):
        """The thresholds k₁, k₂ of each ε still to compute and the absolute targets of their tails
        (δ = P[Y ≥ k₁] − e^ε Q[...], each within a quarter of the δ target, × ``scale`` on a retry):
        ``(ks, targets, [(index, k₁, k₂, log target)])``."""
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
        return ks, targets, info

    def _delta_curve(
        self,
        eps_values: Iterable,
        tol: float,
        rtol: float,
        extra_ks: Sequence[int] = (),
        extra_targets: Sequence[float] = (),
        kept_tails: dict[int, tuple[Certified, Certified]] | None = None,
    ) -> tuple[list[Certified], list[Certified]]:
        """:meth:`delta_curve`; the first engine batch also carries the thresholds ``extra_ks``
        (absolute targets ``extra_targets``), whose tails are returned second.

        ε is exact (a Fraction), so the thresholds k₁, k₂ are exact integers; e^ε is an Arb ball
        at a precision matched to the target.  When the sub-Gaussian bound of P[Y ≥ k₁] is below
        :data:`TAIL_FLOOR`, δ(ε) ∈ [0, that bound] is returned at once (no integration; flagged
        by its relative tolerance).  ``kept_tails`` (if given) receives, per ε index, the two
        certified tails (P[Y ≥ k₁], P[Y ≥ k₂]) its δ was computed from (none for the bound)."""
        _check_tol(tol, rtol)
        eps_list, fracs = _eps_fractions(eps_values)
        v = self.v_sg
        batches = _Batches()
        results: list[Certified | None] = [None] * len(fracs)
        diag: list[EngineDiagnostics] = [BOUND_DIAGNOSTICS] * len(fracs)
        todo = []
        for i, f in enumerate(fracs):
            k1, _ = self._thresholds(f)
            if _log_subgauss_tail(k1, v) < LOG_TAIL_FLOOR:
                results[i] = Certified(_mpf(0), _subgauss_tail_upper(k1, v))
            else:
                todo.append(i)
        scale = 1.0
        extra: list[Certified] = []
        extra_diag = BOUND_DIAGNOSTICS
        if extra_ks and not todo:
            extra, extra_diag = self._engine_tails(list(extra_ks), list(extra_targets), None, batches)
        for attempt in range(MAX_REFINEMENTS + 1):
            if not todo:
                break
            ks, targets, info = self._tail_requests(todo, fracs, tol, rtol, scale)
            if attempt == 0 and extra_ks:
                tails, batch_diag = self._engine_tails(
                    ks + list(extra_ks), targets + list(extra_targets), None, batches
                )
                tails, extra, extra_diag = tails[: len(ks)], tails[len(ks) :], batch_diag
            else:
                tails, batch_diag = self._engine_tails(ks, targets, None, batches)
            self._remember_tails(ks, tails[: len(ks)])
            still = []
            for n, (i, _k1, _k2, need) in enumerate(info):
                d = _delta_from_tails(tails[2 * n], tails[2 * n + 1], fracs[i], need, f"eps[{i}] = {eps_list[i]!r}")
                results[i] = d
                if kept_tails is not None:  # ε's two tails, for the ε search's closed form in a lattice cell
                    kept_tails[i] = (tails[2 * n], tails[2 * n + 1])
                diag[i] = batch_diag
                if d.error > min(mpmath.mpf(tol), rtol * d.value):
                    still.append(i)
            if not still or not self._engine.improvable:
                break
            todo = still
            scale *= 1e-6
        final = {id(d): batches.final(d) for d in [*diag, extra_diag]}
        extra = [c.with_diagnostics(final[id(extra_diag)]) for c in extra]
        return [d.with_target(tol, rtol, final[id(g)]) for d, g in zip(results, diag)], extra  # type: ignore[union-attr]

    @serialized
    def delta(self, eps, tol: float | Tolerance = DEFAULT_TOL, rtol: float = DEFAULT_RTOL) -> Certified:
        """Certified δ(ε) = sup_S P(S) − e^ε Q(S) (hockey-stick divergence) of the composition; ``tol``
        absolute and ``rtol`` relative error, or ``tol`` a :class:`~accountant.tolerance.Tolerance`."""
        return self.delta_curve([eps], tol, rtol)[0]

    @serialized
    def epsilon(
        self, delta, tol: float = EPSILON_RELATIVE, delta_tol: float = DEFAULT_TOL, *, near=None
    ) -> EpsilonResult:
        """Smallest ε (to within ``tol``·max(1, ε)) with certified δ(ε) ≤ ``delta``.

        ``near`` = (a, b, …), increasing ε > 0, optionally: ε the caller believes bracket the answer, e.g.
        a δ curve it has just computed (:meth:`epsilon_estimate`'s point among them ends the search in
        closed form when the root shares its lattice cell).  δ at a hint this composition has already
        computed is enclosed again from the tails it keeps (no integration), the rest in one engine
        batch; when two neighbouring hints have δ certainly above ``delta`` and certainly not, the search
        starts from them instead of bracketing from the Gaussian-DP guess; otherwise the hints are
        ignored.  The answer keeps the same contract either way: a hint is never trusted, only checked.

        Returned on the safe side: ``result.value`` certainly satisfies δ(value) ≤ delta, and
        ``result.lower`` (when not ``None``) certainly violates it; ``result.tolerance_met``
        says whether the bracket is as narrow as ``tol`` asks, ``result.relative_width`` how
        narrow it is.  A δ interval that straddles ``delta`` is first recomputed at tighter
        targets; where the engine cannot tighten it (the coarse sandwich), both ends are still
        refined, each up to the band of ε the engine cannot separate.  When a probe lands in the lattice
        cell of the root, δ(ε) = A − e^ε·B there exactly and the search ends in closed form
        (:meth:`_cell_root`; docs/method.md §6.1): a bracket as narrow as the tails are precise.
        """
        target = _parse_exact(delta, "delta")
        if not (0 < target < 1):
            raise ValueError(f"delta: must be in (0, 1), got {delta!r}")
        if not (isinstance(tol, (int, float)) and tol > 0 and math.isfinite(tol)):
            raise ValueError(f"epsilon: tol must be a finite number > 0, got {tol!r}")
        # the search's own arithmetic runs at a precision set here (not the caller's global one)
        with mpmath.workdps(max(30, int(-math.log10(tol)) + 15)):
            return self._epsilon(target, delta, tol, delta_tol, near)

    def epsilon_estimate(self, delta) -> Fraction:
        """An uncertified estimate of ε(δ): where the Gaussian-DP surrogate's δ (μ² = :attr:`mu2`,
        Dong, Roth & Su arXiv 1905.02383) equals ``delta``, as an exact Fraction of a float — the start of
        :meth:`epsilon`'s search.  For a hint (``near``): a caller that asks δ there in a batch it runs
        anyway lets the search end in closed form when the root shares that point's lattice cell
        (the surrogate is within ~1e-11 of ε on the Census proxy pairs, a cell ~1e-6 wide)."""
        target = _parse_exact(delta, "delta")
        if not (0 < target < 1):
            raise ValueError(f"delta: must be in (0, 1), got {delta!r}")
        with mpmath.workdps(30):
            return _mpf_fraction(self._gdp_guess(float(mpmath.log(_frac_bounds(target)[0])), delta))

    def _gdp_guess(self, log_target: float, delta) -> mpmath.mpf:
        """The ε where the Gaussian-DP surrogate's log δ equals ``log_target`` (bisection in
        floats): where the certified search of :meth:`_epsilon` starts."""
        lo_f, hi_f = 0.0, 1.0
        while self._log_delta_gdp(hi_f) > log_target:
            hi_f *= 2
            if hi_f > 1e300:
                raise ValueError(f"epsilon: delta {delta!r} too small to bracket")
        for _ in range(100):
            mid = (lo_f + hi_f) / 2
            if self._log_delta_gdp(mid) > log_target:
                lo_f = mid
            else:
                hi_f = mid
        return mpmath.mpf(hi_f)

    def _refined(self, e, d: Certified, delta_tol: float, below, above) -> Certified:
        """δ(e) recomputed at tighter targets while its interval straddles the target and its
        engine can tighten it (:data:`EPSILON_REFINEMENTS` times, each 1e-10 of the last)."""
        t, r = delta_tol, DEFAULT_RTOL
        for _ in range(EPSILON_REFINEMENTS):
            if below(d) or above(d) or d.diagnostics is None or not d.diagnostics.improvable:
                break
            t, r = t * 1e-10, r * 1e-10
            d = self.delta(e, tol=t, rtol=r)
        return d

    def _epsilon(self, target: Fraction, delta, tol: float, delta_tol: float, near=None) -> EpsilonResult:
        tgt_lo, tgt_hi = _frac_bounds(target)  # tgt_lo ≤ δ_target ≤ tgt_hi

        def dlt(e):
            return self.delta(e, tol=delta_tol)

        def below(d: Certified) -> bool:  # δ ≤ target, certainly
            return bool(d.upper <= tgt_lo)

        def above(d: Certified) -> bool:  # δ > target, certainly
            return bool(d.lower > tgt_hi)

        start = self._start(near, delta, delta_tol, (tgt_lo, tgt_hi), dlt, below, above, tol)
        if isinstance(start, EpsilonResult):
            return start
        lo, d_lo, hi, d_hi, guess = start  # guess: the first probe, when better than regula falsi's
        lo_ok = above(d_lo)  # else lo = 0 and δ(0) is not certainly above the target

        def logd(d: Certified):
            return mpmath.log(d.value) - mpmath.log(tgt_lo) if d.value > 0 else None

        # Illinois regula falsi on log δ, keeping certified bracket ends.  A probe whose δ
        # interval (refined as far as its engine can) straddles the target is on no certain
        # side: from the first one on, the two ends are refined separately by bisection, hi
        # down towards the highest such probe (a_u: not certainly below) and lo up towards the
        # lowest (b_l: not certainly above), one probe per end in each engine batch.  [b_l, a_u]
        # is the band this engine cannot separate; the ends stop within
        # max(tol·max(1, hi), EPSILON_BAND_FRACTION·band) of it.
        f_lo = logd(d_lo) if d_lo.value > 0 else mpmath.mpf(1)
        f_hi = logd(d_hi) if d_hi.value > 0 else mpmath.mpf(-1)
        side = 0
        straddled = False
        a_u, b_l = lo, hi
        cell_steps = 0
        # the interpolated start and the cell steps read the tails' values as the truth: an engine whose
        # enclosures do not shrink (the coarse sandwich) keeps to regula falsi
        exact_tails = self._engine.improvable
        for _ in range(400):
            slack = tol * max(1, abs(hi))
            if not straddled:
                if hi - lo <= slack:
                    break
                use_guess = guess is not None and lo < guess < hi and cell_steps <= EPSILON_CELL_STEPS and exact_tails
                xs = [guess if use_guess else _falsi_point(lo, hi, f_lo, f_hi)]
            else:  # both ends at once, in one engine batch
                slack = max(slack, EPSILON_BAND_FRACTION * max(a_u - max(b_l, lo), 0))
                xs = [(a_u + hi) / 2] if hi - a_u > slack else []
                xs += [(lo + b_l) / 2] if b_l - lo > slack else []
                if not xs:
                    break
            probes, found, guess = self._probe(xs, not straddled, (tgt_lo, tgt_hi), delta_tol, lo, hi)
            if found is not None:  # the root was in this probe's lattice cell: closed form, done
                return EpsilonResult(value=found[0], lower=found[1], delta_at_value=found[2], tol=tol)
            cell_steps += guess is not None
            for x, d in zip(xs, probes):
                d = self._refined(x, d, delta_tol, below, above)
                fx = logd(d) if d.value > 0 else -mpmath.mpf(1)
                if below(d):
                    if x < hi:
                        hi, d_hi, f_hi = x, d, fx
                    b_l = min(b_l, x)
                    if side == 1:
                        f_lo /= 2
                    side = 1
                elif above(d):
                    if x > lo:
                        lo, d_lo, f_lo, lo_ok = x, d, fx, True
                    a_u = max(a_u, x)
                    if side == -1:
                        f_hi /= 2
                    side = -1
                else:  # target inside the certified interval: x is on neither certain side
                    straddled = True
                    a_u, b_l = max(a_u, x), min(b_l, x)
        return EpsilonResult(value=hi, lower=lo if lo_ok else None, delta_at_value=d_hi, tol=tol)

    def _start(self, near, delta, delta_tol: float, target_bounds, dlt, below, above, tol: float):
        """The search's certified bracket ``(lo, δ(lo), hi, δ(hi), first probe or None)``, or its answer
        (an :class:`EpsilonResult`) when that needs no search: from the caller's hints (``near``: the
        bracket two of them give; the answer in closed form when the root shares a bracket end's lattice
        cell; else the first probe from a cell step or their interpolation), else around the Gaussian-DP
        guess (which is then the first probe)."""
        tgt_lo, _ = target_bounds
        if (hinted := self._hinted_bracket(near, delta_tol, below, above)) is not None:
            lo, d_lo, hi, d_hi, samples = hinted
            found, guess = self._from_kept_ends(lo, d_lo, hi, d_hi, target_bounds, delta_tol)
            if found is not None:  # the root shares a hint's lattice cell: closed form, no integration
                return EpsilonResult(value=found[0], lower=found[1], delta_at_value=found[2], tol=tol)
            if guess is None:
                guess = self._interpolated(samples, lo, hi, mpmath.log(tgt_lo))
            return lo, d_lo, hi, d_hi, guess
        d0 = dlt(0)
        if below(d0):  # ε(δ) = 0
            return EpsilonResult(value=mpmath.mpf(0), lower=None, delta_at_value=d0, tol=tol)
        guess = self._gdp_guess(float(mpmath.log(tgt_lo)), delta)
        lo, d_lo, hi, d_hi = _bracket(guess, d0, dlt, below, above)
        if not below(d_hi):
            raise ArithmeticError(f"epsilon: could not certify delta <= {delta}")
        return lo, d_lo, hi, d_hi, guess

    def _hinted_bracket(self, near, delta_tol: float, below, above):
        """``(a, δ(a), b, δ(b), samples)`` when two neighbouring ε of the caller's ``near`` (increasing)
        certainly bracket the target (δ(a) above it, δ(b) not; found by bisection), else ``None``;
        ``samples`` are (ε, certified δ) of the bracket's ends and their outer neighbours, for the first
        probe's interpolation.  δ at a hint comes from tails this composition already holds
        (:meth:`_remember_tails`, enclosed only where the bisection asks), the rest from one engine batch."""
        if near is None:
            return None
        # the hints are the binary numbers δ is computed at (a rounded hint is still a checked one)
        xs = [_mpf(f.numerator) / f.denominator for f in (_parse_exact(x, "near") for x in near)]
        if len(xs) < 2 or not (xs[0] > 0 and all(u < v for u, v in itertools.pairwise(xs))):
            raise ValueError(f"epsilon: near must be two or more increasing ε > 0, got {cut(repr(near))}")
        need = math.log(delta_tol) - 2  # e^ε's precision: as for a δ computed at delta_tol
        fracs = [_mpf_fraction(x) for x in xs]
        kept = [self._kept_tails(f) for f in fracs]
        ds: dict[int, Certified] = {}
        missing = [i for i, t in enumerate(kept) if t is None]
        if missing:
            for i, d in zip(missing, self._delta_curve([xs[i] for i in missing], delta_tol, DEFAULT_RTOL)[0]):
                ds[i] = d

        def d_at(i: int) -> Certified:  # enclosed from kept tails on demand (δ is monotone: few are needed)
            if i not in ds:
                t1, t2 = kept[i]  # type: ignore[misc]
                ds[i] = _delta_from_tails(t1, t2, fracs[i], need, f"near = {xs[i]}")
            return ds[i]

        # the last hint certainly above the target, by bisection (a prefix of the hints is above)
        lo_i, hi_i = -1, len(xs)
        while hi_i - lo_i > 1:
            mid = (lo_i + hi_i) // 2
            lo_i, hi_i = (mid, hi_i) if above(d_at(mid)) else (lo_i, mid)
        if lo_i < 0 or hi_i >= len(xs) or not below(d_at(hi_i)):
            return None
        # the samples for the interpolation: the bracket's ends and their outer neighbours
        samples = [(xs[i], d_at(i)) for i in range(max(0, lo_i - 1), min(len(xs), hi_i + 2))]
        return xs[lo_i], ds[lo_i], xs[hi_i], ds[hi_i], samples

    def _kept_tails(self, eps: Fraction) -> tuple[Certified, Certified] | None:
        """The kept certified tails (P[Y ≥ k₁], P[Y ≥ k₂]) of ``eps``'s thresholds, or ``None``."""
        k1, k2 = self._thresholds(eps)
        t1, t2 = self._tail_memo.get(k1), self._tail_memo.get(k2)
        return None if t1 is None or t2 is None else (t1, t2)

    def _from_kept_ends(self, lo, d_lo, hi, d_hi, target_bounds, delta_tol: float):
        """From the kept tails of a hinted bracket's ends: ``(closed form, None)`` when the root lies in
        one end's lattice cell (:meth:`_cell_root`), else ``(None, the cell step of the end nearer the
        target in log δ, when it lies inside the bracket)``; ``(None, None)`` without kept tails or on an
        engine whose enclosures do not shrink."""
        if not self._engine.improvable:
            return None, None
        tgt_lo, tgt_hi = target_bounds
        steps = []
        for x, d in ((lo, d_lo), (hi, d_hi)):
            f = _mpf_fraction(x)
            if (tails := self._kept_tails(f)) is None:
                continue
            found = self._cell_root(f, tails, tgt_lo, tgt_hi, delta_tol, d, lo, hi)
            if found is not None:
                return found, None
            # a cell step from afar creeps (δ changes by orders of magnitude across the bracket): only
            # from an end whose δ is within CELL_STEP_LOG_REACH of the target in log
            gap = abs(mpmath.log(d.value) - mpmath.log(tgt_lo)) if d.value > 0 else mpmath.inf
            step = _cell_step(tails, tgt_lo)
            if step is not None and gap <= CELL_STEP_LOG_REACH:
                steps.append((gap, step))
        inside = [s for _, s in sorted(steps) if lo < s < hi]
        return None, (inside[0] if inside else None)

    @staticmethod
    def _interpolated(samples, lo, hi, log_target):
        """The ε in (lo, hi) where the quadratic through three samples' log δ (the bracket's ends and the
        nearest other) meets ``log_target`` — log δ(ε) is close to a parabola (Gaussian-like loss) —
        or ``None``.  A guess for the first probe only: it is checked like any probe."""
        pts = [(x, mpmath.log(d.value)) for x, d in samples if d.value > 0]
        if len(pts) < 3:
            return None
        mid = (lo + hi) / 2
        (x0, y0), (x1, y1), (x2, y2) = sorted(sorted(pts, key=lambda p: abs(p[0] - mid))[:3])
        # Newton form of the interpolating quadratic q; solve q(x) = log_target by Newton from mid
        c1 = (y1 - y0) / (x1 - x0)
        c2 = ((y2 - y1) / (x2 - x1) - c1) / (x2 - x0)
        x = mid
        for _ in range(30):
            q = y0 + c1 * (x - x0) + c2 * (x - x0) * (x - x1) - log_target
            dq = c1 + c2 * (2 * x - x0 - x1)
            if dq == 0:
                return None
            step = q / dq
            x -= step
            if abs(step) <= 1e-30 * max(1, abs(x)):
                break
        return x if lo < x < hi else None

    def _probe(self, xs, try_cell: bool, target_bounds, delta_tol: float, lo, hi):
        """Certified δ at the search's probes ``xs`` (one engine batch) and, with ``try_cell``, the
        closed-form root in the first probe's lattice cell (:meth:`_cell_root`) or ``None``, and else the
        root of that cell's formula A − e^ε·B as the next probe (a Newton step in e^ε; ``None`` if none)."""
        kept: dict[int, tuple[Certified, Certified]] = {}
        probes = self._delta_curve(xs, delta_tol, DEFAULT_RTOL, kept_tails=kept)[0]
        if not (try_cell and 0 in kept):
            return probes, None, None
        x = _mpf_fraction(mpmath.mpf(xs[0]))
        tgt_lo, tgt_hi = target_bounds
        found = self._cell_root(x, kept[0], tgt_lo, tgt_hi, delta_tol, probes[0], lo, hi)
        if found is not None:
            return probes, found, None
        return probes, None, _cell_step(kept[0], tgt_lo)

    def _cell_root(self, x: Fraction, tails, tgt_lo, tgt_hi, delta_tol: float, d_x: Certified, lo, hi):
        """ε(δ) in closed form when it lies in the lattice cell of ``x``, else ``None``.

        For every ε of one cell [(k₁ − 1 + C)/L, (k₁ + C)/L) the thresholds (k₁, k₂) are the same,
        so δ(ε) = A − e^ε·B with the constants A = P[Y ≥ k₁], B = P[Y ≥ k₂] (``tails``, certified),
        and δ(ε) = δ* at ε = log((A − δ*)/B).  With Arb's rigorous logarithm: ``value`` = the upper
        end of log((A⁺ − δ*⁻)/B⁻) has δ(value) ≤ A − (A⁺ − δ*⁻) ≤ δ*, and ``lower`` = just below the
        lower end of log((A⁻ − δ*⁺)/B⁺) has δ(lower) > δ*; both must lie in the cell (and in the
        certified bracket (lo, hi]).  Returns ``(value, lower, certified δ(value))``, δ(value) from
        the same tails (no new integration)."""
        t1, t2 = tails
        if not (t2.lower > 0 and t1.lower > tgt_hi and t1.upper > tgt_lo):
            return None
        L, C = self.lattice.scale, self.lattice.c
        k1, _ = self._thresholds(x)
        cell_lo, cell_hi = (k1 - 1 + C) / L, (k1 + C) / L
        with workprec(max(_EXACT_BITS, mpmath.mp.prec + 64)):
            v = (_mpf_arb(t1.upper) - _mpf_arb(tgt_lo)) / _mpf_arb(t2.lower)
            w = (_mpf_arb(t1.lower) - _mpf_arb(tgt_hi)) / _mpf_arb(t2.upper)
            if not (v > 0 and w > 0):
                return None
            value, lower = _arb_upper(v.log()), _arb_lower(w.log())
        lower = down(lower * (1 - mpmath.mpf(2) ** (4 - mpmath.mp.prec)))  # strictly below: δ(lower) > δ*
        # and strictly above: at the exact end of the log's ball the margin δ* − δ(value) is ~1e-77·A, the
        # size of the rounding of e^value below, so the check below failed about half the time
        value = up(value * (1 + mpmath.mpf(2) ** (4 - mpmath.mp.prec)))
        if not (lower > 0 and max(lo, _mpf(cell_lo.numerator) / cell_lo.denominator) < lower):
            return None
        if not (value <= hi and value < _mpf(cell_hi.numerator) / cell_hi.denominator):
            return None
        f_value = _mpf_fraction(value)
        if not (cell_lo <= _mpf_fraction(lower) and f_value < cell_hi and self._thresholds(f_value)[0] == k1):
            return None
        need = math.log(max(float(d_x.value), 1e-300)) + math.log(DEFAULT_RTOL) - 2
        d_value = _delta_from_tails(t1, t2, f_value, need, f"eps = {value}").with_target(
            delta_tol, DEFAULT_RTOL, d_x.diagnostics
        )
        if not d_value.upper <= tgt_lo:  # the enclosure of e^value was a hair too wide: let the search go on
            return None
        return value, lower, d_value

    # ------------------------------------------------------------------ f-DP
    def _default_zeta_max(self, tol: float) -> int:
        sd = math.sqrt(float(self._engine.v_sg))
        U = sd * math.sqrt(2 * math.log(8 / tol))
        return max(1, math.ceil(U / float(self.lattice.c)))

    @serialized
    def tradeoff_curve(
        self,
        zeta: Iterable | None = None,
        n: int = 901,
        zeta_max: float | None = None,
        tol: float = DEFAULT_TRADEOFF_TOL,
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
        tails, diag = self._engine_tails(all_k, [tol] * len(all_k))
        tails = [c.with_target(tol, None, diag) for c in tails]
        return self._tradeoff_from(zeta, ks, dict(zip(all_k, tails)), diag)

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
                raise ValueError(
                    "tradeoff_curve: zeta is empty (give at least one threshold, or None for the default grid)"
                )
            zeta = [float(z) for z in zf]
            ks = [math.ceil((z + 1) * C) for z in zf]
        all_k = sorted(set(ks) | {two_c + 1 - k for k in ks})
        return zeta, ks, all_k

    def _tradeoff_from(self, zeta, ks, vals, diagnostics: EngineDiagnostics | None = None) -> TradeoffCurve:
        two_c = self.lattice.two_c
        return TradeoffCurve(
            zeta=tuple(zeta),
            k=tuple(ks),
            alpha=tuple(vals[k] for k in ks),
            beta=tuple(vals[two_c + 1 - k] for k in ks),
            diagnostics=diagnostics,
        )

    @serialized
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
            return Certified(1, 1).with_target(tol, rtol, BOUND_DIAGNOSTICS)
        if a == 1:
            return Certified(0, 0).with_target(tol, rtol, BOUND_DIAGNOSTICS)
        sd = math.sqrt(self._engine.var)
        # on a costly split chain β's search would take minutes: the chooser picks another engine
        engine = self._chooser.tradeoff_search(self._engine)
        batches = _Batches()
        for scale in (1.0, 1e-6, 1e-12):

            def small_tail(ms: list[int], s: float = scale) -> list[Certified]:
                return self._tails(ms, tol * s / 4, rtol * s / 4, engine, batches)

            res, _ = tradeoff_at(a, self.lattice.two_c, sd, small_tail)
            res = res.with_target(tol, rtol, batches.final())
            if res.tolerance_met or not engine.improvable:
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
