//! C ABI of the C++ side (`src/lib/mlx-cpp/bridge/ffi_bridge.cpp`).
//!
//! The C symbols carry an `mlxcel_` prefix; each is declared here under the
//! name of the C++ function it forwards to, so a predicate reads the same in
//! both languages. Linking is the build's business; `cargo check` needs none.

extern "C" {
    /// Fused residual add + RMS norm has a port for the running backend.
    #[link_name = "mlxcel_fused_add_rms_norm_available"]
    pub fn fused_add_rms_norm_available() -> bool;

    /// Rotary embedding has a port for the running backend.
    #[link_name = "mlxcel_rope_available"]
    pub fn rope_available() -> bool;

    /// Both attention tables (exact and sliding window) have a port.
    #[link_name = "mlxcel_sdpa_available"]
    pub fn sdpa_available() -> bool;

    /// The KV-cache write has a port for the running backend.
    #[link_name = "mlxcel_kv_write_available"]
    pub fn kv_write_available() -> bool;

    /// The top-k kernel has a port (Metal only).
    #[link_name = "mlxcel_top_k_available"]
    pub fn top_k_available() -> bool;

    /// The Gumbel-max sampler has a port for the running backend.
    #[link_name = "mlxcel_gumbel_sample_available"]
    pub fn gumbel_sample_available() -> bool;

    /// SwiGLU has a port for the running backend.
    #[link_name = "mlxcel_swiglu_available"]
    pub fn swiglu_available() -> bool;

    /// Custom kernels can run and the default device is a GPU.
    #[link_name = "mlxcel_gpu_backend_available"]
    pub fn gpu_backend_available() -> bool;

    /// Test seam: pretend the ROCm wavefront is this wide (0 = detected).
    #[link_name = "mlxcel_set_rocm_port_warp_size_for_tests"]
    pub fn set_rocm_port_warp_size_for_tests(warp_size: i32);
}
