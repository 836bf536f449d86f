"""The discrete Gaussian mechanism as a frozen, validated, exact specification.

A :class:`DiscreteGaussian` with variance parameter σ² and integer shift ``s`` stands for the
pair of distributions P = N_Z(0, σ²) and Q = N_Z(s, σ²) on the integers, where
N_Z(μ, σ²)(x) ∝ exp(−(x − μ)²/(2σ²)) (Canonne, Kamath & Steinke, arXiv 2004.00010).
Its privacy-loss random variable is affine in a discrete Gaussian: under P,
log P(X)/Q(X) has the law of  s²/(2σ²) + (s/σ²)·X  with X ~ N_Z(0, σ²).

Census convention (arXiv 2410.09296, 2606.29835): a query with zCDP budget ρ_q is answered
with σ_q² = 1/ρ_q (replace-one neighbours, squared ℓ2 sensitivity 2); one record moving out
of (or into) a cell is a unit shift, so :meth:`DiscreteGaussian.from_rho` builds the unit-shift
mechanism whose own zCDP parameter is ρ_q/2.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from .exact import ExactLike, from_float, to_fraction

__all__ = ["DiscreteGaussian"]


@dataclass(frozen=True, slots=True, order=True)
class DiscreteGaussian:
    """Unit-shift (or integer-shift) discrete Gaussian mechanism.

    Args:
        sigma2: the scale parameter σ² of N_Z(0, σ²), exact (int, Fraction or string such as
            ``"10000/73"``). Must be finite and > 0.
        shift: the integer shift s between the two hypotheses (the ℓ1 change of one cell).

    >>> DiscreteGaussian("10000/73").zcdp_rho
    Fraction(73, 20000)
    >>> DiscreteGaussian.from_rho("73/10000") == DiscreteGaussian(Fraction(10000, 73))
    True
    >>> DiscreteGaussian(0)
    Traceback (most recent call last):
    ...
    ValueError: DiscreteGaussian: sigma2 must be > 0, got 0
    """

    sigma2: Fraction
    shift: int = 1

    def __init__(self, sigma2: ExactLike, shift: int = 1):
        try:
            s2 = to_fraction(sigma2, name="DiscreteGaussian: sigma2")
        except (TypeError, ValueError):
            raise
        if s2 <= 0:
            raise ValueError(f"DiscreteGaussian: sigma2 must be > 0, got {sigma2}")
        if isinstance(shift, bool) or not isinstance(shift, int):
            raise TypeError(f"DiscreteGaussian: shift must be an int, got {type(shift).__name__} {shift!r}")
        if shift == 0:
            raise ValueError("DiscreteGaussian: shift must be a non-zero integer, got 0")
        object.__setattr__(self, "sigma2", s2)
        object.__setattr__(self, "shift", abs(shift))

    @classmethod
    def from_rho(cls, rho: ExactLike, shift: int = 1) -> DiscreteGaussian:
        """Census convention σ² = 1/ρ for a query with budget ρ (replace-one, Δ₂² = 2)."""
        r = to_fraction(rho, name="DiscreteGaussian.from_rho: rho")
        if r <= 0:
            raise ValueError(f"DiscreteGaussian.from_rho: rho must be > 0, got {rho}")
        return cls(1 / r, shift)

    @classmethod
    def from_float_sigma2(cls, sigma2: float, rounding: str, shift: int = 1) -> DiscreteGaussian:
        """Build from a float σ², rounding it 'up' (more noise, the safe side) or 'down'."""
        return cls(from_float(sigma2, rounding, name="DiscreteGaussian: sigma2"), shift)

    @property
    def zcdp_rho(self) -> Fraction:
        """zCDP parameter s²/(2σ²) of this mechanism (Bun & Steinke, arXiv 1605.02065)."""
        return Fraction(self.shift * self.shift) / (2 * self.sigma2)

    @property
    def loss_weight(self) -> Fraction:
        """Coefficient w = s/σ² of X in the privacy-loss variable s²/(2σ²) + w·X."""
        return Fraction(self.shift) / self.sigma2

    def __repr__(self) -> str:
        shift = "" if self.shift == 1 else f", shift={self.shift}"
        return f"DiscreteGaussian('{self.sigma2}'{shift})"
