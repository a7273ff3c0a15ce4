"""A real Opacus DP-SGD loop on CPU with privamp's samplers and accountant: the epsilon Opacus
reports is privamp's bound for the sampler actually used, for the steps actually taken; for
Poisson it sits between Opacus's own PRV estimate (within its error) and its RDP bound."""

from __future__ import annotations

import math
import re
import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import PrivacyEngine  # noqa: E402
from opacus.accountants import PRVAccountant, RDPAccountant  # noqa: E402

import privamp as pa  # noqa: E402
from privamp.integrations.opacus import PrivampAccountant, make_private  # noqa: E402
from privamp.integrations.torch import (  # noqa: E402
    DeterministicBatchSampler,
    PoissonBatchSampler,
    ShuffleBatchSampler,
)

DELTA = 1e-5


def _data(n: int = 64):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 5, generator=g)
    y = (x[:, 0] + 0.5 * x[:, 1] > 0).long()
    return torch.utils.data.TensorDataset(x, y)


def _train(sampler, noise_multiplier, engine=None, max_batches=None, epochs=1, **kw):
    torch.manual_seed(0)
    ds = _data(sampler.dataset_size)
    model = torch.nn.Sequential(torch.nn.Linear(5, 8), torch.nn.ReLU(), torch.nn.Linear(8, 2))
    before = [p.detach().clone() for p in model.parameters()]
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader, acc = make_private(
            engine, model, opt, ds, sampler, noise_multiplier, 1.0, **kw
        )
        batches = 0
        for _ in range(epochs):  # one pass over the loader is one epoch
            for xb, yb in loader:
                opt.zero_grad()
                loss = torch.nn.functional.cross_entropy(model(xb), yb)
                loss.backward()
                opt.step()
                batches += 1
                if max_batches is not None and batches == max_batches:
                    break
    changed = any(
        not torch.equal(a, b.detach()) for a, b in zip(before, model.parameters(), strict=True)
    )
    return acc, batches, changed, loss


def test_opacus_poisson_loop_epsilon_equals_privamp_and_brackets_peers():
    n, q, steps, sigma = 64, 0.125, 16, 1.1
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus: "Secure RNG turned off"
        engine = PrivacyEngine()
    sampler = PoissonBatchSampler(n, q, steps, seed=0)
    acc, batches, changed, loss = _train(sampler, sigma, engine)
    assert batches == steps and changed and torch.isfinite(loss)
    assert len(acc) == steps  # one accountant step per optimizer step
    assert {nm for nm, _, _ in acc.history} == {sigma}
    assert engine.accountant is acc and acc.mechanism() == "privamp"

    eps = engine.get_epsilon(DELTA)
    direct = pa.Training(pa.Gaussian(sigma), pa.Poisson(q), steps=steps).epsilon(DELTA)
    assert eps == acc.get_epsilon(DELTA) == float(direct.upper.value)
    g = acc.get_guarantee(DELTA)
    assert g.upper.value == direct.upper.value
    assert g.lower is not None and g.lower.value <= eps

    # peers, fed the same (noise multiplier, rate, steps): Opacus's RDP accountant is an upper
    # bound too (looser: RDP -> (eps, delta) conversion); PRV's estimate is within its error.
    rdp = RDPAccountant()
    prv = PRVAccountant()
    for _ in range(steps):
        rdp.step(noise_multiplier=sigma, sample_rate=q)
        prv.step(noise_multiplier=sigma, sample_rate=q)
    assert eps <= rdp.get_epsilon(DELTA) + 1e-9
    assert abs(prv.get_epsilon(DELTA, eps_error=0.01) - eps) <= 0.05


def test_opacus_poisson_loop_survives_empty_batches():
    sampler = PoissonBatchSampler(20, 0.02, 12, seed=1)
    sizes = [len(b) for b in PoissonBatchSampler(20, 0.02, 12, seed=1)]
    assert 0 in sizes  # the seed produces empty batches
    acc, batches, _, _ = _train(sampler, 1.0)
    assert batches == 12 and len(acc) == 12


def test_opacus_shuffle_loop_accounts_for_shuffle_not_poisson():
    n, b, epochs, sigma = 48, 8, 2, 1.0
    sampler = ShuffleBatchSampler(b, n, epochs, seed=0)
    acc, batches, changed, _ = _train(sampler, sigma, relation=pa.ZeroOut(), epochs=epochs)
    assert batches == epochs * n // b == len(acc) and changed
    run = acc.training()
    assert run.scheme == pa.Shuffle(b, n) and run.steps == epochs * n // b
    assert run.mechanism == pa.Gaussian(sigma, 1.0) and run.relation == pa.ZeroOut()
    direct = pa.Training(pa.Gaussian(sigma), pa.Shuffle(b, n), steps=12, relation=pa.ZeroOut())
    try:
        expected = direct.epsilon(DELTA)
    except ValueError as err:  # no shuffle accountant in this build: the same clear error
        with pytest.raises(ValueError, match=re.escape(str(err)[:30])):
            acc.get_guarantee(DELTA)
        return
    assert acc.get_guarantee(DELTA) == expected
    if expected.upper is None:
        with pytest.raises(ValueError, match="no upper bound"):
            acc.get_epsilon(DELTA)
    else:
        assert acc.get_epsilon(DELTA) == float(expected.upper.value)


def test_partial_epoch_is_accounted_as_the_whole_epoch():
    sampler = DeterministicBatchSampler(4, 16, epochs=3)  # 4 steps per epoch
    acc, batches, _, _ = _train(sampler, 2.0, max_batches=6, epochs=2)
    assert batches == 6 == len(acc)
    assert acc.training().steps == 8  # 1.5 epochs -> 2 epochs (post-processing: sound)
    try:
        g = acc.get_guarantee(DELTA)
    except ValueError:
        return  # no deterministic accountant in this build
    assert g.lower is None  # a lower bound for 8 steps says nothing about 6
    assert "partial epoch" in g.upper.source


def test_accountant_state_dict_round_trip_and_errors(tmp_path):
    acc = PrivampAccountant(pa.Poisson(0.1))
    for _ in range(5):
        acc.step(noise_multiplier=1.3, sample_rate=0.1)
    state = acc.state_dict()
    path = tmp_path / "acc.pt"
    torch.save(state, path)
    other = PrivampAccountant(pa.Poisson(0.1))
    other.load_state_dict(torch.load(path, weights_only=True))
    assert len(other) == 5 and other.history == [(1.3, 0.1, 5)]
    with pytest.raises(ValueError, match="does not say which scheme"):
        other.load_state_dict(RDPAccountant().state_dict())

    fresh = PrivampAccountant(pa.Poisson(0.1))
    assert fresh.get_epsilon(DELTA) == 0.0 and len(fresh) == 0
    with pytest.raises(ValueError, match="privamp batch sampler"):
        PrivampAccountant(object())
    with pytest.raises(ValueError, match="delta"):
        fresh.get_epsilon(2.0)


@pytest.mark.parametrize(
    "other, field",
    [
        (PrivampAccountant(pa.Shuffle(10, 100)), "scheme"),
        (PrivampAccountant(pa.Poisson(0.2)), "scheme"),
        (PrivampAccountant(pa.Poisson(0.1), relation=pa.Substitution()), "relation"),
        (PrivampAccountant(pa.Poisson(0.1), sensitivity=0.5), "sensitivity"),
    ],
)
def test_a_checkpoint_does_not_load_into_another_accountant(other, field):
    acc = PrivampAccountant(pa.Poisson(0.1))
    acc.step(noise_multiplier=1.0, sample_rate=0.1)
    with pytest.raises(ValueError, match=f"state_dict {field} is"):
        other.load_state_dict(acc.state_dict())
    assert len(other) == 0


def _opacus_engine_run(loader, accountant, epochs=1):
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine()
        engine.accountant = accountant
        model, opt, loader = engine.make_private(
            module=model, optimizer=opt, data_loader=loader, noise_multiplier=1.0,
            max_grad_norm=1.0, poisson_sampling=False,
        )
        for _ in range(epochs):
            for xb, yb in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
    return engine


def test_a_shuffling_loader_cannot_pass_for_poisson():
    # the trap: a Poisson accountant, a shuffle=True loader of the same mean batch
    n, b = 600, 60
    loader = torch.utils.data.DataLoader(_data(n), batch_size=b, shuffle=True)
    acc = PrivampAccountant(PoissonBatchSampler(n, b / n, steps_per_epoch=10))
    with pytest.raises(ValueError, match="batches of exactly 60 examples in a row|bound to"):
        _opacus_engine_run(loader, acc)
    # Binomial(600, 0.1): P(two equal sizes) < 0.06, so 9 in a row is < 1e-9: refused by then
    assert len(acc) < 9  # (refused at make_private now: the loader's law is known)
    with pytest.raises(ValueError, match="samples Shuffle"):
        acc.check_data_loader(loader)


def test_a_fixed_batch_accountant_refuses_other_batch_sizes():
    loader = torch.utils.data.DataLoader(_data(48), batch_size=6, shuffle=True)
    acc = PrivampAccountant(ShuffleBatchSampler(8, 48, epochs=1))
    with pytest.raises(ValueError, match="a batch of 6 examples, but Shuffle|bound to"):
        _opacus_engine_run(loader, acc)
    assert len(acc) == 0


def test_a_poisson_loader_passes_the_poisson_check():
    dl = pytest.importorskip("opacus.data_loader")
    n, q = 400, 0.05
    base = torch.utils.data.DataLoader(_data(n), batch_size=20)
    loader = dl.DPDataLoader.from_data_loader(base, generator=torch.Generator().manual_seed(1))
    acc = PrivampAccountant.for_data_loader(loader)
    assert acc.scheme == pa.Poisson(q) and acc.dataset_size == n
    acc.check_data_loader(loader)
    _opacus_engine_run(loader, acc)
    assert len(acc) == 20


def test_noise_changed_inside_an_epoch_is_accounted_at_the_smallest_noise():
    acc = PrivampAccountant(pa.Deterministic(10, 40))  # 4 steps an epoch
    for nm in (2.0, 2.0, 1.5, 1.5, 1.5, 1.5):
        acc.step(noise_multiplier=nm, sample_rate=0.25)
    assert acc.phases() == [(2.0, 2), (1.5, 4)]
    g = acc.get_guarantee(DELTA)
    # 2 epochs at noise 1.5: the deterministic run is one Gaussian of sigma 1.5 / sqrt(2)
    want = pa.Gaussian(1.5 / 2**0.5).epsilon(DELTA)
    assert g.lower is None and "smallest noise multiplier 1.5" in g.upper.source
    assert g.upper.value == pytest.approx(float(want), rel=1e-6)


def test_mixed_noise_matches_opacus_on_the_same_history():
    history = [(1.5, 0.01, 300), (0.9, 0.01, 200)]
    acc = PrivampAccountant(pa.Poisson(0.01))
    rdp, prv = RDPAccountant(), PRVAccountant()
    for nm, q, steps in history:
        for _ in range(steps):
            acc.step(noise_multiplier=nm, sample_rate=q)
        rdp.history.append((nm, q, steps))
        prv.history.append((nm, q, steps))
    g = acc.get_guarantee(DELTA)
    eps_rdp = rdp.get_epsilon(DELTA)
    eps_prv = prv.get_epsilon(DELTA, eps_error=0.01)
    assert g.lower.value <= eps_prv + 0.02 and eps_prv - 0.02 <= g.upper.value <= eps_rdp
    want = pa.compose(
        pa.Training(pa.Gaussian(1.5), pa.Poisson(0.01), steps=300),
        pa.Training(pa.Gaussian(0.9), pa.Poisson(0.01), steps=200),
    ).epsilon(DELTA)
    assert g == want


def test_per_epoch_epsilon_grows_and_ends_at_the_run():
    acc = PrivampAccountant(pa.Shuffle(10, 40))
    for _ in range(12):
        acc.step(noise_multiplier=1.2, sample_rate=0.25)
    curve = acc.epsilon_per_epoch(DELTA)
    ups = curve.upper.value
    assert ups.shape == (3,) and (ups[1:] >= ups[:-1]).all()
    assert ups[-1] == pytest.approx(float(acc.get_guarantee(DELTA)), rel=1e-6)
    # shuffle's upper bound is the deterministic one: E epochs = one Gaussian of sigma/sqrt(E)
    assert ups[0] == pytest.approx(float(pa.Gaussian(1.2).epsilon(DELTA)), rel=1e-3)


def test_accountant_for_data_loader():
    ds = _data(32)
    sampler = DeterministicBatchSampler(8, 32, epochs=1)
    loader = torch.utils.data.DataLoader(ds, batch_sampler=sampler)
    acc = PrivampAccountant.for_data_loader(loader, relation=pa.ZeroOut())
    assert acc.scheme == pa.Deterministic(8, 32) and acc.relation == pa.ZeroOut()
    plain = PrivampAccountant.for_data_loader(torch.utils.data.DataLoader(ds, batch_size=8))
    assert plain.scheme == pa.Deterministic(8, 32)
    short = PrivampAccountant.for_data_loader(torch.utils.data.DataLoader(ds, batch_size=5))
    assert short.scheme == pa.Deterministic(5, 32)  # a short last batch of 2: still accounted
    other = torch.utils.data.DataLoader(_data(40), batch_sampler=sampler)
    with pytest.raises(ValueError, match="dataset_size"):
        PrivampAccountant.for_data_loader(other)


def test_substitution_doubles_the_sensitivity():
    acc = PrivampAccountant(pa.WithoutReplacement(8, 64), relation=pa.Substitution())
    acc.step(noise_multiplier=1.0, sample_rate=0.125)
    assert acc.training().mechanism == pa.Gaussian(1.0, 2.0)
    dpa = pytest.importorskip("dp_accounting")
    same = PrivampAccountant(pa.WithoutReplacement(8, 64),
                             relation=dpa.NeighboringRelation.REPLACE_ONE)
    assert same.relation == pa.Substitution() and same.sensitivity == 2.0


def test_make_private_rejects_mismatched_inputs():
    ds = _data(32)
    model = torch.nn.Linear(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with pytest.raises(ValueError, match="dataset_size"):
        make_private(None, model, opt, ds, PoissonBatchSampler(31, 0.1, 3), 1.0, 1.0)
    with pytest.raises(ValueError, match="privamp batch sampler"):
        make_private(None, model, opt, ds, [[0, 1]], 1.0, 1.0)
    with pytest.raises(ValueError, match="poisson_sampling"):
        make_private(
            None, model, opt, ds, PoissonBatchSampler(32, 0.1, 3), 1.0, 1.0,
            poisson_sampling=True,
        )


def test_digits_example_smoke(monkeypatch):
    import importlib.util
    import sys
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "dpsgd_mnist_like.py"
    spec = importlib.util.spec_from_file_location("dpsgd_mnist_like", path)
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "dpsgd_mnist_like", module)  # dataclasses look it up
    spec.loader.exec_module(module)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rows = module.main(["--epochs", "1", "--max-steps", "1", "--only", "shuffle"])
    assert len(rows) == 1 and rows[0]["steps"] == 1
    assert rows[0]["scheme"] == pa.Shuffle(60, 1440)
    assert 0.0 <= rows[0]["accuracy"] <= 1.0


def test_gradient_accumulation_is_refused():
    torch.manual_seed(0)
    ds = _data(32)
    model = torch.nn.Linear(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    sampler = DeterministicBatchSampler(8, 32, epochs=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader, acc = make_private(None, model, opt, ds, sampler, 1.0, 1.0)
        it = iter(loader)
        opt.zero_grad()
        for _ in range(2):  # two batches before one step: a different mechanism
            xb, yb = next(it)
            torch.nn.functional.cross_entropy(model(xb), yb).backward()
        with pytest.raises(ValueError, match="accumulation_steps=2"):
            opt.step()
    assert len(acc) == 0


def test_plain_opacus_run_with_a_shuffling_loader_is_accounted_as_shuffle():
    torch.manual_seed(0)
    ds = _data(48)
    loader = torch.utils.data.DataLoader(ds, batch_size=8, shuffle=True)
    model = torch.nn.Linear(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine()
        engine.accountant = PrivampAccountant.for_data_loader(loader)
        model, opt, loader = engine.make_private(
            module=model, optimizer=opt, data_loader=loader, noise_multiplier=1.0,
            max_grad_norm=1.0, poisson_sampling=False,
        )
        for _ in range(2):  # two epochs, a fresh permutation each
            for xb, yb in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
    assert len(engine.accountant) == 12
    direct = pa.Training(pa.Gaussian(1.0), pa.Shuffle(8, 48), steps=12).epsilon(DELTA)
    assert engine.get_epsilon(DELTA) == float(direct.upper.value)
    # what Opacus's Poisson accounting of the same loader would have printed is smaller than
    # privamp's certified lower bound for shuffling (Chua et al. 2024)
    rdp = RDPAccountant()
    for _ in range(12):
        rdp.step(noise_multiplier=1.0, sample_rate=1 / 6)
    assert direct.lower is not None
    assert rdp.get_epsilon(DELTA) < direct.lower.value  # 5.34 < 6.44 here


def _gauss_eps(mu: float, delta: float) -> float:
    """Balle & Wang 2018, Thm 8: epsilon at delta of the Gaussian mechanism with shift mu."""
    from scipy.optimize import brentq
    from scipy.stats import norm

    def d(e: float) -> float:
        return norm.cdf(mu / 2 - e / mu) - math.exp(e) * norm.cdf(-mu / 2 - e / mu)

    return brentq(lambda e: d(e) - delta, 0.0, 200.0, xtol=1e-12)


def test_make_private_with_epsilon_calibrates_for_the_sampler_used():
    from scipy.optimize import brentq

    from privamp.opacus import make_private_with_epsilon

    # deterministic batches, one batch per epoch, 4 epochs: one Gaussian of shift 2 / sigma
    ds = _data(16)
    model = torch.nn.Linear(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, opt, loader, acc = make_private_with_epsilon(
            None, model, opt, ds, DeterministicBatchSampler(16, 16, epochs=4), 2.0, DELTA, 1.0)
    exact = brentq(lambda s: _gauss_eps(2.0 / s, DELTA) - 2.0, 0.5, 50.0, xtol=1e-10)
    sigma = float(acc.calibration)
    assert exact * (1 - 1e-9) <= sigma <= exact * (1 + 2e-3) and opt.noise_multiplier == sigma
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for _ in range(4):
            for xb, yb in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
    assert len(acc) == 4 and acc.get_epsilon(DELTA) <= 2.0


@pytest.mark.parametrize(
    "make,accountant",
    [(lambda: PoissonBatchSampler(64, 0.25, 8, seed=0), "rdp"),
     (lambda: ShuffleBatchSampler(16, 64, 2), "best")],
)
def test_make_private_with_epsilon_meets_the_target_for_every_sampler(make, accountant):
    from privamp.opacus import make_private_with_epsilon

    sampler = make()
    model = torch.nn.Linear(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        *_, acc = make_private_with_epsilon(None, model, opt, _data(64), sampler, 3.0, DELTA,
                                            1.0, relation=pa.ZeroOut(), accountant=accountant)
    sigma = float(acc.calibration)

    def eps(s: float) -> float:
        run = pa.Training(pa.Gaussian(s), sampler.scheme, steps=sampler.steps,
                          relation=pa.ZeroOut())
        return float(run.epsilon(DELTA, accountant=accountant))

    assert eps(sigma) <= 3.0 < eps(sigma / 1.01)  # meets the target, (nearly) the least noise


def test_an_opacus_history_becomes_privamp_phases():
    from privamp.opacus import from_opacus_history, runs_from_opacus_history

    history = [(1.1, 0.02, 200), (0.9, 0.05, 50), (1.1, 0.02, 100)]
    runs = runs_from_opacus_history(history)
    assert [(r.mechanism, r.scheme, r.steps) for r in runs] == [
        (pa.Gaussian(1.1), pa.Poisson(0.02), 300), (pa.Gaussian(0.9), pa.Poisson(0.05), 50)]
    one = from_opacus_history([(1.1, 0.02, 300)])
    rdp, prv = RDPAccountant(), PRVAccountant()
    rdp.history, prv.history = [(1.1, 0.02, 300)], [(1.1, 0.02, 300)]
    g = one.epsilon(DELTA)
    eps_prv = prv.get_epsilon(DELTA, eps_error=0.01)
    assert g.lower.value <= eps_prv + 0.02 and eps_prv - 0.02 <= g.upper.value
    assert g.upper.value <= rdp.get_epsilon(DELTA)
    with pytest.raises(ValueError, match="no step"):
        runs_from_opacus_history([(1.0, 0.1, 0)])
    mixed = from_opacus_history(history).epsilon(DELTA)
    rdp.history, prv.history = list(history), list(history)
    eps_prv = prv.get_epsilon(DELTA, eps_error=0.01)
    assert mixed.lower.value <= eps_prv + 0.02 and eps_prv - 0.02 <= mixed.upper.value
    assert mixed.upper.value <= rdp.get_epsilon(DELTA)


def test_a_second_data_loader_is_refused():
    acc = PrivampAccountant(pa.Shuffle(10, 100))
    acc.step(noise_multiplier=1.0, sample_rate=0.1)
    acc.step(noise_multiplier=1.0, sample_rate=0.05)
    with pytest.raises(ValueError, match="sample rate changed"):
        acc.get_epsilon(DELTA)


def test_a_poisson_loader_at_another_rate_is_refused():
    dl = pytest.importorskip("opacus.data_loader")
    n = 400
    base = torch.utils.data.DataLoader(_data(n), batch_size=40)  # Poisson rate 0.1
    loader = dl.DPDataLoader.from_data_loader(base, generator=torch.Generator().manual_seed(1))
    acc = PrivampAccountant(PoissonBatchSampler(n, 0.05, steps_per_epoch=10))  # claims rate 0.05
    with pytest.raises(ValueError, match="averages 20.0|bound to"):
        _opacus_engine_run(loader, acc)
    # mean 40 vs 20 (sd 4.4 per batch): refused within a few steps
    assert len(acc) < 5


def test_genuine_poisson_batch_sizes_are_never_refused():
    import numpy as np

    from privamp.integrations.opacus_checks import BatchSizes as _BatchSizes
    from privamp.integrations.opacus_checks import batch_check as _batch_check

    rng = np.random.default_rng(0)
    for n, q in ((400, 0.05), (60000, 256 / 60000), (50, 0.9)):
        for _ in range(20):
            seen = _BatchSizes()
            for size in rng.binomial(n, q, size=60):
                seen.observe(int(size))
                assert _batch_check(pa.Poisson(q), n, seen) == ""
