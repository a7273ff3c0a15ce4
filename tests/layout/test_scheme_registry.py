"""Schemes register themselves (issue 26): every Scheme subclass has a registry entry, and
the lists that used to be kept by hand (sampling.__all__, privamp.__all__, the support matrix,
the command line's --scheme) are read from the registry."""

from __future__ import annotations

import inspect

import pytest

import privamp
import privamp.sampling as sampling
from privamp.cli import build_parser
from privamp.cli.flags import scheme_flag_help
from privamp.sampling.registry import (
    Flag,
    register_scheme,
    scheme_entries,
    scheme_entry,
    unregister_scheme,
)
from privamp.sampling.schemes import Scheme
from privamp.support import support_rows


def _subclasses(cls: type) -> set[type]:
    out = set()
    for sub in cls.__subclasses__():
        out |= {sub} | _subclasses(sub)
    return out


def _public_scheme_classes() -> set[type]:
    """Every public subclass of Scheme defined by privamp (not by a test)."""
    return {c for c in _subclasses(Scheme)
            if not c.__name__.startswith("_") and c.__module__.startswith("privamp.")}


def _scheme_choices() -> list[str]:
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["epsilon"]
    return list(next(a for a in sub._actions if a.dest == "scheme").choices)


def test_every_scheme_class_is_registered_and_appears_everywhere():
    classes = _public_scheme_classes()
    assert len(classes) >= 13
    registered = {e.factory for e in scheme_entries()}
    assert classes <= registered, sorted(c.__name__ for c in classes - registered)
    labels = {r[0] for r in support_rows()}
    choices = _scheme_choices()
    for entry in scheme_entries():
        assert entry.public_name in sampling.__all__
        assert entry.public_name in privamp.__all__
        assert getattr(privamp, entry.public_name) is entry.factory
        assert entry.label in labels
        assert entry.name in choices
        value = entry.example_value()
        assert isinstance(value, Scheme)
        if inspect.isclass(entry.factory):
            assert type(value) is entry.factory and entry.name == entry.factory.name
        assert entry.summary and "\n" not in entry.summary


def test_the_exports_are_sorted_and_complete():
    assert privamp.__all__ == sorted(set(privamp.__all__))
    assert sampling.__all__ == sorted(set(sampling.__all__))
    assert all(hasattr(privamp, n) for n in privamp.__all__)
    assert {"Scheme", "Relation", "AddRemove", "HybridSubstitution"} <= set(privamp.__all__)
    # the names a user reaches for (issue 25's schemes among them)
    for name in ("BallsInBins", "PersistentBallsInBins", "TruncatedPoisson", "Dropout",
                 "CustomSampler", "PartialModelSplit", "Shuffle", "Deterministic"):
        assert name in privamp.__all__


def test_every_flag_of_every_scheme_is_on_the_command_line():
    sub = next(a for a in build_parser()._actions if a.dest == "command").choices["epsilon"]
    options = {o for a in sub._actions for o in a.option_strings}
    for entry in scheme_entries():
        for flag in entry.flags:
            assert flag.option in options, (entry.name, flag.option)


def test_a_new_scheme_registered_later_appears_everywhere_and_leaves_cleanly():
    @register_scheme("a test stand-in", example=(3,), name="test-stand-in",
                     flags=(Flag("batches", "count", "batches per epoch"),))
    def StandIn(batches: int) -> Scheme:  # noqa: N802
        return privamp.BallsInBins(batches)

    try:
        assert scheme_entry("test-stand-in").build({"batches": 5}) == privamp.BallsInBins(5)
        assert "test-stand-in" in _scheme_choices()
        assert "StandIn(3)" in {r[0] for r in support_rows()}
    finally:
        unregister_scheme("test-stand-in")
    assert "test-stand-in" not in _scheme_choices()


def test_registration_refuses_a_taken_name_and_a_flag_of_two_kinds():
    with pytest.raises(ValueError, match="already registered"):
        register_scheme("again", name="shuffle")(lambda: None)
    with pytest.raises(ValueError, match="already registered"):
        register_scheme("again", name="balanced")(lambda: None)  # an alias
    with pytest.raises(ValueError, match="kind must be one of"):
        Flag("x", "integer", "no such kind")  # type: ignore[arg-type]
    clash = register_scheme("clash", name="test-clash",
                            flags=(Flag("batches", "real", "not a count"),))
    clash(lambda batches: privamp.BallsInBins(int(batches)))
    try:
        with pytest.raises(ValueError, match="--batches is declared with kinds"):
            scheme_flag_help()
    finally:
        unregister_scheme("test-clash")


def test_unknown_scheme_and_missing_flag_name_the_flag():
    with pytest.raises(ValueError, match="--scheme must be one of .*poisson"):
        scheme_entry("nope")
    with pytest.raises(ValueError, match="--batches is required for --scheme balls-in-bins"):
        scheme_entry("balls-in-bins").build({})
    assert scheme_entry("balanced") is scheme_entry("balanced-iteration")
