"""The sieve: which trapezoid nodes can matter.

The integrand of :mod:`accountant.quadrature` is a product of factors g_k(ζ) = φ_k(b_k ζ)^{m_k},
each bounded by 1 in modulus and peaked at ζ ∈ (2π/b_k)Z.  If for *some* component the node
lies farther than r_k = θ_k/b_k from every peak of that component, then |product| < threshold
(:func:`accountant.theta.peak_halfwidth`), and the node is pruned; the total contribution of all
pruned nodes is bounded in :mod:`accountant.bounds`.

Instead of scanning all N nodes (as in the code of arXiv 2606.29835, §3.5 of our note), we
enumerate *peak windows*: start from the windows of the component with the fewest peaks and
intersect them with the windows of the next component, and so on.  Cost is proportional to
the number of surviving windows, not to N.

Node indices are j ∈ [0, N/2] (ζ_j = 2πj/N); the integrand at −ζ is the complex conjugate of
the integrand at ζ, so the half range suffices.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["SieveComponent", "sieve_nodes"]

#: components whose windows cover more than this fraction of the circle are not used to sieve
#: (they would fragment the window list without pruning much).
MAX_COVERAGE = 0.5


@dataclass(frozen=True, slots=True)
class SieveComponent:
    """A sieving factor: integer weight b and half-width θ_r (in θ = bζ units)."""

    b: int
    halfwidth: float


def sieve_nodes(components: list[SieveComponent], n_nodes: int, max_kept: int = 20_000_000) -> np.ndarray:
    """Indices j ∈ [0, N/2] of nodes ζ_j = 2πj/N that lie in a window of *every* component.

    Args:
        components: sieving components (those for which a finite half-width exists).
        n_nodes: N, the number of trapezoid nodes on [0, 2π).
        max_kept: safety limit; raises ``RuntimeError`` if more nodes would be kept.

    Returns:
        Sorted ``int64`` array of node indices (all of [0, N/2] when nothing sieves).
    """
    N = int(n_nodes)
    half = N // 2
    usable = [c for c in components if c.halfwidth / math.pi <= MAX_COVERAGE]
    usable.sort(key=lambda c: c.b)
    # intervals in node-index units, as (lo, hi) floats; node j kept iff lo <= j <= hi
    intervals: list[tuple[float, float]] = [(0.0, float(half))]
    for comp in usable:
        b = comp.b
        spacing = N / b  # peak spacing in node units
        h = comp.halfwidth * N / (2.0 * math.pi * b)  # half-width in node units
        h = h * (1.0 + 1e-12) + N * 1e-13 + 1e-9  # widen: float rounding keeps more, never fewer
        new: list[tuple[float, float]] = []
        for lo, hi in intervals:
            p_lo = math.ceil((lo - h) / spacing)
            p_hi = math.floor((hi + h) / spacing)
            for p in range(p_lo, p_hi + 1):
                c = p * N / b
                a, z = max(lo, c - h), min(hi, c + h)
                if math.floor(z) >= math.ceil(a):
                    new.append((a, z))
        intervals = new
        if not intervals:
            break
    total = sum(math.floor(z) - math.ceil(a) + 1 for a, z in intervals)
    if total > max_kept:
        raise RuntimeError(f"sieve keeps {total} nodes (> max_kept={max_kept}); composition too wide for the sieve")
    if not intervals:
        return np.zeros(0, dtype=np.int64)
    parts = [np.arange(math.ceil(a), math.floor(z) + 1, dtype=np.int64) for a, z in intervals]
    nodes = np.unique(np.concatenate(parts))
    return nodes[(nodes >= 0) & (nodes <= half)]
