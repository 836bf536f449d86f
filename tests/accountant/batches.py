"""A test helper: count the engine batches of one composition (its ``_delta_curve`` calls, each one batch
of δ thresholds), to check that a search needs fewer of them."""

from __future__ import annotations

from typing import Any


def counted_batches(comp: Any) -> list:
    """Wrap ``comp._delta_curve`` (this instance only) to record the ε list of every call; returns the list
    the calls are appended to (clear it with ``del calls[:]``)."""
    calls: list = []
    real = comp._delta_curve

    def counted(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    comp._delta_curve = counted
    return calls
