"""The report's content as data: the summary dictionary and the numbered sections (paragraphs,
tables, figure references) that :mod:`optimizer.report.render` turns into HTML and Markdown.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from accountant.decimals import exact_fraction, half_width
from accountant.zcdp import get_conversion
from optimizer.census.allocation import BUILTIN_NAMES
from optimizer.formatting import TOLERANCE_MARK, fmt, fmt_bound, pct, to_float, to_mpf
from optimizer.jobs.confirm import paths_of
from optimizer.pipeline.accounting import Accounting
from optimizer.pipeline.side_effects import weaker_points
from optimizer.pipeline.summary import RunSummary
from optimizer.report.inputs import RunInputs, tolerance_flags
from optimizer.report.provenance_block import provenance
from optimizer.report.tables import _heatmap_rows, _optimized_curve, _pair_matrix


def _summary(acc: Accounting, run: RunInputs) -> dict[str, Any]:
    o = run.optimize or {}
    conv = get_conversion(acc.scenario.conversion).label

    e = acc.eps_exact
    e_lower = getattr(e, "lower", None)  # None: ε = 0 already meets the target (exact ε(δ) = 0)
    eps_err = 0 if e_lower is None else exact_fraction(e.value) - exact_fraction(e_lower)
    flags = tolerance_flags(acc, run)
    missed = [k for k, v in flags.items() if not v]
    return {
        "scenario": acc.scenario.name,
        "description": acc.scenario.description,
        "allocation": acc.scenario.allocation,
        "conversion": acc.scenario.conversion,
        "conversion_label": conv,
        "total_rho": str(acc.total_rho),
        "total_rho_decimal": fmt(acc.total_rho, 10),
        "target_delta": acc.scenario.target_delta_text,
        "claimed_epsilon": fmt(acc.eps_claim, 12),
        "exact_delta_at_claimed_epsilon": fmt(acc.delta_exact.value, 12),  # midpoint, nearest
        "exact_delta_lower_at_claimed_epsilon": fmt_bound(acc.delta_exact.lower, 12, "down"),
        "exact_delta_upper_at_claimed_epsilon": fmt_bound(acc.delta_exact.upper, 12, "up"),
        "exact_delta_error": fmt_bound(half_width(acc.delta_exact), 3, "up"),
        "exact_delta_over_target": fmt(acc.delta_exact.value / to_mpf(acc.delta_target), 6),
        # safe side: certified δ(ε) ≤ target δ; rounded up (a larger ε is safe too)
        "exact_epsilon_at_target_delta": fmt_bound(e.value, 12, "up"),
        "exact_epsilon_lower": "0" if e_lower is None else fmt_bound(e_lower, 15, "down"),
        "exact_epsilon_error": fmt_bound(eps_err, 3, "up"),
        "uniform_sigma2_multiplier": str(acc.uniform_multiplier),
        "uniform_variance_drop_percent_proxy": f"{acc.uniform_drop_percent:.4f}",
        "uniform_exact_delta_at_claimed_epsilon": fmt(acc.uniform_delta.value, 12),  # midpoint, nearest
        "uniform_exact_delta_upper_at_claimed_epsilon": fmt_bound(acc.uniform_delta.upper, 12, "up"),
        "uniform_variance_drop_percent": _opt_pct(o.get("uniform_variance_drop_percent")),
        "zcdp_optimum_variance_drop_percent": _opt_pct(o.get("zcdp_optimum_variance_drop_percent")),
        "optimized_variance_drop_percent": _opt_pct(o.get("optimized_variance_drop_percent")),
        "objective": o.get("objective") or "",
        "objective_description": o.get("objective_description") or "",
        "objective_drop_percent": _opt_pct(o.get("objective_drop_percent")),
        "pareto": "" if "pareto" not in o else ("yes" if o.get("pareto") else "no"),
        "max_variance_ratio": o.get("max_variance_ratio") or "",
        "mean_relative_variance": o.get("mean_relative_variance") or "",
        "uniform_mean_relative_variance": o.get("uniform_mean_relative_variance") or "",
        "n_queries_noisier": "" if o.get("n_queries_noisier") is None else str(o.get("n_queries_noisier")),
        "new_total_rho": o.get("new_total_rho") or "",
        "search_note": o.get("search_note") or "",
        "confirmed": _confirmed(o, "confirmed"),
        "uniform_confirmed": _confirmed(o, "uniform_confirmed"),
        "worst_pair": "" if o.get("worst_pair") is None else _pair_str(o.get("worst_pair")),
        # the optimizer's worst-pair δ is an upper bound: rounded up
        "worst_pair_delta": "" if o.get("worst_pair_delta") is None else fmt_bound(o.get("worst_pair_delta"), 20, "up"),
        "worst_pair_text": _worst_pair_text(o),
        "mode": "optimized" if run.optimize is not None else "accounting-only",
        "tolerance_met": "no" if missed else "yes",
        "tolerance_not_met": "; ".join(missed),
        **_target_fields(o),
        **_decision_fields(o),
        # a built-in allocation is the Bureau's production one; anything else is the user's what-if
        "production": acc.scenario.allocation in BUILTIN_NAMES,
    }


def _decision_fields(o: RunSummary) -> dict[str, str]:
    """The decision row the scenario's target selects (:mod:`optimizer.pipeline.decision`), flat: its
    promise and its established cuts ("" when not established) — what ``scenario compare`` shows."""
    d = o.get("decision") or {}
    row = next((r for r in d.get("rows", []) if r.get("selected")), None)
    out = {"decision_target": "", "decision_uniform_cut_percent": "", "decision_reallocation_cut_percent": ""}
    out["decision_new_total_rho"] = ""
    if row is None:
        return out
    out["decision_target"] = row["promise"]
    for key, opt in (("uniform", row.get("uniform")), ("reallocation", row.get("reallocation"))):
        if opt and opt.get("certified"):
            out[f"decision_{key}_cut_percent"] = f"{float(opt['variance_drop_percent']):.4f}"
    realloc = row.get("reallocation") or {}
    if realloc.get("certified"):
        out["decision_new_total_rho"] = fmt_bound(Fraction(realloc["total_rho"]), 8, "up")
    return out


def _worst_pair_text(o: RunSummary) -> str:
    """The optimized allocation's worst pair in words (issue 35 item 4): named only when certain
    (its lower bound ≥ every other pair's upper bound), else the pairs tied within their bounds and
    the release's δ as an interval."""
    pair = o.get("worst_pair")
    if pair is None:
        return "worst pair —"
    delta = "—" if o.get("worst_pair_delta") is None else fmt_bound(o.get("worst_pair_delta"), 20, "up")
    certain = o.get("worst_pair_certain")
    if certain:
        return (
            f"worst pair {_pair_str(pair)} (certain: its lower bound is above every other pair's upper bound) "
            f"with δ ≤ {delta}"
        )
    if certain is None:  # a run summary from before the rule
        return f"largest certified upper bound on pair {_pair_str(pair)}, δ ≤ {delta} (not known to be the worst pair)"
    tied = o.get("worst_pairs_tied") or []
    lo, hi = o.get("release_delta_interval") or ("—", "—")
    names = ", ".join(_pair_str(t) for t in tied[:6]) + (" …" if len(tied) > 6 else "")
    return (
        f"no pair is certainly the worst: {len(tied)} pairs are tied within their certified bounds ({names}), "
        f"and the release's δ lies in [{fmt_bound(lo, 12, 'down')}, {fmt_bound(hi, 12, 'up')}]"
    )


def _target_fields(o: RunSummary) -> dict[str, Any]:
    """What the run's promise was (``target`` of the run summary): one point, or a curve's δ grid
    with the point that binds each allocation (:func:`optimizer.pipeline.stages._target_summary`)."""
    t = o.get("target") or {}
    if t.get("kind") == "per-geolevel":
        return {
            "target_kind": "per-geolevel",
            "curve_deltas": "",
            "curve_text": "",
            "binding_geolevel": str(t.get("binding_geolevel") or "—"),
        }
    if t.get("kind") != "curve":
        return {"target_kind": "point", "curve_deltas": "", "curve_text": ""}
    deltas = [str(d) for d in t.get("deltas") or []]
    return {
        "target_kind": "curve",
        "curve_deltas": ", ".join(deltas),
        "curve_text": f"the {len(deltas)} points δ = {', '.join(deltas)} of the zCDP curve",
        "binding_delta_proxy": str(t.get("binding_delta_proxy") or ""),
        "binding_delta_uniform": str(t.get("binding_delta_uniform") or ""),
        "binding_delta_optimized": str(t.get("binding_delta_optimized") or ""),
        "confirmed_points": t.get("confirmed_points") or {},
    }


def _ratio(text: str, digits: int = 6) -> str:
    """A ratio σ'²/σ² from the run summary, shortened for reading (the run keeps all digits)."""
    return fmt(to_mpf(text), digits) if text else "—"


def _reallocation_paragraphs(s: dict) -> list[str]:
    """What re-balancing between queries does, stated with its objective and its side effects."""
    if not s.get("optimized_variance_drop_percent"):
        return []
    if not s.get("objective"):  # a run summary from before objectives were named
        return [
            "Re-balancing the budget between queries as well (the weighted sum of noise variances, see section 3) "
            f"reduces that sum by {s['optimized_variance_drop_percent']} %; some geolevels then get more noise "
            "than today, so read the per-geolevel table before using it."
        ]
    if s["objective"] == "minimax-relative":
        return [
            "The scenario's objective is minimax-relative (the largest relative variance over all queries): the "
            "uniform rescale above is its optimum, so no query is favoured over another."
        ]
    noisier = s.get("n_queries_noisier") or "0"
    guard = (
        "with the Pareto guard (no query gets more noise than today)"
        if s.get("pareto") == "yes"
        else "WITHOUT the Pareto guard (queries may get more noise than today)"
    )
    text = (
        f"Re-balancing the budget between queries as well, for the scenario's objective {s['objective']} "
        f"({s['objective_description']}) {guard}: the mean relative variance σ'²/σ² over the queries becomes "
        f"{_ratio(s['mean_relative_variance'])} (uniform rescale: {_ratio(s['uniform_mean_relative_variance'])}); "
        f"{noisier} {'query gets' if noisier == '1' else 'queries get'} more noise than today "
        f"(largest σ'²/σ² = {_ratio(s['max_variance_ratio'])}); "
        f"new total ρ = {fmt(to_mpf(Fraction(s['new_total_rho'])), 10)}."
    )
    if s["objective"] == "sum-variance":
        text += (
            " This objective sums absolute variances, so the smallest budgets (e.g. Block) dominate it and its "
            "optimum flattens the allocation; it is a policy choice, not an accounting gain."
        )
    return [text]


def _confirmed(o: RunSummary, key: str) -> str:
    """ "yes" / "no" (checked and failed) / "not checked" (``--no-confirm``) / "" (no run)."""
    if key not in o:
        return ""
    if o.get("confirm_skipped"):
        return "not checked"
    return "yes" if o.get(key) else "no"


def _marked(text: str, flags: dict[str, bool], key: str) -> str:
    """``text``, with :data:`TOLERANCE_MARK` when the result ``key`` missed its tolerance."""
    return text if flags.get(key, True) else f"{text} ({TOLERANCE_MARK})"


def _opt_pct(v) -> str:
    f = to_float(v)
    return "" if f is None else f"{f:.4f}"


def _pair_str(p) -> str:
    if isinstance(p, (list, tuple)):
        return "[" + ", ".join(str(x) for x in p) + "]"
    return str(p)


def release_pair_count(allocation) -> int:
    """Number of neighbouring pairs [M_i, M_j], i ≤ j, of the release's spine paths (the ones the
    all-pairs confirmation checks): 946 for the 43 DHC paths, 528 for PL94's 32 patterns."""
    n = len(paths_of(allocation))
    return n * (n + 1) // 2


def _pairs_text(acc: Accounting, run: RunInputs) -> str:
    """The "N pairs" of this release: the run's confirmed count, else computed from its spine paths."""
    o = run.optimize or {}
    n = o.get("n_pairs_confirmed")
    if not isinstance(n, int) or n <= 0:
        n = release_pair_count(acc.allocation)
    return f"{n} pair" + ("" if n == 1 else "s")


def _published_section(run: RunInputs) -> dict | None:
    """The variance of the published counts per geolevel (GLS model of the hierarchy, run's
    ``published_variance`` summary), with the fan-outs' source and assumptions."""
    pv = (run.optimize or {}).get("published_variance")
    if not pv:
        return None
    if not pv.get("available"):
        return {
            "id": "published",
            "title": "5. Published counts",
            "paras": [f"The variance of the published counts is not shown: {pv.get('why', 'no fan-outs')}."],
        }
    fo = pv["fan_outs"]
    paras = [
        "The noisy measurements are combined into published counts that add up across the hierarchy. Under the "
        "standard generalized-least-squares model of a hierarchy with equal fan-outs (Hay et al., arXiv 0904.0942; "
        "each query its own hierarchy, consistency between queries ignored), the table gives the mean variance of "
        "a published count at each geolevel today, after the uniform rescale and after the optimized allocation "
        "(negative change: less error).",
        f"Fan-outs: {', '.join(fo['fan_outs'])} (top-down, {' → '.join(fo['geolevels'])}); source: {fo['source']}."
        + (f" Assumed: {fo['assumptions']}." if fo.get("assumptions") else ""),
    ]
    body = [
        [
            r["geolevel"],
            str(r["n_queries"]),
            fmt(r["today"], 6),
            fmt(r["uniform"], 6),
            pct(r["uniform_change_percent"], 2),
            fmt(r["optimized"], 6),
            pct(r["optimized_change_percent"], 2),
        ]
        for r in pv["geolevels"]
    ]
    header = ["geolevel", "queries", "variance today", "uniform rescale", "change", "optimized", "change"]
    return {"id": "published", "title": "5. Published counts", "paras": paras, "table": (header, body)}


def _geolevel_section(run: RunInputs) -> dict | None:
    """Each geolevel as its own mechanism: promised vs exact ε, unused budget, the variance drop
    that keeps that geolevel's promise, and whether the new allocations keep it."""
    gl = (run.optimize or {}).get("geolevels")
    if not gl or not gl.get("baseline"):
        return None
    uni = {r["geolevel"]: r for r in gl.get("uniform", [])}
    opt = {r["geolevel"]: r for r in gl.get("optimized", [])}
    conv = get_conversion(gl.get("conversion") or "bun-steinke").label

    def kept(r) -> str:
        return "—" if r is None else fmt(r["epsilon_exact_new"], 8) + (" (kept)" if r["kept"] else " ⚠ broken")

    body = [
        [
            r["geolevel"],
            fmt(r["rho"], 6),
            fmt(r["epsilon_promised"], 8),
            fmt(r["epsilon_exact"], 8),
            pct(r["unused_budget_percent"], 2),
            pct(r["variance_drop_percent"], 2),
            kept(uni.get(r["geolevel"])),
            kept(opt.get(r["geolevel"])),
        ]
        for r in gl["baseline"]
    ]
    model = (
        "its queries, each changed twice by a replaced record, the Census neighbour model"
        if gl.get("model", "census") == "census"
        else "its queries at σ² = 1/(2ρ), each changed once: the neighbour model of arXiv 2410.09296, "
        "set by the scenario"
    )
    paras = [
        f"Each geolevel taken as its own mechanism ({model}), with its own promise: the {conv} conversion of "
        "that geolevel's ρ at "
        f"δ = {gl['delta']}. Unused budget is 1 − exact ε / promised ε; the drop is the share of that geolevel's "
        "noise variance that can go while its own promise holds (arXiv 2410.09296 reports 15.08 %–24.82 % for its "
        "inputs). The last two columns give the exact ε of that geolevel under the uniform rescale and the "
        "optimized allocation, and whether it keeps the geolevel's promise."
    ]
    header = [
        "geolevel",
        "ρ",
        "promised ε",
        "exact ε",
        "unused budget",
        "variance drop (own promise)",
        "uniform rescale ε",
        "optimized ε",
    ]
    return {"id": "geolevels", "title": "6. Per geolevel", "paras": paras, "table": (header, body)}


def _side_effects_section(run: RunInputs, s: dict) -> dict | None:
    """Section 4: the exact δ of the new allocations at the other points of the old zCDP curve
    (:mod:`optimizer.pipeline.side_effects`), stating plainly where the new noise is weaker than it."""
    rows = run.delta_grid
    if not rows:
        return None
    labels = [
        (k, name)
        for k, name in (("uniform", "uniform rescale"), ("optimized", "optimized allocation"))
        if f"{k}_delta_upper" in rows[0]
    ]
    conv = s["conversion_label"]
    covered = {"curve": "the target curve", "per-geolevel": "each geolevel's own promise"}.get(
        s["target_kind"], "the promised point"
    )
    paras = [
        f"The ρ of the baseline allocation {s['allocation']} promises, through the {conv} conversion, "
        "a whole curve of (ε, δ), not only the point "
        f"at δ = {s['target_delta']}. The table gives, on the proxy pair [M13, M13] (the pair the optimizer "
        f"calibrates on; the all-pairs confirmation covers {covered} only), the certified exact δ of each "
        "allocation at ε = conversion(ρ, δ) for each δ of the grid; the ratio is that δ over the promised one."
    ]
    for k, name in labels:
        weak = weaker_points(rows, k)
        if weak:
            paras.append(
                f"The {name} is weaker than the old zCDP promise at δ = {', '.join(weak)}: there its exact δ exceeds "
                "the δ the baseline's zCDP budget promises, so the release is no longer covered by that zCDP "
                + (
                    "statement at those points (the allocation keeps every geolevel's own promise, not the "
                    "release-wide point: that is this scenario's target)."
                    if s["target_kind"] == "per-geolevel"
                    else f"statement at those points ({covered} itself is kept: the allocation was "
                    + (
                        "calibrated and confirmed there)."
                        if s.get("confirmed") == "yes"
                        else "calibrated there on the proxy pair, not confirmed on all pairs)."
                    )
                )
            )
        else:
            paras.append(f"The {name} keeps every point of the old zCDP curve on this grid (on the proxy pair).")
    header = ["δ promised", "ε (zCDP conversion)", "baseline exact δ"]
    for _, name in labels:
        header += [f"{name} exact δ", f"{name} / promised"]
    body = []
    for r in rows:
        line = [str(r["delta_promised"]), fmt(r["epsilon"], 10), str(r["baseline_delta_upper"])]
        for k, _ in labels:
            above = str(r.get(f"{k}_weaker")).strip().lower() == "true"
            line += [str(r[f"{k}_delta_upper"]), fmt(r[f"{k}_ratio"], 4) + (" ⚠ above" if above else "")]
        body.append(line)
    return {"id": "side-effects", "title": "4. Side effects at other δ", "paras": paras, "table": (header, body)}


def _curve_target_section(s: dict) -> dict | None:
    """For a curve target: every point of the curve, its worst pair over all pairs and the certified
    δ there, for the uniform rescale and the optimized allocation (the confirmations' last round)."""
    if s.get("target_kind") != "curve":
        return None
    rows = s.get("confirmed_points") or {}
    labels = [
        (k, name) for k, name in (("uniform", "uniform rescale"), ("optimized", "optimized allocation")) if rows.get(k)
    ]
    if not labels:
        return None
    paras = [
        f"The promise kept here is the whole curve: every one of {s['curve_text']} ({s['conversion_label']} "
        "conversion of the baseline ρ), each checked on every pair of spine paths. A uniform cut or a reallocation is "
        "only as large as its binding point allows: the point whose worst pair comes closest to its δ. On the proxy "
        f"pair the binding point is δ = {s.get('binding_delta_proxy') or '—'}."
    ]
    for k, name in labels:
        kept = all(r.get("kept") for r in rows[k])
        paras.append(
            f"The {name} "
            + ("keeps every point on every pair" if kept else "does NOT keep every point")
            + f"; its binding point is δ = {s.get(f'binding_delta_{k}') or '—'}."
        )
    header = ["δ", "ε (zCDP conversion)"]
    for _, name in labels:
        header += [f"{name}: worst pair", "certified δ (upper)", "÷ δ"]
    body = []
    for i, r0 in enumerate(rows[labels[0][0]]):
        line = [str(r0["delta"]), fmt(r0["epsilon"], 10)]
        for k, _ in labels:
            r = rows[k][i]
            mark = " (binding)" if r.get("binding") else ""
            line += [
                _pair_str(r["worst_pair"]),
                str(r["worst_delta_upper"]),
                fmt_bound(r["ratio_to_delta"], 9, "up") + mark + ("" if r.get("kept") else " ⚠ above"),
            ]
        body.append(line)
    return {"id": "curve-target", "title": "4. The whole promised curve", "paras": paras, "table": (header, body)}


def _sections(acc: Accounting, run: RunInputs, s: dict, pq, pg) -> list[dict]:
    """The report's sections as neutral blocks (rendered to HTML and Markdown), in order; those that
    need an optimizer run appear only with one, and the numbered titles are numbered here."""
    decision = _decision_section(run)
    secs: list[dict[str, Any]] = [
        *([decision] if decision is not None else []),
        _summary_section(acc, s),
        _promised_section(s),
        _guaranteed_section(acc, run, s),
        _noise_section(acc, run, s),
    ]
    _summary_notes(run, s, secs)
    optional = [_curve_target_section(s), _side_effects_section(run, s)]
    optional += [_published_section(run), _geolevel_section(run)]
    secs += [sec for sec in optional if sec is not None]
    secs += [_where_section(acc, run, pq, pg)]
    appendix = _appendix_section(s, pq, pg)
    secs += [*([appendix] if appendix is not None else []), _provenance_section(acc, run)]
    n = 0
    for sec in secs:  # number the sections in order (some appear only with an optimizer run)
        head, sep, rest = sec["title"].partition(". ")
        if sep and head.isdigit():
            n += 1
            sec["title"] = f"{n}. {rest}"
    return secs


def _option_cell(opt: Mapping[str, Any] | None, note: str) -> str:
    """A decision-table cell: the cut and how it was confirmed, or why there is no number."""
    if opt is None:
        return "— (" + note + ")"
    if not opt.get("certified"):
        return "NOT CONFIRMED (the proxy pair's figure is in the method sections)"
    cut = f"{float(opt['variance_drop_percent']):.4f} %"
    obj = opt.get("objective_drop_percent")
    if obj is not None and abs(float(obj) - float(opt["variance_drop_percent"])) > 5e-5:
        cut += f" (objective −{float(obj):.4f} %)"
    return cut + f"; {opt['certified']}"


def _rho_cell(opt: Mapping[str, Any] | None) -> str:
    return "—" if opt is None else fmt_bound(Fraction(opt["total_rho"]), 6, "up")


def _decision_section(run: RunInputs) -> dict[str, Any] | None:
    """The decision table (:mod:`optimizer.pipeline.decision`): per promise, the confirmed cuts, the
    new total ρ, side effects and broken geolevel promises; first, so it is the report's first screen."""
    o = run.optimize
    if o is None or not o.get("decision"):
        return None
    d = o["decision"]
    rows = []
    for r in d["rows"]:
        broken = r.get("geolevels_broken") or {}
        broken_text = "; ".join(f"{k}: {', '.join(v)}" for k, v in broken.items() if v) or ("none" if broken else "—")
        rows.append(
            [
                ("▶ " if r["selected"] else "") + f"{r['promise']}: {r['statement']}",
                _option_cell(r["uniform"], r["note"]),
                _rho_cell(r["uniform"]),
                _option_cell(r["reallocation"], r["note"]),
                _rho_cell(r["reallocation"]),
                r["side_effects"] or "—",
                broken_text,
            ]
        )
    paras = []
    if not o.get("confirmed"):
        paras.append(
            "NOT CONFIRMED — do not use: this run did not confirm its proposal on every pair of spine paths "
            + ("(it skipped the confirmation)." if o.get("confirm_skipped") else "(the confirmation failed).")
        )
    paras.append(d["sentence"])
    after = [
        "One row per promise a policymaker might hold (▶ the one this scenario keeps). A cut is the share of "
        "the weighted sum of noise variances that can go; the uniform cut scales every query's noise alike, "
        "the reallocation makes no query noisier. A cut not established on every pair (or exactly, geolevel by "
        "geolevel) shows no number here; the new total ρ is rounded up (exact fractions in optimize.json). "
        + " ".join(f"{r['promise']}: {r['note']}." for r in d["rows"] if r["note"] != "this run")
    ]
    head = [
        "promise kept",
        "uniform cut",
        "total ρ",
        "reallocation (no query noisier)",
        "total ρ",
        "side effects",
        "geolevel promises broken",
    ]
    return {"id": "decision", "title": "Decision", "paras": paras, "table": (head, rows), "after": after}


def _summary_section(acc: Accounting, s: dict) -> dict[str, Any]:
    """ "In short": the promise, what the exact calculation shows, and what can go."""
    sc = acc.scenario
    overshoot = float(acc.delta_exact.value / to_mpf(acc.delta_target))
    return {
        "id": "summary",
        "title": "In short",
        "paras": [
            (
                f"The Census Bureau describes the privacy of its 2020 production allocation {sc.allocation} "
                f"with a single number ρ = {s['total_rho_decimal']} "
                if s["production"]
                else f"The what-if allocation {sc.allocation} (written for this scenario; not a Census Bureau "
                f"production allocation) has a single zCDP budget ρ = {s['total_rho_decimal']} "
            )
            + "(zero-concentrated differential privacy). Turned into the usual (ε, δ) language with the "
            f"{s['conversion_label']} formula, this promises "
            f"ε = {s['claimed_epsilon']} at δ = {s['target_delta']}.",
            "The exact calculation shows the promise is kept with room to spare: at that ε, for the proxy pair "
            "(two records that pass through every geolevel) the exact δ is at most "
            f"{s['exact_delta_upper_at_claimed_epsilon']} (certified), "
            f"about {fmt(overshoot, 3)} times the promised δ; other pairs of spine paths can be higher "
            "(section 3 checks every pair). "
            + (
                ("Keeping the Bureau's own balance" if s["production"] else "Keeping this allocation's balance")
                + " between queries and geolevels and scaling every noise variance down by the same factor, "
                + (
                    f"{s['uniform_variance_drop_percent']} % of the noise variance can go while every one of "
                    f"{s['curve_text']} still holds (confirmed on every pair of spine paths; the binding point is "
                    f"δ = {s['binding_delta_uniform'] or '—'})."
                    if s["target_kind"] == "curve"
                    and s.get("uniform_confirmed") == "yes"
                    and s.get("uniform_variance_drop_percent")
                    else f"{s['uniform_variance_drop_percent']} % of the noise variance can go while every "
                    "geolevel's own promise still holds (certified on each geolevel's own mechanism; the binding "
                    f"geolevel is {s['binding_geolevel']}). This target does not keep the release-wide point "
                    "(the Decision table says by how much)."
                    if s["target_kind"] == "per-geolevel"
                    and s.get("uniform_confirmed") == "yes"
                    and s.get("uniform_variance_drop_percent")
                    else f"{s['uniform_variance_drop_percent']} % of the noise variance can go while the same "
                    f"promise still holds (confirmed on every pair of spine paths)."
                    if s.get("uniform_confirmed") == "yes" and s.get("uniform_variance_drop_percent")
                    else f"{s['uniform_variance_drop_percent_proxy']} % of the noise variance can go "
                    "while the same promise still holds (for the proxy pair of spine paths only)."
                )
            ),
            *_reallocation_paragraphs(s),
            *(
                [
                    f"{TOLERANCE_MARK}: {s['tolerance_not_met']}. These results are still rigorous enclosures, "
                    "but with fewer certified digits than the accountant was asked for (see section 2)."
                ]
                if s.get("tolerance_met") == "no"
                else []
            ),
        ],
    }


def _promised_section(s: dict) -> dict[str, Any]:
    """What was promised: ρ, the conversion, the promised (ε, δ) and the target the optimizer keeps."""
    return {
        "id": "promised",
        "title": "1. What was promised",
        "paras": [
            "Differential privacy bounds how much any one person's record can change what is published. "
            "ε measures the strength of that bound (smaller is more private) and δ is the small probability "
            "with which the bound may fail.",
        ],
        "table": (
            ["quantity", "value"],
            [
                ["total zCDP budget ρ", f"{s['total_rho']} (= {s['total_rho_decimal']})"],
                ["conversion used for the promise", s["conversion_label"]],
                ["promised δ", s["target_delta"]],
                ["promised ε (zCDP claim)", s["claimed_epsilon"]],
                [
                    "target the optimizer keeps",
                    f"every one of {s['curve_text']} (section The whole promised curve)"
                    if s["target_kind"] == "curve"
                    else "every geolevel's own (ε, δ) at the promised δ (section Per geolevel)"
                    if s["target_kind"] == "per-geolevel"
                    else "the one point (promised ε, promised δ)",
                ],
            ],
        ),
    }


def _guaranteed_section(acc: Accounting, run: RunInputs, s: dict) -> dict[str, Any]:
    """What is really guaranteed: the exact δ at the promised ε and ε at the promised δ, certified."""
    flags = tolerance_flags(acc, run)
    eps_safe = fmt_bound(acc.eps_exact.value, 15, "up")
    return {
        "id": "guaranteed",
        "title": "2. What is really guaranteed",
        "paras": [
            "The zCDP conversion is a convenient upper bound. The exact privacy curve of the discrete Gaussian "
            "noise actually used can be computed with certified error bounds (every digit shown is guaranteed "
            "by interval arithmetic). It is computed here for the proxy pair: two records that each pass "
            "through every measured geolevel (the full spine with itself, every measurement twice).",
        ],
        "table": (
            ["quantity", "value", "certified error"],
            [
                [
                    "exact δ at the promised ε",
                    _marked(f"≤ {s['exact_delta_upper_at_claimed_epsilon']}", flags, "exact δ at the promised ε"),
                    f"midpoint {s['exact_delta_at_claimed_epsilon']} ± {s['exact_delta_error']}; "
                    f"true value in [{s['exact_delta_lower_at_claimed_epsilon']}, "
                    f"{s['exact_delta_upper_at_claimed_epsilon']}]",
                ],
                ["exact δ ÷ promised δ (midpoint)", s["exact_delta_over_target"], ""],
                [
                    "exact ε at the promised δ (safe side)",
                    _marked(eps_safe, flags, "exact ε at the promised δ"),
                    f"≤ {s['exact_epsilon_error']}: true value in ({s['exact_epsilon_lower']}, {eps_safe}]"
                    if s["exact_epsilon_lower"] != "0"
                    else "exact: ε = 0 already meets the promised δ",
                ],
                *(
                    [
                        [k, TOLERANCE_MARK, "still a rigorous enclosure, wider than requested"]
                        for k, v in flags.items()
                        if not v and k not in ("exact δ at the promised ε", "exact ε at the promised δ")
                    ]
                ),
            ],
        ),
        "figures": [("fig_eps_delta.png", _eps_delta_caption(acc, run))],
    }


def _and(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c'."""
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _eps_delta_caption(acc: Accounting, run: RunInputs) -> str:
    """The ε–δ figure's caption, from its data: over which ε the zCDP claim lies above each exact curve,
    and where an exact curve crosses it (there the old zCDP statement no longer covers that noise)."""
    claim = {round(float(c["eps"]), 9): to_mpf(c["zcdp_claim_delta"]) for c in acc.curves}
    curves = {
        "the published noise": [(float(c["eps"]), to_mpf(c["baseline_exact_delta"])) for c in acc.curves],
        "the uniformly reduced noise": [(float(c["eps"]), to_mpf(c["uniform_exact_delta"])) for c in acc.curves],
        "the optimized noise": [(e, to_mpf(d)) for e, d in _optimized_curve(run)],
    }
    if not claim:
        return "Privacy curves: none computed."
    lo, hi = min(claim), max(claim)
    below, crossing = [], []
    for name, pts in curves.items():
        over = [e for e, d in pts if round(e, 9) in claim and d > claim[round(e, 9)]]
        if not pts:
            continue
        if over:
            crossing.append(f"{name} from ε = {fmt(min(over), 6)} on")
        else:
            below.append(name)
    text = (
        f"Privacy curves for ε = {fmt(lo, 5)} … {fmt(hi, 5)}: the zCDP claim (dashed grey) and the exact curves of "
        "the proxy pair; the dotted lines mark the promise. "
    )
    if below:
        text += "The claim lies above the exact curve of " + _and(below) + " over the whole range (there the "
        text += "exact guarantee is stronger than the claim)"
    if crossing:
        text += ("; it" if below else "The claim") + " lies below the exact curve of " + _and(crossing)
        text += " (there the exact δ exceeds the old zCDP claim: section Side effects at other δ)"
    return text + "."


def _noise_section(acc: Accounting, run: RunInputs, s: dict) -> dict[str, Any]:
    """How much noise can go: the drop of each allocation and whether the all-pairs check confirmed it."""
    flags = tolerance_flags(acc, run)
    noise_rows = [
        [
            f"uniform rescale keeping only the point δ = {s['target_delta']}, proxy pair (this report)"
            if s["target_kind"] == "curve"
            else "uniform rescale, proxy pair (this report)",
            pct(s["uniform_variance_drop_percent_proxy"]),
            _marked(
                f"σ² × {fmt(acc.uniform_multiplier, 10)}; exact δ at promised ε then "
                f"≤ {s['uniform_exact_delta_upper_at_claimed_epsilon']}",
                flags,
                "uniform-rescale δ at the promised ε",
            ),
        ],
        [
            "uniform rescale (optimizer, every geolevel's own promise)"
            if s["target_kind"] == "per-geolevel"
            else "uniform rescale (optimizer, all pairs)",
            pct(s["uniform_variance_drop_percent"] or None),
            "not checked over all pairs (--no-confirm)" if s.get("uniform_confirmed") == "not checked" else "",
        ],
        [
            f"optimized for {s['objective']} (optimizer)" if s.get("objective") else "optimized (optimizer)",
            pct(s["optimized_variance_drop_percent"] or None),
            (
                f"objective −{s['objective_drop_percent']} %; largest σ'²/σ² {_ratio(s['max_variance_ratio'])}; "
                f"{s['n_queries_noisier']} queries noisier than today"
            )
            if s.get("objective")
            else "",
        ],
    ]
    conf = _confirmation_text(acc, run, s)
    return {
        "id": "noise",
        "title": "3. How much noise can go",
        "paras": [
            "If the exact guarantee is better than promised, less noise suffices for the same promise. "
            "The variance drop is the share of the noise variance that can be removed while the exact δ at the "
            + (
                "promised ε of every geolevel (its own mechanism) stays within the promised δ."
                if s["target_kind"] == "per-geolevel"
                else "promised ε stays within the promised δ."
            ),
            conf,
            *([f"How the reallocation was found: {s['search_note']}."] if s.get("search_note") else []),
        ],
        "table": (["noise allocation", "drop of the weighted sum of variances", "note"], noise_rows),
        "figures": [
            (
                "fig_tradeoff.png",
                "Trade-off curves: any test of whether one person's record is in the data "
                "has false-alarm rate α and miss rate β on or above these curves (higher = more private).",
            )
        ],
    }


def _confirmation_text(acc: Accounting, run: RunInputs, s: dict) -> str:
    """Section 3's sentence on what the all-pairs (or per-geolevel) check established."""
    if s["confirmed"]:
        return (
            (
                "Confirmed: the optimized noise keeps every point of the target curve for every one of the "
                f"neighbouring pairs ({_pairs_text(acc, run)}); at the binding point δ = "
                f"{s['binding_delta_optimized'] or '—'}: {s['worst_pair_text']}."
                if s["target_kind"] == "curve"
                else "Certified: the optimized noise keeps every geolevel's own promise, each computed exactly on "
                "that geolevel's mechanism (its queries alone: every pair of spine paths that differ at a geolevel "
                "gives it the same mechanism, so this is the all-pairs check; section Per geolevel)."
                if s["target_kind"] == "per-geolevel"
                else "Confirmed: the optimized noise keeps the promise for every pair of spine paths "
                f"({_pairs_text(acc, run)}); {s['worst_pair_text']}."
            )
            if s["confirmed"] == "yes"
            else "Not checked: the optimizer ran without the all-pairs confirmation (--no-confirm), so the optimized "
            "and uniform drops shown hold for the proxy pair only; do not use the optimized allocation "
            "before `census-plb optimize` confirms it on every pair."
            if s["confirmed"] == "not checked"
            else "NOT confirmed: the certified check over all pairs of spine paths failed; do not use the optimized "
            f"allocation ({s['worst_pair_text']})."
        )
    return (
        "No optimizer output was available, so this report is accounting-only: the variance drop shown is "
        f"the uniform rescale for the proxy pair, not confirmed over all {_pairs_text(acc, run)}."
    )


def _summary_notes(run: RunInputs, s: dict, secs: list[dict]) -> None:
    """Append to "In short" what the per-geolevel promises and the other δ of the curve say."""
    weaker = (run.optimize or {}).get("delta_grid_weaker") or {}
    said = [
        f"the {name} at δ = {', '.join(weaker[k])}"
        for k, name in (("uniform", "uniform rescale"), ("optimized", "optimized allocation"))
        if weaker.get(k)
    ]
    gl = (run.optimize or {}).get("geolevels") or {}
    for k, name in (("uniform", "uniform rescale"), ("optimized", "optimized allocation")):
        if gl.get(f"{k}_broken") and secs and secs[0].get("id") == "summary":
            secs[0]["paras"].append(
                f"Taken one geolevel at a time, the {name} does not keep the baseline's own promise of "
                f"{', '.join(gl[k + '_broken'])} (exact ε above that geolevel's promised ε; section Per geolevel)."
            )
    if said and secs and secs[0].get("id") == "summary":
        secs[0]["paras"].append(
            {
                "curve": "Both keep every point of the target curve",
                "per-geolevel": "Both keep every geolevel's own promise",
            }.get(s["target_kind"], "Both keep the promised point")
            + ", but not every point of the baseline ρ's zCDP curve: on the proxy pair "
            f"the exact δ exceeds that curve for {' and '.join(said)} (section Side effects at other δ)."
        )


def _appendix_section(s: dict, pq, pg) -> dict[str, Any] | None:
    """The unguarded sum-variance optimum, never proposed: how much it would cut and how many queries it
    makes noisier (counted from the run's per-query table)."""
    if not s.get("zcdp_optimum_variance_drop_percent") or not pq or any(r["zcdp_optimum_sigma2"] == "" for r in pq):
        return None
    noisier = sum(1 for r in pq if to_mpf(r["zcdp_optimum_sigma2"]) > to_mpf(r["baseline_sigma2"]))
    return {
        "id": "appendix",
        "title": "Appendix: the sum-variance optimum (not proposed)",
        "paras": [
            f"Not proposed: makes {noisier} of {len(pq)} queries noisier. Minimising the weighted sum of noise "
            "variances with no guard (the zCDP optimum, calibrated by the exact accountant on the proxy pair) "
            f"would cut that sum by {pct(s['zcdp_optimum_variance_drop_percent'])}, mostly by moving budget to "
            "the geolevels with the smallest budgets, whose variances dominate the sum; the geolevels with "
            "a negative drop below get more noise than today."
        ],
        "table": (
            ["geolevel", "drop of its summed variance (sum-variance optimum)"],
            [[r["geolevel"], pct(r["drop_percent_zcdp_optimum"] or None, 2)] for r in pg],
        ),
    }


def _heatmap_caption(acc: Accounting, run: RunInputs) -> str | None:
    """The heat map's caption from its data: which allocation, at which ε, relative to which δ, and
    its largest ratio (``None``: no per-pair results)."""
    heat = _heatmap_rows(run)
    pm = _pair_matrix(run, acc.eps_claim, acc) if heat is not None else None
    if heat is None or pm is None:
        return None
    m, eps_key, n_pairs, _promised, how = pm
    top = max(v for row in m for v in row if v == v)  # the largest ratio (NaN cells skipped)
    return (
        f"Certified δ of each of the {n_pairs} pairs of spine paths [M_i, M_j] for {heat[1]}, at "
        f"ε = {fmt(eps_key, 10)}, relative to {how}: the colour is the certified upper bound of δ divided "
        "by that δ; the promise (ratio 1) is marked on the colour bar, so every cell below the mark keeps "
        f"it. The largest ratio is {fmt_bound(top, 4, 'up')}"
        + (" (above the promise)" if top > 1 else " (the promise is kept on every pair)")
        + "; its cell is the worst pair only when its lower bound is above every other pair's upper bound "
        "(section 3 says whether it is). The path numbers are listed below the tables."
    )


def _path_legend(acc: Accounting) -> tuple[list[str], list[list[str]]]:
    """The spine paths M_i of the allocation's release and the geolevels each is measured at."""
    return ["path", "geolevels"], [[f"M{p.index}", " › ".join(p.pattern)] for p in paths_of(acc.allocation)]


def _where_section(acc: Accounting, run: RunInputs, pq, pg) -> dict[str, Any]:
    """Where the noise reduction lands: per geolevel, per query, and the pairs' heat map."""
    pg_rows = [
        [
            r["geolevel"],
            str(r["n_queries"]),
            fmt(r["rho"], 6),
            pct(r["rho_share_percent"], 2),
            r["weight"],
            pct(r["drop_percent_uniform"] or None, 2),
            pct(r["drop_percent_optimized"] or None, 2),
            " → ".join(r[k] or "—" for k in ("noise_sd_baseline", "noise_sd_uniform", "noise_sd_optimized")),
        ]
        for r in pg
    ]
    pq_rows = [
        [
            r["geolevel"],
            r["query"],
            fmt(r["baseline_rho"], 6),
            fmt(r["baseline_sigma2"], 6),
            pct(r["drop_percent_uniform"] or None, 2),
            pct(r["drop_percent_optimized"] or None, 2),
        ]
        for r in pq
    ]
    where_figs = [
        ("fig_geolevel_drop.png", "Variance removed per geolevel (summed over its queries)."),
        ("fig_query_drop.png", "Variance removed per query."),
    ]
    paras = [
        "Where the noise reduction lands: per geolevel (the summed noise variance of its queries) and per query. "
        "The noise SD is the typical error of one noisy count of that geolevel (the measurement, before "
        "post-processing), in persons: the root mean square of √σ² over its queries (σ² the raw noise variance), "
        "today → after the uniform cut → after the reallocation."
    ]
    heat = _heatmap_caption(acc, run)
    legend: list[tuple[str, tuple[list[str], list[list[str]]]]] = []
    if heat is not None:
        where_figs.append(("fig_pairs_heatmap.png", heat))
        legend = [("Spine paths (the heat map's numbers: the geolevels each path is measured at)", _path_legend(acc))]
    else:
        paras.append("No per-pair results were available, so no worst-pair heat map is shown.")
    for why in run.pairs_ignored:
        paras.append(f"A per-pair results file was found but not used: {why}.")
    return {
        "id": "where",
        "title": "5. Where",
        "paras": paras,
        "table": (
            [
                "geolevel",
                "queries",
                "ρ",
                "share of ρ",
                "weight",
                "drop (uniform)",
                "drop (optimized)",
                "noise SD, persons (today → uniform → optimized)",
            ],
            pg_rows,
        ),
        "more_tables": [
            (
                "Per query",
                (["geolevel", "query", "ρ", "σ² (raw noise variance)", "drop (uniform)", "drop (optimized)"], pq_rows),
            ),
            *legend,
        ],
        "figures": where_figs,
    }


def _provenance_section(acc: Accounting, run: RunInputs) -> dict[str, Any]:
    """Method & provenance: how the numbers were computed, from which inputs and code."""
    return {
        "id": "provenance",
        "title": "6. Method & provenance",
        "paras": [
            "Exact accounting: certified lattice quadrature of the privacy-loss distribution of the composed "
            "discrete Gaussians (Su, Su & Wang, arXiv 2606.29835), implemented in the census-plb accountant with "
            "outward-rounded interval arithmetic. Per-query noise σ² = 1/ρ (Census convention).",
        ],
        "table": (["item", "value"], [[k, v] for k, v in provenance(acc, run)]),
    }
