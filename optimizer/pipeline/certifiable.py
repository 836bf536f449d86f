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

:class:`CertifiableSolver` applies it where the proposal is made, to every convex solve of a run: the
first is screened on all pairs, the later ones (the watch's re-solves at lowered totals) on the rows of
the pairs the first had on the sandwich.  So the pairs the calibration watches are exact before it weighs
them: a pair watched only for its loose sandwich bound made the watch lower the proxy δ by 1.026 (the
release δ then 9.74e-11 for a promise of 1e-10) and cost it the sandwich's time.  Screening all pairs
of each re-solve took 286 s of the demo against 269 s once (the full screen of a DHC-persons proposal
is ~17 s; its rows' screen ~1 s).  The pipeline still screens every pair of the allocation about to be
swept (:meth:`optimizer.pipeline.stages._Reallocation.exact`); when it finds every pair exact it costs
nothing, since the sweep's own screen of the same allocation is remembered
(:func:`optimizer.jobs.exactness.screen_pairs`).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from optimizer.census.allocation import Allocation
from optimizer.jobs.confirm import paths_of
from optimizer.jobs.exactness import screen_pairs
from optimizer.search.exact_moves import MOVE_TOL, exact_moves, level_unit, pairs_text

__all__ = ["LOWER_TRIES", "MAX_MOVES", "CertifiableSolver", "ExactShape", "exact_shape"]

Pair = tuple[int, int]
#: moves made in a row on one shape (each fixes the pairs the last left; a new pair may appear)
MAX_MOVES = 3
#: a shape no move fixes is solved again this many times, each one level unit 1/G of total lower
LOWER_TRIES = 3


def _not_exact(alloc: Allocation, pairs: Collection[Pair]) -> set[Pair]:
    return {p.pair for p in screen_pairs(alloc, pairs=pairs).not_exact}


Move = tuple[str, str, Fraction]


@dataclass(frozen=True)
class ExactShape:
    """The outcome of :func:`exact_shape`: the shape to use, the screened pairs still not exact, and the
    moves made (``(from level, to level, unit)``, in order; empty when none was needed or none helped)."""

    allocation: Allocation
    remaining: tuple[Pair, ...]
    moves: tuple[Move, ...] = ()


def exact_shape(
    shape: Allocation,
    bad: Collection[Pair],
    value: Callable[[Allocation], Any],
    lower: Mapping[tuple[str, str], Fraction] | None,
    log: Callable[[str], None],
    *,
    tol: float = MOVE_TOL,
) -> ExactShape:
    """``shape`` moved so that the pairs ``bad`` (and the other pairs of their rows) are exact
    (:class:`ExactShape`; ``shape`` itself when no move helps).  Each move is said through ``log`` and
    appended to the shape's provenance."""
    rows: set[int] = set()
    todo = set(bad)
    spent = 0.0
    moves: list[Move] = []
    for _ in range(MAX_MOVES):
        if not todo:
            break
        moved = exact_moves(shape, _not_exact, todo, value, lower, tol=tol - spent)
        log(f"exact proposals: {moved.describe()}")
        if moved.move is None:
            break
        moves.append(moved.move)
        spent += moved.cost
        rows |= {i for p in todo for i in p}
        shape = Allocation(
            moved.allocation.levels, shape.name, f"{shape.provenance}; then {moved.describe()}", shape.run_type
        )
        indices = [p.index for p in paths_of(shape)]
        todo = _not_exact(shape, {(min(i, j), max(i, j)) for i in rows for j in indices})
    return ExactShape(shape, tuple(sorted(todo)), tuple(moves))


class CertifiableSolver:
    """``solver(total, lower)`` → the convex optimum ``solve(total, lower)``, moved onto exact pairs.

    The first shape is screened on every pair (:func:`optimizer.jobs.exactness.screen_pairs`) and the
    rows of the pairs found not exact are remembered (``rows``); every shape — the first and each re-solve
    of the watch at another total — whose pairs in those rows are not all exact is moved by
    :func:`exact_shape`.  Each shape is moved on its own: whether a move helps depends on the arithmetic
    of its level totals (measured on DHC persons: at the uniform rescale's total no single move made
    [6, 33] exact, at the watch's lowered total US → County did).  Only the remembered rows are screened
    again (~85 pairs instead of 946; the pipeline screens every pair of the allocation it sweeps).  A
    stateful callable, one per run; each distinct message is logged once."""

    def __init__(
        self,
        solve: Callable[[Fraction, Mapping[tuple[str, str], Fraction] | None], Allocation],
        value: Callable[[Allocation], Any],
        log: Callable[[str], None],
    ) -> None:
        self._solve, self._value, self._log = solve, value, log
        self.rows: frozenset[int] | None = None
        #: the first shape stayed beyond the exact engines: later ones are not screened here (the sweep's is)
        self.gave_up = False
        self._said: set[str] = set()

    def _say(self, message: str) -> None:
        if message not in self._said:
            self._said.add(message)
            self._log(message)

    def __call__(self, total: Fraction, lower: Mapping[tuple[str, str], Fraction] | None) -> Allocation:
        shape = self._solve(total, lower)
        first = self.rows is None
        if first:
            bad = [p.pair for p in screen_pairs(shape).not_exact]
            self.rows = frozenset(i for p in bad for i in p)
        elif self.gave_up:
            return shape
        elif self.rows:
            rows = {(min(i, j), max(i, j)) for i in self.rows for j in self._indices(shape)}
            bad = [p.pair for p in screen_pairs(shape, pairs=rows).not_exact]
        else:
            return shape
        if not bad:
            return shape
        made = exact_shape(shape, bad, self._value, lower, self._say)
        unit = Fraction(1, level_unit(shape))
        for k in range(1, LOWER_TRIES + 1):
            if not made.remaining or shape.total_rho <= k * unit:
                break
            # a shape no single move fixes: the optimum one grid unit of total lower has other level
            # totals (other arithmetic); the calibration that follows scales it back to the promise
            try:
                other = self._solve(shape.total_rho - k * unit, lower)
            except ValueError:  # the guard's bounds need more than that total
                break
            rows = {
                (min(i, j), max(i, j)) for i in {i for p in made.remaining for i in p} for j in self._indices(other)
            }
            tried = exact_shape(
                other,
                [p.pair for p in screen_pairs(other, pairs=rows).not_exact],
                self._value,
                lower,
                self._say,
            )
            if not tried.remaining:
                fixed = pairs_text(made.remaining)
                said = f"solved at total ρ {k}/{unit.denominator} lower, where pairs {fixed} are exact"
                self._say(f"exact proposals: {said}")
                note = f"{tried.allocation.provenance}; {said}"
                made = ExactShape(
                    Allocation(tried.allocation.levels, shape.name, note, shape.run_type), (), tried.moves
                )
        self.rows |= {i for p in made.remaining for i in p}
        # a first shape neither moves nor lower totals make exact: its re-solves are left as solved (each
        # attempt costs screens; measured on published-variance at query shares 1/10⁴⁰⁰: 963 s against
        # 334 s with the move made once before the sweep, 19 pairs left on the sandwich against 9)
        self.gave_up = first and bool(made.remaining)
        return made.allocation

    @staticmethod
    def _indices(shape: Allocation) -> list[int]:
        return [p.index for p in paths_of(shape)]
