"""Self-checks of the certified brute-force oracle (tests/accountant/oracle.py).

These tests do not use the library: they check the oracle against closed forms, against the
joint-outcome enumeration, and against structural identities of the trade-off curve.
"""

from __future__ import annotations

import ast
import itertools
import pathlib
from fractions import Fraction as F

import mpmath
import pytest

from tests.accountant import oracle as O

Q = O.as_fraction
SMALL = [(F(1, 3), 2, 2)]
MIXED = [(F(7, 5), 1, 3), (F(3, 2), 2, 2)]  # L = 21, b = (15, 28), 2C = 157


def width(enc):
    return Q(enc[1]) - Q(enc[0])


def contains(enc, x, slack=0):
    return Q(enc[0]) - slack <= Q(x) <= Q(enc[1]) + slack


def overlap(a, b, slack=0):
    return Q(a[0]) - slack <= Q(b[1]) and Q(b[0]) - slack <= Q(a[1])


def mid(enc):
    return (Q(enc[0]) + Q(enc[1])) / 2


def test_independent_of_library():
    """The oracle imports neither the library nor python-flint."""
    tree = ast.parse(pathlib.Path(O.__file__).read_text())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add((node.module or "").split(".")[0])
    assert not names & {"accountant", "optimizer", "flint"}, names


def test_lattice():
    assert O.lattice([(F(73, 100), 1, 2), (F(11, 10), 1, 2)]) == (F(803, 10), [110, 73], 366)
    assert O.lattice(SMALL) == (F(1, 6), [1], 4)
    assert O.lattice(MIXED) == (F(21), [15, 28], 157)
    assert O.lattice([(F(250), 3, 1), (F(1, 1000), 1, 1)]) == (F(250), [3, 250000], 250009)


def test_exp_enclosure():
    for x in ["2.5", "-7/3", "0", "1e-30", "40"]:
        lo, hi = O.exp_enclosure(x)
        with mpmath.workdps(300):
            v = mpmath.exp(mpmath.mpf(F(x).numerator) / F(x).denominator)
            assert lo <= Q(v) * (1 + F(1, 10**280)) and Q(v) * (1 - F(1, 10**280)) <= hi
            assert hi - lo <= hi * F(1, 10**220)


# ------------------------------------------------------------------ (i) mass accounting
@pytest.mark.parametrize(
    "comps",
    [SMALL, MIXED, [(F(1000), 1, 2)], [(F(250), 3, 1), (F(1, 1000), 1, 1)], [(F(1, 10), 1, 1), (F(1000), 1, 1)]],
)
def test_pmf_sums_to_one_within_E(comps):
    pe = O.pmf_enclosure(comps)
    masses, e = pe
    total = sum(Q(v) for v in masses.values())
    assert all(v > 0 for v in masses.values())
    assert total <= 1
    assert 1 - total == pe.E_exact <= Q(e)
    assert pe.E_exact <= F(1, 10**120)  # the default mass_tol is met
    # Y is symmetric: c_y and c_{-y} are both lower bounds of the same mass
    for y, v in masses.items():
        assert abs(Q(v) - Q(masses.get(-y, 0))) <= pe.E_exact


# ------------------------------------------------------------------ (ii) closed forms
def test_tail_closed_form_sigma2_half():
    """σ² = 1/2, shift 1: Y = X (L = 1/2, b = 1, 2C = 1) and Z = θ₃(0, e^{-1})."""
    comps = [(F(1, 2), 1, 1)]
    assert O.lattice(comps) == (F(1, 2), [1], 1)
    with mpmath.workdps(320):
        z = mpmath.jtheta(3, 0, mpmath.exp(-1))
        for k in [-30, -5, -1, 0, 1, 2, 3, 5, 8, 12, 15]:
            if k >= 1:
                v = (z - mpmath.fsum(mpmath.exp(-x * x) for x in range(1 - k, k))) / (2 * z)
            else:  # P[X ≥ k] = 1 − P[X ≥ 1 − k]
                kk = 1 - k
                v = 1 - (z - mpmath.fsum(mpmath.exp(-x * x) for x in range(1 - kk, kk))) / (2 * z)
            enc = O.tail(comps, k)
            assert contains(enc, v, slack=F(1, 10**300)), k
            assert width(enc) <= F(1, 10**120)
            if v > mpmath.mpf(10) ** -80:
                assert width(enc) <= Q(v) * F(1, 10**25)
            lt = O.lower_tail(comps, k - 1)  # P[X ≤ k−1] = 1 − P[X ≥ k]
            assert contains(lt, 1 - v, slack=F(1, 10**300))


def test_pmf_two_fold_direct_sum():
    """σ² = 1/2, m = 2: P[Y = y] = Σ_x p(x) p(y − x), summed directly at 300 digits."""
    comps = [(F(1, 2), 1, 2)]
    pe = O.pmf_enclosure(comps)
    with mpmath.workdps(300):
        z = mpmath.jtheta(3, 0, mpmath.exp(-1))
        for y in [0, 1, 3, 7, 12, -9]:
            v = mpmath.fsum(mpmath.exp(-x * x - (y - x) ** 2) for x in range(-60, 61)) / z**2
            lo, hi = pe.point_q(y)
            assert lo - F(1, 10**290) <= Q(v) <= hi + F(1, 10**290), y


def test_discrete_gaussian_enclosure():
    table, tb = O.discrete_gaussian_enclosure(F(3, 2), 40)
    with mpmath.workdps(300):
        z = mpmath.jtheta(3, 0, mpmath.exp(-mpmath.mpf(1) / 3))
        for x in [0, 1, 5, -17, 40]:
            v = mpmath.exp(-mpmath.mpf(x * x) / 3) / z
            assert contains(table[x], v, slack=F(1, 10**290))
            assert width(table[x]) <= Q(v) * F(1, 10**200)
        assert Q(tb) >= 1 - mpmath.fsum(mpmath.exp(-mpmath.mpf(x * x) / 3) for x in range(-40, 41)) / z


# ------------------------------------------------------------------ (iii) lattice reduction vs joint outcomes
@pytest.mark.parametrize(
    "mechs",
    [
        [(F(1, 2), 1), (F(2, 3), 1)],
        [(F(1), 1), (F(3, 2), 2)],
        [(F(1, 3), 2), (F(1, 3), 2)],
        [(F(250), 3), (F(1, 1000), 1)],  # b = (3, 250000)
        [(F(1, 2), 1), (F(2, 3), 1), (F(1), 2)],
    ],
)
def test_delta_matches_joint_enumeration(mechs):
    comps = [(s2, s, 1) for s2, s in mechs]
    for eps in ["0", "0.5", "1.3", "3", F(7, 3)]:
        d = O.delta(comps, eps)
        dj = O.delta_joint(mechs, eps)
        assert overlap(d, dj), (mechs, eps, d, dj)
        assert width(dj) <= F(1, 10**38)
        assert width(d) <= F(1, 10**118)
        if Q(dj[0]) > 0:
            assert abs(mid(d) - mid(dj)) <= mid(dj) * F(1, 10**30)


def test_delta_joint_multiplicity_expansion():
    a = O.delta_joint([(F(1, 2), 1, 2)], "0.7")
    b = O.delta_joint([(F(1, 2), 1), (F(1, 2), 1)], "0.7")
    assert a == b
    assert overlap(a, O.delta([(F(1, 2), 1, 2)], "0.7"))


@pytest.mark.parametrize("comps", [SMALL, MIXED])
def test_delta_is_the_best_vertex(comps):
    """δ(ε) = max_j (1 − β_j − e^ε α_j), attained at j = k1 + 2C (hockey-stick duality)."""
    pe = O.pmf_enclosure(comps)
    for eps in [F(0), F(1, 10), F(5, 2), F(4)]:
        k1 = O._k1(pe, eps)
        j_star = k1 + pe.two_c
        d = O.delta(comps, eps)
        e_lo, e_hi = O.exp_enclosure(eps)

        def objective(j, e_lo=e_lo, e_hi=e_hi):
            (alo, ahi), (blo, bhi) = O._vertex_q(pe, j)
            return 1 - bhi - e_hi * ahi, 1 - blo - e_lo * alo

        assert overlap(d, objective(j_star))
        for j in [j_star - 2, j_star - 1, j_star + 1, j_star + 2]:
            _lo, hi = objective(j)
            assert hi <= Q(d[1]) + F(1, 10**110)


# ------------------------------------------------------------------ (iv) trade-off curve
ALPHAS = [
    "1e-40",
    "1e-30",
    "1e-12",
    "1e-6",
    "0.001",
    "0.01",
    "0.1",
    "0.25",
    "0.5",
    "0.75",
    "0.9",
    "0.999",
    F(1) - F(1, 10**12),
    F(1) - F(1, 10**20),
    F(1) - F(1, 10**30),
]


@pytest.mark.parametrize("comps", [SMALL, MIXED, [(F(1000), 1, 2)]])
def test_beta_monotone_and_tight(comps):
    encs = [O.beta(comps, a) for a in ALPHAS]
    for (lo1, _hi1), (_lo2, hi2) in itertools.pairwise(encs):
        assert Q(lo1) >= Q(hi2)  # β non-increasing; enclosures tight enough to order strictly
    for a, enc in zip(ALPHAS, encs):
        assert Q(enc[0]) <= Q(enc[1])
        assert width(enc) <= F(1, 10**95) and width(enc) <= Q(enc[1]) * F(1, 10**20), a
    assert O.beta(comps, 0) == (1, 1) and O.beta(comps, 1) == (0, 0)


@pytest.mark.parametrize("comps", [SMALL, MIXED])
def test_beta_symmetric(comps):
    """The curve of a symmetric Y is symmetric: β(β(α)) = α."""
    for a in ["1e-30", "1e-6", "0.2", "0.5", F(1) - F(1, 10**12)]:
        b = mid(O.beta(comps, a))
        back = O.beta(comps, b)
        assert abs(mid(back) - Q(a)) <= Q(a) * F(1, 10**15), a


@pytest.mark.parametrize("comps", [SMALL, MIXED])
def test_beta_at_vertices_and_midpoints(comps):
    pe = O.pmf_enclosure(comps)
    c = pe.two_c // 2
    for j in range(c - 12, c + 14, 2):
        (alo, ahi), (blo, bhi) = O._vertex_q(pe, j)
        if alo <= 0 or ahi >= 1:
            continue
        # at the vertex (evaluated at both ends of α_j's enclosure: the ambiguous bracket path)
        slope = pe.point_q(pe.two_c - j)[1] / pe.point_q(j)[0] + 1  # ≥ |β'| on both segments
        tol = slope * (ahi - alo) + F(1, 10**110)
        for a in [alo, ahi, (alo + ahi) / 2]:
            enc = O.beta(comps, a)
            assert overlap(enc, (blo, bhi), slack=tol), j
            assert width(enc) <= tol + F(1, 10**100)
        # the middle of the segment [α_{j+1}, α_j] maps to the middle of [β_j, β_{j+1}]
        (a2lo, _a2hi), (b2lo, _b2hi) = O._vertex_q(pe, j + 1)
        am = (alo + a2lo) / 2
        enc = O.beta(comps, am)
        assert abs(mid(enc) - (blo + b2lo) / 2) <= 10 * tol


def test_beta_extremes_sample():
    for a, expect in [("1e-30", "0.99999999999728178629956"), (F(1) - F(1, 10**30), "2.1674939631200506916279e-59")]:
        enc = O.beta(SMALL, a)
        with mpmath.workdps(40):
            e = mpmath.mpf(expect)
            assert abs(mid(enc) - Q(e)) <= Q(e) * F(1, 10**21)
        assert width(enc) <= Q(enc[1]) * F(1, 10**60)


# ------------------------------------------------------------------ (v) tightness
@pytest.mark.parametrize("comps", [SMALL, MIXED, [(F(73, 100), 1, 2), (F(11, 10), 1, 2)]])
def test_tail_enclosures_tight(comps):
    pe = O.pmf_enclosure(comps)
    ys = sorted(pe.masses)
    checked = 0
    for k in range(ys[0] - 2, ys[-1] + 3, max(1, (ys[-1] - ys[0]) // 400)):
        lo, hi = O.tail(comps, k)
        assert lo <= hi and lo >= 0 and hi <= 1
        if lo >= mpmath.mpf(10) ** -80:
            assert width((lo, hi)) <= Q(lo) * F(1, 10**25), k
            checked += 1
    assert checked > 20
    d = O.delta(comps, "1")
    assert width(d) <= Q(d[0]) * F(1, 10**25)


def test_smaller_mass_tol_resolves_deeper_tails():
    comps = SMALL
    k = 20  # P[Y ≥ 20] ≈ 2.7e-131, below the default E ≈ 1e-124
    deep = O.tail(comps, k, mass_tol=1e-200)
    assert width(deep) <= Q(deep[0]) * F(1, 10**25)
    assert overlap(deep, O.tail(comps, k))
