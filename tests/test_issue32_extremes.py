"""Issue 32, items 2–4: printing at astronomically small δ, extreme but valid input, threads.

* item 2 — `account --sigma2 1 --eps 1e5` took 34 s in the decimal printing of δ ≈ 10^(−2·10^9)
  (the math takes 0.2 ms): an mpf end point was turned into a fraction with a 7·10^9-bit
  denominator.  Printing now keeps the binary exponent (``accountant.decimals._dyadic``).
* item 3 — MemoryError / "too many digits in integer" / Python's int-size message for
  `--sigma2 1e12 --eps 500`, `--eps 1e30`, `--eps 1e309`, `--digits 100000`: each is now a
  certified, flagged bound, or an exit-2 error naming the option and its range.
* item 4 — three threads calling ``Composition.delta`` got intervals different from a
  single-threaded run (the working precision is per process): public calls are serialised.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from fractions import Fraction

import mpmath
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from accountant import Composition, DiscreteGaussian, decimals
from optimizer.cli.main import main


def _run(capsys, *argv: str) -> tuple[int, str, str, float]:
    t0 = time.perf_counter()
    rc = main(["account", *argv])
    dt = time.perf_counter() - t0
    cap = capsys.readouterr()
    return rc, cap.out, cap.err, dt


# ---------------------------------------------------------------- item 2: printing speed
@pytest.mark.parametrize("eps", ["1e5", "1.5e5"])
def test_tiny_delta_prints_in_a_second(capsys, eps):
    """δ(1e5) of one σ² = 1 Gaussian is ≈ 10^(−2.17·10^9): the call answers (flagged) at once."""
    rc, out, err, dt = _run(capsys, "--sigma2", "1", "--eps", eps, "--json")
    assert rc == 0, err
    assert dt < 3.0, f"account --eps {eps} took {dt:.1f} s"
    row = json.loads(out)["delta"][0]
    assert row["tolerance_met"] is False  # a bound [0, e^(−k²/2v)], flagged
    assert row["delta_lower"] == "0.0"
    mant, exp = row["delta_upper"].split("e")
    assert 1 <= float(mant) < 10 and int(exp) < -2_000_000_000


def _exact_digits(x: Fraction, n: int, mode: str) -> tuple[int, int]:
    """(q, e10) with q an n-digit integer, q·10^(e10−n+1) the directed rounding of x > 0, by exact
    integer arithmetic (independent of accountant.decimals)."""
    e10 = int((x.numerator.bit_length() - x.denominator.bit_length()) * 0.30103)  # then corrected
    while Fraction(10) ** e10 > x:
        e10 -= 1
    while Fraction(10) ** (e10 + 1) <= x:
        e10 += 1
    scaled = x / Fraction(10) ** (e10 - n + 1)
    q = scaled.numerator // scaled.denominator
    if mode == "up" and q != scaled:
        q += 1
    if q >= 10**n:
        q, e10 = -(-q // 10) if mode == "up" else q // 10, e10 + 1
    return q, e10


def _parse(s: str, n: int = 20) -> tuple[int, int]:
    """(q, e10) of a scientific string of n significant digits."""
    mant, e = s.split("e")
    return int(mant.replace(".", "")[:n]), int(e)


@settings(max_examples=60, deadline=None)
@given(
    man=st.integers(1, 2**200),
    exp=st.integers(-60_000, 60_000),
    n=st.integers(1, 30),
    mode=st.sampled_from(["down", "up"]),
)
# a mantissa wider than the working precision: built at 53 bits, the number was 5e16, not this one
@example(man=49_999_999_999_999_996, exp=0, n=1, mode="down")
def test_huge_exponent_path_rounds_on_its_side(man, exp, n, mode):
    """Beyond 10^±4000 the mantissa comes from binary arithmetic with a margin: the printed
    directed decimal is on its side of the exact value and at most one unit in the last digit
    away from the exact directed rounding (computed here by integer arithmetic). The number is
    built at the mantissa's own precision, so it is exactly man·2^exp."""
    with mpmath.workprec(max(53, man.bit_length())):
        x = mpmath.mpf((0, man, exp, man.bit_length()))
    assert x._mpf_[1] << max(x._mpf_[2] - exp, 0) == man << max(exp - x._mpf_[2], 0)  # exactly man·2^exp
    s = decimals.decimal_string(x, n, mode)
    exact = Fraction(man) * Fraction(2) ** exp
    q, e10 = _parse(s, n)
    printed = Fraction(q) * Fraction(10) ** (e10 - n + 1)
    assert printed <= exact if mode == "down" else printed >= exact
    qx, ex = _exact_digits(exact, n, mode)
    ulp = Fraction(10) ** (ex - n + 1)
    assert abs(printed - Fraction(qx) * Fraction(10) ** (ex - n + 1)) <= ulp


def test_mid_and_error_of_a_huge_interval_without_fractions():
    """The midpoint and half-width of [0, 2^(−7·10^9)] print in well under a second."""
    from accountant import Certified

    hi = mpmath.mpf((0, 3, -7_000_000_000, 2))
    t0 = time.perf_counter()
    c = Certified(mpmath.mpf(0), hi)
    mid = decimals.mid_decimal(c, 20)
    err = decimals.format_error_up(c)
    lo_s, hi_s = decimals.format_interval(c, 20)
    assert time.perf_counter() - t0 < 1.0
    assert lo_s == "0.0"
    # 3·2^(−7e9) = 10^(log10 3 − 7e9·log10 2)
    e = -7_000_000_000 * mpmath.log10(2) + mpmath.log10(3)
    assert _parse(hi_s)[1] == int(mpmath.floor(e))
    assert _parse(mid)[1] == int(mpmath.floor(e - mpmath.log10(2)))
    assert _parse(err)[1] == _parse(mid)[1]


# ---------------------------------------------------------------- item 3: extreme input
@pytest.mark.parametrize(
    "argv",
    [
        ("--sigma2", "1e12", "--eps", "500"),
        ("--sigma2", "1e12", "--eps", "1e4"),
        ("--sigma2", "10", "--eps", "1e30"),
        ("--sigma2", "1", "--eps", "1e309"),
        ("--sigma2", "1", "--eps", "1e1000"),
    ],
)
def test_extreme_valid_input_gives_a_flagged_certified_bound(capsys, argv):
    rc, out, err, dt = _run(capsys, *argv, "--json")
    assert rc == 0, err
    assert dt < 5.0
    row = json.loads(out)["delta"][0]
    assert row["tolerance_met"] is False
    assert row["delta_lower"] == "0.0" and "e-" in row["delta_upper"]


@pytest.mark.parametrize(
    "argv, words",
    [
        (("--sigma2", "1", "--eps", "1e1001"), ("--eps", "1e1001", "[0, 1e1000]")),
        (("--sigma2", "1", "--eps", "1e100000"), ("--eps", "1e100000", "[0, 1e1000]")),
        (("--sigma2", "1", "--eps", "1", "--digits", "100000"), ("--digits", "100000", "[1, 1000]")),
        (("--sigma2", "1", "--eps", "1", "--digits", "0"), ("--digits", "[1, 1000]")),
    ],
)
def test_out_of_range_options_are_named_with_their_range(capsys, argv, words):
    rc, _, err, dt = _run(capsys, *argv)
    assert rc == 2
    line = err.strip()
    assert line.count("\n") == 0 and dt < 3.0
    for w in words:
        assert w in line, (w, line)


def test_library_refuses_eps_beyond_its_range_without_echoing_it():
    comp = Composition([DiscreteGaussian(1)])
    huge = "1e" + "9" * 200
    with pytest.raises(ValueError, match=r"eps\[0\].*beyond ±100000") as exc:
        comp.delta(huge)
    assert len(str(exc.value)) < 150
    with pytest.raises(ValueError, match=r"eps\[0\]: must be in \[0, 1e1000\]"):
        comp.delta("1e1001")


# ---------------------------------------------------------------- item 4: threads
#: rounds per thread (on the unserialised code one round in four or five differed)
ROUNDS = 8


def _compositions() -> list[Composition]:
    return [
        Composition([DiscreteGaussian(Fraction(10000, 73))] * 3 + [DiscreteGaussian(Fraction(7, 3))]),
        Composition([DiscreteGaussian(Fraction(5, 2)), DiscreteGaussian(Fraction(41, 7))] * 2),
        Composition([DiscreteGaussian(Fraction(1, 3))] * 5 + [DiscreteGaussian(Fraction(11, 2))]),
    ]


def _key(c) -> tuple[str, str]:
    return decimals.format_interval(c, 30)


def test_threads_give_the_single_threaded_intervals():
    """Three threads, each on its own composition, ε values chosen to use different working
    precisions: every interval equals the one of a sequential run."""
    eps = [Fraction(1, 2), Fraction(3), Fraction(7, 5), Fraction(9)]
    expected = [[_key(c.delta(e)) for e in eps] for c in _compositions()]
    comps = _compositions()
    got: list[list[list[tuple[str, str]]]] = [[] for _ in comps]
    errors: list[BaseException] = []
    start = threading.Barrier(len(comps))

    def work(i: int) -> None:
        try:
            start.wait()
            for _ in range(ROUNDS):
                got[i].append([_key(comps[i].delta(e)) for e in eps])
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(comps))]
    old = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # switch threads often: between a precision change and its use
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        sys.setswitchinterval(old)
    assert not errors, errors
    for i, runs in enumerate(got):
        assert len(runs) == ROUNDS
        for run in runs:
            assert run == expected[i], f"composition {i}: a threaded run differs from the sequential one"
