"""Re-tune a budget allocation: same promised (ε, δ), less noise (uniform, zCDP optimum, Optuna).

examples:
  census-plb optimize --scenario dhc-persons --json
  census-plb optimize --allocation dhc-persons --conversion cks --trials 3 --no-confirm
Outputs in --out (default runs/<scenario>/): optimize.json, per_query.csv, per_geolevel.csv,
curves.csv, tradeoff.csv, allocation_optimized.toml.
"""

from __future__ import annotations

from optimizer.atomic import atomic_write_text

import hashlib
import io
import json
import subprocess
import sys
import time
from fractions import Fraction
from pathlib import Path

HELP = "re-tune the budget: same promised (ε, δ), less noise; confirm on all pairs"
#: files written into --out (atomically, never through a symlink)
OUTPUT_FILES = ("optimize.json", "per_query.csv", "per_geolevel.csv", "curves.csv", "tradeoff.csv",
                "allocation_optimized.toml")


def configure(p) -> None:
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--scenario", help="scenarios/<NAME>.toml, or a built-in allocation name")
    g.add_argument("--allocation", help="a built-in allocation name (dhc-persons, …)")
    p.add_argument("--conversion", choices=("bun-steinke", "cks"), default=None)
    p.add_argument("--delta", default=None, help="target δ (exact decimal string; default 1e-10)")
    p.add_argument("--trials", type=int, default=None, help="Optuna trials to run (default: scenario or 30)")
    p.add_argument("--seed", type=int, default=None)
    p.add_argument("--storage", default=None, help="Optuna storage URL or journal path (default runs/<name>/optuna.journal)")
    p.add_argument("--no-confirm", action="store_true", help="skip the all-pairs confirmation")
    p.add_argument("--workers", type=int, default=2, help="processes for the confirmation")
    p.add_argument("--out", default=None, help="output directory (default runs/<name>/)")
    p.add_argument("--json", action="store_true", help="print the JSON summary")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr (errors still print)")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="Dask scheduler (tcp://HOST:PORT) for the all-pairs confirmation; workers need --nthreads 1")


def _csv(rows: list[dict]) -> str:
    import pandas as pd

    buf = io.StringIO()
    pd.DataFrame(rows).to_csv(buf, index=False, float_format="%.17g", lineterminator="\n")
    return buf.getvalue()


def _git_commit() -> str | None:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, timeout=10,
                             cwd=Path(__file__).resolve().parent)
        return out.stdout.strip() or None if out.returncode == 0 else None
    except (OSError, subprocess.SubprocessError):
        return None


def _load(args):
    """(name, allocation, conversion, delta, trials, seed, weights dict, scenario dict)."""
    from optimizer.allocation import BUILTIN_NAMES, load_builtin

    name = args.scenario or args.allocation
    scen = None
    if args.scenario:
        from scenarios.loader import SCENARIO_DIR, load_scenario

        p = Path(args.scenario)
        if p.suffix == ".toml" or (SCENARIO_DIR / f"{args.scenario}.toml").is_file():
            scen = load_scenario(args.scenario)
            name = scen.name
        elif args.scenario not in BUILTIN_NAMES:
            raise ValueError(f"unknown scenario or allocation {args.scenario!r}; built-in allocations: "
                             f"{', '.join(BUILTIN_NAMES)}")
    if scen is not None:
        alloc = scen.load_allocation()
        weights = {(g, q): scen.weight(g, q) for g, q, _ in alloc.items()}
        conv, delta, trials, seed = scen.conversion, scen.target_delta_text, scen.trials, scen.seed
        sdict = scen.as_dict()
    else:
        if name not in BUILTIN_NAMES:
            raise ValueError(f"unknown allocation {name!r}; built-in: {', '.join(BUILTIN_NAMES)}")
        alloc = load_builtin(name)
        weights = {(g, q): Fraction(1) for g, q, _ in alloc.items()}
        conv, delta, trials, seed, sdict = "bun-steinke", "1e-10", 30, 0, None
    conv = args.conversion or conv
    delta = args.delta or delta
    trials = args.trials if args.trials is not None else trials
    seed = args.seed if args.seed is not None else seed
    if trials < 0:
        raise ValueError(f"--trials must be >= 0, got {trials}")
    return name, alloc, conv, delta, trials, seed, weights, sdict


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


def run(args) -> int:
    from optimizer import search as S

    t_start = time.perf_counter()
    if args.workers is not None and args.workers < 1:  # before anything is loaded or computed
        raise ValueError(f"--workers must be >= 1, got {args.workers}")
    name, alloc, conv, delta, trials, seed, weights, sdict = _load(args)
    out = Path(args.out) if args.out else Path("runs") / name
    _check_delta(delta, "--delta" if args.delta else f"target delta of {name}")
    from optimizer.atomic import check_writable

    for fname in OUTPUT_FILES:  # a symlinked output is refused before any work
        check_writable(out / fname)
    journal = Path(args.storage) if args.storage and "://" not in args.storage else out / "optuna.journal"
    if trials == 0 and not (args.storage and "://" in args.storage) and not journal.is_file():
        raise ValueError(f"--trials 0: no existing study at {journal} to take the best trial from; "
                         "a new study needs --trials >= 1")
    quiet = bool(getattr(args, "quiet", False))
    from optimizer.runner import check_scheduler_address

    scheduler = check_scheduler_address(getattr(args, "scheduler", None))
    log = (lambda m: None) if quiet else (lambda m: print(m, file=sys.stderr, flush=True))
    target = S.target_from_allocation(alloc, delta=delta, conversion=conv)
    log(f"target: ε = {target.epsilon[:22]}… δ = {target.delta} ({conv})")
    c_u, uniform, d_u = S.uniform_rescale(alloc, target)
    log(f"stage 1 uniform: c = {float(c_u):.10f}  drop {100 * (1 - 1 / float(c_u)):.4f}%")
    zshape, zinfo = S.zcdp_optimum(alloc, weights, return_info=True)
    zcal = S.calibrate_shape(zshape, target, hint=float(c_u))
    log(f"stage 2 zCDP optimum: drop {S.variance_drop_percent(zcal.allocation, alloc, weights):.4f}%")
    res = S.reallocate(alloc, target, weights, n_trials=trials, seed=seed,
                       storage=args.storage if args.storage else out / "optuna.journal",
                       scenario=name, uniform_c=c_u, zcdp_shape=zshape, log=log)
    optimized, c_opt, d_opt = res.allocation, res.c, res.delta
    confirmed, worst_pair, worst_delta, conf_seconds, n_pairs, recal = False, None, None, None, 0, None
    verified = []
    c_u_proxy = c_u
    uconf = {"uniform_confirmed": False, "uniform_worst_pair": None, "uniform_worst_pair_delta": None,
             "uniform_confirm_recalibration": None}
    if not args.no_confirm:
        from optimizer.confirm import confirm

        log("confirming the uniform rescale on all pairs …")
        conf_u = confirm(uniform, target, cache_dir=out / "cache-uniform", workers=args.workers,
                         label="the uniform rescale", progress=not quiet, scheduler=scheduler)
        uniform = conf_u.allocation
        c_u = c_u * conf_u.recalibration
        uconf = {"uniform_confirmed": bool(conf_u.passed), "uniform_worst_pair": list(conf_u.worst_pair),
                 "uniform_worst_pair_delta": _fmt_upper(conf_u.worst_delta),
                 "uniform_confirm_recalibration": str(conf_u.recalibration)}
        log(f"uniform rescale confirmed={conf_u.passed} on {conf_u.n_pairs} pairs; worst {conf_u.worst_pair}; "
            f"drop {100 * (1 - 1 / float(c_u)):.4f}%")
        log("confirming the optimized allocation on all pairs …")
        conf = confirm(optimized, target, cache_dir=out / "cache", workers=args.workers,
                       label="the optimized allocation", progress=not quiet, scheduler=scheduler)
        confirmed, worst_pair, n_pairs = conf.passed, list(conf.worst_pair), conf.n_pairs
        worst_delta = _fmt_upper(conf.worst_delta)
        conf_seconds, recal = conf.seconds, str(conf.recalibration)
        verified = [list(p) for p in conf.verified_pairs]  # recomputed without the cache
        optimized = conf.allocation
    w = weights
    drop = lambda a: S.variance_drop_percent(a, alloc, w)  # noqa: E731
    # per-query / per-geolevel tables
    u_s, z_s, o_s = uniform.sigma2(), zcal.allocation.sigma2(), optimized.sigma2()
    rows = []
    for g, q, r in alloc.items():
        b = float(1 / r)
        rows.append({"geolevel": g, "query": q, "baseline_rho": str(r), "baseline_sigma2": b,
                     "uniform_sigma2": float(u_s[(g, q)]), "zcdp_optimum_sigma2": float(z_s[(g, q)]),
                     "optimized_sigma2": float(o_s[(g, q)]),
                     "drop_percent_uniform": 100 * (1 - float(u_s[(g, q)]) / b),
                     "drop_percent_optimized": 100 * (1 - float(o_s[(g, q)]) / b)})
    grows = []
    for lv in alloc.levels:
        sel = [x for x in rows if x["geolevel"] == lv.name]
        sb = sum(x["baseline_sigma2"] for x in sel)
        su, sz, so = (sum(x[k] for x in sel) for k in ("uniform_sigma2", "zcdp_optimum_sigma2", "optimized_sigma2"))
        grows.append({"geolevel": lv.name, "baseline_rho": str(lv.total),
                      "optimized_rho": str(optimized.level(lv.name).total),
                      "baseline_sigma2_sum": sb, "uniform_sigma2_sum": su, "zcdp_optimum_sigma2_sum": sz,
                      "optimized_sigma2_sum": so, "drop_percent_uniform": 100 * (1 - su / sb),
                      "drop_percent_zcdp_optimum": 100 * (1 - sz / sb), "drop_percent_optimized": 100 * (1 - so / sb)})
    # curves on the proxy
    eps_t = float(target.epsilon_fraction)
    grid = [f"{eps_t * k / 40:.6f}" for k in range(8, 49)]
    grid = sorted(set(grid + [target.epsilon]), key=Fraction)
    pb, po = S.proxy_composition(alloc), S.proxy_composition(optimized)
    db, do = pb.delta_curve(grid, tol=1e-30, rtol=1e-12), po.delta_curve(grid, tol=1e-30, rtol=1e-12)
    crow = [{"epsilon": float(Fraction(e)), "epsilon_exact": e,
             "delta_zcdp_claim": float(S.zcdp_claim_delta(alloc.total_rho, e, conv)),
             "delta_baseline_exact": float(b.upper), "delta_optimized_exact": float(o.upper)}
            for e, b, o in zip(grid, db, do)]
    trows = []
    for label, comp in (("baseline", pb), ("optimized", po)):
        tc = comp.tradeoff_curve(n=201)
        for z, a_, b_ in zip(tc.zeta, tc.alpha, tc.beta):
            trows.append({"curve": label, "zeta": float(z), "alpha": float(a_.value), "beta": float(b_.value),
                          "alpha_lower": float(a_.lower), "beta_lower": float(b_.lower)})
    seconds = time.perf_counter() - t_start
    summary = {
        "scenario": name, "allocation": alloc.name, "conversion": conv,
        "target_epsilon": target.epsilon, "target_delta": target.delta,
        "baseline_total_rho": str(alloc.total_rho),
        "uniform_c": str(c_u), "uniform_c_float": float(c_u),
        "uniform_variance_drop_percent": 100 * (1 - 1 / float(c_u)),
        "uniform_proxy_c": str(c_u_proxy),
        "uniform_proxy_variance_drop_percent": 100 * (1 - 1 / float(c_u_proxy)),
        **uconf,
        "uniform_proxy_delta": _fmt_upper(d_u),
        "zcdp_optimum_variance_drop_percent": drop(zcal.allocation),
        "zcdp_optimum_shape_variance_drop_percent": drop(zshape),
        "zcdp_optimum_c": str(zcal.c), "zcdp_solver": zinfo,
        "optimized_variance_drop_percent": drop(optimized),
        "optimized_c": str(c_opt), "optimized_total_rho": str(optimized.total_rho),
        "optimized_proxy_delta": _fmt_upper(d_opt),
        "confirmed": bool(confirmed), "confirm_skipped": bool(args.no_confirm), "n_pairs_confirmed": n_pairs,
        "worst_pair": worst_pair, "worst_pair_delta": worst_delta, "confirm_seconds": conf_seconds,
        "confirm_recalibration": recal, "worst_pairs_recomputed": verified,
        "objective": "sum_q w_q * sigma_q^2, sigma_q^2 = 1/rho_q (nominal per-query budgets)",
        "weights": {f"{g}/{q}": str(v) for (g, q), v in weights.items() if v != 1},
        "study_name": res.study_name, "trials_run": res.n_trials_run, "trials_total": res.n_trials_total,
        "best_trial": res.best_trial, "trials_per_minute": res.trials_per_minute,
        "seed": seed, "config_hash": res.config_hash, "scenario_config": sdict,
        "tolerances": {"final_tol": S.TOL_FINAL, "final_rtol": S.RTOL_FINAL, "search_tol": S.TOL_SEARCH,
                       "search_rtol": S.RTOL_SEARCH, "xtol_final": S.XTOL_FINAL, "xtol_search": S.XTOL_SEARCH},
        "versions": S._versions(), "git_commit": _git_commit(),
        "seconds": seconds,
    }
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "per_query.csv", _csv(rows))
    atomic_write_text(out / "per_geolevel.csv", _csv(grows))
    atomic_write_text(out / "curves.csv", _csv(crow))
    atomic_write_text(out / "tradeoff.csv", _csv(trows))
    atomic_write_text(out / "allocation_optimized.toml", optimized.to_toml())
    from optimizer import provenance as P

    summary["outputs"] = {n: hashlib.sha256((out / n).read_bytes()).hexdigest()
                          for n in ("per_query.csv", "per_geolevel.csv", "curves.csv", "tradeoff.csv",
                                    "allocation_optimized.toml")}
    summary = P.seal(summary, P.run_inputs(scenario=sdict, alloc=alloc, target=target, weights=weights))
    text = json.dumps(summary, indent=2, default=str)
    atomic_write_text(out / "optimize.json", text + "\n")
    if args.json:
        print(text)
    else:
        print(f"uniform drop {summary['uniform_variance_drop_percent']:.4f}%, zCDP optimum "
              f"{summary['zcdp_optimum_variance_drop_percent']:.4f}%, optimized "
              f"{summary['optimized_variance_drop_percent']:.4f}%; confirmed={confirmed}; outputs in {out}")
    if not args.no_confirm and not confirmed:
        return 3
    return 0
