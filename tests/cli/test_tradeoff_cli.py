"""``privamp tradeoff``: the table, --json, --audit and --plot.  The reference is the
Gaussian mechanism's closed-form curve 1 - G_mu (one full-batch step: mu = 1 / sigma)."""

from __future__ import annotations

import json

import numpy as np
from scipy.stats import norm

from privamp.cli import main

ARGS = ["tradeoff", "--sigma", "0.5", "--scheme", "poisson", "--rate", "1", "--steps", "1"]


def tpr(mu, a):
    return 1 - norm.cdf(norm.isf(a) - mu)


def test_json_brackets_the_closed_form(capsys):
    assert main([*ARGS, "--fpr", "1e-3", "1e-2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    ref = tpr(2.0, np.array([1e-3, 1e-2]))
    assert np.all(np.array(out["tpr_lower"]) <= ref) and np.all(ref <= out["tpr_upper"])
    assert 2.0 <= out["gdp_mu_upper"] < 2.01
    assert out["audits"] == []


def test_table_audit_violation_and_plot(tmp_path, capsys):
    png = tmp_path / "t.png"
    # certified TPR at FPR 1e-2 is ~0.37 for mu = 2: 0.9 of 1000 trials violates it
    assert main([*ARGS, "--fpr", "0.01", "--audit", "0.01", "0.2", "1000",
                 "--audit", "0.01", "0.9", "1000", "--plot", str(png)]) == 0
    out = capsys.readouterr().out
    assert "TPR upper" in out and "Gaussian DP: mu <=" in out and "NOT a bound" in out
    assert "audit: consistent" in out and "!!! VIOLATION" in out
    assert png.stat().st_size > 1000


def test_accountant_other_than_best_is_refused(capsys):
    assert main([*ARGS, "--accountant", "rdp"]) == 2
    assert "tradeoff" in capsys.readouterr().err


def test_plot_into_a_missing_folder_is_refused_before_computing(tmp_path, capsys):
    """Fuzz, session 11: ``--plot`` into a folder that does not exist ended in an internal
    error (exit 3) after the computing; it is now a one-line usage error (exit 2) naming the
    option, for tradeoff and sweep alike."""
    bad = str(tmp_path / "missing" / "x.png")
    assert main([*ARGS, "--plot", bad]) == 2
    assert "--plot" in capsys.readouterr().err
    assert main(["sweep", "--sampler", "poisson", "--sigma", "1", "--rate", "0.01", "--steps",
                 "10", "--delta", "1e-5", "--no-store", "--plot", bad, "--x", "sigma",
                 "--y", "steps"]) == 2
    err = capsys.readouterr().err
    assert "--plot" in err and "does not exist" in err
