"""Writing one report: every output file atomically, never through a symbolic link."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Sequence
from pathlib import Path

from optimizer.atomic import atomic_write_bytes, atomic_write_text, check_writable
from optimizer.formatting import fmt
from optimizer.jobs.provenance import StaleRunError, check_run_dir, stale_message
from optimizer.pipeline.accounting import Accounting, Progress
from optimizer.report.document import _sections, _summary
from optimizer.report.figures import make_figures
from optimizer.report.inputs import RunInputs, _optimized_allocation, read_run, vet_pairs
from optimizer.report.provenance_block import inputs_record
from optimizer.report.render import render_html, render_markdown
from optimizer.report.tables import curves_table, per_geolevel_table, per_query_table
from optimizer.scenario import Scenario, load_scenario

#: where runs write by default (git-ignored) and where the committed reports live (only on purpose)
RUNS_ROOT, PUBLISHED_ROOT = Path("runs"), Path("reports")


def default_report_dir(scenario_name: str, publish: bool = False) -> Path:
    """Report folder of a scenario: ``runs/<name>/report`` (git-ignored) unless ``publish``, then the
    committed ``reports/<name>`` (relative to the working directory)."""
    return PUBLISHED_ROOT / scenario_name if publish else RUNS_ROOT / scenario_name / "report"


#: every file :func:`build_report` may write (checked for symlinks before any work)
_REPORT_FILES = (
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
)


def check_report_outputs(out_dir: str | Path) -> None:
    """Refuse (one line naming the path) a report folder where an output file is a symlink."""
    for name in _REPORT_FILES:
        check_writable(Path(out_dir) / name)


def default_comparison_dir(publish: bool = False) -> Path:
    """Folder of ``scenario_comparison.{csv,md}``: ``runs/`` unless ``publish`` (then ``reports/``)."""
    return PUBLISHED_ROOT if publish else RUNS_ROOT


def _quiet(_msg: str) -> None:
    pass


def _write_csv(path: Path, rows: list[dict], columns: Sequence[str] | None = None) -> None:
    buf = io.StringIO()
    cols = list(columns or (rows[0].keys() if rows else []))
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: (v if isinstance(v, str) else fmt(v, 12)) for k, v in r.items()})
    atomic_write_text(path, buf.getvalue())


def _stored_accounting(run: RunInputs, run_dir: Path, sc: Scenario) -> Accounting:
    """The accounting the run stored, for ``sc`` (one-line error when there is none)."""
    if run.accounting is None:
        raise ValueError(
            f"{run_dir}: no accounting.json (no run, or one made before the accounting was stored); "
            "census-plb report computes it (or pass accounting=compute_accounting(scenario))"
        )
    return Accounting.from_json(run.accounting, sc)


def build_report(
    scenario,
    run_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    *,
    accounting: Accounting | None = None,
    progress: Progress = _quiet,
) -> dict[str, Path]:
    """Write the report of ``scenario`` (a name, path or :class:`optimizer.scenario.Scenario`).

    Args:
        scenario: the scenario.
        run_dir: optimizer output directory (default ``runs/<scenario>``); may be missing, then the
            report is accounting-only.
        out_dir: the folder to write (default :func:`default_report_dir`, ``runs/<scenario>/report``).
        accounting: the accounting to present (:func:`optimizer.pipeline.accounting.compute_accounting`);
            default: the one the run stored (``accounting.json``).  The report computes none: a
            report without a run (or of a run without it) needs it given.
        progress: callback for one-line progress messages.

    Returns:
        ``{file name: path}`` of everything written.
    """
    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    run_dir = Path(run_dir) if run_dir is not None else Path("runs") / sc.name
    out = Path(out_dir) if out_dir is not None else default_report_dir(sc.name)
    check_report_outputs(out)  # a pre-placed symlink is refused before computing or writing anything
    run = read_run(run_dir)
    if run.optimize is not None:
        problems = check_run_dir(run_dir, run.optimize, sc)
        if problems:  # never show results made for other inputs, by other code, or edited
            raise StaleRunError(stale_message(run_dir, sc, problems))
    acc = accounting if accounting is not None else _stored_accounting(run, run_dir, sc)
    vet_pairs(run, {"the baseline allocation": acc.allocation, "the optimized allocation": _optimized_allocation(run)})
    progress(
        f"[{sc.name}] writing report to {out}/"
        + (" (with optimizer output)" if run.optimize is not None else " (accounting-only)")
    )
    pq = per_query_table(acc, run)
    pg = per_geolevel_table(acc, pq)
    figs = make_figures(acc, run, pq, pg)
    s = _summary(acc, run)
    secs = _sections(acc, run, s, pq, pg)
    title = f"Privacy-loss budget report: {sc.name}"
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for name, data in sorted(figs.items()):
        atomic_write_bytes(out / name, data)
        written[name] = out / name
    stale = out / "fig_pairs_heatmap.png"
    if "fig_pairs_heatmap.png" not in figs and stale.exists():
        stale.unlink()
    atomic_write_text(out / "report.html", render_html(title, secs, figs))
    atomic_write_text(out / "report.md", render_markdown(title, secs, figs))
    written["report.html"], written["report.md"] = out / "report.html", out / "report.md"
    atomic_write_text(out / "provenance.json", json.dumps(inputs_record(acc), indent=2) + "\n")
    written["provenance.json"] = out / "provenance.json"
    rows = [{"key": k, "value": str(v)} for k, v in s.items() if not isinstance(v, dict)]  # tables are sections
    _write_csv(out / "summary.csv", rows, ["key", "value"])
    _write_csv(out / "per_query.csv", pq)
    _write_csv(out / "per_geolevel.csv", pg)
    _write_csv(out / "curves.csv", curves_table(acc, run))
    _write_csv(out / "tradeoff.csv", [{k: fmt(v, 12) for k, v in t.items()} for t in acc.tradeoff])
    for name in ("summary.csv", "per_query.csv", "per_geolevel.csv", "curves.csv", "tradeoff.csv"):
        written[name] = out / name
    return written
