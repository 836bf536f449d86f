"""A two-geolevel toy allocation shared by the report, provenance and output-integrity tests.

Its noise is Census-like (σ² of 250 … 1000), where the accountant answers in milliseconds; at
σ² of 2.5 … 10 (the toy's budgets × 100, its first version) an optimized allocation's fine lattice
costs seconds per δ, which made the tests that run the optimizer on it take minutes."""

TOY_ALLOC = """name = "toy"
run_type = "custom"
[[geolevel]]
name = "US"
queries = { total = "1/1000", "age * sex" = "1/500" }
[[geolevel]]
name = "Block"
queries = { total = "3/1000", "age * sex" = "1/250" }
"""

#: a scenario of the toy allocation (written beside it as ``alloc.toml``)
TOY_SCENARIO = """name = "toy"
description = "synthetic test scenario"
allocation = "alloc.toml"
conversion = "bun-steinke"
target_delta = "1e-10"
trials = 2
seed = 7
"""
