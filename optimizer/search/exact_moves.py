"""Move grid units between geolevels until every pair of a proposal is exact (issue 35, item 1).

A proposal on the grid of :mod:`optimizer.search.grid` has every pair's lattice scale at most G·P,
but whether the exact engines certify a pair also depends on the arithmetic of its weights: the
same objective rounded to level totals t_ℓ/G that differ by one unit can put a pair on the direct
trapezoid or beyond it (its peak windows and ellipsoid enumeration grow with how the integers
b_k = L·w_k share factors).  Measured on ``dhc-persons-favour-block`` (level totals 1/10⁴, query
shares 1/1040): with the US total at 1871/10⁴ the pair [6, 10] (US and State merged into the
State) planned to the coarse sandwich (ellipsoid estimate 4.07e6 > 2.5e6); moving one unit of
1/10⁴ between the US and any other level made it exact, and none of the 42 moves between the other
levels did.

:func:`exact_moves` looks for the cheapest such change: every single-unit move of a level total
to another level (query shares unchanged, so each budget stays on the grid and the pair lattices
within G·P), ranked by the objective, each checked on the pairs that were not exact (the screen of
:mod:`optimizer.jobs.exactness`, passed in as a function: nothing here knows how pairs are formed),
accepted when they all become exact and the objective grew by at most ``tol`` (relative).  The total
is unchanged, so the calibration that follows sees the same budget.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from fractions import Fraction

from optimizer.census.allocation import Allocation, GeolevelBudget

__all__ = ["MOVE_TOL", "MOVE_TRIES", "Moved", "apply_move", "exact_moves", "level_unit", "pairs_text", "unit_moves"]

Key = tuple[str, str]
Pair = tuple[int, int]

#: largest relative objective increase a move may cost (on top of the grid rounding's
#: :data:`optimizer.search.grid.ROUNDING_TOL` = 5e-5: together within the issue's 1e-4)
MOVE_TOL = 5e-5
#: at most this many candidate moves are screened (cheapest first)
MOVE_TRIES = 60


@dataclass(frozen=True)
class Moved:
    """The outcome of :func:`exact_moves`.

    Attributes:
        allocation: the shape to use (the input when no move was needed or none worked).
        move: ``(from level, to level, unit)`` of the accepted move, or ``None``.
        fixed: the pairs that were not exact and are after the move (empty if none accepted).
        remaining: the pairs still not exact.
        tried: candidate moves screened.
        cost: relative objective increase of the accepted move (0 if none).
    """

    allocation: Allocation
    move: tuple[str, str, Fraction] | None
    fixed: tuple[Pair, ...]
    remaining: tuple[Pair, ...]
    tried: int
    cost: float = 0.0

    def describe(self) -> str:
        """One line for the log and the proposal's provenance."""
        if self.move is None:
            return (
                f"no single move of a level-total unit between geolevels made pairs {pairs_text(self.remaining)} exact "
                f"({self.tried} moves screened)"
            )
        src, dst, unit = self.move
        return (
            f"moved {unit} of total ρ from {src} to {dst} so that pairs {pairs_text(self.fixed)} are exact "
            f"(objective +{self.cost:.2e} relative; {self.tried} moves screened)"
        )


#: pairs named in a log line or provenance note; more are counted
NAMED = 8


def pairs_text(pairs: Collection[Pair], named: int = NAMED) -> str:
    """``[i, j], …`` of the first ``named`` pairs in order, then how many there are ("none" for none)."""
    ps = sorted(pairs)
    text = ", ".join(f"[{i}, {j}]" for i, j in ps[:named])
    return (f"{text}, … ({len(ps)} pairs)" if len(ps) > named else text) or "none"


def level_unit(shape: Allocation) -> int:
    """G: the least common denominator of the level totals (the grid's level unit or a divisor of it)."""
    return math.lcm(*(lv.total.denominator for lv in shape.levels))


def unit_moves(shape: Allocation, lower: Mapping[Key, Fraction] | None = None) -> list[tuple[str, str, Allocation]]:
    """Every allocation that moves 1/G of total ρ (G = :func:`level_unit`) from one geolevel to another,
    each query keeping its share of its level; only moves that keep every budget ≥ ``lower``:
    ``[(from level, to level, allocation)]``."""
    unit = Fraction(1, level_unit(shape))
    out = []
    for a in shape.levels:
        for b in shape.levels:
            moved = None if b.name == a.name else apply_move(shape, (a.name, b.name, unit), lower)
            if moved is not None:
                out.append((a.name, b.name, moved))
    return out


def apply_move(
    shape: Allocation, move: tuple[str, str, Fraction], lower: Mapping[Key, Fraction] | None = None
) -> Allocation | None:
    """``shape`` with ``unit`` of total ρ moved from geolevel ``src`` to ``dst`` (``move = (src, dst, unit)``),
    each query keeping its share of its level; ``None`` when ``src`` has no more than ``unit``, a budget
    would fall below ``lower``, or a level is not in ``shape``.  The provenance is kept."""
    src, dst, unit = move
    by_name = {lv.name: lv for lv in shape.levels}
    if src not in by_name or dst not in by_name or src == dst:
        return None
    shrunk = _level_total(by_name[src], by_name[src].total - unit)
    lo = lower or {}
    if shrunk is None or any(r < lo.get((src, q), 0) for q, r in zip(shrunk.queries, shrunk.rho)):
        return None
    grown = _level_total(by_name[dst], by_name[dst].total + unit)
    assert grown is not None
    levels = tuple(shrunk if lv.name == src else grown if lv.name == dst else lv for lv in shape.levels)
    return Allocation(levels, shape.name, shape.provenance, shape.run_type)


def _level_total(level: GeolevelBudget, total: Fraction) -> GeolevelBudget | None:
    if total <= 0:
        return None
    f = total / level.total
    return GeolevelBudget(level.name, level.queries, tuple(r * f for r in level.rho))


def exact_moves(
    shape: Allocation,
    not_exact: Callable[[Allocation, Collection[Pair]], Collection[Pair]],
    bad: Collection[Pair],
    value: Callable[[Allocation], Fraction | float],
    lower: Mapping[Key, Fraction] | None = None,
    *,
    tol: float = MOVE_TOL,
    tries: int = MOVE_TRIES,
) -> Moved:
    """The cheapest single-unit move of a level total (:func:`unit_moves`) after which none of the pairs
    ``bad`` is planned on a non-exact engine.

    Args:
        shape: a proposal on a grid (uncalibrated; its total is kept).
        not_exact: ``not_exact(allocation, pairs)`` → the pairs among ``pairs`` no exact engine will
            certify (:func:`optimizer.jobs.exactness.screen_pairs`).
        bad: the pairs of ``shape`` that are not exact.
        value: the objective (smaller is better).
        lower: budgets no query may go below (the Pareto guard).
        tol: largest relative objective increase accepted.
        tries: most candidates screened, cheapest first.
    """
    bad = tuple(sorted(bad))
    if not bad:
        return Moved(shape, None, (), (), 0)
    v0 = float(value(shape))
    ranked = sorted(((float(value(a)), src, dst, a) for src, dst, a in unit_moves(shape, lower)), key=lambda c: c[0])
    unit = Fraction(1, level_unit(shape))
    tried = 0
    for v, src, dst, cand in ranked:
        cost = (v - v0) / abs(v0) if v0 else v - v0
        if cost > tol or tried >= tries:
            break
        tried += 1
        if not not_exact(cand, bad):
            return Moved(cand, (src, dst, unit), bad, (), tried, max(cost, 0.0))
    return Moved(shape, None, (), bad, tried)
