"""A holder type of its own whose method builds the kernel (`get_x_kernel().get()`
with the factory inside `X::get`) is a holder access like any other."""

from helpers import files_under, make_registry, write_tree
from kernel_ports.index import build_index

HOLDER_CPP = r'''#include <mutex>
#include <optional>
#include "mlx/mlx.h"
namespace eng {
struct OwnHolder {
  std::once_flag once;
  std::optional<mlx::core::fast::CustomKernelFunction> kernel;
  mlx::core::fast::CustomKernelFunction& get() {
    std::call_once(once, [this] { kernel = mlx::core::fast::metal_kernel("k", {"x"}, {"out"}, "out[0] = x[0];"); });
    return *kernel;
  }
};
OwnHolder& get_own_kernel() {
  static OwnHolder holder;
  return holder;
}
struct Plain {
  int get() { return 1; }
};
Plain& get_plain() {
  static Plain p;
  return p;
}
mlx::core::array launch(const mlx::core::array& x) {
  int v = get_plain().get();  // @plain
  mlx::core::fast::CustomKernelFunction& k = get_own_kernel().get();  // @own
  return k({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", x.dtype()}, {"V", v}}, std::nullopt, false, {})[0];
}
}  // namespace eng
'''


def _line(marker):
    return next(i for i, line in enumerate(HOLDER_CPP.splitlines(), 1) if f"@{marker}" in line)


def test_holder_whose_method_builds_the_kernel(tmp_path):
    write_tree(tmp_path, {"src/holder.cpp": HOLDER_CPP})
    reg = make_registry(tmp_path)
    idx = build_index(reg, files_under(reg.root), jobs=1, use_cache=False)
    by_line = {h.loc.line: h for h in idx.holder_accesses}
    own = by_line.get(_line("own"))
    assert own is not None and own.kind == "accessor_get" and own.accessor == "get_own_kernel" and own.method == "get"
    assert _line("plain") not in by_line


def test_accessor_of_such_a_holder_reaches_the_method_factory(tmp_path):
    write_tree(tmp_path, {"src/holder.cpp": HOLDER_CPP})
    reg = make_registry(tmp_path)
    idx = build_index(reg, files_under(reg.root), jobs=1, use_cache=False)
    (acc,) = [a for a in idx.accessors if a.name == "get_own_kernel"]
    assert [fc.backend for fc in acc.factory_calls] == ["metal"]
    (holder,) = [h for h in idx.holders if h.accessor.endswith("get_own_kernel")]
    assert [fc.backend for fc in holder.factory_calls] == ["metal"]
    assert not [a for a in idx.accessors if a.name == "get_plain"]
