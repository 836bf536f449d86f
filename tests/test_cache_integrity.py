"""Issue 13 (item 2): the job cache is checked by code version, result format and a content
checksum; confirm() recomputes the worst pair(s) without the cache before it says "confirmed"."""

import json
from fractions import Fraction as F

import pytest

import optimizer.jobs.runner as runner
from optimizer import search as S
from optimizer.census.allocation import load_builtin
from optimizer.jobs.confirm import _Bound, _pair_specs, confirm, pair_delta_job
from optimizer.jobs.runner import job_id, run_jobs

CALLS: list = []


def cube(spec):
    CALLS.append(spec["x"])
    return {"x3": F(spec["x"]) ** 3}


def cube_v2(spec):
    CALLS.append(spec["x"])
    return {"x3": F(spec["x"]) ** 3, "sign": 1}


cube_v2.result_format = 2


@pytest.fixture(autouse=True)
def _clear():
    CALLS.clear()
    yield
    CALLS.clear()


SPECS = [{"x": "1/2"}, {"x": "3"}]


def _path(tmp_path, spec, fn=cube):
    return tmp_path / f"{job_id(spec, fn)}.json"


def test_cached_results_carry_code_version_format_and_checksum(tmp_path):
    run_jobs(cube, SPECS, tmp_path, workers=1, progress=False)
    doc = json.loads(_path(tmp_path, SPECS[0]).read_text())
    assert doc["format"] == runner._FORMAT and doc["result_format"] == 1
    assert doc["code_version"] == runner._job_code_version(cube) and len(doc["checksum"]) == 64
    CALLS.clear()
    assert run_jobs(cube, SPECS, tmp_path, workers=1, progress=False)[1] == {"x3": F(27)}
    assert CALLS == []  # an intact, current entry is served


def test_edited_cache_file_is_recomputed_with_a_warning(tmp_path):
    run_jobs(cube, SPECS, tmp_path, workers=1, progress=False)
    p = _path(tmp_path, SPECS[1])
    doc = json.loads(p.read_text())
    doc["result"]["x3"] = {"__fraction__": "1/1000"}  # a hand edit of the stored number
    p.write_text(json.dumps(doc))
    CALLS.clear()
    with pytest.warns(UserWarning, match="checksum mismatch"):
        out = run_jobs(cube, SPECS, tmp_path, workers=1, progress=False)
    assert CALLS == ["3"] and out[1] == {"x3": F(27)}
    assert json.loads(p.read_text())["result"]["x3"] == {"__fraction__": "27/1"}


def test_results_of_other_code_are_recomputed(tmp_path, monkeypatch):
    run_jobs(cube, SPECS, tmp_path, workers=1, progress=False)
    real = runner._job_code_version
    monkeypatch.setattr(runner, "_job_code_version", lambda fn: "fixed-" + real(fn))  # e.g. an accountant fix
    CALLS.clear()
    with pytest.warns(UserWarning, match="2 cached result.* other code"):
        run_jobs(cube, SPECS, tmp_path, workers=1, progress=False)
    assert sorted(CALLS) == ["1/2", "3"]


def test_old_result_format_is_recomputed_not_defaulted(tmp_path):
    spec = SPECS[0]
    # an entry written for the same job id by the previous result format (no "sign" field)
    run_jobs(cube, [spec], tmp_path, workers=1, progress=False)
    old = json.loads(_path(tmp_path, spec).read_text())
    old.update(job_id=job_id(spec, cube_v2), fn=f"{__name__}.cube_v2")
    old["checksum"] = runner._checksum(old)
    _path(tmp_path, spec, cube_v2).write_text(json.dumps(old))
    CALLS.clear()
    with pytest.warns(UserWarning, match="older result format"):
        out = run_jobs(cube_v2, [spec], tmp_path, workers=1, progress=False)
    assert CALLS == ["1/2"] and out[0]["sign"] == 1


def test_old_format_pair_job_entry_gets_tolerance_met(tmp_path):
    """A pair_delta_job result cached by the previous code (format 1, no tolerance_met)."""
    alloc = load_builtin("dhc-persons")
    target = S.target_from_allocation(alloc)
    spec = _pair_specs(alloc, target, [(13, 13)])[0]
    jid = job_id(spec, pair_delta_job)
    (tmp_path / f"{jid}.json").write_text(
        json.dumps(
            {
                "format": 1,
                "job_id": jid,
                "fn": "optimizer.jobs.confirm.pair_delta_job",
                "spec": runner._canon(spec, "spec"),
                "result": {
                    "lower": {"__fraction__": "1/10000000000000000"},
                    "upper": {"__fraction__": "1/1000000000000000"},
                },
                "elapsed_seconds": 0.1,
            }
        )
    )
    with pytest.warns(UserWarning, match="recomputing"):
        (r,) = run_jobs(pair_delta_job, [spec], tmp_path, workers=1, progress=False)
    assert r["tolerance_met"] is True and r["upper"] != F(1, 10**15)
    assert r["lower"] <= r["upper"] < F(1, 10**10)


# ---------------------------------------------------------------------- confirm: fresh worst pair
PAIRS = [(13, 13), (6, 6), (10, 10)]


@pytest.fixture(scope="module")
def dhc():
    alloc = load_builtin("dhc-persons")
    return alloc, S.target_from_allocation(alloc)


def _edit_pair(cache, alloc, target, pair, lower, upper, fix_checksum):
    spec = _pair_specs(alloc, target, [pair])[0]
    p = cache / f"{job_id(spec, pair_delta_job)}.json"
    doc = json.loads(p.read_text())
    doc["result"]["lower"] = {"__fraction__": f"{lower.numerator}/{lower.denominator}"}
    doc["result"]["upper"] = {"__fraction__": f"{upper.numerator}/{upper.denominator}"}
    if fix_checksum:  # a well-formed entry that is simply wrong (e.g. computed by buggy code)
        doc["checksum"] = runner._checksum(doc)
    p.write_text(json.dumps(doc))


def test_edited_worst_pair_does_not_move_the_worst_pair(dhc, tmp_path):
    alloc, target = dhc
    first = confirm(alloc, target, pairs=PAIRS, cache_dir=tmp_path, workers=1, progress=False)
    assert first.passed and first.worst_pair in first.verified_pairs
    # the experiment: lower the worst pair's δ in its cache file
    _edit_pair(tmp_path, alloc, target, first.worst_pair, F(1, 10**30), F(1, 10**29), fix_checksum=False)
    with pytest.warns(UserWarning, match="checksum mismatch"):
        again = confirm(alloc, target, pairs=PAIRS, cache_dir=tmp_path, workers=1, progress=False)
    assert again.worst_pair == first.worst_pair and again.worst_delta.upper == first.worst_delta.upper


def test_wrong_but_well_formed_cached_worst_is_recomputed(dhc, tmp_path):
    alloc, target = dhc
    first = confirm(alloc, target, pairs=PAIRS, cache_dir=tmp_path, workers=1, progress=False)
    other = next(p for p in PAIRS if p != first.worst_pair)
    big = F(first.worst_delta.upper) * 2
    _edit_pair(tmp_path, alloc, target, other, big, big, fix_checksum=True)
    with pytest.warns(UserWarning, match=r"pair \[.*disagrees with a fresh computation"):
        again = confirm(alloc, target, pairs=PAIRS, cache_dir=tmp_path, workers=1, progress=False)
    assert again.passed and again.worst_pair == first.worst_pair
    # the edited pair was recomputed (the warning) and is no candidate for worst any more; the
    # candidates left are the worst pair alone, recomputed from scratch although it was cached
    assert set(again.verified_pairs) == {first.worst_pair}
    assert again.deltas[other].upper < first.worst_delta.upper


def test_cached_numbers_alone_never_confirm(dhc):
    """A runner (cache) saying every pair is fine is not enough: the fresh recomputation of its
    worst pair exceeds the target, so the round does not pass."""
    alloc, target = dhc
    tiny = _Bound(F(1, 10**40), F(1, 10**39))
    cached = lambda a, t, pl: dict.fromkeys(pl, tiny)  # noqa: E731
    asked = []

    def fresh(a, t, pl):
        asked.append(list(pl))
        return {p: _Bound(target.delta_fraction * 3, target.delta_fraction * 3) for p in pl}

    with pytest.warns(UserWarning, match="disagrees with a fresh computation"):
        res = confirm(alloc, target, cached, pairs=PAIRS, verify_runner=fresh, max_rounds=1, progress=False)
    assert not res.passed and res.worst_delta.upper == target.delta_fraction * 3
    assert sorted(asked[0]) == sorted(PAIRS)  # all three tie as the worst, all recomputed


def test_pairs_computed_in_this_round_are_not_recomputed(dhc, tmp_path, monkeypatch):
    """A cache miss is computed by this code just now: only numbers read from the cache are
    recomputed before a round passes (a coarse interval once made every one of 946 pairs a
    candidate for worst, each recomputed serially)."""
    import optimizer.jobs.confirm as C

    alloc, target = dhc
    asked: list = []
    real = C._fresh_points
    monkeypatch.setattr(C, "_fresh_points", lambda a, p, pl: asked.append(list(pl)) or real(a, p, pl))
    first = confirm(alloc, target, pairs=PAIRS, cache_dir=tmp_path, workers=1, progress=False)
    assert first.passed and asked == [] and first.worst_pair in first.verified_pairs
    again = confirm(alloc, target, pairs=PAIRS, cache_dir=tmp_path, workers=1, progress=False)
    assert again.passed and asked and again.worst_pair in asked[0]  # served from the cache: recomputed
    assert again.worst_delta.upper == first.worst_delta.upper


def test_cached_candidates_are_recomputed_on_the_pool(dhc, tmp_path, monkeypatch):
    """The recomputation of cached candidates runs through the pool with an empty, throw-away
    cache (FRESH_POOL_MIN lowered so that the three pairs take that path) and agrees with the
    first, freshly computed confirmation."""
    import optimizer.jobs.confirm as C

    alloc, target = dhc
    first = confirm(alloc, target, pairs=PAIRS, cache_dir=tmp_path, workers=2, progress=False)
    monkeypatch.setattr(C, "FRESH_POOL_MIN", 1)
    monkeypatch.setattr(C, "_fresh_points", lambda *a: pytest.fail("recomputed in-process, not on the pool"))
    real, dirs = C._default_runner, []
    monkeypatch.setattr(C, "_default_runner", lambda d, *a, **k: dirs.append(str(d)) or real(d, *a, **k))
    before = sorted(p.name for p in tmp_path.iterdir())
    again = confirm(alloc, target, pairs=PAIRS, cache_dir=tmp_path, workers=2, progress=False)
    assert len(dirs) == 2 and dirs[0] == str(tmp_path) and dirs[1] != str(tmp_path)  # a pool run, other cache
    assert again.passed and again.worst_pair == first.worst_pair and again.worst_pair in again.verified_pairs
    assert again.worst_delta.upper == first.worst_delta.upper
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # the recomputation wrote no cache here
