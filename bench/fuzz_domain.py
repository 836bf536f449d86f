"""Fuzz-domain speed survey (issue 12's "every call well under a second or two").

    python -m bench.fuzz_domain [--n 40] [--seed 1] [--eps-max 50] [--limit 30] [--baseline]
    python -m bench.fuzz_domain --cases [--baseline]

``--cases`` times the named regression cases of issue 12 (:data:`CASES`: fuzz-domain calls that
took 5-60 s before the session that made them fast) instead of random draws.

Draws ``n`` random compositions from the domain of ``tests/accountant/test_fuzz_domain.py``
(1–6 components, σ² = p/q with q ≤ 100 in [1/5, 500], shifts ±1..3; ε uniform on a 1/100
grid in [0, eps_max]; α uniform on a 10⁻⁶ grid, 1e-30 or 1 − 1e-20) and times one certified
δ(ε) and one β(α) per composition, each in a fresh :class:`accountant.Composition`, with a
per-call time limit (SIGALRM).  Prints a table and writes ``--out`` (CSV, one row per call)
and the summary next to it as JSON.

``--baseline`` also runs every call with the speed switches of this session off
(``EngineConfig(coarse_inner_fraction=0, split_prune_terms=False)``: the sandwich asks its
inner engine for the caller's whole target, splits sum every window term); the ratio column
is then baseline / current for the same call in the same run.  (The vectorised sieve and the
β search's batch savings have no switch and are in both.)
"""

from __future__ import annotations

import argparse
import math
import random
import signal
import statistics
import time
from fractions import Fraction
from pathlib import Path

from accountant import Composition, DiscreteGaussian
from accountant.engine import EngineConfig
from bench.output import write_results

#: the issue's goal per call, seconds.
GOAL_S = 2.0
BASELINE_CONFIG = EngineConfig(coarse_inner_fraction=0, split_prune_terms=False, full_dft=False)
COLUMNS = [
    "i",
    "case",
    "kind",
    "arg",
    "components",
    "seconds",
    "status",
    "tolerance_met",
    "value",
    "error",
    "baseline_s",
]


#: (name, [(σ², shift)], "delta" | "beta", argument): fuzz-domain calls once slow (issue 12).
CASES = [
    (
        "5 comp. split chain, deep delta",
        [("486/40", 1), ("384/32", 1), ("15700/33", 1), ("1280/19", -2), ("2067/29", -3)],
        "delta",
        "1005/46",
    ),
    ("3 comp. sandwich beta(1-1e-20)", [("2128/5", 2), ("6221/43", -1), ("11339/86", -1)], "beta", "1-1e-20"),
    ("4 comp. sandwich beta", [("104/45", 2), ("21702/79", 1), ("262/11", -2), ("5807/41", 2)], "beta", "37913/200000"),
    ("4 comp. sandwich beta(1/10)", [("244/23", -2), ("739/3", -1), ("295/8", 2), ("2118/95", -2)], "beta", "1/10"),
    ("2 comp. exact beta", [("349/70", 2), ("191/50", -2)], "beta", "185/841"),
    (
        "6 comp. sandwich beta",
        [("37251/89", 2), ("33889/87", 3), ("5118/31", 3), ("9787/52", -2), ("31687/96", 3), ("29036/67", 2)],
        "beta",
        "224947/250000",
    ),
    ("3 comp. trapezoid-leaf beta(1e-30)", [("1463/4", 3), ("24983/88", -2), ("27664/93", -3)], "beta", "1e-30"),
    ("3 comp. trapezoid-leaf beta(1-1e-20)", [("216", 3), ("1365/29", -3), ("772/31", -2)], "beta", "1-1e-20"),
    ("3 comp. trapezoid-leaf delta", [("7654/65", 2), ("6", -2), ("689/62", 3)], "delta", "74/25"),
]


def _exact(text: str) -> Fraction:
    return 1 - Fraction(text[2:]) if text.startswith("1-") else Fraction(text)


def _row(i, kind, arg, comps, dt, status, r) -> dict:
    return {
        "i": i,
        "case": "",
        "kind": kind,
        "arg": str(arg),
        "components": ";".join(f"{s2}:{s}" for s2, s in comps),
        "seconds": round(dt, 4),
        "status": status,
        "tolerance_met": "" if r is None else bool(r.tolerance_met),
        "value": "" if r is None else f"{float(r.value):.6e}",
        "error": "" if r is None else f"{float(r.error):.3e}",
        "baseline_s": "",
    }


def run_cases(limit: float, baseline: bool, log=print) -> list[dict]:
    """:data:`CASES`, each in a fresh composition; rows as in :func:`run`."""
    rows = []
    for i, (name, comps_text, kind, arg_text) in enumerate(CASES):
        comps = [(Fraction(s2), s) for s2, s in comps_text]
        arg = _exact(arg_text)
        dt, status, r = timed_call(comps, kind, arg, limit)
        row = _row(i, kind, arg, comps, dt, status, r)
        row["case"] = name
        if baseline:
            row["baseline_s"] = round(timed_call(comps, kind, arg, limit, BASELINE_CONFIG)[0], 4)
        rows.append(row)
        log(f"{name:40s} {dt:7.2f} s {status} {row['value']} ± {row['error']} met={row['tolerance_met']}")
    return rows


class _Timeout(Exception):
    pass


def _alarm(*_):
    raise _Timeout


def draw(rng: random.Random, eps_max: float):
    """One composition [(σ², shift)], ε and α from the fuzz domain."""

    def sigma2():
        while True:
            s = Fraction(rng.randint(1, 50_000), rng.randint(1, 100))
            if Fraction(1, 5) <= s <= 500:
                return s

    comps = [(sigma2(), rng.choice([-3, -2, -1, 1, 2, 3])) for _ in range(rng.randint(1, 6))]
    eps = Fraction(rng.randint(0, round(eps_max * 100)), 100)
    alpha = rng.choice([Fraction(rng.randint(0, 10**6), 10**6), Fraction(1, 10**30), 1 - Fraction(1, 10**20)])
    return comps, eps, alpha


def timed_call(comps, kind: str, arg, limit: float, config: EngineConfig | None = None):
    """(seconds, status, result or None): status "ok", "timeout" or "error: …"."""
    mechs = [DiscreteGaussian(s2, shift=s) for s2, s in comps]
    c = Composition(mechs) if config is None else Composition(mechs, config=config)
    f = c.delta if kind == "delta" else c.tradeoff
    old = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, limit)
    t0 = time.perf_counter()
    try:
        r = f(arg)
        return time.perf_counter() - t0, "ok", r
    except _Timeout:
        return time.perf_counter() - t0, "timeout", None
    except Exception as e:  # a crash is a finding of the survey, not a crash of the survey
        return time.perf_counter() - t0, f"error: {type(e).__name__}: {e}"[:200], None
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def run(n: int, seed: int, eps_max: float, limit: float, baseline: bool, log=print) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        comps, eps, alpha = draw(rng, eps_max)
        for kind, arg in (("delta", eps), ("beta", alpha)):
            dt, status, r = timed_call(comps, kind, arg, limit)
            row = _row(i, kind, arg, comps, dt, status, r)
            if baseline:
                row["baseline_s"] = round(timed_call(comps, kind, arg, limit, BASELINE_CONFIG)[0], 4)
            rows.append(row)
            log(f"{i:3d} {kind:5s} {dt:7.2f} s {status} {row['value']} met={row['tolerance_met']}")
    return rows


def summarise(rows: list[dict], limit: float) -> dict:
    out = {}
    for kind in ("delta", "beta", "all"):
        sel = [r for r in rows if kind == "all" or r["kind"] == kind]
        secs = sorted(r["seconds"] for r in sel)
        if not secs:
            continue
        s = {
            "calls": len(sel),
            "median_s": statistics.median(secs),
            "p90_s": secs[min(len(secs) - 1, math.ceil(0.9 * len(secs)) - 1)],
            "max_s": secs[-1],
            f"over_{GOAL_S:g}s": sum(x > GOAL_S for x in secs),
            "timeouts": sum(r["status"] == "timeout" for r in sel),
            "errors": sum(r["status"].startswith("error") for r in sel),
            "flagged": sum(r["tolerance_met"] is False for r in sel),
            "limit_s": limit,
        }
        base = [(r["baseline_s"], r["seconds"]) for r in sel if r["baseline_s"] != ""]
        if base:
            s["baseline_max_s"] = max(b for b, _ in base)
            s["baseline_total_s"] = sum(b for b, _ in base)
            s["total_s"] = sum(x for _, x in base)
            s["speedup_total"] = s["baseline_total_s"] / max(s["total_s"], 1e-9)
        out[kind] = s
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--n", type=int, default=40, help="compositions (two calls each)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--eps-max", type=float, default=50.0)
    p.add_argument("--limit", type=float, default=30.0, help="seconds per call before it counts as a timeout")
    p.add_argument("--baseline", action="store_true", help="also time each call with the speed switches off")
    p.add_argument(
        "--out",
        default=None,
        help="CSV path (default reports/benchmarks/fuzz_domain.csv, with --cases fuzz_cases.csv)",
    )
    p.add_argument("--cases", action="store_true", help="time the named regression cases instead of random draws")
    p.add_argument("--quiet", action="store_true")
    args = p.parse_args(argv)
    log = (lambda *a: None) if args.quiet else print
    if args.cases:
        rows = run_cases(args.limit, args.baseline, log=log)
    else:
        rows = run(args.n, args.seed, args.eps_max, args.limit, args.baseline, log=log)
    summary = summarise(rows, args.limit)
    summary["settings"] = {
        "cases": args.cases,
        "n": args.n,
        "seed": args.seed,
        "eps_max": args.eps_max,
        "baseline": args.baseline,
    }
    print(
        f"{'calls':>12s} {'n':>4s} {'median s':>9s} {'p90 s':>7s} {'max s':>7s} {'>2 s':>5s} "
        f"{'flagged':>8s} {'t/o':>4s} {'err':>4s}"
    )
    for kind in ("delta", "beta", "all"):
        if kind in summary:
            s = summary[kind]
            print(
                f"{kind:>12s} {s['calls']:4d} {s['median_s']:9.3f} {s['p90_s']:7.2f} {s['max_s']:7.2f} "
                f"{s[f'over_{GOAL_S:g}s']:5d} {s['flagged']:8d} {s['timeouts']:4d} {s['errors']:4d}"
                + (
                    f"   baseline max {s['baseline_max_s']:.2f} s, total speed-up {s['speedup_total']:.2f}x"
                    if "speedup_total" in s
                    else ""
                )
            )
    out = Path(args.out or f"reports/benchmarks/{'fuzz_cases' if args.cases else 'fuzz_domain'}.csv")
    write_results(out, rows, COLUMNS, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
