//! Wavefront-width tests: force the width the port tables are checked
//! against through the test seam, then ask the gates.

use crate::ffi;
use crate::gates;

fn with_wave_size<T>(width: i32, body: impl FnOnce() -> T) -> T {
    unsafe { ffi::set_rocm_port_warp_size_for_tests(width) };
    let result = body();
    unsafe { ffi::set_rocm_port_warp_size_for_tests(0) };
    result
}

#[test]
fn any_wave_ports_survive_wave64() {
    let at_32 = with_wave_size(32, gates::use_fused_rope);
    let at_64 = with_wave_size(64, gates::use_fused_rope);
    assert_eq!(at_32, at_64);
}

#[test]
fn wave32_ports_never_gain_support_at_wave64() {
    let at_64 = with_wave_size(64, gates::use_fused_norm);
    let at_32 = with_wave_size(32, gates::use_fused_norm);
    assert!(!at_64 || at_32);
}
