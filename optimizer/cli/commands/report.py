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

from optimizer.workflow import ReportRequest, report_scenario

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
        default=None,
        help="run the Optuna search with this many trials when the optimizer has to run (default: as the "
        "scenario says — off for a convex objective, whose calibrated convex optimum is the answer)",
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


def request(args, **extra) -> ReportRequest:
    """The :class:`optimizer.workflow.ReportRequest` of the parsed options (``extra`` overrides)."""
    fields = {
        "scenario": args.scenario,
        "run_dir": getattr(args, "run_dir", None),
        "out": getattr(args, "out", None),
        "publish": bool(getattr(args, "publish", False)),
        "skip_optimize": bool(getattr(args, "skip_optimize", False)),
        "force": bool(getattr(args, "force", False)),
        "trials": getattr(args, "trials", None),
        "scheduler": getattr(args, "scheduler", None),
        "quiet": bool(getattr(args, "quiet", False)),
    }
    fields.update(extra)
    return ReportRequest(**fields)


def run(args) -> int:
    print(report_scenario(request(args), _progress(args.quiet)))
    return 0
