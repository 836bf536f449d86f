"""The explorer's starting points and its "optimize from here": allocations the library computes.

Every preset is an :class:`~optimizer.census.allocation.Allocation` on the scenario's geolevels and
queries, labelled by where it comes from (nothing the user wrote is called the Bureau's):

* the **baseline** — the scenario's allocation: "production" when it is a built-in Bureau allocation
  (:data:`optimizer.census.allocation.BUILTIN_NAMES`), else "the scenario's own allocation";
* **production**, for a scenario with its own allocation file, when a built-in allocation has the same
  geolevels and queries;
* the **uniform minimax cut** — every budget × the largest exact c whose certified proxy δ keeps every
  promised point (:func:`optimizer.search.calibrate_shape`; the optimum of minimax-relative);
* the **optimizer's run** — ``allocation_optimized.toml`` of the scenario's run directory, only when
  its summary is valid and was made for this scenario (:func:`optimizer.jobs.provenance.check_run_dir`);
* **optimized from here** — :func:`optimize_from_here`: the objective's convex optimum under the Pareto
  guard *relative to the current setting* (no query noisier than here), calibrated on the proxy pair
  (:func:`optimizer.search.guarded.calibrated_optimum`). Like every proxy number it still needs the
  all-pairs confirmation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from pathlib import Path

from optimizer.census.allocation import BUILTIN_NAMES, Allocation, load_builtin
from optimizer.jobs.provenance import check_run_dir
from optimizer.pipeline.result import RunResult
from optimizer.scenario import Scenario
from optimizer.search import Target, calibrate_shape
from optimizer.search.calibrate import Calibration
from optimizer.search.guarded import calibrated_optimum
from optimizer.search.objectives import OBJECTIVES, ParetoGuard, get_objective

__all__ = [
    "OBJECTIVE_CHOICES",
    "Preset",
    "baseline_label",
    "optimize_from_here",
    "run_preset",
    "static_presets",
    "uniform_cut",
]


@dataclass(frozen=True)
class Preset:
    """A named allocation: ``key`` (the page's option value), ``label`` (says where it comes from)."""

    key: str
    label: str
    allocation: Allocation


def baseline_label(sc: Scenario) -> str:
    """How the page names the scenario's own allocation."""
    if sc.allocation in BUILTIN_NAMES:
        return f"production: the Bureau's {sc.allocation} allocation (the scenario's baseline)"
    return f"the scenario's own allocation ({Path(sc.allocation).name}, not the Bureau's)"


def static_presets(sc: Scenario, baseline: Allocation) -> list[Preset]:
    """The baseline and, for a scenario with its own file, a matching built-in production allocation."""
    out = [Preset("baseline", baseline_label(sc), baseline)]
    if sc.allocation not in BUILTIN_NAMES:
        shape = [(g, q) for g, q, _ in baseline.items()]
        for name in BUILTIN_NAMES:
            prod = load_builtin(name)
            if [(g, q) for g, q, _ in prod.items()] == shape:
                out.append(Preset(f"production:{name}", f"production: the Bureau's {name} allocation", prod))
                break
    return out


def run_preset(sc: Scenario, baseline: Allocation, runs_root: str | Path = "runs") -> tuple[Preset | None, str]:
    """The optimizer's allocation from ``<runs_root>/<scenario>`` when that run is valid for ``sc``:
    ``(preset, "")``, else ``(None, why not)``."""
    run_dir = Path(runs_root) / sc.name
    try:
        res = RunResult.read(run_dir)
    except ValueError as exc:
        return None, str(exc)
    if res is None:
        return None, f"no run in {run_dir} (census-plb optimize --scenario {sc.name})"
    problems = check_run_dir(run_dir, res.summary, sc)
    if problems:
        return None, f"the run in {run_dir} is not for this scenario: {problems[0]}"
    if not res.allocation_toml:
        return None, f"the run in {run_dir} has no allocation_optimized.toml"
    alloc = Allocation.from_toml(res.allocation_toml)
    if [(g, q) for g, q, _ in alloc.items()] != [(g, q) for g, q, _ in baseline.items()]:
        return None, f"the run in {run_dir} has other queries than the baseline"
    state = "confirmed on all pairs" if res.summary.get("confirmed") else "NOT confirmed on all pairs"
    label = f"the optimizer's run ({res.summary.get('objective', 'objective?')}, Pareto guard; {state})"
    return Preset("run", label, alloc), ""


def _lowest(shape: Allocation, points: Sequence[Target], hint: float = 1.0) -> Calibration:
    """The calibration of ``shape`` that keeps every point (the smallest factor over the points)."""
    return min((calibrate_shape(shape, t, hint=hint) for t in points), key=lambda c: c.c)


def uniform_cut(here: Allocation, points: Sequence[Target]) -> tuple[Allocation, Fraction]:
    """Every budget of ``here`` × c, c the largest exact factor keeping every promised point on the
    proxy pair; ``(allocation, c)``."""
    cal = _lowest(here, points, hint=1.0)
    return here.scaled(cal.c), cal.c


def optimize_from_here(
    sc: Scenario, here: Allocation, points: Sequence[Target], objective: str
) -> tuple[Allocation, str]:
    """The optimum of ``objective`` (one of :data:`optimizer.search.objectives.OBJECTIVES`, with the
    scenario's weights and fan-outs) that keeps every promised point on the proxy pair, with no query
    noisier than in ``here`` (the Pareto guard relative to here); ``(allocation, what it did)``.
    minimax-relative: the uniform cut of ``here`` (its optimum)."""
    obj = get_objective(objective, where="objective")
    if obj.name == "minimax-relative":
        alloc, c = uniform_cut(here, points)
        return alloc, f"minimax-relative optimum from this setting: the uniform cut, every budget × {float(c):.10g}"
    if sc.fan_outs is not None:
        obj = obj.with_fan_outs(sc.fan_outs)
    weights = {(g, q): sc.weight(g, q) for g, q, _ in here.items()}
    _, c_u = uniform_cut(here, points)
    res = calibrated_optimum(
        here,
        points[0],
        None,
        here.total_rho * c_u,
        ParetoGuard(),
        solve=lambda total, lower: obj.optimum(here, weights, total, lower),
        calibrate=lambda shape, _t, hint=1.0: _lowest(shape, points, hint),
    )
    drop = obj.drop_percent(res.allocation, here, weights)
    return res.allocation, f"{obj.name} optimum from this setting: objective −{drop:.4f} %, no query noisier"


#: the objectives the page offers, in the optimizer's order
OBJECTIVE_CHOICES = tuple(OBJECTIVES)
