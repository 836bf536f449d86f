"""The report's tables: per query, per geolevel, the curves, and the per-pair matrix of the heat map."""

from __future__ import annotations

import math

import mpmath

from optimizer.formatting import fmt, fmt_bound, to_float, to_mpf
from optimizer.pipeline.accounting import Accounting, _claim_delta
from optimizer.report.inputs import RunInputs, _cell


def per_query_table(acc: Accounting, run: RunInputs) -> list[dict]:
    """One row per (geolevel, query): budgets, σ² (baseline, uniform, zCDP optimum, optimized), drops."""
    opt_rows = {}
    for r in run.per_query or []:
        opt_rows[(r.get("geolevel"), r.get("query"))] = r
    out = []
    for g, q, rho in acc.allocation.items():
        s2 = 1 / rho
        r = opt_rows.get((g, q), {})
        uni = _cell(r, "uniform_sigma2", "per_query.csv") if r else None
        uni_s2 = to_mpf(uni) if uni is not None else to_mpf(s2 * acc.uniform_multiplier)
        zo = _cell(r, "zcdp_optimum_sigma2", "per_query.csv") if r else None
        op = _cell(r, "optimized_sigma2", "per_query.csv") if r else None
        base = to_mpf(s2)

        def drop(x, base=base):
            return None if x is None else float((1 - to_mpf(x) / base) * 100)

        out.append(
            {
                "geolevel": g,
                "query": q,
                "baseline_rho": str(rho),
                "baseline_sigma2": fmt(s2, 10),
                "uniform_sigma2": fmt(uni_s2, 10),
                "zcdp_optimum_sigma2": fmt(zo, 10) if zo is not None else "",
                "optimized_sigma2": fmt(op, 10) if op is not None else "",
                "drop_percent_uniform": f"{float((1 - uni_s2 / base) * 100):.4f}",
                "drop_percent_zcdp_optimum": f"{drop(zo):.4f}" if zo is not None else "",
                "drop_percent_optimized": f"{drop(op):.4f}" if op is not None else "",
            }
        )
    return out


def per_geolevel_table(acc: Accounting, pq: list[dict]) -> list[dict]:
    """Per geolevel: total ρ, share, and the drop of the summed variance of its queries."""
    out = []
    totals = acc.allocation.geolevel_totals()
    for g in acc.allocation.geolevels:
        rows = [r for r in pq if r["geolevel"] == g]
        base = sum(to_mpf(r["baseline_sigma2"]) for r in rows)

        def drop(col, rows=rows, base=base):
            if any(r[col] == "" for r in rows):
                return ""
            return f"{float((1 - sum(to_mpf(r[col]) for r in rows) / base) * 100):.4f}"

        def sd(col, rows=rows):
            """Root-mean-square noise standard deviation of one count of this geolevel, in persons."""
            if not rows or any(r[col] == "" for r in rows):
                return ""
            return f"{float(mpmath.sqrt(sum(to_mpf(r[col]) for r in rows) / len(rows))):.2f}"

        out.append(
            {
                "geolevel": g,
                "n_queries": len(rows),
                "rho": str(totals[g]),
                "rho_share_percent": f"{float(totals[g] / acc.total_rho * 100):.4f}",
                "weight": str(acc.scenario.geolevel_weight(g)),
                "drop_percent_uniform": drop("uniform_sigma2"),
                "drop_percent_zcdp_optimum": drop("zcdp_optimum_sigma2"),
                "drop_percent_optimized": drop("optimized_sigma2"),
                "noise_sd_baseline": sd("baseline_sigma2"),
                "noise_sd_uniform": sd("uniform_sigma2"),
                "noise_sd_optimized": sd("optimized_sigma2"),
            }
        )
    return out


def curves_table(acc: Accounting, run: RunInputs) -> list[dict]:
    rows = []
    for c in acc.curves:
        rows.append(
            {
                k: (v if k == "eps" else fmt_bound(v, 3, "up") if k.endswith("_error") else fmt(v, 12))
                for k, v in c.items()
            }
        )
    return rows


def _optimized_curve(run: RunInputs) -> list[tuple[float, float]]:
    pts = []
    for r in run.curves or []:
        e = to_float(_cell(r, "epsilon", "curves.csv"))
        d = to_float(_cell(r, "delta_optimized_exact", "curves.csv"))
        if e is not None and d is not None and d > 0:
            pts.append((e, d))
    return pts


def _optimized_tradeoff(run: RunInputs) -> list[tuple[float, float]]:
    pts = []
    for r in run.tradeoff or []:  # long format: curve, zeta, alpha, beta, …
        if _cell(r, "curve", "tradeoff.csv") != "optimized":
            continue
        a, b = to_float(_cell(r, "alpha", "tradeoff.csv")), to_float(_cell(r, "beta", "tradeoff.csv"))
        if a is not None and b is not None:
            pts.append((a, b))
    return pts


def _heatmap_rows(run: RunInputs) -> tuple[list[dict], str] | None:
    """The per-pair rows the heat map is drawn from and a caption of their source: the
    per-pair results file when one checked out, else the run's final all-pairs confirmation."""
    if run.pairs:
        return run.pairs, f"{run.pairs_of or 'an unnamed allocation'}, from {run.pairs_file}"
    if run.confirm_pairs:
        label = run.confirm_pairs[0].get("allocation", "optimized")
        return run.confirm_pairs, f"the {label} allocation, from the optimizer's all-pairs confirmation"
    return None


#: the largest δ / promised-δ ratio the heat map shows (beyond it: "above the promise" by any measure)
RATIO_CAP = 1e100


def _promised_delta(acc: Accounting, run: RunInputs, eps_key: str) -> tuple[mpmath.mpf, str]:
    """The promised δ at the heat map's ε and where it comes from: the target δ at the promised ε;
    for a curve target, the δ of the curve point at that ε; at any other ε, the zCDP claim δ(ε) of
    the baseline ρ under the scenario's conversion (the curve the promise is a point of)."""
    e = to_float(eps_key)
    if e is not None and math.isclose(e, float(acc.eps_claim), rel_tol=1e-12):
        return to_mpf(acc.delta_target), f"the promised δ = {acc.scenario.target_delta_text}"
    target = (run.optimize or {}).get("target") or {}
    for pt in target.get("points") or []:
        pe = to_float(str(pt.get("epsilon", "")))
        if e is not None and pe is not None and math.isclose(e, pe, rel_tol=1e-12):
            return to_mpf(pt["delta"]), f"the curve point's promised δ = {pt['delta']}"

    d = _claim_delta(acc.total_rho, to_mpf(eps_key), acc.scenario.conversion)
    return d, f"the baseline's zCDP claim δ(ε) = {fmt(d, 4)}"


def _pair_matrix(
    run: RunInputs, eps_claim, acc: Accounting | None = None
) -> tuple[list[list[float]], str, int, float, str] | None:
    """n×n matrix (43×43 for DHC persons) of certified δ upper bounds divided by the promised δ at
    the ε closest to the claimed ε (:func:`_promised_delta`; without ``acc`` the raw upper bounds,
    divisor 1), with that ε, the number of pairs, the promised δ and where it comes from."""
    src = _heatmap_rows(run)
    if src is None:
        return None
    by_eps: dict[str, list[dict]] = {}
    for r in src[0]:
        by_eps.setdefault(r.get("eps", ""), []).append(r)
    target = float(eps_claim)
    key = min(by_eps, key=lambda e: (abs((to_float(e) or 0.0) - target), e))
    rows = by_eps[key]
    promised, how = _promised_delta(acc, run, key) if acc is not None else (mpmath.mpf(1), "no promise given")
    n = max(max(int(r["pair_i"]), int(r["pair_j"])) for r in rows)
    m = [[math.nan] * n for _ in range(n)]
    for r in rows:
        v = to_float(_cell(r, "delta_upper", src[1]))
        if v is None or v <= 0:
            continue
        i, j = int(r["pair_i"]) - 1, int(r["pair_j"]) - 1
        # in mpf: a promised δ far in the tail (the claim at an ε well above the promise) is below
        # the float range; the ratio is then capped at RATIO_CAP (far above 1 either way)
        m[i][j] = m[j][i] = min(float(to_mpf(v) / promised), RATIO_CAP)
    return m, key, len(rows), float(promised), how
