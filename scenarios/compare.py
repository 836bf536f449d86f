"""Compare every scenario: zCDP claim vs exact accounting, one table.

Writes ``runs/scenario_comparison.csv`` and ``runs/scenario_comparison.md`` (``--publish``: the
committed ``reports/`` copies; per scenario:
total ρ, claimed ε, δ target, exact ε at δ and exact δ at the claimed ε for the proxy pair, the
uniform variance drop, and the optimized drop when ``runs/<scenario>/optimize.json`` exists).

usage: python -m scenarios.compare [NAME ...] [--runs runs] [--out DIR | --publish]
(the same as ``census-plb scenario compare``)
"""

from __future__ import annotations

import sys

from optimizer.cli.main import main as cli


def main(argv: list[str] | None = None) -> int:
    return cli(["scenario", "compare", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
