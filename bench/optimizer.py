"""Optimizer benchmark: the whole run per stage (issue 35), and the search's micro-timings.

    python -m bench.optimizer [--baseline] [--scenario NAME] [--workers N]
    python -m bench.optimizer --micro [--trials N]

The default mode runs ``census-plb optimize`` of the scenario (default ``dhc-persons``, the demo's
main job without the report) through the library pipeline in a fresh temporary folder and prints,
per stage, wall time, all-pairs sweeps, pair jobs and how many of them ended exact / not exact, and
the run's verdicts (worst pair certain, rounding cost, mean relative variance).  With ``--baseline``
it first runs the same with the proposals of before issue 35 (every budget floored to 1/10⁵,
:func:`optimizer.search.grid.flat_representation`) and prints the ratios; both in one process, one
after the other.  Writes ``reports/benchmarks/optimizer_pipeline.{csv,json}``.

``--micro`` prints the older table of ``reports/benchmarks/optimizer.csv``.  Rows:

* ``delta eval``: one cold certified δ of the proxy pair (tolerances of the search), the
  composition built anew each time as for a fresh candidate — the ≤ 50 ms target;
* ``calibration``: stage-1 root finding for one shape (``evals`` δ evaluations, ``s/eval``);
* ``optuna``: seconds per trial (each trial = one calibrated candidate), its δ evaluations,
  seconds per evaluation, trials per minute and the weighted-variance drop reached;
* ``allocation load``: reading and validating a 10⁵-row allocation CSV (linear: ~3 s; it was
  ~2 min before issue 13).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import statistics
import tempfile
import time
from fractions import Fraction
from pathlib import Path

from optimizer import search as S
from optimizer.atomic import atomic_write_text
from optimizer.census.allocation import Allocation, load_builtin


def _time_allocation_load(n_rows: int = 100_000) -> float:
    """Seconds to read and validate an ``n_rows``-row allocation CSV (one custom geolevel)."""
    lines = ["geolevel,query,rho_exact"]
    lines += [f"Block,q{i},{Fraction(1 + i % 97, 100000)}" for i in range(n_rows)]
    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / "allocation.csv"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        t0 = time.perf_counter()
        alloc = Allocation.from_csv(path, run_type=None)
        seconds = time.perf_counter() - t0
    assert alloc.n_queries == n_rows
    return seconds


def _time_delta(alloc, target, repeat=5):
    """Median time of one cold proxy δ evaluation: the composition (lattice, plan, tables) is
    built anew each time, as for every candidate of the search (nothing is reused)."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        S.proxy_composition(alloc).delta(target.epsilon, tol=S.TOL_SEARCH, rtol=S.RTOL_SEARCH)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _pipeline_rows(scenario: str, workers: int, label: str) -> list[dict]:
    """One optimizer run of ``scenario`` (confirmations included) in a temporary folder: a row per
    confirmation stage, one for the rest (calibrations and solves) and one for the whole run."""
    from optimizer.pipeline.stages import optimize, spec_for

    spec = spec_for(scenario=scenario)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory() as d:
        s = optimize(spec, d, workers=workers).summary
    wall = time.perf_counter() - t0
    rows = []
    for rec in s.get("confirmations") or []:
        rows.append(
            {
                "representation": label,
                "stage": f"confirm: {rec['label']}",
                "seconds": rec["seconds"],
                "sweeps": rec["sweeps"],
                "pair_jobs": rec["pair_jobs"],
                "jobs_exact": rec["pair_jobs"] - rec["pair_jobs_not_exact"],
                "jobs_not_exact": rec["pair_jobs_not_exact"],
            }
        )
    confirm_s = sum(r["seconds"] for r in rows)
    rows.append({"representation": label, "stage": "calibrations and solves", "seconds": wall - confirm_s})
    rounding = s.get("rounding") or {}
    rows.append(
        {
            "representation": label,
            "stage": "whole run",
            "seconds": wall,
            "sweeps": s.get("pair_sweeps"),
            "pair_jobs": sum(r["pair_jobs"] for r in rows if "pair_jobs" in r),
            "jobs_exact": sum(r["jobs_exact"] for r in rows if "jobs_exact" in r),
            "jobs_not_exact": sum(r["jobs_not_exact"] for r in rows if "jobs_not_exact" in r),
            "pairs_not_exact_final": (s.get("pairs_not_exact") or {}).get("optimized"),
            "worst_pair_certain": s.get("worst_pair_certain"),
            "mean_relative_variance": s.get("mean_relative_variance"),
            "rounding_cost": rounding.get("relative_difference"),
            "confirmed": s.get("confirmed"),
        }
    )
    return rows


PIPELINE_FIELDS = [
    "representation",
    "stage",
    "seconds",
    "sweeps",
    "pair_jobs",
    "jobs_exact",
    "jobs_not_exact",
    "pairs_not_exact_final",
    "worst_pair_certain",
    "mean_relative_variance",
    "rounding_cost",
    "confirmed",
]


def _pipeline(args) -> int:
    from optimizer.jobs.exactness import default_engines_only
    from optimizer.search.grid import flat_representation

    rows = []
    if args.baseline:  # before issue 35 (flat proposals) and issue 17 (no release tier for sandwich pairs)
        with flat_representation(), default_engines_only():
            rows += _pipeline_rows(args.scenario, args.workers, "before (flat 1/10^5)")
    rows += _pipeline_rows(args.scenario, args.workers, "after (grid)")
    print(f"{'representation':22s} {'stage':58s} {'seconds':>8s} {'sweeps':>6s} {'jobs':>6s} {'exact':>6s} {'not':>5s}")
    for r in rows:
        cells = [str(r.get(k, "")) for k in ("sweeps", "pair_jobs", "jobs_exact", "jobs_not_exact")]
        print(
            f"{r['representation']:22s} {r['stage'][:58]:58s} {r['seconds']:8.1f} "
            f"{cells[0]:>6s} {cells[1]:>6s} {cells[2]:>6s} {cells[3]:>5s}"
        )
    whole = {r["representation"]: r for r in rows if r["stage"] == "whole run"}
    for r in whole.values():
        print(
            f"{r['representation']}: final pairs not exact {r['pairs_not_exact_final']}, worst pair certain "
            f"{r['worst_pair_certain']}, mean relative variance {r['mean_relative_variance']}, rounding cost "
            f"{r['rounding_cost']}, confirmed {r['confirmed']}"
        )
    if len(whole) == 2:
        before, after = whole.values()
        print(
            f"ratio after/before: wall time {after['seconds'] / before['seconds']:.3f}, sweeps "
            f"{after['sweeps']}/{before['sweeps']}, non-exact jobs {after['jobs_not_exact']}/{before['jobs_not_exact']}"
        )
    out = Path(args.out_dir)
    buf = io.StringIO()
    wr = csv.DictWriter(buf, PIPELINE_FIELDS)
    wr.writeheader()
    wr.writerows(rows)
    atomic_write_text(out / "optimizer_pipeline.csv", buf.getvalue())
    doc = {"scenario": args.scenario, "workers": args.workers, "rows": rows}
    atomic_write_text(out / "optimizer_pipeline.json", json.dumps(doc, indent=2, default=str) + "\n")
    return 0


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--baseline", action="store_true", help="also run the pre-issue-35 proposals, first")
    p.add_argument("--scenario", default="dhc-persons")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out-dir", default="reports/benchmarks")
    p.add_argument("--micro", action="store_true", help="the search's micro-timings instead")
    p.add_argument("--trials", type=int, default=10, help="(--micro) Optuna trials")
    p.add_argument("--out", default="reports/benchmarks/optimizer.csv", help="(--micro) CSV file")
    args = p.parse_args(argv)
    if not args.micro:
        return _pipeline(args)
    a = load_builtin("dhc-persons")
    target = S.target_from_allocation(a)
    rows = [{"case": "allocation load: 10^5-row CSV", "seconds": _time_allocation_load()}]
    c, uniform, _ = S.uniform_rescale(a, target)
    for label, w in (("equal", None), ("favour-block", {(g, q): (10 if g == "Block" else 1) for g, q, _ in a.items()})):
        z = S.zcdp_optimum(a, w)
        rows.append({"case": "delta eval: baseline shape", "seconds": _time_delta(uniform, target)})
        rows.append({"case": f"delta eval: zCDP optimum ({label})", "seconds": _time_delta(z, target)})
        t0 = time.perf_counter()
        cal = S.calibrate_shape(z, target, hint=float(c))
        dt = time.perf_counter() - t0
        rows.append(
            {
                "case": f"calibration: zCDP optimum ({label})",
                "seconds": dt,
                "evals_per_trial": cal.evaluations,
                "seconds_per_eval": dt / cal.evaluations,
            }
        )
        res = S.reallocate(a, target, w, n_trials=args.trials, seed=0, uniform_c=c, zcdp_shape=z, progress=False)
        rows.append(
            {
                "case": f"optuna ({label}) trials/minute",
                "seconds": res.seconds_per_trial,
                "seconds_per_eval": res.seconds_per_trial / res.evaluations_per_trial,
                "trials_per_minute": res.trials_per_minute,
                "evals_per_trial": res.evaluations_per_trial,
                "drop_percent": res.variance_drop_percent,
            }
        )
    nan = float("nan")
    print(f"{'case':45s} {'seconds':>10s} {'evals':>6s} {'s/eval':>8s} {'trials/min':>10s} {'drop %':>10s}")
    for r in rows:
        print(
            f"{r['case']:45s} {r['seconds']:10.4f} {r.get('evals_per_trial', nan):6.1f} "
            f"{r.get('seconds_per_eval', r['seconds']):8.4f} {r.get('trials_per_minute', nan):10.2f} "
            f"{r.get('drop_percent', nan):10.4f}"
        )
    buf = io.StringIO()
    wr = csv.DictWriter(
        buf, ["case", "seconds", "seconds_per_eval", "trials_per_minute", "evals_per_trial", "drop_percent"]
    )
    wr.writeheader()
    wr.writerows(rows)
    atomic_write_text(args.out, buf.getvalue())  # atomic, never through a symlink
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
