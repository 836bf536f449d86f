"""Compositions of discrete Gaussian mechanisms and their exact privacy profiles.

STUB: the numeric engine is being written (see accountant/quadrature.py).
"""
from __future__ import annotations


class Composition:  # placeholder until the engine lands
    pass


class EpsilonResult:
    pass


class TradeoffCurve:
    pass
