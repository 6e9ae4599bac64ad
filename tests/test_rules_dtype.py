"""KP201/KP202: dtype keys per kernel launch.

Negative controls mutate a copy of the sample engine and expect the code at
the launch (the invocation's file and line). To keep the module fast, the
mutations are grouped into a few copies, each file of a copy carrying at most
one variant, and every copy is checked once (module fixtures share one parse
cache). Quiet controls sit in a copy of their own; the untouched engine is
checked as well.
"""

from __future__ import annotations

import json

import pytest

from kernel_ports import cli
from tests.mutate import REGISTRY_KEY, Mutation, describe, engine_copy, findings_at, run_copy

TURBO = "src/lib/mlx-cpp/turbo"
NORM = f"{TURBO}/fused_norm.cpp"
ROPE = f"{TURBO}/rope.cpp"
ACT = f"{TURBO}/activations.cpp"
ATT_H = f"{TURBO}/attention_launch.h"
KV = f"{TURBO}/kv_cache.cpp"
SAMPLING = f"{TURBO}/sampling.cpp"

# --- launch lines (the text that starts each launch, unique in its file) ---
NORM_LAUNCH = "std::vector<array> outputs = kernel(\n      {x, res, w, eps_array},"
ROPE_LAUNCH = "std::vector<array> outputs = kernel(\n      {x, pos, base_array},"
ACT_LAUNCH = "std::vector<array> outputs = kernel(\n      {gate, up_cast},"
ATT_LAUNCH = "std::vector<mlx::core::array> outputs = kernel("
KV_LAUNCH = "std::vector<array> outputs = kernel(\n      {cache, fresh, offset_array},"
TOP_K_LAUNCH = "std::vector<array> outputs = kernel(\n      {logits},"
GUMBEL_LAUNCH = "std::vector<array> outputs = kernel(\n      {logits, u, inv_temp},"

NORM_CALL = """kernel(
      {x, res, w, eps_array},
      {x.shape()},
      {x.dtype()},
      {rows * 32, 1, 1},
      {32, 1, 1},
      template_args,
      std::nullopt,
      false,
      {});"""

ATT_HELPER = ("inline mlx::core::array launch_attention(mlx::core::fast::CustomKernelFunction& kernel,\n"
              "                                         const mlx::core::array& q,")

TOP_K_SLOT = ".metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_top_k_kernel().get(); },"
TOP_K_ACCESSOR = """TopKKernel& get_top_k_kernel() {
  static TopKKernel holder;
  return holder;
}
"""


def _port_for_top_k(backend: str, factory: str, guard: bool):
    """Mutations giving the Metal-only top_k table a port on another backend."""
    accessor = (f"KernelHolder& get_top_k_kernel_{backend}() {{\n"
                f"  static KernelHolder holder([] {{\n"
                f"    return mlx::core::fast::{factory}(\"mlxcel_top_k\", {{\"logits\"}}, {{\"out\"}}, TOP_K_METAL_SOURCE);\n"
                f"  }});\n  return holder;\n}}\n")
    slot = f"      .{backend} = +[]() -> mlx::core::fast::CustomKernelFunction& {{ return get_top_k_kernel_{backend}().get(); }},\n"
    if guard:
        accessor = f"#ifdef MLXCEL_BRIDGE_ROCM_BACKEND\n{accessor}#endif\n"
        slot = f"#ifdef MLXCEL_BRIDGE_ROCM_BACKEND\n{slot}#endif\n"
    return (Mutation(SAMPLING, TOP_K_ACCESSOR, TOP_K_ACCESSOR + "\n" + accessor),
            Mutation(SAMPLING, TOP_K_SLOT + "\n", TOP_K_SLOT + "\n" + slot))


# --- copy 1: one variant per file ----------------------------------------------
NEGATIVE_1 = (
    # a dropped dtype entry in a named vector initialiser (a comment keeps the old text: a decoy)
    Mutation(NORM, '= {{"T", x.dtype()}, {"N", n}};', '= {{"N", n}};  // was {"T", x.dtype()}'),
    # args built by push_back: the dtype push_back is gone
    Mutation(ROPE, '  template_args.push_back({"T", x.dtype()});\n', ""),
    # inline args at the call
    Mutation(ACT, '{{"T", gate.dtype()}, {"SIZE", size}},', '{{"SIZE", size}},'),
    # the launch in a header, and a second file including that header
    Mutation(ATT_H, '{{"T", q.dtype()}, {"D", head_dim}', '{{"D", head_dim}'),
    Mutation(f"{TURBO}/attention_again.cpp", "", '// A second unit seeing the attention launch.\n#include "turbo/attention_launch.h"\n'),
    # the Metal-only top_k table gains a CUDA port: its unkeyed launch comes into scope
    *_port_for_top_k("cuda", "cuda_kernel", guard=False),
    # the dtype key exists in the default configuration only
    Mutation(KV, '  template_args.push_back({"T", cache.dtype()});\n',
             '#ifndef MLXCEL_BRIDGE_ROCM_BACKEND\n  template_args.push_back({"T", cache.dtype()});\n#endif\n'),
)

# --- copy 2: helpers, macros, ROCm, KP202, fail-closed paths --------------------
NEGATIVE_2 = (
    # args built in a helper that returns them
    Mutation(ACT, "array swiglu(const array& gate, const array& up) {",
             "KernelTemplateArgs swiglu_args(int size) {\n  return {{\"SIZE\", size}};\n}\n\n"
             "array swiglu(const array& gate, const array& up) {"),
    Mutation(ACT, '{{"T", gate.dtype()}, {"SIZE", size}},', "swiglu_args(size),"),
    # a macro-wrapped launch without a dtype key
    Mutation(NORM, "array fused_add_rms_norm(", "#define MLXCEL_LAUNCH_NORM(k, args) " + NORM_CALL.replace("\n", " ").replace("template_args", "args").rstrip(";")
             + "\n\narray fused_add_rms_norm("),
    Mutation(NORM, '= {{"T", x.dtype()}, {"N", n}};', '= {{"N", n}};'),
    Mutation(NORM, "std::vector<array> outputs = " + NORM_CALL, "std::vector<array> outputs = MLXCEL_LAUNCH_NORM(kernel, template_args);"),
    # top_k gains a ROCm port (in the rocm configuration only)
    *_port_for_top_k("rocm", "hip_kernel", guard=True),
    # KP202: the new values are no longer cast to the cache's dtype
    Mutation(KV, "const array fresh = mlx::core::astype(values, cache.dtype());", "const array fresh = values;"),
    # the vector is filled by a function whose body is not visible: fail closed
    Mutation(ROPE, "array apply_rope(", "void fill_rope_args(KernelTemplateArgs& args, const array& x);\n\narray apply_rope("),
    Mutation(ROPE, '  template_args.push_back({"T", x.dtype()});\n', "  fill_rope_args(template_args, x);\n"),
    # the attention kernel taken straight from an accessor (bypassing its table) and its header launch unkeyed
    Mutation(f"{TURBO}/attention.cpp", 'select_kernel_port("scaled_dot_product_attention", "mlx::core::fast::scaled_dot_product_attention", table);',
             "get_sdpa_exact_kernel_cuda().get();"),
    Mutation(ATT_H, '{{"T", q.dtype()}, {"D", head_dim}', '{{"D", head_dim}'),
    # a launch whose kernel arrives as a parameter nobody passes: table unknown, fail closed
    Mutation(f"{TURBO}/orphan_launch.h", "", """// A launch helper nobody calls yet.
#pragma once

#include <optional>
#include <vector>

#include "mlx/mlx.h"

namespace mlxcel {

inline mlx::core::array launch_orphan(mlx::core::fast::CustomKernelFunction& kernel, const mlx::core::array& x, int n) {
  std::vector<mlx::core::array> outputs = kernel(
      {x},
      {x.shape()},
      {x.dtype()},
      {n, 1, 1},
      {1, 1, 1},
      {{"N", n}},
      std::nullopt,
      false,
      {});
  return outputs[0];
}

}  // namespace mlxcel
"""),
)

# --- quiet controls ----------------------------------------------------------------
QUIET = (
    # gumbel becomes Metal-only and drops its dtype key: out of scope by the table's slots
    Mutation(SAMPLING, "      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_gumbel_kernel_cuda().get(); },\n", ""),
    Mutation(SAMPLING, '  template_args.emplace_back("T", logits.dtype());\n', ""),
    # the dtype bound to a local first
    Mutation(NORM, "  const array eps_array{eps};\n", "  const array eps_array{eps};\n  auto dt = x.dtype();\n"),
    Mutation(NORM, '= {{"T", x.dtype()}, {"N", n}};', '= {{"T", dt}, {"N", n}};'),
    # the dtype passed in as a parameter of a launch helper
    Mutation(ACT, "array swiglu(const array& gate, const array& up) {", """array launch_swiglu(mlx::core::fast::CustomKernelFunction& kernel, const array& gate, const array& up, int size,
                    mlx::core::Dtype dt) {
  const array up_cast = mlx::core::astype(up, dt);
  std::vector<array> outputs = kernel(
      {gate, up_cast},
      {gate.shape()},
      {dt},
      {size, 1, 1},
      {std::min(size, 256), 1, 1},
      {{"T", dt}, {"SIZE", size}},
      std::nullopt,
      false,
      {});
  return outputs[0];
}

array swiglu(const array& gate, const array& up) {"""),
    Mutation(ACT, """  const array up_cast = mlx::core::astype(up, gate.dtype());
  std::vector<array> outputs = kernel(
      {gate, up_cast},
      {gate.shape()},
      {gate.dtype()},
      {size, 1, 1},
      {std::min(size, 256), 1, 1},
      {{"T", gate.dtype()}, {"SIZE", size}},
      std::nullopt,
      false,
      {});
  return outputs[0];""", "  return launch_swiglu(kernel, gate, up, size, gate.dtype());"),
    # the Metal-only top_k kernel taken straight from its accessor (KP103's business), launched without a dtype
    # key: the holder's own get() builds it with metal_kernel only, whose cache key has the input dtypes
    Mutation(SAMPLING, 'kernel = select_kernel_port("top_k_indices", "mlx::core::argpartition", top_k_ports());',
             "kernel = get_top_k_kernel().get();  // q:metal-holder"),
    # KP202 quiet: positions no longer cast, but refused unless int32
    Mutation(ROPE, "  const array pos = mlx::core::astype(positions, mlx::core::int32);\n",
             "  if (positions.dtype() != mlx::core::int32) {\n    throw std::invalid_argument(\"apply_rope: positions must be int32\");\n  }\n"
             "  const array pos = positions;\n"),
    # the header's launch helper becomes a function template over its query's type: the launch is dependent in the
    # pattern Clang gives (no instantiation is read), judged as written, and still keyed by `q.dtype()`
    Mutation(ATT_H, ATT_HELPER, "template <typename Query>\nmlx::core::array launch_attention(mlx::core::fast::CustomKernelFunction& kernel,\n"
             "                                         const Query& q,"),
    # KP202 quiet: an uncast input checked equal to the keyed input's dtype
    Mutation(KV, "const array fresh = mlx::core::astype(values, cache.dtype());",
             "if (values.dtype() != cache.dtype()) {\n    throw std::invalid_argument(\"kv_cache_write: values must match the cache dtype\");\n  }\n"
             "  const array fresh = values;"),
)

DTYPE_CODES = ("KP201", "KP202")


@pytest.fixture(scope="module")
def cache_dir(kp_cache):
    return kp_cache


_run = run_copy


@pytest.fixture(scope="module")
def clean(tmp_path_factory, cache_dir):
    return _run(tmp_path_factory, cache_dir, "clean", ())


@pytest.fixture(scope="module")
def negative_1(tmp_path_factory, cache_dir):
    return _run(tmp_path_factory, cache_dir, "neg1", NEGATIVE_1)


@pytest.fixture(scope="module")
def negative_2(tmp_path_factory, cache_dir):
    return _run(tmp_path_factory, cache_dir, "neg2", NEGATIVE_2)


@pytest.fixture(scope="module")
def quiet(tmp_path_factory, cache_dir):
    return _run(tmp_path_factory, cache_dir, "quiet", QUIET)


def _one(result, code, path, line, **attrs):
    hits = findings_at(result, code, path, line)
    assert hits, f"no {code} at {path}:{line}\n{describe(result)}"
    for key, value in attrs.items():
        assert {getattr(f, key) for f in hits} == {value}, f"{key}: {[getattr(f, key) for f in hits]}\n{describe(result)}"
    return hits


def _dtype_findings(result, path=None):
    return [f for f in result.findings if f.rule in DTYPE_CODES and (path is None or f.path == path)]


# --- clean engine ------------------------------------------------------------------


def test_clean_engine_has_no_dtype_findings(clean):
    _, result = clean
    assert _dtype_findings(result) == [], describe(result)
    assert result.summary["counts"] == {"error": 0, "warning": 0}, describe(result)
    assert "KP201" in result.summary["rules_run"] and "KP202" in result.summary["rules_run"]


def test_metal_only_unkeyed_launch_is_out_of_scope(clean):
    copy, result = clean
    # top_k's launch has no dtype key on purpose: its table has only a Metal port
    assert findings_at(result, "KP201", SAMPLING, copy.line_of(SAMPLING, TOP_K_LAUNCH)) == []


# --- KP201 negative controls -------------------------------------------------------


def test_dropped_dtype_entry_in_named_vector(negative_1):
    copy, result = negative_1
    (f,) = _one(result, "KP201", NORM, copy.line_of(NORM, NORM_LAUNCH), kernel="fused_norm", configuration=None)
    assert '{"N": n}' in f.message and "`x`, `res`, `w`" in f.message
    assert 'Add `{"T", x.dtype()}`' in f.message
    assert "`fused_norm_ports` has a cuda and a rocm port" in f.message


def test_args_built_by_push_back(negative_1):
    copy, result = negative_1
    (f,) = _one(result, "KP201", ROPE, copy.line_of(ROPE, ROPE_LAUNCH), kernel="rope")
    assert 'Add `{"T", x.dtype()}`' in f.message and '{"D": dims}' in f.message


def test_inline_args(negative_1):
    copy, result = negative_1
    (f,) = _one(result, "KP201", ACT, copy.line_of(ACT, ACT_LAUNCH), kernel="swiglu")
    assert 'Add `{"T", gate.dtype()}`' in f.message


def test_launch_in_a_header_is_judged_once_per_table(negative_1):
    copy, result = negative_1
    hits = _one(result, "KP201", ATT_H, copy.line_of(ATT_H, ATT_LAUNCH))
    # one finding per table the launch can run (both have a CUDA port), not one per including file
    assert sorted(f.kernel for f in hits) == ["sdpa_exact", "sdpa_window"], describe(result)
    assert all('Add `{"T", q.dtype()}`' in f.message for f in hits)
    assert _dtype_findings(result, f"{TURBO}/attention.cpp") == []
    assert _dtype_findings(result, f"{TURBO}/attention_again.cpp") == []


def test_metal_only_table_gaining_a_cuda_port(negative_1):
    copy, result = negative_1
    (f,) = _one(result, "KP201", SAMPLING, copy.line_of(SAMPLING, TOP_K_LAUNCH), kernel="top_k")
    assert "`top_k_ports` has a cuda port" in f.message and 'Add `{"T", logits.dtype()}`' in f.message


def test_key_missing_in_one_configuration_names_it(negative_1):
    copy, result = negative_1
    (f,) = _one(result, "KP201", KV, copy.line_of(KV, KV_LAUNCH), kernel="kv_write", configuration="rocm")
    assert 'Add `{"T", cache.dtype()}`' in f.message


def test_metal_only_table_gaining_a_rocm_port(negative_2):
    copy, result = negative_2
    (f,) = _one(result, "KP201", SAMPLING, copy.line_of(SAMPLING, TOP_K_LAUNCH), kernel="top_k")
    assert "`top_k_ports` has a rocm port" in f.message


def test_args_built_in_a_helper(negative_2):
    copy, result = negative_2
    (f,) = _one(result, "KP201", ACT, copy.line_of(ACT, ACT_LAUNCH), kernel="swiglu")
    assert '{"SIZE": size}' in f.message


def test_macro_wrapped_launch(negative_2):
    copy, result = negative_2
    line = copy.line_of(NORM, "std::vector<array> outputs = MLXCEL_LAUNCH_NORM(kernel, template_args);")
    (f,) = _one(result, "KP201", NORM, line, kernel="fused_norm")
    assert 'Add `{"T", x.dtype()}`' in f.message and "inside a macro expansion" in f.message


def test_args_filled_by_an_unseen_function_fail_closed(negative_2):
    copy, result = negative_2
    (f,) = _one(result, "KP201", ROPE, copy.line_of(ROPE, ROPE_LAUNCH), kernel="rope")
    assert "could not be followed" in f.message


def test_unresolved_table_fails_closed(negative_2):
    copy, result = negative_2
    path = f"{TURBO}/orphan_launch.h"
    (f,) = _one(result, "KP201", path, copy.line_of(path, "std::vector<mlx::core::array> outputs = kernel("), kernel=None)
    assert "could not be resolved" in f.message


def test_kernel_taken_from_an_accessor_fails_closed(negative_2):
    copy, result = negative_2
    (f,) = _one(result, "KP201", ATT_H, copy.line_of(ATT_H, ATT_LAUNCH), kernel=None)
    assert "straight from the accessor" in f.message and "get_sdpa_exact_kernel_cuda" in f.message
    assert "with a cuda factory" in f.message


# --- KP202 -------------------------------------------------------------------------


def test_unkeyed_independent_input(negative_2):
    copy, result = negative_2
    (f,) = _one(result, "KP202", KV, copy.line_of(KV, KV_LAUNCH), kernel="kv_write", severity="warning")
    assert "`fresh`" in f.message and "{\"T\": cache.dtype()}" in f.message
    assert '{"T_fresh", fresh.dtype()}' in f.message
    assert findings_at(result, "KP201", KV) == []


def _check_json(copy, cache_dir, monkeypatch, capsys):
    monkeypatch.setenv("XDG_CACHE_HOME", str(cache_dir.parent))
    code = cli.main(["check", "--registry", str(copy.registry_path), "--root", str(copy.root), "--format", "json", "--select", "KP2"])
    return code, json.loads(capsys.readouterr().out)


KV_202 = Mutation(KV, "const array fresh = mlx::core::astype(values, cache.dtype());", "const array fresh = values;")


@pytest.mark.parametrize("where", ["global", "kernel"])
def test_registry_severity_makes_kp202_an_error(where, tmp_path, cache_dir, monkeypatch, capsys):
    if where == "global":
        reg = Mutation(REGISTRY_KEY, "severity: {KP202: warning}", "severity: {KP202: error}")
    else:
        reg = Mutation(REGISTRY_KEY, "  - name: kv_write\n    table: kv_write_ports\n",
                       "  - name: kv_write\n    table: kv_write_ports\n    severity: {KP202: error}\n")
    copy = engine_copy(tmp_path, KV_202, reg)
    code, report = _check_json(copy, cache_dir, monkeypatch, capsys)
    hits = [f for f in report["findings"] if f["rule"] == "KP202"]
    assert [(f["path"], f["line"], f["severity"], f.get("kernel")) for f in hits] == [
        (KV, copy.line_of(KV, KV_LAUNCH), "error", "kv_write")], report
    assert code == 1


def test_kp202_is_a_warning_by_default(tmp_path, cache_dir, monkeypatch, capsys):
    copy = engine_copy(tmp_path, KV_202)
    code, report = _check_json(copy, cache_dir, monkeypatch, capsys)
    assert [f["severity"] for f in report["findings"] if f["rule"] == "KP202"] == ["warning"]
    assert code == 0


# --- quiet controls ----------------------------------------------------------------


def test_quiet_metal_only_table_without_key(quiet):
    copy, result = quiet
    assert _dtype_findings(result, SAMPLING) == [], describe(result)
    # the decoy is real: gumbel's launch now has no dtype key at all
    assert '"T"' not in copy.file(SAMPLING).read_text().split("array gumbel_sample(")[1]


def test_quiet_accessor_that_builds_only_metal_kernels(quiet):
    copy, result = quiet
    line = copy.line_of(SAMPLING, "q:metal-holder")
    assert findings_at(result, "KP103", SAMPLING, line), describe(result)  # the bypass itself is still reported
    assert _dtype_findings(result, SAMPLING) == [], describe(result)
    body = copy.file(SAMPLING).read_text().split("array top_k_indices(")[1].split("return outputs")[0]
    assert "get_top_k_kernel().get()" in body and "{\"T\"" not in body


def test_quiet_input_refused_unless_of_a_constant_dtype(quiet):
    copy, result = quiet
    assert _dtype_findings(result, ROPE) == [], describe(result)
    assert "astype(positions" not in copy.file(ROPE).read_text()


def test_quiet_dtype_bound_to_a_local(quiet):
    _, result = quiet
    assert _dtype_findings(result, NORM) == [], describe(result)


def test_quiet_dtype_passed_as_a_parameter(quiet):
    copy, result = quiet
    assert _dtype_findings(result, ACT) == [], describe(result)
    assert "{{\"T\", dt}" in copy.file(ACT).read_text()


def test_quiet_input_checked_equal_to_the_keyed_dtype(quiet):
    _, result = quiet
    assert _dtype_findings(result, KV) == [], describe(result)


def test_quiet_launch_in_a_function_template(quiet):
    copy, result = quiet
    assert "template <typename Query>" in copy.file(ATT_H).read_text()
    line = copy.line_of(ATT_H, ATT_LAUNCH)
    # (before, the launch was KP902 "not confirmed", and the header KP306 "no longer launches a kernel")
    assert _dtype_findings(result, ATT_H) == [] and not findings_at(result, "KP902", ATT_H), describe(result)
    assert not findings_at(result, "KP306", ATT_H), describe(result)
    # judged, not lost: the launch is an invocation keyed by its (template-typed) query's dtype
    (inv,) = [i for i in result.index.invocations if (i.loc.path, i.loc.line) == (ATT_H, line)]
    assert [(e.name, e.is_dtype, e.source_input) for e in inv.template_args if e.is_dtype] == [("T", True, "q")]


def test_quiet_copy_has_no_dtype_findings_at_all(quiet):
    _, result = quiet
    assert _dtype_findings(result) == [], describe(result)


# --- a key Clang cannot type --------------------------------------------------------


def test_untyped_key_fails_closed_and_says_why(tmp_path_factory, cache_dir):
    # the key's dtype comes from a function whose declaration is missing (a header the check cannot see)
    copy, result = _run(tmp_path_factory, cache_dir, "untyped", (
        Mutation(SAMPLING, '  KernelTemplateArgs template_args;\n  template_args.emplace_back("T", logits.dtype());\n',
                 '  const auto dt = dtype_from_a_missing_header(logits);\n  KernelTemplateArgs template_args = {{"T", dt}};\n'),))
    (f,) = _one(result, "KP201", SAMPLING, copy.line_of(SAMPLING, GUMBEL_LAUNCH), kernel="gumbel")
    assert "Clang could not type `dt`" in f.message and "Clang reported" in f.message
    assert "dtype_from_a_missing_header" in f.message and "missing header" in f.message
    assert "name no input dtype" not in f.message
