"""A unit is parsed without the implicit instantiations Clang makes at its end (``PARSE_INCOMPLETE``).

The walk reads the code as written and never an instantiation, so the facts of a template are the same either
way; what the option gives up is an error that only an instantiation shows. These tests pin both sides: a
template's launch and factory call are still found, an error in the written code is still counted, and an
error inside an instantiated body is not.
"""

from tests.frontend.test_walk_isolation import _parse

TEMPLATE_LAUNCHER = r'''#include "mlx/mlx.h"
namespace eng {
mlx::core::fast::CustomKernelFunction& get_k() {
  static auto k = mlx::core::fast::metal_kernel("k", {"x"}, {"out"}, "out[0] = x[0];");
  return k;
}
template <typename T>
mlx::core::array launch(const mlx::core::array& x, T scale) {
  BODY_ERROR
  return get_k()({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", x.dtype()}}, std::nullopt, false, {})[0];
}
mlx::core::array run(const mlx::core::array& x) { WRITTEN_ERROR return launch(x, 2); }
}  // namespace eng
'''


def _errors(res, rel="src/k.cpp"):
    return res.diag_by_file.get(rel, (0, 0))[1]


def _source(body_error="", written_error=""):
    out = TEMPLATE_LAUNCHER.replace("BODY_ERROR", body_error).replace("WRITTEN_ERROR", written_error)
    assert "BODY_ERROR" not in out and "WRITTEN_ERROR" not in out
    return out


def test_a_template_launcher_is_read_as_written(tmp_path):
    res = _parse(tmp_path, _source())
    assert res.ok, res.error
    assert _errors(res) == 0
    assert [fc.kernel_name for fc in res.factory_calls] == ["k"]
    assert len(res.invocations) == 1


def test_an_error_in_the_written_code_is_counted(tmp_path):
    res = _parse(tmp_path, _source(written_error="undeclared_name();"))
    assert res.ok, res.error
    assert _errors(res) == 1
    assert len(res.invocations) == 1


def test_an_error_only_an_instantiation_shows_is_not_made(tmp_path):
    # `scale.size()` is valid as written (scale's type depends on T) and wrong for T = int, which only the
    # instantiation launch<int> would find
    res = _parse(tmp_path, _source(body_error="(void)scale.size();"))
    assert res.ok, res.error
    assert _errors(res) == 0
    assert [fc.kernel_name for fc in res.factory_calls] == ["k"]
    assert len(res.invocations) == 1
