"""Opacus with a plain ``DataLoader(shuffle=True)`` on scikit-learn's digits, accounted by privamp.

Run:  python examples/opacus_digits_shuffle.py [--epochs 5] [--batch 100] [--drop-last]

All 1797 digits, batch size 100 (which does not divide 1797: each epoch ends with a batch of
97, or drops those 97 examples with ``--drop-last``), ``PrivacyEngine(accountant="privamp")``
(registered by ``import privamp.opacus``) and ``poisson_sampling=False``: Opacus keeps the
loader, and privamp accounts for what it does, ``Shuffle(100, 1797, drop_last=...)``, printing
the epsilon interval [certified lower, upper] after every epoch.  Until privamp's accountant
for non-divisible shuffling lands, the interval is a one-line NotApplicable refusal (never a
Poisson number).  Needs torch, opacus and scikit-learn; runs in a few seconds on CPU.
"""

from __future__ import annotations

import argparse
import warnings

import torch

import privamp as pa
import privamp.opacus  # noqa: F401 - registers PrivacyEngine(accountant="privamp")


def main(argv: list[str] | None = None) -> list[str]:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--epochs", type=int, default=5)
    p.add_argument("--batch", type=int, default=100)
    p.add_argument("--sigma", type=float, default=1.0)
    p.add_argument("--delta", type=float, default=1e-5)
    p.add_argument("--drop-last", action="store_true")
    a = p.parse_args(argv)
    from opacus import PrivacyEngine
    from sklearn.datasets import load_digits

    torch.set_num_threads(1)
    torch.manual_seed(0)
    x, y = load_digits(return_X_y=True)
    ds = torch.utils.data.TensorDataset(torch.tensor(x / 16.0, dtype=torch.float32),
                                        torch.tensor(y))
    loader = torch.utils.data.DataLoader(ds, batch_size=a.batch, shuffle=True,
                                         drop_last=a.drop_last)
    model = torch.nn.Sequential(torch.nn.Linear(64, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Opacus: secure RNG off
        engine = PrivacyEngine(accountant="privamp")
        model, opt, loader = engine.make_private(
            module=model, optimizer=opt, data_loader=loader, noise_multiplier=a.sigma,
            max_grad_norm=1.0, poisson_sampling=False)
    print(f"digits n={len(ds)}, batch {a.batch}, drop_last={a.drop_last}: accounted as "
          f"{engine.accountant.scheme}")
    lines = []
    for epoch in range(1, a.epochs + 1):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            for xb, yb in loader:
                opt.zero_grad()
                torch.nn.functional.cross_entropy(model(xb), yb).backward()
                opt.step()
        try:
            g = engine.accountant.get_guarantee(a.delta)
            lo = "-" if g.lower is None else f"{g.lower:.3f}"
            hi = "-" if g.upper is None else f"{g.upper:.3f}"
            eps = f"epsilon in [{lo}, {hi}]"
        except pa.NotApplicable as err:
            eps = f"not accounted yet: {str(err).splitlines()[0]}"
        line = f"epoch {epoch}: {len(engine.accountant)} steps, {eps}"
        print(line)
        lines.append(line)
    return lines


if __name__ == "__main__":
    main()
