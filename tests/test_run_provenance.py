"""Issue 13 (items 1, 3): a report never shows a run made for other inputs, by other code, or a
hand-written / edited optimize.json; a skipped confirmation reads "not checked"; `scenario run`
does not reuse an unchecked run.  Small synthetic allocation (3 pairs), real optimizer runs."""

import csv
import json
import shutil

import pytest

from optimizer.cli.main import main
from optimizer.jobs.provenance import StaleRunError, check_run, scenario_run_inputs, seal
from optimizer.report import build_report
from optimizer.scenario import load_scenario
from tests.toy_scenario import TOY_ALLOC as ALLOC

SCENARIO = """name = "{name}"
description = "synthetic test scenario"
allocation = "alloc.toml"
conversion = "{conversion}"
target_delta = "{delta}"
trials = 2
seed = 7
[weights]
geolevel = {{ Block = "10" }}
"""


def _scenario(d, name="toy", conversion="bun-steinke", delta="1e-10"):
    p = d / f"{name}.toml"
    p.write_text(SCENARIO.format(name=name, conversion=conversion, delta=delta))
    return p


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """A confirmed 1-trial run and a --no-confirm run of the toy scenario."""
    d = tmp_path_factory.mktemp("prov")
    (d / "alloc.toml").write_text(ALLOC)
    scen = _scenario(d)
    base = ["optimize", "--scenario", str(scen), "--trials", "1", "--workers", "1"]
    assert main([*base, "--out", str(d / "run")]) == 0
    assert main([*base, "--no-confirm", "--out", str(d / "run-nc")]) == 0
    return d


@pytest.fixture
def work(runs, tmp_path):
    """A private copy of the scenario, allocation and both runs."""
    for name in ("alloc.toml", "toy.toml"):
        shutil.copy(runs / name, tmp_path / name)
    for name in ("run", "run-nc"):
        shutil.copytree(runs / name, tmp_path / name, ignore=shutil.ignore_patterns("cache*", "optuna.journal*"))
    return tmp_path


def _report(scen, run_dir, out, *extra):
    return main(["report", "--scenario", str(scen), "--run-dir", str(run_dir), "--out", str(out), "--quiet", *extra])


def test_sealed_run_is_accepted_and_reports_confirmed(work, capsys):
    assert _report(work / "toy.toml", work / "run", work / "out") == 0
    html = (work / "out" / "report.html").read_text(encoding="utf-8")
    doc = json.loads((work / "run" / "optimize.json").read_text())
    assert doc["confirmed"] is True and check_run(doc, scenario_run_inputs(load_scenario(work / "toy.toml"))) == []
    assert "Confirmed: the optimized noise keeps the promise" in html


def test_report_refuses_run_made_for_another_target_delta(work, capsys):
    scen = _scenario(work, delta="1e-13")  # same name, new promise
    capsys.readouterr()
    assert _report(scen, work / "run", work / "out") == 2
    err = capsys.readouterr().err
    assert "target.delta: run has 1e-10, now 1e-13" in err and "--force" in err
    assert len(err.strip().splitlines()) == 1
    assert not (work / "out" / "report.html").exists()
    with pytest.raises(StaleRunError, match=r"target\.delta"):  # the library refuses too
        build_report(load_scenario(scen), work / "run", work / "out2")


@pytest.mark.slow  # a second confirmed toy run, ~50 s; the refusals of stale runs stay in make test
def test_force_recomputes_for_the_new_inputs(work, capsys):
    scen = _scenario(work, delta="1e-13")
    assert _report(scen, work / "run", work / "out", "--force", "--trials", "1") == 0
    doc = json.loads((work / "run" / "optimize.json").read_text())
    assert doc["target_delta"] == "1e-13" and doc["confirmed"] is True
    assert float(doc["worst_pair_delta"]) <= 1e-13
    assert check_run(doc, scenario_run_inputs(load_scenario(scen))) == []


def test_report_refuses_after_allocation_edit(work, capsys):
    (work / "alloc.toml").write_text(ALLOC.replace('total = "3/1000"', 'total = "7/2000"'))
    capsys.readouterr()
    assert _report(work / "toy.toml", work / "run", work / "out") == 2
    assert "allocation.sha256: run has" in capsys.readouterr().err


def test_report_refuses_mismatched_run_dir(work, capsys):
    other = _scenario(work, name="toy-cks", conversion="cks")
    capsys.readouterr()
    assert _report(other, work / "run", work / "out") == 2
    err = capsys.readouterr().err
    assert "scenario.name: run has toy, now toy-cks" in err and "target.conversion" in err


def test_hand_written_optimize_json_is_refused(work, capsys):
    (work / "run" / "optimize.json").write_text(json.dumps({"confirmed": True}))
    capsys.readouterr()
    assert _report(work / "toy.toml", work / "run", work / "out") == 2
    assert "no valid run hash" in capsys.readouterr().err


def test_edited_optimize_json_is_refused(work, capsys):
    path = work / "run" / "optimize.json"
    doc = json.loads(path.read_text())
    doc["worst_pair_delta"] = "1e-99"
    path.write_text(json.dumps(doc))
    capsys.readouterr()
    assert _report(work / "toy.toml", work / "run", work / "out") == 2
    assert "checksum mismatch" in capsys.readouterr().err


def test_changed_output_file_is_refused(work, capsys):
    p = work / "run" / "per_query.csv"
    p.write_text(p.read_text() + "US,extra,1/3\n")
    capsys.readouterr()
    assert _report(work / "toy.toml", work / "run", work / "out") == 2
    assert "per_query.csv was changed after optimize.json was written" in capsys.readouterr().err


def test_run_by_other_code_is_refused(work, capsys, monkeypatch):
    import optimizer.jobs.provenance as P

    monkeypatch.setattr(P, "code_version", lambda *f: "0" * 64)  # the sources changed since the run
    capsys.readouterr()
    assert _report(work / "toy.toml", work / "run", work / "out") == 2
    assert "code_version: run has" in capsys.readouterr().err


def test_seal_hash_covers_inputs():
    sc_inputs = {"target": {"delta": "1e-10"}}
    doc = seal({"confirmed": True}, sc_inputs)
    assert check_run(doc, sc_inputs) == []
    assert check_run(doc, {"target": {"delta": "1e-13"}}) == ["target.delta: run has 1e-10, now 1e-13"]
    forged = dict(doc, run_inputs={"target": {"delta": "1e-13"}})
    assert check_run(forged) != []  # swapping the inputs breaks checksum / hash


# ---------------------------------------------------------------------- item 3: skipped ≠ failed
def test_no_confirm_reads_not_checked(work, capsys):
    assert _report(work / "toy.toml", work / "run-nc", work / "out") == 0
    html = (work / "out" / "report.html").read_text(encoding="utf-8")
    assert "Not checked" in html and "NOT confirmed" not in html and "failed" not in html
    with open(work / "out" / "summary.csv") as f:
        summary = {r["key"]: r["value"] for r in csv.DictReader(f)}
    assert summary["confirmed"] == "not checked" and summary["uniform_confirmed"] == "not checked"


def test_scenario_run_does_not_reuse_an_unchecked_run(work, capsys, monkeypatch):
    monkeypatch.chdir(work)
    (work / "runs").mkdir()
    shutil.copytree(work / "run-nc", work / "runs" / "toy")
    capsys.readouterr()
    assert main(["scenario", "run", "toy.toml", "--trials", "1", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "not confirmed on all pairs" in err and "--force" in err
    assert not (work / "runs" / "toy" / "report" / "report.html").exists()  # default report folder (issue 13.5)


def test_scenario_run_reuses_only_a_run_with_enough_trials(work, capsys, monkeypatch):
    monkeypatch.chdir(work)
    (work / "runs").mkdir()
    shutil.copytree(work / "run", work / "runs" / "toy")  # confirmed, with 1 trial
    capsys.readouterr()
    assert main(["scenario", "run", "toy.toml", "--trials", "2", "--quiet"]) == 2
    assert "the run has 1 Optuna trials, 2 expected" in capsys.readouterr().err
    assert main(["scenario", "run", "toy.toml", "--trials", "1", "--quiet"]) == 0  # what was asked for: reused
    # the scenario's own setting: its objective is convex, so it asks for no search; the run is reused
    assert main(["scenario", "run", "toy.toml", "--quiet"]) == 0
    assert "Confirmed" in (work / "runs" / "toy" / "report" / "report.html").read_text(encoding="utf-8")


def test_comparison_leaves_out_a_run_for_other_inputs(work, monkeypatch):
    from optimizer.workflow import compare_scenarios

    (work / "runs").mkdir()
    shutil.copytree(work / "run", work / "runs" / "toy")
    monkeypatch.chdir(work)
    (row,) = compare_scenarios([str(work / "toy.toml")], runs_root=work / "runs")
    assert row["confirmed"] == "yes" and row["optimized_variance_drop_percent"]
    _scenario(work, delta="1e-13")  # the run is now for another promise
    messages = []
    (row,) = compare_scenarios([str(work / "toy.toml")], runs_root=work / "runs", progress=messages.append)
    assert row["confirmed"] == "" and row["optimized_variance_drop_percent"] == ""
    assert any("target.delta: run has 1e-10, now 1e-13" in m for m in messages)


def test_every_computing_module_is_in_the_code_version():
    """A new optimizer module that computes numbers must change the code version (else a run of
    older code would be served as current); only presentation and plumbing modules are left out."""
    from pathlib import Path

    import optimizer
    from optimizer.jobs.provenance import PRESENTATION, compute_modules

    root = Path(optimizer.__file__).parent
    here = {p.relative_to(root).as_posix() for p in root.rglob("*.py")}
    mods = set(compute_modules())
    assert mods <= here
    # every left-out file is named (or inside a named folder) in PRESENTATION
    for m in here - mods:
        assert m in PRESENTATION or any(q.endswith("/") and m.startswith(q) for q in PRESENTATION), m
    # every PRESENTATION entry still names something (a stale entry would hide a renamed module)
    for q in PRESENTATION:
        assert (root / q).exists(), q
    # the modules that compute a run's numbers are in it
    for m in ("census/allocation.py", "census/pairs.py", "search/calibrate.py"):
        assert m in mods
    assert not any(m.startswith("report/") for m in mods)


def test_a_missing_source_file_is_an_error_not_a_constant(tmp_path):
    """A code hash over a file that no longer exists (a module moved, a stale path) must fail
    loudly: hashing it as a constant would keep serving runs of changed code."""
    import pytest

    from optimizer.jobs.provenance import sources_hash

    real = tmp_path / "a.py"
    real.write_text("x = 1\n")
    assert len(sources_hash([real])) == 64
    with pytest.raises(FileNotFoundError, match=r"gone\.py"):
        sources_hash([real, tmp_path / "gone.py"])


def test_report_code_hash_covers_the_accounting_it_presents():
    """The report's code hash names the accounting module where it lives now."""
    from pathlib import Path

    from optimizer.pipeline import accounting
    from optimizer.report.provenance_block import _code_hash

    assert Path(accounting.__file__).is_file()
    assert len(_code_hash()) == 64
