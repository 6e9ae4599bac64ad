"""The sample engine end to end, the cache, and the fail-closed paths (KP901/KP902)."""

import time

from helpers import files_under, make_registry, write_tree
from kernel_ports.index import build_index


def test_every_table_slot_resolves_to_factory_calls(engine_index, engine_registry):
    assert engine_index.unanalyzable == [] and engine_index.unconfirmed == []
    names = {t.name for t in engine_index.port_tables}
    assert names == {k.table for k in engine_registry.kernels}
    for t in engine_index.port_tables:
        kernel = engine_registry.kernel_for_table(t.name)
        for backend, slot in t.slots.items():
            assert (slot is None) == (kernel.port(backend) is None), (t.name, backend)
            if slot is not None:
                assert slot.accessor == kernel.port(backend)
                assert slot.resolved and {f.backend for f in slot.factory_calls} == {backend}, (t.name, backend)
        assert t.rocm_any_wave_size == kernel.rocm_any_wave_size


def test_every_selector_call_resolves_to_registry_tables(engine_index, engine_registry):
    for s in engine_index.selector_calls:
        assert "unknown" not in s.tables
        for table in s.tables:
            k = engine_registry.kernel_for_table(table)
            assert (s.entry_point, s.fallback) in {(d.entry_point, d.fallback) for d in k.dispatch}


def test_every_invocation_resolves_to_tables_and_args(engine_index):
    assert engine_index.invocations
    for inv in engine_index.invocations:
        assert inv.selector_calls and "unknown" not in inv.tables, inv.loc
        assert inv.template_args_resolved and inv.template_args, inv.loc
        assert all(e.name for e in inv.template_args)


def test_predicates_and_backend_tests(engine_index, engine_registry):
    for k in engine_registry.kernels:
        for p in k.predicates:
            (pred,) = [x for x in engine_index.predicates if x.name == p]
            assert k.table in pred.tables and not pred.backend_queries
    helpers = set(engine_registry.conventions.helper_files)
    for b in engine_index.backend_tests:
        assert b.loc.path in helpers or b.origin == "compile_time", b


def test_rust_and_seams(engine_index):
    assert engine_index.rust_gates
    assert any(s.language == "rust" for s in engine_index.seam_calls)
    assert any(s.language == "cpp" and s.is_declaration for s in engine_index.seam_calls)


def test_warm_cache_reuses_every_parse(engine_index, engine_registry):
    t0 = time.perf_counter()
    warm = build_index(engine_registry, files_under(engine_registry.root), cache_dir=engine_index._test_cache_dir)
    elapsed = time.perf_counter() - t0
    assert all(q.cached for q in warm.parse_quality)
    assert warm.to_json() == {**engine_index.to_json(), "files": warm.to_json()["files"]}
    assert elapsed < 5  # generous: the real budget is a benchmark, not a test


MISMATCH_API = r'''#pragma once
#include <functional>
#include <string>
#include <vector>
namespace mlx::core {
struct Dtype { int v; };
inline constexpr Dtype float32{0};
class array { public: array(float); Dtype dtype() const; };
namespace fast {
// one parameter short of MLX's nine: every launch below fails to type
using CustomKernelFunction = std::function<std::vector<array>(const std::vector<array>&, int, int, int, int, int, int, bool)>;
CustomKernelFunction metal_kernel(const std::string& name, const std::vector<std::string>& in,
                                  const std::vector<std::string>& out, const std::string& source);
}
}
'''

MISMATCH_CPP = r'''#include "api.h"
using namespace mlx::core;
std::vector<array> run(fast::CustomKernelFunction& k, const array& x) {
  return k({x}, 1, 2, 3, 4, 5, 6, false, 7);
}
'''


def test_stub_mismatch_is_unconfirmed(tmp_path):
    write_tree(tmp_path, {"src/api.h": MISMATCH_API, "src/run.cpp": MISMATCH_CPP})
    reg = make_registry(tmp_path, include_dirs=("src",))
    idx = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False)
    assert idx.invocations == []
    (u,) = idx.unconfirmed
    assert (u.kind, u.loc.path, u.loc.line) == ("invocation", "src/run.cpp", 4)


UNDECLARED_ARG_CPP = r'''#include <optional>
#include "mlx/mlx.h"
// `Wrapped` comes from a header the tree does not have: the dtype local and
// the launch that passes it cannot be typed, but the kernel variable can.
mlx::core::fast::CustomKernelFunction& pick_kernel();
mlx::core::array launch_wrapped(const mlx::core::array& x, const Wrapped& w) {
  auto& kernel = pick_kernel();
  auto dt = w.data.dtype();
  return kernel({x}, {x.shape()}, {dt}, {1, 1, 1}, {1, 1, 1}, {{"T", dt}}, std::nullopt, false, {})[0];  // @lost
}
mlx::core::array launch_plain(const mlx::core::array& x) {
  auto& kernel = pick_kernel();
  return kernel({x}, {x.shape()}, {x.dtype()}, {1, 1, 1}, {1, 1, 1}, {{"T", x.dtype()}}, std::nullopt, false, {})[0];  // @kept
}
'''


def test_launch_whose_arguments_do_not_type_is_unconfirmed(tmp_path):
    write_tree(tmp_path, {"src/run.cpp": UNDECLARED_ARG_CPP})
    reg = make_registry(tmp_path)
    idx = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False)
    line = lambda m: next(i for i, s in enumerate(UNDECLARED_ARG_CPP.splitlines(), 1) if f"@{m}" in s)  # noqa: E731
    assert [i.loc.line for i in idx.invocations] == [line("kept")]
    (u,) = idx.unconfirmed
    assert (u.kind, u.name, u.loc.line) == ("invocation", "kernel", line("lost"))
    assert "could not type this kernel launch" in u.reason


UNTYPED_KEY_CPP = r'''#include <optional>
#include <string>
#include <utility>
#include <vector>
#include "mlx/mlx.h"
mlx::core::fast::CustomKernelFunction& pick_kernel();
mlx::core::array launch_keyed(const mlx::core::array& x, const Wrapped& w) {
  auto& kernel = pick_kernel();
  auto dt = w.data.dtype();
  std::vector<std::pair<std::string, mlx::core::fast::TemplateArg>> args = {{"T", dt}, {"N", 4}};
  args.push_back({"U", w.other.dtype()});  // @dropped
  return kernel({x}, {x.shape()}, {mlx::core::float32}, {1, 1, 1}, {1, 1, 1}, args, std::nullopt, false, {})[0];
}
'''


def test_untyped_template_args_are_marked_incomplete(tmp_path):
    write_tree(tmp_path, {"src/keyed.cpp": UNTYPED_KEY_CPP})
    reg = make_registry(tmp_path)
    idx = build_index(reg, files_under(tmp_path), jobs=1, use_cache=False)
    (inv,) = idx.invocations
    entries = {e.name: e for e in inv.template_args}
    assert entries["T"].untyped and not entries["T"].is_dtype and not entries["N"].untyped
    assert "U" not in entries  # the push_back did not compile: it is not in the AST at all
    assert not inv.template_args_resolved
    assert any("could not type `dt`" in w for w in inv.unresolved)
    assert any("inside launch_keyed (first at line 7" in w for w in inv.unresolved), inv.unresolved


def test_parser_crash_and_hang_are_unanalyzable(tmp_path, monkeypatch):
    body = '#include "mlx/mlx.h"\nauto k = mlx::core::fast::metal_kernel("k", {}, {}, "");\n'
    write_tree(tmp_path, {"src/a.cpp": body, "src/b.cpp": body, "src/c.cpp": body})
    reg = make_registry(tmp_path)
    monkeypatch.setenv("KERNEL_PORTS_FE_FAULT", "src/a.cpp=crash;src/b.cpp=hang")
    # the hang is cut at the timeout; it must leave time for c.cpp's prelude and parse on a loaded machine (the
    # suite runs on two workers)
    idx = build_index(reg, files_under(tmp_path), jobs=2, use_cache=False, timeout=10)
    reasons = dict(idx.unanalyzable)
    assert reasons["src/a.cpp"] == "crash: the parser process exited with code 139 in configuration default"
    assert reasons["src/b.cpp"].startswith("timeout: the parser timed out after 10 s in configuration default")
    assert "src/c.cpp" not in reasons and [f.loc.path for f in idx.factory_calls] == ["src/c.cpp"]
