"""Issue 13, item 11: loading an allocation CSV is linear in its number of rows.

A 10⁵-row file used to take ~2 minutes (a per-row ``tuple.index`` lookup in the declared-column
check made loading quadratic).
"""

import time
from fractions import Fraction

from optimizer.census.allocation import Allocation

N_LEVELS, N_QUERIES = 2, 50000  # 10⁵ rows, most of them at one geolevel (the slow case)


def _write(path, n_levels: int, n_queries: int, derived: bool = False) -> Fraction:
    """A custom-geography allocation CSV; returns the exact total it must add up to."""
    head = "geolevel,query,rho_exact" + (",sigma_sq_exact" if derived else "")
    lines, total = [head], Fraction(0)
    for g in range(n_levels):
        for q in range(n_queries):
            rho = Fraction(1 + (g * n_queries + q) % 97, 100000)
            total += rho
            row = f"L{g},q{q},{rho.numerator}/{rho.denominator}"
            lines.append(row + (f",{1 / rho}" if derived else ""))
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return total


def test_1e5_rows_load_in_seconds(tmp_path):
    path = tmp_path / "big.csv"
    total = _write(path, N_LEVELS, N_QUERIES)
    t0 = time.perf_counter()
    alloc = Allocation.from_csv(path, run_type=None)
    seconds = time.perf_counter() - t0
    assert alloc.n_queries == N_LEVELS * N_QUERIES
    assert alloc.total_rho == total
    last = N_LEVELS * N_QUERIES - 1
    assert alloc.rho_of(f"L{N_LEVELS - 1}", f"q{N_QUERIES - 1}") == Fraction(1 + last % 97, 100000)
    assert seconds < 10, f"loading 10^5 rows took {seconds:.1f} s"


def test_many_geolevels_and_derived_column_stay_linear(tmp_path):
    # 2·10⁴ geolevels of 2 queries (geolevel checks) with the optional sigma_sq_exact column checked
    path = tmp_path / "wide.csv"
    total = _write(path, 20000, 2, derived=True)
    t0 = time.perf_counter()
    alloc = Allocation.from_csv(path, run_type=None)
    seconds = time.perf_counter() - t0
    assert len(alloc.geolevels) == 20000 and alloc.total_rho == total
    assert seconds < 10, f"loading 2*10^4 geolevels took {seconds:.1f} s"


def test_scaling_is_roughly_linear(tmp_path):
    """10× the rows costs well under 100× the time (quadratic would be ~100×)."""
    small, big = tmp_path / "small.csv", tmp_path / "big.csv"
    _write(small, 1, 5000)
    _write(big, 1, 50000)

    def best(path):
        times = []
        for _ in range(2):
            t0 = time.perf_counter()
            Allocation.from_csv(path, run_type=None)
            times.append(time.perf_counter() - t0)
        return min(times)

    assert best(big) < 30 * best(small) + 0.5
