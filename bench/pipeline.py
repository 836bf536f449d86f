"""The optimizer's main job, stage by stage: wall time, full pair sweeps, pair jobs (issue 35 item 5).

    python -m bench.pipeline [--scenario dhc-persons] [--baseline] [--workers 2] [--out CSV]

Runs :func:`optimizer.pipeline.stages.optimize` with the all-pairs confirmations (what ``census-plb report
--scenario S`` runs before it renders) in a fresh temporary folder, so no cache is reused, and prints
one row per stage:

* ``stage 1``: the promise and the uniform rescale calibrated on the proxy pair;
* ``watch screen``: the diagonal screen and the uniform rescale calibrated on the proxy and the
  watched pairs (:mod:`optimizer.search.watch`; absent from the baseline);
* ``search``: the zCDP optimum, the guarded convex optimum and the Optuna trials;
* one row per confirmation (the uniform rescale, the optimized allocation, each re-solve), with its
  full pair sweeps, pair jobs, and jobs whose tolerance was not met (coarse sandwich);
* ``total``.

``--baseline`` runs the flow without watched pairs first (``WATCH_PAIRS = False``: every allocation
calibrated on the proxy alone, each confirmation recalibrating and sweeping again, guard re-solves)
and then the current flow, in the same process, so the ratio is measured on the same machine
state.  Writes ``--out`` (CSV, one row per stage and flow) and a JSON summary next to it.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import tempfile
import time
from pathlib import Path
from typing import Any

from optimizer.atomic import atomic_write_text
from optimizer.pipeline import stages as PL

COLUMNS = ["flow", "stage", "seconds", "sweeps", "pair_jobs", "pair_jobs_not_exact"]


def run_flow(scenario: str, watch: bool, workers: int, log=print) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One optimize run of ``scenario`` with ``WATCH_PAIRS = watch``: (stage rows, summary)."""
    flow = "watched" if watch else "baseline"
    marks: list[tuple[float, str]] = []
    t0 = time.perf_counter()

    def note(msg: str) -> None:
        marks.append((time.perf_counter() - t0, msg))
        log(f"[{flow} {marks[-1][0]:7.1f} s] {msg[:110]}")

    saved = PL.WATCH_PAIRS
    PL.WATCH_PAIRS = watch
    try:
        with tempfile.TemporaryDirectory() as d:
            result = PL.optimize(PL.spec_for(scenario=scenario), d, confirm=True, workers=workers, log=note)
    finally:
        PL.WATCH_PAIRS = saved
    total = time.perf_counter() - t0
    summary = result.summary

    def at(prefix: str) -> float:
        return next((t for t, m in marks if m.startswith(prefix)), float("nan"))

    t_stage1 = at("stage 1 uniform")
    t_watch = at("watching pairs")
    t_search = at("the Optuna search")
    if t_search != t_search:  # minimax-relative: no search
        t_search = at("objective minimax-relative")
    rows = [{"flow": flow, "stage": "stage 1", "seconds": t_stage1}]
    if watch:
        rows.append({"flow": flow, "stage": "watch screen", "seconds": t_watch - t_stage1})
    rows.append({"flow": flow, "stage": "search", "seconds": t_search - (t_watch if watch else t_stage1)})
    for c in summary.get("confirmations") or []:
        rows.append(
            {
                "flow": flow,
                "stage": f"confirm {c['label']}",
                "seconds": c["seconds"],
                "sweeps": c["sweeps"],
                "pair_jobs": c["pair_jobs"],
                "pair_jobs_not_exact": c["pair_jobs_not_exact"],
            }
        )
    confs = summary.get("confirmations") or []
    rows.append(
        {
            "flow": flow,
            "stage": "total",
            "seconds": total,
            "sweeps": sum(c["sweeps"] for c in confs),
            "pair_jobs": sum(c["pair_jobs"] for c in confs),
            "pair_jobs_not_exact": sum(c["pair_jobs_not_exact"] for c in confs),
        }
    )
    keys = ("mean_relative_variance", "objective_drop_percent", "pareto_guard_met", "confirmed", "worst_pair_certain")
    return rows, {k: summary.get(k) for k in keys}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scenario", default="dhc-persons")
    p.add_argument("--baseline", action="store_true", help="run the flow without watched pairs first (the ratio)")
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--out", default="reports/benchmarks/pipeline.csv", help="CSV path (JSON next to it)")
    args = p.parse_args(argv)
    rows: list[dict[str, Any]] = []
    outcome: dict[str, Any] = {}
    for watch in ([False] if args.baseline else []) + [True]:
        flow_rows, o = run_flow(args.scenario, watch, args.workers)
        rows += flow_rows
        outcome[flow_rows[0]["flow"]] = o
    print(f"{'flow':9s} {'stage':60s} {'seconds':>8s} {'sweeps':>6s} {'jobs':>6s} {'not exact':>9s}")
    for r in rows:
        print(
            f"{r['flow']:9s} {r['stage'][:60]:60s} {r['seconds']:8.1f} {r.get('sweeps', ''):>6} "
            f"{r.get('pair_jobs', ''):>6} {r.get('pair_jobs_not_exact', ''):>9}"
        )
    totals = {r["flow"]: r for r in rows if r["stage"] == "total"}
    if "baseline" in totals:
        b, w = totals["baseline"], totals["watched"]
        print(f"ratio watched/baseline: time {w['seconds'] / b['seconds']:.2f}, sweeps {w['sweeps']}/{b['sweeps']}")
    buf = io.StringIO()
    wr = csv.DictWriter(buf, COLUMNS)
    wr.writeheader()
    wr.writerows(rows)
    out = Path(args.out)
    atomic_write_text(out, buf.getvalue())
    doc = {"scenario": args.scenario, "workers": args.workers, "totals": totals, "outcome": outcome}
    atomic_write_text(out.with_suffix(".json"), json.dumps(doc, indent=2, default=str) + "\n")
    print(f"wrote {out} and {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
