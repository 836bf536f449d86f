"""Re-tune a budget allocation: same promised (ε, δ), less noise (uniform, zCDP optimum, Optuna).

examples:
  census-plb optimize --scenario dhc-persons --json
  census-plb optimize --allocation dhc-persons --conversion cks --trials 3 --no-confirm
Outputs in --out (default runs/<scenario>/): optimize.json, per_query.csv, per_geolevel.csv,
curves.csv, tradeoff.csv, allocation_optimized.toml.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from optimizer.pipeline.summary import RunSummary

HELP = "re-tune the budget: same promised (ε, δ), less noise; confirm on all pairs"


def configure(p) -> None:
    from accountant import zcdp  # the registry of conversions (lazy: the CLI starts fast)

    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--scenario", help="scenarios/<NAME>.toml, or a built-in allocation name")
    g.add_argument("--allocation", help="a built-in allocation name (dhc-persons, …)")
    p.add_argument("--conversion", choices=tuple(zcdp.CONVERSIONS), default=None)
    p.add_argument("--delta", default=None, help="target δ (exact decimal string; default 1e-10)")
    p.add_argument("--trials", type=int, default=None, help="Optuna trials to run (default: scenario or 30)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument(
        "--storage",
        default=None,
        help="Optuna storage: a journal file (default runs/<name>/optuna.journal) or sqlite:///FILE, used by one "
        "run at a time (a second refuses), or a database server URL that concurrent runs share",
    )
    p.add_argument("--no-confirm", action="store_true", help="skip the all-pairs confirmation")
    p.add_argument("--workers", type=int, default=2, help="processes for the confirmation")
    p.add_argument("--out", default=None, help="output directory (default runs/<name>/)")
    p.add_argument("--json", action="store_true", help="print the JSON summary")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr (errors still print)")
    p.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="Dask scheduler (tcp://HOST:PORT) for the all-pairs confirmation; workers need --nthreads 1",
    )


def spec_from_args(args):
    """The :class:`optimizer.pipeline.stages.RunSpec` of the command line (validated before any work)."""
    from optimizer.pipeline.stages import spec_for

    return spec_for(
        scenario=args.scenario,
        allocation=args.allocation,
        conversion=args.conversion,
        delta=args.delta,
        trials=args.trials,
        seed=args.seed,
    )


def run(args) -> int:
    from optimizer.atomic import check_writable
    from optimizer.jobs.runner import check_scheduler_address
    from optimizer.pipeline.result import RUN_FILES, RunResult
    from optimizer.pipeline.stages import optimize

    if args.workers is not None and args.workers < 1:  # before anything is loaded or computed
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    spec = spec_from_args(args)
    out = Path(args.out) if args.out else Path("runs") / spec.name
    for fname in RUN_FILES:  # a symlinked output is refused before any work
        check_writable(out / fname)
    journal = Path(args.storage) if args.storage and "://" not in args.storage else out / "optuna.journal"
    if spec.trials == 0 and not (args.storage and "://" in args.storage) and not journal.is_file():
        raise ValueError(
            f"--trials 0: no existing study at {journal} to take the best trial from; a new study needs --trials >= 1"
        )
    quiet = bool(getattr(args, "quiet", False))
    scheduler = check_scheduler_address(getattr(args, "scheduler", None))
    log = (lambda m: None) if quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    if not args.no_confirm:  # issue 35 item 2: which pairs of the given allocation will not be exact, before any work
        from optimizer.jobs.exactness import screen_pairs

        for line in screen_pairs(spec.allocation).lines(f"the baseline {spec.allocation.name}"):
            log(line)
    result = optimize(
        spec,
        out,
        confirm=not args.no_confirm,
        workers=args.workers,
        scheduler=scheduler,
        storage=args.storage,
        log=log,
        progress=not quiet,
    )
    result.write(out)
    summary = result.summary
    if args.json:
        print(RunResult.summary_text(summary))
    else:
        guard = "with the Pareto guard" if summary["pareto"] else "WITHOUT the Pareto guard"
        print(
            f"minimax (uniform rescale): every query's variance -{summary['uniform_variance_drop_percent']:.4f}%; "
            f"{summary['objective']} {guard}: objective -{summary['objective_drop_percent']:.4f}%, "
            f"mean relative variance {float(summary['mean_relative_variance']):.6f}, "
            f"{summary['n_queries_noisier']} queries noisier, max σ'²/σ² {float(summary['max_variance_ratio']):.6f}; "
            f"confirmed={summary['confirmed']}; outputs in {out}"
        )
        for line in confirmation_lines(summary):
            print(line)
    if not args.no_confirm and not summary["confirmed"]:
        return 3
    return 0


def confirmation_lines(summary: RunSummary) -> list[str]:
    """The confirmations' worst pairs (named only when certain) and their exactness: pairs the
    screen planned non-exact and pairs that missed their tolerance (issue 35 items 2 and 4)."""
    from optimizer.jobs.confirm import worst_pair_text

    if summary.get("confirm_skipped"):
        return []
    out = []
    planned = summary.get("pairs_not_exact_planned") or {}
    seen = summary.get("pairs_not_exact") or {}
    for prefix, label in (("uniform_", "uniform rescale"), ("", "optimized")):
        key = "uniform" if prefix else "optimized"
        out.append(
            f"{label}: {worst_pair_text(summary, prefix)}; pairs not exact: {seen.get(key, '?')} "
            f"(planned by the screen: {planned.get(key, '?')})"
        )
    return out
