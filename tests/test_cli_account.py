"""The thin CLI over the accountant: output, JSON contract, and one-line errors."""

import json

from optimizer.cli.main import main


def test_account_json(capsys):
    assert main(["account", "--rho", "73/10000", "--rho", "11/10000", "--eps", "0.5,1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["n_mechanisms"] == 2 and out["rho"] == "21/5000"
    d = [float(r["delta"]) for r in out["delta"]]
    assert 0 < d[1] < d[0] < 1
    assert all(float(r["delta_error"]) <= 1e-35 for r in out["delta"])
    # exact δ is below the zCDP claim
    assert all(float(r["delta"]) < float(r["delta_zcdp_bun_steinke"]) for r in out["delta"])


def test_account_bad_input_is_one_line(capsys):
    assert main(["account", "--sigma2", "-1", "--eps", "1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "sigma2" in err and "-1" in err


def test_account_requires_eps_or_delta(capsys):
    assert main(["account", "--sigma2", "3"]) == 2
    assert "--eps" in capsys.readouterr().err
