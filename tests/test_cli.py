"""The command line: error handling, output shapes (values are checked elsewhere against
independent references)."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from privamp.cli import main


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
    assert out["kind"] == "upper"


def test_epsilon_json_shape_matches_api(capsys):
    code = main(["epsilon", "--sigma", "1.1", "--scheme", "poisson", "--rate", "0.0042667",
                 "--steps", "1000", "--delta", "1e-5", "--json"])
    assert code == 0
    g = json.loads(capsys.readouterr().out)
    assert set(g) == {"upper", "lower"}
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
