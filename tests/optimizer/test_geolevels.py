"""Issue 15 item 3: the per-geolevel view reproduces the earlier paper's Figure 2 (arXiv 2410.09296).

The reference values are the project's copy of that paper's published Figure 2 numbers
(optimizer/data/su2024_fig2_epsilon_per_geolevel.csv; δ = 1e-11, see optimizer/data/README.md)."""

import csv
import json
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction as F
from pathlib import Path

import pytest

from optimizer.scenario import ScenarioError, load_scenario, parse_scenario
from optimizer.search.geolevels import geolevel_view

DATA = Path(__file__).resolve().parents[2] / "optimizer" / "data" / "su2024_fig2_epsilon_per_geolevel.csv"


@pytest.fixture(scope="module")
def fig2():
    sc = load_scenario("su2024-per-geolevel")
    return sc, {
        r.geolevel: r for r in geolevel_view(sc.load_allocation(), sc.target_delta_text, sc.conversion, "su2024")
    }


def _agree(a, b, digits):
    a, b = Decimal(a), Decimal(b)
    return abs(a - b) <= abs(b) * Decimal(10) ** (1 - digits)


def test_figure2_epsilons_to_12_digits(fig2):
    sc, rows = fig2
    assert sc.target_delta_text == "1e-11" and sc.load_allocation().total_rho == F(365, 100)
    with open(DATA, encoding="utf-8") as fh:
        ref = list(csv.DictReader(fh))
    assert [r["geolevel"] for r in ref] == list(rows)
    for r in ref:
        got = rows[r["geolevel"]]
        assert _agree(got.epsilon_promised, r["epsilon_bureau"], 12), r["geolevel"]
        assert _agree(got.epsilon_exact, r["epsilon_exact_fdp"], 12), r["geolevel"]
        assert round(got.unused_budget_percent, 2) == float(r["unused_budget_pct"]), r["geolevel"]


def test_variance_reduction_range_to_4_digits(fig2):
    """15.08 % (State) … 24.82 % (Block): the σ² factor bringing each geolevel's exact ε up to its promise."""
    _, rows = fig2
    drops = {g: r.variance_drop_percent for g, r in rows.items()}
    assert f"{min(drops.values()):.2f}" == "15.08" and min(drops, key=drops.get) == "State"
    assert f"{max(drops.values()):.2f}" == "24.82" and max(drops, key=drops.get) == "Block"


def test_census_model_per_geolevel_both_conversions():
    """Production DHC persons, Census model: every geolevel keeps room (exact ε below the promise);
    CKS promises less than Bun–Steinke, so less room is left."""
    sc = load_scenario("dhc-persons")
    alloc = sc.load_allocation()
    bs = geolevel_view(alloc, "1e-10", "bun-steinke")
    cks = geolevel_view(alloc, "1e-10", "cks")
    for a, b in zip(bs, cks):
        assert Decimal(a.epsilon_exact) < Decimal(a.epsilon_promised)
        assert Decimal(b.epsilon_promised) < Decimal(a.epsilon_promised)
        assert 0 < b.variance_drop_percent < a.variance_drop_percent
        assert abs(Decimal(a.epsilon_exact) - Decimal(b.epsilon_exact)) < Decimal("1e-15") * Decimal(a.epsilon_exact)


def _geolevels_json(*args: str) -> dict:
    """``census-plb geolevels --scenario su2024-per-geolevel <args> --json``, parsed."""
    cmd = [sys.executable, "-m", "optimizer.cli", "geolevels", "--scenario", "su2024-per-geolevel", *args, "--json"]
    cwd = Path(__file__).resolve().parents[2]
    return json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True, cwd=cwd).stdout)


def test_geolevels_cli_json():
    doc = _geolevels_json("--model", "su2024")
    keys = {"geolevel", "epsilon_promised", "epsilon_exact", "unused_budget_percent", "variance_drop_percent"}
    assert len(doc["geolevels"]) == 8 and all(keys <= set(g) for g in doc["geolevels"])
    assert all(len(g["epsilon_exact"].replace(".", "").lstrip("0")) >= 16 for g in doc["geolevels"])


def test_geolevel_promises_of_the_baseline_itself_and_of_a_shifted_budget():
    """ρ-zCDP implies conversion(ρ, δ)-DP (arXiv 1605.02065), so the baseline keeps every
    geolevel's own promise; doubling Block's budget breaks Block's and only Block's."""
    from fractions import Fraction

    from optimizer.census.allocation import load_builtin
    from optimizer.search.geolevels import geolevel_promises

    base = load_builtin("dhc-persons")
    same = geolevel_promises(base, base)
    assert [r.geolevel for r in same] == list(base.geolevels) and all(r.kept for r in same)
    for r in same:
        assert Fraction(r.epsilon_exact_new) <= Fraction(r.epsilon_promised)
    shifted = base.with_rho({(g, q): 2 * r for g, q, r in base.items() if g == "Block"})
    res = {r.geolevel: r for r in geolevel_promises(base, shifted)}
    assert not res["Block"].kept and all(r.kept for g, r in res.items() if g != "Block")
    assert res["US"].epsilon_exact_new == same[0].epsilon_exact_new


def test_the_scenario_names_its_neighbour_model_so_figure2_needs_no_flag():
    """Issue 34 item 2 / must-show 2: ``census-plb geolevels --scenario su2024-per-geolevel --json``
    reproduces Figure 2 (ε to 12 digits, 15.08 % … 24.82 %) with no ``--model``: the scenario file
    sets ``neighbour_model = "su2024"``."""
    doc = _geolevels_json()
    assert (doc["neighbour_model"], doc["neighbour_model_from"]) == ("su2024", "the scenario")
    rows = {g["geolevel"]: g for g in doc["geolevels"]}
    with open(DATA, encoding="utf-8") as fh:
        ref = list(csv.DictReader(fh))
    for r in ref:
        assert _agree(rows[r["geolevel"]]["epsilon_exact"], r["epsilon_exact_fdp"], 12), r["geolevel"]
        assert _agree(rows[r["geolevel"]]["epsilon_promised"], r["epsilon_bureau"], 12), r["geolevel"]
    drops = sorted(g["variance_drop_percent"] for g in doc["geolevels"])
    assert (f"{drops[0]:.2f}", f"{drops[-1]:.2f}") == ("15.08", "24.82")


def test_a_scenario_without_the_key_keeps_the_census_model_and_a_wrong_one_is_refused():
    text = (DATA.parents[2] / "scenarios" / "su2024-per-geolevel.toml").read_text(encoding="utf-8")
    census = parse_scenario(text.replace('neighbour_model = "su2024"\n', ""))
    assert census.neighbour_model == "census"
    assert "neighbour_model" not in census.as_dict()  # scenarios without the key keep their run hashes
    assert parse_scenario(text).as_dict()["neighbour_model"] == "su2024"
    with pytest.raises(ScenarioError, match=r"key 'neighbour_model': unknown neighbour model 'addrem'"):
        parse_scenario(text.replace('"su2024"\n', '"addrem"\n'))
