"""One page of the built docs in headless Chromium (tools/check_layout.py): the sampler table
of docs/integrations.md stays inside its column; without docs/css/extra.css it does not (so
the check can fail).  Skips when chromium or mkdocs is absent."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("check_layout", ROOT / "tools" / "check_layout.py")
check_layout = importlib.util.module_from_spec(spec)
sys.modules["check_layout"] = check_layout
spec.loader.exec_module(check_layout)


@pytest.fixture(autouse=True)
def _needs_browser():
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    if check_layout.chromium() is None:
        pytest.skip("chromium not installed (apt-get install -y chromium)")


def test_sampler_table_fits_its_column(tmp_path):
    shot = tmp_path / "integrations.png"
    assert check_layout.check("integrations", (1000,), shot) == []
    assert (tmp_path / "integrations-1000.png").read_bytes()[:4] == b"\x89PNG"


def test_the_check_sees_an_overflowing_table():
    problems = check_layout.check("integrations", (1000,), extra_css=False)
    assert any("table 0 ends at" in p for p in problems), problems
