"""The weighted-variance objective Σ_q w_q σ_q² = Σ_q w_q / ρ_q and the variance drop against
a baseline.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal, localcontext
from fractions import Fraction
from typing import Any

from optimizer.census.allocation import Allocation


def equal_weights(alloc: Allocation) -> dict[tuple[str, str], Fraction]:
    return {(g, q): Fraction(1) for g, q, _ in alloc.items()}


def _weights(alloc: Allocation, weights: Mapping[tuple[str, str], Any] | None) -> dict[tuple[str, str], float]:
    if weights is None:
        return dict.fromkeys(equal_weights(alloc), 1.0)
    out = {}
    for g, q, _ in alloc.items():
        if (g, q) not in weights:
            raise ValueError(f"weights: no weight for ({g!r}, {q!r})")
        raw = weights[(g, q)]
        try:
            w = float(raw)
        except OverflowError:
            w = math.inf
        if not (w > 0 and math.isfinite(w)):
            try:
                positive = Fraction(raw) > 0
            except (TypeError, ValueError):
                positive = False
            if positive:  # exact weight > 0 that a double cannot hold
                with localcontext() as ctx:
                    ctx.prec = 3
                    shown = Decimal(Fraction(raw).numerator) / Decimal(Fraction(raw).denominator)
                raise ValueError(
                    f"weights: ({g!r}, {q!r}) = {shown} is > 0 but {'over' if w else 'under'}flows "
                    f"to {w} in the objective (double precision); use weights in [1e-100, 1e100]"
                )
            raise ValueError(f"weights: ({g!r}, {q!r}) must be > 0, got {raw!r}")
        out[(g, q)] = w
    extra = set(weights) - set(out)
    if extra:
        raise ValueError(f"weights: unknown measurement(s) {sorted(extra)[:3]}")
    return out


def objective(alloc: Allocation, weights: Mapping[tuple[str, str], Any] | None = None) -> float:
    """Weighted variance Σ_q w_q σ_q² = Σ_q w_q / ρ_q over the nominal measurements."""
    w = _weights(alloc, weights)
    return math.fsum(w[(g, q)] / float(r) for g, q, r in alloc.items())


def variance_drop_percent(new: Allocation, baseline: Allocation, weights=None) -> float:
    """100·(1 − objective(new)/objective(baseline))."""
    return 100.0 * (1.0 - objective(new, weights) / objective(baseline, weights))
