"""Structured bindings (``auto [a, b] = f(...)``): libclang 18 shows the decomposition and its names as
unexposed declarations. The walk reads through them: the binding's initialiser is walked (a launch reached
from it is the launcher's), its names are locals whose value comes from that initialiser, and a call with nine
written arguments (a defaulted tenth has no place in the source) is the typed call the witness saw, in a
launcher and in a header alike."""

from helpers import index_tree, marker_line
from snippets import PORTS_H


PAIR_H = r'''#pragma once
#include <tuple>
#include <utility>
#include "eng/ports.h"
namespace mlxcel {
using mlx::core::array;
const KernelPorts& pair_ports();
// nine written arguments and a defaulted tenth: Clang's call has ten, the source nine
std::pair<array, array> pair_step(const array& q, const array& k, const array& v, int rows, int cols, int heads,
                                  int groups, float scale, bool causal, int chunk = 0);
void scatter_rows(const array& rows, array& out, int a, int b, long offset, int stride, int c, int d,
                  bool flag, int spare = 1);
std::tuple<long, int> plan_rows(const array& out, int first);
inline array pair_in_header(const array& q, array& out) {
  auto [result, state] = pair_step(q, q, q, 1, 2, 3, 4, 0.5f, false);  // @header-init
  auto [offset, stride] = plan_rows(out, 0);
  scatter_rows(result, out, 1, 2, offset, stride, 3, 4, true);  // @header-args
  return state;
}
}  // namespace mlxcel
'''

PAIR_CPP = r'''#include "eng/pair.h"
namespace mlxcel {
const KernelPorts& pair_ports() {
  static const KernelPorts ports{};
  return ports;
}
std::pair<array, array> pair_step(const array& q, const array& k, const array& v, int rows, int cols, int heads,
                                  int groups, float scale, bool causal, int chunk) {
  mlx::core::fast::CustomKernelFunction& kernel = select_kernel_port("pair_step", "none", pair_ports());
  auto outs = kernel({q, k, v}, {q.shape(), q.shape()}, {q.dtype(), q.dtype()}, {rows, cols, heads},  // @launch
                     {groups, 1, 1}, {{"T", q.dtype()}, {"C", chunk}}, std::nullopt, causal, {});
  (void)scale;
  return {outs[0], outs[1]};
}
array pair_in_launcher(const array& q, array& out) {
  auto [result, state] = pair_step(q, q, q, 1, 2, 3, 4, 0.5f, false);  // @launcher-init
  auto [offset, stride] = plan_rows(out, 0);
  scatter_rows(result, out, 1, 2, offset, stride, 3, 4, true);  // @launcher-args
  return state;
}
array pair_lost(const array& q, array& out) {
  auto [offset, stride] = plan_rows(out, 0);
  undeclared_rows(q, out, 1, 2, offset, stride, 3, 4, true);  // @lost
  return q;
}
}  // namespace mlxcel
'''

TREE = {"src/eng/ports.h": PORTS_H, "src/eng/pair.h": PAIR_H, "src/eng/pair.cpp": PAIR_CPP}


def _line(path, marker):
    return marker_line(TREE[path], marker)


def _index(tmp_path):
    return index_tree(tmp_path, TREE)


def test_structured_bindings_are_read_through(tmp_path):
    idx = _index(tmp_path)
    lost = {(u.loc.path, u.loc.line) for u in idx.unconfirmed}
    # negative control: a nine-argument call of a name Clang cannot resolve is still a lost candidate
    assert ("src/eng/pair.cpp", _line("src/eng/pair.cpp", "lost")) in lost
    # the binding's initialiser and the bindings as arguments, in a launcher and in a header: all confirmed
    for path, marker in (("src/eng/pair.cpp", "launcher-init"), ("src/eng/pair.cpp", "launcher-args"),
                         ("src/eng/pair.h", "header-init"), ("src/eng/pair.h", "header-args")):
        assert (path, _line(path, marker)) not in lost, (marker, idx.unconfirmed)
    assert len(lost) == 1, idx.unconfirmed
    (inv,) = idx.invocations
    assert inv.loc.line == _line("src/eng/pair.cpp", "launch") and inv.tables == ("pair_ports",)


def test_a_binding_is_a_local_whose_value_comes_from_its_initialiser(tmp_path):
    idx = _index(tmp_path)
    (fn,) = [f for f in idx.functions.values() if f.qualified_name == "mlxcel::pair_in_launcher"]
    (scatter,) = [e for e in fn.calls if e.callee == "mlxcel::scatter_rows"]
    offset = scatter.args[4]
    assert any(ref[0] == "call" and ref[2] == "mlxcel::plan_rows" for ref in offset), scatter.args
    # the launcher calls the launching helper from the binding's initialiser
    assert any(e.callee == "mlxcel::pair_step" for e in fn.calls)
