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
    from optimizer.census.allocation import load_builtin
    from optimizer.census.pairs import dhc_persons_paths, pair_composition

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
    from optimizer.census.allocation import load_builtin
    from optimizer.census.pairs import dhc_persons_paths, pair_composition

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


@settings(max_examples=60, deadline=None)
@given(st.lists(st.floats(-300, 0), min_size=1, max_size=80))
def test_upper_hull_is_a_concave_majorant(ys):
    """_upper_hull: H ≥ y everywhere, and H's second differences are ≤ 0 (up to rounding)."""
    import numpy as np

    from accountant.split import _upper_hull

    y = np.array(ys)
    h = _upper_hull(y)
    assert (h >= y).all()
    if len(h) >= 3:
        assert (h[2:] - 2 * h[1:-1] + h[:-2] <= 1e-9 * (1 + np.abs(h[1:-1]))).all()


@settings(max_examples=80, deadline=None)
@given(
    st.integers(5, 60),
    st.integers(1, 40),
    st.integers(1, 40),
    st.floats(0.5, 400),
    st.floats(0.5, 400),
    st.lists(st.tuples(st.integers(-3000, 3000), st.floats(-120, -1)), min_size=1, max_size=8),
    st.integers(0, 2**32),
)
def test_kept_range_contains_every_term_the_pruning_keeps(R, d_a, d_b, v_u, v_v, wins, seed):
    """_bisect_kept_range narrows each window to an interval that holds every u the saddle-point
    pruning keeps (log φ̄_u − t₊²/(2 v_V) above the window's threshold, t = ⌈(k − d_a u)/d_b⌉),
    for log-concave and for bumpy (non-log-concave, with zero-mass holes) weights."""
    import random

    import numpy as np

    from accountant.split import _bisect_kept_range, _upper_hull

    rnd = random.Random(seed)
    us = np.arange(-R, R + 1)
    log_phi = -(us.astype(float) ** 2) / (2 * v_u)
    if seed % 2:  # bumpy: noise and holes
        log_phi = log_phi + np.array([rnd.uniform(-8, 0) for _ in us])
        log_phi[[rnd.randrange(len(us)) for _ in range(3)]] = -1e6
    ks = [k for k, _ in wins]
    thr = np.array([t for _, t in wins])
    enum = [(-R, R)] * len(ks)
    got = _bisect_kept_range(enum, ks, _upper_hull(log_phi), R, d_a, d_b, v_v, thr)
    for (lo, hi), k, th in zip(got, ks, thr):
        for u in range(-R, R + 1):
            t = -((d_a * u - k) // d_b)
            tp = max(float(t), 0.0)
            b = log_phi[u + R] - tp * tp / (2 * v_v * (1 + 1e-12))
            if b > th - 1e-9 * (1 + abs(th)):
                assert lo <= u <= hi, (u, lo, hi, k, th)


@settings(max_examples=40, deadline=None)
@given(
    st.lists(st.tuples(st.floats(-1, 1), st.floats(0, 1e-30)), min_size=1, max_size=10),
    st.integers(64, 1200),
    st.integers(0, 600),
)
def test_narrowed_fixed_point_keeps_its_error_bounds(vals, bits, shift):
    """_narrowed: X' = ⌊X/2^shift⌋ at `bits` fractional bits still satisfies
    |x − X'·2^−bits| ≤ e' for every x in the ball (and |X'|·2^−bits ≤ the magnitude bound)."""
    from flint import arb, ctx

    from accountant.split import FLOAT_ERROR_MAX_BITS, _fixed_point, _fixed_point_int, _narrowed

    def exact(a):  # an exact Arb value as a Fraction
        man, exp = a.man_exp()
        return F(int(man)) * F(2) ** int(exp)

    old = ctx.prec
    ctx.prec = bits + shift + 64
    try:
        balls = [arb(v, r) for v, r in vals]
        top = bits + shift
        ulp = F(1, 2**bits)
        ends = [(exact(x.mid()) - exact(x.rad().mid()), exact(x.mid()) + exact(x.rad().mid())) for x in balls]
        if top <= FLOAT_ERROR_MAX_BITS:
            X, mags, errs = _narrowed(_fixed_point(balls, top), shift, bits)
            for (lo, hi), Xi, m, e in zip(ends, X, mags, errs):
                approx = int(Xi) * ulp
                assert max(abs(lo - approx), abs(hi - approx)) <= F(float(e))
                assert abs(approx) <= F(float(m))
        else:
            X, E = _narrowed(_fixed_point_int(balls, top), shift, bits)
            for (lo, hi), Xi, Ei in zip(ends, X, E):
                approx = int(Xi) * ulp
                assert max(abs(lo - approx), abs(hi - approx)) <= int(Ei) * ulp
    finally:
        ctx.prec = old


def test_chunked_window_terms_give_the_same_tails():
    """EngineConfig.split_chunk_terms (how many window terms are enumerated, pruned and summed
    at a time) changes memory, not results: chunks of 7 terms and the default give the same
    balls, which bracket the convolution."""
    from accountant.pmf import PmfEngine

    d_a, d_b = 37, 3
    v_u = sum(F(g.mult * g.b * g.b) * g.sigma2 for g in A)
    ks = list(range(-400, 900, 17))
    targets = [1e-30 if i % 2 else 1e-12 for i in range(len(ks))]
    one = SplitEngine(PmfEngine(A), PmfEngine(B), d_a, d_b, v_u).tails(ks, targets)
    small = SplitEngine(PmfEngine(A), PmfEngine(B), d_a, d_b, v_u, EngineConfig(split_chunk_terms=7)).tails(ks, targets)
    full = [(g.sigma2, g.b * d_a, g.mult) for g in A] + [(g.sigma2, g.b * d_b, g.mult) for g in B]
    dist = lattice_pmf(full)
    for k, t, a, b in zip(ks, targets, one, small):
        assert a.lower == b.lower and a.upper == b.upper
        assert a.error <= t
        ref = tail(dist, k)
        assert a.lower - mpmath.mpf("1e-45") <= ref <= a.upper + mpmath.mpf("1e-45")
