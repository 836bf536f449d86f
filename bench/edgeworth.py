"""Accuracy of the Gaussian (GDP) and Edgeworth surrogates against the exact accountant.

Families with fixed μ² = Σ 1/σ_k² = 1 and m components (σ² grows with m), at ε = 2:
  homogeneous:   m × σ² = m
  heterogeneous: m/2 × σ² = 2m/3  and  m/2 × σ² = 2m   (1.5/m + 0.5/m per pair … μ² = 1)
Prints relative errors and the fitted log-log slope (the paper, arXiv 2606.29835, states an
O(m^{-3/2}) Edgeworth error; on these lattices the continuous expansion is limited by the
lattice span h ∝ 1/m, an O(m^{-2}) term, while the lattice expansion is near exact).

    python -m bench.edgeworth [--out reports/benchmarks]
"""

from __future__ import annotations

import argparse
import csv
import io
import math
from fractions import Fraction as F
from pathlib import Path

import mpmath

from accountant import Composition, DiscreteGaussian, gdp
from optimizer.atomic import atomic_write_text


def family(kind: str, m: int) -> Composition:
    if kind == "homogeneous":
        return Composition({DiscreteGaussian(F(m)): m})
    half = m // 2
    return Composition({DiscreteGaussian(F(2 * m, 3)): half, DiscreteGaussian(F(2 * m)): half})


def run(ms=(4, 8, 16, 32, 64), eps=2) -> list[dict]:
    rows = []
    for kind in ("homogeneous", "heterogeneous"):
        for m in ms:
            comp = family(kind, m)
            ex = comp.delta(eps)
            mu = math.sqrt(float(comp.mu2))
            vals = {
                "gdp": gdp.delta(mu, eps),
                "edgeworth_continuous": gdp.edgeworth_delta(comp, eps, lattice=False),
                "edgeworth_lattice": gdp.edgeworth_delta(comp, eps, lattice=True),
            }
            row = {
                "family": kind,
                "m": m,
                "mu2": str(comp.mu2),
                "eps": eps,
                "delta_exact": mpmath.nstr(ex.value, 20),
                "delta_exact_error": mpmath.nstr(ex.error, 3),
            }
            for k, v in vals.items():
                row[f"relerr_{k}"] = float(abs(v - ex.value) / ex.value)
            rows.append(row)
    return rows


def slopes(rows) -> dict:
    out = {}
    for kind in ("homogeneous", "heterogeneous"):
        sel = [r for r in rows if r["family"] == kind]
        for key in ("relerr_gdp", "relerr_edgeworth_continuous"):
            xs = [math.log(r["m"]) for r in sel]
            ys = [math.log(max(r[key], 1e-300)) for r in sel]
            n = len(xs)
            mx, my = sum(xs) / n, sum(ys) / n
            out[f"{kind}:{key}"] = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default="reports/benchmarks")
    args = ap.parse_args(argv)
    rows = run()
    print(f"{'family':>14} {'m':>4} {'exact δ':>22} {'GDP':>9} {'Edgew.cont':>11} {'Edgew.lat':>10}")
    for r in rows:
        print(
            f"{r['family']:>14} {r['m']:>4} {r['delta_exact']:>22} {r['relerr_gdp']:9.2e} "
            f"{r['relerr_edgeworth_continuous']:11.2e} {r['relerr_edgeworth_lattice']:10.2e}"
        )
    sl = slopes(rows)
    for k, v in sl.items():
        print(f"log-log slope {k}: {v:.2f}")
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]))
    w.writeheader()
    w.writerows(rows)
    atomic_write_text(Path(args.out) / "edgeworth.csv", buf.getvalue())  # atomic, never through a symlink
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
