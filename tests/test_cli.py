"""The command line: error handling, output shapes (values are checked elsewhere against
independent references)."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

from privamp.cli import SCHEMES, SchemeEntry, main


def run_cli(*args: str) -> tuple[int, str, str]:
    proc = subprocess.run(
        [sys.executable, "-m", "privamp.cli", *args], capture_output=True, text=True, timeout=600
    )
    return proc.returncode, proc.stdout, proc.stderr


@pytest.mark.parametrize(
    "args,needle",
    [
        (["epsilon", "--sigma", "0", "--scheme", "poisson", "--rate", "0.1", "--steps", "10",
          "--delta", "1e-5"], "sigma must be in (0, inf)"),
        (["epsilon", "--sigma", "1", "--scheme", "poisson", "--rate", "1.5", "--steps", "10",
          "--delta", "1e-5"], "rate must be in [0, 1]"),
        (["epsilon", "--sigma", "1", "--scheme", "poisson", "--rate", "0.1", "--steps", "10",
          "--delta", "2"], "delta must be in (0, 1)"),
        (["epsilon", "--sigma", "nan", "--scheme", "poisson", "--rate", "0.1", "--steps", "10",
          "--delta", "1e-5"], "sigma must be a number"),
        (["epsilon", "--sigma", "1", "--scheme", "poisson", "--rate", "0.1", "--steps", "0",
          "--delta", "1e-5"], "argument --steps: expected a whole number >= 1, got '0'"),
        (["compare", "--sigma", "1", "--steps", "0", "--delta", "1e-5"],
         "argument --steps: expected a whole number >= 1"),
        (["epsilon", "--sigma", "1", "--scheme", "poisson", "--rate", "0.1", "--steps", "10"],
         "the following arguments are required: --delta"),
        (["delta", "--sigma", "1", "--scheme", "poisson", "--rate", "0.1", "--steps", "2.5",
          "--epsilon", "1"], "expected a whole number >= 1, got '2.5'"),
        (["delta", "--sigma", "1", "--scheme", "shuffle", "--batch-size", "7",
          "--dataset-size", "100", "--epochs", "1", "--epsilon", "1"], "divide"),
        (["delta", "--sigma", "1", "--scheme", "without-replacement", "--batch-size", "700",
          "--dataset-size", "100", "--steps", "3", "--epsilon", "1"], "batch_size must be in"),
        (["epsilon", "--sigma", "1", "--scheme", "poisson", "--steps", "10", "--delta", "1e-5"],
         "--rate is required"),
        (["rdp", "--sigma", "1", "--scheme", "poisson", "--rate", "0.1", "--alpha", "1"],
         "alpha (Rényi order) must be in (1, inf)"),
    ],
)
def test_bad_input_is_one_line_and_status_2(args, needle, capsys):
    code = main(args)
    err = capsys.readouterr().err
    assert code == 2
    assert needle in err
    assert err.count("\n") == 1
    assert err.startswith((f"privamp {args[0]}: error:", "privamp: error:"))


def test_counts_accept_scientific_notation():
    from privamp.cli import build_parser

    args = build_parser().parse_args(
        ["epsilon", "--sigma", "1", "--scheme", "poisson", "--rate", "1e-3", "--steps", "1e12",
         "--delta", "1e-5"])
    assert args.steps == 10**12 and isinstance(args.steps, int)


def test_fixed_batches_under_add_remove_say_they_were_analysed_as_zero_out(capsys):
    assert main(["epsilon", "--sigma", "1", "--scheme", "shuffle", "--batch-size", "10",
                 "--dataset-size", "100", "--epochs", "1", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    assert out.count("add/remove analysed as zero-out") == 2  # upper and lower


def test_unknown_subcommand_exits_2():
    code, _, err = run_cli("frobnicate")
    assert code == 2
    assert "invalid choice" in err


def test_rdp_json_and_list(capsys):
    assert main(["rdp", "--sigma", "1", "--scheme", "poisson", "--rate", "0.01", "--list"]) == 0
    listing = capsys.readouterr().out
    assert "mironov-sgm" in listing
    assert main(["rdp", "--sigma", "1", "--scheme", "poisson", "--rate", "1", "--alpha", "2",
                 "3.5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    # rate 1 is the Gaussian mechanism itself: alpha / (2 sigma^2)
    assert out["epsilon"] == pytest.approx([1.0, 1.75], rel=1e-9)
    assert out["kind"] == "upper" and out["inputs"]["alpha"] == [2.0, 3.5]


def test_epsilon_json_shape_matches_api(capsys):
    code = main(["epsilon", "--sigma", "1.1", "--scheme", "poisson", "--rate", "0.0042667",
                 "--steps", "1000", "--delta", "1e-5", "--json"])
    assert code == 0
    g = json.loads(capsys.readouterr().out)
    assert set(g) == {"inputs", "upper", "lower"}
    for side in ("upper", "lower"):
        assert g[side] is None or set(g[side]) == {"value", "kind", "source"}
    assert g["upper"]["kind"] in ("upper", "exact")
    if g["lower"] is not None:
        assert g["lower"]["value"] <= g["upper"]["value"]


def test_compare_plot_writes_a_png(tmp_path):
    import privamp as pa
    from privamp.plotting import plot_epsilon_vs_sigma

    path = plot_epsilon_vs_sigma(
        [pa.Deterministic(1, 10), pa.Shuffle(1, 10)], [0.5, 1.0], 1, 1e-5,
        tmp_path / "cmp.png", pa.ZeroOut(),
    )
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def _gauss_delta(mu: float, eps: float) -> float:
    """Balle & Wang 2018, Thm 8: delta(eps) of the Gaussian mechanism with mean shift mu."""
    return norm.cdf(mu / 2 - eps / mu) - np.exp(eps) * norm.cdf(-mu / 2 - eps / mu)


def _gauss_eps(mu: float, delta: float) -> float:
    return brentq(lambda e: _gauss_delta(mu, e) - delta, 0.0, 100.0, xtol=1e-12)


def test_poisson_rate_from_batch_and_dataset_size_and_inputs_echoed(capsys):
    # batch 50 of 50: rate 1, four Gaussian releases of sigma 2 = one of mean shift 1
    assert main(["delta", "--sigma", "2", "--scheme", "poisson", "--batch-size", "50",
                 "--dataset-size", "50", "--steps", "4", "--epsilon", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["inputs"]["batch_size"] == 50 and out["inputs"]["epsilon"] == 1
    assert out["inputs"]["run"]["scheme"] == "Poisson(rate=1.0)"
    assert out["inputs"]["run"]["steps"] == 4
    exact = _gauss_delta(1.0, 1.0)
    assert out["lower"]["value"] <= exact * (1 + 1e-9) and out["upper"]["value"] >= exact
    assert out["upper"]["value"] == pytest.approx(exact, rel=1e-3)


def test_short_source_by_default_full_with_verbose(capsys):
    args = ["epsilon", "--sigma", "1", "--scheme", "shuffle", "--batch-size", "10",
            "--dataset-size", "100", "--epochs", "1", "--delta", "1e-5"]
    assert main(args) == 0
    short = capsys.readouterr().out
    assert main([*args, "--verbose"]) == 0
    full = capsys.readouterr().out
    assert "the other batches are fixed" in full and "the other batches are fixed" not in short
    assert max(map(len, short.splitlines()[1:])) < max(map(len, full.splitlines()[1:]))


def test_calibrate_prints_the_noise_as_a_number(capsys):
    # rate 1, one step: the Gaussian mechanism; the smallest sigma with epsilon <= 2
    assert main(["calibrate", "--epsilon", "2", "--delta", "1e-5", "--scheme", "poisson",
                 "--rate", "1", "--steps", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("noise multiplier") and "<=" not in first
    sigma = float(first.split()[-1])
    exact = brentq(lambda s: _gauss_eps(1 / s, 1e-5) - 2.0, 0.5, 20.0, xtol=1e-10)
    assert exact * (1 - 1e-9) <= sigma <= exact * (1 + 2e-3)


@pytest.mark.parametrize(
    "command", ["epsilon", "delta", "calibrate", "compare", "curve", "rdp", "reproduce",
                "support", "demo"])
def test_every_command_has_help_and_an_example(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"example:\n  privamp {command}" in out
    from privamp.cli import build_parser

    sub = next(a for a in build_parser()._actions if a.dest == "command").choices[command]
    assert all(a.help for a in sub._actions), [a.dest for a in sub._actions if not a.help]


def test_curve_matches_the_closed_form_per_epoch(capsys, tmp_path):
    # deterministic batches, one batch per epoch: E epochs = one Gaussian of shift sqrt(E)/sigma
    png = tmp_path / "curve.png"
    assert main(["curve", "--sigma", "2", "--scheme", "deterministic", "--batch-size", "10",
                 "--dataset-size", "10", "--epochs", "3", "--delta", "1e-5", "--points", "3",
                 "--json", "--plot", str(png)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["steps"] == [1, 2, 3]
    for e, g in zip(out["steps"], out["epsilon"], strict=True):
        assert g["upper"]["value"] == pytest.approx(_gauss_eps(e**0.5 / 2, 1e-5), rel=1e-6)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_new_scheme_plugs_in_with_one_table_line(monkeypatch, capsys):
    import privamp as pa

    monkeypatch.setitem(SCHEMES, "everyone", SchemeEntry(lambda a: pa.Poisson(1.0), "all"))
    assert main(["delta", "--sigma", "2", "--scheme", "everyone", "--steps", "4",
                 "--epsilon", "1", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["upper"]["value"] == pytest.approx(_gauss_delta(1.0, 1.0), rel=1e-3)


def test_progress_off_a_terminal_is_whole_lines(capsys):
    assert main(["compare", "--sigma", "2", "--batch-size", "5", "--dataset-size", "10",
                 "--epochs", "1", "--delta", "1e-5"]) == 0
    err = capsys.readouterr().err
    assert "comparing" in err and "\r" not in err and "4/4" in err


def test_calibrate_reports_each_probe_through_the_callback(capsys):


    assert main(["calibrate", "--epsilon", "2", "--delta", "1e-5", "--scheme", "poisson",
                 "--rate", "1", "--steps", "1"]) == 0
    err = capsys.readouterr().err
    assert "calibrating" in err and "sigma=" in err and "\r" not in err


def test_headers_cut_long_decimals_json_keeps_them(capsys):
    args = ["epsilon", "--sigma", "1.1", "--scheme", "poisson", "--batch-size", "256",
            "--dataset-size", "60000", "--steps", "10", "--delta", "1e-5"]
    assert main(args) == 0
    out = capsys.readouterr().out
    assert "Poisson(rate=0.00426667)" in out and "0.0042666666" not in out  # 256/60000
    assert main([*args, "--json"]) == 0
    assert "0.004266666666666667" in capsys.readouterr().out
