"""pa.calibrate against an independent accountant (dp_accounting's PLD) and against the
closed form of the Gaussian mechanism."""

from __future__ import annotations

import math

import pytest

import privamp as pa


def test_calibrate_unsampled_gaussian_matches_closed_form():
    # T releases of a Gaussian = one Gaussian with sigma / sqrt(T); the smallest sigma meeting
    # (eps, delta) is the analytic-Gaussian calibration, found here by scipy's root finder on
    # the closed form (Balle & Wang 2018)
    from scipy import optimize, stats

    T, eps, delta = 16, 2.0, 1e-5

    def closed(sig):
        s = math.sqrt(T) / sig
        return (stats.norm.cdf(s / 2 - eps / s) - math.exp(eps) * stats.norm.cdf(-s / 2 - eps / s)
                - delta)

    ref = optimize.brentq(closed, 0.1, 100, xtol=1e-12)
    got = pa.calibrate(eps, delta, lambda s: pa.Training(pa.Gaussian(s), pa.Poisson(1.0),
                                                         steps=T))
    assert got.knob == "noise" and isinstance(got, pa.Calibration)
    assert ref <= got.value <= ref * (1 + 2e-3)


def test_calibrate_poisson_meets_target_by_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as pld

    q, T, eps, delta = 0.02, 500, 1.5, 1e-5
    got = pa.calibrate(eps, delta, lambda s: pa.Training(pa.Gaussian(s), pa.Poisson(q),
                                                         steps=T), accountant="pld")

    def dpa(sig):
        d = pld.from_gaussian_mechanism(sig, sampling_prob=q, value_discretization_interval=1e-4)
        return d.self_compose(T).get_epsilon_for_delta(delta)

    # the returned sigma meets the target (dp_accounting's estimate is within its 1e-4 grid),
    # and a noise 1% smaller does not
    assert dpa(got.value) <= eps + 2e-3
    assert dpa(got.value * 0.99) > eps


def test_calibrate_errors():
    with pytest.raises(ValueError, match="target_epsilon"):
        pa.calibrate(0.0, 1e-5, lambda s: pa.Training(pa.Gaussian(s), pa.Poisson(0.1), steps=1))
    with pytest.raises(ValueError, match="delta"):
        pa.calibrate(1.0, 2.0, lambda s: pa.Training(pa.Gaussian(s), pa.Poisson(0.1), steps=1))


def _analytic_gaussian_delta(s: float, eps: float) -> float:
    """delta(eps) of a Gaussian with mean shift s (Balle & Wang 2018, Thm 8)."""
    from scipy import stats

    return stats.norm.cdf(s / 2 - eps / s) - math.exp(eps) * stats.norm.cdf(-s / 2 - eps / s)


def test_calibrate_steps_knob_matches_closed_form():
    # T releases of Gaussian(sigma): one Gaussian of shift sqrt(T) / sigma; the largest T
    # meeting (eps, delta) by the closed form, against the calibrated integer
    sigma, eps, delta = 20.0, 2.0, 1e-5
    probes = []
    got = pa.calibrate(eps, delta, lambda T: pa.Training(pa.Gaussian(sigma), pa.Poisson(1.0),
                                                         steps=T),
                       knob="steps", callback=lambda v, g: probes.append((v, g)))
    assert got.knob == "steps" and isinstance(got.value, int)
    assert _analytic_gaussian_delta(math.sqrt(got.value) / sigma, eps) <= delta
    # the accountant's upper bound is within 0.1% of the truth: T + 1% fails
    assert _analytic_gaussian_delta(math.sqrt(got.value * 1.01) / sigma, eps) > delta
    assert probes and all(isinstance(v, int) for v, _ in probes)
    assert all(g is None or g.upper is not None for _, g in probes)


def test_calibrate_rate_knob_by_dp_accounting():
    from dp_accounting.pld import privacy_loss_distribution as pld

    sigma, T, eps, delta = 1.0, 1000, 1.0, 1e-5
    got = pa.calibrate(eps, delta, lambda q: pa.Training(pa.Gaussian(sigma), pa.Poisson(q),
                                                         steps=T), knob="rate")

    def dpa(q):
        d = pld.from_gaussian_mechanism(sigma, sampling_prob=q,
                                        value_discretization_interval=1e-4)
        return d.self_compose(T).get_epsilon_for_delta(delta)

    assert got.knob == "rate" and got.probes <= 4
    assert dpa(got.value) <= eps + 2e-3
    assert dpa(got.value * 1.01) > eps


def test_calibrate_noise_probes_stay_near_the_answer():
    """No absurd probes (issue 14): every probe within a factor 2 of the answer, few probes."""
    probes = []
    got = pa.calibrate(3.0, 1e-5, lambda s: pa.Training(pa.Gaussian(s), pa.Poisson(0.01),
                                                        steps=10_000),
                       callback=lambda v, g: probes.append(v))
    assert len(probes) <= 10
    assert all(0.5 * got.value <= v <= 2 * got.value for v in probes)


def test_calibrate_unknown_knob():
    with pytest.raises(ValueError, match="knob"):
        pa.calibrate(1.0, 1e-5, lambda s: pa.Training(pa.Gaussian(s), pa.Poisson(0.1), steps=1),
                     knob="temperature")


def test_calibrate_default_three_probes_meets_target_by_dp_accounting():
    """Issue 14 setting (epsilon 3, delta 1e-5, q 0.01, T 1e4): the CLT estimate's slope
    predicts the root, so three probes bracket it to rtol; the answer meets the target by
    dp-accounting's PLD (connect-the-dots, h = 1e-4) and a noise 0.5% smaller does not."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    q, T, eps, delta = 0.01, 10_000, 3.0, 1e-5
    probes = []
    got = pa.calibrate(eps, delta, lambda s: pa.Training(pa.Gaussian(s), pa.Poisson(q),
                                                         steps=T),
                       callback=lambda v, g: probes.append(v))
    assert len(probes) <= 3

    def dpa(sig):
        d = pld.from_gaussian_mechanism(sig, sampling_prob=q, value_discretization_interval=1e-4,
                                        use_connect_dots=True)
        return d.self_compose(T).get_epsilon_for_delta(delta)

    assert dpa(got.value) <= eps * (1 + 1e-5)
    assert dpa(got.value * (1 - 5e-3)) > eps


def test_calibrate_epsilon_tolerance_stops_like_opacus():
    """epsilon_tolerance (Opacus's rule): the search stops at the first probe meeting the
    target within the tolerance; that probe's epsilon by dp-accounting's PLD (h = 1e-4) lies in
    [target - tolerance - 1e-4, target + 1e-4], with fewer probes than the rtol search."""
    from dp_accounting.pld import privacy_loss_distribution as pld

    q, T, eps, delta = 0.01, 10_000, 3.0, 1e-5

    def make(s):
        return pa.Training(pa.Gaussian(s), pa.Poisson(q), steps=T)

    probes, probes_rtol = [], []
    got = pa.calibrate(eps, delta, make, epsilon_tolerance=0.01,
                       callback=lambda v, g: probes.append(v))
    pa.calibrate(eps, delta, make, callback=lambda v, g: probes_rtol.append(v))
    assert len(probes) <= 4 and len(probes_rtol) <= 3 and got.value == probes[-1]
    ref = pld.from_gaussian_mechanism(got.value, sampling_prob=q,
                                      value_discretization_interval=1e-4,
                                      use_connect_dots=True).self_compose(T)
    assert eps - 0.01 - 1e-4 <= ref.get_epsilon_for_delta(delta) <= eps + 1e-4
    with pytest.raises(ValueError, match="epsilon_tolerance"):
        pa.calibrate(eps, delta, make, epsilon_tolerance=0.0)


def _poisson(sigma=1.0, q=0.01, T=1000):
    return pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=T)


def test_calibration_reads_as_the_knob_with_its_guarantee():
    """Issue 33: the result is the knob's value with the guarantee it meets, not a Bound."""
    got = pa.calibrate(3.0, 1e-5, lambda s: _poisson(s, 0.01, 1000))
    text = str(got)
    assert text.startswith("noise multiplier ") and ": epsilon <= " in text
    assert " at delta 1e-05 [" in text and got.source in text
    assert float(got) == got.value and f"{got:.3f}" == format(math.ceil(got.value * 1e3) / 1e3,
                                                              ".3f")
    assert got.epsilon <= 3.0 and got.guarantee.upper is got.epsilon
    assert repr(got).startswith("Calibration(knob='noise', value=")
    assert got.to_dict()["knob"] == "noise"
    rate = pa.calibrate(3.0, 1e-5, lambda q: _poisson(1.0, q, 1000), knob="rate")
    assert str(rate).startswith("sampling rate ")
    # a rate is shown rounded down (the printed value still meets the target)
    assert float(f"{rate:.3g}") <= rate.value


def test_calibrate_factory_must_return_a_run():
    """Issue 27: lambda s: 3.0 was an AttributeError."""
    with pytest.raises(ValueError, match="make_run must return a privamp.Training.*float"):
        pa.calibrate(1.0, 1e-5, lambda s: 3.0)


@pytest.mark.slow
def test_calibrate_huge_target_answers():
    """Issue 27: target 1e4 overflowed in the CLT estimate; now the smallest noise found
    whose certified epsilon meets it, or the search limit."""
    got = pa.calibrate(1e4, 1e-5, lambda s: _poisson(s, 0.01, 1000))
    assert got.epsilon <= 1e4 and got.value >= 1e-2


@pytest.mark.slow
def test_calibrate_rate_small_sigma_is_cheap():
    """Issue 27 row (95 s, 772 MB before): the search runs on coarse-grid PLD upper bounds
    (sound, cheap) and the accountant confirms with two probes; the value meets the target
    and one rtol step more does not, by the accountant."""
    probes = []
    got = pa.calibrate(1.0, 1e-5, lambda q: _poisson(0.3, q, 1000), knob="rate",
                       callback=lambda v, g: probes.append((v, g)))
    assert len(probes) <= 3 and got.epsilon <= 1.0
    assert any(v > got.value and g.upper > 1.0 for v, g in probes)


def test_guarantee_of_a_curve_prints_one_interval_a_line():
    """Issue 33: epsilon_curve's Guarantee printed as `in [[array], [array]]`."""
    g = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.01), steps=300).epsilon_curve(
        1e-5, steps=[100, 200, 300])
    lines = str(g).splitlines()
    assert lines[0] == "in [lower, upper] at each of 3 points:"
    assert lines[1].startswith("  [0] in [") and "[[" not in str(g)


def test_formatting_rounds_only_when_digits_are_dropped():
    """The safe-side rounding leaves a value that the digits show exactly (0.01 stays
    "0.01"), and rounds an upper bound up otherwise (2.3816 -> "2.39", docs/reporting.md)."""
    assert f"{pa.Bound(0.01, 'upper', 's'):.6g}" == "0.01"
    assert f"{pa.Bound(2.3816, 'upper', 's'):.2f}" == "2.39"
    assert f"{pa.Bound(2.3816, 'lower', 's'):.2f}" == "2.38"
    assert str(pa.Bound(2.38164449, "upper", "s")).startswith("<= 2.38165")


def test_time_budget_stops_at_a_met_value(monkeypatch):
    """A calibration whose next probe would end past the time budget stops at the best value
    met so far: its guarantee meets the target (a fresh query of the run agrees), and the
    value named as failing in the note fails it (a fresh query too)."""
    import re

    from privamp.accounting import calibration as cal

    monkeypatch.setattr(cal, "TIME_BUDGET", 0.0)

    def make(s):
        return pa.Training(pa.Gaussian(s), pa.Poisson(0.01), steps=1000)

    c = pa.calibrate(1.0, 1e-5, make)
    assert "time budget" in c.note and c.probes <= 3
    fresh = make(c.value).epsilon(1e-5).upper.value
    assert fresh <= 1.0 and c.epsilon.value == fresh
    failing = float(re.search(r"noise=([0-9.e+-]+) fails", c.note).group(1))
    assert failing < c.value and make(failing).epsilon(1e-5).upper.value > 1.0


def test_time_budget_never_returns_an_unmet_value(monkeypatch):
    """Budget 0 and a first probe that fails the target: the search goes on until a value
    meets it (never returns one that does not)."""
    from privamp.accounting import calibration as cal

    monkeypatch.setattr(cal, "TIME_BUDGET", 0.0)
    c = pa.calibrate(1.0, 1e-5, lambda s: pa.Training(pa.Gaussian(s), pa.Poisson(0.01),
                                                     steps=1000), start=0.5)
    assert c.epsilon.value <= 1.0
