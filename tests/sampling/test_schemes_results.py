"""Schemes, relations, results: validation and behaviour."""

from __future__ import annotations

import json

import numpy as np
import pytest

import privamp as pa


def test_scheme_validation():
    with pytest.raises(ValueError, match=r"rate must be in \[0, 1\]"):
        pa.Poisson(1.5)
    with pytest.raises(ValueError, match="rate"):
        pa.Poisson(float("nan"))
    with pytest.raises(ValueError, match="batch_size must be in"):
        pa.WithoutReplacement(101, 100)
    with pytest.raises(ValueError, match="dataset_size"):
        pa.WithReplacement(1, 0)
    with pytest.raises(ValueError, match="batch_size must be in"):
        pa.Shuffle(101, 100)
    with pytest.raises(ValueError, match="participations"):
        pa.BalancedIteration(10, 11)
    with pytest.raises(ValueError, match="selected"):
        pa.ModelSplit(3, 4)
    with pytest.raises(ValueError, match="group"):
        pa.Substitution(group=0)
    assert pa.Dropout() == pa.ModelSplit(2, 1)
    assert pa.Shuffle(10, 100).steps_per_epoch == 10
    assert pa.Poisson(0.25).steps_per_epoch == 4


def test_training_validation():
    m = pa.Gaussian(1.0)
    with pytest.raises(ValueError, match="steps"):
        pa.Training(m, pa.Poisson(0.1))
    with pytest.raises(ValueError, match="steps"):
        pa.Training(m, pa.Poisson(0.1), steps=0)
    with pytest.raises(ValueError, match="epochs"):
        pa.Training(m, pa.Poisson(0.1), epochs=-1)
    assert pa.Training(m, pa.Poisson(256 / 60000), epochs=60).steps == 14062
    assert pa.Training(m, pa.Shuffle(10, 100), epochs=3).steps == 30


def test_bound_and_guarantee():
    b = pa.Bound(1.5, "upper", "src")
    assert float(b) == 1.5 and b.is_upper and not b.is_lower
    with pytest.raises(ValueError):
        pa.Bound(1.0, "maybe", "src")
    with pytest.raises(ValueError, match="NaN"):
        pa.Bound(float("nan"), "upper", "src")
    with pytest.raises(AttributeError):
        b.value = 2.0  # frozen
    g = pa.Guarantee(b, pa.Bound(1.2, "lower", "other"))
    assert float(g) == 1.5
    assert g.width == pytest.approx(0.3)
    d = json.loads(g.to_json())
    assert d["upper"] == {"value": 1.5, "kind": "upper", "source": "src"}
    assert d["lower"]["kind"] == "lower"
    with pytest.raises(ValueError):
        pa.Guarantee(pa.Bound(1.0, "lower", "x"), None)
    with pytest.raises(AssertionError):
        pa.Guarantee(pa.Bound(1.0, "upper", "x"), pa.Bound(2.0, "lower", "y"))
    arr = pa.Bound(np.array([1.0, 2.0]), "upper", "s")
    assert arr.value.flags.writeable is False
    assert json.loads(arr.to_json())["value"] == [1.0, 2.0]


def test_rdp_dispatcher_errors_are_clear():
    with pytest.raises(ValueError, match="unknown method"):
        pa.rdp(pa.Gaussian(1.0), pa.Poisson(0.1), 2.0, method="no-such-method")


def test_large_group_mironov_curve_on_an_order_ladder():
    """Group 100 asks the group-1 curve at ~8000 orders (each halving doubles them: 17 s a
    query, a hanging epsilon curve, found by fuzzing); above 512 they are rounded up to the
    ladder 2^(j/64) (Rényi divergences grow with the order).  Full-batch Gaussian: the
    exact group-K RDP is alpha K^2 / (2 sigma^2) (closed form), which the bound must not
    undercut; the ladder costs at most ~1% over the exact orders."""
    from privamp.theorems import mironov2017 as mg

    a = np.array([2.0, 8.0, 32.0])
    ladder = mg.mironov_group_curve(pa.Gaussian(2.0), pa.Poisson(1.0), a, pa.AddRemove(100))
    assert np.all(ladder >= a * 100**2 / (2 * 2.0**2))
    saved = mg._MAX_BASE_ORDERS
    try:
        mg._MAX_BASE_ORDERS = 10**9
        direct = mg.mironov_group_curve(pa.Gaussian(2.0), pa.Poisson(1.0), a, pa.AddRemove(100))
    finally:
        mg._MAX_BASE_ORDERS = saved
    assert np.all(direct <= ladder) and np.all(ladder <= 1.01 * direct)
