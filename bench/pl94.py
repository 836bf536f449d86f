"""PL94 persons exactly (issue 17): the proxy pair's δ at the promised ε and the all-pairs sweep at
one ε, before (the coarse sandwich: ``EngineConfig(ellipsoid_sieve=False)``), after (the default
engines, with the ellipsoid node finder of :mod:`accountant.diophantine`) and as a release's pair job
integrates it (``release``: :func:`accountant.composition.thorough_composition`, the dearer exact
fallbacks of ``EXHAUSTIVE_CONFIG`` where the defaults give the sandwich), in one run.

    python -m bench.pl94 [--workers 2] [--limit-pairs K] [--skip-before-pairs] [--configs a,b] [--out CSV]

Every δ is asked for 1e-35 absolute / 1e-20 relative (the accountant's defaults); a row records
the pair, the configuration, δ's interval, whether the tolerance was met, the engine kind and the
time.  The sweep computes δ(ε_BS(1e-10)) of each of the 528 pairs of PL94 persons' 32 path
patterns in a process pool (``--workers``) — the work of ``census-plb pairs`` without its cache.
Prints a table and writes ``--out`` (default ``reports/benchmarks/pl94.csv``) and a JSON summary.
"""

from __future__ import annotations

import argparse
import functools
import time
from concurrent.futures import ProcessPoolExecutor
from functools import partial

import mpmath

from bench.output import write_results

COLUMNS = ["what", "config", "pair", "delta_lower", "delta_upper", "tolerance_met", "engine", "seconds"]
CONFIGS = ("before", "after", "release")


def _composition(config_name: str):
    from accountant import Composition
    from accountant.engine import DEFAULT_CONFIG, EngineConfig

    if config_name == "release":  # what a release's pair job integrates (the dearer fallbacks where needed)
        from accountant.composition import thorough_composition

        return thorough_composition
    config = EngineConfig(ellipsoid_sieve=False) if config_name == "before" else DEFAULT_CONFIG
    return partial(Composition, config=config)


def _eps() -> mpmath.mpf:
    from accountant import zcdp
    from optimizer.census.allocation import load_builtin

    rho = load_builtin("pl94-persons").total_rho
    return zcdp.get_conversion("bun-steinke").epsilon(rho, mpmath.mpf("1e-10"))


@functools.lru_cache(maxsize=1)
def _paths() -> dict:
    """PL94 persons' path patterns by index (once per worker process)."""
    from optimizer.census.allocation import load_builtin
    from optimizer.jobs.confirm import paths_of

    return {p.index: p for p in paths_of(load_builtin("pl94-persons"))}


def _row(what: str, config_name: str, pair: str, build, eps_text: str) -> dict:
    """One measurement: build the composition with ``config_name``'s engines and time δ(ε)."""
    t0 = time.perf_counter()
    comp = build(_composition(config_name))
    d = comp.delta(mpmath.mpf(eps_text), tol=1e-35, rtol=1e-20)
    seconds = time.perf_counter() - t0
    return {
        "what": what,
        "config": config_name,
        "pair": pair,
        "delta_lower": mpmath.nstr(d.lower, 15),
        "delta_upper": mpmath.nstr(d.upper, 15),
        "tolerance_met": bool(d.tolerance_met),
        "engine": comp._engine.name,
        "seconds": round(seconds, 3),
    }


def _pair_row(config_name: str, pair: tuple[int, int], eps_text: str) -> dict:
    from optimizer.census.pairs import pair_composition

    paths = _paths()
    build = partial(pair_composition, paths[pair[0]], paths[pair[1]])
    return _row("pair", config_name, f"{pair[0]}-{pair[1]}", build, eps_text)


def _proxy_row(config_name: str, eps_text: str) -> dict:
    from accountant import DiscreteGaussian
    from optimizer.census.allocation import load_builtin
    from optimizer.search.proxy import _full_path_rho

    mechs = [DiscreteGaussian.from_rho(r) for r in _full_path_rho(load_builtin("pl94-persons"))] * 2
    return _row("proxy", config_name, "proxy", lambda make: make(mechs), eps_text)


def _sweep(config_name: str, pairs: list[tuple[int, int]], eps_text: str, workers: int) -> tuple[list[dict], float]:
    t0 = time.perf_counter()
    with ProcessPoolExecutor(max_workers=workers) as pool:
        rows = list(pool.map(partial(_pair_row, config_name, eps_text=eps_text), pairs, chunksize=4))
    return rows, time.perf_counter() - t0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.pl94", description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--limit-pairs", type=int, default=None, help="first K pairs only (a partial sweep)")
    ap.add_argument("--skip-before-pairs", action="store_true", help="no sweep with the sandwich (before)")
    ap.add_argument(
        "--configs",
        default=",".join(CONFIGS),
        help="configurations to run, of before (sandwich), after (default engines), release (the pair job's: "
        "accountant.engine.EXHAUSTIVE_CONFIG where the defaults give the sandwich)",
    )
    ap.add_argument("--out", default="reports/benchmarks/pl94.csv")
    args = ap.parse_args(argv)
    from optimizer.census.allocation import load_builtin
    from optimizer.jobs.confirm import paths_of

    eps_text = mpmath.nstr(_eps(), 40)
    indices = sorted(p.index for p in paths_of(load_builtin("pl94-persons")))
    pairs = [(i, j) for a, i in enumerate(indices) for j in indices[a:]]
    if args.limit_pairs:
        pairs = pairs[: args.limit_pairs]
    rows: list[dict] = []
    summary: dict = {"eps": eps_text, "n_pairs": len(pairs), "workers": args.workers}
    configs = [c for c in args.configs.split(",") if c]
    unknown = sorted(set(configs) - set(CONFIGS))
    if unknown:
        ap.error(f"--configs: unknown {unknown}; choose from {', '.join(CONFIGS)}")
    for name in configs:
        row = _proxy_row(name, eps_text)
        rows.append(row)
        summary[f"proxy_{name}"] = row
        print(
            f"proxy {name:6s}: δ in [{row['delta_lower']}, {row['delta_upper']}]  {row['seconds']} s  ({row['engine']})"
        )
    for name in configs:
        if name == "before" and args.skip_before_pairs:
            continue
        sweep, seconds = _sweep(name, pairs, eps_text, args.workers)
        rows.extend(sweep)
        misses = sum(not r["tolerance_met"] for r in sweep)
        worst = max(sweep, key=lambda r: mpmath.mpf(r["delta_upper"]))
        summary[f"sweep_{name}"] = {
            "seconds": round(seconds, 1),
            "pairs": len(sweep),
            "tolerance_misses": misses,
            "engines": sorted({r["engine"] for r in sweep}),
            "largest_upper": worst,
        }
        print(
            f"sweep {name:6s}: {len(sweep)} pairs in {seconds:.1f} s on {args.workers} workers; "
            f"{misses} tolerance misses; largest δ upper {worst['delta_upper']} (pair {worst['pair']})"
        )
    if "sweep_before" in summary and "sweep_after" in summary:
        summary["sweep_ratio_after_to_before"] = round(
            summary["sweep_after"]["seconds"] / summary["sweep_before"]["seconds"], 3
        )
    if "sweep_after" in summary and "sweep_release" in summary:
        summary["sweep_ratio_release_to_after"] = round(
            summary["sweep_release"]["seconds"] / summary["sweep_after"]["seconds"], 3
        )
    write_results(args.out, rows, COLUMNS, summary)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
