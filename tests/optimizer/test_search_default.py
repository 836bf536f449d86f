"""Issue 34 item 6: the Optuna search is off by default for a convex objective (its calibrated convex
optimum is the answer: in every committed run trial 0, the convex start, won), on when the
scenario says ``search = "optuna"`` or the caller asks for trials; the report says in one line
how the reallocation was found."""

import pytest

from optimizer.pipeline.stages import optimize, spec_for
from optimizer.scenario import ScenarioError, parse_scenario
from optimizer.search.objectives import OBJECTIVES

SCEN = (
    'name = "x"\ndescription = "d"\nallocation = "dhc-persons"\nconversion = "bun-steinke"\n'
    'target_delta = "1e-10"\ntrials = 4\nseed = 1\n'
)


def test_every_shipped_objective_is_convex_so_the_default_runs_no_search():
    assert all(o.convex for o in OBJECTIVES.values())
    assert spec_for(scenario="dhc-persons").search is False
    assert spec_for(scenario="dhc-persons", trials=2).search is True  # asked for: runs


def test_a_scenario_can_ask_for_the_search(tmp_path):
    p = tmp_path / "x.toml"
    p.write_text(SCEN + 'search = "optuna"\n')
    spec = spec_for(scenario=str(p))
    assert spec.search is True and spec.trials == 4
    assert spec.scenario.as_dict()["search"] == "optuna"
    p.write_text(SCEN)
    assert "search" not in spec_for(scenario=str(p)).scenario.as_dict()  # default: the config hash is unchanged


def test_an_unknown_search_mode_is_refused_naming_the_line():
    with pytest.raises(ScenarioError, match=r"line 8, key 'search': unknown search 'yes'"):
        parse_scenario(SCEN + 'search = "yes"\n')


def test_the_default_run_reports_the_convex_optimum_and_says_so(tmp_path):
    s = optimize(spec_for(scenario="dhc-persons"), tmp_path, confirm=False).summary
    assert s["trials_run"] == 0 and s["search_improved"] is False
    assert s["search_note"].startswith("no Optuna search: mean-relative-variance is convex")
    assert not (tmp_path / "optuna.journal").exists()
    assert s["objective_drop_percent"] > s["objective_uniform_drop_percent"] > 0
