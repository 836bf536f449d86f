"""Certified δ(ε) (and optionally ε(δ)) of a composition of discrete Gaussians.

Every bound is printed on its safe side, exactly (accountant.decimals): δ lower rounded down,
δ upper and the ± error rounded up, the safe ε (certified δ(ε) ≤ the target δ) rounded up, the
ε lower bound (certainly violating the target) rounded down; midpoints are rounded to nearest
and labelled so.  A result whose interval is wider than requested (--tol / --rtol) is still
rigorous; the output says so ("tol met" column, "tolerance_met" in JSON, a warning line).

What is composed: every --sigma2 S2 / --rho R is ONE unit-shift discrete Gaussian N_Z(0, σ²)
(σ² = S2, or σ² = 1/R), whose zCDP ρ is 1/(2σ²) = R/2.  A Census query budget R is stated for
replacing one record, which moves two cells (two unit shifts: the record's old and new cell), so
composing the budget R in full is `--rho R --count 2` (zCDP ρ = R); `--rho R` alone is half of it.

examples:
  census-plb account --sigma2 10000/73 --sigma2 10000/11 --eps 1,2,3
  census-plb account --rho 73/10000 --count 2 --eps 1     # one Census query of budget 73/10000, replacement
  census-plb account --rho 73/10000 --rho 11/10000 --count 20 --eps 0.5 --json
  census-plb account --sigma2 5/2 --delta 1e-10
"""

from __future__ import annotations

import json
import sys
import time
from collections import Counter

from accountant.tolerance import DELTA

HELP = "certified δ(ε) / ε(δ) of a composition of discrete Gaussian mechanisms"

#: most components (listed mechanisms × --count) one command accepts
MAX_COMPONENTS = 100_000
#: most significant digits printed (a directed decimal of more digits is no more certain)
MAX_DIGITS = 1000
#: relative bracket tolerance of the ε(δ) search (Composition.epsilon's default)
EPS_TOL = 1e-12
#: digits of the zCDP comparison columns in the text table
_CLAIM_DIGITS = 10


def configure(p) -> None:
    p.add_argument(
        "--sigma2",
        action="append",
        default=[],
        metavar="S2",
        help="σ² of one unit-shift discrete Gaussian, exact (e.g. 10000/73); repeatable",
    )
    p.add_argument(
        "--rho",
        action="append",
        default=[],
        metavar="RHO",
        help="one unit-shift discrete Gaussian with σ² = 1/ρ (zCDP ρ/2); a Census query of budget ρ "
        "under replacement is two such shifts: add --count 2; repeatable",
    )
    p.add_argument(
        "--count",
        type=int,
        default=1,
        help=f"compose every listed mechanism this many times (at most {MAX_COMPONENTS} components in "
        "all); --count 2 with --rho R composes a Census query budget R under replacement",
    )
    p.add_argument("--eps", default="", help="comma-separated ε values (decimal strings are exact)")
    p.add_argument("--delta", default="", help="comma-separated δ values: report the safe ε(δ)")
    p.add_argument(
        "--tol", type=float, default=DELTA.absolute, help=f"absolute error tolerance (default {DELTA.absolute})"
    )
    p.add_argument(
        "--rtol", type=float, default=DELTA.relative, help=f"relative error tolerance (default {DELTA.relative})"
    )
    p.add_argument("--digits", type=int, default=20, help=f"significant digits printed (1 to {MAX_DIGITS}, default 20)")
    p.add_argument("--json", action="store_true", help="print one JSON object")
    p.add_argument(
        "--wide", action="store_true", help="every column (midpoint, lower bound); default: tables fit 100 columns"
    )


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _check_size(args) -> int:
    """Refuse a composition that is too large before anything is parsed or built."""
    if args.count < 1:
        raise ValueError(f"--count must be >= 1, got {args.count}")
    listed = len(args.sigma2) + len(args.rho)
    if not listed:
        raise ValueError("give at least one --sigma2 or --rho")
    total = listed * args.count
    if total > MAX_COMPONENTS:
        raise ValueError(
            f"--count {args.count}: {listed} mechanism(s) x {args.count} = {total} components "
            f"exceeds the limit of {MAX_COMPONENTS} (MAX_COMPONENTS)"
        )
    return total


def _check_eps(values: list[str]) -> None:
    """Refuse an --eps value outside the accountant's range [0, 10^EPS_MAX_DIGITS] before any work,
    naming the option and the value (cut to 40 characters)."""
    from accountant.composition import EPS_MAX, EPS_MAX_DIGITS
    from accountant.exact import cut, to_fraction

    for i, text in enumerate(values):
        shown = cut(text)
        try:
            f = to_fraction(text, f"--eps value {i + 1}")
        except (TypeError, ValueError) as exc:
            raise ValueError(f"--eps {shown}: {exc}") from None
        if not (0 <= f <= EPS_MAX):
            raise ValueError(f"--eps {shown}: must be in [0, 1e{EPS_MAX_DIGITS}] (value {i + 1} of --eps)")


def _rho_note(args) -> str | None:
    """What ``--rho`` composed, said plainly (None without --rho)."""
    if not args.rho:
        return None
    if args.count == 2:
        return (
            "--rho R --count 2: each R composed as two unit-shift discrete Gaussians with sigma^2 = 1/R "
            "(zCDP R per query: a Census query budget under replacement)"
        )
    return (
        f"--rho R is one unit-shift discrete Gaussian with sigma^2 = 1/R (zCDP R/2), composed {args.count} "
        "time(s); a Census query budget R under replacement (two cells change) is --rho R --count 2"
    )


def _delta_target(d, tol: float, rtol: float) -> tuple[float | None, float | None]:
    """The (tol, rtol) a δ result was asked for: the Certified's own record, else ours."""
    t, r = getattr(d, "tol", None), getattr(d, "rtol", None)
    return (tol, rtol) if t is None and r is None else (t, r)


def run(args) -> int:
    from accountant import Composition, DiscreteGaussian

    n = args.digits
    if not (1 <= n <= MAX_DIGITS):
        raise ValueError(f"--digits must be in [1, {MAX_DIGITS}], got {n}")
    _check_size(args)
    _check_eps(_split(args.eps))
    mechs = [DiscreteGaussian(s) for s in args.sigma2] + [DiscreteGaussian.from_rho(r) for r in args.rho]
    eps_list, delta_list = _split(args.eps), _split(args.delta)
    if not eps_list and not delta_list:
        raise ValueError("give --eps and/or --delta")
    # multiplicities, not a list of len(mechs)·count items
    comp = Composition(Counter({m: c * args.count for m, c in Counter(mechs).items()}))
    t0 = time.perf_counter()
    deltas = comp.delta_curve(eps_list, tol=args.tol, rtol=args.rtol) if eps_list else []
    epsilons = [comp.epsilon(d, tol=EPS_TOL) for d in delta_list]
    seconds = time.perf_counter() - t0
    rows, misses = _delta_rows(args, comp.rho, eps_list, deltas)
    erows = _epsilon_rows(n, comp.rho, delta_list, epsilons, misses)
    warning = None
    if misses:
        shown = "; ".join(misses[:5]) + (f"; and {len(misses) - 5} more" if len(misses) > 5 else "")
        warning = (
            f"warning: tolerance not met for {len(misses)} of {len(rows) + len(erows)} results "
            f"(the intervals are still rigorous, only wider than requested): {shown}"
        )
    if args.json:
        doc = {
            "n_mechanisms": comp.size,
            "rho": str(comp.rho),
            "note": _rho_note(args),
            "delta": rows,
            "epsilon": erows,
            "tolerance_met": not misses,
            "warnings": [warning] if warning else [],
            "seconds": round(seconds, 4),
        }
        print(json.dumps(doc, indent=2))
        if warning:
            print(f"census-plb account: {warning}", file=sys.stderr)
        return 0
    _print_tables(args, comp, rows, erows, delta_list)
    if warning:
        print(warning)
    print(f"({seconds:.3f} s)")
    return 0


def _up(x, k, notation="sci"):
    from accountant.decimals import decimal_string

    return decimal_string(x, k, "up", notation=notation)


def _delta_rows(args, rho, eps_list, deltas) -> tuple[list[dict], list[str]]:
    """One row per ε (midpoint, error, outward bounds, the zCDP claim, tolerance) and the misses."""
    from accountant import zcdp
    from accountant.decimals import format_error_up, format_interval, mid_decimal
    from optimizer.jobs.profile import certified_tolerance_met, tolerance_target

    n, rows, misses = args.digits, [], []
    for e, d in zip(eps_list, deltas):
        tol, rtol = _delta_target(d, args.tol, args.rtol)
        met = certified_tolerance_met(d, args.tol, args.rtol)
        lo, hi = format_interval(d, n)
        rows.append(
            {
                "eps": e,
                "delta": mid_decimal(d, n),  # midpoint, rounded to nearest
                "delta_error": format_error_up(d),
                "delta_lower": lo,
                "delta_upper": hi,
                "delta_zcdp_bun_steinke": _up(zcdp.delta_bun_steinke(rho, e), 6),
                "tolerance_met": met,
                "tol": tol,
                "rtol": rtol,
            }
        )
        if not met:
            target = tolerance_target(d, tol, rtol)
            parts = ([] if tol is None else [f"tol {tol:g}"]) + ([] if rtol is None else [f"rtol {rtol:g}·|delta|"])
            misses.append(
                f"delta at eps = {e}: error {format_error_up(d)}"
                + ("" if target is None else f" > target {_up(target, 3)} = min({', '.join(parts)})")
            )
    return rows, misses


def _epsilon_rows(n: int, rho, delta_list, epsilons, misses: list[str]) -> list[dict]:
    """One row per δ (safe ε rounded up, its lower end, the zCDP claims, tolerance); misses appended."""
    from accountant import zcdp
    from accountant.decimals import decimal_string, exact_fraction, format_error_up
    from optimizer.jobs.profile import epsilon_tolerance_met

    erows = []
    for dl, r in zip(delta_list, epsilons):
        met = epsilon_tolerance_met(r, EPS_TOL)
        lower = getattr(r, "lower", None)
        at = getattr(r, "delta_at_value", None)
        erows.append(
            {
                "delta": dl,
                "eps": _up(r.value, n, "auto"),  # safe side: certified δ(eps) ≤ delta, rounded up
                "eps_lower": None if lower is None else decimal_string(lower, n, "down", notation="auto"),
                "delta_at_eps_upper": None if at is None else _up(at.upper, n),
                "eps_zcdp_bun_steinke": _up(zcdp.epsilon_bun_steinke(rho, dl), n, "auto"),
                "eps_zcdp_cks": _up(zcdp.epsilon_cks(rho, dl), n, "auto"),
                "tolerance_met": met,
            }
        )
        if not met:
            width = exact_fraction(r.value) - exact_fraction(lower) if lower is not None else 0
            misses.append(
                f"eps at delta = {dl}: bracket (eps lower, eps] of width {format_error_up(width)} "
                f"(requested {EPS_TOL:g}·max(1, eps))"
            )
    return erows


def _print_tables(args, comp, rows: list[dict], erows: list[dict], delta_list) -> None:
    """The text output: the composition, then the δ(ε) and ε(δ) tables."""
    from accountant import zcdp

    n, rho = args.digits, comp.rho
    print(
        f"composition: {comp.size} discrete Gaussian{'' if comp.size == 1 else 's'} "
        f"({len(comp.groups)} distinct), zCDP rho = {rho}"
    )
    if _rho_note(args):
        print(f"note: {_rho_note(args)}")
    w = max(n + 8, 20)
    wide = bool(getattr(args, "wide", False))
    if rows and not wide:  # the certified upper bound, its error and the claim: fits 100 columns
        e = min(max(8, *(len(r["eps"]) for r in rows)), 24)
        print(f"{'eps':>{e}}  {'delta upper (up)':>{w}}  {'± error (up)':>12}  {'zCDP claim (BS)':>15}  tol met")
        for row in rows:
            print(
                f"{row['eps']:>{e}}  {row['delta_upper']:>{w}}  {row['delta_error']:>12}  "
                f"{row['delta_zcdp_bun_steinke']:>15}  {'yes' if row['tolerance_met'] else 'NO'}"
            )
    if rows and wide:
        print(
            f"{'eps':>24}  {'delta (midpoint)':>{w}}  {'± error (up)':>12}  {'delta lower (down)':>{w}}  "
            f"{'delta upper (up)':>{w}}  {'zCDP claim (BS)':>15}  tol met"
        )
        for row in rows:
            print(
                f"{row['eps']:>24}  {row['delta']:>{w}}  {row['delta_error']:>12}  {row['delta_lower']:>{w}}  "
                f"{row['delta_upper']:>{w}}  {row['delta_zcdp_bun_steinke']:>15}  "
                f"{'yes' if row['tolerance_met'] else 'NO'}"
            )
    if erows:
        k = _CLAIM_DIGITS
        print(
            f"{'delta':>12}  {'eps (safe side, up)':>{w}}  "
            + (f"{'eps lower (down)':>{w}}  " if wide else "")
            + f"{'zCDP BS (up)':>{k + 6}}  {'zCDP CKS (up)':>{k + 6}}  tol met"
        )
        for dl, erow in zip(delta_list, erows):
            lower = "—" if erow["eps_lower"] is None else erow["eps_lower"]
            bs = _up(zcdp.epsilon_bun_steinke(rho, dl), k, "auto")
            cks = _up(zcdp.epsilon_cks(rho, dl), k, "auto")
            print(
                f"{erow['delta']:>12}  {erow['eps']:>{w}}  "
                + (f"{lower:>{w}}  " if wide else "")
                + f"{bs:>{k + 6}}  {cks:>{k + 6}}  {'yes' if erow['tolerance_met'] else 'NO'}"
            )
