"""Scenarios: list them, run one (optimize + report), or compare all (zCDP claim vs exact).

examples:
  census-plb scenario list
  census-plb scenario run dhc-persons-cks
  census-plb scenario compare            # writes runs/scenario_comparison.csv and .md
  census-plb scenario compare --publish  # regenerates the committed reports/scenario_comparison.*

Runs write into the git-ignored runs/ folder; the committed reports/ change only with --publish.
"""

from __future__ import annotations

import sys
from pathlib import Path

HELP = "list / run / compare the scenarios in scenarios/*.toml"


def configure(p) -> None:
    sub = p.add_subparsers(dest="action", metavar="ACTION")
    sub.required = True
    ls = sub.add_parser("list", help="list the scenarios")
    ls.add_argument("--wide", action="store_true", help="full descriptions (default: lines fit 100 columns)")
    r = sub.add_parser("run", help="optimize (if needed) and write the report of one scenario")
    r.add_argument("name")
    r.add_argument("--skip-optimize", action="store_true", help="accounting-only unless optimizer output exists")
    r.add_argument(
        "--trials",
        type=int,
        default=None,
        help="run the Optuna search with this many trials (default: as the scenario says)",
    )
    r.add_argument("--force", action="store_true", help="recompute the optimizer run even if one exists")
    r.add_argument(
        "--scheduler",
        default=None,
        metavar="ADDRESS",
        help="Dask scheduler (tcp://HOST:PORT) for the all-pairs confirmation",
    )
    r.add_argument(
        "--publish",
        action="store_true",
        help="write the report into the committed reports/<name>/ (default runs/<name>/report/)",
    )
    c = sub.add_parser("compare", help="one table over scenarios: runs/scenario_comparison.csv/.md")
    c.add_argument("names", nargs="*", help="scenario names (default: all)")
    c.add_argument("--runs", default="runs", help="optimizer outputs root (default runs)")
    c.add_argument("--out", default=None, help="output directory (default runs)")
    c.add_argument(
        "--publish",
        action="store_true",
        help="write the committed reports/scenario_comparison.{csv,md} (regenerate on purpose)",
    )
    for q in (r, c):
        q.add_argument("--quiet", action="store_true", help="no progress output")


def _print_list(wide: bool) -> None:
    """The scenarios, one per line under a header; lines cut at 100 columns unless ``wide``."""
    from optimizer.scenario import list_scenarios, load_scenario

    rows = []
    for name in list_scenarios():
        sc = load_scenario(name)
        rows.append(
            (name, Path(sc.allocation).stem, sc.conversion, sc.target_delta_text, sc.target_kind, sc.description)
        )
    head = ("scenario", "allocation", "conversion", "delta", "target", "description")
    widths = [max(len(r[k]) for r in (head, *rows)) for k in range(5)]
    for r in (head, *rows):
        line = "  ".join(f"{c:{widths[k]}}" for k, c in enumerate(r[:5])) + "  " + r[5]
        print(line if wide or len(line) <= 100 else line[:99] + "…")


def run(args) -> int:

    if args.action == "list":
        _print_list(bool(getattr(args, "wide", False)))
        return 0
    if args.action == "run":
        from optimizer.cli.commands.report import _progress
        from optimizer.workflow import ReportRequest, report_scenario

        req = ReportRequest(
            scenario=args.name,
            skip_optimize=args.skip_optimize,
            quiet=args.quiet,
            trials=args.trials,
            force=args.force,
            publish=args.publish,
            require_confirmed=not args.skip_optimize,
            scheduler=args.scheduler,
        )
        print(report_scenario(req, _progress(args.quiet)))
        return 0
    from optimizer.atomic import check_writable
    from optimizer.report import default_comparison_dir, write_comparison
    from optimizer.workflow import compare_scenarios

    if args.out and args.publish:
        raise ValueError(
            f"--out {args.out} and --publish contradict each other (--publish writes "
            f"{default_comparison_dir(publish=True)}/); give one of them"
        )
    out_dir = args.out or default_comparison_dir(publish=args.publish)
    for name in ("scenario_comparison.csv", "scenario_comparison.md"):
        check_writable(f"{out_dir}/{name}")  # before any work

    def say(msg: str) -> None:
        if not args.quiet:
            print(msg, file=sys.stderr, flush=True)

    # the committed comparison shows only committed results (reports/<name>/ of the same inputs)
    rows = compare_scenarios(args.names or None, args.runs, progress=say, published_only=args.publish)
    csv_path, md_path = write_comparison(rows, out_dir)
    print(md_path.read_text(encoding="utf-8"), end="")
    say(f"wrote {csv_path} and {md_path}")
    return 0
