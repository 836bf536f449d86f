"""Issue 15 item 1: a scenario whose promise is the whole zCDP curve (target = "curve"), run end to
end: every point holds on every pair (recomputed here without any cache), the uniform cut is the
largest that does, the binding δ is stated, and the report says which promise was kept.

The run's objective is minimax-relative (its optimum is the uniform cut, no search): on this
four-query toy a searched allocation has budgets on a fine lattice (denominator ~1e5 over few
components) where one certified δ at 1e-15 takes minutes (the side-effects grid; issue 17).
Reallocation under a curve target is tested on its own in tests/optimizer/test_curve_target.py."""

import json
from fractions import Fraction as F

import pytest

from optimizer.census.allocation import Allocation
from optimizer.census.pairs import pairs as all_pairs
from optimizer.cli.main import main
from optimizer.jobs.confirm import fresh_pairs, paths_of
from optimizer.scenario import ScenarioError, parse_scenario
from optimizer.search import mpf_to_fraction
from optimizer.search.curve_target import CurveTarget
from tests.toy_scenario import TOY_ALLOC

DELTAS = ["1e-3", "1e-8", "1e-12"]
SCENARIO = f"""name = "toy-curve"
description = "synthetic curve-target scenario"
allocation = "alloc.toml"
conversion = "bun-steinke"
target_delta = "1e-10"
target = "curve"
curve_deltas = {json.dumps(DELTAS)}
trials = 1
seed = 3
objective = "minimax-relative"
"""


def _pairs(alloc):
    return [(a.index, b.index) for a, b in all_pairs(paths_of(alloc))]


def _worst_ratio(alloc, points) -> F:
    """max over pairs and points of certified δ upper / δ_k, computed here without any cache."""
    fresh = fresh_pairs(alloc, list(points), _pairs(alloc))
    return max(mpf_to_fraction(b.upper) / t.delta_fraction for bs in fresh.values() for b, t in zip(bs, points))


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    d = tmp_path_factory.mktemp("curve")
    (d / "alloc.toml").write_text(TOY_ALLOC)
    (d / "toy-curve.toml").write_text(SCENARIO)
    out = d / "run"
    args = ["optimize", "--scenario", str(d / "toy-curve.toml"), "--workers", "1", "--quiet", "--out", str(out)]
    assert main(args) == 0
    return json.loads((out / "optimize.json").read_text()), out


def test_summary_states_the_curve_and_its_binding_point(run):
    s, _ = run
    t = s["target"]
    assert t["kind"] == "curve" and t["deltas"] == DELTAS and t["conversion"] == "bun-steinke"
    assert s["confirmed"] and s["uniform_confirmed"]
    for label in ("uniform", "optimized"):
        rows = t["confirmed_points"][label]
        assert [r["delta"] for r in rows] == DELTAS and all(r["kept"] for r in rows)
        assert sum(r["binding"] for r in rows) == 1 and t[f"binding_delta_{label}"] in DELTAS
        binding = next(r for r in rows if r["binding"])
        assert binding["ratio_to_delta"] == max(r["ratio_to_delta"] for r in rows) <= 1


def test_uniform_cut_is_the_largest_keeping_every_point_on_every_pair(run):
    s, _ = run
    base = Allocation.from_toml(TOY_ALLOC)
    points = CurveTarget.from_allocation(base, DELTAS).points
    c = F(s["uniform_c"])
    assert c > 1
    assert _worst_ratio(base.scaled(c), points) <= 1
    # a little more breaks a point (the recalibration stops within RECAL_TOL = 1e-4 of δ; slope ≈ 20-30)
    assert _worst_ratio(base.scaled(c * (1 + F(1, 10**4))), points) > 1


def test_optimized_allocation_keeps_every_point_and_the_guard(run):
    s, out = run
    base = Allocation.from_toml(TOY_ALLOC)
    opt = Allocation.from_toml(out / "allocation_optimized.toml")
    points = CurveTarget.from_allocation(base, DELTAS).points
    assert _worst_ratio(opt, points) <= 1
    assert all(opt.rho_of(g, q) >= r for g, q, r in base.items())  # Pareto: no query noisier
    assert F(s["new_total_rho"]) == opt.total_rho


def test_report_states_the_curve_target_and_its_points(run, tmp_path):
    from optimizer.report import build_report
    from optimizer.scenario import load_scenario

    s, out = run
    scenario = load_scenario(out.parent / "toy-curve.toml")
    md = build_report(scenario, out, tmp_path / "report")["report.md"].read_text()
    t = s["target"]
    assert "## 4. The whole promised curve" in md
    assert f"the 3 points δ = {', '.join(DELTAS)} of the zCDP curve" in md
    assert f"the binding point is δ = {t['binding_delta_uniform']}" in md
    section = md.split("## 4. The whole promised curve")[1].split("\n## ")[0]
    for r in t["confirmed_points"]["uniform"]:  # one table line per point, its worst pair and bound
        line = next(x for x in section.splitlines() if x.startswith(f"| {r['delta']} |"))
        assert r["worst_delta_upper"] in line and ("(binding)" in line) == r["binding"]
    assert "the same promise still holds" not in md  # the point wording is not used for a curve
    # the toy allocation is the user's: named a what-if, never the Bureau's
    assert "The what-if allocation alloc.toml (written for this scenario; not a Census Bureau" in md
    assert "Census Bureau describes" not in md and "the Bureau's own balance" not in md


@pytest.mark.parametrize(
    ("extra", "key"),
    [
        ('target = "band"\n', "target"),
        ('curve_deltas = ["1e-3"]\n', "curve_deltas"),  # without target = "curve"
        ('target = "curve"\ncurve_deltas = []\n', "curve_deltas"),
        ('target = "curve"\ncurve_deltas = [1e-3]\n', "curve_deltas[0]"),
        ('target = "curve"\ncurve_deltas = ["1e-3", "0.001"]\n', "curve_deltas[1]"),
        ('target = "curve"\ncurve_deltas = ["1.5"]\n', "curve_deltas[0]"),
    ],
)
def test_bad_curve_keys_are_refused_with_their_line(extra, key):
    text = SCENARIO.split('target = "curve"')[0] + "trials = 1\nseed = 3\n" + extra
    with pytest.raises(ScenarioError) as e:
        parse_scenario(text, "x.toml")
    assert e.value.key == key and e.value.line is not None and "x.toml" in str(e.value)


def test_default_curve_grid():
    text = SCENARIO.replace(f"curve_deltas = {json.dumps(DELTAS)}\n", "")
    sc = parse_scenario(text, "x.toml")
    assert sc.target_kind == "curve" and sc.curve_deltas == tuple(f"1e-{k}" for k in range(1, 16))
    assert sc.as_dict()["target"] == "curve"
    assert "target" not in parse_scenario(text.replace('target = "curve"\n', ""), "x.toml").as_dict()
