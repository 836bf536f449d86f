"""The pmf-table engine and nested splits against explicit convolution and the direct trapezoid."""

from fractions import Fraction as F

import mpmath
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.choose import build_nested
from accountant.engine import EngineConfig
from accountant.pmf import PmfEngine
from accountant.quadrature import LatticeGroup, TailEngine
from accountant.split import SplitEngine, find_nested

from .bruteforce import lattice_pmf, tail

SLACK = mpmath.mpf("1e-50")  # the reference convolution is exact to ~60 digits


def _check(engine, groups, ks, target):
    dist = lattice_pmf([(g.sigma2, g.b, g.mult) for g in groups])
    res = engine.tails(ks, [target] * len(ks))
    for k, c in zip(ks, res):
        ref = tail(dist, k)
        assert c.lower - SLACK <= ref <= c.upper + SLACK, (k, c, ref)
        assert c.error <= target
    return res


def test_pmf_engine_brackets_convolution_and_meets_target():
    groups = (LatticeGroup(F(5, 2), 4, 1), LatticeGroup(F(10), 1, 3), LatticeGroup(F(1, 2), 7, 2))
    _check(PmfEngine(groups), groups, [-60, -1, 0, 1, 9, 40, 90], 1e-40)


@settings(max_examples=10, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.fractions(min_value=F(1, 4), max_value=F(4), max_denominator=9), st.integers(1, 6), st.integers(1, 2)
        ),
        min_size=1,
        max_size=3,
    ),
    st.integers(-40, 40),
)
def test_pmf_engine_brackets_random_sums(comps, k):
    groups = tuple(LatticeGroup(s2, b, m) for s2, b, m in comps)
    _check(PmfEngine(groups), groups, [k], 1e-30)


def test_pmf_engine_agrees_with_trapezoid():
    groups = (LatticeGroup(F(2500, 999), 4, 1), LatticeGroup(F(10000, 999), 1, 9), LatticeGroup(F(10000, 73), 3, 5))
    ks = [-40, 0, 1, 30, 150, 400]
    for a, b in zip(PmfEngine(groups).tails(ks, [1e-40] * 6), TailEngine(groups).tails(ks, [1e-40] * 6)):
        assert abs(a.value - b.value) <= a.error + b.error
        assert a.error <= 1e-40


def test_nested_split_of_three_families_matches_convolution():
    """Y = 9973·(2X₁ + X₂) + 101·X₃ + X₄: two splits down to a pmf table."""
    s2 = F(1, 8)
    groups = (
        LatticeGroup(s2, 2 * 9973, 1),
        LatticeGroup(s2, 9973, 1),
        LatticeGroup(s2, 101, 1),
        LatticeGroup(s2, 1, 1),
    )
    plan = find_nested(groups, max_span=400)  # small leaf: force the chain of splits
    assert plan is not None and plan[1][0] != "pmf" and plan[1][4][0] != "pmf"  # two splits
    engine = build_nested(groups, plan[1])
    assert isinstance(engine, SplitEngine) and isinstance(engine.v_engine, SplitEngine)
    ks = [-30000, -9973, -100, 1, 102, 9973, 9974 + 101, 30000]
    _check(engine, groups, ks, 1e-35)  # (σ² = 1/8 defeats the trapezoid's sieve: no comparison)


def test_planner_uses_nested_pmf_split_for_the_many_cluster_pair():
    """[M6, M10] of the DHC: four weight families, ~10⁶ peak-window nodes for the direct rule."""
    from accountant.sieve import direct_kept_estimate
    from optimizer.census.allocation import load_builtin
    from optimizer.census.pairs import dhc_persons_paths, pair_composition

    paths = {p.index: p for p in dhc_persons_paths(load_builtin("dhc-persons"))}
    comp = pair_composition(paths[6], paths[10])
    assert direct_kept_estimate(comp._lattice_groups()) > 100_000
    eng = comp._engine
    assert isinstance(eng, SplitEngine) and isinstance(eng.u_engine, PmfEngine)
    assert isinstance(eng.v_engine, SplitEngine) and isinstance(eng.v_engine.v_engine, PmfEngine)
    # the main pair keeps the direct trapezoid (a handful of clusters)
    main = pair_composition(paths[13], paths[13])
    assert isinstance(main._engine, TailEngine)


def test_split_parts_with_small_span_are_tabulated_and_agree_with_the_trapezoid():
    """Two weight families 15441 : 4882 (the Block×10 optimum shape of the optimizer's proxy):
    both parts of the split become pmf tables; the δ agrees with the all-trapezoid split."""
    from accountant import Composition, DiscreteGaussian

    comp_spec = {DiscreteGaussian.from_rho(F(2441, 50000)): 140, DiscreteGaussian.from_rho(F(15441, 100000)): 20}
    fast = Composition(comp_spec)
    assert isinstance(fast._engine, SplitEngine)
    assert isinstance(fast._engine.u_engine, PmfEngine) and isinstance(fast._engine.v_engine, PmfEngine)
    slow = Composition(comp_spec, config=EngineConfig(split_pmf_max_span=0))
    assert isinstance(slow._engine.u_engine, TailEngine) and isinstance(slow._engine.v_engine, TailEngine)
    for eps in ("2", "12.5", "26.340588852722324"):
        a, b = fast.delta(eps), slow.delta(eps)
        assert a.error <= 1e-35 and b.error <= 1e-35
        assert abs(a.value - b.value) <= a.error + b.error
        assert a.value > 0
