"""The built docs in headless Chromium (tools/check_layout.py), at desktop (1280 px) and phone
(390 px) widths: tables inside their column with rules, striping and padded cells, no word
broken mid-identifier, no clipped code, no sideways scrolling; a screenshot of each page.
Without docs/css/extra.css the check fails (so it can).  Skips only when chromium or mkdocs
is absent (`.ci/run` installs Debian's chromium, so CI runs it)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
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


def test_sampler_table_page_at_desktop_and_phone_widths(tmp_path):
    shot = tmp_path / "integrations.png"
    assert check_layout.check("integrations", (1280, 390), shot) == []
    for width in (1280, 390):
        assert (tmp_path / f"integrations-{width}.png").read_bytes()[:4] == b"\x89PNG"


def test_the_check_sees_the_problems_the_stylesheet_fixes():
    """Issue 33: without extra.css the theme splits identifiers, draws no rules and no
    stripes, and the phone page scrolls sideways."""
    problems = check_layout.check("integrations", (1280, 390), extra_css=False)
    text = "\n".join(problems)
    assert "broken mid-word" in text, text
    assert "has no rules between rows" in text and "has no striping" in text
    assert "scrolls sideways" in text


@pytest.mark.slow
def test_every_page_at_desktop_and_phone_widths(tmp_path):
    problems = check_layout.check(None, (1280, 390), tmp_path / "docs.png")
    assert problems == [], "\n".join(problems)
    shots = sorted(tmp_path.glob("docs-*.png"))
    assert len(shots) >= 2 * 10
