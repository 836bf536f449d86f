"""Rational weights → coprime integer lattice (Bézout), exactly.

For a composition of discrete Gaussian mechanisms with loss weights w_k = s_k/σ_k² (all
rational), the privacy loss under P is ρ + Σ_k w_k X_k with ρ = Σ_k s_k²/(2σ_k²).  With the
scale ``L = lcm(denominators of w) / gcd(numerators of w)`` the integers b_k = L·w_k are coprime
(gcd 1, so Σ b_k Z = Z) and Y = Σ_k b_k X_k is an integer random variable.  Then

* ℓ_P = (Y + C)/L and ℓ_Q = (Y − C)/L in distribution, with C = L·ρ and 2C = Σ_k m_k b_k s_k ∈ Z.

This is the lattice mapping of Su, Su & Wang, arXiv 2606.29835 (docs/method.md §3.1).

>>> from fractions import Fraction as F
>>> lat = Lattice.from_weights([(F(73, 10000), 1, 2), (F(11, 10000), 1, 2)])
>>> lat.scale, lat.weights, lat.two_c
(Fraction(10000, 1), (73, 11), 168)
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from fractions import Fraction

__all__ = ["Lattice", "LatticeGroup", "sub_gaussian_sd", "sub_gaussian_variance"]


@dataclass(frozen=True, slots=True)
class LatticeGroup:
    """m copies of b·X with X ~ N_Z(0, σ²) (one distinct component of a lattice sum)."""

    sigma2: Fraction
    b: int
    mult: int

    def __hash__(self) -> int:
        # the planner's memo tables hash groups ~10⁶ times per screen of 946 pairs; a Fraction's hash
        # takes a modular inverse each time (its integer parts do not): equal groups hash equal
        return hash((self.sigma2.numerator, self.sigma2.denominator, self.b, self.mult))


def sub_gaussian_variance(groups: Iterable[LatticeGroup]) -> Fraction:
    """v = Σ m·b²·σ², exactly: the sub-Gaussian variance proxy of Σ b·X (a discrete Gaussian
    N_Z(0, σ²) is sub-Gaussian with proxy σ², Canonne, Kamath & Steinke, arXiv 2004.00010)."""
    return sum((Fraction(g.mult * g.b * g.b) * g.sigma2 for g in groups), Fraction(0))


def sub_gaussian_sd(groups: Iterable[LatticeGroup]) -> float:
    """√(Σ m·b²·σ²) in floats (planning only: node counts, windows, spans)."""
    return math.sqrt(sum(g.mult * g.b * g.b * float(g.sigma2) for g in groups))


@dataclass(frozen=True, slots=True)
class Lattice:
    """Integer lattice representation of a composition's privacy loss.

    Attributes:
        scale: L, with b_k = L·w_k coprime integers.
        weights: b_k per distinct group (same order as the input groups).
        two_c: 2C = 2·L·ρ = Σ m_k b_k s_k (an integer).
    """

    scale: Fraction
    weights: tuple[int, ...]
    two_c: int

    @classmethod
    def from_weights(cls, groups: Iterable[tuple[Fraction, int, int]]) -> Lattice:
        """Build from (w_k, s_k, m_k) triples: loss weight, shift, multiplicity."""
        groups = list(groups)
        if not groups:
            raise ValueError("Lattice.from_weights: empty composition")
        ws = [Fraction(w) for w, _, _ in groups]
        if any(w <= 0 for w in ws):
            raise ValueError(f"Lattice.from_weights: weights must be positive, got {ws}")
        den = math.lcm(*(w.denominator for w in ws))
        num = math.gcd(*(w.numerator for w in ws))
        scale = Fraction(den, num)
        bs = []
        for w in ws:
            b = w * scale
            assert b.denominator == 1
            bs.append(int(b))
        assert math.gcd(*bs) == 1
        two_c = sum(m * b * s for b, (_, s, m) in zip(bs, groups))
        # 2C = 2 L ρ = 2 L Σ m s²/(2σ²) = Σ m s (L s/σ²) = Σ m s b.
        return cls(scale=scale, weights=tuple(bs), two_c=two_c)

    @property
    def c(self) -> Fraction:
        """C = L·ρ (an integer or a half-integer)."""
        return Fraction(self.two_c, 2)
