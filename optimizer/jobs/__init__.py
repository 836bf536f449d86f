"""Running the pair jobs of a release and sealing what they computed: the process-pool (or Dask)
runner with its per-job cache, the all-pairs confirmation, the release profile (the per-pair,
per-ε table of a release), the exactness screen that says before a run which pairs the exact
engines can reach, and the provenance (code version, input hashes) that keys every cached result.
Modules: :mod:`~optimizer.jobs.runner`, :mod:`~optimizer.jobs.confirm`, :mod:`~optimizer.jobs.profile`,
:mod:`~optimizer.jobs.exactness`, :mod:`~optimizer.jobs.provenance` (atomic writes: the shared
leaf :mod:`optimizer.atomic`).
"""
