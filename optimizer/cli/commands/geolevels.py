"""Per-geolevel view: each geolevel's promised ε, exact ε, unused budget and variance drop.

Each geolevel is accounted as its own mechanism (its queries on one geounit, one replaced
record); see optimizer/search/geolevels.py for the neighbour models.

examples:
  census-plb geolevels --scenario dhc-persons
  census-plb geolevels --scenario su2024-per-geolevel     # arXiv 2410.09296 Figure 2 (its model: su2024)
  census-plb geolevels --allocation dhc-units --conversion cks --delta 1e-12 --json
"""

from __future__ import annotations

import json

HELP = "per geolevel: promised vs exact ε, unused budget, variance drop that keeps its promise"


def configure(p) -> None:
    from accountant import zcdp  # the registry of conversions (lazy: the CLI starts fast)

    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--scenario", help="scenario name or .toml path (its allocation, conversion, target δ)")
    g.add_argument("--allocation", help="built-in allocation name")
    p.add_argument("--delta", default=None, help="target δ (default: the scenario's, else 1e-10)")
    p.add_argument("--conversion", default=None, choices=tuple(zcdp.CONVERSIONS), help="zCDP → (ε, δ) conversion")
    p.add_argument(
        "--model",
        default=None,
        choices=("census", "su2024"),
        help="neighbour model: census (σ² = 1/ρ, two shifts per query) or su2024 (σ² = 1/(2ρ), one shift); "
        "default: the scenario's neighbour_model, else census",
    )
    p.add_argument("--json", action="store_true", help="print JSON")


def _short(text: str, mode: str) -> str:
    """``text`` to 16 significant digits, rounded ``mode`` (its safe side), positional notation."""
    from decimal import Decimal
    from fractions import Fraction

    from accountant.decimals import decimal_string

    return format(Decimal(decimal_string(Fraction(text), 16, mode)), "f")


def run(args) -> int:
    from optimizer.pipeline.stages import spec_for
    from optimizer.search.geolevels import geolevel_view

    spec = spec_for(
        scenario=args.scenario,
        allocation=args.allocation,
        conversion=args.conversion,
        delta=args.delta,
        delta_source="--delta" if args.delta else None,
    )
    model = args.model or spec.scenario.neighbour_model
    model_from = "--model" if args.model else ("the scenario" if spec.recorded else "the default")
    rows = geolevel_view(spec.allocation, spec.delta, spec.conversion, model)
    head = {
        "allocation": spec.allocation.name,
        "conversion": spec.conversion,
        "delta": spec.delta,
        "neighbour_model": model,
        "neighbour_model_from": model_from,
        "note": "each geolevel accounted alone (its queries on one geounit); epsilon_exact is certified "
        "(δ(ε) ≤ δ, rounded up); variance_drop_percent keeps that geolevel's own promised (ε, δ)",
    }
    if args.json:
        print(json.dumps({**head, "geolevels": [r.as_dict() for r in rows]}, indent=1, ensure_ascii=False))
        return 0
    print(
        f"{head['allocation']}: {spec.conversion} at δ = {spec.delta}, neighbour model {model} ({model_from}) "
        "(each geolevel alone)"
    )
    print(f"{'geolevel':20s} {'ρ':>10s} {'ε promised':>20s} {'ε exact (safe)':>20s} {'unused':>8s} {'var drop':>9s}")
    for r in rows:
        flag = "" if r.tolerance_met else "  (ε tolerance not met; interval shown in --json)"
        print(
            f"{r.geolevel:20s} {float(r.rho):10.6g} {_short(r.epsilon_promised, 'down'):>20s} "
            f"{_short(r.epsilon_exact, 'up'):>20s} "
            f"{r.unused_budget_percent:7.2f}% {r.variance_drop_percent:8.4f}%{flag}"
        )
    return 0
