"""Regenerate the golden run and its report (issue 33: the moves must not change the outputs).

    .venv/bin/python tests/golden/make_golden.py                 # a new run and its report
    .venv/bin/python tests/golden/make_golden.py --render-only   # the stored run's report only

Runs the optimizer on the scenario ``pl94-units`` (2 Optuna trials, confirmed on all 528 pairs) and
stores its :class:`optimizer.pipeline.result.RunResult` under ``tests/golden/pl94-units/run/``, then
writes the report built from it to ``tests/golden/pl94-units/expected/`` (``report.md`` and
``summary.csv``, with the lines that name the code or the machine removed: see
:func:`normalized`).  ``tests/test_golden_report.py`` rebuilds the report from the stored run with
today's code and compares.  The run's ``accounting.json`` was added when the accounting moved
into the run (issue 33 item 3): :func:`optimizer.pipeline.accounting.account` of its baseline, what
the pipeline now stores; the rendered report did not change.  Regenerate only on purpose (an
intended change of the outputs), and say so in the CHANGELOG.
"""

from __future__ import annotations

import re
import shutil
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent / "pl94-units"
SCENARIO = "pl94-units"
#: lines of a report or summary that name the code, the machine or the run's timing, not the result
VOLATILE = re.compile(r"git_commit|_hash\b|code hash|\bversions\b|seconds|trials_per_minute|sha256", re.IGNORECASE)


def normalized(text: str) -> str:
    """``text`` without the lines :data:`VOLATILE` matches."""
    return "".join(line for line in text.splitlines(keepends=True) if not VOLATILE.search(line))


def build(run_dir: Path, out_dir: Path) -> dict[str, str]:
    """The report of the stored run (provenance checks off: the run was made by older code on
    purpose), normalized: ``{file name: text}``."""
    import optimizer.report.build as B

    saved = B.check_run_dir  # the report's own binding of optimizer.jobs.provenance.check_run_dir
    B.check_run_dir = lambda *a, **k: []
    try:
        B.build_report(SCENARIO, run_dir, out_dir)
    finally:
        B.check_run_dir = saved
    return {name: normalized((out_dir / name).read_text(encoding="utf-8")) for name in ("report.md", "summary.csv")}


def main(argv: list[str] | None = None) -> int:
    from optimizer.pipeline import optimize, spec_for

    run = HERE / "run"
    if "--render-only" not in (sys.argv[1:] if argv is None else argv):
        with tempfile.TemporaryDirectory() as work:
            res = optimize(spec_for(scenario=SCENARIO, trials=2), work, confirm=True, workers=2, log=print)
        if run.exists():
            shutil.rmtree(run)
        res.write(run)
    with tempfile.TemporaryDirectory() as out:
        texts = build(run, Path(out))
    expected = HERE / "expected"
    expected.mkdir(parents=True, exist_ok=True)
    for name, text in texts.items():
        (expected / name).write_text(text, encoding="utf-8")
    print(f"wrote {run} and {expected}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    raise SystemExit(main())
