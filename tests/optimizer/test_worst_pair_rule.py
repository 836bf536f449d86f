"""Issue 35, item 4: a worst pair only when it is certain.

A pair is named the worst only when its lower bound is ≥ every other pair's upper bound (and no
other pair's is: tied pairs are never called certain); otherwise the pairs tied within their
bounds are listed and the release's δ is the interval [max lower, max upper].  Checked on
hand-made intervals (:func:`optimizer.census.pairs.worst_pair_rule`, :func:`optimizer.census.pairs.worst_case`),
in :func:`optimizer.jobs.confirm.confirm` (fake pair runner), in ``census-plb pairs`` (a what-if whose
pairs are on the coarse sandwich, whose intervals overlap) and in the printers of
``census-plb optimize``.
"""

from __future__ import annotations

import json
from fractions import Fraction as F
from types import SimpleNamespace

import pytest

from optimizer.census.allocation import load_builtin
from optimizer.census.pairs import worst_case, worst_pair_rule
from optimizer.cli.main import main
from optimizer.jobs.confirm import confirm
from optimizer.search import Target
from tests.optimizer.test_exactness_screen import fine_grid_what_if


def iv(lo, hi, met=True):
    return SimpleNamespace(lower=F(lo), upper=F(hi), tolerance_met=met)


def test_a_pair_above_every_other_upper_bound_is_certain():
    v = worst_pair_rule({(1, 1): iv(5, 6), (1, 2): iv(1, 4), (2, 2): iv(3, 5)})
    assert v.certain and v.worst == (1, 1) and v.tied == ((1, 1),)
    assert (v.lower, v.upper) == (5, 6)


def test_lower_bound_equal_to_the_next_upper_bound_is_still_certain():
    v = worst_pair_rule({(1, 1): iv(5, 6), (1, 2): iv(1, 5)})
    assert v.certain and v.worst == (1, 1)


def test_overlapping_pairs_are_tied_not_certain():
    # the largest upper bound is (3, 4)'s, the largest lower bound (6, 6)'s: the issue's [10, 31] / [6, 6]
    b = {(3, 4): iv("8.756", "9.626"), (6, 6): iv("9.1826", "9.1827"), (1, 1): iv(1, 2), (2, 5): iv("9.0", "9.2")}
    v = worst_pair_rule(b)
    assert not v.certain and v.worst is None
    assert v.tied == ((3, 4), (2, 5), (6, 6))  # every upper ≥ max lower 9.1826, largest upper first
    assert (v.lower, v.upper) == (F("9.1826"), F("9.626"))


def test_identical_intervals_are_never_certain():
    for b in ({(1, 1): iv(3, 3), (1, 2): iv(3, 3)}, {(1, 1): iv(2, 3), (1, 2): iv(2, 3), (2, 2): iv(0, 1)}):
        v = worst_pair_rule(b)
        assert not v.certain and v.worst is None and v.tied == ((1, 1), (1, 2))


def test_one_pair_is_certain_and_no_pairs_is_an_error():
    v = worst_pair_rule({(4, 7): iv(1, 2)})
    assert v.certain and v.worst == (4, 7) and (v.lower, v.upper) == (1, 2)
    with pytest.raises(ValueError, match="no pairs"):
        worst_pair_rule({})


def test_worst_case_applies_the_rule():
    res = {(1, 1): [iv(5, 6), iv(2, 3)], (1, 2): [iv(1, 5), iv(2, 3)]}
    w0, w1 = worst_case(res)
    assert w0.certain and w0.argmax == (1, 1) and (w0.value.lower, w0.value.upper) == (5, 6)
    assert not w1.certain and set(w1.candidates) == {(1, 1), (1, 2)}


# ---------------------------------------------------------------- the confirmation
def _fake(bounds):
    def run(alloc, target, pair_list):
        return {p: bounds[p] for p in pair_list}

    return run


def _target():
    return Target(epsilon="26.34", delta="1e-10")


@pytest.mark.parametrize("certain", [True, False])
def test_confirmation_names_the_worst_pair_only_when_certain(certain, capsys):
    pairs = [(13, 13), (12, 13), (6, 6)]
    bounds = {
        (13, 13): iv("5e-11", "6e-11"),
        (12, 13): iv("7e-11", "9e-11") if certain else iv("7e-11", "9.5e-11", met=False),
        (6, 6): iv("8e-11", "8.9e-11") if certain else iv("9.1e-11", "9.2e-11"),
    }
    if certain:
        bounds[(12, 13)] = iv("9e-11", "9.1e-11")
    run = _fake(bounds)
    conf = confirm(load_builtin("dhc-persons"), _target(), run, pairs=pairs, verify_runner=run, progress=True)
    assert conf.passed
    err = capsys.readouterr().err
    assert "exactness screen of dhc-persons (round 1): all 3 pairs planned on exact engines" in err
    assert conf.screen is not None and conf.screen.all_exact
    assert conf.jobs == 3
    if certain:
        assert conf.worst_certain and conf.worst_pair == (12, 13) and conf.tied_pairs == [(12, 13)]
        assert conf.release_delta == (F("9e-11"), F("9.1e-11"))
        assert conf.not_exact_pairs == [] and conf.jobs_not_exact == 0
    else:
        assert not conf.worst_certain
        assert conf.tied_pairs == [(12, 13), (6, 6)]
        assert conf.release_delta == (F("9.1e-11"), F("9.5e-11"))
        assert conf.not_exact_pairs == [(12, 13)] and conf.jobs_not_exact == 1


# ---------------------------------------------------------------- the commands
EPS = "26.340588852722324353781974500154992685"


def _still_coarse(csv_what_if, pairs) -> int:
    """How many of ``pairs`` of the what-if the release tier (EXHAUSTIVE_CONFIG) leaves on the sandwich."""
    from accountant.composition import engine_plan
    from accountant.engine import EXHAUSTIVE_CONFIG
    from optimizer.census.pairs import mechanism
    from optimizer.jobs.confirm import paths_of

    paths = {p.index: p for p in paths_of(csv_what_if)}
    return sum(not engine_plan(mechanism(paths[i]) + mechanism(paths[j]), EXHAUSTIVE_CONFIG).exact for i, j in pairs)


def test_pairs_command_lists_tied_pairs_and_the_release_interval(tmp_path, capsys):
    """A what-if on a 1/10⁵ grid: its pairs are on the coarse sandwich (named before the run) and
    their intervals overlap, so no pair is called the worst."""
    csv = tmp_path / "whatif.csv"
    fine_grid_what_if().to_csv(csv)
    argv = ["pairs", "--allocation", str(csv), "--eps", f"20,{EPS}", "--cache", str(tmp_path / "c"), "--workers", "1"]
    for p in ("1,2", "1,3", "1,4", "1,5"):
        argv += ["--pair", p]
    assert main([*argv, "--json"]) == 0
    cap = capsys.readouterr()
    assert "exactness screen of whatif: 4 of 4 pairs will NOT be exact" in cap.err
    assert "pair [1, 2]: lattice too fine: planned nodes N = " in cap.err
    assert cap.err.index("exactness screen") < cap.err.index("accounting whatif")  # before the pair jobs
    s = json.loads(cap.out)
    assert s["worst_pair_certain"] is False and s["certain"] is False
    assert sorted(map(tuple, s["worst_pairs_tied"])) == [(1, 2), (1, 3), (1, 4), (1, 5)]
    lo, hi = s["release_delta_interval"]
    assert lo == s["worst_delta_lower"] and hi == s["worst_delta_upper"] and F(lo) < F(hi)
    # the screen plans the default engines (4 on the sandwich); the pair jobs take the release tier where it
    # reaches an exact engine (accountant.composition.thorough_composition), so fewer may miss
    missed = _still_coarse(csv_what_if=fine_grid_what_if(), pairs=[(1, 2), (1, 3), (1, 4), (1, 5)])
    assert s["pairs_not_exact_planned"] == 4 and s["pairs_not_exact"] == missed >= 1
    assert main(argv) == 0  # text: no pair named the worst
    out = capsys.readouterr().out
    assert "no certain worst pair at eps = 20: 4 pairs tied within their bounds" in out
    assert f"release delta in [{lo}, {hi}]" in out
    assert f"exactness: 4 pair(s) planned non-exact, {missed} of 4 pair(s) missed their tolerance" in out
    rows = [line.split() for line in out.splitlines() if line.strip().startswith("20 ")]
    assert rows and rows[0][1] == "none"


def test_pairs_command_certain_worst_pair(tmp_path, capsys):
    argv = ["pairs", "--allocation", "dhc-persons", "--eps", EPS, "--cache", str(tmp_path / "c"), "--workers", "1"]
    argv += ["--pair", "13,13", "--pair", "1,1", "--json", "--quiet"]
    assert main(argv) == 0
    cap = capsys.readouterr()
    s = json.loads(cap.out)
    assert s["worst_pair_certain"] is True and s["worst_pairs_tied"] == [s["worst_pair"]]
    assert s["pairs_not_exact_planned"] == 0 and s["pairs_not_exact"] == 0
    assert s["exactness_screen"]["engines"] == {"trapezoid": 2}
    assert "exactness screen" not in cap.err  # --quiet


# ---------------------------------------------------------------- the run summary and its printers
def _confirmations():
    pairs = [(13, 13), (12, 13)]
    sure = {(13, 13): iv("5e-11", "6e-11"), (12, 13): iv("9e-11", "9.1e-11")}
    tied = {(13, 13): iv("8.9e-11", "9.3e-11", met=False), (12, 13): iv("9e-11", "9.1e-11")}
    alloc = load_builtin("dhc-persons")
    out = []
    for b in (sure, tied):
        run = _fake(b)
        out.append(confirm(alloc, _target(), run, pairs=pairs, verify_runner=run, progress=False))
    return out


def test_run_summary_keys_and_printed_lines():
    from optimizer.cli.commands.optimize import confirmation_lines
    from optimizer.jobs.confirm import confirmation_keys, worst_pair_text

    uniform, optimized = _confirmations()
    keys = confirmation_keys(uniform, optimized)
    assert keys["uniform_worst_pair_certain"] is True and keys["worst_pair_certain"] is False
    assert keys["uniform_worst_pairs_tied"] == [[12, 13]]
    assert keys["worst_pairs_tied"] == [[13, 13], [12, 13]]
    assert keys["release_delta_interval"] == ["9.0000000000000000000e-11", "9.3000000000000000000e-11"]
    assert keys["pairs_not_exact"] == {"uniform": 0, "optimized": 1}
    assert keys["pairs_not_exact_planned"] == {"uniform": 0, "optimized": 0}
    assert keys["pair_jobs"] == {"uniform": 2, "optimized": 2}
    assert keys["pair_jobs_not_exact"] == {"uniform": 0, "optimized": 1}
    assert keys["exactness_screen"]["optimized"]["n_pairs"] == 2
    skipped = confirmation_keys(None, None)
    assert skipped["worst_pair_certain"] is None and skipped["pairs_not_exact"] is None
    summary = {
        **keys,
        "confirm_skipped": False,
        "worst_pair": list(optimized.worst_pair),
        "worst_pair_delta": "9.3e-11",
        "uniform_worst_pair": [12, 13],
        "uniform_worst_pair_delta": "9.1e-11",
    }
    assert worst_pair_text(summary, "uniform_") == "worst pair [12, 13] (certain), δ ≤ 9.1e-11"
    text = worst_pair_text(summary)
    assert text.startswith("no certain worst pair: 2 pairs tied within their bounds ([13, 13], [12, 13])")
    assert "release δ in [9.0000000000000000000e-11, 9.3000000000000000000e-11]" in text
    assert "worst pair [13, 13]" not in text
    lines = confirmation_lines(summary)
    assert lines[0].startswith("uniform rescale: worst pair [12, 13] (certain)")
    assert lines[1].startswith("optimized: no certain worst pair") and "pairs not exact: 1 (planned" in lines[1]
    assert optimized.worst_text().startswith("no certain worst pair (2 tied")
    assert uniform.worst_text() == "worst pair [12, 13] (certain)"


def test_report_never_names_an_uncertain_worst_pair():
    from optimizer.report.document import _worst_pair_text

    base = {"worst_pair": [10, 31], "worst_pair_delta": "9.626e-11"}
    assert _worst_pair_text({**base, "worst_pair_certain": True}).startswith("worst pair [10, 31] (certain")
    tied = _worst_pair_text(
        {
            **base,
            "worst_pair_certain": False,
            "worst_pairs_tied": [[10, 31], [6, 6]],
            "release_delta_interval": ["9.1826e-11", "9.626e-11"],
        }
    )
    assert "worst pair [10, 31]" not in tied and "2 pairs are tied" in tied and "[10, 31], [6, 6]" in tied
    assert "9.1826" in tied and "9.626" in tied
    assert "not known to be the worst" in _worst_pair_text(base)  # an old summary without the rule


def test_heat_map_matrix_is_relative_to_the_promise():
    from optimizer.report.tables import _pair_matrix

    acc = SimpleNamespace(
        eps_claim=26.34,
        delta_target=F(1, 10**10),
        total_rho=F(24811, 5000),
        scenario=SimpleNamespace(target_delta_text="1e-10", conversion="bun-steinke"),
    )
    rows = [
        {"pair_i": "1", "pair_j": "1", "eps": "26.34", "delta_lower": "4e-11", "delta_upper": "5e-11"},
        {"pair_i": "1", "pair_j": "2", "eps": "26.34", "delta_lower": "9e-11", "delta_upper": "1e-10"},
        {"pair_i": "2", "pair_j": "2", "eps": "26.34", "delta_lower": "1e-12", "delta_upper": "2e-12"},
    ]
    run = SimpleNamespace(pairs=None, confirm_pairs=rows, optimize={})
    m, key, n, promised, how = _pair_matrix(run, acc.eps_claim, acc)
    assert key == "26.34" and n == 3 and promised == 1e-10 and "promised δ = 1e-10" in how
    assert m[0][0] == pytest.approx(0.5) and m[0][1] == m[1][0] == pytest.approx(1.0)
    assert m[1][1] == pytest.approx(0.02)
