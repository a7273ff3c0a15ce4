"""Modules talk through public names (issue 26).

A module may not import another module's ``_private`` name, nor read a ``_private``
attribute that its own module never defines (``obj._attr`` of another module's objects);
``self`` / ``cls`` are always allowed.  No source file exceeds 600 lines.  An exception
would be listed in ALLOWED (or ALLOWED_LONG) with its reason; both are empty.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "src" / "privamp"

MAX_LINES = 600

#: "path: import module.name" / "path: attr expr._name" allowed to cross, with the reason
ALLOWED: set[str] = set()

#: files allowed over MAX_LINES, with the reason
ALLOWED_LONG: set[str] = set()


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _violations(path: Path) -> list[str]:
    """The cross-module private names used in ``path`` (ALLOWED's format)."""
    tree = ast.parse(path.read_text())
    rel = path.relative_to(ROOT).as_posix()
    defined: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            defined.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            defined.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            defined.add(node.id)
        elif isinstance(node, ast.arg):
            defined.add(node.arg)
        elif isinstance(node, ast.keyword) and node.arg:
            defined.add(node.arg)
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module != "__future__":
            out += [f"{rel}: import {node.module}.{a.name}" for a in node.names
                    if _private(a.name)]
        elif isinstance(node, ast.Attribute) and _private(node.attr):
            if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
                continue
            if node.attr not in defined:
                out.append(f"{rel}: attr {ast.unparse(node.value)}.{node.attr}")
    return out


def _sources() -> list[Path]:
    return sorted(ROOT.rglob("*.py"))


def test_no_private_names_cross_modules() -> None:
    found = {v for p in _sources() for v in _violations(p)}
    new = sorted(found - ALLOWED)
    assert not new, "private names used across modules (make them public):\n" + "\n".join(new)


def test_allowlist_has_no_stale_entries() -> None:
    found = {v for p in _sources() for v in _violations(p)}
    stale = sorted(ALLOWED - found)
    assert not stale, "ALLOWED entries no longer needed (drop them):\n" + "\n".join(stale)


def test_scanner_sees_both_kinds() -> None:
    """The scanner flags a private import and a foreign private attribute, not self's."""
    import tempfile

    src = ("from .grid import _strip, PLD\n"
           "class A:\n    def f(self, m):\n        return self._own, m._rdp(1, 2)\n")
    with tempfile.TemporaryDirectory() as tmp:
        p = Path(tmp) / "x.py"
        p.write_text(src)
        global ROOT
        old, ROOT = ROOT, Path(tmp)
        try:
            got = _violations(p)
        finally:
            ROOT = old
    assert sorted(got) == ["x.py: attr m._rdp", "x.py: import grid._strip"]


def test_no_source_file_over_600_lines() -> None:
    long = {p.relative_to(ROOT).as_posix(): len(p.read_text().splitlines())
            for p in _sources()}
    over = {k: n for k, n in long.items() if n > MAX_LINES and k not in ALLOWED_LONG}
    assert not over, f"source files over {MAX_LINES} lines: {over}"
