// C ABI for the Rust engine core (src/lib/engine-core/src/ffi.rs).
//
// Every function forwards to one C++ function and decides nothing itself.
// The symbols carry an `mlxcel_` prefix so they never clash with the C++
// names; the Rust side declares them under the C++ names via link_name.
// MLXCEL_API is the export attribute the build defines.
#include "turbo/gpu_backend.h"
#include "turbo/turbo_kernels.h"

extern "C" {

MLXCEL_API bool mlxcel_fused_add_rms_norm_available() {
  return mlxcel::fused_add_rms_norm_available();
}

MLXCEL_API bool mlxcel_rope_available() {
  return mlxcel::rope_available();
}

MLXCEL_API bool mlxcel_sdpa_available() {
  return mlxcel::sdpa_available();
}

MLXCEL_API bool mlxcel_kv_write_available() {
  return mlxcel::kv_write_available();
}

MLXCEL_API bool mlxcel_top_k_available() {
  return mlxcel::top_k_available();
}

MLXCEL_API bool mlxcel_gumbel_sample_available() {
  return mlxcel::gumbel_sample_available();
}

MLXCEL_API bool mlxcel_swiglu_available() {
  return mlxcel::swiglu_available();
}

MLXCEL_API bool mlxcel_gpu_backend_available() {
  return mlxcel::gpu_backend_available();
}

// Forwarding wrapper of the test seam; only Rust tests call it.
MLXCEL_API void mlxcel_set_rocm_port_warp_size_for_tests(int warp_size) {
  mlxcel::set_rocm_port_warp_size_for_tests(warp_size);
}

}  // extern "C"
