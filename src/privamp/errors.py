"""The exceptions privamp raises on purpose.

:class:`NotApplicable` says "this accountant / result does not apply to this question"
(a scheme it does not cover, a partial epoch, losses it cannot discretise).  It is the only
exception the dispatchers (``Training`` with ``accountant="best"``, calibration, comparison,
plots) catch when combining accountants: any other error is a bug and surfaces.
"""

from __future__ import annotations

__all__ = ["NotApplicable"]


class NotApplicable(ValueError):
    """An accountant or a result does not apply to the question asked (a ``ValueError``).

    The message says why, naming the parameter and the range the method covers.
    """
