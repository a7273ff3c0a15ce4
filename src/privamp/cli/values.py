"""The values a command works on (mechanism, scheme, relation, training run), built from the
parsed flags."""

from __future__ import annotations

import argparse
from typing import Any

from ..accounting.training import Training
from ..mechanisms.base import Mechanism
from ..mechanisms.gaussian import Gaussian
from ..mechanisms.laplace import Laplace
from ..mechanisms.randomized_response import RandomizedResponse
from ..sampling.registry import scheme_entry
from ..sampling.relations import AddRemove, HybridSubstitution, Relation, Substitution, ZeroOut
from ..sampling.schemes import Scheme

__all__ = [
    "RELATIONS",
    "CliError",
    "need",
    "make_mechanism",
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


def make_mechanism(args: argparse.Namespace, sigma: float | None = None) -> Mechanism:
    """The ``--mechanism`` (``sigma`` overrides ``--sigma``).

    Raises:
        CliError: its parameter flag is missing.
        ValueError: the mechanism refuses a value.
    """
    kind = args.mechanism
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
