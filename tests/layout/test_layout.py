"""The floor plan: every import points down (issue 12).

Each top-level part of privamp has a layer; a module may import from its own part or from a
lower layer, never from a higher one or from a sibling part of the same layer, so there is no
import cycle between parts.  Function-level imports count too."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2] / "src" / "privamp"

LAYERS = {
    "results": 0, "errors": 0, "_validation": 0, "progress": 0,
    "numerics": 1,
    "pairs": 2,
    "mechanisms": 3, "sampling": 3,
    "pld": 4, "renyi": 4,
    # the protocol, the registries and the generic accountants (Poisson PLD, RDP, the grid
    # heuristic auto_grid, composition of whole runs' PLDs): below the papers, which
    # register with them and reuse the grid
    "accountants": 5,
    "theorems": 6,
    "accounting": 7,
    "plotting": 8, "support": 8, "integrations": 8,
    "reproduce": 9, "opacus": 9, "torch": 9, "interop": 9,
    "serve": 10,  # a face, like cli: the web page (privamp serve)
    # sweeps and calibration tables over grids (issue 29): a face, below the CLI that calls it
    "sweep": 10,
    "cli": 11,
    "__init__": 12,
}
ENGINES = ("pld", "renyi")
MECHANISM_WORDS = ("Gaussian", "Laplace", "RandomizedResponse", "Poisson", "Shuffle")


def _part(path: Path) -> str:
    rel = path.relative_to(ROOT)
    return rel.parts[0].removesuffix(".py")


def _imports(path: Path) -> list[tuple[str, int]]:
    """(imported top-level part, line) for every privamp import in ``path``."""
    tree = ast.parse(path.read_text())
    rel = path.relative_to(ROOT).with_suffix("")
    pkg = list(rel.parts[:-1]) if rel.name != "__init__" else list(rel.parts[:-1])
    out = []
    typing_only = {id(n) for stmt in ast.walk(tree) if isinstance(stmt, ast.If)
                   and "TYPE_CHECKING" in ast.unparse(stmt.test) for n in ast.walk(stmt)}
    for node in ast.walk(tree):
        if id(node) in typing_only:
            continue
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = pkg[: len(pkg) - (node.level - 1)] if node.level > 1 else pkg
                target = base + (node.module.split(".") if node.module else [])
                if not target:  # "from . import x" at the package root
                    target = [node.names[0].name]
            elif (node.module or "").split(".")[0] == "privamp":
                target = node.module.split(".")[1:] or [node.names[0].name]
            else:
                continue
            out.append((target[0], node.lineno))
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("privamp."):
                    out.append((a.name.split(".")[1], node.lineno))
    return out


def _modules():
    return sorted(p for p in ROOT.rglob("*.py"))


def test_every_part_has_a_layer():
    parts = {_part(p) for p in _modules()}
    assert parts <= set(LAYERS), sorted(parts - set(LAYERS))


def test_every_import_points_down():
    bad = []
    for path in _modules():
        me = _part(path)
        for target, line in _imports(path):
            if target == "__version__" or target == me:
                continue
            if LAYERS.get(target, 99) >= LAYERS[me]:
                bad.append(f"{path.relative_to(ROOT)}:{line} ({me}) imports {target}")
    assert not bad, "\n".join(bad)


def test_engines_name_no_mechanism_and_no_scheme():
    bad = []
    for eng in ENGINES:
        for path in (ROOT / eng).rglob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Name) and node.id in MECHANISM_WORDS:
                    bad.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.id}")
    assert not bad, "\n".join(bad)


def test_a_paper_has_one_home_with_the_same_key_in_docs_and_reproduce():
    docs = ROOT.parents[1] / "docs"
    for paper in (ROOT / "reproduce").glob("[a-z]*[0-9].py"):
        key = paper.stem
        home = ROOT / "theorems" / key
        assert home.with_suffix(".py").exists() or (home / "__init__.py").exists(), key
        assert (docs / f"{key}.md").exists(), key


def test_every_theorem_module_is_imported_and_registers():
    """Auto-discovery (privamp.theorems walks its package): every module file under
    theorems/ is imported by ``import privamp``, and every module that calls ``rdp_method``
    or ``run_accountant`` at import has its results in the registries."""
    import importlib
    import sys

    import privamp  # noqa: F401
    from privamp.accountants.registry import ACCOUNTANTS, REGISTRY

    theorems = ROOT / "theorems"
    registered = {m.func.__module__ for m in REGISTRY.values()} | {
        a.build.__module__ for accs in ACCOUNTANTS.values() for a in accs}
    missing, silent = [], []
    for path in sorted(theorems.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        name = ".".join(rel.parts).removesuffix(".__init__")
        if name not in sys.modules:
            missing.append(name)
            continue
        text = path.read_text()
        if ("@rdp_method(" in text or "@run_accountant(" in text) and name not in registered:
            silent.append(name)
        importlib.import_module(name)
    assert not missing, f"not imported by privamp.theorems: {missing}"
    assert not silent, f"registering modules with nothing registered: {silent}"


def test_accountants_layer_names_no_paper():
    """The generic accountants import no paper module (papers sit above them)."""
    bad = [f"{p.relative_to(ROOT)}:{line}" for p in (ROOT / "accountants").rglob("*.py")
           for target, line in _imports(p) if target == "theorems"]
    assert not bad, bad
