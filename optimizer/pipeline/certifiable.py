"""Convex optima whose every pair the exact engines certify (issue 35, item 1).

:class:`CertifiableSolve` wraps an objective's ``optimum(total, lower)`` (the shape that
:func:`optimizer.search.guarded.calibrated_optimum` calibrates): each new shape is screened
(:func:`optimizer.jobs.exactness.screen_pairs`, nothing integrated) and, when pairs would need the
coarse sandwich, a level-total unit is moved between geolevels
(:func:`optimizer.search.exact_moves.exact_moves`) until they are exact, at an objective cost of at
most :data:`optimizer.search.exact_moves.MOVE_TOL`.

What is screened: the first shape on all pairs (DHC persons ≈ 15 s on this machine); later shapes
(the calibration's and the watch's re-solves at nearby totals) on the *rows* of the pairs that the
first screen found non-exact or planned on a split — the pairs at the edge of the exact engines —
and of every pair a move fixed, so a re-solve costs seconds, not another full screen.  The
confirmation screens every pair of what it confirms anyway (and reports any that are not exact),
so this is an effort to avoid the sandwich, never a claim that it was avoided.  Shapes are
remembered: the calibration's rounds often solve to the same shape.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from optimizer.census.allocation import Allocation
from optimizer.jobs.confirm import paths_of
from optimizer.jobs.exactness import screen_pairs
from optimizer.search.exact_moves import MOVE_TOL, exact_moves

__all__ = ["CertifiableSolve"]

Pair = tuple[int, int]
#: moves tried in a row on one shape (each fixes the pairs the last left; a new pair may appear)
MAX_MOVES = 3


def _not_exact(alloc: Allocation, pairs: Collection[Pair]) -> set[Pair]:
    return {p.pair for p in screen_pairs(alloc, pairs=pairs).not_exact}


@dataclass
class CertifiableSolve:
    """``solve(total, lower)`` → the objective's optimum, moved so that the screened pairs are exact.

    Attributes:
        optimum: ``optimum(total, lower)`` → a shape on the proposal grid.
        value: the objective of a shape (smaller is better).
        log: where a move (or its failure) is said.
        tol: largest relative objective increase of the moves of one shape.
    """

    optimum: Callable[[Fraction, Mapping[tuple[str, str], Fraction] | None], Allocation]
    value: Callable[[Allocation], Any]
    log: Callable[[str], None]
    tol: float = MOVE_TOL
    rows: set[int] | None = None
    memo: dict[Any, Allocation] = field(default_factory=dict)

    def __call__(self, total: Fraction, lower: Mapping[tuple[str, str], Fraction] | None) -> Allocation:
        shape = self.optimum(total, lower)
        key = shape.levels
        if key not in self.memo:
            self.memo[key] = self._certifiable(shape, lower)
        return self.memo[key]

    def _bad(self, shape: Allocation) -> set[Pair]:
        """The screened pairs of ``shape`` no exact engine will certify."""
        if self.rows is None:
            full = screen_pairs(shape)
            self.rows = {i for p in full.not_exact for i in p.pair} | {i for p in full.edge for i in p}
            return {p.pair for p in full.not_exact}
        if not self.rows:
            return set()
        indices = [p.index for p in paths_of(shape)]
        return _not_exact(shape, {(min(i, j), max(i, j)) for i in self.rows for j in indices})

    def _certifiable(self, shape: Allocation, lower) -> Allocation:
        bad = self._bad(shape)
        spent = 0.0
        for _ in range(MAX_MOVES):
            if not bad:
                break
            moved = exact_moves(shape, _not_exact, bad, self.value, lower, tol=self.tol - spent)
            self.log(f"exact proposals: {moved.describe()}")
            if moved.move is None:
                break
            spent += moved.cost
            assert self.rows is not None
            self.rows |= {i for p in moved.fixed for i in p}
            shape = Allocation(
                moved.allocation.levels,
                shape.name,
                f"{shape.provenance}; then {moved.describe()}",
                shape.run_type,
            )
            bad = self._bad(shape)
        return shape
