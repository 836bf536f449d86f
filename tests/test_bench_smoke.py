"""Smoke test of bench/accountant.py on a tiny composition (no timing assertions)."""

import json

import pandas as pd

from accountant import Composition, DiscreteGaussian
from bench import accountant as bench
from bench import baseline as B


def _tiny():
    return Composition(
        [
            DiscreteGaussian.from_rho("73/10000"),
            DiscreteGaussian.from_rho("146/10000"),
            DiscreteGaussian.from_rho("2920/10000"),
        ]
    )


def test_bench_accountant_runs_on_tiny_composition(tmp_path):
    comp = _tiny()
    eps = bench.eps_zcdp_strings(comp.rho, ["1e-1", "1e-5", "1e-10"])
    res = bench.run(
        comp=comp,
        eps_list=eps,
        repeats=1,
        n_tradeoff=11,
        baseline_sample_nodes=1,
        theta_max_seconds=1.0,
        tiny_check=False,
        log=lambda *a: None,
    )
    paths = bench.write_outputs(res, tmp_path)
    df = pd.read_csv(paths["csv"])
    assert list(df.columns) == bench.MAIN_COLUMNS
    assert set(df.task) >= {"(eps,delta) curve", "trade-off curve", "single delta(eps)"}
    assert (df.census_plb_s > 0).all()
    curve = df[df.task == "(eps,delta) curve"].iloc[0]
    assert curve.n_points == 3 and curve.baseline_s > 0 and curve.speedup > 0 and curve.kept_nodes > 0
    bl = pd.read_csv(paths["baseline_csv"])
    assert (bl.baseline_dense_s > 0).all() and (bl.t_phi_per_node_s > 0).all()
    th = pd.read_csv(paths["theta_csv"])
    assert list(th.columns[: len(bench.THETA_COLUMNS)]) == bench.THETA_COLUMNS
    assert (th.seconds > 0).all() and len(th) == 3
    assert (th.max_rel_diff_vs_flint < 1e-30).all()  # all backends agree
    meta = json.loads(paths["json"].read_text())["meta"]
    assert meta["size"] == 3
    assert paths["md"].read_text().startswith("# Accountant benchmark")
    table = bench.format_table(res["rows"], bench._SHOW, bench._FMT)
    assert "census_plb_s" in table.splitlines()[0]


def test_baseline_matches_certified_on_tiny_composition():
    comp = Composition([DiscreteGaussian.from_rho("1/10"), DiscreteGaussian.from_rho("1/5")])
    eps = ["0.25", "1", "2.5"]
    vals, _pl, _sec = B.delta_curve(comp, eps, tol=1e-35, dps=50, round_to=1)
    cert = comp.delta_curve(eps)
    for v, c in zip(vals, cert):
        assert abs(v - c.value) <= c.error + 1e-33


def test_paper_plan_reproduces_main_pair_node_count():
    comp = bench.main_pair()
    pl = B.plan(B.groups_of(comp), 1e-35)
    assert (pl.U, pl.N) == (410_000, 850_000)  # method note §3.4 / §7
    pl = B.plan(B.groups_of(comp), 1e-25)
    assert (pl.U, pl.N) == (350_000, 730_000)


def test_bench_fuzz_domain_writes_table_and_summary(tmp_path):
    """bench/fuzz_domain.py on two tiny draws: CSV rows per call, a JSON summary per kind."""
    from bench import fuzz_domain as F

    out = tmp_path / "fuzz.csv"
    assert F.main(["--n", "2", "--seed", "3", "--eps-max", "3", "--limit", "20", "--quiet", "--out", str(out)]) == 0
    df = pd.read_csv(out)
    assert list(df.columns) == F.COLUMNS and len(df) == 4
    assert set(df.kind) == {"delta", "beta"} and (df.status == "ok").all() and (df.seconds >= 0).all()
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["all"]["calls"] == 4 and summary["all"]["errors"] == 0
    assert summary["all"]["max_s"] == df.seconds.max()


def test_bench_fuzz_domain_named_cases_are_in_the_fuzz_domain():
    """Every named regression case of ``--cases`` parses exactly and lies in the fuzz domain
    (1–6 components, σ² in [1/5, 500], shifts ±1..3, ε in [0, 50], α in [0, 1])."""
    from fractions import Fraction

    from bench import fuzz_domain as F

    assert len(F.CASES) >= 5
    for _name, comps, kind, arg in F.CASES:
        assert 1 <= len(comps) <= 6 and kind in ("delta", "beta")
        for s2, s in comps:
            assert Fraction(1, 5) <= Fraction(s2) <= 500 and s in (-3, -2, -1, 1, 2, 3)
        a = F._exact(arg)
        assert 0 <= a <= (50 if kind == "delta" else 1)
        Composition([DiscreteGaussian(Fraction(s2), shift=s) for s2, s in comps])  # builds


def test_bench_pl94_writes_both_configurations(tmp_path):
    """python -m bench.pl94 on two pairs: the proxy before (sandwich, tolerance missed), after and as a
    release's pair job integrates it (exact), the two pair rows of each sweep, and the summary's ratio."""
    import csv
    import json

    from bench import pl94

    out = tmp_path / "pl94.csv"
    assert pl94.main(["--workers", "1", "--limit-pairs", "2", "--out", str(out)]) == 0
    rows = list(csv.DictReader(out.read_text().splitlines()))
    proxy = {r["config"]: r for r in rows if r["what"] == "proxy"}
    assert proxy["before"]["engine"] == "coarse" and proxy["before"]["tolerance_met"] == "False"
    assert proxy["after"]["engine"] == "trapezoid" and proxy["after"]["tolerance_met"] == "True"
    assert float(proxy["before"]["delta_lower"]) <= float(proxy["after"]["delta_lower"])
    assert float(proxy["after"]["delta_upper"]) <= float(proxy["before"]["delta_upper"])
    assert proxy["release"]["tolerance_met"] == "True"  # the release's job: the default engines where exact
    assert sum(r["what"] == "pair" for r in rows) == 6
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["n_pairs"] == 2 and summary["sweep_ratio_after_to_before"] > 0
