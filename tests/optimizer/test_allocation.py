"""Allocation: loading, validation with file/line/field errors, exact transformations.

Reference values are the Census Bureau's published strategy numbers (DHC-P iteration 23.1,
ρ in units of 1/10000; arXiv 2606.29835 §1.1) and the run totals, typed in by hand here.
"""

from fractions import Fraction as F

import pytest

from optimizer.census.allocation import BUILTIN_NAMES, Allocation, AllocationError, GeolevelBudget, load_builtin

DHC_LEVELS = ("US", "State", "County", "Prim", "Tract_Subset_Group", "Tract_Subset", "Block_Group", "Block")
# DHC-P per-geolevel totals, from the DAS strategy table (in 1/10000 units: 949, 12987, 4960, ...).
DHC_P_LEVEL_TOTALS = {
    "US": F(949, 10000),
    "State": F(12987, 10000),
    "County": F(4960, 10000),
    "Prim": F(6214, 10000),
    "Tract_Subset_Group": F(6214, 10000),
    "Tract_Subset": F(13888, 10000),
    "Block_Group": F(4300, 10000),
    "Block": F(110, 10000),
}

HEADER = "geolevel,query,rho_exact\n"


def csv_file(tmp_path, body, header=HEADER, name="alloc.csv"):
    p = tmp_path / name
    p.write_text(header + body)
    return p


# ---------------------------------------------------------------------- built-ins
@pytest.mark.parametrize(
    "name,total,n_levels",
    [
        ("dhc-persons", F(24811, 5000), 8),
        ("dhc-persons-pr", F(24811, 5000), 7),
        ("dhc-units", F(15401, 2000), 8),
        ("dhc-units-pr", F(15401, 2000), 7),
        # PL94: rho = (1/global_scale)^2 with global_scale 339/542 (persons), 12343/3379 (units)
        ("pl94-persons", F(542, 339) ** 2, 6),
        ("pl94-persons-pr", F(542, 339) ** 2, 5),
        ("pl94-units", F(3379, 12343) ** 2, 6),
        ("pl94-units-pr", F(3379, 12343) ** 2, 5),
    ],
)
def test_builtin_totals(name, total, n_levels):
    a = load_builtin(name)
    assert a.name == name
    assert a.total_rho == total
    assert isinstance(a.total_rho, F)
    assert len(a.geolevels) == n_levels
    assert a.geolevels[-1] == "Block"
    assert a.geolevels[0] == ("US" if n_levels in (6, 8) else "State")


def test_builtin_names_complete():
    assert set(BUILTIN_NAMES) == {
        "dhc-persons",
        "dhc-persons-pr",
        "dhc-units",
        "dhc-units-pr",
        "pl94-persons",
        "pl94-persons-pr",
        "pl94-units",
        "pl94-units-pr",
    }
    with pytest.raises(ValueError, match=r"unknown allocation 'dhc'.*dhc-persons"):
        load_builtin("dhc")


def test_dhc_persons_values():
    a = load_builtin("dhc-persons")
    assert a.geolevels == DHC_LEVELS
    assert a.run_type == "dhc"
    assert a.geolevel_totals() == DHC_P_LEVEL_TOTALS
    assert a.rho_of("US", "gq_constr_groups * age_10_groups") == F(292, 10000)
    assert a.rho_of("County", "popSehsdTargetsRelship") == F(1240, 10000)
    assert a.rho_of("Block", "detailed") == F(11, 10000)
    assert all(len(lv.queries) == 10 for lv in a.levels)
    s2 = a.sigma2()
    assert s2[("US", "detailed")] == F(10000, 73)
    assert s2[("Tract_Subset", "popSehsdTargetsRelship")] == F(10000, 3472)
    assert len(s2) == 80


# ---------------------------------------------------------------------- transformations
def test_scaled_and_with_rho():
    a = load_builtin("dhc-persons")
    b = a.scaled("1/2")
    assert b.total_rho == F(24811, 10000)
    assert b.rho_of("State", "detailed") == F(999, 20000)
    assert b.geolevels == a.geolevels and b.name == a.name
    with pytest.raises(ValueError, match="c must be > 0"):
        a.scaled(0)
    with pytest.raises(TypeError, match="float"):
        a.scaled(0.5)
    c = a.with_rho({("Block", "detailed"): "1/100"})
    assert c.rho_of("Block", "detailed") == F(1, 100)
    assert c.total_rho - a.total_rho == F(1, 100) - F(11, 10000)
    assert c.rho_of("Block", "hispanic * sex") == F(11, 10000)  # untouched
    with pytest.raises(ValueError, match="not a measurement"):
        a.with_rho({("Block", "no such query"): "1/100"})
    with pytest.raises(ValueError, match="rho must be > 0"):
        a.with_rho({("Block", "detailed"): 0})


@pytest.mark.parametrize("name", BUILTIN_NAMES)
def test_round_trips_exact(name):
    a = load_builtin(name)
    assert Allocation.from_toml(a.to_toml()) == a
    assert Allocation.from_csv(a.to_csv(), name=a.name, provenance=a.provenance) == a


def test_round_trip_through_files(tmp_path):
    a = load_builtin("pl94-persons").scaled("3/7")
    a.to_toml(tmp_path / "x.toml")
    a.to_csv(tmp_path / "x.csv")
    assert Allocation.from_toml(tmp_path / "x.toml") == a
    back = Allocation.from_csv(tmp_path / "x.csv")
    assert back.name == "x" and back.levels == a.levels


def test_from_mapping_and_custom_geography():
    a = Allocation.from_mapping({"Top": {"q1": "1/2", "q2": 1}, "Leaf": {"q1": "0.25"}}, name="toy")
    assert a.run_type is None
    assert a.total_rho == F(7, 4)
    assert a.level("Top").proportions() == (F(1, 3), F(2, 3))
    with pytest.raises(AllocationError, match="float"):
        Allocation.from_mapping({"Top": {"q": 0.5}})


def test_direct_construction_validates():
    with pytest.raises(ValueError, match="duplicate query 'q'"):
        GeolevelBudget("US", ("q", "q"), (F(1), F(1)))
    with pytest.raises(ValueError, match="rho must be > 0"):
        GeolevelBudget("US", ("q",), (F(0),))
    lv = GeolevelBudget("Foo", ("q",), (F(1),))
    with pytest.raises(ValueError, match="unknown geolevel 'Foo' for run type 'dhc'"):
        Allocation((lv,), run_type="dhc")


# ---------------------------------------------------------------------- CSV validation
def test_csv_unknown_geolevel(tmp_path):
    p = csv_file(tmp_path, "US,q,1/10\nState,q,1/10\nBlok,q,1/10\n")
    with pytest.raises(AllocationError) as e:
        Allocation.from_csv(p)
    msg = str(e.value)
    assert "alloc.csv" in msg and "line 4" in msg and "'geolevel'" in msg and "'Blok'" in msg
    assert e.value.line == 4 and e.value.field == "geolevel"


def test_csv_geolevel_order(tmp_path):
    p = csv_file(tmp_path, "US,q,1/10\nBlock,q,1/10\nState,q,1/10\n")
    with pytest.raises(AllocationError, match=r"line 3, field 'geolevel'.*out of order"):
        Allocation.from_csv(p)
    # the same file is fine as a custom geography
    assert Allocation.from_csv(p, run_type=None).geolevels == ("US", "Block", "State")


@pytest.mark.parametrize("bad", ["0", "-1/10", "0/7"])
def test_csv_nonpositive_rho(tmp_path, bad):
    p = csv_file(tmp_path, f"US,q,1/10\nState,q,{bad}\n")
    with pytest.raises(AllocationError, match=rf"line 3, field 'rho_exact'.*rho must be > 0.*'{bad}'"):
        Allocation.from_csv(p)


@pytest.mark.parametrize("bad", ["abc", "1/0", "", "nan"])
def test_csv_unparseable(tmp_path, bad):
    p = csv_file(tmp_path, f"US,q,1/10\nState,q,{bad}\n")
    with pytest.raises(AllocationError, match=r"alloc.csv, line 3, field 'rho_exact'"):
        Allocation.from_csv(p)


def test_csv_duplicate_row(tmp_path):
    p = csv_file(tmp_path, "US,q,1/10\nUS,r,1/10\nUS,q,1/5\n")
    with pytest.raises(AllocationError, match=r"line 4, field 'query'.*duplicate.*\('US', 'q'\).*line 2"):
        Allocation.from_csv(p)


def test_csv_missing_column_and_ragged_rows(tmp_path):
    p = csv_file(tmp_path, "US,q,1/10\n", header="geolevel,query,rho\n")
    with pytest.raises(AllocationError, match=r"line 1, field 'rho_exact'.*missing required"):
        Allocation.from_csv(p)
    p = csv_file(tmp_path, "US,q,1/10,extra\n", name="b.csv")
    with pytest.raises(AllocationError, match=r"b.csv, line 2.*more fields"):
        Allocation.from_csv(p)


def test_csv_declared_columns_must_add_up(tmp_path):
    header = "geolevel,query,rho_fraction_of_total,rho,rho_exact,sigma_sq_exact\n"
    ok = "US,q,1/4,0.1,1/10,10\nState,q,3/4,0.3,3/10,10/3\n"
    a = Allocation.from_csv(csv_file(tmp_path, ok, header=header))
    assert a.total_rho == F(2, 5)
    bad_share = ok.replace("3/4", "2/3")
    with pytest.raises(AllocationError, match=r"line 3, field 'rho_fraction_of_total'.*does not add up"):
        Allocation.from_csv(csv_file(tmp_path, bad_share, header=header, name="s.csv"))
    bad_dec = ok.replace("0.3,", "0.31,")
    with pytest.raises(AllocationError, match=r"line 3, field 'rho'.*disagrees"):
        Allocation.from_csv(csv_file(tmp_path, bad_dec, header=header, name="d.csv"))
    bad_sigma = ok.replace(",10\n", ",11\n")
    with pytest.raises(AllocationError, match=r"line 2, field 'sigma_sq_exact'"):
        Allocation.from_csv(csv_file(tmp_path, bad_sigma, header=header, name="g.csv"))


def test_csv_declared_total(tmp_path):
    p = csv_file(tmp_path, "US,q,1/10\nState,q,3/10\n")
    assert Allocation.from_csv(p, declared_total="2/5").total_rho == F(2, 5)
    with pytest.raises(AllocationError, match=r"declared total rho 1/2 does not match.*2/5"):
        Allocation.from_csv(p, declared_total="1/2")


def test_missing_file():
    with pytest.raises(ValueError, match="no such file"):
        Allocation.from_csv("/nonexistent/alloc.csv")


# ---------------------------------------------------------------------- TOML validation
GOOD_TOML = """\
name = "toy"
run_type = "pl94"
total_rho = "1/2"

[[geolevel]]
name = "US"
queries = { "total" = "1/10", detailed = "1/10" }

[[geolevel]]
name = "Block"
total_rho = "3/10"
[geolevel.queries]
detailed = "3/10"
"""


def test_toml_good():
    a = Allocation.from_toml(GOOD_TOML)
    assert a.name == "toy" and a.run_type == "pl94"
    assert a.geolevels == ("US", "Block")
    assert a.level("US").queries == ("total", "detailed")
    assert a.total_rho == F(1, 2)


def test_toml_errors_name_line_and_field(tmp_path):
    p = tmp_path / "s.toml"
    p.write_text(GOOD_TOML.replace('detailed = "3/10"', 'detailed = "3/1O"'))
    with pytest.raises(
        AllocationError, match=r"s.toml, line 13, field 'geolevel\[1\]\.queries\.'detailed'.*cannot parse"
    ):
        Allocation.from_toml(p)
    p.write_text(GOOD_TOML.replace('detailed = "3/10"', "detailed = 0.3"))
    with pytest.raises(AllocationError, match=r"line 13.*float 0.3"):
        Allocation.from_toml(p)
    p.write_text(GOOD_TOML.replace('total_rho = "3/10"', 'total_rho = "1/3"'))
    with pytest.raises(AllocationError, match=r"line 11, field 'geolevel\[1\]\.total_rho \(Block\)'.*sum to 3/10"):
        Allocation.from_toml(p)
    p.write_text(GOOD_TOML.replace('total_rho = "1/2"', 'total_rho = "2/5"'))
    with pytest.raises(AllocationError, match=r"line 3, field 'total_rho'.*does not add up.*1/2"):
        Allocation.from_toml(p)
    p.write_text(GOOD_TOML.replace('name = "Block"', 'name = "Blok"'))
    with pytest.raises(AllocationError, match=r"unknown geolevel 'Blok' for run type 'pl94'"):
        Allocation.from_toml(p)
    p.write_text(GOOD_TOML.replace('"total" = "1/10"', '"total" = "-1/10"'))
    with pytest.raises(AllocationError, match=r"line 7.*rho must be > 0"):
        Allocation.from_toml(p)
    p.write_text(GOOD_TOML.replace('total_rho = "1/2"', 'totl_rho = "1/2"'))
    with pytest.raises(AllocationError, match=r"line 3, field 'totl_rho'.*unknown key"):
        Allocation.from_toml(p)
    p.write_text(GOOD_TOML + '\n[[geolevel]]\nname = "US"\nqueries = { detailed = "1/10" }\n')
    # a second [[geolevel]] table of the same geolevel is refused as such (issue 13: never merged)
    with pytest.raises(AllocationError, match=r"line 15.*duplicate \[\[geolevel\]\] 'US'.*line 5"):
        Allocation.from_toml(p)


def test_toml_syntax_error():
    with pytest.raises(AllocationError, match="invalid TOML"):
        Allocation.from_toml('name = "x\n[[geolevel]]\n')
