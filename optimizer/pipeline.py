"""The optimizer pipeline as a library call: :class:`RunSpec` in, :class:`RunResult` out.

:func:`optimize` is what ``census-plb optimize`` (and ``report``, ``scenario run``) runs:

1. the promise: ε of the zCDP conversion of the allocation's total ρ at the target δ
   (:func:`optimizer.search.target_from_allocation`);
2. stage 1, the uniform rescale ρ_q → c·ρ_q on the proxy pair (:func:`~optimizer.search.uniform_rescale`);
3. stage 2, the zCDP-optimum shape of the weighted variance, calibrated by the exact accountant
   (:func:`~optimizer.search.zcdp_optimum`, :func:`~optimizer.search.calibrate_shape`);
4. stage 3, the Optuna search (:func:`~optimizer.search.reallocate`);
5. unless ``confirm=False``: the all-pairs confirmation of the uniform rescale and of the
   optimized allocation (:func:`optimizer.confirm.confirm`, worst pairs recomputed fresh);
6. the tables and the proxy pair's exact curves.

The CLI only parses arguments into a :class:`RunSpec`, calls :func:`optimize`, writes the
:class:`~optimizer.run_result.RunResult` and prints it.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from optimizer.run_result import RunResult
from optimizer.side_effects import delta_grid_rows, weaker_points

__all__ = ["RunSpec", "optimize", "spec_for"]

#: the objective the Optuna search and the zCDP optimum minimise (stored in the summary)
OBJECTIVE = "sum_q w_q * sigma_q^2, sigma_q^2 = 1/rho_q (nominal per-query budgets)"
#: ε grid of the stored curves: k/40 × the promised ε, k = 8 … 48 (plus the promised ε itself)
CURVE_STEPS = range(8, 49)
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
#: points of the stored trade-off curves
TRADEOFF_POINTS = 201
#: tolerances of the stored δ curves (absolute, relative)
CURVE_TOL, CURVE_RTOL = 1e-30, 1e-12


@dataclass(frozen=True)
class RunSpec:
    """What one optimizer run is asked to do (validated by :func:`spec_for`).

    Attributes:
        name: scenario (or built-in allocation) name; runs go to ``runs/<name>/`` by default.
        allocation: the baseline :class:`optimizer.allocation.Allocation`.
        conversion: zCDP → (ε, δ) conversion of the promise (``"bun-steinke"`` or ``"cks"``).
        delta: the target δ as written (exact decimal or fraction string).
        trials: Optuna trials to run now; seed: the study's seed.
        weights: ``{(geolevel, query): Fraction}`` of the objective.
        objective: the objective's name (:data:`optimizer.objectives.OBJECTIVES`).
        pareto: the Pareto guard (no query noisier than in the baseline) on the optimized
            allocation; pareto_floor_percent: every query's variance lower by at least this %.
        fan_outs: the hierarchy of the published-variance objective
            (:class:`optimizer.published_variance.FanOuts`; ``None``: the shipped 2020 ones).
        target_kind, curve_deltas: ``"point"`` (the promise at ``delta``) or ``"curve"`` (the
            conversion's ε(δ) at every δ of ``curve_deltas``, :mod:`optimizer.curve_target`).
        scenario: the scenario's :meth:`~scenarios.loader.Scenario.as_dict` (``None`` for a bare
            built-in allocation).
    """

    name: str
    allocation: Any
    conversion: str
    delta: str
    trials: int
    seed: int
    weights: Mapping[tuple[str, str], Fraction] = field(compare=False)
    scenario: Mapping[str, Any] | None = field(default=None, compare=False)
    objective: str = "mean-relative-variance"
    pareto: bool = True
    pareto_floor_percent: Fraction = Fraction(0)
    fan_outs: Any = None
    target_kind: str = "point"
    curve_deltas: tuple[str, ...] = ()


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
    from optimizer.allocation import BUILTIN_NAMES, load_builtin

    if (scenario is None) == (allocation is None):
        raise ValueError("give exactly one of scenario and allocation")
    name = scenario or allocation or ""
    scen = None
    if scenario:
        from scenarios.loader import SCENARIO_DIR, load_scenario

        if Path(scenario).suffix == ".toml" or (SCENARIO_DIR / f"{scenario}.toml").is_file():
            scen = load_scenario(scenario)
            name = scen.name
        elif scenario not in BUILTIN_NAMES:
            raise ValueError(
                f"unknown scenario or allocation {scenario!r}; built-in allocations: {', '.join(BUILTIN_NAMES)}"
            )
    from optimizer.objectives import DEFAULT_OBJECTIVE

    objective, pareto, floor, fan_outs = DEFAULT_OBJECTIVE, True, Fraction(0), None
    kind, curve_deltas = "point", tuple[str, ...]()
    if scen is not None:
        alloc = scen.load_allocation()
        weights = {(g, q): scen.weight(g, q) for g, q, _ in alloc.items()}
        conv, dlt, n_trials, sd, sdict = scen.conversion, scen.target_delta_text, scen.trials, scen.seed, scen.as_dict()
        objective, pareto, floor = scen.objective, scen.pareto, scen.pareto_floor_percent
        fan_outs = scen.fan_outs
        kind, curve_deltas = scen.target_kind, scen.curve_deltas
    else:
        if name not in BUILTIN_NAMES:
            raise ValueError(f"unknown allocation {name!r}; built-in: {', '.join(BUILTIN_NAMES)}")
        alloc = load_builtin(name)
        weights = {(g, q): Fraction(1) for g, q, _ in alloc.items()}
        conv, dlt, n_trials, sd, sdict = "bun-steinke", "1e-10", 30, 0, None
    conv = conversion or conv
    where = delta_source or ("--delta" if delta else f"target delta of {name}")
    dlt = delta or dlt
    n_trials = trials if trials is not None else n_trials
    sd = seed if seed is not None else sd
    if n_trials < 0:
        raise ValueError(f"--trials must be >= 0, got {n_trials}")
    _check_delta(dlt, where)
    return RunSpec(
        name,
        alloc,
        conv,
        str(dlt),
        int(n_trials),
        int(sd),
        weights,
        sdict,
        objective,
        pareto,
        floor,
        fan_outs,
        kind,
        tuple(curve_deltas),
    )


def _check_delta(delta: str, where: str) -> None:
    """Refuse a target δ outside the supported range before any work (see scenarios.loader)."""
    from accountant.exact import to_fraction
    from scenarios.loader import check_target_delta

    try:
        value = to_fraction(str(delta), name=where)
    except (TypeError, ValueError, ZeroDivisionError):
        raise ValueError(f"{where}: cannot parse {str(delta)[:40]!r} as an exact decimal or fraction") from None
    check_target_delta(value, delta, where, None, None)


def _fmt_upper(v) -> str:
    """An upper bound (``v.upper``) as a 20-digit decimal rounded up (its safe side)."""
    from accountant.decimals import outward

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
    from optimizer import objectives as O
    from optimizer import provenance as P
    from optimizer import search as S

    t_start = time.perf_counter()
    out = Path(workdir)
    alloc, conv, weights = spec.allocation, spec.conversion, spec.weights
    point = S.target_from_allocation(alloc, delta=spec.delta, conversion=conv)
    target, points, c_u, uniform, d_u = _stage1(spec, point, log)
    log(f"stage 1 uniform: c = {float(c_u):.10f}  drop {100 * (1 - 1 / float(c_u)):.4f}%")
    c_u_proxy = c_u
    watch: tuple[tuple[int, int], ...] = ()
    watch_o: tuple[tuple[int, int], ...] = ()
    watching = WATCH_PAIRS and confirm and spec.target_kind == "point"
    if watching:
        # calibrate on the pairs that can be the worst too, so that each all-pairs sweep normally passes first time
        t_watch = time.perf_counter()
        watch = S.screen_diagonal(uniform, target)
        cal_u, _, _ = S.keep_watched(lambda t: S.calibrate_shape(alloc, t, hint=float(c_u)), target, watch)
        c_u, uniform = cal_u.c, alloc.scaled(cal_u.c)
        d_u = S.proxy_delta(uniform, target)
        log(
            f"watching pairs {_pairs_text(watch)} (the largest pairs [M_i, M_i] of the uniform rescale): "
            f"c = {float(c_u):.10f}  drop {100 * (1 - 1 / float(c_u)):.4f}%  ({time.perf_counter() - t_watch:.1f} s)"
        )
    zshape, zinfo = S.zcdp_optimum(alloc, weights, return_info=True)
    zcal = S.calibrate_shape(zshape, target, hint=float(c_u))
    log(
        "zCDP optimum of the weighted variance (no guard): drop "
        f"{S.variance_drop_percent(zcal.allocation, alloc, weights):.4f}%"
    )
    obj = O.get_objective(spec.objective, where=f"objective of {spec.name}")
    if spec.fan_outs is not None:
        obj = obj.with_fan_outs(spec.fan_outs)
    guard = O.ParetoGuard(spec.pareto_floor_percent) if spec.pareto else None
    if guard is not None and guard.max_ratio < 1 / c_u:
        raise ValueError(
            f"pareto_floor_percent = {spec.pareto_floor_percent} of {spec.name} cannot be met: the exact promise lets "
            f"every query's variance fall by at most {100 * (1 - 1 / float(c_u)):.4f} % (the uniform rescale)"
        )
    # the optimized allocation is calibrated on the proxy; its sweep names the pairs to watch (below)
    search = _reallocate_for(spec, obj, guard, alloc, target, c_u, uniform, d_u, weights, out, storage, log)
    optimized, c_opt, d_opt = search["allocation"], search["c"], search["delta"]
    confirmed, worst_pair, worst_delta, conf_seconds, n_pairs, recal = False, None, None, None, 0, None
    verified: list[list[int]] = []
    from optimizer.confirm import confirmation_keys  # worst-pair rule and exactness (issue 35 items 2, 4)

    issue35 = confirmation_keys(None, None)
    confirm_rows: list[dict[str, Any]] = []
    curve_points: dict[str, list[dict[str, Any]]] = {}
    uconf: dict[str, Any] = {
        "uniform_confirmed": False,
        "uniform_worst_pair": None,
        "uniform_worst_pair_delta": None,
        "uniform_confirm_recalibration": None,
    }
    sweeps: list[dict[str, Any]] = []  # each confirmation: its full pair sweeps, jobs, time
    if confirm:
        from optimizer.confirm import confirm as confirm_all
        from optimizer.guarded import calibrated_optimum

        def confirm_on_all_pairs(allocation, cache: str, label: str, max_rounds: int = 3):
            log(f"confirming {label} on all pairs …")
            conf = confirm_all(
                allocation,
                points,
                cache_dir=out / cache,
                workers=workers,
                label=label,
                progress=progress,
                scheduler=scheduler,
                max_rounds=max_rounds,
            )
            sweeps.append(
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

        conf_u = confirm_on_all_pairs(uniform, "cache-uniform", "the uniform rescale")
        uniform = conf_u.allocation
        c_u = c_u * conf_u.recalibration
        uconf = {
            "uniform_confirmed": bool(conf_u.passed),
            "uniform_worst_pair": list(conf_u.worst_pair),
            "uniform_worst_pair_delta": _fmt_upper(conf_u.worst_delta),
            "uniform_confirm_recalibration": str(conf_u.recalibration),
        }
        log(
            f"uniform rescale confirmed={conf_u.passed} on {conf_u.n_pairs} pairs; {conf_u.worst_text()}; "
            f"drop {100 * (1 - 1 / float(c_u)):.4f}%"
        )
        if obj.name == "minimax-relative":  # its optimum is the uniform rescale, confirmed just above
            log("minimax-relative: the optimized allocation is the uniform rescale and its confirmation")
            conf = conf_u
        else:

            def resolve(total: Fraction, ratio: Fraction) -> tuple[Any, Fraction, Fraction]:
                """The guarded optimum, calibrated on the proxy at a δ low enough for the pairs watched
                so far (:func:`optimizer.search.keep_watched`): (allocation, factor, ratio)."""
                made, r, _ = S.keep_watched(
                    lambda t: calibrated_optimum(
                        alloc, t, None, total, guard, solve=lambda tt, lo: obj.optimum(alloc, weights, tt, lo)
                    ),
                    target,
                    watch_o,
                    ratio=ratio,
                )
                return made.allocation, made.c, r

            ratio_o = Fraction(1)
            if watching:
                t_watch = time.perf_counter()
                watch_o = S.screen_diagonal(optimized, target)
                if search["search_improved"]:
                    search["note"] += (
                        " (calibrated on the proxy alone; the guarded convex optimum calibrated on the watched "
                        "pairs is reported instead)"
                    )
                optimized, c_opt, ratio_o = resolve(optimized.total_rho, ratio_o)
                log(
                    f"watching pairs {_pairs_text(watch_o)} (the largest pairs [M_i, M_i] of the optimized "
                    f"allocation; proxy δ lowered by {float(ratio_o):.6g}; {time.perf_counter() - t_watch:.1f} s)"
                )
            conf = confirm_on_all_pairs(optimized, "cache", "the optimized allocation", 1 if watching else 3)
            for k in range(GUARD_RESOLVES if watching else 0):
                if conf.passed:
                    break
                # pairs above the promise (loose coarse bounds, typically): solve again with them watched
                # and those just below it: keep_watched leaves the watched ones up to KEEP_TOL below the promise
                band = 2 * S.watch.KEEP_TOL
                over = _pairs_over(conf, target, [p for p in conf.deltas if p not in watch_o], band)[:WATCH_ADD]
                watch_o = watch_o + tuple(over)
                log(f"pairs {_pairs_text(over)} exceed or near the promise: re-solving with them watched")
                optimized, c_opt, ratio_o = resolve(conf.allocation.total_rho, ratio_o)
                search["note"] += f"; re-solved with {len(watch_o)} watched pairs"
                label = f"the optimized allocation (re-solved, {len(watch_o)} pairs watched)"
                conf = confirm_on_all_pairs(optimized, "cache", label, 3 if k + 1 == GUARD_RESOLVES else 1)
        for _ in range(GUARD_RESOLVES):
            if guard is None or guard.holds(conf.allocation, alloc) or obj.name == "minimax-relative":
                break
            # a pair other than the proxy needed less budget: solve again at the total that pair allows
            # (no proxy calibration, which would raise it back) and confirm that allocation on all pairs
            total = conf.allocation.total_rho * (1 - GUARD_MARGIN)
            log(f"the all-pairs recalibration broke the Pareto guard: re-solving at total ρ {float(total):.10g}")
            shape = obj.optimum(alloc, weights, total, guard.lower_bounds(alloc))
            conf = confirm_on_all_pairs(shape, "cache", "the optimized allocation (re-solved)")
            search["note"] += f"; re-solved at the all-pairs total {conf.allocation.total_rho}"
        if guard is not None and not guard.holds(conf.allocation, alloc):
            # the all-pairs recalibration lowered every budget below the guard: report the uniform
            # rescale (confirmed above; it meets the guard whenever it removes any noise) instead
            log("the all-pairs recalibration broke the Pareto guard: the uniform rescale is reported instead")
            search["note"] = (
                "the reallocation broke the Pareto guard after its all-pairs recalibration "
                f"(x {conf.recalibration}); the confirmed uniform rescale is reported instead"
            )
            conf = conf_u
        confirm_rows = _confirm_rows(conf, "uniform rescale" if conf is conf_u else "optimized")
        curve_points = {"uniform": _point_rows(conf_u), "optimized": _point_rows(conf)}
        confirmed, worst_pair, n_pairs = conf.passed, list(conf.worst_pair), conf.n_pairs
        worst_delta = _fmt_upper(conf.worst_delta)
        conf_seconds, recal = conf.seconds, str(conf.recalibration)
        verified = [list(p) for p in conf.verified_pairs]  # the candidates for worst, all computed fresh
        issue35 = confirmation_keys(conf_u, conf)
        optimized = conf.allocation
        d_opt = S.proxy_delta(optimized, target)  # the proxy's own δ (a watched calibration returns the largest)
        log(f"{sum(c['sweeps'] for c in sweeps)} full pair sweeps in {len(sweeps)} confirmations")

    def drop(a) -> float:
        return S.variance_drop_percent(a, alloc, weights)

    rows, grows = _tables(alloc, uniform, zcal.allocation, optimized)
    crow, trows = _curves(alloc, optimized, target, conv)
    grid = delta_grid_rows(alloc, {"baseline": alloc, "uniform": uniform, "optimized": optimized}, conv)
    published = _published_variance_summary(spec, alloc, uniform, optimized)
    per_geolevel = _geolevel_summary(alloc, uniform, optimized, target.delta, conv)
    weaker = {label: weaker_points(grid, label) for label in ("uniform", "optimized")}
    summary = {
        "scenario": spec.name,
        "allocation": alloc.name,
        "conversion": conv,
        "target_epsilon": target.epsilon,
        "target_delta": target.delta,
        "baseline_total_rho": str(alloc.total_rho),
        "uniform_c": str(c_u),
        "uniform_c_float": float(c_u),
        "uniform_variance_drop_percent": 100 * (1 - 1 / float(c_u)),
        "uniform_proxy_c": str(c_u_proxy),
        "watched_pairs": [list(p) for p in watch],
        "optimized_watched_pairs": [list(p) for p in watch_o],
        "uniform_proxy_variance_drop_percent": 100 * (1 - 1 / float(c_u_proxy)),
        **uconf,
        "uniform_proxy_delta": _fmt_upper(d_u),
        "zcdp_optimum_variance_drop_percent": drop(zcal.allocation),
        "zcdp_optimum_shape_variance_drop_percent": drop(zshape),
        "zcdp_optimum_c": str(zcal.c),
        "zcdp_solver": zinfo,
        "optimized_variance_drop_percent": drop(optimized),
        "optimized_c": str(c_opt),
        "optimized_total_rho": str(optimized.total_rho),
        "optimized_proxy_delta": _fmt_upper(d_opt),
        "confirmed": bool(confirmed),
        "confirm_skipped": not confirm,
        "n_pairs_confirmed": n_pairs,
        "worst_pair": worst_pair,
        "worst_pair_delta": worst_delta,
        "confirm_seconds": conf_seconds,
        "confirm_recalibration": recal,
        "pair_sweeps": sum(c["sweeps"] for c in sweeps),
        "confirmations": sweeps,
        "worst_pairs_recomputed": verified,
        **issue35,
        "objective": obj.name,
        "objective_description": obj.description,
        "objective_drop_percent": obj.drop_percent(optimized, alloc, weights),
        "objective_uniform_drop_percent": obj.drop_percent(uniform, alloc, weights),
        "pareto": guard is not None,
        "pareto_floor_percent": str(spec.pareto_floor_percent) if guard is not None else None,
        "pareto_guard_met": O.max_variance_ratio(optimized, alloc) <= (guard.max_ratio if guard else 1),
        "max_variance_ratio": _dec(O.max_variance_ratio(optimized, alloc), "up"),
        "min_variance_ratio": _dec(min(O.relative_variances(optimized, alloc).values()), "down"),
        "mean_relative_variance": _dec(O.mean_relative_variance(optimized, alloc), "nearest"),
        "uniform_mean_relative_variance": _dec(O.mean_relative_variance(uniform, alloc), "nearest"),
        "n_queries_noisier": sum(1 for v in O.relative_variances(optimized, alloc).values() if v > 1),
        "new_total_rho": str(optimized.total_rho),
        "target": _target_summary(spec, point, target, points, curve_points),
        "delta_grid_weaker": weaker,
        "published_variance": published,
        "geolevels": per_geolevel,
        "search_improved": search["search_improved"],
        "search_note": search["note"],
        "sum_variance_objective": OBJECTIVE,
        "weights": {f"{g}/{q}": str(v) for (g, q), v in weights.items() if v != 1},
        "study_name": search["study_name"],
        "trials_run": search["trials_run"],
        "trials_total": search["trials_total"],
        "best_trial": search["best_trial"],
        "trials_per_minute": search["trials_per_minute"],
        "seed": spec.seed,
        "config_hash": search["config_hash"],
        "scenario_config": spec.scenario,
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
        "seconds": time.perf_counter() - t_start,
    }
    inputs = P.run_inputs(scenario=spec.scenario, alloc=alloc, target=point, weights=weights)
    return RunResult(
        summary,
        rows,
        grows,
        crow,
        trows,
        grid,
        confirm_rows,
        optimized.to_toml(),
        inputs=inputs,
    )


def _pairs_text(pairs) -> str:
    return ", ".join(f"[{i}, {j}]" for i, j in pairs)


def _pairs_over(conf, target, candidates, band: float = 0.0) -> list[tuple[int, int]]:
    """The ``candidates`` whose certified δ upper bound in ``conf`` exceeds (1 − ``band``) × ``target``'s δ,
    largest first."""
    from optimizer.confirm import _upper_fraction

    dk = target.delta_fraction * (1 - Fraction(band))
    over = [(_upper_fraction(conf.deltas[p]), p) for p in candidates if _upper_fraction(conf.deltas[p]) > dk]
    return [p for _, p in sorted(over, key=lambda t: (-t[0], t[1]))]


def _stage1(spec: RunSpec, point, log):
    """The promise and stage 1: ``(target, points, c_u, uniform, δ_u)``.

    A point target is its own single point; a curve's points are the conversion's ε(δ_k) on the
    scenario's δ grid and ``target`` is the *binding* one (where the uniform rescale, calibrated
    on the proxy pair at every point, is smallest, :func:`optimizer.curve_target.uniform_rescale_curve`);
    the later stages calibrate on it and the confirmations check every point on every pair."""
    from optimizer import search as S

    if spec.target_kind == "point":
        log(f"target: ε = {point.epsilon[:22]}… δ = {point.delta} ({spec.conversion})")
        c_u, uniform, d_u = S.uniform_rescale(spec.allocation, point)
        return point, [point], c_u, uniform, d_u
    from optimizer.curve_target import CurveTarget, uniform_rescale_curve

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
    from accountant.decimals import decimal_string
    from optimizer.confirm import _upper_fraction

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


def _geolevel_summary(alloc, uniform, optimized, delta: str, conv: str) -> dict[str, Any]:
    """Each geolevel as its own mechanism (:mod:`optimizer.geolevels`, the Census neighbour model):
    the baseline's promised and exact ε per geolevel, and whether the uniform rescale and the
    optimized allocation keep every geolevel's own promise."""
    from optimizer.geolevels import geolevel_promises, geolevel_view

    out: dict[str, Any] = {"model": "census", "delta": delta, "conversion": conv}
    out["baseline"] = [r.as_dict() for r in geolevel_view(alloc, delta, conv)]
    for label, a in (("uniform", uniform), ("optimized", optimized)):
        out[label] = [r.as_dict() for r in geolevel_promises(alloc, a, delta, conv)]
        out[f"{label}_broken"] = [r["geolevel"] for r in out[label] if not r["kept"]]
    return out


def _published_variance_summary(spec: RunSpec, alloc, uniform, optimized) -> dict[str, Any] | None:
    """Per geolevel, the mean variance of the published counts (GLS model of the hierarchy,
    :mod:`optimizer.published_variance`) today, after the uniform rescale and after the optimized
    allocation, with the fan-outs used and their stated assumptions; ``None`` when no fan-outs
    are known for the allocation's geography (a custom one without a scenario ``[fan_outs]``)."""
    from optimizer import published_variance as PV

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
    from accountant.decimals import decimal_string
    from optimizer.confirm import _lower_fraction, _upper_fraction

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
    from accountant.decimals import decimal_string

    return decimal_string(x, 20, mode)


def _reallocate_for(
    spec, obj, guard, alloc, target, c_u, uniform, d_u, weights, out, storage, log, watch=()
) -> dict[str, Any]:
    """Stages 2 and 3 for the chosen objective: the calibrated convex optimum under the guard
    (:func:`optimizer.guarded.calibrated_optimum`), then the Optuna search around it, kept only if
    it beats that start and meets the guard. minimax-relative: the uniform rescale (its optimum)."""
    from optimizer import objectives as O
    from optimizer import search as S
    from optimizer.guarded import calibrated_optimum

    if obj.name == "minimax-relative":
        log("objective minimax-relative: its optimum is the uniform rescale (no search needed)")
        return {
            "allocation": uniform,
            "c": c_u,
            "delta": d_u,
            "search_improved": False,
            "note": "minimax-relative: the uniform rescale is the optimum; no search was run",
            "study_name": None,
            "trials_run": 0,
            "trials_total": 0,
            "best_trial": None,
            "trials_per_minute": None,
            "config_hash": None,
        }
    start = calibrated_optimum(
        alloc,
        target,
        None,
        alloc.total_rho * c_u,
        guard,
        solve=lambda t, lo: obj.optimum(alloc, weights, t, lo),
        watch=watch,
    )
    log(
        f"stage 2 convex optimum of {obj.name}"
        + (f" ({guard.describe()})" if guard else " (no guard)")
        + f": objective drop {obj.drop_percent(start.allocation, alloc, weights):.4f}% in {start.rounds} round(s)"
    )

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
        watch=watch,
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


def _curves(alloc, optimized, target, conv: str) -> tuple[list[dict], list[dict]]:
    """Exact δ(ε) of the proxy pair (baseline, optimized) beside the zCDP claim; trade-off curves."""
    from optimizer import search as S

    eps_t = float(target.epsilon_fraction)
    grid = [f"{eps_t * k / 40:.6f}" for k in CURVE_STEPS]
    grid = sorted({*grid, target.epsilon}, key=Fraction)
    pb, po = S.proxy_composition(alloc), S.proxy_composition(optimized)
    db = pb.delta_curve(grid, tol=CURVE_TOL, rtol=CURVE_RTOL)
    do = po.delta_curve(grid, tol=CURVE_TOL, rtol=CURVE_RTOL)
    crow = [
        {
            "epsilon": float(Fraction(e)),
            "epsilon_exact": e,
            "delta_zcdp_claim": float(S.zcdp_claim_delta(alloc.total_rho, e, conv)),
            "delta_baseline_exact": float(b.upper),
            "delta_optimized_exact": float(o.upper),
        }
        for e, b, o in zip(grid, db, do)
    ]
    trows = []
    for label, comp in (("baseline", pb), ("optimized", po)):
        tc = comp.tradeoff_curve(n=TRADEOFF_POINTS)
        for z, a_, b_ in zip(tc.zeta, tc.alpha, tc.beta):
            trows.append(
                {
                    "curve": label,
                    "zeta": float(z),
                    "alpha": float(a_.value),
                    "beta": float(b_.value),
                    "alpha_lower": float(a_.lower),
                    "beta_lower": float(b_.lower),
                }
            )
    return crow, trows
