"""The coarsened-lattice sandwich (accountant.coarse) brackets the exact tail."""

from fractions import Fraction as F

from accountant.choose import make_engine
from accountant.coarse import CoarseEngine
from accountant.quadrature import LatticeGroup, TailEngine


def test_sandwich_contains_exact_tails():
    groups = (LatticeGroup(F(7, 3), 4097, 2), LatticeGroup(F(11, 2), 2051, 3), LatticeGroup(F(40), 241, 4))
    exact = TailEngine(groups)
    coarse = CoarseEngine.build(groups, make_engine, divisor=37)
    assert coarse.g == 37 and not coarse.improvable
    ks = [1, 3000, 20000, 45000, 70000]
    for k, c, e in zip(ks, coarse.tails(ks, [1e-30] * 5), exact.tails(ks, [1e-30] * 5)):
        assert c.lower - e.error <= e.value <= c.upper + e.error, (k, c, e)
    # informative, not trivial: far tails are pinned down
    far = coarse.tails([110000], [1e-30])[0]
    assert far.upper < 1e-6


def test_redistricting_persons_proxy_sandwich_is_the_last_resort():
    """PL94 persons: 65 budgets over denominators 12613971571, … → lattice scale ~1e14.  The
    chooser integrates it exactly (ellipsoid node finder, tests/accountant/test_ellipsoid.py);
    with that finder switched off it falls back to the sandwich, certified but coarser."""
    from accountant import Composition
    from accountant.engine import EngineConfig
    from optimizer.census.allocation import load_builtin
    from optimizer.search import proxy_composition

    comp = proxy_composition(load_builtin("pl94-persons"))
    assert not isinstance(comp._engine, CoarseEngine)
    coarse = Composition(dict(comp.groups), config=EngineConfig(ellipsoid_sieve=False))
    assert isinstance(coarse._engine, CoarseEngine)
    d = coarse.delta("17.9")
    assert 0 < d.lower <= d.upper < 1e-10
    assert d.relative_error < 0.02  # certified, but coarser than the exact engines


def test_inner_targets_follow_the_sandwich_width():
    """The sandwich asks its inner engine only for a fraction of its own expected width
    (EngineConfig.coarse_inner_fraction): the enclosures are as narrow as with the caller's
    whole target, still contain the exact tails, and the inner engine keeps fewer nodes."""
    from accountant.engine import EngineConfig

    groups = (LatticeGroup(F(7, 3), 4097, 2), LatticeGroup(F(11, 2), 2051, 3), LatticeGroup(F(40), 241, 4))
    exact = TailEngine(groups)
    ks = [1, 3000, 20000, 45000, 70000]
    loose = CoarseEngine.build(groups, make_engine, divisor=37)
    strict = CoarseEngine.build(groups, make_engine, divisor=37, config=EngineConfig(coarse_inner_fraction=0))
    a_res, b_res = loose.tails(ks, [1e-30] * 5), strict.tails(ks, [1e-30] * 5)
    assert loose.stats.kept_nodes < strict.stats.kept_nodes
    for k, a, b, e in zip(ks, a_res, b_res, exact.tails(ks, [1e-30] * 5)):
        assert a.lower - e.error <= e.value <= a.upper + e.error, (k, a, e)
        assert a.error <= b.error * (1 + 1e-3) + 1e-30, (k, a, b)
