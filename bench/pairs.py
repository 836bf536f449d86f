"""Benchmark of the whole-release profile: all 946 DHC-persons pairs at the paper's 42 ε.

Run ``python -m bench.pairs [--workers 2] [--cache DIR] [--fresh] [--tradeoff]
[--resume-fraction 0.5] [--limit-pairs K] [--out reports/benchmarks]``.

Measures:

1. the full run (one job per pair, :func:`optimizer.jobs.profile.release_profile`): wall time of
   this invocation, how many jobs were computed vs. already cached, the sum of per-job times
   and the slowest pairs (pairs of short paths, e.g. [6, 6] = US + State only, dominate);
2. a resumed run: the cache is copied, a ``--resume-fraction`` of its files deleted at random
   (what a run killed part-way leaves behind) and the run repeated; plus a fully cached rerun
   (nothing computed: pure overhead of reading the cache and aggregating);
3. with ``--tradeoff`` every run above also computes each pair's trade-off curve at
   ``--tradeoff-points`` (901) thresholds, tol 1e-25, and the release's envelope — the full
   target of the census model (one engine batch per pair for both curves);
4. agreement with the paper (``optimizer/data/dhc_persons_exact_eps_delta.csv``): worst δ and
   arg-max pair per δ_zCDP, and the main pair [13, 13] relative to the worst.

Writes ``pairs.csv`` (per pair: seconds, nodes), ``pairs_compare.csv`` (per ε, vs. published),
``pairs_tradeoff.csv`` (with ``--tradeoff``: per pair seconds of the shared batch and of the
trade-off bookkeeping) and ``pairs.json`` (wall times, summary) to ``--out``.  With ``--cache`` pointing at the cache
of an earlier run (e.g. ``runs/dhc-persons-full/cache``) step 1 only reads it; pass
``--first-run-seconds`` to record that run's wall time.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import platform
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

import mpmath

from optimizer.atomic import atomic_write_text
from optimizer.jobs.profile import _EXACT_CSV, DEFAULT_DELTA_ZCDP, release_profile

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_OUT = ROOT / "reports" / "benchmarks"
DEFAULT_CACHE = ROOT / "runs" / "bench-pairs" / "cache"

COMPARE_COLUMNS = [
    "delta_zcdp",
    "eps",
    "worst_pair",
    "published_argmax_pair",
    "worst_delta",
    "published_max",
    "rel_diff_vs_published",
    "certain",
    "n_candidates",
    "published_in_candidates",
    "main_pair_delta",
    "main_over_worst_minus_1",
]


def _display_path(p) -> str:
    """``p`` relative to the project when inside it (reports name no machine paths)."""
    p = Path(p).resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return p.name


def _timed(**kw):
    t0 = time.perf_counter()
    prof = release_profile("dhc-persons", **kw)
    return time.perf_counter() - t0, prof


def compare_with_published(summary: dict) -> list[dict]:
    """Per ε: our worst δ/arg-max vs. the published maximum over 946 pairs."""
    with open(_EXACT_CSV, encoding="utf-8", newline="") as fh:
        pub = {r["delta_zcdp"]: r for r in csv.DictReader(fh)}
    rows = []
    with mpmath.workdps(40):
        for dz, g in zip(DEFAULT_DELTA_ZCDP, summary["grid"]):
            p = pub[dz]
            w = mpmath.mpf(g["worst_delta"])
            pm = mpmath.mpf(p["delta_exact_max_over_946_pairs"])
            main = mpmath.mpf(g["main_pair_delta"]) if g.get("main_pair_delta") else None
            rows.append(
                {
                    "delta_zcdp": dz,
                    "eps": g["eps"][:30],
                    "worst_pair": "-".join(map(str, g["worst_pair"])),
                    "published_argmax_pair": p["argmax_pair"],
                    "worst_delta": g["worst_delta"],
                    "published_max": p["delta_exact_max_over_946_pairs"],
                    "rel_diff_vs_published": mpmath.nstr(abs(w / pm - 1), 3) if pm else "",
                    "certain": g["certain"],
                    "n_candidates": len(g["candidates"]),
                    "published_in_candidates": [int(x) for x in p["argmax_pair"].split("-")] in g["candidates"],
                    "main_pair_delta": g.get("main_pair_delta") or "",
                    "main_over_worst_minus_1": mpmath.nstr(main / w - 1, 3) if (main is not None and w) else "",
                }
            )
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.pairs", description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--cache", default=str(DEFAULT_CACHE), help="job cache of the full run")
    ap.add_argument("--fresh", action="store_true", help="delete --cache first (time a cold run)")
    ap.add_argument(
        "--first-run-seconds",
        type=float,
        default=None,
        help="wall time of the run that filled --cache (recorded as is)",
    )
    ap.add_argument(
        "--resume-fraction",
        type=float,
        default=0.5,
        help="fraction of cache files deleted before the resumed run (0 = skip)",
    )
    ap.add_argument("--tradeoff", action="store_true", help="all runs include trade-off curves at --tradeoff-points")
    ap.add_argument("--tradeoff-points", type=int, default=901)
    ap.add_argument("--limit-pairs", type=int, default=None, help="quick runs: only the first K pairs")
    ap.add_argument("--out", default=str(DEFAULT_OUT))
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    log = lambda *a: print(*a, file=sys.stderr, flush=True)  # noqa: E731

    cache = Path(args.cache)
    if args.fresh and cache.exists():
        shutil.rmtree(cache)
    cached_before = len(list(cache.glob("*.json"))) if cache.exists() else 0
    common = {"workers": args.workers, "limit_pairs": args.limit_pairs, "progress": True}
    if args.tradeoff:  # the full run (and the resumed and cached reruns) include the trade-off curves
        common.update(tradeoff=True, tradeoff_n=args.tradeoff_points)
    log(f"full run: {args.workers} workers, cache {cache} ({cached_before} jobs cached)")
    t_full, prof = _timed(cache_dir=cache, **common)
    s = prof.summary
    per_pair = sorted(prof.results.items())
    meta = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "workers": args.workers,
        "n_pairs": s["n_pairs"],
        "n_eps": len(s["grid"]),
        "tradeoff_points": args.tradeoff_points if args.tradeoff else 0,
        "tol": s["tol"],
        "cache": _display_path(cache),
    }
    timings = {
        "full_run_wall_s": round(t_full, 3),
        "full_run_jobs_cached_before": cached_before,
        "full_run_jobs_computed": s["n_pairs"] - min(cached_before, s["n_pairs"]),
        "first_run_wall_s_recorded": args.first_run_seconds,
        "sum_job_seconds": s["job_seconds_total"],
        "slowest_pairs": s["slowest_pairs"],
    }
    log(f"full run: {t_full:.1f} s ({timings['full_run_jobs_computed']} computed)")

    t0 = time.perf_counter()
    release_profile("dhc-persons", cache_dir=cache, **{**common, "progress": False})
    timings["cached_rerun_wall_s"] = round(time.perf_counter() - t0, 3)

    if args.resume_fraction > 0:
        with tempfile.TemporaryDirectory(prefix="bench-pairs-resume-") as tmp:
            tcache = Path(tmp) / "cache"
            shutil.copytree(cache, tcache)
            files = sorted(tcache.glob("*.json"))
            rng = random.Random(args.seed)
            drop = rng.sample(files, round(args.resume_fraction * len(files)))
            for f in drop:
                f.unlink()
            dropped_job_s = 0.0
            for f in drop:
                src = json.loads((cache / f.name).read_text(encoding="utf-8"))
                dropped_job_s += float(src.get("elapsed_seconds", 0))
            log(f"resume: {len(drop)} of {len(files)} cache files deleted, rerunning")
            t_res, prof2 = _timed(cache_dir=tcache, **common)
            assert prof2.summary["grid"] == s["grid"], "resumed run differs from the full run"
            timings.update(
                {
                    "resume_fraction": args.resume_fraction,
                    "resume_jobs_recomputed": len(drop),
                    "resume_wall_s": round(t_res, 3),
                    "resume_dropped_job_seconds": round(dropped_job_s, 3),
                }
            )
            log(f"resumed run: {t_res:.1f} s")

    if args.tradeoff:
        timings["tradeoff_points"] = args.tradeoff_points
        timings["tradeoff_envelope_points"] = s["tradeoff_envelope"]["n_points"]
        job_s = {k: float(r["seconds"]) + float(r["tradeoff"]["seconds"]) for k, r in per_pair}
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(["pair_i", "pair_j", "batch_seconds", "tradeoff_bookkeeping_seconds", "total_seconds"])
        for (i, j), r in per_pair:
            w.writerow(
                [
                    i,
                    j,
                    round(float(r["seconds"]), 4),
                    round(float(r["tradeoff"]["seconds"]), 4),
                    round(job_s[(i, j)], 4),
                ]
            )
        atomic_write_text(Path(args.out) / "pairs_tradeoff.csv", buf.getvalue())

    out = Path(args.out)
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["pair_i", "pair_j", "n_mechanisms", "seconds", "nodes", "kept_nodes"])
    for (i, j), r in per_pair:
        w.writerow([i, j, r["n_mechanisms"], round(float(r["seconds"]), 4), r["nodes"], r["kept_nodes"]])
    atomic_write_text(out / "pairs.csv", buf.getvalue())
    compare = compare_with_published(s) if s["complete"] and len(s["grid"]) == len(DEFAULT_DELTA_ZCDP) else []
    if compare:
        buf = io.StringIO()
        dw = csv.DictWriter(buf, fieldnames=COMPARE_COLUMNS, lineterminator="\n")
        dw.writeheader()
        dw.writerows(compare)
        atomic_write_text(out / "pairs_compare.csv", buf.getvalue())
    summary = {
        k: v for k, v in s.items() if k not in ("grid", "tradeoff_envelope")
    }  # (envelope: its size is in timings)
    report = {"meta": meta, "timings": timings, "summary_first_eps": summary}
    if compare:
        with mpmath.workdps(30):
            report["agreement"] = {
                "argmax_matches_published": sum(r["worst_pair"] == r["published_argmax_pair"] for r in compare),
                "n_eps": len(compare),
                "max_rel_diff_vs_published": mpmath.nstr(
                    max(mpmath.mpf(r["rel_diff_vs_published"]) for r in compare), 3
                ),
                "argmax_published_among_candidates": sum(r["published_in_candidates"] for r in compare),
                "main_within_1e-4_of_worst_for_delta_zcdp_ge_1e-17": all(
                    abs(mpmath.mpf(r["main_over_worst_minus_1"])) < mpmath.mpf("1e-4")
                    for r in compare
                    if mpmath.mpf(r["delta_zcdp"]) >= mpmath.mpf("1e-17")
                ),
            }
    atomic_write_text(out / "pairs.json", json.dumps(report, indent=1) + "\n")
    print(json.dumps({"timings": timings, "agreement": report.get("agreement")}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
