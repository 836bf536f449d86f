"""optimizer.pipeline.side_effects: the exact δ of an allocation at the other points of the old zCDP curve."""

from fractions import Fraction as F

import pytest

from optimizer.census.allocation import load_builtin
from optimizer.pipeline.side_effects import delta_grid_rows, weaker_points
from optimizer.search import proxy_composition, target_from_allocation, uniform_rescale


@pytest.fixture(scope="module")
def dhc():
    a = load_builtin("dhc-persons")
    c, uniform, _ = uniform_rescale(a, target_from_allocation(a, "1e-10"))
    return a, c, uniform, delta_grid_rows(a, {"baseline": a, "uniform": uniform}, "bun-steinke")


def test_the_production_allocation_keeps_its_whole_zcdp_curve(dhc):
    # ρ-zCDP implies (conversion(ρ, δ), δ)-DP for every δ (arXiv 1605.02065): a theorem, not this code
    _, _, _, rows = dhc
    assert [r["delta_promised"] for r in rows] == [f"1e-{k}" for k in range(1, 16)]
    assert weaker_points(rows, "baseline") == []
    for r in rows:
        assert F(r["baseline_delta_upper"]) <= F(r["delta_promised"])
        assert F(r["baseline_delta_lower"]) <= F(r["baseline_delta_upper"])


def test_the_uniform_rescale_is_weaker_below_its_calibration_delta(dhc):
    """Issue 15's finding: calibrated at δ = 1e-10, the uniform rescale's exact δ at
    ε_BS(1e-15) is ~3e-15, above the old zCDP curve's 1e-15."""
    _, c, _, rows = dhc
    assert c > 1
    by = {r["delta_promised"]: r for r in rows}
    assert by["1e-10"]["uniform_ratio"] <= 1 and by["1e-10"]["uniform_ratio"] > 0.999  # calibrated there
    assert 2 < by["1e-15"]["uniform_ratio"] < 5
    weak = weaker_points(rows, "uniform")
    assert "1e-15" in weak and "1e-10" not in weak and "1e-1" not in weak
    for r in rows:  # the flag says exactly what the numbers say
        assert r["uniform_weaker"] == (F(r["uniform_delta_upper"]) > F(r["delta_promised"]))
        assert r["uniform_ratio"] == pytest.approx(float(F(r["uniform_delta_upper"]) / F(r["delta_promised"])))


def test_rows_are_the_accountants_certified_values(dhc):
    _, _, uniform, rows = dhc
    r = rows[4]  # δ = 1e-5
    d = proxy_composition(uniform).delta(r["epsilon"], tol=1e-35, rtol=1e-12)
    assert F(r["uniform_delta_lower"]) <= F(str(d.lower)) * (1 + F(1, 10**10))
    assert F(r["uniform_delta_upper"]) >= F(str(d.upper)) * (1 - F(1, 10**10))
    assert r["uniform_tolerance_met"] is True


def test_weaker_points_reads_csv_strings():
    rows = [
        {"delta_promised": "1e-1", "x_weaker": "False"},
        {"delta_promised": "1e-2", "x_weaker": "True"},
        {"delta_promised": "1e-3", "x_weaker": True},
    ]
    assert weaker_points(rows, "x") == ["1e-2", "1e-3"]
    assert weaker_points(rows, "y") == []


@pytest.fixture(scope="module")
def unconfirmed_run(tmp_path_factory):
    """One run of the default scenario without its all-pairs sweeps (both pipeline tests read it)."""
    from optimizer.pipeline.stages import optimize, spec_for

    return optimize(spec_for(scenario="dhc-persons", trials=1), tmp_path_factory.mktemp("work"), confirm=False)


def test_the_pipeline_stores_and_reports_the_table(tmp_path, unconfirmed_run):
    from optimizer.pipeline.result import RunResult

    res = unconfirmed_run
    assert len(res.delta_grid) == 15 and res.confirm_pairs == []
    assert "1e-15" in res.summary["delta_grid_weaker"]["uniform"]
    res.write(tmp_path / "run")
    back = RunResult.read(tmp_path / "run")
    assert back is not None and [r["delta_promised"] for r in back.delta_grid] == [f"1e-{k}" for k in range(1, 16)]
    assert weaker_points(back.delta_grid, "uniform") == res.summary["delta_grid_weaker"]["uniform"]


def test_the_report_shows_side_effects_and_published_counts(tmp_path, unconfirmed_run):
    """A run of the default scenario: the summary's published-variance table (GLS model, 2020
    fan-outs) never gets worse under the Pareto guard; the report renders both new sections."""
    from optimizer.report import build_report
    from optimizer.scenario import load_scenario

    res = unconfirmed_run
    pv = res.summary["published_variance"]
    assert pv["available"] is True and len(pv["geolevels"]) == 8
    assert "3,143 counties" in pv["fan_outs"]["source"] and "Prim" in pv["fan_outs"]["assumptions"]
    for r in pv["geolevels"]:  # no query noisier → no published count noisier
        assert F(r["optimized"]) <= F(r["today"]) and r["optimized_change_percent"] <= 0
        assert r["uniform_change_percent"] == pytest.approx(pv["geolevels"][0]["uniform_change_percent"])
    res.write(tmp_path / "run")
    build_report(load_scenario("dhc-persons"), tmp_path / "run", tmp_path / "out")
    md = (tmp_path / "out" / "report.md").read_text()
    gl = res.summary["geolevels"]
    assert [r["geolevel"] for r in gl["baseline"]][::7] == ["US", "Block"] and len(gl["baseline"]) == 8
    assert gl["uniform_broken"] == []  # an 11.45 % cut is below every geolevel's own 14.9 %–26.7 %
    assert gl["optimized_broken"] == [r["geolevel"] for r in gl["optimized"] if not r["kept"]]
    assert "## 4. Side effects at other δ" in md and "## 5. Published counts" in md
    assert "## 6. Per geolevel" in md and "## 8. Method" in md
    assert "The uniform rescale is weaker than the old zCDP promise at δ = 1e-11, 1e-12" in md
