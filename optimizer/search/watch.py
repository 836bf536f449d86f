"""The pairs that can be the worst, watched by every calibration (issue 35 item 3: one sweep per allocation).

The proxy pair [M_full, M_full] is never the worst pair of a release: the all-pairs confirmation
then finds a pair above the promise (DHC persons: [6, 6]), lowers the factor on it and sweeps all
pairs a second time.  Calibrating instead on the proxy **and** on the few pairs that can be the
worst makes the first sweep pass:

* :func:`screen_worst_pairs` computes every pair's certified δ at the promised ε once, at a cheap
  tolerance (the pair compositions of the allocation; no cache, in-process), and keeps the
  ``top`` pairs with the largest upper bounds;
* :class:`WorstOf` answers ``delta(eps, tol, rtol)`` with the certified δ of the largest upper
  bound among the proxy and the watched pairs of one allocation — a calibration against it keeps
  every watched pair within the promise;
* :func:`watch_builder` makes the composition builder :func:`optimizer.search.calibrate._calibrate_rhos`
  takes: for budgets ρ·c along the full path, the proxy and the watched pairs of the scaled allocation
  that an exact engine certifies (:func:`accountant.composition.engine_plan`; a pair left to the coarse
  sandwich would cost seconds per evaluation and calibrate against a loose bound — the confirmation
  handles it as before).

The confirmation still checks every pair (and recalibrates if a pair outside the watch exceeds):
watching only makes its first sweep the normal last one.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from accountant.composition import engine_plan
from optimizer.allocation import Allocation
from optimizer.pairs import mechanism, pair_composition, pairs, paths_from_allocation
from optimizer.search.proxy import _apply, _composition, mpf_to_fraction
from optimizer.search.target import Target
from optimizer.spine import patterns_for

__all__ = ["SCREEN_RTOL", "SCREEN_TOL", "WATCH_TOP", "WorstOf", "screen_worst_pairs", "watch_builder"]

#: pairs watched besides the proxy (the largest upper bounds of the screen)
WATCH_TOP = 6
#: tolerances of the screen (absolute, relative): ranking needs far less than a certificate
SCREEN_TOL, SCREEN_RTOL = 1e-20, 1e-6

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
    wanted = tuple(watch)
    exact: list[tuple[Pair, ...]] = []  # decided once: a common factor leaves every lattice unchanged

    def build(rhos: Sequence[Fraction]) -> WorstOf:
        paths = {p.index: p for p in paths_from_allocation(_apply(shape, rhos), patterns)}
        missing = [p for p in wanted if p[0] not in paths or p[1] not in paths]
        if missing:
            raise ValueError(f"watch_builder: pairs {missing} are not pairs of this release ({len(paths)} paths)")
        if not exact:
            exact.append(tuple(p for p in wanted if engine_plan(mechanism(paths[p[0]]) + mechanism(paths[p[1]])).exact))
        return WorstOf([_composition(rhos)] + [pair_composition(paths[i], paths[j]) for i, j in exact[0]])

    return build
