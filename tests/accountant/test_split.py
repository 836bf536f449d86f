"""The exact split Y = d_A·U + d_B·V against the direct trapezoid and explicit convolution."""

import functools
import math
from fractions import Fraction as F

import mpmath
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant import Composition
from accountant.engine import EngineConfig
from accountant.quadrature import LatticeGroup, TailEngine
from accountant.split import SplitEngine, find_split

from .bruteforce import lattice_pmf, tail

A = (LatticeGroup(F(2, 3), 4, 2), LatticeGroup(F(8, 3), 1, 3))
B = (LatticeGroup(F(3), 4, 1), LatticeGroup(F(5), 1, 2))
D_A, D_B = 37, 3


def test_split_matches_direct_and_convolution():
    full = tuple(LatticeGroup(g.sigma2, g.b * D_A, g.mult) for g in A) + tuple(
        LatticeGroup(g.sigma2, g.b * D_B, g.mult) for g in B
    )
    v_u = sum(F(g.mult * g.b * g.b) * g.sigma2 for g in A)
    split = SplitEngine(TailEngine(A), TailEngine(B), D_A, D_B, v_u)
    direct = TailEngine(full)
    dist = lattice_pmf([(g.sigma2, g.b, g.mult) for g in full])
    ks = [-30, 1, 50, 200, 400, 700]
    for k, s, d in zip(ks, split.tails(ks, [1e-40] * 6), direct.tails(ks, [1e-40] * 6)):
        ref = tail(dist, k)
        assert s.lower - mpmath.mpf("1e-50") <= ref <= s.upper + mpmath.mpf("1e-50")
        assert abs(s.value - d.value) <= s.error + d.error
        assert s.error <= 1e-38


def test_short_path_pair_uses_split_and_agrees_with_published_worst_case():
    """[M6, M6] of the DHC (weights 4·48673, 48673, 4·949, 949) is split; the published
    worst-case δ at ε_BS(1e-10) is 1.783201e-12 (arg-max pair 6-6)."""
    from optimizer.allocation import load_builtin
    from optimizer.pairs import dhc_persons_paths, pair_composition

    p6 = {p.index: p for p in dhc_persons_paths(load_builtin("dhc-persons"))}[6]
    comp = pair_composition(p6, p6)
    groups = tuple(LatticeGroup(m.sigma2, b, c) for (m, c), b in zip(comp.groups, comp.lattice.weights))
    assert find_split(groups) is not None
    d = comp.delta("26.340588852722324353781974500154992685")
    assert abs(d.value - mpmath.mpf("1.783201e-12")) <= mpmath.mpf("5e-19")
    assert d.error <= 1e-35


@functools.cache
def _parts_laws():
    """Exact laws of U (groups A) and V (groups B) by convolution, and V's suffix sums."""
    pu = lattice_pmf([(g.sigma2, g.b, g.mult) for g in A])
    pv = lattice_pmf([(g.sigma2, g.b, g.mult) for g in B])
    vs = sorted(pv)
    with mpmath.workdps(60):
        suffix, acc = {}, mpmath.mpf(0)
        for v in reversed(vs):
            acc += pv[v]
            suffix[v] = acc
    return pu, vs, suffix


def _split_tail(d_a, d_b, k):
    """P[d_a U + d_b V ≥ k] = Σ_u P[U = u] P[V ≥ ⌈(k − d_a u)/d_b⌉] from the explicit laws."""
    pu, vs, suffix = _parts_laws()
    with mpmath.workdps(60):
        total = mpmath.mpf(0)
        for u, p in pu.items():
            t = -((d_a * u - k) // d_b)
            if t <= vs[0]:
                total += p
            elif t <= vs[-1]:
                total += p * suffix[t]
        return total


@settings(max_examples=25, deadline=None)
@given(
    st.integers(2, 60).filter(lambda d: math.gcd(d, 3) == 1),
    st.lists(st.integers(-400, 900), min_size=1, max_size=6),
    st.lists(st.sampled_from([1e-40, 1e-20, 1e-8, 1e-3]), min_size=6, max_size=6),
)
def test_split_windows_and_mixed_targets_bracket_the_convolution(d_a, ks, targets):
    """Per-threshold windows/radii (loose targets cost fewer terms) still bracket the truth."""
    from accountant.pmf import PmfEngine

    d_b = 3
    v_u = sum(F(g.mult * g.b * g.b) * g.sigma2 for g in A)
    split = SplitEngine(PmfEngine(A), PmfEngine(B), d_a, d_b, v_u)
    tg = targets[: len(ks)]
    for k, t, c in zip(ks, tg, split.tails(ks, tg)):
        ref = _split_tail(d_a, d_b, k)
        assert c.lower - mpmath.mpf("1e-50") <= ref <= c.upper + mpmath.mpf("1e-50"), (k, c, ref)
        assert c.error <= t, (k, t, c.error)


def test_tradeoff_of_a_split_composition_by_the_direct_engine_agrees():
    """delta_and_tradeoff routes the trade-off thresholds of a split composition to the direct
    trapezoid when its estimate is small; both routes give overlapping certified vertices."""
    from optimizer.allocation import load_builtin
    from optimizer.pairs import dhc_persons_paths, pair_composition

    p6 = {p.index: p for p in dhc_persons_paths(load_builtin("dhc-persons"))}[6]
    spec = dict(pair_composition(p6, p6).groups)
    comp = Composition(spec, config=EngineConfig(tradeoff_direct_max_estimate=10**12))
    assert isinstance(comp._engine, SplitEngine)
    assert isinstance(comp._chooser.tradeoff_batch(comp._engine), TailEngine)
    d1, c1 = comp.delta_and_tradeoff(["26.34"], n=61)
    assert c1.diagnostics.engine == "trapezoid"
    comp = Composition(spec, config=EngineConfig(tradeoff_direct_max_estimate=0))
    assert comp._chooser.tradeoff_batch(comp._engine) is None
    d2, c2 = comp.delta_and_tradeoff(["26.34"], n=61)
    assert c2.diagnostics.engine == "split"
    assert c1.k == c2.k
    for a, b in zip(c1.alpha + c1.beta + tuple(d1), c2.alpha + c2.beta + tuple(d2)):
        assert a.error <= 1e-25 and abs(a.value - b.value) <= a.error + b.error


def test_fixed_point_window_sums_match_ball_products():
    """SplitEngine's exact fixed-point dot products (EngineConfig.split_fixed_point) and the
    term-by-term Arb products give overlapping tails, both within target, both bracketing the
    convolution."""
    from accountant.pmf import PmfEngine

    d_a, d_b = 37, 3
    v_u = sum(F(g.mult * g.b * g.b) * g.sigma2 for g in A)
    ks = list(range(-400, 900, 23))
    targets = [1e-30] * len(ks)
    fast = SplitEngine(PmfEngine(A), PmfEngine(B), d_a, d_b, v_u).tails(ks, targets)
    slow = SplitEngine(PmfEngine(A), PmfEngine(B), d_a, d_b, v_u, EngineConfig(split_fixed_point=False)).tails(
        ks, targets
    )
    full = [(g.sigma2, g.b * d_a, g.mult) for g in A] + [(g.sigma2, g.b * d_b, g.mult) for g in B]
    dist = lattice_pmf(full)
    for k, a, b in zip(ks, fast, slow):
        ref = tail(dist, k)
        assert a.error <= 1e-30 and b.error <= 1e-30
        assert abs(a.value - b.value) <= a.error + b.error
        assert a.lower - mpmath.mpf("1e-45") <= ref <= a.upper + mpmath.mpf("1e-45")


def test_saddle_point_pruning_keeps_deep_tails_certified_with_fewer_terms():
    """EngineConfig.split_prune_terms drops window terms whose sub-Gaussian bound is below
    τ_k/(8 n_k) and charges them in the radius: deep tails (down to 1e-45, targets 1e-60) still
    bracket the explicit convolution and meet their targets, from fewer summed terms."""
    from accountant.pmf import PmfEngine

    u_groups, v_groups = (LatticeGroup(F(30), 1, 2),), (LatticeGroup(F(20), 1, 1),)
    d_a, d_b = 3, 37  # long windows in u: most of their terms are far from the saddle
    v_u = F(60)
    full = [(F(30), d_a, 2), (F(20), d_b, 1)]
    dist = lattice_pmf(full)
    sd = math.sqrt(sum(float(s2) * b * b * m for s2, b, m in full))
    ks = [round(z * sd) for z in (0.5, 3, 6, 9, 12, 13.5)]
    refs = [tail(dist, k) for k in ks]
    assert refs[-1] < 1e-40  # deep tails
    targets = [1e-60] * len(ks)
    pruned = SplitEngine(PmfEngine(u_groups), PmfEngine(v_groups), d_a, d_b, v_u)
    full_sum = SplitEngine(
        PmfEngine(u_groups), PmfEngine(v_groups), d_a, d_b, v_u, EngineConfig(split_prune_terms=False)
    )
    a_res, b_res = pruned.tails(ks, targets), full_sum.tails(ks, targets)
    assert 0 < pruned.summed_terms < full_sum.summed_terms
    for ref, a, b in zip(refs, a_res, b_res):
        assert a.error <= 1e-60 and b.error <= 1e-60
        with mpmath.workdps(90):  # the convolution keeps 60 digits: allow its own rounding
            slack = ref * mpmath.mpf("1e-55") + mpmath.mpf("1e-80")
            assert a.lower - slack <= ref <= a.upper + slack, (ref, a)
            assert abs(a.value - b.value) <= a.error + b.error
