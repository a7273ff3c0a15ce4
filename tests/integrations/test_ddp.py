"""Two real processes (torch.distributed, gloo, CPU, 127.0.0.1): the ranks' batches of
privamp's samplers (rank=, world_size=) and of torch's DistributedSampler together are the
accounted global batch, and a DDP model trains on them.  The test starts both processes
and stops them within a bounded time."""

from __future__ import annotations

import json
import socket
import time

import pytest

torch = pytest.importorskip("torch")
import torch.distributed as dist  # noqa: E402
import torch.multiprocessing as mp  # noqa: E402

import privamp as pa  # noqa: E402

N, B, SEED, EPOCHS = 40, 6, 3, 2
TIMEOUT = 120.0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _worker(rank: int, world: int, port: int, out: str) -> None:
    from torch.utils.data import BatchSampler, DataLoader, DistributedSampler, TensorDataset

    from privamp.integrations.torch import (
        BallsInBinsSampler,
        PoissonBatchSampler,
        ShuffleBatchSampler,
        scheme_of,
    )

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        ds = TensorDataset(torch.arange(float(N)).unsqueeze(1), torch.zeros(N, dtype=torch.long))
        samplers = {
            "poisson": PoissonBatchSampler(N, 0.2, seed=SEED, rank=rank, world_size=world),
            "shuffle": ShuffleBatchSampler(B * world, N, seed=SEED, rank=rank, world_size=world),
            "bins": BallsInBinsSampler(N, 4, seed=SEED, rank=rank, world_size=world),
        }
        result: dict = {}
        for name, s in samplers.items():
            result[name] = [[list(x) for x in s] for _ in range(EPOCHS)]
        torch_s = DistributedSampler(ds, shuffle=True, seed=SEED)
        loader = DataLoader(ds, batch_sampler=BatchSampler(torch_s, B, False))
        result["torch_scheme"] = repr(scheme_of(loader, set_epoch=True))
        torch_batches = []
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(1, 2))
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(EPOCHS):
            torch_s.set_epoch(epoch)
            ep = []
            for xb, yb in loader:
                ep.append([int(v) for v in xb[:, 0]])
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
            torch_batches.append(ep)
        result["torch"] = torch_batches
        gathered = [None] * world
        dist.all_gather_object(gathered, result)
        if rank == 0:
            with open(out, "w") as f:
                json.dump(gathered, f)
    finally:
        dist.destroy_process_group()


@pytest.mark.slow
def test_two_ranks_union_is_the_global_batch(tmp_path):
    from privamp.integrations.torch import (
        BallsInBinsSampler,
        PoissonBatchSampler,
        ShuffleBatchSampler,
    )

    out = str(tmp_path / "ranks.json")
    ctx = mp.start_processes(_worker, args=(2, _free_port(), out), nprocs=2, join=False,
                             start_method="spawn")
    deadline = time.monotonic() + TIMEOUT
    try:
        while not ctx.join(timeout=1.0):
            if time.monotonic() > deadline:
                pytest.fail("the two ranks did not finish in time")
    finally:
        for p in ctx.processes:
            if p.is_alive():
                p.kill()
    with open(out) as f:
        ranks = json.load(f)
    whole = {
        "poisson": PoissonBatchSampler(N, 0.2, seed=SEED),
        "shuffle": ShuffleBatchSampler(B * 2, N, seed=SEED),
        "bins": BallsInBinsSampler(N, 4, seed=SEED),
    }
    for name, s in whole.items():
        for e in range(EPOCHS):
            for t, batch in enumerate(s):
                union = ranks[0][name][e][t] + ranks[1][name][e][t]
                assert sorted(union) == sorted(batch), (name, e, t)
    # torch's DistributedSampler: the ranks' t-th batches are the t-th block of 2 B positions
    # of the epoch's permutation (torch.randperm seeded with seed + epoch)
    assert ranks[0]["torch_scheme"] == repr(pa.Shuffle(2 * B, N))
    for e in range(EPOCHS):
        g = torch.Generator()
        g.manual_seed(SEED + e)
        perm = torch.randperm(N, generator=g).tolist()
        blocks = [sorted(perm[i : i + 2 * B]) for i in range(0, N, 2 * B)]
        unions = [sorted(a + b) for a, b in zip(ranks[0]["torch"][e], ranks[1]["torch"][e],
                                                 strict=True)]
        assert unions == blocks
