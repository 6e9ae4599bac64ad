"""Dispatch rules on the C++ side (KP101–KP103, KP105–KP107), with negative controls.

Every variant is a guarded mutation of the clean sample engine (the helper
raises when the text it edits is absent) that must produce its code at the
file and line it names; variants of one rule that edit different places are
applied to one copy, so the copy is checked once. Decoys are mutations that
must stay quiet. Lines are found through a tag written on the mutated line
(`// v:<name>`), so moving engine code never makes a case pass vacuously.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from kernel_ports.checkers.lane_ops import LANE_OPS, find_lane_ops
from kernel_ports.cli import main
from tests.mutate import REGISTRY_KEY, Mutation, describe, engine_copy, findings_at, run_copy

TURBO = "src/lib/mlx-cpp/turbo/"
ROPE = TURBO + "rope.cpp"
ROPE_HIP = TURBO + "rope_hip.h"
NORM = TURBO + "fused_norm.cpp"
KV = TURBO + "kv_cache.cpp"
KV_HIP = TURBO + "kv_cache_hip.h"
SAMPLING = TURBO + "sampling.cpp"
ATTENTION = TURBO + "attention.cpp"
ATTENTION_LAUNCH = TURBO + "attention_launch.h"
ACTIVATIONS = TURBO + "activations.cpp"
KERNEL_PORT = TURBO + "kernel_port.cpp"
GPU_BACKEND = TURBO + "gpu_backend.cpp"
BRIDGE = "src/lib/mlx-cpp/bridge/ffi_bridge.cpp"
DISPATCH_CODES = ("KP101", "KP102", "KP103", "KP104", "KP105", "KP106", "KP107")

# Insertion points: real engine lines that a mutation keeps and adds code after.
ROPE_BODY = "  const int dims = x.shape(-1);\n"
ROPE_NS = "using mlx::core::array;\n"
NORM_BODY = "  const int n = x.shape(-1);\n"
NORM_INCLUDES = "#include <optional>\n"
SAMPLING_TOPK_BODY = '  KernelTemplateArgs template_args = {{"K", k}, {"V", vocab}};\n'
KV_BODY = "  const int width = cache.shape(-1);\n"
ROPE_HIP_BODY = "  const float s = sinf(theta);\n"


def after(path: str, anchor: str, code: str, count: int = 1) -> Mutation:
    """Insert code after an engine line that must be there."""
    return Mutation(path, anchor, anchor + code, count=count)


def before(path: str, anchor: str, code: str, count: int = 1) -> Mutation:
    return Mutation(path, anchor, code + anchor, count=count)


@dataclass(frozen=True)
class Case:
    id: str
    code: str
    path: str  # where the finding must be (registry path: REGISTRY_KEY)
    tag: str  # text on the finding's line in the mutated copy
    mutations: tuple


def assert_caught(case: Case, copy, result):
    path = str(copy.registry_path) if case.path == REGISTRY_KEY else case.path
    line = copy.line_of(case.path, case.tag)
    hits = findings_at(result, case.code, path, line)
    assert hits, f"{case.id}: expected {case.code} at {case.path}:{line}\n{describe(result)}"
    return hits


def assert_quiet(copy, result, path, tag, codes=DISPATCH_CODES):
    line = copy.line_of(path, tag)
    noise = [f for f in result.findings if f.rule in codes and f.path == path and f.line == line]
    assert not noise, describe(result)


def grouped(cases):
    muts = []
    for c in cases:
        for m in c.mutations:
            if m not in muts:
                muts.append(m)
    return muts


# ---------------------------------------------------------------------------
# the untouched engine
# ---------------------------------------------------------------------------


def test_untouched_engine_is_clean(tmp_path_factory, kp_cache):
    _, result = run_copy(tmp_path_factory, kp_cache, "clean", ())
    assert result.findings == [], describe(result)
    assert set(DISPATCH_CODES) <= set(result.summary["rules_run"])


# ---------------------------------------------------------------------------
# KP101 backend-comparison
# ---------------------------------------------------------------------------

ROPE_PROBE_NS = after(ROPE, ROPE_NS, """
struct RopeBackendByDefault {
  GpuKernelBackend kind = gpu_kernel_backend();
};
struct RopeBackendByInitialiser {
  GpuKernelBackend kind;
  RopeBackendByInitialiser() : kind(gpu_kernel_backend()) {}
};
int rope_threads_for(GpuKernelBackend backend) {
  if (backend == GpuKernelBackend::Cuda) {  // v:param
    return 64;
  }
  return 32;
}
#define ROPE_ON_CUDA() (gpu_kernel_backend() == GpuKernelBackend::Cuda)
""")

ROPE_STDEXCEPT = after(ROPE, "#include <optional>\n", "#include <stdexcept>\n")


def backend_member_holder(name: str, tag: str, runtime: bool) -> str:
    """A holder that stores the backend it is constructed with in a member,
    read by its factory's `switch` inside call_once. Built from the runtime
    query, that switch is hand-written dispatch (KP101); built from the
    backend its templated accessor is instantiated with, it is the slot's
    compile-time choice and must stay quiet."""
    holder = "".join(part.title() for part in name.split("_")) + "Slot"
    accessor = (f"{holder}& {name}_slot() {{\n  static {holder} slot(gpu_kernel_backend());\n" if runtime
                else f"template <GpuKernelBackend B>\n{holder}& {name}_slot() {{\n  static {holder} slot(B);\n")
    return f"""
mlx::core::fast::CustomKernelFunction build_{name}(GpuKernelBackend which) {{
  switch (which) {{  // {tag}
    case GpuKernelBackend::Metal:
      return mlx::core::fast::metal_kernel("{name}", {{"x"}}, {{"y"}}, "y[0] = x[0];");
    default:
      return mlx::core::fast::cuda_kernel("{name}", {{"x"}}, {{"y"}}, "y[0] = x[0];");
  }}
}}
struct {holder} {{
  std::optional<mlx::core::fast::CustomKernelFunction> fn;
  std::once_flag once;
  GpuKernelBackend which;
  explicit {holder}(GpuKernelBackend w) : which(w) {{}}
  mlx::core::fast::CustomKernelFunction& get() {{
    std::call_once(once, [this] {{ fn = build_{name}(which); }});
    return *fn;
  }}
}};
{accessor}  return slot;
}}
"""


KP101_CASES = [
    Case("eq", "KP101", ROPE, "v:eq", (after(ROPE, ROPE_BODY, "  if (gpu_kernel_backend() == GpuKernelBackend::Cuda) { return x; }  // v:eq\n"),)),
    Case("eq-reversed", "KP101", ROPE, "v:eq-reversed", (after(ROPE, ROPE_BODY, "  if (GpuKernelBackend::Metal == gpu_kernel_backend()) { return x; }  // v:eq-reversed\n"),)),
    Case("ne", "KP101", ROPE, "v:ne", (after(ROPE, ROPE_BODY, "  if (gpu_kernel_backend() != GpuKernelBackend::Metal) { return x; }  // v:ne\n"),)),
    Case("ne-reversed", "KP101", ROPE, "v:ne-reversed", (after(ROPE, ROPE_BODY, "  if (GpuKernelBackend::Rocm != gpu_kernel_backend()) { return x; }  // v:ne-reversed\n"),)),
    Case("local", "KP101", ROPE, "v:local", (after(ROPE, ROPE_BODY,
         "  const GpuKernelBackend running = gpu_kernel_backend();\n  if (running == GpuKernelBackend::Cuda) { return x; }  // v:local\n"),)),
    Case("member-default-initialiser", "KP101", ROPE, "v:member-default", (ROPE_PROBE_NS, after(ROPE, ROPE_BODY,
         "  const RopeBackendByDefault by_default;\n  if (by_default.kind == GpuKernelBackend::Cuda) { return x; }  // v:member-default\n"))),
    Case("member-constructor-initialiser", "KP101", ROPE, "v:member-ctor", (ROPE_PROBE_NS, after(ROPE, ROPE_BODY,
         "  const RopeBackendByInitialiser by_ctor;\n  if (by_ctor.kind == GpuKernelBackend::Cuda) { return x; }  // v:member-ctor\n"))),
    Case("parameter", "KP101", ROPE, "v:param", (ROPE_PROBE_NS, after(ROPE, ROPE_BODY,
         "  const int threads = rope_threads_for(gpu_kernel_backend());\n  if (threads > dims) return x;\n"))),
    Case("switch-case", "KP101", ROPE, "v:switch", (after(ROPE, ROPE_BODY,
         "  switch (gpu_kernel_backend()) {  // v:switch\n    case GpuKernelBackend::Cuda:\n      return x;\n    default:\n      break;\n  }\n"),)),
    Case("switch-with-ifdef-cases", "KP101", ROPE, "v:switch-ifdef", (after(ROPE, ROPE_BODY,
         "  switch (gpu_kernel_backend()) {  // v:switch-ifdef\n    case GpuKernelBackend::Metal:\n      return x;\n"
         "#ifdef MLXCEL_BRIDGE_ROCM_BACKEND\n    case GpuKernelBackend::Rocm:\n      break;\n#endif\n    default:\n      break;\n  }\n"),)),
    Case("one-configuration", "KP101", ROPE, "v:rocm-only", (after(ROPE, ROPE_BODY,
         "#ifdef MLXCEL_BRIDGE_ROCM_BACKEND\n  if (gpu_kernel_backend() == GpuKernelBackend::Rocm) { return x; }  // v:rocm-only\n#endif\n"),)),
    Case("ternary", "KP101", ROPE, "v:ternary", (after(ROPE, ROPE_BODY,
         "  const int group = mlx::core::cu::is_available() ? 64 : 32;  // v:ternary\n  if (group > dims) return x;\n"),)),
    Case("not-available", "KP101", ROPE, "v:not-available", (after(ROPE, ROPE_BODY,
         "  if (!mlx::core::metal::is_available()) { return x; }  // v:not-available\n"),)),
    Case("custom-kernels-available", "KP101", ROPE, "v:custom-available", (after(ROPE, ROPE_BODY,
         "  if (custom_kernels_available() && dims > 0) { return x; }  // v:custom-available\n"),)),
    Case("bool-local", "KP101", ROPE, "v:bool-local", (after(ROPE, ROPE_BODY,
         "  const bool use_cuda = mlx::core::cu::is_available();  // v:bool-local\n  if (use_cuda) return x;\n"),)),
    Case("macro-expansion", "KP101", ROPE, "v:macro", (ROPE_PROBE_NS, after(ROPE, ROPE_BODY,
         "  if (ROPE_ON_CUDA()) { return x; }  // v:macro\n"))),
    # a holder that stores a backend it is constructed with at run time: the factory's switch is a runtime test
    Case("holder-member-from-query", "KP101", ROPE, "v:holder-member",
         (after(ROPE, ROPE_NS, backend_member_holder("rope_any", "v:holder-member", runtime=True)),)),
    # a test guarding a throw before the launch decides whether the launch happens
    Case("throw-before-launch", "KP101", ROPE, "v:throw", (ROPE_STDEXCEPT, after(ROPE, ROPE_BODY,
         "  if (gpu_kernel_backend() == GpuKernelBackend::None) {  // v:throw\n    throw std::runtime_error(\"no GPU\");\n  }\n"))),
    # a test deciding whether a function that launches is called
    Case("calls-a-launcher", "KP101", ROPE, "v:calls-launcher", (before(ROPE, "}  // namespace mlxcel\n",
         "array rope_or_identity(const array& x, const array& positions) {\n"
         "  if (mlx::core::cu::is_available()) {  // v:calls-launcher\n    return apply_rope(x, positions, 10000.0f);\n  }\n"
         "  return x;\n}\n\n"),)),
    # a test whose outcome another unit's launcher branches on (returned across translation units)
    Case("returned-to-another-unit", "KP101", KV, "v:returned", (
         before(KV, "}  // namespace mlxcel\n",
                "bool kv_prefers_identity() {\n  return gpu_kernel_backend() == GpuKernelBackend::Cuda;  // v:returned\n}\n\n"),
         before(ROPE, "array apply_rope(const array& x, const array& positions, float base) {\n",
                "bool kv_prefers_identity();\n\n"),
         after(ROPE, ROPE_BODY, "  if (kv_prefers_identity()) {\n    return x;\n  }\n"))),
    Case("header", "KP101", ATTENTION_LAUNCH, "v:header", (after(ATTENTION_LAUNCH, "  const int heads = q.shape(0);\n",
         "  const int lanes = gpu_kernel_backend() == GpuKernelBackend::Cuda ? 32 : 64;  // v:header\n  if (lanes > heads) return q;\n"),
         after(ATTENTION_LAUNCH, '#include "mlx/mlx.h"\n', '#include "turbo/gpu_backend.h"\n'))),
]


@pytest.fixture(scope="module")
def kp101_engine(tmp_path_factory, kp_cache):
    return run_copy(tmp_path_factory, kp_cache, "kp101", grouped(KP101_CASES))


@pytest.mark.parametrize("case", KP101_CASES, ids=lambda c: c.id)
def test_kp101_catches(case, kp101_engine):
    copy, result = kp101_engine
    (finding, *_) = assert_caught(case, copy, result)
    assert "select_kernel_port(" in finding.message and "outside the helper files" in finding.message


def test_kp101_names_the_table_and_the_macro(kp101_engine):
    copy, result = kp101_engine
    (eq,) = findings_at(result, "KP101", ROPE, copy.line_of(ROPE, "v:eq"))
    assert "select_kernel_port(entry_point, fallback, rope_ports())" in eq.message and "apply_rope" in eq.message
    (macro,) = findings_at(result, "KP101", ROPE, copy.line_of(ROPE, "v:macro"))
    assert "inside macro ROPE_ON_CUDA" in macro.message
    (member,) = findings_at(result, "KP101", ROPE, copy.line_of(ROPE, "v:member-ctor"))
    assert "through a member" in member.message


def test_kp101_one_finding_per_place_across_configurations(kp101_engine):
    copy, result = kp101_engine
    (f,) = findings_at(result, "KP101", ROPE, copy.line_of(ROPE, "v:switch-ifdef"))
    assert f.configuration is None  # the switch exists in both configurations; only its cases differ
    (eq,) = findings_at(result, "KP101", ROPE, copy.line_of(ROPE, "v:eq"))
    assert eq.configuration is None
    # a test that exists in one configuration only names it
    (rocm,) = findings_at(result, "KP101", ROPE, copy.line_of(ROPE, "v:rocm-only"))
    assert rocm.configuration == "rocm"


def test_kp101_backend_parameter_without_callers_fails_closed(tmp_path_factory, kp_cache):
    tag = "v:unknown-origin"
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp101-unknown", [after(KV, "using mlx::core::array;\n",
        "int kv_lanes(GpuKernelBackend backend) {\n  return backend == GpuKernelBackend::Rocm ? 64 : 32;  // v:unknown-origin\n}\n")])
    (f,) = findings_at(result, "KP101", KV, copy.line_of(KV, tag))
    assert "could not be followed" in f.message


KP101_DECOYS = [
    ("comment", ROPE, "d:comment", after(ROPE, ROPE_BODY,
        "  // if (gpu_kernel_backend() == GpuKernelBackend::Cuda) { ... }  d:comment\n"
        "  /* !mlx::core::metal::is_available() d:block-comment */\n")),
    ("string", ROPE, "d:string", after(ROPE, ROPE_BODY,
        "  const char* note = \"gpu_kernel_backend() == GpuKernelBackend::Cuda\";  // d:string\n  (void)note;\n")),
    ("raw-string", ROPE, "d:raw", after(ROPE, ROPE_BODY,
        "  const char* raw_note = R\"(if (!mlx::core::cu::is_available()) return;)\";  // d:raw\n  (void)raw_note;\n")),
    ("ifdef-build-switch", ROPE, "d:ifdef", after(ROPE, ROPE_BODY,
        "#ifdef MLXCEL_BRIDGE_ROCM_BACKEND\n  const int wave = 64;  // d:ifdef\n#else\n  const int wave = 32;\n#endif\n"
        "#if defined(__CUDACC__) || defined(__HIP_PLATFORM_AMD__)\n  (void)wave;\n#endif\n")),
    ("templated-backend-holder", ROPE, "d:template", after(ROPE, ROPE_NS,
        "template <GpuKernelBackend B>\nint rope_lanes() {\n  if constexpr (B == GpuKernelBackend::Rocm) {  // d:template\n    return 64;\n  }\n"
        "  switch (B) {  // d:template-switch\n    case GpuKernelBackend::Cuda:\n      return 32;\n    default:\n      return 1;\n  }\n}\n"
        "int rope_width_for(GpuKernelBackend backend) {\n  return backend == GpuKernelBackend::Metal ? 32 : 64;  // d:constant-argument\n}\n")),
    # a holder that stores the backend its templated accessor is instantiated with, read by its factory inside
    # call_once: the factory's switch is the slot's compile-time choice
    ("holder-member-from-template", ROPE, "d:holder-member",
     after(ROPE, ROPE_NS, backend_member_holder("rope_probe", "d:holder-member", runtime=False))),
    ("templated-backend-use", ROPE, "d:template-use", after(ROPE, ROPE_BODY,
        "  const int lanes = rope_lanes<GpuKernelBackend::Cuda>() + rope_width_for(GpuKernelBackend::Rocm);  // d:template-use\n  (void)lanes;\n")),
    # a backend test that decides no kernel: whether a quantized product matches a dense one (the caller picks
    # between two library operations by it) ...
    ("decides-library-op", ROPE, "d:dense-match", after(ROPE, ROPE_NS,
        "bool rope_rows_match_dense(const array& x) {\n"
        "  if (gpu_kernel_backend() != GpuKernelBackend::Rocm || x.ndim() < 2) {  // d:dense-match\n    return true;\n  }\n"
        "  return x.shape(0) == 1;\n}\n"
        "array rope_reference(const array& x) {\n"
        "  return rope_rows_match_dense(x) ? mlx::core::matmul(x, x) : mlx::core::multiply(x, x);\n}\n")),
    # ... and one that picks the dtype of scalar constants fed to library operations, in a function that launches
    ("decides-scalar-dtype", ROPE, "d:scalar-dtype", after(ROPE, ROPE_BODY,
        "  const bool scalars_in_x_dtype = !mlx::core::metal::is_available();  // d:scalar-dtype\n"
        "  auto scalar = [&](float v) { return scalars_in_x_dtype ? array(v, x.dtype()) : array(v); };\n"
        "  const array shifted = mlx::core::add(x, scalar(0.5f));\n  (void)shifted;\n")),
    ("helper-file", KERNEL_PORT, "d:helper", after(KERNEL_PORT, "  const KernelPortGetter port = port_for_running_backend(ports);\n",
        "  if (mlx::core::metal::is_available() && gpu_kernel_backend() != GpuKernelBackend::Metal) {  // d:helper\n    return port();\n  }\n")),
    ("helper-includes", KERNEL_PORT, "d:helper-include", after(KERNEL_PORT, "#include <string>\n",
        "#include \"mlx/backend/metal/metal.h\"  // d:helper-include\n")),
]


@pytest.fixture(scope="module")
def kp101_decoys(tmp_path_factory, kp_cache):
    return run_copy(tmp_path_factory, kp_cache, "kp101-decoys", [m for _, _, _, m in KP101_DECOYS])


def test_kp101_decoys_copy_is_clean(kp101_decoys):
    _, result = kp101_decoys
    assert result.findings == [], describe(result)


@pytest.mark.parametrize("decoy", KP101_DECOYS, ids=lambda d: d[0])
def test_kp101_decoy_stays_quiet(decoy, kp101_decoys):
    copy, result = kp101_decoys
    _, path, tag, _ = decoy
    assert_quiet(copy, result, path, tag)
    # the decoy really is in the copy the check read
    assert tag in copy.file(path).read_text()


def test_kp101_scope_launchers_then_everywhere(tmp_path_factory, kp_cache):
    bridge_test = after(BRIDGE, "MLXCEL_API bool mlxcel_rope_available() {\n",
                        "  if (mlxcel::gpu_kernel_backend() == mlxcel::GpuKernelBackend::Cuda) {  // v:bridge\n    return false;\n  }\n")
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp101-launchers", [bridge_test])
    # the bridge launches nothing and defines no table, holder or predicate: out of scope by default
    assert_quiet(copy, result, BRIDGE, "v:bridge")
    wide = Mutation(REGISTRY_KEY, "rule_scope: launchers", "rule_scope: everywhere")
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp101-everywhere", [bridge_test, wide])
    assert findings_at(result, "KP101", BRIDGE, copy.line_of(BRIDGE, "v:bridge")), describe(result)


# ---------------------------------------------------------------------------
# KP102 hand-rolled-refusal
# ---------------------------------------------------------------------------

NORM_STDEXCEPT = after(NORM, NORM_INCLUDES, "#include <stdexcept>\n")

KP102_CASES = [
    Case("not-call", "KP102", NORM, "v:not-call", (NORM_STDEXCEPT, after(NORM, NORM_BODY,
         "  if (!fused_add_rms_norm_available()) {  // v:not-call\n    throw std::runtime_error(\"fused_add_rms_norm: no port\");\n  }\n"))),
    Case("equals-false", "KP102", NORM, "v:equals-false", (NORM_STDEXCEPT, after(NORM, NORM_BODY,
         "  if (fused_add_rms_norm_available() == false) throw std::runtime_error(\"no port\");  // v:equals-false\n"))),
    Case("compound", "KP102", NORM, "v:compound", (NORM_STDEXCEPT, after(NORM, NORM_BODY,
         "  if (!custom_kernels_available() || !has_kernel_port(fused_norm_ports())) {  // v:compound\n"
         "    throw std::runtime_error(\"fused_add_rms_norm: no port\");\n  }\n"))),
    Case("bool-local", "KP102", NORM, "v:bool-local", (NORM_STDEXCEPT, after(NORM, NORM_BODY,
         "  const bool has_port = has_kernel_port(fused_norm_ports());\n"
         "  if (!has_port) {  // v:bool-local\n    throw std::runtime_error(\"fused_add_rms_norm: no port\");\n  }\n"))),
    Case("availability", "KP102", NORM, "v:availability", (NORM_STDEXCEPT, after(NORM, NORM_BODY,
         "  if (!mlx::core::metal::is_available()) {  // v:availability\n    throw std::invalid_argument(\"needs Metal\");\n  }\n"))),
    # only the query flow of the unit knows the local holds a backend (it is assigned, not initialised)
    Case("assigned-query", "KP102", NORM, "v:assigned-query", (NORM_STDEXCEPT, after(NORM, NORM_BODY,
         "  GpuKernelBackend kind;\n  kind = gpu_kernel_backend();\n"
         "  if (kind != GpuKernelBackend::Metal) {  // v:assigned-query\n    throw std::runtime_error(\"needs Metal\");\n  }\n"))),
]


@pytest.fixture(scope="module")
def kp102_engine(tmp_path_factory, kp_cache):
    return run_copy(tmp_path_factory, kp_cache, "kp102", grouped(KP102_CASES))


@pytest.mark.parametrize("case", KP102_CASES, ids=lambda c: c.id)
def test_kp102_catches(case, kp102_engine):
    copy, result = kp102_engine
    (finding, *_) = assert_caught(case, copy, result)
    assert "select_kernel_port(" in finding.message and "fused_norm_ports()" in finding.message


def test_kp102_other_throws_stay_quiet(tmp_path_factory, kp_cache):
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp102-quiet", [NORM_STDEXCEPT, after(NORM, NORM_BODY,
        "  if (n == 0) {  // d:shape-check\n    throw std::invalid_argument(\"empty rows\");\n  }\n")])
    assert result.findings == [], describe(result)
    assert_quiet(copy, result, NORM, "d:shape-check")


def test_kp102_select_kernel_port_body_is_not_a_refusal(tmp_path_factory, kp_cache):
    """With the helper files no longer exempt, select_kernel_port's own refusal is still not one."""
    muts = [
        Mutation(REGISTRY_KEY, '    - "src/lib/mlx-cpp/turbo/kernel_port.cpp"\n', ""),
        Mutation(REGISTRY_KEY, "rule_scope: launchers", "rule_scope: everywhere"),
        after(KERNEL_PORT, "  const KernelPortGetter port = port_for_running_backend(ports);\n",
              "  if (!custom_kernels_available()) {  // d:selector-body\n"
              "    throw std::runtime_error(std::string(entry_point) + \" needs custom kernels; use \" + fallback);\n  }\n"),
        after(KERNEL_PORT, "bool has_kernel_port(const KernelPorts& ports) {\n",
              "  if (gpu_kernel_backend() == GpuKernelBackend::None) {  // v:other-function\n"
              "    throw std::runtime_error(\"no backend\");\n  }\n"),
    ]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp102-selector", muts)
    assert_quiet(copy, result, KERNEL_PORT, "d:selector-body", codes=("KP102",))
    assert findings_at(result, "KP102", KERNEL_PORT, copy.line_of(KERNEL_PORT, "v:other-function")), describe(result)


def test_kp102_helper_files_are_exempt(tmp_path_factory, kp_cache):
    muts = [Mutation(REGISTRY_KEY, "rule_scope: launchers", "rule_scope: everywhere"),
            after(GPU_BACKEND, "int rocm_port_warp_size() {\n",
                  "  if (!custom_kernels_available()) {  // d:helper-refusal\n    throw 0;\n  }\n")]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp102-helper", muts)
    assert result.findings == [], describe(result)
    assert_quiet(copy, result, GPU_BACKEND, "d:helper-refusal")


# ---------------------------------------------------------------------------
# KP103 direct-holder-access
# ---------------------------------------------------------------------------

KP103_CASES = [
    Case("accessor-get", "KP103", SAMPLING, "v:accessor-get", (after(SAMPLING, SAMPLING_TOPK_BODY,
         "  mlx::core::fast::CustomKernelFunction& direct = get_top_k_kernel().get();  // v:accessor-get\n  (void)direct;\n"),)),
    Case("bound-reference", "KP103", ROPE, "v:bound-ref", (after(ROPE, ROPE_BODY,
         "  auto& holder = get_rope_kernel_cuda();  // v:bound-ref\n  mlx::core::fast::CustomKernelFunction& bypass = holder.get();\n  (void)bypass;\n"),)),
    Case("bound-pointer", "KP103", SAMPLING, "v:bound-pointer", (after(SAMPLING, SAMPLING_TOPK_BODY,
         "  TopKKernel* picked;\n  picked = &get_top_k_kernel();  // v:bound-pointer\n  (void)picked->get();\n"),)),
    Case("templated-accessor", "KP103", KV, "v:templated", (after(KV, KV_BODY,
         "  mlx::core::fast::CustomKernelFunction& cuda_kernel = get_kv_write_kernel<GpuKernelBackend::Cuda>().get();  // v:templated\n"
         "  (void)cuda_kernel;\n"),)),
    Case("factory-in-launcher", "KP103", NORM, "v:factory", (after(NORM, NORM_BODY,
         "  mlx::core::fast::CustomKernelFunction adhoc = mlx::core::fast::cuda_kernel(\"adhoc\", {\"x\"}, {\"out\"}, FUSED_NORM_CUDA_SOURCE);  // v:factory\n"
         "  (void)adhoc;\n"),)),
    Case("accessor-returning-the-kernel", "KP103", ATTENTION, "v:accessor-call", (
         before(ATTENTION, "}  // namespace\n\nconst KernelPorts& sdpa_exact_ports() {",
                "mlx::core::fast::CustomKernelFunction& get_sdpa_exact_function() {\n"
                "  static mlx::core::fast::CustomKernelFunction kernel = mlx::core::fast::metal_kernel(\"mlxcel_sdpa_x\", {\"q\"}, {\"out\"}, SDPA_EXACT_METAL_SOURCE);\n"
                "  return kernel;\n}\n\n"),
         after(ATTENTION, "  const bool exact = window == 0;\n",
               "  mlx::core::fast::CustomKernelFunction& fixed = get_sdpa_exact_function();  // v:accessor-call\n  (void)fixed;\n"))),
]


@pytest.fixture(scope="module")
def kp103_engine(tmp_path_factory, kp_cache):
    return run_copy(tmp_path_factory, kp_cache, "kp103", grouped(KP103_CASES))


@pytest.mark.parametrize("case", KP103_CASES, ids=lambda c: c.id)
def test_kp103_catches(case, kp103_engine):
    copy, result = kp103_engine
    (finding, *_) = assert_caught(case, copy, result)
    assert "select_kernel_port(" in finding.message


def test_kp103_names_the_table(kp103_engine):
    copy, result = kp103_engine
    (f,) = findings_at(result, "KP103", KV, copy.line_of(KV, "v:templated"))
    assert "kv_write_ports()" in f.message and "get_kv_write_kernel<GpuKernelBackend::Cuda>" in f.message


def test_kp103_slots_stay_quiet(tmp_path_factory, kp_cache):
    """Slot lambdas (any spelling) and a slot given as a getter function are the table's own access."""
    muts = [
        Mutation(ROPE, "      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_rope_kernel().get(); },\n",
                 "      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& {\n"
                 "        auto& holder = get_rope_kernel();  // d:slot-bound-ref\n        return holder.get();\n      },\n"),
        Mutation(ROPE, "      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_rope_kernel_cuda().get(); },\n",
                 "      .cuda = &rope_cuda_port,\n"),
        before(ROPE, "}  // namespace\n\nconst KernelPorts& rope_ports() {",
               "mlx::core::fast::CustomKernelFunction& rope_cuda_port() {\n  return get_rope_kernel_cuda().get();  // d:slot-function\n}\n\n"),
    ]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp103-slots", muts)
    # The getter function's own name is the slot's accessor for the drift
    # rules (KP303 would want `cuda: rope_cuda_port`); only dispatch rules count here.
    dispatch = [f for f in result.findings if f.rule.startswith("KP1")]
    assert dispatch == [], describe(result)
    assert_quiet(copy, result, ROPE, "d:slot-bound-ref")
    assert_quiet(copy, result, ROPE, "d:slot-function")


# ---------------------------------------------------------------------------
# KP105 any-wave-lane-op
# ---------------------------------------------------------------------------

# One line of the any-wave rope HIP body per lane-operation class.
LANE_LINES = [
    ("shuffle", "  const float shuffled = __shfl_down(theta, 1);  // v:shuffle\n"),
    ("shuffle-sync", "  const float xored = __shfl_xor_sync(0xffffffff, theta, 2);  // v:shuffle-sync\n"),
    ("ballot", "  const unsigned long long mask = __ballot(pair > 0);  // v:ballot\n"),
    ("vote-any", "  const bool some = __any(pair > 0);  // v:vote-any\n"),
    ("vote-all", "  const bool every = __all(pair > 0);  // v:vote-all\n"),
    ("lane-id", "  const int lane = __lane_id();  // v:lane-id\n"),
    ("dpp", "  const int moved = __builtin_amdgcn_update_dpp(0, pair, 0x111, 0xf, 0xf, false);  // v:dpp\n"),
    ("permlane", "  const int swapped = __builtin_amdgcn_permlanex16(pair, pair, 0, 0, false, false);  // v:permlane\n"),
    ("ds-swizzle", "  const int swizzled = __builtin_amdgcn_ds_swizzle(pair, 0x1f);  // v:ds-swizzle\n"),
    ("readlane", "  const int first = __builtin_amdgcn_readlane(pair, 0);  // v:readlane\n"),
    ("warpSize", "  const int width = warpSize;  // v:warpSize\n"),
    ("wavefront-macro", "#if __AMDGCN_WAVEFRONT_SIZE == 64  // v:wavefront-macro\n  const int half = 32;\n#endif\n"),
    ("wave-size-like", "  const int per_wave = D / ROPE_WAVE_SIZE;  // v:wave-size-like\n"),
    ("lane-modulo", "  const int lane_mod = threadIdx.x % 32;  // v:lane-modulo\n"),
    ("lane-mask", "  const int lane_and = threadIdx.x & 31;  // v:lane-mask\n"),
]

KP105_CATALOGUE = [Case(name, "KP105", ROPE_HIP, f"v:{name}", (after(ROPE_HIP, ROPE_HIP_BODY, text),)) for name, text in LANE_LINES]

DEEP_CHAIN = (
    Mutation(ROPE, "#ifdef MLXCEL_BRIDGE_ROCM_BACKEND\nKernelHolder& get_rope_kernel_hip() {",
             "#ifdef MLXCEL_BRIDGE_ROCM_BACKEND\n"
             "constexpr const char* ROPE_DEEP_HIP_SOURCE = R\"(\n"
             "  const int first = __builtin_amdgcn_readfirstlane(blockIdx.x);  // v:deep\n"
             "  out[first] = x[first];\n)\";\n\n"
             "mlx::core::fast::CustomKernelFunction build_rope_hip_inner(const char* name) {\n"
             "  return mlx::core::fast::hip_kernel(name, {\"x\", \"positions\", \"base\"}, {\"out\"}, ROPE_DEEP_HIP_SOURCE);\n}\n\n"
             "mlx::core::fast::CustomKernelFunction build_rope_hip_middle() {\n  return build_rope_hip_inner(\"mlxcel_rope\");\n}\n\n"
             "mlx::core::fast::CustomKernelFunction build_rope_hip_outer() {\n  return build_rope_hip_middle();\n}\n\n"
             "KernelHolder& get_rope_kernel_hip() {"),
    Mutation(ROPE, '    return mlx::core::fast::hip_kernel("mlxcel_rope", {"x", "positions", "base"}, {"out"}, ROPE_HIP_SOURCE, ROPE_HIP_HEADER);\n',
             "    return build_rope_hip_outer();\n"),
)

KP105_PLACES = [
    Case("header-constant", "KP105", ROPE_HIP, "v:header-constant", (after(ROPE_HIP, "__device__ inline float rope_angle(float position, float base, int pair, int dims) {\n",
         "  const unsigned long long active = __ballot(pair > 0);  // v:header-constant\n"),)),
    Case("concatenated-literal", "KP105", KV_HIP, "v:second-piece", (after(KV_HIP, "  const bool fresh = row >= start && row < start + NEW_ROWS;\n",
         "  const int lane = __lane_id();  // v:second-piece\n"),)),
    Case("header-file", "KP105", TURBO + "rope_lane_hip.h", "v:header-file", (
         after(ROPE_HIP, 'constexpr const char* ROPE_HIP_HEADER = R"(\n', '#include "turbo/rope_lane_hip.h"\n'),
         Mutation(TURBO + "rope_lane_hip.h", "", "// Device helpers the rope HIP header pulls in.\n#pragma once\n\n"
                  "__device__ inline int rope_lane() {\n  return __lane_id();  // v:header-file\n}\n"))),
]

KP105_DEEP = Case("call-graph-any-depth", "KP105", ROPE, "v:deep", DEEP_CHAIN)
KP105_LITERAL = Case("literal-at-the-call", "KP105", KV, "v:literal", (Mutation(KV, '{"out"}, KV_WRITE_HIP_SOURCE);',
                     '{"out"},\n          R"(\n  const int lane = __lane_id();  // v:literal\n)"\n          R"(\n  out[lane] = cache[lane];\n)");'),))


@pytest.fixture(scope="module")
def kp105_catalogue(tmp_path_factory, kp_cache):
    return run_copy(tmp_path_factory, kp_cache, "kp105-ops", grouped(KP105_CATALOGUE))


@pytest.mark.parametrize("case", KP105_CATALOGUE, ids=lambda c: c.id)
def test_kp105_catches_every_lane_op_class(case, kp105_catalogue):
    copy, result = kp105_catalogue
    (finding, *_) = assert_caught(case, copy, result)
    assert finding.kernel == "rope" and finding.configuration == "rocm"
    assert "rope_ports().rocm" in finding.message and "drop the mark" in finding.message


@pytest.fixture(scope="module")
def kp105_places(tmp_path_factory, kp_cache):
    return run_copy(tmp_path_factory, kp_cache, "kp105-places", grouped(KP105_PLACES))


@pytest.mark.parametrize("case", KP105_PLACES, ids=lambda c: c.id)
def test_kp105_scans_every_body_a_marked_slot_compiles(case, kp105_places):
    copy, result = kp105_places
    assert_caught(case, copy, result)


@pytest.fixture(scope="module")
def kp105_calls(tmp_path_factory, kp_cache):
    """Bodies reached another way: through helpers at any depth, or written at the call."""
    return run_copy(tmp_path_factory, kp_cache, "kp105-calls", grouped([KP105_DEEP, KP105_LITERAL]))


@pytest.mark.parametrize("case", [KP105_DEEP, KP105_LITERAL], ids=lambda c: c.id)
def test_kp105_follows_the_slot_to_the_hip_kernel_call(case, kp105_calls):
    copy, result = kp105_calls
    assert_caught(case, copy, result)


def test_kp105_unreadable_body_fails_closed(tmp_path_factory, kp_cache):
    muts = [Mutation(KV, '{"out"}, KV_WRITE_HIP_SOURCE);', '{"out"}, kv_write_hip_source());  // v:unreadable'),
            before(KV, "template <GpuKernelBackend B>\nmlx::core::fast::CustomKernelFunction make_kv_write_kernel() {",
                   "const char* kv_write_hip_source() {\n  return KV_WRITE_HIP_SOURCE;\n}\n\n")]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp105-unreadable", muts)
    (f,) = findings_at(result, "KP105", KV, copy.line_of(KV, "v:unreadable"))
    assert "fails closed" in f.message and "kv_write_hip_source()" in f.message


def test_kp105_decoys_stay_quiet(tmp_path_factory, kp_cache):
    muts = [
        # lane-op names in comments and strings inside any-wave bodies
        after(ROPE_HIP, ROPE_HIP_BODY, "  // __shfl_xor, __ballot, warpSize and threadIdx.x % 32 are not used here  d:comment\n"
                                       "  /* __lane_id() d:block-comment */\n"
                                       "  const char* label = \"__shfl_down\";  // d:string\n"),
        after(KV_HIP, "  const bool fresh = row >= start && row < start + NEW_ROWS;\n", "  // __builtin_amdgcn_readlane d:split-comment\n"),
        # lane ops in bodies no marked .rocm slot compiles
        after(NORM, "  sum = simd_sum(sum);\n", "  sum += __shfl_xor(sum, 1);  // d:metal-body\n"),
        after(TURBO + "fused_norm_hip.h", "    sum += __shfl_xor(sum, offset);\n", "    sum += __ballot(sum > 0);  // d:unmarked-table\n"),
        after(ROPE, "  const int row = blockIdx.y;\n", "  const int lane = threadIdx.x % 32;  // d:cuda-body\n"),
    ]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp105-decoys", muts)
    assert result.findings == [], describe(result)
    for path, tag in ((ROPE_HIP, "d:comment"), (ROPE_HIP, "d:string"), (KV_HIP, "d:split-comment"), (NORM, "d:metal-body"),
                      (TURBO + "fused_norm_hip.h", "d:unmarked-table"), (ROPE, "d:cuda-body")):
        assert_quiet(copy, result, path, tag)


def test_kp105_lane_ops_come_from_the_registry(tmp_path_factory, kp_cache):
    muts = [Mutation(REGISTRY_KEY, "  lane_ops: default\n", '  lane_ops: ["rope_lane_exchange*"]\n'),
            after(ROPE_HIP, ROPE_HIP_BODY, "  const float other = rope_lane_exchange_f32(theta);  // v:custom\n"
                                           "  const float builtin = __shfl_xor(theta, 1);  // d:not-listed\n")]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp105-registry", muts)
    assert findings_at(result, "KP105", ROPE_HIP, copy.line_of(ROPE_HIP, "v:custom")), describe(result)
    assert_quiet(copy, result, ROPE_HIP, "d:not-listed")


def test_lane_op_patterns_are_data():
    tokens = ("int", "l", "=", "threadIdx", ".", "x", "%", "32", ";", "__shfl_xor", "(", "v", ")")
    uses = find_lane_ops(tokens, tuple(range(1, len(tokens) + 1)), LANE_OPS)
    assert [(u.text, u.line) for u in uses] == [("threadIdx.x % 32", 4), ("__shfl_xor", 10)]
    assert find_lane_ops(tokens, (), ("__shfl_xor",))[0].line == 0
    assert find_lane_ops(("__alloca", "(", "4", ")"), (1, 1, 1, 1), LANE_OPS) == []


# ---------------------------------------------------------------------------
# KP106 test-seam-outside-tests (C++; the Rust side is in test_rules_rust.py)
# ---------------------------------------------------------------------------

SEAM = "set_rocm_port_warp_size_for_tests"


def test_kp106_cpp_production_calls(tmp_path_factory, kp_cache):
    startup = TURBO + "startup.cpp"
    muts = [
        after(ROPE, ROPE_BODY, f"  {SEAM}(64);  // v:launcher\n"),
        Mutation(startup, "", '#include "turbo/gpu_backend.h"\n\nnamespace mlxcel {\n\nvoid engine_startup() {\n'
                 f"  {SEAM}(32);  // v:startup\n}}\n\n}}  // namespace mlxcel\n"),
    ]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp106-cpp", muts)
    for path, tag in ((ROPE, "v:launcher"), (startup, "v:startup")):
        (f,) = findings_at(result, "KP106", path, copy.line_of(path, tag))
        assert SEAM in f.message and "only from tests" in f.message


def test_kp106_cpp_allowed_places_stay_quiet(tmp_path_factory, kp_cache):
    support = "src/lib/mlx-cpp/test_support/wave.cpp"
    wrapper = TURBO + "seam_forward.cpp"
    muts = [
        # a test-support file (the seam's `tests` globs)
        Mutation(support, "", '#include "turbo/gpu_backend.h"\n\nvoid force_wave64() {\n'
                 f"  mlxcel::{SEAM}(64);  // d:test-support\n}}\n"),
        # another forwarding wrapper, anywhere
        Mutation(wrapper, "", '#include "turbo/gpu_backend.h"\n\nnamespace mlxcel {\n\nvoid force_wave(int width) {\n'
                 f"  {SEAM}(width);  // d:forwarding\n}}\n\n}}  // namespace mlxcel\n"),
        # a call that is not a plain forwarding, in a file the seam allows
        after(BRIDGE, "MLXCEL_API void mlxcel_set_rocm_port_warp_size_for_tests(int warp_size) {\n",
              f"  mlxcel::{SEAM}(0);  // d:allowed-file\n"),
    ]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp106-cpp-quiet", muts)
    assert result.findings == [], describe(result)
    for path, tag in ((support, "d:test-support"), (wrapper, "d:forwarding"), (BRIDGE, "d:allowed-file")):
        assert_quiet(copy, result, path, tag)


# ---------------------------------------------------------------------------
# KP107 predicate-not-from-table
# ---------------------------------------------------------------------------

KP107_CASES = [
    Case("not-from-has-kernel-port", "KP107", ROPE, "bool rope_available() {", (Mutation(ROPE, "  return has_kernel_port(rope_ports());\n",
         "  return custom_kernels_available();\n"),)),
    Case("also-a-backend-test", "KP107", SAMPLING, "bool top_k_available() {", (Mutation(SAMPLING, "  return has_kernel_port(top_k_ports());\n",
         "  return has_kernel_port(top_k_ports()) && mlx::core::metal::is_available();\n"),)),
    Case("backend-test-through-another-unit", "KP107", KV, "bool kv_write_available() {", (
         Mutation(KV, "  return has_kernel_port(kv_write_ports());\n", "  return engine_on_metal() && has_kernel_port(kv_write_ports());\n"),
         before(KV, "bool kv_write_available() {\n", "bool engine_on_metal();\n\n"),
         before(SAMPLING, "// No device pre-check: top_k_indices", "bool engine_on_metal() {\n  return mlx::core::metal::is_available();\n}\n\n"))),
    Case("backend-test-through-a-wrapper", "KP107", ACTIVATIONS, "bool swiglu_available() {", (
         Mutation(ACTIVATIONS, "  return has_kernel_port(swiglu_ports());\n", "  return has_kernel_port(swiglu_ports()) && swiglu_backend_ok();\n"),
         before(ACTIVATIONS, "bool swiglu_available() {\n", "namespace {\nbool swiglu_backend_ok() {\n  return gpu_kernel_backend() != GpuKernelBackend::Rocm;\n}\n}  // namespace\n\n"),
         after(ACTIVATIONS, '#include "turbo/activations_hip.h"\n', '#include "turbo/gpu_backend.h"\n'))),
    Case("missing-one-of-its-tables", "KP107", ATTENTION, "bool sdpa_available() {", (Mutation(ATTENTION,
         "  return has_kernel_port(sdpa_exact_ports()) && has_kernel_port(sdpa_window_ports());\n", "  return has_kernel_port(sdpa_exact_ports());\n"),)),
    Case("another-kernels-table", "KP107", SAMPLING, "bool gumbel_sample_available() {", (Mutation(SAMPLING,
         "  return has_kernel_port(gumbel_ports());\n", "  return has_kernel_port(gumbel_ports()) && has_kernel_port(top_k_ports());\n"),)),
    Case("table-not-followed", "KP107", NORM, "bool fused_add_rms_norm_available() {", (
         Mutation(NORM, "  return has_kernel_port(fused_norm_ports());\n", "  return has_kernel_port(fused_norm_table_for_device());\n"),
         before(NORM, "bool fused_add_rms_norm_available() {\n", "const KernelPorts& fused_norm_table_for_device();\n\n"))),
    # bridge wrappers with a registry predicate's name that forward elsewhere, or do not just forward
    Case("forwards-to-another-kernels-predicate", "KP107", BRIDGE, "v:forward-other", (after(BRIDGE, '}  // extern "C"\n', """
namespace bridge_cxx {
bool swiglu_available() {  // v:forward-other
  return mlxcel::rope_available();
}
bool gumbel_sample_available() {  // v:forward-negated
  return !mlxcel::gumbel_sample_available();
}
bool top_k_ready();
bool top_k_available() {  // v:forward-undefined
  return top_k_ready();
}
}  // namespace bridge_cxx
"""),)),
    Case("forwards-negated", "KP107", BRIDGE, "v:forward-negated", ()),
    Case("forwards-to-undefined", "KP107", BRIDGE, "v:forward-undefined", ()),
]
# The definition is gone (the declaration in turbo_kernels.h and the bridge's call remain).
KP107_ABSENT = Case("absent-from-code", "KP107", REGISTRY_KEY, "  - name: rope\n", (Mutation(ROPE,
                    "bool rope_available() {\n  if (mlx::core::default_device() != mlx::core::Device(mlx::core::Device::gpu)) {\n"
                    "    return false;\n  }\n  return has_kernel_port(rope_ports());\n}\n", ""),))


@pytest.fixture(scope="module")
def kp107_engine(tmp_path_factory, kp_cache):
    return run_copy(tmp_path_factory, kp_cache, "kp107", grouped(KP107_CASES))


@pytest.mark.parametrize("case", KP107_CASES, ids=lambda c: c.id)
def test_kp107_catches(case, kp107_engine):
    copy, result = kp107_engine
    (finding, *_) = assert_caught(case, copy, result)
    assert "has_kernel_port(" in finding.message


def test_kp107_absent_predicate_is_reported_at_the_registry_kernel(tmp_path_factory, kp_cache):
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp107-absent", KP107_ABSENT.mutations)
    line = copy.line_of(REGISTRY_KEY, "  - name: rope\n")
    hits = findings_at(result, "KP107", str(copy.registry_path), line)
    assert hits and hits[0].kernel == "rope" and "rope_available" in hits[0].message, describe(result)
    assert "no such function is defined" in hits[0].message


def test_kp107_messages_say_what_is_wrong(kp107_engine):
    copy, result = kp107_engine

    def at(path, tag):
        (f,) = findings_at(result, "KP107", path, copy.line_of(path, tag))
        return f.message

    assert "never calls has_kernel_port" in at(ROPE, "bool rope_available() {")
    assert "mlx::core::metal::is_available()" in at(KV, "bool kv_write_available() {")
    assert "mlxcel::gpu_kernel_backend()" in at(ACTIVATIONS, "bool swiglu_available() {")
    assert "does not read sdpa_window_ports()" in at(ATTENTION, "bool sdpa_available() {")
    assert "top_k_ports(), a table of another kernel" in at(SAMPLING, "bool gumbel_sample_available() {")
    assert "fails closed" in at(NORM, "bool fused_add_rms_norm_available() {")
    assert "only forwards to mlxcel::rope_available(), which is not a registry predicate of swiglu" in at(BRIDGE, "v:forward-other")
    assert "never calls has_kernel_port" in at(BRIDGE, "v:forward-negated")
    assert "bridge_cxx::top_k_ready(), which is not defined in the code" in at(BRIDGE, "v:forward-undefined")


def test_kp107_allowed_shapes_stay_quiet(tmp_path_factory, kp_cache):
    muts = [
        # the GPU-default-device pre-check through the helper
        Mutation(NORM, "  if (mlx::core::default_device() != mlx::core::Device(mlx::core::Device::gpu)) {\n    return false;\n  }\n"
                       "  return has_kernel_port(fused_norm_ports());\n",
                 "  if (!gpu_backend_available()) {  // d:gpu-precheck\n    return false;\n  }\n  return has_kernel_port(fused_norm_ports());\n"),
        # the table through a local
        Mutation(ROPE, "  return has_kernel_port(rope_ports());\n", "  const KernelPorts& table = rope_ports();\n  return has_kernel_port(table);  // d:local-table\n"),
        # bridge wrappers of the same name in another namespace that only return the real predicate
        after(BRIDGE, '}  // extern "C"\n', "\nnamespace bridge_cxx {\nbool rope_available() {  // d:forward-same-name\n"
              "  return mlxcel::rope_available();\n}\nbool sdpa_available() {  // d:forward-two-tables\n"
              "  return (mlxcel::sdpa_available());\n}\n}  // namespace bridge_cxx\n"),
    ]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp107-quiet", muts)
    assert result.findings == [], describe(result)
    for tag in ("d:forward-same-name", "d:forward-two-tables"):
        assert_quiet(copy, result, BRIDGE, tag)


# ---------------------------------------------------------------------------
# Selection and severity on a mutated engine (decided in findings.apply_policy)
# ---------------------------------------------------------------------------

POLICY_MUTATIONS = [
    after(ROPE, ROPE_BODY, "  if (gpu_kernel_backend() == GpuKernelBackend::Cuda) { return x; }  // v:policy-kp101\n"),
    after(ROPE, ROPE_BODY, f"  {SEAM}(64);  // v:policy-kp106\n"),
]


@pytest.fixture(scope="module")
def policy_engine(tmp_path_factory, kp_cache, monkeypatch_module):
    copy = engine_copy(tmp_path_factory.mktemp("policy"), *POLICY_MUTATIONS)
    monkeypatch_module.setenv("XDG_CACHE_HOME", str(kp_cache.parent))
    return copy


@pytest.fixture(scope="module")
def monkeypatch_module():
    mp = pytest.MonkeyPatch()
    yield mp
    mp.undo()


def _cli(copy, capsys, *extra):
    code = main(["check", "--registry", str(copy.registry_path), "--root", str(copy.root), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_reports_both_codes_by_default(policy_engine, capsys):
    code, out, _ = _cli(policy_engine, capsys)
    assert code == 1 and "[KP101]" in out and "[KP106]" in out


def test_cli_select_kp101(policy_engine, capsys):
    code, out, _ = _cli(policy_engine, capsys, "--select", "KP101")
    line = policy_engine.line_of(ROPE, "v:policy-kp101")
    assert code == 1 and f"{ROPE}:{line}:" in out and "[KP101]" in out and "[KP106]" not in out


def test_cli_ignore_kp1_prefix(policy_engine, capsys):
    code, out, _ = _cli(policy_engine, capsys, "--ignore", "KP106")
    assert code == 1 and "[KP101]" in out and "[KP106]" not in out
    code, out, _ = _cli(policy_engine, capsys, "--ignore", "KP1")
    assert code == 0 and "[KP1" not in out and "0 error(s)" in out


def test_registry_severity_makes_kp101_a_warning(policy_engine, capsys):
    registry = policy_engine.registry_path
    registry.write_text(registry.read_text().replace("severity: {KP202: warning}", "severity: {KP202: warning, KP101: warning}"))
    try:
        code, out, _ = _cli(policy_engine, capsys, "--select", "KP101")
    finally:
        registry.write_text(registry.read_text().replace("severity: {KP202: warning, KP101: warning}", "severity: {KP202: warning}"))
    line = policy_engine.line_of(ROPE, "v:policy-kp101")
    assert code == 0, out
    assert f"{ROPE}:{line}:" in out and "warning:" in out and "[KP101]" in out and "error:" not in out


# ---------------------------------------------------------------------------
# explain
# ---------------------------------------------------------------------------


@pytest.mark.parametrize("code", DISPATCH_CODES)
def test_explain_prints_rationale_bad_and_good(code, capsys):
    assert main(["explain", code.lower()]) == 0
    out = capsys.readouterr().out
    assert out.startswith(code) and "## Rationale" in out and "## Bad" in out and "## Good" in out
