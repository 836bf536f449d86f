"""A two-geolevel toy allocation shared by the report, provenance and output-integrity tests."""

TOY_ALLOC = """name = "toy"
run_type = "custom"
[[geolevel]]
name = "US"
queries = { total = "1/10", "age * sex" = "1/5" }
[[geolevel]]
name = "Block"
queries = { total = "3/10", "age * sex" = "2/5" }
"""
