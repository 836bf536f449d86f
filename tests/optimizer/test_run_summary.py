"""Issue 33: the run summary is typed (:class:`optimizer.pipeline.summary.RunSummary`) and the
pipeline writes exactly the keys the type declares (no undeclared key, none forgotten)."""

import json
from pathlib import Path

import pytest

from optimizer.pipeline.stages import optimize, spec_for
from optimizer.pipeline.summary import SEAL_KEYS, RunSummary, summary_keys
from tests.toy_scenario import TOY_ALLOC, TOY_SCENARIO

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def toy_run(tmp_path_factory):
    d = tmp_path_factory.mktemp("summary")
    (d / "alloc.toml").write_text(TOY_ALLOC)
    (d / "toy.toml").write_text(TOY_SCENARIO)
    spec = spec_for(scenario=str(d / "toy.toml"), trials=1)
    res = optimize(spec, d / "work", confirm=False)
    res.write(d / "out")
    return d / "out", res


def test_the_pipeline_writes_every_declared_key_and_no_other(toy_run):
    out, _ = toy_run
    stored = json.loads((out / "optimize.json").read_text())
    assert set(stored) == summary_keys(), (
        f"undeclared: {sorted(set(stored) - summary_keys())}; never written: {sorted(summary_keys() - set(stored))}"
    )
    assert summary_keys() >= SEAL_KEYS


def test_an_unconfirmed_run_leaves_the_confirmation_keys_empty(toy_run):
    _, res = toy_run
    s = res.summary
    assert s["confirm_skipped"] is True and s["confirmed"] is False
    assert s["worst_pair"] is None and s["release_delta_interval"] is None


def test_every_key_has_a_type_and_a_comment():
    src = (ROOT / "optimizer" / "pipeline" / "summary.py").read_text().splitlines()
    body = [ln.strip() for ln in src if ln.startswith("    ") and ": " in ln and not ln.strip().startswith(("#", '"'))]
    declared = {ln.split(":")[0] for ln in body}
    assert declared == set(RunSummary.__annotations__)
    missing = [ln for ln in body if "  # " not in ln]
    assert not missing, f"keys without a comment saying what they mean: {missing}"
