"""Predicate facts say whether the function answers with a bool.

A support predicate (`<x>_available()`) answers yes or no from the table; a
launcher that also calls `has_kernel_port` (to branch before launching) is
recorded too, but with `returns_bool` false, so `init`/`sync` do not list it
among a kernel's predicates.
"""

from __future__ import annotations

from helpers import files_under, make_registry, write_tree
from snippets import PORTS_H

from kernel_ports.index import build_index

TREE = {
    "src/eng/ports.h": PORTS_H,
    "src/eng/gamma.cpp": r'''#include "eng/ports.h"
namespace mlxcel {
mlx::core::fast::CustomKernelFunction& get_gamma_kernel();
const KernelPorts& gamma_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_gamma_kernel(); },
  };
  return ports;
}
bool gamma_available() { return has_kernel_port(gamma_ports()); }
using bool_alias = bool;
bool_alias gamma_ready() { return has_kernel_port(gamma_ports()); }
int gamma_count() { return has_kernel_port(gamma_ports()) ? 1 : 0; }
void gamma_launch() {
  if (has_kernel_port(gamma_ports())) {
    select_kernel_port("gamma", "graph", gamma_ports());
  }
}
}  // namespace mlxcel
''',
}


def test_predicates_record_a_bool_result(tmp_path):
    write_tree(tmp_path, TREE)
    registry = make_registry(tmp_path, include_dirs=("src",))
    index = build_index(registry, files_under(tmp_path), jobs=1, use_cache=False)
    got = {p.name: p.returns_bool for p in index.predicates}
    assert got == {"gamma_available": True, "gamma_ready": True, "gamma_count": False, "gamma_launch": False}
    assert all(p.tables == ("gamma_ports",) for p in index.predicates)


WRAPPERS = r'''#include "eng/ports.h"
namespace mlxcel {
bool gamma_available();
bool gamma_ready();
}  // namespace mlxcel
namespace bridge {
bool gamma_available() { return mlxcel::gamma_available(); }
bool gamma_ready() { return !mlxcel::gamma_ready(); }
bool gamma_count() { return mlxcel::gamma_available() && mlxcel::gamma_ready(); }
}  // namespace bridge
'''


def test_a_wrapper_records_the_predicate_it_forwards_to(tmp_path):
    write_tree(tmp_path, dict(TREE, **{"src/eng/wrappers.cpp": WRAPPERS}))
    registry = make_registry(tmp_path, include_dirs=("src",), kernels=(
        {"name": "gamma", "table": "gamma_ports", "predicates": ("gamma_available", "gamma_ready", "gamma_count")},))
    index = build_index(registry, files_under(tmp_path), jobs=1, use_cache=False)
    got = {p.qualified_name: p.forwards_to for p in index.predicates}
    assert got["bridge::gamma_available"] == "mlxcel::gamma_available"
    assert got["bridge::gamma_ready"] is None  # negated: not a forwarding
    assert got["bridge::gamma_count"] is None  # two calls
    assert got["mlxcel::gamma_available"] is None  # answers from the table itself
