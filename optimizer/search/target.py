"""The promised (ε, δ) a re-tuned allocation must meet, and the tolerances of the certified
evaluations that check it (final and inside the search).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction
from typing import Any

import mpmath

from accountant import zcdp
from accountant.exact import to_fraction
from accountant.tolerance import DELTA, SEARCH
from optimizer.census.allocation import Allocation

#: Certified δ tolerances used for the final (reported, compared-to-target) evaluations.
TOL_FINAL, RTOL_FINAL = DELTA.absolute, DELTA.relative
#: Looser tolerances inside the search (a trial's δ only needs ~10 correct digits; the final
#: allocation is re-certified with the final tolerances).
TOL_SEARCH, RTOL_SEARCH = SEARCH.absolute, SEARCH.relative


#: Digits of the target ε string (rounded *down*: a smaller ε is the conservative side).
EPS_DIGITS = 40


@dataclass(frozen=True)
class Target:
    """A promised (ε, δ) guarantee.

    Args:
        epsilon: ε as an exact decimal string (an ``mpf``/number is converted to a string of
            ``EPS_DIGITS`` digits rounded down — the conservative side).
        delta: δ as an exact decimal/fraction string (or a Fraction/int/float, converted).
        conversion: the zCDP → (ε, δ) conversion that defined the promise
            (``"bun-steinke"`` default, or ``"cks"``); informative only.
    """

    epsilon: str
    delta: str = "1e-10"
    conversion: str = "bun-steinke"

    def __post_init__(self):
        object.__setattr__(self, "epsilon", _decimal_string(self.epsilon, "epsilon"))
        object.__setattr__(self, "delta", _decimal_string(self.delta, "delta", exact=True))
        if self.conversion not in zcdp.CONVERSIONS:
            raise ValueError(f"Target: conversion must be one of {tuple(zcdp.CONVERSIONS)}, got {self.conversion!r}")
        if not self.epsilon_fraction > 0:
            raise ValueError(f"Target: epsilon must be > 0, got {self.epsilon}")
        if not 0 < self.delta_fraction < 1:
            raise ValueError(f"Target: delta must be in (0, 1), got {self.delta}")

    @property
    def epsilon_fraction(self) -> Fraction:
        return Fraction(self.epsilon)

    @property
    def delta_fraction(self) -> Fraction:
        return Fraction(self.delta)

    def as_dict(self) -> dict:
        return {"epsilon": self.epsilon, "delta": self.delta, "conversion": self.conversion}


def _decimal_string(x: Any, name: str, *, exact: bool = False) -> str:
    """``x`` as an exact decimal or fraction string (parsed by :func:`accountant.exact.to_fraction`, the
    one exact parser).  With ``exact`` (δ: a promise) a float is refused — its shortest decimal is not
    its value; otherwise (ε: a question) a float stands for its exact binary value."""
    if isinstance(x, str):
        text = x.strip()
        try:
            to_fraction(text, name=f"Target: {name}")
        except (TypeError, ValueError):
            raise ValueError(f"Target: {name} {x!r} is not a decimal or fraction string") from None
        return text
    if isinstance(x, bool):
        raise TypeError(f"Target: {name} must be a number or string, got {x!r}")
    if isinstance(x, (int, Fraction)):
        return str(x)
    if isinstance(x, float):
        if exact:
            raise TypeError(f"Target: {name} got float {x!r}; floats are not exact, write it as a string like '1e-10'")
        return str(Decimal(x))
    if isinstance(x, mpmath.mpf):
        with mpmath.workdps(EPS_DIGITS + 20):
            d = Decimal(mpmath.nstr(x, EPS_DIGITS + 15))
        with localcontext() as ctx:
            ctx.prec = 2 * EPS_DIGITS + 40
            q = d.quantize(Decimal(1).scaleb(d.adjusted() - EPS_DIGITS + 1), rounding=ROUND_FLOOR)
            return format(q.normalize(), "f")
    raise TypeError(f"Target: {name} must be a string, number or mpf, got {type(x).__name__}")


def target_from_allocation(alloc: Allocation, delta: Any = "1e-10", conversion: str = "bun-steinke") -> Target:
    """The promise of ``alloc``: ε = conversion(total ρ, δ), ε rounded down to 40 digits.

    >>> from optimizer.census.allocation import load_builtin
    >>> target_from_allocation(load_builtin("dhc-persons")).epsilon[:20]
    '26.34058885272232435'
    """
    if conversion not in zcdp.CONVERSIONS:
        raise ValueError(
            f"target_from_allocation: conversion must be one of {tuple(zcdp.CONVERSIONS)}, got {conversion!r}"
        )
    d = _decimal_string(delta, "delta", exact=True)
    return Target(zcdp.get_conversion(conversion).epsilon(alloc.total_rho, d), d, conversion)


def zcdp_claim_delta(rho: Fraction, eps: Any, conversion: str) -> mpmath.mpf:
    """δ the zCDP conversion claims for total ρ at ε."""
    return zcdp.get_conversion(conversion).delta(rho, eps)
