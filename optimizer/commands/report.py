"""Write the human-readable report of a scenario (HTML, Markdown, PNG figures, CSV tables).

If the run directory has no optimize.json, the optimizer is run first (unless --skip-optimize);
when the optimizer is unavailable or skipped, the report is accounting-only: the zCDP claim vs
the exact certified curve of the proxy pair, and the uniform noise rescale, computed directly.

examples:
  census-plb report --scenario dhc-persons
  census-plb report --scenario pl94-units --skip-optimize --out /tmp/pl94-units
"""

from __future__ import annotations

import argparse
import importlib
import sys
import time
from pathlib import Path

HELP = "write reports/<scenario>/ (report.html, report.md, figures, tables) for a scenario"


def configure(p) -> None:
    p.add_argument("--scenario", default="dhc-persons",
                   help="scenario name (scenarios/<name>.toml) or path of a scenario file (default dhc-persons)")
    p.add_argument("--run-dir", default=None, help="optimizer output directory (default runs/<scenario>)")
    p.add_argument("--out", default=None, help="report directory (default reports/<scenario>)")
    p.add_argument("--skip-optimize", action="store_true",
                   help="never run the optimizer; use what the run directory has (else accounting-only)")
    p.add_argument("--trials", type=int, default=3,
                   help="Optuna trials when the optimizer has to run (default 3, so `make demo` takes minutes; "
                        "the calibrated zCDP-optimum shape is already within ~1e-5 of the search's best); "
                        "0 = the scenario's own trial count")
    p.add_argument("--quiet", action="store_true", help="no progress output")


def _progress(quiet: bool):
    t0 = time.perf_counter()

    def say(msg: str) -> None:
        if not quiet:
            print(f"[{time.perf_counter() - t0:7.1f} s] {msg}", file=sys.stderr, flush=True)

    return say


def run_optimizer(scenario_name: str, run_dir: Path, say, trials: int = 0) -> bool:
    """Run ``census-plb optimize`` for the scenario into ``run_dir``; False if it is unavailable."""
    try:
        mod = importlib.import_module("optimizer.commands.optimize")
    except ImportError as exc:
        say(f"optimizer not available ({exc}); writing the accounting-only report")
        return False
    parser = argparse.ArgumentParser(prog="census-plb optimize", add_help=False)
    parser.add_argument("--debug", action="store_true")
    mod.configure(parser)
    known = parser._option_string_actions  # noqa: SLF001 - only to see which options exist
    argv = ["--scenario", scenario_name]
    if trials and "--trials" in known:
        argv += ["--trials", str(trials)]
    for opt in ("--out", "--out-dir", "--run-dir"):
        if opt in known:
            argv += [opt, str(run_dir)]
            break
    say(f"running the optimizer: census-plb optimize {' '.join(argv)}")
    rc = int(mod.run(parser.parse_args(argv)) or 0)
    if rc == 3:
        say("optimizer: confirmation over all pairs FAILED (the report says so)")
    elif rc != 0:
        say(f"optimizer exited with code {rc}; writing the report from whatever it produced")
    return (run_dir / "optimize.json").is_file()


def run(args) -> int:
    from optimizer.report import build_report
    from scenarios.loader import list_scenarios, load_scenario

    say = _progress(args.quiet)
    sc = load_scenario(args.scenario)
    run_dir = Path(args.run_dir) if args.run_dir else Path("runs") / sc.name
    out = Path(args.out) if args.out else Path("reports") / sc.name
    say(f"scenario {sc.name}: {sc.description}")
    if not (run_dir / "optimize.json").is_file():
        if args.skip_optimize:
            say(f"no {run_dir}/optimize.json and --skip-optimize: accounting-only report")
        else:
            run_optimizer(sc.name if sc.name in list_scenarios() else str(sc.source), run_dir, say, args.trials)
    written = build_report(sc, run_dir, out, progress=say)
    say(f"done: {out / 'report.html'} ({len(written)} files)")
    print(out / "report.html")
    return 0
