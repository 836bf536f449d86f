"""`census-plb pairs`: JSON contract on a few pairs, one-line errors."""

import json

import mpmath

from optimizer.cli.main import main

EPS_1E10 = "26.340588852722324353781974500154992685"


def test_pairs_json_contract(capsys, tmp_path):
    argv = [
        "pairs",
        "--allocation",
        "dhc-persons",
        "--eps",
        f"{EPS_1E10},20",
        "--json",
        "--limit-pairs",
        "3",
        "--cache",
        str(tmp_path / "cache"),
        "--out",
        str(tmp_path / "out"),
        "--no-progress",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    for key in (
        "n_pairs",
        "worst_pair",
        "worst_delta",
        "worst_delta_error",
        "main_pair_delta",
        "seconds",
        "certain",
        "candidates",
        "zcdp_claim_delta",
        "note",
    ):
        assert key in out, key
    assert out["n_pairs"] == 3 and out["n_pairs_all"] == 946 and out["complete"] is False
    assert "PARTIAL" in out["note"] and "published DHC-persons" in out["note"]
    assert out["eps"] == EPS_1E10 and out["worst_pair"][0] == 1
    assert out["main_pair_delta"] is None  # [13, 13] is not among the first 3 pairs
    with mpmath.workdps(40):
        assert 0 < mpmath.mpf(out["worst_delta"]) < mpmath.mpf(out["zcdp_claim_delta"])
        assert mpmath.mpf(out["worst_delta_error"]) < mpmath.mpf("1e-30")
    assert len(out["grid"]) == 2
    assert (tmp_path / "out" / "dhc-persons_pairs.csv").is_file() and (tmp_path / "out" / "dhc-persons.json").is_file()
    # the second run is served from the cache
    assert main(argv) == 0
    again = json.loads(capsys.readouterr().out)
    assert again["grid"] == out["grid"]


def test_pairs_main_pair_and_deltas(capsys, tmp_path):
    assert (
        main(
            [
                "pairs",
                "--allocation",
                "dhc-persons",
                "--deltas",
                "1e-10",
                "--pair",
                "13,13",
                "--json",
                "--cache",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    out = json.loads(capsys.readouterr().out)
    assert out["worst_pair"] == [13, 13] and out["main_pair_delta"] == out["worst_delta"]
    assert out["eps"].startswith(EPS_1E10[:36]) and out["grid"][0]["delta_zcdp"] == "1e-10"
    with mpmath.workdps(40):
        assert abs(mpmath.mpf(out["main_pair_delta"]) / mpmath.mpf("1.7831993350417540543e-12") - 1) < 1e-14


def test_pairs_text_output(capsys, tmp_path):
    assert (
        main(
            [
                "pairs",
                "--allocation",
                "dhc-persons",
                "--eps",
                "20",
                "--pair",
                "1,1",
                "--cache",
                str(tmp_path),
                "--no-progress",
            ]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "1 of 946 pairs" in text and "1-1" in text
    assert max(len(line) for line in text.splitlines()) <= 100  # issue 34 item 7: fits 100 columns
    argv = ["pairs", "--allocation", "dhc-persons", "--eps", "20", "--pair", "1,1", "--cache", str(tmp_path)]
    assert main([*argv, "--no-progress", "--wide"]) == 0
    wide = capsys.readouterr().out
    assert "max delta (midpoint)" in wide and max(len(line) for line in wide.splitlines()) > 100


def test_pairs_bad_allocation_is_one_line(capsys):
    assert main(["pairs", "--allocation", "no-such-release", "--eps", "1", "--json"]) == 2
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and "no-such-release" in err and "dhc-persons" in err
    assert captured.out == ""


def test_pairs_bad_numbers(capsys):
    assert main(["pairs", "--allocation", "dhc-persons", "--eps", "abc"]) == 2
    assert "abc" in capsys.readouterr().err
    assert main(["pairs", "--allocation", "dhc-persons", "--limit-pairs", "0"]) == 2
    assert "--limit-pairs" in capsys.readouterr().err
