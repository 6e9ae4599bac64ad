// kernel-ports shim: MLX's HIP custom-kernel factory, which only ROCm builds
// of MLX declare (SPEC §1). Force-included (-include) only when the resolved
// mlx/fast.h has no hip_kernel, so it never meets a real declaration.
// Engines keep their calls behind their own build define; declaring it in
// every configuration lets any of them type the call.
#pragma once

#include "mlx/fast.h"

namespace mlx::core::fast {

CustomKernelFunction hip_kernel(
    const std::string& name,
    const std::vector<std::string>& input_names,
    const std::vector<std::string>& output_names,
    const std::string& source,
    const std::string& header = "",
    bool ensure_row_contiguous = true,
    int shared_memory = 0,
    std::vector<std::pair<int, int>> output_input_aliases = {});

}  // namespace mlx::core::fast
