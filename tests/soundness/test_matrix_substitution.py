"""Matrix mechanisms under Poisson-type sampling and substitution: the lower bound must be
realised by gradients of norm <= clip (review of issue 32).

For one Poisson step (rate q, noise multiplier sigma, clip 1) the two substituted records'
gradients a, b lie in the unit ball; with the other records' gradients fixed the pair is a
translate of ``((1-q) N(0) + q N(a), (1-q) N(0) + q N(b))`` (random other contributions only
mix translates: joint convexity), so the worst pair's delta is the supremum over a, b.  A
grid over (|a|, |b|, angle) with 2-D numerical integration (review notes) puts it at the
antipodal pair a = -b = u: delta(eps=1) = 0.0192446 for q = 0.3, sigma = 1 (mpmath below).
privamp's Poisson-substitution lower pair at 2 clip, ``((1-q) N(0) + q N(2), N(0))``, has
delta 0.1043 there: not realisable by clipped gradients, so the matrix accountants must not
report it as a lower bound.
"""

from __future__ import annotations

import mpmath as mp
import pytest

import privamp as pa

Q, EPS = 0.3, 1.0


def _mixture_delta(shift_p: float, shift_q: float | None) -> float:
    """delta(EPS) of ((1-Q) N(0) + Q N(shift_p), (1-Q) N(0) + Q N(shift_q)) (shift_q None:
    N(0)); the likelihood ratio is increasing, so the optimal set is a half-line."""
    mp.mp.dps = 30
    q = mp.mpf(Q)

    def p(y):
        return (1 - q) * mp.npdf(y) + q * mp.npdf(y, shift_p, 1)

    def r(y):
        return mp.npdf(y) if shift_q is None else (1 - q) * mp.npdf(y) + q * mp.npdf(
            y, shift_q, 1)

    y0 = mp.findroot(lambda y: p(y) - mp.e ** EPS * r(y), 2)
    return float(mp.quad(lambda y: p(y) - mp.e ** EPS * r(y), [y0, mp.inf]))


def test_references():
    assert _mixture_delta(1.0, -1.0) == pytest.approx(0.0192446280, rel=1e-8)
    assert _mixture_delta(2.0, None) == pytest.approx(0.1043388846, rel=1e-8)


@pytest.mark.parametrize("mech,scheme", [
    (pa.MatrixMechanism.identity(1.0), pa.Poisson(Q)),
    (pa.MatrixMechanism.identity(1.0), pa.CyclicPoisson(Q, 1)),
    (pa.MatrixMechanism.identity(1.0), pa.CyclicPoisson(Q, 2, partition="fixed")),
    (pa.MatrixMechanism.banded([1.0, 0.0001], 1.0), pa.CyclicPoisson(Q, 2, partition="fixed")),
])
def test_substitution_lower_is_realised_by_clipped_gradients(mech, scheme):
    worst = _mixture_delta(1.0, -1.0)  # the worst pair of clipped gradients, one step
    g = pa.Training(mech, scheme, steps=1, relation=pa.Substitution()).delta(EPS)
    assert g.lower is not None and g.lower.kind == "lower"
    assert g.lower.value <= worst
    # the zero-gradient replacement (zero-out pair at clip) is what is realised
    assert g.lower.value >= 0.99 * _mixture_delta(1.0, None)
    assert g.upper.value >= worst
