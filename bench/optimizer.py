"""Optimizer benchmark: proxy δ evaluation time per candidate shape, and Optuna trials/minute.

    python -m bench.optimizer [--trials N]

Prints a table and writes reports/benchmarks/optimizer.csv.  Rows:

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


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__)
    p.add_argument("--trials", type=int, default=10)
    p.add_argument("--out", default="reports/benchmarks/optimizer.csv")
    args = p.parse_args(argv)
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
