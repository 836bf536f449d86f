"""Paths, pairs, worst case over pairs and lower convex envelopes."""

import csv
import itertools
from fractions import Fraction as F
from pathlib import Path as FsPath

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import optimizer.census.spine
from accountant import Certified, DiscreteGaussian
from optimizer.census.allocation import load_builtin
from optimizer.census.pairs import (
    MAIN_PAIR,
    Path,
    composition_key,
    dhc_persons_paths,
    lower_convex_envelope,
    mechanism,
    pair_composition,
    pairs,
    paths_from_allocation,
    pointwise_min,
    safe_tradeoff_points,
    worst_case,
)
from optimizer.census.spine import all_patterns

DHC_TOTAL = F(24811, 5000)


@pytest.fixture(scope="module")
def paths():
    return dhc_persons_paths(load_builtin("dhc-persons"))


def test_paths(paths):
    assert [p.index for p in paths] == list(range(1, 44))
    assert all(p.total_rho == DHC_TOTAL for p in paths)
    main = paths[MAIN_PAIR[0] - 1]
    assert len(main.pattern) == 8 and len(main.rho) == 80
    # path 6 = US + State only: 10 + 10 measurements
    assert paths[5].pattern == ("US", "State") and len(paths[5].rho) == 20


def test_mechanism_is_sigma2_one_over_rho(paths):
    mechs = mechanism(paths[12])
    assert len(mechs) == 80
    assert mechs[0] == DiscreteGaussian(F(10000, 73))  # US query, rho 73/10000
    assert mechs[-1] == DiscreteGaussian(F(10000, 11))  # Block query, rho 11/10000
    assert all(m.shift == 1 for m in mechs)


def test_pairs_count_and_order(paths):
    ps = pairs(paths)
    assert len(ps) == 43 * 44 // 2 == 946
    keys = [(a.index, b.index) for a, b in ps]
    assert all(i <= j for i, j in keys) and len(set(keys)) == 946
    assert keys[0] == (1, 1) and keys[-1] == (43, 43)
    with pytest.raises(ValueError, match="repeated path indices"):
        pairs([paths[0], paths[0]])


def test_pair_composition_with_fake(paths):
    captured = {}

    def fake(mechs):
        captured["m"] = mechs
        return len(mechs)

    assert pair_composition(paths[0], paths[12], composition=fake) == len(paths[0].rho) + 80
    # zCDP of unit-shift components is rho/2 each, so a pair totals rho_i/2 + rho_j/2
    assert sum(m.zcdp_rho for m in captured["m"]) == DHC_TOTAL


def test_main_pair_with_accountant(paths):
    comp = pair_composition(paths[12], paths[12])
    if not hasattr(comp, "delta"):
        pytest.skip("accountant.Composition is still a stub")
    assert comp.size == 160
    assert comp.rho == DHC_TOTAL
    # Published exact delta of [M13, M13] at the Bun-Steinke epsilon for delta_zcdp = 1e-2
    # (optimizer/data/dhc_persons_exact_eps_delta.csv, from arXiv 2606.29835's code release).
    with open(FsPath(optimizer.census.spine.__file__).parents[1] / "data" / "dhc_persons_exact_eps_delta.csv") as fh:
        row = next(r for r in csv.DictReader(fh) if r["delta_zcdp"] == "1e-2")
    d = comp.delta(row["epsilon_zcdp"])
    assert abs(d.value / mpmath.mpf(row["delta_exact_main_13_13"]) - 1) < 1e-15


def test_paths_from_all_patterns_conserve_budget():
    a = load_builtin("pl94-units")
    ps = paths_from_allocation(a, all_patterns(a.geolevels))
    assert len(ps) == 32 and all(p.total_rho == a.total_rho for p in ps)
    assert len(ps[0].rho) == 6 and len(ps[-1].rho) == 1  # full spine / top level only


def test_path_validation():
    with pytest.raises(ValueError, match="index"):
        Path(0, ("US",), (F(1),))
    with pytest.raises(ValueError, match="positive Fractions"):
        Path(1, ("US",), (F(0),))


# ---------------------------------------------------------------------- worst case
def C(lo, hi):
    return Certified.from_bounds(lo, hi)


def test_worst_case_certain_ambiguous_and_ties():
    results = {
        (1, 1): [C(1, 2), C(5, 6), C(1, 1)],
        (1, 2): [C(3, 4), C(1, 2), C(1, 1)],
        (2, 2): [C("3.5", 5), C(0, 1), C("0.5", "0.9")],
    }
    w = worst_case(results)
    assert len(w) == 3
    # position 0: (2,2) has the largest upper bound but overlaps (1,2): ambiguous
    assert w[0].argmax == (2, 2) and not w[0].certain
    assert w[0].candidates == ((2, 2), (1, 2))
    assert w[0].value.lower == mpmath.mpf("3.5") and w[0].value.upper == 5
    # position 1: (1,1) lower bound 5 >= every other upper bound: certain
    assert w[1].argmax == (1, 1) and w[1].certain and w[1].candidates == ((1, 1),)
    # position 2: exact tie between (1,1) and (1,2): reported, not certain
    assert not w[2].certain and set(w[2].candidates) == {(1, 1), (1, 2)}
    assert w[2].argmax == (1, 1)


def test_worst_case_rejects_bad_input():
    with pytest.raises(ValueError, match="different grid lengths"):
        worst_case({(1, 1): [C(0, 1)], (1, 2): [C(0, 1), C(0, 1)]})
    with pytest.raises(TypeError, match=r"\(1, 1\) at position 0 is not certified"):
        worst_case({(1, 1): [0.5]})
    with pytest.raises(ValueError, match="no results"):
        worst_case({})


# ---------------------------------------------------------------------- envelopes
def test_envelope_of_two_crossing_curves():
    f1 = [(F(0), F(1)), (F(1, 2), F(1, 5)), (F(1), F(0))]
    f2 = [(F(0), F(4, 5)), (F(1, 2), F(1, 2)), (F(1), F(0))]
    # by hand: f1 = 1 - 8x/5 and f2 = 4/5 - 3x/5 on [0, 1/2] cross at x = 1/5, y = 17/25
    assert pointwise_min([f1, f2]) == [(0, F(4, 5)), (F(1, 5), F(17, 25)), (F(1, 2), F(1, 5)), (1, 0)]
    # hull: (1/5, 17/25) lies above the chord from (0, 4/5) to (1/2, 1/5) (value 14/25 there)
    expected = [(0, F(4, 5)), (F(1, 2), F(1, 5)), (1, 0)]
    assert lower_convex_envelope([f1, f2]) == expected
    assert lower_convex_envelope([pointwise_min([f1, f2])]) == expected


def test_envelope_drops_collinear_and_keeps_convex_curve():
    convex = [(F(0), F(1)), (F(1, 4), F(1, 2)), (F(1, 2), F(1, 4)), (F(1), F(0))]
    assert lower_convex_envelope([convex]) == convex
    line = [(0, 1), (F(1, 2), F(1, 2)), (1, 0)]
    assert lower_convex_envelope([line]) == [(0, 1), (1, 0)]
    # floats work too
    assert lower_convex_envelope([[(0.0, 1.0), (0.5, 0.6), (1.0, 0.0)]]) == [(0.0, 1.0), (1.0, 0.0)]


def test_envelope_below_every_curve_at_every_vertex():
    curves = [
        [(F(0), F(1)), (F(1, 10), F(3, 5)), (F(1, 2), F(1, 10)), (F(1), F(0))],
        [(F(0), F(9, 10)), (F(3, 10), F(2, 5)), (F(1), F(0))],
        [(F(0), F(1)), (F(1, 5), F(1, 2)), (F(7, 10), F(1, 20)), (F(1), F(0))],
    ]
    env = lower_convex_envelope(curves)
    env_x = [x for x, _ in env]

    def env_at(x):
        for (x0, y0), (x1, y1) in itertools.pairwise(env):
            if x0 <= x <= x1:
                return y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        raise AssertionError(x)

    for curve in curves:
        for x, y in curve:
            assert env_at(x) <= y
    slopes = [(y1 - y0) / (x1 - x0) for (x0, y0), (x1, y1) in itertools.pairwise(env)]
    assert slopes == sorted(slopes) and len(set(slopes)) == len(slopes)  # strictly convex
    assert env_x[0] == 0 and env_x[-1] == 1


def test_envelope_bad_input():
    with pytest.raises(ValueError, match=r"curve 0, point 1 is not an \(x, y\) pair"):
        lower_convex_envelope([[(0, 1), 5]])
    with pytest.raises(ValueError, match="NaN"):
        lower_convex_envelope([[(0.0, float("nan"))]])
    with pytest.raises(ValueError, match="no common x-range"):
        pointwise_min([[(0, 1), (1, 0)], [(2, 1), (3, 0)]])


def test_safe_tradeoff_points():
    alpha = [C("0.1", "0.2"), C("-1e-30", "1e-30")]
    beta = [C("0.5", "0.6"), C("-2e-26", "1e-26")]
    assert safe_tradeoff_points(alpha, beta) == [(alpha[0].lower, beta[0].lower), (0, 0)]
    with pytest.raises(ValueError, match="2 alpha values but 1 beta"):
        safe_tradeoff_points(alpha, beta[:1])


def _curve_strings(rnd, n):
    """A convex-ish decreasing trade-off-like curve as decimal strings (with ties and
    near-collinear runs)."""
    from decimal import Decimal, getcontext

    getcontext().prec = 40
    xs = sorted({Decimal(rnd.random()) ** rnd.choice([1, 3, 9]) for _ in range(n)})
    out = []
    for x in xs:
        y = (1 - x.sqrt()) ** 2 * Decimal(1 + rnd.random() * 1e-12)
        out.append((str(x), str(y)))
    return [*out, ("1", "0"), ("0", "1")]


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32), st.integers(1, 6), st.integers(2, 60))
def test_decimal_envelope_equals_the_fraction_hull(seed, n_curves, n_points):
    import random
    from decimal import Decimal

    from optimizer.census.pairs import lower_convex_envelope_decimal

    rnd = random.Random(seed)
    curves = [_curve_strings(rnd, n_points) for _ in range(n_curves)]
    # exact duplicates, points that differ from a hull vertex beyond float precision, and
    # vertices that round to x = 1.0 in floats
    x0, y0 = curves[0][0]
    curves.append(
        [
            (x0, y0),
            (x0, str(Decimal(y0) + Decimal("1e-30"))),
            (str(Decimal(x0) + Decimal("1e-35")), y0),
            ("9.99999999999999999999999e-1", "1.0e-31"),
            ("9.999999999999999999999999e-1", "3.1e-32"),
            ("1", "0"),
        ]
    )
    frac = lambda s: F(Decimal(s))  # noqa: E731
    exact = lower_convex_envelope([[(frac(x), frac(y)) for x, y in c] for c in curves])
    assert lower_convex_envelope_decimal(curves) == exact


@settings(max_examples=60, deadline=None)
@given(
    a=st.lists(st.fractions(min_value=F(1, 1000), max_value=F(10)), min_size=1, max_size=6),
    b=st.lists(st.fractions(min_value=F(1, 1000), max_value=F(10)), min_size=1, max_size=6),
    data=st.data(),
)
def test_composition_keys_are_equal_exactly_for_equal_multisets_of_budgets(a, b, data):
    """Pairs share a confirmation job and a screen exactly when their budgets are the same multiset."""
    shuffled = data.draw(st.permutations(a + b))
    cut = data.draw(st.integers(0, len(shuffled)))
    assert composition_key(a, b) == composition_key(shuffled[:cut], shuffled[cut:])
    assert composition_key(a, b) == composition_key([F(2 * r.numerator, 2 * r.denominator) for r in b], a)
    other = data.draw(st.fractions(min_value=F(1, 1000), max_value=F(10)))
    assert (composition_key(a, b) == composition_key([*a[1:], other], b)) == (other == a[0])
    assert composition_key(a, b) != composition_key(a, [*b, b[0]])  # multiplicity counts
