"""Issue 35, item 2: the pairs that will not be exact are named before the run.

The screen (:mod:`optimizer.jobs.exactness`) plans each pair's engine with the accountant's own choice
(:func:`accountant.choose.plan_engine`, nothing integrated).  Checked: the built-in DHC-persons
allocation is screened all exact; a what-if whose budgets are distinct multiples of 1/10⁵ (the
optimizer's proposals before issue 35 item 1) gets its non-exact pairs named, with the reason; the
screen agrees with the engine the accountant builds (on a sample of pairs) and with the engine
that actually answers δ (on three pairs).
"""

from __future__ import annotations

import random
import time
from fractions import Fraction

import pytest

from accountant.choose import plan_engine
from accountant.composition import engine_plan
from optimizer.census.allocation import load_builtin
from optimizer.census.pairs import mechanism, pair_composition
from optimizer.jobs.confirm import paths_of
from optimizer.jobs.exactness import screen_pairs

EPS = "26.340588852722324353781974500154992685"  # ε_BS(1e-10) of the DHC-persons total


def fine_grid_what_if():
    """dhc-persons with every ρ moved to a distinct value n/10⁵ (a user's what-if on a fine grid)."""
    base = load_builtin("dhc-persons")
    return base.with_rho(
        {(g, q): Fraction(round(r * 10**5) + 1 + n % 7, 10**5) for n, (g, q, r) in enumerate(base.items())}
    )


@pytest.fixture(scope="module")
def builtin_screen():
    return screen_pairs(load_builtin("dhc-persons"))


@pytest.fixture(scope="module")
def what_if():
    return fine_grid_what_if()


@pytest.fixture(scope="module")
def what_if_screen(what_if):
    t0 = time.perf_counter()
    s = screen_pairs(what_if)
    return s, time.perf_counter() - t0


def test_builtin_dhc_persons_is_screened_all_exact(builtin_screen):
    s = builtin_screen
    assert s.n_pairs == 946
    assert s.all_exact and s.not_exact == ()
    assert sum(s.engines.values()) == 946 and "coarse" not in s.engines
    (line,) = s.lines()
    assert "all 946 pairs planned on exact engines" in line


def test_fine_grid_what_if_names_its_non_exact_pairs_before_the_run(what_if_screen):
    s, seconds = what_if_screen
    assert s.n_pairs == 946
    assert len(s.not_exact) > 900  # measured: 934 of 946 (945 before the ellipsoid finder of issue 17)
    assert all(p.engine == "coarse" and not p.exact for p in s.not_exact)
    assert all(p.reason.startswith("lattice too fine: planned nodes N = ") for p in s.not_exact)
    assert all(p.planned_nodes > 1e9 for p in s.not_exact)
    lines = s.lines("the what-if")
    assert f"{len(s.not_exact)} of 946 pairs will NOT be exact" in lines[0]
    first = s.not_exact[0]
    assert lines[1] == f"  pair [{first.pair[0]}, {first.pair[1]}]: {first.reason}"
    assert lines[-1].startswith("  … and ")
    d = s.as_dict()
    assert d["pairs_not_exact"] == len(s.not_exact) and d["not_exact"][0]["pair"] == list(first.pair)
    assert seconds < 60  # measured ≈ 2.3 s on 2 shared cores


def test_screen_of_a_subset_of_pairs(what_if):
    s = screen_pairs(what_if, pairs=[(13, 13), (6, 6), (1, 2)])
    assert s.n_pairs == 3
    with pytest.raises(ValueError, match="unknown pairs"):
        screen_pairs(what_if, pairs=[(1, 99)])


def test_plan_agrees_with_the_engine_the_accountant_builds(what_if):
    """On a sample of pairs of both allocations, the plan's kind is the kind of the engine a
    Composition builds (the chooser's main engine)."""
    rng = random.Random(35)
    for alloc in (load_builtin("dhc-persons"), what_if):
        paths = {p.index: p for p in paths_of(alloc)}
        sample = [(13, 13), (6, 6), (6, 10)] + [tuple(sorted(rng.sample(range(1, 44), 2))) for _ in range(12)]
        for i, j in sample:
            comp = pair_composition(paths[i], paths[j])
            plan = engine_plan(mechanism(paths[i]) + mechanism(paths[j]))
            assert plan.kind == comp._engine.name, (alloc.name, i, j)
            assert plan.exact == (comp._engine.name != "coarse")
            assert plan_engine(comp._lattice_groups()) == plan


def test_screen_agrees_with_what_delta_actually_uses(what_if, builtin_screen, what_if_screen):
    """δ(ε) on three pairs: the engine in the result's diagnostics is the planned one, and exactly
    the pairs screened non-exact miss their tolerance."""
    flagged = {p.pair for p in what_if_screen[0].not_exact}
    cases = [(load_builtin("dhc-persons"), (13, 13), set()), (what_if, (13, 13), flagged), (what_if, (1, 2), flagged)]
    seen_exact = seen_coarse = False
    for alloc, pair, bad in cases:
        paths = {p.index: p for p in paths_of(alloc)}
        d = pair_composition(paths[pair[0]], paths[pair[1]]).delta(EPS)
        screened_exact = pair not in bad
        assert (d.diagnostics.engine != "coarse") == screened_exact, (alloc.name, pair, d.diagnostics.engine)
        assert bool(d.tolerance_met) == screened_exact
        seen_exact |= screened_exact
        seen_coarse |= not screened_exact
    assert seen_exact and seen_coarse


def test_the_screen_plans_each_distinct_composition_once(monkeypatch):
    """Pairs whose two paths give the same multiset of budgets have one composition: planned once
    (DHC persons: 946 pairs, 840 compositions), and every pair still counted with its plan."""
    import optimizer.jobs.exactness as X

    calls = []

    def counting(groups, **kw):
        calls.append(groups)
        return engine_plan(groups, **kw)

    monkeypatch.setattr(X, "engine_plan", counting)
    monkeypatch.setattr(X, "_SCREENS", type(X._SCREENS)())  # nothing remembered from other tests
    alloc = load_builtin("dhc-persons")
    screen = X.screen_pairs(alloc)
    paths = {p.index: p for p in paths_of(alloc)}
    distinct = {tuple(sorted((*paths[i].rho, *paths[j].rho))) for i in paths for j in paths if i <= j}
    assert screen.n_pairs == 946 and sum(screen.engines.values()) == 946
    assert len(calls) == len(distinct) < 946


def test_the_screen_without_kinds_has_the_same_verdicts(what_if):
    """The default screen (exactness only: accountant.choose.plan_exactness) names the same
    non-exact pairs with the same reasons as the full plan, on a mix of exact and sandwich pairs."""
    import optimizer.jobs.exactness as X

    base = load_builtin("dhc-persons")
    unit = 2 * 10**4
    mixed = base.with_rho({(g, q): Fraction(round(r * unit) + n % 3, unit) for n, (g, q, r) in enumerate(base.items())})
    for alloc in (mixed, what_if):
        pairs = [(i, j) for i in (1, 6, 13, 24, 33) for j in range(i, 44, 5)]
        full = X.screen_paths(paths_of(alloc), pairs=pairs, kinds=True)
        fast = X.screen_paths(paths_of(alloc), pairs=pairs)
        assert fast.not_exact == full.not_exact and fast.n_pairs == full.n_pairs
        assert set(fast.engines) <= set(full.engines) | {"exact"}
