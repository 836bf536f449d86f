"""Deterministic number printing: ``n`` significant digits, and bounds rounded exactly on their
safe side (upper bounds up, lower bounds down; :mod:`accountant.decimals`).
"""

from __future__ import annotations

from fractions import Fraction

import mpmath

from accountant.decimals import decimal_string


def to_mpf(x) -> mpmath.mpf:
    if isinstance(x, Fraction):
        return mpmath.mpf(x.numerator) / x.denominator
    if isinstance(x, str):
        try:
            return to_mpf(Fraction(x))
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
        v = to_mpf(x)
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


def pct(x, n: int = 4) -> str:
    if x is None or x == "":
        return "—"
    return f"{float(x):.{n}f} %" if n else f"{float(x):.0f} %"


def to_float(x) -> float | None:
    if x is None or x == "":
        return None
    try:
        return float(to_mpf(x))
    except (ValueError, TypeError):
        return None
