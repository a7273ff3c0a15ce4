"""Stable numerical building blocks (no privacy words here): log-space arithmetic, normal
tails, root finding."""

from .logspace import log1mexp, log_diff_ndtr, log_ndtr, logsubexp, logsumexp
from .roots import bisect_monotone

__all__ = ["log1mexp", "log_diff_ndtr", "log_ndtr", "logsubexp", "logsumexp", "bisect_monotone"]
