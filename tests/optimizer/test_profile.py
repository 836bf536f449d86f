"""Whole-release profile: pair jobs, aggregation over pairs, resumable cache."""

import csv
import json
from fractions import Fraction

import mpmath
import pytest

import accountant
from optimizer.census.allocation import load_builtin
from optimizer.census.pairs import dhc_persons_paths
from optimizer.jobs import profile as P

EPS_1E10 = "26.340588852722324353781974500154992685"  # ε_BS(δ_z = 1e-10), ρ = 24811/5000
PUBLISHED_13_13 = "1.7831993350417540543e-12"
# fast pairs (full/long paths); pairs with short paths (e.g. 6) take tens of seconds
FAST = [(1, 1), (1, 13), (13, 13)]


@pytest.fixture(autouse=True)
def _precision():
    with mpmath.workdps(50):
        yield


@pytest.fixture(scope="module")
def paths():
    return dhc_persons_paths(load_builtin("dhc-persons"))


def test_default_grid_is_the_papers():
    grid = P.default_eps_grid()
    assert len(grid) == 42 == len(P.DEFAULT_DELTA_ZCDP)
    i = P.DEFAULT_DELTA_ZCDP.index("1e-10")
    assert grid[i].startswith(EPS_1E10[:36])
    with open(P._EXACT_CSV, encoding="utf-8") as fh:
        published = [row["epsilon_zcdp"] for row in csv.DictReader(fh)]
    for e, pub in zip(grid, published):
        assert abs(mpmath.mpf(e) - mpmath.mpf(pub)) < mpmath.mpf("1e-17")


def test_pair_job_main_pair_matches_published(paths):
    (spec,) = P.pair_specs(paths, [EPS_1E10], only=[(13, 13)])
    assert spec.pair == (13, 13) and len(spec.rho_i) == len(spec.rho_j) == 80
    out = P.pair_job(spec)
    json.dumps(out)  # JSON-ready
    assert out["pair"] == [13, 13] and out["n_mechanisms"] == 160 and out["rho"] == "24811/5000"
    d = mpmath.mpf(out["delta"][0])
    assert abs(d / mpmath.mpf(PUBLISHED_13_13) - 1) < 1e-14
    lo, hi = mpmath.mpf(out["delta_lower"][0]), mpmath.mpf(out["delta_upper"][0])
    assert lo <= d <= hi and hi - lo < mpmath.mpf("1e-34")
    assert mpmath.mpf(out["delta_error"][0]) <= mpmath.mpf("1e-35")
    assert out["nodes"] > 0 and out["seconds"] >= 0
    assert len(out["delta"][0].replace(".", "").split("e")[0]) >= 25


def test_pair_job_dict_spec_and_tradeoff(paths):
    (spec,) = P.pair_specs(paths, ["1", "5"], only=[(1, 13)], tradeoff_n=11)
    as_dict = {k: getattr(spec, k) for k in spec.__dataclass_fields__}
    out = P.pair_job(as_dict)
    assert out["pair"] == [1, 13] and len(out["delta"]) == 2
    assert mpmath.mpf(out["delta"][0]) > mpmath.mpf(out["delta"][1]) > 0
    t = out["tradeoff"]
    assert len(t["alpha"]) == len(t["beta"]) == len(t["zeta"]) == 11
    for a, al, b, bl in zip(t["alpha"], t["alpha_lower"], t["beta"], t["beta_lower"]):
        assert mpmath.mpf(al) <= mpmath.mpf(a) and mpmath.mpf(bl) <= mpmath.mpf(b)
    # direct cross-check with the accountant
    comp = accountant.Composition([accountant.DiscreteGaussian.from_rho(Fraction(r)) for r in spec.rho_i + spec.rho_j])
    ref = comp.delta_curve(["1", "5"])
    for s, c in zip(out["delta"], ref):
        assert abs(mpmath.mpf(s) - c.value) <= c.error + abs(c.value) * mpmath.mpf("1e-24")


def test_release_profile_aggregates_and_resumes(tmp_path, monkeypatch):
    cache = tmp_path / "cache"
    prof = P.release_profile(
        "dhc-persons", eps=[EPS_1E10, "20"], only_pairs=FAST, workers=1, cache_dir=cache, progress=False
    )
    s = prof.summary
    assert s["n_pairs"] == 3 and s["n_pairs_all"] == 946 and not s["complete"]
    assert s["note"].startswith("published DHC-persons")
    assert len(s["grid"]) == 2 and s["eps"] == EPS_1E10
    # the worst case is the max over the pairs, with an enclosure and a named arg-max
    for pos, g in enumerate(s["grid"]):
        vals = {k: mpmath.mpf(r["delta"][pos]) for k, r in prof.results.items()}
        best = max(vals, key=vals.get)
        assert tuple(g["worst_pair"]) == best or not g["certain"]
        assert mpmath.mpf(g["worst_delta_lower"]) <= vals[best] <= mpmath.mpf(g["worst_delta_upper"])
        assert g["main_pair_delta"] == prof.results[(13, 13)]["delta"][pos]
        # exact δ is far below the zCDP claim
        assert mpmath.mpf(g["worst_delta"]) < mpmath.mpf(g["zcdp_claim_delta"])
        assert mpmath.mpf(g["zcdp_claim_delta_cks"]) < mpmath.mpf(g["zcdp_claim_delta"])
    assert abs(mpmath.mpf(s["zcdp_claim_delta"]) / mpmath.mpf("1e-10") - 1) < 1e-30
    assert len(list(cache.glob("*.json"))) == 3
    # outputs
    files = P.write_profile(prof, tmp_path / "out", stem="t")
    with open(files["pairs_csv"], encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert list(rows[0]) == list(P.CSV_COLUMNS) and len(rows) == 6
    assert json.loads(files["json"].read_text())["n_pairs"] == 3
    assert not list((tmp_path / "out").glob(".*.tmp"))

    # resume: a second run computes nothing but the worst pairs' candidates, recomputed without the
    # cache (issue 32, item 5); with recheck_worst=False the accountant is never called
    again = P.release_profile(
        "dhc-persons", eps=[EPS_1E10, "20"], only_pairs=FAST, workers=1, cache_dir=cache, progress=False
    )
    assert again.summary["grid"] == s["grid"] and again.summary["worst_pairs_fresh"]
    assert again.summary["worst_pairs_recomputed"] and not again.summary["cache_disagreements"]

    def boom(*a, **k):
        raise AssertionError("recomputed a cached pair")

    monkeypatch.setattr(accountant.Composition, "delta_curve", boom)
    again = P.release_profile(
        "dhc-persons",
        eps=[EPS_1E10, "20"],
        only_pairs=FAST,
        workers=1,
        cache_dir=cache,
        progress=False,
        recheck_worst=False,
    )
    assert again.summary["grid"] == s["grid"] and again.summary["worst_pairs_recomputed"] == []


def test_release_profile_tradeoff_envelope(tmp_path):
    prof = P.release_profile(
        "dhc-persons",
        eps=["5"],
        only_pairs=[(1, 1), (13, 13)],
        tradeoff=True,
        tradeoff_n=21,
        workers=1,
        cache_dir=tmp_path,
        progress=False,
    )
    env = prof.summary["tradeoff_envelope"]
    a = [mpmath.mpf(x) for x in env["alpha"]]
    b = [mpmath.mpf(x) for x in env["beta"]]
    assert a == sorted(a) and b == sorted(b, reverse=True) and env["n_points"] == len(a) >= 3
    # the envelope lies on or below every pair's (safe) vertices
    for r in prof.results.values():
        for al, bl in zip(r["tradeoff"]["alpha_lower"], r["tradeoff"]["beta_lower"]):
            x, y = mpmath.mpf(al), mpmath.mpf(bl)
            for (x0, y0), (x1, y1) in zip(zip(a, b), zip(a[1:], b[1:])):
                if x0 <= x <= x1:
                    assert y0 + (y1 - y0) * (x - x0) / (x1 - x0) <= y + mpmath.mpf("1e-20")


def test_release_patterns_notes():
    pats, note = P.release_patterns("dhc-persons")
    assert len(pats) == 43 and "published" in note
    pats, note = P.release_patterns("dhc-units")
    assert len(pats) == 43 and "DHC-persons patterns used" in note
    pats, note = P.release_patterns("pl94-persons")
    assert len(pats) == 32 and "superset" in note
    with pytest.raises(ValueError, match="unknown pairs"):
        P.pair_specs(dhc_persons_paths(load_builtin("dhc-persons")), ["1"], only=[(1, 99)])


def test_full_dhc_persons_worst_pair(tmp_path):
    """All 946 pairs at ε_BS(1e-10): worst pair [6, 6] (arXiv 2606.29835 table); ~20 s on 2 cores,
    computed afresh every run (the cache lives in the test's temporary directory)."""
    cache = tmp_path / "cache"
    prof = P.release_profile("dhc-persons", eps=[EPS_1E10], workers=2, cache_dir=cache, progress=False)
    s = prof.summary
    assert s["n_pairs"] == 946 and s["complete"]
    assert s["worst_pair"] == [6, 6]
    with open(P._EXACT_CSV, encoding="utf-8") as fh:
        row = next(r for r in csv.DictReader(fh) if r["delta_zcdp"] == "1e-10")
    assert abs(mpmath.mpf(s["worst_delta"]) / mpmath.mpf(row["delta_exact_max_over_946_pairs"]) - 1) < 1e-12
    assert abs(mpmath.mpf(s["main_pair_delta"]) / mpmath.mpf(s["worst_delta"]) - 1) < 1e-4


def test_a_pair_the_defaults_leave_on_the_sandwich_is_certified_exactly_by_the_release_job():
    """PL94 persons [M30, M30]: two weight families of standard deviation ~5000 on a lattice of scale ~1e11 —
    the default engines give the coarse sandwich (interval ~3e-5 wide, tolerance missed); the pair job of a
    release then takes EXHAUSTIVE_CONFIG's wide split (pmf tables of both families), whose δ meets 1e-35 /
    1e-20 and lies inside the sandwich's certified interval."""
    from accountant.engine import EXHAUSTIVE_CONFIG
    from optimizer.search.proxy import mpf_to_fraction

    alloc = load_builtin("pl94-persons")
    path = {p.index: p for p in P.paths_from_allocation(alloc, P.patterns_for(alloc.geolevels))}[30]
    eps = mpmath.nstr(accountant.zcdp.get_conversion("bun-steinke").epsilon(alloc.total_rho, mpmath.mpf("1e-10")), 40)
    mechs = [accountant.DiscreteGaussian.from_rho(r) for r in path.rho] * 2
    default = accountant.Composition(mechs)
    assert default.engine_kind == "coarse"
    coarse = default.delta(eps)
    assert not coarse.tolerance_met
    assert accountant.Composition(mechs, EXHAUSTIVE_CONFIG).engine_kind == "split"
    rho = [f"{r.numerator}/{r.denominator}" for r in path.rho]
    out = P.pair_job({"pair": [30, 30], "rho_i": rho, "rho_j": rho, "eps": [eps]})
    assert out["tolerance_met"] and out["delta_tolerance_met"] == [True]
    lo, hi = Fraction(out["delta_lower"][0]), Fraction(out["delta_upper"][0])
    assert hi - lo <= Fraction(1, 10**20) * hi
    assert mpf_to_fraction(coarse.lower) <= lo <= hi <= mpf_to_fraction(coarse.upper)
