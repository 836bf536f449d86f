"""Issue 15 item 1: a promise that is the whole zCDP curve ε(δ) on a δ grid."""

from fractions import Fraction as F

import pytest

from optimizer import search as S
from optimizer.census.allocation import Allocation, load_builtin
from optimizer.jobs.confirm import confirm_curve
from optimizer.search.curve_target import CurveTarget, uniform_rescale_curve
from tests.toy_scenario import TOY_ALLOC


@pytest.fixture(scope="module")
def dhc():
    return load_builtin("dhc-persons")


def test_point_target_breaks_the_curve_elsewhere(dhc):
    """The uniform rescale calibrated at δ = 1e-10 exceeds the zCDP claim at ε_BS(1e-15)."""
    curve = CurveTarget.from_allocation(dhc)
    _, uniform, _ = S.uniform_rescale(dhc, S.target_from_allocation(dhc, "1e-10"))
    t15 = curve.points[-1]
    assert t15.delta == "1e-15"
    assert S.mpf_to_fraction(S.proxy_delta(uniform, t15).lower) > F(1, 10**15)


def test_curve_rescale_keeps_every_point(dhc):
    curve = CurveTarget.from_allocation(dhc)
    r = uniform_rescale_curve(dhc, curve)
    assert r.c == min(c for _, c in r.per_point) and r.binding in curve.points
    assert 1 < r.c < {t.delta: c for t, c in r.per_point}["1e-10"]
    for t in curve.points:  # every point holds (certified), recomputed independently of the calibration
        assert S.mpf_to_fraction(S.proxy_delta(r.allocation, t).upper) <= t.delta_fraction
    # the per-point factors fall as δ falls (the conversion is looser at large δ)
    cs = [c for _, c in r.per_point]
    assert cs == sorted(cs, reverse=True)
    assert r.binding.delta == "1e-15"


def test_confirm_curve_on_all_pairs_of_a_toy():
    toy = Allocation.from_toml(TOY_ALLOC)
    curve = CurveTarget.from_allocation(toy, ["1e-3", "1e-8"])
    r = uniform_rescale_curve(toy, curve)
    seen = []

    def runner(alloc, points, pairs):
        seen.append(tuple(t.delta for t in points))
        comp = S.proxy_composition(alloc)
        return {p: [comp.delta(t.epsilon) for t in points] for p in pairs}

    conf = confirm_curve(r.allocation, curve, pairs_runner=runner, verify_runner=runner, pairs=[(1, 1)])
    assert conf.passed and conf.allocation == r.allocation and seen[0] == ("1e-3", "1e-8")
    assert conf.worst_point == r.binding and set(conf.point_deltas) == {(1, 1)}


def _toy():
    return Allocation.from_toml(
        """name = "toy"
run_type = "custom"
[[geolevel]]
name = "US"
queries = { total = "1/10", "age * sex" = "1/5" }
[[geolevel]]
name = "State"
queries = { total = "1/7", "age * sex" = "1/9" }
[[geolevel]]
name = "Block"
queries = { total = "3/10", "age * sex" = "2/5" }
"""
    )


#: 4 of the toy's 10 pairs (each δ of this small-σ² toy takes ~1 s; all 10 × 4 confirmations took 60 s)
SOME_PAIRS = [(1, 1), (1, 4), (2, 3), (4, 4)]


def test_curve_confirmation_equals_one_confirmation_per_point(tmp_path):
    """The several-point pair jobs give, per point, the bounds of the one-point jobs; the worst
    (pair, point) is the point whose worst pair is furthest above its δ."""
    from optimizer.jobs.confirm import confirm

    toy = _toy()
    curve = CurveTarget.from_allocation(toy, ["1e-2", "1e-6", "1e-12"])
    scaled = toy.scaled(F(6, 5))  # 20 % more budget everywhere: some points break
    kw = {"workers": 1, "max_rounds": 1, "progress": False, "pairs": SOME_PAIRS}
    multi = confirm(scaled, list(curve.points), cache_dir=tmp_path / "m", **kw)
    singles = [confirm(scaled, t, cache_dir=tmp_path / f"s{k}", **kw) for k, t in enumerate(curve.points)]
    assert set(multi.point_deltas) == set(singles[0].deltas)
    for p, bounds in multi.point_deltas.items():
        for k, s in enumerate(singles):
            assert S.mpf_to_fraction(bounds[k].upper) == S.mpf_to_fraction(s.deltas[p].upper)
    ratios = [S.mpf_to_fraction(s.worst_delta.upper) / t.delta_fraction for s, t in zip(singles, curve.points)]
    assert multi.worst_point == curve.points[ratios.index(max(ratios))]
    assert multi.passed == all(s.passed for s in singles) is False


def test_curve_confirmation_recalibrates_until_every_point_holds(tmp_path):
    from optimizer.jobs.confirm import confirm, fresh_pairs

    toy = _toy()
    curve = CurveTarget.from_allocation(toy, ["1e-2", "1e-6", "1e-12"])
    conf = confirm(
        toy.scaled(F(6, 5)), list(curve.points), cache_dir=tmp_path, workers=1, progress=False, pairs=SOME_PAIRS
    )
    assert conf.passed and conf.recalibration < 1 and conf.rounds >= 2
    fresh = fresh_pairs(conf.allocation, list(curve.points), sorted(conf.point_deltas))
    for bounds in fresh.values():  # recomputed without the cache: every point holds on every pair
        for b, t in zip(bounds, curve.points):
            assert S.mpf_to_fraction(b.upper) <= t.delta_fraction
