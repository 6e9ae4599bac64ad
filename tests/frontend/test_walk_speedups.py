"""The Clang walk's faster cursor accessors give exactly what the bindings' own give."""

from helpers import write_tree
from kernel_ports.frontend import clang

SRC = r'''#include <vector>
namespace eng {
struct S { int a = 1; int get() const { return a; } };
template <class T> T twice(T x) { return x + x; }
int f(const std::vector<int>& v) {
  int n = 0;
  for (int x : v) { n += twice(x) > 2 ? S{}.get() : [&] { return n; }(); }
  switch (n) { case 1: return 2; default: break; }
  return n;
}
}  // namespace eng
'''


def _preorder(cursor, children, kind):
    out, stack = [], [cursor]
    while stack:
        c = stack.pop()
        ext = c.extent
        out.append((kind(c), c.spelling, ext.start.offset, ext.end.offset))
        stack.extend(reversed(list(children(c))))
    return out


def test_children_and_kinds_match_the_bindings(tmp_path):
    write_tree(tmp_path, {"f.cpp": SRC})
    ci = clang.cindex()
    tu = ci.Index.create().parse(str(tmp_path / "f.cpp"), args=["-x", "c++", "-std=c++20"])
    top = [c for c in tu.cursor.get_children() if c.location.file is not None and c.location.file.name.endswith("f.cpp")]
    assert top
    orig_children, orig_kind, _ = ci.Cursor._kp_bindings
    for c in top:
        fast = _preorder(c, lambda x: x.get_children(), lambda x: x.kind)
        slow = _preorder(c, lambda x: orig_children(x), lambda x: orig_kind.fget(x))
        assert len(fast) > 30 and fast == slow
    read = top[0].kind
    assert top[0].__dict__.get("kind") is read  # kept on the cursor once read: later asks are an attribute


def test_children_remembered_during_a_walk_are_the_same_and_go_with_it(tmp_path):
    write_tree(tmp_path, {"f.cpp": SRC})
    ci = clang.cindex()
    tu = ci.Index.create().parse(str(tmp_path / "f.cpp"), args=["-x", "c++", "-std=c++20"])
    top = [c for c in tu.cursor.get_children() if c.location.file is not None and c.location.file.name.endswith("f.cpp")]
    plain = [_preorder(c, lambda x: x.get_children(), lambda x: x.kind) for c in top]

    def child_objects():
        out, stack = [], list(top)
        while stack:
            kids = list(stack.pop().get_children())
            out += kids
            stack += kids
        return out

    # the control: without the memory, every listing makes new cursor objects
    a, b = child_objects(), child_objects()
    assert not set(map(id, a)) & set(map(id, b))
    clang.toolchain.remember_children(tu, True)
    try:
        again = [_preorder(c, lambda x: x.get_children(), lambda x: x.kind) for c in top]
        first, second = child_objects(), child_objects()
    finally:
        clang.toolchain.remember_children(tu, False)
    assert again == plain
    assert len(first) > 30 and [id(c) for c in first] == [id(c) for c in second]  # listed once, handed out again
    assert not hasattr(tu, "_kp_children")  # gone with the walk (its cursors would keep the unit alive)


def test_usrs_remembered_during_a_walk_are_the_bindings_and_go_with_it(tmp_path):
    """During a walk each node's USR is asked of libclang once (by the node's bytes, over every cursor object of
    it: each reference's ``referenced`` is another), and is the bindings' USR; the memory goes with the walk."""
    write_tree(tmp_path, {"f.cpp": SRC})
    ci = clang.cindex()
    tu = ci.Index.create().parse(str(tmp_path / "f.cpp"), args=["-x", "c++", "-std=c++20"])
    _, _, orig_usr = ci.Cursor._kp_bindings
    nodes, stack = [], [c for c in tu.cursor.get_children()
                        if c.location.file is not None and c.location.file.name.endswith("f.cpp")]
    while stack:
        c = stack.pop()
        nodes.append(c)
        if c.referenced is not None:
            nodes.append(c.referenced)
        stack.extend(c.get_children())
    clang.toolchain.remember_children(tu, True)
    try:
        fast = [c.get_usr() for c in nodes]
        asked = dict(tu._kp_usrs)
    finally:
        clang.toolchain.remember_children(tu, False)
    slow = [orig_usr(c) for c in nodes]
    assert fast == slow and sum(1 for u in slow if u) > 10
    # each node asked once and remembered by its bytes (a node met more than once was asked once)
    assert set(asked) == {bytes(c) for c in nodes} and len(asked) < len(nodes)
    assert not hasattr(tu, "_kp_usrs")  # gone with the walk
    # outside a walk nothing is remembered, and the answers are the same
    assert [c.get_usr() for c in nodes] == slow and not hasattr(tu, "_kp_usrs")


def test_children_memory_keeps_only_the_lists_asked_for_lately(tmp_path, monkeypatch):
    """The walk's memory of children lists holds two generations of CHILDREN_KEPT lists, not the whole unit's: a
    list asked for again soon is the one handed out before; one asked for long ago is listed again, the same."""
    write_tree(tmp_path, {"f.cpp": SRC})
    ci = clang.cindex()
    tu = ci.Index.create().parse(str(tmp_path / "f.cpp"), args=["-x", "c++", "-std=c++20"])
    top = [c for c in tu.cursor.get_children() if c.location.file is not None and c.location.file.name.endswith("f.cpp")]
    plain = [_preorder(c, lambda x: x.get_children(), lambda x: x.kind) for c in top]
    # (a cursor that cannot have children is answered without a list)
    listed = sum(1 for p in plain for kind, *_ in p if kind.value not in ci.Cursor._kp_childless)

    def remembered(limit):
        monkeypatch.setattr(clang.toolchain.ChildrenMemory.__init__, "__defaults__", (limit,))
        clang.toolchain.remember_children(tu, True)
        try:
            again = [_preorder(c, lambda x: x.get_children(), lambda x: x.kind) for c in top]
            return again, len(tu._kp_children)
        finally:
            clang.toolchain.remember_children(tu, False)

    # the control: a memory larger than the unit keeps every list the walk asked for
    whole, kept_whole = remembered(10 ** 6)
    assert whole == plain and kept_whole == listed > 40
    # bounded: at most two generations of 8 lists, and the children are the same
    bounded, kept = remembered(8)
    assert bounded == plain and kept <= 16
    # a list asked for again while it is young is the same list of the same cursor objects
    clang.toolchain.remember_children(tu, True)
    try:
        a = list(top[-1].get_children())
        b = list(top[-1].get_children())
        assert a and [id(x) for x in a] == [id(x) for x in b]
    finally:
        clang.toolchain.remember_children(tu, False)


CHILDLESS_SRC = r'''namespace ns { struct B { int m; B() : m(0) {} }; template <class T> struct W { T t; }; int g(int); int g(double); }
using ns::g;
int h(int x) {
  ns::W<int> w{1};
  auto f = [x] { return x; };
  const char* s = "s";
  char c = 'c';
  bool b = true;
  void* p = nullptr;
  double d = 1.5;
  if (x) goto done;
  x = g(2) + f() + w.t + (s ? c : 0) + (b ? 1 : 0) + (p ? 1 : 0) + static_cast<int>(d);
done:
  return x;
}
template <class T> int k(T t) { return g(t); }
'''


def test_the_cursors_answered_as_childless_have_no_children_in_libclang(tmp_path):
    """The kinds the fast ``get_children`` answers without asking libclang (references, literals) have no children
    when libclang is asked, in a unit where each of them occurs."""
    write_tree(tmp_path, {"f.cpp": CHILDLESS_SRC})
    ci = clang.cindex()
    tu = ci.Index.create().parse(str(tmp_path / "f.cpp"), args=["-x", "c++", "-std=c++20"])
    orig_children, orig_kind, _ = ci.Cursor._kp_bindings
    met, stack = {}, [tu.cursor]
    while stack:
        c = stack.pop()
        kids = list(orig_children(c))
        kind = orig_kind.fget(c)
        if kind.value in ci.Cursor._kp_childless:
            met[kind.name] = met.get(kind.name, 0) + len(kids)
        stack += kids
    K = ci.CursorKind
    expected = {K.TYPE_REF, K.TEMPLATE_REF, K.NAMESPACE_REF, K.MEMBER_REF, K.LABEL_REF, K.OVERLOADED_DECL_REF,
                K.VARIABLE_REF, K.INTEGER_LITERAL, K.FLOATING_LITERAL, K.STRING_LITERAL, K.CHARACTER_LITERAL,
                K.CXX_BOOL_LITERAL_EXPR, K.CXX_NULL_PTR_LITERAL_EXPR}
    assert {k.name for k in expected} <= set(met), f"the unit lacks {sorted({k.name for k in expected} - set(met))}"
    assert all(n == 0 for n in met.values()), met
