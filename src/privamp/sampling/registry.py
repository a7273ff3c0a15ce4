"""The scheme registry: every sampling scheme registers itself once, with its name, a one-line
description, the flags that build it from the command line and an example value, and the
package exports, the support matrix (``privamp support``) and the command line (``--scheme``)
read it, so a new scheme needs nothing but its ``@register_scheme(...)`` line (issue 26).

>>> from privamp.sampling.registry import scheme_entry
>>> scheme_entry("poisson").example_value()
Poisson(rate=0.01)
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeVar

__all__ = [
    "Flag",
    "SchemeEntry",
    "register_scheme",
    "scheme_entries",
    "scheme_entry",
    "scheme_names",
    "unregister_scheme",
]

#: how a flag's text is read: a whole number >= 1, a real number, an on/off switch, a list of
#: real numbers, a list of whole numbers >= 0
FlagKind = Literal["count", "real", "switch", "reals", "wholes"]
_KINDS = ("count", "real", "switch", "reals", "wholes")


@dataclass(frozen=True)
class Flag:
    """One constructor argument of a scheme as the command-line flag ``--DEST`` (``DEST``
    with dashes for underscores).

    Attributes:
        field: the constructor's keyword argument.
        kind: how the text is read: ``"count"`` (a whole number >= 1), ``"real"``,
            ``"switch"`` (on when given), ``"reals"`` (one or more real numbers), ``"wholes"``
            (one or more whole numbers >= 0).
        help: one line for ``--help``.
        required: True when the scheme cannot be built without it (otherwise the
            constructor's default applies when the flag is absent).
        dest: the flag's name with underscores (default: ``field`` without a trailing
            underscore); schemes share a flag by using the same ``dest``.
    """

    field: str
    kind: FlagKind
    help: str
    required: bool = True
    dest: str = ""

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {', '.join(_KINDS)}, got {self.kind!r}")
        if not self.dest:
            object.__setattr__(self, "dest", self.field.rstrip("_"))

    @property
    def option(self) -> str:
        """The command-line spelling, ``--batch-size`` for ``batch_size``."""
        return "--" + self.dest.replace("_", "-")


@dataclass(frozen=True)
class SchemeEntry:
    """A registered scheme.

    Attributes:
        name: its ``--scheme`` name (the class's ``name`` unless given).
        factory: the class (or constructor function, e.g. ``Dropout``) that builds it.
        public_name: the name it is exported under (``privamp.<public_name>``).
        summary: one line saying how the scheme picks each step's data.
        example: positional arguments of an example value (the support matrix's row).
        flags: its constructor arguments as command-line flags.
        aliases: other accepted ``--scheme`` names.
        from_flags: a builder for schemes whose flags are not plain keyword arguments
            (receives the flag values by ``dest``; absent flags are ``None``).
    """

    name: str
    factory: Callable[..., Any]
    public_name: str
    summary: str
    example: tuple[Any, ...] = ()
    flags: tuple[Flag, ...] = ()
    aliases: tuple[str, ...] = ()
    from_flags: Callable[[Mapping[str, Any]], Any] | None = None

    @property
    def label(self) -> str:
        """The example as code, e.g. ``Shuffle(10, 1000)``."""
        return f"{self.public_name}({', '.join(map(repr, self.example))})"

    def example_value(self) -> Any:
        """The example scheme, ``factory(*example)``."""
        return self.factory(*self.example)

    def build(self, values: Mapping[str, Any]) -> Any:
        """The scheme given by flag values (keyed by each flag's ``dest``; ``None`` or
        absent: not given).

        Raises:
            ValueError: a required flag is missing (named as ``--flag``), or the scheme's own
                validation refuses a value.
        """
        if self.from_flags is not None:
            return self.from_flags(values)
        kwargs = {}
        for flag in self.flags:
            value = values.get(flag.dest)
            if value is None:
                if flag.required:
                    raise ValueError(f"{flag.option} is required for --scheme {self.name}")
                continue
            kwargs[flag.field] = value
        return self.factory(**kwargs)


_REGISTRY: dict[str, SchemeEntry] = {}

T = TypeVar("T", bound=Callable[..., Any])


def register_scheme(
    summary: str,
    *,
    example: tuple[Any, ...] = (),
    flags: tuple[Flag, ...] = (),
    name: str | None = None,
    aliases: tuple[str, ...] = (),
    from_flags: Callable[[Mapping[str, Any]], Any] | None = None,
) -> Callable[[T], T]:
    """Class (or constructor-function) decorator registering a sampling scheme.

    Args:
        summary: one line saying how the scheme picks each step's data.
        example: positional arguments of an example value (the support matrix's row).
        flags: the constructor's arguments as command-line flags.
        name: the ``--scheme`` name (default: the class's ``name`` attribute).
        aliases: other accepted ``--scheme`` names.
        from_flags: a builder from the flag values, for schemes whose flags are not plain
            keyword arguments of the constructor.

    Returns:
        The decorator; it registers and returns the decorated object unchanged.

    Raises:
        ValueError: the name (or an alias) is taken (raised when decorating).
    """

    def decorate(factory: T) -> T:
        key = name or getattr(factory, "name", None)
        if not isinstance(key, str) or not key:
            raise ValueError(f"{factory!r} needs a name to be registered")
        for k in (key, *aliases):
            if k in _REGISTRY or any(k in e.aliases for e in _REGISTRY.values()):
                raise ValueError(f"scheme name {k!r} is already registered")
        entry = SchemeEntry(key, factory, factory.__name__, summary, tuple(example),
                            tuple(flags), tuple(aliases), from_flags)
        _REGISTRY[key] = entry
        return factory

    return decorate


def unregister_scheme(name: str) -> None:
    """Remove a registration (for tests that register stand-ins).

    Raises:
        KeyError: no scheme of that name.
    """
    del _REGISTRY[name]


def scheme_entries() -> tuple[SchemeEntry, ...]:
    """Every registered scheme, in registration order."""
    return tuple(_REGISTRY.values())


def scheme_names() -> list[str]:
    """The public names of the registered schemes (what ``privamp`` exports), sorted."""
    return sorted({e.public_name for e in _REGISTRY.values()})


def scheme_entry(name: str) -> SchemeEntry:
    """The registered scheme called ``name`` (or one of its aliases).

    Raises:
        ValueError: no scheme of that name (the message lists the names).
    """
    if name in _REGISTRY:
        return _REGISTRY[name]
    for entry in _REGISTRY.values():
        if name in entry.aliases:
            return entry
    raise ValueError(f"--scheme must be one of {', '.join(_REGISTRY)}, got {name!r}")
