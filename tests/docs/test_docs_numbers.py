"""The numbers in README.md and docs/ (blocks marked ``<!-- generated: NAME -->``) are what
privamp computes today: regenerate them with ``python tools/docs_numbers.py``."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("docs_numbers", ROOT / "tools" / "docs_numbers.py")
docs_numbers = importlib.util.module_from_spec(spec)
sys.modules["docs_numbers"] = docs_numbers
spec.loader.exec_module(docs_numbers)

CASES = [(rel, name) for rel in docs_numbers.FILES
         for name, _ in docs_numbers.blocks_in((ROOT / rel).read_text())]


def test_every_page_with_numbers_is_checked():
    assert {name for _, name in CASES} == set(docs_numbers.BLOCKS)
    assert {"README.md", "docs/integrations.md", "docs/reporting.md"} <= {r for r, _ in CASES}


@pytest.mark.parametrize("rel,name", CASES)
def test_generated_block_is_current(rel, name):
    text = (ROOT / rel).read_text()
    assert docs_numbers.render(text, only=name) == text, (
        f"{rel}: block {name!r} is stale; run python tools/docs_numbers.py")
