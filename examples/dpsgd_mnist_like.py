"""DP-SGD with Opacus on scikit-learn's digits, once per batch sampler, with privamp's epsilon.

Run:  python examples/dpsgd_mnist_like.py [--epochs 10] [--sigma 1.0] [--delta 1e-5]

Trains the same small network with the same noise multiplier, clipping norm, batch size and
number of steps under four batch samplers (Poisson, shuffle, fixed-size without replacement,
balanced iteration), and prints test accuracy next to privamp's [lower, upper] interval on
epsilon for the sampler actually used, and next to the number one would report by
(wrongly, except for the first row) accounting the run as Poisson.  Needs torch and opacus
and scikit-learn, which ships the data (from a checkout: ``pip install ".[opacus,examples]"``).
"""

from __future__ import annotations

import argparse
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import torch

import privamp as pa
from privamp.opacus import make_private
from privamp.torch import (
    BalancedIterationSampler,
    PoissonBatchSampler,
    PrivampBatchSampler,
    ShuffleBatchSampler,
    WithoutReplacementBatchSampler,
)

N_TRAIN = 1440  # 24 batches of 60: divisible, so shuffle and balanced epochs are whole


def load_digits(seed: int = 0) -> tuple[torch.Tensor, ...]:
    """Train/test tensors: scikit-learn's 8x8 digits (1797 images) split 1440 / 357."""
    try:
        from sklearn.datasets import load_digits as sk_digits
    except ImportError as exc:
        raise SystemExit(
            'this example needs scikit-learn for its data: pip install ".[opacus,examples]"'
        ) from exc
    x, y = sk_digits(return_X_y=True)
    x = x / 16.0
    perm = np.random.default_rng(seed).permutation(len(y))
    x = torch.tensor(x[perm], dtype=torch.float32)
    y = torch.tensor(y[perm], dtype=torch.long)
    return x[:N_TRAIN], y[:N_TRAIN], x[N_TRAIN:], y[N_TRAIN:]


@dataclass
class Setting:
    name: str
    make: Callable[[int, int, int], PrivampBatchSampler]  # (batch, epochs, seed) -> sampler
    relation: pa.Relation


SETTINGS = [
    Setting(
        "Poisson",
        lambda b, e, s: PoissonBatchSampler(N_TRAIN, b / N_TRAIN, epochs=e, seed=s),
        pa.AddRemove(),
    ),
    Setting("shuffle", lambda b, e, s: ShuffleBatchSampler(b, N_TRAIN, e, seed=s), pa.AddRemove()),
    # privamp's fixed-size (Balle et al. 2018) analysis is under substitution: sensitivity 2C
    Setting(
        "fixed-size WOR",
        lambda b, e, s: WithoutReplacementBatchSampler(b, N_TRAIN, epochs=e, seed=s),
        pa.Substitution(),
    ),
    Setting(
        "balanced (k=1)",
        lambda b, e, s: BalancedIterationSampler(N_TRAIN, N_TRAIN // b, 1, e, seed=s),
        pa.AddRemove(),
    ),
]


def train_one(
    setting: Setting,
    data: tuple[torch.Tensor, ...],
    *,
    batch: int,
    epochs: int,
    sigma: float,
    clip: float,
    lr: float,
    seed: int,
    max_steps: int | None = None,
) -> tuple[float, int, PrivampBatchSampler, object]:
    """Train with DP-SGD under one sampler; returns (test accuracy, steps, sampler, accountant)."""
    xtr, ytr, xte, yte = data
    torch.manual_seed(seed)
    model = torch.nn.Sequential(torch.nn.Linear(64, 64), torch.nn.ReLU(), torch.nn.Linear(64, 10))
    opt = torch.optim.SGD(model.parameters(), lr=lr, momentum=0.5)
    sampler = setting.make(batch, epochs, seed)
    ds = torch.utils.data.TensorDataset(xtr, ytr)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus: secure RNG off, backward hooks
        model, opt, loader, acc = make_private(
            None, model, opt, ds, sampler, sigma, clip, relation=setting.relation
        )
        steps = 0
        for _epoch in range(epochs):  # one pass over the loader is one epoch
            for xb, yb in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
                steps += 1
                if max_steps is not None and steps >= max_steps:
                    break
            if max_steps is not None and steps >= max_steps:
                break
    with torch.no_grad():
        accuracy = float((model(xte).argmax(1) == yte).float().mean())
    return accuracy, steps, sampler, acc


def _interval(g: pa.Guarantee) -> str:
    # a Bound formats in the safe direction: the upper end rounded up, the lower end down
    lo = "-" if g.lower is None else f"{g.lower:.3f}"
    hi = "-" if g.upper is None else f"{g.upper:.3f}"
    return f"[{lo}, {hi}]"


def main(argv: list[str] | None = None) -> list[dict]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=10)
    p.add_argument("--batch", type=int, default=60, help="must divide 1440")
    p.add_argument("--sigma", type=float, default=1.0, help="noise multiplier")
    p.add_argument("--clip", type=float, default=1.0, help="max per-example gradient norm")
    p.add_argument("--lr", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-steps", type=int, default=None, help="stop early (smoke test)")
    p.add_argument("--only", default=None, help="run one sampler (substring of its name)")
    a = p.parse_args(argv)
    torch.set_num_threads(1)  # a tiny network: threads only add overhead
    data = load_digits(a.seed)
    settings = [s for s in SETTINGS if a.only is None or a.only.lower() in s.name.lower()]
    rows = []
    print(
        f"DP-SGD on digits: n={N_TRAIN}, batch {a.batch}, {a.epochs} epochs, noise multiplier "
        f"{a.sigma}, clip {a.clip}, delta={a.delta:g}"
    )
    # What Poisson-only accounting (Opacus's default accountants) would report for this run:
    # rate batch / n, add/remove, the same noise multiplier and number of steps.
    steps_planned = a.epochs * N_TRAIN // a.batch
    if a.max_steps is not None:
        steps_planned = min(steps_planned, a.max_steps)
    as_poisson = pa.Training(
        pa.Gaussian(a.sigma), pa.Poisson(a.batch / N_TRAIN), steps=steps_planned
    ).epsilon(a.delta)
    head = f"{'sampler':16} {'relation':13} {'steps':>5} {'test acc':>8}  "
    print(head + f"{'privamp epsilon [lower, upper]':32} {'train s':>7} {'account s':>9}")
    for setting in settings:
        t0 = time.time()
        accuracy, steps, sampler, acc = train_one(
            setting, data, batch=a.batch, epochs=a.epochs, sigma=a.sigma, clip=a.clip,
            lr=a.lr, seed=a.seed, max_steps=a.max_steps,
        )
        t1 = time.time()
        try:
            g = acc.get_guarantee(a.delta)
            eps = _interval(g)
        except ValueError as err:
            g, eps = None, f"n/a: {err}"
        t2 = time.time()
        eps = eps if len(eps) <= 32 else eps[:29] + "..."
        print(
            f"{setting.name:16} {str(setting.relation):13} {steps:5d} {accuracy:8.3f}  "
            f"{eps:32} {t1 - t0:7.1f} {t2 - t1:9.1f}"
        )
        rows.append(
            {"sampler": setting.name, "scheme": sampler.scheme, "steps": steps,
             "accuracy": accuracy, "guarantee": g}
        )
    print(
        f"\nPoisson-only accounting (Opacus's default) would report epsilon = "
        f"{as_poisson:.3f} for every row."
    )
    print(
        "The upper end of privamp's interval is the epsilon that is safe to report for the "
        "sampler actually used;\nsubstitution rows protect a replaced record (sensitivity 2C), "
        "add/remove rows an added or removed one (C)."
    )
    return rows


if __name__ == "__main__":
    main()
