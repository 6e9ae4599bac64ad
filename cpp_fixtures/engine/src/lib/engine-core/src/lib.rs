//! Engine core of the kernel-ports sample engine.
//!
//! Decides per request which fused GPU kernels to use. Every decision asks
//! the kernel's own predicate through the FFI bridge (`rope_available()`,
//! not `metal_is_available() || cuda_is_available()`).

pub mod ffi;
pub mod gates;

#[cfg(test)]
mod wave_size_tests;

#[cfg(test)]
mod tests {
    use crate::ffi;
    use crate::gates;

    #[test]
    fn kv_write_is_any_wave() {
        unsafe { ffi::set_rocm_port_warp_size_for_tests(64) };
        let at_64 = gates::use_fused_kv_write();
        unsafe { ffi::set_rocm_port_warp_size_for_tests(32) };
        let at_32 = gates::use_fused_kv_write();
        unsafe { ffi::set_rocm_port_warp_size_for_tests(0) };
        assert_eq!(at_64, at_32);
    }

    #[test]
    fn attention_gate_matches_predicate() {
        let fused = unsafe { ffi::sdpa_available() };
        assert_eq!(gates::attention_path() == gates::AttentionPath::Fused, fused);
    }
}
