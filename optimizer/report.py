"""Human-readable reports of one scenario: what was promised, what is really guaranteed, how much
noise can go, where — with figures, tables and a provenance block.

:func:`build_report` writes, into ``runs/<scenario>/report/`` (or any ``out_dir``; the committed
``reports/<scenario>/`` only when asked, ``census-plb report --publish``), each file atomically and
never through a symbolic link:

* ``report.html`` — self-contained (CSS inline, figures embedded as base64 PNG), for a
  non-specialist reader;
* ``report.md`` — the same content in Markdown (figures linked as the PNG files next to it);
* ``fig_eps_delta.png``, ``fig_tradeoff.png``, ``fig_geolevel_drop.png``, ``fig_query_drop.png``
  and ``fig_pairs_heatmap.png`` (when per-pair results exist) — matplotlib, Agg backend;
* ``summary.csv``, ``per_geolevel.csv``, ``per_query.csv``, ``curves.csv``, ``tradeoff.csv``.

Inputs are the scenario (:mod:`scenarios.loader`) and, optionally, an optimizer run directory
(``optimize.json``, ``per_query.csv``, ``curves.csv``, ``tradeoff.csv``; ``*_pairs.csv`` from
``census-plb pairs``).  Whatever the run directory lacks is replaced by the *accounting-only*
view, computed here directly with the accountant: the zCDP claim against the exact certified
curve of the proxy pair (the full spine with itself: every measurement twice — the pair
[13, 13] of DHC persons) and the uniform rescale of all noise variances that keeps the exact δ
of that pair at the claimed ε within the target δ.

Deterministic: the same inputs give byte-identical files (no clocks; PNG metadata stripped;
numbers printed with fixed significant digits).
"""

from __future__ import annotations

import base64
import csv
import hashlib
import html
import io
import json
import math
import platform
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import mpmath

from optimizer.allocation import BUILTIN_NAMES
from optimizer.atomic import atomic_write_bytes, atomic_write_text, check_writable

__all__ = [
    "Accounting",
    "build_report",
    "compare_scenarios",
    "compute_accounting",
    "default_comparison_dir",
    "default_report_dir",
    "write_comparison",
]

#: tolerances of the accountant calls made here (absolute / relative δ; ε bisection)
DELTA_TOL, DELTA_RTOL, EPS_TOL = 1e-35, 1e-20, 1e-12
N_CURVE = 46
N_TRADEOFF = 201
_ROOT = Path(__file__).resolve().parent.parent
Progress = Callable[[str], None]
#: where runs write by default (git-ignored) and where the committed reports live (only on purpose)
RUNS_ROOT, PUBLISHED_ROOT = Path("runs"), Path("reports")


def default_report_dir(scenario_name: str, publish: bool = False) -> Path:
    """Report folder of a scenario: ``runs/<name>/report`` (git-ignored) unless ``publish``, then the
    committed ``reports/<name>`` (relative to the working directory)."""
    return PUBLISHED_ROOT / scenario_name if publish else RUNS_ROOT / scenario_name / "report"


#: every file :func:`build_report` may write (checked for symlinks before any work)
_REPORT_FILES = (
    "report.html",
    "report.md",
    "fig_eps_delta.png",
    "fig_tradeoff.png",
    "fig_geolevel_drop.png",
    "fig_query_drop.png",
    "fig_pairs_heatmap.png",
    "summary.csv",
    "per_query.csv",
    "per_geolevel.csv",
    "curves.csv",
    "tradeoff.csv",
)


def check_report_outputs(out_dir: str | Path) -> None:
    """Refuse (one line naming the path) a report folder where an output file is a symlink."""
    for name in _REPORT_FILES:
        check_writable(Path(out_dir) / name)


def default_comparison_dir(publish: bool = False) -> Path:
    """Folder of ``scenario_comparison.{csv,md}``: ``runs/`` unless ``publish`` (then ``reports/``)."""
    return PUBLISHED_ROOT if publish else RUNS_ROOT


def _quiet(_msg: str) -> None:
    pass


# ====================================================================== number formatting
def _mpf(x) -> mpmath.mpf:
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    if isinstance(x, str):
        try:
            return _mpf(Fraction(x))
        except (ValueError, ZeroDivisionError):
            return mpmath.mpf(x)
    return mpmath.mpf(x)


def fmt(x, n: int = 6) -> str:
    """``x`` with ``n`` significant digits (deterministic); ``—`` for missing values."""
    if x is None or x == "":
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    try:
        v = _mpf(x)
    except (ValueError, TypeError):
        return str(x)
    if not mpmath.isfinite(v):
        return str(x)
    s = mpmath.nstr(v, n, min_fixed=-4, max_fixed=7, strip_zeros=True)
    return s.replace("e-0", "e-").replace("e+0", "e+").replace("e+", "e")


def fmt_bound(x, n: int = 6, mode: str = "up") -> str:
    """A bound rounded exactly ``"up"`` (upper bounds, errors, the safe ε) or ``"down"`` (lower
    bounds) to ``n`` significant digits (:mod:`accountant.decimals`), in :func:`fmt`'s style;
    ``—`` for missing values.  Decimal strings are read exactly."""
    from accountant.decimals import decimal_string

    if x is None or x == "":
        return "—"
    try:
        sci = decimal_string(x, n, mode)
    except ValueError:
        return str(x)
    if "e" not in sci:
        return sci  # "0.0"
    mant, e = sci.split("e")
    e10 = int(e)
    sign = "-" if mant.startswith("-") else ""
    digits = mant.lstrip("-").replace(".", "").rstrip("0") or "0"
    if -4 <= e10 < 7:  # positional, like fmt (min_fixed=-4, max_fixed=7)
        if e10 < 0:
            return f"{sign}0.{'0' * (-e10 - 1)}{digits}"
        digits = digits.ljust(e10 + 1, "0")
        return f"{sign}{digits[: e10 + 1]}.{digits[e10 + 1 :] or '0'}"
    return f"{sign}{digits[0]}.{digits[1:] or '0'}e{e10}"


#: marker shown beside a result whose certified interval is wider than requested
TOLERANCE_MARK = "⚠ tolerance not met"


def _pct(x, n: int = 4) -> str:
    if x is None or x == "":
        return "—"
    return f"{float(x):.{n}f} %" if n else f"{float(x):.0f} %"


def _float(x) -> float | None:
    if x is None or x == "":
        return None
    try:
        return float(_mpf(x))
    except (ValueError, TypeError):
        return None


# ====================================================================== accounting (direct)
@dataclass
class Accounting:
    """Accounting-only results for a scenario (proxy pair, uniform rescale)."""

    scenario: Any
    allocation: Any
    total_rho: Fraction
    eps_claim: mpmath.mpf
    delta_target: Fraction
    delta_exact: Any  # Certified: exact δ of the proxy pair at eps_claim
    eps_exact: Any  # EpsilonResult: exact ε of the proxy pair at delta_target
    uniform_multiplier: Fraction  # σ² ← σ² × multiplier
    uniform_delta: Any  # Certified δ at eps_claim after the rescale
    curves: list[dict] = field(default_factory=list)
    tradeoff: list[dict] = field(default_factory=list)
    #: tolerance flags of the curves computed here ({label: met}); see :func:`tolerance_flags`
    tolerance: dict[str, bool] = field(default_factory=dict)

    @property
    def uniform_drop_percent(self) -> float:
        return float((1 - self.uniform_multiplier) * 100)


def _claim_eps(rho: Fraction, delta, conversion: str) -> mpmath.mpf:
    from accountant import zcdp

    f = zcdp.epsilon_cks if conversion == "cks" else zcdp.epsilon_bun_steinke
    return f(rho, delta)


def _claim_delta(rho: Fraction, eps, conversion: str) -> mpmath.mpf:
    from accountant import zcdp

    f = zcdp.delta_cks if conversion == "cks" else zcdp.delta_bun_steinke
    return f(rho, eps)


def proxy_pair(allocation, multiplier: Fraction = Fraction(1)):
    """The full spine with itself: every measurement twice, σ² = multiplier/ρ."""
    from accountant import Composition, DiscreteGaussian

    mechs = [DiscreteGaussian(multiplier / r) for _, _, r in allocation.items()]
    return Composition(mechs * 2)


def _uniform_multiplier(allocation, scenario, progress: Progress) -> tuple[Fraction, Any]:
    """The uniform rescale of the proxy pair, from the optimizer's own stage 1
    (:func:`optimizer.search.uniform_rescale`: the largest exact c with certified δ(ε) ≤ δ at
    the promise): returns (σ² multiplier 1/c, certified δ at the promised ε after the rescale)."""
    from optimizer.search import target_from_allocation, uniform_rescale

    target = target_from_allocation(allocation, delta=scenario.target_delta_text, conversion=scenario.conversion)
    c, _, d = uniform_rescale(allocation, target)
    progress(f"  uniform rescale: sigma^2 x {fmt(1 / c, 10)} (c = {fmt(c, 12)})")
    return 1 / c, d


def eps_grid(eps_claim) -> list[str]:
    """ε values of the curves: N_CURVE points over [0.5, 1.25] × the claimed ε (12 digits)."""
    return [
        mpmath.nstr(_mpf(eps_claim) * (mpmath.mpf(1) / 2 + mpmath.mpf(3) * k / (4 * (N_CURVE - 1))), 12)
        for k in range(N_CURVE)
    ]


#: above this lattice scale the accountant uses its coarsened-lattice sandwich
#: (accountant.coarse: certified, but wider than the exact engines); the report says so
MAX_LATTICE_SCALE = 10**9


def compute_accounting(scenario, *, curves: bool = True, progress: Progress = _quiet) -> Accounting:
    """zCDP claim vs exact accounting of the proxy pair, and the uniform rescale, for a scenario."""
    alloc = scenario.load_allocation()
    rho = alloc.total_rho
    delta = scenario.target_delta
    progress(
        f"[{scenario.name}] accounting: total rho = {rho}, conversion {scenario.conversion}, "
        f"delta {scenario.target_delta_text}"
    )
    eps_claim = _claim_eps(rho, delta, scenario.conversion)
    base = proxy_pair(alloc)
    if Fraction(base.lattice.scale) > MAX_LATTICE_SCALE:
        progress(
            f"  lattice scale {float(base.lattice.scale):.3g}: certified enclosures come from the "
            "coarsened-lattice sandwich (wider than 1e-35; shown with their certified error)"
        )
    d_exact = base.delta(eps_claim, tol=DELTA_TOL, rtol=DELTA_RTOL)
    e_exact = base.epsilon(delta, tol=EPS_TOL)
    progress(
        f"  claimed eps = {fmt(eps_claim, 10)}; exact delta there = {fmt(d_exact.value, 6)}; "
        f"exact eps at delta = {fmt(e_exact.value, 10)}"
    )
    mult, d_uni = _uniform_multiplier(alloc, scenario, progress)
    acc = Accounting(scenario, alloc, rho, eps_claim, delta, d_exact, e_exact, mult, d_uni)
    if curves:
        progress("  exact (eps, delta) curves and trade-off curves")
        grid = eps_grid(eps_claim)
        uni = proxy_pair(alloc, mult)
        db = base.delta_curve(grid, tol=DELTA_TOL, rtol=DELTA_RTOL)
        du = uni.delta_curve(grid, tol=DELTA_TOL, rtol=DELTA_RTOL)
        from accountant.decimals import half_width
        from optimizer.profile import certified_tolerance_met

        for e, b, u in zip(grid, db, du):
            acc.curves.append(
                {
                    "eps": e,
                    "zcdp_claim_delta": _claim_delta(rho, e, scenario.conversion),
                    "baseline_exact_delta": b.value,
                    "baseline_exact_delta_error": half_width(b),  # exact Fraction
                    "uniform_exact_delta": u.value,
                    "uniform_exact_delta_error": half_width(u),
                    "baseline_tolerance_met": certified_tolerance_met(b, DELTA_TOL, DELTA_RTOL),
                    "uniform_tolerance_met": certified_tolerance_met(u, DELTA_TOL, DELTA_RTOL),
                }
            )
        acc.tolerance["δ curve, published noise"] = all(c["baseline_tolerance_met"] for c in acc.curves)
        acc.tolerance["δ curve, uniformly reduced noise"] = all(c["uniform_tolerance_met"] for c in acc.curves)
        tb = base.tradeoff_curve(n=N_TRADEOFF)
        tu = uni.tradeoff_curve(n=N_TRADEOFF)
        acc.tolerance["trade-off curve, published noise"] = _tradeoff_met(tb)
        acc.tolerance["trade-off curve, uniformly reduced noise"] = _tradeoff_met(tu)
        for ab, bb, au, bu in zip(tb.alpha, tb.beta, tu.alpha, tu.beta):
            acc.tradeoff.append(
                {
                    "baseline_alpha": ab.value,
                    "baseline_beta": bb.value,
                    "uniform_alpha": au.value,
                    "uniform_beta": bu.value,
                }
            )
    return acc


def _tradeoff_met(tc) -> bool:
    from accountant.composition import DEFAULT_TRADEOFF_TOL
    from optimizer.profile import tradeoff_tolerance_met

    flag = getattr(tc, "tolerance_met", None)
    return bool(flag) if flag is not None else all(tradeoff_tolerance_met(tc, DEFAULT_TRADEOFF_TOL))


def tolerance_flags(acc: Accounting, run: RunInputs | None = None) -> dict[str, bool]:
    """{result: tolerance met} of everything the report shows as certified: the proxy pair's δ at
    the promised ε and ε at the promised δ, the uniform rescale's δ, the curves computed here and
    (when a run directory gives per-pair results with a ``tolerance_met`` column) the pairs."""
    from optimizer.profile import certified_tolerance_met, epsilon_tolerance_met

    flags = {
        "exact δ at the promised ε": certified_tolerance_met(acc.delta_exact, DELTA_TOL, DELTA_RTOL),
        "exact ε at the promised δ": epsilon_tolerance_met(acc.eps_exact, EPS_TOL),
        "uniform-rescale δ at the promised ε": certified_tolerance_met(acc.uniform_delta, DELTA_TOL, DELTA_RTOL),
    }
    flags.update(acc.tolerance)
    if run is not None and run.pairs and "tolerance_met" in run.pairs[0]:
        bad = sum(1 for r in run.pairs if str(r.get("tolerance_met", "")).strip().lower() in ("false", "no", "0"))
        flags[
            f"per-pair δ ({run.pairs_file}; {bad} of {len(run.pairs)} rows missed)"
            if bad
            else f"per-pair δ ({run.pairs_file})"
        ] = not bad
    return flags


# ====================================================================== run-directory inputs
@dataclass
class RunInputs:
    """What an optimizer / pairs run directory provides (all optional)."""

    directory: Path | None
    optimize: dict | None = None
    per_query: list[dict] | None = None
    curves: list[dict] | None = None
    tradeoff: list[dict] | None = None
    pairs: list[dict] | None = None
    pairs_file: str | None = None
    #: the sealed inputs of the pairs file (allocation hash, code version), when it checked out
    pairs_inputs: dict | None = None
    #: why a per-pair file found in the directory was not used (shown in the report)
    pairs_ignored: list[str] = field(default_factory=list)
    #: which allocation the per-pair results are of ("the optimized allocation", …)
    pairs_of: str | None = None
    #: the run's side-effects table (optimizer.side_effects) and final confirmation, one row per pair
    delta_grid: list[dict] | None = None
    confirm_pairs: list[dict] | None = None
    hashes: dict[str, str] = field(default_factory=dict)


def _read_csv(path: Path) -> list[dict]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


#: keys of optimize.json that measure the machine, not the result (and the file checksum, which
#: covers them): left out of the report, so a deliberate regeneration of the same inputs by the
#: same code gives byte-identical files
TIMING_KEYS = frozenset({"seconds", "confirm_seconds", "trials_per_minute", "checksum"})


def _result_hash(doc: dict) -> str:
    """sha256 of an optimize.json document without its :data:`TIMING_KEYS` (canonical JSON)."""
    body = {k: v for k, v in doc.items() if k not in TIMING_KEYS}
    return hashlib.sha256(json.dumps(body, sort_keys=True, default=str).encode()).hexdigest()


def read_run(run_dir: str | Path | None) -> RunInputs:
    """Read the optimizer's output files (contract: optimize.json, per_query.csv, curves.csv,
    tradeoff.csv) and per-pair δ results (``*_pairs.csv``: pair_i, pair_j, eps, delta…)."""
    if run_dir is None or not Path(run_dir).is_dir():
        return RunInputs(None)
    from optimizer.run_result import RunResult

    d = Path(run_dir)
    run = RunInputs(d)
    stored = RunResult.read(d)  # the one schema of a run directory (optimizer/run_result.py)
    if stored is not None:
        run.optimize = stored.summary
        run.hashes["optimize.json (timings excluded)"] = _result_hash(stored.summary)
        run.delta_grid = stored.delta_grid or None
        run.confirm_pairs = stored.confirm_pairs or None
    for name, attr in (("per_query.csv", "per_query"), ("curves.csv", "curves"), ("tradeoff.csv", "tradeoff")):
        p = d / name
        if p.is_file():
            setattr(run, attr, getattr(stored, attr) if stored is not None else _read_csv(p))
            run.hashes[name] = _sha256(p)
    from optimizer.profile import check_profile_files

    for p in sorted(d.glob("*_pairs.csv")) + sorted(d.glob("*/*_pairs.csv")):
        rel = str(p.relative_to(d))
        inputs, problems = check_profile_files(p)
        if problems:  # never show per-pair numbers that are edited, orphaned or from other code
            run.pairs_ignored.append(f"{rel}: {'; '.join(problems)}")
            continue
        rows = _read_csv(p)
        if rows and {"pair_i", "pair_j", "delta"} <= set(rows[0]):
            run.pairs, run.pairs_file, run.pairs_inputs = rows, rel, inputs
            run.hashes[rel] = _sha256(p)
            break
        run.pairs_ignored.append(f"{rel}: no pair_i, pair_j, delta columns")
    return run


def _optimized_allocation(run: RunInputs):
    """The run's ``allocation_optimized.toml`` as an Allocation (``None`` when absent)."""
    if run.directory is None or not (run.directory / "allocation_optimized.toml").is_file():
        return None
    from optimizer.allocation import Allocation

    return Allocation.from_toml(run.directory / "allocation_optimized.toml")


def vet_pairs(run: RunInputs, allocations: dict[str, Any]) -> None:
    """Keep ``run``'s per-pair results only if they were computed for one of ``allocations``
    (``{label: Allocation}``, e.g. the baseline and the optimized allocation); else move them to
    ``run.pairs_ignored`` with the reason. Sets ``run.pairs_of`` to the matching label."""
    from optimizer.provenance import allocation_digest

    if not run.pairs:
        return
    have = ((run.pairs_inputs or {}).get("allocation") or {}).get("sha256")
    for label, alloc in allocations.items():
        if alloc is not None and allocation_digest(alloc) == have:
            run.pairs_of = label
            return
    name = ((run.pairs_inputs or {}).get("allocation") or {}).get("name", "?")
    run.pairs_ignored.append(
        f"{run.pairs_file}: computed for allocation {name!r}, which is none of "
        + ", ".join(label for label, a in allocations.items() if a is not None)
        + " (its content hash differs)"
    )
    run.pairs = run.pairs_file = run.pairs_inputs = None


def _cell(row: dict, name: str, where: str):
    """Column ``name`` of a row of a run's table (``None`` when empty); a row without that
    column is not of this schema (optimizer.run_result) and is refused, naming the table."""
    if name not in row:
        raise ValueError(f"{where}: no column {name!r} (columns: {', '.join(row)}); not a run of this version")
    v = row[name]
    return None if v in (None, "") else v


# ====================================================================== tables
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
        uni_s2 = _mpf(uni) if uni is not None else _mpf(s2 * acc.uniform_multiplier)
        zo = _cell(r, "zcdp_optimum_sigma2", "per_query.csv") if r else None
        op = _cell(r, "optimized_sigma2", "per_query.csv") if r else None
        base = _mpf(s2)

        def drop(x, base=base):
            return None if x is None else float((1 - _mpf(x) / base) * 100)

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
        base = sum(_mpf(r["baseline_sigma2"]) for r in rows)

        def drop(col, rows=rows, base=base):
            if any(r[col] == "" for r in rows):
                return ""
            return f"{float((1 - sum(_mpf(r[col]) for r in rows) / base) * 100):.4f}"

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
        e = _float(_cell(r, "epsilon", "curves.csv"))
        d = _float(_cell(r, "delta_optimized_exact", "curves.csv"))
        if e is not None and d is not None and d > 0:
            pts.append((e, d))
    return pts


def _optimized_tradeoff(run: RunInputs) -> list[tuple[float, float]]:
    pts = []
    for r in run.tradeoff or []:  # long format: curve, zeta, alpha, beta, …
        if _cell(r, "curve", "tradeoff.csv") != "optimized":
            continue
        a, b = _float(_cell(r, "alpha", "tradeoff.csv")), _float(_cell(r, "beta", "tradeoff.csv"))
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


def _pair_matrix(run: RunInputs, eps_claim) -> tuple[list[list[float]], str, int] | None:
    """43×43 (or n×n) matrix of log10 δ (certified upper bounds) at the ε closest to the claimed ε."""
    src = _heatmap_rows(run)
    if src is None:
        return None
    by_eps: dict[str, list[dict]] = {}
    for r in src[0]:
        by_eps.setdefault(r.get("eps", ""), []).append(r)
    target = float(eps_claim)
    key = min(by_eps, key=lambda e: (abs((_float(e) or 0.0) - target), e))
    rows = by_eps[key]
    n = max(max(int(r["pair_i"]), int(r["pair_j"])) for r in rows)
    m = [[math.nan] * n for _ in range(n)]
    for r in rows:
        v = _float(_cell(r, "delta_upper", src[1]))
        if v is None or v <= 0:
            continue
        i, j = int(r["pair_i"]) - 1, int(r["pair_j"]) - 1
        m[i][j] = m[j][i] = math.log10(v)
    return m, key, len(rows)


# ====================================================================== figures
def _png(fig) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=100, metadata={"Software": None})
    return buf.getvalue()


def _figure(w: float, h: float):
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(w, h), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def make_figures(acc: Accounting, run: RunInputs, pq: list[dict], pg: list[dict]) -> dict[str, bytes]:
    figs: dict[str, bytes] = {}
    sc = acc.scenario
    conv = "Bun–Steinke" if sc.conversion == "bun-steinke" else "Canonne–Kamath–Steinke"
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
            label="exact, uniformly reduced noise (proxy pair)",
        )
        opt = _optimized_curve(run)
        if opt:
            ax.semilogy(
                [p[0] for p in opt], [p[1] for p in opt], color="tab:green", label="exact, optimized noise (optimizer)"
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
    # per-geolevel bars
    series = [
        ("drop_percent_uniform", "uniform", "tab:orange"),
        ("drop_percent_zcdp_optimum", "zCDP-optimum shape", "tab:purple"),
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
    # worst-pair heat map
    pm = _pair_matrix(run, acc.eps_claim)
    if pm is not None:
        m, key, npairs = pm
        import numpy as np

        fig = _figure(7, 6)
        ax = fig.add_subplot()
        arr = np.ma.masked_invalid(np.array(m, dtype=float))
        im = ax.imshow(
            arr, cmap="viridis", origin="upper", interpolation="nearest", extent=(0.5, len(m) + 0.5, len(m) + 0.5, 0.5)
        )
        fig.colorbar(im, ax=ax, label="log10 δ (certified upper bound)")
        ax.set_xlabel("path j")
        ax.set_ylabel("path i")
        ax.set_title(f"{sc.name}: worst-case δ of each pair [M_i, M_j]\nat ε = {fmt(key, 8)} ({npairs} pairs)")
        figs["fig_pairs_heatmap.png"] = _png(fig)
    return figs


# ====================================================================== provenance
def _versions() -> dict[str, str]:
    from importlib import metadata

    out = {"python": platform.python_version()}
    for pkg in ("census-plb", "numpy", "mpmath", "python-flint", "matplotlib"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def _code_hash() -> str:
    """sha256 over the accountant sources and this module (what computed the numbers)."""
    h = hashlib.sha256()
    files = [*sorted((_ROOT / "accountant").glob("*.py")), Path(__file__).resolve()]
    for p in files:
        h.update(p.name.encode() + b"\0" + p.read_bytes())
    return h.hexdigest()


def _allocation_file(name: str) -> Path | None:
    from optimizer import allocation as am

    entry = getattr(am, "_BUILTINS", {}).get(name)
    if entry:
        return Path(am.__file__).resolve().parent / "data" / "census2020" / entry[0]
    p = Path(name)
    return p if p.is_file() else None


def provenance(acc: Accounting, run: RunInputs) -> list[tuple[str, str]]:
    sc = acc.scenario
    rows: list[tuple[str, str]] = []
    src = Path(sc.source)
    rows.append(("scenario file", f"scenarios/{src.name} (sha256 {sc.sha256})"))
    af = _allocation_file(sc.allocation)
    if af is not None:
        rows.append(("allocation", f"{sc.allocation}: {af.name} (sha256 {_sha256(af)})"))
    for name, h in sorted(run.hashes.items()):
        rows.append((f"run input {name}", f"sha256 {h}"))
    if run.directory is None or run.optimize is None:
        rows.append(("mode", "accounting-only (no optimizer output): proxy pair and uniform rescale computed here"))
    o = run.optimize or {}
    for key in (
        "seed",
        "commit",
        "git_commit",
        "config hash",
        "config_hash",
        "run_hash",
        "tolerances",
        "versions",
        "study_name",
        "trials_run",
        "best_trial",
        "n_pairs_confirmed",
        "worst_pair",
        "worst_pair_delta",
        "target_epsilon",
        "target_delta",
        "objective",
    ):
        if key in o:
            v = o[key]
            rows.append((f"optimizer {key}", v if isinstance(v, str) else json.dumps(v, sort_keys=True)))
    if "seed" not in o:
        rows.append(("scenario seed / trials", f"{sc.seed} / {sc.trials}"))
    rows.append(
        (
            "accountant tolerances (this report)",
            f"delta: abs {DELTA_TOL:g}, rel {DELTA_RTOL:g}; epsilon bisection {EPS_TOL:g}; "
            "uniform rescale: optimizer.search.uniform_rescale (exact c, the optimizer's stage 1)",
        )
    )
    rows.append(("code hash (accountant + report)", _code_hash()))
    rows.append(("versions (this report)", ", ".join(f"{k} {v}" for k, v in _versions().items())))
    return rows


# ====================================================================== the document
def _summary(acc: Accounting, run: RunInputs) -> dict[str, Any]:
    o = run.optimize or {}
    conv = "Bun–Steinke" if acc.scenario.conversion == "bun-steinke" else "Canonne–Kamath–Steinke"
    from accountant.decimals import exact_fraction, half_width

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
        "exact_delta_over_target": fmt(acc.delta_exact.value / _mpf(acc.delta_target), 6),
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
        "mode": "optimized" if run.optimize is not None else "accounting-only",
        "tolerance_met": "no" if missed else "yes",
        "tolerance_not_met": "; ".join(missed),
        **_target_fields(o),
        # a built-in allocation is the Bureau's production one; anything else is the user's what-if
        "production": acc.scenario.allocation in BUILTIN_NAMES,
    }


def _target_fields(o: dict) -> dict[str, Any]:
    """What the run's promise was (``target`` of the run summary): one point, or a curve's δ grid
    with the point that binds each allocation (:func:`optimizer.pipeline._target_summary`)."""
    t = o.get("target") or {}
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
    return fmt(_mpf(text), digits) if text else "—"


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
        f"new total ρ = {fmt(_mpf(Fraction(s['new_total_rho'])), 10)}."
    )
    if s["objective"] == "sum-variance":
        text += (
            " This objective sums absolute variances, so the smallest budgets (e.g. Block) dominate it and its "
            "optimum flattens the allocation; it is a policy choice, not an accounting gain."
        )
    return [text]


def _confirmed(o: dict, key: str) -> str:
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
    f = _float(v)
    return "" if f is None else f"{f:.4f}"


def _pair_str(p) -> str:
    if isinstance(p, (list, tuple)):
        return "[" + ", ".join(str(x) for x in p) + "]"
    return str(p)


def release_pair_count(allocation) -> int:
    """Number of neighbouring pairs [M_i, M_j], i ≤ j, of the release's spine paths (the ones the
    all-pairs confirmation checks): 946 for the 43 DHC paths, 528 for PL94's 32 patterns."""
    from optimizer.confirm import paths_of

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
            _pct(r["uniform_change_percent"], 2),
            fmt(r["optimized"], 6),
            _pct(r["optimized_change_percent"], 2),
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
    conv = "Bun–Steinke" if gl.get("conversion") == "bun-steinke" else "Canonne–Kamath–Steinke"

    def kept(r) -> str:
        return "—" if r is None else fmt(r["epsilon_exact_new"], 8) + (" (kept)" if r["kept"] else " ⚠ broken")

    body = [
        [
            r["geolevel"],
            fmt(r["rho"], 6),
            fmt(r["epsilon_promised"], 8),
            fmt(r["epsilon_exact"], 8),
            _pct(r["unused_budget_percent"], 2),
            _pct(r["variance_drop_percent"], 2),
            kept(uni.get(r["geolevel"])),
            kept(opt.get(r["geolevel"])),
        ]
        for r in gl["baseline"]
    ]
    paras = [
        "Each geolevel taken as its own mechanism (its queries, each changed twice by a replaced record, the "
        f"Census neighbour model), with its own promise: the {conv} conversion of that geolevel's ρ at "
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
    (:mod:`optimizer.side_effects`), stating plainly where the new noise is weaker than it."""
    from optimizer.side_effects import weaker_points

    rows = run.delta_grid
    if not rows:
        return None
    labels = [
        (k, name)
        for k, name in (("uniform", "uniform rescale"), ("optimized", "optimized allocation"))
        if f"{k}_delta_upper" in rows[0]
    ]
    conv = s["conversion_label"]
    covered = "the target curve" if s["target_kind"] == "curve" else "the promised point"
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
                f"statement at those points ({covered} itself is kept: the allocation was calibrated and "
                "confirmed there)."
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
        "conversion of the baseline ρ), each checked on every pair of records. A uniform cut or a reallocation is "
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
    """The report's sections as neutral blocks (rendered to HTML and Markdown)."""
    sc = acc.scenario
    secs: list[dict[str, Any]] = []
    overshoot = float(acc.delta_exact.value / _mpf(acc.delta_target))
    flags = tolerance_flags(acc, run)
    eps_safe = fmt_bound(acc.eps_exact.value, 15, "up")
    secs.append(
        {
            "id": "summary",
            "title": "In short",
            "paras": [
                (
                    f"The Census Bureau describes the privacy of its 2020 production allocation {sc.allocation} "
                    f"with a single number ρ = {s['total_rho']} "
                    if s["production"]
                    else f"The what-if allocation {sc.allocation} (written for this scenario; not a Census Bureau "
                    f"production allocation) has a single zCDP budget ρ = {s['total_rho']} "
                )
                + "(zero-concentrated differential privacy). Turned into the usual (ε, δ) language with the "
                f"{s['conversion_label']} formula, this promises "
                f"ε = {s['claimed_epsilon']} at δ = {s['target_delta']}.",
                "The exact calculation shows the promise is kept with room to spare: at that ε the real δ is at most "
                f"{s['exact_delta_upper_at_claimed_epsilon']} (certified), "
                f"about {fmt(overshoot, 3)} times the promised δ. "
                + (
                    ("Keeping the Bureau's own balance" if s["production"] else "Keeping this allocation's balance")
                    + " between queries and geolevels and scaling every noise variance down by the same factor, "
                    + (
                        f"{s['uniform_variance_drop_percent']} % of the noise variance can go while every one of "
                        f"{s['curve_text']} still holds (confirmed on every pair of records; the binding point is "
                        f"δ = {s['binding_delta_uniform'] or '—'})."
                        if s["target_kind"] == "curve"
                        and s.get("uniform_confirmed") == "yes"
                        and s.get("uniform_variance_drop_percent")
                        else f"{s['uniform_variance_drop_percent']} % of the noise variance can go while the same "
                        f"promise still holds (confirmed on every pair of records)."
                        if s.get("uniform_confirmed") == "yes" and s.get("uniform_variance_drop_percent")
                        else f"{s['uniform_variance_drop_percent_proxy']} % of the noise variance can go "
                        "while the same promise still holds (for the representative pair of records)."
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
    )
    secs.append(
        {
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
                        else "the one point (promised ε, promised δ)",
                    ],
                ],
            ),
        }
    )
    secs.append(
        {
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
            "figures": [
                (
                    "fig_eps_delta.png",
                    "Privacy curves: the zCDP claim (dashed) lies far above the exact curve; "
                    "the dotted lines mark the promise.",
                )
            ],
        }
    )
    noise_rows = [
        [
            f"uniform rescale keeping only the point δ = {s['target_delta']}, proxy pair (this report)"
            if s["target_kind"] == "curve"
            else "uniform rescale, proxy pair (this report)",
            _pct(s["uniform_variance_drop_percent_proxy"]),
            _marked(
                f"σ² × {fmt(acc.uniform_multiplier, 10)}; exact δ at promised ε then "
                f"≤ {s['uniform_exact_delta_upper_at_claimed_epsilon']}",
                flags,
                "uniform-rescale δ at the promised ε",
            ),
        ],
        [
            "uniform rescale (optimizer, all pairs)",
            _pct(s["uniform_variance_drop_percent"] or None),
            "not checked over all pairs (--no-confirm)" if s.get("uniform_confirmed") == "not checked" else "",
        ],
        [
            "zCDP-optimum shape (optimizer)",
            _pct(s["zcdp_optimum_variance_drop_percent"] or None),
            "minimises the weighted sum of variances at the zCDP total, no guard: some queries get more noise",
        ],
        [
            f"optimized for {s['objective']} (optimizer)" if s.get("objective") else "optimized (optimizer)",
            _pct(s["optimized_variance_drop_percent"] or None),
            (
                f"objective −{s['objective_drop_percent']} %; largest σ'²/σ² {_ratio(s['max_variance_ratio'])}; "
                f"{s['n_queries_noisier']} queries noisier than today"
            )
            if s.get("objective")
            else "",
        ],
    ]
    if s["confirmed"]:
        conf = (
            (
                "Confirmed: the optimized noise keeps every point of the target curve for every one of the "
                f"neighbouring pairs ({_pairs_text(acc, run)}); at the binding point δ = "
                f"{s['binding_delta_optimized'] or '—'} the worst pair is {s['worst_pair'] or '—'} with "
                f"δ = {s['worst_pair_delta'] or '—'}."
                if s["target_kind"] == "curve"
                else "Confirmed: the optimized noise keeps the promise for every one of the neighbouring pairs "
                f"({_pairs_text(acc, run)}); worst pair {s['worst_pair'] or '—'} with "
                f"δ = {s['worst_pair_delta'] or '—'}."
            )
            if s["confirmed"] == "yes"
            else "Not checked: the optimizer ran without the all-pairs confirmation (--no-confirm), so the optimized "
            "and uniform drops shown hold for the representative pair only; do not use the optimized allocation "
            "before `census-plb optimize` confirms it on every pair."
            if s["confirmed"] == "not checked"
            else "NOT confirmed: the certified check over all neighbouring pairs failed; do not use the optimized "
            f"allocation (worst pair {s['worst_pair'] or '—'}, δ = {s['worst_pair_delta'] or '—'})."
        )
    else:
        conf = (
            "No optimizer output was available, so this report is accounting-only: the variance drop shown is "
            f"the uniform rescale for the proxy pair, not confirmed over all {_pairs_text(acc, run)}."
        )
    secs.append(
        {
            "id": "noise",
            "title": "3. How much noise can go",
            "paras": [
                "If the exact guarantee is better than promised, less noise suffices for the same promise. "
                "The variance drop is the share of the noise variance that can be removed while the exact δ at the "
                "promised ε stays within the promised δ.",
                conf,
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
    )
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
            (
                "Both keep every point of the target curve"
                if s["target_kind"] == "curve"
                else "Both keep the promised point"
            )
            + ", but not every point of the baseline ρ's zCDP curve: on the proxy pair "
            f"the exact δ exceeds that curve for {' and '.join(said)} (section Side effects at other δ)."
        )
    curve = _curve_target_section(s)
    if curve is not None:
        secs.append(curve)
    side = _side_effects_section(run, s)
    if side is not None:
        secs.append(side)
    pg_rows = [
        [
            r["geolevel"],
            str(r["n_queries"]),
            fmt(r["rho"], 6),
            _pct(r["rho_share_percent"], 2),
            r["weight"],
            _pct(r["drop_percent_uniform"] or None, 2),
            _pct(r["drop_percent_zcdp_optimum"] or None, 2),
            _pct(r["drop_percent_optimized"] or None, 2),
        ]
        for r in pg
    ]
    pq_rows = [
        [
            r["geolevel"],
            r["query"],
            fmt(r["baseline_rho"], 6),
            fmt(r["baseline_sigma2"], 6),
            _pct(r["drop_percent_uniform"] or None, 2),
            _pct(r["drop_percent_zcdp_optimum"] or None, 2),
            _pct(r["drop_percent_optimized"] or None, 2),
        ]
        for r in pq
    ]
    where_figs = [
        ("fig_geolevel_drop.png", "Variance removed per geolevel (summed over its queries)."),
        ("fig_query_drop.png", "Variance removed per query."),
    ]
    paras = ["Where the noise reduction lands: per geolevel (the summed noise variance of its queries) and per query."]
    heat = _heatmap_rows(run)
    if heat is not None:
        where_figs.append(
            (
                "fig_pairs_heatmap.png",
                f"Certified upper bound of δ for every pair of spine paths [M_i, M_j] for {heat[1]}, at the ε "
                "closest to the promise; the brightest cell is the worst pair, which decides the guarantee.",
            )
        )
    else:
        paras.append("No per-pair results were available, so no worst-pair heat map is shown.")
    for why in run.pairs_ignored:
        paras.append(f"A per-pair results file was found but not used: {why}.")
    published = _published_section(run)
    if published is not None:
        secs.append(published)
    per_level = _geolevel_section(run)
    if per_level is not None:
        secs.append(per_level)
    secs.append(
        {
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
                    "drop (zCDP-opt.)",
                    "drop (optimized)",
                ],
                pg_rows,
            ),
            "table2": (
                ["geolevel", "query", "ρ", "σ² (published)", "drop (uniform)", "drop (zCDP-opt.)", "drop (optimized)"],
                pq_rows,
            ),
            "figures": where_figs,
        }
    )
    secs.append(
        {
            "id": "provenance",
            "title": "6. Method & provenance",
            "paras": [
                "Exact accounting: certified lattice quadrature of the privacy-loss distribution of the composed "
                "discrete Gaussians (Su, Su & Wang, arXiv 2606.29835), implemented in the census-plb accountant with "
                "outward-rounded interval arithmetic. Per-query noise σ² = 1/ρ (Census convention).",
            ],
            "table": (["item", "value"], [[k, v] for k, v in provenance(acc, run)]),
        }
    )
    n = 0
    for sec in secs:  # number the sections in order (some appear only with an optimizer run)
        head, sep, rest = sec["title"].partition(". ")
        if sep and head.isdigit():
            n += 1
            sec["title"] = f"{n}. {rest}"
    return secs


_CSS = """
body{font-family:-apple-system,Segoe UI,Helvetica,Arial,sans-serif;max-width:980px;margin:2em auto;padding:0 1em;
color:#222;line-height:1.5}
h1{font-size:1.7em;border-bottom:2px solid #333}h2{margin-top:2em;border-bottom:1px solid #bbb}
table{border-collapse:collapse;margin:1em 0;font-size:.92em}th,td{border:1px solid #ccc;padding:.3em .6em;
text-align:left;vertical-align:top}th{background:#f0f0f0}td{word-break:break-word}
figure{margin:1.2em 0}figure img{max-width:100%;border:1px solid #ddd}figcaption{font-size:.9em;color:#555}
.lead{font-size:1.05em;background:#f6f8fa;padding:.8em 1em;border-left:4px solid #2a7ae2}
details{margin:1em 0}
""".strip()


def render_html(title: str, secs: list[dict], figs: dict[str, bytes]) -> str:
    e = html.escape
    out = [
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{e(title)}</title>",
        f"<style>{_CSS}</style>",
        "</head>",
        "<body>",
        f"<h1>{e(title)}</h1>",
    ]

    def table(spec):
        head, rows = spec
        t = ["<table>", "<tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>"]
        t += ["<tr>" + "".join(f"<td>{e(str(c))}</td>" for c in r) + "</tr>" for r in rows]
        t.append("</table>")
        return "\n".join(t)

    for s in secs:
        out.append(f'<section id="{e(s["id"])}">')
        out.append(f"<h2>{e(s['title'])}</h2>")
        for _i, p in enumerate(s.get("paras", [])):
            cls = ' class="lead"' if s["id"] == "summary" else ""
            out.append(f"<p{cls}>{e(p)}</p>")
        if "table" in s:
            out.append(table(s["table"]))
        for name, cap in s.get("figures", []):
            if name in figs:
                b64 = base64.b64encode(figs[name]).decode("ascii")
                out.append(
                    f'<figure><img alt="{e(cap)}" src="data:image/png;base64,{b64}">'
                    f"<figcaption>{e(cap)}</figcaption></figure>"
                )
        if "table2" in s:
            out.append("<details open><summary>Per query</summary>")
            out.append(table(s["table2"]))
            out.append("</details>")
        out.append("</section>")
    out += ["</body>", "</html>", ""]
    return "\n".join(out)


#: Markdown/HTML metacharacters escaped in report.md (names and text come from input files: a query
#: named "<script>…" or "[x](javascript:…)" must read as text, as the HTML report shows it)
_MD_ESCAPES = {"\\": "\\\\", "<": "\\<", ">": "\\>", "[": "\\[", "]": "\\]", "&": "\\&", "|": "\\|"}


def _md(text) -> str:
    """``text`` as literal Markdown text: one line, HTML and link syntax backslash-escaped."""
    flat = str(text).replace("\r", " ").replace("\n", " ")
    return "".join(_MD_ESCAPES.get(ch, ch) for ch in flat)


def render_markdown(title: str, secs: list[dict], figs: dict[str, bytes]) -> str:
    def cell(c):
        return _md(c)

    def table(spec):
        head, rows = spec
        t = ["| " + " | ".join(cell(h) for h in head) + " |", "|" + "---|" * len(head)]
        t += ["| " + " | ".join(cell(c) for c in r) + " |" for r in rows]
        return "\n".join(t)

    out = [f"# {_md(title)}", ""]
    for s in secs:
        out += [f"## {_md(s['title'])}", ""]
        for p in s.get("paras", []):
            out += [_md(p), ""]
        if "table" in s:
            out += [table(s["table"]), ""]
        for name, cap in s.get("figures", []):
            if name in figs:
                out += [f"![{_md(cap)}]({name})", ""]
        if "table2" in s:
            out += ["Per query:", "", table(s["table2"]), ""]
    return "\n".join(out).rstrip("\n") + "\n"


def _write_csv(path: Path, rows: list[dict], columns: Sequence[str] | None = None) -> None:
    buf = io.StringIO()
    cols = list(columns or (rows[0].keys() if rows else []))
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n", extrasaction="ignore")
    w.writeheader()
    for r in rows:
        w.writerow({k: (v if isinstance(v, str) else fmt(v, 12)) for k, v in r.items()})
    atomic_write_text(path, buf.getvalue())


def build_report(
    scenario,
    run_dir: str | Path | None = None,
    out_dir: str | Path | None = None,
    *,
    accounting: Accounting | None = None,
    progress: Progress = _quiet,
) -> dict[str, Path]:
    """Write the report of ``scenario`` (a name, path or :class:`scenarios.loader.Scenario`).

    Args:
        scenario: the scenario.
        run_dir: optimizer output directory (default ``runs/<scenario>``); may be missing, then the
            report is accounting-only.
        out_dir: the folder to write (default :func:`default_report_dir`, ``runs/<scenario>/report``).
        accounting: precomputed :func:`compute_accounting` result (else computed).
        progress: callback for one-line progress messages.

    Returns:
        ``{file name: path}`` of everything written.
    """
    from scenarios.loader import Scenario, load_scenario

    sc = scenario if isinstance(scenario, Scenario) else load_scenario(scenario)
    run_dir = Path(run_dir) if run_dir is not None else Path("runs") / sc.name
    out = Path(out_dir) if out_dir is not None else default_report_dir(sc.name)
    check_report_outputs(out)  # a pre-placed symlink is refused before computing or writing anything
    run = read_run(run_dir)
    if run.optimize is not None:
        from optimizer.provenance import StaleRunError, check_run_dir, stale_message

        problems = check_run_dir(run_dir, run.optimize, sc)
        if problems:  # never show results made for other inputs, by other code, or edited
            raise StaleRunError(stale_message(run_dir, sc, problems))
    acc = accounting if accounting is not None else compute_accounting(sc, progress=progress)
    vet_pairs(run, {"the baseline allocation": acc.allocation, "the optimized allocation": _optimized_allocation(run)})
    progress(
        f"[{sc.name}] writing report to {out}/"
        + (" (with optimizer output)" if run.optimize is not None else " (accounting-only)")
    )
    pq = per_query_table(acc, run)
    pg = per_geolevel_table(acc, pq)
    figs = make_figures(acc, run, pq, pg)
    s = _summary(acc, run)
    secs = _sections(acc, run, s, pq, pg)
    title = f"Privacy-loss budget report: {sc.name}"
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, Path] = {}
    for name, data in sorted(figs.items()):
        atomic_write_bytes(out / name, data)
        written[name] = out / name
    stale = out / "fig_pairs_heatmap.png"
    if "fig_pairs_heatmap.png" not in figs and stale.exists():
        stale.unlink()
    atomic_write_text(out / "report.html", render_html(title, secs, figs))
    atomic_write_text(out / "report.md", render_markdown(title, secs, figs))
    written["report.html"], written["report.md"] = out / "report.html", out / "report.md"
    rows = [{"key": k, "value": str(v)} for k, v in s.items() if not isinstance(v, dict)]  # tables are sections
    _write_csv(out / "summary.csv", rows, ["key", "value"])
    _write_csv(out / "per_query.csv", pq)
    _write_csv(out / "per_geolevel.csv", pg)
    _write_csv(out / "curves.csv", curves_table(acc, run))
    _write_csv(out / "tradeoff.csv", [{k: fmt(v, 12) for k, v in t.items()} for t in acc.tradeoff])
    for name in ("summary.csv", "per_query.csv", "per_geolevel.csv", "curves.csv", "tradeoff.csv"):
        written[name] = out / name
    return written


# ====================================================================== scenario comparison
COMPARISON_COLUMNS = (
    "scenario",
    "allocation",
    "conversion",
    "total_rho",
    "total_rho_decimal",
    "target_delta",
    "claimed_epsilon",
    "exact_epsilon_at_target_delta",
    "exact_delta_at_claimed_epsilon",
    "exact_delta_error",
    "uniform_variance_drop_percent_proxy",
    "optimized_variance_drop_percent",
    "confirmed",
    "exact_delta_upper_at_claimed_epsilon",
    "tolerance_met",
    "objective",
    "mean_relative_variance",
    "uniform_mean_relative_variance",
    "n_queries_noisier",
    "optimized_source",
)
#: the optimizer's results a comparison row takes from a published report when no local run is
#: fresh (only when the report was made for the same inputs, :func:`_published_row`).
PUBLISHED_FIELDS = (
    "optimized_variance_drop_percent",
    "confirmed",
    "objective",
    "mean_relative_variance",
    "uniform_mean_relative_variance",
    "n_queries_noisier",
)


def compare_scenarios(
    names: Iterable[str] | None = None, runs_root: str | Path = "runs", *, progress: Progress = _quiet
) -> list[dict]:
    """One row per scenario: total ρ, claimed ε, δ target, exact ε at δ and δ at ε (proxy pair),
    uniform variance drop, optimized drop (when ``<runs_root>/<scenario>/optimize.json`` exists)."""
    from scenarios.loader import list_scenarios, load_scenario

    rows = []
    for name in list(names) if names is not None else list_scenarios():
        sc = load_scenario(name)
        acc = compute_accounting(sc, curves=False, progress=progress)
        run = read_run(Path(runs_root) / sc.name)
        if run.optimize is not None and run.directory is not None:  # (read_run always sets directory)
            from optimizer.provenance import check_run_dir, stale_message

            problems = check_run_dir(run.directory, run.optimize, sc)
            if problems:  # not for these inputs: left out, like a missing run
                progress(f"ignoring it: {stale_message(run.directory, sc, problems)}")
                run = RunInputs(run.directory)
        s = _summary(acc, run)
        row = {k: s.get(k, "") for k in COMPARISON_COLUMNS}
        if run.optimize is not None:
            row["optimized_source"] = "local run"
        else:
            published = _published_row(sc, s)
            if published:
                row.update(published)
                row["optimized_source"] = f"published report ({PUBLISHED_ROOT.as_posix()}/{sc.name}/)"
        rows.append(row)
    return rows


def _published_row(sc, s: dict) -> dict[str, str]:
    """The optimizer's results from the committed report ``reports/<scenario>/`` when that report
    was made for the same inputs — its provenance table records the sha256 of this scenario file
    and of this allocation file — and was confirmed; else {}.  Its numbers were computed by the
    code that published it (its code hash is in the same table)."""
    import csv as _csv
    import re

    folder = PUBLISHED_ROOT / sc.name
    summary, md = folder / "summary.csv", folder / "report.md"
    if not (summary.is_file() and md.is_file()):
        return {}
    text = md.read_text(encoding="utf-8")
    m_sc = re.search(r"^\| scenario file \| .*\(sha256 ([0-9a-f]{64})\) \|$", text, re.M)
    m_al = re.search(r"^\| allocation \| .*\(sha256 ([0-9a-f]{64})\) \|$", text, re.M)
    af = _allocation_file(sc.allocation)
    if m_sc is None or m_sc.group(1) != sc.sha256:
        return {}
    if af is None or m_al is None or m_al.group(1) != _sha256(af):
        return {}
    with summary.open(encoding="utf-8", newline="") as f:
        pub = {r["key"]: r["value"] for r in _csv.DictReader(f)}
    if pub.get("confirmed") != "yes":
        return {}
    return {k: pub.get(k, "") for k in PUBLISHED_FIELDS}


def _mrv_pair(opt, uni) -> str:
    """'0.7157 (0.8855)': the optimized and the uniform rescale's mean relative variance."""
    if opt in (None, "") or uni in (None, ""):
        return "—"
    return f"{float(opt):.4f} ({float(uni):.4f})"


def write_comparison(rows: list[dict], out_dir: str | Path | None = None) -> tuple[Path, Path]:
    """Write ``scenario_comparison.csv`` and ``.md`` into ``out_dir`` (default
    :func:`default_comparison_dir`, ``runs/``), atomically, never through a symlink."""
    out = Path(out_dir) if out_dir is not None else default_comparison_dir()
    out.mkdir(parents=True, exist_ok=True)
    csv_path, md_path = out / "scenario_comparison.csv", out / "scenario_comparison.md"
    check_writable(csv_path)
    check_writable(md_path)
    _write_csv(csv_path, rows, COMPARISON_COLUMNS)
    head = [
        "scenario",
        "total ρ",
        "conversion",
        "δ target",
        "claimed ε (zCDP)",
        "exact ε at δ (safe side)",
        "exact δ at claimed ε (certified upper bound)",
        "uniform drop (proxy pair)",
        "objective",
        "mean σ'²/σ², optimized (uniform rescale)",
        "queries noisier",
        "confirmed",
        "optimizer results from",
    ]
    lines = [
        "# Scenario comparison: zCDP claim vs exact accounting",
        "",
        "Exact values are certified, for the proxy pair (full spine with itself). The uniform drop "
        "keeps every query's share and cuts all noise variances by the same factor. The optimizer's "
        "columns are the scenario's own objective with its Pareto guard (no query noisier than in the "
        "scenario's allocation when the guard is on): the mean over queries of the relative variance "
        "σ'²/σ² it reaches, next to the uniform rescale's, and how many queries get more noise; taken "
        "from runs/<scenario>/optimize.json when that run is for these inputs and this code, else from "
        "the published report of the same inputs (computed by the code that published it), else —.",
        "",
        "| " + " | ".join(head) + " |",
        "|" + "---|" * len(head),
    ]
    for r in rows:
        lines.append(
            "| "
            + " | ".join(
                [
                    r["scenario"],
                    r["total_rho_decimal"],
                    r["conversion"],
                    r["target_delta"],
                    fmt(r["claimed_epsilon"], 8),
                    fmt_bound(r["exact_epsilon_at_target_delta"], 8, "up"),
                    f"≤ {fmt_bound(r.get('exact_delta_upper_at_claimed_epsilon'), 6, 'up')}"
                    + (f" ({TOLERANCE_MARK})" if r.get("tolerance_met") == "no" else ""),
                    _pct(r["uniform_variance_drop_percent_proxy"] or None, 2),
                    r.get("objective") or "—",
                    _mrv_pair(r.get("mean_relative_variance"), r.get("uniform_mean_relative_variance")),
                    str(r.get("n_queries_noisier") if r.get("n_queries_noisier") not in (None, "") else "—"),
                    r["confirmed"] or "—",
                    r.get("optimized_source") or "—",
                ]
            )
            + " |"
        )
    atomic_write_text(md_path, "\n".join(lines) + "\n")
    return csv_path, md_path
