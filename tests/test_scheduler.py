"""Issue 13, item 8: every 946-pair run accepts a Dask scheduler; bad addresses fail up front."""

from __future__ import annotations

import pytest

from optimizer.cli.main import main
from optimizer.jobs.runner import check_scheduler_address


@pytest.mark.parametrize(
    "argv",
    [
        ["optimize", "--scenario", "dhc-persons"],
        ["report", "--scenario", "dhc-persons"],
        ["scenario", "run", "dhc-persons"],
        ["pairs", "--allocation", "dhc-persons", "--eps", "1"],
    ],
)
def test_inproc_scheduler_refused_before_work(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main([*argv, "--scheduler", "inproc://x"]) == 2
    err = capsys.readouterr().err
    assert "inproc://x" in err and "dask scheduler" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "runs").exists()  # nothing started


def test_scheduler_address_forms():
    assert check_scheduler_address("tcp://127.0.0.1:8786") == "tcp://127.0.0.1:8786"
    assert check_scheduler_address("10.0.0.2:8786") == "10.0.0.2:8786"
    assert check_scheduler_address(None) is None
    for bad in ("bogus", "tcp://host", "http://h:1", "inproc://abc"):
        with pytest.raises(ValueError, match="--scheduler"):
            check_scheduler_address(bad)


def test_confirm_on_a_local_dask_cluster(tmp_path):
    """The confirmation's pair jobs run on a separate local Dask cluster (processes, one thread
    per worker, reached by its tcp:// address) and agree with the in-process computation."""
    distributed = pytest.importorskip("distributed", reason="census-plb[distributed] extra")
    from optimizer.census.allocation import load_builtin
    from optimizer.jobs.confirm import confirm, fresh_pairs
    from optimizer.search import target_from_allocation

    alloc = load_builtin("dhc-persons")
    target = target_from_allocation(alloc, delta="1e-10", conversion="bun-steinke")
    pairs = [(13, 13), (1, 13)]
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cluster:
        conf = confirm(
            alloc, target, pairs=pairs, cache_dir=tmp_path / "c", progress=False, scheduler=cluster.scheduler_address
        )
    assert conf.n_pairs == 2
    direct = fresh_pairs(alloc, target, pairs)
    assert conf.worst_delta.upper == max(direct.values(), key=lambda b: b.upper).upper
