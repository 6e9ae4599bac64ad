// Fused residual add + RMS norm: Metal, CUDA and a wave32-only ROCm port.
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "mlx/mlx.h"
#include "turbo/fused_norm_hip.h"
#include "turbo/kernel_port.h"
#include "turbo/turbo_kernels.h"

namespace mlxcel {
namespace {

using mlx::core::array;

// 32 threads per row; simd_sum reduces one SIMD group.
constexpr const char* FUSED_NORM_METAL_SOURCE = R"(
  uint row = threadgroup_position_in_grid.x;
  uint lane = thread_position_in_threadgroup.x;
  float sum = 0.0f;
  for (int i = lane; i < N; i += 32) {
    float h = float(x[row * N + i]) + float(residual[row * N + i]);
    sum += h * h;
  }
  sum = simd_sum(sum);
  float inv = metal::rsqrt(sum / N + eps[0]);
  for (int i = lane; i < N; i += 32) {
    float h = float(x[row * N + i]) + float(residual[row * N + i]);
    out[row * N + i] = T(h * inv * float(weight[i]));
  }
)";

// CUDA warps are always 32 lanes wide.
constexpr const char* FUSED_NORM_CUDA_SOURCE = R"(
  const int row = blockIdx.x;
  const int lane = threadIdx.x;
  float sum = 0.0f;
  for (int i = lane; i < N; i += 32) {
    const float h = static_cast<float>(x[row * N + i]) + static_cast<float>(residual[row * N + i]);
    sum += h * h;
  }
  for (int offset = 16; offset > 0; offset >>= 1) {
    sum += __shfl_xor_sync(0xffffffff, sum, offset);
  }
  const float inv = rsqrtf(sum / N + eps[0]);
  for (int i = lane; i < N; i += 32) {
    const float h = static_cast<float>(x[row * N + i]) + static_cast<float>(residual[row * N + i]);
    out[row * N + i] = static_cast<T>(h * inv * static_cast<float>(weight[i]));
  }
)";

KernelHolder& get_fused_norm_kernel() {
  static KernelHolder holder([] {
    return mlx::core::fast::metal_kernel("mlxcel_fused_norm", {"x", "residual", "weight", "eps"}, {"out"}, FUSED_NORM_METAL_SOURCE);
  });
  return holder;
}

KernelHolder& get_fused_norm_kernel_cuda() {
  static KernelHolder holder([] {
    return mlx::core::fast::cuda_kernel("mlxcel_fused_norm", {"x", "residual", "weight", "eps"}, {"out"}, FUSED_NORM_CUDA_SOURCE);
  });
  return holder;
}

#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
KernelHolder& get_fused_norm_kernel_hip() {
  static KernelHolder holder([] {
    return mlx::core::fast::hip_kernel("mlxcel_fused_norm", {"x", "residual", "weight", "eps"}, {"out"}, FUSED_NORM_HIP_SOURCE);
  });
  return holder;
}
#endif

}  // namespace

const KernelPorts& fused_norm_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_fused_norm_kernel().get(); },
      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_fused_norm_kernel_cuda().get(); },
#ifdef MLXCEL_BRIDGE_ROCM_BACKEND
      .rocm = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_fused_norm_kernel_hip().get(); },
#endif
      .rocm_any_wave_size = false,
  };
  return ports;
}

bool fused_add_rms_norm_available() {
  if (mlx::core::default_device() != mlx::core::Device(mlx::core::Device::gpu)) {
    return false;
  }
  return has_kernel_port(fused_norm_ports());
}

array fused_add_rms_norm(const array& x, const array& residual, const array& weight, float eps) {
  mlx::core::fast::CustomKernelFunction& kernel = select_kernel_port("fused_add_rms_norm", "mlx::core::fast::rms_norm", fused_norm_ports());
  const int n = x.shape(-1);
  const int rows = static_cast<int>(x.size()) / n;
  // residual and weight follow x's dtype, so the "T" key covers them.
  const array res = mlx::core::astype(residual, x.dtype());
  const array w = mlx::core::astype(weight, x.dtype());
  const array eps_array{eps};
  std::vector<std::pair<std::string, mlx::core::fast::TemplateArg>> template_args = {{"T", x.dtype()}, {"N", n}};
  std::vector<array> outputs = kernel(
      {x, res, w, eps_array},
      {x.shape()},
      {x.dtype()},
      {rows * 32, 1, 1},
      {32, 1, 1},
      template_args,
      std::nullopt,
      false,
      {});
  return outputs[0];
}

}  // namespace mlxcel
