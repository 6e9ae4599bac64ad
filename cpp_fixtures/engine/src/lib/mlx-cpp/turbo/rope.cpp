// Rotary position embedding: Metal, CUDA and an any-wave ROCm port.
#include <algorithm>
#include <optional>
#include <vector>

#include "mlx/mlx.h"
#include "turbo/kernel_port.h"
#include "turbo/rope_hip.h"
#include "turbo/turbo_kernels.h"

namespace mlxcel {
namespace {

using mlx::core::array;

// A build switch, not a runtime backend test: Apple GPUs take wider groups.
#ifdef __APPLE__
constexpr int kRopeThreadsPerGroup = 256;
#else
constexpr int kRopeThreadsPerGroup = 128;
#endif

constexpr const char* ROPE_METAL_SOURCE = R"(
  uint pair = thread_position_in_grid.x;
  uint row = thread_position_in_grid.y;
  if (pair >= D / 2) {
    return;
  }
  float theta = float(positions[row]) * metal::pow(base[0], -2.0f * pair / D);
  float c = metal::cos(theta);
  float s = metal::sin(theta);
  float a = float(x[row * D + 2 * pair]);
  float b = float(x[row * D + 2 * pair + 1]);
  out[row * D + 2 * pair] = T(a * c - b * s);
  out[row * D + 2 * pair + 1] = T(a * s + b * c);
)";

constexpr const char* ROPE_CUDA_SOURCE = R"(
  const int pair = blockIdx.x * blockDim.x + threadIdx.x;
  const int row = blockIdx.y;
  if (pair >= D / 2) {
    return;
  }
  const float theta = static_cast<float>(positions[row]) * powf(base[0], -2.0f * pair / D);
  const float a = static_cast<float>(x[row * D + 2 * pair]);
  const float b = static_cast<float>(x[row * D + 2 * pair + 1]);
  out[row * D + 2 * pair] = static_cast<T>(a * cosf(theta) - b * sinf(theta));
  out[row * D + 2 * pair + 1] = static_cast<T>(a * sinf(theta) + b * cosf(theta));
)";

KernelHolder& get_rope_kernel() {
  static KernelHolder holder([] {
    return mlx::core::fast::metal_kernel("mlxcel_rope", {"x", "positions", "base"}, {"out"}, ROPE_METAL_SOURCE);
  });
  return holder;
}

KernelHolder& get_rope_kernel_cuda() {
  static KernelHolder holder([] {
    return mlx::core::fast::cuda_kernel("mlxcel_rope", {"x", "positions", "base"}, {"out"}, ROPE_CUDA_SOURCE);
  });
  return holder;
}

#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
KernelHolder& get_rope_kernel_hip() {
  static KernelHolder holder([] {
    return mlx::core::fast::hip_kernel("mlxcel_rope", {"x", "positions", "base"}, {"out"}, ROPE_HIP_SOURCE, ROPE_HIP_HEADER);
  });
  return holder;
}
#endif

}  // namespace

const KernelPorts& rope_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_rope_kernel().get(); },
      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_rope_kernel_cuda().get(); },
#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
      .rocm = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_rope_kernel_hip().get(); },
#endif
      .rocm_any_wave_size = true,
  };
  return ports;
}

bool rope_available() {
  if (mlx::core::default_device() != mlx::core::Device(mlx::core::Device::gpu)) {
    return false;
  }
  return has_kernel_port(rope_ports());
}

array apply_rope(const array& x, const array& positions, float base) {
  mlx::core::fast::CustomKernelFunction& kernel = select_kernel_port("apply_rope", "mlx::core::fast::rope", rope_ports());
  const int dims = x.shape(-1);
  const int rows = static_cast<int>(x.size()) / dims;
  // Fixed dtypes: positions are int32 and base is a float32 scalar.
  const array pos = mlx::core::astype(positions, mlx::core::int32);
  const array base_array{base};
  KernelTemplateArgs template_args;
  template_args.push_back({"T", x.dtype()});
  template_args.push_back({"D", dims});
  std::vector<array> outputs = kernel(
      {x, pos, base_array},
      {x.shape()},
      {x.dtype()},
      {dims / 2, rows, 1},
      {std::min(dims / 2, kRopeThreadsPerGroup), 1, 1},
      template_args,
      std::nullopt,
      false,
      {});
  return outputs[0];
}

}  // namespace mlxcel
