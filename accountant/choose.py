"""Which engine answers which question: the engine choice of :mod:`accountant.composition`.

Every decision is made here, from the switches of an :class:`~accountant.engine.EngineConfig`:

* the composition's own engine (:func:`make_engine`): a pmf table for a tiny span, an exact
  split along common factors of the weights (:mod:`accountant.split`, its small parts
  tabulated), a nested split down to a pmf table when the direct integrand has many peak
  clusters, the direct trapezoid (:mod:`accountant.quadrature`), or — for sums with no
  exploitable structure — the certified coarse sandwich (:mod:`accountant.coarse`, flagged);
* the engine of β's bracket search on costly split chains (:meth:`EngineChooser.tradeoff_search`);
* the engine of a trade-off batch of a split composition (:meth:`EngineChooser.tradeoff_batch`);
* the per-call coarse fallbacks when the exact sieve is too wide (:meth:`EngineChooser.fallbacks`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Iterator
from dataclasses import dataclass
from fractions import Fraction

from .coarse import CoarseEngine, kept_divisor, planned_nodes
from .diophantine import enumeration_estimate
from .engine import DEFAULT_CONFIG, Engine, EngineConfig, LatticeGroup
from .lattice import sub_gaussian_sd, sub_gaussian_variance
from .pmf import PmfEngine, pmf_span
from .quadrature import TailEngine
from .sieve import SieveTooWide, direct_kept_estimate
from .split import SplitEngine, find_nested, find_split

__all__ = [
    "EngineChooser",
    "EnginePlan",
    "build_nested",
    "coarse_engine",
    "make_engine",
    "plan_engine",
    "plan_exactness",
    "split_chain_cost",
    "split_search_cost",
]


class _NeedsCoarse(Exception):
    """Raised inside :func:`make_engine` when a part of a split has no exact engine within
    ``config.direct_kept_max``: the whole composition is then coarsened instead (one sandwich
    over few thresholds is far cheaper and narrower than a coarsened part queried at every
    outer term)."""


@dataclass(frozen=True, slots=True)
class EnginePlan:
    """What :func:`make_engine` would build for a lattice sum, found without building the coarse
    sandwich and without integrating (:func:`plan_engine`).

    ``kind`` is the engine kind (``"pmf"``, ``"split"``, ``"trapezoid"``, ``"coarse"``; ``"exact"`` from
    :func:`plan_exactness`: one of the exact ones, not decided); ``exact``
    is False only for the coarse sandwich, whose width does not reach the usual tolerances, and
    ``reason`` then says why it was chosen (empty for exact engines).  ``planned_nodes`` is the
    direct trapezoid's node count N = 16·(sub-Gaussian sd); ``kept_estimate`` its window-sieve
    estimate when the decision needed it (else ``None``)."""

    kind: str
    exact: bool
    reason: str = ""
    planned_nodes: float = 0.0
    kept_estimate: int | None = None


def _select(
    groups: tuple[LatticeGroup, ...],
    budget: float | None,
    coarse_ok: bool,
    config: EngineConfig,
    known_kept: int | None = None,
) -> Engine | EnginePlan:
    """The engine choice of :func:`make_engine`: an exact engine (built), or an
    :class:`EnginePlan` of kind ``"coarse"`` when the sum needs the sandwich (not built).
    ``known_kept``: the window-sieve estimate when the caller has it."""
    cfg = config
    if budget is None:
        budget = cfg.split_chain_max_cost
    if len(groups) <= cfg.pmf_max_groups and pmf_span(groups) <= cfg.direct_pmf_max_span:
        return PmfEngine(tuple(groups))
    split = find_split(groups, cfg)
    if split is not None:
        outer = 2 * 16 * sub_gaussian_sd(split[0]) / split[2] + 1
        if outer <= budget:
            try:
                engine = _build_split(split, budget / outer, cfg)
            except _NeedsCoarse:
                engine = None
            if engine is not None and not (
                _leaf_is_trapezoid(engine) and split_search_cost(engine) > cfg.split_tail_max_cost
            ):
                return engine
    planned = planned_nodes(groups)
    kept: list[int] = [] if known_kept is None else [known_kept]

    def kept_estimate() -> int:
        if not kept:
            # both questions asked of it are "more than nested_min_kept (≤ direct_kept_max)?": the count
            # may stop once it is at most that (an upper bound then; exact above it)
            kept.append(direct_kept_estimate(groups, stop_at=int(min(cfg.nested_min_kept, cfg.direct_kept_max))))
        return kept[0]

    reason = ""
    if planned > cfg.max_direct_nodes:
        reason = f"lattice too fine: planned nodes N = {planned:.3g} > max_direct_nodes {cfg.max_direct_nodes:.3g}"
    else:
        # the window estimate first: it is cheaper than the nested planner's search and decides
        # whether a nested split would be used at all
        nested = (
            find_nested(groups, budget=cfg.nested_max_cost, config=cfg)
            if len(groups) <= cfg.nested_max_groups and kept_estimate() > cfg.nested_min_kept
            else None
        )
        if nested is not None:
            return build_nested(groups, nested[1], cfg)
        if planned > 2 * cfg.direct_kept_max and kept_estimate() > cfg.direct_kept_max:
            reason = (
                f"no exact structure: planned nodes N = {planned:.3g}, peak-window estimate "
                f"{kept_estimate():.3g} > direct_kept_max {cfg.direct_kept_max:.3g} and no exact split"
            )
    estimate = math.inf
    if reason and cfg.ellipsoid_sieve:
        if planned >= 2**53:  # (the calls' N must stay below the finder's 2^57)
            reason += "; beyond the ellipsoid node finder (planned N ≥ 2^53)"
        else:
            estimate = enumeration_estimate(groups, int(planned), cfg.ellipsoid_plan_log_threshold)
            if estimate <= cfg.ellipsoid_max_visits / 4:
                return TailEngine(groups, config=cfg, node_finder="ellipsoid")
            reason += f"; ellipsoid enumeration estimate {estimate:.3g} > {cfg.ellipsoid_max_visits / 4:.3g}"
    # (whole compositions only: a part of a split that would need the sandwich abandons the split)
    if reason and coarse_ok:
        found = _whole_fallback(groups, estimate, cfg)
        if not isinstance(found, str):
            return found
        reason += found
    if reason:
        if not coarse_ok:
            raise _NeedsCoarse
        return EnginePlan("coarse", False, reason, planned, kept[0] if kept else None)
    return TailEngine(groups, config=cfg)


def _whole_fallback(groups: tuple[LatticeGroup, ...], estimate: float, cfg: EngineConfig) -> Engine | str:
    """The exact engines a whole composition gets before the sandwich, dearer than the rules of
    :func:`_select`: a nested split of chain cost ≤ ``cfg.nested_fallback_max_cost`` (with outer
    enumerations up to ``cfg.split_fallback_max_outer`` when that is larger), then the ellipsoid
    node finder with ``cfg.ellipsoid_fallback_max_visits`` enumeration steps when ``estimate`` (its
    :func:`~accountant.diophantine.enumeration_estimate`) is at most a quarter of them.  Returns the
    engine, or what was tried, for the sandwich's reason."""
    said = ""
    if len(groups) <= cfg.nested_max_groups and cfg.nested_fallback_max_cost > cfg.nested_max_cost:
        nested = find_nested(groups, budget=cfg.nested_fallback_max_cost, config=cfg)
        if nested is not None:
            return build_nested(groups, nested[1], cfg)
        said += f"; no nested split of cost ≤ {cfg.nested_fallback_max_cost:.3g}"
        if cfg.split_fallback_max_outer > cfg.split_max_outer:
            wide = dataclasses.replace(cfg, split_max_outer=cfg.split_fallback_max_outer)
            nested = find_nested(groups, budget=cfg.nested_fallback_max_cost, config=wide)
            if nested is not None:
                return build_nested(groups, nested[1], wide)
            said += f" (outer enumerations up to {cfg.split_fallback_max_outer:.3g})"
    visits = cfg.ellipsoid_fallback_max_visits
    if cfg.ellipsoid_sieve and visits > cfg.ellipsoid_max_visits and estimate < math.inf:
        if estimate <= visits / 4:
            wide = dataclasses.replace(cfg, ellipsoid_max_visits=visits)
            return TailEngine(groups, config=wide, node_finder="ellipsoid")
        said += f"; ellipsoid estimate {estimate:.3g} > {visits / 4:.3g} (fallback)"
    return said


def make_engine(
    groups: tuple[LatticeGroup, ...],
    budget: float | None = None,
    *,
    coarse_ok: bool = True,
    config: EngineConfig = DEFAULT_CONFIG,
) -> Engine:
    """The tail engine for a lattice sum: a pmf table, an exact split (accountant.split), the
    direct trapezoid, or — for sums with no exploitable structure, whose exact lattice would
    keep more than ``config.direct_kept_max`` nodes — the certified coarse sandwich of
    :mod:`accountant.coarse` sized to ``config.coarse_kept`` nodes (flagged: its width does not
    reach the usual tolerances).

    ``budget`` (default ``config.split_chain_max_cost``) bounds the product of the outer
    enumeration sizes along a chain of splits (the factor by which thresholds multiply down the
    chain); past it the chain stops and the remainder is integrated directly.  With
    ``coarse_ok=False`` (parts of a split, the inside of a sandwich) a sum that would need
    coarsening raises :class:`_NeedsCoarse`.  :func:`plan_engine` tells the same choice without
    building the sandwich."""
    choice = _select(tuple(groups), budget, coarse_ok, config)
    if isinstance(choice, EnginePlan):
        return coarse_engine(groups, config=config)
    return choice


def plan_engine(groups: tuple[LatticeGroup, ...], config: EngineConfig = DEFAULT_CONFIG) -> EnginePlan:
    """The kind of engine :func:`make_engine` (hence :class:`EngineChooser`'s ``main``) uses for
    ``groups``, and why when it is the coarse sandwich: the same decisions, taken by the same
    code, but the sandwich is not built and nothing is integrated (exact engines are built, which
    is cheap: no tails are computed).  Per-call fallbacks (:meth:`EngineChooser.fallbacks`, when
    an exact sieve is too wide for particular thresholds) are not predicted."""
    choice = _select(tuple(groups), None, True, config)
    if isinstance(choice, EnginePlan):
        return choice
    return EnginePlan(choice.name, True, "", planned_nodes(groups), None)


def plan_exactness(groups: tuple[LatticeGroup, ...], config: EngineConfig = DEFAULT_CONFIG) -> EnginePlan:
    """Whether :func:`make_engine` answers ``groups`` exactly — :func:`plan_engine`'s verdict, without
    telling the exact engines apart when the direct trapezoid is within reach.

    The direct rule is taken by :func:`_select` whenever no split or nested split is (both exact too), and
    it is exact when its planned node count N is at most ``config.max_direct_nodes`` and N ≤ 2·
    ``config.direct_kept_max`` or the window-sieve estimate is at most ``config.direct_kept_max``.  Then
    the kind is ``"exact"`` (a pmf table, a split, a nested split or the trapezoid: not decided), and
    the nested planner's search — two thirds of a screen's time on an optimized DHC-persons allocation —
    is skipped; likewise beyond the sieve when the ellipsoid node finder's enumeration estimate is
    within its budget (:func:`_select` takes it there unless a split is cheaper).  Otherwise this is
    :func:`plan_engine`'s decision (kind, and the reason when it is the sandwich)."""
    cfg = config
    if len(groups) <= cfg.pmf_max_groups and pmf_span(groups) <= cfg.direct_pmf_max_span:
        return EnginePlan(PmfEngine.name, True, "", planned_nodes(groups))
    planned = planned_nodes(groups)
    kept = None
    if planned <= cfg.max_direct_nodes:
        if planned <= 2 * cfg.direct_kept_max:
            return EnginePlan("exact", True, "", planned)
        kept = direct_kept_estimate(groups, stop_at=int(cfg.direct_kept_max))
        if kept <= cfg.direct_kept_max:  # (then only an upper bound of the estimate: not reported)
            return EnginePlan("exact", True, "", planned)
        # beyond the window sieve: the ellipsoid node finder answers exactly when its enumeration is small
        if cfg.ellipsoid_sieve and planned < 2**53:
            estimate = enumeration_estimate(groups, int(planned), cfg.ellipsoid_plan_log_threshold)
            if estimate <= cfg.ellipsoid_max_visits / 4:
                return EnginePlan("exact", True, "", planned, kept)
    choice = _select(tuple(groups), None, True, cfg, kept)
    if isinstance(choice, EnginePlan):
        return choice
    return EnginePlan(choice.name, True, "", planned, kept)


def coarse_engine(groups, kept_target: float | None = None, *, config: EngineConfig = DEFAULT_CONFIG) -> CoarseEngine:
    """The coarse sandwich (accountant.coarse) of ``groups`` with about ``kept_target``
    (default ``config.coarse_kept``) kept nodes on its coarse lattice."""
    target = config.coarse_kept if kept_target is None else kept_target
    g = kept_divisor(groups, target, direct_kept_estimate)
    inner = functools.partial(make_engine, coarse_ok=False, config=config)
    for _ in range(4):
        try:
            return CoarseEngine.build(groups, inner, divisor=g, config=config)
        except _NeedsCoarse:
            g *= 8
    return CoarseEngine.build(groups, functools.partial(make_engine, config=config), divisor=g, config=config)


def split_chain_cost(engine: Engine) -> float:
    """Leaf thresholds per threshold of an engine: the product of the outer enumeration sizes
    along its chain of exact splits (1 for other engines)."""
    if isinstance(engine, SplitEngine):
        return (32 * math.sqrt(engine.u_engine.var) + 1) * split_chain_cost(engine.v_engine)
    return 1.0


def _chain_leaf(engine: Engine) -> Engine:
    while isinstance(engine, SplitEngine):
        engine = engine.v_engine
    return engine


def _leaf_is_trapezoid(engine: Engine) -> bool:
    return isinstance(_chain_leaf(engine), TailEngine)


def split_search_cost(engine: Engine) -> float:
    """Planning cost of one threshold on an exact split chain: :func:`split_chain_cost` times
    the leaf's kept trapezoid nodes in thousands (1 for a pmf-table leaf); 0 for engines that
    are not splits."""
    if not isinstance(engine, SplitEngine):
        return 0.0
    leaf = _chain_leaf(engine)
    nodes = direct_kept_estimate(leaf.groups) / 1000 if isinstance(leaf, TailEngine) else 1.0
    return split_chain_cost(engine) * max(1.0, nodes)


def _parts(split) -> tuple[tuple[LatticeGroup, ...], tuple[LatticeGroup, ...], int, int, Fraction]:
    """(U groups, V groups, d_A, d_B, v_U) of a split (A, B, d_A, d_B)."""
    A, B, dA, dB = split[:4]
    u_groups = tuple(LatticeGroup(g.sigma2, g.b // dA, g.mult) for g in A)
    v_groups = tuple(LatticeGroup(g.sigma2, g.b // dB, g.mult) for g in B)
    v_u = sub_gaussian_variance(u_groups)
    return u_groups, v_groups, dA, dB, v_u


def _build_split(split, budget: float, config: EngineConfig) -> SplitEngine:
    u_groups, v_groups, dA, dB, v_u = _parts(split)
    v_engine = _split_part(v_groups, config) if find_split(v_groups, config) is None else None
    u_engine = _split_part(u_groups, config) or TailEngine(u_groups, config=config)
    return SplitEngine(
        u_engine, v_engine or make_engine(v_groups, budget, coarse_ok=False, config=config), dA, dB, v_u, config
    )


def _split_part(groups, config: EngineConfig) -> PmfEngine | None:
    """A pmf table for a small-span part of an exact split, or ``None`` (see
    ``EngineConfig.split_pmf_max_span``)."""
    if len(groups) <= config.pmf_max_groups and pmf_span(groups) <= config.split_pmf_max_span:
        return PmfEngine(tuple(groups))
    return None


def build_nested(groups, plan, config: EngineConfig = DEFAULT_CONFIG) -> Engine:
    """Engine for a :func:`accountant.split.find_nested` plan: splits down to a pmf table."""
    if plan[0] == "pmf":
        return PmfEngine(tuple(groups))
    u_groups, v_groups, dA, dB, v_u = _parts(plan)
    return SplitEngine(PmfEngine(u_groups), build_nested(v_groups, plan[4], config), dA, dB, v_u, config)


class EngineChooser:
    """The engines of one lattice sum under one :class:`~accountant.engine.EngineConfig`.

    :attr:`main` is built at construction (:func:`make_engine`); the others on first use.
    """

    def __init__(self, groups: tuple[LatticeGroup, ...], config: EngineConfig = DEFAULT_CONFIG):
        self.groups = tuple(groups)
        self.config = config
        self.main: Engine = make_engine(self.groups, config=config)
        self._search: Engine | None = None  # β's engine on costly split chains, built once

    def tradeoff_search(self, engine: Engine) -> Engine:
        """The engine for β's bracket search (~100 thresholds) when the composition's engine is
        ``engine``: ``engine`` itself unless it is a split chain costing more than
        ``config.tradeoff_split_max_cost`` (:func:`split_search_cost`; for a chain ending in a
        trapezoid, ``config.tradeoff_trapezoid_leaf_max_cost``); then the direct
        trapezoid when its window-sieve estimate is at most ``config.direct_kept_max`` (exact),
        else the coarse sandwich (flagged).  Built once."""
        cost = split_search_cost(engine)
        cap = self.config.tradeoff_split_max_cost
        if _leaf_is_trapezoid(engine):
            cap = min(cap, self.config.tradeoff_trapezoid_leaf_max_cost)
        if cost <= cap:
            return engine
        if self._search is None:
            cfg = self.config
            if direct_kept_estimate(self.groups, cfg.tradeoff_direct_log_threshold) <= cfg.direct_kept_max:
                self._search = TailEngine(self.groups, config=cfg)
            else:
                self._search = coarse_engine(self.groups, config=cfg)
        return self._search

    def tradeoff_batch(self, engine: Engine) -> Engine | None:
        """A direct trapezoid for the trade-off thresholds of a batch when the composition's
        engine ``engine`` is an exact split and the direct integrand is small enough (window-sieve
        estimate ≤ ``config.tradeoff_direct_max_estimate``), else ``None`` (use ``engine``)."""
        if not isinstance(engine, SplitEngine):
            return None
        cfg = self.config
        if direct_kept_estimate(self.groups, cfg.tradeoff_direct_log_threshold) > cfg.tradeoff_direct_max_estimate:
            return None
        return TailEngine(self.groups, config=cfg)

    def fallbacks(self) -> Iterator[CoarseEngine]:
        """Per-call replacements when an exact engine's sieve is too wide for a batch
        (:class:`~accountant.sieve.SieveTooWide`): coarse sandwiches of ``config.coarse_kept``,
        1/8 and 1/64 of it kept nodes (each built only when the previous one failed too; those
        whose build fails are skipped).  Never replaces the composition's own engine."""
        for factor in (1, 8, 64):
            try:
                engine = coarse_engine(self.groups, self.config.coarse_kept / factor, config=self.config)
            except SieveTooWide:
                continue
            yield engine
