"""PartialModelSplit (Dong, Chen, Ozgur 2025, Sec. 3.2.2) as a scheme usable in pa.rdp and
Training.  References: the closed-form forward moments of the d = 2 split pair plus the shared
Gaussian's a c^2 / (2 sigma^2) (below), the unsplit Gaussian (above), and the binomial closed
form of the sampled Gaussian at integer orders (mpmath)."""

from __future__ import annotations

import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa


def _split_forward_d2(n: int, s: float) -> float:
    """D_n(P || Q), P = (N(s e1) + N(s e2)) / 2 in 2-D, Q = N(0, I): E_Q[L^n] =
    2^-n sum_k C(n,k) e^{s^2 k(k-1)/2} e^{s^2 (n-k)(n-k-1)/2}."""
    m = mp.fsum(mp.binomial(n, k) * mp.e ** (s * s * (k * (k - 1) + (n - k) * (n - k - 1)) / 2)
                for k in range(n + 1)) / mp.mpf(2) ** n
    return float(mp.log(m) / (n - 1))


def test_full_rate_is_split_plus_shared_between_independent_references():
    sigma, c1, c2 = 1.5, 0.8, 0.6
    a = np.array([2.0, 3.0, 6.0])
    got = pa.rdp(pa.Gaussian(sigma), pa.PartialModelSplit(2, c1, c2), a)
    for al, v in zip(a, got, strict=True):
        low = _split_forward_d2(int(al), c1 / sigma) + al * c2**2 / (2 * sigma**2)
        high = al * (c1**2 + c2**2) / (2 * sigma**2)  # no amplification at all
        assert low <= v * (1 + 1e-9) and v < high


def test_subsampled_with_shared_part_is_the_dominating_sampled_gaussian():
    sigma, c1, c2, q = 2.0, 0.6, 0.8, 0.05
    a = np.array([2.0, 5.0, 12.0])
    got = pa.rdp(pa.Gaussian(sigma), pa.PartialModelSplit(3, c1, c2, rate=q), a)
    s = math.hypot(c1, c2) / sigma
    for al, v in zip(a, got, strict=True):
        n = int(al)
        psi = mp.fsum(mp.binomial(n, k) * (1 - mp.mpf(q)) ** (n - k) * mp.mpf(q) ** k
                      * mp.e ** (k * (k - 1) * s * s / 2) for k in range(n + 1))
        ref = float(mp.log(psi) / (n - 1))
        assert ref <= v <= ref * (1 + 1e-8)


def test_training_with_partial_split_is_fast_and_amplified():
    run = pa.Training(pa.Gaussian(2.72), pa.PartialModelSplit(3, 1.0, 0.0, rate=0.1), steps=1000)
    eps = run.epsilon(1e-5).upper.value
    base = pa.Training(pa.Gaussian(2.72), pa.Poisson(0.1), steps=1000).epsilon(1e-5).upper.value
    assert eps < base
    assert pa.Training(pa.Gaussian(2.72), pa.PartialModelSplit(3, 0.7, 0.7, rate=0.1),
                       epochs=2).epsilon(1e-5).upper is not None


@pytest.mark.parametrize("bad", [dict(parts=0), dict(parts=2, split_norm=0.0),
                                 dict(parts=2, shared_norm=-1.0), dict(parts=2, rate=0.0)])
def test_bad_parameters_are_refused(bad):
    with pytest.raises(ValueError):
        pa.PartialModelSplit(**bad)
