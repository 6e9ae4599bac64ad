"""The package's modules import one another in one direction: no cycle, at module level or inside a function.

A cycle through a function-level import works only as long as nobody moves the import up; it also says that two
modules each need the other, so what both need belongs in the lower one. The graph is read from the source with
``ast``: every ``import`` and ``from ... import`` anywhere in a module (module level, functions, methods),
absolute or relative, and ``from x import y`` is an edge to ``x.y`` when ``y`` is a submodule, else to ``x``; a module
imported by name (``importlib.import_module``) is an edge too, read from the string that names it. Importing
a submodule also runs its parent package's ``__init__``; that is not an edge: the parent runs to its end first and
never back into the submodule, and a name the submodule takes from its parent is an explicit import, counted.

The package root holds at most MAX_ROOT_MODULES modules (``__init__.py`` and ``__main__.py`` counted): the rest
sit in the package of their pipeline stage (docs/architecture.md).
"""

from __future__ import annotations

import ast
from pathlib import Path

import networkx as nx

PACKAGE = Path(__file__).resolve().parent.parent / "kernel_ports"
MAX_ROOT_MODULES = 10


def module_files(root: Path, package: str) -> dict:
    """Dotted module name -> (path, whether it is a package's __init__) for every .py file under ``root``."""
    out = {}
    for path in sorted(root.rglob("*.py")):
        parts = [package, *path.relative_to(root).with_suffix("").parts]
        is_package = parts[-1] == "__init__"
        out[".".join(parts[:-1] if is_package else parts)] = (path, is_package)
    return out


def _imported(node, base: str, modules: dict) -> list:
    """The module names one import statement names (before resolving them to a module of the package)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        anchor = base.split(".")
        anchor = anchor[: len(anchor) - (node.level - 1)]
        source = ".".join(anchor + ([node.module] if node.module else []))
    else:
        source = node.module or ""
    return [f"{source}.{alias.name}" if f"{source}.{alias.name}" in modules else source for alias in node.names]


def _named(text: str, name: str, is_package: bool, modules: dict) -> list:
    """A module a string names, imported by name (``importlib.import_module``): the full dotted name of a module
    of the package, or in a package's ``__init__`` the name of one of its submodules (the PEP 562 tables of the
    names a package imports on first use)."""
    if text in modules and "." in text:
        return [text]
    if is_package and f"{name}.{text}" in modules:
        return [f"{name}.{text}"]
    return []


def import_graph(root: Path, package: str) -> nx.DiGraph:
    """Modules of ``package`` (its folder ``root``), an edge per module it imports, with the line of the first."""
    modules = module_files(root, package)
    graph = nx.DiGraph()
    for name, (path, is_package) in modules.items():
        graph.add_node(name)
        base = name if is_package else name.rpartition(".")[0]
        tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
        prose = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr)}  # docstrings name, never import
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                targets = _imported(node, base, modules)
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in prose:
                targets = _named(node.value, name, is_package, modules)
            else:
                continue
            for target in targets:
                while target and target not in modules:  # `import a.b.c` where c is a name in a.b: the module a.b
                    target = target.rpartition(".")[0]
                if target and target != name and not graph.has_edge(name, target):
                    graph.add_edge(name, target, where=f"{path.relative_to(root.parent).as_posix()}:{node.lineno}")
    return graph


def import_cycles(root: Path, package: str) -> list:
    """Each cycle as one line: module (file:line of its import) -> the next ..."""
    graph = import_graph(root, package)
    out = []
    for found in sorted(nx.simple_cycles(graph), key=lambda c: (len(c), sorted(c))):
        first = found.index(min(found))  # each cycle told from its first module by name, whichever networkx gives
        cycle = found[first:] + found[:first]
        steps = [f"{a} ({graph.edges[a, b]['where']})" for a, b in zip(cycle, cycle[1:] + cycle[:1])]
        out.append(" -> ".join(steps + [cycle[0]]))
    return out


def test_no_import_cycle_between_the_packages_modules():
    graph = import_graph(PACKAGE, "kernel_ports")
    # the walk saw the package: a module-level and a function-level import of it
    assert graph.has_edge("kernel_ports.project", "kernel_ports.checkers")
    assert graph.has_edge("kernel_ports.commands.check", "kernel_ports.project")
    # and the modules imported by name: a package's first-use table, the cache format's dataclass modules
    assert graph.has_edge("kernel_ports.index", "kernel_ports.index.build")
    assert graph.has_edge("kernel_ports.cache.format", "kernel_ports.frontend.clang.model")
    cycles = import_cycles(PACKAGE, "kernel_ports")
    assert not cycles, "import cycles (move what both need to the lower module):\n" + "\n".join(cycles)


def test_the_package_root_holds_at_most_ten_modules():
    root_modules = sorted(p.name for p in PACKAGE.glob("*.py"))
    assert "cli.py" in root_modules
    assert len(root_modules) <= MAX_ROOT_MODULES, f"{len(root_modules)} modules at the root: {root_modules}"


def _plant(tmp_path: Path, files: dict) -> Path:
    root = tmp_path / "planted"
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def test_a_cycle_through_a_function_level_relative_import_is_reported(tmp_path):
    root = _plant(tmp_path, {
        "__init__.py": "",
        "low.py": "def helper():\n    from .high import shared  # the cycle, hidden in a function\n    return shared\n",
        "high.py": "from planted.low import helper\n\nshared = 1\n",
    })
    cycles = import_cycles(root, "planted")
    assert cycles == ["planted.high (planted/high.py:1) -> planted.low (planted/low.py:2) -> planted.high"]


def test_a_cycle_through_a_submodule_named_in_from_import_is_reported(tmp_path):
    # `from planted.stage import views` names the submodule views, not the package stage
    root = _plant(tmp_path, {
        "__init__.py": "",
        "stage/__init__.py": "",
        "stage/views.py": "import planted.core\n",
        "core.py": "def run():\n    from planted.stage import views\n    return views\n",
    })
    assert import_cycles(root, "planted") == [
        "planted.core (planted/core.py:2) -> planted.stage.views (planted/stage/views.py:1) -> planted.core"]


def test_a_cycle_between_a_package_and_its_submodule_is_reported(tmp_path):
    # the shape the rule list had: the package lists its rule modules, each took the base class from the package
    root = _plant(tmp_path, {
        "__init__.py": "",
        "rules/__init__.py": "class Rule:\n    pass\n\n\ndef all_rules():\n    from . import family\n    return family\n",
        "rules/family.py": "from planted.rules import Rule\n",
    })
    assert import_cycles(root, "planted") == [
        "planted.rules (planted/rules/__init__.py:6) -> planted.rules.family (planted/rules/family.py:1) -> planted.rules"]


def test_a_cycle_through_a_module_imported_by_name_is_reported(tmp_path):
    # a package that imports its names on first use (PEP 562), from a table of its submodules
    root = _plant(tmp_path, {
        "__init__.py": "",
        "stage/__init__.py": ("import importlib\n\n_WHERE = {\"run\": \"core\"}\n\n\ndef __getattr__(name):\n"
                              "    return getattr(importlib.import_module(f\"{__name__}.{_WHERE[name]}\"), name)\n"),
        "stage/core.py": "def run():\n    from planted.stage import helper\n    return helper\n",
    })
    assert import_cycles(root, "planted") == [
        "planted.stage (planted/stage/__init__.py:3) -> planted.stage.core (planted/stage/core.py:2) -> planted.stage"]


def test_one_way_imports_are_quiet(tmp_path):
    # a submodule's parent package, a name (not a module) taken from a package, an import of the standard library,
    # a docstring and a string that name no module imported by name
    root = _plant(tmp_path, {
        "__init__.py": "",
        "rules/__init__.py": "from planted.rules.base import Rule\n\n\ndef all_rules():\n    from . import family\n    return family\n",
        "rules/base.py": "import os\n\n\nclass Rule:\n    pass\n",
        "rules/family.py": "from planted.rules.base import Rule\nfrom planted import low\n",
        "low.py": '"""planted.rules"""\nimport json\n\nKIND = "planted.nowhere"\n',  # strings that import nothing
    })
    graph = import_graph(root, "planted")
    assert set(graph.edges) == {("planted.rules", "planted.rules.base"), ("planted.rules", "planted.rules.family"),
                                ("planted.rules.family", "planted.rules.base"), ("planted.rules.family", "planted.low")}
    assert import_cycles(root, "planted") == []
