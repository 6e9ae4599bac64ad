"""Syntactic front ends: no Clang, fast."""

from kernel_ports.frontend.hip import scan_body
from kernel_ports.frontend.rust import analyze
from kernel_ports.frontend.witness import WitnessNames, witness

NAMES = WitnessNames(
    factories={"metal_kernel": "metal", "cuda_kernel": "cuda", "hip_kernel": "rocm"},
    selector="select_kernel_port", has_port="has_kernel_port", table_type="KernelPorts",
    backend_queries=frozenset({"gpu_kernel_backend"}), seams=frozenset({"set_rocm_port_warp_size_for_tests"}),
    predicates=frozenset({"x_available"}))

SRC = b'''#include "eng/ports.h"
#ifdef WITH_ROCM
#include <mlx/mlx.h>
#endif
// metal_kernel("a", {}, {}, "") in a comment
const char* s = "select_kernel_port(\\"a\\", \\"b\\", t)";
constexpr const char* K_HIP_SOURCE = R"(
  int lane = threadIdx.x % 32;  // __ballot in a comment
)" "  out[0] = __shfl_xor(v, 1);\\n";
static const KernelPorts ports{ .metal = nullptr };
bool x_available() { return has_kernel_port(ports); }
void f(K k) {
  auto& r = select_kernel_port("e", "f", ports);
  k(a, b, c, d, e, f, g, h, i);
  if (gpu_kernel_backend() == B::Cuda) {}
  auto z = mlx::core::fast::metal_kernel("n", {"x"}, {"y"}, K_HIP_SOURCE);
}
'''


def test_candidates_by_name_outside_comments_and_strings():
    w = witness("a.cpp", SRC, NAMES)
    kinds = sorted((c.kind, c.line) for c in w.candidates)
    assert ("factory_call", 16) in kinds and ("factory_call", 5) not in kinds
    assert ("selector_call", 13) in kinds and ("selector_call", 6) not in kinds
    assert ("invocation", 14) in kinds
    assert ("backend_query", 15) in kinds
    assert ("has_port_call", 11) in kinds
    assert ("port_table", 10) in kinds
    assert ("predicate_def", 11) in kinds
    assert ("eng/ports.h", False) in w.includes and ("mlx/mlx.h", True) in w.includes
    assert "WITH_ROCM" in w.conditional_macros


def test_string_constant_pieces_are_joined_and_located():
    w = witness("a.cpp", SRC, NAMES)
    (sc,) = [s for s in w.string_constants if s.name == "K_HIP_SOURCE"]
    assert sc.is_raw and sc.piece_lines == ((7, 38), (9, 4))
    assert sc.text.endswith("out[0] = __shfl_xor(v, 1);\n")


def test_hip_body_identifiers_ignore_comments_and_strings():
    scan = scan_body('''
      // __shfl_down in a comment
      #if __AMDGCN_WAVEFRONT_SIZE == 64 /* __ballot */
      #endif
      int lane = threadIdx.x % 32;
      const char* s = "__any";
      v += __shfl_xor(v, 1);
    ''')
    assert "__shfl_xor" in scan.identifiers and "__AMDGCN_WAVEFRONT_SIZE" in scan.identifiers
    assert "__shfl_down" not in scan.identifiers and "__ballot" not in scan.identifiers
    assert "__any" not in scan.identifiers
    i = scan.tokens.index("threadIdx")
    assert scan.tokens[i:i + 5] == ("threadIdx", ".", "x", "%", "32")


RUST = b'''
/// metal_is_available() || cuda_is_available() in a doc comment
pub fn any_gpu() -> bool {
    crate::ffi::metal_is_available() || ffi::cuda_is_available()
}
pub fn twin() -> bool { !(!metal_is_available() && !cuda_is_available()) }
fn chain() -> bool {
    if metal_is_available() { true } else if cuda_is_available() { true } else { false }
}
fn arms() -> bool { match backend() { Backend::Metal => true, Backend::Cuda => true, _ => false } }
fn asks() -> bool { ffi::fused_norm_available() }
pub fn set_rocm_port_warp_size_for_tests(w: i32) { unsafe { ffi::set_rocm_port_warp_size_for_tests(w) } }
extern "C" { fn set_rocm_port_warp_size_for_tests(w: i32); }
fn prod() { set_rocm_port_warp_size_for_tests(64); }
#[cfg(test)]
mod tests { fn t() { super::set_rocm_port_warp_size_for_tests(64); } }
'''


def test_rust_gates_structure_and_paths():
    gates, _ = analyze("src/gates.rs", RUST, ["set_rocm_port_warp_size_for_tests"])
    by_fn = {g.function: g for g in gates}
    g = by_fn["any_gpu"]
    assert g.kind == "fn_body" and g.expr.op == "||"
    assert g.calls == ("crate::ffi::metal_is_available", "ffi::cuda_is_available")
    assert by_fn["twin"].expr.op == "!" and by_fn["twin"].expr.args[0].op == "&&"
    assert by_fn["chain"].expr.op == "if" and [a.name for a in by_fn["chain"].expr.args] == ["metal_is_available", "cuda_is_available"]
    assert by_fn["arms"].expr.op == "match" and by_fn["arms"].expr.patterns[:2] == ("Backend::Metal", "Backend::Cuda")
    assert by_fn["asks"].call_names == ("fused_norm_available",)
    assert all(g.loc.line != 2 for g in gates)  # the doc comment is not code


def test_rust_seams():
    _, seams = analyze("src/lib.rs", RUST, ["set_rocm_port_warp_size_for_tests"])
    kinds = {(s.loc.line, s.is_definition, s.is_declaration, s.is_forwarding, s.in_test) for s in seams}
    assert (12, True, False, False, False) in kinds
    assert any(l == 12 and fwd for l, _, _, fwd, _ in kinds)
    assert (13, False, True, False, False) in kinds
    assert (14, False, False, False, False) in kinds
    assert (16, False, False, False, True) in kinds
