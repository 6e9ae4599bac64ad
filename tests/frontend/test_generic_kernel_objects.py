"""A helper generic over its kernel's type (`template <typename K> ... K& kernel`, a generic lambda's `auto& kernel`)
launches what it is instantiated with, and the walk reads templates as written, where the call on that object has
no type. Called with as many arguments as a kernel takes (five to nine), it is judged as a launch (KP201/KP202, as
a launch whose kernel comes from a parameter); a callable of a template type called with another arity is a call;
and an error inside the function makes the launch one Clang could not type (KP902), not a quiet call."""

from helpers import index_tree, make_registry, marker_line
from snippets import PORTS_H

from kernel_ports.checkers.base import Context
from kernel_ports.checkers.dtype_keys import DtypeKeys

GENERIC_CPP = r'''#include "eng/ports.h"
namespace mlxcel {
using mlx::core::array;
using mlx::core::fast::CustomKernelFunction;
template <typename K>
array run_unkeyed(K& kernel, const array& x) {
  return kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"ROWS", 2}}, std::nullopt, false, {})[0];  // @unkeyed
}
template <typename K>
array run_keyed(K&& kernel, const array& x) {
  return kernel({x}, {x.shape()}, {x.dtype()}, {8, 1, 1}, {8, 1, 1}, {{"T", x.dtype()}})[0];  // @keyed
}
template <typename K>
array run_defaults(const K& kernel, const array& x) {
  return kernel({x}, {x.shape()}, {x.dtype()}, {8, 1, 1}, {8, 1, 1})[0];  // @defaults
}
template <typename F>
int apply_twice(F& f, int a) {
  return f(a, a);  // @two-args
}
template <typename K>
array run_broken(K& kernel, const array& x) {
  Missing plan;
  return kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", x.dtype()}}, std::nullopt, false, {})[0];  // @broken
}
array launcher(CustomKernelFunction& kernel, const array& x) {
  auto twice = [](auto& k, const array& a) {
    return k({a}, {a.shape()}, {a.dtype()}, {4, 1, 1}, {4, 1, 1}, {{"N", 4}}, std::nullopt, false, {})[0];  // @lambda-unkeyed
  };
  int n = apply_twice(*+[](int a, int b) { return a + b; }, 2);
  return run_unkeyed(kernel, x) + run_keyed(kernel, x) + run_defaults(kernel, x) + twice(kernel, x) + n;
}
}  // namespace mlxcel
'''

TREE = {"src/eng/ports.h": PORTS_H, "src/eng/generic.cpp": GENERIC_CPP}
CPP = "src/eng/generic.cpp"


def _line(marker: str) -> int:
    return marker_line(GENERIC_CPP, marker)


def test_launches_on_objects_of_a_template_type_are_judged(tmp_path):
    idx = index_tree(tmp_path, TREE)
    launches = {i.loc.line: i for i in idx.invocations if i.loc.path == CPP}
    assert set(launches) == {_line(m) for m in ("unkeyed", "keyed", "defaults", "lambda-unkeyed")}, launches
    assert all(i.kernel_from_parameter for i in launches.values())
    findings = list(DtypeKeys().check(Context(make_registry(tmp_path, include_dirs=("src",)), idx, None)))
    kp201 = {f.line for f in findings if f.rule == "KP201" and f.path == CPP}
    # negative controls: the generic launches whose template args name no input's dtype (or that pass none: every
    # defaulted argument left out)
    assert kp201 == {_line("unkeyed"), _line("lambda-unkeyed"), _line("defaults")}, findings
    # the quiet control: keyed, its defaulted arguments after the template args left out
    assert not [f for f in findings if f.line == _line("keyed") and f.path == CPP]


def test_a_call_of_another_arity_is_a_call_and_an_error_inside_is_kp902(tmp_path):
    idx = index_tree(tmp_path, TREE)
    assert _line("two-args") not in {i.loc.line for i in idx.invocations}
    lost = {(u.loc.path, u.loc.line): u for u in idx.unconfirmed}
    assert (CPP, _line("two-args")) not in lost
    assert (CPP, _line("broken")) in lost and "could not type this kernel launch" in lost[CPP, _line("broken")].reason
