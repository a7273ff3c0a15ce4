"""The command line: error handling, output shapes (values are checked elsewhere against
independent references)."""

from __future__ import annotations

import json
import math
import subprocess
import sys

import numpy as np
import pytest
from scipy.optimize import brentq
from scipy.stats import norm

import privamp as pa
from privamp.cli import build_parser, main
from privamp.cli.values import make_scheme
from privamp.errors import NotApplicable
from privamp.results import Bound, Guarantee
from privamp.sampling.registry import Flag, register_scheme, unregister_scheme


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
        (["delta", "--sigma", "1", "--scheme", "shuffle", "--dataset-size", "100", "--epochs",
          "1", "--epsilon", "1"], "--batch-size is required for --scheme shuffle"),
        (["delta", "--sigma", "1", "--scheme", "truncated-poisson", "--rate", "0.1",
          "--dataset-size", "100", "--steps", "3", "--epsilon", "1"],
         "--max-batch-size is required for --scheme truncated-poisson"),
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
    args = build_parser().parse_args(
        ["epsilon", "--sigma", "1", "--scheme", "poisson", "--rate", "1e-3", "--steps", "1e12",
         "--delta", "1e-5"])
    assert args.steps == 10**12 and isinstance(args.steps, int)


def test_fixed_batches_default_to_zero_out(capsys):
    """Shuffled batches are analysed under zero-out (adding a record shifts every later
    batch): without --relation the CLI protects zero-out neighbours and says so."""
    assert main(["epsilon", "--sigma", "1", "--scheme", "shuffle", "--batch-size", "10",
                 "--dataset-size", "100", "--epochs", "1", "--delta", "1e-5"]) == 0
    out = capsys.readouterr().out
    assert "relation=zero-out" in out or "zero-out" in out.splitlines()[0]


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
    # the end of the upper bound's source (two accountants tie at the last bit here)
    tail = next(line for line in full.splitlines() if "upper" in line)[-31:]
    assert tail in full and tail not in short
    assert max(map(len, short.splitlines()[1:])) < max(map(len, full.splitlines()[1:]))


def test_calibrate_prints_the_noise_as_a_number(capsys):
    # rate 1, one step: the Gaussian mechanism; the smallest sigma with epsilon <= 2
    assert main(["calibrate", "--epsilon", "2", "--delta", "1e-5", "--scheme", "poisson",
                 "--rate", "1", "--steps", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    # issue 33: the knob's value, then the guarantee it meets (not "<= sigma")
    assert first.startswith("noise multiplier ") and ": epsilon <= " in first
    assert " at delta 1e-05 [" in first
    sigma = float(first.split()[2].rstrip(":"))
    exact = brentq(lambda s: _gauss_eps(1 / s, 1e-5) - 2.0, 0.5, 20.0, xtol=1e-10)
    assert exact * (1 - 1e-9) <= sigma <= exact * (1 + 2e-3)


@pytest.mark.parametrize(
    "command", ["epsilon", "delta", "calibrate", "compare", "curve", "rdp", "reproduce",
                "support", "demo"])
def test_every_command_has_help_and_an_example(command, capsys):
    assert main([command, "--help"]) == 0
    out = capsys.readouterr().out
    assert f"example:\n  privamp {command}" in out
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


def test_a_new_scheme_plugs_in_with_its_registration_alone(capsys):
    @register_scheme("everyone, every step", name="test-everyone",
                     flags=(Flag("rate", "real", "ignored", required=False),))
    def Everyone(rate: float = 1.0) -> pa.Poisson:  # noqa: N802
        return pa.Poisson(1.0)

    try:
        assert main(["delta", "--sigma", "2", "--scheme", "test-everyone", "--steps", "4",
                     "--epsilon", "1", "--json"]) == 0
    finally:
        unregister_scheme("test-everyone")
    out = json.loads(capsys.readouterr().out)
    # rate 1, four Gaussian releases of sigma 2 = one of mean shift 1 (Balle & Wang, Thm 8)
    assert out["upper"]["value"] == pytest.approx(_gauss_delta(1.0, 1.0), rel=1e-3)
    assert main(["delta", "--sigma", "2", "--scheme", "test-everyone", "--steps", "4",
                 "--epsilon", "1"]) == 2  # gone with its registration


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


# -- the scheme flags of issue 25 ---------------------------------------------------------------
def _scheme(*flags: str):
    return make_scheme(build_parser().parse_args(
        ["epsilon", "--sigma", "1", "--steps", "1", "--delta", "1e-5", *flags]))


@pytest.mark.parametrize("flags,expected", [
    (["--scheme", "shuffle", "--batch-size", "256", "--dataset-size", "60000"],
     pa.Shuffle(256, 60000)),
    (["--scheme", "shuffle", "--batch-size", "256", "--dataset-size", "60000", "--drop-last",
      "--persistent"], pa.Shuffle(256, 60000, drop_last=True, persistent=True)),
    (["--scheme", "shuffle", "--batch-size", "256", "--dataset-size", "60000", "--persistent"],
     pa.Shuffle(256, 60000, persistent=True)),
    (["--scheme", "deterministic", "--batch-size", "7", "--dataset-size", "100", "--drop-last"],
     pa.Deterministic(7, 100, drop_last=True)),
    (["--scheme", "balls-in-bins-persistent", "--batches", "10"], pa.PersistentBallsInBins(10)),
    (["--scheme", "balls-in-bins", "--batches", "10"], pa.BallsInBins(10)),
    (["--scheme", "truncated-poisson", "--rate", "0.01", "--max-batch-size", "20",
      "--dataset-size", "1000"], pa.TruncatedPoisson(0.01, 20, 1000)),
    (["--scheme", "balanced", "--balanced-steps", "10", "--participations", "2"],
     pa.BalancedIteration(10, 2)),
    (["--scheme", "balanced-iteration"], pa.BalancedIteration(1, 1)),  # --steps 1
    (["--scheme", "poisson", "--batch-size", "256", "--dataset-size", "60000"],
     pa.Poisson(256 / 60000)),
    (["--scheme", "dropout"], pa.Dropout()),
    (["--scheme", "partial-model-split", "--parts", "3"], pa.PartialModelSplit(3)),
    (["--scheme", "custom", "--weights", "0.9", "0.1", "--positions", "0", "1"],
     pa.CustomSampler((0.9, 0.1), (0, 1))),
])
def test_scheme_flags_build_the_scheme(flags, expected):
    assert _scheme(*flags) == expected


def test_switches_are_off_unless_given_and_refuse_a_value(capsys):
    assert _scheme("--scheme", "shuffle", "--batch-size", "2", "--dataset-size", "5") == \
        pa.Shuffle(2, 5, drop_last=False, persistent=False)
    assert main(["epsilon", "--sigma", "1", "--scheme", "shuffle", "--batch-size", "2",
                 "--dataset-size", "5", "--steps", "1", "--delta", "1e-5",
                 "--drop-last=yes"]) == 2
    assert "ignored explicit argument" in capsys.readouterr().err


def test_shuffle_of_any_batch_size_reaches_the_accountant(monkeypatch, capsys):
    """No divisibility refusal in the CLI: 256 does not divide 60000, and the run is handed
    to the accountant, whose answer (or one-line refusal) is printed."""
    from privamp.accounting.training import Training

    seen = []

    def fake_epsilon(self, delta, accountant="best"):
        seen.append(self)
        return Guarantee(Bound(2.0, "upper", "stand-in"), Bound(1.0, "lower", "stand-in"))

    monkeypatch.setattr(Training, "epsilon", fake_epsilon)
    args = ["epsilon", "--sigma", "1.1", "--scheme", "shuffle", "--batch-size", "256",
            "--dataset-size", "60000", "--epochs", "60", "--delta", "1e-5"]
    assert main(args) == 0
    assert seen[0].scheme == pa.Shuffle(256, 60000)
    assert seen[0].steps == 60 * 235  # ceil(60000 / 256) steps an epoch, PyTorch's default
    capsys.readouterr()

    def refuse(self, delta, accountant="best"):
        raise NotApplicable("stand-in refusal:\n  not analysed")

    monkeypatch.setattr(Training, "epsilon", refuse)
    assert main(args) == 2
    assert capsys.readouterr().err == "privamp: error: stand-in refusal: not analysed\n"


def test_drop_last_and_persistent_reach_the_run(capsys):
    # one batch of 10 an epoch (drop_last drops nothing): deterministic batches over E epochs
    # are one Gaussian of mean shift sqrt(E) / sigma (Balle & Wang 2018, Thm 8)
    assert main(["delta", "--sigma", "2", "--scheme", "deterministic", "--batch-size", "10",
                 "--dataset-size", "10", "--drop-last", "--epochs", "4", "--epsilon", "1",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert "drop_last=True" in out["inputs"]["run"]["scheme"] and out["inputs"]["drop_last"]
    exact = _gauss_delta(1.0, 1.0)
    assert out["upper"]["value"] >= exact * (1 - 1e-12)
    assert out["upper"]["value"] == pytest.approx(exact, rel=1e-3)


@pytest.mark.parametrize("flags", [
    ["--scheme", "balls-in-bins-persistent", "--batches", "10"],
    ["--scheme", "truncated-poisson", "--rate", "0.01", "--max-batch-size", "20",
     "--dataset-size", "1000"],
    ["--scheme", "shuffle", "--batch-size", "10", "--dataset-size", "100", "--persistent"],
])
def test_new_schemes_answer_or_refuse_in_one_line(flags, capsys):
    code = main(["epsilon", "--sigma", "1", "--steps", "20", "--delta", "1e-5", *flags])
    out, err = capsys.readouterr()
    if code == 0:  # an accountant for it has landed: an upper bound is printed
        assert "upper" in out or "exact" in out
    else:
        assert code == 2 and err.startswith("privamp: error:") and err.count("\n") == 1


def test_subprocess_smoke_new_flags():
    code, out, err = run_cli("delta", "--sigma", "2", "--scheme", "shuffle", "--batch-size",
                             "10", "--dataset-size", "10", "--drop-last", "--epochs", "4",
                             "--epsilon", "1", "--json")
    assert code == 0, err
    g = json.loads(out)
    assert "drop_last=True" in g["inputs"]["run"]["scheme"]
    # shuffling one batch of everyone is the deterministic batch: a Gaussian of shift 1
    assert g["upper"]["value"] == pytest.approx(_gauss_delta(1.0, 1.0), rel=1e-3)
    code, out, err = run_cli("epsilon", "--help")
    assert code == 0
    for flag in ("--drop-last", "--persistent", "--max-batch-size", "balls-in-bins-persistent",
                 "truncated-poisson"):
        assert flag in out


def test_compare_takes_a_batch_size_that_does_not_divide_the_dataset(capsys):
    assert main(["compare", "--sigma", "1", "--batch-size", "7", "--dataset-size", "100",
                 "--epochs", "2", "--delta", "1e-5", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["inputs"]["run"]["steps"] == 2 * 15  # ceil(100 / 7) steps an epoch
    assert len(out["rows"]) == 4


# ---- issue 33: CLI parity with Python, through the CLI itself ----------------------------

def test_calibrate_any_knob_from_the_cli(capsys):
    """--knob steps: T releases of Gaussian(sigma) at rate 1 are one Gaussian of shift
    sqrt(T) / sigma; the printed steps meet the target by the closed form, 1% more do not."""
    assert main(["calibrate", "--knob", "steps", "--sigma", "20", "--epsilon", "2",
                 "--delta", "1e-5", "--scheme", "poisson", "--rate", "1"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.startswith("steps ") and ": epsilon <= " in first
    T = int(first.split()[1].rstrip(":"))
    assert _gauss_delta(np.sqrt(T) / 20, 2.0) <= 1e-5 < _gauss_delta(np.sqrt(T * 1.01) / 20, 2.0)


def test_calibrate_rate_knob_json(capsys):
    assert main(["calibrate", "--knob", "rate", "--sigma", "1", "--epsilon", "1",
                 "--delta", "1e-5", "--scheme", "poisson", "--steps", "100", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["knob"] == "rate" and 0 < out["value"] < 1
    assert out["calibration"]["guarantee"]["upper"]["value"] <= 1.0


def test_calibrate_refuses_sigma_with_the_noise_knob_and_huge_targets_answer(capsys):
    assert main(["calibrate", "--sigma", "1", "--epsilon", "2", "--delta", "1e-5",
                 "--scheme", "poisson", "--rate", "1", "--steps", "1"]) == 2
    assert "drop --sigma" in capsys.readouterr().err
    # issue 27: --epsilon 1e6 was a traceback; now an answer at the search limit
    assert main(["calibrate", "--epsilon", "1e6", "--delta", "1e-5", "--scheme", "poisson",
                 "--rate", "0.01", "--steps", "10"]) == 0
    assert "search limit" in capsys.readouterr().out


def test_phases_from_the_cli_match_python(capsys):
    import privamp as pa

    assert main(["epsilon", "--delta", "1e-5", "--json",
                 "--phase", "--sigma 1.0 --scheme poisson --rate 0.01 --steps 200",
                 "--phase", "--sigma 2.0 --scheme poisson --rate 0.05 --steps 100"]) == 0
    got = json.loads(capsys.readouterr().out)["upper"]["value"]
    run = (pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=200)
           + pa.Training(pa.Gaussian(2.0), pa.Poisson(0.05), steps=100))
    assert got == pytest.approx(float(run.epsilon(1e-5)), rel=1e-9)
    assert main(["epsilon", "--delta", "1e-5", "--phase", "--sigma 1 --scheme nope"]) == 2
    assert "--phase 1" in capsys.readouterr().err


def test_config_file_for_any_command(tmp_path, capsys):
    cfg = tmp_path / "run.toml"
    cfg.write_text('sigma = 1.1\nscheme = "poisson"\nrate = 0.01\nsteps = 100\n'
                   'delta = 1e-5\njson = true\n')
    assert main(["epsilon", "--config", str(cfg)]) == 0
    a = json.loads(capsys.readouterr().out)
    assert main(["epsilon", "--sigma", "1.1", "--scheme", "poisson", "--rate", "0.01",
                 "--steps", "100", "--delta", "1e-5", "--json"]) == 0
    b = json.loads(capsys.readouterr().out)
    assert a["upper"] == b["upper"]
    # flags on the command line win over the file
    assert main(["epsilon", "--config", str(cfg), "--steps", "50"]) == 0
    assert json.loads(capsys.readouterr().out)["inputs"]["steps"] == 50
    phases = tmp_path / "phases.toml"
    phases.write_text('delta = 1e-5\n[[phase]]\nsigma = 1.0\nscheme = "poisson"\n'
                      'rate = 0.01\nsteps = 200\n[[phase]]\nsigma = 2.0\n'
                      'scheme = "poisson"\nrate = 0.05\nsteps = 100\n')
    assert main(["epsilon", "--config", str(phases)]) == 0
    assert " then " in capsys.readouterr().out
    assert main(["epsilon", "--config", str(tmp_path / "missing.toml")]) == 2
    assert "cannot read" in capsys.readouterr().err


def test_compare_steps_mean_training_steps(capsys):
    """Issue 33: compare --steps is the number of training steps (as everywhere), and the
    batch comes from --batch-size (no silent batch of 1)."""
    assert main(["compare", "--sigma", "1", "--batch-size", "100", "--dataset-size", "1000",
                 "--steps", "20", "--delta", "1e-5"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert "batch 100 of 1000, 20 steps (2 epochs)" in first
    assert main(["compare", "--sigma", "1", "--steps", "20", "--delta", "1e-5"]) == 2
    assert "--batch-size is required" in capsys.readouterr().err


def test_plot_checked_before_computing(tmp_path, capsys, monkeypatch):
    """A bad --plot path fails at once, before any accountant is asked."""
    import privamp.accounting.training as training

    def boom(*a, **k):
        raise AssertionError("computed before checking the plot path")

    monkeypatch.setattr(training.Training, "epsilon", boom)
    for cmd in (["compare", "--sigma", "1", "--batch-size", "10", "--dataset-size", "100",
                 "--epochs", "1", "--delta", "1e-5"],
                ["curve", "--sigma", "1", "--scheme", "poisson", "--rate", "0.1", "--steps",
                 "10", "--delta", "1e-5"]):
        assert main([*cmd, "--plot", str(tmp_path / "no" / "x.png")]) == 2
        assert "does not exist" in capsys.readouterr().err
        assert main([*cmd, "--plot", str(tmp_path / "x.txt")]) == 2
        assert "must end in" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["epsilon", "delta", "calibrate", "compare", "curve", "rdp"])
def test_every_help_example_runs(command, capsys):
    """The example in each command's --help runs and prints what it says (no --plot)."""
    import shlex

    assert main([command, "--help"]) == 0
    text = capsys.readouterr().out
    example = text.split("example:")[1].strip().splitlines()[0]
    argv = [a for a in shlex.split(example)[1:]]
    if "--plot" in argv:
        i = argv.index("--plot")
        del argv[i:i + 2]
    if command == "calibrate":
        argv = [a if a != "10000" else "100" for a in argv]  # keep the test quick
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.strip()


def test_compare_names_each_schemes_relation(capsys):
    """Without --relation, compare puts each scheme under its own default relation and says
    so: shuffled and deterministic batches under zero-out (no analysis covers them under
    add/remove), Poisson under add/remove.  The deterministic row is the Gaussian at shift
    sqrt(epochs) (Balle & Wang 2018, Thm 8), checked in closed form."""
    from scipy.stats import norm

    assert main(["compare", "--sigma", "1", "--batch-size", "100", "--dataset-size", "1000",
                 "--steps", "20", "--epsilon", "2"]) == 0
    out = capsys.readouterr().out
    det = next(line for line in out.splitlines() if line.startswith("deterministic"))
    assert "(under zero-out)" in det
    s = math.sqrt(2.0)
    exact = norm.cdf(s / 2 - 2 / s) - math.exp(2) * norm.cdf(-s / 2 - 2 / s)
    assert float(det.split()[2]) == pytest.approx(exact, rel=1e-3)
    poisson = next(line for line in out.splitlines() if line.startswith("poisson"))
    assert "(under" not in poisson
