"""Issue 33 must-show 2: the moves do not change the outputs.  A run of pl94-units stored by the code
before the moves (tests/golden/make_golden.py) renders, with today's code, to the same report.md and
summary.csv (lines naming the code or the machine aside)."""

import shutil
from pathlib import Path

import pytest

from tests.golden.make_golden import HERE, build


@pytest.mark.parametrize("name", ["report.md", "summary.csv"])
def test_the_stored_run_renders_as_before(tmp_path, name):
    run = tmp_path / "run"
    shutil.copytree(HERE / "run", run)
    got = build(run, tmp_path / "out")
    expected = (HERE / "expected" / name).read_text(encoding="utf-8")
    assert got[name] == expected


def test_the_normalization_keeps_the_numbers():
    """The comparison is not vacuous: the expected report keeps its sections and certified numbers."""
    text = (HERE / "expected" / "report.md").read_text(encoding="utf-8")
    assert text.count("\n## ") >= 6 and "528" in text
    assert len(text.splitlines()) > 150
    assert Path(HERE / "run" / "optimize.json").is_file()


def test_a_run_does_not_report_its_own_confirmation_table_as_an_ignored_file(tmp_path):
    """Issue 34: every report said 'A per-pair results file was found but not used: confirm_pairs.csv'
    — the run's own confirmation table (read through RunResult), not a `pairs --out` profile."""
    run = tmp_path / "run"
    shutil.copytree(HERE / "run", run)
    got = build(run, tmp_path / "out")
    assert "confirm_pairs.csv" in {p.name for p in run.iterdir()}
    assert "found but not used: confirm_pairs.csv" not in got["report.md"]


def test_an_unconfirmed_run_is_not_called_confirmed(tmp_path):
    """Issue 34: the side-effects paragraph of a run without the all-pairs confirmation said 'the
    allocation was calibrated and confirmed there'."""
    import json

    run = tmp_path / "run"
    shutil.copytree(HERE / "run", run)
    doc = json.loads((run / "optimize.json").read_text(encoding="utf-8"))
    doc.update(confirmed=False, confirm_skipped=True)
    (run / "optimize.json").write_text(json.dumps(doc), encoding="utf-8")
    (run / "confirm_pairs.csv").unlink()
    md = build(run, tmp_path / "out")["report.md"]
    assert "calibrated and confirmed there" not in md
    assert "calibrated there on the proxy pair, not confirmed on all pairs" in md


def test_in_short_says_whose_delta_it_quotes_and_the_caption_does_not_overclaim(tmp_path):
    """Issue 34: 'In short' quoted the proxy pair's δ as the release's ('the real δ is at most …'; other
    pairs are higher), and the ε–δ caption said the zCDP claim 'lies far above the exact curve' while
    the curves cross at large ε."""
    run = tmp_path / "run"
    shutil.copytree(HERE / "run", run)
    md = build(run, tmp_path / "out")["report.md"]
    assert "the real δ is at most" not in md
    assert "for the proxy pair (two records that pass through every geolevel) the exact δ is at most" in md
    assert "lies far above the exact curve" not in md
