"""`privamp reproduce choquette2023`: jax_privacy's own accountant value for amplified BandMF
(dp-accounting on jax_privacy's amplified_bandmf_event) inside privamp's certified interval."""

import pytest

from privamp.reproduce import PAPERS, figures
from privamp.reproduce import choquette2023 as R

pytest.importorskip("dp_accounting")
pytest.importorskip("jax_privacy.experimental.accounting")


def test_registered():
    assert "choquette2023" in PAPERS and "jax_privacy" in PAPERS["choquette2023"]
    assert set(figures("choquette2023")) == {"1"}


def test_peer_inside_public_partition_interval():
    from privamp.sampling.cyclic import CyclicPoisson
    from privamp.sampling.relations import AddRemove, ZeroOut
    peer = R.jax_privacy_epsilon(20, "ADD_OR_REMOVE_ONE")
    lo, up = R.privamp_interval(CyclicPoisson(R.RATE, 4, "fixed"), 20, AddRemove())
    assert lo <= peer <= up * (1 + 1e-9) and up <= peer * (1 + 1e-4)
    e_lo, e_up = R.privamp_interval(CyclicPoisson(R.RATE, 4), 20, ZeroOut())
    assert e_lo <= R.jax_privacy_epsilon(20, "REPLACE_SPECIAL") <= e_up * (1 + 1e-9)


@pytest.mark.slow
def test_figure_writes_png_and_csv(tmp_path):
    paths = R.figure1(tmp_path, fast=True)
    assert [p.suffix for p in paths] == [".png", ".csv"]
    lines = paths[1].read_text().splitlines()
    assert len(lines) == 4 and lines[0].startswith("steps,jax_privacy_add_remove")
