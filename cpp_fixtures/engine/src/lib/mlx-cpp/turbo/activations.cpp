// SwiGLU activation: Metal, CUDA and a ROCm port (not marked any-wave).
#include <algorithm>
#include <optional>
#include <vector>

#include "mlx/mlx.h"
#include "turbo/activations_hip.h"
#include "turbo/kernel_port.h"
#include "turbo/turbo_kernels.h"

namespace mlxcel {
namespace {

using mlx::core::array;

constexpr const char* SWIGLU_METAL_SOURCE = R"(
  // Table-selected: metal::is_available() is never asked by a launcher.
  uint i = thread_position_in_grid.x;
  float g = float(gate[i]);
  float silu = g / (1.0f + metal::exp(-g));
  out[i] = T(silu * float(up[i]));
)";

constexpr const char* SWIGLU_CUDA_SOURCE = R"(
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= SIZE) {
    return;
  }
  const float g = static_cast<float>(gate[i]);
  const float silu = g / (1.0f + expf(-g));
  out[i] = static_cast<T>(silu * static_cast<float>(up[i]));
)";

KernelHolder& get_swiglu_kernel() {
  static KernelHolder holder([] {
    return mlx::core::fast::metal_kernel("mlxcel_swiglu", {"gate", "up"}, {"out"}, SWIGLU_METAL_SOURCE);
  });
  return holder;
}

KernelHolder& get_swiglu_kernel_cuda() {
  static KernelHolder holder([] {
    return mlx::core::fast::cuda_kernel("mlxcel_swiglu", {"gate", "up"}, {"out"}, SWIGLU_CUDA_SOURCE);
  });
  return holder;
}

#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
KernelHolder& get_swiglu_kernel_hip() {
  static KernelHolder holder([] {
    return mlx::core::fast::hip_kernel("mlxcel_swiglu", {"gate", "up"}, {"out"}, SWIGLU_HIP_SOURCE);
  });
  return holder;
}
#endif

}  // namespace

const KernelPorts& swiglu_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_swiglu_kernel().get(); },
      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_swiglu_kernel_cuda().get(); },
#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
      .rocm = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_swiglu_kernel_hip().get(); },
#endif
  };
  return ports;
}

bool swiglu_available() {
  if (mlx::core::default_device() != mlx::core::Device(mlx::core::Device::gpu)) {
    return false;
  }
  return has_kernel_port(swiglu_ports());
}

array swiglu(const array& gate, const array& up) {
  mlx::core::fast::CustomKernelFunction& kernel = select_kernel_port("swiglu", "mlx::core::sigmoid graph", swiglu_ports());
  const int size = static_cast<int>(gate.size());
  // up follows gate's dtype, so the "T" key covers both inputs.
  const array up_cast = mlx::core::astype(up, gate.dtype());
  std::vector<array> outputs = kernel(
      {gate, up_cast},
      {gate.shape()},
      {gate.dtype()},
      {size, 1, 1},
      {std::min(size, 256), 1, 1},
      {{"T", gate.dtype()}, {"SIZE", size}},
      std::nullopt,
      false,
      {});
  return outputs[0];
}

}  // namespace mlxcel
