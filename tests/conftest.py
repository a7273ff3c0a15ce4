"""Shared test set-up: mpmath precision, and the slow tests (``make test-fast`` skips them)."""

from __future__ import annotations

import mpmath
import pytest

#: tests marked ``slow`` (every parametrisation of each): the 40 slowest calls of one
#: ``pytest -n 2 --durations=40`` run of the whole suite on a shared 2-core machine
#: (2026-11-28, 830 tests, 736 s; these took 7 to 63 s each there, the rest less).
#: A test may also carry ``@pytest.mark.slow`` itself.
SLOW_TESTS = (
    "tests/soundness/test_balanced_iteration.py::"
    "test_pld_both_directions_bracket_reference_at_edge_of_lattice",
    "tests/soundness/test_exact_references.py::test_sampled_gaussian_rdp_never_below_mpmath",
    "tests/soundness/test_exact_references.py::test_tiny_fixed_batches_upper",
    "tests/soundness/test_peer_references.py::test_dp_accounting_log_a_cases",
    "tests/accounting/test_epsilon_curve.py::"
    "test_checkpoint_the_shared_composition_declines_is_asked_alone",
    "tests/accounting/test_epsilon_curve.py::"
    "test_pessimistic_only_direction_settled_from_later_checkpoints",
    "tests/integrations/test_interop.py::test_a_mixed_event_matches_dp_accounting_pld",
    "tests/integrations/test_opacus.py::"
    "test_opacus_poisson_loop_epsilon_equals_privamp_and_brackets_peers",
    "tests/theorems/dong2025/test_partitioning.py::"
    "test_reverse_k1_d2_tiny_sigma_between_closed_forms",
    "tests/theorems/dong2025/test_partitioning_pld.py::test_t1000_one_epoch_monte_carlo_and_order",
    "tests/theorems/dong2025/test_partitioning_pld.py::test_t2_bounds_bracket_quadrature",
    "tests/pld/test_pld.py::test_power_vs_squaring_randomized_response_binomial",
    "tests/pld/test_pld_review.py::test_pld_analysis_composed_monte_carlo_and_dp_accounting",
    "tests/theorems/dong2025/test_random_allocation.py::"
    "test_one_of_thousand_against_monte_carlo_and_width",
    "tests/theorems/dong2025/test_random_allocation.py::"
    "test_one_of_three_two_sided_tight_against_quadrature",
    "tests/theorems/dong2025/test_random_allocation.py::"
    "test_one_of_two_small_noise_two_sided_against_quadrature",
    "tests/theorems/schuchardt2024/test_hybrid_zero_out_relations.py::"
    "test_hybrid_bounds_enumerated_worst_case",
    "tests/theorems/schuchardt2024/test_hybrid_zero_out_relations.py::"
    "test_zero_out_without_replacement_bounds_enumerated_datasets",
    "tests/theorems/schuchardt2024/test_rdp_amplification.py::"
    "test_large_orders_and_tiny_rates_finite_monotone",
    "tests/theorems/schuchardt2024/test_rdp_amplification.py::"
    "test_thm42_gaussian_matches_mpmath_worst_case_dataset",
    "tests/theorems/schuchardt2024/test_ot_framework.py::"
    "test_quota_example_bounds_enumerated_divergence",
    "tests/theorems/chua2024/test_shuffle_epochs.py::"
    "test_multi_epoch_lower_bound_below_monte_carlo_of_the_exact_pair",
    "tests/pld/test_tiny_rates.py::test_chua_figure1_sigma03_against_dp_accounting",
    "tests/pld/test_tiny_rates.py::test_few_expected_hits_small_sigma_against_dp_accounting",
    "tests/theorems/balle2018/test_with_replacement.py::test_two_steps_bracket_nested_quadrature",
    "tests/theorems/balle2018/test_wr_substitution.py::"
    "test_headline_interval_brackets_the_realised_run",
    "tests/theorems/balle2018/test_wr_substitution.py::test_one_draw_from_a_large_dataset_answers",
)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config, items):
    """Mark the tests of :data:`SLOW_TESTS` slow; a listed test that its (collected) module no
    longer defines is an error, so the list cannot go stale silently."""
    slow = set(SLOW_TESTS)
    modules = {}
    for item in items:
        key = item.nodeid.split("[")[0]
        if key in slow:
            item.add_marker(pytest.mark.slow)
        module = getattr(item, "module", None)
        if module is not None:
            modules[key.split("::")[0]] = module
    stale = [key for key in SLOW_TESTS if key.split("::")[0] in modules
             and not hasattr(modules[key.split("::")[0]], key.split("::")[1])]
    if stale:
        raise pytest.UsageError("tests/conftest.py SLOW_TESTS names tests that no longer "
                                f"exist: {', '.join(stale)}")


@pytest.fixture(autouse=True)
def _mpmath_precision():
    """Every test starts at 50 significant digits of mpmath, whatever an earlier test set:
    module-level ``mp.dps = ...`` lines run at collection (the last one wins for every module)
    and a test that lowers the precision for speed must not weaken the next one's reference."""
    saved = mpmath.mp.dps
    mpmath.mp.dps = 50
    yield
    mpmath.mp.dps = saved
