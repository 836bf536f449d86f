"""Whole-release profile: certified δ(ε) of every neighbouring pair of spine paths, worst case.

Runs one job per pair of the release's path patterns (cached, resumable, parallel), then
reports the maximum δ over pairs at each ε, the pair attaining it (``certain`` when no other
pair's interval overlaps it), the main pair [13, 13] and the zCDP claim beside it.  The
default ε grid is the paper's: ε_BS(δ_z) = ρ + 2√(ρ ln(1/δ_z)) for its 42 δ_z values.

Path patterns: DHC persons use the 43 published patterns; other DHC runs use the same
patterns (their own are not published); PL94 runs use every pattern the bypass rule allows
(a conservative superset).  The output's ``note`` says which.

examples:
  census-plb pairs --allocation dhc-persons --eps 26.340588852722324353781974500154992685 --json
  census-plb pairs --allocation dhc-persons --deltas 1e-10,1e-5 --limit-pairs 20
  census-plb pairs --allocation pl94-units --workers 2 --out reports/pl94-units-pairs
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from accountant.tolerance import DELTA

HELP = "whole-release profile: max certified δ(ε) over all pairs of spine paths"


def configure(p) -> None:
    p.add_argument(
        "--allocation",
        required=True,
        metavar="NAME|FILE",
        help="built-in allocation name (e.g. dhc-persons) or a CSV/TOML allocation file",
    )
    p.add_argument("--eps", default="", help="comma-separated ε values (decimal strings are exact)")
    p.add_argument(
        "--deltas",
        default="",
        help="comma-separated δ_zCDP values, turned into ε = ρ + 2√(ρ ln(1/δ)) (Bun–Steinke, "
        "as in the paper); default grid: the paper's 42 values",
    )
    p.add_argument(
        "--tradeoff",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also compute each pair's trade-off curve and the lower convex envelope",
    )
    p.add_argument("--tradeoff-points", type=int, default=901, help="trade-off thresholds per pair (default 901)")
    p.add_argument("--tol", type=float, default=DELTA.absolute, help=f"absolute δ tolerance (default {DELTA.absolute})")
    p.add_argument(
        "--workers", type=int, default=None, help="local worker processes (default: all local cores, os.cpu_count())"
    )
    p.add_argument("--scheduler", default=None, metavar="ADDRESS", help="Dask scheduler address (optional extra)")
    p.add_argument(
        "--cache", default=None, metavar="DIR", help="job cache directory (default runs/pairs-cache/<allocation>)"
    )
    p.add_argument("--out", default=None, metavar="DIR", help="write <allocation>_pairs.csv, _worst.csv and .json here")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--wide", action="store_true", help="every column and the full note; default: output fits 100 columns"
    )
    p.add_argument("--limit-pairs", type=int, default=None, metavar="K", help="only the first K pairs (quick runs)")
    p.add_argument("--pair", action="append", default=[], metavar="I,J", help="only this pair (repeatable)")
    p.add_argument(
        "--quiet", "--no-progress", dest="no_progress", action="store_true", help="no progress output on stderr"
    )


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


#: largest ε accepted: δ(ε) of any release is far below 1e-300 there already (ε = 10^4 takes
#: seconds; 1e5 would not finish, 1e30 overflows the lattice thresholds)
EPS_MAX = 10**4
#: most trade-off thresholds per pair
TRADEOFF_POINTS_MAX = 10**5


def _exact(text: str, option: str):
    import re

    from accountant.exact import to_fraction

    shown = text if len(text) <= 40 else text[:40] + "…"
    m = re.search(r"[eE]([+-]?\d+)\s*$", text)
    if m and abs(int(m.group(1))) > 100_000:  # 10^(10^9) would never finish building
        raise ValueError(f"{option}: {shown} is outside the supported range (exponent {m.group(1)})")
    try:
        return to_fraction(text, name=option)
    except (TypeError, ValueError, ZeroDivisionError):
        raise ValueError(
            f"{option}: cannot parse {shown!r} as an exact decimal or fraction (e.g. 26.34 or 1e-10)"
        ) from None


def validate(args) -> None:
    """Check every option before any allocation is loaded or any job started (one-line errors
    naming the option and the value)."""
    import math

    from optimizer.jobs.runner import check_scheduler_address

    check_scheduler_address(args.scheduler)
    for e in _split(args.eps):
        value = _exact(e, "--eps")
        if not 0 <= value <= EPS_MAX:
            raise ValueError(f"--eps: {e} is outside the supported range [0, {EPS_MAX}]")
    for d in _split(args.deltas):
        value = _exact(d, "--deltas")
        if not 0 < value < 1:
            raise ValueError(f"--deltas: {d} must be in (0, 1) (a delta_zCDP value)")
    if not (math.isfinite(args.tol) and args.tol > 0):
        raise ValueError(f"--tol: must be a finite number > 0, got {args.tol:g}")
    if not 2 <= args.tradeoff_points <= TRADEOFF_POINTS_MAX:
        raise ValueError(
            f"--tradeoff-points: must be in [2, {TRADEOFF_POINTS_MAX}] (thresholds per pair's "
            f"trade-off curve), got {args.tradeoff_points}"
        )
    if args.limit_pairs is not None and args.limit_pairs < 1:
        raise ValueError(f"--limit-pairs must be >= 1, got {args.limit_pairs}")
    if args.workers is not None and args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")


def _load(spec: str):
    from optimizer.census.allocation import BUILTIN_NAMES, Allocation, load_builtin

    if spec in BUILTIN_NAMES:
        return spec, load_builtin(spec)
    path = Path(spec)
    if path.suffix.lower() in (".csv", ".toml") and path.is_file():
        alloc = Allocation.from_toml(path) if path.suffix.lower() == ".toml" else Allocation.from_csv(path)
        return path.stem, alloc
    if path.suffix.lower() in (".csv", ".toml"):
        raise FileNotFoundError(f"--allocation: no such file {spec!r}")
    raise ValueError(
        f"--allocation: unknown allocation {spec!r}; built-in names are {', '.join(BUILTIN_NAMES)}, "
        "or give a .csv/.toml file"
    )


def run(args) -> int:
    from optimizer.jobs.profile import release_patterns, release_profile, write_profile

    validate(args)
    name, alloc = _load(args.allocation)
    if args.out:  # a symlinked output is refused before any job runs (optimizer.atomic)
        from optimizer.atomic import check_writable

        for suffix in ("_pairs.csv", "_worst.csv", ".json"):
            check_writable(Path(args.out) / f"{name}{suffix}")
    if args.workers is None:
        args.workers = os.cpu_count() or 1
    if args.workers < 1:
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    eps, delta_zcdp = _eps_grid(args, alloc)
    only = _only_pairs(args)
    patterns, note = release_patterns(name, alloc)
    cache = args.cache or os.path.join("runs", "pairs-cache", name)
    import warnings

    from optimizer.jobs.profile import CacheDisagreementWarning

    with warnings.catch_warnings():  # said once below, from the summary
        warnings.simplefilter("ignore", CacheDisagreementWarning)
        prof = release_profile(
            alloc,
            patterns,
            eps or None,
            tol=args.tol,
            tradeoff=args.tradeoff,
            tradeoff_n=args.tradeoff_points,
            limit_pairs=args.limit_pairs,
            only_pairs=only,
            workers=args.workers,
            scheduler=args.scheduler,
            cache_dir=cache,
            progress=not args.no_progress,
            note=note,
            delta_zcdp=delta_zcdp,
            log=(lambda m: None) if args.no_progress else (lambda m: print(m, file=sys.stderr, flush=True)),
        )
    s = prof.summary
    s["allocation"] = name
    if not s["complete"]:
        s["note"] += f"; PARTIAL: {s['n_pairs']} of {s['n_pairs_all']} pairs (worst case over those only)"
    files = {}
    if args.out:
        files = {k: str(v) for k, v in write_profile(prof, args.out, stem=name).items()}
        s["files"] = files
    warning = tolerance_warning(s)
    cache_warning = cache_disagreement_warning(s)
    if args.json:
        print(json.dumps(s, indent=1, ensure_ascii=False))
        for w in (cache_warning, warning):
            if w:
                print(f"census-plb pairs: {w}", file=sys.stderr)
        return 0
    _print_grid(name, s, wide=bool(getattr(args, "wide", False)))
    for line in worst_pair_lines(s):
        print(line)
    print(exactness_line(s))
    if "tradeoff_envelope" in s:
        print(f"trade-off envelope: {s['tradeoff_envelope']['n_points']} vertices")
    print(fresh_line(s))
    if cache_warning:
        print(cache_warning)
    if warning:
        print(warning)
    for _k, v in files.items():
        print(f"wrote {v}")
    print(f"({s['seconds']:.2f} s)")
    return 0


def _eps_grid(args, alloc) -> tuple[list[str], list[str] | None]:
    """The ε grid of --eps and --deltas (ε = ρ + 2√(ρ ln(1/δ)) of each δ_zCDP), checked, and the δ_zCDP
    each ε came from ("" for a given ε; ``None`` without --deltas)."""
    from optimizer.jobs.profile import eps_from_delta_zcdp

    eps, deltas = _split(args.eps), _split(args.deltas)
    delta_zcdp = None
    if deltas:
        delta_zcdp = deltas
        eps = eps + eps_from_delta_zcdp(alloc.total_rho, deltas)
        if _split(args.eps):
            delta_zcdp = [""] * len(_split(args.eps)) + deltas
    for e in eps:
        try:
            float(e)
        except ValueError:
            raise ValueError(f"--eps: cannot parse {e!r} as a decimal number") from None
    return eps, delta_zcdp


def _only_pairs(args) -> list[tuple[int, int]] | None:
    """The --pair I,J options, parsed (``None``: every pair)."""
    if not args.pair:
        return None
    only = []
    for text in args.pair:
        try:
            i, j = (int(x) for x in text.split(","))
        except ValueError:
            raise ValueError(f"--pair: expected I,J, got {text!r}") from None
        only.append((i, j))
    return only


def _print_grid(name: str, s: dict, wide: bool = False) -> None:
    """The text table: per ε the worst pair (named only when certain), max δ, the main pair, the claim
    (``wide``: also the midpoint and its error, all digits; else it fits 100 columns)."""
    import textwrap

    from accountant.decimals import decimal_string

    def short(x: str | None, k: int, mode: str = "nearest") -> str:
        return "" if not x else decimal_string(x, k, mode)

    print(f"{name}: {s['n_pairs']} of {s['n_pairs_all']} pairs of {s['n_paths']} paths, rho = {s['rho']}")
    print(f"note: {s['note']}" if wide else textwrap.fill(f"note: {s['note']}", 100, subsequent_indent="  "))
    if not wide:
        print(
            f"{'eps':>14}  {'worst pair':>10}  {'max delta upper (up)':>20}  {'main [13,13]':>15}  "
            f"{'zCDP claim (BS)':>15}  certain  tol met"
        )
        for g in s["grid"]:
            pair = "-".join(map(str, g["worst_pair"])) if g["certain"] else "none"
            tol_met = "yes" if g.get("tolerance_met", True) else f"NO ({g.get('n_tolerance_misses', '?')})"
            print(
                f"{g['eps'] if len(g['eps']) <= 14 else decimal_string(g['eps'], 10, 'nearest', notation='auto'):>14}  "
                f"{pair:>10}  "
                f"{short(g['worst_delta_upper'], 12, 'up'):>20}  {short(g['main_pair_delta'], 10):>15}  "
                f"{short(g['zcdp_claim_delta'], 6, 'up'):>15}  "
                f"{'yes' if g['certain'] else 'no (' + str(len(g['candidates'])) + ')':>7}  {tol_met}"
            )
        return
    print(
        f"{'eps':>22}  {'worst pair':>10}  {'max delta (midpoint)':>27}  {'± error (up)':>12}  "
        f"{'max delta upper (up)':>27}  {'main [13,13]':>16}  {'zCDP claim (BS)':>15}  certain  tol met"
    )
    for g in s["grid"]:
        # a pair is named the worst only when certain (issue 35 item 4)
        pair = "-".join(map(str, g["worst_pair"])) if g["certain"] else "none"
        eps_text = g["eps"] if len(g["eps"]) <= 22 else decimal_string(g["eps"], 16, "nearest", notation="auto")
        tol_met = "yes" if g.get("tolerance_met", True) else f"NO ({g.get('n_tolerance_misses', '?')})"
        print(
            f"{eps_text:>22}  {pair:>10}  {g['worst_delta']:>27}  {g['worst_delta_error']:>12}  "
            f"{g['worst_delta_upper']:>27}  {short(g['main_pair_delta'], 10):>16}  "
            f"{short(g['zcdp_claim_delta'], 6, 'up'):>15}  "
            f"{'yes' if g['certain'] else 'no (' + str(len(g['candidates'])) + ')':>7}  {tol_met}"
        )


def worst_pair_lines(s: dict, listed: int = 5) -> list[str]:
    """The ε at which no pair is certainly the worst (issue 35 item 4): per ε, the pairs tied
    within their bounds and the release's δ as an interval; empty when every ε has a certain
    worst pair."""
    out = []
    unsure = [g for g in s["grid"] if not g.get("worst_pair_certain", g["certain"])]
    for g in unsure[:listed]:
        tied = g.get("worst_pairs_tied") or g["candidates"]
        names = ", ".join("-".join(map(str, p)) for p in tied[:8]) + (" …" if len(tied) > 8 else "")
        lo, hi = g.get("release_delta_interval") or (g["worst_delta_lower"], g["worst_delta_upper"])
        out.append(
            f"no certain worst pair at eps = {g['eps'][:22]}: {len(tied)} pairs tied within their bounds ({names}); "
            f"release delta in [{lo}, {hi}]"
        )
    if len(unsure) > listed:
        out.append(f"(and {len(unsure) - listed} more eps without a certain worst pair)")
    return out


def exactness_line(s: dict) -> str:
    """One line: pairs planned non-exact by the screen before the run, and pairs that missed their
    tolerance in it (issue 35 item 2)."""
    planned = s.get("pairs_not_exact_planned")
    seen = s.get("pairs_not_exact", 0)
    head = "exactness: " + ("not screened" if planned is None else f"{planned} pair(s) planned non-exact")
    return f"{head}, {seen} of {s['n_pairs']} pair(s) missed their tolerance"


def fresh_line(s: dict) -> str:
    """One line saying where the reported worst pair(s) come from (never a cached number alone)."""
    again = s.get("worst_pairs_recomputed") or []
    listed = ", ".join("-".join(map(str, p)) for p in again[:10]) + (" …" if len(again) > 10 else "")
    if not s.get("worst_pairs_fresh"):
        return "worst pair(s): read from the cache, not recomputed"
    if again:
        return (
            f"worst pair(s) recomputed fresh: {len(again)} cached candidate pair(s) recomputed without "
            f"the cache ({listed})"
        )
    return "worst pair(s) recomputed fresh: every candidate was computed by this run (no cached value used)"


def cache_disagreement_warning(s: dict) -> str | None:
    """One warning line naming the pairs whose cached result a fresh computation contradicted."""
    bad = s.get("cache_disagreements") or []
    if not bad:
        return None
    pairs = sorted({tuple(b["pair"]) for b in bad})
    b = bad[0]
    listed = ", ".join(f"[{i}, {j}]" for i, j in pairs[:10]) + (" …" if len(pairs) > 10 else "")
    return (
        f"warning: the cached result of {len(pairs)} pair(s) ({listed}) disagrees with a fresh computation "
        f"(pair [{b['pair'][0]}, {b['pair'][1]}] at eps = {b['eps'][:20]}: cached delta in [{b['cached'][0]}, "
        f"{b['cached'][1]}], fresh [{b['fresh'][0]}, {b['fresh'][1]}]; cache file {b['cache_file']}); the fresh "
        "values are reported: the cache entries are wrong (edited and resealed, or written by faulty code), delete them"
    )


def tolerance_warning(s: dict) -> str | None:
    """One warning line naming the (pair, ε) results and trade-off curves of a profile summary
    that missed their requested error, with the achieved error; ``None`` when all met it."""
    parts = []
    n = s.get("n_tolerance_misses", 0)
    if n:
        listed = "; ".join(
            f"[{m['pair'][0]}, {m['pair'][1]}] at eps = {m['eps']}: error {m['delta_error']}"
            for m in s.get("tolerance_misses", [])[:5]
        )
        more = n - min(5, len(s.get("tolerance_misses", [])))
        parts.append(
            f"{n} pair result(s) missed tol {s.get('tol', 0):g} / rtol {s.get('rtol', 0):g}: {listed}"
            + (f"; and {more} more" if more > 0 else "")
        )
    t = s.get("tradeoff_tolerance_misses") or []
    if t:
        listed = ", ".join(f"[{i}, {j}]" for i, j in t[:10]) + (f" and {len(t) - 10} more" if len(t) > 10 else "")
        parts.append(f"trade-off curves of {len(t)} pair(s) missed tradeoff_tol {s.get('tradeoff_tol', 0):g}: {listed}")
    if not parts:
        return None
    return "warning: tolerance not met (the intervals are still rigorous, only wider than requested): " + " | ".join(
        parts
    )
