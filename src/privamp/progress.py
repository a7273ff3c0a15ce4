"""Progress for long work (calibration, comparisons, figures, curves), on stderr.

On a terminal: a tqdm bar.  Elsewhere (a log file, CI, a notebook's captured stderr): whole
lines, at most one every ``log_every`` seconds plus the last, so logs stay readable::

    calibrating: 3it [00:12,  4.1s/it, sigma=0.81, epsilon<=3.12]

``PRIVAMP_PROGRESS=0`` in the environment silences all of it, and so does tqdm's own
``TQDM_DISABLE=1``.  Off a terminal, when logging is configured for the ``"privamp"``
logger (or the root logger) at INFO or below, the lines go to :data:`logger` at INFO level
instead of the stream, so they land wherever the application sends its logs.
"""

from __future__ import annotations

import logging
import os
import re
import sys
import threading
from collections.abc import Callable, Iterable, Iterator
from typing import TextIO, TypeVar

from tqdm import tqdm

__all__ = ["logger", "enabled", "progress", "iterate", "working"]

#: privamp's logger: progress lines (off a terminal, when logging is configured) and notes
logger = logging.getLogger("privamp")

T = TypeVar("T")


class _Lines:
    """A stream for tqdm that writes each refresh as one full line (no carriage returns).

    A line that repeats the previous one but for its timing (tqdm's refresh on ``close``)
    is dropped."""

    def __init__(self, stream: TextIO, log: bool = False) -> None:
        self.stream = stream
        self.log = log
        self._last = ""

    def write(self, text: str) -> None:
        text = text.replace("\r", "").replace("\x1b[A", "").strip()
        key = _TIMING.sub("[", text)
        if text and key != self._last:
            if self.log:
                logger.info("%s", text)
            else:
                self.stream.write(text + "\n")
            self._last = key

    def flush(self) -> None:
        self.stream.flush()


#: tqdm's "[elapsed, rate" prefix inside the brackets, e.g. "[00:03, 1.20 probes/s".
_TIMING = re.compile(r"\[\d[\d:]*(?:<[^,\]]*)?(?:, *[^,\]]*/(?:s|it|\w+))?")


def _is_tty(stream: TextIO | None) -> bool:
    stream = stream if stream is not None else sys.stderr
    return bool(getattr(stream, "isatty", lambda: False)())


def enabled() -> bool:
    """False when ``PRIVAMP_PROGRESS=0`` or tqdm's ``TQDM_DISABLE`` (any true value) is set."""
    if os.environ.get("PRIVAMP_PROGRESS", "1").strip() == "0":
        return False
    return os.environ.get("TQDM_DISABLE", "").strip().lower() in ("", "0", "false", "no")


def _logging_configured() -> bool:
    """True when logging would show privamp's INFO records (a handler is configured and the
    level lets INFO through)."""
    return logger.hasHandlers() and logger.isEnabledFor(logging.INFO)


def progress(
    iterable: Iterable[T] | None = None,
    *,
    total: int | None = None,
    desc: str = "",
    stream: TextIO | None = None,
    log_every: float = 10.0,
    bar_format: str | None = None,
    unit: str = "it",
) -> tqdm:
    """A tqdm bar over ``iterable`` (or a manual one with ``total``) on ``stream``
    (default stderr); log-friendly lines when ``stream`` is not a terminal.

    Use as an iterator, or call ``.update()`` / ``.set_postfix_str()`` and ``.close()``.
    """
    explicit = stream
    stream = stream if stream is not None else sys.stderr
    tty = _is_tty(stream)
    return tqdm(
        iterable,
        total=total,
        desc=desc,
        file=stream if tty else _Lines(stream, _logging_configured() and explicit is None),
        mininterval=0.1 if tty else log_every,
        ascii=not tty,
        dynamic_ncols=tty,
        leave=True,
        bar_format=bar_format,
        unit=unit,
        disable=not enabled(),
    )


def iterate(items: Iterable[T], desc: str, stream: TextIO | None = None,
            unit: str = "it") -> Iterator[T]:
    """``items`` one by one with a progress bar labelled ``desc`` (see :func:`progress`)."""
    bar = progress(items, desc=desc, stream=stream, log_every=0.0, unit=unit)
    try:
        yield from bar
    finally:
        bar.close()


def working(label: str, fn: Callable[[], T], stream: TextIO | None = None,
            after: float = 1.0) -> T:
    """Run ``fn()``; if it takes longer than ``after`` seconds, show the elapsed time
    (a ticking bar on a terminal, a line every 10 s elsewhere)."""
    if not enabled():
        return fn()
    done = threading.Event()

    def tick() -> None:
        if done.wait(after):
            return
        bar = progress(total=None, desc=label, stream=stream, bar_format="{desc}: {elapsed}")
        tty = _is_tty(stream)
        while not done.wait(0.5 if tty else 10.0):
            bar.refresh()
        bar.close()

    thread = threading.Thread(target=tick, daemon=True)
    thread.start()
    try:
        return fn()
    finally:
        done.set()
        thread.join()
