"""The optimizer pipeline as a library call: :class:`RunSpec` in, :class:`RunResult` out.

:func:`optimize` is what ``census-plb optimize`` (and ``report``, ``scenario run``) runs:

1. the promise: ε of the zCDP conversion of the allocation's total ρ at the target δ
   (:func:`optimizer.search.target_from_allocation`);
2. stage 1, the uniform rescale ρ_q → c·ρ_q on the proxy pair (:func:`~optimizer.search.uniform_rescale`);
3. stage 2, the zCDP-optimum shape of the weighted variance, calibrated by the exact accountant
   (:func:`~optimizer.search.zcdp_optimum`, :func:`~optimizer.search.calibrate_shape`);
4. stage 3, the Optuna search (:func:`~optimizer.search.reallocate`);
5. unless ``confirm=False``: the all-pairs confirmation of the uniform rescale and of the
   optimized allocation (:func:`optimizer.jobs.confirm.confirm`, worst pairs recomputed fresh);
6. the tables and the proxy pair's exact curves.

The CLI only parses arguments into a :class:`RunSpec`, calls :func:`optimize`, writes the
:class:`~optimizer.pipeline.result.RunResult` and prints it.
"""

from __future__ import annotations

import functools
import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any, cast

from accountant.decimals import decimal_string, outward
from accountant.exact import to_fraction
from optimizer import search as S
from optimizer.census.allocation import BUILTIN_NAMES, Allocation
from optimizer.jobs import confirm as confirm_mod  # through the module: wrappers seen at call time
from optimizer.jobs import provenance as P
from optimizer.jobs.confirm import _lower_fraction, _upper_fraction, confirmation_keys, paths_of
from optimizer.jobs.exactness import screen_pairs
from optimizer.pipeline.accounting import DELTA_RTOL, DELTA_TOL, N_TRADEOFF, Accounting, account
from optimizer.pipeline.certifiable import CertifiableSolver, exact_shape
from optimizer.pipeline.decision import decision
from optimizer.pipeline.result import RunResult
from optimizer.pipeline.side_effects import delta_grid_rows, weaker_points
from optimizer.pipeline.summary import RunSummary
from optimizer.scenario import SCENARIO_DIR, Scenario, check_target_delta, list_scenarios, load_scenario
from optimizer.search import objectives as O
from optimizer.search import published_variance as PV
from optimizer.search.curve_target import CurveTarget, uniform_rescale_curve
from optimizer.search.geolevels import geolevel_promises, geolevel_view
from optimizer.search.guarded import calibrated_optimum
from optimizer.search.objectives import DEFAULT_OBJECTIVE
from optimizer.search.per_geolevel import per_geolevel_optimum

__all__ = ["RunSpec", "optimize", "spec_for"]

#: the objective the Optuna search and the zCDP optimum minimise (stored in the summary)
OBJECTIVE = "sum_q w_q * sigma_q^2, sigma_q^2 = 1/rho_q (nominal per-query budgets)"
#: re-solves of the guarded optimum when the all-pairs recalibration breaks the guard, and the
#: relative margin by which the total is lowered below the confirmed one each time
GUARD_RESOLVES = 3
GUARD_MARGIN = Fraction(1, 10**9)
#: calibrate on the proxy and on the pairs that can be the worst (:mod:`optimizer.search.watch`) before
#: the confirmations, so that each allocation is normally swept once (issue 35 item 3).  The screen is
#: :func:`optimizer.search.screen_diagonal` (one δ per path, ~1 s for DHC persons); the earlier screen of
#: every pair cost a full run (32 s), more than the second sweep it saved.  An optimized allocation whose
#: sweep finds pairs above the promise (its coarse, loose pairs) is re-solved with those pairs watched
#: (:data:`WATCH_ADD` at most per round) and swept again, instead of recalibrated and re-solved twice.
WATCH_PAIRS = True
#: pairs above (or within 2 × KEEP_TOL below) the promise added to the watch after a failed sweep of the
#: optimized allocation (PL94 units: 12 at a time left near-tied pairs to pop above in 3 more sweeps)
WATCH_ADD = 24


@dataclass(frozen=True)
class RunSpec:
    """What one optimizer run is asked to do (validated by :func:`spec_for`): a scenario — the
    promise, the objective, its guard and weights — with its allocation loaded, and this run's trial
    count and seed.

    Attributes:
        scenario: the :class:`~optimizer.scenario.Scenario` (with the caller's conversion and δ
            overrides); a bare built-in allocation is a scenario of that name with the defaults.
        allocation: the baseline :class:`optimizer.census.allocation.Allocation` it tunes.
        trials: Optuna trials to run now; seed: the study's seed.
        search: whether the Optuna search runs around the calibrated convex optimum (off by default
            for a convex objective, whose calibrated convex optimum is the answer; on when the
            scenario says ``search = "optuna"`` or the caller gives a trial count).
        recorded: whether the run records the scenario in its inputs (not for a bare allocation).
    """

    scenario: Scenario
    allocation: Any
    trials: int
    seed: int
    recorded: bool = True
    search: bool = True

    @property
    def name(self) -> str:
        """The scenario's (or built-in allocation's) name; runs go to ``runs/<name>/`` by default."""
        return self.scenario.name

    @property
    def conversion(self) -> str:
        return self.scenario.conversion

    @property
    def delta(self) -> str:
        """The target δ as written (exact decimal or fraction string)."""
        return self.scenario.target_delta_text

    @property
    def weights(self) -> dict[tuple[str, str], Fraction]:
        """``{(geolevel, query): weight}`` of the objective."""
        return {(g, q): self.scenario.weight(g, q) for g, q, _ in self.allocation.items()}

    @property
    def objective(self) -> str:
        return self.scenario.objective

    @property
    def pareto(self) -> bool:
        return self.scenario.pareto

    @property
    def pareto_floor_percent(self) -> Fraction:
        return self.scenario.pareto_floor_percent

    @property
    def fan_outs(self):
        return self.scenario.fan_outs

    @property
    def target_kind(self) -> str:
        return self.scenario.target_kind

    @property
    def curve_deltas(self) -> tuple[str, ...]:
        return self.scenario.curve_deltas

    @property
    def scenario_record(self) -> dict[str, Any] | None:
        """What the run records of its scenario (:meth:`Scenario.as_dict`; ``None`` for a bare
        built-in allocation)."""
        return self.scenario.as_dict() if self.recorded else None


def spec_for(
    *,
    scenario: str | None = None,
    allocation: str | None = None,
    conversion: str | None = None,
    delta: str | None = None,
    trials: int | None = None,
    seed: int | None = None,
    delta_source: str | None = None,
) -> RunSpec:
    """A :class:`RunSpec` from a scenario (name or ``.toml`` path; a built-in allocation name is
    accepted too) or a built-in allocation, with optional overrides; everything is validated here,
    before any work (``ValueError`` naming the value and where it came from)."""
    if (scenario is None) == (allocation is None):
        raise ValueError("give exactly one of scenario and allocation")
    name = scenario or allocation or ""
    scen = None
    if scenario:
        if Path(scenario).suffix == ".toml" or (SCENARIO_DIR / f"{scenario}.toml").is_file():
            scen = load_scenario(scenario)
        elif scenario not in BUILTIN_NAMES:
            raise ValueError(
                f"unknown scenario or allocation {scenario!r}; scenarios: {', '.join(list_scenarios())}; "
                f"built-in allocations: {', '.join(BUILTIN_NAMES)}"
            )
    if scen is None:
        if name not in BUILTIN_NAMES:
            raise ValueError(f"unknown allocation {name!r}; built-in: {', '.join(BUILTIN_NAMES)}")
        scen = _bare_scenario(name)
    where = delta_source or ("--delta" if delta else f"target delta of {scen.name}")
    dlt = str(delta or scen.target_delta_text)
    n_trials = trials if trials is not None else scen.trials
    if n_trials < 0:
        raise ValueError(f"--trials must be >= 0, got {n_trials}")
    _check_delta(dlt, where)
    scen = replace(
        scen,
        conversion=conversion or scen.conversion,
        target_delta=to_fraction(dlt, name=where),
        target_delta_text=dlt,
    )
    n_seed = seed if seed is not None else scen.seed
    convex = O.get_objective(scen.objective, where=f"objective of {scen.name}").convex
    search = trials is not None or scen.search == "optuna" or (scen.search == "auto" and not convex)
    return RunSpec(
        scen, scen.load_allocation(), int(n_trials), int(n_seed), recorded=scen.source != "<built-in>", search=search
    )


def _bare_scenario(name: str) -> Scenario:
    """A built-in allocation as a scenario of its own: Bun–Steinke at δ = 1e-10, equal weights,
    the default objective and guard, 30 trials, seed 0."""
    return Scenario(
        name=name,
        description=f"the built-in allocation {name} with the default promise and objective",
        allocation=name,
        conversion="bun-steinke",
        target_delta=Fraction(1, 10**10),
        target_delta_text="1e-10",
        trials=30,
        seed=0,
        objective=DEFAULT_OBJECTIVE,
        source="<built-in>",
    )


def _check_delta(delta: str, where: str) -> None:
    """Refuse a target δ outside the supported range before any work (see optimizer.scenario)."""
    try:
        value = to_fraction(str(delta), name=where)
    except (TypeError, ValueError, ZeroDivisionError):
        raise ValueError(f"{where}: cannot parse {str(delta)[:40]!r} as an exact decimal or fraction") from None
    check_target_delta(value, delta, where, None, None)


def _fmt_upper(v) -> str:
    """An upper bound (``v.upper``) as a 20-digit decimal rounded up (its safe side)."""
    return outward(v.upper, +1, 20)


def _git_commit() -> str | None:
    try:
        out = subprocess.run(
            ["git", "rev-parse", "HEAD"],
            capture_output=True,
            text=True,
            timeout=10,
            cwd=Path(__file__).resolve().parent,
        )
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def _quiet(_msg: str) -> None:
    return None


def optimize(
    spec: RunSpec,
    workdir: str | Path,
    *,
    confirm: bool = True,
    workers: int = 2,
    scheduler: str | None = None,
    storage: str | Path | None = None,
    log: Callable[[str], None] = _quiet,
    progress: bool = False,
) -> RunResult:
    """Run the optimizer for ``spec`` (see the module docstring for the stages).

    Args:
        spec: what to run (:func:`spec_for`).
        workdir: the run's folder: the Optuna journal (unless ``storage``) and the confirmation
            caches live there; the result is not written (call :meth:`RunResult.write`).
        confirm: run the all-pairs confirmations (else the summary says ``confirm_skipped``).
        workers, scheduler: processes, or a Dask scheduler address, for the confirmations.
        storage: Optuna storage URL or journal path (default ``workdir/optuna.journal``).
        log: one-line progress messages; progress: progress lines of the confirmations.

    Returns:
        the :class:`RunResult` (its summary not yet sealed: :meth:`RunResult.write` seals it).
    """
    t_start = time.perf_counter()
    out = Path(workdir)
    alloc, conv, weights = spec.allocation, spec.conversion, spec.weights
    point = S.target_from_allocation(alloc, delta=spec.delta, conversion=conv)
    sweep = _Sweeper([point], out, workers, progress, scheduler, log)
    if spec.target_kind == "per-geolevel":
        st = _per_geolevel_stages(spec, point, sweep, log)
    else:
        st = _release_stages(spec, point, out, sweep, confirm=confirm, storage=storage, log=log)
    target, points, done, search, zcdp, obj, guard = st.target, st.points, st.done, st.search, st.zcdp, st.obj, st.guard
    optimized = done.optimized
    tables = _outputs(spec, alloc, done.uniform, zcdp["calibrated"].allocation, optimized, target)
    # the ** parts are plain dicts, so mypy cannot check this literal: tests/optimizer/test_run_summary.py does
    summary = cast(
        RunSummary,
        {
            "scenario": spec.name,
            "allocation": alloc.name,
            "conversion": conv,
            "target_epsilon": target.epsilon,
            "target_delta": target.delta,
            "baseline_total_rho": str(alloc.total_rho),
            **_uniform_summary(done, st.c_u_proxy, st.d_u, st.watch),
            **zcdp["summary"],
            "optimized_variance_drop_percent": S.variance_drop_percent(optimized, alloc, weights),
            "optimized_c": str(done.c_opt),
            "optimized_total_rho": str(optimized.total_rho),
            "optimized_proxy_delta": _fmt_upper(st.d_opt),
            **_confirmation_summary(done, sweep, confirm),
            **_objective_summary(spec, obj, guard, alloc, done.uniform, optimized),
            "target": _target_summary(spec, point, target, points, _curve_points(done)),
            "delta_grid_weaker": tables["weaker"],
            "published_variance": tables["published"],
            "geolevels": tables["per_geolevel"],
            **_search_summary(spec, search),
            "seconds": time.perf_counter() - t_start,
        },
    )
    if spec.target_kind == "per-geolevel":
        summary.update(_per_geolevel_confirmation(spec, tables["per_geolevel"], st))
    summary["decision"] = _decide(spec, summary, tables["grid"], point, obj, done)
    inputs = P.run_inputs(scenario=spec.scenario_record, alloc=alloc, target=point, weights=weights)
    t = tables
    rows = (t["rows"], t["grows"], t["crow"], t["trows"], t["grid"], _final_rows(done))
    toml = _labelled(optimized, spec, obj, guard, target).to_toml()
    return RunResult(summary, *rows, toml, inputs=inputs, accounting=t["accounting"])


@dataclass(frozen=True)
class _Stages:
    """What the stages before the tables hand on: the target, the confirmed (or not) allocations,
    the search record, the zCDP optimum, the objective and guard, proxy δs and watched pairs."""

    target: Any
    points: Any
    done: _Confirmed
    search: dict[str, Any]
    zcdp: dict[str, Any]
    obj: Any
    guard: Any
    c_u_proxy: Fraction
    d_u: Any
    d_opt: Any
    watch: tuple[tuple[int, int], ...] = ()
    levels: tuple = ()


def _release_stages(spec: RunSpec, point, out: Path, sweep: _Sweeper, *, confirm: bool, storage, log) -> _Stages:
    """The point and curve targets: calibrate on the proxy pair, search, confirm on all pairs."""
    alloc, weights = spec.allocation, spec.weights
    target, points, c_u, uniform, d_u = _stage1(spec, point, log)
    sweep.points = points
    log(
        f"uniform cut on the proxy pair: every noise variance × {float(1 / c_u):.10f}, "
        f"{100 * (1 - 1 / float(c_u)):.4f} % of the noise variance can go"
    )
    c_u_proxy = c_u
    watching = WATCH_PAIRS and confirm and spec.target_kind == "point"
    watch: tuple[tuple[int, int], ...] = ()
    if watching:
        watch, c_u, uniform, d_u = _watch_uniform(alloc, target, c_u, log)
    zcdp = _zcdp_stage(alloc, weights, target, c_u, log)
    obj, guard = _objective_and_guard(spec, c_u)
    # every convex solve of the run: its shapes moved onto pairs the exact engines certify (the first
    # screened, the later ones moved alike), before any calibration weighs their pairs
    solve = CertifiableSolver(
        lambda t, lo: obj.optimum(alloc, weights, t, lo), lambda a: obj.value(a, alloc, weights), log
    )
    # the optimized allocation is calibrated on the proxy; the confirmation stage watches its pairs
    search = _reallocate_for(spec, obj, guard, alloc, target, c_u, uniform, d_u, solve, weights, out, storage, log)
    done = _Confirmed(None, None, uniform, c_u, search["allocation"], search["c"], ())
    if confirm:
        ctx = _Reallocation(alloc, target, obj, guard, weights, search, watching, solve)
        done = _confirm_stage(sweep, ctx, uniform, c_u, log)
    d_opt = S.proxy_delta(done.optimized, target) if confirm else search["delta"]  # the proxy's own δ
    return _Stages(target, points, done, search, zcdp, obj, guard, c_u_proxy, d_u, d_opt, watch)


#: the proxy δ of a per-geolevel proposal at the release's point is a side effect, stated as a bound
SIDE_EFFECT_RTOL = 1e-6


def _per_geolevel_stages(spec: RunSpec, point, sweep: _Sweeper, log) -> _Stages:
    """The per-geolevel target (:mod:`optimizer.search.per_geolevel`): every geolevel calibrated and
    optimized on its own mechanism; the release's point is a side effect (its proxy δ)."""
    alloc, weights, model = spec.allocation, spec.weights, spec.scenario.neighbour_model
    obj, guard = _objective_and_guard(spec, Fraction(10**6))  # the floor is checked per geolevel below
    log(f"target: every geolevel's own (ε, δ) at δ = {spec.delta} ({spec.conversion}, {model} neighbour model)")
    pg = per_geolevel_optimum(alloc, spec.delta, spec.conversion, model, obj, weights, guard)
    if guard is not None and guard.max_ratio < 1 / pg.c_uniform:
        _objective_and_guard(spec, pg.c_uniform)  # raises, naming the floor
    log(f"per geolevel: uniform cut c = {float(pg.c_uniform):.6f} (binding: {pg.binding})")
    zcdp = _zcdp_stage(alloc, weights, point, pg.c_uniform, log)
    d_u = S.proxy_delta(pg.uniform, point, rtol=SIDE_EFFECT_RTOL)
    d_opt = S.proxy_delta(pg.optimized, point, rtol=SIDE_EFFECT_RTOL)
    note = (
        "per-geolevel target: each geolevel optimized on its own (the convex optimum under the guard, calibrated "
        "exactly on that geolevel's mechanism); no Optuna search"
    )
    search = _no_search(pg.optimized, Fraction(1), d_opt, note)
    done = _Confirmed(None, None, pg.uniform, pg.c_uniform, pg.optimized, Fraction(1), ())
    return _Stages(point, [point], done, search, zcdp, obj, guard, pg.c_uniform, d_u, d_opt, levels=pg.levels)


def _per_geolevel_confirmation(spec: RunSpec, geo: Mapping[str, Any], st: _Stages) -> RunSummary:
    """The confirmation keys of a per-geolevel run: every geolevel's certified ε against its promise
    (:func:`optimizer.search.geolevels.geolevel_promises`, computed for the tables) — a geolevel's
    mechanism is the same for every pair of spine paths that differ there, so this is its all-pairs check."""
    kept = {label: not geo[f"{label}_broken"] for label in ("uniform", "optimized")}
    n = len(geo["baseline"])
    records = [
        {"label": f"{what}: every geolevel's own promise", "geolevels": n, "passed": kept[label], "sweeps": 0}
        for label, what in (("uniform", "the uniform cut"), ("optimized", "the per-geolevel optimum"))
    ]
    return {
        "confirmed": kept["optimized"],
        "uniform_confirmed": kept["uniform"],
        "confirm_skipped": False,
        "confirmations": records,
        "target": {
            "kind": "per-geolevel",
            "model": spec.scenario.neighbour_model,
            "conversion": spec.conversion,
            "delta": spec.delta,
            "geolevels": [
                {
                    "geolevel": lv.geolevel,
                    "epsilon": lv.target.epsilon,
                    "uniform_factor": str(lv.c_uniform),
                    "optimized_delta_upper": _fmt_upper(lv.delta),
                }
                for lv in st.levels
            ],
            "binding_geolevel": min(st.levels, key=lambda lv: lv.c_uniform).geolevel,
        },
    }


def _decide(spec: RunSpec, summary: RunSummary, grid, point, obj, done: _Confirmed) -> dict[str, Any]:
    """The run's decision table (:func:`optimizer.pipeline.decision.decision`)."""
    return decision(
        spec.allocation,
        summary,
        grid,
        target=point,
        target_kind=spec.target_kind,
        curve_floor=min(spec.curve_deltas, key=Fraction) if spec.curve_deltas else None,
        weights=spec.weights,
        objective=obj,
        others=_sibling_scenarios(spec),
        proposals={"uniform": done.uniform, "reallocation": done.optimized},
    )


def _sibling_scenarios(spec: RunSpec) -> dict[str, str]:
    """``{target kind: scenario name}`` of the shipped scenarios with this run's baseline allocation,
    conversion and δ that target another promise (the decision table names them)."""
    out: dict[str, str] = {}
    for name in list_scenarios():
        if name == spec.name:
            continue
        try:
            other = load_scenario(name)
        except ValueError:
            continue  # a broken shipped scenario is reported by its own command, not here
        same = (other.allocation, other.conversion, other.target_delta) == (
            spec.scenario.allocation,
            spec.conversion,
            spec.scenario.target_delta,
        )
        if same and other.target_kind != spec.target_kind:
            out.setdefault(other.target_kind, name)
    return out


def _labelled(optimized, spec: RunSpec, obj, guard, target):
    """The optimized allocation named for what it is (``<scenario>-optimized``) and with a provenance
    that says who made it from what — never the baseline's name or "production" provenance."""
    base = spec.allocation
    guard_text = guard.describe() if guard is not None else "no Pareto guard"
    provenance = (
        f"census-plb optimized allocation for scenario {spec.name} (objective {obj.name}; {guard_text}), "
        f"calibrated to the promise eps = {target.epsilon[:16]}..., delta = {target.delta}; "
        f"derived from {base.name} ({base.provenance})"
    )
    return Allocation(optimized.levels, f"{spec.name}-optimized", provenance, optimized.run_type)


def _zcdp_stage(alloc, weights, target, c_u: Fraction, log) -> dict[str, Any]:
    """The zCDP optimum of the weighted variance (no guard) and its exact calibration, for comparison:
    ``{"calibrated": Calibration, "summary": its summary keys}``."""
    zshape, zinfo = S.zcdp_optimum(alloc, weights, return_info=True)
    zcal = S.calibrate_shape(zshape, target, hint=float(c_u))
    drop = S.variance_drop_percent(zcal.allocation, alloc, weights)
    log(f"sum-variance optimum (not proposed: some queries get noisier): {drop:.4f} % of the summed variance")
    return {
        "calibrated": zcal,
        "summary": {
            "zcdp_optimum_variance_drop_percent": drop,
            "zcdp_optimum_shape_variance_drop_percent": S.variance_drop_percent(zshape, alloc, weights),
            "zcdp_optimum_c": str(zcal.c),
            "zcdp_solver": zinfo,
        },
    }


def _objective_and_guard(spec: RunSpec, c_u: Fraction):
    """The scenario's objective (with its fan-outs) and Pareto guard (``None`` when off); a floor the
    uniform rescale cannot reach is refused here, before the search."""
    obj = O.get_objective(spec.objective, where=f"objective of {spec.name}")
    if spec.fan_outs is not None:
        obj = obj.with_fan_outs(spec.fan_outs)
    guard = O.ParetoGuard(spec.pareto_floor_percent) if spec.pareto else None
    if guard is not None and guard.max_ratio < 1 / c_u:
        raise ValueError(
            f"pareto_floor_percent = {spec.pareto_floor_percent} of {spec.name} cannot be met: the exact promise lets "
            f"every query's variance fall by at most {100 * (1 - 1 / float(c_u)):.4f} % (the uniform rescale)"
        )
    return obj, guard


@dataclass
class _Sweeper:
    """Runs the all-pairs confirmations of one run (:func:`optimizer.jobs.confirm.confirm`) and records what
    each cost: the summary's ``confirmations`` and ``pair_sweeps``."""

    points: Any
    out: Path
    workers: int
    progress: bool
    scheduler: str | None
    log: Callable[[str], None]
    records: list[dict[str, Any]] = field(default_factory=list)

    def __call__(self, allocation, cache: str, label: str, max_rounds: int = 3, why: str = ""):
        self.log(
            f"sweep {len(self.records) + 1}: confirming {label} on all pairs" + (f" ({why})" if why else "") + " …"
        )
        conf = confirm_mod.confirm(
            allocation,
            self.points,
            cache_dir=self.out / cache,
            workers=self.workers,
            label=label,
            progress=self.progress,
            scheduler=self.scheduler,
            max_rounds=max_rounds,
        )
        self.records.append(
            {
                "label": label,
                "sweeps": conf.rounds,
                "pair_jobs": conf.jobs,
                "pair_jobs_not_exact": conf.jobs_not_exact,
                "passed": bool(conf.passed),
                "seconds": round(conf.seconds, 3),
            }
        )
        return conf

    @property
    def sweeps(self) -> int:
        return sum(r["sweeps"] for r in self.records)


@dataclass(frozen=True)
class _Reallocation:
    """What the confirmation stage needs to re-solve the optimized allocation."""

    alloc: Any
    target: Any
    obj: Any
    guard: Any
    weights: Mapping[tuple[str, str], Fraction]
    search: dict[str, Any]
    watching: bool
    solve: Callable[[Fraction, Mapping[tuple[str, str], Fraction] | None], Any]

    def exact(self, made, watch: tuple[tuple[int, int], ...], ratio: Fraction, log) -> tuple[Any, Fraction]:
        """The calibrated optimum ``made`` (a :class:`~optimizer.search.guarded.GuardedOptimum`) moved, if
        its screen finds pairs no exact engine certifies, onto a shape whose pairs are
        (:func:`optimizer.pipeline.certifiable.exact_shape`) and calibrated again like the first (proxy
        and ``watch``, at ``made``'s proxy δ): ``(allocation, factor)``; ``made``'s own when
        every pair is exact, when no move helps, or when the moved shape's calibration would break the
        guard."""
        optimized, c, shape = made.allocation, made.c, made.shape
        bad = [p.pair for p in screen_pairs(optimized).not_exact]
        if not bad:
            return optimized, c
        lower = self.guard.lower_bounds(self.alloc) if self.guard is not None else None
        moved = exact_shape(shape, bad, lambda a: self.obj.value(a, self.alloc, self.weights), lower, log).allocation
        if moved is shape:
            return optimized, c
        # at the proxy δ the first was calibrated at (one step, no search for a smaller ratio): the move
        # can free budget (a pair watched for its loose sandwich bound is exact now), but spending it by
        # scaling this shape would not be the optimum at the larger total (measured: a factor 1.00085
        # cost 3.8e-4 of the objective); the sweep checks every pair anyway
        cal, _, _ = S.keep_watched(functools.partial(_calibrated, moved), self.target, watch, ratio=ratio, rounds=1)
        if self.guard is not None and not self.guard.holds(cal.allocation, self.alloc):
            log("exact proposals: calibrating the moved shape would break the Pareto guard; the first is kept")
            return optimized, c
        return cal.allocation, cal.c


def _calibrated(shape, target):
    """``shape`` calibrated on the proxy pair at ``target`` (:func:`optimizer.search.calibrate_shape`)."""
    return S.calibrate_shape(shape, target, hint=1.0)


@dataclass
class _Confirmed:
    """The outcome of the confirmation stage (``conf_u``/``conf`` ``None`` when not confirmed)."""

    conf_u: Any
    conf: Any
    uniform: Any
    c_u: Fraction
    optimized: Any
    c_opt: Fraction
    watch_o: tuple[tuple[int, int], ...]


def _watch_uniform(alloc, target, c_u: Fraction, log):
    """The uniform rescale calibrated on the proxy and the pairs its diagonal screen watches, so that
    its all-pairs sweep normally passes first time: ``(watch, c, allocation, proxy δ)``."""
    t_watch = time.perf_counter()
    watch = S.screen_diagonal(alloc.scaled(c_u), target)
    watch = watch + _loose_pairs(alloc.scaled(c_u), watch)
    cal, _, _ = S.keep_watched(lambda t: S.calibrate_shape(alloc, t, hint=float(c_u)), target, watch)
    uniform = alloc.scaled(cal.c)
    log(
        f"watching pairs {_pairs_text(watch)} (the largest pairs [M_i, M_i] of the uniform rescale, and the "
        "pairs of their rows no exact engine certifies): "
        f"c = {float(cal.c):.10f}  drop {100 * (1 - 1 / float(cal.c)):.4f}%  ({time.perf_counter() - t_watch:.1f} s)"
    )
    return watch, cal.c, uniform, S.proxy_delta(uniform, target)


def _confirm_stage(sweep: _Sweeper, ctx: _Reallocation, uniform, c_u: Fraction, log) -> _Confirmed:
    """Confirm the uniform rescale, then the optimized allocation (re-solved with the pairs it watches,
    and under the Pareto guard), each on all pairs."""
    conf_u = sweep(uniform, "cache-uniform", "the uniform rescale", why="its first check")
    c_u = c_u * conf_u.recalibration
    log(
        f"uniform rescale confirmed={conf_u.passed} on {conf_u.n_pairs} pairs; {conf_u.worst_text()}; "
        f"drop {100 * (1 - 1 / float(c_u)):.4f}%"
    )
    if ctx.obj.name == "minimax-relative":  # its optimum is the uniform rescale, confirmed just above
        log("minimax-relative: the optimized allocation is the uniform rescale and its confirmation")
        done = _Confirmed(conf_u, conf_u, conf_u.allocation, c_u, conf_u.allocation, c_u, ())
    else:
        conf, c_opt, watch_o = _confirm_optimized(sweep, ctx, log)
        conf = _keep_guard(sweep, ctx, conf, conf_u, log)
        done = _Confirmed(conf_u, conf, conf_u.allocation, c_u, conf.allocation, c_opt, watch_o)
    log(f"{sweep.sweeps} full pair sweeps in {len(sweep.records)} confirmations")
    return done


def _confirm_optimized(sweep: _Sweeper, ctx: _Reallocation, log):
    """The optimized allocation calibrated on its diagonal watch, swept once, and re-solved with the pairs
    a failed sweep finds above (or near) the promise: ``(confirmation, factor, watched pairs)``."""
    watch_o: tuple[tuple[int, int], ...] = ()

    def resolve(total: Fraction, ratio: Fraction) -> tuple[Any, Fraction, Fraction]:
        """The guarded optimum, calibrated on the proxy at a δ low enough for the pairs watched so far
        (:func:`optimizer.search.keep_watched`) and moved where its pairs would not be exact
        (:meth:`_Reallocation.exact`): (allocation, factor, ratio)."""
        made, r, _ = S.keep_watched(
            lambda t: calibrated_optimum(
                ctx.alloc,
                t,
                None,
                total,
                ctx.guard,
                solve=ctx.solve,
            ),
            ctx.target,
            watch_o,
            ratio=ratio,
        )
        moved, c = ctx.exact(made, watch_o, r, log)
        return moved, c, r

    optimized, c_opt, ratio = ctx.search["allocation"], ctx.search["c"], Fraction(1)
    if ctx.watching:
        t_watch = time.perf_counter()
        watch_o = S.screen_diagonal(optimized, ctx.target)
        watch_o = watch_o + _loose_pairs(optimized, watch_o)
        if ctx.search["search_improved"]:
            ctx.search["note"] += (
                " (calibrated on the proxy alone; the guarded convex optimum calibrated on the watched "
                "pairs is reported instead)"
            )
        optimized, c_opt, ratio = resolve(optimized.total_rho, ratio)
        log(
            f"watching pairs {_pairs_text(watch_o)} (the largest pairs [M_i, M_i] of the optimized "
            "allocation and the pairs of their rows no exact engine certifies; "
            f"proxy δ lowered by {float(ratio):.6g}; {time.perf_counter() - t_watch:.1f} s)"
        )
    conf = sweep(optimized, "cache", "the optimized allocation", 1 if ctx.watching else 3, why="its first check")
    for k in range(GUARD_RESOLVES if ctx.watching else 0):
        if conf.passed:
            break
        # pairs above the promise (loose coarse bounds, typically) and those just below it (keep_watched
        # leaves the watched ones up to KEEP_TOL below the promise): solve again with them watched
        band = 2 * S.watch.KEEP_TOL
        over = _pairs_over(conf, ctx.target, [p for p in conf.deltas if p not in watch_o], band)[:WATCH_ADD]
        if not over or set(_pairs_over(conf, ctx.target, list(conf.deltas))) <= set(watch_o):
            # only watched pairs failed (unwatched ones at most near the promise, as every pair is when the
            # calibration lands within KEEP_TOL of it): the same watch would fail the same way; recalibrate
            failed = _pairs_text(_pairs_over(conf, ctx.target, [p for p in watch_o if p in conf.deltas]))
            log(f"pairs {failed} are watched and still above the promise: recalibrating on all pairs")
            why = f"watched pairs {failed} stayed above the promise"
            conf = sweep(conf.allocation, "cache", "the optimized allocation (recalibrated)", 3, why=why)
            break
        watch_o = watch_o + tuple(over)
        log(f"pairs {_pairs_text(over)} exceed or near the promise: re-solving with them watched")
        optimized, c_opt, ratio = resolve(conf.allocation.total_rho, ratio)
        ctx.search["note"] += f"; re-solved with {len(watch_o)} watched pairs"
        label = f"the optimized allocation (re-solved, {len(watch_o)} pairs watched)"
        why = f"pairs {_pairs_text(over)} exceeded or neared the promise in the last sweep; re-solved with them watched"
        conf = sweep(optimized, "cache", label, 3 if k + 1 == GUARD_RESOLVES else 1, why=why)
    return conf, c_opt, watch_o


def _loose_pairs(alloc, watch: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """The pairs of the watched paths' rows that no exact engine will certify (:func:`screen_pairs` of
    those rows only, no integration), at most :data:`WATCH_ADD`: the confirmation checks their loose
    upper bounds, so the calibration watches the same bounds and the first sweep passes (a DHC-persons
    proposal's [6, 33]: its sandwich bound is 2.5 % above the exact δ of its near-tied row)."""
    rows = {i for p in watch for i in p}
    indices = [p.index for p in paths_of(alloc)]
    pairs = sorted({(min(i, j), max(i, j)) for i in rows for j in indices})
    loose = [p.pair for p in screen_pairs(alloc, pairs=pairs).not_exact if p.pair not in watch]
    return tuple(loose[:WATCH_ADD])


def _keep_guard(sweep: _Sweeper, ctx: _Reallocation, conf, conf_u, log):
    """A confirmation whose recalibration broke the Pareto guard is re-solved at the total it allowed
    (and confirmed again), at most :data:`GUARD_RESOLVES` times; failing that, the confirmed uniform
    rescale is reported instead."""
    alloc, guard = ctx.alloc, ctx.guard
    for _ in range(GUARD_RESOLVES):
        if guard is None or guard.holds(conf.allocation, alloc):
            break
        # a pair other than the proxy needed less budget: solve again at the total that pair allows
        # (no proxy calibration, which would raise it back) and confirm that allocation on all pairs
        total = conf.allocation.total_rho * (1 - GUARD_MARGIN)
        log(f"the all-pairs recalibration broke the Pareto guard: re-solving at total ρ {float(total):.10g}")
        shape = ctx.obj.optimum(alloc, ctx.weights, total, guard.lower_bounds(alloc))
        conf = sweep(shape, "cache", "the optimized allocation (re-solved)", why="the recalibration broke the guard")
        ctx.search["note"] += f"; re-solved at the all-pairs total {conf.allocation.total_rho}"
    if guard is not None and not guard.holds(conf.allocation, alloc):
        # the all-pairs recalibration lowered every budget below the guard: report the uniform
        # rescale (confirmed above; it meets the guard whenever it removes any noise) instead
        log("the all-pairs recalibration broke the Pareto guard: the uniform rescale is reported instead")
        ctx.search["note"] = (
            "the reallocation broke the Pareto guard after its all-pairs recalibration "
            f"(x {conf.recalibration}); the confirmed uniform rescale is reported instead"
        )
        conf = conf_u
    return conf


def _final_rows(done: _Confirmed) -> list[dict[str, Any]]:
    """The per-pair rows of the final confirmation (``confirm_pairs.csv``)."""
    if done.conf is None:
        return []
    return _confirm_rows(done.conf, "uniform rescale" if done.conf is done.conf_u else "optimized")


def _curve_points(done: _Confirmed) -> dict[str, list[dict[str, Any]]]:
    if done.conf is None:
        return {}
    return {"uniform": _point_rows(done.conf_u), "optimized": _point_rows(done.conf)}


def _outputs(spec: RunSpec, alloc, uniform, zcdp_opt, optimized, target) -> dict[str, Any]:
    """The run's tables and side effects: per query/geolevel, curves, δ grid, published variance."""
    conv = spec.conversion
    rows, grows = _tables(alloc, uniform, zcdp_opt, optimized)
    acc = account(alloc, spec.delta, conv)  # the proxy pair's accounting, once, for the report
    crow, trows = _curves(acc, optimized)
    grid = delta_grid_rows(alloc, {"baseline": alloc, "uniform": uniform, "optimized": optimized}, conv)
    return {
        "rows": rows,
        "grows": grows,
        "crow": crow,
        "trows": trows,
        "grid": grid,
        "published": _published_variance_summary(spec, alloc, uniform, optimized),
        "per_geolevel": _geolevel_summary(alloc, uniform, optimized, target.delta, conv, spec.scenario.neighbour_model),
        "weaker": {label: weaker_points(grid, label) for label in ("uniform", "optimized")},
        "accounting": acc.as_json(),
    }


def _uniform_summary(done: _Confirmed, c_u_proxy: Fraction, d_u, watch) -> dict[str, Any]:
    c_u, conf_u = done.c_u, done.conf_u
    return {
        "uniform_c": str(c_u),
        "uniform_c_float": float(c_u),
        "uniform_variance_drop_percent": 100 * (1 - 1 / float(c_u)),
        "uniform_proxy_c": str(c_u_proxy),
        "watched_pairs": [list(p) for p in watch],
        "optimized_watched_pairs": [list(p) for p in done.watch_o],
        "uniform_proxy_variance_drop_percent": 100 * (1 - 1 / float(c_u_proxy)),
        "uniform_confirmed": bool(conf_u.passed) if conf_u is not None else False,
        "uniform_worst_pair": list(conf_u.worst_pair) if conf_u is not None else None,
        "uniform_worst_pair_delta": _fmt_upper(conf_u.worst_delta) if conf_u is not None else None,
        "uniform_confirm_recalibration": str(conf_u.recalibration) if conf_u is not None else None,
        "uniform_proxy_delta": _fmt_upper(d_u),
    }


def _confirmation_summary(done: _Confirmed, sweep: _Sweeper, confirm: bool) -> dict[str, Any]:
    conf = done.conf
    return {
        "confirmed": bool(conf.passed) if conf is not None else False,
        "confirm_skipped": not confirm,
        "n_pairs_confirmed": conf.n_pairs if conf is not None else 0,
        "worst_pair": list(conf.worst_pair) if conf is not None else None,
        "worst_pair_delta": _fmt_upper(conf.worst_delta) if conf is not None else None,
        "confirm_seconds": conf.seconds if conf is not None else None,
        "confirm_recalibration": str(conf.recalibration) if conf is not None else None,
        "pair_sweeps": sweep.sweeps,
        "confirmations": sweep.records,
        # the candidates for worst, all computed fresh
        "worst_pairs_recomputed": [list(p) for p in conf.verified_pairs] if conf is not None else [],
        **confirmation_keys(done.conf_u, conf),
    }


def _objective_summary(spec: RunSpec, obj, guard, alloc, uniform, optimized) -> dict[str, Any]:
    weights = spec.weights
    ratios = O.relative_variances(optimized, alloc)
    return {
        "objective": obj.name,
        "objective_description": obj.description,
        "objective_drop_percent": obj.drop_percent(optimized, alloc, weights),
        "objective_uniform_drop_percent": obj.drop_percent(uniform, alloc, weights),
        "pareto": guard is not None,
        "pareto_floor_percent": str(spec.pareto_floor_percent) if guard is not None else None,
        "pareto_guard_met": O.max_variance_ratio(optimized, alloc) <= (guard.max_ratio if guard else 1),
        "max_variance_ratio": _dec(O.max_variance_ratio(optimized, alloc), "up"),
        "min_variance_ratio": _dec(min(ratios.values()), "down"),
        "mean_relative_variance": _dec(O.mean_relative_variance(optimized, alloc), "nearest"),
        "uniform_mean_relative_variance": _dec(O.mean_relative_variance(uniform, alloc), "nearest"),
        "n_queries_noisier": sum(1 for v in ratios.values() if v > 1),
        "new_total_rho": str(optimized.total_rho),
        "rounding": _rounding_summary(obj, guard, alloc, weights, optimized),
    }


def _rounding_summary(obj, guard, alloc, weights, optimized) -> dict[str, Any] | None:
    """What putting the proposal on the exact grid cost (issue 35): the objective of the unrounded convex
    optimum at the proposal's total ρ and under the same guard, of the proposal, and their relative
    difference; ``None`` for minimax-relative (its optimum is the uniform rescale, nothing is rounded)
    or when the proposal is the uniform rescale."""
    if obj.name == "minimax-relative" or "on the grid" not in optimized.provenance:
        return None
    lower = guard.lower_bounds(alloc) if guard is not None else None
    out: dict[str, Any] = dict(obj.rounding(optimized, alloc, weights, lower))
    grid = optimized.provenance.rsplit("on the grid ", 1)[1].split(" (", 1)[0]
    out["grid"] = grid
    out["within_1e-4"] = out["relative_difference"] <= 1e-4
    return out


def _search_summary(spec: RunSpec, search: dict[str, Any]) -> dict[str, Any]:
    return {
        "search_improved": search["search_improved"],
        "search_note": search["note"],
        "sum_variance_objective": OBJECTIVE,
        "weights": {f"{g}/{q}": str(v) for (g, q), v in spec.weights.items() if v != 1},
        "study_name": search["study_name"],
        "trials_run": search["trials_run"],
        "trials_total": search["trials_total"],
        "best_trial": search["best_trial"],
        "trials_per_minute": search["trials_per_minute"],
        "seed": spec.seed,
        "config_hash": search["config_hash"],
        "scenario_config": spec.scenario_record,
        "tolerances": {
            "final_tol": S.TOL_FINAL,
            "final_rtol": S.RTOL_FINAL,
            "search_tol": S.TOL_SEARCH,
            "search_rtol": S.RTOL_SEARCH,
            "xtol_final": S.XTOL_FINAL,
            "xtol_search": S.XTOL_SEARCH,
        },
        "versions": S.study._versions(),
        "git_commit": _git_commit(),
    }


def _pairs_text(pairs) -> str:
    return ", ".join(f"[{i}, {j}]" for i, j in pairs)


def _pairs_over(conf, target, candidates, band: float = 0.0) -> list[tuple[int, int]]:
    """The ``candidates`` whose certified δ upper bound in ``conf`` exceeds (1 − ``band``) × ``target``'s δ,
    largest first."""
    dk = target.delta_fraction * (1 - Fraction(band))
    over = [(_upper_fraction(conf.deltas[p]), p) for p in candidates if _upper_fraction(conf.deltas[p]) > dk]
    return [p for _, p in sorted(over, key=lambda t: (-t[0], t[1]))]


def _stage1(spec: RunSpec, point, log):
    """The promise and stage 1: ``(target, points, c_u, uniform, δ_u)``.

    A point target is its own single point; a curve's points are the conversion's ε(δ_k) on the
    scenario's δ grid and ``target`` is the *binding* one (where the uniform rescale, calibrated
    on the proxy pair at every point, is smallest, :func:`optimizer.search.curve_target.uniform_rescale_curve`);
    the later stages calibrate on it and the confirmations check every point on every pair."""
    if spec.target_kind == "point":
        log(f"target: ε = {point.epsilon[:22]}… δ = {point.delta} ({spec.conversion})")
        c_u, uniform, d_u = S.uniform_rescale(spec.allocation, point)
        return point, [point], c_u, uniform, d_u

    curve = CurveTarget.from_allocation(spec.allocation, spec.curve_deltas, spec.conversion)
    cr = uniform_rescale_curve(spec.allocation, curve)
    log(
        f"target: the {spec.conversion} curve at δ = {', '.join(t.delta for t in curve.points)}; "
        f"binding on the proxy pair: δ = {cr.binding.delta}"
    )
    return cr.binding, list(curve.points), cr.c, cr.allocation, S.proxy_delta(cr.allocation, cr.binding)


def _target_summary(spec: RunSpec, point, target, points, curve_points) -> dict[str, Any]:
    """The summary's ``target``: its kind, its δ values, and for a curve the binding point and
    the per-point worst pairs of the confirmations."""
    if spec.target_kind == "point":
        return {"kind": "point", **point.as_dict()}
    return {
        "kind": "curve",
        "conversion": spec.conversion,
        "deltas": [t.delta for t in points],
        "points": [t.as_dict() for t in points],
        "binding_delta_proxy": target.delta,
        "binding_delta_uniform": _binding(curve_points.get("uniform")),
        "binding_delta_optimized": _binding(curve_points.get("optimized")),
        "confirmed_points": curve_points,
    }


def _binding(rows) -> str | None:
    return None if not rows else next(r["delta"] for r in rows if r["binding"])


def _point_rows(conf) -> list[dict[str, Any]]:
    """Per point of the target: the worst pair of the confirmation's last round and its certified δ."""
    rows = []
    for k, t in enumerate(conf.points):
        worst = max(conf.point_deltas, key=lambda p: (_upper_fraction(conf.point_deltas[p][k]), p))
        up = _upper_fraction(conf.point_deltas[worst][k])
        rows.append(
            {
                "epsilon": t.epsilon,
                "delta": t.delta,
                "worst_pair": list(worst),
                "worst_delta_upper": decimal_string(up, 12, "up"),
                "ratio_to_delta": float(up / t.delta_fraction),
                "kept": up <= t.delta_fraction,
                "binding": t == conf.worst_point,
            }
        )
    return rows


def _geolevel_summary(alloc, uniform, optimized, delta: str, conv: str, model: str = "census") -> dict[str, Any]:
    """Each geolevel as its own mechanism (:mod:`optimizer.search.geolevels`, the scenario's neighbour model):
    the baseline's promised and exact ε per geolevel, and whether the uniform rescale and the
    optimized allocation keep every geolevel's own promise."""
    out: dict[str, Any] = {"model": model, "delta": delta, "conversion": conv}
    out["baseline"] = [r.as_dict() for r in geolevel_view(alloc, delta, conv, model)]
    for label, a in (("uniform", uniform), ("optimized", optimized)):
        out[label] = [r.as_dict() for r in geolevel_promises(alloc, a, delta, conv, model)]
        out[f"{label}_broken"] = [r["geolevel"] for r in out[label] if not r["kept"]]
    return out


def _published_variance_summary(spec: RunSpec, alloc, uniform, optimized) -> dict[str, Any] | None:
    """Per geolevel, the mean variance of the published counts (GLS model of the hierarchy,
    :mod:`optimizer.search.published_variance`) today, after the uniform rescale and after the optimized
    allocation, with the fan-outs used and their stated assumptions; ``None`` when no fan-outs
    are known for the allocation's geography (a custom one without a scenario ``[fan_outs]``)."""
    try:
        fo = spec.fan_outs or PV.default_fan_outs(alloc)
        uni = {r.geolevel: r for r in PV.published_variance_table(uniform, alloc, fo)}
        rows = [
            {
                "geolevel": r.geolevel,
                "n_queries": r.n_queries,
                "today": _dec(r.mean_today, "nearest"),
                "uniform": _dec(uni[r.geolevel].mean_after, "nearest"),
                "optimized": _dec(r.mean_after, "nearest"),
                "uniform_change_percent": float(uni[r.geolevel].change_percent),
                "optimized_change_percent": float(r.change_percent),
            }
            for r in PV.published_variance_table(optimized, alloc, fo)
        ]
    except ValueError as exc:
        return {"available": False, "why": str(exc)}
    return {"available": True, "fan_outs": fo.as_dict(), "geolevels": rows}


def _confirm_rows(conf, label: str) -> list[dict[str, Any]]:
    """The confirmation's certified δ of every pair at its worst point's ε (for a point target,
    the target ε), as table rows."""
    return [
        {
            "pair_i": i,
            "pair_j": j,
            "eps": conf.worst_point.epsilon,
            "delta_lower": decimal_string(_lower_fraction(b), 12, "down"),
            "delta_upper": decimal_string(_upper_fraction(b), 12, "up"),
            "tolerance_met": bool(getattr(b, "tolerance_met", True)),
            "allocation": label,
        }
        for (i, j), b in sorted(conf.deltas.items())
    ]


def _dec(x: Fraction, mode: str) -> str:
    """An exact ratio as a 20-digit decimal string, rounded ``mode`` ("up", "down", "nearest")."""
    return decimal_string(x, 20, mode)


def _convex_start(obj, guard, alloc, target, c_u: Fraction, solve, weights, log):
    """Stage 2: the objective's convex optimum under the guard (``solve``: its shapes moved onto exact
    pairs, :class:`~optimizer.pipeline.certifiable.CertifiableSolver`), calibrated on the proxy pair
    (:func:`optimizer.search.guarded.calibrated_optimum`)."""
    start = calibrated_optimum(alloc, target, None, alloc.total_rho * c_u, guard, solve=solve)
    log(
        f"reallocation: the convex optimum of {obj.name}"
        + (f" ({guard.describe()})" if guard else " (no guard)")
        + f": objective drop {obj.drop_percent(start.allocation, alloc, weights):.4f}% in {start.rounds} round(s)"
    )
    return start


def _reallocate_for(
    spec, obj, guard, alloc, target, c_u, uniform, d_u, solve, weights, out, storage, log
) -> dict[str, Any]:
    """Stages 2 and 3 for the chosen objective: the calibrated convex optimum under the guard
    (:func:`optimizer.search.guarded.calibrated_optimum`), then the Optuna search around it, kept only if
    it beats that start and meets the guard. minimax-relative: the uniform rescale (its optimum)."""
    if obj.name == "minimax-relative":
        log("objective minimax-relative: its optimum is the uniform rescale (no search needed)")
        return _no_search(uniform, c_u, d_u, "minimax-relative: the uniform rescale is the optimum; no search was run")
    start = _convex_start(obj, guard, alloc, target, c_u, solve, weights, log)
    if not spec.search:
        note = (
            f"no Optuna search: {obj.name} is convex, so its calibrated convex optimum is the answer "
            '(search = "optuna" in the scenario, or --trials N, runs one)'
        )
        log(note)
        return _no_search(start.allocation, start.c, start.delta, note)

    def score(a) -> float:
        return float(obj.value(a, alloc, weights))

    def violation(a) -> float:
        return 0.0 if guard is None else max(0.0, float(O.max_variance_ratio(a, alloc) - guard.max_ratio))

    res = S.reallocate(
        alloc,
        target,
        weights,
        n_trials=spec.trials,
        seed=spec.seed,
        storage=storage if storage else out / "optuna.journal",
        scenario=spec.name,
        uniform_c=c_u,
        zcdp_shape=start.shape,
        log=log,
        score=score,
        violation=violation,
        study_extra={"objective": obj.name, "guard": guard.describe() if guard else None},
    )
    best = res.allocation
    feasible = guard is None or guard.holds(best, alloc)
    improved = feasible and obj.value(best, alloc, weights) < obj.value(start.allocation, alloc, weights)
    if improved:
        chosen, c, delta = best, res.c, res.delta
        note = f"the Optuna search ({res.n_trials_run} trials) improved on its convex starting point"
    else:
        chosen, c, delta = start.allocation, start.c, start.delta
        why = "broke the guard" if not feasible else "did not beat it"
        note = f"the Optuna search ({res.n_trials_run} trials) {why}: the calibrated convex optimum is reported"
    log(note)
    return {
        "allocation": chosen,
        "c": c,
        "delta": delta,
        "search_improved": improved,
        "note": note,
        "study_name": res.study_name,
        "trials_run": res.n_trials_run,
        "trials_total": res.n_trials_total,
        "best_trial": res.best_trial,
        "trials_per_minute": res.trials_per_minute,
        "config_hash": res.config_hash,
    }


def _no_search(allocation, c: Fraction, delta, note: str) -> dict[str, Any]:
    """The search record of a run that needed no search (:func:`_reallocate_for`'s keys)."""
    return {
        "allocation": allocation,
        "c": c,
        "delta": delta,
        "search_improved": False,
        "note": note,
        "study_name": None,
        "trials_run": 0,
        "trials_total": 0,
        "best_trial": None,
        "trials_per_minute": None,
        "config_hash": None,
    }


def _tables(alloc, uniform, zcdp_opt, optimized) -> tuple[list[dict], list[dict]]:
    """Per-query and per-geolevel rows: σ² of each allocation and the drops against ``alloc``."""
    u_s, z_s, o_s = uniform.sigma2(), zcdp_opt.sigma2(), optimized.sigma2()
    rows = []
    for g, q, r in alloc.items():
        b = float(1 / r)
        rows.append(
            {
                "geolevel": g,
                "query": q,
                "baseline_rho": str(r),
                "baseline_sigma2": b,
                "uniform_sigma2": float(u_s[(g, q)]),
                "zcdp_optimum_sigma2": float(z_s[(g, q)]),
                "optimized_sigma2": float(o_s[(g, q)]),
                "drop_percent_uniform": 100 * (1 - float(u_s[(g, q)]) / b),
                "drop_percent_optimized": 100 * (1 - float(o_s[(g, q)]) / b),
            }
        )
    grows = []
    for lv in alloc.levels:
        sel = [x for x in rows if x["geolevel"] == lv.name]
        sb = sum(x["baseline_sigma2"] for x in sel)
        su, sz, so = (sum(x[k] for x in sel) for k in ("uniform_sigma2", "zcdp_optimum_sigma2", "optimized_sigma2"))
        grows.append(
            {
                "geolevel": lv.name,
                "baseline_rho": str(lv.total),
                "optimized_rho": str(optimized.level(lv.name).total),
                "baseline_sigma2_sum": sb,
                "uniform_sigma2_sum": su,
                "zcdp_optimum_sigma2_sum": sz,
                "optimized_sigma2_sum": so,
                "drop_percent_uniform": 100 * (1 - su / sb),
                "drop_percent_zcdp_optimum": 100 * (1 - sz / sb),
                "drop_percent_optimized": 100 * (1 - so / sb),
            }
        )
    return rows, grows


def _curves(acc: Accounting, optimized) -> tuple[list[dict], list[dict]]:
    """Exact δ(ε) of the proxy pair beside the zCDP claim on the accounting's one ε grid, and the
    trade-off curves: the baseline's from the accounting (computed once), the optimized allocation's
    here."""
    grid = [c["eps"] for c in acc.curves]
    po = S.proxy_composition(optimized)  # one composition (and engine) for both curves
    do = po.delta_curve(grid, tol=DELTA_TOL, rtol=DELTA_RTOL)
    crow = [
        {
            "epsilon": float(to_fraction(c["eps"])),
            "epsilon_exact": c["eps"],
            "delta_zcdp_claim": float(c["zcdp_claim_delta"]),
            "delta_baseline_exact": float(c["baseline_exact_delta_upper"]),
            "delta_optimized_exact": float(o.upper),
        }
        for c, o in zip(acc.curves, do)
    ]
    trows = [
        {
            "curve": "baseline",
            "zeta": float(r["baseline_zeta"]),
            "alpha": float(r["baseline_alpha"]),
            "beta": float(r["baseline_beta"]),
            "alpha_lower": float(r["baseline_alpha_lower"]),
            "beta_lower": float(r["baseline_beta_lower"]),
        }
        for r in acc.tradeoff
    ]
    tc = po.tradeoff_curve(n=N_TRADEOFF)
    for z, a_, b_ in zip(tc.zeta, tc.alpha, tc.beta):
        trows.append(
            {
                "curve": "optimized",
                "zeta": float(z),
                "alpha": float(a_.value),
                "beta": float(b_.value),
                "alpha_lower": float(a_.lower),
                "beta_lower": float(b_.lower),
            }
        )
    return crow, trows
