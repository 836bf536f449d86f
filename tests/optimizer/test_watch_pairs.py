"""Issue 35 item 3: calibrate on the proxy and on the pairs that can be the worst, so that the
all-pairs confirmation passes on its first sweep (the proxy [13, 13] is never the worst pair)."""

from fractions import Fraction

import pytest

from optimizer.census.allocation import load_builtin
from optimizer.census.pairs import pair_composition
from optimizer.search import calibrate_shape, target_from_allocation
from optimizer.search.proxy import certified_ok, mpf_to_fraction
from optimizer.search.watch import WATCH, keep_watched, watched_uppers


@pytest.fixture(scope="module")
def dhc():
    alloc = load_builtin("dhc-persons")
    return alloc, target_from_allocation(alloc)


def _pair_delta(alloc, target, pair):
    from optimizer.jobs.confirm import paths_of

    paths = {p.index: p for p in paths_of(alloc)}
    return pair_composition(paths[pair[0]], paths[pair[1]]).delta(target.epsilon)


def test_proxy_calibration_leaves_a_pair_above_the_promise_and_watching_it_does_not(dhc):
    """The defect: the uniform factor calibrated on the proxy alone puts [6, 6] above the promised δ
    (so the confirmation needed a second sweep); calibrated on the proxy and [6, 6], every watched
    composition is certified within the promise and the factor is only slightly lower."""
    alloc, target = dhc
    proxy_only = calibrate_shape(alloc, target, hint=1.1)
    assert not certified_ok(_pair_delta(proxy_only.allocation, target, (6, 6)), target)
    watched, _, _ = keep_watched(lambda t: calibrate_shape(alloc, t, hint=1.1), target, [(6, 6)])
    assert watched.c < proxy_only.c
    assert float(proxy_only.c / watched.c) < 1 + 1e-4
    assert certified_ok(_pair_delta(watched.allocation, target, (6, 6)), target)
    assert certified_ok(watched.delta, target)


def test_a_watch_refuses_pairs_of_another_release(dhc):
    alloc, target = dhc
    with pytest.raises(ValueError, match=r"\(6, 99\)"):
        watched_uppers(alloc, target, [(6, 99)])


def test_pairs_only_the_coarse_sandwich_answers_are_watched_too(dhc):
    """A watched pair that only the coarse sandwich answers (a what-if with distinct budgets on
    1/10^5) is watched with its loose upper bound: the bound the confirmation checks (the final
    tolerances: the sandwich's width depends on the tolerance asked, so the watch's own looser
    tolerance would watch a different bound)."""
    from accountant.composition import engine_plan
    from optimizer.census.pairs import mechanism
    from optimizer.jobs.confirm import paths_of
    from optimizer.search.calibrate import _apply

    alloc, target = dhc
    fine = _apply(alloc, [Fraction(int(r * 10**5) + k % 7, 10**5) for k, (_, _, r) in enumerate(alloc.items())])
    paths = {p.index: p for p in paths_of(fine)}
    plan = {pr: engine_plan(mechanism(paths[pr[0]]) + mechanism(paths[pr[1]])).exact for pr in [(6, 6), (13, 13)]}
    assert plan == {(6, 6): False, (13, 13): True}
    uppers = watched_uppers(fine, target, [(6, 6), (13, 13)])
    assert set(uppers) == {(6, 6), (13, 13)}
    coarse = pair_composition(paths[6], paths[6]).delta(target.epsilon)
    assert not coarse.tolerance_met and uppers[(6, 6)] == mpf_to_fraction(coarse.upper)


def test_diagonal_screen_watches_the_pairs_of_the_largest_diagonal_paths(dhc):
    """screen_diagonal: one δ per path [M_i, M_i]; the pairs among the top paths, the largest
    diagonal first.  Checked against the diagonal δ computed here, and against the worst pair of the
    Bureau's DHC persons at its promise ([6, 6], issue 35)."""
    from optimizer.jobs.confirm import paths_of
    from optimizer.search import screen_diagonal

    alloc, target = dhc
    watch = screen_diagonal(alloc, target, paths=2)
    paths = paths_of(alloc)
    diag = {p.index: pair_composition(p, p).delta(target.epsilon, tol=1e-20, rtol=1e-6).upper for p in paths}
    top = sorted(diag, key=lambda i: (-diag[i], i))[:2]
    assert watch[0] == (top[0], top[0]) == (6, 6)
    assert set(watch) == {(top[0], top[0]), (min(top), max(top)), (top[1], top[1])}
    assert len(screen_diagonal(alloc, target, paths=3)) == 6
    with pytest.raises(ValueError, match="paths must be >= 1"):
        screen_diagonal(alloc, target, paths=0)


def test_keep_watched_lowers_the_proxy_just_enough(dhc):
    """keep_watched: the proxy calibrated at a lowered δ puts the watched pair [6, 6] within the
    promise and within KEEP_TOL of it (no budget left unused), with a handful of calibrations."""
    from optimizer.search.watch import KEEP_TOL, keep_watched

    alloc, target = dhc
    calls = []

    def make(t):
        calls.append(t.delta)
        return calibrate_shape(alloc, t, hint=1.1)

    cal, r, uppers = keep_watched(make, target, [(6, 6)])
    dk = target.delta_fraction
    assert r > 1 and len(calls) <= 4
    assert (1 - 2 * KEEP_TOL) * dk <= uppers[(6, 6)] <= dk
    assert certified_ok(_pair_delta(cal.allocation, target, (6, 6)), target)
    assert certified_ok(cal.delta, target)  # the proxy itself is below its lowered promise


def test_watched_bounds_are_certified_and_within_a_hundredth_of_keep_tol(dhc):
    """The watch computes its pairs to WATCH (rtol 1e-6), not the final tolerances: each bound is
    still a certified upper bound (≥ the final lower bound) and at most 1e-6 above the final one, so
    the calibration against it gives up under 1 % of KEEP_TOL."""
    from optimizer.search.watch import KEEP_TOL

    alloc, target = dhc
    pairs = [(6, 6), (6, 12), (13, 13)]
    uppers = watched_uppers(alloc, target, pairs)
    assert WATCH.relative <= KEEP_TOL / 100
    for pr in pairs:
        final = _pair_delta(alloc, target, pr)
        lo, hi = mpf_to_fraction(final.lower), mpf_to_fraction(final.upper)
        assert lo <= uppers[pr] <= hi * (1 + Fraction(WATCH.relative)), pr
