"""`init`'s parse-quality lines: the units Clang parsed with errors, worst first, each with the first error the
check's own parse recorded (nothing is parsed again)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "frontend"))

from helpers import files_under, make_registry, write_tree  # noqa: E402
from kernel_ports.index import build_index  # noqa: E402
from kernel_ports.parse_summary import parse_quality_lines  # noqa: E402

# The erroneous bodies name the kernel type (in a comment), so the walk reads them: a body it leaves unread is
# given to Clang blank, and an error there is not counted (tests/frontend/test_hidden_bodies.py).
GOOD = '#include "mlx/mlx.h"\nnamespace eng {\nint ok() { return 1; }\n}  // namespace eng\n'
ONE_ERROR = ('#include "mlx/mlx.h"\nnamespace eng {\nint bad() { return undeclared_one; /* CustomKernelFunction */ }\n'
             '}  // namespace eng\n')
TWO_ERRORS = ('#include "mlx/mlx.h"\nnamespace eng {\nint worse() {  // CustomKernelFunction\n  int a = undeclared_two;\n'
              '  return a + undeclared_three;\n}\n}  // namespace eng\n')
LAUNCH = 'mlx::core::fast::CustomKernelFunction k_%s() { return mlx::core::fast::metal_kernel("k", {"x"}, {"out"}, "s"); }\n'


def _index(tmp_path, files):
    # each unit names a factory, so the witness hands it to Clang
    write_tree(tmp_path, {p: t.replace("namespace eng {\n", "namespace eng {\n" + LAUNCH % i, 1)
                          for i, (p, t) in enumerate(files.items())})
    reg = make_registry(tmp_path)
    return reg, build_index(reg, files_under(tmp_path), jobs=2, cache_dir=tmp_path / "cache")


def test_units_with_errors_are_listed_worst_first_with_their_first_error(tmp_path):
    reg, index = _index(tmp_path, {"src/a.cpp": GOOD, "src/b.cpp": ONE_ERROR, "src/c.cpp": TWO_ERRORS})
    lines = parse_quality_lines(index)
    assert lines[0] == "parse quality: 1 of 3 translation unit(s) parsed by Clang without errors; 2 with errors:"
    assert lines[1].startswith("  src/c.cpp: 2 error(s) (configuration default); first: src/c.cpp:5: ")
    assert "undeclared_two" in lines[1]
    assert lines[2].startswith("  src/b.cpp: 1 error(s) (configuration default); first: src/b.cpp:4: ")
    assert "undeclared_one" in lines[2]
    assert len(lines) == 3


def test_a_clean_tree_is_one_line(tmp_path):
    reg, index = _index(tmp_path, {"src/a.cpp": GOOD})
    assert parse_quality_lines(index) == ["parse quality: 1 of 1 translation unit(s) parsed by Clang without errors"]
