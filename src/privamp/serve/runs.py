"""From a :class:`~privamp.serve.fields.Query` to privamp objects: the sampler (chosen
directly, or read off the loader through the integrations' own rules), the mechanism, the
training run, the samplers to compare it with, the equivalent CLI line and Python snippet,
and the docs page of a source.

"What does my loader do?" reuses the integrations' public functions:
:func:`privamp.integrations.loaders.scheme_of_options` (PyTorch ``DataLoader`` options, the
rules of ``scheme_of``), and :func:`privamp.integrations.jax_privacy.scheme_of_strategy` on
namesake descriptions of the jax_privacy strategies (it recognises them by class name and
fields; JAX is not needed).  Opacus's ``make_private(poisson_sampling=True)`` replaces the
loader by a Poisson one of rate ``1 / len(data_loader)`` (``DPDataLoader.from_data_loader``),
which ``scheme_of`` reads as ``Poisson(sample_rate)``; with ``poisson_sampling=False`` the
loader's own batches are the scheme.
"""

from __future__ import annotations

import shlex
from typing import Any, cast

from ..accounting.training import Training
from ..errors import NotApplicable
from ..integrations.jax_privacy import STAND_INS, scheme_of_strategy
from ..integrations.loaders import scheme_of_options
from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..sampling.relations import AddRemove, Relation, Substitution, ZeroOut
from ..sampling.schemes import (
    BalancedIteration,
    BallsInBins,
    Deterministic,
    PersistentBallsInBins,
    Poisson,
    Scheme,
    Shuffle,
    WithoutReplacement,
    WithReplacement,
)
from .fields import SAMPLERS, FieldError, Query

__all__ = [
    "scheme_for",
    "sampler_scheme",
    "mechanism_for",
    "relation_for",
    "run_for",
    "other_samplers",
    "cli_line",
    "python_snippet",
    "docs_page",
    "PAPER_PAGES",
]

_RELATIONS = {"add-remove": AddRemove, "zero-out": ZeroOut, "substitution": Substitution}

#: source keyword -> docs page (docs/<page>.md) of the paper
PAPER_PAGES = (
    ("Balanced Iteration", "dong2025"), ("Dong", "dong2025"), ("Chua", "chua2024"),
    ("Schuchardt", "schuchardt2024"), ("runcated Poisson", "truncated_poisson"),
    ("Balle, Barthe", "balle2018"), ("Balle et al. 2018", "balle2018"), ("PLD", "pld"),
)


def docs_page(source: str) -> str:
    """The docs page (``docs/<name>.md``) of the paper a source names (``support`` when none
    of the known papers is named)."""
    for word, page in PAPER_PAGES:
        if word in source:
            return page
    return "support"


def sampler_scheme(name: str, b: int, n: int) -> Scheme:
    """The scheme of sampler ``name`` (a key of :data:`SAMPLERS`) with batches of ``b`` out
    of ``n`` (epochs of ``ceil(n / b)`` batches for the epoch-structured ones).

    Raises:
        ValueError: the scheme refuses ``b`` or ``n``.
    """
    per_epoch = -(-n // b)
    return {
        "poisson": lambda: Poisson(b / n),
        "without-replacement": lambda: WithoutReplacement(b, n),
        "with-replacement": lambda: WithReplacement(b, n),
        "shuffle": lambda: Shuffle(b, n),
        "persistent-shuffle": lambda: Shuffle(b, n, persistent=True),
        "deterministic": lambda: Deterministic(b, n),
        "balanced-iteration": lambda: BalancedIteration(per_epoch, 1),
        "balls-in-bins": lambda: BallsInBins(per_epoch),
        "balls-in-bins-persistent": lambda: PersistentBallsInBins(per_epoch),
    }[name]()


def _strategy(q: Query, steps: int) -> Any:
    b, n, k = q.batch_size, q.dataset_size, q.cycle_length
    if q.strategy == "cyclic-poisson":
        return STAND_INS.CyclicPoissonSampling(1.0 if k > 1 else b / n, steps, cycle_length=k,
                                               partition_type="INDEPENDENT")
    if q.strategy == "balls-in-bins":
        return STAND_INS.BallsInBinsSampling(steps, k)
    if q.strategy == "b-min-sep":
        return STAND_INS.BMinSepSampling(1.0, steps, k)
    return STAND_INS.FixedBatchSampling(b, steps, replace=q.strategy == "fixed-batch-replace")


def scheme_for(q: Query) -> Scheme:
    """The scheme of the query's sampler (or of its loader description).

    Raises:
        FieldError: the loader's law has no privamp scheme, or a value the scheme refuses
            (named).
    """
    b, n = q.batch_size, q.dataset_size
    field = {"sampler": "sampler", "pytorch": "shuffle", "opacus": "poisson_sampling",
             "jax": "strategy"}[q.source]
    try:
        if q.source == "sampler":
            return sampler_scheme(q.sampler, b, n)
        if q.source == "opacus" and q.poisson_sampling:
            return Poisson(1 / Shuffle(b, n, drop_last=q.drop_last).steps_per_epoch)
        if q.source in ("pytorch", "opacus"):
            return scheme_of_options(b, n, shuffle=q.shuffle, drop_last=q.drop_last,
                                     replacement=q.torch_sampler == "replacement")
        steps = q.steps if q.steps is not None else max(1, round((q.epochs or 1) * n / b))
        return scheme_of_strategy(_strategy(q, steps), n)
    except (ValueError, NotApplicable) as exc:
        raise FieldError(field, f"{field}: {' '.join(str(exc).split())}") from None


def mechanism_for(q: Query, sigma: float | None = None) -> Mechanism:
    """The query's mechanism (``sigma`` overrides the noise multiplier); sensitivity 2 for
    Gaussian and Laplace under substitution (clipped gradients)."""
    sens = 2.0 if q.relation == "substitution" else 1.0
    if q.mechanism == "gaussian":
        # (the query's validation sets the chosen mechanism's parameter)
        return Gaussian(sigma if sigma is not None else cast(float, q.sigma), sensitivity=sens)
    if q.mechanism == "laplace":
        return Laplace(cast(float, q.scale), sens)
    return RandomizedResponse(cast(float, q.theta))


def relation_for(q: Query) -> Relation:
    """The query's neighbouring relation."""
    return _RELATIONS[q.relation]()


def run_for(q: Query, scheme: Scheme | None = None, sigma: float | None = None) -> Training:
    """The training run of the query (under ``scheme`` instead of its own, if given).

    Raises:
        FieldError: a value the run refuses (named).
    """
    s = scheme_for(q) if scheme is None else scheme
    try:
        return Training(mechanism_for(q, sigma), s, steps=q.steps, epochs=q.epochs,
                        relation=relation_for(q))
    except NotApplicable as exc:
        raise FieldError("sampler", f"sampler: {' '.join(str(exc).split())}") from None
    except ValueError as exc:
        field = "steps" if q.steps is not None else "epochs"
        raise FieldError(field, f"{field}: {' '.join(str(exc).split())}") from None


def other_samplers(q: Query) -> list[str]:
    """The samplers of :data:`SAMPLERS` to set beside the query's (all but its own when it
    chose one directly)."""
    return [s for s in SAMPLERS if not (q.source == "sampler" and s == q.sampler)]


_CLI_SCHEME = {
    Poisson: "poisson", WithoutReplacement: "without-replacement",
    WithReplacement: "with-replacement", Deterministic: "deterministic", Shuffle: "shuffle",
    BalancedIteration: "balanced-iteration", BallsInBins: "balls-in-bins",
    PersistentBallsInBins: "balls-in-bins-persistent",
}


def _scheme_flags(s: Scheme) -> list[str]:
    name = _CLI_SCHEME.get(type(s))
    if name is None:
        raise NotApplicable(f"no CLI flags for {s}")
    out = ["--scheme", name]
    if isinstance(s, Poisson):
        return [*out, "--rate", f"{s.rate:.17g}"]
    if isinstance(s, (WithoutReplacement, WithReplacement, Deterministic, Shuffle)):
        out += ["--batch-size", str(s.batch_size), "--dataset-size", str(s.dataset_size)]
        if getattr(s, "drop_last", False):
            out.append("--drop-last")
        if getattr(s, "persistent", False):
            out.append("--persistent")
        return out
    if isinstance(s, BalancedIteration):
        return [*out, "--balanced-steps", str(s.steps), "--participations",
                str(s.participations)]
    return [*out, "--batches", str(cast(Any, s).batches)]  # the balls-in-bins schemes


def cli_line(q: Query, run: Training) -> str:
    """The ``privamp epsilon`` command giving the same interval (``privamp calibrate`` is
    the same flags with ``--epsilon`` instead of ``--sigma``)."""
    m = run.mechanism
    words = ["privamp", "epsilon", "--mechanism", q.mechanism]
    if q.mechanism == "gaussian":
        words += ["--sigma", f"{q.sigma:g}"]
    elif q.mechanism == "laplace":
        words += ["--scale", f"{q.scale:g}"]
    else:
        words += ["--theta", f"{q.theta:g}"]
    if getattr(m, "sensitivity", 1.0) != 1.0:
        words += ["--sensitivity", f"{cast(Any, m).sensitivity:g}"]
    try:
        words += _scheme_flags(run.scheme)
    except NotApplicable:
        return f"# no privamp CLI flags for {run.scheme}: use the Python snippet"
    words += ["--steps", str(run.steps), "--delta", f"{q.delta:g}", "--relation", q.relation]
    return " ".join(shlex.quote(w) for w in words)


def python_snippet(q: Query, run: Training) -> str:
    """A Python snippet computing the same interval (and, with a target, the noise)."""
    rel = {"add-remove": "pa.AddRemove()", "zero-out": "pa.ZeroOut()",
           "substitution": "pa.Substitution()"}[q.relation]
    lines = [
        "import privamp as pa",
        "",
        f"run = pa.Training(pa.{run.mechanism!r}, pa.{run.scheme!r},",
        f"                  steps={run.steps}, relation={rel})",
        f"print(run.epsilon({q.delta:g}))  # the certified interval",
    ]
    if q.target_epsilon is not None:
        lines += [
            f"sigma = pa.calibrate({q.target_epsilon:g}, {q.delta:g}, lambda s: pa.Training(",
            f"    pa.Gaussian(s, sensitivity={cast(Any, run.mechanism).sensitivity:g}), "
            "run.scheme, "
            "steps=run.steps, relation=run.relation))",
            "print(sigma)",
        ]
    return "\n".join(lines)
