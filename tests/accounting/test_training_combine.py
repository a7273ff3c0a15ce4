"""Training combines accountants: smallest upper, largest lower, sources kept.

Uses two stand-in accountants registered for a test-only scheme, so that the combination logic
is checked on values chosen here."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pytest

import privamp as pa
from privamp.theorems.registry import RunAnalysis, run_accountant


@dataclass(frozen=True)
class _ToyScheme(pa.Scheme):
    name = "toy"

    @property
    def steps_per_epoch(self) -> int:
        return 1


class _Fixed(RunAnalysis):
    def __init__(self, up, lo, tag):
        self.up, self.lo, self.tag = up, lo, tag

    def _pair(self, x):
        shape = np.shape(x)
        def mk(v, kind):
            return None if v is None else pa.Bound(np.broadcast_to(v, shape), kind, self.tag)

        return mk(self.up, "upper"), mk(self.lo, "lower")

    def epsilon(self, delta):
        return self._pair(delta)

    def delta(self, epsilon):
        return self._pair(epsilon)


def _is_toy(run):
    return isinstance(run.scheme, _ToyScheme)


run_accountant("toy-a", _is_toy)(
    lambda run: _Fixed(np.array([3.0, 1.0]), np.array([1.0, 0.2]), "A")
)
run_accountant("toy-b", _is_toy)(lambda run: _Fixed(np.array([2.0, 4.0]), None, "B"))


def test_best_takes_min_upper_and_max_lower_elementwise():
    run = pa.Training(pa.Gaussian(1.0), _ToyScheme(), steps=3)
    g = run.epsilon(np.array([1e-5, 1e-6]))
    assert g.upper.value.tolist() == [2.0, 1.0]
    assert set(g.upper.source.split("; ")) == {"A", "B"}
    assert g.lower.value.tolist() == [1.0, 0.2]
    g_a = run.epsilon(np.array([1e-5, 1e-6]), accountant="toy-a")
    assert g_a.upper.value.tolist() == [3.0, 1.0] and g_a.upper.source == "A"


def test_unknown_or_inapplicable_accountant_is_a_clear_error():
    run = pa.Training(pa.Gaussian(1.0), _ToyScheme(), steps=3)
    with pytest.raises(ValueError, match="accountant must be .best. or one of"):
        run.epsilon(1e-5, accountant="nope")


@dataclass(frozen=True)
class _DecliningScheme(pa.Scheme):
    name = "toy-declining"

    @property
    def steps_per_epoch(self) -> int:
        return 1


@dataclass(frozen=True)
class _BuggyScheme(pa.Scheme):
    name = "toy-buggy"

    @property
    def steps_per_epoch(self) -> int:
        return 1


def _declines(run):
    raise pa.NotApplicable("toy-c handles no such run")


def _buggy(run):
    raise ValueError("a bug inside an accountant")


run_accountant("toy-c", lambda run: isinstance(run.scheme, (_DecliningScheme, _BuggyScheme)))(
    _declines
)
run_accountant("toy-d", lambda run: isinstance(run.scheme, _DecliningScheme))(
    lambda run: _Fixed(np.array(2.0), None, "D")
)
run_accountant("toy-e", lambda run: isinstance(run.scheme, _BuggyScheme))(_buggy)


def test_best_records_which_accountants_declined_and_why():
    g = pa.Training(pa.Gaussian(1.0), _DecliningScheme(), steps=2).epsilon(1e-5)
    assert float(g.upper.value) == 2.0 and g.upper.source == "D"
    assert g.declined == (("toy-c", "toy-c handles no such run"),)
    assert "toy-c does not apply" in str(g)
    assert g.to_dict()["declined"] == [
        {"accountant": "toy-c", "reason": "toy-c handles no such run"}
    ]


def test_a_bug_in_an_accountant_is_not_taken_for_declining():
    run = pa.Training(pa.Gaussian(1.0), _BuggyScheme(), steps=2)
    with pytest.raises(ValueError, match="a bug inside an accountant") as info:
        run.epsilon(1e-5)
    assert not isinstance(info.value, pa.NotApplicable)


def test_no_accountant_left_is_not_applicable_with_reasons():
    run = pa.Training(pa.Gaussian(1.0), _DecliningScheme(), steps=2)
    with pytest.raises(pa.NotApplicable, match="toy-c handles no such run"):
        run.epsilon(1e-5, accountant="toy-c")


def test_relation_type_is_honest_and_resolved():
    """``relation`` is typed ``Relation | None`` (None: the scheme's default), and after
    construction holds the resolved relation, also as ``resolved_relation``."""
    import typing

    import privamp as pa
    from privamp.accounting.training import Training

    hints = typing.get_type_hints(Training)
    assert type(None) in typing.get_args(hints["relation"])
    shuffled = pa.Training(pa.Gaussian(1.0), pa.Shuffle(10, 100), steps=10)
    assert shuffled.relation == pa.ZeroOut() == shuffled.resolved_relation
    poisson = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.1), steps=10)
    assert poisson.resolved_relation == pa.AddRemove() == poisson.relation
    given = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.1), steps=10,
                        relation=pa.Substitution())
    assert given.resolved_relation == pa.Substitution()
    assert poisson == pa.Training(pa.Gaussian(1.0), pa.Poisson(0.1), steps=10,
                                  relation=pa.AddRemove())
