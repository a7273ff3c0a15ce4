"""Adversarial review of session 11's numerical shortcuts (review2), against references
independent of privamp's own outputs:

* ``numerics.fft_power.atom_power`` (the few-atoms path of ``self_convolve_power``): its
  certified window error against exact T-fold convolutions -- binomial laws in closed form
  (mpmath, T up to 1e7), the binomial expansion ``sum_k C(T, k) a^(T-k) r^{*k}`` of one atom
  plus a rest just under 2^-16 of the mass (long-double direct convolutions of nonnegative
  terms), and atoms of huge dynamic range / eight atoms (long-double repeated squaring).
* ``pld.binning.vertex_lowering`` (chunked) satisfies its constraints and does not depend on
  the chunk size (bit for bit); ``pld.tables.profile_at`` against the direct O(n^2) sum.
* ``accountants.poisson_bounds.swapped_pessimistic``: one step against the add direction's
  closed-form profile (mpmath) at negative epsilons, at and above the grid's top loss, for
  q = 1; a composed Gaussian run (closed form: shift sqrt(T) s) swapped; a tiny-rate run's
  swapped add direction above the identity applied to the remove direction's certified
  optimistic side (``1 - a + a D_opt(1/a)``, a lower bound of the add profile).
* ``PLDAnalysis.renyi_floor`` (T x one step's optimistic floor): below the exact Rényi DP of
  both directions (mpmath quadrature, fractional and large orders).
* ``pld.compose.compose_two_level`` (first-level blocks ~T/32, capped 32000): pessimistic above
  and optimistic below the closed-form Gaussian composition (shift sqrt(T) s) at T up to 1e7.
"""

from __future__ import annotations

import logging
import math

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.accountants.poisson import pld_analysis, poisson_pairs
from privamp.numerics import fft as fft_mod
from privamp.pairs.mechanism_pairs import GaussianPair
from privamp.pld import binning
from privamp.pld.compose import compose_two_level
from privamp.pld.discretise import discretise
from privamp.pld.grid import PLD
from privamp.pld.tables import profile_at

LD_OK = float(np.finfo(np.longdouble).eps) < 1e-18  # 80-bit long double (x86)


# ------------------------------------------------------------------------------------------
# 1. the few-atoms power path (branch mempld)
# ------------------------------------------------------------------------------------------

def _atom_power_forced(monkeypatch: pytest.MonkeyPatch) -> list[bool]:
    """Route every ``self_convolve_power`` call through the atom path (threshold 1) and record
    whether it was taken."""
    pytest.importorskip("privamp.numerics.fft_power")
    if not hasattr(fft_mod, "atom_power"):
        pytest.skip("self_convolve_power has no atom path")
    used: list[bool] = []
    orig = fft_mod.atom_power

    def spy(*a, **k):
        r = orig(*a, **k)
        used.append(r is not None)
        return r

    monkeypatch.setattr(fft_mod, "atom_power", spy)
    monkeypatch.setattr(fft_mod, "ATOM_MIN_LEN", 1)
    return used


def _check_window(res, ref_window) -> float:
    """z = x_window + a + e with a >= 0, sum a <= tau_lo + tau_hi, sum |e| <= err: the
    negative deviations alone are <= err, all of them <= err + tau.  Returns dev / err."""
    assert res is not None
    start, z, err, tau_lo, tau_hi = res
    ref = np.asarray(ref_window(start, len(z)), dtype=np.longdouble)
    diff = z.astype(np.longdouble) - ref
    neg = float(-diff[diff < 0].sum())
    tot = float(np.abs(diff).sum())
    assert np.all(np.isfinite(z)) and math.isfinite(err)
    assert neg <= err, (neg, err)
    assert tot <= err + tau_lo + tau_hi, (tot, err, tau_lo + tau_hi)
    return max(neg, tot - tau_lo - tau_hi) / err


def _binomial_window(p: np.ndarray, T: int):
    """``ref(s, W)``: entries s .. s + W - 1 of the T-fold power of the two atoms ``p``
    (binomial in closed form with the float64 inputs' exact values, mpmath, 40 digits)."""
    mp.mp.dps = 40
    a, b = mp.mpf(float(p[0])), mp.mpf(float(p[1]))

    def ref(s: int, W: int) -> np.ndarray:
        return np.array([np.longdouble(str(mp.binomial(T, k) * b**k * a ** (T - k)))
                         for k in range(s, s + W)], dtype=np.longdouble)

    return ref


@pytest.mark.skipif(not LD_OK, reason="needs 80-bit long double")
@pytest.mark.parametrize("q,T", [(1e-5, 10**7), (1e-7, 10**7), (2.0**-24, 10**7), (0.3, 10**5),
                                 (1e-3, 7)])
def test_atom_path_binomial_closed_form(q, T, monkeypatch) -> None:
    """p = (1 - q) at 0, q at 1 (two atoms, no rest): p^{*T} is binomial, in closed form with
    the float64 inputs' exact values (mpmath, 40 digits)."""
    used = _atom_power_forced(monkeypatch)
    p = np.array([1.0 - q, q])
    res = fft_mod.self_convolve_power(p, T, 1e-20)
    assert used == [True]
    _check_window(res, _binomial_window(p, T))


@pytest.mark.skipif(not LD_OK, reason="needs 80-bit long double")
@pytest.mark.parametrize("q,T,tau", [(0.3, 10**5, 0.2), (1e-3, 10**6, 0.05), (0.5, 1000, 0.4),
                                     (0.01, 10**7, 1e-6)])
def test_atom_path_aliasing_window(q, T, tau, monkeypatch) -> None:
    """Large tau: the window is shorter than the support and the circular transform folds
    mass into it; the deviation from the exact binomial window is then >= -err entrywise in
    sum and <= err + tau_lo + tau_hi in l1."""
    used = _atom_power_forced(monkeypatch)
    p = np.array([1.0 - q, q])
    res = fft_mod.self_convolve_power(p, T, tau)
    assert used == [True]
    _check_window(res, _binomial_window(p, T))


@pytest.mark.slow
@pytest.mark.skipif(not LD_OK, reason="needs 80-bit long double")
def test_atom_path_default_thresholds_far_atoms(monkeypatch) -> None:
    """At the production thresholds (a transform of 2.7e6 points): atoms 123457 apart,
    q = 1e-5, T = 1e5; p^{*T} is binomial on the multiples of 123457 (mpmath)."""
    pytest.importorskip("privamp.numerics.fft_power")
    used: list[bool] = []
    orig = fft_mod.atom_power
    monkeypatch.setattr(fft_mod, "atom_power",
                        lambda *a, **k: used.append(orig(*a, **k)) or used[-1])
    q, T, J = 1e-5, 10**5, 123_457
    p = np.zeros(J + 1)
    p[0], p[J] = 1.0 - q, q
    res = fft_mod.self_convolve_power(p, T, 1e-20)
    assert len(used) == 1 and used[0] is not None
    mp.mp.dps = 40
    a, b = mp.mpf(float(p[0])), mp.mpf(float(p[J]))

    def ref(s: int, W: int) -> np.ndarray:
        out = np.zeros(W, dtype=np.longdouble)
        for k in range(-(-s // J), (s + W - 1) // J + 1):
            out[k * J - s] = np.longdouble(str(mp.binomial(T, k) * b**k * a ** (T - k)))
        return out

    _check_window(res, ref)


def _ld_power(p: np.ndarray, T: int) -> np.ndarray:
    """p^{*T} by repeated squaring of direct long-double convolutions (nonnegative terms:
    relative error ~ (length log2 T) 2^-64 per entry)."""
    base = np.asarray(p, dtype=np.longdouble)
    out = np.ones(1, dtype=np.longdouble)
    while T:
        if T & 1:
            out = np.convolve(out, base)
        T >>= 1
        if T:
            base = np.convolve(base, base)
    return out


@pytest.mark.skipif(not LD_OK, reason="needs 80-bit long double")
@pytest.mark.parametrize("T", [2, 50, 10**4])
def test_atom_path_rest_at_the_limit(T, monkeypatch) -> None:
    """One atom of mass 1 plus a rest of 0.999 * 2^-16 of it, spread over 600 entries each
    just under the atom threshold 2^-24: the binomial expansion sum_k C(T, k) r^{*k}
    (long double, k up to T eps + 20 sd)."""
    used = _atom_power_forced(monkeypatch)
    rng = np.random.default_rng(1)
    eps = 2.0**-16 * 0.999
    w = 1.0 + 0.5 * rng.random(600)
    w = w / w.sum() * eps
    assert w.max() < 2.0**-24
    p = np.concatenate([[1.0], w])
    res = fft_mod.self_convolve_power(p, T, 1e-25)
    assert used == [True]

    def ref(s: int, W: int) -> np.ndarray:
        out = np.zeros(s + W, dtype=np.longdouble)
        rk = np.ones(1, dtype=np.longdouble)
        wl = np.concatenate([[0.0], w]).astype(np.longdouble)
        lam, k = T * eps, 0
        while True:
            c = np.longdouble(str(mp.binomial(T, k)))
            n = min(len(rk), len(out))
            out[:n] += c * rk[:n]
            if k >= T or k > lam + 20 * math.sqrt(lam + 1) + 30:
                return out[s:]
            rk = np.convolve(rk, wl)[: s + W]
            k += 1

    _check_window(res, ref)


@pytest.mark.skipif(not LD_OK, reason="needs 80-bit long double")
@pytest.mark.parametrize("case", ["dynamic", "eight"])
@pytest.mark.parametrize("T", [2, 5, 30])
def test_atom_path_many_atoms_and_dynamic_range(case, T, monkeypatch) -> None:
    """Atoms from 1 down to the 2^-24 threshold with a rest just below it, and eight atoms of
    random masses over a 1e-9 floor: long-double repeated squaring as the reference."""
    used = _atom_power_forced(monkeypatch)
    rng = np.random.default_rng(T)
    if case == "dynamic":
        p = np.zeros(40)
        p[0], p[3], p[7], p[39] = 1.0, 2.0**-24, 1e-3, 0.5
        p[10:20] = 2.0**-26
    else:
        p = rng.random(64) * 1e-9
        p[rng.choice(64, 8, replace=False)] = rng.random(8) + 0.01
    res = fft_mod.self_convolve_power(p, T, 1e-30)
    assert used == [True]
    full = _ld_power(p, T)

    def ref(s: int, W: int) -> np.ndarray:
        out = np.zeros(W, dtype=np.longdouble)
        seg = full[s : s + W]
        out[: len(seg)] = seg
        return out

    _check_window(res, ref)


def test_atom_path_declines_masses_near_underflow(monkeypatch) -> None:
    """Total masses whose T-th power underflows: a decline (None) or a finite certified
    window, never a NaN or a warning."""
    _atom_power_forced(monkeypatch)
    for scale, T in ((1e-200, 2), (1e-100, 3), (0.5, 1000), (0.3, 600)):
        p = np.zeros(10)
        p[0], p[4] = scale, scale * 1e-7
        res = fft_mod.self_convolve_power(p, T, 1e-30)
        if res is not None:
            assert np.all(np.isfinite(res[1])) and math.isfinite(res[2])


# ------------------------------------------------------------------------------------------
# 2. vertex_lowering (chunked) and profile_at (in place): independent properties
# ------------------------------------------------------------------------------------------

def _vl_inputs(seed: int, K: int):
    rng = np.random.default_rng(seed)
    g = rng.exponential(1.0, K) * (rng.random(K) < 0.8) * 10.0 ** rng.uniform(-12, 0, K)
    t = rng.random(K)
    t[rng.random(K) < 0.05] = rng.random() * 1e-3
    t[rng.random(K) < 0.02] = 1.0 - 1e-12
    cap = None if seed % 2 else rng.exponential(1.0, K + 1) * 10.0 ** rng.uniform(-14, 0, K + 1)
    return g, t, cap


@pytest.mark.parametrize("seed,K", [(0, 1), (1, 33), (2, 1000), (3, 4096 * 32 + 5)])
def test_vertex_lowering_constraints(seed, K) -> None:
    """mu >= 0 and (1 - t_i) mu_i + t_i mu_{i+1} >= g_i at every segment (the soundness of
    the optimistic chords), across chunk boundaries."""
    g, t, cap = _vl_inputs(seed, K)
    mu = binning.vertex_lowering(g, t, cap)
    assert mu.shape == (K + 1,) and np.all(mu >= 0) and np.all(np.isfinite(mu))
    lhs = (1.0 - t) * mu[:-1] + t * mu[1:]
    assert np.all(lhs >= g * (1 - 1e-12))


@pytest.mark.parametrize("chunk", [1, 2, 3, 7])
def test_vertex_lowering_chunk_invariant(chunk, monkeypatch) -> None:
    """The chunked chain gives the same bits whatever the chunk size (checked in review2
    against main's one-pass form: 174 random cases, 0 differences)."""
    if not hasattr(binning, "_CHAIN_CHUNK"):
        pytest.skip("vertex_lowering is not chunked here")
    for seed in (0, 1):
        g, t, cap = _vl_inputs(seed, 3000)
        ref = binning.vertex_lowering(g, t, cap)
        monkeypatch.setattr(binning, "_CHAIN_CHUNK", chunk)
        got = binning.vertex_lowering(g, t, cap)
        monkeypatch.undo()
        assert got.tobytes() == ref.tobytes()


@pytest.mark.skipif(not LD_OK, reason="needs 80-bit long double")
def test_profile_at_direct_sum() -> None:
    """G_j = sum_{k > j} m_k (1 - e^{-(l_k - l_j)}), directly in long double (O(n^2))."""
    rng = np.random.default_rng(5)
    n = 400
    m = rng.exponential(1.0, n) * 10.0 ** rng.uniform(-30, 0, n)
    l = np.cumsum(rng.exponential(0.3, n)) - 40.0
    got = profile_at(m, l)
    ml, ll = m.astype(np.longdouble), l.astype(np.longdouble)
    ref = np.array([np.sum(ml[j + 1:] * -np.expm1(-(ll[j + 1:] - ll[j]))) for j in range(n)])
    np.testing.assert_allclose(got, ref.astype(float), rtol=1e-11, atol=1e-300)


# ------------------------------------------------------------------------------------------
# 3. swapped_pessimistic (branch tiny)
# ------------------------------------------------------------------------------------------

def _swap():
    return pytest.importorskip("privamp.accountants.poisson_bounds").swapped_pessimistic


def _add_profile(q: float, s: float, eps: float) -> float:
    """H_{e^eps}(N(0, 1) || q N(s, 1) + (1 - q) N(0, 1)) for any real eps (mpmath)."""
    mp.mp.dps = 40
    a, q_, s_ = mp.exp(eps), mp.mpf(q), mp.mpf(s)
    inner = 1 / a - (1 - q_)
    if inner <= 0:
        return 0.0
    x = (mp.log(inner / q_) + s_**2 / 2) / s_
    return float(mp.ncdf(x) - a * ((1 - q_) * mp.ncdf(x) + q_ * mp.ncdf(x - s_)))


@pytest.mark.parametrize("q,sigma,h", [(1e-3, 0.5, 1e-4), (1e-5, 0.3, 1e-5), (0.5, 0.3, 1e-3),
                                       (1.0, 1.0, 1e-3), (1e-7, 4.0, 1e-8)])
def test_swapped_step_every_epsilon(q, sigma, h) -> None:
    """One step's swap above the add direction's exact profile at negative epsilons (a
    composition needs them), at, just above and far above the swapped grid's top loss E."""
    swap = _swap()
    p, _ = discretise(poisson_pairs(pa.Gaussian(sigma), q)[0], h, 1e-16, optimistic=False)
    sw = swap(p)
    assert sw is not None and sw.kind == "pessimistic"
    top = sw.h * (sw.offset + len(sw.masses) - 1)
    for eps in (-20.0, -5.0, -1.0, -0.1, -1e-3, -1e-6, 0.0, 1e-8, 0.5 * top, 0.99 * top, top,
                1.01 * top, top + h, 2 * top + 0.1, 5.0):
        assert float(sw.delta(eps)) >= _add_profile(q, 1.0 / sigma, eps), eps


@pytest.mark.parametrize("s,T", [(0.05, 100), (0.01, 1000), (0.5, 3)])
def test_swapped_composed_gaussian_closed_form(s, T) -> None:
    """The T-fold Gaussian pair's composed pessimistic PLD swapped (the pair is symmetric):
    above the closed form with shift mu = sqrt(T) s at every epsilon, negative included."""
    swap = _swap()
    p, _ = discretise(GaussianPair(s), 1e-4, 1e-16)
    run = compose_two_level(p, T)
    sw = swap(run)
    assert sw is not None
    mu = mp.mpf(s) * mp.sqrt(T)
    for e in (-3.0, -0.5, 0.0, 0.5, 1.0, 2.0, 4.0, 6.0):
        eps = float(mu * mu / 2 + e * mu) if e > 0 else e
        exact = float(mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2))
        assert float(sw.delta(eps)) >= exact, eps


@pytest.mark.parametrize("variant", ["top to inf", "low moved up", "slack", "shift up",
                                     "all positive"])
def test_swapped_pessimistic_transforms_of_a_gaussian_step(variant) -> None:
    """Pessimistic PLDs of N(s, 1) vs N(0, 1) made looser in each way a composition does
    (top mass moved to +inf, low tail moved up, masses scaled up with slack, every loss
    rounded up a bin, only positive losses): each swap is None or above the closed form at
    every epsilon in [-6, 6] (the pair is symmetric), so inf_mass, slack and the top loss E
    enter c1, c2 on the safe side."""
    swap = _swap()
    s = 0.8
    p, _ = discretise(GaussianPair(s), 1e-3, 1e-16)
    m, n = p.masses.copy(), len(p.masses)
    inf_mass, slack, offset = p.inf_mass, p.slack, p.offset
    if variant == "top to inf":
        k = int(np.searchsorted(np.cumsum(m[::-1]), 1e-4))
        inf_mass += float(m[n - k:].sum()) * (1 + 1e-12)
        m[n - k:] = 0.0
    elif variant == "low moved up":
        m[600] += m[:600].sum() * (1 + 1e-12)
        m[:600] = 0.0
    elif variant == "slack":
        m *= 1 + 1e-7
        slack += 1e-6
    elif variant == "shift up":
        offset += 1
    else:
        j0 = -p.offset + 1
        m[j0] += m[:j0].sum() * (1 + 1e-12)
        m[:j0] = 0.0
    sw = swap(PLD(p.h, offset, m, inf_mass, "pessimistic", slack))
    if sw is None:
        return
    mp.mp.dps = 30
    for eps in np.linspace(-6.0, 6.0, 61):
        e = mp.mpf(float(eps))
        exact = float(mp.ncdf(-e / s + s / 2) - mp.exp(e) * mp.ncdf(-e / s - s / 2))
        assert float(sw.delta(float(eps))) >= exact, eps


@pytest.mark.parametrize("q,sigma,T", [(1e-5, 4.0, 10**4), (1e-4, 2.0, 10**4), (1e-4, 2.0, 100),
                                       (1e-6, 3.0, 10**5), (1e-5, 1.0, 10), (1e-3, 1.0, 100),
                                       (1e-4, 0.5, 50), (1e-2, 0.8, 1000)])
def test_swapped_run_above_identity_of_optimistic(q, sigma, T) -> None:
    """A tiny-rate run's add direction (as the analysis leaves it, and the remove direction's
    composed pessimistic PLD swapped explicitly) is above ``1 - a + a O(1/a)`` with O the remove
    direction's certified optimistic profile: H_a(Q || P) = 1 - a + a H_{1/a}(P || Q) applied to
    a lower bound.  (dp-accounting is no peer here: its optimistic add PLD at these rates is
    ~1e-15 for every epsilon, and its pessimistic one diverges as its grid is refined.)"""
    swap = _swap()
    an = pld_analysis(pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T))
    up, _ = an.epsilon(1e-5)
    rem_p, rem_o = an.pld().directions[0]
    adds = [an.pld().directions[1][0], swap(rem_p)]
    e = float(up.value)
    for eps in (0.0, 1e-6, 0.25 * e, 0.5 * e, e, 1.5 * e, 3 * e):
        a = math.exp(eps)
        lower = 1.0 - a + a * float(rem_o.delta(-eps))  # (PLD.delta takes any real eps)
        for add in adds:
            assert add is not None
            assert float(add.delta(eps)) >= lower, (eps, lower)


# ------------------------------------------------------------------------------------------
# 4. the Rényi floor (branch tiny's product floor; main's composed one)
# ------------------------------------------------------------------------------------------

def _rdp(q: float, s: float, alpha: float, remove: bool) -> float:
    """D_alpha of one Poisson-subsampled Gaussian step, remove (M || N(0,1)) or add
    (N(0,1) || M) direction, by quadrature (mpmath)."""
    mp.mp.dps = 30
    q_, s_, a = mp.mpf(q), mp.mpf(s), mp.mpf(alpha)
    power = a if remove else 1 - a

    def f(x):
        return mp.npdf(x) * (1 - q_ + q_ * mp.exp(s_ * x - s_ * s_ / 2)) ** power

    c = s_ / 2 + (a * s_ if remove else 0)
    return float(mp.log(mp.quad(f, [-mp.inf, -10, 0, c, c + 10, mp.inf])) / (a - 1))


@pytest.mark.slow
@pytest.mark.parametrize("q,sigma,T", [(1e-5, 4.0, 10**4), (1e-3, 0.8, 1000), (1e-5, 1.0, 10**6),
                                       (1e-6, 0.5, 10**5)])
def test_renyi_floor_below_exact_both_directions(q, sigma, T) -> None:
    """Screening's floor is <= T x max over directions of the exact one-step Rényi
    divergence, at fractional, integer and large orders (an overstated floor would skip an RDP
    accountant that could win: a tightness, not a soundness, failure)."""
    an = pld_analysis(pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T))
    alphas = np.array([1 + 1e-6, 1.01, 1.5, 2.0, 3.7, 8.0, 32.0, 100.0, 1000.0])
    floor = an.renyi_floor(alphas)
    for a, f in zip(alphas, floor, strict=True):
        exact = T * max(_rdp(q, 1 / sigma, a, True), _rdp(q, 1 / sigma, a, False))
        assert f <= exact, (a, f, exact)


# ------------------------------------------------------------------------------------------
# 5. compose_two_level's long first-level blocks (main)
# ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("s,T,h", [(0.01, 10**5, 1e-4), (0.01, 999_983, 1e-4),
                                   (0.003, 4 * 10**6, 3e-5), (0.002, 10**7, 2e-5),
                                   (0.05, 10**5, 2e-4), (0.02, 123_457, 1e-4)])
def test_two_level_gaussian_closed_form(s, T, h) -> None:
    """T-fold Gaussian (shift mu = sqrt(T) s): the two-level pessimistic composition above and
    the optimistic one below the closed form, from eps < 0 to the 1e-10 tail."""
    p, o = discretise(GaussianPair(s), h, 1e-16)
    P, O = compose_two_level(p, T), compose_two_level(o, T)
    mp.mp.dps = 40
    mu = mp.mpf(s) * mp.sqrt(T)
    for e in (-2.0, -0.5, 0.0, 0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0):
        eps = float(mu * mu / 2 + (e - 1) * mu) if e > 0 else e
        exact = float(mp.ncdf(-eps / mu + mu / 2) - mp.exp(eps) * mp.ncdf(-eps / mu - mu / 2))
        assert float(P.delta(eps)) >= exact, ("upper", eps)
        assert float(O.delta(eps)) <= exact, ("lower", eps)


@pytest.mark.parametrize("q,sigma,T", [(1e-3, 1.0, 10**5), (1e-2, 2.0, 10**6),
                                       (0.05, 5.0, 200_000)])
def test_long_poisson_runs_bracket_dp_accounting(q, sigma, T) -> None:
    """Long Poisson-subsampled Gaussian runs (two-level, blocks ~T/32): privamp's certified
    lower epsilon is below dp-accounting's connect-the-dots pessimistic one (an upper bound
    of the truth up to its float error), and its upper within 1% of it.  (dp-accounting's
    optimistic side is no peer here: rounding losses down costs it ~T x 1e-4 nats.)"""
    dpa = pytest.importorskip("dp_accounting.pld.privacy_loss_distribution")
    logging.disable(logging.WARNING)
    try:
        ref = dpa.from_gaussian_mechanism(sigma, sampling_prob=q,
                                          value_discretization_interval=1e-4).self_compose(T)
    finally:
        logging.disable(logging.NOTSET)
    run = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T)
    for delta in (1e-5, 1e-9):
        g = run.epsilon(delta, accountant="pld")
        peer = ref.get_epsilon_for_delta(delta)
        assert float(g.lower.value) <= peer
        assert float(g.upper.value) >= float(g.lower.value)
        assert abs(float(g.upper.value) - peer) <= 0.01 * peer


@pytest.mark.parametrize("sigma,T,delta", [(100.0, 10**6, 1e-5), (1000.0, 10**7, 1e-3),
                                           (10.0, 50_000, 1e-6), (300.0, 10**7, 1e-8)])
def test_rate_one_training_closed_form(sigma, T, delta) -> None:
    """Poisson(1.0) is the plain Gaussian mechanism: T steps are N(mu, 1) vs N(0, 1) with
    mu = sqrt(T) / sigma, whose epsilon at delta is the root of the closed-form profile
    (mpmath); the PLD accountant's interval (two-level, long blocks) must contain it."""
    mp.mp.dps = 40
    mu = mp.sqrt(T) / sigma

    def gap(e):
        return mp.ncdf(-e / mu + mu / 2) - mp.exp(e) * mp.ncdf(-e / mu - mu / 2) - delta

    exact = float(mp.findroot(gap, mu * mu / 2 + 2 * mu))
    g = pa.Training(pa.Gaussian(sigma), pa.Poisson(1.0), steps=T).epsilon(delta,
                                                                          accountant="pld")
    assert float(g.lower.value) <= exact <= float(g.upper.value)
