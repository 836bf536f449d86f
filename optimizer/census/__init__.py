"""The 2020 Census model: allocations (an exact zCDP budget per geolevel and query), the spine paths
a record's change runs along, the pairs of paths whose composition is a release's guarantee, and the
per-geolevel view.  Modules: :mod:`~optimizer.census.allocation`, :mod:`~optimizer.census.spine`,
:mod:`~optimizer.census.pairs`, :mod:`~optimizer.census.geolevels`.
"""
