"""pa.compose picks, per phase, the candidate PLD with the smallest phase-alone upper: two
15-step phases under hybrid substitution compose through the antipodal pair
(theorems/poisson_substitution.py), as tight as dp-accounting's REPLACE_ONE for 30 steps
(an independent peer; before: Balle et al.'s hybrid pair, [2.24, 12.08])."""

import logging

import privamp as pa


def test_hybrid_substitution_phases_compose_through_the_antipodal_pair():
    from dp_accounting.pld import privacy_loss_distribution as pld

    logging.disable(logging.WARNING)
    try:
        ref = [pld.from_gaussian_mechanism(1.0, sensitivity=1.0, sampling_prob=0.05,
                                           pessimistic_estimate=pess,
                                           value_discretization_interval=1e-4,
                                           neighboring_relation=pld.NeighborRel.REPLACE_ONE
                                           ).self_compose(30).get_epsilon_for_delta(1e-5)
               for pess in (False, True)]
    finally:
        logging.disable(logging.NOTSET)
    phase = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.05), steps=15,
                        relation=pa.HybridSubstitution())
    e = pa.compose(phase, phase).epsilon(1e-5)
    assert e.lower is not None and e.upper is not None
    assert ref[0] - 1e-3 <= e.lower.value <= e.upper.value <= ref[1] + 1e-3
    assert e.upper.value < 3.0  # Balle et al.'s hybrid pair gave 12.08
