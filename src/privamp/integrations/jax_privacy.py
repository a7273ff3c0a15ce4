"""JAX Privacy integration: the privamp run of a ``jax_privacy`` batch-selection strategy or
DP-SGD configuration (jax_privacy 2.0, https://github.com/google-deepmind/jax_privacy).

jax_privacy names its samplers after the *bins*, not the law of the whole run.  Its
``BallsInBinsSampling(iterations, cycle_length)`` puts each example in one bin **once** and
keeps it there for every cycle: that is :class:`privamp.PersistentBallsInBins`, not
:class:`privamp.BallsInBins` (a fresh bin every epoch, Chua et al. 2025's multi-epoch
analysis).  Translating a multi-epoch jax_privacy run by hand to ``BallsInBins`` gives the number
of another sampler.  :func:`scheme_of_strategy` reads the law off the strategy itself::

    from jax_privacy.batch_selection import BallsInBinsSampling
    from privamp.integrations.jax_privacy import run_from_jax_privacy, scheme_of_strategy

    strategy = BallsInBinsSampling(iterations=500, cycle_length=100)
    scheme_of_strategy(strategy)                 # PersistentBallsInBins(batches=100)
    run = run_from_jax_privacy(strategy, noise_multiplier=1.0)
    run.epsilon(1e-5)                            # Guarantee: [lower, upper]

Strategies (``jax_privacy.batch_selection``) and their privamp schemes:

- ``CyclicPoissonSampling(p, T)`` (``cycle_length=1``): :class:`~privamp.Poisson` ``(p)``;
  with ``truncated_batch_size=m``: :class:`~privamp.TruncatedPoisson` ``(p, m, n)``.
- ``CyclicPoissonSampling(1, T, cycle_length=k)``: every example of a group in every one of
  its rounds, groups kept for the run: ``partition_type=INDEPENDENT`` is
  ``PersistentBallsInBins(k)``; ``EQUAL_SPLIT`` (a permutation cut into k groups of
  ``n // k``, ``n mod k`` examples never used) is ``Shuffle(n // k, n, drop_last=True,
  persistent=True)`` when ``n mod k < n // k``.
- ``CyclicPoissonSampling(p < 1, T, cycle_length=k > 1)`` (amplified BandMF's sampler):
  :class:`~privamp.CyclicPoisson` ``(p, k, partition)``.  Its accountant conditions on the
  example's group (Poisson(p) over ceil(T / k) rounds, as jax_privacy does): an upper bound;
  the group is secret, so no lower bound is claimed.  With ``truncated_batch_size=m`` and the
  dataset size n: ``CyclicPoisson(p, k, partition, m, n)``, accounted for ``EQUAL_SPLIT`` as
  truncated Poisson over one group of ``n // k`` (jax_privacy's
  ``truncated_amplified_bandmf_event``); ``INDEPENDENT`` with truncation is refused (as
  jax_privacy does).
- ``BallsInBinsSampling(T, k)``: ``PersistentBallsInBins(k)``.
- ``BMinSepSampling(1, T, b, warm_start=True)`` (no truncation): ``PersistentBallsInBins(b)``
  (jax_privacy's docstring: the reduction to balls-in-bins); other b-min-sep samplers:
  ``NotApplicable`` (jax_privacy itself accounts them only by Monte Carlo).
- ``FixedBatchSampling(b, T)``: ``WithoutReplacement(b, n)``; ``replace=True``:
  ``WithReplacement(b, n)``.
- ``UserSelectionStrategy(base, ...)``: the base strategy's scheme over the *users*
  (``dataset_size`` = number of users), assuming, as jax_privacy expects, that each selected
  user's examples (its row) are clipped together: one user is one record of the privamp run
  (user-level privacy).

Configurations: ``BandMFExecutionPlanConfig`` (one band: DP-SGD; b > 1 bands:
``Training(MatrixMechanism(strategy, nm * sensitivity * ||strategy||), CyclicPoisson(p, b,
partition), steps=iterations)``, amplified BandMF) and a ``DPExecutionPlan``
built from one; ``accounting.DpParams`` (with its number of updates; noise and batch-size
schedules become phases composed with ``privamp.compose``); ``keras_api.DPKerasConfig``.

Noise.  ``noise_multiplier`` of a strategy is privamp's: the noise standard deviation in units
of the clipping norm C, the sensitivity being C under add/remove and zero-out and 2C under
substitution.  jax_privacy's execution plans scale the noise by the sensitivity instead
(standard deviation ``noise_multiplier * sensitivity``); :func:`run_from_jax_privacy` reads them
that way.

jax_privacy is never imported here: objects are recognised by class name and attributes, so
this module imports (and maps hand-built descriptions) without JAX installed.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np

from .._validation import check_int
from ..accounting.training import Training
from ..errors import NotApplicable
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.matrix import MatrixMechanism
from ..sampling.cyclic import CyclicPoisson
from ..sampling.relations import AddRemove, Relation, Substitution, ZeroOut
from ..sampling.schemes import (
    PersistentBallsInBins,
    Poisson,
    Scheme,
    Shuffle,
    TruncatedPoisson,
    WithoutReplacement,
    WithReplacement,
)
from ._phases import compose_phases
from .dp_accounting import as_relation, clipped_sensitivity

__all__ = [
    "StandIns",
    "STAND_INS",
    "scheme_of_strategy",
    "steps_of_strategy",
    "run_from_strategy",
    "run_from_jax_privacy",
    "runs_from_dp_params",
]

_STRATEGIES = ("CyclicPoissonSampling", "BallsInBinsSampling", "FixedBatchSampling",
               "BMinSepSampling", "UserSelectionStrategy")


def _kind(obj: Any) -> str:
    return type(obj).__name__


def _enum_name(value: Any) -> str:
    return str(getattr(value, "name", value))


def _size(dataset_size: int | None, what: str) -> int:
    if dataset_size is None:
        raise ValueError(f"dataset_size is needed for {what} (the number of examples, an "
                         "integer >= 1)")
    return check_int("dataset_size", dataset_size, minimum=1)


def _rate(p: Any) -> float:
    if isinstance(p, bool) or not isinstance(p, numbers.Real) or not 0 < float(p) <= 1:
        raise ValueError(f"sampling_prob must be in (0, 1] (0 samples nothing), got {p!r}")
    return float(p)


def _cyclic_poisson(s: Any, n: int | None) -> Scheme:
    p = _rate(s.sampling_prob)
    k = check_int("cycle_length", s.cycle_length, minimum=1)
    m = s.truncated_batch_size
    if k == 1:
        if m is None:
            return Poisson(p)
        return TruncatedPoisson(p, m, _size(n, "truncated Poisson sampling"))
    if p < 1 or m is not None:
        return CyclicPoisson(p, k, _partition(s.partition_type), m,
                             None if m is None else n)
    partition = _enum_name(s.partition_type)
    if partition == "INDEPENDENT":
        return PersistentBallsInBins(k)
    if partition == "EQUAL_SPLIT":
        n = _size(n, "CyclicPoissonSampling with partition_type=EQUAL_SPLIT")
        b = n // k
        if b == 0 or n % k >= b:
            raise NotApplicable(
                f"EQUAL_SPLIT into cycle_length={k} groups of n // k = {b} of n={n} examples "
                f"leaves n mod k = {n % k} examples out each cycle, not a shuffle cut into "
                "batches of n // k (needs n mod k < n // k)")
        return Shuffle(b, n, drop_last=True, persistent=True)
    raise ValueError(f"partition_type must be INDEPENDENT or EQUAL_SPLIT, got {partition}")


def _partition(value: Any) -> str:
    name = _enum_name(value)
    if name not in ("EQUAL_SPLIT", "INDEPENDENT"):
        raise ValueError(f"partition_type must be INDEPENDENT or EQUAL_SPLIT, got {name}")
    return name.lower().replace("_", "-")


def _b_min_sep(s: Any) -> Scheme:
    b = check_int("min_sep", s.min_sep, minimum=1)
    p = float(s.sampling_prob)
    if p == 1 and bool(s.warm_start) and s.truncated_batch_size is None:
        return PersistentBallsInBins(b)
    raise NotApplicable(
        f"BMinSepSampling(sampling_prob={p}, min_sep={b}, warm_start={s.warm_start}, "
        f"truncated_batch_size={s.truncated_batch_size}) has no privamp accountant (jax_privacy "
        "accounts b-min-sep only by Monte Carlo); only sampling_prob=1 with warm_start and no "
        "truncation (balls-in-bins kept for the run) is mapped")


def scheme_of_strategy(strategy: Any, dataset_size: int | None = None) -> Scheme:
    """The privamp scheme of a ``jax_privacy.batch_selection`` strategy (see the module
    docstring for the table).

    Args:
        strategy: a jax_privacy ``CyclicPoissonSampling``, ``BallsInBinsSampling``,
            ``FixedBatchSampling``, ``BMinSepSampling`` or ``UserSelectionStrategy`` (or any
            object of that class name with the same fields).
        dataset_size: the number of examples (of users for a ``UserSelectionStrategy``);
            needed by fixed-size batches, truncation and ``EQUAL_SPLIT`` groups.

    Returns:
        The :class:`~privamp.Scheme` whose law the strategy's ``batch_iterator`` draws.

    Raises:
        NotApplicable: the sampler has no privamp accountant (cyclic Poisson with several
            groups and ``sampling_prob < 1``, b-min-sep other than balls-in-bins).
        ValueError: an unknown strategy, or a missing or invalid parameter (named).
    """
    kind = _kind(strategy)
    n = None if dataset_size is None else check_int("dataset_size", dataset_size, minimum=1)
    if kind == "CyclicPoissonSampling":
        return _cyclic_poisson(strategy, n)
    if kind == "BallsInBinsSampling":
        return PersistentBallsInBins(check_int("cycle_length", strategy.cycle_length, minimum=1))
    if kind == "FixedBatchSampling":
        b = check_int("batch_size", strategy.batch_size, minimum=1)
        n = _size(n, "FixedBatchSampling")
        return WithReplacement(b, n) if bool(strategy.replace) else WithoutReplacement(b, n)
    if kind == "BMinSepSampling":
        return _b_min_sep(strategy)
    if kind == "UserSelectionStrategy":
        return scheme_of_strategy(strategy.base_strategy, dataset_size)
    names = ", ".join(_STRATEGIES)
    raise ValueError(f"strategy must be a jax_privacy batch-selection strategy ({names}), "
                     f"got {kind}")


def steps_of_strategy(strategy: Any) -> int:
    """The number of batches (``iterations``) a strategy's ``batch_iterator`` yields.

    Args:
        strategy: a jax_privacy batch-selection strategy (a ``UserSelectionStrategy``: its
            base strategy's).

    Returns:
        ``iterations``, an integer >= 1.

    Raises:
        ValueError: not a strategy, or ``iterations`` < 1.
    """
    if _kind(strategy) == "UserSelectionStrategy":
        return steps_of_strategy(strategy.base_strategy)
    if _kind(strategy) not in _STRATEGIES:
        raise ValueError(f"strategy must be a jax_privacy batch-selection strategy, got "
                         f"{_kind(strategy)}")
    return check_int("iterations", strategy.iterations, minimum=1)


def _check_partition(strategy: Any, relation: Relation) -> None:
    """jax_privacy's own rule: EQUAL_SPLIT groups are not an add/remove sampler (the group
    sizes depend on n)."""
    base = getattr(strategy, "base_strategy", strategy)
    if (isinstance(relation, AddRemove) and _kind(base) == "CyclicPoissonSampling"
            and int(base.cycle_length) > 1 and _enum_name(base.partition_type) == "EQUAL_SPLIT"):
        raise NotApplicable("CyclicPoissonSampling with partition_type=EQUAL_SPLIT is not an "
                            "add/remove sampler (jax_privacy: only zero-out and replace-one); "
                            "use relation=pa.ZeroOut() or pa.Substitution(), or INDEPENDENT")


def run_from_strategy(
    strategy: Any,
    noise_multiplier: float,
    *,
    dataset_size: int | None = None,
    relation: Any = None,
    sensitivity: float | None = None,
    steps: int | None = None,
) -> Training:
    """The privamp run of DP-SGD on the batches of a jax_privacy strategy.

    Args:
        strategy: a jax_privacy batch-selection strategy (see :func:`scheme_of_strategy`).
        noise_multiplier: noise standard deviation in units of the clipping norm (> 0).
        dataset_size: examples (users for a ``UserSelectionStrategy``), when the scheme needs it.
        relation: a privamp relation or ``dp_accounting.NeighboringRelation`` (default
            add/remove).
        sensitivity: in units of the clipping norm; default 1, 2 under substitution.
        steps: batches used (default: the strategy's ``iterations``).

    Returns:
        ``Training(Gaussian(noise_multiplier, sensitivity), scheme, steps, relation)``.

    Raises:
        NotApplicable: as :func:`scheme_of_strategy`; ``EQUAL_SPLIT`` groups under add/remove.
        ValueError: invalid parameters (named).
    """
    rel = as_relation(relation)
    sens = clipped_sensitivity(rel, sensitivity)
    scheme = scheme_of_strategy(strategy, dataset_size)
    _check_partition(strategy, rel)
    t = steps_of_strategy(strategy) if steps is None else check_int("steps", steps, minimum=1)
    return Training(Gaussian(_noise(noise_multiplier), sens), scheme, steps=t, relation=rel)


def _noise(value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not (
            0 < float(value) < math.inf):
        raise ValueError(f"noise_multiplier must be in (0, inf) (0 is not private), got {value!r}")
    return float(value)


def _event_noise(event: Any) -> float:
    """The Gaussian noise multiplier inside a jax_privacy DP-SGD ``DpEvent``."""
    name = _kind(event)
    if name in ("SelfComposedDpEvent", "PoissonSampledDpEvent"):
        return _event_noise(event.event)
    if name in ("GaussianDpEvent", "TruncatedSubsampledGaussianDpEvent"):
        return _noise(event.noise_multiplier)
    raise ValueError(f"cannot read a noise multiplier from {name}; pass noise_multiplier=")


def _plan_relation(relation: Any, config_accountant: Any) -> Relation:
    if relation is not None:
        return as_relation(relation)
    rel = getattr(config_accountant, "neighboring_relation", None)
    return as_relation(rel) if rel is not None else ZeroOut()


def _bandmf(config: Any, noise_multiplier: float | None, dataset_size: int | None,
            relation: Any) -> Training:
    strategy = np.asarray(config.strategy, dtype=float)
    bands = int(strategy.size)
    rel = _plan_relation(relation, getattr(config, "accountant", None))
    nm = noise_multiplier if noise_multiplier is not None else config.noise_multiplier
    if nm is None:
        nm = _event_noise(config.plan.dp_event)  # jax_privacy's calibration to (epsilon, delta)
    sens = clipped_sensitivity(rel)
    n = dataset_size if dataset_size is not None else config.num_examples
    m = config.truncated_batch_size
    p = _rate(config.sampling_prob)
    steps = check_int("iterations", config.iterations, minimum=1)
    if bands > 1:  # amplified BandMF: the plan's CyclicPoissonSampling(cycle_length=bands)
        if bool(getattr(config, "column_normalize", False)):
            raise NotApplicable("BandMF with column_normalize=True rescales the strategy's "
                                "columns for the run's length; give the rescaled strategy")
        part = _partition(getattr(config, "partition_type", "EQUAL_SPLIT"))
        scheme = CyclicPoisson(p, bands, part, m, None if m is None else n)
        # jax_privacy's noise: noise_multiplier * sensitivity * ||strategy|| (max column norm)
        mech = MatrixMechanism(strategy, _noise(nm) * sens * float(np.linalg.norm(strategy)))
        return Training(mech, scheme, steps=steps, relation=rel)
    plain: Scheme = Poisson(p) if m is None else TruncatedPoisson(p, m, _size(n, "truncation"))
    return Training(Gaussian(_noise(nm) * sens, sens), plain, steps=steps, relation=rel)


def _execution_plan(plan: Any, noise_multiplier: float | None, dataset_size: int | None,
                    relation: Any) -> Training:
    if relation is None:
        raise ValueError("a DPExecutionPlan does not record its neighbouring relation: pass "
                         "relation= (its config's accountant.neighboring_relation)")
    rel = as_relation(relation)
    nm = noise_multiplier if noise_multiplier is not None else _event_noise(plan.dp_event)
    sens = clipped_sensitivity(rel)
    strategy = plan.batch_selection_strategy
    scheme = scheme_of_strategy(strategy, dataset_size)
    _check_partition(strategy, rel)
    return Training(Gaussian(_noise(nm) * sens, sens), scheme,
                    steps=steps_of_strategy(strategy), relation=rel)


def _schedule(value: Any, steps: int, what: str) -> list[tuple[int, Any]]:
    pairs = [(0, value)] if isinstance(value, numbers.Real) else sorted(
        (int(t), v) for t, v in value)
    if not pairs or pairs[0][0] != 0:
        raise ValueError(f"{what} schedule must start at step 0, got {value!r}")
    return [(t, v) for t, v in pairs if t < steps]


def runs_from_dp_params(dp_params: Any, num_updates: int, *,
                        relation: Any = None) -> list[Training]:
    """The phases of a jax_privacy ``accounting.DpParams`` DP-SGD run after ``num_updates``
    steps: one :class:`~privamp.Training` per stretch of constant noise multiplier and batch
    size (jax_privacy's ``DpsgdTrainingAccountant`` model).

    ``POISSON``: ``Poisson(batch_size / num_samples)`` (``TruncatedPoisson`` with
    ``truncated_batch_size``) under add/remove; ``FIXED_BATCH_SIZE``:
    ``WithoutReplacement(batch_size, num_samples)`` under substitution (sensitivity 2, as
    jax_privacy's doubled sensitivity).  The noise multiplier is in units of the clipping norm.

    Args:
        dp_params: a ``jax_privacy.accounting.DpParams`` (or an object with its fields).
        num_updates: the number of steps taken (>= 1).
        relation: overrides the relation above (privamp or dp_accounting relation).

    Returns:
        The phases in step order.

    Raises:
        NotApplicable: ``cycle_length > 1`` (cyclic Poisson, see :func:`scheme_of_strategy`),
            ``examples_per_user > 1`` (user-level accounting by a mixture of group
            sensitivities, not modelled), or ``is_finite_guarantee=False``.
        ValueError: invalid fields (named).
    """
    t_all = check_int("num_updates", num_updates, minimum=1)
    if not bool(getattr(dp_params, "is_finite_guarantee", True)):
        raise NotApplicable("DpParams.is_finite_guarantee=False: no finite epsilon to account")
    k = dp_params.cycle_length
    if k is not None and int(k) != 1:
        raise NotApplicable(f"DpParams.cycle_length={k} > 1 (cyclic Poisson over groups) has no "
                            "privamp accountant yet (jax_privacy conditions on the group)")
    u = dp_params.examples_per_user
    if u is not None and int(u) != 1:
        raise NotApplicable(f"DpParams.examples_per_user={u}: user-level DP-SGD with per-example "
                            "clipping (a group of examples per user) is not modelled by privamp; "
                            "clip per user (UserSelectionStrategy) to account users as records")
    n = check_int("num_samples", dp_params.num_samples, minimum=1)
    method = _enum_name(dp_params.sampling_method)
    if method not in ("POISSON", "FIXED_BATCH_SIZE"):
        raise ValueError(f"sampling_method must be POISSON or FIXED_BATCH_SIZE, got {method}")
    m = dp_params.truncated_batch_size
    if m is not None and method != "POISSON":
        raise ValueError("truncated_batch_size needs sampling_method=POISSON")
    if relation is not None:
        rel = as_relation(relation)
    else:
        rel = Substitution() if method == "FIXED_BATCH_SIZE" else AddRemove()
    sens = clipped_sensitivity(rel)
    nms = _schedule(dp_params.noise_multipliers, t_all, "noise_multipliers")
    batch = getattr(dp_params, "batch_sizes", dp_params.batch_size)
    bss = _schedule(batch, t_all, "batch_sizes")
    cuts = sorted({t for t, _ in nms} | {t for t, _ in bss} | {t_all})
    runs: list[Training] = []
    for start, end in zip(cuts[:-1], cuts[1:], strict=True):
        nm = [v for t, v in nms if t <= start][-1]
        bs = int(round(float([v for t, v in bss if t <= start][-1])))
        bs = check_int("batch_size", bs, minimum=1)
        if method == "FIXED_BATCH_SIZE":
            scheme: Scheme = WithoutReplacement(bs, n)
        elif m is None:
            scheme = Poisson(_rate(bs / n))
        else:
            scheme = TruncatedPoisson(_rate(bs / n), m, n)
        runs.append(Training(Gaussian(_noise(nm), sens), scheme, steps=end - start,
                             relation=rel))
    return runs


def _keras(config: Any, noise_multiplier: float | None, relation: Any) -> Training:
    if not bool(config.poisson_sampling_in_fit):
        raise NotApplicable(
            "DPKerasConfig(poisson_sampling_in_fit=False): the batches are whatever fit() is "
            "given (Keras shuffles arrays each epoch), while jax_privacy accounts them as "
            "Poisson; describe the loader with a privamp scheme and build pa.Training")
    g = check_int("gradient_accumulation_steps", config.gradient_accumulation_steps, minimum=1)
    if g > 1:
        raise NotApplicable(
            f"DPKerasConfig with poisson_sampling_in_fit and gradient_accumulation_steps={g}: "
            "each update sums several independent Poisson batches, so one example can appear "
            "more than once (sensitivity up to the number of batches); not a Poisson sampler")
    nm = noise_multiplier if noise_multiplier is not None else config.noise_multiplier
    if nm is None:
        raise ValueError("DPKerasConfig.noise_multiplier is None (calibrated at fit time): pass "
                         "noise_multiplier= or the config from "
                         "update_with_calibrated_noise_multiplier()")
    n = check_int("train_size", config.train_size, minimum=1)
    b = check_int("batch_size", config.batch_size, minimum=1, maximum=n)
    rel = as_relation(relation)
    return Training(Gaussian(_noise(nm), clipped_sensitivity(rel)), Poisson(b / n),
                    steps=check_int("train_steps", config.train_steps, minimum=1), relation=rel)


def run_from_jax_privacy(
    obj: Any,
    *,
    noise_multiplier: float | None = None,
    dataset_size: int | None = None,
    num_updates: int | None = None,
    relation: Any = None,
) -> Any:
    """The privamp run of a jax_privacy strategy or DP-SGD configuration.

    Args:
        obj: a batch-selection strategy (needs ``noise_multiplier``, see
            :func:`run_from_strategy`); a ``BandMFExecutionPlanConfig`` (any number of bands; its
            noise multiplier, else the one its plan calibrated; relation: its accountant's); a
            ``DPExecutionPlan`` (needs ``relation``); an ``accounting.DpParams`` (needs
            ``num_updates``, see :func:`runs_from_dp_params`); a ``keras_api.DPKerasConfig``
            with ``poisson_sampling_in_fit=True``.
        noise_multiplier: overrides the object's noise multiplier (> 0).
        dataset_size: number of examples, when the object does not record it.
        num_updates: steps taken, for ``DpParams``.
        relation: privamp or ``dp_accounting`` neighbouring relation (defaults above).

    Returns:
        A :class:`~privamp.Training`, or for a ``DpParams`` schedule the composition of its
        phases (``privamp.compose``).

    Raises:
        NotApplicable: a sampler or mechanism privamp does not account (the message says
            which and why).
        ValueError: an unknown object or a missing or invalid parameter (named).
    """
    kind = _kind(obj)
    if kind in _STRATEGIES:
        if noise_multiplier is None:
            raise ValueError("noise_multiplier is needed for a strategy (noise standard "
                             "deviation in units of the clipping norm, > 0)")
        return run_from_strategy(obj, noise_multiplier, dataset_size=dataset_size,
                                 relation=relation)
    if kind == "BandMFExecutionPlanConfig":
        return _bandmf(obj, noise_multiplier, dataset_size, relation)
    if kind == "DPExecutionPlan":
        return _execution_plan(obj, noise_multiplier, dataset_size, relation)
    if kind == "DPKerasConfig":
        return _keras(obj, noise_multiplier, relation)
    if kind == "DpParams":
        if num_updates is None:
            raise ValueError("num_updates is needed for DpParams (steps taken, >= 1)")
        if noise_multiplier is not None:
            raise ValueError("noise_multiplier comes from DpParams.noise_multipliers")
        runs = runs_from_dp_params(obj, num_updates, relation=relation)
        if len(runs) == 1:
            return runs[0]
        return compose_phases(runs, "DpParams schedule")
    raise ValueError(
        "obj must be a jax_privacy batch-selection strategy, BandMFExecutionPlanConfig, "
        f"DPExecutionPlan, DpParams or DPKerasConfig, got {kind}")


# ------------------------------------------------------------------------------------------
# stand-ins: jax_privacy's strategy classes, for describing a run without jax_privacy
# ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _CyclicPoissonSampling:
    sampling_prob: float
    iterations: int
    truncated_batch_size: int | None = None
    cycle_length: int = 1
    partition_type: str = "EQUAL_SPLIT"


@dataclass(frozen=True)
class _BallsInBinsSampling:
    iterations: int
    cycle_length: int


@dataclass(frozen=True)
class _FixedBatchSampling:
    batch_size: int
    iterations: int
    replace: bool = False


@dataclass(frozen=True)
class _BMinSepSampling:
    sampling_prob: float
    iterations: int
    min_sep: int
    warm_start: bool = True
    truncated_batch_size: int | None = None


for _cls in (_CyclicPoissonSampling, _BallsInBinsSampling, _FixedBatchSampling,
             _BMinSepSampling):
    _cls.__name__ = _cls.__qualname__ = _cls.__name__.lstrip("_")  # the bridge reads names


@dataclass(frozen=True)
class StandIns:
    """Classes with the names, fields, field order and defaults of jax_privacy 2.0's
    ``batch_selection`` strategies (``CyclicPoissonSampling``, ``BallsInBinsSampling``,
    ``FixedBatchSampling``, ``BMinSepSampling``; enums as their names), for describing a
    jax_privacy run to :func:`scheme_of_strategy` without installing JAX."""

    CyclicPoissonSampling: type = _CyclicPoissonSampling
    BallsInBinsSampling: type = _BallsInBinsSampling
    FixedBatchSampling: type = _FixedBatchSampling
    BMinSepSampling: type = _BMinSepSampling


#: the stand-ins (``STAND_INS.BallsInBinsSampling(iterations, cycle_length)``, ...)
STAND_INS = StandIns()
