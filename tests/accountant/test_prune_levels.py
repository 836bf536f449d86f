"""Per-member pruning levels of the tilted trapezoid (accountant.quadrature) change the work,
not the answer: tails agree with the single-level evaluation and meet their targets."""

from fractions import Fraction as F

import mpmath

from accountant import Composition, DiscreteGaussian
from accountant.engine import DEFAULT_CONFIG, EngineConfig

from .bruteforce import lattice_pmf, tail


def _comp(config=DEFAULT_CONFIG):
    return Composition(
        {DiscreteGaussian(F(10000, 73)): 6, DiscreteGaussian(F(130000, 48673)): 3, DiscreteGaussian(F(1000, 11)): 4},
        config=config,
    )


def test_levels_agree_with_single_level_on_a_tradeoff_curve():
    many = _comp().tradeoff_curve(n=61, tol=1e-25)
    one = _comp(EngineConfig(prune_levels=1)).tradeoff_curve(n=61, tol=1e-25)
    assert many.k == one.k
    for a, b in zip(many.alpha + many.beta, one.alpha + one.beta):
        assert a.error <= 1e-25 and b.error <= 1e-25
        assert abs(a.value - b.value) <= a.error + b.error


def test_levels_bracket_the_convolution_at_mixed_depths():
    comp = Composition({DiscreteGaussian(F(3, 2)): 2, DiscreteGaussian(F(5, 2)): 1, DiscreteGaussian(7): 2})
    dist = lattice_pmf([(m.sigma2, b, c) for (m, c), b in zip(comp.groups, comp.lattice.weights)])
    ks = list(range(1, 900, 37))  # one batch: deep and shallow tails share tilt groups
    for k, c in zip(ks, comp.tails(ks, tol=1e-30, rtol=1e-15)):
        ref = tail(dist, k)
        assert c.lower - mpmath.mpf("1e-50") <= ref <= c.upper + mpmath.mpf("1e-50"), (k, c, ref)
        assert c.error <= max(mpmath.mpf("1e-30"), 1e-15 * ref)
