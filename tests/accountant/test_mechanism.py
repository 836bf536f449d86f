"""Validation of the exact mechanism specification."""

import math
from fractions import Fraction

import pytest

from accountant import DiscreteGaussian


@pytest.mark.parametrize("bad", [0, -1, "-3/2", "0/5", Fraction(0)])
def test_nonpositive_sigma2_rejected(bad):
    with pytest.raises(ValueError, match="sigma2"):
        DiscreteGaussian(bad)


@pytest.mark.parametrize("bad", [math.nan, math.inf, 1.5])
def test_float_sigma2_rejected(bad):
    with pytest.raises(TypeError, match="float"):
        DiscreteGaussian(bad)


@pytest.mark.parametrize("bad", ["nan", "inf", "abc", "1/0"])
def test_unparseable_sigma2_rejected(bad):
    with pytest.raises(ValueError, match="sigma2"):
        DiscreteGaussian(bad)


@pytest.mark.parametrize("bad", [1.0, "1", True])
def test_non_integer_shift_rejected(bad):
    with pytest.raises(TypeError, match="shift"):
        DiscreteGaussian(3, shift=bad)


def test_from_rho_census_convention():
    m = DiscreteGaussian.from_rho("73/10000")
    assert m.sigma2 == Fraction(10000, 73)
    assert m.zcdp_rho == Fraction(73, 20000)
    assert m.loss_weight == Fraction(73, 10000)


def test_from_float_rounding_direction():
    up = DiscreteGaussian.from_float_sigma2(2.5, "up")
    down = DiscreteGaussian.from_float_sigma2(2.5, "down")
    assert down.sigma2 < Fraction(5, 2) < up.sigma2
    with pytest.raises(ValueError, match="rounding"):
        DiscreteGaussian.from_float_sigma2(2.5, "nearest")
