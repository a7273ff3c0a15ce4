"""Opacus's own ``PrivacyEngine.make_private_with_epsilon`` with
``PrivacyEngine(accountant="privamp")``: the noise is calibrated with privamp's certified upper
bound for the loader actually used, so the epsilon reached after the planned epochs is at most
the target.  Independent references: dp-accounting's PLD for the Poisson run (the calibrated
noise meets the target there too, and lies within the bisection's tolerance of it), and
Opacus's own RDP calibration (the shuffled loader needs more noise than Poisson)."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import PrivacyEngine  # noqa: E402
from opacus.accountants.utils import get_noise_multiplier  # noqa: E402

import privamp as pa  # noqa: E402
import privamp.opacus  # noqa: E402, F401  (registers the "privamp" accountant)
from privamp.integrations.opacus import PrivampAccountant  # noqa: E402

DELTA = 1e-5
pytestmark = pytest.mark.filterwarnings("ignore:Secure RNG turned off")
TARGET = 4.0
N, BATCH, EPOCHS = 64, 16, 2


def _data(n: int = N):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 5, generator=g)
    y = (x[:, 0] > 0).long()
    return torch.utils.data.TensorDataset(x, y)


def _calibrate_and_train(engine, poisson_sampling):
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    loader = torch.utils.data.DataLoader(_data(), batch_size=BATCH, shuffle=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader = engine.make_private_with_epsilon(
            module=model, optimizer=opt, data_loader=loader, target_epsilon=TARGET,
            target_delta=DELTA, epochs=EPOCHS, max_grad_norm=1.0,
            poisson_sampling=poisson_sampling)
        for _ in range(EPOCHS):
            for xb, yb in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
    return opt.noise_multiplier


def test_poisson_calibration_meets_the_target_and_agrees_with_dp_accounting():
    dpa = pytest.importorskip("dp_accounting")
    engine = PrivacyEngine(accountant="privamp")
    sigma = _calibrate_and_train(engine, poisson_sampling=True)
    acc = engine.accountant
    assert isinstance(acc, PrivampAccountant) and acc.scheme == pa.Poisson(BATCH / N)
    assert len(acc) == EPOCHS * N // BATCH
    reached = engine.get_epsilon(DELTA)
    assert TARGET - 0.05 <= reached <= TARGET  # Opacus bisects to within 0.01 below
    # dp-accounting's PLD for the same Poisson run at the calibrated noise
    pld = dpa.pld.PLDAccountant()
    pld.compose(dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(BATCH / N, dpa.GaussianDpEvent(sigma)), EPOCHS * N // BATCH))
    assert abs(pld.get_epsilon(DELTA) - reached) <= 2e-3


def test_shuffled_loader_is_calibrated_as_shuffled():
    engine = PrivacyEngine(accountant="privamp")
    sigma = _calibrate_and_train(engine, poisson_sampling=False)
    acc = engine.accountant
    assert acc.scheme == pa.Shuffle(BATCH, N)
    assert engine.get_epsilon(DELTA) <= TARGET
    # Opacus's RDP calibration assumes Poisson at rate 1 / len(loader): less noise than the
    # shuffled batches need
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        poisson = get_noise_multiplier(target_epsilon=TARGET, target_delta=DELTA,
                                       sample_rate=BATCH / N, epochs=EPOCHS, accountant="rdp")
    assert sigma > poisson


def test_engine_accountant_settings_are_used():
    # a privamp accountant installed on the engine: its relation is the one calibrated for
    engine = PrivacyEngine(accountant="privamp")
    engine.accountant = PrivampAccountant(relation=pa.Substitution())
    _calibrate_and_train(engine, poisson_sampling=True)
    acc = engine.accountant
    assert acc.relation == pa.Substitution() and acc.sensitivity == 2.0
    assert engine.get_epsilon(DELTA) <= TARGET


def test_a_bare_accountant_still_refuses_without_a_loader():
    bare = PrivampAccountant()
    bare.history = [(1.0, 0.1, 10)]
    with pytest.raises(ValueError, match="no data loader"):
        bare.get_epsilon(DELTA)


def test_replace_one_poisson_is_accounted_as_dp_accounting_does():
    dpa = pytest.importorskip("dp_accounting")
    from privamp.opacus import from_opacus_history

    rel = dpa.NeighboringRelation.REPLACE_ONE
    pld = dpa.pld.PLDAccountant(neighboring_relation=rel)
    pld.compose(dpa.SelfComposedDpEvent(
        dpa.PoissonSampledDpEvent(0.05, dpa.GaussianDpEvent(1.0)), 30))
    reference = pld.get_epsilon(DELTA)  # 2.78; plain substitution at 2 gave 12.08
    acc = PrivampAccountant(pa.Poisson(0.05), relation=rel)
    acc.history = [(1.0, 0.05, 30)]
    run = acc.training()
    assert run.relation == pa.HybridSubstitution() and run.mechanism == pa.Gaussian(1.0, 1.0)
    g = acc.get_guarantee(DELTA)
    assert g.lower.value - 1e-3 <= reference <= g.upper.value + 1e-3
    hist = from_opacus_history([(1.0, 0.05, 30)], relation=rel)
    assert hist == run
    # fixed-size batches, or an explicit sensitivity: plain substitution as before
    wor = PrivampAccountant(pa.WithoutReplacement(8, 64), relation=rel)
    wor.history = [(1.0, 0.125, 3)]
    assert wor.training().relation == pa.Substitution()
    explicit = PrivampAccountant(pa.Poisson(0.05), relation=rel, sensitivity=2.0)
    explicit.history = [(1.0, 0.05, 30)]
    assert explicit.training().mechanism == pa.Gaussian(1.0, 2.0)
