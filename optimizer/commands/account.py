"""Certified δ(ε) (and optionally ε(δ)) of a composition of discrete Gaussians.

examples:
  census-plb account --sigma2 10000/73 --sigma2 10000/11 --eps 1,2,3
  census-plb account --rho 73/10000 --rho 11/10000 --count 20 --eps 0.5 --json
  census-plb account --sigma2 5/2 --delta 1e-10
"""

from __future__ import annotations

import json
import time

HELP = "certified δ(ε) / ε(δ) of a composition of discrete Gaussian mechanisms"


def configure(p) -> None:
    p.add_argument("--sigma2", action="append", default=[], metavar="S2",
                   help="σ² of one unit-shift discrete Gaussian, exact (e.g. 10000/73); repeatable")
    p.add_argument("--rho", action="append", default=[], metavar="RHO",
                   help="a Census query budget ρ (σ² = 1/ρ); repeatable")
    p.add_argument("--count", type=int, default=1, help="compose every listed mechanism this many times")
    p.add_argument("--eps", default="", help="comma-separated ε values (decimal strings are exact)")
    p.add_argument("--delta", default="", help="comma-separated δ values: report the safe ε(δ)")
    p.add_argument("--tol", type=float, default=1e-35, help="absolute error tolerance (default 1e-35)")
    p.add_argument("--rtol", type=float, default=1e-20, help="relative error tolerance (default 1e-20)")
    p.add_argument("--digits", type=int, default=20, help="significant digits printed")
    p.add_argument("--json", action="store_true", help="print one JSON object")


def _split(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def run(args) -> int:
    import mpmath

    from accountant import Composition, DiscreteGaussian, zcdp

    if args.count < 1:
        raise ValueError(f"--count must be >= 1, got {args.count}")
    mechs = [DiscreteGaussian(s) for s in args.sigma2] + [DiscreteGaussian.from_rho(r) for r in args.rho]
    if not mechs:
        raise ValueError("give at least one --sigma2 or --rho")
    eps_list, delta_list = _split(args.eps), _split(args.delta)
    if not eps_list and not delta_list:
        raise ValueError("give --eps and/or --delta")
    comp = Composition(mechs * args.count)
    t0 = time.perf_counter()
    deltas = comp.delta_curve(eps_list, tol=args.tol, rtol=args.rtol) if eps_list else []
    epsilons = [comp.epsilon(d) for d in delta_list]
    seconds = time.perf_counter() - t0
    rho = comp.rho
    n = args.digits
    rows = [
        {
            "eps": e,
            "delta": d.digits(n),
            "delta_error": mpmath.nstr(d.error, 3),
            "delta_lower": mpmath.nstr(d.lower, n),
            "delta_upper": mpmath.nstr(d.upper, n),
            "delta_zcdp_bun_steinke": mpmath.nstr(zcdp.delta_bun_steinke(rho, e), 6),
        }
        for e, d in zip(eps_list, deltas)
    ]
    erows = [
        {
            "delta": dl,
            "eps": mpmath.nstr(r.value, n),
            "eps_lower": mpmath.nstr(r.lower, n),
            "eps_zcdp_bun_steinke": mpmath.nstr(zcdp.epsilon_bun_steinke(rho, dl), n),
            "eps_zcdp_cks": mpmath.nstr(zcdp.epsilon_cks(rho, dl), n),
        }
        for dl, r in zip(delta_list, epsilons)
    ]
    if args.json:
        print(json.dumps({"n_mechanisms": comp.size, "rho": str(rho), "delta": rows, "epsilon": erows,
                          "seconds": round(seconds, 4)}, indent=2))
        return 0
    print(f"composition: {comp.size} discrete Gaussians ({len(comp.groups)} distinct), zCDP rho = {rho}")
    if rows:
        print(f"{'eps':>24}  {'delta (certified)':>{n + 8}}  {'± error':>9}  {'zCDP claim (BS)':>15}")
        for r in rows:
            print(f"{r['eps']:>24}  {r['delta']:>{n + 8}}  {r['delta_error']:>9}  {r['delta_zcdp_bun_steinke']:>15}")
    if erows:
        print(f"{'delta':>12}  {'eps (safe side)':>{n + 6}}  {'zCDP BS':>12}  {'zCDP CKS':>12}")
        for r in erows:
            print(f"{r['delta']:>12}  {r['eps']:>{n + 6}}  {r['eps_zcdp_bun_steinke'][:12]:>12}  {r['eps_zcdp_cks'][:12]:>12}")
    print(f"({seconds:.3f} s)")
    return 0
