"""The documentation: the support matrix page is the registries' current output, and the site
builds with warnings as errors."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_support_matrix_page_is_current():
    from privamp.support import support_markdown

    page = (ROOT / "docs" / "support.md").read_text()
    assert page == support_markdown(), "regenerate with: privamp support > docs/support.md"


def test_docs_build_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("mkdocstrings")
    if shutil.which("mkdocs") is None and not (Path(sys.executable).parent / "mkdocs").exists():
        pytest.skip("mkdocs command not found")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT, capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_every_public_name_is_in_the_api_reference():
    """Issue 33: every name of privamp.__all__ is documented in docs/api.md (directly, or as a
    member of a module documented there)."""
    import importlib
    import re

    import privamp as pa

    api = (Path(__file__).resolve().parents[2] / "docs" / "api.md").read_text()
    covered = set()
    for target in re.findall(r"^::: (\S+)", api, re.M):
        covered.add(target.rsplit(".", 1)[-1])
        try:
            module = importlib.import_module(target)
        except ImportError:
            continue
        covered |= set(getattr(module, "__all__", ()))
    assert [n for n in pa.__all__ if n not in covered] == []
