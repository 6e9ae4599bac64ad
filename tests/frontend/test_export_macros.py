"""An export attribute the registry defines as nothing (`MLXCEL_API=`) is read by the witness as the preprocessor
reads it: a function it marks is no syntax error, and the focus may leave its body unread."""

from __future__ import annotations

from types import SimpleNamespace

from kernel_ports.frontend import focus, witness as wit

CODE = b"""#include <vector>
namespace mlxcel {
MLXCEL_API int bridge_sum(const int* p, int n) {
  int s = 0;
  for (int i = 0; i < n; ++i) s += p[i];
  return s;
}
}  // namespace mlxcel
"""


def _names(defines):
    conv = SimpleNamespace(selector="mlxcel::select_kernel_port", has_port="mlxcel::has_kernel_port",
                           table_type="mlxcel::KernelPorts", backend_queries=["mlxcel::gpu_kernel_backend"], test_seams=[])
    registry = SimpleNamespace(conventions=conv, backends={}, kernels=[], compile=SimpleNamespace(defines=defines))
    return wit.WitnessNames.from_registry(registry)


def test_empty_define_is_blanked_for_the_witness():
    plain = wit.witness("bridge.cpp", CODE, _names([]), wit.cpp_parser())
    assert plain.error_lines  # `MLXCEL_API int f()` is not C++ to tree-sitter
    names = _names(["MLXCEL_API=", "OTHER=1"])
    assert names.empty_macros == {"MLXCEL_API"}
    read = wit.witness("bridge.cpp", CODE, names, wit.cpp_parser())
    assert not read.error_lines
    (fn,) = [d for d in read.definitions if d.name == "bridge_sum"]
    unread = focus.unread_bodies({"bridge.cpp": read}, frozenset({"select_kernel_port"}))
    assert unread["bridge.cpp"] == {fn.body}
