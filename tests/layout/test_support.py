"""The support matrix is derived from the registries: every registered result has a row,
statuses follow the legend, and a result registered later appears without editing support.py."""

from __future__ import annotations

import numpy as np

from privamp.sampling.relations import AddRemove
from privamp.sampling.schemes import ModelSplit
from privamp.support import LEGEND, support_markdown, support_rows
from privamp.theorems.registry import ACCOUNTANTS, REGISTRY, rdp_method


def test_every_registered_result_has_a_row_and_statuses_are_in_the_legend():
    page = support_markdown()
    ours = [m.name for m in REGISTRY.values() if m.func.__module__.startswith("privamp.")]
    ours += [a.name for accs in ACCOUNTANTS.values() for a in accs
             if a.build.__module__.startswith("privamp.")]  # tests register stand-ins too
    assert len(ours) > 20
    for name in ours:
        assert f"| `{name}` |" in page
    rows = support_rows()
    assert {r[3] for r in rows} <= set(LEGEND)
    labels = {(r[0], r[1]) for r in rows if r[3] != "not yet"}
    for needed in [("Dropout()", "add/remove"), ("SubsampledModelSplit(4, 0.1)", "add/remove"),
                   ("Poisson(0.01)", "substitution"), ("Poisson(0.01)", "add/remove, group=4"),
                   ("BallsInBins(10)", "add/remove")]:  # issue 26: it had no row
        assert needed in labels
    assert "`black-box-group`" in page and "`balle-profile-black-box`" in page


def test_a_new_result_appears_automatically():
    name = "test-only-laplace-split"
    def _m(mech, scheme, relation, alpha):  # pragma: no cover - never evaluated
        return np.zeros_like(alpha)

    _m.__module__ = "privamp.theorems.test_only"  # as if registered by a privamp module
    try:
        rdp_method(name, "test", schemes=(ModelSplit,), relations=(AddRemove,))(_m)

        page = support_markdown()
        assert f"| `{name}` |" in page
        assert "| ModelSplit(4) | add/remove | laplace | partial |" in page
    finally:
        REGISTRY.pop(name, None)
