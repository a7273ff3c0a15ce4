"""Issue 27's rows (input / overflow / CLI part), before -> after, against independent values:
mpmath for the Gaussian profile at tiny shifts, the union bound on total variation, the
closed form of unsampled Gaussian composition, dp_accounting's RDP accountant at huge step
counts."""

from __future__ import annotations

import math
import warnings

import mpmath as mp
import numpy as np
import pytest

import privamp as pa
from privamp.cli import main


def _profile_mp(s: float, eps: float) -> float:
    """Phi(s/2 - eps/s) - e^eps Phi(-s/2 - eps/s) (Balle, Barthe, Gaboardi 2018, Thm 4) in
    mpmath at a precision that survives the cancellation."""
    with mp.workdps(60 + int(max(0.0, -math.log10(s)))):
        S, E = mp.mpf(s), mp.mpf(eps)
        return float(mp.ncdf(S / 2 - E / S) - mp.exp(E) * mp.ncdf(-S / 2 - E / S))


# -- shift underflow: before "a Bound cannot hold NaN" --------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("mech", [pa.Gaussian(1e300), pa.Gaussian(1.0, sensitivity=1e-300)])
def test_tiny_shift_answers_zero(mech):
    run = pa.Training(mech, pa.Poisson(0.1), steps=10)
    g = run.epsilon(1e-5)
    # truth: delta(0) <= T q TV = 10 * 0.1 * erf(1e-300 / (2 sqrt 2)) < 1e-5, so epsilon = 0
    assert float(g.upper.value) == 0.0
    d = run.delta(0.0)
    cap = 10 * 0.1 * math.erf(1e-300 / (2 * math.sqrt(2)))
    assert d.lower is None or float(d.lower.value) <= cap * (1 + 1e-12)


@pytest.mark.parametrize("s", [1e-300, 1e-200, 1e-20, 1e-9, 1e-6, 1e-4, 2.9e-4, 1e-2, 1.0])
@pytest.mark.parametrize("z", [0.0, 0.1, 1.0, 5.0, 20.0])
def test_gaussian_profile_is_exact_at_every_shift(s, z):
    """Before: delta(0) = 0 at s = 1e-20 (an under-report of a value labelled exact) and
    4.4e-16 against 4.0e-16 at s = 1e-15; now within 1e-9 relative of mpmath."""
    eps = z * s
    value = float(pa.Gaussian(1.0 / s).delta(eps))
    assert value == pytest.approx(_profile_mp(s, eps), rel=1e-9)


def test_shift_outside_the_double_range_is_refused_naming_both_parameters():
    with pytest.raises(ValueError, match="sensitivity / sigma must be in"):
        pa.Gaussian(1e300, sensitivity=1e-300)
    with pytest.raises(ValueError, match="sensitivity / sigma must be in"):
        pa.Gaussian(1e-200, sensitivity=1e200)
    with pytest.raises(ValueError, match="sensitivity / scale must be in"):
        pa.Laplace(1e300, sensitivity=1e-300)


def test_gaussian_rdp_rounded_up_where_the_square_underflows():
    """alpha s^2 / 2 underflows to 0 for s = 1e-200; 0 would claim identical outputs."""
    assert float(pa.Gaussian(1e200).rdp(2.0)) > 0.0


# -- step counts up to int64: before scipy "Weights w must be strictly positive" -------------
@pytest.mark.parametrize("kw", [{"steps": 10**12}, {"steps": 10**13}, {"epochs": 1e12},
                                {"steps": 2**63 - 1}])
def test_huge_step_counts_answer_in_closed_form(kw):
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.1), **kw)
    g = run.epsilon(1e-5)
    assert math.isfinite(float(g.upper.value))
    assert "RDP" in g.upper.source
    pytest.importorskip("dp_accounting")
    from dp_accounting import dp_event, rdp

    acc = rdp.RdpAccountant()
    acc.compose(dp_event.PoissonSampledDpEvent(0.1, dp_event.GaussianDpEvent(1.0)),
                run.steps)
    # peer library's RDP conversion (a valid upper bound): ours within 5% of it
    assert float(g.upper.value) <= acc.get_epsilon(1e-5) * 1.05


def test_steps_above_int64_refused_with_the_range():
    with pytest.raises(ValueError, match=r"steps must be an integer in \[1, 9223372036854775807\]"):
        pa.Training(pa.Gaussian(1.0), pa.Poisson(0.1), steps=10**20)
    with pytest.raises(ValueError, match="steps must be an integer"):
        pa.Training(pa.Gaussian(1.0), pa.Poisson(0.1), epochs=1e20)


# -- inputs: before numpy's internal error / "must not contain NaN" / a string accepted ------
def test_delta_of_any_shape_none_and_strings():
    run = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=100)
    d = np.array([[1e-5, 1e-3], [0.1, 0.5]])
    g = run.epsilon(d)
    assert g.upper.value.shape == (2, 2)
    # unsampled sanity of the first entry: at most the Gaussian of shift sqrt(100) (q = 1)
    assert float(g.upper.value[0, 0]) <= float(pa.Gaussian(0.1).epsilon(1e-5))
    with pytest.raises(ValueError, match="delta must be a number or an array"):
        run.epsilon(None)
    with pytest.raises(ValueError, match="delta must be a number or an array"):
        run.epsilon("1e-5")


# -- the CLI ------------------------------------------------------------------------------
def test_cli_plot_path_checked_before_computing(capsys):
    code = main(["curve", "--sigma", "1.0", "--scheme", "poisson", "--rate", "0.01",
                 "--steps", "100", "--delta", "1e-5", "--plot", "/nonexistent/dir/x.png"])
    out, err = capsys.readouterr()
    assert code == 2 and "does not exist" in err and out == ""  # nothing computed


def test_cli_rr_theta_one_note(capsys):
    code = main(["epsilon", "--mechanism", "rr", "--theta", "1.0", "--scheme", "poisson",
                 "--rate", "0.1", "--steps", "1", "--delta", "1e-5"])
    out, _ = capsys.readouterr()
    assert code == 0 and "inf" in out
    assert "steps must be below 1" not in out
    # certified on both sides: the exact binomial composition (theorems/binary_exact.py)
    assert "lower         inf" in out


def test_cli_huge_steps_one_line(capsys):
    code = main(["epsilon", "--sigma", "1.0", "--scheme", "poisson", "--rate", "0.1",
                 "--steps", "100000000000000000000", "--delta", "1e-5"])
    _, err = capsys.readouterr()
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_internal_error_is_one_line(monkeypatch, capsys):
    def boom(args):
        raise RuntimeError("unexpected")

    monkeypatch.setitem(main.__globals__, "cmd_epsilon", boom)  # bound when the parser is built
    code = main(["epsilon", "--sigma", "1", "--scheme", "poisson", "--rate", "0.1",
                 "--steps", "1", "--delta", "1e-5"])
    _, err = capsys.readouterr()
    assert code == 3 and "internal error" in err and "Traceback" not in err


def test_cli_fuzz_never_shows_a_traceback(capsys):
    """A small sample of the CLI's argument space (benchmarks/fuzz_extremes.py's generator):
    exit 0 or 2, one error line at most, no traceback, no warning."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    import fuzz_extremes as X

    rng = np.random.default_rng(7)
    for _ in range(25):
        c = X.make_cli(rng)
        if "compare" in c["argv"] or "curve" in c["argv"]:
            continue  # the slower commands: covered by the fuzz run
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            X.run_cli(c)
        capsys.readouterr()


# -- no RuntimeWarning reaches users ------------------------------------------------------
@pytest.mark.parametrize("query", [
    lambda: pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=1000).delta(
        np.array([0.0, 5.0, 500.0])),
    lambda: pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=300).epsilon_curve(
        1e-5, steps=[10, 100, 300]),
    lambda: pa.Training(pa.RandomizedResponse(0.99), pa.Poisson(0.05), steps=100).delta(300.0),
    lambda: pa.Training(pa.Gaussian(1e300), pa.Poisson(0.1), steps=10).epsilon(1e-5),
    lambda: pa.Gaussian(1e-3).delta(np.array([0.0, 1e3, 1e6])),
    lambda: pa.Training(pa.Gaussian(1.0), pa.Poisson(0.1), steps=10**12).epsilon(1e-5),
])
def test_no_runtime_warning_leaks(query):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        query()


# -- fixed after the 10,000-configuration fuzz (benchmarks/results/fuzz.md) -----------------
def _sgm_bracket(alpha: float, s: float, q: float) -> tuple[float, float]:
    """Independent bracket of the sampled Gaussian's RDP, in mpmath: below, Psi_a >=
    q^a E[L^a] = q^a e^{a(a-1) s^2/2}; above, joint convexity Psi_a <= 1 - q + q e^{a(a-1)s^2/2}
    (and the unsampled a s^2 / 2)."""
    with mp.workdps(40):
        a, S, Q = mp.mpf(alpha), mp.mpf(s), mp.mpf(q)
        g = a * (a - 1) * S**2 / 2
        lo = (a * mp.log(Q) + g) / (a - 1)
        hi = min(mp.log(1 - Q + Q * mp.exp(g)) / (a - 1), a * S**2 / 2)
        return float(lo), float(hi)


@pytest.mark.parametrize("alpha", [1e6, 1e20, 1e308])
def test_sampled_gaussian_rdp_at_huge_orders(alpha):
    """Before: NaN ("mironov-sgm returned NaN") at alpha = 1e308."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = float(pa.rdp(pa.Gaussian(1.0), pa.Poisson(0.01), alpha))
    lo, hi = _sgm_bracket(alpha, 1.0, 0.01)
    assert lo * (1 - 1e-10) <= got <= hi * (1 + 1e-10)  # (1e-11: the module's safety margin)


@pytest.mark.parametrize("alpha", [1.5, 7.3, 100.5])
@pytest.mark.parametrize("s", [300.0, 1e4, 1e10])
def test_sampled_gaussian_rdp_at_huge_shifts_is_fast_and_bracketed(alpha, s):
    """Before: the quadrature's panels grew with the shift (hours at s = 1e10)."""
    got = float(pa.rdp(pa.Gaussian(1.0 / s), pa.Poisson(0.1), alpha))
    lo, hi = _sgm_bracket(alpha, s, 0.1)
    assert lo * (1 - 1e-10) <= got <= hi * (1 + 1e-10)  # (1e-11: the module's safety margin)


def test_huge_shift_run_is_reported_non_private_fast():
    """Before: > 10 min.  Truth: a shift of 1e10 makes the loss ~ s^2 / 2 = 5e19 on the
    event that the record is sampled (probability 1 - 0.9^10 > 1e-5), so epsilon >= ~5e19."""
    import time

    t = time.process_time()
    g = pa.Training(pa.Gaussian(1e-10), pa.Poisson(0.1), steps=10).epsilon(1e-5)
    assert time.process_time() - t < 30.0  # a hang guard (was minutes), CPU time
    assert float(g.upper.value) >= 4.9e19


def test_rate_one_tiny_shift_never_upper_bounds_by_zero():
    """Before: delta(0) <= 0 while the truth (total variation of 5 composed Gaussians of
    shift s = 3.7e-220, i.e. erf(sqrt(5) s / (2 sqrt 2))) is ~1e-219 > 0."""
    s = 4.1e23 / 1.1e243
    g = pa.Training(pa.Gaussian(1.1e243, sensitivity=4.1e23), pa.Poisson(1.0), steps=5).delta(0.0)
    truth = float(mp.erf(mp.sqrt(5) * mp.mpf(s) / (2 * mp.sqrt(2))))
    assert truth > 0 and float(g.upper.value) >= truth
    assert float(pa.rdp(pa.Gaussian(1e200), pa.Poisson(1.0), 2.0)) > 0.0  # 1e-400 in truth


@pytest.mark.parametrize("expr", [
    "pa.Training(pa.Gaussian(1.0), pa.Shuffle(10, 100), steps=2**63-1, relation=pa.ZeroOut())",
    "pa.Training(pa.Gaussian(1.0), pa.Shuffle(10, 105), steps=2**63-1, relation=pa.ZeroOut())",
    "pa.Training(pa.Gaussian(100), pa.Poisson(1e-9), steps=2**63-1)",
    "pa.Training(pa.Gaussian(1.0), pa.WithReplacement(10, 100), steps=2**63-1)",
    "pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=2**63-1, "
    "relation=pa.AddRemove(group=2))",
])
def test_int64_max_steps_answer_without_allocating(expr):
    """Before: MemoryError (a 6.4 EiB array of epochs), IndexError in the FFT's bulk window,
    or 'Weights w must be strictly positive' (an overflowing group PLD).  The upper bound
    must cover the unsampled composition's lower end: at least the exact delta of the
    one-step Gaussian, i.e. epsilon is no lower than one release's epsilon at 1e-5."""
    run = eval(expr)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = run.epsilon(1e-5)
    assert g.upper is not None
    if g.lower is not None:
        assert float(g.lower.value) <= float(g.upper.value)


def test_two_sided_pld_validates_its_queries():
    from privamp.pairs.mechanism_pairs import GaussianPair
    from privamp.pld.two_sided import TwoSidedPLD

    pld = TwoSidedPLD.from_pairs([GaussianPair(1.0)], 1e-2)
    for bad in (None, -1.0, float("nan"), "x"):
        with pytest.raises(ValueError, match="epsilon"):
            pld.delta(bad)
        with pytest.raises(ValueError, match="delta"):
            pld.epsilon(bad)


def test_fft_refuses_non_finite_masses():
    from privamp.numerics.fft import convolve_nonneg

    x = np.ones(5000)
    x[7] = np.inf
    with pytest.raises(ValueError, match="finite"):
        convolve_nonneg(x, direct_budget=10)


def test_balanced_iteration_near_the_lattice_limit_answers_in_seconds():
    """Before: 16-30 s (a 2^24-point long-double FFT, two per epoch).  Now the BIS PLD's
    lattice holds 2^22 points, coarsened (a doubled step) before it declines; the run
    gets an upper bound, checked against a Monte Carlo lower bound of the realised removal
    pair (a record in one of the 3 batches, uniformly: P = mean_i N(s e_i, I), Q = N(0, I);
    delta(eps) = E_P[(1 - e^eps / L)_+] in [0, 1], Hoeffding at confidence 1 - 1e-6)."""
    import time

    t = time.process_time()
    run = pa.Training(pa.Gaussian(0.5529), pa.BalancedIteration(3, 1), steps=3)
    g = run.delta(0.558)
    assert time.process_time() - t < 30.0  # a hang guard (was minutes), CPU time
    s, e, n = 1 / 0.5529, 0.558, 200_000
    rng = np.random.default_rng(7)
    x = rng.standard_normal((n, 3))
    x[np.arange(n), rng.integers(0, 3, n)] += s
    log_l = np.logaddexp.reduce(s * x - s * s / 2, axis=1) - math.log(3)
    mc = float(np.mean(np.maximum(0.0, -np.expm1(e - log_l))))
    slack = math.sqrt(math.log(1e6) / (2 * n))
    assert float(g.upper.value) >= mc - slack
    # since the lattice's step may double up to 8 times, the BIS PLD answers here too, both sides
    pld = run.delta(0.558, accountant="pld")
    assert float(pld.lower.value) <= mc + slack <= float(pld.upper.value) + 2 * slack


@pytest.mark.parametrize("scheme", [pa.WithoutReplacement(10, 100), pa.Poisson(0.1)])
def test_huge_shift_mixture_moments_answer_fast(scheme):
    """Before: > 10 min in the mixture quadrature (panels ~1 / s wide over a window ~s long).
    The convexity bound E[M^b] <= sum_k w_k E[L_k^b] takes over; at s = 1e10 the run's
    epsilon is at least ~s^2 / 2 (a sampled record moves the output by 1e10 sigmas)."""
    import time

    relation = pa.AddRemove(group=2) if isinstance(scheme, pa.Poisson) else pa.AddRemove()
    t = time.process_time()
    g = pa.Training(pa.Gaussian(1e-10), scheme, steps=10, relation=relation).epsilon(1e-5)
    assert time.process_time() - t < 30.0  # a hang guard (was minutes), CPU time
    assert float(g.upper.value) >= 4.9e19


@pytest.mark.parametrize("beta", [3.0, -2.0, 7.5])
def test_convexity_log_excess_against_mpmath(beta):
    """E[M^b] - 1 for M = 0.7 + 0.3 L_1 (s = 0.8) by mpmath quadrature is below the bound."""
    from privamp.numerics.mixture_divergence import convexity_log_excess

    s, w = 0.8, 0.3
    with mp.workdps(30):
        f = lambda x: (1 - w + w * mp.exp(s * x - s * s / 2)) ** beta * mp.npdf(x)  # noqa: E731
        exact = mp.quad(f, [-mp.inf, -5, 0, 5, 20, mp.inf]) - 1
    got = float(convexity_log_excess(np.array([beta]), np.log([1 - w, w]), s)[0])
    assert math.log(float(exact)) <= got
    assert got == pytest.approx(math.log(w * math.expm1(beta * (beta - 1) * s * s / 2)), rel=1e-12)


def test_pure_dp_step_of_a_tiny_laplace_scale_has_no_overflow():
    """Laplace at scale 1e-10 under Poisson(0.1): the one-step pure-DP epsilon is
    log(1 - q + q e^L) with L = 1e10, i.e. L + log q up to e^-L, computed without overflow
    (it leaked 'overflow encountered in expm1'); checked against the closed form."""
    import math
    import warnings

    from privamp.accountants.rdp import pure_dp_epsilon

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        step = pure_dp_epsilon(pa.Laplace(1e-10), pa.Poisson(0.1), pa.AddRemove())
        pa.Training(pa.Laplace(1e-10), pa.Poisson(0.1), steps=10).epsilon(1e-5)
    assert step >= 1e10 + math.log(0.1)
    assert step <= (1e10 + math.log(0.1)) * (1 + 1e-9)
