"""Which allocation shapes the exact engines certify (issue 35 item 1, issue 17): a reach survey.

    python -m bench.exact_reach [--pairs 13-13,6-6,10-31,20-41] [--seed 2] [--out CSV]
    python -m bench.exact_reach --snapped [--out JSON]

The optimizer's proposals give every query its own ρ'_q; the Bureau's allocations give whole
groups of queries one ρ (all 13 US queries 73/10000).  The pair lattices Y = Σ b_k X_k of
:mod:`accountant.lattice` then differ in how many distinct weights they carry, and the engine
chooser (:func:`accountant.choose.make_engine`) falls back to the flagged coarse sandwich when
the exact lattice would keep too many nodes.  This survey perturbs the built-in DHC-persons
allocation in controlled ways (:data:`VARIANTS`: per-geolevel factors k/10 or k/1000, per-query
integer multipliers ≤ 3 or ≤ 10, per-query factors k/10 or k/100, per-query jitter of the
1/10^4 grid, the grid 1/10^5 with distinct values, and a two-level grid: geolevel totals on
R/K, per-query shares on 1/D within each level) and computes one certified δ(26.34) per
(variant, pair) at the default tolerances (1e-35 absolute, 1e-20 relative), reporting the engine
that answered, whether the tolerance was met and the time.

Why the totals matter: a bypassed geolevel's budget A is merged into the present level above it,
scaling that level's queries by (T + A)/T (:func:`optimizer.census.spine.path_allocation`), so the pair
weights carry the level totals T_g in their denominators.  Measured 2026-12-06 (pairs 13-13, 6-6,
10-31, 20-41, 5-8): per-query values that leave the totals arbitrary (jitter ±3 on 1/10^4, or
distinct on 1/10^5) put every pair but the proxy on the coarse sandwich, while level totals on
R/K with shares on 1/D stay exact for K·D up to about 5·10^7 (K = 2000, D = 10^4: all exact;
K = D = 10^4: all coarse).  Random shapes, not the optimizer's: its guarded optimum on that grid
still left pairs 10-31 and 6-10 coarse (kept-node estimate above 10^9), and rounding it cost
7·10^-4 of the objective (the guard's ceilings on every bound query), above issue 35's 10^-4.

Prints a table and writes ``--out`` (CSV, one row per call) and a JSON summary next to it.

``--snapped`` (issue 35 item 1) starts from the optimizer's own proposal instead: the guarded convex
optimum of the default scenario (mean relative variance under the Pareto guard, calibrated on the
proxy), snaps its raised budgets (those above production) to absolute grids 1/10^3 … 1/10^5 and to
k/m of the geolevel's production budget, and screens all 946 pairs of each
(:func:`optimizer.jobs.exactness.screen_pairs`: the planned engine, nothing integrated); it also solves
the optimum with one factor per geolevel (shares stay the production's) and reports its objective
against the per-query optimum at the same total.  Measured 2026-12-06: the grids leave 513, 800,
813 pairs coarse, k/10, k/100, k/1000 leave 393, 848, 924; one factor per geolevel costs 2.5 % of the
objective (0.73097 vs 0.71294).  Writes ``--out`` (default ``reports/benchmarks/exact_snapped.json``).
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import random
import time
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

from optimizer.atomic import atomic_write_text
from optimizer.census.allocation import Allocation, load_builtin
from optimizer.census.pairs import pair_composition
from optimizer.jobs.confirm import paths_of
from optimizer.search.calibrate import _apply

COLUMNS = ["variant", "pair", "engine", "tolerance_met", "seconds", "delta_upper"]
EPS = Fraction("26.34")
DEFAULT_PAIRS = ((13, 13), (6, 6), (10, 31), (20, 41))


def _variants(alloc: Allocation, rng: random.Random) -> dict[str, Callable[[], Allocation]]:
    items = list(alloc.items())
    geos = sorted({g for g, _, _ in items})

    def per_geo(den: int) -> Allocation:
        f = {g: Fraction(rng.randint(den // 2, 2 * den), den) for g in geos}
        return _apply(alloc, [r * f[g] for g, _, r in items])

    def per_query(make: Callable[[], Fraction]) -> Allocation:
        return _apply(alloc, [r * make() for _, _, r in items])

    def jitter(k: int, j: int) -> Allocation:
        return _apply(
            alloc, [Fraction(max(1, k * int(r * 10**4) + rng.randint(-j, j)), k * 10**4) for _, _, r in items]
        )

    def two_level(k_steps: int, d_steps: int) -> Allocation:
        # level totals on the grid R/K (about the Bureau's shares ±20 %), per-query distinct
        # shares on the grid 1/D within each level
        total, out = alloc.total_rho, []
        for lv in alloc.levels:
            k = max(1, round(lv.total / total * k_steps * Fraction(rng.randint(80, 120), 100)))
            w = [r * rng.randint(50, 150) for r in lv.rho]
            s = [Fraction(round(x / sum(w) * d_steps), d_steps) for x in w]
            s[-1] = Fraction(1) - sum(s[:-1], Fraction(0))
            out += [Fraction(k) * total / k_steps * q for q in s]
        return _apply(alloc, out)

    return {
        "baseline (Bureau)": lambda: alloc,
        "two-level grid K=2000, D=10^4": lambda: two_level(2000, 10**4),
        "two-level grid K=1000, D=3*10^4": lambda: two_level(1000, 3 * 10**4),
        "two-level grid K=10^4, D=10^4": lambda: two_level(10**4, 10**4),
        "per-geolevel factor k/10": lambda: per_geo(10),
        "per-geolevel factor k/1000": lambda: per_geo(1000),
        "per-query integer x <= 3": lambda: per_query(lambda: Fraction(rng.randint(1, 3))),
        "per-query integer x <= 10": lambda: per_query(lambda: Fraction(rng.randint(1, 10))),
        "per-query factor k/10": lambda: per_query(lambda: Fraction(rng.randint(10, 20), 10)),
        "per-query factor k/100": lambda: per_query(lambda: Fraction(rng.randint(100, 200), 100)),
        "per-query jitter +-3 on 1/10^4": lambda: jitter(1, 3),
        "per-query distinct on 1/10^5": lambda: jitter(10, 50),
    }


def survey(pairs=DEFAULT_PAIRS, seed: int = 2, log=print) -> list[dict]:
    """One certified δ(26.34) per (variant, pair); rows of :data:`COLUMNS`."""
    from accountant.decimals import outward

    rng = random.Random(seed)
    rows = []
    for name, make in _variants(load_builtin("dhc-persons"), rng).items():
        paths = {p.index: p for p in paths_of(make())}
        for i, j in pairs:
            comp = pair_composition(paths[i], paths[j])
            t0 = time.perf_counter()
            d = comp.delta(EPS)
            dt = time.perf_counter() - t0
            engine = getattr(d.diagnostics, "engine", "?")
            rows.append(
                {
                    "variant": name,
                    "pair": f"{i}-{j}",
                    "engine": engine,
                    "tolerance_met": bool(d.tolerance_met),
                    "seconds": round(dt, 4),
                    "delta_upper": outward(d.upper, +1, 12),
                }
            )
            log(f"{name:34s} {i:2d}-{j:<2d} {engine:10s} {'exact' if d.tolerance_met else 'NOT MET':8s} {dt:7.3f} s")
    return rows


def snapped_survey(log=print) -> dict:
    """The ``--snapped`` survey (see the module docstring): ``{"variants": {name: pairs not exact},
    "objective": {...}}``."""
    import cvxpy as cp
    import numpy as np

    from optimizer.census.allocation import GeolevelBudget
    from optimizer.jobs.exactness import screen_pairs
    from optimizer.pipeline.stages import spec_for
    from optimizer.search import objectives as O
    from optimizer.search import target_from_allocation, uniform_rescale
    from optimizer.search.guarded import calibrated_optimum

    spec = spec_for(scenario="dhc-persons")
    alloc, weights = spec.allocation, spec.weights
    target = target_from_allocation(alloc, delta=spec.delta, conversion=spec.conversion)
    c_u, _, _ = uniform_rescale(alloc, target)
    obj = O.get_objective(spec.objective)
    start = calibrated_optimum(
        alloc,
        target,
        None,
        alloc.total_rho * c_u,
        O.ParetoGuard(),
        solve=lambda t, lo: obj.optimum(alloc, weights, t, lo),
    )
    shape = start.shape

    def snapped(fn) -> Allocation:
        levels = tuple(
            GeolevelBudget(lv.name, lv.queries, tuple(fn(r, b) for r, b in zip(lv.rho, blv.rho)))
            for lv, blv in zip(shape.levels, alloc.levels)
        )
        return Allocation(levels, "snapped", "", alloc.run_type)

    def on_grid(g: int) -> Callable[[Fraction, Fraction], Fraction]:
        return lambda r, b: r if r == b else Fraction(round(r * g), g)

    def of_production(m: int) -> Callable[[Fraction, Fraction], Fraction]:
        return lambda r, b: r if r == b else b * Fraction(round(r / b * m), m)

    variants: dict[str, Callable[[Fraction, Fraction], Fraction]] = {
        "proposal (grid 1/10^5, as the optimizer makes it)": lambda r, b: r,
        **{f"raised values on 1/{g}": on_grid(g) for g in (10**3, 10**4)},
        **{f"raised values on k/{m} of production": of_production(m) for m in (10, 100, 1000)},
    }
    out: dict[str, Any] = {"variants": {}}
    for name, fn in variants.items():
        screen = screen_pairs(snapped(fn))
        out["variants"][name] = {"pairs": screen.n_pairs, "not_exact": len(screen.not_exact)}
        log(f"{name:52s} {len(screen.not_exact):4d} of {screen.n_pairs} pairs not exact")
    # one factor per geolevel (t_g >= 1) vs one budget per query, at the proposal's total
    total = float(shape.total_rho)
    level_totals = np.array([float(lv.total) for lv in alloc.levels])
    n = np.array([len(lv.rho) for lv in alloc.levels])
    t = cp.Variable(len(n))
    per_level = cp.Problem(
        cp.Minimize(cp.sum(cp.multiply(n, cp.inv_pos(t))) / n.sum()), [level_totals @ t <= total, t >= 1]
    )
    per_level.solve()
    rho = np.array([float(r) for lv in alloc.levels for r in lv.rho])
    x = cp.Variable(len(rho))
    per_query = cp.Problem(
        cp.Minimize(cp.sum(cp.multiply(rho, cp.inv_pos(x))) / len(rho)), [cp.sum(x) <= total, x >= rho]
    )
    per_query.solve()
    out["objective"] = {
        "per_query_optimum": float(per_query.value),
        "one_factor_per_geolevel": float(per_level.value),
        "relative_cost": float(per_level.value / per_query.value - 1),
    }
    log(
        f"mean relative variance at the proposal's total: per query {per_query.value:.5f}, one factor per "
        f"geolevel {per_level.value:.5f} (+{100 * out['objective']['relative_cost']:.2f} %)"
    )
    return out


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--pairs", default=",".join(f"{i}-{j}" for i, j in DEFAULT_PAIRS), help="e.g. 13-13,6-6")
    p.add_argument("--seed", type=int, default=2)
    p.add_argument("--out", default=None, help="CSV path (JSON next to it); --snapped: the JSON path")
    p.add_argument("--snapped", action="store_true", help="survey snapped versions of the optimizer's proposal")
    args = p.parse_args(argv)
    if args.snapped:
        path = Path(args.out or "reports/benchmarks/exact_snapped.json")
        atomic_write_text(path, json.dumps(snapped_survey(), indent=2) + "\n")
        print(f"wrote {path}")
        return 0
    args.out = args.out or "reports/benchmarks/exact_reach.csv"
    pairs = tuple(tuple(int(x) for x in t.split("-")) for t in args.pairs.split(",") if t.strip())
    rows = survey(pairs, args.seed)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMNS)
    w.writeheader()
    w.writerows(rows)
    out = Path(args.out)
    atomic_write_text(out, buf.getvalue())
    summary: dict[str, dict[str, int]] = {}
    for r in rows:
        s = summary.setdefault(r["variant"], {"pairs": 0, "exact": 0})
        s["pairs"] += 1
        s["exact"] += int(r["tolerance_met"])
    atomic_write_text(out.with_suffix(".json"), json.dumps({"eps": str(EPS), "variants": summary}, indent=2) + "\n")
    print(f"wrote {out} and {out.with_suffix('.json')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
