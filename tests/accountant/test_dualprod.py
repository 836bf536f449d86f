"""The Poisson-dual product of accountant.dualprod against Arb's theta functions."""

from fractions import Fraction as F

import numpy as np
from flint import arb
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.engine import EngineConfig
from accountant.quadrature import LatticeGroup, TailEngine, workprec


def _both(groups, nodes, N, lam_f, bits=200):
    eng = TailEngine(tuple(groups))
    with workprec(bits):
        lam = arb(lam_f)
        ref, ref0 = eng._g_nodes_theta(np.array(nodes, dtype=np.int64), N, lam, bits)
        dual, dual0 = eng._g_nodes(np.array(nodes, dtype=np.int64), N, lam, bits)
    return ref, ref0, dual, dual0


def _close(x, y, rel_bits=150):
    """Balls overlap (real and imaginary parts), and the dual ball's radius is at most
    2^-rel_bits of the reference's modulus."""
    parts = [(x.real, y.real), (x.imag, y.imag)] if hasattr(x, "imag") else [(x, y)]
    scale = abs(y).upper()
    for u, v in parts:
        assert u.overlaps(v), (x, y)
        assert u.rad() <= scale * arb(2) ** -rel_bits, (x, y)


def test_dual_product_matches_theta_at_peak_and_far_nodes():
    groups = [
        LatticeGroup(F(10000, 73), 3796, 18),
        LatticeGroup(F(130000, 48673), 1, 4),
        LatticeGroup(F(1, 20), 7, 1),
        LatticeGroup(F(909), 572, 20),
    ]
    N = 400_003
    nodes = [0, 1, 2, 105, 106, 53, 20000, 200001, 399, 54321]
    ref, ref0, dual, dual0 = _both(groups, nodes, N, 0.0123)
    for x, y in zip(dual, ref):
        _close(x, y)
    _close(dual0, ref0)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(
        st.tuples(st.fractions(F(1, 20), F(3000)), st.integers(1, 10**5), st.integers(1, 30)),
        min_size=1,
        max_size=6,
        unique_by=lambda t: t[0],
    ),
    st.integers(64, 10**7),
    st.lists(st.integers(0, 10**7), min_size=1, max_size=8),
    st.floats(1e-6, 0.5),
)
def test_dual_product_matches_theta_random(comps, N, nodes, lam):
    groups = [LatticeGroup(s2, b, m) for s2, b, m in comps]
    nodes = sorted({j % (N // 2 + 1) for j in nodes})
    ref, ref0, dual, dual0 = _both(groups, nodes, N, lam)
    for x, y in zip(dual, ref):
        _close(x, y, 120)
    _close(dual0, ref0, 120)


def test_kernel_runs_match_direct_sums():
    """Horner over runs of nodes == the per-node sum (tails of a small composition)."""
    groups = (LatticeGroup(F(2500, 999), 4, 3), LatticeGroup(F(10000, 999), 1, 9), LatticeGroup(F(10000, 73), 3, 5))
    ks = [1, 30, 150, 400, 900]
    fast = TailEngine(groups).tails(ks, [1e-40] * len(ks))
    reference = EngineConfig(kernel_runs=False, use_dual_product=False)
    slow = TailEngine(groups, config=reference).tails(ks, [1e-40] * len(ks))
    for a, b in zip(fast, slow):
        assert a.error <= 1e-40 and b.error <= 1e-40
        assert abs(a.value - b.value) <= a.error + b.error


@settings(max_examples=25, deadline=None)
@given(
    st.lists(
        st.tuples(st.fractions(F(1, 20), F(3000)), st.integers(1, 10**5), st.integers(1, 30)),
        min_size=1,
        max_size=5,
        unique_by=lambda t: t[0],
    ),
    st.integers(64, 10**7),
    st.lists(st.tuples(st.integers(0, 10**7), st.integers(1, 40)), min_size=1, max_size=4),
    st.floats(1e-6, 0.5),
)
def test_recurrences_over_consecutive_nodes_match_theta(comps, N, runs, lam):
    """Runs of consecutive nodes (the recurrences of DualProduct.values, across residue
    wrap-arounds and restarts) against Arb's theta functions; radii stay within 2^-110."""
    groups = [LatticeGroup(s2, b, m) for s2, b, m in comps]
    half = N // 2
    nodes = sorted({min(half, (s % (half + 1)) + t) for s, length in runs for t in range(length)})
    ref, ref0, dual, dual0 = _both(groups, nodes, N, lam)
    for x, y in zip(dual, ref):
        _close(x, y, 110)
    _close(dual0, ref0, 110)


def test_recurrences_match_direct_evaluation_on_a_long_run():
    """values (recurrences) vs _values_direct (fresh exponentials at every node) on 300
    consecutive nodes through a peak: overlapping balls, radii within 2^4 of the direct ones
    (plus 2^-180 of the value)."""
    from accountant.dualprod import DualProduct

    groups = (LatticeGroup(F(10000, 73), 38, 18), LatticeGroup(F(106, 100), 7, 3), LatticeGroup(F(909), 57, 20))
    eng = TailEngine(groups)
    N = 2_000_000
    nodes = np.arange(52_500, 52_800, dtype=np.int64)  # 38·52_631 ≈ N: a peak of the first factor
    with workprec(200):
        th = eng._thetas(200)
        dp = DualProduct(groups)
        new, new0 = dp.values(nodes, N, arb(0.01), th)
        old, old0 = dp._values_direct(nodes, N, arb(0.01), th)
    for x, y in zip(new, old):
        assert x.real.overlaps(y.real) and x.imag.overlaps(y.imag)
        slack = abs(y).upper() * arb(2) ** -180
        assert x.real.rad() <= 16 * y.real.rad() + slack and x.imag.rad() <= 16 * y.imag.rad() + slack
    assert new0.overlaps(old0)
