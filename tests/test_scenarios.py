"""Scenario files: every built-in scenario loads and validates; bad files name file, line and key."""

import dataclasses
from fractions import Fraction

import pytest

from optimizer.scenario import Scenario, ScenarioError, list_scenarios, load_scenario, parse_scenario

BASE = ["dhc-persons", "dhc-units", "pl94-persons", "pl94-units"]
VARIATIONS = [
    "dhc-persons-cks",
    "dhc-persons-curve",
    "dhc-persons-delta-1e-12",
    "dhc-persons-delta-1e-15",
    "dhc-persons-favour-block",
    "dhc-persons-favour-county",
]

GOOD = """name = "x"
description = "test"
allocation = "dhc-persons"
conversion = "bun-steinke"
target_delta = "1e-10"
trials = 3
seed = 1

[weights]
geolevel = { Block = "10" }
"""


def test_all_expected_scenarios_present():
    assert set(BASE + VARIATIONS) <= set(list_scenarios())


@pytest.mark.parametrize("name", list_scenarios())
def test_every_scenario_loads(name):
    s = load_scenario(name)
    assert isinstance(s, Scenario) and s.name == name
    assert s.conversion in ("bun-steinke", "cks") and 0 < s.target_delta < 1
    assert s.trials >= 1 and s.seed >= 0
    alloc = s.load_allocation()  # weights refer to real geolevels/queries
    assert alloc.total_rho > 0
    with pytest.raises(dataclasses.FrozenInstanceError):
        s.name = "other"  # frozen


def test_default_scenario_values():
    s = load_scenario("dhc-persons")
    assert (s.allocation, s.conversion, s.target_delta, s.seed) == (
        "dhc-persons",
        "bun-steinke",
        Fraction(1, 10**10),
        20201,
    )
    assert s.equal_weights and 20 <= s.trials <= 50


def test_variations():
    assert load_scenario("dhc-persons-cks").conversion == "cks"
    assert load_scenario("dhc-persons-delta-1e-12").target_delta == Fraction(1, 10**12)
    assert load_scenario("dhc-persons-delta-1e-15").target_delta == Fraction(1, 10**15)
    curve = load_scenario("dhc-persons-curve")
    assert curve.target_kind == "curve" and curve.curve_deltas == tuple(f"1e-{k}" for k in range(1, 16))
    assert load_scenario("dhc-persons-favour-block").weight("Block", "detailed") == 10
    assert load_scenario("dhc-persons-favour-county").geolevel_weight("County") == 10
    assert load_scenario("dhc-persons-favour-county").geolevel_weight("Block") == 1


def test_load_by_path(tmp_path):
    p = tmp_path / "mine.toml"
    p.write_text(GOOD)
    s = load_scenario(p)
    assert s.name == "x" and s.geolevel_weight("Block") == 10 and len(s.sha256) == 64


@pytest.mark.parametrize(
    "edit, line, key",
    [
        (("trials = 3", "trials = 3\nbogus = 1"), 7, "bogus"),
        (('Block = "10"', 'Block = "1/0"'), 10, "weights.geolevel.Block"),
        (('Block = "10"', "Block = 10.5"), 10, "weights.geolevel.Block"),
        (('Block = "10"', 'Block = "ten"'), 10, "weights.geolevel.Block"),
        (('Block = "10"', 'Block = "-2"'), 10, "weights.geolevel.Block"),
        (('target_delta = "1e-10"', 'target_delta = "2"'), 5, "target_delta"),
        (('target_delta = "1e-10"', "target_delta = 1e-10"), 5, "target_delta"),
        (('conversion = "bun-steinke"', 'conversion = "rdp"'), 4, "conversion"),
        (("seed = 1", "seed = -1"), 7, "seed"),
        (("geolevel = {", "region = {"), 10, "weights.region"),
    ],
)
def test_bad_scenario_names_file_line_key(tmp_path, edit, line, key):
    p = tmp_path / "bad.toml"
    p.write_text(GOOD.replace(*edit))
    with pytest.raises(ScenarioError) as info:
        load_scenario(p)
    err = info.value
    assert err.line == line and err.key == key
    msg = str(err)
    assert "bad.toml" in msg and f"line {line}" in msg and f"'{key}'" in msg


def test_missing_key_and_invalid_toml():
    with pytest.raises(ScenarioError, match=r"key 'seed'.*missing"):
        parse_scenario(GOOD.replace("seed = 1\n", ""), "s.toml")
    with pytest.raises(ScenarioError, match=r"s\.toml, line 3.*invalid TOML"):
        parse_scenario('name = "x"\n\nallocation = = 2\n', "s.toml")


def test_unknown_geolevel_weight_is_rejected():
    s = parse_scenario(GOOD.replace("Block", "Blok"), "w.toml")
    with pytest.raises(ScenarioError, match=r"weights\.geolevel\.Blok"):
        s.load_allocation()


def test_unknown_scenario_name():
    with pytest.raises(ScenarioError, match="unknown scenario"):
        load_scenario("no-such-scenario")
