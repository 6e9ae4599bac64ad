"""KP301–KP306 (registry ↔ code drift) and the exemption codes KP401/KP402.

Every negative control mutates a copy of the sample engine or of its registry
and asserts the code at the exact file and line; quiet controls (decoys) must
not produce the code. Copies are made at one fixed path per session and parsed
with a shared cache, so a mutation re-parses only the file it touched.
"""

from __future__ import annotations

import shutil

import pytest

from tests.mutate import REGISTRY_KEY, Mutation, check, describe, engine_copy, findings_at

TURBO = "src/lib/mlx-cpp/turbo"
SAMPLING = f"{TURBO}/sampling.cpp"
ROPE = f"{TURBO}/rope.cpp"
KV = f"{TURBO}/kv_cache.cpp"
NORM = f"{TURBO}/fused_norm.cpp"
DRIFT = ("KP301", "KP302", "KP303", "KP304", "KP305", "KP306")


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    """run(*mutations) -> (copy, result); the copy lives at one path so the parse cache is reused."""
    base = tmp_path_factory.getbasetemp()
    cache = base / "drift-cache" / "kernel-ports"
    target = base / "drift-engine"

    def run(*mutations):
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir(parents=True)
        copy = engine_copy(target, *mutations)
        return copy, check(copy, cache_dir=cache)

    return run


def codes(result, prefix=DRIFT):
    return [f for f in result.findings if f.rule.startswith(prefix)]


def only(result, code, path, line):
    """The findings of `code` at path:line, with a readable failure."""
    hits = findings_at(result, code, path, line)
    assert hits, f"expected {code} at {path}:{line}; got:\n{describe(result)}"
    return hits


def reg_path(copy) -> str:
    return str(copy.registry_path)


# --------------------------------------------------------------------------
# the clean engine
# --------------------------------------------------------------------------


def test_clean_engine_has_no_drift_or_exemption_findings(run):
    _, result = run()
    assert codes(result, DRIFT + ("KP401", "KP402")) == [], describe(result)
    assert result.summary["checked"]["tables"] == 8


# --------------------------------------------------------------------------
# KP301 table-not-in-registry
# --------------------------------------------------------------------------

NEW_TABLE = """const KernelPorts& top_k_wide_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_top_k_kernel().get(); },
  };
  return ports;
}

bool top_k_available() {"""


def test_kp301_new_table_in_code(run):
    copy, result = run(Mutation(SAMPLING, "bool top_k_available() {", NEW_TABLE))
    line = copy.line_of(SAMPLING, "const KernelPorts& top_k_wide_ports() {")
    (hit,) = only(result, "KP301", SAMPLING, line)
    assert "top_k_wide_ports" in hit.message and f"{reg_path(copy)}:" in hit.message
    # a new table is only KP301: it is not also "dispatched nowhere" against a registry entry it lacks
    assert [f.rule for f in codes(result)] == ["KP301"], describe(result)


def test_kp301_decoy_table_in_a_comment(run):
    decoy = "// const KernelPorts& top_k_wide_ports() { static const KernelPorts ports{}; return ports; }\nbool top_k_available() {"
    _, result = run(Mutation(SAMPLING, "bool top_k_available() {", decoy))
    assert codes(result) == [], describe(result)


# --------------------------------------------------------------------------
# KP302 kernel-not-in-code
# --------------------------------------------------------------------------


def test_kp302_table_renamed_in_code(run):
    copy, result = run(Mutation(SAMPLING, "top_k_ports()", "top_k_table()", count=0))
    line = copy.line_of(REGISTRY_KEY, "  - name: top_k")
    (hit,) = only(result, "KP302", reg_path(copy), line)
    assert hit.kernel == "top_k" and f"{reg_path(copy)}:{line}" in hit.message
    only(result, "KP301", SAMPLING, copy.line_of(SAMPLING, "const KernelPorts& top_k_table() {"))


def test_kp302_registry_kernel_without_code(run):
    ghost = """exemptions: []"""
    entry = """  - name: ghost
    table: ghost_ports
    file: src/lib/mlx-cpp/turbo/sampling.cpp
    dispatch: []
    ports: {metal: get_ghost_kernel, cuda: null, rocm: null}

exemptions: []"""
    copy, result = run(Mutation(REGISTRY_KEY, ghost, entry))
    only(result, "KP302", reg_path(copy), copy.line_of(REGISTRY_KEY, "  - name: ghost"))
    assert [f.rule for f in codes(result)] == ["KP302"], describe(result)


def test_kp302_table_moved_to_another_file(run):
    old = 'file: src/lib/mlx-cpp/turbo/sampling.cpp\n    dispatch:\n      - {entry_point: "top_k_indices"'
    new = 'file: src/lib/mlx-cpp/turbo/attention.cpp\n    dispatch:\n      - {entry_point: "top_k_indices"'
    copy, result = run(Mutation(REGISTRY_KEY, old, new))
    line = copy.line_of(REGISTRY_KEY, "file: src/lib/mlx-cpp/turbo/attention.cpp\n    dispatch:\n      - {entry_point: \"top_k")
    (hit,) = only(result, "KP302", reg_path(copy), line)
    assert f"{SAMPLING}:114" in hit.message


# --------------------------------------------------------------------------
# KP303 slot-mismatch
# --------------------------------------------------------------------------

GUMBEL_CUDA_SLOT = "      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_gumbel_kernel_cuda().get(); },\n"


def test_kp303_slot_removed_from_code(run):
    copy, result = run(Mutation(SAMPLING, GUMBEL_CUDA_SLOT, ""))
    (hit,) = only(result, "KP303", SAMPLING, copy.line_of(SAMPLING, "const KernelPorts& gumbel_ports() {"))
    declared = copy.line_of(REGISTRY_KEY, "      cuda: get_gumbel_kernel_cuda")
    assert "`.cuda`" in hit.message and f"{reg_path(copy)}:{declared}" in hit.message


def test_kp303_slot_the_registry_declares_null(run):
    copy, result = run(Mutation(REGISTRY_KEY, "      cuda: get_gumbel_kernel_cuda\n", "      cuda: null\n"))
    (hit,) = only(result, "KP303", SAMPLING, copy.line_of(SAMPLING, GUMBEL_CUDA_SLOT.strip()))
    assert "declares no cuda port" in hit.message


def test_kp303_other_accessor(run):
    old = "      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_fused_norm_kernel().get(); },"
    new = "      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_fused_norm_kernel_cuda().get(); },"
    copy, result = run(Mutation(NORM, old, new))
    (hit,) = only(result, "KP303", NORM, copy.line_of(NORM, new.strip()))
    assert "`get_fused_norm_kernel_cuda`" in hit.message and "`get_fused_norm_kernel`" in hit.message


def test_kp303_other_template_argument(run):
    old = "{ return get_kv_write_kernel<GpuKernelBackend::Metal>().get(); }"
    new = "{ return get_kv_write_kernel<GpuKernelBackend::Cuda>().get(); }"
    copy, result = run(Mutation(KV, old, new))
    (hit,) = only(result, "KP303", KV, copy.line_of(KV, "      .metal = +[]"))
    assert "get_kv_write_kernel<GpuKernelBackend::Cuda>" in hit.message


def test_kp303_slot_only_seen_in_an_undeclared_configuration(run):
    copy, result = run(Mutation(REGISTRY_KEY, '    rocm: ["MLXCEL_BRIDGE_ROCM_BACKEND"]', ""))
    (hit,) = only(result, "KP303", NORM, copy.line_of(NORM, "const KernelPorts& fused_norm_ports() {"))
    assert "`.rocm`" in hit.message and "configuration default" in hit.message


def test_kp303_decoy_spacing_in_registry_template_arguments(run):
    _, result = run(Mutation(REGISTRY_KEY, "metal: get_kv_write_kernel<GpuKernelBackend::Metal>",
                             'metal: "get_kv_write_kernel< GpuKernelBackend::Metal >"'))
    assert codes(result) == [], describe(result)


# --------------------------------------------------------------------------
# KP304 dispatch-mismatch
# --------------------------------------------------------------------------


def test_kp304_fallback_differs(run):
    copy, result = run(Mutation(KV, '"mlx::core::slice_update", kv_write_ports()', '"mlx::core::scatter", kv_write_ports()'))
    (hit,) = only(result, "KP304", KV, copy.line_of(KV, 'select_kernel_port("kv_cache_write"'))
    declared = copy.line_of(REGISTRY_KEY, 'entry_point: "kv_cache_write"')
    assert "fallback differs" in hit.message and f"{reg_path(copy)}:{declared}" in hit.message


def test_kp304_entry_point_differs(run):
    copy, result = run(Mutation(ROPE, 'select_kernel_port("apply_rope",', 'select_kernel_port("rope_apply",'))
    (hit,) = only(result, "KP304", ROPE, copy.line_of(ROPE, 'select_kernel_port("rope_apply",'))
    assert "entry point differs" in hit.message


def test_kp304_registry_entry_without_call(run):
    old = '      - {entry_point: "apply_rope", fallback: "mlx::core::fast::rope"}\n'
    new = old + '      - {entry_point: "apply_rope_batched", fallback: "mlx::core::fast::rope"}\n'
    copy, result = run(Mutation(REGISTRY_KEY, old, new))
    (hit,) = only(result, "KP304", ROPE, copy.line_of(ROPE, "const KernelPorts& rope_ports() {"))
    declared = copy.line_of(REGISTRY_KEY, "apply_rope_batched")
    assert f"{reg_path(copy)}:{declared}" in hit.message


def test_kp304_call_site_not_in_registry(run):
    probe = """bool gumbel_sample_available() {"""
    extra = """mlx::core::fast::CustomKernelFunction& gumbel_kernel_for_probe() {
  return select_kernel_port("gumbel_probe", "skip the probe", gumbel_ports());
}

bool gumbel_sample_available() {"""
    copy, result = run(Mutation(SAMPLING, probe, extra))
    (hit,) = only(result, "KP304", SAMPLING, copy.line_of(SAMPLING, 'select_kernel_port("gumbel_probe"'))
    assert "does not list" in hit.message


def test_kp304_table_dispatched_nowhere(run):
    old = '"mlx::core::argpartition", top_k_ports());'
    copy, result = run(Mutation(SAMPLING, old, '"mlx::core::argpartition", gumbel_ports());'))
    (hit,) = only(result, "KP304", SAMPLING, copy.line_of(SAMPLING, "const KernelPorts& top_k_ports() {"))
    assert "dispatched nowhere" in hit.message
    # the call now reads gumbel_ports, where the registry does not list it
    only(result, "KP304", SAMPLING, copy.line_of(SAMPLING, old.replace("top_k_ports", "gumbel_ports")))


UNRESOLVED = """mlx::core::fast::CustomKernelFunction& pick_port(const KernelPorts& table) {
  return select_kernel_port(ENTRY, "mlx::core::argpartition", table);
}

bool top_k_available() {"""


def test_kp304_selector_call_whose_table_is_unknown(run):
    copy, result = run(Mutation(SAMPLING, "bool top_k_available() {", UNRESOLVED.replace("ENTRY", '"pick_port"')))
    (hit,) = only(result, "KP304", SAMPLING, copy.line_of(SAMPLING, 'select_kernel_port("pick_port"'))
    assert "could not be resolved" in hit.message


def test_kp304_quiet_for_unknown_table_with_declared_strings_and_comment_decoy(run):
    code = UNRESOLVED.replace("ENTRY", '"top_k_indices"') + '\n// select_kernel_port("nowhere", "nothing", top_k_ports());'
    _, result = run(Mutation(SAMPLING, "bool top_k_available() {", code))
    assert codes(result, ("KP304",)) == [], describe(result)


# --------------------------------------------------------------------------
# KP305 wave-pin-mismatch
# --------------------------------------------------------------------------


def test_kp305_mark_dropped_in_code(run):
    copy, result = run(Mutation(KV, "      .rocm_any_wave_size = true,", "      .rocm_any_wave_size = false,"))
    (hit,) = only(result, "KP305", KV, copy.line_of(KV, "const KernelPorts& kv_write_ports() {"))
    assert "declares true" in hit.message


def test_kp305_mark_the_registry_does_not_have(run):
    old = "    rocm_any_wave_size: true\n    hip_source: ROPE_HIP_SOURCE"
    copy, result = run(Mutation(REGISTRY_KEY, old, "    rocm_any_wave_size: false\n    hip_source: null"))
    (hit,) = only(result, "KP305", ROPE, copy.line_of(ROPE, "const KernelPorts& rope_ports() {"))
    assert "hip_source: ROPE_HIP_SOURCE" in hit.message
    mark = copy.line_of(REGISTRY_KEY, "    rocm_any_wave_size: false\n    hip_source: null    # compiled with ROPE_HIP_HEADER")
    assert f"{reg_path(copy)}:{mark}" in hit.message


def test_kp305_pinned_source_swapped_in_code(run):
    body = 'constexpr const char* ROPE_HIP_SOURCE_V2 = R"(\n  out[0] = x[0];\n)";\n\n}  // namespace mlxcel'
    copy, result = run(
        Mutation(f"{TURBO}/rope_hip.h", "}  // namespace mlxcel", body),
        Mutation(ROPE, "ROPE_HIP_SOURCE, ROPE_HIP_HEADER);", "ROPE_HIP_SOURCE_V2, ROPE_HIP_HEADER);"),
    )
    (hit,) = only(result, "KP305", ROPE, copy.line_of(ROPE, "      .rocm = +[]"))
    assert "`ROPE_HIP_SOURCE_V2`" in hit.message and "`ROPE_HIP_SOURCE`" in hit.message


def test_kp305_marked_without_a_pin(run):
    copy, result = run(Mutation(REGISTRY_KEY, "hip_source: KV_WRITE_HIP_SOURCE", "hip_source: null"))
    (hit,) = only(result, "KP305", KV, copy.line_of(KV, "      .rocm = +[]"))
    assert "pins null" in hit.message


def test_kp305_decoy_unmarked_table_changes_its_hip_source(run):
    body = 'constexpr const char* FUSED_NORM_HIP_SOURCE_V2 = R"(\n  out[0] = x[0];\n)";\n\n}  // namespace mlxcel'
    _, result = run(
        Mutation(f"{TURBO}/fused_norm_hip.h", "}  // namespace mlxcel", body),
        Mutation(NORM, "FUSED_NORM_HIP_SOURCE)", "FUSED_NORM_HIP_SOURCE_V2)"),
    )
    assert codes(result, ("KP305",)) == [], describe(result)


# --------------------------------------------------------------------------
# KP306 launcher-scope-drift
# --------------------------------------------------------------------------

EXTRA_LAUNCHER = """// A launcher the registry does not know.
#include "mlx/fast.h"

namespace mlxcel {

mlx::core::fast::CustomKernelFunction make_probe_kernel() {
  return mlx::core::fast::metal_kernel("mlxcel_probe", {"x"}, {"out"}, "out[0] = x[0];");
}

}  // namespace mlxcel
"""


def test_kp306_file_starts_launching(run):
    path = f"{TURBO}/probe.cpp"
    copy, result = run(Mutation(path, "", EXTRA_LAUNCHER))
    (hit,) = only(result, "KP306", path, copy.line_of(path, "mlx::core::fast::metal_kernel("))
    assert "`launchers` does not list it" in hit.message and "factory call" in hit.message


@pytest.mark.parametrize("name", ["probe.inl", "probe.ipp", "probe.c++"])
def test_kp306_in_every_cpp_suffix_in_scope(run, name):
    """A file scope counts as scanned is read: these suffixes were in scope but not the witness's, so a launcher
    with one was counted and never judged."""
    path = f"{TURBO}/{name}"
    copy, result = run(Mutation(path, "", EXTRA_LAUNCHER))
    (hit,) = only(result, "KP306", path, copy.line_of(path, "mlx::core::fast::metal_kernel("))
    assert "`launchers` does not list it" in hit.message


def test_kp306_header_launch_not_listed(run):
    copy, result = run(Mutation(REGISTRY_KEY, '  - "src/lib/mlx-cpp/turbo/attention_launch.h"\n', ""))
    path = f"{TURBO}/attention_launch.h"
    (hit,) = only(result, "KP306", path, copy.line_of(path, "kernel("))
    assert "kernel invocation" in hit.message


def test_kp306_listed_file_does_not_launch(run):
    old = '  - "src/lib/mlx-cpp/turbo/sampling.cpp"\n'
    copy, result = run(Mutation(REGISTRY_KEY, old, old + '  - "src/lib/mlx-cpp/turbo/turbo_kernels.h"\n'))
    (hit,) = only(result, "KP306", f"{TURBO}/turbo_kernels.h", 1)
    listed = copy.line_of(REGISTRY_KEY, "turbo_kernels.h")
    assert f"{reg_path(copy)}:{listed}" in hit.message


def test_kp306_listed_file_is_gone(run):
    old = '  - "src/lib/mlx-cpp/turbo/sampling.cpp"\n'
    copy, result = run(Mutation(REGISTRY_KEY, old, old + '  - "src/lib/mlx-cpp/turbo/retired.cpp"\n'))
    only(result, "KP306", reg_path(copy), copy.line_of(REGISTRY_KEY, "retired.cpp"))


def test_kp306_decoy_factory_named_in_a_comment(run):
    text = "// Not a launcher: mentions mlx::core::fast::metal_kernel(\"x\", {}, {}, \"\") in a comment only.\n"
    _, result = run(Mutation(f"{TURBO}/notes.cpp", "", text))
    assert codes(result, ("KP306",)) == [], describe(result)


# --------------------------------------------------------------------------
# exemptions: KP401 stale, KP402 invalid (judged in findings.apply_policy)
# --------------------------------------------------------------------------

FALLBACK_DRIFT = Mutation(KV, '"mlx::core::slice_update", kv_write_ports()', '"mlx::core::scatter", kv_write_ports()')


def _exemption(rule, path, reason='"fallback renamed upstream"', tracking='"#4711"'):
    fields = [f"rule: {rule}", f'path: "{path}"']
    if reason is not None:
        fields.append(f"reason: {reason}")
    if tracking is not None:
        fields.append(f"tracking: {tracking}")
    return Mutation(REGISTRY_KEY, "exemptions: []", "exemptions:\n  - {" + ", ".join(fields) + "}")


def test_exemption_suppresses_a_real_finding(run):
    _, unexempted = run(FALLBACK_DRIFT)
    assert findings_at(unexempted, "KP304", KV), describe(unexempted)
    _, result = run(FALLBACK_DRIFT, _exemption("KP304", KV))
    assert not findings_at(result, "KP304", KV), describe(result)
    assert codes(result, ("KP401", "KP402")) == [], describe(result)


def test_kp401_exemption_that_suppresses_nothing(run):
    copy, result = run(_exemption("KP304", SAMPLING))
    (hit,) = only(result, "KP401", reg_path(copy), copy.line_of(REGISTRY_KEY, "  - {rule: KP304"))
    assert "suppresses nothing" in hit.message


def test_kp402_exemption_without_reason_or_tracking(run):
    copy, result = run(FALLBACK_DRIFT, _exemption("KP304", KV, reason=None, tracking='""'))
    (hit,) = only(result, "KP402", reg_path(copy), copy.line_of(REGISTRY_KEY, "  - {rule: KP304"))
    assert "reason and tracking reference" in hit.message
    assert not findings_at(result, "KP401", reg_path(copy)), describe(result)
