"""The package stays readable in pieces: no module over MAX_MODULE_LINES, no function over MAX_FUNCTION_LINES.

Why limits at all: a newcomer should be able to read the codebase in an afternoon, one module at a time, and a
module that fits in one sitting (a function that fits on one screen) is one a reviewer can hold in mind while
judging a change to it. A function that outgrows the limit is split into helpers named after its phases; a
module that outgrows it is split along the seams of what it owns.

There is no exemption list: a module over the limit is split, not excused.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "kernel_ports"
MAX_MODULE_LINES = 600
MAX_FUNCTION_LINES = 80  # from the `def` line to the last line of the body; decorators not counted


def shape_defects(name: str, source: str) -> list:
    """One line per limit `source` (the text of module `name`) exceeds: the module's length, each long function."""
    defects = []
    lines = len(source.splitlines())
    if lines > MAX_MODULE_LINES:
        defects.append(f"{name}: {lines} lines (limit {MAX_MODULE_LINES})")
    for node in ast.walk(ast.parse(source, filename=name)):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            length = node.end_lineno - node.lineno + 1
            if length > MAX_FUNCTION_LINES:
                defects.append(f"{name}:{node.lineno}: function {node.name} is {length} lines (limit {MAX_FUNCTION_LINES})")
    return defects


def _modules() -> list:
    """(name relative to the repository, path) of every Python module of the package."""
    return [(p.relative_to(PACKAGE.parent).as_posix(), p) for p in sorted(PACKAGE.rglob("*.py"))]


def test_no_module_or_function_is_over_the_limits():
    modules = _modules()
    assert "kernel_ports/cli.py" in {name for name, _ in modules}, "the walk found none of the package's modules"
    defects = []
    for name, path in modules:
        defects += shape_defects(name, path.read_text(encoding="utf-8"))
    assert not defects, "over the size limits (split along what the code owns):\n" + "\n".join(defects)


def _function_of(lines: int, name: str = "long") -> str:
    """Source of a function `lines` lines long (its `def` line included)."""
    return f"def {name}():\n" + "".join(f"    x{i} = {i}\n" for i in range(lines - 1))


def test_the_checker_reports_a_function_one_line_over_the_limit():
    source = "import os\n\n\n" + _function_of(MAX_FUNCTION_LINES + 1)
    assert shape_defects("synthetic.py", source) == [
        f"synthetic.py:4: function long is {MAX_FUNCTION_LINES + 1} lines (limit {MAX_FUNCTION_LINES})"]


def test_the_checker_reports_methods_and_nested_functions_too():
    method = "class C:\n" + "".join("    " + line + "\n" for line in _function_of(MAX_FUNCTION_LINES + 1, "m").splitlines())
    nested = "def outer():\n" + "".join("    " + line + "\n" for line in _function_of(MAX_FUNCTION_LINES + 1, "inner").splitlines())
    assert [d.split(": function ")[1].split()[0] for d in shape_defects("m.py", method)] == ["m"]
    # the outer function holds the inner one, so both are over
    assert sorted(d.split(": function ")[1].split()[0] for d in shape_defects("n.py", nested)) == ["inner", "outer"]


def test_the_checker_reports_a_module_one_line_over_the_limit():
    source = "".join(f"x{i} = {i}\n" for i in range(MAX_MODULE_LINES + 1))
    assert shape_defects("big.py", source) == [f"big.py: {MAX_MODULE_LINES + 1} lines (limit {MAX_MODULE_LINES})"]


def test_the_checker_is_quiet_at_the_limits():
    functions = "\n\n".join(_function_of(MAX_FUNCTION_LINES, f"f{i}") for i in range(3))
    source = functions + "".join(f"y{i} = {i}\n" for i in range(MAX_MODULE_LINES - len(functions.splitlines())))
    assert len(source.splitlines()) == MAX_MODULE_LINES
    assert shape_defects("edge.py", source) == []
