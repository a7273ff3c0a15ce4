"""Opacus loops (issue 25): PrivacyEngine(accountant="privamp") through Opacus's registry,
BatchMemoryManager's logical steps, and gradient accumulation over shuffle micro-batches."""

from __future__ import annotations

import warnings

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("opacus")

from opacus import PrivacyEngine  # noqa: E402
from opacus.accountants import create_accountant  # noqa: E402
from opacus.utils.batch_memory_manager import BatchMemoryManager  # noqa: E402

import privamp as pa  # noqa: E402
import privamp.opacus  # noqa: E402,F401 - registers "privamp" with Opacus
from privamp.integrations.opacus import PrivampAccountant  # noqa: E402

DELTA = 1e-5


def _data(n: int):
    g = torch.Generator().manual_seed(0)
    x = torch.randn(n, 5, generator=g)
    return torch.utils.data.TensorDataset(x, (x[:, 0] > 0).long())


def _engine_run(loader, epochs=1, poisson_sampling=True, bmm=None, accumulate=1):
    torch.manual_seed(0)
    model = torch.nn.Linear(5, 2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        engine = PrivacyEngine(accountant="privamp")
        if accumulate > 1:
            engine.accountant = PrivampAccountant(accumulation_steps=accumulate)
        model, opt, loader = engine.make_private(
            module=model, optimizer=opt, data_loader=loader, noise_multiplier=1.0,
            max_grad_norm=1.0, poisson_sampling=poisson_sampling)
        for _ in range(epochs):
            if bmm:
                with BatchMemoryManager(data_loader=loader, max_physical_batch_size=bmm,
                                        optimizer=opt) as physical:
                    _epoch(model, opt, physical, 1)
            else:
                _epoch(model, opt, loader, accumulate)
    return engine


def _epoch(model, opt, loader, k):
    opt.zero_grad()
    for i, (xb, yb) in enumerate(loader, 1):
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        if i % k == 0 or i == len(loader):  # the epoch's leftover micro-batches step too
            opt.step()
            opt.zero_grad()


def test_privamp_is_registered_with_opacus():
    acc = create_accountant("privamp")
    assert isinstance(acc, PrivampAccountant) and acc.scheme is None
    with pytest.raises(ValueError, match="no data loader"):
        acc.training()


def test_privacy_engine_privamp_default_poisson_loader():
    n, b = 64, 16
    engine = _engine_run(torch.utils.data.DataLoader(_data(n), batch_size=b), epochs=2)
    acc = engine.accountant
    assert acc.scheme == pa.Poisson(b / n) and len(acc) == 8
    direct = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.25), steps=8).epsilon(DELTA)
    assert engine.get_epsilon(DELTA) == float(direct.upper.value)


def test_privacy_engine_privamp_shuffle_loader_without_poisson():
    loader = torch.utils.data.DataLoader(_data(48), batch_size=8, shuffle=True)
    engine = _engine_run(loader, epochs=2, poisson_sampling=False)
    assert engine.accountant.scheme == pa.Shuffle(8, 48) and len(engine.accountant) == 12
    direct = pa.Training(pa.Gaussian(1.0), pa.Shuffle(8, 48), steps=12).epsilon(DELTA)
    assert engine.get_epsilon(DELTA) == float(direct.upper.value)


def test_privacy_engine_privamp_refuses_weighted_sampling_in_one_line():
    ds = _data(20)
    sampler = torch.utils.data.WeightedRandomSampler(torch.ones(20), 20)
    loader = torch.utils.data.DataLoader(ds, batch_size=5, sampler=sampler)
    with pytest.raises(ValueError, match="WeightedRandomSampler") as exc:
        _engine_run(loader, poisson_sampling=False)
    assert "\n" not in str(exc.value)


def test_batch_memory_manager_logical_steps_are_the_poisson_steps():
    n, b = 64, 32  # Poisson at 1/2: logical batches of ~32, physical ones of at most 8
    engine = _engine_run(torch.utils.data.DataLoader(_data(n), batch_size=b), epochs=3, bmm=8)
    acc = engine.accountant
    assert acc.scheme == pa.Poisson(0.5)
    assert len(acc) == 6 and acc.split_steps >= 5  # one accountant step per logical batch
    direct = pa.Training(pa.Gaussian(1.0), pa.Poisson(0.5), steps=6).epsilon(DELTA)
    assert engine.get_epsilon(DELTA) == float(direct.upper.value)


def test_accumulated_shuffle_micro_batches_are_a_bigger_shuffle():
    # 48 examples in micro-batches of 4, accumulated 3 at a time: Shuffle(12, 48)
    loader = torch.utils.data.DataLoader(_data(48), batch_size=4, shuffle=True)
    engine = _engine_run(loader, epochs=2, poisson_sampling=False, accumulate=3)
    acc = engine.accountant
    assert acc.scheme == pa.Shuffle(12, 48) and len(acc) == 8
    direct = pa.Training(pa.Gaussian(1.0), pa.Shuffle(12, 48), steps=8).epsilon(DELTA)
    assert engine.get_epsilon(DELTA) == float(direct.upper.value)


def test_accumulated_poisson_is_refused():
    with pytest.raises(pa.NotApplicable, match="not Poisson"):
        PrivampAccountant(pa.Poisson(0.1), accumulation_steps=4)


def test_digits_shuffle_example_prints_one_line_per_epoch():
    import importlib.util
    from pathlib import Path

    pytest.importorskip("sklearn")
    path = Path(__file__).resolve().parents[2] / "examples" / "opacus_digits_shuffle.py"
    spec = importlib.util.spec_from_file_location("opacus_digits_shuffle", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    lines = module.main(["--epochs", "2"])
    assert len(lines) == 2 and lines[1].startswith("epoch 2: 36 steps")  # ceil(1797 / 100)
    assert "epsilon in [" in lines[1] or "not accounted yet" in lines[1]


def test_a_distributed_loader_is_not_batch_checked_against_the_global_batch():
    ds = _data(24)
    ss = torch.utils.data.DistributedSampler(ds, num_replicas=2, rank=0, shuffle=True, seed=0)
    loader = torch.utils.data.DataLoader(
        ds, batch_sampler=torch.utils.data.BatchSampler(ss, 4, False))
    acc = PrivampAccountant()
    acc.attach(loader, set_epoch=True)
    assert acc.scheme == pa.Shuffle(8, 24) and acc.world_size == 2
