"""Numbers in the docs come from code, so they cannot go stale.

Each block between ``<!-- generated: NAME -->`` and ``<!-- /generated -->`` in the files
below is the output of ``BLOCKS[NAME]()``, computed with the privamp of this checkout::

    python tools/docs_numbers.py            # rewrite every block
    python tools/docs_numbers.py --check    # exit 1 and name the stale blocks

``tests/docs/test_docs_numbers.py`` runs the check, one block per test.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
FILES = ("README.md", "docs/integrations.md", "docs/quickstart.md", "docs/reporting.md")
PATTERN = re.compile(r"(<!-- generated: ([\w-]+) -->\n)(.*?)(<!-- /generated -->)", re.S)


def _interval(g) -> str:
    # Bounds format in the safe direction: the upper end rounded up, the lower end down
    lo = "-" if g.lower is None else f"{g.lower:.3f}"
    hi = "-" if g.upper is None else f"{g.upper:.3f}"
    return f"[{lo}, {hi}]"


def demo() -> str:
    """The README's abridged ``make demo`` output: the same runs as ``privamp demo``
    (``privamp.cli.demo.demo_rows``); a run no accountant covers yet says so."""
    import privamp as pa
    from privamp.cli.demo import DELTA, demo_rows, under_report_factor

    lines = ["```"]
    found = {}
    for row in demo_rows():
        try:
            g = row.run.epsilon(DELTA)
        except pa.NotApplicable:
            lines.append(f"{row.label:<36}{'-':<20}not available yet (NotApplicable)")
            continue
        found[row.key] = g
        shown = f"{g:.3f} (exact)" if g.exact else _interval(g)
        lines.append(f"{row.label:<36}{shown:<20}{row.source}")
    factor = under_report_factor(found.get("poisson"), found.get("shuffle"))
    if factor is not None:
        lines.append(f"Reporting the Poisson epsilon for a shuffled run under-reports it by a "
                     f"factor of at least {factor:.1f}.")
    lines.append("```")
    return "\n".join(lines) + "\n"


def example() -> str:
    """The epsilon column of the digits example's table (its default settings)."""
    import privamp as pa

    n, b, epochs, sigma, delta = 1440, 60, 10, 1.0, 1e-5
    steps = epochs * n // b
    rows = [
        ("Poisson", "add/remove", pa.Training(pa.Gaussian(sigma), pa.Poisson(b / n), steps=steps)),
        ("shuffle", "add/remove", pa.Training(pa.Gaussian(sigma), pa.Shuffle(b, n), steps=steps)),
        ("fixed-size without replacement", "substitution",
         pa.Training(pa.Gaussian(sigma, 2.0), pa.WithoutReplacement(b, n), steps=steps,
                     relation=pa.Substitution())),
        ("balanced iteration (k = 1)", "add/remove",
         pa.Training(pa.Gaussian(sigma), pa.BalancedIteration(n // b, 1), steps=steps)),
    ]
    lines = ["| sampler | relation | privamp epsilon [lower, upper] |", "|---|---|---|"]
    for name, rel, run in rows:
        lines.append(f"| {name} | {rel} | {_interval(run.epsilon(delta))} |")
    poisson = rows[0][2].epsilon(delta)
    lines.append("")
    lines.append(f"Poisson-only accounting (Opacus's default) reports {poisson:.3f} for every "
                 f"row (n = {n}, batch {b}, {epochs} epochs, noise multiplier {sigma:g}, "
                 f"delta = {delta:g}).")
    return "\n".join(lines) + "\n"


def trap() -> str:
    """The shuffle trap of issue 15: a shuffled run accounted as Poisson."""
    import privamp as pa

    n, b, epochs, sigma, delta = 60000, 600, 10, 0.8, 1e-5
    as_poisson = pa.Training(pa.Gaussian(sigma), pa.Poisson(b / n), epochs=epochs)
    shuffled = pa.Training(pa.Gaussian(sigma), pa.Shuffle(b, n), epochs=epochs)
    p, s = as_poisson.epsilon(delta), shuffled.epsilon(delta)
    return (f"For example (n = {n:,}, batch {b}, {epochs} epochs, noise multiplier {sigma:g}, "
            f"delta = {delta:g}), a Poisson accountant prints epsilon = {p:.2f}, while "
            f"the shuffled run's epsilon is certified to lie in {_interval(s)}.\n")


def sentence() -> str:
    """The sample sentence of docs/reporting.md, with its numbers."""
    import privamp as pa

    run = pa.Training(pa.Gaussian(1.1), pa.Poisson(256 / 60000), epochs=60)
    g = run.epsilon(1e-5)
    return (
        "> We train with DP-SGD (noise multiplier 1.1, per-example clipping norm C, batches "
        "drawn by Poisson sampling with rate 256/60,000, 60 epochs, i.e. "
        f"{run.steps:,} steps). Under add/remove neighbouring datasets the training run "
        f"satisfies ({g:.2f}, 1e-5)-differential privacy. This epsilon is an upper "
        "bound (rounded up) computed with privamp's two-sided PLD accountant (pessimistic "
        "connect-the-dots discretisation, Doroshenko et al. 2022); its certified lower bound "
        f"is {g.lower:.3f}.\n"
    )


BLOCKS: dict[str, Callable[[], str]] = {
    "demo": demo, "example": example, "trap": trap, "sentence": sentence,
}


def blocks_in(text: str) -> list[tuple[str, str]]:
    """(name, current content) of every generated block in ``text``."""
    return [(m.group(2), m.group(3)) for m in PATTERN.finditer(text)]


def render(text: str, only: str | None = None) -> str:
    """``text`` with its blocks (or only block ``only``) regenerated."""
    def sub(m: re.Match) -> str:
        name = m.group(2)
        if name not in BLOCKS:
            raise KeyError(f"unknown generated block {name!r}; known: {', '.join(BLOCKS)}")
        if only is not None and name != only:
            return m.group(0)
        return m.group(1) + BLOCKS[name]() + m.group(4)

    return PATTERN.sub(sub, text)


def main(argv: list[str]) -> int:
    check = "--check" in argv
    stale = []
    for rel in FILES:
        path = ROOT / rel
        text = path.read_text()
        new = render(text)
        if new != text:
            stale.append(rel)
            if not check:
                path.write_text(new)
    if check and stale:
        print(f"stale numbers in {', '.join(stale)}: run python tools/docs_numbers.py")
        return 1
    print("regenerated: " + (", ".join(stale) or "nothing changed"))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
