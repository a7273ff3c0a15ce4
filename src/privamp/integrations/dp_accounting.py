"""Interoperability with Google's ``dp_accounting`` library.

:func:`from_dp_event` turns a ``dp_accounting`` ``DpEvent`` tree describing a training run
into a :class:`privamp.Training`, so users of that library get privamp's two-sided bounds for
the events they already build::

    import dp_accounting as dpa
    event = dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(0.01, dpa.GaussianDpEvent(1.1)), 1000)
    run = pa.from_dp_event(event)
    run.epsilon(1e-5)            # Guarantee: [lower, upper]

Supported leaves: ``GaussianDpEvent`` (noise multiplier s: ``Gaussian(s)``),
``LaplaceDpEvent`` (``Laplace(s)``) and ``RandomizedResponseDpEvent`` with two buckets
(noise parameter p: ``RandomizedResponse(1 - p / 2)``), each either alone (every record in
every step: ``Poisson(1)``) or under ``PoissonSampledDpEvent`` (``Poisson(q)``),
``SampledWithoutReplacementDpEvent`` (``WithoutReplacement(m, n)``) or
``SampledWithReplacementDpEvent`` (``WithReplacement(m, n)``);
``TruncatedSubsampledGaussianDpEvent`` (dataset size n, rate q, truncated batch size B, noise
multiplier s) becomes ``Gaussian(s)`` under ``TruncatedPoisson(q, B, n)`` (a step with q, B
or n equal to 0 releases nothing and is skipped, as dp-accounting does).  ``SelfComposedDpEvent``
multiplies the number of steps; ``ComposedDpEvent`` of different steps becomes a composition
of phases (``privamp.compose``, one phase per distinct step); ``NoOpDpEvent`` is skipped.
Anything else raises ``ValueError`` naming the event.

Neighbouring relations (``relation=``).  A privamp relation is taken as privamp defines it,
with ``sensitivity`` measured under that relation (default 1, and 2 under
:class:`~privamp.Substitution`).  A ``dp_accounting.NeighboringRelation`` is taken as
``dp_accounting`` defines it.  Its events state (``dp_event.py``) that the values summed are
bounded, ``||v_i|| <= C``, with ``noise_multiplier = s / C``; ``sensitivity`` is then that
bound in units of C (default 1):

* ``ADD_OR_REMOVE_ONE`` -> :class:`~privamp.AddRemove`, sensitivity C;
  ``REPLACE_SPECIAL`` -> :class:`~privamp.ZeroOut`, sensitivity C (dp-accounting's PLD uses
  the add/remove pair for both).
* ``REPLACE_ONE``: dp-accounting's PLD accountant (``privacy_loss_mechanism.py``,
  ``AdjacencyType.REPLACE``) analyses a Poisson-sampled Gaussian at rate q as the pair
  ``(1-q) N(0) + q N(-C)`` vs ``(1-q) N(0) + q N(C)``, and the unsampled Gaussian as its
  ``q = 1`` case ``N(-C)`` vs ``N(C)``.  That is privamp's
  :class:`~privamp.HybridSubstitution` with ``Gaussian(s, sensitivity=C)`` (one record's value
  of norm <= C replaced by another; the antipodal pair is a proven dominating pair,
  :mod:`privamp.theorems.poisson_substitution`), so every Poisson-sampled or unsampled
  Gaussian, Laplace or two-bucket randomized-response step maps there, and privamp's
  interval contains dp-accounting's own PLD epsilon.  Fixed-size sampling
  (``SampledWithoutReplacementDpEvent``, ``SampledWithReplacementDpEvent``) and
  ``TruncatedSubsampledGaussianDpEvent`` map to plain :class:`~privamp.Substitution` at
  sensitivity 2C (a value of norm <= C replaced by another moves the sum by <= 2C):
  certified, and privamp's PLD for those schemes needs plain substitution.  A composition
  mixing the two kinds is accounted entirely under :class:`~privamp.Substitution` at 2C
  (``privamp.compose`` needs one relation; sound, looser on the Poisson phases).

Where dp-accounting disagrees with itself: its ``RdpAccountant`` ignores ``REPLACE_ONE`` for
an unsampled ``GaussianDpEvent`` (it uses ``N(0)`` vs ``N(C)``, half the PLD accountant's
distance) and analyses ``SampledWithoutReplacementDpEvent`` with the *replacement* distance
equal to C (Wang, Balle, Kasiviswanathan 2019, Thm 27 with a base Gaussian of sensitivity 1).
For values with only ``||v_i|| <= C`` (the events' stated semantics) the replacement distance
is 2C, so those RDP numbers are below the true epsilon; privamp follows the stated semantics.
To reproduce the RDP accountant's reading (values within distance C of each other, i.e. a
ball of radius C/2), pass ``sensitivity=0.5`` with ``REPLACE_ONE``.  dp-accounting's PLD
accountant refuses Laplace events under ``REPLACE_ONE``; privamp accounts them as above.

``dp_accounting`` needs no import here: events are recognised by class name, so this module
works with any installed version (and without ``dp_accounting`` installed at all).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._validation import check_int, check_positive
from ..accounting.training import Training
from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..sampling.relations import AddRemove, HybridSubstitution, Relation, Substitution, ZeroOut
from ..sampling.schemes import (
    Poisson,
    Scheme,
    TruncatedPoisson,
    WithoutReplacement,
    WithReplacement,
)
from ._phases import compose_phases

__all__ = [
    "as_relation",
    "clipped_sensitivity",
    "from_dp_event",
    "is_replace_one",
    "runs_from_dp_event",
]


@dataclass(frozen=True)
class _Step:
    mechanism: Mechanism
    scheme: Scheme


def _name(event: Any) -> str:
    return type(event).__name__


def _unsupported(event: Any, why: str = "") -> ValueError:
    extra = f": {why}" if why else ""
    return ValueError(
        f"from_dp_event does not support {_name(event)}{extra} (supported: GaussianDpEvent, "
        "LaplaceDpEvent, two-bucket RandomizedResponseDpEvent, PoissonSampledDpEvent, "
        "SampledWithoutReplacementDpEvent, SampledWithReplacementDpEvent, "
        "TruncatedSubsampledGaussianDpEvent, "
        f"SelfComposedDpEvent and ComposedDpEvent); event: {event!r}"
    )


def _leaf(event: Any, sensitivity: float) -> Mechanism:
    name = _name(event)
    if name in ("SelfComposedDpEvent", "ComposedDpEvent", "NoOpDpEvent") or "Sampled" in name:
        raise _unsupported(
            event, "inside a sampling event (one sample reused by several releases, or nested "
            "sampling); a sampled event must wrap one GaussianDpEvent, LaplaceDpEvent or "
            "RandomizedResponseDpEvent"
        )
    if name == "GaussianDpEvent":
        s = float(event.noise_multiplier)
        if not s > 0:
            raise _unsupported(event, "noise_multiplier must be in (0, inf) (0 is not private)")
        return Gaussian(s, sensitivity)
    if name == "LaplaceDpEvent":
        s = float(event.noise_multiplier)
        if not s > 0:
            raise _unsupported(event, "noise_multiplier must be in (0, inf) (0 is not private)")
        return Laplace(s, sensitivity)
    if name == "RandomizedResponseDpEvent":
        if int(event.num_buckets) != 2:
            raise _unsupported(event, "num_buckets must be 2")
        p = float(event.noise_parameter)
        if not 0 < p <= 1:
            raise _unsupported(event, "noise_parameter must be in (0, 1]")
        # keep the true answer w.p. 1 - p, else a uniform bucket: P(true) = 1 - p/2
        theta = 1.0 - p / 2.0
        if theta == 0.5:
            raise _unsupported(event, "noise_parameter 1 releases nothing (not a privamp RR)")
        return RandomizedResponse(theta)
    raise _unsupported(event)


def _step(event: Any, sensitivity: float) -> _Step:
    name = _name(event)
    if name == "PoissonSampledDpEvent":
        q = float(event.sampling_probability)
        if not 0 < q <= 1:
            raise _unsupported(event, "sampling_probability must be in (0, 1]")
        return _Step(_leaf(event.event, sensitivity), Poisson(q))
    if name == "SampledWithoutReplacementDpEvent":
        scheme: Scheme = WithoutReplacement(event.sample_size, event.source_dataset_size)
        return _Step(_leaf(event.event, sensitivity), scheme)
    if name == "SampledWithReplacementDpEvent":
        scheme = WithReplacement(event.sample_size, event.source_dataset_size)
        return _Step(_leaf(event.event, sensitivity), scheme)
    if name == "TruncatedSubsampledGaussianDpEvent":
        s = float(event.noise_multiplier)
        if not s > 0:
            raise _unsupported(event, "noise_multiplier must be in (0, inf) (0 is not private)")
        q = float(event.sampling_probability)
        if not 0 < q <= 1:
            raise _unsupported(event, "sampling_probability must be in [0, 1]")
        scheme = TruncatedPoisson(q, event.truncated_batch_size, event.dataset_size)
        return _Step(Gaussian(s, sensitivity), scheme)
    return _Step(_leaf(event, sensitivity), Poisson(1.0))


def _flatten(event: Any, count: int, sensitivity: float, out: list[tuple[_Step, int]]) -> None:
    name = _name(event)
    if name == "NoOpDpEvent" or (name == "TruncatedSubsampledGaussianDpEvent" and not (
            event.sampling_probability and event.truncated_batch_size and event.dataset_size)):
        return
    if name == "SelfComposedDpEvent":
        c = check_int("SelfComposedDpEvent.count", event.count, minimum=0)
        if c:
            _flatten(event.event, count * c, sensitivity, out)
        return
    if name == "ComposedDpEvent":
        for e in event.events:
            _flatten(e, count, sensitivity, out)
        return
    out.append((_step(event, sensitivity), count))


def as_relation(relation: Any) -> Relation:
    """A privamp relation from a privamp relation, ``None`` (add/remove), or a
    ``dp_accounting.NeighboringRelation`` (``ADD_OR_REMOVE_ONE`` -> :class:`AddRemove`,
    ``REPLACE_ONE`` -> :class:`Substitution`, ``REPLACE_SPECIAL`` (one record replaced by a
    special value) -> :class:`ZeroOut`).  Anything else raises ``ValueError``."""
    if relation is None:
        return AddRemove()
    if isinstance(relation, Relation):
        return relation
    if type(relation).__name__ == "NeighboringRelation":
        mapped = _NEIGHBOURING.get(getattr(relation, "name", ""))
        if mapped is not None:
            return mapped()
    raise ValueError(
        "relation must be a privamp relation (pa.AddRemove(), pa.Substitution(), "
        "pa.ZeroOut()) or a dp_accounting.NeighboringRelation "
        f"({', '.join(_NEIGHBOURING)}), got {relation!r}"
    )


def clipped_sensitivity(relation: Relation | None, sensitivity: float | None = None) -> float:
    """``sensitivity`` (validated, > 0), or by default that of a sum of values clipped to norm
    1 under ``relation``: 2 under substitution, 1 otherwise (privamp's convention)."""
    if sensitivity is None:
        return 2.0 if isinstance(relation, Substitution) else 1.0
    return check_positive("sensitivity", sensitivity)


def is_replace_one(relation: Any) -> bool:
    """Whether ``relation`` is ``dp_accounting``'s ``NeighboringRelation.REPLACE_ONE`` (read
    with dp-accounting's semantics by :func:`runs_from_dp_event`: see the module docstring).

    Args:
        relation: anything accepted by :func:`as_relation`.

    Returns:
        True for ``REPLACE_ONE`` (recognised by class and member name), else False.
    """
    return (type(relation).__name__ == "NeighboringRelation"
            and getattr(relation, "name", "") == "REPLACE_ONE")


_NEIGHBOURING = {
    "ADD_OR_REMOVE_ONE": AddRemove,
    "REPLACE_ONE": Substitution,
    "REPLACE_SPECIAL": ZeroOut,
}


def runs_from_dp_event(
    event: Any,
    *,
    dataset_size: int | None = None,
    relation: Any = None,
    sensitivity: float | None = None,
) -> list[Training]:
    """The phases of a ``dp_accounting`` event tree: one :class:`~privamp.Training` per
    distinct step (mechanism and sampling), with the number of times it is composed, in
    order of first appearance.  Arguments as :func:`from_dp_event`."""
    rel = as_relation(relation)
    n = None if dataset_size is None else check_int("dataset_size", dataset_size, minimum=1)
    steps: list[tuple[_Step, int]] = []
    if is_replace_one(relation):
        bound = 1.0 if sensitivity is None else check_positive("sensitivity", sensitivity)
        _flatten(event, 1, bound, steps)
        if all(type(step.scheme) is Poisson for step, _ in steps):
            rel = HybridSubstitution()
        else:
            steps = []
            _flatten(event, 1, 2.0 * bound, steps)
    else:
        _flatten(event, 1, clipped_sensitivity(rel, sensitivity), steps)
    counts: dict[_Step, int] = {}
    for step, c in steps:
        counts[step] = counts.get(step, 0) + c
    if not counts:
        raise ValueError(
            f"{_name(event)} contains no private step (only NoOpDpEvent or count 0); "
            "there is nothing to account"
        )
    for step in counts:
        size = getattr(step.scheme, "dataset_size", None)
        if n is not None and size is not None and size != n:
            raise ValueError(
                f"dataset_size={n} does not match the event's source_dataset_size={size}"
            )
    return [Training(s.mechanism, s.scheme, steps=c, relation=rel) for s, c in counts.items()]


def from_dp_event(
    event: Any,
    *,
    dataset_size: int | None = None,
    relation: Any = None,
    sensitivity: float | None = None,
) -> Any:
    """A privamp run equivalent to a ``dp_accounting`` event tree: a
    :class:`~privamp.Training` when every step is the same, else the composition of its
    phases (``privamp.compose``, see :func:`runs_from_dp_event`).  Composition is
    commutative, so steps are grouped by kind whatever their order in the tree.

    Parameters
    ----------
    event:
        A ``dp_accounting.DpEvent`` (see the module docstring for the supported tree).
    dataset_size:
        If given, checked against the ``source_dataset_size`` of sampled-without/with-
        replacement events (a mismatch raises ``ValueError``).
    relation:
        Neighbouring relation: a privamp relation or a ``dp_accounting.NeighboringRelation``
        (default add/remove, ``dp_accounting``'s default ``ADD_OR_REMOVE_ONE``; see
        :func:`as_relation`).  ``REPLACE_ONE`` is read as dp-accounting reads it: Poisson-
        sampled and unsampled steps become :class:`~privamp.HybridSubstitution` runs (the
        tight antipodal pair dp-accounting's PLD uses), fixed-size sampling
        :class:`~privamp.Substitution` at twice the bound (module docstring).
    sensitivity:
        With a privamp relation: the sensitivity of the noised query under that relation, in
        units of the bound C in ``noise_multiplier = s/C``; default 1, and 2 under
        substitution (replacing one value moves the sum by up to 2C; privamp's convention).
        With a ``dp_accounting.NeighboringRelation``: the bound on one record's value
        ``||v_i||`` in units of C (default 1, the events' stated semantics); under
        ``REPLACE_ONE`` substitution steps get twice it.  ``sensitivity=0.5`` with
        ``REPLACE_ONE`` mirrors dp-accounting's ``RdpAccountant`` (replacement distance C).

    Raises ``ValueError`` naming the event for unsupported events, and
    :class:`~privamp.NotApplicable` for different steps in a build without ``privamp.compose``.
    """
    runs = runs_from_dp_event(
        event, dataset_size=dataset_size, relation=relation, sensitivity=sensitivity
    )
    if len(runs) == 1:
        return runs[0]
    return compose_phases(runs, f"{_name(event)} composes different steps ({runs[0]} and "
                                f"{runs[1]})")
