"""Say before a run which pairs will not be exact (issue 35, item 2).

For every pair [M_i, M_j] of an allocation's paths, :func:`screen_pairs` asks the accountant which
engine its composition would be answered with (:func:`accountant.composition.engine_plan`: the
same decision as :class:`accountant.Composition`'s, taken without building the coarse sandwich
and without integrating).  A pair whose engine is the coarse sandwich (:mod:`accountant.coarse`)
gets a certified interval that is wider than the requested tolerance ("not exact"); the screen
names those pairs and the reason (e.g. "lattice too fine: planned nodes N = 3.1e+13 >
max_direct_nodes 1e+09").  Per-call fallbacks of an exact engine (a sieve too wide for particular
thresholds) are not predicted.

The screen is cheap (one lattice and one engine decision per pair, no tail computed; measured
≈ 2–4 s for the 946 DHC-persons pairs), so ``pairs``, ``optimize`` and ``report`` print it before
any long work.
"""

from __future__ import annotations

import contextlib
import contextvars
import time
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from typing import Any

from accountant.composition import engine_plan
from optimizer.census.allocation import Allocation
from optimizer.census.pairs import composition_key, mechanism, paths_from_allocation
from optimizer.census.pairs import pairs as all_pairs
from optimizer.census.spine import patterns_for

__all__ = ["ExactnessScreen", "PairPlan", "screen_pairs", "screen_paths"]

#: pairs listed by name in the printed screen (all are counted)
LISTED = 8


@dataclass(frozen=True, slots=True)
class PairPlan:
    """The planned engine of one pair: ``engine`` kind, whether it is ``exact``, and the
    ``reason`` when it is not (the accountant's words); ``planned_nodes`` is the direct
    trapezoid's node count N."""

    pair: tuple[int, int]
    engine: str
    exact: bool
    reason: str
    planned_nodes: float


@dataclass(frozen=True)
class ExactnessScreen:
    """The planned engines of every screened pair of one allocation.

    Attributes:
        allocation: the allocation's name.
        n_pairs: pairs screened.
        not_exact: the pairs whose planned engine is the coarse sandwich, by pair.
        engines: ``{engine kind: number of pairs}``.
        seconds: wall time of the screen.
    """

    allocation: str
    n_pairs: int
    not_exact: tuple[PairPlan, ...]
    engines: dict[str, int]
    seconds: float

    @property
    def all_exact(self) -> bool:
        """Every screened pair is planned on an exact engine."""
        return not self.not_exact

    def lines(self, label: str | None = None, listed: int = LISTED) -> list[str]:
        """The screen as text: one line when every pair is exact, else a count and up to
        ``listed`` pairs with their reasons."""
        name = label or self.allocation
        if self.all_exact:
            return [
                f"exactness screen of {name}: all {self.n_pairs} pairs planned on exact engines "
                f"({_engines_text(self.engines)}; {self.seconds:.1f} s)"
            ]
        n = len(self.not_exact)
        out = [
            f"exactness screen of {name}: {n} of {self.n_pairs} pairs will NOT be exact (coarse sandwich: "
            f"certified but wider than the tolerance); {_engines_text(self.engines)}; {self.seconds:.1f} s"
        ]
        for p in self.not_exact[:listed]:
            out.append(f"  pair [{p.pair[0]}, {p.pair[1]}]: {p.reason}")
        if n > listed:
            out.append(f"  … and {n - listed} more pairs")
        return out

    def as_dict(self, listed: int = 20) -> dict[str, Any]:
        """JSON-ready: counts, engines, and the first ``listed`` non-exact pairs with reasons (no
        timing: a run summary's content must not depend on the machine)."""
        return {
            "allocation": self.allocation,
            "n_pairs": self.n_pairs,
            "pairs_not_exact": len(self.not_exact),
            "engines": dict(self.engines),
            "not_exact": [{"pair": list(p.pair), "reason": p.reason} for p in self.not_exact[:listed]],
        }


def _engines_text(engines: dict[str, int]) -> str:
    return ", ".join(f"{k} {v}" for k, v in sorted(engines.items(), key=lambda kv: (-kv[1], kv[0])))


def screen_paths(
    paths: Sequence[Any],
    *,
    pairs: Iterable[tuple[int, int]] | None = None,
    name: str = "allocation",
    kinds: bool = False,
) -> ExactnessScreen:
    """:class:`ExactnessScreen` of the pairs i ≤ j of ``paths`` (:class:`optimizer.census.pairs.Path`),
    or only of ``pairs``: each pair's composition [M_i, M_j] is planned by
    :func:`accountant.composition.engine_plan` (nothing integrated), once per distinct multiset of
    budgets (DHC persons: 840 compositions for 946 pairs).  By default it decides exactness only: the
    exact engines are not told apart where the direct trapezoid is within reach (engine kind ``"exact"``,
    :func:`accountant.choose.plan_exactness`; a sixth less time on an optimized DHC-persons allocation);
    ``kinds=True`` names every engine (:func:`accountant.choose.plan_engine`), as ``census-plb pairs`` does."""
    t0 = time.perf_counter()
    by_index = {p.index: p for p in paths}
    if pairs is None:
        todo = [(a.index, b.index) for a, b in all_pairs(paths)]
    else:
        todo = sorted({(min(int(i), int(j)), max(int(i), int(j))) for i, j in pairs})
        missing = [p for p in todo if p[0] not in by_index or p[1] not in by_index]
        if missing:
            raise ValueError(f"screen_paths: unknown pairs {missing[:5]}; paths are {min(by_index)}..{max(by_index)}")
    mechs = {i: mechanism(by_index[i]) for i in {i for pair in todo for i in pair}}  # the paths asked for only
    engines: dict[str, int] = {}
    bad = []
    planned: dict[tuple, Any] = {}  # pairs with the same multiset of budgets have the same composition
    for i, j in todo:
        key = composition_key(by_index[i].rho, by_index[j].rho)
        plan = planned.get(key)
        if plan is None:
            plan = planned[key] = engine_plan(mechs[i] + mechs[j], kinds=kinds)
        engines[plan.kind] = engines.get(plan.kind, 0) + 1
        if not plan.exact:
            bad.append(PairPlan((i, j), plan.kind, False, plan.reason, plan.planned_nodes))
    return ExactnessScreen(name, len(todo), tuple(bad), engines, time.perf_counter() - t0)


#: screens remembered per (exact budgets, pairs) with the default patterns: the pipeline screens the
#: allocation it is about to sweep, and the sweep screens the same allocation again
SCREENS_KEPT = 8
_SCREENS: OrderedDict[tuple[Any, ...], ExactnessScreen] = OrderedDict()


def screen_pairs(
    alloc: Allocation,
    *,
    pairs: Iterable[tuple[int, int]] | None = None,
    patterns: Sequence[Any] | None = None,
    kinds: bool = False,
) -> ExactnessScreen:
    """:class:`ExactnessScreen` of an allocation's pairs: its paths from ``patterns`` (default
    :func:`optimizer.census.spine.patterns_for` of its geolevels, the rule of ``pairs`` and of the
    all-pairs confirmation), all pairs i ≤ j or only ``pairs``; ``kinds`` as in :func:`screen_paths`.
    The last :data:`SCREENS_KEPT` screens with the default patterns are remembered by exact budgets,
    pairs and ``kinds`` (a remembered one says 0 s)."""
    wanted = None if pairs is None else tuple(sorted({(min(int(i), int(j)), max(int(i), int(j))) for i, j in pairs}))
    pats = patterns_for(alloc.geolevels) if patterns is None else patterns
    paths = paths_from_allocation(alloc, pats)
    if wanted is not None and len(wanted) == len(paths) * (len(paths) + 1) // 2:
        every = tuple(sorted((a.index, b.index) for a, b in all_pairs(paths)))
        wanted = None if wanted == every else wanted  # every pair asked by name: the same screen as none
    key = (alloc.levels, wanted, kinds) if patterns is None else None
    if key is not None and key in _SCREENS:
        _SCREENS.move_to_end(key)
        return replace(_SCREENS[key], allocation=alloc.name, seconds=0.0)
    out = screen_paths(paths, pairs=wanted, name=alloc.name, kinds=kinds)
    if key is not None:
        _SCREENS[key] = out
        while len(_SCREENS) > SCREENS_KEPT:
            _SCREENS.popitem(last=False)
    return out


#: whether the pair jobs made in this context ask for the dearer exact fallbacks where the default engines
#: give the coarse sandwich (:func:`accountant.composition.thorough_composition`): True but in
#: :func:`default_engines_only`
_THOROUGH: contextvars.ContextVar[bool] = contextvars.ContextVar("thorough_pairs", default=True)


def thorough_pairs() -> bool:
    """Whether pair jobs made now use :func:`accountant.composition.thorough_composition` (the default)."""
    return _THOROUGH.get()


@contextlib.contextmanager
def default_engines_only() -> Iterator[None]:
    """Within this block the pair jobs made here (confirmations, release profiles) use the default engines
    alone, as before the release tier of issue 17: a benchmark's baseline (``bench.optimizer --baseline``)."""
    token = _THOROUGH.set(False)
    try:
        yield
    finally:
        _THOROUGH.reset(token)
