"""Spine paths: the bypass rule regenerates the 43 published DHC-persons paths exactly."""

import csv
from collections import defaultdict
from fractions import Fraction as F
from pathlib import Path

import pytest

import optimizer.census.spine
from optimizer.census.allocation import Allocation, load_builtin
from optimizer.census.spine import (
    all_patterns,
    dhc_persons_patterns,
    normalize_pattern,
    path_allocation,
    path_geolevel_totals,
    shipped_dhc_persons_paths,
)

DATA = Path(optimizer.census.spine.__file__).parents[1] / "data"
DHC_TOTAL = F(24811, 5000)  # published DHC-persons total rho (4.9622)
FULL = ("US", "State", "County", "Prim", "Tract_Subset_Group", "Tract_Subset", "Block_Group", "Block")


def read_long_csv():
    """Published paths, parsed here independently of optimizer.census.spine."""
    out = defaultdict(lambda: defaultdict(list))
    with open(DATA / "dhc_persons_allocation_paths_long.csv", newline="") as fh:
        for row in csv.DictReader(fh):
            out[int(row["path"])][row["geolevel"]].append(F(row["rho_fraction"]))
    return out


@pytest.fixture(scope="module")
def dhc():
    return load_builtin("dhc-persons")


def test_regenerates_all_43_published_paths(dhc):
    published = read_long_csv()
    patterns = dhc_persons_patterns()
    assert len(patterns) == 43 == len(published)
    for index, pattern in enumerate(patterns, start=1):
        regenerated = path_allocation(dhc, pattern)
        assert sum(sum(v) for v in regenerated) == DHC_TOTAL, index
        for geolevel, values in zip(dhc.geolevels, regenerated):
            ours = sorted(v for v in values if v)
            theirs = sorted(v for v in published[index][geolevel] if v)
            assert ours == theirs, (index, geolevel)
            assert len(published[index][geolevel]) == 10  # 10 slots per level in the source


def test_published_paths_sum_to_total():
    for index, levels in read_long_csv().items():
        assert sum(sum(v) for v in levels.values()) == DHC_TOTAL, index


def test_shipped_loader_agrees_with_independent_parse():
    published = read_long_csv()
    shipped = shipped_dhc_persons_paths()
    assert sorted(shipped) == list(range(1, 44))
    for i, levels in shipped.items():
        assert levels == {g: tuple(sorted(v for v in vals if v)) for g, vals in published[i].items()}


def test_hand_examples(dhc):
    patterns = dhc_persons_patterns()
    # path 13 is the full production spine: no merging at all
    assert patterns[12] == FULL
    assert path_allocation(dhc, FULL) == [lv.rho for lv in dhc.levels]
    # path 1: no Block_Group; its 43/100 goes to Tract_Subset in that level's shares
    # (8 queries with share 1/16, 2 with share 4/16): method note §1.3
    p1 = path_allocation(dhc, patterns[0])
    assert "Block_Group" not in patterns[0]
    ts = p1[FULL.index("Tract_Subset")]
    assert sorted(ts) == [F(217, 2500) + F(43, 100) / 16] * 8 + [F(217, 625) + F(43, 100) * 4 / 16] * 2
    assert set(p1[FULL.index("Block_Group")]) == {0}
    # path 6: US and State only; State absorbs County..Block (13 shares at State: 9x1 + 1x4)
    assert patterns[5] == ("US", "State")
    totals = path_geolevel_totals(dhc, patterns[5])
    assert totals["State"] == F(48673, 10000) and totals["US"] == F(949, 10000)
    assert sorted(set(path_allocation(dhc, patterns[5])[1])) == [F(48673, 10000) / 13, F(48673, 10000) * 4 / 13]


def test_merge_goes_upward_on_a_toy():
    a = Allocation.from_mapping({"A": {"x": 1, "y": 3}, "B": {"x": 2}, "C": {"x": 5, "y": 5}}, run_type=None)
    # B bypassed: its 2 goes to A split 1:3; C kept.
    assert path_allocation(a, ["C", "A"]) == [(F(3, 2), F(9, 2)), (0,), (5, 5)]
    # only A: A absorbs 2 + 10 = 12 on top of its own 4
    assert path_allocation(a, ["A"]) == [(4, 12), (0,), (0, 0)]


def test_patterns_properties(dhc):
    patterns = dhc_persons_patterns()
    assert len(set(patterns)) == 43
    assert all(p[0] == "US" and "State" in p for p in patterns)
    assert any("Block" not in p for p in patterns)  # the bottom level may be bypassed
    every = all_patterns(dhc.geolevels)
    assert len(every) == 2**7 and len(set(every)) == 128
    assert every[0] == FULL
    assert set(patterns) <= set(every)
    with_bottom = all_patterns(dhc.geolevels, keep_bottom=True)
    assert len(with_bottom) == 2**6 and all(p[-1] == "Block" and p[0] == "US" for p in with_bottom)
    assert all_patterns(["only"]) == (("only",),)


@pytest.mark.parametrize("name", ["dhc-units", "pl94-persons-pr", "pl94-units"])
def test_every_pattern_conserves_budget(name):
    a = load_builtin(name)
    for pattern in all_patterns(a.geolevels):
        assert sum(sum(v) for v in path_allocation(a, pattern)) == a.total_rho


def test_bad_patterns(dhc):
    with pytest.raises(ValueError, match="top geolevel 'US' must be present"):
        path_allocation(dhc, ["State", "Block"])
    with pytest.raises(ValueError, match=r"unknown geolevel\(s\) \['Tract'\]"):
        path_allocation(dhc, ["US", "Tract"])
    with pytest.raises(ValueError, match="repeated"):
        normalize_pattern(FULL, ["US", "US"])
    assert normalize_pattern(FULL, ["Block", "US"]) == ("US", "Block")
