"""A promise that is a whole curve: the zCDP conversion's ε(δ) at every δ of a grid.

A release stated as ρ-zCDP promises, through a conversion (Bun–Steinke, arXiv 1605.02065, or
Canonne–Kamath–Steinke, arXiv 2004.00010), an (ε_k, δ_k) guarantee for *every* δ_k.  Re-tuning
the noise against one point (ε, δ) can break the others: with the uniform rescale of DHC persons
calibrated at δ = 1e-10, the exact δ at ε_BS(1e-15) is above 1e-15.  A :class:`CurveTarget` is
the list of points (ε_k = conversion(ρ, δ_k), δ_k), each a :class:`optimizer.search.Target`;
an allocation keeps it when the certified δ(ε_k) ≤ δ_k for every k on every pair.

:func:`uniform_rescale_curve` gives the largest uniform factor c that keeps every point on the
proxy pair (the minimum over the points of each point's calibrated factor) and the *binding*
δ; :func:`optimizer.jobs.confirm.confirm_curve` checks every point on all pairs (one pair job computes all the points'
δ), recalibrating downwards where a pair exceeds a point, until a round needs no recalibration.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optimizer.census.allocation import Allocation
from optimizer.search import Target, calibrate_shape, target_from_allocation

__all__ = ["CurveRescale", "CurveTarget", "default_curve_deltas", "uniform_rescale_curve"]


def default_curve_deltas() -> tuple[str, ...]:
    """δ = 1e-1, 1e-2, …, 1e-15 (issue 15's grid)."""
    return tuple(f"1e-{k}" for k in range(1, 16))


@dataclass(frozen=True)
class CurveTarget:
    """The points (ε_k, δ_k) of one zCDP promise; ``rho`` is the total zCDP budget promised."""

    rho: Fraction
    conversion: str
    points: tuple[Target, ...]

    @classmethod
    def from_allocation(
        cls, alloc: Allocation, deltas: Sequence[str] | None = None, conversion: str = "bun-steinke"
    ) -> CurveTarget:
        """ε_k = conversion(total ρ of ``alloc``, δ_k) for each δ_k (default :func:`default_curve_deltas`)."""
        ds = tuple(deltas) if deltas is not None else default_curve_deltas()
        if not ds:
            raise ValueError("CurveTarget: no δ given")
        pts = tuple(target_from_allocation(alloc, delta=d, conversion=conversion) for d in ds)
        return cls(alloc.total_rho, conversion, pts)

    def as_dict(self) -> dict[str, Any]:
        return {
            "kind": "curve",
            "rho": str(self.rho),
            "conversion": self.conversion,
            "points": [{"epsilon": t.epsilon, "delta": t.delta} for t in self.points],
        }


@dataclass(frozen=True)
class CurveRescale:
    """The largest uniform factor keeping every point on the proxy pair.

    Attributes:
        c: min over the points of their calibrated factors (exact).
        binding: the point attaining the minimum.
        per_point: ``(point, its own factor c_k)`` for every point.
        allocation: the baseline scaled by ``c``.
    """

    c: Fraction
    binding: Target
    per_point: tuple[tuple[Target, Fraction], ...]
    allocation: Allocation

    @property
    def variance_drop_percent(self) -> float:
        return 100.0 * (1.0 - 1.0 / float(self.c))


def uniform_rescale_curve(alloc: Allocation, curve: CurveTarget) -> CurveRescale:
    """Calibrate the uniform rescale at every point of ``curve`` (proxy pair) and keep the smallest factor."""
    per = tuple((t, calibrate_shape(alloc, t, hint=1.1).c) for t in curve.points)
    binding, c = min(per, key=lambda tc: (tc[1], Fraction(tc[0].delta)))
    return CurveRescale(c, binding, per, alloc.scaled(c))
