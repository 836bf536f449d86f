"""Issue 35, item 1: a proposal whose rounding left pairs beyond the exact engines is moved, by one
level-total unit between geolevels, onto budgets every screened pair of which is exact.

Shown first as the defect (the favour-block scenario's convex optimum at the uniform rescale's total has
pair [6, 10] planned on the coarse sandwich), then fixed by :class:`CertifiableSolve`; the move itself is
checked on invariants (total, query shares and grid kept, bounds respected, cheapest first, tolerance).
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.census.allocation import Allocation, GeolevelBudget
from optimizer.jobs.exactness import screen_pairs
from optimizer.pipeline import stages as ST
from optimizer.pipeline.certifiable import CertifiableSolve
from optimizer.search.exact_moves import exact_moves, level_unit, unit_moves


def _alloc(totals, shares) -> Allocation:
    """Levels L0, L1, … with totals t/100 and query shares n/10 (two queries each)."""
    levels = tuple(
        GeolevelBudget(f"L{k}", ("a", "b"), (F(t, 100) * F(n, 10), F(t, 100) * F(10 - n, 10)))
        for k, (t, n) in enumerate(zip(totals, shares))
    )
    return Allocation(levels, "toy")


@settings(max_examples=40, deadline=None)
@given(
    totals=st.lists(st.integers(1, 40), min_size=2, max_size=5),
    data=st.data(),
)
def test_a_unit_move_keeps_the_total_the_shares_the_grid_and_the_bounds(totals, data):
    shares = data.draw(st.lists(st.integers(1, 9), min_size=len(totals), max_size=len(totals)))
    a = _alloc(totals, shares)
    lower = {(lv.name, q): r * F(9, 10) for lv in a.levels for q, r in zip(lv.queries, lv.rho)}
    g = level_unit(a)
    assert 100 % g == 0
    moves = unit_moves(a, lower)
    for src, dst, b in moves:
        assert b.total_rho == a.total_rho
        for la, lb in zip(a.levels, b.levels):
            assert la.proportions() == lb.proportions()
            change = lb.total - la.total
            assert change == (-F(1, g) if la.name == src else F(1, g) if la.name == dst else 0)
            assert all(r >= lower[(lb.name, q)] for q, r in zip(lb.queries, lb.rho))
            assert (lb.total * g).denominator == 1
    # a level may give a unit only when every query of it stays at or above its bound
    givers = {src for src, _, _ in moves}
    for lv in a.levels:
        can = all(r * (lv.total - F(1, g)) / lv.total >= lower[(lv.name, q)] for q, r in zip(lv.queries, lv.rho))
        assert (lv.name in givers) == (can and len(a.levels) > 1)


def _value(alloc: Allocation) -> F:
    return sum((1 / r for _, _, r in alloc.items()), F(0))


def test_the_cheapest_move_that_makes_the_pairs_exact_is_taken():
    a = _alloc([30, 30, 30], [5, 5, 5])  # the optimum of _value: every move costs
    assert level_unit(a) == 10  # totals 3/10: the unit is the level totals' own denominator

    # a stand-in screen: pair (1, 2) is exact only when L1's total is even in units of 1/10
    def not_exact(alloc, pairs):
        t = alloc.levels[1].total * 10
        return set() if t % 2 == 0 else set(pairs)

    moved = exact_moves(a, not_exact, [(1, 2)], _value, tol=1.0)
    assert moved.move is not None and moved.fixed == ((1, 2),) and moved.remaining == ()
    assert moved.allocation.levels[1].total * 10 % 2 == 0
    # nothing cheaper among the moves that fix it
    fixing = [b for _, _, b in unit_moves(a) if not not_exact(b, [(1, 2)])]
    assert _value(moved.allocation) == min(_value(b) for b in fixing)
    assert moved.cost > 0 and moved.cost == pytest.approx(float((_value(moved.allocation) - _value(a)) / _value(a)))


def test_no_move_beyond_the_tolerance_and_none_when_nothing_is_bad():
    a = _alloc([30, 30, 30], [5, 5, 5])
    never = exact_moves(a, lambda alloc, pairs: set(pairs), [(1, 2)], _value, tol=1.0)
    assert never.move is None and never.allocation is a and never.remaining == ((1, 2),)
    assert never.tried == len(unit_moves(a))
    costly = exact_moves(a, lambda alloc, pairs: set(), [(1, 2)], _value, tol=1e-9)
    assert costly.move is None and costly.tried == 0 and "no single move" in costly.describe()
    nothing = exact_moves(a, lambda alloc, pairs: set(pairs), [], _value)
    assert nothing.move is None and nothing.allocation is a and nothing.tried == 0


def test_the_favour_block_optimum_is_moved_onto_exact_pairs():
    """The defect, then the fix, on the shipped scenario (≈ 40 s: one full screen before, two after)."""
    spec = ST.spec_for(scenario="dhc-persons-favour-block")
    alloc, weights = spec.allocation, spec.weights
    obj, guard = ST._objective_and_guard(spec, F(1065, 1000))
    lower = guard.lower_bounds(alloc)
    total = alloc.total_rho * F(1065, 1000)
    raw = obj.optimum(alloc, weights, total, lower)
    before = screen_pairs(raw)
    assert [p.pair for p in before.not_exact] == [(6, 10)]  # the defect: one pair on the sandwich
    said: list[str] = []
    solve = CertifiableSolve(
        lambda t, lo: obj.optimum(alloc, weights, t, lo), lambda a: obj.value(a, alloc, weights), said.append
    )
    moved = solve(total, lower)
    assert screen_pairs(moved).all_exact
    assert moved.total_rho == raw.total_rho and guard.holds(moved, alloc)
    cost = (obj.value(moved, alloc, weights) - obj.value(raw, alloc, weights)) / obj.value(raw, alloc, weights)
    assert 0 <= cost <= F(5, 10**5)
    assert len(said) == 1 and "so that pairs [6, 10] are exact" in said[0]
    assert "so that pairs [6, 10] are exact" in moved.provenance
    assert solve(total, lower) is moved and len(said) == 1  # remembered, not screened again
