"""Issue 34 item 5: ``scenario compare`` shows each scenario's own target and the cuts established for
it (the decision row its target selects), equal to its report's; the committed comparison
(``--publish``) takes results only from committed reports of the same inputs, never a local run."""

import shutil

import pytest

from optimizer.pipeline.stages import optimize, spec_for
from optimizer.report import build_report
from optimizer.scenario import load_scenario
from optimizer.workflow import compare_scenarios
from tests.toy_scenario import TOY_ALLOC, TOY_SCENARIO


@pytest.fixture(scope="module")
def toy_per_geolevel(tmp_path_factory):
    d = tmp_path_factory.mktemp("cmp")
    (d / "alloc.toml").write_text(TOY_ALLOC)
    (d / "toy.toml").write_text(TOY_SCENARIO + 'target = "per-geolevel"\n')
    res = optimize(spec_for(scenario=str(d / "toy.toml")), d / "work")
    res.write(d / "runs" / "toy")
    return d, res.summary["decision"]


#: the toy per-geolevel run behind both tests takes ~190 s (one calibration per geolevel on proposals whose
#: fine lattices cost seconds per δ): in ``make test-slow``, for make test's 10 minutes
SLOW_RUN = pytest.mark.slow


@SLOW_RUN
def test_the_row_shows_the_scenarios_own_target_and_its_established_cuts(toy_per_geolevel, monkeypatch):
    d, decision = toy_per_geolevel
    monkeypatch.chdir(d)
    (row,) = compare_scenarios([str(d / "toy.toml")], runs_root=d / "runs")
    chosen = next(r for r in decision["rows"] if r["selected"])
    assert row["decision_target"] == "per-geolevel" == chosen["promise"]
    assert chosen["uniform"]["certified"] and chosen["reallocation"]["certified"]
    assert float(row["decision_uniform_cut_percent"]) == pytest.approx(
        chosen["uniform"]["variance_drop_percent"], abs=5e-5
    )
    assert float(row["decision_reallocation_cut_percent"]) == pytest.approx(
        chosen["reallocation"]["variance_drop_percent"], abs=5e-5
    )
    assert row["optimized_source"] == "local run"


@SLOW_RUN
def test_the_row_equals_the_report_and_the_committed_comparison_reads_only_committed_reports(
    toy_per_geolevel, tmp_path, monkeypatch
):
    d, _ = toy_per_geolevel
    work = tmp_path / "w"
    shutil.copytree(d, work, ignore=shutil.ignore_patterns("work"))
    monkeypatch.chdir(work)
    sc = load_scenario(work / "toy.toml")
    (row,) = compare_scenarios([str(work / "toy.toml")], runs_root=work / "runs", published_only=True)
    assert row["optimized_source"] in ("", None) and row["decision_uniform_cut_percent"] in ("", None)  # none yet
    build_report(sc, work / "runs" / "toy", work / "reports" / "toy")
    summary = dict(
        line.split(",", 1) for line in (work / "reports" / "toy" / "summary.csv").read_text().splitlines()[1:]
    )
    (row,) = compare_scenarios([str(work / "toy.toml")], runs_root=work / "runs", published_only=True)
    assert row["optimized_source"] == "published report (reports/toy/)"
    for key in ("decision_target", "decision_uniform_cut_percent", "decision_reallocation_cut_percent"):
        assert row[key] == summary[key] != ""


def test_a_scenario_relative_allocation_file_is_recorded_and_matched():
    """The committed su2024-per-geolevel report names its allocation file relative to the scenario;
    its provenance records that file's sha256 (it was None, so compare never matched the report)."""
    from optimizer.report.provenance_block import _allocation_file
    from optimizer.scenario import load_scenario

    sc = load_scenario("su2024-per-geolevel")
    path = _allocation_file(sc)
    assert path is not None and path.name == "su2024-per-geolevel.toml" and path.is_file()
