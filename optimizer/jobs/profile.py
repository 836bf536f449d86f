"""The whole-release privacy profile: every neighbouring pair of spine paths, and the worst case.

A release's certified (ε, δ) curve is the maximum of δ over all pairs [M_i, M_j] of its spine
paths, and its trade-off curve the lower convex envelope of the pairs' curves
(:mod:`optimizer.census.pairs`; arXiv 2606.29835 §1.3).  This module turns that into jobs for
:func:`optimizer.jobs.runner.run_jobs` (parallel, cached, resumable), one job per pair, then
aggregates:

* :func:`pair_job` — the picklable job: exact ρ lists of two paths in, JSON-ready strings out
  (δ value/lower/upper/error per ε, optionally α/β per trade-off threshold, seconds, nodes);
* :func:`release_profile` — all pairs of an allocation's paths through the runner, then
  :func:`optimizer.census.pairs.worst_case` (max δ per ε, arg-max pair, ``certain`` flag),
  :func:`optimizer.census.pairs.lower_convex_envelope` (trade-off envelope of safe vertices), the
  main pair [13, 13] and the zCDP claim (Bun–Steinke and CKS) beside it;
* :func:`release_patterns` — which path patterns a built-in allocation is profiled with, and
  a note saying where they come from (only DHC persons' 43 patterns are published);
* :func:`write_profile` — tidy CSV + JSON summary, written atomically.

>>> release_patterns("pl94-units")[1][:44]
'real path patterns not published; conservati'
>>> len(default_eps_grid()), default_eps_grid()[DEFAULT_DELTA_ZCDP.index("1e-10")][:30]
(42, '26.340588852722324353781974500')
"""

from __future__ import annotations

import csv
import decimal
import hashlib
import io
import json
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path as FsPath
from types import SimpleNamespace
from typing import Any

import mpmath

from accountant import Certified, Composition, DiscreteGaussian, zcdp
from accountant.composition import thorough_composition
from accountant.decimals import decimal_ratio, decimal_string, exact_fraction, format_error_up, mid_decimal, outward
from accountant.tolerance import DELTA, TRADEOFF
from optimizer.atomic import atomic_write_text
from optimizer.census.allocation import Allocation, load_builtin
from optimizer.census.pairs import MAIN_PAIR, Path, lower_convex_envelope_decimal, paths_from_allocation, worst_case
from optimizer.census.pairs import pairs as all_pairs
from optimizer.census.spine import DHC_GEOLEVELS, Pattern, patterns_for
from optimizer.jobs import confirm, runner  # through the modules: settings and wrappers seen at call time
from optimizer.jobs.exactness import screen_paths, thorough_pairs
from optimizer.jobs.provenance import allocation_digest, check_run, code_version, seal
from optimizer.jobs.runner import job_id

__all__ = [
    "DEFAULT_DELTA_ZCDP",
    "CacheDisagreementWarning",
    "PairSpec",
    "ReleaseProfile",
    "certified_tolerance_met",
    "check_profile_files",
    "default_eps_grid",
    "eps_from_delta_zcdp",
    "epsilon_tolerance_met",
    "pair_job",
    "pair_specs",
    "recheck_worst_pairs",
    "release_patterns",
    "release_profile",
    "tolerance_target",
    "tradeoff_tolerance_met",
    "write_profile",
]

_DATA = FsPath(__file__).resolve().parents[1] / "data"
_EXACT_CSV = _DATA / "dhc_persons_exact_eps_delta.csv"
#: significant digits of decimal strings in job results
RESULT_DIGITS = 25
#: tolerance misses listed one by one in a profile summary (all are counted)
MAX_LISTED_MISSES = 20

NOTE_DHC_PERSONS = "published DHC-persons path patterns (43 paths, arXiv 2606.29835 code release)"
NOTE_DHC_OTHER = "real path patterns not published; DHC-persons patterns used (43 patterns of the same 8 DHC geolevels)"
NOTE_ALL = (
    "real path patterns not published; conservative superset used: every pattern the "
    "bypass rule allows (top geolevel present, any subset of the others)"
)


def _read_delta_zcdp() -> tuple[str, ...]:
    with open(_EXACT_CSV, encoding="utf-8", newline="") as fh:
        return tuple(row["delta_zcdp"] for row in csv.DictReader(fh))


#: the 42 δ_zCDP values of the paper's (ε, δ) table (optimizer/data/dhc_persons_exact_eps_delta.csv)
DEFAULT_DELTA_ZCDP: tuple[str, ...] = _read_delta_zcdp()


def eps_from_delta_zcdp(rho: Fraction, deltas: Iterable[str], digits: int = 50) -> list[str]:
    """ε_BS(δ) = ρ + 2√(ρ ln(1/δ)) as decimal strings with ``digits`` significant digits.

    Like the paper (no outward rounding): these are grid points, not claims.
    """
    rho = Fraction(rho)
    out = []
    with mpmath.workdps(digits + 10):
        r = mpmath.mpf(rho.numerator) / rho.denominator
        for d in deltas:
            dv = mpmath.mpf(str(d).strip())
            if not (0 < dv < 1):
                raise ValueError(f"δ_zCDP must lie in (0, 1), got {d!r}")
            out.append(mpmath.nstr(r + 2 * mpmath.sqrt(r * mpmath.log(1 / dv)), digits, strip_zeros=False))
    return out


def default_eps_grid(rho: Fraction = Fraction(24811, 5000)) -> list[str]:
    """The paper's 42 ε values: ε_BS(δ_z) for the δ_z of the published table (50 digits)."""
    return eps_from_delta_zcdp(rho, DEFAULT_DELTA_ZCDP)


# ====================================================================== the job
@dataclass(frozen=True)
class PairSpec:
    """One pair job.  Exact budgets as ``"p/q"`` strings; ε as decimal strings.

    Attributes:
        pair: (i, j) path indices, i ≤ j.
        rho_i, rho_j: the nonzero per-query budgets of paths i and j.
        eps: the ε grid.
        tol, rtol: δ tolerances passed to ``Composition.delta_curve``.
        tradeoff_n: number of trade-off thresholds (0 = no trade-off curve).
        tradeoff_tol: tolerance of the trade-off curve.
        exhaustive: a pair the default engines leave on the coarse sandwich gets the dearer exact
            fallbacks of ``EXHAUSTIVE_CONFIG`` (:func:`accountant.composition.thorough_composition`);
            False only to reproduce the defaults alone (a benchmark's baseline:
            :func:`optimizer.jobs.exactness.default_engines_only`).
    """

    pair: tuple[int, int]
    rho_i: tuple[str, ...]
    rho_j: tuple[str, ...]
    eps: tuple[str, ...]
    tol: float = DELTA.absolute
    rtol: float = DELTA.relative
    tradeoff_n: int = 0
    tradeoff_tol: float = TRADEOFF.absolute
    exhaustive: bool = True


def _get(spec: Any, key: str, default: Any = None) -> Any:
    if isinstance(spec, dict):
        return spec.get(key, default)
    return getattr(spec, key, default)


# exact directed decimal formatting lives in accountant.decimals; these names are kept for
# existing callers (tests/test_decimal_format.py)
_decimal = decimal_string
_decimal_ratio = decimal_ratio
_mid_decimal = mid_decimal
_outward = outward


# ====================================================================== tolerance flags
def tolerance_target(c, tol: float | None, rtol: float | None) -> Fraction | mpmath.mpf | None:
    """min(tol, rtol·|midpoint|) of an interval, exactly (``None`` when neither is given).

    Ends that are mpmath numbers are added and scaled exactly in binary (an exact mpf), never
    turned into fractions: a δ bound near 10^(−10^9) has a 3·10^9-bit denominator."""
    parts: list = []
    if tol is not None:
        parts.append(mpmath.mpf(tol) if isinstance(tol, float) else Fraction(tol))
    if rtol is not None:
        lo, hi = c.lower, c.upper
        if hasattr(lo, "_mpf_") and hasattr(hi, "_mpf_") and isinstance(rtol, float):
            mid = mpmath.ldexp(mpmath.fadd(lo, hi, exact=True), -1)
            parts.append(abs(mpmath.fmul(mpmath.mpf(rtol), mid, exact=True)))
        else:
            parts.append(Fraction(rtol) * abs(exact_fraction(lo) + exact_fraction(hi)) / 2)
    return min(parts) if parts else None


def certified_tolerance_met(c, tol: float | None = None, rtol: float | None = None) -> bool:
    """Whether a certified interval meets its requested error.

    A result that records its own target (``Certified.tol`` / ``rtol``, set by the accountant)
    answers with its ``tolerance_met``; otherwise error ≤ ``tol`` and error ≤ ``rtol``·|value|
    is checked here (the accountant's own rule, both must hold); with no target at all the
    answer is ``getattr(c, "tolerance_met", True)``.  (A flag, not a bound: the interval is
    rigorous either way.)
    """
    if getattr(c, "tol", None) is not None or getattr(c, "rtol", None) is not None:
        return bool(c.tolerance_met)
    if tol is None and rtol is None:
        return bool(getattr(c, "tolerance_met", True))
    if rtol is None and tol is not None:  # absolute target only (trade-off vertices): one subtraction
        return bool(c.upper - c.lower <= 2 * tol)
    err = getattr(c, "error", None)
    value = getattr(c, "value", None)
    if err is None or value is None:
        err, value = (c.upper - c.lower) / 2, (c.upper + c.lower) / 2
    if tol is not None and not (err <= tol):
        return False
    return rtol is None or bool(err <= rtol * abs(value))


def epsilon_tolerance_met(r, tol: float) -> bool:
    """Whether an :class:`accountant.EpsilonResult` met its bracket tolerance: its own
    ``tolerance_met`` when it has one, else (value − lower) ≤ tol·max(1, value), exactly
    (``lower is None`` means ε = 0 already meets the target: exact)."""
    flag = getattr(r, "tolerance_met", None)
    if flag is not None:
        return bool(flag)
    lower = getattr(r, "lower", None)
    if lower is None:
        return True
    v = exact_fraction(r.value)
    return v - exact_fraction(lower) <= Fraction(tol) * max(Fraction(1), abs(v))


def tradeoff_tolerance_met(tc, tol: float) -> list[bool]:
    """Per vertex of a :class:`accountant.TradeoffCurve`: α and β both met the absolute ``tol``
    (each distinct tail checked once: the β tails are mostly α tails of mirrored thresholds)."""
    memo: dict[int, bool] = {}

    def ok(c) -> bool:
        got = memo.get(id(c))
        if got is None:
            got = memo[id(c)] = certified_tolerance_met(c, tol)
        return got

    return [ok(a) and ok(b) for a, b in zip(tc.alpha, tc.beta)]


def _met_from_strings(r: dict, tol: float, rtol: float) -> list[bool]:
    """``delta_tolerance_met`` of a cached job result written before the flag existed,
    recomputed from its ``delta_error`` strings (the exact half-width rounded up to 3 digits,
    so a result within 1 % of its target may be reported as a miss: conservative) and its
    midpoints; decimal arithmetic in a local context (no global precision state)."""
    out = []
    with decimal.localcontext(decimal.Context(prec=80)):
        D = decimal.Decimal
        t, rt = D(tol), D(rtol)
        for err, mid in zip(r["delta_error"], r["delta"]):
            out.append(D(err) <= min(t, rt * abs(D(mid))))
    return out


def _pair_curves(comp: Composition, eps: list[str], tn: int, tol: float, rtol: float, ttol: float):
    """``(δ at each ε, trade-off curve or None, nodes, kept nodes)`` of one pair's composition."""
    nodes = kept = 0
    tc = None
    if tn > 0:
        # one engine batch for both curves (shared nodes, tilt groups, integrand values)
        ds, tc = comp.delta_and_tradeoff(eps, n=tn, tol=tol, rtol=rtol, tradeoff_tol=ttol)
    elif eps:
        ds = comp.delta_curve(eps, tol=tol, rtol=rtol)
    else:
        ds = []
    if eps or tn > 0:
        st = comp.stats
        nodes, kept = int(getattr(st, "n_nodes", 0)), int(getattr(st, "kept_nodes", 0))
    return ds, tc, nodes, kept


def pair_job(spec: PairSpec | dict) -> dict:
    """Certified δ(ε) (and optionally the trade-off curve) of one pair [M_i, M_j].

    Args:
        spec: a :class:`PairSpec` or a dict with the same keys.

    Returns:
        ``{"pair": [i, j], "n_mechanisms", "rho", "eps": [...], "delta", "delta_lower",
        "delta_upper", "delta_error": [decimal strings], "seconds", "nodes", "kept_nodes"}``,
        plus ``"tradeoff": {"zeta", "k", "alpha", "alpha_lower", "beta", "beta_lower",
        "seconds"}`` when ``tradeoff_n > 0``; both curves then come from one engine batch
        (:meth:`accountant.Composition.delta_and_tradeoff`), whose time is ``"seconds"`` (the
        trade-off's own ``"seconds"`` is only its bookkeeping).  Decimal strings have 25
        significant digits, rounded exactly (:mod:`accountant.decimals`): lower bounds down,
        upper bounds and errors up, midpoints (``"delta"``, ``"alpha"``, ``"beta"``) to nearest,
        so [delta_lower, delta_upper] contains the exact δ.  ``"delta_tolerance_met"`` (one bool
        per ε), ``"tolerance_met"`` (all of them, and the trade-off's) and, in ``"tradeoff"``,
        ``"tolerance_met"`` / ``"tolerance_misses"`` (vertex indices) say whether the requested
        ``tol``/``rtol`` (``tradeoff_tol``) were met; a miss is still a rigorous enclosure.
    """
    pair = [int(x) for x in _get(spec, "pair")]
    rho_i = [Fraction(r) for r in _get(spec, "rho_i")]
    rho_j = [Fraction(r) for r in _get(spec, "rho_j")]
    eps = [str(e) for e in _get(spec, "eps", ())]
    tol, rtol = float(_get(spec, "tol", DELTA.absolute)), float(_get(spec, "rtol", DELTA.relative))
    tn = int(_get(spec, "tradeoff_n", 0) or 0)
    ttol = float(_get(spec, "tradeoff_tol", TRADEOFF.absolute))
    t0 = time.perf_counter()
    mechanisms = [DiscreteGaussian.from_rho(r) for r in rho_i + rho_j]
    comp = thorough_composition(mechanisms) if _get(spec, "exhaustive", True) else Composition(mechanisms)
    out: dict[str, Any] = {"pair": pair, "n_mechanisms": comp.size, "rho": str(comp.rho), "eps": eps}
    ds, tc, nodes, kept = _pair_curves(comp, eps, tn, tol, rtol, ttol)
    out["delta"] = [_mid_decimal(d) for d in ds]
    out["delta_lower"] = [_outward(d.lower, -1) for d in ds]
    out["delta_upper"] = [_outward(d.upper, +1) for d in ds]
    out["delta_error"] = [format_error_up(d) for d in ds]  # exact half-width, rounded up
    out["seconds"] = time.perf_counter() - t0
    out["nodes"], out["kept_nodes"] = nodes, kept
    out["delta_tolerance_met"] = [certified_tolerance_met(d, tol, rtol) for d in ds]
    met = all(out["delta_tolerance_met"])
    if tc is not None:
        out["tradeoff"] = _tradeoff_record(tc, ttol)
        met = met and out["tradeoff"]["tolerance_met"]
    out["tolerance_met"] = met
    return out


# ====================================================================== patterns and specs
def release_patterns(name: str | None, allocation: Allocation | None = None) -> tuple[tuple[Pattern, ...], str]:
    """(patterns, note) used to profile a release.

    * ``dhc-persons`` (and its PR run): the 43 published DHC-persons patterns
      (PR: those patterns without ``US`` would not validate, so the superset is used);
    * other DHC runs (8 DHC geolevels): the DHC-persons patterns, saying so;
    * PL94 runs and custom allocations: :func:`optimizer.census.spine.all_patterns` (superset).
    """
    if allocation is None:
        if name is None:
            raise ValueError("release_patterns: pass a release name or an allocation")
        allocation = load_builtin(name)
    levels = allocation.geolevels
    pats = patterns_for(levels)  # the same rule as the all-pairs confirmation
    if tuple(levels) == DHC_GEOLEVELS:
        return pats, NOTE_DHC_PERSONS if name == "dhc-persons" else NOTE_DHC_OTHER
    return pats, NOTE_ALL + f" ({len(pats)} patterns of {len(levels)} geolevels)"


def _frac_str(r: Fraction) -> str:
    return f"{r.numerator}/{r.denominator}"


def pair_specs(
    paths: Sequence[Path],
    eps: Sequence[str],
    *,
    tol: float = DELTA.absolute,
    rtol: float = DELTA.relative,
    tradeoff_n: int = 0,
    tradeoff_tol: float = TRADEOFF.absolute,
    only: Iterable[tuple[int, int]] | None = None,
) -> list[PairSpec]:
    """One :class:`PairSpec` per pair i ≤ j of ``paths`` (or only the listed pairs)."""
    wanted = None if only is None else {tuple(sorted(p)) for p in only}
    out = []
    for a, b in all_pairs(paths):
        if wanted is not None and (a.index, b.index) not in wanted:
            continue
        out.append(
            PairSpec(
                pair=(a.index, b.index),
                rho_i=tuple(_frac_str(r) for r in a.rho),
                rho_j=tuple(_frac_str(r) for r in b.rho),
                eps=tuple(str(e) for e in eps),
                tol=tol,
                rtol=rtol,
                tradeoff_n=tradeoff_n,
                tradeoff_tol=tradeoff_tol,
                exhaustive=thorough_pairs(),
            )
        )
    if wanted is not None:
        missing = wanted - {s.pair for s in out}
        if missing:
            raise ValueError(f"pair_specs: unknown pairs {sorted(missing)}; paths are 1..{len(paths)}")
    return out


# ====================================================================== aggregation
@dataclass
class ReleaseProfile:
    """Result of :func:`release_profile` (``summary`` is JSON-ready).

    ``summary`` has ``n_pairs``, ``worst_pair``, ``worst_delta``,
    ``worst_delta_error``, ``certain``, ``candidates``, ``main_pair_delta``,
    ``zcdp_claim_delta``, ``note`` (first ε) and a ``grid`` list with the same per ε;
    ``tolerance_met`` (every pair met ``tol``/``rtol`` at every ε, and ``tradeoff_tol``),
    ``n_tolerance_misses`` and ``tolerance_misses`` (the first :data:`MAX_LISTED_MISSES`
    (pair, ε) misses with their error), per ε ``tolerance_met`` / ``n_tolerance_misses``;
    with ``tradeoff`` also ``tradeoff_tolerance_met`` / ``tradeoff_tolerance_misses`` (pairs;
    ``tradeoff_tolerance_unknown``: pairs cached before the flag existed).
    Printed bounds are outward (``worst_delta_lower`` down, ``worst_delta_upper`` and
    ``worst_delta_error`` up).  ``worst_pair_certain`` (= ``certain``: the worst pair's lower
    bound ≥ every other pair's upper bound), ``worst_pairs_tied`` (the pairs tied within their
    bounds; only the worst pair when certain) and ``release_delta_interval`` ([max lower, max
    upper]) are given per ε and for the first; ``exactness_screen`` / ``pairs_not_exact_planned``
    are the screen's, ``pairs_not_exact`` the pairs with a tolerance miss.
    ``worst_pairs_fresh`` says every candidate for the worst pair was computed by this run or
    recomputed without the cache, ``worst_pairs_recomputed``
    lists the cached pairs recomputed, ``cache_disagreements`` the (pair, ε) whose cached
    interval a fresh computation contradicted (the fresh result is used; a
    :class:`CacheDisagreementWarning` names the cache file).
    """

    summary: dict
    results: dict[tuple[int, int], dict]
    rows: list[dict] = field(default_factory=list)
    envelope: list[tuple[str, str]] | None = None


def _cert(lo: str, hi: str):
    return Certified.from_bounds(mpmath.mpf(lo), mpmath.mpf(hi))


class CacheDisagreementWarning(UserWarning):
    """A cached pair result contradicts a fresh computation of the same job: the cache entry is
    wrong (edited and resealed, or written by faulty code); the fresh result is used."""


#: a cached bound more than this many decimal orders below the largest upper bound at its ε is
#: compared as [0, 10^-RECHECK_ORDERS] of it (wider, so at most more candidates): an exact
#: Fraction of δ ≈ 10^-2000000 costs a second to build
RECHECK_ORDERS = 1000


def _scaled_bound(lo: str, hi: str, top: int) -> Any:
    """The interval [lo, hi] (decimal strings) times 10^-top, as exact Fractions (a positive
    common factor per ε: the order of the pairs, hence the worst one, is unchanged)."""
    ctx = decimal.Context(prec=100, Emin=decimal.MIN_EMIN, Emax=decimal.MAX_EMAX)
    floor = Fraction(1, 10**RECHECK_ORDERS)
    out = []
    for text, side in ((lo, -1), (hi, +1)):
        d = decimal.Decimal(text)
        if d and d.adjusted() - top < -RECHECK_ORDERS:
            out.append(floor if side > 0 else (-floor if d < 0 else Fraction(0)))
        else:
            out.append(Fraction(d.scaleb(-top, context=ctx)))
    return SimpleNamespace(lower=out[0], upper=out[1])


def recheck_worst_pairs(
    specs: Sequence[PairSpec],
    results: dict[tuple[int, int], dict],
    fresh_now: set,
    *,
    cache_dir: str | os.PathLike,
    workers: int | None = 1,
    scheduler: Any = None,
    progress: bool = False,
) -> tuple[list[tuple[int, int]], list[dict]]:
    """Recompute without the cache every pair that may be the worst at some ε — its upper bound
    reaches the worst pair's lower bound — until every such pair is fresh, as ``optimize``'s
    confirmation does (the same loop: :func:`optimizer.jobs.confirm._verify_worst`, one ε at a time).

    ``results`` (``{pair: pair_job result}``, from the runner) is updated in place with the fresh
    results; ``fresh_now`` holds the pairs the runner computed in this run (not read from the
    cache), which are not recomputed. A few pairs are recomputed in this process, more through
    the pool (or ``scheduler``) with an empty, throw-away cache. Returns (the pairs recomputed,
    the disagreements: ``{"pair", "eps", "cached": [lower, upper], "fresh": [lower, upper],
    "cache_file"}`` for every (pair, ε) whose cached interval and fresh interval are disjoint;
    each such pair also raises a :class:`CacheDisagreementWarning` naming its cache file)."""
    if not specs:
        return [], []
    by_pair = {s.pair: s for s in specs}
    eps = list(specs[0].eps)
    pair_list = sorted(results)
    cached = dict(results)
    fresh: dict[tuple[int, int], dict] = {}

    def compute(todo) -> None:
        need = [tuple(p) for p in todo if tuple(p) not in fresh]
        if not need:
            return
        if len(need) >= confirm.FRESH_POOL_MIN and (scheduler is not None or workers != 1):
            with tempfile.TemporaryDirectory(prefix="census-plb-fresh-") as d:
                raw = runner.run_jobs(
                    pair_job,
                    [by_pair[p] for p in need],
                    d,
                    workers=workers,
                    scheduler=scheduler,
                    progress=progress,
                    label="re-checking the worst pairs without the cache: pair",
                )
        else:
            raw = [pair_job(by_pair[p]) for p in need]
        fresh.update(zip(need, raw))

    verified = set(fresh_now)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for k, e in enumerate(eps):
            now = {p: fresh.get(p, results[p]) for p in pair_list}  # pairs recomputed at earlier ε are fresh
            uppers = [decimal.Decimal(r["delta_upper"][k]) for r in now.values()]
            top = max((u.adjusted() for u in uppers if u), default=0)

            def bound(r: dict, k: int = k, top: int = top) -> Any:
                return _scaled_bound(r["delta_lower"][k], r["delta_upper"][k], top)

            def verify(_current, _points, todo, bound=bound) -> dict:
                compute(todo)
                return {tuple(p): [bound(fresh[tuple(p)])] for p in todo}

            deltas = {p: [bound(now[p])] for p in pair_list}
            point = SimpleNamespace(epsilon=e, delta_fraction=Fraction(1))
            confirm._verify_worst(None, [point], pair_list, deltas, verify, verified)
    for w in caught:  # the confirmation's own wording is replaced by the one below
        if not str(w.message).startswith("confirm: the stored"):
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    results.update(fresh)
    return sorted(fresh), _disagreements(cached, fresh, eps, by_pair, cache_dir)


def _disagreements(cached, fresh, eps, by_pair, cache_dir) -> list[dict]:
    """Every (pair, ε) whose cached and fresh intervals are disjoint, with the cache file to delete; a
    :class:`CacheDisagreementWarning` per such pair."""
    disagreements = []
    D = decimal.Decimal
    for p in sorted(fresh):
        old, new = cached[p], fresh[p]
        bad = []
        for k, e in enumerate(eps):
            lo_c, hi_c = old["delta_lower"][k], old["delta_upper"][k]
            lo_f, hi_f = new["delta_lower"][k], new["delta_upper"][k]
            if D(hi_c) < D(lo_f) or D(hi_f) < D(lo_c):
                bad.append({"pair": list(p), "eps": e, "cached": [lo_c, hi_c], "fresh": [lo_f, hi_f]})
        if bad:
            path = str(FsPath(cache_dir) / f"{job_id(by_pair[p], pair_job)}.json")
            for b in bad:
                b["cache_file"] = path
            first = bad[0]
            warnings.warn(
                CacheDisagreementWarning(
                    f"the cached result of pair [{p[0]}, {p[1]}] ({path}) disagrees with a fresh computation "
                    f"at {len(bad)} of {len(eps)} ε (at ε = {first['eps'][:20]}: cached δ in "
                    f"[{first['cached'][0]}, {first['cached'][1]}], fresh [{first['fresh'][0]}, "
                    f"{first['fresh'][1]}]); the entry is wrong (edited and resealed, or written by faulty "
                    "code): the fresh value is reported; delete that file"
                ),
                stacklevel=4,
            )
            disagreements.extend(bad)
    return disagreements
    return sorted(fresh), disagreements


def release_profile(
    allocation: Allocation | str,
    patterns: Sequence[Pattern] | None = None,
    eps: Sequence[str] | None = None,
    *,
    tol: float = DELTA.absolute,
    rtol: float = DELTA.relative,
    tradeoff: bool = False,
    tradeoff_n: int = 901,
    tradeoff_tol: float = TRADEOFF.absolute,
    limit_pairs: int | None = None,
    only_pairs: Iterable[tuple[int, int]] | None = None,
    workers: int | None = 1,
    scheduler: Any = None,
    cache_dir: str | os.PathLike = "runs/cache",
    progress: bool = True,
    note: str | None = None,
    delta_zcdp: Sequence[str] | None = None,
    recheck_worst: bool = True,
    screen: bool = True,
    log: Any = None,
) -> ReleaseProfile:
    """Profile a release: run every pair of its paths, then take the worst case.

    Args:
        allocation: an :class:`Allocation` or a built-in name.
        patterns: path patterns; default :func:`release_patterns`.
        eps: ε grid (decimal strings); default :func:`default_eps_grid` of the allocation's ρ.
        tradeoff: also compute each pair's trade-off curve at ``tradeoff_n`` thresholds and
            their lower convex envelope.
        limit_pairs: only the first K pairs (quick runs; the worst case is then partial).
        only_pairs: only these pairs.
        workers, scheduler, cache_dir, progress: passed to :func:`optimizer.jobs.runner.run_jobs`.
        note: text on the pattern source (default from :func:`release_patterns`).
        delta_zcdp: the δ_zCDP each ε came from (reported beside it), if any.
        recheck_worst: recompute without the cache every pair read from it that may be the worst
            at some ε (:func:`recheck_worst_pairs`, as ``optimize``'s confirmation does), so a wrong
            but well-formed cache entry cannot move the reported worst pair.
        screen: before any pair job, plan every pair's engine (:mod:`optimizer.jobs.exactness`) and
            say which pairs will not be exact and why (through ``log``, default stderr).

    Returns:
        :class:`ReleaseProfile` (its ``summary`` keys are listed there).
    """
    name, alloc, paths, note, eps, delta_zcdp = _release_inputs(allocation, patterns, note, eps, delta_zcdp)
    rho_total = alloc.total_rho
    specs, screened = _planned_specs(
        paths, eps, name, (tol, rtol, tradeoff_n if tradeoff else 0, tradeoff_tol), only_pairs, limit_pairs, screen, log
    )
    n_all = len(paths) * (len(paths) + 1) // 2
    label = f"accounting {name} ({len(eps)} ε{', trade-off curves' if tradeoff else ''}): pair"
    run = _run_pairs(specs, label, cache_dir, workers, scheduler, progress, recheck_worst)
    results, fresh_now, recomputed, disagreements, seconds = run

    # tolerance flags per (pair, ε) and per trade-off curve (recomputed from the strings for
    # results cached before the flags existed)
    met = {
        k: (r["delta_tolerance_met"] if "delta_tolerance_met" in r else _met_from_strings(r, tol, rtol))
        for k, r in results.items()
    }
    # (a trade-off curve cached without its flag cannot be judged from 25-digit strings: None)
    t_met = {k: r["tradeoff"].get("tolerance_met") for k, r in results.items()} if tradeoff else {}

    with mpmath.workdps(60):
        certs = {k: [_cert(lo, hi) for lo, hi in zip(r["delta_lower"], r["delta_upper"])] for k, r in results.items()}
        wc = worst_case(certs)
        main = results.get(tuple(MAIN_PAIR)) if len(paths) >= max(MAIN_PAIR) else None
        grid = [
            _grid_item(pos, e, wc[pos], certs, results, met, main, rho_total, delta_zcdp) for pos, e in enumerate(eps)
        ]
        rows, misses = _pair_rows(results, eps, met)
        envelope = _envelope(results) if tradeoff else None

    counts = (len(paths), n_all, seconds)
    run = (results, met, t_met, misses, fresh_now, recomputed, disagreements, screened, main)
    summary = _profile_summary(name, alloc, note, grid, counts, run, (tol, rtol, tradeoff, tradeoff_tol), envelope)
    return ReleaseProfile(summary=summary, results=results, rows=rows, envelope=envelope)


def _profile_summary(name, alloc, note, grid, counts, run, tols, envelope) -> dict[str, Any]:
    """:attr:`ReleaseProfile.summary` (see :func:`release_profile`): ``counts`` = (paths, all pairs,
    seconds), ``run`` = (results, δ flags, trade-off flags, misses, pairs computed now, recomputed,
    disagreements, exactness screen, main pair's result), ``tols`` = (tol, rtol, tradeoff, tradeoff_tol)."""
    n_paths, n_all, seconds = counts
    results, met, t_met, misses, fresh_now, recomputed, disagreements, screened, main = run
    tol, rtol, tradeoff, tradeoff_tol = tols
    rho_total = alloc.total_rho
    summary: dict[str, Any] = {
        "allocation": name,
        "profile_inputs": profile_inputs(alloc, tol=tol, rtol=rtol),
        "rho": _frac_str(rho_total),
        "n_paths": n_paths,
        "n_pairs": len(results),
        "n_pairs_all": n_all,
        "complete": len(results) == n_all,
        "note": note,
        **_first_point(grid[0]),
        "exactness_screen": None if screened is None else screened.as_dict(),
        "pairs_not_exact_planned": None if screened is None else len(screened.not_exact),
        "pairs_not_exact": sum(1 for v in met.values() if not all(v)),
        "main_pair": list(MAIN_PAIR) if main else None,
        **_first_point(grid[0], _FIRST_POINT_CLAIMS),
        **_timing(results, seconds),
        "tol": tol,
        "rtol": rtol,
        "tradeoff": bool(tradeoff),
        "tolerance_met": not misses and all(v is not False for v in t_met.values()),
        "n_tolerance_misses": len(misses),
        "tolerance_misses": misses[:MAX_LISTED_MISSES],
        "grid": grid,
        # every pair that may be the worst at some ε was computed by this run or recomputed
        # without the cache (recheck_worst_pairs): no stored number alone decides the worst case
        "worst_pairs_fresh": all(tuple(c) in fresh_now | set(recomputed) for g in grid for c in g["candidates"]),
        "worst_pairs_recomputed": [list(p) for p in recomputed],
        "cache_disagreements": disagreements,
    }
    if tradeoff:
        summary.update(_tradeoff_keys(t_met, tradeoff_tol, envelope))
    return summary


def _release_inputs(allocation, patterns, note, eps, delta_zcdp):
    """``(name, allocation, paths, note, ε grid, δ_zCDP)`` of :func:`release_profile`'s arguments: the
    built-in allocation of a name, the default patterns (and their note) and the default ε grid."""
    name = allocation if isinstance(allocation, str) else allocation.name
    alloc = load_builtin(allocation) if isinstance(allocation, str) else allocation
    if patterns is None:
        patterns, default_note = release_patterns(name, alloc)
        note = note or default_note
    note = note or "patterns given by the caller"
    if eps is None:
        delta_zcdp = list(DEFAULT_DELTA_ZCDP)
        eps = eps_from_delta_zcdp(alloc.total_rho, delta_zcdp)
    eps = [str(e).strip() for e in eps]
    if not eps:
        raise ValueError("release_profile: empty ε grid")
    return name, alloc, paths_from_allocation(alloc, patterns), note, eps, delta_zcdp


def _tradeoff_record(tc, ttol: float) -> dict[str, Any]:
    """A pair job's ``"tradeoff"`` record: vertices as decimal strings (midpoints, lower bounds rounded
    down) and whether ``ttol`` was met (with the vertex indices that missed it)."""
    t1 = time.perf_counter()
    # the β tails are (mostly) the α tails of the mirrored thresholds: format each once
    strings: dict[int, tuple[str, str]] = {}

    def fmt(c) -> tuple[str, str]:
        got = strings.get(id(c))
        if got is None:
            got = strings[id(c)] = (_mid_decimal(c), _outward(c.lower, -1))
        return got

    fa, fb = [fmt(a) for a in tc.alpha], [fmt(b) for b in tc.beta]
    # the curve's own flag when it has one (per-vertex checks only to name the misses)
    curve_flag = getattr(tc, "tolerance_met", None)
    t_misses = [] if curve_flag else [i for i, ok in enumerate(tradeoff_tolerance_met(tc, ttol)) if not ok]
    return {
        "zeta": [float(z) for z in tc.zeta],
        "k": [int(k) for k in tc.k],
        "alpha": [v for v, _ in fa],
        "alpha_lower": [lo for _, lo in fa],
        "beta": [v for v, _ in fb],
        "beta_lower": [lo for _, lo in fb],
        "seconds": time.perf_counter() - t1,
        "tolerance_met": bool(curve_flag) if curve_flag is not None else not t_misses,
        "tolerance_misses": t_misses,  # vertex indices whose α or β interval is wider than tradeoff_tol
    }


def _planned_specs(paths, eps, name, tols, only_pairs, limit_pairs, screen: bool, log):
    """The pair jobs, longest first (pairs of short paths, e.g. [6, 6], are by far the slowest;
    results are keyed by pair), and — before any runs — the exactness screen, said through ``log``
    (issue 35 item 2): ``(specs, screen or None)``.  ``tols`` = (tol, rtol, tradeoff_n, tradeoff_tol)."""
    tol, rtol, tradeoff_n, tradeoff_tol = tols
    specs = pair_specs(
        paths, eps, tol=tol, rtol=rtol, tradeoff_n=tradeoff_n, tradeoff_tol=tradeoff_tol, only=only_pairs
    )
    if limit_pairs is not None:
        if limit_pairs < 1:
            raise ValueError(f"limit_pairs must be >= 1, got {limit_pairs}")
        specs = specs[:limit_pairs]
    specs = sorted(specs, key=lambda sp: (len(sp.rho_i) + len(sp.rho_j), sp.pair))
    screened = None
    if screen:
        screened = screen_paths(paths, pairs=[sp.pair for sp in specs], name=name, kinds=True)
        for line in screened.lines():
            (log or _stderr)(line)
    return specs, screened


def _run_pairs(specs, label: str, cache_dir, workers, scheduler, progress, recheck_worst: bool):
    """Run (or read from the cache) every pair job, then recheck without the cache the pairs that may be
    the worst: ``(results by pair, pairs computed now, pairs recomputed, disagreements, seconds)``."""
    t0 = time.perf_counter()
    computed: set[int] = set()
    raw = runner.run_jobs(
        pair_job,
        specs,
        cache_dir,
        workers=workers,
        scheduler=scheduler,
        progress=progress,
        label=label,
        computed=computed,
    )
    results = {tuple(r["pair"]): r for r in raw}
    fresh_now = {specs[i].pair for i in computed}  # computed by this run: nothing stored to distrust
    recomputed: list[tuple[int, int]] = []
    disagreements: list[dict] = []
    if recheck_worst:
        recomputed, disagreements = recheck_worst_pairs(
            specs, results, fresh_now, cache_dir=cache_dir, workers=workers, scheduler=scheduler, progress=progress
        )
    return results, fresh_now, recomputed, disagreements, time.perf_counter() - t0


def _grid_item(pos: int, e: str, w, certs, results, met, main, rho_total, delta_zcdp) -> dict[str, Any]:
    """The worst case at the ``pos``-th ε of the grid (``w``: :func:`worst_case`'s at that ε)."""
    # the printed enclosure of the maximum: the largest job lower / upper string, copied
    # exactly (distinct 25-digit strings never tie at 60 digits, so the mpf order is theirs)
    k_lo = max(w.candidates, key=lambda k: certs[k][pos].lower)
    lo_s, hi_s = results[k_lo]["delta_lower"][pos], results[w.argmax]["delta_upper"][pos]
    mid_s = results[w.argmax]["delta"][pos]
    mid = Fraction(mid_s)
    misses_here = sorted(k for k in results if not met[k][pos])
    item = {
        "eps": e,
        "worst_pair": list(w.argmax),
        "worst_delta": mid_s,
        "worst_delta_lower": lo_s,
        "worst_delta_upper": hi_s,
        # max distance from the printed midpoint to the printed ends, rounded up
        "worst_delta_error": format_error_up(max(Fraction(hi_s) - mid, mid - Fraction(lo_s))),
        "certain": bool(w.certain),
        "candidates": [list(c) for c in w.candidates],
        # issue 35 item 4: the worst pair is named only when certain; else the pairs tied within
        # their bounds, and the release's δ as the interval [max lower, max upper]
        "worst_pair_certain": bool(w.certain),
        "worst_pairs_tied": [list(w.argmax)] if w.certain else [list(c) for c in w.candidates],
        "release_delta_interval": [lo_s, hi_s],
        "main_pair_delta": main["delta"][pos] if main else None,
        "zcdp_claim_delta": mpmath.nstr(zcdp.delta_bun_steinke(rho_total, e), RESULT_DIGITS),
        "zcdp_claim_delta_cks": mpmath.nstr(zcdp.delta_cks(rho_total, e), RESULT_DIGITS),
        "tolerance_met": not misses_here,
        "n_tolerance_misses": len(misses_here),
    }
    if delta_zcdp is not None:
        item["delta_zcdp"] = str(delta_zcdp[pos])
    if main:
        wv = mpmath.mpf(item["worst_delta"])
        item["main_over_worst"] = mpmath.nstr(mpmath.mpf(main["delta"][pos]) / wv, 12) if wv else None
    return item


def _pair_rows(results, eps, met) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """One row per (pair, ε) (the ``*_pairs.csv`` table) and the (pair, ε) that missed the tolerance."""
    rows, misses = [], []
    for k in sorted(results):
        r = results[k]
        for pos, e in enumerate(eps):
            rows.append(
                {
                    "pair_i": k[0],
                    "pair_j": k[1],
                    "eps": e,
                    "delta": r["delta"][pos],
                    "delta_lower": r["delta_lower"][pos],
                    "delta_upper": r["delta_upper"][pos],
                    "tolerance_met": "true" if met[k][pos] else "false",
                }
            )
            if not met[k][pos]:
                misses.append(
                    {"pair": list(k), "eps": e, "delta": r["delta"][pos], "delta_error": r["delta_error"][pos]}
                )
    return rows, misses


def _envelope(results) -> list[tuple[str, str]]:
    """The lower convex envelope of every pair's safe trade-off vertices (α.lower, β.lower), clipped at 0."""
    curves = []
    for r in results.values():
        t = r["tradeoff"]
        curves.append(
            [
                (a if not a.startswith("-") else "0", b if not b.startswith("-") else "0")
                for a, b in zip(t["alpha_lower"], t["beta_lower"])
            ]
            + [("1", "0")]
        )
    return [(_dec(x), _dec(y)) for x, y in lower_convex_envelope_decimal(curves)]


_FIRST_POINT_KEYS = (
    "eps",
    "worst_pair",
    "worst_delta",
    "worst_delta_lower",
    "worst_delta_upper",
    "worst_delta_error",
    "certain",
    "candidates",
    "worst_pair_certain",
    "worst_pairs_tied",
    "release_delta_interval",
)
_FIRST_POINT_CLAIMS = ("main_pair_delta", "zcdp_claim_delta", "zcdp_claim_delta_cks")


def _first_point(first: dict[str, Any], keys: tuple[str, ...] = _FIRST_POINT_KEYS) -> dict[str, Any]:
    """The summary's keys of the first ε (the profile's headline point)."""
    return {k: first[k] for k in keys}


def _timing(results, seconds: float) -> dict[str, Any]:
    return {
        "seconds": round(seconds, 3),
        "job_seconds_total": round(sum(float(r.get("seconds", 0)) for r in results.values()), 3),
        "slowest_pairs": [
            [list(k), round(float(r["seconds"]), 3)]
            for k, r in sorted(results.items(), key=lambda kv: -float(kv[1].get("seconds", 0)))[:5]
        ],
    }


def _tradeoff_keys(t_met, tradeoff_tol: float, envelope) -> dict[str, Any]:
    """The summary's trade-off keys: tolerance flags per pair and the envelope."""
    out: dict[str, Any] = {
        "tradeoff_tol": tradeoff_tol,
        "tradeoff_tolerance_met": all(v is not False for v in t_met.values()),
        "tradeoff_tolerance_misses": sorted(list(k) for k, v in t_met.items() if v is False),
    }
    unknown = sorted(list(k) for k, v in t_met.items() if v is None)
    if unknown:  # cached before the flag existed
        out["tradeoff_tolerance_unknown"] = unknown
    if envelope is not None:
        out["tradeoff_envelope"] = {
            "n_points": len(envelope),
            "alpha": [a for a, _ in envelope],
            "beta": [b for _, b in envelope],
            "note": "lower convex envelope of the pairs' safe vertices (α.lower, β.lower): never overclaims privacy",
        }
    return out


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _dec(x: Fraction) -> str:
    """An envelope coordinate, rounded down exactly: lowering α or β of a vertex of a lower
    trade-off bound keeps it a lower bound (never overclaims privacy)."""
    return decimal_string(x, RESULT_DIGITS, "down")


# ====================================================================== output
CSV_COLUMNS = ("pair_i", "pair_j", "eps", "delta", "delta_lower", "delta_upper", "tolerance_met")


def profile_inputs(alloc: Allocation, *, tol: float, rtol: float) -> dict[str, Any]:
    """What a release profile's numbers depend on: the allocation's content hash
    (:func:`optimizer.jobs.provenance.allocation_digest`), the code version and the tolerances."""
    return {
        "kind": "release profile",
        "allocation": {"name": alloc.name, "sha256": allocation_digest(alloc)},
        "code_version": code_version(),
        "tol": repr(tol),
        "rtol": repr(rtol),
    }


def write_profile(profile: ReleaseProfile, out_dir: str | os.PathLike, stem: str = "profile") -> dict[str, FsPath]:
    """Write ``<stem>_pairs.csv`` (tidy, one row per pair and ε), ``<stem>_worst.csv`` (per ε)
    and ``<stem>.json`` (summary) atomically, the summary last; returns their paths.

    The summary is sealed (:func:`optimizer.jobs.provenance.seal`) with the profile's inputs
    (``profile_inputs``: allocation hash, code version, tolerances) and stores the sha256 of
    both CSV files (``outputs``), so :func:`check_profile_files` can tell whether a pairs file
    was computed for a given allocation by the current code and left unedited."""
    out = FsPath(out_dir)
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    w.writeheader()
    w.writerows(profile.rows)
    paths = {
        "pairs_csv": out / f"{stem}_pairs.csv",
        "worst_csv": out / f"{stem}_worst.csv",
        "json": out / f"{stem}.json",
    }
    texts = {"pairs_csv": buf.getvalue()}
    buf = io.StringIO()
    cols = [
        "eps",
        "delta_zcdp",
        "worst_pair",
        "worst_delta",
        "worst_delta_error",
        "certain",
        "n_candidates",
        "main_pair_delta",
        "main_over_worst",
        "zcdp_claim_delta",
        "zcdp_claim_delta_cks",
    ]
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for g in profile.summary["grid"]:
        row = dict(g)
        row["worst_pair"] = "-".join(map(str, g["worst_pair"]))
        row["n_candidates"] = len(g["candidates"])
        w.writerow(row)
    texts["worst_csv"] = buf.getvalue()
    summary = dict(profile.summary)
    summary["outputs"] = {paths[k].name: hashlib.sha256(t.encode("utf-8")).hexdigest() for k, t in texts.items()}
    inputs = summary.get("profile_inputs")
    doc = seal(summary, inputs) if isinstance(inputs, dict) else summary
    for k, t in texts.items():
        atomic_write_text(paths[k], t)
    atomic_write_text(paths["json"], json.dumps(doc, indent=1, ensure_ascii=False) + "\n")
    return paths


def check_profile_files(pairs_csv: str | os.PathLike) -> tuple[dict[str, Any] | None, list[str]]:
    """Whether a ``<stem>_pairs.csv`` can be trusted: ``(profile inputs, problems)``.

    It needs its sibling ``<stem>.json`` written by :func:`write_profile`, sealed, with a
    checksum that matches, the CSV's sha256 among its ``outputs`` and the current
    :func:`optimizer.jobs.provenance.code_version`. An empty problem list means the file is what the
    current code computed for the allocation named in the returned inputs."""
    p = FsPath(pairs_csv)
    if not p.name.endswith("_pairs.csv"):
        return None, [f"{p.name}: not a <name>_pairs.csv file of census-plb pairs --out"]
    meta = p.with_name(p.name[: -len("_pairs.csv")] + ".json")
    if not meta.is_file():
        return None, [f"{meta.name} (its summary, written with it by census-plb pairs --out) is missing"]
    try:
        doc = json.loads(meta.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        return None, [f"{meta.name} is damaged ({type(exc).__name__})"]
    problems = [f"{meta.name}: {x}" for x in check_run(doc)]
    if problems:
        return None, problems
    inputs = doc.get("run_inputs") or {}
    if inputs.get("kind") != "release profile":
        return None, [f"{meta.name} is not a release-profile summary"]
    digest = hashlib.sha256(p.read_bytes()).hexdigest()
    if (doc.get("outputs") or {}).get(p.name) != digest:
        problems.append(f"{p.name} was changed after {meta.name} was written")
    if inputs.get("code_version") != code_version():
        problems.append(f"{p.name} was computed by other code (code version differs)")
    return inputs, problems
