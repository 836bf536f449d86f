"""Confirm a re-tuned allocation on every pair of paths, not only the proxy.

:func:`confirm` regenerates the 43 DHC-persons paths from the allocation
(:func:`optimizer.pairs.dhc_persons_paths`; other run types: every bypass pattern of
:func:`optimizer.spine.all_patterns`), computes the certified δ(target ε) of every pair [M_i, M_j]
and passes only if every pair's δ.upper ≤ target δ (compared exactly).  If a pair violates,
the uniform factor is recalibrated on the worst pair (Newton step in log c, then a check of
that pair) and the whole set is confirmed again.

Pair jobs run through :func:`optimizer.runner.run_jobs` (cached by exact spec, resumable,
``workers`` local processes) unless a ``pairs_runner(alloc, target, pair_list) -> {(i, j):
Certified-like}`` is given.  Some pairs built from short paths (e.g. [6, 6]: US + State only)
are much slower than the main pair.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath

from .allocation import Allocation
from .search import Target, _composition, mpf_to_fraction

__all__ = ["Confirmation", "confirm", "fresh_pairs", "pair_delta_job", "paths_of"]

#: Certified tolerances of the pair jobs (the worst pairs differ by ~1e-6 relative).
TOL, RTOL = 1e-35, 1e-20
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
    deltas: dict = field(default_factory=dict)
    verified_pairs: list = field(default_factory=list)  # pairs recomputed from scratch (no cache)


def paths_of(alloc: Allocation):
    """The paths of ``alloc``'s release (:func:`optimizer.spine.patterns_for`, the one rule)."""
    from .pairs import paths_from_allocation
    from .spine import patterns_for

    return paths_from_allocation(alloc, patterns_for(alloc.geolevels))


def pair_delta_job(spec: dict) -> dict:
    """Runner job: certified δ(ε) of [M_i, M_j] given the two paths' exact budgets."""
    rhos = list(spec["rho_i"]) + list(spec["rho_j"])
    d = _composition([Fraction(r) for r in rhos], multiplicity=1).delta(spec["eps"], tol=spec["tol"], rtol=spec["rtol"])
    return {
        "lower": mpf_to_fraction(d.lower),
        "upper": mpf_to_fraction(d.upper),
        "tolerance_met": bool(d.tolerance_met),
    }


#: result format of :func:`pair_delta_job` (2: with "tolerance_met"); cached results of another
#: format are recomputed by :func:`optimizer.runner.run_jobs`, never defaulted
# a function attribute (read with getattr by optimizer.runner._result_format); mypy has no way to declare it
pair_delta_job.result_format = 2  # type: ignore[attr-defined]


def _pair_specs(alloc: Allocation, target: Target, pair_list) -> list[dict]:
    paths = {p.index: p for p in paths_of(alloc)}
    return [
        {
            "pair": [i, j],
            "rho_i": list(paths[i].rho),
            "rho_j": list(paths[j].rho),
            "eps": target.epsilon,
            "tol": TOL,
            "rtol": RTOL,
        }
        for i, j in pair_list
    ]


def _bound(r: dict) -> _Bound:
    return _Bound(r["lower"], r["upper"], bool(r["tolerance_met"]))


def fresh_pairs(alloc: Allocation, target: Target, pair_list) -> dict:
    """Certified δ(target ε) of the given pairs computed here and now, without any cache."""
    return {tuple(p): _bound(pair_delta_job(spec)) for p, spec in zip(pair_list, _pair_specs(alloc, target, pair_list))}


def _default_runner(cache_dir, workers, progress, label=None, scheduler=None):
    def run(alloc: Allocation, target: Target, pair_list):
        from .runner import run_jobs

        specs = _pair_specs(alloc, target, pair_list)
        results = run_jobs(
            pair_delta_job, specs, cache_dir, workers=workers, scheduler=scheduler, progress=progress, label=label
        )
        return {tuple(p): _bound(r) for p, r in zip(pair_list, results)}

    return run


def _upper_fraction(v) -> Fraction:
    u = v.upper
    return u if isinstance(u, Fraction) else mpf_to_fraction(u)


def _lower_fraction(v) -> Fraction:
    u = v.lower
    return u if isinstance(u, Fraction) else mpf_to_fraction(u)


def _verify_worst(current, target, pair_list, deltas, verify, verified: set) -> None:
    """Recompute from scratch (``verify``) every pair that may be the worst — whose upper bound
    reaches the worst pair's lower bound — until the arg-max pairs are all fresh; fresh values
    replace the runner's (cached) ones in ``deltas``, with a warning when they disagree."""
    import warnings

    while True:
        worst = max(pair_list, key=lambda p: (_upper_fraction(deltas[p]), p))
        floor = min(_lower_fraction(deltas[worst]), _upper_fraction(deltas[worst]))
        todo = [p for p in pair_list if p not in verified and _upper_fraction(deltas[p]) >= floor]
        if not todo:
            return
        fresh = verify(current, target, todo)
        for p in todo:
            old, new = deltas[p], fresh[p]
            if _upper_fraction(old) < _lower_fraction(new) or _upper_fraction(new) < _lower_fraction(old):
                warnings.warn(
                    f"confirm: the stored δ of pair {list(p)} ([{float(_lower_fraction(old)):.6g}, "
                    f"{float(_upper_fraction(old)):.6g}]) disagrees with a fresh computation "
                    f"([{float(_lower_fraction(new)):.6g}, {float(_upper_fraction(new)):.6g}]); "
                    "using the fresh value",
                    stacklevel=3,
                )
            deltas[p] = new
            verified.add(p)


def confirm(
    alloc: Allocation,
    target: Target,
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
) -> Confirmation:
    """Check certified δ(target ε) ≤ target δ on all pairs (or the given subset).

    Args:
        alloc: the candidate allocation (already calibrated on the proxy).
        target: the promise.
        pairs_runner: ``f(alloc, target, pair_list) -> {(i, j): obj with .lower/.upper}``;
            default: cached :func:`optimizer.runner.run_jobs` with ``workers`` processes.
        pairs: subset of pairs ``(i, j)`` (default: all i ≤ j).
        max_rounds: confirmation rounds (each recalibration adds one).
        verify_runner: like ``pairs_runner``, used to recompute the worst pair(s) from scratch
            before a round passes, so no stored (cached) number alone decides the outcome;
            default :func:`fresh_pairs` (in this process, no cache).
        label: what is being confirmed, for the progress lines ("the uniform rescale").
        scheduler: a Dask scheduler address for the pair jobs (workers with one thread each;
            see :func:`optimizer.runner.check_dask_workers`); default: a local process pool.

    Returns:
        :class:`Confirmation`; ``passed`` is true only if every checked pair is within the
        target in the final round (``allocation`` is then the allocation that passed).
    """
    from .pairs import pairs as all_pairs

    t0 = time.perf_counter()
    runner = pairs_runner or _default_runner(
        cache_dir, workers, progress, f"confirming {label or alloc.name}: pair", scheduler
    )
    if pairs is None:
        pair_list = [(a.index, b.index) for a, b in all_pairs(paths_of(alloc))]
    else:
        pair_list = [(min(int(i), int(j)), max(int(i), int(j))) for i, j in pairs]
    target_delta = target.delta_fraction
    factor = Fraction(1)
    current = alloc
    rounds = 0
    while True:
        rounds += 1
        deltas = dict(runner(current, target, pair_list))
        worst = max(pair_list, key=lambda p: (_upper_fraction(deltas[p]), p))
        w_up = _upper_fraction(deltas[worst])
        if w_up <= target_delta:
            verified: set = set()
            _verify_worst(current, target, pair_list, deltas, verify_runner or fresh_pairs, verified)
            worst = max(pair_list, key=lambda p: (_upper_fraction(deltas[p]), p))
            w_up = _upper_fraction(deltas[worst])
        if w_up <= target_delta:
            return Confirmation(
                True,
                current,
                worst,
                deltas[worst],
                len(pair_list),
                rounds,
                factor,
                time.perf_counter() - t0,
                deltas,
                sorted(verified),
            )
        if rounds >= max_rounds:
            return Confirmation(
                False, current, worst, deltas[worst], len(pair_list), rounds, factor, time.perf_counter() - t0, deltas
            )
        # recalibrate the uniform factor on the worst pair: Newton step in log c, check, repeat
        excess = math.log(w_up / target_delta)
        step = Fraction(math.exp(-excess / SLOPE) * (1 - RECAL_MARGIN)).limit_denominator(10**12)
        while True:
            cand = current.scaled(step)
            cp = {p.index: p for p in paths_of(cand)}
            d = _composition(list(cp[worst[0]].rho) + list(cp[worst[1]].rho), multiplicity=1).delta(
                target.epsilon, tol=TOL, rtol=RTOL
            )
            if mpf_to_fraction(d.upper) <= target_delta:
                break
            excess = float(mpmath.log(d.upper)) - math.log(target_delta)
            step = Fraction(float(step) * math.exp(-max(excess, 1e-12) / SLOPE) * (1 - RECAL_MARGIN)).limit_denominator(
                10**12
            )
        factor *= step
        current = cand
