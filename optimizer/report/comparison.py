"""The scenario comparison table (``scenario_comparison.{csv,md}``): one row per scenario."""

from __future__ import annotations

import csv as _csv
import json
from pathlib import Path

from optimizer.atomic import atomic_write_text, check_writable
from optimizer.formatting import TOLERANCE_MARK, fmt, fmt_bound, pct
from optimizer.jobs.provenance import check_run_dir, stale_message
from optimizer.pipeline.accounting import Accounting, Progress, _quiet
from optimizer.report.build import PUBLISHED_ROOT, _write_csv, default_comparison_dir
from optimizer.report.document import _summary
from optimizer.report.inputs import RunInputs, _sha256, read_run
from optimizer.report.provenance_block import _allocation_file

COMPARISON_COLUMNS = (
    "scenario",
    "allocation",
    "conversion",
    "total_rho",
    "total_rho_decimal",
    "target_delta",
    "claimed_epsilon",
    "exact_epsilon_at_target_delta",
    "exact_delta_at_claimed_epsilon",
    "exact_delta_error",
    "uniform_variance_drop_percent_proxy",
    "decision_target",
    "decision_uniform_cut_percent",
    "decision_reallocation_cut_percent",
    "decision_new_total_rho",
    "optimized_variance_drop_percent",
    "confirmed",
    "exact_delta_upper_at_claimed_epsilon",
    "tolerance_met",
    "objective",
    "mean_relative_variance",
    "uniform_mean_relative_variance",
    "n_queries_noisier",
    "optimized_source",
)
#: the optimizer's results a comparison row takes from a published report when no local run is
#: fresh (only when the report was made for the same inputs, :func:`_published_row`).
PUBLISHED_FIELDS = (
    "decision_target",
    "decision_uniform_cut_percent",
    "decision_reallocation_cut_percent",
    "decision_new_total_rho",
    "optimized_variance_drop_percent",
    "confirmed",
    "objective",
    "mean_relative_variance",
    "uniform_mean_relative_variance",
    "n_queries_noisier",
)


def fresh_run(sc, runs_root: str | Path = "runs", progress: Progress = _quiet) -> RunInputs:
    """The run of ``sc`` under ``runs_root`` when it was made for these inputs by this code; else an
    empty :class:`RunInputs` (a stale run is left out like a missing one, and ``progress`` says why)."""
    run = read_run(Path(runs_root) / sc.name)
    if run.optimize is not None and run.directory is not None:  # (read_run always sets directory)
        problems = check_run_dir(run.directory, run.optimize, sc)
        if problems:  # not for these inputs: left out, like a missing run
            progress(f"ignoring it: {stale_message(run.directory, sc, problems)}")
            return RunInputs(run.directory)
    return run


def comparison_row(sc, acc: Accounting, run: RunInputs) -> dict:
    """One scenario's row: total ρ, claimed ε, δ target, exact ε at δ and δ at ε (proxy pair, from
    ``acc``), uniform variance drop, and the optimizer's results from ``run`` (else from the
    published report made for the same inputs, :func:`_published_row`)."""
    s = _summary(acc, run)
    row = {k: s.get(k, "") for k in COMPARISON_COLUMNS}
    if run.optimize is not None:
        row["optimized_source"] = "local run"
    else:
        published = _published_row(sc, s)
        if published:
            row.update(published)
            row["optimized_source"] = f"published report ({PUBLISHED_ROOT.as_posix()}/{sc.name}/)"
    return row


def _published_row(sc, s: dict) -> dict[str, str]:
    """The optimizer's results from the committed report ``reports/<scenario>/`` when that report
    was made for the same inputs — its ``provenance.json`` records the sha256 of this scenario file
    and of this allocation file — and was confirmed; else {}.  Its numbers were computed by the
    code that published it (its code hash is in the same record)."""
    folder = PUBLISHED_ROOT / sc.name
    summary = folder / "summary.csv"
    if not summary.is_file():
        return {}
    recorded = _published_inputs(folder)
    af = _allocation_file(sc)
    if recorded is None or recorded.get("scenario_file_sha256") != sc.sha256:
        return {}
    if af is None or recorded.get("allocation_sha256") != _sha256(af):
        return {}
    with summary.open(encoding="utf-8", newline="") as f:
        pub = {r["key"]: r["value"] for r in _csv.DictReader(f)}
    if pub.get("confirmed") != "yes":
        return {}
    return {k: pub.get(k, "") for k in PUBLISHED_FIELDS}


def _published_inputs(folder: Path) -> dict | None:
    """The inputs a published report records in its ``provenance.json`` (``None``: no such file, or
    not a JSON object — such a report is not matched; its text is never parsed for numbers)."""
    record = folder / "provenance.json"
    if not record.is_file():
        return None
    try:
        doc = json.loads(record.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def _mrv_pair(opt, uni) -> str:
    """'0.7157 (0.8855)': the optimized and the uniform rescale's mean relative variance."""
    if opt in (None, "") or uni in (None, ""):
        return "—"
    return f"{float(opt):.4f} ({float(uni):.4f})"


def write_comparison(rows: list[dict], out_dir: str | Path | None = None) -> tuple[Path, Path]:
    """Write ``scenario_comparison.csv`` and ``.md`` into ``out_dir`` (default
    :func:`default_comparison_dir`, ``runs/``), atomically, never through a symlink."""
    out = Path(out_dir) if out_dir is not None else default_comparison_dir()
    out.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out / "scenario_comparison.csv", out / "scenario_comparison.md"
    check_writable(csv_path)
    check_writable(md_path)
    _write_csv(csv_path, rows, COMPARISON_COLUMNS)
    head = [
        "scenario",
        "total ρ",
        "conversion",
        "δ target",
        "claimed ε (zCDP)",
        "exact ε at δ (safe side)",
        "exact δ at claimed ε (certified upper bound)",
        "target",
        "uniform cut (confirmed)",
        "reallocation cut (confirmed)",
        "objective",
        "mean σ'²/σ², optimized (uniform rescale)",
        "queries noisier",
        "confirmed",
        "optimizer results from",
    ]
    lines = [
        "# Scenario comparison: zCDP claim vs exact accounting",
        "",
        "Exact values are certified, for the proxy pair (full spine with itself). Each scenario keeps its own "
        "target (the point, the zCDP curve or every geolevel's own promise): the uniform cut keeps every "
        "query's share and cuts all noise variances by the same factor, the reallocation makes no query "
        "noisier; both as established for that target (confirmed on every pair, or exactly per geolevel), "
        "the share of the weighted sum of noise variances. The optimizer's "
        "columns are the scenario's own objective with its Pareto guard (no query noisier than in the "
        "scenario's allocation when the guard is on): the mean over queries of the relative variance "
        "σ'²/σ² it reaches, next to the uniform rescale's, and how many queries get more noise; taken "
        "from runs/<scenario>/optimize.json when that run is for these inputs and this code (not for the "
        "committed comparison, `scenario compare --publish`), else from the committed report of the same "
        "inputs (computed by the code that published it), else —.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        lines.append(
            "| "
            + " | ".join(
                [
                    r["scenario"],
                    r["total_rho_decimal"],
                    r["conversion"],
                    r["target_delta"],
                    fmt(r["claimed_epsilon"], 8),
                    fmt_bound(r["exact_epsilon_at_target_delta"], 8, "up"),
                    f"≤ {fmt_bound(r.get('exact_delta_upper_at_claimed_epsilon'), 6, 'up')}"
                    + (f" ({TOLERANCE_MARK})" if r.get("tolerance_met") == "no" else ""),
                    r.get("decision_target") or "—",
                    pct(r.get("decision_uniform_cut_percent") or None, 4),
                    pct(r.get("decision_reallocation_cut_percent") or None, 4),
                    r.get("objective") or "—",
                    _mrv_pair(r.get("mean_relative_variance"), r.get("uniform_mean_relative_variance")),
                    str(r.get("n_queries_noisier") if r.get("n_queries_noisier") not in (None, "") else "—"),
                    r["confirmed"] or "—",
                    r.get("optimized_source") or "—",
                ]
            )
            + " |"
        )
    atomic_write_text(md_path, "\n".join(lines) + "\n")
    return csv_path, md_path
