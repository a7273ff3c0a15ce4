"""``privamp.interop``: dp-accounting events as privamp runs
(:mod:`privamp.integrations.dp_accounting`) under a short name.  dp-accounting itself is not
needed to import it."""

from .integrations.dp_accounting import as_relation, from_dp_event, runs_from_dp_event

__all__ = ["as_relation", "from_dp_event", "runs_from_dp_event"]
