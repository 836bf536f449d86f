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
