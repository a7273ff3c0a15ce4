"""BLAS threads during privamp's queries: one by default, a switch for users who want more.

privamp's hot paths (the PLD engine's dot products and matrix-vector products) are small
enough that a multi-threaded BLAS gains no wall time on them, while it doubles the CPU time
on a quiet machine and slows every query down when the cores are already busy (a sweep that
runs one query per core, or a shared machine: 0.50 s against 0.38 s single-threaded for the
canonical query under load).  So privamp limits the BLAS libraries loaded in the process
(OpenBLAS, MKL, BLIS, via :mod:`threadpoolctl`) to :func:`blas_threads` threads *while one of
its queries runs*, and restores the previous setting afterwards; nothing is changed at
import, and code outside privamp's queries keeps its own setting.

The switch:

* the environment variable ``PRIVAMP_BLAS_THREADS`` (read at the first query): a positive
  integer, or ``default`` to leave the BLAS libraries' own setting alone;
* :func:`set_blas_threads` (``None`` = leave the libraries' setting alone), which overrides
  the environment variable.

Nested queries (a query that calls another) limit once, at the outermost one; queries of
several Python threads share one limit (the BLAS setting is process-wide), set by the first
to enter and restored by the last to leave.
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

__all__ = ["ENV_VAR", "blas_threads", "set_blas_threads", "reset_blas_threads", "limited_blas",
           "limit_blas"]

#: environment variable holding the BLAS thread count of privamp's queries
ENV_VAR = "PRIVAMP_BLAS_THREADS"

_UNSET = object()
_setting: Any = _UNSET  # int, None (leave alone) or _UNSET (read ENV_VAR on first use)
_lock = threading.Lock()
_depth = 0
_active: Any = None  # the threadpoolctl limiter of the outermost query, if any
_controller: Any = None

F = TypeVar("F", bound=Callable[..., Any])


def _parse(value: str) -> int | None:
    text = value.strip().lower()
    if text in ("default", "auto", "none", ""):
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise ValueError(
            f"{ENV_VAR}={value!r}: must be a positive integer (BLAS threads during privamp's "
            f"queries) or 'default' (leave the BLAS libraries' own setting)")
    return n


def blas_threads() -> int | None:
    """The number of BLAS threads privamp's queries run with.

    Returns:
        A positive int (1 unless changed), or None when privamp leaves the BLAS libraries'
        own setting alone.

    Raises:
        ValueError: if ``PRIVAMP_BLAS_THREADS`` holds neither a positive integer nor
            ``default``.
    """
    global _setting
    if _setting is _UNSET:
        env = os.environ.get(ENV_VAR)
        _setting = 1 if env is None else _parse(env)
    return _setting


def set_blas_threads(n: int | None) -> None:
    """Set the number of BLAS threads of privamp's queries (overrides ``PRIVAMP_BLAS_THREADS``).

    Args:
        n: a positive integer, or None to leave the BLAS libraries' own setting alone (e.g.
            a multi-threaded BLAS on an otherwise idle many-core machine).

    Raises:
        ValueError: if ``n`` is neither None nor a positive integer.
    """
    global _setting
    if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 1):
        raise ValueError(f"n={n!r}: must be a positive integer or None")
    _setting = n


def reset_blas_threads() -> None:
    """Forget :func:`set_blas_threads`: the next query reads ``PRIVAMP_BLAS_THREADS`` again
    (default 1)."""
    global _setting
    _setting = _UNSET


def _limiter(n: int) -> Any:
    global _controller
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    return _controller.limit(limits=n, user_api="blas")


@contextmanager
def limited_blas() -> Iterator[None]:
    """Run the body with the BLAS libraries limited to :func:`blas_threads` threads (no
    change when that is None, or inside another privamp query)."""
    global _depth, _active
    n = blas_threads()
    with _lock:
        _depth += 1
        if _depth == 1 and n is not None:
            _active = _limiter(n)
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0 and _active is not None:
                _active.restore_original_limits()
                _active = None


def limit_blas(fn: F) -> F:
    """Decorator: run ``fn`` inside :func:`limited_blas` (for privamp's query entry points)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with limited_blas():
            return fn(*args, **kwargs)

    return wrapper  # type: ignore[return-value]
