"""Smoke test of bench/peers.py on one small composition (skipped without the `bench` extra)."""

import math

import pandas as pd
import pytest

pytest.importorskip("dp_accounting")
pytest.importorskip("prv_accountant")

from accountant import Composition, DiscreteGaussian
from bench import peers


def test_peers_on_single_component(tmp_path, monkeypatch):
    comp = Composition([DiscreteGaussian("10000/73")])
    monkeypatch.setattr(peers, "compositions", lambda: {"single": comp})
    res = peers.run(["single"], repeats=1, pld_settings=("default",), prv_settings=("default",), log=lambda *a: None)
    paths = peers.write_outputs(res, tmp_path)
    df = pd.read_csv(paths["csv"])
    assert list(df.columns) == peers.COLUMNS
    methods = set(df.method)
    assert {
        "census-plb",
        "dp_accounting PLD",
        "dp_accounting RDP",
        "prv_accountant",
        "zCDP CKS",
        "GDP surrogate",
    } <= methods
    assert set(df.target) == {f"delta @ eps(delta~{d})" for d in peers.DELTA_TARGETS} | {"eps @ delta=1e-10"}
    timed = df[df.wall_s.notna()]
    assert (timed.wall_s > 0).all() and (timed.time_ratio > 0).all()
    ref = df[df.method == "census-plb"]
    assert (ref.abs_err == 0).all()
    # the certified δ targets are hit (ε came from Composition.epsilon)
    for d in peers.DELTA_TARGETS:
        v = float(ref[ref.target == f"delta @ eps(delta~{d})"].value.iloc[0])
        assert 0.5 * float(d) < v <= float(d)
    # valid upper bounds (RDP, CKS) are on the safe side
    for m in ("dp_accounting RDP", "zCDP CKS", "zCDP Bun-Steinke"):
        assert df[df.method == m].bracket_ok.astype(str).eq("True").all()
    assert paths["md"].read_text().startswith("# Peers benchmark")
    assert not math.isnan(df[df.method == "dp_accounting PLD"].rel_err.iloc[0])
