"""Job runner: ids, caching and resume, atomic writes, error propagation, executors."""

import hashlib
import json
import os
from dataclasses import dataclass
from fractions import Fraction as F

import pytest

from optimizer.census.allocation import load_builtin
from optimizer.jobs import runner
from optimizer.jobs.runner import JobError, canonical_json, job_id, run_jobs

CALLS: list = []
FAIL_ON: set = set()


@dataclass(frozen=True)
class Spec:
    name: str
    rho: F


@dataclass
class MutableSpec:
    x: int


def square_rho(spec: Spec):
    """Module-level job: exact arithmetic, result with a Fraction and a tuple."""
    CALLS.append(spec.name)
    if spec.name in FAIL_ON:
        raise ArithmeticError(f"refusing {spec.name}")
    return {"name": spec.name, "rho2": spec.rho * spec.rho, "pair": (1, 2)}


def returns_object(spec):
    return object()


def boom(spec):
    raise ValueError(f"bad spec {spec}")


@pytest.fixture(autouse=True)
def _reset():
    CALLS.clear()
    FAIL_ON.clear()
    yield
    CALLS.clear()
    FAIL_ON.clear()


SPECS = [Spec("a", F(1, 3)), Spec("b", F(2, 7)), Spec("c", F(24811, 5000))]


# ---------------------------------------------------------------------- ids
def test_canonical_json_and_id_by_hand():
    spec = Spec("a", F(1, 3))
    text = canonical_json(spec)
    assert text == ('{"__dataclass__":"tests.optimizer.test_runner.Spec","name":"a","rho":{"__fraction__":"1/3"}}')
    assert job_id(spec) == hashlib.sha256(text.encode()).hexdigest()
    # key order does not matter; exact values do
    assert canonical_json({"b": 1, "a": F(2, 4)}) == '{"a":{"__fraction__":"1/2"},"b":1}'
    assert job_id({"x": F(1, 3)}) != job_id({"x": "1/3"})
    # the function is part of the job id
    assert job_id(spec, square_rho) != job_id(spec, boom) != job_id(spec)


def test_allocation_specs_are_hashable_jobs():
    a = load_builtin("dhc-persons")
    assert job_id(a) == job_id(load_builtin("dhc-persons"))
    assert job_id(a) != job_id(a.scaled(2))


def test_bad_specs_and_functions_rejected_before_work(tmp_path):
    with pytest.raises(ValueError, match=r"spec #1: .*MutableSpec at spec must be frozen"):
        run_jobs(square_rho, [SPECS[0], MutableSpec(1)], tmp_path, workers=1)
    with pytest.raises(ValueError, match=r"spec #0: .*cannot canonicalise object"):
        run_jobs(square_rho, [{"x": object()}], tmp_path, workers=1)
    with pytest.raises(ValueError, match="non-finite float"):
        canonical_json({"x": float("nan")})
    with pytest.raises(ValueError, match="module-level function"):
        run_jobs(lambda s: s, SPECS, tmp_path, workers=1)
    with pytest.raises(ValueError, match="workers must be None or an int >= 1"):
        run_jobs(square_rho, SPECS, tmp_path, workers=0)
    assert CALLS == [] and list(tmp_path.iterdir()) == []


# ---------------------------------------------------------------------- caching / resume
def test_serial_cache_and_resume(tmp_path):
    first = run_jobs(square_rho, [*SPECS, SPECS[0]], tmp_path, workers=1, progress=False)
    assert CALLS == ["a", "b", "c"]  # the duplicate spec is computed once
    assert first[0] == {"name": "a", "rho2": F(1, 9), "pair": [1, 2]}
    assert first[3] == first[0]
    assert first[2]["rho2"] == F(24811**2, 5000**2)
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == sorted(f"{job_id(s, square_rho)}.json" for s in SPECS)
    stored = json.loads((tmp_path / f"{job_id(SPECS[1], square_rho)}.json").read_text())
    assert stored["result"]["rho2"] == {"__fraction__": "4/49"}
    assert stored["fn"] == "tests.optimizer.test_runner.square_rho"
    CALLS.clear()
    second = run_jobs(square_rho, [*SPECS, SPECS[0]], tmp_path, workers=1, progress=False)
    assert CALLS == []  # everything came from the cache
    assert second == first


def test_failure_keeps_finished_jobs_and_resume_computes_only_the_rest(tmp_path):
    FAIL_ON.add("b")
    with pytest.raises(JobError) as info:
        run_jobs(square_rho, SPECS, tmp_path, workers=1, progress=False)
    jid = job_id(SPECS[1], square_rho)
    assert jid in str(info.value) and "ArithmeticError: refusing b" in str(info.value)
    assert info.value.job_id == jid and isinstance(info.value.__cause__, ArithmeticError)
    assert (tmp_path / f"{job_id(SPECS[0], square_rho)}.json").exists()
    assert not (tmp_path / f"{jid}.json").exists()
    FAIL_ON.clear()
    CALLS.clear()
    out = run_jobs(square_rho, SPECS, tmp_path, workers=1, progress=False)
    assert CALLS == ["b", "c"]
    assert [r["name"] for r in out] == ["a", "b", "c"]


def test_unreadable_cache_file_is_recomputed(tmp_path):
    path = tmp_path / f"{job_id(SPECS[0], square_rho)}.json"
    path.write_text('{"job_id": "trunc')
    with pytest.warns(UserWarning, match="unreadable cache file"):
        out = run_jobs(square_rho, SPECS[:1], tmp_path, workers=1, progress=False)
    assert CALLS == ["a"] and out[0]["rho2"] == F(1, 9)
    assert json.loads(path.read_text())["job_id"] == job_id(SPECS[0], square_rho)


# ---------------------------------------------------------------------- atomicity
def test_interrupted_write_leaves_no_file(tmp_path, monkeypatch):
    def crash(src, dst):
        raise KeyboardInterrupt("killed between write and rename")

    monkeypatch.setattr(runner.os, "replace", crash)
    with pytest.raises(KeyboardInterrupt):
        run_jobs(square_rho, SPECS[:1], tmp_path, workers=1, progress=False)
    assert list(tmp_path.iterdir()) == []  # neither the result nor a temp file
    monkeypatch.undo()
    CALLS.clear()
    out = run_jobs(square_rho, SPECS[:1], tmp_path, workers=1, progress=False)
    assert CALLS == ["a"] and out[0]["rho2"] == F(1, 9)


def test_stray_temp_file_is_ignored(tmp_path):
    # what a SIGKILL during json.dump would leave behind
    jid = job_id(SPECS[0], square_rho)
    (tmp_path / f".{jid}.abc.tmp").write_text('{"job_id": "')
    run_jobs(square_rho, SPECS[:1], tmp_path, workers=1, progress=False)
    assert CALLS == ["a"]
    assert json.loads((tmp_path / f"{jid}.json").read_text())["result"]["name"] == "a"


def test_atomic_write_replaces_whole_file(tmp_path):
    target = tmp_path / "x.json"
    target.write_text("old")
    runner.atomic_write_json(target, {"k": [1, 2]})
    assert json.loads(target.read_text()) == {"k": [1, 2]}
    assert [p.name for p in tmp_path.iterdir()] == ["x.json"]


# ---------------------------------------------------------------------- errors
def test_non_json_result_is_a_job_error(tmp_path):
    with pytest.raises(JobError, match=rf"job {job_id(1, returns_object)} .*cannot be cached.*object"):
        run_jobs(returns_object, [1], tmp_path, workers=1, progress=False)


def test_process_pool_results_and_error(tmp_path):
    out = run_jobs(square_rho, SPECS, tmp_path / "ok", workers=2, progress=False)
    assert [r["rho2"] for r in out] == [F(1, 9), F(4, 49), F(24811, 5000) ** 2]
    assert CALLS == []  # computed in worker processes, not here
    assert len(list((tmp_path / "ok").iterdir())) == 3
    specs = [{"i": 1}, {"i": 2}]
    with pytest.raises(JobError) as info:
        run_jobs(boom, specs, tmp_path / "bad", workers=2, progress=False)
    msg = str(info.value)
    assert "ValueError: bad spec" in msg
    assert info.value.job_id in {job_id(s, boom) for s in specs} and info.value.job_id in msg


# ---------------------------------------------------------------------- progress
def test_progress_fallback_counter(tmp_path, monkeypatch, capsys):
    monkeypatch.setitem(__import__("sys").modules, "tqdm.auto", None)  # pretend tqdm is absent
    monkeypatch.setattr(__import__("sys").stderr, "isatty", lambda: True)  # a terminal
    run_jobs(square_rho, SPECS, tmp_path, workers=1, progress=True)
    err = capsys.readouterr().err
    assert "square_rho: 0/3 jobs" in err and "3/3 jobs" in err


def test_progress_tqdm(tmp_path, capsys, monkeypatch):
    pytest.importorskip("tqdm", reason="tqdm not installed")
    monkeypatch.setattr(__import__("sys").stderr, "isatty", lambda: True)  # a terminal
    run_jobs(square_rho, SPECS, tmp_path, workers=1, progress=True, label="squaring")
    err = capsys.readouterr().err
    assert "3/3" in err and "squaring" in err


def test_progress_not_a_terminal_plain_lines_with_label(tmp_path, capsys):
    run_jobs(square_rho, SPECS, tmp_path, workers=1, progress=True, label="confirming the uniform rescale: pair")
    err = capsys.readouterr().err
    assert "\r" not in err
    assert "confirming the uniform rescale: pair: 3/3 done" in err


# ---------------------------------------------------------------------- dask
def test_dask_local_cluster(tmp_path):
    distributed = pytest.importorskip(
        "distributed", reason="optional extra census-plb[distributed] (dask, distributed) not installed"
    )
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        out = run_jobs(square_rho, SPECS, tmp_path, scheduler=client, progress=False)
        assert [r["rho2"] for r in out] == [F(1, 9), F(4, 49), F(24811, 5000) ** 2]
        again = run_jobs(square_rho, SPECS, tmp_path, scheduler=cluster.scheduler_address, progress=False)
        assert again == out
        with pytest.raises(JobError, match="ValueError: bad spec"):
            run_jobs(boom, [{"i": 1}], tmp_path, scheduler=client, progress=False)


def test_dask_missing_gives_install_hint(tmp_path, monkeypatch):
    monkeypatch.setitem(__import__("sys").modules, "distributed", None)
    with pytest.raises(ImportError, match=r"census-plb\[distributed\]"):
        run_jobs(square_rho, SPECS[:1], tmp_path, scheduler="tcp://127.0.0.1:1", progress=False)
    assert not os.listdir(tmp_path)


# ---------------------------------------------------------------------- dask: one thread per worker
def test_dask_threaded_worker_is_refused(tmp_path):
    """flint ctx.prec and mpmath's precision are process-global: a worker with 2 threads is refused
    (one line naming the worker and `--nthreads 1`) before any job is submitted."""
    distributed = pytest.importorskip(
        "distributed", reason="optional extra census-plb[distributed] (dask, distributed) not installed"
    )
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        (addr,) = client.nthreads()
        with pytest.raises(ValueError, match=r"--nthreads 1") as info:
            run_jobs(square_rho, SPECS, tmp_path, scheduler=client, progress=False)
        msg = str(info.value)
        assert "\n" not in msg and addr in msg and "2 threads" in msg
        assert CALLS == [] and not os.listdir(tmp_path)  # nothing ran, nothing cached
        # the same through a scheduler address (the client run_jobs opens itself)
        with pytest.raises(ValueError, match=r"--nthreads 1"):
            run_jobs(square_rho, SPECS, tmp_path, scheduler=cluster.scheduler_address, progress=False)


def test_dask_single_threaded_worker_is_accepted(tmp_path):
    distributed = pytest.importorskip(
        "distributed", reason="optional extra census-plb[distributed] (dask, distributed) not installed"
    )
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        assert list(client.nthreads().values()) == [1]
        out = run_jobs(square_rho, SPECS, tmp_path, scheduler=client, progress=False)
        assert [r["rho2"] for r in out] == [F(1, 9), F(4, 49), F(24811, 5000) ** 2]


def test_dask_several_in_process_workers_are_refused(tmp_path):
    """Two single-threaded in-process workers are still two threads of one process."""
    distributed = pytest.importorskip(
        "distributed", reason="optional extra census-plb[distributed] (dask, distributed) not installed"
    )
    with (
        distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
        pytest.raises(ValueError, match=r"in-process Dask workers .* share one process"),
    ):
        run_jobs(square_rho, SPECS, tmp_path, scheduler=client, progress=False)


def test_dask_call_refuses_on_a_threaded_worker():
    """A worker that joins after the check: the job itself refuses to run."""
    distributed = pytest.importorskip(
        "distributed", reason="optional extra census-plb[distributed] (dask, distributed) not installed"
    )
    assert runner._dask_call(square_rho, SPECS[0])[0]["name"] == "a"  # not on a worker: runs
    with (
        distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False, dashboard_address=None) as cluster,
        distributed.Client(cluster) as client,
    ):
        fut = client.submit(runner._dask_call, square_rho, SPECS[1], pure=False)
        with pytest.raises(RuntimeError, match=r"--nthreads 1"):
            fut.result()
