"""Kernel sums over arithmetic progressions of thresholds by one DFT (accountant.quadrature)."""

import itertools
import random
from fractions import Fraction as F

import mpmath
from flint import arb
from hypothesis import given, settings
from hypothesis import strategies as st

import accountant.quadrature as Q
from accountant import Composition, DiscreteGaussian
from accountant.composition import _symmetric_grid
from accountant.engine import EngineConfig
from accountant.quadrature import workprec

from .bruteforce import lattice_pmf, tail


@settings(max_examples=30, deadline=None)
@given(st.integers(1, 50), st.integers(2, 40), st.integers(0, 10**6), st.integers(1, 25), st.integers(0, 2**32))
def test_dft_sums_equal_runs(step, P, k0, n_nodes, seed):
    rnd = random.Random(seed)
    N = P * step
    nodes = sorted(rnd.sample(range(N // 2 + 1), min(n_nodes, N // 2 + 1)))
    ks = [k0 + 1 + m * step for m in range(P) if rnd.random() < 0.7] or [k0 + 1]
    with workprec(160):
        kr = [arb(rnd.uniform(-1, 1)) for _ in nodes]
        ki = [arb(rnd.uniform(-1, 1)) for _ in nodes]
        fast = Q._kernel_sums_dft(nodes, kr, ki, ks, N, step)
        slow = Q._kernel_sums_runs(nodes, kr, ki, ks, N)
    for a, b in zip(fast, slow):
        assert a.overlaps(b)
        assert a.rad() < 1e-40


def test_dft_sums_reject_other_thresholds():
    import pytest

    with pytest.raises(ValueError, match="progression"):
        Q._kernel_sums_dft([0, 1], [arb(1)] * 2, [arb(0)] * 2, [1, 3], 12, 3)


def test_ap_step_detection():
    assert Q._ap_step(list(range(5, 5 + 40 * 7, 7))) == 7
    # four interleaved progressions of one step (a trade-off curve's α/β and reflections)
    ks = sorted({k for m in range(30) for k in (3 + 11 * m, 4 + 11 * m, 9 + 11 * m, 10 + 11 * m)})
    assert Q._ap_step(ks) == 11
    assert Q._ap_step([1, 2, 5, 17, 40, 41, 99]) is None
    rnd = random.Random(1)
    assert Q._ap_step(sorted(rnd.sample(range(1, 10**6), 84))) is None


@given(st.integers(0, 10**9), st.integers(2, 2000), st.fractions(F(1, 3), F(10**6)))
def test_symmetric_grid(two_c, n, step):
    ks = _symmetric_grid(two_c, n, step)
    assert len(ks) == n and len(set(ks)) == n
    d = ks[1] - ks[0]
    assert d >= 1 and abs(d - max(1, round(step))) <= 1 and all(b - a == d for a, b in itertools.pairwise(ks))
    tails = set(ks) | {two_c + 1 - k for k in ks}
    assert len(tails) <= n + 1  # β thresholds are grid points (plus at most one more)


def test_tradeoff_curve_by_dft_brackets_the_convolution(monkeypatch):
    """The default grid goes through the DFT sums; the vertices bracket the exact pmf tails and
    agree with the per-threshold (Horner) evaluation."""
    comp = Composition({DiscreteGaussian(F(3, 2)): 2, DiscreteGaussian(F(5, 2)): 1, DiscreteGaussian(7): 2})
    calls = []
    real = Q._kernel_sums_dft
    monkeypatch.setattr(Q, "_kernel_sums_dft", lambda *a: calls.append(len(a[3])) or real(*a))
    curve = comp.tradeoff_curve(n=101, tol=1e-30)
    assert sum(calls) >= 100  # (nearly) every threshold by DFT
    dist = lattice_pmf([(m.sigma2, b, c) for (m, c), b in zip(comp.groups, comp.lattice.weights)])
    for k, a in zip(curve.k, curve.alpha):
        ref = tail(dist, k)  # direct sum over y ≥ k (any sign of k)
        assert a.lower - mpmath.mpf("1e-45") <= ref <= a.upper + mpmath.mpf("1e-45"), (k, a, ref)
        assert a.error <= 1e-30
    other = Composition(dict(comp.groups), config=EngineConfig(ap_dft=False)).tradeoff_curve(n=101, tol=1e-30)
    assert other.k == curve.k
    for a, b in zip(curve.alpha + curve.beta, other.alpha + other.beta):
        assert abs(a.value - b.value) <= a.error + b.error


def test_delta_and_tradeoff_in_one_batch_equal_the_separate_curves():
    comp = Composition({DiscreteGaussian(F(3, 2)): 2, DiscreteGaussian(F(5, 2)): 1, DiscreteGaussian(7): 2})
    eps = ["0.5", "1.25", "2"]
    ds, curve = comp.delta_and_tradeoff(eps, n=41, tol=1e-30, rtol=1e-15, tradeoff_tol=1e-25)
    ds2 = Composition(dict(comp.groups)).delta_curve(eps, tol=1e-30, rtol=1e-15)
    c2 = Composition(dict(comp.groups)).tradeoff_curve(n=41, tol=1e-25)
    assert curve.k == c2.k and curve.zeta == c2.zeta
    for a, b in zip(ds, ds2):
        assert a.error <= max(1e-30, 1e-15 * a.value) and abs(a.value - b.value) <= a.error + b.error
    for a, b in zip(curve.alpha + curve.beta, c2.alpha + c2.beta):
        assert a.error <= 1e-25 and abs(a.value - b.value) <= a.error + b.error


@settings(max_examples=30, deadline=None)
@given(
    st.integers(2, 400),
    st.integers(1, 60),
    st.lists(st.integers(-(10**7), 10**7), min_size=1, max_size=12),
    st.integers(0, 2**32),
)
def test_full_dft_sums_equal_runs(N, n_nodes, ks, seed):
    """One length-N DFT (every threshold, any sign or size: the sums are N-periodic in k)
    against the run-by-run Horner sums."""
    rnd = random.Random(seed)
    nodes = sorted(rnd.sample(range(N // 2 + 1), min(n_nodes, N // 2 + 1)))
    with workprec(160):
        kr = [arb(rnd.uniform(-1, 1)) for _ in nodes]
        ki = [arb(rnd.uniform(-1, 1)) for _ in nodes]
        fast = Q._kernel_sums_full_dft(nodes, kr, ki, ks, N)
        slow = Q._kernel_sums_runs(nodes, kr, ki, ks, N)
    for a, b in zip(fast, slow):
        assert a.overlaps(b)
        assert a.rad() < 1e-35


def test_full_dft_tails_bracket_the_convolution(monkeypatch):
    """Scattered thresholds (no progression) through the full DFT (forced by
    EngineConfig.full_dft_cost = 0) and through the runs (full_dft off): both meet the target,
    overlap, and bracket the exact pmf tails."""
    from accountant.quadrature import LatticeGroup, TailEngine

    groups = (LatticeGroup(F(7, 3), 5, 2), LatticeGroup(F(11, 2), 3, 1), LatticeGroup(F(40, 7), 1, 2))
    rnd = random.Random(7)
    ks = sorted(rnd.sample(range(1, 160), 40))
    calls = []
    real = Q._kernel_sums_full_dft
    monkeypatch.setattr(Q, "_kernel_sums_full_dft", lambda *a: calls.append(len(a[3])) or real(*a))
    fast = TailEngine(groups, config=EngineConfig(full_dft_cost=0)).tails(ks, [1e-40] * len(ks))
    assert sum(calls) == len(ks)
    slow = TailEngine(groups, config=EngineConfig(full_dft=False)).tails(ks, [1e-40] * len(ks))
    assert sum(calls) == len(ks)  # (the switch keeps it off)
    dist = lattice_pmf([(g.sigma2, g.b, g.mult) for g in groups])
    for k, a, b in zip(ks, fast, slow):
        ref = tail(dist, k)
        assert a.error <= 1e-40 and b.error <= 1e-40
        assert abs(a.value - b.value) <= a.error + b.error
        assert a.lower - mpmath.mpf("1e-50") <= ref <= a.upper + mpmath.mpf("1e-50"), (k, a, ref)
