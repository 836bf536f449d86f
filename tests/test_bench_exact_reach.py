"""Smoke test of bench/exact_reach.py (issue 35 groundwork): one pair, every variant."""

import json

from bench import exact_reach


def test_exact_reach_survey_on_the_proxy_pair(tmp_path):
    rows = exact_reach.survey(pairs=((6, 6),), seed=2, log=lambda *a: None)
    names = {r["variant"] for r in rows}
    assert "baseline (Bureau)" in names and len(rows) == len(names) >= 10
    by = {r["variant"]: r for r in rows}
    # the Bureau's allocation is certified by an exact engine to the default tolerances
    assert by["baseline (Bureau)"]["tolerance_met"] and by["baseline (Bureau)"]["engine"] != "coarse"
    for r in rows:  # the coarse sandwich is flagged, never reported as meeting the tolerance
        assert r["engine"] in {"trapezoid", "split", "pmf", "coarse", "nested", "bound"}, r
        if r["engine"] == "coarse":
            assert not r["tolerance_met"], r
        assert float(r["delta_upper"]) > 0
    out = tmp_path / "reach.csv"
    assert exact_reach.main(["--pairs", "13-13", "--out", str(out)]) == 0
    summary = json.loads(out.with_suffix(".json").read_text())
    assert summary["variants"]["baseline (Bureau)"] == {"pairs": 1, "exact": 1}
