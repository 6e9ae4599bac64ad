// kernel-ports stub: CUDA availability; MLX's CUDA namespace is `cu`.
#pragma once

namespace mlx::core::cu {
bool is_available();
}  // namespace mlx::core::cu
