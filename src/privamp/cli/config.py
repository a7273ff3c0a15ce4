"""Inputs beyond single flags: ``--config run.toml`` (any command) and ``--phase`` groups
(a run made of phases, composed as :func:`privamp.compose` does).

A config file holds the command's flags as TOML keys (``-`` or ``_`` alike); flags given on
the command line win over the file.  ``[[phase]]`` tables are phases::

    # run.toml, for `privamp epsilon --config run.toml`
    delta = 1e-5
    [[phase]]
    sigma = 1.0
    scheme = "poisson"
    rate = 0.01
    steps = 1000
    [[phase]]
    sigma = 2.0
    scheme = "shuffle"
    batch_size = 100
    dataset_size = 10000
    epochs = 2

The same run from flags: ``privamp epsilon --delta 1e-5 --phase "--sigma 1.0 --scheme poisson
--rate 0.01 --steps 1000" --phase "--sigma 2.0 --scheme shuffle --batch-size 100
--dataset-size 10000 --epochs 2"``.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .values import CliError

__all__ = ["expand_config", "config_flags"]


def _flag(key: str) -> str:
    return "--" + key.replace("_", "-")


def config_flags(table: dict[str, Any], where: str) -> list[str]:
    """The command-line flags for the TOML ``table`` (``[[phase]]`` entries become
    ``--phase`` groups).

    Raises:
        CliError: a value of a type no flag takes (a nested table).
    """
    out: list[str] = []
    for key, value in table.items():
        if key == "phase":
            if not isinstance(value, list) or not all(isinstance(p, dict) for p in value):
                raise CliError(f"{where}: 'phase' must be an array of tables ([[phase]])")
            for i, phase in enumerate(value):
                out += ["--phase", shlex.join(config_flags(phase, f"{where}, phase {i + 1}"))]
        elif isinstance(value, bool):
            if value:
                out.append(_flag(key))
        elif isinstance(value, (int, float, str)):
            out += [_flag(key), str(value)]
        elif isinstance(value, list) and all(isinstance(v, (int, float, str)) for v in value):
            out += [_flag(key), *map(str, value)]
        else:
            raise CliError(f"{where}: {key!r} must be a number, a string, a boolean or a "
                           f"list of them, got {type(value).__name__}")
    return out


def expand_config(argv: Sequence[str]) -> list[str]:
    """``argv`` with each ``--config FILE`` replaced by the file's flags, placed right after
    the command so that flags on the command line win.

    Raises:
        CliError: the file is missing or not valid TOML.
    """
    try:
        import tomllib  # type: ignore[import-not-found, unused-ignore]  # (Python >= 3.11)
    except ImportError:  # Python 3.10: the same parser as the tomli package
        try:
            import tomli as tomllib
        except ImportError as exc:
            raise CliError("--config on Python 3.10 needs tomli (pip install tomli), or "
                           "Python >= 3.11") from exc

    args = list(argv)
    files: list[str] = []
    rest: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--config":
            if i + 1 >= len(args):
                raise CliError("--config needs a file (a TOML file of the command's flags)")
            files.append(args[i + 1])
            i += 2
            continue
        if a.startswith("--config="):
            files.append(a.split("=", 1)[1])
        else:
            rest.append(a)
        i += 1
    if not files:
        return rest
    extra: list[str] = []
    for name in files:
        path = Path(name)
        try:
            table = tomllib.loads(path.read_text())
        except OSError as exc:
            raise CliError(f"--config {name}: cannot read it ({exc.strerror})") from None
        except tomllib.TOMLDecodeError as exc:
            raise CliError(f"--config {name}: not valid TOML ({exc})") from None
        extra += config_flags(table, f"--config {name}")
    at = next((k for k, a in enumerate(rest) if not a.startswith("-")), None)
    if at is None:
        raise CliError("--config: give the command first, e.g. privamp epsilon --config run.toml")
    return rest[: at + 1] + extra + rest[at + 1:]


def phase_runs(groups: Sequence[str], sigma: float | None = None) -> list[Any]:
    """The training runs of the ``--phase`` groups (each a string of run flags: mechanism,
    scheme, steps or epochs, relation); ``sigma`` overrides every phase's ``--sigma`` (for
    ``calibrate``).

    Raises:
        CliError: a group's flags are wrong (the message names the phase).
    """
    from .flags import Parser, mechanism_flags, sampling_flags
    from .values import make_run

    class PhaseParser(Parser):
        def error(self, message: str):
            raise CliError(message)

    p = PhaseParser(prog="privamp --phase", add_help=False)
    mechanism_flags(p)
    sampling_flags(p)
    p.add_argument("--steps", type=_count)
    p.add_argument("--epochs", type=float)
    runs = []
    for i, group in enumerate(groups):
        try:
            ns = p.parse_args(shlex.split(group))
            ns.phase = None
            runs.append(make_run(ns, sigma))
        except (CliError, ValueError) as exc:
            raise CliError(f"--phase {i + 1}: {exc}") from None
    return runs


def _count(text: str) -> int:
    from .flags import count

    return count(text)
