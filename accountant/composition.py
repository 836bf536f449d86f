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

import hashlib
import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from numbers import Real

import mpmath
from flint import arb, fmpq
from scipy.special import log_ndtr, ndtri

from .certified import Certified, down, exact_mpf, mpf_to_arb, up
from .lattice import Lattice
from .mechanism import DiscreteGaussian
from .quadrature import LatticeGroup, TailEngine, log_tail_estimate, workprec
from .coarse import MAX_DIRECT_NODES, CoarseEngine, planned_nodes
from .pmf import PmfEngine, pmf_span
from .sieve import SieveTooWide, direct_kept_estimate
from .split import MAX_PMF_GROUPS, SplitEngine, find_nested, find_split

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
TRADEOFF_DIRECT_LOG_THRESHOLD = -70.0


def make_engine(groups: tuple[LatticeGroup, ...]):
    """The tail engine for a lattice sum: direct trapezoid, or an exact split (accountant.split)."""
    split = find_split(groups)
    if split is None:
        if planned_nodes(groups) > MAX_DIRECT_NODES:
            return CoarseEngine.build(groups, make_engine)
        nested = find_nested(groups, budget=NESTED_MAX_COST) if len(groups) <= NESTED_MAX_GROUPS else None
        if nested is not None and direct_kept_estimate(groups) > NESTED_MIN_KEPT:
            return _build_nested(groups, nested[1])
        return TailEngine(groups)
    A, B, dA, dB = split
    u_groups = tuple(LatticeGroup(g.sigma2, g.b // dA, g.mult) for g in A)
    v_groups = tuple(LatticeGroup(g.sigma2, g.b // dB, g.mult) for g in B)
    v_u = sum(Fraction(g.mult * g.b * g.b) * g.sigma2 for g in u_groups)
    v_engine = _split_part(v_groups) if find_split(v_groups) is None else None
    u_engine = _split_part(u_groups) or TailEngine(u_groups)
    return SplitEngine(u_engine, v_engine or make_engine(v_groups), dA, dB, v_u)


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


def _parse_real(x, name: str) -> arb:
    """A rigorous Arb ball for a user-supplied real (str / int / Fraction / float / mpf)."""
    if isinstance(x, bool):
        raise TypeError(f"{name}: got bool {x!r}")
    with workprec(_EXACT_BITS):
        if isinstance(x, (int, Fraction)):
            f = Fraction(x)
            return arb(fmpq(f.numerator, f.denominator))
        if isinstance(x, str):
            try:
                f = Fraction(x.strip())
            except (ValueError, ZeroDivisionError):
                raise ValueError(f"{name}: cannot parse {x!r} as a real number") from None
            return arb(fmpq(f.numerator, f.denominator))
        if isinstance(x, (float, Real)) or hasattr(x, "_mpf_"):
            m = x if hasattr(x, "_mpf_") else mpmath.mpf(float(x))  # float → mpf is exact
            if not mpmath.isfinite(m):
                raise ValueError(f"{name}: must be finite, got {x!r}")
            return mpf_to_arb(m)
    raise TypeError(f"{name}: expected a real number, got {type(x).__name__} {x!r}")


def _as_mpf(x: arb) -> mpmath.mpf:
    """Exact midpoint of an Arb ball (use on exact balls, or on .lower()/.upper())."""
    man, exp = x.mid().man_exp()
    return exact_mpf(man, exp)


@dataclass(frozen=True, slots=True)
class EpsilonResult:
    """ε(δ) for a target δ, on the safe side.

    Attributes:
        value: an ε with certified δ(value) ≤ target (this is the one to publish).
        lower: an ε with certified δ(lower) > target (so the exact ε(δ) ∈ (lower, value]).
        delta_at_value: the certified δ at ``value``.
    """

    value: mpmath.mpf
    lower: mpmath.mpf
    delta_at_value: Certified

    @property
    def upper(self) -> mpmath.mpf:
        return self.value

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
        self.groups: tuple[tuple[DiscreteGaussian, int], ...] = tuple(sorted(counts.items()))
        self.lattice = Lattice.from_weights([(m.loss_weight, m.shift, c) for m, c in self.groups])
        self._engine = make_engine(
            tuple(LatticeGroup(m.sigma2, b, c) for (m, c), b in zip(self.groups, self.lattice.weights))
        )

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
    def _engine_tails(self, ks, targets) -> list[Certified]:
        """Engine call with fallback: when the exact sieve is too wide for this composition,
        switch (once, for good) to the certified coarse sandwich of :mod:`accountant.coarse`,
        coarsening further if needed."""
        for factor in (1, 16, 256):
            try:
                return self._engine.tails(ks, targets)
            except SieveTooWide:
                groups = self._lattice_groups()
                self._engine = CoarseEngine.build(groups, make_engine, factor=factor)
        return self._engine.tails(ks, targets)

    def _lattice_groups(self) -> tuple[LatticeGroup, ...]:
        return tuple(LatticeGroup(m.sigma2, b, c) for (m, c), b in zip(self.groups, self.lattice.weights))

    def tails(self, ks: Iterable[int], tol: float = DEFAULT_TOL, rtol: float = DEFAULT_RTOL) -> list[Certified]:
        """Certified P[Y ≥ k] for integer thresholds k of the lattice variable Y = Σ b_k X_k.

        Each result has error ≤ tol (absolute) and ≤ rtol·P (relative), so deep tails keep
        their digits.
        """
        ks = list(ks)
        for k in ks:
            if isinstance(k, bool) or not isinstance(k, int):
                raise TypeError(f"tails: thresholds must be ints, got {k!r}")
        _check_tol(tol, rtol)
        scale = 1.0
        out: list[Certified | None] = [None] * len(ks)
        todo = list(range(len(ks)))
        for _ in range(MAX_REFINEMENTS + 1):
            targets = []
            for i in todo:
                k = ks[i]
                lp = log_tail_estimate(self._engine.var, k) if k >= 1 else 0.0
                targets.append(scale * min(tol, mpmath.exp(math.log(rtol) + lp)))
            res = self._engine_tails([ks[i] for i in todo], targets)
            still = []
            for i, c in zip(todo, res):
                out[i] = c
                if c.error > min(mpmath.mpf(tol), rtol * c.value):
                    still.append(i)
            if not still or not getattr(self._engine, "improvable", True):
                break
            todo = still
            scale *= 1e-6
        return out  # type: ignore[return-value]

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

    def _thresholds(self, eps: arb) -> tuple[int, int, float]:
        L = self.lattice.scale
        with workprec(_EXACT_BITS):
            x = eps * arb(fmpq(L.numerator, L.denominator)) - arb(fmpq(self.lattice.two_c, 2))
            k = int(x.mid().floor().unique_fmpz()) + 1
            width = float(x.rad()) / float(L)
        return k, k + self.lattice.two_c, width

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
        if not (tradeoff_tol > 0):
            raise ValueError(f"tradeoff_curve: tol must be > 0, got {tradeoff_tol!r}")
        zeta, ks, all_k = self._tradeoff_thresholds(zeta, n, zeta_max, tradeoff_tol)
        direct = self._direct_tradeoff_engine()
        if direct is not None:
            try:
                tails = direct.tails(all_k, [tradeoff_tol] * len(all_k))
                return self.delta_curve(eps_values, tol, rtol), self._tradeoff_from(zeta, ks, dict(zip(all_k, tails)))
            except SieveTooWide:
                pass
        deltas, tails = self._delta_curve(eps_values, tol, rtol, all_k, [tradeoff_tol] * len(all_k))
        return deltas, self._tradeoff_from(zeta, ks, dict(zip(all_k, tails)))

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
        (absolute targets ``extra_targets``), whose tails are returned second."""
        _check_tol(tol, rtol)
        eps_list = list(eps_values)
        balls = []
        for i, e in enumerate(eps_list):
            b = _parse_real(e, f"eps[{i}]")
            if not (b >= 0):
                raise ValueError(f"eps[{i}]: must be >= 0, got {e!r}")
            balls.append(b)
        scale = 1.0
        results: list[Certified | None] = [None] * len(balls)
        todo = list(range(len(balls)))
        extra: list[Certified] = []
        for attempt in range(MAX_REFINEMENTS + 1):
            ks, targets, info = [], [], []
            for i in todo:
                k1, k2, width = self._thresholds(balls[i])
                ef = float(balls[i].mid())
                log_d = self._log_delta_gdp(ef)
                need = min(math.log(tol), math.log(rtol) + log_d) + math.log(scale) - math.log(4)
                ks += [k1, k2]
                targets += [mpmath.exp(need), mpmath.exp(need - ef)]
                info.append((i, k1, k2, width))
            if attempt == 0 and extra_ks:
                tails = self._engine_tails(ks + list(extra_ks), targets + list(extra_targets))
                tails, extra = tails[:len(ks)], tails[len(ks):]
            else:
                tails = self._engine_tails(ks, targets) if ks else []
            still = []
            for n, (i, k1, k2, width) in enumerate(info):
                t1, t2 = tails[2 * n], tails[2 * n + 1]
                with workprec(_EXACT_BITS):
                    e = balls[i].exp()
                    elo, ehi = _as_mpf(e.lower()), _as_mpf(e.upper())
                slack = mpmath.mpf(2 * width)  # ε-ball straddling an atom (negligible, but counted)
                lo = down(down(t1.lower) - up(ehi * t2.upper) - slack)
                hi = up(up(t1.upper) - down(elo * t2.lower) + slack)
                d = Certified(max(lo, 0), min(hi, 1)) if hi >= 0 else Certified(0, 0)
                results[i] = d
                need_err = min(mpmath.mpf(tol), rtol * d.value)
                if d.error > need_err:
                    still.append(i)
            if not still or not getattr(self._engine, "improvable", True):
                break
            todo = still
            scale *= 1e-6
        return results, extra  # type: ignore[return-value]

    def delta(self, eps, tol: float = DEFAULT_TOL, rtol: float = DEFAULT_RTOL) -> Certified:
        """Certified δ(ε) = sup_S P(S) − e^ε Q(S) (hockey-stick divergence) of the composition."""
        return self.delta_curve([eps], tol, rtol)[0]

    def epsilon(self, delta, tol: float = 1e-12, delta_tol: float = DEFAULT_TOL) -> EpsilonResult:
        """Smallest ε (to within ``tol``·max(1, ε)) with certified δ(ε) ≤ ``delta``.

        Returned on the safe side: ``result.value`` certainly satisfies δ(value) ≤ delta, and
        ``result.lower`` certainly violates it.
        """
        target = _parse_real(delta, "delta")
        if not (target > 0 and target < 1):
            raise ValueError(f"delta: must be in (0, 1), got {delta!r}")
        if not (tol > 0):
            raise ValueError(f"epsilon: tol must be > 0, got {tol!r}")
        tgt = _as_mpf(target)
        ltgt = float(mpmath.log(tgt))
        # surrogate start: solve log δ_GDP(ε) = log target by bisection in floats
        lo_f, hi_f = 0.0, 1.0
        while self._log_delta_gdp(hi_f) > ltgt:
            hi_f *= 2
            if hi_f > 1e7:
                raise ValueError(f"epsilon: delta {delta!r} too small to bracket")
        for _ in range(100):
            mid = (lo_f + hi_f) / 2
            if self._log_delta_gdp(mid) > ltgt:
                lo_f = mid
            else:
                hi_f = mid
        guess = mpmath.mpf(hi_f)

        def dlt(e):
            return self.delta(e, tol=delta_tol)

        # bracket with certified values: d(lo).lower > tgt, d(hi).upper <= tgt
        step = mpmath.mpf(max(1e-3, 1e-3 * float(guess)))
        lo, hi = guess - step, guess + step
        lo = max(lo, mpmath.mpf(0))
        d_lo, d_hi = dlt(lo), dlt(hi)
        for _ in range(60):
            if d_lo.lower > tgt or lo == 0:
                break
            step *= 4
            lo = max(mpmath.mpf(0), lo - step)
            d_lo = dlt(lo)
        for _ in range(60):
            if d_hi.upper <= tgt:
                break
            step *= 4
            hi = hi + step
            d_hi = dlt(hi)
        if not (d_hi.upper <= tgt):
            raise ArithmeticError(f"epsilon: could not certify delta <= {delta}")
        # Illinois regula falsi on log δ, keeping certified bracket ends
        f_lo = mpmath.log(d_lo.value) - mpmath.log(tgt) if d_lo.value > 0 else mpmath.mpf(1)
        f_hi = mpmath.log(d_hi.value) - mpmath.log(tgt)
        side = 0
        for _ in range(200):
            if hi - lo <= tol * max(1, abs(hi)):
                break
            x = hi - f_hi * (hi - lo) / (f_hi - f_lo) if f_hi != f_lo else (lo + hi) / 2
            width = hi - lo
            if not (lo < x < hi) or min(x - lo, hi - x) < width * 1e-3:
                x = (lo + hi) / 2 if not (lo < x < hi) else x
                # keep progress: nudge away from the ends
                x = min(max(x, lo + width * 1e-3), hi - width * 1e-3)
            d = dlt(x)
            fx = mpmath.log(d.value) - mpmath.log(tgt) if d.value > 0 else -mpmath.mpf(1)
            if d.upper <= tgt:
                hi, d_hi, f_hi = x, d, fx
                if side == 1:
                    f_lo /= 2
                side = 1
            elif d.lower > tgt:
                lo, d_lo, f_lo = x, d, fx
                if side == -1:
                    f_hi /= 2
                side = -1
            else:  # target inside the certified interval: cannot separate further
                break
        return EpsilonResult(value=hi, lower=lo, delta_at_value=d_hi)

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
        if not (tol > 0):
            raise ValueError(f"tradeoff_curve: tol must be > 0, got {tol!r}")
        zeta, ks, all_k = self._tradeoff_thresholds(zeta, n, zeta_max, tol)
        return self._tradeoff_from(zeta, ks, dict(zip(all_k, self._engine_tails(all_k, [tol] * len(all_k)))))

    def _tradeoff_thresholds(self, zeta, n, zeta_max, tol) -> tuple[list[float], list[int], list[int]]:
        """(ζ grid, vertex thresholds k, all distinct tail thresholds incl. 2C + 1 − k)."""
        C = self.lattice.c
        two_c = self.lattice.two_c
        if zeta is None:
            if not isinstance(n, int) or n < 2:
                raise ValueError(f"tradeoff_curve: n must be an int >= 2, got {n!r}")
            zm = Fraction(self._default_zeta_max(tol) if zeta_max is None else float(zeta_max))
            if not zm > 0:
                raise ValueError(f"tradeoff_curve: zeta_max must be > 0, got {zeta_max!r}")
            ks = _symmetric_grid(two_c, n, 2 * zm * C / (n - 1))
            zeta = [(2 * k - two_c) / two_c for k in ks]  # k/C − 1, correctly rounded (int / int)
        else:
            zeta = [float(z) for z in zeta]
            ks = [math.ceil((Fraction(z) + 1) * C) for z in zeta]
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

    def tradeoff(self, alpha, tol: float = DEFAULT_TRADEOFF_TOL) -> Certified:
        """β = T(P, Q)(α): the smallest type-II error at type-I error α (exact, randomised tests)."""
        a = _parse_real(alpha, "alpha")
        if not (a >= 0 and a <= 1):
            raise ValueError(f"alpha: must be in [0, 1], got {alpha!r}")
        if not (tol > 0):
            raise ValueError(f"tradeoff: tol must be > 0, got {tol!r}")
        am = _as_mpf(a)
        if am == 0:
            return Certified(1, 1)
        if am == 1:
            return Certified(0, 0)
        two_c = self.lattice.two_c
        sd = math.sqrt(self._engine.var)
        af = float(am)
        z = -float(ndtri(af)) if af > 1e-300 else math.sqrt(2 * math.log(1 / 1e-300))
        k = int(round(z * sd))

        def A(kk: int) -> Certified:
            return self._engine_tails([kk], [tol])[0]

        # find k with α_{k+1} <= α <= α_k  (α_k = P[Y >= k] is non-increasing in k)
        step = max(1, int(sd // 64))
        ak = A(k)
        while ak.upper < am:  # need smaller k
            k -= step
            step *= 2
            ak = A(k)
        hi_k = k
        step = max(1, int(sd // 64))
        k2 = hi_k + step
        a2 = A(k2)
        while a2.lower > am:
            k2 += step
            step *= 2
            a2 = A(k2)
        lo_k, up_k = hi_k, k2  # α_{lo_k} >= α (maybe), α_{up_k} <= α (maybe)
        while up_k - lo_k > 1:
            mid = (lo_k + up_k) // 2
            am_ = A(mid)
            if am_.value >= am:
                lo_k = mid
            else:
                up_k = mid
        k = lo_k
        t = self._engine_tails([k, k + 1, two_c + 1 - k, two_c - k], [tol] * 4)
        ak, ak1, bk, bk1 = t
        # β = β_{k+1} − (α − α_{k+1})·(β_{k+1} − β_k)/(α_k − α_{k+1})  (interval arithmetic)
        zero, one = mpmath.mpf(0), mpmath.mpf(1)
        atom_a_lo = max(down(ak.lower - ak1.upper), zero)
        atom_a_hi = up(ak.upper - ak1.lower)
        atom_b_lo = max(down(bk1.lower - bk.upper), zero)
        atom_b_hi = up(bk1.upper - bk.lower)
        num_lo = max(down(am - ak1.upper), zero)
        num_hi = max(up(am - ak1.lower), zero)
        t_lo = min(down(num_lo / atom_a_hi), one) if atom_a_hi > 0 else zero
        t_hi = min(up(num_hi / atom_a_lo), one) if atom_a_lo > 0 else one
        beta_lo = down(bk1.lower - up(t_hi * atom_b_hi))
        beta_hi = up(bk1.upper - down(t_lo * atom_b_lo))
        return Certified(max(beta_lo, 0), min(beta_hi, 1))


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
