"""The pairs that can be the worst, watched by every calibration (issue 35 item 3: one sweep per allocation).

The proxy pair [M_full, M_full] is never the worst pair of a release: the all-pairs confirmation
then finds a pair above the promise (DHC persons: [6, 6]), lowers the factor on it and sweeps all
pairs a second time.  Calibrating instead on the proxy **and** on the few pairs that can be the
worst makes the first sweep pass:

* :func:`screen_diagonal` (the pipeline's screen, ~1 s) computes only the 43 pairs [M_i, M_i] of a
  path with itself, at a cheap tolerance, and watches the pairs among the ``paths`` paths with the
  largest upper bounds: measured on the DHC-persons uniform rescale (all 946 pairs at 1e-8
  relative), no pair [M_i, M_j] exceeds both [M_i, M_i] and [M_j, M_j], and the worst pairs are
  [6, 6], [6, 12], [12, 12] — the pairs of the top diagonal paths;
* :func:`keep_watched` calibrates on the proxy at a lowered δ until the watched pairs are within the
  promise (one proxy calibration and one evaluation of the watched pairs per step; calibrating with
  every watched pair inside each root-finding step, the first design, took 77 s on a toy scenario and
  ~200 s on DHC persons, whose optimum's [6, 12] costs 1.5 s per δ); pairs only the coarse sandwich
  answers are watched too — their loose upper bound is the one the confirmation checks.

The confirmation still checks every pair (and recalibrates if a pair outside the watch exceeds):
watching only makes its first sweep the normal last one.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import Any

from accountant.tolerance import Tolerance
from optimizer.census.allocation import Allocation
from optimizer.census.pairs import pair_composition, paths_from_allocation
from optimizer.census.spine import patterns_for
from optimizer.search.proxy import mpf_to_fraction
from optimizer.search.target import Target

__all__ = [
    "KEEP_ROUNDS",
    "KEEP_TOL",
    "SCREEN_RTOL",
    "SCREEN_TOL",
    "WATCH",
    "WATCH_PATHS",
    "keep_watched",
    "screen_diagonal",
    "watched_uppers",
]

#: paths of the diagonal screen whose pairs are watched (3 paths: 6 pairs)
WATCH_PATHS = 3
#: tolerances of the screen (absolute, relative): ranking needs far less than a certificate
SCREEN = Tolerance(1e-20, 1e-6)
SCREEN_TOL, SCREEN_RTOL = SCREEN.absolute, SCREEN.relative

Pair = tuple[int, int]


def screen_diagonal(
    alloc: Allocation, target: Target, *, paths: int = WATCH_PATHS, tol: float = SCREEN_TOL, rtol: float = SCREEN_RTOL
) -> tuple[Pair, ...]:
    """The pairs among the ``paths`` paths M_i whose pair [M_i, M_i] has the largest certified upper
    bound of δ(target ε) (one in-process δ per path at (``tol``, ``rtol``)): ``paths·(paths+1)/2``
    pairs (i ≤ j), the largest diagonal first, then by pair.

    A heuristic for which pairs can be the worst — the confirmation still checks every pair — that
    costs one δ per path instead of one per pair (DHC persons: 43 instead of 946)."""
    if paths < 1:
        raise ValueError(f"screen_diagonal: paths must be >= 1, got {paths}")
    ps = paths_from_allocation(alloc, patterns_for(alloc.geolevels))

    def upper(p) -> Fraction:
        return mpf_to_fraction(pair_composition(p, p).delta(target.epsilon, tol=tol, rtol=rtol).upper)

    scored = sorted(((upper(p), p.index) for p in ps), key=lambda t: (-t[0], t[1]))
    top = [i for _, i in scored[:paths]]
    rank = {i: k for k, i in enumerate(top)}
    pairs_ = [(min(a, b), max(a, b)) for k, a in enumerate(top) for b in top[k:]]
    return tuple(sorted(pairs_, key=lambda p: (rank[p[0]] + rank[p[1]], p)))


#: evaluations of :func:`keep_watched` (one proxy calibration and one evaluation of the watched pairs each)
KEEP_ROUNDS = 6
#: :func:`keep_watched` stops once the largest watched δ is within this relative distance below the promise
KEEP_TOL = 1e-4


#: tolerances of the watched pairs' upper bounds (absolute, relative): certified bounds, at most 1e-6
#: above the truth, i.e. 1 % of :data:`KEEP_TOL`, so the calibration gives up no measurable budget for
#: them; measured on the DHC-persons proposal's [6, 12] and [6, 33] (nested split): 3–5× faster than the
#: final tolerances (2.9 s → 0.7 s, 10.1 s → 1.8 s per δ)
WATCH = Tolerance(1e-20, 1e-6)


def watched_uppers(
    alloc: Allocation, target: Target, watch: Sequence[Pair], *, tolerance: Tolerance = WATCH
) -> dict[Pair, Fraction]:
    """``{pair: certified upper bound of δ(target ε)}`` for the ``watch`` pairs of ``alloc``'s release,
    computed to ``tolerance`` (default :data:`WATCH`; the confirmation checks them again at its own);
    a pair only the coarse sandwich answers gets the bound of the final tolerances, the one the
    confirmation checks (a sandwich's width depends on the tolerance asked)."""
    paths = {p.index: p for p in paths_from_allocation(alloc, patterns_for(alloc.geolevels))}
    missing = [p for p in watch if p[0] not in paths or p[1] not in paths]
    if missing:
        raise ValueError(f"keep_watched: pairs {missing} are not pairs of this release ({len(paths)} paths)")
    out = {}
    for i, j in watch:
        comp = pair_composition(paths[i], paths[j])
        d = comp.delta(target.epsilon, tol=tolerance.absolute, rtol=tolerance.relative)
        if not d.tolerance_met:
            # the coarse sandwich's bound depends on the tolerance asked: watch the one the
            # confirmation will check (the final tolerances), never a different loose bound
            d = comp.delta(target.epsilon)
        out[(i, j)] = mpf_to_fraction(d.upper)
    return out


def _ratio_up(x: float) -> Fraction:
    """e^x as a fraction on 1e-12 rounded up (a lower δ target: the safe side), at least 1."""
    return max(Fraction(1), Fraction(math.ceil(math.exp(x) * 10**12), 10**12))


def keep_watched(
    make: Callable[[Target], Any],
    target: Target,
    watch: Sequence[Pair],
    *,
    ratio: Fraction = Fraction(1),
    rounds: int = KEEP_ROUNDS,
) -> tuple[Any, Fraction, dict[Pair, Fraction]]:
    """Calibrate on the proxy at a lowered δ so that the ``watch`` pairs stay within ``target``.

    ``make(t)`` returns an allocation (or an object with ``.allocation``) calibrated on the proxy pair
    at the promise ``t``: the uniform rescale, or the guarded convex optimum (which keeps the Pareto
    guard: a calibration, never a scaling after it).  The proxy is asked for δ / r with r ≥ 1 found
    by a secant search on (log r, log of the largest watched upper bound / δ): the smallest r (to
    :data:`KEEP_TOL`) that keeps every watched pair within the promise.  Each step is one proxy
    calibration and one evaluation of the watched pairs, instead of every watched pair at every
    root-finding step of the calibration.  ``ratio`` is the first r tried (e.g. the last run's).

    Returns ``(made, r, {pair: upper bound})`` of the smallest passing r found (of the last step
    if none passed within ``rounds``: the confirmation checks every pair anyway).
    """
    dk = target.delta_fraction

    def attempt(r: Fraction) -> tuple[Any, float, dict[Pair, Fraction]]:
        made = make(Target(target.epsilon, str(dk / r), target.conversion) if r > 1 else target)
        alloc = getattr(made, "allocation", made)
        uppers = watched_uppers(alloc, target, watch) if watch else {}
        worst = max(uppers.values(), default=Fraction(0))
        return made, (math.log(worst / dk) if worst > 0 else -math.inf), uppers

    r = max(Fraction(1), Fraction(ratio))
    fail: tuple[float, float] | None = None  # (log r, g) of the largest failing r
    best: tuple[float, float, Any, Fraction, dict[Pair, Fraction]] | None = None  # the smallest passing r
    last: tuple[Any, Fraction, dict[Pair, Fraction]] | None = None
    aim = -KEEP_TOL / 2
    for _ in range(max(1, rounds)):
        x = math.log(r)
        made, g, uppers = attempt(r)
        last = (made, r, uppers)
        if g > 0:
            fail = (x, g) if fail is None or x > fail[0] else fail
        elif best is None or x < best[0]:
            best = (x, g, made, r, uppers)
        if best is not None and (best[1] >= -KEEP_TOL or best[0] == 0):
            break
        if fail is not None and best is not None:
            (xf, gf), (xp, gp) = fail, best[:2]
            if xp - xf < 1e-12:
                break
            nxt = xf + (gf - aim) * (xp - xf) / (gf - gp)
            if not xf < nxt < xp:
                nxt = (xf + xp) / 2
        elif fail is not None:
            nxt = fail[0] + fail[1] - aim  # a pair's δ moves about like the proxy's
        else:
            assert best is not None
            nxt = max(0.0, best[0] + best[1] - aim)  # passing with room to spare: a smaller r
        r = _ratio_up(nxt)
    if best is not None:
        return best[2], best[3], best[4]
    assert last is not None
    return last
