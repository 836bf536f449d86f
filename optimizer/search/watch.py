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
* :func:`screen_worst_pairs` computes every pair's certified δ at the promised ε once, at a cheap
  tolerance (the pair compositions of the allocation; no cache, in-process), and keeps the
  ``top`` pairs with the largest upper bounds (a full sweep's cost: ~17 s on one core);
* :class:`WorstOf` answers ``delta(eps, tol, rtol)`` with the certified δ of the largest upper
  bound among the proxy and the watched pairs of one allocation — a calibration against it keeps
  every watched pair within the promise;
* :func:`watch_builder` makes the composition builder :func:`optimizer.search.calibrate._calibrate_rhos`
  takes: for budgets ρ·c along the full path, the proxy and the watched pairs of the scaled allocation.
  A pair only the coarse sandwich answers is watched too: its upper bound is loose, but it is the
  bound the confirmation checks, and it is cheap (10–30 ms per δ on the optimized DHC-persons pairs).

The confirmation still checks every pair (and recalibrates if a pair outside the watch exceeds):
watching only makes its first sweep the normal last one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from accountant.tolerance import Tolerance
from optimizer.allocation import Allocation
from optimizer.pairs import pair_composition, pairs, paths_from_allocation
from optimizer.search.proxy import _apply, _composition, mpf_to_fraction
from optimizer.search.target import Target
from optimizer.spine import patterns_for

__all__ = [
    "KEEP_ROUNDS",
    "KEEP_TOL",
    "SCREEN_RTOL",
    "SCREEN_TOL",
    "WATCH_PATHS",
    "WATCH_TOP",
    "WorstOf",
    "keep_watched",
    "screen_diagonal",
    "screen_worst_pairs",
    "watch_builder",
    "watched_uppers",
]

#: pairs watched besides the proxy (the largest upper bounds of the screen)
WATCH_TOP = 6
#: paths of the diagonal screen whose pairs are watched (3 paths: 6 pairs)
WATCH_PATHS = 3
#: tolerances of the screen (absolute, relative): ranking needs far less than a certificate
SCREEN = Tolerance(1e-20, 1e-6)
SCREEN_TOL, SCREEN_RTOL = SCREEN.absolute, SCREEN.relative

Pair = tuple[int, int]


def screen_worst_pairs(
    alloc: Allocation,
    target: Target,
    *,
    top: int = WATCH_TOP,
    tol: float = SCREEN_TOL,
    rtol: float = SCREEN_RTOL,
    runner: Callable[[Allocation, Sequence[Target], list[Pair]], Mapping[Pair, Sequence[Any]]] | None = None,
) -> tuple[Pair, ...]:
    """The ``top`` pairs of ``alloc``'s release with the largest certified upper bound of δ(target ε),
    largest first (ties by pair).

    Without ``runner``: one in-process δ per pair at (``tol``, ``rtol``) (DHC persons: 946 pairs,
    ~10 s on one core).  With ``runner`` (e.g. :func:`optimizer.confirm.pair_runner`: the process
    pool or Dask, cached and resumable, at the confirmation's tolerances): ``runner(alloc, [target],
    pairs)`` → ``{pair: [bound]}``, each bound with an exact ``upper``."""
    paths = paths_from_allocation(alloc, patterns_for(alloc.geolevels))
    all_pairs = [(pi.index, pj.index) for pi, pj in pairs(paths)]
    if runner is not None:
        bounds = runner(alloc, [target], all_pairs)
        scored = [(Fraction(bounds[p][0].upper), p) for p in all_pairs]
    else:
        by = {p.index: p for p in paths}
        scored = [
            (mpf_to_fraction(pair_composition(by[i], by[j]).delta(target.epsilon, tol=tol, rtol=rtol).upper), (i, j))
            for i, j in all_pairs
        ]
    scored.sort(key=lambda t: (-t[0], t[1]))
    return tuple(p for _, p in scored[: max(0, top)])


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


class WorstOf:
    """The certified δ with the largest upper bound among several compositions (the proxy and the
    watched pairs of one allocation): ``delta(eps, tol, rtol)`` is what calibration reads."""

    def __init__(self, compositions: Sequence[Any]):
        if not compositions:
            raise ValueError("WorstOf: no compositions")
        self.compositions = tuple(compositions)

    def delta(self, eps, tol: float, rtol: float):
        ds = [c.delta(eps, tol=tol, rtol=rtol) for c in self.compositions]
        return max(ds, key=lambda d: d.upper)


def watch_builder(shape: Allocation, watch: Sequence[Pair]) -> Callable[[Sequence[Fraction]], WorstOf]:
    """Builder for :func:`~optimizer.search.calibrate._calibrate_rhos`: budgets along the full path
    (in ``shape.items()`` order) → the proxy and the ``watch`` pairs of that allocation."""
    patterns = patterns_for(shape.geolevels)
    wanted = tuple(dict.fromkeys(watch))

    def build(rhos: Sequence[Fraction]) -> WorstOf:
        paths = {p.index: p for p in paths_from_allocation(_apply(shape, rhos), patterns)}
        missing = [p for p in wanted if p[0] not in paths or p[1] not in paths]
        if missing:
            raise ValueError(f"watch_builder: pairs {missing} are not pairs of this release ({len(paths)} paths)")
        return WorstOf([_composition(rhos)] + [pair_composition(paths[i], paths[j]) for i, j in wanted])

    return build


#: evaluations of :func:`keep_watched` (one proxy calibration and one evaluation of the watched pairs each)
KEEP_ROUNDS = 6
#: :func:`keep_watched` stops once the largest watched δ is within this relative distance below the promise
KEEP_TOL = 1e-4


def watched_uppers(alloc: Allocation, target: Target, watch: Sequence[Pair]) -> dict[Pair, Fraction]:
    """``{pair: certified upper bound of δ(target ε)}`` for the ``watch`` pairs of ``alloc``'s release
    (final tolerances)."""
    paths = {p.index: p for p in paths_from_allocation(alloc, patterns_for(alloc.geolevels))}
    missing = [p for p in watch if p[0] not in paths or p[1] not in paths]
    if missing:
        raise ValueError(f"keep_watched: pairs {missing} are not pairs of this release ({len(paths)} paths)")
    return {(i, j): mpf_to_fraction(pair_composition(paths[i], paths[j]).delta(target.epsilon).upper) for i, j in watch}


def _ratio_up(x: float) -> Fraction:
    """e^x as a fraction on 1e-12 rounded up (a lower δ target: the safe side), at least 1."""
    import math

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
    import math

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
