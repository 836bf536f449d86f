"""Requested accuracy of a certified probability: one type, and the project's defaults in one place.

A certified result is an interval [lower, upper] that contains the true value; it *meets* a
:class:`Tolerance` when its width is at most ``absolute`` or at most ``relative`` × its upper end
(the interval is always honest; the tolerance only says how narrow it was asked to be).  The
defaults are those of the 2020 Census accounting (arXiv 2606.29835): δ to 1e-35 absolute — and to
1e-20 relative, so that a δ far below 1e-35 still keeps 20 correct digits — and trade-off curves
to 1e-25.

>>> DELTA
Tolerance(absolute=1e-35, relative=1e-20)
>>> DELTA.met(width=1e-36, value=1e-10)
True
>>> Tolerance(0.5, 2)
Traceback (most recent call last):
...
ValueError: Tolerance: relative must be in (0, 1), got 2
"""

from __future__ import annotations

import math
from dataclasses import dataclass

__all__ = ["DELTA", "EPSILON_RELATIVE", "SEARCH", "TRADEOFF", "Tolerance"]


@dataclass(frozen=True, slots=True)
class Tolerance:
    """Requested accuracy: ``absolute`` error and ``relative`` error (both in (0, 1)); met when the
    interval's width is ≤ ``absolute`` or ≤ ``relative`` × value."""

    absolute: float
    relative: float

    def __post_init__(self):
        for name in ("absolute", "relative"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or not 0 < v < 1:
                raise ValueError(f"Tolerance: {name} must be in (0, 1), got {v!r}")

    def met(self, width: float, value: float) -> bool:
        """Whether an interval of ``width`` around ``value`` meets this tolerance."""
        return width <= self.absolute or width <= self.relative * abs(value)


#: δ(ε) of a release: 1e-35 absolute (arXiv 2606.29835), 1e-20 relative
DELTA = Tolerance(1e-35, 1e-20)
#: trade-off curves β(α): 1e-25 absolute (the paper's), 1e-20 relative
TRADEOFF = Tolerance(1e-25, 1e-20)
#: the optimizer's search over candidate shapes (a final calibration uses :data:`DELTA`)
SEARCH = Tolerance(1e-30, 1e-10)
#: ε(δ): relative accuracy of ε (its δ evaluations use :data:`DELTA`)
EPSILON_RELATIVE = 1e-12
