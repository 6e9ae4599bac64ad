//! Gates: each fused path is taken only when that kernel's own predicate
//! says it has a port.
//!
//! A gate never enumerates backends. A check such as
//! `metal_is_available() || cuda_is_available()` reads "not CUDA" as
//! "Metal" and says yes on ROCm for kernels that have no ROCm port.

use crate::ffi;

/// Whether model layers may run on the GPU at all.
pub fn gpu_offload_enabled(prefer_cpu: bool) -> bool {
    !prefer_cpu && unsafe { ffi::gpu_backend_available() }
}

/// Use the fused residual add + RMS norm.
pub fn use_fused_norm() -> bool {
    unsafe { ffi::fused_add_rms_norm_available() }
}

/// Use the fused rotary embedding.
pub fn use_fused_rope() -> bool {
    unsafe { ffi::rope_available() }
}

/// Append to the KV cache in place on the GPU.
pub fn use_fused_kv_write() -> bool {
    unsafe { ffi::kv_write_available() }
}

/// Use the fused SwiGLU in the MLP block.
pub fn use_fused_swiglu(gpu_offload: bool) -> bool {
    gpu_offload && unsafe { ffi::swiglu_available() }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AttentionPath {
    Fused,
    Graph,
}

/// Attention: fused only when both attention tables have a port, since the
/// window of each request picks one of them.
pub fn attention_path() -> AttentionPath {
    if unsafe { ffi::sdpa_available() } {
        AttentionPath::Fused
    } else {
        AttentionPath::Graph
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SamplerPath {
    TopK,
    Gumbel,
    Host,
}

/// Sampling: a chain over the sampling kernels' own predicates.
pub fn sampler_path(top_k: Option<u32>) -> SamplerPath {
    if top_k.is_some() && unsafe { ffi::top_k_available() } {
        SamplerPath::TopK
    } else if unsafe { ffi::gumbel_sample_available() } {
        SamplerPath::Gumbel
    } else {
        SamplerPath::Host
    }
}
