"""Confirm a re-tuned allocation on every pair of paths, not only the proxy.

:func:`confirm` regenerates the 43 DHC-persons paths from the allocation
(:func:`optimizer.census.pairs.dhc_persons_paths`; other run types: every bypass pattern of
:func:`optimizer.census.spine.all_patterns`), computes the certified δ(target ε) of every pair [M_i, M_j]
and passes only if every pair's δ.upper ≤ target δ (compared exactly).  If a pair violates,
the uniform factor is recalibrated on the worst pair (Newton step in log c, then a check of
that pair) and the whole set is confirmed again.

Pair jobs run through :func:`optimizer.jobs.runner.run_jobs` (cached by exact spec, resumable,
``workers`` local processes) unless a ``pairs_runner(alloc, target, pair_list) -> {(i, j):
Certified-like}`` is given.  Some pairs built from short paths (e.g. [6, 6]: US + State only)
are much slower than the main pair.
"""

from __future__ import annotations

import math
import sys
import tempfile
import time
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from accountant.decimals import decimal_string
from accountant.tolerance import DELTA
from optimizer.census.allocation import Allocation
from optimizer.census.pairs import composition_key, paths_from_allocation, worst_pair_rule
from optimizer.census.pairs import pairs as all_pairs
from optimizer.census.spine import patterns_for
from optimizer.jobs import runner  # called through the module: a test or a tool may wrap run_jobs
from optimizer.jobs.exactness import screen_pairs, thorough_pairs
from optimizer.search import Target, mpf_to_fraction
from optimizer.search.curve_target import CurveTarget
from optimizer.search.proxy import _composition

__all__ = [
    "Confirmation",
    "confirm",
    "confirm_curve",
    "confirmation_keys",
    "fresh_pairs",
    "pair_curve_job",
    "pair_delta_job",
    "pair_runner",
    "paths_of",
    "worst_pair_text",
]

#: Certified tolerances of the pair jobs (the worst pairs differ by ~1e-6 relative).
TOL, RTOL = DELTA.absolute, DELTA.relative
#: Expected d log δ / d log c near the target (main pair, δ = 1e-10; ≈ 33).
SLOPE = 33.0
#: Relative safety margin when recalibrating on the worst pair.
RECAL_MARGIN = 1e-9


@dataclass
class _Bound:
    lower: Any
    upper: Any
    tolerance_met: bool = True


@dataclass
class Confirmation:
    """Outcome of :func:`confirm`."""

    passed: bool
    allocation: Allocation  # the allocation that passed (possibly recalibrated)
    worst_pair: tuple[int, int]
    worst_delta: Any  # certified-like (lower/upper) of the worst pair
    n_pairs: int
    rounds: int
    recalibration: Fraction  # product of the recalibration factors (1 = none)
    seconds: float
    deltas: dict = field(default_factory=dict)  # pair -> certified-like bound at worst_point
    #: the pairs that may be the worst (upper bound reaching the worst's lower bound), every one
    #: computed by this run: by the runner without a cache hit, or recomputed from scratch
    verified_pairs: list = field(default_factory=list)
    worst_point: Any = None  # the Target whose δ is closest to being exceeded (the binding point)
    point_deltas: dict = field(default_factory=dict)  # pair -> [bound per point of the target]
    points: tuple = ()  # the target's points (one for a point target), in point_deltas' order
    #: the worst-pair rule at the worst point (:func:`optimizer.census.pairs.worst_pair_rule`): ``worst_pair``
    #: is certainly the worst only when this is True (its lower bound ≥ every other pair's upper)
    worst_certain: bool = False
    #: the pairs tied within their bounds at the worst point (``[worst_pair]`` when certain)
    tied_pairs: list = field(default_factory=list)
    #: the release's δ at the worst point: (max of the pairs' lower bounds, max of their upper bounds)
    release_delta: tuple | None = None
    #: the exactness screen of the final round's allocation (:mod:`optimizer.jobs.exactness`), if run
    screen: Any = None
    #: pairs of the final round with a result whose tolerance was not met (coarse sandwich)
    not_exact_pairs: list = field(default_factory=list)
    #: pair jobs of all rounds, and those with a result whose tolerance was not met
    jobs: int = 0
    jobs_not_exact: int = 0

    def worst_text(self) -> str:
        """The worst pair in words: named only when certain, else the tied pairs' count and the
        release's δ interval (issue 35 item 4)."""
        if self.worst_certain:
            return f"worst pair [{self.worst_pair[0]}, {self.worst_pair[1]}] (certain)"
        lo, hi = _decimal_pair(self.release_delta) or ("?", "?")
        return f"no certain worst pair ({len(self.tied_pairs)} tied within their bounds; release δ in [{lo}, {hi}])"


def paths_of(alloc: Allocation):
    """The paths of ``alloc``'s release (:func:`optimizer.census.spine.patterns_for`, the one rule)."""
    return paths_from_allocation(alloc, patterns_for(alloc.geolevels))


def _job_composition(spec: dict):
    """[M_i, M_j] of a job's spec: :func:`accountant.composition.thorough_composition` (the dearer exact
    fallbacks where the default engines give the coarse sandwich) unless the spec says ``"exhaustive":
    False`` (:func:`optimizer.jobs.exactness.default_engines_only`)."""
    rhos = [Fraction(r) for r in list(spec["rho_i"]) + list(spec["rho_j"])]
    return _composition(rhos, multiplicity=1, thorough=bool(spec.get("exhaustive", True)))


def pair_delta_job(spec: dict) -> dict:
    """Runner job: certified δ(ε) of [M_i, M_j] given the two paths' exact budgets."""
    d = _job_composition(spec).delta(spec["eps"], tol=spec["tol"], rtol=spec["rtol"])
    return {
        "lower": mpf_to_fraction(d.lower),
        "upper": mpf_to_fraction(d.upper),
        "tolerance_met": bool(d.tolerance_met),
    }


#: result format of :func:`pair_delta_job` (2: with "tolerance_met"); cached results of another
#: format are recomputed by :func:`optimizer.jobs.runner.run_jobs`, never defaulted
# a function attribute (read with getattr by optimizer.jobs.runner._result_format); mypy has no way to declare it
pair_delta_job.result_format = 2  # type: ignore[attr-defined]


def pair_curve_job(spec: dict) -> dict:
    """Runner job: certified δ(ε_k) of [M_i, M_j] at several ε (one engine batch) given the two
    paths' exact budgets; ``{"points": [{"lower", "upper", "tolerance_met"}, …]}`` in ε order."""
    comp = _job_composition(spec)
    ds = comp.delta_curve(spec["eps"], tol=spec["tol"], rtol=spec["rtol"])
    return {
        "points": [
            {
                "lower": mpf_to_fraction(d.lower),
                "upper": mpf_to_fraction(d.upper),
                "tolerance_met": bool(d.tolerance_met),
            }
            for d in ds
        ]
    }


pair_curve_job.result_format = 1  # type: ignore[attr-defined]


def _points(target: Target | Sequence[Target]) -> list[Target]:
    return [target] if isinstance(target, Target) else list(target)


def _pair_specs(alloc: Allocation, target: Target | Sequence[Target], pair_list) -> list[dict]:
    """One job per pair: a :func:`pair_delta_job` for one point (its spec unchanged, so cached
    results stay valid), a :func:`pair_curve_job` for several."""
    points = _points(target)
    paths = {p.index: p for p in paths_of(alloc)}
    eps: Any = points[0].epsilon if len(points) == 1 else [t.epsilon for t in points]
    return [
        {
            "pair": [i, j],
            "rho_i": list(paths[i].rho),
            "rho_j": list(paths[j].rho),
            "eps": eps,
            "tol": TOL,
            "rtol": RTOL,
            # (only off, so the default jobs' ids, hence their cached results, stay those of before)
            **({} if thorough_pairs() else {"exhaustive": False}),
        }
        for i, j in pair_list
    ]


def _distinct_compositions(specs: list[dict]) -> tuple[list[dict], list[int]]:
    """One job per distinct composition: pairs whose two paths give the same multiset of budgets have
    the same δ (DHC persons: 946 pairs, 840 compositions, e.g. [1, 2] and [13, 26]).  Returns the
    first spec of each composition and, per spec, the index of its representative."""
    first: dict[tuple, int] = {}
    unique: list[dict] = []
    rep = []
    for spec in specs:
        key = (
            composition_key(map(Fraction, spec["rho_i"]), map(Fraction, spec["rho_j"])),
            str(spec["eps"]),
            spec["tol"],
            spec["rtol"],
        )
        if key not in first:
            first[key] = len(unique)
            unique.append(spec)
        rep.append(first[key])
    return unique, rep


def _bound(r: dict) -> _Bound:
    return _Bound(r["lower"], r["upper"], bool(r["tolerance_met"]))


def _bounds(r: dict, n_points: int) -> list[_Bound]:
    return [_bound(r)] if n_points == 1 else [_bound(x) for x in r["points"]]


def _job_for(points: Sequence[Target]) -> Callable[[dict], dict]:
    return pair_delta_job if len(points) == 1 else pair_curve_job


def fresh_pairs(alloc: Allocation, target: Target | Sequence[Target], pair_list) -> dict:
    """Certified δ(target ε) of the given pairs computed here and now, without any cache:
    ``{pair: bound}`` for one target, ``{pair: [bound per point]}`` for a sequence of points."""
    points = _points(target)
    job = _job_for(points)
    specs = _pair_specs(alloc, points, pair_list)
    out = {tuple(p): _bounds(job(spec), len(points)) for p, spec in zip(pair_list, specs)}
    return {p: v[0] for p, v in out.items()} if isinstance(target, Target) else out


def _fresh_points(alloc: Allocation, points: Sequence[Target], pair_list) -> dict:
    return fresh_pairs(alloc, list(points), pair_list)


def _pair_bounds(alloc: Allocation, points: Sequence[Target], pair: tuple[int, int]) -> list[_Bound]:
    return fresh_pairs(alloc, list(points), [pair])[pair]


def _default_runner(cache_dir, workers, progress, label=None, scheduler=None, fresh: set | None = None):
    """The cached pair runner; pairs whose result it computed (not read from the cache) are added
    to ``fresh``."""

    def run(alloc: Allocation, points: Sequence[Target], pair_list):
        unique, rep = _distinct_compositions(_pair_specs(alloc, points, pair_list))
        computed: set[int] = set()
        results = runner.run_jobs(
            _job_for(points),
            unique,
            cache_dir,
            workers=workers,
            scheduler=scheduler,
            progress=progress,
            label=label,
            computed=computed,
        )
        if fresh is not None:
            fresh.update(tuple(pair_list[k]) for k, u in enumerate(rep) if u in computed)
        return {tuple(p): _bounds(results[u], len(points)) for p, u in zip(pair_list, rep)}

    return run


def pair_runner(cache_dir, workers, progress: bool = False, label: str | None = None, scheduler=None):
    """The cached pair runner of the confirmation (process pool or Dask, resumable):
    ``run(alloc, points, pairs)`` → ``{pair: [bound per point]}`` at the confirmation's tolerances."""
    return _default_runner(cache_dir, workers, progress, label, scheduler)


#: fewer pairs to recompute than this are recomputed in this process (a pool costs a start-up)
FRESH_POOL_MIN = 4


def _fresh_runner(workers, progress, label=None, scheduler=None):
    """Recompute pairs from scratch: through the pool (or Dask) with an empty, throw-away cache when
    there are at least :data:`FRESH_POOL_MIN` of them, in this process otherwise. With coarse
    intervals (a fine lattice) hundreds of pairs can reach the worst one's lower bound."""

    def run(alloc: Allocation, points: Sequence[Target], pair_list):
        if len(pair_list) < FRESH_POOL_MIN or (workers == 1 and scheduler is None):
            return _fresh_points(alloc, points, pair_list)

        with tempfile.TemporaryDirectory(prefix="census-plb-fresh-") as d:
            return _default_runner(d, workers, progress, label, scheduler)(alloc, points, pair_list)

    return run


def _upper_fraction(v) -> Fraction:
    u = v.upper
    return u if isinstance(u, Fraction) else mpf_to_fraction(u)


def _lower_fraction(v) -> Fraction:
    u = v.lower
    return u if isinstance(u, Fraction) else mpf_to_fraction(u)


def _ratio_up(b, delta: Fraction) -> Fraction:
    """How far a pair's certified δ upper bound is from a point's δ (> 1: above the promise)."""
    return _upper_fraction(b) / delta


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _not_met(deltas: dict) -> list[tuple[int, int]]:
    """The pairs with a bound whose tolerance was not met (``{pair: [bound per point]}``)."""
    return sorted(p for p, bs in deltas.items() if any(getattr(b, "tolerance_met", True) is False for b in bs))


def _worst(pair_list, deltas, points) -> tuple[tuple[int, int], int]:
    """The (pair, point index) whose δ upper bound is furthest above (or least below) its point's δ."""
    dk = [t.delta_fraction for t in points]
    return max(
        ((p, k) for p in pair_list for k in range(len(points))),
        key=lambda pk: (_ratio_up(deltas[pk[0]][pk[1]], dk[pk[1]]), pk[0], -pk[1]),
    )


def _candidates(pair_list, deltas, points, worst, wk) -> list[tuple[int, int]]:
    """The pairs that may be the worst: at some point, their upper bound relative to that point's δ
    reaches the worst (pair, point)'s lower bound (after :func:`_verify_worst`, all computed fresh)."""
    dk = [t.delta_fraction for t in points]
    b = deltas[worst][wk]
    floor = min(_lower_fraction(b), _upper_fraction(b)) / dk[wk]
    return [p for p in pair_list if any(_ratio_up(deltas[p][k], dk[k]) >= floor for k in range(len(points)))]


def _verify_worst(current, points, pair_list, deltas, verify, verified: set) -> None:
    """Recompute from scratch (``verify``) every pair that may be the worst — whose upper bound,
    relative to its point's δ, reaches the worst (pair, point)'s lower bound — until the arg-max
    pairs are all fresh; fresh values replace the runner's (cached) ones in ``deltas``, with a
    warning when they disagree. ``verified`` starts with the pairs the runner computed itself in
    this round (no cache hit): their numbers are fresh already."""
    while True:
        wp, wk = _worst(pair_list, deltas, points)
        todo = [p for p in _candidates(pair_list, deltas, points, wp, wk) if p not in verified]
        if not todo:
            return
        fresh = verify(current, points, todo)
        for p in todo:
            for k, (old, new) in enumerate(zip(deltas[p], fresh[p])):
                if _upper_fraction(old) < _lower_fraction(new) or _upper_fraction(new) < _lower_fraction(old):
                    warnings.warn(
                        f"confirm: the stored δ of pair {list(p)} at ε = {points[k].epsilon[:12]} "
                        f"([{float(_lower_fraction(old)):.6g}, {float(_upper_fraction(old)):.6g}]) disagrees "
                        f"with a fresh computation ([{float(_lower_fraction(new)):.6g}, "
                        f"{float(_upper_fraction(new)):.6g}]); using the fresh value",
                        stacklevel=3,
                    )
            deltas[p] = list(fresh[p])
            verified.add(p)


def _one_point(runner: Callable) -> Callable:
    """A single-point runner ``f(alloc, target, pairs) -> {pair: bound}`` as a several-point one."""

    def run(alloc, points, pair_list):
        (t,) = points
        return {p: [b] for p, b in runner(alloc, t, pair_list).items()}

    return run


#: the recalibration stops refining once the worst pair's largest ratio δ/δ_k is within this of 1
RECAL_TOL = 1e-4
#: at most this many refinement steps (one worst-pair computation each)
RECAL_STEPS = 6


def _worst_ratio_at(alloc: Allocation, points: Sequence[Target], pair: tuple[int, int]) -> tuple[Fraction, bool]:
    """(max over the points of ``pair``'s certified δ upper bound / δ_k, computed here without
    cache; whether a bound is wider than :data:`RECAL_TOL`/10 relative — a coarse sandwich, whose
    width a finer factor cannot win back)."""
    bounds = _pair_bounds(alloc, points, pair)
    wide = any(
        _upper_fraction(b) > 0 and (_upper_fraction(b) - _lower_fraction(b)) / _upper_fraction(b) > RECAL_TOL / 10
        for b in bounds
    )
    return max(_ratio_up(b, t.delta_fraction) for b, t in zip(bounds, points)), wide


def _refine_step(current, points, pair, lo, lo_r, hi, hi_r, wide: bool = False) -> Fraction:
    """A larger factor in [lo, hi) that still keeps ``pair`` at every point: ``lo`` keeps it (ratio
    ``lo_r`` ≤ 1), ``hi`` does not (``hi_r`` > 1). Regula falsi on (log factor, log ratio) with the
    Illinois modification (a side kept twice has its value halved, so one end cannot stall),
    until the ratio is within :data:`RECAL_TOL` below 1 or after :data:`RECAL_STEPS` pair
    computations. Every candidate is checked, so the result always keeps the pair; a fixed slope
    guess alone (:data:`SLOPE`) left 7.7 % of δ unused on a small allocation. A coarse (sandwich)
    bound (``wide``) is not smooth in the factor and its width dominates: no steps are taken."""
    x_lo, x_hi = math.log(lo), math.log(hi)
    target = math.log(1 - RECAL_TOL / 2)
    f_lo, f_hi = math.log(max(lo_r, Fraction(1, 10**300))) - target, math.log(hi_r) - target
    side = 0
    for _ in range(RECAL_STEPS):
        if lo_r >= 1 - RECAL_TOL or x_hi - x_lo < 1e-11 or wide:
            break
        x = x_hi - f_hi * (x_hi - x_lo) / (f_hi - f_lo) if f_hi != f_lo else (x_lo + x_hi) / 2
        if not (x_lo < x < x_hi):
            x = (x_lo + x_hi) / 2
        cand = Fraction(math.exp(x)).limit_denominator(10**12)
        if not (lo < cand < hi):
            break
        r, wide = _worst_ratio_at(current.scaled(cand), points, pair)
        f = math.log(max(r, Fraction(1, 10**300))) - target
        if r <= 1:
            lo, lo_r, x_lo, f_lo = cand, r, math.log(cand), f
            if side == -1:
                f_hi /= 2
            side = -1
        else:
            hi, hi_r, x_hi, f_hi = cand, r, math.log(cand), f
            if side == 1:
                f_lo /= 2
            side = 1
    return lo


def confirm(
    alloc: Allocation,
    target: Target | Sequence[Target],
    pairs_runner: Callable | None = None,
    *,
    pairs: Sequence[tuple[int, int]] | None = None,
    cache_dir: str | Path = "runs/cache/confirm",
    workers: int = 2,
    max_rounds: int = 3,
    progress: bool = True,
    verify_runner: Callable | None = None,
    label: str | None = None,
    scheduler: str | None = None,
    screen: bool = True,
    log: Callable[[str], None] | None = None,
) -> Confirmation:
    """Check certified δ(ε_k) ≤ δ_k on all pairs (or the given subset) for one promise (ε, δ) or
    for every point (ε_k, δ_k) of a curve (:class:`optimizer.search.curve_target.CurveTarget` points).

    Args:
        alloc: the candidate allocation (already calibrated on the proxy).
        target: the promise: one :class:`~optimizer.search.Target`, or a sequence of them (every
            point must hold on every pair; the pair jobs then compute all the points' δ at once).
        pairs_runner: for one point ``f(alloc, target, pair_list) -> {(i, j): obj with
            .lower/.upper}``; for several ``f(alloc, points, pair_list) -> {(i, j): [obj per
            point]}``; default: cached :func:`optimizer.jobs.runner.run_jobs` with ``workers`` processes.
        pairs: subset of pairs ``(i, j)`` (default: all i ≤ j).
        max_rounds: confirmation rounds (each recalibration adds one).
        verify_runner: like ``pairs_runner``, used to recompute the worst pair(s) from scratch
            before a round passes, so no stored (cached) number alone decides the outcome;
            default: the pool (or ``scheduler``) with an empty throw-away cache when the default
            runner is used (:func:`fresh_pairs` in this process for a few pairs or a custom runner).
        label: what is being confirmed, for the progress lines ("the uniform rescale").
        scheduler: a Dask scheduler address for the pair jobs (workers with one thread each;
            see :func:`optimizer.jobs.runner.check_dask_workers`); default: a local process pool.
        screen: before each round's pair jobs, plan every pair's engine
            (:func:`optimizer.jobs.exactness.screen_pairs`, nothing integrated) and say which pairs will
            not be exact and why.
        log: where the screen's lines go (default: stderr when ``progress``, else nowhere).

    Returns:
        :class:`Confirmation`; ``passed`` is true only if every checked pair is within every
        point in the final round (``allocation`` is then the allocation that passed).  Its
        ``deltas`` are the pairs' bounds at the worst point (``worst_point``); ``point_deltas``
        holds every point's.
    """
    t0 = time.perf_counter()
    points = _points(target)
    if not points:
        raise ValueError("confirm: no target point given")
    computed_now: set = set()  # pairs the default runner computed in this round (not from its cache)
    runner, verify = _runners(
        isinstance(target, Target), pairs_runner, verify_runner, cache_dir, workers, progress, label or alloc.name
    )(scheduler, computed_now)
    pair_list = _pair_list(alloc, pairs)
    dk = [t.delta_fraction for t in points]
    say = log if log is not None else (_stderr if progress else (lambda _m: None))
    factor, current, screened, rounds, jobs, jobs_bad = Fraction(1), alloc, None, 0, 0, 0
    while True:
        rounds += 1
        computed_now.clear()
        if screen:
            screened = _screen(current, pair_list, f"{label or current.name} (round {rounds})", say)
        deltas = {p: list(v) for p, v in runner(current, points, pair_list).items()}
        jobs += len(pair_list)
        jobs_bad += len(_not_met(deltas))
        worst, wk = _worst(pair_list, deltas, points)
        verified: set = set(computed_now)  # computed just now by this code: nothing stored to distrust
        if _upper_fraction(deltas[worst][wk]) <= dk[wk]:
            _verify_worst(current, points, pair_list, deltas, verify, verified)
            worst, wk = _worst(pair_list, deltas, points)
        w_up = _upper_fraction(deltas[worst][wk])
        passed = w_up <= dk[wk]
        if passed or rounds >= max_rounds:
            counts = (len(pair_list), rounds, jobs, jobs_bad)
            return _result(passed, current, points, pair_list, deltas, (worst, wk), counts, factor, t0, screened)
        step = _recalibration_step(current, points, worst, w_up / dk[wk])
        say(_round_line(rounds + 1, worst, w_up, dk[wk], step))
        factor *= step
        current = current.scaled(step)


def _round_line(n: int, worst: tuple[int, int], upper: Fraction, delta: Fraction, step: Fraction) -> str:
    """Why sweep ``n`` runs: the pair above the promise and the factor every budget took."""
    return (
        f"round {n}: pair [{worst[0]}, {worst[1]}] was above the promise (δ ≤ {float(upper):.6g} > "
        f"{float(delta):.6g}): every budget × {float(step):.10f}, all pairs checked again"
    )


def _screen(current: Allocation, pair_list, label: str, say):
    """Plan every pair's engine before the round (:func:`optimizer.jobs.exactness.screen_pairs`) and say which
    will not be exact."""
    screened = screen_pairs(current, pairs=pair_list)
    for line in screened.lines(label):
        say(line)
    return screened


def _result(passed, current, points, pair_list, deltas, worst_at, counts, factor, t0, screened) -> Confirmation:
    """The :class:`Confirmation` of the last round: ``worst_at`` = (worst pair, its point's index),
    ``counts`` = (pairs, rounds, pair jobs, jobs whose tolerance was not met)."""
    (worst, wk), (n_pairs, rounds, jobs, jobs_bad) = worst_at, counts
    verdict = worst_pair_rule({p: v[wk] for p, v in deltas.items()})
    return Confirmation(
        passed,
        current,
        worst,
        deltas[worst][wk],
        n_pairs,
        rounds,
        factor,
        time.perf_counter() - t0,
        {p: v[wk] for p, v in deltas.items()},
        sorted(_candidates(pair_list, deltas, points, worst, wk)) if passed else [],
        points[wk],
        deltas,
        tuple(points),
        worst_certain=verdict.certain,
        tied_pairs=list(verdict.tied),
        release_delta=(_lower_fraction(verdict), _upper_fraction(verdict)),
        screen=screened,
        not_exact_pairs=_not_met(deltas),
        jobs=jobs,
        jobs_not_exact=jobs_bad,
    )


def _runners(single: bool, pairs_runner, verify_runner, cache_dir, workers, progress, what: str):
    """``make(scheduler, computed_now) -> (runner, verify)`` of :func:`confirm`: the pair runner (the
    caller's, or the cached pool/Dask runner, which adds the pairs it computed to ``computed_now``) and
    the runner that recomputes the worst pairs from scratch."""

    def make(scheduler, computed_now: set):
        if pairs_runner is not None:
            runner = _one_point(pairs_runner) if single else pairs_runner
        else:
            runner = _default_runner(cache_dir, workers, progress, f"confirming {what}: pair", scheduler, computed_now)
        if verify_runner is not None:
            verify = _one_point(verify_runner) if single else verify_runner
        elif pairs_runner is None:
            verify = _fresh_runner(workers, progress, f"re-checking {what} from scratch: pair", scheduler)
        else:
            verify = _fresh_points
        return runner, verify

    return make


def _pair_list(alloc: Allocation, pairs: Sequence[tuple[int, int]] | None) -> list[tuple[int, int]]:
    """The pairs to check: all i ≤ j of ``alloc``'s paths, or ``pairs`` (each ordered i ≤ j)."""
    if pairs is None:
        return [(a.index, b.index) for a, b in all_pairs(paths_of(alloc))]
    return [(min(int(i), int(j)), max(int(i), int(j))) for i, j in pairs]


def _recalibration_step(current: Allocation, points, worst: tuple[int, int], ratio: Fraction) -> Fraction:
    """The uniform factor (< 1) that brings the worst (pair, point), ``ratio`` above its δ, back within
    every point: Newton steps in log c on that pair until it holds, then :func:`_refine_step` upwards."""
    excess = math.log(ratio)
    step = Fraction(math.exp(-excess / SLOPE) * (1 - RECAL_MARGIN)).limit_denominator(10**12)
    hi, hi_r = Fraction(1), Fraction(ratio)  # a failing factor and its ratio
    while True:
        r, wide = _worst_ratio_at(current.scaled(step), points, worst)
        if r <= 1:
            break
        hi, hi_r = step, r
        excess = math.log(r)
        step = Fraction(float(step) * math.exp(-max(excess, 1e-12) / SLOPE) * (1 - RECAL_MARGIN)).limit_denominator(
            10**12
        )
    return _refine_step(current, points, worst, step, r, hi, hi_r, wide)


def _decimal_pair(interval) -> list[str] | None:
    """(lower, upper) as 20-digit decimal strings rounded outward."""
    if interval is None:
        return None
    lo, hi = interval
    return [decimal_string(lo, 20, "down"), decimal_string(hi, 20, "up")]


def confirmation_keys(uniform: Confirmation | None, optimized: Confirmation | None) -> dict[str, Any]:
    """The run summary's keys of issue 35 items 2 and 4 from the confirmations of the uniform
    rescale and of the optimized allocation (``None``: not run, then every value is ``None``):

    * ``worst_pair_certain`` / ``uniform_worst_pair_certain``: the reported worst pair is certainly
      the worst (its lower bound ≥ every other pair's upper bound, :func:`optimizer.census.pairs.worst_pair_rule`);
    * ``worst_pairs_tied`` / ``uniform_worst_pairs_tied``: the pairs tied within their bounds
      (only the worst pair when certain);
    * ``release_delta_interval`` / ``uniform_release_delta_interval``: the release's δ at the worst
      point, [max lower, max upper] (20-digit decimals, outward);
    * ``pairs_not_exact``: ``{"uniform", "optimized"}`` pairs of the final round with a result whose
      tolerance was not met (what the confirmation observed);
    * ``pairs_not_exact_planned``: the same from the exactness screen before the round
      (:mod:`optimizer.jobs.exactness`);
    * ``pair_jobs`` / ``pair_jobs_not_exact``: pair jobs of every round of each confirmation call,
      and those whose tolerance was not met;
    * ``exactness_screen``: each screen's summary (counts, engines, the first non-exact pairs and why).
    """
    confs = {"uniform": uniform, "optimized": optimized}

    def each(f) -> dict[str, Any] | None:
        if uniform is None and optimized is None:
            return None
        return {k: None if c is None else f(c) for k, c in confs.items()}

    out: dict[str, Any] = {}
    for prefix, c in (("", optimized), ("uniform_", uniform)):
        out[f"{prefix}worst_pair_certain"] = None if c is None else bool(c.worst_certain)
        out[f"{prefix}worst_pairs_tied"] = None if c is None else [list(p) for p in c.tied_pairs]
        out[f"{prefix}release_delta_interval"] = None if c is None else _decimal_pair(c.release_delta)
    out["pairs_not_exact"] = each(lambda c: len(c.not_exact_pairs))
    out["pairs_not_exact_planned"] = each(lambda c: None if c.screen is None else len(c.screen.not_exact))
    out["pair_jobs"] = each(lambda c: c.jobs)
    out["pair_jobs_not_exact"] = each(lambda c: c.jobs_not_exact)
    out["exactness_screen"] = each(lambda c: None if c.screen is None else c.screen.as_dict())
    return out


def worst_pair_text(summary: Mapping[str, Any], prefix: str = "") -> str:
    """The worst pair of a run summary in words: named only when certain, else the number of
    tied pairs and the release's δ interval (issue 35 item 4)."""
    pair = summary.get(f"{prefix}worst_pair")
    if pair is None:
        return "worst pair: not checked"
    certain = summary.get(f"{prefix}worst_pair_certain")
    interval = summary.get(f"{prefix}release_delta_interval")
    if certain:
        return f"worst pair [{pair[0]}, {pair[1]}] (certain), δ ≤ {summary.get(f'{prefix}worst_pair_delta')}"
    if certain is None:  # a summary from before the rule
        return f"largest δ upper bound: pair [{pair[0]}, {pair[1]}] (not known to be the worst)"
    tied = summary.get(f"{prefix}worst_pairs_tied") or []
    interval = interval or ["?", "?"]
    names = ", ".join(f"[{i}, {j}]" for i, j in tied[:6]) + (" …" if len(tied) > 6 else "")
    return (
        f"no certain worst pair: {len(tied)} pairs tied within their bounds ({names}); "
        f"release δ in [{interval[0]}, {interval[1]}]"
    )


def confirm_curve(alloc, curve: CurveTarget, **confirm_kw) -> Confirmation:
    """Confirm ``alloc`` at every point of ``curve`` on all pairs (:func:`confirm`
    with the curve's points: each pair job computes every point's δ in one engine batch).

    A (pair, point) above its δ recalibrates the allocation downwards (all budgets × one factor)
    and every point is checked again on every pair.

    Returns:
        the :class:`Confirmation`; its ``worst_point`` is the binding point.
    """
    return confirm(alloc, list(curve.points), **confirm_kw)
