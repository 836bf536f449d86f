"""Issue 13, item 12: newcomer frictions — what `account --rho` composes, the release's real pair
count in reports, plurals, the allocation CSV format in the README, `--debug` anywhere, --digits."""

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from optimizer.census.allocation import Allocation, load_builtin
from optimizer.cli.main import build_parser, main
from optimizer.pipeline.accounting import compute_accounting
from optimizer.report import build_report, release_pair_count
from optimizer.scenario import load_scenario

ROOT = Path(__file__).resolve().parents[1]


# ---------------------------------------------------------------------- account --rho
def test_account_rho_says_what_it_composes(capsys):
    assert main(["account", "--rho", "1/100", "--eps", "1"]) == 0
    out = capsys.readouterr().out
    # one unit-shift discrete Gaussian with sigma^2 = 100: zCDP rho = 1/(2 sigma^2)
    assert f"zCDP rho = {Fraction(1, 2 * 100)}" in out
    assert "1 discrete Gaussian " in out and "1 discrete Gaussians" not in out
    note = [ln for ln in out.splitlines() if ln.startswith("note:")]
    assert note and "--count 2" in note[0] and "R/2" in note[0]


def test_account_rho_count_2_is_the_census_budget(capsys):
    assert main(["account", "--rho", "1/100", "--count", "2", "--eps", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert Fraction(out["rho"]) == Fraction(1, 100)  # the query budget itself, under replacement
    assert "Census query budget" in out["note"]


def test_account_help_explains_rho_and_count():
    sub = build_parser()._subparsers._group_actions[0].choices["account"]
    text = sub.format_help()
    assert "--count 2" in text and "unit-shift" in text and "R/2" in text


def test_account_sigma2_has_no_rho_note(capsys):
    assert main(["account", "--sigma2", "10000/73", "--sigma2", "10000/11", "--eps", "1"]) == 0
    out = capsys.readouterr().out
    assert "2 discrete Gaussians (2 distinct)" in out and "note:" not in out


@pytest.mark.parametrize("digits", ["0", "-3"])
def test_account_digits_below_one_is_refused(capsys, digits):
    assert main(["account", "--sigma2", "5/2", "--eps", "1", f"--digits={digits}"]) == 2
    captured = capsys.readouterr()
    assert "--digits" in captured.err and digits in captured.err and captured.out == ""


# ---------------------------------------------------------------------- pair counts
def test_pl94_has_528_pairs_dhc_946():
    # PL94: 6 geolevels, every bypass pattern keeps the top one: 2^5 = 32 paths -> 32*33/2 pairs
    assert release_pair_count(load_builtin("pl94-persons")) == 32 * 33 // 2 == 528
    assert release_pair_count(load_builtin("dhc-persons")) == 43 * 44 // 2 == 946


def test_report_states_the_release_pair_count(tmp_path):
    (tmp_path / "alloc.toml").write_text(
        'run_type = "custom"\n'
        '[[geolevel]]\nname = "Top"\nqueries = { total = "1/10" }\n'
        '[[geolevel]]\nname = "Mid"\nqueries = { total = "1/5" }\n'
        '[[geolevel]]\nname = "Low"\nqueries = { total = "3/10" }\n'
    )
    (tmp_path / "s.toml").write_text(
        'name = "three"\ndescription = "x"\nallocation = "alloc.toml"\n'
        'conversion = "bun-steinke"\ntarget_delta = "1e-10"\ntrials = 1\nseed = 0\n'
    )
    sc = load_scenario(tmp_path / "s.toml")
    build_report(sc, tmp_path / "none", tmp_path / "out", accounting=compute_accounting(sc))
    md = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    # 3 geolevels, top always present: 2^2 = 4 paths, 4*5/2 = 10 pairs
    # (946 as a count, not as digits inside a commit hash or a source digest of the provenance table)
    assert "all 10 pairs" in md and not re.search(r"(?<![0-9a-f])946(?![0-9a-f])", md)


# ---------------------------------------------------------------------- README: allocation CSV
def test_readme_documents_the_allocation_csv_and_the_example_loads(tmp_path):
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"^```[^\n]*\n(.*?)^```", readme, flags=re.S | re.M)
    csv_blocks = [b for b in blocks if b.startswith("geolevel,query,rho_exact\n")]
    assert csv_blocks, "README shows no allocation CSV example"
    p = tmp_path / "example.csv"
    p.write_text(csv_blocks[0], encoding="utf-8")
    a = Allocation.from_csv(p)
    rows = [ln.split(",") for ln in csv_blocks[0].splitlines()[1:]]
    assert a.n_queries == len(rows) and a.total_rho == sum(Fraction(r[2]) for r in rows)


# ---------------------------------------------------------------------- --debug anywhere
@pytest.mark.parametrize(
    "argv", [["scenario", "list", "--debug"], ["--debug", "scenario", "list"], ["scenario", "--debug", "list"]]
)
def test_debug_is_accepted_before_or_after_the_subcommand(capsys, argv):
    assert main(argv) == 0
    assert "dhc-persons" in capsys.readouterr().out


def test_debug_after_a_nested_action_shows_the_traceback(capsys):
    assert main(["scenario", "run", "no-such-scenario"]) == 2  # one line without --debug
    assert "no-such-scenario" in capsys.readouterr().err
    with pytest.raises(ValueError, match="no-such-scenario"):
        main(["scenario", "run", "no-such-scenario", "--debug"])
