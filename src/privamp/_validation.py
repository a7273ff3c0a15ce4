"""Validation at the edge: every public constructor and function checks its inputs here and
raises ``ValueError`` naming the parameter and its valid range.  Inside the library, code is
plain and fast and trusts its inputs."""

from __future__ import annotations

import math
from numbers import Integral, Real

import numpy as np

__all__ = [
    "check_real",
    "check_positive",
    "check_rate",
    "check_probability_open",
    "check_delta",
    "check_epsilon",
    "check_orders",
    "check_int",
    "check_theta",
    "check_shift",
    "MAX_STEPS",
]

#: the largest step count accepted: the largest int64 (steps are counted in int64 arrays)
MAX_STEPS = int(np.iinfo(np.int64).max)



def _scalar(name: str, value: object) -> float:
    """A real number: Python int/float, a numpy integer/floating scalar or a 0-d array of
    one; bools, strings, None and complex numbers are refused."""
    if isinstance(value, np.ndarray) and value.ndim == 0 and value.dtype.kind in "iuf":
        value = value[()]
    if isinstance(value, (bool, np.bool_)) or not isinstance(
            value, (Real, np.floating, np.integer)):
        raise ValueError(f"{name} must be a real number, got {value!r}")
    try:
        x = float(value)
    except OverflowError:  # an int beyond the float range
        raise ValueError(f"{name} must be a real number within the float range, got "
                         f"{value!r}") from None
    if math.isnan(x):
        raise ValueError(f"{name} must be a number, got NaN")
    return x


def check_real(name: str, value: object, *, finite: bool = True) -> float:
    x = _scalar(name, value)
    if finite and math.isinf(x):
        raise ValueError(f"{name} must be finite, got {x}")
    return x


def check_positive(name: str, value: object, *, allow_inf: bool = False) -> float:
    """A real number > 0 (finite unless allow_inf)."""
    x = _scalar(name, value)
    if not x > 0 or (math.isinf(x) and not allow_inf):
        rng = "(0, inf]" if allow_inf else "(0, inf)"
        raise ValueError(f"{name} must be in {rng}, got {x}")
    return x


def check_rate(name: str, value: object) -> float:
    """A probability in [0, 1]."""
    x = _scalar(name, value)
    if not 0.0 <= x <= 1.0:
        raise ValueError(f"{name} must be in [0, 1], got {x}")
    return x


def check_probability_open(name: str, value: object) -> float:
    x = _scalar(name, value)
    if not 0.0 < x < 1.0:
        raise ValueError(f"{name} must be in (0, 1), got {x}")
    return x


def check_theta(value: object) -> float:
    x = _scalar("theta", value)
    if not 0.5 < x <= 1.0:
        raise ValueError(f"theta must be in (1/2, 1], got {x}")
    return x


def check_int(name: str, value: object, *, minimum: int = 1, maximum: int | None = None) -> int:
    if isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    if isinstance(value, (Integral, np.integer)):
        n = int(value)
    elif isinstance(value, (float, np.floating)) and float(value).is_integer():
        n = int(value)
    else:
        raise ValueError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if n < minimum or (maximum is not None and n > maximum):
        hi = "inf" if maximum is None else str(maximum)
        raise ValueError(f"{name} must be an integer in [{minimum}, {hi}], got {n}")
    return n


def check_shift(sensitivity: float, scale: float, scale_name: str) -> float:
    """``sensitivity / scale``, the shift of a location mechanism's dominating pair, refused
    when it leaves the range the analyses can represent: below 2.2e-308 it underflows (the
    mechanism is then 0-DP to within 1e-300, but no pair can be formed to certify it); above
    1e150 its square overflows (the release is then non-private in every practical sense).

    Raises:
        ValueError: the ratio outside [2.2e-308, 1e150], naming both parameters.
    """
    ratio = sensitivity / scale
    tiny = float(np.finfo(float).tiny)
    if not tiny <= ratio <= 1e150:
        raise ValueError(
            f"sensitivity / {scale_name} must be in [{tiny:.3g}, 1e150] (the shift of the "
            f"mechanism in noise units), got sensitivity={sensitivity:g}, "
            f"{scale_name}={scale:g} (ratio {ratio:g})")
    return ratio


def _array(name: str, value: object) -> np.ndarray:
    """A real number or an array (any shape, any nesting of sequences) of real numbers, as a
    float array of the same shape; None, strings, bools and complex numbers are refused
    (also inside a sequence), as are NaN and empty arrays."""
    if value is None or isinstance(value, (str, bytes, bool, np.bool_)):
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}")
    try:
        raw = np.asarray(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}") from None
    if raw.dtype.kind not in "iuf":
        raise ValueError(f"{name} must be a number or an array of numbers, got {value!r}")
    arr = raw.astype(float)
    if arr.size == 0:
        raise ValueError(f"{name} must hold at least one value, got an empty array")
    if np.isnan(arr).any():
        raise ValueError(f"{name} must not contain NaN")
    return arr


def _bad(arr: np.ndarray, mask: np.ndarray) -> str:
    """The offending entries of ``arr`` for a message: a plain number for a scalar, else the
    first few values and their count."""
    bad = arr[mask]
    if arr.ndim == 0:
        return f"{float(arr):g}"
    shown = ", ".join(f"{float(v):g}" for v in bad[:3])
    more = f" and {bad.size - 3} more" if bad.size > 3 else ""
    return f"{shown}{more} (of {arr.size} values)"


def check_delta(value: object, name: str = "delta") -> np.ndarray:
    """delta in (0, 1), scalar or array."""
    arr = _array(name, value)
    mask = ((arr <= 0) | (arr >= 1))
    if mask.any():
        raise ValueError(f"{name} must be in (0, 1), got {_bad(arr, mask)}")
    return arr


def check_epsilon(value: object, name: str = "epsilon") -> np.ndarray:
    """epsilon in [0, inf), finite, scalar or array."""
    arr = _array(name, value)
    mask = ((arr < 0) | ~np.isfinite(arr))
    if mask.any():
        raise ValueError(f"{name} must be in [0, inf) and finite, got {_bad(arr, mask)}")
    return arr


def check_orders(value: object, name: str = "alpha") -> np.ndarray:
    """Rényi orders: real numbers > 1, finite."""
    arr = _array(name, value)
    mask = ((arr <= 1) | ~np.isfinite(arr))
    if mask.any():
        raise ValueError(f"{name} (Rényi order) must be in (1, inf), got {_bad(arr, mask)}")
    return arr
