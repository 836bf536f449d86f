"""optimizer.report on a small synthetic scenario and run directory (fast, no optimizer needed)."""

import csv
import json
import re

import pytest

from optimizer.census.allocation import Allocation
from optimizer.jobs.profile import ReleaseProfile, profile_inputs, write_profile
from optimizer.jobs.provenance import scenario_run_inputs, seal
from optimizer.pipeline.accounting import compute_accounting
from optimizer.report import build_report, read_run, write_comparison
from optimizer.scenario import load_scenario
from optimizer.workflow import compare_scenarios
from tests.toy_scenario import TOY_ALLOC as ALLOC
from tests.toy_scenario import TOY_SCENARIO

SCENARIO = TOY_SCENARIO + '[weights]\ngeolevel = { Block = "10" }\n'

SECTIONS = ("promised", "guaranteed", "noise", "where", "provenance")


@pytest.fixture(scope="module")
def toy(tmp_path_factory):
    d = tmp_path_factory.mktemp("toy")
    (d / "alloc.toml").write_text(ALLOC)
    (d / "toy.toml").write_text(SCENARIO)
    run = d / "run"
    run.mkdir()
    (run / "optimize.json").write_text(
        json.dumps(
            seal(
                {
                    "scenario": "toy",
                    "target_epsilon": "6.5",
                    "target_delta": "1e-10",
                    "conversion": "bun-steinke",
                    "uniform_variance_drop_percent": 30.5,
                    "optimized_variance_drop_percent": 41.25,
                    "zcdp_optimum_variance_drop_percent": 40.0,
                    "confirmed": True,
                    "worst_pair": [1, 2],
                    "worst_pair_delta": "9.9e-11",
                    "seconds": 12.5,
                    "seed": 7,
                    "versions": {"python": "3.x"},
                    "git_commit": "abc123",
                    "config_hash": "deadbeef",
                    "tolerances": {"tol": 1e-35},
                },
                scenario_run_inputs(load_scenario(d / "toy.toml")),
            )
        )
    )  # sealed like census-plb optimize does
    rows = [
        ("US", "total", "1/1000"),
        ("US", "age * sex", "1/500"),
        ("Block", "total", "3/1000"),
        ("Block", "age * sex", "1/250"),
    ]
    with open(run / "per_query.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(
            [
                "geolevel",
                "query",
                "baseline_rho",
                "baseline_sigma2",
                "uniform_sigma2",
                "zcdp_optimum_sigma2",
                "optimized_sigma2",
                "drop_percent_uniform",
                "drop_percent_optimized",
            ]
        )
        for g, q, r in rows:
            s2 = 1 / eval(r)
            w.writerow([g, q, r, s2, s2 * 0.695, s2 * 0.6, s2 * (0.5 if g == "Block" else 0.7), 30.5, 0])
    with open(run / "curves.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["epsilon", "epsilon_exact", "delta_zcdp_claim", "delta_baseline_exact", "delta_optimized_exact"])
        for k in range(10):
            w.writerow([3 + k * 0.5, str(3 + k * 0.5), 10 ** (-3 - k), 10 ** (-5 - k), 10 ** (-4 - k)])
    with open(run / "tradeoff.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["curve", "zeta", "alpha", "beta", "alpha_lower", "beta_lower"])
        for k in range(11):
            w.writerow(["baseline", k, k / 10, 1 - k / 10, k / 10, 1 - k / 10])
        for k in range(11):
            b = max(0.0, 0.95 - k / 10)
            w.writerow(["optimized", k, k / 10, b, k / 10, b])
    write_toy_pairs(run, Allocation.from_toml(ALLOC))
    # the pipeline's accounting of the baseline (what census-plb optimize stores beside the tables)
    (run / "accounting.json").write_text(json.dumps(compute_accounting(load_scenario(d / "toy.toml")).as_json()))
    return d


def write_toy_pairs(run, alloc, stem="profile"):
    """A per-pair results file as ``census-plb pairs --out`` writes it (sealed summary beside it)."""
    rows = [
        {
            "pair_i": i,
            "pair_j": j,
            "eps": e,
            "delta": f"{i * j}e-12",
            "delta_lower": f"{i * j}e-12",
            "delta_upper": f"{i * j}e-12",
            "tolerance_met": True,
        }
        for i in range(1, 4)
        for j in range(i, 4)
        for e in ("5", "6.5")
    ]
    summary = {"grid": [], "profile_inputs": profile_inputs(alloc, tol=1e-35, rtol=1e-20)}
    return write_profile(ReleaseProfile(summary=summary, results={}, rows=rows), run, stem=stem)


def test_read_run(toy):
    run = read_run(toy / "run")
    assert run.optimize["confirmed"] is True and len(run.per_query) == 4 and run.pairs_file == "profile_pairs.csv"
    assert read_run(toy / "missing").optimize is None


def test_a_run_table_of_another_schema_is_refused_by_name(toy, tmp_path):
    """The report reads a run's tables by their exact column names (optimizer.pipeline.result); a
    curves.csv in another layout (here the pre-RunResult one, ε as ``eps``) is refused with the
    table and the missing column named, not matched by substring."""
    import shutil

    run = tmp_path / "run"
    shutil.copytree(toy / "run", run)
    with open(run / "curves.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["eps", "optimized_exact_delta"])
        w.writerow([3, 1e-5])
    with pytest.raises(ValueError, match=r"curves.csv: no column 'epsilon'"):
        build_report(load_scenario(toy / "toy.toml"), run, tmp_path / "out")


@pytest.fixture(scope="module")
def report(toy):
    out = toy / "out"
    written = build_report(load_scenario(toy / "toy.toml"), toy / "run", out)
    return out, written


def test_files_exist(report):
    out, written = report
    for name in (
        "report.html",
        "report.md",
        "fig_eps_delta.png",
        "fig_tradeoff.png",
        "fig_geolevel_drop.png",
        "fig_query_drop.png",
        "fig_pairs_heatmap.png",
        "summary.csv",
        "per_query.csv",
        "per_geolevel.csv",
        "curves.csv",
        "tradeoff.csv",
    ):
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
        assert name in written
    assert (out / "fig_eps_delta.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_html_sections_and_embedded_images(report):
    out, _ = report
    html = (out / "report.html").read_text(encoding="utf-8")
    for sid in SECTIONS:
        assert f'<section id="{sid}">' in html
    for phrase in (
        "What was promised",
        "What is really guaranteed",
        "How much noise can go",
        "Where",
        "Method &amp; provenance",
    ):
        assert phrase in html
    imgs = re.findall(r'<img [^>]*src="([^"]+)"', html)
    assert len(imgs) == 5 and all(s.startswith("data:image/png;base64,") for s in imgs)
    assert 'src="fig_' not in html and "http" not in html.split("<body>")[1]  # self-contained
    # optimizer values and provenance come through
    assert "41.2500 %" in html and "Confirmed" in html and "abc123" in html and "deadbeef" in html


def test_markdown_and_tables(report):
    out, _ = report
    md = (out / "report.md").read_text(encoding="utf-8")
    assert md.startswith("# ") and "![" in md and "(fig_eps_delta.png)" in md
    with open(out / "per_geolevel.csv") as f:
        pg = list(csv.DictReader(f))
    assert [r["geolevel"] for r in pg] == ["US", "Block"]
    assert pg[1]["weight"] == "10" and float(pg[1]["drop_percent_optimized"]) == pytest.approx(50, abs=1e-6)
    with open(out / "summary.csv") as f:
        summary = {r["key"]: r["value"] for r in csv.DictReader(f)}
    assert summary["mode"] == "optimized" and summary["confirmed"] == "yes"
    assert float(summary["exact_delta_at_claimed_epsilon"]) < 1e-10  # exact beats the zCDP claim
    assert 0 < float(summary["uniform_variance_drop_percent_proxy"]) < 100


def test_deterministic_rerun(toy, report):
    out, _ = report
    out2 = toy / "out2"
    build_report(load_scenario(toy / "toy.toml"), toy / "run", out2)
    names = sorted(p.name for p in out.iterdir())
    assert names == sorted(p.name for p in out2.iterdir())
    for name in names:
        assert (out / name).read_bytes() == (out2 / name).read_bytes(), name


def test_accounting_only(toy):
    out = toy / "acc"
    sc = load_scenario(toy / "toy.toml")
    build_report(sc, toy / "nothing-here", out, accounting=compute_accounting(sc))
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "accounting-only" in html and not (out / "fig_pairs_heatmap.png").exists()
    assert html.count("data:image/png;base64,") == 4


def test_comparison_table(toy, tmp_path, monkeypatch):
    monkeypatch.chdir(toy)
    rows = compare_scenarios([str(toy / "toy.toml")], runs_root=toy / "runs")
    assert len(rows) == 1 and rows[0]["scenario"] == "toy"
    csv_path, md_path = write_comparison(rows, tmp_path)
    assert csv_path.read_text().startswith("scenario,") and "| toy |" in md_path.read_text()


def test_timings_do_not_change_the_report(toy, report, tmp_path):
    """Issue 13 item 5: a deliberate regeneration (same inputs, same code, a second optimizer run
    that only took a different time) gives byte-identical report files."""
    import shutil

    out, _ = report
    run2 = tmp_path / "run2"
    shutil.copytree(toy / "run", run2)
    doc = json.loads((run2 / "optimize.json").read_text())
    doc.update(seconds=99.25, confirm_seconds=7.5, trials_per_minute=3.0)
    (run2 / "optimize.json").write_text(
        json.dumps(
            seal(
                {k: v for k, v in doc.items() if k not in ("checksum", "run_hash", "run_inputs", "result_format")},
                scenario_run_inputs(load_scenario(toy / "toy.toml")),
            )
        )
    )
    out2 = tmp_path / "out2"
    build_report(load_scenario(toy / "toy.toml"), run2, out2)
    for name in sorted(p.name for p in out.iterdir()):
        assert (out / name).read_bytes() == (out2 / name).read_bytes(), name
    assert "99.25" not in (out2 / "report.md").read_text(encoding="utf-8")


def test_report_uniform_rescale_is_the_optimizers(toy):
    """Issue 14: one algorithm for the uniform rescale — the report's accounting-only value is the
    optimizer's stage 1 (no second, grid-based search that gives a different number)."""
    from optimizer import search as S
    from optimizer.pipeline.accounting import compute_accounting

    sc = load_scenario(toy / "toy.toml")
    acc = compute_accounting(sc, curves=False)
    alloc = sc.load_allocation()
    target = S.target_from_allocation(alloc, delta=sc.target_delta_text, conversion=sc.conversion)
    c, _, d = S.uniform_rescale(alloc, target)
    assert acc.uniform_multiplier == 1 / c
    assert acc.uniform_delta.upper <= target.delta_fraction  # the rescaled noise keeps the promise
    assert acc.uniform_delta.upper == d.upper


def _copy_run(toy, tmp_path):
    import shutil

    run = tmp_path / "run"
    shutil.copytree(toy / "run", run)
    return run


def test_edited_pairs_file_is_not_shown(toy, tmp_path):
    """A per-pair CSV edited after it was written is ignored, and the report says why."""
    run = _copy_run(toy, tmp_path)
    p = run / "profile_pairs.csv"
    p.write_text(p.read_text().replace("1e-12", "9e-99", 1))
    out = tmp_path / "out"
    build_report(load_scenario(toy / "toy.toml"), run, out)
    md = (out / "report.md").read_text()
    assert not (out / "fig_pairs_heatmap.png").exists()
    assert "not used: profile_pairs.csv: profile_pairs.csv was changed after profile.json was written" in md


def test_pairs_file_without_summary_or_for_other_allocation_is_not_shown(toy, tmp_path):
    run = _copy_run(toy, tmp_path)
    (run / "profile.json").unlink()
    assert read_run(run).pairs is None
    assert "profile.json (its summary" in read_run(run).pairs_ignored[0]
    other = Allocation.from_toml(ALLOC.replace('"3/1000"', '"3/1100"'))
    for f in run.glob("profile*"):
        f.unlink()
    write_toy_pairs(run, other, stem="other")
    out = tmp_path / "out"
    build_report(load_scenario(toy / "toy.toml"), run, out)
    md = (out / "report.md").read_text()
    assert "computed for allocation" in md and "its content hash differs" in md
    assert not (out / "fig_pairs_heatmap.png").exists()


def test_pairs_file_labelled_with_its_allocation(report):
    out, _ = report
    assert (
        "for the baseline allocation, from profile_pairs.csv, at ε = 5.0, relative to the baseline's zCDP claim δ(ε"
        in (out / "report.md").read_text()
    )


def test_pairs_file_from_other_code_is_not_used(toy, tmp_path):
    run = _copy_run(toy, tmp_path)
    doc = json.loads((run / "profile.json").read_text())
    doc["run_inputs"]["code_version"] = "0" * 64
    (run / "profile.json").write_text(json.dumps(seal(doc, doc["run_inputs"])))
    got = read_run(run)
    assert got.pairs is None and "computed by other code" in got.pairs_ignored[0]


def test_heat_map_and_side_effects_from_the_runs_own_tables(toy, tmp_path):
    """Without a per-pair file the heat map comes from the run's all-pairs confirmation
    (confirm_pairs.csv); the δ-grid table (delta_grid.csv) becomes section 4 and says plainly
    where an allocation is weaker than the old zCDP curve."""
    run = _copy_run(toy, tmp_path)
    for f in run.glob("profile*"):
        f.unlink()
    with open(run / "confirm_pairs.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["pair_i", "pair_j", "eps", "delta_lower", "delta_upper", "tolerance_met", "allocation"])
        for i in range(1, 4):
            for j in range(i, 4):
                w.writerow([i, j, "6.5", f"{i * j}e-12", f"{i * j}e-12", True, "optimized"])
    with open(run / "delta_grid.csv", "w", newline="") as fh:
        w = csv.writer(fh)
        cols = ["delta_promised", "epsilon", "baseline_delta_upper"]
        cols += [f"uniform_{k}" for k in ("delta_lower", "delta_upper", "ratio", "weaker", "tolerance_met")]
        w.writerow(cols)
        w.writerow(["1e-9", "6.0", "1e-11", "5e-10", "5e-10", 0.5, False, True])
        w.writerow(["1e-11", "7.0", "1e-13", "3e-11", "3e-11", 3.0, True, True])
    out = tmp_path / "out"
    build_report(load_scenario(toy / "toy.toml"), run, out)
    md = (out / "report.md").read_text()
    assert (out / "fig_pairs_heatmap.png").is_file()
    assert "for the optimized allocation, from the optimizer's all-pairs confirmation" in md
    assert "## 4. Side effects at other δ" in md
    assert "The uniform rescale is weaker than the old zCDP promise at δ = 1e-11:" in md
    assert "⚠ above" in md and md.count("⚠ above") == 1


def test_production_and_what_if_allocations_are_named_as_such(toy, tmp_path):
    """Policy honesty: only a built-in (Census production) allocation is called the Bureau's; a
    user's file is a what-if."""
    from optimizer.pipeline.accounting import compute_accounting

    text = SCENARIO.replace('allocation = "alloc.toml"', 'allocation = "dhc-persons"')
    assert 'allocation = "dhc-persons"' in text
    (tmp_path / "prod.toml").write_text(text)
    sc = load_scenario(tmp_path / "prod.toml")
    build_report(sc, tmp_path / "none", tmp_path / "prod", accounting=compute_accounting(sc, curves=False))
    md = (tmp_path / "prod" / "report.md").read_text("utf-8")
    assert "The Census Bureau describes the privacy of its 2020 production allocation dhc-persons" in md
    assert "what-if" not in md
    toy_sc = load_scenario(toy / "toy.toml")
    toy_acc = compute_accounting(toy_sc, curves=False)
    toy_md = build_report(toy_sc, toy / "none", tmp_path / "toy", accounting=toy_acc)["report.md"].read_text()
    assert "The what-if allocation alloc.toml" in toy_md and "Census Bureau describes" not in toy_md


def test_comparison_takes_a_published_report_only_for_the_same_inputs(toy, tmp_path, monkeypatch):
    """Without a local run, the comparison's optimizer columns come from the committed report of
    the same scenario file and allocation (sha256 in its provenance table), said so in the row;
    after an edit of the scenario file they are left out (—), never shown for other inputs."""
    import shutil

    work = tmp_path / "w"
    shutil.copytree(toy, work, ignore=shutil.ignore_patterns("reports", "runs"))
    monkeypatch.chdir(work)
    build_report(load_scenario(work / "toy.toml"), work / "run", work / "reports" / "toy")
    (row,) = compare_scenarios([str(work / "toy.toml")], runs_root=work / "no-runs")
    assert row["optimized_source"] == "published report (reports/toy/)" and row["confirmed"] == "yes"
    assert row["optimized_variance_drop_percent"] not in ("", None)
    _, md = write_comparison([row], tmp_path / "out")
    assert "published report (reports/toy/)" in md.read_text(encoding="utf-8")
    (work / "toy.toml").write_text(SCENARIO.replace("trials = 2", "trials = 3"))
    (row,) = compare_scenarios([str(work / "toy.toml")], runs_root=work / "no-runs")
    assert row["optimized_source"] in ("", None) and row["confirmed"] in ("", None)


def test_comparison_reads_the_published_inputs_from_provenance_json(toy, tmp_path, monkeypatch):
    """Issue 33 item 3: a report records its inputs in provenance.json (scenario and allocation sha256,
    the report code's hash); scenario compare matches on that file only, never on report.md's text."""
    import json
    import shutil

    work = tmp_path / "w"
    shutil.copytree(toy, work, ignore=shutil.ignore_patterns("reports", "runs"))
    monkeypatch.chdir(work)
    sc = load_scenario(work / "toy.toml")
    written = build_report(sc, work / "run", work / "reports" / "toy")
    record = json.loads(written["provenance.json"].read_text(encoding="utf-8"))
    assert record["scenario"] == "toy" and record["scenario_file_sha256"] == sc.sha256
    assert len(record["allocation_sha256"]) == 64 and len(record["report_code_hash"]) == 64
    (row,) = compare_scenarios([str(work / "toy.toml")], runs_root=work / "no-runs")
    assert row["optimized_source"] == "published report (reports/toy/)"
    # the record decides: another allocation hash in it, and the published row is left out
    record["allocation_sha256"] = "0" * 64
    (work / "reports" / "toy" / "provenance.json").write_text(json.dumps(record))
    (row,) = compare_scenarios([str(work / "toy.toml")], runs_root=work / "no-runs")
    assert row["optimized_source"] in ("", None)
    # without the file, the report is not matched (its report.md is never parsed for inputs or numbers)
    (work / "reports" / "toy" / "provenance.json").unlink()
    (row,) = compare_scenarios([str(work / "toy.toml")], runs_root=work / "no-runs")
    assert row["optimized_source"] in ("", None)


def test_the_page_title_is_the_reports_not_a_tables(report):
    """The page's <title> and <h1> name the report (a loop over the extra tables once reused the
    name and the page came out titled "Per query" or "Spine paths …")."""
    out, _ = report
    html = (out / "report.html").read_text(encoding="utf-8")
    assert re.search(r"<h1>(.*?)</h1>", html).group(1) == "Privacy-loss budget report: toy"
    assert re.search(r"<title>(.*?)</title>", html).group(1) == "Privacy-loss budget report: toy"
