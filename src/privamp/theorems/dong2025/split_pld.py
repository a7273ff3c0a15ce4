"""Model splitting and dropout through the Balanced Iteration PLD: certified two-sided
bounds (issue 27: model splitting and dropout had no lower bound).

One step of model splitting into d submodels, each record updating k of them chosen
uniformly (Dong, Chen, Ozgur 2025, Thm 3.4; dropout at rate 1/2 is d = 2, k = 1, Cor 3.7),
releases d noisy block sums, block i summing the records that chose it.  For one record x
this is one epoch of Balanced Iteration Subsampling with T = d steps and k participations
(Sec. 3.3): block i plays step i, x takes part in k of them, each with sensitivity C (the
setting of :mod:`.rdp`, which treats ``ModelSplit(d, k)`` as ``BalancedIteration(d, k)``),
the other records' blocks add x-independent terms (post-processing).  The blocks are
released at once with queries fixed in advance, a special case of the epoch's adaptive
queries, so the epoch's dominating pair dominates the step; steps draw fresh submodels,
so T steps are T independent epochs (Remark 3.10).

* Upper bound: the Balanced Iteration dominating grid PLDs (:class:`.bis_pld.BISPLDAnalysis`)
  composed over ``steps`` epochs.
* Lower bound (the witness): x's gradient is C on one coordinate of each submodel, every
  other record's gradient is 0, D' = D without x.  Then the step's output is exactly
  P = (1 / C(d, k)) sum_{|S| = k} N(s 1_S, I_d) vs Q = N(0, I_d), s = C / sigma: the realised
  pair of one Balanced Iteration epoch, whose dominated grid PLDs (k = 1: the exact loss;
  k > 1: threshold tests on a statistic) are the analysis's optimistic side.  Checked in
  tests/accounting/test_certified_lowers.py against a Monte Carlo estimate of the realised
  pair (d = 2).
"""

from __future__ import annotations

import numpy as np

from ...mechanisms.gaussian import Gaussian
from ...pld.moments import two_sided_renyi_floor
from ...results import Bound
from ...sampling.relations import AddRemove, ZeroOut
from ...sampling.schemes import ModelSplit
from ..registry import BoundPair, run_accountant
from .bis_pld import BISPLDAnalysis

__all__ = ["SplitPLDAnalysis", "SPLIT_NOTE"]

SPLIT_NOTE = ("; model splitting: one step = one Balanced Iteration epoch with T = parts, "
              "k = selected (Dong, Chen, Ozgur 2025, Thm 3.4)")


def _noted(b: Bound | None) -> Bound | None:
    return None if b is None else Bound(b.value, b.kind, b.source + SPLIT_NOTE)


class SplitPLDAnalysis(BISPLDAnalysis):
    """``ModelSplit(parts, selected)`` for ``steps`` steps as ``steps`` epochs of
    ``BalancedIteration(parts, selected)`` (same PLDs; bounds labelled with the reduction).

    Args:
        sigma: noise multiplier sigma / sensitivity.
        parts: submodels d (>= 2).
        selected: submodels each record updates, k in [1, d).
        steps: steps of the run (the epochs of the Balanced Iteration analysis).
    """

    def __init__(self, sigma: float, parts: int, selected: int, steps: int) -> None:
        super().__init__(sigma, parts, selected, steps)

    def epsilon(self, delta: np.ndarray) -> BoundPair:
        up, lo = super().epsilon(delta)
        return _noted(up), _noted(lo)

    def delta(self, epsilon: np.ndarray) -> BoundPair:
        up, lo = super().delta(epsilon)
        return _noted(up), _noted(lo)

    def renyi_floor(self, alpha: np.ndarray) -> np.ndarray:
        """Certified lower bounds on the run's Rényi DP from the optimistic (realised) side
        of its PLD (:func:`~privamp.pld.moments.two_sided_renyi_floor`), for the screening
        rule of "best" (it skips the RDP accountant where it cannot win)."""
        return two_sided_renyi_floor(self.pld(), alpha)


def _applies(run) -> bool:
    sch = run.scheme
    return (
        type(sch) is ModelSplit
        and sch.parts >= 2
        and sch.selected < sch.parts
        and isinstance(run.mechanism, Gaussian)
        and isinstance(run.relation, (AddRemove, ZeroOut))
        and run.relation.group == 1
    )


@run_accountant("pld", applies=_applies,
                description="model splitting / dropout as Balanced Iteration epochs (Dong, "
                            "Chen, Ozgur 2025, Thm 3.4): certified two-sided PLD",
                capabilities=("pld", "grid_step", "renyi_floor"))
def _build(run) -> SplitPLDAnalysis:
    mech, sch = run.mechanism, run.scheme
    return SplitPLDAnalysis(mech.sigma / mech.sensitivity, sch.parts, sch.selected, run.steps)
