"""Bounds are printed on their safe side, exactly; tolerance misses are shown; --count is bounded.

Printed strings are parsed back with ``Fraction`` (exact) and compared with the exact binary end
points of the certified intervals (issue 12, items 2, 7, 8 and 10).
"""

import json
import re
import time
from fractions import Fraction
from types import SimpleNamespace

import mpmath
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import accountant
from accountant import Certified
from accountant.certified import exact_mpf
from accountant.decimals import (
    decimal_string,
    exact_fraction,
    format_error_up,
    format_interval,
    half_width,
    mid_decimal,
    outward,
)
from optimizer.cli.main import main

TWO = ["--sigma2", "10000/73", "--sigma2", "10000/11"]


def frac(x) -> Fraction:
    """The exact value of an mpf end point (independent of accountant.decimals)."""
    sign, man, exp, _ = x._mpf_
    return (-1 if sign else 1) * Fraction(man) * Fraction(2) ** exp


def _with_target(c: Certified, tol=None, rtol=None) -> Certified:
    """c recording a requested error (when the accountant's Certified supports it)."""
    return c.with_target(tol=tol, rtol=rtol) if hasattr(c, "with_target") else c


# ---------------------------------------------------------------------- (a) the formatter
@settings(max_examples=300, deadline=None)
@given(
    st.integers(-(2**300), 2**300),
    st.integers(-1500, 300),
    st.integers(0, 2**300),
    st.integers(-1500, 300),
    st.integers(1, 40),
    st.sampled_from(["sci", "auto"]),
)
def test_interval_printed_outward_contains_the_exact_interval(m1, e1, w, e2, n, notation):
    lo = exact_mpf(m1, e1)
    c = Certified(lo, lo + exact_mpf(w, e2)) if w else Certified(lo, lo)
    L, U = frac(c.lower), frac(c.upper)
    lo_s, hi_s = format_interval(c, n, notation=notation)
    assert Fraction(lo_s) <= L and Fraction(hi_s) >= U
    # … and no wider than one unit in the n-th digit on each side
    for s, x in ((lo_s, L), (hi_s, U)):
        assert abs(Fraction(s) - x) <= abs(x) * Fraction(10) ** (1 - n)
    assert Fraction(outward(c.lower, -1, n)) <= L <= U <= Fraction(outward(c.upper, +1, n))
    # the error is rounded up from the exact half-width (not from the rounded .error)
    assert half_width(c) == (U - L) / 2
    assert Fraction(format_error_up(c)) >= (U - L) / 2
    assert Fraction(format_error_up(c.error, 5)) >= frac(c.error)
    # the midpoint is nearest, and labelled so by its callers
    mid = (L + U) / 2
    assert abs(Fraction(mid_decimal(c, n)) - mid) <= abs(mid) * Fraction(10) ** (1 - n) / 2


def test_known_strings_and_notation():
    assert format_interval((Fraction(1, 3), Fraction(2, 3)), 3) == ("3.33e-1", "6.67e-1")
    assert decimal_string(Fraction(-1, 3), 3, "up", notation="auto") == "-0.333"
    assert decimal_string(Fraction(-1, 3), 3, "down", notation="auto") == "-0.334"
    assert decimal_string(Fraction(263405, 10**4), 4, "up", notation="auto") == "26.35"
    assert decimal_string(Fraction(1, 10**7), 2, "up", notation="auto") == "1.0e-7"
    assert decimal_string("1e-10", 3, "down") == "1.00e-10"  # strings are read exactly
    assert exact_fraction("3/7") == Fraction(3, 7)
    with pytest.raises(ValueError, match="mode"):
        decimal_string(1, 3, "sideways")
    with pytest.raises(ValueError, match="finite"):
        decimal_string(mpmath.inf, 3, "up")


def test_report_bounds_are_directed():
    from optimizer.report import fmt_bound

    x = Fraction(2, 3)
    assert fmt_bound(x, 4, "up") == "0.6667" and fmt_bound(x, 4, "down") == "0.6666"
    assert Fraction(fmt_bound(Fraction(1, 3) * 10**-40, 3, "up")) >= Fraction(1, 3) * 10**-40
    assert fmt_bound(None) == "—"


# ---------------------------------------------------------------------- (b) census-plb account
def test_account_json_bounds_are_outward(capsys):
    assert main(["account", *TWO, "--eps", "1", "--delta", "1e-10", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    comp = accountant.Composition([accountant.DiscreteGaussian("10000/73"), accountant.DiscreteGaussian("10000/11")])
    d = comp.delta("1")
    r = comp.epsilon("1e-10")
    (row,) = out["delta"]
    assert Fraction(row["delta_upper"]) >= frac(d.upper)
    assert Fraction(row["delta_lower"]) <= frac(d.lower)
    assert Fraction(row["delta_error"]) >= (frac(d.upper) - frac(d.lower)) / 2
    assert row["tolerance_met"] is True and out["tolerance_met"] is True and out["warnings"] == []
    (erow,) = out["epsilon"]
    assert Fraction(erow["eps"]) >= frac(r.value)  # the safe ε, rounded up: still safe
    assert Fraction(erow["eps"]) - frac(r.value) <= frac(r.value) * Fraction(10) ** -19
    if r.lower is not None:
        assert Fraction(erow["eps_lower"]) <= frac(r.lower)
    assert Fraction(erow["delta_at_eps_upper"]) >= frac(r.delta_at_value.upper)
    assert Fraction(erow["delta_at_eps_upper"]) <= Fraction("1e-10")
    assert erow["tolerance_met"] is True
    # the zCDP conversion's ε is a claim above the exact one
    assert Fraction(erow["eps_zcdp_bun_steinke"]) > Fraction(erow["eps"])


def test_account_text_fits_100_columns_and_wide_labels_every_column(capsys):
    """Issue 34 item 7: the default tables fit 100 columns (the certified upper bound, its error, the
    claim); ``--wide`` shows every column."""
    assert main(["account", *TWO, "--eps", "1,2,3", "--delta", "1e-10"]) == 0
    text = capsys.readouterr().out
    assert max(len(line) for line in text.splitlines()) <= 100
    for label in ("delta upper (up)", "± error (up)", "eps (safe side, up)", "tol met"):
        assert label in text, label
    assert main(["account", *TWO, "--eps", "1", "--delta", "1e-10", "--wide"]) == 0
    text = capsys.readouterr().out
    for label in (
        "delta (midpoint)",
        "± error (up)",
        "delta lower (down)",
        "delta upper (up)",
        "eps (safe side, up)",
        "eps lower (down)",
        "tol met",
    ):
        assert label in text, label
    assert "warning" not in text


# ---------------------------------------------------------------------- (c) --count is bounded
def test_account_huge_count_fails_fast(capsys):
    t0 = time.perf_counter()
    code = main(["account", *TWO, "--count", str(10**9), "--eps", "1"])
    elapsed = time.perf_counter() - t0
    err = capsys.readouterr().err.strip()
    assert code == 2 and elapsed < 2
    assert err.count("\n") == 0 and "--count" in err and "1000000000" in err and "100000" in err


def test_account_count_uses_multiplicities(capsys):
    assert main(["account", "--rho", "73/10000", "--count", "50000", "--eps", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_mechanisms"] == 50000 and out["rho"] == "365/2"  # ρ = Σ 1/(2σ²)


@pytest.mark.parametrize("flag, value", [("--eps", "abc"), ("--delta", "xyz"), ("--delta", "2"), ("--eps", "-1")])
def test_account_bad_eps_delta_is_one_line(capsys, flag, value):
    args = ["account", *TWO, flag, value] + (["--eps", "1"] if flag == "--delta" else [])
    assert main(args) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and value in err


# ---------------------------------------------------------------------- (d) tolerance misses are shown
def _wide(value: str = "1e-20", width: str = "1e-22") -> Certified:
    v, w = Fraction(value), Fraction(width)
    with mpmath.workprec(256):
        c = Certified.from_bounds(
            mpmath.mpf(v.numerator) / v.denominator - mpmath.mpf(w.numerator) / w.denominator,
            mpmath.mpf(v.numerator) / v.denominator + mpmath.mpf(w.numerator) / w.denominator,
        )
    return _with_target(c, tol=1e-35, rtol=1e-20)


@pytest.fixture
def missed(monkeypatch):
    """Composition results that miss their tolerance: a wide δ interval, a wide ε bracket."""

    def delta_curve(self, eps_values, tol=1e-35, rtol=1e-20):
        return [_wide() for _ in eps_values]

    def epsilon(self, delta, tol=1e-12, delta_tol=1e-35):
        return SimpleNamespace(value=mpmath.mpf("0.6"), lower=mpmath.mpf("0.5"), delta_at_value=_wide("1e-11", "1e-13"))

    monkeypatch.setattr(accountant.Composition, "delta_curve", delta_curve)
    monkeypatch.setattr(accountant.Composition, "epsilon", epsilon)


def test_account_tolerance_miss_text(capsys, missed):
    assert main(["account", *TWO, "--eps", "1,2", "--delta", "1e-10"]) == 0
    lines = capsys.readouterr().out.splitlines()
    warn = [ln for ln in lines if ln.startswith("warning: tolerance not met")]
    assert len(warn) == 1
    assert "3 of 3 results" in warn[0] and "eps = 1" in warn[0] and "eps = 2" in warn[0] and "delta = 1e-10" in warn[0]
    assert re.search(r"error 1\.0\de-22", warn[0])  # the achieved error, rounded up
    assert sum(ln.rstrip().endswith("NO") for ln in lines) == 3


def test_account_tolerance_miss_json(capsys, missed):
    assert main(["account", *TWO, "--eps", "1", "--delta", "1e-10", "--json"]) == 0
    cap = capsys.readouterr()
    out = json.loads(cap.out)
    assert out["tolerance_met"] is False
    assert out["delta"][0]["tolerance_met"] is False and out["epsilon"][0]["tolerance_met"] is False
    assert '"tolerance_met": false' in cap.out
    assert len(out["warnings"]) == 1 and "warning: tolerance not met" in cap.err


def test_pairs_tolerance_miss(capsys, tmp_path, monkeypatch):
    def delta_curve(self, eps_values, tol=1e-35, rtol=1e-20):
        return [_wide() for _ in eps_values]

    monkeypatch.setattr(accountant.Composition, "delta_curve", delta_curve)
    base = [
        "pairs",
        "--allocation",
        "dhc-persons",
        "--eps",
        "20",
        "--pair",
        "13,13",
        "--pair",
        "1,1",
        "--workers",
        "1",
        "--no-progress",
        "--cache",
        str(tmp_path / "cache"),
    ]
    assert main([*base, "--json", "--out", str(tmp_path / "out")]) == 0
    cap = capsys.readouterr()
    s = json.loads(cap.out)
    assert s["tolerance_met"] is False and s["n_tolerance_misses"] == 2
    assert {tuple(m["pair"]) for m in s["tolerance_misses"]} == {(1, 1), (13, 13)}
    assert s["grid"][0]["tolerance_met"] is False and "warning: tolerance not met" in cap.err
    # outward and exact: the printed worst-case enclosure contains the exact interval
    w = _wide()
    assert Fraction(s["worst_delta_lower"]) <= frac(w.lower) and Fraction(s["worst_delta_upper"]) >= frac(w.upper)
    mid = Fraction(s["worst_delta"])
    assert Fraction(s["worst_delta_error"]) >= max(
        Fraction(s["worst_delta_upper"]) - mid, mid - Fraction(s["worst_delta_lower"])
    )
    csv_text = (tmp_path / "out" / "dhc-persons_pairs.csv").read_text()
    assert csv_text.splitlines()[0].endswith(",tolerance_met") and csv_text.count(",false") == 2
    # text output (from the cache): a warning line and the flag in the table
    assert main(base) == 0
    text = capsys.readouterr().out
    assert "NO (2)" in text and any(
        ln.startswith("warning: tolerance not met") and "[13, 13]" in ln for ln in text.splitlines()
    )


def test_pair_job_flags_and_exact_strings(monkeypatch):
    from optimizer.jobs.profile import pair_job

    w = _wide()
    monkeypatch.setattr(accountant.Composition, "delta_curve", lambda self, e, tol=1e-35, rtol=1e-20: [w for _ in e])
    out = pair_job({"pair": [1, 1], "rho_i": ["1/10"], "rho_j": ["1/10"], "eps": ["1", "2"]})
    assert out["delta_tolerance_met"] == [False, False] and out["tolerance_met"] is False
    assert Fraction(out["delta_lower"][0]) <= frac(w.lower) and Fraction(out["delta_upper"][0]) >= frac(w.upper)
    assert Fraction(out["delta_error"][0]) >= half_width(w)


# ---------------------------------------------------------------------- the report
def test_report_marks_tolerance_misses_and_prints_the_safe_side(tmp_path):
    import csv

    from optimizer.pipeline.accounting import compute_accounting
    from optimizer.report import TOLERANCE_MARK, build_report
    from optimizer.scenario import load_scenario

    from .test_report import ALLOC, SCENARIO

    (tmp_path / "alloc.toml").write_text(ALLOC)
    (tmp_path / "toy.toml").write_text(SCENARIO)
    sc = load_scenario(tmp_path / "toy.toml")
    acc = compute_accounting(sc, curves=False)
    out = tmp_path / "ok"
    build_report(sc, tmp_path / "no-run", out, accounting=acc)
    with open(out / "summary.csv", encoding="utf-8") as f:
        summary = {r["key"]: r["value"] for r in csv.DictReader(f)}
    assert summary["tolerance_met"] == "yes" and TOLERANCE_MARK not in (out / "report.html").read_text("utf-8")
    e = acc.eps_exact
    assert Fraction(summary["exact_epsilon_at_target_delta"]) >= frac(e.value)
    if e.lower is not None:
        assert Fraction(summary["exact_epsilon_lower"]) <= frac(e.lower)
    assert Fraction(summary["exact_delta_upper_at_claimed_epsilon"]) >= frac(acc.delta_exact.upper)
    assert Fraction(summary["exact_delta_lower_at_claimed_epsilon"]) <= frac(acc.delta_exact.lower)
    assert Fraction(summary["exact_delta_error"]) >= half_width(acc.delta_exact)
    # a result wider than requested is marked, in the text and the summary
    mid = acc.delta_exact.value
    acc.delta_exact = _with_target(
        Certified.from_bounds(mid * (1 - mpmath.mpf("1e-6")), mid * (1 + mpmath.mpf("1e-6"))), tol=1e-35, rtol=1e-20
    )
    bad = tmp_path / "bad"
    build_report(sc, tmp_path / "no-run", bad, accounting=acc)
    html = (bad / "report.html").read_text("utf-8")
    md = (bad / "report.md").read_text("utf-8")
    assert TOLERANCE_MARK in html and TOLERANCE_MARK in md
    with open(bad / "summary.csv", encoding="utf-8") as f:
        summary = {r["key"]: r["value"] for r in csv.DictReader(f)}
    assert summary["tolerance_met"] == "no" and "exact δ at the promised ε" in summary["tolerance_not_met"]
