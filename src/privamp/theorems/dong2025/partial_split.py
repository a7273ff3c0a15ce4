"""Partial model splitting as a scheme (Dong, Chen, Ozgur 2025, arXiv:2503.03043,
Sec. 3.2.2; the split part is Thm 3.4, mixtures of partitions Thm 3.5): registers the RDP
method ``"dong-partial-split"`` for :class:`~privamp.PartialModelSplit` with a Gaussian
mechanism, so that ``pa.rdp`` and ``Training`` (accountant ``"rdp"``) use
:func:`~privamp.theorems.dong2025.rdp.partial_split_rdp`.

The mechanism's ``sigma`` is the noise std and the scheme's norms are in units of its
``sensitivity`` (``Gaussian(sigma)`` with norms ``split_norm``, ``shared_norm`` in units of the
clipping norm: sigma is then the paper's "noise standard deviation relative to the clipping
norm").

With a data rate below 1 *and* a shared part, :func:`partial_split_rdp` is sound but costs
about a second per order (its reverse term), too slow for a whole-run query; there
``"dong-partial-split"`` declines and ``"dong-partial-split-dominated"`` answers: every
component N((s_sh, s_sp e_i)) of the split mixture is a Gaussian shift of norm
sqrt(s_sh^2 + s_sp^2), and Psi_a is convex in each argument, so the Poisson-subsampled step is
dominated, in both directions, by the sampled Gaussian with that shift (Mironov, Talwar,
Zhang 2019).  Sound, fast, without the splitting gain; call :func:`partial_split_rdp`
directly for the amplified per-order values.
"""

from __future__ import annotations

import numpy as np

from ...mechanisms.gaussian import Gaussian
from ...sampling.relations import AddRemove, ZeroOut
from ...sampling.schemes import PartialModelSplit
from ..mironov2019 import sampled_gaussian_rdp
from ..registry import rdp_method
from .rdp import partial_split_rdp

__all__ = ["SRC_PARTIAL"]


SRC_PARTIAL = "Dong, Chen, Ozgur 2025, Sec. 3.2.2 (partial model splitting; split part Thm 3.4)"


@rdp_method(
    "dong-partial-split",
    SRC_PARTIAL,
    mechanisms=(Gaussian,),
    schemes=(PartialModelSplit,),
    relations=(AddRemove, ZeroOut),
    when=lambda m, s, r: r.group == 1 and (s.rate == 1.0 or s.shared_norm == 0.0),
)
def _partial_split(mech: Gaussian, scheme: PartialModelSplit, relation, alpha: np.ndarray
                   ) -> np.ndarray:
    c = mech.sensitivity
    return np.asarray(partial_split_rdp(mech.sigma, scheme.split_norm * c, scheme.shared_norm * c,
                                        scheme.parts, alpha, scheme.rate).value, dtype=float)


@rdp_method(
    "dong-partial-split-dominated",
    f"{SRC_PARTIAL}, each submodel component dominated by the Gaussian of the combined norm; "
    "sampled Gaussian (Mironov, Talwar, Zhang 2019)",
    mechanisms=(Gaussian,),
    schemes=(PartialModelSplit,),
    relations=(AddRemove, ZeroOut),
    when=lambda m, s, r: r.group == 1,
)
def _partial_split_dominated(mech: Gaussian, scheme: PartialModelSplit, relation,
                             alpha: np.ndarray) -> np.ndarray:
    norm = float(np.hypot(scheme.split_norm, scheme.shared_norm)) * mech.sensitivity
    return sampled_gaussian_rdp(alpha, norm / mech.sigma, scheme.rate)
