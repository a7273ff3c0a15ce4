"""``--mechanism matrix`` on the command line: the strategies (identity, sqrt-toeplitz,
coefficients, a dense file, a TOML config), against independent references, and the
refusals naming the flag."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from dp_accounting import dp_event
from dp_accounting.pld import pld_privacy_accountant
from scipy.optimize import brentq
from scipy.stats import norm

from privamp.cli import main

CYCLIC = ["--scheme", "cyclic-poisson", "--rate", "0.01", "--cycle-length", "4",
          "--steps", "1000", "--delta", "1e-5"]


def _json(capsys, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _gauss_eps(shift: float, delta: float) -> float:
    def f(e):
        return (norm.cdf(shift / 2 - e / shift) - math.exp(e) * norm.cdf(-shift / 2 - e / shift)
                - delta)
    return brentq(f, 0.0, 200.0, xtol=1e-13)


def test_sqrt_toeplitz_cyclic_poisson_matches_dp_accounting(capsys):
    out = _json(capsys, "epsilon", "--mechanism", "matrix", "--sigma", "1", "--strategy",
                "sqrt-toeplitz", "--bands", "4", *CYCLIC)
    # b-min-sep reduction (k = b = 4): Poisson DP-SGD over 250 rounds at sigma / max col norm
    col = math.sqrt(1 + 0.25 + 9 / 64 + 25 / 256)
    acc = pld_privacy_accountant.PLDAccountant(value_discretization_interval=1e-4)
    acc.compose(dp_event.PoissonSampledDpEvent(0.01, dp_event.GaussianDpEvent(1 / col)), 250)
    ref = acc.get_epsilon(1e-5)
    up = out["upper"]["value"]
    assert ref * (1 - 2e-3) <= up <= ref * 1.01


def test_identity_is_dp_sgd(capsys):
    flags = ["--scheme", "poisson", "--rate", "0.01", "--steps", "300", "--delta", "1e-5"]
    mat = _json(capsys, "epsilon", "--mechanism", "matrix", "--sigma", "1", "--strategy",
                "identity", *flags)
    gau = _json(capsys, "epsilon", "--sigma", "1", *flags)
    assert mat["upper"]["value"] == pytest.approx(gau["upper"]["value"],
                                                             rel=1e-12)


def test_coefficients_file_and_config_agree_with_closed_form(capsys, tmp_path):
    coef = [1.0, 0.5, 0.25]
    steps, per = 12, 4
    c = np.zeros((steps, steps))
    for lag, v in enumerate(coef):
        c += np.diag(np.full(steps - lag, v), -lag)
    np.save(tmp_path / "C.npy", c)
    np.savetxt(tmp_path / "C.csv", c, delimiter=",")
    det = ["--scheme", "deterministic", "--batch-size", "10", "--dataset-size", "40",
           "--steps", str(steps), "--delta", "1e-5"]
    g = c.T @ c  # entrywise >= 0: the worst position's Gaussian is attained
    worst = max(float(g[np.ix_(p, p)].sum()) for p in
                (list(range(j, steps, per)) for j in range(per)))
    ref = _gauss_eps(math.sqrt(worst) / 2.0, 1e-5)
    toml = tmp_path / "run.toml"
    toml.write_text('mechanism = "matrix"\nsigma = 2.0\ncoefficients = [1, 0.5, 0.25]\n')
    for args in (["--mechanism", "matrix", "--sigma", "2", "--coefficients", "1,0.5,0.25"],
                 ["--mechanism", "matrix", "--sigma", "2", "--coefficients", "1", "0.5", "0.25"],
                 ["--mechanism", "matrix", "--sigma", "2", "--strategy", "banded",
                  "--coefficients", "1,0.5,0.25"],
                 ["--mechanism", "matrix", "--sigma", "2", "--strategy-file",
                  str(tmp_path / "C.npy")],
                 ["--mechanism", "matrix", "--sigma", "2", "--strategy-file",
                  str(tmp_path / "C.csv")],
                 ["--config", str(toml)]):
        out = _json(capsys, "epsilon", *args, *det)
        # two-sided to the float error of the Gram sums (upper rounded up, lower down)
        assert out["upper"]["kind"] == "upper" and out["lower"]["kind"] == "lower"
        assert out["upper"]["value"] == pytest.approx(ref, rel=1e-7)
        assert out["lower"]["value"] == pytest.approx(ref, rel=1e-7)


def test_compare_rows_with_a_matrix_mechanism(capsys):
    assert main(["compare", "--mechanism", "matrix", "--sigma", "2", "--strategy",
                 "sqrt-toeplitz", "--bands", "3", "--batch-size", "100", "--dataset-size",
                 "400", "--steps", "8", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    for name in ("deterministic", "poisson", "shuffle", "balanced-iteration"):
        assert name in out


@pytest.mark.parametrize("extra,needle", [
    ([], "needs exactly one of --strategy, --coefficients or --strategy-file"),
    (["--strategy", "identity", "--coefficients", "1,0.5"], "exactly one of"),
    (["--strategy", "identity", "--bands", "3"], "--bands is read by --strategy sqrt-toeplitz"),
    (["--strategy", "banded"], "--strategy banded needs --coefficients"),
    (["--coefficients", "1,x"], "--coefficients must be numbers"),
    (["--coefficients", "0,1"], "first Toeplitz coefficient"),
    (["--strategy-file", "/nonexistent/C.npy"], "--strategy-file /nonexistent/C.npy"),
    (["--strategy", "identity", "--sensitivity", "2"], "--sensitivity is not read"),
])
def test_refusals_name_the_flag(extra, needle, capsys):
    code = main(["epsilon", "--mechanism", "matrix", "--sigma", "1", *extra, "--scheme",
                 "poisson", "--rate", "0.1", "--steps", "10", "--delta", "1e-5"])
    err = capsys.readouterr().err
    assert code == 2 and needle in err and err.count("\n") == 1


def test_sqrt_toeplitz_without_bands_or_steps_and_plot_refused(capsys):
    code = main(["epsilon", "--mechanism", "matrix", "--sigma", "1", "--strategy",
                 "sqrt-toeplitz", "--scheme", "poisson", "--rate", "0.1", "--epochs", "1",
                 "--delta", "1e-5"])
    assert code == 2 and "needs --bands" in capsys.readouterr().err
    code = main(["compare", "--mechanism", "matrix", "--sigma", "1", "--strategy", "identity",
                 "--batch-size", "10", "--dataset-size", "100", "--steps", "5", "--delta",
                 "1e-5", "--plot", "x.png"])
    assert code == 2 and "--plot" in capsys.readouterr().err
