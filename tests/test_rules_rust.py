"""Rust side of the dispatch rules: KP104 (backend-enumerating gates) and KP106
(test seams outside tests), with negative controls.

Rust edits never change what Clang parses, so every variant gets its own copy
of the sample engine (the C++ parses come from the shared cache).
"""

from __future__ import annotations

import pytest

from tests.mutate import REGISTRY_KEY, Mutation, describe, findings_at, run_copy

CRATE = "src/lib/engine-core/src/"
GATES = CRATE + "gates.rs"
LIB = CRATE + "lib.rs"
SEAM = "set_rocm_port_warp_size_for_tests"

ROPE_GATE = "    unsafe { ffi::rope_available() }\n"
NORM_GATE = "    unsafe { ffi::fused_add_rms_norm_available() }\n"
KV_GATE = "    unsafe { ffi::kv_write_available() }\n"
ATTENTION_CHAIN = "    if unsafe { ffi::sdpa_available() } {\n        AttentionPath::Fused\n    } else {\n"
GATES_TAIL = "/// Sampling: a chain over the sampling kernels' own predicates.\n"


def before(path, anchor, code):
    return Mutation(path, anchor, code + anchor)


# ---------------------------------------------------------------------------
# KP104 backend-enumerating-gate
# ---------------------------------------------------------------------------

# (id, mutations, text on the line the finding must be at)
KP104_CASES = [
    ("or-of-backend-gates", [Mutation(GATES, ROPE_GATE, "    unsafe { ffi::metal_is_available() || ffi::cuda_is_available() }\n")],
     "pub fn use_fused_rope() -> bool {"),
    ("de-morgan-twin", [Mutation(GATES, NORM_GATE, "    unsafe { !(!ffi::metal_is_available() && !ffi::cuda_is_available()) }\n")],
     "pub fn use_fused_norm() -> bool {"),
    ("crate-path-prefix", [Mutation(GATES, KV_GATE, "    unsafe { crate::ffi::metal_is_available() || crate::ffi::cuda_is_available() }\n")],
     "pub fn use_fused_kv_write() -> bool {"),
    ("other-path-prefix-in-a-let", [before(GATES, GATES_TAIL,
        "pub fn warm_up(layers: usize) -> usize {\n"
        "    let on_gpu = backend::metal_is_available() || backend::cuda_is_available();  // v:let\n"
        "    if on_gpu { layers } else { 0 }\n}\n\n")], "v:let"),
    ("if-condition", [before(GATES, GATES_TAIL,
        "pub fn prefill_chunk() -> usize {\n"
        "    if unsafe { ffi::metal_is_available() || ffi::cuda_is_available() } {  // v:if\n        512\n    } else {\n        64\n    }\n}\n\n")],
     "v:if"),
    ("if-else-if-chain", [Mutation(GATES, ATTENTION_CHAIN,
        "    if unsafe { ffi::metal_is_available() } {  // v:chain\n        AttentionPath::Fused\n"
        "    } else if unsafe { ffi::cuda_is_available() } {\n        AttentionPath::Fused\n    } else {\n")], "v:chain"),
    ("match-arms", [before(GATES, GATES_TAIL,
        "pub fn norm_path() -> AttentionPath {\n"
        "    match () {  // v:match\n"
        "        _ if unsafe { ffi::metal_is_available() } => AttentionPath::Fused,\n"
        "        _ if unsafe { ffi::cuda_is_available() } => AttentionPath::Fused,\n"
        "        _ => AttentionPath::Graph,\n    }\n}\n\n")], "v:match"),
    ("match-in-a-bool-fn", [Mutation(GATES, KV_GATE,
        "    match unsafe { (ffi::metal_is_available(), ffi::cuda_is_available()) } {\n"
        "        (true, _) | (_, true) => true,\n        _ => false,\n    }\n")], "pub fn use_fused_kv_write() -> bool {"),
    ("single-backend-gate", [Mutation(GATES, ROPE_GATE, "    unsafe { ffi::metal_is_available() }\n")],
     "pub fn use_fused_rope() -> bool {"),
]


@pytest.mark.parametrize("case", KP104_CASES, ids=lambda c: c[0])
def test_kp104_catches(case, tmp_path_factory, kp_cache):
    name, mutations, tag = case
    copy, result = run_copy(tmp_path_factory, kp_cache, f"kp104-{name}", mutations)
    hits = findings_at(result, "KP104", GATES, copy.line_of(GATES, tag))
    assert hits, describe(result)
    assert "the kernel's own predicate" in hits[0].message and "gpu_backend_available()" in hits[0].message
    # reported once, at the innermost gate
    assert len([f for f in result.findings if f.rule == "KP104"]) == 1, describe(result)


def test_kp104_gate_names_come_from_the_registry(tmp_path_factory, kp_cache):
    muts = [
        Mutation(REGISTRY_KEY, 'rust_backend_gates: ["metal_is_available", "cuda_is_available"]',
                 'rust_backend_gates: ["rocm_is_available"]'),
        Mutation(GATES, ROPE_GATE, "    unsafe { ffi::rocm_is_available() }\n"),
        Mutation(GATES, NORM_GATE, "    unsafe { ffi::metal_is_available() || ffi::cuda_is_available() }\n"),
    ]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp104-registry", muts)
    assert findings_at(result, "KP104", GATES, copy.line_of(GATES, "pub fn use_fused_rope() -> bool {")), describe(result)
    assert not findings_at(result, "KP104", GATES, copy.line_of(GATES, "pub fn use_fused_norm() -> bool {")), describe(result)


KP104_DECOYS = [
    Mutation(GATES, ROPE_GATE, "    // metal_is_available() || cuda_is_available() would say yes on ROCm  d:line-comment\n"
                               "    /* !(!metal_is_available() && !cuda_is_available()) d:block-comment */\n" + ROPE_GATE),
    before(GATES, "/// Use the fused rotary embedding.\n", "/// Never `crate::ffi::metal_is_available() || crate::ffi::cuda_is_available()`.  d:doc-comment\n"),
    before(GATES, GATES_TAIL,
           "/// A chain over the kernels' own predicates, like sampler_path.\n"
           "pub fn rope_or_kv() -> u8 {\n"
           "    if unsafe { ffi::rope_available() } {  // d:predicate-chain\n        1\n"
           "    } else if unsafe { ffi::kv_write_available() } {\n        2\n    } else {\n        0\n    }\n}\n\n"
           "/// The note is data, not a gate.\n"
           "pub fn dispatch_note() -> &'static str {\n"
           "    \"metal_is_available() || cuda_is_available()\"  // d:string\n}\n\n"
           "/// The backend gate's own definition forwards to the FFI.\n"
           "pub fn metal_is_available() -> bool {\n    unsafe { ffi::metal_is_available() }  // d:gate-definition\n}\n\n"),
    Mutation(LIB, "//! not `metal_is_available() || cuda_is_available()`).\n",
             "//! not `metal_is_available() || cuda_is_available()`).\n//! Also not `!(!metal_is_available() && !cuda_is_available())`.  d:inner-doc\n"),
]


def test_kp104_decoys_stay_quiet(tmp_path_factory, kp_cache):
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp104-decoys", KP104_DECOYS)
    assert result.findings == [], describe(result)
    for path, tag in ((GATES, "d:line-comment"), (GATES, "d:doc-comment"), (GATES, "d:predicate-chain"),
                      (GATES, "d:string"), (GATES, "d:gate-definition"), (LIB, "d:inner-doc")):
        line = copy.line_of(path, tag)
        assert not [f for f in result.findings if f.path == path and f.line == line]


def test_kp104_helper_files_are_exempt(tmp_path_factory, kp_cache):
    backend = CRATE + "backend.rs"
    body = ("//! Backend probing: the one Rust file the registry lets ask backends.\n\n"
            "pub fn any_gpu() -> bool {\n    metal_is_available() || cuda_is_available()  // d:helper\n}\n")
    helper = Mutation(REGISTRY_KEY, '    - "src/lib/mlx-cpp/turbo/kernel_port.cpp"\n',
                      '    - "src/lib/mlx-cpp/turbo/kernel_port.cpp"\n    - "src/lib/engine-core/src/backend.rs"\n')
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp104-helper", [Mutation(backend, "", body), helper])
    assert result.findings == [], describe(result)
    # the same file, not listed as a helper, is a finding
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp104-not-helper", [Mutation(backend, "", body)])
    assert findings_at(result, "KP104", backend, copy.line_of(backend, "pub fn any_gpu() -> bool {")), describe(result)


# ---------------------------------------------------------------------------
# KP106 test-seam-outside-tests (Rust)
# ---------------------------------------------------------------------------


def test_kp106_rust_production_call_in_a_gate(tmp_path_factory, kp_cache):
    mut = Mutation(GATES, ROPE_GATE, f"    unsafe {{ ffi::{SEAM}(64) }};  // v:gate-seam\n" + ROPE_GATE)
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp106-gate", [mut])
    (f,) = findings_at(result, "KP106", GATES, copy.line_of(GATES, "v:gate-seam"))
    assert SEAM in f.message and "use_fused_rope" in f.message and "#[cfg(test)]" in f.message


def test_kp106_rust_production_call_in_another_module(tmp_path_factory, kp_cache):
    init = CRATE + "startup.rs"
    muts = [Mutation(init, "", "use crate::ffi;\n\npub fn start() {\n"
                     f"    unsafe {{ crate::ffi::{SEAM}(32) }};  // v:startup\n    let _ = ffi::rope_available;\n}}\n")]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp106-startup", muts)
    assert findings_at(result, "KP106", init, copy.line_of(init, "v:startup")), describe(result)


def test_kp106_rust_tests_and_wrappers_stay_quiet(tmp_path_factory, kp_cache):
    support = CRATE + "test_support/wave.rs"
    muts = [
        # a #[test] fn in a production file
        before(GATES, GATES_TAIL, f"#[test]\nfn wave64_gate() {{\n    unsafe {{ ffi::{SEAM}(64) }};  // d:test-fn\n}}\n\n"),
        # a forwarding wrapper
        before(GATES, GATES_TAIL, f"pub fn force_wave(width: i32) {{\n    unsafe {{ ffi::{SEAM}(width) }}  // d:forwarding\n}}\n\n"),
        # a test-support file (the seam's `tests` globs)
        Mutation(support, "", f"use crate::ffi;\n\npub fn wave64() {{\n    unsafe {{ ffi::{SEAM}(64) }};  // d:test-support\n}}\n"),
        # a second call in the #[cfg(test)] module
        Mutation(LIB, f"        unsafe {{ ffi::{SEAM}(0) }};\n",
                 f"        unsafe {{ ffi::{SEAM}(0) }};\n        unsafe {{ crate::ffi::{SEAM}(0) }};  // d:cfg-test\n"),
    ]
    copy, result = run_copy(tmp_path_factory, kp_cache, "kp106-rust-quiet", muts)
    assert result.findings == [], describe(result)
    for path, tag in ((GATES, "d:test-fn"), (GATES, "d:forwarding"), (support, "d:test-support"), (LIB, "d:cfg-test")):
        assert tag in copy.file(path).read_text()
