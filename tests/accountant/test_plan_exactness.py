"""accountant.choose.plan_exactness: the exactness verdict of plan_engine, faster (issue 35's screens).

The verdict (exact or the coarse sandwich, and the sandwich's reason) must be plan_engine's on every
lattice sum; only the kind of an exact engine may be left undecided ("exact").  Drawn: 2–8 components
with integer weights from 10³ to 10⁸ (the pmf, split, trapezoid, ellipsoid and sandwich regimes)."""

from __future__ import annotations

from fractions import Fraction as F

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accountant.choose import plan_engine, plan_exactness
from accountant.composition import engine_plan
from accountant.engine import LatticeGroup
from accountant.mechanism import DiscreteGaussian

group = st.builds(
    LatticeGroup,
    st.builds(F, st.integers(50, 3000), st.integers(1, 4)),
    st.integers(1, 10**8),
    st.integers(1, 3),
)
scale = st.sampled_from([10**3, 10**5, 10**6, 10**7, 10**8])


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(group, min_size=2, max_size=8, unique_by=lambda g: (g.b, g.sigma2)), scale)
def test_the_verdict_is_plan_engines(groups, top):
    gs = tuple(sorted((LatticeGroup(g.sigma2, 1 + g.b % top, g.mult) for g in groups), key=lambda g: (g.b, g.sigma2)))
    full, fast = plan_engine(gs), plan_exactness(gs)
    assert fast.exact == full.exact, (gs, full, fast)
    if not full.exact:
        assert fast == full  # the sandwich: same kind, reason and node counts
    else:
        assert fast.kind in (full.kind, "exact")


def test_each_regime_is_reached_and_kinds_false_is_plan_exactness():
    """The regimes the property is meant to cover occur (fixed examples), and engine_plan(kinds=False)
    is plan_exactness of the composition's lattice groups."""
    sandwich = tuple(LatticeGroup(F(300), b, 1) for b in (10**8 - 1, 99_999_989, 12_345_677, 98_765_431))
    assert not plan_exactness(sandwich).exact and plan_exactness(sandwich) == plan_engine(sandwich)
    small = (LatticeGroup(F(400), 3, 1), LatticeGroup(F(900), 7, 2))
    assert plan_exactness(small).exact and plan_engine(small).exact
    mechs = [DiscreteGaussian(F(250)), DiscreteGaussian(F(1000), shift=1), DiscreteGaussian(F(401, 2))]
    a, b = engine_plan(mechs), engine_plan(mechs, kinds=False)
    assert a.exact == b.exact and b.kind in (a.kind, "exact")
