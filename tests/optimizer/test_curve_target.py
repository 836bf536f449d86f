"""Issue 15 item 1: a promise that is the whole zCDP curve ε(δ) on a δ grid."""

from fractions import Fraction as F

import pytest

from optimizer import search as S
from optimizer.allocation import Allocation, load_builtin
from optimizer.curve_target import CurveTarget, confirm_curve, uniform_rescale_curve


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
    toy = Allocation.from_toml(
        """name = "toy"
run_type = "custom"
[[geolevel]]
name = "US"
queries = { total = "1/10", "age * sex" = "1/5" }
[[geolevel]]
name = "Block"
queries = { total = "3/10", "age * sex" = "2/5" }
"""
    )
    curve = CurveTarget.from_allocation(toy, ["1e-3", "1e-8"])
    r = uniform_rescale_curve(toy, curve)
    seen = []

    def runner(alloc, target, pairs):
        seen.append(target.delta)
        comp = S.proxy_composition(alloc)
        return {p: comp.delta(target.epsilon) for p in pairs}

    final, confs, ok = confirm_curve(r.allocation, curve, pairs_runner=runner, verify_runner=runner, pairs=[(1, 1)])
    assert ok and final == r.allocation and len(confs) == 2 and {"1e-3", "1e-8"} <= set(seen)
