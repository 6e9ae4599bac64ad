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


POINTER_CPP = r'''#include <optional>
#include "mlx/mlx.h"
namespace eng {
struct Picked {
  std::optional<mlx::core::fast::CustomKernelFunction> fn;
  mlx::core::fast::CustomKernelFunction& get(const char* src) {
    if (!fn) fn = mlx::core::fast::metal_kernel("picked", {"x"}, {"y"}, src);
    return *fn;
  }
};
Picked& wide_picked() { static Picked p; return p; }
Picked& narrow_picked() { static Picked p; return p; }
mlx::core::array launch_picked(const mlx::core::array& x, bool wide) {
  Picked* chosen;
  if (wide) {
    chosen = &wide_picked();  // @wide
  } else {
    chosen = &narrow_picked();  // @narrow
  }
  auto& k = chosen->get("y[0] = x[0];");
  return k({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"N", 1}}, std::nullopt, false, {})[0];  // @launch
}
mlx::core::array launch_unknown(const mlx::core::array& x, Picked* given) {
  Picked* chosen = given;
  auto& k = chosen->get("y[0] = x[0];");
  return k({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"N", 1}}, std::nullopt, false, {})[0];  // @unknown
}
}  // namespace eng
'''


def test_holder_reached_through_a_pointer(tmp_path):
    write_tree(tmp_path, {"src/pointer.cpp": POINTER_CPP})
    reg = make_registry(tmp_path)
    idx = build_index(reg, files_under(reg.root), jobs=1, use_cache=False)
    line = lambda m: next(i for i, s in enumerate(POINTER_CPP.splitlines(), 1) if f"@{m}" in s)  # noqa: E731
    by_line = {h.loc.line: h for h in idx.holder_accesses}
    for marker, accessor in (("wide", "wide_picked"), ("narrow", "narrow_picked")):
        h = by_line.get(line(marker))
        assert h is not None and (h.kind, h.accessor, h.method) == ("bound_ref_get", accessor, "get"), marker
    invs = {i.loc.line: i for i in idx.invocations}
    assert invs[line("launch")].accessors == ("narrow_picked", "wide_picked")
    assert invs[line("launch")].tables == ()
    # a pointer that arrives from outside names no accessor: the table stays unknown
    assert invs[line("unknown")].accessors == () and invs[line("unknown")].tables == ("unknown",)
    assert {a.name: [fc.backend for fc in a.factory_calls] for a in idx.accessors} == {
        "narrow_picked": ["metal"], "wide_picked": ["metal"]}
