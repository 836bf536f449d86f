"""census-plb optimize: JSON contract (fast, --no-confirm), output files, resume, confirmation."""

import csv
import json
from pathlib import Path

import pytest

from optimizer.cli.main import main

KEYS = (
    "target_epsilon",
    "target_delta",
    "uniform_variance_drop_percent",
    "optimized_variance_drop_percent",
    "zcdp_optimum_variance_drop_percent",
    "confirmed",
    "worst_pair",
    "worst_pair_delta",
    "seconds",
)


def test_optimize_json_contract_and_resume(tmp_path, capsys):
    out = tmp_path / "run"
    argv = ["optimize", "--allocation", "dhc-persons", "--trials", "1", "--no-confirm", "--out", str(out), "--json"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    for k in KEYS:
        assert k in doc
    assert doc["confirmed"] is False
    assert doc["target_epsilon"].startswith("26.340588852722324")
    assert abs(doc["uniform_variance_drop_percent"] - 11.446126) < 1e-4
    assert doc["optimized_variance_drop_percent"] >= doc["uniform_variance_drop_percent"]
    assert json.loads((out / "optimize.json").read_text()) == doc
    for name in ("per_query.csv", "per_geolevel.csv", "curves.csv", "tradeoff.csv", "delta_grid.csv"):
        assert (out / name).is_file()
    assert len(list(csv.DictReader((out / "delta_grid.csv").read_text().splitlines()))) == 15
    rows = list(csv.DictReader((out / "per_query.csv").read_text().splitlines()))
    assert len(rows) == 80 and rows[0]["baseline_rho"] == "73/10000"
    assert {"optimized_sigma2", "drop_percent_uniform", "drop_percent_optimized"} <= set(rows[0])
    # resume: same storage -> the study continues
    assert main(argv) == 0
    doc2 = json.loads(capsys.readouterr().out)
    assert doc2["study_name"] == doc["study_name"]
    assert (doc["trials_total"], doc2["trials_total"]) == (1, 2)


def test_optimize_rejects_unknown(tmp_path, capsys):
    assert main(["optimize", "--scenario", "no-such-thing", "--out", str(tmp_path)]) == 2
    assert "no-such-thing" in capsys.readouterr().err


@pytest.mark.slow
def test_full_confirmation(tmp_path, capsys):
    """census-plb optimize end to end on the default scenario: the uniform rescale and the searched
    allocation confirmed on all 946 pairs (the searched allocation's budgets sit on a fine lattice
    where pairs take the coarse engine; two all-pair sweeps since the pairs are watched, ~65 s on 2
    cores for the same run in bench.pipeline: kept in make test-slow for make test's 10 minutes)."""
    _check_full_confirmation(tmp_path, capsys, "dhc-persons")


def test_full_confirmation_of_the_uniform_rescale(tmp_path, capsys):
    """census-plb optimize end to end with objective minimax-relative (its optimum is the uniform
    rescale, no search): one confirmation on all 946 pairs."""
    text = (Path(__file__).parents[1] / "scenarios" / "dhc-persons.toml").read_text()
    text = text.replace('name = "dhc-persons"', 'name = "dhc-persons-minimax"')
    text = text.replace('objective = "mean-relative-variance"', 'objective = "minimax-relative"')
    assert 'objective = "minimax-relative"' in text
    (tmp_path / "dhc-persons-minimax.toml").write_text(text)
    doc = _check_full_confirmation(tmp_path, capsys, str(tmp_path / "dhc-persons-minimax.toml"))
    assert doc["objective"] == "minimax-relative" and doc["uniform_confirmed"] is True
    assert doc["optimized_variance_drop_percent"] == pytest.approx(doc["uniform_variance_drop_percent"], rel=1e-12)


def _check_full_confirmation(tmp_path, capsys, scenario: str) -> dict:
    out = tmp_path / "run"
    assert main(["optimize", "--scenario", scenario, "--trials", "2", "--out", str(out), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["confirmed"] is True and doc["n_pairs_confirmed"] == 946
    assert float(doc["worst_pair_delta"]) <= 1e-10
    # the final confirmation is stored pair by pair (the report's heat map); its worst pair is the summary's
    rows = list(csv.DictReader((out / "confirm_pairs.csv").read_text().splitlines()))
    assert len(rows) == 946 and all(float(r["delta_upper"]) <= 1e-10 for r in rows)
    worst = max(rows, key=lambda r: float(r["delta_upper"]))
    assert [int(worst["pair_i"]), int(worst["pair_j"])] == doc["worst_pair"]
    return doc


def test_an_unknown_scenario_lists_the_scenarios(tmp_path, capsys):
    """Issue 34 item 7: `optimize --scenario nosuch` names the scenarios there are, not only the
    built-in allocations."""
    from optimizer.scenario import list_scenarios

    assert main(["optimize", "--scenario", "nosuch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "nosuch" in err and all(name in err for name in list_scenarios())


def test_scenario_list_has_a_header(capsys):
    assert main(["scenario", "list"]) == 0
    first = capsys.readouterr().out.splitlines()[0].split()
    assert first[:4] == ["scenario", "allocation", "conversion", "delta"]


def test_scenario_list_fits_100_columns_unless_wide(capsys):
    """Issue 34 item 7: a header, the target of each scenario, lines cut at 100 columns (--wide: full)."""
    assert main(["scenario", "list"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].split()[:5] == ["scenario", "allocation", "conversion", "delta", "target"]
    assert max(len(x) for x in lines) <= 100 and any(x.endswith("…") for x in lines)
    assert any(" per-geolevel " in x for x in lines)
    assert main(["scenario", "list", "--wide"]) == 0
    assert max(len(x) for x in capsys.readouterr().out.splitlines()) > 100
