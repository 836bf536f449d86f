"""Certified sandwich bounds for lattice sums whose exact lattice is too fine.

Some allocations have budgets with many unrelated denominators (the redistricting
persons run: proportions over 4097, 4099, 4102, 241, … times (339/542)²), so the exact
lattice scale reaches ~1e14 and the trapezoid rule would need ~1e15 nodes.  For those we
coarsen the weights: with an integer g, b_k = g·b̂_k + e_k (|e_k| ≤ g/2), Y = g·Ŷ + E with
Ŷ = Σ b̂_k X_k on a lattice g times coarser and E = Σ e_k X_k sub-Gaussian with proxy
v_E = Σ m_k e_k² σ_k².  For any a ≥ 0 (union bounds),

    P[Ŷ ≥ ⌈(k + a)/g⌉] − P[E < −a]  ≤  P[Y ≥ k]  ≤  P[Ŷ ≥ ⌈(k − a)/g⌉] + P[E > a],

with P[E > a] = P[E < −a] ≤ exp(−a²/(2 v_E)).  The Ŷ tails are certified by the exact
engines, so the enclosure is rigorous; its width (≈ the mass of Ŷ in a window of 2a/g
lattice steps, independent of g) is *not* driven below the requested tolerance: results
from this engine are certified but coarser (typically ~1e-4 relative), and say so.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import ClassVar

import mpmath

from .certified import _CTX, Certified, _mpf, ball, down, log_of, mpf_to_arb, up
from .engine import DEFAULT_CONFIG, Engine, EngineConfig, EngineDiagnostics, LatticeGroup, TailStats, stats_diagnostics
from .lattice import sub_gaussian_sd, sub_gaussian_variance

__all__ = ["CoarseEngine", "coarse_divisor", "coarsen", "kept_divisor", "planned_nodes"]


def planned_nodes(groups) -> float:
    """Trapezoid node count 16·(sub-Gaussian standard deviation) of the direct rule (planning)."""
    return 16.0 * sub_gaussian_sd(groups)


def coarse_divisor(groups, target_nodes: float = DEFAULT_CONFIG.coarse_nodes) -> int:
    """g such that the coarsened lattice needs about ``target_nodes`` planned nodes."""
    return max(2, int(planned_nodes(groups) / target_nodes))


def coarsen(groups, g: int):
    """(inner groups of Ŷ' = Ŷ/d, d, v_E) for divisor ``g``: b̂_k = nearest integer to b_k/g,
    d = gcd(b̂), e_k = b_k − g·b̂_k, v_E = Σ m_k e_k² σ_k².  Components whose b̂_k is 0 move
    entirely into E."""
    coarse, v_e = [], Fraction(0)
    for grp in groups:
        bh = (2 * grp.b + g) // (2 * g)  # nearest integer to b/g
        e = grp.b - g * bh
        v_e += Fraction(grp.mult * e * e) * grp.sigma2
        if bh:
            coarse.append((grp, bh))
    if not coarse:
        raise ValueError("CoarseEngine: every weight rounds to zero; composition too small to coarsen")
    d = math.gcd(*(bh for _, bh in coarse))
    return tuple(LatticeGroup(grp.sigma2, bh // d, grp.mult) for grp, bh in coarse), d, v_e


def kept_divisor(groups, kept_target: float, estimate, max_iter: int = 6) -> int:
    """A divisor g whose coarsened lattice keeps about ``kept_target`` trapezoid nodes
    (``estimate(groups)`` is the sieve's planning count, :func:`accountant.sieve.direct_kept_estimate`).

    The sandwich's width shrinks like 1/g·(sd of Y) while the work grows with the *kept*
    nodes, which for weights without common structure are a small fraction of the planned
    ones; so the divisor is fitted to the kept count (deterministically: a fixed sequence of
    estimates), not to the planned count."""
    g_max = max(2, max(grp.b for grp in groups) // 4)
    g = min(g_max, max(2, int(planned_nodes(groups) / (1000 * kept_target))))
    ok = bad = None  # smallest divisor seen within the target, largest seen above it
    for _ in range(max_iter):
        kept = estimate(coarsen(groups, g)[0])
        if kept <= kept_target:
            ok = g if ok is None else min(ok, g)
            if kept >= kept_target / 4 or g == 2:
                break
            nxt = max(2, int(g * max(kept, 1) / kept_target))
        else:
            bad = g if bad is None else max(bad, g)
            if g >= g_max:
                break
            nxt = min(g_max, int(g * min(64.0, max(2.0, 1.5 * kept / kept_target))))
        if ok is not None and bad is not None:
            nxt = int(math.sqrt(ok * bad))
        if nxt == g or (ok is not None and nxt >= ok) or (bad is not None and nxt <= bad):
            break
        g = nxt
    return ok if ok is not None else min(g_max, g * 64)


@dataclass
class CoarseEngine:
    """Tails of Y = g·Ŷ + E from certified tails of Ŷ (see module docstring; an
    :class:`accountant.engine.Engine`, kind ``"coarse"``, never improvable)."""

    name: ClassVar[str] = "coarse"

    inner: Engine  # engine of Ŷ' = Ŷ/d
    g: int
    d: int  # gcd of the coarse weights (Ŷ = d·Ŷ')
    v_e: Fraction
    var: float
    v_sg: Fraction
    improvable: bool = False  # the enclosure width does not shrink with tighter targets
    config: EngineConfig = field(default=DEFAULT_CONFIG, repr=False)

    def __post_init__(self):
        self._batch = None  # (results, targets) of the last tails() call, for diagnostics()

    @classmethod
    def build(
        cls,
        groups,
        make_engine: Callable[..., Engine],
        factor: int = 1,
        divisor: int | None = None,
        config: EngineConfig = DEFAULT_CONFIG,
    ):
        """Coarsen ``groups`` (divisor ``divisor``, default
        ``coarse_divisor(groups, config.coarse_nodes)·factor``) over an exact inner engine built
        by ``make_engine``."""
        g = int(divisor) if divisor is not None else coarse_divisor(groups, config.coarse_nodes) * int(factor)
        inner_groups, d, v_e = coarsen(groups, g)
        inner = make_engine(inner_groups)
        var = sum(grp.mult * grp.b * grp.b * float(grp.sigma2) for grp in groups)
        v_sg = sub_gaussian_variance(groups)
        return cls(inner, g, d, v_e, var, v_sg, config=config)

    @property
    def stats(self) -> TailStats:
        return self.inner.stats

    def diagnostics(self, assess: bool = True) -> EngineDiagnostics:
        """Diagnostics of the last batch: the inner engine's node counts (as :attr:`stats`) and
        its diagnostics (not assessed) in ``parts``."""
        parts = (self.inner.diagnostics(assess=False),)
        return stats_diagnostics(self.name, self.stats, self.improvable, self._batch, assess, parts)

    def tails_ball(self, ks: Sequence[int], abs_targets: Sequence) -> list:
        """:meth:`tails` as Arb balls at the current working precision."""
        return [ball(mpf_to_arb(c.lower), mpf_to_arb(c.upper)) for c in self.tails(ks, abs_targets)]

    def _inner_targets(self, ts: Sequence[int], floor, a: int, scale: int) -> list:
        """Absolute targets of the inner tails P[Ŷ' ≥ t]: ``floor`` (the caller's target / 8), or
        when larger, ``config.coarse_inner_fraction`` of the sandwich width expected there (at
        most ``config.coarse_inner_target_max``; a fraction of 0 always asks for ``floor``).

        The width is the mass of Y in a window of 2(a + g·d) around t·g·d, estimated with a normal
        density of Y's variance (planning only: a wrong estimate changes how much of the
        enclosure is inner error, never its validity).  A sandwich is never driven below its
        width, so inner precision beyond it is wasted work (measured: a three-component
        composition's coarse tail at 1e-41 costs 0.24 s, at 1e-20 0.03 s)."""
        sd = math.sqrt(self.var) if self.var > 0 else 0.0
        frac = self.config.coarse_inner_fraction
        if not sd or a == 0 or frac <= 0:
            return [floor] * len(ts)
        log_floor = log_of(floor)
        log_win = math.log(2 * (a + scale)) - math.log(sd) - 0.5 * math.log(2 * math.pi)
        log_cap = math.log(self.config.coarse_inner_target_max)
        out = []
        for t in ts:
            z = t * scale / sd
            lt = min(log_cap, log_win - 0.5 * z * z + math.log(frac))
            out.append(floor if lt <= log_floor else _mpf(math.exp(lt)))
        return out

    def tails(self, ks: Sequence[int], abs_targets: Sequence) -> list[Certified]:
        ks = [int(k) for k in ks]
        tmin = min(_mpf(t) for t in abs_targets)
        ve = float(self.v_e)
        a = 0
        if ve > 0:
            a = math.ceil(math.sqrt(2 * ve * max(1.0, float(mpmath.log(8 / tmin)))))
        scale = self.g * self.d

        def ceil_div(x: int, y: int) -> int:
            return -((-x) // y)

        ts = sorted({ceil_div(k - a, scale) for k in ks} | {ceil_div(k + a, scale) for k in ks})
        inner = dict(zip(ts, self.inner.tails(ts, self._inner_targets(ts, tmin / 8, a, scale))))
        if ve > 0:
            vv = _mpf(self.v_e.numerator) / self.v_e.denominator
            e_tail = up(_CTX.exp(-(_mpf(a) ** 2) / (2 * vv)))
        else:
            e_tail = _mpf(0)
        out = []
        for k in ks:
            hi = up(inner[ceil_div(k - a, scale)].upper + e_tail)
            lo = down(inner[ceil_div(k + a, scale)].lower - e_tail)
            out.append(Certified(max(lo, _mpf(0)), min(hi, _mpf(1))))
        self._batch = (out, abs_targets)
        return out
