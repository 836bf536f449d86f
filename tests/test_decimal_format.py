"""Exact directed decimal formatting of pair-job bounds (optimizer.jobs.profile._decimal)."""

from fractions import Fraction

import mpmath
from hypothesis import given, settings
from hypothesis import strategies as st

from optimizer.jobs.profile import _decimal


@settings(max_examples=300, deadline=None)
@given(st.integers(-(2**200), 2**200).filter(bool), st.integers(-1200, 400), st.integers(1, 30))
def test_directed_strings_bracket_the_value_within_one_unit(man, exp, n):
    exact = Fraction(man) * Fraction(2) ** exp
    with mpmath.workprec(256):
        x = mpmath.ldexp(mpmath.mpf(man), exp)  # exact: man has ≤ 201 bits
    lo, hi, mid = (Fraction(_decimal(x, n, m)) for m in ("down", "up", "nearest"))
    assert lo <= exact <= hi
    # one unit in the n-th significant digit of |x| (bounded by 10·|x|·10^-n)
    unit = abs(exact) * Fraction(10) ** (1 - n) * 10
    assert hi - lo <= unit and abs(mid - exact) <= unit / 2
    for m in ("down", "up", "nearest"):
        digits = _decimal(x, n, m).lstrip("-").split("e")[0].replace(".", "")
        assert len(digits) == (n if n > 1 else 2)  # "d.0" for one digit


def test_known_values():
    assert _decimal(mpmath.mpf("0.5"), 3, "nearest") == "5.00e-1"
    assert _decimal(Fraction(1, 3), 4, "down") == "3.333e-1"
    assert _decimal(Fraction(1, 3), 4, "up") == "3.334e-1"
    assert _decimal(Fraction(-1, 3), 4, "down") == "-3.334e-1"
    assert _decimal(Fraction(999999, 1000), 3, "up") == "1.00e3"
    assert _decimal(0, 5, "up") == "0.0"


@settings(max_examples=300, deadline=None)
@given(st.integers(-(2**120), 2**120), st.integers(-600, 200), st.integers(0, 2**120), st.integers(-600, 200))
def test_mid_decimal_equals_decimal_of_the_midpoint(m1, e1, w, e2):
    from accountant import Certified
    from optimizer.jobs.profile import _mid_decimal

    with mpmath.workprec(2000):
        lo = mpmath.ldexp(mpmath.mpf(m1), e1)
        hi = lo + mpmath.ldexp(mpmath.mpf(w), e2)  # exact at 2000 bits
    c = Certified(lo, hi)

    def frac(x):  # the exact binary value of a stored end point
        sign, man, exp, _ = x._mpf_
        return (-1 if sign else 1) * Fraction(man) * Fraction(2) ** exp

    exact = (frac(c.lower) + frac(c.upper)) / 2
    assert _mid_decimal(c, 25) == _decimal(exact, 25, "nearest")
