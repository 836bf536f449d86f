"""Issue 13 (item 6): resuming an Optuna study continues its sequence instead of re-drawing the
same parameters; interrupted (RUNNING) trials are marked FAILED; a second concurrent run on the
same journal refuses with a clear message (lock file with the owner's pid; stale locks taken over).

The per-trial calibration (exact accounting) is replaced by a fast fake: these tests are about
the study bookkeeping, which is real Optuna with a real journal file."""

import json
import subprocess
import sys
import textwrap
from fractions import Fraction as F
from pathlib import Path
from types import SimpleNamespace

import pytest

from optimizer import search as S
from optimizer.census.allocation import load_builtin
from optimizer.search import study


@pytest.fixture
def fast(monkeypatch):
    """Calibration of every trial and of the best shape: instant, deterministic fakes."""
    d = SimpleNamespace(upper=F(1, 10**11), lower=F(1, 10**12))
    monkeypatch.setattr(study, "_calibrate_rhos", lambda rhos, target, **kw: (F(11, 10), d, 1))
    monkeypatch.setattr(
        study,
        "calibrate_shape",
        lambda shape, target, **kw: S.Calibration(F(11, 10), shape.scaled(F(11, 10)), d, 1, 0.0),
    )


@pytest.fixture(scope="module")
def alloc():
    return load_builtin("dhc-persons")


def _run(alloc, journal, n):
    target = S.Target("26.34", "1e-10")
    return S.reallocate(
        alloc,
        target,
        None,
        n_trials=n,
        seed=5,
        storage=str(journal),
        scenario="t",
        uniform_c=F(11, 10),
        zcdp_shape=alloc,
        progress=False,
    )


def _study(res, journal):
    import optuna

    return optuna.load_study(study_name=res.study_name, storage=S.resolve_storage(str(journal)))


def _sampled(study):
    """Parameter vectors of the sampled (not enqueued seed) trials, in trial order."""
    return [tuple(sorted(t.params.items())) for t in study.trials if "seed_shape" not in t.user_attrs and t.params]


def test_resumed_study_does_not_repeat_parameters(alloc, tmp_path, fast):
    journal = tmp_path / "optuna.journal"
    _run(alloc, journal, 5)  # 2 enqueued seed shapes + 3 sampled
    res = _run(alloc, journal, 3)  # resume: 3 more sampled
    params = _sampled(_study(res, journal))
    assert len(params) == 6 and res.n_trials_total == 8
    assert len(set(params)) == 6, "a resumed run re-drew parameters of the first run"


def test_fresh_study_is_reproducible(alloc, tmp_path, fast):
    a = _sampled(_study(_run(alloc, tmp_path / "a.journal", 4), tmp_path / "a.journal"))
    b = _sampled(_study(_run(alloc, tmp_path / "b.journal", 4), tmp_path / "b.journal"))
    assert a == b and len(a) == 2  # same seed, same fresh study: same sequence


def test_interrupted_trials_are_marked_failed_on_resume(alloc, tmp_path, fast):
    import optuna

    journal = tmp_path / "optuna.journal"
    res = _run(alloc, journal, 1)  # consumes the first enqueued seed shape
    crashed = _study(res, journal).ask()  # a run killed mid-trial leaves it RUNNING
    assert crashed.user_attrs.get("seed_shape")  # it was the second seed shape
    res2 = _run(alloc, journal, 2)
    trials = _study(res2, journal).trials
    assert trials[crashed.number].state == optuna.trial.TrialState.FAIL
    assert not [t for t in trials if t.state == optuna.trial.TrialState.RUNNING]
    # the lost seed shape is queued again and evaluated
    done = [t.user_attrs.get("seed_shape") for t in trials if t.state == optuna.trial.TrialState.COMPLETE]
    assert crashed.user_attrs["seed_shape"] in done and res2.n_trials_total == 3


def test_concurrent_run_on_the_same_journal_is_refused(alloc, tmp_path, fast):
    journal = tmp_path / "optuna.journal"
    ready = tmp_path / "ready"
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
        import time, pathlib
        from optimizer.search import study_lock
        with study_lock({str(journal)!r}):
            pathlib.Path({str(ready)!r}).write_text("1")
            time.sleep(60)
        """),
        ],
        cwd=Path(__file__).resolve().parents[1],
    )
    try:
        for _ in range(300):
            if ready.exists():
                break
            holder.poll()
            assert holder.returncode is None, "lock holder died"
            import time

            time.sleep(0.05)
        with pytest.raises(RuntimeError, match=rf"optuna\.journal is in use by pid {holder.pid} "):
            _run(alloc, journal, 1)
    finally:
        holder.kill()
        holder.wait()
    assert _run(alloc, journal, 1).n_trials_total == 1  # the owner is gone: the lock is free again


def test_stale_lock_file_is_taken_over(alloc, tmp_path, fast):
    journal = tmp_path / "optuna.journal"
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    lock = tmp_path / "optuna.journal.run.lock"
    lock.write_text(json.dumps({"pid": int(dead), "host": "x", "started": "earlier"}))
    assert _run(alloc, journal, 1).n_trials_total == 1
    assert not lock.exists() or json.loads(lock.read_text() or "{}").get("pid") != int(dead)


def _run_on(alloc, storage, n):
    return S.reallocate(
        alloc,
        S.Target("26.34", "1e-10"),
        None,
        n_trials=n,
        seed=5,
        storage=storage,
        scenario="t",
        uniform_c=F(11, 10),
        zcdp_shape=alloc,
        progress=False,
    )


def test_sqlite_url_study_is_locked_and_resumes_with_new_parameters(alloc, tmp_path, fast):
    """A ``sqlite:///FILE`` study is one local file: locked like a journal (flock on FILE.run.lock,
    which conflicts across open file descriptions, so it shows in one process), resumed with new draws."""
    import optuna

    db = tmp_path / "study.db"
    url = f"sqlite:///{db}"
    assert study._journal_path(url, "t") == db
    with S.study_lock(db), pytest.raises(S.StudyLockedError, match=r"study\.db is in use by pid"):
        _run_on(alloc, url, 1)
    _run_on(alloc, url, 5)
    res = _run_on(alloc, url, 3)
    params = _sampled(optuna.load_study(study_name=res.study_name, storage=url))
    assert res.n_trials_total == 8 and len(set(params)) == 6
    assert not (tmp_path / "study.db.run.lock").exists()


def test_database_server_storage_is_shared_not_locked():
    """A database server may be shared by several runs on purpose: not locked, and runs at the same
    time (same seed, same number of trials seen) draw different parameter sequences."""
    for url in ("postgresql://u@host/db", "mysql+pymysql://u@host/db", "sqlite://", "sqlite:///:memory:"):
        assert study._journal_path(url, "t") is None, url
    assert study._journal_path("sqlite:////abs/x.db", "t") == Path("/abs/x.db")
    a, b = study._shared_seed(5, 7, "h:1:0"), study._shared_seed(5, 7, "h:2:0")
    assert a != b and a == study._shared_seed(5, 7, "h:1:0")
