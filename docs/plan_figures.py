"""Regenerate the table and the heat map of docs/plan.md (the docs build calls this first):

    python docs/plan_figures.py [--workers N]

Runs ``privamp plan docs/plan.toml`` with its store in build/plan.sqlite (a second build
computes nothing), draws docs/img/plan.png and writes the table between the markers of
docs/plan.md.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import re
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", default=None)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT / "src"))
    from privamp.cli import main as privamp

    (ROOT / "build").mkdir(exist_ok=True)
    (DOCS / "img").mkdir(exist_ok=True)
    argv = ["plan", str(DOCS / "plan.toml"), "--store", str(ROOT / "build" / "plan.sqlite"),
            "--plot", str(DOCS / "img" / "plan.png"), "--x", "batch_size", "--y", "epochs"]
    if args.workers:
        argv += ["--workers", args.workers]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = privamp(argv)
    if status:
        raise SystemExit(status)
    table = "\n".join(line for line in out.getvalue().splitlines()
                      if not line.startswith("wrote "))
    page = DOCS / "plan.md"
    text = page.read_text()
    block = f"<!-- plan-table -->\n```text\n{table}\n```\n<!-- /plan-table -->"
    page.write_text(re.sub(r"<!-- plan-table -->.*?<!-- /plan-table -->", lambda m: block,
                           text, flags=re.S))
    print(f"wrote {DOCS / 'img' / 'plan.png'} and the table of {page}")


if __name__ == "__main__":
    main()
