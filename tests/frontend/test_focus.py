"""The focus (frontend/focus.py): which free-function bodies the Clang walk leaves unread, and the proof that
leaving them unread loses nothing: on a benchmark-like tree (sample engine + padded launchers + constructs that
reach interesting code only through names), the focused index has the same facts, the same findings and the same
call graph out of every function it walked as a full walk."""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import pytest

from kernel_ports.index import build_index, plan
from kernel_ports.checkers import Context, all_rules
from kernel_ports.frontend import focus
from kernel_ports.frontend import witness as wit
from kernel_ports.registry.load import load_registry
from kernel_ports.scope import resolve_scope

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "benchmarks"))
from generate import generate  # noqa: E402

SEEDS = frozenset({"metal_kernel", "select_kernel_port", "has_kernel_port", "KernelPorts", "gpu_kernel_backend",
                   "CustomKernelFunction"})
QUERIES = frozenset({"gpu_kernel_backend"})

HEADER = r'''#pragma once
namespace eng {
enum class Backend { None, Metal, Cuda };
Backend gpu_kernel_backend();
struct Shape { int rows = 0; int cols = 0; };
}
'''

SOURCE = r'''#include "eng.h"
#include <vector>
#define CHECKED(x) (x)
namespace eng {
static int g_mode = 0;
inline int padding(const std::vector<int>& d) { int rows = 1; for (int v : d) rows *= v; return rows; }  // @padding
inline int shape_rows(const Shape& s) { return s.rows; }  // @member
inline int local_rows() { int rows = 3; return rows; }  // @local
void init_mode() { g_mode = static_cast<int>(gpu_kernel_backend()); }
bool uses_mode_two() { return g_mode == 2; }  // @global
bool compare(Backend b) { return b == Backend::Cuda; }  // @enum
int callee_of_interesting() { return 4; }  // @callee
int caller() { return callee_of_interesting() + static_cast<int>(gpu_kernel_backend()); }
int with_macro() { return CHECKED(1); }  // @macro
bool feature_available() { return true; }
bool asks() { return feature_available(); }  // @available
int nine(int, int, int, int, int, int, int, int, int);
int calls_nine() { return nine(1, 2, 3, 4, 5, 6, 7, 8, 9); }  // @nine
int uses_caller() { return caller(); }  // @calls
int main_rows() { Shape s; s.rows = shape_rows(s); return local_rows() + padding({1}); }  // @main
}
'''


def _line(marker):
    return next(i for i, text in enumerate(SOURCE.splitlines(), 1) if f"@{marker}" in text)


def _unread_names():
    names = wit.WitnessNames(factories={"metal_kernel": "metal"}, selector="select_kernel_port", has_port="has_kernel_port",
                             table_type="KernelPorts", backend_queries=frozenset({"gpu_kernel_backend"}), seams=frozenset(),
                             predicates=frozenset())
    witnessed = {"eng.h": wit.witness("eng.h", HEADER.encode(), names), "eng.cpp": wit.witness("eng.cpp", SOURCE.encode(), names)}
    unread = focus.unread_bodies(witnessed, SEEDS, QUERIES)
    lines = {line for line, _ in unread.get("eng.cpp", ())}
    return {m for m in ("padding", "member", "local", "global", "enum", "callee", "macro", "available", "nine", "calls", "main")
            if _line(m) in lines}


def test_what_is_left_unread():
    # padding and a local named like a field stay unread; `s.rows` is the field, but no interesting code names the
    # field, so that function stays unread too.  Everything reached by name from a query's value stays read: a global
    # the query flows into, the backend enum, a callee of an interesting function, a caller of one.  Macros,
    # `*_available` names and nine-argument calls (a witness candidate) keep a body read whatever it says.
    assert _unread_names() == {"padding", "member", "local", "main"}


# What a read function names is read; what else names that is read only when a value the checker follows may pass
# between them: through a followed function's parameters or result, or storage that can hold such a value.
CHANNELS = r"""#include "eng.h"
namespace mlx { namespace core { class array; } }
namespace eng {
struct Wrap { mlx::core::array inner; };
struct Held { int mode = 0; };
struct Derived : Held {};
static Held g_held;
static Derived g_derived;
int takes_int(int x) { return x + 1; }
int takes_wrap(const Wrap& w) { return (w.inner, 2); }
int interesting(const Wrap& w) { return takes_int(static_cast<int>(gpu_kernel_backend())) + takes_wrap(w); }
int passes_int() { return takes_int(3); }  // @int_sibling
int sibling(const Wrap& w) { return takes_wrap(w); }  // @sibling
int reads_inner(const Wrap& w) { return (w.inner, 1); }  // @inner
void keeps_mode() { g_held.mode = static_cast<int>(gpu_kernel_backend()); g_derived.mode = 2; }
bool tests_mode() { return g_held.mode == 2; }  // @field
int reads_derived() { return g_derived.mode; }  // @base
int names_wrap() { Wrap w; return sizeof(w); }  // @type
}
"""


def _unread_channels(extra: str = ""):
    names = wit.WitnessNames(factories={"metal_kernel": "metal"}, selector="select_kernel_port", has_port="has_kernel_port",
                             table_type="KernelPorts", backend_queries=frozenset({"gpu_kernel_backend"}), seams=frozenset(),
                             predicates=frozenset())
    witnessed = {"eng.h": wit.witness("eng.h", HEADER.encode(), names),
                 "ch.cpp": wit.witness("ch.cpp", CHANNELS.encode(), names),
                 "extra.h": wit.witness("extra.h", extra.encode(), names)}
    lines = {line for line, _ in focus.unread_bodies(witnessed, SEEDS, QUERIES).get("ch.cpp", ())}
    marked = {m: next(i for i, t in enumerate(CHANNELS.splitlines(), 1) if f"@{m}" in t)
              for m in ("sibling", "int_sibling", "inner", "field", "base", "type")}
    return {m for m, line in marked.items() if line in lines}


def test_what_passes_between_functions():
    # `takes_wrap` is read (an interesting function calls it), but it takes only what holds nothing the checker
    # follows (MLX's array, in a Wrap), so nothing it returns or tests can be such a value, and its other caller is
    # left unread. `takes_int` may be given a query's value and test it, which decides what its callers return: its
    # other caller is read. MLX's array member and the Wrap type named alone hold nothing followed either. An int
    # member a query's value is stored in is followed to its readers, and so is one a base class brings.
    assert _unread_channels() == {"sibling", "inner", "type"}
    # negative control: a project type spelled like MLX's `array` could be anything, so `inner` may hold a
    # followed value: its readers are read, and so is a caller of a function given a Wrap (naming the type alone
    # passes nothing)
    assert _unread_channels("namespace eng { struct array { int n = 0; }; }\n") == {"type"}


def test_the_words_of_storage():
    from kernel_ports.frontend.hip import cpp_parser

    defs, _ = wit.definitions(cpp_parser().parse(CHANNELS.encode()).root_node)
    by_name = {d.name: d for d in defs}
    assert by_name["Wrap"].storage == (("inner", ("array", "core", "mlx")),) and by_name["Wrap"].types == ("Wrap",)
    assert by_name["Derived"].storage[0][0] == ""  # the base class, kept as what the record inherits
    assert by_name["takes_int"].functions == ("takes_int",) and by_name["takes_int"].parameters == (("int",),)
    assert by_name["takes_wrap"].parameters == (("Wrap", "const"),)
    assert by_name["g_held"].storage == (("g_held", ("Held", "static")),)
    inert = focus.inert_storage(defs, {n for d in defs for n in d.declares})
    assert "inner" in inert and not {"mode", "g_held", "g_derived"} & inert


def _strip(doc):
    if isinstance(doc, dict):
        return {k: _strip(v) for k, v in doc.items() if k not in ("seconds", "cached")}
    if isinstance(doc, list):
        return [_strip(v) for v in doc]
    return doc


FOCUS_CASE = r'''#include <vector>
#include "mlx/mlx.h"
#include "turbo/gpu_backend.h"
namespace mlxcel {
static int g_focus_mode = 0;
inline int focus_padding(const std::vector<int>& d) { return d.empty() ? 0 : d.back(); }
void focus_init_mode() { g_focus_mode = static_cast<int>(gpu_kernel_backend()); }
bool focus_mode_two() { return g_focus_mode == 2; }  // @test
bool focus_param_two(int x) { return x == 2; }
bool focus_from_query() { return focus_param_two(static_cast<int>(gpu_kernel_backend())); }
bool focus_sibling() { return focus_param_two(3); }
struct FocusWrap { mlx::core::array inner; };
inline int focus_wrap_size(const FocusWrap& w) { return static_cast<int>(w.inner.size()); }
int focus_reads_wrap(const FocusWrap& w) { return focus_wrap_size(w) + static_cast<int>(gpu_kernel_backend()); }
int focus_wrap_sibling(const FocusWrap& w) { return focus_wrap_size(w); }
}  // namespace mlxcel
'''


@pytest.fixture(scope="module")
def both(tmp_path_factory):
    out = tmp_path_factory.mktemp("focus-tree")
    reg_path = generate(out / "tree", launchers=6, lines=220)
    case = out / "tree" / "engine" / "src/lib/mlx-cpp/turbo/focus_case.cpp"
    case.write_text(FOCUS_CASE)
    registry = load_registry(reg_path)
    scope = resolve_scope(registry)
    cache = out / "cache"  # shared: a unit with nothing left unread has the same key in both builds
    focused = build_index(registry, scope.files, jobs=2, cache_dir=cache)
    saved = plan.FOCUS
    plan.FOCUS = False
    try:
        full = build_index(registry, scope.files, jobs=2, cache_dir=cache)
    finally:
        plan.FOCUS = saved
    return registry, scope, focused, full


def test_focused_walk_leaves_padding_unread(both):
    _, _, focused, full = both
    unread = {info.name for info in focused.functions.values() if not info.body_walked}
    assert unread and all("shape_rule" in n or n in ("focus_padding", "focus_wrap_sibling") for n in unread), \
        sorted(unread)[:10]
    # it calls a read function that can be given nothing the checker follows; `focus_sibling` calls one that may
    # be given a query's value, whose test of it decides what its callers return
    assert "focus_wrap_sibling" in unread and "focus_sibling" not in unread
    assert all(info.body_walked for info in full.functions.values())


def test_same_facts(both):
    _, _, focused, full = both
    assert _strip(focused.to_json()) == _strip(full.to_json())
    lines = [i for i, t in enumerate(FOCUS_CASE.splitlines(), 1) if "@test" in t or "x == 2" in t]
    assert sorted(t.loc.line for t in focused.backend_tests if t.loc.path.endswith("focus_case.cpp")) == lines


def test_same_findings(both):
    registry, scope, focused, full = both

    def findings(index):
        ctx = Context(registry=registry, index=index, scope=scope)
        return sorted((f.rule, f.path, f.line, f.column, f.message) for rule in all_rules() for f in rule.check(ctx))

    assert findings(focused) == findings(full)


def test_same_functions_and_call_graph_from_what_was_walked(both):
    _, _, focused, full = both
    assert set(focused.functions) == set(full.functions)
    for usr, info in focused.functions.items():
        other = full.functions[usr]
        head = ("name", "qualified_name", "loc", "params", "template_params", "returns_ref", "returns_bool", "is_method_of")
        assert [getattr(info, f) for f in head] == [getattr(other, f) for f in head]
        if info.body_walked:
            assert dataclasses.replace(info, calls=[], factory_calls=[]) == dataclasses.replace(other, calls=[], factory_calls=[])
            assert set(focused.call_graph.successors(usr)) == set(full.call_graph.successors(usr))
    # what a walked function calls was walked too: no rule following the graph from it can miss anything
    for u, v in full.call_graph.edges:
        if u in focused.functions and focused.functions[u].body_walked and v in focused.functions:
            assert focused.functions[v].body_walked, (u, v)


# three launchers of this text (n = 0, 1, 2): a padding helper the focus leaves unread, and a kernel factory
PADDED_LAUNCHER = r'''#include <vector>
#include "mlx/mlx.h"
namespace eng {
inline int pad_%(n)s(const std::vector<int>& d) { return d.empty() ? 0 : d.back(); }
mlx::core::fast::CustomKernelFunction make_%(n)s() {
  return mlx::core::fast::metal_kernel("k%(n)s", {"x"}, {"out"}, "out[0] = x[0];");
}
}  // namespace eng
'''


def test_focus_after_one_file_changed_matches_a_fresh_build(tmp_path):
    """After an edit, the focus is decided again from the cached definitions of the unchanged files."""
    from helpers import files_under, make_registry, write_tree

    launcher = PADDED_LAUNCHER
    root = tmp_path / "tree"
    write_tree(root, {f"src/k{n}.cpp": launcher % {"n": n} for n in range(3)})
    reg = make_registry(root)

    def unread(cache):
        idx = build_index(reg, files_under(root), jobs=2, cache_dir=cache)
        return sorted(i.name for i in idx.functions.values() if not i.body_walked)

    assert unread(tmp_path / "c") == ["pad_0", "pad_1", "pad_2"]
    # k1's padding now calls a function of k0 that builds a kernel: it is read, the others still are not
    edited = (launcher % {"n": 1}).replace("namespace eng {\n", "namespace eng {\nmlx::core::fast::CustomKernelFunction make_0();\n")
    (root / "src/k1.cpp").write_text(edited.replace("d.back(); }", "d.back() + (make_0(), 0); }"))
    assert unread(tmp_path / "c") == unread(tmp_path / "fresh") == ["pad_0", "pad_2"]


def test_an_edit_that_changes_no_declaration_reuses_the_focus(tmp_path, monkeypatch):
    """A file whose witness result is what it was (a comment added where no declaration moves) reads the same to the
    focus: it is not decided again (its entry, index/focus_entry.py); an edit that changes what a body names is."""
    from helpers import files_under, make_registry, write_tree

    launcher = PADDED_LAUNCHER
    root = tmp_path / "tree"
    write_tree(root, {f"src/k{n}.cpp": launcher % {"n": n} for n in range(3)})
    reg = make_registry(root)
    decided = []
    real = plan._unread_bodies
    monkeypatch.setattr(plan, "_unread_bodies", lambda *a: decided.append(1) or real(*a))

    def unread(cache):
        idx = build_index(reg, files_under(root), jobs=2, cache_dir=cache)
        return sorted(i.name for i in idx.functions.values() if not i.body_walked)

    assert unread(tmp_path / "c") == ["pad_0", "pad_1", "pad_2"] and len(decided) == 1
    k1 = root / "src/k1.cpp"
    k1.write_text(k1.read_text() + "// a comment after the namespace\n")
    assert unread(tmp_path / "c") == ["pad_0", "pad_1", "pad_2"] and len(decided) == 1  # quiet control: reused
    # negative control: k1's padding now calls a function of k0 that builds a kernel; decided again, as fresh
    k1.write_text(k1.read_text().replace("namespace eng {\n", "namespace eng {\nmlx::core::fast::CustomKernelFunction make_0();\n")
                  .replace("d.back(); }", "d.back() + (make_0(), 0); }"))
    assert unread(tmp_path / "c") == ["pad_0", "pad_2"] and len(decided) == 2
    assert unread(tmp_path / "fresh") == ["pad_0", "pad_2"]
