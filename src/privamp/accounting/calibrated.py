"""The result of :func:`privamp.calibrate`: a knob's value with the guarantee it meets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from ..results import Bound, Guarantee, Kind

__all__ = ["KNOB_NAMES", "Calibration"]

#: how a calibration result names its knob
KNOB_NAMES = {"noise": "noise multiplier", "rate": "sampling rate", "batch_size": "batch size",
              "steps": "steps", "epochs": "epochs"}


@dataclass(frozen=True)
class Calibration:
    """The value of a knob found by :func:`calibrate`, with the guarantee it meets.

    ``value`` is the knob's value (a noise multiplier, a sampling rate, ...; an int for batch
    size and steps); ``guarantee`` the accountant's epsilon (upper and lower bound) of the run
    at that value and ``delta``; ``probes`` the accountant queries the search made.  Prints as
    ``noise multiplier 0.813588: epsilon <= 2.9998 at delta 1e-05 [source]``.

    ``float(c)`` (and ``int(c)``, comparisons, ``f"{c:.3f}"``) use ``value``; formatting
    rounds it to the safe side (the noise up, rates, batch sizes, steps and epochs down), so
    the printed value still meets the target.
    """

    knob: str
    value: float
    guarantee: Guarantee
    target_epsilon: float
    delta: float
    probes: int = 0
    note: str = ""

    @property
    def name(self) -> str:
        """The knob's name in words (``"noise multiplier"``, ``"sampling rate"``, ...)."""
        return KNOB_NAMES.get(self.knob, self.knob)

    @property
    def epsilon(self) -> Bound:
        """The epsilon upper bound met at ``value`` (a labelled Bound with its source)."""
        assert self.guarantee.upper is not None  # calibrate only returns met targets
        return self.guarantee.upper

    @property
    def source(self) -> str:
        """The source of the epsilon upper bound met at ``value``."""
        return self.epsilon.source

    @property
    def kind(self) -> Kind:
        """The safe side of the knob: ``"upper"`` for the noise (any larger noise meets the
        target too), ``"lower"`` for the rate, batch size, steps and epochs (any smaller
        value does)."""
        return "upper" if self.knob == "noise" else "lower"

    def _safe(self) -> Bound:
        # the displayed value must still meet the target: the noise rounded up, the rest down
        return Bound(self.value, self.kind, self.source)

    def __float__(self) -> float:
        return float(self.value)

    def __int__(self) -> int:
        return int(self.value)

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self.value, dtype=dtype)

    def __lt__(self, other: Any) -> bool:
        return self.value < float(other)

    def __le__(self, other: Any) -> bool:
        return self.value <= float(other)

    def __gt__(self, other: Any) -> bool:
        return self.value > float(other)

    def __ge__(self, other: Any) -> bool:
        return self.value >= float(other)

    def __format__(self, spec: str) -> str:
        """``value`` formatted and rounded to the safe side; no spec gives :meth:`__str__`."""
        return format(self._safe(), spec) if spec else str(self)

    def text(self, source: str | None = None) -> str:
        """The one-line reading with ``source`` (default: the full source)."""
        value = f"{self.value:d}" if isinstance(self.value, int) else format(self._safe(), ".6g")
        src = self.source if source is None else source
        return (f"{self.name} {value}: epsilon <= {self.epsilon:.4f} at delta {self.delta:g} "
                f"[{src}]")

    def __str__(self) -> str:
        return self.text()

    def __repr__(self) -> str:
        value = self.value if isinstance(self.value, int) else format(self._safe(), ".6g")
        return (f"Calibration(knob={self.knob!r}, value={value}, epsilon<={self.epsilon:.4f}, "
                f"target_epsilon={self.target_epsilon:g}, delta={self.delta:g}, "
                f"probes={self.probes})")

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict: knob, value, target, delta, probes and the guarantee."""
        return {"knob": self.knob, "value": self.value, "target_epsilon": self.target_epsilon,
                "delta": self.delta, "probes": self.probes, "note": self.note,
                "guarantee": self.guarantee.to_dict()}
