"""The report's figures (matplotlib, Agg backend; PNG metadata stripped so the bytes are deterministic)."""

from __future__ import annotations

import io

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.colors import LogNorm
from matplotlib.figure import Figure

from accountant.zcdp import get_conversion
from optimizer.formatting import fmt
from optimizer.pipeline.accounting import Accounting
from optimizer.report.inputs import RunInputs
from optimizer.report.tables import _optimized_curve, _optimized_tradeoff, _pair_matrix


def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def _figure(w: float, h: float):
    """A figure on the Agg canvas (the object API: no pyplot, no global backend switch)."""
    fig = Figure(figsize=(w, h), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def make_figures(acc: Accounting, run: RunInputs, pq: list[dict], pg: list[dict]) -> dict[str, bytes]:
    """Every figure of the report, as PNG bytes by file name (those without data are left out)."""
    figs: dict[str, bytes] = {}
    _curve_figures(acc, run, figs)
    _drop_figures(acc, pq, pg, figs)
    _heatmap_figure(acc, run, figs)
    return figs


def _curve_figures(acc: Accounting, run: RunInputs, figs: dict[str, bytes]) -> None:
    """The (ε, δ) curves (zCDP claim and exact) and the trade-off curves."""
    sc = acc.scenario
    conv = get_conversion(sc.conversion).label
    # ε–δ curves
    if acc.curves:
        fig = _figure(8, 5)
        ax = fig.add_subplot()
        e = [float(c["eps"]) for c in acc.curves]
        ax.semilogy(
            e, [float(c["zcdp_claim_delta"]) for c in acc.curves], "--", color="tab:gray", label=f"zCDP claim ({conv})"
        )
        ax.semilogy(
            e,
            [float(c["baseline_exact_delta"]) for c in acc.curves],
            color="tab:blue",
            label="exact, published noise (proxy pair)",
        )
        ax.semilogy(
            e,
            [float(c["uniform_exact_delta"]) for c in acc.curves],
            color="tab:orange",
            lw=4,
            alpha=0.5,  # wide underneath: the optimized curve often lies on it and must not hide it
            label="exact, uniformly reduced noise (proxy pair)",
        )
        opt = _optimized_curve(run)
        if opt:
            ax.semilogy(
                [p[0] for p in opt],
                [p[1] for p in opt],
                color="tab:green",
                ls="--",
                label="exact, optimized noise (optimizer)",
            )
        ax.axhline(float(acc.delta_target), color="k", lw=0.8, ls=":")
        ax.axvline(float(acc.eps_claim), color="k", lw=0.8, ls=":")
        ax.annotate(
            f"promise: ε = {fmt(acc.eps_claim, 5)}, δ = {sc.target_delta_text}",
            (float(acc.eps_claim), float(acc.delta_target)),
            xytext=(8, 8),
            textcoords="offset points",
            fontsize=9,
        )
        ax.set_xlabel("ε")
        ax.set_ylabel("δ (log scale)")
        ax.set_title(f"{sc.name}: privacy curve — zCDP claim vs exact")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=9)
        figs["fig_eps_delta.png"] = _png(fig)
    # trade-off
    if acc.tradeoff:
        fig = _figure(8, 4.5)
        ax = fig.add_subplot()

        def pts(ka, kb):
            sel = [t for t in acc.tradeoff if float(t[ka]) > 0]
            return [float(t[ka]) for t in sel], [float(t[kb]) for t in sel]

        ax.semilogx(*pts("baseline_alpha", "baseline_beta"), color="tab:blue", label="exact, published noise")
        ax.semilogx(*pts("uniform_alpha", "uniform_beta"), color="tab:orange", label="exact, uniformly reduced noise")
        opt = [(a, b) for a, b in _optimized_tradeoff(run) if a > 0]
        if opt:
            ax.semilogx([p[0] for p in opt], [p[1] for p in opt], color="tab:green", label="exact, optimized noise")
        knee = [
            float(t["baseline_alpha"])
            for t in acc.tradeoff
            if float(t["baseline_alpha"]) > 0 and float(t["baseline_beta"]) < 0.999
        ]
        ax.set_xlim(min(max(min(knee, default=1e-30) / 1e3, 1e-40), 1e-3), 1)
        ax.set_ylim(-0.02, 1.02)
        ax.set_xlabel("α: false-alarm rate of the attacker's test (type I error, log scale)")
        ax.set_ylabel("β: miss rate (type II error)")
        ax.set_title(f"{sc.name}: can an attacker tell whether one person's record is in the data?")
        ax.grid(True, which="major", alpha=0.3)
        ax.legend(fontsize=9)
        figs["fig_tradeoff.png"] = _png(fig)


def _drop_figures(acc: Accounting, pq: list[dict], pg: list[dict], figs: dict[str, bytes]) -> None:
    """The variance removed per geolevel and per query (bars per proposed allocation: the uniform cut and
    the reallocation; the unguarded sum-variance optimum is not proposed, it is in the appendix table)."""
    sc = acc.scenario
    # per-geolevel bars
    series = [
        ("drop_percent_uniform", "uniform", "tab:orange"),
        ("drop_percent_optimized", "optimized", "tab:green"),
    ]
    fig = _figure(8, 4.5)
    ax = fig.add_subplot()
    present = [s for s in series if any(r[s[0]] != "" for r in pg)]
    width = 0.8 / max(len(present), 1)
    for k, (col, label, color) in enumerate(present):
        xs = [i + (k - (len(present) - 1) / 2) * width for i in range(len(pg))]
        ax.bar(xs, [float(r[col]) if r[col] != "" else 0.0 for r in pg], width, label=label, color=color)
    ax.set_xticks(range(len(pg)), [r["geolevel"] for r in pg], rotation=30, ha="right")
    ax.set_ylabel("variance drop (%)")
    ax.set_title(f"{sc.name}: noise variance removed per geolevel")
    ax.axhline(0, color="k", lw=0.6)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=9)
    figs["fig_geolevel_drop.png"] = _png(fig)
    # per-query bars
    fig = _figure(8, max(3.0, 0.17 * len(pq) + 1.2))
    ax = fig.add_subplot()
    present = [s for s in series if any(r[s[0]] != "" for r in pq)]
    height = 0.8 / max(len(present), 1)
    labels = [f"{r['geolevel']}: {r['query']}" for r in pq]
    for k, (col, label, color) in enumerate(present):
        ys = [i + (k - (len(present) - 1) / 2) * height for i in range(len(pq))]
        ax.barh(ys, [float(r[col]) if r[col] != "" else 0.0 for r in pq], height, label=label, color=color)
    ax.set_yticks(range(len(pq)), labels, fontsize=6)
    ax.set_ylim(len(pq) - 0.5, -0.5)
    ax.set_xlabel("variance drop (%)")
    ax.set_title(f"{sc.name}: noise variance removed per query")
    ax.axvline(0, color="k", lw=0.6)
    ax.grid(True, axis="x", alpha=0.3)
    ax.legend(fontsize=8, loc="lower right")
    figs["fig_query_drop.png"] = _png(fig)


def _heatmap_figure(acc: Accounting, run: RunInputs, figs: dict[str, bytes]) -> None:
    """The certified δ of every pair relative to the promise (issue 35 item 4)."""
    sc = acc.scenario
    # per-pair heat map: certified δ upper bound relative to the promise (issue 35 item 4)
    pm = _pair_matrix(run, acc.eps_claim, acc)
    if pm is not None:
        m, key, npairs, _promised, how = pm

        fig = _figure(7, 6.3)
        ax = fig.add_subplot()
        arr = np.ma.masked_invalid(np.array(m, dtype=float))
        top = max(float(arr.max()), 1.0) if arr.count() else 1.0
        low = min(float(arr.min()), 0.5) if arr.count() else 0.5
        im = ax.imshow(
            arr,
            cmap="viridis",
            norm=LogNorm(vmin=low, vmax=top * 1.05),
            origin="upper",
            interpolation="nearest",
            extent=(0.5, len(m) + 0.5, len(m) + 0.5, 0.5),
        )
        bar = fig.colorbar(im, ax=ax, label="certified upper bound of δ ÷ promised δ (log scale)")
        bar.ax.axhline(1.0, color="red", lw=2)
        bar.ax.annotate(
            "promise",
            (1.0, 1.0),
            xycoords=("axes fraction", "data"),
            xytext=(-2, 3),
            textcoords="offset points",
            ha="right",
            fontsize=8,
            color="red",
        )
        ax.set_xlabel("path j")
        ax.set_ylabel("path i")
        ax.set_title(
            f"{sc.name}: δ of each pair [M_i, M_j] relative to the promise\n"
            f"at ε = {fmt(key, 8)} ({npairs} pairs; ÷ {how})",
            fontsize=10,
        )
        figs["fig_pairs_heatmap.png"] = _png(fig)
