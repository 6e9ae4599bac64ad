// kernel-ports stub: ROCm availability, from the MLX ROCm fork.
#pragma once

namespace mlx::core::rocm {
bool is_available();
}  // namespace mlx::core::rocm
