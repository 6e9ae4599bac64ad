// Single-query attention: an exact kernel and a sliding-window kernel, each
// with Metal and CUDA ports. The caller's window picks the table at run time.
#include <optional>
#include <vector>

#include "mlx/mlx.h"
#include "turbo/attention_launch.h"
#include "turbo/kernel_port.h"
#include "turbo/turbo_kernels.h"

namespace mlxcel {
namespace {

using mlx::core::array;

// Online softmax over every key. Each thread recomputes its head's scores
// and writes one output dimension.
constexpr const char* SDPA_EXACT_METAL_SOURCE = R"(
  uint d = thread_position_in_grid.x;
  uint h = thread_position_in_grid.y;
  float m = -INFINITY;
  float denom = 0.0f;
  float acc = 0.0f;
  for (int j = 0; j < L; ++j) {
    float s = 0.0f;
    for (int e = 0; e < D; ++e) {
      s += float(q[h * D + e]) * float(k[(h * L + j) * D + e]);
    }
    s *= scale[0];
    float m_new = metal::max(m, s);
    float p = metal::exp(s - m_new);
    float corr = metal::exp(m - m_new);
    denom = denom * corr + p;
    acc = acc * corr + p * float(v[(h * L + j) * D + d]);
    m = m_new;
  }
  out[h * D + d] = T(acc / denom);
)";

constexpr const char* SDPA_EXACT_CUDA_SOURCE = R"(
  const int d = threadIdx.x;
  const int h = blockIdx.y;
  float m = -INFINITY;
  float denom = 0.0f;
  float acc = 0.0f;
  for (int j = 0; j < L; ++j) {
    float s = 0.0f;
    for (int e = 0; e < D; ++e) {
      s += static_cast<float>(q[h * D + e]) * static_cast<float>(k[(h * L + j) * D + e]);
    }
    s *= scale[0];
    const float m_new = fmaxf(m, s);
    const float p = expf(s - m_new);
    const float corr = expf(m - m_new);
    denom = denom * corr + p;
    acc = acc * corr + p * static_cast<float>(v[(h * L + j) * D + d]);
    m = m_new;
  }
  out[h * D + d] = static_cast<T>(acc / denom);
)";

// The same loop over the last WINDOW keys only.
constexpr const char* SDPA_WINDOW_METAL_SOURCE = R"(
  uint d = thread_position_in_grid.x;
  uint h = thread_position_in_grid.y;
  float m = -INFINITY;
  float denom = 0.0f;
  float acc = 0.0f;
  for (int j = metal::max(0, L - WINDOW); j < L; ++j) {
    float s = 0.0f;
    for (int e = 0; e < D; ++e) {
      s += float(q[h * D + e]) * float(k[(h * L + j) * D + e]);
    }
    s *= scale[0];
    float m_new = metal::max(m, s);
    float p = metal::exp(s - m_new);
    float corr = metal::exp(m - m_new);
    denom = denom * corr + p;
    acc = acc * corr + p * float(v[(h * L + j) * D + d]);
    m = m_new;
  }
  out[h * D + d] = T(acc / denom);
)";

constexpr const char* SDPA_WINDOW_CUDA_SOURCE = R"(
  const int d = threadIdx.x;
  const int h = blockIdx.y;
  float m = -INFINITY;
  float denom = 0.0f;
  float acc = 0.0f;
  for (int j = max(0, L - WINDOW); j < L; ++j) {
    float s = 0.0f;
    for (int e = 0; e < D; ++e) {
      s += static_cast<float>(q[h * D + e]) * static_cast<float>(k[(h * L + j) * D + e]);
    }
    s *= scale[0];
    const float m_new = fmaxf(m, s);
    const float p = expf(s - m_new);
    const float corr = expf(m - m_new);
    denom = denom * corr + p;
    acc = acc * corr + p * static_cast<float>(v[(h * L + j) * D + d]);
    m = m_new;
  }
  out[h * D + d] = static_cast<T>(acc / denom);
)";

KernelHolder& get_sdpa_exact_kernel() {
  static KernelHolder holder([] {
    return mlx::core::fast::metal_kernel("mlxcel_sdpa_exact", {"q", "k", "v", "scale"}, {"out"}, SDPA_EXACT_METAL_SOURCE);
  });
  return holder;
}

KernelHolder& get_sdpa_exact_kernel_cuda() {
  static KernelHolder holder([] {
    return mlx::core::fast::cuda_kernel("mlxcel_sdpa_exact", {"q", "k", "v", "scale"}, {"out"}, SDPA_EXACT_CUDA_SOURCE);
  });
  return holder;
}

KernelHolder& get_sdpa_window_kernel() {
  static KernelHolder holder([] {
    return mlx::core::fast::metal_kernel("mlxcel_sdpa_window", {"q", "k", "v", "scale"}, {"out"}, SDPA_WINDOW_METAL_SOURCE);
  });
  return holder;
}

KernelHolder& get_sdpa_window_kernel_cuda() {
  static KernelHolder holder([] {
    return mlx::core::fast::cuda_kernel("mlxcel_sdpa_window", {"q", "k", "v", "scale"}, {"out"}, SDPA_WINDOW_CUDA_SOURCE);
  });
  return holder;
}

}  // namespace

const KernelPorts& sdpa_exact_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_sdpa_exact_kernel().get(); },
      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_sdpa_exact_kernel_cuda().get(); },
  };
  return ports;
}

const KernelPorts& sdpa_window_ports() {
  static const KernelPorts ports{
      .metal = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_sdpa_window_kernel().get(); },
      .cuda = +[]() -> mlx::core::fast::CustomKernelFunction& { return get_sdpa_window_kernel_cuda().get(); },
  };
  return ports;
}

// Either table may serve a call, so the predicate needs both.
bool sdpa_available() {
  if (mlx::core::default_device() != mlx::core::Device(mlx::core::Device::gpu)) {
    return false;
  }
  return has_kernel_port(sdpa_exact_ports()) && has_kernel_port(sdpa_window_ports());
}

array scaled_dot_product_attention(const array& q, const array& k, const array& v, float scale, int window) {
  // The table is the only backend choice here; branching on
  // gpu_kernel_backend() == GpuKernelBackend::Cuda would bring back the
  // "not CUDA means Metal" bug.
  const bool exact = window == 0;
  const KernelPorts& table = exact ? sdpa_exact_ports() : sdpa_window_ports();
  mlx::core::fast::CustomKernelFunction& kernel = select_kernel_port("scaled_dot_product_attention", "mlx::core::fast::scaled_dot_product_attention", table);
  return launch_attention(kernel, q, k, v, scale, window);
}

}  // namespace mlxcel
