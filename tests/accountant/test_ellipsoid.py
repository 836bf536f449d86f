"""The ellipsoid node finder (accountant.diophantine) and the exact trapezoid it enables on
lattices too fine to window (PL94 persons, Bézout scale 1.1e14).

References written here: the Poisson bound on |φ| from its definition in mpmath, every node of
small rules checked one by one, tails against the brute-force convolution of
``tests/accountant/bruteforce.py``, and the PL94 proxy against the coarse sandwich (an
independent certified enclosure).
"""

from __future__ import annotations

import math
from fractions import Fraction as F

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.diophantine import MINORANT_SLACK, ellipsoid_nodes, quadratic_minorant
from accountant.quadrature import LatticeGroup, TailEngine
from accountant.sieve import SieveTooWide
from tests.accountant import oracle as O


def log_poisson_bound(sigma2: float, theta: float) -> float:
    """log of Σ_j e^{−σ²(θ+2πj)²/2} / (1 − 2Σ_{j≥1} e^{−2π²σ²j²}) for θ ∈ [0, π], capped at 0
    (|φ| ≤ 1); 0 when the denominator is below 1/2 (the bound the accountant then uses).  Terms
    |j| ≤ 8 (the rest is below e^{−σ²(15π)²/2} relative: the value is a lower estimate of the
    bound by at most that, far inside the 1e-9 slack of the checks)."""
    den_tail = 2 * sum(math.exp(-2 * math.pi**2 * sigma2 * j * j) for j in range(1, 9))
    if den_tail >= 0.5:
        return 0.0
    exps = [-sigma2 * (theta + 2 * math.pi * j) ** 2 / 2 for j in range(-8, 9)]
    top = max(exps)
    num = top + math.log(sum(math.exp(e - top) for e in exps))
    return min(0.0, num - math.log1p(-den_tail))


@settings(max_examples=40, deadline=None)
@given(sigma2=st.floats(0.05, 20000.0), u=st.lists(st.floats(0.0, 1.0), min_size=5, max_size=5))
def test_quadratic_minorant_lies_above_the_bound(sigma2, u):
    """log B_σ(θ) ≤ c − A θ² at points the minorant's grid never saw."""
    a = quadratic_minorant(sigma2)
    for x in u:
        theta = math.pi * x
        assert log_poisson_bound(sigma2, theta) <= MINORANT_SLACK - a * theta * theta + 1e-9


def test_quadratic_minorant_is_informative():
    """Not just valid: close to the Gaussian σ²/2 for large σ², positive from σ² ≈ 0.2 on."""
    for s2 in (5.0, 80.0, 8000.0):
        assert 0.4 * s2 <= quadratic_minorant(s2) <= 0.5 * s2
    assert quadratic_minorant(1.2) > 0.1
    assert quadratic_minorant(1e-3) == 0.0


def _true_bound(groups, j: int, N: int) -> float:
    tot = 0.0
    for g in groups:
        r = (g.b * j) % N
        theta = 2 * math.pi * min(r, N - r) / N
        tot += g.mult * log_poisson_bound(float(g.sigma2), theta)
    return tot


group_st = st.builds(
    LatticeGroup,
    st.fractions(F(1, 5), F(400)).filter(lambda x: x > 0),
    st.integers(1, 3000),
    st.integers(1, 3),
)


@settings(max_examples=25, deadline=None)
@given(groups=st.lists(group_st, min_size=2, max_size=4), n_nodes=st.integers(64, 1500), thr=st.floats(-60.0, -3.0))
def test_every_node_left_out_is_below_the_threshold(groups, n_nodes, thr):
    """Definition, node by node: every j ∈ [0, N/2] that the finder leaves out has product
    bound below the threshold; the nodes returned are distinct and in range."""
    N = n_nodes + n_nodes % 2
    found = ellipsoid_nodes(groups, N, thr).tolist()
    assert found == sorted(set(found)) and all(0 <= j <= N // 2 for j in found)
    kept = set(found)
    for j in range(N // 2 + 1):
        if j not in kept:
            assert _true_bound(groups, j, N) < thr + 1e-9 * (1 + abs(thr)), j


def test_finds_the_central_peak_and_secondary_peaks():
    """Y = 1000·U + 7·V-like weights: the integrand has secondary peaks at ζ = 2πp/1000; with
    V's factor loose, those near-peaks must be found (and the finder returns only a few
    hundred of the 10⁵ nodes)."""
    groups = (LatticeGroup(F(900), 1000, 2), LatticeGroup(F(3, 2), 7, 1), LatticeGroup(F(2), 13, 1))
    N = 100_000
    found = set(ellipsoid_nodes(groups, N, -40.0).tolist())
    for j in (0, 1, 100, 200, 1000):  # ζ = 0, its neighbour, the peaks 2πp/1000 (p = 1, 2, 10)
        assert _true_bound(groups, j, N) >= -40.0
        assert j in found
    assert len(found) < 5_000


@settings(max_examples=10, deadline=None)
@given(
    dens=st.lists(st.sampled_from([5, 7, 11, 13, 17, 19]), min_size=3, max_size=3, unique=True),
    nums=st.lists(st.integers(3, 12), min_size=3, max_size=3),
    mults=st.lists(st.integers(1, 2), min_size=3, max_size=3),
    q=st.floats(0.3, 4.0),
)
def test_tails_contain_the_brute_force_value(dens, nums, mults, q):
    """Three coprime families (σ² = n/d with distinct primes d: loss weights d/n, Bézout scale
    ~10³–10⁴ times the numerators): the ellipsoid finder's certified tail contains the
    independent oracle's enclosure (tests/accountant/oracle.py: exact fixed-point convolution)."""
    comps = [(F(n, d), 1, m) for n, d, m in zip(nums, dens, mults)]
    _, bs, _ = O.lattice(comps)
    groups = tuple(LatticeGroup(s2, b, m) for (s2, _, m), b in zip(comps, bs))
    sd = math.sqrt(sum(g.mult * float(g.sigma2) * g.b * g.b for g in groups))
    k = max(1, int(q * sd))
    lo, hi = O.tail(comps, k, mass_tol=1e-40)
    got = TailEngine(groups, node_finder="ellipsoid").tails([k], [1e-32])[0]
    assert got.lower <= hi and lo <= got.upper, (k, got, lo, hi)
    assert got.error <= 1e-30


def test_agrees_with_the_window_sieve_on_a_census_pair():
    """The DHC persons proxy (scale 10⁴) by both node finders: same certified tails."""
    from optimizer.census.allocation import load_builtin
    from optimizer.search import proxy_composition

    comp = proxy_composition(load_builtin("dhc-persons"))
    groups = comp._lattice_groups()
    ks = [30_000, 90_000, 150_000]
    a = TailEngine(groups).tails(ks, [1e-35] * 3)
    b = TailEngine(groups, node_finder="ellipsoid").tails(ks, [1e-35] * 3)
    for x, y in zip(a, b):
        assert x.lower <= y.upper and y.lower <= x.upper
        assert x.error < 1e-34 and y.error < 1e-34


def test_pl94_persons_proxy_is_exact_and_inside_the_sandwich():
    """PL94 persons (65 budgets over denominators 12613971571, … → Bézout scale 1.1e14): the
    chooser integrates it directly with the ellipsoid finder; δ(17.9) meets 1e-35 absolute and
    1e-20 relative, and lies inside the coarse sandwich's independent enclosure."""
    from accountant.choose import coarse_engine
    from optimizer.census.allocation import load_builtin
    from optimizer.search import proxy_composition

    comp = proxy_composition(load_builtin("pl94-persons"))
    assert isinstance(comp._engine, TailEngine) and comp._engine.node_finder == "ellipsoid"
    d = comp.delta("17.9", tol=1e-35, rtol=1e-20)
    assert d.tolerance_met and d.error <= max(1e-35, 1e-20 * d.value)
    groups = comp._lattice_groups()
    ks = [int(0.5 * comp._engine.var**0.5), int(6 * comp._engine.var**0.5)]
    exact = comp._engine.tails(ks, [1e-35, 1e-35])
    sandwich = coarse_engine(groups).tails(ks, [1e-20, 1e-20])
    for e, s in zip(exact, sandwich):
        assert s.lower <= e.lower <= e.upper <= s.upper, (e, s)
        assert e.error < 1e-34


@settings(max_examples=200, deadline=None)
@given(
    N=st.one_of(st.integers(2, 2**40), st.integers(2**40, 2**57), st.integers(2**57, 2**70)),
    b=st.integers(1, 2**70),
    u=st.lists(st.floats(0.0, 1.0, exclude_max=True), min_size=1, max_size=20),
)
def test_mulmod_is_exact(N, b, u):
    """b·j mod N of accountant.sieve.mulmod equals Python's integer arithmetic (j < N)."""
    from accountant.sieve import mulmod

    js = [min(N - 1, int(x * N)) for x in u]
    if N >= 2**62:
        return  # (node indices are int64: N below 2^62 is the domain)
    got = mulmod(np.array(js, dtype=np.int64), b, N).tolist()
    assert got == [(j * b) % N for j in js]


@settings(max_examples=50, deadline=None)
@given(sigma2=st.floats(0.01, 1e5), u=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=30))
def test_vectorised_bound_matches_the_scalar_one(sigma2, u):
    """theta.log_abs_cf_bounds (used for the minorant's grid) equals log_abs_cf_bound."""
    from accountant.theta import log_abs_cf_bound, log_abs_cf_bounds

    thetas = [math.pi * x for x in u]
    got = log_abs_cf_bounds(sigma2, np.array(thetas))
    for t, g in zip(thetas, got.tolist()):
        want = log_abs_cf_bound(sigma2, t)
        assert abs(g - want) <= 1e-12 * (1 + abs(want)), (t, g, want)


def test_estimate_tells_structured_from_unstructured_sums():
    """enumeration_estimate (the chooser's test): the PL94 persons proxy, whose enumeration meets
    ~10⁵ points, is estimated far below the limit; four unrelated components at scale 6.7e12
    (whose integrand keeps a fixed fraction of 10¹³ nodes) far above it — and the chooser sends
    the latter to the sandwich at once."""
    from accountant import Composition, DiscreteGaussian
    from accountant.coarse import CoarseEngine, planned_nodes
    from accountant.diophantine import enumeration_estimate
    from accountant.engine import DEFAULT_CONFIG
    from optimizer.census.allocation import load_builtin
    from optimizer.search import proxy_composition

    limit = DEFAULT_CONFIG.ellipsoid_max_visits / 4
    pl94 = proxy_composition(load_builtin("pl94-persons"))._lattice_groups()
    assert enumeration_estimate(pl94, int(planned_nodes(pl94)), -95.0) < limit / 10
    loose = Composition(
        [
            DiscreteGaussian(F("13791/49")),
            DiscreteGaussian(F("8380/17"), shift=2),
            DiscreteGaussian(F("12847/26"), shift=2),
            DiscreteGaussian(F("11745/62"), shift=3),
        ]
    )
    groups = loose._lattice_groups()
    assert enumeration_estimate(groups, int(planned_nodes(groups)), -95.0) > 100 * limit
    assert isinstance(loose._engine, CoarseEngine)


def test_lattices_beyond_the_finder_are_planned_on_the_sandwich_and_say_why():
    """A planned N ≥ 2^53 (twelve components with 20-digit weights: N ≈ 7e22) is never given to
    the ellipsoid finder (its node indices are int64): the plan is the sandwich, and its reason
    says so (no estimate is attempted)."""
    import random

    from accountant.choose import plan_engine

    rng = random.Random(1)
    groups = tuple(LatticeGroup(F(rng.randint(50, 500)), rng.randrange(10**19, 10**20) | 1, 2) for _ in range(12))
    plan = plan_engine(groups)
    assert plan.kind == "coarse" and not plan.exact and plan.planned_nodes > 2**53
    assert "beyond the ellipsoid node finder (planned N ≥ 2^53)" in plan.reason
    with pytest.raises(SieveTooWide):
        ellipsoid_nodes(groups, 2**58, -95.0)


def test_a_whole_composition_past_the_ellipsoid_cap_gets_the_fallback_finder():
    """EngineConfig.ellipsoid_fallback_max_visits (issue 35): a whole composition every other rule
    leaves to the sandwich, with an enumeration estimate above ellipsoid_max_visits/4 but below a
    quarter of the fallback's steps, is integrated exactly by the ellipsoid finder with the fallback's
    steps (its tails contain the oracle's convolution); without the fallback it is the sandwich, and
    the plan's reason says which fallbacks were tried.  The rules are narrowed by the config so that a
    small sum takes this route."""
    import dataclasses

    from accountant.choose import make_engine, plan_engine
    from accountant.coarse import CoarseEngine, planned_nodes
    from accountant.diophantine import enumeration_estimate
    from accountant.engine import DEFAULT_CONFIG

    comps = [(F(7, 5), 1, 1), (F(9, 11), 1, 2), (F(4, 13), 1, 1)]
    _, bs, _ = O.lattice(comps)
    groups = tuple(LatticeGroup(s2, b, m) for (s2, _, m), b in zip(comps, bs))
    est = enumeration_estimate(groups, int(planned_nodes(groups)), -95.0)
    narrow = dataclasses.replace(
        DEFAULT_CONFIG,
        direct_pmf_max_span=0,  # no pmf table
        split_chain_max_cost=0,  # no split
        max_direct_nodes=1.0,  # "lattice too fine" for the window sieve
        ellipsoid_max_visits=max(1, int(est)),  # estimate > visits / 4: not the usual finder
        nested_fallback_max_cost=0.0,  # no nested fallback
    )
    wide = dataclasses.replace(narrow, ellipsoid_fallback_max_visits=int(8 * est) + 1000)
    engine = make_engine(groups, config=wide)
    assert isinstance(engine, TailEngine) and engine.config.ellipsoid_max_visits == wide.ellipsoid_fallback_max_visits
    assert plan_engine(groups, wide).exact
    sd = math.sqrt(sum(g.mult * float(g.sigma2) * g.b * g.b for g in groups))
    for k in (max(1, int(0.5 * sd)), max(1, int(2.5 * sd))):
        lo, hi = O.tail(comps, k, mass_tol=1e-40)
        got = engine.tails([k], [1e-32])[0]
        assert got.lower <= hi and lo <= got.upper and got.error <= 1e-30, (k, got, lo, hi)
    off = dataclasses.replace(narrow, ellipsoid_fallback_max_visits=narrow.ellipsoid_max_visits)
    assert isinstance(make_engine(groups, config=off), CoarseEngine)
    small = dataclasses.replace(narrow, ellipsoid_fallback_max_visits=narrow.ellipsoid_max_visits + 1)
    plan = plan_engine(groups, small)
    assert plan.kind == "coarse" and "(fallback)" in plan.reason
