"""Unread bodies given to Clang blank (``focus.hidden_spans``, ``witness.hideable_body``, ``session.blanked_sources``).

A free-function body the focus leaves unread is blanked in the text Clang parses (lines and columns kept), unless
something outside it depends on its text: a deduced result type, constexpr or consteval, a directive or
``_Pragma`` inside. The facts are the same; what is lost is a Clang error inside such a body. A blank that Clang
does not confirm as the body of a function the walk left unread (the file changed since the witness read it,
or the witness misread it) is undone: the unit is parsed as written.
"""

from __future__ import annotations

import hashlib

from helpers import files_under, make_registry, write_tree

from kernel_ports.frontend import clang, focus
from kernel_ports.frontend import witness as wit
from kernel_ports.frontend.clang import session
from kernel_ports.index import build_index, plan

REL = "src/k.cpp"

LAUNCHER = r'''#include "mlx/mlx.h"
namespace eng {
mlx::core::fast::CustomKernelFunction make_k() {
  return mlx::core::fast::metal_kernel("k", {"x"}, {"out"}, "out[0] = x[0];");
}
int pad_rows(int n) { return n + PAD_ERROR; }
auto pad_auto() { return 3; }
int use_auto = pad_auto();
constexpr int pad_width() { return 4; }
int pad_table[pad_width()];
}  // namespace eng
'''


def _launcher(error: str) -> str:
    out = LAUNCHER.replace("PAD_ERROR", error)
    assert "PAD_ERROR" not in out
    return out


def _witnessed(text: str, reg):
    return wit.witness(REL, text.encode(), wit.WitnessNames.from_registry(reg))


def test_the_witness_marks_only_bodies_nothing_outside_depends_on():
    text = '''namespace eng {
int plain(int n) { return n; }
auto deduced() { return 1; }
decltype(auto) deduced_ref(int& n) { return (n); }
auto trailing() -> int { return 1; }
constexpr int evaluated() { return 2; }
consteval int immediate() { return 3; }
template <typename T> T templated(T x) { return x; }
int with_directive() {
#define LATER 1
  return 0;
}
int with_pragma() { _Pragma("clang diagnostic push") return 0; }
struct S { int f(); };
int S::f() { return 1; }
}
'''
    w = wit.witness(REL, text.encode(), wit.WitnessNames.from_registry(make_registry("/nonexistent")))
    spans = {d.name: d.body_span for d in w.definitions if d.kind == "function"}
    assert {n for n, s in spans.items() if s is not None} == {"plain", "templated"}
    a, b = spans["plain"]
    assert text.encode()[a:b] == b"{ return n; }"


def _unit_errors(index) -> int:
    return sum(q.errors for q in index.parse_quality if q.path == REL)


def test_an_error_inside_an_unread_body_is_not_counted_and_the_facts_stay(tmp_path):
    write_tree(tmp_path, {REL: _launcher("undeclared_name")})
    reg = make_registry(tmp_path)

    focused = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False)
    saved = plan.FOCUS
    plan.FOCUS = False
    try:
        full = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False)
    finally:
        plan.FOCUS = saved
    unread = sorted(i.name for i in focused.functions.values() if not i.body_walked)
    assert unread == ["pad_auto", "pad_rows", "pad_width"]
    assert _unit_errors(full) == 1  # the error is real: Clang finds it where it reads the body
    assert _unit_errors(focused) == 0
    assert [f.kernel_name for f in focused.factory_calls] == [f.kernel_name for f in full.factory_calls] == ["k"]


def test_bodies_clang_needs_are_given_as_written(tmp_path):
    # pad_auto's result type comes from its body, pad_width is evaluated for an array bound: both are left unread
    # by the walk (above) and blanked they would be errors (`int = void`, a bound that is not a constant)
    write_tree(tmp_path, {REL: _launcher("1")})
    reg = make_registry(tmp_path)

    index = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False)
    assert sorted(i.name for i in index.functions.values() if not i.body_walked) == ["pad_auto", "pad_rows", "pad_width"]
    assert _unit_errors(index) == 0


def _job(tmp_path, text: str, *, digest=None, spans=None):
    write_tree(tmp_path, {REL: text})
    reg = make_registry(tmp_path)
    w = _witnessed(text, reg)
    unread = focus.unread_bodies({REL: w}, focus.seeds(reg), focus.backend_queries(reg))
    hidden = focus.hidden_spans({REL: w}, unread)
    conf = reg.compile.configurations[0]
    path = str(tmp_path / REL)
    return clang.ParseJob(
        abspath=path, relpath=REL, configuration=conf.name, args=tuple(clang.build_args(reg, conf, REL)),
        root=str(reg.root), project_files=frozenset({REL}), conventions=clang.Conventions.from_registry(reg),
        unread_bodies=frozenset((REL, line, col) for line, col in unread.get(REL, ())),
        hidden_bodies=((REL, path, digest or hashlib.sha256(text.encode()).hexdigest(), spans or hidden[REL]),))


def _parses(monkeypatch) -> list:
    """What each parse of the unit was given: True with blanks, False as written."""
    calls = []
    real = session._parse_and_walk

    def recording(job, blanked):
        calls.append(bool(blanked))
        return real(job, blanked)

    monkeypatch.setattr(session, "_parse_and_walk", recording)
    return calls


def test_a_blanked_body_is_parsed_once(tmp_path, monkeypatch):
    calls = _parses(monkeypatch)
    res = clang.parse_translation_unit(_job(tmp_path, _launcher("undeclared_name")))
    assert res.ok, res.error
    assert calls == [True]
    assert res.diag_by_file.get(REL, (0, 0))[1] == 0


def test_a_file_changed_since_the_witness_read_it_is_parsed_as_it_is(tmp_path, monkeypatch):
    calls = _parses(monkeypatch)
    res = clang.parse_translation_unit(_job(tmp_path, _launcher("undeclared_name"), digest="0" * 64))
    assert calls == [False]
    assert res.diag_by_file.get(REL, (0, 0))[1] == 1


def test_a_blank_clang_does_not_confirm_is_undone(tmp_path, monkeypatch):
    # a span the witness would never write: the braces of an initialiser, which Clang reads as no function body;
    # blanked, the static_assert after it would fail
    text = _launcher("1") + "int pad_list[] = {1, 2, 3};\nstatic_assert(sizeof(pad_list) == 3 * sizeof(int), \"three\");\n"
    a = text.index("{1, 2, 3}")
    calls = _parses(monkeypatch)
    res = clang.parse_translation_unit(_job(tmp_path, text, spans=((a, a + len("{1, 2, 3}")),)))
    assert calls == [True, False]
    assert res.ok, res.error
    assert res.diag_by_file.get(REL, (0, 0))[1] == 0


def test_a_body_the_preprocessor_skips_needs_no_second_parse(tmp_path, monkeypatch):
    text = _launcher("1") + "#if 0\nint pad_off(int n) { return n; }\n#endif\n"
    job = _job(tmp_path, text)
    a = text.index("{ return n; }")
    assert (a, a + len("{ return n; }")) in job.hidden_bodies[0][3]
    calls = _parses(monkeypatch)
    res = clang.parse_translation_unit(job)
    assert res.ok, res.error
    assert calls == [True]


def test_lines_are_counted_as_clang_ends_them():
    text = b"a\r\nb\rc\nd"
    assert [session.line_of(text, text.index(ch)) for ch in b"abcd"] == [1, 2, 3, 4]
