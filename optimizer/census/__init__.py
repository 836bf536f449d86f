"""The 2020 Census model: allocations (an exact zCDP budget per geolevel and query), the spine paths
a record's change runs along, and the pairs of paths whose composition is a release's guarantee.
Modules: :mod:`~optimizer.census.allocation`, :mod:`~optimizer.census.spine`,
:mod:`~optimizer.census.pairs`; their public names are re-exported here, except the function
``pairs.pairs`` (it would hide the module :mod:`~optimizer.census.pairs` behind its name).  The
per-geolevel view of promises is :mod:`optimizer.search.geolevels` (it calibrates with the search).
"""

from __future__ import annotations

from optimizer.census.allocation import (
    BUILTIN_NAMES,
    RUN_TYPES,
    Allocation,
    AllocationError,
    GeolevelBudget,
    load_builtin,
)
from optimizer.census.pairs import (
    MAIN_PAIR,
    WorstCase,
    WorstPairVerdict,
    dhc_persons_paths,
    lower_convex_envelope,
    lower_convex_envelope_decimal,
    pair_composition,
    paths_from_allocation,
    worst_case,
    worst_pair_rule,
)
from optimizer.census.spine import all_patterns, dhc_persons_patterns, path_allocation, patterns_for

__all__ = [
    "BUILTIN_NAMES",
    "MAIN_PAIR",
    "RUN_TYPES",
    "Allocation",
    "AllocationError",
    "GeolevelBudget",
    "WorstCase",
    "WorstPairVerdict",
    "all_patterns",
    "dhc_persons_paths",
    "dhc_persons_patterns",
    "load_builtin",
    "lower_convex_envelope",
    "lower_convex_envelope_decimal",
    "pair_composition",
    "path_allocation",
    "paths_from_allocation",
    "patterns_for",
    "worst_case",
    "worst_pair_rule",
]
