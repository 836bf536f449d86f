"""The built-in scenarios: TOML files read by :mod:`optimizer.scenario` (data only), their
allocations (``allocations/``), and :mod:`scenarios.compare`, a shortcut for
``census-plb scenario compare``."""
