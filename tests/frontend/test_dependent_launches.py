"""A kernel launch in a template pattern (a function template, a member function of a class template, a generic
lambda) whose arguments depend on a template parameter: libclang 18 gives a ``CallExpr`` of dependent type whose
callee is the kernel variable, with no ``operator()`` resolved, and the walk reads the template as written (the
unit's implicit instantiations are dropped). Where Clang reported no error inside the function, that call is a
launch to judge (KP201/KP202), not a construct Clang could not type (KP902); ``q.dtype()`` on an input of a
dependent type, and a ``Dtype`` named through a function template, are dtype keys; a kernel member reached through
a dependent base (``this->kernel_``) is a launch too, and a nine-argument call of a dependent type's member or of a
function found by argument-dependent lookup is a call, not a lost launch. A recovery expression in a template (a
declaration that did not compile inside the function) is still KP902. In a launcher and in a header it includes,
with the launching helpers called through structured bindings (explicit template args and deduction)."""

from helpers import index_tree, make_registry, marker_line
from snippets import PORTS_H

from kernel_ports.checkers.base import Context
from kernel_ports.checkers.dtype_keys import DtypeKeys


ATTEND_H = r'''#pragma once
#include <tuple>
#include <utility>
#include "eng/ports.h"
namespace mlxcel {
using mlx::core::array;
using mlx::core::fast::CustomKernelFunction;
// type-dependent inputs, every input's dtype keyed
template <typename T>
std::pair<array, array> header_attend(CustomKernelFunction& kernel, const T& q, const T& k, const T& v, int rows,
                                      int cols, int heads, float scale, bool causal) {
  auto outs = kernel({q, k, v}, {q.shape(), q.shape()}, {q.dtype(), q.dtype()}, {rows, cols, heads},  // @header-tmpl
                     {32, 1, 1}, {{"Tq", q.dtype()}, {"Tk", k.dtype()}, {"Tv", v.dtype()}, {"CAUSAL", causal}},
                     std::nullopt, false, {});
  (void)scale;
  return {outs[0], outs[1]};
}
// value-dependent template args only: Clang types this launch in the pattern
template <int BLOCK>
array header_block(CustomKernelFunction& kernel, const array& x) {
  return kernel({x}, {x.shape()}, {x.dtype()}, {BLOCK, 1, 1}, {BLOCK, 1, 1}, {{"T", x.dtype()}, {"BLOCK", BLOCK}},  // @header-vdep
                std::nullopt, false, {})[0];
}
// a member function of a class template whose template args name no dtype
template <typename T>
struct HeaderRunner {
  CustomKernelFunction& kernel;
  array run(const T& x) {
    return kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"ROWS", 4}}, std::nullopt, false, {})[0];  // @header-member-nokey
  }
};
// a generic lambda, keyed
inline array header_generic(CustomKernelFunction& kernel, const array& x) {
  auto run = [&](const auto& a) {
    return kernel({a}, {a.shape()}, {a.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", a.dtype()}}, std::nullopt, false, {})[0];  // @header-lambda
  };
  return run(x);
}
// the kernel and its dtype key named through function templates
template <typename T> CustomKernelFunction& kernel_for();
template <typename T> mlx::core::Dtype dtype_for();
template <typename T>
array header_kernel_for(const array& x) {
  auto& kernel = kernel_for<T>();
  return kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", dtype_for<T>()}}, std::nullopt, false, {})[0];  // @header-kernel-for
}
template <typename T>
array header_kernel_call(const T& x) {
  return kernel_for<T>()({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", x.dtype()}}, std::nullopt, false,  // @header-kernel-call
                         {})[0];
}
// a dependent base: the kernel member is found only where the template is instantiated
struct KernelHolderBase {
  CustomKernelFunction& kernel_;
};
template <typename Base>
struct BasedRunner : Base {
  array run(const array& x) {
    return this->kernel_({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"ROWS", 8}}, std::nullopt, false, {})[0];  // @header-base-nokey
  }
};
inline array header_caller(CustomKernelFunction& kernel, const array& q) {
  auto [out, state] = header_attend<array>(kernel, q, q, q, 1, 2, 3, 0.5f, true);  // @header-call
  return out + state;
}
}  // namespace mlxcel
'''

ATTEND_CPP = r'''#include "eng/attend.h"
namespace mlxcel {
// the template args depend on a template parameter, and none is a dtype
template <typename Scale>
std::pair<array, array> scaled_attend(CustomKernelFunction& kernel, const array& q, const array& k, const array& v,
                                      int rows, int cols, int heads, Scale scale, bool causal) {
  auto outs = kernel({q, k, v}, {q.shape(), q.shape()}, {q.dtype(), q.dtype()}, {rows, cols, heads},  // @launcher-nokey
                     {32, 1, 1}, {{"SCALE", scale}, {"CAUSAL", causal}}, std::nullopt, false, {});
  return {outs[0], outs[1]};
}
template <typename T>
std::pair<array, array> typed_attend(CustomKernelFunction& kernel, const T& q, const T& k, const T& v, int rows,
                                     int cols, int heads, float scale, bool causal) {
  auto outs = kernel({q, k, v}, {q.shape(), q.shape()}, {q.dtype(), q.dtype()}, {rows, cols, heads},  // @launcher-tmpl
                     {32, 1, 1}, {{"Tq", q.dtype()}, {"Tk", k.dtype()}, {"Tv", v.dtype()}}, std::nullopt, causal, {});
  (void)scale;
  return {outs[0], outs[1]};
}
template <typename T>
struct LauncherRunner {
  CustomKernelFunction& kernel;
  array run(const T& x) const;
};
template <typename T>
array LauncherRunner<T>::run(const T& x) const {
  return kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", x.dtype()}}, std::nullopt, false, {})[0];  // @launcher-member
}
array launcher_generic(CustomKernelFunction& kernel, const array& x) {
  auto run = [&](auto a) {
    return kernel({a}, {a.shape()}, {a.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"ROWS", 2}}, std::nullopt, false, {})[0];  // @launcher-lambda-nokey
  };
  return run(x);
}
// a recovery expression in a template: `Missing` is declared nowhere
template <typename T>
array launcher_broken(CustomKernelFunction& kernel, const T& x) {
  Missing plan;
  return kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", x.dtype()}}, std::nullopt, false, {})[0];  // @launcher-broken
}
template <typename T>
array dependent_caller(CustomKernelFunction& kernel, const T& q) {
  auto [out, state] = typed_attend(kernel, q, q, q, 1, 2, 3, 0.5f, false);  // @launcher-dependent-call
  return out + state;
}
// nine-argument calls Clang resolves at instantiation: a member of a dependent type, a function found by
// argument-dependent lookup; and the first again where an error inside the function may be why it is dependent
template <typename Layer>
array layer_caller(Layer& layer, const array& q) {
  auto [out, state] = layer.step(q, q, q, 1, 2, 3, 4, 0.5f, false);  // @launcher-member-call
  return out + state;
}
template <typename T>
array adl_caller(const T& q) {
  auto [out, state] = found_by_adl(q, q, q, 1, 2, 3, 4, 0.5f, false);  // @launcher-adl-call
  return out + state;
}
template <typename Layer>
array broken_caller(Layer& layer, const array& q) {
  Missing plan;
  auto [out, state] = layer.step(q, q, q, 1, 2, 3, 4, 0.5f, false);  // @launcher-broken-call
  return out + state;
}
array launcher(CustomKernelFunction& kernel, const array& q) {
  auto [out, state] = scaled_attend<float>(kernel, q, q, q, 1, 2, 3, 0.5f, true);  // @launcher-call-explicit
  auto [o2, s2] = typed_attend(kernel, q, q, q, 1, 2, 3, 0.5f, false);  // @launcher-call-deduced
  return out + state + o2 + s2 + dependent_caller(kernel, q) + header_caller(kernel, q);
}
}  // namespace mlxcel
'''

TREE = {"src/eng/ports.h": PORTS_H, "src/eng/attend.h": ATTEND_H, "src/eng/attend.cpp": ATTEND_CPP}
H, CPP = "src/eng/attend.h", "src/eng/attend.cpp"

LAUNCHES = {(H, "header-tmpl"), (H, "header-vdep"), (H, "header-member-nokey"), (H, "header-lambda"),
            (H, "header-kernel-for"), (H, "header-kernel-call"), (H, "header-base-nokey"), (CPP, "launcher-nokey"), (CPP, "launcher-tmpl"), (CPP, "launcher-member"),
            (CPP, "launcher-lambda-nokey")}
NO_KEY = {(H, "header-member-nokey"), (H, "header-base-nokey"), (CPP, "launcher-nokey"), (CPP, "launcher-lambda-nokey")}
CALLS = {(H, "header-call"), (CPP, "launcher-dependent-call"), (CPP, "launcher-call-explicit"),
         (CPP, "launcher-call-deduced"), (CPP, "launcher-member-call"), (CPP, "launcher-adl-call")}


def _at(path, marker):
    return path, marker_line(TREE[path], marker)


def _dtype_findings(tmp_path, idx):
    """KP201/KP202 on the index: the kernels arrive as parameters, so each launch is judged as if it may run on a
    dtype-blind backend."""
    reg = make_registry(tmp_path, include_dirs=("src",))
    return list(DtypeKeys().check(Context(reg, idx, None)))


def test_dependent_launches_are_confirmed_and_a_recovery_is_not(tmp_path):
    idx = index_tree(tmp_path, TREE)
    lost = {(u.loc.path, u.loc.line): u for u in idx.unconfirmed}
    # negative controls: a launch, and a nine-argument call, in a template with a Clang error inside: still KP902
    assert set(lost) == {_at(CPP, "launcher-broken"), _at(CPP, "launcher-broken-call")}, idx.unconfirmed
    assert "could not type this kernel launch" in lost[_at(CPP, "launcher-broken")].reason
    # every launch in a template pattern is an invocation, in the header and in the launcher
    assert {(i.loc.path, i.loc.line) for i in idx.invocations} == {_at(p, m) for p, m in LAUNCHES}
    # the launching helpers called through structured bindings are confirmed calls, not lost candidates
    for path, marker in CALLS:
        assert _at(path, marker) not in lost


def test_dependent_dtype_keys_are_read(tmp_path):
    idx = index_tree(tmp_path, TREE)
    by_place = {(i.loc.path, i.loc.line): i for i in idx.invocations}
    tmpl = by_place[_at(CPP, "launcher-tmpl")]
    keys = {e.name: e for e in tmpl.template_args}
    assert all(keys[n].is_dtype and keys[n].source_input == s for n, s in (("Tq", "q"), ("Tk", "k"), ("Tv", "v")))
    assert tmpl.template_args_resolved and not tmpl.unresolved
    lam = by_place[_at(H, "header-lambda")]
    assert [(e.name, e.is_dtype, e.source_input) for e in lam.template_args] == [("T", True, "a")]
    (named,) = by_place[_at(H, "header-kernel-for")].template_args
    assert named.is_dtype and named.source_input is None and not named.constant
    # an entry whose type depends on a template parameter is said to, not blamed on a declaration that failed
    scaled = by_place[_at(CPP, "launcher-nokey")]
    assert not scaled.template_args_resolved
    assert any("`scale` depends on a template parameter" in why for why in scaled.unresolved), scaled.unresolved
    assert not any("did not compile" in why for why in scaled.unresolved)


def test_dependent_launches_are_judged(tmp_path):
    idx = index_tree(tmp_path, TREE)
    findings = _dtype_findings(tmp_path, idx)
    kp201 = {(f.path, f.line) for f in findings if f.rule == "KP201"}
    # negative controls: a dependent launch naming no input dtype, in a header and in the launcher
    assert kp201 == {_at(p, m) for p, m in NO_KEY}, findings
    # quiet controls: the dependent launches whose keys name their inputs' dtypes
    quiet = {_at(p, m) for p, m in LAUNCHES - NO_KEY}
    assert not [f for f in findings if (f.path, f.line) in quiet], findings
