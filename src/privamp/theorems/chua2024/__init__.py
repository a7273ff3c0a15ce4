"""Adaptive batch linear queries (ABLQ) under deterministic and shuffled batches
(Chua, Ghazi, Kamath, Kumar, Manurangsi, Sinha, Zhang 2024, "How private are DP-SGD
implementations?", arXiv:2403.17673), for every data set size n and batch size b.

Units: ``s = sensitivity / sigma`` is the mean shift of one Gaussian release in noise units;
``steps_per_epoch = T`` batches per epoch; ``epochs = E`` passes over the data.

* :mod:`.deterministic`: deterministic batches, exact (Prop 3.1), and the Gaussian kernels.
* :mod:`.witness`: the lower-bound witness pair (eqs. (1)-(2), generalised to short batches,
  records sitting out, persistent permutations and partial epochs) and its eq. (7) sets.
* :mod:`.statistics`: finer statistics of the witness (histogram, per-epoch max composed by
  PLD, (max, count)).
* :mod:`.shuffle`: the public functions on (sigma, T, E) and calibration.
* :mod:`.mixture`: the count-mixture upper bound (condition on the number of releases).
* :mod:`.full_batch`: Poisson sampling at rate 1 (every record in every batch: the
  deterministic full batch), run accountant "full-batch", in closed form.
* :mod:`.accountants`: the run accountants "ablq-deterministic" and "ablq-shuffle" (any
  n, b, drop_last, persistent, partial epochs), with the PLD capability.
"""

from . import accountants, deterministic, full_batch, mixture, shuffle, statistics, witness
from .deterministic import (
    SRC_DET,
    deterministic_delta,
    deterministic_epsilon,
    deterministic_shift,
)
from .shuffle import (
    ABLQ,
    SRC_EPOCHS,
    SRC_EQ7,
    SRC_HIST,
    SRC_MAXPLD,
    SRC_THM41,
    calibrate_interval,
    shuffle_delta,
    shuffle_delta_eq7,
    shuffle_delta_lower,
    shuffle_epsilon,
    shuffle_epsilon_lower,
)

__all__ = [
    "SRC_DET",
    "SRC_EQ7",
    "SRC_EPOCHS",
    "SRC_HIST",
    "SRC_MAXPLD",
    "SRC_THM41",
    "ABLQ",
    "deterministic_delta",
    "deterministic_epsilon",
    "deterministic_shift",
    "shuffle_delta_eq7",
    "shuffle_delta_lower",
    "shuffle_epsilon_lower",
    "shuffle_delta",
    "shuffle_epsilon",
    "calibrate_interval",
    "accountants",
    "deterministic",
    "full_batch",
    "mixture",
    "shuffle",
    "statistics",
    "witness",
]
