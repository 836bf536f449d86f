"""Issue 32 (accountant items): default tolerances on the main pair, honest ε brackets.

* Item 1: ``Composition.tradeoff`` with its default tolerance must meet it on the paper's main
  pair [M13, M13], also at an α that equals a lattice vertex α_j = P[Y ≥ j] to 40 digits (there
  the bracket α_{j+1} < α < α_j cannot be certified at any reasonable precision).
* Item 7: ``Composition.epsilon`` on the coarse sandwich must not stop at the first probe whose
  δ interval straddles the target: it refines, and when it cannot separate any further it says
  how loose the bracket is (``tolerance_met`` False, ``relative_width``).
"""

from __future__ import annotations

import time
from fractions import Fraction as F

import mpmath
import pytest

from accountant import Composition, DiscreteGaussian
from tests.accountant import oracle as O

ISSUE_ALPHA = "1.482296341056795859074872324357716721806e-10"  # α_198489 of [M13, M13] to 40 digits


@pytest.fixture(scope="module")
def main_pair() -> Composition:
    from optimizer.allocation import load_builtin
    from optimizer.pairs import dhc_persons_paths, pair_composition

    paths = {p.index: p for p in dhc_persons_paths(load_builtin("dhc-persons"))}
    return pair_composition(paths[13], paths[13])


def _vertex_alpha(comp: Composition, m: int, complement: bool) -> F:
    """P[Y ≥ m] to 40 significant digits (or 1 minus that): an α within ~1e-40 relative of a
    vertex α_j of the trade-off curve (j = m, or j = 1 − m on the α > 1/2 side)."""
    t = comp.tail(m, tol=1e-60, rtol=1e-50)
    with mpmath.workdps(80):
        v = F(mpmath.nstr(t.value, 40, min_fixed=0, max_fixed=0))
    return 1 - v if complement else v


@pytest.mark.parametrize(
    "alpha",
    [ISSUE_ALPHA, "1e-12", "1e-3", "0.5", "0.9999999999", "vertex-low", "vertex-high"],
)
def test_item1_main_pair_tradeoff_meets_default_tolerance(main_pair, alpha):
    """Issue 32 item 1: a default ``tradeoff`` call meets its default tolerance (1e-25) on the
    main pair, and its interval overlaps a tighter (tol = 1e-40) evaluation of the same β."""
    if alpha == "vertex-low":
        alpha = _vertex_alpha(main_pair, 180000, complement=False)  # α ≈ 1e-8, another vertex
    elif alpha == "vertex-high":
        alpha = _vertex_alpha(main_pair, 150000, complement=True)  # α ≈ 1 − 1e-6: α > 1/2 side
    a = alpha if isinstance(alpha, F) else F(alpha)
    t0 = time.perf_counter()
    beta = main_pair.tradeoff(a)
    elapsed = time.perf_counter() - t0
    assert beta.tolerance_met, (alpha, beta)
    assert beta.error <= 1e-25
    tight = main_pair.tradeoff(a, tol=1e-40, rtol=1e-35)
    assert tight.tolerance_met, (alpha, tight)
    assert beta.lower <= tight.upper and tight.lower <= beta.upper, (alpha, beta, tight)
    assert elapsed < 5.0, elapsed  # a few hundredths of a second measured; this is a hang guard


def _round_sig(x: F, digits: int) -> F:
    """x > 0 rounded to ``digits`` significant decimal digits (exactly)."""
    e = len(str(x.numerator // x.denominator)) if x >= 1 else -len(str(x.denominator // x.numerator)) + 1
    scale = F(10) ** (digits - e)
    return F(round(x * scale)) / scale


def _comp(components) -> Composition:
    return Composition({DiscreteGaussian(s2, shift=sh): m for s2, sh, m in components})


@pytest.mark.parametrize(
    "components",
    [
        [(F(7, 5), 1, 3), (F(3, 2), 2, 2)],  # L = 21, b = (15, 28), 2C = 157 (the oracle's MIXED)
        [(F(73, 100), 1, 2), (F(11, 10), 1, 2)],
    ],
)
def test_item1_tradeoff_on_a_vertex_against_the_oracle(components):
    """Issue 32 item 1, independently checked: at α equal to a vertex α_j to 60 digits (on both
    sides of 1/2, so both the tail and the complement formulas run) the default call meets its
    tolerance and its interval overlaps the certified brute-force enclosure of β(α)."""
    comp = _comp(components)
    pe = O.pmf_enclosure(components)
    c = pe.two_c // 2
    for j in (c - 9, c - 3, c + 4, c + 11):  # α_j from ~1 − 1e-4 down to ~1e-6 (both sides of 1/2)
        (alo, ahi), _ = O._vertex_q(pe, j)
        a = _round_sig((F(alo) + F(ahi)) / 2, 60)
        beta = comp.tradeoff(a)
        assert beta.tolerance_met, (j, a, beta)
        lo, hi = O.beta(components, a)
        assert beta.lower <= hi and lo <= beta.upper, (j, beta, lo, hi)
