"""A proposal whose every pair the exact engines certify, before its all-pairs sweep (issue 35, item 1).

:func:`exact_shape` takes the optimized allocation's shape (the convex optimum on the proposal grid,
before its calibration) and the pairs the exactness screen (:func:`optimizer.jobs.exactness.screen_pairs`,
nothing integrated) planned on the coarse sandwich, and moves one level-total unit between geolevels
(:func:`optimizer.search.exact_moves.exact_moves`) until they are exact, at most :data:`MAX_MOVES` times and
within :data:`optimizer.search.exact_moves.MOVE_TOL` of the objective in all.  After each move the rows
of every pair that was not exact are screened again (a move can push another pair of those rows over).
The pipeline then calibrates the moved shape at the first's proxy δ and sweeps it; the sweep screens
every pair of what it confirms and reports any that are still not exact — this is an effort to avoid
the sandwich, never a claim that it was avoided.

It runs once, on the shape about to be swept (not on every solve of the calibration: measured on the
default demo, screening each of the watch's re-solves took 286 s against 269 s once before the sweep,
for the same outcome); when the screen finds every pair exact it costs nothing, since the sweep's own screen of
the same allocation is remembered (:func:`optimizer.jobs.exactness.screen_pairs`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from fractions import Fraction
from typing import Any

from optimizer.census.allocation import Allocation
from optimizer.jobs.confirm import paths_of
from optimizer.jobs.exactness import screen_pairs
from optimizer.search.exact_moves import MOVE_TOL, exact_moves

__all__ = ["MAX_MOVES", "exact_shape"]

Pair = tuple[int, int]
#: moves made in a row on one shape (each fixes the pairs the last left; a new pair may appear)
MAX_MOVES = 3


def _not_exact(alloc: Allocation, pairs: Collection[Pair]) -> set[Pair]:
    return {p.pair for p in screen_pairs(alloc, pairs=pairs).not_exact}


def exact_shape(
    shape: Allocation,
    bad: Collection[Pair],
    value: Callable[[Allocation], Any],
    lower: Mapping[tuple[str, str], Fraction] | None,
    log: Callable[[str], None],
    *,
    tol: float = MOVE_TOL,
) -> tuple[Allocation, tuple[Pair, ...]]:
    """``shape`` moved so that the pairs ``bad`` (and the other pairs of their rows) are exact:
    ``(shape, pairs still not exact among those screened)``; ``shape`` itself when no move helps.
    Each move is said through ``log`` and appended to the shape's provenance."""
    rows: set[int] = set()
    todo = set(bad)
    spent = 0.0
    for _ in range(MAX_MOVES):
        if not todo:
            break
        moved = exact_moves(shape, _not_exact, todo, value, lower, tol=tol - spent)
        log(f"exact proposals: {moved.describe()}")
        if moved.move is None:
            break
        spent += moved.cost
        rows |= {i for p in todo for i in p}
        shape = Allocation(
            moved.allocation.levels, shape.name, f"{shape.provenance}; then {moved.describe()}", shape.run_type
        )
        indices = [p.index for p in paths_of(shape)]
        todo = _not_exact(shape, {(min(i, j), max(i, j)) for i in rows for j in indices})
    return shape, tuple(sorted(todo))
