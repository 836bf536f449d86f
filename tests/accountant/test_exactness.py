"""The certified accountant against independent references: brute force, closed forms, limits."""

from __future__ import annotations

import itertools
from fractions import Fraction as F

import mpmath
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accountant import Composition, DiscreteGaussian

from .bruteforce import delta_direct, lattice_pmf, tail

#: the brute-force references are computed at 60 digits with truncated mass < 1e-70, so any
#: discrepancy above this is a real disagreement.
BRUTE_ABS = mpmath.mpf("1e-50")


def _groups(comp: Composition):
    return [(m.sigma2, b, c) for (m, c), b in zip(comp.groups, comp.lattice.weights)]


def test_tails_match_explicit_convolution_heterogeneous():
    comp = Composition({DiscreteGaussian(F(3, 2)): 2, DiscreteGaussian(F(5, 2)): 1, DiscreteGaussian(7): 2})
    assert comp.lattice.weights == (70, 42, 15)
    dist = lattice_pmf(_groups(comp))
    ks = [-200, -15, 0, 1, 2, 57, 140, 300, 520, 800]
    got = comp.tails(ks)
    for k, c in zip(ks, got):
        ref = tail(dist, k)
        assert c.lower - BRUTE_ABS <= ref <= c.upper + BRUTE_ABS, (k, c, ref)
        assert c.error <= max(mpmath.mpf("1e-35"), 1e-20 * ref)


def test_delta_matches_joint_outcome_enumeration():
    """δ from the definition over joint outcomes (no lattice reduction) for a 2-mechanism product."""
    mechs = [(F(3, 2), 1), (F(5, 1), 2)]
    comp = Composition([DiscreteGaussian(s2, s) for s2, s in mechs])
    for eps in ["0", "1/3", "1.5", "4"]:
        ref = delta_direct(mechs, F(eps))
        got = comp.delta(eps)
        assert got.lower - BRUTE_ABS <= ref <= got.upper + BRUTE_ABS, (eps, got, ref)


def test_single_mechanism_closed_form():
    """One DG: δ(ε) = Σ_x max(0, P(x) − e^ε Q(x)) directly from the two pmfs."""
    s2 = F(10000, 73)
    comp = Composition([DiscreteGaussian(s2)])
    for eps in ["0.001", "0.05", "0.2"]:
        ref = delta_direct([(s2, 1)], F(eps))
        got = comp.delta(eps)
        assert got.contains(ref) or abs(got.value - ref) <= BRUTE_ABS, (eps, got, ref)


def test_gaussian_limit():
    """σ² → ∞ with μ = s/σ = 1 fixed: the exact δ tends to the Gaussian-mechanism δ."""

    def gauss_delta(mu, eps):
        with mpmath.workdps(40):
            return mpmath.ncdf(-eps / mu + mu / 2) - mpmath.exp(eps) * mpmath.ncdf(-eps / mu - mu / 2)

    errs = []
    for s in [10, 100, 1000]:
        comp = Composition([DiscreteGaussian(s * s, shift=s)])
        # the loss lattice has spacing 1/s; evaluate at lattice mid-points to avoid O(1/s) rounding
        eps = mpmath.mpf(1) + mpmath.mpf(1) / (2 * s)
        d = comp.delta(eps)
        g = gauss_delta(1, eps)
        errs.append(abs(d.value - g) / g)
    assert errs[0] > errs[1] > errs[2]
    assert errs[2] < 1e-4


small_sigma2 = st.sampled_from([F(1, 2), F(1), F(3, 2), F(2), F(5, 2), F(4), F(6), F(10)])


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.tuples(small_sigma2, st.integers(1, 2)), min_size=1, max_size=3, unique_by=lambda t: t[0]),
    st.integers(-50, 400),
)
def test_certified_interval_contains_bruteforce(groups, k_raw):
    comp = Composition({DiscreteGaussian(s2): m for s2, m in groups})
    dist = lattice_pmf(_groups(comp))
    span = max(dist) or 1
    k = k_raw * span // 400
    c = comp.tail(k)
    ref = tail(dist, k)
    assert c.lower - BRUTE_ABS <= ref <= c.upper + BRUTE_ABS


@settings(max_examples=10, deadline=None)
@given(
    st.lists(st.tuples(small_sigma2, st.integers(1, 3)), min_size=1, max_size=3, unique_by=lambda t: t[0]),
    st.floats(0, 6),
    st.floats(0.01, 3),
)
def test_delta_monotone_and_symmetric(groups, eps, gap):
    mechs = [DiscreteGaussian(s2) for s2, m in groups for _ in range(m)]
    a = Composition(mechs)
    b = Composition(list(reversed(mechs)))
    assert a == b and a.spec_key() == b.spec_key()
    d1, d2 = a.delta(eps), a.delta(eps + gap)
    assert d1.upper >= d2.lower  # non-increasing in ε
    assert 0 <= d2.lower <= d1.upper <= 1
    # δ(ε) ≥ 1 − e^{ε}·(something) trivially ≥ 0; and δ(0) is the total variation ≤ 1


@settings(max_examples=8, deadline=None)
@given(st.lists(st.tuples(small_sigma2, st.integers(1, 3)), min_size=1, max_size=3, unique_by=lambda t: t[0]))
def test_tradeoff_vertices_symmetric_and_monotone(groups):
    comp = Composition({DiscreteGaussian(s2): m for s2, m in groups})
    curve = comp.tradeoff_curve(n=21, zeta_max=2)
    al = [a.value for a in curve.alpha]
    be = [b.value for b in curve.beta]
    assert all(x >= y - 1e-30 for x, y in itertools.pairwise(al))  # α non-increasing in ζ
    assert all(x <= y + 1e-30 for x, y in itertools.pairwise(be))  # β non-decreasing
    # symmetry of the curve: (α_k, β_k) with k ↦ 2C+1−k swaps α and β
    two_c = comp.lattice.two_c
    for k, a, b in zip(curve.k, curve.alpha, curve.beta):
        a2, _b2 = comp.tails([two_c + 1 - k, k])
        assert abs(a2.value - b.value) <= a2.error + b.error + 1e-40
        # NP lower bound: α + β ≥ 1 − TV; here just 0 ≤ α + β ≤ 2 and β ≥ 1 − α − δ(0)
        assert a.value + b.value >= 1 - comp.delta(0).upper - 1e-30


def test_tradeoff_point_interpolates_between_vertices():
    comp = Composition({DiscreteGaussian(F(3, 2)): 2, DiscreteGaussian(F(7)): 1})
    two_c = comp.lattice.two_c
    k = 5
    ak, ak1, bk, bk1 = comp.tails([k, k + 1, two_c + 1 - k, two_c - k])
    for t in [0, F(1, 4), F(1, 2), 1]:
        alpha = ak1.value + t * (ak.value - ak1.value)
        beta = comp.tradeoff(alpha)
        expect = bk1.value - t * (bk1.value - bk.value)
        assert abs(beta.value - expect) <= beta.error + mpmath.mpf("1e-24")


def test_epsilon_is_safe_side():
    comp = Composition({DiscreteGaussian(F(3, 2)): 2, DiscreteGaussian(F(7)): 1})
    res = comp.epsilon(1e-6)
    assert res.delta_at_value.upper <= mpmath.mpf("1e-6")
    assert comp.delta(res.lower).lower > mpmath.mpf("1e-6")
    assert res.value - res.lower <= 1e-11 * max(1, res.value)


def test_tiny_delta_relative_precision():
    """δ down to ~1e-100 keeps ≥ 20 correct digits (tilted contour, no e^ε amplification)."""
    comp = Composition({DiscreteGaussian(F(3, 2)): 2, DiscreteGaussian(F(7)): 1})
    dist = lattice_pmf(_groups(comp))
    res = comp.epsilon(mpmath.mpf("1e-60"))
    d = comp.delta(res.value)
    assert d.value < mpmath.mpf("1.01e-60")
    assert d.error <= 1e-20 * d.value
    # cross-check one deep tail against the convolution (which drops products < 1e-80, so it
    # is good to ~1e-75 absolute: compare where the tail is ~1e-55)
    k = next(y for y in sorted(dist) if y > 0 and tail(dist, y) < 1e-55)
    c = comp.tail(k)
    ref = tail(dist, k)
    assert abs(c.value - ref) <= 1e-20 * ref + mpmath.mpf("1e-74")
    assert c.error <= 1e-20 * c.value


def test_node_values_are_reused_across_nearby_batches_and_agree_with_a_fresh_engine():
    """TailEngine caches node values per (quantised tilt, N, precision): a second batch at
    nearby thresholds (as in a β search) evaluates few new nodes, and its certified tails equal
    a fresh engine's and bracket the explicit convolution."""
    from accountant.quadrature import LatticeGroup, TailEngine

    groups = (LatticeGroup(F(349, 70), 7, 1), LatticeGroup(F(191, 50), 5, 1), LatticeGroup(F(2), 3, 2))
    dist = lattice_pmf([(g.sigma2, g.b, g.mult) for g in groups])
    ks1, ks2 = [30, 31, 32, 33], [34, 35]
    warm = TailEngine(groups)
    warm.tails(ks1, [1e-40] * len(ks1))
    cold_evals = warm.stats.phi_evaluations
    again = warm.tails(ks2, [1e-40] * len(ks2))
    reused_evals = warm.stats.phi_evaluations
    fresh_engine = TailEngine(groups)
    fresh = fresh_engine.tails(ks2, [1e-40] * len(ks2))
    assert reused_evals < fresh_engine.stats.phi_evaluations / 4 and cold_evals > 0
    for k, a, b in zip(ks2, again, fresh):
        ref = tail(dist, k)
        assert a.error <= 1e-40 and b.error <= 1e-40
        assert a.lower - mpmath.mpf("1e-50") <= ref <= a.upper + mpmath.mpf("1e-50")
        assert abs(a.value - b.value) <= a.error + b.error
