"""The values a command works on (mechanism, scheme, relation, training run), built from the
parsed flags."""

from __future__ import annotations

import argparse
from typing import Any

from ..accounting.training import Training
from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.matrix import MatrixMechanism
from ..mechanisms.randomized_response import RandomizedResponse
from ..sampling.registry import scheme_entry
from ..sampling.relations import AddRemove, HybridSubstitution, Relation, Substitution, ZeroOut
from ..sampling.schemes import Scheme

__all__ = [
    "RELATIONS",
    "CliError",
    "need",
    "make_mechanism",
    "make_matrix",
    "make_scheme",
    "make_relation",
    "make_run",
]

#: the ``--relation`` choices
RELATIONS = {"add-remove": AddRemove, "substitution": Substitution, "zero-out": ZeroOut,
             "hybrid-substitution": HybridSubstitution}


class CliError(Exception):
    """A user error: printed as one line, exit status 2."""


def need(args: argparse.Namespace, name: str, why: str) -> Any:
    """The value of flag ``--name``.

    Raises:
        CliError: the flag was not given (the message says ``why`` it is needed).
    """
    value = getattr(args, name, None)
    if value is None:
        raise CliError(f"--{name.replace('_', '-')} is required {why}")
    return value


def _coefficients(texts: list[str]) -> list[float]:
    out = []
    for part in ",".join(texts).replace(" ", ",").split(","):
        if part.strip():
            try:
                out.append(float(part))
            except ValueError:
                raise CliError(f"--coefficients must be numbers (e.g. 1,0.5,0.25), got "
                               f"{part!r}") from None
    if not out:
        raise CliError("--coefficients needs at least one number")
    return out


def _strategy_file(path: str) -> Any:
    import numpy as np

    try:
        if path.endswith(".npy"):
            return np.load(path, allow_pickle=False)
        return np.loadtxt(path, delimiter="," if path.endswith(".csv") else None, ndmin=2)
    except (OSError, ValueError) as exc:
        raise CliError(f"--strategy-file {path}: cannot read a matrix ({exc})") from None


def make_matrix(args: argparse.Namespace, sigma: float | None = None) -> MatrixMechanism:
    """The ``--mechanism matrix`` strategy: ``--strategy identity | sqrt-toeplitz [--bands]
    | banded --coefficients``, ``--coefficients`` alone, or ``--strategy-file`` (a dense
    strategy), at noise multiplier ``--sigma`` (clip norm 1).

    Raises:
        CliError: a missing, conflicting or unreadable strategy flag, or --sensitivity other
            than 1 (the matrix mechanism works in units of the clip norm; substitution
            doubles the distance itself).
        ValueError: the strategy refuses a value (not lower-triangular, ...).
    """
    s = sigma if sigma is not None else need(args, "sigma", "for the matrix mechanism")
    if getattr(args, "sensitivity", 1.0) != 1.0:
        raise CliError("--sensitivity is not read by --mechanism matrix (units of the clip "
                       "norm; --relation substitution doubles the distance itself)")
    kind = getattr(args, "strategy", None)
    coef = getattr(args, "coefficients", None)
    path = getattr(args, "strategy_file", None)
    bands = getattr(args, "bands", None)
    given = [f for f, v in (("--strategy", kind), ("--coefficients", coef),
                            ("--strategy-file", path)) if v is not None]
    if kind == "banded" and coef is not None:
        given.remove("--strategy")
    if kind == "banded" and coef is None:
        raise CliError("--strategy banded needs --coefficients (e.g. 1,0.5,0.25)")
    if len(given) != 1:
        raise CliError("--mechanism matrix needs exactly one of --strategy, --coefficients "
                       f"or --strategy-file (got {', '.join(given) or 'none'})")
    if bands is not None and kind != "sqrt-toeplitz":
        raise CliError("--bands is read by --strategy sqrt-toeplitz only (a banded strategy "
                       "has as many bands as --coefficients)")
    if kind == "banded" and coef is None:
        raise CliError("--strategy banded needs --coefficients (e.g. 1,0.5,0.25)")
    if kind == "identity":
        return MatrixMechanism.identity(s)
    if kind == "sqrt-toeplitz":
        steps = getattr(args, "steps", None)
        if bands is None and steps is None:
            raise CliError("--strategy sqrt-toeplitz needs --bands (or --steps for the full "
                           "square root)")
        return MatrixMechanism.sqrt_toeplitz(s, bands=bands, steps=steps)
    if coef is not None:
        return MatrixMechanism.banded(_coefficients(coef), s)
    return MatrixMechanism(_strategy_file(str(path)), s)


def make_mechanism(args: argparse.Namespace, sigma: float | None = None
                   ) -> Mechanism | MatrixMechanism:
    """The ``--mechanism`` (``sigma`` overrides ``--sigma``).

    Raises:
        CliError: its parameter flag is missing.
        ValueError: the mechanism refuses a value.
    """
    kind = args.mechanism
    if kind == "matrix":
        return make_matrix(args, sigma)
    if kind == "gaussian":
        s = sigma if sigma is not None else need(args, "sigma", "for the Gaussian mechanism")
        return Gaussian(s, sensitivity=args.sensitivity)
    if kind == "laplace":
        return Laplace(need(args, "scale", "for the Laplace mechanism"), args.sensitivity)
    return RandomizedResponse(need(args, "theta", "for randomized response"))


def make_scheme(args: argparse.Namespace, name: str | None = None) -> Scheme:
    """The registered scheme ``name`` (default ``--scheme``) built from its flags.

    Raises:
        ValueError: an unknown scheme, a missing flag, or a value the scheme refuses.
    """
    if name is None and getattr(args, "scheme", None) is None:
        raise CliError("--scheme is required")
    return scheme_entry(name or args.scheme).build(vars(args))


def make_relation(args: argparse.Namespace, scheme: Scheme | None = None) -> Relation:
    """The ``--relation`` with ``--group``; without ``--relation``, the scheme's default
    (:meth:`privamp.Scheme.default_relation`: add/remove, zero-out for shuffled and
    deterministic batches)."""
    if args.relation is None:
        return scheme.default_relation(args.group) if scheme is not None else AddRemove(
            group=args.group)
    return RELATIONS[args.relation](group=args.group)


def make_run(args: argparse.Namespace, sigma: float | None = None) -> Any:
    """The training run of ``--steps`` (or ``--epochs``) steps, or the composition of the
    ``--phase`` groups (:mod:`privamp.cli.config`).

    Raises:
        CliError: neither or both of --steps and --epochs, or a missing flag.
        ValueError: a value refused by the mechanism, the scheme or the run.
    """
    if getattr(args, "phase", None):
        from ..accounting.composition import compose
        from .config import phase_runs

        if args.scheme is not None or args.steps is not None or args.epochs is not None:
            raise CliError("give the run either as --phase groups or by its own --scheme and "
                           "--steps/--epochs, not both")
        runs = phase_runs(args.phase, sigma)
        return runs[0] if len(runs) == 1 else compose(*runs)
    if getattr(args, "scheme", None) is None:
        raise CliError("--scheme is required (or give the run as --phase groups)")
    if (args.steps is None) == (args.epochs is None):
        raise CliError("give exactly one of --steps or --epochs")
    scheme = make_scheme(args)
    return Training(
        make_mechanism(args, sigma),
        scheme,
        steps=args.steps,
        epochs=args.epochs,
        relation=make_relation(args, scheme),
    )
