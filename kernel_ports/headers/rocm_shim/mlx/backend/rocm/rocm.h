// kernel-ports shim: the public functions of the ROCm backend of MLX's ROCm
// builds that engines call. Upstream MLX has no mlx/backend/rocm/; this
// directory is searched after every other one (-idirafter), so a real
// rocm.h, when the resolved MLX headers have one, is always read instead.
#pragma once

namespace mlx::core::rocm {
// Whether the process runs on a ROCm (HIP) device.
bool is_available();
// The hardware wavefront width of the current HIP device (32 or 64), 0 when
// it cannot be read or off ROCm.
int device_warp_size();
}  // namespace mlx::core::rocm
