"""The run summary's schema: :class:`RunSummary`, the keys of ``optimize.json``.

A run's summary is stored as JSON, so it stays a mapping; this module types it (mypy checks
every key the pipeline writes and the report reads) and says what each key means. Exact
numbers are strings: fractions ``"p/q"`` (ρ, calibration factors) or decimals rounded on their
safe side (δ upper bounds up, lower bounds down). ``None`` means "not computed in this run"
(e.g. every confirmation key of a run with ``confirm=False``).

:data:`SEAL_KEYS` are added when the run is written (:func:`optimizer.jobs.provenance.seal`).
"""

from __future__ import annotations

from typing import Any, TypedDict

__all__ = ["SEAL_KEYS", "RunSummary", "summary_keys"]

Pair = list[int]  # a pair of spine paths [i, j], 1-based, i <= j


class RunSummary(TypedDict, total=False):
    """``optimize.json``: what one optimizer run found (see the module docstring)."""

    # ---- what was run
    scenario: str  # the scenario's name
    scenario_config: dict[str, Any] | None  # the scenario's settings as run (None: a bare allocation)
    allocation: str  # the baseline allocation's name
    conversion: str  # the zCDP → (ε, δ) conversion that states the promise
    target_epsilon: str  # the promised ε (exact decimal of the conversion at target_delta)
    target_delta: str  # the promised δ
    target: dict[str, Any]  # the target: kind (point/curve), ε, δ, the curve's points and their status
    baseline_total_rho: str  # the baseline's total ρ (fraction)
    weights: dict[str, str]  # query weights other than 1 ("geolevel/query": fraction)
    tolerances: dict[str, float]  # the accountant's tolerances in the search and the final checks
    # ---- the uniform rescale (every ρ_q multiplied by one factor 1/c)
    uniform_c: str  # its factor c (fraction), confirmed on all pairs when uniform_confirmed
    uniform_c_float: float  # c as a float, for display
    uniform_proxy_c: str  # c calibrated on the proxy pair alone
    uniform_proxy_delta: str  # the proxy pair's δ at the promised ε (upper bound)
    uniform_proxy_variance_drop_percent: float  # the variance drop of uniform_proxy_c
    uniform_variance_drop_percent: float  # the variance drop of uniform_c (100 (1 - 1/c))
    uniform_mean_relative_variance: str  # mean σ'²/σ² of the uniform rescale (1/c)
    uniform_confirmed: bool  # confirmed on all pairs
    uniform_confirm_recalibration: str | None  # factor applied to c after the all-pairs sweep
    uniform_release_delta_interval: list[str] | None  # [lower, upper] of the release's δ (worst pair)
    uniform_worst_pair: Pair | None  # the pair with the largest certified δ
    uniform_worst_pair_certain: bool | None  # no other pair's interval overlaps it
    uniform_worst_pair_delta: str | None  # its δ (upper bound)
    uniform_worst_pairs_tied: list[Pair] | None  # pairs whose intervals overlap the worst
    watched_pairs: list[Pair]  # pairs calibrated on besides the proxy (uniform stage)
    # ---- the zCDP optimum (convex, ρ-constrained) the search starts from
    zcdp_optimum_c: str  # its calibration factor on the proxy pair
    zcdp_optimum_variance_drop_percent: float  # its sum-variance drop, calibrated
    zcdp_optimum_shape_variance_drop_percent: float  # its sum-variance drop at the baseline's ρ
    zcdp_solver: dict[str, Any]  # solver, status, versions, objective value
    sum_variance_objective: str  # the formula of the sum-variance objective
    # ---- the optimized (reallocated) allocation
    objective: str  # the objective's name (optimizer.search.objectives)
    objective_description: str  # the objective in words
    objective_drop_percent: float  # the objective's improvement over the baseline
    objective_uniform_drop_percent: float  # the uniform rescale's improvement of the same objective
    optimized_variance_drop_percent: float  # its sum-variance drop
    optimized_c: str  # its calibration factor (fraction)
    optimized_total_rho: str  # its total ρ (fraction)
    new_total_rho: str  # the same (the name the report uses)
    optimized_proxy_delta: str  # the proxy pair's δ at the promised ε (upper bound)
    optimized_watched_pairs: list[Pair]  # pairs the optimized allocation was calibrated on
    mean_relative_variance: str  # mean σ'²/σ² over queries (decimal)
    min_variance_ratio: str  # the smallest σ'²/σ² (rounded down)
    max_variance_ratio: str  # the largest σ'²/σ² (rounded up): > 1 means a noisier query
    n_queries_noisier: int  # queries whose variance rises
    pareto: bool  # whether the Pareto guard (no query noisier) was asked
    pareto_floor_percent: str  # the guard's floor on every query's drop, in %
    pareto_guard_met: bool  # the proposal keeps the guard
    rounding: dict[str, Any] | None  # the proposal's grid and its cost: objective unrounded vs proposal
    # ---- the all-pairs confirmation of the optimized allocation
    confirmed: bool  # confirmed on all pairs
    confirm_skipped: bool  # the run skipped the confirmations (confirm=False)
    confirm_recalibration: str | None  # factor applied after the all-pairs sweeps
    confirm_seconds: float | None  # wall time of the confirmations
    confirmations: list[dict[str, Any]]  # one entry per allocation confirmed: sweeps, jobs, verdict
    n_pairs_confirmed: int  # pairs in the final sweep
    pair_sweeps: int  # all-pairs sweeps the run needed (both allocations)
    pair_jobs: dict[str, int] | None  # pair jobs per allocation ("uniform", "optimized")
    pair_jobs_not_exact: dict[str, int] | None  # of which ended in a non-exact engine
    pairs_not_exact: dict[str, int] | None  # pairs of the final sweep not certified exactly
    pairs_not_exact_planned: dict[str, int] | None  # the same, predicted before the sweep
    exactness_screen: dict[str, Any] | None  # the up-front screen: engines each pair will need
    release_delta_interval: list[str] | None  # [lower, upper] of the release's δ (worst pair)
    worst_pair: Pair | None  # the pair with the largest certified δ
    worst_pair_certain: bool | None  # no other pair's interval overlaps it
    worst_pair_delta: str | None  # its δ (upper bound)
    worst_pairs_tied: list[Pair] | None  # pairs whose intervals overlap the worst
    worst_pairs_recomputed: list[Pair]  # pairs recomputed at a tighter tolerance in the final sweep
    # ---- side effects and views (optimizer.pipeline.side_effects, optimizer.search.geolevels)
    delta_grid_weaker: dict[str, list[str]]  # δ of the old zCDP curve where each allocation is weaker
    published_variance: dict[str, Any] | None  # published (GLS) variance per fan-out, when available
    geolevels: dict[str, Any]  # each geolevel's own (ε, δ) promise, before and after
    decision: dict[str, Any]  # the decision table (optimizer.pipeline.decision): per promise, the confirmed cuts
    # ---- the search (Optuna over the convex start)
    seed: int  # the search's random seed
    study_name: str  # the Optuna study's name
    config_hash: str  # hash of the search configuration (the study's identity)
    trials_run: int  # trials run in this process (the study may hold more)
    trials_total: int  # trials in the study
    best_trial: int  # 0: the convex start won
    trials_per_minute: float  # the search's speed on this machine
    search_improved: bool  # whether the search beat its convex start
    search_note: str  # the same in one sentence
    # ---- the machine and the code
    seconds: float  # wall time of the run
    versions: dict[str, str]  # Python and package versions
    git_commit: str | None  # the commit of the code, when in a git checkout
    # ---- the seal (optimizer.jobs.provenance.seal), added on write
    outputs: dict[str, str]  # sha256 of each file of the run
    result_format: int  # the format version of the run directory
    run_inputs: dict[str, Any]  # everything the run depends on (allocation, target, code hash)
    run_hash: str  # sha256 of run_inputs: the run's identity
    checksum: str  # sha256 of the whole summary without itself: detects edits


#: the keys :func:`optimizer.jobs.provenance.seal` and :meth:`RunResult.write` add
SEAL_KEYS = frozenset({"outputs", "result_format", "run_inputs", "run_hash", "checksum"})


def summary_keys() -> frozenset[str]:
    """Every key :class:`RunSummary` declares."""
    return frozenset(RunSummary.__annotations__)
