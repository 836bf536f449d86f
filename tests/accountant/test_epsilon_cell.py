"""ε(δ) in closed form inside one lattice cell (Composition._cell_root): on each cell of the privacy
loss lattice δ(ε) = A − e^ε·B exactly, so the search ends with ε = log((A − δ)/B) from certified
tails. Checked against an independent enumeration of joint outcomes (tests/accountant/bruteforce.py,
which knows nothing of lattices or tails): the returned value keeps the promise, the returned lower
end breaks it, and the bracket is far narrower than the requested 1e-12."""

from __future__ import annotations

from fractions import Fraction as F

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accountant.composition as C
from accountant import Composition, DiscreteGaussian
from tests.accountant.batches import counted_batches
from tests.accountant.bruteforce import delta_direct

_sigma2 = st.sampled_from([F(1, 2), F(3, 4), F(1), F(3, 2), F(2), F(5, 2), F(7, 3)])


@settings(max_examples=15, deadline=None)
@given(s1=_sigma2, s2=_sigma2, log10_delta=st.integers(min_value=-30, max_value=-2))
def test_the_closed_form_epsilon_brackets_the_brute_force_root(s1, s2, log10_delta):
    with mpmath.workdps(80):
        target = mpmath.mpf(10) ** log10_delta  # exact enough: the bracket is ~1e-25 relative
    comp = Composition([DiscreteGaussian(s1), DiscreteGaussian(s2)])
    res = comp.epsilon(f"1e{log10_delta}")
    if res.lower is None:  # δ(0) ≤ δ: ε = 0
        assert res.value == 0 and delta_direct([(s1, 1), (s2, 1)], 0) <= target
        return
    with mpmath.workdps(60):
        assert delta_direct([(s1, 1), (s2, 1)], res.value) <= target
        assert delta_direct([(s1, 1), (s2, 1)], res.lower) > target
    assert res.tolerance_met and res.delta_at_value.upper <= target
    assert res.value - res.lower <= 1e-12 * max(1, res.value)


def test_the_search_ends_in_the_roots_cell_with_a_bracket_of_tail_precision(monkeypatch):
    """The closed form is what ends the search (not a 1e-12 bisection): a bracket ~1e-25 wide."""
    hits = []
    real = C.Composition._cell_root

    def spy(self, *args, **kwargs):
        out = real(self, *args, **kwargs)
        hits.append(out is not None)
        return out

    monkeypatch.setattr(C.Composition, "_cell_root", spy)
    comp = Composition({DiscreteGaussian(F(10000, 73)): 26})  # 13 US-like queries, each twice
    res = comp.epsilon("1e-10")
    assert hits and hits[-1] and res.value - res.lower < mpmath.mpf("1e-20") * res.value
    d = comp.delta(res.value, tol=1e-40, rtol=1e-30)
    d_lower = comp.delta(res.lower, tol=1e-40, rtol=1e-30)
    with mpmath.workdps(60):  # the thresholds themselves exact enough (1e-10 is not a binary number)
        target = mpmath.mpf(1) / 10**10
        assert d.upper <= target and d.lower > target * (1 - mpmath.mpf(10) ** -18)  # tight: nothing left
        assert d_lower.lower > target


def _keeps_and_breaks_as_brute_force(res, s1, s2, log10_delta: int) -> None:
    """``res`` = ε(1e``log10_delta``) of [N_Z(0, s1), N_Z(0, s2)]: its value keeps the promise and its
    lower end breaks it by the brute force, and the bracket is as narrow as asked (1e-12)."""
    with mpmath.workdps(80):
        target = mpmath.mpf(10) ** log10_delta
    with mpmath.workdps(60):
        assert delta_direct([(s1, 1), (s2, 1)], res.value) <= target
        if res.lower is not None:
            assert delta_direct([(s1, 1), (s2, 1)], res.lower) > target
    assert res.tolerance_met and res.value - (res.lower or 0) <= 1e-12 * max(1, res.value)


@settings(max_examples=15, deadline=None)
@given(
    s1=_sigma2,
    s2=_sigma2,
    log10_delta=st.integers(min_value=-30, max_value=-2),
    a=st.floats(min_value=0.05, max_value=2.0),
    width=st.floats(min_value=1e-6, max_value=3.0),
)
def test_a_bracket_hint_is_checked_never_trusted(s1, s2, log10_delta, a, width):
    """ε(δ) with a caller's bracket hint ``near`` — right or wrong — keeps the promise and breaks it
    exactly as the brute force says, like the search without a hint (the same value when the hint is
    ignored or the closed form ends both)."""
    comp = Composition([DiscreteGaussian(s1), DiscreteGaussian(s2)])
    plain = comp.epsilon(f"1e{log10_delta}")
    hinted = comp.epsilon(f"1e{log10_delta}", near=(a, a + width))
    _keeps_and_breaks_as_brute_force(hinted, s1, s2, log10_delta)
    assert (plain.lower is None) == (hinted.lower is None)


def test_a_good_bracket_hint_saves_engine_batches():
    """From a bracket the caller already knows (the explorer's δ curve), the search needs fewer δ batches."""
    comp = Composition([DiscreteGaussian(F(3, 2))] * 3 + [DiscreteGaussian(F(7, 3))])
    calls = counted_batches(comp)
    plain = comp.epsilon("1e-10")
    n_plain = len(calls)
    del calls[:]
    v = float(plain.value)
    hinted = comp.epsilon("1e-10", near=(0.95 * v, 1.05 * v))
    assert hinted.value == plain.value and len(calls) < n_plain
    with pytest.raises(ValueError, match="near"):
        comp.epsilon("1e-10", near=(v, 0.5 * v))


@settings(max_examples=15, deadline=None)
@given(
    s1=_sigma2,
    s2=_sigma2,
    log10_delta=st.integers(min_value=-30, max_value=-2),
    ladder=st.lists(st.floats(min_value=0.05, max_value=12.0), min_size=2, max_size=12, unique=True),
    asked_before=st.booleans(),
)
def test_a_ladder_of_hints_is_checked_never_trusted(s1, s2, log10_delta, ladder, asked_before):
    """``near`` with many ε (the explorer passes its whole δ curve), whether δ was asked there before
    (then checked from the tails the composition holds) or not: the answer keeps the promise and breaks
    it as the brute force says, with a bracket of the requested width."""
    comp = Composition([DiscreteGaussian(s1), DiscreteGaussian(s2)])
    ladder = sorted(ladder)
    if asked_before:
        comp.delta_curve(ladder, tol=1e-35, rtol=1e-12)
    hinted = comp.epsilon(f"1e{log10_delta}", near=ladder)
    _keeps_and_breaks_as_brute_force(hinted, s1, s2, log10_delta)


def test_a_curve_already_computed_brackets_epsilon_without_integrating_again():
    """δ asked on a grid first, then ε(δ) with that grid as the hint: the bracket comes from the kept
    tails (no batch for it), the first probe from their interpolation, the next from its lattice cell —
    at most two batches, where the search without the hint takes more; the same safe ε either way."""
    comp = Composition([DiscreteGaussian(F(3, 2))] * 3 + [DiscreteGaussian(F(7, 3))])
    plain = comp.epsilon("1e-10")
    v = float(plain.value)
    grid = [v * (0.5 + 0.1 * k) for k in range(11)]
    fresh = Composition([DiscreteGaussian(F(3, 2))] * 3 + [DiscreteGaussian(F(7, 3))])
    fresh.delta_curve(grid, tol=1e-35, rtol=1e-12)
    calls = counted_batches(fresh)
    hinted = fresh.epsilon("1e-10", near=grid)
    # both brackets hold the root (they may come from tails of different precision: equal to ~1e-25)
    assert max(hinted.lower, plain.lower) < min(hinted.value, plain.value)
    assert hinted.tolerance_met and hinted.value - hinted.lower <= 1e-12 * hinted.value
    assert len(calls) <= 2, calls
    with pytest.raises(ValueError, match="near"):
        fresh.epsilon("1e-10", near=grid[:1])
    with pytest.raises(ValueError, match="near"):
        fresh.epsilon("1e-10", near=[grid[1], grid[0], grid[2]])
