"""One scenario from its optimizer run to its report: reuse a sealed run made for these inputs by this
code, or compute it, then render the report (what ``census-plb report`` and ``census-plb scenario run``
do; the commands only parse their options into a :class:`ReportRequest` and print).

A run directory's ``optimize.json`` is reused only when :func:`optimizer.jobs.provenance.check_run_dir`
finds it was made for this scenario's inputs by this code (and, with ``require_confirmed``, confirmed
on every pair with at least the trials asked); otherwise the request is refused with one line naming
the run, or — with ``force`` — recomputed.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from optimizer.jobs.exactness import screen_pairs
from optimizer.jobs.provenance import StaleRunError, check_run_dir, stale_message
from optimizer.jobs.runner import check_scheduler_address
from optimizer.pipeline.accounting import Accounting, Progress, _quiet, compute_accounting
from optimizer.pipeline.stages import optimize, spec_for
from optimizer.report import build_report, check_report_outputs, default_report_dir
from optimizer.report.comparison import comparison_row, fresh_run
from optimizer.report.inputs import RunInputs
from optimizer.scenario import list_scenarios, load_scenario

__all__ = ["ReportRequest", "compare_scenarios", "output_dir", "report_scenario", "run_optimizer"]


@dataclass(frozen=True)
class ReportRequest:
    """What to report.

    Attributes:
        scenario: a scenario name (``scenarios/<name>.toml``) or the path of a scenario file.
        run_dir: the optimizer's output folder (default ``runs/<scenario>``).
        out: the report folder (default ``runs/<scenario>/report``; ``publish``: ``reports/<scenario>``).
        publish: write the committed ``reports/<scenario>/`` (regenerate on purpose).
        skip_optimize: never run the optimizer (the report is then accounting-only without a run).
        force: recompute the run even when a valid one exists.
        trials: run the Optuna search with this many trials when the optimizer runs (``None``: as
            the scenario says: off for a convex objective, its ``trials`` with ``search = "optuna"``).
        require_confirmed: reuse only a run confirmed on every pair (with at least ``trials``
            trials when they are asked for).
        scheduler: a Dask scheduler address for the all-pairs confirmations.
        quiet: no progress lines from the optimizer.
    """

    scenario: str
    run_dir: str | None = None
    out: str | None = None
    publish: bool = False
    skip_optimize: bool = False
    force: bool = False
    trials: int | None = None
    require_confirmed: bool = False
    scheduler: str | None = None
    quiet: bool = False


def output_dir(req: ReportRequest, scenario_name: str) -> Path:
    """The report folder: ``out``, else ``reports/<scenario>`` with ``publish``, else the git-ignored
    ``runs/<scenario>/report`` (a plain run never rewrites committed files)."""
    if req.out and req.publish:
        raise ValueError(
            f"--out {req.out} and --publish contradict each other (--publish writes "
            f"{default_report_dir(scenario_name, publish=True)}); give one of them"
        )
    return Path(req.out) if req.out else default_report_dir(scenario_name, publish=req.publish)


def report_scenario(req: ReportRequest, say: Callable[[str], None]) -> Path:
    """Reuse or compute the scenario's run (see the module docstring), then write its report; returns
    the path of ``report.html``.  Every refusal happens before any long work."""
    scheduler = check_scheduler_address(req.scheduler)
    if req.force and req.skip_optimize:
        raise ValueError("--force and --skip-optimize contradict each other; give one of them")
    sc = load_scenario(req.scenario)
    run_dir = Path(req.run_dir) if req.run_dir else Path("runs") / sc.name
    out = output_dir(req, sc.name)
    check_report_outputs(out)
    say(f"scenario {sc.name}: {sc.description}")
    name = sc.name if sc.name in list_scenarios() else str(sc.source)
    stored = (run_dir / "optimize.json").is_file()
    if stored and not req.force:
        _check_reusable(run_dir, sc, req, say)
    if req.force or not stored:
        if req.skip_optimize:
            say(f"no {run_dir}/optimize.json and --skip-optimize: accounting-only report")
        else:
            run_optimizer(name, run_dir, say, req.trials, scheduler, quiet=req.quiet)
    # an accounting-only report (no run) has its accounting computed here, by the library
    acc = None if (run_dir / "accounting.json").is_file() else compute_accounting(sc, progress=say)
    written = build_report(sc, run_dir, out, accounting=acc, progress=say)
    say(f"done: {out / 'report.html'} ({len(written)} files)")
    return out / "report.html"


def run_optimizer(
    scenario_name: str,
    run_dir: Path,
    say,
    trials: int | None = None,
    scheduler: str | None = None,
    quiet: bool = False,
) -> bool:
    """Run the optimizer pipeline for the scenario and write its result into ``run_dir``
    (``trials``: run the Optuna search with that many trials); True when a result was written."""
    spec = spec_for(scenario=scenario_name, trials=trials)
    search = f"Optuna search of {spec.trials} trials" if spec.search else "no Optuna search"
    say(f"running the optimizer for {spec.name} ({search}) into {run_dir}")
    log = (lambda m: None) if quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    # issue 35 item 2: the non-exact pairs, before any long work
    for line in screen_pairs(spec.allocation).lines(f"the baseline {spec.allocation.name}"):
        log(line)
    result = optimize(spec, run_dir, scheduler=scheduler, log=log, progress=not quiet)
    result.write(run_dir)
    if not result.summary["confirmed"]:
        say("optimizer: confirmation over all pairs FAILED (the report says so)")
    return True


def _check_reusable(run_dir: Path, sc, req: ReportRequest, say) -> None:
    """Refuse (one-line error) a run directory whose optimize.json is not for this scenario's inputs
    and code, or — with ``require_confirmed`` (``scenario run``) — that was not confirmed on every
    pair or ran fewer trials than asked."""
    path = run_dir / "optimize.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StaleRunError(f"{path}: unreadable ({exc}); recompute with --force") from None
    problems = check_run_dir(run_dir, doc, sc)
    if not problems and req.require_confirmed:
        if doc.get("confirm_skipped"):
            problems.append("the run was not confirmed on all pairs (optimize --no-confirm)")
        want = req.trials if req.trials is not None else (sc.trials if sc.search == "optuna" else 0)
        if int(doc.get("trials_total") or 0) < want:
            problems.append(f"the run has {doc.get('trials_total')} Optuna trials, {want} expected")
    if problems:
        raise StaleRunError(stale_message(run_dir, sc, problems))
    say(f"reusing {path} (run hash {str(doc.get('run_hash'))[:12]}, inputs and code unchanged)")


def compare_scenarios(
    names: Iterable[str] | None = None,
    runs_root: str | Path = "runs",
    *,
    progress: Progress = _quiet,
    published_only: bool = False,
) -> list[dict]:
    """One row per scenario (:func:`optimizer.report.comparison.comparison_row`): total ρ, claimed ε,
    δ target, exact ε at δ and δ at ε (proxy pair), uniform variance drop, and the optimized drop
    when ``<runs_root>/<scenario>/`` holds a run made for these inputs by this code.  The accounting
    is the one that run stored; for a scenario without one it is computed here (no curves).
    ``published_only`` (the committed comparison, ``scenario compare --publish``): the optimizer's
    columns come only from the committed reports made for the same inputs, never from a local run."""
    rows = []
    for name in list(names) if names is not None else list_scenarios():
        sc = load_scenario(name)
        run = RunInputs(None) if published_only else fresh_run(sc, runs_root, progress)
        if run.accounting is not None:
            acc = Accounting.from_json(run.accounting, sc)
        else:
            acc = compute_accounting(sc, curves=False, progress=progress)
        rows.append(comparison_row(sc, acc, run))
    return rows
