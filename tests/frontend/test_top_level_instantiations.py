"""Template instantiations are not declarations written in the file.

The Clang walk lists the unit's top-level declarations without the
precompiled prelude's; libclang then also lists the function templates the
unit instantiated. Those must not be walked a second time as if they were
written there: a factory call inside a template is one fact, its template the
enclosing function, while an explicit specialization is code of its own."""

from helpers import files_under, make_registry, write_tree
from kernel_ports.index import build_index

SRC = r'''#include "mlx/mlx.h"
template <int N>
mlx::core::fast::CustomKernelFunction make_global() {
  return mlx::core::fast::metal_kernel("g", {"x"}, {"out"}, "out[0] = x[0];");  // @global
}
template <>
mlx::core::fast::CustomKernelFunction make_global<7>() {
  return mlx::core::fast::cuda_kernel("g7", {"x"}, {"out"}, "out[0] = x[0];");  // @special
}
namespace eng {
template <int N>
mlx::core::fast::CustomKernelFunction make_scoped() {
  return mlx::core::fast::metal_kernel("s", {"x"}, {"out"}, "out[0] = x[0];");  // @scoped
}
template <class T>
struct Maker {
  mlx::core::fast::CustomKernelFunction make() {
    return mlx::core::fast::metal_kernel("m", {"x"}, {"out"}, "out[0] = x[0];");  // @member
  }
};
void use() {
  make_global<1>();
  make_global<2>();
  make_global<7>();
  make_scoped<1>();
  make_scoped<2>();
  Maker<int>().make();
}
}  // namespace eng
'''


def _line(marker):
    return next(i for i, line in enumerate(SRC.splitlines(), 1) if f"@{marker}" in line)


def test_instantiations_are_not_walked_again(tmp_path):
    write_tree(tmp_path, {"src/templ.cpp": SRC})
    idx = build_index(make_registry(tmp_path), files_under(tmp_path), jobs=1, use_cache=False)
    by_line: dict = {}
    for fc in idx.factory_calls:
        by_line.setdefault(fc.loc.line, []).append(fc)
    for marker in ("global", "special", "scoped", "member"):
        assert len(by_line.get(_line(marker), [])) == 1, (marker, by_line.get(_line(marker)))
    assert by_line[_line("global")][0].enclosing_function == "make_global"
    assert by_line[_line("special")][0].backend == "cuda"
    assert by_line[_line("scoped")][0].enclosing_function == "eng::make_scoped"
    # every function summary is of a function as written: no instantiation of a template among them
    templated = {u for u in idx.functions if "make_global" in u or "make_scoped" in u or "Maker" in u}
    # the two templates, the explicit specialization and the member: no make_global<1>, make_scoped<2>, Maker<int>
    assert len(templated) == 4, sorted(templated)
