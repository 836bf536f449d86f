"""Write the human-readable report of a scenario (HTML, Markdown, PNG figures, CSV tables).

If the run directory has no optimize.json, the optimizer is run first (unless --skip-optimize);
when the optimizer is unavailable or skipped, the report is accounting-only: the zCDP claim vs
the exact certified curve of the proxy pair, and the uniform noise rescale, computed directly.

A run writes into its own, git-ignored folder runs/<scenario>/report/; the committed
reports/<scenario>/ changes only when regenerated on purpose with --publish (deterministic:
the same inputs give byte-identical files).  Every file is written atomically and never through
a symbolic link.

examples:
  census-plb report --scenario dhc-persons                # -> runs/dhc-persons/report/report.html
  census-plb report --scenario dhc-persons --publish      # regenerate the committed reports/dhc-persons/
  census-plb report --scenario pl94-units --skip-optimize --out /tmp/pl94-units
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

HELP = "write runs/<scenario>/report/ (report.html, report.md, figures, tables; --publish: reports/<scenario>/)"


def configure(p) -> None:
    p.add_argument(
        "--scenario",
        default="dhc-persons",
        help="scenario name (scenarios/<name>.toml) or path of a scenario file (default dhc-persons)",
    )
    p.add_argument("--run-dir", default=None, help="optimizer output directory (default runs/<scenario>)")
    p.add_argument("--out", default=None, help="report directory (default runs/<scenario>/report)")
    p.add_argument(
        "--publish",
        action="store_true",
        help="write the committed reports/<scenario>/ instead (regenerate it on purpose)",
    )
    p.add_argument(
        "--skip-optimize",
        action="store_true",
        help="never run the optimizer; use what the run directory has (else accounting-only)",
    )
    p.add_argument(
        "--trials",
        type=int,
        default=3,
        help="Optuna trials when the optimizer has to run (default 3, so `make demo` takes minutes; "
        "the calibrated zCDP-optimum shape is already within ~1e-5 of the search's best); "
        "0 = the scenario's own trial count",
    )
    p.add_argument(
        "--force",
        action="store_true",
        help="recompute the optimizer run even if the run directory has a valid one (overwrites it)",
    )
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="Dask scheduler (tcp://HOST:PORT) for the optimizer's all-pairs confirmation",
    )
    p.add_argument("--quiet", action="store_true", help="no progress output")


def _progress(quiet: bool):
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        if not quiet:
            print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", file=sys.stderr, flush=True)

    return say


def run_optimizer(
    scenario_name: str, run_dir: Path, say, trials: int = 0, scheduler: str | None = None, quiet: bool = False
) -> bool:
    """Run the optimizer pipeline for the scenario and write its result into ``run_dir``
    (``trials`` > 0 overrides the scenario's trial count); True when a result was written."""
    from optimizer.pipeline import optimize, spec_for

    spec = spec_for(scenario=scenario_name, trials=trials or None)
    say(f"running the optimizer for {spec.name} ({spec.trials} trials) into {run_dir}")
    log = (lambda m: None) if quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    from optimizer.exactness import screen_pairs  # issue 35 item 2: the non-exact pairs, before any long work

    for line in screen_pairs(spec.allocation).lines(f"the baseline {spec.allocation.name}"):
        log(line)
    result = optimize(spec, run_dir, scheduler=scheduler, log=log, progress=not quiet)
    result.write(run_dir)
    if not result.summary["confirmed"]:
        say("optimizer: confirmation over all pairs FAILED (the report says so)")
    return True


def _check_reusable(run_dir: Path, sc, args, say) -> None:
    """Refuse (one-line ValueError) a run directory whose optimize.json is not for this scenario's
    inputs and code, or — when ``args.require_confirmed`` (``scenario run``) — that was not
    confirmed on every pair or ran fewer trials than expected."""
    import json

    from optimizer.provenance import StaleRunError, check_run_dir, stale_message

    path = run_dir / "optimize.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise StaleRunError(f"{path}: unreadable ({exc}); recompute with --force") from None
    problems = check_run_dir(run_dir, doc, sc)
    if not problems and getattr(args, "require_confirmed", False):
        if doc.get("confirm_skipped"):
            problems.append("the run was not confirmed on all pairs (optimize --no-confirm)")
        want = args.trials or sc.trials
        if int(doc.get("trials_total") or 0) < want:
            problems.append(f"the run has {doc.get('trials_total')} Optuna trials, {want} expected")
    if problems:
        raise StaleRunError(stale_message(run_dir, sc, problems))
    say(f"reusing {path} (run hash {str(doc.get('run_hash'))[:12]}, inputs and code unchanged)")


def output_dir(args, scenario_name: str) -> Path:
    """The report folder: ``--out``, else ``reports/<scenario>`` with ``--publish``, else the
    git-ignored ``runs/<scenario>/report`` (a plain run never rewrites committed files)."""
    from optimizer.report import default_report_dir

    publish = bool(getattr(args, "publish", False))
    if args.out and publish:
        raise ValueError(
            f"--out {args.out} and --publish contradict each other (--publish writes "
            f"{default_report_dir(scenario_name, publish=True)}); give one of them"
        )
    return Path(args.out) if args.out else default_report_dir(scenario_name, publish=publish)


def run(args) -> int:
    from optimizer.report import build_report, check_report_outputs
    from optimizer.runner import check_scheduler_address
    from scenarios.loader import list_scenarios, load_scenario

    say = _progress(args.quiet)
    scheduler = check_scheduler_address(getattr(args, "scheduler", None))
    sc = load_scenario(args.scenario)
    run_dir = Path(args.run_dir) if args.run_dir else Path("runs") / sc.name
    out = output_dir(args, sc.name)
    check_report_outputs(out)
    say(f"scenario {sc.name}: {sc.description}")
    name = sc.name if sc.name in list_scenarios() else str(sc.source)
    force = bool(getattr(args, "force", False))
    if (run_dir / "optimize.json").is_file() and not force:
        _check_reusable(run_dir, sc, args, say)
    if force or not (run_dir / "optimize.json").is_file():
        if args.skip_optimize:
            if force:
                raise ValueError("--force and --skip-optimize contradict each other; give one of them")
            say(f"no {run_dir}/optimize.json and --skip-optimize: accounting-only report")
        else:
            run_optimizer(name, run_dir, say, args.trials, scheduler, quiet=args.quiet)
    written = build_report(sc, run_dir, out, progress=say)
    say(f"done: {out / 'report.html'} ({len(written)} files)")
    print(out / "report.html")
    return 0
