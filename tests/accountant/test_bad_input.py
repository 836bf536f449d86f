"""Every public entry point rejects bad input with a clear message naming the value."""

import math
from fractions import Fraction as F

import pytest

from accountant import Composition, DiscreteGaussian


@pytest.fixture(scope="module")
def comp():
    return Composition([DiscreteGaussian(F(5, 2))] * 2)


def test_empty_composition():
    with pytest.raises(ValueError, match="empty"):
        Composition([])
    with pytest.raises(ValueError, match="empty"):
        Composition({DiscreteGaussian(2): 0})


def test_non_mechanism_items():
    with pytest.raises(TypeError, match="item 1"):
        Composition([DiscreteGaussian(2), 3.0])
    with pytest.raises(ValueError, match="multiplicity"):
        Composition({DiscreteGaussian(2): -1})


@pytest.mark.parametrize("eps", [-1, "-0.5", math.nan, math.inf, "abc"])
def test_bad_epsilon(comp, eps):
    with pytest.raises(ValueError, match="eps"):
        comp.delta(eps)


@pytest.mark.parametrize("delta", [0, 1, 1.5, -1e-3, math.nan])
def test_bad_delta(comp, delta):
    with pytest.raises(ValueError, match="delta"):
        comp.epsilon(delta)


@pytest.mark.parametrize("alpha", [-0.1, 1.1, math.nan])
def test_bad_alpha(comp, alpha):
    with pytest.raises(ValueError, match="alpha"):
        comp.tradeoff(alpha)


@pytest.mark.parametrize("tol", [0, -1e-10, math.nan])
def test_bad_tolerance(comp, tol):
    with pytest.raises(ValueError, match="tol"):
        comp.delta(1, tol=tol)


def test_bad_threshold_type(comp):
    with pytest.raises(TypeError, match="thresholds"):
        comp.tails([1.5])
