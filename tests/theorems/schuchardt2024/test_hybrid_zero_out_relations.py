"""Hybrid relations (Schuchardt et al. 2024, Thm F.2) and groups under the zero-out relation,
registered for pa.rdp and Training; checked against exact mixture divergences of small
enumerated datasets (20-digit mpmath quadrature)."""

from __future__ import annotations

import itertools

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.theorems.schuchardt2024 import hybrid_wor_substitution_rdp

A = np.array([2.0, 3.0, 6.0])


def _wor_law(values, q):
    """{sum of the batch: probability} for q of the values drawn without replacement."""
    subsets = list(itertools.combinations(range(len(values)), q))
    law: dict[float, float] = {}
    for s in subsets:
        m = round(sum(values[i] for i in s), 12)
        law[m] = law.get(m, 0.0) + 1.0 / len(subsets)
    return law


def _exact_eps(a, p_law, q_law, sigma):
    """max of both orders of D_a between two Gaussian mixtures given as {mean: weight}."""
    mp.mp.dps = 20

    def dens(z, law):
        return mp.fsum(w * mp.npdf(z, mu, sigma) for mu, w in law.items())

    pts = sorted({*p_law, *q_law})
    out = []
    for p, q in ((p_law, q_law), (q_law, p_law)):
        psi = mp.quad(lambda z, p=p, q=q: dens(z, p) ** a * dens(z, q) ** (1 - a),
                      [-mp.inf, *pts, mp.inf])
        out.append(float(mp.log(psi) / (a - 1)))
    return max(out)


def test_f2_is_registered_and_equals_wang_at_double_sensitivity():
    g, s = pa.Gaussian(2.0), pa.WithoutReplacement(10, 200)
    got = pa.rdp(g, s, A, pa.HybridSubstitution(), method="schuchardt-hybrid")
    np.testing.assert_allclose(got, hybrid_wor_substitution_rdp(g, s, A), rtol=1e-12)
    ref = pa.rdp(pa.Gaussian(2.0, 2.0), s, A, pa.Substitution(), method="wang2019")
    np.testing.assert_allclose(got, ref, rtol=1e-9)


def test_hybrid_bounds_enumerated_worst_case():
    """Sum query, batch insertion/removal sensitivity 1: the substituted record moves from
    +1 to -1 (distance 2); others arbitrary."""
    sigma, q = 1.0, 1
    others = [0.3, -0.2]
    bound = pa.rdp(pa.Gaussian(sigma), pa.WithoutReplacement(q, 3), A, pa.HybridSubstitution())
    x, x2 = _wor_law(others + [1.0], q), _wor_law(others + [-1.0], q)
    for a, v in zip(A, bound, strict=True):
        assert _exact_eps(a, x, x2, sigma) <= v


def test_zero_out_groups_under_poisson_equal_add_remove_and_bound_the_exact_mixture():
    g, r = pa.Gaussian(1.2), 0.1
    zo = pa.rdp(g, pa.Poisson(r), A, pa.ZeroOut(group=2))
    np.testing.assert_allclose(zo, pa.rdp(g, pa.Poisson(r), A, pa.AddRemove(group=2)), rtol=1e-12)
    # x: two records of value 1 each sampled with prob r; x': both zeroed (value 0)
    mix = {0.0: (1 - r) ** 2, 1.0: 2 * r * (1 - r), 2.0: r * r}
    for a, v in zip(A, zo, strict=True):
        ex = _exact_eps(a, mix, {0.0: 1.0}, 1.2)
        assert ex <= v <= ex * (1 + 1e-7)


@pytest.mark.parametrize("group", [1, 2])
def test_zero_out_without_replacement_bounds_enumerated_datasets(group):
    sigma, q, n = 1.0, 2, 5
    values = [1.0] * group + [0.4, -0.7, 0.0, 0.2][: n - group]
    assert len(values) == n
    zeroed = [0.0] * group + values[group:]
    bound = pa.rdp(pa.Gaussian(sigma), pa.WithoutReplacement(q, n), A, pa.ZeroOut(group=group))
    for a, v in zip(A, bound, strict=True):
        assert _exact_eps(a, _wor_law(values, q), _wor_law(zeroed, q), sigma) <= v


def test_training_uses_the_new_relations():
    for rel in (pa.ZeroOut(), pa.HybridSubstitution(), pa.ZeroOut(group=2)):
        g = pa.Training(pa.Gaussian(1.0), pa.WithoutReplacement(10, 1000), steps=50,
                        relation=rel).epsilon(1e-5)
        assert g.upper is not None and np.isfinite(g.upper.value) and g.upper.value > 0
