"""Installation (issue 25, point 5): `make demo` installs privamp alone, the test targets the
dev extra; no exact torch pin; the package is typed; CI lints before testing."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    tomllib = pytest.importorskip("tomli")


def _makefile_rules() -> dict[str, tuple[list[str], list[str]]]:
    """target -> (prerequisites, recipe lines) of the Makefile (variables expanded)."""
    text = (ROOT / "Makefile").read_text()
    variables = dict(re.findall(r"^(\w+)\s*[:?]?=\s*(.*?)\s*$", text, re.M))

    def expand(s: str) -> str:
        for _ in range(5):
            s = re.sub(r"\$\((\w+)\)", lambda m: variables.get(m.group(1), m.group(0)), s)
        return s

    rules: dict[str, tuple[list[str], list[str]]] = {}
    current = None
    for line in text.splitlines():
        if line.startswith("\t") and current is not None:
            rules[current][1].append(expand(line.strip()))
            continue
        m = re.match(r"^([^\s:=#][^:=]*):(?!=)\s*(.*)$", line)
        current = None
        if m and not line.startswith(".PHONY"):
            current = expand(m.group(1).strip())
            rules[current] = (expand(m.group(2)).split(), [])
    return rules


def _installs(rules, target: str, seen=None) -> list[str]:
    """Every ``pip install`` line run to make ``target`` (through its prerequisites)."""
    seen = set() if seen is None else seen
    if target in seen or target not in rules:
        return []
    seen.add(target)
    prereqs, recipe = rules[target]
    out = [line for line in recipe if "pip install" in line]
    for p in prereqs:
        out += _installs(rules, p, seen)
    return out


def test_make_demo_installs_privamp_without_the_dev_extra():
    rules = _makefile_rules()
    lines = _installs(rules, "demo")
    privamp_lines = [x for x in lines if "-e" in x.split() or " . " in f" {x} "]
    assert privamp_lines, lines
    for line in lines:
        assert "[" not in line, f"make demo installs an extra: {line}"
    tests = _installs(rules, "test")
    assert any('".[dev]"' in x or ".[dev]" in x for x in tests), tests
    assert any(".[dev]" in x for x in _installs(rules, "test-fast"))


def test_make_test_fast_skips_the_slow_tests_and_ci_lints_first():
    rules = _makefile_rules()
    assert any('-m "not slow"' in x for x in rules["test-fast"][1])
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    steps = [x.strip() for x in ci if x.strip().startswith("make ")]
    assert steps[:2] == ["make lint", "make test"]


def test_no_exact_torch_pin_and_the_demo_needs_only_the_base_dependencies():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    project = meta["project"]
    for extra, reqs in project["optional-dependencies"].items():
        for req in reqs:
            if req.startswith("torch"):
                assert req == "torch>=2.0", (extra, req)
    names = {re.split(r"[<>=\[]", r)[0] for r in project["dependencies"]}
    # threadpoolctl: BLAS threads; tomli: TOML on Python 3.10
    assert names == {"numpy", "scipy", "mpmath", "tqdm", "threadpoolctl", "tomli"}


def test_the_package_is_typed():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert "py.typed" in meta["tool"]["setuptools"]["package-data"]["privamp"]
    assert (ROOT / "src" / "privamp" / "py.typed").exists()


def test_the_entry_point_is_the_cli_package_main():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["scripts"]["privamp"] == "privamp.cli:main"
    from privamp.cli import main

    assert callable(main)
    for path in (ROOT / "src" / "privamp" / "cli").glob("*.py"):
        assert len(path.read_text().splitlines()) < 600, path.name


def test_every_listed_slow_test_exists():
    import ast

    from conftest import SLOW_TESTS

    for key in SLOW_TESTS:
        path, name = key.split("::", 1)
        tree = ast.parse((ROOT / path).read_text())
        defined = {n.name for n in tree.body
                   if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)}
        assert name.split("::")[0] in defined, key
