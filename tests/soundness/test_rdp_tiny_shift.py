"""The sampled Gaussian's RDP at a tiny shift (found by the session-9 memory helper): the
mixture cap log((1-q) + q e^{(a-1) a s^2/2}) was evaluated as a logaddexp whose rounding of
log(1-q) (~1e-18) swamped a value of ~1e-22, so it rounded to 0 and replaced the exact
binomial sum: `rdp(Gaussian(1, sensitivity=1e-9), Poisson(0.01), 2)` reported <= 1e-300
against the truth log(1 + q^2 (e^{s^2} - 1)) ~ 1e-22, and the DP upper fell below the
certified lower.  References: mpmath's closed form at integer orders (MTZ 2019, Sec. 3.3)."""

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.theorems.mironov2019 import sampled_gaussian_rdp


def _exact(alpha: int, s: float, q: float) -> float:
    mp.mp.dps = 60
    s, q = mp.mpf(s), mp.mpf(q)
    a = sum(mp.binomial(alpha, k) * q**k * (1 - q) ** (alpha - k)
            * mp.e ** (k * (k - 1) * s**2 / 2) for k in range(alpha + 1))
    return float(mp.log(a) / (alpha - 1))


@pytest.mark.parametrize("s", [1e-9, 1e-6, 1e-3])
@pytest.mark.parametrize("alpha", [2, 3, 17])
def test_tiny_shift_rdp_is_an_upper_bound(s, alpha):
    ref = _exact(alpha, s, 0.01)
    got = float(sampled_gaussian_rdp(np.array([float(alpha)]), s, 0.01)[0])
    assert ref <= got <= ref * (1 + 1e-8)


def test_tiny_shift_run_upper_is_above_its_lower():
    run = pa.Training(pa.Gaussian(1.0, sensitivity=1e-9), pa.Poisson(0.01), steps=1)
    e = run.epsilon(1e-15)
    assert e.lower is not None and e.upper is not None
    assert e.lower.value <= e.upper.value
    assert float(pa.rdp(pa.Gaussian(1.0, sensitivity=1e-9), pa.Poisson(0.01), 2).value) \
        >= _exact(2, 1e-9, 0.01)
