"""What a function returns (``FunctionInfo.returned_statics``, read by the holder and getter joins): its own
``return`` statements, not those of a lambda written in its body."""

from tests.frontend.test_walk_isolation import _parse

SRC = r'''namespace eng {
struct Holder { int v; };
static Holder g_a;
static Holder g_b;
Holder& get_a() {
  auto other = []() -> Holder& { return g_b; };
  (void)other;
  return g_a;
}
Holder& pick(bool x) {
  if (x) return g_b;
  return g_a;
}
}  // namespace eng
'''


def _statics(res, name):
    (info,) = [f for f in res.functions if f.qualified_name == name]
    return [s[0] for s in info.returned_statics]


def test_a_lambdas_return_is_not_the_functions(tmp_path):
    res = _parse(tmp_path, SRC)
    assert res.ok, res.error
    assert _statics(res, "eng::get_a") == ["g_a"]


def test_every_return_of_the_function_is_read(tmp_path):
    res = _parse(tmp_path, SRC)
    assert sorted(_statics(res, "eng::pick")) == ["g_a", "g_b"]
