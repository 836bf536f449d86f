"""Peers benchmark (issue 6): census-plb beside dp_accounting, prv_accountant and conversions.

Run ``python -m bench.peers [--out reports/benchmarks] [--repeats 3] [--only NAME ...]``.
Requires the optional extra ``bench`` (``pip install -e .[bench]``: dp-accounting, prv-accountant).

Compositions (all unit-shift discrete Gaussians, P = N_Z(0, σ²) vs Q = N_Z(1, σ²)):

* ``main``    — the main pair [M13, M13] (160 components, 12 distinct σ²);
* ``hetero12`` — the 12 distinct σ² of the main pair, one each;
* ``single``  — one component, σ² = 10000/73;
* ``small``   — 10 × σ² = 1/2 (coarse lattice; the continuous-Gaussian surrogate is poor).

Queries per composition: δ(ε) at the four ε where the certified δ ≈ 1e-3, 1e-6, 1e-10, 1e-20
(ε found with ``Composition.epsilon``, then rounded to a float that every method receives), and
ε(δ = 1e-10).  Reference: census-plb's certified value (error ≤ 1e-35 absolute and 1e-20
relative for δ; for ε the certified interval (lower, value] of width ≤ 1e-12 relative).

Peers and settings:

* dp_accounting PLD (``privacy_loss_distribution.from_discrete_gaussian_mechanism`` per distinct
  component, ``self_compose`` / ``compose``): ``default`` (value_discretization_interval 1e-4,
  privacy buckets, pessimistic, tail-mass truncation 1e-15), ``accurate`` (interval 1e-5,
  connect-the-dots, pessimistic, tail-mass truncation 1e-15; bracket = [optimistic privacy
  buckets, pessimistic connect-the-dots] at the same interval — dp_accounting's connect-the-dots
  has no optimistic mode) and ``fine-tail`` (interval 1e-4, connect-the-dots, pessimistic,
  tail-mass truncation 1e-30: an attempt to reach δ below 1e-15).  dp_accounting 0.6 has no
  DiscreteGaussianDpEvent, so the PLD API is used directly.
* dp_accounting RDP (``RdpAccountant`` with one ``GaussianDpEvent(σ)`` per component: the
  discrete Gaussian's RDP is at most the Gaussian's α/(2σ²), Canonne–Kamath–Steinke 2020), an
  upper bound.
* prv_accountant (``PRVAccountant``) with a discrete-Gaussian PRV written here (``_prv_class``) (the package
  ships none): ``default`` (eps_error 0.1, delta_error = 1e-3·δ) and ``accurate`` (eps_error
  0.01, delta_error = 1e-3·δ); its own (lower, upper) bracket is reported.
* zCDP conversions (``accountant.zcdp``): Bun–Steinke and Canonne–Kamath–Steinke — upper bounds.
* Gaussian surrogates (``accountant.gdp``): μ-GDP and the Edgeworth-corrected surrogate —
  approximations, no bracket.

Wall time of a peer row = its full cost to answer that one question from scratch (build /
compose its representation + query); census-plb's time is the same for ``Composition.delta``
/ ``Composition.epsilon`` on a fresh object.  Medians of ``--repeats`` runs (runs longer than
2 s are not repeated).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
import warnings
from fractions import Fraction
from pathlib import Path

import mpmath
import numpy as np
import pandas as pd

from accountant import Composition, DiscreteGaussian
from bench.accountant import DEFAULT_OUT, fmt_s, format_table, main_pair, markdown_table
from optimizer.atomic import atomic_write_text

DELTA_TARGETS = ("1e-3", "1e-6", "1e-10", "1e-20")
EPS_DELTA = "1e-10"
COLUMNS = [
    "composition",
    "method",
    "setting",
    "target",
    "query",
    "value",
    "certified",
    "abs_err",
    "rel_err",
    "bracket",
    "bracket_lo",
    "bracket_hi",
    "bracket_ok",
    "wall_s",
    "census_s",
    "time_ratio",
    "status",
]


# ----------------------------------------------------------------------------- compositions
def compositions() -> dict[str, Composition]:
    main = main_pair()
    distinct = [m for m, _ in main.groups]
    return {
        "main": main,
        "hetero12": Composition(distinct),
        "single": Composition([DiscreteGaussian("10000/73")]),
        "small": Composition({DiscreteGaussian(Fraction(1, 2)): 10}),
    }


def timed(fn, repeats: int, long_run: float = 2.0):
    runs, out = [], None
    for _i in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn()
        runs.append(time.perf_counter() - t0)
        if runs[-1] > long_run:
            break
    return statistics.median(runs), out


# ----------------------------------------------------------------------------- reference
def reference(name: str, make, repeats: int) -> tuple[list[dict], list[dict]]:
    """Query list with certified values, and census-plb's own rows."""
    comp = make()
    queries = []
    for d in DELTA_TARGETS:
        e = comp.epsilon(d)
        # every method gets this float ε (exact binary value), rounded up: at the nearest float below the
        # safe ε the certified δ may exceed d (the search ends ~1e-25 from the root)
        eps = float(e.value)
        if mpmath.mpf(eps) < e.value:
            eps = math.nextafter(eps, math.inf)
        queries.append({"target": f"delta @ eps(delta~{d})", "kind": "delta", "eps": eps, "delta_target": float(d)})
    queries.append({"target": f"eps @ delta={EPS_DELTA}", "kind": "epsilon", "delta": float(EPS_DELTA)})
    rows = []
    for q in queries:
        if q["kind"] == "delta":
            t, c = timed(lambda q=q: make().delta(q["eps"]), repeats)
            q["cert"] = c
            q["cert_value"] = c.value
            value, lo, hi, bracket = c.value, c.lower, c.upper, "certified [lo, hi]"
        else:
            t, r = timed(lambda: make().epsilon(EPS_DELTA), repeats)
            q["cert_eps"] = r
            q["cert_value"] = r.value
            value, lo, hi, bracket = r.value, r.lower, r.value, "certified (lo, hi]"
        q["census_s"] = t
        rows.append(
            {
                "composition": name,
                "method": "census-plb",
                "setting": "tol 1e-35, rtol 1e-20",
                "target": q["target"],
                "query": q["eps"] if q["kind"] == "delta" else q["delta"],
                "value": value,
                "certified": q["cert_value"],
                "abs_err": 0.0,
                "rel_err": 0.0,
                "bracket": bracket,
                "bracket_lo": lo,
                "bracket_hi": hi,
                "bracket_ok": True,
                "wall_s": t,
                "census_s": t,
                "time_ratio": 1.0,
                "status": "reference",
            }
        )
    return queries, rows


# ----------------------------------------------------------------------------- peers
def _finish(name, method, setting, q, value, wall, bracket="none", lo=None, hi=None, kind="numeric", note="") -> dict:
    """Row with errors vs the certified value, bracket check and a plain status."""
    cert = q["cert_value"]
    value_f = float(value) if value is not None else float("nan")
    ok = None
    if value is None or not math.isfinite(value_f):
        abs_err = rel_err = float("nan")
    else:
        abs_err = float(abs(mpmath.mpf(value_f) - cert))
        rel_err = abs_err / float(cert) if cert != 0 else float("inf")
    # exact value lies in [c_lo, c_hi]
    if q["kind"] == "delta":
        c_lo, c_hi = q["cert"].lower, q["cert"].upper
    else:
        c_lo, c_hi = q["cert_eps"].lower, q["cert_eps"].value
    if bracket.startswith("two-sided") and lo is not None and hi is not None:
        ok = bool(mpmath.mpf(float(lo)) <= c_hi and mpmath.mpf(float(hi)) >= c_lo)
    elif bracket == "upper bound" and value is not None and math.isfinite(value_f):
        ok = bool(mpmath.mpf(value_f) >= c_lo)
    status = []
    if q["kind"] == "delta" and (value is None or not math.isfinite(value_f) or value_f <= 0):
        status.append(f"CANNOT RESOLVE delta~{q['delta_target']:.0e}: returned {value_f:.3g}")
    elif kind == "numeric" and rel_err > 0.5:
        what = f"delta~{q['delta_target']:.0e}" if q["kind"] == "delta" else "eps"
        status.append(f"CANNOT RESOLVE {what}: off by {rel_err:.2g} relative")
    elif kind == "bound":
        status.append(
            f"valid-bound factor x{value_f / float(cert):.4g}"
            if q["kind"] == "delta"
            else f"bound +{value_f - float(cert):.4g} in eps"
        )
    elif kind == "approx":
        status.append("approximation (no guarantee)")
    else:
        status.append("ok")
    if ok is False:
        status.append(
            "UNSAFE: claimed upper bound is below the certified value"
            if bracket == "upper bound"
            else "BRACKET EXCLUDES CERTIFIED VALUE"
        )
    if note:
        status.append(note)
    return {
        "composition": name,
        "method": method,
        "setting": setting,
        "target": q["target"],
        "query": q["eps"] if q["kind"] == "delta" else q["delta"],
        "value": value_f,
        "certified": float(cert),
        "abs_err": abs_err,
        "rel_err": rel_err,
        "bracket": bracket,
        "bracket_lo": None if lo is None else float(lo),
        "bracket_hi": None if hi is None else float(hi),
        "bracket_ok": ok,
        "wall_s": wall,
        "census_s": q["census_s"],
        "time_ratio": wall / q["census_s"],
        "status": "; ".join(status),
    }


PLD_SETTINGS = {
    "default": {"vdi": 1e-4, "connect_dots": False, "tmt": 1e-15},
    "accurate": {"vdi": 1e-5, "connect_dots": True, "tmt": 1e-15},
    "fine-tail": {"vdi": 1e-4, "connect_dots": True, "tmt": 1e-30},
}


def _build_pld(comp: Composition, vdi: float, connect_dots: bool, tmt: float, pessimistic: bool):
    from dp_accounting.pld import privacy_loss_distribution as pld

    out = None
    for m, c in comp.groups:
        p = pld.from_discrete_gaussian_mechanism(
            math.sqrt(float(m.sigma2)),
            sensitivity=m.shift,
            value_discretization_interval=vdi,
            pessimistic_estimate=pessimistic,
            use_connect_dots=connect_dots,
        )
        if c > 1:
            p = p.self_compose(c, tail_mass_truncation=tmt)
        out = p if out is None else out.compose(p, tail_mass_truncation=tmt)
    return out


def run_pld(name, comp, queries, repeats, settings=("default", "accurate", "fine-tail")) -> list[dict]:
    rows = []
    for setting in settings:
        s = PLD_SETTINGS[setting]
        dots = "connect-dots" if s["connect_dots"] else "privacy-buckets"
        label = f"vdi={s['vdi']:g}, {dots}, pessimistic, tail_mass={s['tmt']:g}"
        t_build, p = timed(lambda s=s: _build_pld(comp, s["vdi"], s["connect_dots"], s["tmt"], True), repeats)
        p_opt = None
        if setting == "accurate":
            # connect-the-dots has no optimistic mode: the lower end uses privacy buckets
            p_opt = _build_pld(comp, s["vdi"], False, s["tmt"], False)
        for q in queries:
            if q["kind"] == "delta":
                t_q, v = timed(lambda p=p, q=q: float(p.get_delta_for_epsilon(q["eps"])), repeats)
                lo = float(p_opt.get_delta_for_epsilon(q["eps"])) if p_opt is not None else None
            else:
                t_q, v = timed(lambda p=p, q=q: float(p.get_epsilon_for_delta(q["delta"])), repeats)
                lo = float(p_opt.get_epsilon_for_delta(q["delta"])) if p_opt is not None else None
            if p_opt is not None:
                rows.append(
                    _finish(
                        name,
                        "dp_accounting PLD",
                        setting + " " + label,
                        q,
                        v,
                        t_build + t_q,
                        "two-sided [optimistic, pessimistic]",
                        lo,
                        v,
                    )
                )
            else:
                rows.append(
                    _finish(name, "dp_accounting PLD", setting + " " + label, q, v, t_build + t_q, "upper bound")
                )
    return rows


def run_rdp(name, comp, queries, repeats) -> list[dict]:
    from dp_accounting import dp_event
    from dp_accounting.rdp import rdp_privacy_accountant as rdp

    def build():
        acc = rdp.RdpAccountant()
        ev = dp_event.ComposedDpEvent(
            [
                dp_event.SelfComposedDpEvent(dp_event.GaussianDpEvent(math.sqrt(float(m.sigma2)) / m.shift), c)
                for m, c in comp.groups
            ]
        )
        acc.compose(ev)
        return acc

    rows = []
    for q in queries:
        if q["kind"] == "delta":
            t, v = timed(lambda q=q: build().get_delta(q["eps"]), repeats)
        else:
            t, v = timed(lambda q=q: build().get_epsilon(q["delta"]), repeats)
        rows.append(
            _finish(
                name,
                "dp_accounting RDP",
                "default orders, GaussianDpEvent(sigma) per component",
                q,
                v,
                t,
                "upper bound",
                kind="bound",
            )
        )
    return rows


def _prv_class():
    from prv_accountant.privacy_random_variables import PrivacyRandomVariable
    from scipy.special import logsumexp

    class _DGPRV(PrivacyRandomVariable):
        """Privacy random variable of the discrete Gaussian mechanism N_Z(0, σ²) vs N_Z(s, σ²).

        Y = log P(X)/Q(X) = (s² − 2sX)/(2σ²) with X ~ N_Z(0, σ²): a lattice variable with atoms
        spaced s/σ².  cdf(t) = P[Y ≤ t] = P[X ≥ ⌈s/2 − tσ²/s⌉] from a float tail table;
        mean = s²/(2σ²) (the KL divergence); rdp(α) ≤ αs²/(2σ²) (CKS 2020, used only to size
        prv_accountant's domain).
        """

        def __init__(self, sigma2, shift: int = 1):
            self.s2 = float(sigma2)
            self.s = int(shift)
            K = math.ceil(40 * math.sqrt(self.s2) + 40)
            xs = np.arange(-K, K + 1, dtype=float)
            lw = -xs * xs / (2 * self.s2)
            p = np.exp(lw - logsumexp(lw))
            self.K = K
            self.upper = np.concatenate([np.cumsum(p[::-1])[::-1], [0.0]])  # P[X >= x], x = -K..K+1

        def cdf(self, t):
            t = np.asarray(t, dtype=np.float64)
            x = np.ceil(self.s / 2 - t * self.s2 / self.s)
            idx = np.clip(x + self.K, 0, 2 * self.K + 1).astype(np.int64)
            return self.upper[idx]

        def mean(self):
            return self.s * self.s / (2 * self.s2)

        def rdp(self, alpha):
            return alpha * self.s * self.s / (2 * self.s2)

    return _DGPRV


PRV_SETTINGS = {"default": {"eps_error": 0.1}, "accurate": {"eps_error": 0.01}}


def run_prv(name, comp, queries, repeats, settings=("default", "accurate")) -> list[dict]:
    from prv_accountant import PRVAccountant

    DG = _prv_class()
    prvs = [DG(m.sigma2, m.shift) for m, _ in comp.groups]
    ms = [c for _, c in comp.groups]
    rows = []
    for setting in settings:
        ee = PRV_SETTINGS[setting]["eps_error"]
        for q in queries:
            target = q["delta_target"] if q["kind"] == "delta" else q["delta"]
            de = 1e-3 * target
            label = f"eps_error={ee:g}, delta_error=1e-3*delta ({de:.0e})"

            def go(q=q, ee=ee, de=de):
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    acc = PRVAccountant(prvs=prvs, max_self_compositions=ms, eps_error=ee, delta_error=de)
                    if q["kind"] == "delta":
                        return acc.compute_delta(q["eps"], ms)
                    return acc.compute_epsilon(q["delta"], ms)

            try:
                t, (lo, est, hi) = timed(go, repeats)
            except Exception as ex:  # report, do not hide
                rows.append(
                    _finish(
                        name,
                        "prv_accountant",
                        f"{setting} {label}",
                        q,
                        None,
                        float("nan"),
                        note=f"ERROR {type(ex).__name__}: {ex}",
                    )
                )
                continue
            rows.append(
                _finish(name, "prv_accountant", f"{setting} {label}", q, est, t, "two-sided [lower, upper]", lo, hi)
            )
    return rows


def run_conversions(name, comp, queries, repeats) -> list[dict]:
    from accountant import gdp, zcdp

    rho = comp.rho
    rows = []
    for q in queries:
        for method, fd, fe, kind, bracket in (
            (
                "zCDP Bun-Steinke",
                lambda e: zcdp.delta_bun_steinke(rho, e),
                lambda d: zcdp.epsilon_bun_steinke(rho, d),
                "bound",
                "upper bound",
            ),
            ("zCDP CKS", lambda e: zcdp.delta_cks(rho, e), lambda d: zcdp.epsilon_cks(rho, d), "bound", "upper bound"),
            (
                "GDP surrogate",
                lambda e: gdp.delta(gdp.mu_of(comp), e),
                lambda d: gdp.epsilon(gdp.mu_of(comp), d),
                "approx",
                "none",
            ),
            ("Edgeworth surrogate", lambda e: gdp.edgeworth_delta(comp, e), None, "approx", "none"),
        ):
            if q["kind"] == "delta":
                t, v = timed(lambda fd=fd, q=q: fd(q["eps"]), repeats)
            elif fe is not None:
                t, v = timed(lambda fe=fe, q=q: fe(q["delta"]), repeats)
            else:
                continue
            rows.append(
                _finish(
                    name,
                    method,
                    "accountant." + ("zcdp" if "zCDP" in method else "gdp") + ", 50 digits",
                    q,
                    float(v),
                    t,
                    bracket,
                    kind=kind,
                )
            )
    return rows


# ----------------------------------------------------------------------------- driver
def run(
    names=None,
    repeats: int = 3,
    pld_settings=("default", "accurate", "fine-tail"),
    prv_settings=("default", "accurate"),
    log=print,
) -> dict:
    comps = compositions()
    names = list(names or comps)
    rows: list[dict] = []
    skipped = []
    for name in names:
        t0 = time.perf_counter()
        queries, ref_rows = reference(name, lambda name=name: Composition(dict(comps[name].groups)), repeats)
        rows += ref_rows
        log(f"[{name}] census-plb reference done ({time.perf_counter() - t0:.1f} s)")
        try:
            rows += run_pld(name, comps[name], queries, repeats, pld_settings)
            rows += run_rdp(name, comps[name], queries, repeats)
        except ImportError as ex:
            skipped.append(f"dp_accounting: {ex}")
        log(f"[{name}] dp_accounting done ({time.perf_counter() - t0:.1f} s)")
        try:
            rows += run_prv(name, comps[name], queries, repeats, prv_settings)
        except ImportError as ex:
            skipped.append(f"prv_accountant: {ex}")
        log(f"[{name}] prv_accountant done ({time.perf_counter() - t0:.1f} s)")
        rows += run_conversions(name, comps[name], queries, repeats)
        log(f"[{name}] all done ({time.perf_counter() - t0:.1f} s)")
    versions: dict[str, str | None] = {}
    for mod in ("dp_accounting", "prv_accountant"):
        try:
            from importlib.metadata import version

            versions[mod] = version(mod.replace("_", "-"))
        except Exception:
            versions[mod] = None
    return {
        "rows": rows,
        "skipped": sorted(set(skipped)),
        "meta": {"versions": versions, "repeats": repeats, "compositions": {n: repr(comps[n]) for n in names}},
    }


def _g(v):
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return f"{v:.6g}" if isinstance(v, float) else str(v)


FMT = {
    "value": lambda v: f"{v:.10g}",
    "certified": lambda v: f"{v:.10g}",
    "query": lambda v: f"{v:.10g}",
    "abs_err": lambda v: "-" if v is None or v != v else f"{v:.2e}",
    "rel_err": lambda v: "-" if v is None or v != v else f"{v:.2e}",
    "bracket_ok": lambda v: "-" if v is None else ("yes" if v else "NO"),
    "wall_s": lambda v: "-" if v is None or v != v else fmt_s(v),
    "census_s": fmt_s,
    "time_ratio": lambda v: "-" if v is None or v != v else f"{v:.3g}",
}
SHOW = [
    "composition",
    "method",
    "setting",
    "target",
    "value",
    "certified",
    "abs_err",
    "rel_err",
    "bracket",
    "bracket_ok",
    "wall_s",
    "time_ratio",
    "status",
]


def write_outputs(res: dict, out: Path) -> dict[str, Path]:
    out.mkdir(parents=True, exist_ok=True)
    paths = {"csv": out / "peers.csv", "json": out / "peers.json", "md": out / "peers.md"}
    df = pd.DataFrame(res["rows"]).reindex(columns=COLUMNS)
    for c in ("value", "certified", "bracket_lo", "bracket_hi"):
        df[c] = df[c].map(
            lambda v: (
                None if v is None else (f"{float(v):.17g}" if not isinstance(v, mpmath.mpf) else mpmath.nstr(v, 25))
            )
        )
    atomic_write_text(paths["csv"], df.to_csv(index=False))  # atomic, never through a symlink
    atomic_write_text(
        paths["json"],
        json.dumps(res, indent=2, default=lambda o: mpmath.nstr(o, 25) if isinstance(o, mpmath.mpf) else str(o)),
    )
    lines = [
        "# Peers benchmark (`python -m bench.peers`, issue 6)",
        "",
        f"Versions: {res['meta']['versions']}; median of {res['meta']['repeats']} repeats (runs > 2 s not repeated).",
        "Compositions: " + "; ".join(f"`{k}` = {v}" for k, v in res["meta"]["compositions"].items()) + ".",
        "",
        "Reference = census-plb certified value (δ: |error| ≤ 1e-35 and ≤ 1e-20·δ; ε: certified interval of relative "
        "width ≤ 1e-12). `target` δ~X means δ(ε) at the ε where the certified δ ≈ X (every method gets the same float "
        "ε). `wall_s` = the peer's whole cost for that one question (build/compose + query); `time_ratio` = wall_s / "
        "census-plb's wall time for the same question. `bracket_ok`: for two-sided brackets whether [lo, hi] meets the "
        "certified interval, for upper bounds whether the bound is ≥ the certified value. Status `CANNOT RESOLVE` = "
        "the peer returns 0/∞ or is "
        "off by > 50% relative (float64 FFT round-off and tail truncation put a floor near 1e-15 under PLD/PRV δ).",
        "",
    ]
    if res["meta"].get("bench_wall_s") is not None:
        lines += [f"Whole run: {res['meta']['bench_wall_s']:.0f} s wall. {res['meta'].get('note', '')}", ""]
    if res["skipped"]:
        lines += ["Skipped: " + "; ".join(res["skipped"]), ""]
    for name in res["meta"]["compositions"]:
        sub = [r for r in res["rows"] if r["composition"] == name]
        lines += [f"## `{name}`", "", markdown_table(sub, SHOW, FMT), ""]
    atomic_write_text(paths["md"], "\n".join(lines))
    return paths


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m bench.peers", description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DEFAULT_OUT)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=None, help="composition names (main, hetero12, single, small)")
    args = ap.parse_args(argv)
    t0 = time.perf_counter()
    res = run(args.only, repeats=args.repeats)
    res["meta"]["bench_wall_s"] = time.perf_counter() - t0
    print()
    print(format_table(res["rows"], SHOW, FMT))
    paths = write_outputs(res, args.out)
    print()
    print(f"peers wall time {fmt_s(res['meta']['bench_wall_s'])}; wrote " + ", ".join(str(p) for p in paths.values()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
