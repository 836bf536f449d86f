"""census-plb accountant: exact, certified privacy accounting of discrete Gaussian compositions.

Pure mathematics, no I/O.  Method: Su, Su & Wang, "A Sieve-Accelerated Quadrature Method for
Exact Privacy Accounting in the 2020 U.S. Decennial Census", arXiv 2606.29835, with a
saddle-point (exponentially tilted) contour so that tiny δ keep full relative precision.
"""

from . import gdp, zcdp
from .certified import Certified
from .composition import Composition, EpsilonResult, TradeoffCurve
from .engine import EngineConfig, EngineDiagnostics
from .exact import from_float, to_fraction
from .lattice import Lattice
from .mechanism import DiscreteGaussian
from .tolerance import Tolerance

__all__ = [
    "Certified",
    "Composition",
    "DiscreteGaussian",
    "EngineConfig",
    "EngineDiagnostics",
    "EpsilonResult",
    "Lattice",
    "Tolerance",
    "TradeoffCurve",
    "from_float",
    "gdp",
    "to_fraction",
    "zcdp",
]
