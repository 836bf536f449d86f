"""The decision table: per promise a policymaker might hold, how much noise can go.

One row per promise (:data:`PROMISES`):

* ``point`` — the promised (ε, δ) point on every pair of spine paths;
* ``curve`` — every point of the baseline ρ's zCDP curve from δ = 1e-1 down to a floor;
* ``per-geolevel`` — every geolevel's own (ε, δ) (its queries alone, the scenario's neighbour model);
* ``rho`` — the zCDP budget ρ itself.

Per row: the largest *confirmed* uniform cut (every noise variance × 1/c), the best *confirmed*
reallocation that makes no query noisier, the new total ρ of each, the side effects on the
other promises and which geolevel promises break. An option is reported only with how it was
confirmed (all N pairs; each geolevel's mechanism exactly; by definition); otherwise the row
says it was not confirmed or not computed by this run, and which scenario computes it.

The ``per-geolevel`` row of a run with another target cuts every geolevel by the smallest of the
geolevels' own calibration factors (:func:`optimizer.search.geolevels.geolevel_view`), or each by
its own (the optimum of ``minimax-relative``), rounded down to
:data:`optimizer.search.per_geolevel.FACTOR_GRID` so the exact engines stay fast; a per-geolevel run shows
its own proposals. Both are certified by :func:`optimizer.search.geolevels.geolevel_promises`
(certified ε ≤ promised ε on each geolevel's mechanism).
Keeping ρ allows no cut: a uniform cut multiplies ρ by c > 1, and with no query noisier every
ρ_q can only grow, so an equal total leaves each as it is.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from accountant.decimals import decimal_string
from optimizer.census.allocation import Allocation
from optimizer.formatting import fmt
from optimizer.search import Target, proxy_delta, target_from_allocation, variance_drop_percent
from optimizer.search.geolevels import geolevel_promises
from optimizer.search.per_geolevel import floor_to_grid
from optimizer.search.proxy import mpf_to_fraction

__all__ = ["PROMISES", "DecisionRow", "Option", "decision"]

PROMISES = ("point", "curve", "per-geolevel", "rho")
#: tolerance of the proxy δ that states a side effect (a lower bound is all the text uses)
SIDE_EFFECT_RTOL = 1e-6


@dataclass(frozen=True)
class Option:
    """One way to cut noise under a promise."""

    variance_drop_percent: float  # drop of the weighted sum of noise variances
    objective_drop_percent: float | None  # drop of the scenario's objective (None: not the point)
    total_rho: str  # the new total ρ (exact fraction)
    certified: str | None  # how it was established ("confirmed on all 946 pairs", …); None: not confirmed


@dataclass(frozen=True)
class DecisionRow:
    """One promise: its options, side effects and broken geolevel promises."""

    promise: str  # one of PROMISES
    statement: str  # the promise in words
    uniform: Option | None  # None: not computed by this run (see ``note``)
    reallocation: Option | None
    side_effects: str  # what the options do to the other promises
    geolevels_broken: dict[str, list[str]]  # {"uniform": [...], "reallocation": [...]}
    note: str  # where the numbers come from, or which scenario computes them
    selected: bool  # the scenario's target selects this row

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _point_statement(s: Mapping[str, Any]) -> str:
    """The promised point in words (ε rounded down: the promise is not overstated)."""
    eps = decimal_string(Fraction(str(s["target_epsilon"])), 12, "down", notation="auto")
    return f"ε = {eps} at δ = {s['target_delta']} on every pair of spine paths"


def _down(x: Fraction) -> str:
    """``x`` to 3 significant digits, rounded down (a lower bound stays one)."""
    return decimal_string(x, 3, "down", notation="auto")


def _pct(x: float) -> str:
    return f"{x:.4f} %"


def _weaker_text(grid: Sequence[Mapping[str, Any]], label: str) -> str:
    """Where ``label``'s proxy δ exceeds the old zCDP curve (from the side-effects table)."""
    over = []
    for r in grid:
        promised, new = Fraction(str(r["delta_promised"])), r.get(f"{label}_delta_upper")
        if new not in (None, "") and Fraction(str(new)) > promised:
            over.append((r["delta_promised"], Fraction(str(new)) / promised))
    if not over:
        return "keeps every point of the old zCDP curve on the grid"
    worst = max(ratio for _, ratio in over)
    return f"above the old zCDP curve at δ = {over[0][0]} … {over[-1][0]} (up to {float(worst):.3g}× its δ; proxy pair)"


def _per_geolevel_allocation(alloc: Allocation, factors: Mapping[str, Fraction]) -> Allocation:
    return alloc.with_rho({(g, q): rho * factors[g] for g, q, rho in alloc.items()})


def _point_row(alloc, s, grid, selected: bool) -> DecisionRow:
    n = s.get("n_pairs_confirmed") or 0
    uniform = Option(
        s["uniform_variance_drop_percent"],
        s.get("objective_uniform_drop_percent"),
        str(alloc.total_rho * Fraction(s["uniform_c"])),
        f"confirmed on all {n} pairs" if s.get("uniform_confirmed") else None,
    )
    ok = s.get("confirmed") and s.get("pareto_guard_met") and s.get("n_queries_noisier", 1) == 0
    realloc = Option(
        s["optimized_variance_drop_percent"],
        s.get("objective_drop_percent"),
        s["optimized_total_rho"],
        f"confirmed on all {n} pairs" if ok else None,
    )
    geo = s.get("geolevels") or {}
    return DecisionRow(
        "point",
        _point_statement(s),
        uniform,
        realloc,
        f"uniform cut: {_weaker_text(grid, 'uniform')}; reallocation: {_weaker_text(grid, 'optimized')}",
        {"uniform": list(geo.get("uniform_broken", [])), "reallocation": list(geo.get("optimized_broken", []))},
        "this run",
        selected,
    )


#: δ below a curve target's floor at which the decision table says what happens (not kept there)
BELOW_FLOOR = ("1e-20", "1e-30")


def _below_floor(alloc: Allocation, proposals: Mapping[str, Allocation], conversion: str, floor: str) -> str:
    """What a curve-target proposal does below the curve's floor: the certified lower bound of its proxy
    δ over the old zCDP curve's δ at ε = conversion(ρ, δ), at δ = floor/10 and :data:`BELOW_FLOOR`."""
    deltas = [format(Decimal(floor) / 10, "g"), *(d for d in BELOW_FLOOR if Fraction(d) < Fraction(floor))]
    parts = []
    for label, new in proposals.items():
        ratios = []
        for d in deltas:
            t = target_from_allocation(alloc, delta=d, conversion=conversion)
            lower = mpf_to_fraction(proxy_delta(new, t, rtol=SIDE_EFFECT_RTOL).lower)
            ratios.append(f"δ = {d}: ≥ {_down(lower / Fraction(d))}×")
        parts.append(f"{label}: " + ", ".join(ratios))
    return "below the floor, exact δ over the old curve's δ (proxy pair; above 1: not kept there) — " + "; ".join(parts)


def _curve_row(
    alloc,
    s,
    grid,
    selected: bool,
    floor: str | None,
    others: Mapping[str, str],
    proposals: Mapping[str, Allocation] | None = None,
) -> DecisionRow:
    statement = f"the baseline ρ's zCDP curve at every δ from 1e-1 down to {floor or 'a floor'}"
    if not selected:
        return DecisionRow(
            "curve",
            statement,
            None,
            None,
            "this run's uniform cut: " + _weaker_text(grid, "uniform"),
            {},
            f"not this run's target: scenario {others['curve']} computes it"
            if others.get("curve")
            else 'not this run\'s target (a scenario with target = "curve" computes it)',
            False,
        )
    row = _point_row(alloc, s, grid, True)
    return DecisionRow(
        "curve",
        statement,
        row.uniform,
        row.reallocation,
        f"kept on the grid down to δ = {floor}; "
        + (
            _below_floor(
                alloc,
                {"uniform cut": proposals["uniform"], "reallocation": proposals["reallocation"]},
                s["conversion"],
                floor,
            )
            if proposals is not None and floor is not None
            else "below it not checked"
        ),
        row.geolevels_broken,
        "this run",
        True,
    )


def _geolevel_row(alloc, s, target: Target, weights, obj, proposals: Mapping[str, Allocation] | None) -> DecisionRow:
    """The per-geolevel promise: the run's own proposals when it is the run's target (``proposals``),
    else each geolevel cut by its own factor and the release by the smallest of them."""
    geo = s.get("geolevels") or {}
    base = geo.get("baseline") or []
    statement = "every geolevel's own (ε, δ) at δ = " + str(geo.get("delta", target.delta))
    selected = proposals is not None
    if not base:
        return DecisionRow("per-geolevel", statement, None, None, "", {}, "no per-geolevel view", selected)
    delta, conv, model = geo["delta"], geo["conversion"], geo["model"]
    if proposals is None:
        factors = {r["geolevel"]: floor_to_grid(Fraction(r["rho_factor"])) for r in base}
        proposals = {
            "uniform": alloc.scaled(min(factors.values())),
            "reallocation": _per_geolevel_allocation(alloc, factors),
        }
        texts = {"uniform": "one factor", "reallocation": "each geolevel's own factor"}
        note = f"computed here from each geolevel alone ({model} neighbour model)"
        broken = {
            label: [p.geolevel for p in geolevel_promises(alloc, a, delta, conv, model) if not p.kept]
            for label, a in proposals.items()
        }
    else:
        texts = {"uniform": "the uniform cut", "reallocation": "the per-geolevel optimum"}
        note = "this run"
        # the run's tables certified these very allocations geolevel by geolevel: not computed twice
        broken = {"uniform": list(geo["uniform_broken"]), "reallocation": list(geo["optimized_broken"])}
    options, point_text = {}, []
    for label, alloc_new in proposals.items():
        options[label] = Option(
            variance_drop_percent(alloc_new, alloc, weights),
            obj.drop_percent(alloc_new, alloc, weights) if obj is not None else None,
            str(alloc_new.total_rho),
            None if broken[label] else "certified exactly on each geolevel alone",
        )
        d = proxy_delta(alloc_new, target, rtol=SIDE_EFFECT_RTOL)
        lower = mpf_to_fraction(d.lower)
        ratio = lower / Fraction(target.delta)
        point_text.append(
            f"{texts[label]}: the release's point δ ≥ {decimal_string(lower, 3, 'down')} "
            f"(≥ {_down(ratio)}× the promise)"
        )
    return DecisionRow(
        "per-geolevel",
        statement,
        options["uniform"],
        options["reallocation"],
        "; ".join(point_text),
        broken,
        note,
        selected,
    )


def _rho_row(alloc, s, selected: bool) -> DecisionRow:
    none = Option(0.0, 0.0, str(alloc.total_rho), "by definition")
    shape = s.get("zcdp_optimum_shape_variance_drop_percent")
    note = (
        "keeping ρ allows no cut: a uniform cut multiplies ρ by its factor, and with no query noisier "
        "an equal total ρ leaves every query's ρ as it is"
    )
    if shape is not None:
        note += (
            f"; without that guard the zCDP-optimum shape at the same ρ cuts the sum of variances by "
            f"{_pct(shape)} but makes some queries noisier (appendix)"
        )
    kept: dict[str, list[str]] = {"uniform": [], "reallocation": []}
    return DecisionRow("rho", f"total ρ = {fmt(alloc.total_rho, 10)}", none, none, "none", kept, note, selected)


def decision(
    alloc: Allocation,
    summary: Mapping[str, Any],
    grid: Sequence[Mapping[str, Any]],
    *,
    target: Target,
    target_kind: str,
    curve_floor: str | None,
    weights=None,
    objective=None,
    others: Mapping[str, str] | None = None,
    proposals: Mapping[str, Allocation] | None = None,
) -> dict[str, Any]:
    """The decision table of one run: ``{"rows": [...], "selected": kind, "sentence": str}``.

    Args:
        alloc: the baseline allocation; summary: the run's summary so far (uniform, optimized,
            confirmation and geolevel keys); grid: the side-effects table
            (:func:`optimizer.pipeline.side_effects.delta_grid_rows`), whose smallest δ is the floor of
            the curve row when the scenario has no curve of its own.
        target: the promised point; target_kind: the scenario's target (``point``, ``curve``,
            ``per-geolevel``); curve_floor: the curve target's smallest δ.
        weights, objective: the scenario's query weights and objective (for the drops).
        others: ``{promise: scenario name}`` of scenarios that compute the rows this run does not.
        proposals: ``{"uniform": …, "reallocation": …}``, the run's allocations (a per-geolevel run's row).
    """
    others = others or {}
    if curve_floor is None and grid:
        curve_floor = str(min((r["delta_promised"] for r in grid), key=lambda d: Fraction(str(d))))
    rows = [
        _point_row(alloc, summary, grid, target_kind == "point")
        if target_kind == "point"
        else DecisionRow(
            "point",
            _point_statement(summary),
            None,
            None,
            "",
            {},
            f"not this run's target: scenario {others['point']} computes it"
            if others.get("point")
            else "not this run's target",
            False,
        ),
        _curve_row(alloc, summary, grid, target_kind == "curve", curve_floor, others, proposals),
        _geolevel_row(alloc, summary, target, weights, objective, proposals if target_kind == "per-geolevel" else None),
        _rho_row(alloc, summary, False),
    ]
    chosen = next(r for r in rows if r.selected)
    return {"rows": [r.as_dict() for r in rows], "selected": chosen.promise, "sentence": _sentence(chosen)}


def _sentence(row: DecisionRow) -> str:
    """The one sentence naming the row the scenario's target selects, with confirmed numbers only."""
    head = f"This scenario keeps the {row.promise} promise ({row.statement})"
    parts = []
    for name, opt in (("a uniform cut", row.uniform), ("a reallocation with no query noisier", row.reallocation)):
        if opt is None:
            continue
        if opt.certified:
            parts.append(f"{name} of {_pct(opt.variance_drop_percent)} of the noise variance ({opt.certified})")
        else:
            parts.append(f"{name}: NOT CONFIRMED")
    return head + (": " + "; or ".join(parts) if parts else "") + "."
