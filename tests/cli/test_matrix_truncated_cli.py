"""``--truncated-batch-size`` with ``--dataset-size`` for ``--scheme cyclic-poisson`` on the
command line: the truncated amplified-BandMF reduction (truncated Poisson over one group of
n // k examples), against the same reduced run given directly as truncated Poisson."""

from __future__ import annotations

import json

import pytest

from privamp.cli import main

ARGS = ["--mechanism", "matrix", "--sigma", "2", "--coefficients", "1,0.5",
        "--scheme", "cyclic-poisson", "--rate", "0.2", "--cycle-length", "2", "--steps", "20",
        "--delta", "1e-5", "--relation", "zero-out", "--truncated-batch-size", "12"]


def _json(capsys, *args: str) -> dict:
    assert main([*args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_truncated_cyclic_matches_truncated_poisson_over_one_group(capsys):
    out = _json(capsys, "epsilon", *ARGS, "--dataset-size", "100")
    # reduced run: Gaussian at noise multiplier sigma / max column norm = 2 / sqrt(1.25),
    # truncated Poisson over 100 // 2 = 50 examples, ceil(20 / 2) = 10 rounds
    ref = _json(capsys, "epsilon", "--sigma", str(2 / 1.25 ** 0.5), "--scheme",
                "truncated-poisson", "--rate", "0.2", "--max-batch-size", "12",
                "--dataset-size", "50", "--steps", "10", "--delta", "1e-5",
                "--relation", "zero-out")
    assert out["upper"]["value"] == pytest.approx(ref["upper"]["value"], rel=1e-9)
    assert out["lower"] is None or out["lower"].get("value") is None


def test_truncated_cyclic_without_dataset_size_names_it(capsys):
    # amplified BandMF declines with the reason; the unamplified matrix Gaussian answers
    assert main(["epsilon", *ARGS]) == 0
    out = capsys.readouterr().out
    assert "amplified-bandmf does not apply" in out and "needs dataset_size" in out
    assert "without amplification" in out
