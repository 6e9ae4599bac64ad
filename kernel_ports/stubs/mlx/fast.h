// kernel-ports stub: MLX's custom-kernel factories (SPEC §1).
//
// Keep CustomKernelFunction exact. With one parameter missing, Clang cannot
// type any kernel invocation and drops them all from the AST, which is why
// the front end reports untyped calls instead of skipping them.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <tuple>
#include <utility>
#include <variant>
#include <vector>

#include "mlx/array.h"

namespace mlx::core::fast {

// A Dtype alternative is what makes a template arg a dtype key: the JIT
// cache hashes template args, so naming the input dtype splits the cache.
using TemplateArg = std::variant<int, bool, Dtype>;

// Nine parameters, none defaulted (std::function has no defaults); the
// template args are the sixth.
using CustomKernelFunction = std::function<std::vector<array>(
    const std::vector<array>&,                         // inputs
    const std::vector<Shape>&,                         // output shapes
    const std::vector<Dtype>&,                         // output dtypes
    std::tuple<int, int, int>,                         // grid
    std::tuple<int, int, int>,                         // threadgroup
    std::vector<std::pair<std::string, TemplateArg>>,  // template args
    std::optional<float>,                              // init value
    bool,                                              // verbose
    StreamOrDevice)>;

CustomKernelFunction metal_kernel(
    const std::string& name,
    const std::vector<std::string>& input_names,
    const std::vector<std::string>& output_names,
    const std::string& source,
    const std::string& header = "",
    bool ensure_row_contiguous = true,
    bool atomic_outputs = false,
    const std::vector<std::string>& compile_options = {});

CustomKernelFunction cuda_kernel(
    const std::string& name,
    const std::vector<std::string>& input_names,
    const std::vector<std::string>& output_names,
    const std::string& source,
    const std::string& header = "",
    bool ensure_row_contiguous = true,
    int shared_memory = 0);

// Upstream MLX declares no hip_kernel: the ROCm shim (kernel_ports/headers/
// rocm_shim) adds it, for these stubs and for real headers alike.

}  // namespace mlx::core::fast
