"""Labelled results: every number that leaves privamp is a :class:`Bound`, alone (an array of
upper bounds from :func:`privamp.rdp`) or inside a :class:`Guarantee`.

Both behave like the number they hold: ``float(b)``, ``np.asarray(b)``, ``f"{b:.3f}"`` and
comparisons (``b < 3``) use ``b.value``; a Guarantee uses its upper bound, the number that is
safe to report, and raises ``ValueError`` when it has none.  Formatting rounds in the safe
direction: an upper bound up, a lower bound down.

A ``Bound`` says what the number is (``"upper"``, ``"lower"`` or ``"exact"``) and where it
comes from (paper and theorem).  A ``Guarantee`` pairs an upper and a lower bound on the same
quantity; ``float(g)`` is the upper bound, the number that is safe to report.
"""

from __future__ import annotations

import decimal
import json
import math
import re
from dataclasses import dataclass
from typing import Any, Literal, cast

import numpy as np

Kind = Literal["upper", "lower", "exact"]
_KINDS = ("upper", "lower", "exact")

__all__ = ["Bound", "Estimate", "Guarantee", "reshaped"]


def _as_value(value: Any) -> float | np.ndarray:
    if isinstance(value, np.ndarray):
        if value.ndim == 0:
            return float(value)
        out = np.array(value, dtype=float)
        out.setflags(write=False)
        return out
    return float(value)


class _Numeric:
    """Comparisons and ``np.asarray`` through the ``number`` a result stands for."""

    number: Any

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self.number, dtype=dtype)

    def __lt__(self, other: Any) -> Any:
        return self.number < _plain(other)

    def __le__(self, other: Any) -> Any:
        return self.number <= _plain(other)

    def __gt__(self, other: Any) -> Any:
        return self.number > _plain(other)

    def __ge__(self, other: Any) -> Any:
        return self.number >= _plain(other)


@dataclass(frozen=True)
class Bound(_Numeric):
    """A labelled number: ``value`` is an upper bound, a lower bound or the exact value of the
    quantity asked for, as stated by ``kind``; ``source`` names the result (paper, theorem)
    and the method that produced it.

    ``value`` is a float, or a read-only numpy array when the query was vectorised.
    """

    value: float | np.ndarray
    kind: Kind
    source: str

    def __post_init__(self) -> None:
        if self.kind not in _KINDS:
            raise ValueError(f"kind must be one of {_KINDS}, got {self.kind!r}")
        object.__setattr__(self, "value", _as_value(self.value))
        v = np.asarray(self.value, dtype=float)
        if np.isnan(v).any():
            raise ValueError(f"a Bound cannot hold NaN (source: {self.source})")

    def __float__(self) -> float:
        if isinstance(self.value, np.ndarray):
            raise TypeError("this Bound holds an array; index .value instead")
        return float(self.value)

    @property
    def number(self) -> float | np.ndarray:
        """``value``: what formatting, comparisons and ``np.asarray`` use."""
        return self.value

    def __format__(self, spec: str) -> str:
        """Formats ``value``, rounded up for an upper bound and down for a lower bound
        (``f"{b:.2f}"`` of an upper bound 2.3816 is ``"2.39"``)."""
        return _format(self.value, spec, self, self.kind)

    # arithmetic gives plain numbers (the label does not survive arbitrary arithmetic)
    def __add__(self, other: Any) -> Any:
        return self.value + _plain(other)

    __radd__ = __add__

    def __sub__(self, other: Any) -> Any:
        return self.value - _plain(other)

    def __rsub__(self, other: Any) -> Any:
        return _plain(other) - self.value

    def __mul__(self, other: Any) -> Any:
        return self.value * _plain(other)

    __rmul__ = __mul__

    def __truediv__(self, other: Any) -> Any:
        return self.value / _plain(other)

    def __rtruediv__(self, other: Any) -> Any:
        return _plain(other) / self.value

    def _array(self) -> np.ndarray:
        if not isinstance(self.value, np.ndarray):
            raise TypeError("this Bound holds one number, not an array (use float(bound))")
        return self.value

    def __len__(self) -> int:
        return len(self._array())

    def __bool__(self) -> bool:
        """A Bound is always true (``g.upper or g.lower`` picks the one that exists), even
        when it holds 0 or an array."""
        return True

    def __getitem__(self, index: Any) -> Any:
        return self._array()[index]

    def __iter__(self) -> Any:
        return iter(self._array().tolist())

    @property
    def is_upper(self) -> bool:
        """True when the value may be reported as an upper bound (``upper`` or ``exact``)."""
        return self.kind in ("upper", "exact")

    @property
    def is_lower(self) -> bool:
        """True when the value is a lower bound (``lower`` or ``exact``)."""
        return self.kind in ("lower", "exact")

    def to_dict(self) -> dict[str, Any]:
        value: Any = self.value
        if isinstance(value, np.ndarray):
            value = [_json_float(x) for x in value.tolist()]
        else:
            value = _json_float(value)
        return {"value": value, "kind": self.kind, "source": self.source}

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def __str__(self) -> str:
        symbol = {"upper": "<=", "lower": ">=", "exact": "=="}[self.kind]
        shown = (_fmt(self.value) if isinstance(self.value, np.ndarray)
                 else _directed(float(self.value), ".6g", self.kind))
        return f"{symbol} {shown}  [{self.kind}; {self.source}]"


def _plain(other: Any) -> Any:
    """The number inside a Bound or Guarantee (its upper bound), anything else unchanged."""
    return other.number if isinstance(other, _Numeric) else other


_ROUNDING = {"upper": decimal.ROUND_CEILING, "lower": decimal.ROUND_FLOOR,
             "exact": decimal.ROUND_HALF_EVEN}


def _directed(x: float, spec: str, kind: str) -> str:
    """``format(x, spec)`` rounded in the direction that keeps the bound a bound: an upper
    bound up, a lower bound down (an exact value to nearest).  The digits are rounded in
    exact decimal arithmetic, then printed with ``float``'s formatting."""
    m = re.search(r"\.(\d+)([eEfFgG%]?)$", spec)
    if m is None or not math.isfinite(x):
        return format(x, spec)
    plain = format(x, spec)
    try:
        if float(plain.rstrip("%")) / (100 if spec.endswith("%") else 1) == x:
            return plain  # the digits shown are the value itself: nothing to round
    except ValueError:
        pass
    with decimal.localcontext() as ctx:
        ctx.rounding = _ROUNDING[kind]
        digits = format(decimal.Decimal(x), f".{m.group(1)}{m.group(2)}")
    y = float(digits[:-1]) / 100 if m.group(2) == "%" else float(digits)
    return format(y, spec)


def _format(value: float | np.ndarray, spec: str, whole: Any, kind: str) -> str:
    if not spec:
        return str(whole)
    if isinstance(value, np.ndarray):
        return "[" + ", ".join(_directed(float(x), spec, kind) for x in value.ravel()) + "]"
    return _directed(float(value), spec, kind)


def _json_float(x: float) -> float | str:
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(x)


def _fmt(value: float | np.ndarray) -> str:
    if isinstance(value, np.ndarray):
        return np.array2string(value, precision=6)
    return f"{value:.6g}"


def _intervals(lower: Bound | None, upper: Bound | None, most: int = 8) -> list[str]:
    """``in [lower, upper]``, or for array values one interval a line (the first and last
    points when there are more than ``most``)."""
    vals = [None if b is None else np.asarray(b.value, dtype=float) for b in (lower, upper)]
    shape = next(v for v in vals if v is not None).shape
    if not shape:
        lo, hi = ("-" if v is None else _directed(float(v), ".6g", k)
                  for v, k in zip(vals, ("lower", "upper"), strict=True))
        return [f"in [{lo}, {hi}]"]
    n = int(np.prod(shape))
    flat = [None if v is None else v.ravel() for v in vals]
    keep = list(range(n)) if n <= most else [*range(most // 2), -1, *range(n - most // 2, n)]
    lines = [f"in [lower, upper] at each of {n} points:"]
    for i in keep:
        if i < 0:
            lines.append("  ...")
            continue
        lo, hi = ("-" if f is None else _directed(float(f[i]), ".6g", k)
                  for f, k in zip(flat, ("lower", "upper"), strict=True))
        lines.append(f"  [{i}] in [{lo}, {hi}]")
    return lines


@dataclass(frozen=True)
class Guarantee(_Numeric):
    """Two-sided knowledge of one quantity (epsilon or delta of a run).

    ``upper`` is a sound upper bound (or the exact value), ``lower`` a certified lower bound
    (or the exact value); either may be ``None`` when no method gives one (never both).
    ``float(g)`` is the upper bound, the number that is safe to report.  ``declined`` lists the
    accountants that did not apply to this run, as ``(name, reason)`` pairs.
    """

    upper: Bound | None
    lower: Bound | None
    declined: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if self.upper is None and self.lower is None:
            raise ValueError("a Guarantee holds at least one bound (upper or lower)")
        if self.upper is not None and not self.upper.is_upper:
            raise ValueError(
                f"Guarantee.upper must be an upper or exact Bound, got {self.upper.kind}"
            )
        if self.lower is not None and not self.lower.is_lower:
            raise ValueError(
                f"Guarantee.lower must be a lower or exact Bound, got {self.lower.kind}"
            )
        if self.upper is not None and self.lower is not None:
            hi = np.asarray(self.upper.value, dtype=float)
            lo = np.asarray(self.lower.value, dtype=float)
            tol = 1e-9 * np.maximum(1.0, np.abs(hi))
            if np.any(lo > hi + tol):
                raise AssertionError(
                    "internal error: lower bound exceeds upper bound "
                    f"({self.lower} vs {self.upper}); please report this"
                )

    @property
    def number(self) -> float | np.ndarray:
        """The upper bound's value: what ``float``, formatting and comparisons use.

        Raises:
            ValueError: no upper bound is known (only a lower bound), so no number is safe
                to report.
        """
        if self.upper is None:
            raise ValueError(
                "this Guarantee has no upper bound (only a lower bound, "
                f"{_fmt(cast(Bound, self.lower).value)}, is known): there is no number safe to "
                "report"
            )
        return self.upper.value

    def __float__(self) -> float:
        self.number  # noqa: B018  (raises the clear error when there is no upper bound)
        return float(cast(Bound, self.upper))

    def __format__(self, spec: str) -> str:
        """Formats the upper bound rounded up (even an exact value: the printed number is
        the one safe to report): ``f"{g:.2f}"`` of an upper bound 2.3816 is ``"2.39"``, the
        shortest number that is still an upper bound; this is the rule docs/reporting.md
        states.  Print more digits (``f"{g:.4f}"``, ``"2.3817"``) to show it closer; no spec
        gives the two-sided text."""
        return _format(self.number, spec, self, "upper") if spec else str(self)

    @property
    def exact(self) -> bool:
        return self.upper is not None and self.upper.kind == "exact"

    @property
    def width(self) -> float | np.ndarray:
        """upper - lower (inf when a side is missing)."""
        if self.upper is None or self.lower is None:
            return math.inf
        return np.asarray(self.upper.value) - np.asarray(self.lower.value)

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "upper": None if self.upper is None else self.upper.to_dict(),
            "lower": None if self.lower is None else self.lower.to_dict(),
        }
        if self.declined:
            out["declined"] = [{"accountant": n, "reason": r} for n, r in self.declined]
        return out

    def to_json(self) -> str:
        return json.dumps(self.to_dict())

    def __str__(self) -> str:
        if self.exact:
            up = cast(Bound, self.upper)  # exact: the upper bound is the value
            return f"exact {_fmt(up.value)}  [{up.source}]"
        lines = _intervals(self.lower, self.upper)
        if self.upper is not None:
            lines.append(f"  upper: {self.upper.source}")
        if self.lower is not None:
            lines.append(f"  lower: {self.lower.source}")
        for name, why in self.declined:
            lines.append(f"  ({name} does not apply: {why})")
        return "\n".join(lines)


def reshaped(g: Guarantee, shape: tuple) -> Guarantee:
    """``g`` with its bounds' values reshaped to ``shape`` (a query of any shape is answered
    on its flattened values, then given back in the shape asked).

    Args:
        g: a Guarantee whose values hold ``prod(shape)`` numbers (or one number).
        shape: the shape of the query.

    Returns:
        The same Guarantee, values reshaped (unchanged when already of that shape).
    """
    def one(b: Bound | None) -> Bound | None:
        if b is None or np.shape(b.value) == tuple(shape):
            return b
        value = np.asarray(b.value, dtype=float).reshape(shape)
        return Bound(value if value.ndim else float(value), b.kind, b.source)

    return Guarantee(one(g.upper), one(g.lower), g.declined)


@dataclass(frozen=True)
class Estimate:
    """A Monte Carlo *estimate* of a quantity (e.g. delta of a run at some epsilon): **not a
    bound**.  ``value`` is a sample mean; ``low`` and ``high`` a confidence interval holding
    with probability ``confidence`` over the sampler's randomness, for the estimated
    quantity (which may itself be a conjectured worst case, see ``source``).  privamp never
    mixes estimates into :class:`Bound` or :class:`Guarantee`; compare them with a
    Guarantee's certified interval instead.

    Attributes:
        value: the point estimate.
        low: the lower end of the confidence interval.
        high: the upper end of the confidence interval.
        samples: the number of Monte Carlo samples (per direction).
        confidence: the interval's coverage probability, in (0, 1).
        source: what was estimated and how.
        kind: always ``"estimate"``.
    """

    value: float
    low: float
    high: float
    samples: int
    confidence: float
    source: str
    kind: str = "estimate"

    def __post_init__(self) -> None:
        if self.kind != "estimate":
            raise ValueError(f"kind must be 'estimate', got {self.kind!r}")
        if not (self.low <= self.value <= self.high):
            raise ValueError(f"need low <= value <= high, got {self.low}, {self.value}, "
                             f"{self.high}")

    def __float__(self) -> float:
        return float(self.value)

    def __str__(self) -> str:
        return (f"estimate {self.value:.6g} (not a bound; {self.confidence:g} confidence "
                f"interval [{self.low:.6g}, {self.high:.6g}], {self.samples} samples)")

    def to_dict(self) -> dict[str, Any]:
        """The fields as a JSON-ready dict."""
        return {"value": self.value, "low": self.low, "high": self.high,
                "samples": self.samples, "confidence": self.confidence,
                "source": self.source, "kind": self.kind}
