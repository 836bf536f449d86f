"""Stage 3: an Optuna TPE search over per-geolevel and per-query log-multipliers of the shape,
every trial calibrated by stage 1 so it meets the target exactly; studies resumable under a lock.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import socket
import sys
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

from accountant.decimals import outward
from optimizer.census.allocation import Allocation
from optimizer.environment import versions
from optimizer.search.calibrate import XTOL_SEARCH, _calibrate_rhos, _note, calibrate_shape
from optimizer.search.convex import zcdp_optimum
from optimizer.search.grid import GRID_SIZES, grid_shape
from optimizer.search.proxy import _full_path_rho
from optimizer.search.target import RTOL_SEARCH, TOL_SEARCH, Target
from optimizer.search.variance import _weights, objective


@dataclass
class SearchResult:
    """Outcome of :func:`reallocate`."""

    allocation: Allocation  # calibrated, certified best allocation
    c: Fraction  # calibration factor of the best shape
    delta: Any  # certified proxy δ(target ε) of ``allocation``
    objective: float
    baseline_objective: float
    study_name: str
    n_trials_total: int
    n_trials_run: int
    best_trial: int
    best_params: dict
    config_hash: str
    seconds: float
    trials_per_minute: float
    seconds_per_trial: float
    evaluations_per_trial: float
    bound: float
    info: dict = field(default_factory=dict)

    @property
    def variance_drop_percent(self) -> float:
        return 100.0 * (1.0 - self.objective / self.baseline_objective)


def config_hash(alloc: Allocation, target: Target, weights=None, extra: Mapping | None = None) -> str:
    """sha256 of the canonical JSON of everything that defines a search (trial count excluded)."""
    w = _weights(alloc, weights)
    doc = {
        "allocation": [[g, q, str(r)] for g, q, r in alloc.items()],
        "target": target.as_dict(),
        "weights": [[g, q, repr(w[(g, q)])] for g, q, _ in alloc.items()],
        "shape_grid_sizes": [list(s) for s in GRID_SIZES],
        "extra": dict(extra or {}),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def resolve_storage(storage: Any, scenario: str | None = None, runs_dir: str | Path = "runs"):
    """Optuna storage: an object as is; ``"sqlite:///…"``-style URLs; other strings/paths =
    journal files; ``None`` = ``runs/<scenario>/optuna.journal`` (in memory without a scenario)."""
    import optuna  # noqa: PLC0415 - only a search with trials > 0 needs it
    from optuna.storages import JournalStorage  # noqa: PLC0415 - only a search with trials > 0 needs it
    from optuna.storages.journal import JournalFileBackend  # noqa: PLC0415 - only a search with trials > 0 needs it

    if storage is None:
        if scenario is None:
            return optuna.storages.InMemoryStorage()
        storage = Path(runs_dir) / scenario / "optuna.journal"
    if isinstance(storage, (str, Path)):
        text = str(storage)
        if text == ":memory:":
            return optuna.storages.InMemoryStorage()
        if "://" in text:
            return text
        Path(text).parent.mkdir(parents=True, exist_ok=True)
        return JournalStorage(JournalFileBackend(text))
    return storage


def _param_names(alloc: Allocation) -> tuple[list[str], list[str]]:
    gnames = [f"g:{g}" for g in alloc.geolevels]
    qnames = [f"q:{g}/{q}" for g, q, _ in alloc.items()]
    return gnames, qnames


def _shape_params(alloc: Allocation, shape: Allocation) -> dict[str, float]:
    """Log-multipliers expressing ``shape`` relative to ``alloc`` (geolevel mean + residual)."""
    out: dict[str, float] = {}
    base = {(g, q): r for g, q, r in alloc.items()}
    new = {(g, q): r for g, q, r in shape.items()}
    total_ratio = math.log(float(shape.total_rho) / float(alloc.total_rho))
    for lv in alloc.levels:
        logs = [math.log(float(new[(lv.name, q)]) / float(base[(lv.name, q)])) - total_ratio for q in lv.queries]
        m = math.fsum(logs) / len(logs)
        out[f"g:{lv.name}"] = m
        for q, v in zip(lv.queries, logs):
            out[f"q:{lv.name}/{q}"] = v - m
    return out


def _shape_from_params(alloc: Allocation, params: Mapping[str, float]) -> Allocation:
    """Quantised shape ρ_q ∝ ρ_base_q·exp(a_g + b_q), normalised to the baseline total."""
    raw = []
    for g, q, r in alloc.items():
        raw.append(float(r) * math.exp(params.get(f"g:{g}", 0.0) + params.get(f"q:{g}/{q}", 0.0)))
    keys = [(g, q) for g, q, _ in alloc.items()]
    return grid_shape(alloc, dict(zip(keys, raw)), None, alloc.total_rho).allocation


def _versions() -> dict[str, str]:
    """The versions a study records (:func:`optimizer.environment.versions`)."""
    return versions()


def _journal_path(storage: Any, scenario: str | None, runs_dir: str | Path = "runs") -> Path | None:
    """The local file a study in ``storage`` lives in, which :func:`study_lock` locks: the journal
    file :func:`resolve_storage` uses, or the database file of a ``sqlite:///FILE`` URL.  ``None``
    for in-memory studies, storage objects and database servers (``postgresql://…``, …), which
    several processes or machines may share on purpose (:func:`_shared_seed`)."""
    if storage is None:
        return None if scenario is None else Path(runs_dir) / scenario / "optuna.journal"
    if isinstance(storage, (str, Path)):
        text = str(storage)
        if text == ":memory:":
            return None
        if "://" not in text:
            return Path(text)
        scheme, _, rest = text.partition("://")
        if scheme.split("+")[0].lower() == "sqlite" and rest.startswith("/") and rest not in ("/", "/:memory:"):
            return Path(rest[1:].split("?")[0])  # sqlite:///rel.db → rel.db, sqlite:////abs.db → /abs.db
    return None


def _shared_seed(seed: int, n_trials_before: int, process: str) -> int:
    """The sampler seed of a run on a study that other processes may be using at the same time
    (a database server, not locked): derived from ``seed``, the trials already there and this
    process's identity, so concurrent runs draw different parameters and share their trials."""
    digest = hashlib.sha256(f"census-plb-shared:{seed}:{n_trials_before}:{process}".encode()).hexdigest()
    return int(digest[:8], 16)


class StudyLockedError(RuntimeError):
    """Another live process is running trials on the same study journal."""


@contextlib.contextmanager
def study_lock(journal: str | Path):
    """Hold ``<journal>.run.lock`` (an advisory ``flock``; the file names the owner's pid, host and
    start time) for the duration of the block.  A lock file left by a dead process is not held by
    anyone and is taken over; a live owner makes this raise :class:`StudyLockedError`."""
    try:
        import fcntl  # noqa: PLC0415 - POSIX only; the except below runs elsewhere
    except ImportError:  # not POSIX: no advisory locks; run unlocked, say so
        warnings.warn(
            f"study_lock: no fcntl on this platform; {journal} is not protected against concurrent runs", stacklevel=3
        )
        yield None
        return
    path = Path(str(journal) + ".run.lock")  # not ".lock": Optuna's JournalFileBackend uses that itself
    path.parent.mkdir(parents=True, exist_ok=True)
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            try:
                owner = json.loads(os.read(fd, 4096).decode() or "{}")
            except ValueError:
                owner = {}
            os.close(fd)
            raise StudyLockedError(
                f"optuna study journal {journal} is in use by pid {owner.get('pid', '?')} on "
                f"{owner.get('host', '?')} (since {owner.get('started', '?')}); another `census-plb optimize` is "
                f"running trials on this study: wait for it to finish, or give another --storage / --out"
            ) from None
        try:
            same = os.fstat(fd).st_ino == os.stat(path).st_ino  # not unlinked by a finishing owner meanwhile
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)
    try:
        os.ftruncate(fd, 0)
        os.write(
            fd,
            json.dumps(
                {"pid": os.getpid(), "host": socket.gethostname(), "started": time.strftime("%Y-%m-%dT%H:%M:%S%z")}
            ).encode(),
        )
        os.fsync(fd)
        yield path
    finally:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        os.close(fd)


def _resume_seed(seed: int, n_trials_before: int) -> int:
    """The sampler seed of a run that finds ``n_trials_before`` trials in its study: ``seed`` for a
    fresh study (reproducible), else derived from both, so a resumed study draws new parameters."""
    if n_trials_before == 0:
        return seed
    digest = hashlib.sha256(f"census-plb-resume:{seed}:{n_trials_before}".encode()).hexdigest()
    return int(digest[:8], 16)


def reallocate(
    alloc: Allocation,
    target: Target,
    weights: Mapping[tuple[str, str], Any] | None = None,
    n_trials: int = 30,
    seed: int = 0,
    storage: Any = None,
    *,
    scenario: str | None = None,
    **kw,
) -> SearchResult:
    journal = _journal_path(storage, scenario)
    with study_lock(journal) if journal is not None else contextlib.nullcontext():
        return _reallocate(
            alloc, target, weights, n_trials, seed, storage, scenario=scenario, exclusive=journal is not None, **kw
        )


def _reallocate(
    alloc: Allocation,
    target: Target,
    weights: Mapping[tuple[str, str], Any] | None = None,
    n_trials: int = 30,
    seed: int = 0,
    storage: Any = None,
    *,
    scenario: str | None = None,
    bound: float = 1.0,
    uniform_c: Fraction | None = None,
    zcdp_shape: Allocation | None = None,
    progress: bool = True,
    log=None,
    exclusive: bool = False,
    score: Callable[[Allocation], float] | None = None,
    violation: Callable[[Allocation], float] | None = None,
    study_extra: Mapping[str, Any] | None = None,
) -> SearchResult:
    """Stage 3: Optuna TPE over per-geolevel and per-query log-multipliers of the shape.

    Each trial's shape ρ_q ∝ ρ*_q·exp(a_g + b_q), a, b ∈ [−bound, bound], is centred on the
    zCDP-optimum shape ρ* of stage 2 (random shapes far from it were 100–1500× worse), is
    put on the proposal grid (:mod:`optimizer.search.grid`), calibrated by stage-1
    root-finding on the proxy so that it meets ``target`` exactly, and scored by
    :func:`objective`.  The study (``TPESampler(seed,
    multivariate=True)``, ``NopPruner``, ask/tell) is stored in ``storage`` (see
    :func:`resolve_storage`) under ``"<scenario>-<config hash[:12]>"`` with
    ``load_if_exists=True``: calling again continues the same study — ``n_trials`` *more*
    trials.  A new study is seeded with the zCDP-optimum shape and the Bureau's shape
    (clipped to the bounds).

    Resuming: the sampler seed of a run that finds k trials in the study is derived from
    (``seed``, k) (:func:`_resume_seed`), so it continues with new parameters instead of
    re-drawing the first run's.  A journal-file study is used by one process at a time
    (:func:`study_lock`, ``<journal>.run.lock``; a second run refuses with the owner's pid); trials
    left RUNNING by an interrupted run are then marked FAILED, and a seed shape lost that way is
    queued again.  A ``sqlite:///FILE`` URL is locked the same way (on ``FILE.run.lock``).  A
    database server URL is not locked: it is how Optuna shares one study between processes, so
    such a run draws from a seed mixed with its process identity (:func:`_shared_seed`) and uses
    every trial in the study; RUNNING trials there may belong to live runs and are left alone.

    Objective and guard: by default a trial scores :func:`objective` (weighted sum of
    variances). ``score`` replaces it (a function of the trial's calibrated allocation, lower is
    better); ``violation`` (≥ 0, 0 when a constraint such as the Pareto guard holds) multiplies the
    score by ``1 + 1000·violation``, so infeasible shapes rank behind every feasible one of similar
    score — the caller must still check the returned allocation. ``study_extra`` (the objective's
    name, the guard, …) enters the study's config hash, so a study of another objective is never
    resumed.

    Returns:
        :class:`SearchResult` with the best shape re-calibrated with the final tolerances.
    """
    if n_trials < 0:
        raise ValueError(f"reallocate: n_trials must be >= 0, got {n_trials}")
    t_start, say = time.perf_counter(), log or (lambda msg: print(msg, file=sys.stderr, flush=True))
    w = _weights(alloc, weights)
    base_obj = objective(alloc, w)
    uniform_c = uniform_c if uniform_c is not None else calibrate_shape(alloc, target, hint=1.1, final=False).c
    # the search is centred on the zCDP-optimum shape (the best the zCDP world can do); trials
    # explore log-multipliers around it, and the Bureau's shape is enqueued as a second seed
    center, bound = (zcdp_shape if zcdp_shape is not None else zcdp_optimum(alloc, w)), float(bound)
    study, name, chash, distributions = _open_study(
        alloc, target, w, center, storage, scenario, seed, bound, exclusive, study_extra, say
    )
    slope, hint_total, t_trials, evals = 30.0, float(uniform_c), time.perf_counter(), 0
    base_val = score(alloc) if score is not None else base_obj
    for _k in range(n_trials):
        t0 = time.perf_counter()
        trial = study.ask(distributions)
        value, c, n_eval = _run_trial(trial, center, alloc, target, w, hint_total, slope, score, violation)
        evals += n_eval
        study.tell(trial, value)
        if progress:
            say(_trial_line(trial, value, study.best_value, base_val, c, n_eval, time.perf_counter() - t0))
    timing = (t_start, time.perf_counter() - t_trials, evals, n_trials, hint_total, slope)
    return _best_result(study, name, chash, center, alloc, target, w, base_obj, bound, timing)


def _best_result(study, name, chash, center, alloc, target, w, base_obj, bound, timing) -> SearchResult:
    """The study's best shape re-calibrated with the final tolerances, as a
    :class:`SearchResult`; ``timing`` = (start, seconds of the trials, δ evaluations, trials run,
    hint of the factor, slope)."""
    import optuna  # noqa: PLC0415 - only a search with trials > 0 needs it

    t_start, t_trials, evals, n_trials, hint_total, slope = timing
    best = study.best_trial
    best_shape = _shape_from_params(center, best.params)
    hint = float(Fraction(best.user_attrs["c"])) if "c" in best.user_attrs else hint_total
    cal = calibrate_shape(best_shape, target, hint=hint, slope=slope, final=True)
    final = Allocation(
        cal.allocation.levels,
        alloc.name,
        _note(alloc.provenance, f"optuna study {name}, trial {best.number}; calibrated x {cal.c}"),
        alloc.run_type,
    )
    n_done = len([t for t in study.trials if t.state == optuna.trial.TrialState.COMPLETE])
    return SearchResult(
        allocation=final,
        c=cal.c,
        delta=cal.delta,
        objective=objective(final, w),
        baseline_objective=base_obj,
        study_name=name,
        n_trials_total=n_done,
        n_trials_run=n_trials,
        best_trial=best.number,
        best_params=dict(best.params),
        config_hash=chash,
        seconds=time.perf_counter() - t_start,
        trials_per_minute=(60.0 * n_trials / t_trials) if n_trials and t_trials > 0 else float("nan"),
        seconds_per_trial=(t_trials / n_trials) if n_trials else float("nan"),
        evaluations_per_trial=(evals / n_trials) if n_trials else float("nan"),
        bound=bound,
        info={"best_seed_shape": best.user_attrs.get("seed_shape")},
    )


def _open_study(alloc, target, w, center, storage, scenario, seed, bound: float, exclusive, study_extra, say):
    """The Optuna study of this search (created, or resumed with a sampler seeded for the resume; trials
    an interrupted run left RUNNING failed and their seed shapes queued again; a new study seeded with
    the zCDP-optimum and the baseline shapes): ``(study, name, config hash, distributions)``."""
    import optuna  # noqa: PLC0415 - only a search with trials > 0 needs it

    seed_params = _shape_params(center, alloc)
    chash = config_hash(
        alloc,
        target,
        w,
        {
            "bound": bound,
            "seed": seed,
            "center": "zcdp-optimum",
            "shape_grid_sizes": [list(s) for s in GRID_SIZES],
            **dict(study_extra or {}),
        },
    )
    name = f"{scenario or alloc.name}-{chash[:12]}"
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    study = optuna.create_study(
        study_name=name,
        storage=resolve_storage(storage, scenario),
        direction="minimize",
        sampler=optuna.samplers.TPESampler(seed=seed, multivariate=True),
        pruner=optuna.pruners.NopPruner(),
        load_if_exists=True,
    )
    gnames, qnames = _param_names(alloc)
    dist = optuna.distributions.FloatDistribution(-bound, bound)
    distributions: dict[str, optuna.distributions.BaseDistribution] = dict.fromkeys(gnames + qnames, dist)
    n_before = len(study.trials)
    if not exclusive and isinstance(storage, str) and "://" in storage:  # a shared database: not locked
        process = f"{socket.gethostname()}:{os.getpid()}:{time.time_ns()}"
        study.sampler = optuna.samplers.TPESampler(seed=_shared_seed(seed, n_before, process), multivariate=True)
        say(
            f"storage {storage.partition('://')[0]}://… is a shared database (not locked): runs on it at the same "
            "time share the study's trials, each drawing its own parameters (this run is not reproducible by seed)"
        )
    elif n_before:
        study.sampler = optuna.samplers.TPESampler(seed=_resume_seed(seed, n_before), multivariate=True)
    if n_before and exclusive:  # we hold the study's lock: RUNNING trials belong to dead runs
        TS = optuna.trial.TrialState
        for t in study.get_trials(deepcopy=False, states=(TS.RUNNING,)):
            study.tell(t.number, state=TS.FAIL)
            say(f"trial {t.number} was left running by an interrupted run: marked FAILED")
        trials = study.get_trials(deepcopy=False)
        have = {t.user_attrs.get("seed_shape") for t in trials if t.state in (TS.COMPLETE, TS.WAITING)}
        for t in trials:
            label = t.user_attrs.get("seed_shape")
            if t.state == TS.FAIL and label and label not in have:
                study.enqueue_trial(t.system_attrs.get("fixed_params") or t.params, user_attrs={"seed_shape": label})
                have.add(label)
    if not study.trials:
        study.set_user_attr("versions", _versions())
        study.set_user_attr("config_hash", chash)
        study.set_user_attr("target", target.as_dict())
        study.set_user_attr("bound", bound)
        study.set_user_attr("objective", "sum_q w_q / rho_q (weighted variance, sigma_q^2 = 1/rho_q)")
        study.enqueue_trial(dict.fromkeys(distributions, 0.0), user_attrs={"seed_shape": "zcdp-optimum"})
        study.enqueue_trial(
            {n: min(max(seed_params[n], -bound), bound) for n in distributions},
            user_attrs={"seed_shape": "baseline (clipped to the bounds)"},
        )
    return study, name, chash, distributions


def _trial_line(trial, value: float, best: float, base: float, c, n_eval: int, seconds: float) -> str:
    """One progress line per trial, in words: the objective drop of a trial that keeps the guard, or by
    how much it breaks it (its score is then inflated, 1 + 1000·violation: not a drop anyone could get)."""
    number, violation = trial.number, float(trial.user_attrs.get("violation", 0.0))
    what = (
        f"breaks the Pareto guard (a query's variance {100 * violation:.3g} % above its bound)"
        if violation > 0
        else f"objective drop {100 * (1 - value / base):9.5f}%"
    )
    return (
        f"trial {number:4d}: {what}  (best {100 * (1 - best / base):9.5f}%)  c={float(c):.10f}  "
        f"{n_eval} δ evals  {seconds:6.2f} s"
    )


def _run_trial(trial, center, alloc, target, w, hint_total: float, slope: float, score, violation):
    """One trial: its shape calibrated on the proxy (search tolerances) and scored (× 1 + 1000·violation
    when ``violation`` says a constraint fails); ``(value, c, δ evaluations)``, recorded on the trial."""
    shape = _shape_from_params(center, trial.params)
    ratio = float(alloc.total_rho / shape.total_rho)
    rhos = _full_path_rho(shape)
    c, d, n_eval = _calibrate_rhos(
        rhos, target, hint=hint_total * ratio, slope=slope, xtol=XTOL_SEARCH, tol=TOL_SEARCH, rtol=RTOL_SEARCH
    )
    if score is None:
        value = math.fsum(w[(g, q)] / float(r * c) for (g, q, r) in shape.items())
    else:
        calibrated = shape.scaled(c)
        value = score(calibrated)
        excess = violation(calibrated) if violation is not None else 0.0
        if excess > 0:
            value *= 1 + 1000 * excess
            trial.set_user_attr("violation", excess)
    trial.set_user_attr("c", str(c))
    trial.set_user_attr("delta_upper", outward(d.upper, +1, 20))
    trial.set_user_attr("evaluations", n_eval)
    return value, c, n_eval


reallocate.__doc__ = _reallocate.__doc__
