"""Two-process data-parallel DP-SGD (torch.distributed, gloo, CPU) with privamp's epsilon.

Run:  python examples/ddp_shuffle.py [--epochs 4] [--batch 128] [--sigma 1.0]

Each of 2 ranks takes a ``ShuffleBatchSampler(batch, n, seed=..., rank=r, world_size=2)``:
both draw the same global permutation from the shared seed and yield their half of every
global batch, so the union of the ranks' t-th batches is batch t of ``Shuffle(batch, n)``,
the scheme accounted.  The ranks sum their clipped per-example gradients (``all_reduce``), add
the same Gaussian noise (drawn from a shared seed) and step; rank 0 prints the epsilon
interval after every epoch (``sampler.training(mechanism)`` follows the epochs drawn).
Softmax regression on scikit-learn's digits (first 1792 of 1797, so that 128 divides n);
runs in a few seconds.  Needs torch and scikit-learn.
"""

from __future__ import annotations

import argparse
import socket

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

import privamp as pa

N = 1792


def _port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def worker(rank: int, world: int, port: int, a: argparse.Namespace) -> None:
    from sklearn.datasets import load_digits

    from privamp.integrations.torch import ShuffleBatchSampler

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank,
                            world_size=world)
    try:
        x, y = load_digits(return_X_y=True)
        x = torch.tensor(x[:N] / 16.0, dtype=torch.float32)
        y = torch.tensor(y[:N])
        sampler = ShuffleBatchSampler(a.batch, N, a.epochs, seed=0, rank=rank,
                                      world_size=world)
        w = torch.zeros(64, 10)
        noise = torch.Generator().manual_seed(1)  # the same noise on every rank
        mech = pa.Gaussian(a.sigma)
        for epoch in range(1, a.epochs + 1):
            for idx in sampler:  # this rank's share of each global batch
                xb, yb = x[idx], y[idx]
                p = torch.softmax(xb @ w, dim=1)
                p[torch.arange(len(idx)), yb] -= 1
                g = xb.unsqueeze(2) * p.unsqueeze(1)  # per-example gradients (b, 64, 10)
                norms = g.flatten(1).norm(dim=1).clamp(min=1.0)
                total = (g / norms[:, None, None]).sum(0)  # clipped to norm 1
                dist.all_reduce(total)
                total += a.sigma * torch.randn(total.shape, generator=noise)
                w -= a.lr * total / a.batch
            if rank == 0:
                acc = float(((x @ w).argmax(1) == y).float().mean())
                try:
                    gte = sampler.training(mech, epochs=epoch).epsilon(a.delta)
                    eps = f"epsilon in [{gte.lower:.3f}, {gte.upper:.3f}]"
                except pa.NotApplicable as err:
                    eps = f"not accounted: {err}"
                print(f"epoch {epoch}: train acc {acc:.3f}, {sampler.scheme.name} "
                      f"{sampler.epochs_drawn} epochs, {eps}", flush=True)
    finally:
        dist.destroy_process_group()


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=4)
    p.add_argument("--batch", type=int, default=128, help="global batch size")
    p.add_argument("--sigma", type=float, default=2.0)
    p.add_argument("--lr", type=float, default=2.0)
    p.add_argument("--delta", type=float, default=1e-5)
    a = p.parse_args(argv)
    print(f"2 ranks, digits n={N}, global batch {a.batch}, noise multiplier {a.sigma}")
    mp.start_processes(worker, args=(2, _port(), a), nprocs=2, start_method="spawn")


if __name__ == "__main__":
    main()
