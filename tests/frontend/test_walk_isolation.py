"""No exception loses a file: the crash a function used as a value inside an unresolved call caused, and a
failure while walking one declaration reported at it while the rest of the file is judged."""

from pathlib import Path

from helpers import make_registry, write_tree
from kernel_ports.frontend import clang
from tests.frontend.test_prelude import DIRECT

# `h(t, scale)` is a dependent call Clang cannot resolve inside the template: its cursor references nothing, and
# `scale` (a function used as a value) was compared with that None (clang_equalCursors raised ArgumentError).
VALUE_IN_UNRESOLVED_CALL = DIRECT.replace("namespace eng {\n", r'''namespace eng {
int scale(int x) { return 2 * x; }
template <typename T>
int apply(T t) {
  return h(t, scale);
}
''', 1)


def _parse(tmp_path, text, rel="src/k.cpp"):
    write_tree(tmp_path, {rel: text})
    reg = make_registry(tmp_path)
    conf = reg.compile.configurations[0]
    job = clang.ParseJob(
        abspath=str(tmp_path / rel), relpath=rel, configuration=conf.name,
        args=tuple(clang.build_args(reg, conf, rel)), root=str(Path(reg.root)),
        project_files=frozenset({rel}), conventions=clang.Conventions.from_registry(reg))
    return clang.parse_translation_unit(job)


def test_a_function_used_as_a_value_in_an_unresolved_call_does_not_crash_the_walk(tmp_path):
    res = _parse(tmp_path, VALUE_IN_UNRESOLVED_CALL)
    assert res.ok, res.error
    assert [fc.kernel_name for fc in res.factory_calls] == ["k"]
    assert len(res.invocations) == 1
    assert not [u for u in res.untyped if u[3] == "walk_failure"]


def test_a_failing_declaration_is_reported_at_it_and_the_rest_is_judged(tmp_path, monkeypatch):
    real = clang.walk.Walk.function

    def failing(self, c):
        if c.spelling == "get_k":
            raise ValueError("injected walk failure")
        return real(self, c)

    monkeypatch.setattr(clang.walk.Walk, "function", failing)
    res = _parse(tmp_path, VALUE_IN_UNRESOLVED_CALL)
    assert res.ok
    failures = [u for u in res.untyped if u[3] == "walk_failure"]
    assert len(failures) == 1
    path, line, _col, _kind, name, reason = failures[0]
    assert (path, line, name) == ("src/k.cpp", 8, "eng::get_k")
    assert "ValueError: injected walk failure" in reason
    assert len(res.invocations) == 1  # the function after it was still walked
