"""The trapezoid planner's saddle point (accountant.quadrature._Cgf.saddle): λ with K'(λ) = k, where K is
the cumulant generating function of the lattice sum Σ b·X (X ~ N_Z(0, σ²)).  K' is recomputed here
independently, as the mean of each tilted discrete Gaussian summed over its support in mpmath."""

from __future__ import annotations

import math
from fractions import Fraction

import mpmath
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from accountant.lattice import LatticeGroup
from accountant.quadrature import _Cgf


def _tilted_mean(sigma2: Fraction, t: mpmath.mpf) -> mpmath.mpf:
    """E[X] under P_t(x) ∝ exp(−x²/(2σ²) + t x), by direct summation around the peak tσ²."""
    s2 = mpmath.mpf(sigma2.numerator) / sigma2.denominator
    centre = int(mpmath.nint(t * s2))
    half = int(60 * math.sqrt(float(s2))) + 60
    num = den = mpmath.mpf(0)
    for x in range(centre - half, centre + half + 1):
        w = mpmath.exp(-(mpmath.mpf(x - centre) ** 2) / (2 * s2) + (t - centre / s2) * (x - centre))
        num += w * x
        den += w
    return num / den


def _k_prime(groups, lam: float) -> mpmath.mpf:
    with mpmath.workdps(30):
        lam_m = mpmath.mpf(lam)
        return sum((g.mult * g.b * _tilted_mean(g.sigma2, g.b * lam_m) for g in groups), mpmath.mpf(0))


group = st.builds(
    LatticeGroup,
    st.fractions(min_value=Fraction(1, 20), max_value=Fraction(6)).map(lambda f: f.limit_denominator(1000)),
    st.integers(min_value=1, max_value=10**6),
    st.integers(min_value=1, max_value=4),
)


@settings(max_examples=40, deadline=None)
@given(st.lists(group, min_size=1, max_size=4), st.lists(st.floats(0.05, 40.0), min_size=1, max_size=4))
def test_saddle_solves_k_prime(groups, depths):
    """Components below and above SADDLE_SIGMA2 alike: K'(λ) = k to 1e-10 relative, and λ > 0."""
    cgf = _Cgf(groups)
    var = sum(g.mult * g.b * g.b * float(g.sigma2) for g in groups)
    ks = np.array([max(1.0, d * math.sqrt(var)) for d in depths])
    lam = cgf.saddle(ks, var)
    assert np.all(lam > 0)
    for k, x in zip(ks.tolist(), lam.tolist()):
        assert abs(_k_prime(groups, x) - k) <= 1e-10 * k, (k, x)


def test_saddle_increases_with_k_and_solves_deep_tails_of_a_lattice_like_sum():
    """σ² = 1/4 (far from Gaussian): thresholds out to 40 standard deviations, λ increasing in k."""
    groups = [LatticeGroup(Fraction(1, 4), 7, 3)]
    cgf = _Cgf(groups)
    var = 3 * 49 / 4
    ks = np.array([1.0, 10.0, 60.0, 150.0, 400.0])
    lam = cgf.saddle(ks, var)
    assert np.all(np.diff(lam) > 0)
    for k, x in zip(ks.tolist(), lam.tolist()):
        assert abs(_k_prime(groups, x) - k) <= 1e-10 * k, (k, x)
